#define LOG_MODULE "launcher"

/* Copying folder trees by fds: a session's checkpoint and restore, run by its pid 1
 * inside the sandbox, through the workspace's own mount. Links are copied as links and never
 * followed; what cannot be copied is counted, and the copy goes on. Copying from the workspace,
 * each folder and file is refreshed first (FUSEFS_IOC_REFRESH): the kernel's caches of it may
 * predate a change the host made behind the mount. */

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fd-util.h"
#include "fusefs/fusefs.h"
#include "launcher/launcher-internal.h"

#define TREE_DEPTH_MAX 256 /* three fds a level: within a sandbox's default RLIMIT_NOFILE */
#define CHUNK 65536

static void count_failure(struct launcher_tree_stats *st, int r, const char *name)
{
	if (st->failed++ == 0)
		(void)snprintf(st->first, sizeof(st->first), "%.64s: %.50s", name,
			       r == -EFBIG ? "past the workspace quota" : strerror(-r));
}

static bool is_zero(const char *p, size_t n)
{
	return n == 0 || (p[0] == 0 && memcmp(p, p + 1, n - 1) == 0);
}

/* Copies [from, end) of the data, leaving a hole where it reads as zeros. */
static int copy_range(int from, int to, off_t pos, off_t end)
{
	char buf[CHUNK];

	while (pos < end) {
		ssize_t n = pread(from, buf, (size_t)MIN((off_t)sizeof(buf), end - pos), pos);
		int r;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break; /* it shrank meanwhile */
		if (!is_zero(buf, (size_t)n)) {
			if (lseek(to, pos, SEEK_SET) < 0)
				return -errno;
			r = al_write_all(to, buf, (size_t)n);
			if (r < 0)
				return r;
		}
		pos += n;
	}
	return 0;
}

/* Copies the data region by region (SEEK_DATA/SEEK_HOLE): holes stay holes and cost nothing to
 * skip; where the file system cannot tell, all of it is read and zeros become holes. */
static int copy_data(int from, int to, off_t size)
{
	off_t pos = 0;
	int r;

	while (pos < size) {
		off_t data = lseek(from, pos, SEEK_DATA), hole;

		if (data < 0 && errno == ENXIO)
			break; /* only a hole is left */
		if (data < 0) {
			r = copy_range(from, to, pos, size);
			if (r < 0)
				return r;
			break;
		}
		hole = lseek(from, data, SEEK_HOLE);
		if (hole < 0)
			hole = size;
		r = copy_range(from, to, data, MIN(hole, size));
		if (r < 0)
			return r;
		pos = hole;
	}
	return ftruncate(to, size) < 0 ? -errno : 0;
}

/* Has the workspace's daemon drop the kernel's caches of fd (a file or folder of the workspace
 * mount), into *size the host file's size (the kernel's may be stale). No-op without st->refresh.
 */
static int refresh(int fd, const struct launcher_tree_stats *st, off_t *size)
{
	uint64_t host_size;

	if (!st->refresh)
		return 0;
	if (ioctl(fd, FUSEFS_IOC_REFRESH, &host_size) < 0)
		return -errno;
	if (size)
		*size = (off_t)host_size;
	return 0;
}

/* A file with other names: the copy of its first one is linked again for the others, so that
 * a file with fifty names is copied once (and stays one file). */
static bool link_again(int dst_dir, const char *name, const struct stat *s,
		       struct launcher_tree_stats *st)
{
	char path[64];

	for (size_t i = 0; i < st->n_links; i++) {
		if (st->links[i].dev != s->st_dev || st->links[i].ino != s->st_ino)
			continue;
		(void)snprintf(path, sizeof(path), "/proc/self/fd/%d", st->links[i].fd);
		return linkat(AT_FDCWD, path, dst_dir, name, AT_SYMLINK_FOLLOW) == 0;
	}
	return false;
}

static void remember_link(int to, const struct stat *s, struct launcher_tree_stats *st)
{
	if (s->st_nlink < 2 || st->n_links >= LAUNCHER_TREE_LINKS_MAX)
		return;
	st->links[st->n_links].fd = fcntl(to, F_DUPFD_CLOEXEC, 3);
	if (st->links[st->n_links].fd < 0)
		return;
	st->links[st->n_links].dev = s->st_dev;
	st->links[st->n_links].ino = s->st_ino;
	st->n_links++;
}

/* Whether the two files hold the same bytes (size bytes each). */
static bool same_data(int a, int b, off_t size)
{
	char x[CHUNK], y[CHUNK];

	for (off_t pos = 0; pos < size;) {
		size_t want = (size_t)MIN((off_t)sizeof(x), size - pos);
		ssize_t n = pread(a, x, want, pos), k = pread(b, y, want, pos);

		if (n <= 0 || n != k || memcmp(x, y, (size_t)n) != 0)
			return false;
		pos += n;
	}
	return true;
}

/* Whether name in dst_dir (an entry a restore's emptying kept: the sandbox cannot remove it) is
 * already the regular file s describes in src_dir: same mode, size and bytes. Such a file is left
 * as it is, without a write the workspace would refuse. */
static bool kept_file_is_same(int src_dir, int dst_dir, const char *name, const struct stat *s)
{
	_cleanup_close_ int a = -EBADF, b = -EBADF;
	uint64_t host_size;
	struct stat d;

	if (fstatat(dst_dir, name, &d, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(d.st_mode))
		return false;
	b = openat(dst_dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (b < 0)
		return false;
	/* The host may have changed it behind the mount: its size and bytes are the host's. */
	if (ioctl(b, FUSEFS_IOC_REFRESH, &host_size) == 0)
		d.st_size = (off_t)host_size;
	if ((d.st_mode & 07777) != (s->st_mode & 07777) || d.st_size != s->st_size)
		return false;
	a = openat(src_dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	return a >= 0 && same_data(a, b, s->st_size);
}

static int copy_file(int src_dir, int dst_dir, const char *name, const struct stat *s,
		     struct launcher_tree_stats *st)
{
	_cleanup_close_ int from = -EBADF, to = -EBADF;
	off_t size = s->st_size;
	int r;

	if (st->restoring && kept_file_is_same(src_dir, dst_dir, name, s))
		return 0;
	if (s->st_nlink > 1 && link_again(dst_dir, name, s, st))
		return 0;
	/* The budget counts what a file takes (its blocks, as the quota does), before a byte is
	 * read: its copy takes no more, holes staying holes. */
	if (st->budget && (uint64_t)s->st_blocks * 512 > st->budget - MIN(st->used, st->budget))
		return -EFBIG;
	st->used += (uint64_t)s->st_blocks * 512;
	from = openat(src_dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (from < 0)
		return -errno;
	r = refresh(from, st, &size);
	if (r < 0)
		return r;
	to = openat(dst_dir, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
		    s->st_mode & 07777);
	if (to < 0)
		return -errno;
	r = copy_data(from, to, size);
	if (r >= 0 && fchmod(to, s->st_mode & 07777) < 0)
		r = -errno;
	if (r >= 0)
		remember_link(to, s, st);
	return r;
}

static int copy_link(int src_dir, int dst_dir, const char *name, bool kept)
{
	_cleanup_free_ char *target = malloc(PATH_MAX);
	ssize_t n;

	if (!target)
		return -ENOMEM;
	n = readlinkat(src_dir, name, target, PATH_MAX - 1);
	if (n < 0)
		return -errno;
	target[n] = '\0';
	if (kept) {
		_cleanup_free_ char *now = malloc(PATH_MAX);
		ssize_t k = now ? readlinkat(dst_dir, name, now, PATH_MAX - 1) : -1;

		if (k == n && memcmp(now, target, (size_t)n) == 0)
			return 0; /* kept, and already the same link */
	}
	(void)unlinkat(dst_dir, name, 0);
	return symlinkat(target, dst_dir, name) < 0 ? -errno : 0;
}

static int copy_entry(int src_dir, int dst_dir, const char *name, int depth,
		      struct launcher_tree_stats *st)
{
	struct stat s;

	if (fstatat(src_dir, name, &s, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	/* Another file system mounted below (a policy's mount): not the workspace's to copy. */
	if (s.st_dev != st->dev) {
		st->skipped++;
		return 0;
	}
	if (S_ISDIR(s.st_mode)) {
		_cleanup_close_ int from = -EBADF, to = -EBADF;
		struct stat kept;

		if (depth >= TREE_DEPTH_MAX)
			return -ELOOP;
		if (mkdirat(dst_dir, name, 0700) < 0 && errno != EEXIST)
			return -errno;
		from = openat(src_dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		to = openat(dst_dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (from < 0 || to < 0)
			return -errno;
		launcher_tree_copy(from, to, depth + 1, st);
		/* A folder a restore kept may refuse a change of mode; it needs none if it has the
		 * checkpoint's. */
		if (st->restoring && fstat(to, &kept) == 0 &&
		    (kept.st_mode & 07777) == (s.st_mode & 07777))
			return 0;
		return fchmod(to, s.st_mode & 07777) < 0 ? -errno : 0;
	}
	if (S_ISLNK(s.st_mode))
		return copy_link(src_dir, dst_dir, name, st->restoring);
	if (S_ISREG(s.st_mode))
		return copy_file(src_dir, dst_dir, name, &s, st);
	/* FIFOs, sockets, devices: nothing in them to keep. */
	st->skipped++;
	return 0;
}

void launcher_tree_copy(int src_dir, int dst_dir, int depth, struct launcher_tree_stats *st)
{
	struct stat self;
	DIR *d = NULL;
	int fd, r;

	/* Before it is listed: the kernel may keep an old listing and old "no such file"s. */
	r = refresh(src_dir, st, NULL);
	if (r >= 0) {
		fd = fcntl(src_dir, F_DUPFD_CLOEXEC, 3);
		d = fd >= 0 ? fdopendir(fd) : NULL;
		if (!d)
			r = -errno;
		if (fd >= 0 && !d)
			(void)al_close(fd);
	}
	if (r < 0) {
		count_failure(st, r, ".");
		return;
	}
	if (depth == 0 && fstat(src_dir, &self) == 0)
		st->dev = self.st_dev;
	for (struct dirent *de; (de = readdir(d));) {
		if (streq(de->d_name, ".") || streq(de->d_name, ".."))
			continue;
		r = copy_entry(src_dir, dst_dir, de->d_name, depth, st);
		if (r < 0)
			count_failure(st, r, de->d_name);
		else
			st->copied++;
	}
	(void)closedir(d);
}

void launcher_tree_stats_done(struct launcher_tree_stats *st)
{
	for (size_t i = 0; i < st->n_links; i++)
		(void)al_close(st->links[i].fd);
	st->n_links = 0;
}

/* One pass over dir: removes each entry it can, a folder after what it holds; one the workspace
 * refuses to remove is left. Returns how many went. *steps bounds the entries looked at. */
static size_t empty_pass(int dir, dev_t dev, int depth, size_t *steps)
{
	int fd = fcntl(dir, F_DUPFD_CLOEXEC, 3);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	size_t removed = 0;

	if (!d) {
		if (fd >= 0)
			(void)al_close(fd);
		return 0;
	}
	for (struct dirent *de; *steps > 0 && (de = readdir(d));) {
		struct stat s;
		int sub;

		if (streq(de->d_name, ".") || streq(de->d_name, ".."))
			continue;
		(*steps)--;
		if (fstatat(dir, de->d_name, &s, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (!S_ISDIR(s.st_mode)) {
			removed += unlinkat(dir, de->d_name, 0) == 0;
			continue;
		}
		if (s.st_dev != dev)
			continue; /* another file system mounted below: not the workspace's */
		sub = depth < TREE_DEPTH_MAX
			  ? openat(dir, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
			  : -EBADF;
		if (sub >= 0) {
			launcher_tree_empty(sub, depth + 1, steps);
			(void)al_close(sub);
		}
		removed += unlinkat(dir, de->d_name, AT_REMOVEDIR) == 0;
	}
	(void)closedir(d);
	return removed;
}

void launcher_tree_empty(int dir, int depth, size_t *steps)
{
	struct stat self;

	if (fstat(dir, &self) < 0)
		return;
	/* Again while a pass removed something: a listing need not show every entry that is left
	 * while entries go. A pass that removes nothing ends it: what is left stays. */
	while (*steps > 0 && empty_pass(dir, self.st_dev, depth, steps) > 0)
		;
}

/* Opens (creating it if need be, *ret_made says so) the folder name in dir, never through a
 * link. */
static int open_or_make_dir(int dir, const char *name, bool *ret_made)
{
	int fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	*ret_made = false;
	if (fd >= 0 || errno != ENOENT)
		return fd >= 0 ? fd : -errno;
	if (mkdirat(dir, name, 0755) == 0)
		*ret_made = true;
	else if (errno != EEXIST)
		return -errno;
	fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd >= 0 ? fd : -errno;
}

static int place(int root, const struct launcher_file *f, size_t *made_from, struct al_error *err);

/* A file that could not be placed leaves nothing: the folders made for it go too (found when
 * git's folders became writable: a refused .git/hooks/pre-commit left .git/hooks behind). Only
 * the sandbox's pid 1 runs here, before the program: nothing else makes or moves names. */
int launcher_tree_place(int root, const struct launcher_file *f, struct al_error *err)
{
	char path[PATH_MAX];
	size_t made_from = SIZE_MAX, n;
	char *slash;
	int r;

	r = place(root, f, &made_from, err);
	if (r >= 0 || made_from == SIZE_MAX)
		return r;
	n = strlen(f->name);
	if (n >= sizeof(path))
		return r;
	memcpy(path, f->name, n + 1);
	/* The deepest folder made, then each parent down to the first one made. */
	while ((slash = strrchr(path, '/')) && (size_t)(slash - path) > made_from) {
		*slash = '\0';
		(void)unlinkat(root, path, AT_REMOVEDIR);
	}
	return r;
}

static int place(int root, const struct launcher_file *f, size_t *made_from, struct al_error *err)
{
	char name[NAME_MAX + 1];
	_cleanup_close_ int dir = fcntl(root, F_DUPFD_CLOEXEC, 3), fd = -EBADF;
	const char *p = f->name;
	struct stat st;
	bool made;
	int r;

	if (dir < 0)
		return al_error_set_errno(err, -errno, "files: %s", f->name);
	for (;;) {
		size_t n = strcspn(p, "/");

		if (n == 0 || n > NAME_MAX)
			return al_error_set(err, -EINVAL, "files: %s: bad path", f->name);
		memcpy(name, p, n);
		name[n] = '\0';
		if (p[n] == '\0')
			break;
		r = open_or_make_dir(dir, name, &made);
		if (r < 0)
			return al_error_set_errno(err, r, "files: cannot make the folders of %s",
						  f->name);
		if (made && *made_from == SIZE_MAX)
			*made_from = (size_t)(p - f->name);
		(void)al_close(dir);
		dir = r;
		p += n + 1;
	}
	/* Non-blocking: a FIFO planted under the name must not hang the launch. */
	fd = openat(dir, name, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY,
		    f->executable ? 0755 : 0644);
	if (fd < 0)
		return al_error_set_errno(err, -errno, "files: cannot create %s", f->name);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return al_error_set(err, -EEXIST, "files: %s exists and is not a regular file",
				    f->name);
	r = RET_NERRNO(ftruncate(fd, 0));
	if (r >= 0)
		r = al_write_all(fd, f->data, f->len);
	if (r >= 0 && fchmod(fd, f->executable ? 0755 : 0644) < 0)
		r = -errno;
	if (r >= 0 && fsync(fd) < 0)
		r = -errno;
	if (r < 0)
		return al_error_set_errno(err, r, "files: cannot write %s", f->name);
	return 0;
}
