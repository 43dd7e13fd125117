/* Landlock against the real kernel: a child restricted to /bin/true's real path runs it, and
 * exec of anything else fails with EACCES. */

#include <errno.h>
#include <limits.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "tests/integration/launcher/kctl-lib.h"

static int exec_errno(const char *path)
{
	pid_t pid = fork();

	CHECK(pid >= 0);
	if (pid == 0) {
		execl(path, path, "-c", "exit 0", (char *)NULL);
		_exit(errno);
	}
	return kctl_wait(pid);
}

int main(void)
{
	char true_path[PATH_MAX];
	char *paths[] = {true_path};
	struct al_error err = {0};
	pid_t pid;

	kctl_require_root();
	if (launcher_landlock_abi() < 1)
		kctl_skip("no Landlock in this kernel");
	CHECK(realpath("/bin/true", true_path));
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
			_exit(100);
		if (launcher_landlock_restrict_exec(paths, 1, &err) < 0) {
			fprintf(stderr, "%s\n", err.msg);
			_exit(101);
		}
		if (exec_errno(true_path) != 0)
			_exit(102);
		if (exec_errno("/bin/sh") != EACCES)
			_exit(103);
		/* root is no exception */
		if (exec_errno("/usr/bin/env") != EACCES)
			_exit(104);
		_exit(0);
	}
	CHECK_EQ(kctl_wait(pid), 0);
	/* and the restriction stayed in that child: here everything still runs */
	CHECK_EQ(exec_errno("/bin/sh"), 0);
	fprintf(stderr, "ok\n");
	return 0;
}
