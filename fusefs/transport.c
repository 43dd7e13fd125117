#define LOG_MODULE "fusefs"
#define FUSE_USE_VERSION FUSE_MAKE_VERSION(3, 12)

/* How the workspace's requests reach the daemon, and which opens bypass it.
 *
 * Transport: FUSE over io_uring (libfuse 3.18, a kernel with CONFIG_FUSE_IO_URING and the fuse
 * module's enable_uring on) where it can be had: one ring per CPU, each served by one thread,
 * and no read()/write() of /dev/fuse per request; otherwise the classic loop over /dev/fuse.
 *
 * Passthrough (libfuse 3.17, CONFIG_FUSE_PASSTHROUGH, CAP_SYS_ADMIN): an open may be answered
 * with a backing file, the host file the daemon opened; the kernel then reads, writes and maps it
 * with no request to the daemon. The rules are decided at open, as for every open, so that is no
 * loss for a read. A write the daemon does not see is one it cannot hold against a quota (whose
 * limit would be passed) nor count for the audit of writes (whose record has the bytes): a
 * workspace with either is served by the daemon alone, with the kernel's write-back cache (the
 * kernel offers one or the other on a connection, never both). The kernel holds each inode in one
 * I/O mode at a time, on one backing file or through the page cache: an open of the other kind
 * fails (EIO, ETXTBSY). So the daemon keeps count per inode: while it is open on a backing file,
 * every open of it passes through; while it is open through the cache, every open uses it. */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fuse_lowlevel.h>

#include "common/fd-util.h"
#include "common/log.h"
#include "fusefs/fusefs-internal.h"

#define URING_PARAM "/sys/module/fuse/parameters/enable_uring"
#define URING_DISABLED "/proc/sys/kernel/io_uring_disabled"

#if FUSE_VERSION >= FUSE_MAKE_VERSION(3, 18)
#define HAVE_URING 1
#else
#define HAVE_URING 0
#endif
#if FUSE_VERSION >= FUSE_MAKE_VERSION(3, 17)
#define HAVE_PASSTHROUGH 1
#define HAVE_KILLPRIV_V2 1
#else
#define HAVE_PASSTHROUGH 0
#define HAVE_KILLPRIV_V2 0
#endif

/* The first character of a small /sys or /proc file, or -errno. */
static int read_char(const char *path)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	char c;

	if (fd < 0)
		return -errno;
	if (read(fd, &c, 1) != 1)
		return -EIO;
	return (unsigned char)c;
}

/* AIRLOCK_FS_TRANSPORT: "uring" (required: the mount fails without it), "dev" (the classic
 * loop), unset or "auto". AIRLOCK_FS_PASSTHROUGH=0 turns passthrough off. Both only choose
 * between ways of serving the same guarantees; the tests run the suite each way. */
int fusefs_transport_choose(struct fusefs *fs, struct al_error *err)
{
	const char *t = secure_getenv("AIRLOCK_FS_TRANSPORT");
	const char *p = secure_getenv("AIRLOCK_FS_PASSTHROUGH");

	if (!t || streq(t, "") || streq(t, "auto"))
		fs->uring = FUSEFS_URING_AUTO;
	else if (streq(t, "uring"))
		fs->uring = FUSEFS_URING_REQUIRED;
	else if (streq(t, "dev"))
		fs->uring = FUSEFS_URING_OFF;
	else
		return al_error_set(
		    err, -EINVAL,
		    "AIRLOCK_FS_TRANSPORT=%s: expected \"auto\", \"uring\" or \"dev\"", t);
	if (p && !streq(p, "") && !streq(p, "0") && !streq(p, "1"))
		return al_error_set(err, -EINVAL, "AIRLOCK_FS_PASSTHROUGH=%s: expected 0 or 1", p);
	fs->passthrough_wanted = HAVE_PASSTHROUGH && !(p && streq(p, "0"));
	if (fs->uring == FUSEFS_URING_REQUIRED) {
		struct fusefs_features f;

		fusefs_features(&f);
		if (f.transport != FUSEFS_TRANSPORT_URING)
			return al_error_set(err, -EOPNOTSUPP,
					    "AIRLOCK_FS_TRANSPORT=uring: FUSE over io_uring is not "
					    "available: %s",
					    f.transport_why);
	}
	return 0;
}

/* Turns the fuse module's enable_uring on, as root, with one line saying so. */
static void uring_enable(void)
{
	_cleanup_close_ int fd = -EBADF;

	if (geteuid() != 0 || read_char(URING_PARAM) != 'N')
		return;
	fd = open(URING_PARAM, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "1", 1) != 1) {
		log_debug_errno(-errno, "Turning on FUSE over io_uring failed: %m");
		return;
	}
	log_notice("FUSE over io_uring turned on (%s: 1)", URING_PARAM);
}

void fusefs_features(struct fusefs_features *ret)
{
	int param = read_char(URING_PARAM), disabled = read_char(URING_DISABLED);
	bool root = geteuid() == 0;

	*ret = (struct fusefs_features){.transport = FUSEFS_TRANSPORT_DEV};
	(void)snprintf(ret->libfuse, sizeof(ret->libfuse), "%s", fuse_pkgversion());
	if (!HAVE_URING)
		(void)snprintf(
		    ret->transport_why, sizeof(ret->transport_why),
		    "libfuse %s has no io_uring transport (3.18 has: scripts/dev.sh deps "
		    "builds it)",
		    ret->libfuse);
	else if (param == -ENOENT)
		(void)snprintf(ret->transport_why, sizeof(ret->transport_why),
			       "the kernel has no FUSE over io_uring (CONFIG_FUSE_IO_URING)");
	else if (disabled == '2' || (disabled == '1' && !root))
		(void)snprintf(ret->transport_why, sizeof(ret->transport_why),
			       "io_uring is disabled (%s is %c)", URING_DISABLED, disabled);
	else if (param != 'Y' && !root)
		(void)snprintf(ret->transport_why, sizeof(ret->transport_why),
			       "%s is off, and only root may turn it on", URING_PARAM);
	else {
		ret->transport = FUSEFS_TRANSPORT_URING;
		(void)snprintf(ret->transport_why, sizeof(ret->transport_why), "%s",
			       param == 'Y' ? "the kernel's fuse module has enable_uring on"
					    : "root turns the fuse module's enable_uring on");
	}
	if (!HAVE_PASSTHROUGH)
		(void)snprintf(ret->passthrough_why, sizeof(ret->passthrough_why),
			       "libfuse %s has no passthrough (3.17 has)", ret->libfuse);
	else if (!root)
		(void)snprintf(ret->passthrough_why, sizeof(ret->passthrough_why),
			       "backing files need CAP_SYS_ADMIN: only a run as root passes opens "
			       "through");
	else {
		ret->passthrough = true;
		(void)snprintf(ret->passthrough_why, sizeof(ret->passthrough_why),
			       "reads pass through; writes too where no quota or write audit is "
			       "set (when the kernel offers it: CONFIG_FUSE_PASSTHROUGH)");
	}
}

const char *fusefs_transport_name(enum fusefs_transport t)
{
	return t == FUSEFS_TRANSPORT_URING ? "io_uring" : "/dev/fuse";
}

const char *fusefs_transport_option(struct fusefs *fs, bool secrets)
{
	if (!HAVE_URING || secrets || fs->uring == FUSEFS_URING_OFF)
		return NULL;
	uring_enable();
	return "io_uring";
}

/* ---- INIT ---- */

#if HAVE_PASSTHROUGH
static bool want(struct fuse_conn_info *conn, uint64_t flag)
{
	return fuse_set_feature_flag(conn, flag);
}

static void unwant(struct fuse_conn_info *conn, uint64_t flag)
{
	fuse_unset_feature_flag(conn, flag);
}
#else
static bool want(struct fuse_conn_info *conn, uint64_t flag)
{
	conn->want |= (unsigned)flag & conn->capable;
	return (conn->capable & flag) != 0;
}

static void unwant(struct fuse_conn_info *conn, uint64_t flag)
{
	conn->want &= ~(unsigned)flag;
}
#endif

void fusefs_transport_init(struct fusefs *fs, struct fuse_conn_info *conn, bool workspace)
{
	static const uint64_t wanted[] = {
	    FUSE_CAP_SPLICE_WRITE,     FUSE_CAP_SPLICE_MOVE,	 FUSE_CAP_READDIRPLUS,
	    FUSE_CAP_READDIRPLUS_AUTO, FUSE_CAP_PARALLEL_DIROPS, FUSE_CAP_CACHE_SYMLINKS,
	    FUSE_CAP_ATOMIC_O_TRUNC,   FUSE_CAP_ASYNC_READ,	 FUSE_CAP_DONT_MASK,
	    FUSE_CAP_IOCTL_DIR,
	};

	for (size_t i = 0; i < ELEMENTSOF(wanted); i++)
		(void)want(conn, wanted[i]);
	/* Requests are read, not spliced: libfuse splices a request into a pipe of its whole buffer
	 * (1 MiB and a page), and where the pipe cannot grow that far (above pipe-max-size without
	 * CAP_SYS_RESOURCE: any user, and root in a container) it makes a new pipe and fails again
	 * for every request, seven system calls each (measured: 1,871 pipes for 3,000 unlinks, the
	 * FORGETs that come over /dev/fuse even with io_uring). Splicing gained nothing measurable
	 * where it worked (docs/BENCHMARKS.md). */
	unwant(conn, FUSE_CAP_SPLICE_READ);
	/* Locks stay the kernel's: every process using them is behind this one mount. */
	unwant(conn, FUSE_CAP_POSIX_LOCKS);
	unwant(conn, FUSE_CAP_FLOCK_LOCKS);
	/* The credential files: no cache of any kind (fs's flags are the workspace's). */
	if (!workspace)
		return;
	fs->passthrough = false;
	fs->writeback = false;
#if HAVE_KILLPRIV_V2
	/* Without it, the kernel asks for security.capability (GETXATTR) before every write to
	 * learn whether the write must drop privileges: a round trip per write(). With it, the
	 * daemon drops set-user-ID and set-group-ID itself (ops.c, kill_suidgid()), the kernel
	 * asks once per inode, and a capability xattr is the host's to drop (it does, on any
	 * write, whoever writes). */
	fs->killpriv = want(conn, FUSE_CAP_HANDLE_KILLPRIV_V2);
#endif
#if HAVE_URING
	if (fs->uring != FUSEFS_URING_OFF)
		(void)want(conn, FUSE_CAP_OVER_IO_URING);
#endif
#if HAVE_PASSTHROUGH
	/* The kernel offers passthrough or the write-back cache, never both on one connection;
	 * a backing file needs CAP_SYS_ADMIN; writes the daemon does not see escape a quota and
	 * the audit of writes. */
	if (fs->passthrough_wanted && fs->euid == 0 && fs->quota == 0 && !fs->audit &&
	    want(conn, FUSE_CAP_PASSTHROUGH)) {
		fs->passthrough = true;
		/* The workspace's host folder is at depth 0 (ext4) or 1 (overlayfs): the FUSE
		 * layer adds one; the kernel allows two in all. */
		conn->max_backing_stack_depth = 1;
		return;
	}
#endif
	fs->writeback = want(conn, FUSE_CAP_WRITEBACK_CACHE);
}

/* ---- per open ---- */

bool fusefs_io_kill_suidgid(const struct fuse_file_info *fi)
{
#if HAVE_KILLPRIV_V2
	return fi->kill_suidgid;
#else
	(void)fi;
	return false;
#endif
}

int fusefs_io_open(struct fusefs *fs, struct fuse_req *req, struct fusefs_inode *in, int fd,
		   enum fusefs_pass pass, struct fuse_file_info *fi, enum fusefs_io *ret)
{
	enum fusefs_io io = FUSEFS_IO_CACHED;
	int r = 0;

	*ret = FUSEFS_IO_NONE;
	if (!fs->passthrough)
		return 0;
	pthread_mutex_lock(&fs->quota_lock);
	/* While the inode is open on a backing file, the kernel takes no other kind of open of it
	 * (EIO): the next one passes through too, or, when it must not, is refused. */
	if (in->passthrough_opens > 0 && pass == FUSEFS_PASS_NEVER) {
		r = -EBUSY;
	} else if (in->passthrough_opens > 0 ||
		   (pass == FUSEFS_PASS_BEST && !fs->passthrough_failed && in->cached_opens == 0)) {
#if HAVE_PASSTHROUGH
		if (in->backing_id <= 0)
			in->backing_id = fuse_passthrough_open(req, fd);
		/* Refused (a host folder stacked too deep, no CAP_SYS_ADMIN after all): the daemon
		 * serves every open from now on. */
		if (in->backing_id <= 0)
			fs->passthrough_failed = true;
		if (in->backing_id > 0) {
			in->passthrough_opens++;
			fi->backing_id = in->backing_id;
			fi->keep_cache = 0;
			io = FUSEFS_IO_PASSTHROUGH;
		}
#else
		(void)req, (void)fd;
#endif
	}
	if (r >= 0 && io == FUSEFS_IO_CACHED)
		in->cached_opens++;
	pthread_mutex_unlock(&fs->quota_lock);
	if (r >= 0)
		*ret = io;
	return r;
}

void fusefs_io_release(struct fusefs *fs, struct fuse_req *req, struct fusefs_inode *in,
		       enum fusefs_io io)
{
	int id = 0;

	if (io == FUSEFS_IO_NONE)
		return;
	pthread_mutex_lock(&fs->quota_lock);
	if (io == FUSEFS_IO_CACHED && in->cached_opens > 0)
		in->cached_opens--;
	else if (io == FUSEFS_IO_PASSTHROUGH && in->passthrough_opens > 0 &&
		 --in->passthrough_opens == 0) {
		id = in->backing_id;
		in->backing_id = 0;
	}
	pthread_mutex_unlock(&fs->quota_lock);
#if HAVE_PASSTHROUGH
	if (id > 0)
		(void)fuse_passthrough_close(req, id);
#else
	(void)req, (void)id;
#endif
}

/* ---- notifications sent after the request ----
 * An invalidation the kernel gets from a request's own handler can wait for a lock that request
 * holds: with io_uring the reply goes out only after the handler returns, and an entry's
 * invalidation waits for its folder's lock, which a rename holds until its reply. So handlers
 * queue them, and one thread sends them (the kernel ignores those of inodes it forgot). */

struct fusefs_notice {
	struct fusefs_notice *next;
	struct fuse_session *se;
	fuse_ino_t parent; /* with name: the entry; else the inode ino's attributes and pages */
	fuse_ino_t ino;
	char name[];
};

static void *notifier(void *arg)
{
	struct fusefs *fs = arg;
	struct fusefs_notice *n;

	for (;;) {
		pthread_mutex_lock(&fs->notify_lock);
		while (!fs->notices && !fs->notify_stop)
			pthread_cond_wait(&fs->notify_cond, &fs->notify_lock);
		if (!fs->notices) {
			pthread_mutex_unlock(&fs->notify_lock);
			return NULL;
		}
		n = fs->notices;
		fs->notices = n->next;
		pthread_mutex_unlock(&fs->notify_lock);
		if (n->name[0])
			(void)fuse_lowlevel_notify_inval_entry(n->se, n->parent, n->name,
							       strlen(n->name));
		else
			(void)fuse_lowlevel_notify_inval_inode(n->se, n->ino, 0, 0);
		free(n);
	}
	return NULL;
}

void fusefs_notify_later(struct fusefs *fs, struct fuse_session *se, uint64_t parent,
			 const char *name, uint64_t ino)
{
	size_t len = name ? strlen(name) : 0;
	struct fusefs_notice *n = malloc(sizeof(*n) + len + 1), **tail;

	if (!n)
		return; /* the kernel's caches expire by themselves */
	*n = (struct fusefs_notice){.se = se, .parent = parent, .ino = ino};
	memcpy(n->name, name ? name : "", len + 1);
	pthread_mutex_lock(&fs->notify_lock);
	if (!fs->notifier_started) {
		if (pthread_create(&fs->notifier, NULL, notifier, fs) != 0) {
			pthread_mutex_unlock(&fs->notify_lock);
			free(n);
			return;
		}
		fs->notifier_started = true;
	}
	for (tail = &fs->notices; *tail; tail = &(*tail)->next)
		;
	*tail = n;
	pthread_cond_signal(&fs->notify_cond);
	pthread_mutex_unlock(&fs->notify_lock);
}

void fusefs_notify_stop(struct fusefs *fs)
{
	pthread_mutex_lock(&fs->notify_lock);
	fs->notify_stop = true;
	pthread_cond_signal(&fs->notify_cond);
	pthread_mutex_unlock(&fs->notify_lock);
	if (fs->notifier_started)
		(void)pthread_join(fs->notifier, NULL);
	fs->notifier_started = false;
}
