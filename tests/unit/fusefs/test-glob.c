/* tests/unit/fusefs/test-glob.c: the workspace pattern language (fusefs/glob.c). Besides the
 * examples, every pattern and path over a small alphabet is checked against a plain recursive
 * matcher written from the definition, which is slow but obviously right. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "fusefs/fusefs-internal.h"

#define LONG_PATH_COMPONENTS 2048 /* "a/a/.../a": PATH_MAX - 1 bytes */

static void test_star_matches_within_one_component_only(void **state)
{
	(void)state;
	assert_true(fusefs_glob_match("*.c", "a.c"));
	assert_true(fusefs_glob_match("*.c", ".c"));
	assert_true(fusefs_glob_match("src/*", "src/a"));
	assert_false(fusefs_glob_match("*.c", "src/a.c"));
	assert_false(fusefs_glob_match("*", "a/b"));
	assert_false(fusefs_glob_match("*", ""));
	assert_false(fusefs_glob_match("src/*", "src"));
	assert_false(fusefs_glob_match("src/*", "src/a/b"));
}

static void test_question_mark_matches_one_character_but_not_a_slash(void **state)
{
	(void)state;
	assert_true(fusefs_glob_match("a?c", "abc"));
	assert_true(fusefs_glob_match("a?c", "a.c"));
	assert_false(fusefs_glob_match("a?c", "ac"));
	assert_false(fusefs_glob_match("a?c", "abbc"));
	assert_false(fusefs_glob_match("a?c", "a/c"));
	assert_false(fusefs_glob_match("?", ""));
}

static void test_dotfiles_are_not_special(void **state)
{
	(void)state;
	assert_true(fusefs_glob_match("*", ".env"));
	assert_true(fusefs_glob_match("?env", ".env"));
	assert_true(fusefs_glob_match("*/config", ".git/config"));
	assert_true(fusefs_glob_match("**", ".git/hooks/pre-commit"));
	assert_true(fusefs_glob_match("**/*", "a/.hidden"));
}

static void test_literal_pattern_matches_only_its_own_path(void **state)
{
	(void)state;
	assert_true(fusefs_glob_match("a/b", "a/b"));
	assert_false(fusefs_glob_match("a/b", "a"));
	assert_false(fusefs_glob_match("a/b", "a/b/c"));
	assert_false(fusefs_glob_match("a/b", "a/bc"));
	assert_false(fusefs_glob_match("a/b", "x/a/b"));
	assert_false(fusefs_glob_match("a", ""));
}

static void test_double_star_matches_zero_components(void **state)
{
	(void)state;
	assert_true(fusefs_glob_match("**", ""));
	assert_true(fusefs_glob_match("**/x", "x"));
	assert_true(fusefs_glob_match("a/**/b", "a/b"));
	assert_true(fusefs_glob_match("src/**", "src"));
	assert_true(fusefs_glob_match("**/**/x", "x"));
	assert_false(fusefs_glob_match("src/**", ""));
	assert_false(fusefs_glob_match("src/**", "srcx"));
}

static void test_double_star_matches_many_components(void **state)
{
	(void)state;
	assert_true(fusefs_glob_match("**", "a/b/c"));
	assert_true(fusefs_glob_match("a/**/b", "a/x/y/z/b"));
	assert_true(fusefs_glob_match("**/.env", "a/b/c/.env"));
	assert_true(fusefs_glob_match("src/**", "src/a/b"));
	assert_true(fusefs_glob_match("**/**/x", "a/b/x"));
	assert_false(fusefs_glob_match("a/**/b", "a/x/y/z/c"));
	assert_false(fusefs_glob_match("a/**/b", "x/a/b"));
	assert_false(fusefs_glob_match("**/.env", "a/.env/b"));
}

static void test_star_backtracks_within_a_component(void **state)
{
	(void)state;
	assert_true(fusefs_glob_match("*a*b*c", "xxaybzc"));
	assert_true(fusefs_glob_match("*.tar.gz", "x.tar.tar.gz"));
	assert_true(fusefs_glob_match("a*a", "aa"));
	assert_true(fusefs_glob_match("**/*.c", "a/b.c.c"));
	assert_false(fusefs_glob_match("a*a*a*b", "aaaaaaaaaaaaac"));
	assert_false(fusefs_glob_match("a*a", "a"));
}

static void test_double_star_backtracks_over_components(void **state)
{
	(void)state;
	assert_true(fusefs_glob_match("**/a/b", "a/a/b"));
	assert_true(fusefs_glob_match("**/a/b", "x/a/a/b"));
	assert_true(fusefs_glob_match("**/a/**/b", "a/x/a/b"));
	assert_true(fusefs_glob_match("**/a/*/c", "a/a/b/c"));
	assert_true(fusefs_glob_match("x/**/y/**/z", "x/y/y/q/z"));
	assert_false(fusefs_glob_match("**/a/b", "a/b/a"));
	assert_false(fusefs_glob_match("x/**/y/**/z", "x/z/y"));
}

/* Letters that a casefold file system (Unicode's full folding) or an upcase table takes to ASCII
 * ones match them in the fold forms: long s, the Kelvin sign, sharp s and the Latin ligatures. */
static void test_fold_forms_match_what_folds_to_ascii(void **state)
{
	(void)state;
	assert_true(fusefs_glob_match_fold(".bashrc", ".ba\xc5\xbfhrc"));
	assert_true(fusefs_glob_match_fold("**/hooks/*", ".git/hoo\xe2\x84\xaas/x"));
	assert_true(fusefs_glob_match_fold("config", "con\xef\xac\x81g"));
	assert_true(fusefs_glob_match_fold("office", "o\xef\xac\x83"
						     "ce"));
	assert_true(fusefs_glob_match_fold("glass", "GLA\xc3\x9f"));
	assert_true(fusefs_glob_match_fold("gla\xc3\x9f", "glass"));
	assert_true(fusefs_glob_match_fold("*st*", "\xef\xac\x85"));
	assert_true(fusefs_glob_match_below_fold("hooks/*", "hoo\xe2\x84\xaas"));
	assert_false(fusefs_glob_match("config", "con\xef\xac\x81g"));
	assert_false(fusefs_glob_match_fold("config", "con\xef\xac\x81"));
	assert_false(fusefs_glob_match_fold("x", "\xc5"));     /* a lone lead byte */
	assert_false(fusefs_glob_match_fold("s", "\xc5\xbe")); /* U+017E is no s */
}

static void test_fold_forms_match_letters_in_either_case_only(void **state)
{
	(void)state;
	assert_true(fusefs_glob_match_fold("**/.git/**/hooks/*/**", "a/.GIT/Hooks/pre-commit"));
	assert_true(fusefs_glob_match_fold("**/*.git", "R.Git"));
	assert_true(fusefs_glob_match_fold("A?c", "aXC"));
	assert_false(fusefs_glob_match("**/.git/**", ".GIT/config"));
	assert_false(fusefs_glob_match_fold(".git", ".gi"));
	assert_false(fusefs_glob_match_fold("a@", "a`")); /* '@' and '`' are no letters */
	assert_false(fusefs_glob_match_fold("\xc3\xa9", "\xc3\x89")); /* ASCII only */
	assert_true(fusefs_glob_match_below_fold(".GIT/hooks", ".git"));
	assert_false(fusefs_glob_match_below(".GIT/hooks", ".git"));
}

static void test_match_below_follows_the_documented_examples(void **state)
{
	static const struct {
		const char *pattern, *dir;
		bool below;
	} cases[] = {
	    {"src/**", "", true},
	    {"src/**", "src", true},
	    {"src/**", "src/a/b", true},
	    {"src/*.c", "src", true},
	    {"src/*.c", "docs", false},
	    {"**/.env", "anything", true},
	    {"**/.env", "a/b/c", true},
	    {"a/b", "a", true},
	    {"a/b", "a/b", false},
	    {"*/x", "foo", true},
	    {"*/x", "foo/x", false},
	    {"a", "", true},
	    {"a", "a", false},
	    {"a/*/c/**", "a/b", true},
	    {"a/*/c/**", "a/b/d", false},
	    {"a/*/c/**", "a/b/c/d", true},
	    {"a/**/b", "x", false},
	    {"a/**/b", "a/q/r", true},
	    {"**", "", true},
	    {"**", "a/b", true},
	    {"*.c", "a.c", false},
	};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		bool below = fusefs_glob_match_below(cases[i].pattern, cases[i].dir);

		if (below != cases[i].below)
			fail_msg("match_below(\"%s\", \"%s\") = %d", cases[i].pattern, cases[i].dir,
				 below);
	}
}

/* ---- the reference: straight from the definition, recursive, exponential ---- */

static bool ref_component(const char *p, size_t pn, const char *s, size_t sn)
{
	if (pn == 0)
		return sn == 0;
	if (p[0] == '*')
		return ref_component(p + 1, pn - 1, s, sn) ||
		       (sn > 0 && ref_component(p, pn, s + 1, sn - 1));
	return sn > 0 && (p[0] == '?' || p[0] == s[0]) &&
	       ref_component(p + 1, pn - 1, s + 1, sn - 1);
}

static bool ref_match(const char *const *pc, size_t np, const char *const *sc, size_t ns)
{
	if (np == 0)
		return ns == 0;
	if (streq(pc[0], "**"))
		return ref_match(pc + 1, np - 1, sc, ns) ||
		       (ns > 0 && ref_match(pc, np, sc + 1, ns - 1));
	return ns > 0 && ref_component(pc[0], strlen(pc[0]), sc[0], strlen(sc[0])) &&
	       ref_match(pc + 1, np - 1, sc + 1, ns - 1);
}

/* Enumerates the lists of up to max components of alphabet, in order; writes list number i
 * into ret (its components) and returns its length, or -1 past the last list. */
static int nth_list(const char *const *alphabet, size_t n_alphabet, size_t max, size_t i,
		    const char **ret)
{
	size_t count = 1;

	for (size_t len = 0; len <= max; len++) {
		if (i < count) {
			for (size_t k = len; k > 0; k--) {
				ret[k - 1] = alphabet[i % n_alphabet];
				i /= n_alphabet;
			}
			return (int)len;
		}
		i -= count;
		count *= n_alphabet;
	}
	return -1;
}

static void join(const char *const *c, size_t n, char *buf, size_t size)
{
	size_t o = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n; i++)
		o += (size_t)snprintf(buf + o, size - o, "%s%s", i > 0 ? "/" : "", c[i]);
}

static const char *const pattern_alphabet[] = {"a", "b", "*", "?", "**", "a*", "*b", "?a"};
static const char *const path_alphabet[] = {"a", "b", "ab", "ba", "aa"};

static void test_match_agrees_with_the_definition_on_every_small_case(void **state)
{
	const char *pc[3], *sc[4];
	char pattern[64], path[64];
	int np, ns;
	unsigned checked = 0;

	(void)state;
	for (size_t i = 1;
	     (np = nth_list(pattern_alphabet, ELEMENTSOF(pattern_alphabet), 3, i, pc)) >= 0; i++) {
		join(pc, (size_t)np, pattern, sizeof(pattern));
		for (size_t j = 0;
		     (ns = nth_list(path_alphabet, ELEMENTSOF(path_alphabet), 4, j, sc)) >= 0;
		     j++) {
			bool want = ref_match(pc, (size_t)np, sc, (size_t)ns);

			join(sc, (size_t)ns, path, sizeof(path));
			if (fusefs_glob_match(pattern, path) != want)
				fail_msg("match(\"%s\", \"%s\") != %d", pattern, path, want);
			checked++;
		}
	}
	print_message("# %u pattern/path pairs agree with the reference\n", checked);
}

/* match_below(pattern, dir) is true exactly when some dir/X matches, X being one to three
 * components: patterns of three components never need a longer X. */
static void test_match_below_agrees_with_the_definition_on_every_small_case(void **state)
{
	static const char *const x_alphabet[] = {"a", "b", "ab", "ba"};
	const char *pc[3], *sc[2 + 3];
	char pattern[64], dir[64];
	int np, nd, nx;

	(void)state;
	for (size_t i = 1;
	     (np = nth_list(pattern_alphabet, ELEMENTSOF(pattern_alphabet), 3, i, pc)) >= 0; i++) {
		join(pc, (size_t)np, pattern, sizeof(pattern));
		for (size_t j = 0;
		     (nd = nth_list(path_alphabet, ELEMENTSOF(path_alphabet), 2, j, sc)) >= 0;
		     j++) {
			bool want = false;

			for (size_t k = 1;
			     !want && (nx = nth_list(x_alphabet, ELEMENTSOF(x_alphabet), 3, k,
						     sc + nd)) >= 0;
			     k++)
				want = ref_match(pc, (size_t)np, sc, (size_t)(nd + nx));
			join(sc, (size_t)nd, dir, sizeof(dir));
			if (fusefs_glob_match_below(pattern, dir) != want)
				fail_msg("match_below(\"%s\", \"%s\") != %d", pattern, dir, want);
		}
	}
}

/* ---- hostile input ---- */

static double elapsed_ms(const struct timespec *start)
{
	struct timespec now;

	assert_int_equal(clock_gettime(CLOCK_MONOTONIC, &now), 0);
	return (double)(now.tv_sec - start->tv_sec) * 1e3 +
	       (double)(now.tv_nsec - start->tv_nsec) / 1e6;
}

/* A path of 2048 components and patterns that make a backtracking matcher try every way to
 * share the path out among their "**": a recursive matcher would need about 2048^k steps for k
 * of them, and a stack as deep as the path. */
static void test_hostile_long_path_does_not_blow_the_stack(void **state)
{
	char path[2 * LONG_PATH_COMPONENTS], pattern[2048];
	struct timespec start;
	size_t o = 0;

	(void)state;
	for (size_t i = 0; i < LONG_PATH_COMPONENTS; i++) {
		path[o++] = 'a';
		path[o++] = '/';
	}
	path[o - 1] = '\0';
	assert_int_equal(strlen(path), 4095);

	o = 0;
	for (size_t i = 0; i < 300; i++)
		o += (size_t)snprintf(pattern + o, sizeof(pattern) - o, "**/a/");
	(void)snprintf(pattern + o, sizeof(pattern) - o, "b");

	assert_int_equal(clock_gettime(CLOCK_MONOTONIC, &start), 0);
	assert_false(fusefs_glob_match(pattern, path));
	pattern[o] = 'a';
	assert_true(fusefs_glob_match(pattern, path));
	assert_false(fusefs_glob_match("**/a/**/a/**/a/**/b", path));
	assert_true(fusefs_glob_match("**/a/**/a/**/a/**/a", path));
	assert_true(fusefs_glob_match_below("**/b", path));
	assert_false(fusefs_glob_match_below("a/a/b/**", path));
	assert_false(fusefs_glob_match_below("a", path));
	print_message("# 2048-component path against 300 \"**\": %.1f ms\n", elapsed_ms(&start));
}

static void test_hostile_long_component_does_not_blow_up(void **state)
{
	char name[256], pattern[256];
	struct timespec start;
	size_t o = 0;

	(void)state;
	memset(name, 'a', 255);
	name[255] = '\0';
	while (o + 2 < 250) {
		pattern[o++] = '*';
		pattern[o++] = 'a';
	}
	pattern[o++] = '*';
	pattern[o++] = 'b';
	pattern[o] = '\0';

	assert_int_equal(clock_gettime(CLOCK_MONOTONIC, &start), 0);
	assert_false(fusefs_glob_match(pattern, name));
	pattern[o - 1] = 'a';
	assert_true(fusefs_glob_match(pattern, name));
	print_message("# 255-byte name against 125 '*': %.1f ms\n", elapsed_ms(&start));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_star_matches_within_one_component_only),
	    cmocka_unit_test(test_question_mark_matches_one_character_but_not_a_slash),
	    cmocka_unit_test(test_dotfiles_are_not_special),
	    cmocka_unit_test(test_literal_pattern_matches_only_its_own_path),
	    cmocka_unit_test(test_double_star_matches_zero_components),
	    cmocka_unit_test(test_double_star_matches_many_components),
	    cmocka_unit_test(test_star_backtracks_within_a_component),
	    cmocka_unit_test(test_double_star_backtracks_over_components),
	    cmocka_unit_test(test_fold_forms_match_letters_in_either_case_only),
	    cmocka_unit_test(test_fold_forms_match_what_folds_to_ascii),
	    cmocka_unit_test(test_match_below_follows_the_documented_examples),
	    cmocka_unit_test(test_match_agrees_with_the_definition_on_every_small_case),
	    cmocka_unit_test(test_match_below_agrees_with_the_definition_on_every_small_case),
	    cmocka_unit_test(test_hostile_long_path_does_not_blow_the_stack),
	    cmocka_unit_test(test_hostile_long_component_does_not_blow_up),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
