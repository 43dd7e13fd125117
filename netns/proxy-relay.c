#define LOG_MODULE "netns"

/* The proxy's connections after accept (see proxy.c for the phases): the explicit proxy's
 * request head, the upstream's connect, sniffing what the sandbox speaks, and the two relays:
 * splice, and the inspected HTTP flow (plain or over intercepted TLS). */

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "broker/client.h"
#include "common/audit.h"
#include "common/fd-util.h"
#include "common/log.h"
#include "netns/proxy-internal.h"
#include "policy/policy.h"

#define TLS_RECORD 0x16	    /* a TLS handshake record's first byte */
#define SNIFF_RECORDS_MAX 8 /* records a ClientHello may come in */

/* ---- the explicit proxy: CONNECT host:port, or GET http://host/... ---- */

/* Sets c's destination from an authority "host[:port]" or "[v6]:port" (len bytes): a name, or
 * a raw address. -EINVAL when it is neither. */
static int set_authority(struct conn *c, const char *s, size_t len, uint16_t default_port)
{
	char host[NETNS_DNS_NAME_MAX + 1];
	const char *colon = NULL, *h = s;
	size_t hl = len;
	unsigned long port = default_port;
	char *end;

	if (len > 0 && s[0] == '[') {
		const char *close = memchr(s, ']', len);

		if (!close)
			return -EINVAL;
		h = s + 1;
		hl = (size_t)(close - h);
		colon = close + 1 < s + len ? close + 1 : NULL;
		if (colon && *colon != ':')
			return -EINVAL;
	} else {
		colon = memrchr(s, ':', len);
		if (colon)
			hl = (size_t)(colon - s);
	}
	if (colon) {
		char digits[8];
		size_t dl = len - (size_t)(colon + 1 - s);

		if (dl == 0 || dl >= sizeof(digits))
			return -EINVAL;
		memcpy(digits, colon + 1, dl);
		digits[dl] = '\0';
		port = strtoul(digits, &end, 10);
		if (*end || !isdigit((unsigned char)digits[0]) || port == 0 || port > 65535)
			return -EINVAL;
	}
	if (hl == 0 || hl >= sizeof(host))
		return -EINVAL;
	memcpy(host, h, hl);
	host[hl] = '\0';
	c->port = (uint16_t)port;
	memcpy(c->target, host, hl + 1);
	if (inet_pton(AF_INET, host, c->upstream.addr) == 1) {
		c->upstream.family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, host, c->upstream.addr) == 1) {
		c->upstream.family = AF_INET6;
		return 0;
	}
	if (s[0] == '[')
		return -EINVAL;
	if (host[hl - 1] == '.')
		host[--hl] = '\0';
	for (size_t i = 0; i < hl; i++) {
		char ch = (char)tolower((unsigned char)host[i]);

		if (!isalnum((unsigned char)ch) && ch != '-' && ch != '.' && ch != '_')
			return -EINVAL;
		host[i] = ch;
	}
	if (hl == 0 || host[0] == '.' || strstr(host, ".."))
		return -EINVAL;
	memcpy(c->name, host, hl + 1);
	return 0;
}

static void answer_and_close(struct conn *c, const char *status, const char *message)
{
	char buf[256];
	int n;

	n = snprintf(buf, sizeof(buf),
		     "HTTP/1.1 %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
		     "Connection: close\r\n\r\nairlock: %s\n",
		     status, strlen(message) + 10, message);
	(void)send(c->cfd, buf, (size_t)MIN(n, (int)sizeof(buf) - 1), MSG_DONTWAIT | MSG_NOSIGNAL);
	proxy_close(c, false);
}

/* Whether the head in c->cin may be complete: an empty line ends it. Only the bytes not searched
 * before are (with the three before them), so a head sent a byte at a time costs linear time. */
static bool head_may_be_complete(struct conn *c)
{
	const uint8_t *p = netns_buf_head(&c->cin);
	size_t n = netns_buf_len(&c->cin), i = c->head_scanned > 3 ? c->head_scanned - 3 : 0;

	c->head_scanned = n;
	for (; i + 1 < n; i++)
		if (p[i] == '\n' &&
		    (p[i + 1] == '\n' || (p[i + 1] == '\r' && i + 2 < n && p[i + 2] == '\n')))
			return true;
	return n >= NETNS_HTTP_HEAD_MAX;
}

/* The head in c->cin, which may be complete: where c goes (a CONNECT's tunnel, or an
 * absolute-form request's origin). */
static int route_head(struct conn *c)
{
	struct netns_http_request req;
	struct al_error err = {0};
	int r;

	r = netns_http_parse_request((const char *)netns_buf_head(&c->cin), netns_buf_len(&c->cin),
				     &req, &err);
	if (r == -EAGAIN && netns_buf_len(&c->cin) < NETNS_HTTP_HEAD_MAX && !c->c_eof)
		return 0;
	if (r == -EAGAIN && c->c_eof)
		r = al_error_set(&err, -EBADMSG, "the connection ended within the request head");
	if (r < 0) {
		answer_and_close(c, r == -EBADMSG ? "400 Bad Request" : "431 Too Large",
				 r == -EBADMSG ? err.msg : "request head too large");
		return r;
	}
	if (req.connect) {
		/* The head is the proxy's; the tunnel starts after the answer to it. */
		if (netns_buf_len(&c->cin) > req.head_len) {
			answer_and_close(c, "400 Bad Request",
					 "bytes sent before the tunnel was established");
			return -EPROTO;
		}
		r = set_authority(c, req.target, req.target_len, 443);
		netns_buf_done(&c->cin);
	} else if (req.target_len > 7 && strncasecmp(req.target, "http://", 7) == 0) {
		size_t alen = strcspn(req.target + 7, "/?#");

		c->absolute_form = true;
		r = set_authority(c, req.target + 7, MIN(alen, req.target_len - 7), 80);
	} else {
		answer_and_close(c, "400 Bad Request",
				 "the proxy takes CONNECT host:port or an http:// target");
		return -EINVAL;
	}
	if (r < 0) {
		answer_and_close(c, "400 Bad Request", "not a host and port");
		return r;
	}
	proxy_enter_route(c);
	return 0;
}

int proxy_read_head(struct conn *c)
{
	uint8_t buf[PROXY_CHUNK];
	ssize_t n;
	int r;

	/* The head is read (taken from the socket), not peeked again at every segment. The
	 * sandbox's end may have come before (a request for another origin, after the ones it
	 * sent before it: next_origin()), or with the head: the head is still answered. */
	while (!c->c_eof && netns_buf_len(&c->cin) < NETNS_HTTP_HEAD_MAX) {
		n = recv(c->cfd, buf,
			 MIN(sizeof(buf), NETNS_HTTP_HEAD_MAX - netns_buf_len(&c->cin)), 0);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			r = -errno;
			proxy_close(c, true);
			return r;
		}
		if (n == 0) {
			c->c_eof = true;
			break;
		}
		if (netns_buf_append(&c->cin, buf, (size_t)n, NETNS_HTTP_HEAD_MAX) < 0) {
			proxy_close(c, true);
			return -ENOMEM;
		}
	}
	if (netns_buf_len(&c->cin) == 0 && c->c_eof) {
		proxy_close(c, false);
		return -ECONNRESET;
	}
	/* Searched again only for the bytes that came since. */
	if ((c->head_scanned == netns_buf_len(&c->cin) || !head_may_be_complete(c)) && !c->c_eof)
		return 0;
	return route_head(c);
}

/* ---- the upstream's connect ---- */

static void start_splice(struct conn *c, const char *mode);
static void start_flow(struct conn *c, bool tls);

bool proxy_answer_tunnel(struct conn *c)
{
	static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";

	if (c->tunnel_answered)
		return true;
	c->tunnel_answered = true;
	/* The first bytes on a fresh socket: the send buffer has room. */
	if (send(c->cfd, ok, sizeof(ok) - 1, MSG_DONTWAIT | MSG_NOSIGNAL) !=
	    (ssize_t)sizeof(ok) - 1) {
		proxy_close(c, true);
		return false;
	}
	return true;
}

static int connected_again(struct conn *c);

int proxy_connected(struct conn *c)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(int);
	int e = 0;

	/* The upstream's socket has an event coming when its connect ends: writable, and neither
	 * an error nor an end, says connected; an error or an end is asked about. */
	if (c->u_writable)
		goto connected;
	if (!c->uev.read_on)
		return 0;
	if (getsockopt(c->ufd, SOL_SOCKET, SO_ERROR, &e, &len) < 0)
		e = errno;
	if (e == 0) {
		len = sizeof(ss);
		if (getpeername(c->ufd, (struct sockaddr *)&ss, &len) < 0) {
			if (errno == ENOTCONN)
				return 0; /* still connecting */
			e = errno;
		}
	}
	if (e != 0) {
		proxy_audit(c, "error", "upstream refused or unreachable");
		if (c->explicit_proxy && !c->tunnel_answered) {
			answer_and_close(c, "502 Bad Gateway", "the upstream cannot be reached");
			return -e;
		}
		proxy_close(c, true);
		return -e;
	}
connected:
	if (c->u_again)
		return connected_again(c);
	if (c->absolute_form) {
		start_flow(c, false);
		return 0;
	}
	if (c->explicit_proxy && !proxy_answer_tunnel(c))
		return -EIO;
	/* A Postgres credential's destination: its login is the proxy's (the sandbox speaks
	 * first, so nothing is sniffed). */
	if (proxy_pg_start(c))
		return 0;
	c->phase = PHASE_SNIFF;
	return 0;
}

/* ---- what the sandbox speaks first ---- */

/* The bytes a ClientHello in TLS records needs before it is worth parsing again: the end of the
 * first record buf (n bytes) does not hold whole, or the next record's header. -EMSGSIZE past
 * SNIFF_RECORDS_MAX records (a hello sent in tiny records would be parsed once per record). */
static ssize_t hello_need(const uint8_t *buf, size_t n)
{
	size_t off = 0, records = 0;

	while (off + 5 <= n) {
		size_t end = off + 5 + ((size_t)buf[off + 3] << 8 | buf[off + 4]);

		if (++records > SNIFF_RECORDS_MAX)
			return -EMSGSIZE;
		if (end > n)
			return (ssize_t)end;
		off = end;
	}
	return (ssize_t)(off + 5);
}

#define SSH_IDENT_LEN 4 /* "SSH-" */

/* Whether the n bytes at buf begin an SSH identification line (or are its first bytes). */
static bool is_ssh_ident(const uint8_t *buf, size_t n)
{
	return memcmp(buf, "SSH-", MIN(n, (size_t)SSH_IDENT_LEN)) == 0;
}

/* A connection that waited for its ClientHello to take a kept upstream (proxy_pool_has()) and
 * got none, or spoke something else: it connects its own, and is sniffed again once connected. */
static int connect_own(struct conn *c)
{
	c->pool_tried = true;
	c->sniff_need = 0;
	proxy_enter_route(c);
	return c->closed ? -EIO : 0;
}

int proxy_sniff(struct conn *c)
{
	struct netns_proxy *p = c->proxy;
	uint8_t buf[NETNS_TLS_HELLO_MAX];
	struct netns_tls_hello h;
	char reason[2 * NETNS_DNS_NAME_MAX + 64];
	ssize_t n, need;
	int r, queued = 0;
	/* What came may begin a request line, but it was waited for long enough. */
	bool line_over = c->sniff_line_until && proxy_now_msec() >= c->sniff_line_until;

	/* Peeked and parsed again only once what the records announce has come (or nothing more
	 * will: the sandbox's end came, or a request line was waited for long enough). */
	if (c->sniff_need > 0 && !c->cev.read_on && !line_over &&
	    ioctl(c->cfd, FIONREAD, &queued) == 0 &&
	    (size_t)queued < MIN(c->sniff_need, sizeof(buf)))
		return 0;
	n = recv(c->cfd, buf, sizeof(buf), MSG_PEEK);
	if (n < 0) {
		if (errno != EAGAIN && errno != EINTR) {
			proxy_close(c, true);
			return -errno;
		}
		/* Nothing yet: a server that speaks first (SSH, SMTP) gets the splice, or SSH
		 * the watch when the policy has SSH keys. Without an upstream yet (a kept one may
		 * serve), the sandbox speaks first. */
		if (c->ufd < 0)
			return 0;
		n = recv(c->ufd, buf, proxy_ssh_wanted(p) ? SSH_IDENT_LEN : 1, MSG_PEEK);
		if (n > 0 && proxy_ssh_wanted(p) && is_ssh_ident(buf, (size_t)n)) {
			if ((size_t)n == SSH_IDENT_LEN)
				proxy_ssh_start(c);
			return 0; /* the rest of "SSH-" comes */
		}
		if (n > 0 || n == 0)
			start_splice(c, "tcp");
		return 0;
	}
	if (n == 0) {
		proxy_audit(c, "allow", "closed before sending");
		proxy_close(c, false);
		return -ECONNRESET;
	}
	/* SSH (the client's identification): watched for the agent, else spliced, as nothing of it
	 * is swapped. */
	if (is_ssh_ident(buf, (size_t)n)) {
		if ((size_t)n < SSH_IDENT_LEN) {
			c->sniff_need = SSH_IDENT_LEN;
			return 0;
		}
		if (c->ufd < 0)
			return connect_own(c);
		if (proxy_ssh_wanted(p))
			proxy_ssh_start(c);
		else
			start_splice(c, "ssh");
		return 0;
	}
	if (buf[0] != TLS_RECORD) {
		bool inspected = p->surrogates && p->surrogates[0], flow;
		int http = 0;

		/* An HTTP request begins with its method, upper-case letters: anything else (a
		 * Postgres startup toward a host no Postgres credential is bound to, Redis) cannot
		 * be searched for surrogates, and is refused now rather than left waiting for a
		 * head that never comes. */
		if (inspected && (buf[0] < 'A' || buf[0] > 'Z')) {
			proxy_refuse(c, "neither TLS, HTTP nor SSH: it cannot be searched for "
					"surrogates");
			return -EPERM;
		}
		/* Without surrogates, HTTP to a name goes through the flow too (its upstream kept
		 * for the next connection, its bodies moved unread), and anything else is spliced:
		 * what it speaks is known once its first line is. */
		if (!inspected && c->name[0]) {
			http = netns_http_request_line_begins((const char *)buf, (size_t)n);
			/* The rest of a line is waited for, but not after the sandbox's end, nor
			 * for long: a short command without a line end (ZooKeeper's "ruok") waits
			 * for its answer, not for more of itself (found by the red team). */
			if (http == -EAGAIN && (size_t)n < sizeof(buf) && !c->cev.read_on &&
			    !line_over) {
				c->sniff_need = (size_t)n + 1;
				if (!c->sniff_line_until) {
					c->sniff_line_until =
					    proxy_now_msec() + PROXY_SNIFF_LINE_MSEC;
					proxy_sniff_due(p, c->sniff_line_until);
				}
				return 0;
			}
		}
		flow = inspected || http > 0;
		if (c->ufd < 0 && !(flow && proxy_pool_take(c, false)))
			return c->closed ? -EIO : connect_own(c);
		if (flow)
			start_flow(c, false);
		else
			start_splice(c, "tcp");
		return 0;
	}
	r = netns_tls_parse_hello(buf, (size_t)n, &h);
	if (r == -EAGAIN && (size_t)n < sizeof(buf)) {
		need = hello_need(buf, (size_t)n);
		if (need >= 0) {
			c->sniff_need = (size_t)need;
			return 0;
		}
		r = (int)need;
	}
	if (r < 0) {
		proxy_refuse(c, "not a TLS ClientHello");
		return r;
	}
	if (c->name[0] && h.sni[0] && !streq(h.sni, c->name)) {
		(void)snprintf(reason, sizeof(reason), "TLS server name %s is not %s", h.sni,
			       c->name);
		proxy_refuse(c, reason);
		return -EPERM;
	}
	c->hello_h2 = h.alpn_h2;
	if (!p->tls || !c->name[0] || !netns_name_is_bound(p->o->policy, c->name)) {
		if (c->ufd < 0)
			return connect_own(c);
		start_splice(c, "tls");
	} else if (c->ufd >= 0 || proxy_pool_take(c, true))
		start_flow(c, true);
	else
		return c->closed ? -EIO : connect_own(c);
	return 0;
}

/* ---- splice ---- */

int proxy_start_splice(struct conn *c, const char *mode)
{
	start_splice(c, mode);
	return c->closed ? -EIO : 0;
}

static void start_splice(struct conn *c, const char *mode)
{
	c->mode = mode;
	proxy_audit(c, "allow", c->verdict.reason ? c->verdict.reason : "allowed");
	c->phase = PHASE_SPLICE;
	/* Whatever the events said before, each side is read until it is read out. */
	c->cev.readable = c->uev.readable = true;
	/* What is relayed unread (SSH, a database's protocol) may be idle as long as it likes. */
	c->idle_deadline = 0;
}

/* One direction of a relayed connection: src's bytes to dst. What comes in small reads (a
 * request, an answer) is copied through the proxy's buffer: one recv and one send, and a recv
 * shorter than asked says src is read out (a TCP read stops only at the end of what is queued),
 * so no read ends in EAGAIN. Once a read fills the buffer the direction carries bulk, and is
 * spliced through a pipe (no copy) until a round moves less than a buffer's worth. */
struct relay {
	struct conn *c;
	bool to_sandbox; /* dst is the sandbox's side */
	int src, dst;
	struct relay_dir *dir;
	struct netns_buf *held; /* copied, not yet sent */
	struct conn_events *ev; /* src's */
	bool *eof;		/* src's */
	uint64_t limit;		/* bytes src may still be read for (UINT64_MAX: no limit) */
	uint64_t moved;		/* ... and those read */
};

/* Sends what r holds (copied, then in the pipe): 1 when all is out, 0 when dst is full, or
 * -errno. */
static int relay_flush(struct relay *r)
{
	struct proxy_pipe *pp = &r->dir->pipe;
	ssize_t n;

	if (netns_buf_len(r->held) > 0 && proxy_send_later(r->c, r->to_sandbox))
		return 0; /* then the pipe, in a later pump */
	while (netns_buf_len(r->held) > 0) {
		n = send(r->dst, netns_buf_head(r->held), netns_buf_len(r->held),
			 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? 0 : -errno;
		}
		netns_buf_consume(r->held, (size_t)n);
	}
	while (pp->fill > 0) {
		n = splice(pp->fd[0], NULL, r->dst, NULL, pp->fill,
			   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? 0 : -errno;
		}
		pp->fill -= (size_t)n;
	}
	return 1;
}

/* Copies one read of src to dst (the part dst does not take is held). */
static int relay_copy(struct netns_proxy *p, struct relay *r)
{
	size_t want = (size_t)MIN((uint64_t)sizeof(p->copy), r->limit);
	ssize_t n, sent;
	bool later;

	n = recv(r->src, p->copy, want, MSG_DONTWAIT);
	if (n <= 0) {
		if (n == 0)
			*r->eof = true;
		else if (errno == EAGAIN)
			r->ev->readable = false;
		else if (errno != EINTR)
			return -errno;
		return 0;
	}
	r->limit -= (size_t)n;
	r->moved += (size_t)n;
	/* Batched, all of it is held, and sent with the turn's other sends. */
	later = proxy_send_batches(r->c, r->to_sandbox);
	sent = later ? 0 : send(r->dst, p->copy, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (sent < 0) {
		if (errno != EAGAIN && errno != EINTR)
			return -errno;
		sent = 0;
	}
	if (sent < n &&
	    netns_buf_append(r->held, p->copy + sent, (size_t)(n - sent), PROXY_COPY_BYTES) < 0)
		return -ENOMEM;
	if (later)
		proxy_send_queue(r->c, r->to_sandbox);
	if ((size_t)n == sizeof(p->copy))
		/* Bulk, if a pipe can be had; else it goes on being copied. */
		r->dir->bulk = r->dir->pipe.size > 0 || proxy_pipe_get(p, &r->dir->pipe) >= 0;
	else if ((size_t)n < want && !r->ev->read_on)
		r->ev->readable = false;
	return 0;
}

/* Splices src into the pipe until it is read out or the pipe is full. */
static int relay_splice_in(struct relay *r)
{
	struct proxy_pipe *pp = &r->dir->pipe;
	size_t moved = 0;
	ssize_t n;

	while (pp->fill < pp->size && r->limit > 0) {
		n = splice(r->src, NULL, pp->fd[1], NULL,
			   (size_t)MIN((uint64_t)(pp->size - pp->fill), r->limit),
			   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n == 0) {
			*r->eof = true;
			break;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				return -errno;
			/* A pipe holding bytes may be out of slots (each segment takes one, however
			 * small): only an empty one's EAGAIN says src is read out. What follows
			 * is then copied again, unless this round was bulk too. */
			if (pp->fill == 0) {
				/* A splice also stops at an urgent mark, for good (it never takes
				 * the urgent byte): with an end or urgent data announced, a copy's
				 * recv() reads on past it, or says EAGAIN. */
				r->ev->readable = r->ev->read_on;
				r->dir->bulk = moved >= PROXY_COPY_BYTES && !r->ev->read_on;
			}
			break;
		}
		pp->fill += (size_t)n;
		moved += (size_t)n;
		r->limit -= (size_t)n;
		r->moved += (size_t)n;
	}
	return 0;
}

static int relay_pump(struct netns_proxy *p, struct relay *r)
{
	for (;;) {
		int k = relay_flush(r);

		if (k <= 0)
			return k;
		if (!r->ev->readable || *r->eof || r->limit == 0)
			return 0;
		k = r->dir->bulk ? relay_splice_in(r) : relay_copy(p, r);
		if (k < 0)
			return k;
	}
}

/* The relay of c's sandbox's bytes to the upstream (sandbox), or of the upstream's to the
 * sandbox, reading at most limit bytes. */
static struct relay relay_of(struct conn *c, bool sandbox, uint64_t limit)
{
	return sandbox ? (struct relay){c,	  false,   c->cfd,    c->ufd, &c->cu,
					&c->to_u, &c->cev, &c->c_eof, limit,  0}
		       : (struct relay){c,	  true,	   c->ufd,    c->cfd, &c->uc,
					&c->to_c, &c->uev, &c->u_eof, limit,  0};
}

/* Whether all that src sent, its end included, is through. */
static bool relay_done(const struct relay *r)
{
	return *r->eof && r->dir->pipe.fill == 0 && netns_buf_len(r->held) == 0;
}

int proxy_splice(struct conn *c)
{
	struct relay cu = relay_of(c, true, UINT64_MAX), uc = relay_of(c, false, UINT64_MAX);
	int r;

	r = relay_pump(c->proxy, &cu);
	if (r >= 0)
		r = relay_pump(c->proxy, &uc);
	if (r < 0) {
		proxy_close(c, true);
		return r;
	}
	/* A side's end is passed on once all it sent is through; when both have ended, closing
	 * passes on what is left to pass. */
	if (relay_done(&cu) && relay_done(&uc)) {
		proxy_close(c, false);
		return 0;
	}
	if (relay_done(&cu) && !c->u_shut) {
		(void)shutdown(c->ufd, SHUT_WR);
		c->u_shut = true;
	}
	if (relay_done(&uc) && !c->c_shut) {
		(void)shutdown(c->cfd, SHUT_WR);
		c->c_shut = true;
	}
	return 0;
}

/* ---- the inspected flow ---- */

static const char *credential_of(const struct netns_proxy *p, const char *surrogate)
{
	for (size_t i = 0; p->surrogates[i]; i++)
		if (streq(p->surrogates[i], surrogate))
			return p->surrogate_names[i];
	return "?";
}

/* A real value leaves only inside TLS that airlock verified: never in clear text, where anything
 * on the way (or whatever the name resolved to) would read it. */
static int flow_resolve(void *userdata, const char *surrogate, struct broker_secret **ret,
			struct al_error *err)
{
	struct conn *c = userdata;

	if (!c->utls)
		return al_error_set(err, -EPERM,
				    "A credential is sent only over TLS, not in plain HTTP to %s",
				    c->flow_opts.host);
	return broker_client_resolve(c->proxy->o->broker, surrogate, c->flow_opts.host, ret, err);
}

/* Plain HTTP gets no sidecar headers (see flow_resolve()): the request goes without them. */
static int flow_sidecar(void *userdata, struct broker_secret **ret, struct al_error *err)
{
	struct conn *c = userdata;

	*ret = NULL;
	if (!c->utls)
		return 0;
	return broker_client_headers(c->proxy->o->broker, c->flow_opts.host, ret, err);
}

static void flow_swapped(void *userdata, const char *surrogate, const char *where, uint32_t stream)
{
	struct conn *c = userdata;
	const struct al_audit_field fields[] = {
	    AL_AUDIT_S("action", "swap"),
	    AL_AUDIT_S("credential", credential_of(c->proxy, surrogate)),
	    AL_AUDIT_S("host", c->flow_opts.host),
	    AL_AUDIT_I("port", c->port),
	    AL_AUDIT_S("where", where),
	    AL_AUDIT_I("stream", stream), /* HTTP/2 only */
	};

	if (proxy_audit_admit(c->proxy))
		(void)al_audit_event(c->proxy->o->audit, "credential", fields,
				     stream ? ELEMENTSOF(fields) : ELEMENTSOF(fields) - 1);
}

/* Whether the credential of surrogate is bound to host: the broker's own test (session.c), on
 * the policy the broker was opened with. */
static bool surrogate_is_bound(const struct netns_proxy *p, const char *surrogate, const char *host)
{
	const struct policy *pol = p->o->policy;
	const char *name = credential_of(p, surrogate);
	size_t hl = strlen(host);

	for (size_t i = 0; i < pol->n_credentials; i++) {
		const struct policy_strv *hosts = &pol->credentials[i].hosts;

		if (!streq(pol->credentials[i].name, name))
			continue;
		for (size_t j = 0; j < hosts->n; j++) {
			const char *pat = hosts->items[j];
			size_t sl = strlen(pat) - 1; /* "*.suffix": ".suffix" */

			if (strncmp(pat, "*.", 2) != 0
				? strcasecmp(pat, host) == 0
				: hl > sl && strcasecmp(host + hl - sl, pat + 1) == 0)
				return true;
		}
	}
	return false;
}

/* The values bound to the host, only to be turned back in responses: asked for on plain
 * connections too, since nothing of them is sent. */
static int flow_bound_value(void *userdata, const char *surrogate, struct broker_secret **ret,
			    struct al_error *err)
{
	struct conn *c = userdata;

	*ret = NULL;
	if (!surrogate_is_bound(c->proxy, surrogate, c->flow_opts.host))
		return 0;
	return broker_client_resolve(c->proxy->o->broker, surrogate, c->flow_opts.host, ret, err);
}

/* An HTTP/2 stream was refused: audited and reported as flow_fail() does a connection. */
static void flow_refused(void *userdata, int error, const char *message, uint32_t stream)
{
	struct conn *c = userdata;
	char reason[AL_ERROR_MSG_MAX + 32];
	bool deny = error == -EPERM || error == -EPROTO || error == -EBADMSG ||
		    error == -EMSGSIZE || error == -EIO;

	(void)snprintf(reason, sizeof(reason), "stream %u: %s", stream, message);
	c->audited = false; /* a verdict of its own */
	proxy_audit(c, deny ? "deny" : "error", reason);
	if (deny)
		proxy_violation(c->proxy, error == -EPERM || error == -EIO ? "credential" : "net",
				"%s:%u %s", c->flow_opts.host, c->port, reason);
}

static const struct netns_http_flow_ops flow_ops = {
    .resolve = flow_resolve,
    .sidecar = flow_sidecar,
    .swapped = flow_swapped,
    .bound_value = flow_bound_value,
    .refused = flow_refused,
};

static const struct netns_http_flow_ops flow_ops_no_sidecar = {
    .resolve = flow_resolve,
    .swapped = flow_swapped,
    .bound_value = flow_bound_value,
    .refused = flow_refused,
};

static void start_flow(struct conn *c, bool tls)
{
	struct netns_proxy *p = c->proxy;
	static const char *const none[] = {NULL};
	struct al_error err = {0};
	bool kept = c->u_kept; /* a kept upstream (proxy-pool.c), its TLS under way */
	int r;

	c->mode = tls ? "tls-intercept" : "http";
	c->flow_opts = (struct netns_http_flow_options){
	    .host = c->name[0] ? c->name : c->target,
	    .port = c->port,
	    .surrogates = p->surrogates ? (const char *const *)p->surrogates : none,
	    .surrogate_names = p->surrogates ? (const char *const *)p->surrogate_names : none,
	    .policy = p->o->policy,
	    .ops = p->has_sidecar ? &flow_ops : &flow_ops_no_sidecar,
	    .userdata = c,
	    .keep_upstream = c->name[0] != '\0',
	    .origin_switch = c->absolute_form,
	};
	r = netns_http_flow_new(&c->flow_opts, &c->flow);
	if (r >= 0 && tls)
		r = netns_tls_accept(p->tls, c->cfd, c->name, &c->ctls, &err);
	if (r >= 0 && tls && !kept) {
		r = netns_tls_connect(p->tls, c->ufd, c->name, c->hello_h2, &c->utls, &err);
		c->u_offered_h2 = c->hello_h2;
	}
	if (r < 0) {
		log_debug_errno(r, "Cannot inspect a connection to %s: %s", c->flow_opts.host,
				err.msg);
		proxy_audit(c, "error", "cannot set up the inspection");
		proxy_close(c, true);
		return;
	}
	c->c_ready = !tls;
	c->u_ready = !tls || kept;
	c->cev.readable = c->uev.readable = true; /* whatever the events said before */
	proxy_audit(c, "allow", c->verdict.reason ? c->verdict.reason : "allowed");
	c->phase = PHASE_FLOW;
}

void proxy_start_plain_flow(struct conn *c)
{
	start_flow(c, false);
}

ssize_t proxy_end_read(int fd, struct netns_tls_conn *tls, void *buf, size_t n)
{
	ssize_t k;

	if (tls)
		return netns_tls_read(tls, buf, n);
	k = read(fd, buf, n);
	return k < 0 ? (errno == EINTR ? -EAGAIN : -errno) : k;
}

ssize_t proxy_end_write(int fd, struct netns_tls_conn *tls, const void *buf, size_t n)
{
	ssize_t k;

	if (tls)
		return netns_tls_write(tls, buf, n);
	k = send(fd, buf, n, MSG_DONTWAIT | MSG_NOSIGNAL);
	return k < 0 ? (errno == EINTR ? -EAGAIN : -errno) : k;
}

/* Closes c's upstream side, TLS and all, without a close_notify. */
static void upstream_drop(struct conn *c)
{
	c->utls = netns_tls_conn_free(c->utls);
	c->ufd = al_close(c->ufd);
	c->uw.fd = -EBADF;
}

/* Ends c's upstream side (closed, or kept by the pool already): what is known of it is a new
 * connection's. */
static void upstream_forget(struct conn *c)
{
	upstream_drop(c);
	c->proxy->n_big_rcvbufs -= c->big_rcvbuf;
	c->big_rcvbuf = false;
	c->u_ready = c->u_eof = c->u_shut = c->u_writable = false;
	c->uev = (struct conn_events){0};
}

/* The flow refused (or the upstream failed): the upstream gets nothing more and is reset; the
 * sandbox gets an error response when one can be given, then the end. */
static void flow_fail(struct conn *c, int error, const char *message)
{
	int status = error == -EPERM || error == -EPROTO ? 403
		     : error == -EBADMSG		 ? 400
		     : error == -EMSGSIZE		 ? 431
							 : 502;
	const struct linger lg = {.l_onoff = 1, .l_linger = 0};

	c->audited = false; /* this is a verdict of its own */
	proxy_audit(c, status == 502 ? "error" : "deny", message);
	if (status != 502)
		proxy_violation(c->proxy, error == -EPERM ? "credential" : "net", "%s:%u %s",
				c->flow_opts.host, c->port, message);
	netns_buf_done(&c->to_u);
	netns_buf_done(&c->cin);
	if (c->ufd >= 0) {
		(void)setsockopt(c->ufd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		upstream_drop(c);
	}
	c->u_eof = c->u_shut = true;
	c->fail_reset =
	    !c->c_ready || !netns_http_flow_error_response(c->flow, status, message, &c->to_c);
	c->failed = true;
}

/* Both sides become HTTP/2 when both chose it (the upstream first, then the sandbox, which
 * was offered h2 only then: tls.c), HTTP/1.1 otherwise. */
static int choose_protocol(struct conn *c)
{
	struct al_error err = {0};
	int r;

	if (!netns_tls_is_h2(c->ctls) && !netns_tls_is_h2(c->utls))
		return 0;
	if (!netns_tls_is_h2(c->ctls) || !netns_tls_is_h2(c->utls)) {
		proxy_audit(c, "error", "the two sides chose different HTTP versions");
		proxy_close(c, true);
		return -EPROTO;
	}
	c->flow = netns_http_flow_free(c->flow);
	r = netns_h2_new(&c->flow_opts, &c->h2);
	if (r < 0) {
		log_debug_errno(r, "Cannot speak HTTP/2 for %s: %s", c->flow_opts.host, err.msg);
		proxy_audit(c, "error", "cannot set up HTTP/2");
		proxy_close(c, true);
		return r;
	}
	c->mode = "tls-intercept-h2";
	return 0;
}

static int handshakes(struct conn *c)
{
	struct al_error err = {0};
	int r;

	if (!c->u_ready && !c->failed) {
		r = netns_tls_handshake(c->utls, &err);
		if (r >= 0)
			c->u_ready = true;
		else if (r != -EAGAIN)
			flow_fail(c, -EHOSTUNREACH, err.msg[0] ? err.msg : "upstream TLS failed");
	}
	/* A sandbox offering h2 waits for the upstream's choice before it gets its own. */
	if (!c->c_ready && c->hello_h2 && !c->u_ready && !c->failed)
		return 0;
	if (!c->c_ready) {
		netns_tls_allow_h2(c->ctls, c->u_ready && netns_tls_is_h2(c->utls));
		err = (struct al_error){0};
		r = netns_tls_handshake(c->ctls, &err);
		if (r >= 0) {
			c->c_ready = true;
			if (c->u_ready && !c->failed)
				return choose_protocol(c);
		} else if (r != -EAGAIN) {
			log_debug_errno(r, "TLS with the sandbox for %s failed: %s", c->name,
					err.msg);
			c->audited = false;
			proxy_audit(c, "error", "TLS handshake with the sandbox failed");
			proxy_close(c, true);
			return r;
		}
	}
	return 0;
}

static void buf_consume_all(struct netns_buf *b)
{
	if (netns_buf_len(b) > 0)
		netns_buf_consume(b, netns_buf_len(b));
}

/* Reads what one side sent (end: its fd and TLS) into in, up to PROXY_CHUNK held; *eof at its
 * end (a reset upstream ends like a close).
 *
 * With TLS, OpenSSL reads ahead (tls.c): whole records may wait in its buffers while the fd is
 * idle and epoll, edge-triggered, reports nothing more. So a side is read in every round until
 * -EAGAIN (socket drained, no whole record held), never on its fd's readiness, and the rounds go
 * on while any byte moves. A side is left unread only while in is full (the flow or the HTTP/2
 * queue takes no more, the output toward the other side being full: WebSocket relays and
 * backpressure alike), after its end, while a refusal is flushed, or during the handshakes (the
 * sandbox's waiting for the upstream's ALPN); each ends with an event on one of the
 * connection's two fds (the other side's output drained, a handshake's next flight), and every
 * such event runs all of proxy_flow() again (conn_pump()), which reads both sides. The idle
 * deadline is set only when the flow itself is idle, after such a round.
 * (test-egress-tls-pipelining-under-backpressure fails if a TLS side is read on its fd's
 * readiness alone.) A plain side is read as the unread relay reads one: only when an event (ev,
 * its events) said it may have bytes, and a read shorter than asked says it is read out. */
static int read_side(int fd, struct netns_tls_conn *tls, struct conn_events *ev,
		     struct netns_buf *in, bool *eof, bool *progress)
{
	uint8_t buf[PROXY_CHUNK];
	size_t got = 0;
	ssize_t n;
	int r;

	if (*eof || netns_buf_len(in) >= PROXY_CHUNK || (!tls && !ev->readable))
		return 0;
	/* A TLS read gives one record: the records OpenSSL read ahead are taken too, up to a
	 * buffer's worth, so that a round handles what came together (an HTTP/2 server's
	 * answers, a record each, then go out in a few records, not one each). */
	do {
		n = proxy_end_read(fd, tls, buf + got, sizeof(buf) - got);
		if (n > 0)
			got += (size_t)n;
	} while (n > 0 && tls && got < sizeof(buf) && netns_tls_pending(tls));
	if (!tls && (n == -EAGAIN || (n > 0 && got < sizeof(buf))) && !ev->read_on)
		ev->readable = false;
	r = netns_buf_append(in, buf, got, 2 * PROXY_CHUNK);
	explicit_bzero(buf, got); /* it may hold a real value */
	if (r < 0)
		return -ENOMEM;
	if (n == 0)
		*eof = true;
	else if (n < 0 && n != -EAGAIN && got == 0)
		return (int)n;
	*progress |= got > 0 || n == 0;
	return 0;
}

/* Writes what out holds to one side: with TLS, record after record (a write gives one) until
 * out is empty or the socket is full. What is written is appended to held too, when not NULL. */
static int write_side(int fd, struct netns_tls_conn *tls, struct netns_buf *out,
		      struct netns_buf *held, bool *progress)
{
	ssize_t n;

	while (netns_buf_len(out) > 0) {
		n = proxy_end_write(fd, tls, netns_buf_head(out), netns_buf_len(out));
		if (n == -EAGAIN)
			return 0;
		if (n <= 0)
			return n < 0 ? (int)n : -EIO;
		if (held && netns_buf_append(held, netns_buf_head(out), (size_t)n, SIZE_MAX) < 0)
			return -ENOMEM;
		netns_buf_consume(out, (size_t)n);
		*progress = true;
		if (!tls)
			return 0; /* a short send: the socket is full */
	}
	return 0;
}

/* ---- a kept upstream's end that crossed a request ----
 *
 * A kept upstream (proxy-pool.c) was quiet when it was taken, but its server may close it at any
 * moment (its idle timeout, a restart) and the close can cross the first request sent on it.
 * Until its first byte of answer, what is sent to it is also held in sent_u; if it ends before
 * that byte, the requests go again on a connection of the proxy's own when they may be sent
 * twice (netns_http_flow_replayable(): idempotent, RFC 9112 9.3.1, as a client does after its
 * own kept connection failed so), once. Otherwise the sandbox gets the end, as from that
 * server. */

/* The kept upstream answered (or what was sent to it is more than PROXY_RESEND_MAX): nothing
 * will be sent again. */
static void kept_answered(struct conn *c)
{
	c->u_kept = false;
	netns_buf_done(&c->sent_u);
}

/* Sends what waits for one side of a flow (appended to held too, when not NULL): left for the
 * turn's sends when that side is batched (proxy-send.c), with TLS as the records OpenSSL makes
 * of it, else at once, after what was queued before. */
static int send_side(struct conn *c, bool to_sandbox, struct netns_buf *held, bool *progress)
{
	struct netns_tls_conn *tls = proxy_side_tls(c, to_sandbox);
	bool later = proxy_send_batches(c, to_sandbox);
	int r = 0;

	if (tls && !later) {
		r = netns_tls_flush(tls);
		if (r < 0)
			return r == -EAGAIN ? 0 : r;
	}
	if (tls || !later) {
		if (tls)
			netns_tls_queue(tls, later);
		r = write_side(to_sandbox ? c->cfd : c->ufd, tls, to_sandbox ? &c->to_c : &c->to_u,
			       held, progress);
		if (tls)
			netns_tls_queue(tls, false);
	}
	if (later)
		proxy_send_queue(c, to_sandbox);
	return r;
}

/* Writes to the upstream; while u_kept, what is written is held too (up to PROXY_RESEND_MAX),
 * and a write that finds it ended is its end (kept_ended()). */
static int write_upstream(struct conn *c, bool *progress)
{
	int r;

	r = send_side(c, false, c->u_kept ? &c->sent_u : NULL, progress);
	if (!c->u_kept)
		return r;
	if (r == -EPIPE || r == -ECONNRESET) {
		c->u_eof = true;
		return 0;
	}
	if (netns_buf_len(&c->sent_u) > PROXY_RESEND_MAX)
		kept_answered(c);
	return r;
}

/* The kept upstream ended before a byte of answer: 1 when its requests go again on a new
 * connection (the phase is CONNECTING), 0 when its end is the sandbox's, -errno. */
static int kept_ended(struct conn *c)
{
	bool more = netns_buf_len(&c->sent_u) > 0 || netns_buf_len(&c->to_u) > 0 ||
		    netns_buf_len(&c->cin) > 0 || !c->c_eof;

	if (!more || !netns_http_flow_replayable(c->flow)) {
		kept_answered(c);
		return 0;
	}
	if (netns_buf_append(&c->sent_u, netns_buf_head(&c->to_u), netns_buf_len(&c->to_u),
			     SIZE_MAX) < 0)
		return -ENOMEM;
	netns_buf_done(&c->to_u);
	c->to_u = c->sent_u;
	c->sent_u = (struct netns_buf){0};
	c->u_kept = false;
	log_debug("A kept connection to %s:%u ended before answering: its requests go again on "
		  "a new one",
		  c->name, c->port);
	upstream_forget(c); /* its peer is gone: no close_notify */
	c->u_again = true;
	return proxy_connect_again(c) < 0 ? -EIO : 1;
}

/* The new connection is up: its TLS (offered HTTP/1.1 alone, as the sandbox's side already
 * speaks it), then the flow goes on where it was. */
static int connected_again(struct conn *c)
{
	struct al_error err = {0};
	int r;

	c->u_again = false;
	c->u_offered_h2 = false;
	c->phase = PHASE_FLOW;
	if (!c->ctls) {
		c->u_ready = true; /* plain HTTP */
		return 0;
	}
	r = netns_tls_connect(c->proxy->tls, c->ufd, c->name, false, &c->utls, &err);
	if (r < 0) {
		log_debug_errno(r, "Cannot connect to %s again: %s", c->name, err.msg);
		proxy_close(c, true);
		return r;
	}
	return 0;
}

/* ---- the explicit proxy's next origin ----
 *
 * A client of HTTP_PROXY sends its requests for several origins on one connection (curl given
 * two URLs, a Python requests session, whose pool is by proxy). The flow holds the first request
 * for another origin (netns_http_flow_other_origin()); once every answer before it is out, the
 * upstream is kept for a later connection (or closed), and that request, with all that came
 * after it, is taken as a new connection's first: decided, audited and connected on its own
 * (the phase HEAD again). The sandbox's side of the connection stays as it is. */

/* 1 when c goes on to the other origin (the phase HEAD), 0 when it does not (yet), -ENOMEM
 * after closing c. */
static int next_origin(struct conn *c)
{
	struct netns_proxy *p = c->proxy;
	struct netns_buf in = {0};
	const uint8_t *head;
	size_t len;

	if (!c->flow || !netns_http_flow_other_origin(c->flow, &head, &len) ||
	    proxy_send_waiting(c, true) > 0 || c->uc.pipe.fill > 0 || netns_buf_len(&c->uin) > 0)
		return 0;
	if (netns_buf_append(&in, head, len, SIZE_MAX) < 0 ||
	    netns_buf_append(&in, netns_buf_head(&c->cin), netns_buf_len(&c->cin), SIZE_MAX) < 0) {
		netns_buf_done(&in);
		proxy_close(c, true);
		return -ENOMEM;
	}
	netns_buf_done(&c->cin);
	c->cin = in;
	/* Every answer is out: the upstream is kept when it may carry another request, else
	 * closed (dropping what was left to send of a body it answered before reading it). */
	(void)proxy_pool_put(c);
	upstream_forget(c);
	c->flow = netns_http_flow_free(c->flow);
	netns_buf_done(&c->uin);
	netns_buf_done(&c->to_u);
	kept_answered(c);
	c->eof_flushed = c->eof_error = false;
	proxy_pipe_put(p, &c->cu.pipe);
	proxy_pipe_put(p, &c->uc.pipe);
	c->cu = c->uc = (struct relay_dir){.pipe.fd = {-EBADF, -EBADF}};
	/* Its destination is the request's. */
	c->name[0] = c->target[0] = '\0';
	c->port = 0;
	c->upstream = (struct netns_addr){0};
	c->name_verdict = c->verdict = (struct netns_verdict){0};
	c->mode = NULL;
	c->audited = c->pool_tried = c->absolute_form = false;
	c->head_scanned = 0;
	c->idle_deadline = 0;
	c->phase = PHASE_HEAD;
	return 1;
}

/* ---- bodies the flow leaves unread ----
 *
 * On a plain connection, the part of a body that the flow would pass on as it is
 * (netns_http_flow_request_raw(), _response_raw(): nothing searched in it, its framing kept) goes
 * from one side to the other as the unread relay moves bytes (copied, or spliced when it comes in
 * bulk), never more than the flow said, and the flow is told after. What the flow gave for that
 * side before (the head) is sent first, being held where the relay holds what it copied (to_u,
 * to_c); while the relay's pipe still holds bytes, that side is not read for the flow, so that
 * nothing the flow gives next can pass them. Not while a kept upstream's requests are held for a
 * resend (u_kept), which the relay would not hold. */

/* The bytes of a body that may move unread now toward the upstream (sandbox) or the sandbox. */
static uint64_t raw_ahead(const struct conn *c, bool sandbox)
{
	if (c->ctls || c->utls || c->failed || !c->u_ready)
		return 0;
	if (sandbox)
		return c->u_kept || netns_buf_len(&c->cin) > 0
			   ? 0
			   : netns_http_flow_request_raw(c->flow);
	return netns_buf_len(&c->uin) > 0 ? 0 : netns_http_flow_response_raw(c->flow);
}

/* Moves up to raw unread bytes of one side (sandbox: the sandbox's) to the other, after what is
 * held for it; with raw 0, only sends what is held. Reads that side for the flow after, when
 * nothing is left in the pipe and the flow wants to read. A failure of the move (either side) is
 * returned; the upstream's read failing ends its responses like a close (a reset upstream). */
static int flow_raw_then_read(struct conn *c, bool sandbox, bool *progress)
{
	uint64_t raw = raw_ahead(c, sandbox);
	struct relay r = relay_of(c, sandbox, raw);
	bool eof = *r.eof;
	int k = 0;

	if (raw > 0 || r.dir->pipe.fill > 0) {
		k = relay_pump(c->proxy, &r);
		if (sandbox)
			netns_http_flow_request_skip(c->flow, r.moved);
		else
			netns_http_flow_response_skip(c->flow, r.moved);
		*progress |= r.moved > 0 || *r.eof != eof;
		if (k < 0 || r.dir->pipe.fill > 0 || raw_ahead(c, sandbox) > 0)
			return k;
	}
	if (sandbox)
		return read_side(c->cfd, c->ctls, &c->cev, &c->cin, &c->c_eof, progress);
	k = read_side(c->ufd, c->utls, &c->uev, &c->uin, &c->u_eof, progress);
	if (k < 0 && k != -ENOMEM) {
		c->u_eof = true;
		k = 0;
	}
	return k;
}

/* One round of both directions; *progress when any byte moved. */
static int flow_round(struct conn *c, bool *progress)
{
	struct al_error err = {0};
	ssize_t n;
	int r;

	/* The sandbox's requests, through the flow, to the upstream. */
	if (!c->failed) {
		r = flow_raw_then_read(c, true, progress);
		if (r < 0)
			return r;
	}
	/* Not while a response's unread bytes wait in the pipe: a refusal's answer would pass
	 * them. */
	if (!c->failed && netns_buf_len(&c->cin) > 0 && c->uc.pipe.fill == 0) {
		n = netns_http_flow_request(c->flow, netns_buf_head(&c->cin),
					    netns_buf_len(&c->cin), &c->to_u, &err);
		if (n < 0) {
			flow_fail(c, (int)n, err.msg);
			*progress = true;
		} else {
			netns_buf_consume(&c->cin, (size_t)n);
			*progress |= n > 0;
		}
	}
	if (c->u_ready && !c->failed) {
		r = write_upstream(c, progress);
		if (r < 0)
			return r;
	}

	/* The upstream's responses, through the flow, to the sandbox. */
	if (c->u_ready) {
		r = flow_raw_then_read(c, false, progress);
		if (r < 0)
			return r;
	}
	if (c->u_kept && netns_buf_len(&c->uin) > 0)
		kept_answered(c);
	else if (c->u_kept && c->u_eof && !c->failed) {
		r = kept_ended(c);
		if (r != 0)
			return MIN(r, 0); /* connecting again: the phase is CONNECTING */
	}
	if (!c->failed && netns_buf_len(&c->uin) > 0) {
		n = netns_http_flow_response(c->flow, netns_buf_head(&c->uin),
					     netns_buf_len(&c->uin), &c->to_c, &err);
		if (n == -EIO) {
			/* A compressed body after a value was sent could hide it: a violation. */
			c->audited = false;
			proxy_audit(c, "deny", err.msg);
			proxy_violation(c->proxy, "credential", "%s:%u %s", c->flow_opts.host,
					c->port, err.msg);
		}
		if (n < 0)
			return (int)n;
		netns_buf_consume(&c->uin, (size_t)n);
		*progress |= n > 0;
	}
	if (!c->failed && c->u_eof && netns_buf_len(&c->uin) == 0 && c->uc.pipe.fill == 0 &&
	    !c->eof_flushed) {
		/* A close-delimited body ends here; a cut-short response ends the sandbox's side
		 * with a reset, so that it is not taken as complete. */
		c->eof_error = netns_http_flow_response_eof(c->flow, &c->to_c, &err) < 0;
		c->eof_flushed = true;
		*progress = true;
	}
	return send_side(c, true, NULL, progress);
}

/* Gives what in holds from one side to the HTTP/2 connection, which takes what it can: the rest
 * waits in in (which, full, stops reading that side) until what is queued for the sides is out. */
static int h2_take(struct conn *c, struct netns_buf *in, bool sandbox, bool *progress,
		   struct al_error *err)
{
	ssize_t n = sandbox
			? netns_h2_sandbox_in(c->h2, netns_buf_head(in), netns_buf_len(in), err)
			: netns_h2_upstream_in(c->h2, netns_buf_head(in), netns_buf_len(in), err);

	if (n < 0)
		return (int)n;
	if (n > 0) {
		netns_buf_consume(in, (size_t)n);
		*progress = true;
	}
	return 0;
}

/* One round of an HTTP/2 connection: each side's bytes in, then what each is to get out. A
 * connection error (the sandbox's or the upstream's) ends both sides. */
static int h2_round(struct conn *c, bool *progress)
{
	struct al_error err = {0};
	int r;

	r = read_side(c->cfd, c->ctls, &c->cev, &c->cin, &c->c_eof, progress);
	if (r >= 0 && netns_buf_len(&c->cin) > 0)
		r = h2_take(c, &c->cin, true, progress, &err);
	if (r >= 0 && !c->u_eof) {
		bool was_eof = c->u_eof;

		if (read_side(c->ufd, c->utls, &c->uev, &c->uin, &c->u_eof, progress) < 0)
			c->u_eof = true; /* as in flow_round() */
		if (c->u_eof && !was_eof)
			netns_h2_upstream_eof(c->h2);
	}
	if (r >= 0 && netns_buf_len(&c->uin) > 0)
		r = h2_take(c, &c->uin, false, progress, &err);
	if (r >= 0)
		r = netns_h2_out(c->h2, &c->to_c, &c->to_u, &err);
	if (r >= 0 && !c->u_eof)
		r = write_side(c->ufd, c->utls, &c->to_u, NULL, progress);
	if (r >= 0)
		r = write_side(c->cfd, c->ctls, &c->to_c, NULL, progress);
	if (c->u_eof)
		buf_consume_all(&c->to_u); /* what the upstream can no longer get */
	if (r < 0 && err.msg[0]) {
		c->audited = false;
		proxy_audit(c, "deny", err.msg);
		proxy_violation(c->proxy, "net", "%s:%u %s", c->flow_opts.host, c->port, err.msg);
	}
	return r;
}

static int proxy_h2(struct conn *c)
{
	bool progress;
	int r;

	do {
		progress = false;
		r = h2_round(c, &progress);
		if (r < 0) {
			proxy_close(c, true);
			return r;
		}
	} while (progress);
	if (!netns_h2_idle(c->h2))
		c->idle_deadline = 0;
	else if (!c->idle_deadline)
		c->idle_deadline = proxy_now_msec() + c->proxy->idle_msec;
	/* The sandbox went away, or its session is over and all it was told is out. */
	if (c->c_eof || (netns_h2_done(c->h2) && netns_buf_len(&c->to_c) == 0))
		proxy_close(c, false);
	return 0;
}

int proxy_flow(struct conn *c)
{
	bool progress;
	int r;

	r = handshakes(c);
	if (r < 0)
		return r;
	if (!c->c_ready)
		return 0;
	if (c->h2)
		return proxy_h2(c);
	do {
		progress = false;
		r = flow_round(c, &progress);
		if (r < 0) {
			proxy_close(c, true);
			return r;
		}
		if (c->phase != PHASE_FLOW)
			return 0; /* a kept upstream's requests go again (kept_ended()) */
	} while (progress);

	if (c->failed) {
		if (proxy_send_waiting(c, true) == 0 && c->uc.pipe.fill == 0)
			proxy_close(c, c->fail_reset);
		return 0;
	}
	/* The explicit proxy's next request is for another origin (before the ends below: it goes
	 * there even after the upstream's end, or the sandbox's). */
	r = next_origin(c);
	if (r != 0)
		return MIN(r, 0);
	/* Idle from here on (or still, within a head that comes slowly): the next head has until
	 * the deadline; a request or a response under way has none. */
	if (!netns_http_flow_idle(c->flow))
		c->idle_deadline = 0;
	else if (!c->idle_deadline)
		c->idle_deadline = proxy_now_msec() + c->proxy->idle_msec;
	/* The sandbox's side is over at a message boundary: its last request (Connection: close)
	 * answered, or its end after whole answers. It ends, and the upstream's connection is kept
	 * for the next connection when it can carry one (proxy-pool.c). */
	if (proxy_send_waiting(c, true) == 0 && c->uc.pipe.fill == 0 && !c->eof_flushed) {
		bool done = netns_http_flow_done(c->flow);

		/* After its end alone the sandbox's side waits for the upstream's when the upstream
		 * cannot be kept (below). */
		if ((done ||
		     (c->c_eof && netns_buf_len(&c->cin) == 0 && netns_http_flow_idle(c->flow))) &&
		    (proxy_pool_put(c) || done)) {
			proxy_close(c, false);
			return 0;
		}
	}
	/* The sandbox is done sending and all of it is through: the upstream is told. */
	if (c->c_eof && netns_buf_len(&c->cin) == 0 && proxy_send_waiting(c, false) == 0 &&
	    c->cu.pipe.fill == 0 && !c->u_shut && c->u_ready) {
		if (c->utls)
			netns_tls_close(c->utls);
		(void)shutdown(c->ufd, SHUT_WR);
		c->u_shut = true;
	}
	/* The upstream is done and what it sent is out: the sandbox's side ends. */
	if (c->eof_flushed && proxy_send_waiting(c, true) == 0 && c->uc.pipe.fill == 0)
		proxy_close(c, c->eof_error);
	return 0;
}
