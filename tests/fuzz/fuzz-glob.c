/* Fuzzes the workspace pattern matcher (fusefs/glob.c) and the rules built on it (fusefs/rules.c).
 * The input is a pattern, a newline, and a workspace path. A pattern the policy parser refuses
 * (it is checked through policy_load_string(), as a workspace.read entry) and a path the
 * filesystem would never pass (an empty, "." or ".." component, a leading or trailing '/') are
 * skipped; "" is the root. Besides "no crash, no hang", it checks:
 *  - fusefs_glob_match() and fusefs_glob_match_below() against a dynamic-programming matcher
 *    written from the definition, and a path below the folder that match_below promises;
 *  - a path that matches has every ancestor matched below;
 *  - the _fold forms match as the plain ones do on both strings lower-cased;
 *  - "P/\**" matches a path exactly when P matches the path or one of its ancestors (which is how
 *    deny patterns hide what is below a denied folder);
 *  - with the pattern as read and write list, then as deny list: WRITE implies READ, PROTECTED
 *    excludes WRITE, a visible path has a visible parent, and a folder rename called uniform
 *    keeps the decision about the path below it. */

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fusefs/fusefs-internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_COMPONENTS (PATH_MAX / 2 + 2)
/* fusefs_rules_rename_is_uniform() matches each prefix of each pattern: k matches for a pattern
 * of k components, each up to k times the path's components. Policy patterns are short; longer
 * ones here only slow the fuzzer down, so the rename check skips them. */
#define RENAME_CHECK_COMPONENTS_MAX 64

struct component {
	const char *s;
	size_t len;
};

struct split {
	struct component c[MAX_COMPONENTS];
	size_t n;
};

_noreturn_ static void fail(const char *what, const char *pattern, const char *path)
{
	fprintf(stderr, "%s: pattern \"%s\", path \"%s\"\n", what, pattern, path);
	abort();
}

/* Splits s at '/'; false for an empty, "." or ".." component or too many of them. "" has none. */
static bool split(const char *s, struct split *ret)
{
	ret->n = 0;
	if (*s == '\0')
		return true;
	for (;;) {
		size_t l = strcspn(s, "/");

		if (l == 0 || (l == 1 && s[0] == '.') || (l == 2 && s[0] == '.' && s[1] == '.') ||
		    ret->n == MAX_COMPONENTS)
			return false;
		ret->c[ret->n++] = (struct component){s, l};
		s += l;
		if (*s == '\0')
			return true;
		s++;
	}
}

static bool is_double_star(const struct component *c)
{
	return c->len == 2 && c->s[0] == '*' && c->s[1] == '*';
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (!p)
		abort();
	return p;
}

/* The reference component match: m[i][j] = p[0, i) matches s[0, j), one row at a time. */
static bool ref_component(const struct component *p, const struct component *s)
{
	bool rows[2][PATH_MAX + 1], *row = rows[0], *next = rows[1];

	row[0] = true;
	for (size_t j = 1; j <= s->len; j++)
		row[j] = false;
	for (size_t i = 0; i < p->len; i++) {
		bool *t;

		next[0] = p->s[i] == '*' && row[0];
		for (size_t j = 1; j <= s->len; j++) {
			if (p->s[i] == '*')
				next[j] = row[j] || next[j - 1];
			else
				next[j] = row[j - 1] && (p->s[i] == '?' || p->s[i] == s->s[j - 1]);
		}
		t = row;
		row = next;
		next = t;
	}
	return row[s->len];
}

/* The reference path match: fills m (np + 1 rows of ns + 1), m[i][j] = components [0, i) of the
 * pattern match components [0, j) of the path. */
static void ref_table(const struct split *p, const struct split *s, bool *m)
{
	size_t w = s->n + 1;

	m[0] = true;
	for (size_t i = 1; i <= p->n; i++)
		for (size_t j = 0; j <= s->n; j++) {
			if (is_double_star(&p->c[i - 1]))
				m[i * w + j] = m[(i - 1) * w + j] || (j > 0 && m[i * w + j - 1]);
			else
				m[i * w + j] = j > 0 && m[(i - 1) * w + j - 1] &&
					       ref_component(&p->c[i - 1], &s->c[j - 1]);
		}
}

/* A name the component pattern c matches: '*' as nothing, '?' as 'x'; "x" if that is empty. */
static size_t instantiate(const struct component *c, char *buf)
{
	size_t o = 0;

	for (size_t i = 0; i < c->len; i++)
		if (c->s[i] != '*')
			buf[o++] = c->s[i] == '?' ? 'x' : c->s[i];
	if (o == 0)
		buf[o++] = 'x';
	return o;
}

static void check_match(const char *pattern, const struct split *p, const char *path,
			const struct split *s, const bool *m)
{
	_cleanup_free_ char *below = NULL;
	size_t w = s->n + 1, from = SIZE_MAX, o;

	if (fusefs_glob_match(pattern, path) != m[p->n * w + s->n])
		fail("match differs from the reference", pattern, path);

	/* Below path: after components [0, i) of the pattern matched path, the rest of the
	 * pattern (non-empty, or a last "**" that goes on) matches some non-empty X. */
	for (size_t i = 0; i <= p->n && from == SIZE_MAX; i++)
		if (m[i * w + s->n] && (i < p->n || (i > 0 && is_double_star(&p->c[i - 1]))))
			from = i;
	if (fusefs_glob_match_below(pattern, path) != (from != SIZE_MAX))
		fail("match_below differs from the reference", pattern, path);
	if (from == SIZE_MAX)
		return;

	/* The X it promises: the rest of the pattern, each component instantiated. */
	below = xcalloc(strlen(path) + strlen(pattern) + 8, 1);
	o = (size_t)sprintf(below, "%s", path);
	for (size_t k = from; k < p->n; k++) {
		if (is_double_star(&p->c[k]))
			continue;
		if (o > 0)
			below[o++] = '/';
		o += instantiate(&p->c[k], below + o);
	}
	if (o == strlen(path))
		(void)sprintf(below + o, "%sx", o > 0 ? "/" : "");
	if (!fusefs_glob_match(pattern, below))
		fail("match_below promised a path that does not match", pattern, below);
}

/* A match costs up to the product of the two component counts, and a path has up to two thousand
 * ancestors: the matcher itself is run on as many of the nearest ancestors as this many component
 * pairs allow (at least the parent); the others are read off the reference table. match_below,
 * which is linear, is checked on all of them. */
#define ANCESTORS_MATCH_BUDGET (1u << 16)

/* s with its ASCII letters lower-cased and what a casefold file system makes ASCII letters of
 * (long s, sharp s, the Kelvin sign, the Latin ligatures) replaced by them, in place. */
static void fold_in_place(char *s)
{
	static const char *const from[] = {"\xc3\x9f",	   "\xc5\xbf",	   "\xe1\xba\x9e",
					   "\xe2\x84\xaa", "\xef\xac\x80", "\xef\xac\x81",
					   "\xef\xac\x82", "\xef\xac\x83", "\xef\xac\x84",
					   "\xef\xac\x85", "\xef\xac\x86"};
	static const char *const to[] = {"ss", "s",   "ss",  "k",  "ff", "fi",
					 "fl", "ffi", "ffl", "st", "st"};
	char *w = s;

	while (*s) {
		size_t i = 0;

		while (i < ELEMENTSOF(from) && strncmp(s, from[i], strlen(from[i])) != 0)
			i++;
		if (i < ELEMENTSOF(from)) {
			s += strlen(from[i]);
			for (const char *t = to[i]; *t; t++)
				*w++ = *t;
		} else {
			*w++ = *s >= 'A' && *s <= 'Z' ? (char)(*s - 'A' + 'a') : *s;
			s++;
		}
	}
	*w = '\0';
}

/* The _fold forms are the plain ones on both strings folded as above. */
static void check_fold(const char *pattern, const char *path)
{
	_cleanup_free_ char *lp = strdup(pattern), *ls = strdup(path);

	if (!lp || !ls)
		abort();
	fold_in_place(lp);
	fold_in_place(ls);
	if (fusefs_glob_match_fold(pattern, path) != fusefs_glob_match(lp, ls))
		fail("match_fold differs from the match of the lower-cased strings", pattern, path);
	if (fusefs_glob_match_below_fold(pattern, path) != fusefs_glob_match_below(lp, ls))
		fail("match_below_fold differs from the lower-cased strings'", pattern, path);
}

/* Ancestors, and "pattern/\**" against path. m is the reference table of pattern against path:
 * its last row says which ancestors (prefixes of the path) the pattern matches. */
static void check_ancestors(const char *pattern, const struct split *p, const char *path,
			    const struct split *s, const bool *m)
{
	_cleanup_free_ char *under = NULL, *prefix = strdup(path);
	size_t w = s->n + 1, j = s->n,
	       n_matched = MAX(ANCESTORS_MATCH_BUDGET / ((p->n + 1) * w), (size_t)1);
	bool matched = m[p->n * w + s->n], any = matched;

	if (!prefix || asprintf(&under, "%s/**", pattern) < 0)
		abort();
	for (char *slash = strrchr(prefix, '/');; slash = strrchr(prefix, '/')) {
		if (slash)
			*slash = '\0';
		else
			prefix[0] = '\0';
		if (j > 0) /* the root ("") is taken as its own ancestor */
			j--;
		if (matched && !fusefs_glob_match_below(pattern, prefix))
			fail("a match has an ancestor not matched below", pattern, prefix);
		if (s->n - j <= n_matched && fusefs_glob_match(pattern, prefix) != m[p->n * w + j])
			fail("match differs from the reference on an ancestor", pattern, prefix);
		any = any || m[p->n * w + j];
		if (!slash)
			break;
	}
	if (fusefs_glob_match(under, path) != any)
		fail("\"P/**\" differs from P on the path or an ancestor", pattern, path);
}

/* The JSON string of s (control characters escaped; the parser checks UTF-8). */
static char *json_string(const char *s)
{
	char *out = xcalloc(strlen(s) * 6 + 3, 1);
	size_t o = 0;

	out[o++] = '"';
	for (; *s; s++) {
		if ((unsigned char)*s < 0x20)
			o += (size_t)sprintf(out + o, "\\u%04x", (unsigned char)*s);
		else if (*s == '"' || *s == '\\')
			o += (size_t)sprintf(out + o, "\\%c", *s);
		else
			out[o++] = *s;
	}
	out[o++] = '"';
	return out;
}

/* The rules of the policy whose "workspace" object is workspace, or NULL when the policy parser
 * refuses it. */
static struct fusefs_rules *rules_for(const char *workspace)
{
	_cleanup_(policy_freep) struct policy *p = NULL;
	_cleanup_free_ char *json = NULL;
	struct fusefs_rules *rules = NULL;
	struct al_error err = {};
	int r;

	if (asprintf(&json, "{\"workspace\": %s}", workspace) < 0)
		abort();
	r = policy_load_string(json, &p, &err);
	if (r < 0)
		return NULL;
	r = fusefs_rules_new(p, &rules, &err);
	if (r < 0) {
		fprintf(stderr, "rules refused what the policy took: %s\n", err.msg);
		abort();
	}
	return rules;
}

/* If renaming folder from to to is called uniform, path (below from) decides as it will there. */
static void check_rename(const struct fusefs_rules *rules, const char *from, const char *to,
			 const char *pattern, const char *path, bool is_dir)
{
	_cleanup_free_ char *moved = NULL;

	if (!fusefs_rules_rename_is_uniform(rules, from, to))
		return;
	if (asprintf(&moved, "%s/%s", to, path + strlen(from) + 1) < 0)
		abort();
	if (fusefs_rules_decide(rules, moved, is_dir) != fusefs_rules_decide(rules, path, is_dir))
		fail("a uniform rename changes the decision below", pattern, path);
}

static void check_rules(const struct fusefs_rules *rules, const char *pattern, size_t n_pattern,
			const char *path)
{
	_cleanup_free_ char *parent = strdup(path), *deeper = NULL;
	char *slash = parent ? strrchr(parent, '/') : NULL;

	if (!parent)
		abort();
	if (slash)
		*slash = '\0';
	else
		parent[0] = '\0';
	if (asprintf(&deeper, "zz/%s", parent) < 0)
		abort();
	for (int d = 0; d < 2; d++) {
		unsigned v = fusefs_rules_decide(rules, path, d);

		if ((v & FUSEFS_ACCESS_WRITE) && !(v & FUSEFS_ACCESS_READ))
			fail("WRITE without READ", pattern, path);
		if ((v & FUSEFS_ACCESS_PROTECTED) &&
		    ((v & FUSEFS_ACCESS_WRITE) || !(v & FUSEFS_ACCESS_READ)))
			fail("PROTECTED with WRITE or without READ", pattern, path);
		if ((v & FUSEFS_ACCESS_TRAVERSE) && v != FUSEFS_ACCESS_TRAVERSE)
			fail("TRAVERSE with another bit", pattern, path);
		if (path[0] == '\0' && v == 0)
			fail("the root is hidden", pattern, path);
		if (path[0] != '\0' && v != 0 && fusefs_rules_decide(rules, parent, true) == 0)
			fail("a visible path has a hidden parent", pattern, path);
		if (parent[0] != '\0' && n_pattern <= RENAME_CHECK_COMPONENTS_MAX) {
			check_rename(rules, parent, "zz", pattern, path, d);
			check_rename(rules, parent, deeper, pattern, path, d);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	_cleanup_(fusefs_rules_freep) struct fusefs_rules *as_read = NULL, *as_deny = NULL;
	_cleanup_free_ char *pattern = NULL, *quoted = NULL, *read_json = NULL, *deny_json = NULL;
	_cleanup_free_ struct split *p = NULL, *s = NULL;
	_cleanup_free_ bool *m = NULL;
	const uint8_t *nl = memchr(data, '\n', size);
	const char *path;

	if (!nl || memchr(data, '\0', size) || size - 1 > POLICY_STRING_MAX + PATH_MAX)
		return 0;
	pattern = strndup((const char *)data, size);
	if (!pattern)
		abort();
	pattern[nl - data] = '\0';
	path = pattern + (nl - data) + 1;
	if (strlen(pattern) > POLICY_STRING_MAX || strlen(path) >= PATH_MAX)
		return 0;

	p = xcalloc(1, sizeof(*p));
	s = xcalloc(1, sizeof(*s));
	if (!split(path, s))
		return 0;
	quoted = json_string(pattern);
	if (asprintf(&read_json, "{\"read\": [%s], \"write\": [%s]}", quoted, quoted) < 0 ||
	    asprintf(&deny_json, "{\"deny\": [%s], \"write\": [\"**\", %s]}", quoted, quoted) < 0)
		abort();
	as_read = rules_for(read_json);
	if (!as_read)
		return 0; /* the policy refuses the pattern */
	if (!split(pattern, p))
		fail("the policy took a pattern with an empty, \".\" or \"..\" component", pattern,
		     path);

	m = xcalloc((p->n + 1) * (s->n + 1), sizeof(bool));
	ref_table(p, s, m);
	check_match(pattern, p, path, s, m);
	check_ancestors(pattern, p, path, s, m);
	check_fold(pattern, path);
	check_rules(as_read, pattern, p->n, path);
	as_deny = rules_for(deny_json);
	if (!as_deny)
		abort();
	check_rules(as_deny, pattern, p->n, path);
	return 0;
}
