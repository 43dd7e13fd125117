#pragma once

/* Watchers: children that outlive their parent to do the teardown it may be killed before doing
 * (a cgroup to remove, a fresh workspace to delete). */

#include <stddef.h>
#include <sys/types.h>

/* Forks a watcher of this process. In the parent it returns 1 with the child's pid in *ret. In the
 * child it returns 0 once the parent has ended, by any death (its pidfd turned readable): the
 * child is then named name, in a session of its own (a terminal's ^C is for the parent), in /,
 * with stdio on /dev/null and no other fd of the parent's but the n_keep in keep, and no signal
 * blocked; it does the teardown and _exit()s. -errno (no pidfds, no fork): no watcher; the caller
 * leaves the teardown to whoever comes next. */
int al_watcher_fork(const char *name, int *keep, size_t n_keep, pid_t *ret);

/* Ends the watcher *pid (0: none) when the parent did the teardown itself: SIGKILL, reaped.
 * Sets *pid to 0. */
void al_watcher_stop(pid_t *pid);
