/* policy-image.c: isolation[].image must be a root filesystem folder. Each test builds its own
 * small tree under a temporary folder, so nothing depends on the host's files. */

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy/policy-internal.h"
#include "tests/unit/policy/policy-test.h"

struct tree {
	char root[PATH_MAX];
};

static int tree_setup(void **state)
{
	struct tree *t = calloc(1, sizeof(*t));
	char tmpl[] = "/tmp/airlock-test-image-XXXXXX";

	if (!t)
		return -ENOMEM;
	/* Resolved, so that it compares equal to what policy_resolve_image() stores. */
	if (!mkdtemp(tmpl) || !realpath(tmpl, t->root)) {
		free(t);
		return -errno;
	}
	*state = t;
	return 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path) < 0 ? -errno : 0;
}

static int tree_teardown(void **state)
{
	struct tree *t = *state;
	int r;

	r = nftw(t->root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(t);
	return r;
}

/* Creates root/rel: a folder when rel ends in "/", a symlink when target is given, else a file
 * with the given mode. */
static void make(const struct tree *t, const char *rel, const char *target, mode_t mode)
{
	char path[PATH_MAX * 2];
	size_t l = strlen(rel);
	int fd;

	(void)snprintf(path, sizeof(path), "%s/%s", t->root, rel);
	if (rel[l - 1] == '/') {
		assert_int_equal(mkdir(path, 0755), 0);
	} else if (target) {
		assert_int_equal(symlink(target, path), 0);
	} else {
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
		assert_true(fd >= 0);
		assert_int_equal(fchmod(fd, mode), 0);
		assert_int_equal(close(fd), 0);
	}
}

static int resolve(const struct tree *t, const char *rel, char **ret, struct al_error *err)
{
	char path[PATH_MAX * 2];

	(void)snprintf(path, sizeof(path), "%s%s", t->root, rel);
	return policy_resolve_image(NULL, path, ret, err);
}

static void test_usrmerged_tree_with_absolute_sh_link_is_a_rootfs(void **state)
{
	struct tree *t = *state;
	_cleanup_free_ char *real = NULL;
	struct al_error err = {};

	make(t, "usr/", NULL, 0);
	make(t, "usr/bin/", NULL, 0);
	make(t, "usr/bin/dash", NULL, 0755);
	make(t, "usr/bin/sh", "/usr/bin/dash", 0); /* resolved inside the image */
	make(t, "bin", "usr/bin", 0);
	assert_int_equal(resolve(t, "", &real, &err), 0);
	assert_string_equal(real, t->root);
}

static void test_image_path_is_stored_resolved(void **state)
{
	struct tree *t = *state;
	_cleanup_(policy_freep) struct policy *p = NULL;
	char json[PATH_MAX * 2], want[PATH_MAX * 2];
	struct al_error err = {};

	make(t, "real/", NULL, 0);
	make(t, "real/bin/", NULL, 0);
	make(t, "real/bin/sh", NULL, 0755);
	make(t, "link", "real", 0);
	(void)snprintf(json, sizeof(json),
		       "{\"isolation\":[{\"type\":\"container\",\"image\":\"%s//link/\"}]}",
		       t->root);
	assert_int_equal(policy_load_string(json, &p, &err), 0);
	(void)snprintf(want, sizeof(want), "%s/real", t->root);
	assert_string_equal(p->image, want);
	assert_int_equal(p->isolation, POLICY_ISOLATION_CONTAINER);
}

static void test_folder_without_usr_or_bin_is_not_a_rootfs(void **state)
{
	struct tree *t = *state;
	char *real = NULL;
	struct al_error err = {};

	make(t, "etc/", NULL, 0);
	make(t, "sh", NULL, 0755);
	assert_int_equal(resolve(t, "", &real, &err), -EOPNOTSUPP);
	assert_non_null(strstr(err.msg, "is not a root filesystem folder: it has no usr/ or bin/"));
	assert_null(real);
}

static void test_rootfs_without_executable_sh_is_refused(void **state)
{
	struct tree *t = *state;
	char *real = NULL;
	struct al_error err = {};

	make(t, "bin/", NULL, 0);
	make(t, "bin/sh", NULL, 0644);
	assert_int_equal(resolve(t, "", &real, &err), -EOPNOTSUPP);
	assert_non_null(strstr(err.msg, "it has no executable bin/sh or usr/bin/sh"));
	assert_null(real);
}

static void test_sh_that_is_a_folder_is_refused(void **state)
{
	struct tree *t = *state;
	char *real = NULL;
	struct al_error err = {};

	make(t, "bin/", NULL, 0);
	make(t, "bin/sh/", NULL, 0);
	assert_int_equal(resolve(t, "", &real, &err), -EOPNOTSUPP);
	assert_null(real);
}

static void test_sh_link_leading_out_of_the_image_is_not_followed(void **state)
{
	struct tree *t = *state;
	char *real = NULL, target[PATH_MAX * 2];
	struct al_error err = {};

	/* A real executable outside the image, reached by an absolute and a relative link. */
	make(t, "outside/", NULL, 0);
	make(t, "outside/sh", NULL, 0755);
	make(t, "image/", NULL, 0);
	make(t, "image/bin/", NULL, 0);
	make(t, "image/usr/", NULL, 0);
	make(t, "image/usr/bin/", NULL, 0);
	(void)snprintf(target, sizeof(target), "%s/outside/sh", t->root);
	make(t, "image/bin/sh", target, 0);
	make(t, "image/usr/bin/sh", "../../../outside/sh", 0);
	assert_int_equal(resolve(t, "/image", &real, &err), -EOPNOTSUPP);
	assert_non_null(strstr(err.msg, "it has no executable bin/sh"));
	assert_null(real);
}

static void test_missing_image_is_not_a_rootfs(void **state)
{
	struct tree *t = *state;
	char *real = NULL;
	struct al_error err = {};

	assert_int_equal(resolve(t, "/missing", &real, &err), -EOPNOTSUPP);
	assert_non_null(strstr(err.msg, "is not a root filesystem folder: No such file"));
	assert_null(real);
}

static void test_file_is_not_a_rootfs(void **state)
{
	struct tree *t = *state;
	char *real = NULL;
	struct al_error err = {};

	make(t, "file", NULL, 0644);
	assert_int_equal(resolve(t, "/file", &real, &err), -EOPNOTSUPP);
	assert_non_null(strstr(err.msg, "is not a root filesystem folder: Not a directory"));
	assert_null(real);
}

static void test_image_resolving_to_a_path_with_a_control_character_is_refused(void **state)
{
	struct tree *t = *state;
	char *real = NULL;
	struct al_error err = {};

	/* The canonical form holds the resolved path, so it must be a path a policy may hold. */
	make(t, "odd\nname/", NULL, 0);
	make(t, "odd\nname/bin/", NULL, 0);
	make(t, "odd\nname/bin/sh", NULL, 0755);
	make(t, "image", "odd\nname", 0);
	assert_int_equal(resolve(t, "/image", &real, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "\\x0aname\" contains a control character"));
	assert_null(real);
}

static void test_relative_image_is_invalid(void **state)
{
	char *real = NULL;
	struct al_error err = {};

	(void)state;
	assert_int_equal(policy_resolve_image(NULL, "rootfs", &real, &err), -EINVAL);
	assert_string_equal(err.msg, "\"rootfs\" is not an absolute path");
	assert_null(real);
}

static void test_second_image_is_refused(void **state)
{
	struct tree *t = *state;
	struct policy *p = NULL;
	char json[PATH_MAX * 3];
	struct al_error err = {};

	make(t, "bin/", NULL, 0);
	make(t, "bin/sh", NULL, 0755);
	(void)snprintf(json, sizeof(json),
		       "{\"isolation\":[{\"type\":\"container\",\"image\":\"%s\"},"
		       "{\"type\":\"container\",\"image\":\"%s\"}]}",
		       t->root, t->root);
	assert_true(
	    test_error_matches(&err, policy_load_string(json, &p, &err), -EINVAL,
			       "isolation[1].image: only one container image may be given"));
	assert_null(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_usrmerged_tree_with_absolute_sh_link_is_a_rootfs,
					    tree_setup, tree_teardown),
	    cmocka_unit_test_setup_teardown(test_image_path_is_stored_resolved, tree_setup,
					    tree_teardown),
	    cmocka_unit_test_setup_teardown(test_folder_without_usr_or_bin_is_not_a_rootfs,
					    tree_setup, tree_teardown),
	    cmocka_unit_test_setup_teardown(test_rootfs_without_executable_sh_is_refused,
					    tree_setup, tree_teardown),
	    cmocka_unit_test_setup_teardown(test_sh_that_is_a_folder_is_refused, tree_setup,
					    tree_teardown),
	    cmocka_unit_test_setup_teardown(test_sh_link_leading_out_of_the_image_is_not_followed,
					    tree_setup, tree_teardown),
	    cmocka_unit_test_setup_teardown(test_missing_image_is_not_a_rootfs, tree_setup,
					    tree_teardown),
	    cmocka_unit_test_setup_teardown(test_file_is_not_a_rootfs, tree_setup, tree_teardown),
	    cmocka_unit_test_setup_teardown(
		test_image_resolving_to_a_path_with_a_control_character_is_refused, tree_setup,
		tree_teardown),
	    cmocka_unit_test(test_relative_image_is_invalid),
	    cmocka_unit_test_setup_teardown(test_second_image_is_refused, tree_setup,
					    tree_teardown),
	};

	return cmocka_run_group_tests_name("policy-image", tests, NULL, NULL);
}
