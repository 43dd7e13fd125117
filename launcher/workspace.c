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

struct launcher_workspace {
	struct broker_client *broker;
	struct fusefs *fs;
	struct al_audit *audit;	 /* borrowed */
	int violations[2];	 /* [0] airlock reads, [1] the daemon writes */
	int fuse_fd, secrets_fd; /* for the daemon, while it starts */
	struct launcher_daemon daemon;
};

int launcher_workspace_new(const struct policy *p, struct al_audit *audit,
			   struct broker_client *broker, struct launcher_workspace **ret,
			   struct al_error *err)
{
	_cleanup_(launcher_workspace_freep) struct launcher_workspace *ws = NULL;
	bool userns;
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
	*ws = (struct launcher_workspace){.audit = audit, .violations = {-EBADF, -EBADF}};
	launcher_daemon_init(&ws->daemon);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, ws->violations) <
	    0)
		return al_error_set_errno(err, -errno, "Failed to create the violations socket");
	/* The daemon asks for credential files on a connection of its own. */
	if (broker) {
		r = broker_client_attach(broker, &ws->broker, err);
		if (r < 0)
			return r;
	}
	/* Not root: the sandbox gets a user namespace that maps airlock's euid and egid only
	 * (launcher_context_init(), write_id_maps()). */
	userns = geteuid() != 0;
	r = fusefs_new(&(struct fusefs_options){.policy = p,
						.mount = p->workspace.mount,
						.audit = audit,
						.broker = ws->broker,
						.violations_fd = ws->violations[1],
						.strip_setid = true,
						.userns = userns},
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

_noreturn_ static void daemon_main(void *userdata)
{
	struct launcher_workspace *ws = userdata;
	int keep[8], n = 0, r;

	(void)prctl(PR_SET_NAME, "airlock-fs", 0, 0, 0);
	/* Only what it serves: the sandbox's stdin pipe, the sync socket and the rest of airlock's
	 * fds would otherwise stay open as long as it runs. */
	keep[n++] = STDERR_FILENO;
	keep[n++] = ws->fuse_fd;
	keep[n++] = ws->secrets_fd;
	keep[n++] = ws->violations[1];
	keep[n++] = al_audit_fd(ws->audit);
	if (ws->broker)
		keep[n++] = broker_client_fd(ws->broker);
	n += (int)fusefs_fds(ws->fs, keep + n, ELEMENTSOF(keep) - (size_t)n);
	if (al_close_all_except(keep, (size_t)n) < 0)
		_exit(EXIT_FAILURE);
	r = fusefs_serve(ws->fs, ws->fuse_fd, ws->secrets_fd);
	if (r < 0)
		log_debug_errno(r, "Serving the workspace failed: %m");
	_exit(r < 0 ? EXIT_FAILURE : EXIT_SUCCESS);
}

int launcher_workspace_start(struct launcher_workspace *ws, int fuse_fd, int secrets_fd)
{
	int r;

	ws->fuse_fd = fuse_fd;
	ws->secrets_fd = secrets_fd;
	r = launcher_daemon_start(&ws->daemon, daemon_main, ws);
	if (r < 0)
		return r;
	ws->violations[1] = al_close(ws->violations[1]);
	return 0;
}

struct launcher_daemon *launcher_workspace_daemon(struct launcher_workspace *ws)
{
	return ws ? &ws->daemon : NULL;
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

struct launcher_workspace *launcher_workspace_free(struct launcher_workspace *ws)
{
	if (!ws)
		return NULL;
	launcher_daemon_kill(&ws->daemon);
	(void)al_close(ws->violations[0]);
	(void)al_close(ws->violations[1]);
	ws->fs = fusefs_free(ws->fs);
	ws->broker = broker_client_free(ws->broker);
	free(ws);
	return NULL;
}
