/* tests/unit/broker/test-redact.c: real values are redacted from output however it is cut into
 * chunks, and nothing but a possible value's beginning is held back. */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sodium.h>

#include "broker/broker-internal.h"

#define VALUES_MAX 512

/* A redactor and the values it borrows. */
struct fixture {
	struct broker_redactor *rd;
	struct broker_redact_stream *s;
	struct broker_secret *values[VALUES_MAX];
	size_t n;
};

static void fixture_done(struct fixture *f)
{
	broker_redact_stream_free(f->s);
	broker_redactor_free(f->rd);
	for (size_t i = 0; i < f->n; i++)
		broker_secret_free(f->values[i]);
}

static void fixture_init(struct fixture *f)
{
	*f = (struct fixture){0};
	assert_int_equal(broker_redactor_new(&f->rd), 0);
	assert_int_equal(broker_redact_stream_new(&f->s), 0);
}

static void add_bytes(struct fixture *f, const void *value, size_t len, const char *name)
{
	struct broker_secret *v = broker_secret_new(len);

	assert_non_null(v);
	assert_true(f->n < VALUES_MAX);
	memcpy(v->data, value, len);
	f->values[f->n++] = v;
	assert_int_equal(broker_redactor_add(f->rd, v, name), 0);
}

static void add(struct fixture *f, const char *value, const char *name)
{
	add_bytes(f, value, strlen(value), name);
}

/* Feeds len bytes and checks what comes out now. */
static void step_bytes(struct fixture *f, const void *in, size_t len, bool flush,
		       const void *expected, size_t expected_len)
{
	unsigned char *out = NULL;
	size_t out_len = SIZE_MAX;

	assert_int_equal(broker_redact(f->rd, f->s, in, len, flush, &out, &out_len), 0);
	assert_non_null(out);
	assert_int_equal(out_len, expected_len);
	if (expected_len > 0)
		assert_memory_equal(out, expected, expected_len);
	free(out);
}

static void step(struct fixture *f, const char *in, bool flush, const char *expected)
{
	step_bytes(f, in, strlen(in), flush, expected, strlen(expected));
}

/* Feeds text in chunks of the given sizes (the last one repeated), then flushes; returns all
 * the output, NUL-terminated. */
static char *feed(struct fixture *f, const char *text, const size_t *sizes, size_t n_sizes)
{
	size_t len = strlen(text), all_len = 0, i = 0, k = 0;
	char *all = NULL;

	do {
		size_t n = MIN(sizes[k < n_sizes ? k : n_sizes - 1], len - i);
		unsigned char *out = NULL;
		size_t out_len;

		k++;
		assert_int_equal(
		    broker_redact(f->rd, f->s, text + i, n, i + n == len, &out, &out_len), 0);
		all = realloc(all, all_len + out_len + 1);
		assert_non_null(all);
		memcpy(all + all_len, out, out_len);
		all_len += out_len;
		free(out);
		i += n;
	} while (i < len);
	all[all_len] = '\0';
	return all;
}

static void assert_chunked(struct fixture *f, const char *text, const size_t *sizes, size_t n_sizes,
			   const char *expected)
{
	_cleanup_free_ char *out = feed(f, text, sizes, n_sizes);

	assert_string_equal(out, expected);
}

static void test_redact_replaces_value_in_one_chunk(void **state)
{
	_cleanup_(fixture_done) struct fixture f = {0};

	(void)state;
	fixture_init(&f);
	add(&f, "s3cr3tVALUE", "TOKEN");
	step(&f, "token=s3cr3tVALUE; done\n", false, "token=[REDACTED:TOKEN]; done\n");
	step(&f, "", true, "");
}

static void test_redact_replaces_value_at_start_and_end(void **state)
{
	_cleanup_(fixture_done) struct fixture f = {0};

	(void)state;
	fixture_init(&f);
	add(&f, "s3cr3tVALUE", "TOKEN");
	step(&f, "s3cr3tVALUE", false, "[REDACTED:TOKEN]");
	step(&f, "s3cr3tVALUE and s3cr3tVALUE", false, "[REDACTED:TOKEN] and [REDACTED:TOKEN]");
	step(&f, "", true, "");
}

static void test_redact_replaces_value_split_across_two_chunks(void **state)
{
	_cleanup_(fixture_done) struct fixture f = {0};

	(void)state;
	fixture_init(&f);
	add(&f, "s3cr3tVALUE", "TOKEN");
	/* Only the part that may begin the value waits. */
	step(&f, "key: s3cr", false, "key: ");
	step(&f, "3tVALUE\n", false, "[REDACTED:TOKEN]\n");
	step(&f, "", true, "");
}

static void test_redact_replaces_value_split_across_three_chunks(void **state)
{
	_cleanup_(fixture_done) struct fixture f = {0};

	(void)state;
	fixture_init(&f);
	add(&f, "s3cr3tVALUE", "TOKEN");
	step(&f, "<s3", false, "<");
	step(&f, "cr3tVA", false, "");
	step(&f, "LUE>", true, "[REDACTED:TOKEN]>");
}

static void test_redact_replaces_value_fed_one_byte_at_a_time(void **state)
{
	static const char text[] = "a s3cr3tVALUE b ss3cr3tVALUEs3cr3tVALU";
	static const size_t one = 1;
	_cleanup_(fixture_done) struct fixture f = {0};

	(void)state;
	fixture_init(&f);
	add(&f, "s3cr3tVALUE", "TOKEN");
	assert_chunked(&f, text, &one, 1, "a [REDACTED:TOKEN] b s[REDACTED:TOKEN]s3cr3tVALU");
}

static void test_redact_output_is_not_delayed_byte_by_byte(void **state)
{
	_cleanup_(fixture_done) struct fixture f = {0};

	(void)state;
	fixture_init(&f);
	add(&f, "s3cr3tVALUE", "TOKEN");
	step(&f, "h", false, "h");
	step(&f, "i", false, "i");
	step(&f, " ", false, " ");
	step(&f, "s", false, "");
	step(&f, "3", false, "");
	step(&f, "x", false, "s3x");
	step(&f, "s", false, "");
	step(&f, "s", false, "s");
	step(&f, "3cr3tVALUE", false, "[REDACTED:TOKEN]");
	step(&f, "!", false, "!");
	step(&f, "", true, "");
}

static void test_redact_replaces_two_values(void **state)
{
	static const size_t sizes[] = {5, 3, 1, 7};
	_cleanup_(fixture_done) struct fixture f = {0};

	(void)state;
	fixture_init(&f);
	add(&f, "alpha-secret", "A");
	add(&f, "beta-secret", "B");
	assert_chunked(&f, "A=alpha-secret B=beta-secret C=gamma-secret\n", sizes,
		       ELEMENTSOF(sizes), "A=[REDACTED:A] B=[REDACTED:B] C=gamma-secret\n");
}

static void test_redact_prefers_longer_value_at_one_position(void **state)
{
	_cleanup_(fixture_done) struct fixture f = {0};

	(void)state;
	fixture_init(&f);
	add(&f, "abcdef", "SHORT");
	add(&f, "abcdefgh", "LONG");
	step(&f, "abcdefgh abcdefg!", false, "[REDACTED:LONG] [REDACTED:SHORT]g!");
	/* The short one is whole, but the long one may still follow: wait for it. */
	step(&f, "abcdef", false, "");
	step(&f, "gh", false, "[REDACTED:LONG]");
	step(&f, "abcdef", false, "");
	step(&f, "g", false, "");
	step(&f, "", true, "[REDACTED:SHORT]g");
}

static void test_redact_prefers_leftmost_over_inner_value(void **state)
{
	static const size_t sizes[] = {3};
	_cleanup_(fixture_done) struct fixture f = {0};

	(void)state;
	fixture_init(&f);
	add(&f, "secret", "INNER");
	add(&f, "xxsecretyy", "OUTER");
	assert_chunked(&f, "1 xxsecretyy 2 xxsecretzz 3 secretyy", sizes, ELEMENTSOF(sizes),
		       "1 [REDACTED:OUTER] 2 xx[REDACTED:INNER]zz 3 [REDACTED:INNER]yy");
}

static void test_redact_resumes_after_overlapping_match(void **state)
{
	static const size_t sizes[] = {2, 5};
	_cleanup_(fixture_done) struct fixture f = {0};

	(void)state;
	fixture_init(&f);
	add(&f, "abcd1234", "A");
	add(&f, "1234wxyz", "B");
	/* The first value wins and takes "1234" with it. */
	assert_chunked(&f, "abcd1234wxyz 1234wxyz", sizes, ELEMENTSOF(sizes),
		       "[REDACTED:A]wxyz [REDACTED:B]");
}

static void test_redact_replaces_adjacent_occurrences(void **state)
{
	static const size_t sizes[] = {4, 4, 4, 1};
	_cleanup_(fixture_done) struct fixture f = {0};

	(void)state;
	fixture_init(&f);
	add(&f, "s3cr3tVALUE", "T");
	assert_chunked(&f, "s3cr3tVALUEs3cr3tVALUEs3cr3tVALUE", sizes, ELEMENTSOF(sizes),
		       "[REDACTED:T][REDACTED:T][REDACTED:T]");
}

static void test_redact_finds_value_that_repeats_its_own_prefix(void **state)
{
	static const size_t one = 1, two = 2;
	_cleanup_(fixture_done) struct fixture f = {0};

	(void)state;
	fixture_init(&f);
	add(&f, "abac", "X");
	/* "abab" fails at its last byte, but its second half begins the value. */
	step(&f, "abab", false, "ab");
	step(&f, "ac", false, "[REDACTED:X]");
	assert_chunked(&f, "ababac abaabac", &one, 1, "ab[REDACTED:X] aba[REDACTED:X]");
	assert_chunked(&f, "ababac abaabac", &two, 1, "ab[REDACTED:X] aba[REDACTED:X]");
}

static void test_redact_replaces_runs_of_one_byte_from_the_left(void **state)
{
	static const size_t one = 1, three = 3;
	_cleanup_(fixture_done) struct fixture f = {0};

	(void)state;
	fixture_init(&f);
	add(&f, "aaaa", "A");
	step(&f, "aaaaaaa", false, "[REDACTED:A]");
	step(&f, "", true, "aaa");
	assert_chunked(&f, "aaaaaaa", &one, 1, "[REDACTED:A]aaa");
	assert_chunked(&f, "aaaaaaaaa", &three, 1, "[REDACTED:A][REDACTED:A]a");
}

static void test_redact_releases_near_miss_at_next_chunk(void **state)
{
	_cleanup_(fixture_done) struct fixture f = {0};

	(void)state;
	fixture_init(&f);
	add(&f, "s3cr3tVALUE", "TOKEN");
	step(&f, "xx s3cr3tVAL", false, "xx ");
	step(&f, "X!", false, "s3cr3tVALX!");
	step(&f, "", true, "");
}

static void test_redact_releases_near_miss_at_flush(void **state)
{
	_cleanup_(fixture_done) struct fixture f = {0};

	(void)state;
	fixture_init(&f);
	add(&f, "s3cr3tVALUE", "TOKEN");
	step(&f, "xx s3cr3tVAL", false, "xx ");
	step(&f, "", true, "s3cr3tVAL");
	/* The stream starts afresh after a flush. */
	step(&f, "s3c", false, "");
	step(&f, "r3", true, "s3cr3");
}

static void test_redact_handles_binary_data_with_nuls(void **state)
{
	static const char value[] = "\0sec\0ret\xff";
	static const char in1[] = "\0\0\0sec", in2[] = "\0ret\xff\0";
	static const char out1[] = "\0\0", out2[] = "[REDACTED:BIN]";
	_cleanup_(fixture_done) struct fixture f = {0};

	(void)state;
	fixture_init(&f);
	add_bytes(&f, value, sizeof(value) - 1, "BIN");
	step_bytes(&f, in1, sizeof(in1) - 1, false, out1, sizeof(out1) - 1);
	step_bytes(&f, in2, sizeof(in2) - 1, false, out2, sizeof(out2) - 1);
	/* The NUL after it may begin the value again. */
	step_bytes(&f, "\0sec\0", 5, true, "\0\0sec\0", 6);
}

static void test_redact_passes_empty_chunks_through(void **state)
{
	_cleanup_(fixture_done) struct fixture f = {0};

	(void)state;
	fixture_init(&f);
	add(&f, "s3cr3tVALUE", "TOKEN");
	step(&f, "", false, "");
	step(&f, "a s3cr3t", false, "a ");
	step(&f, "", false, "");
	step(&f, "", false, "");
	step(&f, "VALUE", false, "[REDACTED:TOKEN]");
	step(&f, "s3c", false, "");
	step(&f, "", true, "s3c");
	step(&f, "", true, "");
}

static void test_redact_without_values_passes_everything_at_once(void **state)
{
	static const size_t sizes[] = {1, 2, 3};
	_cleanup_(fixture_done) struct fixture f = {0};

	(void)state;
	fixture_init(&f);
	step(&f, "nothing to hide", false, "nothing to hide");
	step_bytes(&f, "a\0b", 3, false, "a\0b", 3);
	step(&f, "", false, "");
	step(&f, "", true, "");
	assert_chunked(&f, "some text", sizes, ELEMENTSOF(sizes), "some text");
}

static void test_redact_refuses_short_values(void **state)
{
	_cleanup_(fixture_done) struct fixture f = {0};
	struct broker_secret *v = broker_secret_new(BROKER_REDACT_MIN - 1);

	(void)state;
	fixture_init(&f);
	assert_non_null(v);
	memcpy(v->data, "abc", 3);
	assert_int_equal(broker_redactor_add(f.rd, v, "SHORT"), -EINVAL);
	step(&f, "abc", false, "abc");
	broker_secret_free(v);
}

static void test_redact_finds_value_longer_than_chunks(void **state)
{
	static const size_t sizes[] = {100, 7, 1, 300};
	char value[1001], text[3000];
	_cleanup_(fixture_done) struct fixture f = {0};
	_cleanup_free_ char *out = NULL;

	(void)state;
	fixture_init(&f);
	for (size_t i = 0; i < sizeof(value) - 1; i++)
		value[i] = (char)('A' + i % 23);
	value[sizeof(value) - 1] = '\0';
	add(&f, value, "BIG");
	add(&f,
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
	    "LONG");
	/* The value minus its last byte, then the value, then the long one. */
	(void)snprintf(text, sizeof(text), "<%.*s><%s><%s>", (int)sizeof(value) - 2, value, value,
		       f.values[1]->data);
	out = feed(&f, text, sizes, ELEMENTSOF(sizes));
	assert_int_equal(strlen(out), strlen(text) - 1000 - 288 + strlen("[REDACTED:BIG]") +
					  strlen("[REDACTED:LONG]"));
	assert_memory_equal(out + 1, value, sizeof(value) - 2);
	assert_string_equal(out + sizeof(value) - 1, "><[REDACTED:BIG]><[REDACTED:LONG]>");
}

static void test_redact_replaces_any_of_many_values(void **state)
{
	_cleanup_(fixture_done) struct fixture f = {0};
	char text[64 * 1024], expected[64 * 1024], value[48], name[16];
	size_t tl = 0, el = 0;
	static const size_t sizes[] = {4096, 13, 1, 999};
	_cleanup_free_ char *out = NULL;

	(void)state;
	fixture_init(&f);
	/* Values of upper-case letters between lower-case filler cannot be found by chance. */
	for (size_t i = 0; i < 400; i++) {
		size_t len = 4 + i % 40;

		for (size_t j = 0; j < len; j++)
			value[j] = (char)('A' + (i * 7 + j * j + j * i) % 26);
		value[len] = '\0';
		(void)snprintf(name, sizeof(name), "V%zu", i);
		add(&f, value, name);
	}
	for (size_t i = 0; i < 400; i += 3) {
		const struct broker_secret *v = f.values[i];

		tl += (size_t)snprintf(text + tl, sizeof(text) - tl, "x%zuy%s", i, v->data);
		el += (size_t)snprintf(expected + el, sizeof(expected) - el, "x%zuy", i);
		/* An earlier, identical value's name wins. */
		for (size_t j = 0; j <= i; j++)
			if (strcmp(f.values[j]->data, v->data) == 0) {
				el += (size_t)snprintf(expected + el, sizeof(expected) - el,
						       "[REDACTED:V%zu]", j);
				break;
			}
	}
	out = feed(&f, text, sizes, ELEMENTSOF(sizes));
	assert_string_equal(out, expected);
}

static void test_redact_output_grows_past_the_input(void **state)
{
	_cleanup_(fixture_done) struct fixture f = {0};
	char text[4001];
	_cleanup_free_ char *out = NULL;
	static const size_t all = sizeof(text);
	const char *rep = "[REDACTED:A_CREDENTIAL_WITH_A_RATHER_LONG_NAME]";

	(void)state;
	fixture_init(&f);
	add(&f, "abcd", "A_CREDENTIAL_WITH_A_RATHER_LONG_NAME");
	for (size_t i = 0; i < 1000; i++)
		memcpy(text + 4 * i, "abcd", 4);
	text[4000] = '\0';
	out = feed(&f, text, &all, 1);
	assert_int_equal(strlen(out), 1000 * strlen(rep));
	for (size_t i = 0; i < 1000; i++)
		assert_memory_equal(out + i * strlen(rep), rep, strlen(rep));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_redact_replaces_value_in_one_chunk),
	    cmocka_unit_test(test_redact_replaces_value_at_start_and_end),
	    cmocka_unit_test(test_redact_replaces_value_split_across_two_chunks),
	    cmocka_unit_test(test_redact_replaces_value_split_across_three_chunks),
	    cmocka_unit_test(test_redact_replaces_value_fed_one_byte_at_a_time),
	    cmocka_unit_test(test_redact_output_is_not_delayed_byte_by_byte),
	    cmocka_unit_test(test_redact_replaces_two_values),
	    cmocka_unit_test(test_redact_prefers_longer_value_at_one_position),
	    cmocka_unit_test(test_redact_prefers_leftmost_over_inner_value),
	    cmocka_unit_test(test_redact_resumes_after_overlapping_match),
	    cmocka_unit_test(test_redact_replaces_adjacent_occurrences),
	    cmocka_unit_test(test_redact_finds_value_that_repeats_its_own_prefix),
	    cmocka_unit_test(test_redact_replaces_runs_of_one_byte_from_the_left),
	    cmocka_unit_test(test_redact_releases_near_miss_at_next_chunk),
	    cmocka_unit_test(test_redact_releases_near_miss_at_flush),
	    cmocka_unit_test(test_redact_handles_binary_data_with_nuls),
	    cmocka_unit_test(test_redact_passes_empty_chunks_through),
	    cmocka_unit_test(test_redact_without_values_passes_everything_at_once),
	    cmocka_unit_test(test_redact_refuses_short_values),
	    cmocka_unit_test(test_redact_finds_value_longer_than_chunks),
	    cmocka_unit_test(test_redact_replaces_any_of_many_values),
	    cmocka_unit_test(test_redact_output_grows_past_the_input),
	};

	if (sodium_init() < 0) /* for broker_secret_new() */
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
