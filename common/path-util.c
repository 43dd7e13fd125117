/* Host paths that airlock exposes to a sandbox (see path-util.h). */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/macro.h"
#include "common/path-util.h"

/* Host folders a sandbox is never given writable: these themselves (their contents may be a
 * user's data: /var/www/site, /root/project) ... */
static const char *const blocked_roots[] = {"/",    "/var", "/root", "/home", "/run",
					    "/tmp", "/opt", "/srv",  "/mnt",  "/media"};
/* ... and these with everything below them: what the host runs, configures or schedules from. */
static const char *const blocked_trees[] = {
    "/etc",	  "/usr",     "/boot",	  "/bin",      "/sbin",	       "/lib",
    "/lib32",	  "/lib64",   "/libx32",  "/proc",     "/sys",	       "/dev",
    "/var/spool", "/var/lib", "/var/log", "/var/mail", "/var/backups", "/var/cache"};

/* airlock's own state (the seccomp filter cache, later the vault and the broker's socket): a
 * sandbox that could write there could weaken every later sandbox. No writable bind may be one
 * of these, lie inside one, or contain one. */
static const char *const protected_dirs[] = {"/var/cache/airlock", "/var/lib/airlock",
					     "/etc/airlock", "/run/airlock"};

bool al_path_is_within(const char *a, const char *b)
{
	const char *rest = startswith(a, b);

	return rest && (*rest == '\0' || *rest == '/' || streq(b, "/"));
}

/* Makes path absolute (against the current folder) and removes ".", ".." and "//" lexically,
 * without looking at the file system. */
static int path_lexical(const char *path, char **ret)
{
	_cleanup_free_ char *joined = NULL, *out = NULL;
	char cwd[PATH_MAX], *save = NULL, *c;
	size_t l = 0;

	if (path[0] == '/') {
		joined = strdup(path);
	} else {
		if (!getcwd(cwd, sizeof(cwd)))
			return -errno;
		if (asprintf(&joined, "%s/%s", cwd, path) < 0)
			joined = NULL;
	}
	out = malloc(joined ? strlen(joined) + 2 : 1);
	if (!joined || !out)
		return -ENOMEM;
	for (c = strtok_r(joined, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		if (streq(c, "."))
			continue;
		if (streq(c, "..")) {
			while (l > 0 && out[--l] != '/')
				;
			continue;
		}
		out[l++] = '/';
		memcpy(out + l, c, strlen(c));
		l += strlen(c);
	}
	if (l == 0)
		out[l++] = '/';
	out[l] = '\0';
	*ret = TAKE_PTR(out);
	return 0;
}

/* A writable bind must not expose the host's system folders or airlock's own state. */
static int check_writable(const char *canonical, const char *field, struct al_error *err)
{
	const char *cache = getenv("AIRLOCK_SECCOMP_CACHE"), *home = getenv("HOME");
	_cleanup_free_ char *home_real = home ? realpath(home, NULL) : NULL;

	for (size_t i = 0; i < ELEMENTSOF(blocked_roots); i++)
		if (streq(canonical, blocked_roots[i]))
			return al_error_set(err, -EPERM, "%s: refusing to expose %s writable",
					    field, canonical);
	if (home_real && streq(canonical, home_real))
		return al_error_set(err, -EPERM,
				    "%s: refusing to expose your home folder %s writable; use a "
				    "project folder",
				    field, canonical);
	for (size_t i = 0; i < ELEMENTSOF(protected_dirs); i++)
		if (al_path_is_within(canonical, protected_dirs[i]) ||
		    al_path_is_within(protected_dirs[i], canonical))
			return al_error_set(err, -EPERM,
					    "%s: refusing to expose %s writable: it holds or is "
					    "airlock's own state (%s)",
					    field, canonical, protected_dirs[i]);
	for (size_t i = 0; i < ELEMENTSOF(blocked_trees); i++)
		if (al_path_is_within(canonical, blocked_trees[i]))
			return al_error_set(err, -EPERM,
					    "%s: refusing to expose %s writable: it is in %s",
					    field, canonical, blocked_trees[i]);
	/* A test's seccomp cache folder (root only) is airlock's state as much as the default. */
	if (cache && cache[0] == '/' && geteuid() == 0 &&
	    (al_path_is_within(canonical, cache) || al_path_is_within(cache, canonical)))
		return al_error_set(err, -EPERM,
				    "%s: refusing to expose %s writable: it holds or is airlock's "
				    "seccomp cache (%s)",
				    field, canonical, cache);
	return 0;
}

/* Where the credential broker listens and keeps its vault: the socket must be out of every
 * sandbox's reach, even read-only (connect() works on a read-only mount), so no bind may be or
 * contain the default folders of root's and the user's daemon, or the one $AIRLOCK_BROKER names
 * (a folder inside them holds neither). */
static int check_broker(const char *canonical, const char *field, struct al_error *err)
{
	const char *rt = getenv("XDG_RUNTIME_DIR"), *sock = getenv("AIRLOCK_BROKER");
	_cleanup_free_ char *user = NULL, *sock_dir = NULL;
	const char *dirs[4] = {"/run/airlock", "/var/lib/airlock"};
	size_t n = 2;
	char *slash;

	if (rt && rt[0] == '/' && asprintf(&user, "%s/airlock", rt) >= 0)
		dirs[n++] = user;
	if (sock && sock[0] == '/' && (sock_dir = strdup(sock)) &&
	    (slash = strrchr(sock_dir, '/')) && slash != sock_dir) {
		*slash = '\0';
		dirs[n++] = sock_dir;
	}
	for (size_t i = 0; i < n; i++)
		if (al_path_is_within(dirs[i], canonical))
			return al_error_set(
			    err, -EPERM,
			    "%s: refusing to expose %s: it holds or is the credential "
			    "broker's folder (%s)",
			    field, canonical, dirs[i]);
	return 0;
}

int al_path_resolve_exposable(const char *source, bool writable, const char *field, char **ret,
			      struct al_error *err)
{
	_cleanup_free_ char *canonical = NULL, *lexical = NULL;
	int r;

	canonical = realpath(source, NULL);
	if (!canonical)
		return al_error_set_errno(err, -errno, "%s: %s", field, source);
	r = path_lexical(source, &lexical);
	if (r < 0)
		return al_error_set_errno(err, r, "%s: %s", field, source);
	if (!streq(lexical, canonical))
		return al_error_set(err, -ELOOP,
				    "%s: %s resolves through a symbolic link to %s; name the real "
				    "path",
				    field, source, canonical);
	r = check_broker(canonical, field, err);
	if (r >= 0 && writable)
		r = check_writable(canonical, field, err);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(canonical);
	return 0;
}

#define REMOVE_STEPS_MAX 10000000 /* a tree that cannot be emptied is given up, not looped on */

/* The first entry of dir that is a folder (its name into name), after removing every other
 * entry. Returns 1 when it found one, 0 when dir holds no folder any more. */
static int empty_but_folders(int dir, char *name, size_t size, size_t *steps)
{
	int fd = fcntl(dir, F_DUPFD_CLOEXEC, 3), found = 0;
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (!d) {
		if (fd >= 0)
			(void)close(fd);
		return 0;
	}
	for (struct dirent *de; !found && (de = readdir(d)) && ++*steps < REMOVE_STEPS_MAX;) {
		struct stat st;

		if (streq(de->d_name, ".") || streq(de->d_name, ".."))
			continue;
		if (fstatat(dir, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (!S_ISDIR(st.st_mode)) {
			(void)unlinkat(dir, de->d_name, 0);
			continue;
		}
		/* An empty one goes at once; one that cannot go (another mount) is left. */
		if (unlinkat(dir, de->d_name, AT_REMOVEDIR) == 0 || errno == EBUSY)
			continue;
		(void)snprintf(name, size, "%s", de->d_name);
		found = 1;
	}
	(void)closedir(d);
	return found;
}

void al_dir_empty(int dir)
{
	char **names = NULL, name[NAME_MAX + 1];
	size_t depth = 0, steps = 0;
	int fd, sub;

	/* By fds, one level open at a time: no path grows past PATH_MAX however deep the tree,
	 * no link is followed, and the caller's fd limit is not a depth limit. */
	fd = fcntl(dir, F_DUPFD_CLOEXEC, 3);
	while (fd >= 0 && steps++ < REMOVE_STEPS_MAX) {
		if (empty_but_folders(fd, name, sizeof(name), &steps)) {
			char **n = reallocarray(names, depth + 1, sizeof(*names));

			sub = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (!n || sub < 0 || !(n[depth] = strdup(name))) {
				if (n)
					names = n;
				if (sub >= 0)
					(void)close(sub);
				break;
			}
			names = n;
			depth++;
			(void)close(fd);
			fd = sub;
			continue;
		}
		if (depth == 0)
			break;
		sub = openat(fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		(void)close(fd);
		fd = sub;
		if (fd < 0)
			break;
		depth--;
		(void)unlinkat(fd, names[depth], AT_REMOVEDIR);
		free(names[depth]);
	}
	if (fd >= 0)
		(void)close(fd);
	while (depth > 0)
		free(names[--depth]);
	free(names);
}

void al_path_remove_tree(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0) {
		(void)unlink(path);
		return;
	}
	al_dir_empty(fd);
	(void)close(fd);
	(void)rmdir(path);
}

int al_mkdir_p(const char *dir, mode_t mode)
{
	_cleanup_free_ char *p = strdup(dir);

	if (!p)
		return -ENOMEM;
	for (char *s = p + 1;; s++) {
		char c = *s;

		if (c != '/' && c != '\0')
			continue;
		*s = '\0';
		if (mkdir(p, mode) < 0 && errno != EEXIST)
			return -errno;
		*s = c;
		if (c == '\0')
			return 0;
	}
}
