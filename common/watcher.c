/* Watchers (see watcher.h). A watcher waits on a pidfd of its parent rather than on a pipe: a
 * child the parent forks later would inherit a pipe's end and keep the watcher waiting. */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/fd-util.h"
#include "common/macro.h"
#include "common/watcher.h"

#define KEEP_MAX 8

/* The child's side: detaches, then waits for the parent's end. */
static int watch(const char *name, int parent, const int *keep, size_t n_keep)
{
	struct pollfd pfd = {.fd = parent, .events = POLLIN};
	int fds[3 + KEEP_MAX + 1], null;
	size_t n = 0;
	sigset_t none;

	(void)prctl(PR_SET_NAME, name, 0, 0, 0);
	(void)setsid();
	/* Out of the parent's working folder, which it would keep from being unmounted. */
	if (chdir("/") < 0)
		_exit(EXIT_FAILURE);
	(void)sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
	/* None of the parent's files: a caller reading its stdout, a socket it serves, a sandbox's
	 * pipes must see them close when the parent ends. */
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null < 0)
		_exit(EXIT_FAILURE);
	for (int i = STDIN_FILENO; i <= STDERR_FILENO; i++) {
		if (null != i && dup2(null, i) < 0)
			_exit(EXIT_FAILURE);
		fds[n++] = i;
	}
	for (size_t i = 0; i < n_keep; i++)
		fds[n++] = keep[i];
	fds[n++] = parent;
	if (al_close_all_except(fds, n) < 0)
		_exit(EXIT_FAILURE);
	while (poll(&pfd, 1, -1) < 0 && errno == EINTR)
		;
	return 0;
}

int al_watcher_fork(const char *name, int *keep, size_t n_keep, pid_t *ret)
{
	_cleanup_close_ int self = -EBADF;
	pid_t pid;

	if (n_keep > KEEP_MAX)
		return -E2BIG;
	self = (int)syscall(SYS_pidfd_open, getpid(), 0);
	if (self < 0)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0)
		return watch(name, self, keep, n_keep);
	*ret = pid;
	return 1;
}

void al_watcher_stop(pid_t *pid)
{
	if (*pid <= 0)
		return;
	(void)kill(*pid, SIGKILL);
	while (waitpid(*pid, NULL, 0) < 0 && errno == EINTR)
		;
	*pid = 0;
}
