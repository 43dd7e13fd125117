#pragma once

/* Internal interfaces of the launcher module: for launcher/ *.c and tests/unit/launcher only. */

#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/types.h>
#include <termios.h>

#include <linux/filter.h>

#include "broker/client.h"
#include "common/error.h"
#include "common/macro.h"
#include "launcher/launcher.h"
#include "policy/policy.h"

/* ---- seccomp.c (the only user of libseccomp) ---- */

/* A compiled filter: classic BPF, ready for seccomp(2). Denied calls that count as violations
 * use SECCOMP_RET_USER_NOTIF, so the supervisor (airlock's main process) sees each one, answers
 * with the errno from the level's table and records it. Calls that libraries routinely probe
 * (clone3 -> ENOSYS) return their errno directly and are not violations. Non-native ABIs (x32,
 * i386) are killed. */
struct launcher_seccomp_filter {
	struct sock_filter *insns;
	size_t n_insns;
	enum policy_seccomp level;
};

/* Builds the filter for a level with libseccomp and exports it. For root, the compiled program is
 * cached in /var/cache/airlock/seccomp (keyed by the rules, arch and libseccomp version), which no
 * sandbox may be given writable; other users compile every time. */
int launcher_seccomp_compile(enum policy_seccomp level, struct launcher_seccomp_filter *ret,
			     struct al_error *err);
void launcher_seccomp_filter_done(struct launcher_seccomp_filter *f);

/* Child side: installs the filter with SECCOMP_FILTER_FLAG_NEW_LISTENER (and TSYNC is not needed:
 * the child is single-threaded) and returns the notification fd. no_new_privs must already be
 * set. Async-signal-safe (raw syscalls only, no allocation). */
int launcher_seccomp_install(const struct launcher_seccomp_filter *f, int *ret_notify_fd);

struct launcher_seccomp_violation {
	pid_t pid; /* in airlock's pid namespace */
	int syscall_nr;
	char name[32]; /* syscall name, or "syscall_<nr>" */
	int error;     /* positive errno returned to the caller */
};

/* Supervisor side: receives one pending notification from notify_fd, answers it with the
 * level's errno (EPERM, or ENOSYS where libraries expect that) and describes it in *ret.
 * Returns 0, -ENOENT when the notification vanished (the caller died), or -errno. */
int launcher_seccomp_handle_notify(int notify_fd, enum policy_seccomp level,
				   struct launcher_seccomp_violation *ret);

/* ---- landlock.c (kernel interface, no library) ---- */

/* The landlock ABI version of the running kernel (>= 1), or -EOPNOTSUPP (disabled at boot),
 * -ENOSYS (not built in). */
int launcher_landlock_abi(void);

/* Child side, after pivot_root: restricts execution to the listed files (paths in the sandbox's
 * view) plus the ELF interpreters they need. Everything else keeps its rights (only
 * LANDLOCK_ACCESS_FS_EXECUTE is handled). A listed path that does not exist is an error naming it.
 * No allocation beyond the stack; fills err. */
int launcher_landlock_restrict_exec(char *const *paths, size_t n, struct al_error *err);

/* ---- cgroup.c (cgroup v2 and v1 hierarchies) ---- */

enum launcher_cgroup_version {
	LAUNCHER_CGROUP_NONE,
	LAUNCHER_CGROUP_V1,
	LAUNCHER_CGROUP_V2,
};

struct launcher_cgroup;

/* Creates the sandbox's cgroup(s) named after id under airlock's own place in the hierarchy,
 * and applies the limits of res (memory, pids, cpu quota/period, io weight). A memory or pids
 * limit that cannot be applied is an error (-EOPNOTSUPP/-EACCES, message names the field and
 * points at `airlock doctor`); io weight that the hierarchy cannot express is skipped and
 * reported by launcher_cgroup_warning(). Also removes stale cgroups of dead airlock runs. When
 * res sets no limit, no cgroup is created and the object is empty (attach does nothing).
 * Otherwise it forks a watcher (a child, "airlock-cgroups") that removes the cgroups if the
 * caller dies without launcher_cgroup_free(); launcher_cgroup_free() ends it. */
int launcher_cgroup_new(const char *id, const struct policy_resources *res,
			struct launcher_cgroup **ret, struct al_error *err);

/* Moves pid into the cgroup(s). */
int launcher_cgroup_attach(struct launcher_cgroup *cg, pid_t pid);

/* The memory controller's cgroup directory, or NULL when none was made (or cg is NULL). */
const char *launcher_cgroup_memory_dir(const struct launcher_cgroup *cg);
/* The memory a cgroup directory of the memory controller (v1 or v2) uses now and at its peak,
 * in bytes; UINT64_MAX where it cannot be read. */
void launcher_cgroup_memory_usage(const char *dir, uint64_t *ret_now, uint64_t *ret_peak);

/* True when the kernel OOM-killed a task of this cgroup. */
bool launcher_cgroup_oom_killed(struct launcher_cgroup *cg);

/* Kills every process left in the cgroup(s) and removes them, waiting briefly for the kernel to
 * let go. Accepts NULL. Returns NULL. */
struct launcher_cgroup *launcher_cgroup_free(struct launcher_cgroup *cg);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct launcher_cgroup *, launcher_cgroup_free);

enum launcher_cgroup_version launcher_cgroup_detect(void);

/* Removes cgroups left by airlock runs whose process is gone. Returns how many, or -errno. */
int launcher_cgroup_remove_stale(void);

/* The warning of launcher_cgroup_new(): a limit it skipped (an io weight the hierarchy cannot
 * express), or NULL. Owned by cg. */
const char *launcher_cgroup_warning(const struct launcher_cgroup *cg);

/* Where the cgroup code looks. The functions above use the running system; the unit tests point
 * these at a fake tree. */
struct launcher_cgroup_env {
	enum launcher_cgroup_version version;
	const char *root;	 /* the cgroup2 mount, "/sys/fs/cgroup" */
	const char *mountinfo;	 /* "/proc/self/mountinfo" */
	const char *self_cgroup; /* "/proc/self/cgroup" */
	uid_t euid;
};
int launcher_cgroup_new_env(const struct launcher_cgroup_env *env, const char *id,
			    const struct policy_resources *res, struct launcher_cgroup **ret,
			    struct al_error *err);
int launcher_cgroup_remove_stale_env(const struct launcher_cgroup_env *env);
enum launcher_cgroup_version launcher_cgroup_detect_at(const char *root, const char *mountinfo);

/* ---- doctor.c ---- */

/* A one-line hint for a clone()/unshare() with clone_flags that failed with error (negative or
 * positive errno): what blocks those namespaces on this machine, e.g. "user namespaces are
 * blocked by AppArmor (kernel.apparmor_restrict_unprivileged_userns=1); see airlock doctor".
 * NULL when there is nothing to add. The string is static. */
const char *launcher_doctor_hint(uint64_t clone_flags, int error);

/* ---- terminal.c: a pty for the command, airlock's own terminal meanwhile ---- */

/* What a new terminal starts with: the modes and size of the caller's. */
struct launcher_tty_spec {
	struct termios modes;
	struct winsize size; /* 80x24 when the caller has no terminal */
	bool has_modes;	     /* else the kernel's defaults */
};

struct launcher_terminal {
	int fd;		/* airlock's terminal with the modes (stdin), or -EBADF */
	int size_fd;	/* where the size comes from (stdin, stdout, stderr), or -EBADF */
	bool raw;	/* fd is in raw mode, to be restored */
	bool eof_typed; /* launcher_terminal_pass_eof() did */
	struct launcher_tty_spec spec;
};

/* Looks at airlock's stdin, stdout and stderr. */
void launcher_terminal_init(struct launcher_terminal *t);
/* Raw mode on stdin's terminal, when airlock is in its foreground process group: -errno. */
int launcher_terminal_raw(struct launcher_terminal *t);
/* Follows the shell's job control, before each wait of the relay: false while stdin's terminal
 * has another process group in its foreground (airlock runs in a shell's background: the
 * terminal's input and modes are the foreground's, and the caller polls again within
 * LAUNCHER_TERMINAL_RECHECK_MSEC, as no signal says when fg brings a running job forward);
 * once airlock is in the foreground, raw mode, if it is not on, and true. */
#define LAUNCHER_TERMINAL_RECHECK_MSEC 200
bool launcher_terminal_follow(struct launcher_terminal *t);
/* Undoes launcher_terminal_raw(), if it did anything. */
void launcher_terminal_restore(struct launcher_terminal *t);
/* After SIGWINCH: the terminal's new size, passed on to master (when >= 0). */
void launcher_terminal_resize(struct launcher_terminal *t, int master);
struct launcher_stream;
struct launcher_buffer;
/* The command's terminal came: out (closed first) relays master to stdout, or into capture;
 * in (closed first) relays input into it; t goes raw. -errno. */
int launcher_terminal_relay(struct launcher_terminal *t, int master, int input,
			    struct launcher_buffer *capture, struct launcher_stream *out,
			    struct launcher_stream *in);
/* After each turn of the relay: once the input copied into master through in ended (not a
 * terminal: one has no end), its EOF character is typed, once (twice over, as after a partial
 * line), which ends the input of a command that reads lines, as at a keyboard. */
void launcher_terminal_pass_eof(struct launcher_terminal *t, int master,
				const struct launcher_stream *in);
/* Sandbox side (pid 1, once the sandbox's /dev is in place): a new pty pair from /dev/ptmx that
 * starts as spec says: its master (close-on-exec), and the path of its /dev/pts/N into tty. */
int launcher_pty_open(const struct launcher_tty_spec *spec, int *ret_master, char tty[static 32],
		      struct al_error *err);

/* ---- launcher core: what airlock's process prepares before clone and the sandbox child reads.
 * Everything here is built before clone; the child only reads it (it is a copy-on-write image of
 * the parent), so the child needs no allocation to act on it. ---- */

#define LAUNCHER_OLDROOT "/oldroot"
#define LAUNCHER_NEWROOT "/newroot"

struct launcher_bind {
	char *source; /* canonical host path (realpath), checked by the parent */
	char *target; /* absolute path in the sandbox */
	bool read_only;
	bool is_dir;
	dev_t dev; /* what the parent checked: the child binds only this very object */
	ino_t ino;
};

struct launcher_context {
	const struct policy *policy;
	const struct launcher_options *opts;
	char id[32]; /* "<airlock pid>-<8 hex>" */
	bool
	    userns; /* not root, or root under a profile: the sandbox gets its own user namespace */
	uid_t uid;  /* airlock's euid/egid, mapped to itself inside (not root) */
	gid_t gid;
	/* Root under a profile: the host ids the sandbox's 0..65535 are (launcher/userns.c). */
	uint32_t root_map_uid, root_map_gid;
	char *image;		     /* rootfs folder, or NULL for the host's /usr */
	char **argv;		     /* a copy of the command: the child wipes main()'s argv */
	struct launcher_bind *binds; /* the policy's mounts */
	size_t n_binds;
	const struct policy_credential **secret_files; /* file credentials outside the workspace,
							* bound from the secrets mount */
	size_t n_secret_files;
	char **envp;		      /* the scrubbed environment of the command */
	char *etc_passwd, *etc_group; /* generated contents */
	char *ca_bundle;	      /* the sandbox's trust store when TLS is intercepted */
	bool egress;		      /* a veth pair to the egress proxy */
	int cap_last;		      /* /proc/sys/kernel/cap_last_cap */
	struct launcher_seccomp_filter seccomp;
	int stdout_w, stderr_w; /* write ends of the output pipes */
	int stdin_r; /* read end of the stdin pipe when airlock's stdin is a terminal, else -EBADF
		      */
	int sync_fd; /* the child's end of the sync socket */
	/* Without root, with egress: the proxy whose network the child builds, and its end of the
	 * socket the child hands the proxy's sockets over (see launcher_egress_build()). */
	struct launcher_egress *egress_build;
	int egress_fd;
	/* With SSH keys: the child's end of the socket it hands the proxy the agent's listening
	 * socket on, made in the sandbox's root (NETNS_SSH_AGENT_SOCKET). */
	int agent_fd;
	/* opts->terminal: airlock's terminal, whose modes and size the command's starts with. */
	struct launcher_terminal terminal;
};

/* ---- userns.c: root's sandbox under a profile ---- */

#define LAUNCHER_USERNS_ROOT_COUNT 65536
#define LAUNCHER_USERNS_ROOT_BASE UINT32_C(1879048192) /* 0x70000000 */
/* The start of root's subordinate range in the text of /etc/subuid or /etc/subgid: the first
 * line "root:BASE:COUNT" or "0:BASE:COUNT" with COUNT >= LAUNCHER_USERNS_ROOT_COUNT and a
 * BASE > 0 that leaves room for them. -ENOENT when there is none. Pure. */
int launcher_userns_subid_range(const char *text, size_t len, uint32_t *ret_base);
/* The host uid and gid the sandbox's id 0 is mapped to: root's subordinate ranges, or
 * LAUNCHER_USERNS_ROOT_BASE where there is none. */
void launcher_userns_root_map(uint32_t *ret_uid_base, uint32_t *ret_gid_base);

/* Resolves and opens the workspace and mounts, builds the environment and /etc files. On error
 * the context may be half-built: launcher_context_done() releases it either way. */
int launcher_context_init(struct launcher_context *ctx, const struct policy *p,
			  const struct launcher_options *opts, struct al_error *err);
void launcher_context_done(struct launcher_context *ctx);
/* Adds the env_var credentials to the command's environment: each one's surrogate, or its real
 * value when exposed, as the broker gives it. */
int launcher_env_add_credentials(struct launcher_context *ctx, struct broker_client *broker,
				 struct al_error *err);
/* Adds the egress proxy's variables (HTTP_PROXY and the like; the trust store's when ctx has a
 * CA bundle), except those the policy sets. */
int launcher_env_add_egress(struct launcher_context *ctx);

/* ---- sync: messages between airlock and the sandbox over a SOCK_SEQPACKET socketpair ---- */

enum launcher_sync_type {
	LAUNCHER_SYNC_GO = 1,	    /* parent -> child: id maps written, build the root */
	LAUNCHER_SYNC_ATTACHED,	    /* parent -> child: now in the sandbox's cgroup(s) */
	LAUNCHER_SYNC_READY,	    /* child -> parent: sandbox built (+ seccomp listener fd) */
	LAUNCHER_SYNC_ERROR,	    /* child -> parent: setup failed, see err */
	LAUNCHER_SYNC_EXEC_FAILED,  /* command -> parent: execve failed with value = errno */
	LAUNCHER_SYNC_STATUS,	    /* init -> parent: the command ended: value = code, signal,
				     * flags; + the result file's fd when there is one */
	LAUNCHER_SYNC_TERMINATE,    /* parent -> init: SIGTERM every process (timeout) */
	LAUNCHER_SYNC_FUSE,	    /* child -> parent: a FUSE connection to serve (+ its fd);
				     * value = LAUNCHER_FUSE_WORKSPACE or _SECRETS */
	LAUNCHER_SYNC_EXEC,	    /* parent -> session init: run exec id (+ fds: the request, see
				     * launcher_exec_payload, then stdin, stdout, stderr) */
	LAUNCHER_SYNC_EXEC_SIGNAL,  /* parent -> session init: signal (value) exec id's group */
	LAUNCHER_SYNC_CHECKPOINT,   /* parent -> session init: copy the workspace into the fd's
				     * folder, every process stopped; the answer has the same type,
				     * value 0 or -errno, flags = entries not copied, err */
	LAUNCHER_SYNC_RESTORE,	    /* the same, the other way: the workspace becomes the fd's */
	LAUNCHER_SYNC_EXEC_STARTED, /* session init -> parent: exec id runs (+ a pidfd of it) */
	LAUNCHER_SYNC_TERMINAL,	    /* child -> parent, session init -> parent (with the exec's
				     * id): the command's pty master (+ its fd) */
};

enum {
	LAUNCHER_FUSE_WORKSPACE,
	LAUNCHER_FUSE_SECRETS,
};

#define LAUNCHER_SYNC_STEPS 8
#define LAUNCHER_STATUS_PRELUDE 1u /* STATUS: the prelude failed, the command did not run */
#define LAUNCHER_EXEC_TERMINAL 1u  /* EXEC: the command gets a terminal, as tty says */
struct launcher_sync_msg {
	uint32_t type;
	int32_t value;
	int32_t signal;
	uint32_t flags;
	uint32_t id;   /* a session's exec: EXEC, EXEC_SIGNAL, and its EXEC_FAILED and STATUS */
	uint64_t size; /* CHECKPOINT: the bytes the copy may take (0: no limit) */
	uint32_t n_steps;
	struct launcher_step steps[LAUNCHER_SYNC_STEPS];
	struct launcher_tty_spec tty; /* EXEC with LAUNCHER_EXEC_TERMINAL */
	struct al_error err;
};

/* Sends m, and pass_fd with SCM_RIGHTS when >= 0. Async-signal-safe. */
int launcher_sync_send(int fd, const struct launcher_sync_msg *m, int pass_fd);
/* The same with n fds (at most AL_FDS_MAX), and receiving up to max of them into fds (the rest
 * -EBADF). */
int launcher_sync_send_fds(int fd, const struct launcher_sync_msg *m, const int *fds, size_t n);
int launcher_sync_recv_fds(int fd, struct launcher_sync_msg *m, int *fds, size_t max);
/* Receives one message (and a passed fd into *ret_fd when not NULL, else it is closed).
 * Returns 0, -EPIPE on EOF, -EBADMSG on a malformed message, or -errno. */
int launcher_sync_recv(int fd, struct launcher_sync_msg *m, int *ret_fd);
/* Judges the first answer of a process being set up (who: "sandbox", "egress proxy"), which
 * launcher_sync_recv() returned as r and m: 0 when it is of type want, else -errno with err
 * filled (the process's own error when it sent one; -ECHILD when it died). */
int launcher_sync_expect(int r, const struct launcher_sync_msg *m, uint32_t want, const char *who,
			 struct al_error *err);

uint64_t launcher_now_usec(void);

/* Whether the caller's stdin fd is copied into a pipe rather than handed to the sandbox: a
 * terminal (its modes, escape sequences past the capture, input typed after the end) and a file
 * or device (reopened through /proc/self/fd/0, it could be written: the sandbox may be its
 * owner). */
bool launcher_stdin_is_copied(int fd);

/* The result file init passed: into b (up to LAUNCHER_OUTPUT_MAX, else b->truncated) when it is
 * a regular file. */
void launcher_read_output(int fd, struct launcher_buffer *b);

/* ---- daemon.c: airlock's helper processes ---- */

struct launcher_daemon {
	pid_t pid;
	int pidfd;
	bool reaped;
	int status; /* a wait status, once reaped */
};

typedef void (*launcher_daemon_fn)(void *userdata) _noreturn_;

void launcher_daemon_init(struct launcher_daemon *d);
/* Forks fn(userdata) with stdin and stdout on /dev/null, no signal blocked, not dumpable, killed
 * when airlock dies, spared by the OOM killer. fn must _exit(). */
int launcher_daemon_start(struct launcher_daemon *d, launcher_daemon_fn fn, void *userdata);
/* The pidfd while it runs (readable when it ended), else -EBADF. */
int launcher_daemon_pidfd(const struct launcher_daemon *d);
/* Reaps it if it ended; returns whether it has. */
bool launcher_daemon_reap(struct launcher_daemon *d);
/* Waits up to grace_msec for it to end by itself, then kills it. */
void launcher_daemon_stop(struct launcher_daemon *d, int grace_msec);
/* Sends it SIGKILL (if it runs, and d is not NULL), and does not wait. */
void launcher_daemon_send_kill(struct launcher_daemon *d);
/* Kills and reaps it (if it runs), and closes the pidfd. */
void launcher_daemon_kill(struct launcher_daemon *d);

/* ---- egress.c: the veth pair and the egress proxy, airlock's side ---- */

#define PROXY_KEEP_FDS 96 /* the proxy's own fds: listeners, DNS, audit, broker, violations */

struct launcher_egress;

/* Prepares the proxy for p (nothing listens yet). */
int launcher_egress_new(const struct policy *p, struct al_audit *audit,
			struct broker_client *broker, const char *upstream_ca,
			struct launcher_egress **ret, struct al_error *err);
struct launcher_egress *launcher_egress_free(struct launcher_egress *eg);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct launcher_egress *, launcher_egress_free);
/* The sandbox's trust store (host CAs + the interception CA), or NULL when nothing is
 * intercepted. */
int launcher_egress_ca_bundle(const struct launcher_egress *eg, char **ret);
/* Starts the proxy's process, which makes the veth pair into sandbox_netns (borrowed: the
 * process has its own copy) and a proxy netns, and opens its sockets there. Without root,
 * sandbox_netns is -EBADF: the process waits for the sockets of launcher_egress_build(), and
 * *ret_build_fd is the socket the sandbox sends them on (the caller's to close once the sandbox
 * has it); else -EBADF. With SSH keys in the policy, *ret_agent_fd is the socket the sandbox's
 * first process sends the agent's listening socket on (launcher_rootfs_setup()), which the proxy
 * serves; else -EBADF. The proxy is ready only once it has it. */
int launcher_egress_start(struct launcher_egress *eg, int sandbox_netns, int *ret_build_fd,
			  int *ret_agent_fd, struct al_error *err);
/* Without root, in the sandbox's first process in its new user and network namespaces, before it
 * builds its root: makes the proxy netns, the veth pair and the proxy's sockets, and sends them
 * on sock (closed) to the proxy's process. The error is the proxy's too. */
int launcher_egress_build(struct launcher_egress *eg, int sock, struct al_error *err);
/* Waits for the proxy's process to be set up; its error, or -ECHILD when it died. */
int launcher_egress_wait_ready(struct launcher_egress *eg, struct al_error *err);
struct launcher_daemon *launcher_egress_daemon(struct launcher_egress *eg);
int launcher_egress_violations_fd(const struct launcher_egress *eg);
int launcher_egress_read_violation(struct launcher_egress *eg, char *kind, size_t kind_size,
				   char *detail, size_t size, uint32_t *ret_count);

/* ---- workspace.c: the FUSE workspace daemon, airlock's side ---- */

struct al_audit;
struct launcher_workspace;

/* Prepares the workspace filesystem for p before clone: checks the root, compiles the rules,
 * attaches to broker's session (NULL without credentials) for the credential files. Errors name
 * the policy field. */
int launcher_workspace_new(const struct policy *p, struct al_audit *audit,
			   struct broker_client *broker, struct launcher_workspace **ret,
			   struct al_error *err);
struct launcher_workspace *launcher_workspace_free(struct launcher_workspace *ws);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct launcher_workspace *, launcher_workspace_free);
/* The i-th credential served as a file outside the workspace, or NULL. */
const struct policy_credential *launcher_workspace_secret_file(const struct launcher_workspace *ws,
							       size_t i);
/* Forks the daemon serving the connections (the fds stay the caller's to close). */
int launcher_workspace_start(struct launcher_workspace *ws, int fuse_fd, int secrets_fd);
/* The daemon's process: its pid, a pidfd readable when it ended, its status once reaped. */
struct launcher_daemon *launcher_workspace_daemon(struct launcher_workspace *ws);
/* For the supervisor's poll: readable when it reported a denial. */
int launcher_workspace_violations_fd(const struct launcher_workspace *ws);
/* One denial report: "op path" into detail and how many denials it stands for. -EAGAIN when
 * none is waiting. */
int launcher_workspace_read_violation(struct launcher_workspace *ws, char *detail, size_t size,
				      uint32_t *ret_count);

/* ---- env.c ---- */

/* Builds the command's environment: the policy's env plus PATH, HOME, LANG and TERM (LANG and
 * TERM from airlock's own environment only when the policy does not set them and they look sane).
 * Nothing else from airlock's environment is passed on. */
int launcher_env_build(const struct policy *p, char ***ret);
char **launcher_strv_free(char **l);
DEFINE_TRIVIAL_CLEANUP_FUNC(char **, launcher_strv_free);

/* ---- rootfs.c (child side) ---- */

/* In the sandbox child, in its new mount namespace: builds the root on tmpfs, binds, /etc, /dev,
 * /proc, /tmp, the workspace and the policy's mounts, then pivot_root()s into it and makes / read
 * only. Fills err with the step and path that failed. */
int launcher_rootfs_setup(const struct launcher_context *ctx, struct al_error *err);

/* ---- loopback.c ---- */

/* Brings lo up in the caller's network namespace (a new one has it down), so that the sandbox's
 * own servers and clients on 127.0.0.1 work. Needs CAP_NET_ADMIN there. Returns 0 or -errno. */
int launcher_loopback_up(void);

/* ---- sandbox.c (child side) ---- */

/* The body of the cloned child: never returns. Builds the sandbox, reports READY or ERROR, then
 * becomes the sandbox's pid 1 (init) and forks the command. */
_noreturn_ void launcher_sandbox_main(const struct launcher_context *ctx);
struct launcher_spawn {
	char *const *argv; /* looked up on the sandbox's PATH */
	char *const *envp; /* NULL: the command's (ctx->envp) */
	const int *stdio;  /* NULL: init's own 0, 1, 2; else three fds */
	bool prelude;	   /* stdin /dev/null, stdout to stderr */
	bool new_group;	   /* a process group of its own */
	const char *tty;   /* a terminal: stdio and controlling terminal, in a new session */
};
/* spawn.c: starts a program in the workspace with a clean signal state, on a stack pid 1 keeps
 * (not async-signal-safe, one caller at a time). Returns 0 or the exec error as -errno. */
int launcher_sandbox_spawn(const struct launcher_context *ctx, const struct launcher_spawn *sp,
			   pid_t *ret);
/* The next place to look for file on the PATH list *path (advanced; NULL when done) in buf, as
 * execvp() does: "DIR/file", or file for an empty entry; buf is "" when it would not fit. False
 * when there is none left. Pure: no allocation, safe in a vfork child. */
bool launcher_spawn_path_next(const char **path, const char *file, char *buf, size_t size);

/* ---- init.c (the sandbox's pid 1) ---- */

/* Reaps every process of the pid namespace, forwards SIGINT/SIGTERM/SIGHUP/SIGQUIT/SIGUSR1/
 * SIGUSR2/SIGWINCH to the command, handles LAUNCHER_SYNC_TERMINATE, and when the command ends
 * sends LAUNCHER_SYNC_STATUS (with the result file, see launcher_options) and exits (which kills
 * whatever is left in the namespace). sigfd is a signalfd for the forwarded signals and SIGCHLD
 * (which are blocked). cmd is the command, or the prelude when ctx has one: init then starts the
 * command once the prelude exited 0. Until the command is started, init's stdio are the
 * command's; then /dev/null. tty: the command's terminal (launcher_spawn), or NULL. */
_noreturn_ void launcher_init_main(const struct launcher_context *ctx, int sync_fd, int sigfd,
				   pid_t cmd, const char *tty);

/* What init reports of a command (id: a session's, 0 for a run's): its end, with its wait status
 * and the result file's fd (or -EBADF); or that it could not start (r: the exec error, err: why
 * when it is not one), which answers as exit status 127 or 126. */
void launcher_init_send_status(int sync_fd, uint32_t id, int status, uint32_t flags, int fd);
void launcher_init_send_exec_failure(int sync_fd, uint32_t id, int r, const struct al_error *err,
				     uint32_t flags);

/* ---- init-session.c (a session's pid 1) ---- */

#define LAUNCHER_SESSION_EXECS_MAX 64 /* commands running at once in one session */
#define LAUNCHER_EXEC_STRINGS_MAX 65536

/* launcher_init_main() for a session: runs the commands of LAUNCHER_SYNC_EXEC messages, reports
 * each one's EXEC_STARTED (with a pidfd), STATUS (with its id and result file) or EXEC_FAILED
 * (with err), signals one command's process group on EXEC_SIGNAL, and stops or continues every
 * process on FREEZE. */
/* The request of an EXEC message, NUL-terminated strings: argc, argv...; envc, env... (over the
 * session's); the result file's path or ""; the command's own folder ("/tmp/NAME", made and
 * removed by pid 1) or ""; nfiles, then per file: "d" (into that folder) or "w" (into the
 * workspace), its relative path, "x" (executable) or "-", its length, and that many raw bytes;
 * preludec, prelude... (run first, as a run's prelude). */
_noreturn_ void launcher_init_session_main(const struct launcher_context *ctx, int sync_fd,
					   int sigfd);

/* ---- session.c: the supervisor's side, called from launcher_run()'s loop ---- */

enum {
	LAUNCHER_SESSION_EXEC = 1, /* + fds: payload, stdin, stdout, stderr */
	LAUNCHER_SESSION_STOP,
	LAUNCHER_SESSION_CHECKPOINT,
	LAUNCHER_SESSION_RESTORE,
	/* During an exec, on its connection: signo for the command (one of
	 * launcher_signals_forwarded()), as airlock passes a run's on. */
	LAUNCHER_SESSION_SIGNAL,
};

/* The signals passed on to the sandbox's command: SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and
 * SIGUSR2. */
void launcher_signals_forwarded(sigset_t *ret);

struct launcher_session_request {
	uint32_t op;
	uint32_t flags; /* EXEC: LAUNCHER_EXEC_TERMINAL */
	int32_t signo;	/* SIGNAL */
	uint64_t timeout_usec, kill_grace_usec;
	char name[LAUNCHER_CHECKPOINT_NAME_MAX];
	struct launcher_tty_spec tty; /* EXEC with a terminal: how it starts */
};

struct launcher_session_reply {
	int32_t error; /* 0 or -errno (err says why) */
	/* Before the reply to an exec with a terminal, one with this set and the terminal's
	 * master as its fd, once the command runs. */
	bool terminal;
	int32_t exit_code, signal, exec_error;
	bool timed_out, oom_killed, prelude_failed;
	uint64_t duration_usec;
	uint32_t n_violations;
	struct launcher_violation violations[LAUNCHER_SESSION_VIOLATIONS_MAX];
	char policy_hash[POLICY_HASH_HEX_SIZE];
	struct al_error err;
}; /* + the result file's fd, after an exec */

struct launcher_cgroup;
struct launcher_session_view {
	int sync_fd;
	pid_t pid; /* the sandbox's pid 1 */
	const struct launcher_context *ctx;
	const struct launcher_result *result;
	struct launcher_cgroup *cgroup;
};

#define LAUNCHER_SESSION_PFDS (3 + 64)
void launcher_session_on_ready(struct launcher_session *s, const struct launcher_session_view *v);
size_t launcher_session_fill(struct launcher_session *s, struct pollfd *pfd);
void launcher_session_handle(struct launcher_session *s, const struct pollfd *pfd,
			     const struct launcher_session_view *v);
/* Takes the messages of init that are the session's (true), with fd (borrowed). */
bool launcher_session_on_sync(struct launcher_session *s, const struct launcher_sync_msg *m, int fd,
			      const struct launcher_session_view *v);
bool launcher_session_ended(const struct launcher_session *s);

/* ---- tree.c ---- */

#define LAUNCHER_TREE_LINKS_MAX 128
struct launcher_tree_stats {
	uint32_t copied, failed, skipped; /* skipped: special files, other file systems */
	uint64_t budget, used;		  /* bytes the copy may take (0: no limit), taken */
	dev_t dev;			  /* the source's file system */
	bool refresh;	/* the source is the workspace mount: FUSEFS_IOC_REFRESH before each read */
	bool restoring; /* the destination may hold entries launcher_tree_empty() kept */
	struct {
		dev_t dev;
		ino_t ino;
		int fd; /* O_PATH of its copy */
	} links[LAUNCHER_TREE_LINKS_MAX];
	size_t n_links;
	char first[128]; /* the first failure: "name: error" */
};
/* Copies what src_dir holds into dst_dir (files, keeping holes and hard links; folders; links as
 * links; modes) within st->budget; what cannot be copied is counted in st, special files and other
 * file systems are skipped. Call with depth 0; then launcher_tree_stats_done(). */
void launcher_tree_copy(int src_dir, int dst_dir, int depth, struct launcher_tree_stats *st);
void launcher_tree_stats_done(struct launcher_tree_stats *st);
/* Empties dir (call with depth 0) for a restore: removes every entry the workspace lets go, by
 * fds, never through a link, not below another file system. An entry it refuses to remove (one
 * write-protected: the sandbox cannot have changed it) stays as it is: it is tried once a pass,
 * and a pass that removed nothing is the last, so a refusal is never retried in a loop.
 * launcher_tree_copy() with st->restoring then leaves such an entry be where it already is the
 * source's. *steps bounds the entries looked at. */
void launcher_tree_empty(int dir, int depth, size_t *steps);
/* Writes f (name: a path relative to root, without "." or ".." components) below root, making
 * its folders, never through a link, never into anything but a regular file. Fills err. */
int launcher_tree_place(int root, const struct launcher_file *f, struct al_error *err);

/* ---- stream.c: moving bytes between airlock's stdio and the sandbox without ever blocking ---- */

#define LAUNCHER_STREAM_CHUNK 65536

struct launcher_stream {
	int from, to;		 /* -EBADF once closed */
	bool owns_from, owns_to; /* close them when done (pipes and reopened fds of airlock's) */
	bool nonblocking;	 /* writes to 'to' never block (else: PIPE_BUF after POLLOUT) */
	bool use_send;		 /* 'to' is a socket: send(MSG_DONTWAIT) */
	struct launcher_buffer *capture; /* collect here instead of writing to 'to' */
	size_t capture_max;
	const char *data; /* the chunk being written: buf, or redacted->data */
	size_t off, len;
	/* With a broker: each chunk goes through its redaction of real values first. */
	struct broker_client *broker;
	unsigned broker_stream; /* 0 stdout, 1 stderr */
	struct broker_secret *redacted;
	bool eof; /* 'from' ended: 'to' closes once the last chunk is out */
	/* Last: launcher_stream_init() leaves it as it is (it is written before it is read). */
	char buf[LAUNCHER_STREAM_CHUNK];
};

/* from is read until EOF; what is read goes to 'to' (or into capture, up to capture_max, the rest
 * counted as truncated). When the reader of 'to' goes away (EPIPE), 'from' is closed, so the
 * writer on the other side gets EPIPE/SIGPIPE too, as it would without airlock in between. */
void launcher_stream_init(struct launcher_stream *s, int from, bool owns_from, int to, bool owns_to,
			  struct launcher_buffer *capture, size_t capture_max);
/* Redacts the stream's output through broker (borrowed) as stream 0 or 1 of its session. */
void launcher_stream_redact(struct launcher_stream *s, struct broker_client *broker,
			    unsigned stream);
/* Makes writes to 'to' non-blocking without touching the caller's file description (see
 * stream.c). Separate from init so that it can run while the sandbox is being set up. */
void launcher_stream_open_nonblocking(struct launcher_stream *s);
/* Fills the stream's two pollfds (either may be unused: fd -1). */
void launcher_stream_poll(const struct launcher_stream *s, struct pollfd *in, struct pollfd *out);
/* Acts on the events poll() returned for the two pollfds. */
void launcher_stream_handle(struct launcher_stream *s, short in_revents, short out_revents);
bool launcher_stream_done(const struct launcher_stream *s);
void launcher_stream_close(struct launcher_stream *s);
