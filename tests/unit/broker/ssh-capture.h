#pragma once

/* An agent socket's capture, as tests/fuzz/corpus/ssh-agent/ holds them (recorded through a relay
 * between OpenSSH's ssh and ssh-agent): records of a byte (bit 0 set: from the agent), a
 * big-endian u16 length and the bytes. For the broker's unit tests; include after cmocka.h. */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads the capture name into the client's bytes and the agent's, each at most size. */
static inline void ssh_capture_read(const char *name, uint8_t *client, size_t *ret_client,
				    uint8_t *agent, size_t *ret_agent, size_t size)
{
	char path[4096];
	uint8_t cap[8192], *d = cap;
	size_t n_cap;
	FILE *f;

	(void)snprintf(path, sizeof(path), "%s/tests/fuzz/corpus/ssh-agent/%s",
		       getenv("AIRLOCK_SOURCE_ROOT"), name);
	f = fopen(path, "rb");
	assert_non_null(f);
	n_cap = fread(cap, 1, sizeof(cap), f);
	fclose(f);
	*ret_client = *ret_agent = 0;
	while (n_cap >= 3) {
		size_t n = (size_t)d[1] << 8 | d[2];
		uint8_t *to = d[0] & 1 ? agent : client;
		size_t *at = d[0] & 1 ? ret_agent : ret_client;

		assert_true(n <= n_cap - 3 && *at + n <= size);
		memcpy(to + *at, d + 3, n);
		*at += n;
		d += 3 + n;
		n_cap -= 3 + n;
	}
}
