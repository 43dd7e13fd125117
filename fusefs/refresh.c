#define LOG_MODULE "fusefs"
#define FUSE_USE_VERSION FUSE_MAKE_VERSION(3, 12)

/* FUSEFS_IOC_REFRESH: the daemon drops what the kernel caches of a file or folder, so that a
 * change made on the host behind the mount is seen, e.g. by a session's checkpoint, which copies
 * the workspace through the mount. Entries are only expired (FUSE_LL_EXPIRE_ONLY), never
 * invalidated: an invalidated folder entry would take the sandbox's mounts below it along
 * (d_invalidate() detaches them), an expired one is looked up again at its next use and goes
 * only if the host's file went. The kernel's locks these notifications take (a folder's, a
 * page's) are held only by requests other workers serve; the root's pass, the long one, runs
 * once at a time so that it can never hold every worker. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fuse_lowlevel.h>

#include "common/fd-util.h"
#include "common/log.h"
#include "fusefs/fusefs-internal.h"

/* Expires (not invalidates) the kernel's entry of name in parent: libfuse 3.17 dropped the flag,
 * expiring is all its call does. */
static int expire_entry(struct fuse_session *se, fuse_ino_t parent, const char *name)
{
#if FUSE_VERSION >= FUSE_MAKE_VERSION(3, 17)
	return fuse_lowlevel_notify_expire_entry(se, parent, name, strlen(name));
#else
	return fuse_lowlevel_notify_expire_entry(se, parent, name, strlen(name),
						 FUSE_LL_EXPIRE_ONLY);
#endif
}

/* A notification's answer: the kernel holding nothing of it (ENOENT) is no failure. */
static int notified(int r)
{
	return r == -ENOENT ? 0 : r;
}

/* Expires the entry of every name the host folder dir (an O_PATH fd) holds now: a name the
 * sandbox looked for before the host made it is looked up again. */
static int expire_listed(struct fuse_session *se, fuse_ino_t dir_ino, int dir)
{
	int fd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	int r = 0;

	if (!d) {
		r = -errno;
		(void)al_close(fd);
		return r;
	}
	for (struct dirent *de; r >= 0 && (de = readdir(d));)
		if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
			r = notified(expire_entry(se, dir_ino, de->d_name));
	(void)closedir(d);
	return r;
}

/* Expires the entry and attributes of every inode the kernel may hold: a name the host removed
 * or gave another file is looked up again. */
static int expire_known(struct fusefs *fs, struct fuse_session *se)
{
	struct fusefs_known *k = NULL;
	size_t n = 0;
	int r;

	r = fusefs_known_list(fs, &k, &n);
	for (size_t i = 0; r >= 0 && i < n; i++) {
		if (k[i].parent)
			r = notified(expire_entry(
			    se, fusefs_ino(fs, (struct fusefs_inode *)k[i].parent), k[i].name));
		if (r >= 0)
			r = notified(
			    fuse_lowlevel_notify_inval_inode(se, fusefs_ino(fs, k[i].in), -1, 0));
	}
	if (k)
		fusefs_known_free(fs, k, n);
	return r;
}

/* in's host file now, into st. */
static int stat_host(struct fusefs *fs, struct fusefs_inode *in, struct stat *st)
{
	int fd = fusefs_inode_get_fd(fs, in), r;

	if (fd < 0)
		return fd;
	r = RET_NERRNO(fstat(fd, st));
	fusefs_inode_put_fd(fs, in);
	return r;
}

static int refresh_dir(struct fusefs *fs, struct fuse_session *se, struct fusefs_inode *in,
		       fuse_ino_t ino)
{
	int fd, r;

	if (in == &fs->root && __atomic_exchange_n(&fs->refreshing, true, __ATOMIC_ACQUIRE))
		return -EBUSY;
	fd = fusefs_inode_get_fd(fs, in);
	r = fd;
	if (fd >= 0) {
		r = expire_listed(se, ino, fd);
		fusefs_inode_put_fd(fs, in);
	}
	/* Its listing (the kernel keeps it in the folder's pages) and its attributes. */
	if (r >= 0)
		r = notified(fuse_lowlevel_notify_inval_inode(se, ino, 0, 0));
	if (in == &fs->root) {
		if (r >= 0)
			r = expire_known(fs, se);
		__atomic_store_n(&fs->refreshing, false, __ATOMIC_RELEASE);
	}
	return r;
}

/* Grows the kernel's size of in to the host file's, size: the kernel takes a size from the
 * daemon only for an inode it did not hold yet, but a store past its end grows it. The store is
 * the host file's last byte (the kernel's pages were just dropped, so no newer byte is lost while
 * nothing writes the file). Nothing shrinks it: hence the host's size in the answer. */
static int grow_to_host(struct fusefs *fs, struct fusefs_inode *in, struct fuse_session *se,
			fuse_ino_t ino, off_t size)
{
	struct fuse_bufvec buf = FUSE_BUFVEC_INIT(1);
	char proc[32], last;
	ssize_t n;
	int fd, file;

	if (size == 0)
		return 0;
	fd = fusefs_inode_get_fd(fs, in);
	if (fd < 0)
		return fd;
	/* Reopens the O_PATH fd's own inode: no path is resolved on the host. */
	(void)snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	file = open(proc, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	fusefs_inode_put_fd(fs, in);
	if (file < 0)
		return -errno;
	n = pread(file, &last, 1, size - 1);
	if (n < 0)
		n = -errno;
	(void)al_close(file);
	if (n <= 0)
		return (int)n; /* it shrank meanwhile: nothing to grow */
	buf.buf[0].mem = &last;
	return notified(fuse_lowlevel_notify_store(se, ino, size - 1, &buf, 0));
}

/* A file's pages and attributes, and its size grown to the host's. */
static int refresh_file(struct fusefs *fs, struct fusefs_inode *in, struct fuse_session *se,
			fuse_ino_t ino, const struct stat *st)
{
	int r;

	r = notified(fuse_lowlevel_notify_inval_inode(se, ino, 0, 0));
	if (r >= 0 && S_ISREG(st->st_mode))
		r = grow_to_host(fs, in, se, ino, st->st_size);
	return r;
}

void fusefs_op_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void *arg,
		     struct fuse_file_info *fi, unsigned flags, const void *in_buf, size_t in_bufsz,
		     size_t out_bufsz)
{
	struct fusefs_conn *c = fuse_req_userdata(req);
	struct fusefs *fs = c->fs;
	struct fusefs_inode *in;
	struct stat st;
	uint64_t size;
	int r;

	(void)arg, (void)fi, (void)flags, (void)in_buf, (void)in_bufsz;
	if (cmd != FUSEFS_IOC_REFRESH || c->root != &fs->root) {
		fuse_reply_err(req, ENOTTY);
		return;
	}
	if (out_bufsz < sizeof(size)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	in =
	    ino == FUSE_ROOT_ID ? &fs->root : (struct fusefs_inode *)(uintptr_t)(ino ^ fs->ino_key);
	if (in->cred >= 0) {
		fuse_reply_err(req, ENOTTY); /* no host file: nothing cached */
		return;
	}
	r = stat_host(fs, in, &st);
	if (r >= 0)
		r = S_ISDIR(st.st_mode) ? refresh_dir(fs, c->se, in, ino)
					: refresh_file(fs, in, c->se, ino, &st);
	if (r < 0) {
		log_debug_errno(r, "Refreshing the kernel's caches failed: %m");
		fuse_reply_err(req, -r);
		return;
	}
	size = (uint64_t)st.st_size;
	fuse_reply_ioctl(req, 0, &size, sizeof(size));
}
