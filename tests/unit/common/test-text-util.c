#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/text-util.h"

static enum al_utf8 scan(const char *s, size_t n, size_t *valid)
{
	return al_utf8_scan((const unsigned char *)s, n, valid);
}

static void test_text_is_whole(void **state)
{
	const char *s = "plain ascii, é (2), € (3), 𝄞 (4)";
	size_t valid = 0;

	(void)state;
	assert_int_equal(scan(s, strlen(s), &valid), AL_UTF8_WHOLE);
	assert_int_equal(valid, strlen(s));
	assert_int_equal(scan("", 0, &valid), AL_UTF8_WHOLE);
	assert_int_equal(valid, 0);
}

/* A sequence split between two reads is held back whole, however much of it came. */
static void test_a_split_sequence_is_cut_before_it(void **state)
{
	const char *s = "ab𝄞";
	size_t valid = 9;

	(void)state;
	for (size_t n = 3; n < strlen(s); n++) {
		assert_int_equal(scan(s, n, &valid), AL_UTF8_CUT);
		assert_int_equal(valid, 2);
	}
	assert_int_equal(scan("x\xc3", 2, &valid), AL_UTF8_CUT);
	assert_int_equal(valid, 1);
}

static void test_bytes_that_are_not_text_end_it(void **state)
{
	static const struct {
		const char *s;
		size_t n, valid;
	} cases[] = {
	    {"out\n\xff", 5, 4},	 /* never in UTF-8 */
	    {"a\x80", 2, 1},		 /* a continuation byte alone */
	    {"a\xc0\xaf", 3, 1},	 /* overlong "/" */
	    {"a\xe0\x80\xaf", 4, 1},	 /* overlong, three bytes */
	    {"a\xed\xa0\x80", 4, 1},	 /* a surrogate */
	    {"a\xf4\x90\x80\x80", 5, 1}, /* beyond U+10FFFF */
	    {"a\xc3(", 3, 1},		 /* a start without its continuation */
	};
	size_t valid;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		valid = 99;
		assert_int_equal(scan(cases[i].s, cases[i].n, &valid), AL_UTF8_NOT_TEXT);
		assert_int_equal(valid, cases[i].valid);
	}
	/* The last: "\xe2\x82" is a valid start of "€", cut after 2 of 3 bytes. */
	assert_int_equal(scan("ok\xe2\x82", 4, &valid), AL_UTF8_CUT);
	assert_int_equal(valid, 2);
}

static void test_base64(void **state)
{
	static const char *const in[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
	static const char *const out[] = {"",	      "Zg==",	  "Zm8=",    "Zm9v",
					  "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
	char *b;

	(void)state;
	for (size_t i = 0; i < 7; i++) {
		b = al_base64_encode((const unsigned char *)in[i], strlen(in[i]));
		assert_non_null(b);
		assert_string_equal(b, out[i]);
		free(b);
	}
	b = al_base64_encode((const unsigned char *)"\xff", 1);
	assert_string_equal(b, "/w==");
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_text_is_whole),
	    cmocka_unit_test(test_a_split_sequence_is_cut_before_it),
	    cmocka_unit_test(test_bytes_that_are_not_text_end_it),
	    cmocka_unit_test(test_base64),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
