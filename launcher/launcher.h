#pragma once

/* Composes and runs a sandbox for a policy. */

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "broker/client.h"
#include "common/error.h"
#include "fusefs/fusefs.h"
#include "policy/policy.h"

#define LAUNCHER_EXIT_TIMEOUT 124
#define LAUNCHER_EXIT_FAILED 125
#define LAUNCHER_EXIT_NOEXEC 126
#define LAUNCHER_EXIT_NOTFOUND 127
#define LAUNCHER_CAPTURE_MAX (1024 * 1024)
#define LAUNCHER_PTYS_MAX 128		  /* ptys a sandbox may hold at once (its devpts' max) */
#define LAUNCHER_OUTPUT_MAX (1024 * 1024) /* bytes of the result file kept */
#define LAUNCHER_FILES_DIR "/run/airlock" /* where launcher_options.files appear */
#define LAUNCHER_DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define LAUNCHER_ADMITTED_DEFAULT "/etc/airlock/admitted"

/* A file airlock places, read-only, in the sandbox's own root at LAUNCHER_FILES_DIR/name (code to
 * run, its input): nothing is written on the host. name is one path component. */
struct launcher_file {
	const char *name;
	const char *data;
	size_t len;
	bool executable;
};

struct launcher_options {
	char *const *argv; /* command to run; argv[0] looked up on the sandbox's PATH */
	bool capture;	   /* capture stdout/stderr for the result instead of streaming them */
	uint64_t kill_grace_usec; /* between SIGTERM and SIGKILL on timeout; 0 = at once */
	const char *audit_path;	  /* overrides policy->audit when set */
	bool timing;		  /* record per-step timings in the result */
	const char *upstream_ca;  /* CA file upstream TLS is verified against (NULL: host's) */
	/* Where the policy's credentials come from: the daemon's socket or the embedded broker
	 * with its vault (audit and label are the run's own). */
	struct broker_client_options broker;
	const struct launcher_file *files;
	size_t n_files;
	/* Files written into the workspace by the sandbox itself before the command starts (name:
	 * a relative path), so that the policy's workspace rules apply to them as to the command;
	 * one it may not write fails the launch. */
	const struct launcher_file *workspace_files;
	size_t n_workspace_files;
	/* Run first in the same sandbox (a compiler, say): when it does not exit 0, argv is not
	 * run and the result is its status, with prelude_failed set. NULL: none. */
	char *const *prelude;
	/* A path in the sandbox the command may write (in /tmp): once it ended, what the file
	 * holds (up to LAUNCHER_OUTPUT_MAX bytes) is the result's output. NULL: none. */
	const char *result_path;
	/* Policies of tier 3 and up run only when their hash is listed in this file (NULL:
	 * LAUNCHER_ADMITTED_DEFAULT); see policy_check_admitted(). */
	const char *admitted_path;
	/* The policy as its author wrote it, when the caller added run parameters of its own (a
	 * request's timeout, memory, env): its hash is the one admitted, audited and reported.
	 * NULL: the policy run. */
	const struct policy *base_policy;
	/* A persistent session (launcher_session_new()): argv is not run; commands come through the
	 * session's control socket until it ends. NULL: a run. */
	struct launcher_session *session;
	/* > 0: the command's stdin (borrowed), instead of airlock's own. */
	int stdin_fd;
	/* The command gets a terminal of its own (a pty pair of the sandbox's) as its stdio and
	 * controlling terminal; airlock relays it to its stdio (stdin's terminal in raw mode), or
	 * into the capture. Not with a session. */
	bool terminal;
};

struct launcher_violation {
	char kind[16];	   /* "seccomp", ... */
	char detail[64];   /* e.g. the syscall name */
	char contract[16]; /* launcher_violation_contract() */
	uint64_t count;
};

/* The containment contract (the capsule's violation kind) a violation of kind touched:
 * "namespace" (a denied unshare, setns, clone of namespaces or mount call), "seccomp" (any other
 * denied call), "egress" (net, dns, credential), "workspace" (fs) or "executable" (exec). Pure;
 * static strings. */
const char *launcher_violation_contract(const char *kind, const char *detail);

struct launcher_buffer {
	char *data;
	size_t len;
	bool truncated;
};

#define LAUNCHER_STEP_MAX 16
struct launcher_step {
	char name[16];
	uint64_t usec;
};

struct launcher_result {
	int exit_code;	/* what `airlock run` exits with */
	int signal;	/* the signal that killed the command, or 0 */
	int exec_error; /* -errno when the command could not be executed, else 0 */
	bool timed_out;
	bool oom_killed;
	bool prelude_failed; /* the status is the prelude's: the command did not run */
	uint64_t duration_usec;
	struct launcher_buffer out, err;
	struct launcher_buffer output; /* the result file's bytes; data NULL when it was absent */
	struct launcher_violation *violations;
	size_t n_violations;
	struct launcher_step steps[LAUNCHER_STEP_MAX];
	size_t n_steps;
	char policy_hash[POLICY_HASH_HEX_SIZE];
};

void launcher_result_done(struct launcher_result *r);

/* Runs opts->argv under policy p. Returns 0 when the command ran (its status is in ret->exit_code,
 * which may be 126/127 when it could not be executed), or -errno when airlock failed or refused
 * before or while running it; err then has one line naming the problem. Never runs the command
 * unsandboxed. */
int launcher_run(const struct policy *p, const struct launcher_options *opts,
		 struct launcher_result *ret, struct al_error *err);

/* ---- persistent sessions (session.c, session-client.c) ---- */

#define LAUNCHER_SESSION_ID_MAX 32
#define LAUNCHER_CHECKPOINT_NAME_MAX 64
#define LAUNCHER_SESSION_VIOLATIONS_MAX 32

struct launcher_session;

struct launcher_session_options {
	uint64_t ttl_usec; /* the session ends this long after it started; 0: never */
	pid_t owner;	   /* the session ends when this process does; 0: none */
	int ready_fd;	   /* gets the session's id once it serves, then is closed (owned) */
};

/* Picks an id and makes the session's state folder (its control socket, info, checkpoints) under
 * launcher_session_base(), removing the folders of sessions whose supervisor died. The sandbox
 * is made by launcher_run() with options.session set; it returns when the session ended. */
int launcher_session_new(const struct launcher_session_options *o, struct launcher_session **ret,
			 struct al_error *err);
/* Removes the state folder (with its checkpoints). Accepts NULL; returns NULL. */
struct launcher_session *launcher_session_free(struct launcher_session *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct launcher_session *, launcher_session_free);
const char *launcher_session_id(const struct launcher_session *s);
/* The session could not start: message goes to the ready fd (after a '!'), if it is still open. */
void launcher_session_fail(struct launcher_session *s, const char *message);

/* Where sessions keep their state: al_state_dir(AL_STATE_SESSIONS), i.e.
 * /var/lib/airlock/sessions for root, else $XDG_STATE_HOME/airlock/sessions or
 * ~/.local/state/airlock/sessions. */
int launcher_session_base(char *buf, size_t size);
bool launcher_session_id_is_valid(const char *id);
void launcher_session_remove_stale(const char *base);
int launcher_session_probe(const char *dir);

struct launcher_session_info {
	char id[LAUNCHER_SESSION_ID_MAX];
	pid_t pid;		    /* the supervisor */
	long long started, expires; /* seconds since the epoch; expires 0: no TTL */
	char policy_hash[POLICY_HASH_HEX_SIZE];
	char workspace[PATH_MAX];
	pid_t owner;		      /* the session ends with it; 0: none */
	pid_t init;		      /* the sandbox's pid 1, as the host sees it; 0: unknown */
	char memory_cgroup[PATH_MAX]; /* its memory cgroup's directory; "": none */
};
int launcher_session_read_info(const char *dir, struct launcher_session_info *ret);

#define LAUNCHER_USAGE_UNKNOWN UINT64_MAX
/* What a session uses now, each LAUNCHER_USAGE_UNKNOWN where it cannot be told. */
struct launcher_session_usage {
	uint64_t cpu_usec;	      /* every process it ran, ended or still running */
	uint64_t memory, memory_peak; /* bytes, as its memory cgroup counts them */
	uint64_t workspace;	      /* bytes allocated in its workspace folder */
	bool workspace_partial;	      /* the count stopped at LAUNCHER_USAGE_ENTRIES_MAX */
};
#define LAUNCHER_USAGE_ENTRIES_MAX 1000000
void launcher_session_usage(const struct launcher_session_info *info,
			    struct launcher_session_usage *ret);
int launcher_session_info_of(const char *id, struct launcher_session_info *ret,
			     struct al_error *err);
/* The session's policy (as it was started with), for planning requests against it. */
int launcher_session_policy(const char *id, struct policy **ret, struct al_error *err);

/* A command for a session (`airlock session exec`). */
struct launcher_session_exec {
	char *const *argv;
	char *const *env; /* NAME=VALUE pairs over the session's environment, or NULL */
	int stdin_fd;	  /* the command's stdin (borrowed); < 0: /dev/null */
	/* A terminal of its own, as launcher_options.terminal: stdin_fd's input goes into it,
	 * its output to stdout (or the capture), and the caller's terminal (stdin's) is raw
	 * meanwhile. */
	bool terminal;
	uint64_t timeout_usec; /* 0: none */
	uint64_t kill_grace_usec;
	const char *result_path; /* as launcher_options.result_path, or NULL */
	bool capture;		 /* into the result (1 MiB each) instead of airlock's stdout/err */
	/* A folder "/tmp/NAME" the session's pid 1 makes for this command and removes at its
	 * end, with files (name: relative to it) in it; NULL: none. */
	const char *dir;
	const struct launcher_file *files;
	size_t n_files;
	/* Files written into the workspace first, as launcher_options.workspace_files. */
	const struct launcher_file *workspace_files;
	size_t n_workspace_files;
	char *const *prelude; /* as launcher_options.prelude, or NULL */
	/* For a caller that is one thread of a service: this process's signals are its own (none
	 * is passed on to the command; not with terminal), and when cancel_fd's peer hangs up (a
	 * client's connection: POLLRDHUP), the command is killed and -ECANCELED returned. */
	bool in_thread;
	int cancel_fd; /* with in_thread; < 0: none */
};

/* Runs x in session id and waits for its end: 0 with the result (exit_code, signal, timed_out,
 * oom_killed, duration, output, the violations seen meanwhile, policy_hash), or -errno with err
 * (-ENOENT: no such session). */
int launcher_session_exec(const char *id, const struct launcher_session_exec *x,
			  struct launcher_result *ret, struct al_error *err);
/* The session's workspace as its sandbox sees it (its workspace filesystem, at the policy's
 * workspace.mount), opened as a folder into ret: every access through it is one of the
 * workspace's, under its rules, quota and audit. -ENOENT: no such session (or no sandbox). */
int launcher_session_workspace(const char *id, int *ret, struct al_error *err);
/* Stops a session: asks its supervisor, else (it does not answer) kills it and removes its
 * state. */
int launcher_session_stop(const char *id, struct al_error *err);
/* A consistent copy of the session's workspace under name (replacing one of that name), and the
 * workspace made that copy again. */
int launcher_session_checkpoint(const char *id, const char *name, struct al_error *err);
int launcher_session_restore(const char *id, const char *name, struct al_error *err);

/* What this machine can enforce, each probed by trying it (as launcher_doctor() does). */
struct launcher_capabilities {
	bool user_ns, mount_ns, pid_ns, net_ns, ipc_ns, uts_ns, cgroup_ns;
	bool seccomp;	  /* filters with user notification (violations are seen) */
	int landlock_abi; /* 0: no landlock (no "executables" allow list) */
	int cgroup_version;
	char cgroup_controllers[256]; /* space-separated */
	bool cgroup_limits;	      /* memory and pids limits can be applied */
	bool fuse;
	struct fusefs_features fs; /* the workspace's transport and passthrough, and why */
	bool network_policy;	   /* egress rules: veth pair, proxy netns (needs root) */
	bool tls_interception;	   /* credential swap inside HTTPS */
	/* linux-ns-v1 can be enforced for this user: all four namespaces (root's user namespace
	 * too), seccomp, landlock, and memory, pids, cpu and io cgroup limits */
	bool profile_linux_ns_v1;
	int missing; /* required features that are missing: nothing runs */
};
void launcher_capabilities(struct launcher_capabilities *ret);

/* Prints a report of the kernel features airlock needs, each probed by trying it, with a one-line
 * fix for each missing one. Returns the number of missing required features. */
int launcher_doctor(FILE *out, bool json);
