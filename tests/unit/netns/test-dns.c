/* tests/unit/netns/test-dns.c: the DNS responder's wire format. */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/macro.h"
#include "netns/netns-internal.h"

/* A query as a resolver sends it: id 0x1234, RD, one question, and an EDNS0 OPT record. */
static size_t make_query(uint8_t *buf, const char *name, uint16_t qtype, bool edns)
{
	size_t n = 12;
	const char *p = name;

	memset(buf, 0, 12);
	buf[0] = 0x12, buf[1] = 0x34, buf[2] = 0x01, buf[5] = 1;
	while (*p) {
		const char *dot = strchr(p, '.');
		size_t l = dot ? (size_t)(dot - p) : strlen(p);

		buf[n++] = (uint8_t)l;
		memcpy(buf + n, p, l);
		n += l;
		p += l + (dot != NULL);
	}
	buf[n++] = 0;
	buf[n++] = (uint8_t)(qtype >> 8), buf[n++] = (uint8_t)qtype;
	buf[n++] = 0, buf[n++] = 1;
	if (edns) {
		static const uint8_t opt[] = {0, 0, 41, 0x10, 0, 0, 0, 0, 0, 0, 0};

		buf[11] = 1;
		memcpy(buf + n, opt, sizeof(opt));
		n += sizeof(opt);
	}
	return n;
}

static void test_query_for_a_name_is_parsed_lower_cased(void **state)
{
	uint8_t buf[512];
	struct netns_dns_query q;
	size_t n = make_query(buf, "API.GitHub.com", NETNS_DNS_A, true);

	(void)state;
	assert_int_equal(netns_dns_parse_query(buf, n, &q), 0);
	assert_string_equal(q.name, "api.github.com");
	assert_int_equal(q.qtype, NETNS_DNS_A);
	assert_int_equal(q.qclass, 1);
	assert_int_equal(q.id, 0x1234);
	assert_int_equal(q.question_len, strlen("API.GitHub.com") + 2 + 4);
}

static void test_answer_carries_the_address_and_the_question(void **state)
{
	static const uint8_t addr[4] = {198, 18, 0, 7};
	uint8_t buf[512], out[512];
	struct netns_dns_query q, back;
	size_t n = make_query(buf, "pypi.org", NETNS_DNS_A, false), m;

	(void)state;
	assert_int_equal(netns_dns_parse_query(buf, n, &q), 0);
	m = netns_dns_answer(&q, NETNS_DNS_NOERROR, addr, 60, out, sizeof(out));
	assert_int_equal(m, n + 16);
	assert_int_equal(out[0], 0x12);
	assert_int_equal(out[1], 0x34);
	assert_true(out[2] & 0x80);			 /* QR */
	assert_true(out[2] & 0x01);			 /* RD echoed */
	assert_int_equal(out[3] & 0x0f, 0);		 /* NOERROR */
	assert_int_equal(out[7], 1);			 /* ANCOUNT */
	assert_memory_equal(out + 12, buf + 12, n - 12); /* the question */
	assert_int_equal(out[n], 0xc0);			 /* the name points at the question */
	assert_int_equal(out[n + 1], 12);
	assert_memory_equal(out + m - 4, addr, 4);
	assert_int_equal(out[n + 9], 60); /* TTL */
	/* An answer is never taken for a query. */
	assert_int_equal(netns_dns_parse_query(out, m, &back), -EBADMSG);
}

static void test_nxdomain_and_empty_answers_have_no_record(void **state)
{
	uint8_t buf[512], out[512];
	struct netns_dns_query q;
	size_t n = make_query(buf, "evil.example", NETNS_DNS_AAAA, false), m;

	(void)state;
	assert_int_equal(netns_dns_parse_query(buf, n, &q), 0);
	m = netns_dns_answer(&q, NETNS_DNS_NXDOMAIN, NULL, 0, out, sizeof(out));
	assert_int_equal(m, n);
	assert_int_equal(out[3] & 0x0f, NETNS_DNS_NXDOMAIN);
	assert_int_equal(out[7], 0);
	m = netns_dns_answer(&q, NETNS_DNS_NOERROR, NULL, 0, out, sizeof(out));
	assert_int_equal(out[3] & 0x0f, 0);
	assert_int_equal(out[7], 0);
}

static void test_malformed_queries_are_refused(void **state)
{
	uint8_t buf[512], bad[512];
	struct netns_dns_query q;
	size_t n = make_query(buf, "a.example.com", NETNS_DNS_A, false);

	(void)state;
	/* Every truncation. */
	for (size_t i = 0; i < n; i++)
		assert_int_equal(netns_dns_parse_query(buf, i, &q), -EBADMSG);
	/* Two questions, an answer section, an authority section. */
	for (size_t k = 4; k <= 8; k += 2) {
		memcpy(bad, buf, n);
		bad[k + 1] = k == 4 ? 2 : 1;
		assert_int_equal(netns_dns_parse_query(bad, n, &q), -EBADMSG);
	}
	/* A compression pointer in the question. */
	memcpy(bad, buf, n);
	bad[12] = 0xc0, bad[13] = 12;
	assert_int_equal(netns_dns_parse_query(bad, n, &q), -EBADMSG);
	/* A label running past the end; a character no host name has. */
	memcpy(bad, buf, n);
	bad[12] = 60;
	assert_int_equal(netns_dns_parse_query(bad, n, &q), -EBADMSG);
	memcpy(bad, buf, n);
	bad[13] = '/';
	assert_int_equal(netns_dns_parse_query(bad, n, &q), -EBADMSG);
	memcpy(bad, buf, n);
	bad[13] = 0;
	assert_int_equal(netns_dns_parse_query(bad, n, &q), -EBADMSG);
}

static void test_name_longer_than_253_is_refused(void **state)
{
	char name[300];
	uint8_t buf[512];
	struct netns_dns_query q;
	size_t n;

	(void)state;
	/* 4 labels of 63 characters: 255 with the dots. */
	for (size_t i = 0; i < 4; i++) {
		memset(name + i * 64, 'a', 63);
		name[i * 64 + 63] = i < 3 ? '.' : '\0';
	}
	n = make_query(buf, name, NETNS_DNS_A, false);
	assert_int_equal(netns_dns_parse_query(buf, n, &q), -EBADMSG);
	name[250] = '\0'; /* 250 characters: fine */
	n = make_query(buf, name, NETNS_DNS_A, false);
	assert_int_equal(netns_dns_parse_query(buf, n, &q), 0);
	assert_int_equal(strlen(q.name), 250);
}

static void test_other_opcodes_are_not_implemented(void **state)
{
	uint8_t buf[512];
	struct netns_dns_query q;
	size_t n = make_query(buf, "example.com", NETNS_DNS_A, false);

	(void)state;
	buf[2] |= 2 << 3; /* STATUS */
	assert_int_equal(netns_dns_parse_query(buf, n, &q), -EOPNOTSUPP);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_query_for_a_name_is_parsed_lower_cased),
	    cmocka_unit_test(test_answer_carries_the_address_and_the_question),
	    cmocka_unit_test(test_nxdomain_and_empty_answers_have_no_record),
	    cmocka_unit_test(test_malformed_queries_are_refused),
	    cmocka_unit_test(test_name_longer_than_253_is_refused),
	    cmocka_unit_test(test_other_opcodes_are_not_implemented),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
