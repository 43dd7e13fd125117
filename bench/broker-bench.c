/* bench/broker-bench.c: the load generator of bench/broker.sh, and the echo server it is compared
 * with.
 *
 * usage: broker-bench echo-server SOCKET
 *        broker-bench resolve BROKER_SOCKET ECHO_SOCKET CLIENTS SECONDS [--pids BROKER_PID
 * ECHO_PID] broker-bench open BROKER_SOCKET COUNT
 *
 * It speaks the broker's wire format itself (8-byte header: u32 JSON length, u32 payload length,
 * both big-endian; then the JSON, then the payload) and links nothing of airlock's.
 *
 * echo-server: listens on SOCKET (one thread, epoll) and answers every whole frame it reads with
 *   the fixed frame {"v":1,"id":0,"ok":true} + $BENCH_TOKEN as payload: what a round trip over
 *   a Unix socket to an event loop costs on this machine, with nothing done per request.
 * resolve: CLIENTS threads each connect to both servers, open a session with the broker (one env
 *   credential "gh", from $BENCH_TOKEN, bound to api.example.com) and send WARMUP untimed
 *   resolves to each. Then all clients send resolve requests back to back, one at a time per
 *   connection, to one server at a time, in slices of SLICE_MSEC alternating between the two,
 *   for SECONDS per server. Each request's latency (send to whole answer, CLOCK_MONOTONIC) goes
 *   to an array allocated beforehand.
 * open: one client opens COUNT sessions one after the other (each timed; each closed after,
 *   untimed), after OPEN_WARMUP untimed ones.
 *
 * Every answer must be ok, carry the request's id (not from the echo server, whose answer is
 * fixed) and, for a resolve, hold exactly $BENCH_TOKEN as its payload: anything else ends the
 * run with a message and exit status 1, so that errors never count as speed. Results go to stdout
 * as one line of key=value pairs per server. With --pids, resolve also gives each server's CPU
 * time per request (user and system, all its threads, from /proc/PID/stat; each server idles
 * while the other is measured).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define HEADER 8
#define SESSION_ID_LEN 64	 /* hex digits: a session id is a 256-bit capability */
#define JSON_MAX (64 * 1024)	 /* the broker's BROKER_JSON_MAX */
#define PAYLOAD_MAX (256 * 1024) /* the broker's BROKER_PAYLOAD_MAX */
#define ANSWER_MAX 4096		 /* of JSON, and of payload: a resolve's answer is far smaller */
#define WARMUP 1000
#define OPEN_WARMUP 10
#define CLIENTS_MAX 1024
#define SURROGATE_MAX 512
#define ANSWER_TIMEOUT_SEC 10 /* a server that does not answer ends the run */
#define HOST "api.example.com"
#define POLICY_HASH "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define CREDENTIALS                                                                                \
	"[{\"name\":\"gh\",\"source\":{\"type\":\"env\",\"var\":\"BENCH_TOKEN\"},"                 \
	"\"injection\":{\"type\":\"env_var\",\"var_name\":\"GITHUB_TOKEN\"},"                      \
	"\"hosts\":[\"" HOST "\"]}]"

static bool streq(const char *a, const char *b)
{
	return strcmp(a, b) == 0;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
}

static uint32_t get_be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put_be32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	int n;

	/* One write, so that the messages of several clients do not interleave. */
	n = snprintf(msg, sizeof(msg), "broker-bench: ");
	va_start(ap, fmt);
	n += vsnprintf(msg + n, sizeof(msg) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if ((size_t)n > sizeof(msg) - 2)
		n = sizeof(msg) - 2;
	msg[n++] = '\n';
	(void)!write(STDERR_FILENO, msg, (size_t)n);
	return -EIO;
}

static int connect_to(const char *path, int *ret)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct timeval tv = {.tv_sec = ANSWER_TIMEOUT_SEC};
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0 ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int r = -errno;

		(void)close(fd);
		return r;
	}
	*ret = fd;
	return 0;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const unsigned char *p = buf;

	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* ---- JSON, as far as the answers need ----
 *
 * The answers are json-c's compact output of flat objects; these look a key up at the top level
 * only (a key inside a nested object or a string would not be told apart, which the answers
 * checked here never hold), and allow the white space JSON allows around the colon. */

static const char *skip_ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
}

/* Where key's value begins in json[0..len), or NULL. */
static const char *json_value(const char *json, size_t len, const char *key)
{
	const char *end = json + len, *p = json;
	size_t kl = strlen(key);

	while ((p = memmem(p, (size_t)(end - p), key, kl))) {
		const char *v;

		if (p == json || p[-1] != '"' || p + kl >= end || p[kl] != '"') {
			p++;
			continue;
		}
		v = skip_ws(p + kl + 1, end);
		if (v < end && *v == ':')
			return skip_ws(v + 1, end);
		p++;
	}
	return NULL;
}

static bool json_is_true(const char *json, size_t len, const char *key)
{
	const char *v = json_value(json, len, key);

	return v && json + len - v >= 4 && memcmp(v, "true", 4) == 0;
}

static bool json_uint_is(const char *json, size_t len, const char *key, uint64_t want)
{
	const char *v = json_value(json, len, key), *end = json + len;
	uint64_t n = 0;

	if (!v || v >= end || *v < '0' || *v > '9')
		return false;
	for (; v < end && *v >= '0' && *v <= '9'; v++)
		n = n * 10 + (uint64_t)(*v - '0');
	return n == want && (v == end || *v == ',' || *v == '}' || *v == ' ');
}

/* Copies key's string value (no escapes expected) into buf; -EBADMSG when absent or too long. */
static int json_string(const char *json, size_t len, const char *key, char *buf, size_t size)
{
	const char *v = json_value(json, len, key), *end = json + len, *q;

	if (!v || v >= end || *v != '"')
		return -EBADMSG;
	v++;
	for (q = v; q < end && *q != '"' && *q != '\\'; q++)
		;
	if (q >= end || *q != '"' || (size_t)(q - v) >= size || q == v)
		return -EBADMSG;
	memcpy(buf, v, (size_t)(q - v));
	buf[q - v] = '\0';
	return 0;
}

/* ---- the client's side ---- */

struct conn {
	int fd;
	uint64_t next_id;
	unsigned char req[HEADER + 1024];
	unsigned char ans[HEADER + 2 * ANSWER_MAX];
	const char *json, *payload; /* of the last answer, in ans */
	uint32_t json_len, payload_len;
};

/* Sends one request (JSON of len bytes at c->req + HEADER, no payload) and reads its whole
 * answer. A peer that sends more than one answer, or one over ANSWER_MAX, is an error. */
static int round_trip(struct conn *c, size_t len)
{
	size_t got = 0, want = HEADER;
	int r;

	put_be32(c->req, (uint32_t)len);
	put_be32(c->req + 4, 0);
	r = write_all(c->fd, c->req, HEADER + len);
	if (r < 0)
		return fail("send: %s", strerror(-r));
	while (got < want) {
		ssize_t n = read(c->fd, c->ans + got, sizeof(c->ans) - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return fail("no answer within %d s", ANSWER_TIMEOUT_SEC);
		if (n < 0)
			return fail("read: %s", strerror(errno));
		if (n == 0)
			return fail("the server closed the connection");
		got += (size_t)n;
		if (want == HEADER && got >= HEADER) {
			c->json_len = get_be32(c->ans);
			c->payload_len = get_be32(c->ans + 4);
			if (c->json_len == 0 || c->json_len > ANSWER_MAX ||
			    c->payload_len > ANSWER_MAX)
				return fail("an answer of %" PRIu32 " + %" PRIu32
					    " bytes: not one to a resolve or an open",
					    c->json_len, c->payload_len);
			want = HEADER + c->json_len + c->payload_len;
		}
	}
	if (got > want)
		return fail("%zu bytes after the answer: the server answered twice", got - want);
	c->json = (const char *)c->ans + HEADER;
	c->payload = c->json + c->json_len;
	return 0;
}

/* The last answer is ok, for request id (unless check_id is false). */
static int check_ok(const struct conn *c, uint64_t id, bool check_id, const char *op)
{
	if (!json_is_true(c->json, c->json_len, "ok") ||
	    (check_id && !json_uint_is(c->json, c->json_len, "id", id)))
		return fail("%s %" PRIu64 ": unexpected answer: %.*s", op, id, (int)c->json_len,
			    c->json);
	return 0;
}

/* Writes a request's JSON after c->req's header room; returns its length, or -EIO. */
static int format_request(struct conn *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int format_request(struct conn *c, const char *fmt, ...)
{
	size_t cap = sizeof(c->req) - HEADER;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf((char *)c->req + HEADER, cap, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= cap)
		return fail("a request over %zu bytes", cap);
	return n;
}

/* Opens a session; its id and the surrogate of "gh" go to the buffers. */
static int open_session(struct conn *c, char session[static SESSION_ID_LEN + 1], char *surrogate,
			size_t size)
{
	uint64_t id = c->next_id++;
	int r;

	r = format_request(c,
			   "{\"v\":1,\"id\":%" PRIu64
			   ",\"op\":\"open\",\"policy_hash\":\"" POLICY_HASH
			   "\",\"label\":\"broker-bench\",\"credentials\":" CREDENTIALS "}",
			   id);
	if (r >= 0)
		r = round_trip(c, (size_t)r);
	if (r < 0)
		return r;
	r = check_ok(c, id, true, "open");
	if (r < 0)
		return r;
	if (json_string(c->json, c->json_len, "session", session, SESSION_ID_LEN + 1) < 0 ||
	    strlen(session) != SESSION_ID_LEN ||
	    json_string(c->json, c->json_len, "gh", surrogate, size) < 0)
		return fail("open %" PRIu64 ": no session id or surrogate in %.*s", id,
			    (int)c->json_len, c->json);
	return 0;
}

static int close_session(struct conn *c, const char *session)
{
	uint64_t id = c->next_id++;
	int r;

	r = format_request(c, "{\"v\":1,\"id\":%" PRIu64 ",\"op\":\"close\",\"session\":\"%s\"}",
			   id, session);
	if (r >= 0)
		r = round_trip(c, (size_t)r);
	return r < 0 ? r : check_ok(c, id, true, "close");
}

static const char *token;
static size_t token_len;

static int check_token(const struct conn *c, uint64_t id)
{
	if (c->payload_len != token_len || memcmp(c->payload, token, token_len) != 0)
		return fail("resolve %" PRIu64 ": the payload (%" PRIu32
			    " bytes) is not the token (%zu bytes)",
			    id, c->payload_len, token_len);
	return 0;
}

/* ---- the server's CPU time ---- */

struct cpu {
	uint64_t user, sys; /* clock ticks */
};

static int server_cpu(pid_t pid, struct cpu *ret)
{
	char path[64], buf[1024], *p;
	unsigned long long user, sys;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return fail("%s: %s", path, strerror(errno));
	n = fread(buf, 1, sizeof(buf) - 1, f);
	(void)fclose(f);
	buf[n] = '\0';
	/* After the command name in parentheses: state, then fields 4 to 13, then utime, stime. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &user,
			 &sys) != 2)
		return fail("%s: cannot read utime and stime", path);
	*ret = (struct cpu){user, sys};
	return 0;
}

/* ---- percentiles ---- */

static int compare_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* The nearest-rank percentile p (0 < p < 1) of sorted v[0..n), in µs. */
static double pct_us(const uint32_t *v, size_t n, double p)
{
	size_t k = (size_t)(p * (double)n + 0.999999);

	if (k == 0)
		k = 1;
	return v[k - 1] / 1000.0;
}

static void print_latencies(uint32_t *v, size_t n, uint64_t max_ns)
{
	qsort(v, n, sizeof(*v), compare_u32);
	printf(" p50_us=%.1f p90_us=%.1f p99_us=%.1f max_us=%.1f", pct_us(v, n, 0.50),
	       pct_us(v, n, 0.90), pct_us(v, n, 0.99), max_ns / 1000.0);
}

static void print_cpu(const struct cpu *a, const struct cpu *b, uint64_t requests)
{
	double tick_us = 1e6 / (double)sysconf(_SC_CLK_TCK);

	printf(" server_user_us=%.2f server_sys_us=%.2f",
	       (double)(b->user - a->user) * tick_us / (double)requests,
	       (double)(b->sys - a->sys) * tick_us / (double)requests);
}

static int parse_uint(const char *s, unsigned long min, unsigned long max, unsigned long *ret)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -EINVAL;
	*ret = v;
	return 0;
}

/* ---- resolve: the clients ----
 *
 * Each client has a connection to each server. The run alternates between the two servers in
 * slices of SLICE_MSEC (echo, broker, broker, echo, ...), all clients on the same server at a
 * time, so that a busy spell of the machine hits both alike; each server idles while the other
 * is measured. */

#define SLICE_MSEC 500

enum { ECHO, BROKER, _SERVER_MAX };
static const char *const server_names[_SERVER_MAX] = {"echo", "broker"};

struct run {
	const char *paths[_SERVER_MAX];
	pthread_barrier_t go, done;
	/* Set by the main thread before go, read by the clients after it. */
	int server;
	uint64_t deadline_ns;
	bool stop;
};

struct client {
	struct run *run;
	pthread_t thread;
	struct conn c[_SERVER_MAX];
	char session[SESSION_ID_LEN + 1], surrogate[SURROGATE_MAX + 1];
	uint32_t *lat[_SERVER_MAX]; /* ns, clamped to UINT32_MAX; mmap'd, touched as it fills */
	size_t cap, n[_SERVER_MAX];
	uint64_t max_ns[_SERVER_MAX], end_ns;
	int r;
};

static int resolve_once(struct client *cl, int server, uint64_t *ret_ns)
{
	struct conn *c = &cl->c[server];
	uint64_t id = c->next_id++, t0, t1;
	int r;

	r = format_request(c,
			   "{\"v\":1,\"id\":%" PRIu64 ",\"op\":\"resolve\",\"session\":\"%s\","
			   "\"surrogate\":\"%s\",\"host\":\"" HOST "\"}",
			   id, cl->session, cl->surrogate);
	if (r < 0)
		return r;
	t0 = now_ns();
	r = round_trip(c, (size_t)r);
	t1 = now_ns();
	if (r < 0)
		return r;
	r = check_ok(c, id, server != ECHO, "resolve");
	if (r >= 0)
		r = check_token(c, id);
	*ret_ns = t1 - t0;
	return r;
}

/* Connects to both servers, opens a session with the broker (the echo server reads nothing of
 * the request: it gets the same bytes), and sends WARMUP untimed requests to each. */
static int client_setup(struct client *cl)
{
	uint64_t ns;
	int r;

	for (int k = 0; k < _SERVER_MAX; k++) {
		r = connect_to(cl->run->paths[k], &cl->c[k].fd);
		if (r < 0)
			return fail("connect %s: %s", cl->run->paths[k], strerror(-r));
	}
	r = open_session(&cl->c[BROKER], cl->session, cl->surrogate, sizeof(cl->surrogate));
	for (int k = 0; r >= 0 && k < _SERVER_MAX; k++)
		for (int i = 0; r >= 0 && i < WARMUP; i++)
			r = resolve_once(cl, k, &ns);
	return r;
}

/* Requests to run->server until run->deadline_ns. */
static int client_slice(struct client *cl)
{
	const struct run *run = cl->run;
	int k = run->server;
	uint64_t ns;
	int r;

	do {
		if (cl->n[k] == cl->cap)
			return fail("more than %zu requests from one client", cl->cap);
		r = resolve_once(cl, k, &ns);
		if (r < 0)
			return r;
		cl->lat[k][cl->n[k]++] = ns > UINT32_MAX ? UINT32_MAX : (uint32_t)ns;
		if (ns > cl->max_ns[k])
			cl->max_ns[k] = ns;
		cl->end_ns = now_ns();
	} while (cl->end_ns < run->deadline_ns);
	return 0;
}

static void *client_main(void *userdata)
{
	struct client *cl = userdata;
	struct run *run = cl->run;

	cl->r = client_setup(cl);
	(void)pthread_barrier_wait(&run->done); /* set up, or failed */
	for (;;) {
		(void)pthread_barrier_wait(&run->go);
		if (run->stop)
			break;
		if (cl->r >= 0)
			cl->r = client_slice(cl);
		(void)pthread_barrier_wait(&run->done);
	}
	return NULL;
}

static void clients_free(struct client *cls, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (int k = 0; k < _SERVER_MAX; k++) {
			if (cls[i].lat[k] && cls[i].lat[k] != MAP_FAILED)
				(void)munmap(cls[i].lat[k], cls[i].cap * sizeof(*cls[i].lat[k]));
			if (cls[i].c[k].fd >= 0)
				(void)close(cls[i].c[k].fd);
		}
	free(cls);
}

static int clients_failed(const struct client *cls, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (cls[i].r < 0)
			return cls[i].r;
	return 0;
}

/* The line of results of server k. */
static int report(const struct client *cls, size_t clients, int k, uint64_t busy_ns,
		  const struct cpu *cpu0, const struct cpu *cpu1)
{
	uint64_t total = 0, max_ns = 0;
	size_t min_n = SIZE_MAX, max_n = 0;
	uint32_t *all;

	for (size_t i = 0; i < clients; i++) {
		total += cls[i].n[k];
		max_ns = cls[i].max_ns[k] > max_ns ? cls[i].max_ns[k] : max_ns;
		min_n = cls[i].n[k] < min_n ? cls[i].n[k] : min_n;
		max_n = cls[i].n[k] > max_n ? cls[i].n[k] : max_n;
	}
	if (total == 0)
		return fail("the %s server answered no request", server_names[k]);
	all = malloc(total * sizeof(*all));
	if (!all)
		return -ENOMEM;
	total = 0;
	for (size_t i = 0; i < clients; i++) {
		memcpy(all + total, cls[i].lat[k], cls[i].n[k] * sizeof(*all));
		total += cls[i].n[k];
	}
	printf("resolve server=%s clients=%zu requests=%" PRIu64 " seconds=%.3f rps=%.0f",
	       server_names[k], clients, total, busy_ns / 1e9,
	       (double)total * 1e9 / (double)busy_ns);
	print_latencies(all, total, max_ns);
	printf(" client_min=%zu client_max=%zu", min_n, max_n);
	if (cpu0)
		print_cpu(cpu0, cpu1, total);
	putchar('\n');
	free(all);
	return 0;
}

/* The slices, once every client is set up; then a line of results per server. */
static int resolve_slices(struct run *run, struct client *cls, size_t clients,
			  unsigned long seconds, const pid_t pids[_SERVER_MAX])
{
	unsigned long slices = seconds * 1000 / SLICE_MSEC;
	struct cpu cpu0[_SERVER_MAX] = {0}, cpu1[_SERVER_MAX] = {0};
	uint64_t busy_ns[_SERVER_MAX] = {0};
	int r;

	r = clients_failed(cls, clients);
	for (int k = 0; k < _SERVER_MAX && r >= 0; k++)
		if (pids[k] > 0)
			r = server_cpu(pids[k], &cpu0[k]);
	for (unsigned long i = 0; r >= 0 && i < 2 * slices; i++) {
		uint64_t start, end = 0;

		run->server = (i % 4 == 0 || i % 4 == 3) ? ECHO : BROKER;
		start = now_ns();
		run->deadline_ns = start + SLICE_MSEC * 1000000ULL;
		(void)pthread_barrier_wait(&run->go);
		(void)pthread_barrier_wait(&run->done);
		r = clients_failed(cls, clients);
		for (size_t c = 0; c < clients; c++)
			end = cls[c].end_ns > end ? cls[c].end_ns : end;
		busy_ns[run->server] += end - start;
	}
	for (int k = 0; k < _SERVER_MAX && r >= 0; k++)
		if (pids[k] > 0)
			r = server_cpu(pids[k], &cpu1[k]);
	run->stop = true;
	(void)pthread_barrier_wait(&run->go);
	for (size_t c = 0; c < clients; c++)
		(void)pthread_join(cls[c].thread, NULL);
	for (int k = 0; k < _SERVER_MAX && r >= 0; k++)
		r = report(cls, clients, k, busy_ns[k], pids[k] > 0 ? &cpu0[k] : NULL, &cpu1[k]);
	return r;
}

static int cmd_resolve(const char *paths[_SERVER_MAX], unsigned long clients, unsigned long seconds,
		       const pid_t pids[_SERVER_MAX])
{
	struct run run = {.paths = {paths[ECHO], paths[BROKER]}};
	struct client *cls;
	int r;

	cls = calloc(clients, sizeof(*cls));
	if (!cls)
		return -ENOMEM;
	for (size_t i = 0; i < clients; i++) {
		struct client *cl = &cls[i];

		cl->run = &run;
		/* A round trip over a socket takes well over 1 µs: one slot per µs is enough. */
		cl->cap = seconds * 1000000 + 1024;
		for (int k = 0; k < _SERVER_MAX; k++) {
			cl->c[k].fd = -EBADF;
			cl->c[k].next_id = 1;
			cl->lat[k] =
			    mmap(NULL, cl->cap * sizeof(*cl->lat[k]), PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
			if (cl->lat[k] == MAP_FAILED) {
				r = fail("mmap: %s", strerror(errno));
				clients_free(cls, i + 1);
				return r;
			}
		}
	}
	(void)pthread_barrier_init(&run.go, NULL, (unsigned)clients + 1);
	(void)pthread_barrier_init(&run.done, NULL, (unsigned)clients + 1);
	for (size_t i = 0; i < clients; i++) {
		r = -pthread_create(&cls[i].thread, NULL, client_main, &cls[i]);
		/* The threads started wait at the barrier for the others: only exit ends them. */
		if (r < 0)
			return fail("pthread_create: %s", strerror(-r));
	}
	(void)pthread_barrier_wait(&run.done); /* every client is set up, or has failed */
	r = resolve_slices(&run, cls, clients, seconds, pids);
	clients_free(cls, clients);
	(void)pthread_barrier_destroy(&run.go);
	(void)pthread_barrier_destroy(&run.done);
	return r;
}

/* ---- open ---- */

/* COUNT timed opens (each closed after, untimed) after OPEN_WARMUP untimed ones, into lat. */
static int open_loop(struct conn *c, uint32_t *lat, unsigned long count, uint64_t *ret_max_ns)
{
	char session[SESSION_ID_LEN + 1], surrogate[SURROGATE_MAX + 1];
	uint64_t t0, ns, max_ns = 0;
	int r;

	for (unsigned long i = 0; i < OPEN_WARMUP + count; i++) {
		t0 = now_ns();
		r = open_session(c, session, surrogate, sizeof(surrogate));
		ns = now_ns() - t0;
		if (r < 0)
			return r;
		if (i >= OPEN_WARMUP) {
			lat[i - OPEN_WARMUP] = ns > UINT32_MAX ? UINT32_MAX : (uint32_t)ns;
			max_ns = ns > max_ns ? ns : max_ns;
		}
		r = close_session(c, session);
		if (r < 0)
			return r;
	}
	*ret_max_ns = max_ns;
	return 0;
}

static int cmd_open(const char *path, unsigned long count)
{
	uint64_t max_ns = 0;
	struct conn *c;
	uint32_t *lat;
	int r;

	c = calloc(1, sizeof(*c));
	lat = calloc(count, sizeof(*lat));
	if (!c || !lat) {
		r = -ENOMEM;
	} else {
		c->next_id = 1;
		r = connect_to(path, &c->fd);
		if (r < 0) {
			r = fail("connect %s: %s", path, strerror(-r));
		} else {
			r = open_loop(c, lat, count, &max_ns);
			(void)close(c->fd);
		}
	}
	if (r >= 0) {
		printf("open count=%lu", count);
		print_latencies(lat, count, max_ns);
		putchar('\n');
	}
	free(lat);
	free(c);
	return r;
}

/* ---- the echo server ---- */

struct peer {
	int fd;
	unsigned char *in, *out;
	size_t in_len, in_cap, out_len, out_off, out_cap;
	bool want_out;
};

static unsigned char *answer;
static size_t answer_len;

static void peer_free(struct peer *p)
{
	(void)close(p->fd); /* also takes it out of the epoll set */
	free(p->in);
	free(p->out);
	free(p);
}

/* Sends what is queued; -errno when the peer is gone. */
static int peer_flush(int epfd, struct peer *p)
{
	bool want;

	while (p->out_off < p->out_len) {
		ssize_t n = send(p->fd, p->out + p->out_off, p->out_len - p->out_off,
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n < 0)
			return -errno;
		p->out_off += (size_t)n;
	}
	if (p->out_off == p->out_len)
		p->out_off = p->out_len = 0;
	want = p->out_len > 0;
	if (want != p->want_out) {
		p->want_out = want;
		(void)epoll_ctl(epfd, EPOLL_CTL_MOD, p->fd,
				&(struct epoll_event){.events = EPOLLIN | (want ? EPOLLOUT : 0),
						      .data.ptr = p});
	}
	return 0;
}

/* One read (level-triggered epoll brings the peer back while more is there), then a fixed answer
 * queued for each whole frame, then one send. -errno or -ECONNRESET: drop the peer. */
static int peer_readable(int epfd, struct peer *p)
{
	size_t off = 0;
	ssize_t n;

	if (p->in_len == p->in_cap) {
		size_t cap = p->in_cap ? p->in_cap * 2 : 4096;
		unsigned char *b;

		if (cap > 2 * (HEADER + JSON_MAX + PAYLOAD_MAX))
			return -EMSGSIZE;
		b = realloc(p->in, cap);
		if (!b)
			return -ENOMEM;
		p->in = b;
		p->in_cap = cap;
	}
	n = read(p->fd, p->in + p->in_len, p->in_cap - p->in_len);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	if (n == 0)
		return -ECONNRESET;
	p->in_len += (size_t)n;
	while (p->in_len - off >= HEADER) {
		uint32_t json = get_be32(p->in + off), payload = get_be32(p->in + off + 4);

		if (json == 0 || json > JSON_MAX || payload > PAYLOAD_MAX)
			return -EMSGSIZE;
		if (p->in_len - off < HEADER + json + payload)
			break;
		off += HEADER + json + payload;
		if (p->out_len + answer_len > p->out_cap) {
			size_t cap = (p->out_len + answer_len) * 2;
			unsigned char *b = realloc(p->out, cap);

			if (!b)
				return -ENOMEM;
			p->out = b;
			p->out_cap = cap;
		}
		memcpy(p->out + p->out_len, answer, answer_len);
		p->out_len += answer_len;
	}
	memmove(p->in, p->in + off, p->in_len - off);
	p->in_len -= off;
	return peer_flush(epfd, p);
}

static int cmd_echo_server(const char *path)
{
	static const char json[] = "{\"v\":1,\"id\":0,\"ok\":true}";
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct epoll_event ev[64];
	int lfd, sfd, epfd, r = 0;
	sigset_t mask;

	answer_len = HEADER + strlen(json) + token_len;
	answer = malloc(answer_len);
	if (!answer)
		return -ENOMEM;
	put_be32(answer, (uint32_t)strlen(json));
	put_be32(answer + 4, (uint32_t)token_len);
	memcpy(answer + HEADER, json, strlen(json));
	memcpy(answer + HEADER + strlen(json), token, token_len);

	if (strlen(path) >= sizeof(sa.sun_path))
		return fail("%s: name too long", path);
	strcpy(sa.sun_path, path);
	(void)sigemptyset(&mask);
	(void)sigaddset(&mask, SIGINT);
	(void)sigaddset(&mask, SIGTERM);
	(void)sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (sfd < 0 || lfd < 0 || epfd < 0)
		return fail("setting up: %s", strerror(errno));
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 128) < 0)
		return fail("%s: %s", path, strerror(errno));
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, lfd,
		      &(struct epoll_event){.events = EPOLLIN, .data.ptr = &lfd}) < 0 ||
	    epoll_ctl(epfd, EPOLL_CTL_ADD, sfd,
		      &(struct epoll_event){.events = EPOLLIN, .data.ptr = &sfd}) < 0)
		return fail("epoll_ctl: %s", strerror(errno));

	for (;;) {
		int n = epoll_wait(epfd, ev, 64, -1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = fail("epoll_wait: %s", strerror(errno));
			break;
		}
		for (int i = 0; i < n; i++) {
			void *d = ev[i].data.ptr;
			struct peer *p;
			int fd, k;

			if (d == &sfd)
				goto out;
			if (d != &lfd) {
				p = d;
				if (ev[i].events & EPOLLOUT)
					k = peer_flush(epfd, p);
				else
					k = peer_readable(epfd, p);
				if (k < 0)
					peer_free(p);
				continue;
			}
			while ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
				p = calloc(1, sizeof(*p));
				if (!p) {
					(void)close(fd);
					continue;
				}
				p->fd = fd;
				if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd,
					      &(struct epoll_event){.events = EPOLLIN,
								    .data.ptr = p}) < 0)
					peer_free(p);
			}
		}
	}
out:
	(void)unlink(path);
	free(answer);
	return r;
}

/* ---- main ---- */

static int usage(void)
{
	fputs("usage: broker-bench echo-server SOCKET\n"
	      "       broker-bench resolve BROKER_SOCKET ECHO_SOCKET CLIENTS SECONDS\n"
	      "                    [--pids BROKER_PID ECHO_PID]\n"
	      "       broker-bench open BROKER_SOCKET COUNT\n"
	      "(BENCH_TOKEN in the environment: the token the servers answer with)\n",
	      stderr);
	return 2;
}

int main(int argc, char **argv)
{
	pid_t pids[_SERVER_MAX] = {0};
	unsigned long n, seconds, pid[2];
	int r;

	token = getenv("BENCH_TOKEN");
	if (!token || !*token || strlen(token) > ANSWER_MAX) {
		fprintf(stderr, "broker-bench: BENCH_TOKEN must hold the token (1 to %d bytes)\n",
			ANSWER_MAX);
		return 2;
	}
	token_len = strlen(token);
	if (argc == 3 && streq(argv[1], "echo-server")) {
		r = cmd_echo_server(argv[2]);
	} else if ((argc == 6 || argc == 9) && streq(argv[1], "resolve") &&
		   parse_uint(argv[4], 1, CLIENTS_MAX, &n) >= 0 &&
		   parse_uint(argv[5], 1, 3600, &seconds) >= 0) {
		if (argc == 9) {
			if (!streq(argv[6], "--pids") ||
			    parse_uint(argv[7], 1, INT32_MAX, &pid[0]) < 0 ||
			    parse_uint(argv[8], 1, INT32_MAX, &pid[1]) < 0)
				return usage();
			pids[BROKER] = (pid_t)pid[0];
			pids[ECHO] = (pid_t)pid[1];
		}
		r = cmd_resolve((const char *[_SERVER_MAX]){[BROKER] = argv[2], [ECHO] = argv[3]},
				n, seconds, pids);
	} else if (argc == 4 && streq(argv[1], "open") &&
		   parse_uint(argv[3], 1, 1000000, &n) >= 0) {
		r = cmd_open(argv[2], n);
	} else {
		return usage();
	}
	if (r == -ENOMEM)
		fprintf(stderr, "broker-bench: out of memory\n");
	return r < 0 ? 1 : 0;
}
