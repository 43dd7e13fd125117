/* Fresh workspaces: an empty folder of this process's, served as /workspace to an exec or a
 * session that names none, and removed when it ends, by this process or, when it was killed, by
 * its watcher (common/watcher.h) or the next one made.
 *
 * They live in a folder of the caller's only (mode 0700) that no one else can make first: root's
 * /run/airlock-exec, the user's $XDG_RUNTIME_DIR/airlock-exec; else in $TMPDIR/airlock-exec-UID,
 * which another user may have made first: then in a folder of their own in $TMPDIR. Each base is
 * checked (the caller's own, 0700, not a link) before use. Each workspace ("PID-XXXXXX", after
 * this process) has a lock file beside it ("PID-XXXXXX.lock") that this process holds locked
 * (flock) while it lives: a workspace whose lock anyone can take is a dead run's, whatever pid
 * namespace either process is in (a pid tells nothing across namespaces), and the next one made
 * removes it. The sandbox cannot reach the lock file: it is outside the workspace. */

#define LOG_MODULE "agent"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent-internal.h"
#include "common/fd-util.h"
#include "common/log.h"
#include "common/path-util.h"
#include "common/watcher.h"

#define SCRATCH_PREFIX "airlock-exec-"
#define LOCK_SUFFIX ".lock"
/* How long a watcher keeps removing a workspace that files still appear in (a dying workspace
 * daemon's last write), in rounds of doubling sleeps from 1 ms: about 2 s in all. */
#define REMOVE_ROUNDS 11

/* Whether no one else can rename entries of the folder that holds path: it is this user's or
 * root's, and writable by no one else or sticky (/tmp). */
static bool parent_is_safe(const char *path)
{
	char parent[PATH_MAX], *slash;
	struct stat st;

	if ((size_t)snprintf(parent, sizeof(parent), "%s", path) >= sizeof(parent) ||
	    !(slash = strrchr(parent, '/')))
		return false;
	slash[slash == parent] = '\0';
	if (stat(parent, &st) < 0 || !S_ISDIR(st.st_mode))
		return false;
	if (st.st_uid != geteuid() && st.st_uid != 0)
		return false;
	return !(st.st_mode & (S_IWGRP | S_IWOTH)) || (st.st_mode & S_ISVTX);
}

/* Makes (or finds) base, a folder of the caller's only (mode 0700, never a link), in a folder
 * where no one else can swap it: no one else can plant anything where workspaces are made and
 * removed. */
static int scratch_base(const char *base, struct al_error *err)
{
	struct stat st;

	if (!parent_is_safe(base))
		return al_error_set(err, -EPERM,
				    "The folder of %s is writable by others: refusing to make "
				    "workspaces there",
				    base);
	if (mkdir(base, 0700) < 0 && errno != EEXIST)
		return al_error_set_errno(err, -errno, "Failed to create %s", base);
	if (lstat(base, &st) < 0)
		return al_error_set_errno(err, -errno, "Failed to look at %s", base);
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))
		return al_error_set(
		    err, -EPERM,
		    "%s is not a folder of this user's only (mode 0700): refusing to "
		    "make workspaces there",
		    base);
	return 0;
}

static bool is_lock_name(const char *name)
{
	size_t n = strlen(name), k = strlen(LOCK_SUFFIX);

	return n > k && streq(name + n - k, LOCK_SUFFIX);
}

/* Removes dir's folder name (dfd is dir's) when it is a folder of this user's. */
static void remove_own_folder(int dfd, const char *dir, const char *name)
{
	char path[PATH_MAX];
	struct stat st;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) &&
	    st.st_uid == geteuid() &&
	    (size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) < sizeof(path))
		al_path_remove_tree(path);
}

/* Removes the workspace whose lock file is name (in dir, dfd), if no one holds the lock. */
static void remove_if_unlocked(int dfd, const char *dir, const char *name)
{
	_cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	_cleanup_free_ char *folder = NULL;
	struct stat st;

	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    flock(fd, LOCK_EX | LOCK_NB) < 0)
		return;
	folder = strndup(name, strlen(name) - strlen(LOCK_SUFFIX));
	if (folder)
		remove_own_folder(dfd, dir, folder);
	/* Unlinked while locked: a maker that locked it after us sees it gone and starts again. */
	(void)unlinkat(dfd, name, 0);
}

/* Removes the fresh workspaces of runs whose airlock died, as cgroups are: this user's in dir
 * named prefix "PID-XXXXXX" whose lock is free. A folder without a lock file is one of an airlock
 * from before the locks: it goes when its pid names no process here. */
static void remove_stale_scratch(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	char lock[NAME_MAX + 1];

	if (!d)
		return;
	for (struct dirent *de; (de = readdir(d));) {
		const char *rest = startswith(de->d_name, prefix);
		char *end = NULL;
		long pid = rest ? strtol(rest, &end, 10) : 0;
		struct stat st;

		if (pid <= 0 || *end != '-')
			continue;
		if (is_lock_name(de->d_name)) {
			remove_if_unlocked(dirfd(d), dir, de->d_name);
			continue;
		}
		if ((size_t)snprintf(lock, sizeof(lock), "%s" LOCK_SUFFIX, de->d_name) >=
			sizeof(lock) ||
		    fstatat(dirfd(d), lock, &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT)
			continue;
		if (kill((pid_t)pid, 0) < 0 && errno == ESRCH)
			remove_own_folder(dirfd(d), dir, de->d_name);
	}
	(void)closedir(d);
}

/* Makes dir/<prefix>PID-XXXXXX with its lock file, locked in *ret_lock. The lock file comes
 * first: a sweep that takes its lock before we do unlinks it, which we see (no link left), and we
 * start again with another name. */
static int make_locked(const char *dir, const char *prefix, char **ret_path, int *ret_lock)
{
	for (int attempt = 0; attempt < 3; attempt++) {
		_cleanup_close_ int fd = -EBADF;
		_cleanup_free_ char *path = NULL;
		struct stat st;
		size_t n;
		int r;

		if (asprintf(&path, "%s/%s%d-XXXXXX" LOCK_SUFFIX, dir, prefix, (int)getpid()) < 0) {
			path = NULL;
			return -ENOMEM;
		}
		fd = mkostemps(path, (int)strlen(LOCK_SUFFIX), O_CLOEXEC);
		if (fd < 0)
			return -errno;
		if (flock(fd, LOCK_EX | LOCK_NB) < 0 || fstat(fd, &st) < 0 || st.st_nlink == 0)
			continue;
		n = strlen(path) - strlen(LOCK_SUFFIX);
		path[n] = '\0';
		if (mkdir(path, 0700) < 0) {
			r = -errno;
			path[n] = '.';
			(void)unlink(path);
			return r;
		}
		*ret_path = TAKE_PTR(path);
		*ret_lock = TAKE_FD(fd);
		return 0;
	}
	return -EAGAIN;
}

/* A fresh workspace "PID-XXXXXX" in kind's scratch folder. */
static int make_scratch_in(struct agent_scratch *s, enum al_state_kind kind, struct al_error *err)
{
	char base[PATH_MAX];
	int r = al_state_dir(kind, base, sizeof(base));

	if (r < 0)
		return al_error_set_errno(err, r, "No folder for exec's workspaces");
	/* A concurrent exec may remove the shared base between our mkdir and our lock file. */
	for (int attempt = 0; attempt < 3; attempt++) {
		r = scratch_base(base, err);
		if (r < 0)
			return r;
		remove_stale_scratch(base, "");
		r = make_locked(base, "", &s->path, &s->lock_fd);
		if (r >= 0) {
			s->in_base = true;
			return 0;
		}
		if (r != -ENOENT)
			break;
	}
	return al_error_set_errno(err, r, "Failed to create a workspace in %s", base);
}

/* The last resort, when the shared folders are not this user's (someone else made
 * $TMPDIR/airlock-exec-UID first): a folder of its own in $TMPDIR, removed afterwards. */
static int make_scratch_alone(struct agent_scratch *s, struct al_error *err)
{
	const char *t = getenv("TMPDIR");
	char prefix[64], probe[PATH_MAX];
	int r;

	if (!t || t[0] != '/')
		t = "/tmp";
	(void)snprintf(prefix, sizeof(prefix), SCRATCH_PREFIX "%u-", (unsigned)geteuid());
	remove_stale_scratch(t, prefix);
	(void)snprintf(probe, sizeof(probe), "%s/%s", t, prefix);
	r = parent_is_safe(probe) ? make_locked(t, prefix, &s->path, &s->lock_fd) : -EPERM;
	if (r < 0)
		return al_error_set_errno(err, r, "Failed to create a workspace in %s", t);
	return 0;
}

/* Removes the workspace path and its lock file (and its base, when that was its last
 * workspace). */
static void remove_scratch(char *path, bool in_base)
{
	char *slash = strrchr(path, '/'), lock[PATH_MAX];

	al_path_remove_tree(path);
	if ((size_t)snprintf(lock, sizeof(lock), "%s" LOCK_SUFFIX, path) < sizeof(lock))
		(void)unlink(lock);
	if (in_base && slash) {
		*slash = '\0';
		(void)rmdir(path);
		*slash = '/';
	}
}

/* The watcher's removal: this process is dead, but the workspace's daemon (killed with it) may
 * finish a last write after the tree was walked; it is walked again until the folder is gone. */
_noreturn_ static void watcher_remove(char *path, bool in_base)
{
	struct timespec delay = {.tv_nsec = 1000000};
	struct stat st;

	for (int round = 0; round < REMOVE_ROUNDS; round++) {
		remove_scratch(path, in_base);
		if (lstat(path, &st) < 0 && errno == ENOENT)
			break;
		(void)nanosleep(&delay, NULL);
		delay.tv_nsec = MIN(delay.tv_nsec * 2, 999999999L);
	}
	_exit(EXIT_SUCCESS);
}

/* Forks the watcher that removes s if this process is killed. Without one, the next workspace
 * made removes it: not an error. */
static void scratch_watch(struct agent_scratch *s)
{
	pid_t pid;
	int r = al_watcher_fork("airlock-scratch", NULL, 0, &pid);

	if (r < 0)
		log_debug_errno(r, "No watcher for the workspace %s: %m", s->path);
	else if (r == 0)
		watcher_remove(s->path, s->in_base);
	else
		s->watcher = pid;
}

int agent_scratch_make(struct agent_scratch *s, struct al_error *err)
{
	static const enum al_state_kind kinds[] = {AL_STATE_SCRATCH, AL_STATE_SCRATCH_TMP};
	struct al_error why = {0};
	int r = -ENOENT;

	*s = (struct agent_scratch){.lock_fd = -EBADF};
	for (size_t i = 0; i < ELEMENTSOF(kinds); i++) {
		r = make_scratch_in(s, kinds[i], &why);
		if (r >= 0 || r == -ENOMEM)
			break;
		log_debug("%s", why.msg);
	}
	if (r < 0 && r != -ENOMEM) {
		r = make_scratch_alone(s, err);
		if (r < 0)
			al_error_prefix(err, "%s", why.msg);
	}
	if (r < 0)
		return r;
	scratch_watch(s);
	return 0;
}

void agent_scratch_remove(struct agent_scratch *s)
{
	/* The watcher dies while the tree is removed, and is reaped after: its exit is not waited
	 * for on the way (it only waits for this process's end, so it cannot act meanwhile). */
	if (s->watcher > 0)
		(void)kill(s->watcher, SIGKILL);
	if (s->path) {
		remove_scratch(s->path, s->in_base);
		s->lock_fd = al_close(s->lock_fd);
		free(s->path);
		s->path = NULL;
	}
	al_watcher_stop(&s->watcher);
}
