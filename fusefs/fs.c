#define LOG_MODULE "fusefs"

/* The workspace filesystem's state: the root, the inode table with its bounded fd cache, the
 * per-inode rule decisions, credential files, quota, audit and violations.
 *
 * Confinement rests on three facts. Every host access is an *at() call on a folder fd with one
 * name component that the kernel gave us (never "." or "..", never containing '/'), with
 * O_NOFOLLOW or AT_SYMLINK_NOFOLLOW; so no path string is ever resolved on the host and no
 * symbolic link is ever followed by the daemon. Every folder fd comes from the root fd by such
 * steps, or from a file handle of an inode that was reached that way. And an inode on another
 * file system (a mount inside the folder) is never entered: its handle would mean another file
 * to the root's file system. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "broker/client.h"
#include "common/audit.h"
#include "common/fd-util.h"
#include "common/log.h"
#include "common/path-util.h"
#include "fusefs/fusefs-internal.h"

static size_t bucket_of(const struct fusefs *fs, dev_t dev, ino_t ino)
{
	uint64_t h = ((uint64_t)ino * 0x9E3779B97F4A7C15ULL) ^ (uint64_t)dev;

	return (size_t)(h ^ (h >> 29)) & (fs->n_buckets - 1);
}

static int table_grow(struct fusefs *fs)
{
	size_t n = fs->n_buckets * 2;
	struct fusefs_inode **b, **old = fs->buckets;
	size_t old_n = fs->n_buckets;

	b = calloc(n, sizeof(*b));
	if (!b)
		return -ENOMEM;
	fs->buckets = b;
	fs->n_buckets = n;
	for (size_t i = 0; i < old_n; i++)
		for (struct fusefs_inode *in = old[i], *next; in; in = next) {
			size_t k = bucket_of(fs, in->dev, in->ino);

			next = in->hash_next;
			in->hash_next = b[k];
			b[k] = in;
		}
	free(old);
	return 0;
}

static struct fusefs_inode *table_find(struct fusefs *fs, dev_t dev, ino_t ino)
{
	for (struct fusefs_inode *in = fs->buckets[bucket_of(fs, dev, ino)]; in; in = in->hash_next)
		if (in->ino == ino && in->dev == dev)
			return in;
	return NULL;
}

static void table_remove(struct fusefs *fs, struct fusefs_inode *in)
{
	struct fusefs_inode **p = &fs->buckets[bucket_of(fs, in->dev, in->ino)];

	for (; *p; p = &(*p)->hash_next)
		if (*p == in) {
			*p = in->hash_next;
			fs->n_inodes--;
			return;
		}
}

static void lru_unlink(struct fusefs *fs, struct fusefs_inode *in)
{
	if (!in->lru_next)
		return;
	in->lru_prev->lru_next = in->lru_next;
	in->lru_next->lru_prev = in->lru_prev;
	in->lru_prev = in->lru_next = NULL;
	fs->n_cached--;
}

static void lru_push(struct fusefs *fs, struct fusefs_inode *in)
{
	in->lru_next = fs->lru.lru_next;
	in->lru_prev = &fs->lru;
	fs->lru.lru_next->lru_prev = in;
	fs->lru.lru_next = in;
	fs->n_cached++;
	while (fs->n_cached > fs->cache_max) {
		struct fusefs_inode *old = fs->lru.lru_prev;

		lru_unlink(fs, old);
		if (fs->n_dead_fds < ELEMENTSOF(fs->dead_fds))
			fs->dead_fds[fs->n_dead_fds++] = old->fd;
		else
			(void)al_close(old->fd);
		old->fd = -EBADF;
	}
}

static void inode_free(struct fusefs_inode *in)
{
	(void)al_close(in->fd);
	free(in->handle);
	free(in->name);
	free(in);
}

/* Drops one reference; frees in (and its unreferenced ancestors) when nothing holds it.
 * Called with the lock held. */
static void inode_unref_locked(struct fusefs *fs, struct fusefs_inode *in)
{
	while (in && in != &fs->root && in != &fs->secrets_root) {
		struct fusefs_inode *parent = in->parent;

		if (--in->refs > 0 || in->nlookup > 0)
			return;
		table_remove(fs, in);
		lru_unlink(fs, in);
		in->hash_next = fs->dead; /* freed by fusefs_unlock() */
		fs->dead = in;
		in = parent;
	}
}

void fusefs_unlock(struct fusefs *fs)
{
	struct fusefs_inode *dead = fs->dead;
	int fds[ELEMENTSOF(fs->dead_fds)];
	size_t n = fs->n_dead_fds;

	memcpy(fds, fs->dead_fds, n * sizeof(fds[0]));
	fs->n_dead_fds = 0;
	fs->dead = NULL;
	pthread_mutex_unlock(&fs->lock);
	for (size_t i = 0; i < n; i++)
		(void)al_close(fds[i]);
	while (dead) {
		struct fusefs_inode *next = dead->hash_next;

		inode_free(dead);
		dead = next;
	}
}

static bool is_pinned(const struct fusefs *fs, const struct fusefs_inode *in)
{
	return !fs->use_handles || in == &fs->root || !in->handle;
}

static int handle_of(int fd, struct file_handle **ret, int *ret_mount_id)
{
	_cleanup_free_ struct file_handle *h = NULL;
	int mount_id;

	h = malloc(sizeof(*h) + MAX_HANDLE_SZ);
	if (!h)
		return -ENOMEM;
	h->handle_bytes = MAX_HANDLE_SZ;
	if (name_to_handle_at(fd, "", h, &mount_id, AT_EMPTY_PATH) < 0)
		return -errno;
	*ret = realloc(h, sizeof(*h) + h->handle_bytes) ?: h;
	h = NULL;
	*ret_mount_id = mount_id;
	return 0;
}

int fusefs_inode_remember(struct fusefs *fs, struct fusefs_inode *parent, const char *name, int fd,
			  const struct stat *st, struct fusefs_inode **ret)
{
	_cleanup_close_ int owned = fd;
	_cleanup_free_ struct file_handle *h = NULL;
	_cleanup_free_ char *copy = NULL;
	struct fusefs_inode *in;
	int mount_id = fs->mount_id, r;

	if (st->st_dev != fs->root_dev)
		return -EXDEV;
	pthread_mutex_lock(&fs->lock);
	in = table_find(fs, st->st_dev, st->st_ino);
	if (in) {
		in->nlookup++;
		if (in->parent != parent || !streq(in->name, name))
			(void)fusefs_inode_move(fs, in, parent, name);
		if (in->fd < 0) {
			in->fd = TAKE_FD(owned);
			if (in->fd_users == 0 && !is_pinned(fs, in))
				lru_push(fs, in);
		}
		fusefs_unlock(fs);
		*ret = in;
		return 0;
	}
	fusefs_unlock(fs);

	if (fs->use_handles) {
		r = handle_of(fd, &h, &mount_id);
		if (r < 0 && r != -EOPNOTSUPP)
			return r;
		/* A handle means a file only on the mount it came from. */
		if (r >= 0 && mount_id != fs->mount_id)
			return -EXDEV;
	}
	copy = strdup(name);
	in = calloc(1, sizeof(*in));
	if (!copy || !in) {
		free(in);
		return -ENOMEM;
	}
	*in = (struct fusefs_inode){
	    .dev = st->st_dev,
	    .ino = st->st_ino,
	    .type = st->st_mode & S_IFMT,
	    .nlookup = 1,
	    .fd = TAKE_FD(owned),
	    .cred = -1,
	    .blocks = fusefs_charged_blocks(st),
	    .name = TAKE_PTR(copy),
	    .handle = TAKE_PTR(h),
	};

	pthread_mutex_lock(&fs->lock);
	{
		/* Another thread may have added it meanwhile. */
		struct fusefs_inode *other = table_find(fs, st->st_dev, st->st_ino);

		if (other) {
			other->nlookup++;
			fusefs_unlock(fs);
			inode_free(in);
			*ret = other;
			return 0;
		}
	}
	if (fs->n_inodes + 1 > fs->n_buckets && table_grow(fs) < 0) {
		fusefs_unlock(fs);
		inode_free(in);
		return -ENOMEM;
	}
	in->parent = parent;
	parent->refs++;
	{
		size_t k = bucket_of(fs, in->dev, in->ino);

		in->hash_next = fs->buckets[k];
		fs->buckets[k] = in;
		fs->n_inodes++;
	}
	if (!is_pinned(fs, in))
		lru_push(fs, in);
	fusefs_unlock(fs);
	*ret = in;
	return 0;
}

void fusefs_inode_forget(struct fusefs *fs, struct fusefs_inode *in, uint64_t n)
{
	if (in == &fs->root || in == &fs->secrets_root || in->cred >= 0)
		return;
	pthread_mutex_lock(&fs->lock);
	in->nlookup = n > in->nlookup ? 0 : in->nlookup - n;
	if (in->nlookup == 0) {
		in->refs++; /* inode_unref_locked() drops one */
		inode_unref_locked(fs, in);
	}
	fusefs_unlock(fs);
}

int fusefs_inode_get_fd(struct fusefs *fs, struct fusefs_inode *in)
{
	struct file_handle *h;
	int fd;

	pthread_mutex_lock(&fs->lock);
	/* A reference while the fd is used: the kernel may forget the inode meanwhile. (The roots
	 * are never freed and keep no count.) */
	if (in != &fs->root && in != &fs->secrets_root)
		in->refs++;
	if (in->fd >= 0) {
		if (in->fd_users++ == 0)
			lru_unlink(fs, in);
		fd = in->fd;
		fusefs_unlock(fs);
		return fd;
	}
	h = in->handle;
	fusefs_unlock(fs);
	if (!h) {
		fusefs_inode_put_fd(fs, in);
		return -ESTALE;
	}
	/* The handle never changes once set, so it is read outside the lock. */
	fd = open_by_handle_at(fs->mount_fd, h, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		int r = errno == ENOENT ? -ESTALE : -errno;

		pthread_mutex_lock(&fs->lock);
		inode_unref_locked(fs, in);
		fusefs_unlock(fs);
		return r;
	}
	pthread_mutex_lock(&fs->lock);
	if (in->fd >= 0) {
		(void)al_close(fd);
		if (in->fd_users == 0)
			lru_unlink(fs, in);
	} else {
		in->fd = fd;
	}
	in->fd_users++;
	fd = in->fd;
	fusefs_unlock(fs);
	return fd;
}

void fusefs_inode_put_fd(struct fusefs *fs, struct fusefs_inode *in)
{
	pthread_mutex_lock(&fs->lock);
	if (in->fd_users > 0 && --in->fd_users == 0 && in->fd >= 0 && !is_pinned(fs, in))
		lru_push(fs, in);
	inode_unref_locked(fs, in);
	fusefs_unlock(fs);
}

/* Called with the lock held. */
int fusefs_inode_move(struct fusefs *fs, struct fusefs_inode *in, struct fusefs_inode *parent,
		      const char *name)
{
	char *copy = strdup(name);
	struct fusefs_inode *old = in->parent;

	if (!copy)
		return -ENOMEM;
	free(in->name);
	in->name = copy;
	if (old != parent) {
		parent->refs++;
		in->parent = parent;
		inode_unref_locked(fs, old);
	}
	if (in->type == S_IFDIR)
		fs->rule_gen++;
	else
		in->access_gen = 0;
	return 0;
}

int fusefs_inode_rename(struct fusefs *fs, dev_t dev, ino_t ino, struct fusefs_inode *parent,
			const char *name)
{
	struct fusefs_inode *in;
	int r = 0;

	pthread_mutex_lock(&fs->lock);
	in = table_find(fs, dev, ino);
	if (in)
		r = fusefs_inode_move(fs, in, parent, name);
	fusefs_unlock(fs);
	return r;
}

int fusefs_known_list(struct fusefs *fs, struct fusefs_known **ret, size_t *ret_n)
{
	struct fusefs_known *k;
	size_t n = 0;

	pthread_mutex_lock(&fs->lock);
	k = calloc(fs->n_inodes + 1, sizeof(*k));
	for (size_t i = 0; k && i < fs->n_buckets; i++)
		for (struct fusefs_inode *in = fs->buckets[i]; in; in = in->hash_next) {
			char *name = strdup(in->name);

			if (!name)
				continue; /* not refreshed: as if the kernel held it no more */
			in->refs++;
			k[n++] = (struct fusefs_known){
			    .in = in, .parent = (uintptr_t)in->parent, .name = name};
		}
	fusefs_unlock(fs);
	if (!k)
		return -ENOMEM;
	*ret = k;
	*ret_n = n;
	return 0;
}

void fusefs_known_free(struct fusefs *fs, struct fusefs_known *k, size_t n)
{
	pthread_mutex_lock(&fs->lock);
	for (size_t i = 0; i < n; i++) {
		free(k[i].name);
		inode_unref_locked(fs, k[i].in);
	}
	fusefs_unlock(fs);
	free(k);
}

/* The quota's bookkeeping (usage, and each inode's blocks, open_count and orphan) is under
 * quota_lock, and so is the fstat() each change is measured with: two writes of one file that
 * measured out of order would otherwise leave the older count. */
static void usage_add_locked(struct fusefs *fs, int64_t delta)
{
	if (delta < 0)
		fs->usage = (uint64_t)-delta > fs->usage ? 0 : fs->usage - (uint64_t)-delta;
	else
		fs->usage += (uint64_t)delta;
}

void fusefs_inode_unlinked(struct fusefs *fs, const struct stat *st)
{
	struct fusefs_inode *in;
	bool gone = S_ISDIR(st->st_mode) || st->st_nlink <= 1;

	if (!gone)
		return;
	pthread_mutex_lock(&fs->lock);
	in = table_find(fs, st->st_dev, st->st_ino);
	if (in)
		table_remove(fs, in);
	fusefs_unlock(fs);
	if (fs->quota == 0)
		return;
	/* The inode stays alive while the kernel holds it: in may be used below. */
	pthread_mutex_lock(&fs->quota_lock);
	if (!in) {
		usage_add_locked(fs, -(int64_t)fusefs_charged_blocks(st) * 512);
	} else if (in->open_count > 0) {
		in->orphan = true;
	} else {
		usage_add_locked(fs, -(int64_t)in->blocks * 512);
		in->blocks = 0;
	}
	pthread_mutex_unlock(&fs->quota_lock);
}

void fusefs_inode_opened(struct fusefs *fs, struct fusefs_inode *in, const struct stat *st)
{
	pthread_mutex_lock(&fs->quota_lock);
	in->open_count++;
	if (!in->orphan) {
		usage_add_locked(fs,
				 ((int64_t)fusefs_charged_blocks(st) - (int64_t)in->blocks) * 512);
		in->blocks = fusefs_charged_blocks(st);
	}
	pthread_mutex_unlock(&fs->quota_lock);
}

void fusefs_inode_charge(struct fusefs *fs, struct fusefs_inode *in, int fd)
{
	struct stat st;

	if (fs->quota == 0)
		return;
	pthread_mutex_lock(&fs->quota_lock);
	if (!in->orphan && fstat(fd, &st) == 0) {
		usage_add_locked(fs,
				 ((int64_t)fusefs_charged_blocks(&st) - (int64_t)in->blocks) * 512);
		in->blocks = fusefs_charged_blocks(&st);
	}
	pthread_mutex_unlock(&fs->quota_lock);
}

void fusefs_inode_closed(struct fusefs *fs, struct fusefs_inode *in, int fd)
{
	if (fd >= 0)
		fusefs_inode_charge(fs, in, fd);
	pthread_mutex_lock(&fs->quota_lock);
	if (in->open_count > 0 && --in->open_count == 0 && in->orphan) {
		usage_add_locked(fs, -(int64_t)in->blocks * 512);
		in->blocks = 0;
		in->orphan = false;
	}
	pthread_mutex_unlock(&fs->quota_lock);
}

int fusefs_path(struct fusefs *fs, struct fusefs_inode *parent, const char *name, char *buf,
		size_t size)
{
	const char *parts[FUSEFS_DEPTH_MAX + 1];
	size_t n = 0, len = 0;
	int r = 0;

	if (name)
		parts[n++] = name;
	pthread_mutex_lock(&fs->lock);
	for (struct fusefs_inode *in = parent; in && in != &fs->root && in != &fs->secrets_root;
	     in = in->parent) {
		if (n == ELEMENTSOF(parts)) {
			r = -ENAMETOOLONG;
			break;
		}
		parts[n++] = in->name;
	}
	while (r >= 0 && n > 0) {
		const char *p = parts[--n];
		size_t l = strlen(p);

		if (len + l + 2 > size || len + l + 2 > FUSEFS_PATH_MAX) {
			r = -ENAMETOOLONG;
			break;
		}
		if (len > 0)
			buf[len++] = '/';
		memcpy(buf + len, p, l);
		len += l;
	}
	fusefs_unlock(fs);
	buf[r < 0 ? 0 : len] = '\0';
	return r;
}

unsigned fusefs_inode_access(struct fusefs *fs, struct fusefs_inode *in)
{
	char path[FUSEFS_PATH_MAX];
	uint64_t gen;
	unsigned a;

	if (in == &fs->root)
		return fusefs_rules_decide(fs->rules, "", true);
	if (in->cred >= 0)
		return FUSEFS_ACCESS_READ;
	pthread_mutex_lock(&fs->lock);
	gen = fs->rule_gen;
	if (in->access_gen == gen) {
		a = in->access;
		fusefs_unlock(fs);
		return a;
	}
	fusefs_unlock(fs);
	if (fusefs_path(fs, in, NULL, path, sizeof(path)) < 0)
		return 0;
	a = fusefs_rules_decide(fs->rules, path, in->type == S_IFDIR);
	pthread_mutex_lock(&fs->lock);
	if (fs->rule_gen == gen) {
		in->access = a;
		in->access_gen = gen;
	}
	fusefs_unlock(fs);
	return a;
}

bool fusefs_inode_stamp(struct fusefs *fs, struct fusefs_inode *in, const struct stat *st,
			bool update)
{
	int64_t mtime = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
	bool keep;

	pthread_mutex_lock(&fs->lock);
	keep = in->stamped && in->stamp_mtime_ns == mtime && in->stamp_size == st->st_size;
	in->stamp_mtime_ns = mtime;
	in->stamp_size = st->st_size;
	in->stamped = true;
	fusefs_unlock(fs);
	return keep || update;
}

int fusefs_cred_at(const struct fusefs *fs, const char *rel)
{
	for (size_t i = 0; i < fs->n_creds; i++)
		if (fs->creds[i].rel && streq(fs->creds[i].rel, rel))
			return (int)i;
	return -ENOENT;
}

/* The sandbox decides how much it does, so the audit is bounded: allowed accesses are written
 * up to FUSEFS_AUDIT_MAX events (then one event says the rest are not), and each kind of denial
 * (operation and path, hashed) is written ten times, then at every power of ten, with its
 * count. The --json result counts every denial. */
#define FUSEFS_AUDIT_MAX 200000
#define DENIAL_SLOTS 4096

static bool count_is_audited(uint64_t count)
{
	if (count <= 10)
		return true;
	while (count % 10 == 0)
		count /= 10;
	return count == 1;
}

static uint64_t denial_count(struct fusefs *fs, const char *op, const char *path)
{
	uint64_t h = 1469598103934665603ULL;

	for (const char *p = op; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ULL;
	for (const char *p = path; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ULL;
	return __atomic_add_fetch(&fs->denials[h % DENIAL_SLOTS], 1, __ATOMIC_RELAXED);
}

void fusefs_audit(struct fusefs *fs, pid_t pid, const char *op, const char *path, int error,
		  const struct al_audit_field *extra, size_t n_extra)
{
	struct al_audit_field f[9];
	uint64_t count = 0, n;
	size_t k = 0;

	if (!fs->audit)
		return;
	if (error < 0) {
		count = denial_count(fs, op, path);
		if (!count_is_audited(count))
			return;
	} else {
		n = __atomic_add_fetch(&fs->audited, 1, __ATOMIC_RELAXED);
		if (n > FUSEFS_AUDIT_MAX) {
			if (n == FUSEFS_AUDIT_MAX + 1)
				(void)al_audit_event(
				    fs->audit, "fs",
				    (struct al_audit_field[]){
					AL_AUDIT_S("op", "audit_limit"),
					AL_AUDIT_I("events", FUSEFS_AUDIT_MAX),
					AL_AUDIT_S("detail",
						   "further allowed accesses are not audited"),
				    },
				    3);
			return;
		}
	}
	f[k++] = AL_AUDIT_S("op", op);
	f[k++] = AL_AUDIT_S("path", path);
	f[k++] = AL_AUDIT_I("pid", (int64_t)pid);
	f[k++] = AL_AUDIT_S("verdict", error < 0 ? "deny" : "allow");
	if (error < 0) {
		f[k++] = AL_AUDIT_S("error", strerrorname_np(-error) ?: "unknown");
		f[k++] = AL_AUDIT_I("count", (int64_t)count);
	}
	for (size_t i = 0; i < n_extra && k < ELEMENTSOF(f); i++)
		f[k++] = extra[i];
	(void)al_audit_event(fs->audit, "fs", f, k);
}

int fusefs_deny(struct fusefs *fs, pid_t pid, const char *op, const char *path, int error)
{
	struct fusefs_violation v = {.error = -error};

	fusefs_audit(fs, pid, op, path, error, NULL, 0);
	if (fs->violations_fd < 0)
		return error;
	(void)snprintf(v.op, sizeof(v.op), "%s", op);
	(void)snprintf(v.path, sizeof(v.path), "%s", path);
	v.dropped = __atomic_exchange_n(&fs->violations_dropped, 0, __ATOMIC_RELAXED);
	if (send(fs->violations_fd, &v, sizeof(v), MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		__atomic_add_fetch(&fs->violations_dropped, v.dropped + 1, __ATOMIC_RELAXED);
	return error;
}

bool fusefs_quota_full(struct fusefs *fs)
{
	bool full;

	if (fs->quota == 0)
		return false;
	pthread_mutex_lock(&fs->quota_lock);
	full = fs->usage >= fs->quota;
	pthread_mutex_unlock(&fs->quota_lock);
	return full;
}

int fusefs_quota_charge(struct fusefs *fs, int64_t delta, bool check)
{
	int r = 0;

	if (fs->quota == 0)
		return 0;
	pthread_mutex_lock(&fs->quota_lock);
	if (check && delta > 0 && fs->usage + (uint64_t)delta > fs->quota)
		r = -ENOSPC;
	else
		usage_add_locked(fs, delta);
	pthread_mutex_unlock(&fs->quota_lock);
	return r;
}

/* The bytes allocated below dir (one O_PATH or directory fd, consumed), without following links
 * or entering other mounts. Bounded by the folder depth limit. */
static int measure_usage(int dir, dev_t dev, unsigned depth, uint64_t *total)
{
	_cleanup_close_ int fd = dir;
	DIR *d;
	struct dirent *de;
	struct stat st;
	int r = 0;

	if (depth > FUSEFS_DEPTH_MAX)
		return 0; /* deeper than the sandbox can reach: not counted */
	d = fdopendir(fd);
	if (!d)
		return -errno;
	fd = -EBADF;
	while (r >= 0 && (de = readdir(d))) {
		if (streq(de->d_name, ".") || streq(de->d_name, ".."))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_dev != dev)
			continue;
		*total += (uint64_t)fusefs_charged_blocks(&st) * 512;
		if (S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd(d), de->d_name,
					 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (sub >= 0)
				r = measure_usage(sub, dev, depth + 1, total);
		}
	}
	closedir(d);
	return r;
}

/* A credential file inside the workspace is virtual: nothing may lie at its path on the host,
 * or moving its folder would show the host's file under another name. Its folders are made if
 * missing, one component at a time without following links, so that the path is reachable. */
static int prepare_cred_path(struct fusefs *fs, const char *rel, size_t idx, struct al_error *err)
{
	_cleanup_close_ int cur = -EBADF;
	char buf[FUSEFS_PATH_MAX], *save = NULL, *c, *next;
	struct stat st;

	if ((size_t)snprintf(buf, sizeof(buf), "%s", rel) >= sizeof(buf))
		return al_error_set(err, -ENAMETOOLONG, "credentials[%zu].injection.path: too long",
				    idx);
	cur = openat(fs->root_fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (cur < 0)
		return -errno;
	for (c = strtok_r(buf, "/", &save); c; c = next) {
		int fd;

		next = strtok_r(NULL, "/", &save);
		if (!next)
			break;
		if (mkdirat(cur, c, 0755) < 0 && errno != EEXIST)
			return al_error_set_errno(err, -errno,
						  "credentials[%zu].injection.path: cannot make "
						  "folder %s in the workspace",
						  idx, c);
		fd = openat(cur, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return al_error_set_errno(err, -errno,
						  "credentials[%zu].injection.path: %s in the "
						  "workspace is not a folder",
						  idx, c);
		(void)al_close(cur);
		cur = fd;
	}
	if (c && fstatat(cur, c, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return al_error_set(
		    err, -EEXIST,
		    "credentials[%zu].injection.path: %s exists in the workspace on "
		    "the host; move it away or choose another path",
		    idx, rel);
	return 0;
}

static bool source_in_workspace(const char *source, const char *root)
{
	_cleanup_free_ char *canonical = realpath(source, NULL);

	return al_path_is_within(canonical ?: source, root);
}

static int setup_creds(struct fusefs *fs, const char *root, const char *mount, struct al_error *err)
{
	const struct policy *p = fs->policy;
	int r;

	fs->creds = calloc(p->n_credentials ? p->n_credentials : 1, sizeof(*fs->creds));
	if (!fs->creds)
		return -ENOMEM;
	for (size_t i = 0; i < p->n_credentials; i++) {
		const struct policy_credential *c = &p->credentials[i];
		struct fusefs_cred *fc = &fs->creds[fs->n_creds];
		const char *rest;

		if (c->injection != POLICY_INJECTION_FILE)
			continue;
		/* A source the sandbox can change is no secret of the host's. */
		if (c->source == POLICY_CRED_SOURCE_FILE && c->source_path &&
		    source_in_workspace(c->source_path, root))
			return al_error_set(
			    err, -EPERM,
			    "credentials[%zu].source.path: %s lies in the workspace, "
			    "which the sandbox can change",
			    i, c->source_path);
		if (!fs->broker)
			return al_error_set(
			    err, -EOPNOTSUPP,
			    "credentials[%zu] (%s): no broker to serve the file from", i, c->name);
		fc->name = c->name;
		fc->inode = calloc(1, sizeof(*fc->inode));
		if (!fc->inode)
			return -ENOMEM;
		*fc->inode = (struct fusefs_inode){.type = S_IFREG,
						   .nlookup = 1,
						   .fd = -EBADF,
						   .cred = (int)fs->n_creds,
						   .name = (char *)c->name,
						   .ino = 1000 + fs->n_creds};
		rest = mount ? startswith(c->path, mount) : NULL;
		if (rest && rest[0] == '/' && rest[1] != '\0') {
			fc->rel = strdup(rest + 1);
			if (!fc->rel)
				return -ENOMEM;
			if (fusefs_rules_decide(fs->rules, fc->rel, false) == 0)
				return al_error_set(
				    err, -EINVAL,
				    "credentials[%zu].injection.path: %s is hidden by "
				    "workspace.deny or workspace.read",
				    i, c->path);
			r = prepare_cred_path(fs, fc->rel, i, err);
			if (r < 0)
				return r;
		} else if (rest && rest[0] == '\0') {
			return al_error_set(err, -EINVAL,
					    "credentials[%zu].injection.path: %s is the workspace "
					    "itself",
					    i, c->path);
		}
		fs->n_creds++;
	}
	return 0;
}

/* The ids a rootless sandbox's user namespace maps (the launcher's write_id_maps()): the
 * caller's euid and egid; its other groups stay the sandbox processes', without a name. */
static int sandbox_ids(struct fusefs *fs)
{
	int n = getgroups(0, NULL);

	if (n < 0)
		return -errno;
	fs->ids = (struct fusefs_ids){.userns = true, .uid = fs->euid, .gid = fs->egid};
	fs->ids.groups = calloc((size_t)n + 1, sizeof(gid_t));
	if (!fs->ids.groups)
		return -ENOMEM;
	n = getgroups(n, fs->ids.groups);
	if (n < 0)
		return -errno;
	fs->ids.n_groups = (size_t)n;
	return 0;
}

static void inode_init_fixed(struct fusefs_inode *in, int fd)
{
	*in = (struct fusefs_inode){
	    .type = S_IFDIR, .nlookup = 1, .refs = 1, .fd = fd, .cred = -1, .name = (char *)""};
}

int fusefs_new(const struct fusefs_options *o, struct fusefs **ret, struct al_error *err)
{
	_cleanup_(fusefs_freep) struct fusefs *fs = NULL;
	_cleanup_free_ char *root = NULL;
	_cleanup_free_ struct file_handle *h = NULL;
	struct rlimit rl;
	struct stat st;
	int r;

	r = al_path_resolve_exposable(o->root ?: o->policy->workspace.root, true, "workspace.root",
				      &root, err);
	if (r < 0)
		return r;
	fs = calloc(1, sizeof(*fs));
	if (!fs)
		return -ENOMEM;
	fs->root_fd = fs->mount_fd = -EBADF;
	fs->policy = o->policy;
	fs->audit = o->audit;
	fs->broker = o->broker;
	fs->violations_fd = o->violations_fd;
	fs->strip_setid = o->strip_setid;
	fs->euid = geteuid();
	fs->egid = getegid();
	if (o->userns) {
		r = sandbox_ids(fs);
		if (r < 0)
			return al_error_set_errno(err, r, "Failed to list the caller's groups");
	}
	pthread_mutex_init(&fs->lock, NULL);
	pthread_mutex_init(&fs->quota_lock, NULL);
	pthread_mutex_init(&fs->notify_lock, NULL);
	pthread_cond_init(&fs->notify_cond, NULL);
	inode_init_fixed(&fs->root, -EBADF);
	inode_init_fixed(&fs->secrets_root, -EBADF);
	fs->lru.lru_next = fs->lru.lru_prev = &fs->lru;
	fs->rule_gen = 1; /* an inode's access_gen 0 means "never decided" */
	r = fusefs_transport_choose(fs, err);
	if (r < 0)
		return r;
	/* Inodes are 16-byte aligned: the low bits stay 0, so no number is FUSE_ROOT_ID (1). */
	if (getrandom(&fs->ino_key, sizeof(fs->ino_key), 0) != sizeof(fs->ino_key))
		return al_error_set_errno(err, -errno, "Failed to get random bytes");
	fs->ino_key &= ~(uintptr_t)0xf;
	fs->n_buckets = 1024;
	fs->buckets = calloc(fs->n_buckets, sizeof(*fs->buckets));
	if (!fs->buckets)
		return -ENOMEM;

	fs->root_fd = open(root, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fs->root_fd < 0 || fstat(fs->root_fd, &st) < 0)
		return al_error_set_errno(err, -errno, "workspace.root: %s", root);
	fs->root.fd = fs->root_fd;
	/* open_by_handle_at() names the file system by an fd it can read: not an O_PATH one. */
	fs->mount_fd = openat(fs->root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fs->mount_fd < 0)
		return al_error_set_errno(err, -errno, "workspace.root: %s", root);
	fs->root.dev = fs->root_dev = st.st_dev;
	fs->root.ino = st.st_ino;
	/* The root's own blocks are not the sandbox's: only what it grows by is charged. */
	fs->root.blocks = fusefs_charged_blocks(&st);
	/* Reopening inodes by handle needs CAP_DAC_READ_SEARCH; without it, each known inode
	 * keeps its own O_PATH fd, and the fd limit bounds how many the kernel can hold. */
	r = handle_of(fs->root_fd, &h, &fs->mount_id);
	fs->use_handles = r >= 0 && fs->euid == 0;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
	fs->cache_max = MIN((size_t)FUSEFS_FD_CACHE_MAX, (size_t)rl.rlim_cur / 4);
	fs->cache_max = MAX(fs->cache_max, (size_t)FUSEFS_FD_CACHE_MIN);

	r = fusefs_rules_new(o->policy, &fs->rules, err);
	if (r < 0)
		return r;
	r = fusefs_rules_protect_git(fs->rules, fs->root_fd, root);
	if (r < 0)
		return r;
	fs->any_writable = fusefs_rules_any_writable(fs->rules);
	r = setup_creds(fs, root, o->mount, err);
	if (r < 0)
		return r;
	fs->quota = o->policy->workspace.quota;
	if (fs->quota > 0) {
		int dir = openat(fs->root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		r = dir < 0 ? -errno : measure_usage(dir, fs->root_dev, 0, &fs->usage);
		if (r < 0)
			return al_error_set_errno(err, r, "workspace.quota: cannot measure %s",
						  root);
	}
	log_debug("Workspace %s: %s, fd cache %zu", root,
		  fs->use_handles ? "file handles" : "one fd per inode", fs->cache_max);
	*ret = TAKE_PTR(fs);
	return 0;
}

struct fusefs *fusefs_free(struct fusefs *fs)
{
	if (!fs)
		return NULL;
	fusefs_notify_stop(fs);
	if (fs->buckets)
		for (size_t i = 0; i < fs->n_buckets; i++)
			for (struct fusefs_inode *in = fs->buckets[i], *next; in; in = next) {
				next = in->hash_next;
				inode_free(in);
			}
	free(fs->buckets);
	for (size_t i = 0; i < fs->n_creds; i++) {
		free(fs->creds[i].rel);
		free(fs->creds[i].inode);
	}
	free(fs->creds);
	free(fs->ids.groups);
	fs->rules = fusefs_rules_free(fs->rules);
	(void)al_close(fs->root_fd);
	(void)al_close(fs->mount_fd);
	pthread_mutex_destroy(&fs->lock);
	pthread_mutex_destroy(&fs->quota_lock);
	pthread_mutex_destroy(&fs->notify_lock);
	pthread_cond_destroy(&fs->notify_cond);
	free(fs);
	return NULL;
}

const struct policy_credential *fusefs_outside_credential(const struct fusefs *fs, size_t i)
{
	for (size_t k = 0; k < fs->n_creds; k++)
		if (!fs->creds[k].rel && i-- == 0)
			for (size_t j = 0; j < fs->policy->n_credentials; j++)
				if (fs->policy->credentials[j].name == fs->creds[k].name)
					return &fs->policy->credentials[j];
	return NULL;
}

size_t fusefs_fds(const struct fusefs *fs, int *fds, size_t n)
{
	if (n < 2)
		return 0;
	fds[0] = fs->root_fd;
	fds[1] = fs->mount_fd;
	return 2;
}
