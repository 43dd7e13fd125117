/* HTTP/1.1 request heads (RFC 9112, with RFC 9110's field and URI rules), as the egress proxy
 * reads them from the sandbox, and the chunk-size lines of chunked bodies.
 *
 * The proxy stands between a client it does not trust and servers whose parsers it does not
 * know, so it accepts only what every reading of the RFCs agrees on and refuses, rather than
 * repairs, whatever two parsers could frame differently (request smuggling): lines end in CRLF
 * and nothing else; no control character but HTAB appears anywhere in a head; a body's length
 * comes from exactly one place; hosts are plain host names or IP literals.
 *
 * Parsing is a single forward pass that judges each line when its CRLF arrives, and refuses a
 * byte that no line may hold as soon as it is seen. So a prefix of the input either needs more
 * bytes (-EAGAIN) or gets the answer the whole input gets: a caller may parse again as data
 * arrives. Error messages quote at most QUOTE_MAX bytes of the input, escaped. */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "netns/netns-internal.h"

/* The largest body length accepted from a Content-Length or a chunk size: 2^53 - 1, which
 * every HTTP stack (JavaScript's included) reads exactly. */
#define BODY_LENGTH_MAX ((UINT64_C(1) << 53) - 1)
#define CHUNK_SIZE_DIGITS_MAX 16
/* A chunk-size line with extensions longer than this is refused rather than buffered. */
#define CHUNK_LINE_MAX 4096
#define IPV6_LITERAL_MAX 45 /* "ffff:...:255.255.255.255", without the brackets */
#define PORT_DIGITS_MAX 5

/* Bytes of a peer's input an error message quotes, and the buffer for them, escaped. */
#define QUOTE_MAX 8
#define QUOTE_SIZE (QUOTE_MAX * 4 + sizeof("..."))

/* What the header fields say about the message, gathered before the framing is judged. */
struct head_fields {
	size_t n_host;
	bool has_length, has_transfer_encoding;
	uint64_t length;
	bool close, keep_alive;
};

struct list_iter {
	const char *p, *end;
	bool done;
};

static bool is_host_char(unsigned char c)
{
	return http_is_alpha(c) || http_is_digit(c) || c == '-' || c == '.' || c == '_';
}

static bool is_hex_digit(unsigned char c)
{
	return http_is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* The value of a hex digit. */
static unsigned hex_value(unsigned char c)
{
	if (http_is_digit(c))
		return c - '0';
	return (c | 0x20) - 'a' + 10;
}

static bool is_ipv6_char(unsigned char c)
{
	return is_hex_digit(c) || c == ':' || c == '.';
}

static bool is_token(const char *s, size_t n)
{
	return n > 0 && http_span(s, n, 0, http_is_tchar) == n;
}

/* ASCII only: strncasecmp() follows the locale. */
static bool ascii_eq(const char *s, size_t n, const char *lower)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (lower[i] == '\0' || (c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c) != lower[i])
			return false;
	}
	return lower[n] == '\0';
}

/* Formats at most QUOTE_MAX bytes of s for a message: visible ASCII as is, anything else (and
 * '"' and '\\') as \xNN, and "..." when s is longer. */
static const char *quote(const char *s, size_t n, char buf[static QUOTE_SIZE])
{
	size_t o = 0;

	for (size_t i = 0; i < MIN(n, (size_t)QUOTE_MAX); i++) {
		unsigned char c = (unsigned char)s[i];

		if (http_is_vchar(c) && c != '"' && c != '\\')
			buf[o++] = (char)c;
		else
			o += (size_t)snprintf(buf + o, QUOTE_SIZE - o, "\\x%02x", c);
	}
	if (n > QUOTE_MAX)
		o += (size_t)snprintf(buf + o, QUOTE_SIZE - o, "...");
	buf[o] = '\0';
	return buf;
}

static struct list_iter list_iter(const char *s, size_t n)
{
	return (struct list_iter){.p = s, .end = s + n};
}

/* Returns the next element of a comma-separated field value (RFC 9110 5.6.1) without the
 * whitespace around it. Elements may be empty ("a, ,b" has three); false after the last. */
static bool list_next(struct list_iter *it, const char **ret_elem, size_t *ret_len)
{
	const char *comma, *s, *e;

	if (it->done)
		return false;
	comma = memchr(it->p, ',', (size_t)(it->end - it->p));
	s = it->p;
	e = comma ? comma : it->end;
	while (s < e && http_is_ows((unsigned char)*s))
		s++;
	while (e > s && http_is_ows((unsigned char)e[-1]))
		e--;
	it->p = comma ? comma + 1 : it->end;
	it->done = !comma;
	*ret_elem = s;
	*ret_len = (size_t)(e - s);
	return true;
}

/* A port: 1 to PORT_DIGITS_MAX digits, 1 to 65535. */
static bool is_port(const char *s, size_t n)
{
	unsigned port = 0;

	if (n == 0 || n > PORT_DIGITS_MAX || http_span(s, n, 0, http_is_digit) != n)
		return false;
	for (size_t i = 0; i < n; i++)
		port = port * 10 + (unsigned)(s[i] - '0');
	return port >= 1 && port <= 65535;
}

/* Whether s is host [":" port] (RFC 9110 7.2, RFC 3986 3.2.2), narrowed to what two URI parsers
 * cannot split differently: a host name of letters, digits, '-', '.' and '_' (no user info, no
 * percent-encoding, at most NETNS_DNS_NAME_MAX bytes) or an IPv6 literal in brackets; a port of
 * 1 to 65535, which need_port requires. */
static bool is_authority(const char *s, size_t n, bool need_port)
{
	size_t i;

	if (n > 0 && s[0] == '[') {
		i = http_span(s, n, 1, is_ipv6_char);
		if (i == n || s[i] != ']' || i - 1 > IPV6_LITERAL_MAX || !memchr(s, ':', i))
			return false;
		i++;
	} else {
		i = http_span(s, n, 0, is_host_char);
		if (i == 0 || i > NETNS_DNS_NAME_MAX)
			return false;
	}
	if (i == n)
		return !need_port;
	return s[i] == ':' && is_port(s + i + 1, n - i - 1);
}

/* Finds the line at buf[*pos], looking at no more than limit bytes: on success *ret_len is its
 * length without the CRLF, and *pos moves past the CRLF. */
static int next_line(const char *buf, size_t len, size_t limit, size_t *pos, size_t *ret_len,
		     struct al_error *err)
{
	for (size_t i = *pos; i < limit; i++) {
		unsigned char c = (unsigned char)buf[i];

		if (c == '\r') {
			if (i + 1 == limit)
				break;
			if (buf[i + 1] != '\n')
				return al_error_set(err, -EBADMSG, "Bare CR at offset %zu", i);
			*ret_len = i - *pos;
			*pos = i + 2;
			return 0;
		}
		if (c == '\n')
			return al_error_set(err, -EBADMSG,
					    "Bare LF at offset %zu: lines must end in CRLF", i);
		if (http_is_ctl(c))
			return al_error_set(err, -EBADMSG, "Control character 0x%02x at offset %zu",
					    c, i);
	}
	if (len >= NETNS_HTTP_HEAD_MAX)
		return al_error_set(err, -EMSGSIZE, "Request head is longer than %d bytes",
				    NETNS_HTTP_HEAD_MAX);
	return -EAGAIN;
}

static bool method_is(const struct netns_http_request *req, const char *method)
{
	return req->method_len == strlen(method) &&
	       memcmp(req->method, method, req->method_len) == 0;
}

/* absolute-form (RFC 9112 3.2.2), for http and https only: the proxy matches its authority. */
static int check_absolute_form(const char *t, size_t n, struct al_error *err)
{
	size_t scheme_len = http_span(t, n, 0, http_is_alpha), a;
	char q[QUOTE_SIZE];

	if (scheme_len + 3 > n || memcmp(t + scheme_len, "://", 3) != 0 ||
	    !(ascii_eq(t, scheme_len, "http") || ascii_eq(t, scheme_len, "https")))
		return al_error_set(err, -EBADMSG,
				    "Request target \"%s\" is not a path, an http(s) URI, "
				    "host:port for CONNECT or * for OPTIONS",
				    quote(t, n, q));
	t += scheme_len + 3;
	n -= scheme_len + 3;
	for (a = 0; a < n && t[a] != '/' && t[a] != '?'; a++)
		;
	if (!is_authority(t, a, false))
		return al_error_set(err, -EBADMSG,
				    "Request target's authority \"%s\" is not host[:port]",
				    quote(t, a, q));
	return 0;
}

/* The four forms of request-target (RFC 9112 3.2), each only with the methods it belongs to. */
static int check_target(const struct netns_http_request *req, struct al_error *err)
{
	const char *t = req->target;
	size_t n = req->target_len;
	char q[QUOTE_SIZE];

	if (req->connect) {
		if (!is_authority(t, n, true))
			return al_error_set(err, -EBADMSG, "CONNECT target \"%s\" is not host:port",
					    quote(t, n, q));
		return 0;
	}
	/* A fragment is never sent (RFC 9112 3.2); servers disagree on what follows a '#'. */
	if (memchr(t, '#', n))
		return al_error_set(err, -EBADMSG, "Request target holds a fragment ('#')");
	if (t[0] == '/')
		return 0;
	if (n == 1 && t[0] == '*')
		return method_is(req, "OPTIONS")
			   ? 0
			   : al_error_set(err, -EBADMSG, "Request target * is only for OPTIONS");
	return check_absolute_form(t, n, err);
}

/* request-line = method SP request-target SP HTTP-version (RFC 9112 3), exactly. */
static int parse_request_line(const char *line, size_t n, struct netns_http_request *req,
			      struct al_error *err)
{
	size_t m, t;
	char q[QUOTE_SIZE];

	if (n == 0)
		return al_error_set(err, -EBADMSG, "Empty line before the request line");
	m = http_span(line, n, 0, http_is_tchar);
	if (m == 0 || m == n || line[m] != ' ')
		return al_error_set(
		    err, -EBADMSG,
		    "Request line: the method is not a token followed by one space, "
		    "at offset %zu \"%s\"",
		    m, quote(line + m, n - m, q));
	t = http_span(line, n, m + 1, http_is_vchar);
	if (t == m + 1 || t == n || line[t] != ' ')
		return al_error_set(err, -EBADMSG,
				    "Request line: the target is not visible ASCII followed by one "
				    "space, at offset %zu \"%s\"",
				    t, quote(line + t, n - t, q));
	if (n - t - 1 != strlen("HTTP/1.x") || memcmp(line + t + 1, "HTTP/1.", 7) != 0 ||
	    (line[n - 1] != '0' && line[n - 1] != '1'))
		return al_error_set(err, -EBADMSG,
				    "Request line: version \"%s\" is not HTTP/1.0 or HTTP/1.1",
				    quote(line + t + 1, n - t - 1, q));
	req->method = line;
	req->method_len = m;
	req->target = line + m + 1;
	req->target_len = t - m - 1;
	req->minor_version = line[n - 1] - '0';
	req->connect = method_is(req, "CONNECT");
	return check_target(req, err);
}

int netns_http_request_line_begins(const char *buf, size_t n)
{
	/* After the target: the version ('x' a minor version, 0 or 1) and the line's end. */
	static const char tail[] = " HTTP/1.x\r\n";
	size_t m, t;

	m = http_span(buf, n, 0, http_is_tchar);
	if (m > NETNS_HTTP_METHOD_MAX)
		return 0;
	if (m == n)
		return -EAGAIN;
	if (m == 0 || buf[m] != ' ')
		return 0;
	t = http_span(buf, n, m + 1, http_is_vchar);
	if (t == m + 1 && t < n)
		return 0; /* no target */
	for (size_t k = 0; k < sizeof(tail) - 1; k++, t++) {
		if (t == n)
			return -EAGAIN;
		if (tail[k] == 'x' ? buf[t] != '0' && buf[t] != '1' : buf[t] != tail[k])
			return 0;
	}
	return 1;
}

/* field-line = field-name ":" OWS field-value OWS (RFC 9112 5). The line holds no control
 * characters but HTAB (next_line() saw to that), so whatever follows the colon is a valid
 * field value once the whitespace around it is dropped. */
static int parse_field_line(const char *line, size_t n, size_t idx, struct netns_http_header *h,
			    struct al_error *err)
{
	size_t colon, ows, v, e;
	char q[QUOTE_SIZE];

	if (http_is_ows((unsigned char)line[0]))
		return al_error_set(err, -EBADMSG,
				    "Header %zu starts with whitespace (obs-fold is refused)", idx);
	colon = http_span(line, n, 0, http_is_tchar);
	ows = http_span(line, n, colon, http_is_ows);
	if (ows > colon && ows < n && line[ows] == ':')
		return al_error_set(err, -EBADMSG, "Header %zu has whitespace before its ':'", idx);
	if (colon == 0 || colon == n || line[colon] != ':')
		return al_error_set(
		    err, -EBADMSG,
		    "Header %zu: the name is not a token followed by ':', at offset "
		    "%zu \"%s\"",
		    idx, colon, quote(line + colon, n - colon, q));
	v = http_span(line, n, colon + 1, http_is_ows);
	for (e = n; e > v && http_is_ows((unsigned char)line[e - 1]); e--)
		;
	*h = (struct netns_http_header){
	    .name = line, .name_len = colon, .value = line + v, .value_len = e - v};
	return 0;
}

static int parse_host(struct netns_http_request *req, struct head_fields *f,
		      const struct netns_http_header *h, struct al_error *err)
{
	char q[QUOTE_SIZE];

	if (++f->n_host > 1)
		return al_error_set(err, -EBADMSG, "More than one Host header");
	if (!is_authority(h->value, h->value_len, false))
		return al_error_set(err, -EBADMSG, "Host \"%s\" is not host[:port]",
				    quote(h->value, h->value_len, q));
	req->host = h->value;
	req->host_len = h->value_len;
	return 0;
}

/* Content-Length = 1*DIGIT (RFC 9110 8.6). A list, or several headers, pass only when every
 * value is the same number. */
static int parse_content_length(struct head_fields *f, const struct netns_http_header *h,
				struct al_error *err)
{
	struct list_iter it = list_iter(h->value, h->value_len);
	char q[QUOTE_SIZE];
	const char *s;
	size_t n;

	while (list_next(&it, &s, &n)) {
		uint64_t v = 0;

		if (n == 0 || http_span(s, n, 0, http_is_digit) != n)
			return al_error_set(err, -EBADMSG,
					    "Content-Length \"%s\" is not a decimal number",
					    quote(s, n, q));
		for (size_t i = 0; i < n; i++) {
			v = v * 10 + (uint64_t)(s[i] - '0');
			if (v > BODY_LENGTH_MAX)
				return al_error_set(err, -EBADMSG,
						    "Content-Length \"%s\" is larger than 2^53-1",
						    quote(s, n, q));
		}
		if (f->has_length && v != f->length)
			return al_error_set(err, -EBADMSG,
					    "Content-Length values %" PRIu64 " and %" PRIu64
					    " differ",
					    f->length, v);
		f->has_length = true;
		f->length = v;
	}
	return 0;
}

/* Transfer-Encoding = #transfer-coding (RFC 9112 6.1), from one header only: chunked last and
 * once, the codings before it plain tokens (no parameters, which no coding in use takes). */
static int parse_transfer_encoding(struct head_fields *f, const struct netns_http_header *h,
				   struct al_error *err)
{
	struct list_iter it = list_iter(h->value, h->value_len);
	bool chunked = false;
	char q[QUOTE_SIZE];
	const char *s;
	size_t n;

	if (f->has_transfer_encoding)
		return al_error_set(err, -EBADMSG, "More than one Transfer-Encoding header");
	f->has_transfer_encoding = true;
	while (list_next(&it, &s, &n)) {
		if (chunked)
			return al_error_set(err, -EBADMSG,
					    "Transfer-Encoding: chunked is not the last coding");
		if (!is_token(s, n))
			return al_error_set(err, -EBADMSG,
					    "Transfer-Encoding: \"%s\" is not a coding name",
					    quote(s, n, q));
		chunked = ascii_eq(s, n, "chunked");
	}
	if (!chunked)
		return al_error_set(err, -EBADMSG,
				    "Transfer-Encoding \"%s\" does not end in chunked",
				    quote(h->value, h->value_len, q));
	return 0;
}

/* Connection = #connection-option (RFC 9110 7.6.1); only close and keep-alive matter here. */
static int parse_connection(struct head_fields *f, const struct netns_http_header *h,
			    struct al_error *err)
{
	struct list_iter it = list_iter(h->value, h->value_len);
	char q[QUOTE_SIZE];
	const char *s;
	size_t n;

	while (list_next(&it, &s, &n)) {
		if (n == 0)
			continue; /* empty elements are allowed in lists */
		if (!is_token(s, n))
			return al_error_set(err, -EBADMSG,
					    "Connection: \"%s\" is not an option name",
					    quote(s, n, q));
		if (ascii_eq(s, n, "close"))
			f->close = true;
		else if (ascii_eq(s, n, "keep-alive"))
			f->keep_alive = true;
	}
	return 0;
}

/* Whether name, which is not lower, reads as lower once each '_' in it is taken for '-': CGI-style
 * servers map both spellings to one variable. */
static bool is_underscore_alias(const char *name, size_t n, const char *lower)
{
	char alias[sizeof("transfer-encoding")];

	if (n >= sizeof(alias) || !memchr(name, '_', n))
		return false;
	for (size_t i = 0; i < n; i++)
		alias[i] = name[i] == '_' ? '-' : name[i];
	return ascii_eq(alias, n, lower);
}

static int parse_field(struct netns_http_request *req, struct head_fields *f,
		       const struct netns_http_header *h, struct al_error *err)
{
	char q[QUOTE_SIZE];

	if (ascii_eq(h->name, h->name_len, "host"))
		return parse_host(req, f, h, err);
	if (ascii_eq(h->name, h->name_len, "content-length"))
		return parse_content_length(f, h, err);
	if (ascii_eq(h->name, h->name_len, "transfer-encoding"))
		return parse_transfer_encoding(f, h, err);
	if (ascii_eq(h->name, h->name_len, "connection"))
		return parse_connection(f, h, err);
	/* The proxy would frame without it, a server that folds '_' into '-' with it. */
	if (is_underscore_alias(h->name, h->name_len, "content-length") ||
	    is_underscore_alias(h->name, h->name_len, "transfer-encoding"))
		return al_error_set(err, -EBADMSG, "Header \"%s\" spells a framing header with '_'",
				    quote(h->name, h->name_len, q));
	return 0;
}

/* The message's framing (RFC 9112 6.3) and persistence (RFC 9112 9.3), once all fields are in. */
static int judge_head(struct netns_http_request *req, const struct head_fields *f,
		      struct al_error *err)
{
	if (f->has_transfer_encoding && f->has_length)
		return al_error_set(err, -EBADMSG,
				    "Both Transfer-Encoding and Content-Length are present");
	/* RFC 9112 6.1: HTTP/1.0 has no Transfer-Encoding; its framing is to be taken as faulty. */
	if (f->has_transfer_encoding && req->minor_version == 0)
		return al_error_set(err, -EBADMSG, "Transfer-Encoding in an HTTP/1.0 request");
	if (req->connect && (f->has_transfer_encoding || f->length > 0))
		return al_error_set(err, -EBADMSG, "CONNECT request with content");
	if (req->minor_version == 1 && f->n_host == 0)
		return al_error_set(err, -EBADMSG, "HTTP/1.1 request without a Host header");

	if (req->connect)
		req->body = NETNS_HTTP_BODY_NONE;
	else if (f->has_transfer_encoding)
		req->body = NETNS_HTTP_BODY_CHUNKED;
	else if (f->has_length)
		req->body = NETNS_HTTP_BODY_LENGTH;
	req->content_length = req->body == NETNS_HTTP_BODY_LENGTH ? f->length : 0;
	req->keep_alive = !f->close && (req->minor_version == 1 || f->keep_alive);
	return 0;
}

int netns_http_parse_request(const char *buf, size_t len, struct netns_http_request *ret,
			     struct al_error *err)
{
	struct netns_http_request req = {.body = NETNS_HTTP_BODY_NONE};
	struct head_fields f = {0};
	size_t limit = MIN(len, (size_t)NETNS_HTTP_HEAD_MAX), pos = 0, line_len;
	int r;

	r = next_line(buf, len, limit, &pos, &line_len, err);
	if (r < 0)
		return r;
	r = parse_request_line(buf, line_len, &req, err);
	if (r < 0)
		return r;
	for (;;) {
		const char *line = buf + pos;

		r = next_line(buf, len, limit, &pos, &line_len, err);
		if (r < 0)
			return r;
		if (line_len == 0)
			break;
		if (req.n_headers == NETNS_HTTP_HEADERS_MAX)
			return al_error_set(err, -EMSGSIZE, "More than %d headers",
					    NETNS_HTTP_HEADERS_MAX);
		r = parse_field_line(line, line_len, req.n_headers + 1, &req.headers[req.n_headers],
				     err);
		if (r < 0)
			return r;
		r = parse_field(&req, &f, &req.headers[req.n_headers], err);
		if (r < 0)
			return r;
		req.n_headers++;
	}
	req.head_len = pos;
	r = judge_head(&req, &f, err);
	if (r < 0)
		return r;
	*ret = req;
	return 0;
}

/* quoted-string (RFC 9110 5.6.4) at buf[*pos], which is '"'. */
static int skip_quoted_string(const char *buf, size_t n, size_t *pos)
{
	for (size_t i = *pos + 1; i < n; i++) {
		unsigned char c = (unsigned char)buf[i];

		if (c == '"') {
			*pos = i + 1;
			return 0;
		}
		if (c == '\\') {
			if (++i == n)
				break;
			c = (unsigned char)buf[i];
		}
		if (http_is_ctl(c))
			return -EBADMSG;
	}
	return -EAGAIN;
}

/* chunk-ext = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] ), chunk-ext-val =
 * token / quoted-string (RFC 9112 7.1.1). Moves *pos past the extensions at buf[*pos]; whitespace
 * not followed by ';' or '=' is left for the caller to refuse. */
static int skip_chunk_ext(const char *buf, size_t n, size_t *pos)
{
	size_t i = *pos, j;
	int r;

	for (;;) {
		j = http_span(buf, n, i, http_is_ows);
		if (j == n)
			return -EAGAIN;
		if (buf[j] != ';')
			break;
		i = http_span(buf, n, j + 1, http_is_ows);
		j = http_span(buf, n, i, http_is_tchar);
		if (j == n)
			return -EAGAIN;
		if (j == i)
			return -EBADMSG;
		i = j;
		j = http_span(buf, n, i, http_is_ows);
		if (j == n)
			return -EAGAIN;
		if (buf[j] != '=')
			continue;
		i = http_span(buf, n, j + 1, http_is_ows);
		if (i == n)
			return -EAGAIN;
		if (buf[i] == '"') {
			r = skip_quoted_string(buf, n, &i);
			if (r < 0)
				return r;
			continue;
		}
		j = http_span(buf, n, i, http_is_tchar);
		if (j == n)
			return -EAGAIN;
		if (j == i)
			return -EBADMSG;
		i = j;
	}
	*pos = i;
	return 0;
}

static int parse_chunk_line(const char *buf, size_t n, uint64_t *ret_size, size_t *ret_line_len)
{
	uint64_t size = 0;
	size_t i;
	int r;

	for (i = 0; i < n && is_hex_digit((unsigned char)buf[i]); i++) {
		size = size << 4 | hex_value((unsigned char)buf[i]);
		if (i == CHUNK_SIZE_DIGITS_MAX || size > BODY_LENGTH_MAX)
			return -EBADMSG;
	}
	if (i == n)
		return -EAGAIN;
	if (i == 0)
		return -EBADMSG;
	r = skip_chunk_ext(buf, n, &i);
	if (r < 0)
		return r;
	if (buf[i] != '\r')
		return -EBADMSG;
	if (i + 1 == n)
		return -EAGAIN;
	if (buf[i + 1] != '\n')
		return -EBADMSG;
	*ret_size = size;
	*ret_line_len = i + 2;
	return 0;
}

int netns_http_parse_chunk_size(const char *buf, size_t len, uint64_t *ret_size,
				size_t *ret_line_len)
{
	int r;

	r = parse_chunk_line(buf, MIN(len, (size_t)CHUNK_LINE_MAX), ret_size, ret_line_len);
	/* Out of bytes within CHUNK_LINE_MAX: the line is too long, not cut short. */
	if (r == -EAGAIN && len >= CHUNK_LINE_MAX)
		return -EBADMSG;
	return r;
}
