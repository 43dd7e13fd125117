#define LOG_MODULE "launcher"

/* The other end of a session's control socket: `airlock session exec|stop|checkpoint|restore`.
 * A command's stdio are this process's pipes, handed to the session's pid 1 through the socket:
 * its output comes here directly, capped like a run's. */

#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/fd-util.h"
#include "common/path-util.h"
#include "common/socket-util.h"
#include "launcher/launcher-internal.h"

#define STOP_WAIT_MSEC 10000
/* After the command ended, its output is read as long as it keeps coming this fast: a process it
 * left running in the session may hold its stdout open for ever. */
#define DRAIN_IDLE_MSEC 100
#define DRAIN_MAX_USEC (1000 * 1000) /* and for this long at most */

static int session_dir(const char *id, char *buf, size_t size, struct al_error *err)
{
	char base[PATH_MAX];
	int r;

	if (!launcher_session_id_is_valid(id))
		return al_error_set(err, -EINVAL, "\"%s\" is not a session id", id);
	r = launcher_session_base(base, sizeof(base));
	if (r < 0)
		return al_error_set_errno(err, r, "No folder for session state");
	/* Every session command clears what killed supervisors left (folders, cgroups). */
	launcher_session_remove_stale(base);
	if ((size_t)snprintf(buf, size, "%s/%s", base, id) >= size)
		return al_error_set(err, -ENAMETOOLONG, "Session path too long");
	return 0;
}

static int connect_session(const char *id, int *ret, struct al_error *err)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char dir[PATH_MAX];
	int fd, r;

	r = session_dir(id, dir, sizeof(dir), err);
	if (r < 0)
		return r;
	if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/control", dir) >=
	    sizeof(sa.sun_path))
		return al_error_set(err, -ENAMETOOLONG, "Session path too long");
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return al_error_set_errno(err, -errno, "Failed to create a socket");
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		r = -errno;
		(void)al_close(fd);
		if (r == -ENOENT || r == -ECONNREFUSED)
			return al_error_set(err, -ENOENT, "No session %s", id);
		return al_error_set_errno(err, r, "Failed to reach session %s", id);
	}
	*ret = fd;
	return 0;
}

static int push(FILE *f, const char *s)
{
	return fwrite(s, 1, strlen(s) + 1, f) == strlen(s) + 1 ? 0 : -ENOMEM;
}

static int push_vector(FILE *f, char *const *v)
{
	char num[32];
	size_t n = 0;
	int r;

	while (v && v[n])
		n++;
	(void)snprintf(num, sizeof(num), "%zu", n);
	r = push(f, num);
	for (size_t i = 0; r >= 0 && i < n; i++)
		r = push(f, v[i]);
	return r;
}

static int push_files(FILE *f, const char *kind, const struct launcher_file *files, size_t n)
{
	char num[32];
	int r = 0;

	for (size_t i = 0; r >= 0 && i < n; i++) {
		(void)snprintf(num, sizeof(num), "%zu", files[i].len);
		r = push(f, kind);
		if (r >= 0)
			r = push(f, files[i].name);
		if (r >= 0)
			r = push(f, files[i].executable ? "x" : "-");
		if (r >= 0)
			r = push(f, num);
		if (r >= 0 && files[i].len > 0 &&
		    fwrite(files[i].data, 1, files[i].len, f) != files[i].len)
			r = -ENOMEM;
	}
	return r;
}

/* The request for the session's pid 1 (launcher_init_session_main() has its format), put
 * together in memory and written to its memfd at once: a system call for each string costs. */
static int make_payload(const struct launcher_session_exec *x, int *ret)
{
	_cleanup_close_ int fd = -EBADF;
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	char num[32];
	FILE *f;
	int r;

	f = open_memstream(&text, &len);
	if (!f)
		return -ENOMEM;
	r = push_vector(f, x->argv);
	if (r >= 0)
		r = push_vector(f, x->env);
	if (r >= 0)
		r = push(f, x->result_path ? x->result_path : "");
	if (r >= 0)
		r = push(f, x->dir ? x->dir : "");
	(void)snprintf(num, sizeof(num), "%zu", x->n_files + x->n_workspace_files);
	if (r >= 0)
		r = push(f, num);
	if (r >= 0)
		r = push_files(f, "d", x->files, x->n_files);
	if (r >= 0)
		r = push_files(f, "w", x->workspace_files, x->n_workspace_files);
	if (r >= 0)
		r = push_vector(f, x->prelude);
	if (fclose(f) != 0 && r >= 0)
		r = -ENOMEM;
	if (r < 0)
		return r;
	fd = memfd_create("airlock-exec", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = al_write_all(fd, text, len);
	if (r >= 0 && lseek(fd, 0, SEEK_SET) < 0)
		r = -errno;
	if (r < 0)
		return r;
	*ret = TAKE_FD(fd);
	return 0;
}

static void fill_result(const struct launcher_session_reply *rep, struct launcher_result *res)
{
	res->exit_code = rep->exit_code;
	res->signal = rep->signal;
	res->exec_error = rep->exec_error;
	res->timed_out = rep->timed_out;
	res->oom_killed = rep->oom_killed;
	res->prelude_failed = rep->prelude_failed;
	res->duration_usec = rep->duration_usec;
	(void)snprintf(res->policy_hash, sizeof(res->policy_hash), "%s", rep->policy_hash);
	res->violations = calloc(MAX(rep->n_violations, 1u), sizeof(*res->violations));
	if (!res->violations)
		return;
	res->n_violations = MIN(rep->n_violations, (uint32_t)LAUNCHER_SESSION_VIOLATIONS_MAX);
	memcpy(res->violations, rep->violations, res->n_violations * sizeof(*res->violations));
}

/* A command's streams on this side. */
struct exec_io {
	struct launcher_stream out, err, in;
	const struct launcher_session_exec *x;
	struct launcher_result *result;
	/* With a terminal: this process's, and its SIGWINCH; the master, once it came. */
	struct launcher_terminal term;
	int sig_fd, master;
};

/* Not with an initialiser: that would zero the streams' buffers too (launcher_stream_init()). */
static void exec_io_init(struct exec_io *io, const struct launcher_session_exec *x,
			 struct launcher_result *result)
{
	io->x = x;
	io->result = result;
	io->term = (struct launcher_terminal){.fd = -EBADF, .size_fd = -EBADF};
	io->sig_fd = io->master = -EBADF;
	launcher_stream_init(&io->out, -EBADF, false, -EBADF, false, NULL, 0);
	launcher_stream_init(&io->err, -EBADF, false, -EBADF, false, NULL, 0);
	launcher_stream_init(&io->in, -EBADF, false, -EBADF, false, NULL, 0);
}

/* The command's terminal came: its output takes the place of the stdout pipe (which nothing
 * writes to now), and the caller's input goes into it. */
static int terminal_ready(struct exec_io *io, int master)
{
	io->master = master;
	return launcher_terminal_relay(&io->term, master, io->x->stdin_fd,
				       io->x->capture ? &io->result->out : NULL, &io->out, &io->in);
}

/* A signal for the command goes to the session (while it runs); a new size to its terminal. */
static void on_signal(struct exec_io *io, int sock, bool replied)
{
	struct signalfd_siginfo si;

	while (read(io->sig_fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		struct launcher_session_request req = {.op = LAUNCHER_SESSION_SIGNAL,
						       .signo = (int32_t)si.ssi_signo};

		/* SIGCONT: the loop follows the terminal (launcher_terminal_follow()). */
		if (si.ssi_signo == SIGWINCH)
			launcher_terminal_resize(&io->term, io->master);
		else if (si.ssi_signo != SIGCONT && !replied)
			(void)al_send_fds(sock, &req, sizeof(req), NULL, 0);
	}
}

/* Moves output until the reply came and the output ended (or went quiet after the reply). */
static int pump(int sock, struct exec_io *io, struct launcher_session_reply *rep, int *result_fd)
{
	bool replied = false;
	uint64_t replied_at = 0;
	int r;

	for (;;) {
		struct pollfd pfd[9];
		int n, timeout;

		if (replied &&
		    ((launcher_stream_done(&io->out) && launcher_stream_done(&io->err)) ||
		     launcher_now_usec() - replied_at > DRAIN_MAX_USEC))
			return 0;
		pfd[0] = (struct pollfd){.fd = replied ? -1 : sock, .events = POLLIN};
		launcher_stream_poll(&io->out, &pfd[1], &pfd[2]);
		launcher_stream_poll(&io->err, &pfd[3], &pfd[4]);
		launcher_stream_poll(&io->in, &pfd[5], &pfd[6]);
		timeout = replied ? DRAIN_IDLE_MSEC : -1;
		if (io->master >= 0 && !launcher_terminal_follow(&io->term)) {
			pfd[5].fd = -1; /* the foreground's input, until fg */
			timeout = replied ? timeout : LAUNCHER_TERMINAL_RECHECK_MSEC;
		}
		pfd[7] = (struct pollfd){.fd = io->sig_fd, .events = POLLIN};
		pfd[8] = (struct pollfd){.fd = io->x->in_thread ? io->x->cancel_fd : -1,
					 .events = POLLRDHUP};
		n = poll(pfd, ELEMENTSOF(pfd), timeout);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0 && replied)
			return 0; /* quiet since the end: what is left is a background process's */
		if (n == 0)
			continue; /* in the background: look at the terminal again */
		launcher_stream_handle(&io->out, pfd[1].revents, pfd[2].revents);
		launcher_stream_handle(&io->err, pfd[3].revents, pfd[4].revents);
		launcher_stream_handle(&io->in, pfd[5].revents, pfd[6].revents);
		launcher_terminal_pass_eof(&io->term, io->master, &io->in);
		if (pfd[7].revents)
			on_signal(io, sock, replied);
		/* Closing the connection is what kills the command. */
		if (pfd[8].revents)
			return -ECANCELED;
		if (pfd[0].revents) {
			ssize_t k = al_recv_fds(sock, rep, sizeof(*rep), result_fd, 1);

			if (k < 0)
				return k == -EPIPE ? -ECONNRESET : (int)k;
			if ((size_t)k != sizeof(*rep))
				return -EBADMSG;
			rep->err.msg[sizeof(rep->err.msg) - 1] = '\0';
			rep->policy_hash[sizeof(rep->policy_hash) - 1] = '\0';
			if (rep->terminal) {
				if (!io->x->terminal || io->master >= 0 || *result_fd < 0)
					return -EBADMSG;
				r = terminal_ready(io, TAKE_FD(*result_fd));
				if (r < 0)
					return r;
				continue;
			}
			replied = true;
			replied_at = launcher_now_usec();
		}
	}
}

/* The command's stdin on the session's side, and io->in to fill it: a file or terminal is copied
 * through a pipe, as a run's is (launcher_stdin_is_copied()); with a terminal of its own, the
 * command reads that, and stdin is copied into it once it came (terminal_ready()). */
static int exec_stdin(struct exec_io *io, int *inp)
{
	const struct launcher_session_exec *x = io->x;
	int fd;

	launcher_stream_init(&io->in, -EBADF, false, -EBADF, false, NULL, 0);
	if (x->terminal || x->stdin_fd < 0)
		fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	else if (!launcher_stdin_is_copied(x->stdin_fd))
		fd = fcntl(x->stdin_fd, F_DUPFD_CLOEXEC, 3);
	else if (pipe2(inp, O_CLOEXEC) < 0)
		fd = -1;
	else {
		launcher_stream_init(&io->in, x->stdin_fd, false, inp[1], true, NULL, 0);
		fd = inp[0];
	}
	return fd < 0 ? -errno : fd;
}

/* The signals passed on to the command, and with a terminal SIGWINCH and SIGCONT, are read from
 * a signalfd; with a terminal SIGTTIN/SIGTTOU are ignored (in the background, reading the
 * terminal fails instead of stopping this process). */
static int exec_signals_setup(struct exec_io *io, struct launcher_session_request *req,
			      sigset_t *old)
{
	sigset_t set;

	launcher_signals_forwarded(&set);
	if (io->x->terminal) {
		launcher_terminal_init(&io->term);
		req->flags |= LAUNCHER_EXEC_TERMINAL;
		req->tty = io->term.spec;
		(void)signal(SIGTTIN, SIG_IGN);
		(void)signal(SIGTTOU, SIG_IGN);
		(void)sigaddset(&set, SIGWINCH);
		(void)sigaddset(&set, SIGCONT);
	}
	if (sigprocmask(SIG_BLOCK, &set, old) < 0)
		return -errno;
	io->sig_fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (io->sig_fd < 0) {
		int r = -errno;

		(void)sigprocmask(SIG_SETMASK, old, NULL);
		return r;
	}
	return 0;
}

int launcher_session_exec(const char *id, const struct launcher_session_exec *x,
			  struct launcher_result *ret, struct al_error *err)
{
	struct launcher_session_request req = {
	    .op = LAUNCHER_SESSION_EXEC,
	    .timeout_usec = x->timeout_usec,
	    .kill_grace_usec = x->kill_grace_usec,
	};
	struct launcher_session_reply rep = {0};
	_cleanup_close_ int sock = -EBADF, payload = -EBADF, in = -EBADF, result = -EBADF;
	int out[2] = {-EBADF, -EBADF}, errp[2] = {-EBADF, -EBADF}, inp[2] = {-EBADF, -EBADF},
	    fds[4];
	/* On the heap: its three chunk buffers (192 KiB) on a thread's stack would push every
	 * deeper frame onto pages faulted in afresh for each of serve's connections. */
	_cleanup_free_ struct exec_io *io = malloc(sizeof(*io));
	sigset_t old_mask;
	int connected, r;

	*ret = (struct launcher_result){0};
	if (!io)
		return al_error_set_errno(err, -ENOMEM, "Out of memory");
	exec_io_init(io, x, ret);
	r = make_payload(x, &payload);
	if (r < 0)
		return al_error_set_errno(err, r, "Failed to write the request");
	if (x->in_thread && x->terminal)
		return al_error_set(err, -EINVAL, "A terminal is not for a thread of a service");
	r = x->in_thread ? 0 : exec_signals_setup(io, &req, &old_mask);
	if (r < 0)
		return al_error_set_errno(err, r, "Failed to set up the command's signals");
	in = exec_stdin(io, inp);
	if (in < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
		r = in < 0 ? in : -errno;
		(void)al_close(out[0]), (void)al_close(out[1]);
		launcher_stream_close(&io->in);
		r = al_error_set_errno(err, r, "Failed to create the command's stdio");
		goto out;
	}
	launcher_stream_init(&io->out, out[0], true, STDOUT_FILENO, false,
			     x->capture ? &ret->out : NULL, LAUNCHER_CAPTURE_MAX);
	launcher_stream_init(&io->err, errp[0], true, STDERR_FILENO, false,
			     x->capture ? &ret->err : NULL, LAUNCHER_CAPTURE_MAX);
	launcher_stream_open_nonblocking(&io->out);
	launcher_stream_open_nonblocking(&io->err);
	launcher_stream_open_nonblocking(&io->in);
	fds[0] = payload, fds[1] = in, fds[2] = out[1], fds[3] = errp[1];
	/* Connected once everything is ready: the supervisor wakes for the connection and finds
	 * the request with it, instead of waking again for the request. */
	connected = connect_session(id, &sock, err);
	r = connected >= 0 ? al_send_fds(sock, &req, sizeof(req), fds, ELEMENTSOF(fds)) : connected;
	/* Only the command may hold the write ends now: its end is their EOF. */
	(void)al_close(out[1]);
	(void)al_close(errp[1]);
	if (r >= 0)
		r = pump(sock, io, &rep, &result);
	launcher_stream_close(&io->out);
	launcher_stream_close(&io->err);
	launcher_stream_close(&io->in);
	if (connected < 0)
		goto out; /* err says why */
	if (r == -ECANCELED) {
		r = al_error_set(err, r, "The caller went away: the command was killed");
		goto out;
	}
	if (r < 0) {
		r = al_error_set_errno(err, r, "The session ended during the command");
		goto out;
	}
	if (rep.error < 0) {
		*err = rep.err;
		r = rep.error;
		goto out;
	}
	/* It could not start for a reason of its own (its files): an error, not a status. */
	if (rep.exec_error < 0 && rep.err.msg[0]) {
		rep.err.msg[sizeof(rep.err.msg) - 1] = '\0';
		*err = rep.err;
		r = rep.exec_error;
		goto out;
	}
	fill_result(&rep, ret);
	if (result >= 0)
		launcher_read_output(result, &ret->output);
out:
	launcher_terminal_restore(&io->term);
	(void)al_close(io->master);
	if (io->sig_fd >= 0) {
		(void)al_close(io->sig_fd);
		(void)sigprocmask(SIG_SETMASK, &old_mask, NULL);
	}
	return r;
}

/* One request without fds, one reply. */
static int simple_request(const char *id, const struct launcher_session_request *req,
			  struct al_error *err)
{
	struct launcher_session_reply rep = {0};
	_cleanup_close_ int sock = -EBADF;
	int fd = -EBADF, r;
	ssize_t k;

	r = connect_session(id, &sock, err);
	if (r < 0)
		return r;
	r = al_send_fds(sock, req, sizeof(*req), NULL, 0);
	if (r < 0)
		return al_error_set_errno(err, r, "Failed to reach session %s", id);
	k = al_recv_fds(sock, &rep, sizeof(rep), &fd, 1);
	(void)al_close(fd);
	if (k < 0 || (size_t)k != sizeof(rep))
		return al_error_set(err, -ECONNRESET, "Session %s did not answer", id);
	rep.err.msg[sizeof(rep.err.msg) - 1] = '\0';
	if (rep.error < 0) {
		*err = rep.err;
		if (!err->msg[0])
			(void)al_error_set_errno(err, rep.error, "Session %s refused", id);
		return rep.error;
	}
	return 0;
}

int launcher_session_info_of(const char *id, struct launcher_session_info *ret,
			     struct al_error *err)
{
	char dir[PATH_MAX];
	int r;

	r = session_dir(id, dir, sizeof(dir), err);
	if (r < 0)
		return r;
	r = launcher_session_read_info(dir, ret);
	if (r < 0)
		return al_error_set(err, -ENOENT, "No session %s", id);
	return 0;
}

int launcher_session_policy(const char *id, struct policy **ret, struct al_error *err)
{
	_cleanup_free_ char *path = NULL;
	char dir[PATH_MAX];
	int r;

	r = session_dir(id, dir, sizeof(dir), err);
	if (r < 0)
		return r;
	if (asprintf(&path, "%s/policy.json", dir) < 0)
		return -ENOMEM;
	r = policy_load_file(path, ret, err);
	if (r == -ENOENT || (r < 0 && access(dir, F_OK) < 0))
		return al_error_set(err, -ENOENT, "No session %s", id);
	return r;
}

/* The ppid field of /proc/PID/stat (read through the process's folder), or -errno. */
static pid_t proc_ppid(int proc_dir)
{
	_cleanup_free_ char *stat = NULL;
	const char *paren;
	int ppid;

	if (al_read_file_at(proc_dir, "stat", 4096, &stat, NULL) < 0)
		return -ESRCH;
	/* "PID (COMM) STATE PPID ...": COMM may hold anything, ')' included. */
	paren = strrchr(stat, ')');
	if (!paren || sscanf(paren + 1, " %*c %d", &ppid) != 1)
		return -EBADMSG;
	return (pid_t)ppid;
}

int launcher_session_workspace(const char *id, int *ret, struct al_error *err)
{
	struct launcher_session_info info;
	struct open_how how = {
	    .flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
	    .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	_cleanup_close_ int proc = -EBADF, root = -EBADF, ws = -EBADF, sock = -EBADF;
	_cleanup_(policy_freep) struct policy *p = NULL;
	char path[64];
	struct statfs sfs;
	int r;

	r = launcher_session_info_of(id, &info, err);
	if (r < 0)
		return r;
	/* A session that answers is alive: its pid 1 is not a pid used again. */
	r = connect_session(id, &sock, err);
	if (r < 0)
		return r;
	if (info.init <= 0)
		return al_error_set(err, -ENOENT, "Session %s has no sandbox yet", id);
	(void)snprintf(path, sizeof(path), "/proc/%d", (int)info.init);
	proc = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	/* The folder pins the process: if the one that had the pid ended, reads in it fail. */
	if (proc < 0 || proc_ppid(proc) != info.pid)
		return al_error_set(err, -ENOENT, "Session %s has no sandbox", id);
	root = openat(proc, "root", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return al_error_set_errno(err, -errno, "Failed to open the sandbox of session %s",
					  id);
	r = launcher_session_policy(id, &p, err);
	if (r < 0)
		return r;
	/* As the sandbox sees it, no link followed: an absolute one would lead into this
	 * process's root. */
	ws = (int)syscall(SYS_openat2, root, p->workspace.mount, &how, sizeof(how));
	if (ws < 0)
		return al_error_set_errno(err, -errno, "Failed to open the workspace of session %s",
					  id);
	/* Its workspace filesystem, never what lies under it. */
	if (fstatfs(ws, &sfs) < 0 || sfs.f_type != FUSE_SUPER_MAGIC)
		return al_error_set(err, -ENOENT, "Session %s has no workspace filesystem", id);
	*ret = TAKE_FD(ws);
	return 0;
}

/* A checkpoint or restore (op) of the checkpoint name. */
static int tree_request(const char *id, uint32_t op, const char *name, struct al_error *err)
{
	struct launcher_session_request req = {.op = op};

	if (strlen(name) >= sizeof(req.name))
		return al_error_set(err, -EINVAL, "The checkpoint name is too long");
	(void)snprintf(req.name, sizeof(req.name), "%s", name);
	return simple_request(id, &req, err);
}

int launcher_session_checkpoint(const char *id, const char *name, struct al_error *err)
{
	return tree_request(id, LAUNCHER_SESSION_CHECKPOINT, name, err);
}

int launcher_session_restore(const char *id, const char *name, struct al_error *err)
{
	return tree_request(id, LAUNCHER_SESSION_RESTORE, name, err);
}

int launcher_session_stop(const char *id, struct al_error *err)
{
	struct launcher_session_request req = {.op = LAUNCHER_SESSION_STOP};
	struct launcher_session_info info;
	char dir[PATH_MAX];
	struct stat st;
	int r;

	r = session_dir(id, dir, sizeof(dir), err);
	if (r < 0)
		return r;
	if (lstat(dir, &st) < 0)
		return al_error_set(err, -ENOENT, "No session %s", id);
	r = simple_request(id, &req, err);
	/* Asked or not, the session is gone when its folder is: its supervisor removes it last. */
	for (int waited = 0; r >= 0 && waited < STOP_WAIT_MSEC; waited += 10) {
		if (lstat(dir, &st) < 0)
			return 0;
		(void)usleep(10000);
	}
	/* It does not answer, or does not end: it is killed (its sandbox dies with it). */
	if (launcher_session_read_info(dir, &info) >= 0 && info.pid > 0)
		(void)kill(info.pid, SIGKILL);
	al_path_remove_tree(dir);
	return 0;
}
