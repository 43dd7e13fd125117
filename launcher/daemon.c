#define LOG_MODULE "launcher"

/* airlock's helper processes (the workspace filesystem, the egress proxy): forked with a pidfd,
 * killed with airlock (PDEATHSIG), watched while the sandbox runs, and reaped at the end. */

#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/fd-util.h"
#include "common/log.h"
#include "launcher/launcher-internal.h"

void launcher_daemon_init(struct launcher_daemon *d)
{
	*d = (struct launcher_daemon){.pidfd = -EBADF};
}

int launcher_daemon_start(struct launcher_daemon *d, launcher_daemon_fn fn, void *userdata)
{
	struct clone_args args = {.flags = CLONE_PIDFD, .exit_signal = SIGCHLD};
	pid_t parent = getpid();
	int pidfd = -EBADF, fd;
	sigset_t none;
	long pid;

	if (d->pid > 0)
		return -EALREADY;
	args.pidfd = (uint64_t)(uintptr_t)&pidfd;
	pid = syscall(SYS_clone3, &args, sizeof(args));
	if (pid < 0)
		return -errno;
	if (pid > 0) {
		d->pid = (pid_t)pid;
		d->pidfd = pidfd;
		return 0;
	}
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != parent)
		_exit(EXIT_FAILURE);
	/* It may hold secrets (credential files, swapped values). */
	(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	/* A memory bomb in the sandbox must not make the OOM killer pick it. */
	(void)al_write_file_at(AT_FDCWD, "/proc/self/oom_score_adj", "-1000");
	fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		(void)dup2(fd, STDIN_FILENO);
		(void)dup2(fd, STDOUT_FILENO);
		if (fd > STDERR_FILENO)
			(void)al_close(fd);
	}
	(void)sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
	fn(userdata);
}

int launcher_daemon_pidfd(const struct launcher_daemon *d)
{
	return d && d->pid > 0 && !d->reaped ? d->pidfd : -EBADF;
}

bool launcher_daemon_reap(struct launcher_daemon *d)
{
	siginfo_t si = {0};

	if (d->pid <= 0 || d->reaped)
		return d->reaped;
	if (waitid(P_PIDFD, (id_t)d->pidfd, &si, WEXITED | WNOHANG) < 0 || si.si_pid == 0)
		return false;
	d->reaped = true;
	d->status = si.si_code == CLD_EXITED ? W_EXITCODE(si.si_status, 0) : si.si_status;
	return true;
}

void launcher_daemon_stop(struct launcher_daemon *d, int grace_msec)
{
	struct pollfd pfd;

	if (d->pid <= 0 || d->reaped)
		return;
	pfd = (struct pollfd){.fd = d->pidfd, .events = POLLIN};
	while (poll(&pfd, 1, grace_msec) < 0 && errno == EINTR)
		;
	if (!launcher_daemon_reap(d))
		launcher_daemon_kill(d);
}

void launcher_daemon_send_kill(struct launcher_daemon *d)
{
	if (d && d->pid > 0 && !d->reaped)
		(void)syscall(SYS_pidfd_send_signal, d->pidfd, SIGKILL, NULL, 0);
}

void launcher_daemon_kill(struct launcher_daemon *d)
{
	if (d->pid > 0 && !d->reaped) {
		(void)syscall(SYS_pidfd_send_signal, d->pidfd, SIGKILL, NULL, 0);
		(void)waitid(P_PIDFD, (id_t)d->pidfd, &(siginfo_t){0}, WEXITED);
		d->reaped = true;
		d->status = SIGKILL;
	}
	d->pidfd = al_close(d->pidfd);
}
