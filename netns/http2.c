#define LOG_MODULE "netns"

/* One inspected HTTP/2 connection (RFC 9113), with libnghttp2 (used here only): a server session
 * faces the sandbox, a client session the upstream, and each of the sandbox's streams is bridged
 * to one of the upstream's. What a stream carries is judged exactly as an HTTP/1.1 message is,
 * by the same parts (http-flow-internal.h) on a netns_http_flow of the connection's own:
 * - requests: :authority (and Host) must name the flow's host, CONNECT is refused, a surrogate in
 *   :method, :path, a field name or an encoded form is refused, one in a field value is swapped
 *   (inside Basic credentials too), Accept-Encoding and grpc-accept-encoding become identity,
 *   the sidecar's fields are added (their names lower-cased, as HTTP/2 requires), and bodies
 *   and trailers are scanned as they stream, a surrogate in one refused;
 * - responses: every real value resolved on the flow or bound to its host turns back into its
 *   surrogate in fields, bodies and trailers; a compressed response (Content-Encoding, a body's
 *   first bytes once a value went upstream, grpc-encoding or a gRPC message's compressed flag)
 *   is refused wherever values are looked for;
 * - a refusal ends the stream, not the connection: a 403 (400, 431, 502) when its response has
 *   not begun, else a RST_STREAM; the upstream's stream is cancelled.
 * Limits: 100 streams at once, a 64 KiB field section (NETNS_HTTP_HEAD_MAX) of at most
 * H2_CONTINUATIONS_MAX CONTINUATION frames, libnghttp2's reset-rate limit (rapid reset,
 * CVE-2023-44487) and its flood limits on SETTINGS, PING and RST_STREAM answers. Flow control is
 * end to end: the window given to one side opens only as what it sent is taken by the other (no
 * automatic WINDOW_UPDATE), so a connection buffers at most H2_CONN_WINDOW per direction (plus
 * what replacements add). */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nghttp2/nghttp2.h>

#include "broker/client.h"
#include "common/log.h"
#include "netns/http-flow-internal.h"
#include "netns/sigv4-internal.h"

#define H2_STREAMS_MAX 100
/* What a connection's streams may hold of their rewritten heads, in all: a stream that waits for
 * the upstream (a request queued behind the upstream's own stream limit, a reset not sent yet)
 * keeps its head in libnghttp2's queue after the sandbox is done with it. */
#define H2_HEADS_MAX (1024 * 1024)
#define H2_WINDOW (256 * 1024)	     /* each stream's receive window, on both sides */
#define H2_CONN_WINDOW (1024 * 1024) /* each connection's */
#define H2_CONTINUATIONS_MAX 8
/* Frames a session may hold queued (answers, resets, refusals) before the input that makes more
 * of them waits: a sandbox that sends and never reads would otherwise grow them without end. The
 * input is taken H2_FEED_STEP bytes at a time between two looks at the queues. */
#define H2_QUEUE_MAX 1024
#define H2_FEED_STEP 4096
#define H2_RESET_BURST 1000 /* streams the sandbox may reset at once, then H2_RESET_RATE/s */
#define H2_RESET_RATE 33
#define H2_FLOOD_FACTOR 4 /* a field section this many times the limit ends the connection */
#define GRPC_PREFIX 5	  /* a gRPC message's compressed flag and length */

/* A field section as it came, names and values in text. */
struct h2_field {
	size_t name, name_len, value, value_len;
};

struct h2_fields {
	struct netns_buf text;
	struct h2_field *f;
	size_t n, cap;
	size_t bytes; /* as RFC 9113 6.5.2 counts them: each field 32 more */
	bool over;    /* past NETNS_HTTP_HEAD_MAX or NETNS_HTTP_HEADERS_MAX: not kept */
};

struct h2_stream {
	struct netns_h2 *h;
	struct h2_stream *prev, *next;
	int32_t sid; /* the sandbox's */
	int32_t uid; /* the upstream's; 0 until the request is submitted */
	bool s_closed, u_closed;
	bool dead; /* refused: what comes is dropped */

	/* the request: gathered, then from the sandbox's DATA, checked, to the upstream */
	struct h2_fields req_in;
	struct h2_fields *req_trailers; /* rewritten, sent once the body is through */
	struct netns_buf req_hold, up_body;
	size_t up_unacked; /* bytes of the sandbox's DATA not consumed yet (its window) */
	bool req_end, req_submitted;
	size_t head_bytes; /* of the head as it went upstream (counted in the connection's) */
	bool req_grpc;	   /* application/grpc: refusals are answered as gRPC statuses */

	/* the response: the same the other way */
	struct h2_fields resp_in;
	struct h2_fields *resp_trailers;
	struct netns_buf resp_hold, down_body;
	size_t down_unacked;
	bool resp_end, resp_submitted;
	struct body_sniff sniff;
	bool grpc;
	/* WebSocket over an extended CONNECT (RFC 8441): frames relayed both ways */
	bool ws;
	struct ws_dir ws_up, ws_down;
	uint8_t grpc_prefix[GRPC_PREFIX];
	size_t grpc_have;
	uint64_t grpc_left;
};

struct netns_h2 {
	struct netns_http_flow *f;
	const struct netns_http_flow_options *o;
	nghttp2_session *sb, *up; /* the sandbox's side (server), the upstream's (client) */
	struct h2_stream *streams;
	size_t n_open;	   /* streams the sandbox has open */
	size_t n_streams;  /* streams not freed yet (the sandbox's, and the upstream's after it) */
	size_t head_bytes; /* their rewritten heads */
	bool goaway_sent;
	bool connect_protocol; /* the sandbox was told it may use extended CONNECT */
	int error;	       /* a failure in a callback (-ENOMEM) */
};

/* ---- field sections ---- */

static void fields_clear(struct h2_fields *fs)
{
	buf_clear(&fs->text);
	fs->n = fs->bytes = 0;
	fs->over = false;
}

static void fields_done(struct h2_fields *fs)
{
	if (!fs)
		return;
	netns_buf_done(&fs->text);
	free(fs->f);
	*fs = (struct h2_fields){0};
}

static struct h2_fields *fields_free(struct h2_fields *fs)
{
	fields_done(fs);
	free(fs);
	return NULL;
}

/* Keeps a field; past the limits the section is only counted (-EMSGSIZE beyond the flood
 * bound, which ends the connection). */
static int fields_add(struct h2_fields *fs, const uint8_t *name, size_t nl, const uint8_t *value,
		      size_t vl)
{
	int r;

	fs->bytes += nl + vl + 32;
	if (fs->bytes > (size_t)H2_FLOOD_FACTOR * NETNS_HTTP_HEAD_MAX)
		return -EMSGSIZE;
	if (fs->bytes > NETNS_HTTP_HEAD_MAX || fs->n >= NETNS_HTTP_HEADERS_MAX)
		fs->over = true;
	if (fs->over)
		return 0;
	if (fs->n == fs->cap) {
		size_t cap = fs->cap ? 2 * fs->cap : 16;
		struct h2_field *f = reallocarray(fs->f, cap, sizeof(*f));

		if (!f)
			return -ENOMEM;
		fs->f = f;
		fs->cap = cap;
	}
	fs->f[fs->n] = (struct h2_field){.name = netns_buf_len(&fs->text), .name_len = nl};
	r = netns_buf_append(&fs->text, name, nl, SIZE_MAX);
	fs->f[fs->n].value = netns_buf_len(&fs->text);
	fs->f[fs->n].value_len = vl;
	if (r >= 0)
		r = netns_buf_append(&fs->text, value, vl, SIZE_MAX);
	if (r < 0)
		return r;
	fs->n++;
	return 0;
}

static const char *field_name(const struct h2_fields *fs, size_t i)
{
	return (const char *)netns_buf_head(&fs->text) + fs->f[i].name;
}

static const char *field_value(const struct h2_fields *fs, size_t i)
{
	return (const char *)netns_buf_head(&fs->text) + fs->f[i].value;
}

/* The value of the first field named name (lower case), or NULL. */
static const char *fields_get(const struct h2_fields *fs, const char *name, size_t *ret_len)
{
	for (size_t i = 0; i < fs->n; i++)
		if (ascii_eq(field_name(fs, i), fs->f[i].name_len, name)) {
			*ret_len = fs->f[i].value_len;
			return field_value(fs, i);
		}
	return NULL;
}

/* The name/value pairs of fs, pointing into its text, for nghttp2 (which copies them); sensitive
 * ones are never indexed (HPACK), so no real value stays in a compression table. */
static nghttp2_nv *fields_nv(const struct h2_fields *fs, const bool *sensitive)
{
	nghttp2_nv *nv = calloc(MAX(fs->n, (size_t)1), sizeof(*nv));

	for (size_t i = 0; nv && i < fs->n; i++)
		nv[i] = (nghttp2_nv){
		    .name = (uint8_t *)field_name(fs, i),
		    .value = (uint8_t *)field_value(fs, i),
		    .namelen = fs->f[i].name_len,
		    .valuelen = fs->f[i].value_len,
		    .flags = sensitive && sensitive[i] ? NGHTTP2_NV_FLAG_NO_INDEX : 0,
		};
	return nv;
}

/* Adds a field whose value w wrote into a scratch buffer. */
static int fields_add_buf(struct h2_fields *fs, const char *name, size_t nl,
			  const struct netns_buf *value)
{
	static const uint8_t none;

	return fields_add(fs, (const uint8_t *)name, nl,
			  netns_buf_len(value) ? netns_buf_head(value) : &none,
			  netns_buf_len(value));
}

static bool is_grpc(const struct h2_fields *fs)
{
	size_t n;
	const char *v = fields_get(fs, "content-type", &n);

	return v && n >= 16 && ascii_eq(v, 16, "application/grpc");
}

/* ---- streams ---- */

static struct h2_stream *stream_new(struct netns_h2 *h, int32_t sid)
{
	struct h2_stream *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	st->h = h;
	st->sid = sid;
	st->next = h->streams;
	if (h->streams)
		h->streams->prev = st;
	h->streams = st;
	h->n_open++;
	h->n_streams++;
	return st;
}

static void stream_free(struct h2_stream *st)
{
	struct netns_h2 *h = st->h;

	if (st->prev)
		st->prev->next = st->next;
	else
		h->streams = st->next;
	if (st->next)
		st->next->prev = st->prev;
	fields_done(&st->req_in);
	fields_done(&st->resp_in);
	fields_free(st->req_trailers);
	fields_free(st->resp_trailers);
	netns_buf_done(&st->req_hold);
	netns_buf_done(&st->up_body);
	netns_buf_done(&st->resp_hold);
	netns_buf_done(&st->down_body);
	flow_ws_dir_done(&st->ws_up);
	flow_ws_dir_done(&st->ws_down);
	h->n_streams--;
	h->head_bytes -= st->head_bytes;
	free(st);
}

/* What the stream's buffers held and will not pass on: the senders' windows get it back (the
 * connection's, at least, which every stream shares). */
static void stream_release_windows(struct h2_stream *st)
{
	if (st->up_unacked > 0)
		(void)nghttp2_session_consume(st->h->sb, st->sid, st->up_unacked);
	if (st->down_unacked > 0 && st->uid > 0)
		(void)nghttp2_session_consume(st->h->up, st->uid, st->down_unacked);
	st->up_unacked = st->down_unacked = 0;
}

/* Freed once neither session knows it any more. */
static void stream_maybe_free(struct h2_stream *st)
{
	if (!st->s_closed || (!st->u_closed && st->uid > 0))
		return;
	stream_release_windows(st);
	stream_free(st);
}

/* Gives the window back for n bytes taken from a body buffer (all of it once nothing is held),
 * so that what one side may send is what the other took. */
static void stream_ack(nghttp2_session *s, int32_t id, size_t *unacked, size_t n, bool drained)
{
	size_t k = drained ? *unacked : MIN(n, *unacked);

	if (k == 0)
		return;
	*unacked -= k;
	(void)nghttp2_session_consume(s, id, k);
}

static int status_of(int error)
{
	return error == -EPERM || error == -EPROTO ? 403
	       : error == -EBADMSG		   ? 400
	       : error == -EMSGSIZE		   ? 431
						   : 502;
}

static ssize_t sandbox_read(nghttp2_session *s, int32_t id, uint8_t *buf, size_t length,
			    uint32_t *flags, nghttp2_data_source *source, void *userdata);

/* A refused gRPC call gets a gRPC status, as a trailers-only response (one HEADERS, the end):
 * PERMISSION_DENIED for what the policy refuses, INVALID_ARGUMENT, RESOURCE_EXHAUSTED, else
 * UNAVAILABLE; grpc-message percent-encoded as the gRPC protocol asks. */
static void grpc_refuse(struct h2_stream *st, int status, const char *message)
{
	const char *code = status == 403 ? "7" : status == 400 ? "3" : status == 431 ? "8" : "14";
	char msg[3 * AL_ERROR_MSG_MAX + 16];
	size_t o = 0;

	for (const char *p = "airlock: "; *p; p++)
		msg[o++] = *p;
	for (const unsigned char *p = (const unsigned char *)message; *p && o + 4 < sizeof(msg);
	     p++) {
		if (*p >= 0x20 && *p <= 0x7e && *p != '%')
			msg[o++] = (char)*p;
		else
			o += (size_t)snprintf(msg + o, 4, "%%%02X", *p);
	}
	{
		const nghttp2_nv nv[] = {
		    {(uint8_t *)":status", (uint8_t *)"200", 7, 3, NGHTTP2_NV_FLAG_NONE},
		    {(uint8_t *)"content-type", (uint8_t *)"application/grpc", 12, 16,
		     NGHTTP2_NV_FLAG_NONE},
		    {(uint8_t *)"grpc-status", (uint8_t *)code, 11, strlen(code),
		     NGHTTP2_NV_FLAG_NONE},
		    {(uint8_t *)"grpc-message", (uint8_t *)msg, 12, o, NGHTTP2_NV_FLAG_NONE},
		};

		st->resp_end = true;
		st->resp_submitted = true;
		if (nghttp2_submit_response(st->h->sb, st->sid, nv, ELEMENTSOF(nv), NULL) < 0)
			(void)nghttp2_submit_rst_stream(st->h->sb, NGHTTP2_FLAG_NONE, st->sid,
							NGHTTP2_INTERNAL_ERROR);
	}
}

/* Ends a stream for error (err's message): audited; the sandbox gets an error response when its
 * response has not begun, else a reset; the upstream's stream is cancelled. */
static void stream_refuse(struct h2_stream *st, int error, const char *message)
{
	struct netns_h2 *h = st->h;
	const struct netns_http_flow_ops *ops = h->o->ops;
	char body[AL_ERROR_MSG_MAX + 16];
	int n, status = status_of(error);

	if (st->dead)
		return;
	st->dead = true;
	if (ops && ops->refused)
		ops->refused(h->o->userdata, error, message, (uint32_t)st->sid);
	buf_clear(&st->req_hold);
	buf_clear(&st->up_body);
	buf_clear(&st->resp_hold);
	buf_clear(&st->down_body);
	stream_release_windows(st);
	st->resp_trailers = fields_free(st->resp_trailers);
	if (st->uid > 0 && !st->u_closed)
		(void)nghttp2_submit_rst_stream(h->up, NGHTTP2_FLAG_NONE, st->uid, NGHTTP2_CANCEL);
	if (st->s_closed)
		return;
	if (st->resp_submitted && st->ws && !st->resp_end &&
	    flow_ws_close(&st->down_body, message) >= 0) {
		/* A WebSocket under way is closed as the policy's (1008), then ended. */
		st->resp_end = true;
		(void)nghttp2_session_resume_data(h->sb, st->sid);
		return;
	}
	if (st->resp_submitted) {
		(void)nghttp2_submit_rst_stream(h->sb, NGHTTP2_FLAG_NONE, st->sid,
						NGHTTP2_INTERNAL_ERROR);
		return;
	}
	if (st->req_grpc) {
		grpc_refuse(st, status, message);
		return;
	}
	n = snprintf(body, sizeof(body), "airlock: %s\n", message);
	if (n < 0 || netns_buf_append(&st->down_body, body, (size_t)MIN(n, (int)sizeof(body) - 1),
				      SIZE_MAX) < 0) {
		(void)nghttp2_submit_rst_stream(h->sb, NGHTTP2_FLAG_NONE, st->sid,
						NGHTTP2_INTERNAL_ERROR);
		return;
	}
	{
		char code[4];
		const nghttp2_nv nv[] = {
		    {(uint8_t *)":status", (uint8_t *)code, 7, 3, NGHTTP2_NV_FLAG_NONE},
		    {(uint8_t *)"content-type", (uint8_t *)"text/plain", 12, 10,
		     NGHTTP2_NV_FLAG_NONE},
		};
		const nghttp2_data_provider prd = {.source.ptr = st, .read_callback = sandbox_read};

		(void)snprintf(code, sizeof(code), "%03d", status);
		st->resp_end = true;
		st->resp_submitted = true;
		if (nghttp2_submit_response(h->sb, st->sid, nv, ELEMENTSOF(nv), &prd) < 0)
			(void)nghttp2_submit_rst_stream(h->sb, NGHTTP2_FLAG_NONE, st->sid,
							NGHTTP2_INTERNAL_ERROR);
	}
}

/* ---- the body providers ---- */

/* Trailers to send after a body: its provider ends the data without END_STREAM. */
static int submit_trailers(nghttp2_session *s, int32_t id, struct h2_fields **fs, uint32_t *flags)
{
	_cleanup_free_ nghttp2_nv *nv = NULL;
	int r;

	nv = fields_nv(*fs, NULL);
	if (!nv)
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	r = nghttp2_submit_trailer(s, id, nv, (*fs)->n);
	*fs = fields_free(*fs);
	if (r < 0)
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	*flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
	return 0;
}

/* Copies what body holds, up to length, into buf; the end when the stream's side ended and
 * nothing is held; deferred when nothing is there yet. */
static ssize_t body_read(nghttp2_session *s, nghttp2_session *from, int32_t id, int32_t from_id,
			 struct netns_buf *body, const struct netns_buf *hold, size_t *unacked,
			 bool end, struct h2_fields **trailers, uint8_t *buf, size_t length,
			 uint32_t *flags)
{
	size_t n = MIN(length, netns_buf_len(body));
	bool drained;

	if (n > 0) {
		memcpy(buf, netns_buf_head(body), n);
		buf_drop(body, n);
	}
	drained = netns_buf_len(body) == 0 && netns_buf_len(hold) == 0;
	if (from_id > 0)
		stream_ack(from, from_id, unacked, n, drained);
	if (drained && end) {
		*flags |= NGHTTP2_DATA_FLAG_EOF;
		if (*trailers && submit_trailers(s, id, trailers, flags) < 0)
			return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
		return (ssize_t)n;
	}
	return n > 0 ? (ssize_t)n : NGHTTP2_ERR_DEFERRED;
}

/* The request body, to the upstream. */
static ssize_t upstream_read(nghttp2_session *s, int32_t id, uint8_t *buf, size_t length,
			     uint32_t *flags, nghttp2_data_source *source, void *userdata)
{
	struct h2_stream *st = source->ptr;

	(void)userdata;
	return body_read(s, st->h->sb, id, st->s_closed ? 0 : st->sid, &st->up_body, &st->req_hold,
			 &st->up_unacked, st->req_end, &st->req_trailers, buf, length, flags);
}

/* The response body, to the sandbox. */
static ssize_t sandbox_read(nghttp2_session *s, int32_t id, uint8_t *buf, size_t length,
			    uint32_t *flags, nghttp2_data_source *source, void *userdata)
{
	struct h2_stream *st = source->ptr;

	(void)userdata;
	return body_read(s, st->h->up, id, st->u_closed ? 0 : st->uid, &st->down_body,
			 &st->resp_hold, &st->down_unacked, st->resp_end, &st->resp_trailers, buf,
			 length, flags);
}

/* ---- requests ---- */

static bool is_pseudo(const struct h2_fields *fs, size_t i)
{
	return fs->f[i].name_len > 0 && field_name(fs, i)[0] == ':';
}

/* Checks the pseudo-fields (libnghttp2 made sure they are there, once each, well-formed). */
static int check_request(struct netns_h2 *h, const struct h2_fields *in, struct al_error *err)
{
	const char *v;
	size_t n;
	int r;

	v = fields_get(in, ":method", &n);
	if (v && ascii_eq(v, n, "connect")) {
		const char *proto = fields_get(in, ":protocol", &n);

		if (!proto || !ascii_eq(proto, n, "websocket"))
			return al_error_set(err, -EBADMSG,
					    "CONNECT inside an inspected connection");
	}
	if (!fields_get(in, ":authority", &n) && !fields_get(in, "host", &n))
		return al_error_set(err, -EBADMSG, "The request names no host");
	v = fields_get(in, ":authority", &n);
	if (v && !flow_authority_is_flow(h->f, v, n))
		return al_error_set(err, -EPROTO, "The :authority names another host than %s:%u",
				    h->o->host, h->o->port);
	v = fields_get(in, "host", &n);
	if (v && !flow_authority_is_flow(h->f, v, n))
		return al_error_set(err, -EPROTO, "The Host header names another host than %s:%u",
				    h->o->host, h->o->port);
	for (size_t i = 0; i < in->n; i++) {
		const char *name = field_name(in, i);
		size_t nl = in->f[i].name_len;

		r = flow_refuse_surrogates(h->f, name, nl, false, "request header name", err);
		if (r >= 0 && is_pseudo(in, i))
			r = flow_refuse_surrogates(
			    h->f, field_value(in, i), in->f[i].value_len, false,
			    ascii_eq(name, nl, ":path") ? "request target" : "request head", err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The request's fields as they go upstream: pseudo-fields as they came, surrogates swapped in
 * values, Accept-Encoding and grpc-accept-encoding identity, the sidecar's fields added. */
static int rewrite_fields(struct netns_h2 *h, const struct h2_fields *in, struct h2_fields *out,
			  bool **ret_sensitive, struct al_error *err)
{
	struct netns_buf value = {0};
	struct writer w = {.b = &value, .max = HEAD_OUT_MAX};
	_cleanup_free_ bool *sensitive = NULL;
	size_t total = 0;
	int r = 0;

	sensitive = calloc(in->n + SIDECAR_LINES_MAX + 1, sizeof(*sensitive));
	if (!sensitive)
		return -ENOMEM;
	for (size_t i = 0; r >= 0 && i < in->n; i++) {
		const char *name = field_name(in, i), *v = field_value(in, i);
		size_t nl = in->f[i].name_len, vl = in->f[i].value_len;

		/* A negotiated WebSocket extension (permessage-deflate) would hide values. */
		if (ascii_eq(name, nl, "proxy-authorization") ||
		    ascii_eq(name, nl, "sec-websocket-extensions") ||
		    flow_is_sidecar_name(h->f, name, nl))
			continue;
		buf_clear(&value);
		w.r = 0;
		if (ascii_eq(name, nl, "accept-encoding") ||
		    ascii_eq(name, nl, "grpc-accept-encoding"))
			put_str(&w, "identity");
		else if (is_pseudo(in, i))
			put(&w, v, vl);
		else
			r = flow_put_field_value(h->f, &w, name, nl, v, vl, err);
		if (r >= 0 && w.r < 0)
			r = w.r;
		if (r >= 0) {
			sensitive[out->n] = vl != netns_buf_len(&value) ||
					    (vl > 0 && memcmp(v, netns_buf_head(&value), vl) != 0);
			total += nl + netns_buf_len(&value);
			r = fields_add_buf(out, name, nl, &value);
		}
	}
	for (size_t i = 0; r >= 0 && h->f->sidecar && i < h->f->n_side; i++) {
		const struct sidecar_line *sl = &h->f->side[i];
		char name[256];

		if (sl->name_len >= sizeof(name)) {
			r = al_error_set(err, -EINVAL, "Sidecar header %zu is too long", i + 1);
			break;
		}
		for (size_t k = 0; k < sl->name_len; k++)
			name[k] =
			    (char)ascii_lower((unsigned char)h->f->sidecar->data[sl->name + k]);
		sensitive[out->n] = true;
		total += sl->name_len + sl->value_len;
		r = fields_add(out, (const uint8_t *)name, sl->name_len,
			       (const uint8_t *)h->f->sidecar->data + sl->value, sl->value_len);
	}
	netns_buf_done(&value);
	if (r >= 0 && (out->over || total > HEAD_OUT_MAX))
		r = al_error_set(err, -EMSGSIZE,
				 "The request head is longer than %d bytes with values swapped in",
				 HEAD_OUT_MAX);
	if (r >= 0 && ret_sensitive)
		*ret_sensitive = TAKE_PTR(sensitive);
	return r;
}

/* A request signed with an AWS key's surrogate (SigV4, http-flow-sigv4.c) is verified with the
 * surrogate secret and signed again with the real one, as in HTTP/1.1: the fields are seen as an
 * HTTP/1.1 head (:authority as its Host, which SigV4 signs), and *out gets them back with the
 * re-signed :path, Authorization and X-Amz-Security-Token. 1 then, 0 for any other request. A
 * body the request does not hash cannot be gathered here: such a request is refused. */
static int sigv4_resign(struct netns_h2 *h, const struct h2_fields *in, struct h2_fields *out,
			struct al_error *err)
{
	_cleanup_(flow_sigv4_text_done) struct flow_sigv4_text text = {0};
	_cleanup_free_ struct netns_http_request *req = NULL, *re = NULL;
	bool own_host = !fields_get(in, "host", &(size_t){0});
	const char *v;
	size_t n;
	int r;

	req = calloc(1, sizeof(*req));
	re = calloc(1, sizeof(*re));
	if (!req || !re)
		return -ENOMEM;
	req->minor_version = 1;
	req->keep_alive = true;
	req->method = fields_get(in, ":method", &req->method_len);
	req->target = fields_get(in, ":path", &req->target_len);
	if (!req->method || !req->target)
		return 0;
	v = fields_get(in, ":authority", &n);
	if (own_host && v && req->n_headers < NETNS_HTTP_HEADERS_MAX)
		req->headers[req->n_headers++] = (struct netns_http_header){
		    .name = "host", .name_len = 4, .value = v, .value_len = n};
	for (size_t i = 0; i < in->n && req->n_headers < NETNS_HTTP_HEADERS_MAX; i++)
		if (!is_pseudo(in, i))
			req->headers[req->n_headers++] = (struct netns_http_header){
			    .name = field_name(in, i),
			    .name_len = in->f[i].name_len,
			    .value = field_value(in, i),
			    .value_len = in->f[i].value_len,
			};
	r = flow_sigv4_request(h->f, req, NULL, 0, re, &text, NULL, err);
	if (r <= 0)
		return r;
	for (size_t i = 0; r >= 0 && i < in->n && is_pseudo(in, i); i++) {
		const char *name = field_name(in, i);
		size_t nl = in->f[i].name_len;

		if (ascii_eq(name, nl, ":path"))
			r = fields_add(out, (const uint8_t *)name, nl, (const uint8_t *)re->target,
				       re->target_len);
		else
			r = fields_add(out, (const uint8_t *)name, nl,
				       (const uint8_t *)field_value(in, i), in->f[i].value_len);
	}
	for (size_t i = own_host ? 1 : 0; r >= 0 && i < re->n_headers; i++)
		r = fields_add(out, (const uint8_t *)re->headers[i].name, re->headers[i].name_len,
			       (const uint8_t *)re->headers[i].value, re->headers[i].value_len);
	return r < 0 ? r : 1;
}

static void request_head(struct h2_stream *st)
{
	struct netns_h2 *h = st->h;
	struct h2_fields out = {0}, resigned = {0};
	const struct h2_fields *in = &st->req_in;
	_cleanup_free_ bool *sensitive = NULL;
	_cleanup_free_ nghttp2_nv *nv = NULL;
	const nghttp2_data_provider prd = {.source.ptr = st, .read_callback = upstream_read};
	struct al_error err = {0};
	int32_t id;
	int r;

	h->f->stream = (uint32_t)st->sid;
	st->req_grpc = is_grpc(&st->req_in);
	st->ws = fields_get(&st->req_in, ":protocol", &(size_t){0}) != NULL;
	if (st->ws) {
		netns_ws_parser_init(&st->ws_up.ps, true);
		netns_ws_parser_init(&st->ws_down.ps, false);
	}
	if (st->req_in.over)
		r = al_error_set(&err, -EMSGSIZE, "The request head is longer than %d bytes",
				 NETNS_HTTP_HEAD_MAX);
	else
		r = sigv4_resign(h, &st->req_in, &resigned, &err);
	if (r > 0)
		in = &resigned;
	if (r >= 0)
		r = check_request(h, in, &err);
	if (r >= 0)
		r = flow_sidecar(h->f, &err);
	if (r >= 0)
		r = rewrite_fields(h, in, &out, &sensitive, &err);
	h->f->stream = 0;
	fields_done(&st->req_in);
	fields_done(&resigned);
	if (r >= 0) {
		nv = fields_nv(&out, sensitive);
		r = nv ? 0 : -ENOMEM;
	}
	if (r >= 0) {
		st->head_bytes = netns_buf_len(&out.text);
		h->head_bytes += st->head_bytes;
		id = nghttp2_submit_request(h->up, NULL, nv, out.n, st->req_end ? NULL : &prd, st);
		if (id < 0)
			r = al_error_set(&err, -EIO, "The upstream takes no more streams: %s",
					 nghttp2_strerror(id));
		else
			st->uid = id;
	}
	fields_done(&out); /* nghttp2 copied them; this copy of real values is wiped */
	st->req_submitted = true;
	if (r < 0)
		stream_refuse(st, r, err.msg[0] ? err.msg : "The request cannot be passed on");
}

/* Trailers of the request: checked and swapped as fields are, sent after the body. */
static void request_trailers(struct h2_stream *st)
{
	struct netns_h2 *h = st->h;
	struct al_error err = {0};
	struct h2_fields *out;
	int r;

	out = calloc(1, sizeof(*out));
	if (!out) {
		stream_refuse(st, -ENOMEM, "Out of memory");
		return;
	}
	h->f->stream = (uint32_t)st->sid;
	r = st->req_in.over ? al_error_set(&err, -EMSGSIZE, "The request trailers are too long")
			    : 0;
	/* As in an HTTP/1.1 chunked body's trailers, a surrogate is refused, not swapped. */
	for (size_t i = 0; r >= 0 && i < st->req_in.n; i++) {
		r = flow_refuse_surrogates(h->f, field_name(&st->req_in, i),
					   st->req_in.f[i].name_len, false, "request trailer name",
					   &err);
		if (r >= 0)
			r = flow_refuse_surrogates(h->f, field_value(&st->req_in, i),
						   st->req_in.f[i].value_len, false,
						   "request trailer", &err);
	}
	if (r >= 0)
		r = rewrite_fields(h, &st->req_in, out, NULL, &err);
	h->f->stream = 0;
	fields_done(&st->req_in);
	if (r < 0) {
		fields_free(out);
		stream_refuse(st, r, err.msg);
		return;
	}
	fields_free(st->req_trailers);
	st->req_trailers = out;
}

static void request_body_end(struct h2_stream *st)
{
	struct al_error err = {0};
	int r;

	st->req_end = true;
	if (st->dead)
		return;
	r = flow_body_pass(&st->req_hold, &st->h->f->surrogates, "request body", NULL, 0, true,
			   false, &st->up_body, &err);
	if (r < 0) {
		stream_refuse(st, r, err.msg);
		return;
	}
	if (st->uid > 0)
		(void)nghttp2_session_resume_data(st->h->up, st->uid);
}

/* ---- responses ---- */

static bool value_is_identity(const char *v, size_t n)
{
	size_t a = http_span(v, n, 0, http_is_ows), b = n;

	while (b > a && http_is_ows((unsigned char)v[b - 1]))
		b--;
	return ascii_eq(v + a, b - a, "identity");
}

/* The response's fields with every real value turned back into its surrogate. */
static int unswap_fields(struct netns_h2 *h, const struct h2_fields *in, struct h2_fields *out,
			 bool drop_length, struct al_error *err)
{
	struct netns_buf buf = {0};
	struct writer w = {.b = &buf, .max = HEAD_OUT_MAX};
	int r = 0;

	for (size_t i = 0; r >= 0 && i < in->n; i++) {
		const char *name = field_name(in, i), *v = field_value(in, i);
		size_t nl = in->f[i].name_len, vl = in->f[i].value_len;
		struct match mt;

		/* A name holding a value cannot be turned back (a surrogate may have upper-case
		 * letters, which a name may not): the response is refused. */
		if (flow_holds_value_nocase(h->f, name, nl)) {
			r = al_error_set(err, -EIO,
					 "A response field's name holds a credential's value");
			break;
		}
		if (ascii_eq(name, nl, "content-length")) {
			if (flow_matcher_find(&h->f->values_m, (const uint8_t *)v,
					      (const uint8_t *)v + vl, &mt))
				r = al_error_set(err, -EBADMSG,
						 "The response's content-length is a credential's "
						 "value");
			if (drop_length)
				continue;
		}
		buf_clear(&buf);
		w.r = 0;
		flow_put_replaced(&w, &h->f->values_m, v, vl);
		r = r < 0 ? r : w.r;
		if (r >= 0)
			r = fields_add_buf(out, name, nl, &buf);
	}
	netns_buf_done(&buf);
	if (r >= 0 && out->over)
		r = al_error_set(err, -EMSGSIZE, "The response head is longer than %d bytes",
				 NETNS_HTTP_HEAD_MAX);
	return r;
}

static void response_head(struct h2_stream *st, bool end)
{
	struct netns_h2 *h = st->h;
	const nghttp2_data_provider prd = {.source.ptr = st, .read_callback = sandbox_read};
	struct h2_fields out = {0};
	_cleanup_free_ nghttp2_nv *nv = NULL;
	struct al_error err = {0};
	const char *v;
	size_t n;
	int r;

	r = st->resp_in.over
		? al_error_set(&err, -EMSGSIZE, "The response head is longer than %d bytes",
			       NETNS_HTTP_HEAD_MAX)
		: flow_bound_values(h->f, &err);
	if (r >= 0)
		r = flow_refresh_values(h->f);
	if (r >= 0 && h->f->values_m.n > 0) {
		v = fields_get(&st->resp_in, "content-encoding", &n);
		if (v && !value_is_identity(v, n))
			r = al_error_set(&err, -EIO,
					 "The upstream sent a compressed response, which cannot be "
					 "searched for credential values");
		v = fields_get(&st->resp_in, "grpc-encoding", &n);
		if (v && !value_is_identity(v, n))
			r = al_error_set(&err, -EIO,
					 "The upstream sent compressed gRPC messages, which cannot "
					 "be searched for credential values");
	}
	if (r >= 0 && st->ws && fields_get(&st->resp_in, "sec-websocket-extensions", &n))
		r = al_error_set(&err, -EPROTO,
				 "The upstream agreed to a WebSocket extension, which no request "
				 "offered");
	if (r >= 0)
		r = unswap_fields(h, &st->resp_in, &out, !h->f->values_m.same_len, &err);
	st->grpc = is_grpc(&st->resp_in);
	fields_done(&st->resp_in);
	if (r >= 0) {
		nv = fields_nv(&out, NULL);
		r = nv ? 0 : -ENOMEM;
	}
	if (r >= 0) {
		st->resp_end = end;
		st->resp_submitted = true;
		st->sniff = (struct body_sniff){.on = h->f->values_m_sent};
		r = nghttp2_submit_response(h->sb, st->sid, nv, out.n, end ? NULL : &prd);
		if (r < 0)
			r = al_error_set(&err, -EIO, "The response cannot be passed on: %s",
					 nghttp2_strerror(r));
	}
	fields_done(&out);
	if (r < 0)
		stream_refuse(st, r, err.msg);
}

static void response_trailers(struct h2_stream *st)
{
	struct al_error err = {0};
	struct h2_fields *out;
	int r;

	out = calloc(1, sizeof(*out));
	r = out ? unswap_fields(st->h, &st->resp_in, out, false, &err) : -ENOMEM;
	fields_done(&st->resp_in);
	if (r < 0) {
		fields_free(out);
		stream_refuse(st, r, err.msg[0] ? err.msg : "Out of memory");
		return;
	}
	fields_free(st->resp_trailers);
	st->resp_trailers = out;
}

/* A gRPC message whose compressed flag is set could hide a value: refused where values are
 * looked for (the prefixes are followed across DATA frames). */
static int grpc_scan(struct h2_stream *st, const uint8_t *p, size_t n, struct al_error *err)
{
	while (n > 0) {
		size_t k;

		if (st->grpc_left > 0) {
			k = (size_t)MIN((uint64_t)n, st->grpc_left);
			st->grpc_left -= k;
			p += k;
			n -= k;
			continue;
		}
		k = MIN(n, GRPC_PREFIX - st->grpc_have);
		memcpy(st->grpc_prefix + st->grpc_have, p, k);
		st->grpc_have += k;
		p += k;
		n -= k;
		if (st->grpc_have < GRPC_PREFIX)
			break;
		st->grpc_have = 0;
		if (st->grpc_prefix[0] & 1)
			return al_error_set(err, -EIO,
					    "The upstream sent a compressed gRPC message, which "
					    "cannot be searched for credential values");
		st->grpc_left = (uint64_t)st->grpc_prefix[1] << 24 |
				(uint64_t)st->grpc_prefix[2] << 16 |
				(uint64_t)st->grpc_prefix[3] << 8 | st->grpc_prefix[4];
	}
	return 0;
}

/* WebSocket frames of one direction (client: the sandbox's), relayed into body: surrogates
 * swapped (refused toward a host their credential is not bound to), real values turned back. */
static int ws_relay(struct h2_stream *st, bool client, const uint8_t *data, size_t len,
		    struct netns_buf *body, struct al_error *err)
{
	struct netns_http_flow *f = st->h->f;
	struct netns_buf piece = {0};
	size_t done = 0;
	int r = 0;

	f->stream = (uint32_t)st->sid;
	while (r >= 0 && done < len) {
		ssize_t n = flow_ws_relay(f, client ? &st->ws_up : &st->ws_down, client,
					  data + done, len - done, &piece, err);

		if (n < 0)
			r = (int)n;
		else
			done += (size_t)n;
		if (r >= 0 && netns_buf_len(&piece) > 0)
			r = netns_buf_append(body, netns_buf_head(&piece), netns_buf_len(&piece),
					     SIZE_MAX);
		buf_clear(&piece);
		if (r >= 0 && n == 0 && done < len)
			r = al_error_set(err, -EIO, "The WebSocket relay did not move");
	}
	f->stream = 0;
	netns_buf_done(&piece);
	return r;
}

static void response_data(struct h2_stream *st, const uint8_t *data, size_t len)
{
	struct netns_h2 *h = st->h;
	struct al_error err = {0};
	int r = 0;

	if (st->ws) {
		r = ws_relay(st, false, data, len, &st->down_body, &err);
		if (r < 0) {
			stream_refuse(st, r, err.msg);
			return;
		}
		(void)nghttp2_session_resume_data(h->sb, st->sid);
		return;
	}
	if (st->sniff.on)
		r = flow_sniff_body(&st->sniff, data, len, &err);
	if (r >= 0 && st->grpc && h->f->values_m.n > 0)
		r = grpc_scan(st, data, len, &err);
	if (r >= 0)
		r = flow_body_pass(&st->resp_hold, &h->f->values_m, NULL, data, len, false, false,
				   &st->down_body, &err);
	if (r < 0) {
		stream_refuse(st, r, err.msg);
		return;
	}
	(void)nghttp2_session_resume_data(h->sb, st->sid);
}

static void response_body_end(struct h2_stream *st)
{
	struct al_error err = {0};
	int r;

	st->resp_end = true;
	if (st->dead || !st->resp_submitted)
		return;
	r = flow_body_pass(&st->resp_hold, &st->h->f->values_m, NULL, NULL, 0, true, false,
			   &st->down_body, &err);
	if (r < 0) {
		stream_refuse(st, r, err.msg);
		return;
	}
	(void)nghttp2_session_resume_data(st->h->sb, st->sid);
}

/* ---- the sandbox's session ---- */

static struct h2_stream *stream_of(nghttp2_session *s, int32_t id)
{
	return nghttp2_session_get_stream_user_data(s, id);
}

static int sb_begin_headers(nghttp2_session *s, const nghttp2_frame *frame, void *userdata)
{
	struct netns_h2 *h = userdata;
	struct h2_stream *st;

	if (frame->hd.type != NGHTTP2_HEADERS)
		return 0;
	if (frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
		/* Streams the sandbox is done with but the upstream is not count too, so that
		 * resets cannot pile up requests behind a slow upstream: past the bounds, a new
		 * stream is refused (the client may try it again). */
		if (h->n_streams >= H2_STREAMS_MAX || h->head_bytes >= H2_HEADS_MAX) {
			(void)nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, frame->hd.stream_id,
							NGHTTP2_REFUSED_STREAM);
			return 0;
		}
		st = stream_new(h, frame->hd.stream_id);
		if (!st || nghttp2_session_set_stream_user_data(s, frame->hd.stream_id, st) < 0) {
			h->error = -ENOMEM;
			return NGHTTP2_ERR_CALLBACK_FAILURE;
		}
		return 0;
	}
	st = stream_of(s, frame->hd.stream_id);
	if (st)
		fields_clear(&st->req_in);
	return 0;
}

/* A field of the sandbox's (in), or of the upstream's. */
static int on_field(struct netns_h2 *h, struct h2_stream *st, bool request, const uint8_t *name,
		    size_t nl, const uint8_t *value, size_t vl)
{
	int r;

	if (!st)
		return 0;
	r = fields_add(request ? &st->req_in : &st->resp_in, name, nl, value, vl);
	if (r == -ENOMEM)
		h->error = r;
	/* A section many times the limit is a flood (CONTINUATION frames of tiny fields): the
	 * connection ends. */
	return r < 0 ? NGHTTP2_ERR_CALLBACK_FAILURE : 0;
}

static int sb_header(nghttp2_session *s, const nghttp2_frame *frame, const uint8_t *name, size_t nl,
		     const uint8_t *value, size_t vl, uint8_t flags, void *userdata)
{
	(void)flags;
	return on_field(userdata, stream_of(s, frame->hd.stream_id), true, name, nl, value, vl);
}

static int sb_frame_recv(nghttp2_session *s, const nghttp2_frame *frame, void *userdata)
{
	struct h2_stream *st;
	bool end = frame->hd.flags & NGHTTP2_FLAG_END_STREAM;

	(void)userdata;
	if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA)
		return 0;
	st = stream_of(s, frame->hd.stream_id);
	if (!st)
		return 0;
	if (frame->hd.type == NGHTTP2_HEADERS) {
		if (end)
			st->req_end = true;
		if (!st->req_submitted)
			request_head(st);
		else if (!st->dead)
			request_trailers(st);
	}
	if (end && st->req_submitted)
		request_body_end(st);
	return 0;
}

static int sb_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *data, size_t len,
		   void *userdata)
{
	struct h2_stream *st = stream_of(s, id);
	struct al_error err = {0};
	int r;

	(void)flags;
	(void)userdata;
	if (!st || st->dead || st->s_closed) {
		(void)nghttp2_session_consume(s, id, len);
		return 0;
	}
	st->up_unacked += len;
	if (st->ws)
		r = ws_relay(st, true, data, len, &st->up_body, &err);
	else
		r = flow_body_pass(&st->req_hold, &st->h->f->surrogates, "request body", data, len,
				   false, false, &st->up_body, &err);
	if (r < 0) {
		stream_refuse(st, r, err.msg);
		return 0;
	}
	if (st->uid > 0)
		(void)nghttp2_session_resume_data(st->h->up, st->uid);
	return 0;
}

static int sb_stream_close(nghttp2_session *s, int32_t id, uint32_t code, void *userdata)
{
	struct netns_h2 *h = userdata;
	struct h2_stream *st = stream_of(s, id);

	if (!st)
		return 0;
	st->s_closed = true;
	h->n_open--;
	/* The sandbox reset it, or it ended before the upstream's side did. */
	if (st->uid > 0 && !st->u_closed && (code != NGHTTP2_NO_ERROR || !st->resp_end))
		(void)nghttp2_submit_rst_stream(h->up, NGHTTP2_FLAG_NONE, st->uid,
						code != NGHTTP2_NO_ERROR ? code : NGHTTP2_CANCEL);
	(void)nghttp2_session_set_stream_user_data(s, id, NULL);
	stream_maybe_free(st);
	return 0;
}

/* ---- the upstream's session ---- */

static int up_begin_headers(nghttp2_session *s, const nghttp2_frame *frame, void *userdata)
{
	struct h2_stream *st = stream_of(s, frame->hd.stream_id);

	(void)userdata;
	if (st && frame->hd.type == NGHTTP2_HEADERS)
		fields_clear(&st->resp_in);
	return 0;
}

static int up_header(nghttp2_session *s, const nghttp2_frame *frame, const uint8_t *name, size_t nl,
		     const uint8_t *value, size_t vl, uint8_t flags, void *userdata)
{
	(void)flags;
	if (frame->hd.type == NGHTTP2_PUSH_PROMISE)
		return 0; /* push is off (SETTINGS_ENABLE_PUSH 0): nghttp2 refuses it */
	return on_field(userdata, stream_of(s, frame->hd.stream_id), false, name, nl, value, vl);
}

/* The sandbox may use extended CONNECT (WebSocket over HTTP/2) once the upstream said it may
 * (RFC 8441 3: a setting that, once 1, stays so). */
static void follow_connect_protocol(struct netns_h2 *h)
{
	const nghttp2_settings_entry e = {NGHTTP2_SETTINGS_ENABLE_CONNECT_PROTOCOL, 1};

	if (h->connect_protocol || nghttp2_session_get_remote_settings(
				       h->up, NGHTTP2_SETTINGS_ENABLE_CONNECT_PROTOCOL) != 1)
		return;
	if (nghttp2_submit_settings(h->sb, NGHTTP2_FLAG_NONE, &e, 1) == 0)
		h->connect_protocol = true;
}

static int up_frame_recv(nghttp2_session *s, const nghttp2_frame *frame, void *userdata)
{
	struct h2_stream *st;
	bool end = frame->hd.flags & NGHTTP2_FLAG_END_STREAM;
	const char *status;
	size_t n;

	if (frame->hd.type == NGHTTP2_SETTINGS && !(frame->hd.flags & NGHTTP2_FLAG_ACK))
		follow_connect_protocol(userdata);
	if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA)
		return 0;
	st = stream_of(s, frame->hd.stream_id);
	if (!st || st->dead || st->s_closed)
		return 0;
	if (frame->hd.type == NGHTTP2_HEADERS && !st->resp_submitted) {
		status = fields_get(&st->resp_in, ":status", &n);
		/* Interim responses (1xx; nghttp2 refuses a 101) are not passed on. */
		if (!end && status && n == 3 && status[0] == '1') {
			fields_clear(&st->resp_in);
			return 0;
		}
		response_head(st, end);
		return 0;
	}
	if (frame->hd.type == NGHTTP2_HEADERS)
		response_trailers(st);
	if (end)
		response_body_end(st);
	return 0;
}

static int up_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *data, size_t len,
		   void *userdata)
{
	struct h2_stream *st = stream_of(s, id);

	(void)flags;
	(void)userdata;
	if (!st || st->dead || st->s_closed) {
		(void)nghttp2_session_consume(s, id, len);
		return 0;
	}
	st->down_unacked += len;
	response_data(st, data, len);
	return 0;
}

static int up_stream_close(nghttp2_session *s, int32_t id, uint32_t code, void *userdata)
{
	struct netns_h2 *h = userdata;
	struct h2_stream *st = stream_of(s, id);
	char msg[96];

	if (!st)
		return 0;
	st->u_closed = true;
	(void)nghttp2_session_set_stream_user_data(s, id, NULL);
	if (!st->s_closed && !st->dead && !st->resp_end) {
		if (code == NGHTTP2_REFUSED_STREAM) {
			/* Nothing was processed: the sandbox may try again. */
			(void)nghttp2_submit_rst_stream(h->sb, NGHTTP2_FLAG_NONE, st->sid, code);
			st->dead = true;
		} else {
			(void)snprintf(msg, sizeof(msg), "The upstream ended the stream (%s)",
				       nghttp2_http2_strerror(code));
			stream_refuse(st, -ECONNRESET, msg);
		}
	}
	stream_maybe_free(st);
	return 0;
}

/* ---- the connection ---- */

static int session_options(nghttp2_option **ret)
{
	nghttp2_option *opt;

	if (nghttp2_option_new(&opt) != 0)
		return -ENOMEM;
	nghttp2_option_set_no_auto_window_update(opt, 1);
	nghttp2_option_set_max_continuations(opt, H2_CONTINUATIONS_MAX);
	nghttp2_option_set_stream_reset_rate_limit(opt, H2_RESET_BURST, H2_RESET_RATE);
	nghttp2_option_set_max_send_header_block_length(opt, HEAD_OUT_MAX + 4096);
	*ret = opt;
	return 0;
}

static int callbacks(bool server, nghttp2_session_callbacks **ret)
{
	nghttp2_session_callbacks *cb;

	if (nghttp2_session_callbacks_new(&cb) != 0)
		return -ENOMEM;
	nghttp2_session_callbacks_set_on_begin_headers_callback(cb, server ? sb_begin_headers
									   : up_begin_headers);
	nghttp2_session_callbacks_set_on_header_callback(cb, server ? sb_header : up_header);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb, server ? sb_frame_recv
									: up_frame_recv);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, server ? sb_data : up_data);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, server ? sb_stream_close
									  : up_stream_close);
	*ret = cb;
	return 0;
}

static int session_new(struct netns_h2 *h, bool server)
{
	nghttp2_session_callbacks *cb = NULL;
	nghttp2_option *opt = NULL;
	const nghttp2_settings_entry settings[] = {
	    {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, H2_STREAMS_MAX},
	    {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, H2_WINDOW},
	    {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, NETNS_HTTP_HEAD_MAX},
	    {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
	};
	nghttp2_session **s = server ? &h->sb : &h->up;
	int r;

	r = callbacks(server, &cb);
	if (r >= 0)
		r = session_options(&opt);
	if (r >= 0)
		r = server ? nghttp2_session_server_new2(s, cb, h, opt)
			   : nghttp2_session_client_new2(s, cb, h, opt);
	nghttp2_session_callbacks_del(cb);
	nghttp2_option_del(opt);
	if (r != 0)
		return -ENOMEM;
	/* A server sends no ENABLE_PUSH. */
	r = nghttp2_submit_settings(*s, NGHTTP2_FLAG_NONE, settings,
				    server ? ELEMENTSOF(settings) - 1 : ELEMENTSOF(settings));
	if (r == 0)
		r = nghttp2_session_set_local_window_size(*s, NGHTTP2_FLAG_NONE, 0, H2_CONN_WINDOW);
	return r == 0 ? 0 : -ENOMEM;
}

int netns_h2_new(const struct netns_http_flow_options *o, struct netns_h2 **ret)
{
	_cleanup_(netns_h2_freep) struct netns_h2 *h = NULL;
	int r;

	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->o = o;
	r = netns_http_flow_new(o, &h->f);
	if (r >= 0)
		r = session_new(h, true);
	if (r >= 0)
		r = session_new(h, false);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(h);
	return 0;
}

struct netns_h2 *netns_h2_free(struct netns_h2 *h)
{
	if (!h)
		return NULL;
	/* The sessions first: deleting them calls nothing back. */
	nghttp2_session_del(h->sb);
	nghttp2_session_del(h->up);
	while (h->streams)
		stream_free(h->streams);
	netns_http_flow_free(h->f);
	free(h);
	return NULL;
}

static bool queues_full(const struct netns_h2 *h)
{
	return nghttp2_session_get_outbound_queue_size(h->sb) > H2_QUEUE_MAX ||
	       nghttp2_session_get_outbound_queue_size(h->up) > H2_QUEUE_MAX;
}

static ssize_t feed(struct netns_h2 *h, nghttp2_session *s, const uint8_t *buf, size_t len,
		    const char *from, struct al_error *err)
{
	size_t done = 0;

	while (done < len && !queues_full(h)) {
		ssize_t n =
		    nghttp2_session_mem_recv(s, buf + done, MIN(len - done, (size_t)H2_FEED_STEP));

		if (h->error < 0)
			return al_error_set(err, h->error, "Out of memory in HTTP/2 with %s", from);
		if (n < 0)
			return al_error_set(err, n == NGHTTP2_ERR_NOMEM ? -ENOMEM : -EBADMSG,
					    "HTTP/2 from %s: %s", from, nghttp2_strerror((int)n));
		done += (size_t)n;
	}
	return (ssize_t)done;
}

ssize_t netns_h2_sandbox_in(struct netns_h2 *h, const uint8_t *buf, size_t len,
			    struct al_error *err)
{
	return feed(h, h->sb, buf, len, "the sandbox", err);
}

ssize_t netns_h2_upstream_in(struct netns_h2 *h, const uint8_t *buf, size_t len,
			     struct al_error *err)
{
	return feed(h, h->up, buf, len, "the upstream", err);
}

static int drain(nghttp2_session *s, struct netns_buf *out, const char *to, struct al_error *err)
{
	while (netns_buf_len(out) < NETNS_HTTP_FLOW_OUT_MAX) {
		const uint8_t *p;
		ssize_t n = nghttp2_session_mem_send(s, &p);
		int r;

		if (n < 0)
			return al_error_set(err, -EIO, "HTTP/2 to %s: %s", to,
					    nghttp2_strerror((int)n));
		if (n == 0)
			return 0;
		r = netns_buf_append(out, p, (size_t)n, SIZE_MAX);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The upstream's session is over (it went away, or said GOAWAY and finished): so is the
 * sandbox's, once what it has under way is answered. */
static void upstream_over(struct netns_h2 *h, const char *why)
{
	if (h->goaway_sent)
		return;
	h->goaway_sent = true;
	for (struct h2_stream *st = h->streams; st; st = st->next)
		if (!st->s_closed && !st->resp_end)
			stream_refuse(st, -ECONNRESET, why);
	(void)nghttp2_submit_goaway(h->sb, NGHTTP2_FLAG_NONE,
				    nghttp2_session_get_last_proc_stream_id(h->sb),
				    NGHTTP2_NO_ERROR, NULL, 0);
}

int netns_h2_out(struct netns_h2 *h, struct netns_buf *to_sandbox, struct netns_buf *to_upstream,
		 struct al_error *err)
{
	int r;

	if (!nghttp2_session_want_read(h->up) && !nghttp2_session_want_write(h->up))
		upstream_over(h, "The upstream ended the connection");
	r = drain(h->up, to_upstream, "the upstream", err);
	if (r >= 0)
		r = drain(h->sb, to_sandbox, "the sandbox", err);
	return r;
}

void netns_h2_upstream_eof(struct netns_h2 *h)
{
	upstream_over(h, "The upstream closed the connection");
}

bool netns_h2_idle(const struct netns_h2 *h)
{
	return h->n_open == 0;
}

bool netns_h2_done(const struct netns_h2 *h)
{
	return !nghttp2_session_want_read(h->sb) && !nghttp2_session_want_write(h->sb);
}
