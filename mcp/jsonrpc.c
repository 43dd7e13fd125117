/* JSON-RPC 2.0 framing of MCP's stdio transport: one message a line, each a request, a
 * notification or a response; batches are not part of MCP (since 2025-06-18) and are refused.
 * Also the lifecycle's one exchange, initialize. */

#include <errno.h>
#include <string.h>

#include <json-c/json.h>

#include "common/json-util.h"
#include "mcp/mcp.h"

/* The revisions this server speaks, newest first: their differences (structured tool output,
 * titles) are only additions a client of an older one ignores. */
static const char *const protocol_versions[] = {
    MCP_PROTOCOL_LATEST,
    "2025-06-18",
    "2025-03-26",
    "2024-11-05",
};

static bool id_is_valid(struct json_object *id)
{
	/* MCP: a string or an integer, never null. */
	return json_object_is_type(id, json_type_string) || json_object_is_type(id, json_type_int);
}

int mcp_message_parse(const char *buf, size_t len, struct mcp_message *ret,
		      struct json_object **ret_id, struct al_error *err)
{
	_cleanup_json_ struct json_object *root = NULL;
	struct json_object *id = NULL, *method = NULL, *params = NULL, *version = NULL;
	bool has_id;

	*ret_id = NULL;
	if (al_json_parse(buf, len, MCP_JSON_DEPTH, &root, err) < 0)
		return MCP_PARSE_ERROR;
	if (json_object_is_type(root, json_type_array))
		return al_error_set(err, -EINVAL, "batches are not supported: one message a line"),
		       MCP_INVALID_REQUEST;
	if (!json_object_is_type(root, json_type_object))
		return al_error_set(err, -EINVAL, "a message is a JSON object"),
		       MCP_INVALID_REQUEST;
	has_id = json_object_object_get_ex(root, "id", &id);
	if (has_id && id_is_valid(id))
		*ret_id = json_object_get(id);
	if (!json_object_object_get_ex(root, "jsonrpc", &version) ||
	    !json_object_is_type(version, json_type_string) ||
	    !streq(json_object_get_string(version), "2.0"))
		return al_error_set(err, -EINVAL, "jsonrpc: must be \"2.0\""), MCP_INVALID_REQUEST;
	if (has_id && !id_is_valid(id))
		return al_error_set(err, -EINVAL, "id: a string or an integer"),
		       MCP_INVALID_REQUEST;
	if (!json_object_object_get_ex(root, "method", &method)) {
		/* A response: to nothing of ours (we send no requests), but well-formed or not. */
		if (!has_id || (!json_object_object_get_ex(root, "result", NULL) &&
				!json_object_object_get_ex(root, "error", NULL)))
			return al_error_set(err, -EINVAL, "method: missing"), MCP_INVALID_REQUEST;
		*ret = (struct mcp_message){.kind = MCP_MESSAGE_RESPONSE, .id = id};
		ret->root = TAKE_PTR(root);
		return 0;
	}
	if (!json_object_is_type(method, json_type_string))
		return al_error_set(err, -EINVAL, "method: must be a string"), MCP_INVALID_REQUEST;
	if (json_object_object_get_ex(root, "params", &params) && params &&
	    !json_object_is_type(params, json_type_object) &&
	    !json_object_is_type(params, json_type_array))
		return al_error_set(err, -EINVAL, "params: must be an object"), MCP_INVALID_REQUEST;
	*ret = (struct mcp_message){
	    .kind = has_id ? MCP_MESSAGE_REQUEST : MCP_MESSAGE_NOTIFICATION,
	    .id = has_id ? id : NULL,
	    .method = json_object_get_string(method),
	    .params = params,
	};
	ret->root = TAKE_PTR(root);
	return 0;
}

void mcp_message_done(struct mcp_message *m)
{
	if (m->root)
		(void)json_object_put(m->root);
	*m = (struct mcp_message){0};
}

/* {"jsonrpc": "2.0", "id": id, key: value} as a line; value is taken. */
static int line(struct json_object *id, const char *key, struct json_object *value, char **ret)
{
	_cleanup_json_ struct json_object *o = json_object_new_object();
	_cleanup_free_ char *s = NULL;
	char *l;
	int r;

	if (!o) {
		(void)json_object_put(value);
		return -ENOMEM;
	}
	r = al_json_add(o, "jsonrpc", json_object_new_string("2.0"));
	if (r >= 0)
		r = json_object_object_add(o, "id", json_object_get(id)) < 0 ? -ENOMEM : 0;
	if (r >= 0)
		r = al_json_add(o, key, value);
	else
		(void)json_object_put(value);
	if (r >= 0)
		r = al_json_to_string(o, &s);
	if (r < 0)
		return r;
	if (asprintf(&l, "%s\n", s) < 0)
		return -ENOMEM;
	*ret = l;
	return 0;
}

int mcp_result_line(struct json_object *id, struct json_object *result, char **ret)
{
	return line(id, "result", result, ret);
}

int mcp_error_line(struct json_object *id, int code, const char *message, char **ret)
{
	struct json_object *e = json_object_new_object();
	int r;

	if (!e)
		return -ENOMEM;
	r = al_json_add(e, "code", json_object_new_int(code));
	if (r >= 0)
		r = al_json_add(e, "message", json_object_new_string(message));
	if (r < 0) {
		(void)json_object_put(e);
		return r;
	}
	return line(id, "error", e, ret);
}

const char *mcp_protocol_negotiate(const char *requested)
{
	for (size_t i = 0; requested && i < ELEMENTSOF(protocol_versions); i++)
		if (streq(requested, protocol_versions[i]))
			return protocol_versions[i];
	return MCP_PROTOCOL_LATEST;
}

#define INSTRUCTIONS                                                                               \
	"Runs code and commands in airlock sandboxes. run_code runs one program in a fresh "       \
	"sandbox that is gone afterwards. For work that spans calls, session_start gives a "       \
	"sandbox that keeps its workspace, processes and network state; session_exec runs "        \
	"commands in it, read_file, write_file, list_files and remove_file reach its workspace "   \
	"(/workspace in the sandbox), session_stop ends it. Results carry exit_code, stdout, "     \
	"stderr and violations: what the policy refused the program (files, system calls, "        \
	"network). The policy is the operator's; a call cannot widen it."

int mcp_initialize_result(struct json_object *params, struct json_object **ret,
			  struct al_error *err)
{
	_cleanup_json_ struct json_object *o = json_object_new_object();
	struct json_object *v = NULL, *caps, *tools, *info;
	const char *requested = NULL;
	int r;

	if (!o)
		return -ENOMEM;
	if (params && !json_object_is_type(params, json_type_object))
		return al_error_set(err, -EINVAL, "params: must be an object");
	if (params && json_object_object_get_ex(params, "protocolVersion", &v)) {
		if (!json_object_is_type(v, json_type_string))
			return al_error_set(err, -EINVAL, "protocolVersion: must be a string");
		requested = json_object_get_string(v);
	}
	caps = json_object_new_object();
	tools = json_object_new_object();
	info = json_object_new_object();
	r = caps && tools && info ? 0 : -ENOMEM;
	if (r >= 0)
		r = al_json_add(tools, "listChanged", json_object_new_boolean(false));
	if (r >= 0)
		r = al_json_add(caps, "tools", json_object_get(tools));
	if (r >= 0)
		r = al_json_add(info, "name", json_object_new_string("airlock"));
	if (r >= 0)
		r = al_json_add(info, "title", json_object_new_string("airlock sandbox"));
	if (r >= 0)
		r = al_json_add(info, "version", json_object_new_string(AIRLOCK_VERSION));
	if (r >= 0)
		r = al_json_add(o, "protocolVersion",
				json_object_new_string(mcp_protocol_negotiate(requested)));
	if (r >= 0)
		r = al_json_add(o, "capabilities", json_object_get(caps));
	if (r >= 0)
		r = al_json_add(o, "serverInfo", json_object_get(info));
	if (r >= 0)
		r = al_json_add(o, "instructions", json_object_new_string(INSTRUCTIONS));
	(void)json_object_put(caps);
	(void)json_object_put(tools);
	(void)json_object_put(info);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(o);
	return 0;
}
