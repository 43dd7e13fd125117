/* tests/unit/broker/test-ssh-key.c: OpenSSH private keys for the vault (broker/ssh-key.c) and
 * the bcrypt_pbkdf they are encrypted with (broker/bcrypt-pbkdf.c). The keys below are test keys
 * made for this file by OpenSSH 9.2's ssh-keygen (Ed25519 without and with a passphrase, ECDSA
 * P-256 and RSA with one, "correct horse"); the fingerprints are what ssh-keygen -l prints for
 * them. A key decrypts only when bcrypt_pbkdf and Blowfish's tables are right to the last bit. */

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

static struct broker_secret *secret(const char *s)
{
	struct broker_secret *v = broker_secret_new(strlen(s));

	assert_non_null(v);
	memcpy(v->data, s, strlen(s));
	return v;
}

/* Blowfish starts from pi's fraction in hexadecimal: 3.243F6A88 85A308D3 13198A2E 03707344 ...;
 * its first S-box from D1310BA6, its last ends with 3AC372E6. */
static void test_blowfish_tables_are_pi(void **state)
{
	(void)state;
	assert_int_equal(broker_blowfish_pi_word(0), 0x243F6A88);
	assert_int_equal(broker_blowfish_pi_word(1), 0x85A308D3);
	assert_int_equal(broker_blowfish_pi_word(2), 0x13198A2E);
	assert_int_equal(broker_blowfish_pi_word(3), 0x03707344);
	assert_int_equal(broker_blowfish_pi_word(18), 0xD1310BA6);
	assert_int_equal(broker_blowfish_pi_word(18 + 4 * 256 - 1), 0x3AC372E6);
}

static void import(const char *text, const char *pass, int want, const char *type, const char *fp,
		   const char *comment)
{
	struct broker_secret *p = pass ? secret(pass) : NULL, *stored = NULL;
	struct broker_ssh_key k, again;
	struct al_error err = {0};
	int r = broker_ssh_key_import(text, strlen(text), p, &k, &stored, &err);

	if (r != want)
		fail_msg("import: %d (%s), not %d", r, err.msg, want);
	if (r == 0) {
		assert_string_equal(k.type, type);
		assert_string_equal(k.fingerprint, fp);
		assert_string_equal(k.comment, comment);
		/* What the vault keeps is a key again, the same one, with no cipher. */
		assert_true(broker_ssh_key_is_stored(stored));
		assert_int_equal(broker_ssh_key_parse(stored, &again, &err), 0);
		assert_false(again.encrypted);
		assert_string_equal(again.fingerprint, fp);
		assert_string_equal(again.type, type);
		assert_null(memmem(stored->data, stored->len, "aes256-ctr", 10));
	}
	broker_secret_free(stored);
	broker_secret_free(p);
}

static void test_keys_import_with_their_fingerprints(void **state)
{
	(void)state;
	import(KEY_ED25519_PLAIN, NULL, 0, "ssh-ed25519",
	       "SHA256:sKS5a+B1ZaowH5pEOOlRufHat65AXN1Kj0QDhgvdwIw", "plain@airlock");
	import(KEY_ED25519_ENC, "correct horse", 0, "ssh-ed25519",
	       "SHA256:/kHVCm7yMvM0MS32f9/kK7N9DoJOpqBpQG4XNbWawsY", "enc@airlock");
	import(KEY_ECDSA_ENC, "correct horse", 0, "ecdsa-sha2-nistp256",
	       "SHA256:FpmIyjA6Y4KwWDx2b6RFJn7qN8A+emwfq//B3NJvD1c", "ecdsa@airlock");
	import(KEY_RSA_ENC, "correct horse", 0, "ssh-rsa",
	       "SHA256:epZrXxoumsXJ0mSkji8scNVnTiOY/cHnsNeGskQlVh8", "rsa@airlock");
}

static void test_passphrase_is_needed_and_checked(void **state)
{
	(void)state;
	assert_true(broker_ssh_key_is_encrypted(KEY_ED25519_ENC, strlen(KEY_ED25519_ENC)));
	assert_false(broker_ssh_key_is_encrypted(KEY_ED25519_PLAIN, strlen(KEY_ED25519_PLAIN)));
	import(KEY_ED25519_ENC, NULL, -ENOKEY, NULL, NULL, NULL);
	import(KEY_ED25519_ENC, "correct horsE", -EACCES, NULL, NULL, NULL);
	import(KEY_RSA_ENC, "wrong", -EACCES, NULL, NULL, NULL);
}

static void test_what_is_not_a_key_is_refused(void **state)
{
	char *t = strdup(KEY_ED25519_PLAIN), *line;

	(void)state;
	assert_non_null(t);
	import("ghp_0123456789abcdef", NULL, -EINVAL, NULL, NULL, NULL);
	import("-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n", NULL,
	       -EINVAL, NULL, NULL, NULL);
	import("-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn!!\n-----END OPENSSH PRIVATE KEY-----\n",
	       NULL, -EBADMSG, NULL, NULL, NULL);
	import("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEA\n", NULL, -EBADMSG, NULL,
	       NULL, NULL);
	/* A byte of the public key changed (in the second line of base64): it no longer matches
	 * the private part. */
	line = strchr(t, '\n') + 1;
	line = strchr(line, '\n') + 1;
	line[10] = line[10] == 'A' ? 'B' : 'A';
	import(t, NULL, -EBADMSG, NULL, NULL, NULL);
	free(t);
}

static void test_bcrypt_pbkdf_refuses_what_is_out_of_range(void **state)
{
	uint8_t key[48];

	(void)state;
	assert_int_equal(broker_bcrypt_pbkdf("p", 1, (const uint8_t *)"salt", 4, 0, key, 48),
			 -EINVAL);
	assert_int_equal(broker_bcrypt_pbkdf("p", 1, (const uint8_t *)"salt", 4, 1U << 20, key, 48),
			 -EINVAL);
	assert_int_equal(broker_bcrypt_pbkdf("p", 1, (const uint8_t *)"", 0, 16, key, 48), -EINVAL);
	assert_int_equal(broker_bcrypt_pbkdf("p", 1, (const uint8_t *)"salt", 4, 2, key, 48), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_blowfish_tables_are_pi),
	    cmocka_unit_test(test_keys_import_with_their_fingerprints),
	    cmocka_unit_test(test_passphrase_is_needed_and_checked),
	    cmocka_unit_test(test_what_is_not_a_key_is_refused),
	    cmocka_unit_test(test_bcrypt_pbkdf_refuses_what_is_out_of_range),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
