#define LOG_MODULE "launcher"

/* The pid 1 of a persistent session. Like a run's init it reaps, and it ends the sandbox when
 * airlock goes; instead of one command it runs the commands airlock sends (LAUNCHER_SYNC_EXEC),
 * each as a process group of its own with the caller's stdio, and reports each one's end with its
 * id. Processes a command leaves behind stay: the session shares them between commands. It also
 * takes and restores checkpoints of the workspace. */

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/fd-util.h"
#include "common/path-util.h"
#include "fusefs/fusefs.h"
#include "launcher/launcher-internal.h"

#define PAYLOAD_MAX (4 * 1024 * 1024)
#define FREEZE_WAIT_MSEC 2000
#define EMPTY_STEPS_MAX 10000000 /* entries a restore's emptying looks at, at most */

struct exec_slot {
	pid_t pid; /* 0: free */
	uint32_t id;
	bool in_prelude;
	char *text; /* the request, which the vectors below point into */
	char **argv, **envp, **prelude;
	const char *result_path; /* or NULL */
	const char *dir;	 /* the command's own folder, removed at its end, or NULL */
	int stdio[3];		 /* kept until the command proper has started */
	bool terminal;		 /* the command proper gets one, as tty says */
	struct launcher_tty_spec tty;
};

static struct exec_slot slots[LAUNCHER_SESSION_EXECS_MAX];

/* Commands that ended lately, by id: a signal for one may cross its end (airlock kills the
 * command itself, then its group through here), and what it left in its group must still go. */
static struct {
	uint32_t id;
	pid_t pgid;
} ended[LAUNCHER_SESSION_EXECS_MAX];
static size_t ended_next;

/* The request (see launcher_init_session_main()), read in place. */
struct reader {
	char *p, *end;
};

static char *next_string(struct reader *rd)
{
	char *s = rd->p, *nul;

	if (rd->p >= rd->end || !(nul = memchr(rd->p, '\0', (size_t)(rd->end - rd->p))))
		return NULL;
	rd->p = nul + 1;
	return s;
}

static bool next_count(struct reader *rd, size_t max, size_t *ret)
{
	const char *s = next_string(rd);
	char *e;
	unsigned long n;

	if (!s || !*s)
		return false;
	n = strtoul(s, &e, 10);
	if (*e || n > max)
		return false;
	*ret = n;
	return true;
}

static char **next_vector(struct reader *rd)
{
	size_t n;
	char **v;

	if (!next_count(rd, LAUNCHER_EXEC_STRINGS_MAX, &n))
		return NULL;
	v = calloc(n + 1, sizeof(*v));
	for (size_t i = 0; v && i < n; i++)
		if (!(v[i] = next_string(rd)))
			v = (free(v), NULL);
	return v;
}

static bool same_name(const char *a, const char *b)
{
	size_t n = strcspn(a, "=");

	return strncmp(a, b, n) == 0 && b[n] == '=';
}

/* The session's environment with the request's variables over it. */
static char **merge_env(char *const *base, char **over)
{
	size_t n = 0, k = 0;
	char **env;

	while (base[n])
		n++;
	while (over[k])
		k++;
	env = calloc(n + k + 1, sizeof(*env));
	if (!env)
		return NULL;
	k = 0;
	for (size_t i = 0; base[i]; i++) {
		bool replaced = false;

		for (size_t j = 0; over[j] && !replaced; j++)
			replaced = same_name(over[j], base[i]);
		if (!replaced)
			env[k++] = base[i];
	}
	for (size_t j = 0; over[j]; j++)
		env[k++] = over[j];
	return env;
}

/* The request's files: "d" ones into its own folder, "w" ones into the workspace, each with the
 * rights and rules of the command. */
static int place_files(const struct launcher_context *ctx, struct reader *rd, int dir,
		       struct al_error *err)
{
	_cleanup_close_ int ws = -EBADF;
	size_t n, len;
	int r;

	if (!next_count(rd, 1024, &n))
		return -EBADMSG;
	for (size_t i = 0; i < n; i++) {
		const char *kind = next_string(rd), *name = next_string(rd),
			   *mode = next_string(rd);
		struct launcher_file f;

		if (!kind || !name || !mode || !next_count(rd, SIZE_MAX, &len) ||
		    len > (size_t)(rd->end - rd->p))
			return -EBADMSG;
		f = (struct launcher_file){name, rd->p, len, streq(mode, "x")};
		rd->p += len;
		if (streq(kind, "w") && ws < 0)
			ws = open(ctx->policy->workspace.mount, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if ((streq(kind, "w") && ws < 0) || (!streq(kind, "w") && dir < 0))
			return al_error_set_errno(err, -EBADMSG, "files: nowhere to put %s", name);
		r = launcher_tree_place(streq(kind, "w") ? ws : dir, &f, err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The command's own folder (in /tmp, made here, its name the caller's choice), or -EBADF. */
static int make_dir(const char *path, struct al_error *err)
{
	int fd;

	if (!*path)
		return -EBADF;
	if (!startswith(path, "/tmp/") || !path[5] || strchr(path + 5, '/'))
		return al_error_set(err, -EINVAL, "%s is not a folder name in /tmp", path);
	if (mkdir(path, 0700) < 0)
		return al_error_set_errno(err, -errno, "Failed to make the command's folder %s",
					  path);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd >= 0 ? fd : al_error_set_errno(err, -errno, "Failed to open %s", path);
}

static void slot_free(struct exec_slot *s)
{
	if (s->dir)
		al_path_remove_tree(s->dir);
	for (int i = 0; i < 3; i++)
		s->stdio[i] = al_close(s->stdio[i]);
	free(s->argv);
	free(s->envp);
	free(s->prelude);
	free(s->text);
	*s = (struct exec_slot){.stdio = {-EBADF, -EBADF, -EBADF}};
}

/* Starts the slot's prelude or command and hands airlock a pidfd of it; with a terminal, airlock
 * gets its master first. */
static int spawn_slot(const struct launcher_context *ctx, int sync_fd, struct exec_slot *s,
		      struct al_error *err)
{
	struct launcher_spawn sp = {
	    .argv = s->in_prelude ? s->prelude : s->argv,
	    .envp = s->envp,
	    .stdio = s->stdio,
	    .prelude = s->in_prelude,
	    .new_group = true,
	};
	_cleanup_close_ int master = -EBADF;
	char tty[32];
	int r, pidfd;

	if (s->terminal && !s->in_prelude) {
		r = launcher_pty_open(&s->tty, &master, tty, err);
		if (r < 0)
			return r;
		sp.tty = tty;
	}
	r = launcher_sandbox_spawn(ctx, &sp, &s->pid);
	if (r < 0)
		return r;
	/* Only airlock holds the master: the command's terminal hangs up when it and what it
	 * left there are done with it. */
	if (master >= 0)
		(void)launcher_sync_send(
		    sync_fd,
		    &(struct launcher_sync_msg){.type = LAUNCHER_SYNC_TERMINAL, .id = s->id},
		    master);
	if (!s->in_prelude)
		for (int i = 0; i < 3; i++)
			s->stdio[i] = al_close(s->stdio[i]);
	/* airlock kills the command itself through this, even while this process is busy, and
	 * whatever group the command moves to. */
	pidfd = (int)syscall(SYS_pidfd_open, s->pid, 0);
	(void)launcher_sync_send(
	    sync_fd, &(struct launcher_sync_msg){.type = LAUNCHER_SYNC_EXEC_STARTED, .id = s->id},
	    pidfd);
	(void)al_close(pidfd);
	return 0;
}

/* m: the EXEC message; fds: the request, stdin, stdout, stderr (taken). */
static void start_exec(const struct launcher_context *ctx, int sync_fd,
		       const struct launcher_sync_msg *m, int *fds)
{
	uint32_t id = m->id;
	struct exec_slot *slot = NULL;
	struct al_error err = {0};
	_cleanup_free_ char **over = NULL;
	_cleanup_close_ int dir = -EBADF;
	struct reader rd;
	size_t len = 0;
	int r = -EBADMSG;

	for (size_t i = 0; i < ELEMENTSOF(slots) && !slot; i++)
		if (slots[i].pid == 0 && !slots[i].text)
			slot = &slots[i];
	if (!slot) {
		for (int i = 0; i < 4; i++)
			fds[i] = al_close(fds[i]);
		launcher_init_send_exec_failure(sync_fd, id, -EAGAIN, NULL, 0);
		return;
	}
	*slot = (struct exec_slot){.id = id,
				   .stdio = {fds[1], fds[2], fds[3]},
				   .terminal = m->flags & LAUNCHER_EXEC_TERMINAL,
				   .tty = m->tty};
	fds[1] = fds[2] = fds[3] = -EBADF;
	if (fds[0] >= 0 && slot->stdio[0] >= 0 && slot->stdio[1] >= 0 && slot->stdio[2] >= 0 &&
	    al_read_fd(fds[0], PAYLOAD_MAX, &slot->text, &len) >= 0) {
		rd = (struct reader){slot->text, slot->text + len};
		slot->argv = next_vector(&rd);
		over = next_vector(&rd);
		slot->result_path = next_string(&rd);
		slot->dir = next_string(&rd);
		if (slot->argv && slot->argv[0] && over && slot->result_path && slot->dir)
			r = 0;
	}
	fds[0] = al_close(fds[0]);
	if (r >= 0) {
		slot->envp = merge_env(ctx->envp, over);
		r = slot->envp ? 0 : -ENOMEM;
	}
	if (r >= 0 && slot->dir[0]) {
		r = dir = make_dir(slot->dir, &err);
		if (r < 0)
			slot->dir = NULL; /* not ours to remove */
	}
	if (r >= 0)
		r = place_files(ctx, &rd, dir, &err);
	if (r >= 0) {
		slot->prelude = next_vector(&rd);
		r = slot->prelude ? 0 : -EBADMSG;
	}
	if (!slot->dir || !slot->dir[0])
		slot->dir = NULL;
	if (slot->result_path && !slot->result_path[0])
		slot->result_path = NULL;
	if (r >= 0) {
		slot->in_prelude = slot->prelude[0] != NULL;
		r = spawn_slot(ctx, sync_fd, slot, &err);
	}
	if (r < 0) {
		launcher_init_send_exec_failure(sync_fd, id, r, err.msg[0] ? &err : NULL,
						slot->in_prelude ? LAUNCHER_STATUS_PRELUDE : 0);
		slot_free(slot);
	}
}

/* The slot's prelude or command ended with st. */
static void on_end(const struct launcher_context *ctx, int sync_fd, struct exec_slot *s, int st)
{
	int fd = -EBADF, r;

	ended[ended_next] = (typeof(ended[0])){s->id, s->pid};
	ended_next = (ended_next + 1) % ELEMENTSOF(ended);
	s->pid = 0;
	if (s->in_prelude && WIFEXITED(st) && WEXITSTATUS(st) == 0) {
		struct al_error err = {0};

		s->in_prelude = false;
		r = spawn_slot(ctx, sync_fd, s, &err);
		if (r >= 0)
			return;
		launcher_init_send_exec_failure(sync_fd, s->id, r, err.msg[0] ? &err : NULL, 0);
		slot_free(s);
		return;
	}
	if (s->result_path && !s->in_prelude) {
		fd =
		    open(s->result_path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		/* The next exec starts without it. */
		(void)unlink(s->result_path);
	}
	launcher_init_send_status(sync_fd, s->id, st, s->in_prelude ? LAUNCHER_STATUS_PRELUDE : 0,
				  fd);
	(void)al_close(fd);
	slot_free(s);
}

static void reap_all(const struct launcher_context *ctx, int sync_fd)
{
	for (;;) {
		int st;
		pid_t p = waitpid(-1, &st, WNOHANG);

		if (p <= 0)
			return;
		for (size_t i = 0; i < ELEMENTSOF(slots); i++)
			if (slots[i].pid == p)
				on_end(ctx, sync_fd, &slots[i], st);
	}
}

static void signal_exec(uint32_t id, int sig)
{
	for (size_t i = 0; i < ELEMENTSOF(slots); i++)
		if (slots[i].pid > 0 && slots[i].id == id)
			(void)kill(-slots[i].pid, sig);
	for (size_t i = 0; i < ELEMENTSOF(ended); i++)
		if (ended[i].pgid > 0 && ended[i].id == id)
			(void)kill(-ended[i].pgid, sig);
}

/* Whether the stat line of a task says it is stopped (or dead). */
static bool task_is_stopped(int dir, const char *name)
{
	char buf[512], *paren;
	ssize_t n;
	int fd = openat(dir, name, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return true; /* gone */
	n = read(fd, buf, sizeof(buf) - 1);
	(void)al_close(fd);
	if (n <= 0)
		return true;
	buf[n] = '\0';
	paren = strrchr(buf, ')');
	return paren && paren[1] == ' ' && strchr("TtZX", paren[2]);
}

/* Whether every thread of every process of the session but this one is stopped (or dead): a
 * thread still in a write through the workspace stops only when the write is done. */
static bool all_stopped(void)
{
	DIR *d = opendir("/proc");
	bool all = true;

	if (!d)
		return false;
	for (struct dirent *de; all && (de = readdir(d));) {
		char path[300];
		DIR *tasks;
		int tfd;

		if (de->d_name[0] < '1' || de->d_name[0] > '9' || streq(de->d_name, "1"))
			continue;
		(void)snprintf(path, sizeof(path), "/proc/%s/task", de->d_name);
		tasks = opendir(path);
		if (!tasks)
			continue; /* gone */
		tfd = dirfd(tasks);
		for (struct dirent *t; all && (t = readdir(tasks));) {
			char stat_name[300];

			if (t->d_name[0] < '1' || t->d_name[0] > '9')
				continue;
			(void)snprintf(stat_name, sizeof(stat_name), "%s/stat", t->d_name);
			all = task_is_stopped(tfd, stat_name);
		}
		(void)closedir(tasks);
	}
	(void)closedir(d);
	return all;
}

/* Stops every process but this one and waits until each is (the kernel stops them on their way
 * back to user space: a write through the workspace completes first). */
static int stop_all(void)
{
	struct timespec pause = {.tv_nsec = 2 * 1000 * 1000};

	(void)kill(-1, SIGSTOP);
	for (int waited = 0; waited < FREEZE_WAIT_MSEC; waited += 2) {
		if (all_stopped())
			return 0;
		(void)nanosleep(&pause, NULL);
	}
	return -ETIMEDOUT;
}

/* A consistent copy of the workspace as the sandbox sees it, into dir (checkpoint), or the
 * workspace made what dir holds (restore): through the workspace's mount, so that the kernel's
 * caches of it stay true, with every other process stopped. */
static void checkpoint_or_restore(const struct launcher_context *ctx, int sync_fd,
				  const struct launcher_sync_msg *in, int dir)
{
	struct launcher_sync_msg m = {.type = in->type};
	struct launcher_tree_stats st = {.budget = in->size,
					 .refresh = in->type == LAUNCHER_SYNC_CHECKPOINT,
					 .restoring = in->type == LAUNCHER_SYNC_RESTORE};
	size_t steps = EMPTY_STEPS_MAX;
	_cleanup_close_ int ws = -EBADF;

	ws = open(ctx->policy->workspace.mount, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0 || ws < 0)
		m.value = dir < 0 ? -EBADMSG : -errno;
	else
		m.value = stop_all();
	if (m.value == 0 && in->type == LAUNCHER_SYNC_CHECKPOINT) {
		/* What the kernel still holds in its write-back cache goes to the workspace's
		 * daemon first: where a file has data (SEEK_DATA) is the daemon's to say. Then
		 * each folder and file has the daemon drop the kernel's caches of it before it is
		 * read (st.refresh): the host may have changed it behind the mount. */
		(void)syncfs(ws);
		launcher_tree_copy(ws, dir, 0, &st);
	} else if (m.value == 0) {
		/* What the host made or removed behind the mount is emptied too. What the
		 * workspace does not let the sandbox remove (write-protected: .git, .envrc, ...)
		 * stays, tried once: the sandbox cannot have changed it. The copy leaves it be
		 * where it is the checkpoint's, and counts it as not restored where it is not. */
		(void)ioctl(ws, FUSEFS_IOC_REFRESH, &(uint64_t){0});
		launcher_tree_empty(ws, 0, &steps);
		launcher_tree_copy(dir, ws, 0, &st);
		(void)syncfs(ws);
	}
	(void)kill(-1, SIGCONT);
	launcher_tree_stats_done(&st);
	m.flags = st.failed;
	if (m.value < 0)
		(void)al_error_set_errno(&m.err, m.value, "Failed to stop the session's processes");
	else if (st.failed > 0 && in->type == LAUNCHER_SYNC_CHECKPOINT)
		(void)al_error_set(&m.err, -EIO, "%u entries not copied, first %s", st.failed,
				   st.first);
	else if (st.failed > 0)
		(void)al_error_set(&m.err, -EIO,
				   "%u entries not restored, first %s (an entry the sandbox may "
				   "not write is left as the host has it)",
				   st.failed, st.first);
	(void)launcher_sync_send(sync_fd, &m, -EBADF);
}

_noreturn_ void launcher_init_session_main(const struct launcher_context *ctx, int sync_fd,
					   int sigfd)
{
	struct pollfd pfd[2] = {
	    {.fd = sigfd, .events = POLLIN},
	    {.fd = sync_fd, .events = POLLIN},
	};

	for (;;) {
		struct signalfd_siginfo si;
		struct launcher_sync_msg m;
		int fds[4], r;

		if (poll(pfd, ELEMENTSOF(pfd), -1) < 0) {
			if (errno == EINTR)
				continue;
			_exit(LAUNCHER_EXIT_FAILED);
		}
		if ((pfd[0].revents & POLLIN) &&
		    read(sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si) && si.ssi_signo == SIGCHLD)
			reap_all(ctx, sync_fd);
		if (!(pfd[1].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		r = launcher_sync_recv_fds(sync_fd, &m, fds, ELEMENTSOF(fds));
		if (r == -EPIPE)
			_exit(LAUNCHER_EXIT_FAILED); /* airlock is gone: end the sandbox */
		if (r < 0)
			continue;
		if (m.type == LAUNCHER_SYNC_EXEC)
			start_exec(ctx, sync_fd, &m, fds);
		else if (m.type == LAUNCHER_SYNC_EXEC_SIGNAL)
			signal_exec(m.id, m.value);
		else if (m.type == LAUNCHER_SYNC_CHECKPOINT || m.type == LAUNCHER_SYNC_RESTORE)
			checkpoint_or_restore(ctx, sync_fd, &m, fds[0]);
		else if (m.type == LAUNCHER_SYNC_TERMINATE)
			(void)kill(-1, SIGTERM);
		for (size_t i = 0; i < ELEMENTSOF(fds); i++)
			fds[i] = al_close(fds[i]);
	}
}
