/* common/parse-util.c: the strict value parsers. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "common/macro.h"
#include "common/parse-util.h"

struct good {
	const char *s;
	uint64_t v;
};

struct bad {
	const char *s;
	int r;
};

typedef int (*parse_fn)(const char *s, uint64_t *ret);

static void check_good(parse_fn parse, const char *what, const struct good *g, size_t n)
{
	size_t failed = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t v = 0;
		int r = parse(g[i].s, &v);

		if (r == 0 && v == g[i].v)
			continue;
		print_error("%s(\"%s\") = %d, %llu; expected 0, %llu\n", what, g[i].s, r,
			    (unsigned long long)v, (unsigned long long)g[i].v);
		failed++;
	}
	assert_int_equal(failed, 0);
}

static void check_bad(parse_fn parse, const char *what, const struct bad *b, size_t n)
{
	size_t failed = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t v = 0xdeadbeef;
		int r = parse(b[i].s, &v);

		/* ret_* is never changed on failure. */
		if (r == b[i].r && v == 0xdeadbeef)
			continue;
		print_error("%s(\"%s\") = %d (value %llu); expected %d\n", what, b[i].s, r,
			    (unsigned long long)v, b[i].r);
		failed++;
	}
	assert_int_equal(failed, 0);
}

/* Forms every parser refuses the same way, with the parser's unit after the number. */
#define COMMON_BAD(unit)                                                                           \
	{"", -EINVAL}, {" 1" unit, -EINVAL}, {"1" unit " ", -EINVAL}, {"+1" unit, -EINVAL},        \
	    {"-1" unit, -EINVAL}, {"1.5.5" unit, -EINVAL}, {"1e3" unit, -EINVAL},                  \
	    {"0x10" unit, -EINVAL}, {"1." unit, -EINVAL}, {".5" unit, -EINVAL},                    \
	    {"1,5" unit, -EINVAL}, {"\u0661" unit, -EINVAL},                                       \
	{                                                                                          \
		"1\n" unit, -EINVAL                                                                \
	}

static void test_size_accepts_bytes_and_both_unit_families(void **state)
{
	static const struct good good[] = {
	    {"0", 0},
	    {"4096", 4096},
	    {"007", 7},
	    {"1k", 1000},
	    {"1K", 1000},
	    {"2M", 2000000},
	    {"1G", 1000000000},
	    {"3T", UINT64_C(3000000000000)},
	    {"1Ki", 1024},
	    {"512Mi", UINT64_C(512) << 20},
	    {"2Gi", UINT64_C(2) << 30},
	    {"1Ti", UINT64_C(1) << 40},
	    {"18446744073709551615", UINT64_MAX},
	    {"16777215Ti", UINT64_C(16777215) << 40},
	};

	(void)state;
	check_good(al_parse_size, "al_parse_size", good, ELEMENTSOF(good));
}

static void test_size_accepts_fractions_of_whole_bytes_only(void **state)
{
	static const struct good good[] = {
	    {"1.5Gi", UINT64_C(3) << 29},
	    {"0.5Ki", 512},
	    {"2.0", 2},
	    {"1.25k", 1250},
	    {"0.000000001G", 1},
	    {"1.50000000000000000000000000Gi", UINT64_C(3) << 29}, /* trailing zeros */
	    {"0.0009765625Ki", 1},
	};
	static const struct bad bad[] = {
	    {"1.5", -EINVAL},		/* 1.5 bytes */
	    {"0.1Ki", -EINVAL},		/* 102.4 bytes */
	    {"0.0000000001G", -EINVAL}, /* 0.1 bytes */
	    {"1.00000000000000000001Gi", -EINVAL},
	};

	(void)state;
	check_good(al_parse_size, "al_parse_size", good, ELEMENTSOF(good));
	check_bad(al_parse_size, "al_parse_size", bad, ELEMENTSOF(bad));
}

static void test_size_refuses_malformed_input(void **state)
{
	static const struct bad bad[] = {
	    COMMON_BAD("Mi"),  {"Mi", -EINVAL},	 {"1B", -EINVAL},
	    {"1KiB", -EINVAL}, {"1ki", -EINVAL}, {"1mi", -EINVAL},
	    {"1 Mi", -EINVAL}, {"1Pi", -EINVAL}, {"1MiMi", -EINVAL},
	};

	(void)state;
	check_bad(al_parse_size, "al_parse_size", bad, ELEMENTSOF(bad));
}

static void test_size_overflow_is_erange(void **state)
{
	static const struct bad bad[] = {
	    {"18446744073709551616", -ERANGE},
	    {"99999999999999999999999", -ERANGE},
	    {"16777216Ti", -ERANGE},
	    {"18446744073709551615.5k", -ERANGE},
	};

	(void)state;
	check_bad(al_parse_size, "al_parse_size", bad, ELEMENTSOF(bad));
}

static void test_cpu_accepts_decimals_and_millicores(void **state)
{
	static const struct good good[] = {
	    {"1.0", 1000},
	    {"2", 2000},
	    {"0.5", 500},
	    {"500m", 500},
	    {"0.001", 1},
	    {"1.000", 1000},
	    {"1m", 1},
	    {"64", 64000},
	    {"02", 2000},
	    {"0.25", 250},
	    {"18446744073709551615m", UINT64_MAX},
	};

	(void)state;
	check_good(al_parse_cpu, "al_parse_cpu", good, ELEMENTSOF(good));
}

static void test_cpu_refuses_zero_and_extra_decimals(void **state)
{
	static const struct bad bad[] = {
	    COMMON_BAD(""),	   COMMON_BAD("m"),	{"0", -EINVAL},	     {"0.0", -EINVAL},
	    {"0m", -EINVAL},	   {"0.0001", -EINVAL}, {"1.0000", -EINVAL}, {"1.5m", -EINVAL},
	    {"m", -EINVAL},	   {"1 m", -EINVAL},	{"1M", -EINVAL},     {"1mm", -EINVAL},
	    {"1000mcpu", -EINVAL},
	};

	(void)state;
	check_bad(al_parse_cpu, "al_parse_cpu", bad, ELEMENTSOF(bad));
}

static void test_cpu_overflow_is_erange(void **state)
{
	static const struct bad bad[] = {
	    {"18446744073709551616m", -ERANGE},
	    {"18446744073709552", -ERANGE}, /* * 1000 does not fit */
	    {"99999999999999999999999", -ERANGE},
	};

	(void)state;
	check_bad(al_parse_cpu, "al_parse_cpu", bad, ELEMENTSOF(bad));
}

static void test_duration_accepts_every_unit_and_combinations(void **state)
{
	static const struct good good[] = {
	    {"0s", 0},
	    {"1us", 1},
	    {"250ms", 250000},
	    {"30s", 30000000},
	    {"5m", 300000000},
	    {"1h", UINT64_C(3600000000)},
	    {"2d", UINT64_C(172800000000)},
	    {"1m30s", 90000000},
	    {"1h05m", UINT64_C(3900000000)},
	    {"1d2h3m4s5ms6us", UINT64_C(93784005006)},
	    {"1s500ms", 1500000},
	    {"18446744073709551615us", UINT64_MAX},
	    {"213503982d", UINT64_C(18446744044800000000)},
	};

	(void)state;
	check_good(al_parse_duration, "al_parse_duration", good, ELEMENTSOF(good));
}

static void test_duration_needs_a_unit_for_every_number_in_order(void **state)
{
	static const struct bad bad[] = {
	    COMMON_BAD("s"),	{"30", -EINVAL},  {"1m30", -EINVAL},
	    {"30s1m", -EINVAL}, /* units from the largest down */
	    {"1s1s", -EINVAL},	/* each unit once */
	    {"1ms1s", -EINVAL}, {"1x", -EINVAL},  {"1sec", -EINVAL},
	    {"1 s", -EINVAL},	{"1S", -EINVAL},  {"1.5s", -EINVAL},
	    {"s", -EINVAL},	{"1s ", -EINVAL}, {"1µs", -EINVAL},
	};

	(void)state;
	check_bad(al_parse_duration, "al_parse_duration", bad, ELEMENTSOF(bad));
}

/* "0" is zero in every unit: `session start --ttl 0` (never) needs no unit. Only a lone 0. */
static void test_duration_accepts_a_lone_zero_without_a_unit(void **state)
{
	static const struct good good[] = {{"0", 0}};
	static const struct bad bad[] = {
	    {"00", -EINVAL}, {"1m0", -EINVAL}, {"0 ", -EINVAL},
	    {" 0", -EINVAL}, {"-0", -EINVAL},  {"0.0", -EINVAL},
	};

	(void)state;
	check_good(al_parse_duration, "al_parse_duration", good, ELEMENTSOF(good));
	check_bad(al_parse_duration, "al_parse_duration", bad, ELEMENTSOF(bad));
}

static void test_duration_overflow_is_erange(void **state)
{
	static const struct bad bad[] = {
	    {"18446744073709551616us", -ERANGE},
	    {"213503983d", -ERANGE},   /* the product does not fit */
	    {"213503982d9h", -ERANGE}, /* the sum does not fit */
	};

	(void)state;
	check_bad(al_parse_duration, "al_parse_duration", bad, ELEMENTSOF(bad));
}

static void test_format_size_uses_the_largest_exact_unit(void **state)
{
	static const struct good cases[] = {
	    {"0", 0},
	    {"1", 1},
	    {"1536", 1536},
	    {"1k", 1000},
	    {"1Ki", 1024},
	    {"1000Ki", 1024000},
	    {"2M", 2000000},
	    {"512Mi", UINT64_C(512) << 20},
	    {"1536Mi", UINT64_C(3) << 29},
	    {"1Ti", UINT64_C(1) << 40},
	    {"16777215Ti", UINT64_C(16777215) << 40},
	    {"18446744073709551615", UINT64_MAX},
	};
	char buf[32];

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		uint64_t back = 0;

		assert_int_equal(al_format_size(cases[i].v, buf, sizeof(buf)), 0);
		assert_string_equal(buf, cases[i].s);
		/* Whatever it prints parses back to the same number. */
		assert_int_equal(al_parse_size(buf, &back), 0);
		assert_int_equal(back, cases[i].v);
	}
}

static void test_format_size_reports_a_short_buffer(void **state)
{
	char buf[5];

	(void)state;
	assert_int_equal(al_format_size(UINT64_C(512) << 20, buf, sizeof(buf)), -ENOBUFS);
	assert_int_equal(al_format_size(1234, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "1234");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_size_accepts_bytes_and_both_unit_families),
	    cmocka_unit_test(test_size_accepts_fractions_of_whole_bytes_only),
	    cmocka_unit_test(test_size_refuses_malformed_input),
	    cmocka_unit_test(test_size_overflow_is_erange),
	    cmocka_unit_test(test_cpu_accepts_decimals_and_millicores),
	    cmocka_unit_test(test_cpu_refuses_zero_and_extra_decimals),
	    cmocka_unit_test(test_cpu_overflow_is_erange),
	    cmocka_unit_test(test_duration_accepts_every_unit_and_combinations),
	    cmocka_unit_test(test_duration_needs_a_unit_for_every_number_in_order),
	    cmocka_unit_test(test_duration_accepts_a_lone_zero_without_a_unit),
	    cmocka_unit_test(test_duration_overflow_is_erange),
	    cmocka_unit_test(test_format_size_uses_the_largest_exact_unit),
	    cmocka_unit_test(test_format_size_reports_a_short_buffer),
	};

	return cmocka_run_group_tests_name("parse-util", tests, NULL, NULL);
}
