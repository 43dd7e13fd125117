#pragma once

/* The parts of the inspected HTTP/1.1 flow (netns-internal.h has its contract, http-flow.c the
 * decisions it leaves open), for netns/http-flow*.c only:
 * - http-flow.c: the flow's life, and each direction's byte-in, byte-out state machine (heads
 *   gathered, bodies stepped, chunk-size lines, CRLFs and trailers framed);
 * - http-flow-request.c: request heads checked and written out, surrogates swapped in;
 * - http-flow-response.c: response heads parsed, judged and written out, values turned back;
 * - http-flow-values.c: what is searched for (surrogates, real values, in their forms) and the
 *   values behind it, from the broker;
 * - http-flow-match.c: the matcher that finds those patterns, and its codecs;
 * - http-flow-replace.c: text written with the matches replaced (a base64 run around a value
 *   encoded again whole), and bodies streamed through;
 * - http-flow-ws.c: the WebSocket handshake judged, and its frames relayed (ws.c parses them). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "netns/netns-internal.h"

#define PENDING_MAX 64 /* requests passed on and not answered yet */
#define SIDECAR_LINES_MAX 16
/* A request or response head as written out, values swapped in. */
#define HEAD_OUT_MAX (2 * NETNS_HTTP_HEAD_MAX)
/* The hard ceiling of out, which the steps never reach: a failsafe, not flow control. */
#define OUT_LIMIT ((size_t)NETNS_HTTP_FLOW_OUT_MAX + HEAD_OUT_MAX + 1024 * 1024)
#define WINDOW_MAX 8   /* bytes of a pattern that the matcher hashes */
#define STRIDE_MAX 32  /* the matcher reads a window every this many bytes at most */
#define FORM_MORE (-1) /* flow_escaped_form(): the text ends before it can tell */
/* Bytes that may begin an escaped pattern (the first byte of each real value, '%', '\\', '+'):
 * each byte once. */
#define MATCHER_STARTS_MAX 256
#define ALPHA_STD 1 /* base64 alphabets (struct pattern) */
#define ALPHA_URL 2

/* ---- characters, and wiped memory ---- */

static inline unsigned char ascii_lower(unsigned char c)
{
	return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
}

/* ASCII only: strncasecmp() follows the locale. */
static inline bool ascii_eq_n(const char *s, size_t n, const char *t, size_t m)
{
	if (n != m)
		return false;
	for (size_t i = 0; i < n; i++)
		if (ascii_lower((unsigned char)s[i]) != ascii_lower((unsigned char)t[i]))
			return false;
	return true;
}

static inline bool ascii_eq(const char *s, size_t n, const char *lower)
{
	return ascii_eq_n(s, n, lower, strlen(lower));
}

/* The element of a comma-separated field value (RFC 9110 5.6.1) at *p, before end, without the
 * whitespace around it (it may be empty: "a, ,b" has three), at *ret_elem; *p moves past its
 * comma. False for the last element, which no comma follows. */
static inline bool flow_list_next(const char **p, const char *end, const char **ret_elem,
				  size_t *ret_len)
{
	const char *comma = memchr(*p, ',', (size_t)(end - *p)), *s = *p, *e = comma ? comma : end;

	while (s < e && http_is_ows((unsigned char)*s))
		s++;
	while (e > s && http_is_ows((unsigned char)e[-1]))
		e--;
	*p = comma ? comma + 1 : end;
	*ret_elem = s;
	*ret_len = (size_t)(e - s);
	return comma != NULL;
}

/* Frees p (n bytes), wiped first: a temporary copy that may hold a real value. */
static inline void wipe_free(void *p, size_t n)
{
	if (p)
		explicit_bzero(p, n);
	free(p);
}

/* ---- http-flow-match.c: codecs, and the matcher ---- */

/* Encodes n bytes into dst (room for 4 * ((n + 2) / 3)), padded; returns the length. */
size_t flow_b64_encode(const uint8_t *src, size_t n, char *dst);
/* Each byte's value in the standard base64 alphabet, plus one (0: not in it). */
extern const uint8_t flow_b64_std_values[256];
/* The value of c in the standard base64 alphabet, or -1 (inline: body scans test every byte). */
static inline int flow_b64_value(unsigned char c)
{
	return (int)flow_b64_std_values[c] - 1;
}
/* Decodes standard base64, padded or not, into dst (room for n / 4 * 3 + 2): -EINVAL when s is
 * not that. */
int flow_b64_decode(const char *s, size_t n, uint8_t *dst, size_t *ret_len);
/* Decodes every %XX of s in place; returns the new length. */
size_t flow_percent_decode(uint8_t *s, size_t n);

struct pattern {
	const uint8_t *bytes;
	size_t len;
	const uint8_t *sub; /* its replacement, in responses */
	size_t sub_len;
	size_t owner; /* the surrogate it is, or encodes */
	uint32_t key;
	/* Also found with any of its bytes escaped (flow_escaped_form()): in the text, it is then
	 * longer than len. */
	bool escaped;
	/* A base64 form of a real value (in responses): its alphabet (ALPHA_STD, ALPHA_URL, or 0
	 * for none), the value's offset (0-2) past a multiple of three bytes, and the value and
	 * surrogate themselves, for grow_b64_match() (http-flow-replace.c). */
	uint8_t b64, b64_k;
	const uint8_t *value, *surrogate;
	size_t value_len, surrogate_len;
};

/* What the matcher found: a pattern, and the bytes of the text it covers. */
struct match {
	const struct pattern *pt;
	size_t len;
	/* A whole base64 run encoded again (grow_b64_match()), its replacement; owned, wiped. */
	uint8_t *text;
	size_t text_len;
};

struct matcher {
	struct pattern *pats; /* owned; the escaped ones first */
	size_t n, min_len, max_len;
	size_t n_escaped; /* patterns with .escaped */
	size_t growth;	  /* output bytes per input byte, at most, once replaced */
	bool same_len;	  /* every replacement keeps the length */
	bool has_b64;	  /* some patterns are base64 forms of real values */
	uint64_t mask;	  /* the window's bytes of a 64-bit load */
	size_t window;	  /* ... their count */
	unsigned shift;	  /* of the hash, to index keys */
	uint64_t *keys;	  /* a bit per hash value */
	size_t n_keys;	  /* words */
	/* The text is read a window every stride bytes; each hashed pattern's windows at offsets
	 * 0..stride-1 are in keys, and their hashes in offset_keys (stride per pattern, the
	 * hashed patterns in order). */
	size_t stride;
	uint32_t *offset_keys;
	uint64_t first[4]; /* a bit per byte that may begin a match */
	/* The bytes that may begin a match of an escaped pattern: its first byte, '%', '\\', and
	 * '+' for a space. */
	uint8_t starts[MATCHER_STARTS_MAX];
	size_t n_starts;
};

/* The forms of a byte c that the un-swap looks for: JSON's "\\u00XX" (either case), "\\/" and
 * the other two-byte escapes, percent-encoding's "%XX" (either case), '+' for a space, and c
 * itself. Returns the length of the form at t (n bytes), 0 when there is none, FORM_MORE when t
 * ends before it can tell. An escape that decodes to c is taken before c itself (a value holding
 * '%' or '\\' may then be missed in a mix of forms; its literal form is a pattern of its own). */
int flow_escaped_form(uint8_t c, const uint8_t *t, size_t n);
/* Makes m find pats[0..n) (taken over, even on error, and reordered; no empty pattern).
 * -ENOMEM. */
int flow_matcher_init(struct matcher *m, struct pattern *pats, size_t n);
/* Frees and wipes what m holds (its patterns' bytes are not its own). */
void flow_matcher_done(struct matcher *m);
/* The leftmost whole match in [p, end) (the longest there), or NULL. Escaped patterns are tried
 * only where one of their start bytes is. */
const uint8_t *flow_matcher_find(const struct matcher *m, const uint8_t *p, const uint8_t *end,
				 struct match *ret);
/* As flow_matcher_find(), for a match that starts before before (and ends by end): the text from
 * before on is not read for starts. */
const uint8_t *flow_matcher_find_before(const struct matcher *m, const uint8_t *p,
					const uint8_t *before, const uint8_t *end,
					struct match *ret);
/* Where the tail of p[0..n) that could begin a pattern starts (the earliest such offset), or n:
 * the bytes a stream must hold back until it knows more. */
size_t flow_matcher_partial(const struct matcher *m, const uint8_t *p, size_t n);
/* Input bytes of a body step: its output, replacements included, stays near STEP_OUT. */
size_t flow_matcher_step(const struct matcher *m);

/* ---- writing to a buffer, with the first error kept ---- */

struct writer {
	struct netns_buf *b;
	size_t max;
	int r;
};

static inline void put(struct writer *w, const void *p, size_t n)
{
	if (w->r >= 0)
		w->r = netns_buf_append(w->b, p, n, w->max);
}

static inline void put_str(struct writer *w, const char *s)
{
	put(w, s, strlen(s));
}

/* Drops the first n bytes of b, wiped. netns_buf_consume() is not called on a buffer that never
 * held anything (its storage is NULL then). */
static inline void buf_drop(struct netns_buf *b, size_t n)
{
	if (n > 0)
		netns_buf_consume(b, n);
}

static inline void buf_clear(struct netns_buf *b)
{
	buf_drop(b, netns_buf_len(b));
}

/* Drops what was appended to b after its first len bytes. */
static inline void buf_truncate(struct netns_buf *b, size_t len)
{
	size_t n = netns_buf_len(b);

	if (n <= len)
		return;
	explicit_bzero(b->data + b->start + len, n - len);
	b->end = b->start + len;
}

/* ---- http-flow-replace.c: matches replaced, bodies streamed ---- */

/* Writes p with every pattern of m replaced. */
void flow_put_replaced(struct writer *w, const struct matcher *m, const void *p, size_t n);
/* Streams n bytes of a body: what hold kept back from earlier bytes and data are scanned as one,
 * and a tail that could begin a pattern is kept back again, unless final (the body's end).
 * Matches are replaced, or refused when refuse names where they are (-EPERM); the body goes out
 * in chunks when chunked. */
int flow_body_pass(struct netns_buf *hold, const struct matcher *m, const char *refuse,
		   const uint8_t *data, size_t n, bool final, bool chunked, struct netns_buf *out,
		   struct al_error *err);

/* ---- the flow ---- */

enum req_state {
	REQ_HEAD,
	REQ_BODY, /* Content-Length */
	REQ_CHUNK_LINE,
	REQ_CHUNK_DATA,
	REQ_CHUNK_END, /* the CRLF after a chunk's data */
	REQ_TRAILERS,
	REQ_CLOSED,  /* after the connection's last request */
	REQ_UPGRADE, /* a WebSocket request waits for its answer: what follows is held */
	REQ_WS,	     /* WebSocket frames (http-flow-ws.c) */
	/* A request for another origin (o.origin_switch) is held, and nothing after it taken:
	 * netns_http_flow_other_origin() */
	REQ_OTHER_ORIGIN,
};

enum resp_state {
	RESP_HEAD,
	RESP_BODY, /* Content-Length */
	RESP_CHUNK_LINE,
	RESP_CHUNK_DATA,
	RESP_CHUNK_END,
	RESP_TRAILERS,
	RESP_UNTIL_CLOSE,
	RESP_CLOSED,
	RESP_WS, /* WebSocket frames (http-flow-ws.c) */
};

enum framing {
	FRAME_NONE,
	FRAME_LENGTH,
	FRAME_CHUNKED,
	FRAME_CLOSE,
};

struct pending {
	bool head;	 /* a HEAD request: the response has no body */
	bool http11;	 /* the client reads chunked bodies */
	bool close;	 /* the connection ends after the response */
	bool websocket;	 /* a WebSocket upgrade (http-flow-ws.c) */
	bool idempotent; /* GET, HEAD, OPTIONS, TRACE, PUT, DELETE (RFC 9110 9.2.2) */
};

/* One direction of a WebSocket relay (http-flow-ws.c): frames parsed as they come, each payload
 * searched as one stream per message (a pattern split across frames is found) and written out
 * again in frames of its own, in the pieces the search releases. */
struct ws_dir {
	struct netns_ws_parser ps;
	uint8_t opcode;		/* of the data message under way */
	bool started;		/* a frame of it went out: the next is a continuation */
	struct netns_buf hold;	/* the message's tail that could begin a pattern */
	struct netns_buf piece; /* payload to go out as one frame (may hold real values) */
	uint8_t ctl[NETNS_WS_CONTROL_MAX]; /* a control frame's payload, unmasked */
	size_t ctl_n;
};

/* A response body whose first bytes are still to be judged (flow_sniff_body()). */
struct body_sniff {
	bool on;
	uint8_t first[4]; /* ... and those seen so far */
	size_t n;
};

struct netns_sigv4_chunks;

struct sidecar_line {
	size_t name, name_len, value, value_len; /* offsets into the sidecar secret */
};

struct netns_http_flow {
	struct netns_http_flow_options o;
	size_t n_surrogates;
	struct matcher surrogates; /* each surrogate */
	struct matcher encoded;	   /* their base64 forms */
	uint8_t *encoded_text;
	struct broker_secret **values; /* by surrogate, once resolved */
	size_t n_values;
	/* By surrogate: the values bound to the host that were not resolved on the flow, asked for
	 * before the first response head, only to be turned back in responses (never sent). */
	struct broker_secret **bound;
	size_t n_bound;
	bool bound_asked;

	bool sidecar_asked;
	struct broker_secret *sidecar; /* NULL: none */
	struct sidecar_line side[SIDECAR_LINES_MAX];
	size_t n_side;
	char *stars; /* what a sidecar value turns into in responses */

	struct pending pending[PENDING_MAX];
	size_t pending_first, n_pending;

	enum req_state req;
	struct netns_buf req_acc, req_hold;
	/* The end of the last Content-Length body, when it could begin a surrogate that the next
	 * request line would complete. */
	struct netns_buf req_tail;
	uint64_t req_left;
	bool req_close;
	struct netns_buf req_other_origin; /* REQ_OTHER_ORIGIN: that request's head */

	enum resp_state resp;
	struct netns_buf resp_acc, resp_hold;
	uint64_t resp_left;
	enum framing resp_out; /* of the current response's body, towards the sandbox */
	bool resp_close;
	/* The upstream was told to end the connection after a response, or may end it: see
	 * netns_http_flow_upstream_reusable() */
	bool upstream_spent;
	bool answered; /* a byte of a response came: see netns_http_flow_replayable() */
	struct body_sniff resp_sniff;
	struct matcher values_m; /* real values, to turn back into surrogates */
	size_t values_m_for;	 /* n_values + n_bound + n_side when it was built */
	bool values_m_sent;	 /* ... and it holds a value that went upstream on this flow */
	uint8_t *value_forms;	 /* the base64 forms of the real values (wiped) */
	size_t value_forms_size;

	struct netns_buf work; /* Basic credentials being swapped */
	/* WebSocket (http-flow-ws.c): the request head being written is an upgrade, the accept
	 * value its 101 must carry, each direction's relay, and random masks for the frames that go
	 * upstream. */
	bool req_ws;
	char ws_accept[NETNS_WS_ACCEPT_LEN + 1];
	struct ws_dir ws_up, ws_down;
	uint8_t ws_masks[256];
	size_t ws_masks_used;
	/* A SigV4 request whose body is hashed by the proxy (http-flow-sigv4.c) is gathered whole:
	 * its head and body bytes, and the body while its head is judged. */
	size_t req_whole;
	const uint8_t *req_body;
	size_t req_body_len;
	/* A SigV4 body signed chunk by chunk: its re-signer (sigv4-chunks.c), and what it gave
	 * back of the bytes at hand, on its way to the search. */
	struct netns_sigv4_chunks *req_chunks;
	struct netns_buf req_signed;
	int error;
	uint32_t stream; /* the HTTP/2 stream whose head is at work (http2.c), for the audit */
};

static inline void request_done(struct netns_http_flow *f)
{
	f->req = f->req_close ? REQ_CLOSED : REQ_HEAD;
}

static inline void response_done(struct netns_http_flow *f)
{
	f->pending_first = (f->pending_first + 1) % PENDING_MAX;
	f->n_pending--;
	f->resp = f->resp_close ? RESP_CLOSED : RESP_HEAD;
}

/* ---- http-flow-ws.c: WebSocket ---- */

struct response_head;

/* Whether req asks for a WebSocket the flow can relay (GET, HTTP/1.1, no body, "Upgrade:
 * websocket" named in Connection, a Sec-WebSocket-Key): sets f->req_ws and the accept value its
 * 101 must carry. Any other Upgrade is removed, as always. */
void flow_ws_request(struct netns_http_flow *f, const struct netns_http_request *req);
/* Judges a 101 answering a WebSocket request: HTTP/1.1, "Upgrade: websocket", Connection naming
 * upgrade, the right Sec-WebSocket-Accept, no Sec-WebSocket-Extensions (-EPROTO, err says
 * why). */
int flow_ws_check_switch(const struct netns_http_flow *f, const struct response_head *rh,
			 struct al_error *err);
/* After the 101 went out: both directions relay frames from now on. */
void flow_ws_start(struct netns_http_flow *f);
/* Relays frames of one direction (client: the sandbox's, masked, every surrogate swapped for its
 * value by ops->resolve, which refuses it on a host its credential is not bound to; else the
 * upstream's, every real value turned back). Returns the bytes consumed (all of them unless out
 * passed NETNS_HTTP_FLOW_OUT_MAX), -EBADMSG, -EMSGSIZE (a control frame too long with a value
 * swapped in), -EPERM and the other errors of ops->resolve. */
ssize_t flow_ws_relay(struct netns_http_flow *f, struct ws_dir *d, bool client, const uint8_t *buf,
		      size_t len, struct netns_buf *out, struct al_error *err);
/* Whether d stands between messages (nothing of one under way), as a cut-short stream would
 * not. */
bool flow_ws_at_boundary(const struct ws_dir *d);
/* Appends a Close frame for the sandbox, with message and the code of an error response's status
 * (403: 1008 policy violation, 400: 1002 protocol error, 431: 1009 too big, else 1011);
 * flow_ws_close() with 1008. */
int flow_ws_close_status(struct netns_buf *out, int status, const char *message);
int flow_ws_close(struct netns_buf *out, const char *message);
/* Wipes and frees what d holds. */
void flow_ws_dir_done(struct ws_dir *d);

/* ---- http-flow-values.c: what is searched for, and the values behind it ---- */

/* The matchers of the surrogates and of their base64 forms, made once. -ENOMEM. */
int flow_build_surrogate_matchers(struct netns_http_flow *f);
/* The real value behind surrogate idx, resolved once per flow. */
int flow_value(struct netns_http_flow *f, size_t idx, const char *where,
	       const struct broker_secret **ret, struct al_error *err);
/* Asks, once, before the first response head is passed on, for the values of the surrogates not
 * resolved on this flow that are bound to its host: a host may show a value that was sent on
 * another connection, and every response from it is searched for them. Any failure refuses the
 * response (-ENOKEY): it could not be searched. */
int flow_bound_values(struct netns_http_flow *f, struct al_error *err);
/* Builds the matcher of the real values resolved so far, those bound to the host (and the
 * sidecar's), to turn them back into surrogates (and '*'s), when new ones came since the last
 * response head. */
int flow_refresh_values(struct netns_http_flow *f);

/* Whether p (n bytes) holds a real value the flow knows (resolved, bound or the sidecar's) in
 * any case of its letters: HTTP/2 field names are lower case, so a value an upstream put in one
 * comes folded, where the un-swap (which keeps case) would not find it. */
bool flow_holds_value_nocase(const struct netns_http_flow *f, const char *p, size_t n);

/* ---- http-flow-request.c: request heads ---- */

/* Refuses a surrogate in p: as it is (unless raw_ok, where it is swapped), base64-encoded, or
 * percent-encoded. */
int flow_refuse_surrogates(const struct netns_http_flow *f, const char *p, size_t n, bool raw_ok,
			   const char *where, struct al_error *err);
/* Writes a request field's value (the field named name) with every surrogate swapped for the
 * real value, inside Basic credentials too; a surrogate in an encoded form is refused. */
int flow_put_field_value(struct netns_http_flow *f, struct writer *w, const char *name,
			 size_t name_len, const char *value, size_t value_len,
			 struct al_error *err);
/* Whether an authority (host[:port]) names the flow's host (and port, if one is written). */
bool flow_authority_is_flow(const struct netns_http_flow *f, const char *a, size_t n);
/* Whether req's target is an absolute-form URI naming another origin than the flow's, on a flow
 * that may switch (o.origin_switch). */
bool flow_is_for_other_origin(const struct netns_http_flow *f,
			      const struct netns_http_request *req);
/* Whether a field named so is one of the sidecar's (which replace the sandbox's). */
bool flow_is_sidecar_name(const struct netns_http_flow *f, const char *name, size_t n);
/* Asks for the sidecar headers, once, before the first request is passed on. */
int flow_sidecar(struct netns_http_flow *f, struct al_error *err);
/* Checks, rewrites and passes on a parsed request head, and sets up its body. */
int flow_request_head_done(struct netns_http_flow *f, const struct netns_http_request *req,
			   struct netns_buf *out, struct al_error *err);
/* Before the last step of a Content-Length body: keeps its end (what hold keeps back, then data)
 * where it could begin a surrogate, for the check of the next request line. */
int flow_keep_body_tail(struct netns_http_flow *f, const uint8_t *data, size_t n);

/* ---- http-flow-response.c: response heads ---- */

struct response_head {
	int minor, status;
	const char *reason;
	size_t reason_len;
	struct netns_http_header headers[NETNS_HTTP_HEADERS_MAX];
	size_t n_headers;
	size_t head_len;
	bool has_length, has_te, chunked;
	bool te_coded; /* a transfer coding other than chunked (compression) */
	uint64_t length;
	bool close, keep_alive;
};

/* Parses a response head at the start of buf (len bytes) strictly, and judges its framing
 * fields: 0, -EAGAIN when it is not complete yet, -EMSGSIZE past NETNS_HTTP_HEAD_MAX bytes or
 * NETNS_HTTP_HEADERS_MAX fields, -EBADMSG (err says why). */
int flow_parse_response_head(const char *buf, size_t len, struct response_head *rh,
			     struct al_error *err);
/* Field lines from buf[*pos] to the empty line (trailers too). */
int flow_parse_fields(const char *buf, size_t len, size_t *pos, struct netns_http_header *h,
		      size_t *n, struct al_error *err);
/* Passes on a parsed response head and sets up its body. */
int flow_response_head_done(struct netns_http_flow *f, const struct response_head *rh,
			    struct netns_buf *out, struct al_error *err);
/* Judges a body by its first bytes, n more of which are at p: a compressed body, whatever its
 * headers say, could hold a real value where it cannot be searched for (-EIO). Turns s off once
 * the first bytes are known to be no compressed format's. */
int flow_sniff_body(struct body_sniff *s, const uint8_t *p, size_t n, struct al_error *err);
