/* policy-value.c: the value checkers shared by the file parser and the overrides. */

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include "policy/policy-internal.h"
#include "tests/unit/policy/policy-test.h"

static void test_where_formats_keys_indexes_and_odd_keys(void **state)
{
	const struct policy_where creds = POLICY_WHERE_KEY(NULL, "credentials");
	const struct policy_where one = POLICY_WHERE_INDEX(&creds, 1);
	const struct policy_where hosts = POLICY_WHERE_KEY(&one, "hosts");
	const struct policy_where first = POLICY_WHERE_INDEX(&hosts, 0);
	const struct policy_where env = POLICY_WHERE_KEY(NULL, "env");
	const struct policy_where odd = POLICY_WHERE_KEY(&env, "a.b \"c\"");
	const struct policy_where flag = POLICY_WHERE_KEY(NULL, "--memory");
	char buf[128];

	(void)state;
	policy_where_format(&first, buf, sizeof(buf));
	assert_string_equal(buf, "credentials[1].hosts[0]");
	policy_where_format(&odd, buf, sizeof(buf));
	assert_string_equal(buf, "env[\"a.b \\\"c\\\"\"]");
	policy_where_format(&flag, buf, sizeof(buf));
	assert_string_equal(buf, "--memory");
	policy_where_format(NULL, buf, sizeof(buf));
	assert_string_equal(buf, "");
	/* Cut short, never overflowing. */
	policy_where_format(&first, buf, 10);
	assert_string_equal(buf, "credentia");
}

static void test_error_starts_with_where(void **state)
{
	const struct policy_where w = POLICY_WHERE_KEY(NULL, "tier");
	struct al_error err = {};

	(void)state;
	assert_int_equal(policy_error(&err, -EINVAL, &w, "bad %d", 5), -EINVAL);
	assert_string_equal(err.msg, "tier: bad 5");
	assert_int_equal(err.code, -EINVAL);
	assert_int_equal(policy_error(&err, -EIO, NULL, "whole document"), -EIO);
	assert_string_equal(err.msg, "whole document");
	assert_int_equal(policy_error(NULL, -EINVAL, &w, "nobody listens"), -EINVAL);
}

static void test_quote_escapes_and_cuts(void **state)
{
	char long_s[200];

	(void)state;
	assert_string_equal(QUOTE("plain"), "\"plain\"");
	assert_string_equal(QUOTE("a\"b\\c"), "\"a\\\"b\\\\c\"");
	assert_string_equal(QUOTE("\x1b[2J\n\xc3\xa9"), "\"\\x1b[2J\\x0a\\xc3\\xa9\"");
	memset(long_s, 'x', sizeof(long_s) - 1);
	long_s[sizeof(long_s) - 1] = '\0';
	assert_int_equal(strlen(QUOTE(long_s)), AL_QUOTE_CHARS + 2 + 3);
	assert_string_equal(QUOTE(long_s) + AL_QUOTE_CHARS + 1, "\"...");
}

static void test_utf8_validation_follows_rfc3629(void **state)
{
	static const char *const valid[] = {
	    "", "ascii", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xf4\x8f\xbf\xbf",
	};
	static const char *const invalid[] = {
	    "\x80",		/* lone continuation byte */
	    "\xc3",		/* truncated */
	    "\xc0\xaf",		/* overlong "/" */
	    "\xe0\x80\xaf",	/* overlong */
	    "\xed\xa0\x80",	/* UTF-16 surrogate */
	    "\xf4\x90\x80\x80", /* above U+10FFFF */
	    "\xf5\x80\x80\x80",
	    "\xff",
	    "\xe2\x28\xa1",
	};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(valid); i++)
		assert_true(policy_utf8_is_valid(valid[i], strlen(valid[i])));
	for (size_t i = 0; i < ELEMENTSOF(invalid); i++)
		assert_false(policy_utf8_is_valid(invalid[i], strlen(invalid[i])));
}

static void test_path_is_normalised(void **state)
{
	static const struct {
		const char *in;
		unsigned flags;
		const char *out;
	} cases[] = {
	    {"/a//b/", POLICY_PATH_ABSOLUTE, "/a/b"},
	    {"/a/./b/.", POLICY_PATH_ABSOLUTE, "/a/b"},
	    {"//", POLICY_PATH_ABSOLUTE, "/"},
	    {".", 0, "."},
	    {"./", 0, "."},
	    {"./a/", 0, "a"},
	    {"../a/./..", POLICY_PATH_ALLOW_DOTDOT, "../a/.."},
	    {"/opt/tools", POLICY_PATH_SANDBOX, "/opt/tools"},
	    {"/processes", POLICY_PATH_SANDBOX, "/processes"}, /* not /proc */
	    {"/devices/x", POLICY_PATH_SANDBOX, "/devices/x"},
	};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		_cleanup_free_ char *out = NULL;
		struct al_error err = {};

		assert_int_equal(
		    policy_normalize_path(NULL, cases[i].in, cases[i].flags, &out, &err), 0);
		assert_string_equal(out, cases[i].out);
	}
}

static void test_path_refusal_names_the_reason(void **state)
{
	static const struct {
		const char *in;
		unsigned flags;
		const char *message;
	} cases[] = {
	    {"", 0, "the path is empty"},
	    {"a\x7f", 0, "\"a\\x7f\" contains a control character"},
	    {"rel", POLICY_PATH_ABSOLUTE, "\"rel\" is not an absolute path"},
	    {"rel", POLICY_PATH_SANDBOX, "\"rel\" is not an absolute path"},
	    {"/a/../b", POLICY_PATH_ABSOLUTE, "\"/a/../b\" has a \"..\" component"},
	    {"..", 0, "\"..\" has a \"..\" component"},
	    {"/./", POLICY_PATH_NOT_ROOT, "\"/./\" is the root folder, not a file"},
	    {"/", POLICY_PATH_SANDBOX, "\"/\" is the root of the sandbox"},
	    {"/proc", POLICY_PATH_SANDBOX, "\"/proc\" is inside /proc, which airlock manages"},
	    {"/dev//pts", POLICY_PATH_SANDBOX,
	     "\"/dev//pts\" is inside /dev, which airlock manages"},
	    {"/sys/", POLICY_PATH_SANDBOX, "\"/sys/\" is inside /sys, which airlock manages"},
	};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		char *out = NULL;
		struct al_error err = {};

		assert_int_equal(
		    policy_normalize_path(NULL, cases[i].in, cases[i].flags, &out, &err), -EINVAL);
		assert_null(out);
		assert_string_equal(err.msg, cases[i].message);
	}
}

static void test_glob_is_relative_without_dot_or_empty_components(void **state)
{
	static const char *const good[] = {
	    "**", "*", "src/**", "**/.env", ".git/config", "a?c/*.py", ".github", "[ab]", "a b",
	};
	static const char *const bad[] = {
	    "", "/abs", "a//b", "a/", "./a", "a/./b", "..", "a/..", "a**", "**b/c", "a/***", "a\tb",
	};
	struct al_error err = {};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(good); i++)
		assert_int_equal(policy_check_glob(NULL, good[i], &err), 0);
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		if (policy_check_glob(NULL, bad[i], &err) != -EINVAL)
			fail_msg("glob \"%s\" was accepted", bad[i]);
	}
}

static void test_env_name_is_an_identifier_and_not_a_loader_variable(void **state)
{
	static const char *const good[] = {"A", "_", "a_b", "PATH", "TMPDIR", "HOME", "X1", "LDX"};
	static const char *const bad[] = {"", "1A", "A-B", "A B", "A=B", "Ä"};
	static const char *const loader[] = {
	    "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT",       "LD_",	      "MALLOC_CHECK_",
	    "GCONV_PATH", "GETCONF_DIR",     "GLIBC_TUNABLES", "HOSTALIASES", "LOCALDOMAIN",
	    "LOCPATH",	  "NIS_PATH",	     "NLSPATH",	       "RES_OPTIONS", "RESOLV_HOST_CONF",
	};
	char long_name[POLICY_ENV_NAME_MAX + 2];
	struct al_error err = {};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(good); i++)
		assert_int_equal(policy_check_env_name(NULL, good[i], &err), 0);
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		assert_false(policy_env_name_is_valid(bad[i]));
		assert_int_equal(policy_check_env_name(NULL, bad[i], &err), -EINVAL);
	}
	for (size_t i = 0; i < ELEMENTSOF(loader); i++) {
		assert_true(policy_env_name_is_valid(loader[i]));
		assert_int_equal(policy_check_env_name(NULL, loader[i], &err), -EINVAL);
		assert_non_null(strstr(err.msg, "is refused"));
	}
	memset(long_name, 'A', sizeof(long_name));
	long_name[POLICY_ENV_NAME_MAX] = '\0';
	assert_true(policy_env_name_is_valid(long_name));
	long_name[POLICY_ENV_NAME_MAX] = 'A';
	long_name[POLICY_ENV_NAME_MAX + 1] = '\0';
	assert_false(policy_env_name_is_valid(long_name));
}

static void test_host_name_follows_rfc1123_and_is_lower_cased(void **state)
{
	static const struct {
		const char *in, *out;
	} good[] = {
	    {"localhost", "localhost"},
	    {"API.GitHub.COM", "api.github.com"},
	    {"a-b.c-d.example", "a-b.c-d.example"},
	    {"1.2.3.example", "1.2.3.example"},
	    {"123abc", "123abc"},
	    {"xn--bcher-kva.example", "xn--bcher-kva.example"},
	};
	static const char *const bad[] = {
	    "",		  ".",		 "a.",		".a",	       "a..b",
	    "-a.example", "a-.example",	 "a_b.example", "a b",	       "1.2.3.4",
	    "1.2.3",	  "example.123", "*.example",	"ex*mple.com", "\xc3\xa9.example",
	};
	char label64[80], long_host[300];
	struct al_error err = {};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(good); i++) {
		_cleanup_free_ char *out = NULL;

		assert_int_equal(policy_normalize_host(NULL, good[i].in, &out, &err), 0);
		assert_string_equal(out, good[i].out);
	}
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		char *out = NULL;

		if (policy_normalize_host(NULL, bad[i], &out, &err) != -EINVAL)
			fail_msg("host name \"%s\" was accepted", bad[i]);
		assert_null(out);
	}
	/* A label holds 63 bytes, a name 253. */
	memset(label64, 'a', 64);
	strcpy(label64 + 64, ".example");
	assert_int_equal(policy_normalize_host(NULL, label64, &(char *){NULL}, &err), -EINVAL);
	for (size_t i = 0; i < 254; i += 2)
		memcpy(long_host + i, "a.", 2);
	long_host[253] = '\0'; /* 127 labels "a", 253 bytes */
	{
		_cleanup_free_ char *out = NULL;

		assert_int_equal(policy_normalize_host(NULL, long_host, &out, &err), 0);
	}
	long_host[253] = 'b';
	long_host[254] = '\0';
	assert_int_equal(policy_normalize_host(NULL, long_host, &(char *){NULL}, &err), -EINVAL);
}

static void test_host_pattern_is_a_name_or_star_dot_suffix(void **state)
{
	_cleanup_free_ char *a = NULL, *b = NULL;
	struct al_error err = {};
	bool wildcard = false;

	(void)state;
	assert_int_equal(policy_normalize_host_pattern(NULL, "*.PyPI.org", &wildcard, &a, &err), 0);
	assert_string_equal(a, "*.pypi.org");
	assert_true(wildcard);
	assert_int_equal(policy_normalize_host_pattern(NULL, "pypi.org", &wildcard, &b, &err), 0);
	assert_false(wildcard);
	assert_int_equal(policy_normalize_host_pattern(NULL, "*", NULL, &(char *){NULL}, &err),
			 -EINVAL);
	assert_int_equal(policy_normalize_host_pattern(NULL, "*.", NULL, &(char *){NULL}, &err),
			 -EINVAL);
	assert_int_equal(
	    policy_normalize_host_pattern(NULL, "*.*.org", NULL, &(char *){NULL}, &err), -EINVAL);
	assert_int_equal(
	    policy_normalize_host_pattern(NULL, "*pypi.org", NULL, &(char *){NULL}, &err), -EINVAL);
}

static void test_ip_literals_are_normalised(void **state)
{
	static const struct {
		const char *in, *out;
	} good[] = {
	    {"192.0.2.1", "192.0.2.1"},
	    {"2001:DB8:0:0:0:0:0:1", "2001:db8::1"},
	    {"::1", "::1"},
	    {"::", "::"},
	};
	static const char *const bad[] = {
	    "",		  "192.0.2",	  "192.0.2.256", "01.2.3.4",	"0x7f.0.0.1",
	    "1.2.3.4/32", "fe80::1%eth0", "[::1]",	 "example.com", "::ffff:192.0.2.1",
	};
	struct al_error err = {};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(good); i++) {
		_cleanup_free_ char *out = NULL;

		assert_int_equal(policy_normalize_ip(NULL, good[i].in, &out, &err), 0);
		assert_string_equal(out, good[i].out);
	}
	for (size_t i = 0; i < ELEMENTSOF(bad); i++)
		if (policy_normalize_ip(NULL, bad[i], &(char *){NULL}, &err) != -EINVAL)
			fail_msg("IP \"%s\" was accepted", bad[i]);
}

static void test_destinations_are_classified(void **state)
{
	static const struct {
		const char *in, *out;
		enum policy_dest_kind kind;
		int family, prefix;
	} cases[] = {
	    {"Example.COM", "example.com", POLICY_DEST_HOST, 0, 0},
	    {"*.example.com", "*.example.com", POLICY_DEST_WILDCARD, 0, 0},
	    {"192.0.2.1", "192.0.2.1", POLICY_DEST_CIDR, AF_INET, 32},
	    {"192.0.2.1/32", "192.0.2.1", POLICY_DEST_CIDR, AF_INET, 32},
	    {"10.0.0.0/8", "10.0.0.0/8", POLICY_DEST_CIDR, AF_INET, 8},
	    {"0.0.0.0/0", "0.0.0.0/0", POLICY_DEST_CIDR, AF_INET, 0},
	    {"2001:db8::/32", "2001:db8::/32", POLICY_DEST_CIDR, AF_INET6, 32},
	    {"::1", "::1", POLICY_DEST_CIDR, AF_INET6, 128},
	    {"::/0", "::/0", POLICY_DEST_CIDR, AF_INET6, 0},
	};
	static const char *const bad[] = {
	    "",		"10.0.0.0/",   "10.0.0.0/-1",  "10.0.0.0/+8", "10.0.0.1/31",
	    "::1/129",	"a.example/8", "10.0.0.0/8/8", "1.2.3",	      "*.10.0.0.1",
	    "exa mple",
	};
	struct al_error err = {};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct policy_net_rule rule = {};

		assert_int_equal(policy_parse_destination(NULL, cases[i].in, &rule, &err), 0);
		assert_string_equal(rule.destination, cases[i].out);
		assert_int_equal(rule.kind, cases[i].kind);
		assert_int_equal(rule.family, cases[i].family);
		assert_int_equal(rule.prefix_len, cases[i].prefix);
		free(rule.destination);
	}
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		struct policy_net_rule rule = {};

		if (policy_parse_destination(NULL, bad[i], &rule, &err) != -EINVAL)
			fail_msg("destination \"%s\" was accepted", bad[i]);
		assert_null(rule.destination);
	}
}

static void test_cidr_address_bytes_are_the_network(void **state)
{
	struct policy_net_rule rule = {};
	struct al_error err = {};
	uint8_t want[16] = {};

	(void)state;
	assert_int_equal(policy_parse_destination(NULL, "172.16.0.0/12", &rule, &err), 0);
	assert_int_equal(inet_pton(AF_INET, "172.16.0.0", want), 1);
	assert_memory_equal(rule.addr, want, 16);
	free(rule.destination);
}

static void test_port_is_1_to_65535_without_sign_or_leading_zero(void **state)
{
	static const char *const bad[] = {"", "0", "65536", "08", "+1", "-1", "1a", "99999999999"};
	struct al_error err = {};
	uint16_t port = 0;

	(void)state;
	assert_int_equal(policy_parse_port(NULL, "1", &port, &err), 0);
	assert_int_equal(port, 1);
	assert_int_equal(policy_parse_port(NULL, "65535", &port, &err), 0);
	assert_int_equal(port, 65535);
	for (size_t i = 0; i < ELEMENTSOF(bad); i++)
		assert_int_equal(policy_parse_port(NULL, bad[i], &port, &err), -EINVAL);
	assert_int_equal(port, 65535);
}

static void test_string_is_bounded_and_valid_utf8(void **state)
{
	const struct policy_where w = POLICY_WHERE_KEY(NULL, "id");
	struct al_error err = {};

	(void)state;
	assert_int_equal(policy_check_string(&w, "abcd", 4, &err), 0);
	assert_int_equal(policy_check_string(&w, "abcde", 4, &err), -EINVAL);
	assert_string_equal(err.msg, "id: \"abcde\" is longer than 4 bytes");
	assert_int_equal(policy_check_string(&w, "\xff", 4, &err), -EINVAL);
	assert_string_equal(err.msg, "id: \"\\xff\" is not valid UTF-8");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_where_formats_keys_indexes_and_odd_keys),
	    cmocka_unit_test(test_error_starts_with_where),
	    cmocka_unit_test(test_quote_escapes_and_cuts),
	    cmocka_unit_test(test_utf8_validation_follows_rfc3629),
	    cmocka_unit_test(test_path_is_normalised),
	    cmocka_unit_test(test_path_refusal_names_the_reason),
	    cmocka_unit_test(test_glob_is_relative_without_dot_or_empty_components),
	    cmocka_unit_test(test_env_name_is_an_identifier_and_not_a_loader_variable),
	    cmocka_unit_test(test_host_name_follows_rfc1123_and_is_lower_cased),
	    cmocka_unit_test(test_host_pattern_is_a_name_or_star_dot_suffix),
	    cmocka_unit_test(test_ip_literals_are_normalised),
	    cmocka_unit_test(test_destinations_are_classified),
	    cmocka_unit_test(test_cidr_address_bytes_are_the_network),
	    cmocka_unit_test(test_port_is_1_to_65535_without_sign_or_leading_zero),
	    cmocka_unit_test(test_string_is_bounded_and_valid_utf8),
	};

	return cmocka_run_group_tests_name("policy-value", tests, NULL, NULL);
}
