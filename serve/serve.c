#define LOG_MODULE "serve"

/* The service: its listeners, its limits per client, and the endpoints that need no session:
 * health, capabilities and exec. */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/fd-util.h"
#include "common/json-util.h"
#include "common/log.h"
#include "common/path-util.h"
#include "common/socket-util.h"
#include "launcher/launcher.h"
#include "serve/serve-internal.h"

#define RESULT_MAX (16 * 1024 * 1024) /* bytes of a child's JSON result */
#define TOKEN_MAX 4096

static uint64_t now_usec(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

int serve_default_socket(char *buf, size_t size)
{
	char dir[PATH_MAX];
	int r = al_state_dir(AL_STATE_RUNTIME, dir, sizeof(dir));

	if (r < 0)
		return r;
	return al_path_printf(buf, size, "%s/serve.sock", dir);
}

bool serve_stream_take(struct serve *s, const struct serve_client *c)
{
	struct serve_usage *u = NULL, *free_slot = NULL;
	bool ok = false;

	(void)pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < ELEMENTSOF(s->usage) && !u; i++) {
		if (streq(s->usage[i].key, c->key))
			u = &s->usage[i];
		else if (!free_slot && s->usage[i].streams == 0)
			free_slot = &s->usage[i];
	}
	if (!u && free_slot) {
		u = free_slot;
		(void)snprintf(u->key, sizeof(u->key), "%s", c->key);
	}
	if (u && u->streams < s->o->max_streams) {
		u->streams++;
		ok = true;
	}
	(void)pthread_mutex_unlock(&s->lock);
	return ok;
}

void serve_stream_put(struct serve *s, const struct serve_client *c)
{
	(void)pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < ELEMENTSOF(s->usage); i++)
		if (streq(s->usage[i].key, c->key) && s->usage[i].streams > 0) {
			s->usage[i].streams--;
			break;
		}
	(void)pthread_mutex_unlock(&s->lock);
}

/* ---- health, capabilities ---- */

int serve_health(struct serve_request *r)
{
	_cleanup_(al_json_putp) struct json_object *o = json_object_new_object();
	struct serve *s = r->srv;

	serve_sessions_prune(s);
	if (!o || al_json_add(o, "status", json_object_new_string("ok")) < 0 ||
	    al_json_add(o, "version", json_object_new_string(AIRLOCK_VERSION)) < 0 ||
	    al_json_add(o, "api", json_object_new_string("v1")) < 0 ||
	    al_json_add(
		o, "uptime_s",
		json_object_new_int64((int64_t)((now_usec() - s->started_usec) / 1000000))) < 0 ||
	    al_json_add(o, "sessions", json_object_new_int64((int64_t)serve_sessions_count(s))) <
		0 ||
	    al_json_add(o, "processes", json_object_new_int64((int64_t)serve_processes_count(s))) <
		0)
		return -ENOMEM;
	return serve_reply_json(r, 200, o);
}

/* Runs a child that prints one JSON object, and replies it (status, or 500 with its error). */
static int reply_child_json(struct serve_request *r, char *const *args, int stdin_fd,
			    unsigned (*status_of)(struct json_object *result))
{
	_cleanup_free_ char *out = NULL, *err = NULL;
	_cleanup_(al_json_putp) struct json_object *o = NULL;
	struct serve_child c;
	size_t len = 0;
	int k, status;

	k = serve_child_spawn(r->srv, args, stdin_fd, SERVE_CHILD_STDOUT | SERVE_CHILD_STDERR, NULL,
			      &c);
	if (k < 0)
		return serve_reply_errno(r, k, NULL, "Failed to start airlock");
	status = serve_child_collect(&c, RESULT_MAX, (bool (*)(const void *))serve_client_gone, r,
				     &out, &len, &err);
	if (serve_client_gone(r))
		return -ECONNRESET;
	if (!out || al_json_parse(out, len, 64, &o, NULL) < 0 ||
	    !json_object_is_type(o, json_type_object)) {
		if (err)
			err[strcspn(err, "\n")] = '\0';
		return serve_reply_error(r, 500, "failed", NULL,
					 "airlock %s failed (status %d)%s%s", args[0], status,
					 err && *err ? ": " : "", err ? err : "");
	}
	return serve_reply_json(r, status_of ? status_of(o) : 200, o);
}

int serve_capabilities(struct serve_request *r)
{
	static char *const args[] = {(char *)"capabilities", (char *)"--json", NULL};

	return reply_child_json(r, args, -EBADF, NULL);
}

/* ---- exec ---- */

/* An exec result's HTTP status: 200 when the program ran (whatever its exit code), else by the
 * error's kind. */
static unsigned kind_status(enum agent_error_kind kind)
{
	switch (kind) {
	case AGENT_ERROR_NONE:
		return 200;
	case AGENT_ERROR_INVALID_REQUEST:
		return 400;
	case AGENT_ERROR_UNSUPPORTED_LANGUAGE:
	case AGENT_ERROR_UNSUPPORTED_POLICY:
		return 422;
	default:
		return 500;
	}
}

/* The same for a result a child printed: by the name of its error's kind. */
static unsigned exec_status(struct json_object *result)
{
	struct json_object *e = json_object_object_get(result, "error");
	const char *kind = json_object_get_string(json_object_object_get(e, "kind"));

	if (!e || !kind)
		return 200;
	for (int k = AGENT_ERROR_INVALID_REQUEST; k <= AGENT_ERROR_SETUP_FAILED; k++)
		if (streq(kind, agent_error_kind_to_string((enum agent_error_kind)k)))
			return kind_status((enum agent_error_kind)k);
	return 500;
}

/* `airlock exec` with the operator's options. */
static int exec_args(const struct serve *s, char **args, size_t max)
{
	size_t n = 0;

	return agent_argv_push(args, &n, max, "exec")
		   ?: agent_exec_options_argv(&s->o->exec, s->o->broker_argv, args, &n, max);
}

/* The body in a memfd: the child's stdin, nothing on disk. */
static int body_memfd(const struct serve_request *r)
{
	_cleanup_close_ int fd = memfd_create("airlock-request", MFD_CLOEXEC);
	int k;

	if (fd < 0)
		return -errno;
	k = al_write_all(fd, r->body ? r->body : "", r->len);
	if (k < 0)
		return k;
	if (lseek(fd, 0, SEEK_SET) < 0)
		return -errno;
	return TAKE_FD(fd);
}

/* A session's request runs in this thread: the session's pid 1 runs the command, and nothing of
 * this process's is at stake (no signal is touched; a hang-up closes the control connection, which
 * kills the command). */
static int session_exec(struct serve_request *r, const char *session)
{
	_cleanup_(agent_request_freep) struct agent_request *req = NULL;
	const struct agent_session_exec_options o = {.in_thread = true, .cancel_fd = r->conn_fd};
	_cleanup_free_ char *text = NULL;
	struct al_error err = {0};
	size_t len = 0;
	FILE *f;
	int k;

	f = open_memstream(&text, &len);
	if (!f)
		return -ENOMEM;
	k = agent_request_parse(r->body ? r->body : "", r->len, &req, &err);
	if (k < 0) {
		k = agent_exec_print_error(f, AGENT_ERROR_INVALID_REQUEST, err.msg);
		if (k >= 0)
			k = AGENT_ERROR_INVALID_REQUEST;
	} else {
		k = agent_session_exec(session, req, &o, f);
	}
	if (fclose(f) != 0 && k >= 0)
		k = -errno;
	if (k == -ECANCELED)
		return -ECONNRESET;
	if (k < 0)
		return serve_reply_errno(r, k, NULL, "Failed to run the request");
	/* The result is one line of JSON of the agent's own making (al_json_to_string(), as
	 * serve_reply_json() would make it): sent as it is, not parsed and printed again; its
	 * status by the kind agent_session_exec() returned. */
	if (len > 0 && text[len - 1] == '\n')
		len--;
	return serve_reply_bytes(r, kind_status((enum agent_error_kind)k), "application/json", text,
				 len);
}

int serve_run_request(struct serve_request *r, const char *session)
{
	_cleanup_close_ int in = -EBADF;
	char *args[32];
	int k;

	if (!serve_stream_take(r->srv, &r->client))
		return serve_reply_error(r, 429, "too_many_requests", NULL,
					 "This client has %u requests and streams running already",
					 r->srv->o->max_streams);
	if (session) {
		k = session_exec(r, session);
		serve_stream_put(r->srv, &r->client);
		return k;
	}
	k = exec_args(r->srv, args, ELEMENTSOF(args));
	if (k >= 0)
		k = in = body_memfd(r);
	if (k >= 0)
		k = reply_child_json(r, args, in, exec_status);
	else
		k = serve_reply_errno(r, k, NULL, "Failed to pass the request on");
	serve_stream_put(r->srv, &r->client);
	return k;
}

int serve_exec(struct serve_request *r)
{
	return serve_run_request(r, NULL);
}

/* ---- the service ---- */

static int read_token(const char *path, char **ret, struct al_error *err)
{
	_cleanup_free_ char *text = NULL;
	_cleanup_close_ int fd = -EBADF;
	struct stat st;
	size_t len = 0;
	int k;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
	if (fd < 0)
		return al_error_set_errno(err, -errno, "--token-file %s", path);
	if (fstat(fd, &st) < 0)
		return al_error_set_errno(err, -errno, "--token-file %s", path);
	if (!S_ISREG(st.st_mode))
		return al_error_set(err, -EINVAL, "--token-file %s: not a regular file", path);
	if (st.st_uid != geteuid())
		return al_error_set(
		    err, -EPERM,
		    "--token-file %s: owned by uid %u, not by this user: whoever owns "
		    "it chooses the token",
		    path, (unsigned)st.st_uid);
	if (st.st_mode & 077)
		return al_error_set(err, -EPERM,
				    "--token-file %s: readable or writable by others (mode %04o): "
				    "chmod 600 it",
				    path, (unsigned)(st.st_mode & 07777));
	k = al_read_fd(fd, TOKEN_MAX, &text, &len);
	if (k < 0)
		return al_error_set_errno(err, k, "--token-file %s", path);
	while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r'))
		text[--len] = '\0';
	if (len < 16 || strlen(text) != len || strpbrk(text, " \t\r\n"))
		return al_error_set(err, -EINVAL,
				    "--token-file %s: the token must be one line of at least 16 "
				    "characters, no spaces",
				    path);
	*ret = TAKE_PTR(text);
	return 0;
}

static int listen_tcp(const char *addr, int *ret, struct al_error *err)
{
	_cleanup_free_ char *host = strdup(addr);
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST},
			*res = NULL;
	char *colon;
	int fd, k, one = 1;

	if (!host)
		return -ENOMEM;
	colon = strrchr(host, ':');
	if (!colon || colon == host || !colon[1])
		return al_error_set(err, -EINVAL, "--listen: \"%s\" is not HOST:PORT", addr);
	*colon = '\0';
	if (host[0] == '[' && colon[-1] == ']') {
		colon[-1] = '\0';
		memmove(host, host + 1, strlen(host));
	}
	k = getaddrinfo(host, colon + 1, &hints, &res);
	if (k != 0)
		return al_error_set(err, -EINVAL, "--listen: \"%s\": %s", addr, gai_strerror(k));
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd >= 0) {
		(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, res->ai_addr, res->ai_addrlen) < 0 || listen(fd, 128) < 0) {
			k = -errno;
			(void)al_close(fd);
			fd = k;
		}
	} else {
		fd = -errno;
	}
	freeaddrinfo(res);
	if (fd < 0)
		return al_error_set_errno(err, fd, "--listen %s", addr);
	*ret = fd;
	return 0;
}

static int check_options(const struct serve_options *o, struct al_error *err)
{
	bool fixed = o->exec.policy_path || o->exec.policy_dir;

	if (o->listen && !o->token_file)
		return al_error_set(err, -EINVAL,
				    "--listen needs --token-file: no TCP listener without a token");
	if (o->token_file && !o->listen)
		return al_error_set(err, -EINVAL, "--token-file is only for --listen");
	/* Requests of the operator's own may name any policy or host folder: only the operator's
	 * own uid may send them. */
	if ((o->listen || o->n_allow_uids > 0) && !fixed)
		return al_error_set(err, -EPERM,
				    "%s: clients other than this user would run with any policy "
				    "and host folder they name; give --policy or --policy-dir",
				    o->listen ? "--listen" : "--allow-uid");
	return 0;
}

int serve_main(const struct serve_options *o, struct al_error *err)
{
	struct serve s = {.o = o, .pid = getpid(), .started_usec = now_usec()};
	struct al_unix_listener unix_l = {.fd = -EBADF};
	struct MHD_Daemon *ud = NULL, *td = NULL;
	char path[PATH_MAX];
	int tcp_fd = -EBADF, sig_fd = -EBADF, k;
	sigset_t mask;

	k = check_options(o, err);
	if (k >= 0)
		k = serve_http_load(err);
	if (k < 0)
		return k;
	if (o->token_file) {
		k = read_token(o->token_file, &s.token, err);
		if (k < 0)
			return k;
	}
	if (o->socket_path)
		k = al_path_printf(path, sizeof(path), "%s", o->socket_path);
	else
		k = serve_default_socket(path, sizeof(path));
	if (k < 0)
		return al_error_set_errno(err, k, "No path for the socket");
	(void)sigemptyset(&mask);
	(void)sigaddset(&mask, SIGINT);
	(void)sigaddset(&mask, SIGTERM);
	(void)sigaddset(&mask, SIGHUP);
	(void)sigaddset(&mask, SIGPIPE);
	/* Blocked before any thread starts: every thread inherits it. */
	if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
		return al_error_set_errno(err, -errno, "Failed to block signals");
	(void)sigdelset(&mask, SIGPIPE);
	sig_fd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (sig_fd < 0)
		return al_error_set_errno(err, -errno, "Failed to create a signalfd");
	(void)pthread_mutex_init(&s.lock, NULL);
	k = serve_spawner_start(&s);
	if (k < 0)
		return al_error_set_errno(err, k, "Failed to start a thread");
	k = al_unix_listen(path, o->allow_uids, o->n_allow_uids, "serve socket", &unix_l, err);
	if (k >= 0 && o->listen)
		k = listen_tcp(o->listen, &tcp_fd, err);
	if (k >= 0) {
		ud = serve_http_start(&s, unix_l.fd, false);
		if (!ud)
			k = al_error_set(err, -EIO, "Failed to start the HTTP service");
	}
	if (k >= 0 && tcp_fd >= 0) {
		td = serve_http_start(&s, tcp_fd, true);
		if (!td)
			k = al_error_set(err, -EIO, "Failed to start the HTTP service on %s",
					 o->listen);
	}
	if (k >= 0) {
		struct signalfd_siginfo si;

		log_notice("Serving the agent API on %s%s%s", path, o->listen ? " and " : "",
			   o->listen ? o->listen : "");
		/* Told on stdout too, for whoever started it (a test, a supervisor). */
		printf("%s\n", path);
		(void)fflush(stdout);
		while (read(sig_fd, &si, sizeof(si)) < 0 && errno == EINTR)
			;
		log_notice("Stopping (signal %u)", si.ssi_signo);
	}
	/* The daemons stop accepting and wait for their connections' threads, whose children
	 * are killed first so that none waits long. */
	serve_http_stop(td, true);
	serve_http_stop(ud, true);
	serve_processes_end(&s, NULL);
	serve_http_stop(td, false);
	serve_http_stop(ud, false);
	serve_sessions_stop_all(&s);
	serve_spawner_stop(&s);
	al_unix_listener_close(&unix_l);
	(void)al_close(tcp_fd);
	(void)al_close(sig_fd);
	free(s.token);
	(void)pthread_mutex_destroy(&s.lock);
	return k < 0 ? k : 0;
}
