#define LOG_MODULE "launcher"

/* A persistent session, airlock's side. The sandbox is made as for a run, but its pid 1 runs
 * commands on request (init-session.c). This process, the session's supervisor, serves a control
 * socket in the session's state folder: each connection asks one thing (run a command with the
 * caller's stdio, stop, checkpoint, restore). It enforces each command's timeout, reports the
 * violations seen while it ran, and ends the session when asked, when its TTL passes or when its
 * owner (the process that started it) is gone. The state folder is removed when it ends, and by
 * any later session command when its supervisor was killed (its cgroups, by their watcher, see
 * cgroup.c). */

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/fd-util.h"
#include "common/log.h"
#include "common/path-util.h"
#include "common/socket-util.h"
#include "launcher/launcher-internal.h"

#define CONNS_MAX 64
#define CONN_IDLE_USEC (10 * 1000000ULL) /* a connection that asks nothing is closed */
#define SWEEP_USEC 1000000ULL		 /* stale sessions are looked for this often at most */

struct conn {
	int fd;	   /* -EBADF: free (or gone, while its command or copy finishes) */
	int pidfd; /* the command, once it runs */
	uint64_t accepted;
	uint32_t exec_id;
	uint32_t op;
	uint64_t start, deadline, grace;
	bool timed_out, killed, gone, oom_before;
	int exec_error;
	struct al_error exec_err;
	size_t n_violations;
	uint64_t *counts; /* the session's violation counts when the command started */
	char name[LAUNCHER_CHECKPOINT_NAME_MAX]; /* of a checkpoint or restore */
};

struct launcher_session {
	char id[LAUNCHER_SESSION_ID_MAX];
	char *dir;
	int listen_fd, owner_fd, timer_fd, ready_fd;
	pid_t owner;
	uint64_t ttl_deadline;
	uint32_t next_exec;
	struct conn conns[CONNS_MAX];
	struct conn *tree_op; /* the checkpoint or restore under way */
	bool ended;
};

int launcher_session_base(char *buf, size_t size)
{
	return al_state_dir(AL_STATE_SESSIONS, buf, size);
}

bool launcher_session_id_is_valid(const char *id)
{
	size_t n = strspn(id, "abcdefghijklmnopqrstuvwxyz0123456789-");

	return n > 0 && id[n] == '\0' && n < LAUNCHER_SESSION_ID_MAX && id[0] != '-';
}

static int open_listener(struct launcher_session *s, struct al_error *err)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};

	if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/control", s->dir) >=
	    sizeof(sa.sun_path))
		return al_error_set(err, -ENAMETOOLONG, "The session folder's path is too long");
	s->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s->listen_fd < 0)
		return al_error_set_errno(err, -errno, "Failed to create the session's socket");
	if (bind(s->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(s->listen_fd, 16) < 0)
		return al_error_set_errno(err, -errno, "Failed to listen on %s", sa.sun_path);
	return 0;
}

int launcher_session_new(const struct launcher_session_options *o, struct launcher_session **ret,
			 struct al_error *err)
{
	_cleanup_(launcher_session_freep) struct launcher_session *s = NULL;
	char base[PATH_MAX];
	uint32_t rnd;
	int r;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->listen_fd = s->owner_fd = s->timer_fd = s->ready_fd = -EBADF;
	for (size_t i = 0; i < CONNS_MAX; i++)
		s->conns[i] = (struct conn){.fd = -EBADF, .pidfd = -EBADF};
	r = launcher_session_base(base, sizeof(base));
	if (r < 0)
		return al_error_set_errno(err, r, "No folder for session state (set HOME)");
	r = al_mkdir_p(base, 0700);
	if (r < 0)
		return al_error_set_errno(err, r, "Failed to create %s", base);
	launcher_session_remove_stale(base);
	if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
		return al_error_set_errno(err, -errno, "Failed to pick a session id");
	(void)snprintf(s->id, sizeof(s->id), "s-%08x", rnd);
	if (asprintf(&s->dir, "%s/%s", base, s->id) < 0)
		return -ENOMEM;
	if (mkdir(s->dir, 0700) < 0) {
		r = -errno;
		s->dir = (free(s->dir), NULL);
		return al_error_set_errno(err, r, "Failed to create the session's folder");
	}
	r = open_listener(s, err);
	if (r < 0)
		return r;
	if (o->owner > 0) {
		s->owner = o->owner;
		s->owner_fd = (int)syscall(SYS_pidfd_open, o->owner, 0);
		if (s->owner_fd < 0)
			return al_error_set_errno(err, -errno, "The owner (pid %d) is gone",
						  (int)o->owner);
	}
	s->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (s->timer_fd < 0)
		return al_error_set_errno(err, -errno, "Failed to create the session's timer");
	if (o->ttl_usec > 0)
		s->ttl_deadline = launcher_now_usec() + o->ttl_usec;
	s->ready_fd = o->ready_fd;
	*ret = TAKE_PTR(s);
	return 0;
}

void launcher_session_fail(struct launcher_session *s, const char *message)
{
	if (s->ready_fd < 0)
		return;
	(void)al_write_all(s->ready_fd, "!", 1);
	(void)al_write_all(s->ready_fd, message, strlen(message));
	s->ready_fd = al_close(s->ready_fd);
}

const char *launcher_session_id(const struct launcher_session *s)
{
	return s->id;
}

static void conn_close(struct conn *c)
{
	c->fd = al_close(c->fd);
	c->pidfd = al_close(c->pidfd);
	free(c->counts);
	*c = (struct conn){.fd = -EBADF, .pidfd = -EBADF};
}

struct launcher_session *launcher_session_free(struct launcher_session *s)
{
	if (!s)
		return NULL;
	for (size_t i = 0; i < CONNS_MAX; i++)
		conn_close(&s->conns[i]);
	s->listen_fd = al_close(s->listen_fd);
	s->owner_fd = al_close(s->owner_fd);
	s->timer_fd = al_close(s->timer_fd);
	s->ready_fd = al_close(s->ready_fd);
	if (s->dir)
		al_path_remove_tree(s->dir);
	free(s->dir);
	free(s);
	return NULL;
}

/* ---- the supervisor's loop ---- */

/* A value for the info file: one line, whatever it holds. */
static void put_value(FILE *f, const char *key, const char *value)
{
	fprintf(f, "%s=", key);
	for (const char *p = value; *p; p++)
		fputc(*p == '\n' || *p == '\r' ? ' ' : *p, f);
	fputc('\n', f);
}

/* The info file `session ls` reads: key=value lines. */
static void write_info(struct launcher_session *s, const struct launcher_session_view *v)
{
	_cleanup_free_ char *path = NULL, *tmp = NULL;
	FILE *f;

	if (asprintf(&path, "%s/info", s->dir) < 0 || asprintf(&tmp, "%s/.info", s->dir) < 0)
		return;
	f = fopen(tmp, "we");
	if (!f)
		return;
	fprintf(f, "id=%s\npid=%d\nstarted=%lld\npolicy_hash=%s\nexpires=%lld\n", s->id,
		(int)getpid(), (long long)time(NULL), v->result->policy_hash,
		s->ttl_deadline
		    ? (long long)(time(NULL) +
				  (time_t)((s->ttl_deadline - launcher_now_usec()) / 1000000))
		    : 0LL);
	/* For `session ls` to tell what it uses: its pid 1 as the host sees it, its memory
	 * cgroup. */
	fprintf(f, "owner=%d\ninit=%d\n", (int)s->owner, (int)v->pid);
	if (launcher_cgroup_memory_dir(v->cgroup))
		put_value(f, "memory_cgroup", launcher_cgroup_memory_dir(v->cgroup));
	put_value(f, "workspace", v->ctx->policy->workspace.root);
	if (fclose(f) == 0)
		(void)rename(tmp, path);
}

static uint64_t next_deadline(const struct launcher_session *s)
{
	uint64_t d = s->ttl_deadline;

	for (size_t i = 0; i < CONNS_MAX; i++) {
		const struct conn *c = &s->conns[i];
		uint64_t t = c->exec_id		    ? c->deadline
			     : c->fd >= 0 && !c->op ? c->accepted + CONN_IDLE_USEC
						    : 0;

		if (t && (!d || t < d))
			d = t;
	}
	return d;
}

static void arm(struct launcher_session *s)
{
	uint64_t d = next_deadline(s), now = launcher_now_usec(), in;
	struct itimerspec its = {0};

	if (d) {
		in = d > now ? d - now : 1;
		its.it_value.tv_sec = (time_t)(in / 1000000);
		its.it_value.tv_nsec = (long)(in % 1000000) * 1000;
	}
	(void)timerfd_settime(s->timer_fd, 0, &its, NULL);
}

/* The session's policy, for its clients to plan requests against (runtimes, labels). */
static void write_policy(struct launcher_session *s, const struct launcher_session_view *v)
{
	_cleanup_free_ char *json = NULL, *path = NULL;
	_cleanup_close_ int fd = -EBADF;

	if (policy_to_canonical_json(v->ctx->policy, &json) < 0 ||
	    asprintf(&path, "%s/policy.json", s->dir) < 0)
		return;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd >= 0)
		(void)al_write_all(fd, json, strlen(json));
}

void launcher_session_on_ready(struct launcher_session *s, const struct launcher_session_view *v)
{
	write_policy(s, v);
	write_info(s, v);
	arm(s);
	if (s->ready_fd >= 0) {
		(void)al_write_all(s->ready_fd, s->id, strlen(s->id));
		s->ready_fd = al_close(s->ready_fd);
	}
}

size_t launcher_session_fill(struct launcher_session *s, struct pollfd *pfd)
{
	size_t n = 0;

	pfd[n++] = (struct pollfd){.fd = s->listen_fd, .events = POLLIN};
	pfd[n++] = (struct pollfd){.fd = s->owner_fd, .events = POLLIN};
	pfd[n++] = (struct pollfd){.fd = s->timer_fd, .events = POLLIN};
	for (size_t i = 0; i < CONNS_MAX; i++)
		pfd[n++] = (struct pollfd){.fd = s->conns[i].fd, .events = POLLIN};
	return n;
}

static void send_reply(struct conn *c, const struct launcher_session_reply *rep, int fd)
{
	(void)al_send_fds(c->fd, rep, sizeof(*rep), &fd, fd >= 0 ? 1 : 0);
	conn_close(c);
}

static void reply_error(struct conn *c, int r, const struct al_error *err)
{
	struct launcher_session_reply rep = {.error = r};

	if (err)
		rep.err = *err;
	else
		(void)al_error_set_errno(&rep.err, r, "Session request failed");
	send_reply(c, &rep, -EBADF);
}

/* The command through its pidfd (sure), and its process group through pid 1 (best effort: a
 * busy pid 1 may leave the message queued). */
static void signal_exec(const struct conn *c, const struct launcher_session_view *v, int sig)
{
	struct launcher_sync_msg m = {
	    .type = LAUNCHER_SYNC_EXEC_SIGNAL, .id = c->exec_id, .value = sig};

	(void)launcher_sync_send(v->sync_fd, &m, -EBADF);
	if (c->pidfd >= 0)
		(void)syscall(SYS_pidfd_send_signal, c->pidfd, sig, NULL, 0);
}

static void start_exec(struct launcher_session *s, struct conn *c,
		       const struct launcher_session_request *req, int *fds,
		       const struct launcher_session_view *v)
{
	struct launcher_sync_msg m = {.type = LAUNCHER_SYNC_EXEC};
	const struct launcher_result *res = v->result;
	int r;

	for (int i = 0; i < 4; i++)
		if (fds[i] < 0)
			return reply_error(c, -EBADMSG, NULL);
	c->counts = calloc(res->n_violations + 1, sizeof(*c->counts));
	if (!c->counts)
		return reply_error(c, -ENOMEM, NULL);
	for (size_t i = 0; i < res->n_violations; i++)
		c->counts[i] = res->violations[i].count;
	c->n_violations = res->n_violations;
	c->oom_before = launcher_cgroup_oom_killed(v->cgroup);
	c->exec_id = m.id = ++s->next_exec ? s->next_exec : ++s->next_exec;
	c->start = launcher_now_usec();
	c->deadline = req->timeout_usec ? c->start + req->timeout_usec : 0;
	c->grace = req->kill_grace_usec;
	m.flags = req->flags & LAUNCHER_EXEC_TERMINAL;
	m.tty = req->tty;
	r = launcher_sync_send_fds(v->sync_fd, &m, fds, 4);
	if (r < 0) {
		c->exec_id = 0;
		return reply_error(c, r, NULL);
	}
	arm(s);
}

static bool is_checkpoint_name(const char *n)
{
	size_t k = strspn(n, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-");

	return k > 0 && n[k] == '\0' && n[0] != '.' && k < LAUNCHER_CHECKPOINT_NAME_MAX;
}

/* A checkpoint is taken into a fresh folder that replaces the old one of its name when done. */
static void start_tree_op(struct launcher_session *s, struct conn *c,
			  const struct launcher_session_request *req,
			  const struct launcher_session_view *v)
{
	struct launcher_sync_msg m = {.type = req->op == LAUNCHER_SESSION_CHECKPOINT
						  ? LAUNCHER_SYNC_CHECKPOINT
						  : LAUNCHER_SYNC_RESTORE};
	_cleanup_free_ char *dir = NULL;
	_cleanup_close_ int fd = -EBADF;
	struct al_error err = {0};
	int r;

	if (!is_checkpoint_name(req->name))
		return reply_error(c, -EINVAL,
				   (al_error_set(&err, -EINVAL,
						 "\"%s\" is not a checkpoint name ([A-Za-z0-9._-], "
						 "not starting with '.')",
						 req->name),
				    &err));
	if (s->tree_op)
		return reply_error(
		    c, -EBUSY,
		    (al_error_set(&err, -EBUSY, "A checkpoint or restore is under way"), &err));
	if (asprintf(&dir, "%s/checkpoints", s->dir) < 0)
		return reply_error(c, -ENOMEM, NULL);
	(void)mkdir(dir, 0700);
	free(dir);
	dir = NULL;
	if (asprintf(&dir, "%s/checkpoints/%s%s", s->dir,
		     m.type == LAUNCHER_SYNC_CHECKPOINT ? ".new-" : "", req->name) < 0)
		return reply_error(c, -ENOMEM, NULL);
	if (m.type == LAUNCHER_SYNC_CHECKPOINT) {
		al_path_remove_tree(dir);
		if (mkdir(dir, 0700) < 0)
			return reply_error(c, -errno, NULL);
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return reply_error(
		    c, -errno,
		    errno == ENOENT
			? (al_error_set(&err, -ENOENT, "No checkpoint \"%s\"", req->name), &err)
			: NULL);
	/* A checkpoint may take what the workspace may hold: its quota. */
	m.size = v->ctx->policy->workspace.quota;
	r = launcher_sync_send(v->sync_fd, &m, fd);
	if (r < 0)
		return reply_error(c, r, NULL);
	c->op = req->op;
	(void)snprintf(c->name, sizeof(c->name), "%s", req->name);
	s->tree_op = c;
}

/* Only the user who started the session (or root) may talk to it, from this supervisor's own pid
 * namespace: a sandboxed process of the same uid that reached the socket anyway (a bind that
 * slipped through) is not a client. */
static bool peer_is_allowed(int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	int r;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return false;
	if (cred.uid != 0 && cred.uid != geteuid())
		return false;
	r = al_socket_peer_in_my_pidns(fd);
	if (r == 1)
		return true;
	if (r == 0)
		log_warning("Refused a connection from pid %d (uid %u): it is in another pid "
			    "namespace (a sandboxed process?)",
			    (int)cred.pid, (unsigned)cred.uid);
	else
		log_warning_errno(r,
				  "Refused a connection from pid %d (uid %u): cannot tell its pid "
				  "namespace (SO_PEERPIDFD needs Linux 6.5): %m",
				  (int)cred.pid, (unsigned)cred.uid);
	return false;
}

static bool conn_is_free(const struct launcher_session *s, const struct conn *c)
{
	return c->fd < 0 && !c->gone && s->tree_op != c;
}

static void on_accept(struct launcher_session *s)
{
	for (;;) {
		int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		struct conn *c = NULL;

		if (fd < 0)
			return;
		for (size_t i = 0; i < CONNS_MAX && !c; i++)
			if (conn_is_free(s, &s->conns[i]))
				c = &s->conns[i];
		if (!c || !peer_is_allowed(fd)) {
			(void)al_close(fd);
			continue;
		}
		c->fd = fd;
		c->accepted = launcher_now_usec();
	}
	arm(s);
}

static void on_request(struct launcher_session *s, struct conn *c,
		       const struct launcher_session_view *v)
{
	struct launcher_session_request req;
	int fds[4];
	ssize_t n;

	n = al_recv_fds(c->fd, &req, sizeof(req), fds, ELEMENTSOF(fds));
	if (n == -EAGAIN)
		return;
	if (n == (ssize_t)sizeof(req) && c->exec_id && req.op == LAUNCHER_SESSION_SIGNAL &&
	    fds[0] < 0) {
		sigset_t forwarded;

		launcher_signals_forwarded(&forwarded);
		if (req.signo > 0 && sigismember(&forwarded, req.signo) == 1)
			signal_exec(c, v, req.signo);
		return;
	}
	if (n < 0 || c->exec_id || c->op) {
		/* The caller went away (or broke the protocol): its command goes too. */
		if (c->exec_id || s->tree_op == c) {
			if (c->exec_id)
				signal_exec(c, v, SIGKILL);
			c->gone = true;
			c->fd = al_close(c->fd);
		} else {
			conn_close(c);
		}
		for (size_t i = 0; n >= 0 && i < ELEMENTSOF(fds); i++)
			fds[i] = al_close(fds[i]);
		return;
	}
	req.name[sizeof(req.name) - 1] = '\0';
	switch (req.op) {
	case LAUNCHER_SESSION_EXEC:
		start_exec(s, c, &req, fds, v);
		break;
	case LAUNCHER_SESSION_CHECKPOINT:
	case LAUNCHER_SESSION_RESTORE:
		start_tree_op(s, c, &req, v);
		break;
	case LAUNCHER_SESSION_STOP:
		s->ended = true;
		send_reply(c, &(struct launcher_session_reply){0}, -EBADF);
		break;
	default:
		reply_error(c, -EOPNOTSUPP, NULL);
	}
	for (size_t i = 0; i < ELEMENTSOF(fds); i++)
		fds[i] = al_close(fds[i]);
}

static void on_timer(struct launcher_session *s, const struct launcher_session_view *v)
{
	uint64_t now = launcher_now_usec(), ticks;

	(void)!read(s->timer_fd, &ticks, sizeof(ticks));
	if (s->ttl_deadline && now >= s->ttl_deadline) {
		log_debug("Session %s: its TTL passed", s->id);
		s->ended = true;
	}
	for (size_t i = 0; i < CONNS_MAX; i++) {
		struct conn *c = &s->conns[i];

		if (c->fd >= 0 && !c->exec_id && !c->op && now >= c->accepted + CONN_IDLE_USEC) {
			conn_close(c);
			continue;
		}
		if (!c->exec_id || !c->deadline || now < c->deadline)
			continue;
		if (!c->timed_out) {
			c->timed_out = true;
			signal_exec(c, v, SIGTERM);
			c->deadline = now + MAX(c->grace, (uint64_t)1);
		} else if (!c->killed) {
			c->killed = true;
			signal_exec(c, v, SIGKILL);
			c->deadline = 0;
		}
	}
	arm(s);
}

void launcher_session_handle(struct launcher_session *s, const struct pollfd *pfd,
			     const struct launcher_session_view *v)
{
	if (pfd[0].revents)
		on_accept(s);
	if (pfd[1].revents) {
		log_debug("Session %s: its owner is gone", s->id);
		s->ended = true;
	}
	if (pfd[2].revents)
		on_timer(s, v);
	for (size_t i = 0; i < CONNS_MAX; i++)
		if (pfd[3 + i].revents && s->conns[i].fd >= 0)
			on_request(s, &s->conns[i], v);
}

/* The violations counted since the command started. */
static void violations_since(const struct conn *c, const struct launcher_result *res,
			     struct launcher_session_reply *rep)
{
	for (size_t i = 0;
	     i < res->n_violations && rep->n_violations < LAUNCHER_SESSION_VIOLATIONS_MAX; i++) {
		uint64_t before = i < c->n_violations ? c->counts[i] : 0;

		if (res->violations[i].count > before) {
			rep->violations[rep->n_violations] = res->violations[i];
			rep->violations[rep->n_violations++].count =
			    res->violations[i].count - before;
		}
	}
}

static void on_exec_end(struct launcher_session *s, const struct launcher_sync_msg *m, int fd,
			const struct launcher_session_view *v)
{
	struct launcher_session_reply rep = {0};
	struct conn *c = NULL;

	for (size_t i = 0; i < CONNS_MAX && !c; i++)
		if (s->conns[i].exec_id == m->id && (s->conns[i].fd >= 0 || s->conns[i].gone))
			c = &s->conns[i];
	if (!c)
		return;
	if (m->type == LAUNCHER_SYNC_EXEC_FAILED) {
		c->exec_error = m->value; /* the STATUS that follows answers */
		c->exec_err = m->err;
		return;
	}
	if (c->gone) {
		conn_close(c);
		return;
	}
	rep.exit_code = c->timed_out ? LAUNCHER_EXIT_TIMEOUT : m->value;
	rep.signal = m->signal;
	rep.exec_error = c->exec_error;
	rep.err = c->exec_err;
	rep.prelude_failed = m->flags & LAUNCHER_STATUS_PRELUDE;
	rep.timed_out = c->timed_out;
	rep.oom_killed = !c->oom_before && launcher_cgroup_oom_killed(v->cgroup);
	rep.duration_usec = launcher_now_usec() - c->start;
	violations_since(c, v->result, &rep);
	(void)snprintf(rep.policy_hash, sizeof(rep.policy_hash), "%s", v->result->policy_hash);
	send_reply(c, &rep, fd);
	arm(s);
}

static void on_tree_done(struct launcher_session *s, const struct launcher_sync_msg *m)
{
	struct launcher_session_reply rep = {.error = m->value, .err = m->err};
	struct conn *c = s->tree_op;
	_cleanup_free_ char *from = NULL, *to = NULL;

	s->tree_op = NULL;
	if (!c)
		return;
	if (c->gone) {
		rep.error = -ECONNRESET; /* nobody to tell; a new copy is dropped below */
		c->n_violations = 0;
	}
	if (m->type == LAUNCHER_SYNC_CHECKPOINT && m->value == 0 && m->flags == 0 && !c->gone &&
	    asprintf(&from, "%s/checkpoints/.new-%s", s->dir, c->name) >= 0 &&
	    asprintf(&to, "%s/checkpoints/%s", s->dir, c->name) >= 0) {
		al_path_remove_tree(to);
		if (rename(from, to) < 0)
			rep.error =
			    al_error_set_errno(&rep.err, -errno, "Failed to keep the checkpoint");
	} else if (m->type == LAUNCHER_SYNC_CHECKPOINT &&
		   asprintf(&from, "%s/checkpoints/.new-%s", s->dir, c->name) >= 0) {
		al_path_remove_tree(from);
	}
	if (rep.error == 0 && m->flags > 0)
		rep.error = -EIO;
	if (c->gone)
		conn_close(c);
	else
		send_reply(c, &rep, -EBADF);
}

/* The command's terminal: its master goes to the caller, who relays it. */
static void on_exec_terminal(struct launcher_session *s, const struct launcher_sync_msg *m, int fd)
{
	struct launcher_session_reply rep = {.terminal = true};

	for (size_t i = 0; i < CONNS_MAX && fd >= 0; i++) {
		struct conn *c = &s->conns[i];

		if (c->exec_id == m->id && c->fd >= 0)
			(void)al_send_fds(c->fd, &rep, sizeof(rep), &fd, 1);
	}
}

bool launcher_session_on_sync(struct launcher_session *s, const struct launcher_sync_msg *m, int fd,
			      const struct launcher_session_view *v)
{
	if (m->type == LAUNCHER_SYNC_TERMINAL && m->id) {
		on_exec_terminal(s, m, fd);
		return true;
	}
	if (m->type == LAUNCHER_SYNC_EXEC_STARTED) {
		for (size_t i = 0; i < CONNS_MAX && fd >= 0; i++) {
			struct conn *c = &s->conns[i];

			if (c->exec_id != m->id)
				continue;
			/* A prelude's, then the command's. */
			c->pidfd = al_close(c->pidfd);
			c->pidfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
			/* A caller gone or a deadline passed before it ran. */
			if (c->gone || c->killed)
				signal_exec(c, v, SIGKILL);
		}
		return true;
	}
	if ((m->type == LAUNCHER_SYNC_STATUS || m->type == LAUNCHER_SYNC_EXEC_FAILED) && m->id) {
		on_exec_end(s, m, fd, v);
		return true;
	}
	if (m->type == LAUNCHER_SYNC_CHECKPOINT || m->type == LAUNCHER_SYNC_RESTORE) {
		on_tree_done(s, m);
		return true;
	}
	return false;
}

bool launcher_session_ended(const struct launcher_session *s)
{
	return s->ended;
}

/* ---- state folders ---- */

int launcher_session_read_info(const char *dir, struct launcher_session_info *ret)
{
	_cleanup_free_ char *path = NULL, *text = NULL;
	int r;

	if (asprintf(&path, "%s/info", dir) < 0)
		return -ENOMEM;
	r = al_read_file_at(AT_FDCWD, path, 65536, &text, NULL);
	if (r < 0)
		return r;
	*ret = (struct launcher_session_info){0};
	for (char *line = text, *next; line && *line; line = next) {
		char *eq = strchr(line, '=');

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (!eq)
			continue;
		*eq++ = '\0';
		if (streq(line, "id"))
			(void)snprintf(ret->id, sizeof(ret->id), "%s", eq);
		else if (streq(line, "pid"))
			ret->pid = (pid_t)atoi(eq);
		else if (streq(line, "started"))
			ret->started = strtoll(eq, NULL, 10);
		else if (streq(line, "expires"))
			ret->expires = strtoll(eq, NULL, 10);
		else if (streq(line, "policy_hash"))
			(void)snprintf(ret->policy_hash, sizeof(ret->policy_hash), "%s", eq);
		else if (streq(line, "workspace"))
			(void)snprintf(ret->workspace, sizeof(ret->workspace), "%s", eq);
		else if (streq(line, "owner"))
			ret->owner = (pid_t)atoi(eq);
		else if (streq(line, "init"))
			ret->init = (pid_t)atoi(eq);
		else if (streq(line, "memory_cgroup"))
			(void)snprintf(ret->memory_cgroup, sizeof(ret->memory_cgroup), "%s", eq);
	}
	return ret->pid > 0 ? 0 : -EBADMSG;
}

/* 0 when the session's supervisor still serves it (someone listens on its socket), else why
 * not: -ECONNREFUSED when it is gone, -ENOENT when it has no socket (yet). */
int launcher_session_probe(const char *dir)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	_cleanup_close_ int fd = -EBADF;

	if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/control", dir) >=
	    sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	/* Non-blocking: a supervisor whose queue is full is alive, not a reason to hang. */
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EAGAIN)
		return -errno;
	return 0;
}

/* Whether a sweep is due: at most one a second in a process. A command's first session call
 * always sweeps; a service (serve), which makes several calls for each of its requests, does not
 * pay for one each time: a sweep reads the mount table and every airlock cgroup, and connects to
 * every session. */
static bool sweep_due(void)
{
	static uint64_t last; /* process-wide on purpose: serve's threads share it */
	uint64_t now = launcher_now_usec(), seen = __atomic_load_n(&last, __ATOMIC_RELAXED);

	if (seen && now - seen < SWEEP_USEC)
		return false;
	return __atomic_compare_exchange_n(&last, &seen, now, false, __ATOMIC_RELAXED,
					   __ATOMIC_RELAXED);
}

void launcher_session_remove_stale(const char *base)
{
	DIR *d;
	char path[PATH_MAX];

	if (!sweep_due())
		return;
	d = opendir(base);
	/* A killed supervisor could not remove its cgroups either; its watcher does, unless it was
	 * killed too. Every sweep looks: the one that removes the folder may come while the
	 * session's processes are still exiting, or before the dead supervisor is reaped. */
	(void)launcher_cgroup_remove_stale();
	if (!d)
		return;
	for (struct dirent *de; (de = readdir(d));) {
		struct stat st;
		int r;

		if (!launcher_session_id_is_valid(de->d_name) ||
		    (size_t)snprintf(path, sizeof(path), "%s/%s", base, de->d_name) >=
			sizeof(path) ||
		    lstat(path, &st) < 0 || !S_ISDIR(st.st_mode))
			continue;
		r = launcher_session_probe(path);
		/* A folder without a socket may be one being set up right now. */
		if (r == -ECONNREFUSED || (r == -ENOENT && st.st_mtime + 60 < time(NULL)))
			al_path_remove_tree(path);
	}
	(void)closedir(d);
}
