/* common/socket-util.c: telling whether a socket's peer is in this process's pid namespace. */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/fd-util.h"
#include "common/macro.h"
#include "common/socket-util.h"

static void test_fdinfo_depth_counts_the_nspid_fields(void **state)
{
	(void)state;
	assert_int_equal(al_fdinfo_pid_depth("pos:\t0\nflags:\t02000002\nmnt_id:\t4\nino:\t1\n"
					     "Pid:\t5836\nNSpid:\t5836\n"),
			 1);
	assert_int_equal(al_fdinfo_pid_depth("Pid:\t5884\nNSpid:\t5884\t1\n"), 2);
	assert_int_equal(al_fdinfo_pid_depth("NSpid:\t10\t7\t1\n"), 3);
}

static void test_fdinfo_depth_refuses_exited_foreign_and_missing(void **state)
{
	(void)state;
	/* Not in /proc's namespace tree at all (a sibling or parent namespace's process). */
	assert_int_equal(al_fdinfo_pid_depth("Pid:\t0\nNSpid:\t0\n"), 0);
	assert_int_equal(al_fdinfo_pid_depth("Pid:\t-1\nNSpid:\t-1\n"), -ESRCH);
	assert_int_equal(al_fdinfo_pid_depth("Pid:\t12\n"), -EOPNOTSUPP);
	assert_int_equal(al_fdinfo_pid_depth("NSpid:\tx\n"), -EBADMSG);
	assert_int_equal(al_fdinfo_pid_depth("NSpid:\t12\t0\n"), -EBADMSG);
	/* "NSpid" must begin a line. */
	assert_int_equal(al_fdinfo_pid_depth("xNSpid:\t12\n"), -EOPNOTSUPP);
}

static void test_a_socket_pair_of_this_process_is_in_its_pid_namespace(void **state)
{
	_cleanup_close_ int a = -EBADF, b = -EBADF;
	int pair[2], r;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
	a = pair[0];
	b = pair[1];
	r = al_socket_peer_in_my_pidns(a);
	if (r == -EOPNOTSUPP)
		skip(); /* Linux < 6.5, or /proc of another namespace */
	assert_int_equal(r, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fdinfo_depth_counts_the_nspid_fields),
	    cmocka_unit_test(test_fdinfo_depth_refuses_exited_foreign_and_missing),
	    cmocka_unit_test(test_a_socket_pair_of_this_process_is_in_its_pid_namespace),
	};

	return cmocka_run_group_tests_name("socket-util", tests, NULL, NULL);
}
