/* The sources of credentials' real values: the vault, the broker's environment, a file, the
 * output of a helper command and the kernel keyring. Every byte of a value goes straight into
 * sodium_malloc'd memory, which is wiped when freed. Messages name the credential, its source and
 * what went wrong, never the value. There is no global state: the daemon's worker threads call
 * broker_source_read() concurrently. */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/keyctl.h>
#include <linux/openat2.h>
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "broker/broker-internal.h"
#include "common/fd-util.h"

/* Room for a value of BROKER_SECRET_MAX bytes, the "\r\n" after it and one byte more: a read
 * that fills the buffer proves the value too long, without reading any further. */
#define VALUE_CAP (BROKER_SECRET_MAX + 3)

/* Where a helper named without a slash is looked for when the broker has no $PATH. */
#define DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"

/* clone() with flags, storing a pidfd at its parent_tid argument: the third, but for the first
 * two swapped on s390. */
#if defined(__s390__) || defined(__CRIS__)
#define LEGACY_CLONE(flags, pidfd) syscall(SYS_clone, 0, (flags), (pidfd), NULL, 0)
#else
#define LEGACY_CLONE(flags, pidfd) syscall(SYS_clone, (flags), 0, (pidfd), NULL, 0)
#endif

/* ---- values ---- */

/* A value being read from a file or a pipe, into wiped memory. */
struct value {
	struct broker_secret *buf; /* VALUE_CAP bytes */
	size_t len;
};

static int value_init(struct value *v)
{
	v->buf = broker_secret_new(VALUE_CAP);
	v->len = 0;
	return v->buf ? 0 : -ENOMEM;
}

static void value_done(struct value *v)
{
	/* buf->len is VALUE_CAP: the whole buffer is wiped, not just what was read. */
	v->buf = broker_secret_free(v->buf);
	v->len = 0;
}

/* Reads what fd has: returns 1 at its end, 0 when a non-blocking fd has nothing more for now,
 * -EFBIG once the value cannot fit any more, or -errno. */
static int value_read(struct value *v, int fd)
{
	ssize_t n;

	for (;;) {
		if (v->len == VALUE_CAP)
			return -EFBIG;
		n = read(fd, v->buf->data + v->len, VALUE_CAP - v->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN ? 0 : -errno;
		if (n == 0)
			return 1;
		v->len += (size_t)n;
	}
}

/* A new secret holding len bytes of p: -ENODATA when empty, -EFBIG when too long. */
static int secret_copy(const char *p, size_t len, struct broker_secret **ret)
{
	struct broker_secret *s;

	if (len == 0)
		return -ENODATA;
	if (len > BROKER_SECRET_MAX)
		return -EFBIG;
	s = broker_secret_new(len);
	if (!s)
		return -ENOMEM;
	memcpy(s->data, p, len);
	*ret = s;
	return 0;
}

/* The value read, without one trailing "\n" or "\r\n", as a secret of its own size. */
static int value_take(const struct value *v, struct broker_secret **ret)
{
	const char *d = v->buf->data;
	size_t len = v->len;

	if (len > 0 && d[len - 1] == '\n') {
		len--;
		if (len > 0 && d[len - 1] == '\r')
			len--;
	}
	return secret_copy(d, len, ret);
}

/* Describes error r about the value of what (which never holds the value itself). */
_printf_(3, 4) static int value_error(struct al_error *err, int r, const char *fmt, ...)
{
	char what[AL_ERROR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	switch (r) {
	case -ENODATA:
		return al_error_set(err, r, "%s is empty", what);
	case -EFBIG:
		return al_error_set(err, r, "%s is longer than %d bytes", what, BROKER_SECRET_MAX);
	default:
		return al_error_set_errno(err, r, "cannot read %s", what);
	}
}

/* ---- vault, env ---- */

static int read_vault(const struct broker_sources *s, const struct policy_credential *cr,
		      struct broker_secret **ret, struct al_error *err)
{
	const char *key = cr->source_key ? cr->source_key : cr->name;
	const char *where = s->vault_path ? s->vault_path : "the vault";
	const struct broker_vault_entry *e;
	int r;

	if (!s->vault)
		return al_error_set(err, -ENOENT, "no vault is open to hold secret \"%s\"", key);
	e = broker_vault_find(s->vault, key);
	if (!e)
		return al_error_set(err, -ENOENT, "no secret \"%s\" in %s", key, where);
	r = secret_copy(e->value->data, e->value->len, ret);
	if (r < 0)
		return value_error(err, r, "secret \"%s\" in %s", key, where);
	return 0;
}

static int read_env(const struct policy_credential *cr, struct broker_secret **ret,
		    struct al_error *err)
{
	const char *v;
	int r;

	if (!cr->source_var)
		return al_error_set(err, -EINVAL, "no variable is named");
	v = getenv(cr->source_var);
	if (!v)
		return al_error_set(err, -ENOENT, "$%s is not set", cr->source_var);
	r = secret_copy(v, strnlen(v, BROKER_SECRET_MAX + 1), ret);
	if (r < 0)
		return value_error(err, r, "$%s", cr->source_var);
	return 0;
}

/* ---- file ---- */

/* Opens path for reading, through no symbolic link (one planted on the way would turn the
 * credential into any file the broker can read), and without blocking on a FIFO. Only a regular
 * file is accepted. Returns the fd. */
static int file_open(const char *path, struct al_error *err)
{
	struct open_how how = {
	    .flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
	    .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	_cleanup_close_ int fd = -EBADF;
	struct stat st;

	if (path[0] != '/')
		return al_error_set(err, -EINVAL, "\"%s\" is not an absolute path", path);
	fd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));
	if (fd < 0 && errno == ELOOP)
		return al_error_set(err, -ELOOP, "refusing \"%s\": a symbolic link is on its path",
				    path);
	if (fd < 0)
		return al_error_set_errno(err, -errno, "cannot open \"%s\"", path);
	if (fstat(fd, &st) < 0)
		return al_error_set_errno(err, -errno, "cannot stat \"%s\"", path);
	if (!S_ISREG(st.st_mode))
		return al_error_set(err, -EINVAL, "\"%s\" is not a regular file", path);
	return TAKE_FD(fd);
}

static int read_file(const struct policy_credential *cr, struct broker_secret **ret,
		     struct al_error *err)
{
	_cleanup_(value_done) struct value v = {};
	_cleanup_close_ int fd = -EBADF;
	int r;

	if (!cr->source_path)
		return al_error_set(err, -EINVAL, "no file is named");
	fd = file_open(cr->source_path, err);
	if (fd < 0)
		return fd;
	r = value_init(&v);
	if (r >= 0)
		r = value_read(&v, fd);
	if (r >= 0)
		r = value_take(&v, ret);
	if (r < 0)
		return value_error(err, r, "\"%s\"", cr->source_path);
	return 0;
}

/* ---- command: the helper's child, between clone and execve ---- */

/* All the helper's child needs, prepared before it exists. */
struct helper_exec {
	char *const *argv;
	char **paths; /* where to look for argv[0], in order, NULL-terminated */
	int null_fd, out_fd, report_fd;
	pid_t parent;
};

/* The child's own setup. It runs in a copy of a multi-threaded process, where a lock can be held
 * forever, so it makes async-signal-safe system calls only: no allocation, no stdio. */
static int helper_child_setup(const struct helper_exec *x)
{
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	sigset_t none;

	/* The broker's handlers and ignored signals (SIGPIPE) are not the helper's. */
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			(void)sigaction(sig, &dfl, NULL);
	(void)sigemptyset(&none);
	if (sigprocmask(SIG_SETMASK, &none, NULL) < 0)
		return -errno;
	/* Its own process group, so that a timeout kills whatever it started too. */
	if (setpgid(0, 0) < 0)
		return -errno;
	/* Not outliving the broker thread that waits for it. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		return -errno;
	if (getppid() != x->parent)
		return -ESRCH;
	/* stderr goes nowhere: a helper may print the secret there too. */
	if (dup2(x->null_fd, STDIN_FILENO) < 0 || dup2(x->out_fd, STDOUT_FILENO) < 0 ||
	    dup2(x->null_fd, STDERR_FILENO) < 0)
		return -errno;
	/* Other threads may have opened fds without O_CLOEXEC meanwhile: none is inherited. */
	if (al_close_range_cloexec(STDERR_FILENO + 1) < 0)
		return -errno;
	return chdir("/") < 0 ? -errno : 0;
}

/* execvp() over the prepared candidates, minus its fallback to a shell. */
static int helper_child_exec(const struct helper_exec *x)
{
	bool denied = false;
	int r = -ENOENT;

	for (char **p = x->paths; *p; p++) {
		(void)execve(*p, x->argv, environ);
		r = -errno;
		if (r == -EACCES)
			denied = true;
		else if (r != -ENOENT && r != -ENOTDIR)
			return r;
	}
	return denied ? -EACCES : r;
}

/* Reports -errno over the report pipe, which a successful execve closes instead. */
_noreturn_ static void helper_child(const struct helper_exec *x)
{
	int r;

	r = helper_child_setup(x);
	if (r >= 0)
		r = helper_child_exec(x);
	(void)al_write_all(x->report_fd, &r, sizeof(r));
	_exit(127);
}

/* ---- command: the broker's side ---- */

/* A running helper: pid 0 once reaped. */
struct helper {
	pid_t pid;
	int pidfd;
	int out_fd; /* the read end of its stdout, non-blocking */
};

static void strv_freep(char ***p)
{
	for (char **i = *p; i && *i; i++)
		free(*i);
	free(*p);
}

/* The files execvp() would try for name: name itself when it has a slash, else name in each
 * directory of $PATH. Relative entries are skipped: the helper runs in "/", not in the broker's
 * directory. */
static int exec_candidates(const char *name, char ***ret)
{
	const char *path = getenv("PATH") ?: DEFAULT_PATH, *dir = path, *end;
	_cleanup_(strv_freep) char **v = NULL;
	size_t n = 0;

	/* At most one entry per byte of $PATH, and a NULL. */
	v = calloc(strchr(name, '/') ? 2 : strlen(path) + 2, sizeof(*v));
	if (!v)
		return -ENOMEM;
	if (strchr(name, '/')) {
		v[0] = strdup(name);
		if (!v[0])
			return -ENOMEM;
		*ret = TAKE_PTR(v);
		return 0;
	}
	for (;; dir = end + 1) {
		end = strchrnul(dir, ':');
		if (dir[0] == '/') {
			if (asprintf(&v[n], "%.*s/%s", (int)(end - dir), dir, name) < 0) {
				v[n] = NULL;
				return -ENOMEM;
			}
			n++;
		}
		if (*end == '\0')
			break;
	}
	*ret = TAKE_PTR(v);
	return 0;
}

/* Moves *fd to 3 or above, so that the child's dup2() onto 0, 1 and 2 cannot clobber it. */
static int fd_move_above_stdio(int *fd)
{
	int n;

	if (*fd > STDERR_FILENO)
		return 0;
	n = fcntl(*fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
	if (n < 0)
		return -errno;
	(void)al_close(*fd);
	*fd = n;
	return 0;
}

static void close_pairp(int (*p)[2])
{
	(*p)[0] = al_close((*p)[0]);
	(*p)[1] = al_close((*p)[1]);
}

/* fork(), with a pidfd to wait on and to signal without the risk of hitting a reused pid.
 * Container seccomp profiles refuse clone3 with ENOSYS: clone() takes the same flags. */
static pid_t clone_pidfd(int *ret_pidfd)
{
	struct clone_args a = {
	    .flags = CLONE_PIDFD,
	    .pidfd = (uint64_t)(uintptr_t)ret_pidfd,
	    .exit_signal = SIGCHLD,
	};
	long pid;

	pid = syscall(SYS_clone3, &a, sizeof(a));
	if (pid < 0 && errno == ENOSYS)
		pid = LEGACY_CLONE(CLONE_PIDFD | SIGCHLD, ret_pidfd);
	return (pid_t)pid;
}

/* Starts the child with every signal blocked, so that no handler of the broker runs in it
 * before it resets them. */
static int helper_clone(const struct helper_exec *x, int *ret_pidfd)
{
	sigset_t all, saved;
	pid_t pid;
	int r;

	(void)sigfillset(&all);
	r = -pthread_sigmask(SIG_SETMASK, &all, &saved);
	if (r < 0)
		return r;
	pid = clone_pidfd(ret_pidfd);
	if (pid == 0)
		helper_child(x);
	r = pid < 0 ? -errno : pid;
	(void)pthread_sigmask(SIG_SETMASK, &saved, NULL);
	return r;
}

/* What the child reported: 0 when execve closed the pipe, else its -errno. */
static int helper_exec_result(int fd)
{
	ssize_t n;
	int code;

	do
		n = read(fd, &code, sizeof(code));
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0)
		return 0;
	return n == sizeof(code) && code < 0 ? code : -EIO;
}

static int helper_reap(struct helper *h, siginfo_t *ret)
{
	siginfo_t si = {};

	while (waitid(P_PIDFD, (id_t)h->pidfd, &si, WEXITED) < 0)
		if (errno != EINTR)
			return -errno;
	h->pid = 0;
	if (ret)
		*ret = si;
	return 0;
}

/* Kills the helper and its process group. Not reaped yet, it keeps its pid, so the group's id
 * cannot have been given to anyone else. A helper that left its group is still killed. */
static void helper_kill(const struct helper *h)
{
	(void)kill(-h->pid, SIGKILL);
	(void)syscall(SYS_pidfd_send_signal, h->pidfd, SIGKILL, NULL, 0);
}

static void helper_done(struct helper *h)
{
	if (h->pid > 0) {
		helper_kill(h);
		(void)helper_reap(h, NULL);
	}
	h->pidfd = al_close(h->pidfd);
	h->out_fd = al_close(h->out_fd);
}

/* Runs argv[0] with stdin and stderr on /dev/null and stdout a pipe. On failure to start it, the
 * child is reaped already. */
static int helper_spawn(char *const *argv, char **paths, struct helper *h, struct al_error *err)
{
	_cleanup_(close_pairp) int out[2] = {-EBADF, -EBADF}, report[2] = {-EBADF, -EBADF};
	_cleanup_close_ int null_fd = -EBADF;
	int r;

	null_fd = open("/dev/null", O_RDWR | O_CLOEXEC | O_NOCTTY);
	if (null_fd < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(report, O_CLOEXEC) < 0)
		return al_error_set_errno(err, -errno, "cannot prepare to run \"%s\"", argv[0]);
	r = fd_move_above_stdio(&null_fd);
	if (r >= 0)
		r = fd_move_above_stdio(&out[1]);
	if (r >= 0)
		r = fd_move_above_stdio(&report[1]);
	if (r >= 0)
		r = al_fd_nonblock(out[0], true);
	if (r >= 0)
		r = helper_clone(&(struct helper_exec){.argv = argv,
						       .paths = paths,
						       .null_fd = null_fd,
						       .out_fd = out[1],
						       .report_fd = report[1],
						       .parent = getpid()},
				 &h->pidfd);
	if (r < 0)
		return al_error_set_errno(err, r, "cannot start \"%s\"", argv[0]);
	h->pid = r;
	out[1] = al_close(out[1]);
	report[1] = al_close(report[1]);
	r = helper_exec_result(report[0]);
	if (r < 0) {
		(void)helper_reap(h, NULL);
		return al_error_set_errno(err, r, "cannot run \"%s\"", argv[0]);
	}
	h->out_fd = TAKE_FD(out[0]);
	return 0;
}

static uint64_t now_usec(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* Reads the helper's stdout until it exits, or -ETIMEDOUT at deadline. All it printed before it
 * exited is in the pipe by then; a process it left behind holding the pipe is not waited for. */
static int helper_collect(struct helper *h, uint64_t deadline, struct value *v)
{
	struct pollfd p[] = {
	    {.fd = h->out_fd, .events = POLLIN},
	    {.fd = h->pidfd, .events = POLLIN},
	};
	uint64_t left;
	int r;

	for (;;) {
		left = deadline - MIN(now_usec(), deadline);
		if (left == 0)
			return -ETIMEDOUT;
		if (ppoll(p, ELEMENTSOF(p),
			  &(struct timespec){.tv_sec = (time_t)(left / 1000000),
					     .tv_nsec = (long)(left % 1000000) * 1000},
			  NULL) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (p[0].revents) {
			r = value_read(v, h->out_fd);
			if (r < 0)
				return r;
			if (r > 0)
				p[0].fd = -1; /* its end: poll() ignores it now */
		}
		if (p[1].revents && p[0].fd >= 0)
			return MIN(value_read(v, h->out_fd), 0);
		if (p[1].revents)
			return 0;
	}
}

static int helper_status(const char *name, const siginfo_t *si, struct al_error *err)
{
	switch (si->si_code) {
	case CLD_EXITED:
		if (si->si_status == 0)
			return 0;
		return al_error_set(err, -EIO, "\"%s\" exited with status %d", name, si->si_status);
	case CLD_KILLED:
	case CLD_DUMPED:
		return al_error_set(err, -EIO, "\"%s\" was killed by signal %d", name,
				    si->si_status);
	default:
		return al_error_set(err, -EIO, "\"%s\" ended in an unknown way", name);
	}
}

/* Runs the helper until it exits or its time is up, reaping it either way. */
static int helper_run(char *const *argv, char **paths, uint64_t timeout, struct value *v,
		      struct al_error *err)
{
	_cleanup_(helper_done) struct helper h = {.pidfd = -EBADF, .out_fd = -EBADF};
	uint64_t deadline = now_usec() + timeout;
	siginfo_t si = {0};
	int r;

	r = helper_spawn(argv, paths, &h, err);
	if (r < 0)
		return r;
	r = helper_collect(&h, deadline, v);
	if (r == -ETIMEDOUT)
		return al_error_set(err, r, "\"%s\" did not finish within %" PRIu64 " ms", argv[0],
				    timeout / 1000);
	if (r == -EFBIG)
		return value_error(err, r, "the output of \"%s\"", argv[0]);
	if (r < 0)
		return al_error_set_errno(err, r, "cannot read the output of \"%s\"", argv[0]);
	/* -ECHILD: this process ignores SIGCHLD, or reaps children it did not start. */
	r = helper_reap(&h, &si);
	if (r < 0)
		return al_error_set_errno(err, r, "cannot get the exit status of \"%s\"", argv[0]);
	return helper_status(argv[0], &si, err);
}

static int read_command(const struct broker_sources *s, const struct policy_credential *cr,
			struct broker_secret **ret, struct al_error *err)
{
	char *const *argv = cr->source_argv.items;
	_cleanup_(strv_freep) char **paths = NULL;
	_cleanup_(value_done) struct value v = {};
	int r;

	if (cr->source_argv.n == 0 || argv[0][0] == '\0')
		return al_error_set(err, -EINVAL, "the command is empty");
	if (argv[0][0] != '/' && strchr(argv[0], '/'))
		return al_error_set(err, -EINVAL, "\"%s\" is a relative path", argv[0]);
	r = exec_candidates(argv[0], &paths);
	if (r >= 0)
		r = value_init(&v);
	if (r < 0)
		return al_error_set_errno(err, r, "cannot prepare to run \"%s\"", argv[0]);
	r = helper_run(argv, paths, s->command_timeout_usec ?: BROKER_COMMAND_TIMEOUT_USEC, &v,
		       err);
	if (r < 0)
		return r;
	r = value_take(&v, ret);
	if (r < 0)
		return value_error(err, r, "the output of \"%s\"", argv[0]);
	return 0;
}

/* ---- keyring ---- */

static int keyring_error(struct al_error *err, int r, const char *desc)
{
	switch (r) {
	case -ENOKEY:
		return al_error_set(err, -ENOENT, "no user key \"%s\" in this process's keyrings",
				    desc);
	case -EACCES:
		return al_error_set(err, r, "not allowed to read user key \"%s\"", desc);
	default:
		return al_error_set_errno(err, r, "cannot read user key \"%s\"", desc);
	}
}

/* A "user" key found in the thread's, process's or session's keyrings. request_key() without
 * callout information only searches: it never asks user space to make the key. */
static int read_keyring(const struct policy_credential *cr, struct broker_secret **ret,
			struct al_error *err)
{
	const char *desc = cr->source_key ? cr->source_key : cr->name;
	_cleanup_(value_done) struct value v = {};
	long id, n;
	int r;

	id = syscall(SYS_request_key, "user", desc, NULL, 0);
	if (id < 0)
		return keyring_error(err, -errno, desc);
	r = value_init(&v);
	if (r < 0)
		return keyring_error(err, r, desc);
	/* The key's size comes back even when it does not fit. */
	n = syscall(SYS_keyctl, KEYCTL_READ, id, v.buf->data, (size_t)VALUE_CAP);
	if (n < 0)
		return keyring_error(err, -errno, desc);
	r = secret_copy(v.buf->data, (size_t)n, ret);
	if (r < 0)
		return value_error(err, r, "user key \"%s\"", desc);
	return 0;
}

/* ---- all sources ---- */

static int read_source(const struct broker_sources *s, const struct policy_credential *cr,
		       struct broker_secret **ret, struct al_error *err)
{
	switch (cr->source) {
	case POLICY_CRED_SOURCE_VAULT:
		return read_vault(s, cr, ret, err);
	case POLICY_CRED_SOURCE_ENV:
		return read_env(cr, ret, err);
	case POLICY_CRED_SOURCE_FILE:
		return read_file(cr, ret, err);
	case POLICY_CRED_SOURCE_COMMAND:
		return read_command(s, cr, ret, err);
	case POLICY_CRED_SOURCE_KEYRING:
		return read_keyring(cr, ret, err);
	}
	return al_error_set(err, -EINVAL, "unknown source type %d", (int)cr->source);
}

int broker_source_read(const struct broker_sources *s, const struct policy_credential *cr,
		       struct broker_secret **ret, struct al_error *err)
{
	struct broker_secret *v = NULL;
	struct al_error e = {};
	const char *type;
	int r;

	type = policy_cred_source_to_string(cr->source);
	if (sodium_init() < 0)
		return al_error_set(err, -EIO, "credential %s: cannot initialise libsodium",
				    cr->name);
	r = read_source(s, cr, &v, &e);
	if (r < 0) {
		if (e.code == 0)
			(void)al_error_set_errno(&e, r, "cannot read it");
		return al_error_set(err, r, "credential %s: %s source: %s", cr->name,
				    type ? type : "unknown", e.msg);
	}
	*ret = v;
	return 0;
}
