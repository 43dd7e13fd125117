/* AWS SigV4 requests of the inspected flow: a request signed (in its Authorization header, or
 * presigned in its query) with the surrogate of an AWS access key id is verified with the
 * surrogate secret access key, its scope checked against the credential's, and signed again with
 * the real secret: the real key id goes into its credential, the real session token into
 * X-Amz-Security-Token (header or query), and the new signature in place of the sandbox's. The
 * real secret never goes on the wire, and its surrogate is never swapped (a raw one is refused).
 *
 * An aws-chunked body signed chunk by chunk (STREAMING-AWS4-HMAC-SHA256-PAYLOAD, and -TRAILER)
 * is signed again chunk by chunk as it streams (sigv4-chunks.c), along a chain whose seed is the
 * new signature of the head.
 *
 * What is not done (refused, so nothing goes out unsigned or with the sandbox's signature): a
 * body whose hash the request does not carry (x-amz-content-sha256) unless http-flow.c gathered
 * it whole first (flow_sigv4_body_wanted()), and chunk signing where the caller cannot stream
 * the body through a re-signer (HTTP/2). */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "broker/client.h"
#include "netns/http-flow-internal.h"
#include "netns/sigv4-internal.h"
#include "policy/policy.h"

#define TOKEN_HEADER "x-amz-security-token"
/* How far from now a request's X-Amz-Date may be (AWS's own allowance of clock skew), and how old
 * a presigned URL's may be (the longest X-Amz-Expires AWS takes: 7 days). */
#define SKEW_SEC (15 * 60)
#define PRESIGNED_AGE_MAX (7 * 24 * 60 * 60)

static const struct policy_credential *credential_named(const struct netns_http_flow *f,
							const char *name)
{
	const struct policy *p = f->o.policy;

	for (size_t i = 0; p && name && i < p->n_credentials; i++)
		if (streq(p->credentials[i].name, name))
			return &p->credentials[i];
	return NULL;
}

static const struct policy_credential *credential_of(const struct netns_http_flow *f, size_t idx)
{
	if (!f->o.policy || !f->o.surrogate_names)
		return NULL;
	return credential_named(f, f->o.surrogate_names[idx]);
}

/* The surrogate index of the credential named name, or SIZE_MAX. */
static size_t surrogate_of(const struct netns_http_flow *f, const char *name)
{
	for (size_t i = 0; name && i < f->n_surrogates; i++)
		if (streq(f->o.surrogate_names[i], name))
			return i;
	return SIZE_MAX;
}

bool flow_sigv4_is_secret(const struct netns_http_flow *f, size_t idx)
{
	const struct policy_credential *c = credential_of(f, idx);

	return c && c->kind == POLICY_CRED_AWS_SECRET;
}

static bool has_any_aws(const struct netns_http_flow *f)
{
	const struct policy *p = f->o.policy;

	for (size_t i = 0; p && i < p->n_credentials; i++)
		if (p->credentials[i].kind == POLICY_CRED_AWS_KEY_ID)
			return true;
	return false;
}

static const struct netns_http_header *header_named(const struct netns_http_request *req,
						    const char *lower, size_t *ret_count)
{
	const struct netns_http_header *h = NULL;
	size_t n = 0;

	for (size_t i = 0; i < req->n_headers; i++)
		if (ascii_eq(req->headers[i].name, req->headers[i].name_len, lower)) {
			if (!h)
				h = &req->headers[i];
			n++;
		}
	if (ret_count)
		*ret_count = n;
	return h;
}

static bool value_is(const struct netns_http_header *h, const char *s)
{
	return h->value_len == strlen(s) && memcmp(h->value, s, h->value_len) == 0;
}

/* The origin-form of req's target: its path and query. */
static struct netns_sigv4_str origin_of(const struct netns_http_request *req)
{
	const char *t = req->target, *a = memmem(t, req->target_len, "://", 3),
		   *end = t + req->target_len;

	if (t[0] == '/' || !a)
		return (struct netns_sigv4_str){t, req->target_len};
	a += 3;
	while (a < end && *a != '/' && *a != '?')
		a++;
	return (struct netns_sigv4_str){a, (size_t)(end - a)};
}

/* Parses req's signature: 0 (none), 1, or -EBADMSG. */
static int parse_signature(const struct netns_http_request *req, struct netns_sigv4 *s,
			   struct al_error *err)
{
	const struct netns_http_header *h;
	struct netns_sigv4_str o = origin_of(req);
	const char *q = memchr(o.p, '?', o.n);
	size_t count;
	int r = 0;

	h = header_named(req, "authorization", &count);
	if (h)
		r = netns_sigv4_parse_authorization(h->value, h->value_len, s, err);
	if (r != 0) {
		if (r > 0 && count > 1)
			return al_error_set(err, -EBADMSG,
					    "A SigV4 request has two Authorization "
					    "headers");
		return r;
	}
	if (!q)
		return 0;
	return netns_sigv4_parse_query(q + 1, (size_t)(o.p + o.n - q - 1), s, err);
}

/* The key credential whose surrogate key id s names, its index in *ret_idx; NULL when the key id
 * is no surrogate (not a request of ours). -EPERM for a surrogate of another kind. */
static int key_of(const struct netns_http_flow *f, const struct netns_sigv4 *s,
		  const struct policy_credential **ret, size_t *ret_idx, struct al_error *err)
{
	for (size_t i = 0; i < f->n_surrogates; i++) {
		const char *sur = f->o.surrogates[i];
		const struct policy_credential *c;

		if (strlen(sur) != s->key_id.n || memcmp(sur, s->key_id.p, s->key_id.n) != 0)
			continue;
		c = credential_of(f, i);
		if (!c || c->kind != POLICY_CRED_AWS_KEY_ID)
			return al_error_set(err, -EPERM,
					    "The SigV4 credential names the surrogate of %s, which "
					    "is not an AWS access key id",
					    c ? c->name : "a credential");
		*ret = c;
		*ret_idx = i;
		return 1;
	}
	*ret = NULL;
	return 0;
}

static bool in_scope(const struct policy_strv *v, const struct netns_sigv4_str *s)
{
	if (v->n == 0)
		return true;
	for (size_t i = 0; i < v->n; i++)
		if (strlen(v->items[i]) == s->n && memcmp(v->items[i], s->p, s->n) == 0)
			return true;
	return false;
}

/* What the two signatures cover: the request as the sandbox sent it, and as it goes upstream. */
struct sides {
	struct netns_http_header sent[NETNS_HTTP_HEADERS_MAX], fwd[NETNS_HTTP_HEADERS_MAX];
	struct netns_sigv4_request rq_sent, rq_fwd;
	char payload[NETNS_SIGV4_HEX_LEN + 1];
	char real_sig[NETNS_SIGV4_HEX_LEN + 1]; /* the head's new signature */
	bool streaming, trailer;		/* the body is signed chunk by chunk */
};

/* The payload hash: x-amz-content-sha256, else UNSIGNED-PAYLOAD for a presigned S3 request,
 * else the SHA-256 of the body (which must then be here whole). A body signed chunk by chunk
 * sets d->streaming, where the caller can stream it (can_stream). */
static int payload_hash(const struct netns_http_request *req, const struct netns_sigv4 *s,
			const uint8_t *body, size_t body_len, bool can_stream, struct sides *d,
			struct netns_sigv4_str *ret, struct al_error *err)
{
	const struct netns_http_header *h = header_named(req, "x-amz-content-sha256", NULL);
	int r;

	if (h) {
		d->trailer = value_is(h, NETNS_SIGV4_STREAMING "-TRAILER");
		d->streaming = d->trailer || value_is(h, NETNS_SIGV4_STREAMING);
		if (d->streaming && !can_stream)
			return al_error_set(
			    err, -EPERM,
			    "SigV4 chunk signing (%s) is not supported over HTTP/2: "
			    "sign the payload whole, or send it unsigned",
			    NETNS_SIGV4_STREAMING);
		if (d->streaming &&
		    (req->body == NETNS_HTTP_BODY_NONE ||
		     (req->body == NETNS_HTTP_BODY_LENGTH && req->content_length == 0)))
			return al_error_set(err, -EBADMSG,
					    "A request signed chunk by chunk has no body");
		*ret = (struct netns_sigv4_str){h->value, h->value_len};
		return 0;
	}
	if (s->presigned && s->service.n == 2 && memcmp(s->service.p, "s3", 2) == 0) {
		*ret = (struct netns_sigv4_str){"UNSIGNED-PAYLOAD", 16};
		return 0;
	}
	if (req->body != NETNS_HTTP_BODY_NONE &&
	    !(req->body == NETNS_HTTP_BODY_LENGTH && req->content_length == 0) && !body)
		return al_error_set(err, -EPERM,
				    "A SigV4 request whose body is not hashed in "
				    "x-amz-content-sha256 can be signed again only when it has a "
				    "Content-Length of at most %d bytes",
				    NETNS_SIGV4_BODY_MAX);
	r = netns_sigv4_sha256_hex(body ? body : (const uint8_t *)"", body ? body_len : 0,
				   d->payload);
	if (r < 0)
		return al_error_set(err, r, "Hashing the request body failed");
	*ret = (struct netns_sigv4_str){d->payload, NETNS_SIGV4_HEX_LEN};
	return 0;
}

/* The date the signature was made at: X-Amz-Date (header, or the presigned query's), on the
 * scope's day. */
static int amz_date(const struct netns_http_request *req, const struct netns_sigv4 *s,
		    struct netns_sigv4_str *ret, struct al_error *err)
{
	const struct netns_http_header *h = header_named(req, "x-amz-date", NULL);

	if (s->presigned)
		*ret = (struct netns_sigv4_str){s->amz_date, 16};
	else if (h && h->value_len == 16)
		*ret = (struct netns_sigv4_str){h->value, h->value_len};
	else
		return al_error_set(err, -EBADMSG, "A SigV4 request without a valid X-Amz-Date");
	if (memcmp(ret->p, s->date.p, 8) != 0)
		return al_error_set(err, -EBADMSG, "X-Amz-Date is not the SigV4 scope's date");
	return 0;
}

/* Whether the signed header list (names separated by ';') names name. */
static bool signs_header(const struct netns_sigv4 *s, const char *name)
{
	const char *p = s->signed_headers, *end = p + s->signed_headers_len;

	while (p < end) {
		const char *semi = memchr(p, ';', (size_t)(end - p));
		size_t n = semi ? (size_t)(semi - p) : (size_t)(end - p);

		if (ascii_eq(p, n, name))
			return true;
		p += n + 1;
	}
	return false;
}

/* YYYYMMDDTHHMMSSZ as seconds since the epoch in *ret; false when d is not that. */
static bool parse_amz_date(const struct netns_sigv4_str *d, time_t *ret)
{
	struct tm tm = {0};
	char buf[17];

	if (d->n != 16)
		return false;
	memcpy(buf, d->p, 16);
	buf[16] = '\0';
	if (sscanf(buf, "%4d%2d%2dT%2d%2d%2dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
		   &tm.tm_min, &tm.tm_sec) != 6)
		return false;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	*ret = timegm(&tm);
	return *ret != (time_t)-1;
}

/* What a signature made with the real key must be bound to, so that the sandbox cannot have one
 * for another host, without the token, or for later (found by the red team): the Host (and the
 * session token, when the request carries it in a header) among the signed headers, and a date
 * near now (a presigned URL's no later than now and at most 7 days old). */
static int check_binding(const struct netns_http_request *req, const struct netns_sigv4 *s,
			 const struct netns_sigv4_str *date, struct al_error *err)
{
	time_t t = 0, now = time(NULL);

	if (!signs_header(s, "host"))
		return al_error_set(err, -EPERM, "A SigV4 request must sign its Host header");
	if (!s->presigned && header_named(req, TOKEN_HEADER, NULL) &&
	    !signs_header(s, TOKEN_HEADER))
		return al_error_set(err, -EPERM,
				    "A SigV4 request must sign its X-Amz-Security-Token header");
	if (!parse_amz_date(date, &t))
		return al_error_set(err, -EBADMSG, "A SigV4 request without a valid X-Amz-Date");
	if (t > now + SKEW_SEC ||
	    (s->presigned ? t < now - PRESIGNED_AGE_MAX - SKEW_SEC : t < now - SKEW_SEC))
		return al_error_set(err, -EPERM,
				    "The SigV4 request's X-Amz-Date is too far from the time now");
	return 0;
}

void flow_sigv4_text_done(struct flow_sigv4_text *t)
{
	if (t)
		wipe_free(t->p, t->size);
}

static char *text_add(struct flow_sigv4_text *t, const char *p, size_t n)
{
	char *at = t->p + t->n;

	if (n > t->size - t->n)
		return NULL;
	memcpy(at, p, n);
	t->n += n;
	return at;
}

/* Percent-encodes s (n bytes) into t as a query value is. */
static bool text_add_encoded(struct flow_sigv4_text *t, const uint8_t *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char e[4];
		unsigned char c = s[i];
		bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
			     (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' || c == '~';

		(void)snprintf(e, sizeof(e), "%%%02X", c);
		if (!text_add(t, plain ? (const char *)&s[i] : e, plain ? 1 : 3))
			return false;
	}
	return true;
}

/* The presigned target with the real key id and token in place, the sandbox's signature still
 * there (its offset in *ret_sig); NULL when it does not fit. */
static const char *presigned_target(const struct netns_sigv4 *s,
				    const struct netns_sigv4_str *origin,
				    const struct broker_secret *key_id,
				    const struct broker_secret *token, struct flow_sigv4_text *t,
				    size_t *ret_sig)
{
	const char *q = memchr(origin->p, '?', origin->n), *p, *end = origin->p + origin->n;
	const char *start = t->p + t->n;

	if (!text_add(t, origin->p, (size_t)(q + 1 - origin->p)))
		return NULL;
	for (p = q + 1; p < end;) {
		const char *amp = memchr(p, '&', (size_t)(end - p)), *e = amp ? amp : end;
		size_t n = (size_t)(e - p);
		bool ok;

		if (n >= 17 && memcmp(p, "X-Amz-Credential=", 17) == 0) {
			const char *scope = s->key_id.p + s->key_id.n;

			ok = text_add(t, p, 17) &&
			     text_add_encoded(t, (const uint8_t *)key_id->data, key_id->len) &&
			     text_add_encoded(t, (const uint8_t *)scope,
					      strlen(s->credential) - s->key_id.n);
		} else if (token && n >= 21 && memcmp(p, "X-Amz-Security-Token=", 21) == 0) {
			ok = text_add(t, p, 21) &&
			     text_add_encoded(t, (const uint8_t *)token->data, token->len);
		} else {
			if (n > 16 && memcmp(p, "X-Amz-Signature=", 16) == 0)
				*ret_sig = t->n + 16;
			ok = text_add(t, p, n);
		}
		if (!ok || (amp && !text_add(t, "&", 1)))
			return NULL;
		p = amp ? amp + 1 : end;
	}
	return start;
}

/* Checks the signed headers of the sandbox's request: a surrogate may be in none but
 * X-Amz-Security-Token, and only the key's token there. Fills d->fwd: the headers as they go
 * upstream (the real token, Accept-Encoding as the flow rewrites it, the Host an absolute-form
 * target gives). */
static int forwarded_headers(struct netns_http_flow *f, const struct netns_http_request *req,
			     const struct netns_sigv4 *s, size_t token_idx,
			     const struct broker_secret *token, struct sides *d,
			     struct al_error *err)
{
	struct netns_sigv4_str o = origin_of(req);

	for (size_t i = 0; i < req->n_headers; i++) {
		const struct netns_http_header *h = &req->headers[i];
		struct match mt;
		const uint8_t *v = (const uint8_t *)h->value;

		d->sent[i] = d->fwd[i] = *h;
		if (ascii_eq(h->name, h->name_len, "accept-encoding")) {
			d->fwd[i].value = "identity";
			d->fwd[i].value_len = 8;
		} else if (ascii_eq(h->name, h->name_len, "host") && o.p != req->target) {
			const char *a = memmem(req->target, req->target_len, "://", 3) + 3;

			d->fwd[i].value = a;
			d->fwd[i].value_len = (size_t)(o.p - a);
		}
		if (!flow_matcher_find(&f->surrogates, v, v + h->value_len, &mt))
			continue;
		if (!token || !ascii_eq(h->name, h->name_len, TOKEN_HEADER) ||
		    h->value_len != strlen(f->o.surrogates[token_idx]) ||
		    memcmp(h->value, f->o.surrogates[token_idx], h->value_len) != 0)
			continue; /* left to the flow: swapped after signing, or refused */
		d->fwd[i].value = token->data;
		d->fwd[i].value_len = token->len;
	}
	(void)s;
	return 0;
}

static int resolve_part(struct netns_http_flow *f, const struct policy_credential *key,
			const char *name, size_t *ret_idx, const struct broker_secret **ret,
			struct al_error *err)
{
	size_t idx = surrogate_of(f, name);

	if (idx == SIZE_MAX)
		return al_error_set(err, -EPERM, "The AWS key %s has no surrogate for %s",
				    key->name, name);
	*ret_idx = idx;
	return flow_value(f, idx, "SigV4 signature", ret, err);
}

/* The upstream's Authorization value: the real key id and the new signature. */
static const char *authorization(const struct netns_sigv4 *s, const struct broker_secret *key_id,
				 const char *sig, struct flow_sigv4_text *t, size_t *ret_len)
{
	const char *start = t->p + t->n;
	const char *scope = s->key_id.p + s->key_id.n; /* "/date/region/service/aws4_request" */
	size_t scope_n = (size_t)(s->credential + strlen(s->credential) - scope);

	if (!text_add(t,
		      NETNS_SIGV4_ALGORITHM " Credential=", strlen(NETNS_SIGV4_ALGORITHM) + 12) ||
	    !text_add(t, key_id->data, key_id->len) || !text_add(t, scope, scope_n) ||
	    !text_add(t, ", SignedHeaders=", 16) ||
	    !text_add(t, s->signed_headers, s->signed_headers_len) ||
	    !text_add(t, ", Signature=", 12) || !text_add(t, sig, NETNS_SIGV4_HEX_LEN))
		return NULL;
	*ret_len = (size_t)(t->p + t->n - start);
	return start;
}

static bool is_key_id_text(const struct broker_secret *v)
{
	for (size_t i = 0; i < v->len; i++)
		if (!((v->data[i] >= 'A' && v->data[i] <= 'Z') ||
		      (v->data[i] >= '0' && v->data[i] <= '9')))
			return false;
	return v->len > 0;
}

static void swapped(struct netns_http_flow *f, size_t idx, const char *where)
{
	if (f->o.ops && f->o.ops->swapped)
		f->o.ops->swapped(f->o.userdata, f->o.surrogates[idx], where, f->stream);
}

/* Signs again: d is filled, s parsed, key found. */
static int sign_again(struct netns_http_flow *f, const struct netns_http_request *req,
		      const struct netns_sigv4 *s, const struct policy_credential *key,
		      size_t key_idx, struct sides *d, struct netns_http_request *ret,
		      struct flow_sigv4_text *t, struct al_error *err)
{
	const struct broker_secret *key_id, *secret, *token = NULL;
	struct netns_sigv4_str origin = origin_of(req);
	size_t secret_idx, token_idx = SIZE_MAX, sig_at = SIZE_MAX;
	char want[NETNS_SIGV4_HEX_LEN + 1], sig[NETNS_SIGV4_HEX_LEN + 1];
	const char *text;
	size_t text_len;
	int r;

	r = flow_value(f, key_idx, "SigV4 credential", &key_id, err);
	if (r < 0)
		return r;
	if (!is_key_id_text(key_id))
		return al_error_set(err, -EPERM, "The access key id of %s is not A-Z and 0-9",
				    key->name);
	r = resolve_part(f, key, key->aws_secret, &secret_idx, &secret, err);
	if (r >= 0 && key->aws_token)
		r = resolve_part(f, key, key->aws_token, &token_idx, &token, err);
	if (r < 0)
		return r;
	r = forwarded_headers(f, req, s, token_idx, token, d, err);
	if (r < 0)
		return r;

	/* The sandbox's signature, made with the surrogate secret. */
	d->rq_sent.target = origin;
	r = netns_sigv4_sign(s, &d->rq_sent, (const uint8_t *)f->o.surrogates[secret_idx],
			     strlen(f->o.surrogates[secret_idx]), want, err);
	if (r < 0)
		return r;
	if (!netns_sigv4_equal(want, s->signature))
		return al_error_set(err, -EPERM,
				    "The SigV4 signature of the request does not verify with the "
				    "surrogate secret of %s",
				    key->name);

	/* The request as it goes upstream, and its signature with the real secret. */
	*ret = *req;
	d->rq_fwd.target = origin;
	if (s->presigned) {
		text = presigned_target(s, &origin, key_id, token, t, &sig_at);
		if (!text || sig_at == SIZE_MAX)
			return al_error_set(err, -EMSGSIZE, "The presigned target is too long");
		ret->target = text;
		ret->target_len = (size_t)(t->p + t->n - text);
		d->rq_fwd.target = (struct netns_sigv4_str){ret->target, ret->target_len};
	}
	r = netns_sigv4_sign(s, &d->rq_fwd, (const uint8_t *)secret->data, secret->len, sig, err);
	if (r < 0)
		return r;
	if (s->presigned)
		memcpy(t->p + sig_at, sig, NETNS_SIGV4_HEX_LEN);
	memcpy(d->real_sig, sig, sizeof(sig));
	for (size_t i = 0; i < req->n_headers; i++) {
		struct netns_http_header *h = &ret->headers[i];

		if (ascii_eq(h->name, h->name_len, TOKEN_HEADER))
			h->value = d->fwd[i].value, h->value_len = d->fwd[i].value_len;
		if (s->presigned || !ascii_eq(h->name, h->name_len, "authorization"))
			continue;
		text = authorization(s, key_id, sig, t, &text_len);
		if (!text)
			return al_error_set(err, -EMSGSIZE, "The Authorization header is too long");
		h->value = text;
		h->value_len = text_len;
	}
	swapped(f, key_idx, s->presigned ? "sigv4 query" : "sigv4 header");
	if (token)
		swapped(f, token_idx, s->presigned ? "sigv4 query" : "sigv4 header");
	return 1;
}

/* x-amz-decoded-content-length: the length of the data an aws-chunked body carries. */
static int decoded_length(const struct netns_http_request *req, uint64_t *ret, struct al_error *err)
{
	const struct netns_http_header *h = header_named(req, "x-amz-decoded-content-length", NULL);
	uint64_t v = 0;

	if (!h || h->value_len == 0 || h->value_len > 15)
		goto bad;
	for (size_t i = 0; i < h->value_len; i++) {
		if (h->value[i] < '0' || h->value[i] > '9')
			goto bad;
		v = v * 10 + (uint64_t)(h->value[i] - '0');
	}
	*ret = v;
	return 0;
bad:
	return al_error_set(err, -EBADMSG,
			    "A request signed chunk by chunk needs a valid "
			    "x-amz-decoded-content-length");
}

/* The re-signer of a body signed chunk by chunk: both chains' keys and seeds (the sandbox's
 * signature of the head, and the new one). */
static int chunks_new(struct netns_http_flow *f, const struct netns_http_request *req,
		      const struct netns_sigv4 *s, const struct policy_credential *key,
		      const struct sides *d, struct netns_sigv4_chunks **ret, struct al_error *err)
{
	_cleanup_free_ struct netns_sigv4_chunks_keys *k = NULL;
	const struct broker_secret *secret;
	const char *scope = s->key_id.p + s->key_id.n + 1;
	size_t idx;
	int r;

	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	r = decoded_length(req, &k->decoded_len, err);
	if (r >= 0)
		r = resolve_part(f, key, key->aws_secret, &idx, &secret, err);
	if (r < 0)
		return r;
	r = netns_sigv4_signing_key(s, (const uint8_t *)f->o.surrogates[idx],
				    strlen(f->o.surrogates[idx]), k->sandbox_key);
	if (r >= 0)
		r = netns_sigv4_signing_key(s, (const uint8_t *)secret->data, secret->len,
					    k->real_key);
	if (r >= 0) {
		memcpy(k->sandbox_seed, s->signature, sizeof(k->sandbox_seed));
		memcpy(k->real_seed, d->real_sig, sizeof(k->real_seed));
		memcpy(k->amz_date, d->rq_sent.amz_date.p, 16);
		(void)snprintf(k->scope, sizeof(k->scope), "%s", scope);
		k->trailer = d->trailer;
		r = netns_sigv4_chunks_new(k, ret);
	}
	wipe_free(TAKE_PTR(k), sizeof(struct netns_sigv4_chunks_keys));
	if (r < 0)
		return al_error_set(err, r, "Setting up the signing of an aws-chunked body failed");
	return 0;
}

int flow_sigv4_request(struct netns_http_flow *f, const struct netns_http_request *req,
		       const uint8_t *body, size_t body_len, struct netns_http_request *ret,
		       struct flow_sigv4_text *t, struct netns_sigv4_chunks **ret_chunks,
		       struct al_error *err)
{
	_cleanup_free_ struct sides *d = NULL;
	const struct policy_credential *key;
	_cleanup_free_ struct netns_sigv4 *s = NULL;
	size_t key_idx;
	int r;

	if (!has_any_aws(f))
		return 0;
	s = malloc(sizeof(*s));
	if (!s)
		return -ENOMEM;
	r = parse_signature(req, s, err);
	if (r <= 0)
		return r;
	r = key_of(f, s, &key, &key_idx, err);
	if (r <= 0)
		return r;
	if (!in_scope(&key->aws_regions, &s->region) || !in_scope(&key->aws_services, &s->service))
		return al_error_set(err, -EPERM,
				    "The SigV4 scope %.*s/%.*s is outside the scope of %s",
				    (int)MIN(s->region.n, (size_t)64), s->region.p,
				    (int)MIN(s->service.n, (size_t)64), s->service.p, key->name);
	d = calloc(1, sizeof(*d));
	t->size = 2 * req->target_len + 3 * 4096 + NETNS_SIGV4_SIGNED_HEADERS_MAX;
	t->p = malloc(t->size);
	if (!d || !t->p)
		return -ENOMEM;
	d->rq_sent = d->rq_fwd = (struct netns_sigv4_request){
	    .method = {req->method, req->method_len},
	    .headers = d->sent,
	    .n_headers = req->n_headers,
	};
	d->rq_fwd.headers = d->fwd;
	r = amz_date(req, s, &d->rq_sent.amz_date, err);
	if (r >= 0)
		r = check_binding(req, s, &d->rq_sent.amz_date, err);
	if (r >= 0)
		r = payload_hash(req, s, body, body_len, ret_chunks != NULL, d,
				 &d->rq_sent.payload_hash, err);
	if (r < 0)
		return r;
	d->rq_fwd.amz_date = d->rq_sent.amz_date;
	d->rq_fwd.payload_hash = d->rq_sent.payload_hash;
	r = sign_again(f, req, s, key, key_idx, d, ret, t, err);
	if (r > 0 && d->streaming) {
		r = chunks_new(f, req, s, key, d, ret_chunks, err);
		if (r >= 0)
			r = 1;
	}
	explicit_bzero(d->real_sig, sizeof(d->real_sig));
	return r;
}

ssize_t flow_sigv4_body_wanted(struct netns_http_flow *f, const struct netns_http_request *req)
{
	struct netns_sigv4 *s;
	struct al_error err = {0};
	const struct policy_credential *key;
	size_t idx;
	ssize_t r;

	if (!has_any_aws(f) || req->body != NETNS_HTTP_BODY_LENGTH || req->content_length == 0 ||
	    req->content_length > NETNS_SIGV4_BODY_MAX ||
	    header_named(req, "x-amz-content-sha256", NULL))
		return 0;
	s = malloc(sizeof(*s));
	if (!s)
		return -ENOMEM;
	r = parse_signature(req, s, &err);
	if (r > 0)
		r = key_of(f, s, &key, &idx, &err);
	if (r > 0 && !(s->presigned && s->service.n == 2 && memcmp(s->service.p, "s3", 2) == 0))
		r = (ssize_t)req->content_length;
	else
		r = 0; /* errors are the head's to report */
	free(s);
	return r;
}
