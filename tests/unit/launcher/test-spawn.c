/* tests/unit/launcher/test-spawn.c: where pid 1's spawn looks for a program on PATH
 * (launcher_spawn_path_next(), as execvp() and posix_spawnp() look), built from launcher/spawn.c
 * alone. */

#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "launcher/launcher-internal.h"

/* Every place looked at for file on path, joined with spaces ("''" for one that does not fit). */
static const char *places(const char *path, const char *file, size_t size)
{
	static char out[1024];
	char buf[PATH_MAX];

	out[0] = '\0';
	assert_true(size <= sizeof(buf));
	while (launcher_spawn_path_next(&path, file, buf, size)) {
		if (out[0])
			strcat(out, " ");
		strcat(out, buf[0] ? buf : "''");
	}
	return out;
}

static void test_spawn_path_looks_in_each_entry_in_order(void **state)
{
	(void)state;
	assert_string_equal(places("/usr/local/bin:/usr/bin:/bin", "true", PATH_MAX),
			    "/usr/local/bin/true /usr/bin/true /bin/true");
	assert_string_equal(places("/bin", "sh", PATH_MAX), "/bin/sh");
}

static void test_spawn_path_empty_entry_is_the_current_folder(void **state)
{
	(void)state;
	assert_string_equal(places(":/bin", "x", PATH_MAX), "x /bin/x");
	assert_string_equal(places("/bin::/usr/bin", "x", PATH_MAX), "/bin/x x /usr/bin/x");
	assert_string_equal(places("/bin:", "x", PATH_MAX), "/bin/x x");
	assert_string_equal(places("", "x", PATH_MAX), "x");
}

static void test_spawn_path_skips_what_does_not_fit(void **state)
{
	(void)state;
	/* "/bin/ab" needs 8 bytes with its NUL; "/b/ab" 6. */
	assert_string_equal(places("/bin:/b", "ab", 7), "'' /b/ab");
	assert_string_equal(places("/bin:/b", "ab", 8), "/bin/ab /b/ab");
}

static void test_spawn_path_ends(void **state)
{
	const char *path = "/a";
	char buf[64];

	(void)state;
	assert_true(launcher_spawn_path_next(&path, "f", buf, sizeof(buf)));
	assert_null(path);
	assert_false(launcher_spawn_path_next(&path, "f", buf, sizeof(buf)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_spawn_path_looks_in_each_entry_in_order),
	    cmocka_unit_test(test_spawn_path_empty_entry_is_the_current_folder),
	    cmocka_unit_test(test_spawn_path_skips_what_does_not_fit),
	    cmocka_unit_test(test_spawn_path_ends),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
