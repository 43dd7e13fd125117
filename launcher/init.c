#define LOG_MODULE "launcher"

/* The sandbox's pid 1. It runs airlock's code (it is the cloned child, no exec) under the same
 * seccomp filter, landlock domain and capability set as the command, and does only this: reap,
 * forward signals, terminate on request, report the command's end. When it exits, the kernel
 * kills every process left in the pid namespace. */

#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/fd-util.h"
#include "launcher/launcher-internal.h"

static bool is_forwarded(int sig)
{
	switch (sig) {
	case SIGINT:
	case SIGTERM:
	case SIGHUP:
	case SIGQUIT:
	case SIGUSR1:
	case SIGUSR2:
	case SIGWINCH:
	case SIGCONT:
		return true;
	default:
		return false;
	}
}

/* Reaps every exited child. Returns true once the command itself has been reaped, with its
 * status in *status. */
static bool reap(pid_t cmd, int *status)
{
	bool done = false;

	for (;;) {
		int st;
		pid_t p = waitpid(-1, &st, WNOHANG);

		if (p <= 0)
			return done;
		if (p == cmd) {
			*status = st;
			done = true;
		}
	}
}

_noreturn_ static void report_and_exit(int sync_fd, int status)
{
	struct launcher_sync_msg m = {.type = LAUNCHER_SYNC_STATUS};

	if (WIFSIGNALED(status)) {
		m.signal = WTERMSIG(status);
		m.value = 128 + m.signal;
	} else {
		m.value = WEXITSTATUS(status);
	}
	/* Whatever the command left running ends with it, before airlock hears the status. */
	(void)kill(-1, SIGKILL);
	(void)launcher_sync_send(sync_fd, &m, -EBADF);
	_exit(0);
}

_noreturn_ void launcher_init_main(int sync_fd, int sigfd, pid_t cmd)
{
	struct pollfd pfd[2] = {
	    {.fd = sigfd, .events = POLLIN},
	    {.fd = sync_fd, .events = POLLIN},
	};
	int status = 0;

	for (;;) {
		struct signalfd_siginfo si;
		struct launcher_sync_msg m;

		if (poll(pfd, ELEMENTSOF(pfd), -1) < 0) {
			if (errno == EINTR)
				continue;
			_exit(LAUNCHER_EXIT_FAILED);
		}
		if (pfd[0].revents & POLLIN) {
			if (read(sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
				if (si.ssi_signo == SIGCHLD) {
					if (reap(cmd, &status))
						report_and_exit(sync_fd, status);
				} else if (is_forwarded((int)si.ssi_signo)) {
					(void)kill(cmd, (int)si.ssi_signo);
				}
			}
		}
		if (pfd[1].revents & (POLLIN | POLLHUP | POLLERR)) {
			int r = launcher_sync_recv(sync_fd, &m, NULL);

			if (r == -EPIPE)
				_exit(LAUNCHER_EXIT_FAILED); /* airlock is gone: end the sandbox */
			if (r >= 0 && m.type == LAUNCHER_SYNC_TERMINATE)
				(void)kill(-1, SIGTERM);
		}
	}
}
