/* policy-admit.c: the admitted set's parser, policy_admitted_in(), and the tier a policy's
 * capabilities call for, policy_min_tier() / policy_effective_tier() (the table of
 * docs/SECURITY.md, "The tier of a policy"). */

#include <errno.h>

#include "tests/unit/policy/policy-test.h"

#define HASH_A "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define HASH_B "a3f1c2d4e5b60718293a4b5c6d7e8f90112233445566778899aabbccddeeff00"
#define HASH_C "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"

/* Whether hash is in text, for a set that must parse. */
static bool admitted_at(const char *text, const char *hash, const char *file, int line)
{
	struct al_error err = {};
	bool found = false;
	int r;

	r = policy_admitted_in(text, strlen(text), hash, &found, &err);
	if (r != 0) {
		print_error("policy_admitted_in(\"%s\") = %d: %s\n", text, r, err.msg);
		_fail(file, line);
	}
	return found;
}
#define admitted(text, hash) admitted_at((text), (hash), __FILE__, __LINE__)

/* Checks that the set is refused as malformed, naming the line ("line N is not a policy hash"). */
static void refused_at(const char *text, const char *prefix, const char *file, int line)
{
	struct al_error err = {};
	bool found = false;
	int r;

	r = policy_admitted_in(text, strlen(text), HASH_A, &found, &err);
	if (!test_error_matches(&err, r, -EINVAL, prefix)) {
		print_error("set: \"%s\"\n", text);
		_fail(file, line);
	}
}
#define refused(text, prefix) refused_at((text), (prefix), __FILE__, __LINE__)

static void test_admitted_hash_present_is_found(void **state)
{
	(void)state;
	assert_true(admitted(HASH_A "\n", HASH_A));
	assert_true(admitted(HASH_B "\n" HASH_A "\n" HASH_C "\n", HASH_A));
	/* The last line needs no newline. */
	assert_true(admitted(HASH_B "\n" HASH_A, HASH_A));
	/* Listed twice is still listed. */
	assert_true(admitted(HASH_A "\n" HASH_A "\n", HASH_A));
}

static void test_admitted_hash_absent_is_not_found(void **state)
{
	(void)state;
	assert_false(admitted(HASH_B "\n" HASH_C "\n", HASH_A));
	assert_false(admitted("", HASH_A));
	assert_false(admitted("\n", HASH_A));
}

static void test_admitted_comments_are_skipped(void **state)
{
	(void)state;
	assert_false(admitted("# " HASH_A "\n", HASH_A));
	assert_false(admitted("#" HASH_A "\n", HASH_A));
	assert_false(admitted("  \t# " HASH_A " indented\n", HASH_A));
	assert_true(admitted("# the operator's set\n" HASH_A " ci runner\n", HASH_A));
	assert_true(admitted(HASH_A "\tnightly # with a # inside\n", HASH_A));
	assert_true(admitted(HASH_A "  \n", HASH_A));
}

static void test_admitted_blank_lines_are_skipped(void **state)
{
	(void)state;
	assert_true(admitted("\n\n" HASH_B "\n\n\n" HASH_A "\n\n", HASH_A));
	assert_true(admitted(" \t \n\t\n" HASH_A "\n", HASH_A));
	/* Blanks before a hash are skipped too. */
	assert_true(admitted("  \t" HASH_A "\n", HASH_A));
}

static void test_admitted_malformed_line_is_refused_naming_its_line(void **state)
{
	(void)state;
	refused("not a hash\n", "line 1 is not a policy hash");
	refused("# comment\n\n" HASH_B "\nsha256:" HASH_A "\n", "line 4 is not a policy hash");
	refused(HASH_B "\n" HASH_A "0\n", "line 2 is not a policy hash");
	refused(HASH_B "\n\n\n\n\n\n\n\n\n\n\n" HASH_B "x\n", "line 12 is not a policy hash");
	refused(HASH_A "\r\n", "line 1 is not a policy hash");
	/* 63 digits, 65 digits. */
	refused("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n",
		"line 1 is not a policy hash");
	refused(HASH_A "0\n", "line 1 is not a policy hash");
}

static void test_admitted_malformed_line_refuses_the_set_even_after_a_match(void **state)
{
	(void)state;
	refused(HASH_A "\nnot a hash\n", "line 2 is not a policy hash");
}

static void test_admitted_hash_followed_directly_by_hash_sign_is_refused(void **state)
{
	(void)state;
	refused(HASH_A "# no blank before the comment\n", "line 1 is not a policy hash");
	refused(HASH_B "\n" HASH_A "#\n", "line 2 is not a policy hash");
}

static void test_admitted_uppercase_hex_is_refused(void **state)
{
	(void)state;
	refused("0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef\n",
		"line 1 is not a policy hash");
	refused("# fine\n0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdeF\n",
		"line 2 is not a policy hash");
}

static void test_admitted_reads_only_len_bytes(void **state)
{
	static const char text[] = HASH_A "\n" HASH_B "\nnot a hash\n";
	struct al_error err = {};
	bool found = false;

	(void)state;
	/* The malformed third line is past len. */
	assert_int_equal(policy_admitted_in(text, 2 * 65, HASH_B, &found, &err), 0);
	assert_true(found);
	/* A hash cut short by len is no hash. */
	assert_int_equal(policy_admitted_in(text, 63, HASH_A, &found, &err), -EINVAL);
	assert_string_equal(err.msg, "line 1 is not a policy hash (64 lower-case hex digits, then "
				     "an optional comment)");
	/* A NUL byte inside a line makes it malformed, it does not end the set. */
	assert_int_equal(policy_admitted_in(HASH_A "\0\n", 66, HASH_A, &found, &err), -EINVAL);
}

#define CRED(src, extra)                                                                           \
	"{'credentials':[{'name':'c','source':" src                                                \
	",'injection':{'type':'env_var','var_name':'C'},"                                          \
	"'hosts':['api.example.com']" extra "}]"
#define MOUNT(mode) "'mounts':[{'source':'/srv/data','target':'/opt/data','mode':'" mode "'}]"
#define EGRESS "'network':{'rules':[{'destination':'api.example.com','action':'allow'}]}"

/* One row of the table: a policy (declared tier 0 unless it says), the tier it calls for and the
 * field and the start of the reason that raise it (NULL: nothing does). */
static const struct tier_case {
	const char *name;
	const char *json;
	int tier;
	const char *field;
	const char *why;
} tier_cases[] = {
    {"the default (an empty policy) is tier 0", "{}", 0, NULL, NULL},
    {"workspace, env, executables, limits stay tier 0",
     "{'workspace':{'root':'/srv/ws','write':['**']},'env':{'A':'1'},'executables':['/usr/bin/"
     "python3'],'resources':{'memory':'max','pids':'max'},'isolation':[{'type':'process'}],"
     "'seccomp':'strict'}",
     0, NULL, NULL},
    {"a command source is tier 4", CRED("{'type':'command','command':['/bin/id']}", "") "}", 4,
     "credentials[0].source", "a command source"},
    {"a file source is tier 3", CRED("{'type':'file','path':'/root/.ssh/id_ed25519'}", "") "}", 3,
     "credentials[0].source", "a file source"},
    {"a keyring source is tier 3", CRED("{'type':'keyring','key':'k'}", "") "}", 3,
     "credentials[0].source", "a keyring source"},
    {"an env source is tier 2", CRED("{'type':'env','var':'TOKEN'}", "") "}", 2,
     "credentials[0].source", "an env source"},
    {"a vault source is tier 2", CRED("{'type':'vault'}", "") "}", 2, "credentials[0].source",
     "a vault source"},
    {"an exposed credential is tier 3", CRED("{'type':'vault'}", ",'expose':true") "}", 3,
     "credentials[0].expose", "an exposed credential"},
    {"a command source outranks expose",
     CRED("{'type':'command','command':['/bin/id']}", ",'expose':true") "}", 4,
     "credentials[0].source", "a command source"},
    {"a writable host folder is tier 3", "{" MOUNT("rw") "}", 3, "mounts[0]",
     "a writable host folder"},
    /* A read-only bind stops no connect() to a socket in it (e.g. /run/dbus, a docker.sock). */
    {"a read-only host folder is tier 3", "{" MOUNT("ro") "}", 3, "mounts[0]",
     "a host folder (read-only stops no connect()"},
    {"a read-only folder of /usr (which every sandbox sees) is tier 0",
     "{'mounts':[{'source':'/usr/share/doc','target':'/opt/doc','mode':'ro'}]}", 0, NULL, NULL},
    {"an audit file is tier 3", "{'audit':'/var/log/airlock/a.jsonl'}", 3, "audit",
     "an audit file on the host"},
    {"all egress is tier 3", "{'network':{'default':'allow'}}", 3, "network.default",
     "allowing all egress"},
    {"a rule allowing every address is tier 3",
     "{'network':{'rules':[{'destination':'0.0.0.0/0','action':'allow'}]}}", 3, "network.rules[0]",
     "a rule allowing a wide part"},
    /* Two halves are the whole: any range wider than a /8 (IPv6: a /16) is tier 3. */
    {"two /1 rules are tier 3",
     "{'network':{'rules':[{'destination':'0.0.0.0/1','action':'allow'},"
     "{'destination':'128.0.0.0/1','action':'allow'}]}}",
     3, "network.rules[0]", "a rule allowing a wide part"},
    /* Together too: what the allow rules cover at once, each address counted once. */
    {"two /8 rules together are tier 3",
     "{'network':{'rules':[{'destination':'10.0.0.0/8','action':'allow'},"
     "{'destination':'11.0.0.0/8','action':'allow'}]}}",
     3, "network.rules", "rules allowing together a wide part"},
    {"a /8 repeated on other ports, and a /16 within it, stay tier 2",
     "{'network':{'rules':[{'destination':'10.0.0.0/8','action':'allow','port':80},"
     "{'destination':'10.0.0.0/8','action':'allow','port':443},"
     "{'destination':'10.1.0.0/16','action':'allow'},"
     "{'destination':'11.0.0.0/8','action':'deny'}]}}",
     2, "network.rules[0]", "egress"},
    {"two IPv6 /16 rules together are tier 3",
     "{'network':{'rules':[{'destination':'2001::/16','action':'allow'},"
     "{'destination':'2002::/16','action':'allow'}]}}",
     3, "network.rules", "rules allowing together a wide part"},
    {"two IPv6 /17 rules (a /16) stay tier 2",
     "{'network':{'rules':[{'destination':'2001::/17','action':'allow'},"
     "{'destination':'2001:8000::/17','action':'allow'}]}}",
     2, "network.rules[0]", "egress"},
    {"a wide IPv6 range is tier 3",
     "{'network':{'rules':[{'destination':'2000::/3','action':'allow'}]}}", 3, "network.rules[0]",
     "a rule allowing a wide part"},
    {"a private /8 is tier 2",
     "{'network':{'rules':[{'destination':'10.0.0.0/8','action':'allow'}]}}", 2, "network.rules[0]",
     "egress"},
    {"a whole top-level domain is tier 3",
     "{'network':{'rules':[{'destination':'*.com','action':'allow'}]}}", 3, "network.rules[0]",
     "a rule allowing a wide part"},
    {"a wildcard below a domain is tier 2",
     "{'network':{'rules':[{'destination':'*.pypi.org','action':'allow'}]}}", 2, "network.rules[0]",
     "egress"},
    {"egress to named hosts is tier 2", "{" EGRESS "}", 2, "network.rules[0]", "egress"},
    {"deny rules alone are tier 0",
     "{'network':{'rules':[{'destination':'10.0.0.0/8','action':'deny'}]}}", 0, NULL, NULL},
    {"pinned names are tier 2", "{'network':{'resolve':{'git.internal':'192.0.2.10'}}}", 2,
     "network.resolve", "pinned names"},
    {"the baseline seccomp level is tier 2", "{'seccomp':'baseline'}", 2, "seccomp",
     "the baseline seccomp level"},
    {"lifting the workspace's protection is tier 4", "{'workspace':{'protect':false}}", 4,
     "workspace.protect", "lifting the workspace's protected entries"},
    {"keeping the workspace's protection is tier 0", "{'workspace':{'protect':true}}", 0, NULL,
     NULL},
    {"the first field of the highest tier is named",
     "{'mounts':[{'source':'/usr/a','target':'/a','mode':'ro'},"
     "{'source':'/b','target':'/b','mode':'rw'},{'source':'/c','target':'/c','mode':'rw'}]}",
     3, "mounts[1]", "a writable host folder"},
};

static void test_min_tier_follows_the_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(tier_cases) / sizeof(tier_cases[0]); i++) {
		const struct tier_case *c = &tier_cases[i];
		_cleanup_free_ char *json = test_json(c->json);
		_cleanup_(policy_freep) struct policy *p = NULL;
		struct policy_tier_reason why;
		struct al_error err = {};
		int tier;

		if (policy_load_string(json, &p, &err) < 0) {
			print_error("%s: %s: %s\n", c->name, json, err.msg);
			fail();
		}
		tier = policy_min_tier(p, &why);
		if (tier != c->tier ||
		    (c->why ? !why.why || strncmp(why.why, c->why, strlen(c->why)) ||
				  strcmp(why.field, c->field)
			    : why.why || why.field[0])) {
			print_error("%s: tier %d (%s: %s), expected %d (%s: %s)\n", c->name, tier,
				    why.field, why.why ? why.why : "-", c->tier,
				    c->field ? c->field : "", c->why ? c->why : "-");
			fail();
		}
	}
}

static void test_min_tier_of_the_embedded_default_is_below_admission(void **state)
{
	_cleanup_(policy_freep) struct policy *p = NULL;

	(void)state;
	assert_int_equal(policy_new_default(&p), 0);
	assert_int_equal(policy_min_tier(p, NULL), 0);
	assert_int_equal(policy_effective_tier(p, NULL), 0);
}

static void test_effective_tier_is_the_higher_of_declared_and_derived(void **state)
{
	_cleanup_free_ char *low = test_json(
				CRED("{'type':'command','command':['/bin/id']}", "") ",'tier':1}"),
			    *high = test_json("{'tier':4," MOUNT("rw") "}");
	_cleanup_(policy_freep) struct policy *p = NULL, *q = NULL;
	struct policy_tier_reason why;

	(void)state;
	assert_int_equal(policy_load_string(low, &p, NULL), 0);
	assert_int_equal(policy_effective_tier(p, &why), 4);
	assert_string_equal(why.field, "credentials[0].source");
	/* Declared higher than derived: the declared tier, and nothing raised it. */
	assert_int_equal(policy_load_string(high, &q, NULL), 0);
	assert_int_equal(policy_effective_tier(q, &why), 4);
	assert_null(why.why);
	assert_string_equal(why.field, "");
}

static void test_check_admitted_refuses_a_low_declared_tier_naming_the_field(void **state)
{
	_cleanup_free_ char *json = test_json("{'tier':1,'network':{'default':'allow'}}");
	_cleanup_(policy_freep) struct policy *p = NULL;
	char hash[POLICY_HASH_HEX_SIZE];
	struct al_error err = {};

	(void)state;
	assert_int_equal(policy_load_string(json, &p, NULL), 0);
	assert_int_equal(policy_hash_hex(p, hash), 0);
	assert_int_equal(policy_check_admitted(p, "/nonexistent/airlock-admitted", &err), -EPERM);
	assert_non_null(strstr(err.msg, "network.default: allowing all egress makes this a tier 3 "
					"policy; its hash "));
	assert_non_null(strstr(err.msg, hash));
	assert_non_null(strstr(err.msg, "is not admitted"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_admitted_hash_present_is_found),
	    cmocka_unit_test(test_admitted_hash_absent_is_not_found),
	    cmocka_unit_test(test_admitted_comments_are_skipped),
	    cmocka_unit_test(test_admitted_blank_lines_are_skipped),
	    cmocka_unit_test(test_admitted_malformed_line_is_refused_naming_its_line),
	    cmocka_unit_test(test_admitted_malformed_line_refuses_the_set_even_after_a_match),
	    cmocka_unit_test(test_admitted_hash_followed_directly_by_hash_sign_is_refused),
	    cmocka_unit_test(test_admitted_uppercase_hex_is_refused),
	    cmocka_unit_test(test_admitted_reads_only_len_bytes),
	    cmocka_unit_test(test_min_tier_follows_the_table),
	    cmocka_unit_test(test_min_tier_of_the_embedded_default_is_below_admission),
	    cmocka_unit_test(test_effective_tier_is_the_higher_of_declared_and_derived),
	    cmocka_unit_test(test_check_admitted_refuses_a_low_declared_tier_naming_the_field),
	};

	return cmocka_run_group_tests_name("policy-admit", tests, NULL, NULL);
}
