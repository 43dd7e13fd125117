#define LOG_MODULE "serve"

/* /v1/sessions: sessions started through serve, each its client's own (another client gets
 * 404 for it), ended with serve (its owner) or by their TTL; their checkpoints, their exec
 * requests and their workspace files. */

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/fd-util.h"
#include "common/json-util.h"
#include "common/log.h"
#include "common/parse-util.h"
#include "launcher/launcher.h"
#include "policy/policy.h"
#include "serve/serve-internal.h"

#define DEFAULT_TTL "1h"

struct serve_session {
	char id[LAUNCHER_SESSION_ID_MAX];
	char client[SERVE_CLIENT_KEY_MAX];
	struct serve_session *next;
};

size_t serve_sessions_count(struct serve *s)
{
	size_t n = 0;

	(void)pthread_mutex_lock(&s->lock);
	for (struct serve_session *x = s->sessions; x; x = x->next)
		n++;
	(void)pthread_mutex_unlock(&s->lock);
	return n;
}

static size_t count_of(struct serve *s, const char *client)
{
	size_t n = 0;

	for (struct serve_session *x = s->sessions; x; x = x->next)
		n += streq(x->client, client);
	return n;
}

static void forget(struct serve *s, const char *id)
{
	(void)pthread_mutex_lock(&s->lock);
	for (struct serve_session **p = &s->sessions; *p; p = &(*p)->next)
		if (streq((*p)->id, id)) {
			struct serve_session *x = *p;

			*p = x->next;
			free(x);
			break;
		}
	(void)pthread_mutex_unlock(&s->lock);
}

int serve_session_find(struct serve_request *r, const char *id)
{
	struct launcher_session_info info;
	bool found = false;

	(void)pthread_mutex_lock(&r->srv->lock);
	for (struct serve_session *x = r->srv->sessions; x && !found; x = x->next)
		found = streq(x->id, id) && streq(x->client, r->client.key);
	(void)pthread_mutex_unlock(&r->srv->lock);
	if (found && launcher_session_info_of(id, &info, NULL) < 0) {
		/* Its TTL passed. */
		serve_processes_end(r->srv, id);
		forget(r->srv, id);
		found = false;
	}
	if (!found)
		return serve_reply_error(r, 404, "not_found", NULL, "No session %s", AL_QUOTE(id)),
		       -ENOENT;
	return 0;
}

void serve_sessions_prune(struct serve *s)
{
	char(*ids)[LAUNCHER_SESSION_ID_MAX] = NULL;
	size_t n = 0, max = serve_sessions_count(s);

	ids = calloc(max + 1, sizeof(*ids));
	if (!ids)
		return;
	(void)pthread_mutex_lock(&s->lock);
	for (struct serve_session *x = s->sessions; x && n < max; x = x->next)
		strcpy(ids[n++], x->id);
	(void)pthread_mutex_unlock(&s->lock);
	for (size_t i = 0; i < n; i++) {
		struct launcher_session_info info;

		/* Its TTL passed, or it ended some other way. */
		if (launcher_session_info_of(ids[i], &info, NULL) < 0) {
			serve_processes_end(s, ids[i]);
			forget(s, ids[i]);
		}
	}
	free(ids);
}

void serve_sessions_stop_all(struct serve *s)
{
	struct serve_session *x;

	while ((x = s->sessions)) {
		s->sessions = x->next;
		(void)launcher_session_stop(x->id, NULL);
		free(x);
	}
}

static int reply_session(struct serve_request *r, unsigned status, const char *id)
{
	_cleanup_(al_json_putp) struct json_object *o = NULL;
	struct launcher_session_info info;
	struct launcher_session_usage u;
	struct al_error err = {0};
	int k;

	k = launcher_session_info_of(id, &info, &err);
	if (k < 0)
		return serve_reply_errno(r, k, NULL, err.msg);
	launcher_session_usage(&info, &u);
	k = agent_session_json(&info, &u, &o);
	return k < 0 ? k : serve_reply_json(r, status, o);
}

/* ---- create ---- */

struct create {
	struct agent_request req; /* policy_json, policy_path, workspace, memory */
	char ttl[32];
};

static void create_done(struct create *c)
{
	free(c->req.policy_json);
	free(c->req.policy_path);
	free(c->req.workspace);
	free(c->req.memory);
}

static int string_field(struct serve_request *r, struct json_object *v, const char *key, char **ret)
{
	if (!json_object_is_type(v, json_type_string))
		return serve_reply_error(r, 400, "invalid_request", key, "%s: not a string", key),
		       -EINVAL;
	*ret = strdup(json_object_get_string(v));
	return *ret ? 0 : -ENOMEM;
}

static int parse_create(struct serve_request *r, struct json_object *o, struct create *c)
{
	uint64_t usec;
	int k = 0;

	(void)snprintf(c->ttl, sizeof(c->ttl), DEFAULT_TTL);
	json_object_object_foreach(o, key, v)
	{
		if (streq(key, "policy") && json_object_is_type(v, json_type_object))
			k = al_json_to_string(v, &c->req.policy_json);
		else if (streq(key, "policy"))
			k = string_field(r, v, key, &c->req.policy_path);
		else if (streq(key, "workspace"))
			k = string_field(r, v, key, &c->req.workspace);
		else if (streq(key, "memory") &&
			 (!json_object_is_type(v, json_type_string) ||
			  al_parse_size(json_object_get_string(v), &usec) < 0))
			return serve_reply_error(r, 400, "invalid_request", key,
						 "memory: a size (\"512Mi\")"),
			       -EINVAL;
		else if (streq(key, "memory"))
			k = string_field(r, v, key, &c->req.memory);
		else if (streq(key, "ttl") && json_object_is_type(v, json_type_int) &&
			 json_object_get_int64(v) >= 0)
			(void)snprintf(c->ttl, sizeof(c->ttl), "%llds",
				       (long long)json_object_get_int64(v));
		else if (streq(key, "ttl") && json_object_is_type(v, json_type_string) &&
			 al_parse_duration(json_object_get_string(v), &usec) >= 0)
			(void)snprintf(c->ttl, sizeof(c->ttl), "%lluus", (unsigned long long)usec);
		else if (streq(key, "ttl"))
			return serve_reply_error(
				   r, 400, "invalid_request", key,
				   "ttl: a duration (\"30m\", \"0\": never) or seconds"),
			       -EINVAL;
		else
			return serve_reply_error(r, 400, "invalid_request", key,
						 "%s: not a field of a session", AL_QUOTE(key)),
			       -EINVAL;
		if (k < 0)
			return k;
	}
	return 0;
}

/* The field an error message of agent_session_policy() begins with, or NULL. */
static const char *field_of(const char *msg)
{
	static const char *const fields[] = {"policy", "workspace", "memory"};

	for (size_t i = 0; i < ELEMENTSOF(fields); i++)
		if (startswith(msg, fields[i]) && msg[strlen(fields[i])] == ':')
			return fields[i];
	return NULL;
}

/* Replies 500 for error r: returns -EIO, the request answered. */
static int failed(struct serve_request *r, int error, const char *msg)
{
	(void)serve_reply_errno(r, error, NULL, msg);
	return -EIO;
}

/* `airlock session start` with the planned policy (a memfd as its stdin), owned by serve. Every
 * failure is replied, and -EIO. */
static int start_session(struct serve_request *r, const struct policy *p, const char *ttl,
			 bool fresh, char *id, size_t size)
{
	_cleanup_free_ char *canonical = NULL, *out = NULL, *err = NULL;
	_cleanup_close_ int in = -EBADF;
	char owner[16], *args[16];
	struct serve_child c;
	size_t n = 0, len = 0;
	int k, status;

	k = policy_to_canonical_json(p, &canonical);
	if (k >= 0) {
		in = memfd_create("airlock-policy", MFD_CLOEXEC);
		if (in < 0 || al_write_all(in, canonical, strlen(canonical)) < 0 ||
		    lseek(in, 0, SEEK_SET) < 0)
			k = -errno;
	}
	if (k < 0)
		return failed(r, k, "Failed to pass the policy on");
	(void)snprintf(owner, sizeof(owner), "%d", (int)r->srv->pid);
	args[n++] = (char *)"session";
	args[n++] = (char *)"start";
	args[n++] = (char *)"--policy";
	args[n++] = (char *)"/dev/stdin";
	args[n++] = (char *)"--owner";
	args[n++] = owner;
	args[n++] = (char *)"--ttl";
	args[n++] = (char *)ttl;
	if (fresh)
		args[n++] = (char *)"--fresh-workspace";
	if (r->srv->o->exec.admitted_path) {
		args[n++] = (char *)"--admitted";
		args[n++] = (char *)r->srv->o->exec.admitted_path;
	}
	args[n] = NULL;
	k = serve_child_spawn(r->srv, args, in, SERVE_CHILD_STDOUT | SERVE_CHILD_STDERR, NULL, &c);
	if (k < 0)
		return failed(r, k, "Failed to start airlock");
	status = serve_child_collect(&c, 4096, NULL, NULL, &out, &len, &err);
	if (status != 0 || !out) {
		const char *msg = err ? err : "the session did not start";

		if (startswith(msg, "airlock: "))
			msg += strlen("airlock: ");
		((char *)msg)[strcspn(msg, "\n")] = '\0';
		return serve_reply_error(r, 500, "failed", NULL, "%s", msg), -EIO;
	}
	out[strcspn(out, "\n")] = '\0';
	if (!launcher_session_id_is_valid(out) || strlen(out) >= size)
		return serve_reply_error(r, 500, "failed", NULL, "session start said %s",
					 AL_QUOTE(out)),
		       -EIO;
	strcpy(id, out);
	return 0;
}

static int create_session(struct serve_request *r)
{
	_cleanup_(al_json_putp) struct json_object *body = NULL;
	_cleanup_(policy_freep) struct policy *p = NULL;
	struct create c = {0};
	struct serve_session *x = NULL;
	enum agent_error_kind kind = AGENT_ERROR_NONE;
	struct al_error err = {0};
	char id[LAUNCHER_SESSION_ID_MAX];
	bool fresh;
	int k;

	k = r->len ? serve_body_object(r, &body) : 0;
	if (k >= 0 && body)
		k = parse_create(r, body, &c);
	if (k < 0)
		goto out;
	serve_sessions_prune(r->srv);
	(void)pthread_mutex_lock(&r->srv->lock);
	k = count_of(r->srv, r->client.key) >= r->srv->o->max_sessions ? -EUSERS : 0;
	(void)pthread_mutex_unlock(&r->srv->lock);
	if (k < 0) {
		k = serve_reply_error(r, 429, "too_many_sessions", NULL,
				      "This client has %u sessions already (delete one first)",
				      r->srv->o->max_sessions);
		goto out;
	}
	k = agent_session_policy(&c.req, &r->srv->o->exec, &p, &kind, &err);
	if (k < 0) {
		k = serve_reply_error(r, kind == AGENT_ERROR_INVALID_REQUEST ? 400 : 422,
				      agent_error_kind_to_string(kind), field_of(err.msg), "%s",
				      err.msg);
		goto out;
	}
	/* Without a policy or a workspace of its own, a session starts empty, as exec does. */
	fresh = agent_fresh_workspace(&c.req, &r->srv->o->exec, p);
	k = start_session(r, p, c.ttl, fresh, id, sizeof(id));
	if (k < 0)
		goto out;
	x = calloc(1, sizeof(*x));
	if (!x) {
		(void)launcher_session_stop(id, NULL);
		k = -ENOMEM;
		goto out;
	}
	strcpy(x->id, id);
	(void)snprintf(x->client, sizeof(x->client), "%s", r->client.key);
	(void)pthread_mutex_lock(&r->srv->lock);
	x->next = r->srv->sessions;
	r->srv->sessions = x;
	(void)pthread_mutex_unlock(&r->srv->lock);
	log_info("Session %s started for %s", id, r->client.key);
	k = reply_session(r, 201, id);
out:
	create_done(&c);
	return k == -EINVAL || k == -EIO ? 0 : k;
}

static int list_sessions(struct serve_request *r)
{
	_cleanup_(al_json_putp) struct json_object *list = json_object_new_array();
	_cleanup_free_ char(*ids)[LAUNCHER_SESSION_ID_MAX] = NULL;
	size_t n = 0, max;

	if (!list)
		return -ENOMEM;
	(void)pthread_mutex_lock(&r->srv->lock);
	max = count_of(r->srv, r->client.key);
	ids = calloc(max + 1, sizeof(*ids));
	for (struct serve_session *x = r->srv->sessions; ids && x && n < max; x = x->next)
		if (streq(x->client, r->client.key))
			strcpy(ids[n++], x->id);
	(void)pthread_mutex_unlock(&r->srv->lock);
	if (!ids)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct launcher_session_info info;
		struct launcher_session_usage u;
		struct json_object *o = NULL;

		if (launcher_session_info_of(ids[i], &info, NULL) < 0) {
			serve_processes_end(r->srv, ids[i]);
			forget(r->srv, ids[i]);
			continue;
		}
		launcher_session_usage(&info, &u);
		if (agent_session_json(&info, &u, &o) < 0 || json_object_array_add(list, o) < 0) {
			json_object_put(o);
			return -ENOMEM;
		}
	}
	return serve_reply_json(r, 200, list);
}

/* ---- one session ---- */

static int checkpoint_name(struct serve_request *r, char **ret)
{
	_cleanup_(al_json_putp) struct json_object *body = NULL;
	struct json_object *v;
	int k;

	k = serve_body_object(r, &body);
	if (k < 0)
		return k;
	json_object_object_foreach(body, key, val)
	{
		(void)val;
		if (!streq(key, "name"))
			return serve_reply_error(r, 400, "invalid_request", key,
						 "%s: not a field (only name)", AL_QUOTE(key)),
			       -EINVAL;
	}
	v = json_object_object_get(body, "name");
	if (!json_object_is_type(v, json_type_string))
		return serve_reply_error(r, 400, "invalid_request", "name",
					 "name: required, a string"),
		       -EINVAL;
	*ret = strdup(json_object_get_string(v));
	return *ret ? 0 : -ENOMEM;
}

static int tree_op(struct serve_request *r, const char *id, bool checkpoint)
{
	_cleanup_free_ char *name = NULL;
	struct al_error err = {0};
	int k;

	k = checkpoint_name(r, &name);
	if (k < 0)
		return k == -EINVAL ? 0 : k;
	k = checkpoint ? launcher_session_checkpoint(id, name, &err)
		       : launcher_session_restore(id, name, &err);
	if (k < 0)
		return serve_reply_errno(r, k, "name", err.msg);
	return serve_reply_bytes(r, checkpoint ? 201 : 200, "application/json", "{}", 2);
}

static const char *path_arg(struct serve_request *r, bool folder)
{
	const char *p = serve_query(r, "path");

	if (serve_query_holds_nul(r, "path")) {
		(void)serve_reply_error(r, 400, "invalid_request", "path",
					"path: holds a NUL byte (%%00)");
		return NULL;
	}
	if (!p && folder)
		return "";
	if (!p)
		(void)serve_reply_error(r, 400, "invalid_request", "path",
					"path: required (?path=FILE, relative to the workspace)");
	return p;
}

static int files(struct serve_request *r, const char *id, const char *what)
{
	_cleanup_(al_json_putp) struct json_object *o = NULL;
	_cleanup_free_ char *data = NULL;
	struct al_error err = {0};
	bool executable, parents;
	const char *path;
	size_t len = 0;
	int k;

	if (!what && streq(r->method, "GET")) {
		path = path_arg(r, true);
		if (!path)
			return 0;
		k = agent_file_list(id, path, &o, &err);
		if (k == -ENOTDIR)
			return serve_reply_error(r, 409, "conflict", "path", "%s", err.msg);
		if (k < 0)
			return serve_reply_errno(r, k, "path", err.msg);
		return serve_reply_json(r, 200, o);
	}
	if (!what && streq(r->method, "DELETE")) {
		path = path_arg(r, false);
		if (!path)
			return 0;
		k = agent_file_remove(id, path, &err);
		if (k < 0)
			return serve_reply_errno(r, k, "path", err.msg);
		return serve_reply_bytes(r, 204, NULL, "", 0);
	}
	if (what && streq(what, "stat") && streq(r->method, "GET")) {
		path = path_arg(r, true);
		if (!path)
			return 0;
		k = agent_file_stat(id, path, &o, &err);
		if (k < 0)
			return serve_reply_errno(r, k, "path", err.msg);
		return serve_reply_json(r, 200, o);
	}
	if (what && streq(what, "content") && streq(r->method, "GET")) {
		path = path_arg(r, false);
		if (!path)
			return 0;
		k = agent_file_read(id, path, &data, &len, &err);
		if (k < 0)
			return serve_reply_errno(r, k, "path", err.msg);
		return serve_reply_bytes(r, 200, "application/octet-stream", data ? data : "", len);
	}
	if (what && streq(what, "content") && streq(r->method, "PUT")) {
		path = path_arg(r, false);
		if (!path || serve_query_bool(r, "executable", &executable) < 0 ||
		    serve_query_bool(r, "parents", &parents) < 0)
			return 0;
		k = agent_file_write(id, path, r->body ? r->body : "", r->len,
				     (executable ? AGENT_FILE_EXECUTABLE : 0) |
					 (parents ? AGENT_FILE_PARENTS : 0),
				     &err);
		if (k < 0)
			return serve_reply_errno(r, k, "path", err.msg);
		return serve_reply_bytes(r, 204, NULL, "", 0);
	}
	return serve_reply_error(
	    r, what && !streq(what, "stat") && !streq(what, "content") ? 404 : 405, "not_found",
	    NULL, "No such endpoint or method for files");
}

int serve_sessions(struct serve_request *r)
{
	const char *id, *sub;
	bool get = streq(r->method, "GET"), post = streq(r->method, "POST");

	if (r->n_seg == 2) {
		if (post)
			return create_session(r);
		if (get)
			return list_sessions(r);
		return serve_reply_error(r, 405, "method_not_allowed", NULL,
					 "%s is not a method of /v1/sessions", r->method);
	}
	id = r->seg[2];
	if (!launcher_session_id_is_valid(id))
		return serve_reply_error(r, 404, "not_found", NULL, "No session %s", AL_QUOTE(id));
	if (serve_session_find(r, id) < 0)
		return 0;
	sub = r->n_seg > 3 ? r->seg[3] : NULL;
	if (!sub && get)
		return reply_session(r, 200, id);
	if (!sub && streq(r->method, "DELETE")) {
		struct al_error err = {0};
		int k;

		serve_processes_end(r->srv, id);
		k = launcher_session_stop(id, &err);
		forget(r->srv, id);
		if (k < 0)
			return serve_reply_errno(r, k, NULL, err.msg);
		return serve_reply_bytes(r, 204, NULL, "", 0);
	}
	if (sub && streq(sub, "exec") && r->n_seg == 4 && post)
		return serve_run_request(r, id);
	if (sub && streq(sub, "checkpoints") && r->n_seg == 4 && post)
		return tree_op(r, id, true);
	if (sub && streq(sub, "restore") && r->n_seg == 4 && post)
		return tree_op(r, id, false);
	if (sub && streq(sub, "files") && r->n_seg <= 5)
		return files(r, id, r->n_seg == 5 ? r->seg[4] : NULL);
	if (sub && streq(sub, "processes"))
		return serve_processes(r, id);
	return serve_reply_error(r, 404, "not_found", NULL, "No such endpoint or method");
}
