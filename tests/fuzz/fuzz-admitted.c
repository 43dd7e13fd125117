/* Fuzzes the parser of the admitted set (policy_admitted_in): the input is the set's text, given
 * as the exact bytes libFuzzer (or replay.c) holds, with no NUL after them, so that the sanitizers
 * see any read past len. Two hashes are looked up: a fixed one (the seeds list it) and the
 * input's first 64 bytes. Each answer must be the one of a reference written here from the
 * format policy.h documents:
 *  - lines end at '\n'; blanks (' ', '\t') before anything are skipped; an empty line and one
 *    whose first non-blank is '#' say nothing;
 *  - any other line is 64 lower-case hex digits, then the line's end or a blank (and then
 *    anything, a comment); else the set is malformed: -EINVAL with err naming the line number;
 *  - the set is read whole: a malformed line refuses it even after a line that is the hash, and
 *    the first malformed line is the one named. */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HASH_CHARS (POLICY_HASH_HEX_SIZE - 1)
#define SEED_HASH "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static bool is_lower_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

static int reference(const char *text, size_t len, const char *hash, bool *ret, size_t *ret_line)
{
	bool found = false;
	size_t line = 0;

	for (size_t i = 0; i < len;) {
		size_t start, end, token;
		bool ok;

		line++;
		start = i;
		while (i < len && text[i] != '\n')
			i++;
		end = i;
		if (i < len)
			i++;
		while (start < end && is_blank(text[start]))
			start++;
		if (start == end || text[start] == '#')
			continue;
		for (token = start; token < end && !is_blank(text[token]);)
			token++;
		ok = token - start == HASH_CHARS;
		for (size_t k = start; ok && k < token; k++)
			ok = is_lower_hex(text[k]);
		if (!ok) {
			*ret_line = line;
			return -EINVAL;
		}
		if (memcmp(text + start, hash, HASH_CHARS) == 0)
			found = true;
	}
	*ret = found;
	return 0;
}

static void check_lookup(const char *text, size_t len, const char *hash)
{
	struct al_error err = {};
	bool found = false, expected = false;
	size_t line = 0;
	char named[64];
	int r, want;

	r = policy_admitted_in(text, len, hash, &found, &err);
	want = reference(text, len, hash, &expected, &line);
	if (r != want) {
		fprintf(stderr, "policy_admitted_in() = %d (%s), expected %d (line %zu)\n", r,
			err.msg, want, line);
		abort();
	}
	if (r < 0) {
		/* The line number, as a word: "line 1" must not pass for "line 12". */
		(void)snprintf(named, sizeof(named), "line %zu ", line);
		if (err.code != r || !strstr(err.msg, named)) {
			fprintf(stderr, "malformed line %zu, but err = {%d, \"%s\"}\n", line,
				err.code, err.msg);
			abort();
		}
		return;
	}
	if (found != expected) {
		fprintf(stderr, "hash %s: found %d, expected %d\n", hash, found, expected);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	char hash[POLICY_HASH_HEX_SIZE];

	check_lookup(text, size, SEED_HASH);
	if (size >= HASH_CHARS) {
		memcpy(hash, text, HASH_CHARS);
		hash[HASH_CHARS] = '\0';
		check_lookup(text, size, hash);
	}
	return 0;
}
