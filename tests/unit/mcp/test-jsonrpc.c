/* jsonrpc.c: MCP's JSON-RPC 2.0 messages, one a line; the answers; initialize. Messages in the
 * tests are written with ' where JSON wants ". */

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

static char *test_json(const char *quoted)
{
	char *s = strdup(quoted);

	if (!s)
		abort();
	for (char *c = s; *c; c++)
		if (*c == '\'')
			*c = '"';
	return s;
}

/* Parses; returns the code, with *m filled on success and the id it read in *id. */
static int parse(const char *quoted, struct mcp_message *m, struct json_object **id)
{
	_cleanup_free_ char *json = test_json(quoted);
	struct al_error err = {0};

	return mcp_message_parse(json, strlen(json), m, id, &err);
}

static void test_request_is_parsed_with_its_id_method_and_params(void **state)
{
	struct mcp_message m = {0};
	struct json_object *id = NULL;

	(void)state;
	assert_int_equal(
	    parse("{'jsonrpc':'2.0','id':7,'method':'tools/list','params':{}}", &m, &id), 0);
	assert_int_equal(m.kind, MCP_MESSAGE_REQUEST);
	assert_string_equal(m.method, "tools/list");
	assert_int_equal(json_object_get_int(m.id), 7);
	assert_non_null(m.params);
	json_object_put(id);
	mcp_message_done(&m);
}

static void test_notification_has_no_id(void **state)
{
	struct mcp_message m = {0};
	struct json_object *id = NULL;

	(void)state;
	assert_int_equal(parse("{'jsonrpc':'2.0','method':'notifications/initialized'}", &m, &id),
			 0);
	assert_int_equal(m.kind, MCP_MESSAGE_NOTIFICATION);
	assert_null(m.id);
	mcp_message_done(&m);
}

static void test_response_from_the_client_is_recognised(void **state)
{
	struct mcp_message m = {0};
	struct json_object *id = NULL;

	(void)state;
	assert_int_equal(parse("{'jsonrpc':'2.0','id':'a','result':{}}", &m, &id), 0);
	assert_int_equal(m.kind, MCP_MESSAGE_RESPONSE);
	json_object_put(id);
	mcp_message_done(&m);
}

static void test_not_json_is_a_parse_error(void **state)
{
	struct mcp_message m = {0};
	struct json_object *id = NULL;

	(void)state;
	assert_int_equal(parse("{'jsonrpc':'2.0','id':1,", &m, &id), MCP_PARSE_ERROR);
	assert_null(id);
	assert_int_equal(parse("", &m, &id), MCP_PARSE_ERROR);
	/* json-c would keep the last of two keys: refused as not JSON we read one way */
	assert_int_equal(parse("{'jsonrpc':'2.0','id':1,'method':'a','method':'b'}", &m, &id),
			 MCP_PARSE_ERROR);
	json_object_put(id);
}

static void test_invalid_requests_are_refused_keeping_the_id(void **state)
{
	static const char *const bad[] = {
	    "[{'jsonrpc':'2.0','id':1,'method':'ping'}]", /* a batch */
	    "42",
	    "{'id':3,'method':'ping'}",				/* no jsonrpc */
	    "{'jsonrpc':'1.0','id':3,'method':'ping'}",		/* another version */
	    "{'jsonrpc':'2.0','id':3,'method':7}",		/* method not a string */
	    "{'jsonrpc':'2.0','id':3,'method':'a','params':5}", /* params not structured */
	    "{'jsonrpc':'2.0','id':3}",				/* neither method nor result */
	};
	struct mcp_message m = {0};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		struct json_object *id = NULL;

		assert_int_equal(parse(bad[i], &m, &id), MCP_INVALID_REQUEST);
		if (i >= 2)
			assert_int_equal(json_object_get_int(id), 3);
		json_object_put(id);
	}
}

static void test_null_or_fractional_id_is_refused(void **state)
{
	struct mcp_message m = {0};
	struct json_object *id = NULL;

	(void)state;
	assert_int_equal(parse("{'jsonrpc':'2.0','id':null,'method':'ping'}", &m, &id),
			 MCP_INVALID_REQUEST);
	assert_null(id);
	assert_int_equal(parse("{'jsonrpc':'2.0','id':1.5,'method':'ping'}", &m, &id),
			 MCP_INVALID_REQUEST);
	assert_null(id);
}

static void test_error_line_is_one_line_with_null_id(void **state)
{
	_cleanup_free_ char *l = NULL;

	(void)state;
	assert_int_equal(mcp_error_line(NULL, MCP_PARSE_ERROR, "Parse error\nsecond", &l), 0);
	assert_string_equal(l, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,"
			       "\"message\":\"Parse error\\nsecond\"}}\n");
}

static void test_result_line_keeps_a_string_id(void **state)
{
	_cleanup_json_ struct json_object *id = json_object_new_string("x");
	_cleanup_free_ char *l = NULL;

	(void)state;
	assert_int_equal(mcp_result_line(id, json_object_new_object(), &l), 0);
	assert_string_equal(l, "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"result\":{}}\n");
}

static void test_protocol_version_is_negotiated(void **state)
{
	(void)state;
	assert_string_equal(mcp_protocol_negotiate("2025-06-18"), "2025-06-18");
	assert_string_equal(mcp_protocol_negotiate("2024-11-05"), "2024-11-05");
	assert_string_equal(mcp_protocol_negotiate(MCP_PROTOCOL_LATEST), MCP_PROTOCOL_LATEST);
	assert_string_equal(mcp_protocol_negotiate("2099-01-01"), MCP_PROTOCOL_LATEST);
	assert_string_equal(mcp_protocol_negotiate(NULL), MCP_PROTOCOL_LATEST);
}

static void test_initialize_answers_version_tools_and_server(void **state)
{
	_cleanup_free_ char *json = test_json("{'protocolVersion':'2025-03-26','capabilities':{},"
					      "'clientInfo':{'name':'t','version':'1'}}");
	_cleanup_json_ struct json_object *params = json_tokener_parse(json), *r = NULL;
	struct json_object *v = NULL;
	struct al_error err = {0};

	(void)state;
	assert_int_equal(mcp_initialize_result(params, &r, &err), 0);
	assert_true(json_object_object_get_ex(r, "protocolVersion", &v));
	assert_string_equal(json_object_get_string(v), "2025-03-26");
	assert_true(json_object_object_get_ex(r, "capabilities", &v));
	assert_true(json_object_object_get_ex(v, "tools", NULL));
	assert_true(json_object_object_get_ex(r, "serverInfo", &v));
	assert_true(json_object_object_get_ex(v, "name", &v));
	assert_string_equal(json_object_get_string(v), "airlock");
}

static void test_initialize_refuses_a_version_that_is_not_a_string(void **state)
{
	_cleanup_json_ struct json_object *params = json_tokener_parse("{\"protocolVersion\":1}"),
					  *r = NULL;
	struct al_error err = {0};

	(void)state;
	assert_int_equal(mcp_initialize_result(params, &r, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "protocolVersion"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_request_is_parsed_with_its_id_method_and_params),
	    cmocka_unit_test(test_notification_has_no_id),
	    cmocka_unit_test(test_response_from_the_client_is_recognised),
	    cmocka_unit_test(test_not_json_is_a_parse_error),
	    cmocka_unit_test(test_invalid_requests_are_refused_keeping_the_id),
	    cmocka_unit_test(test_null_or_fractional_id_is_refused),
	    cmocka_unit_test(test_error_line_is_one_line_with_null_id),
	    cmocka_unit_test(test_result_line_keeps_a_string_id),
	    cmocka_unit_test(test_protocol_version_is_negotiated),
	    cmocka_unit_test(test_initialize_answers_version_tools_and_server),
	    cmocka_unit_test(test_initialize_refuses_a_version_that_is_not_a_string),
	};

	return cmocka_run_group_tests_name("mcp-jsonrpc", tests, NULL, NULL);
}
