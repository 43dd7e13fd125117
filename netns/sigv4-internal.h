#pragma once

/* AWS Signature Version 4 (sigv4.c), for netns/ and tests/ only: what the egress proxy needs to
 * verify a request the sandbox signed with a surrogate secret access key and to sign it again
 * with the real one. Pure functions over bytes the sandbox controls (the Authorization header, a
 * presigned query); nothing here logs, nothing is kept.
 *
 * The rules are AWS's (docs.aws.amazon.com, "Create a signed AWS API request"): the canonical
 * request is the method, the canonical URI (the path as it is for S3; for every other service
 * its dot segments and empty segments removed and the whole URI-encoded again), the canonical
 * query (each name and value decoded, encoded again with only A-Z a-z 0-9 - _ . ~ left as they
 * are, sorted; a presigned request's X-Amz-Signature left out), each signed header (lower-case,
 * its values trimmed, inner runs of white space made one space, several values joined by ','),
 * the signed header names and the payload's hash (x-amz-content-sha256, UNSIGNED-PAYLOAD, or
 * the SHA-256 of the body). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"
#include "netns/netns-internal.h"

#define NETNS_SIGV4_ALGORITHM "AWS4-HMAC-SHA256"
#define NETNS_SIGV4_HEX_LEN 64 /* a signature, a SHA-256 */
/* What the parser keeps of the credential scope and the signed header names (decoded). */
#define NETNS_SIGV4_CREDENTIAL_MAX 256
#define NETNS_SIGV4_SIGNED_HEADERS_MAX 2048
#define NETNS_SIGV4_EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define NETNS_SIGV4_STREAMING "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
/* A body whose hash the request does not carry is gathered whole, up to this, to be hashed. */
#define NETNS_SIGV4_BODY_MAX (512 * 1024)

/* A part of a parsed signature, into its own buffers or the parsed text; not NUL-terminated. */
struct netns_sigv4_str {
	const char *p;
	size_t n;
};

/* A request's signature: from the Authorization header, or from the query (presigned). */
struct netns_sigv4 {
	bool presigned;
	/* The credential "AKID/YYYYMMDD/region/service/aws4_request", decoded, and its parts. */
	char credential[NETNS_SIGV4_CREDENTIAL_MAX];
	struct netns_sigv4_str key_id, date, region, service;
	char signed_headers[NETNS_SIGV4_SIGNED_HEADERS_MAX]; /* "host;x-amz-date", decoded */
	size_t signed_headers_len;
	char signature[NETNS_SIGV4_HEX_LEN + 1]; /* lower-case hex */
	char amz_date[17];			 /* presigned: X-Amz-Date (YYYYMMDDTHHMMSSZ) */
};

/* Parses an Authorization header's value: 0 when it is not AWS4-HMAC-SHA256 at all (not ours),
 * 1 with *ret filled, -EBADMSG (err says why) when it says AWS4-HMAC-SHA256 but is not a whole
 * and well-formed "Credential=..., SignedHeaders=..., Signature=..." (each once, nothing else;
 * the scope's date 8 digits, its last part aws4_request, the header names lower-case tokens in
 * strictly increasing order, the signature 64 lower-case hex digits). */
int netns_sigv4_parse_authorization(const char *value, size_t n, struct netns_sigv4 *ret,
				    struct al_error *err);

/* Parses a request target's query (what follows '?', n bytes): 0 when it has none of the
 * X-Amz-* names of a presigned request, 1 with *ret filled (presigned), -EBADMSG when it has some
 * but is not a whole presigned query (X-Amz-Algorithm AWS4-HMAC-SHA256, X-Amz-Credential,
 * X-Amz-Date, X-Amz-SignedHeaders and X-Amz-Signature, each once, checked as above). */
int netns_sigv4_parse_query(const char *query, size_t n, struct netns_sigv4 *ret,
			    struct al_error *err);

/* The value of the query parameter name (its first, as written, still encoded) in query (n
 * bytes, what follows '?'): true with *ret set, or false. */
bool netns_sigv4_query_param(const char *query, size_t n, const char *name,
			     struct netns_sigv4_str *ret);

/* What a signature covers besides the scope (struct netns_sigv4). */
struct netns_sigv4_request {
	struct netns_sigv4_str method;
	struct netns_sigv4_str target; /* origin-form: the path, then '?' and the query */
	const struct netns_http_header *headers;
	size_t n_headers;
	struct netns_sigv4_str amz_date;     /* YYYYMMDDTHHMMSSZ */
	struct netns_sigv4_str payload_hash; /* 64 hex digits, or UNSIGNED-PAYLOAD, ... */
};

/* Writes the signature of rq under s's scope with the secret access key secret (secret_len
 * bytes) to ret (64 lower-case hex digits and a NUL). -EBADMSG when a signed header is missing
 * or the canonical request would be too long, -ENOMEM, -EIO (OpenSSL failed). */
int netns_sigv4_sign(const struct netns_sigv4 *s, const struct netns_sigv4_request *rq,
		     const uint8_t *secret, size_t secret_len,
		     char ret[static NETNS_SIGV4_HEX_LEN + 1], struct al_error *err);

/* The signing key of s's scope (its date, region and service) for the secret access key secret:
 * kSigning, which signs the chunks of a streaming body too. -ENOMEM, -EIO. */
#define NETNS_SIGV4_KEY_LEN 32
int netns_sigv4_signing_key(const struct netns_sigv4 *s, const uint8_t *secret, size_t secret_len,
			    uint8_t key[static NETNS_SIGV4_KEY_LEN]);
/* HMAC-SHA256 of n bytes at data under a signing key, as lower-case hex and a NUL. -EIO. */
int netns_sigv4_hmac_hex(const uint8_t key[static NETNS_SIGV4_KEY_LEN], const void *data, size_t n,
			 char ret[static NETNS_SIGV4_HEX_LEN + 1]);

/* Whether two signatures (64 hex digits each) are equal, in constant time. */
bool netns_sigv4_equal(const char *a, const char *b);

/* The SHA-256 of n bytes at p, as lower-case hex and a NUL. -EIO. */
int netns_sigv4_sha256_hex(const void *p, size_t n, char ret[static NETNS_SIGV4_HEX_LEN + 1]);

/* Whether s (n bytes) is 64 lower-case hex digits. */
bool netns_sigv4_is_hex64(const char *s, size_t n);

/* ---- sigv4-chunks.c: aws-chunked bodies signed chunk by chunk ----
 * (STREAMING-AWS4-HMAC-SHA256-PAYLOAD, and its -TRAILER form). The body is taken as it comes
 * and given back with each chunk's signature (and the trailers') made again with the real
 * signing key, once the sandbox's verified with the surrogate one: a chunk goes out only whole,
 * so each is held (at most NETNS_SIGV4_CHUNK_MAX bytes). The body keeps its length. */

#define NETNS_SIGV4_CHUNK_MAX NETNS_SIGV4_BODY_MAX

struct netns_sigv4_chunks_keys {
	uint8_t sandbox_key[NETNS_SIGV4_KEY_LEN], real_key[NETNS_SIGV4_KEY_LEN];
	char sandbox_seed[NETNS_SIGV4_HEX_LEN + 1], real_seed[NETNS_SIGV4_HEX_LEN + 1];
	char amz_date[17];			/* YYYYMMDDTHHMMSSZ */
	char scope[NETNS_SIGV4_CREDENTIAL_MAX]; /* DATE/REGION/SERVICE/aws4_request */
	bool trailer;				/* STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER */
	uint64_t decoded_len;			/* x-amz-decoded-content-length */
};

struct netns_sigv4_chunks;
/* A body's re-signer, with a copy of k (which the caller wipes). -ENOMEM. */
int netns_sigv4_chunks_new(const struct netns_sigv4_chunks_keys *k,
			   struct netns_sigv4_chunks **ret);
/* Frees c, its keys and what it holds wiped. */
struct netns_sigv4_chunks *netns_sigv4_chunks_free(struct netns_sigv4_chunks *c);
/* Takes n bytes of the body (all of them) and appends to out what of it is ready, signed
 * again. -EBADMSG (malformed, more or less data than x-amz-decoded-content-length, bytes after
 * the end), -EMSGSIZE (a chunk too large), -EPERM (a signature the surrogate key does not
 * make), -ENOMEM, -EIO. */
ssize_t netns_sigv4_chunks_feed(struct netns_sigv4_chunks *c, const uint8_t *p, size_t n,
				struct netns_buf *out, struct al_error *err);
/* Whether the body ended: its last chunk, and trailers, all out. */
bool netns_sigv4_chunks_done(const struct netns_sigv4_chunks *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct netns_sigv4_chunks *, netns_sigv4_chunks_free);

/* ---- http-flow-sigv4.c: SigV4 requests of the inspected flow ---- */

struct netns_http_flow;

/* The text a re-signed request points into (its target, its Authorization value): it holds
 * real values, and is wiped when done. */
struct flow_sigv4_text {
	char *p;
	size_t n, size;
};
void flow_sigv4_text_done(struct flow_sigv4_text *t);

/* Whether surrogate idx is an AWS secret access key's, which only signs and is never swapped. */
bool flow_sigv4_is_secret(const struct netns_http_flow *f, size_t idx);
/* A request signed with the surrogate of an AWS access key id (f's options name the policy):
 * verified with the surrogate secret, its scope checked, signed again with the real secret into
 * *ret (req with its target or Authorization and X-Amz-Security-Token replaced, pointing into t
 * and the flow's values). Returns 1 then, 0 for a request that is not such (ret untouched),
 * -EPERM (a signature that does not verify, a scope outside the credential's, a key not bound to
 * the host, a body it cannot hash, chunk signing where ret_chunks is NULL), -EBADMSG (malformed),
 * -ENOMEM. body (body_len bytes) is the whole body when http-flow.c gathered it
 * (flow_sigv4_body_wanted()), else NULL. A body signed chunk by chunk gets *ret_chunks, its
 * re-signer, which the caller feeds the body through and frees. */
int flow_sigv4_request(struct netns_http_flow *f, const struct netns_http_request *req,
		       const uint8_t *body, size_t body_len, struct netns_http_request *ret,
		       struct flow_sigv4_text *t, struct netns_sigv4_chunks **ret_chunks,
		       struct al_error *err);
/* The bytes of body to gather before req's head is judged: its Content-Length when req is
 * signed with a surrogate key id, has a body of at most NETNS_SIGV4_BODY_MAX and no
 * x-amz-content-sha256; else 0. -ENOMEM. */
ssize_t flow_sigv4_body_wanted(struct netns_http_flow *f, const struct netns_http_request *req);
