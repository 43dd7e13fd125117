/* fuzz-sigv4-chunks: the egress proxy reads an aws-chunked body signed chunk by chunk straight
 * from the sandbox (netns/sigv4-chunks.c). The input's first byte picks the form (bit 0: with
 * trailers) and where the body is cut in two feeds; the rest is the body, of 10 data bytes, whose
 * chunks the sandbox signs with one key and the proxy signs again with another. Any answer but
 * the documented errors is a bug; every byte fed is taken; nothing comes out that was not fed;
 * and a body that ends whole comes out as long as it went in and, signed back the other way,
 * is the input again. */

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "netns/sigv4-internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SCOPE "20130524/us-east-1/s3/aws4_request"
#define SEED_A "0000000000000000000000000000000000000000000000000000000000000000"
#define SEED_B "1111111111111111111111111111111111111111111111111111111111111111"

static void keys(bool back, bool trailer, struct netns_sigv4_chunks_keys *k)
{
	static const char auth[] =
	    "AWS4-HMAC-SHA256 Credential=AKID/" SCOPE ", SignedHeaders=host, Signature=" SEED_A;
	struct netns_sigv4 s;

	if (netns_sigv4_parse_authorization(auth, sizeof(auth) - 1, &s, NULL) != 1)
		__builtin_trap();
	*k = (struct netns_sigv4_chunks_keys){.trailer = trailer, .decoded_len = 10};
	if (netns_sigv4_signing_key(&s, (const uint8_t *)(back ? "b" : "a"), 1, k->sandbox_key) <
		0 ||
	    netns_sigv4_signing_key(&s, (const uint8_t *)(back ? "a" : "b"), 1, k->real_key) < 0)
		abort();
	memcpy(k->sandbox_seed, back ? SEED_B : SEED_A, sizeof(k->sandbox_seed));
	memcpy(k->real_seed, back ? SEED_A : SEED_B, sizeof(k->real_seed));
	memcpy(k->amz_date, "20130524T000000Z", 17);
	memcpy(k->scope, SCOPE, sizeof(SCOPE));
}

/* Feeds body in two pieces, cut at cut: whether it ended whole. */
static bool run(const struct netns_sigv4_chunks_keys *k, const uint8_t *body, size_t n, size_t cut,
		struct netns_buf *out)
{
	struct netns_sigv4_chunks *c = NULL;
	bool done = false;
	ssize_t r = 0;

	if (netns_sigv4_chunks_new(k, &c) < 0)
		abort();
	for (int i = 0; i < 2 && r >= 0; i++) {
		size_t from = i ? cut : 0, to = i ? n : cut;

		r = netns_sigv4_chunks_feed(c, body + from, to - from, out, NULL);
		if (r >= 0 && (size_t)r != to - from)
			__builtin_trap();
		if (r < 0 && r != -EBADMSG && r != -EMSGSIZE && r != -EPERM && r != -ENOMEM)
			__builtin_trap();
	}
	done = r >= 0 && netns_sigv4_chunks_done(c);
	netns_sigv4_chunks_free(c);
	return done;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct netns_sigv4_chunks_keys k, back;
	struct netns_buf out = {0}, again = {0};
	const uint8_t *body = data + 1;
	size_t n, cut;

	if (size < 1)
		return 0;
	n = size - 1;
	cut = n ? (data[0] >> 1) % (n + 1) : 0;
	keys(false, data[0] & 1, &k);
	if (run(&k, body, n, cut, &out)) {
		if (netns_buf_len(&out) != n)
			__builtin_trap();
		keys(true, data[0] & 1, &back);
		if (!run(&back, netns_buf_head(&out), n, n / 2, &again) ||
		    netns_buf_len(&again) != n || memcmp(netns_buf_head(&again), body, n) != 0)
			__builtin_trap();
	} else if (netns_buf_len(&out) > n) {
		__builtin_trap();
	}
	netns_buf_done(&out);
	netns_buf_done(&again);
	return 0;
}
