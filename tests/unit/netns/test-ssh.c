/* tests/unit/netns/test-ssh.c: the clear start of SSH connections (netns/ssh.c). Real OpenSSH
 * 9.2 connections, captured for this test (both directions through a relay; client ssh, server
 * sshd with a throwaway host key, tests/fuzz/corpus/ssh/): the host key is found under the
 * hybrid post-quantum, the group-exchange and the ECDH key exchanges, fed whole or a byte at a
 * time; and the refusals, on packets made here. */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "netns/ssh-internal.h"

/* The Ed25519 host key of the first capture, as its .pub file holds it (base64 decoded). */
static const uint8_t ed25519_hostkey[] = {
    0x00, 0x00, 0x00, 0x0b, 's',  's',	0x68, '-',  'e',  'd',	'2',  '5',  '5',
    '1',  '9',	0x00, 0x00, 0x00, 0x20, 0x11, 0x1a, 0xa4, 0xfd, 0x54, 0x6a, 0x0e,
    0x25, 0x50, 0x59, 0xb0, 0xcd, 0xdf, 0x7f, 0x78, 0xa9, 0x67, 0xc8, 0xd4, 0x95,
    0x13, 0xac, 0x0c, 0xd0, 0xf7, 0xdd, 0xc3, 0xc8, 0x04, 0x2c, 0xed, 0xca,
};

static uint8_t *load(const char *name, size_t *ret_len)
{
	char path[4096];
	uint8_t *buf = malloc(1 << 20);
	FILE *f;

	assert_non_null(buf);
	(void)snprintf(path, sizeof(path), "%s/tests/fuzz/corpus/ssh/%s",
		       getenv("AIRLOCK_SOURCE_ROOT"), name);
	f = fopen(path, "rb");
	assert_non_null(f);
	*ret_len = fread(buf, 1, 1 << 20, f);
	fclose(f);
	return buf;
}

/* Feeds a capture ([direction][u16 length][bytes]...) in pieces of at most step bytes. */
static int replay(struct netns_ssh_watch *w, const uint8_t *d, size_t size, size_t step)
{
	struct al_error err = {0};

	while (size >= 3) {
		size_t n = (size_t)d[1] << 8 | d[2];

		for (size_t off = 0; off < n; off += step) {
			int r = netns_ssh_feed(w, d[0] & 1, d + 3 + off, MIN(step, n - off), &err);

			if (r < 0)
				return r;
		}
		d += 3 + n;
		size -= 3 + n;
	}
	return 0;
}

static void check_capture(const char *name, const char *kex, const uint8_t *key, size_t key_len,
			  const char *key_type)
{
	size_t size, len;
	uint8_t *cap = load(name, &size);

	for (size_t step = 1; step <= 65536; step *= 64) {
		struct netns_ssh_watch w = {0};
		const uint8_t *got;

		assert_int_equal(replay(&w, cap, size, step), 0);
		assert_string_equal(w.kex, kex);
		got = netns_ssh_hostkey(&w, &len);
		assert_non_null(got);
		if (key) {
			assert_int_equal(len, key_len);
			assert_memory_equal(got, key, key_len);
		}
		assert_memory_equal(got + 4, key_type, strlen(key_type));
		/* Both directions went encrypted: nothing more is read. */
		assert_int_equal(w.client.state, NETNS_SSH_DONE);
		assert_int_equal(w.server.state, NETNS_SSH_DONE);
		netns_ssh_watch_done(&w);
	}
	free(cap);
}

static void test_real_connections_give_their_host_key(void **state)
{
	(void)state;
	check_capture("openssh-9.2-sntrup761-ed25519", "sntrup761x25519-sha512", ed25519_hostkey,
		      sizeof(ed25519_hostkey), "ssh-ed25519");
	check_capture("openssh-9.2-diffie-hellman-group-exchange-sha256-rsa",
		      "diffie-hellman-group-exchange-sha256", NULL, 0, "ssh-rsa");
	check_capture("openssh-9.2-ecdh-sha2-nistp256-rsa", "ecdh-sha2-nistp256", NULL, 0,
		      "ssh-rsa");
}

/* A packet with payload p (n bytes) and 4 bytes of padding, unencrypted. */
static size_t pack(uint8_t *out, const void *p, size_t n)
{
	size_t pad = 4 + (8 - (n + 5 + 4) % 8) % 8, len = 1 + n + pad;

	out[0] = (uint8_t)(len >> 24), out[1] = (uint8_t)(len >> 16);
	out[2] = (uint8_t)(len >> 8), out[3] = (uint8_t)len;
	out[4] = (uint8_t)pad;
	memcpy(out + 5, p, n);
	memset(out + 5 + n, 0, pad);
	return 4 + len;
}

/* KEXINIT with the kex_algorithms list names. */
static size_t kexinit(uint8_t *out, const char *names)
{
	uint8_t p[512] = {20};
	size_t l = strlen(names);

	p[17] = (uint8_t)(l >> 24), p[18] = (uint8_t)(l >> 16), p[19] = (uint8_t)(l >> 8);
	p[20] = (uint8_t)l;
	memcpy(p + 21, names, l);
	return pack(out, p, 21 + l + 40);
}

static size_t reply(uint8_t *out, uint8_t type)
{
	uint8_t p[64] = {type, 0, 0, 0, 11};

	memcpy(p + 5, "ssh-ed25519", 11);
	return pack(out, p, 16);
}

static int feed(struct netns_ssh_watch *w, bool server, const void *p, size_t n)
{
	return netns_ssh_feed(w, server, p, n, NULL);
}

static void test_refusals(void **state)
{
	struct netns_ssh_watch w = {0};
	uint8_t b[1024];
	size_t n;

	(void)state;
	/* A server may say other lines first; a client may not. */
	assert_int_equal(feed(&w, true, "hello\r\nthere\nSSH-2.0-x\r\n", 24), 0);
	assert_int_equal(w.server.state, NETNS_SSH_PACKET);
	assert_int_equal(feed(&w, false, "hi\r\n", 4), -EBADMSG);
	assert_int_equal(feed(&w, false, "SSH-2.0-y\r\n", 11), -EBADMSG); /* kept */
	netns_ssh_watch_done(&w);

	w = (struct netns_ssh_watch){0};
	assert_int_equal(feed(&w, false, "SSH-1.5-old\r\n", 13), -EPROTONOSUPPORT);
	netns_ssh_watch_done(&w);

	w = (struct netns_ssh_watch){0};
	for (int i = 0; i < NETNS_SSH_LINES_MAX; i++)
		assert_int_equal(feed(&w, true, "x\n", 2), 0);
	assert_int_equal(feed(&w, true, "x\n", 2), -EBADMSG);
	netns_ssh_watch_done(&w);

	/* A line too long; a packet too long or too short. */
	w = (struct netns_ssh_watch){0};
	memset(b, 'a', 300);
	assert_int_equal(feed(&w, true, b, 300), -EBADMSG);
	netns_ssh_watch_done(&w);
	w = (struct netns_ssh_watch){0};
	assert_int_equal(feed(&w, true, "SSH-2.0-x\r\n\x00\x01\x00\x00", 15), -EBADMSG);
	netns_ssh_watch_done(&w);
	w = (struct netns_ssh_watch){0};
	assert_int_equal(feed(&w, true, "SSH-2.0-x\r\n\x00\x00\x00\x02", 15), -EBADMSG);
	netns_ssh_watch_done(&w);

	/* A reply before both KEXINITs; a key exchange whose reply is not known (GSS-API); two
	 * host keys; and the agreed one with its host key. */
	w = (struct netns_ssh_watch){0};
	assert_int_equal(feed(&w, true, "SSH-2.0-x\r\n", 11), 0);
	n = reply(b, 31);
	assert_int_equal(feed(&w, true, b, n), -EBADMSG);
	netns_ssh_watch_done(&w);

	w = (struct netns_ssh_watch){0};
	assert_int_equal(feed(&w, true, "SSH-2.0-x\r\n", 11), 0);
	assert_int_equal(feed(&w, false, "SSH-2.0-y\r\n", 11), 0);
	n = kexinit(b, "gss-group14-sha256-x,curve25519-sha256");
	assert_int_equal(feed(&w, false, b, n), 0);
	n = kexinit(b, "gss-group14-sha256-x");
	assert_int_equal(feed(&w, true, b, n), 0);
	n = reply(b, 31);
	assert_int_equal(feed(&w, true, b, n), -EPROTONOSUPPORT);
	netns_ssh_watch_done(&w);

	w = (struct netns_ssh_watch){0};
	assert_int_equal(feed(&w, true, "SSH-2.0-x\r\n", 11), 0);
	assert_int_equal(feed(&w, false, "SSH-2.0-y\r\n", 11), 0);
	n = kexinit(b, "ext-info-c,curve25519-sha256,ecdh-sha2-nistp256");
	assert_int_equal(feed(&w, false, b, n), 0);
	n = kexinit(b, "ecdh-sha2-nistp256,curve25519-sha256,ext-info-s");
	assert_int_equal(feed(&w, true, b, n), 0);
	assert_string_equal(w.kex, "curve25519-sha256"); /* the client's order decides */
	n = reply(b, 31);
	assert_int_equal(feed(&w, true, b, n), 0);
	assert_int_equal(w.hostkey_len, 11);
	assert_int_equal(feed(&w, true, b, n), -EBADMSG);
	netns_ssh_watch_done(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_real_connections_give_their_host_key),
	    cmocka_unit_test(test_refusals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
