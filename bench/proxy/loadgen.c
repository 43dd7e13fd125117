/* bench/proxy/loadgen.c: the HTTP/1.1 load generator of bench/proxy.sh's TLS rows.
 *
 * wrk busy-polls through a TLS handshake: its connect callback stays registered for
 * writability while OpenSSL waits for the server's answer, so each handshake spins a core for as
 * long as it lasts. On a machine of two vCPUs that CPU is taken from whoever answers the
 * handshake, and the longer the handshake (two of them through an intercepting proxy), the more
 * it takes. This client waits for what OpenSSL asks for (readable or writable), and otherwise
 * does what wrk does: -t threads, -c connections in all, each sending GET for the URL's path,
 * reading the answer (Content-Length, or up to the end), and with -n opening a new connection
 * per request ("Connection: close"); no certificate verification, the URL's host as SNI unless
 * it is an address. With -r a new connection resumes the session of the one before it.
 *
 * usage: loadgen [-t N] [-c N] [-d SECONDS] [-n] [-r] [-H HEADER]... URL
 * prints: wrk-result requests=N duration_us=N bytes=N connect=N read=N write=N status=N
 *         timeout=0 p50_us=N resumed=N
 * (the line bench/proxy/wrk.lua prints, so that bench/proxy.sh reads both alike).
 *
 * build: gcc -O2 -pthread -o loadgen loadgen.c -lssl -lcrypto */

#define _GNU_SOURCE

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#define BUF_SIZE 65536
#define SAMPLES_MAX (1 << 22) /* latencies kept per thread for the median */

enum state { CONNECTING, HANDSHAKE, WRITING, READING };

struct conn {
	int fd;
	SSL *ssl;
	SSL_SESSION *session; /* the last one, to resume (-r) */
	enum state state;
	size_t sent;	/* of the request */
	size_t have;	/* bytes of the head in buf */
	size_t head;	/* the head's length, once read; 0 before */
	bool sized;	/* the head says Content-Length */
	bool last;	/* the head says Connection: close */
	long long body; /* bytes of the body still to come, when sized */
	uint64_t start; /* when the request went out (µs) */
	char buf[BUF_SIZE];
};

struct counts {
	uint64_t requests, bytes, connect, read, write, status, resumed;
};

struct worker {
	pthread_t thread;
	int n_conns;
	struct counts c;
	uint32_t *samples;
	size_t n_samples;
};

static struct sockaddr_storage addr;
static socklen_t addr_len;
static char host[256], sni[256], request[4096], headers[2048];
static size_t request_len;
static bool tls, fresh, resume;
static SSL_CTX *ctx;
static uint64_t deadline;

static uint64_t now_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static void watch(int ep, struct conn *c, uint32_t events, bool add)
{
	struct epoll_event ev = {.events = events, .data.ptr = c};

	if (epoll_ctl(ep, add ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, c->fd, &ev) < 0) {
		perror("epoll_ctl");
		exit(1);
	}
}

static void drop(struct conn *c)
{
	if (c->ssl) {
		if (resume) {
			SSL_SESSION *s = SSL_get1_session(c->ssl);

			if (s) {
				SSL_SESSION_free(c->session);
				c->session = s;
			}
		}
		SSL_free(c->ssl);
		c->ssl = NULL;
	}
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

/* Opens c's connection (its first, or a new one after an answer or an error). */
static void open_conn(int ep, struct conn *c, struct counts *n)
{
	int one = 1;

	c->fd = socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		perror("socket");
		exit(1);
	}
	(void)setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->state = CONNECTING;
	c->sent = c->have = c->head = 0;
	if (connect(c->fd, (struct sockaddr *)&addr, addr_len) < 0 && errno != EINPROGRESS) {
		n->connect++;
		close(c->fd);
		c->fd = -1;
		return;
	}
	watch(ep, c, EPOLLOUT, true);
}

/* TLS I/O's answer: 0 wait (c watched for what OpenSSL needs), -EIO failed. */
static int tls_wait(int ep, struct conn *c, int r)
{
	switch (SSL_get_error(c->ssl, r)) {
	case SSL_ERROR_WANT_READ:
		watch(ep, c, EPOLLIN, false);
		return 0;
	case SSL_ERROR_WANT_WRITE:
		watch(ep, c, EPOLLOUT, false);
		return 0;
	default:
		ERR_clear_error();
		return -EIO;
	}
}

static ssize_t do_send(struct conn *c)
{
	size_t len = request_len - c->sent;

	if (!c->ssl)
		return send(c->fd, request + c->sent, len, MSG_NOSIGNAL);
	return SSL_write(c->ssl, request + c->sent, (int)len);
}

static ssize_t do_recv(struct conn *c, char *buf, size_t len)
{
	if (!c->ssl)
		return recv(c->fd, buf, len, 0);
	return SSL_read(c->ssl, buf, (int)len);
}

/* Parses the head in c->buf once it is whole: 1 parsed, 0 not yet, -EBADMSG not a 200. */
static int parse_head(struct conn *c)
{
	char *end = memmem(c->buf, c->have, "\r\n\r\n", 4), *line, *eol;

	if (!end)
		return c->have == sizeof(c->buf) ? -EBADMSG : 0;
	c->head = (size_t)(end - c->buf) + 4;
	if (c->have < 12 || memcmp(c->buf, "HTTP/1.", 7) != 0 || memcmp(c->buf + 9, "200", 3) != 0)
		return -EBADMSG;
	c->sized = c->last = false;
	for (line = memchr(c->buf, '\n', c->head) + 1; line < end + 2; line = eol + 1) {
		eol = memchr(line, '\n', (size_t)(end + 2 - line));
		*eol = '\0'; /* the head is not needed after this */
		if (strncasecmp(line, "content-length:", 15) == 0) {
			c->sized = true;
			c->body = strtoll(line + 15, NULL, 10);
		} else if (strncasecmp(line, "connection:", 11) == 0 && strcasestr(line, "close")) {
			c->last = true;
		}
	}
	return 1;
}

/* The answer is whole: counted, and the next request goes out (on a new connection with -n). */
static void answered(int ep, struct conn *c, struct worker *w, bool eof)
{
	uint64_t t = now_usec();

	w->c.requests++;
	if (w->n_samples < SAMPLES_MAX)
		w->samples[w->n_samples++] = (uint32_t)(t - c->start);
	if (fresh || eof || c->last) {
		/* a whole exchange: the session may be resumed (OpenSSL marks a session of a
		 * connection freed without a shutdown as not resumable) */
		if (c->ssl)
			SSL_set_shutdown(c->ssl, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
		drop(c);
		if (t < deadline)
			open_conn(ep, c, &w->c);
		return;
	}
	c->state = WRITING;
	c->sent = c->have = c->head = 0;
	watch(ep, c, EPOLLOUT, false);
}

/* Runs c on until it must wait. */
static void step(int ep, struct conn *c, struct worker *w)
{
	for (;;) {
		ssize_t k;
		int r, err;
		socklen_t len = sizeof(err);

		switch (c->state) {
		case CONNECTING:
			if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err) {
				w->c.connect++;
				goto failed;
			}
			if (!tls) {
				c->state = WRITING;
				break;
			}
			c->ssl = SSL_new(ctx);
			if (!c->ssl || !SSL_set_fd(c->ssl, c->fd)) {
				fprintf(stderr, "SSL_new failed\n");
				exit(1);
			}
			if (sni[0])
				(void)SSL_set_tlsext_host_name(c->ssl, sni);
			if (c->session)
				(void)SSL_set_session(c->ssl, c->session);
			c->state = HANDSHAKE;
			break;
		case HANDSHAKE:
			r = SSL_connect(c->ssl);
			if (r == 1) {
				w->c.resumed += SSL_session_reused(c->ssl);
				c->state = WRITING;
				break;
			}
			r = tls_wait(ep, c, r);
			if (r == 0)
				return;
			w->c.connect++;
			goto failed;
		case WRITING:
			if (c->sent == 0)
				c->start = now_usec();
			k = do_send(c);
			if (k <= 0) {
				if (c->ssl) {
					r = tls_wait(ep, c, (int)k);
					if (r == 0)
						return;
				} else if (k < 0 && errno == EAGAIN) {
					watch(ep, c, EPOLLOUT, false);
					return;
				}
				w->c.write++;
				goto failed;
			}
			c->sent += (size_t)k;
			if (c->sent == request_len) {
				c->state = READING;
				watch(ep, c, EPOLLIN, false);
				return;
			}
			break;
		case READING:
			k = do_recv(c, c->buf + c->have, sizeof(c->buf) - c->have);
			if (k <= 0) {
				if (c->ssl && k < 0) {
					r = tls_wait(ep, c, (int)k);
					if (r == 0)
						return;
				} else if (k < 0 && errno == EAGAIN) {
					return;
				}
				/* the end: an answer without Content-Length ends here */
				if (c->head && !c->sized) {
					answered(ep, c, w, true);
					return;
				}
				w->c.read++;
				goto failed;
			}
			w->c.bytes += (uint64_t)k;
			if (c->head) { /* the body: counted, not kept */
				c->body -= k;
			} else {
				c->have += (size_t)k;
				r = parse_head(c);
				if (r < 0) {
					w->c.status++;
					goto failed;
				}
				if (r == 0)
					break;
				c->body -= (long long)(c->have - c->head);
				c->have = 0;
			}
			if (c->sized && c->body == 0) {
				answered(ep, c, w, false);
				return;
			}
			if (c->sized && c->body < 0) { /* more than Content-Length said */
				w->c.read++;
				goto failed;
			}
			break;
		}
	}
failed:
	drop(c);
	if (now_usec() < deadline)
		open_conn(ep, c, &w->c);
}

static void *work(void *arg)
{
	struct worker *w = arg;
	struct epoll_event evs[64];
	struct conn *conns = calloc((size_t)w->n_conns, sizeof(*conns));
	int ep = epoll_create1(EPOLL_CLOEXEC);

	w->samples = malloc(SAMPLES_MAX * sizeof(*w->samples));
	if (!conns || ep < 0 || !w->samples) {
		perror("loadgen");
		exit(1);
	}
	for (int i = 0; i < w->n_conns; i++) {
		conns[i].fd = -1;
		open_conn(ep, &conns[i], &w->c);
	}
	for (;;) {
		uint64_t t = now_usec();
		int n;

		if (t >= deadline)
			break;
		n = epoll_wait(ep, evs, 64, (int)((deadline - t) / 1000) + 1);
		for (int i = 0; i < n; i++) {
			struct conn *c = evs[i].data.ptr;

			if (c->fd >= 0)
				step(ep, c, w);
		}
	}
	for (int i = 0; i < w->n_conns; i++) {
		drop(&conns[i]);
		SSL_SESSION_free(conns[i].session);
	}
	free(conns);
	close(ep);
	return NULL;
}

static int compare(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* URL: http[s]://host[:port][/path] */
static void parse_url(const char *url)
{
	const char *p = url, *slash, *colon;
	char port[16] = "", name[256];
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res;
	unsigned char any[16];
	int r;

	if (strncmp(p, "https://", 8) == 0) {
		tls = true;
		p += 8;
	} else if (strncmp(p, "http://", 7) == 0) {
		p += 7;
	} else {
		fprintf(stderr, "loadgen: %s: not an http:// or https:// URL\n", url);
		exit(2);
	}
	slash = strchr(p, '/');
	if (!slash)
		slash = p + strlen(p);
	if ((size_t)(slash - p) >= sizeof(host)) {
		fprintf(stderr, "loadgen: %s: host too long\n", url);
		exit(2);
	}
	memcpy(host, p, (size_t)(slash - p));
	host[slash - p] = '\0';
	snprintf(name, sizeof(name), "%s", host);
	colon = strrchr(name, ':');
	if (colon) {
		snprintf(port, sizeof(port), "%s", colon + 1);
		name[colon - name] = '\0';
	} else {
		snprintf(port, sizeof(port), "%s", tls ? "443" : "80");
	}
	if (inet_pton(AF_INET, name, any) != 1 && inet_pton(AF_INET6, name, any) != 1)
		snprintf(sni, sizeof(sni), "%s", name);
	r = getaddrinfo(name, port, &hints, &res);
	if (r != 0) {
		fprintf(stderr, "loadgen: %s: %s\n", name, gai_strerror(r));
		exit(2);
	}
	memcpy(&addr, res->ai_addr, res->ai_addrlen);
	addr_len = res->ai_addrlen;
	freeaddrinfo(res);
	request_len = (size_t)snprintf(
	    request, sizeof(request), "GET %s HTTP/1.1\r\nHost: %s\r\n%s%s\r\n",
	    *slash ? slash : "/", host, headers, fresh ? "Connection: close\r\n" : "");
}

int main(int argc, char **argv)
{
	int threads = 2, conns = 32, opt;
	double seconds = 5;
	struct worker *w;
	struct counts total = {0};
	uint32_t *all;
	size_t n_all = 0;
	uint64_t start, elapsed;

	while ((opt = getopt(argc, argv, "t:c:d:nrH:")) != -1) {
		switch (opt) {
		case 'H':
			if (strlen(headers) + strlen(optarg) + 3 > sizeof(headers)) {
				fprintf(stderr, "loadgen: too many headers\n");
				return 2;
			}
			strcat(headers, optarg);
			strcat(headers, "\r\n");
			break;
		case 't':
			threads = atoi(optarg);
			break;
		case 'c':
			conns = atoi(optarg);
			break;
		case 'd':
			seconds = atof(optarg);
			break;
		case 'n':
			fresh = true;
			break;
		case 'r':
			resume = true;
			break;
		default:
			goto usage;
		}
	}
	if (optind != argc - 1 || threads < 1 || conns < threads || seconds <= 0)
		goto usage;
	parse_url(argv[optind]);
	if (tls) {
		ctx = SSL_CTX_new(TLS_client_method());
		if (!ctx) {
			fprintf(stderr, "loadgen: SSL_CTX_new failed\n");
			return 1;
		}
		SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
		if (resume)
			SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT);
	}
	w = calloc((size_t)threads, sizeof(*w));
	if (!w)
		return 1;
	start = now_usec();
	deadline = start + (uint64_t)(seconds * 1e6);
	for (int i = 0; i < threads; i++) {
		w[i].n_conns = conns / threads + (i < conns % threads);
		if (pthread_create(&w[i].thread, NULL, work, &w[i]) != 0)
			return 1;
	}
	for (int i = 0; i < threads; i++) {
		pthread_join(w[i].thread, NULL);
		total.requests += w[i].c.requests;
		total.bytes += w[i].c.bytes;
		total.connect += w[i].c.connect;
		total.read += w[i].c.read;
		total.write += w[i].c.write;
		total.status += w[i].c.status;
		total.resumed += w[i].c.resumed;
		n_all += w[i].n_samples;
	}
	elapsed = now_usec() - start;
	all = malloc((n_all ? n_all : 1) * sizeof(*all));
	if (!all)
		return 1;
	n_all = 0;
	for (int i = 0; i < threads; i++) {
		memcpy(all + n_all, w[i].samples, w[i].n_samples * sizeof(*all));
		n_all += w[i].n_samples;
	}
	qsort(all, n_all, sizeof(*all), compare);
	printf("wrk-result requests=%llu duration_us=%llu bytes=%llu connect=%llu read=%llu "
	       "write=%llu status=%llu timeout=0 p50_us=%u resumed=%llu\n",
	       (unsigned long long)total.requests, (unsigned long long)elapsed,
	       (unsigned long long)total.bytes, (unsigned long long)total.connect,
	       (unsigned long long)total.read, (unsigned long long)total.write,
	       (unsigned long long)total.status, n_all ? all[n_all / 2] : 0,
	       (unsigned long long)total.resumed);
	return 0;
usage:
	fprintf(stderr, "usage: loadgen [-t N] [-c N] [-d SECONDS] [-n] [-r] [-H HEADER]... URL\n");
	return 2;
}
