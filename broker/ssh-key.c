/* OpenSSH private keys (broker-internal.h has the contract). The file format is OpenSSH's
 * PROTOCOL.key: "openssh-key-v1\0", the cipher's and the KDF's names, the KDF's options (bcrypt:
 * a salt and a number of rounds), the number of keys (one), the public key, and the private
 * section, encrypted when a passphrase protects it: two equal check words (a wrong passphrase
 * gives two different ones), the key's record (its type, its public and private parts, as
 * ssh-agent's ADD_IDENTITY carries them), its comment, and padding 1, 2, 3... The vault keeps the
 * same format with no cipher, so that a value is recognized as a key by what it is. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <sodium.h>

#include "broker/broker-internal.h"

#define MAGIC "openssh-key-v1"
#define MAGIC_LEN 15 /* with its NUL */
#define PEM_BEGIN "-----BEGIN OPENSSH PRIVATE KEY-----"
#define PEM_END "-----END OPENSSH PRIVATE KEY-----"

/* An SSH string (u32 length, bytes): *ret points into the data. */
/* ---- the key record: its type and the parts it must have ---- */

static const struct {
	const char *type;
	const char *curve; /* ECDSA: the curve named in the record and the public key */
	int n_public;	   /* strings of the public key after its type */
	int n_private;	   /* strings of the record after its type, the comment left out */
} key_types[] = {
    {"ssh-ed25519", NULL, 1, 2},	       /* pub; pub, seed||pub */
    {"ecdsa-sha2-nistp256", "nistp256", 2, 3}, /* curve, Q; curve, Q, d */
    {"ecdsa-sha2-nistp384", "nistp384", 2, 3},
    {"ecdsa-sha2-nistp521", "nistp521", 2, 3},
    {"ssh-rsa", NULL, 2, 6}, /* e, n; n, e, d, iqmp, p, q */
};

/* The index of t's type in key_types, or -EPROTONOSUPPORT. */
static int key_type(const struct al_wire *t)
{
	for (size_t i = 0; i < ELEMENTSOF(key_types); i++)
		if (al_wire_is(t, key_types[i].type))
			return (int)i;
	return -EPROTONOSUPPORT;
}

/* Checks the record at c (its type, its parts, a comment) against the public key pub: the same
 * type, and the public parts the same (an Ed25519 seed's own public half too). Sets *ret_end to
 * where the record ends. */
static int check_record(struct al_wire c, const struct al_wire *pub, struct broker_ssh_key *k,
			const uint8_t **ret_end, struct al_error *err)
{
	struct al_wire pc = *pub, type, ptype, parts[6], pparts[2], comment;
	int t;

	if (!al_wire_take_string(&c, &type) || !al_wire_take_string(&pc, &ptype) ||
	    (t = key_type(&type)) < 0)
		return al_error_set(err, -EPROTONOSUPPORT,
				    "the key's type is not one airlock signs with (ssh-ed25519, "
				    "ecdsa-sha2-nistp256/384/521, ssh-rsa)");
	for (int i = 0; i < key_types[t].n_private; i++)
		if (!al_wire_take_string(&c, &parts[i]))
			goto bad;
	for (int i = 0; i < key_types[t].n_public; i++)
		if (!al_wire_take_string(&pc, &pparts[i]))
			goto bad;
	if (!al_wire_take_string(&c, &comment) || pc.len != 0 ||
	    !al_wire_is(&ptype, key_types[t].type))
		goto bad;
	if (key_types[t].curve) {
		if (!al_wire_is(&parts[0], key_types[t].curve) ||
		    !al_wire_is(&pparts[0], key_types[t].curve) || parts[1].len != pparts[1].len ||
		    memcmp(parts[1].p, pparts[1].p, parts[1].len) != 0)
			goto bad;
	} else if (t == 0) {
		if (parts[0].len != 32 || pparts[0].len != 32 || parts[1].len != 64 ||
		    memcmp(parts[0].p, pparts[0].p, 32) != 0 ||
		    memcmp(parts[1].p + 32, pparts[0].p, 32) != 0)
			goto bad;
		/* The seed's own public key is the one named: the key is whole. */
		uint8_t pk[32], sk[64];
		int r = crypto_sign_seed_keypair(pk, sk, parts[1].p);

		sodium_memzero(sk, sizeof(sk));
		if (r != 0 || memcmp(pk, pparts[0].p, 32) != 0)
			goto bad;
	} else {
		/* RSA: the record says n, e; the public key e, n. */
		if (parts[0].len != pparts[1].len || parts[1].len != pparts[0].len ||
		    memcmp(parts[0].p, pparts[1].p, parts[0].len) != 0 ||
		    memcmp(parts[1].p, pparts[0].p, parts[1].len) != 0)
			goto bad;
	}
	k->type = key_types[t].type;
	(void)snprintf(k->comment, sizeof(k->comment), "%.*s",
		       (int)MIN(comment.len, sizeof(k->comment) - 1), (const char *)comment.p);
	*ret_end = c.p;
	return 0;
bad:
	return al_error_set(err, -EBADMSG,
			    "the private key is malformed or does not match its public key");
}

/* ---- PEM, and decryption ---- */

/* The binary key inside the PEM armour of text (n bytes): into a new secret. */
static int unarmour(const char *text, size_t n, struct broker_secret **ret, struct al_error *err)
{
	const char *b = memmem(text, n, PEM_BEGIN, strlen(PEM_BEGIN)), *e;
	struct broker_secret *s;
	size_t len = 0;

	if (!b)
		return al_error_set(err, -EINVAL,
				    "not an OpenSSH private key (\"" PEM_BEGIN
				    "\"); a PEM or PKCS#8 key can be converted with "
				    "ssh-keygen -p -f FILE");
	b += strlen(PEM_BEGIN);
	e = memmem(b, (size_t)(text + n - b), PEM_END, strlen(PEM_END));
	if (!e)
		return al_error_set(err, -EBADMSG, "the OpenSSH private key has no end line");
	s = broker_secret_new((size_t)(e - b));
	if (!s)
		return -ENOMEM;
	if (sodium_base642bin((unsigned char *)s->data, s->len, b, (size_t)(e - b), " \t\r\n", &len,
			      NULL, sodium_base64_VARIANT_ORIGINAL) != 0) {
		broker_secret_free(s);
		return al_error_set(err, -EBADMSG, "the OpenSSH private key is not valid base64");
	}
	s->len = len;
	*ret = s;
	return 0;
}

static const struct {
	const char *name;
	const EVP_CIPHER *(*cipher)(void);
	size_t key_len, iv_len, block;
} ciphers[] = {
    {"aes256-ctr", EVP_aes_256_ctr, 32, 16, 16}, {"aes192-ctr", EVP_aes_192_ctr, 24, 16, 16},
    {"aes128-ctr", EVP_aes_128_ctr, 16, 16, 16}, {"aes256-cbc", EVP_aes_256_cbc, 32, 16, 16},
    {"aes192-cbc", EVP_aes_192_cbc, 24, 16, 16}, {"aes128-cbc", EVP_aes_128_cbc, 16, 16, 16},
};

/* Decrypts the private section in place with the key and IV that bcrypt_pbkdf makes of the
 * passphrase. */
static int decrypt(const struct al_wire *cipher, const struct al_wire *kdf_options,
		   const struct broker_secret *passphrase, uint8_t *data, size_t len,
		   struct al_error *err)
{
	struct al_wire o = *kdf_options, salt;
	uint8_t keyiv[64];
	uint32_t rounds;
	EVP_CIPHER_CTX *ctx;
	int c = -1, outl = 0, r;

	for (size_t i = 0; i < ELEMENTSOF(ciphers); i++)
		if (al_wire_is(cipher, ciphers[i].name))
			c = (int)i;
	if (c < 0)
		return al_error_set(err, -EPROTONOSUPPORT,
				    "the key is encrypted with a cipher airlock does not read "
				    "(%.*s); re-encrypt it with ssh-keygen -p -Z aes256-ctr",
				    (int)MIN(cipher->len, (size_t)64), (const char *)cipher->p);
	if (!al_wire_take_string(&o, &salt) || !al_wire_take_u32(&o, &rounds) || o.len != 0 ||
	    len % ciphers[c].block != 0)
		return al_error_set(err, -EBADMSG, "the key's bcrypt options are malformed");
	if (!passphrase)
		return al_error_set(err, -ENOKEY, "the key is protected by a passphrase");
	r = broker_bcrypt_pbkdf(passphrase->data, passphrase->len, salt.p, salt.len, rounds, keyiv,
				ciphers[c].key_len + ciphers[c].iv_len);
	if (r < 0)
		return al_error_set(err, r == -EINVAL ? -EBADMSG : r,
				    "the key's bcrypt options are out of range");
	ctx = EVP_CIPHER_CTX_new();
	r = ctx &&
	    EVP_DecryptInit_ex(ctx, ciphers[c].cipher(), NULL, keyiv, keyiv + ciphers[c].key_len) ==
		1 &&
	    EVP_CIPHER_CTX_set_padding(ctx, 0) == 1 &&
	    EVP_DecryptUpdate(ctx, data, &outl, data, (int)len) == 1 && (size_t)outl == len;
	EVP_CIPHER_CTX_free(ctx);
	sodium_memzero(keyiv, sizeof(keyiv));
	if (!r)
		return al_error_set(err, -EIO, "decrypting the key failed");
	return 0;
}

/* ---- the whole ---- */

/* The unencrypted key file (binary) of pub and the private record rec[0, rec_len). */
static int encode_plain(const struct al_wire *pub, const uint8_t *rec, size_t rec_len,
			struct broker_secret **ret)
{
	size_t priv = 8 + rec_len, pad = (8 - priv % 8) % 8, n;
	struct broker_secret *s;
	uint8_t *p, check[4];

	n = MAGIC_LEN + (4 + 4) + (4 + 4) + 4 + 4 + (4 + pub->len) + (4 + priv + pad);
	if (n > BROKER_SECRET_MAX)
		return -EFBIG;
	s = broker_secret_new(n);
	if (!s)
		return -ENOMEM;
	p = (uint8_t *)s->data;
	memcpy(p, MAGIC, MAGIC_LEN), p += MAGIC_LEN;
	al_wire_put_u32(p, 4), memcpy(p + 4, "none", 4), p += 8; /* cipher */
	al_wire_put_u32(p, 4), memcpy(p + 4, "none", 4), p += 8; /* kdf */
	al_wire_put_u32(p, 0), p += 4;				 /* kdf options */
	al_wire_put_u32(p, 1), p += 4;				 /* one key */
	al_wire_put_u32(p, (uint32_t)pub->len), memcpy(p + 4, pub->p, pub->len), p += 4 + pub->len;
	al_wire_put_u32(p, (uint32_t)(priv + pad)), p += 4;
	randombytes_buf(check, sizeof(check));
	memcpy(p, check, 4), memcpy(p + 4, check, 4), p += 8;
	memcpy(p, rec, rec_len), p += rec_len;
	for (size_t i = 0; i < pad; i++)
		*p++ = (uint8_t)(i + 1);
	*ret = s;
	return 0;
}

/* The SHA256 fingerprint of a public key blob, as ssh-keygen -l prints it. */
void broker_ssh_fingerprint(const uint8_t *blob, size_t len, char out[BROKER_SSH_FINGERPRINT_MAX])
{
	uint8_t h[crypto_hash_sha256_BYTES];

	crypto_hash_sha256(h, blob, len);
	memcpy(out, "SHA256:", 7);
	sodium_bin2base64(out + 7, BROKER_SSH_FINGERPRINT_MAX - 7, h, sizeof(h),
			  sodium_base64_VARIANT_ORIGINAL_NO_PADDING);
}

/* Parses the binary key file b; with plain, it is decrypted in place when encrypted, and
 * *ret_plain gets the unencrypted form. ret_rec, when not NULL, gets the key's record (type,
 * public and private parts) of an unencrypted one. */
static int parse(struct broker_secret *b, const struct broker_secret *passphrase,
		 struct broker_ssh_key *k, struct broker_secret **ret_plain,
		 struct al_wire *ret_rec, struct al_error *err)
{
	struct al_wire c = {(const uint8_t *)b->data, b->len}, cipher, kdf, kdf_options, pub, priv;
	uint32_t n_keys, check1, check2;
	const uint8_t *end = NULL;
	bool encrypted;
	int r;

	*k = (struct broker_ssh_key){0};
	if (c.len < MAGIC_LEN || memcmp(c.p, MAGIC, MAGIC_LEN) != 0)
		return al_error_set(err, -EINVAL, "not an OpenSSH private key");
	c.p += MAGIC_LEN;
	c.len -= MAGIC_LEN;
	if (!al_wire_take_string(&c, &cipher) || !al_wire_take_string(&c, &kdf) ||
	    !al_wire_take_string(&c, &kdf_options) || !al_wire_take_u32(&c, &n_keys) ||
	    !al_wire_take_string(&c, &pub) || !al_wire_take_string(&c, &priv) || c.len != 0)
		return al_error_set(err, -EBADMSG, "the OpenSSH private key is malformed");
	if (n_keys != 1)
		return al_error_set(err, -EBADMSG, "the key file holds %u keys, not one", n_keys);
	encrypted = !al_wire_is(&cipher, "none");
	if (encrypted != !al_wire_is(&kdf, "none") || (encrypted && !al_wire_is(&kdf, "bcrypt")))
		return al_error_set(err, -EPROTONOSUPPORT,
				    "the key's cipher and KDF are not none/none nor CIPHER/bcrypt");
	broker_ssh_fingerprint(pub.p, pub.len, k->fingerprint);
	if (encrypted) {
		k->encrypted = true;
		if (!ret_plain)
			return 0;
		r = decrypt(&cipher, &kdf_options, passphrase, (uint8_t *)priv.p, priv.len, err);
		if (r < 0)
			return r;
	}
	c = priv;
	if (!al_wire_take_u32(&c, &check1) || !al_wire_take_u32(&c, &check2) || check1 != check2)
		return al_error_set(err, encrypted ? -EACCES : -EBADMSG,
				    encrypted ? "wrong passphrase for the SSH key"
					      : "the OpenSSH private key is malformed");
	r = check_record(c, &pub, k, &end, err);
	if (r < 0)
		return r;
	if (ret_rec)
		*ret_rec = c;
	/* Padding: 1, 2, 3... up to the end. */
	for (size_t i = 0; end + i < priv.p + priv.len; i++)
		if (end[i] != (uint8_t)(i + 1))
			return al_error_set(err, -EBADMSG, "the OpenSSH private key is malformed");
	if (!ret_plain)
		return 0;
	r = encode_plain(&pub, c.p, (size_t)(end - c.p), ret_plain);
	if (r < 0)
		return al_error_set(err, r, "the SSH key is too large");
	return 0;
}

int broker_ssh_key_import(const char *text, size_t n, const struct broker_secret *passphrase,
			  struct broker_ssh_key *k, struct broker_secret **ret,
			  struct al_error *err)
{
	_cleanup_(broker_secret_freep) struct broker_secret *b = NULL;
	int r;

	r = unarmour(text, n, &b, err);
	if (r < 0)
		return r;
	return parse(b, passphrase, k, ret, NULL, err);
}

bool broker_ssh_key_is_encrypted(const char *text, size_t n)
{
	_cleanup_(broker_secret_freep) struct broker_secret *b = NULL;
	struct broker_ssh_key k;

	return unarmour(text, n, &b, NULL) >= 0 && parse(b, NULL, &k, NULL, NULL, NULL) >= 0 &&
	       k.encrypted;
}

int broker_ssh_key_parse(const struct broker_secret *value, struct broker_ssh_key *k,
			 struct al_error *err)
{
	_cleanup_(broker_secret_freep) struct broker_secret *copy = NULL;

	if (!broker_ssh_key_is_stored(value))
		return al_error_set(err, -EINVAL, "not an SSH key");
	copy = broker_secret_new(value->len);
	if (!copy)
		return -ENOMEM;
	memcpy(copy->data, value->data, value->len);
	return parse(copy, NULL, k, NULL, NULL, err);
}

int broker_ssh_key_sign(const struct broker_secret *stored, const uint8_t *data, size_t n,
			struct broker_secret **ret, struct al_error *err)
{
	_cleanup_(broker_secret_freep) struct broker_secret *copy = NULL;
	struct al_wire rec = {0}, type, pub, priv;
	struct broker_ssh_key k;
	uint8_t *p;
	int r;

	if (!broker_ssh_key_is_stored(stored))
		return al_error_set(err, -EINVAL, "not an SSH key");
	copy = broker_secret_new(stored->len);
	if (!copy)
		return -ENOMEM;
	memcpy(copy->data, stored->data, stored->len);
	r = parse(copy, NULL, &k, NULL, &rec, err);
	if (r < 0)
		return r;
	if (k.encrypted || !rec.p)
		return al_error_set(err, -EINVAL, "the stored SSH key is encrypted");
	if (!streq(k.type, "ssh-ed25519"))
		return al_error_set(err, -EPROTONOSUPPORT, "signing with %s keys is not built yet",
				    k.type);
	if (!al_wire_take_string(&rec, &type) || !al_wire_take_string(&rec, &pub) ||
	    !al_wire_take_string(&rec, &priv) || priv.len != crypto_sign_ed25519_SECRETKEYBYTES)
		return al_error_set(err, -EBADMSG, "the stored SSH key is malformed");
	/* The signature blob: string "ssh-ed25519", string the 64-byte signature. */
	*ret = broker_secret_new(4 + 11 + 4 + crypto_sign_ed25519_BYTES);
	if (!*ret)
		return -ENOMEM;
	p = (uint8_t *)(*ret)->data;
	al_wire_put_u32(p, 11), memcpy(p + 4, "ssh-ed25519", 11), p += 15;
	al_wire_put_u32(p, crypto_sign_ed25519_BYTES), p += 4;
	if (crypto_sign_ed25519_detached(p, NULL, data, n, priv.p) != 0) {
		*ret = broker_secret_free(*ret);
		return al_error_set(err, -EIO, "signing failed");
	}
	return 0;
}

int broker_ssh_key_public(const struct broker_secret *stored, struct broker_ssh_key *k,
			  uint8_t **ret, size_t *ret_len, struct al_error *err)
{
	struct al_wire c, skip, pub;
	uint32_t n_keys;
	int r;

	r = broker_ssh_key_parse(stored, k, err);
	if (r < 0)
		return r;
	/* parse() checked the layout: magic, cipher, KDF, its options, a count, the public key. */
	c = (struct al_wire){(const uint8_t *)stored->data + MAGIC_LEN, stored->len - MAGIC_LEN};
	if (!al_wire_take_string(&c, &skip) || !al_wire_take_string(&c, &skip) ||
	    !al_wire_take_string(&c, &skip) || !al_wire_take_u32(&c, &n_keys) ||
	    !al_wire_take_string(&c, &pub))
		return al_error_set(err, -EBADMSG, "the OpenSSH private key is malformed");
	*ret = malloc(pub.len);
	if (!*ret)
		return -ENOMEM;
	memcpy(*ret, pub.p, pub.len);
	*ret_len = pub.len;
	return 0;
}

bool broker_ssh_key_is_stored(const struct broker_secret *value)
{
	return value->len >= MAGIC_LEN && memcmp(value->data, MAGIC, MAGIC_LEN) == 0;
}
