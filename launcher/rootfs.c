#define LOG_MODULE "launcher"

/* The sandbox's file system view, built in the child's own mount namespace:
 *
 *   1. everything becomes a slave mount, so nothing we do propagates back to the host;
 *   2. a scratch tmpfs is mounted on /tmp (invisible to the host) with two folders, and we
 *      pivot_root into it: the host's tree is then reachable at /oldroot and the sandbox root
 *      (another tmpfs) at /newroot. Going through /oldroot means a source under the host's /tmp
 *      (a workspace, say) is not hidden by the scratch tmpfs;
 *   3. /newroot is populated with read-only binds and generated files;
 *   4. pivot_root into /newroot and detach the old tree, so the host's tree is gone entirely;
 *   5. / is made read-only.
 *
 * Runs in the cloned child, which is single-threaded and holds a copy of the parent's memory. */

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/fd-util.h"
#include "fusefs/fusefs.h"
#include "launcher/launcher-internal.h"
#include "netns/netns.h"

#define SCRATCH "/tmp"
#define ROOT_TMPFS_OPTS "mode=0755,size=8m,nr_inodes=4096"
#define DEV_TMPFS_OPTS "mode=0755,size=64k,nr_inodes=64"
#define COPY_MAX (128 * 1024) /* /etc files up to this size are copied, not bound */

static int pivot_root(const char *new_root, const char *put_old)
{
	return RET_NERRNO((int)syscall(SYS_pivot_root, new_root, put_old));
}

static int mount_attr(const char *path, uint64_t set, bool recursive, struct al_error *err)
{
	struct mount_attr a = {.attr_set = set};

	if (mount_setattr(AT_FDCWD, path, recursive ? AT_RECURSIVE : 0, &a, sizeof(a)) < 0)
		return al_error_set_errno(err, -errno, "Failed to set mount attributes of %s",
					  path);
	return 0;
}

static int do_mount(const char *src, const char *dst, const char *type, unsigned long flags,
		    const char *opts, struct al_error *err)
{
	if (mount(src, dst, type, flags, opts) < 0)
		return al_error_set_errno(err, -errno, "Failed to mount %s on %s",
					  type ? type : strempty(src), dst);
	return 0;
}

/* Binds src on dst (recursively for folders) and applies attr to the whole new tree. */
static int bind_mount(const char *src, const char *dst, uint64_t attr, struct al_error *err)
{
	int r;

	r = do_mount(src, dst, NULL, MS_BIND | MS_REC, NULL, err);
	if (r < 0)
		return r;
	return mount_attr(dst, attr, true, err);
}

#define ATTR_RO (MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)
#define ATTR_RW (MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)

/* Creates the mount point name in parent unless it exists; an existing one must be of the right
 * type. Nothing is opened for reading or writing, so a FIFO planted there cannot block setup. */
static int make_point_at(int parent, const char *name, bool dir, const char *target,
			 struct al_error *err)
{
	struct stat st;
	int fd;

	if (dir) {
		if (mkdirat(parent, name, 0755) < 0 && errno != EEXIST)
			return al_error_set_errno(err, -errno, "%s: cannot create it", target);
	} else {
		fd = openat(parent, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			    0444);
		if (fd < 0 && errno != EEXIST)
			return al_error_set_errno(err, -errno, "%s: cannot create it", target);
		fd = al_close(fd);
	}
	if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return al_error_set_errno(err, -errno, "%s: cannot stat it", target);
	if (dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))
		return al_error_set(err, -ENOTDIR, "%s: exists and is not a %s", target,
				    dir ? "folder" : "regular file");
	return 0;
}

/* A mount point below the new root, which airlock alone has shaped so far. */
static int make_mountpoint(const char *path, bool dir, struct al_error *err)
{
	return make_point_at(AT_FDCWD, path, dir, path, err);
}

static int copy_symlink(const char *src, const char *dst, struct al_error *err)
{
	char target[PATH_MAX];
	ssize_t n;

	n = readlink(src, target, sizeof(target) - 1);
	if (n < 0)
		return al_error_set_errno(err, -errno, "Failed to read link %s", src);
	target[n] = '\0';
	if (symlink(target, dst) < 0 && errno != EEXIST)
		return al_error_set_errno(err, -errno, "Failed to create link %s", dst);
	return 0;
}

/* Copies a small regular file into the sandbox's root tmpfs (read-only like the rest of it):
 * cheaper than a bind mount and its teardown. */
static int copy_small_file(const char *src, const char *dst, const struct stat *st,
			   struct al_error *err)
{
	_cleanup_close_ int in = -EBADF, out = -EBADF;
	off_t off = 0;

	in = open(src, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	if (in < 0)
		return al_error_set_errno(err, -errno, "Failed to open %s", src);
	out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, st->st_mode & 0755);
	if (out < 0)
		return al_error_set_errno(err, -errno, "Failed to create %s", dst);
	while (off < st->st_size) {
		ssize_t n = sendfile(out, in, &off, (size_t)(st->st_size - off));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return al_error_set_errno(err, -errno, "Failed to copy %s", src);
		if (n == 0)
			break; /* the file shrank meanwhile: keep what there was */
	}
	return 0;
}

/* Mirrors one entry of a host folder: a symlink is copied, a folder is bound read-only, a file is
 * copied when small and copy_small is set, else bound read-only; anything else is left out. A
 * missing source is skipped when optional. */
static int mirror_entry(const char *src, const char *dst, bool optional, bool copy_small,
			struct al_error *err)
{
	struct stat st;
	int r;

	if (lstat(src, &st) < 0) {
		if (errno == ENOENT && optional)
			return 0;
		return al_error_set_errno(err, -errno, "Failed to stat %s", src);
	}
	if (S_ISLNK(st.st_mode))
		return copy_symlink(src, dst, err);
	if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
		return 0;
	if (copy_small && S_ISREG(st.st_mode) && st.st_size <= COPY_MAX)
		return copy_small_file(src, dst, &st, err);
	r = make_mountpoint(dst, S_ISDIR(st.st_mode), err);
	if (r < 0)
		return r;
	return bind_mount(src, dst, ATTR_RO, err);
}

static int setup_host_system(struct al_error *err)
{
	static const char *const dirs[] = {"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32"};
	char src[PATH_MAX], dst[PATH_MAX];
	int r;

	for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
		(void)snprintf(src, sizeof(src), LAUNCHER_OLDROOT "/%s", dirs[i]);
		(void)snprintf(dst, sizeof(dst), LAUNCHER_NEWROOT "/%s", dirs[i]);
		r = mirror_entry(src, dst, !streq(dirs[i], "usr"), false, err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* A container image: every top-level entry of the rootfs folder is mirrored read-only, except
 * the ones airlock provides itself. */
static int setup_image(const char *image, struct al_error *err)
{
	static const char *const own[] = {"proc", "dev", "sys", "tmp", "run"};
	char src[PATH_MAX], dst[PATH_MAX];
	_cleanup_free_ char *base = NULL;
	DIR *d;
	int r = 0;

	if (asprintf(&base, LAUNCHER_OLDROOT "%s", image) < 0)
		return -ENOMEM;
	d = opendir(base);
	if (!d)
		return al_error_set_errno(err, -errno, "Failed to open image %s", image);
	for (struct dirent *de; (de = readdir(d));) {
		bool skip = streq(de->d_name, ".") || streq(de->d_name, "..");

		for (size_t i = 0; i < ELEMENTSOF(own) && !skip; i++)
			skip = streq(de->d_name, own[i]);
		if (skip)
			continue;
		(void)snprintf(src, sizeof(src), "%s/%s", base, de->d_name);
		(void)snprintf(dst, sizeof(dst), LAUNCHER_NEWROOT "/%s", de->d_name);
		r = mirror_entry(src, dst, true, false, err);
		if (r < 0)
			break;
	}
	(void)closedir(d);
	return r;
}

static int write_etc_file(int etc_fd, const char *name, const char *content, struct al_error *err)
{
	_cleanup_close_ int fd = -EBADF;
	int r;

	fd = openat(etc_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return al_error_set_errno(err, -errno, "Failed to create /etc/%s", name);
	r = al_write_all(fd, content, strlen(content));
	if (r < 0)
		return al_error_set_errno(err, r, "Failed to write /etc/%s", name);
	return 0;
}

/* A minimal /etc: generated identity and name-service files, plus read-only binds of what
 * dynamically linked programs and TLS clients need from the host's. */
static int setup_etc(const struct launcher_context *ctx, struct al_error *err)
{
	static const char *const mirrored[] = {
	    "ld.so.cache", "ssl",	"ca-certificates", "alternatives", "localtime",
	    "services",	   "protocols", "mime.types",	   "os-release",
	};
	static const struct {
		const char *name;
		const char *content;
	} generated[] = {
	    {"hosts", "127.0.0.1\tlocalhost\n127.0.1.1\tairlock\n::1\tlocalhost ip6-localhost\n"},
	    {"hostname", "airlock\n"},
	    {"nsswitch.conf", "passwd: files\ngroup: files\nshadow: files\nhosts: files dns\n"
			      "networks: files\nprotocols: files\nservices: files\n"},
	};
	char src[PATH_MAX], dst[PATH_MAX];
	_cleanup_close_ int etc_fd = -EBADF;
	int r;

	if (mkdir(LAUNCHER_NEWROOT "/etc", 0755) < 0)
		return al_error_set_errno(err, -errno, "Failed to create /etc");
	etc_fd = open(LAUNCHER_NEWROOT "/etc", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (etc_fd < 0)
		return al_error_set_errno(err, -errno, "Failed to open /etc");
	for (size_t i = 0; i < ELEMENTSOF(generated); i++) {
		r = write_etc_file(etc_fd, generated[i].name, generated[i].content, err);
		if (r < 0)
			return r;
	}
	/* The egress proxy answers names; without it nothing does, and lookups fail at once. */
	r = write_etc_file(etc_fd, "resolv.conf",
			   ctx->egress ? "# airlock: names are answered by the egress proxy\n"
					 "nameserver " NETNS_PROXY_ADDR
					 "\noptions timeout:2 attempts:2\n"
				       : "# airlock: no network\nnameserver 127.0.0.1\n"
					 "options timeout:1 attempts:1\n",
			   err);
	if (r < 0)
		return r;
	if (ctx->ca_bundle) {
		if (mkdirat(etc_fd, "airlock", 0755) < 0)
			return al_error_set_errno(err, -errno, "Failed to create /etc/airlock");
		r = write_etc_file(etc_fd, "airlock/ca-bundle.pem", ctx->ca_bundle, err);
		if (r < 0)
			return r;
	}
	r = write_etc_file(etc_fd, "passwd", ctx->etc_passwd, err);
	if (r < 0)
		return r;
	r = write_etc_file(etc_fd, "group", ctx->etc_group, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < ELEMENTSOF(mirrored); i++) {
		(void)snprintf(src, sizeof(src), LAUNCHER_OLDROOT "/etc/%s", mirrored[i]);
		(void)snprintf(dst, sizeof(dst), LAUNCHER_NEWROOT "/etc/%s", mirrored[i]);
		r = mirror_entry(src, dst, true, true, err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* A device node for the sandbox: with CAP_MKNOD (airlock runs as root) a new node with the
 * host's device number, cheaper than a bind mount; in a user namespace the host's node is bound. */
static int make_node(const char *src, const char *dst, struct al_error *err)
{
	struct stat st;

	if (stat(src, &st) < 0)
		return al_error_set_errno(err, -errno, "Failed to stat %s", src);
	if (!S_ISCHR(st.st_mode))
		return al_error_set(err, -ENODEV, "%s is not a character device", src);
	if (mknod(dst, S_IFCHR | 0666, st.st_rdev) < 0 || chmod(dst, 0666) < 0)
		return al_error_set_errno(err, -errno, "Failed to create %s", dst);
	return 0;
}

static int bind_node(const char *src, const char *dst, struct al_error *err)
{
	int r;

	r = make_mountpoint(dst, false, err);
	if (r < 0)
		return r;
	/* Read-only: the node stays usable, but its owner, mode and times cannot be changed. */
	return bind_mount(src, dst, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, err);
}

static int setup_dev(bool userns, struct al_error *err)
{
	static const char *const nodes[] = {"null", "zero", "full", "random", "urandom", "tty"};
	static const struct {
		const char *name;
		const char *target;
	} links[] = {
	    {"ptmx", "pts/ptmx"},	   {"fd", "/proc/self/fd"},
	    {"stdin", "/proc/self/fd/0"},  {"stdout", "/proc/self/fd/1"},
	    {"stderr", "/proc/self/fd/2"},
	};
	char src[PATH_MAX], dst[PATH_MAX];
	int r;

	r = make_mountpoint(LAUNCHER_NEWROOT "/dev", true, err);
	if (r >= 0)
		r = do_mount("tmpfs", LAUNCHER_NEWROOT "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC,
			     DEV_TMPFS_OPTS, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < ELEMENTSOF(nodes); i++) {
		(void)snprintf(src, sizeof(src), LAUNCHER_OLDROOT "/dev/%s", nodes[i]);
		(void)snprintf(dst, sizeof(dst), LAUNCHER_NEWROOT "/dev/%s", nodes[i]);
		r = userns ? bind_node(src, dst, err) : make_node(src, dst, err);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < ELEMENTSOF(links); i++) {
		(void)snprintf(dst, sizeof(dst), LAUNCHER_NEWROOT "/dev/%s", links[i].name);
		if (symlink(links[i].target, dst) < 0)
			return al_error_set_errno(err, -errno, "Failed to create %s", dst);
	}
	r = make_mountpoint(LAUNCHER_NEWROOT "/dev/pts", true, err);
	/* A pty pool of its own, bounded: the host's (kernel.pty.max) is shared by every devpts. */
	if (r >= 0)
		r = do_mount(
		    "devpts", LAUNCHER_NEWROOT "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
		    "newinstance,ptmxmode=0666,mode=0620,max=" STRINGIFY(LAUNCHER_PTYS_MAX), err);
	if (r >= 0)
		r = make_mountpoint(LAUNCHER_NEWROOT "/dev/shm", true, err);
	if (r >= 0)
		r = do_mount("tmpfs", LAUNCHER_NEWROOT "/dev/shm", "tmpfs",
			     MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=1777,size=64m", err);
	if (r < 0)
		return r;
	return mount_attr(LAUNCHER_NEWROOT "/dev", MOUNT_ATTR_RDONLY, false, err);
}

/* A new proc for the sandbox's pid namespace. Files that describe or steer the whole machine are
 * made read-only or hidden: without capabilities most are refused anyway, but uid 0 (when airlock
 * runs as root) still owns them, so do not rely on that. */
static int setup_proc(struct al_error *err)
{
	static const char *const read_only[] = {"sys", "sysrq-trigger", "irq", "bus", "fs"};
	static const char *const hidden[] = {"kcore",	    "keys",	     "timer_list",
					     "sched_debug", "latency_stats", "kallsyms"};
	char path[PATH_MAX];
	struct stat st;
	int r;

	r = make_mountpoint(LAUNCHER_NEWROOT "/proc", true, err);
	if (r >= 0)
		r = do_mount("proc", LAUNCHER_NEWROOT "/proc", "proc",
			     MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < ELEMENTSOF(read_only); i++) {
		(void)snprintf(path, sizeof(path), LAUNCHER_NEWROOT "/proc/%s", read_only[i]);
		if (lstat(path, &st) < 0)
			continue;
		r = bind_mount(path, path, ATTR_RO | MOUNT_ATTR_NOEXEC, err);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < ELEMENTSOF(hidden); i++) {
		(void)snprintf(path, sizeof(path), LAUNCHER_NEWROOT "/proc/%s", hidden[i]);
		if (lstat(path, &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		r = bind_mount(LAUNCHER_OLDROOT "/dev/null", path, ATTR_RO | MOUNT_ATTR_NOEXEC,
			       err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* With an executables allow list, nothing the sandbox can write may be executed or mapped
 * executable: landlock checks execve() only, so a program written to /tmp could otherwise still be
 * loaded by the ELF interpreter ("ld.so /tmp/prog"). */
/* LAUNCHER_FILES_DIR in the root tmpfs, where airlock's files and the SSH agent's socket go. */
static int make_files_dir(struct al_error *err)
{
	if ((mkdir(LAUNCHER_NEWROOT "/run", 0755) < 0 && errno != EEXIST) ||
	    (mkdir(LAUNCHER_NEWROOT LAUNCHER_FILES_DIR, 0755) < 0 && errno != EEXIST))
		return al_error_set_errno(err, -errno, "Failed to create %s", LAUNCHER_FILES_DIR);
	return 0;
}

/* The files of launcher_options.files, in the root tmpfs at LAUNCHER_FILES_DIR (read-only with
 * the rest of the root once it is entered). */
static int setup_files(const struct launcher_options *opts, struct al_error *err)
{
	_cleanup_close_ int dir = -EBADF;
	int r;

	if (opts->n_files == 0)
		return 0;
	r = make_files_dir(err);
	if (r < 0)
		return r;
	dir = open(LAUNCHER_NEWROOT LAUNCHER_FILES_DIR,
		   O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dir < 0)
		return al_error_set_errno(err, -errno, "Failed to open %s", LAUNCHER_FILES_DIR);
	for (size_t i = 0; i < opts->n_files; i++) {
		const struct launcher_file *f = &opts->files[i];
		_cleanup_close_ int fd = -EBADF;

		fd = openat(dir, f->name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			    0444);
		if (fd < 0)
			return al_error_set_errno(err, -errno, "Failed to create %s/%s",
						  LAUNCHER_FILES_DIR, f->name);
		r = al_write_all(fd, f->data, f->len);
		if (r < 0)
			return al_error_set_errno(err, r, "Failed to write %s/%s",
						  LAUNCHER_FILES_DIR, f->name);
	}
	return 0;
}

/* With SSH keys: the agent's socket, bound here in the root tmpfs (only the sandbox sees the
 * path; the root becomes read-only, so nothing can replace it) and listening, handed to the
 * egress proxy, which serves it. Any of the sandbox's users may connect. */
static int setup_agent(const struct launcher_context *ctx, struct al_error *err)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	_cleanup_close_ int fd = -EBADF;
	int r;

	if (ctx->agent_fd < 0)
		return 0;
	(void)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s",
		       LAUNCHER_NEWROOT NETNS_SSH_AGENT_SOCKET);
	r = make_files_dir(err);
	if (r < 0)
		return r;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    chmod(sa.sun_path, 0666) < 0 || listen(fd, SOMAXCONN) < 0)
		return al_error_set_errno(err, -errno, "Failed to create the SSH agent's socket %s",
					  NETNS_SSH_AGENT_SOCKET);
	r = launcher_sync_send(ctx->agent_fd,
			       &(struct launcher_sync_msg){.type = LAUNCHER_SYNC_READY}, fd);
	(void)al_close(ctx->agent_fd);
	if (r < 0)
		return al_error_set_errno(err, r, "Failed to hand the SSH agent's socket over");
	return 0;
}

static bool has_allow_list(const struct policy *p)
{
	return p->executables.n > 0;
}

static int setup_tmp(const struct policy *p, struct al_error *err)
{
	char opts[64];
	int r;

	r = make_mountpoint(LAUNCHER_NEWROOT "/tmp", true, err);
	if (r < 0)
		return r;
	if (p->resources.disk > 0)
		(void)snprintf(opts, sizeof(opts), "mode=1777,size=%" PRIu64, p->resources.disk);
	else
		(void)snprintf(opts, sizeof(opts), "mode=1777");
	return do_mount("tmpfs", LAUNCHER_NEWROOT "/tmp", "tmpfs",
			MS_NOSUID | MS_NODEV | (has_allow_list(p) ? MS_NOEXEC : 0), opts, err);
}

/* Opens the bind sources before anything covers them. A source must be a mount of the caller's
 * own mount namespace, so the parent's fds cannot be used; instead no symbolic link is followed
 * (the parent checked that the canonical path has none, so one now means the path was changed)
 * and the object must be the very one the parent checked. */
static int open_bind_sources(const struct launcher_context *ctx, int *fds, struct al_error *err)
{
	struct open_how how = {
	    .flags = O_PATH | O_CLOEXEC,
	    .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	struct stat st;

	for (size_t i = 0; i < ctx->n_binds; i++) {
		const struct launcher_bind *b = &ctx->binds[i];

		fds[i] = (int)syscall(SYS_openat2, AT_FDCWD, b->source, &how, sizeof(how));
		if (fds[i] < 0)
			return al_error_set_errno(err, -errno, "%s: cannot open %s", b->target,
						  b->source);
		if (fstat(fds[i], &st) < 0 || st.st_dev != b->dev || st.st_ino != b->ino)
			return al_error_set(err, -ESTALE,
					    "%s: %s changed while the sandbox was being set up",
					    b->target, b->source);
	}
	return 0;
}

static void close_bind_sources(size_t n, int *fds)
{
	for (size_t i = 0; i < n; i++)
		fds[i] = al_close(fds[i]);
}

/* Walks target's folders below the new root, creating the missing ones, without following any
 * symbolic link: a target inside the workspace lies in a folder that an earlier sandbox shaped,
 * and a link planted there must not steer airlock's mkdir onto the host. Returns an O_PATH fd of
 * the last folder and copies the last component into name. */
static int open_parent_beneath(const char *target, char *name, size_t name_size,
			       struct al_error *err)
{
	_cleanup_close_ int cur = -EBADF;
	char path[PATH_MAX], *save = NULL, *c, *next;

	if ((size_t)snprintf(path, sizeof(path), "%s", target) >= sizeof(path))
		return al_error_set(err, -ENAMETOOLONG, "%s: path too long", target);
	cur = open(LAUNCHER_NEWROOT, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (cur < 0)
		return al_error_set_errno(err, -errno, "Failed to open the new root");
	c = strtok_r(path, "/", &save);
	if (!c)
		return al_error_set(err, -EINVAL, "%s: not a mount point", target);
	while ((next = strtok_r(NULL, "/", &save))) {
		int fd = openat(cur, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

		if (fd < 0 && errno == ENOENT) {
			if (mkdirat(cur, c, 0755) < 0 && errno != EEXIST)
				return al_error_set_errno(err, -errno,
							  "%s: cannot create folder %s", target, c);
			fd = openat(cur, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		}
		if (fd < 0)
			return al_error_set_errno(
			    err, -errno, "%s: %s is not a folder (a symbolic link?)", target, c);
		(void)al_close(cur);
		cur = fd;
		c = next;
	}
	if ((size_t)snprintf(name, name_size, "%s", c) >= name_size)
		return al_error_set(err, -ENAMETOOLONG, "%s: name too long", target);
	return TAKE_FD(cur);
}

/* Moves the detached mount tree to target, through fds only. */
static int attach_beneath(int tree, const char *target, bool dir, struct al_error *err)
{
	_cleanup_close_ int parent = -EBADF;
	char name[NAME_MAX + 1];
	int r;

	parent = open_parent_beneath(target, name, sizeof(name), err);
	if (parent < 0)
		return parent;
	r = make_point_at(parent, name, dir, target, err);
	if (r < 0)
		return r;
	if (move_mount(tree, "", parent, name, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return al_error_set_errno(err, -errno, "%s: cannot mount it", target);
	return 0;
}

/* Binds the tree of src_fd at target with the attributes attr: the copy of the tree gets its
 * attributes while still detached, then moves into place. */
static int bind_beneath(int src_fd, const char *target, bool dir, uint64_t attr,
			struct al_error *err)
{
	_cleanup_close_ int tree = -EBADF;
	struct mount_attr a = {.attr_set = attr};

	tree = open_tree(src_fd, "",
			 OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);
	if (tree < 0)
		return al_error_set_errno(err, -errno, "%s: cannot copy the source's mount",
					  target);
	if (mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &a, sizeof(a)) < 0)
		return al_error_set_errno(err, -errno, "%s: cannot set mount attributes", target);
	return attach_beneath(tree, target, dir, err);
}

/* The policy's mounts. */
static int setup_binds(const struct launcher_context *ctx, const int *fds, struct al_error *err)
{
	int r;

	for (size_t i = 0; i < ctx->n_binds; i++) {
		const struct launcher_bind *b = &ctx->binds[i];
		uint64_t attr =
		    (b->read_only ? ATTR_RO : ATTR_RW) |
		    (has_allow_list(ctx->policy) && !b->read_only ? MOUNT_ATTR_NOEXEC : 0);

		r = bind_beneath(fds[i], b->target, b->is_dir, attr, err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Creates a FUSE mount here, in the sandbox's own mount namespace, and hands its connection to
 * airlock, whose daemon serves it. Returns the detached mount. */
static int make_fuse_mount(const struct launcher_context *ctx, int which, uint64_t attr,
			   struct al_error *err)
{
	struct launcher_sync_msg m = {.type = LAUNCHER_SYNC_FUSE, .value = which};
	int fuse = -EBADF, mnt = -EBADF, r;

	r = fusefs_mount_detached(ctx->uid, ctx->gid, attr, which == LAUNCHER_FUSE_WORKSPACE, &fuse,
				  &mnt);
	if (r < 0)
		return al_error_set_errno(err, r, "Failed to create the %s FUSE mount",
					  which == LAUNCHER_FUSE_WORKSPACE ? "workspace"
									   : "credential files");
	r = launcher_sync_send(ctx->sync_fd, &m, fuse);
	/* The connection must be airlock's alone: if its daemon dies, the mount fails, rather
	 * than waiting on a reader that is still here. */
	(void)al_close(fuse);
	if (r < 0) {
		(void)al_close(mnt);
		return al_error_set_errno(err, r, "Failed to hand the FUSE connection to airlock");
	}
	return mnt;
}

/* The workspace (nothing the sandbox writes there may be run with an allow list), and the
 * credential files that lie outside it, each bound from the secrets mount. */
static int setup_workspace(const struct launcher_context *ctx, int ws, int secrets,
			   struct al_error *err)
{
	int r;

	r = attach_beneath(ws, ctx->policy->workspace.mount, true, err);
	for (size_t i = 0; r >= 0 && i < ctx->n_secret_files; i++) {
		const struct policy_credential *c = ctx->secret_files[i];
		_cleanup_close_ int tree = -EBADF;

		tree = open_tree(secrets, c->name, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
		if (tree < 0)
			return al_error_set_errno(err, -errno, "%s: cannot open credential %s",
						  c->path, c->name);
		r = attach_beneath(tree, c->path, false, err);
	}
	return r;
}

static int enter_scratch(struct al_error *err)
{
	int r;

	r = do_mount(NULL, "/", NULL, MS_SLAVE | MS_REC, NULL, err);
	if (r >= 0)
		r = do_mount("tmpfs", SCRATCH, "tmpfs", MS_NOSUID | MS_NODEV,
			     "mode=0700,size=64k,nr_inodes=16", err);
	if (r < 0)
		return r;
	if (mkdir(SCRATCH LAUNCHER_OLDROOT, 0700) < 0 || mkdir(SCRATCH LAUNCHER_NEWROOT, 0755) < 0)
		return al_error_set_errno(err, -errno, "Failed to create the scratch folders");
	r = do_mount("tmpfs", SCRATCH LAUNCHER_NEWROOT, "tmpfs", MS_NOSUID | MS_NODEV,
		     ROOT_TMPFS_OPTS, err);
	if (r < 0)
		return r;
	if (chdir(SCRATCH) < 0)
		return al_error_set_errno(err, -errno, "Failed to enter %s", SCRATCH);
	r = pivot_root(".", "." LAUNCHER_OLDROOT);
	if (r < 0)
		return al_error_set_errno(err, r, "Failed to pivot into the scratch root");
	if (chdir("/") < 0)
		return al_error_set_errno(err, -errno, "Failed to enter /");
	return 0;
}

static int enter_newroot(struct al_error *err)
{
	int r;

	if (chdir(LAUNCHER_NEWROOT) < 0)
		return al_error_set_errno(err, -errno, "Failed to enter the new root");
	r = pivot_root(".", ".");
	if (r < 0)
		return al_error_set_errno(err, r, "Failed to pivot into the new root");
	/* The old root (scratch tmpfs with the host's tree below it) is now stacked under the new
	 * root at "/": detach it and everything mounted under it. */
	if (umount2(".", MNT_DETACH) < 0)
		return al_error_set_errno(err, -errno, "Failed to detach the host's root");
	if (chdir("/") < 0)
		return al_error_set_errno(err, -errno, "Failed to enter /");
	return mount_attr("/", MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, false,
			  err);
}

int launcher_rootfs_setup(const struct launcher_context *ctx, struct al_error *err)
{
	int fds[ctx->n_binds + 1];
	_cleanup_close_ int ws = -EBADF, secrets = -EBADF;
	uint64_t noexec = has_allow_list(ctx->policy) ? MOUNT_ATTR_NOEXEC : 0;
	int r;

	for (size_t i = 0; i < ctx->n_binds; i++)
		fds[i] = -EBADF;
	r = open_bind_sources(ctx, fds, err);
	if (r >= 0)
		r = ws = make_fuse_mount(ctx, LAUNCHER_FUSE_WORKSPACE, noexec, err);
	if (r >= 0 && ctx->n_secret_files > 0)
		r = secrets = make_fuse_mount(ctx, LAUNCHER_FUSE_SECRETS, MOUNT_ATTR_NOEXEC, err);
	if (r >= 0)
		r = enter_scratch(err);
	if (r >= 0)
		r = ctx->image ? setup_image(ctx->image, err) : setup_host_system(err);
	if (r >= 0 && !ctx->image)
		r = setup_etc(ctx, err);
	if (r >= 0)
		r = setup_dev(ctx->userns, err);
	if (r >= 0)
		r = setup_proc(err);
	if (r >= 0)
		r = setup_tmp(ctx->policy, err);
	if (r >= 0)
		r = setup_files(ctx->opts, err);
	if (r >= 0)
		r = setup_agent(ctx, err);
	if (r >= 0)
		r = setup_workspace(ctx, ws, secrets, err);
	if (r >= 0)
		r = setup_binds(ctx, fds, err);
	close_bind_sources(ctx->n_binds, fds);
	if (r >= 0)
		r = enter_newroot(err);
	return r;
}
