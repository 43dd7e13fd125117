#define LOG_MODULE "broker"

/* The broker client. It always speaks the protocol of protocol.c over a socket, one request at a
 * time: to the daemon when one listens, else to airlock's own broker, a child process serving the
 * daemon's code over a socket pair (server.c). Either way airlock never holds a real value that
 * the sandbox is not given (an exposed one), so the sandbox, cloned from airlock, holds none
 * either. Real values arrive in payloads, straight into sodium_malloc'd buffers. */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sodium.h>

#include "broker/broker-internal.h"
#include "broker/broker.h"
#include "broker/client.h"
#include "common/audit.h"
#include "common/fd-util.h"
#include "common/log.h"
#include "common/path-util.h"

#define SOCKET_NAME "broker.sock" /* in al_state_dir(AL_STATE_RUNTIME) */
#define REPLY_TIMEOUT_SEC 60	  /* an open may run command sources */
#define REDACT_CHUNK (16 * 1024)
/* airlock's own broker serves airlock and, over connections of their own, its helper processes:
 * the workspace daemon and the egress proxy. */
#define SPARE_MAX 2

struct broker_client {
	const struct policy *policy;
	struct broker_peer peer;
	int fd;
	int spare_fd[SPARE_MAX]; /* airlock's broker: connections for broker_client_attach() */
	pid_t child;		 /* airlock's broker, or 0 */
	bool attached;		 /* a second connection: the session is not its to close */
	pthread_mutex_t lock; /* one exchange at a time: the workspace daemon's threads share it */
	uint64_t next_id;
	char session[80];
	char **names, **surrogates; /* by credential, in the policy's order */
	size_t n;
};

struct broker_secret *broker_secret_new(size_t len)
{
	/* sodium_malloc() puts the block against a guard page: its address is aligned only when
	 * its size is a multiple of the alignment. */
	size_t size = (sizeof(struct broker_secret) + len + 1 + 15) & ~(size_t)15;
	struct broker_secret *s;

	if (sodium_init() < 0) /* sodium_malloc() needs it; later calls cost nothing */
		return NULL;
	s = sodium_malloc(size);
	if (!s)
		return NULL;
	s->len = len;
	s->data[len] = '\0';
	return s;
}

struct broker_secret *broker_secret_free(struct broker_secret *s)
{
	if (s) {
		sodium_memzero(s->data, s->len);
		sodium_free(s);
	}
	return NULL;
}

int broker_secret_read_fd(int fd, size_t max, struct broker_secret **ret)
{
	_cleanup_(broker_secret_freep) struct broker_secret *s = NULL;
	size_t len = 0;
	ssize_t n;
	char extra;

	s = broker_secret_new(max);
	if (!s)
		return -ENOMEM;
	s->len = 0; /* what broker_secret_free() wipes: the bytes read so far */
	for (;;) {
		/* Once full, one more byte tells a value of exactly max bytes from a longer one. */
		n = len < max ? read(fd, s->data + len, max - len) : read(fd, &extra, 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		if (len == max) {
			sodium_memzero(&extra, sizeof(extra));
			return -EFBIG;
		}
		len += (size_t)n;
		s->len = len;
	}
	s->data[len] = '\0';
	*ret = TAKE_PTR(s);
	return 0;
}

int broker_socket_default_path(char **ret)
{
	char dir[PATH_MAX], *p;
	int r;

	r = al_state_dir(AL_STATE_RUNTIME, dir, sizeof(dir));
	if (r < 0)
		return r;
	if (asprintf(&p, "%s/" SOCKET_NAME, dir) < 0)
		return -ENOMEM;
	*ret = p;
	return 0;
}

/* ---- the remote side ---- */

static int connect_to(const char *path, int *ret, struct al_error *err)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct timeval tv = {.tv_sec = REPLY_TIMEOUT_SEC};
	_cleanup_close_ int fd = -EBADF;
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (strlen(path) >= sizeof(sa.sun_path))
		return al_error_set(err, -ENAMETOOLONG, "broker socket %s: name too long", path);
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return al_error_set_errno(err, -errno, "Failed to create a socket");
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return al_error_set_errno(err, -errno, "broker socket %s", path);
	/* Only root or this user may pose as the broker: it is handed what the sandbox may see. */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return al_error_set_errno(err, -errno, "broker socket %s", path);
	if (cred.uid != 0 && cred.uid != geteuid())
		return al_error_set(err, -EPERM,
				    "broker socket %s is served by uid %u, neither root nor you",
				    path, (unsigned)cred.uid);
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	*ret = TAKE_FD(fd);
	return 0;
}

/* Sends the n buffers of iov whole, in as few system calls as the socket takes, without
 * SIGPIPE: a broker that went away is an error to report, not a reason to die. */
static int send_all(int fd, struct iovec *iov, size_t n)
{
	ssize_t k;

	while (n > 0) {
		k = sendmsg(fd, &(struct msghdr){.msg_iov = iov, .msg_iovlen = n}, MSG_NOSIGNAL);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		for (; n > 0 && (size_t)k >= iov->iov_len; iov++, n--)
			k -= (ssize_t)iov->iov_len;
		if (n > 0) {
			iov->iov_base = (char *)iov->iov_base + k;
			iov->iov_len -= (size_t)k;
		}
	}
	return 0;
}

static int read_full(int fd, void *buf, size_t len)
{
	size_t off = 0;
	ssize_t n;

	while (off < len) {
		n = read(fd, (char *)buf + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		if (n == 0)
			return -ECONNRESET;
		off += (size_t)n;
	}
	return 0;
}

/* One request and its answer, on a connection that may be shared by threads (the workspace
 * daemon's). Returns the answer's JSON and payload; after any error in the exchange the
 * connection is given up, since what follows on it can no longer be framed. */
static int exchange(struct broker_client *c, struct broker_request *r, const void *payload,
		    size_t payload_len, char **ret_json, uint32_t *ret_json_len,
		    struct broker_secret **ret_payload, struct al_error *err)
{
	_cleanup_free_ char *json = NULL, *rjson = NULL;
	_cleanup_(broker_secret_freep) struct broker_secret *rp = NULL;
	unsigned char hdr[BROKER_FRAME_HEADER];
	uint32_t jl = 0, pl = 0;
	size_t len;
	int k, kw;

	if (c->fd < 0)
		return al_error_set(err, -ENOTCONN, "the broker connection was lost");
	r->id = ++c->next_id;
	k = broker_request_encode(r, c->policy, &json, &len);
	if (k < 0)
		return al_error_set_errno(err, k, "Failed to encode a broker request");
	broker_frame_header(hdr, (uint32_t)len, (uint32_t)payload_len);
	kw = send_all(
	    c->fd,
	    (struct iovec[]){{hdr, sizeof(hdr)}, {json, len}, {(void *)payload, payload_len}},
	    payload_len > 0 ? 3 : 2);
	/* Read even when the request could not be sent: a broker that failed to start said why
	 * before it closed the connection. */
	k = read_full(c->fd, hdr, sizeof(hdr));
	if (k < 0 && kw < 0)
		k = kw;
	if (k >= 0)
		k = broker_frame_parse(hdr, BROKER_RESPONSE_PAYLOAD_MAX, &jl, &pl, NULL);
	if (k >= 0)
		k = (rjson = malloc(jl)) ? read_full(c->fd, rjson, jl) : -ENOMEM;
	if (k >= 0)
		k = (rp = broker_secret_new(pl)) ? read_full(c->fd, rp->data, pl) : -ENOMEM;
	if (k < 0 || kw < 0)
		c->fd = al_close(c->fd);
	if (k < 0)
		return al_error_set_errno(err, k, "broker: %s failed", broker_op_to_string(r->op));
	*ret_json = TAKE_PTR(rjson);
	*ret_json_len = jl;
	*ret_payload = TAKE_PTR(rp);
	return 0;
}

/* Sends request r (with payload) and reads the answer: *ret_resp, and its payload in *ret_payload
 * (when not NULL). A refusal is returned as its -errno with the broker's message in err. */
static int call(struct broker_client *c, struct broker_request *r, const void *payload,
		size_t payload_len, struct broker_response *ret_resp,
		struct broker_secret **ret_payload, struct al_error *err)
{
	_cleanup_free_ char *rjson = NULL;
	_cleanup_(broker_secret_freep) struct broker_secret *rp = NULL;
	struct broker_response resp;
	uint32_t jl = 0;
	int k;

	(void)pthread_mutex_lock(&c->lock);
	k = exchange(c, r, payload, payload_len, &rjson, &jl, &rp, err);
	if (k >= 0) {
		k = broker_response_parse(rjson, jl, &resp, err);
		/* An answer to another request means the exchange lost its framing; an error
		 * answer with id 0 is the broker's own (one that failed to start). */
		if (k >= 0 && resp.id != r->id && (resp.ok || resp.id != 0)) {
			broker_response_done(&resp);
			k = al_error_set(err, -EBADMSG, "broker: an answer to another request");
		}
		if (k < 0)
			c->fd = al_close(c->fd);
	}
	(void)pthread_mutex_unlock(&c->lock);
	if (k < 0)
		return k;
	if (!resp.ok) {
		k = al_error_set(err, resp.code, "%s", resp.error ? resp.error : "refused");
		broker_response_done(&resp);
		return k;
	}
	if (ret_resp)
		*ret_resp = resp;
	else
		broker_response_done(&resp);
	if (ret_payload)
		*ret_payload = TAKE_PTR(rp);
	return 0;
}

/* Keeps the session's surrogates: n pairs, by credential name. */
static int keep_surrogates(struct broker_client *c, size_t n, const char *const *names,
			   const char *const *surrogates)
{
	c->names = calloc(n + 1, sizeof(char *));
	c->surrogates = calloc(n + 1, sizeof(char *));
	if (!c->names || !c->surrogates)
		return -ENOMEM;
	for (; c->n < n; c->n++) {
		c->names[c->n] = strdup(names[c->n]);
		c->surrogates[c->n] = strdup(surrogates[c->n]);
		if (!c->names[c->n] || !c->surrogates[c->n]) {
			c->n++;
			return -ENOMEM;
		}
	}
	return 0;
}

static int remote_open(struct broker_client *c, const struct broker_client_options *o,
		       struct al_error *err)
{
	char hash[POLICY_HASH_HEX_SIZE];
	struct broker_response resp;
	int r;

	r = policy_hash_hex(c->policy, hash);
	if (r < 0)
		return r;
	r = call(c,
		 &(struct broker_request){.op = BROKER_OP_OPEN,
					  .policy_hash = hash,
					  .label = o->label,
					  .ttl_usec = o->ttl_usec},
		 NULL, 0, &resp, NULL, err);
	if (r < 0)
		return r;
	if (!resp.session || strlen(resp.session) >= sizeof(c->session)) {
		broker_response_done(&resp);
		return al_error_set(err, -EBADMSG, "the broker's answer has no session");
	}
	strcpy(c->session, resp.session);
	/* Every credential of the policy must have its surrogate, and only those; an SSH key has
	 * none (it only signs, through the agent). */
	for (size_t i = 0, n = 0; i < c->policy->n_credentials; i++) {
		bool ssh = c->policy->credentials[i].kind == POLICY_CRED_SSH_KEY, found = false;

		for (size_t k = 0; k < resp.n_surrogates; k++)
			found |= streq(resp.names[k], c->policy->credentials[i].name);
		n += !ssh;
		if (found == ssh || (i + 1 == c->policy->n_credentials && resp.n_surrogates != n)) {
			broker_response_done(&resp);
			return al_error_set(err, -EBADMSG,
					    "the broker's surrogates do not match the policy's "
					    "credentials");
		}
	}
	r = keep_surrogates(c, resp.n_surrogates, resp.names, resp.surrogates);
	broker_response_done(&resp);
	return r;
}

/* ---- airlock's own broker ---- */

/* The first credential with a vault source, or NULL. */
static const char *needs_vault(const struct policy *p)
{
	for (size_t i = 0; i < p->n_credentials; i++)
		if (p->credentials[i].source == POLICY_CRED_SOURCE_VAULT)
			return p->credentials[i].name;
	return NULL;
}

_noreturn_ static void broker_child(const struct broker_client_options *o, const char *vault_cred,
				    pid_t parent, const int *fds, size_t n_fds)
{
	struct broker_daemon_options d = {
	    .vault = {.vault = o->vault, .key_file = o->key_file},
	    .no_vault = !vault_cred,
	};
	int keep[4 + 1 + SPARE_MAX] = {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO, -EBADF};
	size_t n = 4;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != parent)
		_exit(EXIT_FAILURE);
	(void)prctl(PR_SET_NAME, "airlock-broker", 0, 0, 0);
	if (o->audit)
		keep[3] = al_audit_fd(o->audit);
	for (size_t i = 0; i < n_fds; i++)
		keep[n++] = fds[i];
	if (al_close_all_except(keep, n) < 0)
		_exit(EXIT_FAILURE);
	_exit(broker_embedded_serve(&d, o->audit, vault_cred, fds, n_fds) < 0 ? EXIT_FAILURE
									      : EXIT_SUCCESS);
}

/* Starts airlock's broker: a socket pair for this client and one for each helper process
 * (broker_client_attach()). */
static int spawn(struct broker_client *c, const struct broker_client_options *o,
		 struct al_error *err)
{
	int ours[1 + SPARE_MAX], theirs[1 + SPARE_MAX], pair[2];
	pid_t parent = getpid(), pid = -1;
	size_t n = 0;
	int r = 0;

	for (; n < ELEMENTSOF(ours); n++) {
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0) {
			r = al_error_set_errno(err, -errno, "Failed to create the broker's socket");
			break;
		}
		ours[n] = pair[0];
		theirs[n] = pair[1];
	}
	if (r >= 0) {
		pid = fork();
		if (pid == 0)
			broker_child(o, needs_vault(c->policy), parent, theirs, n);
		if (pid < 0)
			r = al_error_set_errno(err, -errno, "Failed to start the broker");
	}
	for (size_t i = 0; i < n; i++) {
		(void)al_close(theirs[i]);
		if (r < 0)
			(void)al_close(ours[i]);
	}
	if (r < 0)
		return r;
	c->fd = ours[0];
	for (size_t i = 0; i < SPARE_MAX; i++)
		c->spare_fd[i] = ours[1 + i];
	c->child = pid;
	return 0;
}

/* What of credential c needs its real value outside the sandbox, or NULL: the egress proxy's
 * swap for its hosts, its sidecar header, or the value itself when exposed. */
static const char *value_need(const struct policy_credential *c)
{
	if (c->expose)
		return "its exposed value";
	if (c->injection == POLICY_INJECTION_SIDECAR)
		return "the header its sidecar adds";
	if (c->kind == POLICY_CRED_SSH_KEY)
		return "the signatures of its SSH agent";
	if (c->hosts.n > 0)
		return "the swap of its surrogate on its hosts";
	return NULL;
}

/* A daemon of another uid (root's, reached with --allow-uid) gives this uid surrogates only
 * (server.c): a credential that needs its real value would fail at its first request, mid-run,
 * so it is refused now, before anything runs. */
static int check_daemon_gives_values(struct broker_client *c, const char *path,
				     struct al_error *err)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	const char *need;

	if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return al_error_set_errno(err, -errno, "broker socket %s", path);
	if (cred.uid == geteuid())
		return 0;
	for (size_t i = 0; i < c->policy->n_credentials; i++) {
		need = value_need(&c->policy->credentials[i]);
		if (need)
			return al_error_set(
			    err, -EPERM,
			    "credential %s: the broker daemon on %s runs as uid %u and gives "
			    "another user's airlock (uid %u) surrogates only, never a real value, "
			    "which %s needs; use airlock's own broker (--no-broker) with your own "
			    "vault, or a daemon of your own",
			    c->policy->credentials[i].name, path, (unsigned)cred.uid,
			    (unsigned)geteuid(), need);
	}
	return 0;
}

/* ---- the interface ---- */

static struct broker_client *client_new(const struct policy *p)
{
	struct broker_client *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->policy = p;
	c->fd = -EBADF;
	for (size_t i = 0; i < SPARE_MAX; i++)
		c->spare_fd[i] = -EBADF;
	(void)pthread_mutex_init(&c->lock, NULL);
	return c;
}

int broker_client_open(const struct policy *p, const struct broker_client_options *o,
		       struct broker_client **ret, struct al_error *err)
{
	_cleanup_(broker_client_freep) struct broker_client *c = NULL;
	_cleanup_free_ char *def = NULL;
	const char *path = o->socket ? o->socket : getenv("AIRLOCK_BROKER");
	int r;

	if (sodium_init() < 0)
		return al_error_set(err, -EIO, "Failed to initialize libsodium");
	c = client_new(p);
	if (!c)
		return -ENOMEM;
	if (!o->embedded && !path && broker_socket_default_path(&def) >= 0) {
		/* The default socket is used when a daemon listens there, and only then. */
		r = connect_to(def, &c->fd, NULL);
		if (r < 0 && r != -ENOENT && r != -ECONNREFUSED)
			return al_error_set_errno(err, r, "broker socket %s", def);
	} else if (!o->embedded && path) {
		r = connect_to(path, &c->fd, err);
		if (r < 0)
			return r;
	}
	if (c->fd < 0) {
		r = spawn(c, o, err);
		if (r < 0)
			return r;
	} else if (o->needs_values) {
		r = check_daemon_gives_values(c, path ? path : def, err);
		if (r < 0)
			return r;
	}
	r = remote_open(c, o, err);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(c);
	return 0;
}

struct broker_client *broker_client_free(struct broker_client *c)
{
	if (!c)
		return NULL;
	if (c->fd >= 0 && !c->attached && c->session[0])
		(void)call(c,
			   &(struct broker_request){.op = BROKER_OP_CLOSE, .session = c->session},
			   NULL, 0, NULL, NULL, NULL);
	(void)al_close(c->fd);
	for (size_t i = 0; i < SPARE_MAX; i++)
		(void)al_close(c->spare_fd[i]);
	if (c->child > 0) {
		/* Its sessions are closed and their events written: nothing is left to lose. */
		(void)kill(c->child, SIGKILL);
		(void)waitpid(c->child, NULL, 0);
	}
	for (size_t i = 0; i < c->n; i++) {
		free(c->names ? c->names[i] : NULL);
		free(c->surrogates ? c->surrogates[i] : NULL);
	}
	free(c->names);
	free(c->surrogates);
	(void)pthread_mutex_destroy(&c->lock);
	free(c);
	return NULL;
}

int broker_client_attach(struct broker_client *c, struct broker_client **ret, struct al_error *err)
{
	_cleanup_(broker_client_freep) struct broker_client *a = NULL;
	struct sockaddr_un sa;
	socklen_t len = sizeof(sa);
	int r;

	a = client_new(c->policy);
	if (!a)
		return -ENOMEM;
	a->attached = true;
	strcpy(a->session, c->session);
	r = keep_surrogates(a, c->n, (const char *const *)c->names,
			    (const char *const *)c->surrogates);
	if (r < 0)
		return r;
	if (c->child > 0) {
		for (size_t i = 0; i < SPARE_MAX && a->fd < 0; i++)
			a->fd = TAKE_FD(c->spare_fd[i]);
		if (a->fd < 0)
			return al_error_set(err, -EBUSY, "airlock's broker has no connection left");
	} else {
		if (getpeername(c->fd, (struct sockaddr *)&sa, &len) < 0)
			return al_error_set_errno(err, -errno, "Failed to name the broker socket");
		r = connect_to(sa.sun_path, &a->fd, err);
		if (r < 0)
			return r;
	}
	*ret = TAKE_PTR(a);
	return 0;
}

int broker_client_fd(const struct broker_client *c)
{
	return c->fd;
}

const char *broker_client_surrogate(const struct broker_client *c, const char *name)
{
	for (size_t i = 0; i < c->n; i++)
		if (streq(c->names[i], name))
			return c->surrogates[i];
	return NULL;
}

int broker_client_read(struct broker_client *c, const char *name, struct broker_secret **ret,
		       struct al_error *err)
{
	return call(
	    c, &(struct broker_request){.op = BROKER_OP_READ, .session = c->session, .name = name},
	    NULL, 0, NULL, ret, err);
}

int broker_client_resolve(struct broker_client *c, const char *surrogate, const char *host,
			  struct broker_secret **ret, struct al_error *err)
{
	return call(c,
		    &(struct broker_request){.op = BROKER_OP_RESOLVE,
					     .session = c->session,
					     .surrogate = surrogate,
					     .host = host},
		    NULL, 0, NULL, ret, err);
}

int broker_client_headers(struct broker_client *c, const char *host, struct broker_secret **ret,
			  struct al_error *err)
{
	return call(
	    c,
	    &(struct broker_request){.op = BROKER_OP_HEADERS, .session = c->session, .host = host},
	    NULL, 0, NULL, ret, err);
}

int broker_client_ssh_hostkey(struct broker_client *c, const char *destination, const void *key,
			      size_t len, struct al_error *err)
{
	return call(c,
		    &(struct broker_request){
			.op = BROKER_OP_SSH_HOSTKEY, .session = c->session, .host = destination},
		    key, len, NULL, NULL, err);
}

int broker_client_ssh_agent(struct broker_client *c, const void *in, size_t len,
			    struct broker_secret **ret, struct broker_ssh_verdict *v,
			    struct al_error *err)
{
	struct broker_response resp;
	int r;

	*v = (struct broker_ssh_verdict){0};
	r = call(c, &(struct broker_request){.op = BROKER_OP_SSH_AGENT, .session = c->session}, in,
		 len, &resp, ret, err);
	if (r < 0)
		return r;
	broker_response_ssh_verdict(&resp, v);
	broker_response_done(&resp);
	if (!*ret) /* every answer has a body */
		return al_error_set(err, -EBADMSG, "the broker's agent answer is empty");
	return 0;
}

int broker_client_redact(struct broker_client *c, unsigned stream, const void *buf, size_t len,
			 bool flush, struct broker_secret **ret, struct al_error *err)
{
	_cleanup_(broker_secret_freep) struct broker_secret *all = NULL;
	struct broker_secret *part = NULL, *grown;
	size_t off = 0, take;
	int r;

	/* In chunks: a request's payload is bounded, and redacted output may be longer. */
	do {
		take = MIN(len - off, (size_t)REDACT_CHUNK);
		r = call(c,
			 &(struct broker_request){.op = BROKER_OP_REDACT,
						  .session = c->session,
						  .stream = stream,
						  .flush = flush && off + take == len},
			 (const char *)buf + off, take, NULL, &part, err);
		if (r < 0)
			return r;
		off += take;
		if (!all) {
			all = part;
			continue;
		}
		grown = broker_secret_new(all->len + part->len);
		if (grown) {
			memcpy(grown->data, all->data, all->len);
			memcpy(grown->data + all->len, part->data, part->len);
		}
		broker_secret_free(part);
		broker_secret_free(all);
		all = grown;
		if (!all)
			return -ENOMEM;
	} while (off < len);
	*ret = TAKE_PTR(all);
	return 0;
}

int broker_daemon_query(const char *socket, const char *op, FILE *out, struct al_error *err)
{
	_cleanup_(broker_client_freep) struct broker_client *c = NULL;
	_cleanup_free_ char *def = NULL, *text = NULL;
	struct broker_response resp;
	enum broker_op o;
	int r;

	if (streq(op, "health"))
		o = BROKER_OP_HEALTH;
	else if (streq(op, "list"))
		o = BROKER_OP_LIST;
	else
		return al_error_set(err, -EINVAL, "unknown query %s", op);
	if (!socket) {
		r = broker_socket_default_path(&def);
		if (r < 0)
			return al_error_set_errno(err, r, "No broker socket: pass --socket");
		socket = def;
	}
	c = client_new(NULL);
	if (!c)
		return -ENOMEM;
	r = connect_to(socket, &c->fd, err);
	if (r >= 0)
		r = call(c, &(struct broker_request){.op = o}, NULL, 0, &resp, NULL, err);
	if (r < 0)
		return r;
	r = broker_response_to_string(&resp, &text);
	broker_response_done(&resp);
	if (r < 0)
		return r;
	fprintf(out, "%s\n", text);
	return 0;
}
