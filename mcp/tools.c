/* The tools: their schemas, the planning of a call (the client's arguments checked, and turned
 * into an exec request or a file operation), and the tool's result from what its child printed.
 * A client is not the operator: it brings a policy or a workspace only as the operator's
 * --policy-dir and --allow-request-* let it, and `airlock exec` checks the same again. */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "common/json-util.h"
#include "common/parse-util.h"
#include "launcher/launcher.h"
#include "mcp/mcp.h"

#define SESSION_TTL_DEFAULT "1h"
#define SESSION_TTL_MAX_USEC (24ULL * 3600 * 1000000)

static const char *const tool_names[MCP_TOOL_MAX] = {
    [MCP_TOOL_RUN_CODE] = "run_code",	      [MCP_TOOL_SESSION_START] = "session_start",
    [MCP_TOOL_SESSION_EXEC] = "session_exec", [MCP_TOOL_SESSION_STOP] = "session_stop",
    [MCP_TOOL_READ_FILE] = "read_file",	      [MCP_TOOL_WRITE_FILE] = "write_file",
    [MCP_TOOL_LIST_FILES] = "list_files",     [MCP_TOOL_REMOVE_FILE] = "remove_file",
};

const char *mcp_tool_to_string(enum mcp_tool t)
{
	return t < MCP_TOOL_MAX ? tool_names[t] : NULL;
}

int mcp_tool_from_string(const char *s, enum mcp_tool *ret)
{
	for (size_t i = 0; i < MCP_TOOL_MAX; i++)
		if (streq(s, tool_names[i])) {
			*ret = (enum mcp_tool)i;
			return 0;
		}
	return -ENOENT;
}

/* ---- schemas ---- */

#define S_SESSION                                                                                  \
	"\"session_id\":{\"type\":\"string\",\"description\":\"The id session_start gave\"}"
#define S_RUN_FIELDS                                                                               \
	"\"stdin\":{\"type\":\"string\",\"description\":\"The program's standard input\"},"        \
	"\"timeout\":{\"type\":[\"number\",\"string\"],\"description\":\"Seconds, or a duration "  \
	"such as \\\"30s\\\" or \\\"5m\\\" (default " MCP_DEFAULT_TIMEOUT ")\"},"                  \
	"\"env\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"},"             \
	"\"description\":\"Environment variables to set\"},"                                       \
	"\"files\":{\"type\":\"array\",\"description\":\"Files written into the workspace "        \
	"first\",\"items\":{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"   \
	"\"content\":{\"type\":\"string\"},\"base64\":{\"type\":\"string\"},\"executable\":{"      \
	"\"type\":\"boolean\"}},\"required\":[\"path\"]}}"
#define S_LANGUAGE                                                                                 \
	"\"language\":{\"type\":\"string\",\"enum\":[\"python\",\"javascript\",\"typescript\","    \
	"\"shell\",\"rust\",\"wasm\",\"command\"],\"description\":\"command runs argv as it is; "  \
	"the others run code\"},"                                                                  \
	"\"code\":{\"type\":\"string\",\"description\":\"The program (wasm: a WASI module in "     \
	"base64)\"},"                                                                              \
	"\"argv\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"description\":\"command: " \
	"the command and its arguments; otherwise the program's arguments\"}"
#define S_PATH(what)                                                                               \
	"\"path\":{\"type\":\"string\",\"description\":\"" what                                    \
	", relative to the workspace (no . or .. component)\"}"
#define S_RESULT                                                                                   \
	"{\"type\":\"object\",\"properties\":{\"error\":{\"type\":[\"object\",\"null\"]},"         \
	"\"exit_code\":{\"type\":[\"integer\",\"null\"]},\"stdout\":{\"type\":\"string\"},"        \
	"\"stderr\":{\"type\":\"string\"},\"timed_out\":{\"type\":\"boolean\"},"                   \
	"\"violations\":{\"type\":\"array\"}}}"

struct tool_schema {
	enum mcp_tool tool;
	const char *title, *description, *input, *output;
	bool read_only, destructive;
};

static const struct tool_schema schemas[] = {
    {MCP_TOOL_RUN_CODE, "Run code in a sandbox",
     "Runs a program in a fresh sandbox (gone afterwards) under the operator's policy and "
     "returns exit_code, stdout, stderr, timed_out and violations (what the policy refused it).",
     "{\"type\":\"object\",\"properties\":{" S_LANGUAGE "," S_RUN_FIELDS
     ",\"memory\":{\"type\":\"string\",\"description\":\"A memory limit such as \\\"512Mi\\\" "
     "(at most the policy's)\"}@},\"required\":[\"language\"],\"additionalProperties\":false}",
     S_RESULT, false, false},
    {MCP_TOOL_SESSION_START, "Start a sandbox session",
     "Starts a sandbox that lasts across calls (its workspace, processes and network state), "
     "until session_stop, its ttl, or the end of this server. Returns its session_id.",
     "{\"type\":\"object\",\"properties\":{\"ttl\":{\"type\":[\"number\",\"string\"],"
     "\"description\":\"Seconds or a duration, at most 24h (default " SESSION_TTL_DEFAULT ")\"},"
     "\"memory\":{\"type\":\"string\",\"description\":\"A memory limit (at most the "
     "policy's)\"}@},\"additionalProperties\":false}",
     "{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},\"workspace\":{"
     "\"type\":\"string\"},\"policy_hash\":{\"type\":\"string\"}}}",
     false, false},
    {MCP_TOOL_SESSION_EXEC, "Run a command in a session",
     "Runs a shell command line (command), an argv, or a program (language and code) in a "
     "session, in its workspace. Returns exit_code, stdout, stderr, timed_out and violations.",
     "{\"type\":\"object\",\"properties\":{" S_SESSION ",\"command\":{\"type\":\"string\","
     "\"description\":\"A shell command line (sh -c)\"}," S_LANGUAGE "," S_RUN_FIELDS
     "},\"required\":[\"session_id\"],\"additionalProperties\":false}",
     S_RESULT, false, false},
    {MCP_TOOL_SESSION_STOP, "Stop a session",
     "Ends a session: its processes are killed and its sandbox is taken down.",
     "{\"type\":\"object\",\"properties\":{" S_SESSION
     "},\"required\":[\"session_id\"],\"additionalProperties\":false}",
     "{\"type\":\"object\",\"properties\":{\"stopped\":{\"type\":\"string\"}}}", false, true},
    {MCP_TOOL_READ_FILE, "Read a workspace file",
     "Reads a (UTF-8 text) file of a session's workspace, as the sandbox sees it.",
     "{\"type\":\"object\",\"properties\":{" S_SESSION "," S_PATH(
	 "The file") "},\"required\":[\"session_id\",\"path\"],\"additionalProperties\":false}",
     "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"content\":{\"type\":"
     "\"string\"},\"size\":{\"type\":\"integer\"}}}",
     true, false},
    {MCP_TOOL_WRITE_FILE, "Write a workspace file",
     "Writes a file of a session's workspace whole (the folders above it are made), under the "
     "policy's rules for the workspace.",
     "{\"type\":\"object\",\"properties\":{" S_SESSION
     "," S_PATH("The file") ",\"content\":{\"type\":\"string\"},\"executable\":{\"type\":"
			    "\"boolean\",\"description\":"
			    "\"Mode 0755 instead of "
			    "0644\"}},\"required\":[\"session_id\",\"path\",\"content\"],"
			    "\"additionalProperties\":false}",
     "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"size\":{\"type\":"
     "\"integer\"}}}",
     false, true},
    {MCP_TOOL_LIST_FILES, "List a workspace folder",
     "Lists a folder of a session's workspace: name, type, size, mode and mtime of each entry.",
     "{\"type\":\"object\",\"properties\":{" S_SESSION "," S_PATH(
	 "The folder (default: the "
	 "workspace itself)") "},\"required\":[\"session_id\"],\"additionalProperties\":false}",
     "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"entries\":{\"type\":"
     "\"array\"}}}",
     true, false},
    {MCP_TOOL_REMOVE_FILE, "Remove a workspace file",
     "Removes a file, or an empty folder, of a session's workspace.",
     "{\"type\":\"object\",\"properties\":{" S_SESSION "," S_PATH(
	 "The file") "},\"required\":[\"session_id\",\"path\"],\"additionalProperties\":false}",
     "{\"type\":\"object\",\"properties\":{\"removed\":{\"type\":\"string\"}}}", false, true},
};

/* The properties a client may add to run_code and session_start (where their schema has '@'):
 * a policy (a name; or an object too) and a workspace, as far as the operator allows. */
static int policy_properties(const struct mcp_limits *l, char *buf, size_t size)
{
	bool objects = l->policy_dir && (l->allow & AGENT_EXEC_ALLOW_REQUEST_POLICY);
	bool ws = l->policy_dir && (l->allow & AGENT_EXEC_ALLOW_REQUEST_WORKSPACE);
	int n;

	n = snprintf(buf, size, "%s%s%s",
		     !l->policy_dir ? ""
		     : objects ? ",\"policy\":{\"type\":[\"string\",\"object\"],\"description\":"
				 "\"The name of a policy file the operator offers, or a policy\"}"
			       : ",\"policy\":{\"type\":\"string\",\"description\":\"The name of a "
				 "policy file the operator offers\"}",
		     ws ? ",\"workspace\":{\"type\":\"string\",\"description\":\"A host folder as "
			  "the workspace\"}"
			: "",
		     "");
	return n < 0 || (size_t)n >= size ? -ENOBUFS : 0;
}

static int tool_json(const struct tool_schema *t, const char *extra, struct json_object **ret)
{
	_cleanup_json_ struct json_object *o = json_object_new_object(), *in = NULL, *out = NULL,
					  *ann = NULL;
	_cleanup_free_ char *input = NULL;
	const char *at = strchr(t->input, '@');
	int r;

	if (!o)
		return -ENOMEM;
	if (at && asprintf(&input, "%.*s%s%s", (int)(at - t->input), t->input, extra, at + 1) < 0)
		return -ENOMEM;
	in = json_tokener_parse(input ? input : t->input);
	out = json_tokener_parse(t->output);
	ann = json_object_new_object();
	if (!in || !out || !ann)
		return -EINVAL;
	r = al_json_add(ann, "readOnlyHint", json_object_new_boolean(t->read_only));
	if (r >= 0)
		r = al_json_add(ann, "destructiveHint", json_object_new_boolean(t->destructive));
	if (r >= 0)
		r = al_json_add(ann, "openWorldHint", json_object_new_boolean(false));
	if (r >= 0)
		r = al_json_add(o, "name", json_object_new_string(tool_names[t->tool]));
	if (r >= 0)
		r = al_json_add(o, "title", json_object_new_string(t->title));
	if (r >= 0)
		r = al_json_add(o, "description", json_object_new_string(t->description));
	if (r >= 0)
		r = al_json_add(o, "inputSchema", TAKE_PTR(in));
	if (r >= 0)
		r = al_json_add(o, "outputSchema", TAKE_PTR(out));
	if (r >= 0)
		r = al_json_add(o, "annotations", TAKE_PTR(ann));
	if (r < 0)
		return r;
	*ret = TAKE_PTR(o);
	return 0;
}

int mcp_tools_list(const struct mcp_limits *limits, struct json_object **ret)
{
	_cleanup_json_ struct json_object *o = json_object_new_object(),
					  *list = json_object_new_array();
	char extra[512];
	int r;

	if (!o || !list)
		return -ENOMEM;
	r = policy_properties(limits, extra, sizeof(extra));
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(schemas); i++) {
		struct json_object *t = NULL;

		r = tool_json(&schemas[i], extra, &t);
		if (r >= 0 && json_object_array_add(list, t) < 0) {
			(void)json_object_put(t);
			r = -ENOMEM;
		}
	}
	if (r >= 0)
		r = al_json_add(o, "tools", TAKE_PTR(list));
	if (r < 0)
		return r;
	*ret = TAKE_PTR(o);
	return 0;
}
