#define LOG_MODULE "serve"

/* Child airlock processes: each request that runs something runs it in one, spawned from this
 * binary (/proc/self/exe), held by a pidfd (no SIGCHLD handler: threads wait for their own). */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "common/fd-util.h"
#include "common/log.h"
#include "serve/serve-internal.h"

extern char **environ;

/* Our end of a pipe (close-on-exec) and the child's end, which the spawn places. */
static int make_pipe(int ours[static 1], int theirs[static 1], bool we_read)
{
	int p[2];

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	*ours = we_read ? p[0] : p[1];
	*theirs = we_read ? p[1] : p[0];
	return 0;
}

static int open_pty(const struct serve_child_size *size, int *master, char *slave, size_t n)
{
	struct winsize ws = {.ws_col = size ? size->cols : 80, .ws_row = size ? size->rows : 24};
	int fd = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (grantpt(fd) < 0 || unlockpt(fd) < 0 || ptsname_r(fd, slave, n) != 0 ||
	    ioctl(fd, TIOCSWINSZ, &ws) < 0) {
		int r = -errno;

		(void)al_close(fd);
		return r;
	}
	*master = fd;
	return 0;
}

/* ---- the spawner ----
 *
 * Children are forked by one thread that lives as long as serve, with PR_SET_PDEATHSIG: the
 * kernel sends it when the thread that forked a child ends, so a child of a connection's thread
 * would die with the connection, and one of this thread dies with serve, even with a SIGKILL of
 * serve (no `airlock exec` of a killed serve runs on to its timeout). */

struct spawn_job {
	char **argv;
	bool terminal;
	const char *slave;
	int in, out, err, result; /* the child's ends: stdin (or -1: /dev/null), ... */
	pid_t pid;
	int error;
	bool done;
	struct spawn_job *next;
};

/* In the forked child of a thread of a threaded process: async-signal-safe calls only. */
_noreturn_ static void child_exec(const struct spawn_job *j, pid_t parent)
{
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	sigset_t none;
	int fd;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		_exit(127);
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			(void)sigaction(sig, &dfl, NULL);
	(void)sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
	if (j->terminal) {
		/* A session of its own, whose controlling terminal the pty becomes (no O_NOCTTY).
		 */
		if (setsid() < 0 || (fd = open(j->slave, O_RDWR)) < 0 ||
		    dup2(fd, STDIN_FILENO) < 0 || dup2(fd, STDOUT_FILENO) < 0 ||
		    dup2(j->err >= 0 ? j->err : fd, STDERR_FILENO) < 0)
			_exit(127);
	} else {
		(void)setpgid(0, 0);
		fd = j->in >= 0 ? j->in : open("/dev/null", O_RDONLY);
		if (fd < 0 || dup2(fd, STDIN_FILENO) < 0)
			_exit(127);
		fd = j->out >= 0 ? j->out : open("/dev/null", O_WRONLY);
		if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0)
			_exit(127);
		if (j->err >= 0 && dup2(j->err, STDERR_FILENO) < 0)
			_exit(127);
	}
	/* dup2() onto itself keeps close-on-exec: cleared by hand then. */
	if (j->result == 3 ? fcntl(3, F_SETFD, 0) < 0 : j->result >= 0 && dup2(j->result, 3) < 0)
		_exit(127);
	(void)execve("/proc/self/exe", j->argv, environ);
	_exit(127);
}

static void *spawner(void *data)
{
	struct serve *s = data;

	(void)pthread_mutex_lock(&s->spawn_lock);
	for (;;) {
		struct spawn_job *j;

		while (!s->spawn_queue && !s->spawn_stop)
			(void)pthread_cond_wait(&s->spawn_cond, &s->spawn_lock);
		if (!s->spawn_queue)
			break;
		j = s->spawn_queue;
		s->spawn_queue = j->next;
		j->pid = fork();
		if (j->pid == 0)
			child_exec(j, s->pid);
		j->error = j->pid < 0 ? -errno : 0;
		j->done = true;
		(void)pthread_cond_broadcast(&s->spawn_cond);
	}
	(void)pthread_mutex_unlock(&s->spawn_lock);
	return NULL;
}

int serve_spawner_start(struct serve *s)
{
	(void)pthread_mutex_init(&s->spawn_lock, NULL);
	(void)pthread_cond_init(&s->spawn_cond, NULL);
	return -pthread_create(&s->spawn_thread, NULL, spawner, s);
}

void serve_spawner_stop(struct serve *s)
{
	(void)pthread_mutex_lock(&s->spawn_lock);
	s->spawn_stop = true;
	(void)pthread_cond_broadcast(&s->spawn_cond);
	(void)pthread_mutex_unlock(&s->spawn_lock);
	(void)pthread_join(s->spawn_thread, NULL);
	(void)pthread_mutex_destroy(&s->spawn_lock);
	(void)pthread_cond_destroy(&s->spawn_cond);
}

static int run_on_spawner(struct serve *s, struct spawn_job *j)
{
	(void)pthread_mutex_lock(&s->spawn_lock);
	if (s->spawn_stop) {
		(void)pthread_mutex_unlock(&s->spawn_lock);
		return -ESHUTDOWN;
	}
	j->next = NULL;
	for (struct spawn_job **q = &s->spawn_queue;; q = &(*q)->next)
		if (!*q) {
			*q = j;
			break;
		}
	(void)pthread_cond_broadcast(&s->spawn_cond);
	while (!j->done)
		(void)pthread_cond_wait(&s->spawn_cond, &s->spawn_lock);
	(void)pthread_mutex_unlock(&s->spawn_lock);
	return j->error;
}

int serve_child_spawn(const struct serve *s, char *const *args, int stdin_fd, unsigned flags,
		      const struct serve_child_size *size, struct serve_child *ret)
{
	struct serve_child c = {.pid = -1,
				.pidfd = -EBADF,
				.in = -EBADF,
				.out = -EBADF,
				.err = -EBADF,
				.result = -EBADF,
				.pty = -EBADF};
	int in = -EBADF, out = -EBADF, err = -EBADF, result = -EBADF, r = 0;
	_cleanup_free_ char **argv = NULL;
	struct spawn_job job;
	char slave[64] = "";
	size_t n = 0;

	while (args[n])
		n++;
	argv = calloc(n + 2, sizeof(*argv));
	if (!argv)
		return -ENOMEM;
	argv[0] = (char *)"airlock";
	memcpy(argv + 1, args, n * sizeof(*argv));
	if (flags & SERVE_CHILD_TERMINAL)
		r = open_pty(size, &c.pty, slave, sizeof(slave));
	if (r >= 0 && (flags & SERVE_CHILD_STDIN) && !(flags & SERVE_CHILD_TERMINAL))
		r = make_pipe(&c.in, &in, false);
	if (r >= 0 && (flags & SERVE_CHILD_STDOUT) && !(flags & SERVE_CHILD_TERMINAL))
		r = make_pipe(&c.out, &out, true);
	if (r >= 0 && (flags & SERVE_CHILD_STDERR))
		r = make_pipe(&c.err, &err, true);
	if (r >= 0 && (flags & SERVE_CHILD_RESULT))
		r = make_pipe(&c.result, &result, true);
	if (r < 0)
		goto fail;

	job = (struct spawn_job){.argv = argv,
				 .terminal = flags & SERVE_CHILD_TERMINAL,
				 .slave = slave,
				 .in = in >= 0 ? in : stdin_fd,
				 .out = out,
				 .err = err,
				 .result = result};
	r = run_on_spawner((struct serve *)s, &job);
	if (r < 0)
		goto fail;
	c.pid = job.pid;
	c.pidfd = (int)syscall(SYS_pidfd_open, c.pid, 0);
	if (c.pidfd < 0) {
		r = -errno;
		(void)kill(c.pid, SIGKILL);
		(void)waitpid(c.pid, NULL, 0);
		goto fail;
	}
	if (c.pty >= 0)
		c.in = c.out = c.pty;
	(void)al_close(in), (void)al_close(out), (void)al_close(err), (void)al_close(result);
	*ret = c;
	return 0;
fail:
	(void)al_close(in), (void)al_close(out), (void)al_close(err), (void)al_close(result);
	(void)al_close(c.in), (void)al_close(c.out), (void)al_close(c.err);
	(void)al_close(c.result), (void)al_close(c.pty);
	return r;
}

void serve_child_kill(struct serve_child *c)
{
	if (c->pidfd >= 0)
		(void)syscall(SYS_pidfd_send_signal, c->pidfd, SIGKILL, NULL, 0);
}

/* Appends what fd has to *buf (up to max; the rest is read and dropped): 0 at its end. */
static int drain(int fd, char **buf, size_t *len, size_t max)
{
	char tmp[65536];
	ssize_t k = read(fd, tmp, sizeof(tmp));

	if (k < 0)
		return errno == EAGAIN || errno == EINTR ? 1 : -errno;
	if (k == 0)
		return 0;
	if (*len < max) {
		size_t take = MIN((size_t)k, max - *len);
		char *p = realloc(*buf, *len + take + 1);

		if (!p)
			return -ENOMEM;
		memcpy(p + *len, tmp, take);
		*len += take;
		p[*len] = '\0';
		*buf = p;
	}
	return 1;
}

int serve_child_collect(struct serve_child *c, size_t max, bool (*gone)(const void *),
			const void *data, char **out, size_t *out_len, char **err)
{
	size_t err_len = 0;
	bool killed = false;
	int r;

	*out = NULL, *out_len = 0, *err = NULL;
	while (c->out >= 0 || c->err >= 0) {
		struct pollfd pfd[2] = {{.fd = c->out, .events = POLLIN},
					{.fd = c->err, .events = POLLIN}};

		r = poll(pfd, 2, 250);
		if (r < 0 && errno != EINTR)
			break;
		if (gone && gone(data)) {
			serve_child_kill(c);
			killed = true;
			break;
		}
		if (pfd[0].revents) {
			r = drain(c->out, out, out_len, max);
			if (r <= 0)
				c->out = al_close(c->out);
		}
		if (pfd[1].revents) {
			r = drain(c->err, err, &err_len, 65536);
			if (r <= 0)
				c->err = al_close(c->err);
		}
	}
	return serve_child_done(c, !killed);
}

static int status_of(const siginfo_t *si)
{
	return si->si_code == CLD_EXITED ? W_EXITCODE(si->si_status, 0)
					 : W_EXITCODE(0, si->si_status);
}

int serve_child_wait(struct serve_child *c)
{
	siginfo_t si = {0};

	if (c->reaped || c->pidfd < 0)
		return c->status;
	while (waitid(P_PIDFD, (id_t)c->pidfd, &si, WEXITED) < 0 && errno == EINTR)
		;
	c->reaped = true;
	c->status = status_of(&si);
	return c->status;
}

int serve_child_done(struct serve_child *c, bool wait)
{
	siginfo_t si = {0};

	if (c->pty >= 0) {
		if (c->in == c->pty)
			c->in = -EBADF;
		if (c->out == c->pty)
			c->out = -EBADF;
	}
	c->in = al_close(c->in), c->out = al_close(c->out), c->err = al_close(c->err);
	c->result = al_close(c->result), c->pty = al_close(c->pty);
	if (!c->reaped && c->pidfd >= 0) {
		if (!wait &&
		    (waitid(P_PIDFD, (id_t)c->pidfd, &si, WEXITED | WNOHANG) < 0 || si.si_pid == 0))
			serve_child_kill(c);
		(void)serve_child_wait(c);
	}
	c->pidfd = al_close(c->pidfd);
	return c->status;
}
