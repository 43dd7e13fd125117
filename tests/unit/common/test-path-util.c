/* common/path-util.c: which host paths a sandbox may be given, and where airlock's state is. */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/macro.h"
#include "common/path-util.h"

static char root[64]; /* a folder of this test's own, with a fake home folder inside */

static void mkdirs(const char *rel)
{
	char p[512];

	assert_true((size_t)snprintf(p, sizeof(p), "%s/%s", root, rel) < sizeof(p));
	assert_int_equal(al_mkdir_p(p, 0700), 0);
}

/* al_path_resolve_exposable() of root/rel: its return code, the message in err. */
static int expose(const char *rel, bool writable, struct al_error *err)
{
	_cleanup_free_ char *canonical = NULL;
	char p[512];

	assert_true((size_t)snprintf(p, sizeof(p), "%s/%s", root, rel) < sizeof(p));
	*err = (struct al_error){0};
	return al_path_resolve_exposable(p, writable, "mounts[0].source", &canonical, err);
}

static int setup(void **state)
{
	char p[512];

	(void)state;
	(void)snprintf(root, sizeof(root), "/tmp/test-path-util.XXXXXX");
	if (!mkdtemp(root))
		return -1;
	(void)snprintf(p, sizeof(p), "%s/home", root);
	(void)setenv("HOME", p, 1);
	(void)snprintf(p, sizeof(p), "%s/tmp", root);
	(void)setenv("TMPDIR", p, 1);
	(void)unsetenv("XDG_STATE_HOME");
	(void)unsetenv("XDG_DATA_HOME");
	(void)unsetenv("XDG_RUNTIME_DIR");
	(void)unsetenv("AIRLOCK_BROKER");
	(void)unsetenv("AIRLOCK_VAULT");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	al_path_remove_tree(root);
	return 0;
}

static void test_state_dirs_follow_the_xdg_variables_then_the_home_folder(void **state)
{
	char buf[512], want[512];

	(void)state;
	if (geteuid() == 0) {
		assert_int_equal(al_state_dir(AL_STATE_SESSIONS, buf, sizeof(buf)), 0);
		assert_string_equal(buf, "/var/lib/airlock/sessions");
		assert_int_equal(al_state_dir(AL_STATE_CACHE, buf, sizeof(buf)), 0);
		assert_string_equal(buf, "/var/cache/airlock");
		return;
	}
	assert_int_equal(al_state_dir(AL_STATE_SESSIONS, buf, sizeof(buf)), 0);
	(void)snprintf(want, sizeof(want), "%s/home/.local/state/airlock/sessions", root);
	assert_string_equal(buf, want);
	(void)setenv("XDG_DATA_HOME", "/xdg/data", 1);
	assert_int_equal(al_state_dir(AL_STATE_DATA, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/xdg/data/airlock");
	(void)setenv("XDG_DATA_HOME", "relative", 1);
	assert_int_equal(al_state_dir(AL_STATE_DATA, buf, sizeof(buf)), 0);
	(void)snprintf(want, sizeof(want), "%s/home/.local/share/airlock", root);
	assert_string_equal(buf, want);
	(void)unsetenv("XDG_DATA_HOME");
	assert_int_equal(al_state_dir(AL_STATE_RUNTIME, buf, sizeof(buf)), -ENOENT);
	assert_int_equal(al_state_dir(AL_STATE_CACHE, buf, sizeof(buf)), -ENOENT);
}

static void test_binds_refused_even_read_only_when_they_reach_a_session_socket(void **state)
{
	struct al_error err;

	(void)state;
	mkdirs("home/.local/state/airlock/sessions/s-1");
	mkdirs("home/docs");
	/* The user's sessions (for root too: a sudo'd airlock protects the caller's folders). */
	assert_int_equal(expose("home", false, &err), -EPERM);
	assert_non_null(strstr(err.msg, "airlock's own state"));
	assert_non_null(strstr(err.msg, "mounts[0].source"));
	assert_int_equal(expose("home/.local/state", false, &err), -EPERM);
	assert_int_equal(expose("home/.local/state/airlock/sessions", false, &err), -EPERM);
	assert_int_equal(expose("home/.local/state/airlock/sessions/s-1", false, &err), -EPERM);
	assert_int_equal(expose("home/docs", false, &err), 0);
	assert_int_equal(expose("home/.local", true, &err), -EPERM);
}

static void test_binds_refused_when_they_reach_the_vault_or_the_runtime_folder(void **state)
{
	struct al_error err;
	char p[512];

	(void)state;
	mkdirs("home/.local/share/airlock");
	mkdirs("run/airlock/inner");
	mkdirs("xdgdata");
	assert_int_equal(expose("home/.local/share", false, &err), -EPERM);
	(void)snprintf(p, sizeof(p), "%s/xdgdata", root);
	(void)setenv("XDG_DATA_HOME", p, 1);
	assert_int_equal(expose("xdgdata", false, &err), -EPERM);
	(void)unsetenv("XDG_DATA_HOME");
	assert_int_equal(expose("xdgdata", false, &err), 0);
	(void)snprintf(p, sizeof(p), "%s/run", root);
	(void)setenv("XDG_RUNTIME_DIR", p, 1);
	assert_int_equal(expose("run", false, &err), -EPERM);
	assert_int_equal(expose("run/airlock/inner", false, &err), -EPERM);
	(void)unsetenv("XDG_RUNTIME_DIR");
}

static void test_exec_scratch_may_hold_binds_but_not_be_bound(void **state)
{
	struct al_error err;
	char p[512];

	(void)state;
	(void)snprintf(p, sizeof(p), "tmp/airlock-exec-%u/123-abc", (unsigned)geteuid());
	mkdirs(p);
	assert_int_equal(expose(p, true, &err), 0);
	assert_int_equal(expose("tmp", false, &err), -EPERM);
	(void)snprintf(p, sizeof(p), "tmp/airlock-exec-%u", (unsigned)geteuid());
	assert_int_equal(expose(p, false, &err), -EPERM);
}

static void test_broker_socket_folder_may_not_be_bound_nor_held(void **state)
{
	struct al_error err;
	char p[512];

	(void)state;
	mkdirs("sockets/inner");
	(void)snprintf(p, sizeof(p), "%s/sockets/broker.sock", root);
	(void)setenv("AIRLOCK_BROKER", p, 1);
	assert_int_equal(expose("sockets", false, &err), -EPERM);
	assert_int_equal(expose("sockets/inner", false, &err), 0);
	(void)unsetenv("AIRLOCK_BROKER");
}

static void test_state_below_a_symlinked_home_is_found_by_its_real_path(void **state)
{
	struct al_error err;
	char p[512], link[512];

	(void)state;
	mkdirs("realhome/projects");
	(void)snprintf(p, sizeof(p), "%s/realhome", root);
	(void)snprintf(link, sizeof(link), "%s/linkhome", root);
	assert_int_equal(symlink(p, link), 0);
	(void)setenv("HOME", link, 1);
	/* The state folder does not exist yet: a later session would make it there. */
	assert_int_equal(expose("realhome", false, &err), -EPERM);
	assert_int_equal(expose("realhome/projects", false, &err), 0);
	(void)snprintf(p, sizeof(p), "%s/home", root);
	(void)setenv("HOME", p, 1);
}

static void test_image_check_refuses_a_root_holding_state(void **state)
{
	struct al_error err = {0};

	(void)state;
	assert_int_equal(al_path_check_state("/", "image", &err), -EPERM);
	assert_non_null(strstr(err.msg, "image"));
	assert_int_equal(al_path_check_state("/usr", "image", &err), 0);
}

/* Makes a folder of uid 65534's (when this test runs as root; else its own), lets prepare (may
 * be NULL) fill it as this test's user, then runs fn in a child as that uid; fails the test when
 * the child does. */
static void as_nobody(void (*prepare)(const char *dir), void (*fn)(const char *dir))
{
	char dir[64];
	int status;
	pid_t pid;

	(void)snprintf(dir, sizeof(dir), "/tmp/test-path-util-rm.XXXXXX");
	assert_non_null(mkdtemp(dir));
	if (geteuid() == 0)
		assert_int_equal(chown(dir, 65534, 65534), 0);
	if (prepare)
		prepare(dir);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (geteuid() == 0 &&
		    (setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0))
			_exit(3);
		fn(dir);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	al_path_remove_tree(dir);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void make_file(const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f || fclose(f) != 0)
		_exit(4);
}

#define CHILD_CHECK(expr)                                                                          \
	do {                                                                                       \
		if (!(expr))                                                                       \
			_exit(10 + __LINE__ % 200);                                                \
	} while (0)

/* A sandbox's chmod 0500 (no writing), 000 (no reading) and 0100 (no listing) on folders of
 * its workspace, and the workspace itself 0500: all goes, and a link out is not followed. */
static void remove_unwritable(const char *dir)
{
	static const char *const folders[] = {"ws", "ws/a", "ws/b", "ws/b/c"};
	static const struct {
		const char *path;
		mode_t mode;
	} modes[] = {{"ws/b/c", 0100}, {"ws/b", 0}, {"ws/a", 0500}, {"ws", 0500}};
	struct stat st;

	CHILD_CHECK(chdir(dir) == 0);
	make_file("canary");
	for (size_t i = 0; i < ELEMENTSOF(folders); i++)
		CHILD_CHECK(mkdir(folders[i], 0700) == 0);
	make_file("ws/a/x");
	make_file("ws/b/c/y");
	CHILD_CHECK(symlink("../../canary", "ws/a/out") == 0);
	for (size_t i = 0; i < ELEMENTSOF(modes); i++)
		CHILD_CHECK(chmod(modes[i].path, modes[i].mode) == 0);
	al_path_remove_tree("ws");
	CHILD_CHECK(lstat("ws", &st) < 0 && errno == ENOENT);
	CHILD_CHECK(stat("canary", &st) == 0);
}

static void test_remove_tree_takes_folders_its_user_may_not_write_or_read(void **state)
{
	(void)state;
	as_nobody(NULL, remove_unwritable);
}

/* A folder of another user's in the tree, holding a file: it stays, everything else goes, and
 * the walk ends. */
static void remove_around_foreign(const char *dir)
{
	struct stat st;

	CHILD_CHECK(chdir(dir) == 0);
	CHILD_CHECK(stat("ws/deep/foreign/f", &st) == 0);
	al_path_remove_tree("ws");
	CHILD_CHECK(stat("ws/deep/foreign/f", &st) == 0);
	CHILD_CHECK(lstat("ws/deep/mine", &st) < 0 && errno == ENOENT);
	CHILD_CHECK(lstat("ws/other", &st) < 0 && errno == ENOENT);
}

/* Root's part: folders of 65534's, and in them one of root's holding a file. */
static void make_foreign(const char *dir)
{
	const char *mine[] = {"ws", "ws/deep", "ws/deep/mine", "ws/other", "ws/other/sub"};
	char p[512];

	for (size_t i = 0; i < ELEMENTSOF(mine); i++) {
		(void)snprintf(p, sizeof(p), "%s/%s", dir, mine[i]);
		assert_int_equal(mkdir(p, 0700), 0);
		assert_int_equal(chown(p, 65534, 65534), 0);
	}
	(void)snprintf(p, sizeof(p), "%s/ws/deep/foreign", dir);
	assert_int_equal(mkdir(p, 0755), 0);
	(void)snprintf(p, sizeof(p), "%s/ws/deep/foreign/f", dir);
	make_file(p);
}

static void test_remove_tree_passes_over_what_it_cannot_remove_and_ends(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip(); /* a folder of another user's takes root to make */
	as_nobody(make_foreign, remove_around_foreign);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_state_dirs_follow_the_xdg_variables_then_the_home_folder),
	    cmocka_unit_test(test_binds_refused_even_read_only_when_they_reach_a_session_socket),
	    cmocka_unit_test(test_binds_refused_when_they_reach_the_vault_or_the_runtime_folder),
	    cmocka_unit_test(test_exec_scratch_may_hold_binds_but_not_be_bound),
	    cmocka_unit_test(test_broker_socket_folder_may_not_be_bound_nor_held),
	    cmocka_unit_test(test_state_below_a_symlinked_home_is_found_by_its_real_path),
	    cmocka_unit_test(test_image_check_refuses_a_root_holding_state),
	    cmocka_unit_test(test_remove_tree_takes_folders_its_user_may_not_write_or_read),
	    cmocka_unit_test(test_remove_tree_passes_over_what_it_cannot_remove_and_ends),
	};

	return cmocka_run_group_tests_name("path-util", tests, setup, teardown);
}
