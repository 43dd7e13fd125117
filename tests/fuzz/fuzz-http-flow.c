/* fuzz-http-flow: one inspected HTTP/1.1 connection, both ways. The input is three bytes (the
 * request feed size, the response feed size, flags), then the sandbox's bytes and, after a line
 * "=====", the upstream's. A fake broker resolves S1 to a shorter value, refuses S2, and resolves
 * S3 to a value of its length; with flag 1 it adds a sidecar header; with flag 8 S1 and S3 are
 * bound to the host (ops->bound_value), so their values are known from the first response
 * whatever the requests held; with flag 64 there are no surrogates (nothing is searched in a
 * request, no value is bound); with flag 32 the body bytes the flow leaves unread
 * (netns_http_flow_*_raw()) are moved past it as the proxy moves them, and what comes out must be
 * what a second flow fed every byte gives; with flag 128 the flow is the explicit proxy's
 * (origin_switch): a request for another origin stops the sandbox's stream, and must be given
 * back whole as the last bytes taken, once answered up to it. Checked: no surrogate ever reaches
 * the upstream whole, no real value resolved (or bound) before the responses reaches the sandbox
 * (as it is, in hex, or once JSON escapes and percent-encoding are decoded), a compressed response
 * is refused with a message that says so, what goes upstream parses again as requests without the
 * removed headers, errors are the documented ones and carry a message, and only out being full
 * stops a feed (or, with flag 128, a request for another origin). */

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "broker/client.h"
#include "netns/netns-internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HOST "api.example.com"
#define S1 "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
#define V1 "(real-value-one)"
#define S2 "airlock_sur_0123456789abcdefghijABCDEFGHIJkl"
#define S3 "airlock_sur_ZYXWVUTSRQponmlkjihgfedcba987654"
/* As long as S3, and its first and last bytes are in no surrogate, no head and no chunk line, so
 * that it cannot appear across what the flow writes around a replacement. */
#define V3 "[real-value-three-that-is-as-long-as-its-S3]"
#define SIDE_VALUE "{sidecar-value-secret}"
#define SEPARATOR "\n=====\n"

struct fake {
	bool sidecar, sidecar_asked, resolved1, resolved3;
};

static int secret(const char *value, struct broker_secret **ret)
{
	struct broker_secret *s = broker_secret_new(strlen(value));

	if (!s)
		return -ENOMEM;
	memcpy(s->data, value, s->len);
	*ret = s;
	return 0;
}

static int fake_resolve(void *userdata, const char *surrogate, struct broker_secret **ret,
			struct al_error *err)
{
	struct fake *fk = userdata;

	if (strcmp(surrogate, S1) == 0) {
		fk->resolved1 = true;
		return secret(V1, ret);
	}
	if (strcmp(surrogate, S3) == 0) {
		fk->resolved3 = true;
		return secret(V3, ret);
	}
	return al_error_set(err, -EPERM, "credential \"other\" is not bound to " HOST);
}

static int fake_bound_value(void *userdata, const char *surrogate, struct broker_secret **ret,
			    struct al_error *err)
{
	*ret = NULL;
	if (strcmp(surrogate, S1) == 0)
		return secret(V1, ret);
	if (strcmp(surrogate, S3) == 0)
		return secret(V3, ret);
	return 0;
}

static int fake_sidecar(void *userdata, struct broker_secret **ret, struct al_error *err)
{
	struct fake *fk = userdata;

	fk->sidecar_asked = true;
	*ret = NULL;
	return fk->sidecar ? secret("X-Side: " SIDE_VALUE "\r\n", ret) : 0;
}

/* netns_buf_head() of a buffer that never held anything is NULL + 0. */
static const uint8_t *head(const struct netns_buf *b)
{
	return b->data ? netns_buf_head(b) : (const uint8_t *)"";
}

static bool has(const struct netns_buf *b, const char *s)
{
	return memmem(head(b), netns_buf_len(b), s, strlen(s)) != NULL;
}

/* Whether b begins with the request line of an idempotent method (RFC 9110 9.2.2). */
static bool begins_idempotent(const struct netns_buf *b)
{
	static const char *const methods[] = {"GET ",	"HEAD ", "OPTIONS ",
					      "TRACE ", "PUT ",	 "DELETE "};

	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
		if (netns_buf_len(b) >= strlen(methods[i]) &&
		    memcmp(head(b), methods[i], strlen(methods[i])) == 0)
			return true;
	return false;
}

static bool is_removed(const struct netns_http_header *h)
{
	static const char *const names[] = {"upgrade", "http2-settings", "proxy-authorization",
					    "proxy-connection"};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (h->name_len == strlen(names[i]) &&
		    strncasecmp(h->name, names[i], h->name_len) == 0)
			return true;
	return false;
}

/* Skips a chunked body at *pos: false when the stream ends first. */
static bool skip_chunked(const char *u, size_t n, size_t *pos)
{
	for (;;) {
		uint64_t size;
		size_t line_len;
		int r = netns_http_parse_chunk_size(u + *pos, n - *pos, &size, &line_len);

		if (r == -EAGAIN)
			return false;
		/* Re-emitted chunks have no extensions: hex digits and CRLF. */
		if (r < 0 || strspn(u + *pos, "0123456789abcdef") != line_len - 2)
			__builtin_trap();
		*pos += line_len;
		if (size == 0) {
			/* No trailers go upstream. */
			if (n - *pos < 2)
				return false;
			if (memcmp(u + *pos, "\r\n", 2) != 0)
				__builtin_trap();
			*pos += 2;
			return true;
		}
		if (n - *pos < size + 2)
			return false;
		if (memcmp(u + *pos + size, "\r\n", 2) != 0)
			__builtin_trap();
		*pos += size + 2;
	}
}

/* What went upstream parses as requests, each without the removed headers; the stream may end
 * within one (cut short by the end of the input, or by an error). */
static void check_upstream(const struct netns_buf *up)
{
	const char *u = (const char *)head(up);
	size_t n = netns_buf_len(up), pos = 0;
	static struct netns_http_request req;

	while (pos < n) {
		struct al_error err = {0};
		int r = netns_http_parse_request(u + pos, n - pos, &req, &err);

		if (r == -EAGAIN)
			return;
		if (r < 0 || req.connect)
			__builtin_trap();
		for (size_t i = 0; i < req.n_headers; i++)
			if (is_removed(&req.headers[i]))
				__builtin_trap();
		pos += req.head_len;
		if (req.body == NETNS_HTTP_BODY_LENGTH) {
			if (n - pos < req.content_length)
				return;
			pos += req.content_length;
		} else if (req.body == NETNS_HTTP_BODY_CHUNKED && !skip_chunked(u, n, &pos))
			return;
	}
}

/* b with JSON's escapes (\\u00XX, \\/ and the like) and percent-encoding decoded in one pass, as
 * a client would read it, into d (room for netns_buf_len(b) bytes); returns its length. */
static size_t decode(const struct netns_buf *b, uint8_t *d)
{
	static const char letters[] = "\"\\/bfnrt", bytes[] = "\"\\/\b\f\n\r\t";
	const uint8_t *p = head(b);
	size_t n = netns_buf_len(b), o = 0;
	unsigned v;

	for (size_t i = 0; i < n; i++) {
		const char *e;

		if (p[i] == '\\' && i + 5 < n && p[i + 1] == 'u' && p[i + 2] == '0' &&
		    p[i + 3] == '0' && isxdigit(p[i + 4]) && isxdigit(p[i + 5]) &&
		    sscanf((const char *)p + i + 4, "%2x", &v) == 1) {
			d[o++] = (uint8_t)v;
			i += 5;
		} else if (p[i] == '\\' && i + 1 < n && p[i + 1] &&
			   (e = strchr(letters, p[i + 1]))) {
			d[o++] = (uint8_t)bytes[e - letters];
			i += 1;
		} else if (p[i] == '%' && i + 2 < n && isxdigit(p[i + 1]) && isxdigit(p[i + 2]) &&
			   sscanf((const char *)p + i + 1, "%2x", &v) == 1) {
			d[o++] = (uint8_t)v;
			i += 2;
		} else
			d[o++] = p[i];
	}
	return o;
}

/* Whether the sandbox's bytes hold value in any form the flow must turn back. */
static bool has_value(const struct netns_buf *down, const uint8_t *decoded, size_t decoded_len,
		      const char *value)
{
	char hex[2 * 64 + 1], upper[2 * 64 + 1];
	size_t n = strlen(value);

	for (size_t i = 0; i < n; i++) {
		(void)sprintf(hex + 2 * i, "%02x", (unsigned char)value[i]);
		(void)sprintf(upper + 2 * i, "%02X", (unsigned char)value[i]);
	}
	return has(down, value) || has(down, hex) || has(down, upper) ||
	       memmem(decoded, decoded_len, value, n) != NULL;
}

static void check_error(ssize_t r, const struct al_error *err, bool request)
{
	if (r == -EBADMSG || r == -EMSGSIZE || r == -EPROTO || r == -ENOMEM)
		;
	else if (!(request && (r == -EPERM || r == -EINVAL)) && !(!request && r == -EIO))
		__builtin_trap();
	if (r != -ENOMEM && (err->code != r || err->msg[0] == '\0'))
		__builtin_trap();
	if (r == -EIO && !strstr(err->msg, "compressed"))
		__builtin_trap();
}

/* What the feeds of the sandbox's stream did: the bytes the flow took, and whether it stopped
 * at a request for another origin (which only a flow that may hold one does). */
struct feed_state {
	bool may_hold, held;
	size_t taken;
};

/* Feeds one piece, draining out into all as a socket would; returns 0 or the error. With raw,
 * the body bytes the flow leaves unread go to all as they are, as the proxy moves them. */
static ssize_t feed(struct netns_http_flow *f, bool request, bool raw, const uint8_t *p, size_t n,
		    struct netns_buf *out, struct netns_buf *all, struct al_error *err,
		    struct feed_state *st)
{
	while (n > 0) {
		uint64_t ahead = !raw	   ? 0
				 : request ? netns_http_flow_request_raw(f)
					   : netns_http_flow_response_raw(f);
		ssize_t r;

		if (ahead > 0) {
			size_t k = (size_t)MIN((uint64_t)n, ahead);

			st->taken += request ? k : 0;
			if (netns_buf_append(all, p, k, SIZE_MAX) < 0)
				abort();
			if (request)
				netns_http_flow_request_skip(f, k);
			else
				netns_http_flow_response_skip(f, k);
			p += k;
			n -= k;
			continue;
		}
		r = request ? netns_http_flow_request(f, p, n, out, err)
			    : netns_http_flow_response(f, p, n, out, err);

		if (r < 0)
			return r;
		if (request)
			st->taken += (size_t)r;
		/* Only out being full stops a feed, or a request for another origin. */
		if ((size_t)r > n ||
		    ((size_t)r < n && netns_buf_len(out) <= NETNS_HTTP_FLOW_OUT_MAX &&
		     !(request && st->may_hold)))
			__builtin_trap();
		st->held |= (size_t)r < n && netns_buf_len(out) <= NETNS_HTTP_FLOW_OUT_MAX;
		if (netns_buf_len(out) > NETNS_HTTP_FLOW_OUT_MAX + 2 * NETNS_HTTP_HEAD_MAX)
			__builtin_trap();
		if (netns_buf_len(out) > 0) {
			if (netns_buf_append(all, netns_buf_head(out), netns_buf_len(out),
					     SIZE_MAX) < 0)
				abort();
			netns_buf_consume(out, netns_buf_len(out));
		}
		if (st->held)
			return 0;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

struct stream {
	const uint8_t *p;
	size_t n, piece;
};

static size_t next_piece(struct stream *s, const uint8_t **ret)
{
	size_t k = s->piece == 0 ? s->n : MIN(s->n, s->piece);

	*ret = s->p;
	s->p += k;
	s->n -= k;
	return k;
}

/* Feeds both streams to f (interleaved when asked), each error answered as the proxy answers
 * it; returns the last error, or 0. */
static ssize_t run(struct netns_http_flow *f, struct fake *fk,
		   const struct netns_http_flow_ops *ops, struct stream rq, struct stream rs,
		   bool interleave, bool raw, bool values_known[2], bool *answer_fed,
		   struct netns_buf *up, struct netns_buf *down, struct feed_state *st)
{
	struct netns_buf out = {0};
	struct al_error err = {0};
	bool responses_started = false;
	const uint8_t *p;
	ssize_t r = 0;
	size_t k;

	values_known[0] = values_known[1] = false;
	while (r == 0 && (rq.n > 0 || rs.n > 0)) {
		if (rq.n > 0 && (!interleave || !responses_started || rs.n == 0 || rq.n % 2)) {
			k = next_piece(&rq, &p);
			r = feed(f, true, raw, p, k, &out, up, &err, st);
			if (st->held)
				rq.n = 0; /* the rest is another flow's */
			if (r < 0) {
				check_error(r, &err, true);
				(void)netns_http_flow_error_response(f, 403, err.msg, down);
			}
			continue;
		}
		if (!responses_started) {
			responses_started = true;
			values_known[0] = fk->resolved1 || ops->bound_value;
			values_known[1] = fk->resolved3 || ops->bound_value;
		}
		k = next_piece(&rs, &p);
		*answer_fed |= k > 0;
		r = feed(f, false, raw, p, k, &out, down, &err, st);
		if (r < 0) {
			check_error(r, &err, false);
			(void)netns_http_flow_error_response(f, 502, err.msg, down);
		}
	}
	netns_buf_done(&out);
	return r;
}

static void check_held(const uint8_t *h, size_t n, const uint8_t *sent, size_t taken, uint16_t port)
{
	struct netns_http_request req;
	struct al_error err = {0};
	static const char own[] = "http://" HOST;

	if (n == 0 || n > taken || memcmp(h, sent + taken - n, n) != 0)
		__builtin_trap();
	if (netns_http_parse_request((const char *)h, n, &req, &err) < 0 || req.head_len != n ||
	    req.target[0] == '/' || !memmem(req.target, req.target_len, "://", 3))
		__builtin_trap();
	if (port == 80 && req.target_len > strlen(own) &&
	    memcmp(req.target, own, strlen(own)) == 0 && req.target[strlen(own)] == '/')
		__builtin_trap();
}

static bool same(const struct netns_buf *a, const struct netns_buf *b)
{
	return netns_buf_len(a) == netns_buf_len(b) &&
	       memcmp(head(a), head(b), netns_buf_len(a)) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const surrogates[] = {S1, S2, S3, NULL}, *const none[] = {NULL};
	struct netns_buf up = {0}, down = {0};
	struct stream rq, rs;
	struct fake fk = {0};
	struct netns_http_flow_ops ops = {.resolve = fake_resolve, .sidecar = fake_sidecar};
	struct netns_http_flow_options o = {
	    .host = HOST, .surrogates = surrogates, .ops = &ops, .userdata = &fk};
	struct netns_http_flow *f = NULL;
	struct al_error err = {0};
	struct feed_state st = {0};
	bool interleave, raw, answer_fed = false;
	bool values_known[2] = {false, false};
	const uint8_t *sep;
	uint8_t *decoded;
	ssize_t r;
	size_t decoded_len;

	if (size < 3)
		return 0;
	fk.sidecar = data[2] & 1;
	o.port = data[2] & 2 ? 80 : 443;
	interleave = data[2] & 4;
	if (data[2] & 8)
		ops.bound_value = fake_bound_value;
	o.keep_upstream = data[2] & 16;
	if (data[2] & 64) {
		/* No surrogates, so no values bound either: nothing is searched in a request, whose
		 * body may be left unread too. */
		o.surrogates = none;
		ops.bound_value = NULL;
	}
	data += 3;
	size -= 3;
	sep = memmem(data, size, SEPARATOR, strlen(SEPARATOR));
	rq = (struct stream){.p = data, .n = sep ? (size_t)(sep - data) : size, .piece = data[-3]};
	rs = (struct stream){.p = sep ? sep + strlen(SEPARATOR) : data + size,
			     .n = sep ? size - (size_t)(sep - data) - strlen(SEPARATOR) : 0,
			     .piece = data[-2]};
	raw = data[-1] & 32;
	st.may_hold = o.origin_switch = data[-1] & 128;
	if (netns_http_flow_new(&o, &f) < 0)
		abort();
	r = run(f, &fk, &ops, rq, rs, interleave, raw, values_known, &answer_fed, &up, &down, &st);
	/* Bodies left unread come out as they would have through the flow. (After an error, the
	 * proxy drops what the flow gave in the call that failed, which unread bytes moved before
	 * it are not: only the error is compared then.) */
	if (raw) {
		struct netns_buf up2 = {0}, down2 = {0};
		struct netns_http_flow *f2 = NULL;
		struct fake fk2 = {.sidecar = fk.sidecar};
		struct feed_state st2 = {.may_hold = st.may_hold};
		bool known2[2], fed2 = false;

		o.userdata = &fk2;
		if (netns_http_flow_new(&o, &f2) < 0)
			abort();
		if (run(f2, &fk2, &ops, rq, rs, interleave, false, known2, &fed2, &up2, &down2,
			&st2) != r ||
		    (r == 0 && (st2.taken != st.taken || !same(&up, &up2) || !same(&down, &down2))))
			__builtin_trap();
		netns_http_flow_free(f2);
		netns_buf_done(&up2);
		netns_buf_done(&down2);
	}

	/* A request held for another origin is given back whole, as it came: the last bytes the
	 * flow took, a request whose target is an absolute URI, not the flow's http://HOST. */
	if (r == 0 && st.held) {
		const uint8_t *h;
		size_t hn;

		if (netns_http_flow_other_origin(f, &h, &hn))
			check_held(h, hn, rq.p, st.taken, o.port);
		else if (netns_http_flow_upstream_reusable(f) && !netns_http_flow_done(f))
			__builtin_trap(); /* answered up to it, so it should be given back */
	}
	/* What may be sent again to another upstream: nothing after a byte of an answer, and
	 * only what begins with an idempotent request. */
	if (netns_http_flow_replayable(f) &&
	    (answer_fed || (netns_buf_len(&up) > 0 && !begins_idempotent(&up))))
		__builtin_trap();
	/* An upstream taken for reusable owes no answer: one more is refused as asked for by
	 * nothing. */
	if (r == 0 && netns_http_flow_upstream_reusable(f) && !netns_http_flow_done(f)) {
		static const char extra[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
		struct netns_buf sink = {0};

		if (netns_http_flow_response(f, (const uint8_t *)extra, sizeof(extra) - 1, &sink,
					     &err) != -EPROTO)
			__builtin_trap();
		netns_buf_done(&sink);
		r = -EPROTO;
	}
	if (r == 0) {
		int e = netns_http_flow_response_eof(f, &down, &err);

		if (e != 0 && e != -EPIPE)
			__builtin_trap();
	}

	/* No whole surrogate went upstream, whatever was refused (with none, they are just text).
	 */
	if (o.surrogates == surrogates && (has(&up, S1) || has(&up, S2) || has(&up, S3)))
		__builtin_trap();
	check_upstream(&up);
	/* No value resolved before the responses came back reached the sandbox, in any form. */
	decoded = malloc(netns_buf_len(&down) + 1);
	if (!decoded)
		abort();
	decoded_len = decode(&down, decoded);
	if ((values_known[0] && has_value(&down, decoded, decoded_len, V1)) ||
	    (values_known[1] && has_value(&down, decoded, decoded_len, V3)))
		__builtin_trap();
	free(decoded);
	if (fk.sidecar && fk.sidecar_asked && has(&down, SIDE_VALUE))
		__builtin_trap();

	netns_http_flow_free(f);
	netns_buf_done(&up);
	netns_buf_done(&down);
	return 0;
}
