/* tests/unit/netns/test-synth.c: synthetic addresses for names. */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "netns/netns-internal.h"

static void test_a_name_keeps_its_address_and_maps_back(void **state)
{
	_cleanup_(netns_synth_freep) struct netns_synth *s = NULL;
	uint8_t a[4], b[4], c[4];

	(void)state;
	assert_int_equal(netns_synth_new(&s), 0);
	assert_int_equal(netns_synth_addr(s, "api.github.com", a), 0);
	assert_int_equal(netns_synth_addr(s, "pypi.org", b), 0);
	assert_int_equal(netns_synth_addr(s, "api.github.com", c), 0);
	assert_memory_equal(a, ((uint8_t[]){198, 18, 0, 1}), 4);
	assert_memory_equal(b, ((uint8_t[]){198, 18, 0, 2}), 4);
	assert_memory_equal(a, c, 4);
	assert_string_equal(netns_synth_name(s, a), "api.github.com");
	assert_string_equal(netns_synth_name(s, b), "pypi.org");
	assert_null(netns_synth_name(s, ((uint8_t[]){198, 18, 0, 3}))); /* not given yet */
	assert_null(netns_synth_name(s, ((uint8_t[]){198, 18, 0, 0})));
	assert_null(netns_synth_name(s, ((uint8_t[]){203, 0, 113, 1}))); /* not synthetic */
}

static void test_every_address_of_the_range_is_given_once_then_enospc(void **state)
{
	_cleanup_(netns_synth_freep) struct netns_synth *s = NULL;
	char name[32];
	uint8_t a[4];

	(void)state;
	assert_int_equal(netns_synth_new(&s), 0);
	for (uint32_t i = 1; i <= NETNS_SYNTH_MAX; i++) {
		(void)snprintf(name, sizeof(name), "h%u.example", i);
		assert_int_equal(netns_synth_addr(s, name, a), 0);
		assert_int_equal(a[0], 198);
		assert_int_equal(((uint32_t)(a[1] - 18) << 16 | (uint32_t)a[2] << 8 | a[3]), i);
	}
	assert_memory_equal(a, ((uint8_t[]){198, 19, 255, 254}), 4);
	assert_int_equal(netns_synth_addr(s, "one.more.example", a), -ENOSPC);
	/* Names given keep theirs. */
	assert_int_equal(netns_synth_addr(s, "h77.example", a), 0);
	assert_memory_equal(a, ((uint8_t[]){198, 18, 0, 77}), 4);
	assert_string_equal(netns_synth_name(s, ((uint8_t[]){198, 19, 0, 5})), "h65541.example");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_a_name_keeps_its_address_and_maps_back),
	    cmocka_unit_test(test_every_address_of_the_range_is_given_once_then_enospc),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
