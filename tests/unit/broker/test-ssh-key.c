/* tests/unit/broker/test-ssh-key.c: OpenSSH private keys for the vault (broker/ssh-key.c) and
 * the bcrypt_pbkdf they are encrypted with (broker/bcrypt-pbkdf.c). The keys are test keys made
 * by OpenSSH 9.2's ssh-keygen (ssh-test-keys.h); the fingerprints are what ssh-keygen -l prints
 * for them. A key decrypts only when bcrypt_pbkdf and Blowfish's tables are right to the last
 * bit. The signatures the agent makes with each type of key (Ed25519, ECDSA P-256, P-384, P-521,
 * RSA with SHA-256 and SHA-512) are checked by OpenSSH itself: Debian's ssh-keygen -Y
 * check-novalidate takes a git SSHSIG made with them as good (it verifies with OpenSSH's
 * sshkey_verify(), as sshd does); and ssh-keygen's own signatures verify with the broker's
 * verifier. */

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <sodium.h>

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

/* ---- signatures: ECDSA, RSA and Ed25519, checked by OpenSSH's ssh-keygen ---- */

struct test_key {
	const char *text, *type, *fp;
	uint32_t flags; /* the sign request's */
	const char *sig_type;
};

static const struct test_key sign_keys[] = {
    {KEY_ED25519_PLAIN, "ssh-ed25519", "SHA256:sKS5a+B1ZaowH5pEOOlRufHat65AXN1Kj0QDhgvdwIw", 0,
     "ssh-ed25519"},
    {KEY_ECDSA256_PLAIN, "ecdsa-sha2-nistp256", KEY_ECDSA256_FP, 0, "ecdsa-sha2-nistp256"},
    {KEY_ECDSA384_PLAIN, "ecdsa-sha2-nistp384", KEY_ECDSA384_FP, 0, "ecdsa-sha2-nistp384"},
    {KEY_ECDSA521_PLAIN, "ecdsa-sha2-nistp521", KEY_ECDSA521_FP, 0, "ecdsa-sha2-nistp521"},
    {KEY_RSA3072_PLAIN, "ssh-rsa", KEY_RSA3072_FP, BROKER_SSH_AGENT_RSA_SHA2_512, "rsa-sha2-512"},
    {KEY_RSA3072_PLAIN, "ssh-rsa", KEY_RSA3072_FP, BROKER_SSH_AGENT_RSA_SHA2_256, "rsa-sha2-256"},
    /* Both asked: SHA-256, as OpenSSH's agent chooses. */
    {KEY_RSA3072_PLAIN, "ssh-rsa", KEY_RSA3072_FP,
     BROKER_SSH_AGENT_RSA_SHA2_256 | BROKER_SSH_AGENT_RSA_SHA2_512, "rsa-sha2-256"},
};

static const char message[] = "tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n"
			      "author airlock <airlock@example.org> 1700000000 +0000\n\n"
			      "a commit signed through the agent\n";

static struct broker_secret *import_plain(const char *text, struct broker_ssh_key *k)
{
	struct broker_secret *stored = NULL;
	struct al_error err = {0};

	if (broker_ssh_key_import(text, strlen(text), NULL, k, &stored, &err) != 0)
		fail_msg("import: %s", err.msg);
	return stored;
}

static void put_u32(uint8_t **p, uint32_t v)
{
	(*p)[0] = (uint8_t)(v >> 24), (*p)[1] = (uint8_t)(v >> 16), (*p)[2] = (uint8_t)(v >> 8),
	(*p)[3] = (uint8_t)v;
	*p += 4;
}

static void put_str(uint8_t **p, const void *s, size_t n)
{
	put_u32(p, (uint32_t)n);
	memcpy(*p, s, n);
	*p += n;
}

/* What an SSHSIG signs (OpenSSH's PROTOCOL.sshsig): "SSHSIG", string namespace, string reserved,
 * string "sha512", string SHA-512(message). */
static size_t sshsig_signed_data(const char *msg, size_t msg_len, uint8_t out[256])
{
	uint8_t h[crypto_hash_sha512_BYTES], *p = out;

	crypto_hash_sha512(h, (const uint8_t *)msg, msg_len);
	memcpy(p, "SSHSIG", 6), p += 6;
	put_str(&p, "git", 3);
	put_str(&p, "", 0);
	put_str(&p, "sha512", 6);
	put_str(&p, h, sizeof(h));
	return (size_t)(p - out);
}

/* A scratch folder for ssh-keygen's files: the message ("msg"), its signature ("msg.sig"), a key
 * ("key"), and what ssh-keygen says ("out"). */
static char scratch[64];
static const char *const scratch_files[] = {"msg", "msg.sig", "key", "out"};
enum { MSG, SIG, KEY, OUT };
static char scratch_paths[4][128];

static int make_scratch(void **state)
{
	(void)state;
	(void)snprintf(scratch, sizeof(scratch), "/tmp/airlock-test-ssh-key.XXXXXX");
	if (!mkdtemp(scratch))
		return -1;
	for (size_t i = 0; i < 4; i++)
		(void)snprintf(scratch_paths[i], sizeof(scratch_paths[i]), "%s/%s", scratch,
			       scratch_files[i]);
	return 0;
}

static int remove_scratch(void **state)
{
	(void)state;
	for (size_t i = 0; i < 4; i++)
		(void)unlink(scratch_paths[i]);
	return rmdir(scratch);
}

static void write_file(int file, const void *data, size_t n)
{
	int fd = open(scratch_paths[file], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, n), (ssize_t)n);
	assert_int_equal(close(fd), 0);
}

static size_t read_file(int file, char *buf, size_t max)
{
	FILE *f = fopen(scratch_paths[file], "rb");
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, max - 1, f);
	fclose(f);
	buf[n] = '\0';
	return n;
}

/* Debian's ssh-keygen (openssh-client) with args, its standard input the file "msg", its output
 * into "out": its exit status. The test fails when it is missing. */
static int ssh_keygen(const char *const *args)
{
	char *argv[16] = {(char *)"/usr/bin/ssh-keygen"};
	posix_spawn_file_actions_t fa;
	int status, n = 1;
	pid_t pid;

	for (; args[n - 1]; n++)
		argv[n] = (char *)args[n - 1];
	argv[n] = NULL;
	assert_int_equal(posix_spawn_file_actions_init(&fa), 0);
	assert_int_equal(posix_spawn_file_actions_addopen(&fa, 0, scratch_paths[MSG], O_RDONLY, 0),
			 0);
	assert_int_equal(posix_spawn_file_actions_addopen(&fa, 1, scratch_paths[OUT],
							  O_WRONLY | O_CREAT | O_TRUNC, 0600),
			 0);
	assert_int_equal(posix_spawn_file_actions_adddup2(&fa, 1, 2), 0);
	if (posix_spawn(&pid, argv[0], &fa, NULL, argv, environ) != 0)
		fail_msg("%s cannot run (Debian's openssh-client is needed): %m", argv[0]);
	posix_spawn_file_actions_destroy(&fa);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The SSHSIG file (armoured, as ssh-keygen -Y sign writes it) of the public key pub and the
 * signature blob sig over the message. */
static void write_sshsig(const uint8_t *pub, size_t pub_len, const struct broker_secret *sig)
{
	uint8_t blob[4096], *p = blob;
	char b64[8192], armoured[8192];
	size_t len, at = 0;

	memcpy(p, "SSHSIG", 6), p += 6;
	put_u32(&p, 1);
	put_str(&p, pub, pub_len);
	put_str(&p, "git", 3);
	put_str(&p, "", 0);
	put_str(&p, "sha512", 6);
	put_str(&p, sig->data, sig->len);
	sodium_bin2base64(b64, sizeof(b64), blob, (size_t)(p - blob),
			  sodium_base64_VARIANT_ORIGINAL);
	at += (size_t)snprintf(armoured, sizeof(armoured), "-----BEGIN SSH SIGNATURE-----\n");
	for (size_t i = 0, n = strlen(b64); i < n; i += 70)
		at += (size_t)snprintf(armoured + at, sizeof(armoured) - at, "%.70s\n", b64 + i);
	at +=
	    (size_t)snprintf(armoured + at, sizeof(armoured) - at, "-----END SSH SIGNATURE-----\n");
	len = strlen(armoured);
	write_file(SIG, armoured, len);
}

static struct broker_secret *sign(const struct broker_secret *stored, const uint8_t *data, size_t n,
				  uint32_t flags)
{
	struct broker_secret *sig = NULL;
	struct al_error err = {0};

	if (broker_ssh_key_sign(stored, data, n, flags, &sig, &err) != 0)
		fail_msg("sign: %s", err.msg);
	return sig;
}

/* The broker's signature of a git commit (an SSHSIG in the "git" namespace, as git has ssh-keygen
 * make one through the agent) is good to OpenSSH's ssh-keygen -Y check-novalidate, for each type
 * of key; with the message changed, it is not. */
static void test_sshsig_signed_by_the_broker_is_good_to_ssh_keygen(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(sign_keys) / sizeof(sign_keys[0]); i++) {
		const struct test_key *t = &sign_keys[i];
		struct broker_secret *stored, *sig;
		struct broker_ssh_key k;
		uint8_t data[256], *pub = NULL;
		const char *check[] = {"-Y", "check-novalidate", "-n", "git",
				       "-s", scratch_paths[SIG], NULL};
		char out[4096], want[128];
		size_t n = sshsig_signed_data(message, strlen(message), data), pub_len = 0;

		stored = import_plain(t->text, &k);
		assert_int_equal(broker_ssh_key_public(stored, &k, &pub, &pub_len, NULL), 0);
		sig = sign(stored, data, n, t->flags);
		assert_int_equal(sig->data[3], strlen(t->sig_type));
		assert_memory_equal(sig->data + 4, t->sig_type, strlen(t->sig_type));
		write_sshsig(pub, pub_len, sig);
		write_file(MSG, message, strlen(message));
		if (ssh_keygen(check) != 0) {
			(void)read_file(OUT, out, sizeof(out));
			fail_msg("%s (%s): ssh-keygen: %s", t->type, t->sig_type, out);
		}
		(void)read_file(OUT, out, sizeof(out));
		(void)snprintf(want, sizeof(want), "Good \"git\" signature with %s key %s",
			       strstr(t->type, "ecdsa") ? "ECDSA"
			       : strstr(t->type, "rsa") ? "RSA"
							: "ED25519",
			       t->fp);
		if (!strstr(out, want))
			fail_msg("ssh-keygen said \"%s\", not \"%s\"", out, want);
		write_file(MSG, "another message\n", 16);
		assert_int_not_equal(ssh_keygen(check), 0);
		broker_secret_free(sig);
		broker_secret_free(stored);
		free(pub);
	}
}

/* Each signature verifies with the key's public key (broker_ssh_verify(), which the agent checks
 * session-binds with); over other data, or changed, it does not. */
static void test_signatures_verify_and_changed_do_not(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(sign_keys) / sizeof(sign_keys[0]); i++) {
		const struct test_key *t = &sign_keys[i];
		struct broker_secret *stored = import_plain(t->text, &(struct broker_ssh_key){0});
		struct broker_secret *sig = sign(stored, (const uint8_t *)message, 100, t->flags);
		struct al_wire s = {(const uint8_t *)sig->data, sig->len}, key;
		struct broker_ssh_key k;
		uint8_t *pub = NULL;
		size_t pub_len = 0;

		assert_int_equal(broker_ssh_key_public(stored, &k, &pub, &pub_len, NULL), 0);
		key = (struct al_wire){pub, pub_len};
		assert_int_equal(broker_ssh_verify(&key, &s, (const uint8_t *)message, 100), 0);
		assert_int_equal(broker_ssh_verify(&key, &s, (const uint8_t *)message, 99), -EPERM);
		sig->data[sig->len - 1] ^= 1;
		assert_int_equal(broker_ssh_verify(&key, &s, (const uint8_t *)message, 100),
				 -EPERM);
		broker_secret_free(sig);
		broker_secret_free(stored);
		free(pub);
	}
}

/* OpenSSH's own signatures (ssh-keygen -Y sign, which signs as the agent does) verify with
 * broker_ssh_verify(). */
static void test_ssh_keygen_signatures_verify(void **state)
{
	(void)state;
	for (size_t i = 0; i < 5; i++) {
		const struct test_key *t = &sign_keys[i];
		const char *args[] = {
		    "-q", "-Y", "sign", "-n", "git", "-f", scratch_paths[KEY], scratch_paths[MSG],
		    NULL};
		struct broker_secret *stored;
		struct broker_ssh_key k;
		char text[8192];
		uint8_t blob[4096], data[256], *pub = NULL;
		size_t len = 0, pub_len = 0, n = sshsig_signed_data(message, strlen(message), data);
		struct al_wire c, skip, key, sig;
		const char *b, *e;

		write_file(KEY, t->text, strlen(t->text));
		write_file(MSG, message, strlen(message));
		(void)unlink(scratch_paths[SIG]);
		assert_int_equal(ssh_keygen(args), 0);
		(void)read_file(SIG, text, sizeof(text));
		b = strchr(text, '\n') + 1;
		e = strstr(b, "-----END SSH SIGNATURE-----");
		assert_non_null(e);
		assert_int_equal(sodium_base642bin(blob, sizeof(blob), b, (size_t)(e - b), "\n",
						   &len, NULL, sodium_base64_VARIANT_ORIGINAL),
				 0);
		/* "SSHSIG", u32 version, string key, namespace, reserved, hash, signature */
		c = (struct al_wire){blob + 10, len - 10};
		assert_true(al_wire_take_string(&c, &key) && al_wire_take_string(&c, &skip) &&
			    al_wire_take_string(&c, &skip) && al_wire_take_string(&c, &skip) &&
			    al_wire_take_string(&c, &sig) && c.len == 0);
		stored = import_plain(t->text, &k);
		assert_int_equal(broker_ssh_key_public(stored, &k, &pub, &pub_len, NULL), 0);
		assert_int_equal(key.len, pub_len);
		assert_memory_equal(key.p, pub, pub_len);
		if (broker_ssh_verify(&key, &sig, data, n) != 0)
			fail_msg("%s: ssh-keygen's signature does not verify", t->type);
		data[n - 1] ^= 1;
		assert_int_equal(broker_ssh_verify(&key, &sig, data, n), -EPERM);
		broker_secret_free(stored);
		free(pub);
	}
}

/* OpenSSH 8.8 and later never ask for SHA-1's ssh-rsa: asked, the agent refuses. An RSA key under
 * 2048 bits signs nothing, and its signatures are not taken. */
static void test_rsa_sha1_and_short_keys_are_refused(void **state)
{
	struct broker_secret *stored, *pass = secret("correct horse"), *sig = NULL;
	struct broker_ssh_key k;
	struct al_error err = {0};
	uint8_t *pub = NULL;
	size_t pub_len = 0;

	(void)state;
	stored = import_plain(KEY_RSA3072_PLAIN, &k);
	assert_int_equal(k.bits, 3072);
	assert_int_equal(broker_ssh_key_check_signing(&k, NULL), 0);
	assert_int_equal(broker_ssh_key_sign(stored, (const uint8_t *)"x", 1, 0, &sig, &err),
			 -EPROTONOSUPPORT);
	assert_null(sig);
	assert_non_null(strstr(err.msg, "SHA-1"));
	broker_secret_free(stored);

	assert_int_equal(
	    broker_ssh_key_import(KEY_RSA_ENC, strlen(KEY_RSA_ENC), pass, &k, &stored, NULL), 0);
	assert_int_equal(k.bits, 1024);
	assert_int_equal(broker_ssh_key_check_signing(&k, &err), -EPROTONOSUPPORT);
	assert_non_null(strstr(err.msg, "1024 bits"));
	assert_int_equal(broker_ssh_key_sign(stored, (const uint8_t *)"x", 1,
					     BROKER_SSH_AGENT_RSA_SHA2_512, &sig, NULL),
			 -EPROTONOSUPPORT);
	assert_int_equal(broker_ssh_key_public(stored, &k, &pub, &pub_len, NULL), 0);
	{
		/* Any signature of a 1024-bit key is refused before it is looked at. */
		static const uint8_t s[] = "\0\0\0\x0crsa-sha2-512\0\0\0\1x";
		struct al_wire key = {pub, pub_len}, sw = {s, sizeof(s) - 1};

		assert_int_equal(broker_ssh_verify(&key, &sw, (const uint8_t *)"x", 1),
				 -EPROTONOSUPPORT);
	}
	free(pub);
	broker_secret_free(stored);
	broker_secret_free(pass);
}

/* An RSA public exponent of 1 would make any number its own signature: refused. */
static void test_rsa_exponent_of_one_is_refused(void **state)
{
	static const uint8_t sig[] = "\0\0\0\x0crsa-sha2-512\0\0\0\1x";
	struct broker_ssh_key k;
	struct broker_secret *stored = import_plain(KEY_RSA3072_PLAIN, &k);
	uint8_t *pub = NULL;
	size_t pub_len = 0;
	struct al_wire key, s = {sig, sizeof(sig) - 1};

	(void)state;
	assert_int_equal(broker_ssh_key_public(stored, &k, &pub, &pub_len, NULL), 0);
	/* string "ssh-rsa", string e (01 00 01), string n: e becomes 00 00 01. */
	assert_int_equal(pub[11 + 3], 3);
	pub[11 + 4] = 0;
	key = (struct al_wire){pub, pub_len};
	assert_int_equal(broker_ssh_verify(&key, &s, (const uint8_t *)"x", 1), -EBADMSG);
	free(pub);
	broker_secret_free(stored);
}

/* A key whose private part is not its public key's is refused when it is read: an ECDSA scalar
 * changed, an RSA prime changed. */
static void test_private_part_not_the_public_keys_is_refused(void **state)
{
	static const struct {
		const char *text, *comment;
	} keys[] = {
	    {KEY_ECDSA256_PLAIN, "ecdsa256@airlock"},
	    {KEY_ECDSA521_PLAIN, "ecdsa521@airlock"},
	    {KEY_RSA3072_PLAIN, "rsa3072@airlock"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		struct broker_ssh_key k;
		struct broker_secret *stored = import_plain(keys[i].text, &k);
		struct al_error err = {0};
		char *c =
		    memmem(stored->data, stored->len, keys[i].comment, strlen(keys[i].comment));

		assert_non_null(c);
		/* The last byte of the part before the comment: ECDSA's d, RSA's q. */
		c[-5] ^= 2;
		assert_int_equal(broker_ssh_key_parse(stored, &k, &err), -EBADMSG);
		assert_non_null(strstr(err.msg, "does not match"));
		broker_secret_free(stored);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_blowfish_tables_are_pi),
	    cmocka_unit_test(test_keys_import_with_their_fingerprints),
	    cmocka_unit_test(test_passphrase_is_needed_and_checked),
	    cmocka_unit_test(test_what_is_not_a_key_is_refused),
	    cmocka_unit_test(test_bcrypt_pbkdf_refuses_what_is_out_of_range),
	    cmocka_unit_test(test_sshsig_signed_by_the_broker_is_good_to_ssh_keygen),
	    cmocka_unit_test(test_signatures_verify_and_changed_do_not),
	    cmocka_unit_test(test_ssh_keygen_signatures_verify),
	    cmocka_unit_test(test_rsa_sha1_and_short_keys_are_refused),
	    cmocka_unit_test(test_rsa_exponent_of_one_is_refused),
	    cmocka_unit_test(test_private_part_not_the_public_keys_is_refused),
	};

	return cmocka_run_group_tests(tests, make_scratch, remove_scratch);
}
