/* tests/unit/netns/test-rules.c: what the policy's network rules say about a connection. */

#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "common/macro.h"
#include "netns/netns-internal.h"
#include "policy/policy.h"

static struct policy *load(const char *network)
{
	char json[2048];
	struct policy *p = NULL;
	struct al_error err = {0};

	(void)snprintf(json, sizeof(json), "{\"network\": %s}", network);
	if (policy_load_string(json, &p, &err) < 0)
		fail_msg("%s", err.msg);
	return p;
}

static bool addr_allowed(const struct policy *p, const char *name, const char *ip, uint16_t port)
{
	uint8_t a[16];
	int family = strchr(ip, ':') ? AF_INET6 : AF_INET;
	struct netns_verdict v;

	assert_int_equal(inet_pton(family, ip, a), 1);
	netns_decide_addr(p, name, family, a, port, &v);
	return v.allow;
}

static bool name_allowed(const struct policy *p, const char *name, uint16_t port)
{
	struct netns_verdict v;

	netns_decide_name(p, name, port, &v);
	return v.allow;
}

static void test_first_matching_rule_decides_a_name(void **state)
{
	_cleanup_(policy_freep) struct policy *p =
	    load("{\"default\": \"deny\", \"rules\": ["
		 "{\"destination\": \"evil.pypi.org\", \"action\": \"deny\"},"
		 "{\"destination\": \"*.pypi.org\", \"action\": \"allow\"},"
		 "{\"destination\": \"api.github.com\", \"port\": 8443, \"action\": \"allow\"}]}");

	(void)state;
	assert_true(name_allowed(p, "files.pypi.org", 443));
	assert_true(name_allowed(p, "files.pypi.org", 80));
	assert_false(name_allowed(p, "files.pypi.org", 22)); /* no port: 80 and 443 only */
	assert_false(name_allowed(p, "pypi.org", 443));	     /* *.x is not x */
	assert_false(name_allowed(p, "evil.pypi.org", 443)); /* the earlier deny */
	assert_true(name_allowed(p, "api.github.com", 8443));
	assert_false(name_allowed(p, "api.github.com", 443));
	assert_false(name_allowed(p, "example.com", 443)); /* default deny */
}

static void test_default_allow_lets_other_names_through(void **state)
{
	_cleanup_(policy_freep) struct policy *p =
	    load("{\"default\": \"allow\", \"rules\": [{\"destination\": \"x.example\", "
		 "\"action\": \"deny\"}]}");

	(void)state;
	assert_true(name_allowed(p, "example.com", 443));
	assert_false(name_allowed(p, "x.example", 443));
	/* A deny without a port closes the host, not only its web ports. */
	assert_false(name_allowed(p, "x.example", 22));
	assert_false(name_allowed(p, "x.example", 8080));
	assert_false(netns_name_may_connect(p, "x.example"));
	assert_true(netns_name_may_connect(p, "example.com"));
}

static void test_raw_addresses_need_a_cidr_rule(void **state)
{
	_cleanup_(policy_freep) struct policy *p =
	    load("{\"default\": \"allow\", \"rules\": ["
		 "{\"destination\": \"203.0.113.0/24\", \"port\": 443, \"action\": \"deny\"},"
		 "{\"destination\": \"203.0.113.0/24\", \"port\": 8080, \"action\": \"allow\"}]}");

	(void)state;
	assert_false(addr_allowed(p, NULL, "198.51.100.7", 443)); /* even with default allow */
	assert_true(addr_allowed(p, NULL, "203.0.113.9", 8080));
	assert_false(addr_allowed(p, NULL, "203.0.113.9", 443));
	/* A deny CIDR refuses an allowed name's address too. */
	assert_false(addr_allowed(p, "cdn.example", "203.0.113.9", 443));
	assert_true(addr_allowed(p, "cdn.example", "198.51.100.7", 443));
}

static void test_special_ranges_are_refused_unless_named(void **state)
{
	_cleanup_(policy_freep) struct policy *open = load(
	    "{\"default\": \"allow\", \"rules\": [{\"destination\": \"0.0.0.0/0\", \"port\": 80,"
	    " \"action\": \"allow\"}]}");
	_cleanup_(policy_freep) struct policy *named =
	    load("{\"default\": \"deny\", \"rules\": ["
		 "{\"destination\": \"git.internal\", \"action\": \"allow\"},"
		 "{\"destination\": \"10.1.0.0/16\", \"action\": \"allow\"}],"
		 " \"resolve\": {\"git.internal\": \"10.1.2.3\"}}");
	static const char *const specials[] = {
	    "127.0.0.1",   "10.1.2.3",	 "172.16.0.1", "192.168.1.1",	 "169.254.169.254",
	    "169.254.1.1", "100.64.0.1", "0.0.0.0",    "224.0.0.1",	 "198.18.0.5",
	    "::1",	   "fe80::1",	 "fd00::1",    "::ffff:10.0.0.1"};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(specials); i++) {
		assert_false(addr_allowed(open, NULL, specials[i], 80));
		assert_false(addr_allowed(open, "a.example", specials[i], 80));
	}
	assert_string_equal(netns_addr_special(AF_INET, (const uint8_t[]){169, 254, 169, 254}),
			    "metadata service");
	assert_null(netns_addr_special(AF_INET, (const uint8_t[]){203, 0, 113, 1}));
	/* A rule naming the range opens it, for that range only. */
	assert_true(addr_allowed(named, "git.internal", "10.1.2.3", 443));
	assert_true(addr_allowed(named, NULL, "10.1.200.1", 443));
	assert_false(addr_allowed(named, NULL, "10.2.0.1", 443));
	assert_false(addr_allowed(named, "git.internal", "127.0.0.1", 443));
}

static void test_addresses_written_as_names_are_not_names(void **state)
{
	_cleanup_(policy_freep) struct policy *p = load("{\"default\": \"allow\", \"rules\": ["
							"{\"destination\": \"*.test\", "
							"\"action\": \"allow\"}]}");

	(void)state;
	assert_true(name_allowed(p, "api.test", 443));
	assert_true(name_allowed(p, "example.org", 443));
	/* Every form the host's resolver takes for an address. */
	assert_false(name_allowed(p, "93.184.216.34", 443));
	assert_false(name_allowed(p, "1572395042", 443));
	assert_false(name_allowed(p, "0x5d.0xb8.0xd8.0x22", 443));
	assert_false(name_allowed(p, "2001:db8::1", 443));
	assert_false(netns_name_may_connect(p, "93.184.216.34"));
}

static void test_ipv6_ranges_reaching_ipv4_or_metadata_are_special(void **state)
{
	_cleanup_(policy_freep) struct policy *p = load("{\"default\": \"allow\"}");
	uint8_t a[16];

	(void)state;
	assert_false(addr_allowed(p, "a.test", "64:ff9b::a9fe:a9fe", 80));
	assert_false(addr_allowed(p, "a.test", "64:ff9b:1::a00:1", 80));
	assert_false(addr_allowed(p, "a.test", "2002:a00:1::1", 80));
	assert_false(addr_allowed(p, "a.test", "fec0::1", 80));
	assert_int_equal(inet_pton(AF_INET6, "fd00:ec2::254", a), 1);
	assert_string_equal(netns_addr_special(AF_INET6, a), "metadata service");
	/* IPv4-compatible and IPv4-translated (SIIT) forms: the rest of ::/8. */
	assert_false(addr_allowed(p, "a.test", "::127.0.0.1", 80));
	assert_false(addr_allowed(p, "a.test", "::7f00:1", 80));
	assert_false(addr_allowed(p, "a.test", "::ffff:0:7f00:1", 80));
	assert_false(addr_allowed(p, "a.test", "::a9fe:a9fe", 80));
	assert_int_equal(inet_pton(AF_INET6, "::1", a), 1);
	assert_string_equal(netns_addr_special(AF_INET6, a), "loopback");
	assert_int_equal(inet_pton(AF_INET6, "::ffff:127.0.0.1", a), 1);
	assert_string_equal(netns_addr_special(AF_INET6, a), "IPv4-mapped");
	assert_true(addr_allowed(p, "a.test", "2606:4700::1111", 80));
}

static void test_dns_answers_only_names_some_port_lets_through(void **state)
{
	_cleanup_(policy_freep) struct policy *p =
	    load("{\"default\": \"deny\", \"rules\": ["
		 "{\"destination\": \"ssh.example\", \"port\": 22, \"action\": \"allow\"},"
		 "{\"destination\": \"*.blocked.example\", \"action\": \"deny\"},"
		 "{\"destination\": \"*.example\", \"action\": \"allow\"}]}");
	_cleanup_(policy_freep) struct policy *deflt =
	    load("{\"default\": \"allow\", \"rules\": [{\"destination\": \"gone.example\","
		 " \"port\": 443, \"action\": \"deny\"}]}");

	(void)state;
	assert_true(netns_name_may_connect(p, "ssh.example"));
	assert_true(netns_name_may_connect(p, "www.example"));
	assert_false(netns_name_may_connect(p, "a.blocked.example"));
	assert_false(netns_name_may_connect(p, "example.org"));
	assert_true(netns_name_may_connect(deflt, "gone.example")); /* port 80 is open */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_first_matching_rule_decides_a_name),
	    cmocka_unit_test(test_default_allow_lets_other_names_through),
	    cmocka_unit_test(test_raw_addresses_need_a_cidr_rule),
	    cmocka_unit_test(test_special_ranges_are_refused_unless_named),
	    cmocka_unit_test(test_dns_answers_only_names_some_port_lets_through),
	    cmocka_unit_test(test_addresses_written_as_names_are_not_names),
	    cmocka_unit_test(test_ipv6_ranges_reaching_ipv4_or_metadata_are_special),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
