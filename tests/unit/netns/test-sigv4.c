/* tests/unit/netns/test-sigv4.c: AWS SigV4 (netns/sigv4.c): the parsers of the Authorization
 * header and the presigned query, and the signatures of AWS's own published examples (IAM
 * ListUsers, S3 GetObject with a Range, an S3 presigned URL). */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "netns/sigv4-internal.h"

#define STR(lit)                                                                                   \
	{                                                                                          \
		lit, sizeof(lit) - 1                                                               \
	}
#define HDR(n, v)                                                                                  \
	{                                                                                          \
		.name = n, .name_len = sizeof(n) - 1, .value = v, .value_len = sizeof(v) - 1       \
	}

static int parse_auth(const char *v, struct netns_sigv4 *s)
{
	char *copy = strdup(v); /* exactly its length, for the sanitizers */
	struct al_error err = {0};
	int r;

	assert_non_null(copy);
	/* The parts point into the struct's own buffers: copy may go. */
	r = netns_sigv4_parse_authorization(copy, strlen(v), s, &err);
	free(copy);
	return r;
}

static void test_sigv4_signs_aws_iam_example(void **state)
{
	static const struct netns_http_header h[] = {
	    HDR("Host", "iam.amazonaws.com"),
	    HDR("Content-Type", "application/x-www-form-urlencoded; charset=utf-8"),
	    HDR("X-Amz-Date", "20150830T123600Z"),
	};
	const char *secret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
	struct netns_sigv4 s;
	struct netns_sigv4_request rq = {
	    .method = STR("GET"),
	    .target = STR("/?Action=ListUsers&Version=2010-05-08"),
	    .headers = h,
	    .n_headers = 3,
	    .amz_date = STR("20150830T123600Z"),
	    .payload_hash = STR(NETNS_SIGV4_EMPTY_SHA256),
	};
	char sig[NETNS_SIGV4_HEX_LEN + 1];

	(void)state;
	assert_int_equal(
	    parse_auth("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/"
		       "aws4_request, SignedHeaders=content-type;host;x-amz-date, "
		       "Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b"
		       "5924a6f2b5d7",
		       &s),
	    1);
	assert_memory_equal(s.key_id.p, "AKIDEXAMPLE", s.key_id.n);
	assert_memory_equal(s.service.p, "iam", s.service.n);
	assert_int_equal(
	    netns_sigv4_sign(&s, &rq, (const uint8_t *)secret, strlen(secret), sig, NULL), 0);
	assert_string_equal(sig, s.signature);
	assert_true(netns_sigv4_equal(sig, s.signature));
	sig[10] ^= 1;
	assert_false(netns_sigv4_equal(sig, s.signature));
}

static void test_sigv4_signs_aws_s3_get_example(void **state)
{
	static const struct netns_http_header h[] = {
	    HDR("Host", "examplebucket.s3.amazonaws.com"),
	    HDR("Range", "bytes=0-9"),
	    HDR("x-amz-content-sha256", NETNS_SIGV4_EMPTY_SHA256),
	    HDR("x-amz-date", "20130524T000000Z"),
	    HDR("User-Agent", "not signed"),
	};
	const char *secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
	struct netns_sigv4 s;
	struct netns_sigv4_request rq = {
	    .method = STR("GET"),
	    .target = STR("/test.txt"),
	    .headers = h,
	    .n_headers = 5,
	    .amz_date = STR("20130524T000000Z"),
	    .payload_hash = STR(NETNS_SIGV4_EMPTY_SHA256),
	};
	char sig[NETNS_SIGV4_HEX_LEN + 1];

	(void)state;
	assert_int_equal(
	    parse_auth("AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/"
		       "aws4_request,SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
		       "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41",
		       &s),
	    1);
	assert_int_equal(
	    netns_sigv4_sign(&s, &rq, (const uint8_t *)secret, strlen(secret), sig, NULL), 0);
	assert_string_equal(sig,
			    "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

#define PRESIGNED_QUERY                                                                            \
	"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-"  \
	"east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-"        \
	"SignedHeaders=host&X-Amz-Signature="                                                      \
	"aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404"

static void test_sigv4_signs_aws_s3_presigned_example(void **state)
{
	static const struct netns_http_header h[] = {HDR("Host", "examplebucket.s3.amazonaws.com")};
	const char *secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
	struct netns_sigv4 s;
	struct netns_sigv4_request rq = {
	    .method = STR("GET"),
	    .target = STR("/test.txt?" PRESIGNED_QUERY),
	    .headers = h,
	    .n_headers = 1,
	    .amz_date = STR("20130524T000000Z"),
	    .payload_hash = STR("UNSIGNED-PAYLOAD"),
	};
	char sig[NETNS_SIGV4_HEX_LEN + 1];

	(void)state;
	assert_int_equal(
	    netns_sigv4_parse_query(PRESIGNED_QUERY, strlen(PRESIGNED_QUERY), &s, NULL), 1);
	assert_true(s.presigned);
	assert_memory_equal(s.key_id.p, "AKIAIOSFODNN7EXAMPLE", s.key_id.n);
	assert_memory_equal(s.region.p, "us-east-1", s.region.n);
	assert_string_equal(s.amz_date, "20130524T000000Z");
	assert_int_equal(
	    netns_sigv4_sign(&s, &rq, (const uint8_t *)secret, strlen(secret), sig, NULL), 0);
	assert_string_equal(sig, s.signature);
}

static void test_sigv4_other_authorization_is_not_ours(void **state)
{
	struct netns_sigv4 s;

	(void)state;
	assert_int_equal(parse_auth("Bearer x", &s), 0);
	assert_int_equal(parse_auth("AWS4-HMAC-SHA256X Credential=a", &s), 0);
	assert_int_equal(parse_auth("AWS AKID:sig", &s), 0);
	assert_int_equal(netns_sigv4_parse_query("a=1&b=2", 7, &s, NULL), 0);
}

static void test_sigv4_refuses_malformed_authorization(void **state)
{
	static const char *const bad[] = {
	    /* a field missing, given twice, unknown */
	    "AWS4-HMAC-SHA256 Credential=A/20150830/r/s/aws4_request, SignedHeaders=host",
	    "AWS4-HMAC-SHA256 Credential=A/20150830/r/s/aws4_request, SignedHeaders=host, "
	    "SignedHeaders=host, Signature=" NETNS_SIGV4_EMPTY_SHA256,
	    "AWS4-HMAC-SHA256 Credential=A/20150830/r/s/aws4_request, SignedHeaders=host, "
	    "Signature=" NETNS_SIGV4_EMPTY_SHA256 ", Extra=1",
	    /* a scope out of shape */
	    "AWS4-HMAC-SHA256 Credential=A/2015083/r/s/aws4_request, SignedHeaders=host, "
	    "Signature=" NETNS_SIGV4_EMPTY_SHA256,
	    "AWS4-HMAC-SHA256 Credential=A/20150830/r/s/aws5_request, SignedHeaders=host, "
	    "Signature=" NETNS_SIGV4_EMPTY_SHA256,
	    "AWS4-HMAC-SHA256 Credential=A/20150830/r/s, SignedHeaders=host, "
	    "Signature=" NETNS_SIGV4_EMPTY_SHA256,
	    "AWS4-HMAC-SHA256 Credential=A/20150830//s/aws4_request, SignedHeaders=host, "
	    "Signature=" NETNS_SIGV4_EMPTY_SHA256,
	    "AWS4-HMAC-SHA256 Credential=A/20150830/r\"/s/aws4_request, SignedHeaders=host, "
	    "Signature=" NETNS_SIGV4_EMPTY_SHA256,
	    /* signed headers unsorted, repeated, upper-case, empty */
	    "AWS4-HMAC-SHA256 Credential=A/20150830/r/s/aws4_request, "
	    "SignedHeaders=x-amz-date;host, "
	    "Signature=" NETNS_SIGV4_EMPTY_SHA256,
	    "AWS4-HMAC-SHA256 Credential=A/20150830/r/s/aws4_request, SignedHeaders=host;host, "
	    "Signature=" NETNS_SIGV4_EMPTY_SHA256,
	    "AWS4-HMAC-SHA256 Credential=A/20150830/r/s/aws4_request, SignedHeaders=Host, "
	    "Signature=" NETNS_SIGV4_EMPTY_SHA256,
	    "AWS4-HMAC-SHA256 Credential=A/20150830/r/s/aws4_request, SignedHeaders=host;;x, "
	    "Signature=" NETNS_SIGV4_EMPTY_SHA256,
	    /* a signature not 64 lower-case hex digits */
	    "AWS4-HMAC-SHA256 Credential=A/20150830/r/s/aws4_request, SignedHeaders=host, "
	    "Signature=E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855",
	    "AWS4-HMAC-SHA256 Credential=A/20150830/r/s/aws4_request, SignedHeaders=host, "
	    "Signature=e3b0",
	};
	struct netns_sigv4 s;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct al_error err = {0};
		char *copy = strdup(bad[i]);

		assert_int_equal(netns_sigv4_parse_authorization(copy, strlen(copy), &s, &err),
				 -EBADMSG);
		assert_true(err.msg[0] != '\0');
		free(copy);
	}
}

static void test_sigv4_refuses_partial_or_repeated_presigned_query(void **state)
{
	static const char *const bad[] = {
	    "X-Amz-Credential=A%2F20130524%2Fr%2Fs%2Faws4_request",
	    PRESIGNED_QUERY "&X-Amz-Date=20130524T000000Z",
	    "X-Amz-Algorithm=AWS4-HMAC-SHA1&X-Amz-Credential=A%2F20130524%2Fr%2Fs%2Faws4_request&X-"
	    "Amz-Date=20130524T000000Z&X-Amz-SignedHeaders=host&X-Amz-"
	    "Signature=" NETNS_SIGV4_EMPTY_SHA256,
	    "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=A%2F20130524%2Fr%2Fs%2Faws4_request&"
	    "X-"
	    "Amz-Date=20130524&X-Amz-SignedHeaders=host&X-Amz-Signature=" NETNS_SIGV4_EMPTY_SHA256,
	    "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=A%2G20130524&X-Amz-Date="
	    "20130524T000000Z&X-Amz-SignedHeaders=host&X-Amz-Signature=" NETNS_SIGV4_EMPTY_SHA256,
	    "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=A%2F20130524%2Fr%2Fs%2Faws4_request&"
	    "X-"
	    "Amz-Date=20130524T000000Z&X-Amz-SignedHeaders=host&X-Amz-Signature=%",
	};
	struct netns_sigv4 s;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *copy = strdup(bad[i]);

		assert_int_equal(netns_sigv4_parse_query(copy, strlen(copy), &s, NULL), -EBADMSG);
		free(copy);
	}
}

static void test_sigv4_missing_signed_header_is_refused(void **state)
{
	static const struct netns_http_header h[] = {HDR("Host", "iam.amazonaws.com")};
	struct netns_sigv4 s;
	struct netns_sigv4_request rq = {
	    .method = STR("GET"),
	    .target = STR("/"),
	    .headers = h,
	    .n_headers = 1,
	    .amz_date = STR("20150830T123600Z"),
	    .payload_hash = STR(NETNS_SIGV4_EMPTY_SHA256),
	};
	struct al_error err = {0};
	char sig[NETNS_SIGV4_HEX_LEN + 1];

	(void)state;
	assert_int_equal(
	    parse_auth("AWS4-HMAC-SHA256 Credential=A/20150830/r/iam/aws4_request, "
		       "SignedHeaders=host;x-amz-date, Signature=" NETNS_SIGV4_EMPTY_SHA256,
		       &s),
	    1);
	assert_int_equal(netns_sigv4_sign(&s, &rq, (const uint8_t *)"k", 1, sig, &err), -EBADMSG);
	assert_non_null(strstr(err.msg, "x-amz-date"));
}

/* Every service but S3 signs the path with its empty and dot segments removed, encoded again;
 * S3 signs it as it is: the two differ. */
static void test_sigv4_canonical_uri_is_per_service(void **state)
{
	static const struct netns_http_header h[] = {HDR("Host", "h")};
	struct netns_sigv4 s3, other;
	struct netns_sigv4_request rq = {
	    .method = STR("GET"),
	    .headers = h,
	    .n_headers = 1,
	    .amz_date = STR("20150830T123600Z"),
	    .payload_hash = STR(NETNS_SIGV4_EMPTY_SHA256),
	};
	char a[NETNS_SIGV4_HEX_LEN + 1], b[NETNS_SIGV4_HEX_LEN + 1];

	(void)state;
	assert_int_equal(parse_auth("AWS4-HMAC-SHA256 Credential=A/20150830/r/s3/aws4_request, "
				    "SignedHeaders=host, Signature=" NETNS_SIGV4_EMPTY_SHA256,
				    &s3),
			 1);
	assert_int_equal(parse_auth("AWS4-HMAC-SHA256 Credential=A/20150830/r/ec2/aws4_request, "
				    "SignedHeaders=host, Signature=" NETNS_SIGV4_EMPTY_SHA256,
				    &other),
			 1);
	rq.target = (struct netns_sigv4_str)STR("/a/./b//../c%20d");
	assert_int_equal(netns_sigv4_sign(&other, &rq, (const uint8_t *)"k", 1, a, NULL), 0);
	rq.target = (struct netns_sigv4_str)STR("/a/c%20d");
	assert_int_equal(netns_sigv4_sign(&other, &rq, (const uint8_t *)"k", 1, b, NULL), 0);
	assert_string_equal(a, b);
	rq.target = (struct netns_sigv4_str)STR("/a/./b//../c%20d");
	assert_int_equal(netns_sigv4_sign(&s3, &rq, (const uint8_t *)"k", 1, a, NULL), 0);
	rq.target = (struct netns_sigv4_str)STR("/a/c%20d");
	assert_int_equal(netns_sigv4_sign(&s3, &rq, (const uint8_t *)"k", 1, b, NULL), 0);
	assert_string_not_equal(a, b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sigv4_signs_aws_iam_example),
	    cmocka_unit_test(test_sigv4_signs_aws_s3_get_example),
	    cmocka_unit_test(test_sigv4_signs_aws_s3_presigned_example),
	    cmocka_unit_test(test_sigv4_other_authorization_is_not_ours),
	    cmocka_unit_test(test_sigv4_refuses_malformed_authorization),
	    cmocka_unit_test(test_sigv4_refuses_partial_or_repeated_presigned_query),
	    cmocka_unit_test(test_sigv4_missing_signed_header_is_refused),
	    cmocka_unit_test(test_sigv4_canonical_uri_is_per_service),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
