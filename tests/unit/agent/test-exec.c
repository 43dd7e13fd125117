/* exec.c: who may pick a request's policy, agent_policy_source_check(). The operator's options
 * (-p, --policy-dir, --allow-request-*) against what a request brings.
 *
 * Requests in the tests are written with ' where JSON wants ", as in test-request.c. */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/agent-internal.h"

#define INLINE "{'language':'shell','code':'true','timeout':5,'policy':{'tier':1}}"
#define NAMED "{'language':'shell','code':'true','timeout':5,'policy':'p.json'}"
#define WORKSPACE "{'language':'shell','code':'true','timeout':5,'workspace':'/root/.ssh'}"
#define PLAIN "{'language':'shell','code':'true','timeout':5}"

static const struct agent_exec_options own = {0};
static const struct agent_exec_options fixed = {.policy_path = "/etc/airlock/p.json"};
static const struct agent_exec_options dir = {.policy_dir = "/etc/airlock/policies"};
static const struct agent_exec_options dir_allow_policy = {
    .policy_dir = "/etc/airlock/policies", .allow = AGENT_EXEC_ALLOW_REQUEST_POLICY};
static const struct agent_exec_options dir_allow_workspace = {
    .policy_dir = "/etc/airlock/policies", .allow = AGENT_EXEC_ALLOW_REQUEST_WORKSPACE};

/* agent_policy_source_check() of the request against o: its return value, and err containing
 * part when it fails. */
static int check_at(const char *quoted, const struct agent_exec_options *o, const char *part,
		    const char *file, int line)
{
	_cleanup_(agent_request_freep) struct agent_request *req = NULL;
	char *json = strdup(quoted);
	struct al_error err = {};
	int r;

	if (!json)
		abort();
	for (char *c = json; *c; c++)
		if (*c == '\'')
			*c = '"';
	r = agent_request_parse(json, strlen(json), &req, &err);
	free(json);
	if (r < 0) {
		print_error("%s: %s\n", quoted, err.msg);
		_fail(file, line);
	}
	r = agent_policy_source_check(req, o, &err);
	if (r < 0 && (!part || !strstr(err.msg, part))) {
		print_error("%s: \"%s\" does not contain \"%s\"\n", quoted, err.msg,
			    part ? part : "");
		_fail(file, line);
	}
	return r;
}
#define check(q, o, part) check_at((q), (o), (part), __FILE__, __LINE__)

static void test_policy_dir_refuses_an_inline_policy(void **state)
{
	(void)state;
	assert_int_equal(check(INLINE, &dir, "--allow-request-policy"), -EPERM);
	assert_int_equal(check(INLINE, &dir_allow_workspace, "policy: "), -EPERM);
}

static void test_policy_dir_refuses_a_request_workspace(void **state)
{
	(void)state;
	assert_int_equal(check(WORKSPACE, &dir, "--allow-request-workspace"), -EPERM);
	assert_int_equal(check(WORKSPACE, &dir_allow_policy, "workspace: "), -EPERM);
}

static void test_policy_dir_allows_what_the_operator_allows(void **state)
{
	(void)state;
	assert_int_equal(check(INLINE, &dir_allow_policy, NULL), 0);
	assert_int_equal(check(WORKSPACE, &dir_allow_workspace, NULL), 0);
}

static void test_policy_dir_allows_a_name_of_the_folder(void **state)
{
	(void)state;
	assert_int_equal(check(NAMED, &dir, NULL), 0);
	assert_int_equal(check(PLAIN, &dir, NULL), 0);
	assert_int_equal(
	    check("{'language':'shell','code':'true','timeout':5,'policy':'../p.json'}", &dir,
		  "not a file name"),
	    -EINVAL);
	assert_int_equal(check("{'language':'shell','code':'true','timeout':5,'policy':'a/p.json'}",
			       &dir, "not a file name"),
			 -EINVAL);
}

static void test_fixed_policy_refuses_everything_the_request_brings(void **state)
{
	(void)state;
	assert_int_equal(check(INLINE, &fixed, "--policy"), -EPERM);
	assert_int_equal(check(NAMED, &fixed, "--policy"), -EPERM);
	assert_int_equal(check(WORKSPACE, &fixed, "workspace: "), -EPERM);
	assert_int_equal(check(PLAIN, &fixed, NULL), 0);
}

static void test_own_requests_may_bring_a_policy_or_a_workspace(void **state)
{
	(void)state;
	assert_int_equal(check(INLINE, &own, NULL), 0);
	assert_int_equal(check(WORKSPACE, &own, NULL), 0);
	/* A name needs a folder to be looked up in. */
	assert_int_equal(check(NAMED, &own, "--policy-dir"), -EPERM);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_policy_dir_refuses_an_inline_policy),
	    cmocka_unit_test(test_policy_dir_refuses_a_request_workspace),
	    cmocka_unit_test(test_policy_dir_allows_what_the_operator_allows),
	    cmocka_unit_test(test_policy_dir_allows_a_name_of_the_folder),
	    cmocka_unit_test(test_fixed_policy_refuses_everything_the_request_brings),
	    cmocka_unit_test(test_own_requests_may_bring_a_policy_or_a_workspace),
	};

	return cmocka_run_group_tests_name("agent-exec", tests, NULL, NULL);
}
