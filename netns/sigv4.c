/* AWS Signature Version 4 (sigv4-internal.h has the contract): the Authorization header and the
 * presigned query parsed strictly, the canonical request built, and signed with HMAC-SHA256
 * (OpenSSL's, as netns/tls.c's; this file uses only its digests). A parse takes nothing it does
 * not understand: a field given twice, an unknown one, or a part out of shape is refused, since
 * AWS and the proxy must read the same request. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "common/text-util.h"
#include "netns/sigv4-internal.h"

/* The canonical request, at most: every byte of a head encoded as %XX, and then some. */
#define CANONICAL_MAX (4 * NETNS_HTTP_HEAD_MAX)

static bool is_unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '_' || c == '.' || c == '~';
}

static int hex_value(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -EINVAL;
}

bool netns_sigv4_is_hex64(const char *s, size_t n)
{
	if (n != NETNS_SIGV4_HEX_LEN)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* Percent-decodes s (n bytes) into out (size bytes): the decoded length, or -EBADMSG for a
 * malformed escape or when it does not fit. */
static ssize_t percent_decode(const char *s, size_t n, char *out, size_t size)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (c == '%') {
			int hi, lo;

			if (n - i < 3)
				return -EBADMSG;
			hi = hex_value((unsigned char)s[i + 1]);
			lo = hex_value((unsigned char)s[i + 2]);
			if (hi < 0 || lo < 0)
				return -EBADMSG;
			c = (char)(hi << 4 | lo);
			i += 2;
		}
		if (o == size)
			return -EBADMSG;
		out[o++] = c;
	}
	return (ssize_t)o;
}

/* ---- parsing ---- */

/* The next ','-separated element of an Authorization value at *p (before end), without the
 * white space around it; *p moves past its comma. False for the last one. */
static bool list_next(const char **p, const char *end, const char **ret, size_t *ret_len)
{
	const char *comma = memchr(*p, ',', (size_t)(end - *p)), *s = *p, *e = comma ? comma : end;

	while (s < e && (*s == ' ' || *s == '\t'))
		s++;
	while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	*p = comma ? comma + 1 : end;
	*ret = s;
	*ret_len = (size_t)(e - s);
	return comma != NULL;
}

static bool is_digits(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

/* Splits s->credential (n bytes) into its five parts. */
static int split_credential(struct netns_sigv4 *s, size_t n, struct al_error *err)
{
	struct netns_sigv4_str parts[5];
	const char *p = s->credential, *end = p + n;

	for (size_t i = 0; i < 5; i++) {
		const char *slash = i < 4 ? memchr(p, '/', (size_t)(end - p)) : NULL;
		const char *e = i < 4 ? slash : end;

		if (!e || e == p)
			return al_error_set(err, -EBADMSG,
					    "The SigV4 credential is not "
					    "key/date/region/service/aws4_request");
		parts[i] = (struct netns_sigv4_str){p, (size_t)(e - p)};
		p = e + 1;
	}
	if (parts[1].n != 8 || !is_digits(parts[1].p, 8) ||
	    !(parts[4].n == 12 && memcmp(parts[4].p, "aws4_request", 12) == 0))
		return al_error_set(
		    err, -EBADMSG,
		    "The SigV4 credential scope is not date/region/service/aws4_request");
	for (size_t i = 0; i < 4; i++)
		for (size_t k = 0; k < parts[i].n; k++)
			if (!is_unreserved((unsigned char)parts[i].p[k]))
				return al_error_set(err, -EBADMSG,
						    "The SigV4 credential holds a character out of "
						    "place");
	s->key_id = parts[0];
	s->date = parts[1];
	s->region = parts[2];
	s->service = parts[3];
	return 0;
}

/* Lower-case tokens separated by ';', in strictly increasing order, none empty. */
static int check_signed_headers(const struct netns_sigv4 *s, struct al_error *err)
{
	const char *p = s->signed_headers, *end = p + s->signed_headers_len, *prev = NULL;
	size_t prev_n = 0;

	for (;;) {
		const char *semi = memchr(p, ';', (size_t)(end - p));
		const char *e = semi ? semi : end;
		size_t n = (size_t)(e - p);

		if (n == 0)
			return al_error_set(err, -EBADMSG, "SigV4 SignedHeaders has an empty name");
		for (size_t i = 0; i < n; i++)
			if (!http_is_tchar((unsigned char)p[i]) || (p[i] >= 'A' && p[i] <= 'Z'))
				return al_error_set(err, -EBADMSG,
						    "SigV4 SignedHeaders is not lower-case names");
		if (prev) {
			int c = memcmp(prev, p, MIN(prev_n, n));

			if (c > 0 || (c == 0 && prev_n >= n))
				return al_error_set(err, -EBADMSG,
						    "SigV4 SignedHeaders is not sorted, or repeats "
						    "a name");
		}
		prev = p;
		prev_n = n;
		if (!semi)
			return 0;
		p = semi + 1;
	}
}

enum {
	F_CREDENTIAL,
	F_SIGNED_HEADERS,
	F_SIGNATURE,
	F_ALGORITHM,
	F_DATE,
	N_FIELDS,
};

/* Stores field f's value v (n bytes, decoded when decode) into s. */
static int set_field(struct netns_sigv4 *s, int f, const char *v, size_t n, bool decode,
		     struct al_error *err)
{
	ssize_t l;

	switch (f) {
	case F_CREDENTIAL:
		l = decode ? percent_decode(v, n, s->credential, sizeof(s->credential))
			   : (n <= sizeof(s->credential) ? (ssize_t)n : -EBADMSG);
		if (l < 0)
			return al_error_set(err, -EBADMSG, "The SigV4 credential is malformed");
		if (!decode)
			memcpy(s->credential, v, n);
		return split_credential(s, (size_t)l, err);
	case F_SIGNED_HEADERS:
		l = decode ? percent_decode(v, n, s->signed_headers, sizeof(s->signed_headers))
			   : (n <= sizeof(s->signed_headers) ? (ssize_t)n : -EBADMSG);
		if (l < 0)
			return al_error_set(err, -EBADMSG, "SigV4 SignedHeaders is malformed");
		if (!decode)
			memcpy(s->signed_headers, v, n);
		s->signed_headers_len = (size_t)l;
		return check_signed_headers(s, err);
	case F_SIGNATURE:
		if (!netns_sigv4_is_hex64(v, n))
			return al_error_set(err, -EBADMSG,
					    "The SigV4 signature is not 64 lower-case hex digits");
		memcpy(s->signature, v, n);
		s->signature[n] = '\0';
		return 0;
	case F_ALGORITHM:
		if (n != strlen(NETNS_SIGV4_ALGORITHM) || memcmp(v, NETNS_SIGV4_ALGORITHM, n) != 0)
			return al_error_set(err, -EBADMSG,
					    "X-Amz-Algorithm is not " NETNS_SIGV4_ALGORITHM);
		return 0;
	case F_DATE:
		if (n != 16 || !is_digits(v, 8) || v[8] != 'T' || !is_digits(v + 9, 6) ||
		    v[15] != 'Z')
			return al_error_set(err, -EBADMSG, "X-Amz-Date is not YYYYMMDDTHHMMSSZ");
		memcpy(s->amz_date, v, n);
		s->amz_date[n] = '\0';
		return 0;
	}
	return -EINVAL;
}

int netns_sigv4_parse_authorization(const char *value, size_t n, struct netns_sigv4 *ret,
				    struct al_error *err)
{
	static const char *const names[] = {"Credential", "SignedHeaders", "Signature"};
	const size_t alg = strlen(NETNS_SIGV4_ALGORITHM);
	const char *p = value, *end = value + n;
	bool seen[3] = {false};
	int r;

	if (n < alg || memcmp(value, NETNS_SIGV4_ALGORITHM, alg) != 0 ||
	    (n > alg && value[alg] != ' '))
		return 0;
	*ret = (struct netns_sigv4){0};
	p += alg;
	for (bool more = true; more;) {
		const char *elem, *eq;
		size_t len, f;

		more = list_next(&p, end, &elem, &len);
		eq = memchr(elem, '=', len);
		for (f = 0; eq && f < ELEMENTSOF(names); f++)
			if ((size_t)(eq - elem) == strlen(names[f]) &&
			    memcmp(elem, names[f], strlen(names[f])) == 0)
				break;
		if (!eq || f == ELEMENTSOF(names) || seen[f])
			return al_error_set(err, -EBADMSG,
					    "The AWS4-HMAC-SHA256 Authorization header is not "
					    "Credential=..., SignedHeaders=..., Signature=...");
		seen[f] = true;
		r = set_field(ret, (int)f, eq + 1, (size_t)(elem + len - eq - 1), false, err);
		if (r < 0)
			return r;
	}
	if (!seen[0] || !seen[1] || !seen[2])
		return al_error_set(err, -EBADMSG,
				    "The AWS4-HMAC-SHA256 Authorization header lacks Credential, "
				    "SignedHeaders or Signature");
	return 1;
}

/* The next '&'-separated parameter of a query at *p (before end): its name and value, as
 * written. False when none is left. */
static bool query_next(const char **p, const char *end, struct netns_sigv4_str *name,
		       struct netns_sigv4_str *value)
{
	const char *amp, *eq;

	if (*p >= end)
		return false;
	amp = memchr(*p, '&', (size_t)(end - *p));
	if (!amp)
		amp = end;
	eq = memchr(*p, '=', (size_t)(amp - *p));
	*name = (struct netns_sigv4_str){*p, (size_t)((eq ? eq : amp) - *p)};
	*value = eq ? (struct netns_sigv4_str){eq + 1, (size_t)(amp - eq - 1)}
		    : (struct netns_sigv4_str){amp, 0};
	*p = amp + 1;
	return true;
}

bool netns_sigv4_query_param(const char *query, size_t n, const char *name,
			     struct netns_sigv4_str *ret)
{
	struct netns_sigv4_str k, v;
	const char *p = query;

	while (query_next(&p, query + n, &k, &v))
		if (k.n == strlen(name) && memcmp(k.p, name, k.n) == 0) {
			*ret = v;
			return true;
		}
	return false;
}

int netns_sigv4_parse_query(const char *query, size_t n, struct netns_sigv4 *ret,
			    struct al_error *err)
{
	static const char *const names[N_FIELDS] = {
	    [F_CREDENTIAL] = "X-Amz-Credential",
	    [F_SIGNED_HEADERS] = "X-Amz-SignedHeaders",
	    [F_SIGNATURE] = "X-Amz-Signature",
	    [F_ALGORITHM] = "X-Amz-Algorithm",
	    [F_DATE] = "X-Amz-Date",
	};
	bool seen[N_FIELDS] = {false}, any = false;
	struct netns_sigv4_str k, v;
	const char *p = query;
	int r;

	*ret = (struct netns_sigv4){.presigned = true};
	while (query_next(&p, query + n, &k, &v)) {
		size_t f;

		for (f = 0; f < N_FIELDS; f++)
			if (k.n == strlen(names[f]) && memcmp(k.p, names[f], k.n) == 0)
				break;
		if (f == N_FIELDS)
			continue;
		any = true;
		if (seen[f])
			return al_error_set(err, -EBADMSG, "%s is given twice", names[f]);
		seen[f] = true;
		r = set_field(ret, (int)f, v.p, v.n, true, err);
		if (r < 0)
			return r;
	}
	if (!any)
		return 0;
	for (size_t f = 0; f < N_FIELDS; f++)
		if (!seen[f])
			return al_error_set(err, -EBADMSG, "The presigned query lacks %s",
					    names[f]);
	return 1;
}

/* ---- the canonical request ---- */

struct out {
	char *p;
	size_t n, size;
	int r;
};

static void out_put(struct out *o, const void *p, size_t n)
{
	if (o->r < 0)
		return;
	if (n > o->size - o->n) {
		o->r = -EBADMSG;
		return;
	}
	memcpy(o->p + o->n, p, n);
	o->n += n;
}

static void out_str(struct out *o, const char *s)
{
	out_put(o, s, strlen(s));
}

/* Writes s (n bytes) URI-encoded: every byte but the unreserved ones (and slash_ok '/') as %XX
 * in upper case. */
static void out_encoded(struct out *o, const char *s, size_t n, bool slash_ok)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		char e[4];

		if (is_unreserved(c) || (slash_ok && c == '/'))
			out_put(o, &s[i], 1);
		else {
			(void)snprintf(e, sizeof(e), "%%%02X", c);
			out_put(o, e, 3);
		}
	}
}

/* The canonical URI of path (n bytes, as written): S3's is the path itself; every other
 * service's has its empty and dot segments removed (RFC 3986 5.2.4, as botocore and AWS do) and
 * is encoded again (so "%2F" becomes "%252F"). */
static void out_canonical_uri(struct out *o, const char *path, size_t n, bool s3)
{
	const char *segs[256];
	size_t lens[256], k = 0;
	const char *p = path, *end = path + n;

	if (n == 0) {
		out_str(o, "/");
		return;
	}
	if (s3) {
		out_put(o, path, n);
		return;
	}
	while (p < end) {
		const char *slash = memchr(p, '/', (size_t)(end - p)), *e = slash ? slash : end;
		size_t l = (size_t)(e - p);

		if (l == 2 && p[0] == '.' && p[1] == '.') {
			if (k > 0)
				k--;
		} else if (l > 0 && !(l == 1 && p[0] == '.')) {
			if (k == ELEMENTSOF(segs)) {
				o->r = -EBADMSG;
				return;
			}
			segs[k] = p;
			lens[k++] = l;
		}
		p = slash ? slash + 1 : end;
	}
	if (path[0] == '/')
		out_str(o, "/");
	for (size_t i = 0; i < k; i++) {
		if (i > 0)
			out_str(o, "/");
		out_encoded(o, segs[i], lens[i], false);
	}
	if (path[n - 1] == '/' && k > 0)
		out_str(o, "/");
}

struct param {
	char *text; /* "name=value", canonically encoded */
	size_t n;
};

static int param_cmp(const void *a, const void *b)
{
	const struct param *x = a, *y = b;
	const char *xe = memchr(x->text, '=', x->n), *ye = memchr(y->text, '=', y->n);
	size_t xk = (size_t)(xe - x->text), yk = (size_t)(ye - y->text);
	int c = memcmp(x->text, y->text, MIN(xk, yk));

	if (c != 0 || xk != yk)
		return c != 0 ? c : (xk < yk ? -1 : 1);
	c = memcmp(xe, ye, MIN(x->n - xk, y->n - yk));
	if (c != 0 || x->n - xk == y->n - yk)
		return c;
	return x->n - xk < y->n - yk ? -1 : 1;
}

/* Writes one parameter's name or value (n bytes, as written) decoded and encoded again into o. */
static int put_param_part(struct out *o, const char *s, size_t n)
{
	char *d = malloc(MAX(n, (size_t)1));
	ssize_t l;

	if (!d)
		return -ENOMEM;
	l = percent_decode(s, n, d, n);
	if (l >= 0)
		out_encoded(o, d, (size_t)l, false);
	free(d);
	return l < 0 ? (int)l : 0;
}

/* The canonical query of query (n bytes; a presigned one without X-Amz-Signature). */
static int out_canonical_query(struct out *o, const char *query, size_t n, bool presigned)
{
	_cleanup_free_ struct param *params = NULL;
	_cleanup_free_ char *text = NULL;
	struct out t = {.size = 3 * n + 2 * (n / 2 + 1)};
	struct netns_sigv4_str k, v;
	const char *p = query;
	size_t np = 0, cap = n / 2 + 1;
	int r = 0;

	if (n == 0)
		return 0;
	params = calloc(cap, sizeof(*params));
	text = t.p = malloc(t.size);
	if (!params || !text)
		return -ENOMEM;
	while (r >= 0 && query_next(&p, query + n, &k, &v)) {
		size_t start = t.n;

		if (k.n == 0 && v.n == 0)
			continue;
		if (presigned && k.n == 15 && memcmp(k.p, "X-Amz-Signature", 15) == 0)
			continue;
		r = put_param_part(&t, k.p, k.n);
		out_str(&t, "=");
		if (r >= 0)
			r = put_param_part(&t, v.p, v.n);
		if (r >= 0 && t.r < 0)
			r = t.r;
		if (r >= 0 && np < cap)
			params[np++] = (struct param){t.p + start, t.n - start};
	}
	if (r < 0)
		return r;
	qsort(params, np, sizeof(*params), param_cmp);
	for (size_t i = 0; i < np; i++) {
		if (i > 0)
			out_str(o, "&");
		out_put(o, params[i].text, params[i].n);
	}
	return 0;
}

/* Writes the value of header name (n bytes, lower-case) as AWS canonicalises it: each of its
 * fields trimmed, runs of white space inside made one space, the fields joined by ','. False
 * when the request has no such header. */
static bool out_header_value(struct out *o, const struct netns_sigv4_request *rq, const char *name,
			     size_t n)
{
	bool found = false;

	for (size_t i = 0; i < rq->n_headers; i++) {
		const struct netns_http_header *h = &rq->headers[i];
		bool space = false, any = false;

		if (h->name_len != n)
			continue;
		for (size_t k = 0; k < n; k++)
			if ((h->name[k] >= 'A' && h->name[k] <= 'Z' ? h->name[k] + 32
								    : h->name[k]) != name[k])
				goto next;
		if (found)
			out_str(o, ",");
		found = true;
		for (size_t k = 0; k < h->value_len; k++) {
			char c = h->value[k];

			if (c == ' ' || c == '\t') {
				space = any;
				continue;
			}
			if (space)
				out_str(o, " ");
			space = false;
			any = true;
			out_put(o, &c, 1);
		}
	next:;
	}
	return found;
}

static int canonical_request(const struct netns_sigv4 *s, const struct netns_sigv4_request *rq,
			     struct out *o, struct al_error *err)
{
	const char *t = rq->target.p, *q = memchr(t, '?', rq->target.n);
	size_t path_n = q ? (size_t)(q - t) : rq->target.n;
	const char *h = s->signed_headers, *hend = h + s->signed_headers_len;
	bool s3 = s->service.n == 2 && memcmp(s->service.p, "s3", 2) == 0;
	int r;

	out_put(o, rq->method.p, rq->method.n);
	out_str(o, "\n");
	out_canonical_uri(o, t, path_n, s3);
	out_str(o, "\n");
	r = out_canonical_query(o, q ? q + 1 : t, q ? rq->target.n - path_n - 1 : 0, s->presigned);
	if (r < 0)
		return r == -ENOMEM
			   ? r
			   : al_error_set(err, r, "The query of a SigV4 request is malformed");
	out_str(o, "\n");
	while (h < hend) {
		const char *semi = memchr(h, ';', (size_t)(hend - h)), *e = semi ? semi : hend;

		out_put(o, h, (size_t)(e - h));
		out_str(o, ":");
		if (!out_header_value(o, rq, h, (size_t)(e - h)))
			return al_error_set(err, -EBADMSG, "The signed header %.*s is missing",
					    (int)MIN((size_t)(e - h), (size_t)64), h);
		out_str(o, "\n");
		h = semi ? semi + 1 : hend;
	}
	out_str(o, "\n");
	out_put(o, s->signed_headers, s->signed_headers_len);
	out_str(o, "\n");
	out_put(o, rq->payload_hash.p, rq->payload_hash.n);
	if (o->r < 0)
		return al_error_set(err, o->r, "The canonical SigV4 request is too long");
	return 0;
}

/* ---- signing ---- */

int netns_sigv4_sha256_hex(const void *p, size_t n, char ret[static NETNS_SIGV4_HEX_LEN + 1])
{
	uint8_t md[32];
	unsigned len = 0;

	if (!EVP_Digest(p, n, md, &len, EVP_sha256(), NULL) || len != sizeof(md))
		return -EIO;
	al_hex_lower(md, sizeof(md), ret);
	return 0;
}

static int hmac(const uint8_t *key, size_t key_len, const void *data, size_t n, uint8_t out[32])
{
	unsigned len = 0;

	if (!HMAC(EVP_sha256(), key, (int)key_len, data, n, out, &len) || len != 32)
		return -EIO;
	return 0;
}

/* kSigning = HMAC(HMAC(HMAC(HMAC("AWS4" secret, date), region), service), "aws4_request"). */
int netns_sigv4_signing_key(const struct netns_sigv4 *s, const uint8_t *secret, size_t secret_len,
			    uint8_t key[static NETNS_SIGV4_KEY_LEN])
{
	uint8_t *k0;
	int r;

	k0 = malloc(secret_len + 4);
	if (!k0)
		return -ENOMEM;
	memcpy(k0, "AWS4", 4);
	memcpy(k0 + 4, secret, secret_len);
	r = hmac(k0, secret_len + 4, s->date.p, s->date.n, key);
	OPENSSL_cleanse(k0, secret_len + 4);
	free(k0);
	if (r >= 0)
		r = hmac(key, 32, s->region.p, s->region.n, key);
	if (r >= 0)
		r = hmac(key, 32, s->service.p, s->service.n, key);
	if (r >= 0)
		r = hmac(key, 32, "aws4_request", 12, key);
	return r;
}

int netns_sigv4_sign(const struct netns_sigv4 *s, const struct netns_sigv4_request *rq,
		     const uint8_t *secret, size_t secret_len,
		     char ret[static NETNS_SIGV4_HEX_LEN + 1], struct al_error *err)
{
	struct out o = {.size = CANONICAL_MAX};
	char cr_hash[NETNS_SIGV4_HEX_LEN + 1], sts[512];
	uint8_t key[32], sig[32];
	int r, l;

	o.p = malloc(o.size);
	if (!o.p)
		return -ENOMEM;
	r = canonical_request(s, rq, &o, err);
	if (r >= 0)
		r = netns_sigv4_sha256_hex(o.p, o.n, cr_hash);
	OPENSSL_cleanse(o.p, o.n);
	free(o.p);
	if (r < 0)
		return r;
	l = snprintf(sts, sizeof(sts),
		     NETNS_SIGV4_ALGORITHM "\n%.*s\n%.*s/%.*s/%.*s/aws4_request\n%s",
		     (int)rq->amz_date.n, rq->amz_date.p, (int)s->date.n, s->date.p,
		     (int)s->region.n, s->region.p, (int)s->service.n, s->service.p, cr_hash);
	if (l < 0 || (size_t)l >= sizeof(sts))
		return al_error_set(err, -EBADMSG, "The SigV4 scope is too long");
	r = netns_sigv4_signing_key(s, secret, secret_len, key);
	if (r >= 0)
		r = hmac(key, sizeof(key), sts, (size_t)l, sig);
	OPENSSL_cleanse(key, sizeof(key));
	if (r < 0)
		return al_error_set(err, r, "Signing failed");
	al_hex_lower(sig, sizeof(sig), ret);
	return 0;
}

int netns_sigv4_hmac_hex(const uint8_t key[static NETNS_SIGV4_KEY_LEN], const void *data, size_t n,
			 char ret[static NETNS_SIGV4_HEX_LEN + 1])
{
	uint8_t sig[32];
	int r = hmac(key, NETNS_SIGV4_KEY_LEN, data, n, sig);

	if (r < 0)
		return r;
	al_hex_lower(sig, sizeof(sig), ret);
	return 0;
}

bool netns_sigv4_equal(const char *a, const char *b)
{
	return CRYPTO_memcmp(a, b, NETNS_SIGV4_HEX_LEN) == 0;
}
