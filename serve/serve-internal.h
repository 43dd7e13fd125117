#pragma once

/* Internal interfaces of the serve module: for serve/ *.c and tests/unit/serve/ only. */

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/macro.h"
#include "serve/serve.h"

struct json_object;
struct MHD_Connection;
struct MHD_Daemon;

/* ---- serve.c: the service's state ---- */

#define SERVE_CLIENT_KEY_MAX 32

/* Who asked: "uid:N" over the Unix socket, "tcp" with the bearer token. Limits and the sessions
 * one may see are per client. */
struct serve_client {
	char key[SERVE_CLIENT_KEY_MAX];
};

struct serve_session;
struct spawn_job;
struct serve_process;

/* A listener's own: its daemon's closure. */
struct serve_listener {
	struct serve *srv;
	bool tcp;
};

struct serve {
	const struct serve_options *o;
	struct serve_listener listeners[2]; /* the Unix socket's, TCP's */
	pid_t pid;
	uint64_t started_usec;
	char *token; /* NULL without TCP */
	pthread_mutex_t lock;
	struct serve_session *sessions; /* a list, under lock */
	struct serve_process *processes;
	unsigned next_process;
	/* child.c's spawner: the thread that forks every child (PR_SET_PDEATHSIG). */
	pthread_t spawn_thread;
	pthread_mutex_t spawn_lock;
	pthread_cond_t spawn_cond;
	struct spawn_job *spawn_queue;
	bool spawn_stop;
	struct {
		uid_t uid;
		unsigned n;
	} conns[64]; /* the Unix socket's connections per uid, under lock */
	struct serve_usage {
		char key[SERVE_CLIENT_KEY_MAX];
		unsigned streams;
	} usage[64]; /* streams open per client, under lock */
};

/* Takes a stream of client c (an exec or a process's output): false when it has
 * o->max_streams already. serve_stream_put() gives it back. */
bool serve_stream_take(struct serve *s, const struct serve_client *c);
void serve_stream_put(struct serve *s, const struct serve_client *c);

/* ---- http.c: requests and replies ---- */

#define SERVE_SEGMENTS_MAX 8

struct serve_request {
	struct serve *srv;
	struct MHD_Connection *conn;
	int conn_fd;
	const char *method;
	char *path; /* the URL's path, a copy */
	char *seg[SERVE_SEGMENTS_MAX];
	size_t n_seg;
	char *body;
	size_t len, max;
	bool too_big, denied;
	struct serve_client client;
};

/* The request header name, or NULL. */
const char *serve_header(struct serve_request *r, const char *name);
/* The query argument name, or NULL. */
const char *serve_query(struct serve_request *r, const char *name);
/* Whether the query argument name holds a NUL byte (%00). */
bool serve_query_holds_nul(struct serve_request *r, const char *name);
/* A query flag: absent false, "true"/"1" true; anything else is a 400 (-EINVAL, replied). */
int serve_query_bool(struct serve_request *r, const char *name, bool *ret);
/* The client hung up (the connection's peer closed its side). */
bool serve_client_gone(const struct serve_request *r);

/* Replies (each returns 0, or -errno when even the reply could not be queued). */
int serve_reply_json(struct serve_request *r, unsigned status, struct json_object *o);
int serve_reply_bytes(struct serve_request *r, unsigned status, const char *type, const void *buf,
		      size_t len);
/* {"error": {"code", "message", "field"}}: code a word ("invalid_request", "not_found", ...),
 * field the request's field at fault or NULL. */
int serve_reply_error(struct serve_request *r, unsigned status, const char *code, const char *field,
		      const char *fmt, ...) _printf_(5, 6);
/* The reply for a -errno of an operation on path/field (404, 403, 409, 413, 507, 400...). */
int serve_reply_errno(struct serve_request *r, int error, const char *field, const char *msg);

/* A streamed reply: next() is called (in this connection's thread) for more, may wait, and
 * returns bytes written to buf, 0 at the end, or -errno (the connection is closed); done() is
 * called once when the reply is over, the client gone or not. */
struct serve_stream_ops {
	ssize_t (*next)(void *data, char *buf, size_t max);
	void (*done)(void *data);
};
int serve_reply_stream(struct serve_request *r, unsigned status, const char *type,
		       const struct serve_stream_ops *ops, void *data);

/* Loads libmicrohttpd (once). */
int serve_http_load(struct al_error *err);
/* Stops accepting (quiesce; the listening socket stays the caller's), or stops. */
void serve_http_stop(struct MHD_Daemon *d, bool quiesce);
/* Serves on listen_fd (taken by the daemon): the Unix socket, or TCP with the token. */
struct MHD_Daemon *serve_http_start(struct serve *s, int listen_fd, bool tcp);

/* The request body as a JSON object (400 replied when it is not one). */
int serve_body_object(struct serve_request *r, struct json_object **ret);

/* ---- child.c: child airlock processes ---- */

enum {
	SERVE_CHILD_STDOUT = 1u << 0,	/* a pipe to read */
	SERVE_CHILD_STDERR = 1u << 1,	/* a pipe to read */
	SERVE_CHILD_STDIN = 1u << 2,	/* a pipe to write */
	SERVE_CHILD_RESULT = 1u << 3,	/* a pipe to read, the child's fd 3 */
	SERVE_CHILD_TERMINAL = 1u << 4, /* a pty of ours as its stdio and controlling terminal */
};

struct serve_child {
	pid_t pid;
	int pidfd;
	int in, out, err, result; /* our ends, or -EBADF */
	int pty;		  /* the master, with SERVE_CHILD_TERMINAL (in and out are it) */
	bool reaped;
	int status; /* its wait status, once reaped */
};

/* The thread that forks every child, so that each dies with serve (its parent-death signal is
 * tied to that thread); stopped last. */
int serve_spawner_start(struct serve *s);
void serve_spawner_stop(struct serve *s);
/* Spawns this airlock binary with args (argv[0] is set), stdin from stdin_fd (borrowed; < 0:
 * /dev/null, unless SERVE_CHILD_STDIN) and the pipes flags asks for. */
struct serve_child_size {
	unsigned short cols, rows;
};
int serve_child_spawn(const struct serve *s, char *const *args, int stdin_fd, unsigned flags,
		      const struct serve_child_size *size, struct serve_child *ret);
/* Reads the child's stdout and stderr (each up to max bytes) until it ends; kills it when
 * gone(data) says the client went away. Returns its wait status. */
int serve_child_collect(struct serve_child *c, size_t max, bool (*gone)(const void *),
			const void *data, char **out, size_t *out_len, char **err);
/* SIGKILL through the pidfd (a reaped child's pidfd is safe: it names that process only). */
void serve_child_kill(struct serve_child *c);
/* Waits for its end (our ends stay open): its wait status. */
int serve_child_wait(struct serve_child *c);
/* Closes our ends and reaps it: waits for its end, or (!wait) kills it unless it ended. Returns
 * its wait status. */
int serve_child_done(struct serve_child *c, bool wait);

/* ---- the endpoints ---- */

int serve_exec(struct serve_request *r); /* POST /v1/exec */
/* Runs the request body as `airlock exec` does (session NULL) or in the session, and replies
 * the result: 200 when the program ran, 4xx/5xx by its error kind. */
int serve_run_request(struct serve_request *r, const char *session);
int serve_capabilities(struct serve_request *r); /* GET /v1/capabilities */
int serve_health(struct serve_request *r);	 /* GET /v1/health */

/* sessions.c: /v1/sessions[/ID[/checkpoints|/restore|/exec|/files...]] */
int serve_sessions(struct serve_request *r);
/* The session id of the client's (404 replied when it is not one of its own). */
int serve_session_find(struct serve_request *r, const char *id);
/* Stops every session serve started (on the way out). */
void serve_sessions_stop_all(struct serve *s);
size_t serve_sessions_count(struct serve *s);
/* Forgets the sessions that ended (their TTL, a stop from elsewhere), and their processes. */
void serve_sessions_prune(struct serve *s);

/* process.c: /v1/sessions/ID/processes[/PID[/stdin|/signal|/resize|/output]] */
int serve_processes(struct serve_request *r, const char *session);
/* Kills and forgets the processes of session (NULL: all). */
void serve_processes_end(struct serve *s, const char *session);
size_t serve_processes_count(struct serve *s);
