#define LOG_MODULE "mcp"

/* The server's loop: stdin's lines are read (each at most MCP_MESSAGE_MAX bytes; a longer one is
 * answered with an error and skipped), answered in order of completion on stdout (nothing else
 * is written there), and each tool call runs in a child process: `airlock exec`, `airlock
 * session exec ID --request -` or `airlock session start` from this binary, or a fork that does a
 * file operation. A call's signals or crash stay its own, several run at once, and
 * notifications/cancelled kills one. The sessions it starts are owned by it (--owner): it stops
 * them when stdin ends or a signal comes, and they end by themselves if it is killed. */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/fd-util.h"
#include "common/json-util.h"
#include "common/log.h"
#include "launcher/launcher.h"
#include "mcp/mcp.h"
#include "policy/policy.h"

#define OUTPUT_MAX (256 * 1024 * 1024) /* what a child may print: a result is far smaller */
#define ERRORS_MAX (64 * 1024)
#define KILL_GRACE_USEC (3ULL * 1000000)
#define CHUNK 65536

struct call {
	struct json_object *id; /* the request's; NULL once cancelled (no answer then) */
	struct mcp_call plan;
	bool fresh; /* session_start: a fresh workspace (agent_fresh_workspace()) */
	pid_t pid;
	int pidfd, out, err;
	char *obuf, *ebuf;
	size_t olen, elen;
	uint64_t kill_at; /* when it gets SIGKILL; 0: not being killed */
	struct call *next;
};

struct server {
	const struct mcp_options *o;
	struct mcp_limits limits;
	bool initialized;
	struct call *calls;
	unsigned n_calls;
	char (*sessions)[LAUNCHER_SESSION_ID_MAX];
	unsigned n_sessions;
	char *in;
	size_t in_len;
	bool in_skip, in_eof, out_gone;
	int sigfd;
	pid_t self;
};

static uint64_t now_usec(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* ---- output ---- */

static void send_line(struct server *s, char *l)
{
	if (!l)
		return;
	if (!s->out_gone && al_write_all(STDOUT_FILENO, l, strlen(l)) < 0) {
		log_warning("Failed to write to stdout: the client is gone");
		s->out_gone = true;
	}
	free(l);
}

static void send_error(struct server *s, struct json_object *id, int code, const char *msg)
{
	char *l = NULL;

	if (mcp_error_line(id, code, msg, &l) >= 0)
		send_line(s, l);
}

/* Answers id with result (taken). */
static void send_result(struct server *s, struct json_object *id, struct json_object *result)
{
	char *l = NULL;

	if (mcp_result_line(id, result, &l) < 0)
		send_error(s, id, MCP_INTERNAL_ERROR, "Out of memory");
	else
		send_line(s, l);
}

static void send_tool_error(struct server *s, struct json_object *id, const char *msg)
{
	struct json_object *r = NULL;

	if (mcp_call_error(msg, &r) < 0)
		send_error(s, id, MCP_INTERNAL_ERROR, "Out of memory");
	else
		send_result(s, id, r);
}

/* ---- sessions of ours ---- */

static int session_index(const struct server *s, const char *id)
{
	for (unsigned i = 0; i < s->n_sessions; i++)
		if (streq(s->sessions[i], id))
			return (int)i;
	return -ENOENT;
}

static void session_forget(struct server *s, const char *id)
{
	int i = session_index(s, id);

	if (i >= 0)
		memmove(s->sessions[i], s->sessions[i + 1],
			(s->n_sessions-- - (unsigned)i - 1) * sizeof(s->sessions[0]));
}

/* ---- children ---- */

/* The arguments of the child airlock that runs c. */
static int child_args(const struct server *s, const struct call *c, char *owner, char **args,
		      size_t max)
{
	const struct agent_exec_options *e = &s->o->exec;
	size_t n = 0;
	int r;

	r = agent_argv_push(args, &n, max, "airlock");
	if (c->plan.tool == MCP_TOOL_SESSION_EXEC) {
		r = agent_argv_push(args, &n, max, "session") ?: agent_argv_push(args, &n, max, "exec")
						   ?: agent_argv_push(args, &n, max, c->plan.session)
						       ?: agent_argv_push(args, &n, max, "--request")
							  ?: agent_argv_push(args, &n, max, "-");
		return r;
	}
	if (c->plan.tool == MCP_TOOL_SESSION_START) {
		r = agent_argv_push(args, &n, max, "session") ?: agent_argv_push(args, &n, max, "start")
						   ?: agent_argv_push(args, &n, max, "--policy")
						       ?: agent_argv_push(args, &n, max, "/dev/stdin")
							  ?: agent_argv_push(args, &n, max, "--owner")
							     ?: agent_argv_push(args, &n, max, owner)
								?: agent_argv_push(args, &n, max, "--ttl")
								   ?: agent_argv_push(args, &n, max,
									   c->plan.ttl);
		/* Without a policy or workspace of its own, a session starts empty, as exec does */
		if (r >= 0 && c->fresh)
			r = agent_argv_push(args, &n, max, "--fresh-workspace");
		if (r >= 0 && e->admitted_path)
			r = agent_argv_push(args, &n, max, "--admitted")
				?: agent_argv_push(args, &n, max, e->admitted_path);
		return r;
	}
	r = agent_argv_push(args, &n, max, "exec")
		?: agent_exec_options_argv(e, s->o->broker_argv, args, &n, max);
	if (r >= 0)
		r = agent_argv_push(args, &n, max, "--request")
			?: agent_argv_push(args, &n, max, "-");
	return r;
}

static int data_memfd(const char *data, size_t len)
{
	_cleanup_close_ int fd = memfd_create("airlock-mcp", MFD_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (al_write_all(fd, data, len) < 0 || lseek(fd, 0, SEEK_SET) < 0)
		return -errno ?: -EIO;
	return TAKE_FD(fd);
}

/* The JSON the file tools print: {"error": {"kind": "failed", "message": ...}} or what ok
 * holds. */
static int print_file_result(int r, const struct al_error *err, struct json_object *ok)
{
	_cleanup_json_ struct json_object *o = ok, *e = NULL;
	_cleanup_free_ char *s = NULL;

	if (r < 0) {
		(void)json_object_put(TAKE_PTR(o));
		o = json_object_new_object();
		e = json_object_new_object();
		if (!o || !e || al_json_add(e, "kind", json_object_new_string("failed")) < 0 ||
		    al_json_add(e, "message",
				json_object_new_string(err->msg[0] ? err->msg : strerror(-r))) <
			0 ||
		    al_json_add(o, "error", TAKE_PTR(e)) < 0)
			return -ENOMEM;
	}
	if (!o || al_json_to_string(o, &s) < 0)
		return -ENOMEM;
	return al_write_all(STDOUT_FILENO, s, strlen(s));
}

/* Well-formed UTF-8 (no overlong form, surrogate, or value past U+10FFFF). */
static bool is_utf8(const unsigned char *p, size_t len)
{
	for (size_t i = 0; i < len;) {
		unsigned char c = p[i];
		size_t n = c < 0x80		? 0
			   : (c & 0xe0) == 0xc0 ? 1
			   : (c & 0xf0) == 0xe0 ? 2
			   : (c & 0xf8) == 0xf0 ? 3
						: 4;
		uint32_t v = n == 1 ? c & 0x1f : n == 2 ? c & 0x0f : c & 0x07;

		if (n == 4 || i + n >= len + (n == 0))
			return n == 0;
		if (n == 0) {
			i++;
			continue;
		}
		for (size_t k = 1; k <= n; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				return false;
			v = v << 6 | (p[i + k] & 0x3f);
		}
		if ((n == 1 && v < 0x80) || (n == 2 && v < 0x800) || (n == 3 && v < 0x10000) ||
		    v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
			return false;
		i += n + 1;
	}
	return true;
}

/* In the forked child: the file operation or session stop, its JSON on stdout. */
_noreturn_ static void run_in_child(const struct mcp_call *c)
{
	_cleanup_free_ char *data = NULL;
	struct json_object *ok = json_object_new_object(), *list = NULL;
	struct al_error err = {0};
	size_t len = 0;
	int r;

	if (!ok)
		_exit(1);
	switch (c->tool) {
	case MCP_TOOL_READ_FILE:
		r = agent_file_read(c->session, c->path, &data, &len, &err);
		if (r >= 0 && !is_utf8((const unsigned char *)data, len))
			r = al_error_set(&err, -EILSEQ, "%s: not UTF-8 text (%zu bytes)", c->path,
					 len);
		if (r >= 0)
			r = al_json_add(ok, "path", json_object_new_string(c->path)) ?:
			    al_json_add(ok, "content", json_object_new_string_len(data, (int)len)) ?:
			    al_json_add(ok, "size", json_object_new_int64((int64_t)len));
		break;
	case MCP_TOOL_WRITE_FILE:
		r = agent_file_write(c->session, c->path, c->data, c->len, c->file_flags, &err);
		if (r >= 0)
			r = al_json_add(ok, "path", json_object_new_string(c->path))
				?: al_json_add(ok, "size", json_object_new_int64((int64_t)c->len));
		break;
	case MCP_TOOL_LIST_FILES:
		r = agent_file_list(c->session, c->path, &list, &err);
		if (r >= 0)
			r = al_json_add(ok, "path", json_object_new_string(c->path))
				?: al_json_add(ok, "entries", list);
		break;
	case MCP_TOOL_REMOVE_FILE:
		r = agent_file_remove(c->session, c->path, &err);
		if (r >= 0)
			r = al_json_add(ok, "removed", json_object_new_string(c->path));
		break;
	case MCP_TOOL_SESSION_STOP:
		r = launcher_session_stop(c->session, &err);
		if (r >= 0)
			r = al_json_add(ok, "stopped", json_object_new_string(c->session));
		break;
	default:
		r = -EINVAL;
		break;
	}
	_exit(print_file_result(r, &err, ok) < 0 ? 1 : 0);
}

static int make_pipe(int p[2])
{
	return RET_NERRNO(pipe2(p, O_CLOEXEC));
}

static int spawn(struct server *s, struct call *c, int stdin_fd)
{
	char owner[16], *args[48];
	int out[2] = {-EBADF, -EBADF}, err[2] = {-EBADF, -EBADF};
	bool fork_only = c->plan.tool != MCP_TOOL_RUN_CODE &&
			 c->plan.tool != MCP_TOOL_SESSION_EXEC &&
			 c->plan.tool != MCP_TOOL_SESSION_START;
	pid_t pid;
	int r;

	(void)snprintf(owner, sizeof(owner), "%d", (int)s->self);
	r = fork_only ? 0 : child_args(s, c, owner, args, ELEMENTSOF(args));
	if (r >= 0)
		r = make_pipe(out);
	if (r >= 0)
		r = make_pipe(err);
	if (r < 0)
		goto fail;
	pid = fork();
	if (pid < 0) {
		r = -errno;
		goto fail;
	}
	if (pid == 0) {
		sigset_t none;

		/* It ends with the server, whatever ends that: airlock passes TERM on. */
		if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != s->self)
			_exit(1);
		(void)setpgid(0, 0);
		(void)sigemptyset(&none);
		(void)sigprocmask(SIG_SETMASK, &none, NULL);
		if (dup2(stdin_fd >= 0 ? stdin_fd : open("/dev/null", O_RDONLY | O_CLOEXEC),
			 STDIN_FILENO) < 0 ||
		    dup2(out[1], STDOUT_FILENO) < 0 || dup2(err[1], STDERR_FILENO) < 0)
			_exit(1);
		if (fork_only)
			run_in_child(&c->plan);
		execv("/proc/self/exe", args);
		_exit(127);
	}
	c->pid = pid;
	c->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (c->pidfd < 0) {
		r = -errno;
		(void)kill(pid, SIGKILL);
		(void)waitpid(pid, NULL, 0);
		goto fail;
	}
	(void)al_close(out[1]);
	(void)al_close(err[1]);
	c->out = out[0];
	c->err = err[0];
	(void)al_fd_nonblock(c->out, true);
	(void)al_fd_nonblock(c->err, true);
	return 0;
fail:
	for (int i = 0; i < 2; i++) {
		(void)al_close(out[i]);
		(void)al_close(err[i]);
	}
	return r;
}

static void call_free(struct call *c)
{
	(void)json_object_put(c->id);
	mcp_call_done(&c->plan);
	(void)al_close(c->pidfd);
	(void)al_close(c->out);
	(void)al_close(c->err);
	free(c->obuf);
	free(c->ebuf);
	free(c);
}

/* Reads what fd has (non-blocking) onto buf, at most max bytes kept. 0 at its end, 1 when more
 * may come, -errno. */
static int drain(int fd, char **buf, size_t *len, size_t max)
{
	if (fd < 0)
		return 0;
	for (;;) {
		char *b;
		ssize_t k;

		if (*len >= max)
			return -EFBIG;
		b = realloc(*buf, *len + CHUNK + 1);
		if (!b)
			return -ENOMEM;
		*buf = b;
		k = read(fd, b + *len, MIN((size_t)CHUNK, max - *len));
		if (k < 0)
			return errno == EAGAIN ? 1 : errno == EINTR ? 1 : -errno;
		if (k == 0)
			return 0;
		*len += (size_t)k;
		b[*len] = '\0';
	}
}

static void cancel(struct call *c)
{
	if (c->kill_at)
		return;
	(void)kill(c->pid, SIGTERM);
	c->kill_at = now_usec() + KILL_GRACE_USEC;
}

/* The session_start child printed the new session's id: it is ours now. Its result. */
static int session_started(struct server *s, struct call *c, struct json_object **ret)
{
	_cleanup_json_ struct json_object *o = NULL;
	_cleanup_free_ char *text = NULL;
	struct launcher_session_info info;
	struct launcher_session_usage u;
	char *id = c->obuf ? c->obuf : (char *)"";
	int r;

	id[strcspn(id, "\n")] = '\0';
	if (!launcher_session_id_is_valid(id))
		return mcp_call_error(c->ebuf && *c->ebuf ? c->ebuf : "The session did not start",
				      ret);
	if (session_index(s, id) < 0)
		strcpy(s->sessions[s->n_sessions++], id);
	log_info("Session %s started", id);
	r = launcher_session_info_of(id, &info, NULL);
	if (r >= 0) {
		launcher_session_usage(&info, &u);
		r = agent_session_json(&info, &u, &o);
	}
	if (r < 0) {
		o = json_object_new_object();
		r = o ? 0 : -ENOMEM;
	}
	if (r >= 0)
		r = al_json_add(o, "session_id", json_object_new_string(id));
	if (r >= 0)
		r = al_json_to_string(o, &text);
	if (r < 0)
		return r;
	return mcp_call_result(c->plan.tool, text, strlen(text), NULL, ret);
}

/* The child ended: its answer. */
static void finish(struct server *s, struct call *c)
{
	struct json_object *result = NULL;
	int status = 0, r;

	(void)drain(c->out, &c->obuf, &c->olen, OUTPUT_MAX);
	(void)drain(c->err, &c->ebuf, &c->elen, ERRORS_MAX);
	(void)waitpid(c->pid, &status, 0);
	if (c->ebuf) {
		/* The last line of its stderr, without airlock's prefix, for an error. */
		char *e = c->ebuf;

		while (c->elen > 0 && e[c->elen - 1] == '\n')
			e[--c->elen] = '\0';
		if (strrchr(e, '\n'))
			memmove(e, strrchr(e, '\n') + 1, strlen(strrchr(e, '\n') + 1) + 1);
		if (startswith(e, "airlock: "))
			memmove(e, e + 9, strlen(e + 9) + 1);
	}
	if (!c->id)
		return;
	if (c->plan.tool == MCP_TOOL_SESSION_START && WIFEXITED(status) && WEXITSTATUS(status) == 0)
		r = session_started(s, c, &result);
	else if (c->plan.tool == MCP_TOOL_SESSION_START)
		r = mcp_call_error(c->ebuf && *c->ebuf ? c->ebuf : "The session did not start",
				   &result);
	else
		r = mcp_call_result(c->plan.tool, c->obuf ? c->obuf : "", c->olen, c->ebuf,
				    &result);
	if (r >= 0 && c->plan.tool == MCP_TOOL_SESSION_STOP && WIFEXITED(status) &&
	    WEXITSTATUS(status) == 0 && c->obuf && strstr(c->obuf, "\"stopped\""))
		session_forget(s, c->plan.session);
	if (r < 0)
		send_error(s, c->id, MCP_INTERNAL_ERROR, "Failed to make the tool's result");
	else
		send_result(s, c->id, result);
}

/* ---- requests ---- */

/* The request of a session's policy (only its policy, workspace and memory count). */
static int session_policy_memfd(struct server *s, struct call *c, struct al_error *err)
{
	const struct mcp_call *p = &c->plan;
	_cleanup_(policy_freep) struct policy *pol = NULL;
	_cleanup_free_ char *canonical = NULL;
	struct agent_request req = {
	    .policy_json = p->policy_json,
	    .policy_path = p->policy_name,
	    .workspace = p->workspace,
	    .memory = p->memory,
	};
	enum agent_error_kind kind = AGENT_ERROR_NONE;
	int r;

	r = agent_session_policy(&req, &s->o->exec, &pol, &kind, err);
	if (r < 0)
		return r;
	c->fresh = agent_fresh_workspace(&req, &s->o->exec, pol);
	r = policy_to_canonical_json(pol, &canonical);
	if (r < 0)
		return al_error_set_errno(err, r, "Failed to write the policy");
	r = data_memfd(canonical, strlen(canonical));
	if (r < 0)
		return al_error_set_errno(err, r, "Failed to pass the policy on");
	return r;
}

static unsigned starting(const struct server *s)
{
	unsigned n = 0;

	for (const struct call *c = s->calls; c; c = c->next)
		n += c->plan.tool == MCP_TOOL_SESSION_START;
	return n;
}

static void tools_call(struct server *s, struct json_object *id, struct json_object *params)
{
	_cleanup_close_ int in = -EBADF;
	struct al_error err = {0};
	struct call *c;
	int r;

	c = calloc(1, sizeof(*c));
	if (!c)
		return send_error(s, id, MCP_INTERNAL_ERROR, "Out of memory");
	*c = (struct call){.pid = -1, .pidfd = -EBADF, .out = -EBADF, .err = -EBADF};
	r = mcp_call_plan(params, &s->limits, &c->plan, &err);
	if (r == MCP_INVALID_PARAMS)
		send_error(s, id, MCP_INVALID_PARAMS, err.msg);
	else if (r < 0)
		send_tool_error(s, id, err.msg[0] ? err.msg : strerror(-r));
	if (r < 0)
		return call_free(c);
	if (c->plan.session[0] && session_index(s, c->plan.session) < 0)
		r = al_error_set(&err, -ENOENT,
				 "session_id: %s is not a session of this server (session_start "
				 "gives one)",
				 c->plan.session);
	else if (s->n_calls >= s->o->max_calls)
		r = al_error_set(&err, -EBUSY, "%u calls are running already: wait for one",
				 s->n_calls);
	else if (c->plan.tool == MCP_TOOL_SESSION_START &&
		 s->n_sessions + starting(s) >= s->o->max_sessions)
		r = al_error_set(&err, -EUSERS, "This server has %u sessions already: stop one",
				 s->o->max_sessions);
	if (r >= 0 && c->plan.request)
		r = in = data_memfd(c->plan.request, strlen(c->plan.request));
	else if (r >= 0 && c->plan.tool == MCP_TOOL_SESSION_START)
		r = in = session_policy_memfd(s, c, &err);
	if (r >= 0)
		r = spawn(s, c, in);
	if (r < 0) {
		send_tool_error(s, id, err.msg[0] ? err.msg : strerror(-r));
		return call_free(c);
	}
	c->id = json_object_get(id);
	c->next = s->calls;
	s->calls = c;
	s->n_calls++;
	log_debug("Call %s started (pid %d)", mcp_tool_to_string(c->plan.tool), (int)c->pid);
}

static bool ids_equal(struct json_object *a, struct json_object *b)
{
	if (!a || !b || json_object_get_type(a) != json_object_get_type(b))
		return false;
	if (json_object_is_type(a, json_type_int))
		return json_object_get_int64(a) == json_object_get_int64(b);
	return streq(json_object_get_string(a), json_object_get_string(b));
}

static void cancelled(struct server *s, struct json_object *params)
{
	struct json_object *id = NULL;

	if (!json_object_is_type(params, json_type_object) ||
	    !json_object_object_get_ex(params, "requestId", &id))
		return;
	for (struct call *c = s->calls; c; c = c->next)
		if (ids_equal(c->id, id)) {
			log_debug("Call %s cancelled", mcp_tool_to_string(c->plan.tool));
			/* The spec: no answer to a cancelled request. */
			c->id = (json_object_put(c->id), NULL);
			cancel(c);
		}
}

static void request(struct server *s, const struct mcp_message *m)
{
	struct json_object *result = NULL;
	struct al_error err = {0};
	int r;

	if (streq(m->method, "ping")) {
		result = json_object_new_object();
		return result ? send_result(s, m->id, result)
			      : send_error(s, m->id, MCP_INTERNAL_ERROR, "Out of memory");
	}
	if (streq(m->method, "initialize")) {
		if (s->initialized)
			return send_error(s, m->id, MCP_INVALID_REQUEST, "Initialized already");
		r = mcp_initialize_result(m->params, &result, &err);
		if (r < 0)
			return send_error(s, m->id, MCP_INVALID_PARAMS,
					  err.msg[0] ? err.msg : "Out of memory");
		s->initialized = true;
		return send_result(s, m->id, result);
	}
	if (!s->initialized)
		return send_error(s, m->id, MCP_INVALID_REQUEST,
				  "Not initialized: send initialize first");
	if (streq(m->method, "tools/list")) {
		r = mcp_tools_list(&s->limits, &result);
		return r < 0 ? send_error(s, m->id, MCP_INTERNAL_ERROR, "Out of memory")
			     : send_result(s, m->id, result);
	}
	if (streq(m->method, "tools/call"))
		return tools_call(s, m->id, m->params);
	send_error(s, m->id, MCP_METHOD_NOT_FOUND, "Method not found");
}

static void message(struct server *s, const char *buf, size_t len)
{
	struct mcp_message m = {0};
	struct json_object *id = NULL;
	struct al_error err = {0};
	int r;

	while (len > 0 && (buf[len - 1] == '\r' || buf[len - 1] == ' ' || buf[len - 1] == '\t'))
		len--;
	if (len == 0)
		return;
	r = mcp_message_parse(buf, len, &m, &id, &err);
	if (r < 0) {
		log_debug("Refused a message: %s", err.msg);
		send_error(s, id, r, r == MCP_PARSE_ERROR ? "Parse error: not JSON" : err.msg);
		(void)json_object_put(id);
		return;
	}
	(void)json_object_put(id);
	if (m.kind == MCP_MESSAGE_REQUEST)
		request(s, &m);
	else if (m.kind == MCP_MESSAGE_NOTIFICATION && streq(m.method, "notifications/cancelled"))
		cancelled(s, m.params);
	/* Other notifications (initialized, progress) and responses need nothing. */
	mcp_message_done(&m);
}

/* Reads what stdin has and handles each whole line. */
static void read_input(struct server *s)
{
	char *nl;
	ssize_t k;

	if (!s->in) {
		s->in = malloc(MCP_MESSAGE_MAX + 1);
		if (!s->in) {
			s->in_eof = true;
			return;
		}
	}
	k = read(STDIN_FILENO, s->in + s->in_len, MCP_MESSAGE_MAX + 1 - s->in_len);
	if (k < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (k <= 0) {
		s->in_eof = true;
		if (s->in_len > 0 && !s->in_skip)
			message(s, s->in, s->in_len);
		s->in_len = 0;
		return;
	}
	s->in_len += (size_t)k;
	while ((nl = memchr(s->in, '\n', s->in_len))) {
		size_t n = (size_t)(nl - s->in);

		if (!s->in_skip)
			message(s, s->in, n);
		s->in_skip = false;
		memmove(s->in, nl + 1, s->in_len - n - 1);
		s->in_len -= n + 1;
	}
	if (s->in_len > MCP_MESSAGE_MAX) {
		if (!s->in_skip)
			send_error(s, NULL, MCP_INVALID_REQUEST,
				   "Message larger than " STRINGIFY(MCP_MESSAGE_MAX) " bytes");
		s->in_skip = true;
		s->in_len = 0;
	}
}

/* ---- the loop ---- */

static void reap(struct server *s)
{
	for (struct call **p = &s->calls; *p;) {
		struct call *c = *p;
		struct pollfd pfd = {.fd = c->pidfd, .events = POLLIN};

		if (poll(&pfd, 1, 0) <= 0) {
			p = &c->next;
			continue;
		}
		finish(s, c);
		*p = c->next;
		s->n_calls--;
		call_free(c);
	}
}

static int signals_fd(void)
{
	sigset_t mask;

	(void)sigemptyset(&mask);
	(void)sigaddset(&mask, SIGTERM);
	(void)sigaddset(&mask, SIGINT);
	(void)sigaddset(&mask, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
		return -errno;
	return RET_NERRNO(signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK));
}

/* One round: waits for stdin, the children's output and ends, a signal. 1 to go on, 0 to stop
 * (a signal). */
static int round_once(struct server *s)
{
	struct pollfd pfd[2 + 3 * 64];
	uint64_t now = now_usec(), next = 0;
	size_t n = 0;
	int timeout;

	pfd[n++] = (struct pollfd){.fd = s->sigfd, .events = POLLIN};
	pfd[n++] = (struct pollfd){.fd = s->in_eof ? -1 : STDIN_FILENO, .events = POLLIN};
	for (struct call *c = s->calls; c && n + 3 <= ELEMENTSOF(pfd); c = c->next) {
		if (c->kill_at && now >= c->kill_at) {
			(void)kill(c->pid, SIGKILL);
			(void)kill(-c->pid, SIGKILL);
		} else if (c->kill_at && (!next || c->kill_at < next)) {
			next = c->kill_at;
		}
		pfd[n++] = (struct pollfd){.fd = c->pidfd, .events = POLLIN};
		pfd[n++] = (struct pollfd){.fd = c->out, .events = POLLIN};
		pfd[n++] = (struct pollfd){.fd = c->err, .events = POLLIN};
	}
	timeout = next ? (int)((next - now) / 1000 + 1) : -1;
	if (poll(pfd, n, timeout) < 0 && errno != EINTR)
		return -errno;
	if (pfd[0].revents) {
		struct signalfd_siginfo si;

		if (read(s->sigfd, &si, sizeof(si)) == sizeof(si)) {
			log_info("Got signal %u: stopping", si.ssi_signo);
			return 0;
		}
	}
	if (pfd[1].revents)
		read_input(s);
	for (struct call *c = s->calls; c; c = c->next) {
		int k = drain(c->out, &c->obuf, &c->olen, OUTPUT_MAX);
		int e = drain(c->err, &c->ebuf, &c->elen, ERRORS_MAX);

		/* At their end they are closed: poll would say so again and again. */
		if (k == 0)
			c->out = al_close(c->out);
		if (e == 0)
			c->err = al_close(c->err);
		if (k == -EFBIG || e == -EFBIG)
			cancel(c);
	}
	reap(s);
	return 1;
}

/* Kills what runs, waits for it, stops the sessions. */
static void shut_down(struct server *s)
{
	for (struct call *c = s->calls; c; c = c->next) {
		if (c->id)
			c->id = (json_object_put(c->id), NULL);
		cancel(c);
	}
	while (s->calls) {
		struct call *c = s->calls;
		struct pollfd pfd = {.fd = c->pidfd, .events = POLLIN};
		uint64_t now = now_usec();

		if (poll(&pfd, 1, now >= c->kill_at ? 0 : (int)((c->kill_at - now) / 1000 + 1)) <=
		    0) {
			(void)kill(c->pid, SIGKILL);
			(void)kill(-c->pid, SIGKILL);
			(void)poll(&pfd, 1, -1);
		}
		(void)waitpid(c->pid, NULL, 0);
		s->calls = c->next;
		call_free(c);
	}
	s->n_calls = 0;
	for (unsigned i = 0; i < s->n_sessions; i++) {
		struct al_error err = {0};

		if (launcher_session_stop(s->sessions[i], &err) < 0)
			log_warning("Failed to stop session %s: %s", s->sessions[i], err.msg);
		else
			log_info("Session %s stopped", s->sessions[i]);
	}
	s->n_sessions = 0;
}

int mcp_server_run(const struct mcp_options *o)
{
	struct server s = {
	    .o = o,
	    .limits = {.policy_path = o->exec.policy_path != NULL,
		       .policy_dir = o->exec.policy_dir != NULL,
		       .allow = o->exec.allow},
	    .self = getpid(),
	};
	int r;

	s.sessions = calloc(o->max_sessions ? o->max_sessions : 1, sizeof(*s.sessions));
	if (!s.sessions)
		return -ENOMEM;
	s.sigfd = signals_fd();
	if (s.sigfd < 0) {
		free(s.sessions);
		return s.sigfd;
	}
	log_debug("Serving MCP on stdio (protocol %s)", MCP_PROTOCOL_LATEST);
	for (;;) {
		r = round_once(&s);
		if (r <= 0)
			break;
		/* stdin ended: the calls under way are answered, then it stops. */
		if ((s.in_eof && !s.calls) || s.out_gone)
			break;
	}
	shut_down(&s);
	(void)al_close(s.sigfd);
	free(s.in);
	free(s.sessions);
	return r < 0 ? r : 0;
}
