/* tests/unit/launcher/test-landlock.c: the executables allow list, in forked children (Landlock
 * needs no privilege, only no_new_privs). Skipped where the kernel has no Landlock. */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "launcher/launcher-internal.h"

#define EXIT_RESTRICT_FAILED 250
#define EXIT_EXEC_FAILED 200 /* + errno */

static char dir[64];

/* Forks, restricts execution to paths, then execs argv[0]. Returns the child's exit status. */
static int run_restricted(char *const *paths, size_t n, char *const *argv)
{
	pid_t pid;
	int status;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct al_error err = {0};

		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
			_exit(EXIT_RESTRICT_FAILED);
		if (launcher_landlock_restrict_exec(paths, n, &err) < 0) {
			fprintf(stderr, "# %s\n", err.msg);
			_exit(EXIT_RESTRICT_FAILED);
		}
		execv(argv[0], argv);
		_exit(EXIT_EXEC_FAILED + errno);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static void write_script(const char *name, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	(void)snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "we");
	assert_non_null(f);
	assert_true(fputs(text, f) >= 0);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(path, 0755), 0);
}

static int setup(void **state)
{
	int abi = launcher_landlock_abi();

	(void)state;
	if (abi < 0) {
		fprintf(stderr, "# Landlock unavailable: %s\n", strerror(-abi));
		return 0;
	}
	(void)snprintf(dir, sizeof(dir), "/tmp/airlock-test-landlock.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	if (!dir[0])
		return 0;
	(void)snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void require_landlock(void)
{
	if (launcher_landlock_abi() < 1)
		skip();
}

static void test_abi_is_at_least_one_or_an_errno(void **state)
{
	int abi = launcher_landlock_abi();

	(void)state;
	assert_true(abi >= 1 || abi == -ENOSYS || abi == -EOPNOTSUPP);
}

static void test_listed_dynamic_program_runs(void **state)
{
	char true_path[PATH_MAX];
	char *paths[] = {true_path};
	char *argv[] = {true_path, NULL};

	(void)state;
	require_landlock();
	assert_non_null(realpath("/bin/true", true_path));
	/* ld.so is not listed: it is found in the program's PT_INTERP */
	assert_int_equal(run_restricted(paths, 1, argv), 0);
}

static void test_unlisted_program_is_refused_with_eacces(void **state)
{
	char true_path[PATH_MAX];
	char *paths[] = {true_path};
	char *argv[] = {"/bin/sh", "-c", "exit 0", NULL};

	(void)state;
	require_landlock();
	assert_non_null(realpath("/bin/true", true_path));
	assert_int_equal(run_restricted(paths, 1, argv), EXIT_EXEC_FAILED + EACCES);
}

static void test_listed_symlink_allows_its_target(void **state)
{
	char *paths[] = {"/bin/true"}; /* /bin is a symlink to usr/bin on merged-/usr systems */
	char true_path[PATH_MAX];
	char *argv[] = {true_path, NULL};

	(void)state;
	require_landlock();
	assert_non_null(realpath("/bin/true", true_path));
	assert_int_equal(run_restricted(paths, 1, argv), 0);
}

static void test_script_runs_with_its_interpreter_chain(void **state)
{
	char outer[PATH_MAX], inner_line[PATH_MAX + 16];
	char *paths[] = {outer};
	char *argv[] = {outer, NULL};

	(void)state;
	require_landlock();
	/* outer's interpreter is inner, a script whose interpreter is /bin/sh, an ELF program
	 * whose interpreter is ld.so: all four must be granted from the one listed file */
	write_script("inner", "#!/bin/sh\nexit 7\n");
	(void)snprintf(inner_line, sizeof(inner_line), "#! %s/inner -x\n", dir);
	write_script("outer", inner_line);
	(void)snprintf(outer, sizeof(outer), "%s/outer", dir);
	assert_int_equal(run_restricted(paths, 1, argv), 7);
}

static void test_env_shebang_does_not_grant_the_program_env_looks_up(void **state)
{
	char script[PATH_MAX];
	char *paths[] = {script};
	char *argv[] = {script, NULL};

	(void)state;
	require_landlock();
	/* env is granted (it is the interpreter), but what it runs from PATH is not guessed */
	write_script("via-env", "#!/usr/bin/env sh\nexit 0\n");
	(void)snprintf(script, sizeof(script), "%s/via-env", dir);
	assert_int_equal(run_restricted(paths, 1, argv), 126);
}

static void test_missing_listed_path_is_an_error_naming_it(void **state)
{
	char missing[PATH_MAX];
	char *paths[] = {"/bin/sh", missing};
	struct al_error err = {0};
	pid_t pid;
	int status, fds[2];

	(void)state;
	require_landlock();
	(void)snprintf(missing, sizeof(missing), "%s/no-such-program", dir);
	assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int r;

		(void)prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
		r = launcher_landlock_restrict_exec(paths, 2, &err);
		if (write(fds[1], &err, sizeof(err)) != sizeof(err))
			_exit(2);
		_exit(r == -ENOENT ? 0 : 1);
	}
	(void)close(fds[1]);
	assert_int_equal(read(fds[0], &err, sizeof(err)), sizeof(err));
	(void)close(fds[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(err.code, -ENOENT);
	/* the caller prefixes the policy field ("executables: ") */
	assert_true(startswith(err.msg, missing));
}

static void test_empty_list_restricts_nothing(void **state)
{
	char *argv[] = {"/bin/sh", "-c", "exit 3", NULL};

	(void)state;
	require_landlock();
	assert_int_equal(run_restricted(NULL, 0, argv), 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_abi_is_at_least_one_or_an_errno),
	    cmocka_unit_test(test_listed_dynamic_program_runs),
	    cmocka_unit_test(test_unlisted_program_is_refused_with_eacces),
	    cmocka_unit_test(test_listed_symlink_allows_its_target),
	    cmocka_unit_test(test_script_runs_with_its_interpreter_chain),
	    cmocka_unit_test(test_env_shebang_does_not_grant_the_program_env_looks_up),
	    cmocka_unit_test(test_missing_listed_path_is_an_error_naming_it),
	    cmocka_unit_test(test_empty_list_restricts_nothing),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
