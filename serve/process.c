#define LOG_MODULE "serve"

/* /v1/sessions/ID/processes: commands started in a session whose output is streamed as it comes.
 * Each runs as a child `airlock session exec ID --result-fd 3 -- ARGV` (with a terminal: on a
 * pty of ours, its controlling terminal, so that a resize is a TIOCSWINSZ and the child's
 * SIGWINCH does the rest). A pump thread turns its output into events, kept in a log (bounded:
 * the oldest output goes first) that every stream replays and then follows: start, stdout and
 * stderr (UTF-8 text as "data", anything else as "data_base64"), then exit with the result. The
 * stream that started a process kills it when its client hangs up, unless it was detached. */

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "common/fd-util.h"
#include "common/json-util.h"
#include "common/log.h"
#include "common/parse-util.h"
#include "common/text-util.h"
#include "launcher/launcher.h"
#include "serve/serve-internal.h"

#define LOG_BYTES_MAX (4 * 1024 * 1024)		/* of a process's events kept */
#define EXITED_KEEP_USEC (10 * 60 * 1000000ULL) /* an ended process is listed this long */
#define PROCESSES_MAX 256			/* per session, running or kept */
#define ARGV_MAX 1024
#define WAIT_MSEC 200 /* a stream looks at its client this often while it waits */
#define CHUNK 16384

struct event {
	char *json; /* one object, no newline */
	size_t len;
	const char *type;
};

struct serve_process {
	char id[16];
	char session[LAUNCHER_SESSION_ID_MAX];
	char client[SERVE_CLIENT_KEY_MAX];
	struct serve *srv;
	struct serve_child child;
	bool terminal, detached, stdin_open;
	struct json_object *argv;
	pthread_mutex_t lock; /* the log, ended, stdin */
	pthread_cond_t cond;
	struct event *log;
	size_t n_log, first_seq, log_bytes; /* the log holds events first_seq.. */
	bool ended;
	uint64_t ended_usec;
	int refs; /* the table, the pump, each stream: under srv->lock */
	struct serve_process *next;
};

static uint64_t now_usec(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static void process_unref(struct serve *s, struct serve_process *p)
{
	bool last;

	(void)pthread_mutex_lock(&s->lock);
	last = --p->refs == 0;
	(void)pthread_mutex_unlock(&s->lock);
	if (!last)
		return;
	for (size_t i = 0; i < p->n_log; i++)
		free(p->log[i].json);
	free(p->log);
	json_object_put(p->argv);
	(void)pthread_mutex_destroy(&p->lock);
	(void)pthread_cond_destroy(&p->cond);
	free(p);
}

/* Kills its child, unless its pidfd is closed already (its number may be another's by then). */
static void process_kill(struct serve_process *p)
{
	(void)pthread_mutex_lock(&p->lock);
	serve_child_kill(&p->child);
	(void)pthread_mutex_unlock(&p->lock);
}

/* ---- the log ---- */

/* Appends event (taken). */
static void log_append(struct serve_process *p, struct json_object *event, const char *type)
{
	_cleanup_(al_json_putp) struct json_object *o = event;
	char *text = NULL;
	struct event *e;

	if (!o || al_json_to_string(o, &text) < 0)
		return;
	(void)pthread_mutex_lock(&p->lock);
	e = reallocarray(p->log, p->n_log + 1, sizeof(*p->log));
	if (!e) {
		free(text);
		(void)pthread_mutex_unlock(&p->lock);
		return;
	}
	p->log = e;
	p->log[p->n_log++] = (struct event){.json = text, .len = strlen(text), .type = type};
	p->log_bytes += strlen(text);
	/* The oldest output goes (the start event stays): streams behind it are told. */
	while (p->log_bytes > LOG_BYTES_MAX && p->n_log > 2) {
		p->log_bytes -= p->log[1].len;
		free(p->log[1].json);
		memmove(&p->log[1], &p->log[2], (p->n_log - 2) * sizeof(*p->log));
		p->n_log--;
		p->first_seq++;
	}
	(void)pthread_cond_broadcast(&p->cond);
	(void)pthread_mutex_unlock(&p->lock);
}

/* An output event: "data" when text, else "data_base64". */
static void log_output(struct serve_process *p, const char *type, const unsigned char *b, size_t n,
		       bool text)
{
	struct json_object *o = json_object_new_object();
	_cleanup_free_ char *b64 = NULL;

	if (!o || n == 0)
		goto fail;
	if (al_json_add(o, "type", json_object_new_string(type)) < 0)
		goto fail;
	if (text) {
		if (al_json_add(o, "data", json_object_new_string_len((const char *)b, (int)n)) < 0)
			goto fail;
	} else {
		b64 = al_base64_encode(b, n);
		if (!b64 || al_json_add(o, "data_base64", json_object_new_string(b64)) < 0)
			goto fail;
	}
	log_append(p, o, type);
	return;
fail:
	json_object_put(o);
}

/* ---- the pump ---- */

struct pipe_in {
	int fd;
	const char *type;
	unsigned char buf[CHUNK + 4];
	size_t carry; /* the start of a UTF-8 sequence the next read completes */
};

/* Reads what fd has into events; false at its end. */
static bool pump_read(struct serve_process *p, struct pipe_in *in)
{
	ssize_t k = read(in->fd, in->buf + in->carry, CHUNK);
	size_t n, valid;

	if (k < 0 && (errno == EINTR || errno == EAGAIN))
		return true;
	if (k <= 0) {
		/* EIO: a pty whose other side is gone. What was held back never became text. */
		log_output(p, in->type, in->buf, in->carry, false);
		in->carry = 0;
		return false;
	}
	n = in->carry + (size_t)k;
	switch (al_utf8_scan(in->buf, n, &valid)) {
	case AL_UTF8_WHOLE:
		log_output(p, in->type, in->buf, n, true);
		in->carry = 0;
		break;
	case AL_UTF8_CUT:
		log_output(p, in->type, in->buf, valid, true);
		in->carry = n - valid;
		memmove(in->buf, in->buf + valid, in->carry);
		break;
	case AL_UTF8_NOT_TEXT:
		log_output(p, in->type, in->buf, valid, true);
		log_output(p, in->type, in->buf + valid, n - valid, false);
		in->carry = 0;
		break;
	}
	return true;
}

/* The exit event: the child's result without the output it streamed; or, when it gave none, its
 * status. */
static struct json_object *exit_event(const char *result, size_t len, int status)
{
	_cleanup_(al_json_putp) struct json_object *res = NULL;
	struct json_object *o = json_object_new_object();

	if (!o || al_json_add(o, "type", json_object_new_string("exit")) < 0)
		goto fail;
	if (result && al_json_parse(result, len, 32, &res, NULL) >= 0 &&
	    json_object_is_type(res, json_type_object)) {
		json_object_object_foreach(res, key, v)
		{
			if (streq(key, "stdout") || streq(key, "stderr") ||
			    streq(key, "stdout_truncated") || streq(key, "stderr_truncated"))
				continue;
			if (al_json_add_or_null(o, key, json_object_get(v)) < 0)
				goto fail;
		}
		return o;
	}
	/* No result: it could not run, or its airlock was killed (a hang-up, DELETE, KILL). */
	if (al_json_add(o, "error",
			json_object_new_string(WIFSIGNALED(status) ? "killed before its result came"
								   : "the command did not run")) <
		0 ||
	    al_json_add_or_null(o, "exit_code",
				WIFEXITED(status) ? json_object_new_int(WEXITSTATUS(status))
						  : NULL) < 0 ||
	    al_json_add_or_null(o, "signal",
				WIFSIGNALED(status) ? json_object_new_int(WTERMSIG(status))
						    : NULL) < 0)
		goto fail;
	return o;
fail:
	json_object_put(o);
	return NULL;
}

static void *pump(void *data)
{
	struct serve_process *p = data;
	struct pipe_in out = {.fd = p->child.out, .type = "stdout"},
		       err = {.fd = p->child.err, .type = "stderr"};
	_cleanup_free_ char *result = NULL;
	size_t len = 0;
	int status, res_fd = p->child.result;

	while (out.fd >= 0 || err.fd >= 0 || res_fd >= 0) {
		struct pollfd pfd[3] = {{.fd = out.fd, .events = POLLIN},
					{.fd = err.fd, .events = POLLIN},
					{.fd = res_fd, .events = POLLIN}};

		if (poll(pfd, 3, -1) < 0 && errno != EINTR)
			break;
		if (pfd[0].revents && !pump_read(p, &out))
			out.fd = -1;
		if (pfd[1].revents && !pump_read(p, &err))
			err.fd = -1;
		if (pfd[2].revents) {
			char buf[4096];
			ssize_t k = read(res_fd, buf, sizeof(buf));

			if (k > 0 && len + (size_t)k < 1024 * 1024) {
				char *r = realloc(result, len + (size_t)k + 1);

				if (r) {
					memcpy(r + len, buf, (size_t)k);
					len += (size_t)k;
					r[len] = '\0';
					result = r;
				}
			} else if (k <= 0 && errno != EINTR && errno != EAGAIN) {
				res_fd = -1;
			} else if (k == 0) {
				res_fd = -1;
			}
		}
	}
	status = serve_child_wait(&p->child);
	(void)pthread_mutex_lock(&p->lock);
	p->stdin_open = false;
	(void)serve_child_done(&p->child, true);
	(void)pthread_mutex_unlock(&p->lock);
	log_append(p, exit_event(result, len, status), "exit");
	(void)pthread_mutex_lock(&p->lock);
	p->ended = true;
	p->ended_usec = now_usec();
	(void)pthread_cond_broadcast(&p->cond);
	(void)pthread_mutex_unlock(&p->lock);
	process_unref(p->srv, p);
	return NULL;
}

/* ---- the table ---- */

size_t serve_processes_count(struct serve *s)
{
	size_t n = 0;

	(void)pthread_mutex_lock(&s->lock);
	for (struct serve_process *p = s->processes; p; p = p->next)
		n += !p->ended;
	(void)pthread_mutex_unlock(&s->lock);
	return n;
}

/* Takes p out of the table (under s->lock): true when it was in it, and the caller then drops
 * the table's reference. */
static bool unlink_locked(struct serve *s, struct serve_process *p)
{
	for (struct serve_process **q = &s->processes; *q; q = &(*q)->next)
		if (*q == p) {
			*q = p->next;
			return true;
		}
	return false;
}

void serve_processes_end(struct serve *s, const char *session)
{
	for (;;) {
		struct serve_process *p = NULL;

		(void)pthread_mutex_lock(&s->lock);
		for (p = s->processes; p && session && !streq(p->session, session); p = p->next)
			;
		if (p)
			unlink_locked(s, p);
		(void)pthread_mutex_unlock(&s->lock);
		if (!p)
			return;
		process_kill(p);
		process_unref(s, p);
	}
}

/* Ended processes kept longer than EXITED_KEEP_USEC go. */
static void prune(struct serve *s)
{
	uint64_t now = now_usec();

	for (;;) {
		struct serve_process *p;

		(void)pthread_mutex_lock(&s->lock);
		for (p = s->processes; p && !(p->ended && now - p->ended_usec > EXITED_KEEP_USEC);
		     p = p->next)
			;
		if (p)
			unlink_locked(s, p);
		(void)pthread_mutex_unlock(&s->lock);
		if (!p)
			return;
		process_unref(s, p);
	}
}

/* The client's process id of session, referenced, or NULL with 404 replied. */
static struct serve_process *find(struct serve_request *r, const char *session, const char *id)
{
	struct serve_process *p;

	(void)pthread_mutex_lock(&r->srv->lock);
	for (p = r->srv->processes; p; p = p->next)
		if (streq(p->id, id) && streq(p->session, session) &&
		    streq(p->client, r->client.key)) {
			p->refs++;
			break;
		}
	(void)pthread_mutex_unlock(&r->srv->lock);
	if (!p)
		(void)serve_reply_error(r, 404, "not_found", NULL, "No process %s in session %s",
					AL_QUOTE(id), session);
	return p;
}

static struct json_object *process_json(struct serve_process *p)
{
	struct json_object *o = json_object_new_object(), *exit = NULL;

	if (!o)
		return NULL;
	(void)pthread_mutex_lock(&p->lock);
	if (p->ended && p->n_log > 0)
		(void)al_json_parse(p->log[p->n_log - 1].json, p->log[p->n_log - 1].len, 32, &exit,
				    NULL);
	(void)pthread_mutex_unlock(&p->lock);
	if (al_json_add(o, "id", json_object_new_string(p->id)) < 0 ||
	    al_json_add(o, "session", json_object_new_string(p->session)) < 0 ||
	    al_json_add(o, "argv", json_object_get(p->argv)) < 0 ||
	    al_json_add(o, "terminal", json_object_new_boolean(p->terminal)) < 0 ||
	    al_json_add(o, "detached", json_object_new_boolean(p->detached)) < 0 ||
	    al_json_add(o, "running", json_object_new_boolean(!exit)) < 0 ||
	    al_json_add_or_null(o, "exit", exit) < 0) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

/* ---- streams ---- */

struct reader {
	struct serve *srv;
	struct serve_process *p;
	struct serve_client client;
	int conn_fd;
	size_t seq;
	bool sse, owner, follow, exited;
	char *pending;
	size_t pending_len, pending_off;
};

static bool peer_gone(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLRDHUP};

	return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* Frames event text as the stream's format: a line of NDJSON, or a server-sent event. */
static int frame(struct reader *rd, const char *type, const char *json, size_t len)
{
	int k;

	free(rd->pending);
	rd->pending = NULL;
	if (rd->sse)
		k = asprintf(&rd->pending, "event: %s\ndata: %.*s\n\n", type, (int)len, json);
	else
		k = asprintf(&rd->pending, "%.*s\n", (int)len, json);
	if (k < 0) {
		rd->pending = NULL;
		return -ENOMEM;
	}
	rd->pending_len = (size_t)k;
	rd->pending_off = 0;
	return 0;
}

/* The next event into rd->pending: 1, 0 at the end, -errno. Waits while there is none. */
static int next_event(struct reader *rd)
{
	struct serve_process *p = rd->p;
	char dropped[64];
	int k = 0;

	for (;;) {
		(void)pthread_mutex_lock(&p->lock);
		/* log[0] is event 0 (start), which stays; log[i] is event first_seq + i. */
		if (rd->seq > 0 && rd->seq <= p->first_seq) {
			(void)snprintf(dropped, sizeof(dropped),
				       "{\"type\":\"dropped\",\"events\":%zu}",
				       p->first_seq + 1 - rd->seq);
			rd->seq = p->first_seq + 1;
			k = frame(rd, "dropped", dropped, strlen(dropped));
			(void)pthread_mutex_unlock(&p->lock);
			return k < 0 ? k : 1;
		}
		if (rd->seq < p->first_seq + p->n_log) {
			const struct event *e = &p->log[rd->seq ? rd->seq - p->first_seq : 0];

			k = frame(rd, e->type, e->json, e->len);
			rd->exited = streq(e->type, "exit");
			rd->seq++;
			(void)pthread_mutex_unlock(&p->lock);
			return k < 0 ? k : 1;
		}
		if (p->ended || !rd->follow) {
			(void)pthread_mutex_unlock(&p->lock);
			return 0;
		}
		{
			struct timespec ts;

			(void)clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += WAIT_MSEC * 1000000L;
			ts.tv_sec += ts.tv_nsec / 1000000000L;
			ts.tv_nsec %= 1000000000L;
			(void)pthread_cond_timedwait(&p->cond, &p->lock, &ts);
		}
		(void)pthread_mutex_unlock(&p->lock);
		if (peer_gone(rd->conn_fd))
			return -ECONNRESET;
	}
}

static ssize_t reader_next(void *data, char *buf, size_t max)
{
	struct reader *rd = data;
	size_t n;

	while (rd->pending_off == rd->pending_len) {
		int k;

		if (rd->exited)
			return 0;
		k = next_event(rd);
		if (k <= 0)
			return k;
	}
	n = MIN(max, rd->pending_len - rd->pending_off);
	memcpy(buf, rd->pending + rd->pending_off, n);
	rd->pending_off += n;
	return (ssize_t)n;
}

static void reader_done(void *data)
{
	struct reader *rd = data;

	/* The stream that started it is gone before its end: so is the process, unless it was
	 * detached. */
	if (rd->owner && !rd->exited && !rd->p->detached)
		process_kill(rd->p);
	serve_stream_put(rd->srv, &rd->client);
	process_unref(rd->srv, rd->p);
	free(rd->pending);
	free(rd);
}

static const struct serve_stream_ops reader_ops = {.next = reader_next, .done = reader_done};

/* Streams p's events (taking the reference the caller holds). */
static int stream(struct serve_request *r, struct serve_process *p, bool owner, bool follow)
{
	const char *accept = serve_header(r, "Accept");
	struct reader *rd;
	bool sse = accept && strstr(accept, "text/event-stream");

	if (!serve_stream_take(r->srv, &r->client)) {
		if (owner)
			process_kill(p);
		process_unref(r->srv, p);
		return serve_reply_error(r, 429, "too_many_requests", NULL,
					 "This client has %u requests and streams running already",
					 r->srv->o->max_streams);
	}
	rd = calloc(1, sizeof(*rd));
	if (!rd) {
		serve_stream_put(r->srv, &r->client);
		process_unref(r->srv, p);
		return -ENOMEM;
	}
	*rd = (struct reader){.srv = r->srv,
			      .p = p,
			      .client = r->client,
			      .conn_fd = r->conn_fd,
			      .sse = sse,
			      .owner = owner,
			      .follow = follow};
	return serve_reply_stream(r, 200, sse ? "text/event-stream" : "application/x-ndjson",
				  &reader_ops, rd);
}

/* ---- start ---- */

struct start {
	struct json_object *argv;
	char **env; /* "NAME=VALUE" */
	size_t n_env;
	char timeout[32];
	bool terminal, stdin_open, detach;
	struct serve_child_size size;
};

static void start_done(struct start *st)
{
	for (size_t i = 0; i < st->n_env; i++)
		free(st->env[i]);
	free(st->env);
}

static int bad(struct serve_request *r, const char *field, const char *what)
{
	return serve_reply_error(r, 400, "invalid_request", field, "%s: %s", field, what), -EINVAL;
}

static int parse_env(struct serve_request *r, struct json_object *v, struct start *st)
{
	if (!json_object_is_type(v, json_type_object))
		return bad(r, "env", "an object of NAME: VALUE strings");
	st->env = calloc((size_t)json_object_object_length(v) + 1, sizeof(*st->env));
	if (!st->env)
		return -ENOMEM;
	json_object_object_foreach(v, name, value)
	{
		struct al_error err = {0};

		if (!json_object_is_type(value, json_type_string))
			return bad(r, "env", "each value a string");
		if (policy_env_name_check("env", name, &err) < 0 || startswith(name, "AIRLOCK_"))
			return bad(r, "env", err.msg[0] ? err.msg : "AIRLOCK_* are airlock's own");
		if (asprintf(&st->env[st->n_env], "%s=%s", name, json_object_get_string(value)) < 0)
			return -ENOMEM;
		st->n_env++;
	}
	return 0;
}

static int parse_size(struct serve_request *r, struct json_object *v, const char *key,
		      unsigned short *ret)
{
	int64_t n = json_object_get_int64(v);

	if (!json_object_is_type(v, json_type_int) || n < 1 || n > 1000)
		return bad(r, key, "a number of characters, 1 to 1000");
	*ret = (unsigned short)n;
	return 0;
}

static int parse_bool(struct serve_request *r, struct json_object *v, const char *key, bool *ret)
{
	if (!json_object_is_type(v, json_type_boolean))
		return bad(r, key, "true or false");
	*ret = json_object_get_boolean(v);
	return 0;
}

static int parse_start(struct serve_request *r, struct json_object *o, struct start *st)
{
	uint64_t usec;
	int k = 0;

	st->size = (struct serve_child_size){.cols = 80, .rows = 24};
	json_object_object_foreach(o, key, v)
	{
		if (streq(key, "argv")) {
			size_t n = json_object_is_type(v, json_type_array)
				       ? json_object_array_length(v)
				       : 0;

			if (n == 0 || n > ARGV_MAX)
				return bad(r, key, "a non-empty array of strings");
			for (size_t i = 0; i < n; i++)
				if (!json_object_is_type(json_object_array_get_idx(v, i),
							 json_type_string))
					return bad(r, key, "a non-empty array of strings");
			st->argv = v;
		} else if (streq(key, "env")) {
			k = parse_env(r, v, st);
		} else if (streq(key, "timeout") && json_object_is_type(v, json_type_int) &&
			   json_object_get_int64(v) > 0) {
			(void)snprintf(st->timeout, sizeof(st->timeout), "%llds",
				       (long long)json_object_get_int64(v));
		} else if (streq(key, "timeout") && json_object_is_type(v, json_type_string) &&
			   al_parse_duration(json_object_get_string(v), &usec) >= 0 && usec > 0 &&
			   usec <= AGENT_TIMEOUT_MAX_USEC) {
			(void)snprintf(st->timeout, sizeof(st->timeout), "%lluus",
				       (unsigned long long)usec);
		} else if (streq(key, "timeout")) {
			return bad(r, key, "a duration (\"30s\") or seconds, at most 24h");
		} else if (streq(key, "terminal")) {
			k = parse_bool(r, v, key, &st->terminal);
		} else if (streq(key, "stdin")) {
			k = parse_bool(r, v, key, &st->stdin_open);
		} else if (streq(key, "detach")) {
			k = parse_bool(r, v, key, &st->detach);
		} else if (streq(key, "cols")) {
			k = parse_size(r, v, key, &st->size.cols);
		} else if (streq(key, "rows")) {
			k = parse_size(r, v, key, &st->size.rows);
		} else {
			return serve_reply_error(r, 400, "invalid_request", key,
						 "%s: not a field of a process", AL_QUOTE(key)),
			       -EINVAL;
		}
		if (k < 0)
			return k;
	}
	if (!st->argv)
		return bad(r, "argv", "required");
	return 0;
}

static int spawn(struct serve_request *r, const char *session, const struct start *st,
		 struct serve_child *c)
{
	size_t n = json_object_array_length(st->argv), i = 0;
	_cleanup_free_ char **args = calloc(n + 2 * st->n_env + 16, sizeof(*args));
	_cleanup_free_ char **envs = calloc(st->n_env + 1, sizeof(*envs));

	if (!args || !envs)
		return -ENOMEM;
	args[i++] = (char *)"session";
	args[i++] = (char *)"exec";
	args[i++] = (char *)session;
	if (st->terminal)
		args[i++] = (char *)"-t";
	if (st->timeout[0]) {
		args[i++] = (char *)"-T";
		args[i++] = (char *)st->timeout;
	}
	for (size_t e = 0; e < st->n_env; e++) {
		args[i++] = (char *)"-e";
		args[i++] = st->env[e];
	}
	args[i++] = (char *)"--result-fd";
	args[i++] = (char *)"3";
	args[i++] = (char *)"--";
	for (size_t a = 0; a < n; a++)
		args[i++] = (char *)json_object_get_string(json_object_array_get_idx(st->argv, a));
	args[i] = NULL;
	return serve_child_spawn(r->srv, args, -EBADF,
				 st->terminal ? SERVE_CHILD_TERMINAL | SERVE_CHILD_RESULT
					      : SERVE_CHILD_STDOUT | SERVE_CHILD_STDERR |
						    SERVE_CHILD_RESULT |
						    (st->stdin_open ? SERVE_CHILD_STDIN : 0),
				 &st->size, c);
}

static struct json_object *start_event(const struct serve_process *p)
{
	struct json_object *o = json_object_new_object();

	if (!o || al_json_add(o, "type", json_object_new_string("start")) < 0 ||
	    al_json_add(o, "id", json_object_new_string(p->id)) < 0 ||
	    al_json_add(o, "session", json_object_new_string(p->session)) < 0 ||
	    al_json_add(o, "argv", json_object_get(p->argv)) < 0 ||
	    al_json_add(o, "terminal", json_object_new_boolean(p->terminal)) < 0) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

static int start(struct serve_request *r, const char *session)
{
	_cleanup_(al_json_putp) struct json_object *body = NULL;
	struct start st = {0};
	struct serve_process *p = NULL;
	size_t running = 0;
	pthread_attr_t attr;
	pthread_t thread;
	int k;

	prune(r->srv);
	k = serve_body_object(r, &body);
	if (k >= 0)
		k = parse_start(r, body, &st);
	if (k < 0)
		goto out;
	(void)pthread_mutex_lock(&r->srv->lock);
	for (struct serve_process *q = r->srv->processes; q; q = q->next)
		running += streq(q->session, session);
	(void)pthread_mutex_unlock(&r->srv->lock);
	if (running >= PROCESSES_MAX) {
		k = serve_reply_error(r, 429, "too_many_processes", NULL,
				      "Session %s has %d processes already", session,
				      PROCESSES_MAX);
		goto out;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		k = -ENOMEM;
		goto out;
	}
	(void)pthread_mutex_init(&p->lock, NULL);
	(void)pthread_cond_init(&p->cond, NULL);
	p->srv = r->srv;
	(void)snprintf(p->session, sizeof(p->session), "%s", session);
	(void)snprintf(p->client, sizeof(p->client), "%s", r->client.key);
	p->argv = json_object_get(st.argv);
	p->terminal = st.terminal;
	p->detached = st.detach;
	p->stdin_open = st.terminal || st.stdin_open;
	k = spawn(r, session, &st, &p->child);
	if (k < 0) {
		p->refs = 1;
		k = serve_reply_errno(r, k, NULL, "Failed to start the command");
		goto out;
	}
	p->refs = 3; /* the table, the pump, and this request's */
	(void)pthread_mutex_lock(&r->srv->lock);
	(void)snprintf(p->id, sizeof(p->id), "p-%u", ++r->srv->next_process);
	p->next = r->srv->processes;
	r->srv->processes = p;
	(void)pthread_mutex_unlock(&r->srv->lock);
	log_append(p, start_event(p), "start");
	(void)pthread_attr_init(&attr);
	(void)pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	k = -pthread_create(&thread, &attr, pump, p);
	(void)pthread_attr_destroy(&attr);
	if (k < 0) {
		(void)pthread_mutex_lock(&p->lock);
		p->stdin_open = false;
		(void)serve_child_done(&p->child, false);
		(void)pthread_mutex_unlock(&p->lock);
		process_unref(r->srv, p); /* the pump's */
		k = serve_reply_errno(r, k, NULL, "Failed to start the command");
	} else if (st.detach) {
		_cleanup_(al_json_putp) struct json_object *o = process_json(p);

		k = serve_reply_json(r, 201, o);
	} else {
		k = stream(r, p, true, true);
		p = NULL; /* the stream's now */
	}
out:
	if (p)
		process_unref(r->srv, p);
	start_done(&st);
	return k == -EINVAL ? 0 : k;
}

/* ---- one process ---- */

/* A dup of p's stdin (or its terminal), or -EPIPE when it is closed. */
static int stdin_dup(struct serve_process *p)
{
	int fd = -EPIPE;

	(void)pthread_mutex_lock(&p->lock);
	if (p->stdin_open && p->child.in >= 0)
		fd = fcntl(p->child.in, F_DUPFD_CLOEXEC, 3);
	(void)pthread_mutex_unlock(&p->lock);
	return fd;
}

#define STDIN_WAIT_USEC (30 * 1000000ULL) /* for a process to read what is written to it */

/* Writes b to fd while the process reads it: -ETIMEDOUT after STDIN_WAIT_USEC without room,
 * -ECONNRESET when the client hangs up meanwhile. *done: the bytes written. */
static int write_waiting(struct serve_request *r, int fd, const char *b, size_t n, size_t *done)
{
	uint64_t deadline = now_usec() + STDIN_WAIT_USEC;

	*done = 0;
	if (al_fd_nonblock(fd, true) < 0)
		return -errno;
	while (*done < n) {
		struct pollfd pfd = {.fd = fd, .events = POLLOUT};
		ssize_t k = write(fd, b + *done, n - *done);

		if (k > 0) {
			*done += (size_t)k;
			deadline = now_usec() + STDIN_WAIT_USEC;
			continue;
		}
		if (k < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		if (serve_client_gone(r))
			return -ECONNRESET;
		if (now_usec() >= deadline)
			return -ETIMEDOUT;
		(void)poll(&pfd, 1, WAIT_MSEC);
	}
	return 0;
}

static int write_stdin(struct serve_request *r, struct serve_process *p)
{
	_cleanup_close_ int fd = stdin_dup(p);
	size_t done = 0;
	bool eof;
	int k;

	if (serve_query_bool(r, "eof", &eof) < 0)
		return 0;
	if (fd < 0)
		return serve_reply_error(r, 409, "conflict", NULL,
					 "The process's stdin is closed (or was not asked for: "
					 "\"stdin\": true)");
	k = write_waiting(r, fd, r->body ? r->body : "", r->len, &done);
	if (k == -ECONNRESET)
		return k;
	if (k == -ETIMEDOUT)
		return serve_reply_error(
		    r, 409, "conflict", NULL,
		    "The process has not read its stdin for %llu s: %zu of %zu "
		    "bytes written",
		    STDIN_WAIT_USEC / 1000000, done, r->len);
	if (k < 0)
		return serve_reply_errno(r, k == -EPIPE ? -EBUSY : k, NULL,
					 "The process no longer reads its stdin");
	if (eof && p->terminal) {
		struct termios t;
		char eofs[2];

		/* A terminal's end of input is its EOF character, twice after a partial line. */
		if (tcgetattr(fd, &t) == 0) {
			eofs[0] = eofs[1] = (char)t.c_cc[VEOF];
			(void)al_write_all(fd, eofs, 2);
		}
	} else if (eof) {
		(void)pthread_mutex_lock(&p->lock);
		p->stdin_open = false;
		p->child.in = al_close(p->child.in);
		(void)pthread_mutex_unlock(&p->lock);
	}
	return serve_reply_bytes(r, 204, NULL, "", 0);
}

static int parse_signal(struct json_object *v)
{
	static const struct {
		const char *name;
		int signo;
	} signals[] = {{"INT", SIGINT},	  {"TERM", SIGTERM}, {"HUP", SIGHUP},  {"QUIT", SIGQUIT},
		       {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"KILL", SIGKILL}};
	const char *s = json_object_get_string(v);

	for (size_t i = 0; i < ELEMENTSOF(signals); i++) {
		if (json_object_is_type(v, json_type_int) &&
		    json_object_get_int(v) == signals[i].signo)
			return signals[i].signo;
		if (json_object_is_type(v, json_type_string) &&
		    (streq(s, signals[i].name) ||
		     (startswith(s, "SIG") && streq(s + 3, signals[i].name))))
			return signals[i].signo;
	}
	return -EINVAL;
}

static int signal_process(struct serve_request *r, struct serve_process *p)
{
	_cleanup_(al_json_putp) struct json_object *body = NULL;
	struct json_object *v;
	int signo, k;

	k = serve_body_object(r, &body);
	if (k < 0)
		return 0;
	json_object_object_foreach(body, key, val)
	{
		(void)val;
		if (!streq(key, "signal"))
			return bad(r, key, "not a field (only signal)") == -EINVAL ? 0 : -ENOMEM;
	}
	v = json_object_object_get(body, "signal");
	signo = parse_signal(v);
	if (signo < 0)
		return bad(r, "signal", "one of INT, TERM, HUP, QUIT, USR1, USR2, KILL") == -EINVAL
			   ? 0
			   : -ENOMEM;
	/* The child passes it on to the command; KILL ends the child, and its session kills the
	 * command. */
	(void)pthread_mutex_lock(&p->lock);
	k = p->child.pidfd >= 0 && !p->child.reaped
		? RET_NERRNO((int)syscall(SYS_pidfd_send_signal, p->child.pidfd, signo, NULL, 0))
		: -ESRCH;
	(void)pthread_mutex_unlock(&p->lock);
	if (k < 0)
		return serve_reply_error(r, 409, "conflict", NULL, "The process has ended");
	return serve_reply_bytes(r, 204, NULL, "", 0);
}

static int resize(struct serve_request *r, struct serve_process *p)
{
	_cleanup_(al_json_putp) struct json_object *body = NULL;
	struct winsize ws = {0};
	unsigned short cols = 0, rows = 0;
	int k = 0;

	if (serve_body_object(r, &body) < 0)
		return 0;
	json_object_object_foreach(body, key, v)
	{
		if (streq(key, "cols"))
			k = parse_size(r, v, key, &cols);
		else if (streq(key, "rows"))
			k = parse_size(r, v, key, &rows);
		else
			k = bad(r, key, "not a field (cols, rows)");
		if (k < 0)
			return k == -EINVAL ? 0 : k;
	}
	if (!cols || !rows)
		return bad(r, !cols ? "cols" : "rows", "required") == -EINVAL ? 0 : -ENOMEM;
	if (!p->terminal)
		return serve_reply_error(r, 409, "conflict", NULL,
					 "The process has no terminal (\"terminal\": true)");
	ws.ws_col = cols, ws.ws_row = rows;
	(void)pthread_mutex_lock(&p->lock);
	k = p->stdin_open ? RET_NERRNO(ioctl(p->child.pty, TIOCSWINSZ, &ws)) : -ESRCH;
	(void)pthread_mutex_unlock(&p->lock);
	if (k < 0)
		return serve_reply_error(r, 409, "conflict", NULL, "The process has ended");
	return serve_reply_bytes(r, 204, NULL, "", 0);
}

static int list(struct serve_request *r, const char *session)
{
	_cleanup_(al_json_putp) struct json_object *a = json_object_new_array();

	prune(r->srv);
	if (!a)
		return -ENOMEM;
	(void)pthread_mutex_lock(&r->srv->lock);
	for (struct serve_process *p = r->srv->processes; p; p = p->next) {
		struct json_object *o;

		if (!streq(p->session, session) || !streq(p->client, r->client.key))
			continue;
		o = process_json(p);
		if (!o || json_object_array_add(a, o) < 0) {
			json_object_put(o);
			(void)pthread_mutex_unlock(&r->srv->lock);
			return -ENOMEM;
		}
	}
	(void)pthread_mutex_unlock(&r->srv->lock);
	return serve_reply_json(r, 200, a);
}

int serve_processes(struct serve_request *r, const char *session)
{
	struct serve_process *p;
	const char *what = r->n_seg == 6 ? r->seg[5] : NULL;
	bool post = streq(r->method, "POST"), follow = true;
	int k;

	if (r->n_seg == 4 && post)
		return start(r, session);
	if (r->n_seg == 4 && streq(r->method, "GET"))
		return list(r, session);
	if (r->n_seg < 5 || r->n_seg > 6)
		return serve_reply_error(r, 404, "not_found", NULL, "No such endpoint or method");
	p = find(r, session, r->seg[4]);
	if (!p)
		return 0;
	if (!what && streq(r->method, "GET")) {
		_cleanup_(al_json_putp) struct json_object *o = process_json(p);

		k = o ? serve_reply_json(r, 200, o) : -ENOMEM;
	} else if (!what && streq(r->method, "DELETE")) {
		bool was;

		process_kill(p);
		(void)pthread_mutex_lock(&r->srv->lock);
		was = unlink_locked(r->srv, p);
		(void)pthread_mutex_unlock(&r->srv->lock);
		if (was)
			process_unref(r->srv, p); /* the table's */
		k = serve_reply_bytes(r, 204, NULL, "", 0);
	} else if (what && streq(what, "output") && streq(r->method, "GET")) {
		if (serve_query_bool(r, "follow", &follow) < 0) {
			k = 0;
		} else {
			follow = serve_query(r, "follow") ? follow : true;
			return stream(r, p, false, follow);
		}
	} else if (what && streq(what, "stdin") && post) {
		k = write_stdin(r, p);
	} else if (what && streq(what, "signal") && post) {
		k = signal_process(r, p);
	} else if (what && streq(what, "resize") && post) {
		k = resize(r, p);
	} else {
		k = serve_reply_error(r, 404, "not_found", NULL, "No such endpoint or method");
	}
	process_unref(r->srv, p);
	return k;
}
