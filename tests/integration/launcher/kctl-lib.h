#pragma once

/* Helpers of the kctl integration tests (seccomp, landlock, cgroups, doctor against the real
 * kernel). A test exits 0 (pass), 1 (fail) or 77 (skip; a failure when AIRLOCK_TEST_MUST_RUN=1). */

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

#include "launcher/launcher-internal.h"

#define KCTL_SKIP 77

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

#define CHECK_EQ(a, b)                                                                             \
	do {                                                                                       \
		long long _a_ = (long long)(a), _b_ = (long long)(b);                              \
		if (_a_ != _b_) {                                                                  \
			fprintf(stderr, "%s:%d: check failed: %s == %s (%lld != %lld)\n",          \
				__FILE__, __LINE__, #a, #b, _a_, _b_);                             \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

/* Exits 77 (or 1 under AIRLOCK_TEST_MUST_RUN=1) with why. */
_noreturn_ void kctl_skip(const char *why);
void kctl_require_root(void);

/* What a supervised child did. */
struct kctl_run {
	int exit_code; /* or -1 */
	int signal;    /* or 0 */
	size_t n_violations;
	struct launcher_seccomp_violation violations[64];
};

/* Forks a child that sets no_new_privs, installs f, hands its listener to us and returns fn(arg)
 * as its exit status. We answer its notifications (as airlock does) until it ends. */
void kctl_supervise(const struct launcher_seccomp_filter *f, int (*fn)(void *arg), void *arg,
		    struct kctl_run *ret);

/* How many of run's violations name syscall. */
size_t kctl_count(const struct kctl_run *run, const char *syscall);

/* Waits for pid; returns its exit status, or 128 + signal. */
int kctl_wait(pid_t pid);
