/* Request heads of the inspected HTTP flow: checked (Host and an absolute-form target must name
 * the flow's host; a surrogate anywhere but in a header value is refused, and so is one base64-
 * or percent-encoded outside Basic credentials) and written out again from the parsed fields:
 * hop-by-hop headers removed, every surrogate swapped for its real value (inside Basic
 * credentials too), the sidecar's headers added, an absolute-form target made origin-form. Also
 * the check across the end of a Content-Length body and the next request line. */

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/client.h"
#include "netns/http-flow-internal.h"
#include "netns/sigv4-internal.h"

#define PERCENT_ROUNDS 4 /* %2567 is decoded twice, and so on */
#define WHERE_MAX 96

/* "header <name>", the name lower-cased and cut short: where a surrogate was, for messages. */
static const char *where_header(const char *name, size_t n, char buf[static WHERE_MAX])
{
	size_t o = (size_t)snprintf(buf, WHERE_MAX, "header ");

	for (size_t i = 0; i < n && o < WHERE_MAX - 1; i++)
		buf[o++] = (char)ascii_lower((unsigned char)name[i]);
	buf[o] = '\0';
	return buf;
}

/* ---- surrogates in requests ---- */

static bool is_field_value(const struct broker_secret *v)
{
	for (size_t i = 0; i < v->len; i++)
		if (http_is_ctl((unsigned char)v->data[i]))
			return false;
	return true;
}

/* Writes p with every surrogate swapped for its real value; in_field: the values must be fit for
 * a header field. */
static int put_swapped(struct netns_http_flow *f, struct writer *w, const uint8_t *p, size_t n,
		       bool in_field, const char *where, struct al_error *err)
{
	const uint8_t *end = p + n, *q;
	const struct broker_secret *v = NULL;
	struct match mt;
	int r;

	while ((q = flow_matcher_find(&f->surrogates, p, end, &mt))) {
		if (flow_sigv4_is_secret(f, mt.pt->owner))
			return al_error_set(
			    err, -EPERM,
			    "The surrogate of an AWS secret access key in the %s is "
			    "refused: it only signs",
			    where);
		r = flow_value(f, mt.pt->owner, where, &v, err);
		if (r < 0)
			return r;
		if (in_field && !is_field_value(v))
			return al_error_set(
			    err, -EINVAL,
			    "The value behind the surrogate in the %s holds a control "
			    "character",
			    where);
		put(w, p, (size_t)(q - p));
		put(w, v->data, v->len);
		if (f->o.ops && f->o.ops->swapped)
			f->o.ops->swapped(f->o.userdata, f->o.surrogates[mt.pt->owner], where,
					  f->stream);
		p = q + mt.len;
	}
	put(w, p, (size_t)(end - p));
	return 0;
}

/* Refuses a surrogate hidden by percent-encoding (once or several times) in p. */
static int refuse_percent_encoded(const struct netns_http_flow *f, const char *p, size_t n,
				  const char *where, struct al_error *err)
{
	struct match mt;
	size_t size = MAX(n, (size_t)1);
	uint8_t *d;
	int r = 0;

	d = malloc(size);
	if (!d)
		return -ENOMEM;
	memcpy(d, p, n);
	for (unsigned i = 0; i < PERCENT_ROUNDS && memchr(d, '%', n); i++) {
		size_t m = flow_percent_decode(d, n);

		if (m == n)
			break;
		n = m;
		if (flow_matcher_find(&f->surrogates, d, d + n, &mt) ||
		    flow_matcher_find(&f->encoded, d, d + n, &mt)) {
			r = al_error_set(err, -EPERM,
					 "A percent-encoded surrogate in the %s is refused", where);
			break;
		}
	}
	explicit_bzero(d, size);
	free(d);
	return r;
}

int flow_refuse_surrogates(const struct netns_http_flow *f, const char *p, size_t n, bool raw_ok,
			   const char *where, struct al_error *err)
{
	const uint8_t *s = (const uint8_t *)p;
	struct match mt;

	if (!raw_ok && flow_matcher_find(&f->surrogates, s, s + n, &mt))
		return al_error_set(err, -EPERM, "A surrogate in the %s is refused", where);
	if (flow_matcher_find(&f->encoded, s, s + n, &mt))
		return al_error_set(err, -EPERM, "A base64-encoded surrogate in the %s is refused",
				    where);
	if (memchr(p, '%', n))
		return refuse_percent_encoded(f, p, n, where, err);
	return 0;
}

/* Writes n bytes as base64, through a small buffer that is wiped. */
static void put_b64(struct writer *w, const uint8_t *p, size_t n)
{
	char enc[256];

	for (size_t i = 0; i < n; i += 192) {
		size_t k = flow_b64_encode(p + i, MIN(n - i, (size_t)192), enc);

		put(w, enc, k);
	}
	explicit_bzero(enc, sizeof(enc));
}

/* Authorization: Basic <base64 of user:password>: a surrogate in the decoded credentials is
 * swapped, and the result encoded again. Returns 1 when it wrote the value, 0 when the value is
 * not such credentials with a surrogate in them (the caller writes it). */
static int put_basic(struct netns_http_flow *f, struct writer *w, const struct netns_http_header *h,
		     struct al_error *err)
{
	struct writer ww = {.b = &f->work, .max = HEAD_OUT_MAX};
	struct match mt;
	size_t i, dn = 0;
	uint8_t *d;
	int r = 0;

	if (h->value_len < 6 || !ascii_eq(h->value, 5, "basic") || h->value[5] != ' ')
		return 0;
	i = http_span(h->value, h->value_len, 6, http_is_ows);
	d = malloc(h->value_len / 4 * 3 + 3);
	if (!d)
		return -ENOMEM;
	if (flow_b64_decode(h->value + i, h->value_len - i, d, &dn) < 0 ||
	    !flow_matcher_find(&f->surrogates, d, d + dn, &mt))
		goto out;
	r = put_swapped(f, &ww, d, dn, false, "header authorization (basic)", err);
	if (r >= 0 && ww.r < 0)
		r = al_error_set(err, ww.r, "Basic credentials too long");
	if (r >= 0) {
		put(w, h->value, i);
		put_b64(w, netns_buf_head(&f->work), netns_buf_len(&f->work));
		r = 1;
	}
	buf_clear(&f->work);
out:
	explicit_bzero(d, dn);
	free(d);
	return r;
}

/* ---- request heads ---- */

/* Removed from every request: hop-by-hop, or a way around the inspection (h2c). */
static bool is_hop_header(const char *name, size_t n)
{
	return ascii_eq(name, n, "upgrade") || ascii_eq(name, n, "http2-settings") ||
	       ascii_eq(name, n, "proxy-authorization") || ascii_eq(name, n, "proxy-connection") ||
	       ascii_eq(name, n, "te");
}

/* Removed from this request: the hop-by-hop headers, but not a WebSocket upgrade's Upgrade (its
 * frames are relayed: http-flow-ws.c); and Sec-WebSocket-Extensions, since permessage-deflate
 * would hide values from the search. */
static bool is_removed_field(const struct netns_http_flow *f, const char *name, size_t n)
{
	if (f->req_ws && ascii_eq(name, n, "upgrade"))
		return false;
	return is_hop_header(name, n) || ascii_eq(name, n, "sec-websocket-extensions");
}

bool flow_is_sidecar_name(const struct netns_http_flow *f, const char *name, size_t n)
{
	for (size_t i = 0; i < f->n_side; i++)
		if (ascii_eq_n(name, n, f->sidecar->data + f->side[i].name, f->side[i].name_len))
			return true;
	return false;
}

/* A Connection option that is not passed on: one naming a removed header, a framing header (a
 * hop-by-hop Content-Length would let a later hop frame the body differently), or a sidecar
 * header; keep-alive in HTTP/1.0, whose requests all go upstream as the last; and close in
 * HTTP/1.1 when the upstream's connection is kept (it ends the sandbox's connection only). */
static bool is_dropped_option(const struct netns_http_flow *f, const char *s, size_t n, bool http10)
{
	return is_removed_field(f, s, n) || ascii_eq(s, n, "content-length") ||
	       ascii_eq(s, n, "transfer-encoding") || ascii_eq(s, n, "host") ||
	       flow_is_sidecar_name(f, s, n) || (http10 && ascii_eq(s, n, "keep-alive")) ||
	       (!http10 && f->o.keep_upstream && ascii_eq(s, n, "close"));
}

static void put_connection(const struct netns_http_flow *f, struct writer *w,
			   const struct netns_http_header *h, bool http10)
{
	const char *p = h->value, *end = p + h->value_len, *s;
	bool any = false, more;
	size_t n;

	do {
		more = flow_list_next(&p, end, &s, &n);
		if (n > 0 && !is_dropped_option(f, s, n, http10)) {
			put_str(w, any ? ", " : "Connection: ");
			put(w, s, n);
			any = true;
		}
	} while (more);
	if (any)
		put_str(w, "\r\n");
}

int flow_put_field_value(struct netns_http_flow *f, struct writer *w, const char *name,
			 size_t name_len, const char *value, size_t value_len, struct al_error *err)
{
	const struct netns_http_header h = {
	    .name = name, .name_len = name_len, .value = value, .value_len = value_len};
	char where[WHERE_MAX];
	int r = 0;

	where_header(name, name_len, where);
	if (ascii_eq(name, name_len, "authorization"))
		r = put_basic(f, w, &h, err);
	if (r == 0) {
		r = flow_refuse_surrogates(f, value, value_len, true, where, err);
		if (r >= 0)
			r = put_swapped(f, w, (const uint8_t *)value, value_len, true, where, err);
	}
	return r < 0 ? r : 0;
}

/* The framing fields, in one form whatever form they came in (http.c judged them): one
 * Content-Length of the one length a list or several fields gave, and the transfer codings in
 * lower case without "identity" (a coding that changes nothing, and that a server reading only
 * "chunked" would take for an unknown one, framing the body otherwise: found by review). An
 * upstream reading a form apart would frame the body otherwise, and on a kept connection answer
 * what it took for a second request to the next connection. */
static void put_framing_field(struct writer *w, const struct netns_http_request *req,
			      const struct netns_http_header *h)
{
	const char *p = h->value, *end = p + h->value_len, *s;
	char line[sizeof("Content-Length: 18446744073709551615\r\n")];
	bool any = false, more;
	size_t n;

	if (ascii_eq(h->name, h->name_len, "content-length")) {
		for (const struct netns_http_header *e = req->headers; e < h; e++)
			if (ascii_eq(e->name, e->name_len, "content-length"))
				return; /* written once, at the first */
		(void)snprintf(line, sizeof(line), "Content-Length: %" PRIu64 "\r\n",
			       req->content_length);
		put_str(w, line);
		return;
	}
	do {
		more = flow_list_next(&p, end, &s, &n);
		if (n == 0 || ascii_eq(s, n, "identity"))
			continue;
		put_str(w, any ? ", " : "Transfer-Encoding: ");
		for (size_t i = 0; i < n; i++) {
			char ch = (char)tolower((unsigned char)s[i]);

			put(w, &ch, 1);
		}
		any = true;
	} while (more);
	put_str(w, "\r\n");
}

static int put_request_field(struct netns_http_flow *f, struct writer *w,
			     const struct netns_http_request *req,
			     const struct netns_http_header *h, struct al_error *err)
{
	char where[WHERE_MAX];
	int r;

	if (is_removed_field(f, h->name, h->name_len) ||
	    flow_is_sidecar_name(f, h->name, h->name_len))
		return 0;
	/* A real value echoed back compressed could not be turned back into its surrogate (and a
	 * response that comes compressed all the same is refused: is_encoded()). */
	if (ascii_eq(h->name, h->name_len, "accept-encoding")) {
		put_str(w, "Accept-Encoding: identity\r\n");
		return 0;
	}
	r = flow_refuse_surrogates(f, h->name, h->name_len, false, "request header name", err);
	if (r < 0)
		return r;
	where_header(h->name, h->name_len, where);
	if (ascii_eq(h->name, h->name_len, "content-length") ||
	    ascii_eq(h->name, h->name_len, "transfer-encoding")) {
		/* A surrogate there is refused, not swapped: a value would change the framing. */
		r = flow_refuse_surrogates(f, h->value, h->value_len, false, where, err);
		if (r >= 0)
			put_framing_field(w, req, h);
		return r;
	}
	if (ascii_eq(h->name, h->name_len, "connection")) {
		/* Options are header names: a surrogate in one is refused, not swapped. */
		r = flow_refuse_surrogates(f, h->value, h->value_len, false, where, err);
		if (r >= 0)
			put_connection(f, w, h, req->minor_version == 0);
		return r;
	}
	put(w, h->name, h->name_len);
	put_str(w, ": ");
	r = flow_put_field_value(f, w, h->name, h->name_len, h->value, h->value_len, err);
	if (r < 0)
		return r;
	put_str(w, "\r\n");
	return 0;
}

/* Whether an authority (host[:port], as http.c accepted it) names the flow's host: the same name
 * in any case, a trailing dot allowed, and a port, if one is written, the connection's. */
bool flow_authority_is_flow(const struct netns_http_flow *f, const char *a, size_t n)
{
	const char *want = f->o.host, *rest;
	size_t host_len, want_len = strlen(want);
	const char *host = a;
	unsigned port = 0;

	if (n > 0 && a[0] == '[') {
		const char *close = memchr(a, ']', n);

		if (!close)
			return false;
		host = a + 1;
		host_len = (size_t)(close - host);
		rest = close + 1;
		if (want_len >= 2 && want[0] == '[' && want[want_len - 1] == ']')
			want++, want_len -= 2;
	} else {
		const char *colon = memchr(a, ':', n);

		host_len = colon ? (size_t)(colon - a) : n;
		rest = a + host_len;
		if (host_len > 1 && host[host_len - 1] == '.')
			host_len--;
	}
	if (rest < a + n) {
		size_t digits = (size_t)(a + n - rest) - 1;

		if (*rest != ':' || digits == 0 || digits > 5 ||
		    http_span(rest + 1, digits, 0, http_is_digit) != digits)
			return false;
		for (size_t i = 0; i < digits; i++)
			port = port * 10 + (unsigned)(rest[1 + i] - '0');
		if (port != f->o.port)
			return false;
	}
	return ascii_eq_n(host, host_len, want, want_len);
}

/* An absolute-form target (what a client sends to a proxy: "http://host:port/path?q") as its
 * authority and its origin-form: a request to an origin carries only the latter (RFC 9112 3.2.1),
 * and its Host is the former (3.2.2). False for a target in origin-form, "*", or no URI. */
static bool split_absolute_form(const struct netns_http_request *req, const char **authority,
				size_t *authority_len, const char **origin, size_t *origin_len)
{
	const char *t = req->target, *a = memmem(t, req->target_len, "://", 3);
	size_t an = 0;

	if (t[0] == '/' || !a)
		return false;
	a += 3;
	while (a + an < t + req->target_len && a[an] != '/' && a[an] != '?')
		an++;
	*authority = a;
	*authority_len = an;
	*origin = a + an;
	*origin_len = (size_t)(t + req->target_len - *origin);
	return true;
}

/* Whether an authority writes its port. */
static bool authority_has_port(const char *a, size_t n)
{
	const char *close = memrchr(a, ']', n), *from = close ? close : a;

	return memchr(from, ':', (size_t)(a + n - from)) != NULL;
}

/* An origin is a scheme, a host and a port (RFC 9110 4.3.1): the flow's is http's, its host's,
 * and the port it was connected to, which an authority without one names only when it is 80. */
bool flow_is_for_other_origin(const struct netns_http_flow *f, const struct netns_http_request *req)
{
	const char *authority, *origin;
	size_t authority_len, origin_len;

	if (!f->o.origin_switch ||
	    !split_absolute_form(req, &authority, &authority_len, &origin, &origin_len))
		return false;
	return strncasecmp(req->target, "http://", 7) != 0 ||
	       !flow_authority_is_flow(f, authority, authority_len) ||
	       (!authority_has_port(authority, authority_len) && f->o.port != 80);
}

static int check_request(const struct netns_http_flow *f, const struct netns_http_request *req,
			 struct al_error *err)
{
	const char *authority, *origin;
	size_t authority_len, origin_len;
	int r;

	if (req->connect)
		return al_error_set(err, -EBADMSG, "CONNECT inside an inspected connection");
	if (req->host && !flow_authority_is_flow(f, req->host, req->host_len))
		return al_error_set(err, -EPROTO, "The Host header names another host than %s:%u",
				    f->o.host, f->o.port);
	/* http.c let through only a path, "*", or an http(s) URI as the target. */
	if (split_absolute_form(req, &authority, &authority_len, &origin, &origin_len)) {
		if (!flow_authority_is_flow(f, authority, authority_len))
			return al_error_set(err, -EPROTO,
					    "The request target names another host than %s:%u",
					    f->o.host, f->o.port);
	} else if (req->target[0] != '/' && !(req->target_len == 1 && req->target[0] == '*'))
		return al_error_set(err, -EBADMSG, "The request target is not a URI");
	r = flow_refuse_surrogates(f, req->method, req->method_len, false, "request method", err);
	if (r < 0)
		return r;
	return flow_refuse_surrogates(f, req->target, req->target_len, false, "request target",
				      err);
}

/* The sidecar's "Name: value\r\n" lines: names that are tokens and frame nothing, values without
 * control characters. The message names the line, never its value. */
static int parse_sidecar(struct netns_http_flow *f, const struct broker_secret *s,
			 struct al_error *err)
{
	const char *p = s->data;
	size_t pos = 0, max_value = 0;

	while (pos < s->len) {
		const char *crlf = memmem(p + pos, s->len - pos, "\r\n", 2);
		size_t end = crlf ? (size_t)(crlf - p) : s->len, colon, v, e;

		colon = http_span(p, end, pos, http_is_tchar);
		if (!crlf || f->n_side == SIDECAR_LINES_MAX || colon == pos || colon == end ||
		    p[colon] != ':')
			return al_error_set(err, -EINVAL, "Sidecar header %zu is malformed",
					    f->n_side + 1);
		v = http_span(p, end, colon + 1, http_is_ows);
		for (e = end; e > v && http_is_ows((unsigned char)p[e - 1]); e--)
			;
		for (size_t i = v; i < e; i++)
			if (http_is_ctl((unsigned char)p[i]))
				return al_error_set(err, -EINVAL,
						    "Sidecar header %zu holds a control character",
						    f->n_side + 1);
		if (ascii_eq(p + pos, colon - pos, "host") ||
		    ascii_eq(p + pos, colon - pos, "content-length") ||
		    ascii_eq(p + pos, colon - pos, "transfer-encoding") ||
		    ascii_eq(p + pos, colon - pos, "connection") ||
		    is_hop_header(p + pos, colon - pos))
			return al_error_set(err, -EINVAL, "Sidecar header %zu may not be %.*s",
					    f->n_side + 1, (int)(colon - pos), p + pos);
		f->side[f->n_side++] = (struct sidecar_line){
		    .name = pos, .name_len = colon - pos, .value = v, .value_len = e - v};
		max_value = MAX(max_value, e - v);
		pos = end + 2;
	}
	f->stars = malloc(max_value + 1);
	if (!f->stars)
		return -ENOMEM;
	memset(f->stars, '*', max_value);
	return 0;
}

int flow_sidecar(struct netns_http_flow *f, struct al_error *err)
{
	struct broker_secret *s = NULL;
	int r;

	if (f->sidecar_asked)
		return 0;
	f->sidecar_asked = true;
	if (!f->o.ops || !f->o.ops->sidecar)
		return 0;
	if (err)
		*err = (struct al_error){0};
	r = f->o.ops->sidecar(f->o.userdata, &s, err);
	if (r < 0) {
		if (err && err->code != r)
			return al_error_set(err, r, "Asking for the sidecar headers failed");
		return r;
	}
	if (!s)
		return 0;
	f->sidecar = s;
	r = parse_sidecar(f, s, err);
	if (r < 0) {
		f->n_side = 0;
		f->sidecar = broker_secret_free(f->sidecar);
	}
	return r;
}

static int put_request_head(struct netns_http_flow *f, const struct netns_http_request *req,
			    struct netns_buf *out, struct al_error *err)
{
	struct writer w = {.b = out, .max = netns_buf_len(out) + HEAD_OUT_MAX};
	char version[sizeof(" HTTP/1.x\r\n")];
	const char *authority, *origin;
	size_t authority_len, origin_len;
	bool absolute = split_absolute_form(req, &authority, &authority_len, &origin, &origin_len);
	int r;

	put(&w, req->method, req->method_len);
	put_str(&w, " ");
	if (!absolute)
		put(&w, req->target, req->target_len);
	else if (origin_len == 0 || origin[0] == '?')
		put_str(&w, "/"); /* an empty path is "/" (and a query follows it) */
	if (absolute)
		put(&w, origin, origin_len);
	(void)snprintf(version, sizeof(version), " HTTP/1.%d\r\n", req->minor_version);
	put_str(&w, version);
	if (absolute) {
		put_str(&w, "Host: ");
		put(&w, authority, authority_len);
		put_str(&w, "\r\n");
	}
	for (size_t i = 0; i < req->n_headers; i++) {
		if (absolute && ascii_eq(req->headers[i].name, req->headers[i].name_len, "host"))
			continue;
		r = put_request_field(f, &w, req, &req->headers[i], err);
		if (r < 0)
			return r;
	}
	if (f->sidecar)
		put(&w, f->sidecar->data, f->sidecar->len);
	put_str(&w, "\r\n");
	if (w.r == -EMSGSIZE)
		return al_error_set(
		    err, -EMSGSIZE,
		    "The request head is longer than %d bytes with values swapped in",
		    HEAD_OUT_MAX);
	return w.r;
}

/* Whether the end of the last body and the request line that follows make a surrogate: the
 * upstream would read them as two messages, but no whole surrogate may go to it. */
static int check_body_tail(struct netns_http_flow *f, const struct netns_http_request *req,
			   struct al_error *err)
{
	struct match mt;
	const uint8_t *p;
	size_t n = netns_buf_len(&f->req_tail);
	int r;

	if (n == 0)
		return 0;
	/* The request line starts at method: method, a space, the target. */
	r = netns_buf_append(&f->req_tail, req->method,
			     MIN(req->method_len + 1 + req->target_len, f->surrogates.max_len),
			     SIZE_MAX);
	if (r < 0)
		return r;
	p = netns_buf_head(&f->req_tail);
	r = flow_matcher_find(&f->surrogates, p, p + netns_buf_len(&f->req_tail), &mt) ? -EPERM : 0;
	buf_clear(&f->req_tail);
	if (r < 0)
		return al_error_set(err, r, "A surrogate in the request body is refused");
	return 0;
}

int flow_keep_body_tail(struct netns_http_flow *f, const uint8_t *data, size_t n)
{
	size_t keep = f->surrogates.max_len > 0 ? f->surrogates.max_len - 1 : 0;
	size_t from_data = MIN(n, keep),
	       from_hold = MIN(keep - from_data, netns_buf_len(&f->req_hold));
	int r;

	buf_clear(&f->req_tail);
	if (from_data + from_hold == 0)
		return 0;
	r = from_hold == 0
		? 0
		: netns_buf_append(&f->req_tail, f->req_hold.data + f->req_hold.end - from_hold,
				   from_hold, SIZE_MAX);
	if (r >= 0)
		r = netns_buf_append(&f->req_tail, data + n - from_data, from_data, SIZE_MAX);
	if (r < 0)
		return r;
	buf_drop(&f->req_tail, flow_matcher_partial(&f->surrogates, netns_buf_head(&f->req_tail),
						    netns_buf_len(&f->req_tail)));
	return 0;
}

static bool method_is(const struct netns_http_request *req, const char *method)
{
	return req->method_len == strlen(method) &&
	       memcmp(req->method, method, req->method_len) == 0;
}

int flow_request_head_done(struct netns_http_flow *f, const struct netns_http_request *req,
			   struct netns_buf *out, struct al_error *err)
{
	_cleanup_(flow_sigv4_text_done) struct flow_sigv4_text text = {0};
	_cleanup_(netns_sigv4_chunks_freep) struct netns_sigv4_chunks *chunks = NULL;
	struct netns_http_request resigned;
	size_t start = netns_buf_len(out);
	int r;

	/* Signed with a surrogate AWS key: verified, and signed again (http-flow-sigv4.c); a body
	 * signed chunk by chunk is signed again as it streams (request_data()). */
	r = flow_sigv4_request(f, req, f->req_body, f->req_body_len, &resigned, &text, &chunks,
			       err);
	if (r < 0)
		return r;
	if (r > 0)
		req = &resigned;
	r = check_request(f, req, err);
	if (r < 0)
		return r;
	r = check_body_tail(f, req, err);
	if (r < 0)
		return r;
	if (f->n_pending == PENDING_MAX)
		return al_error_set(err, -EBADMSG, "More than %d requests wait for their responses",
				    PENDING_MAX);
	r = flow_sidecar(f, err);
	if (r < 0)
		return r;
	r = put_request_head(f, req, out, err);
	if (r < 0) {
		buf_truncate(out, start);
		return r;
	}
	f->req_close = !req->keep_alive || req->minor_version == 0;
	/* A request with a body spends the connection too: a server that does not read a body it
	 * was sent (a GET's, or one it answers early) takes its bytes for the next request, which
	 * on a kept connection would be another sandbox connection's (found by the red team). */
	f->upstream_spent |= req->minor_version == 0 || (f->req_close && !f->o.keep_upstream) ||
			     req->body == NETNS_HTTP_BODY_CHUNKED ||
			     (req->body == NETNS_HTTP_BODY_LENGTH && req->content_length > 0);
	f->pending[(f->pending_first + f->n_pending++) % PENDING_MAX] = (struct pending){
	    .head = method_is(req, "HEAD"),
	    .http11 = req->minor_version == 1,
	    .close = f->req_close,
	    .idempotent = method_is(req, "GET") || method_is(req, "HEAD") ||
			  method_is(req, "OPTIONS") || method_is(req, "TRACE") ||
			  method_is(req, "PUT") || method_is(req, "DELETE"),
	};
	if (req->body == NETNS_HTTP_BODY_CHUNKED)
		f->req = REQ_CHUNK_LINE;
	else if (req->body == NETNS_HTTP_BODY_LENGTH && req->content_length > 0) {
		f->req = REQ_BODY;
		f->req_left = req->content_length;
	} else
		request_done(f);
	if (f->req == REQ_BODY || f->req == REQ_CHUNK_LINE)
		f->req_chunks = TAKE_PTR(chunks);
	return 0;
}
