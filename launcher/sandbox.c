#define LOG_MODULE "launcher"

/* The cloned child: it builds the sandbox from the context the parent prepared, then becomes the
 * sandbox's pid 1 and forks the command. It never returns and never logs: failures go up the sync
 * socket as a struct al_error, then the child _exit()s. */

#include <fcntl.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/argv-util.h"
#include "common/fd-util.h"
#include "launcher/launcher-internal.h"

struct steps {
	struct launcher_sync_msg *msg;
	uint64_t last;
};

static void step(struct steps *s, const char *name)
{
	uint64_t now = launcher_now_usec();
	struct launcher_sync_msg *m = s->msg;

	if (m->n_steps < LAUNCHER_SYNC_STEPS) {
		(void)snprintf(m->steps[m->n_steps].name, sizeof(m->steps[0].name), "%s", name);
		m->steps[m->n_steps].usec = now - s->last;
		m->n_steps++;
	}
	s->last = now;
}

_noreturn_ static void fail(int sync_fd, struct launcher_sync_msg *m, int r)
{
	m->type = LAUNCHER_SYNC_ERROR;
	m->value = r;
	if (!m->err.msg[0])
		(void)al_error_set_errno(&m->err, r, "Failed to set up the sandbox");
	(void)launcher_sync_send(sync_fd, m, -EBADF);
	_exit(LAUNCHER_EXIT_FAILED);
}

static int capset_empty(void)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3] = {0};

	return RET_NERRNO((int)syscall(SYS_capset, &h, d));
}

/* Leaves the process with no capability in any set, and unable to regain one: the bounding set
 * is emptied (so exec of a setuid-root or file-capability binary gives nothing) and the securebits
 * that make uid 0 special are locked off. */
static int drop_capabilities(int cap_last, struct al_error *err)
{
	int r;

	r = RET_NERRNO(prctl(PR_SET_SECUREBITS,
			     SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
				 SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
				 SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED,
			     0, 0, 0));
	if (r < 0)
		return al_error_set_errno(err, r, "Failed to lock the securebits");
	for (int c = 0; c <= cap_last; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
			return al_error_set_errno(err, -errno, "Failed to drop capability %d", c);
	r = RET_NERRNO(prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0));
	if (r < 0)
		return al_error_set_errno(err, r, "Failed to clear the ambient capabilities");
	r = capset_empty();
	if (r < 0)
		return al_error_set_errno(err, r, "Failed to drop capabilities");
	return 0;
}

static int set_limits(const struct policy *p, struct al_error *err)
{
	struct rlimit core = {0, 0};
	struct rlimit nofile = {p->resources.nofile, p->resources.nofile};

	if (setrlimit(RLIMIT_CORE, &core) < 0)
		return al_error_set_errno(err, -errno, "Failed to set RLIMIT_CORE");
	if (p->resources.nofile > 0 && setrlimit(RLIMIT_NOFILE, &nofile) < 0)
		return al_error_set_errno(err, -errno,
					  "resources.nofile: Failed to set RLIMIT_NOFILE");
	return 0;
}

static int install_stdio(const struct launcher_context *ctx, struct al_error *err)
{
	if (ctx->stdin_r >= 0 && dup2(ctx->stdin_r, STDIN_FILENO) < 0)
		return al_error_set_errno(err, -errno, "Failed to set up stdin");
	if (dup2(ctx->stdout_w, STDOUT_FILENO) < 0 || dup2(ctx->stderr_w, STDERR_FILENO) < 0)
		return al_error_set_errno(err, -errno, "Failed to set up stdout/stderr");
	(void)al_close(ctx->stdin_r);
	(void)al_close(ctx->stdout_w);
	(void)al_close(ctx->stderr_w);
	return 0;
}

/* The request's files, written with the command's own rights: through the workspace's mount,
 * whose daemon serves it by now, under the same rules. */
static int place_workspace_files(const struct launcher_context *ctx, struct al_error *err)
{
	_cleanup_close_ int root = -EBADF;
	int r;

	if (ctx->opts->n_workspace_files == 0)
		return 0;
	root = open(ctx->policy->workspace.mount, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return al_error_set_errno(err, -errno, "Failed to open the workspace");
	for (size_t i = 0; i < ctx->opts->n_workspace_files; i++) {
		r = launcher_tree_place(root, &ctx->opts->workspace_files[i], err);
		if (r < 0)
			return r;
	}
	return 0;
}

_noreturn_ void launcher_sandbox_main(const struct launcher_context *ctx)
{
	struct launcher_sync_msg m = {0}, in;
	struct steps s = {.msg = &m, .last = launcher_now_usec()};
	int sync_fd = ctx->sync_fd, notify_fd = -EBADF, sigfd = -EBADF, r;
	int keep[9], netns = -EBADF, master = -EBADF;
	char tty[32] = "";
	sigset_t forwarded;
	pid_t cmd;

	/* Die with airlock. If airlock is already gone, GO never comes: the read sees EOF. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		fail(sync_fd, &m, -errno);
	/* pid 1 never execs, so close-on-exec never happens for it: drop every fd it inherited
	 * (the caller's, airlock's audit file, timers...) but the ones the sandbox is built from.
	 */
	keep[0] = STDIN_FILENO, keep[1] = STDOUT_FILENO, keep[2] = STDERR_FILENO;
	keep[3] = sync_fd, keep[4] = ctx->stdout_w, keep[5] = ctx->stderr_w;
	keep[6] = ctx->stdin_r, keep[7] = ctx->egress_fd, keep[8] = ctx->agent_fd;
	if (al_close_all_except(keep, ELEMENTSOF(keep)) < 0)
		_exit(LAUNCHER_EXIT_FAILED);
	/* /proc/1/cmdline is readable by the sandbox: airlock's command line is none of its
	 * business. */
	al_argv_wipe("airlock-init");
	r = launcher_sync_recv(sync_fd, &in, NULL);
	if (r < 0 || in.type != LAUNCHER_SYNC_GO)
		_exit(LAUNCHER_EXIT_FAILED);
	s.last = launcher_now_usec();
	/* Root's sandbox under a profile: clone kept host root's ids, which its user namespace does
	 * not map; become that namespace's root (an unprivileged host id), whose capabilities it
	 * has, before making anything. */
	if (ctx->userns && ctx->uid == 0 && (setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0))
		fail(sync_fd, &m,
		     al_error_set_errno(&m.err, -errno,
					"Failed to become root of the sandbox's user namespace"));

	/* Without root, the egress proxy's network is this user namespace's to make: first, so
	 * that the proxy's process takes its sockets while this one builds its root. */
	if (ctx->egress_build) {
		r = launcher_egress_build(ctx->egress_build, ctx->egress_fd, &m.err);
		if (r < 0)
			fail(sync_fd, &m, r);
		step(&s, "veth");
	}
	if (sethostname("airlock", strlen("airlock")) < 0)
		fail(sync_fd, &m, al_error_set_errno(&m.err, -errno, "Failed to set the hostname"));
	r = launcher_rootfs_setup(ctx, &m.err);
	if (r < 0)
		fail(sync_fd, &m, r);
	step(&s, "mounts");

	/* In the cgroup(s) from here on: the cgroup namespace's root is the sandbox's own cgroup.
	 */
	r = launcher_sync_recv(sync_fd, &in, &netns);
	if (r < 0 || in.type != LAUNCHER_SYNC_ATTACHED)
		_exit(LAUNCHER_EXIT_FAILED);
	step(&s, "wait");
	/* As root, airlock made the network namespace meanwhile; join it. */
	if (!ctx->userns && (netns < 0 || setns(netns, CLONE_NEWNET) < 0))
		fail(sync_fd, &m,
		     al_error_set_errno(&m.err, netns < 0 ? -EBADMSG : -errno,
					"Failed to join the network namespace"));
	netns = al_close(netns);
	r = launcher_loopback_up();
	if (r < 0)
		fail(sync_fd, &m, al_error_set_errno(&m.err, r, "Failed to bring lo up"));
	if (unshare(CLONE_NEWCGROUP) < 0)
		fail(sync_fd, &m,
		     al_error_set_errno(&m.err, -errno, "Failed to create the cgroup namespace"));

	r = install_stdio(ctx, &m.err);
	if (r >= 0 && setsid() < 0)
		r = al_error_set_errno(&m.err, -errno, "Failed to start a new session");
	if (r >= 0)
		r = set_limits(ctx->policy, &m.err);
	if (r >= 0)
		r = drop_capabilities(ctx->cap_last, &m.err);
	if (r >= 0 && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		r = al_error_set_errno(&m.err, -errno, "Failed to set no_new_privs");
	if (r >= 0 && prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		r = al_error_set_errno(&m.err, -errno, "Failed to clear the dumpable flag");
	if (r < 0)
		fail(sync_fd, &m, r);
	step(&s, "caps");

	/* The command's terminal, from the sandbox's own devpts: only its master leaves. */
	if (ctx->opts->terminal) {
		r = launcher_pty_open(&ctx->terminal.spec, &master, tty, &m.err);
		if (r < 0)
			fail(sync_fd, &m, r);
		r = launcher_sync_send(
		    sync_fd, &(struct launcher_sync_msg){.type = LAUNCHER_SYNC_TERMINAL}, master);
		master = al_close(master);
		if (r < 0)
			_exit(LAUNCHER_EXIT_FAILED);
	}

	if (ctx->policy->executables.n > 0) {
		r = launcher_landlock_restrict_exec(ctx->policy->executables.items,
						    ctx->policy->executables.n, &m.err);
		if (r < 0) {
			al_error_prefix(&m.err, "executables");
			fail(sync_fd, &m, r);
		}
	}
	step(&s, "landlock");

	r = launcher_seccomp_install(&ctx->seccomp, &notify_fd);
	if (r < 0)
		fail(sync_fd, &m,
		     al_error_set_errno(&m.err, r, "Failed to install the seccomp filter"));
	step(&s, "seccomp");

	r = place_workspace_files(ctx, &m.err);
	if (r < 0)
		fail(sync_fd, &m, r);

	(void)sigemptyset(&forwarded);
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP && sig < SIGRTMIN)
			(void)sigaddset(&forwarded, sig);
	if (sigprocmask(SIG_SETMASK, &forwarded, NULL) < 0 ||
	    (sigfd = signalfd(-1, &forwarded, SFD_CLOEXEC)) < 0)
		fail(sync_fd, &m, al_error_set_errno(&m.err, -errno, "Failed to set up signals"));

	m.type = LAUNCHER_SYNC_READY;
	r = launcher_sync_send(sync_fd, &m, notify_fd);
	/* Only airlock may answer the sandbox's seccomp notifications: the listener must not stay
	 * in any sandboxed process. */
	notify_fd = al_close(notify_fd);
	if (r < 0)
		_exit(LAUNCHER_EXIT_FAILED);

	(void)prctl(PR_SET_NAME, "airlock-init", 0, 0, 0);
	if (ctx->opts->session) {
		cmd = 0; /* commands come later, one EXEC message each */
	} else {
		struct launcher_spawn sp = {
		    .argv = ctx->opts->prelude ? ctx->opts->prelude : ctx->argv,
		    .prelude = ctx->opts->prelude,
		    .tty = ctx->opts->prelude || !tty[0] ? NULL : tty,
		};

		r = launcher_sandbox_spawn(ctx, &sp, &cmd);
		if (r < 0)
			cmd = r;
	}
	launcher_init_main(ctx, sync_fd, sigfd, cmd, tty[0] ? tty : NULL);
}
