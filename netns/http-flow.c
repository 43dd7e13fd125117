/* One inspected HTTP/1.1 connection of the egress proxy, both directions (netns-internal.h has
 * the contract).
 *
 * Each direction is a byte-in, byte-out state machine. A head (request, response, trailers) is
 * taken whole: gathered until its empty line, parsed strictly, and written out again from the
 * parsed fields, so that nothing a parser did not understand reaches the other side. A body
 * streams through: scanned for surrogates (requests, where one is refused) or for the real values
 * resolved on this flow or bound to its host (responses, where each is turned back into its
 * surrogate), holding back only a tail that could begin one (and a base64 run, whose whole is
 * encoded again around a value), and framed anew where its length may change.
 *
 * Decisions the contract leaves open:
 * - Request trailers are refused (no client in use sends any, and servers merge them into the
 *   headers in different ways); response trailers pass, with real values replaced.
 * - Chunk extensions are dropped (a request's are checked for surrogates first), and a chunked
 *   body is re-emitted in the pieces in which it is released, not in the ones it came in.
 * - A request that ends the connection (Connection: close, or any HTTP/1.0 request, whose
 *   keep-alive is not forwarded) is the last one: bytes after it are dropped, as a server drops
 *   them (RFC 9112 9.6).
 * - Responses go out as HTTP/1.1 (an intermediary sends its own version), with
 *   "Connection: close" when the connection ends after them. Whether a Content-Length body is
 *   re-framed is decided at its head, from the values resolved by then: when one of them differs
 *   in length from its surrogate, it goes out chunked to an HTTP/1.1 client, and close-delimited
 *   to an HTTP/1.0 one (whose request went upstream as the connection's last).
 * - In responses, real values shorter than VALUE_MIN bytes are left alone (replacing every
 *   occurrence of a few bytes would corrupt bodies), and a sidecar header's value is replaced by
 *   as many '*' (an API that echoes headers would otherwise show the sandbox a value it never
 *   held).
 * - Bodies are searched for surrogates as they are; heads also for their base64 and
 *   percent-encoded forms. Responses are searched for real values as they are, in base64 and hex,
 *   and with any of their bytes JSON-escaped or percent-encoded (a server escapes what it likes);
 *   a value's byte in a one-, three- or six-byte form turns into the surrogate's byte in the same
 *   form and case, so that Content-Length bodies keep their length where values and surrogates
 *   do. A value with a byte JSON escapes in two bytes ('/') can change a body's length: such
 *   bodies are re-framed like those of values longer or shorter than their surrogates. The end of a
 * Content-Length body and the next request line are searched together too: the upstream reads two
 * messages, but would still receive a whole surrogate.
 * - Connection options that name a removed, a framing or a sidecar header are dropped (a later
 *   hop would remove that header, or frame the body differently).
 *
 * Real values live only in broker_secret memory and in netns_buf storage, which is wiped; every
 * other temporary copy is wiped before it is freed. No message names a value.
 *
 * The parts (http-flow-internal.h): this file holds the flow's life and the two state machines,
 * which frame what they take; http-flow-request.c and http-flow-response.c the heads;
 * http-flow-values.c what is searched for; http-flow-match.c the matcher; http-flow-replace.c the
 * replacing, and the bodies streamed. */

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "broker/client.h"
#include "netns/http-flow-internal.h"
#include "netns/sigv4-internal.h"

#define CHUNK_LINE_MAX 4096 /* http.c refuses a longer chunk-size line */

/* ---- units that may arrive in pieces: heads, chunk-size lines, CRLFs ---- */

struct unit {
	const uint8_t *p;
	size_t n;
	size_t had; /* bytes that earlier feeds left in acc */
};

/* The bytes of the unit so far: buf itself when nothing waits in acc, else acc with as much of
 * buf appended as cap allows. */
static int unit_gather(struct netns_buf *acc, const uint8_t *buf, size_t len, size_t cap,
		       struct unit *u)
{
	int r;

	u->had = netns_buf_len(acc);
	if (u->had == 0) {
		u->p = buf;
		u->n = MIN(len, cap);
		return 0;
	}
	r = netns_buf_append(acc, buf, MIN(len, cap - u->had), cap);
	if (r < 0)
		return r;
	u->p = netns_buf_head(acc);
	u->n = netns_buf_len(acc);
	return 0;
}

/* The unit is complete at unit_len bytes: returns the bytes of this feed it took. */
static size_t unit_take(struct netns_buf *acc, const struct unit *u, size_t unit_len)
{
	buf_clear(acc);
	return unit_len - u->had;
}

/* More bytes are needed: keeps what there is. Returns the bytes of this feed taken, or -ENOMEM. */
static ssize_t unit_wait(struct netns_buf *acc, const struct unit *u)
{
	int r;

	if (u->had > 0)
		return (ssize_t)(u->n - u->had);
	r = netns_buf_append(acc, u->p, u->n, SIZE_MAX);
	return r < 0 ? r : (ssize_t)u->n;
}

/* Whether a head could be complete: it holds an empty line (or a bare-LF one, which the parser
 * refuses), or it is as long as a head may be. */
static bool head_ready(const struct unit *u, size_t cap)
{
	size_t from = u->had > 3 ? u->had - 3 : 0;

	return u->n >= cap || memmem(u->p + from, u->n - from, "\r\n\r\n", 4) ||
	       memmem(u->p + from, u->n - from, "\n\n", 2);
}

/* A CRLF (after chunk data, or as empty trailers) at the start of the unit: 1, 0 when more bytes
 * are needed, -EBADMSG when something else is there. */
static int unit_crlf(const struct unit *u)
{
	if (u->n >= 1 && u->p[0] != '\r')
		return -EBADMSG;
	if (u->n < 2)
		return 0;
	return u->p[1] == '\n' ? 1 : -EBADMSG;
}

/* ---- the flow ---- */

int netns_http_flow_new(const struct netns_http_flow_options *o, struct netns_http_flow **ret)
{
	_cleanup_(netns_http_flow_freep) struct netns_http_flow *f = NULL;
	int r;

	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->o = *o;
	while (o->surrogates && o->surrogates[f->n_surrogates])
		f->n_surrogates++;
	f->values = calloc(MAX(f->n_surrogates, (size_t)1), sizeof(*f->values));
	f->bound = calloc(MAX(f->n_surrogates, (size_t)1), sizeof(*f->bound));
	if (!f->values || !f->bound)
		return -ENOMEM;
	r = flow_build_surrogate_matchers(f);
	if (r < 0)
		return r;
	r = flow_matcher_init(&f->values_m, NULL, 0);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(f);
	return 0;
}

struct netns_http_flow *netns_http_flow_free(struct netns_http_flow *f)
{
	if (!f)
		return NULL;
	for (size_t i = 0; i < f->n_surrogates; i++) {
		f->values[i] = broker_secret_free(f->values[i]);
		if (f->bound)
			f->bound[i] = broker_secret_free(f->bound[i]);
	}
	free(f->values);
	free(f->bound);
	f->sidecar = broker_secret_free(f->sidecar);
	free(f->stars);
	flow_matcher_done(&f->surrogates);
	flow_matcher_done(&f->encoded);
	flow_matcher_done(&f->values_m);
	wipe_free(f->value_forms, f->value_forms_size);
	free(f->encoded_text);
	netns_buf_done(&f->req_acc);
	netns_buf_done(&f->req_hold);
	netns_buf_done(&f->req_other_origin);
	netns_buf_done(&f->req_tail);
	netns_buf_done(&f->resp_acc);
	netns_buf_done(&f->resp_hold);
	netns_buf_done(&f->work);
	f->req_chunks = netns_sigv4_chunks_free(f->req_chunks);
	netns_buf_done(&f->req_signed);
	flow_ws_dir_done(&f->ws_up);
	flow_ws_dir_done(&f->ws_down);
	explicit_bzero(f->ws_masks, sizeof(f->ws_masks));
	free(f);
	return NULL;
}

static int flow_fail(struct netns_http_flow *f, int r)
{
	f->error = r;
	return r;
}

/* ---- requests: heads (http-flow-request.c), bodies ---- */

static ssize_t request_data(struct netns_http_flow *f, const uint8_t *buf, size_t len,
			    struct netns_buf *out, struct al_error *err);

/* A SigV4 request whose body the proxy must hash (http-flow-sigv4.c) is taken whole, head and
 * body (f->req_whole bytes): the body is judged with the head, then streams as any other. */
static ssize_t request_whole(struct netns_http_flow *f, const struct netns_http_request *req,
			     struct netns_buf *acc, const struct unit *u, struct netns_buf *out,
			     struct al_error *err)
{
	size_t whole = f->req_whole;

	f->req_whole = 0;
	for (size_t off = req->head_len; off < whole && f->req == REQ_BODY;) {
		ssize_t n = request_data(f, u->p + off, whole - off, out, err);

		if (n < 0)
			return n;
		off += (size_t)n;
	}
	return (ssize_t)unit_take(acc, u, whole);
}

static ssize_t request_head(struct netns_http_flow *f, const uint8_t *buf, size_t len,
			    struct netns_buf *out, struct al_error *err)
{
	size_t cap = f->req_whole ? f->req_whole : NETNS_HTTP_HEAD_MAX;
	struct netns_http_request req;
	struct unit u;
	ssize_t want;
	int r;

	r = unit_gather(&f->req_acc, buf, len, cap, &u);
	if (r < 0)
		return r;
	if (f->req_whole ? u.n < f->req_whole : !head_ready(&u, cap))
		return unit_wait(&f->req_acc, &u);
	r = netns_http_parse_request((const char *)u.p, u.n, &req, err);
	if (r == -EAGAIN)
		return unit_wait(&f->req_acc, &u);
	if (r < 0)
		return r;
	if (!f->req_whole) {
		if (flow_is_for_other_origin(f, &req)) {
			/* Held as it came, for the flow of its origin to judge. */
			r = netns_buf_append(&f->req_other_origin, u.p, req.head_len, SIZE_MAX);
			if (r < 0)
				return r;
			f->req = REQ_OTHER_ORIGIN;
			return (ssize_t)unit_take(&f->req_acc, &u, req.head_len);
		}
		want = flow_sigv4_body_wanted(f, &req);
		if (want < 0)
			return want;
		f->req_whole = want > 0 ? req.head_len + (size_t)want : 0;
		if (f->req_whole > u.n)
			return unit_wait(&f->req_acc, &u);
	}
	if (f->req_whole) {
		f->req_body = u.p + req.head_len;
		f->req_body_len = f->req_whole - req.head_len;
	}
	flow_ws_request(f, &req);
	r = flow_request_head_done(f, &req, out, err);
	f->req_body = NULL;
	if (r >= 0 && f->req_ws) {
		/* The upgrade is the last request: what follows waits for its answer. */
		f->pending[(f->pending_first + f->n_pending - 1) % PENDING_MAX].websocket = true;
		f->req = REQ_UPGRADE;
	}
	f->req_ws = false;
	if (r < 0)
		return r;
	if (f->req_whole)
		return request_whole(f, &req, &f->req_acc, &u, out, err);
	return (ssize_t)unit_take(&f->req_acc, &u, req.head_len);
}

/* The end of a body signed chunk by chunk: its last chunk must have come. */
static int request_chunks_end(struct netns_http_flow *f, struct al_error *err)
{
	bool done = netns_sigv4_chunks_done(f->req_chunks);

	f->req_chunks = netns_sigv4_chunks_free(f->req_chunks);
	if (!done)
		return al_error_set(
		    err, -EBADMSG,
		    "The request body ends before the last chunk of its aws-chunked "
		    "body");
	return 0;
}

/* Bytes of a body: searched for surrogates (and refused with one) on their way out; a body
 * signed chunk by chunk goes through its re-signer first, and what it gives back is searched. */
static int request_body_pass(struct netns_http_flow *f, const uint8_t *buf, size_t n, bool final,
			     bool chunked, struct netns_buf *out, struct al_error *err)
{
	ssize_t k;
	int r;

	if (!f->req_chunks)
		return flow_body_pass(&f->req_hold, &f->surrogates, "request body", buf, n, final,
				      chunked, out, err);
	k = netns_sigv4_chunks_feed(f->req_chunks, buf, n, &f->req_signed, err);
	if (k < 0)
		return (int)k;
	if (final) {
		r = request_chunks_end(f, err);
		if (r < 0)
			return r;
	}
	r = flow_body_pass(&f->req_hold, &f->surrogates, "request body",
			   netns_buf_head(&f->req_signed), netns_buf_len(&f->req_signed), final,
			   chunked, out, err);
	buf_clear(&f->req_signed);
	return r;
}

static ssize_t request_data(struct netns_http_flow *f, const uint8_t *buf, size_t len,
			    struct netns_buf *out, struct al_error *err)
{
	bool chunked = f->req == REQ_CHUNK_DATA;
	size_t n = (size_t)MIN((uint64_t)len, f->req_left);
	int r;

	n = MIN(n, flow_matcher_step(&f->surrogates));
	if (!chunked && n == f->req_left) {
		r = flow_keep_body_tail(f, buf, n);
		if (r < 0)
			return r;
	}
	r = request_body_pass(f, buf, n, !chunked && n == f->req_left, chunked, out, err);
	if (r < 0)
		return r;
	f->req_left -= n;
	if (f->req_left == 0) {
		if (chunked)
			f->req = REQ_CHUNK_END;
		else
			request_done(f);
	}
	return (ssize_t)n;
}

static ssize_t request_chunk_line(struct netns_http_flow *f, const uint8_t *buf, size_t len,
				  struct netns_buf *out, struct al_error *err)
{
	uint64_t size;
	size_t line_len;
	struct unit u;
	int r;

	r = unit_gather(&f->req_acc, buf, len, CHUNK_LINE_MAX, &u);
	if (r < 0)
		return r;
	r = netns_http_parse_chunk_size((const char *)u.p, u.n, &size, &line_len);
	if (r == -EAGAIN)
		return unit_wait(&f->req_acc, &u);
	if (r < 0)
		return al_error_set(err, -EBADMSG, "Malformed chunk-size line in the request body");
	r = flow_refuse_surrogates(f, (const char *)u.p, line_len - 2, false,
				   "request chunk extension", err);
	if (r < 0)
		return r;
	if (size == 0) {
		r = f->req_chunks ? request_chunks_end(f, err) : 0;
		if (r >= 0)
			r = flow_body_pass(&f->req_hold, &f->surrogates, "request body", NULL, 0,
					   true, true, out, err);
		if (r < 0)
			return r;
		f->req = REQ_TRAILERS;
	} else {
		f->req_left = size;
		f->req = REQ_CHUNK_DATA;
	}
	return (ssize_t)unit_take(&f->req_acc, &u, line_len);
}

/* The CRLF after chunk data, and the end of the body: refused unless its trailer section is
 * empty. */
static ssize_t request_crlf(struct netns_http_flow *f, const uint8_t *buf, size_t len,
			    struct netns_buf *out, struct al_error *err)
{
	bool trailers = f->req == REQ_TRAILERS;
	struct unit u;
	int r;

	r = unit_gather(&f->req_acc, buf, len, 2, &u);
	if (r < 0)
		return r;
	r = unit_crlf(&u);
	if (r == 0)
		return unit_wait(&f->req_acc, &u);
	if (r < 0)
		return al_error_set(err, -EBADMSG, "%s",
				    trailers ? "Request trailers are refused"
					     : "Chunk data in the request body is not followed by "
					       "CRLF");
	if (trailers) {
		r = netns_buf_append(out, "0\r\n\r\n", 5, OUT_LIMIT);
		if (r < 0)
			return r;
		request_done(f);
	} else
		f->req = REQ_CHUNK_LINE;
	return (ssize_t)unit_take(&f->req_acc, &u, 2);
}

static ssize_t request_step(struct netns_http_flow *f, const uint8_t *buf, size_t len,
			    struct netns_buf *out, struct al_error *err)
{
	switch (f->req) {
	case REQ_HEAD:
		return request_head(f, buf, len, out, err);
	case REQ_BODY:
	case REQ_CHUNK_DATA:
		return request_data(f, buf, len, out, err);
	case REQ_CHUNK_LINE:
		return request_chunk_line(f, buf, len, out, err);
	case REQ_CHUNK_END:
	case REQ_TRAILERS:
		return request_crlf(f, buf, len, out, err);
	case REQ_UPGRADE:
		return 0; /* frames or the next request: the answer to the upgrade says */
	case REQ_OTHER_ORIGIN:
		return 0; /* another flow's */
	case REQ_WS:
		return flow_ws_relay(f, &f->ws_up, true, buf, len, out, err);
	case REQ_CLOSED:
		break;
	}
	return (ssize_t)len; /* after the connection's last request: dropped */
}

ssize_t netns_http_flow_request(struct netns_http_flow *f, const uint8_t *buf, size_t len,
				struct netns_buf *out, struct al_error *err)
{
	size_t entry = netns_buf_len(out), done = 0;
	ssize_t n;

	if (f->error < 0)
		return al_error_set(err, f->error, "The connection was refused earlier");
	while (done < len && netns_buf_len(out) <= NETNS_HTTP_FLOW_OUT_MAX) {
		n = request_step(f, buf + done, len - done, out, err);
		if (n < 0) {
			/* Nothing of a refused feed goes upstream. */
			buf_truncate(out, entry);
			return flow_fail(f, (int)n);
		}
		if (n == 0 && (f->req == REQ_UPGRADE || f->req == REQ_OTHER_ORIGIN))
			break; /* the rest waits: for the answer to the upgrade, or another flow */
		done += (size_t)n;
	}
	return (ssize_t)done;
}

/* ---- responses: heads (http-flow-response.c), bodies ---- */

static ssize_t response_head(struct netns_http_flow *f, const uint8_t *buf, size_t len,
			     struct netns_buf *out, struct al_error *err)
{
	struct response_head rh;
	struct unit u;
	int r;

	if (f->n_pending == 0)
		return al_error_set(err, -EPROTO,
				    "The upstream sent a response that no request asked for");
	r = unit_gather(&f->resp_acc, buf, len, NETNS_HTTP_HEAD_MAX, &u);
	if (r < 0)
		return r;
	if (!head_ready(&u, NETNS_HTTP_HEAD_MAX))
		return unit_wait(&f->resp_acc, &u);
	r = flow_parse_response_head((const char *)u.p, u.n, &rh, err);
	if (r == -EAGAIN)
		return unit_wait(&f->resp_acc, &u);
	if (r < 0)
		return r;
	r = flow_response_head_done(f, &rh, out, err);
	if (r < 0)
		return r;
	return (ssize_t)unit_take(&f->resp_acc, &u, rh.head_len);
}

static ssize_t response_data(struct netns_http_flow *f, const uint8_t *buf, size_t len,
			     struct netns_buf *out, struct al_error *err)
{
	bool until_close = f->resp == RESP_UNTIL_CLOSE;
	size_t n = until_close ? len : (size_t)MIN((uint64_t)len, f->resp_left);
	bool final;
	int r;

	n = MIN(n, flow_matcher_step(&f->values_m));
	if (f->resp_sniff.on) {
		r = flow_sniff_body(&f->resp_sniff, buf, n, err);
		if (r < 0)
			return r;
	}
	final = f->resp == RESP_BODY && n == f->resp_left;
	r = flow_body_pass(&f->resp_hold, &f->values_m, NULL, buf, n, final,
			   f->resp_out == FRAME_CHUNKED, out, err);
	if (r < 0)
		return r;
	if (until_close)
		return (ssize_t)n;
	f->resp_left -= n;
	if (f->resp_left > 0)
		return (ssize_t)n;
	if (f->resp == RESP_CHUNK_DATA) {
		f->resp = RESP_CHUNK_END;
		return (ssize_t)n;
	}
	if (f->resp_out == FRAME_CHUNKED) {
		r = netns_buf_append(out, "0\r\n\r\n", 5, OUT_LIMIT);
		if (r < 0)
			return r;
	}
	response_done(f);
	return (ssize_t)n;
}

static ssize_t response_chunk_line(struct netns_http_flow *f, const uint8_t *buf, size_t len,
				   struct netns_buf *out, struct al_error *err)
{
	uint64_t size;
	size_t line_len;
	struct unit u;
	int r;

	r = unit_gather(&f->resp_acc, buf, len, CHUNK_LINE_MAX, &u);
	if (r < 0)
		return r;
	r = netns_http_parse_chunk_size((const char *)u.p, u.n, &size, &line_len);
	if (r == -EAGAIN)
		return unit_wait(&f->resp_acc, &u);
	if (r < 0)
		return al_error_set(err, -EBADMSG, "Malformed chunk-size line in a response");
	if (size == 0) {
		r = flow_body_pass(&f->resp_hold, &f->values_m, NULL, NULL, 0, true,
				   f->resp_out == FRAME_CHUNKED, out, err);
		if (r < 0)
			return r;
		f->resp = RESP_TRAILERS;
	} else {
		f->resp_left = size;
		f->resp = RESP_CHUNK_DATA;
	}
	return (ssize_t)unit_take(&f->resp_acc, &u, line_len);
}

static ssize_t response_chunk_end(struct netns_http_flow *f, const uint8_t *buf, size_t len,
				  struct al_error *err)
{
	struct unit u;
	int r;

	r = unit_gather(&f->resp_acc, buf, len, 2, &u);
	if (r < 0)
		return r;
	r = unit_crlf(&u);
	if (r == 0)
		return unit_wait(&f->resp_acc, &u);
	if (r < 0)
		return al_error_set(err, -EBADMSG,
				    "Chunk data in a response is not followed by CRLF");
	f->resp = RESP_CHUNK_LINE;
	return (ssize_t)unit_take(&f->resp_acc, &u, 2);
}

/* The trailer section ends a chunked body: its fields pass, values replaced, when the body goes
 * on chunked. */
static ssize_t response_trailers(struct netns_http_flow *f, const uint8_t *buf, size_t len,
				 struct netns_buf *out, struct al_error *err)
{
	struct netns_http_header fields[NETNS_HTTP_HEADERS_MAX];
	size_t pos = 0, n = 0;
	struct writer w = {.b = out, .max = netns_buf_len(out) + HEAD_OUT_MAX};
	struct unit u;
	int r;

	r = unit_gather(&f->resp_acc, buf, len, NETNS_HTTP_HEAD_MAX, &u);
	if (r < 0)
		return r;
	r = unit_crlf(&u);
	if (r == 0 && u.n < 2)
		return unit_wait(&f->resp_acc, &u);
	if (r <= 0 && !head_ready(&u, NETNS_HTTP_HEAD_MAX))
		return unit_wait(&f->resp_acc, &u);
	r = flow_parse_fields((const char *)u.p, u.n, &pos, fields, &n, err);
	if (r == -EAGAIN)
		return u.n >= NETNS_HTTP_HEAD_MAX
			   ? al_error_set(err, -EMSGSIZE, "Response trailers are too long")
			   : unit_wait(&f->resp_acc, &u);
	if (r < 0)
		return r;
	if (f->resp_out == FRAME_CHUNKED) {
		put_str(&w, "0\r\n");
		for (size_t i = 0; i < n; i++) {
			flow_put_replaced(&w, &f->values_m, fields[i].name, fields[i].name_len);
			put_str(&w, ": ");
			flow_put_replaced(&w, &f->values_m, fields[i].value, fields[i].value_len);
			put_str(&w, "\r\n");
		}
		put_str(&w, "\r\n");
		if (w.r < 0)
			return w.r == -EMSGSIZE
				   ? al_error_set(err, -EMSGSIZE, "Response trailers are too long")
				   : w.r;
	}
	response_done(f);
	return (ssize_t)unit_take(&f->resp_acc, &u, pos);
}

static ssize_t response_step(struct netns_http_flow *f, const uint8_t *buf, size_t len,
			     struct netns_buf *out, struct al_error *err)
{
	switch (f->resp) {
	case RESP_HEAD:
		return response_head(f, buf, len, out, err);
	case RESP_BODY:
	case RESP_CHUNK_DATA:
	case RESP_UNTIL_CLOSE:
		return response_data(f, buf, len, out, err);
	case RESP_CHUNK_LINE:
		return response_chunk_line(f, buf, len, out, err);
	case RESP_CHUNK_END:
		return response_chunk_end(f, buf, len, err);
	case RESP_TRAILERS:
		return response_trailers(f, buf, len, out, err);
	case RESP_WS:
		return flow_ws_relay(f, &f->ws_down, false, buf, len, out, err);
	case RESP_CLOSED:
		break;
	}
	return (ssize_t)len; /* after the connection's last response: dropped */
}

ssize_t netns_http_flow_response(struct netns_http_flow *f, const uint8_t *buf, size_t len,
				 struct netns_buf *out, struct al_error *err)
{
	size_t done = 0;
	ssize_t n;

	if (f->error < 0)
		return al_error_set(err, f->error, "The connection was refused earlier");
	f->answered |= len > 0;
	while (done < len && netns_buf_len(out) <= NETNS_HTTP_FLOW_OUT_MAX) {
		n = response_step(f, buf + done, len - done, out, err);
		if (n < 0)
			return flow_fail(f, (int)n);
		done += (size_t)n;
	}
	return (ssize_t)done;
}

uint64_t netns_http_flow_request_raw(const struct netns_http_flow *f)
{
	if (f->error < 0 || f->req != REQ_BODY || f->n_surrogates > 0 || f->req_chunks ||
	    netns_buf_len(&f->req_hold) > 0)
		return 0;
	return f->req_left;
}

void netns_http_flow_request_skip(struct netns_http_flow *f, uint64_t n)
{
	assert(n <= netns_http_flow_request_raw(f));
	f->req_left -= n;
	if (f->req_left == 0)
		request_done(f);
}

uint64_t netns_http_flow_response_raw(const struct netns_http_flow *f)
{
	if (f->error < 0 || f->values_m.n > 0 || f->resp_sniff.on ||
	    netns_buf_len(&f->resp_hold) > 0)
		return 0;
	if (f->resp == RESP_UNTIL_CLOSE && f->resp_out == FRAME_CLOSE)
		return UINT64_MAX;
	return f->resp == RESP_BODY && f->resp_out == FRAME_LENGTH ? f->resp_left : 0;
}

void netns_http_flow_response_skip(struct netns_http_flow *f, uint64_t n)
{
	assert(n <= netns_http_flow_response_raw(f));
	f->answered |= n > 0;
	if (f->resp != RESP_BODY)
		return;
	f->resp_left -= n;
	if (f->resp_left == 0)
		response_done(f);
}

bool netns_http_flow_idle(const struct netns_http_flow *f)
{
	return f->req == REQ_HEAD && f->n_pending == 0 && f->resp == RESP_HEAD &&
	       netns_buf_len(&f->resp_acc) == 0;
}

bool netns_http_flow_upstream_reusable(const struct netns_http_flow *f)
{
	return f->error == 0 && !f->upstream_spent && f->n_pending == 0 &&
	       (f->req == REQ_HEAD || f->req == REQ_CLOSED || f->req == REQ_OTHER_ORIGIN) &&
	       (f->resp == RESP_HEAD || f->resp == RESP_CLOSED) && netns_buf_len(&f->resp_acc) == 0;
}

bool netns_http_flow_replayable(const struct netns_http_flow *f)
{
	if (f->error != 0 || f->answered || f->req == REQ_UPGRADE || f->req == REQ_WS)
		return false;
	for (size_t i = 0; i < f->n_pending; i++) {
		const struct pending *q = &f->pending[(f->pending_first + i) % PENDING_MAX];

		if (!q->idempotent || q->websocket)
			return false;
	}
	return true;
}

bool netns_http_flow_other_origin(const struct netns_http_flow *f, const uint8_t **head,
				  size_t *len)
{
	/* The upstream may have ended since, unless an answer said the connection ends. */
	if (f->error < 0 || f->req != REQ_OTHER_ORIGIN || f->n_pending > 0 ||
	    !(f->resp == RESP_HEAD || (f->resp == RESP_CLOSED && !f->resp_close)) ||
	    netns_buf_len(&f->resp_acc) > 0)
		return false;
	*head = netns_buf_head(&f->req_other_origin);
	*len = netns_buf_len(&f->req_other_origin);
	return true;
}

bool netns_http_flow_done(const struct netns_http_flow *f)
{
	return f->req == REQ_CLOSED && f->resp == RESP_CLOSED && f->n_pending == 0;
}

int netns_http_flow_response_eof(struct netns_http_flow *f, struct netns_buf *out,
				 struct al_error *err)
{
	enum resp_state state = f->resp;
	int r;

	if (f->error < 0)
		return al_error_set(err, f->error, "The connection was refused earlier");
	f->resp = RESP_CLOSED;
	if (state == RESP_WS)
		return flow_ws_at_boundary(&f->ws_down)
			   ? 0
			   : al_error_set(err, -EPIPE,
					  "The upstream closed the connection within a WebSocket "
					  "message");
	if (state == RESP_UNTIL_CLOSE) {
		r = flow_body_pass(&f->resp_hold, &f->values_m, NULL, NULL, 0, true, false, out,
				   err);
		if (r < 0)
			return flow_fail(f, r);
		return 0;
	}
	if (state == RESP_CLOSED || (state == RESP_HEAD && netns_buf_len(&f->resp_acc) == 0))
		return 0;
	return al_error_set(err, -EPIPE, "The upstream closed the connection within a response");
}

static const char *status_reason(int status)
{
	switch (status) {
	case 400:
		return "Bad Request";
	case 403:
		return "Forbidden";
	case 421:
		return "Misdirected Request";
	case 431:
		return "Request Header Fields Too Large";
	case 500:
		return "Internal Server Error";
	case 502:
		return "Bad Gateway";
	case 504:
		return "Gateway Timeout";
	}
	return "Error";
}

bool netns_http_flow_error_response(struct netns_http_flow *f, int status, const char *message,
				    struct netns_buf *out)
{
	/* After a WebSocket upgrade, a Close frame says it: frames go to the sandbox only whole,
	 * so one may come between any two (within a message too). */
	if (f->resp == RESP_WS) {
		f->resp = RESP_CLOSED;
		return flow_ws_close_status(out, status, message) >= 0;
	}
	/* Only between responses: within one, the sandbox would read this as its bytes. */
	if (f->resp != RESP_HEAD)
		return false;
	f->resp = RESP_CLOSED;
	return netns_buf_printf(out, OUT_LIMIT,
				"HTTP/1.1 %d %s\r\n"
				"Content-Type: text/plain\r\n"
				"Content-Length: %zu\r\n"
				"Connection: close\r\n"
				"\r\n"
				"airlock: %s\n",
				status, status_reason(status),
				strlen("airlock: \n") + strlen(message), message) >= 0;
}
