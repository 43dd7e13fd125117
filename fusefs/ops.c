#define LOG_MODULE "fusefs"
#define FUSE_USE_VERSION FUSE_MAKE_VERSION(3, 12)

/* The FUSE low-level operations of the workspace. Each checks the rules for the path it touches,
 * then does the one *at() call on the host (see fs.c for why that confines it). libfuse takes a
 * positive errno: fuse_reply_err(req, -r). */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <fuse_lowlevel.h>

#include "broker/client.h"
#include "common/audit.h"
#include "common/fd-util.h"
#include "common/log.h"
#include "fusefs/fusefs-internal.h"

#define CACHE_SEC 60.0		  /* entry, attribute and negative-entry timeouts */
#define DIR_BUF_SIZE 4096	  /* per open folder: the sandbox may open thousands */
#define DIR_REPLY_MAX (32 * 1024) /* the kernel asks for a page or a few */

struct file {
	int fd;
	pid_t pid; /* that opened it: a release comes from no process in particular */
	enum fusefs_io io;
	bool copy; /* fd is a copy of a content-checked file (git-guard.c) */
	struct fusefs_inode *in;
	uint64_t written;
	uint32_t writes;
	struct broker_secret *secret;
};

struct dir {
	int fd;
	off_t offset; /* of the next entry getdents64 returns */
	size_t pos, len;
	/* After the host's entries: the credential files of this folder. They all carry the
	 * offset of the end of the host's listing; which comes next is kept here. */
	bool host_done;
	size_t cred_next;
	char buf[DIR_BUF_SIZE];
};

struct linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

static struct fusefs *fs_of(fuse_req_t req)
{
	return ((struct fusefs_conn *)fuse_req_userdata(req))->fs;
}

/* The inode of a FUSE inode number: its address, or the connection's root. */
static struct fusefs_inode *inode_of(fuse_req_t req, fuse_ino_t ino)
{
	struct fusefs_conn *c = fuse_req_userdata(req);

	return ino == FUSE_ROOT_ID ? c->root
				   : (struct fusefs_inode *)(uintptr_t)(ino ^ c->fs->ino_key);
}

static pid_t pid_of(fuse_req_t req)
{
	return fuse_req_ctx(req)->pid;
}

static struct file *file_of(struct fuse_file_info *fi)
{
	return (struct file *)(uintptr_t)fi->fh;
}

/* in's fd (fusefs_inode_get_fd()), or, when it cannot be had, the error is replied and
 * returned. */
static int get_fd_or_reply(fuse_req_t req, struct fusefs_inode *in)
{
	int fd = fusefs_inode_get_fd(fs_of(req), in);

	if (fd < 0)
		fuse_reply_err(req, -fd);
	return fd;
}

/* The fds of a and b, or neither (the error replied and returned). */
static int get_fds_or_reply(fuse_req_t req, struct fusefs_inode *a, struct fusefs_inode *b,
			    int *ret_a, int *ret_b)
{
	*ret_a = get_fd_or_reply(req, a);
	if (*ret_a < 0)
		return *ret_a;
	*ret_b = get_fd_or_reply(req, b);
	if (*ret_b < 0)
		fusefs_inode_put_fd(fs_of(req), a);
	return *ret_b;
}

/* /proc/self/fd/N: reopens (or changes) an O_PATH fd's own inode. Not a path the daemon resolves
 * on the host: it names an fd it already holds. */
static void fd_path(int fd, char buf[static 32])
{
	(void)snprintf(buf, 32, "/proc/self/fd/%d", fd);
}

static bool wants_write(int flags)
{
	return (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC);
}

/* Files up to this size opened only for reading are served through the page cache: a read that
 * passes through makes the kernel drop the file's atime, and so the next stat of it costs a round
 * trip (a grep -r run again, a build reading its headers again), where pages kept in the cache
 * cost nothing more after the first read, one round trip up to this size. docs/BENCHMARKS.md. */
#define CACHED_READ_MAX (64 * 1024)

/* How an open (flags) of in, the host file st, is best served (transport.c): never passed through
 * but for a regular file whose content the daemon does not check (its writes go to a copy,
 * git-guard.c; and a read would put the inode in the mode that keeps the copy's open from the
 * daemon); a small file read through the cache. The connection has passthrough only where the
 * daemon owes nothing per write. */
static enum fusefs_pass pass_of(struct fusefs *fs, struct fusefs_inode *in, const struct stat *st,
				int flags)
{
	if (!S_ISREG(st->st_mode) || (fusefs_inode_access(fs, in) & FUSEFS_ACCESS_CHECKED))
		return FUSEFS_PASS_NEVER;
	if (!wants_write(flags) && st->st_size <= CACHED_READ_MAX)
		return FUSEFS_PASS_CACHED;
	return FUSEFS_PASS_BEST;
}

/* Gives the kernel the new handle f (fusefs_inode_opened() done) of the host file st: passed
 * through where it may be (never a copy: its content is checked at release), FOPEN_NOFLUSH but
 * for a copy (op_flush()), replied to with the entry e for a create, else as an open. False when
 * that failed: the handle is undone, the error replied if the request is still there. */
static bool reply_handle(fuse_req_t req, struct file *f, const struct stat *st,
			 struct fuse_file_info *fi, const struct fuse_entry_param *e)
{
	struct fusefs *fs = fs_of(req);
	int r;

	fi->fh = (uint64_t)(uintptr_t)f;
	fi->noflush = !f->copy;
	r = fusefs_io_open(fs, req, f->in, f->fd,
			   f->copy ? FUSEFS_PASS_NEVER : pass_of(fs, f->in, st, fi->flags), fi,
			   &f->io);
	if (r >= 0 && (e ? fuse_reply_create(req, e, fi) : fuse_reply_open(req, fi)) == 0)
		return true;
	if (r < 0)
		fuse_reply_err(req, -r);
	fusefs_io_release(fs, req, f->in, f->io);
	fusefs_inode_closed(fs, f->in, -EBADF);
	(void)al_close(f->fd);
	free(f);
	return false;
}

static int write_denied(struct fusefs *fs)
{
	return fs->any_writable ? -EACCES : -EROFS;
}

/* Checks that in may be written; audits and reports a refusal. */
static int check_write(fuse_req_t req, struct fusefs_inode *in, const char *op)
{
	struct fusefs *fs = fs_of(req);
	char path[FUSEFS_PATH_MAX];

	if (in->cred >= 0) {
		(void)fusefs_path(fs, in->parent ?: &fs->root, in->name, path, sizeof(path));
		return fusefs_deny(fs, pid_of(req), op, path, -EPERM);
	}
	/* A content-checked file is written only through a checked copy (git-guard.c). */
	if ((fusefs_inode_access(fs, in) & (FUSEFS_ACCESS_WRITE | FUSEFS_ACCESS_CHECKED)) ==
	    FUSEFS_ACCESS_WRITE)
		return 0;
	(void)fusefs_path(fs, in, NULL, path, sizeof(path));
	return fusefs_deny(fs, pid_of(req), op, path, write_denied(fs));
}

/* Refuses what would put at path a file that is not checked there: a second name (link), a
 * node, or a symbolic link where git's reads could follow it (fusefs_rules_may_symlink()). */
static int check_new_name(fuse_req_t req, const char *path, mode_t type, const char *target,
			  const char *op)
{
	struct fusefs *fs = fs_of(req);

	if ((type == S_IFLNK && !fusefs_rules_may_symlink(fs->rules, path, target)) ||
	    (type != S_IFDIR && fusefs_rules_content_checked(fs->rules, path)))
		return fusefs_deny(fs, pid_of(req), op, path, -EACCES);
	return 0;
}

/* Checks that name may be created or removed in parent; fills path. A hidden name cannot be
 * created (EACCES) and does not exist (ENOENT). */
static int check_write_name(fuse_req_t req, struct fusefs_inode *parent, const char *name,
			    bool is_dir, bool creating, const char *op, char *path, size_t size)
{
	struct fusefs *fs = fs_of(req);
	unsigned a;
	int r;

	if (!(fusefs_inode_access(fs, parent) & (FUSEFS_ACCESS_READ | FUSEFS_ACCESS_TRAVERSE)))
		return -ENOENT;
	r = fusefs_path(fs, parent, name, path, size);
	if (r < 0)
		return r;
	if (fusefs_cred_at(fs, path) >= 0)
		return fusefs_deny(fs, pid_of(req), op, path, -EPERM);
	a = fusefs_rules_decide(fs->rules, path, is_dir);
	if (a & FUSEFS_ACCESS_WRITE)
		return 0;
	if (a == 0)
		return fusefs_deny(fs, pid_of(req), op, path, creating ? -EACCES : -ENOENT);
	return fusefs_deny(fs, pid_of(req), op, path, write_denied(fs));
}

/* The caller's umask, for a file about to be made: with FUSE_CAP_DONT_MASK the kernel leaves it
 * to us, so that a folder's default ACL can replace it on the host as it would locally. umask
 * is per fs_struct: each worker thread gets its own once. */
static void apply_umask(fuse_req_t req)
{
	static _Thread_local bool own_fs;
	static _Thread_local mode_t current = (mode_t)-1; /* this thread's umask, once set */
	mode_t want = fuse_req_ctx(req)->umask;

	if (!own_fs)
		own_fs = unshare(CLONE_FS) == 0;
	if (own_fs && want != current) /* the same caller asks with the same umask, mostly */
		(void)umask(current = want);
}

/* The mode a sandbox may give what lies at path: no set-user-ID (nor set-group-ID but on
 * folders), never writable by every user of the host (but a sticky folder, as /tmp), and in a
 * git folder not by the group either: another local user must not be handed what git runs or
 * reads (found by review: chmod 777 .git/hooks, then any user adds a hook). */
static mode_t safe_mode(const struct fusefs *fs, const char *path, mode_t mode)
{
	if (!fs->strip_setid)
		return mode;
	mode &= ~(mode_t)(S_ISUID | (S_ISDIR(mode) ? 0 : S_ISGID));
	if (fusefs_rules_in_git(path))
		mode &= ~(mode_t)(S_IWGRP | S_IWOTH | S_ISVTX);
	else if (!(S_ISDIR(mode) && (mode & S_ISVTX))) /* a sticky folder: as /tmp */
		mode &= ~(mode_t)S_IWOTH;
	return mode;
}

/* Drops set-user-ID, and set-group-ID where the group may execute, from the regular file at fd
 * (any kind of fd; st its fstat()) where the host's kernel would for a sandbox's write, truncation
 * or O_TRUNC open: the daemon's own writes keep them, since as root it holds CAP_FSETID. The
 * kernel leaves this to the daemon once KILLPRIV_V2 is negotiated (transport.c, fs->killpriv);
 * st is updated. */
static int kill_suidgid(int fd, struct stat *st)
{
	mode_t kill = S_ISUID | ((st->st_mode & S_IXGRP) ? S_ISGID : 0);
	char proc[32];

	if (!S_ISREG(st->st_mode) || !(st->st_mode & kill))
		return 0;
	fd_path(fd, proc);
	if (chmod(proc, st->st_mode & 07777 & ~kill) < 0)
		return -errno;
	st->st_mode &= ~kill;
	return 0;
}

/* The same for the file at fd, as the host has it now (the kernel decides on the mode it has
 * cached, which the host may have changed since). */
static int kill_suidgid_now(int fd)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	return kill_suidgid(fd, &st);
}

/* A write open that will pass through: the kernel's writes then never reach the daemon, so the
 * privileges a write would drop are dropped at the open (docs/SECURITY.md). */
static int kill_suidgid_at_open(struct fusefs *fs, struct fuse_file_info *fi, int fd,
				struct stat *st)
{
	if (!fs->killpriv || !(fs->passthrough || fusefs_io_kill_suidgid(fi)) ||
	    !wants_write(fi->flags))
		return 0;
	return kill_suidgid(fd, st);
}

static void fill_entry(const struct fusefs *fs, struct fuse_entry_param *e, struct fusefs_inode *in,
		       const struct stat *st)
{
	*e = (struct fuse_entry_param){
	    .ino = fusefs_ino(fs, in),
	    .attr = *st,
	    .attr_timeout = CACHE_SEC,
	    .entry_timeout = CACHE_SEC,
	};
	fusefs_ids_show(&fs->ids, &e->attr);
}

/* A credential file is the sandbox's, read-only. */
static void cred_stat(const struct fusefs *fs, const struct fusefs_inode *in, struct stat *st)
{
	*st = (struct stat){
	    .st_ino = in->ino,
	    .st_mode = S_IFREG | 0400,
	    .st_nlink = 1,
	    .st_uid = fs->euid,
	    .st_gid = fs->egid,
	    .st_blksize = 4096,
	};
}

static void cred_entry(struct fusefs *fs, int cred, struct fuse_entry_param *e)
{
	struct fusefs_inode *in = fs->creds[cred].inode;
	struct stat st;

	cred_stat(fs, in, &st);
	fill_entry(fs, e, in, &st);
	/* The content changes at every open: the kernel keeps nothing. */
	e->attr_timeout = 0;
}

/* Looks name up in parent: fills e (ino 0 for a cacheable "no such file"). */
static int do_lookup(fuse_req_t req, struct fusefs_inode *parent, const char *name,
		     struct fuse_entry_param *e)
{
	struct fusefs *fs = fs_of(req);
	char path[FUSEFS_PATH_MAX];
	struct fusefs_inode *in;
	struct stat st;
	uint64_t gen;
	unsigned a;
	int pfd, fd, r, cred;

	if (parent == &fs->secrets_root) {
		for (size_t i = 0; i < fs->n_creds; i++)
			if (!fs->creds[i].rel && streq(fs->creds[i].name, name)) {
				cred_entry(fs, (int)i, e);
				return 0;
			}
		return -ENOENT;
	}
	if (!(fusefs_inode_access(fs, parent) & (FUSEFS_ACCESS_READ | FUSEFS_ACCESS_TRAVERSE)))
		return -ENOENT;
	gen = __atomic_load_n(&fs->rule_gen, __ATOMIC_RELAXED);
	r = fusefs_path(fs, parent, name, path, sizeof(path));
	if (r < 0)
		return r;
	cred = fusefs_cred_at(fs, path);
	if (cred >= 0) {
		cred_entry(fs, cred, e);
		return 0;
	}
	/* A hidden name gets ENOENT whether it exists or not; whether it is a folder matters to
	 * the rules, so it is looked at first. */
	pfd = fusefs_inode_get_fd(fs, parent);
	if (pfd < 0)
		return pfd;
	fd = openat(pfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	r = fd < 0 ? -errno : 0;
	fusefs_inode_put_fd(fs, parent);
	if (r == -ENOENT) {
		*e = (struct fuse_entry_param){.entry_timeout = CACHE_SEC};
		return 0;
	}
	if (r < 0)
		return r;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		(void)al_close(fd);
		return r;
	}
	a = fusefs_rules_decide(fs->rules, path, S_ISDIR(st.st_mode));
	if (a == 0) {
		(void)al_close(fd);
		return fusefs_deny(fs, pid_of(req), "lookup", path, -ENOENT);
	}
	r = fusefs_inode_remember(fs, parent, name, fd, &st, &in);
	if (r == -EXDEV)
		return fusefs_deny(fs, pid_of(req), "lookup", path, -EACCES);
	if (r < 0)
		return r;
	pthread_mutex_lock(&fs->lock);
	if (fs->rule_gen == gen) {
		in->access = a;
		in->access_gen = gen;
	}
	fusefs_unlock(fs);
	fill_entry(fs, e, in, &st);
	return 0;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;
	int r;

	r = do_lookup(req, inode_of(req, parent), name, &e);
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_entry(req, &e);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct fusefs *fs = fs_of(req);

	fusefs_inode_forget(fs, inode_of(req, ino), nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	struct fusefs *fs = fs_of(req);

	for (size_t i = 0; i < count; i++)
		fusefs_inode_forget(fs, inode_of(req, forgets[i].ino), forgets[i].nlookup);
	fuse_reply_none(req);
}

static int stat_inode(struct fusefs *fs, struct fusefs_inode *in, struct fuse_file_info *fi,
		      struct stat *st)
{
	int fd, r;

	if (in->cred >= 0) {
		cred_stat(fs, in, st);
		return 0;
	}
	if (in == &fs->secrets_root) {
		*st = (struct stat){.st_ino = 1,
				    .st_mode = S_IFDIR | FUSEFS_SECRETS_MODE,
				    .st_nlink = 2,
				    .st_uid = fs->euid,
				    .st_gid = fs->egid};
		return 0;
	}
	if (fi && fi->fh)
		return RET_NERRNO(fstat(file_of(fi)->fd, st));
	fd = fusefs_inode_get_fd(fs, in);
	if (fd < 0)
		return fd;
	r = RET_NERRNO(fstat(fd, st));
	fusefs_inode_put_fd(fs, in);
	return r;
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fusefs *fs = fs_of(req);
	struct fusefs_inode *in = inode_of(req, ino);
	struct stat st;
	int r;

	r = stat_inode(fs, in, fi, &st);
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	fusefs_ids_show(&fs->ids, &st);
	fuse_reply_attr(req, &st, in->cred >= 0 ? 0 : CACHE_SEC);
}

static int set_attrs(struct fusefs *fs, struct fusefs_inode *in, int fd, struct stat *attr,
		     int to_set, struct fuse_file_info *fi)
{
	char proc[32];
	struct timespec ts[2] = {{.tv_nsec = UTIME_OMIT}, {.tv_nsec = UTIME_OMIT}};
	struct stat before;
	int r = 0;

	fd_path(fd, proc);
	if (to_set & FUSE_SET_ATTR_MODE)
		r = RET_NERRNO(fi ? fchmod(file_of(fi)->fd, attr->st_mode)
				  : chmod(proc, attr->st_mode));
	if (r >= 0 && (to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)))
		r = RET_NERRNO(fchownat(fd, "",
					(to_set & FUSE_SET_ATTR_UID) ? attr->st_uid : (uid_t)-1,
					(to_set & FUSE_SET_ATTR_GID) ? attr->st_gid : (gid_t)-1,
					AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW));
	if (r >= 0 && (to_set & FUSE_SET_ATTR_SIZE)) {
		int64_t growth = 0;

		/* A file costs its size (fusefs_inode_charge()): growing it, even sparsely, is
		 * held against the quota like a write of the growth, then charged as it is. */
		if (fs->quota > 0 && fstat(fd, &before) == 0 && attr->st_size > before.st_size)
			growth = (int64_t)(attr->st_size - before.st_size);
		if (growth > 0 && fusefs_quota_charge(fs, growth, true) < 0)
			return -ENOSPC;
		r = RET_NERRNO(fi ? ftruncate(file_of(fi)->fd, attr->st_size)
				  : truncate(proc, attr->st_size));
		if (growth > 0)
			(void)fusefs_quota_charge(fs, -growth, false);
		if (r >= 0)
			fusefs_inode_charge(fs, in, fd);
	}
	if (to_set & FUSE_SET_ATTR_ATIME)
		ts[0] = attr->st_atim;
	if (to_set & FUSE_SET_ATTR_ATIME_NOW)
		ts[0].tv_nsec = UTIME_NOW;
	if (to_set & FUSE_SET_ATTR_MTIME)
		ts[1] = attr->st_mtim;
	if (to_set & FUSE_SET_ATTR_MTIME_NOW)
		ts[1].tv_nsec = UTIME_NOW;
	if (r >= 0 && (ts[0].tv_nsec != UTIME_OMIT || ts[1].tv_nsec != UTIME_OMIT))
		r = RET_NERRNO(utimensat(fd, "", ts, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW));
	return r;
}

/* A checked file's mode and times are no content (git init probes the mode of config); its size
 * is, and changes only on a write handle's own copy. */
static bool checked_setattr_ok(struct fusefs *fs, struct fusefs_inode *in, int to_set,
			       struct fuse_file_info *fi)
{
	unsigned wc = FUSEFS_ACCESS_WRITE | FUSEFS_ACCESS_CHECKED;

	if (to_set & FUSE_SET_ATTR_SIZE)
		return fi && file_of(fi)->copy;
	return (fusefs_inode_access(fs, in) & wc) == wc;
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	struct fusefs *fs = fs_of(req);
	struct fusefs_inode *in = inode_of(req, ino);
	struct stat st;
	int fd, r = 0;

	if (!checked_setattr_ok(fs, in, to_set, fi))
		r = check_write(req, in, "setattr");
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	fd = get_fd_or_reply(req, in);
	if (fd < 0)
		return;
	if (to_set & FUSE_SET_ATTR_MODE) {
		char path[FUSEFS_PATH_MAX];

		if (fusefs_path(fs, in, NULL, path, sizeof(path)) < 0)
			path[0] = '\0';
		attr->st_mode = safe_mode(fs, path, (in->type & S_IFMT) | (attr->st_mode & 07777));
	}
	r = set_attrs(fs, in, fd, attr, to_set, fi);
	if (r >= 0)
		r = RET_NERRNO(fstat(fd, &st));
	/* A truncation or a change of owner by the sandbox (KILLPRIV_V2's FATTR_KILL_SUIDGID); a
	 * change of nothing but ctime (nothing at all without the write-back cache) is chown(f, -1,
	 * -1), which drops them and the capability too (found by review). */
	if (r >= 0 && fs->killpriv && (to_set & FUSE_SET_ATTR_KILL_SUID) &&
	    !(to_set & FUSE_SET_ATTR_MODE))
		r = kill_suidgid(fd, &st);
	if (r >= 0 && fs->killpriv && !(to_set & ~FUSE_SET_ATTR_CTIME) && S_ISREG(st.st_mode)) {
		char proc[32];

		fd_path(fd, proc);
		if (removexattr(proc, "security.capability") < 0 && errno != ENODATA)
			r = -errno;
		if (r >= 0)
			r = kill_suidgid(fd, &st);
	}
	fusefs_inode_put_fd(fs, in);
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	fusefs_ids_show(&fs->ids, &st);
	fuse_reply_attr(req, &st, CACHE_SEC);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct fusefs *fs = fs_of(req);
	struct fusefs_inode *in = inode_of(req, ino);
	char buf[PATH_MAX + 1];
	ssize_t n;
	int fd;

	fd = get_fd_or_reply(req, in);
	if (fd < 0)
		return;
	n = readlinkat(fd, "", buf, sizeof(buf));
	if (n < 0)
		n = -errno;
	fusefs_inode_put_fd(fs, in);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else if ((size_t)n >= sizeof(buf))
		fuse_reply_err(req, ENAMETOOLONG);
	else {
		buf[n] = '\0';
		fuse_reply_readlink(req, buf);
	}
}

/* After name was made in parent (whose fd pfd the caller got from fusefs_inode_get_fd()): charges
 * what the parent grew by and, when a new inode was made (created), its cost, gives it to the
 * caller (as root serving someone else), remembers it, releases pfd and replies with its entry
 * (with fi: opened, as file_fd). pfd is released before any reply: once the reply is out, the
 * kernel may forget the parent at any time. */
static void reply_made(fuse_req_t req, struct fusefs_inode *parent, int pfd, const char *name,
		       const char *op, const char *path, bool created, struct fuse_file_info *fi,
		       int file_fd, bool copy)
{
	struct fusefs *fs = fs_of(req);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct fuse_entry_param e;
	struct fusefs_inode *in = NULL;
	struct file *f = NULL;
	struct stat st;
	int fd, r;

	fd = openat(pfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	r = fd < 0 ? -errno : 0;
	fusefs_inode_charge(fs, parent, pfd);
	fusefs_inode_put_fd(fs, parent);
	if (r >= 0 && fs->euid == 0 && (ctx->uid != 0 || ctx->gid != 0) &&
	    fchownat(fd, "", ctx->uid, ctx->gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
		r = -errno;
	if (r >= 0 && fstat(fd, &st) < 0)
		r = -errno;
	if (r >= 0 && fi && !copy)
		r = kill_suidgid_at_open(fs, fi, fd, &st);
	if (r >= 0)
		r = fusefs_inode_remember(fs, parent, name, TAKE_FD(fd), &st, &in);
	(void)al_close(fd);
	/* A new inode costs at least a block, and what it has allocated (a folder's first block, a
	 * symbolic link's target). The table took that as what is charged for it. */
	if (r >= 0 && created)
		(void)fusefs_quota_charge(fs, (int64_t)fusefs_charged_blocks(&st) * 512, false);
	if (r >= 0 && fi) {
		f = calloc(1, sizeof(*f));
		if (!f) {
			fusefs_inode_forget(fs, in, 1);
			r = -ENOMEM;
		}
	}
	fusefs_audit(fs, pid_of(req), op, path, r, NULL, 0);
	if (r < 0) {
		(void)al_close(file_fd);
		fuse_reply_err(req, -r);
		return;
	}
	fill_entry(fs, &e, in, &st);
	if (!fi) {
		fuse_reply_entry(req, &e);
		return;
	}
	*f = (struct file){.fd = file_fd, .pid = pid_of(req), .in = in, .copy = copy};
	fusefs_inode_opened(fs, in, &st);
	fi->keep_cache = 1;
	if (!reply_handle(req, f, &st, fi, &e))
		fusefs_inode_forget(fs, in, 1);
}

static void make_node(fuse_req_t req, fuse_ino_t parent_ino, const char *name, mode_t mode,
		      dev_t rdev, const char *link, const char *op)
{
	struct fusefs *fs = fs_of(req);
	struct fusefs_inode *parent = inode_of(req, parent_ino);
	char path[FUSEFS_PATH_MAX];
	int pfd, r;

	r = check_write_name(req, parent, name, S_ISDIR(mode), true, op, path, sizeof(path));
	/* Device nodes in a folder the host uses would be a way into the host's devices. */
	if (r >= 0 && (S_ISCHR(mode) || S_ISBLK(mode)))
		r = fusefs_deny(fs, pid_of(req), op, path, -EPERM);
	if (r >= 0)
		r = check_new_name(req, path, mode & S_IFMT, link, op);
	if (r >= 0 && fusefs_quota_full(fs))
		r = -ENOSPC;
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	pfd = get_fd_or_reply(req, parent);
	if (pfd < 0)
		return;
	apply_umask(req);
	if (link)
		r = RET_NERRNO(symlinkat(link, pfd, name));
	else if (S_ISDIR(mode))
		r = RET_NERRNO(mkdirat(pfd, name, safe_mode(fs, path, mode) & 07777));
	else
		r = RET_NERRNO(mknodat(pfd, name, safe_mode(fs, path, mode), rdev));
	if (r < 0) {
		fusefs_inode_put_fd(fs, parent);
		fuse_reply_err(req, -r);
		return;
	}
	reply_made(req, parent, pfd, name, op, path, true, NULL, -EBADF, false);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	make_node(req, parent, name, mode, rdev, NULL, "mknod");
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	make_node(req, parent, name, S_IFDIR | mode, 0, NULL, "mkdir");
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	make_node(req, parent, name, S_IFLNK | 0777, 0, link, "symlink");
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent_ino, const char *newname)
{
	struct fusefs *fs = fs_of(req);
	struct fusefs_inode *in = inode_of(req, ino), *newparent = inode_of(req, newparent_ino);
	char path[FUSEFS_PATH_MAX], proc[32];
	int fd, pfd, r;

	/* A new name for a file that may not be written would be a way to write it. */
	r = check_write(req, in, "link");
	if (r >= 0)
		r = check_write_name(req, newparent, newname, false, true, "link", path,
				     sizeof(path));
	if (r >= 0)
		r = check_new_name(req, path, in->type == S_IFLNK ? S_IFLNK : S_IFREG, NULL,
				   "link");
	/* A new name grows its folder. */
	if (r >= 0 && fusefs_quota_full(fs))
		r = -ENOSPC;
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	if (get_fds_or_reply(req, in, newparent, &fd, &pfd) < 0)
		return;
	fd_path(fd, proc);
	r = RET_NERRNO(linkat(AT_FDCWD, proc, pfd, newname, AT_SYMLINK_FOLLOW));
	fusefs_inode_put_fd(fs, in);
	if (r >= 0) {
		reply_made(req, newparent, pfd, newname, "link", path, false, NULL, -EBADF, false);
		return;
	}
	fusefs_inode_put_fd(fs, newparent);
	fuse_reply_err(req, -r);
}

static void remove_name(fuse_req_t req, fuse_ino_t parent_ino, const char *name, bool dir)
{
	struct fusefs *fs = fs_of(req);
	struct fusefs_inode *parent = inode_of(req, parent_ino);
	const char *op = dir ? "rmdir" : "unlink";
	char path[FUSEFS_PATH_MAX];
	struct stat st;
	bool known;
	int pfd, r;

	r = check_write_name(req, parent, name, dir, false, op, path, sizeof(path));
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	pfd = get_fd_or_reply(req, parent);
	if (pfd < 0)
		return;
	known = fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
	r = RET_NERRNO(unlinkat(pfd, name, dir ? AT_REMOVEDIR : 0));
	fusefs_inode_put_fd(fs, parent);
	if (r >= 0 && known)
		fusefs_inode_unlinked(fs, &st);
	fusefs_audit(fs, pid_of(req), op, path, r, NULL, 0);
	fuse_reply_err(req, -r);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_name(req, parent, name, false);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_name(req, parent, name, true);
}

static void op_rename(fuse_req_t req, fuse_ino_t parent_ino, const char *name,
		      fuse_ino_t newparent_ino, const char *newname, unsigned int flags)
{
	struct fusefs *fs = fs_of(req);
	struct fusefs_inode *parent = inode_of(req, parent_ino);
	struct fusefs_inode *newparent = inode_of(req, newparent_ino);
	struct fuse_session *se = ((struct fusefs_conn *)fuse_req_userdata(req))->se;
	char from[FUSEFS_PATH_MAX], to[FUSEFS_PATH_MAX];
	struct stat src, dst;
	bool has_dst, checked = false;
	int pfd = -EBADF, npfd = -EBADF, r;

	if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (get_fds_or_reply(req, parent, newparent, &pfd, &npfd) < 0)
		return;
	/* A credential file is no host file: neither end of a rename may be one. */
	r = fusefs_path(fs, parent, name, from, sizeof(from));
	if (r >= 0)
		r = fusefs_path(fs, newparent, newname, to, sizeof(to));
	if (r >= 0 && (fusefs_cred_at(fs, from) >= 0 || fusefs_cred_at(fs, to) >= 0))
		r = fusefs_deny(fs, pid_of(req), "rename", from, -EPERM);
	/* A new name may grow its folder: not past the quota. */
	if (r >= 0 && fusefs_quota_full(fs))
		r = -ENOSPC;
	if (r >= 0)
		r = RET_NERRNO(fstatat(pfd, name, &src, AT_SYMLINK_NOFOLLOW));
	has_dst = fstatat(npfd, newname, &dst, AT_SYMLINK_NOFOLLOW) == 0;
	if (r >= 0)
		r = check_write_name(req, parent, name, S_ISDIR(src.st_mode), false, "rename", from,
				     sizeof(from));
	if (r >= 0)
		r = check_write_name(req, newparent, newname, S_ISDIR(src.st_mode), true, "rename",
				     to, sizeof(to));
	if (r >= 0 && (flags & RENAME_EXCHANGE) && has_dst &&
	    !(fusefs_rules_decide(fs->rules, from, S_ISDIR(dst.st_mode)) & FUSEFS_ACCESS_WRITE))
		r = fusefs_deny(fs, pid_of(req), "rename", from, write_denied(fs));
	/* Onto a content-checked name goes a checked copy (git-guard.c); nothing is swapped with
	 * one, and no symbolic link goes where git's reads could follow it. */
	if (r >= 0 && !S_ISDIR(src.st_mode))
		checked = fusefs_rules_content_checked(fs->rules, to);
	if (r >= 0 && (flags & RENAME_EXCHANGE) &&
	    (checked || fusefs_rules_content_checked(fs->rules, from)))
		r = fusefs_deny(fs, pid_of(req), "rename", to, -EACCES);
	if (r >= 0 && S_ISLNK(src.st_mode) && !fusefs_rules_may_symlink(fs->rules, to, NULL))
		r = fusefs_deny(fs, pid_of(req), "rename", to, -EACCES);
	/* A folder whose contents the rules would see differently at its new name is not moved
	 * whole: EXDEV makes mv(1) and friends copy it file by file, through the rules. */
	if (r >= 0 &&
	    ((S_ISDIR(src.st_mode) && !fusefs_rules_rename_is_uniform(fs->rules, from, to)) ||
	     ((flags & RENAME_EXCHANGE) && has_dst && S_ISDIR(dst.st_mode) &&
	      !fusefs_rules_rename_is_uniform(fs->rules, to, from))))
		r = fusefs_deny(fs, pid_of(req), "rename", from, -EXDEV);
	if (r < 0)
		goto out;
	if (checked) {
		r = fusefs_guard_rename(fs, pid_of(req), pfd, name, &src, to,
					flags & RENAME_NOREPLACE);
		fusefs_audit(fs, pid_of(req), "rename", from, r,
			     (struct al_audit_field[]){AL_AUDIT_S("to", to)}, 1);
		fusefs_inode_put_fd(fs, newparent);
		fusefs_inode_put_fd(fs, parent);
		fuse_reply_err(req, -r);
		/* The kernel moved the source's inode to the name, which holds the copy now. */
		if (r >= 0)
			fusefs_notify_later(fs, se, newparent_ino, newname, 0);
		return;
	}
	r = RET_NERRNO(renameat2(pfd, name, npfd, newname, flags));
	if (r >= 0) {
		fusefs_inode_charge(fs, newparent, npfd);
		if (newparent != parent)
			fusefs_inode_charge(fs, parent, pfd);
		(void)fusefs_inode_rename(fs, src.st_dev, src.st_ino, newparent, newname);
		if ((flags & RENAME_EXCHANGE) && has_dst)
			(void)fusefs_inode_rename(fs, dst.st_dev, dst.st_ino, parent, name);
		if (has_dst && !(flags & RENAME_EXCHANGE) && dst.st_ino != src.st_ino)
			fusefs_inode_unlinked(fs, &dst);
	}
	fusefs_audit(fs, pid_of(req), "rename", from, r,
		     (struct al_audit_field[]){AL_AUDIT_S("to", to)}, 1);
out:
	fusefs_inode_put_fd(fs, newparent);
	fusefs_inode_put_fd(fs, parent);
	fuse_reply_err(req, -r);
}

/* The kernel keeps the attributes it was told, and with the write-back cache it updates size and
 * times itself, but not the blocks that writes allocate or a hole frees. Asking it to stat again
 * after every write would cost every later stat a round trip; after fsync and fallocate, where
 * a program looks at allocation, it does. Sent before the reply, so the caller's next stat sees
 * it; attributes only (offset < 0) takes no lock the kernel holds for the request. */
static void invalidate_attrs(fuse_req_t req, fuse_ino_t ino)
{
	(void)fuse_lowlevel_notify_inval_inode(((struct fusefs_conn *)fuse_req_userdata(req))->se,
					       ino, -1, 0);
}

static int open_cred(fuse_req_t req, struct fusefs_inode *in, struct fuse_file_info *fi)
{
	struct fusefs *fs = fs_of(req);
	const char *name = fs->creds[in->cred].name;
	struct al_error err = {0};
	struct broker_secret *s = NULL;
	struct file *f;
	int r;

	if (wants_write(fi->flags))
		return fusefs_deny(fs, pid_of(req), "open", name, -EPERM);
	r = broker_client_read(fs->broker, name, &s, &err);
	fusefs_audit(fs, pid_of(req), "credential", name, r,
		     (struct al_audit_field[]){AL_AUDIT_S("credential", name)}, 1);
	if (r < 0) {
		log_debug("%s", err.msg);
		return -EIO;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		broker_secret_free(s);
		return -ENOMEM;
	}
	*f = (struct file){.fd = -EBADF, .in = in, .secret = s};
	fi->fh = (uint64_t)(uintptr_t)f;
	/* Never in the page cache: each open asks again, each read is served (and audited). */
	fi->direct_io = 1;
	return 0;
}

static int open_flags(struct fusefs *fs, int flags)
{
	flags &= ~(O_CREAT | O_EXCL | O_NOCTTY | O_NOFOLLOW | O_DIRECT);
	/* With the kernel's write-back cache it may read a page around a write, and it positions
	 * appends itself. */
	if (fs->writeback) {
		if ((flags & O_ACCMODE) == O_WRONLY)
			flags = (flags & ~O_ACCMODE) | O_RDWR;
		flags &= ~O_APPEND;
	}
	return flags | O_CLOEXEC;
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fusefs *fs = fs_of(req);
	struct fusefs_inode *in = inode_of(req, ino);
	char proc[32], path[FUSEFS_PATH_MAX];
	struct stat st;
	struct file *f;
	bool copy;
	int fd, file_fd, r;

	if (in->cred >= 0) {
		r = open_cred(req, in, fi);
		if (r < 0)
			fuse_reply_err(req, -r);
		else if (fuse_reply_open(req, fi) != 0)
			broker_secret_free(file_of(fi)->secret), free(file_of(fi));
		return;
	}
	/* A content-checked file opened for writing gets a copy, checked at its release. */
	copy = wants_write(fi->flags) && (fusefs_inode_access(fs, in) & FUSEFS_ACCESS_CHECKED);
	if (wants_write(fi->flags) && !copy) {
		r = check_write(req, in, "open");
		if (r < 0) {
			fuse_reply_err(req, -r);
			return;
		}
	}
	fd = get_fd_or_reply(req, in);
	if (fd < 0)
		return;
	fd_path(fd, proc);
	if (copy) {
		file_fd = fusefs_path(fs, in, NULL, path, sizeof(path));
		if (file_fd >= 0)
			file_fd = fusefs_guard_open(fs, path, fd, !(fi->flags & O_TRUNC), (uid_t)-1,
						    (gid_t)-1);
		errno = -file_fd;
	} else {
		file_fd = open(proc, open_flags(fs, fi->flags));
	}
	r = file_fd < 0 ? -errno : 0;
	fusefs_inode_put_fd(fs, in);
	if (r >= 0 && fstat(file_fd, &st) < 0)
		r = -errno;
	if (r >= 0 && !copy)
		r = kill_suidgid_at_open(fs, fi, file_fd, &st);
	if (fs->audit) {
		(void)fusefs_path(fs, in, NULL, path, sizeof(path));
		fusefs_audit(fs, pid_of(req), "open", path, r,
			     (struct al_audit_field[]){AL_AUDIT_B("write", wants_write(fi->flags))},
			     1);
	}
	f = r >= 0 ? calloc(1, sizeof(*f)) : NULL;
	if (!f) {
		(void)al_close(file_fd);
		fuse_reply_err(req, r < 0 ? -r : ENOMEM);
		return;
	}
	*f = (struct file){.fd = file_fd, .pid = pid_of(req), .in = in, .copy = copy};
	fusefs_inode_opened(fs, in, &st);
	fi->keep_cache = fusefs_inode_stamp(fs, in, &st, false);
	(void)reply_handle(req, f, &st, fi, NULL);
}

/* Opens name in pfd for flags, making it when it does not exist; *ret_created tells which, for
 * the quota: a file that existed (made behind the kernel's back, or an open(O_CREAT) of a name
 * the kernel had no entry for) costs no new inode. Whether it existed is asked with O_EXCL, and
 * one that went away in between is made again, a few times: a name created and removed by
 * another thread at the same time never leaves a new file uncharged. */
static int create_file(struct fusefs *fs, int pfd, const char *name, int flags, mode_t mode,
		       bool *ret_created)
{
	int fd;

	for (unsigned tries = 0; tries < 8; tries++) {
		fd = openat(pfd, name, open_flags(fs, flags) | O_CREAT | O_EXCL | O_NOFOLLOW,
			    mode & 07777);
		if (fd >= 0) {
			*ret_created = true;
			return fd;
		}
		if (errno != EEXIST || (flags & O_EXCL))
			return -errno;
		fd = openat(pfd, name, open_flags(fs, flags) | O_NOFOLLOW);
		if (fd >= 0) {
			*ret_created = false;
			return fd;
		}
		if (errno != ENOENT)
			return -errno;
	}
	return -EAGAIN;
}

static void op_create(fuse_req_t req, fuse_ino_t parent_ino, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	struct fusefs *fs = fs_of(req);
	struct fusefs_inode *parent = inode_of(req, parent_ino);
	char path[FUSEFS_PATH_MAX];
	bool created = false, checked;
	int pfd, fd, r;

	r = check_write_name(req, parent, name, false, true, "create", path, sizeof(path));
	if (r >= 0 && fusefs_quota_full(fs))
		r = -ENOSPC;
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	pfd = get_fd_or_reply(req, parent);
	if (pfd < 0)
		return;
	apply_umask(req);
	/* A content-checked name is made empty, or kept as it is; what is written goes to a
	 * checked copy. */
	checked = fusefs_rules_content_checked(fs->rules, path);
	fd = create_file(fs, pfd, name, checked ? fi->flags & ~O_TRUNC : fi->flags,
			 safe_mode(fs, path, S_IFREG | (mode & 07777)), &created);
	if (fd >= 0 && checked) {
		int made = fd;

		fd = fusefs_guard_open(fs, path, made, !created && !(fi->flags & O_TRUNC),
				       fuse_req_ctx(req)->uid, fuse_req_ctx(req)->gid);
		(void)al_close(made);
	}
	if (fd < 0) {
		fusefs_inode_put_fd(fs, parent);
		fuse_reply_err(req, -fd);
		return;
	}
	reply_made(req, parent, pfd, name, "create", path, created, fi, fd, checked);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct file *f = file_of(fi);
	struct fuse_bufvec buf = FUSE_BUFVEC_INIT(size);

	(void)ino;
	if (f->secret) {
		struct fusefs *fs = fs_of(req);
		const char *name = fs->creds[f->in->cred].name;
		size_t left = (uint64_t)off >= f->secret->len ? 0 : f->secret->len - (size_t)off;
		size_t n = MIN(size, left);

		fusefs_audit(fs, pid_of(req), "read", name, 0,
			     (struct al_audit_field[]){AL_AUDIT_S("credential", name)}, 1);
		fuse_reply_buf(req, n ? f->secret->data + off : NULL, n);
		return;
	}
	buf.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	buf.buf[0].fd = f->fd;
	buf.buf[0].pos = off;
	fuse_reply_data(req, &buf, FUSE_BUF_SPLICE_MOVE);
}

static void op_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *in_buf, off_t off,
			 struct fuse_file_info *fi)
{
	struct fusefs *fs = fs_of(req);
	struct file *f = file_of(fi);
	size_t size = fuse_buf_size(in_buf);
	struct fuse_bufvec out = FUSE_BUFVEC_INIT(size);
	ssize_t n;

	if (f->secret) {
		fuse_reply_err(req, EPERM);
		return;
	}
	/* The write's size is held against the quota while it runs, so that writes running at the
	 * same time (the kernel's write-back sends several) cannot all pass the check; what it
	 * really cost is charged after. */
	if (fs->quota > 0 && fusefs_quota_charge(fs, (int64_t)size, true) < 0) {
		fuse_reply_err(req, ENOSPC);
		return;
	}
	/* The kernel asks for it from a writer without CAP_FSETID, as it knows the mode; a page it
	 * writes back names no writer; a sandbox's writer never has CAP_FSETID. */
	if (fs->killpriv && (fusefs_io_kill_suidgid(fi) || fi->writepage || fs->strip_setid)) {
		int r = kill_suidgid_now(f->fd);

		if (r < 0) {
			if (fs->quota > 0)
				(void)fusefs_quota_charge(fs, -(int64_t)size, false);
			fuse_reply_err(req, -r);
			return;
		}
	}
	out.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	out.buf[0].fd = f->fd;
	out.buf[0].pos = off;
	n = fuse_buf_copy(&out, in_buf, 0);
	if (fs->quota > 0)
		(void)fusefs_quota_charge(fs, -(int64_t)size, false);
	if (n < 0) {
		fuse_reply_err(req, (int)-n);
		return;
	}
	__atomic_add_fetch(&f->written, (uint64_t)n, __ATOMIC_RELAXED);
	__atomic_add_fetch(&f->writes, 1, __ATOMIC_RELAXED);
	fusefs_inode_charge(fs, f->in, f->fd);
	fuse_reply_write(req, (size_t)n);
}

/* A write handle's copy of a content-checked file takes its name if it passes the check. The
 * kernel's entry for the name is returned (parent, name) to be invalidated after the reply: it
 * leads to the old inode. 0 when refused: the kernel's pages and size of the inode, which took
 * the refused writes, are then to be dropped. */
static fuse_ino_t commit_copy(fuse_req_t req, struct file *f, char *name, size_t size)
{
	struct fusefs *fs = fs_of(req);
	char path[FUSEFS_PATH_MAX];
	fuse_ino_t parent;

	pthread_mutex_lock(&fs->lock);
	parent = fusefs_ino(fs, f->in->parent ?: &fs->root);
	(void)snprintf(name, size, "%s", f->in->name);
	fusefs_unlock(fs);
	if (fusefs_path(fs, f->in, NULL, path, sizeof(path)) < 0 ||
	    fusefs_guard_commit(fs, f->pid, "write", path, f->fd, false) < 0)
		return 0;
	return parent;
}

/* Only a copy's handle asks (FOPEN_NOFLUSH on every other): whether the copy would pass its
 * check, so that close() says EACCES where the release will refuse it (git then reports that it
 * could not write its config). The release decides, and records the violation. */
static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fusefs *fs = fs_of(req);
	struct file *f = file_of(fi);
	char path[FUSEFS_PATH_MAX];
	int r = 0;

	(void)ino;
	if (f->copy) {
		r = fusefs_path(fs, f->in, NULL, path, sizeof(path));
		if (r >= 0)
			r = fusefs_guard_check(fs, path, f->fd, NULL, 0);
	}
	fuse_reply_err(req, -r);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fusefs *fs = fs_of(req);
	struct fuse_session *se = ((struct fusefs_conn *)fuse_req_userdata(req))->se;
	struct file *f = file_of(fi);
	char path[FUSEFS_PATH_MAX], name[NAME_MAX + 1];
	fuse_ino_t parent = 0;
	struct stat st;
	bool copy = f->copy;

	if (copy)
		parent = commit_copy(req, f, name, sizeof(name));
	/* What this file's writes made the host's mtime and size: the next open keeps the pages. */
	if (f->written > 0 && fstat(f->fd, &st) == 0)
		(void)fusefs_inode_stamp(fs, f->in, &st, true);
	if (f->written > 0 && fs->audit) {
		(void)fusefs_path(fs, f->in, NULL, path, sizeof(path));
		fusefs_audit(fs, f->pid, "write", path, 0,
			     (struct al_audit_field[]){AL_AUDIT_I("bytes", (int64_t)f->written),
						       AL_AUDIT_I("writes", f->writes)},
			     2);
	}
	fusefs_io_release(fs, req, f->in, f->io);
	if (!f->secret)
		fusefs_inode_closed(fs, f->in, f->fd);
	(void)al_close(f->fd);
	broker_secret_free(f->secret);
	free(f);
	fuse_reply_err(req, 0);
	if (parent)
		fusefs_notify_later(fs, se, parent, name, 0);
	else if (copy)
		fusefs_notify_later(fs, se, 0, NULL, ino);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct file *f = file_of(fi);
	int r = 0;

	if (f->fd >= 0)
		r = RET_NERRNO(datasync ? fdatasync(f->fd) : fsync(f->fd));
	if (r >= 0)
		invalidate_attrs(req, ino);
	fuse_reply_err(req, -r);
}

/* SEEK_DATA and SEEK_HOLE (the kernel answers SEEK_SET/CUR/END itself): without them a sparse
 * file would read as all data, and a copy of it (a checkpoint, cp --sparse) would not know. */
static void op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		     struct fuse_file_info *fi)
{
	off_t r;

	(void)ino;
	if (whence != SEEK_DATA && whence != SEEK_HOLE) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	r = lseek(file_of(fi)->fd, off, whence);
	if (r < 0)
		fuse_reply_err(req, errno);
	else
		fuse_reply_lseek(req, r);
}

static void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
			 struct fuse_file_info *fi)
{
	struct fusefs *fs = fs_of(req);
	struct file *f = file_of(fi);
	int r;

	if (f->secret) {
		fuse_reply_err(req, EPERM);
		return;
	}
	if (fs->quota > 0 && !(mode & FALLOC_FL_PUNCH_HOLE) &&
	    fusefs_quota_charge(fs, len, true) < 0) {
		fuse_reply_err(req, ENOSPC);
		return;
	}
	if (fs->quota > 0 && !(mode & FALLOC_FL_PUNCH_HOLE))
		(void)fusefs_quota_charge(fs, -len, false);
	/* The kernel drops its own request to drop privileges once KILLPRIV_V2 is negotiated, and
	 * sends no flag with FALLOCATE: the daemon drops them (also for a writer with CAP_FSETID,
	 * which the request does not tell: the safe side). */
	r = fs->killpriv ? kill_suidgid_now(f->fd) : 0;
	if (r >= 0)
		r = RET_NERRNO(fallocate(f->fd, mode, off, len));
	fusefs_inode_charge(fs, f->in, f->fd);
	if (r >= 0)
		invalidate_attrs(req, ino);
	fuse_reply_err(req, -r);
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fusefs *fs = fs_of(req);
	struct fusefs_inode *in = inode_of(req, ino);
	struct dir *d;
	int fd, r = 0;

	d = calloc(1, sizeof(*d));
	if (!d) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	d->fd = -EBADF;
	if (in != &fs->secrets_root) {
		fd = fusefs_inode_get_fd(fs, in);
		if (fd < 0) {
			free(d);
			fuse_reply_err(req, -fd);
			return;
		}
		d->fd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		r = d->fd < 0 ? -errno : 0;
		fusefs_inode_put_fd(fs, in);
	}
	if (r < 0) {
		free(d);
		fuse_reply_err(req, -r);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)d;
	fi->keep_cache = 1;
	fi->cache_readdir = 1;
	if (fuse_reply_open(req, fi) != 0) {
		(void)al_close(d->fd);
		free(d);
	}
}

/* Whether entry name (of type dtype) in the folder at dir_path is shown. */
static bool entry_visible(struct fusefs *fs, int dfd, const char *dir_path, const char *name,
			  unsigned char dtype, char *path, size_t size)
{
	struct stat st;
	bool is_dir = dtype == DT_DIR;
	int n;

	n = dir_path[0] ? snprintf(path, size, "%s/%s", dir_path, name)
			: snprintf(path, size, "%s", name);
	if (n < 0 || (size_t)n >= size)
		return false;
	if (fusefs_cred_at(fs, path) >= 0)
		return false; /* shadowed by the credential file */
	if (dtype == DT_UNKNOWN) {
		if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return false;
		is_dir = S_ISDIR(st.st_mode);
	}
	return fusefs_rules_decide(fs->rules, path, is_dir) != 0;
}

/* The name of credential file i if it lies directly in the folder dir_path, else NULL. */
static const char *cred_in_folder(const struct fusefs *fs, size_t i, const char *dir_path)
{
	const char *rel = fs->creds[i].rel, *slash, *rest;

	if (!rel)
		return NULL;
	slash = strrchr(rel, '/');
	if (!slash)
		return dir_path[0] == '\0' ? rel : NULL;
	rest = startswith(rel, dir_path);
	return rest && dir_path[0] != '\0' && rest == slash ? slash + 1 : NULL;
}

/* Adds credential-file entries from *next on while they fit: those of the secrets mount
 * (dir_path NULL; the offset of entry i is i + 1), or those lying directly in the folder dir_path
 * (all at offset at: see struct dir). Returns the bytes used; *next is where to go on. */
static size_t add_creds(fuse_req_t req, const char *dir_path, off_t at, size_t *next, char *buf,
			size_t size, bool plus)
{
	struct fusefs *fs = fs_of(req);
	size_t used = 0;

	for (; *next < fs->n_creds; (*next)++) {
		size_t i = *next;
		const char *name = dir_path	      ? cred_in_folder(fs, i, dir_path)
				   : fs->creds[i].rel ? NULL
						      : fs->creds[i].name;
		off_t o = dir_path ? at : (off_t)i + 1;
		struct fuse_entry_param e;
		size_t n;

		if (!name)
			continue;
		cred_entry(fs, (int)i, &e);
		if (plus)
			n = fuse_add_direntry_plus(req, buf + used, size - used, name, &e, o);
		else
			n = fuse_add_direntry(req, buf + used, size - used, name, &e.attr, o);
		if (n > size - used)
			break;
		used += n;
	}
	return used;
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi, bool plus)
{
	struct fusefs *fs = fs_of(req);
	struct fusefs_inode *in = inode_of(req, ino);
	struct dir *d = (struct dir *)(uintptr_t)fi->fh;
	char dir_path[FUSEFS_PATH_MAX], path[FUSEFS_PATH_MAX], reply[DIR_REPLY_MAX];
	size_t used = 0;
	int r = 0;

	/* On the stack: once the reply is written the request is done, and a releasedir may free
	 * the handle at once, in another thread. */
	size = MIN(size, sizeof(reply));
	if (in == &fs->secrets_root) {
		size_t next = (size_t)off;

		fuse_reply_buf(req, reply, add_creds(req, NULL, 0, &next, reply, size, plus));
		return;
	}
	if (off != d->offset) {
		if (lseek(d->fd, off, SEEK_SET) < 0) {
			fuse_reply_err(req, errno);
			return;
		}
		d->offset = off;
		d->pos = d->len = 0;
		d->host_done = false;
		d->cred_next = 0;
	}
	r = fusefs_path(fs, in, NULL, dir_path, sizeof(dir_path));
	while (r >= 0 && !d->host_done) {
		struct linux_dirent64 *de;
		struct fuse_entry_param e;
		bool dots;
		size_t n;

		if (d->pos >= d->len) {
			ssize_t got = syscall(SYS_getdents64, d->fd, d->buf, sizeof(d->buf));

			if (got < 0)
				r = -errno;
			if (got == 0)
				d->host_done = true;
			if (got <= 0)
				break;
			d->len = (size_t)got;
			d->pos = 0;
		}
		de = (struct linux_dirent64 *)(d->buf + d->pos);
		dots = streq(de->d_name, ".") || streq(de->d_name, "..");
		if (!dots && !entry_visible(fs, d->fd, dir_path, de->d_name, de->d_type, path,
					    sizeof(path))) {
			d->pos += de->d_reclen;
			d->offset = de->d_off;
			continue;
		}
		if (!plus) {
			struct stat st = {.st_ino = de->d_ino, .st_mode = (mode_t)de->d_type << 12};

			n = fuse_add_direntry(req, reply + used, size - used, de->d_name, &st,
					      de->d_off);
			if (n > size - used)
				break;
		} else {
			n = fuse_add_direntry_plus(req, NULL, 0, de->d_name, NULL, 0);
			if (n > size - used)
				break;
			if (dots) {
				e = (struct fuse_entry_param){
				    .attr = {.st_ino = de->d_ino,
					     .st_mode = (mode_t)de->d_type << 12}};
			} else if (do_lookup(req, in, de->d_name, &e) < 0 || e.ino == 0) {
				d->pos += de->d_reclen;
				d->offset = de->d_off;
				continue;
			}
			(void)fuse_add_direntry_plus(req, reply + used, size - used, de->d_name, &e,
						     de->d_off);
		}
		used += n;
		d->pos += de->d_reclen;
		d->offset = de->d_off;
	}
	if (r >= 0 && d->host_done && fs->n_creds > 0)
		used += add_creds(req, dir_path, d->offset, &d->cred_next, reply + used,
				  size - used, plus);
	if (r < 0 && used == 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_buf(req, reply, used);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, fi, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, fi, true);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dir *d = (struct dir *)(uintptr_t)fi->fh;

	(void)ino;
	(void)al_close(d->fd);
	free(d);
	fuse_reply_err(req, 0);
}

static void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct dir *d = (struct dir *)(uintptr_t)fi->fh;
	int r = 0;

	(void)ino;
	if (d->fd >= 0)
		r = RET_NERRNO(datasync ? fdatasync(d->fd) : fsync(d->fd));
	fuse_reply_err(req, -r);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct fusefs *fs = fs_of(req);
	struct statvfs st;
	uint64_t free_bytes;

	(void)ino;
	if (fstatvfs(fs->root_fd, &st) < 0) {
		fuse_reply_err(req, errno);
		return;
	}
	if (fs->quota > 0 && st.f_frsize > 0) {
		pthread_mutex_lock(&fs->quota_lock);
		free_bytes = fs->usage >= fs->quota ? 0 : fs->quota - fs->usage;
		pthread_mutex_unlock(&fs->quota_lock);
		st.f_blocks = MIN(st.f_blocks, fs->quota / st.f_frsize);
		st.f_bfree = MIN(st.f_bfree, free_bytes / st.f_frsize);
		st.f_bavail = MIN(st.f_bavail, free_bytes / st.f_frsize);
	}
	fuse_reply_statfs(req, &st);
}

/* File capabilities on a workspace file would be honoured when the host runs it later. */
static bool xattr_refused(const char *name)
{
	return streq(name, "security.capability");
}

#define ACL_XATTR_VERSION 2
#define ACL_TAG_USER 0x02
#define ACL_TAG_GROUP_OBJ 0x04
#define ACL_TAG_GROUP 0x08
#define ACL_TAG_OTHER 0x20
#define ACL_PERM_WRITE 0x02

/* Whether an ACL (system.posix_acl_access or _default: a u32 version, then entries of u16 tag,
 * u16 permissions and u32 id, little-endian) grants what safe_mode() keeps from a mode: write to
 * every user, or in a git folder (in_git) to anyone but the owner. Malformed: refused too. */
static bool acl_grants_too_much(const uint8_t *v, size_t size, bool in_git)
{
	if (size < 4 || (size - 4) % 8 != 0 ||
	    (uint32_t)(v[0] | v[1] << 8 | v[2] << 16 | (uint32_t)v[3] << 24) != ACL_XATTR_VERSION)
		return true;
	for (size_t off = 4; off < size; off += 8) {
		unsigned tag = v[off] | v[off + 1] << 8, perm = v[off + 2] | v[off + 3] << 8;

		if (!(perm & ACL_PERM_WRITE))
			continue;
		if (tag == ACL_TAG_OTHER ||
		    (in_git &&
		     (tag == ACL_TAG_USER || tag == ACL_TAG_GROUP_OBJ || tag == ACL_TAG_GROUP)))
			return true;
	}
	return false;
}

/* What the sandbox (fs->strip_setid: its workspace, not `airlock fs`) may not do to the host's
 * extended attributes, which stay the host's policy (found by red team 2: an ACL giving user
 * nobody write on .git/hooks, which safe_mode() keeps from other users, let any local user add a
 * hook the host's git runs): set or remove the host's security labels (security.*) or trusted.*
 * attributes, as an unprivileged host user may not either; or set an ACL granting more than a
 * mode may (acl_grants_too_much()). value NULL: a removal. */
static int xattr_check(struct fusefs *fs, struct fusefs_inode *in, const char *name,
		       const void *value, size_t size)
{
	char path[FUSEFS_PATH_MAX];

	if (xattr_refused(name))
		return -EPERM;
	if (!fs->strip_setid)
		return 0;
	if (startswith(name, "security.") || startswith(name, "trusted."))
		return -EPERM;
	if (!value ||
	    (!streq(name, "system.posix_acl_access") && !streq(name, "system.posix_acl_default")))
		return 0;
	/* Where its path is not known, as strictly as in a git folder. */
	if (fusefs_path(fs, in, NULL, path, sizeof(path)) < 0)
		return acl_grants_too_much(value, size, true) ? -EPERM : 0;
	return acl_grants_too_much(value, size, fusefs_rules_in_git(path)) ? -EPERM : 0;
}

static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			size_t size, int flags)
{
	struct fusefs *fs = fs_of(req);
	struct fusefs_inode *in = inode_of(req, ino);
	char proc[32];
	int fd, r;

	r = check_write(req, in, "setxattr");
	if (r >= 0)
		r = xattr_check(fs, in, name, value, size);
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	fd = get_fd_or_reply(req, in);
	if (fd < 0)
		return;
	fd_path(fd, proc);
	r = RET_NERRNO(setxattr(proc, name, value, size, flags));
	fusefs_inode_put_fd(fs, in);
	fuse_reply_err(req, -r);
}

static void reply_xattr(fuse_req_t req, ssize_t n, size_t size, const char *buf)
{
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	struct fusefs *fs = fs_of(req);
	struct fusefs_inode *in = inode_of(req, ino);
	char proc[32], buf[65536];
	ssize_t n;
	int fd;

	/* Asked before every write: answered without a system call. */
	if (xattr_refused(name) || in->cred >= 0 || in == &fs->secrets_root) {
		fuse_reply_err(req, ENODATA);
		return;
	}
	fd = get_fd_or_reply(req, in);
	if (fd < 0)
		return;
	fd_path(fd, proc);
	n = getxattr(proc, name, size ? buf : NULL, MIN(size, sizeof(buf)));
	if (n < 0)
		n = -errno;
	fusefs_inode_put_fd(fs, in);
	reply_xattr(req, n, size, buf);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct fusefs *fs = fs_of(req);
	struct fusefs_inode *in = inode_of(req, ino);
	char proc[32], buf[65536];
	ssize_t n;
	int fd;

	if (in->cred >= 0 || in == &fs->secrets_root) {
		reply_xattr(req, 0, size, buf);
		return;
	}
	fd = get_fd_or_reply(req, in);
	if (fd < 0)
		return;
	fd_path(fd, proc);
	n = listxattr(proc, size ? buf : NULL, MIN(size, sizeof(buf)));
	if (n < 0)
		n = -errno;
	fusefs_inode_put_fd(fs, in);
	reply_xattr(req, n, size, buf);
}

static void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	struct fusefs *fs = fs_of(req);
	struct fusefs_inode *in = inode_of(req, ino);
	char proc[32];
	int fd, r;

	r = check_write(req, in, "removexattr");
	if (r >= 0)
		r = xattr_check(fs, in, name, NULL, 0);
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	fd = get_fd_or_reply(req, in);
	if (fd < 0)
		return;
	fd_path(fd, proc);
	r = RET_NERRNO(removexattr(proc, name));
	fusefs_inode_put_fd(fs, in);
	fuse_reply_err(req, -r);
}

/* FUSEFS_IOC_INFO here (it needs the file handle); the rest is refresh.c's. */
static void op_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void *arg,
		     struct fuse_file_info *fi, unsigned flags, const void *in_buf, size_t in_bufsz,
		     size_t out_bufsz)
{
	struct fusefs_conn *c = fuse_req_userdata(req);
	struct fusefs *fs = c->fs;
	struct fusefs_info info = {.passthrough = fs->passthrough && !fs->passthrough_failed,
				   .writeback = fs->writeback};
	struct fusefs_inode *in = inode_of(req, ino);

	if (cmd != FUSEFS_IOC_INFO || c->root != &fs->root) {
		fusefs_op_ioctl(req, ino, cmd, arg, fi, flags, in_buf, in_bufsz, out_bufsz);
		return;
	}
	if (out_bufsz < sizeof(info)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
#if FUSE_VERSION >= FUSE_MAKE_VERSION(3, 18)
	info.uring = fuse_req_is_uring(req);
#endif
	if (fi && in->type == S_IFREG && in->cred < 0) {
		enum fusefs_io io = file_of(fi)->io;

		info.open = io == FUSEFS_IO_PASSTHROUGH ? 2 : 1;
	}
	fuse_reply_ioctl(req, 0, &info, sizeof(info));
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	struct fusefs_conn *c = userdata;

	fusefs_transport_init(c->fs, conn, c->root == &c->fs->root);
	conn->time_gran = 1;
	conn->max_background = 64;
	conn->congestion_threshold = 48;
}

const struct fuse_lowlevel_ops fusefs_ops = {
    .init = op_init,
    .lookup = op_lookup,
    .forget = op_forget,
    .forget_multi = op_forget_multi,
    .getattr = op_getattr,
    .setattr = op_setattr,
    .readlink = op_readlink,
    .mknod = op_mknod,
    .mkdir = op_mkdir,
    .symlink = op_symlink,
    .link = op_link,
    .unlink = op_unlink,
    .rmdir = op_rmdir,
    .rename = op_rename,
    .open = op_open,
    .create = op_create,
    .read = op_read,
    .write_buf = op_write_buf,
    .flush = op_flush,
    .release = op_release,
    .fsync = op_fsync,
    .fallocate = op_fallocate,
    .lseek = op_lseek,
    .ioctl = op_ioctl,
    .opendir = op_opendir,
    .readdir = op_readdir,
    .readdirplus = op_readdirplus,
    .releasedir = op_releasedir,
    .fsyncdir = op_fsyncdir,
    .statfs = op_statfs,
    .setxattr = op_setxattr,
    .getxattr = op_getxattr,
    .listxattr = op_listxattr,
    .removexattr = op_removexattr,
};

int fusefs_session_new(struct fusefs *fs, bool secrets, struct fuse_session **ret)
{
	/* Mount options matter only where libfuse mounts (`airlock fs` without privileges):
	 * auto_unmount makes fusermount3 unmount it if airlock dies. */
	char *argv[] = {(char *)"airlock",
			(char *)"-o",
			(char *)"default_permissions,fsname=airlock,subtype=airlock,auto_unmount",
			NULL,
			NULL,
			NULL};
	struct fuse_args args = FUSE_ARGS_INIT(3, argv);
	struct fusefs_conn *c = &fs->conns[secrets];
	struct fuse_session *se;
	const char *opt = fusefs_transport_option(fs, secrets);

	if (opt) {
		argv[args.argc++] = (char *)"-o";
		argv[args.argc++] = (char *)opt;
	}

	*c = (struct fusefs_conn){.fs = fs, .root = secrets ? &fs->secrets_root : &fs->root};
	se = fuse_session_new(&args, &fusefs_ops, sizeof(fusefs_ops), c);
	/* libfuse may have copied the arguments to edit them. */
	fuse_opt_free_args(&args);
	if (!se)
		return -EIO;
	c->se = se;
	*ret = se;
	return 0;
}
