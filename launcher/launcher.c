#define LOG_MODULE "launcher"

/* launcher_run(): airlock's side of a sandbox. It prepares everything that can fail before any
 * namespace exists, clones the sandbox child, completes the handshake (user namespace maps,
 * cgroup), then supervises: output, signals, timeout, seccomp notifications, the end. */

#include <fcntl.h>
#include <inttypes.h>
#include <linux/sched.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/audit.h"
#include "common/fd-util.h"
#include "common/log.h"
#include "launcher/launcher-internal.h"
#include "launcher/launcher.h"
#include "netns/netns.h"

#define SETUP_TIMEOUT_USEC (60 * 1000000ULL) /* from clone to READY */
#define VIOLATION_KINDS_MAX 256		     /* distinct (kind, detail) pairs kept in the result */
#define VIOLATION_OTHER_ROOM 32 /* kept for "other" entries: one per kind and contract */
#define VIOLATION_AUDIT_ALL 10	/* violations of one kind audited one by one */
#define FS_STOP_GRACE_MSEC 2000 /* for the workspace daemon to see its connection end */

enum {
	PFD_SYNC,
	PFD_PIDFD,
	PFD_SIGNAL,
	PFD_TIMER,
	PFD_NOTIFY,
	PFD_OUT_IN,
	PFD_OUT_OUT,
	PFD_ERR_IN,
	PFD_ERR_OUT,
	PFD_IN_IN,
	PFD_IN_OUT,
	PFD_FS,
	PFD_FS_VIOLATION,
	PFD_NET,
	PFD_NET_VIOLATION,
	PFD_MAX,
};

struct run {
	struct launcher_context ctx;
	struct launcher_cgroup *cgroup;
	struct launcher_workspace *ws;
	struct launcher_egress *egress; /* NULL: the sandbox gets only lo */
	struct broker_client *broker;	/* the policy's credentials' session, or NULL */
	struct al_audit *audit;
	struct launcher_result *result;
	pid_t pid;
	int pidfd, sync_fd, sig_fd, timer_fd, notify_fd;
	int netns_fd; /* as root: the sandbox's network namespace, until the child has it */
	int pty;      /* opts->terminal: the command's pty master (out and in have dups) */
	struct launcher_stream out, err, in; /* sandbox -> stdout, -> stderr; terminal -> sandbox */
	bool reaped, got_status, exec_failed, timed_out, killed, abandoned, fs_died, net_died;
	int fuse_fd; /* the workspace connection, until the secrets one arrives too */
	int init_status, exec_error;
	struct launcher_sync_msg status;
	uint64_t t_start, t_last;
};

static void run_step(struct run *run, const char *name)
{
	struct launcher_result *res = run->result;
	uint64_t now = launcher_now_usec();

	if (res->n_steps < LAUNCHER_STEP_MAX) {
		struct launcher_step *st = &res->steps[res->n_steps++];

		(void)snprintf(st->name, sizeof(st->name), "%s", name);
		st->usec = now - run->t_last;
	}
	run->t_last = now;
}

static void run_done(struct run *run)
{
	launcher_terminal_restore(&run->ctx.terminal);
	if (run->pid > 0 && !run->reaped) {
		(void)syscall(SYS_pidfd_send_signal, run->pidfd, SIGKILL, NULL, 0);
		(void)waitpid(run->pid, NULL, 0);
	}
	run->ws = launcher_workspace_free(run->ws);
	run->egress = launcher_egress_free(run->egress);
	launcher_stream_close(&run->out);
	launcher_stream_close(&run->err);
	run->broker = broker_client_free(run->broker);
	run->fuse_fd = al_close(run->fuse_fd);
	run->cgroup = launcher_cgroup_free(run->cgroup);
	run->audit = al_audit_close(run->audit);
	run->pidfd = al_close(run->pidfd);
	run->sync_fd = al_close(run->sync_fd);
	launcher_stream_close(&run->out);
	launcher_stream_close(&run->err);
	launcher_stream_close(&run->in);
	run->sig_fd = al_close(run->sig_fd);
	run->timer_fd = al_close(run->timer_fd);
	run->notify_fd = al_close(run->notify_fd);
	run->netns_fd = al_close(run->netns_fd);
	run->pty = al_close(run->pty);
	launcher_context_done(&run->ctx);
}

void launcher_signals_forwarded(sigset_t *ret)
{
	static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

	(void)sigemptyset(ret);
	for (size_t i = 0; i < ELEMENTSOF(forwarded); i++)
		(void)sigaddset(ret, forwarded[i]);
}

/* The signals airlock passes on to the sandbox, and with a terminal SIGWINCH (its size passed
 * on to the command's) and SIGCONT (brought to the foreground: raw mode). They are blocked and
 * read from a signalfd, so they are handled in the loop, not in a handler. */
static int signals_block(bool terminal, sigset_t *ret)
{
	launcher_signals_forwarded(ret);
	if (terminal) {
		(void)sigaddset(ret, SIGWINCH);
		(void)sigaddset(ret, SIGCONT);
	}
	return RET_NERRNO(sigprocmask(SIG_BLOCK, ret, NULL));
}

static void audit(struct run *run, const char *kind, const struct al_audit_field *f, size_t n)
{
	int r;

	if (!run->audit)
		return;
	r = al_audit_event(run->audit, kind, f, n);
	if (r < 0)
		log_warning_errno(r, "Failed to write an audit event: %m");
}

static int open_audit(struct run *run, struct al_error *err)
{
	const char *path =
	    run->ctx.opts->audit_path ? run->ctx.opts->audit_path : run->ctx.policy->audit;
	int r;

	if (!path)
		return 0;
	r = al_audit_open(path, run->ctx.id, &run->audit);
	if (r < 0)
		return al_error_set_errno(err, r, "audit: cannot open %s", path);
	audit(run, "exec",
	      (struct al_audit_field[]){
		  AL_AUDIT_SV("argv", run->ctx.opts->argv),
		  AL_AUDIT_S("policy_hash", run->result->policy_hash),
		  AL_AUDIT_I("uid", run->ctx.uid),
		  AL_AUDIT_S("seccomp", policy_seccomp_to_string(run->ctx.policy->seccomp)),
	      },
	      4);
	return 0;
}

/* The credential files the child binds from the secrets mount. */
static int list_secret_files(struct run *run)
{
	size_t n = 0;

	while (launcher_workspace_secret_file(run->ws, n))
		n++;
	if (n == 0)
		return 0;
	run->ctx.secret_files = calloc(n, sizeof(*run->ctx.secret_files));
	if (!run->ctx.secret_files)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		run->ctx.secret_files[i] = launcher_workspace_secret_file(run->ws, i);
	run->ctx.n_secret_files = n;
	return 0;
}

/* The session with the broker that holds the policy's credentials: every source is read now, so
 * a credential that cannot be served stops the run before anything runs. */
static int open_broker(struct run *run, struct al_error *err)
{
	struct broker_client_options o = run->ctx.opts->broker;
	int r;

	o.audit = run->audit;
	o.label = run->ctx.id;
	o.needs_values = true;
	if (run->ctx.policy->resources.timeout_usec > 0)
		o.ttl_usec = run->ctx.policy->resources.timeout_usec + 60 * 1000000ULL;
	r = broker_client_open(run->ctx.policy, &o, &run->broker, err);
	if (r >= 0)
		r = launcher_env_add_credentials(&run->ctx, run->broker, err);
	return r;
}

/* The proxy is made before clone: the sandbox's environment and trust store name it. */
static int prepare_egress(struct run *run, const struct policy *p,
			  const struct launcher_options *opts, struct al_error *err)
{
	int r;

	r = launcher_egress_new(p, run->audit, run->broker, opts->upstream_ca, &run->egress, err);
	if (r < 0)
		return r;
	run->ctx.egress = true;
	r = launcher_egress_ca_bundle(run->egress, &run->ctx.ca_bundle);
	if (r < 0)
		return al_error_set_errno(err, r, "Failed to read the host's CA certificates");
	r = launcher_env_add_egress(&run->ctx);
	if (r < 0)
		return al_error_set_errno(err, r, "Failed to set up the environment");
	return 0;
}

static int prepare(struct run *run, const struct policy *p, const struct launcher_options *opts,
		   struct al_error *err)
{
	int r, abi;

	r = policy_check_runnable(p, err);
	if (r >= 0)
		r = launcher_context_init(&run->ctx, p, opts, err);
	if (r >= 0)
		r = open_audit(run, err);
	if (r >= 0 && p->n_credentials > 0)
		r = open_broker(run, err);
	if (r >= 0)
		r = launcher_workspace_new(p, run->audit, run->broker, &run->ws, err);
	if (r >= 0 && policy_has_egress(p))
		r = prepare_egress(run, p, opts, err);
	if (r < 0)
		return r;
	r = list_secret_files(run);
	if (r < 0)
		return r;
	/* A session's commands write to their callers' pipes directly: nothing redacts them. */
	for (size_t i = 0; opts->session && i < p->n_credentials; i++)
		if (p->credentials[i].expose)
			return al_error_set(
			    err, -EOPNOTSUPP,
			    "credentials[%zu]: \"expose\" cannot be used in a session "
			    "(its output is not redacted); use a surrogate",
			    i);
	if (p->executables.n > 0) {
		abi = launcher_landlock_abi();
		if (abi < 1)
			return al_error_set_errno(
			    err, abi < 0 ? abi : -EOPNOTSUPP,
			    "executables: cannot be enforced: landlock is not "
			    "available on this kernel; see airlock doctor");
	}
	return launcher_seccomp_compile(p->seccomp, &run->ctx.seccomp, err);
}

static int spawn(struct run *run, struct al_error *err)
{
	int sp[2], out[2] = {-EBADF, -EBADF}, errp[2] = {-EBADF, -EBADF}, in[2] = {-EBADF, -EBADF};
	struct clone_args args = {.exit_signal = SIGCHLD};
	/* As root, the network namespace is made by airlock while the child builds its root (see
	 * handshake()); in a user namespace the child's clone makes it, owned by that namespace. */
	uint64_t flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_PIDFD;
	bool capture = run->ctx.opts->capture;
	struct launcher_result *res = run->result;
	const char *hint;
	int pidfd = -EBADF, r;
	long pid;

	if (run->ctx.userns)
		flags |= CLONE_NEWUSER | CLONE_NEWNET;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
		return al_error_set_errno(err, -errno, "Failed to create the sync socket");
	run->sync_fd = sp[0];
	run->ctx.sync_fd = sp[1];
	/* Each end is owned by run or ctx as soon as it exists, so every error path closes it. */
	r = RET_NERRNO(pipe2(out, O_CLOEXEC));
	launcher_stream_init(&run->out, out[0], true, STDOUT_FILENO, false,
			     capture ? &res->out : NULL, LAUNCHER_CAPTURE_MAX);
	run->ctx.stdout_w = out[1];
	if (r >= 0)
		r = RET_NERRNO(pipe2(errp, O_CLOEXEC));
	launcher_stream_init(&run->err, errp[0], true, STDERR_FILENO, false,
			     capture ? &res->err : NULL, LAUNCHER_CAPTURE_MAX);
	run->ctx.stderr_w = errp[1];
	if (run->broker) {
		launcher_stream_redact(&run->out, run->broker, 0);
		launcher_stream_redact(&run->err, run->broker, 1);
	}
	/* A terminal or a file is not handed to the sandbox (see launcher_stdin_is_copied()): its
	 * input is copied into a pipe instead. Other stdin (a pipe, a socket) is passed as is. With
	 * a terminal of its own, the command's input is copied into that (terminal_ready()). */
	if (run->ctx.opts->terminal) {
		launcher_terminal_init(&run->ctx.terminal);
		(void)signal(SIGTTIN, SIG_IGN);
		(void)signal(SIGTTOU, SIG_IGN);
	} else if (r >= 0 && run->ctx.opts->stdin_fd > 0) {
		/* The caller's own input for the command: passed as is, airlock's stays. */
		in[0] = fcntl(run->ctx.opts->stdin_fd, F_DUPFD_CLOEXEC, 3);
		if (in[0] < 0)
			r = -errno;
	} else if (r >= 0 && launcher_stdin_is_copied(STDIN_FILENO)) {
		r = RET_NERRNO(pipe2(in, O_CLOEXEC));
		/* In the background, reading the terminal would stop airlock (and its timeout)
		 * with SIGTTIN: ignored, the read fails with EIO, which ends the input. */
		(void)signal(SIGTTIN, SIG_IGN);
		(void)signal(SIGTTOU, SIG_IGN);
	}
	launcher_stream_init(&run->in, in[1] >= 0 ? STDIN_FILENO : -EBADF, false, in[1], true, NULL,
			     0);
	run->ctx.stdin_r = in[0];
	if (r < 0)
		return al_error_set_errno(err, r, "Failed to create the stdio pipes");

	args.flags = flags;
	args.pidfd = (uint64_t)(uintptr_t)&pidfd;
	pid = syscall(SYS_clone3, &args, sizeof(args));
	if (pid < 0) {
		r = -errno;
		hint = launcher_doctor_hint(flags, r);
		return al_error_set(err, r, "Failed to create the sandbox's %s namespaces: %s; %s",
				    run->ctx.userns ? "user, mount, pid, net, ipc and uts"
						    : "mount, pid, net, ipc and uts",
				    strerror(-r), hint ? hint : "see airlock doctor");
	}
	if (pid == 0) {
		/* The child: drop airlock's ends; everything else it needs is in ctx. */
		(void)al_close(run->sync_fd);
		launcher_stream_close(&run->out);
		launcher_stream_close(&run->err);
		launcher_stream_close(&run->in);
		launcher_sandbox_main(&run->ctx);
	}
	run->pid = (pid_t)pid;
	run->pidfd = pidfd;
	run->ctx.sync_fd = al_close(run->ctx.sync_fd);
	run->ctx.stdout_w = al_close(run->ctx.stdout_w);
	run->ctx.stderr_w = al_close(run->ctx.stderr_w);
	run->ctx.stdin_r = al_close(run->ctx.stdin_r);
	run->ctx.egress_fd = al_close(run->ctx.egress_fd);
	run->ctx.agent_fd = al_close(run->ctx.agent_fd);
	return 0;
}

static int write_id_maps(struct run *run, struct al_error *err)
{
	char path[64], map[64];
	int r;

	(void)snprintf(path, sizeof(path), "/proc/%d/setgroups", (int)run->pid);
	r = al_write_file_at(AT_FDCWD, path, "deny");
	if (r < 0 && r != -ENOENT)
		return al_error_set_errno(err, r, "Failed to write %s", path);
	(void)snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)run->pid);
	/* Root (under a profile): the sandbox's 0..65535 are an unprivileged host range, so the
	 * ids the workspace daemon (host root) reports show inside as they are. */
	if (run->ctx.uid == 0)
		(void)snprintf(map, sizeof(map), "0 %" PRIu32 " %d\n", run->ctx.root_map_uid,
			       LAUNCHER_USERNS_ROOT_COUNT);
	else
		(void)snprintf(map, sizeof(map), "%u %u 1\n", run->ctx.uid, run->ctx.uid);
	r = al_write_file_at(AT_FDCWD, path, map);
	if (r < 0)
		return al_error_set_errno(err, r, "Failed to write %s", path);
	(void)snprintf(path, sizeof(path), "/proc/%d/gid_map", (int)run->pid);
	if (run->ctx.gid == 0)
		(void)snprintf(map, sizeof(map), "0 %" PRIu32 " %d\n", run->ctx.root_map_gid,
			       LAUNCHER_USERNS_ROOT_COUNT);
	else
		(void)snprintf(map, sizeof(map), "%u %u 1\n", run->ctx.gid, run->ctx.gid);
	r = al_write_file_at(AT_FDCWD, path, map);
	if (r < 0)
		return al_error_set_errno(err, r, "Failed to write %s", path);
	return 0;
}

/* Arms fd to fire once after usec; 0 disarms it. */
static int arm_timer(int fd, uint64_t usec)
{
	struct itimerspec its = {
	    .it_value = {.tv_sec = (time_t)(usec / 1000000u),
			 .tv_nsec = (long)(usec % 1000000u) * 1000},
	};

	return RET_NERRNO(timerfd_settime(fd, 0, &its, NULL));
}

/* Waits for the sandbox's READY or ERROR. A signal that would end airlock ends the wait too: the
 * command has not started, so there is nothing to forward it to. */
/* The child made a FUSE mount and sent its connection: the workspace's, then, when there are
 * credential files outside it, the secrets'. The daemon serves both once it has them. */
static int on_fuse(struct run *run, int which, int fd, struct al_error *err)
{
	int r;

	if (fd < 0)
		return al_error_set(err, -EBADMSG, "The sandbox sent a FUSE message without an fd");
	if (which == LAUNCHER_FUSE_WORKSPACE && run->fuse_fd < 0) {
		run->fuse_fd = fd;
		if (run->ctx.n_secret_files > 0)
			return 0;
		fd = -EBADF;
	} else if (which != LAUNCHER_FUSE_SECRETS || run->fuse_fd < 0 ||
		   run->ctx.n_secret_files == 0) {
		(void)al_close(fd);
		return al_error_set(err, -EBADMSG, "Unexpected FUSE connection from the sandbox");
	}
	r = launcher_workspace_start(run->ws, run->fuse_fd, fd);
	/* Only the daemon may hold the connections: if it dies, they end. */
	run->fuse_fd = al_close(run->fuse_fd);
	(void)al_close(fd);
	if (r < 0)
		return al_error_set_errno(err, r, "Failed to start the workspace daemon");
	/* What the sandbox makes the daemon allocate (open files, folders, inodes) counts against
	 * the sandbox's own limits. */
	r = launcher_cgroup_attach(run->cgroup, launcher_workspace_daemon(run->ws)->pid);
	if (r < 0)
		return al_error_set_errno(err, r,
					  "Failed to move the workspace daemon into the "
					  "sandbox's cgroup");
	return 0;
}

static int wait_for_sandbox(struct run *run, struct launcher_sync_msg *m, struct al_error *err)
{
	struct pollfd pfd[3] = {
	    {.fd = run->sync_fd, .events = POLLIN},
	    {.fd = run->sig_fd, .events = POLLIN},
	    {.fd = run->timer_fd, .events = POLLIN},
	};
	struct signalfd_siginfo si;
	int r;

	r = arm_timer(run->timer_fd, SETUP_TIMEOUT_USEC);
	if (r < 0)
		return al_error_set_errno(err, r, "Failed to arm the setup timer");
	for (;;) {
		if (poll(pfd, ELEMENTSOF(pfd), -1) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (pfd[0].revents) {
			int fd = -EBADF;

			r = launcher_sync_recv(run->sync_fd, m, &fd);
			/* The child exited with our ATTACHED unread: the kernel reports that once,
			 * ahead of the ERROR message the child sent. */
			if (r == -ECONNRESET)
				r = launcher_sync_recv(run->sync_fd, m, &fd);
			if (r >= 0 && m->type == LAUNCHER_SYNC_FUSE) {
				r = on_fuse(run, m->value, fd, err);
				if (r < 0)
					break;
				continue;
			}
			if (r >= 0 && m->type == LAUNCHER_SYNC_TERMINAL && run->pty < 0 &&
			    fd >= 0) {
				run->pty = fd;
				continue;
			}
			run->notify_fd = fd;
			break;
		}
		if (pfd[2].revents) {
			r = al_error_set(err, -ETIMEDOUT,
					 "The sandbox was not set up within %u seconds",
					 (unsigned)(SETUP_TIMEOUT_USEC / 1000000));
			break;
		}
		if (read(run->sig_fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
			r = al_error_set(err, -EINTR,
					 "Interrupted by signal %u while setting up the sandbox",
					 si.ssi_signo);
			break;
		}
	}
	(void)arm_timer(run->timer_fd, 0);
	return r;
}

/* As root, the sandbox's network namespace; and the egress proxy's process, which builds the veth
 * pair into it. Without root, clone makes the sandbox's namespaces, and the sandbox's first process
 * builds the veth pair in them (launcher_egress_build()) for the proxy's process. Without egress
 * this runs while the child builds its root (handshake()); with egress, before clone, so that the
 * proxy's set-up (the longest step) overlaps with clone, the child's mounts and the cgroups. */
static int start_network(struct run *run, struct al_error *err)
{
	int r;

	if (!run->ctx.userns) {
		r = netns_new(&run->netns_fd);
		if (r < 0)
			return al_error_set_errno(
			    err, r, "Failed to create the sandbox's network namespace");
		run_step(run, "netns");
	}
	if (run->egress) {
		r = launcher_egress_start(run->egress, run->netns_fd, &run->ctx.egress_fd,
					  &run->ctx.agent_fd, err);
		if (r < 0)
			return r;
		if (run->ctx.egress_fd >= 0)
			run->ctx.egress_build = run->egress;
		run_step(run, "egress");
	}
	return 0;
}

/* The command's terminal is relayed from now on: its output (the transcript, with stdout and
 * stderr as one) to airlock's stdout or the capture, airlock's input (or the caller's stdin_fd)
 * into it; airlock's terminal goes raw. */
static int terminal_ready(struct run *run, struct al_error *err)
{
	const struct launcher_options *o = run->ctx.opts;
	int r;

	if (run->pty < 0)
		return al_error_set(err, -EBADMSG, "The sandbox sent no terminal");
	r = launcher_terminal_relay(&run->ctx.terminal, run->pty,
				    o->stdin_fd > 0 ? o->stdin_fd : STDIN_FILENO,
				    o->capture ? &run->result->out : NULL, &run->out, &run->in);
	if (run->broker)
		launcher_stream_redact(&run->out, run->broker, 0);
	if (r < 0)
		return al_error_set_errno(err, r, "Failed to set up the terminal");
	return 0;
}

/* The child builds its root while airlock creates the cgroup (two cores, two jobs); it joins its
 * cgroup namespace, and runs no code but airlock's, only after ATTACHED. */
static int handshake(struct run *run, struct al_error *err)
{
	struct launcher_sync_msg m = {.type = LAUNCHER_SYNC_GO};
	int r;

	if (run->ctx.userns) {
		r = write_id_maps(run, err);
		if (r < 0)
			return r;
	}
	/* airlock holds credentials (real values, with the embedded broker): from now on no core
	 * dump and no ptrace by the user's other processes. Not before: a non-root airlock must
	 * still write its child's id maps, which a non-dumpable child's /proc would refuse. */
	if (run->broker && prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		return al_error_set_errno(err, -errno, "Failed to clear the dumpable flag");
	r = launcher_sync_send(run->sync_fd, &m, -EBADF);
	if (r < 0)
		return al_error_set_errno(err, r, "Failed to start the sandbox");
	run_step(run, "clone");

	/* While the child builds its root: */
	launcher_stream_open_nonblocking(&run->out);
	launcher_stream_open_nonblocking(&run->err);
	launcher_stream_open_nonblocking(&run->in);
	if (!run->egress) {
		r = start_network(run, err);
		if (r < 0)
			return r;
	}
	r = launcher_cgroup_new(run->ctx.id, &run->ctx.policy->resources, &run->cgroup, err);
	if (r < 0)
		return r;
	/* A profile's io weight is a contract, not a hint: one the hierarchy cannot apply stops
	 * the run. */
	if (run->ctx.policy->profile != POLICY_PROFILE_NONE && launcher_cgroup_warning(run->cgroup))
		return al_error_set(err, -EOPNOTSUPP, "%s needs it enforced: %s",
				    policy_profile_to_string(run->ctx.policy->profile),
				    launcher_cgroup_warning(run->cgroup));
	r = launcher_cgroup_attach(run->cgroup, run->pid);
	if (r < 0)
		return al_error_set_errno(err, r, "Failed to move the sandbox into its cgroup");
	run_step(run, "cgroup");
	if (run->egress) {
		r = launcher_egress_wait_ready(run->egress, err);
		if (r < 0)
			return r;
		run_step(run, "egress-ready");
	}
	m = (struct launcher_sync_msg){.type = LAUNCHER_SYNC_ATTACHED};
	r = launcher_sync_send(run->sync_fd, &m, run->netns_fd);
	run->netns_fd = al_close(run->netns_fd);
	/* EPIPE: the child gave up already; its ERROR message is waiting to be read. */
	if (r < 0 && r != -EPIPE)
		return al_error_set_errno(err, r, "Failed to start the sandbox");

	r = wait_for_sandbox(run, &m, err);
	if (r == -EINTR || r == -ETIMEDOUT)
		return r;
	r = launcher_sync_expect(r, &m, LAUNCHER_SYNC_READY, "sandbox", err);
	if (r < 0)
		return r;
	if (run->notify_fd < 0)
		return al_error_set(err, -EBADMSG, "Unexpected message from the sandbox");
	/* From here on airlock only reacts to messages: never wait in recvmsg(). */
	r = al_fd_nonblock(run->sync_fd, true);
	if (r < 0)
		return al_error_set_errno(err, r, "Failed to set up the sync socket");
	for (uint32_t i = 0; i < m.n_steps && run->result->n_steps < LAUNCHER_STEP_MAX; i++)
		run->result->steps[run->result->n_steps++] = m.steps[i];
	run->t_last = launcher_now_usec();
	return run->ctx.opts->terminal ? terminal_ready(run, err) : 0;
}

const char *launcher_violation_contract(const char *kind, const char *detail)
{
	static const char *const ns_calls[] = {"unshare",   "setns",	  "clone",	  "clone3",
					       "mount",	    "umount2",	  "pivot_root",	  "chroot",
					       "open_tree", "move_mount", "fsopen",	  "fsmount",
					       "fsconfig",  "fspick",	  "mount_setattr"};

	if (streq(kind, "seccomp")) {
		for (size_t i = 0; i < ELEMENTSOF(ns_calls); i++)
			if (streq(detail, ns_calls[i]))
				return "namespace";
		return "seccomp";
	}
	if (streq(kind, "fs"))
		return "workspace";
	if (streq(kind, "exec"))
		return "executable";
	return "egress"; /* the proxy's: net, dns, credential */
}

/* Counts a violation under its kind, detail and contract; returns its count so far (0 when it
 * could not be recorded). Past VIOLATION_KINDS_MAX - VIOLATION_OTHER_ROOM distinct ones, a new
 * one is counted as "other" of its kind and contract, so that the contracts a run touched stay
 * right however many it tried (found by red team 2: 300 refused writes, then an unshare()
 * counted as the seccomp contract). */
static uint64_t record_as(struct launcher_result *res, const char *kind, const char *detail,
			  const char *contract, uint64_t n)
{
	struct launcher_violation *v;

	for (size_t i = 0; i < res->n_violations; i++)
		if (streq(res->violations[i].kind, kind) &&
		    streq(res->violations[i].detail, detail) &&
		    streq(res->violations[i].contract, contract))
			return res->violations[i].count += n;
	if (res->n_violations >= VIOLATION_KINDS_MAX - VIOLATION_OTHER_ROOM &&
	    !streq(detail, "other"))
		return record_as(res, kind, "other", contract, n);
	if (res->n_violations >= VIOLATION_KINDS_MAX)
		return 0;
	v = reallocarray(res->violations, res->n_violations + 1, sizeof(*v));
	if (!v)
		return 0;
	res->violations = v;
	v = &v[res->n_violations++];
	*v = (struct launcher_violation){.count = n};
	(void)snprintf(v->kind, sizeof(v->kind), "%s", kind);
	(void)snprintf(v->detail, sizeof(v->detail), "%s", detail);
	(void)snprintf(v->contract, sizeof(v->contract), "%s", contract);
	return n;
}

static uint64_t record_violations(struct launcher_result *res, const char *kind, const char *detail,
				  uint64_t n)
{
	return record_as(res, kind, detail, launcher_violation_contract(kind, detail), n);
}

static uint64_t record_violation(struct launcher_result *res, const char *kind, const char *detail)
{
	return record_violations(res, kind, detail, 1);
}

/* A sandbox can repeat a denied call millions of times: audit the first few of each kind, then
 * every power of ten, each with the count so far, so the audit file cannot be flooded. */
static bool violation_is_audited(uint64_t count)
{
	if (count == 0)
		return false;
	if (count <= VIOLATION_AUDIT_ALL)
		return true;
	while (count % 10 == 0)
		count /= 10;
	return count == 1;
}

bool launcher_stdin_is_copied(int fd)
{
	struct stat st;

	if (isatty(fd))
		return true;
	return fstat(fd, &st) == 0 && (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode));
}

void launcher_read_output(int fd, struct launcher_buffer *b)
{
	struct stat st;
	int r;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		log_debug("The result file is not a regular file: ignored");
		return;
	}
	free(b->data);
	*b = (struct launcher_buffer){0};
	r = al_read_fd(fd, LAUNCHER_OUTPUT_MAX, &b->data, &b->len);
	if (r == -EFBIG)
		b->truncated = true;
	else if (r < 0)
		log_debug_errno(r, "Failed to read the result file: %m");
}

static struct launcher_session_view session_view(struct run *run)
{
	return (struct launcher_session_view){
	    .sync_fd = run->sync_fd,
	    .pid = run->pid,
	    .ctx = &run->ctx,
	    .result = run->result,
	    .cgroup = run->cgroup,
	};
}

/* The command itself refused by the executables allow list (landlock: EACCES): a violation of
 * the executable contract. What the command then runs is refused by the kernel alone. */
static void on_exec_refused(struct run *run)
{
	const char *cmd = run->ctx.argv[0];

	if (run->exec_error != -EACCES || run->ctx.policy->executables.n == 0)
		return;
	if (violation_is_audited(record_violation(run->result, "exec", cmd)))
		audit(run, "violation",
		      (struct al_audit_field[]){
			  AL_AUDIT_S("violation", "exec"),
			  AL_AUDIT_S("command", cmd),
			  AL_AUDIT_S("contract", "executable"),
		      },
		      3);
}

static void on_sync(struct run *run)
{
	struct launcher_session *session = run->ctx.opts->session;
	struct launcher_session_view v = session_view(run);
	struct launcher_sync_msg m;
	int fd = -EBADF;

	while (launcher_sync_recv(run->sync_fd, &m, &fd) >= 0) {
		if (session && launcher_session_on_sync(session, &m, fd, &v)) {
			fd = al_close(fd);
			continue;
		}
		if (fd >= 0 && m.type == LAUNCHER_SYNC_STATUS)
			launcher_read_output(fd, &run->result->output);
		fd = al_close(fd);
		if (m.type == LAUNCHER_SYNC_EXEC_FAILED) {
			run->exec_failed = true;
			run->exec_error = m.value;
			on_exec_refused(run);
		} else if (m.type == LAUNCHER_SYNC_STATUS) {
			log_debug("Command ended after %" PRIu64 "us",
				  launcher_now_usec() - run->t_last);
			run->got_status = true;
			run->status = m;
		}
	}
}

static void on_timer(struct run *run)
{
	struct launcher_sync_msg m = {.type = LAUNCHER_SYNC_TERMINATE};
	uint64_t ticks;
	uint64_t grace = run->ctx.opts->kill_grace_usec;

	(void)!read(run->timer_fd, &ticks, sizeof(ticks));
	if (!run->timed_out) {
		run->timed_out = true;
		(void)launcher_sync_send(run->sync_fd, &m, -EBADF);
		(void)arm_timer(run->timer_fd, MAX(grace, (uint64_t)1));
	} else if (!run->killed) {
		run->killed = true;
		(void)syscall(SYS_pidfd_send_signal, run->pidfd, SIGKILL, NULL, 0);
	}
}

static void on_signal(struct run *run)
{
	struct signalfd_siginfo si;

	if (read(run->sig_fd, &si, sizeof(si)) != (ssize_t)sizeof(si))
		return;
	if (si.ssi_signo == SIGWINCH) {
		launcher_terminal_resize(&run->ctx.terminal, run->pty);
		return;
	}
	if (si.ssi_signo == SIGCONT)
		return; /* the loop follows the terminal (launcher_terminal_follow()) */
	if (run->reaped) {
		/* Nobody left to forward it to: the signal ends the delivery of pending output. */
		run->abandoned = true;
		return;
	}
	log_debug("Forwarding signal %u to the sandbox", si.ssi_signo);
	(void)syscall(SYS_pidfd_send_signal, run->pidfd, (int)si.ssi_signo, NULL, 0);
}

static void on_notify(struct run *run, short revents)
{
	struct launcher_seccomp_violation v;
	int r;

	if (revents & POLLIN) {
		r = launcher_seccomp_handle_notify(run->notify_fd, run->ctx.policy->seccomp, &v);
		if (r >= 0) {
			uint64_t count = record_violation(run->result, "seccomp", v.name);

			if (violation_is_audited(count))
				audit(run, "violation",
				      (struct al_audit_field[]){
					  AL_AUDIT_S("violation", "seccomp"),
					  AL_AUDIT_S("syscall", v.name),
					  AL_AUDIT_I("pid", v.pid),
					  AL_AUDIT_I("errno", v.error),
					  AL_AUDIT_I("count", (int64_t)count),
					  AL_AUDIT_S("contract", launcher_violation_contract(
								     "seccomp", v.name)),
				      },
				      6);
		}
	}
	if (revents & (POLLHUP | POLLERR | POLLNVAL))
		run->notify_fd = al_close(run->notify_fd);
}

/* Denials of the workspace filesystem (the daemon audited them already). */
static void on_fs_violation(struct run *run)
{
	char detail[sizeof(((struct launcher_violation *)NULL)->detail)];
	uint32_t n;

	while (launcher_workspace_read_violation(run->ws, detail, sizeof(detail), &n) >= 0)
		(void)record_violations(run->result, "fs", detail, n);
}

static void on_exit_of_init(struct run *run)
{
	siginfo_t si = {0};

	if (waitid(P_PIDFD, (id_t)run->pidfd, &si, WEXITED | WNOHANG) < 0 || si.si_pid == 0)
		return;
	run->reaped = true;
	/* The command is done: what is left is delivering its output, which no timeout cuts. */
	if (!run->timed_out)
		(void)arm_timer(run->timer_fd, 0);
	log_debug("Sandbox's init reaped after %" PRIu64 "us", launcher_now_usec() - run->t_last);
	run->init_status = si.si_code == CLD_EXITED ? W_EXITCODE(si.si_status, 0) : si.si_status;
	on_sync(run);
}

/* A helper (the workspace daemon, the egress proxy) ended while the sandbox runs: nothing
 * serves its files or its network any more, so the sandbox is killed, and the run fails. */
static void on_exit_of_helper(struct run *run, struct launcher_daemon *d, bool *died)
{
	int st;

	if (!launcher_daemon_reap(d))
		return;
	/* The workspace's usual end: the sandbox's init is exiting, its mount namespace went, and
	 * the connection with it: the daemon exits 0, maybe before init can be reaped. */
	st = d->status;
	if (run->reaped || run->got_status || (WIFEXITED(st) && WEXITSTATUS(st) == 0))
		return;
	*died = true;
	(void)syscall(SYS_pidfd_send_signal, run->pidfd, SIGKILL, NULL, 0);
}

/* Denials of the egress proxy (it audited them already). */
static void on_net_violation(struct run *run)
{
	char kind[sizeof(((struct launcher_violation *)NULL)->kind)];
	char detail[sizeof(((struct launcher_violation *)NULL)->detail)];
	uint32_t n;

	while (launcher_egress_read_violation(run->egress, kind, sizeof(kind), detail,
					      sizeof(detail), &n) >= 0)
		(void)record_violations(run->result, kind, detail, n);
}

static void supervise(struct run *run)
{
	struct launcher_session *session = run->ctx.opts->session;
	struct pollfd pfd[PFD_MAX + LAUNCHER_SESSION_PFDS];
	size_t n_pfd = PFD_MAX;
	int timeout;

	for (;;) {
		/* The output is delivered in full after the sandbox ends, however slowly it is
		 * read, unless the run timed out or airlock got a signal meanwhile: then what
		 * nobody read by now is dropped. */
		if (run->reaped &&
		    (run->timed_out || run->abandoned ||
		     (launcher_stream_done(&run->out) && launcher_stream_done(&run->err))))
			return;
		pfd[PFD_SYNC] =
		    (struct pollfd){.fd = run->reaped ? -1 : run->sync_fd, .events = POLLIN};
		pfd[PFD_PIDFD] =
		    (struct pollfd){.fd = run->reaped ? -1 : run->pidfd, .events = POLLIN};
		pfd[PFD_SIGNAL] = (struct pollfd){.fd = run->sig_fd, .events = POLLIN};
		pfd[PFD_TIMER] = (struct pollfd){.fd = run->timer_fd, .events = POLLIN};
		pfd[PFD_NOTIFY] = (struct pollfd){.fd = run->notify_fd, .events = POLLIN};
		launcher_stream_poll(&run->out, &pfd[PFD_OUT_IN], &pfd[PFD_OUT_OUT]);
		launcher_stream_poll(&run->err, &pfd[PFD_ERR_IN], &pfd[PFD_ERR_OUT]);
		launcher_stream_poll(&run->in, &pfd[PFD_IN_IN], &pfd[PFD_IN_OUT]);
		timeout = -1;
		if (run->pty >= 0 && !launcher_terminal_follow(&run->ctx.terminal)) {
			pfd[PFD_IN_IN].fd = -1; /* the foreground's input, until fg */
			timeout = LAUNCHER_TERMINAL_RECHECK_MSEC;
		}
		pfd[PFD_FS] =
		    (struct pollfd){.fd = launcher_daemon_pidfd(launcher_workspace_daemon(run->ws)),
				    .events = POLLIN};
		pfd[PFD_NET] = (struct pollfd){
		    .fd = launcher_daemon_pidfd(launcher_egress_daemon(run->egress)),
		    .events = POLLIN};
		pfd[PFD_NET_VIOLATION] = (struct pollfd){
		    .fd = launcher_egress_violations_fd(run->egress), .events = POLLIN};
		pfd[PFD_FS_VIOLATION] = (struct pollfd){
		    .fd = launcher_workspace_violations_fd(run->ws), .events = POLLIN};
		if (session)
			n_pfd = PFD_MAX + launcher_session_fill(session, pfd + PFD_MAX);
		if (poll(pfd, n_pfd, timeout) < 0) {
			if (errno == EINTR)
				continue;
			log_debug_errno(-errno, "poll() failed: %m");
			return;
		}
		launcher_stream_handle(&run->out, pfd[PFD_OUT_IN].revents,
				       pfd[PFD_OUT_OUT].revents);
		launcher_stream_handle(&run->err, pfd[PFD_ERR_IN].revents,
				       pfd[PFD_ERR_OUT].revents);
		launcher_stream_handle(&run->in, pfd[PFD_IN_IN].revents, pfd[PFD_IN_OUT].revents);
		launcher_terminal_pass_eof(&run->ctx.terminal, run->pty, &run->in);
		if (pfd[PFD_NOTIFY].revents)
			on_notify(run, pfd[PFD_NOTIFY].revents);
		if (pfd[PFD_FS_VIOLATION].revents)
			on_fs_violation(run);
		if (pfd[PFD_SYNC].revents)
			on_sync(run);
		if (pfd[PFD_SIGNAL].revents)
			on_signal(run);
		if (pfd[PFD_TIMER].revents)
			on_timer(run);
		if (pfd[PFD_PIDFD].revents)
			on_exit_of_init(run);
		if (pfd[PFD_NET_VIOLATION].revents)
			on_net_violation(run);
		if (pfd[PFD_FS].revents)
			on_exit_of_helper(run, launcher_workspace_daemon(run->ws), &run->fs_died);
		if (pfd[PFD_NET].revents)
			on_exit_of_helper(run, launcher_egress_daemon(run->egress), &run->net_died);
		if (session && !run->reaped) {
			struct launcher_session_view v = session_view(run);

			launcher_session_handle(session, pfd + PFD_MAX, &v);
			/* Ended (asked, TTL, owner gone): the sandbox goes with everything in it.
			 */
			if (launcher_session_ended(session) && !run->killed) {
				run->killed = true;
				(void)syscall(SYS_pidfd_send_signal, run->pidfd, SIGKILL, NULL, 0);
			}
		}
	}
}

static void finish(struct run *run)
{
	struct launcher_result *res = run->result;
	int st = run->init_status;
	/* The contracts the sandbox's violations touched, each once: at most the five kinds. */
	char *contracts[8] = {NULL};
	size_t n_contracts = 0;

	for (size_t i = 0; i < res->n_violations; i++) {
		size_t j = 0;

		while (j < n_contracts && !streq(contracts[j], res->violations[i].contract))
			j++;
		if (j == n_contracts && n_contracts < ELEMENTSOF(contracts) - 1)
			contracts[n_contracts++] = res->violations[i].contract;
	}
	res->prelude_failed = run->got_status && (run->status.flags & LAUNCHER_STATUS_PRELUDE);
	if (run->exec_failed) {
		res->exec_error = run->exec_error < 0 ? run->exec_error : -EIO;
		res->exit_code =
		    run->exec_error == -ENOENT ? LAUNCHER_EXIT_NOTFOUND : LAUNCHER_EXIT_NOEXEC;
	} else if (run->got_status) {
		res->exit_code = run->status.value;
		res->signal = run->status.signal;
	} else if (WIFSIGNALED(st)) {
		/* pid 1 was killed (the kernel's OOM killer, our SIGKILL after the grace): the
		 * command died with it. */
		res->signal = WTERMSIG(st);
		res->exit_code = 128 + res->signal;
	} else {
		/* pid 1 ended without a status: airlock's side of the sandbox failed. */
		res->exit_code = LAUNCHER_EXIT_FAILED;
	}
	res->timed_out = run->timed_out;
	if (run->timed_out)
		res->exit_code = LAUNCHER_EXIT_TIMEOUT;
	res->oom_killed = run->cgroup && launcher_cgroup_oom_killed(run->cgroup);
	/* Only SIGKILL, from outside the sandbox, ends its pid 1 against its will: by airlock
	 * after a timeout's grace, by the OOM killer, or by someone else, who should hear that
	 * this is not the command's own end. */
	if (!run->got_status && !run->exec_failed && WIFSIGNALED(st) && !run->killed &&
	    !res->oom_killed)
		log_warning("The sandbox's pid 1 was killed by signal %d from outside the sandbox; "
			    "its command (if it had started) ended with it",
			    WTERMSIG(st));
	audit(run, "exit",
	      (struct al_audit_field[]){
		  AL_AUDIT_I("exit_code", res->exit_code),
		  AL_AUDIT_I("signal", res->signal),
		  AL_AUDIT_B("timed_out", res->timed_out),
		  AL_AUDIT_B("oom_killed", res->oom_killed),
		  AL_AUDIT_I("violations", (int64_t)res->n_violations),
		  AL_AUDIT_SV("contracts", contracts),
	      },
	      6);
}

static int start_supervision(struct run *run, bool terminal, struct al_error *err)
{
	sigset_t mask;
	int r;

	r = signals_block(terminal, &mask);
	if (r >= 0) {
		run->sig_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
		if (run->sig_fd < 0)
			r = -errno;
	}
	if (r < 0)
		return al_error_set_errno(err, r, "Failed to set up signal handling");
	run->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (run->timer_fd < 0)
		return al_error_set_errno(err, -errno, "Failed to create the timeout timer");
	return 0;
}

/* A profile's contracts hold for the policy as it runs, after the run's own parameters (-m max,
 * --seccomp baseline, -a ...), and a policy of tier 3 or more runs only by its exact hash: the
 * one that runs must be admitted too, not only the file it came from. */
static int check_profile(const struct policy *p, const struct policy *base,
			 const struct launcher_options *opts, struct al_error *err)
{
	if (p->profile == POLICY_PROFILE_NONE)
		return 0;
	if (policy_profile_check(p, p->profile, err) < 0)
		return -EINVAL;
	if (p == base)
		return 0;
	return policy_check_admitted(
	    p, opts->admitted_path ? opts->admitted_path : LAUNCHER_ADMITTED_DEFAULT, err);
}

int launcher_run(const struct policy *p, const struct launcher_options *opts,
		 struct launcher_result *ret, struct al_error *err)
{
	struct run run = {
	    .result = ret,
	    .pidfd = -EBADF,
	    .sync_fd = -EBADF,
	    .sig_fd = -EBADF,
	    .timer_fd = -EBADF,
	    .notify_fd = -EBADF,
	    .netns_fd = -EBADF,
	    .fuse_fd = -EBADF,
	    .pty = -EBADF,
	};
	const struct policy *base;
	int r;

	*ret = (struct launcher_result){0};
	run.t_start = run.t_last = launcher_now_usec();
	base = opts->base_policy ? opts->base_policy : p;
	if (base->tier != p->tier || base->profile != p->profile)
		return al_error_set(err, -EINVAL,
				    "The run parameters changed the policy's tier or profile");
	r = policy_hash_hex(base, ret->policy_hash);
	if (r < 0)
		return al_error_set_errno(err, r, "Failed to hash the policy");
	r = policy_check_admitted(
	    base, opts->admitted_path ? opts->admitted_path : LAUNCHER_ADMITTED_DEFAULT, err);
	if (r < 0)
		return r;
	r = check_profile(p, base, opts, err);
	if (r < 0)
		return r;
	/* Signals are blocked before clone: one arriving during setup waits in the signalfd. */
	if (opts->terminal && opts->session)
		return al_error_set(err, -EINVAL,
				    "A session has no terminal: give one to its execs");
	r = start_supervision(&run, opts->terminal, err);
	if (r >= 0)
		r = prepare(&run, p, opts, err);
	if (r >= 0) {
		run_step(&run, "prepare");
		if (run.egress)
			r = start_network(&run, err);
	}
	if (r >= 0)
		r = spawn(&run, err);
	if (r >= 0)
		r = handshake(&run, err);
	/* A session's commands have timeouts of their own; the session, a TTL. */
	if (r >= 0 && p->resources.timeout_usec > 0 && !opts->session)
		r = arm_timer(run.timer_fd, p->resources.timeout_usec);
	if (r >= 0 && opts->session) {
		struct launcher_session_view v = session_view(&run);

		launcher_session_on_ready(opts->session, &v);
	}
	if (r < 0) {
		run_done(&run);
		return r;
	}
	supervise(&run);
	launcher_terminal_restore(&run.ctx.terminal);
	run_step(&run, "run");
	/* The sandbox is gone. The proxy decided and audited every connection as it came: it can
	 * go at once, and exit while the workspace daemon does (reaped in run_done()). Its
	 * violations stay queued in the socket. The kernel removes the netns and the veth pair
	 * after airlock has reported. */
	launcher_daemon_send_kill(launcher_egress_daemon(run.egress));
	/* With the sandbox's mount namespace went the FUSE connection, which ends the daemon; one
	 * that does not end in time is killed. */
	launcher_daemon_stop(launcher_workspace_daemon(run.ws), FS_STOP_GRACE_MSEC);
	on_fs_violation(&run);
	if (run.egress)
		on_net_violation(&run);
	if (run.fs_died || run.net_died) {
		int st = (run.fs_died ? launcher_workspace_daemon(run.ws)
				      : launcher_egress_daemon(run.egress))
			     ->status;

		run_done(&run);
		launcher_result_done(ret);
		return al_error_set(err, -ECONNABORTED,
				    "The %s died (%s %d); the sandbox was killed",
				    run.fs_died ? "workspace filesystem" : "egress proxy",
				    WIFSIGNALED(st) ? "signal" : "exit status",
				    WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	}
	finish(&run);
	run_done(&run);
	run_step(&run, "teardown");
	ret->duration_usec = launcher_now_usec() - run.t_start;
	return 0;
}

void launcher_result_done(struct launcher_result *r)
{
	free(r->out.data);
	free(r->err.data);
	free(r->output.data);
	free(r->violations);
	*r = (struct launcher_result){0};
}
