#pragma once

/* Composes and runs a sandbox for a policy. */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "broker/client.h"
#include "common/error.h"
#include "policy/policy.h"

#define LAUNCHER_EXIT_TIMEOUT 124
#define LAUNCHER_EXIT_FAILED 125
#define LAUNCHER_EXIT_NOEXEC 126
#define LAUNCHER_EXIT_NOTFOUND 127
#define LAUNCHER_CAPTURE_MAX (1024 * 1024)

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
};

struct launcher_violation {
	char kind[16];	 /* "seccomp", ... */
	char detail[64]; /* e.g. the syscall name */
	uint64_t count;
};

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
	uint64_t duration_usec;
	struct launcher_buffer out, err;
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

/* Prints a report of the kernel features airlock needs, each probed by trying it, with a one-line
 * fix for each missing one. Returns the number of missing required features. */
int launcher_doctor(FILE *out, bool json);
