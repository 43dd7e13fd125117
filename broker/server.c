#define LOG_MODULE "broker"

/* The broker daemon: one thread runs an epoll loop over non-blocking connections, so that a slow
 * or hostile client costs the others nothing; opening a session, which may run a command source
 * for seconds, is handed to a small pool of worker threads. A session ends when the connection
 * that opened it closes (its sandbox ended, or airlock died), when it is closed, or at its TTL. */

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "broker/broker-internal.h"
#include "broker/broker.h"
#include "common/audit.h"
#include "common/fd-util.h"
#include "common/log.h"
#include "common/socket-util.h"

#define CONNECTIONS_MAX 1024
#define CONNECTIONS_PER_UID 256 /* so that one allowed uid cannot lock the others out */
#define FRAMES_PER_TURN 16	/* a client that pipelines yields to the others after these */
#define WORKERS 4
#define OUTPUT_PAUSE (1024 * 1024)   /* stop reading a client that does not read its answers */
#define OUTPUT_MAX (8 * 1024 * 1024) /* ... and drop it past this */
#define FRAME_TIMEOUT_USEC (10ULL * 1000 * 1000) /* to send a whole frame once begun */
#define TICK_MSEC 1000

struct job;

struct conn {
	int fd;
	struct broker_peer peer;
	unsigned char hdr[BROKER_FRAME_HEADER];
	size_t got; /* bytes of the current frame so far */
	uint32_t json_len, payload_len;
	char *json;
	struct broker_secret *payload;
	uint64_t frame_start;
	unsigned char *out; /* answers not yet sent; wiped when sent */
	size_t out_len, out_off, out_cap;
	bool busy;    /* an open is with a worker: read nothing more until it answers */
	bool closing; /* close once the answers are out */
	bool dead;    /* the peer hung up while busy: free when the worker is done */
	uint32_t events;
	struct conn *prev, *next;
};

struct job {
	struct conn *conn;
	uint64_t id;
	struct broker_session *session;
	int r;
	struct al_error err;
	struct job *next;
};

struct server {
	const struct broker_daemon_options *o;
	struct broker *b;
	struct al_audit *audit;
	bool embedded;		/* airlock's own broker: no socket, ends with its connections */
	const char *vault_cred; /* embedded: the credential that needs the vault, or NULL */
	int epfd, listen_fd, signal_fd, event_fd;
	char *path;
	struct al_unix_listener listener; /* its fd is listen_fd */
	bool listen_paused;
	uid_t uid;
	struct conn *conns;
	size_t n_conns;
	uint64_t start;
	pthread_t workers[WORKERS];
	size_t n_workers;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct job *queue, **queue_tail, *done; /* under lock */
	bool stopping;				/* under lock */
};

static uint64_t now_usec(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* ---- workers ---- */

static void *worker_main(void *userdata)
{
	struct server *s = userdata;
	struct job *j;
	uint64_t one = 1;

	for (;;) {
		(void)pthread_mutex_lock(&s->lock);
		while (!s->queue && !s->stopping)
			(void)pthread_cond_wait(&s->cond, &s->lock);
		j = s->queue;
		if (!j) {
			(void)pthread_mutex_unlock(&s->lock);
			return NULL;
		}
		s->queue = j->next;
		if (!s->queue)
			s->queue_tail = &s->queue;
		(void)pthread_mutex_unlock(&s->lock);

		j->r = broker_session_read_sources(j->session, &j->err);

		(void)pthread_mutex_lock(&s->lock);
		j->next = s->done;
		s->done = j;
		(void)pthread_mutex_unlock(&s->lock);
		if (write(s->event_fd, &one, sizeof(one)) < 0)
			log_debug_errno(-errno, "Failed to wake the event loop: %m");
	}
}

static int workers_start(struct server *s)
{
	sigset_t all, old;
	int r = 0;

	/* The workers take no signals: the main loop reads them from its signalfd. */
	(void)sigfillset(&all);
	(void)pthread_sigmask(SIG_BLOCK, &all, &old);
	for (; s->n_workers < WORKERS; s->n_workers++) {
		r = -pthread_create(&s->workers[s->n_workers], NULL, worker_main, s);
		if (r < 0)
			break;
	}
	(void)pthread_sigmask(SIG_SETMASK, &old, NULL);
	return r;
}

static void workers_stop(struct server *s)
{
	(void)pthread_mutex_lock(&s->lock);
	s->stopping = true;
	(void)pthread_cond_broadcast(&s->cond);
	(void)pthread_mutex_unlock(&s->lock);
	for (size_t i = 0; i < s->n_workers; i++)
		(void)pthread_join(s->workers[i], NULL);
	s->n_workers = 0;
}

/* ---- connections ---- */

static void conn_set_events(struct server *s, struct conn *c)
{
	uint32_t ev = 0;

	if (!c->busy && !c->closing && c->out_len - c->out_off < OUTPUT_PAUSE)
		ev |= EPOLLIN;
	if (c->out_off < c->out_len)
		ev |= EPOLLOUT;
	if (ev == c->events)
		return;
	c->events = ev;
	(void)epoll_ctl(s->epfd, EPOLL_CTL_MOD, c->fd,
			&(struct epoll_event){.events = ev, .data.ptr = c});
}

static void frame_reset(struct conn *c)
{
	c->got = 0;
	free(c->json);
	c->json = NULL;
	c->payload = broker_secret_free(c->payload);
}

static void conn_free(struct server *s, struct conn *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	s->n_conns--;
	broker_close_owned(s->b, c);
	frame_reset(c);
	if (c->out) {
		sodium_memzero(c->out, c->out_cap);
		free(c->out);
	}
	(void)al_close(c->fd);
	free(c);
}

/* Ends c now, or, while a worker holds it, once the worker is done. */
static void conn_drop(struct server *s, struct conn *c)
{
	if (c->busy) {
		(void)epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL);
		c->dead = true;
		return;
	}
	conn_free(s, c);
}

/* Grows the output buffer without leaving a copy of its content behind (it holds real values). */
static int out_reserve(struct conn *c, size_t more)
{
	size_t need = c->out_len - c->out_off + more, cap;
	unsigned char *n;

	if (need > OUTPUT_MAX)
		return -ENOBUFS;
	if (c->out_off > 0) {
		memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
		c->out_len -= c->out_off;
		sodium_memzero(c->out + c->out_len, c->out_off);
		c->out_off = 0;
	}
	if (need <= c->out_cap)
		return 0;
	cap = MAX(c->out_cap * 2, (size_t)4096);
	cap = MAX(need, cap);
	n = malloc(cap);
	if (!n)
		return -ENOMEM;
	if (c->out) {
		memcpy(n, c->out, c->out_len);
		sodium_memzero(c->out, c->out_cap);
		free(c->out);
	}
	c->out = n;
	c->out_cap = cap;
	return 0;
}

static int send_frame(struct server *s, struct conn *c, const char *json, size_t json_len,
		      const void *payload, size_t payload_len)
{
	unsigned char hdr[BROKER_FRAME_HEADER];
	int r;

	r = out_reserve(c, sizeof(hdr) + json_len + payload_len);
	if (r < 0)
		return r;
	broker_frame_header(hdr, (uint32_t)json_len, (uint32_t)payload_len);
	memcpy(c->out + c->out_len, hdr, sizeof(hdr));
	memcpy(c->out + c->out_len + sizeof(hdr), json, json_len);
	if (payload_len > 0)
		memcpy(c->out + c->out_len + sizeof(hdr) + json_len, payload, payload_len);
	c->out_len += sizeof(hdr) + json_len + payload_len;
	conn_set_events(s, c);
	return 0;
}

static int send_error(struct server *s, struct conn *c, uint64_t id, int code, const char *msg)
{
	_cleanup_free_ char *json = NULL;
	size_t len;
	int r;

	r = broker_response_error(id, code, msg, &json, &len);
	if (r < 0)
		return r;
	return send_frame(s, c, json, len, NULL, 0);
}

static int send_ok(struct server *s, struct conn *c, uint64_t id, const struct broker_bytes *p)
{
	_cleanup_free_ char *json = NULL;
	size_t len;
	int r;

	r = broker_response_ok(id, &json, &len);
	if (r < 0)
		return r;
	return send_frame(s, c, json, len, p ? p->data : NULL, p ? p->len : 0);
}

/* ---- requests ---- */

/* A peer other than the daemon's own user may use only vault credentials: env, file, command
 * and keyring sources would run with the daemon's rights, on the peer's say. */
static int check_sources(const struct server *s, const struct conn *c, const struct policy *p,
			 struct al_error *err)
{
	if (c->peer.uid == s->uid)
		return 0;
	for (size_t i = 0; i < p->n_credentials; i++) {
		if (p->credentials[i].expose)
			return al_error_set(
			    err, -EPERM,
			    "credential %s: only the broker's own user (uid %u) may "
			    "have a real value exposed",
			    p->credentials[i].name, (unsigned)s->uid);
		if (p->credentials[i].source != POLICY_CRED_SOURCE_VAULT)
			return al_error_set(err, -EPERM,
					    "credential %s: a %s source is read with the broker's "
					    "rights, so only its own user (uid %u) may ask for it",
					    p->credentials[i].name,
					    policy_cred_source_to_string(p->credentials[i].source),
					    (unsigned)s->uid);
	}
	return 0;
}

/* The connections of uid. */
static size_t count_uid(const struct server *s, uid_t uid)
{
	size_t n = 0;

	for (const struct conn *c = s->conns; c; c = c->next)
		n += c->peer.uid == uid && !c->dead;
	return n;
}

static void job_finish(struct server *s, struct job *j);

static int do_open(struct server *s, struct conn *c, struct broker_request *q, struct al_error *err)
{
	struct broker_session *session = NULL;
	struct job *j;
	uint64_t ttl = q->ttl_usec;
	int r;

	/* Only the daemon's own uid reaches the workers (other uids have vault credentials,
	 * answered on the loop), so no uid can make another's opens wait behind its own. */
	r = check_sources(s, c, q->creds, err);
	if (r < 0)
		return r;
	if (s->o->max_ttl_usec && (ttl == 0 || ttl > s->o->max_ttl_usec))
		ttl = s->o->max_ttl_usec;
	r = broker_session_prepare(s->b,
				   &(struct broker_open){.peer = c->peer,
							 .creds = TAKE_PTR(q->creds),
							 .policy_hash = q->policy_hash,
							 .label = q->label,
							 .ttl_usec = ttl,
							 .owner = c},
				   &session, err);
	if (r < 0)
		return r;
	j = calloc(1, sizeof(*j));
	if (!j) {
		broker_session_free(session);
		return -ENOMEM;
	}
	*j = (struct job){.conn = c, .id = q->id, .session = session};
	c->busy = true;
	conn_set_events(s, c);
	if (!broker_session_needs_sources(session)) {
		/* Vault credentials only: nothing slow to wait for, no worker to wait on. */
		job_finish(s, j);
		free(j);
		return 0;
	}
	(void)pthread_mutex_lock(&s->lock);
	*s->queue_tail = j; /* first come, first served */
	s->queue_tail = &j->next;
	(void)pthread_cond_signal(&s->cond);
	(void)pthread_mutex_unlock(&s->lock);
	return 0;
}

static void job_finish(struct server *s, struct job *j)
{
	_cleanup_free_ char *json = NULL;
	struct conn *c = j->conn;
	size_t len;
	int r = j->r;

	c->busy = false;
	if (c->dead) {
		broker_session_free(j->session);
		conn_free(s, c);
		return;
	}
	if (r >= 0)
		r = broker_session_add(s->b, j->session, &j->err);
	if (r < 0)
		broker_session_free(j->session);
	if (r >= 0) {
		r = broker_response_open(j->id, j->session, &json, &len);
		r = r < 0 ? r : send_frame(s, c, json, len, NULL, 0);
	} else {
		r = send_error(s, c, j->id, r, j->err.msg[0] ? j->err.msg : strerror(-r));
	}
	if (r < 0)
		conn_drop(s, c);
	else
		conn_set_events(s, c);
}

static void on_jobs_done(struct server *s)
{
	struct job *list, *j;
	uint64_t n;

	if (read(s->event_fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		log_debug_errno(-errno, "Failed to read the event counter: %m");
	(void)pthread_mutex_lock(&s->lock);
	list = s->done;
	s->done = NULL;
	(void)pthread_mutex_unlock(&s->lock);
	while ((j = list)) {
		list = j->next;
		job_finish(s, j);
		free(j);
	}
}

/* The ops whose answer is a real value (resolve, headers) or is computed from them (redact: what
 * it replaces, and what it holds back as a possible value's beginning, would tell a peer the
 * values byte by byte). */
static bool op_answers_with_values(enum broker_op op)
{
	return op == BROKER_OP_RESOLVE || op == BROKER_OP_HEADERS || op == BROKER_OP_REDACT ||
	       op == BROKER_OP_SSH_HOSTKEY || op == BROKER_OP_SSH_AGENT;
}

/* A peer other than the daemon's own user (--allow-uid) never gets a real value: nothing it
 * sends can prove it is airlock's egress proxy rather than its own program (airlock is not
 * setuid: whatever airlock run by that uid can do, that uid can do), so the daemon can only
 * give it surrogates. */
static int refuse_values(struct server *s, const struct conn *c, enum broker_op op,
			 struct al_error *err)
{
	if (s->audit)
		(void)al_audit_event(
		    s->audit, "violation",
		    (struct al_audit_field[]){
			AL_AUDIT_S("action", broker_op_to_string(op)),
			AL_AUDIT_S("verdict", "refused"), AL_AUDIT_I("peer_uid", c->peer.uid),
			AL_AUDIT_I("peer_pid", c->peer.pid),
			AL_AUDIT_S("reason", "only the broker's own uid gets real values")},
		    5);
	return al_error_set(err, -EPERM,
			    "op %s: uid %u is not the broker's own (uid %u), and gets surrogates "
			    "only, never a real value or an answer computed from one",
			    broker_op_to_string(op), (unsigned)c->peer.uid, (unsigned)s->uid);
}

static int dispatch(struct server *s, struct conn *c, struct broker_request *q,
		    struct broker_bytes *ret, struct al_error *err)
{
	const void *in = c->payload ? c->payload->data : NULL;
	size_t in_len = c->payload ? c->payload->len : 0;

	if (in_len > 0 && q->op != BROKER_OP_REDACT && q->op != BROKER_OP_SSH_HOSTKEY &&
	    q->op != BROKER_OP_SSH_AGENT)
		return al_error_set(err, -EINVAL, "op %s takes no payload",
				    broker_op_to_string(q->op));
	if (c->peer.uid != s->uid && op_answers_with_values(q->op))
		return refuse_values(s, c, q->op, err);
	switch (q->op) {
	case BROKER_OP_RESOLVE:
		return broker_resolve(s->b, &c->peer, q->session, q->surrogate, q->host, ret, err);
	case BROKER_OP_READ:
		return broker_read(s->b, &c->peer, q->session, q->name, ret, err);
	case BROKER_OP_HEADERS:
		return broker_headers(s->b, &c->peer, q->session, q->host, ret, err);
	case BROKER_OP_REDACT:
		return broker_redact_output(s->b, &c->peer, q->session, q->stream, in, in_len,
					    q->flush, ret, err);
	case BROKER_OP_SSH_HOSTKEY:
		return broker_ssh_hostkey(s->b, &c->peer, q->session, q->host, in, in_len, err);
	case BROKER_OP_CLOSE:
		return broker_close(s->b, &c->peer, q->session, err);
	default:
		return al_error_set(err, -EINVAL, "op %s is not served here",
				    broker_op_to_string(q->op));
	}
}

/* An SSH agent request: the answer's body, and in its JSON what it did (for the proxy's audit). */
static int do_ssh_agent(struct server *s, struct conn *c, const struct broker_request *q,
			struct al_error *err)
{
	struct broker_ssh_outcome o = {0};
	struct broker_bytes out = {0};
	_cleanup_free_ char *json = NULL;
	size_t len;
	int r;

	if (c->peer.uid != s->uid)
		return refuse_values(s, c, q->op, err);
	r = broker_ssh_request(s->b, &c->peer, q->session, c->payload ? c->payload->data : NULL,
			       c->payload ? c->payload->len : 0, &out, &o, err);
	if (r >= 0)
		r = broker_response_ssh(q->id, &o, &json, &len);
	if (r >= 0)
		r = send_frame(s, c, json, len, out.data, out.len);
	return r;
}

/* Answers the frame c holds. Returns < 0 when c must be dropped. */
static int on_frame(struct server *s, struct conn *c)
{
	struct broker_request q;
	struct broker_bytes out = {0};
	struct al_error err = {0};
	_cleanup_free_ char *json = NULL;
	size_t len;
	int r;

	r = broker_request_parse(c->json, c->json_len, &q, &err);
	if (r < 0) {
		frame_reset(c);
		return send_error(s, c, q.id, r, err.msg);
	}
	if (q.op == BROKER_OP_OPEN) {
		r = do_open(s, c, &q, &err);
	} else if (q.op == BROKER_OP_HEALTH) {
		r = broker_response_health(q.id, s->b, (now_usec() - s->start) / 1000000, &json,
					   &len);
		r = r < 0 ? r : send_frame(s, c, json, len, NULL, 0);
	} else if (q.op == BROKER_OP_SSH_AGENT) {
		r = do_ssh_agent(s, c, &q, &err);
	} else if (q.op == BROKER_OP_LIST) {
		r = broker_response_list(q.id, s->b, &c->peer, &json, &len);
		r = r < 0 ? r : send_frame(s, c, json, len, NULL, 0);
	} else {
		r = dispatch(s, c, &q, &out, &err);
		if (r >= 0)
			r = send_ok(s, c, q.id, &out);
	}
	if (r < 0 && r != -ENOBUFS)
		r = send_error(s, c, q.id, r, err.msg[0] ? err.msg : strerror(-r));
	broker_request_done(&q);
	frame_reset(c);
	return r;
}

/* Reads what is there of the current frame; 1 when it is whole, 0 when more must come, < 0 when
 * the connection ends (EOF, error, or a frame over the limits, answered first). */
static int read_frame(struct server *s, struct conn *c)
{
	struct al_error err = {0};
	size_t want;
	void *dst;
	ssize_t n;
	int r;

	for (;;) {
		if (c->got < BROKER_FRAME_HEADER) {
			dst = c->hdr + c->got;
			want = BROKER_FRAME_HEADER - c->got;
		} else if (c->got < BROKER_FRAME_HEADER + c->json_len) {
			dst = c->json + (c->got - BROKER_FRAME_HEADER);
			want = BROKER_FRAME_HEADER + c->json_len - c->got;
		} else if (c->payload &&
			   c->got < BROKER_FRAME_HEADER + c->json_len + c->payload_len) {
			dst = c->payload->data + (c->got - BROKER_FRAME_HEADER - c->json_len);
			want = BROKER_FRAME_HEADER + c->json_len + c->payload_len - c->got;
		} else {
			return 1;
		}
		n = read(c->fd, dst, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN ? 0 : -errno;
		if (n == 0)
			return -ECONNRESET;
		if (c->got == 0)
			c->frame_start = now_usec();
		c->got += (size_t)n;
		if (c->got != BROKER_FRAME_HEADER)
			continue;
		r = broker_frame_parse(c->hdr, BROKER_PAYLOAD_MAX, &c->json_len, &c->payload_len,
				       &err);
		if (r < 0) {
			/* The rest of the frame will not be read: nothing after it can be. */
			(void)send_error(s, c, 0, r, err.msg);
			c->closing = true;
			return -EMSGSIZE;
		}
		c->json = malloc(c->json_len);
		c->payload = c->payload_len ? broker_secret_new(c->payload_len) : NULL;
		if (!c->json || (c->payload_len && !c->payload))
			return -ENOMEM;
	}
}

static void on_readable(struct server *s, struct conn *c)
{
	int r;

	for (int turn = 0; turn < FRAMES_PER_TURN && !c->busy && !c->closing; turn++) {
		r = read_frame(s, c);
		if (r == 0)
			break;
		if (r < 0) {
			if (c->closing && c->out_off < c->out_len) {
				conn_set_events(s, c);
				return;
			}
			conn_drop(s, c);
			return;
		}
		r = on_frame(s, c);
		if (r < 0) {
			conn_drop(s, c);
			return;
		}
	}
	conn_set_events(s, c);
}

static void on_writable(struct server *s, struct conn *c)
{
	ssize_t n;

	while (c->out_off < c->out_len) {
		n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
			 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0) {
			conn_drop(s, c);
			return;
		}
		sodium_memzero(c->out + c->out_off, (size_t)n);
		c->out_off += (size_t)n;
	}
	if (c->out_off == c->out_len) {
		c->out_off = c->out_len = 0;
		if (c->closing) {
			conn_drop(s, c);
			return;
		}
	}
	conn_set_events(s, c);
}

/* ---- accepting ---- */

static bool uid_allowed(const struct server *s, uid_t uid)
{
	if (uid == s->uid)
		return true;
	for (size_t i = 0; i < s->o->n_allow_uids; i++)
		if (s->o->allow_uids[i] == uid)
			return true;
	return false;
}

static void reject(struct server *s, int fd, const struct ucred *cred, const char *why)
{
	_cleanup_free_ char *json = NULL;
	unsigned char hdr[BROKER_FRAME_HEADER];
	size_t len;

	if (s->audit)
		(void)al_audit_event(s->audit, "violation",
				     (struct al_audit_field[]){AL_AUDIT_S("action", "connect"),
							       AL_AUDIT_I("peer_uid", cred->uid),
							       AL_AUDIT_I("peer_pid", cred->pid),
							       AL_AUDIT_S("reason", why)},
				     4);
	if (broker_response_error(0, -EACCES, why, &json, &len) >= 0) {
		broker_frame_header(hdr, (uint32_t)len, 0);
		(void)send(fd, hdr, sizeof(hdr), MSG_DONTWAIT | MSG_NOSIGNAL);
		(void)send(fd, json, len, MSG_DONTWAIT | MSG_NOSIGNAL);
	}
	(void)al_close(fd);
}

static void on_accept(struct server *s)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct conn *c;
	int fd, r;

	for (;;) {
		fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0 &&
		    (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)) {
			/* The listener would stay readable and spin the loop: pause it until the
			 * next tick. */
			(void)epoll_ctl(
			    s->epfd, EPOLL_CTL_MOD, s->listen_fd,
			    &(struct epoll_event){.events = 0, .data.ptr = &s->listen_fd});
			s->listen_paused = true;
			return;
		}
		if (fd < 0)
			return;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
			(void)al_close(fd);
			continue;
		}
		if (!uid_allowed(s, cred.uid)) {
			reject(s, fd, &cred, "peer uid not allowed");
			continue;
		}
		/* A sandbox's process (another pid namespace) is never a client, whatever its uid:
		 * it could only have reached the socket through a bind that slipped through. */
		r = al_socket_peer_in_my_pidns(fd);
		if (r != 1) {
			reject(s, fd, &cred,
			       r == 0 ? "peer is in another pid namespace (a sandboxed process)"
				      : "cannot tell the peer's pid namespace");
			continue;
		}
		if (s->n_conns >= CONNECTIONS_MAX ||
		    count_uid(s, cred.uid) >= CONNECTIONS_PER_UID) {
			reject(s, fd, &cred, "too many connections");
			continue;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			(void)al_close(fd);
			continue;
		}
		*c = (struct conn){.fd = fd,
				   .peer = {.uid = cred.uid, .pid = cred.pid},
				   .events = EPOLLIN,
				   .next = s->conns};
		if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd,
			      &(struct epoll_event){.events = EPOLLIN, .data.ptr = c}) < 0) {
			(void)al_close(fd);
			free(c);
			continue;
		}
		if (s->conns)
			s->conns->prev = c;
		s->conns = c;
		s->n_conns++;
	}
}

/* Connections stuck in the middle of a frame: a client that sends half a request and waits. */
static void on_tick(struct server *s)
{
	uint64_t now = now_usec();
	struct conn *c, *next;

	(void)broker_expire(s->b);
	if (s->listen_paused &&
	    epoll_ctl(s->epfd, EPOLL_CTL_MOD, s->listen_fd,
		      &(struct epoll_event){.events = EPOLLIN, .data.ptr = &s->listen_fd}) >= 0)
		s->listen_paused = false;
	for (c = s->conns; c; c = next) {
		next = c->next;
		if (!c->busy && !c->dead && c->got > 0 && now - c->frame_start > FRAME_TIMEOUT_USEC)
			conn_drop(s, c);
	}
}

/* ---- the socket ---- */

static int listen_on(struct server *s, struct al_error *err)
{
	uid_t uids[BROKER_ALLOW_UIDS_MAX];
	size_t n = 0;
	int r;

	if (s->o->n_allow_uids > BROKER_ALLOW_UIDS_MAX)
		return al_error_set(err, -E2BIG, "at most %d uids may be allowed",
				    BROKER_ALLOW_UIDS_MAX);
	for (size_t i = 0; i < s->o->n_allow_uids; i++)
		if (s->o->allow_uids[i] != s->uid)
			uids[n++] = s->o->allow_uids[i];
	r = al_unix_listen(s->path, uids, n, "broker socket", &s->listener, err);
	if (r == -EADDRINUSE)
		return al_error_set(err, r, "a broker already listens on %s", s->path);
	s->listen_fd = s->listener.fd;
	return r;
}

/* Every peer's pid namespace is checked (al_socket_peer_in_my_pidns()): a kernel that cannot tell
 * would refuse every client, so the daemon refuses to start instead, saying why. */
static int check_pidns_support(struct al_error *err)
{
	_cleanup_close_ int a = -EBADF, b = -EBADF;
	int pair[2], r;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0)
		return al_error_set_errno(err, -errno, "Failed to create a socket pair");
	a = pair[0];
	b = pair[1];
	r = al_socket_peer_in_my_pidns(a);
	if (r == 1)
		return 0;
	return al_error_set_errno(err, r < 0 ? r : -EOPNOTSUPP,
				  "cannot tell the pid namespace of a client (SO_PEERPIDFD needs "
				  "Linux 6.5 and /proc of this pid namespace), so no client could "
				  "be checked: refusing to serve");
}

/* ---- the daemon ---- */

static int open_vault(struct server *s, struct al_error *err)
{
	_cleanup_(broker_key_freep) struct broker_key *key = NULL;
	_cleanup_(broker_vault_freep) struct broker_vault *v = NULL;
	_cleanup_free_ char *path = NULL;
	int r;

	if (s->o->no_vault)
		return 0;
	r = broker_vault_path(s->o->vault.vault, &path, err);
	if (r < 0)
		return r;
	if (access(path, F_OK) < 0 && errno == ENOENT)
		return al_error_set(err, -ENOENT,
				    "vault %s does not exist (airlock secret put creates it%s)",
				    path, s->embedded ? "" : ", or serve without one: --no-vault");
	r = broker_key_acquire(s->o->vault.key_file, isatty(STDIN_FILENO), false, &key, err);
	if (r < 0)
		return r;
	r = broker_vault_open(path, &key->k, false, &v, err);
	if (r < 0)
		return r;
	return broker_set_vault(s->b, TAKE_PTR(v), path);
}

/* What every broker needs: hygiene, the audit, the core and its vault. */
static int setup_core(struct server *s, struct al_error *err)
{
	struct rlimit none = {0, 0};
	int r;

	/* It holds every secret: no core dump, no ptrace by its own user's other processes. */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0 || setrlimit(RLIMIT_CORE, &none) < 0)
		return al_error_set_errno(err, -errno, "Failed to make the broker undumpable");
	if (sodium_init() < 0)
		return al_error_set(err, -EIO, "Failed to initialize libsodium");
	if (!s->audit && s->o->audit) {
		r = al_audit_open(s->o->audit, "broker", &s->audit);
		if (r < 0)
			return al_error_set_errno(err, r, "audit: cannot open %s", s->o->audit);
	}
	r = broker_new(s->audit, &s->b);
	if (r < 0)
		return r;
	r = open_vault(s, err);
	if (r < 0 && s->vault_cred)
		al_error_prefix(err, "credential %s: vault source", s->vault_cred);
	return r;
}

/* The event loop: signals, the workers' wake-ups and, for the daemon, its listening socket. */
static int setup_loop(struct server *s, struct al_error *err)
{
	sigset_t mask;
	int r;

	if (!s->embedded) {
		r = s->o->socket ? ((s->path = strdup(s->o->socket)) ? 0 : -ENOMEM)
				 : broker_socket_default_path(&s->path);
		if (r < 0)
			return al_error_set_errno(err, r, "No socket path: pass --socket");
	}
	(void)sigemptyset(&mask);
	(void)sigaddset(&mask, SIGINT);
	(void)sigaddset(&mask, SIGTERM);
	(void)sigaddset(&mask, SIGPIPE);
	(void)sigprocmask(SIG_BLOCK, &mask, NULL);
	s->signal_fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	s->event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (s->signal_fd < 0 || s->event_fd < 0 || s->epfd < 0)
		return al_error_set_errno(err, -errno, "Failed to set up the event loop");
	r = s->embedded ? 0 : check_pidns_support(err);
	if (r >= 0 && !s->embedded)
		r = listen_on(s, err);
	if (r < 0)
		return r;
	if ((!s->embedded &&
	     epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->listen_fd,
		       &(struct epoll_event){.events = EPOLLIN, .data.ptr = &s->listen_fd}) < 0) ||
	    epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->signal_fd,
		      &(struct epoll_event){.events = EPOLLIN, .data.ptr = &s->signal_fd}) < 0 ||
	    epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->event_fd,
		      &(struct epoll_event){.events = EPOLLIN, .data.ptr = &s->event_fd}) < 0)
		return al_error_set_errno(err, -errno, "Failed to set up the event loop");
	r = workers_start(s);
	if (r < 0)
		return al_error_set_errno(err, r, "Failed to start the worker threads");
	return 0;
}

static void serve(struct server *s)
{
	struct epoll_event ev[64];
	uint64_t next_tick = now_usec() + TICK_MSEC * 1000ULL;
	bool jobs;
	int n;

	for (;;) {
		if (s->embedded && s->n_conns == 0)
			return; /* airlock and its workspace daemon are done */
		n = epoll_wait(s->epfd, ev, ELEMENTSOF(ev), TICK_MSEC);
		if (n < 0 && errno != EINTR)
			return;
		jobs = false;
		for (int i = 0; i < n; i++) {
			void *p = ev[i].data.ptr;

			if (p == &s->signal_fd)
				return;
			if (p == &s->listen_fd)
				on_accept(s);
			else if (p == &s->event_fd)
				jobs = true; /* after the batch: it may free a connection in it */
			else if ((ev[i].events & (EPOLLERR | EPOLLHUP)) && ((struct conn *)p)->busy)
				conn_drop(
				    s,
				    p); /* else HUP fires again and again until the worker ends */
			else if (ev[i].events & (EPOLLOUT | EPOLLERR | EPOLLHUP) &&
				 ((struct conn *)p)->out_off < ((struct conn *)p)->out_len)
				on_writable(s, p);
			else
				on_readable(s, p);
		}
		if (jobs)
			on_jobs_done(s);
		if (now_usec() >= next_tick) {
			on_tick(s);
			next_tick = now_usec() + TICK_MSEC * 1000ULL;
		}
	}
}

static void teardown(struct server *s)
{
	struct job *j;

	workers_stop(s);
	while ((j = s->done)) {
		s->done = j->next;
		j->conn->busy = false;
		broker_session_free(j->session);
		free(j);
	}
	while ((j = s->queue)) {
		s->queue = j->next;
		j->conn->busy = false;
		broker_session_free(j->session);
		free(j);
	}
	while (s->conns)
		conn_free(s, s->conns);
	al_unix_listener_close(&s->listener);
	s->listen_fd = -EBADF;
	(void)al_close(s->signal_fd);
	(void)al_close(s->event_fd);
	(void)al_close(s->epfd);
	s->b = broker_free(s->b);
	if (!s->embedded)
		s->audit = al_audit_close(s->audit);
	free(s->path);
	(void)pthread_mutex_destroy(&s->lock);
	(void)pthread_cond_destroy(&s->cond);
}

#define SERVER_INIT(opts)                                                                          \
	{                                                                                          \
		.o = (opts), .uid = geteuid(), .epfd = -EBADF, .listen_fd = -EBADF,                \
		.listener.fd = -EBADF, .signal_fd = -EBADF, .event_fd = -EBADF,                    \
		.start = now_usec(), .lock = PTHREAD_MUTEX_INITIALIZER,                            \
		.cond = PTHREAD_COND_INITIALIZER,                                                  \
	}

int broker_daemon_run(const struct broker_daemon_options *o, struct al_error *err)
{
	struct server s = SERVER_INIT(o);
	int r;

	s.queue_tail = &s.queue;
	r = setup_core(&s, err);
	if (r >= 0)
		r = setup_loop(&s, err);
	if (r >= 0) {
		log_info("Serving on %s%s%s", s.path, broker_vault_file(s.b) ? ", vault " : "",
			 strempty(broker_vault_file(s.b)));
		serve(&s);
	}
	teardown(&s);
	return r;
}

/* Adds a connected socket of airlock's as a connection. */
static int adopt(struct server *s, int fd)
{
	struct conn *c;
	int r;

	r = al_fd_nonblock(fd, true);
	if (r < 0)
		return r;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	*c = (struct conn){.fd = fd,
			   .peer = {.uid = geteuid(), .pid = getppid()},
			   .events = EPOLLIN,
			   .next = s->conns};
	if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd,
		      &(struct epoll_event){.events = EPOLLIN, .data.ptr = c}) < 0) {
		free(c);
		return -errno;
	}
	if (s->conns)
		s->conns->prev = c;
	s->conns = c;
	s->n_conns++;
	return 0;
}

/* A setup error goes to airlock as the answer to its first request. */
static void report(int fd, int code, const char *msg)
{
	_cleanup_free_ char *json = NULL;
	unsigned char hdr[BROKER_FRAME_HEADER];
	size_t len;

	if (broker_response_error(0, code, msg, &json, &len) < 0)
		return;
	broker_frame_header(hdr, (uint32_t)len, 0);
	(void)al_write_all(fd, hdr, sizeof(hdr));
	(void)al_write_all(fd, json, len);
}

int broker_embedded_serve(const struct broker_daemon_options *o, struct al_audit *audit,
			  const char *vault_cred, const int *fds, size_t n)
{
	struct server s = SERVER_INIT(o);
	struct al_error err = {0};
	int r;

	s.queue_tail = &s.queue;
	s.embedded = true;
	s.audit = audit;
	s.vault_cred = vault_cred;
	r = setup_core(&s, &err);
	/* The vault's prompt is behind it: leave the terminal's process group, so that its
	 * signals (^C) go to airlock and the sandbox, not to the broker they still need. */
	(void)setpgid(0, 0);
	if (r >= 0)
		r = setup_loop(&s, &err);
	for (size_t i = 0; r >= 0 && i < n; i++)
		r = adopt(&s, fds[i]);
	if (r >= 0)
		serve(&s);
	else
		report(fds[0], r, err.msg[0] ? err.msg : strerror(-r));
	teardown(&s);
	return r;
}
