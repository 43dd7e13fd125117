/* plan.c, tools.c: a tool call's arguments checked and planned (a client never brings more than
 * the operator allows), the tools' schemas, and a child's answer as the tool's result. Arguments
 * are written with ' where JSON wants ". */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/json-util.h"
#include "mcp/mcp.h"

static const struct mcp_limits fixed = {.policy_path = true};
static const struct mcp_limits none = {0};
static const struct mcp_limits dir = {.policy_dir = true};
static const struct mcp_limits dir_all = {.policy_dir = true,
					  .allow = AGENT_EXEC_ALLOW_REQUEST_POLICY |
						   AGENT_EXEC_ALLOW_REQUEST_WORKSPACE};

static int plan(const char *quoted, const struct mcp_limits *l, struct mcp_call *c,
		struct al_error *err)
{
	_cleanup_free_ char *json = strdup(quoted);
	_cleanup_json_ struct json_object *params = NULL;

	for (char *p = json; *p; p++)
		if (*p == '\'')
			*p = '"';
	params = json_tokener_parse(json);
	assert_non_null(params);
	*c = (struct mcp_call){0};
	return mcp_call_plan(params, l, c, err);
}

static void test_unknown_tool_is_a_protocol_error(void **state)
{
	struct mcp_call c;
	struct al_error err = {0};

	(void)state;
	assert_int_equal(plan("{'name':'format_disk','arguments':{}}", &none, &c, &err),
			 MCP_INVALID_PARAMS);
	assert_non_null(strstr(err.msg, "format_disk"));
	assert_int_equal(plan("{'arguments':{}}", &none, &c, &err), MCP_INVALID_PARAMS);
	assert_int_equal(plan("{'name':'run_code','arguments':[1]}", &none, &c, &err),
			 MCP_INVALID_PARAMS);
}

static void test_run_code_becomes_an_exec_request_with_a_default_timeout(void **state)
{
	struct mcp_call c;
	struct al_error err = {0};

	(void)state;
	assert_int_equal(
	    plan("{'name':'run_code','arguments':{'language':'python','code':'print(1)'"
		 ",'stdin':'x'}}",
		 &fixed, &c, &err),
	    0);
	assert_int_equal(c.tool, MCP_TOOL_RUN_CODE);
	assert_string_equal(c.request, "{\"language\":\"python\",\"code\":\"print(1)\","
				       "\"stdin\":\"x\",\"timeout\":\"" MCP_DEFAULT_TIMEOUT "\"}");
	mcp_call_done(&c);
}

static void test_run_code_refuses_unknown_arguments_and_a_missing_language(void **state)
{
	struct mcp_call c;
	struct al_error err = {0};

	(void)state;
	assert_int_equal(plan("{'name':'run_code','arguments':{'language':'python','code':'1',"
			      "'privileged':true}}",
			      &none, &c, &err),
			 -EINVAL);
	assert_non_null(strstr(err.msg, "privileged"));
	assert_int_equal(plan("{'name':'run_code','arguments':{'code':'1'}}", &none, &c, &err),
			 -EINVAL);
	assert_non_null(strstr(err.msg, "language"));
}

/* Without --policy-dir, a client's call is not the operator's: no policy, no workspace. */
static void test_policy_and_workspace_are_refused_unless_the_operator_allows(void **state)
{
	static const char *const calls[] = {
	    "{'name':'run_code','arguments':{'language':'shell','code':'id','policy':'x'}}",
	    "{'name':'run_code','arguments':{'language':'shell','code':'id','policy':{}}}",
	    "{'name':'run_code','arguments':{'language':'shell','code':'id','workspace':'/etc'}}",
	    "{'name':'session_start','arguments':{'policy':{'mounts':[]}}}",
	    "{'name':'session_start','arguments':{'workspace':'/root'}}",
	};
	const struct mcp_limits *limits[] = {&none, &fixed};
	struct mcp_call c;

	(void)state;
	for (size_t l = 0; l < ELEMENTSOF(limits); l++)
		for (size_t i = 0; i < ELEMENTSOF(calls); i++) {
			struct al_error err = {0};

			assert_int_equal(plan(calls[i], limits[l], &c, &err), -EPERM);
			assert_true(strstr(err.msg, "policy") || strstr(err.msg, "workspace"));
		}
}

static void test_policy_dir_allows_a_name_only_unless_allowed_more(void **state)
{
	struct mcp_call c;
	struct al_error err = {0};

	(void)state;
	assert_int_equal(plan("{'name':'run_code','arguments':{'language':'shell','code':'id',"
			      "'policy':'strict'}}",
			      &dir, &c, &err),
			 0);
	assert_non_null(strstr(c.request, "\"policy\":\"strict\""));
	mcp_call_done(&c);
	assert_int_equal(plan("{'name':'run_code','arguments':{'language':'shell','code':'id',"
			      "'policy':{}}}",
			      &dir, &c, &err),
			 -EPERM);
	assert_int_equal(
	    plan("{'name':'session_start','arguments':{'workspace':'/srv'}}", &dir, &c, &err),
	    -EPERM);
	assert_int_equal(plan("{'name':'session_start','arguments':{'policy':{'tier':1},"
			      "'workspace':'/srv'}}",
			      &dir_all, &c, &err),
			 0);
	assert_string_equal(c.workspace, "/srv");
	assert_string_equal(c.policy_json, "{\"tier\":1}");
	mcp_call_done(&c);
}

static void test_session_start_ttl_is_bounded(void **state)
{
	struct mcp_call c;
	struct al_error err = {0};

	(void)state;
	assert_int_equal(plan("{'name':'session_start'}", &none, &c, &err), 0);
	assert_string_equal(c.ttl, "3600000000us");
	mcp_call_done(&c);
	assert_int_equal(
	    plan("{'name':'session_start','arguments':{'ttl':'90s'}}", &none, &c, &err), 0);
	assert_string_equal(c.ttl, "90000000us");
	mcp_call_done(&c);
	assert_int_equal(plan("{'name':'session_start','arguments':{'ttl':0}}", &none, &c, &err),
			 -EINVAL);
	assert_int_equal(
	    plan("{'name':'session_start','arguments':{'ttl':'25h'}}", &none, &c, &err), -EINVAL);
}

static void test_session_exec_command_runs_through_the_shell(void **state)
{
	struct mcp_call c;
	struct al_error err = {0};

	(void)state;
	assert_int_equal(plan("{'name':'session_exec','arguments':{'session_id':'s-0123abcd',"
			      "'command':'ls -l','timeout':5}}",
			      &none, &c, &err),
			 0);
	assert_string_equal(c.session, "s-0123abcd");
	assert_string_equal(c.request, "{\"language\":\"shell\",\"code\":\"ls -l\",\"timeout\":5}");
	mcp_call_done(&c);
	assert_int_equal(plan("{'name':'session_exec','arguments':{'session_id':'s-0123abcd',"
			      "'argv':['ls','-l']}}",
			      &none, &c, &err),
			 0);
	assert_non_null(strstr(c.request, "\"language\":\"command\""));
	mcp_call_done(&c);
	assert_int_equal(plan("{'name':'session_exec','arguments':{'session_id':'s-0123abcd',"
			      "'command':'ls','language':'python'}}",
			      &none, &c, &err),
			 -EINVAL);
	assert_int_equal(plan("{'name':'session_exec','arguments':{'session_id':'s-0123abcd'}}",
			      &none, &c, &err),
			 -EINVAL);
	/* a session's policy is its own: not in a command */
	assert_int_equal(plan("{'name':'session_exec','arguments':{'session_id':'s-0123abcd',"
			      "'command':'id','policy':'x'}}",
			      &dir_all, &c, &err),
			 -EINVAL);
}

static void test_file_paths_and_session_ids_are_checked(void **state)
{
	struct mcp_call c;
	struct al_error err = {0};

	(void)state;
	assert_int_equal(plan("{'name':'read_file','arguments':{'session_id':'s-0123abcd',"
			      "'path':'../etc/passwd'}}",
			      &none, &c, &err),
			 -EINVAL);
	assert_int_equal(plan("{'name':'read_file','arguments':{'session_id':'s-0123abcd',"
			      "'path':'/etc/passwd'}}",
			      &none, &c, &err),
			 -EINVAL);
	assert_int_equal(plan("{'name':'read_file','arguments':{'session_id':'../x','path':'a'}}",
			      &none, &c, &err),
			 -EINVAL);
	assert_non_null(strstr(err.msg, "session_id"));
	assert_int_equal(
	    plan("{'name':'list_files','arguments':{'session_id':'s-0123abcd'}}", &none, &c, &err),
	    0);
	assert_string_equal(c.path, "");
	mcp_call_done(&c);
	assert_int_equal(plan("{'name':'write_file','arguments':{'session_id':'s-0123abcd',"
			      "'path':'d/x.sh','content':'echo','executable':true}}",
			      &none, &c, &err),
			 0);
	assert_int_equal(c.file_flags, AGENT_FILE_PARENTS | AGENT_FILE_EXECUTABLE);
	assert_int_equal(c.len, 4);
	mcp_call_done(&c);
	assert_int_equal(plan("{'name':'read_file','arguments':{'session_id':'s-0123abcd',"
			      "'path':'a','content':'x'}}",
			      &none, &c, &err),
			 -EINVAL);
}

static bool has_property(struct json_object *list, const char *tool, const char *prop)
{
	for (size_t i = 0; i < json_object_array_length(list); i++) {
		struct json_object *t = json_object_array_get_idx(list, i), *v = NULL;

		if (!streq(json_object_get_string(json_object_object_get(t, "name")), tool))
			continue;
		v = json_object_object_get(json_object_object_get(t, "inputSchema"), "properties");
		return json_object_object_get_ex(v, prop, NULL);
	}
	fail_msg("no tool %s", tool);
	return false;
}

static void test_tools_list_offers_policy_only_where_allowed(void **state)
{
	_cleanup_json_ struct json_object *a = NULL, *b = NULL, *c = NULL;
	struct json_object *la, *lb, *lc;

	(void)state;
	assert_int_equal(mcp_tools_list(&none, &a), 0);
	assert_int_equal(mcp_tools_list(&dir, &b), 0);
	assert_int_equal(mcp_tools_list(&dir_all, &c), 0);
	la = json_object_object_get(a, "tools");
	lb = json_object_object_get(b, "tools");
	lc = json_object_object_get(c, "tools");
	assert_int_equal(json_object_array_length(la), MCP_TOOL_MAX);
	assert_false(has_property(la, "run_code", "policy"));
	assert_false(has_property(la, "session_start", "workspace"));
	assert_true(has_property(lb, "run_code", "policy"));
	assert_false(has_property(lb, "run_code", "workspace"));
	assert_true(has_property(lc, "session_start", "workspace"));
	assert_true(has_property(la, "session_exec", "command"));
}

static void test_result_of_a_child_is_structured_and_errors_flagged(void **state)
{
	static const char ran[] = "{\"error\":null,\"exit_code\":3,\"stdout\":\"\"}\n";
	static const char refused[] =
	    "{\"error\":{\"kind\":\"invalid_request\",\"message\":\"m\"}}";
	_cleanup_json_ struct json_object *a = NULL, *b = NULL, *c = NULL;

	(void)state;
	assert_int_equal(mcp_call_result(MCP_TOOL_RUN_CODE, ran, strlen(ran), NULL, &a), 0);
	assert_false(json_object_get_boolean(json_object_object_get(a, "isError")));
	assert_int_equal(json_object_get_int(json_object_object_get(
			     json_object_object_get(a, "structuredContent"), "exit_code")),
			 3);
	assert_int_equal(mcp_call_result(MCP_TOOL_RUN_CODE, refused, strlen(refused), NULL, &b), 0);
	assert_true(json_object_get_boolean(json_object_object_get(b, "isError")));
	assert_int_equal(mcp_call_result(MCP_TOOL_RUN_CODE, "garbage", 7, "it broke", &c), 0);
	assert_true(json_object_get_boolean(json_object_object_get(c, "isError")));
	assert_null(json_object_object_get(c, "structuredContent"));
	assert_non_null(strstr(json_object_to_json_string(c), "it broke"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_unknown_tool_is_a_protocol_error),
	    cmocka_unit_test(test_run_code_becomes_an_exec_request_with_a_default_timeout),
	    cmocka_unit_test(test_run_code_refuses_unknown_arguments_and_a_missing_language),
	    cmocka_unit_test(test_policy_and_workspace_are_refused_unless_the_operator_allows),
	    cmocka_unit_test(test_policy_dir_allows_a_name_only_unless_allowed_more),
	    cmocka_unit_test(test_session_start_ttl_is_bounded),
	    cmocka_unit_test(test_session_exec_command_runs_through_the_shell),
	    cmocka_unit_test(test_file_paths_and_session_ids_are_checked),
	    cmocka_unit_test(test_tools_list_offers_policy_only_where_allowed),
	    cmocka_unit_test(test_result_of_a_child_is_structured_and_errors_flagged),
	};

	return cmocka_run_group_tests_name("mcp-plan", tests, NULL, NULL);
}
