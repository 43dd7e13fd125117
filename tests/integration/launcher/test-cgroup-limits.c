/* Cgroups against the real kernel (v1 or v2, whichever this machine has), as root: a child that
 * allocates past its memory limit is OOM-killed and reported; a pids limit stops forks; free()
 * kills what is left and removes every directory; remove_stale() removes the leftover of a dead
 * run and keeps that of a live one. Prints the cost of new + attach + free. */

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "tests/integration/launcher/kctl-lib.h"

#define MiB (UINT64_C(1024) * 1024)
#define DIRS_MAX 8

static char id[32];
static char found[DIRS_MAX][4096];
static size_t n_found;

static void new_id(void)
{
	uint32_t rnd;

	CHECK(getrandom(&rnd, sizeof(rnd), 0) == sizeof(rnd));
	(void)snprintf(id, sizeof(id), "%d-%08x", (int)getpid(), rnd);
}

static int find_id(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	if (type == FTW_D && streq(path + ftw->base, id) && n_found < DIRS_MAX)
		(void)snprintf(found[n_found++], sizeof(found[0]), "%s", path);
	return 0;
}

/* The directories named id anywhere under /sys/fs/cgroup. */
static size_t find_cgroup_dirs(void)
{
	n_found = 0;
	CHECK(nftw("/sys/fs/cgroup", find_id, 16, FTW_PHYS) == 0 || errno == ENOENT);
	return n_found;
}

/* A child that waits for its go, then runs fn. */
static pid_t spawn(int *ret_go, int (*fn)(void))
{
	int p[2];
	pid_t pid;

	CHECK(pipe2(p, O_CLOEXEC) == 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		char c;

		(void)close(p[1]);
		if (read(p[0], &c, 1) != 1)
			_exit(100);
		_exit(fn());
	}
	(void)close(p[0]);
	*ret_go = p[1];
	return pid;
}

static void go(int fd)
{
	CHECK(write(fd, "g", 1) == 1);
	(void)close(fd);
}

static int allocate_256m(void)
{
	size_t len = 256 * MiB;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return 101;
	memset(p, 0x5a, len); /* touch every page */
	return 0;
}

static void test_memory_limit_oom_kills_and_is_reported(void)
{
	struct policy_resources res = {.memory = 32 * MiB, .pids = 64};
	struct launcher_cgroup *cg = NULL;
	struct al_error err = {0};
	int fd;
	pid_t pid;

	new_id();
	if (launcher_cgroup_new(id, &res, &cg, &err) < 0) {
		fprintf(stderr, "%s\n", err.msg);
		CHECK(!"launcher_cgroup_new");
	}
	CHECK(find_cgroup_dirs() >= 1);
	pid = spawn(&fd, allocate_256m);
	CHECK_EQ(launcher_cgroup_attach(cg, pid), 0);
	CHECK(!launcher_cgroup_oom_killed(cg));
	go(fd);
	CHECK_EQ(kctl_wait(pid), 128 + SIGKILL);
	CHECK(launcher_cgroup_oom_killed(cg));
	cg = launcher_cgroup_free(cg);
	CHECK_EQ(find_cgroup_dirs(), 0);
}

static int fork_twenty(void)
{
	int forked = 0;

	for (int i = 0; i < 20; i++) {
		pid_t pid = fork();

		if (pid == 0) {
			for (;;)
				pause();
		}
		if (pid < 0)
			return errno == EAGAIN && forked == 7 ? 0 : 102;
		forked++;
	}
	return 103;
}

static void test_pids_limit_stops_forks_and_free_kills_the_rest(void)
{
	struct policy_resources res = {.pids = 8};
	struct launcher_cgroup *cg = NULL;
	struct al_error err = {0};
	struct pollfd pidfds[16];
	pid_t pid, pids[16];
	int fd, n;

	new_id();
	CHECK(launcher_cgroup_new(id, &res, &cg, &err) == 0);
	pid = spawn(&fd, fork_twenty);
	CHECK_EQ(launcher_cgroup_attach(cg, pid), 0);
	go(fd);
	/* the child itself and 7 of its forks fit in 8 */
	CHECK_EQ(kctl_wait(pid), 0);
	/* its 7 children live on in the cgroup (reparented): free() must kill them */
	CHECK_EQ(find_cgroup_dirs(), 1);
	{
		char path[4200];
		FILE *f;

		(void)snprintf(path, sizeof(path), "%s/cgroup.procs", found[0]);
		f = fopen(path, "re");
		CHECK(f);
		for (n = 0; n < 16 && fscanf(f, "%d", &pids[n]) == 1; n++)
			;
		(void)fclose(f);
	}
	CHECK_EQ(n, 7);
	for (int i = 0; i < n; i++) {
		pidfds[i].fd = (int)syscall(SYS_pidfd_open, pids[i], 0);
		pidfds[i].events = POLLIN;
		CHECK(pidfds[i].fd >= 0);
	}
	cg = launcher_cgroup_free(cg);
	/* a pidfd turns readable when its process has ended */
	for (int i = 0; i < n; i++) {
		CHECK_EQ(poll(&pidfds[i], 1, 0), 1);
		(void)close(pidfds[i].fd);
	}
	CHECK_EQ(find_cgroup_dirs(), 0);
}

static void test_remove_stale_keeps_live_runs(void)
{
	struct policy_resources res = {.memory = 16 * MiB, .pids = 16};
	struct launcher_cgroup *cg = NULL;
	char parents[DIRS_MAX][4096], dead[4200], live[4200];
	size_t n;
	pid_t gone;

	new_id();
	CHECK(launcher_cgroup_new(id, &res, &cg, NULL) == 0);
	n = find_cgroup_dirs();
	CHECK(n >= 1);
	for (size_t i = 0; i < n; i++)
		(void)snprintf(parents[i], sizeof(parents[i]), "%.*s",
			       (int)(strrchr(found[i], '/') - found[i]), found[i]);
	cg = launcher_cgroup_free(cg);

	gone = fork();
	CHECK(gone >= 0);
	if (gone == 0)
		_exit(0);
	CHECK_EQ(kctl_wait(gone), 0);
	for (size_t i = 0; i < n; i++) {
		(void)snprintf(dead, sizeof(dead), "%s/%d-0000beef", parents[i], (int)gone);
		(void)snprintf(live, sizeof(live), "%s/%d-0000beef", parents[i], (int)getpid());
		/* the last run out removed the shared parent: stand in for two runs in it */
		CHECK(mkdir(parents[i], 0755) == 0 || errno == EEXIST);
		CHECK(mkdir(dead, 0755) == 0);
		CHECK(mkdir(live, 0755) == 0);
	}
	CHECK_EQ(launcher_cgroup_remove_stale(), (int)n);
	for (size_t i = 0; i < n; i++) {
		(void)snprintf(dead, sizeof(dead), "%s/%d-0000beef", parents[i], (int)gone);
		(void)snprintf(live, sizeof(live), "%s/%d-0000beef", parents[i], (int)getpid());
		CHECK(access(dead, F_OK) < 0);
		CHECK(access(live, F_OK) == 0);
		CHECK(rmdir(live) == 0);
		CHECK(rmdir(parents[i]) == 0);
	}
}

static uint64_t now_usec(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static int wait_for_go(void)
{
	return 0;
}

static void measure_new_attach_free(void)
{
	struct policy_resources res = {.memory = 256 * MiB, .pids = 256, .cpu_millis = 1000};
	uint64_t t[3] = {0}, t0;
	const int rounds = 20;

	for (int i = 0; i < rounds; i++) {
		struct launcher_cgroup *cg = NULL;
		int fd;
		pid_t pid;

		new_id();
		pid = spawn(&fd, wait_for_go);
		t0 = now_usec();
		CHECK(launcher_cgroup_new(id, &res, &cg, NULL) == 0);
		t[0] += now_usec() - t0;
		t0 = now_usec();
		CHECK(launcher_cgroup_attach(cg, pid) == 0);
		t[1] += now_usec() - t0;
		go(fd);
		CHECK_EQ(kctl_wait(pid), 0);
		t0 = now_usec();
		cg = launcher_cgroup_free(cg);
		t[2] += now_usec() - t0;
	}
	fprintf(stderr, "cgroup (memory+pids+cpu): new %.0f us, attach %.0f us, free %.0f us\n",
		(double)t[0] / rounds, (double)t[1] / rounds, (double)t[2] / rounds);
	CHECK_EQ(find_cgroup_dirs(), 0);
}

int main(void)
{
	kctl_require_root();
	if (launcher_cgroup_detect() == LAUNCHER_CGROUP_NONE)
		kctl_skip("no cgroup hierarchy");
	test_memory_limit_oom_kills_and_is_reported();
	test_pids_limit_stops_forks_and_free_kills_the_rest();
	test_remove_stale_keeps_live_runs();
	measure_new_attach_free();
	fprintf(stderr, "ok\n");
	return 0;
}
