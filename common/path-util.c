/* Host paths that airlock exposes to a sandbox (see path-util.h). */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
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

bool al_path_is_system_folder(const char *canonical)
{
	for (size_t i = 0; i < ELEMENTSOF(blocked_roots); i++)
		if (streq(canonical, blocked_roots[i]))
			return true;
	for (size_t i = 0; i < ELEMENTSOF(blocked_trees); i++)
		if (al_path_is_within(canonical, blocked_trees[i]))
			return true;
	return false;
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

/* ---- airlock's state folders ---- */

int al_path_printf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n >= 0 && (size_t)n < size ? 0 : -ENAMETOOLONG;
}

/* The user's home folder: $HOME when absolute, else the password database's. */
static const char *home_folder(char *buf, size_t size)
{
	const char *home = getenv("HOME");
	struct passwd pw, *found = NULL;

	if (home && home[0] == '/')
		return home;
	if (getpwuid_r(geteuid(), &pw, buf, size, &found) != 0 || !found || !pw.pw_dir ||
	    pw.pw_dir[0] != '/')
		return NULL;
	return pw.pw_dir;
}

/* An absolute $name, or NULL (the XDG spec: a relative path is ignored). */
static const char *xdg(const char *name, bool use)
{
	const char *v = use ? getenv(name) : NULL;

	return v && v[0] == '/' ? v : NULL;
}

/* kind's folder as root (root) or as this user; use_xdg false gives the user's folders as they
 * are without the XDG variables (which another airlock of the same user may not have). */
static int state_dir_of(enum al_state_kind kind, bool root, bool use_xdg, char *buf, size_t size)
{
	char pwbuf[4096];
	const char *home = home_folder(pwbuf, sizeof(pwbuf)), *x;

	switch (kind) {
	case AL_STATE_SESSIONS:
		if (root)
			return al_path_printf(buf, size, "/var/lib/airlock/sessions");
		if ((x = xdg("XDG_STATE_HOME", use_xdg)))
			return al_path_printf(buf, size, "%s/airlock/sessions", x);
		return home ? al_path_printf(buf, size, "%s/.local/state/airlock/sessions", home)
			    : -ENOENT;
	case AL_STATE_DATA:
		if (root)
			return al_path_printf(buf, size, "/var/lib/airlock");
		if ((x = xdg("XDG_DATA_HOME", use_xdg)))
			return al_path_printf(buf, size, "%s/airlock", x);
		return home ? al_path_printf(buf, size, "%s/.local/share/airlock", home) : -ENOENT;
	case AL_STATE_RUNTIME:
		if (root)
			return al_path_printf(buf, size, "/run/airlock");
		if (!use_xdg)
			return al_path_printf(buf, size, "/run/user/%u/airlock", geteuid());
		x = xdg("XDG_RUNTIME_DIR", true);
		return x ? al_path_printf(buf, size, "%s/airlock", x) : -ENOENT;
	case AL_STATE_CACHE:
		return root ? al_path_printf(buf, size, "/var/cache/airlock") : -ENOENT;
	case AL_STATE_SCRATCH:
		if (root)
			return al_path_printf(buf, size, "/run/airlock-exec");
		if (!use_xdg)
			return al_path_printf(buf, size, "/run/user/%u/airlock-exec", geteuid());
		x = xdg("XDG_RUNTIME_DIR", true);
		return x ? al_path_printf(buf, size, "%s/airlock-exec", x) : -ENOENT;
	case AL_STATE_SCRATCH_TMP:
		x = xdg("TMPDIR", use_xdg);
		return al_path_printf(buf, size, "%s/airlock-exec-%u", x ? x : "/tmp", geteuid());
	default:
		return -EINVAL;
	}
}

int al_state_dir(enum al_state_kind kind, char *buf, size_t size)
{
	return state_dir_of(kind, geteuid() == 0, true, buf, size);
}

/* path with its longest existing beginning resolved (the state folders may not exist yet, and a
 * bind is named by its real path: /home -> /var/home must not hide one). */
static int canonical_prefix(const char *path, char *buf, size_t size)
{
	char tmp[PATH_MAX];
	size_t cut = strlen(path);

	if (al_path_printf(tmp, sizeof(tmp), "%s", path) < 0)
		return -ENAMETOOLONG;
	for (;;) {
		_cleanup_free_ char *real = realpath(tmp, NULL);
		char *slash;

		if (real)
			return al_path_printf(buf, size, "%s%s", streq(real, "/") ? "" : real,
					      path + cut);
		slash = strrchr(tmp, '/');
		if ((errno != ENOENT && errno != ENOTDIR) || !slash || slash == tmp)
			return al_path_printf(buf, size, "%s", path);
		*slash = '\0';
		cut = (size_t)(slash - tmp);
	}
}

#define STATE_DIRS_MAX 32

struct state_dir {
	char path[PATH_MAX];
	bool
	    holder; /* only a bind that is or contains it is refused: exec's workspaces are below */
};

static void state_add(struct state_dir *d, size_t *n, const char *path, bool holder)
{
	char c[PATH_MAX];

	if (*n >= STATE_DIRS_MAX || canonical_prefix(path, c, sizeof(c)) < 0)
		return;
	for (size_t i = 0; i < *n; i++)
		if (streq(d[i].path, c))
			return;
	(void)al_path_printf(d[*n].path, sizeof(d[*n].path), "%s", c);
	d[(*n)++].holder = holder;
}

/* Every state folder of airlock's this process can tell: root's, this user's with and without
 * the XDG variables, exec's scratch folder, the folder of $AIRLOCK_BROKER and the file
 * $AIRLOCK_VAULT (neither of which may hold anything else of airlock's). */
static size_t state_dirs(struct state_dir *d)
{
	const char *sock = getenv("AIRLOCK_BROKER"), *vault = getenv("AIRLOCK_VAULT");
	char buf[PATH_MAX], *slash;
	size_t n = 0;

	for (int kind = 0; kind < _AL_STATE_MAX; kind++)
		for (int v = 0; v < 4; v++)
			if (state_dir_of(kind, v & 1, v & 2, buf, sizeof(buf)) >= 0)
				state_add(d, &n, buf,
					  kind == AL_STATE_SCRATCH || kind == AL_STATE_SCRATCH_TMP);
	if (sock && sock[0] == '/' && al_path_printf(buf, sizeof(buf), "%s", sock) >= 0 &&
	    (slash = strrchr(buf, '/')) && slash != buf) {
		*slash = '\0';
		state_add(d, &n, buf, true);
	}
	if (vault && vault[0] == '/')
		state_add(d, &n, vault, true);
	return n;
}

/* No bind, read-only or not, may reach airlock's state: a session's or the broker's socket
 * accepts connect() through a read-only mount (and SO_PEERCRED sees the same uid), the vault is
 * the secrets' ciphertext, the cache holds later sandboxes' filters. */
static int check_state(const char *canonical, const char *field, struct al_error *err)
{
	struct state_dir d[STATE_DIRS_MAX];
	size_t n = state_dirs(d);

	for (size_t i = 0; i < n; i++)
		if (al_path_is_within(d[i].path, canonical) ||
		    (!d[i].holder && al_path_is_within(canonical, d[i].path)))
			return al_error_set(
			    err, -EPERM,
			    "%s: refusing to expose %s, even read-only: it holds or "
			    "is airlock's own state (%s: sessions' and the credential "
			    "broker's folders, the vault, caches)",
			    field, canonical, d[i].path);
	return 0;
}

int al_path_check_state(const char *path, const char *field, struct al_error *err)
{
	_cleanup_free_ char *canonical = realpath(path, NULL);

	if (!canonical)
		return al_error_set_errno(err, -errno, "%s: %s", field, path);
	return check_state(canonical, field, err);
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
	r = writable ? check_writable(canonical, field, err) : 0;
	if (r >= 0)
		r = check_state(canonical, field, err);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(canonical);
	return 0;
}

#define REMOVE_STEPS_MAX 10000000 /* a tree that cannot be emptied is given up, not looped on */

/* A folder that could not be emptied or removed (another user's, a mount point), at depth level
 * of the walk: passed over from then on, while the walk is in the folder that holds it. */
struct stuck {
	size_t level;
	char *name;
};

struct walk {
	struct stuck *stuck;
	size_t n_stuck;
	size_t steps;
};

static bool is_stuck(const struct walk *w, size_t level, const char *name)
{
	for (size_t i = 0; i < w->n_stuck; i++)
		if (w->stuck[i].level == level && streq(w->stuck[i].name, name))
			return true;
	return false;
}

/* Takes name (malloc'd) into the list; frees it when the list cannot grow (the walk then may
 * meet the folder again, and ends at REMOVE_STEPS_MAX). */
static void add_stuck(struct walk *w, size_t level, char *name)
{
	struct stuck *n = reallocarray(w->stuck, w->n_stuck + 1, sizeof(*n));

	if (!n) {
		free(name);
		return;
	}
	w->stuck = n;
	w->stuck[w->n_stuck++] = (struct stuck){.level = level, .name = name};
}

/* Forgets the folders stuck at level: the walk left the folder that holds them. */
static void drop_stuck(struct walk *w, size_t level)
{
	while (w->n_stuck > 0 && w->stuck[w->n_stuck - 1].level >= level)
		free(w->stuck[--w->n_stuck].name);
}

/* A folder of ours that we may not write in or search (a sandbox's chmod 0500 or 000) is given
 * back the owner's rwx: we remove it anyway, and without them nothing in it could go. Another
 * user's stays as it is. */
static int own_rwx(int dir, const char *name, const struct stat *st)
{
	if (st->st_uid != geteuid() || (st->st_mode & S_IRWXU) == S_IRWXU)
		return 0;
	return RET_NERRNO(
	    fchmodat(dir, name, (st->st_mode & 07777) | S_IRWXU, AT_SYMLINK_NOFOLLOW));
}

/* The first entry of dir (at depth level) that is a folder not stuck (its name into name), after
 * removing every other entry. Returns 1 when it found one, 0 when dir holds no such folder any
 * more. */
static int empty_but_folders(int dir, size_t level, char *name, size_t size, struct walk *w)
{
	int fd = fcntl(dir, F_DUPFD_CLOEXEC, 3), found = 0;
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (!d) {
		if (fd >= 0)
			(void)close(fd);
		return 0;
	}
	for (struct dirent *de; !found && (de = readdir(d)) && ++w->steps < REMOVE_STEPS_MAX;) {
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
		if (unlinkat(dir, de->d_name, AT_REMOVEDIR) == 0 || errno == EBUSY ||
		    is_stuck(w, level, de->d_name))
			continue;
		(void)own_rwx(dir, de->d_name, &st);
		(void)snprintf(name, size, "%s", de->d_name);
		found = 1;
	}
	(void)closedir(d);
	return found;
}

void al_dir_empty(int dir)
{
	char **names = NULL, name[NAME_MAX + 1];
	struct walk w = {0};
	size_t depth = 0;
	int fd, sub;

	/* By fds, one level open at a time: no path grows past PATH_MAX however deep the tree,
	 * no link is followed, and the caller's fd limit is not a depth limit. A folder that can be
	 * neither entered nor removed is passed over (struct stuck), so the walk always ends. */
	fd = fcntl(dir, F_DUPFD_CLOEXEC, 3);
	while (fd >= 0 && w.steps++ < REMOVE_STEPS_MAX) {
		if (empty_but_folders(fd, depth, name, sizeof(name), &w)) {
			char **n = reallocarray(names, depth + 1, sizeof(*names));

			if (n)
				names = n;
			if (!n || !(names[depth] = strdup(name)))
				break;
			sub = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub < 0) {
				add_stuck(&w, depth, names[depth]);
				continue;
			}
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
		drop_stuck(&w, depth);
		depth--;
		if (unlinkat(fd, names[depth], AT_REMOVEDIR) < 0 && errno != ENOENT)
			add_stuck(&w, depth, names[depth]);
		else
			free(names[depth]);
	}
	if (fd >= 0)
		(void)close(fd);
	while (depth > 0)
		free(names[--depth]);
	free(names);
	drop_stuck(&w, 0);
	free(w.stuck);
}

void al_path_remove_tree(const char *path)
{
	struct stat st;
	int fd;

	if (lstat(path, &st) < 0)
		return;
	if (!S_ISDIR(st.st_mode)) {
		(void)unlink(path);
		return;
	}
	(void)own_rwx(AT_FDCWD, path, &st);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
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
