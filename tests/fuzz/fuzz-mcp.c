/* Fuzzes what airlock mcp reads from its client (an agent, and so possibly a model): one line
 * through mcp_message_parse(), and, for a request, initialize's params and tools/call's params
 * through mcp_call_plan() under each set of operator limits. Besides "no crash, no leak", checks:
 *  - a refused message is MCP_PARSE_ERROR or MCP_INVALID_REQUEST with a one-line message, and an
 *    answer to it is one line of JSON;
 *  - a planned call never carries a policy or a workspace the limits do not allow, and its exec
 *    request (run_code, session_exec) is a JSON object with a timeout;
 *  - a refused call says why (a one-line message). */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "common/json-util.h"
#include "mcp/mcp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "mcp: %s\n", what);
		abort();
	}
}

static void check_message(const struct al_error *err)
{
	check(err->msg[0] != '\0', "a refusal without a message");
	check(!strchr(err->msg, '\n'), "a message of more than one line");
}

static void check_plan(const struct mcp_call *c, const struct mcp_limits *l)
{
	_cleanup_json_ struct json_object *req = NULL;
	struct al_error err = {0};
	bool policy, workspace;

	if (c->request) {
		check(al_json_parse(c->request, strlen(c->request), 64, &req, &err) >= 0 &&
			  json_object_is_type(req, json_type_object),
		      "an exec request that is not a JSON object");
		check(json_object_object_get_ex(req, "timeout", NULL),
		      "an exec request without timeout");
		policy = json_object_object_get_ex(req, "policy", NULL);
		workspace = json_object_object_get_ex(req, "workspace", NULL);
		check(!policy || l->policy_dir, "a policy without --policy-dir");
		check(!policy || l->allow & AGENT_EXEC_ALLOW_REQUEST_POLICY ||
			  json_object_is_type(json_object_object_get(req, "policy"),
					      json_type_string),
		      "a policy object without --allow-request-policy");
		check(!workspace ||
			  (l->policy_dir && l->allow & AGENT_EXEC_ALLOW_REQUEST_WORKSPACE),
		      "a workspace without --allow-request-workspace");
	}
	check(!c->policy_name || l->policy_dir, "a session's policy without --policy-dir");
	check(!c->policy_json || (l->policy_dir && l->allow & AGENT_EXEC_ALLOW_REQUEST_POLICY),
	      "a session's policy object without --allow-request-policy");
	check(!c->workspace || (l->policy_dir && l->allow & AGENT_EXEC_ALLOW_REQUEST_WORKSPACE),
	      "a session's workspace without --allow-request-workspace");
}

static void plan_all(struct json_object *params)
{
	static const struct mcp_limits limits[] = {
	    {0},
	    {.policy_path = true},
	    {.policy_dir = true},
	    {.policy_dir = true,
	     .allow = AGENT_EXEC_ALLOW_REQUEST_POLICY | AGENT_EXEC_ALLOW_REQUEST_WORKSPACE},
	};

	for (size_t i = 0; i < ELEMENTSOF(limits); i++) {
		struct mcp_call c = {0};
		struct al_error err = {0};
		int r = mcp_call_plan(params, &limits[i], &c, &err);

		if (r < 0) {
			check_message(&err);
			continue;
		}
		check_plan(&c, &limits[i]);
		mcp_call_done(&c);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mcp_message m = {0};
	struct json_object *id = NULL, *result = NULL;
	struct al_error err = {0};
	char *line = NULL;
	int r;

	r = mcp_message_parse((const char *)data, size, &m, &id, &err);
	if (r < 0) {
		check(r == MCP_PARSE_ERROR || r == MCP_INVALID_REQUEST, "an unknown refusal code");
		check_message(&err);
		check(mcp_error_line(id, r, err.msg, &line) >= 0, "no error line");
		check(strchr(line, '\n') == line + strlen(line) - 1,
		      "an answer of more than one line");
		free(line);
		(void)json_object_put(id);
		return 0;
	}
	(void)json_object_put(id);
	if (m.kind == MCP_MESSAGE_REQUEST && streq(m.method, "initialize") &&
	    mcp_initialize_result(m.params, &result, &err) >= 0)
		(void)json_object_put(result);
	else if (m.kind == MCP_MESSAGE_REQUEST)
		plan_all(m.params);
	mcp_message_done(&m);
	return 0;
}
