#define LOG_MODULE "launcher"

/* The workspace daemon: a process of airlock's that serves the sandbox's FUSE workspace. The
 * sandbox child makes the mount in its own namespace and hands the connection over; this side
 * forks the daemon to serve it, watches it (if it dies, the sandbox is killed and the run fails),
 * collects its violation reports, and reaps it once the sandbox's mount namespace is gone. */

#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "broker/client.h"
#include "common/audit.h"
#include "common/fd-util.h"
#include "common/log.h"
#include "fusefs/fusefs.h"
#include "launcher/launcher-internal.h"

#define STOP_GRACE_MSEC 2000 /* for the daemon to see its connection end */

struct launcher_workspace {
	struct broker_client *broker;
	struct fusefs *fs;
	struct al_audit *audit; /* borrowed */
	int violations[2];	/* [0] airlock reads, [1] the daemon writes */
	pid_t pid;
	int pidfd;
	bool reaped;
	int status;
};

int launcher_workspace_new(const struct policy *p, struct al_audit *audit,
			   struct broker_client *broker, struct launcher_workspace **ret,
			   struct al_error *err)
{
	_cleanup_(launcher_workspace_freep) struct launcher_workspace *ws = NULL;
	int fd, r;

	/* The sandbox child opens it later; find out now, before anything runs. */
	fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return al_error_set_errno(err, -errno,
					  "workspace: cannot open /dev/fuse (%s): the workspace "
					  "filesystem needs it%s; see airlock doctor",
					  strerror(errno),
					  errno == EACCES ? " readable and writable by you (mode "
							    "0666, as Debian's udev sets it)"
							  : "");
	(void)al_close(fd);
	ws = calloc(1, sizeof(*ws));
	if (!ws)
		return -ENOMEM;
	*ws = (struct launcher_workspace){
	    .audit = audit, .violations = {-EBADF, -EBADF}, .pidfd = -EBADF};
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, ws->violations) <
	    0)
		return al_error_set_errno(err, -errno, "Failed to create the violations socket");
	/* The daemon asks for credential files on a connection of its own. */
	if (broker) {
		r = broker_client_attach(broker, &ws->broker, err);
		if (r < 0)
			return r;
	}
	r = fusefs_new(&(struct fusefs_options){.policy = p,
						.mount = p->workspace.mount,
						.audit = audit,
						.broker = ws->broker,
						.violations_fd = ws->violations[1],
						.strip_setid = true},
		       &ws->fs, err);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(ws);
	return 0;
}

const struct policy_credential *launcher_workspace_secret_file(const struct launcher_workspace *ws,
							       size_t i)
{
	return fusefs_outside_credential(ws->fs, i);
}

_noreturn_ static void daemon_main(struct launcher_workspace *ws, pid_t parent, int fuse_fd,
				   int secrets_fd)
{
	int keep[8], n = 0, r;
	sigset_t none;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != parent)
		_exit(EXIT_FAILURE);
	/* It holds secrets while it serves credential files. */
	(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	(void)prctl(PR_SET_NAME, "airlock-fs", 0, 0, 0);
	/* It is charged to the sandbox's cgroup (the sandbox makes it allocate), but a memory
	 * bomb in the sandbox must not make the OOM killer pick the daemon instead. */
	(void)al_write_file_at(AT_FDCWD, "/proc/self/oom_score_adj", "-1000");
	/* Only what it serves: the sandbox's stdin pipe, the sync socket and the rest of airlock's
	 * fds would otherwise stay open as long as it runs. */
	keep[n++] = STDERR_FILENO;
	keep[n++] = fuse_fd;
	keep[n++] = secrets_fd;
	keep[n++] = ws->violations[1];
	keep[n++] = al_audit_fd(ws->audit);
	if (ws->broker)
		keep[n++] = broker_client_fd(ws->broker);
	n += (int)fusefs_fds(ws->fs, keep + n, ELEMENTSOF(keep) - (size_t)n);
	if (al_close_all_except(keep, (size_t)n) < 0)
		_exit(EXIT_FAILURE);
	r = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (r >= 0) {
		(void)dup2(r, STDIN_FILENO);
		(void)dup2(r, STDOUT_FILENO);
		if (r > STDERR_FILENO)
			(void)al_close(r);
	}
	(void)sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
	r = fusefs_serve(ws->fs, fuse_fd, secrets_fd);
	if (r < 0)
		log_debug_errno(r, "Serving the workspace failed: %m");
	_exit(r < 0 ? EXIT_FAILURE : EXIT_SUCCESS);
}

int launcher_workspace_start(struct launcher_workspace *ws, int fuse_fd, int secrets_fd)
{
	struct clone_args args = {.flags = CLONE_PIDFD, .exit_signal = SIGCHLD};
	pid_t parent = getpid();
	int pidfd = -EBADF;
	long pid;

	if (ws->pid > 0)
		return -EALREADY;
	args.pidfd = (uint64_t)(uintptr_t)&pidfd;
	pid = syscall(SYS_clone3, &args, sizeof(args));
	if (pid < 0)
		return -errno;
	if (pid == 0)
		daemon_main(ws, parent, fuse_fd, secrets_fd);
	ws->pid = (pid_t)pid;
	ws->pidfd = pidfd;
	ws->violations[1] = al_close(ws->violations[1]);
	return 0;
}

pid_t launcher_workspace_pid(const struct launcher_workspace *ws)
{
	return ws->pid;
}

int launcher_workspace_pidfd(const struct launcher_workspace *ws)
{
	return ws && !ws->reaped ? ws->pidfd : -EBADF;
}

int launcher_workspace_violations_fd(const struct launcher_workspace *ws)
{
	return ws ? ws->violations[0] : -EBADF;
}

int launcher_workspace_read_violation(struct launcher_workspace *ws, char *detail, size_t size,
				      uint32_t *ret_count)
{
	struct fusefs_violation v;
	ssize_t n;

	n = recv(ws->violations[0], &v, sizeof(v), MSG_DONTWAIT);
	if (n < 0)
		return -errno;
	if (n != (ssize_t)sizeof(v))
		return n == 0 ? -EPIPE : -EBADMSG;
	v.op[sizeof(v.op) - 1] = '\0';
	v.path[sizeof(v.path) - 1] = '\0';
	(void)snprintf(detail, size, "%s %s", v.op, v.path);
	*ret_count = 1 + v.dropped;
	return 0;
}

bool launcher_workspace_reap(struct launcher_workspace *ws)
{
	siginfo_t si = {0};

	if (ws->pid <= 0 || ws->reaped)
		return ws->reaped;
	if (waitid(P_PIDFD, (id_t)ws->pidfd, &si, WEXITED | WNOHANG) < 0 || si.si_pid == 0)
		return false;
	ws->reaped = true;
	ws->status = si.si_code == CLD_EXITED ? W_EXITCODE(si.si_status, 0) : si.si_status;
	return true;
}

int launcher_workspace_status(const struct launcher_workspace *ws)
{
	return ws->status;
}

/* The sandbox is gone: so is its mount namespace, and with it the connection, which ends the
 * daemon. One that does not end in time is killed. */
void launcher_workspace_stop(struct launcher_workspace *ws)
{
	struct pollfd pfd;

	if (ws->pid <= 0 || ws->reaped)
		return;
	pfd = (struct pollfd){.fd = ws->pidfd, .events = POLLIN};
	while (poll(&pfd, 1, STOP_GRACE_MSEC) < 0 && errno == EINTR)
		;
	if (!launcher_workspace_reap(ws)) {
		log_debug("The workspace daemon did not end: killing it");
		(void)syscall(SYS_pidfd_send_signal, ws->pidfd, SIGKILL, NULL, 0);
		while (!launcher_workspace_reap(ws) && poll(&pfd, 1, -1) >= 0)
			;
	}
}

struct launcher_workspace *launcher_workspace_free(struct launcher_workspace *ws)
{
	if (!ws)
		return NULL;
	if (ws->pid > 0 && !ws->reaped) {
		(void)syscall(SYS_pidfd_send_signal, ws->pidfd, SIGKILL, NULL, 0);
		(void)waitid(P_PIDFD, (id_t)ws->pidfd, &(siginfo_t){0}, WEXITED);
	}
	(void)al_close(ws->pidfd);
	(void)al_close(ws->violations[0]);
	(void)al_close(ws->violations[1]);
	ws->fs = fusefs_free(ws->fs);
	ws->broker = broker_client_free(ws->broker);
	free(ws);
	return NULL;
}
