/* A tool call's arguments, checked and turned into what runs it: the exec request of run_code
 * and session_exec, a session's policy request, a file operation. What the client may not bring
 * (a policy, a workspace) is refused here, before anything runs; every other field is checked by
 * the request's own parser in the child, with the error kind `airlock exec` gives it. */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "common/json-util.h"
#include "common/parse-util.h"
#include "launcher/launcher.h"
#include "mcp/mcp.h"

#define SESSION_TTL_DEFAULT_USEC (3600ULL * 1000000)
#define SESSION_TTL_MAX_USEC (24ULL * 3600 * 1000000)

void mcp_call_done(struct mcp_call *c)
{
	free(c->request);
	free(c->policy_name);
	free(c->policy_json);
	free(c->workspace);
	free(c->memory);
	free(c->path);
	free(c->data);
	*c = (struct mcp_call){0};
}

/* Each key of args is one of allowed (NULL-terminated). */
static int check_keys(struct json_object *args, const char *tool, const char *const *allowed,
		      struct al_error *err)
{
	json_object_object_foreach(args, key, v)
	{
		const char *const *a = allowed;

		(void)v;
		while (*a && !streq(*a, key))
			a++;
		if (!*a)
			return al_error_set(err, -EINVAL, "%s: not an argument of %s",
					    AL_QUOTE(key), tool);
	}
	return 0;
}

/* A string argument into *ret (NULL when absent and not required). */
static int string_arg(struct json_object *args, const char *key, bool required, const char **ret,
		      size_t *ret_len, struct al_error *err)
{
	struct json_object *v = NULL;

	*ret = NULL;
	if (!json_object_object_get_ex(args, key, &v) || !v) {
		if (required)
			return al_error_set(err, -EINVAL, "%s: required", key);
		return 0;
	}
	if (!json_object_is_type(v, json_type_string))
		return al_error_set(err, -EINVAL, "%s: must be a string", key);
	*ret = json_object_get_string(v);
	if (ret_len)
		*ret_len = (size_t)json_object_get_string_len(v);
	return 0;
}

static int session_arg(struct json_object *args, struct mcp_call *c, struct al_error *err)
{
	const char *id;
	int r = string_arg(args, "session_id", true, &id, NULL, err);

	if (r < 0)
		return r;
	if (!launcher_session_id_is_valid(id) || strlen(id) >= sizeof(c->session))
		return al_error_set(err, -EINVAL, "session_id: %s is not a session id",
				    AL_QUOTE(id));
	strcpy(c->session, id);
	return 0;
}

/* The client's policy and workspace, as far as the operator lets a client bring them: a policy
 * file's name only with --policy-dir, a policy object or a workspace only with its allow-flags
 * too. Anything else would widen the operator's policy. */
static int check_policy_args(struct json_object *args, const struct mcp_limits *l,
			     struct al_error *err)
{
	struct json_object *policy = NULL, *ws = NULL;

	if (json_object_object_get_ex(args, "policy", &policy)) {
		if (!l->policy_dir)
			return al_error_set(err, -EPERM,
					    "policy: the operator fixed the policy (a client may "
					    "name one only when airlock mcp has --policy-dir)");
		if (json_object_is_type(policy, json_type_object) &&
		    !(l->allow & AGENT_EXEC_ALLOW_REQUEST_POLICY))
			return al_error_set(err, -EPERM,
					    "policy: only the name of a policy file of the "
					    "operator's (an inline policy needs "
					    "--allow-request-policy)");
		if (!json_object_is_type(policy, json_type_object) &&
		    !json_object_is_type(policy, json_type_string))
			return al_error_set(err, -EINVAL, "policy: a name or an object");
	}
	if (json_object_object_get_ex(args, "workspace", &ws) &&
	    !(l->policy_dir && (l->allow & AGENT_EXEC_ALLOW_REQUEST_WORKSPACE)))
		return al_error_set(err, -EPERM,
				    "workspace: the operator's policy decides the workspace (a "
				    "client picks one only with --policy-dir and "
				    "--allow-request-workspace)");
	return 0;
}

/* Copies args' keys (those present of keys) into req. */
static int copy_keys(struct json_object *args, struct json_object *req, const char *const *keys)
{
	int r = 0;

	for (; r >= 0 && *keys; keys++) {
		struct json_object *v = NULL;

		if (json_object_object_get_ex(args, *keys, &v))
			r = al_json_add(req, *keys, json_object_get(v));
	}
	return r;
}

static int finish_request(struct json_object *args, struct json_object *req, struct mcp_call *c)
{
	int r = 0;

	if (!json_object_object_get_ex(args, "timeout", NULL))
		r = al_json_add(req, "timeout", json_object_new_string(MCP_DEFAULT_TIMEOUT));
	return r < 0 ? r : al_json_to_string(req, &c->request);
}

static int plan_run_code(struct json_object *args, const struct mcp_limits *l, struct mcp_call *c,
			 struct al_error *err)
{
	static const char *const keys[] = {"language", "code",	    "argv",  "stdin",
					   "timeout",  "env",	    "files", "memory",
					   "policy",   "workspace", NULL};
	_cleanup_json_ struct json_object *req = json_object_new_object();
	const char *language;
	int r;

	if (!req)
		return -ENOMEM;
	r = check_keys(args, "run_code", keys, err);
	if (r >= 0)
		r = string_arg(args, "language", true, &language, NULL, err);
	if (r >= 0)
		r = check_policy_args(args, l, err);
	if (r >= 0)
		r = copy_keys(args, req, keys);
	return r < 0 ? r : finish_request(args, req, c);
}

static int plan_session_exec(struct json_object *args, struct mcp_call *c, struct al_error *err)
{
	static const char *const keys[] = {"session_id", "command", "language", "code",	 "argv",
					   "stdin",	 "timeout", "env",	"files", NULL};
	static const char *const run_keys[] = {"language", "code", "argv",  "stdin",
					       "timeout",  "env",  "files", NULL};
	_cleanup_json_ struct json_object *req = json_object_new_object();
	const char *command = NULL, *language = NULL;
	bool argv;
	int r;

	if (!req)
		return -ENOMEM;
	r = check_keys(args, "session_exec", keys, err);
	if (r >= 0)
		r = session_arg(args, c, err);
	if (r >= 0)
		r = string_arg(args, "command", false, &command, NULL, err);
	if (r >= 0)
		r = string_arg(args, "language", false, &language, NULL, err);
	if (r < 0)
		return r;
	argv = json_object_object_get_ex(args, "argv", NULL);
	if (command && (language || argv || json_object_object_get_ex(args, "code", NULL)))
		return al_error_set(err, -EINVAL,
				    "command: a shell command line, or argv, or language and code: "
				    "give one");
	if (!command && !language && !argv)
		return al_error_set(err, -EINVAL, "command, argv, or language and code: required");
	if (command)
		r = al_json_add(req, "language", json_object_new_string("shell"));
	if (r >= 0 && command)
		r = al_json_add(req, "code", json_object_new_string(command));
	if (r >= 0 && !command && !language)
		r = al_json_add(req, "language", json_object_new_string("command"));
	if (r >= 0)
		r = copy_keys(args, req, run_keys);
	return r < 0 ? r : finish_request(args, req, c);
}

static int ttl_arg(struct json_object *args, struct mcp_call *c, struct al_error *err)
{
	struct json_object *v = NULL;
	uint64_t usec = SESSION_TTL_DEFAULT_USEC;

	if (json_object_object_get_ex(args, "ttl", &v)) {
		if (json_object_is_type(v, json_type_int) && json_object_get_int64(v) > 0 &&
		    json_object_get_int64(v) <= (int64_t)(SESSION_TTL_MAX_USEC / 1000000))
			usec = (uint64_t)json_object_get_int64(v) * 1000000;
		else if (!json_object_is_type(v, json_type_string) ||
			 al_parse_duration(json_object_get_string(v), &usec) < 0 || usec == 0 ||
			 usec > SESSION_TTL_MAX_USEC)
			return al_error_set(err, -EINVAL,
					    "ttl: seconds or a duration (\"30m\"), more than 0 "
					    "and at most 24h");
	}
	(void)snprintf(c->ttl, sizeof(c->ttl), "%lluus", (unsigned long long)usec);
	return 0;
}

static int dup_arg(struct json_object *args, const char *key, char **ret, struct al_error *err)
{
	const char *s;
	int r = string_arg(args, key, false, &s, NULL, err);

	if (r < 0 || !s)
		return r;
	*ret = strdup(s);
	return *ret ? 0 : -ENOMEM;
}

static int plan_session_start(struct json_object *args, const struct mcp_limits *l,
			      struct mcp_call *c, struct al_error *err)
{
	static const char *const keys[] = {"ttl", "memory", "policy", "workspace", NULL};
	struct json_object *policy = NULL;
	int r;

	r = check_keys(args, "session_start", keys, err);
	if (r >= 0)
		r = check_policy_args(args, l, err);
	if (r >= 0)
		r = ttl_arg(args, c, err);
	if (r >= 0)
		r = dup_arg(args, "memory", &c->memory, err);
	if (r >= 0)
		r = dup_arg(args, "workspace", &c->workspace, err);
	if (r >= 0 && json_object_object_get_ex(args, "policy", &policy)) {
		if (json_object_is_type(policy, json_type_string))
			r = dup_arg(args, "policy", &c->policy_name, err);
		else
			r = al_json_to_string(policy, &c->policy_json);
	}
	return r;
}

static int plan_file(struct json_object *args, enum mcp_tool tool, struct mcp_call *c,
		     struct al_error *err)
{
	static const char *const keys[] = {"session_id", "path", "content", "executable", NULL};
	const char *path, *content = NULL;
	struct json_object *exe = NULL;
	size_t len = 0;
	int r;

	r = check_keys(args, mcp_tool_to_string(tool),
		       tool == MCP_TOOL_WRITE_FILE ? keys : keys + 0, err);
	if (r >= 0 && tool != MCP_TOOL_WRITE_FILE &&
	    (json_object_object_get_ex(args, "content", NULL) ||
	     json_object_object_get_ex(args, "executable", NULL)))
		r = al_error_set(err, -EINVAL, "content and executable: only for write_file");
	if (r >= 0)
		r = session_arg(args, c, err);
	if (r >= 0)
		r = string_arg(args, "path", tool != MCP_TOOL_LIST_FILES, &path, NULL, err);
	if (r < 0)
		return r;
	if (!path)
		path = "";
	if (*path && !agent_path_is_relative(path))
		return al_error_set(err, -EINVAL,
				    "path: %s is not a relative path without \".\" or \"..\"",
				    AL_QUOTE(path));
	c->path = strdup(path);
	if (!c->path)
		return -ENOMEM;
	if (tool != MCP_TOOL_WRITE_FILE)
		return 0;
	r = string_arg(args, "content", true, &content, &len, err);
	if (r < 0)
		return r;
	if (len > AGENT_FILE_MAX)
		return al_error_set(err, -EFBIG, "content: more than %d bytes", AGENT_FILE_MAX);
	if (json_object_object_get_ex(args, "executable", &exe) &&
	    !json_object_is_type(exe, json_type_boolean))
		return al_error_set(err, -EINVAL, "executable: must be a boolean");
	c->file_flags =
	    AGENT_FILE_PARENTS | (exe && json_object_get_boolean(exe) ? AGENT_FILE_EXECUTABLE : 0);
	c->data = malloc(len + 1);
	if (!c->data)
		return -ENOMEM;
	memcpy(c->data, content, len + 1);
	c->len = len;
	return 0;
}

int mcp_call_plan(struct json_object *params, const struct mcp_limits *limits, struct mcp_call *ret,
		  struct al_error *err)
{
	struct mcp_call c = {0};
	struct json_object *name = NULL, *args = NULL;
	int r;

	if (!json_object_is_type(params, json_type_object) ||
	    !json_object_object_get_ex(params, "name", &name) ||
	    !json_object_is_type(name, json_type_string))
		return al_error_set(err, -EINVAL, "params.name: required, a string"),
		       MCP_INVALID_PARAMS;
	if (mcp_tool_from_string(json_object_get_string(name), &c.tool) < 0)
		return al_error_set(err, -ENOENT, "Unknown tool %s",
				    AL_QUOTE(json_object_get_string(name))),
		       MCP_INVALID_PARAMS;
	if (json_object_object_get_ex(params, "arguments", &args) && args &&
	    !json_object_is_type(args, json_type_object))
		return al_error_set(err, -EINVAL, "params.arguments: must be an object"),
		       MCP_INVALID_PARAMS;
	{
		_cleanup_json_ struct json_object *empty = args ? NULL : json_object_new_object();

		if (!args && !empty)
			return -ENOMEM;
		if (!args)
			args = empty;
		switch (c.tool) {
		case MCP_TOOL_RUN_CODE:
			r = plan_run_code(args, limits, &c, err);
			break;
		case MCP_TOOL_SESSION_START:
			r = plan_session_start(args, limits, &c, err);
			break;
		case MCP_TOOL_SESSION_EXEC:
			r = plan_session_exec(args, &c, err);
			break;
		case MCP_TOOL_SESSION_STOP: {
			static const char *const keys[] = {"session_id", NULL};

			r = check_keys(args, "session_stop", keys, err);
			if (r >= 0)
				r = session_arg(args, &c, err);
			break;
		}
		default:
			r = plan_file(args, c.tool, &c, err);
			break;
		}
	}
	if (r < 0) {
		mcp_call_done(&c);
		return r;
	}
	*ret = c;
	return 0;
}

/* ---- results ---- */

static int tool_result(const char *text, struct json_object *structured, bool is_error,
		       struct json_object **ret)
{
	_cleanup_json_ struct json_object *o = json_object_new_object(),
					  *content = json_object_new_array(),
					  *item = json_object_new_object();
	int r;

	if (!o || !content || !item) {
		(void)json_object_put(structured);
		return -ENOMEM;
	}
	r = al_json_add(item, "type", json_object_new_string("text"));
	if (r >= 0)
		r = al_json_add(item, "text", json_object_new_string(text));
	if (r >= 0)
		r = json_object_array_add(content, TAKE_PTR(item)) < 0 ? -ENOMEM : 0;
	if (r >= 0)
		r = al_json_add(o, "content", TAKE_PTR(content));
	if (r >= 0 && structured)
		r = al_json_add(o, "structuredContent", TAKE_PTR(structured));
	if (r >= 0)
		r = al_json_add(o, "isError", json_object_new_boolean(is_error));
	(void)json_object_put(structured);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(o);
	return 0;
}

int mcp_call_error(const char *message, struct json_object **ret)
{
	return tool_result(message, NULL, true, ret);
}

int mcp_call_result(enum mcp_tool tool, const char *out, size_t len, const char *err_text,
		    struct json_object **ret)
{
	_cleanup_json_ struct json_object *o = NULL;
	_cleanup_free_ char *text = NULL;
	struct json_object *e = NULL;
	struct al_error err = {0};
	int r;

	(void)tool;
	while (len > 0 && (out[len - 1] == '\n' || out[len - 1] == ' '))
		len--;
	if (len == 0 || al_json_parse(out, len, MCP_JSON_DEPTH, &o, &err) < 0 ||
	    !json_object_is_type(o, json_type_object))
		return mcp_call_error(
		    err_text && *err_text ? err_text : "airlock ended without a result", ret);
	r = al_json_to_string(o, &text);
	if (r < 0)
		return r;
	(void)json_object_object_get_ex(o, "error", &e);
	return tool_result(text, TAKE_PTR(o), e != NULL, ret);
}
