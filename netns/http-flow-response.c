/* Response heads of the inspected HTTP flow: parsed strictly (the status line and field lines,
 * RFC 9112), their framing fields judged, refused where a value could not be searched for (a
 * protocol switch, compressed content), and written out again with every real value turned back
 * into its surrogate and the framing the body goes on in; and a body's first bytes judged. */

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "netns/http-flow-internal.h"

#define BODY_LENGTH_MAX ((UINT64_C(1) << 53) - 1)

/* ---- parsing ---- */

/* The line at buf[*pos]: lines end in CRLF, and hold no other control character but HTAB. */
static int head_line(const char *buf, size_t len, size_t *pos, size_t *ret_len,
		     struct al_error *err)
{
	for (size_t i = *pos; i < len; i++) {
		unsigned char c = (unsigned char)buf[i];

		if (c == '\r') {
			if (i + 1 == len)
				break;
			if (buf[i + 1] != '\n')
				return al_error_set(err, -EBADMSG, "Bare CR in a response head");
			*ret_len = i - *pos;
			*pos = i + 2;
			return 0;
		}
		if (c == '\n')
			return al_error_set(err, -EBADMSG, "Bare LF in a response head");
		if (http_is_ctl(c))
			return al_error_set(err, -EBADMSG,
					    "Control character 0x%02x in a response head", c);
	}
	return -EAGAIN;
}

/* status-line = HTTP-version SP status-code SP [ reason-phrase ] (RFC 9112 4); the SP before an
 * empty reason may be missing. */
static int parse_status_line(const char *l, size_t n, struct response_head *rh,
			     struct al_error *err)
{
	if (n < 12 || memcmp(l, "HTTP/1.", 7) != 0 || (l[7] != '0' && l[7] != '1') || l[8] != ' ' ||
	    !http_is_digit((unsigned char)l[9]) || l[9] == '0' ||
	    !http_is_digit((unsigned char)l[10]) || !http_is_digit((unsigned char)l[11]) ||
	    (n > 12 && l[12] != ' '))
		return al_error_set(err, -EBADMSG,
				    "The status line is not HTTP/1.x, a status code and a reason");
	rh->minor = l[7] - '0';
	rh->status = (l[9] - '0') * 100 + (l[10] - '0') * 10 + (l[11] - '0');
	rh->reason = n > 12 ? l + 13 : l + 12;
	rh->reason_len = n > 12 ? n - 13 : 0;
	return 0;
}

/* field-line = field-name ":" OWS field-value OWS: no obs-fold, no whitespace before the colon. */
static int parse_field_line(const char *l, size_t n, struct netns_http_header *h,
			    struct al_error *err)
{
	size_t colon = http_span(l, n, 0, http_is_tchar), v, e;

	if (colon == 0 || colon == n || l[colon] != ':')
		return al_error_set(err, -EBADMSG,
				    "A response header is not a name, a colon and a value");
	v = http_span(l, n, colon + 1, http_is_ows);
	for (e = n; e > v && http_is_ows((unsigned char)l[e - 1]); e--)
		;
	*h = (struct netns_http_header){
	    .name = l, .name_len = colon, .value = l + v, .value_len = e - v};
	return 0;
}

int flow_parse_fields(const char *buf, size_t len, size_t *pos, struct netns_http_header *h,
		      size_t *n, struct al_error *err)
{
	size_t line_len;
	int r;

	for (;;) {
		const char *line = buf + *pos;

		r = head_line(buf, len, pos, &line_len, err);
		if (r < 0)
			return r;
		if (line_len == 0)
			return 0;
		if (*n == NETNS_HTTP_HEADERS_MAX)
			return al_error_set(err, -EMSGSIZE, "More than %d response headers",
					    NETNS_HTTP_HEADERS_MAX);
		r = parse_field_line(line, line_len, &h[*n], err);
		if (r < 0)
			return r;
		(*n)++;
	}
}

/* Each element of a comma-separated list, trimmed; refuses empty ones unless allow_empty. */
static int list_each(const struct netns_http_header *h, bool allow_empty,
		     int (*fn)(struct response_head *rh, const char *s, size_t n, bool last,
			       struct al_error *err),
		     struct response_head *rh, struct al_error *err)
{
	const char *p = h->value, *end = p + h->value_len, *s;
	bool more;
	size_t n;
	int r;

	do {
		more = flow_list_next(&p, end, &s, &n);
		if (n > 0 || !allow_empty) {
			r = fn(rh, s, n, !more, err);
			if (r < 0)
				return r;
		}
	} while (more);
	return 0;
}

static int on_length(struct response_head *rh, const char *s, size_t n, bool last,
		     struct al_error *err)
{
	uint64_t v = 0;

	if (n == 0 || http_span(s, n, 0, http_is_digit) != n)
		return al_error_set(err, -EBADMSG, "Content-Length is not a decimal number");
	for (size_t i = 0; i < n; i++) {
		v = v * 10 + (uint64_t)(s[i] - '0');
		if (v > BODY_LENGTH_MAX)
			return al_error_set(err, -EBADMSG, "Content-Length is larger than 2^53-1");
	}
	if (rh->has_length && v != rh->length)
		return al_error_set(err, -EBADMSG, "Content-Length values differ");
	rh->has_length = true;
	rh->length = v;
	return 0;
}

static int on_coding(struct response_head *rh, const char *s, size_t n, bool last,
		     struct al_error *err)
{
	if (n == 0 || http_span(s, n, 0, http_is_tchar) != n)
		return al_error_set(err, -EBADMSG, "Transfer-Encoding is not a list of codings");
	if (ascii_eq(s, n, "chunked") && !last)
		return al_error_set(err, -EBADMSG, "Transfer-Encoding: chunked is not the last");
	rh->chunked = ascii_eq(s, n, "chunked");
	rh->te_coded |= !rh->chunked;
	return 0;
}

static int on_option(struct response_head *rh, const char *s, size_t n, bool last,
		     struct al_error *err)
{
	if (http_span(s, n, 0, http_is_tchar) != n)
		return al_error_set(err, -EBADMSG, "Connection is not a list of options");
	if (ascii_eq(s, n, "close"))
		rh->close = true;
	else if (ascii_eq(s, n, "keep-alive"))
		rh->keep_alive = true;
	return 0;
}

/* The framing fields (RFC 9112 6): what two parsers could read differently is refused. */
static int judge_response(struct response_head *rh, struct al_error *err)
{
	int r = 0;

	for (size_t i = 0; i < rh->n_headers && r >= 0; i++) {
		const struct netns_http_header *h = &rh->headers[i];

		if (ascii_eq(h->name, h->name_len, "content-length"))
			r = list_each(h, false, on_length, rh, err);
		else if (ascii_eq(h->name, h->name_len, "transfer-encoding")) {
			if (rh->has_te)
				return al_error_set(err, -EBADMSG,
						    "More than one Transfer-Encoding header");
			rh->has_te = true;
			r = list_each(h, false, on_coding, rh, err);
		} else if (ascii_eq(h->name, h->name_len, "connection"))
			r = list_each(h, true, on_option, rh, err);
	}
	if (r < 0)
		return r;
	if (rh->has_te && rh->has_length)
		return al_error_set(err, -EBADMSG,
				    "Both Transfer-Encoding and Content-Length in a response");
	if (rh->has_te && rh->minor == 0)
		return al_error_set(err, -EBADMSG, "Transfer-Encoding in an HTTP/1.0 response");
	rh->keep_alive = !rh->close && (rh->minor == 1 || rh->keep_alive);
	return 0;
}

int flow_parse_response_head(const char *buf, size_t len, struct response_head *rh,
			     struct al_error *err)
{
	size_t pos = 0, line_len;
	int r;

	*rh = (struct response_head){0};
	r = head_line(buf, len, &pos, &line_len, err);
	if (r >= 0)
		r = parse_status_line(buf, line_len, rh, err);
	if (r >= 0)
		r = flow_parse_fields(buf, len, &pos, rh->headers, &rh->n_headers, err);
	if (r == -EAGAIN && len >= NETNS_HTTP_HEAD_MAX)
		return al_error_set(err, -EMSGSIZE, "The response head is longer than %d bytes",
				    NETNS_HTTP_HEAD_MAX);
	if (r < 0)
		return r;
	rh->head_len = pos;
	return judge_response(rh, err);
}

/* ---- passing on ---- */

static enum framing response_framing_in(const struct pending *pq, const struct response_head *rh)
{
	if (pq->head || rh->status < 200 || rh->status == 204 || rh->status == 304)
		return FRAME_NONE;
	if (rh->has_te)
		return rh->chunked ? FRAME_CHUNKED : FRAME_CLOSE;
	return rh->has_length ? FRAME_LENGTH : FRAME_CLOSE;
}

/* How the body goes on to the sandbox: a Content-Length body whose length may change in the
 * replacements is chunked for an HTTP/1.1 client and close-delimited for HTTP/1.0, which is also
 * how an HTTP/1.0 client gets a chunked body. */
static enum framing response_framing_out(const struct netns_http_flow *f, const struct pending *pq,
					 enum framing in)
{
	if (in == FRAME_LENGTH && !f->values_m.same_len)
		return pq->http11 ? FRAME_CHUNKED : FRAME_CLOSE;
	if (in == FRAME_CHUNKED && !pq->http11)
		return FRAME_CLOSE;
	return in;
}

static bool response_field_dropped(const struct netns_http_header *h, enum framing in,
				   enum framing out, bool close)
{
	if (in == FRAME_LENGTH && out != FRAME_LENGTH &&
	    ascii_eq(h->name, h->name_len, "content-length"))
		return true;
	if (in == FRAME_CHUNKED && out == FRAME_CLOSE &&
	    ascii_eq(h->name, h->name_len, "transfer-encoding"))
		return true;
	return close && (ascii_eq(h->name, h->name_len, "connection") ||
			 ascii_eq(h->name, h->name_len, "keep-alive"));
}

static int put_response_head(struct netns_http_flow *f, const struct response_head *rh,
			     enum framing in, enum framing outf, bool close, struct netns_buf *out,
			     struct al_error *err)
{
	size_t start = netns_buf_len(out);
	struct writer w = {.b = out, .max = start + HEAD_OUT_MAX};
	char status[sizeof("HTTP/1.1 999 ")];

	(void)snprintf(status, sizeof(status), "HTTP/1.1 %03d ", rh->status);
	put_str(&w, status);
	flow_put_replaced(&w, &f->values_m, rh->reason, rh->reason_len);
	put_str(&w, "\r\n");
	for (size_t i = 0; i < rh->n_headers; i++) {
		const struct netns_http_header *h = &rh->headers[i];

		if (response_field_dropped(h, in, outf, close))
			continue;
		flow_put_replaced(&w, &f->values_m, h->name, h->name_len);
		put_str(&w, ": ");
		/* The framing the flow read is the one it passes on. */
		if (ascii_eq(h->name, h->name_len, "content-length") ||
		    ascii_eq(h->name, h->name_len, "transfer-encoding"))
			put(&w, h->value, h->value_len);
		else
			flow_put_replaced(&w, &f->values_m, h->value, h->value_len);
		put_str(&w, "\r\n");
	}
	if (in == FRAME_LENGTH && outf == FRAME_CHUNKED)
		put_str(&w, "Transfer-Encoding: chunked\r\n");
	if (close)
		put_str(&w, "Connection: close\r\n");
	put_str(&w, "\r\n");
	if (w.r < 0) {
		buf_truncate(out, start);
		if (w.r == -EMSGSIZE)
			return al_error_set(err, -EMSGSIZE,
					    "The response head is longer than %d bytes rewritten",
					    HEAD_OUT_MAX);
	}
	return w.r;
}

/* Whether a response's content is encoded (compressed), though the request asked for identity:
 * by its Content-Encoding, or by a transfer coding other than chunked (none was asked for:
 * TE is a hop-by-hop field, not passed on). */
static bool is_encoded(const struct response_head *rh)
{
	if (rh->te_coded)
		return true;
	for (size_t i = 0; i < rh->n_headers; i++) {
		const struct netns_http_header *h = &rh->headers[i];
		size_t a, b;

		if (!ascii_eq(h->name, h->name_len, "content-encoding"))
			continue;
		a = http_span(h->value, h->value_len, 0, http_is_ows);
		for (b = h->value_len; b > a && http_is_ows((unsigned char)h->value[b - 1]); b--)
			;
		if (!ascii_eq(h->value + a, b - a, "identity"))
			return true;
	}
	return false;
}

/* Compressed formats by their first bytes. Brotli has none: a brotli body is refused only by its
 * Content-Encoding (is_encoded()). */
static const struct {
	const char *name;
	size_t len;
	uint8_t magic[4];
} compressed_magics[] = {
    {"gzip", 2, {0x1f, 0x8b}}, {"zstd", 4, {0x28, 0xb5, 0x2f, 0xfd}},
    {"zlib", 2, {0x78, 0x01}}, {"zlib", 2, {0x78, 0x5e}},
    {"zlib", 2, {0x78, 0x9c}}, {"zlib", 2, {0x78, 0xda}},
};

int flow_sniff_body(struct body_sniff *s, const uint8_t *p, size_t n, struct al_error *err)
{
	size_t take = MIN(n, sizeof(s->first) - s->n);
	bool maybe = false;

	memcpy(s->first + s->n, p, take);
	s->n += take;
	for (size_t i = 0; i < ELEMENTSOF(compressed_magics); i++) {
		size_t k = MIN(compressed_magics[i].len, s->n);

		if (memcmp(s->first, compressed_magics[i].magic, k) != 0)
			continue;
		if (k == compressed_magics[i].len)
			return al_error_set(
			    err, -EIO,
			    "The upstream sent a compressed body (%s), which cannot "
			    "be searched for credential values",
			    compressed_magics[i].name);
		maybe = true;
	}
	s->on = maybe;
	return 0;
}

int flow_response_head_done(struct netns_http_flow *f, const struct response_head *rh,
			    struct netns_buf *out, struct al_error *err)
{
	const struct pending *pq = &f->pending[f->pending_first];
	enum framing in, outf;
	int r;

	if (rh->status == 101 && !pq->websocket)
		return al_error_set(err, -EPROTO,
				    "The upstream switched protocols, which no request asked for");
	r = flow_bound_values(f, err);
	if (r >= 0)
		r = flow_refresh_values(f);
	if (r < 0)
		return r;
	if (rh->status == 101) {
		/* To the WebSocket the request asked for, and nothing else (http-flow-ws.c). */
		r = flow_ws_check_switch(f, rh, err);
		if (r >= 0)
			r = put_response_head(f, rh, FRAME_NONE, FRAME_NONE, false, out, err);
		if (r >= 0)
			flow_ws_start(f);
		return r;
	}
	/* Every request asked for identity: a compressed response is refused wherever a value is
	 * looked for (on a bound host, from the first response). */
	if (f->values_m.n > 0 && is_encoded(rh))
		return al_error_set(err, -EIO,
				    "The upstream sent a compressed response, which cannot be "
				    "searched for credential values");
	/* The framing fields are passed on as they are, which they could not be if they held a
	 * value: digits only, Content-Length could (a long enough number). */
	for (size_t i = 0; i < rh->n_headers && f->values_m.n > 0; i++) {
		const struct netns_http_header *h = &rh->headers[i];
		struct match mt;

		if (ascii_eq(h->name, h->name_len, "content-length") &&
		    flow_matcher_find(&f->values_m, (const uint8_t *)h->value,
				      (const uint8_t *)h->value + h->value_len, &mt))
			return al_error_set(
			    err, -EBADMSG, "The response's Content-Length is a credential's value");
	}
	in = response_framing_in(pq, rh);
	if (rh->status < 200)
		return put_response_head(f, rh, FRAME_NONE, FRAME_NONE, false, out, err);
	/* A WebSocket upgrade that was declined: the sandbox's next request may come. */
	if (pq->websocket && f->req == REQ_UPGRADE)
		request_done(f);
	outf = response_framing_out(f, pq, in);
	f->resp_close = !rh->keep_alive || pq->close || in == FRAME_CLOSE || outf == FRAME_CLOSE;
	f->upstream_spent |= !rh->keep_alive || rh->minor != 1 || in == FRAME_CLOSE;
	r = put_response_head(f, rh, in, outf, f->resp_close, out, err);
	if (r < 0)
		return r;
	f->resp_out = outf;
	/* Once a value went upstream on this connection, every body is judged by its first bytes
	 * (before, a compressed body is taken for a file the host serves: docs/EGRESS.md). */
	f->resp_sniff = (struct body_sniff){.on = f->values_m_sent};
	if (in == FRAME_CHUNKED)
		f->resp = RESP_CHUNK_LINE;
	else if (in == FRAME_CLOSE)
		f->resp = RESP_UNTIL_CLOSE;
	else if (in == FRAME_LENGTH && rh->length > 0) {
		f->resp = RESP_BODY;
		f->resp_left = rh->length;
	} else {
		if (outf == FRAME_CHUNKED)
			r = netns_buf_append(out, "0\r\n\r\n", 5, OUT_LIMIT);
		response_done(f);
	}
	return r;
}
