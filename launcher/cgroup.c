/* The sandbox's cgroup(s): placement, limits, OOM detection, teardown, on cgroup v2 and v1.
 *
 * v1 (and hybrid systems, whose controllers are v1): one directory per hierarchy that holds a
 * needed controller, nested under airlock's own cgroup in that hierarchy
 * (<mount>/<airlock's cgroup>/airlock/<id>), so that a limit on airlock also bounds its
 * sandboxes. v2: <root>/airlock/<id> as root; otherwise <base>/airlock/<id> where base is the
 * nearest ancestor of airlock's cgroup delegated to the user (systemd's user@UID.service).
 *
 * id is "<airlock pid>-<8 hex digits>": the pid is how launcher_cgroup_remove_stale() tells a
 * leftover of a dead run from the cgroup of a live one. The "airlock" directories are shared by
 * concurrent runs: the last run out removes one (rmdir fails while another run's cgroup is in it),
 * and a run that finds it gone between creating it and its own cgroup creates it again.
 *
 * An airlock killed with SIGKILL can't remove its cgroups: a watcher process does. It is forked
 * outside the sandbox when the cgroups are made, waits for airlock's end (a pidfd), then does
 * airlock's teardown; airlock stops it at a normal end. The next run or session command removes
 * what a killed watcher could not (launcher_cgroup_remove_stale()). */

#define LOG_MODULE "cgroup"

#define PARENT_ATTEMPTS 3 /* re-creations of a shared parent removed under our feet */

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/magic.h>

#include "common/fd-util.h"
#include "common/log.h"
#include "common/path-util.h"
#include "common/watcher.h"
#include "launcher/launcher-internal.h"

#define FILE_MAX (1024 * 1024) /* mountinfo and cgroup files we read */
#define CGROUP_DIRS_MAX 4
#define CPU_PERIOD_USEC 100000
#define CPU_QUOTA_MIN_USEC 1000 /* the kernel refuses less */
#define PIDS_PER_ROUND 4096
#define KILL_ROUNDS 200
#define RMDIR_ROUNDS 100

enum cgroup_ctrl {
	CTRL_MEMORY,
	CTRL_PIDS,
	CTRL_CPU,
	CTRL_IO,
	_CTRL_MAX,
};

static const char *const ctrl_v1[_CTRL_MAX] = {"memory", "pids", "cpu", "blkio"};
static const char *const ctrl_v2[_CTRL_MAX] = {"memory", "pids", "cpu", "io"};
static const char *const ctrl_field[_CTRL_MAX] = {
    "resources.memory",
    "resources.pids",
    "resources.cpu",
    "resources.io_weight",
};

struct launcher_cgroup {
	enum launcher_cgroup_version version;
	char *dirs[CGROUP_DIRS_MAX]; /* the directories we created, in creation order */
	size_t n_dirs;
	int dir_of[_CTRL_MAX]; /* index in dirs of each controller's cgroup, or -1 */
	pid_t watcher;	       /* our child that removes the dirs if we are killed, or 0 */
	int oom_fd; /* the memory cgroup's file of OOM kills, once read (a session reads it twice
		     * for each command), or -EBADF */
	char warning[512];
};

/* ---- small helpers ---- */

static void *mfree(void *p)
{
	free(p);
	return NULL;
}

static void closedirp(DIR **d)
{
	if (*d)
		(void)closedir(*d);
}

static int cg_write(const char *dir, const char *file, const char *fmt, ...) _printf_(3, 4);
static int cg_write(const char *dir, const char *file, const char *fmt, ...)
{
	char path[PATH_MAX], value[64];
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vsnprintf(value, sizeof(value), fmt, ap);
	va_end(ap);
	if (r < 0 || (size_t)r >= sizeof(value))
		return -EINVAL;
	r = al_path_printf(path, sizeof(path), "%s/%s", dir, file);
	if (r < 0)
		return r;
	return al_write_file_at(AT_FDCWD, path, value);
}

static int cg_read(const char *dir, const char *file, char **ret)
{
	char path[PATH_MAX];
	int r;

	r = al_path_printf(path, sizeof(path), "%s/%s", dir, file);
	if (r < 0)
		return r;
	return al_read_file_at(AT_FDCWD, path, FILE_MAX, ret, NULL);
}

static bool cg_exists(const char *dir, const char *file)
{
	char path[PATH_MAX];

	return al_path_printf(path, sizeof(path), "%s/%s", dir, file) >= 0 &&
	       access(path, F_OK) == 0;
}

/* Is word one of the items of list (separated by any of seps)? */
static bool list_has(const char *list, const char *seps, const char *word)
{
	size_t l = strlen(word);

	for (const char *p = list; *p;) {
		size_t n = strcspn(p, seps);

		if (n == l && strncmp(p, word, l) == 0)
			return true;
		p += n;
		p += strspn(p, seps);
	}
	return false;
}

/* The number after "key " on its own line of a flat keyed file (memory.events, oom_control). */
static int keyed_value(const char *text, const char *key, uint64_t *ret)
{
	size_t l = strlen(key);

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (strncmp(p, key, l) == 0 && p[l] == ' ') {
			char *end;
			unsigned long long v;

			errno = 0;
			v = strtoull(p + l + 1, &end, 10);
			if (errno != 0 || end == p + l + 1)
				return -EBADMSG;
			*ret = v;
			return 0;
		}
	return -ENOENT;
}

static void sleep_usec(uint64_t usec)
{
	struct timespec ts = {.tv_sec = (time_t)(usec / 1000000),
			      .tv_nsec = (long)(usec % 1000000) * 1000};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* ---- where things are ---- */

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void mountinfo_unescape(char *s)
{
	char *w = s;

	for (const char *r = s; *r;) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
		    r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)(((r[1] - '0') << 6) | ((r[2] - '0') << 3) | (r[3] - '0'));
			r += 4;
		} else
			*w++ = *r++;
	}
	*w = '\0';
}

/* Finds, in the text of a mountinfo file, the mount of the v1 hierarchy that holds controller
 * (any controller when NULL): its mount point and the path in the hierarchy it shows as its
 * root. */
static int v1_hierarchy(const char *mountinfo, const char *controller, char *ret_mnt,
			char *ret_root, size_t size)
{
	_cleanup_free_ char *buf = strdup(mountinfo);
	char *line, *next;

	if (!buf)
		return -ENOMEM;
	for (line = buf; line && *line; line = next) {
		char *f[32], *save = NULL;
		size_t n = 0, dash;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		for (char *t = strtok_r(line, " ", &save); t && n < ELEMENTSOF(f);
		     t = strtok_r(NULL, " ", &save))
			f[n++] = t;
		for (dash = 6; dash < n && !streq(f[dash], "-"); dash++)
			;
		if (dash + 3 >= n || !streq(f[dash + 1], "cgroup"))
			continue;
		if (controller ? !list_has(f[dash + 3], ",", controller)
			       : !(list_has(f[dash + 3], ",", "memory") ||
				   list_has(f[dash + 3], ",", "pids") ||
				   list_has(f[dash + 3], ",", "cpu") ||
				   list_has(f[dash + 3], ",", "blkio")))
			continue;
		mountinfo_unescape(f[3]);
		mountinfo_unescape(f[4]);
		if (strlen(f[3]) >= size || strlen(f[4]) >= size)
			return -ENAMETOOLONG;
		if (ret_root)
			strcpy(ret_root, f[3]);
		if (ret_mnt)
			strcpy(ret_mnt, f[4]);
		return 0;
	}
	return -ENOENT;
}

/* Our cgroup in the v1 hierarchy of controller, or in the v2 hierarchy (controller NULL), from
 * the text of /proc/self/cgroup. */
static int self_cgroup(const char *text, const char *controller, char *ret, size_t size)
{
	_cleanup_free_ char *buf = strdup(text);
	char *line, *next;

	if (!buf)
		return -ENOMEM;
	for (line = buf; line && *line; line = next) {
		char *list, *path;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		list = strchr(line, ':');
		path = list ? strchr(list + 1, ':') : NULL;
		if (!path || path[1] != '/')
			continue;
		*list++ = '\0';
		*path++ = '\0';
		if (controller ? !list_has(list, ",", controller)
			       : !(streq(line, "0") && list[0] == '\0'))
			continue;
		if (strlen(path) >= size)
			return -ENAMETOOLONG;
		strcpy(ret, path);
		return 0;
	}
	return -ENOENT;
}

/* What one call needs to know about the system, read once. */
struct cgroup_view {
	const struct launcher_cgroup_env *env;
	char *mountinfo; /* the contents of env->mountinfo (v1) */
	char *self;	 /* the contents of env->self_cgroup */
};

static void cgroup_view_done(struct cgroup_view *v)
{
	v->mountinfo = mfree(v->mountinfo);
	v->self = mfree(v->self);
}

static int cgroup_view_load(const struct launcher_cgroup_env *env, struct cgroup_view *ret)
{
	struct cgroup_view v = {.env = env};
	int r;

	r = al_read_file_at(AT_FDCWD, env->self_cgroup, FILE_MAX, &v.self, NULL);
	if (r >= 0 && env->version == LAUNCHER_CGROUP_V1)
		r = al_read_file_at(AT_FDCWD, env->mountinfo, FILE_MAX, &v.mountinfo, NULL);
	if (r < 0) {
		cgroup_view_done(&v);
		return r;
	}
	*ret = v;
	return 0;
}

/* The "airlock" directory for a v1 controller: <mount>/<our cgroup>/airlock. ret_mnt gets the
 * mount point, for messages. */
static int v1_parent(const struct cgroup_view *v, const char *controller, char *ret, char *ret_mnt,
		     size_t size)
{
	char root[PATH_MAX], self[PATH_MAX];
	const char *rel;
	int r;

	r = v1_hierarchy(v->mountinfo, controller, ret_mnt, root, size);
	if (r < 0)
		return r;
	r = self_cgroup(v->self, controller, self, sizeof(self));
	if (r < 0)
		return r;
	/* the mount may show a subtree only (a container's view): our cgroup must be inside it */
	if (streq(root, "/"))
		rel = self;
	else if ((rel = startswith(self, root)) && (rel[0] == '/' || rel[0] == '\0'))
		;
	else
		return -ENOENT;
	if (streq(rel, "/"))
		rel = "";
	return al_path_printf(ret, size, "%s%s/airlock", ret_mnt, rel);
}

static bool owned_by(const char *dir, const char *file, uid_t uid)
{
	char path[PATH_MAX];
	struct stat st;

	if (al_path_printf(path, sizeof(path), "%s%s%s", dir, file ? "/" : "", strempty(file)) < 0)
		return false;
	return stat(path, &st) == 0 && st.st_uid == uid;
}

/* The v2 cgroup under which the "airlock" directory goes: the root for root; for others the
 * nearest proper ancestor of our cgroup delegated to us (we own it, its cgroup.procs and its
 * cgroup.subtree_control). Our own cgroup can't be it: it holds a process (us), and v2 lets
 * only cgroups without processes give controllers to children. */
static int v2_base(const struct cgroup_view *v, char *ret, size_t size)
{
	const struct launcher_cgroup_env *env = v->env;
	char self[PATH_MAX], dir[PATH_MAX];
	char *slash;
	int r;

	if (env->euid == 0)
		return al_path_printf(ret, size, "%s", env->root);
	r = self_cgroup(v->self, NULL, self, sizeof(self));
	if (r < 0)
		return r;
	while ((slash = strrchr(self, '/')) && slash != self) {
		*slash = '\0';
		r = al_path_printf(dir, sizeof(dir), "%s%s", env->root, self);
		if (r < 0)
			return r;
		if (owned_by(dir, NULL, env->euid) && owned_by(dir, "cgroup.procs", env->euid) &&
		    owned_by(dir, "cgroup.subtree_control", env->euid))
			return al_path_printf(ret, size, "%s", dir);
	}
	return -EACCES;
}

enum launcher_cgroup_version launcher_cgroup_detect_at(const char *root, const char *mountinfo)
{
	_cleanup_free_ char *text = NULL;
	struct statfs fs;

	if (statfs(root, &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC)
		return LAUNCHER_CGROUP_V2;
	if (al_read_file_at(AT_FDCWD, mountinfo, FILE_MAX, &text, NULL) >= 0 &&
	    v1_hierarchy(text, NULL, NULL, NULL, PATH_MAX) >= 0)
		return LAUNCHER_CGROUP_V1;
	return LAUNCHER_CGROUP_NONE;
}

enum launcher_cgroup_version launcher_cgroup_detect(void)
{
	return launcher_cgroup_detect_at("/sys/fs/cgroup", "/proc/self/mountinfo");
}

static struct launcher_cgroup_env cgroup_env_default(void)
{
	return (struct launcher_cgroup_env){
	    .version = launcher_cgroup_detect(),
	    .root = "/sys/fs/cgroup",
	    .mountinfo = "/proc/self/mountinfo",
	    .self_cgroup = "/proc/self/cgroup",
	    .euid = geteuid(),
	};
}

/* ---- ids and stale cgroups ---- */

/* "<pid>-<8 lower-case hex digits>"; returns the pid, or 0 when name is not such an id. */
static pid_t cgroup_id_pid(const char *name)
{
	unsigned long pid = 0;
	const char *p = name;

	for (; isdigit((unsigned char)*p) && pid <= INT_MAX; p++)
		pid = pid * 10 + (unsigned long)(*p - '0');
	if (p == name || name[0] == '0' || pid > INT_MAX || *p != '-')
		return 0;
	for (int i = 1; i <= 8; i++)
		if (!isdigit((unsigned char)p[i]) && !(p[i] >= 'a' && p[i] <= 'f'))
			return 0;
	return p[9] == '\0' ? (pid_t)pid : 0;
}

/* Has the airlock that made a cgroup ended? One killed with SIGKILL stays a zombie until its
 * parent (often init, which adopted it, and may reap late) waits for it: that counts as ended. */
static bool airlock_has_ended(pid_t pid)
{
	char path[64];
	_cleanup_free_ char *stat = NULL;
	const char *end;

	if (kill(pid, 0) < 0)
		return errno == ESRCH;
	(void)snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (al_read_file_at(AT_FDCWD, path, 4096, &stat, NULL) < 0)
		return false;
	/* "pid (comm) S ...": comm may hold anything, the state follows its last ')' */
	end = strrchr(stat, ')');
	return end && end[1] == ' ' && (end[2] == 'Z' || end[2] == 'X');
}

static bool cgroup_is_empty(const char *dir)
{
	_cleanup_free_ char *procs = NULL;

	return cg_read(dir, "cgroup.procs", &procs) >= 0 && procs[strspn(procs, " \n")] == '\0';
}

/* Removes the leftovers in one "airlock" directory: cgroups whose airlock is gone (its pid does
 * not exist, or is a zombie) and that hold no process. A live run's cgroup always has a live
 * airlock pid. */
static int remove_stale_in(const char *parent)
{
	_cleanup_(closedirp) DIR *d = NULL;
	char dir[PATH_MAX];
	int n = 0;

	d = opendir(parent);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	for (struct dirent *de; (de = readdir(d));) {
		pid_t pid = cgroup_id_pid(de->d_name);

		if (pid <= 0 || !airlock_has_ended(pid))
			continue;
		if (al_path_printf(dir, sizeof(dir), "%s/%s", parent, de->d_name) < 0 ||
		    !cgroup_is_empty(dir))
			continue;
		if (rmdir(dir) == 0)
			n++;
		else
			log_debug("Failed to remove stale cgroup %s: %m", dir);
	}
	/* The shared parent too, as the last run out does (runs re-create it if need be). */
	if (n > 0)
		(void)rmdir(parent);
	return n;
}

static int cgroup_remove_stale(const struct cgroup_view *v)
{
	char parents[_CTRL_MAX][PATH_MAX], mnt[PATH_MAX], base[PATH_MAX];
	size_t n_parents = 0;
	int r, total = 0;

	if (v->env->version == LAUNCHER_CGROUP_V2) {
		r = v2_base(v, base, sizeof(base));
		if (r < 0)
			return r;
		r = al_path_printf(parents[n_parents++], PATH_MAX, "%s/airlock", base);
		if (r < 0)
			return r;
	} else if (v->env->version == LAUNCHER_CGROUP_V1)
		for (int c = 0; c < _CTRL_MAX; c++) {
			bool seen = false;

			if (v1_parent(v, ctrl_v1[c], parents[n_parents], mnt, PATH_MAX) < 0)
				continue;
			for (size_t i = 0; i < n_parents; i++)
				seen = seen || streq(parents[i], parents[n_parents]);
			if (!seen)
				n_parents++;
		}
	for (size_t i = 0; i < n_parents; i++) {
		r = remove_stale_in(parents[i]);
		if (r < 0)
			log_debug_errno(r, "Failed to look for stale cgroups in %s: %m",
					parents[i]);
		else
			total += r;
	}
	return total;
}

int launcher_cgroup_remove_stale_env(const struct launcher_cgroup_env *env)
{
	struct cgroup_view v;
	int r;

	if (env->version == LAUNCHER_CGROUP_NONE)
		return 0;
	r = cgroup_view_load(env, &v);
	if (r < 0)
		return r;
	r = cgroup_remove_stale(&v);
	cgroup_view_done(&v);
	return r;
}

int launcher_cgroup_remove_stale(void)
{
	struct launcher_cgroup_env env = cgroup_env_default();

	return launcher_cgroup_remove_stale_env(&env);
}

/* ---- limits ---- */

/* Maps an io weight from the v2 scale (1..10000, default 100) to a v1 scale [lo, hi] with
 * default def, linearly on each side of the default so that defaults and ends match. */
static uint64_t io_weight_rescale(uint64_t w, uint64_t lo, uint64_t def, uint64_t hi)
{
	w = w < 1 ? 1 : w > 10000 ? 10000 : w;
	if (w <= 100)
		return lo + (w - 1) * (def - lo) / 99;
	return def + (w - 100) * (hi - def) / 9900;
}

static int limit_memory(const struct launcher_cgroup *cg, const char *dir, uint64_t bytes)
{
	int r;

	if (cg->version == LAUNCHER_CGROUP_V2) {
		r = cg_write(dir, "memory.max", "%" PRIu64, bytes);
		/* no swap on top of the limit; absent when swap is not accounted */
		if (r >= 0 && cg_exists(dir, "memory.swap.max"))
			r = cg_write(dir, "memory.swap.max", "0");
		return r;
	}
	r = cg_write(dir, "memory.limit_in_bytes", "%" PRIu64, bytes);
	if (r >= 0 && cg_exists(dir, "memory.memsw.limit_in_bytes"))
		r = cg_write(dir, "memory.memsw.limit_in_bytes", "%" PRIu64, bytes);
	/* v2 charges socket buffers to memory.max; v1 counts them only once a TCP limit is set,
	 * and without one a sandbox's connections could take the host's TCP memory (tcp_mem) for
	 * all. Absent on kernels built without it. */
	if (r >= 0 && cg_exists(dir, "memory.kmem.tcp.limit_in_bytes"))
		r = cg_write(dir, "memory.kmem.tcp.limit_in_bytes", "%" PRIu64, bytes);
	return r;
}

static int limit_cpu(const struct launcher_cgroup *cg, const char *dir, uint64_t millis)
{
	uint64_t quota = MAX(millis * CPU_PERIOD_USEC / 1000, (uint64_t)CPU_QUOTA_MIN_USEC);
	int r;

	if (cg->version == LAUNCHER_CGROUP_V2)
		return cg_write(dir, "cpu.max", "%" PRIu64 " %d", quota, CPU_PERIOD_USEC);
	r = cg_write(dir, "cpu.cfs_period_us", "%d", CPU_PERIOD_USEC);
	if (r >= 0)
		r = cg_write(dir, "cpu.cfs_quota_us", "%" PRIu64, quota);
	return r;
}

/* Sets the io weight, or explains in cg->warning why it can't be (-EOPNOTSUPP). */
static int limit_io(struct launcher_cgroup *cg, const char *dir, uint64_t weight)
{
	if (cg->version == LAUNCHER_CGROUP_V2) {
		if (cg_exists(dir, "io.weight"))
			return cg_write(dir, "io.weight", "default %" PRIu64, weight);
	} else if (cg_exists(dir, "blkio.weight")) /* CFQ, before Linux 5.0 */
		return cg_write(dir, "blkio.weight", "%" PRIu64,
				io_weight_rescale(weight, 10, 500, 1000));
	else if (cg_exists(dir, "blkio.bfq.weight"))
		return cg_write(dir, "blkio.bfq.weight", "%" PRIu64,
				io_weight_rescale(weight, 1, 100, 1000));
	(void)snprintf(cg->warning, sizeof(cg->warning),
		       "%s: not enforced: no I/O scheduler with weights for %s",
		       ctrl_field[CTRL_IO], dir);
	return -EOPNOTSUPP;
}

static int cgroup_limit(struct launcher_cgroup *cg, enum cgroup_ctrl c, const char *dir,
			const struct policy_resources *res, struct al_error *err)
{
	int r = 0;

	switch (c) {
	case CTRL_MEMORY:
		r = limit_memory(cg, dir, res->memory);
		break;
	case CTRL_PIDS:
		r = cg_write(dir, "pids.max", "%" PRIu64, res->pids);
		break;
	case CTRL_CPU:
		r = limit_cpu(cg, dir, res->cpu_millis);
		break;
	case CTRL_IO:
		r = limit_io(cg, dir, res->io_weight);
		if (r < 0 && !cg->warning[0])
			(void)snprintf(cg->warning, sizeof(cg->warning),
				       "%s: not enforced: cannot set it in %s: %s", ctrl_field[c],
				       dir, strerror(-r));
		return 0; /* a weight is a hint: never fatal */
	default:
		break;
	}
	if (r < 0)
		return al_error_set_errno(err, r, "%s: cannot be enforced: cannot set it in %s",
					  ctrl_field[c], dir);
	return 0;
}

/* ---- creation ---- */

static unsigned cgroup_needed(const struct policy_resources *res)
{
	return (res->memory ? 1U << CTRL_MEMORY : 0) | (res->pids ? 1U << CTRL_PIDS : 0) |
	       (res->cpu_millis ? 1U << CTRL_CPU : 0) | (res->io_weight ? 1U << CTRL_IO : 0);
}

/* A limit that can't be applied: an error, except for the io weight, which becomes a warning. */
static int cgroup_cannot(struct launcher_cgroup *cg, enum cgroup_ctrl c, int r,
			 struct al_error *err, const char *why, ...) _printf_(5, 6);
static int cgroup_cannot(struct launcher_cgroup *cg, enum cgroup_ctrl c, int r,
			 struct al_error *err, const char *why, ...)
{
	char reason[384];
	va_list ap;

	va_start(ap, why);
	(void)vsnprintf(reason, sizeof(reason), why, ap);
	va_end(ap);
	if (c == CTRL_IO) {
		(void)snprintf(cg->warning, sizeof(cg->warning), "%s: not enforced: %s",
			       ctrl_field[c], reason);
		return 0;
	}
	return al_error_set(err, r, "%s: cannot be enforced: %s", ctrl_field[c], reason);
}

/* Creates dir (its parent "airlock" first) and records it for removal. Returns its index. */
static int cgroup_mkdir(struct launcher_cgroup *cg, const char *parent, const char *id)
{
	char dir[PATH_MAX];
	int r;

	r = al_path_printf(dir, sizeof(dir), "%s/%s", parent, id);
	if (r < 0)
		return r;
	for (size_t i = 0; i < cg->n_dirs; i++)
		if (streq(cg->dirs[i], dir))
			return (int)i; /* co-mounted controllers (cpu,cpuacct) share a hierarchy */
	if (cg->n_dirs >= CGROUP_DIRS_MAX)
		return -E2BIG;
	cg->dirs[cg->n_dirs] = strdup(dir);
	if (!cg->dirs[cg->n_dirs])
		return -ENOMEM;
	/* A concurrent run leaving may remove the shared parent between the two mkdirs. */
	for (int attempt = 0;; attempt++) {
		r = 0;
		if (mkdir(parent, 0755) < 0 && errno != EEXIST)
			r = -errno;
		else if (mkdir(dir, 0755) < 0)
			r = -errno;
		if (r != -ENOENT || attempt == PARENT_ATTEMPTS)
			break;
	}
	if (r < 0) {
		cg->dirs[cg->n_dirs] = mfree(cg->dirs[cg->n_dirs]);
		return r;
	}
	return (int)cg->n_dirs++;
}

static int cgroup_new_v1(struct launcher_cgroup *cg, const struct cgroup_view *v, const char *id,
			 const struct policy_resources *res, unsigned need, struct al_error *err)
{
	char parent[PATH_MAX], mnt[PATH_MAX];
	int r;

	for (int c = 0; c < _CTRL_MAX; c++) {
		if (!(need & (1U << c)))
			continue;
		r = v1_parent(v, ctrl_v1[c], parent, mnt, sizeof(parent));
		if (r < 0) {
			r = cgroup_cannot(cg, c, -EOPNOTSUPP, err,
					  "the %s controller is not mounted (cgroup v1); see "
					  "airlock doctor",
					  ctrl_v1[c]);
			if (r < 0)
				return r;
			continue;
		}
		r = cgroup_mkdir(cg, parent, id);
		if (r < 0) {
			r = cgroup_cannot(
			    cg, c, r, err,
			    "no writable %s cgroup (cgroup v1 at %s): %s; run as root "
			    "or delegate a cgroup, see airlock doctor",
			    ctrl_v1[c], mnt, strerror(-r));
			if (r < 0)
				return r;
			continue;
		}
		cg->dir_of[c] = r;
		r = cgroup_limit(cg, c, cg->dirs[r], res, err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Enables the needed controllers for the children of dir (those it has; io is optional). */
static int v2_enable(struct launcher_cgroup *cg, const char *dir, unsigned *need,
		     struct al_error *err)
{
	_cleanup_free_ char *avail = NULL;
	char line[64] = "";
	int r;

	r = cg_read(dir, "cgroup.controllers", &avail);
	if (r < 0)
		return cgroup_cannot(cg, __builtin_ctz(*need), r, err,
				     "cannot read %s/cgroup.controllers: %s", dir, strerror(-r));
	for (int c = 0; c < _CTRL_MAX; c++) {
		if (!(*need & (1U << c)))
			continue;
		if (!list_has(avail, " \n", ctrl_v2[c])) {
			r = cgroup_cannot(cg, c, -EOPNOTSUPP, err,
					  "the %s controller is not available in %s (cgroup v2); "
					  "see airlock doctor",
					  ctrl_v2[c], dir);
			if (r < 0)
				return r;
			*need &= ~(1U << c);
			continue;
		}
		(void)strcat(line, line[0] ? " +" : "+");
		(void)strcat(line, ctrl_v2[c]);
	}
	if (!line[0])
		return 0;
	r = cg_write(dir, "cgroup.subtree_control", "%s", line);
	if (r < 0)
		return al_error_set_errno(err, r,
					  "%s: cannot be enforced: cannot enable \"%s\" in "
					  "%s/cgroup.subtree_control",
					  ctrl_field[__builtin_ctz(*need)], line, dir);
	return 0;
}

static int cgroup_new_v2(struct launcher_cgroup *cg, const struct cgroup_view *v, const char *id,
			 const struct policy_resources *res, unsigned need, struct al_error *err)
{
	char base[PATH_MAX], parent[PATH_MAX];
	int r, idx;

	r = v2_base(v, base, sizeof(base));
	if (r < 0)
		return cgroup_cannot(cg, __builtin_ctz(need), r, err,
				     "no writable cgroup (cgroup v2: none of airlock's cgroups is "
				     "delegated to uid %u); run as root or delegate a cgroup, see "
				     "airlock doctor",
				     (unsigned)v->env->euid);
	r = al_path_printf(parent, sizeof(parent), "%s/airlock", base);
	if (r >= 0)
		r = v2_enable(cg, base, &need, err);
	if (r < 0 || need == 0)
		return r;
	if (mkdir(parent, 0755) < 0 && errno != EEXIST) {
		r = -errno;
		return cgroup_cannot(cg, __builtin_ctz(need), r, err,
				     "no writable cgroup (cgroup v2 at %s): %s; run as root or "
				     "delegate a cgroup, see airlock doctor",
				     base, strerror(-r));
	}
	r = v2_enable(cg, parent, &need, err);
	if (r < 0 || need == 0)
		return r;
	idx = cgroup_mkdir(cg, parent, id);
	if (idx < 0)
		return cgroup_cannot(cg, __builtin_ctz(need), idx, err,
				     "no writable cgroup (cgroup v2 at %s): %s; run as root or "
				     "delegate a cgroup, see airlock doctor",
				     parent, strerror(-idx));
	for (int c = 0; c < _CTRL_MAX; c++)
		if (need & (1U << c)) {
			cg->dir_of[c] = idx;
			r = cgroup_limit(cg, c, cg->dirs[idx], res, err);
			if (r < 0)
				return r;
		}
	return 0;
}

/* Creates what res needs with the view of the system in v. */
static int cgroup_create(struct launcher_cgroup *cg, const struct cgroup_view *v, const char *id,
			 const struct policy_resources *res, unsigned need, struct al_error *err)
{
	int r;

	r = cgroup_remove_stale(v);
	if (r < 0)
		log_debug_errno(r, "Failed to remove stale cgroups: %m");
	if (v->env->version == LAUNCHER_CGROUP_V2)
		return cgroup_new_v2(cg, v, id, res, need, err);
	return cgroup_new_v1(cg, v, id, res, need, err);
}

int launcher_cgroup_new_env(const struct launcher_cgroup_env *env, const char *id,
			    const struct policy_resources *res, struct launcher_cgroup **ret,
			    struct al_error *err)
{
	_cleanup_(launcher_cgroup_freep) struct launcher_cgroup *cg = NULL;
	unsigned need = cgroup_needed(res);
	struct cgroup_view v;
	int r;

	if (cgroup_id_pid(id) <= 0)
		return al_error_set(err, -EINVAL, "cgroup: invalid sandbox id \"%s\"", id);
	cg = calloc(1, sizeof(*cg));
	if (!cg)
		return -ENOMEM;
	cg->version = env->version;
	cg->oom_fd = -EBADF;
	for (int c = 0; c < _CTRL_MAX; c++)
		cg->dir_of[c] = -1;
	if (need == 0)
		r = 0; /* nothing to enforce: no cgroup */
	else if (env->version == LAUNCHER_CGROUP_NONE)
		r = cgroup_cannot(cg, __builtin_ctz(need), -EOPNOTSUPP, err,
				  "no cgroup hierarchy is mounted; see airlock doctor");
	else {
		r = cgroup_view_load(env, &v);
		if (r < 0)
			return al_error_set_errno(err, r, "%s: cannot be enforced: cannot read %s",
						  ctrl_field[__builtin_ctz(need)],
						  env->self_cgroup);
		r = cgroup_create(cg, &v, id, res, need, err);
		cgroup_view_done(&v);
	}
	if (r < 0)
		return r;
	*ret = TAKE_PTR(cg);
	return 0;
}

static void cgroup_watch(struct launcher_cgroup *cg);

int launcher_cgroup_new(const char *id, const struct policy_resources *res,
			struct launcher_cgroup **ret, struct al_error *err)
{
	struct launcher_cgroup_env env = cgroup_env_default();
	int r;

	r = launcher_cgroup_new_env(&env, id, res, ret, err);
	if (r >= 0 && (*ret)->n_dirs > 0)
		cgroup_watch(*ret);
	return r;
}

const char *launcher_cgroup_warning(const struct launcher_cgroup *cg)
{
	return cg && cg->warning[0] ? cg->warning : NULL;
}

/* ---- use ---- */

int launcher_cgroup_attach(struct launcher_cgroup *cg, pid_t pid)
{
	int r;

	for (size_t i = 0; cg && i < cg->n_dirs; i++) {
		r = cg_write(cg->dirs[i], "cgroup.procs", "%d", (int)pid);
		if (r < 0)
			return log_debug_errno(r, "Failed to move %d into %s: %m", (int)pid,
					       cg->dirs[i]);
	}
	return 0;
}

const char *launcher_cgroup_memory_dir(const struct launcher_cgroup *cg)
{
	return cg && cg->dir_of[CTRL_MEMORY] >= 0 ? cg->dirs[cg->dir_of[CTRL_MEMORY]] : NULL;
}

/* A number file of dir: the v2 name, else the v1 one. */
static uint64_t cg_read_number(const char *dir, const char *v2, const char *v1)
{
	_cleanup_free_ char *text = NULL;
	unsigned long long v;
	char *end;

	if (cg_read(dir, v2, &text) < 0 && cg_read(dir, v1, &text) < 0)
		return UINT64_MAX;
	errno = 0;
	v = strtoull(text, &end, 10);
	return errno || end == text ? UINT64_MAX : (uint64_t)v;
}

void launcher_cgroup_memory_usage(const char *dir, uint64_t *ret_now, uint64_t *ret_peak)
{
	*ret_now = cg_read_number(dir, "memory.current", "memory.usage_in_bytes");
	*ret_peak = cg_read_number(dir, "memory.peak", "memory.max_usage_in_bytes");
}

/* The OOM kill count of cg's memory cgroup (memory.events, or v1's memory.oom_control), its file
 * opened once and read again from its start each time: -ENOENT when it has none. */
static int oom_count(struct launcher_cgroup *cg, const char *dir, uint64_t *ret)
{
	char path[PATH_MAX], text[512];
	ssize_t n;
	int r;

	if (cg->oom_fd < 0) {
		r = al_path_printf(path, sizeof(path), "%s/%s", dir,
				   cg->version == LAUNCHER_CGROUP_V2 ? "memory.events"
								     : "memory.oom_control");
		if (r < 0)
			return r;
		cg->oom_fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
		if (cg->oom_fd < 0)
			return -errno;
	}
	/* Both are a few short lines, oom_kill among the first. */
	n = pread(cg->oom_fd, text, sizeof(text) - 1, 0);
	if (n < 0)
		return -errno;
	text[n] = '\0';
	return keyed_value(text, "oom_kill", ret);
}

bool launcher_cgroup_oom_killed(struct launcher_cgroup *cg)
{
	_cleanup_free_ char *text = NULL;
	const char *dir;
	uint64_t n = 0;

	if (!cg || cg->dir_of[CTRL_MEMORY] < 0)
		return false;
	dir = cg->dirs[cg->dir_of[CTRL_MEMORY]];
	if (cg->version == LAUNCHER_CGROUP_V2)
		return oom_count(cg, dir, &n) >= 0 && n > 0;
	if (oom_count(cg, dir, &n) >= 0) /* Linux 4.13 and later */
		return n > 0;
	/* older kernels: the limit was hit, which is as close as they let us see */
	text = mfree(text);
	return cg_read(dir, "memory.failcnt", &text) >= 0 && strtoull(text, NULL, 10) > 0;
}

/* Reads the pids listed in dir/cgroup.procs. Returns how many (at most max), or -errno. */
static int cgroup_pids(const char *dir, pid_t *pids, size_t max)
{
	_cleanup_free_ char *text = NULL;
	size_t n = 0;
	int r;

	r = cg_read(dir, "cgroup.procs", &text);
	if (r < 0)
		return r;
	for (char *p = text, *end; *p && n < max; p = end) {
		long v = strtol(p, &end, 10);

		if (end == p)
			break;
		if (v > 0 && v <= INT_MAX)
			pids[n++] = (pid_t)v;
		end += strspn(end, " \n");
	}
	return (int)n;
}

/* SIGKILLs what dir/cgroup.procs lists. A pid read from the file may have exited and been
 * reused by the time we signal it, so each is pinned with a pidfd first and signalled only if
 * the file still lists it afterwards: the pid then still names the process the pidfd holds, or
 * that process is dead and the signal goes nowhere. Returns how many were still alive. */
static int cgroup_kill_listed(const char *dir, pid_t *pids, pid_t *again, int *pidfds, size_t max)
{
	int n, m, alive = 0;

	n = cgroup_pids(dir, pids, max);
	if (n <= 0)
		return n;
	for (int i = 0; i < n; i++)
		pidfds[i] = (int)syscall(SYS_pidfd_open, pids[i], 0);
	m = cgroup_pids(dir, again, max);
	for (int i = 0; i < n; i++) {
		bool listed = false;

		for (int j = 0; j < m && !listed; j++)
			listed = again[j] == pids[i];
		if (pidfds[i] >= 0 && listed &&
		    syscall(SYS_pidfd_send_signal, pidfds[i], SIGKILL, NULL, 0) == 0)
			alive++;
		else if (pidfds[i] < 0 && errno == ENOSYS && listed && kill(pids[i], SIGKILL) == 0)
			alive++; /* no pidfds before Linux 5.3 */
		pidfds[i] = al_close(pidfds[i]);
	}
	return alive;
}

/* Kills everything in dir until nothing listed there is alive, for a bounded time. */
static void cgroup_kill(const struct launcher_cgroup *cg, const char *dir)
{
	_cleanup_free_ pid_t *pids = NULL;
	_cleanup_free_ int *pidfds = NULL;
	bool have_kill = cg->version == LAUNCHER_CGROUP_V2 && cg_exists(dir, "cgroup.kill");
	uint64_t delay = 100;
	int r;

	if (cgroup_is_empty(dir))
		return; /* the usual case: the pid namespace died with its init */
	pids = calloc(2 * PIDS_PER_ROUND, sizeof(*pids));
	pidfds = calloc(PIDS_PER_ROUND, sizeof(*pidfds));
	if (!pids || !pidfds)
		return;
	for (int round = 0; round < KILL_ROUNDS; round++) {
		/* cgroup.kill (Linux 5.14) kills every task, even those forking meanwhile */
		if (have_kill && cg_write(dir, "cgroup.kill", "1") < 0)
			have_kill = false;
		if (have_kill) {
			r = 0;
			for (int i = 0, n = cgroup_pids(dir, pids, PIDS_PER_ROUND); i < n; i++)
				r += kill(pids[i], 0) == 0;
		} else
			r = cgroup_kill_listed(dir, pids, pids + PIDS_PER_ROUND, pidfds,
					       PIDS_PER_ROUND);
		if (r <= 0)
			return;
		sleep_usec(delay);
		delay = MIN(delay * 2, (uint64_t)10000);
	}
	log_debug("Processes are left in %s", dir);
}

/* Removes dir, retrying while the kernel still holds it (exiting tasks). */
static void cgroup_rmdir(const char *dir)
{
	uint64_t delay = 100;

	for (int round = 0; round < RMDIR_ROUNDS; round++) {
		if (rmdir(dir) == 0 || errno == ENOENT)
			return;
		if (errno != EBUSY)
			break;
		sleep_usec(delay);
		delay = MIN(delay * 2, (uint64_t)10000);
	}
	log_debug("Failed to remove cgroup %s: %m", dir);
}

/* Forks the watcher of cg's dirs (a child of ours, outside them): once airlock ended, it does the
 * teardown airlock did not do. Each step of it is bounded (cgroup_kill(), cgroup_rmdir()), so it
 * ends soon after airlock. Without it (no pidfds, no fork) only the next run or session command
 * removes them after a SIGKILL: not an error. */
static void cgroup_watch(struct launcher_cgroup *cg)
{
	pid_t pid;
	int r = al_watcher_fork("airlock-cgroups", NULL, 0, &pid);

	if (r < 0) {
		log_debug_errno(r, "No watcher for the sandbox's cgroups: %m");
		return;
	}
	if (r == 0) {
		(void)launcher_cgroup_free(cg);
		_exit(EXIT_SUCCESS);
	}
	cg->watcher = pid;
}

struct launcher_cgroup *launcher_cgroup_free(struct launcher_cgroup *cg)
{
	if (!cg)
		return NULL;
	/* The watcher is not needed any more: it dies while we tear down, and is reaped after (our
	 * child: its pid is its own until then). A SIGKILL from now on leaves the dirs to the next
	 * run or session command. */
	if (cg->watcher > 0)
		(void)kill(cg->watcher, SIGKILL);
	cg->oom_fd = al_close(cg->oom_fd);
	/* every process is in each of the dirs: killing through one is enough */
	if (cg->n_dirs > 0)
		cgroup_kill(cg, cg->dirs[0]);
	for (size_t i = cg->n_dirs; i > 0; i--) {
		char *slash = strrchr(cg->dirs[i - 1], '/');

		cgroup_rmdir(cg->dirs[i - 1]);
		/* The shared "airlock" parent goes with the last run in it; while another run's
		 * cgroup is there, rmdir() fails and it stays. */
		if (slash) {
			*slash = '\0';
			(void)rmdir(cg->dirs[i - 1]);
		}
		free(cg->dirs[i - 1]);
	}
	if (cg->watcher > 0)
		(void)waitpid(cg->watcher, NULL, 0);
	free(cg);
	return NULL;
}
