/* policy-admit.c: the admitted set's parser, policy_admitted_in(). */

#include <errno.h>

#include "tests/unit/policy/policy-test.h"

#define HASH_A "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define HASH_B "a3f1c2d4e5b60718293a4b5c6d7e8f90112233445566778899aabbccddeeff00"
#define HASH_C "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"

/* Whether hash is in text, for a set that must parse. */
static bool admitted_at(const char *text, const char *hash, const char *file, int line)
{
	struct al_error err = {};
	bool found = false;
	int r;

	r = policy_admitted_in(text, strlen(text), hash, &found, &err);
	if (r != 0) {
		print_error("policy_admitted_in(\"%s\") = %d: %s\n", text, r, err.msg);
		_fail(file, line);
	}
	return found;
}
#define admitted(text, hash) admitted_at((text), (hash), __FILE__, __LINE__)

/* Checks that the set is refused as malformed, naming the line ("line N is not a policy hash"). */
static void refused_at(const char *text, const char *prefix, const char *file, int line)
{
	struct al_error err = {};
	bool found = false;
	int r;

	r = policy_admitted_in(text, strlen(text), HASH_A, &found, &err);
	if (!test_error_matches(&err, r, -EINVAL, prefix)) {
		print_error("set: \"%s\"\n", text);
		_fail(file, line);
	}
}
#define refused(text, prefix) refused_at((text), (prefix), __FILE__, __LINE__)

static void test_admitted_hash_present_is_found(void **state)
{
	(void)state;
	assert_true(admitted(HASH_A "\n", HASH_A));
	assert_true(admitted(HASH_B "\n" HASH_A "\n" HASH_C "\n", HASH_A));
	/* The last line needs no newline. */
	assert_true(admitted(HASH_B "\n" HASH_A, HASH_A));
	/* Listed twice is still listed. */
	assert_true(admitted(HASH_A "\n" HASH_A "\n", HASH_A));
}

static void test_admitted_hash_absent_is_not_found(void **state)
{
	(void)state;
	assert_false(admitted(HASH_B "\n" HASH_C "\n", HASH_A));
	assert_false(admitted("", HASH_A));
	assert_false(admitted("\n", HASH_A));
}

static void test_admitted_comments_are_skipped(void **state)
{
	(void)state;
	assert_false(admitted("# " HASH_A "\n", HASH_A));
	assert_false(admitted("#" HASH_A "\n", HASH_A));
	assert_false(admitted("  \t# " HASH_A " indented\n", HASH_A));
	assert_true(admitted("# the operator's set\n" HASH_A " ci runner\n", HASH_A));
	assert_true(admitted(HASH_A "\tnightly # with a # inside\n", HASH_A));
	assert_true(admitted(HASH_A "  \n", HASH_A));
}

static void test_admitted_blank_lines_are_skipped(void **state)
{
	(void)state;
	assert_true(admitted("\n\n" HASH_B "\n\n\n" HASH_A "\n\n", HASH_A));
	assert_true(admitted(" \t \n\t\n" HASH_A "\n", HASH_A));
	/* Blanks before a hash are skipped too. */
	assert_true(admitted("  \t" HASH_A "\n", HASH_A));
}

static void test_admitted_malformed_line_is_refused_naming_its_line(void **state)
{
	(void)state;
	refused("not a hash\n", "line 1 is not a policy hash");
	refused("# comment\n\n" HASH_B "\nsha256:" HASH_A "\n", "line 4 is not a policy hash");
	refused(HASH_B "\n" HASH_A "0\n", "line 2 is not a policy hash");
	refused(HASH_B "\n\n\n\n\n\n\n\n\n\n\n" HASH_B "x\n", "line 12 is not a policy hash");
	refused(HASH_A "\r\n", "line 1 is not a policy hash");
	/* 63 digits, 65 digits. */
	refused("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n",
		"line 1 is not a policy hash");
	refused(HASH_A "0\n", "line 1 is not a policy hash");
}

static void test_admitted_malformed_line_refuses_the_set_even_after_a_match(void **state)
{
	(void)state;
	refused(HASH_A "\nnot a hash\n", "line 2 is not a policy hash");
}

static void test_admitted_hash_followed_directly_by_hash_sign_is_refused(void **state)
{
	(void)state;
	refused(HASH_A "# no blank before the comment\n", "line 1 is not a policy hash");
	refused(HASH_B "\n" HASH_A "#\n", "line 2 is not a policy hash");
}

static void test_admitted_uppercase_hex_is_refused(void **state)
{
	(void)state;
	refused("0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef\n",
		"line 1 is not a policy hash");
	refused("# fine\n0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdeF\n",
		"line 2 is not a policy hash");
}

static void test_admitted_reads_only_len_bytes(void **state)
{
	static const char text[] = HASH_A "\n" HASH_B "\nnot a hash\n";
	struct al_error err = {};
	bool found = false;

	(void)state;
	/* The malformed third line is past len. */
	assert_int_equal(policy_admitted_in(text, 2 * 65, HASH_B, &found, &err), 0);
	assert_true(found);
	/* A hash cut short by len is no hash. */
	assert_int_equal(policy_admitted_in(text, 63, HASH_A, &found, &err), -EINVAL);
	assert_string_equal(err.msg, "line 1 is not a policy hash (64 lower-case hex digits, then "
				     "an optional comment)");
	/* A NUL byte inside a line makes it malformed, it does not end the set. */
	assert_int_equal(policy_admitted_in(HASH_A "\0\n", 66, HASH_A, &found, &err), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_admitted_hash_present_is_found),
	    cmocka_unit_test(test_admitted_hash_absent_is_not_found),
	    cmocka_unit_test(test_admitted_comments_are_skipped),
	    cmocka_unit_test(test_admitted_blank_lines_are_skipped),
	    cmocka_unit_test(test_admitted_malformed_line_is_refused_naming_its_line),
	    cmocka_unit_test(test_admitted_malformed_line_refuses_the_set_even_after_a_match),
	    cmocka_unit_test(test_admitted_hash_followed_directly_by_hash_sign_is_refused),
	    cmocka_unit_test(test_admitted_uppercase_hex_is_refused),
	    cmocka_unit_test(test_admitted_reads_only_len_bytes),
	};

	return cmocka_run_group_tests_name("policy-admit", tests, NULL, NULL);
}
