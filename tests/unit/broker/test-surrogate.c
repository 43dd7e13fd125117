/* tests/unit/broker/test-surrogate.c: surrogates keep a known token's shape and nothing else.
 *
 * The sample tokens are made up at run time from a shape, so that no string in this file looks
 * like a leaked token to a secret scanner. */

#include <ctype.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sodium.h>

#include "broker/broker-internal.h"

static const char digits[] = "0123456789", hex[] = "0123456789abcdef",
		  upper[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
		  alnum[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/* A value made of prefix and then shape, where "<count><code>" stands for count random
 * characters (a: letters and digits, x: lower-case hex, d: digits, U: upper-case letters) and
 * any other character stands for itself. */
static struct broker_secret *make_value(const char *prefix, const char *shape)
{
	char buf[1024];
	size_t n = strlen(prefix);
	struct broker_secret *s;

	memcpy(buf, prefix, n);
	for (const char *p = shape; *p; p++) {
		unsigned count = 0;
		const char *set;

		if (*p < '0' || *p > '9') {
			buf[n++] = *p;
			continue;
		}
		while (*p >= '0' && *p <= '9')
			count = count * 10 + (unsigned)(*p++ - '0');
		set = *p == 'x' ? hex : *p == 'd' ? digits : *p == 'U' ? upper : alnum;
		for (unsigned i = 0; i < count; i++)
			buf[n++] = set[randombytes_uniform((uint32_t)strlen(set))];
	}
	assert_true(n < sizeof(buf));
	s = broker_secret_new(n);
	assert_non_null(s);
	memcpy(s->data, buf, n);
	return s;
}

static struct broker_secret *make_bytes(const void *p, size_t n)
{
	struct broker_secret *s = broker_secret_new(n);

	assert_non_null(s);
	memcpy(s->data, p, n);
	return s;
}

static char *surrogate(const struct broker_secret *real)
{
	char *s = NULL;

	assert_int_equal(broker_surrogate_new(real, BROKER_SHAPE_OF_VALUE, &s), 0);
	assert_non_null(s);
	/* Whatever the form, the real value is never in it. */
	assert_null(memmem(s, strlen(s), real->data, real->len));
	return s;
}

static void assert_generic(const char *s)
{
	size_t l = strlen(BROKER_SURROGATE_PREFIX);

	assert_non_null(startswith(s, BROKER_SURROGATE_PREFIX));
	assert_int_equal(strlen(s), l + 32);
	assert_int_equal(strspn(s + l, alnum), 32);
}

struct sample {
	const char *prefix, *shape;
	bool hex; /* its letters are a-f */
};

static const struct sample samples[] = {
    {"ghp_", "36a"},
    {"gho_", "36a"},
    {"ghu_", "36a"},
    {"ghs_", "36a"},
    {"ghr_", "36a"},
    {"github_pat_", "22a_59a"},
    {"sk-ant-api03-", "90a-1a_AA"},
    {"sk-ant-admin01-", "80a-1a_AA"},
    {"sk-ant-oat01-", "95a"},
    {"sk-ant-", "new-64a"},
    {"sk-proj-", "40a_10a-104a"},
    {"sk-svcacct-", "120a"},
    {"sk-", "48a"},
    {"xoxb-", "12d-13d-24a"},
    {"xoxp-", "12d-12d-13d-32x"},
    {"xoxa-", "12d-13d-24a"},
    {"xoxr-", "40a"},
    {"xoxs-", "12d-12d-13d-64x"},
    {"xapp-", "1d-11U-13d-64x"},
    {"glpat-", "20a"},
    {"hf_", "34a"},
    {"npm_", "36a"},
    {"pypi-", "150a"},
    {"AKIA", "16U"},
    {"ASIA", "4d12U"},
    {"AIza", "33a-_"},
    {"sk_live_", "99a"},
    {"sk_test_", "24a"},
    {"rk_live_", "99a"},
    {"dop_v1_", "64x", true},
    {"shpat_", "32x", true},
    {"SG.", "22a.43a"},
};

static void test_surrogate_keeps_prefix_length_and_separators_of_known_formats(void **state)
{
	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(samples); i++) {
		_cleanup_(broker_secret_freep) struct broker_secret *real =
		    make_value(samples[i].prefix, samples[i].shape);
		_cleanup_free_ char *s = surrogate(real);
		size_t l = strlen(samples[i].prefix);

		assert_int_equal(strlen(s), real->len);
		assert_memory_equal(s, samples[i].prefix, l);
		assert_memory_not_equal(s, real->data, real->len);
		/* Letters and digits are drawn from the whole alphabet (their class would tell
		 * something of the real value); separators stay in place. */
		for (size_t j = l; j < real->len; j++) {
			if (isalnum((unsigned char)real->data[j]))
				assert_true(isalnum((unsigned char)s[j]));
			else
				assert_int_equal(s[j], real->data[j]);
			if (samples[i].hex)
				assert_non_null(strchr(hex, s[j]));
		}
	}
}

static void test_surrogate_keeps_the_longest_known_prefix(void **state)
{
	_cleanup_(broker_secret_freep) struct broker_secret *ant =
	    make_value("sk-ant-api03-", "93a");
	_cleanup_(broker_secret_freep) struct broker_secret *proj = make_value("sk-proj-", "80a");

	(void)state;
	/* With "sk-" alone, "ant", "api03" and "proj" would be random letters and digits. */
	for (int i = 0; i < 20; i++) {
		_cleanup_free_ char *a = surrogate(ant), *p = surrogate(proj);

		assert_non_null(startswith(a, "sk-ant-api03-"));
		assert_non_null(startswith(p, "sk-proj-"));
	}
}

static void test_surrogates_of_one_value_differ(void **state)
{
	_cleanup_(broker_secret_freep) struct broker_secret *gh = make_value("ghp_", "36a");
	_cleanup_(broker_secret_freep) struct broker_secret *other = make_bytes("hunter2", 7);
	_cleanup_free_ char *a = surrogate(gh), *b = surrogate(gh);
	_cleanup_free_ char *c = surrogate(other), *d = surrogate(other);

	(void)state;
	assert_string_not_equal(a, b);
	assert_string_not_equal(c, d);
	assert_generic(c);
	assert_generic(d);
}

static void test_surrogate_is_generic_when_value_only_looks_like_a_format(void **state)
{
	static const struct sample misfits[] = {
	    {"ghp_", "3a"},			 /* a prefix and too short a body */
	    {"ghp_", ""},			 /* the prefix alone */
	    {"ghp_", "35a!"},			 /* a character the format does not have */
	    {"ghp_", "20a-15a"},		 /* a separator the format does not have */
	    {"ghp_", "252a"},			 /* too long */
	    {"npm_", "37a"},			 /* a fixed length, not kept */
	    {"dop_v1_", "60xABCD"},		 /* upper-case hex */
	    {"dop_v1_", "60xghij"},		 /* letters beyond f */
	    {"AKIA", "16d"},			 /* 53 bits of digits only: too weak to stand in */
	    {"xoxb-", "----------5d----------"}, /* mostly separators */
	    {"sk-ant-api03-", "93a 2a"},
	    {"sk-", "30a\n"},
	};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(misfits); i++) {
		_cleanup_(broker_secret_freep) struct broker_secret *real =
		    make_value(misfits[i].prefix, misfits[i].shape);
		_cleanup_free_ char *s = surrogate(real);

		assert_generic(s);
	}
}

static void test_surrogate_of_binary_value_is_generic(void **state)
{
	static const char bin[] = "ghp_\0\1\2\3abcdefghijklmnopqrstuvwxyz0123456789";
	_cleanup_(broker_secret_freep) struct broker_secret *real =
	    make_bytes(bin, sizeof(bin) - 1);
	_cleanup_free_ char *s = surrogate(real);

	(void)state;
	assert_generic(s);
}

static void test_surrogate_never_holds_a_short_real_value(void **state)
{
	_cleanup_(broker_secret_freep) struct broker_secret *real = make_bytes("Q7", 2);

	(void)state;
	/* A careless generic surrogate would hold "Q7" about once in 125 tries. */
	for (int i = 0; i < 2000; i++) {
		_cleanup_free_ char *s = surrogate(real);

		assert_generic(s);
	}
}

static void test_surrogate_of_piece_of_generic_prefix_is_still_made(void **state)
{
	_cleanup_(broker_secret_freep) struct broker_secret *real = make_bytes("sur_", 4);
	_cleanup_free_ char *s = NULL;

	(void)state;
	assert_int_equal(broker_surrogate_new(real, BROKER_SHAPE_OF_VALUE, &s), 0);
	assert_generic(s);
}

/* An AWS secret access key has no prefix: the policy says what it is, and its surrogate is 40
 * characters of base64's alphabet whatever the real value looks like. */
static void test_surrogate_of_an_aws_secret_is_shaped_like_one(void **state)
{
	_cleanup_(broker_secret_freep) struct broker_secret *real =
	    make_bytes("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", 40);
	_cleanup_free_ char *s = NULL, *t = NULL;

	(void)state;
	assert_int_equal(broker_surrogate_new(real, BROKER_SHAPE_AWS_SECRET, &s), 0);
	assert_int_equal(broker_surrogate_new(real, BROKER_SHAPE_AWS_SECRET, &t), 0);
	assert_int_equal(strlen(s), 40);
	assert_int_equal(
	    strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"), 40);
	assert_string_not_equal(s, t);
	assert_null(memmem(s, 40, real->data, real->len));
}

static void test_surrogate_fits_the_limit(void **state)
{
	_cleanup_(broker_secret_freep) struct broker_secret *real = make_value("sk-", "400a");
	_cleanup_free_ char *s = surrogate(real);

	(void)state;
	assert_true(strlen(s) < BROKER_SURROGATE_MAX);
	assert_int_equal(strlen(s), real->len);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_surrogate_keeps_prefix_length_and_separators_of_known_formats),
	    cmocka_unit_test(test_surrogate_keeps_the_longest_known_prefix),
	    cmocka_unit_test(test_surrogates_of_one_value_differ),
	    cmocka_unit_test(test_surrogate_is_generic_when_value_only_looks_like_a_format),
	    cmocka_unit_test(test_surrogate_of_binary_value_is_generic),
	    cmocka_unit_test(test_surrogate_never_holds_a_short_real_value),
	    cmocka_unit_test(test_surrogate_of_piece_of_generic_prefix_is_still_made),
	    cmocka_unit_test(test_surrogate_of_an_aws_secret_is_shaped_like_one),
	    cmocka_unit_test(test_surrogate_fits_the_limit),
	};

	if (sodium_init() < 0)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
