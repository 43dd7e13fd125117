/* aws-chunked bodies signed chunk by chunk (sigv4-internal.h has the contract).
 *
 * The body is a run of chunks, "SIZE;chunk-signature=SIG\r\nDATA\r\n", SIZE in hex, the last one
 * of size 0; with the -TRAILER form, trailer lines "name:value\r\n" follow the last chunk, then
 * "x-amz-trailer-signature:SIG\r\n" and an empty line. Each chunk's SIG is the HMAC, under the
 * scope's signing key, of
 *	AWS4-HMAC-SHA256-PAYLOAD \n DATE \n SCOPE \n PREVIOUS-SIG \n SHA256("") \n SHA256(DATA)
 * and the trailer's of
 *	AWS4-HMAC-SHA256-TRAILER \n DATE \n SCOPE \n PREVIOUS-SIG \n SHA256(TRAILERS)
 * where the first PREVIOUS-SIG is the request's own signature (the seed) and TRAILERS is the
 * trailer lines with "\n" ends. So a chunk's signature can only be written once its data is all
 * here: each chunk is held whole (NETNS_SIGV4_CHUNK_MAX), verified along the sandbox's chain and
 * written out with its signature along the real one. The size text is kept as the sandbox wrote
 * it and a signature is 64 hex digits either way, so the body keeps its length (and the request
 * its Content-Length). */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netns/sigv4-internal.h"

#define LINE_MAX_LEN 128 /* "SIZE;chunk-signature=SIG" is at most 16 + 17 + 64 bytes */
#define TRAILERS_MAX 4096
#define TRAILER_LINES_MAX 16
#define SIG_FIELD ";chunk-signature="
#define TRAILER_SIG "x-amz-trailer-signature:"
#define OUT_MAX (SIZE_MAX / 2) /* out is bounded by the caller's steps (a chunk at a time) */

enum state {
	LINE,	  /* a chunk's size line */
	DATA,	  /* its data */
	DATA_END, /* the CRLF after it */
	TRAILERS, /* trailer lines, up to the empty one */
	DONE,
};

struct netns_sigv4_chunks {
	struct netns_sigv4_chunks_keys k;
	enum state state;
	char line[LINE_MAX_LEN + 2]; /* the line under way, its CRLF included */
	size_t line_n;
	char size_text[16]; /* the chunk's size as the sandbox wrote it */
	size_t size_len;
	char sent_sig[NETNS_SIGV4_HEX_LEN + 1];
	struct netns_buf data; /* the chunk's data, then the trailer lines */
	uint64_t left;	       /* bytes of data still to come */
	uint64_t total;	       /* data bytes so far */
	bool last;	       /* the chunk under way is the last one (size 0) */
	size_t n_trailers;
	bool trailers_signed; /* the trailer signature came: only the empty line may follow */
};

int netns_sigv4_chunks_new(const struct netns_sigv4_chunks_keys *k, struct netns_sigv4_chunks **ret)
{
	struct netns_sigv4_chunks *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->k = *k;
	*ret = c;
	return 0;
}

struct netns_sigv4_chunks *netns_sigv4_chunks_free(struct netns_sigv4_chunks *c)
{
	if (!c)
		return NULL;
	netns_buf_done(&c->data);
	explicit_bzero(c, sizeof(*c));
	free(c);
	return NULL;
}

bool netns_sigv4_chunks_done(const struct netns_sigv4_chunks *c)
{
	return c->state == DONE;
}

/* The signature of a chunk (its data's hash) or of the trailers (their hash) under key, after
 * prev: into ret, and prev becomes it. */
static int chain(const struct netns_sigv4_chunks *c, const uint8_t *key, bool trailer,
		 const char *hash, char *prev, char ret[static NETNS_SIGV4_HEX_LEN + 1])
{
	char sts[512];
	int l;

	l = snprintf(sts, sizeof(sts), "%s\n%s\n%s\n%s\n%s%s%s",
		     trailer ? "AWS4-HMAC-SHA256-TRAILER" : "AWS4-HMAC-SHA256-PAYLOAD",
		     c->k.amz_date, c->k.scope, prev, trailer ? "" : NETNS_SIGV4_EMPTY_SHA256,
		     trailer ? "" : "\n", hash);
	if (l < 0 || (size_t)l >= sizeof(sts))
		return -EBADMSG;
	return netns_sigv4_hmac_hex(key, sts, (size_t)l, ret);
}

/* Verifies sent (the sandbox's signature of what hashes to hash) along the sandbox's chain and
 * writes the real one into ret; both chains move on. */
static int sign_link(struct netns_sigv4_chunks *c, bool trailer, const char *hash, const char *sent,
		     char ret[static NETNS_SIGV4_HEX_LEN + 1], struct al_error *err)
{
	char want[NETNS_SIGV4_HEX_LEN + 1];
	int r;

	r = chain(c, c->k.sandbox_key, trailer, hash, c->k.sandbox_seed, want);
	if (r < 0)
		return al_error_set(err, r, "Signing an aws-chunked body failed");
	if (!netns_sigv4_equal(want, sent))
		return al_error_set(err, -EPERM,
				    "The SigV4 signature of %s does not verify with the "
				    "surrogate secret",
				    trailer ? "the aws-chunked body's trailers"
					    : "a chunk of the aws-chunked body");
	r = chain(c, c->k.real_key, trailer, hash, c->k.real_seed, ret);
	if (r < 0)
		return al_error_set(err, r, "Signing an aws-chunked body failed");
	memcpy(c->k.sandbox_seed, sent, NETNS_SIGV4_HEX_LEN);
	memcpy(c->k.real_seed, ret, NETNS_SIGV4_HEX_LEN);
	return 0;
}

/* Gathers a CRLF-ended line of at most LINE_MAX_LEN bytes into c->line: the bytes taken, with
 * *ret_whole set once the line is whole. */
static ssize_t gather_line(struct netns_sigv4_chunks *c, const uint8_t *p, size_t n,
			   bool *ret_whole, struct al_error *err)
{
	size_t i = 0;

	*ret_whole = false;
	while (i < n) {
		if (c->line_n == sizeof(c->line))
			return al_error_set(err, -EBADMSG,
					    "A line of the aws-chunked body is too long");
		c->line[c->line_n++] = (char)p[i++];
		if (c->line_n >= 2 && c->line[c->line_n - 2] == '\r' &&
		    c->line[c->line_n - 1] == '\n') {
			*ret_whole = true;
			break;
		}
	}
	return (ssize_t)i;
}

/* "SIZE;chunk-signature=SIG\r\n": SIZE 1 to 16 hex digits, SIG 64 lower-case ones. */
static int parse_size_line(struct netns_sigv4_chunks *c, struct al_error *err)
{
	const char *l = c->line, *sig;
	size_t n = c->line_n - 2, d = 0;
	uint64_t size = 0;

	while (d < n && d < 16 && strchr("0123456789abcdefABCDEF", l[d]) && l[d] != '\0') {
		size = size * 16 + (uint64_t)(l[d] <= '9' ? l[d] - '0' : (l[d] | 0x20) - 'a' + 10);
		d++;
	}
	sig = l + d + strlen(SIG_FIELD);
	if (d == 0 || n != d + strlen(SIG_FIELD) + NETNS_SIGV4_HEX_LEN ||
	    memcmp(l + d, SIG_FIELD, strlen(SIG_FIELD)) != 0 ||
	    !netns_sigv4_is_hex64(sig, NETNS_SIGV4_HEX_LEN))
		return al_error_set(err, -EBADMSG,
				    "A chunk of the aws-chunked body does not begin with "
				    "\"SIZE;chunk-signature=SIGNATURE\"");
	if (size > NETNS_SIGV4_CHUNK_MAX)
		return al_error_set(err, -EMSGSIZE,
				    "A chunk of the aws-chunked body is larger than %d bytes",
				    NETNS_SIGV4_CHUNK_MAX);
	if (size > c->k.decoded_len - c->total)
		return al_error_set(err, -EBADMSG,
				    "The aws-chunked body holds more than its "
				    "x-amz-decoded-content-length");
	if (size == 0 && c->total != c->k.decoded_len)
		return al_error_set(err, -EBADMSG,
				    "The aws-chunked body holds less than its "
				    "x-amz-decoded-content-length");
	memcpy(c->sent_sig, sig, NETNS_SIGV4_HEX_LEN);
	memcpy(c->size_text, l, d);
	c->size_len = d;
	c->left = size;
	c->last = size == 0;
	c->total += size;
	return 0;
}

/* The chunk is whole: verified, written out with the real signature. */
static int put_chunk(struct netns_sigv4_chunks *c, struct netns_buf *out, struct al_error *err)
{
	char hash[NETNS_SIGV4_HEX_LEN + 1], sig[NETNS_SIGV4_HEX_LEN + 1];
	size_t n = netns_buf_len(&c->data);
	int r;

	r = netns_sigv4_sha256_hex(n ? netns_buf_head(&c->data) : (const uint8_t *)"", n, hash);
	if (r < 0)
		return al_error_set(err, r, "Hashing a chunk of the aws-chunked body failed");
	r = sign_link(c, false, hash, c->sent_sig, sig, err);
	if (r < 0)
		return r;
	r = netns_buf_append(out, c->size_text, c->size_len, OUT_MAX);
	if (r >= 0)
		r = netns_buf_printf(out, OUT_MAX, SIG_FIELD "%s\r\n", sig);
	if (r >= 0 && n > 0)
		r = netns_buf_append(out, netns_buf_head(&c->data), n, OUT_MAX);
	if (r >= 0 && !(c->last && c->k.trailer))
		r = netns_buf_append(out, "\r\n", 2, OUT_MAX);
	if (n > 0)
		netns_buf_consume(&c->data, n);
	return r;
}

/* A trailer line "name:value" (name a lower-case token), or the signature that ends them. */
static int trailer_line(struct netns_sigv4_chunks *c, struct netns_buf *out, struct al_error *err)
{
	const char *l = c->line, *colon = memchr(l, ':', c->line_n - 2);
	char hash[NETNS_SIGV4_HEX_LEN + 1], sig[NETNS_SIGV4_HEX_LEN + 1];
	size_t n = c->line_n - 2, held = netns_buf_len(&c->data);
	int r;

	if (c->trailers_signed)
		return al_error_set(err, -EBADMSG,
				    "A line follows the aws-chunked body's trailer signature");
	if (n > strlen(TRAILER_SIG) && memcmp(l, TRAILER_SIG, strlen(TRAILER_SIG)) == 0) {
		if (!netns_sigv4_is_hex64(l + strlen(TRAILER_SIG), n - strlen(TRAILER_SIG)))
			return al_error_set(err, -EBADMSG,
					    "The aws-chunked body's trailer signature is not 64 "
					    "hex digits");
		/* What is signed: each trailer line with "\n" for its CRLF. */
		r = netns_sigv4_sha256_hex(held ? netns_buf_head(&c->data) : (const uint8_t *)"",
					   held, hash);
		if (r >= 0)
			r = sign_link(c, true, hash, l + strlen(TRAILER_SIG), sig, err);
		if (r < 0)
			return r;
		if (held > 0)
			netns_buf_consume(&c->data, held);
		c->trailers_signed = true;
		return netns_buf_printf(out, OUT_MAX, TRAILER_SIG "%s\r\n", sig);
	}
	if (!colon || colon == l || c->n_trailers == TRAILER_LINES_MAX ||
	    held + n + 1 > TRAILERS_MAX)
		return al_error_set(err, -EBADMSG,
				    "The aws-chunked body's trailers are malformed or too many");
	for (const char *p = l; p < colon; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-'))
			return al_error_set(err, -EBADMSG,
					    "An aws-chunked trailer's name is not a lower-case "
					    "token");
	c->n_trailers++;
	r = netns_buf_append(&c->data, l, n, TRAILERS_MAX);
	if (r >= 0)
		r = netns_buf_append(&c->data, "\n", 1, TRAILERS_MAX);
	if (r >= 0)
		r = netns_buf_append(out, l, c->line_n, OUT_MAX);
	return r;
}

ssize_t netns_sigv4_chunks_feed(struct netns_sigv4_chunks *c, const uint8_t *p, size_t n,
				struct netns_buf *out, struct al_error *err)
{
	size_t done = 0;

	while (done < n) {
		bool whole;
		ssize_t k;
		size_t take;
		int r = 0;

		switch (c->state) {
		case LINE:
		case DATA_END:
		case TRAILERS:
			k = gather_line(c, p + done, n - done, &whole, err);
			if (k < 0)
				return k;
			done += (size_t)k;
			if (!whole)
				break;
			if (c->state == LINE) {
				r = parse_size_line(c, err);
				c->state = c->last && c->k.trailer ? TRAILERS : DATA;
				if (r >= 0 && c->state == TRAILERS)
					r = put_chunk(c, out, err);
			} else if (c->state == DATA_END) {
				if (c->line_n != 2)
					r = al_error_set(err, -EBADMSG,
							 "A chunk of the aws-chunked body is "
							 "not followed by CRLF");
				else
					r = put_chunk(c, out, err);
				c->state = c->last ? DONE : LINE;
			} else if (c->line_n == 2) {
				if (c->n_trailers > 0 && !c->trailers_signed)
					r = al_error_set(err, -EBADMSG,
							 "The aws-chunked body's trailers end "
							 "without their signature");
				else
					r = netns_buf_append(out, "\r\n", 2, OUT_MAX);
				c->state = DONE;
			} else
				r = trailer_line(c, out, err);
			c->line_n = 0;
			if (r < 0)
				return r;
			break;
		case DATA:
			take = (size_t)MIN((uint64_t)(n - done), c->left);
			r = netns_buf_append(&c->data, p + done, take, NETNS_SIGV4_CHUNK_MAX);
			if (r < 0)
				return r;
			done += take;
			c->left -= take;
			if (c->left == 0)
				c->state = DATA_END;
			break;
		case DONE:
			return al_error_set(err, -EBADMSG,
					    "Bytes follow the end of the aws-chunked body");
		}
	}
	return (ssize_t)done;
}
