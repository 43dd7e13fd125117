/* Fuzzes the git config reader of the workspace filesystem (fusefs/git-config.c): the input is a
 * config file's text. Besides "no crash, no hang, no read past the text", it checks that every
 * value handed over is a NUL-terminated string shorter than FUSEFS_PATH_MAX, of a known kind,
 * and that the values come in order of where they stand (a second parse gives the same ones).
 * The same text goes through the strict checker (fusefs_git_check()) as each kind of file: it
 * answers 0 or -EACCES, the latter with a NUL-terminated reason, twice the same. */

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fusefs/fusefs-internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct seen {
	size_t n;
	uint64_t sum; /* of the values' lengths and kinds, in order */
};

static int on_path(enum fusefs_git_path kind, const char *value, void *userdata)
{
	struct seen *s = userdata;
	size_t len = strnlen(value, FUSEFS_PATH_MAX);

	if (len >= FUSEFS_PATH_MAX || (kind != FUSEFS_GIT_HOOKS && kind != FUSEFS_GIT_INCLUDE))
		abort();
	s->n++;
	s->sum = s->sum * 31 + len * 2 + (uint64_t)kind;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* An exact-size copy, so that a read past the text is caught by the sanitizer. */
	char *text = malloc(size ? size : 1);
	struct seen a = {0}, b = {0};

	if (!text)
		return 0;
	memcpy(text, data, size);
	if (fusefs_git_config_paths(text, size, on_path, &a) != 0 ||
	    fusefs_git_config_paths(text, size, on_path, &b) != 0 || a.n != b.n || a.sum != b.sum)
		abort();
	for (int k = FUSEFS_GIT_CHECK_NONE; k <= FUSEFS_GIT_CHECK_STRATEGY; k++) {
		const struct fusefs_git_where where = {
		    .dir = "a/.git", .root = "/r", .mount = "/w"};
		char why1[64], why2[64];
		int r1 = fusefs_git_check(k, text, size, &where, why1, sizeof(why1));
		int r2 = fusefs_git_check(k, text, size, &where, why2, sizeof(why2));

		if (r1 != r2 || (r1 != 0 && r1 != -EACCES) ||
		    (r1 < 0 && (!memchr(why1, '\0', sizeof(why1)) || strcmp(why1, why2))))
			abort();
	}
	free(text);
	return 0;
}
