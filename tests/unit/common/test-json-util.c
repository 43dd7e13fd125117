/* common/json-util.c: al_json_parse() refuses what json-c would quietly accept. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/json-util.h"
#include "common/macro.h"

static int parse(const char *text, struct al_error *err)
{
	_cleanup_json_ struct json_object *o = NULL;

	return al_json_parse(text, strlen(text), 16, &o, err);
}

static void test_json_accepts_distinct_keys_at_every_level(void **state)
{
	static const char *const good[] = {
	    "{}",
	    "{\"a\": 1, \"b\": 2}",
	    "{\"a\": {\"a\": {\"a\": 1}}, \"b\": [{\"a\": 1}, {\"a\": 2}]}",
	    "[{\"x\": 1}, {\"x\": 1}, [], {}]",
	    "{\"a:b\": \"c:d\", \"\\\"a\": \"{:}\", \"a\\\\\": 1}",
	    "{\"\\u0041\": 1, \"a\": 2}",
	    "\"a:b\"",
	    "42",
	};
	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(good); i++) {
		struct al_error err = {0};

		if (parse(good[i], &err) != 0)
			fail_msg("refused %s: %s", good[i], err.msg);
	}
}

static void test_json_refuses_a_repeated_key_and_names_it(void **state)
{
	static const struct {
		const char *text, *key;
	} bad[] = {
	    {"{\"tier\": 4, \"tier\": 1}", "\"tier\""},
	    {"{\"a\": 1, \"b\": {\"c\": 1, \"c\": 2}}", "\"c\""},
	    {"[{\"ok\": 1}, {\"x\": 1, \"y\": 2, \"x\": 3}]", "\"x\""},
	    /* the same name, written two ways */
	    {"{\"A\": 1, \"\\u0041\": 2}", "\"A\""},
	    {"{\"a/b\": 1, \"a\\/b\": 2}", "\"a/b\""},
	    /* a repeat after a nested object whose own keys are fine */
	    {"{\"env\": {\"p\": 1, \"q\": 2}, \"id\": 1, \"env\": {}}", "\"env\""},
	    /* a repeat inside the value that a repeated key replaced */
	    {"{\"a\": {\"x\": 1, \"x\": 2}, \"b\": 1}", "\"x\""},
	};
	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		struct al_error err = {0};

		assert_int_equal(parse(bad[i].text, &err), -EINVAL);
		if (!strstr(err.msg, bad[i].key) || !strstr(err.msg, "repeated"))
			fail_msg("%s: message \"%s\" does not name %s", bad[i].text, err.msg,
				 bad[i].key);
	}
}

static void test_json_refuses_single_quoted_strings(void **state)
{
	static const char *const bad[] = {"{'a': 1}", "['x']", "{\"a\": 'b'}", "'s'"};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		struct al_error err = {0};

		assert_int_equal(parse(bad[i], &err), -EINVAL);
		assert_true(err.msg[0] != '\0');
	}
	assert_int_equal(parse("{\"it's\": \"'\"}", NULL), 0); /* inside a string, fine */
}

static void test_json_refuses_a_lone_surrogate_and_keeps_pairs(void **state)
{
	static const char *const bad[] = {
	    "\"\\ud800\"",     "\"\\udc00\"",	     "{\"a\\ud83d\": 1}",
	    "[\"x\\ud83dy\"]", "\"\\ud83d\\u0041\"", "\"\\ud83d\\ud83d\"",
	};
	static const char *const good[] = {
	    "\"\\ud83d\\ude00\"",
	    "\"\\u00e9\\\\ud800\"",
	    "{\"\\uD83D\\uDE00\": 1}",
	};
	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		struct al_error err = {0};

		assert_int_equal(parse(bad[i], &err), -EINVAL);
		assert_non_null(strstr(err.msg, "surrogate"));
	}
	for (size_t i = 0; i < ELEMENTSOF(good); i++) {
		struct al_error err = {0};

		if (parse(good[i], &err) != 0)
			fail_msg("refused %s: %s", good[i], err.msg);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_json_accepts_distinct_keys_at_every_level),
	    cmocka_unit_test(test_json_refuses_a_repeated_key_and_names_it),
	    cmocka_unit_test(test_json_refuses_a_lone_surrogate_and_keeps_pairs),
	    cmocka_unit_test(test_json_refuses_single_quoted_strings),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
