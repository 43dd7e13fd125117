/* launcher/userns.c: root's subordinate range, read from /etc/subuid or /etc/subgid text. */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "launcher/launcher-internal.h"

static int range(const char *text, uint32_t *ret)
{
	return launcher_userns_subid_range(text, strlen(text), ret);
}

static void test_subid_range_is_roots_line_with_65536_ids(void **state)
{
	uint32_t base = 7;

	(void)state;
	assert_int_equal(range("user:100000:65536\nroot:200000:65536\n", &base), 0);
	assert_int_equal(base, 200000);
	assert_int_equal(range("0:300000:131072", &base), 0); /* by uid, no final newline */
	assert_int_equal(base, 300000);
}

static void test_subid_range_refuses_short_odd_or_others_lines(void **state)
{
	uint32_t base = 7;

	(void)state;
	assert_int_equal(range("", &base), -ENOENT);
	assert_int_equal(range("user:100000:65536\n", &base), -ENOENT);
	assert_int_equal(range("root:100000:65535\n", &base), -ENOENT); /* too few ids */
	assert_int_equal(range("root:0:65536\n", &base), -ENOENT);	/* host root itself */
	assert_int_equal(range("root:4294967000:65536\n", &base), -ENOENT);
	assert_int_equal(range("root:1x:65536\nrootx:5:65536\n", &base), -ENOENT);
	assert_int_equal(range("root::65536\n", &base), -ENOENT);
	assert_int_equal(base, 7); /* untouched */
	assert_int_equal(range("root:1x:65536\nroot:400000:65536\n", &base), 0);
	assert_int_equal(base, 400000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_subid_range_is_roots_line_with_65536_ids),
	    cmocka_unit_test(test_subid_range_refuses_short_odd_or_others_lines),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
