#define LOG_MODULE "agent"

/* A session's workspace files for the API (serve, mcp): every access goes through the session's
 * workspace filesystem as its sandbox sees it, opened by launcher_session_workspace(), so the
 * policy's rules, quota and audit decide as they do for the sandbox's own accesses. Paths are
 * resolved beneath that folder with no link followed: the API never reaches past it. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent-internal.h"
#include "common/fd-util.h"
#include "common/json-util.h"
#include "common/macro.h"
#include "common/text-util.h"

#define RESOLVE_WORKSPACE                                                                          \
	(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)

static int open_beneath(int dir, const char *path, int flags, mode_t mode)
{
	struct open_how how = {
	    .flags = (uint64_t)(flags | O_CLOEXEC),
	    .mode = (flags & O_CREAT) ? mode : 0,
	    .resolve = RESOLVE_WORKSPACE,
	};

	return RET_NERRNO((int)syscall(SYS_openat2, dir, *path ? path : ".", &how, sizeof(how)));
}

/* The message for an access to path that failed with r. */
static int file_error(struct al_error *err, int r, const char *path)
{
	const char *p = AL_QUOTE(*path ? path : "/");

	switch (r) {
	case -ELOOP:
		return al_error_set(err, r, "%s: is a symbolic link (not followed)", p);
	case -EXDEV:
		return al_error_set(err, -EACCES, "%s: leads out of the workspace", p);
	case -EACCES:
	case -EPERM:
		return al_error_set(err, r, "%s: not allowed by the workspace's rules", p);
	case -EDQUOT:
	case -ENOSPC:
		return al_error_set(err, r, "%s: the workspace is full (its quota)", p);
	default:
		return al_error_set_errno(err, r, "%s", p);
	}
}

/* Checks path (where folder, "" is the workspace itself) and opens the session's workspace. */
static int open_workspace(const char *id, const char *path, bool folder, int *ret,
			  struct al_error *err)
{
	if (!path || (!(folder && *path == '\0') && !agent_path_is_relative(path)))
		return al_error_set(err, -EINVAL,
				    "%s is not a workspace path (relative, no \".\" or \"..\")",
				    AL_QUOTE(path ? path : ""));
	return launcher_session_workspace(id, ret, err);
}

int agent_file_read(const char *id, const char *path, char **ret, size_t *ret_len,
		    struct al_error *err)
{
	_cleanup_close_ int ws = -EBADF, fd = -EBADF;
	struct stat st;
	int r;

	r = open_workspace(id, path, false, &ws, err);
	if (r < 0)
		return r;
	fd = open_beneath(ws, path, O_RDONLY | O_NOCTTY | O_NONBLOCK, 0);
	if (fd < 0)
		return file_error(err, fd, path);
	if (fstat(fd, &st) < 0)
		return file_error(err, -errno, path);
	if (S_ISDIR(st.st_mode))
		return al_error_set(err, -EISDIR, "%s: is a folder", AL_QUOTE(path));
	if (!S_ISREG(st.st_mode))
		return al_error_set(err, -EINVAL, "%s: is not a regular file", AL_QUOTE(path));
	if (st.st_size > AGENT_FILE_MAX)
		return al_error_set(err, -EFBIG, "%s: larger than %d MiB", AL_QUOTE(path),
				    AGENT_FILE_MAX >> 20);
	r = al_read_fd(fd, AGENT_FILE_MAX, ret, ret_len);
	if (r == -EFBIG)
		return al_error_set(err, r, "%s: larger than %d MiB", AL_QUOTE(path),
				    AGENT_FILE_MAX >> 20);
	return r < 0 ? file_error(err, r, path) : 0;
}

/* The folder of path (with AGENT_FILE_PARENTS, the missing folders above it made, one name at a
 * time beneath the last: a link is never followed) and path's last name. */
static int open_parent(int ws, const char *path, unsigned flags, int *ret, const char **ret_name,
		       struct al_error *err)
{
	_cleanup_close_ int cur = -EBADF;
	const char *p = path, *slash;

	cur = open_beneath(ws, "", O_RDONLY | O_DIRECTORY, 0);
	if (cur < 0)
		return file_error(err, cur, "");
	for (; (slash = strchr(p, '/')); p = slash + 1) {
		_cleanup_free_ char *name = strndup(p, (size_t)(slash - p));
		int next;

		if (!name)
			return -ENOMEM;
		next = open_beneath(cur, name, O_RDONLY | O_DIRECTORY, 0);
		if (next == -ENOENT && (flags & AGENT_FILE_PARENTS)) {
			if (mkdirat(cur, name, 0755) < 0 && errno != EEXIST)
				return file_error(err, -errno, path);
			next = open_beneath(cur, name, O_RDONLY | O_DIRECTORY, 0);
		}
		if (next < 0)
			return file_error(err, next, path);
		(void)al_close(cur);
		cur = next;
	}
	*ret_name = p;
	*ret = TAKE_FD(cur);
	return 0;
}

static int write_synced(int fd, const void *data, size_t len, mode_t mode)
{
	int r = al_write_all(fd, data, len);

	if (r >= 0 && fchmod(fd, mode) < 0)
		r = -errno;
	if (r >= 0 && fsync(fd) < 0)
		r = -errno;
	return r;
}

int agent_file_write(const char *id, const char *path, const void *data, size_t len, unsigned flags,
		     struct al_error *err)
{
	mode_t mode = (flags & AGENT_FILE_EXECUTABLE) ? 0755 : 0644;
	_cleanup_close_ int ws = -EBADF, dir = -EBADF, fd = -EBADF;
	char tmp[NAME_MAX + 1];
	const char *name;
	uint32_t salt;
	int r;

	if (len > AGENT_FILE_MAX)
		return al_error_set(err, -EFBIG, "%s: larger than %d MiB", AL_QUOTE(path),
				    AGENT_FILE_MAX >> 20);
	r = open_workspace(id, path, false, &ws, err);
	if (r < 0)
		return r;
	r = open_parent(ws, path, flags, &dir, &name, err);
	if (r < 0)
		return r;
	if (getrandom(&salt, sizeof(salt), 0) != sizeof(salt))
		return al_error_set_errno(err, -errno, "No randomness");
	/* .NAME.airlock-XXXXXXXX beside it; a name the rules refuse is written in place. */
	if ((size_t)snprintf(tmp, sizeof(tmp), ".%.200s.airlock-%08x", name, salt) >= sizeof(tmp))
		return al_error_set(err, -ENAMETOOLONG, "%s: name too long", AL_QUOTE(path));
	fd = RET_NERRNO(
	    openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
	if (fd >= 0) {
		r = write_synced(fd, data, len, mode);
		if (r >= 0 && renameat(dir, tmp, dir, name) < 0)
			r = -errno;
		if (r < 0)
			(void)unlinkat(dir, tmp, 0);
		else if (fsync(dir) < 0 && errno != EINVAL)
			r = -errno;
		return r < 0 ? file_error(err, r, path) : 0;
	}
	if (fd != -EACCES && fd != -EPERM)
		return file_error(err, fd, path);
	fd = open_beneath(ws, path, O_WRONLY | O_CREAT | O_TRUNC | O_NOCTTY | O_NONBLOCK, mode);
	if (fd < 0)
		return file_error(err, fd, path);
	r = write_synced(fd, data, len, mode);
	return r < 0 ? file_error(err, r, path) : 0;
}

static const char *type_name(mode_t m)
{
	return S_ISREG(m) ? "file" : S_ISDIR(m) ? "directory" : S_ISLNK(m) ? "symlink" : "other";
}

/* A name as JSON text: itself when it is UTF-8; else each byte that is not as U+FFFD, and
 * "name_base64" gives the bytes (a name the sandbox made is any bytes but '/' and NUL). */
static int add_name(struct json_object *o, const char *name)
{
	const unsigned char *b = (const unsigned char *)name;
	size_t n = strlen(name), valid, len = 0;
	_cleanup_free_ char *text = malloc(n * 3 + 1), *b64 = NULL;

	if (!text)
		return -ENOMEM;
	for (size_t i = 0; i < n;) {
		enum al_utf8 k = al_utf8_scan(b + i, n - i, &valid);

		memcpy(text + len, b + i, valid);
		len += valid, i += valid;
		if (k == AL_UTF8_WHOLE)
			break;
		memcpy(text + len, "\xef\xbf\xbd", 3);
		len += 3, i++;
	}
	text[len] = '\0';
	if (al_json_add(o, "name", json_object_new_string(text)) < 0)
		return -ENOMEM;
	if (len == n && memcmp(text, name, n) == 0)
		return 0;
	b64 = al_base64_encode(b, n);
	return b64 ? al_json_add(o, "name_base64", json_object_new_string(b64)) : -ENOMEM;
}

static struct json_object *stat_json(const char *name, const struct stat *st)
{
	_cleanup_(al_json_putp) struct json_object *o = json_object_new_object();
	char mode[8], mtime[32];
	struct tm tm;

	(void)snprintf(mode, sizeof(mode), "%04o", (unsigned)(st->st_mode & 07777));
	if (!gmtime_r(&st->st_mtim.tv_sec, &tm) ||
	    strftime(mtime, sizeof(mtime), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		mtime[0] = '\0';
	if (!o || add_name(o, name) < 0 ||
	    al_json_add(o, "type", json_object_new_string(type_name(st->st_mode))) < 0 ||
	    al_json_add(o, "size", json_object_new_int64((int64_t)st->st_size)) < 0 ||
	    al_json_add(o, "mode", json_object_new_string(mode)) < 0 ||
	    al_json_add(o, "mtime", json_object_new_string(mtime)) < 0)
		return NULL;
	return TAKE_PTR(o);
}

int agent_file_stat(const char *id, const char *path, struct json_object **ret,
		    struct al_error *err)
{
	_cleanup_close_ int ws = -EBADF, dir = -EBADF;
	const char *name;
	struct stat st;
	int r;

	r = open_workspace(id, path, true, &ws, err);
	if (r < 0)
		return r;
	if (*path == '\0') {
		if (fstat(ws, &st) < 0)
			return file_error(err, -errno, path);
		name = "";
	} else {
		r = open_parent(ws, path, 0, &dir, &name, err);
		if (r < 0)
			return r;
		if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return file_error(err, -errno, path);
	}
	*ret = stat_json(name, &st);
	return *ret ? 0 : -ENOMEM;
}

static int by_name(const void *a, const void *b)
{
	struct json_object *const *x = a, *const *y = b;

	return strcmp(json_object_get_string(json_object_object_get(*x, "name")),
		      json_object_get_string(json_object_object_get(*y, "name")));
}

int agent_file_list(const char *id, const char *path, struct json_object **ret,
		    struct al_error *err)
{
	_cleanup_(al_json_putp) struct json_object *list = json_object_new_array();
	_cleanup_close_ int ws = -EBADF, fd = -EBADF;
	DIR *d;
	int r = 0;

	if (!list)
		return -ENOMEM;
	r = open_workspace(id, path, true, &ws, err);
	if (r < 0)
		return r;
	fd = open_beneath(ws, path, O_RDONLY | O_DIRECTORY, 0);
	if (fd == -ENOTDIR)
		return al_error_set(err, fd, "%s: is not a folder", AL_QUOTE(path));
	if (fd < 0)
		return file_error(err, fd, path);
	d = fdopendir(fd);
	if (!d)
		return file_error(err, -errno, path);
	fd = -EBADF;
	for (struct dirent *e; r >= 0 && (e = readdir(d));) {
		struct json_object *o;
		struct stat st;

		if (streq(e->d_name, ".") || streq(e->d_name, ".."))
			continue;
		/* Gone meanwhile, or hidden by the rules: not listed. */
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (json_object_array_length(list) >= AGENT_FILES_MAX * 64) {
			r = al_error_set(err, -E2BIG, "%s: more than %d entries", AL_QUOTE(path),
					 AGENT_FILES_MAX * 64);
			break;
		}
		o = stat_json(e->d_name, &st);
		r = o ? json_object_array_add(list, o) : -ENOMEM;
		if (r < 0)
			json_object_put(o);
	}
	(void)closedir(d);
	if (r < 0)
		return r;
	json_object_array_sort(list, by_name);
	*ret = TAKE_PTR(list);
	return 0;
}

int agent_file_remove(const char *id, const char *path, struct al_error *err)
{
	_cleanup_close_ int ws = -EBADF, dir = -EBADF;
	const char *name;
	struct stat st;
	int r;

	r = open_workspace(id, path, false, &ws, err);
	if (r < 0)
		return r;
	r = open_parent(ws, path, 0, &dir, &name, err);
	if (r < 0)
		return r;
	if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return file_error(err, -errno, path);
	if (unlinkat(dir, name, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) < 0)
		return errno == ENOTEMPTY || errno == EEXIST
			   ? al_error_set(err, -ENOTEMPTY, "%s: the folder is not empty",
					  AL_QUOTE(path))
			   : file_error(err, -errno, path);
	return 0;
}
