/* policy-canonical.c: the canonical form and the hash that identifies a policy. */

#include <errno.h>
#include <stdlib.h>

#include "common/json-util.h"
#include "policy/policy-internal.h"
#include "tests/unit/policy/policy-test.h"

/* Computed once from this implementation and written down: a change of either value means every
 * admitted policy hash (tier 3 and up) changes, which needs a new canonical version. */
#define DEFAULT_CANONICAL                                                                          \
	"{\"canonical\":1,\"tier\":0,\"isolation\":[{\"type\":\"container\"}],"                    \
	"\"seccomp\":\"restricted\",\"workspace\":{\"root\":\".\",\"mount\":\"/workspace\","       \
	"\"read\":[\"**\"],\"write\":[\"**\"],\"deny\":[]},\"mounts\":[],\"env\":{},"              \
	"\"executables\":[],\"credentials\":[],\"resources\":{\"memory\":\"2147483648\","          \
	"\"pids\":1024,\"disk\":\"536870912\",\"nofile\":1024},\"network\":{\"default\":\"deny\"," \
	"\"rules\":[],\"resolve\":{}},\"labels\":[]}"
#define DEFAULT_HASH "1048ceb45200a636bc8989505ddc88dae1bb81d67f921a90ad4b3b3ea94ebd9d"
#define DESIGN_EXAMPLE_HASH "d6e0ea1bdcaeb183f7182eb8b0c5b62baa298217a506483851450f71b02c08de"

static void hash_hex_of(const struct policy *p, char hex[static POLICY_HASH_HEX_SIZE])
{
	assert_int_equal(policy_hash_hex(p, hex), 0);
}

static void test_default_canonical_form_is_pinned(void **state)
{
	_cleanup_(policy_freep) struct policy *p = NULL;
	_cleanup_free_ char *c = NULL;

	(void)state;
	assert_int_equal(policy_new_default(&p), 0);
	assert_int_equal(policy_to_canonical_json(p, &c), 0);
	assert_string_equal(c, DEFAULT_CANONICAL);
}

static void test_default_hash_is_pinned(void **state)
{
	_cleanup_(policy_freep) struct policy *p = NULL;
	char hex[POLICY_HASH_HEX_SIZE];

	(void)state;
	assert_int_equal(policy_new_default(&p), 0);
	hash_hex_of(p, hex);
	assert_string_equal(hex, DEFAULT_HASH);
}

static void test_design_example_hash_is_pinned(void **state)
{
	_cleanup_(policy_freep) struct policy *p = NULL;
	char hex[POLICY_HASH_HEX_SIZE];
	struct al_error err = {};

	(void)state;
	assert_int_equal(policy_load_string(test_design_example(), &p, &err), 0);
	hash_hex_of(p, hex);
	assert_string_equal(hex, DESIGN_EXAMPLE_HASH);
}

static void test_empty_policy_file_is_the_embedded_default(void **state)
{
	_cleanup_free_ char *c = test_canonical("{}");

	(void)state;
	assert_string_equal(c, DEFAULT_CANONICAL);
}

static void test_hash_hex_is_the_lower_case_hash(void **state)
{
	_cleanup_(policy_freep) struct policy *p = NULL;
	uint8_t h[POLICY_HASH_SIZE];
	char hex[POLICY_HASH_HEX_SIZE], want[POLICY_HASH_HEX_SIZE];

	(void)state;
	assert_int_equal(policy_new_default(&p), 0);
	assert_int_equal(policy_hash(p, h), 0);
	for (size_t i = 0; i < sizeof(h); i++)
		(void)sprintf(want + 2 * i, "%02x", h[i]);
	hash_hex_of(p, hex);
	assert_string_equal(hex, want);
}

static void test_canonical_form_of_every_field(void **state)
{
	_cleanup_free_ char *c = test_canonical(
	    "{'labels':['b','a'],'audit':'./logs//a.jsonl','id':'x','tier':4,"
	    "'isolation':[{'type':'network_policy'},{'type':'process'}],'seccomp':'strict',"
	    "'workspace':{'quota':'1.5Ki','deny':['.env'],'root':'src/'},"
	    "'mounts':[{'source':'/b/','target':'/t','mode':'rw'}],'env':{'B':'2','A':'1'},"
	    "'executables':['/bin/sh'],"
	    "'credentials':[{'expose':true,'injection':{'type':'file','path':'/run/k'},"
	    "'source':{'type':'command','command':['/bin/pass','k']},'name':'k'}],"
	    "'resources':{'nofile':64,'io_weight':50,'timeout':'1s500us','disk':'2Mi',"
	    "'pids':8,'memory':'3Mi','cpu':'0.5'},"
	    "'network':{'resolve':{'b.x':'::1','a.x':'192.0.2.1'},"
	    "'rules':[{'action':'deny','destination':'10.0.0.0/8','port':22}],'default':'allow'}}");

	(void)state;
	assert_string_equal(
	    c, "{\"canonical\":1,\"id\":\"x\",\"tier\":4,"
	       "\"isolation\":[{\"type\":\"process\"},{\"type\":\"network_policy\"}],"
	       "\"seccomp\":\"strict\",\"workspace\":{\"root\":\"src\",\"mount\":\"/workspace\","
	       "\"read\":[\"**\"],\"write\":[\"**\"],\"deny\":[\".env\"],\"quota\":\"1536\"},"
	       "\"mounts\":[{\"source\":\"/b\",\"target\":\"/t\",\"mode\":\"rw\"}],"
	       "\"env\":{\"A\":\"1\",\"B\":\"2\"},\"executables\":[\"/bin/sh\"],"
	       "\"credentials\":[{\"name\":\"k\",\"source\":{\"type\":\"command\","
	       "\"command\":[\"/bin/pass\",\"k\"]},\"injection\":{\"type\":\"file\","
	       "\"path\":\"/run/k\"},\"hosts\":[],\"expose\":true}],"
	       "\"resources\":{\"cpu\":\"500m\",\"memory\":\"3145728\",\"pids\":8,"
	       "\"disk\":\"2097152\",\"timeout\":\"1000500us\",\"io_weight\":50,\"nofile\":64},"
	       "\"network\":{\"default\":\"allow\",\"rules\":[{\"destination\":\"10.0.0.0/8\","
	       "\"port\":22,\"action\":\"deny\"}],"
	       "\"resolve\":{\"a.x\":\"192.0.2.1\",\"b.x\":\"::1\"}},"
	       "\"audit\":\"logs/a.jsonl\",\"labels\":[\"b\",\"a\"]}");
}

/* network.idle_timeout: in milliseconds when set, left out when it is the default (60 s), so
 * that a policy that writes the default has the hash of one that does not; out of [1s, 1h], or
 * not a duration string, it is refused naming the field. */
static void test_idle_timeout_is_canonical_only_when_not_the_default(void **state)
{
	_cleanup_free_ char *set = test_canonical("{'network':{'idle_timeout':'1m30s'}}");
	_cleanup_free_ char *dflt = test_canonical("{'network':{'idle_timeout':'60s'}}");
	_cleanup_free_ char *none = test_canonical("{}");
	_cleanup_(policy_freep) struct policy *p = test_load("{'network':{'idle_timeout':'5s'}}");

	(void)state;
	assert_non_null(strstr(set, ",\"idle_timeout\":\"90000ms\"}"));
	assert_string_equal(dflt, none);
	assert_int_equal(p->network.idle_timeout_usec, 5000000);
	test_load_fails("{'network':{'idle_timeout':'500ms'}}", -EINVAL, "network.idle_timeout:");
	test_load_fails("{'network':{'idle_timeout':'2h'}}", -EINVAL, "network.idle_timeout:");
	test_load_fails("{'network':{'idle_timeout':'0s'}}", -EINVAL, "network.idle_timeout:");
	test_load_fails("{'network':{'idle_timeout':30}}", -EINVAL, "network.idle_timeout:");
	test_load_fails("{'network':{'idle_timeout':'soon'}}", -EINVAL, "network.idle_timeout:");
}

static void test_canonical_json_loads_back_to_itself(void **state)
{
	static const char *const policies[] = {
	    "{}",
	    "{'resources':{'timeout':'1h1us','cpu':'0.001'},'workspace':{'quota':1}}",
	    "{'env':{'NL':'a\\nb\\u0001\\\\\\/\\u00e9\\ud83d\\ude00','E':''}}",
	    ("{'credentials':[{'name':'s','source':{'type':'vault'},"
	     "'injection':{'type':'sidecar','header':'X-K','format':'t {}\\t\\\\'},"
	     "'hosts':['*.A.example']}]}"),
	    ("{'network':{'rules':[{'destination':'2001:DB8::/32','action':'allow'},"
	     "{'destination':'192.0.2.1/32','action':'allow','port':1}]}}"),
	    "{'network':{'idle_timeout':'2m30s'}}",
	};
	struct al_error err = {};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(policies) + 1; i++) {
		_cleanup_(policy_freep) struct policy *a = NULL, *b = NULL;
		_cleanup_free_ char *json = NULL, *c1 = NULL, *c2 = NULL;
		char h1[POLICY_HASH_HEX_SIZE], h2[POLICY_HASH_HEX_SIZE];

		json = i < ELEMENTSOF(policies) ? test_json(policies[i])
						: strdup(test_design_example());
		assert_non_null(json);
		assert_int_equal(policy_load_string(json, &a, &err), 0);
		assert_int_equal(policy_to_canonical_json(a, &c1), 0);
		assert_int_equal(policy_load_string(c1, &b, &err), 0);
		assert_int_equal(policy_to_canonical_json(b, &c2), 0);
		assert_string_equal(c1, c2);
		hash_hex_of(a, h1);
		hash_hex_of(b, h2);
		assert_string_equal(h1, h2);
	}
}

/* Pairs of policies that say the same thing in different words. */
static const struct {
	const char *behaviour, *a, *b;
} same_meaning[] = {
    {"key order does not matter", "{'tier':1,'seccomp':'strict'}", "{'seccomp':'strict','tier':1}"},
    {"whitespace does not matter", "{'tier':1}", " {\n\t'tier' :  1 }\n"},
    {"a size string equals its byte count", "{'resources':{'memory':'512Mi'}}",
     "{'resources':{'memory':536870912}}"},
    {"binary and decimal units meet in bytes", "{'workspace':{'quota':'1Ki'}}",
     "{'workspace':{'quota':'1.024k'}}"},
    {"cpu forms are equal", "{'resources':{'cpu':'1.0'}}", "{'resources':{'cpu':'1000m'}}"},
    {"cpu number equals cpu string", "{'resources':{'cpu':2}}", "{'resources':{'cpu':'2'}}"},
    {"durations in different units are equal", "{'resources':{'timeout':'300s'}}",
     "{'resources':{'timeout':'5m'}}"},
    {"explicit defaults equal absent fields",
     "{'tier':0,'seccomp':'restricted','isolation':[],'workspace':{'root':'.','mount':"
     "'/workspace','read':['**'],'write':['**'],'deny':[]},'resources':{'memory':'2Gi',"
     "'pids':1024,'disk':'512Mi','nofile':1024},'network':{'default':'deny','rules':[],"
     "'resolve':{}},'mounts':[],'env':{},'executables':[],'credentials':[],'labels':[]}",
     "{}"},
    {"the canonical version key changes nothing", "{'canonical':1}", "{}"},
    {"a zero quota is no quota", "{'workspace':{'quota':0}}", "{}"},
    {"env order does not matter", "{'env':{'A':'1','B':'2'}}", "{'env':{'B':'2','A':'1'}}"},
    {"resolve order does not matter", "{'network':{'resolve':{'a.x':'::1','b.x':'::2'}}}",
     "{'network':{'resolve':{'b.x':'::2','a.x':'::1'}}}"},
    {"host names ignore case",
     "{'network':{'rules':[{'destination':'A.Example',"
     "'action':'allow'}],'resolve':{'GIT.x':'0:0::1'}}}",
     "{'network':{'rules':[{'destination':'a.example','action':'allow'}],"
     "'resolve':{'git.x':'::1'}}}"},
    {"an address is its /32",
     "{'network':{'rules':[{'destination':'192.0.2.1',"
     "'action':'deny'}]}}",
     "{'network':{'rules':[{'destination':'192.0.2.1/32','action':'deny'}]}}"},
    {"paths are compared normalised",
     "{'mounts':[{'source':'/a//b/','target':'/t/./u'}],'workspace':{'root':'./x/'}}",
     "{'mounts':[{'source':'/a/b','target':'/t/u','mode':'ro'}],'workspace':{'root':'x'}}"},
    {"a vault key defaults to the name",
     "{'credentials':[{'name':'g','source':{'type':'vault'},"
     "'injection':{'type':'sidecar','header':'A'},'hosts':['g.x']}]}",
     "{'credentials':[{'name':'g','source':{'type':'vault','key':'g'},"
     "'injection':{'type':'sidecar','header':'A','format':'{}'},'hosts':['g.x'],"
     "'expose':false}]}"},
    {"container listed with process is container",
     "{'isolation':[{'type':'process'},"
     "{'type':'container'},{'type':'container'}]}",
     "{'isolation':[{'type':'container'}]}"},
    {"JSON escapes are the characters they stand for", "{'env':{'A':'\\u00e9\\/'}}",
     "{'env':{'A':'\xc3\xa9/'}}"},
};

static void test_meaning_preserving_rewrites_keep_the_hash(void **state)
{
	size_t failed = 0;

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(same_meaning); i++) {
		_cleanup_free_ char *a = test_canonical(same_meaning[i].a);
		_cleanup_free_ char *b = test_canonical(same_meaning[i].b);

		if (streq(a, b))
			continue;
		print_error("\"%s\":\n  %s\n  %s\n", same_meaning[i].behaviour, a, b);
		failed++;
	}
	assert_int_equal(failed, 0);
}

/* A base policy and changes of meaning to it, one top-level field at a time: each must change
 * the hash, and no two may collide. */
static const char base_policy[] = "{'id':'b','workspace':{'write':['src/**']},'env':{'A':'1'},"
				  "'credentials':[{'name':'g','source':{'type':'vault'},"
				  "'injection':{'type':'env_var','var_name':'T'},'hosts':['g.x']}],"
				  "'network':{'rules':[{'destination':'a.x','action':'allow'}]}}";

static const struct {
	const char *field, *value;
} changed_meaning[] = {
    {"tier", "1"},
    {"seccomp", "'strict'"},
    {"seccomp", "'baseline'"},
    {"isolation", "[{'type':'process'}]"},
    {"isolation", "[{'type':'network_policy'}]"},
    {"resources", "{'memory':'512Mi'}"},
    {"resources", "{'memory':'512M'}"},
    {"resources", "{'cpu':'1'}"},
    {"resources", "{'timeout':'1s'}"},
    {"resources", "{'timeout':'1001ms'}"},
    {"resources", "{'pids':1023}"},
    {"resources", "{'io_weight':100}"},
    {"resources", "{'nofile':1025}"},
    {"resources", "{'disk':'1Gi'}"},
    {"workspace", "{'write':['src/**','out/**']}"},
    {"workspace", "{'write':['out/**','src/**']}"}, /* the order of a list is kept */
    {"workspace", "{'write':['src/**'],'quota':'1Gi'}"},
    {"workspace", "{'write':['src/**'],'mount':'/ws'}"},
    {"workspace", "{'write':['src/**'],'root':'..'}"},
    {"workspace", "{'write':['src/**'],'deny':['.env']}"},
    {"workspace", "{'write':['src/**'],'read':[]}"},
    {"env", "{'A':'2'}"},
    {"env", "{'a':'1'}"},
    {"env", "{'A':'1','B':''}"},
    {"mounts", "[{'source':'/s','target':'/t'}]"},
    {"mounts", "[{'source':'/s','target':'/t','mode':'rw'}]"},
    {"executables", "['/bin/sh']"},
    {"audit", "'/log'"},
    {"labels", "['x']"},
    {"id", "'c'"},
    {"network", "{'default':'allow'}"},
    {"network", "{'rules':[{'destination':'a.x','action':'deny'}]}"},
    {"network", "{'rules':[{'destination':'a.x','action':'allow','port':443}]}"},
    {"network", "{'rules':[{'destination':'*.a.x','action':'allow'}]}"},
    {"network", "{'rules':[{'destination':'a.x','action':'allow'}],"
		"'resolve':{'a.x':'192.0.2.1'}}"},
    {"credentials", "[{'name':'g','source':{'type':'vault','key':'h'},"
		    "'injection':{'type':'env_var','var_name':'T'},'hosts':['g.x']}]"},
    {"credentials", "[{'name':'g','source':{'type':'vault'},"
		    "'injection':{'type':'env_var','var_name':'T'},'hosts':['g.x'],"
		    "'expose':true}]"},
    {"credentials", "[{'name':'g','source':{'type':'vault'},"
		    "'injection':{'type':'env_var','var_name':'U'},'hosts':['g.x']}]"},
    {"credentials", "[{'name':'g','source':{'type':'vault'},"
		    "'injection':{'type':'env_var','var_name':'T'},'hosts':['g.y']}]"},
    {"credentials", "[]"},
};

/* base_policy with field set to value. */
static char *with_field(const char *field, const char *value)
{
	_cleanup_free_ char *base = test_json(base_policy), *wrapped = NULL;
	_cleanup_json_ struct json_object *o = NULL, *w = NULL;
	struct json_object *v;
	char *s = NULL;

	/* The value goes through an object: a bare number is not a whole document to json-c. */
	assert_true(asprintf(&wrapped, "{'v':%s}", value) > 0);
	for (char *c = wrapped; *c; c++)
		if (*c == '\'')
			*c = '"';
	assert_int_equal(al_json_parse(base, strlen(base), 16, &o, NULL), 0);
	assert_int_equal(al_json_parse(wrapped, strlen(wrapped), 16, &w, NULL), 0);
	assert_true(json_object_object_get_ex(w, "v", &v));
	assert_int_equal(al_json_add(o, field, json_object_get(v)), 0);
	assert_int_equal(al_json_to_string(o, &s), 0);
	return s;
}

static void test_every_change_of_meaning_changes_the_hash(void **state)
{
	char hashes[ELEMENTSOF(changed_meaning) + 1][POLICY_HASH_HEX_SIZE];
	struct al_error err = {};

	(void)state;
	for (size_t i = 0; i <= ELEMENTSOF(changed_meaning); i++) {
		_cleanup_(policy_freep) struct policy *p = NULL;
		_cleanup_free_ char *json = NULL;

		/* The last one is the base policy itself. */
		if (i < ELEMENTSOF(changed_meaning))
			json = with_field(changed_meaning[i].field, changed_meaning[i].value);
		else
			json = test_json(base_policy);
		if (policy_load_string(json, &p, &err) < 0)
			fail_msg("%s: %s", json, err.msg);
		hash_hex_of(p, hashes[i]);
		for (size_t j = 0; j < i; j++)
			if (streq(hashes[i], hashes[j]))
				fail_msg("change %zu and %zu give the same hash: %s", j, i, json);
	}
}

static void test_overrides_show_in_the_hash(void **state)
{
	_cleanup_(policy_freep) struct policy *p = NULL;
	char before[POLICY_HASH_HEX_SIZE], after[POLICY_HASH_HEX_SIZE];
	struct al_error err = {};

	(void)state;
	assert_int_equal(policy_new_default(&p), 0);
	hash_hex_of(p, before);
	assert_int_equal(policy_add_allow(p, "api.example.com:443", &err), 0);
	hash_hex_of(p, after);
	assert_string_not_equal(before, after);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_default_canonical_form_is_pinned),
	    cmocka_unit_test(test_idle_timeout_is_canonical_only_when_not_the_default),
	    cmocka_unit_test(test_default_hash_is_pinned),
	    cmocka_unit_test(test_design_example_hash_is_pinned),
	    cmocka_unit_test(test_empty_policy_file_is_the_embedded_default),
	    cmocka_unit_test(test_hash_hex_is_the_lower_case_hash),
	    cmocka_unit_test(test_canonical_form_of_every_field),
	    cmocka_unit_test(test_canonical_json_loads_back_to_itself),
	    cmocka_unit_test(test_meaning_preserving_rewrites_keep_the_hash),
	    cmocka_unit_test(test_every_change_of_meaning_changes_the_hash),
	    cmocka_unit_test(test_overrides_show_in_the_hash),
	};

	return cmocka_run_group_tests_name("policy-canonical", tests, NULL, NULL);
}
