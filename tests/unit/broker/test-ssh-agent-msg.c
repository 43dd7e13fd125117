/* tests/unit/broker/test-ssh-agent-msg.c: the SSH agent protocol as airlock's agent reads it
 * (broker/ssh-agent-msg.c), on a real exchange: OpenSSH 9.2's ssh logging in to sshd with a key
 * in ssh-agent, the agent socket captured through a relay (tests/fuzz/corpus/ssh-agent/; the
 * host key is the throwaway one of tests/fuzz/corpus/ssh/openssh-9.2-sntrup761-ed25519, the
 * user key ssh-test-keys.h's KEY_ED25519_PLAIN): the session-bind verifies with the host key,
 * and the sign request is allowed. Then each refusal, on that exchange changed. Then logins
 * captured the same way to an sshd with an ECDSA or an RSA host key, with ECDSA and RSA user
 * keys: each bind verifies, changed it does not, and the broker's signatures are ssh-agent's
 * (RSA: the same bytes). */

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
#include "tests/unit/broker/ssh-capture.h"
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

/* The client's bytes of the capture name, framed and parsed: its session-bind and its sign
 * request. */
static void load_capture(struct exchange *x, const char *name)
{
	ssh_capture_read(name, x->buf, &x->n, x->answers, &x->n_answers, sizeof(x->buf));
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

static void load(struct exchange *x)
{
	load_capture(x, "openssh-9.2-login-ed25519");
}

/* The signature blob of the agent's SIGN_RESPONSE (14) in the capture's answers. */
static struct al_wire agent_signature(const struct exchange *x)
{
	struct al_wire sig = {0};

	for (size_t off = 0; off + 5 <= x->n_answers;) {
		size_t len = (size_t)x->answers[off] << 24 | (size_t)x->answers[off + 1] << 16 |
			     (size_t)x->answers[off + 2] << 8 | x->answers[off + 3];

		if (x->answers[off + 4] == 14) {
			sig.len = (size_t)x->answers[off + 5] << 24 |
				  (size_t)x->answers[off + 6] << 16 |
				  (size_t)x->answers[off + 7] << 8 | x->answers[off + 8];
			sig.p = x->answers + off + 9;
		}
		off += 4 + len;
	}
	assert_non_null(sig.p);
	return sig;
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
	struct broker_ssh_key k;
	struct al_error err = {0};
	struct exchange x;
	struct al_wire want;

	(void)state;
	load(&x);
	want = agent_signature(&x);
	text = broker_secret_new(strlen(KEY_ED25519_PLAIN));
	assert_non_null(text);
	memcpy(text->data, KEY_ED25519_PLAIN, text->len);
	assert_int_equal(broker_ssh_key_import(text->data, text->len, NULL, &k, &stored, &err), 0);
	assert_int_equal(
	    broker_ssh_key_sign(stored, x.sign.data.p, x.sign.data.len, x.sign.flags, &sig, &err),
	    0);
	assert_int_equal(sig->len, want.len);
	assert_memory_equal(sig->data, want.p, want.len);
	broker_secret_free(sig);
	broker_secret_free(stored);
	broker_secret_free(text);
}

/* ---- ECDSA and RSA: logins of OpenSSH 9.2 captured the same way, to an sshd with one host key
 * (ECDSA P-256, P-384, P-521; RSA 3072 signing rsa-sha2-512, RSA 2048 signing rsa-sha2-256),
 * with a user key of ssh-test-keys.h in ssh-agent (RSA 3072 asked for rsa-sha2-512 and, told
 * to by PubkeyAcceptedAlgorithms, rsa-sha2-256; ECDSA P-384, P-521, P-256). ---- */

static const struct capture {
	const char *name, *hostkey_type, *bind_sig_type, *user_key;
	uint32_t flags; /* the sign request's */
} captures[] = {
    {"openssh-9.2-login-ecdsa256-host-rsa-user", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp256",
     KEY_RSA3072_PLAIN, BROKER_SSH_AGENT_RSA_SHA2_512},
    {"openssh-9.2-login-ecdsa384-host-rsa-sha256-user", "ecdsa-sha2-nistp384",
     "ecdsa-sha2-nistp384", KEY_RSA3072_PLAIN, BROKER_SSH_AGENT_RSA_SHA2_256},
    {"openssh-9.2-login-ecdsa521-host-ecdsa521-user", "ecdsa-sha2-nistp521", "ecdsa-sha2-nistp521",
     KEY_ECDSA521_PLAIN, 0},
    {"openssh-9.2-login-rsa3072-host-ecdsa384-user", "ssh-rsa", "rsa-sha2-512", KEY_ECDSA384_PLAIN,
     0},
    {"openssh-9.2-login-rsa2048-sha256-host-ecdsa256-user", "ssh-rsa", "rsa-sha2-256",
     KEY_ECDSA256_PLAIN, 0},
};

/* Whether the wire string at the start of w is text. */
static bool starts_with_string(const struct al_wire *w, const char *text)
{
	struct al_wire c = *w, s;

	return al_wire_take_string(&c, &s) && al_wire_is(&s, text);
}

/* The bind of x with the signature blob changed: sig (a copy of it, len bytes) verified. */
static int verify_with_signature(const struct exchange *x, const uint8_t *sig, size_t len)
{
	struct broker_ssh_agent_msg m = x->bind;

	m.signature = (struct al_wire){sig, len};
	return broker_ssh_bind_verify(&m);
}

/* Each real bind verifies with its ECDSA or RSA host key, as OpenSSH's agent verified it; with
 * the session id, the signature, the host key or the signature's type changed, it does not. */
static void test_real_ecdsa_and_rsa_host_keys_bind(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(captures) / sizeof(captures[0]); i++) {
		const struct capture *c = &captures[i];
		struct broker_ssh_agent_msg m;
		struct broker_ssh_sign_data d;
		struct broker_ssh_bind b;
		struct broker_ssh_policy p;
		uint8_t sid[64], sig[1024], hk[1024];
		const char *why = NULL;
		bool rsa = strcmp(c->hostkey_type, "ssh-rsa") == 0;
		struct exchange x;
		size_t n;

		load_capture(&x, c->name);
		assert_int_equal(x.bind.type, BROKER_SSH_AGENT_SESSION_BIND);
		assert_true(starts_with_string(&x.bind.hostkey, c->hostkey_type));
		assert_true(starts_with_string(&x.bind.signature, c->bind_sig_type));
		assert_int_equal(x.bind.session_id.len, 64);
		if (broker_ssh_bind_verify(&x.bind) != 0)
			fail_msg("%s: the bind does not verify", c->name);

		/* The login it binds is allowed, as with Ed25519. */
		assert_int_equal(broker_ssh_sign_data_parse(&x.sign.data, &d), 0);
		assert_int_equal(x.sign.flags, c->flags);
		b = (struct broker_ssh_bind){x.bind.hostkey, x.bind.session_id, false};
		p = (struct broker_ssh_policy){&x.bind.hostkey, 1, false};
		assert_int_equal(broker_ssh_agent_decide(&d, &x.sign.key, &b, 1, &p, &why), 0);

		/* Another session. */
		m = x.bind;
		memcpy(sid, m.session_id.p, sizeof(sid));
		sid[10] ^= 1;
		m.session_id.p = sid;
		assert_int_equal(broker_ssh_bind_verify(&m), -EPERM);

		/* The signature's last byte changed (ECDSA's s, the end of RSA's number). */
		n = x.bind.signature.len;
		assert_true(n <= sizeof(sig));
		memcpy(sig, x.bind.signature.p, n);
		sig[n - 1] ^= 1;
		assert_int_equal(verify_with_signature(&x, sig, n), -EPERM);
		sig[n - 1] ^= 1;
		assert_int_equal(verify_with_signature(&x, sig, n), 0);

		/* The signature's type changed: ECDSA's to another curve's; RSA's to the other
		 * hash, then to SHA-1's ssh-rsa, which is refused whatever it holds. */
		if (!rsa) {
			memcpy(sig + 4 + 16, c->bind_sig_type[16] == '5' ? "384" : "521", 3);
			assert_int_equal(verify_with_signature(&x, sig, n), -EBADMSG);
		} else {
			memcpy(sig + 4 + 9, c->bind_sig_type[9] == '5' ? "256" : "512", 3);
			assert_int_equal(verify_with_signature(&x, sig, n), -EPERM);
			sig[0] = sig[1] = sig[2] = 0, sig[3] = 7;
			memcpy(sig + 4, "ssh-rsa", 7);
			memmove(sig + 11, sig + 16, n - 16);
			assert_int_equal(verify_with_signature(&x, sig, n - 5), -EPROTONOSUPPORT);
		}

		/* The host key changed: an ECDSA point is then off its curve (malformed), an RSA
		 * modulus another key's. */
		m = x.bind;
		assert_true(m.hostkey.len <= sizeof(hk));
		memcpy(hk, m.hostkey.p, m.hostkey.len);
		hk[m.hostkey.len - 1] ^= 1;
		m.hostkey.p = hk;
		assert_int_equal(broker_ssh_bind_verify(&m), rsa ? -EPERM : -EBADMSG);
	}
}

/* RSA's PKCS #1 v1.5 signatures are deterministic: the broker's of each captured login, with
 * the flags the request gave (rsa-sha2-512, rsa-sha2-256), are ssh-agent's own, byte for byte. */
static void test_rsa_signatures_are_ssh_agents_own(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(captures) / sizeof(captures[0]); i++) {
		const struct capture *c = &captures[i];
		struct broker_secret *stored = NULL, *sig = NULL;
		struct al_error err = {0};
		struct broker_ssh_key k;
		struct exchange x;
		struct al_wire want;

		if (strcmp(c->user_key, KEY_RSA3072_PLAIN) != 0)
			continue;
		load_capture(&x, c->name);
		want = agent_signature(&x);
		assert_int_equal(broker_ssh_key_import(c->user_key, strlen(c->user_key), NULL, &k,
						       &stored, &err),
				 0);
		assert_int_equal(broker_ssh_key_sign(stored, x.sign.data.p, x.sign.data.len,
						     x.sign.flags, &sig, &err),
				 0);
		assert_true(starts_with_string(&want, c->flags == BROKER_SSH_AGENT_RSA_SHA2_256
							  ? "rsa-sha2-256"
							  : "rsa-sha2-512"));
		assert_int_equal(sig->len, want.len);
		assert_memory_equal(sig->data, want.p, want.len);
		broker_secret_free(sig);
		broker_secret_free(stored);
	}
}

/* ECDSA's signatures are not deterministic: ssh-agent's of each captured login verifies with the
 * user's key over the request's data, and so does the broker's, of the same form. */
static void test_ecdsa_signatures_are_of_ssh_agents_form(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(captures) / sizeof(captures[0]); i++) {
		const struct capture *c = &captures[i];
		struct broker_secret *stored = NULL, *sig = NULL;
		struct al_error err = {0};
		struct broker_ssh_key k;
		struct exchange x;
		struct al_wire theirs, ours, type;
		uint8_t *pub = NULL;
		size_t pub_len = 0;

		if (strcmp(c->user_key, KEY_RSA3072_PLAIN) == 0)
			continue;
		load_capture(&x, c->name);
		theirs = agent_signature(&x);
		assert_int_equal(broker_ssh_key_import(c->user_key, strlen(c->user_key), NULL, &k,
						       &stored, &err),
				 0);
		assert_int_equal(broker_ssh_key_public(stored, &k, &pub, &pub_len, &err), 0);
		assert_int_equal(x.sign.key.len, pub_len);
		assert_memory_equal(x.sign.key.p, pub, pub_len);
		assert_int_equal(
		    broker_ssh_verify(&x.sign.key, &theirs, x.sign.data.p, x.sign.data.len), 0);
		assert_int_equal(broker_ssh_key_sign(stored, x.sign.data.p, x.sign.data.len,
						     x.sign.flags, &sig, &err),
				 0);
		ours = (struct al_wire){(const uint8_t *)sig->data, sig->len};
		assert_true(starts_with_string(&ours, k.type));
		type = theirs;
		assert_true(starts_with_string(&type, k.type));
		assert_int_equal(
		    broker_ssh_verify(&x.sign.key, &ours, x.sign.data.p, x.sign.data.len), 0);
		broker_secret_free(sig);
		broker_secret_free(stored);
		free(pub);
	}
}

/* A bind by an RSA host key under 2048 bits is refused, whatever its signature. */
static void test_short_rsa_host_key_is_refused(void **state)
{
	struct broker_secret *pass = broker_secret_new(13), *stored = NULL;
	struct broker_ssh_key k;
	struct exchange x;
	uint8_t *pub = NULL;
	size_t pub_len = 0;

	(void)state;
	assert_non_null(pass);
	memcpy(pass->data, "correct horse", 13);
	assert_int_equal(
	    broker_ssh_key_import(KEY_RSA_ENC, strlen(KEY_RSA_ENC), pass, &k, &stored, NULL), 0);
	assert_int_equal(broker_ssh_key_public(stored, &k, &pub, &pub_len, NULL), 0);
	load_capture(&x, "openssh-9.2-login-rsa3072-host-ecdsa384-user");
	x.bind.hostkey = (struct al_wire){pub, pub_len};
	assert_int_equal(broker_ssh_bind_verify(&x.bind), -EPROTONOSUPPORT);
	free(pub);
	broker_secret_free(stored);
	broker_secret_free(pass);
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
	    cmocka_unit_test(test_real_ecdsa_and_rsa_host_keys_bind),
	    cmocka_unit_test(test_rsa_signatures_are_ssh_agents_own),
	    cmocka_unit_test(test_ecdsa_signatures_are_of_ssh_agents_form),
	    cmocka_unit_test(test_short_rsa_host_key_is_refused),
	    cmocka_unit_test(test_sshsig_only_for_git_when_allowed),
	    cmocka_unit_test(test_malformed_is_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
