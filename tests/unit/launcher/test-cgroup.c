/* tests/unit/launcher/test-cgroup.c: cgroup placement, limits, OOM detection and teardown,
 * against a fake cgroup tree in a temporary directory, for v1 and v2.
 *
 * The fake kernel: mkdir() and rmdir() are wrapped (-Wl,--wrap) so that a directory created
 * under the fake mounts gets the interface files cgroupfs would give it (for v2, those of the
 * controllers its parent enables in cgroup.subtree_control), and rmdir() removes them first.
 * Files start empty, so each holds the last value written. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "launcher/launcher-internal.h"

#define ID "4242-0badcafe"
#define MiB (UINT64_C(1024) * 1024)

static char tmp[64];	 /* the test's temporary directory */
static char fs_root[96]; /* tmp/sys: the fake mounts live under it */
static char mountinfo[128], self_cgroup[128];

/* What the fake kernel gives a new cgroup. */
static struct {
	enum launcher_cgroup_version version;
	bool memsw;	    /* v1 swap accounting */
	bool blkio_weight;  /* v1: CFQ's blkio.weight instead of blkio.bfq.weight */
	bool no_io_file;    /* neither: no scheduler with weights */
	bool kill;	    /* v2 cgroup.kill */
	char kill_seen[16]; /* what cgroup.kill held when its cgroup was removed */
} fake;

/* ---- the fake kernel ---- */

int __real_mkdir(const char *path, mode_t mode);
int __wrap_mkdir(const char *path, mode_t mode);
int __real_rmdir(const char *path);
int __wrap_rmdir(const char *path);

static void put(const char *dir, const char *name, const char *content)
{
	char path[PATH_MAX];
	FILE *f;

	(void)snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "we");
	assert_non_null(f);
	assert_true(fputs(content, f) >= 0);
	assert_int_equal(fclose(f), 0);
}

/* The content of dir/name without its trailing newline; "" when absent. */
static const char *get(const char *dir, const char *name)
{
	static char buf[4096];
	char path[PATH_MAX];
	ssize_t n;
	int fd;

	buf[0] = '\0';
	(void)snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return buf;
	n = read(fd, buf, sizeof(buf) - 1);
	(void)close(fd);
	buf[n > 0 ? n : 0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return buf;
}

static bool exists(const char *path)
{
	return access(path, F_OK) == 0;
}

static const char *parent_of(const char *path)
{
	static char buf[PATH_MAX];

	(void)snprintf(buf, sizeof(buf), "%.*s", (int)(strrchr(path, '/') - path), path);
	return buf;
}

static void populate_v1(const char *path)
{
	const char *rest = path + strlen(fs_root) + 1;
	char hierarchy[64];

	(void)snprintf(hierarchy, sizeof(hierarchy), "%.*s", (int)strcspn(rest, "/"), rest);
	put(path, "cgroup.procs", "");
	put(path, "tasks", "");
	if (strstr(hierarchy, "memory")) {
		put(path, "memory.limit_in_bytes", "");
		if (fake.memsw)
			put(path, "memory.memsw.limit_in_bytes", "");
		put(path, "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n");
		put(path, "memory.failcnt", "0\n");
	}
	if (strstr(hierarchy, "pids"))
		put(path, "pids.max", "");
	if (strstr(hierarchy, "cpu")) {
		put(path, "cpu.cfs_period_us", "");
		put(path, "cpu.cfs_quota_us", "");
	}
	if (strstr(hierarchy, "blk") && !fake.no_io_file)
		put(path, fake.blkio_weight ? "blkio.weight" : "blkio.bfq.weight", "");
}

static void populate_v2(const char *path)
{
	char enabled[256], controllers[128] = "";

	(void)snprintf(enabled, sizeof(enabled), "%s",
		       get(parent_of(path), "cgroup.subtree_control"));
	for (const char *c = enabled; (c = strchr(c, '+')); c++) {
		size_t n = strcspn(c + 1, " ");

		(void)snprintf(controllers + strlen(controllers),
			       sizeof(controllers) - strlen(controllers), "%s%.*s",
			       controllers[0] ? " " : "", (int)n, c + 1);
	}
	put(path, "cgroup.procs", "");
	put(path, "cgroup.subtree_control", "");
	put(path, "cgroup.events", "populated 0\nfrozen 0\n");
	if (fake.kill)
		put(path, "cgroup.kill", "");
	if (strstr(controllers, "memory")) {
		put(path, "memory.max", "");
		put(path, "memory.swap.max", "");
		put(path, "memory.events", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n");
	}
	if (strstr(controllers, "pids"))
		put(path, "pids.max", "");
	if (strstr(controllers, "cpu"))
		put(path, "cpu.max", "");
	if (strstr(controllers, "io") && !fake.no_io_file)
		put(path, "io.weight", "");
	put(path, "cgroup.controllers", controllers);
}

int __wrap_mkdir(const char *path, mode_t mode)
{
	int r = __real_mkdir(path, mode);

	if (r == 0 && fs_root[0] && strncmp(path, fs_root, strlen(fs_root)) == 0 &&
	    path[strlen(fs_root)] == '/') {
		if (fake.version == LAUNCHER_CGROUP_V1)
			populate_v1(path);
		else if (fake.version == LAUNCHER_CGROUP_V2)
			populate_v2(path);
	}
	return r;
}

int __wrap_rmdir(const char *path)
{
	DIR *d;

	if (fs_root[0] && strncmp(path, fs_root, strlen(fs_root)) == 0) {
		/* cgroupfs refuses a directory with child cgroups, and removes one with its
		 * interface files */
		d = opendir(path);
		if (!d)
			return -1;
		for (struct dirent *de; (de = readdir(d));)
			if (de->d_type == DT_DIR && !streq(de->d_name, ".") &&
			    !streq(de->d_name, "..")) {
				(void)closedir(d);
				errno = ENOTEMPTY;
				return -1;
			}
		rewinddir(d);
		/* what teardown wrote to cgroup.kill (the shared parent, removed after, has none)
		 */
		if (get(path, "cgroup.kill")[0])
			(void)snprintf(fake.kill_seen, sizeof(fake.kill_seen), "%s",
				       get(path, "cgroup.kill"));
		for (struct dirent *de; (de = readdir(d));)
			if (de->d_type == DT_REG)
				(void)unlinkat(dirfd(d), de->d_name, 0);
		(void)closedir(d);
	}
	return __real_rmdir(path);
}

/* ---- fixtures ---- */

static void mkdirs(const char *fmt, ...) _printf_(1, 2);
static void mkdirs(const char *fmt, ...)
{
	char path[PATH_MAX];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	for (char *p = strchr(path + 1, '/');; p = strchr(p + 1, '/')) {
		if (p)
			*p = '\0';
		if (mkdir(path, 0755) < 0)
			assert_int_equal(errno, EEXIST);
		if (!p)
			break;
		*p = '/';
	}
}

static void write_text(const char *path, const char *fmt, ...) _printf_(2, 3);
static void write_text(const char *path, const char *fmt, ...)
{
	va_list ap;
	FILE *f;

	f = fopen(path, "we");
	assert_non_null(f);
	va_start(ap, fmt);
	assert_true(vfprintf(f, fmt, ap) >= 0);
	va_end(ap);
	assert_int_equal(fclose(f), 0);
}

static int setup(void **state)
{
	(void)state;
	memset(&fake, 0, sizeof(fake));
	fake.memsw = true;
	fake.kill = true;
	(void)snprintf(tmp, sizeof(tmp), "/tmp/airlock-test-cgroup.XXXXXX");
	if (!mkdtemp(tmp))
		return -1;
	(void)snprintf(mountinfo, sizeof(mountinfo), "%s/mountinfo", tmp);
	(void)snprintf(self_cgroup, sizeof(self_cgroup), "%s/cgroup", tmp);
	(void)snprintf(fs_root, sizeof(fs_root), "%s/sys", tmp);
	return mkdir(fs_root, 0755);
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	fs_root[0] = '\0';
	(void)snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	return system(cmd) == 0 ? 0 : -1;
}

/* A hybrid machine: v1 memory, pids, co-mounted cpu,cpuacct, blkio (at a path with a space),
 * plus systemd's named hierarchy and an empty cgroup2 mount that must be ignored. Airlock runs
 * in a different cgroup in each. */
static struct launcher_cgroup_env setup_v1(void)
{
	fake.version = LAUNCHER_CGROUP_V1;
	write_text(mountinfo,
		   "24 1 259:1 / / rw,relatime shared:1 - ext4 /dev/root rw\n"
		   "29 24 0:25 / %1$s ro,nosuid shared:8 - tmpfs tmpfs ro,mode=755\n"
		   "30 29 0:26 / %1$s/unified rw,nosuid shared:9 - cgroup2 cgroup2 rw\n"
		   "31 29 0:27 / %1$s/systemd rw shared:10 - cgroup cgroup rw,xattr,name=systemd\n"
		   "32 29 0:28 / %1$s/memory rw,nosuid shared:11 - cgroup cgroup rw,memory\n"
		   "33 29 0:29 / %1$s/pids rw,nosuid shared:12 - cgroup cgroup rw,pids\n"
		   "34 29 0:30 / %1$s/cpu,cpuacct rw shared:13 - cgroup cgroup rw,cpu,cpuacct\n"
		   "35 29 0:31 / %1$s/blk\\040io rw shared:14 - cgroup cgroup rw,blkio\n",
		   fs_root);
	write_text(self_cgroup, "12:memory:/user.slice/session-1.scope\n"
				"11:pids:/user.slice\n"
				"10:cpu,cpuacct:/\n"
				"9:blkio:/user.slice\n"
				"1:name=systemd:/user.slice/session-1.scope\n"
				"0::/user.slice/session-1.scope\n");
	mkdirs("%s/memory/user.slice/session-1.scope", fs_root);
	mkdirs("%s/pids/user.slice", fs_root);
	mkdirs("%s/cpu,cpuacct", fs_root);
	mkdirs("%s/blk io/user.slice", fs_root);
	mkdirs("%s/systemd/user.slice/session-1.scope", fs_root);
	return (struct launcher_cgroup_env){
	    .version = LAUNCHER_CGROUP_V1,
	    .root = fs_root,
	    .mountinfo = mountinfo,
	    .self_cgroup = self_cgroup,
	    .euid = 0,
	};
}

static void v1_dir(char *buf, size_t size, const char *hierarchy_and_path)
{
	(void)snprintf(buf, size, "%s/%s/airlock/" ID, fs_root, hierarchy_and_path);
}

/* ---- v1 ---- */

static void test_v1_places_each_controller_under_airlocks_own_cgroup(void **state)
{
	struct launcher_cgroup_env env = setup_v1();
	struct policy_resources res = {
	    .memory = 512 * MiB, .pids = 64, .cpu_millis = 1500, .io_weight = 100};
	struct launcher_cgroup *cg = NULL;
	struct al_error err = {0};
	char mem[PATH_MAX], pids[PATH_MAX], cpu[PATH_MAX], blk[PATH_MAX], other[PATH_MAX + 16];

	(void)state;
	assert_int_equal(launcher_cgroup_new_env(&env, ID, &res, &cg, &err), 0);
	assert_non_null(cg);
	assert_null(launcher_cgroup_warning(cg));
	v1_dir(mem, sizeof(mem), "memory/user.slice/session-1.scope");
	v1_dir(pids, sizeof(pids), "pids/user.slice");
	v1_dir(cpu, sizeof(cpu), "cpu,cpuacct");
	v1_dir(blk, sizeof(blk), "blk io/user.slice");
	assert_string_equal(get(mem, "memory.limit_in_bytes"), "536870912");
	/* swap can't extend the limit */
	assert_string_equal(get(mem, "memory.memsw.limit_in_bytes"), "536870912");
	assert_string_equal(get(pids, "pids.max"), "64");
	assert_string_equal(get(cpu, "cpu.cfs_period_us"), "100000");
	assert_string_equal(get(cpu, "cpu.cfs_quota_us"), "150000");
	assert_string_equal(get(blk, "blkio.bfq.weight"), "100");

	assert_int_equal(launcher_cgroup_attach(cg, 777), 0);
	assert_string_equal(get(mem, "cgroup.procs"), "777");
	assert_string_equal(get(pids, "cgroup.procs"), "777");
	assert_string_equal(get(cpu, "cgroup.procs"), "777");
	assert_string_equal(get(blk, "cgroup.procs"), "777");

	put(mem, "cgroup.procs", ""); /* the fake kernel does not move tasks */
	(void)snprintf(other, sizeof(other), "%s/1-0000beef", parent_of(pids));
	assert_int_equal(mkdir(other, 0755), 0); /* a concurrent run's cgroup */
	cg = launcher_cgroup_free(cg);
	assert_null(cg);
	assert_false(exists(mem));
	assert_false(exists(pids));
	assert_false(exists(cpu));
	assert_false(exists(blk));
	/* the shared "airlock" directory goes with the last run in it, not before */
	assert_false(exists(parent_of(mem)));
	assert_true(exists(parent_of(pids)));
	assert_int_equal(rmdir(other), 0);
}

static void test_v1_creates_only_the_needed_controllers(void **state)
{
	struct launcher_cgroup_env env = setup_v1();
	struct policy_resources res = {.pids = 10};
	struct launcher_cgroup *cg = NULL;
	char mem[PATH_MAX], pids[PATH_MAX];

	(void)state;
	assert_int_equal(launcher_cgroup_new_env(&env, ID, &res, &cg, NULL), 0);
	v1_dir(mem, sizeof(mem), "memory/user.slice/session-1.scope");
	v1_dir(pids, sizeof(pids), "pids/user.slice");
	assert_false(exists(mem));
	assert_string_equal(get(pids, "pids.max"), "10");
	assert_false(launcher_cgroup_oom_killed(cg));
	cg = launcher_cgroup_free(cg);
	assert_false(exists(pids));
}

static void test_v1_without_swap_accounting_sets_the_memory_limit_only(void **state)
{
	struct launcher_cgroup_env env = setup_v1();
	struct policy_resources res = {.memory = 64 * MiB};
	struct launcher_cgroup *cg = NULL;
	char mem[PATH_MAX];

	(void)state;
	fake.memsw = false;
	assert_int_equal(launcher_cgroup_new_env(&env, ID, &res, &cg, NULL), 0);
	v1_dir(mem, sizeof(mem), "memory/user.slice/session-1.scope");
	assert_string_equal(get(mem, "memory.limit_in_bytes"), "67108864");
	assert_false(
	    exists(strcat(strcpy((char[PATH_MAX]){0}, mem), "/memory.memsw.limit_in_bytes")));
	cg = launcher_cgroup_free(cg);
}

static void test_v1_co_mounted_controllers_share_one_directory(void **state)
{
	struct launcher_cgroup_env env = setup_v1();
	struct policy_resources res = {.memory = 32 * MiB, .pids = 8};
	struct launcher_cgroup *cg = NULL;
	char dir[PATH_MAX];

	(void)state;
	write_text(mountinfo, "32 29 0:28 / %s/memory,pids rw - cgroup cgroup rw,memory,pids\n",
		   fs_root);
	write_text(self_cgroup, "5:memory,pids:/\n");
	mkdirs("%s/memory,pids", fs_root);
	assert_int_equal(launcher_cgroup_new_env(&env, ID, &res, &cg, NULL), 0);
	v1_dir(dir, sizeof(dir), "memory,pids");
	assert_string_equal(get(dir, "memory.limit_in_bytes"), "33554432");
	assert_string_equal(get(dir, "pids.max"), "8");
	assert_int_equal(launcher_cgroup_attach(cg, 99), 0);
	assert_string_equal(get(dir, "cgroup.procs"), "99");
	put(dir, "cgroup.procs", "");
	cg = launcher_cgroup_free(cg);
	assert_false(exists(dir));
}

static void test_v1_follows_a_mount_of_a_subtree(void **state)
{
	struct launcher_cgroup_env env = setup_v1();
	struct policy_resources res = {.pids = 8};
	struct launcher_cgroup *cg = NULL;
	char dir[PATH_MAX];

	(void)state;
	/* a container's view: the hierarchy is mounted from /docker/abc, we are in .../sub */
	write_text(mountinfo, "33 29 0:29 /docker/abc %s/pids rw - cgroup cgroup rw,pids\n",
		   fs_root);
	write_text(self_cgroup, "11:pids:/docker/abc/sub\n");
	mkdirs("%s/pids/sub", fs_root);
	assert_int_equal(launcher_cgroup_new_env(&env, ID, &res, &cg, NULL), 0);
	v1_dir(dir, sizeof(dir), "pids/sub");
	assert_string_equal(get(dir, "pids.max"), "8");
	cg = launcher_cgroup_free(cg);

	/* and refuses a cgroup outside what the mount shows */
	write_text(self_cgroup, "11:pids:/elsewhere\n");
	assert_int_equal(launcher_cgroup_new_env(&env, ID, &res, &cg, NULL), -EOPNOTSUPP);
}

static void test_v1_rescales_io_weight_for_cfq_and_bfq(void **state)
{
	static const struct {
		bool cfq;
		uint64_t weight;
		const char *expect;
	} cases[] = {
	    {false, 1, "1"}, {false, 100, "100"}, {false, 10000, "1000"}, {false, 5050, "550"},
	    {true, 1, "10"}, {true, 100, "500"},  {true, 10000, "1000"},  {true, 50, "252"},
	};
	struct launcher_cgroup_env env = setup_v1();
	char dir[PATH_MAX];

	(void)state;
	v1_dir(dir, sizeof(dir), "blk io/user.slice");
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct policy_resources res = {.io_weight = cases[i].weight};
		struct launcher_cgroup *cg = NULL;

		fake.blkio_weight = cases[i].cfq;
		assert_int_equal(launcher_cgroup_new_env(&env, ID, &res, &cg, NULL), 0);
		assert_string_equal(get(dir, cases[i].cfq ? "blkio.weight" : "blkio.bfq.weight"),
				    cases[i].expect);
		cg = launcher_cgroup_free(cg);
		assert_false(exists(dir));
	}
}

static void test_v1_io_weight_without_a_weight_file_is_a_warning(void **state)
{
	struct launcher_cgroup_env env = setup_v1();
	struct policy_resources res = {.pids = 5, .io_weight = 300};
	struct launcher_cgroup *cg = NULL;
	struct al_error err = {0};
	char dir[PATH_MAX];

	(void)state;
	fake.no_io_file = true;
	assert_int_equal(launcher_cgroup_new_env(&env, ID, &res, &cg, &err), 0);
	assert_string_equal(err.msg, "");
	assert_non_null(launcher_cgroup_warning(cg));
	assert_non_null(strstr(launcher_cgroup_warning(cg), "resources.io_weight: not enforced"));
	cg = launcher_cgroup_free(cg);
	v1_dir(dir, sizeof(dir), "blk io/user.slice");
	assert_false(exists(dir)); /* created, then removed with the rest */
}

static void test_v1_missing_memory_controller_is_an_error_naming_the_field(void **state)
{
	struct launcher_cgroup_env env = setup_v1();
	struct policy_resources res = {.memory = 64 * MiB, .pids = 10};
	struct launcher_cgroup *cg = NULL;
	struct al_error err = {0};

	(void)state;
	write_text(mountinfo, "33 29 0:29 / %s/pids rw - cgroup cgroup rw,pids\n", fs_root);
	assert_int_equal(launcher_cgroup_new_env(&env, ID, &res, &cg, &err), -EOPNOTSUPP);
	assert_null(cg);
	assert_true(startswith(err.msg, "resources.memory: cannot be enforced: "));
	assert_non_null(strstr(err.msg, "airlock doctor"));
}

static void test_v1_unwritable_hierarchy_fails_and_leaves_nothing_behind(void **state)
{
	struct launcher_cgroup_env env = setup_v1();
	struct policy_resources res = {.memory = 64 * MiB, .pids = 10};
	struct launcher_cgroup *cg = NULL;
	struct al_error err = {0};
	char path[PATH_MAX], mem[PATH_MAX];

	(void)state;
	/* memory works, then pids can't be created: "airlock" there is a file */
	(void)snprintf(path, sizeof(path), "%s/pids/user.slice/airlock", fs_root);
	write_text(path, "%s", "");
	assert_int_equal(launcher_cgroup_new_env(&env, ID, &res, &cg, &err), -ENOTDIR);
	assert_null(cg);
	assert_true(startswith(err.msg, "resources.pids: cannot be enforced: no writable pids "
					"cgroup (cgroup v1 at "));
	assert_non_null(strstr(err.msg, "run as root or delegate a cgroup, see airlock doctor"));
	v1_dir(mem, sizeof(mem), "memory/user.slice/session-1.scope");
	assert_false(exists(mem));
}

static void test_v1_oom_kill_is_read_from_oom_control_or_failcnt(void **state)
{
	struct launcher_cgroup_env env = setup_v1();
	struct policy_resources res = {.memory = 64 * MiB};
	struct launcher_cgroup *cg = NULL;
	char mem[PATH_MAX];

	(void)state;
	assert_int_equal(launcher_cgroup_new_env(&env, ID, &res, &cg, NULL), 0);
	v1_dir(mem, sizeof(mem), "memory/user.slice/session-1.scope");
	assert_false(launcher_cgroup_oom_killed(cg));
	put(mem, "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n");
	assert_true(launcher_cgroup_oom_killed(cg));
	/* kernels before 4.13 have no oom_kill counter: the limit was hit */
	put(mem, "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\n");
	assert_false(launcher_cgroup_oom_killed(cg));
	put(mem, "memory.failcnt", "3\n");
	assert_true(launcher_cgroup_oom_killed(cg));
	cg = launcher_cgroup_free(cg);
}

static volatile sig_atomic_t reaped;

static void reap(int sig)
{
	int saved = errno;

	(void)sig;
	while (waitpid(-1, NULL, WNOHANG) > 0)
		reaped++;
	errno = saved;
}

static void test_v1_free_kills_what_is_left(void **state)
{
	struct launcher_cgroup_env env = setup_v1();
	struct policy_resources res = {.pids = 10};
	struct sigaction sa = {.sa_handler = reap}, old;
	struct launcher_cgroup *cg = NULL;
	struct pollfd pfd = {.events = POLLIN};
	char dir[PATH_MAX];
	pid_t pid;

	(void)state;
	assert_int_equal(sigaction(SIGCHLD, &sa, &old), 0);
	assert_int_equal(launcher_cgroup_new_env(&env, ID, &res, &cg, NULL), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		for (;;)
			pause();
	}
	pfd.fd = (int)syscall(SYS_pidfd_open, pid, 0);
	assert_true(pfd.fd >= 0);
	assert_int_equal(launcher_cgroup_attach(cg, pid), 0);
	cg = launcher_cgroup_free(cg);
	/* the child was killed (a pidfd turns readable when its process ends) */
	assert_int_equal(poll(&pfd, 1, 5000), 1);
	(void)close(pfd.fd);
	v1_dir(dir, sizeof(dir), "pids/user.slice");
	assert_false(exists(dir));
	assert_int_equal(sigaction(SIGCHLD, &old, NULL), 0);
	reap(0);
}

static void test_no_limits_creates_nothing(void **state)
{
	struct launcher_cgroup_env env = setup_v1();
	struct policy_resources res = {.timeout_usec = 1000000, .disk = 1};
	struct launcher_cgroup *cg = NULL;
	char path[PATH_MAX];

	(void)state;
	assert_int_equal(launcher_cgroup_new_env(&env, ID, &res, &cg, NULL), 0);
	assert_non_null(cg);
	assert_int_equal(launcher_cgroup_attach(cg, 1234), 0);
	assert_false(launcher_cgroup_oom_killed(cg));
	cg = launcher_cgroup_free(cg);
	(void)snprintf(path, sizeof(path), "%s/pids/user.slice/airlock", fs_root);
	assert_false(exists(path));
	env.version = LAUNCHER_CGROUP_NONE;
	assert_int_equal(launcher_cgroup_new_env(&env, ID, &res, &cg, NULL), 0);
	cg = launcher_cgroup_free(cg);
}

static void test_no_hierarchy_refuses_memory_but_only_warns_for_io(void **state)
{
	struct launcher_cgroup_env env = setup_v1();
	struct policy_resources io = {.io_weight = 50}, mem = {.memory = MiB};
	struct launcher_cgroup *cg = NULL;
	struct al_error err = {0};

	(void)state;
	env.version = LAUNCHER_CGROUP_NONE;
	assert_int_equal(launcher_cgroup_new_env(&env, ID, &io, &cg, &err), 0);
	assert_non_null(strstr(launcher_cgroup_warning(cg), "resources.io_weight"));
	cg = launcher_cgroup_free(cg);
	assert_int_equal(launcher_cgroup_new_env(&env, ID, &mem, &cg, &err), -EOPNOTSUPP);
	assert_true(startswith(err.msg, "resources.memory: cannot be enforced"));
}

static void test_ids_other_than_pid_dash_8_hex_are_refused(void **state)
{
	static const char *const bad[] = {
	    "../x",
	    "4242",
	    "4242-",
	    "4242-0badcaf",
	    "4242-0badcafe0",
	    "4242-0BADCAFE",
	    "0-0badcafe",
	    "04242-0badcafe",
	    "-0badcafe",
	    "4242-0badcafe/..",
	    "",
	};
	struct launcher_cgroup_env env = setup_v1();
	struct policy_resources res = {.pids = 10};
	struct launcher_cgroup *cg = NULL;

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(bad); i++)
		assert_int_equal(launcher_cgroup_new_env(&env, bad[i], &res, &cg, NULL), -EINVAL);
	assert_null(cg);
}

static pid_t dead_pid(void)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0)
		_exit(0);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	return pid;
}

static void test_remove_stale_removes_only_empty_cgroups_of_dead_runs(void **state)
{
	struct launcher_cgroup_env env = setup_v1();
	char parent[1024], dead[PATH_MAX], live[PATH_MAX], busy[PATH_MAX], other[PATH_MAX];
	pid_t gone = dead_pid();

	(void)state;
	(void)snprintf(parent, sizeof(parent), "%s/pids/user.slice/airlock", fs_root);
	(void)snprintf(dead, sizeof(dead), "%s/%d-0000abcd", parent, (int)gone);
	(void)snprintf(live, sizeof(live), "%s/%d-0000abcd", parent, (int)getpid());
	(void)snprintf(busy, sizeof(busy), "%s/%d-1234abcd", parent, (int)gone);
	(void)snprintf(other, sizeof(other), "%s/%d-not-ours", parent, (int)gone);
	mkdirs("%s", dead);
	mkdirs("%s", live);
	mkdirs("%s", busy);
	mkdirs("%s", other);
	put(busy, "cgroup.procs", "31337\n"); /* a dead airlock, but its sandbox lives on */

	assert_int_equal(launcher_cgroup_remove_stale_env(&env), 1);
	assert_false(exists(dead));
	assert_true(exists(live));
	assert_true(exists(busy));
	assert_true(exists(other));
}

/* A killed airlock stays a zombie until its (adoptive) parent reaps it, which init may do late:
 * its cgroups are stale all the same. */
static void test_remove_stale_counts_a_zombie_airlock_as_ended(void **state)
{
	struct launcher_cgroup_env env = setup_v1();
	char dir[PATH_MAX];
	siginfo_t si = {0};
	pid_t zombie = fork();

	(void)state;
	assert_true(zombie >= 0);
	if (zombie == 0)
		_exit(0);
	/* exited, not reaped */
	assert_int_equal(waitid(P_PID, (id_t)zombie, &si, WEXITED | WNOWAIT), 0);
	(void)snprintf(dir, sizeof(dir), "%s/pids/user.slice/airlock/%d-0000abcd", fs_root,
		       (int)zombie);
	mkdirs("%s", dir);

	assert_int_equal(launcher_cgroup_remove_stale_env(&env), 1);
	assert_false(exists(dir));
	assert_int_equal(waitpid(zombie, NULL, 0), zombie);
}

/* ---- v2 ---- */

static struct launcher_cgroup_env setup_v2(const char *controllers)
{
	char root[PATH_MAX];

	fake.version = LAUNCHER_CGROUP_V2;
	(void)snprintf(root, sizeof(root), "%s/unified", fs_root);
	assert_int_equal(mkdir(root, 0755), 0); /* populated as a child of fs_root: redo it */
	put(root, "cgroup.controllers", controllers);
	put(root, "cgroup.subtree_control", "");
	put(root, "cgroup.procs", "1\n");
	write_text(mountinfo, "30 29 0:26 / %s rw,nosuid - cgroup2 cgroup2 rw\n", root);
	write_text(self_cgroup,
		   "0::/user.slice/user-1000.slice/user@1000.service/app.slice/term.scope\n");
	mkdirs("%s/user.slice/user-1000.slice/user@1000.service/app.slice/term.scope", root);
	return (struct launcher_cgroup_env){
	    .version = LAUNCHER_CGROUP_V2,
	    .root = strdup(root),
	    .mountinfo = mountinfo,
	    .self_cgroup = self_cgroup,
	    .euid = 0,
	};
}

static void test_v2_as_root_places_under_the_root_and_enables_controllers(void **state)
{
	struct launcher_cgroup_env env = setup_v2("cpuset cpu io memory hugetlb pids rdma misc");
	struct policy_resources res = {
	    .memory = 256 * MiB, .pids = 100, .cpu_millis = 500, .io_weight = 200};
	struct launcher_cgroup *cg = NULL;
	char parent[1024], dir[PATH_MAX];

	(void)state;
	assert_int_equal(launcher_cgroup_new_env(&env, ID, &res, &cg, NULL), 0);
	(void)snprintf(parent, sizeof(parent), "%s/airlock", env.root);
	(void)snprintf(dir, sizeof(dir), "%s/" ID, parent);
	assert_string_equal(get(env.root, "cgroup.subtree_control"), "+memory +pids +cpu +io");
	assert_string_equal(get(parent, "cgroup.subtree_control"), "+memory +pids +cpu +io");
	assert_string_equal(get(dir, "memory.max"), "268435456");
	assert_string_equal(get(dir, "memory.swap.max"), "0");
	assert_string_equal(get(dir, "pids.max"), "100");
	assert_string_equal(get(dir, "cpu.max"), "50000 100000");
	assert_string_equal(get(dir, "io.weight"), "default 200");
	assert_null(launcher_cgroup_warning(cg));
	assert_int_equal(launcher_cgroup_attach(cg, 4321), 0);
	assert_string_equal(get(dir, "cgroup.procs"), "4321");

	assert_false(launcher_cgroup_oom_killed(cg));
	put(dir, "memory.events", "low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\n");
	assert_true(launcher_cgroup_oom_killed(cg));

	/* teardown goes through cgroup.kill when the kernel has it */
	{
		char procs[32];

		(void)snprintf(procs, sizeof(procs), "%d\n", (int)dead_pid());
		put(dir, "cgroup.procs", procs);
	}
	cg = launcher_cgroup_free(cg);
	assert_string_equal(fake.kill_seen, "1");
	assert_false(exists(dir));
	assert_false(exists(parent)); /* the last run out removes the shared directory */
	free((char *)env.root);
}

static void test_v2_missing_controller_is_an_error_but_missing_io_a_warning(void **state)
{
	struct launcher_cgroup_env env = setup_v2("memory pids");
	struct policy_resources ok = {.memory = MiB, .io_weight = 100}, bad = {.cpu_millis = 100};
	struct launcher_cgroup *cg = NULL;
	struct al_error err = {0};
	char dir[PATH_MAX];

	(void)state;
	assert_int_equal(launcher_cgroup_new_env(&env, ID, &ok, &cg, &err), 0);
	assert_non_null(strstr(launcher_cgroup_warning(cg), "resources.io_weight: not enforced"));
	(void)snprintf(dir, sizeof(dir), "%s/airlock/" ID, env.root);
	assert_string_equal(get(dir, "memory.max"), "1048576");
	assert_string_equal(get(env.root, "cgroup.subtree_control"), "+memory");
	cg = launcher_cgroup_free(cg);
	assert_false(exists(dir));

	assert_int_equal(launcher_cgroup_new_env(&env, ID, &bad, &cg, &err), -EOPNOTSUPP);
	assert_true(startswith(err.msg, "resources.cpu: cannot be enforced: the cpu controller is "
					"not available"));
	assert_false(exists(dir));
	free((char *)env.root);
}

static void chown_cgroup(const char *root, const char *path, uid_t uid)
{
	static const char *const files[] = {"", "/cgroup.procs", "/cgroup.subtree_control"};
	char p[PATH_MAX];

	for (size_t i = 0; i < ELEMENTSOF(files); i++) {
		(void)snprintf(p, sizeof(p), "%s%s%s", root, path, files[i]);
		assert_int_equal(chown(p, uid, (gid_t)-1), 0);
	}
}

static void test_v2_unprivileged_uses_the_nearest_delegated_ancestor(void **state)
{
	struct launcher_cgroup_env env;
	struct policy_resources res = {.memory = 8 * MiB, .pids = 20};
	struct launcher_cgroup *cg = NULL;
	struct al_error err = {0};
	char dir[PATH_MAX];
	const char *service = "/user.slice/user-1000.slice/user@1000.service";

	(void)state;
	if (geteuid() != 0)
		skip(); /* the fake delegation needs files owned by another uid */
	env = setup_v2("cpu io memory pids");
	env.euid = 1000;

	/* nothing delegated */
	assert_int_equal(launcher_cgroup_new_env(&env, ID, &res, &cg, &err), -EACCES);
	assert_true(startswith(err.msg, "resources.memory: cannot be enforced: no writable cgroup "
					"(cgroup v2"));

	/* systemd's user@1000.service and below; airlock's own scope is never the base */
	chown_cgroup(env.root, service, 1000);
	chown_cgroup(env.root, "/user.slice/user-1000.slice/user@1000.service/app.slice", 1000);
	chown_cgroup(env.root, "/user.slice/user-1000.slice/user@1000.service/app.slice/term.scope",
		     1000);
	{
		char p[PATH_MAX];

		(void)snprintf(p, sizeof(p), "%s%s", env.root, service);
		put(p, "cgroup.subtree_control", "+memory +pids");
		(void)snprintf(p, sizeof(p), "%s%s/app.slice", env.root, service);
		put(p, "cgroup.controllers", "memory pids");
	}
	assert_int_equal(launcher_cgroup_new_env(&env, ID, &res, &cg, &err), 0);
	(void)snprintf(dir, sizeof(dir), "%s%s/app.slice/airlock/" ID, env.root, service);
	assert_string_equal(get(dir, "memory.max"), "8388608");
	assert_string_equal(get(dir, "pids.max"), "20");
	assert_string_equal(get(parent_of(dir), "cgroup.subtree_control"), "+memory +pids");
	cg = launcher_cgroup_free(cg);
	assert_false(exists(dir));

	/* app.slice not ours: the next one up */
	chown_cgroup(env.root, "/user.slice/user-1000.slice/user@1000.service/app.slice", 0);
	{
		char p[PATH_MAX];

		(void)snprintf(p, sizeof(p), "%s%s", env.root, service);
		put(p, "cgroup.controllers", "memory pids");
	}
	assert_int_equal(launcher_cgroup_new_env(&env, ID, &res, &cg, &err), 0);
	(void)snprintf(dir, sizeof(dir), "%s%s/airlock/" ID, env.root, service);
	assert_string_equal(get(dir, "pids.max"), "20");
	cg = launcher_cgroup_free(cg);
	assert_false(exists(dir));
	free((char *)env.root);
}

static void test_detect_finds_v1_controllers_or_nothing(void **state)
{
	(void)state;
	(void)setup_v1();
	/* fs_root is no cgroup2 mount, but the v1 controllers are mounted */
	assert_int_equal(launcher_cgroup_detect_at(fs_root, mountinfo), LAUNCHER_CGROUP_V1);
	/* only systemd's named hierarchy and a cgroup2 elsewhere: nothing usable */
	write_text(mountinfo,
		   "30 29 0:26 / %1$s/unified rw - cgroup2 cgroup2 rw\n"
		   "31 29 0:27 / %1$s/systemd rw - cgroup cgroup rw,xattr,name=systemd\n",
		   fs_root);
	assert_int_equal(launcher_cgroup_detect_at(fs_root, mountinfo), LAUNCHER_CGROUP_NONE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(
		test_v1_places_each_controller_under_airlocks_own_cgroup, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_v1_creates_only_the_needed_controllers, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(
		test_v1_without_swap_accounting_sets_the_memory_limit_only, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_v1_co_mounted_controllers_share_one_directory,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_v1_follows_a_mount_of_a_subtree, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_v1_rescales_io_weight_for_cfq_and_bfq, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_v1_io_weight_without_a_weight_file_is_a_warning,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(
		test_v1_missing_memory_controller_is_an_error_naming_the_field, setup, teardown),
	    cmocka_unit_test_setup_teardown(
		test_v1_unwritable_hierarchy_fails_and_leaves_nothing_behind, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_v1_oom_kill_is_read_from_oom_control_or_failcnt,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_v1_free_kills_what_is_left, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_no_limits_creates_nothing, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_no_hierarchy_refuses_memory_but_only_warns_for_io,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_ids_other_than_pid_dash_8_hex_are_refused, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(
		test_remove_stale_removes_only_empty_cgroups_of_dead_runs, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_remove_stale_counts_a_zombie_airlock_as_ended,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(
		test_v2_as_root_places_under_the_root_and_enables_controllers, setup, teardown),
	    cmocka_unit_test_setup_teardown(
		test_v2_missing_controller_is_an_error_but_missing_io_a_warning, setup, teardown),
	    cmocka_unit_test_setup_teardown(
		test_v2_unprivileged_uses_the_nearest_delegated_ancestor, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_detect_finds_v1_controllers_or_nothing, setup,
					    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
