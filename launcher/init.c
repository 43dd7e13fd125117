#define LOG_MODULE "launcher"

/* The sandbox's pid 1. It runs airlock's code (it is the cloned child, no exec) under the same
 * seccomp filter, landlock domain and capability set as the command, and does only this: reap,
 * forward signals, terminate on request, report the command's end. When it exits, the kernel
 * kills every process left in the pid namespace. */

#include <fcntl.h>
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

/* The result file, for airlock to read: opened here, in the sandbox's view and with its rights,
 * never following a link; anything but a regular file is airlock's to refuse. */
static int open_result(const struct launcher_context *ctx)
{
	const char *path = ctx->opts->result_path;
	int fd;

	if (!path)
		return -EBADF;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

void launcher_init_send_status(int sync_fd, uint32_t id, int status, uint32_t flags, int fd)
{
	struct launcher_sync_msg m = {.type = LAUNCHER_SYNC_STATUS, .id = id, .flags = flags};

	if (WIFSIGNALED(status)) {
		m.signal = WTERMSIG(status);
		m.value = 128 + m.signal;
	} else {
		m.value = WEXITSTATUS(status);
	}
	(void)launcher_sync_send(sync_fd, &m, fd);
}

void launcher_init_send_exec_failure(int sync_fd, uint32_t id, int r, const struct al_error *err,
				     uint32_t flags)
{
	struct launcher_sync_msg m = {.type = LAUNCHER_SYNC_EXEC_FAILED, .value = r, .id = id};

	if (err)
		m.err = *err;
	(void)launcher_sync_send(sync_fd, &m, -EBADF);
	m = (struct launcher_sync_msg){
	    .type = LAUNCHER_SYNC_STATUS,
	    .value = r == -ENOENT ? LAUNCHER_EXIT_NOTFOUND : LAUNCHER_EXIT_NOEXEC,
	    .id = id,
	    .flags = flags,
	};
	(void)launcher_sync_send(sync_fd, &m, -EBADF);
}

_noreturn_ static void report_and_exit(const struct launcher_context *ctx, int sync_fd, int status,
				       uint32_t flags)
{
	_cleanup_close_ int fd = flags ? -EBADF : open_result(ctx);

	/* Whatever the command left running ends with it, before airlock hears the status. */
	(void)kill(-1, SIGKILL);
	launcher_init_send_status(sync_fd, 0, status, flags, fd);
	_exit(0);
}

_noreturn_ static void report_exec_failure(int sync_fd, int r, uint32_t flags)
{
	launcher_init_send_exec_failure(sync_fd, 0, r, NULL, flags);
	_exit(0);
}

/* pid 1 keeps no stdio once the command runs: its output must reach EOF when it is done. */
static void drop_stdio(void)
{
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return;
	(void)dup2(fd, STDIN_FILENO);
	(void)dup2(fd, STDOUT_FILENO);
	(void)dup2(fd, STDERR_FILENO);
	if (fd > STDERR_FILENO)
		(void)al_close(fd);
}

/* The prelude ended with status: the command starts if it succeeded. Returns the command's pid. */
static pid_t after_prelude(const struct launcher_context *ctx, int sync_fd, int status,
			   const char *tty)
{
	pid_t cmd;
	int r;

	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		report_and_exit(ctx, sync_fd, status, LAUNCHER_STATUS_PRELUDE);
	r = launcher_sandbox_spawn(ctx, &(struct launcher_spawn){.argv = ctx->argv, .tty = tty},
				   &cmd);
	if (r < 0)
		report_exec_failure(sync_fd, r, 0);
	drop_stdio();
	return cmd;
}

_noreturn_ void launcher_init_main(const struct launcher_context *ctx, int sync_fd, int sigfd,
				   pid_t cmd, const char *tty)
{
	struct pollfd pfd[2] = {
	    {.fd = sigfd, .events = POLLIN},
	    {.fd = sync_fd, .events = POLLIN},
	};
	bool in_prelude = ctx->opts->prelude;
	int status = 0;

	if (ctx->opts->session) {
		drop_stdio();
		launcher_init_session_main(ctx, sync_fd, sigfd);
	}
	if (cmd < 0)
		report_exec_failure(sync_fd, cmd, in_prelude ? LAUNCHER_STATUS_PRELUDE : 0);
	if (!in_prelude)
		drop_stdio();
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
				if (si.ssi_signo == SIGCHLD && reap(cmd, &status)) {
					if (!in_prelude)
						report_and_exit(ctx, sync_fd, status, 0);
					in_prelude = false;
					cmd = after_prelude(ctx, sync_fd, status, tty);
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
