/* Writes to the files git reads settings or paths from (FUSEFS_ACCESS_CHECKED: .git/config,
 * .gitmodules, a ".git" file, ...). Such a file is never written in place: a write handle of it
 * writes an unnamed copy (O_TMPFILE) that the daemon alone holds once the handle is released,
 * and a rename onto it copies the source into such a file. The daemon then reads the copy,
 * checks it (fusefs_rules_check_content()) and only then gives it the name, atomically (a link
 * under a temporary name, renamed over the old one). What is checked is what the name gets:
 * nobody in the sandbox holds an fd, a mapping or a second name of the new inode, and the
 * sandbox can make none (the name refuses opens for writing in place and links). */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/fd-util.h"
#include "fusefs/fusefs-internal.h"

#define GUARD_MAX (1024 * 1024) /* larger than any config git writes; more is refused */
#define GUARD_DETAIL_MAX 128	/* struct fusefs_violation's path */

int fusefs_guard_stage(struct fusefs *fs, int dir_fd, int src_fd, uid_t uid, gid_t gid, mode_t mode)
{
	_cleanup_close_ int fd = -EBADF;
	char buf[16384];
	size_t total = 0;
	ssize_t n;

	fd = openat(dir_fd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, mode & 0777);
	if (fd < 0)
		return errno == EOPNOTSUPP || errno == EISDIR ? -EACCES : -errno;
	if (fs->euid == 0 && fchown(fd, uid, gid) < 0)
		return -errno;
	while (src_fd >= 0 && total <= GUARD_MAX) {
		n = pread(src_fd, buf, sizeof(buf), (off_t)total);
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		if (pwrite(fd, buf, (size_t)n, (off_t)total) != n)
			return -EIO;
		total += (size_t)n;
	}
	return TAKE_FD(fd);
}

/* Reports a refusal with what was refused after the path, keeping the end when it is long. */
static int guard_deny(struct fusefs *fs, pid_t pid, const char *op, const char *path,
		      const char *why)
{
	char detail[FUSEFS_PATH_MAX + 256];
	size_t l;

	(void)snprintf(detail, sizeof(detail), "%s: %s", path, why);
	l = strlen(detail);
	return fusefs_deny(fs, pid, op,
			   l < GUARD_DETAIL_MAX ? detail : detail + l - (GUARD_DETAIL_MAX - 1),
			   -EACCES);
}

/* The folder of path (workspace-relative, no link on its way: fusefs_path() names real
 * folders), beneath the root; its last component into ret_name. */
static int open_parent(struct fusefs *fs, const char *path, const char **ret_name)
{
	struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
			       .resolve =
				   RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
	char dir[FUSEFS_PATH_MAX];
	const char *slash = strrchr(path, '/');
	int fd;

	(void)snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) : 1,
		       slash ? path : ".");
	fd = (int)syscall(SYS_openat2, fs->root_fd, dir, &how, sizeof(how));
	if (fd < 0)
		return -errno;
	*ret_name = slash ? slash + 1 : path;
	return fd;
}

/* Gives fd's inode the name at dir_fd, replacing what is there (or -EEXIST with noreplace). */
static int link_over(struct fusefs *fs, int fd, int dir_fd, const char *name, bool noreplace)
{
	char proc[32], tmp[NAME_MAX + 1];
	struct stat old, st;
	uint64_t rnd;
	bool had_old;
	int r;

	(void)snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	for (unsigned tries = 0;; tries++) {
		if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
			return -EIO;
		(void)snprintf(tmp, sizeof(tmp), ".airlock-git-%016llx", (unsigned long long)rnd);
		r = RET_NERRNO(linkat(AT_FDCWD, proc, dir_fd, tmp, AT_SYMLINK_FOLLOW));
		if (r != -EEXIST || tries >= 8)
			break;
	}
	if (r < 0)
		return r;
	had_old = fstatat(dir_fd, name, &old, AT_SYMLINK_NOFOLLOW) == 0;
	r = RET_NERRNO(renameat2(dir_fd, tmp, dir_fd, name, noreplace ? RENAME_NOREPLACE : 0));
	if (r < 0) {
		(void)unlinkat(dir_fd, tmp, 0);
		return r;
	}
	if (had_old)
		fusefs_inode_unlinked(fs, &old);
	if (fstat(fd, &st) == 0)
		(void)fusefs_quota_charge(fs, (int64_t)fusefs_charged_blocks(&st) * 512, false);
	return 0;
}

int fusefs_guard_check(struct fusefs *fs, const char *path, int fd, char *why, size_t size)
{
	_cleanup_free_ char *text = NULL;
	struct stat st;
	ssize_t n;

	if (!why || size == 0) {
		static __thread char scratch[256];

		why = scratch;
		size = sizeof(scratch);
	}
	why[0] = '\0';
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || st.st_size > GUARD_MAX) {
		(void)snprintf(why, size, "too large");
		return -EACCES;
	}
	text = malloc((size_t)st.st_size + 1);
	if (!text)
		return -ENOMEM;
	n = pread(fd, text, (size_t)st.st_size + 1, 0);
	if (n < 0)
		return -errno;
	if (n > st.st_size) {
		(void)snprintf(why, size, "changed while checked");
		return -EACCES;
	}
	return fusefs_rules_check_content(fs->rules, path, text, (size_t)n, why, size) < 0 ? -EACCES
											   : 0;
}

int fusefs_guard_commit(struct fusefs *fs, pid_t pid, const char *op, const char *path, int fd,
			bool noreplace)
{
	_cleanup_close_ int dir_fd = -EBADF;
	const char *name;
	char why[256];
	int r;

	r = fusefs_guard_check(fs, path, fd, why, sizeof(why));
	if (r == -EACCES)
		return guard_deny(fs, pid, op, path, why);
	if (r < 0)
		return r;
	dir_fd = open_parent(fs, path, &name);
	if (dir_fd < 0)
		return dir_fd;
	return link_over(fs, fd, dir_fd, name, noreplace);
}

int fusefs_guard_rename(struct fusefs *fs, pid_t pid, int pfd, const char *name,
			const struct stat *src, const char *to, bool noreplace)
{
	_cleanup_close_ int fd = -EBADF, copy = -EBADF, dir_fd = -EBADF;
	const char *to_name;
	struct stat st;
	int r;

	if (!S_ISREG(src->st_mode))
		return guard_deny(fs, pid, "rename", to, "not a regular file");
	fd = openat(pfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (st.st_dev != src->st_dev || st.st_ino != src->st_ino)
		return -EAGAIN; /* replaced in between: the caller may try again */
	dir_fd = open_parent(fs, to, &to_name);
	if (dir_fd < 0)
		return dir_fd;
	copy = fusefs_guard_stage(fs, dir_fd, fd, st.st_uid, st.st_gid, st.st_mode);
	if (copy < 0)
		return copy;
	r = fusefs_guard_commit(fs, pid, "rename", to, copy, noreplace);
	if (r < 0)
		return r;
	/* The source's name goes, as a rename's would (unless it changed in between). */
	if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_dev == src->st_dev &&
	    st.st_ino == src->st_ino && unlinkat(pfd, name, 0) == 0)
		fusefs_inode_unlinked(fs, src);
	return 0;
}

int fusefs_guard_open(struct fusefs *fs, const char *path, int src_fd, bool copy, uid_t uid,
		      gid_t gid)
{
	_cleanup_close_ int dir_fd = -EBADF;
	const char *name;
	struct stat st;

	if (fstat(src_fd, &st) < 0)
		return -errno;
	dir_fd = open_parent(fs, path, &name);
	if (dir_fd < 0)
		return dir_fd;
	if (uid == (uid_t)-1)
		uid = st.st_uid;
	if (gid == (gid_t)-1)
		gid = st.st_gid;
	if (copy) {
		_cleanup_close_ int rd = -EBADF;
		char proc[32];

		/* src_fd may be an O_PATH fd or open for writing only */
		(void)snprintf(proc, sizeof(proc), "/proc/self/fd/%d", src_fd);
		rd = open(proc, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (rd < 0)
			return -errno;
		return fusefs_guard_stage(fs, dir_fd, rd, uid, gid, st.st_mode);
	}
	return fusefs_guard_stage(fs, dir_fd, -EBADF, uid, gid, st.st_mode);
}
