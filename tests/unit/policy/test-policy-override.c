/* policy-override.c: command-line overrides validate like the JSON field, name their flag, and
 * leave the policy as it was when they refuse. */

#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "policy/policy-internal.h"
#include "tests/unit/policy/policy-test.h"

static int setup(void **state)
{
	struct policy *p = NULL;
	int r;

	r = policy_new_default(&p);
	*state = p;
	return r;
}

static int teardown(void **state)
{
	policy_free(*state);
	return 0;
}

/* Calls a setter that must refuse, and checks the message and that the canonical form of the
 * policy did not change. */
typedef int (*setter_fn)(struct policy *p, const char *arg, struct al_error *err);

static void check_refused(struct policy *p, setter_fn set, const char *arg, const char *message)
{
	_cleanup_free_ char *before = NULL, *after = NULL;
	struct al_error err = {};
	int r;

	assert_int_equal(policy_to_canonical_json(p, &before), 0);
	r = set(p, arg, &err);
	if (!test_error_matches(&err, r, -EINVAL, message))
		fail_msg("argument \"%s\"", arg);
	assert_int_equal(policy_to_canonical_json(p, &after), 0);
	assert_string_equal(before, after);
}

static void test_memory_override_sets_bytes(void **state)
{
	struct policy *p = *state;
	struct al_error err = {};

	assert_int_equal(policy_set_memory(p, "1.5Gi", &err), 0);
	assert_int_equal(p->resources.memory, UINT64_C(3) << 29);
	assert_int_equal(policy_set_memory(p, "max", &err), 0);
	assert_int_equal(p->resources.memory, 0);
}

static void test_memory_override_refuses_bad_sizes(void **state)
{
	struct policy *p = *state;

	check_refused(p, policy_set_memory, "12Q", "--memory: \"12Q\" is not a size");
	check_refused(p, policy_set_memory, "", "--memory: \"\" is not a size");
	check_refused(p, policy_set_memory, "-1G", "--memory: \"-1G\" is not a size");
	check_refused(p, policy_set_memory, "512", "--memory: 512 is below the minimum of 1Mi");
	check_refused(p, policy_set_memory, "99999999999999999999",
		      "--memory: \"99999999999999999999\" is too large");
}

static void test_timeout_override_sets_usec(void **state)
{
	struct policy *p = *state;
	struct al_error err = {};

	assert_int_equal(policy_set_timeout(p, "1m30s", &err), 0);
	assert_int_equal(p->resources.timeout_usec, UINT64_C(90000000));
}

static void test_timeout_override_refuses_bad_durations(void **state)
{
	struct policy *p = *state;

	check_refused(p, policy_set_timeout, "30", "--timeout: \"30\" is not a duration");
	check_refused(p, policy_set_timeout, "0s", "--timeout: \"0s\": a timeout must be longer");
	check_refused(p, policy_set_timeout, "1.5s", "--timeout: \"1.5s\" is not a duration");
}

static void test_seccomp_override_sets_the_level(void **state)
{
	struct policy *p = *state;
	struct al_error err = {};

	assert_int_equal(policy_set_seccomp(p, "strict", &err), 0);
	assert_int_equal(p->seccomp, POLICY_SECCOMP_STRICT);
	assert_int_equal(policy_set_seccomp(p, "baseline", &err), 0);
	assert_int_equal(p->seccomp, POLICY_SECCOMP_BASELINE);
	check_refused(p, policy_set_seccomp, "none", "--seccomp: \"none\" is not a seccomp level");
	check_refused(p, policy_set_seccomp, "Strict", "--seccomp: \"Strict\" is not");
}

static void test_workspace_override_sets_the_normalised_root(void **state)
{
	struct policy *p = *state;
	struct al_error err = {};

	assert_int_equal(policy_set_workspace(p, "../proj//", &err), 0);
	assert_string_equal(p->workspace.root, "../proj");
	assert_int_equal(policy_set_workspace(p, "/srv/x/.", &err), 0);
	assert_string_equal(p->workspace.root, "/srv/x");
	check_refused(p, policy_set_workspace, "", "--workspace: the path is empty");
	check_refused(p, policy_set_workspace, "a\nb",
		      "--workspace: \"a\\x0ab\" contains a control");
	check_refused(p, policy_set_workspace, "\xff", "--workspace: \"\\xff\" is not valid UTF-8");
}

static void test_env_override_adds_and_replaces(void **state)
{
	struct policy *p = *state;
	struct al_error err = {};

	assert_int_equal(policy_set_env(p, "B=2", &err), 0);
	assert_int_equal(policy_set_env(p, "A=x=y", &err), 0);
	assert_int_equal(policy_set_env(p, "C=", &err), 0);
	assert_int_equal(policy_set_env(p, "B=3", &err), 0);
	assert_int_equal(p->n_env, 3);
	assert_string_equal(p->env[0].name, "A");
	assert_string_equal(p->env[0].value, "x=y");
	assert_string_equal(p->env[1].name, "B");
	assert_string_equal(p->env[1].value, "3");
	assert_string_equal(p->env[2].value, "");
}

static void test_env_override_refuses_bad_assignments(void **state)
{
	struct policy *p = *state;

	check_refused(p, policy_set_env, "NOEQUALS", "--env: \"NOEQUALS\" is not NAME=VALUE");
	check_refused(p, policy_set_env, "=x", "--env: \"\" is not a valid variable name");
	check_refused(p, policy_set_env, "1A=x", "--env: \"1A\" is not a valid variable name");
	check_refused(p, policy_set_env, "LD_PRELOAD=/tmp/x.so",
		      "--env: \"LD_PRELOAD\" is refused");
	check_refused(p, policy_set_env, "A=\xc3", "--env: \"\\xc3\" is not valid UTF-8");
}

static void test_env_override_may_not_set_an_injected_variable(void **state)
{
	_cleanup_(policy_freep) struct policy *p =
	    test_load("{'credentials':[{'name':'gh','source':{'type':'vault'},"
		      "'injection':{'type':'env_var','var_name':'GITHUB_TOKEN'},"
		      "'hosts':['api.github.com']}]}");

	(void)state;
	check_refused(p, policy_set_env, "GITHUB_TOKEN=mine",
		      "--env: \"GITHUB_TOKEN\" is set by credential \"gh\"");
}

static void test_env_override_value_may_hold_32kib(void **state)
{
	struct policy *p = *state;
	_cleanup_free_ char *a = test_alloc(POLICY_ENV_VALUE_MAX + 4);

	memcpy(a, "V=", 2);
	memset(a + 2, 'v', POLICY_ENV_VALUE_MAX + 1);
	a[POLICY_ENV_VALUE_MAX + 3] = '\0';
	check_refused(p, policy_set_env, a, "--env: \"vvvv");
	a[POLICY_ENV_VALUE_MAX + 2] = '\0';
	assert_int_equal(policy_set_env(p, a, NULL), 0);
}

static void test_allow_override_takes_every_destination_form(void **state)
{
	static const struct {
		const char *arg, *destination;
		enum policy_dest_kind kind;
		uint16_t port;
	} cases[] = {
	    {"API.example.com", "api.example.com", POLICY_DEST_HOST, 0},
	    {"api.example.com:8443", "api.example.com", POLICY_DEST_HOST, 8443},
	    {"*.pypi.org", "*.pypi.org", POLICY_DEST_WILDCARD, 0},
	    {"*.pypi.org:443", "*.pypi.org", POLICY_DEST_WILDCARD, 443},
	    {"192.0.2.1", "192.0.2.1", POLICY_DEST_CIDR, 0},
	    {"192.0.2.1:22", "192.0.2.1", POLICY_DEST_CIDR, 22},
	    {"10.0.0.0/8", "10.0.0.0/8", POLICY_DEST_CIDR, 0},
	    {"10.0.0.0/8:5432", "10.0.0.0/8", POLICY_DEST_CIDR, 5432},
	    {"[2001:db8::1]:443", "2001:db8::1", POLICY_DEST_CIDR, 443},
	    {"[2001:db8::]", "2001:db8::", POLICY_DEST_CIDR, 0},
	    {"2001:db8::/32", "2001:db8::/32", POLICY_DEST_CIDR, 0},
	    {"::1", "::1", POLICY_DEST_CIDR, 0},
	};
	struct policy *p = *state;
	struct al_error err = {};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		const struct policy_net_rule *r;

		if (policy_add_allow(p, cases[i].arg, &err) < 0)
			fail_msg("%s: %s", cases[i].arg, err.msg);
		assert_int_equal(p->network.n_rules, i + 1);
		r = &p->network.rules[i];
		assert_string_equal(r->destination, cases[i].destination);
		assert_int_equal(r->kind, cases[i].kind);
		assert_int_equal(r->port, cases[i].port);
		assert_int_equal(r->action, POLICY_NET_ALLOW);
	}
	assert_int_equal(p->network.rules[8].family, AF_INET6);
}

static void test_allow_override_refuses_bad_destinations(void **state)
{
	struct policy *p = *state;

	check_refused(p, policy_add_allow, "", "--allow: \"\" is not a host name");
	check_refused(p, policy_add_allow, "a.example:", "--allow: \"\" is not a port number");
	check_refused(p, policy_add_allow, "a.example:0", "--allow: \"0\" is not a port number");
	check_refused(p, policy_add_allow, "a.example:65536", "--allow: \"65536\" is not a port");
	check_refused(p, policy_add_allow, "a.example:https", "--allow: \"https\" is not a port");
	check_refused(p, policy_add_allow, "bad_host", "--allow: \"bad_host\" is not a host name");
	check_refused(p, policy_add_allow, "10.0.0.1/8", "--allow: \"10.0.0.1/8\" has host bits");
	check_refused(p, policy_add_allow, "[2001:db8::1", "--allow: \"[2001:db8::1\" is not [");
	check_refused(p, policy_add_allow, "[::1]x", "--allow: \"[::1]x\" is not [ADDRESS]");
	check_refused(p, policy_add_allow, "[::1]:", "--allow: \"\" is not a port number");
	check_refused(p, policy_add_allow, "2001:db8::1:443x", "--allow: \"2001:db8::1:443x\" is");
	check_refused(p, policy_add_allow, "[a.example]:80",
		      "--allow: \"a.example\" is not an IP address");
	assert_int_equal(p->network.n_rules, 0);
}

static void test_allow_override_stops_at_the_list_limit(void **state)
{
	struct policy *p = *state;
	struct al_error err = {};

	for (size_t i = 0; i < POLICY_LIST_MAX; i++)
		assert_int_equal(policy_add_allow(p, "a.example", &err), 0);
	check_refused(p, policy_add_allow, "b.example",
		      "--allow: the policy already has 1024 network rules");
}

static void test_resolve_override_pins_names_like_curl(void **state)
{
	struct policy *p = *state;

	assert_int_equal(policy_add_resolve(p, "API.test:127.0.0.1", NULL), 0);
	assert_int_equal(policy_add_resolve(p, "git.test:443:192.0.2.10", NULL), 0);
	assert_int_equal(policy_add_resolve(p, "b.test:[2001:db8::1]", NULL), 0);
	assert_int_equal(p->network.n_resolve, 3);
	/* Kept sorted by name, the canonical order. */
	assert_string_equal(p->network.resolve[0].name, "api.test");
	assert_string_equal(p->network.resolve[0].address, "127.0.0.1");
	assert_string_equal(p->network.resolve[1].name, "b.test");
	assert_string_equal(p->network.resolve[1].address, "2001:db8::1");
	assert_string_equal(p->network.resolve[2].name, "git.test");
	assert_string_equal(p->network.resolve[2].address, "192.0.2.10");
	/* A second pin of a name replaces the first. */
	assert_int_equal(policy_add_resolve(p, "api.test:192.0.2.7", NULL), 0);
	assert_int_equal(p->network.n_resolve, 3);
	assert_string_equal(p->network.resolve[0].address, "192.0.2.7");
}

static void test_resolve_override_refuses_bad_pins(void **state)
{
	struct policy *p = *state;

	check_refused(p, policy_add_resolve, "", "--resolve: \"\" is not NAME:ADDRESS");
	check_refused(p, policy_add_resolve, "api.test", "--resolve: \"api.test\" is not NAME:");
	check_refused(p, policy_add_resolve, ":127.0.0.1", "--resolve: \":127.0.0.1\" is not");
	check_refused(p, policy_add_resolve, "bad_name:127.0.0.1",
		      "--resolve: \"bad_name\" is not a valid host name");
	check_refused(p, policy_add_resolve, "api.test:localhost",
		      "--resolve: \"localhost\" is not an IP address");
	check_refused(p, policy_add_resolve,
		      "api.test:443:", "--resolve: \"\" is not an IP address");
	assert_int_equal(p->network.n_resolve, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_memory_override_sets_bytes, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_memory_override_refuses_bad_sizes, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_timeout_override_sets_usec, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_timeout_override_refuses_bad_durations, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_seccomp_override_sets_the_level, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_workspace_override_sets_the_normalised_root, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_env_override_adds_and_replaces, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_env_override_refuses_bad_assignments, setup,
					    teardown),
	    cmocka_unit_test(test_env_override_may_not_set_an_injected_variable),
	    cmocka_unit_test_setup_teardown(test_env_override_value_may_hold_32kib, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_allow_override_takes_every_destination_form, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_allow_override_refuses_bad_destinations, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_resolve_override_pins_names_like_curl, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_resolve_override_refuses_bad_pins, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_allow_override_stops_at_the_list_limit, setup,
					    teardown),
	};

	return cmocka_run_group_tests_name("policy-override", tests, NULL, NULL);
}
