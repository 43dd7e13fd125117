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
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/fd-util.h"
#include "launcher/launcher-internal.h"

#define PAYLOAD_MAX (4 * 1024 * 1024)
#define FREEZE_WAIT_MSEC 2000

struct exec_slot {
	pid_t pid; /* 0: free */
	uint32_t id;
	char *result_path;
};

static struct exec_slot slots[LAUNCHER_SESSION_EXECS_MAX];

/* Commands that ended lately, by id: a signal for one may cross its end (airlock kills the
 * command itself, then its group through here), and what it left in its group must still go. */
static struct {
	uint32_t id;
	pid_t pgid;
} ended[LAUNCHER_SESSION_EXECS_MAX];
static size_t ended_next;

/* The request's strings, NUL-separated: argc, argv..., envc, env..., result path. Pointers into
 * text, in vectors allocated here. */
static int parse_payload(char *text, size_t len, char ***ret_argv, char ***ret_envp,
			 const char **ret_result)
{
	char *p = text, *end = text + len, **v[2] = {NULL, NULL};

	for (int k = 0; k < 2; k++) {
		unsigned long n;

		if (p >= end || memchr(p, '\0', (size_t)(end - p)) == NULL)
			goto bad;
		n = strtoul(p, NULL, 10);
		p += strlen(p) + 1;
		if (n > LAUNCHER_EXEC_STRINGS_MAX || (k == 0 && n == 0))
			goto bad;
		v[k] = calloc(n + 1, sizeof(char *));
		if (!v[k])
			goto bad;
		for (unsigned long i = 0; i < n; i++) {
			if (p >= end || memchr(p, '\0', (size_t)(end - p)) == NULL)
				goto bad;
			v[k][i] = p;
			p += strlen(p) + 1;
		}
	}
	if (p >= end || memchr(p, '\0', (size_t)(end - p)) == NULL)
		goto bad;
	*ret_argv = v[0];
	*ret_envp = v[1];
	*ret_result = p;
	return 0;
bad:
	free(v[0]);
	free(v[1]);
	return -EBADMSG;
}

static void send_status(int sync_fd, uint32_t id, int status, int fd)
{
	struct launcher_sync_msg m = {.type = LAUNCHER_SYNC_STATUS, .id = id};

	if (WIFSIGNALED(status)) {
		m.signal = WTERMSIG(status);
		m.value = 128 + m.signal;
	} else {
		m.value = WEXITSTATUS(status);
	}
	(void)launcher_sync_send(sync_fd, &m, fd);
}

static void send_exec_failure(int sync_fd, uint32_t id, int r)
{
	struct launcher_sync_msg m = {.type = LAUNCHER_SYNC_EXEC_FAILED, .value = r, .id = id};

	(void)launcher_sync_send(sync_fd, &m, -EBADF);
	m = (struct launcher_sync_msg){
	    .type = LAUNCHER_SYNC_STATUS,
	    .value = r == -ENOENT ? LAUNCHER_EXIT_NOTFOUND : LAUNCHER_EXIT_NOEXEC,
	    .id = id,
	};
	(void)launcher_sync_send(sync_fd, &m, -EBADF);
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

/* fds: the payload, stdin, stdout, stderr (closed here). */
static void start_exec(const struct launcher_context *ctx, int sync_fd, uint32_t id, int *fds)
{
	struct exec_slot *slot = NULL;
	_cleanup_free_ char *text = NULL;
	_cleanup_free_ char **argv = NULL, **over = NULL, **envp = NULL;
	const char *result = NULL;
	size_t len = 0;
	int r = -EBADMSG;

	for (size_t i = 0; i < ELEMENTSOF(slots) && !slot; i++)
		if (slots[i].pid == 0)
			slot = &slots[i];
	if (!slot)
		r = -EAGAIN;
	else if (fds[0] >= 0 && fds[1] >= 0 && fds[2] >= 0 && fds[3] >= 0 &&
		 al_read_fd(fds[0], PAYLOAD_MAX, &text, &len) >= 0)
		r = parse_payload(text, len, &argv, &over, &result);
	if (r >= 0) {
		envp = merge_env(ctx->envp, over);
		if (!envp)
			r = -ENOMEM;
	}
	if (r >= 0) {
		struct launcher_spawn sp = {
		    .argv = argv, .envp = envp, .stdio = fds + 1, .new_group = true};

		r = launcher_sandbox_spawn(ctx, &sp, &slot->pid);
	}
	for (int i = 0; i < 4; i++)
		fds[i] = al_close(fds[i]);
	if (r < 0) {
		if (slot)
			slot->pid = 0;
		send_exec_failure(sync_fd, id, r);
		return;
	}
	slot->id = id;
	slot->result_path = result[0] ? strdup(result) : NULL;
	/* airlock kills the command itself through this, even while this process is busy, and
	 * whatever group the command moves to. */
	r = (int)syscall(SYS_pidfd_open, slot->pid, 0);
	(void)launcher_sync_send(
	    sync_fd, &(struct launcher_sync_msg){.type = LAUNCHER_SYNC_EXEC_STARTED, .id = id}, r);
	(void)al_close(r);
}

static void reap_all(int sync_fd)
{
	for (;;) {
		int st, fd = -EBADF;
		pid_t p = waitpid(-1, &st, WNOHANG);

		if (p <= 0)
			return;
		for (size_t i = 0; i < ELEMENTSOF(slots); i++) {
			struct exec_slot *s = &slots[i];

			if (s->pid != p)
				continue;
			if (s->result_path) {
				fd = open(s->result_path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
							      O_NOCTTY | O_CLOEXEC);
				/* The next exec starts without it. */
				(void)unlink(s->result_path);
			}
			ended[ended_next] = (typeof(ended[0])){s->id, s->pid};
			ended_next = (ended_next + 1) % ELEMENTSOF(ended);
			send_status(sync_fd, s->id, st, fd);
			fd = al_close(fd);
			free(s->result_path);
			*s = (struct exec_slot){0};
		}
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
	struct launcher_tree_stats st = {.budget = in->size};
	_cleanup_close_ int ws = -EBADF;

	ws = open(ctx->policy->workspace.mount, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0 || ws < 0)
		m.value = dir < 0 ? -EBADMSG : -errno;
	else
		m.value = stop_all();
	if (m.value == 0 && in->type == LAUNCHER_SYNC_CHECKPOINT) {
		/* What the kernel still holds in its write-back cache goes to the workspace's
		 * daemon first: where a file has data (SEEK_DATA) is the daemon's to say. */
		(void)syncfs(ws);
		launcher_tree_copy(ws, dir, 0, &st);
	} else if (m.value == 0) {
		launcher_tree_clear(ws, 0, &st);
		launcher_tree_copy(dir, ws, 0, &st);
		(void)syncfs(ws);
	}
	(void)kill(-1, SIGCONT);
	launcher_tree_stats_done(&st);
	m.flags = st.failed;
	if (m.value < 0)
		(void)al_error_set_errno(&m.err, m.value, "Failed to stop the session's processes");
	else if (st.failed > 0)
		(void)al_error_set(&m.err, -EIO, "%u entries not %s, first %s", st.failed,
				   in->type == LAUNCHER_SYNC_CHECKPOINT ? "copied" : "restored",
				   st.first);
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
			reap_all(sync_fd);
		if (!(pfd[1].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		r = launcher_sync_recv_fds(sync_fd, &m, fds, ELEMENTSOF(fds));
		if (r == -EPIPE)
			_exit(LAUNCHER_EXIT_FAILED); /* airlock is gone: end the sandbox */
		if (r < 0)
			continue;
		if (m.type == LAUNCHER_SYNC_EXEC)
			start_exec(ctx, sync_fd, m.id, fds);
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
