/* tests/unit/netns/test-sigv4-chunks.c: aws-chunked bodies signed chunk by chunk
 * (netns/sigv4-chunks.c): AWS's own published example (an S3 PUT of 66,560 bytes in chunks of
 * 64 KiB, 1 KiB and 0), verified and given back unchanged when both keys are the example's;
 * signed again along another key's chain and back; the -TRAILER form, signed here by a signer
 * of the test's own written from AWS's description; and every refusal. */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "netns/sigv4-internal.h"

#define EXAMPLE_SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define OTHER_SECRET "abcdefghijklmnopqrstuvwxyz0123456789ABCD"
#define SCOPE "20130524/us-east-1/s3/aws4_request"
#define DATE "20130524T000000Z"
/* The example's seed (the head's signature) and each chunk's signature, as AWS publishes them. */
#define SEED "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"
#define SIG1 "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648"
#define SIG2 "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497"
#define SIG3 "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9"

static void scope_of(struct netns_sigv4 *s)
{
	struct al_error err = {0};
	const char *auth = "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/" SCOPE
			   ", SignedHeaders=host, Signature=" SEED;

	assert_int_equal(netns_sigv4_parse_authorization(auth, strlen(auth), s, &err), 1);
}

static void keys_of(const char *sandbox_secret, const char *sandbox_seed, const char *real_secret,
		    const char *real_seed, bool trailer, uint64_t decoded_len,
		    struct netns_sigv4_chunks_keys *k)
{
	struct netns_sigv4 s;

	scope_of(&s);
	*k = (struct netns_sigv4_chunks_keys){.trailer = trailer, .decoded_len = decoded_len};
	assert_int_equal(netns_sigv4_signing_key(&s, (const uint8_t *)sandbox_secret,
						 strlen(sandbox_secret), k->sandbox_key),
			 0);
	assert_int_equal(netns_sigv4_signing_key(&s, (const uint8_t *)real_secret,
						 strlen(real_secret), k->real_key),
			 0);
	memcpy(k->sandbox_seed, sandbox_seed, NETNS_SIGV4_HEX_LEN + 1);
	memcpy(k->real_seed, real_seed, NETNS_SIGV4_HEX_LEN + 1);
	memcpy(k->amz_date, DATE, sizeof(DATE));
	memcpy(k->scope, SCOPE, sizeof(SCOPE));
}

/* AWS's example body: 65,536 then 1,024 bytes of 'a', then the last chunk. */
static uint8_t *example_body(size_t *ret_len)
{
	uint8_t *b = malloc(70000), *p = b;

	assert_non_null(b);
	p += sprintf((char *)p, "10000;chunk-signature=" SIG1 "\r\n");
	memset(p, 'a', 65536);
	p += 65536;
	p += sprintf((char *)p, "\r\n400;chunk-signature=" SIG2 "\r\n");
	memset(p, 'a', 1024);
	p += 1024;
	p += sprintf((char *)p, "\r\n0;chunk-signature=" SIG3 "\r\n\r\n");
	*ret_len = (size_t)(p - b);
	return b;
}

/* Feeds body in pieces of step bytes: 0 with the output in *out when it ends whole, else the
 * first error. */
static int feed(const struct netns_sigv4_chunks_keys *k, const uint8_t *body, size_t len,
		size_t step, struct netns_buf *out)
{
	struct netns_sigv4_chunks *c = NULL;
	struct al_error err = {0};
	int r = 0;

	assert_int_equal(netns_sigv4_chunks_new(k, &c), 0);
	for (size_t off = 0; off < len && r >= 0; off += step) {
		size_t n = len - off < step ? len - off : step;
		ssize_t taken = netns_sigv4_chunks_feed(c, body + off, n, out, &err);

		if (taken < 0)
			r = (int)taken;
		else
			assert_int_equal(taken, n);
	}
	if (r >= 0 && !netns_sigv4_chunks_done(c))
		r = -ENODATA;
	netns_sigv4_chunks_free(c);
	return r;
}

static void test_aws_example_verifies_and_comes_back_unchanged(void **state)
{
	struct netns_sigv4_chunks_keys k;
	struct netns_buf out = {0};
	size_t len;
	uint8_t *body = example_body(&len);

	(void)state;
	assert_int_equal(len, 66824); /* the example's Content-Length */
	keys_of(EXAMPLE_SECRET, SEED, EXAMPLE_SECRET, SEED, false, 66560, &k);
	for (size_t step = 1; step <= 65536 * 2; step *= 7) {
		assert_int_equal(feed(&k, body, len, step, &out), 0);
		assert_int_equal(netns_buf_len(&out), len);
		assert_memory_equal(netns_buf_head(&out), body, len);
		netns_buf_consume(&out, len);
	}
	netns_buf_done(&out);
	free(body);
}

static void test_chunks_are_signed_again_along_the_real_chain(void **state)
{
	struct netns_sigv4_chunks_keys k, back;
	struct netns_buf out = {0}, again = {0};
	size_t len;
	uint8_t *body = example_body(&len);
	const char *other_seed = "1111111111111111111111111111111111111111111111111111111111111111";

	(void)state;
	keys_of(EXAMPLE_SECRET, SEED, OTHER_SECRET, other_seed, false, 66560, &k);
	assert_int_equal(feed(&k, body, len, 4096, &out), 0);
	assert_int_equal(netns_buf_len(&out), len); /* the body keeps its length */
	assert_memory_not_equal(netns_buf_head(&out), body, len);
	assert_null(memmem(netns_buf_head(&out), len, SIG1, 64));
	/* Only the signatures differ: the data is the same. */
	assert_memory_equal(netns_buf_head(&out) + 88, body + 88, 65536);
	/* The output verifies along the other key's chain, and signed again with the example's
	 * key it is the example once more. */
	keys_of(OTHER_SECRET, other_seed, EXAMPLE_SECRET, SEED, false, 66560, &back);
	assert_int_equal(feed(&back, netns_buf_head(&out), len, 1000, &again), 0);
	assert_memory_equal(netns_buf_head(&again), body, len);
	netns_buf_done(&out);
	netns_buf_done(&again);
	free(body);
}

/* A signer of the test's own, from AWS's description of the -TRAILER form. */
static void sign(const char *secret, const char *sts, char out[65])
{
	struct netns_sigv4 s;
	uint8_t key[NETNS_SIGV4_KEY_LEN];

	scope_of(&s);
	assert_int_equal(netns_sigv4_signing_key(&s, (const uint8_t *)secret, strlen(secret), key),
			 0);
	assert_int_equal(netns_sigv4_hmac_hex(key, sts, strlen(sts), out), 0);
}

static size_t trailer_body(const char *secret, const char *data, char *body)
{
	char sts[1024], hash[65], sig[65], prev[65] = SEED;
	char *p = body;

	assert_int_equal(netns_sigv4_sha256_hex(data, strlen(data), hash), 0);
	(void)snprintf(sts, sizeof(sts),
		       "AWS4-HMAC-SHA256-PAYLOAD\n" DATE "\n" SCOPE "\n%s\n%s\n%s", prev,
		       NETNS_SIGV4_EMPTY_SHA256, hash);
	sign(secret, sts, sig);
	p += sprintf(p, "%zx;chunk-signature=%s\r\n%s\r\n", strlen(data), sig, data);
	memcpy(prev, sig, sizeof(prev));
	(void)snprintf(sts, sizeof(sts),
		       "AWS4-HMAC-SHA256-PAYLOAD\n" DATE "\n" SCOPE "\n%s\n%s\n%s", prev,
		       NETNS_SIGV4_EMPTY_SHA256, NETNS_SIGV4_EMPTY_SHA256);
	sign(secret, sts, sig);
	p += sprintf(p, "0;chunk-signature=%s\r\n", sig);
	memcpy(prev, sig, sizeof(prev));
	assert_int_equal(netns_sigv4_sha256_hex("x-amz-checksum-crc32:NhCmhg==\n", 30, hash), 0);
	(void)snprintf(sts, sizeof(sts), "AWS4-HMAC-SHA256-TRAILER\n" DATE "\n" SCOPE "\n%s\n%s",
		       prev, hash);
	sign(secret, sts, sig);
	p += sprintf(p, "x-amz-checksum-crc32:NhCmhg==\r\nx-amz-trailer-signature:%s\r\n\r\n", sig);
	return (size_t)(p - body);
}

static void test_trailer_form_is_signed_again(void **state)
{
	struct netns_sigv4_chunks_keys k;
	struct netns_buf out = {0};
	char body[2048], want[2048];
	size_t len = trailer_body(EXAMPLE_SECRET, "hello trailer", body);
	size_t want_len;
	char seed2[65];

	(void)state;
	/* Same key both ways: unchanged. */
	keys_of(EXAMPLE_SECRET, SEED, EXAMPLE_SECRET, SEED, true, 13, &k);
	assert_int_equal(feed(&k, (uint8_t *)body, len, 3, &out), 0);
	assert_int_equal(netns_buf_len(&out), len);
	assert_memory_equal(netns_buf_head(&out), body, len);
	netns_buf_consume(&out, len);
	/* Another key with the same seed: what the test's signer makes with it. */
	memcpy(seed2, SEED, sizeof(seed2));
	keys_of(EXAMPLE_SECRET, SEED, OTHER_SECRET, seed2, true, 13, &k);
	assert_int_equal(feed(&k, (uint8_t *)body, len, 5, &out), 0);
	want_len = trailer_body(OTHER_SECRET, "hello trailer", want);
	assert_int_equal(netns_buf_len(&out), want_len);
	assert_memory_equal(netns_buf_head(&out), want, want_len);
	/* A trailer changed after signing no longer verifies. */
	memcpy(strstr(body, "NhCmhg"), "AAAAAA", 6);
	assert_int_equal(feed(&k, (uint8_t *)body, len, len, &out), -EPERM);
	netns_buf_done(&out);
}

static void test_what_is_refused(void **state)
{
	struct netns_sigv4_chunks_keys k;
	struct netns_buf out = {0};
	size_t len;
	uint8_t *body = example_body(&len), *copy = malloc(len + 8);
	char bad[256];

	(void)state;
	assert_non_null(copy);
	keys_of(EXAMPLE_SECRET, SEED, OTHER_SECRET, SEED, false, 66560, &k);
	/* A byte of data changed: its chunk no longer verifies, and nothing of it went out. */
	memcpy(copy, body, len);
	copy[200] = 'b';
	assert_int_equal(feed(&k, copy, len, len, &out), -EPERM);
	assert_int_equal(netns_buf_len(&out), 0);
	/* Cut short, or with bytes after its end. */
	assert_int_equal(feed(&k, body, len - 2, len, &out), -ENODATA);
	netns_buf_done(&out);
	memcpy(copy, body, len);
	memcpy(copy + len, "xx", 2);
	assert_int_equal(feed(&k, copy, len + 2, len + 2, &out), -EBADMSG);
	netns_buf_done(&out);
	/* Another decoded length than the chunks hold, either way. */
	k.decoded_len = 66559;
	assert_int_equal(feed(&k, body, len, len, &out), -EBADMSG);
	netns_buf_done(&out);
	k.decoded_len = 66561;
	assert_int_equal(feed(&k, body, len, len, &out), -EBADMSG);
	netns_buf_done(&out);
	k.decoded_len = 66560;
	/* Malformed size lines: no signature, a short one, upper-case hex, no size, junk. */
	const char *lines[] = {
	    "5\r\nhello\r\n",
	    "5;chunk-signature=abc\r\nhello\r\n",
	    "5;chunk-signature=" SIG1 "x\r\nhello\r\n",
	    ";chunk-signature=" SIG1 "\r\nhello\r\n",
	    "5;chunk-signature="
	    "AD80C730A21E5B8D04586A2213DD63B9A0E99E0E2307B0ADE35A65485A288648\r\n",
	    "5; chunk-signature=" SIG1 "\r\nhello\r\n",
	    "5;chunk-signature=" SIG1 "\r\nhelloXX\r\n",
	    "5;chunk-signature=" SIG1 "\r\nhello\r\n", /* well formed, but not its signature */
	};
	for (size_t i = 0; i < sizeof(lines) / sizeof(*lines); i++) {
		k.decoded_len = 5;
		assert_int_equal(feed(&k, (const uint8_t *)lines[i], strlen(lines[i]), 1, &out),
				 i == 7 ? -EPERM : -EBADMSG);
		netns_buf_done(&out);
	}
	/* A chunk larger than is held. */
	(void)snprintf(bad, sizeof(bad), "%x;chunk-signature=" SIG1 "\r\n",
		       NETNS_SIGV4_CHUNK_MAX + 1);
	k.decoded_len = NETNS_SIGV4_CHUNK_MAX + 1;
	assert_int_equal(feed(&k, (const uint8_t *)bad, strlen(bad), 7, &out), -EMSGSIZE);
	netns_buf_done(&out);
	free(copy);
	free(body);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_aws_example_verifies_and_comes_back_unchanged),
	    cmocka_unit_test(test_chunks_are_signed_again_along_the_real_chain),
	    cmocka_unit_test(test_trailer_form_is_signed_again),
	    cmocka_unit_test(test_what_is_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
