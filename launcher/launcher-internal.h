#pragma once

/* Internal interfaces of the launcher module: for launcher/ *.c and tests/unit/launcher only. */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <linux/filter.h>

#include "common/error.h"
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

/* Builds the filter for a level with libseccomp and exports it. May cache the compiled program
 * (in this process, or on disk keyed by level, arch and libseccomp version). */
int launcher_seccomp_compile(enum policy_seccomp level, struct launcher_seccomp_filter *ret,
			     struct al_error *err);
void launcher_seccomp_filter_done(struct launcher_seccomp_filter *f);

/* Child side: installs the filter with SECCOMP_FILTER_FLAG_NEW_LISTENER (and TSYNC is not needed:
 * the child is single-threaded) and returns the notification fd. no_new_privs must already be
 * set. Async-signal-safe (raw syscalls only, no allocation). */
int launcher_seccomp_install(const struct launcher_seccomp_filter *f, int *ret_notify_fd);

struct launcher_seccomp_violation {
	pid_t pid;	 /* in airlock's pid namespace */
	int syscall_nr;
	char name[32];	 /* syscall name, or "syscall_<nr>" */
	int error;	 /* positive errno returned to the caller */
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
 * reported in *ret_warning (may be NULL). Also removes stale cgroups of dead airlock runs. */
int launcher_cgroup_new(const char *id, const struct policy_resources *res,
			struct launcher_cgroup **ret, struct al_error *err);

/* Moves pid into the cgroup(s). */
int launcher_cgroup_attach(struct launcher_cgroup *cg, pid_t pid);

/* True when the kernel OOM-killed a task of this cgroup. */
bool launcher_cgroup_oom_killed(struct launcher_cgroup *cg);

/* Kills every process left in the cgroup(s) and removes them, waiting briefly for the kernel to
 * let go. Accepts NULL. Returns NULL. */
struct launcher_cgroup *launcher_cgroup_free(struct launcher_cgroup *cg);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct launcher_cgroup *, launcher_cgroup_free);

enum launcher_cgroup_version launcher_cgroup_detect(void);

/* Removes cgroups left by airlock runs whose process is gone. Returns how many, or -errno. */
int launcher_cgroup_remove_stale(void);
