/* policy.c: lifecycle, the embedded default, the small containers. */

#include <errno.h>
#include <stdlib.h>

#include "policy/policy-internal.h"
#include "tests/unit/policy/policy-test.h"

static void test_default_is_the_design_default(void **state)
{
	_cleanup_(policy_freep) struct policy *p = NULL;

	(void)state;
	assert_int_equal(policy_new_default(&p), 0);
	assert_null(p->id);
	assert_int_equal(p->tier, 0);
	assert_int_equal(p->isolation, POLICY_ISOLATION_CONTAINER);
	assert_null(p->image);
	assert_false(p->network_policy);
	assert_int_equal(p->seccomp, POLICY_SECCOMP_RESTRICTED);
	/* The current folder, read-write. */
	assert_string_equal(p->workspace.root, ".");
	assert_string_equal(p->workspace.mount, "/workspace");
	assert_int_equal(p->workspace.read.n, 1);
	assert_string_equal(p->workspace.read.items[0], "**");
	assert_int_equal(p->workspace.write.n, 1);
	assert_string_equal(p->workspace.write.items[0], "**");
	assert_int_equal(p->workspace.deny.n, 0);
	assert_int_equal(p->workspace.quota, 0);
	/* Nothing else reaches in, nothing gets out. */
	assert_int_equal(p->n_mounts, 0);
	assert_int_equal(p->n_env, 0);
	assert_int_equal(p->executables.n, 0);
	assert_int_equal(p->n_credentials, 0);
	assert_int_equal(p->network.default_action, POLICY_NET_DENY);
	assert_int_equal(p->network.n_rules, 0);
	assert_int_equal(p->network.n_resolve, 0);
	/* Sane limits. */
	assert_int_equal(p->resources.memory, UINT64_C(2) << 30);
	assert_int_equal(p->resources.pids, 1024);
	assert_int_equal(p->resources.disk, UINT64_C(512) << 20);
	assert_int_equal(p->resources.nofile, 1024);
	assert_int_equal(p->resources.cpu_millis, 0);
	assert_int_equal(p->resources.timeout_usec, 0);
	assert_int_equal(p->resources.io_weight, 0);
	assert_null(p->audit);
	assert_int_equal(p->labels.n, 0);
}

/* The one rule for host patterns: a name covers itself in any case; "*.suffix" every name below
 * suffix, never suffix itself nor a name that merely ends with its text. */
static void test_host_patterns_cover_names_as_dns_compares_them(void **state)
{
	static const struct {
		const char *pattern, *name;
		bool covers;
	} cases[] = {
	    {"api.github.com", "api.github.com", true},
	    {"api.github.com", "API.GitHub.com", true},
	    {"API.github.com", "api.github.com", true},
	    {"api.github.com", "github.com", false},
	    {"api.github.com", "xapi.github.com", false},
	    {"*.pypi.org", "files.pypi.org", true},
	    {"*.pypi.org", "a.b.PYPI.org", true},
	    {"*.pypi.org", "pypi.org", false},
	    {"*.pypi.org", "evilpypi.org", false},
	    {"*.pypi.org", ".pypi.org", false},
	    {"*.pypi.org", "*.pypi.org", true},
	    {"*.org", "pypi.org", true},
	    {"pypi.org", "*.pypi.org", false},
	    {"*.pypi.org", "", false},
	};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(cases); i++)
		if (policy_host_covers(cases[i].pattern, cases[i].name) != cases[i].covers)
			fail_msg("\"%s\" covers \"%s\": expected %d", cases[i].pattern,
				 cases[i].name, cases[i].covers);
}

/* The workspace patterns a policy may hold, one check for the policy and the filesystem. */
static void test_glob_validity_is_one_check(void **state)
{
	static const char *const good[] = {"**",    "src/**",  "*.c",
					   "a/b/c", "**/.env", ".git/config"};
	static const char *const bad[] = {"",	   "/abs", "a//b", "./a", "a/..",
					  "a**/b", "a\tb", "a/",   "../x"};
	char *long_name = test_alloc(POLICY_STRING_MAX + 2);

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(good); i++)
		if (!policy_glob_is_valid(good[i]))
			fail_msg("\"%s\" refused", good[i]);
	for (size_t i = 0; i < ELEMENTSOF(bad); i++)
		if (policy_glob_is_valid(bad[i]))
			fail_msg("\"%s\" accepted", bad[i]);
	memset(long_name, 'a', POLICY_STRING_MAX + 1);
	long_name[POLICY_STRING_MAX + 1] = '\0';
	assert_false(policy_glob_is_valid(long_name));
	free(long_name);
}

static void test_free_accepts_null_and_returns_null(void **state)
{
	(void)state;
	assert_null(policy_free(NULL));
}

static void test_free_copes_with_a_half_built_policy(void **state)
{
	struct policy *p = calloc(1, sizeof(*p));

	(void)state;
	assert_non_null(p);
	/* Arrays allocated with their counts set, entries still empty, as the parser leaves them
	 * when it fails half way. */
	p->workspace.root = strdup(".");
	p->mounts = calloc(2, sizeof(*p->mounts));
	p->n_mounts = 2;
	p->mounts[0].source = strdup("/a");
	p->credentials = calloc(3, sizeof(*p->credentials));
	p->n_credentials = 3;
	p->credentials[0].name = strdup("c");
	assert_int_equal(policy_strv_push(&p->credentials[0].hosts, strdup("a.example")), 0);
	p->network.resolve = calloc(1, sizeof(*p->network.resolve));
	p->network.n_resolve = 1;
	assert_null(policy_free(p)); /* ASan and valgrind check the rest */
}

static void test_enum_values_have_their_json_names(void **state)
{
	(void)state;
	assert_string_equal(policy_seccomp_to_string(POLICY_SECCOMP_BASELINE), "baseline");
	assert_string_equal(policy_seccomp_to_string(POLICY_SECCOMP_RESTRICTED), "restricted");
	assert_string_equal(policy_seccomp_to_string(POLICY_SECCOMP_STRICT), "strict");
	assert_null(policy_seccomp_to_string((enum policy_seccomp)42));
	assert_string_equal(policy_isolation_to_string(POLICY_ISOLATION_PROCESS), "process");
	assert_string_equal(policy_isolation_to_string(POLICY_ISOLATION_CONTAINER), "container");
	assert_string_equal(policy_isolation_to_string(POLICY_ISOLATION_NETWORK_POLICY),
			    "network_policy");
	assert_null(policy_isolation_to_string((enum policy_isolation) - 1));
	assert_string_equal(policy_net_action_to_string(POLICY_NET_ALLOW), "allow");
	assert_string_equal(policy_cred_source_to_string(POLICY_CRED_SOURCE_KEYRING), "keyring");
	assert_string_equal(policy_injection_to_string(POLICY_INJECTION_SIDECAR), "sidecar");
}

static void test_strv_keeps_a_null_after_the_last_item(void **state)
{
	struct policy_strv v = {}, copy = {};

	(void)state;
	assert_int_equal(policy_strv_push(&v, strdup("a")), 0);
	assert_int_equal(policy_strv_push(&v, strdup("b")), 0);
	assert_int_equal(v.n, 2);
	assert_null(v.items[2]);
	assert_int_equal(policy_strv_push(&v, NULL), -ENOMEM);
	assert_int_equal(v.n, 2);
	assert_int_equal(policy_strv_copy(&v, &copy), 0);
	assert_int_equal(copy.n, 2);
	assert_string_equal(copy.items[1], "b");
	assert_ptr_not_equal(copy.items[1], v.items[1]);
	policy_strv_done(&v);
	policy_strv_done(&copy);
	assert_int_equal(v.n, 0);
	assert_null(v.items);
}

static void test_env_table_stays_sorted_and_replaces(void **state)
{
	_cleanup_(policy_freep) struct policy *p = NULL;
	bool found;

	(void)state;
	assert_int_equal(policy_new_default(&p), 0);
	assert_int_equal(policy_env_put(p, strdup("M"), strdup("1")), 0);
	assert_int_equal(policy_env_put(p, strdup("A"), strdup("2")), 0);
	assert_int_equal(policy_env_put(p, strdup("Z"), strdup("3")), 0);
	assert_int_equal(policy_env_put(p, strdup("M"), strdup("4")), 0);
	assert_int_equal(p->n_env, 3);
	assert_string_equal(p->env[0].name, "A");
	assert_string_equal(p->env[1].value, "4");
	assert_int_equal(policy_env_find(p, "Z", &found), 2);
	assert_true(found);
	assert_int_equal(policy_env_find(p, "B", &found), 1);
	assert_false(found);
	assert_int_equal(policy_env_put(p, strdup("Q"), NULL), -ENOMEM);
	assert_int_equal(p->n_env, 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_default_is_the_design_default),
	    cmocka_unit_test(test_host_patterns_cover_names_as_dns_compares_them),
	    cmocka_unit_test(test_glob_validity_is_one_check),
	    cmocka_unit_test(test_free_accepts_null_and_returns_null),
	    cmocka_unit_test(test_free_copes_with_a_half_built_policy),
	    cmocka_unit_test(test_enum_values_have_their_json_names),
	    cmocka_unit_test(test_strv_keeps_a_null_after_the_last_item),
	    cmocka_unit_test(test_env_table_stays_sorted_and_replaces),
	};

	return cmocka_run_group_tests_name("policy", tests, NULL, NULL);
}
