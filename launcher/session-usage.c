#define LOG_MODULE "launcher"

/* What a session uses, for `session ls`: read from outside, as the session's own user, from what
 * its supervisor recorded (its pid 1, its memory cgroup, its workspace folder). Nothing here asks
 * the supervisor or the sandbox anything. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fd-util.h"
#include "launcher/launcher-internal.h"

#define TREE_PIDS_MAX 8192 /* processes counted; a session's pids limit is far below */
#define WALK_DEPTH_MAX 256

/* Clock ticks of pid's own time and of the children it reaped (utime, stime, cutime and cstime
 * of /proc/PID/stat); its parent in *ret_ppid. pid 1 reaps every process of the sandbox whose
 * parent ended before it, so the ticks of the live processes add up to all the session ran. */
static int proc_ticks(pid_t pid, uint64_t *ret, pid_t *ret_ppid)
{
	_cleanup_free_ char *text = NULL;
	unsigned long long t[4];
	char path[64];
	long ppid;
	char *p;
	int r;

	(void)snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	r = al_read_file_at(AT_FDCWD, path, 4096, &text, NULL);
	if (r < 0)
		return r;
	/* The name may hold anything, ')' too: the fields start after the last one. */
	p = strrchr(text, ')');
	if (!p || sscanf(p + 1, " %*c %ld %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %llu %llu",
			 &ppid, &t[0], &t[1], &t[2], &t[3]) != 5)
		return -EBADMSG;
	*ret = t[0] + t[1] + t[2] + t[3];
	*ret_ppid = (pid_t)ppid;
	return 0;
}

/* Appends the children of every thread of pid to pids[*n..max). */
static void proc_children(pid_t pid, pid_t *pids, size_t *n, size_t max)
{
	char path[64];
	DIR *d;

	(void)snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return;
	for (struct dirent *de; (de = readdir(d));) {
		_cleanup_free_ char *text = NULL;
		char file[sizeof(path) + NAME_MAX + 16];

		if (de->d_name[0] == '.')
			continue;
		(void)snprintf(file, sizeof(file), "%s/%s/children", path, de->d_name);
		if (al_read_file_at(AT_FDCWD, file, 65536, &text, NULL) < 0)
			continue;
		for (char *p = text, *end; *n < max; p = end) {
			long v = strtol(p, &end, 10);

			if (end == p)
				break;
			if (v > 0)
				pids[(*n)++] = (pid_t)v;
		}
	}
	(void)closedir(d);
}

static uint64_t cpu_usec(const struct launcher_session_info *info)
{
	_cleanup_free_ pid_t *pids = NULL;
	long hz = sysconf(_SC_CLK_TCK);
	uint64_t ticks = 0, t;
	size_t n = 0, done = 0;
	pid_t ppid;

	/* Only the pid 1 its supervisor made: a pid reused since is someone else's. */
	if (info->init <= 0 || hz <= 0 || proc_ticks(info->init, &t, &ppid) < 0 ||
	    ppid != info->pid)
		return LAUNCHER_USAGE_UNKNOWN;
	pids = malloc(TREE_PIDS_MAX * sizeof(*pids));
	if (!pids)
		return LAUNCHER_USAGE_UNKNOWN;
	pids[n++] = info->init;
	while (done < n) {
		pid_t pid = pids[done++];

		/* A process that ended meanwhile was counted by whoever reaped it, or will be. */
		if (proc_ticks(pid, &t, &ppid) < 0)
			continue;
		ticks += t;
		proc_children(pid, pids, &n, TREE_PIDS_MAX);
	}
	return ticks * 1000000 / (uint64_t)hz;
}

struct walk {
	dev_t dev;
	uint64_t bytes;
	size_t entries;
};

/* Adds what dir's entries have allocated, as du does: without following a link, without
 * leaving the workspace's file system, a file with n links counting 1/n of its blocks each
 * time. False when the count stopped at LAUNCHER_USAGE_ENTRIES_MAX entries. */
static bool walk_dir(int dir, unsigned depth, struct walk *w)
{
	DIR *d = fdopendir(dir);
	bool complete = true;

	if (!d) {
		(void)al_close(dir);
		return true;
	}
	for (struct dirent *de; complete && (de = readdir(d));) {
		struct stat st;
		int sub;

		if (streq(de->d_name, ".") || streq(de->d_name, ".."))
			continue;
		if (++w->entries > LAUNCHER_USAGE_ENTRIES_MAX) {
			complete = false;
			break;
		}
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    st.st_dev != w->dev)
			continue;
		w->bytes += (uint64_t)st.st_blocks * 512 / (st.st_nlink > 1 ? st.st_nlink : 1);
		if (!S_ISDIR(st.st_mode) || depth >= WALK_DEPTH_MAX)
			continue;
		sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub >= 0)
			complete = walk_dir(sub, depth + 1, w);
	}
	(void)closedir(d);
	return complete;
}

void launcher_session_usage(const struct launcher_session_info *info,
			    struct launcher_session_usage *ret)
{
	struct walk w = {0};
	struct stat st;
	int root;

	*ret = (struct launcher_session_usage){
	    .cpu_usec = cpu_usec(info),
	    .memory = LAUNCHER_USAGE_UNKNOWN,
	    .memory_peak = LAUNCHER_USAGE_UNKNOWN,
	    .workspace = LAUNCHER_USAGE_UNKNOWN,
	};
	if (info->memory_cgroup[0])
		launcher_cgroup_memory_usage(info->memory_cgroup, &ret->memory, &ret->memory_peak);
	root = open(info->workspace, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (root < 0)
		return;
	if (fstat(root, &st) < 0) {
		(void)al_close(root);
		return;
	}
	w.dev = st.st_dev;
	ret->workspace_partial = !walk_dir(root, 0, &w);
	ret->workspace = w.bytes;
}
