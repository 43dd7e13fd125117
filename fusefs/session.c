#define LOG_MODULE "fusefs"
#define FUSE_USE_VERSION FUSE_MAKE_VERSION(3, 12)

/* Placing and serving the filesystem. Inside `airlock run` the sandbox child makes the mount
 * (fusefs_mount_detached()) in its own mount namespace and hands the /dev/fuse fd to the daemon
 * process, which serves it: the mount exists nowhere else, so nothing can be left on the host,
 * and it goes away with the sandbox. `airlock fs` mounts in the caller's namespace instead. */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fuse_lowlevel.h>

#include "common/fd-util.h"
#include "common/log.h"
#include "common/path-util.h"
#include "common/watcher.h"
#include "fusefs/fusefs-internal.h"

#define SERVE_THREADS_MAX 8

static int fs_config(int fsfd, const char *key, const char *value)
{
	return RET_NERRNO(
	    fsconfig(fsfd, value ? FSCONFIG_SET_STRING : FSCONFIG_SET_FLAG, key, value, 0));
}

int fusefs_mount_detached(uid_t uid, gid_t gid, uint64_t attrs, bool default_permissions,
			  int *ret_fuse_fd, int *ret_mount_fd)
{
	_cleanup_close_ int fuse = -EBADF, fsfd = -EBADF;
	char fd_s[16], uid_s[16], gid_s[16];
	int mnt, r;

	fuse = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (fuse < 0)
		return -errno;
	fsfd = fsopen("fuse", FSOPEN_CLOEXEC);
	if (fsfd < 0)
		return -errno;
	(void)snprintf(fd_s, sizeof(fd_s), "%d", fuse);
	(void)snprintf(uid_s, sizeof(uid_s), "%u", (unsigned)uid);
	(void)snprintf(gid_s, sizeof(gid_s), "%u", (unsigned)gid);
	r = fs_config(fsfd, "source", "airlock");
	if (r >= 0)
		r = fs_config(fsfd, "subtype", "airlock");
	if (r >= 0)
		r = fs_config(fsfd, "fd", fd_s);
	if (r >= 0)
		r = fs_config(fsfd, "rootmode", "40000");
	if (r >= 0)
		r = fs_config(fsfd, "user_id", uid_s);
	if (r >= 0)
		r = fs_config(fsfd, "group_id", gid_s);
	/* The kernel checks permissions against the modes, as any file system does: the daemon
	 * itself may bypass them, the sandbox's processes may not. */
	if (r >= 0 && default_permissions)
		r = fs_config(fsfd, "default_permissions", NULL);
	if (r >= 0)
		r = fs_config(fsfd, "allow_other", NULL);
	if (r >= 0)
		r = RET_NERRNO(fsconfig(fsfd, FSCONFIG_CMD_CREATE, NULL, NULL, 0));
	if (r < 0)
		return r;
	mnt = fsmount(fsfd, FSMOUNT_CLOEXEC, MOUNT_ATTR_NODEV | MOUNT_ATTR_NOSUID | attrs);
	if (mnt < 0)
		return -errno;
	*ret_fuse_fd = TAKE_FD(fuse);
	*ret_mount_fd = mnt;
	return 0;
}

/* Hands fd, an opened /dev/fuse whose mount exists, to se. */
static int session_attach(struct fuse_session *se, int fd)
{
	char path[32];

	(void)snprintf(path, sizeof(path), "/dev/fd/%d", fd);
	return fuse_session_mount(se, path) == 0 ? 0 : -EIO;
}

static int loop(struct fuse_session *se)
{
	struct fuse_loop_config *cfg;
	int r;

	cfg = fuse_loop_cfg_create();
	if (!cfg)
		return -ENOMEM;
	/* Each worker reads its own clone of the connection: no lock around /dev/fuse. */
	fuse_loop_cfg_set_clone_fd(cfg, 1);
	fuse_loop_cfg_set_max_threads(cfg, SERVE_THREADS_MAX);
	fuse_loop_cfg_set_idle_threads(cfg, 4);
	r = fuse_session_loop_mt(se, cfg);
	fuse_loop_cfg_destroy(cfg);
	/* The kernel aborts a connection whose mount went away with the sandbox: its end. */
	if (r == -ECONNABORTED || r == -ENODEV)
		r = 0;
	return r < 0 ? r : 0;
}

static void *serve_secrets(void *arg)
{
	(void)fuse_session_loop(arg);
	return NULL;
}

int fusefs_serve(struct fusefs *fs, int fuse_fd, int secrets_fd)
{
	_cleanup_close_ int fd = fuse_fd, sfd = secrets_fd;
	struct fuse_session *se = NULL, *secrets = NULL;
	pthread_t thread;
	int r;

	r = fusefs_session_new(fs, false, &se);
	if (r >= 0)
		r = session_attach(se, fd);
	if (r < 0)
		goto out;
	fd = -EBADF; /* the session's now */
	if (sfd >= 0) {
		r = fusefs_session_new(fs, true, &secrets);
		if (r >= 0)
			r = session_attach(secrets, sfd);
		if (r < 0)
			goto out;
		sfd = -EBADF;
		r = -pthread_create(&thread, NULL, serve_secrets, secrets);
		if (r < 0)
			goto out;
		/* It ends with its connection, or with the process. */
		(void)pthread_detach(thread);
		secrets = NULL;
	}
	/* No signal handlers: a daemon that is signalled dies of it, and its parent sees why. */
	r = loop(se);
out:
	fusefs_notify_stop(fs);
	if (secrets)
		fuse_session_destroy(secrets);
	if (se)
		fuse_session_destroy(se);
	return r;
}

/* Whether mount id is still mounted (at all) in our namespace. */
static bool still_mounted(uint64_t id)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
	unsigned long long mid;
	char line[4096];

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%llu", &mid) == 1 && mid == id)
			return true;
	return false;
}

/* A process that unmounts mountpoint if `airlock fs` ends without doing it (SIGKILL, a crash):
 * a dead FUSE mount would stay on the host, failing every access with ENOTCONN. A watcher
 * (common/watcher.h), holding no fd of the mount: once airlock ended, it detaches the mount if it
 * is still the one made here (by mount id). Returns it in *ret_pid. */
static int start_unmount_watcher(int mnt, const char *mountpoint, pid_t *ret_pid)
{
	struct statx stx;
	pid_t pid;
	int r;

	/* AT_STATX_DONT_SYNC: no request to a filesystem that is not served yet. */
	if (statx(mnt, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_MNT_ID, &stx) < 0)
		return -errno;
	if (!(stx.stx_mask & STATX_MNT_ID))
		return -EOPNOTSUPP;
	r = al_watcher_fork("airlock-unmount", NULL, 0, &pid);
	if (r < 0)
		return r;
	if (r == 0) {
		if (still_mounted(stx.stx_mnt_id))
			(void)umount2(mountpoint, MNT_DETACH | UMOUNT_NOFOLLOW);
		_exit(EXIT_SUCCESS);
	}
	*ret_pid = pid;
	return 0;
}

static int mount_at(const char *mountpoint, struct fuse_session *se, bool *ret_by_us,
		    pid_t *ret_watcher, struct al_error *err)
{
	pid_t watcher = 0;
	_cleanup_close_ int fuse = -EBADF, mnt = -EBADF;
	int r;

	if (geteuid() != 0) {
		/* Without privileges libfuse mounts through fusermount3. */
		if (fuse_session_mount(se, mountpoint) != 0)
			return al_error_set(err, -EPERM, "Failed to mount %s with fusermount3",
					    mountpoint);
		*ret_by_us = false;
		return 0;
	}
	r = fusefs_mount_detached(0, 0, 0, true, &fuse, &mnt);
	if (r < 0)
		return al_error_set_errno(err, r, "Failed to create the FUSE mount");
	if (move_mount(mnt, "", AT_FDCWD, mountpoint, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return al_error_set_errno(err, -errno, "Failed to mount on %s", mountpoint);
	r = start_unmount_watcher(mnt, mountpoint, &watcher);
	if (r < 0) {
		(void)umount2(mountpoint, MNT_DETACH);
		return al_error_set_errno(err, r, "Failed to start the unmount watcher");
	}
	r = session_attach(se, fuse);
	if (r < 0) {
		(void)umount2(mountpoint, MNT_DETACH);
		al_watcher_stop(&watcher);
		return al_error_set_errno(err, r, "Failed to serve %s", mountpoint);
	}
	fuse = -EBADF;
	*ret_by_us = true;
	*ret_watcher = watcher;
	return 0;
}

/* The session `airlock fs` serves, for its signal handler: a signal handler reaches nothing else.
 */
static struct fuse_session *foreground_session;

static void on_stop_signal(int sig)
{
	(void)sig;
	if (foreground_session)
		fuse_session_exit(foreground_session);
}

/* Unlike libfuse's own handlers, these also replace an ignored disposition: started in the
 * background by a script, airlock fs still stops on SIGINT. */
static int stop_signals(struct fuse_session *se, bool on)
{
	struct sigaction sa = {.sa_handler = on ? on_stop_signal : SIG_DFL};
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};

	foreground_session = on ? se : NULL;
	(void)sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < ELEMENTSOF(sigs); i++)
		if (sigaction(sigs[i], &sa, NULL) < 0)
			return -errno;
	return 0;
}

int fusefs_run_foreground(struct fusefs *fs, const char *mountpoint, struct al_error *err)
{
	_cleanup_free_ char *canonical = NULL;
	struct fuse_session *se = NULL;
	char root[PATH_MAX], proc[32];
	struct stat st;
	bool by_us = false;
	pid_t watcher = 0;
	ssize_t n;
	int r;

	canonical = realpath(mountpoint, NULL);
	if (!canonical || stat(canonical, &st) < 0)
		return al_error_set_errno(err, -errno, "%s", mountpoint);
	if (!S_ISDIR(st.st_mode))
		return al_error_set(err, -ENOTDIR, "%s is not a folder", mountpoint);
	(void)snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fs->root_fd);
	n = readlink(proc, root, sizeof(root) - 1);
	if (n < 0)
		return al_error_set_errno(err, -errno, "Failed to name the workspace root");
	root[n] = '\0';
	/* Served from inside itself, the daemon would wait on its own requests. */
	if (al_path_is_within(canonical, root))
		return al_error_set(err, -EINVAL, "%s lies inside the workspace %s", mountpoint,
				    root);
	r = fusefs_session_new(fs, false, &se);
	if (r < 0)
		return al_error_set_errno(err, r, "Failed to create the FUSE session");
	r = mount_at(canonical, se, &by_us, &watcher, err);
	if (r < 0) {
		fuse_session_destroy(se);
		return r;
	}
	r = stop_signals(se, true);
	if (r < 0) {
		al_error_set_errno(err, r, "Failed to set up signal handling");
	} else {
		r = loop(se);
		if (r < 0)
			al_error_set_errno(err, r, "Failed to serve %s", mountpoint);
	}
	(void)stop_signals(se, false);
	if (by_us)
		(void)umount2(canonical, MNT_DETACH);
	else
		fuse_session_unmount(se);
	fusefs_notify_stop(fs);
	fuse_session_destroy(se);
	/* Unmounted already: the watcher is not needed. */
	al_watcher_stop(&watcher);
	return r;
}
