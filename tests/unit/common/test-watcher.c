/* common/watcher.c: a watcher does its work once its parent is dead, with none of its files, and
 * never once it was stopped. */

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/fd-util.h"
#include "common/macro.h"
#include "common/watcher.h"

/* Reads what the pipe gets until every writer closed it. */
static size_t read_all(int fd, char *buf, size_t size)
{
	size_t n = 0;
	ssize_t k;

	while (n < size && (k = read(fd, buf + n, size - n)) > 0)
		n += (size_t)k;
	return n;
}

/* The parent (a child of the test's): forks a watcher that reports into out, then, when stop,
 * stops it; writes 'P' and dies. The watcher writes 'W' once the parent is dead, if it holds
 * none of the parent's files but out (stray, an inherited fd, is closed) and leads a session of
 * its own; else 'X'. */
_noreturn_ static void parent(int out, int stray, bool stop)
{
	pid_t pid;
	int keep[] = {out};
	int r = al_watcher_fork("test-watcher", keep, 1, &pid);

	if (r < 0)
		_exit(2);
	if (r == 0) {
		bool alone = fcntl(stray, F_GETFD) < 0 && errno == EBADF && getsid(0) == getpid() &&
			     fcntl(out, F_GETFD) >= 0;

		_exit(write(out, alone ? "W" : "X", 1) == 1 ? 0 : 4);
	}
	if (stop) {
		al_watcher_stop(&pid);
		if (pid != 0)
			_exit(3);
	}
	_exit(write(out, "P", 1) == 1 ? 0 : 4);
}

static void run(bool stop, char *got, size_t size)
{
	int p[2], stray, status;
	pid_t pid;
	size_t n;

	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	stray = open("/dev/null", O_RDONLY); /* no O_CLOEXEC: every child gets it */
	assert_true(stray >= 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		(void)close(p[0]);
		parent(p[1], stray, stop);
	}
	(void)close(p[1]);
	(void)close(stray);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* EOF once the watcher ended too */
	n = read_all(p[0], got, size - 1);
	got[n] = '\0';
	(void)close(p[0]);
}

static void test_a_watcher_works_once_its_parent_is_dead(void **state)
{
	char got[8];

	(void)state;
	run(false, got, sizeof(got));
	/* 'P' first: the watcher waited for the parent's end */
	assert_string_equal(got, "PW");
}

static void test_a_stopped_watcher_does_nothing(void **state)
{
	char got[8];

	(void)state;
	run(true, got, sizeof(got));
	assert_string_equal(got, "P");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_a_watcher_works_once_its_parent_is_dead),
	    cmocka_unit_test(test_a_stopped_watcher_does_nothing),
	};

	return cmocka_run_group_tests_name("watcher", tests, NULL, NULL);
}
