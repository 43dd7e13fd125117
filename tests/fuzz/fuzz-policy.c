/* Fuzzes the policy parser (policy_load_buffer) and checks two invariants besides "no crash":
 *  - a refused policy says why: err.code is the return code and err.msg is one non-empty line of
 *    printable ASCII (input bytes are always escaped before they reach a message);
 *  - an accepted policy's canonical JSON loads again to the same canonical JSON and hash
 *    (idempotence: what `airlock policy hash` prints identifies what runs). */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_refusal(int r, const struct al_error *err)
{
	if (r == -ENOMEM)
		return;
	if (err->code != r || err->msg[0] == '\0') {
		fprintf(stderr, "refused with %d but err = {%d, \"%s\"}\n", r, err->code, err->msg);
		abort();
	}
	for (const char *c = err->msg; *c; c++)
		if (*c < 0x20 || *c > 0x7e) {
			fprintf(stderr, "raw byte 0x%02x in message \"%s\"\n", (unsigned char)*c,
				err->msg);
			abort();
		}
}

static void check_idempotence(const struct policy *p)
{
	_cleanup_(policy_freep) struct policy *q = NULL;
	_cleanup_free_ char *first = NULL, *second = NULL;
	uint8_t h1[POLICY_HASH_SIZE], h2[POLICY_HASH_SIZE];
	struct al_error err = {};
	int r;

	if (policy_to_canonical_json(p, &first) < 0)
		return; /* -ENOMEM */
	r = policy_load_string(first, &q, &err);
	if (r == -ENOMEM)
		return;
	if (r < 0) {
		fprintf(stderr, "canonical form refused: %s\n%s\n", err.msg, first);
		abort();
	}
	if (policy_to_canonical_json(q, &second) < 0 || policy_hash(p, h1) < 0 ||
	    policy_hash(q, h2) < 0)
		return;
	if (strcmp(first, second) != 0 || memcmp(h1, h2, sizeof(h1)) != 0) {
		fprintf(stderr, "canonical form is not stable:\n%s\n%s\n", first, second);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	_cleanup_(policy_freep) struct policy *p = NULL;
	struct al_error err = {};
	int r;

	r = policy_load_buffer((const char *)data, size, &p, &err);
	if (r < 0) {
		if (p)
			abort(); /* *ret is untouched on error */
		check_refusal(r, &err);
		return 0;
	}
	check_idempotence(p);
	return 0;
}
