/* policy-parse.c: what a policy file may say, and the message for everything it may not. */

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy/policy-internal.h"
#include "tests/unit/policy/policy-test.h"

/* An SSH key's credential, up to its "ssh" field. */
#define SSH_KEY                                                                                    \
	"{'name':'deploy','source':{'type':'vault','key':'deploy'},"                               \
	"'injection':{'type':'ssh_agent'},"

/* An AWS access key id's credential, up to its "aws" field, and its secret's. */
#define AWS_KEY                                                                                    \
	"{'name':'k','source':{'type':'env','var':'K'},"                                           \
	"'injection':{'type':'env_var','var_name':'AWS_ACCESS_KEY_ID'},'hosts':['s3.example'],"
#define AWS_SECRET                                                                                 \
	"{'name':'s','source':{'type':'env','var':'S'},"                                           \
	"'injection':{'type':'env_var','var_name':'AWS_SECRET_ACCESS_KEY'},'hosts':['s3.example']" \
	"}"

static void test_design_example_loads_with_every_field(void **state)
{
	_cleanup_(policy_freep) struct policy *p = NULL;
	struct al_error err = {};
	const struct policy_credential *c;

	(void)state;
	assert_int_equal(policy_load_string(test_design_example(), &p, &err), 0);
	assert_string_equal(p->id, "example");
	assert_int_equal(p->tier, 1);
	assert_int_equal(p->isolation, POLICY_ISOLATION_CONTAINER);
	assert_null(p->image);
	assert_false(p->network_policy);
	assert_int_equal(p->seccomp, POLICY_SECCOMP_RESTRICTED);
	assert_string_equal(p->workspace.root, ".");
	assert_string_equal(p->workspace.mount, "/workspace");
	assert_int_equal(p->workspace.read.n, 1);
	assert_string_equal(p->workspace.read.items[0], "**");
	assert_int_equal(p->workspace.write.n, 2);
	assert_string_equal(p->workspace.write.items[1], "out/**");
	assert_int_equal(p->workspace.deny.n, 2);
	assert_string_equal(p->workspace.deny.items[0], "**/.env");
	assert_int_equal(p->workspace.quota, UINT64_C(1) << 30);
	assert_int_equal(p->n_mounts, 1);
	assert_string_equal(p->mounts[0].source, "/opt/tools");
	assert_true(p->mounts[0].read_only);
	assert_int_equal(p->n_env, 1);
	assert_string_equal(p->env[0].name, "LANG");
	assert_string_equal(p->env[0].value, "C.UTF-8");
	assert_int_equal(p->executables.n, 2);
	assert_string_equal(p->executables.items[1], "/usr/bin/git");

	assert_int_equal(p->n_credentials, 3);
	c = &p->credentials[0];
	assert_string_equal(c->name, "github");
	assert_int_equal(c->source, POLICY_CRED_SOURCE_VAULT);
	assert_string_equal(c->source_key, "github"); /* defaults to the name */
	assert_int_equal(c->injection, POLICY_INJECTION_ENV_VAR);
	assert_string_equal(c->var_name, "GITHUB_TOKEN");
	assert_false(c->expose);
	assert_int_equal(c->hosts.n, 1);
	assert_string_equal(c->hosts.items[0], "api.github.com");
	c = &p->credentials[1];
	assert_int_equal(c->source, POLICY_CRED_SOURCE_ENV);
	assert_string_equal(c->source_var, "ANTHROPIC_API_KEY");
	assert_int_equal(c->injection, POLICY_INJECTION_FILE);
	assert_string_equal(c->path, "/run/secrets/anthropic");
	c = &p->credentials[2];
	assert_int_equal(c->source, POLICY_CRED_SOURCE_FILE);
	assert_string_equal(c->source_path, "/etc/airlock/openai.key");
	assert_int_equal(c->injection, POLICY_INJECTION_SIDECAR);
	assert_string_equal(c->header, "Authorization");
	assert_string_equal(c->format, "Bearer {}");

	assert_int_equal(p->resources.cpu_millis, 1000);
	assert_int_equal(p->resources.memory, UINT64_C(512) << 20);
	assert_int_equal(p->resources.pids, 256);
	assert_int_equal(p->resources.disk, UINT64_C(1) << 30);
	assert_int_equal(p->resources.timeout_usec, UINT64_C(300000000));
	assert_int_equal(p->resources.io_weight, 0);
	assert_int_equal(p->resources.nofile, 1024); /* default */

	assert_int_equal(p->network.default_action, POLICY_NET_DENY);
	assert_int_equal(p->network.n_rules, 3);
	assert_int_equal(p->network.rules[0].kind, POLICY_DEST_HOST);
	assert_int_equal(p->network.rules[0].port, 443);
	assert_int_equal(p->network.rules[0].action, POLICY_NET_ALLOW);
	assert_int_equal(p->network.rules[1].kind, POLICY_DEST_WILDCARD);
	assert_string_equal(p->network.rules[1].destination, "*.pypi.org");
	assert_int_equal(p->network.rules[1].port, 0);
	assert_int_equal(p->network.rules[2].kind, POLICY_DEST_CIDR);
	assert_int_equal(p->network.rules[2].family, AF_INET);
	assert_int_equal(p->network.rules[2].prefix_len, 8);
	assert_int_equal(p->network.rules[2].addr[0], 10);
	assert_int_equal(p->network.rules[2].action, POLICY_NET_DENY);
	assert_int_equal(p->network.n_resolve, 1);
	assert_string_equal(p->network.resolve[0].name, "git.internal");
	assert_string_equal(p->network.resolve[0].address, "192.0.2.10");
	assert_string_equal(p->audit, "/var/log/airlock/example.jsonl");
	assert_int_equal(p->labels.n, 0);
}

static void test_empty_policy_gets_the_defaults(void **state)
{
	_cleanup_(policy_freep) struct policy *p = test_load("{}");

	(void)state;
	assert_null(p->id);
	assert_int_equal(p->tier, 0);
	assert_int_equal(p->isolation, POLICY_ISOLATION_CONTAINER);
	assert_int_equal(p->seccomp, POLICY_SECCOMP_RESTRICTED);
	assert_string_equal(p->workspace.root, ".");
	assert_string_equal(p->workspace.mount, "/workspace");
	assert_string_equal(p->workspace.read.items[0], "**");
	assert_string_equal(p->workspace.write.items[0], "**");
	assert_int_equal(p->workspace.deny.n, 0);
	assert_int_equal(p->resources.memory, UINT64_C(2) << 30);
	assert_int_equal(p->resources.pids, 1024);
	assert_int_equal(p->resources.disk, UINT64_C(512) << 20);
	assert_int_equal(p->resources.nofile, 1024);
	assert_int_equal(p->resources.cpu_millis, 0);
	assert_int_equal(p->resources.timeout_usec, 0);
	assert_int_equal(p->resources.io_weight, 0);
	assert_int_equal(p->network.default_action, POLICY_NET_DENY);
	assert_null(p->audit);
}

static void test_isolation_list_is_read_as_a_set(void **state)
{
	static const struct {
		const char *json;
		enum policy_isolation isolation;
		bool network_policy;
	} cases[] = {
	    {"{'isolation':[]}", POLICY_ISOLATION_CONTAINER, false},
	    {"{'isolation':[{'type':'process'}]}", POLICY_ISOLATION_PROCESS, false},
	    {"{'isolation':[{'type':'process'},{'type':'container'}]}", POLICY_ISOLATION_CONTAINER,
	     false},
	    {"{'isolation':[{'type':'network_policy'}]}", POLICY_ISOLATION_CONTAINER, true},
	    {"{'isolation':[{'type':'process'},{'type':'network_policy'}]}",
	     POLICY_ISOLATION_PROCESS, true},
	};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		_cleanup_(policy_freep) struct policy *p = test_load(cases[i].json);

		assert_int_equal(p->isolation, cases[i].isolation);
		assert_int_equal(p->network_policy, cases[i].network_policy);
	}
}

static void test_env_is_kept_sorted_by_name(void **state)
{
	_cleanup_(policy_freep) struct policy *p =
	    test_load("{'env':{'ZED':'z','ALPHA':'a','_U':'u','Mid':''}}");

	(void)state;
	assert_int_equal(p->n_env, 4);
	assert_string_equal(p->env[0].name, "ALPHA");
	assert_string_equal(p->env[1].name, "Mid");
	assert_string_equal(p->env[1].value, "");
	assert_string_equal(p->env[2].name, "ZED");
	assert_string_equal(p->env[3].name, "_U");
}

static void test_tmpdir_may_be_set(void **state)
{
	_cleanup_(policy_freep) struct policy *p = test_load("{'env':{'TMPDIR':'/tmp/x'}}");

	(void)state;
	assert_string_equal(p->env[0].name, "TMPDIR");
}

static void test_paths_are_normalised(void **state)
{
	_cleanup_(policy_freep) struct policy *p =
	    test_load("{'workspace':{'root':'./proj//src/','mount':'/work//space/'},"
		      "'mounts':[{'source':'/opt//tools/./','target':'/opt/tools/','mode':'rw'}],"
		      "'executables':['/usr//bin/./git']}");

	(void)state;
	assert_string_equal(p->workspace.root, "proj/src");
	assert_string_equal(p->workspace.mount, "/work/space");
	assert_string_equal(p->mounts[0].source, "/opt/tools");
	assert_string_equal(p->mounts[0].target, "/opt/tools");
	assert_false(p->mounts[0].read_only);
	assert_string_equal(p->executables.items[0], "/usr/bin/git");
}

static void test_sizes_take_strings_and_byte_counts(void **state)
{
	_cleanup_(policy_freep) struct policy *p =
	    test_load("{'resources':{'memory':'1.5Gi','disk':2097152},'workspace':{'quota':0}}");

	(void)state;
	assert_int_equal(p->resources.memory, UINT64_C(3) << 29);
	assert_int_equal(p->resources.disk, UINT64_C(2) << 20);
	assert_int_equal(p->workspace.quota, 0);
}

static void test_cpu_takes_decimals_millicores_and_whole_cpus(void **state)
{
	_cleanup_(policy_freep) struct policy *a = test_load("{'resources':{'cpu':'0.25'}}");
	_cleanup_(policy_freep) struct policy *b = test_load("{'resources':{'cpu':'250m'}}");
	_cleanup_(policy_freep) struct policy *c = test_load("{'resources':{'cpu':2}}");

	(void)state;
	assert_int_equal(a->resources.cpu_millis, 250);
	assert_int_equal(b->resources.cpu_millis, 250);
	assert_int_equal(c->resources.cpu_millis, 2000);
}

static void test_max_lifts_the_default_memory_and_pids_limits(void **state)
{
	_cleanup_(policy_freep) struct policy *p =
	    test_load("{'resources':{'memory':'max','pids':'max'}}");
	_cleanup_free_ char *c = test_canonical("{'resources':{'memory':'max','pids':'max'}}");
	_cleanup_(policy_freep) struct policy *again = test_load(c);

	(void)state;
	assert_int_equal(p->resources.memory, 0);
	assert_int_equal(p->resources.pids, 0);
	assert_non_null(strstr(c, "\"memory\":\"max\""));
	assert_non_null(strstr(c, "\"pids\":\"max\""));
	assert_int_equal(again->resources.memory, 0);
	assert_int_equal(again->resources.pids, 0);
	test_load_fails("{'resources':{'memory':'maximum'}}", -EINVAL, "resources.memory: ");
	test_load_fails("{'resources':{'pids':'MAX'}}", -EINVAL, "resources.pids: ");
}

static void test_other_limits_are_stored(void **state)
{
	_cleanup_(policy_freep) struct policy *p =
	    test_load("{'resources':{'timeout':'1m30s','io_weight':10000,'nofile':16,'pids':1}}");

	(void)state;
	assert_int_equal(p->resources.timeout_usec, UINT64_C(90000000));
	assert_int_equal(p->resources.io_weight, 10000);
	assert_int_equal(p->resources.nofile, 16);
	assert_int_equal(p->resources.pids, 1);
}

static void test_network_destinations_are_normalised(void **state)
{
	_cleanup_(policy_freep) struct policy *p =
	    test_load("{'network':{'default':'allow','rules':["
		      "{'destination':'API.GitHub.com','action':'allow'},"
		      "{'destination':'*.PyPI.org','port':8443,'action':'allow'},"
		      "{'destination':'192.0.2.1','action':'deny'},"
		      "{'destination':'2001:DB8:0:0::/32','action':'deny'},"
		      "{'destination':'0.0.0.0/0','action':'deny'}],"
		      "'resolve':{'Z.internal':'2001:db8::1','a.internal':'192.0.2.7'}}}");
	const struct policy_net_rule *r = p->network.rules;

	(void)state;
	assert_int_equal(p->network.default_action, POLICY_NET_ALLOW);
	assert_string_equal(r[0].destination, "api.github.com");
	assert_string_equal(r[1].destination, "*.pypi.org");
	assert_int_equal(r[1].port, 8443);
	assert_string_equal(r[2].destination, "192.0.2.1");
	assert_int_equal(r[2].prefix_len, 32);
	assert_string_equal(r[3].destination, "2001:db8::/32");
	assert_int_equal(r[3].family, AF_INET6);
	assert_int_equal(r[3].prefix_len, 32);
	assert_int_equal(r[3].addr[0], 0x20);
	assert_int_equal(r[3].addr[1], 0x01);
	assert_string_equal(r[4].destination, "0.0.0.0/0");
	assert_int_equal(r[4].prefix_len, 0);
	/* Sorted by name, names lower-cased. */
	assert_string_equal(p->network.resolve[0].name, "a.internal");
	assert_string_equal(p->network.resolve[1].name, "z.internal");
	assert_string_equal(p->network.resolve[1].address, "2001:db8::1");
}

static void test_credential_sources_and_injections_are_stored(void **state)
{
	_cleanup_(policy_freep) struct policy *p = test_load(
	    "{'credentials':["
	    "{'name':'a','source':{'type':'vault','key':'team/a'},"
	    "'injection':{'type':'sidecar','header':'X-Api-Key'},'hosts':['*.Example.com']},"
	    "{'name':'b','source':{'type':'command','command':['/usr/bin/pass','show','b']},"
	    "'injection':{'type':'env_var','var_name':'B_TOKEN'},'expose':true},"
	    "{'name':'c','source':{'type':'keyring','key':'user:c'},"
	    "'injection':{'type':'file','path':'/run/c'},'hosts':['c.example.com']}]}");
	const struct policy_credential *c = p->credentials;

	(void)state;
	assert_string_equal(c[0].source_key, "team/a");
	assert_string_equal(c[0].format, "{}"); /* the default */
	assert_string_equal(c[0].hosts.items[0], "*.example.com");
	assert_int_equal(c[1].source, POLICY_CRED_SOURCE_COMMAND);
	assert_int_equal(c[1].source_argv.n, 3);
	assert_string_equal(c[1].source_argv.items[0], "/usr/bin/pass");
	assert_null(c[1].source_argv.items[3]); /* ready for execv() */
	assert_true(c[1].expose);
	assert_int_equal(c[1].hosts.n, 0);
	assert_int_equal(c[2].source, POLICY_CRED_SOURCE_KEYRING);
	assert_string_equal(c[2].source_key, "user:c");
}

static void test_aws_key_links_its_secret_and_token(void **state)
{
	_cleanup_(policy_freep) struct policy *p =
	    test_load("{'credentials':[" AWS_SECRET ","
		      "{'name':'t','source':{'type':'env','var':'T'},"
		      "'injection':{'type':'file','path':'/run/t'},'hosts':['s3.example']}," AWS_KEY
		      "'aws':{'secret_access_key':'s','session_token':'t','regions':['us-east-1'],"
		      "'services':['s3','sts']}}]}");
	const struct policy_credential *c = p->credentials;
	_cleanup_free_ char *canonical = NULL;
	_cleanup_(policy_freep) struct policy *again = NULL;

	(void)state;
	assert_int_equal(c[2].kind, POLICY_CRED_AWS_KEY_ID);
	assert_int_equal(c[0].kind, POLICY_CRED_AWS_SECRET);
	assert_int_equal(c[1].kind, POLICY_CRED_AWS_TOKEN);
	assert_int_equal(c[0].aws_key, 2);
	assert_int_equal(c[1].aws_key, 2);
	assert_string_equal(c[2].aws_regions.items[0], "us-east-1");
	assert_int_equal(c[2].aws_services.n, 2);
	/* The canonical form keeps the link (the broker parses credentials from it). */
	assert_int_equal(policy_to_canonical_json(p, &canonical), 0);
	assert_non_null(strstr(canonical, "\"secret_access_key\""));
	assert_int_equal(policy_load_string(canonical, &again, NULL), 0);
	assert_int_equal(again->credentials[0].kind, POLICY_CRED_AWS_SECRET);
	assert_string_equal(again->credentials[2].aws_token, "t");
}

static void test_ssh_key_destinations_are_normalised(void **state)
{
	_cleanup_(policy_freep) struct policy *p =
	    test_load("{'credentials':[" SSH_KEY
		      "'ssh':{'destinations':['Git.Example.org','git.example.org:2222',"
		      "'192.0.2.7','[2001:DB8::1]:22','2001:db8::2'],'commit_signing':true}}]}");
	const struct policy_credential *c = p->credentials;
	_cleanup_free_ char *canonical = NULL;
	_cleanup_(policy_freep) struct policy *again = NULL;

	(void)state;
	assert_int_equal(c->kind, POLICY_CRED_SSH_KEY);
	assert_int_equal(c->injection, POLICY_INJECTION_SSH_AGENT);
	assert_true(c->ssh_commit_signing);
	assert_int_equal(c->ssh_destinations.n, 5);
	assert_string_equal(c->ssh_destinations.items[0], "git.example.org:22");
	assert_string_equal(c->ssh_destinations.items[1], "git.example.org:2222");
	assert_string_equal(c->ssh_destinations.items[2], "192.0.2.7:22");
	assert_string_equal(c->ssh_destinations.items[3], "[2001:db8::1]:22");
	assert_string_equal(c->ssh_destinations.items[4], "[2001:db8::2]:22");
	assert_int_equal(policy_ssh_keys(p), 1);
	/* The canonical form keeps it (the broker parses credentials from it). */
	assert_int_equal(policy_to_canonical_json(p, &canonical), 0);
	assert_int_equal(policy_load_string(canonical, &again, NULL), 0);
	assert_int_equal(again->credentials[0].kind, POLICY_CRED_SSH_KEY);
	assert_string_equal(again->credentials[0].ssh_destinations.items[3], "[2001:db8::1]:22");
	assert_true(again->credentials[0].ssh_commit_signing);
}

static void test_postgres_credential_is_bound_to_its_destinations(void **state)
{
	_cleanup_(policy_freep) struct policy *p =
	    test_load("{'credentials':[{'name':'db','source':{'type':'env','var':'PW'},"
		      "'injection':{'type':'env_var','var_name':'PGPASSWORD'},"
		      "'postgres':{'user':'app','destinations':['DB.example.org','192.0.2.9:6432'],"
		      "'client_auth':'md5'}}]}");
	const struct policy_credential *c = p->credentials;
	_cleanup_free_ char *canonical = NULL;
	_cleanup_(policy_freep) struct policy *again = NULL;

	(void)state;
	assert_int_equal(c->kind, POLICY_CRED_POSTGRES);
	assert_string_equal(c->pg_user, "app");
	assert_string_equal(c->pg_database, "app"); /* libpq's default: the user's name */
	assert_int_equal(c->pg_auth, POLICY_PG_AUTH_MD5);
	assert_int_equal(c->hosts.n, 2);
	assert_string_equal(c->hosts.items[0], "db.example.org:5432");
	assert_string_equal(c->hosts.items[1], "192.0.2.9:6432");
	assert_true(policy_host_covers(c->hosts.items[0], "db.example.org:5432"));
	assert_false(policy_host_covers(c->hosts.items[0], "db.example.org"));
	assert_int_equal(policy_to_canonical_json(p, &canonical), 0);
	assert_int_equal(policy_load_string(canonical, &again, NULL), 0);
	assert_int_equal(again->credentials[0].kind, POLICY_CRED_POSTGRES);
	assert_string_equal(again->credentials[0].hosts.items[1], "192.0.2.9:6432");
	assert_int_equal(again->credentials[0].pg_auth, POLICY_PG_AUTH_MD5);
}

static void test_labels_and_canonical_version_are_accepted(void **state)
{
	_cleanup_(policy_freep) struct policy *p =
	    test_load("{'canonical':1,'labels':['team:infra','ci/nightly','v1.2_x-y']}");

	(void)state;
	assert_int_equal(p->labels.n, 3);
	assert_string_equal(p->labels.items[1], "ci/nightly");
}

static void test_utf8_strings_are_kept(void **state)
{
	_cleanup_(policy_freep) struct policy *p =
	    test_load("{'env':{'GREETING':'gr\\u00fc\\u00df \xe2\x82\xac \\ud83d\\ude00'}}");

	(void)state;
	assert_string_equal(p->env[0].value, "gr\xc3\xbc\xc3\x9f \xe2\x82\xac \xf0\x9f\x98\x80");
}

/* One row per way a policy can be wrong: the behaviour, the policy (' for "), the error code,
 * and the start of the message, which is always the JSON path of the field at fault. */
struct bad_policy {
	const char *behaviour;
	const char *json;
	int code;
	const char *message;
};

static const struct bad_policy bad_policies[] = {
    /* The document */
    {"syntax error is refused", "{'tier':}", -EINVAL, "invalid JSON at byte"},
    {"trailing data is refused", "{} {}", -EINVAL, "invalid JSON at byte 3"},
    {"truncated document is refused", "{'tier':1", -EINVAL, "invalid JSON: unexpected end"},
    {"nesting deeper than 16 is refused", "{'labels':[[[[[[[[[[[[[[[[[[[['x']]]]]]]]]]]]]]]]]]]]}",
     -EINVAL, "invalid JSON"},
    {"\\u0000 in a key is refused", "{'env':{'A\\u0000B':'x'}}", -EINVAL,
     "invalid JSON at byte 10: strings may not contain \\u0000"},
    {"\\u0000 in a value is refused", "{'id':'a\\u0000'}", -EINVAL,
     "invalid JSON at byte 8: strings may not contain \\u0000"},
    {"top level that is an array is refused", "[]", -EINVAL, "a policy is a JSON object"},
    {"top level that is a string is refused", "'x'", -EINVAL, "a policy is a JSON object"},
    {"unknown top-level field is refused", "{'netwrok':{}}", -EINVAL,
     "netwrok: unknown field (expected canonical, id, tier,"},
    {"unknown field with an odd name is quoted", "{'a b\\n':1}", -EINVAL,
     "[\"a b\\x0a\"]: unknown field"},
    {"string that is not UTF-8 is refused", "{'audit':'/log/\xff'}", -EINVAL,
     "audit: \"/log/\\xff\" is not valid UTF-8"},
    {"overlong UTF-8 is refused", "{'audit':'/log/\xc0\xaf'}", -EINVAL,
     "audit: \"/log/\\xc0\\xaf\" is not valid UTF-8"},

    /* canonical, id, tier */
    {"canonical version that is not a number is refused", "{'canonical':'1'}", -EINVAL,
     "canonical: expected an integer"},
    {"canonical version 2 is refused", "{'canonical':2}", -EINVAL,
     "canonical: unsupported canonical form version"},
    {"id that is not a string is refused", "{'id':7}", -EINVAL, "id: expected a string"},
    {"id that is null is refused", "{'id':null}", -EINVAL, "id: expected a string"},
    {"id with a space is refused", "{'id':'my id'}", -EINVAL, "id: \"my id\" is not a valid id"},
    {"empty id is refused", "{'id':''}", -EINVAL, "id: \"\" is not a valid id"},
    {"id of 65 bytes is refused",
     "{'id':'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'}", -EINVAL,
     "id: \"aaaa"},
    {"tier that is a string is refused", "{'tier':'1'}", -EINVAL, "tier: expected an integer"},
    {"tier that is a float is refused", "{'tier':1.0}", -EINVAL, "tier: expected an integer"},
    {"tier above 4 is refused", "{'tier':5}", -EINVAL,
     "tier: out of range (expected an integer from 0 to 4)"},
    {"negative tier is refused", "{'tier':-1}", -EINVAL, "tier: out of range"},
    {"tier beyond 64 bits is refused", "{'tier':99999999999999999999999}", -EINVAL,
     "tier: out of range"},

    /* isolation */
    {"isolation that is not an array is refused", "{'isolation':'container'}", -EINVAL,
     "isolation: expected an array"},
    {"isolation entry that is not an object is refused", "{'isolation':['container']}", -EINVAL,
     "isolation[0]: expected an object"},
    {"isolation entry without a type is refused", "{'isolation':[{}]}", -EINVAL,
     "isolation[0].type: required field is missing"},
    {"isolation type that is not a string is refused", "{'isolation':[{'type':1}]}", -EINVAL,
     "isolation[0].type: expected a string"},
    {"gvisor cannot be enforced", "{'isolation':[{'type':'container'},{'type':'gvisor'}]}",
     -EOPNOTSUPP,
     "isolation[1].type: \"gvisor\" cannot be enforced by airlock (it provides namespaces, "
     "seccomp, landlock and cgroups); refusing to run"},
    {"micro_vm cannot be enforced", "{'isolation':[{'type':'micro_vm'}]}", -EOPNOTSUPP,
     "isolation[0].type: \"micro_vm\" cannot be enforced by airlock"},
    {"wasm cannot be enforced", "{'isolation':[{'type':'wasm'}]}", -EOPNOTSUPP,
     "isolation[0].type: \"wasm\" cannot be enforced by airlock"},
    {"custom cannot be enforced whatever it says",
     "{'isolation':[{'type':'custom','runtime':'kata','image':'/x'}]}", -EOPNOTSUPP,
     "isolation[0].type: \"custom\" cannot be enforced by airlock"},
    {"unknown isolation type is refused", "{'isolation':[{'type':'vm'}]}", -EINVAL,
     "isolation[0].type: \"vm\" is not an isolation type"},
    {"image on a process isolation is refused", "{'isolation':[{'type':'process','image':'/'}]}",
     -EINVAL, "isolation[0].image: only a \"container\" isolation has an image"},
    {"unknown field in an isolation entry is refused",
     "{'isolation':[{'type':'container','rootfs':'/'}]}", -EINVAL,
     "isolation[0].rootfs: unknown field (expected type, image)"},
    {"unknown field in a network_policy entry is refused",
     "{'isolation':[{'type':'network_policy','rules':[]}]}", -EINVAL,
     "isolation[0].rules: unknown field (expected type)"},
    {"image that is not a string is refused", "{'isolation':[{'type':'container','image':true}]}",
     -EINVAL, "isolation[0].image: expected a string"},
    {"relative image path is refused", "{'isolation':[{'type':'container','image':'rootfs'}]}",
     -EINVAL, "isolation[0].image: \"rootfs\" is not an absolute path"},
    {"image that does not exist is not a root filesystem",
     "{'isolation':[{'type':'container','image':'/nonexistent/airlock-test'}]}", -EOPNOTSUPP,
     "isolation[0].image: \"/nonexistent/airlock-test\" is not a root filesystem folder"},

    /* seccomp */
    {"seccomp that is not a string is refused", "{'seccomp':2}", -EINVAL,
     "seccomp: expected a string"},
    {"unknown seccomp level is refused", "{'seccomp':'paranoid'}", -EINVAL,
     "seccomp: \"paranoid\" is not a seccomp level (baseline, restricted or strict)"},

    /* workspace */
    {"workspace that is not an object is refused", "{'workspace':'.'}", -EINVAL,
     "workspace: expected an object"},
    {"unknown workspace field is refused", "{'workspace':{'rot':'.'}}", -EINVAL,
     "workspace.rot: unknown field (expected root, mount, read, write, deny, quota, protect)"},
    {"workspace.protect that is not a boolean is refused", "{'workspace':{'protect':'no'}}",
     -EINVAL, "workspace.protect: expected true or false"},
    {"empty workspace root is refused", "{'workspace':{'root':''}}", -EINVAL,
     "workspace.root: the path is empty"},
    {"workspace root with a control character is refused", "{'workspace':{'root':'a\\tb'}}",
     -EINVAL, "workspace.root: \"a\\x09b\" contains a control character"},
    {"relative workspace mount is refused", "{'workspace':{'mount':'workspace'}}", -EINVAL,
     "workspace.mount: \"workspace\" is not an absolute path"},
    {"workspace mount on / is refused", "{'workspace':{'mount':'//'}}", -EINVAL,
     "workspace.mount: \"//\" is the root of the sandbox"},
    {"workspace mount in /proc is refused", "{'workspace':{'mount':'/proc/ws'}}", -EINVAL,
     "workspace.mount: \"/proc/ws\" is inside /proc, which airlock manages"},
    {"workspace mount on /dev is refused", "{'workspace':{'mount':'/dev/'}}", -EINVAL,
     "workspace.mount: \"/dev/\" is inside /dev"},
    {"workspace mount in /sys is refused", "{'workspace':{'mount':'/sys/fs'}}", -EINVAL,
     "workspace.mount: \"/sys/fs\" is inside /sys"},
    {"workspace mount with .. is refused", "{'workspace':{'mount':'/a/../proc'}}", -EINVAL,
     "workspace.mount: \"/a/../proc\" has a \"..\" component"},
    {"read list that is not an array is refused", "{'workspace':{'read':'**'}}", -EINVAL,
     "workspace.read: expected an array"},
    {"glob that is not a string is refused", "{'workspace':{'write':['src',3]}}", -EINVAL,
     "workspace.write[1]: expected a string"},
    {"absolute glob is refused", "{'workspace':{'deny':['/etc/**']}}", -EINVAL,
     "workspace.deny[0]: \"/etc/**\" is absolute"},
    {"glob with .. is refused", "{'workspace':{'read':['src/../..']}}", -EINVAL,
     "workspace.read[0]: \"src/../..\" has a \"..\" component"},
    {"glob with . is refused", "{'workspace':{'read':['./src']}}", -EINVAL,
     "workspace.read[0]: \"./src\" has a \".\" component"},
    {"empty glob is refused", "{'workspace':{'write':['']}}", -EINVAL,
     "workspace.write[0]: the pattern is empty"},
    {"glob with an empty component is refused", "{'workspace':{'write':['src//x']}}", -EINVAL,
     "workspace.write[0]: \"src//x\" has an empty component"},
    {"glob with ** inside a component is refused", "{'workspace':{'write':['src/a**']}}", -EINVAL,
     "workspace.write[0]: \"src/a**\": \"**\" must be a whole path component"},
    {"quota that is not a size is refused", "{'workspace':{'quota':'1 GB'}}", -EINVAL,
     "workspace.quota: \"1 GB\" is not a size"},
    {"negative quota is refused", "{'workspace':{'quota':-1}}", -EINVAL,
     "workspace.quota: out of range"},
    {"fractional quota number is refused", "{'workspace':{'quota':1.5}}", -EINVAL,
     "workspace.quota: expected a size"},
    {"quota number beyond 2^53 is refused", "{'workspace':{'quota':9007199254740993}}", -EINVAL,
     "workspace.quota: out of range (expected an integer from 0 to 9007199254740992)"},
    {"quota string beyond 64 bits is refused", "{'workspace':{'quota':'16777216Ti'}}", -EINVAL,
     "workspace.quota: \"16777216Ti\" is too large"},

    /* mounts */
    {"mounts that is not an array is refused", "{'mounts':{}}", -EINVAL,
     "mounts: expected an array"},
    {"mount that is not an object is refused", "{'mounts':['/a:/b']}", -EINVAL,
     "mounts[0]: expected an object"},
    {"unknown mount field is refused",
     "{'mounts':[{'source':'/a','target':'/b','options':'nosuid'}]}", -EINVAL,
     "mounts[0].options: unknown field (expected source, target, mode)"},
    {"mount without a source is refused", "{'mounts':[{'target':'/b'}]}", -EINVAL,
     "mounts[0].source: required field is missing"},
    {"mount without a target is refused", "{'mounts':[{'source':'/a'}]}", -EINVAL,
     "mounts[0].target: required field is missing"},
    {"relative mount source is refused", "{'mounts':[{'source':'a','target':'/b'}]}", -EINVAL,
     "mounts[0].source: \"a\" is not an absolute path"},
    {"mount source with .. is refused", "{'mounts':[{'source':'/a/..','target':'/b'}]}", -EINVAL,
     "mounts[0].source: \"/a/..\" has a \"..\" component"},
    {"mount target on / is refused", "{'mounts':[{'source':'/a','target':'/'}]}", -EINVAL,
     "mounts[0].target: \"/\" is the root of the sandbox"},
    {"mount target in /dev is refused", "{'mounts':[{'source':'/a','target':'/dev/shm'}]}", -EINVAL,
     "mounts[0].target: \"/dev/shm\" is inside /dev"},
    {"mount target on the workspace is refused",
     "{'workspace':{'mount':'/src'},'mounts':[{'source':'/a','target':'/src/'}]}", -EINVAL,
     "mounts[0].target: \"/src/\" is the workspace mount"},
    {"two mounts on one target are refused",
     "{'mounts':[{'source':'/a','target':'/t'},{'source':'/b','target':'//t'}]}", -EINVAL,
     "mounts[1].target: \"//t\" is already the target of mounts[0]"},
    {"unknown mount mode is refused",
     "{'mounts':[{'source':'/a','target':'/b','mode':'readonly'}]}", -EINVAL,
     "mounts[0].mode: \"readonly\" is not a mount mode"},
    {"mount path component longer than NAME_MAX is refused",
     "{'mounts':[{'source':'/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa','target':'/b'}]}",
     -EINVAL, "mounts[0].source: \"/aaaa"},

    /* env */
    {"env that is not an object is refused", "{'env':['A=1']}", -EINVAL, "env: expected an object"},
    {"env name starting with a digit is refused", "{'env':{'1A':'x'}}", -EINVAL,
     "env.1A: \"1A\" is not a valid variable name"},
    {"env name with a dash is refused", "{'env':{'A-B':'x'}}", -EINVAL,
     "env.A-B: \"A-B\" is not a valid variable name"},
    {"env name with a space is quoted in the path", "{'env':{'A B':'x'}}", -EINVAL,
     "env[\"A B\"]: \"A B\" is not a valid variable name"},
    {"LD_PRELOAD is refused", "{'env':{'LD_PRELOAD':'/x.so'}}", -EINVAL,
     "env.LD_PRELOAD: \"LD_PRELOAD\" is refused: the dynamic loader"},
    {"any LD_ variable is refused", "{'env':{'LD_ANYTHING':'1'}}", -EINVAL,
     "env.LD_ANYTHING: \"LD_ANYTHING\" is refused"},
    {"MALLOC_ variables are refused", "{'env':{'MALLOC_ARENA_MAX':'2'}}", -EINVAL,
     "env.MALLOC_ARENA_MAX: \"MALLOC_ARENA_MAX\" is refused"},
    {"GCONV_PATH is refused", "{'env':{'GCONV_PATH':'/x'}}", -EINVAL,
     "env.GCONV_PATH: \"GCONV_PATH\" is refused"},
    {"GLIBC_TUNABLES is refused", "{'env':{'GLIBC_TUNABLES':'x'}}", -EINVAL,
     "env.GLIBC_TUNABLES: \"GLIBC_TUNABLES\" is refused"},
    {"HOSTALIASES is refused", "{'env':{'HOSTALIASES':'/x'}}", -EINVAL,
     "env.HOSTALIASES: \"HOSTALIASES\" is refused"},
    {"LOCALDOMAIN is refused", "{'env':{'LOCALDOMAIN':'x'}}", -EINVAL,
     "env.LOCALDOMAIN: \"LOCALDOMAIN\" is refused"},
    {"RES_OPTIONS is refused", "{'env':{'RES_OPTIONS':'x'}}", -EINVAL,
     "env.RES_OPTIONS: \"RES_OPTIONS\" is refused"},
    {"NLSPATH is refused", "{'env':{'NLSPATH':'/x'}}", -EINVAL,
     "env.NLSPATH: \"NLSPATH\" is refused"},
    {"env value that is not a string is refused", "{'env':{'A':1}}", -EINVAL,
     "env.A: expected a string"},

    /* executables */
    {"executables that is not an array is refused", "{'executables':'/bin/sh'}", -EINVAL,
     "executables: expected an array"},
    {"relative executable is refused", "{'executables':['/bin/sh','python3']}", -EINVAL,
     "executables[1]: \"python3\" is not an absolute path"},
    {"executable / is refused", "{'executables':['/.']}", -EINVAL,
     "executables[0]: \"/.\" is the root folder, not a file"},
    {"executable with .. is refused", "{'executables':['/usr/../bin/sh']}", -EINVAL,
     "executables[0]: \"/usr/../bin/sh\" has a \"..\" component"},

    /* credentials */
    {"credentials that is not an array is refused", "{'credentials':{}}", -EINVAL,
     "credentials: expected an array"},
    {"credential that is not an object is refused", "{'credentials':['github']}", -EINVAL,
     "credentials[0]: expected an object"},
    {"unknown credential field is refused", "{'credentials':[{'nmae':'x'}]}", -EINVAL,
     "credentials[0].nmae: unknown field (expected name, source, injection, hosts, expose, aws, "
     "ssh, postgres)"},
    {"credential without a name is refused", "{'credentials':[{}]}", -EINVAL,
     "credentials[0].name: required field is missing"},
    {"credential name with a slash is refused", "{'credentials':[{'name':'a/b'}]}", -EINVAL,
     "credentials[0].name: \"a/b\" is not a valid credential name"},
    {"two credentials with one name are refused",
     "{'credentials':[{'name':'a','source':{'type':'vault'},"
     "'injection':{'type':'env_var','var_name':'A'},'hosts':['a.example']},{'name':'a'}]}",
     -EINVAL, "credentials[1].name: \"a\" is already the name of credentials[0]"},
    {"credential without a source is refused", "{'credentials':[{'name':'a'}]}", -EINVAL,
     "credentials[0].source: required field is missing"},
    {"source that is not an object is refused", "{'credentials':[{'name':'a','source':'vault'}]}",
     -EINVAL, "credentials[0].source: expected an object"},
    {"source without a type is refused", "{'credentials':[{'name':'a','source':{}}]}", -EINVAL,
     "credentials[0].source.type: required field is missing"},
    {"unknown source type is refused", "{'credentials':[{'name':'a','source':{'type':'s3'}}]}",
     -EINVAL, "credentials[0].source.type: \"s3\" is not a credential source"},
    {"source field of another type is refused",
     "{'credentials':[{'name':'a','source':{'type':'vault','var':'X'}}]}", -EINVAL,
     "credentials[0].source.var: unknown field for source type \"vault\" (expected type, key)"},
    /* AWS keys */
    {"an AWS key whose secret names no credential is refused",
     "{'credentials':[" AWS_KEY "'aws':{'secret_access_key':'nope'}}]}", -EINVAL,
     "credentials[0].aws.secret_access_key: \"nope\" names no credential"},
    {"an SSH key without destinations is refused",
     "{'credentials':[" SSH_KEY "'ssh':{'destinations':[]}}]}", -EINVAL,
     "credentials[0].ssh.destinations: an SSH key needs at least one destination"},
    {"an SSH destination that is a pattern is refused",
     "{'credentials':[" SSH_KEY "'ssh':{'destinations':['*.example.org']}}]}", -EINVAL,
     "credentials[0].ssh.destinations[0]:"},
    {"an SSH destination with a bad port is refused",
     "{'credentials':[" SSH_KEY "'ssh':{'destinations':['git.example.org:0']}}]}", -EINVAL,
     "credentials[0].ssh.destinations[0]:"},
    {"an unknown field of ssh is refused",
     "{'credentials':[" SSH_KEY "'ssh':{'destinations':['a.example'],'sign':true}}]}", -EINVAL,
     "credentials[0].ssh.sign: unknown field"},
    {"an SSH key not from the vault is refused",
     "{'credentials':[{'name':'k','source':{'type':'env','var':'K'},"
     "'injection':{'type':'ssh_agent'},'ssh':{'destinations':['a.example']}}]}",
     -EINVAL, "credentials[0].source: an SSH key comes from the vault"},
    {"an SSH key with hosts is refused",
     "{'credentials':[" SSH_KEY "'hosts':['a.example'],'ssh':{'destinations':['a.example']}}]}",
     -EINVAL, "credentials[0].hosts: an SSH key has no hosts"},
    {"an exposed SSH key is refused",
     "{'credentials':[" SSH_KEY "'expose':true,'ssh':{'destinations':['a.example']}}]}", -EINVAL,
     "credentials[0].expose: an SSH key only signs"},
    {"an SSH key injected another way is refused",
     "{'credentials':[{'name':'k','source':{'type':'vault'},"
     "'injection':{'type':'env_var','var_name':'K'},'ssh':{'destinations':['a.example']}}]}",
     -EINVAL, "credentials[0].injection: an SSH key's injection is {\"type\": \"ssh_agent\"}"},
    {"an ssh_agent injection without an ssh object is refused",
     "{'credentials':[" SSH_KEY "'hosts':['a.example']}]}", -EINVAL,
     "credentials[0].ssh: injection ssh_agent serves an SSH key"},
    {"an ssh_agent injection with a field is refused",
     "{'credentials':[{'name':'k','source':{'type':'vault'},"
     "'injection':{'type':'ssh_agent','var_name':'K'},'ssh':{'destinations':['a.example']}}]}",
     -EINVAL, "credentials[0].injection.var_name: unknown field"},
    {"a credential both SSH and AWS key is refused",
     "{'credentials':[" SSH_KEY "'ssh':{'destinations':['a.example']},"
     "'aws':{'secret_access_key':'s'}}]}",
     -EINVAL, "credentials[0].aws: a credential is an SSH key or an AWS key, not both"},
    {"a Postgres credential without a user is refused",
     "{'credentials':[{'name':'db','source':{'type':'env','var':'P'},"
     "'injection':{'type':'env_var','var_name':'PGPASSWORD'},"
     "'postgres':{'destinations':['db.example']}}]}",
     -EINVAL, "credentials[0].postgres.user: required field is missing"},
    {"a Postgres credential with hosts is refused",
     "{'credentials':[{'name':'db','source':{'type':'env','var':'P'},"
     "'injection':{'type':'env_var','var_name':'PGPASSWORD'},'hosts':['db.example'],"
     "'postgres':{'user':'u','destinations':['db.example']}}]}",
     -EINVAL, "credentials[0].postgres: a Postgres credential cannot also be hosts"},
    {"a sidecar Postgres credential is refused",
     "{'credentials':[{'name':'db','source':{'type':'env','var':'P'},"
     "'injection':{'type':'sidecar','header':'X'},"
     "'postgres':{'user':'u','destinations':['db.example']}}]}",
     -EINVAL, "credentials[0].postgres: a Postgres credential cannot also be a sidecar"},
    {"two Postgres credentials at one destination are refused",
     "{'credentials':[{'name':'a','source':{'type':'env','var':'P'},"
     "'injection':{'type':'env_var','var_name':'PGPASSWORD'},"
     "'postgres':{'user':'u','destinations':['db.example']}},"
     "{'name':'b','source':{'type':'env','var':'Q'},"
     "'injection':{'type':'env_var','var_name':'PW2'},"
     "'postgres':{'user':'v','destinations':['db.example:5432']}}]}",
     -EINVAL,
     "credentials[1].postgres.destinations: db.example:5432 is already a destination of "
     "credentials[0]"},
    {"an unknown Postgres client_auth is refused",
     "{'credentials':[{'name':'db','source':{'type':'env','var':'P'},"
     "'injection':{'type':'env_var','var_name':'PGPASSWORD'},"
     "'postgres':{'user':'u','destinations':['db.example'],'client_auth':'trust'}}]}",
     -EINVAL,
     "credentials[0].postgres.client_auth: \"trust\" is not scram-sha-256, md5 or password"},
    {"an AWS key without a secret is refused", "{'credentials':[" AWS_KEY "'aws':{}}]}", -EINVAL,
     "credentials[0].aws.secret_access_key: required field is missing"},
    {"an unknown field of an AWS key is refused",
     "{'credentials':[" AWS_KEY "'aws':{'secret_access_key':'s','region':'x'}}," AWS_SECRET "]}",
     -EINVAL, "credentials[0].aws.region: unknown field"},
    {"an AWS region out of shape is refused",
     "{'credentials':[" AWS_KEY "'aws':{'secret_access_key':'s','regions':['EU']}}," AWS_SECRET
     "]}",
     -EINVAL, "credentials[0].aws.regions[0]: \"EU\" is not an AWS region or service name"},
    {"an AWS key naming itself as its secret is refused",
     "{'credentials':[" AWS_KEY "'aws':{'secret_access_key':'k'}}]}", -EINVAL,
     "credentials[0].aws.secret_access_key: \"k\" is already an AWS access key id"},
    {"an AWS secret bound to other hosts is refused",
     "{'credentials':[" AWS_KEY "'aws':{'secret_access_key':'s'}},"
     "{'name':'s','source':{'type':'env','var':'S'},'injection':{'type':'env_var','var_name':'X'},"
     "'hosts':['other.example']}]}",
     -EINVAL,
     "credentials[0].aws.secret_access_key: \"s\" is not bound to the same hosts as its access "
     "key"},
    {"an exposed AWS secret is refused",
     "{'credentials':[" AWS_KEY "'aws':{'secret_access_key':'s'}},"
     "{'name':'s','source':{'type':'env','var':'S'},'injection':{'type':'env_var','var_name':'X'},"
     "'hosts':['s3.example'],'expose':true}]}",
     -EINVAL, "credentials[0].aws.secret_access_key: \"s\" is given to the sandbox exposed"},
    {"a sidecar AWS key is refused",
     "{'credentials':[{'name':'k','source':{'type':'env','var':'K'},"
     "'injection':{'type':'sidecar','header':'X-K'},'hosts':['s3.example'],"
     "'aws':{'secret_access_key':'s'}}," AWS_SECRET "]}",
     -EINVAL, "credentials[0].aws: an AWS access key id is given to the sandbox as a surrogate"},
    {"env source without var is refused", "{'credentials':[{'name':'a','source':{'type':'env'}}]}",
     -EINVAL, "credentials[0].source.var: required field is missing"},
    {"env source with a bad var is refused",
     "{'credentials':[{'name':'a','source':{'type':'env','var':'A-B'}}]}", -EINVAL,
     "credentials[0].source.var: \"A-B\" is not a valid variable name"},
    {"file source without path is refused",
     "{'credentials':[{'name':'a','source':{'type':'file'}}]}", -EINVAL,
     "credentials[0].source.path: required field is missing"},
    {"file source with a relative path is refused",
     "{'credentials':[{'name':'a','source':{'type':'file','path':'key.txt'}}]}", -EINVAL,
     "credentials[0].source.path: \"key.txt\" is not an absolute path"},
    {"command source without command is refused",
     "{'credentials':[{'name':'a','source':{'type':'command'}}]}", -EINVAL,
     "credentials[0].source.command: required field is missing"},
    {"command that is a string is refused",
     "{'credentials':[{'name':'a','source':{'type':'command','command':'/bin/pass'}}]}", -EINVAL,
     "credentials[0].source.command: expected an array"},
    {"empty command is refused",
     "{'credentials':[{'name':'a','source':{'type':'command','command':[]}}]}", -EINVAL,
     "credentials[0].source.command: the command is empty"},
    {"relative command is refused",
     "{'credentials':[{'name':'a','source':{'type':'command','command':['pass','x']}}]}", -EINVAL,
     "credentials[0].source.command[0]: \"pass\" is not an absolute path"},
    {"command argument that is not a string is refused",
     "{'credentials':[{'name':'a','source':{'type':'command','command':['/bin/pass',1]}}]}",
     -EINVAL, "credentials[0].source.command[1]: expected a string"},
    {"keyring source without key is refused",
     "{'credentials':[{'name':'a','source':{'type':'keyring'}}]}", -EINVAL,
     "credentials[0].source.key: required field is missing"},
    {"empty key is refused", "{'credentials':[{'name':'a','source':{'type':'vault','key':''}}]}",
     -EINVAL, "credentials[0].source.key: the key is empty"},
    {"key with a control character is refused",
     "{'credentials':[{'name':'a','source':{'type':'keyring','key':'a\\nb'}}]}", -EINVAL,
     "credentials[0].source.key: \"a\\x0ab\" contains a control character"},
    {"credential without an injection is refused",
     "{'credentials':[{'name':'a','source':{'type':'vault'}}]}", -EINVAL,
     "credentials[0].injection: required field is missing"},
    {"injection that is not an object is refused",
     "{'credentials':[{'name':'a','source':{'type':'vault'},'injection':'env_var'}]}", -EINVAL,
     "credentials[0].injection: expected an object"},
    {"unknown injection type is refused",
     "{'credentials':[{'name':'a','source':{'type':'vault'},'injection':{'type':'argv'}}]}",
     -EINVAL, "credentials[0].injection.type: \"argv\" is not an injection type"},
    {"injection field of another type is refused",
     "{'credentials':[{'name':'a','source':{'type':'vault'},"
     "'injection':{'type':'env_var','var_name':'A','path':'/x'}}]}",
     -EINVAL, "credentials[0].injection.path: unknown field for injection type \"env_var\""},
    {"env_var injection without var_name is refused",
     "{'credentials':[{'name':'a','source':{'type':'vault'},'injection':{'type':'env_var'}}]}",
     -EINVAL, "credentials[0].injection.var_name: required field is missing"},
    {"injected variable with a bad name is refused",
     "{'credentials':[{'name':'a','source':{'type':'vault'},"
     "'injection':{'type':'env_var','var_name':'9A'}}]}",
     -EINVAL, "credentials[0].injection.var_name: \"9A\" is not a valid variable name"},
    {"injected LD_PRELOAD is refused",
     "{'credentials':[{'name':'a','source':{'type':'vault'},"
     "'injection':{'type':'env_var','var_name':'LD_PRELOAD'}}]}",
     -EINVAL, "credentials[0].injection.var_name: \"LD_PRELOAD\" is refused"},
    {"one variable injected by two credentials is refused",
     "{'credentials':[{'name':'a','source':{'type':'vault'},"
     "'injection':{'type':'env_var','var_name':'T'},'hosts':['a.example']},"
     "{'name':'b','source':{'type':'vault'},'injection':{'type':'env_var','var_name':'T'}}]}",
     -EINVAL, "credentials[1].injection.var_name: \"T\" is already used by another credential"},
    {"injected variable also set in env is refused",
     "{'env':{'T':'x'},'credentials':[{'name':'a','source':{'type':'vault'},"
     "'injection':{'type':'env_var','var_name':'T'}}]}",
     -EINVAL, "credentials[0].injection.var_name: \"T\" is also set in env"},
    {"file injection without path is refused",
     "{'credentials':[{'name':'a','source':{'type':'vault'},'injection':{'type':'file'}}]}",
     -EINVAL, "credentials[0].injection.path: required field is missing"},
    {"file injection with a relative path is refused",
     "{'credentials':[{'name':'a','source':{'type':'vault'},"
     "'injection':{'type':'file','path':'secret'}}]}",
     -EINVAL, "credentials[0].injection.path: \"secret\" is not an absolute path"},
    {"file injection in /proc is refused",
     "{'credentials':[{'name':'a','source':{'type':'vault'},"
     "'injection':{'type':'file','path':'/proc/self/environ'}}]}",
     -EINVAL, "credentials[0].injection.path: \"/proc/self/environ\" is inside /proc"},
    {"one file injected by two credentials is refused",
     "{'credentials':[{'name':'a','source':{'type':'vault'},"
     "'injection':{'type':'file','path':'/run/k'},'hosts':['a.example']},"
     "{'name':'b','source':{'type':'vault'},'injection':{'type':'file','path':'/run//k'}}]}",
     -EINVAL, "credentials[1].injection.path: \"/run//k\" is already the file of credentials[0]"},
    {"sidecar without header is refused",
     "{'credentials':[{'name':'a','source':{'type':'vault'},'injection':{'type':'sidecar'}}]}",
     -EINVAL, "credentials[0].injection.header: required field is missing"},
    {"header name with a colon is refused",
     "{'credentials':[{'name':'a','source':{'type':'vault'},"
     "'injection':{'type':'sidecar','header':'Authorization:'}}]}",
     -EINVAL,
     "credentials[0].injection.header: \"Authorization:\" is not a valid HTTP header name"},
    {"framing header is refused",
     "{'credentials':[{'name':'a','source':{'type':'vault'},"
     "'injection':{'type':'sidecar','header':'content-LENGTH'}}]}",
     -EINVAL, "credentials[0].injection.header: \"content-LENGTH\" is set by the proxy and cannot"},
    {"format without {} is refused",
     "{'credentials':[{'name':'a','source':{'type':'vault'},"
     "'injection':{'type':'sidecar','header':'Authorization','format':'Bearer'}}]}",
     -EINVAL, "credentials[0].injection.format: \"Bearer\" must contain \"{}\""},
    {"format with two {} is refused",
     "{'credentials':[{'name':'a','source':{'type':'vault'},"
     "'injection':{'type':'sidecar','header':'Authorization','format':'{} {}'}}]}",
     -EINVAL, "credentials[0].injection.format: \"{} {}\" must contain \"{}\""},
    {"format with a line break is refused",
     "{'credentials':[{'name':'a','source':{'type':'vault'},"
     "'injection':{'type':'sidecar','header':'A','format':'{}\\r\\nX-Evil: 1'}}]}",
     -EINVAL,
     "credentials[0].injection.format: \"{}\\x0d\\x0aX-Evil: 1\" has a character not allowed"},
    {"credential without hosts is refused",
     "{'credentials':[{'name':'a','source':{'type':'vault'},"
     "'injection':{'type':'env_var','var_name':'A'}}]}",
     -EINVAL,
     "credentials[0].hosts: a credential needs at least one host, unless \"expose\" is true"},
    {"credential with an empty host list is refused",
     "{'credentials':[{'name':'a','source':{'type':'vault'},"
     "'injection':{'type':'env_var','var_name':'A'},'hosts':[],'expose':false}]}",
     -EINVAL, "credentials[0].hosts: a credential needs at least one host"},
    {"bad credential host is refused",
     "{'credentials':[{'name':'a','source':{'type':'vault'},"
     "'injection':{'type':'env_var','var_name':'A'},'hosts':['ok.example','-bad.example']}]}",
     -EINVAL, "credentials[0].hosts[1]: \"-bad.example\" is not a valid host name"},
    {"IP address as credential host is refused",
     "{'credentials':[{'name':'a','source':{'type':'vault'},"
     "'injection':{'type':'env_var','var_name':'A'},'hosts':['192.0.2.1']}]}",
     -EINVAL, "credentials[0].hosts[0]: \"192.0.2.1\" is not a valid host name"},
    {"expose that is not a boolean is refused",
     "{'credentials':[{'name':'a','source':{'type':'vault'},"
     "'injection':{'type':'env_var','var_name':'A'},'expose':'yes'}]}",
     -EINVAL, "credentials[0].expose: expected true or false"},
    {"exposed sidecar credential is refused",
     "{'credentials':[{'name':'a','source':{'type':'vault'},"
     "'injection':{'type':'sidecar','header':'A'},'expose':true}]}",
     -EINVAL, "credentials[0].expose: a sidecar credential is never given to the sandbox"},

    /* resources */
    {"resources that is not an object is refused", "{'resources':[]}", -EINVAL,
     "resources: expected an object"},
    {"misspelt resource is refused", "{'resources':{'memroy':'1Gi'}}", -EINVAL,
     "resources.memroy: unknown field"},
    {"cpu of zero is refused", "{'resources':{'cpu':'0'}}", -EINVAL,
     "resources.cpu: \"0\" is not a CPU amount"},
    {"cpu with four decimals is refused", "{'resources':{'cpu':'0.0005'}}", -EINVAL,
     "resources.cpu: \"0.0005\" is not a CPU amount"},
    {"cpu as a float is refused", "{'resources':{'cpu':1.5}}", -EINVAL,
     "resources.cpu: expected a string such as"},
    {"cpu as the number 0 is refused", "{'resources':{'cpu':0}}", -EINVAL,
     "resources.cpu: out of range"},
    {"memory that is not a size is refused", "{'resources':{'memory':'12Q'}}", -EINVAL,
     "resources.memory: \"12Q\" is not a size"},
    {"memory below 1Mi is refused", "{'resources':{'memory':'1000Ki'}}", -EINVAL,
     "resources.memory: 1000Ki is below the minimum of 1Mi"},
    {"memory of zero is refused", "{'resources':{'memory':0}}", -EINVAL,
     "resources.memory: 0 is below the minimum of 1Mi"},
    {"memory beyond 64 bits is refused", "{'resources':{'memory':'99999999999999999999'}}", -EINVAL,
     "resources.memory: \"99999999999999999999\" is too large"},
    {"pids as a string is refused", "{'resources':{'pids':'100'}}", -EINVAL,
     "resources.pids: expected an integer"},
    {"pids of zero is refused", "{'resources':{'pids':0}}", -EINVAL,
     "resources.pids: out of range (expected an integer from 1 to 4194304)"},
    {"disk below 1Mi is refused", "{'resources':{'disk':4096}}", -EINVAL,
     "resources.disk: 4Ki is below the minimum of 1Mi"},
    {"timeout without a unit is refused", "{'resources':{'timeout':'30'}}", -EINVAL,
     "resources.timeout: \"30\" is not a duration"},
    {"timeout as a number is refused", "{'resources':{'timeout':30}}", -EINVAL,
     "resources.timeout: expected a duration string"},
    {"timeout of zero is refused", "{'resources':{'timeout':'0s'}}", -EINVAL,
     "resources.timeout: \"0s\": a timeout must be longer than zero"},
    {"timeout beyond 64 bits is refused", "{'resources':{'timeout':'999999999999d'}}", -EINVAL,
     "resources.timeout: \"999999999999d\" is too long"},
    {"io_weight of zero is refused", "{'resources':{'io_weight':0}}", -EINVAL,
     "resources.io_weight: out of range (expected an integer from 1 to 10000)"},
    {"io_weight above 10000 is refused", "{'resources':{'io_weight':10001}}", -EINVAL,
     "resources.io_weight: out of range"},
    {"nofile below 16 is refused", "{'resources':{'nofile':15}}", -EINVAL,
     "resources.nofile: out of range (expected an integer from 16 to 1048576)"},
    {"nofile above 1048576 is refused", "{'resources':{'nofile':1048577}}", -EINVAL,
     "resources.nofile: out of range"},

    /* network */
    {"network that is not an object is refused", "{'network':'deny'}", -EINVAL,
     "network: expected an object"},
    {"unknown network field is refused", "{'network':{'allow':[]}}", -EINVAL,
     "network.allow: unknown field (expected default, rules, resolve, idle_timeout)"},
    {"unknown default action is refused", "{'network':{'default':'block'}}", -EINVAL,
     "network.default: \"block\" is not \"allow\" or \"deny\""},
    {"rules that is not an array is refused", "{'network':{'rules':{}}}", -EINVAL,
     "network.rules: expected an array"},
    {"rule that is not an object is refused", "{'network':{'rules':['github.com']}}", -EINVAL,
     "network.rules[0]: expected an object"},
    {"unknown rule field is refused",
     "{'network':{'rules':[{'destination':'a.example','action':'allow','proto':'tcp'}]}}", -EINVAL,
     "network.rules[0].proto: unknown field (expected destination, port, action)"},
    {"rule without a destination is refused", "{'network':{'rules':[{'action':'allow'}]}}", -EINVAL,
     "network.rules[0].destination: required field is missing"},
    {"rule without an action is refused", "{'network':{'rules':[{'destination':'a.example'}]}}",
     -EINVAL, "network.rules[0].action: required field is missing"},
    {"unknown rule action is refused",
     "{'network':{'rules':[{'destination':'a.example','action':'permit'}]}}", -EINVAL,
     "network.rules[0].action: \"permit\" is not \"allow\" or \"deny\""},
    {"bad destination is refused",
     "{'network':{'rules':[{'destination':'exa mple.com','action':'allow'}]}}", -EINVAL,
     "network.rules[0].destination: \"exa mple.com\" is not a host name, \"*.suffix\" "
     "pattern, IP address or CIDR block"},
    {"host name with a trailing dot is refused",
     "{'network':{'rules':[{'destination':'example.com.','action':'allow'}]}}", -EINVAL,
     "network.rules[0].destination: \"example.com.\" is not a host name"},
    {"wildcard in the middle is refused",
     "{'network':{'rules':[{'destination':'a.*.example','action':'allow'}]}}", -EINVAL,
     "network.rules[0].destination: \"a.*.example\" is not a host name"},
    {"short IPv4 form is refused",
     "{'network':{'rules':[{'destination':'10.1','action':'allow'}]}}", -EINVAL,
     "network.rules[0].destination: \"10.1\" is not an IP address"},
    {"CIDR with host bits is refused",
     "{'network':{'rules':[{'destination':'10.1.2.3/8','action':'deny'}]}}", -EINVAL,
     "network.rules[0].destination: \"10.1.2.3/8\" has host bits set (the network is "
     "\"10.0.0.0/8\")"},
    {"IPv6 CIDR with host bits is refused",
     "{'network':{'rules':[{'destination':'2001:db8::1/32','action':'deny'}]}}", -EINVAL,
     "network.rules[0].destination: \"2001:db8::1/32\" has host bits set (the network is "
     "\"2001:db8::/32\")"},
    {"prefix longer than the address is refused",
     "{'network':{'rules':[{'destination':'10.0.0.0/33','action':'deny'}]}}", -EINVAL,
     "network.rules[0].destination: \"10.0.0.0/33\" has an invalid prefix length (0-32)"},
    {"prefix with a leading zero is refused",
     "{'network':{'rules':[{'destination':'10.0.0.0/08','action':'deny'}]}}", -EINVAL,
     "network.rules[0].destination: \"10.0.0.0/08\" has an invalid prefix length"},
    {"IPv4-mapped IPv6 destination is refused",
     "{'network':{'rules':[{'destination':'::ffff:10.0.0.1','action':'allow'}]}}", -EINVAL,
     "network.rules[0].destination: \"::ffff:10.0.0.1\" is an IPv4-mapped IPv6 address"},
    {"port 0 is refused",
     "{'network':{'rules':[{'destination':'a.example','port':0,'action':'allow'}]}}", -EINVAL,
     "network.rules[0].port: out of range (expected an integer from 1 to 65535)"},
    {"port 65536 is refused",
     "{'network':{'rules':[{'destination':'a.example','port':65536,'action':'allow'}]}}", -EINVAL,
     "network.rules[0].port: out of range"},
    {"port as a string is refused",
     "{'network':{'rules':[{'destination':'a.example','port':'443','action':'allow'}]}}", -EINVAL,
     "network.rules[0].port: expected an integer"},
    {"resolve that is not an object is refused", "{'network':{'resolve':[]}}", -EINVAL,
     "network.resolve: expected an object"},
    {"resolve of a wildcard is refused", "{'network':{'resolve':{'*.internal':'10.0.0.1'}}}",
     -EINVAL, "network.resolve[\"*.internal\"]: \"*.internal\" is not a valid host name"},
    {"resolve to a name is refused", "{'network':{'resolve':{'git.internal':'git.example'}}}",
     -EINVAL, "network.resolve[\"git.internal\"]: \"git.example\" is not an IP address"},
    {"resolve to a CIDR is refused", "{'network':{'resolve':{'git':'10.0.0.0/8'}}}", -EINVAL,
     "network.resolve.git: \"10.0.0.0/8\" is not an IP address"},
    {"resolve value that is not a string is refused", "{'network':{'resolve':{'git':1}}}", -EINVAL,
     "network.resolve.git: expected a string"},
    {"one name pinned twice is refused",
     "{'network':{'resolve':{'git.internal':'10.0.0.1','GIT.internal':'10.0.0.2'}}}", -EINVAL,
     "network.resolve[\"GIT.internal\"]: \"git.internal\" is pinned twice"},

    /* audit, labels */
    {"empty audit path is refused", "{'audit':''}", -EINVAL, "audit: the path is empty"},
    {"audit path / is refused", "{'audit':'/'}", -EINVAL, "audit: \"/\" is the root folder"},
    {"audit that is not a string is refused", "{'audit':false}", -EINVAL,
     "audit: expected a string"},
    {"labels that is not an array is refused", "{'labels':'x'}", -EINVAL,
     "labels: expected an array"},
    {"label with upper case is refused", "{'labels':['Team']}", -EINVAL,
     "labels[0]: \"Team\" is not a valid label"},
    {"empty label is refused", "{'labels':['']}", -EINVAL, "labels[0]: \"\" is not a valid label"},
    {"label of 65 bytes is refused",
     "{'labels':['aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa']}", -EINVAL,
     "labels[0]: \"aaaa"},
    {"src: labels are reserved", "{'labels':['ok','src:cli']}", -EINVAL,
     "labels[1]: \"src:cli\": labels starting with \"src:\" are reserved for airlock"},
    {"repeated label is refused", "{'labels':['a','b','a']}", -EINVAL,
     "labels[2]: \"a\" is already labels[0]"},
};

static void test_bad_policies_are_refused_with_the_json_path(void **state)
{
	size_t failed = 0;

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(bad_policies); i++) {
		const struct bad_policy *b = &bad_policies[i];
		_cleanup_free_ char *json = test_json(b->json);
		struct policy *p = NULL;
		struct al_error err = {};
		int r;

		r = policy_load_string(json, &p, &err);
		if (test_error_matches(&err, r, b->code, b->message) && !p)
			continue;
		print_error("  in row \"%s\": %s\n", b->behaviour, json);
		p = policy_free(p);
		failed++;
	}
	assert_int_equal(failed, 0);
}

/* What the table cannot hold: documents built at run time. */

static void test_policy_larger_than_1mib_is_refused(void **state)
{
	_cleanup_free_ char *buf = test_alloc(POLICY_FILE_MAX + 1);
	struct policy *p = NULL;
	struct al_error err = {};

	(void)state;
	memset(buf, ' ', POLICY_FILE_MAX + 1);
	buf[0] = '{';
	buf[POLICY_FILE_MAX] = '}';
	assert_int_equal(policy_load_buffer(buf, POLICY_FILE_MAX + 1, &p, &err), -EFBIG);
	assert_string_equal(err.msg, "the policy is larger than 1048576 bytes");
	assert_null(p);
	/* One byte less is fine. */
	buf[POLICY_FILE_MAX - 1] = '}';
	assert_int_equal(policy_load_buffer(buf, POLICY_FILE_MAX, &p, &err), 0);
	p = policy_free(p);
}

static void test_raw_nul_byte_is_refused(void **state)
{
	static const char buf[] = "{\"id\":\"a\0b\"}";
	struct policy *p = NULL;
	struct al_error err = {};

	(void)state;
	assert_true(test_error_matches(&err, policy_load_buffer(buf, sizeof(buf) - 1, &p, &err),
				       -EINVAL, "invalid JSON at byte 8: a NUL byte"));
	assert_null(p);
}

static void test_buffer_needs_no_terminating_nul(void **state)
{
	static const char buf[] = "{\"tier\":2}garbage";
	_cleanup_(policy_freep) struct policy *p = NULL;
	struct al_error err = {};

	(void)state;
	assert_int_equal(policy_load_buffer(buf, 10, &p, &err), 0);
	assert_int_equal(p->tier, 2);
}

/* A JSON document with an array of n copies of item under key (at the top level). */
static char *array_policy(const char *key, const char *item, size_t n)
{
	size_t len = strlen(key) + 8 + n * (strlen(item) + 1);
	char *s = test_alloc(len), *o = s;

	o += sprintf(o, "{\"%s\":[", key);
	for (size_t i = 0; i < n; i++)
		o += sprintf(o, "%s%s", i > 0 ? "," : "", item);
	strcpy(o, "]}");
	return s;
}

static void test_array_of_more_than_1024_entries_is_refused(void **state)
{
	_cleanup_free_ char *ok = array_policy("executables", "\"/bin/sh\"", POLICY_LIST_MAX);
	_cleanup_free_ char *bad = array_policy("executables", "\"/bin/sh\"", POLICY_LIST_MAX + 1);
	_cleanup_(policy_freep) struct policy *p = NULL;
	struct policy *q = NULL;
	struct al_error err = {};

	(void)state;
	assert_int_equal(policy_load_string(ok, &p, &err), 0);
	assert_int_equal(p->executables.n, POLICY_LIST_MAX);
	assert_true(
	    test_error_matches(&err, policy_load_string(bad, &q, &err), -EINVAL,
			       "executables: has 1025 entries, more than the limit of 1024"));
	assert_null(q);
}

static void test_env_of_more_than_1024_variables_is_refused(void **state)
{
	_cleanup_free_ char *json = test_alloc(32 * (POLICY_LIST_MAX + 2));
	struct policy *p = NULL;
	struct al_error err = {};
	char *o = json;

	(void)state;
	o += sprintf(o, "{\"env\":{");
	for (size_t i = 0; i <= POLICY_LIST_MAX; i++)
		o += sprintf(o, "%s\"V%zu\":\"\"", i > 0 ? "," : "", i);
	strcpy(o, "}}");
	assert_true(test_error_matches(&err, policy_load_string(json, &p, &err), -EINVAL,
				       "env: has 1025 entries, more than the limit of 1024"));
	assert_null(p);
}

static void test_string_longer_than_4096_bytes_is_refused(void **state)
{
	_cleanup_free_ char *json = test_alloc(POLICY_STRING_MAX + 64);
	struct policy *p = NULL;
	struct al_error err = {};
	int n;

	(void)state;
	n = sprintf(json, "{\"workspace\":{\"root\":\"");
	memset(json + n, 'a', POLICY_STRING_MAX + 1);
	strcpy(json + n + POLICY_STRING_MAX + 1, "\"}}");
	assert_true(test_error_matches(&err, policy_load_string(json, &p, &err), -EINVAL,
				       "workspace.root: \"aaaa"));
	assert_non_null(strstr(err.msg, "is longer than 4096 bytes"));
	assert_null(p);
}

static void test_path_of_path_max_bytes_is_refused(void **state)
{
	_cleanup_free_ char *json = test_alloc(POLICY_STRING_MAX + 64);
	struct policy *p = NULL;
	struct al_error err = {};
	int n;

	(void)state;
	/* 4096 bytes: a string the policy may hold, but not a path the kernel takes. */
	n = sprintf(json, "{\"executables\":[\"");
	for (int i = 0; i < POLICY_STRING_MAX; i += 2)
		memcpy(json + n + i, "/a", 2);
	strcpy(json + n + POLICY_STRING_MAX, "\"]}");
	assert_true(test_error_matches(&err, policy_load_string(json, &p, &err), -EINVAL,
				       "executables[0]: \"/a/a"));
	assert_non_null(strstr(err.msg, "is longer than 4095 bytes"));
	assert_null(p);
}

static void test_env_value_may_hold_32kib_but_not_more(void **state)
{
	_cleanup_free_ char *json = test_alloc(POLICY_ENV_VALUE_MAX + 64);
	_cleanup_(policy_freep) struct policy *p = NULL;
	struct policy *q = NULL;
	struct al_error err = {};
	int n;

	(void)state;
	n = sprintf(json, "{\"env\":{\"BIG\":\"");
	memset(json + n, 'x', POLICY_ENV_VALUE_MAX);
	strcpy(json + n + POLICY_ENV_VALUE_MAX, "\"}}");
	assert_int_equal(policy_load_string(json, &p, &err), 0);
	assert_int_equal(strlen(p->env[0].value), POLICY_ENV_VALUE_MAX);

	memset(json + n, 'x', POLICY_ENV_VALUE_MAX + 1);
	strcpy(json + n + POLICY_ENV_VALUE_MAX + 1, "\"}}");
	assert_true(test_error_matches(&err, policy_load_string(json, &q, &err), -EINVAL,
				       "env.BIG: \"xxxx"));
	assert_non_null(strstr(err.msg, "is longer than 32768 bytes"));
	assert_null(q);
}

static void test_env_name_longer_than_256_bytes_is_refused(void **state)
{
	char name[POLICY_ENV_NAME_MAX + 2], json[POLICY_ENV_NAME_MAX + 64];
	struct policy *p = NULL;
	struct al_error err = {};

	(void)state;
	memset(name, 'N', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	(void)snprintf(json, sizeof(json), "{\"env\":{\"%s\":\"x\"}}", name);
	/* Too long for a plain path element: the path quotes it, cut short. */
	assert_true(
	    test_error_matches(&err, policy_load_string(json, &p, &err), -EINVAL, "env[\"NNNN"));
	assert_non_null(strstr(err.msg, "is not a valid variable name"));
	assert_null(p);
}

/* policy_load_file() */

static void test_missing_file_is_enoent_with_its_name(void **state)
{
	struct policy *p = NULL;
	struct al_error err = {};

	(void)state;
	assert_int_equal(policy_load_file("/nonexistent/airlock/policy.json", &p, &err), -ENOENT);
	assert_string_equal(err.msg,
			    "\"/nonexistent/airlock/policy.json\": No such file or directory");
	assert_null(p);
}

static int write_temp(char *path, const char *content, size_t len)
{
	int fd = mkstemp(path);

	if (fd < 0)
		return -errno;
	if (write(fd, content, len) != (ssize_t)len) {
		(void)close(fd);
		return -EIO;
	}
	return RET_NERRNO(close(fd));
}

static void test_file_is_loaded_and_validated(void **state)
{
	char good[] = "/tmp/airlock-test-policy-XXXXXX", bad[] = "/tmp/airlock-test-policy-XXXXXX";
	_cleanup_(policy_freep) struct policy *p = NULL;
	struct policy *q = NULL;
	struct al_error err = {};

	(void)state;
	assert_int_equal(write_temp(good, test_design_example(), strlen(test_design_example())), 0);
	assert_int_equal(write_temp(bad, "{\"tier\":9}", 10), 0);
	assert_int_equal(policy_load_file(good, &p, &err), 0);
	assert_string_equal(p->id, "example");
	/* The message starts with the JSON path: the caller adds the file name. */
	assert_true(test_error_matches(&err, policy_load_file(bad, &q, &err), -EINVAL, "tier: "));
	assert_null(q);
	(void)unlink(good);
	(void)unlink(bad);
}

static void test_file_larger_than_1mib_is_efbig(void **state)
{
	char path[] = "/tmp/airlock-test-policy-XXXXXX";
	_cleanup_free_ char *buf = test_alloc(POLICY_FILE_MAX + 1);
	struct policy *p = NULL;
	struct al_error err = {};

	(void)state;
	memset(buf, ' ', POLICY_FILE_MAX + 1);
	assert_int_equal(write_temp(path, buf, POLICY_FILE_MAX + 1), 0);
	assert_int_equal(policy_load_file(path, &p, &err), -EFBIG);
	assert_non_null(strstr(err.msg, "the policy is larger than 1048576 bytes"));
	assert_null(p);
	(void)unlink(path);
}

static void test_folder_is_not_a_policy_file(void **state)
{
	struct policy *p = NULL;
	struct al_error err = {};

	(void)state;
	assert_int_equal(policy_load_file("/", &p, &err), -EISDIR);
	assert_null(p);
}

static void test_null_err_is_allowed(void **state)
{
	struct policy *p = NULL;

	(void)state;
	assert_int_equal(policy_load_string("{\"tier\":7}", &p, NULL), -EINVAL);
	assert_int_equal(policy_load_string("{\"isolation\":[{\"type\":\"wasm\"}]}", &p, NULL),
			 -EOPNOTSUPP);
	assert_null(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_design_example_loads_with_every_field),
	    cmocka_unit_test(test_empty_policy_gets_the_defaults),
	    cmocka_unit_test(test_isolation_list_is_read_as_a_set),
	    cmocka_unit_test(test_env_is_kept_sorted_by_name),
	    cmocka_unit_test(test_tmpdir_may_be_set),
	    cmocka_unit_test(test_max_lifts_the_default_memory_and_pids_limits),
	    cmocka_unit_test(test_paths_are_normalised),
	    cmocka_unit_test(test_sizes_take_strings_and_byte_counts),
	    cmocka_unit_test(test_cpu_takes_decimals_millicores_and_whole_cpus),
	    cmocka_unit_test(test_other_limits_are_stored),
	    cmocka_unit_test(test_network_destinations_are_normalised),
	    cmocka_unit_test(test_credential_sources_and_injections_are_stored),
	    cmocka_unit_test(test_ssh_key_destinations_are_normalised),
	    cmocka_unit_test(test_postgres_credential_is_bound_to_its_destinations),
	    cmocka_unit_test(test_labels_and_canonical_version_are_accepted),
	    cmocka_unit_test(test_utf8_strings_are_kept),
	    cmocka_unit_test(test_bad_policies_are_refused_with_the_json_path),
	    cmocka_unit_test(test_policy_larger_than_1mib_is_refused),
	    cmocka_unit_test(test_raw_nul_byte_is_refused),
	    cmocka_unit_test(test_buffer_needs_no_terminating_nul),
	    cmocka_unit_test(test_array_of_more_than_1024_entries_is_refused),
	    cmocka_unit_test(test_env_of_more_than_1024_variables_is_refused),
	    cmocka_unit_test(test_string_longer_than_4096_bytes_is_refused),
	    cmocka_unit_test(test_path_of_path_max_bytes_is_refused),
	    cmocka_unit_test(test_env_value_may_hold_32kib_but_not_more),
	    cmocka_unit_test(test_env_name_longer_than_256_bytes_is_refused),
	    cmocka_unit_test(test_missing_file_is_enoent_with_its_name),
	    cmocka_unit_test(test_file_is_loaded_and_validated),
	    cmocka_unit_test(test_file_larger_than_1mib_is_efbig),
	    cmocka_unit_test(test_folder_is_not_a_policy_file),
	    cmocka_unit_test(test_null_err_is_allowed),
	    cmocka_unit_test(test_aws_key_links_its_secret_and_token),
	};

	return cmocka_run_group_tests_name("policy-parse", tests, NULL, NULL);
}
