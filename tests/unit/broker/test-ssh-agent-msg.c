/* tests/unit/broker/test-ssh-agent-msg.c: the SSH agent protocol as airlock's agent reads it
 * (broker/ssh-agent-msg.c), on a real exchange: OpenSSH 9.2's ssh logging in to sshd with a key
 * in ssh-agent, the agent socket captured through a relay (tests/fuzz/corpus/ssh-agent/; the
 * host key is the throwaway one of tests/fuzz/corpus/ssh/openssh-9.2-sntrup761-ed25519, the
 * user key tests/unit/broker/test-ssh-key.c's KEY_ED25519_PLAIN): the session-bind verifies
 * with the host key, and the sign request is allowed. Then each refusal, on that exchange
 * changed. */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "broker/broker-internal.h"
#include "tests/unit/broker/ssh-test-keys.h"

static const uint8_t host_key[] = {
    0x00, 0x00, 0x00, 0x0b, 's',  's',	0x68, '-',  'e',  'd',	'2',  '5',  '5',
    '1',  '9',	0x00, 0x00, 0x00, 0x20, 0x11, 0x1a, 0xa4, 0xfd, 0x54, 0x6a, 0x0e,
    0x25, 0x50, 0x59, 0xb0, 0xcd, 0xdf, 0x7f, 0x78, 0xa9, 0x67, 0xc8, 0xd4, 0x95,
    0x13, 0xac, 0x0c, 0xd0, 0xf7, 0xdd, 0xc3, 0xc8, 0x04, 0x2c, 0xed, 0xca,
};
static const uint8_t user_key_start[] = {0x00, 0x00, 0x00, 0x0b, 's',  's',  'h',  '-',
					 'e',  'd',  '2',  '5',	 '5',  '1',  '9',  0x00,
					 0x00, 0x00, 0x20, 0x8c, 0x25, 0xcd, 0x77, 0x60};

struct exchange {
	uint8_t buf[4096], answers[4096];
	size_t n, n_answers;
	struct broker_ssh_agent_msg bind, sign;
};

/* The client's bytes of the capture, framed and parsed: its session-bind and its sign request. */
static void load(struct exchange *x)
{
	char path[4096];
	uint8_t cap[8192], *d = cap;
	size_t size;
	FILE *f;

	(void)snprintf(path, sizeof(path),
		       "%s/tests/fuzz/corpus/ssh-agent/openssh-9.2-login-ed25519",
		       getenv("AIRLOCK_SOURCE_ROOT"));
	f = fopen(path, "rb");
	assert_non_null(f);
	size = fread(cap, 1, sizeof(cap), f);
	fclose(f);
	x->n = x->n_answers = 0;
	while (size >= 3) {
		size_t n = (size_t)d[1] << 8 | d[2];

		if (!(d[0] & 1)) {
			memcpy(x->buf + x->n, d + 3, n);
			x->n += n;
		} else {
			memcpy(x->answers + x->n_answers, d + 3, n);
			x->n_answers += n;
		}
		d += 3 + n;
		size -= 3 + n;
	}
	for (size_t off = 0; off < x->n;) {
		ssize_t len = broker_ssh_agent_frame(x->buf + off, x->n - off);
		struct broker_ssh_agent_msg m;

		assert_true(len > 0);
		/* A message cut short is not there yet. */
		assert_int_equal(broker_ssh_agent_frame(x->buf + off, (size_t)len - 1), 0);
		assert_int_equal(broker_ssh_agent_parse(x->buf + off + 4, (size_t)len - 4, &m), 0);
		if (m.type == BROKER_SSH_AGENT_SESSION_BIND)
			x->bind = m;
		if (m.type == BROKER_SSH_AGENT_SIGN)
			x->sign = m;
		off += (size_t)len;
	}
}

static void test_real_login_is_bound_and_allowed(void **state)
{
	struct exchange x;
	struct broker_ssh_sign_data d;
	struct broker_ssh_bind b;
	struct al_wire hk = {host_key, sizeof(host_key)};
	struct broker_ssh_policy p = {&hk, 1, false};
	const char *why = NULL;

	(void)state;
	load(&x);
	assert_int_equal(x.bind.type, BROKER_SSH_AGENT_SESSION_BIND);
	assert_int_equal(x.bind.hostkey.len, sizeof(host_key));
	assert_memory_equal(x.bind.hostkey.p, host_key, sizeof(host_key));
	assert_int_equal(x.bind.session_id.len, 64); /* sntrup761x25519-sha512: SHA-512 */
	assert_false(x.bind.forwarding);
	assert_int_equal(x.sign.type, BROKER_SSH_AGENT_SIGN);
	assert_memory_equal(x.sign.key.p, user_key_start, sizeof(user_key_start));
	assert_int_equal(broker_ssh_sign_data_parse(&x.sign.data, &d), 0);
	assert_int_equal(d.kind, BROKER_SSH_SIGN_USERAUTH);
	assert_int_equal(d.user.len, 10);
	assert_memory_equal(d.user.p, "sshcapuser", 10);
	assert_memory_equal(d.session_id.p, x.bind.session_id.p, 64);
	assert_int_equal(d.hostkey.len, sizeof(host_key)); /* publickey-hostbound-v00 */

	/* The bind is the host key's own signature over the session id; changed, it is not. */
	assert_int_equal(broker_ssh_bind_verify(&x.bind), 0);
	{
		uint8_t sid[64];
		struct broker_ssh_agent_msg forged = x.bind;

		memcpy(sid, x.bind.session_id.p, sizeof(sid));
		sid[0] ^= 1;
		forged.session_id.p = sid;
		assert_int_equal(broker_ssh_bind_verify(&forged), -EPERM);
		forged = x.bind;
		forged.signature.len -= 1;
		assert_int_equal(broker_ssh_bind_verify(&forged), -EBADMSG);
	}

	b = (struct broker_ssh_bind){x.bind.hostkey, x.bind.session_id, false};
	assert_int_equal(broker_ssh_agent_decide(&d, &x.sign.key, &b, 1, &p, &why), 0);

	/* Each refusal. */
	p.n_hostkeys = 0;
	assert_int_equal(broker_ssh_agent_decide(&d, &x.sign.key, &b, 1, &p, &why), -EPERM);
	assert_non_null(strstr(why, "was not seen on a connection to the key's destinations"));
	p.n_hostkeys = 1;
	assert_int_equal(broker_ssh_agent_decide(&d, &x.sign.key, &b, 0, &p, &why), -EPERM);
	assert_non_null(strstr(why, "no session-bind"));
	b.forwarding = true;
	assert_int_equal(broker_ssh_agent_decide(&d, &x.sign.key, &b, 1, &p, &why), -EPERM);
	assert_non_null(strstr(why, "forwarded"));
	b.forwarding = false;
	b.session_id.len = 32;
	assert_int_equal(broker_ssh_agent_decide(&d, &x.sign.key, &b, 1, &p, &why), -EPERM);
	assert_non_null(strstr(why, "another session"));
	b.session_id.len = 64;
	d.key.len--;
	assert_int_equal(broker_ssh_agent_decide(&d, &x.sign.key, &b, 1, &p, &why), -EPERM);
	assert_non_null(strstr(why, "another key"));
}

/* The agent's answer to the sign request in the capture is ssh-agent's own: a SIGN_RESPONSE
 * (14) holding the signature blob. Ed25519 signatures are deterministic, so the broker's, made
 * with the key as the vault keeps it, must be the very same bytes. */
static void test_signature_is_ssh_agents_own(void **state)
{
	struct broker_secret *text = NULL, *stored = NULL, *sig = NULL;
	const uint8_t *want = NULL;
	struct broker_ssh_key k;
	struct al_error err = {0};
	struct exchange x;
	size_t want_len = 0;

	(void)state;
	load(&x);
	for (size_t off = 0; off + 5 <= x.n_answers;) {
		size_t len = (size_t)x.answers[off] << 24 | (size_t)x.answers[off + 1] << 16 |
			     (size_t)x.answers[off + 2] << 8 | x.answers[off + 3];

		if (x.answers[off + 4] == 14) {
			want_len = (size_t)x.answers[off + 5] << 24 |
				   (size_t)x.answers[off + 6] << 16 |
				   (size_t)x.answers[off + 7] << 8 | x.answers[off + 8];
			want = x.answers + off + 9;
		}
		off += 4 + len;
	}
	assert_non_null(want);
	text = broker_secret_new(strlen(KEY_ED25519_PLAIN));
	assert_non_null(text);
	memcpy(text->data, KEY_ED25519_PLAIN, text->len);
	assert_int_equal(broker_ssh_key_import(text->data, text->len, NULL, &k, &stored, &err), 0);
	assert_int_equal(
	    broker_ssh_key_sign(stored, x.sign.data.p, x.sign.data.len, x.sign.flags, &sig, &err),
	    0);
	assert_int_equal(sig->len, want_len);
	assert_memory_equal(sig->data, want, want_len);
	broker_secret_free(sig);
	broker_secret_free(stored);
	broker_secret_free(text);
}

static void test_sshsig_only_for_git_when_allowed(void **state)
{
	static const uint8_t sig[] = "SSHSIG\0\0\0\3git\0\0\0\0\0\0\0\6sha512\0\0\0\2hh";
	static const uint8_t other[] = "SSHSIG\0\0\0\4file\0\0\0\0\0\0\0\6sha512\0\0\0\2hh";
	struct al_wire data = {sig, sizeof(sig) - 1}, key = {user_key_start, 4};
	struct broker_ssh_policy p = {NULL, 0, false};
	struct broker_ssh_sign_data d;
	const char *why;

	(void)state;
	assert_int_equal(broker_ssh_sign_data_parse(&data, &d), 0);
	assert_int_equal(d.kind, BROKER_SSH_SIGN_SSHSIG);
	assert_int_equal(broker_ssh_agent_decide(&d, &key, NULL, 0, &p, &why), -EPERM);
	assert_non_null(strstr(why, "commit signing is not allowed"));
	p.commit_signing = true;
	assert_int_equal(broker_ssh_agent_decide(&d, &key, NULL, 0, &p, &why), 0);
	data = (struct al_wire){other, sizeof(other) - 1};
	assert_int_equal(broker_ssh_sign_data_parse(&data, &d), 0);
	assert_int_equal(broker_ssh_agent_decide(&d, &key, NULL, 0, &p, &why), -EPERM);
	assert_non_null(strstr(why, "namespace"));
}

static void test_malformed_is_refused(void **state)
{
	struct broker_ssh_agent_msg m;
	struct broker_ssh_sign_data d;
	struct al_wire data = {(const uint8_t *)"\0\0\0\1x\x32", 6};
	uint8_t big[4] = {0x00, 0x10, 0x00, 0x00}, zero[4] = {0};

	(void)state;
	assert_int_equal(broker_ssh_agent_frame(big, 4), -EMSGSIZE);
	assert_int_equal(broker_ssh_agent_frame(zero, 4), -EMSGSIZE);
	assert_int_equal(broker_ssh_agent_frame(zero, 3), 0);
	assert_int_equal(broker_ssh_agent_parse((const uint8_t *)"\x0b\x00", 2, &m), -EBADMSG);
	assert_int_equal(broker_ssh_agent_parse((const uint8_t *)"\x0d\0\0\0\5ab", 7, &m),
			 -EBADMSG);
	assert_int_equal(broker_ssh_agent_parse((const uint8_t *)"\x11", 1, &m), 0);
	assert_int_equal(m.type, BROKER_SSH_AGENT_OTHER); /* ADD_IDENTITY: answered FAILURE */
	assert_int_equal(broker_ssh_sign_data_parse(&data, &d), -EBADMSG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_real_login_is_bound_and_allowed),
	    cmocka_unit_test(test_signature_is_ssh_agents_own),
	    cmocka_unit_test(test_sshsig_only_for_git_when_allowed),
	    cmocka_unit_test(test_malformed_is_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
