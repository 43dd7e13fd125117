/* OpenSSH private keys (broker-internal.h has the contract). The file format is OpenSSH's
 * PROTOCOL.key: "openssh-key-v1\0", the cipher's and the KDF's names, the KDF's options (bcrypt:
 * a salt and a number of rounds), the number of keys (one), the public key, and the private
 * section, encrypted when a passphrase protects it: two equal check words (a wrong passphrase
 * gives two different ones), the key's record (its type, its public and private parts, as
 * ssh-agent's ADD_IDENTITY carries them), its comment, and padding 1, 2, 3... The vault keeps the
 * same format with no cipher, so that a value is recognized as a key by what it is.
 *
 * The agent signs with a stored key as OpenSSH's ssh-agent does (RFC 8709 Ed25519, RFC 5656
 * ECDSA, RFC 8332 RSA with SHA-2) and verifies session-binds as it does. Ed25519 is libsodium's;
 * ECDSA and RSA are OpenSSL's: the private numbers in BIGNUMs it clears when it frees them and
 * computes with in constant time (in its secure heap when the process has one), every object
 * freed, its error queue left empty. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/rsa.h>
#include <sodium.h>

#include "broker/broker-internal.h"

#define MAGIC "openssh-key-v1"
#define MAGIC_LEN 15 /* with its NUL */
#define PEM_BEGIN "-----BEGIN OPENSSH PRIVATE KEY-----"
#define PEM_END "-----END OPENSSH PRIVATE KEY-----"

DEFINE_TRIVIAL_CLEANUP_FUNC(BIGNUM *, BN_clear_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(BN_CTX *, BN_CTX_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(ECDSA_SIG *, ECDSA_SIG_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(EVP_MD_CTX *, EVP_MD_CTX_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(EVP_PKEY *, EVP_PKEY_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(EVP_PKEY_CTX *, EVP_PKEY_CTX_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(OSSL_PARAM *, OSSL_PARAM_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(OSSL_PARAM_BLD *, OSSL_PARAM_BLD_free);

/* ---- the key record: its type and the parts it must have ---- */

enum key_kind {
	KIND_ED25519,
	KIND_ECDSA,
	KIND_RSA,
};

static const struct {
	const char *type;
	enum key_kind kind;
	const char *curve;  /* ECDSA: the curve named in the record and the public key */
	const char *group;  /* ECDSA: OpenSSL's name of the curve */
	const char *digest; /* ECDSA: the curve's hash (RFC 5656 6.2.1) */
	unsigned bits;	    /* ECDSA, Ed25519: the curve's */
	int n_public;	    /* strings of the public key after its type */
	int n_private;	    /* strings of the record after its type, the comment left out */
} key_types[] = {
    /* pub; pub, seed||pub */
    {"ssh-ed25519", KIND_ED25519, NULL, NULL, NULL, 256, 1, 2},
    /* curve, Q; curve, Q, d */
    {"ecdsa-sha2-nistp256", KIND_ECDSA, "nistp256", "P-256", "SHA256", 256, 2, 3},
    {"ecdsa-sha2-nistp384", KIND_ECDSA, "nistp384", "P-384", "SHA384", 384, 2, 3},
    {"ecdsa-sha2-nistp521", KIND_ECDSA, "nistp521", "P-521", "SHA512", 521, 2, 3},
    /* e, n; n, e, d, iqmp, p, q */
    {"ssh-rsa", KIND_RSA, NULL, NULL, NULL, 0, 2, 6},
};

/* A signature blob's largest: string "ecdsa-sha2-nistp521" or "rsa-sha2-512", string an RSA
 * signature as long as the largest modulus (ECDSA's two mpints are far shorter). */
#define SIG_BLOB_MAX (4 + 32 + 4 + BROKER_SSH_RSA_MAX_BITS / 8)

/* The index of t's type in key_types, or -EPROTONOSUPPORT. */
static int key_type(const struct al_wire *t)
{
	for (size_t i = 0; i < ELEMENTSOF(key_types); i++)
		if (al_wire_is(t, key_types[i].type))
			return (int)i;
	return -EPROTONOSUPPORT;
}

/* ---- mpints, and the keys OpenSSL computes with ---- */

/* The mpint (RFC 4251 5) in the string s: not negative, its leading zeros (which OpenSSH
 * accepts) dropped. */
static bool as_mpint(const struct al_wire *s, struct al_wire *ret)
{
	if (s->len > 0 && (s->p[0] & 0x80))
		return false;
	*ret = *s;
	while (ret->len > 0 && ret->p[0] == 0) {
		ret->p++;
		ret->len--;
	}
	return true;
}

static bool take_mpint(struct al_wire *c, struct al_wire *ret)
{
	struct al_wire s;

	return al_wire_take_string(c, &s) && as_mpint(&s, ret);
}

static unsigned mpint_bits(const struct al_wire *m)
{
	unsigned bits = 0;

	if (m->len == 0)
		return 0;
	for (uint8_t top = m->p[0]; top; top >>= 1)
		bits++;
	return (unsigned)(m->len - 1) * 8 + bits;
}

/* m as a BIGNUM. A private part's is a secure one (cleared when freed; in OpenSSL's secure heap
 * when there is one) that is computed with in constant time. NULL without memory. */
static BIGNUM *bn_of(const struct al_wire *m, bool private)
{
	BIGNUM *bn = private ? BN_secure_new() : BN_new();

	if (!bn)
		return NULL;
	if (!BN_bin2bn(m->p, (int)m->len, bn)) {
		BN_clear_free(bn);
		return NULL;
	}
	if (private)
		BN_set_flags(bn, BN_FLG_CONSTTIME);
	return bn;
}

/* The key OpenSSL makes of the parameters in bld: a pair, or a public key only (selection).
 * -EBADMSG for parameters it refuses (a point off the curve, ...), -ENOMEM. */
static int key_fromdata(const char *algorithm, OSSL_PARAM_BLD *bld, int selection, EVP_PKEY **ret)
{
	_cleanup_(OSSL_PARAM_freep) OSSL_PARAM *params = OSSL_PARAM_BLD_to_param(bld);
	_cleanup_(EVP_PKEY_CTX_freep) EVP_PKEY_CTX *ctx =
	    EVP_PKEY_CTX_new_from_name(NULL, algorithm, NULL);
	EVP_PKEY *pkey = NULL;

	if (!params || !ctx)
		return -ENOMEM;
	if (EVP_PKEY_fromdata_init(ctx) != 1 ||
	    EVP_PKEY_fromdata(ctx, &pkey, selection, params) != 1)
		return -EBADMSG;
	*ret = pkey;
	return 0;
}

/* The ECDSA key of type t: the point q (uncompressed, as OpenSSH has it) and, when d is not NULL,
 * the private scalar d (an mpint), checked to be q's: 0 < d < the order, d·G = q. -EBADMSG,
 * -ENOMEM. */
static int ec_key(int t, const struct al_wire *q, const struct al_wire *d, EVP_PKEY **ret)
{
	_cleanup_(OSSL_PARAM_BLD_freep) OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
	_cleanup_(BN_clear_freep) BIGNUM *priv = NULL;
	_cleanup_(EVP_PKEY_freep) EVP_PKEY *pkey = NULL;
	_cleanup_(EVP_PKEY_CTX_freep) EVP_PKEY_CTX *check = NULL;
	size_t field = (key_types[t].bits + 7) / 8;
	int r;

	if (q->len != 1 + 2 * field || q->p[0] != POINT_CONVERSION_UNCOMPRESSED ||
	    (d && d->len > field))
		return -EBADMSG;
	if (!bld || (d && !(priv = bn_of(d, true))))
		return -ENOMEM;
	if (!OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, key_types[t].group,
					     0) ||
	    !OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, q->p, q->len) ||
	    (priv && !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_PRIV_KEY, priv)))
		return -ENOMEM;
	r = key_fromdata("EC", bld, priv ? EVP_PKEY_KEYPAIR : EVP_PKEY_PUBLIC_KEY, &pkey);
	if (r < 0)
		return r;
	if (priv) {
		check = EVP_PKEY_CTX_new_from_pkey(NULL, pkey, NULL);
		if (!check)
			return -ENOMEM;
		if (EVP_PKEY_pairwise_check(check) != 1)
			return -EBADMSG;
	}
	*ret = TAKE_PTR(pkey);
	return 0;
}

/* Whether the mpint e can be an RSA public exponent: odd, 3 or more (with 1, anything would be its
 * own signature). */
static bool rsa_exponent_ok(const struct al_wire *e)
{
	return e->len > 0 && (e->p[e->len - 1] & 1) && (e->len > 1 || e->p[0] >= 3);
}

/* The RSA public key of the mpints e and n. -EBADMSG, -ENOMEM. */
static int rsa_public_key(const struct al_wire *e, const struct al_wire *n, EVP_PKEY **ret)
{
	_cleanup_(OSSL_PARAM_BLD_freep) OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
	_cleanup_(BN_clear_freep) BIGNUM *bn_e = bn_of(e, false);
	_cleanup_(BN_clear_freep) BIGNUM *bn_n = bn_of(n, false);

	if (!bld || !bn_e || !bn_n || !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn_n) ||
	    !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, bn_e))
		return -ENOMEM;
	return key_fromdata("RSA", bld, EVP_PKEY_PUBLIC_KEY, ret);
}

/* An RSA private key's numbers: the record's, and the CRT exponents it leaves out. */
struct rsa_numbers {
	BIGNUM *n, *e, *d, *iqmp, *p, *q, *dmp1, *dmq1, *t;
};

static void rsa_numbers_clear(struct rsa_numbers *b)
{
	BN_free(b->n);
	BN_free(b->e);
	BN_clear_free(b->d);
	BN_clear_free(b->iqmp);
	BN_clear_free(b->p);
	BN_clear_free(b->q);
	BN_clear_free(b->dmp1);
	BN_clear_free(b->dmq1);
	BN_clear_free(b->t);
}

/* The RSA private key of the record's parts (n, e, d, iqmp, p, q: strings holding mpints), with
 * d mod p-1 and d mod q-1 computed as OpenSSH does when it loads one, checked to be the public
 * key's (n = pq). -EPROTONOSUPPORT (a modulus over BROKER_SSH_RSA_MAX_BITS), -EBADMSG,
 * -ENOMEM. */
static int rsa_private_key(const struct al_wire *parts, EVP_PKEY **ret)
{
	_cleanup_(rsa_numbers_clear) struct rsa_numbers b = {0};
	_cleanup_(BN_CTX_freep) BN_CTX *ctx = BN_CTX_secure_new();
	_cleanup_(OSSL_PARAM_BLD_freep) OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
	struct al_wire m[6];

	for (size_t i = 0; i < ELEMENTSOF(m); i++)
		if (!as_mpint(&parts[i], &m[i]))
			return -EBADMSG;
	if (mpint_bits(&m[0]) > BROKER_SSH_RSA_MAX_BITS)
		return -EPROTONOSUPPORT;
	if (!rsa_exponent_ok(&m[1]))
		return -EBADMSG;
	b.n = bn_of(&m[0], false);
	b.e = bn_of(&m[1], false);
	b.d = bn_of(&m[2], true);
	b.iqmp = bn_of(&m[3], true);
	b.p = bn_of(&m[4], true);
	b.q = bn_of(&m[5], true);
	b.dmp1 = BN_secure_new();
	b.dmq1 = BN_secure_new();
	b.t = BN_secure_new();
	if (!ctx || !bld || !b.n || !b.e || !b.d || !b.iqmp || !b.p || !b.q || !b.dmp1 || !b.dmq1 ||
	    !b.t)
		return -ENOMEM;
	BN_set_flags(b.dmp1, BN_FLG_CONSTTIME);
	BN_set_flags(b.dmq1, BN_FLG_CONSTTIME);
	BN_set_flags(b.t, BN_FLG_CONSTTIME);
	if (BN_cmp(b.p, BN_value_one()) <= 0 || BN_cmp(b.q, BN_value_one()) <= 0 ||
	    !BN_mul(b.t, b.p, b.q, ctx) || BN_cmp(b.t, b.n) != 0 ||
	    !BN_sub(b.t, b.p, BN_value_one()) || !BN_mod(b.dmp1, b.d, b.t, ctx) ||
	    !BN_sub(b.t, b.q, BN_value_one()) || !BN_mod(b.dmq1, b.d, b.t, ctx))
		return -EBADMSG;
	if (!OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, b.n) ||
	    !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, b.e) ||
	    !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_D, b.d) ||
	    !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_FACTOR1, b.p) ||
	    !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_FACTOR2, b.q) ||
	    !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_EXPONENT1, b.dmp1) ||
	    !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_EXPONENT2, b.dmq1) ||
	    !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_COEFFICIENT1, b.iqmp))
		return -ENOMEM;
	return key_fromdata("RSA", bld, EVP_PKEY_KEYPAIR, ret);
}

/* ---- the key record: whole, and its own public key's ---- */

/* Whether the record's private parts (after its type) are the public key's: an Ed25519 seed
 * makes the public key, an ECDSA scalar the point, RSA's primes the modulus. Sets *ret_bits.
 * -EBADMSG, -EPROTONOSUPPORT (an RSA modulus over BROKER_SSH_RSA_MAX_BITS), -ENOMEM. */
static int check_private(int t, const struct al_wire *parts, unsigned *ret_bits)
{
	_cleanup_(EVP_PKEY_freep) EVP_PKEY *pkey = NULL;
	uint8_t pk[crypto_sign_ed25519_PUBLICKEYBYTES], sk[crypto_sign_ed25519_SECRETKEYBYTES];
	struct al_wire d;
	int r = -EBADMSG;

	switch (key_types[t].kind) {
	case KIND_ED25519:
		r = crypto_sign_seed_keypair(pk, sk, parts[1].p) == 0 &&
			    memcmp(pk, parts[0].p, sizeof(pk)) == 0
			? 0
			: -EBADMSG;
		sodium_memzero(sk, sizeof(sk));
		break;
	case KIND_ECDSA:
		if (as_mpint(&parts[2], &d))
			r = ec_key(t, &parts[1], &d, &pkey);
		break;
	case KIND_RSA:
		r = rsa_private_key(parts, &pkey);
		break;
	}
	ERR_clear_error();
	if (r < 0)
		return r;
	*ret_bits = pkey && key_types[t].kind == KIND_RSA ? (unsigned)EVP_PKEY_get_bits(pkey)
							  : key_types[t].bits;
	return 0;
}

/* Checks the record at c (its type, its parts, a comment) against the public key pub: the same
 * type, the public parts the same, and the private parts theirs (check_private()). Sets
 * *ret_end to where the record ends. */
static int check_record(struct al_wire c, const struct al_wire *pub, struct broker_ssh_key *k,
			const uint8_t **ret_end, struct al_error *err)
{
	struct al_wire pc = *pub, type, ptype, parts[6], pparts[2], comment;
	int t, r;

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
	switch (key_types[t].kind) {
	case KIND_ED25519:
		if (parts[0].len != 32 || pparts[0].len != 32 || parts[1].len != 64 ||
		    !al_wire_eq(&parts[0], &pparts[0]) || memcmp(parts[1].p + 32, pparts[0].p, 32))
			goto bad;
		break;
	case KIND_ECDSA:
		if (!al_wire_is(&parts[0], key_types[t].curve) ||
		    !al_wire_is(&pparts[0], key_types[t].curve) ||
		    !al_wire_eq(&parts[1], &pparts[1]))
			goto bad;
		break;
	case KIND_RSA:
		/* The record says n, e; the public key e, n. */
		if (!al_wire_eq(&parts[0], &pparts[1]) || !al_wire_eq(&parts[1], &pparts[0]))
			goto bad;
		break;
	}
	r = check_private(t, parts, &k->bits);
	if (r == -EPROTONOSUPPORT)
		return al_error_set(err, r, "RSA keys of more than %d bits are not used",
				    BROKER_SSH_RSA_MAX_BITS);
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		goto bad;
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

/* ---- signatures ---- */

/* A signature blob being written: string after string. */
struct blob {
	uint8_t *p;
	size_t len, max;
};

static bool put_string(struct blob *b, const void *p, size_t n)
{
	if (b->max - b->len < 4 || b->max - b->len - 4 < n)
		return false;
	al_wire_put_u32(b->p + b->len, (uint32_t)n);
	if (n > 0)
		memcpy(b->p + b->len + 4, p, n);
	b->len += 4 + n;
	return true;
}

static bool put_text(struct blob *b, const char *s)
{
	return put_string(b, s, strlen(s));
}

/* bn as an mpint: its bytes, a zero first when the top bit is set. */
static bool put_mpint(struct blob *b, const BIGNUM *bn)
{
	size_t n = (size_t)BN_num_bytes(bn), lead = n > 0 && BN_num_bits(bn) % 8 == 0;

	if (b->max - b->len < 4 + lead + n)
		return false;
	al_wire_put_u32(b->p + b->len, (uint32_t)(lead + n));
	b->len += 4;
	if (lead)
		b->p[b->len++] = 0;
	b->len += (size_t)BN_bn2bin(bn, b->p + b->len);
	return true;
}

/* pkey's signature of data (n bytes) with the digest md (RSA: PKCS #1 v1.5), as OpenSSL writes
 * it (DER for ECDSA) into buf, which holds *len bytes; *len gets its length. -EIO, -ENOMEM. */
static int digest_sign(EVP_PKEY *pkey, const char *md, const uint8_t *data, size_t n, uint8_t *buf,
		       size_t *len)
{
	_cleanup_(EVP_MD_CTX_freep) EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	EVP_PKEY_CTX *pctx = NULL; /* ctx's */

	if (!ctx)
		return -ENOMEM;
	if (EVP_PKEY_get_size(pkey) <= 0 || (size_t)EVP_PKEY_get_size(pkey) > *len ||
	    EVP_DigestSignInit_ex(ctx, &pctx, md, NULL, NULL, pkey, NULL) != 1 ||
	    (EVP_PKEY_is_a(pkey, "RSA") &&
	     EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PADDING) != 1) ||
	    EVP_DigestSign(ctx, buf, len, data, n) != 1)
		return -EIO;
	return 0;
}

/* Whether sig (sig_len bytes; DER for ECDSA) is pkey's over data with the digest md: 0, -EPERM,
 * -EBADMSG (a key OpenSSL does not verify with), -ENOMEM. */
static int digest_verify(EVP_PKEY *pkey, const char *md, const uint8_t *sig, size_t sig_len,
			 const uint8_t *data, size_t n)
{
	_cleanup_(EVP_MD_CTX_freep) EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	EVP_PKEY_CTX *pctx = NULL; /* ctx's */

	if (!ctx)
		return -ENOMEM;
	if (EVP_DigestVerifyInit_ex(ctx, &pctx, md, NULL, NULL, pkey, NULL) != 1 ||
	    (EVP_PKEY_is_a(pkey, "RSA") &&
	     EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PADDING) != 1))
		return -EBADMSG;
	return EVP_DigestVerify(ctx, sig, sig_len, data, n) == 1 ? 0 : -EPERM;
}

static int sign_ed25519(const struct al_wire *parts, const uint8_t *data, size_t n, struct blob *b)
{
	uint8_t sig[crypto_sign_ed25519_BYTES];

	if (parts[1].len != crypto_sign_ed25519_SECRETKEYBYTES)
		return -EBADMSG;
	if (crypto_sign_ed25519_detached(sig, NULL, data, n, parts[1].p) != 0)
		return -EIO;
	return put_text(b, "ssh-ed25519") && put_string(b, sig, sizeof(sig)) ? 0 : -EIO;
}

/* RFC 5656 3.1.2: string "ecdsa-sha2-nistpN", string (mpint r, mpint s). */
static int sign_ecdsa(int t, const struct al_wire *parts, const uint8_t *data, size_t n,
		      struct blob *b)
{
	_cleanup_(EVP_PKEY_freep) EVP_PKEY *pkey = NULL;
	_cleanup_(ECDSA_SIG_freep) ECDSA_SIG *es = NULL;
	uint8_t der[160], rs[2 * (4 + 1 + 66)];
	struct blob inner = {rs, 0, sizeof(rs)};
	const unsigned char *p = der;
	const BIGNUM *sig_r, *sig_s;
	size_t len = sizeof(der);
	struct al_wire d;
	int r;

	if (!as_mpint(&parts[2], &d))
		return -EBADMSG;
	r = ec_key(t, &parts[1], &d, &pkey);
	if (r < 0)
		return r;
	r = digest_sign(pkey, key_types[t].digest, data, n, der, &len);
	if (r < 0)
		return r;
	es = d2i_ECDSA_SIG(NULL, &p, (long)len);
	if (!es)
		return -EIO;
	ECDSA_SIG_get0(es, &sig_r, &sig_s);
	if (!put_mpint(&inner, sig_r) || !put_mpint(&inner, sig_s) ||
	    !put_text(b, key_types[t].type) || !put_string(b, rs, inner.len))
		return -EIO;
	return 0;
}

/* RFC 8332 3: string "rsa-sha2-256" or "rsa-sha2-512", string the signature, as long as the
 * modulus. */
static int sign_rsa(const struct al_wire *parts, bool sha256, const uint8_t *data, size_t n,
		    struct blob *b)
{
	_cleanup_(EVP_PKEY_freep) EVP_PKEY *pkey = NULL;
	uint8_t sig[BROKER_SSH_RSA_MAX_BITS / 8];
	size_t len = sizeof(sig), mod;
	int r;

	r = rsa_private_key(parts, &pkey);
	if (r < 0)
		return r;
	r = digest_sign(pkey, sha256 ? "SHA256" : "SHA512", data, n, sig, &len);
	if (r < 0)
		return r;
	mod = (size_t)EVP_PKEY_get_size(pkey);
	if (len > mod)
		return -EIO;
	/* Zeros first when the number is shorter, as OpenSSH writes it (OpenSSL does too). */
	memmove(sig + mod - len, sig, len);
	memset(sig, 0, mod - len);
	return put_text(b, sha256 ? "rsa-sha2-256" : "rsa-sha2-512") && put_string(b, sig, mod)
		   ? 0
		   : -EIO;
}

int broker_ssh_key_check_signing(const struct broker_ssh_key *k, struct al_error *err)
{
	if (streq(k->type, "ssh-rsa") && k->bits < BROKER_SSH_RSA_MIN_BITS)
		return al_error_set(err, -EPROTONOSUPPORT,
				    "the RSA key has %u bits: the agent signs with RSA keys of %d "
				    "bits or more (ssh-keygen -t ed25519 makes a new key)",
				    k->bits, BROKER_SSH_RSA_MIN_BITS);
	return 0;
}

int broker_ssh_key_sign(const struct broker_secret *stored, const uint8_t *data, size_t n,
			uint32_t flags, struct broker_secret **ret, struct al_error *err)
{
	_cleanup_(broker_secret_freep) struct broker_secret *copy = NULL, *sig = NULL;
	struct al_wire rec = {0}, type, parts[6];
	struct broker_ssh_key k;
	struct blob b;
	int t, r = -EIO;

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
	r = broker_ssh_key_check_signing(&k, err);
	if (r < 0)
		return r;
	/* parse() checked the record: its type and its parts are there. */
	if (!al_wire_take_string(&rec, &type) || (t = key_type(&type)) < 0)
		return al_error_set(err, -EBADMSG, "the stored SSH key is malformed");
	for (int i = 0; i < key_types[t].n_private; i++)
		if (!al_wire_take_string(&rec, &parts[i]))
			return al_error_set(err, -EBADMSG, "the stored SSH key is malformed");
	/* OpenSSH's agent signs SHA-1's "ssh-rsa" when neither flag is set; OpenSSH 8.8 and later
	 * never ask for it. */
	if (key_types[t].kind == KIND_RSA &&
	    !(flags & (BROKER_SSH_AGENT_RSA_SHA2_256 | BROKER_SSH_AGENT_RSA_SHA2_512)))
		return al_error_set(err, -EPROTONOSUPPORT,
				    "an RSA signature with SHA-1 (ssh-rsa) was asked: the agent "
				    "makes rsa-sha2-256 and rsa-sha2-512 only");
	sig = broker_secret_new(SIG_BLOB_MAX);
	if (!sig)
		return -ENOMEM;
	b = (struct blob){(uint8_t *)sig->data, 0, SIG_BLOB_MAX};
	switch (key_types[t].kind) {
	case KIND_ED25519:
		r = sign_ed25519(parts, data, n, &b);
		break;
	case KIND_ECDSA:
		r = sign_ecdsa(t, parts, data, n, &b);
		break;
	case KIND_RSA:
		/* SHA-256 when both are asked, as OpenSSH's agent chooses. */
		r = sign_rsa(parts, flags & BROKER_SSH_AGENT_RSA_SHA2_256, data, n, &b);
		break;
	}
	ERR_clear_error();
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		return al_error_set(err, r == -EBADMSG ? r : -EIO, "signing with the %s key failed",
				    k.type);
	sig->len = b.len;
	*ret = TAKE_PTR(sig);
	return 0;
}

/* ---- verifying ---- */

static int verify_ed25519(const struct al_wire *parts, const struct al_wire *type,
			  const struct al_wire *sig, const uint8_t *data, size_t n)
{
	if (!al_wire_is(type, "ssh-ed25519") ||
	    parts[0].len != crypto_sign_ed25519_PUBLICKEYBYTES ||
	    sig->len != crypto_sign_ed25519_BYTES)
		return -EBADMSG;
	return crypto_sign_ed25519_verify_detached(sig->p, data, n, parts[0].p) == 0 ? 0 : -EPERM;
}

/* ECDSA_SIG's DER of r and s (mpints), into der (of *len bytes; then its length). */
static int ecdsa_der(const struct al_wire *sig_r, const struct al_wire *sig_s, uint8_t *der,
		     size_t *len)
{
	_cleanup_(ECDSA_SIG_freep) ECDSA_SIG *es = ECDSA_SIG_new();
	BIGNUM *br = bn_of(sig_r, false), *bs = bn_of(sig_s, false);
	unsigned char *p = der;
	int n;

	if (!es || !br || !bs || !ECDSA_SIG_set0(es, br, bs)) {
		BN_free(br);
		BN_free(bs);
		return -ENOMEM;
	}
	n = i2d_ECDSA_SIG(es, NULL);
	if (n <= 0 || (size_t)n > *len || i2d_ECDSA_SIG(es, &p) != n)
		return -EBADMSG;
	*len = (size_t)n;
	return 0;
}

/* RFC 5656 3.1.2, as OpenSSH reads it: the signature's type the key's, then (mpint r, mpint s)
 * and nothing after. */
static int verify_ecdsa(int t, const struct al_wire *parts, const struct al_wire *type,
			const struct al_wire *sig, const uint8_t *data, size_t n)
{
	_cleanup_(EVP_PKEY_freep) EVP_PKEY *pkey = NULL;
	size_t field = (key_types[t].bits + 7) / 8, len;
	struct al_wire c = *sig, sig_r, sig_s;
	uint8_t der[160];
	int r;

	if (!al_wire_is(&parts[0], key_types[t].curve) || !al_wire_is(type, key_types[t].type) ||
	    !take_mpint(&c, &sig_r) || !take_mpint(&c, &sig_s) || c.len != 0 || sig_r.len > field ||
	    sig_s.len > field)
		return -EBADMSG;
	r = ec_key(t, &parts[1], NULL, &pkey);
	if (r < 0)
		return r;
	len = sizeof(der);
	r = ecdsa_der(&sig_r, &sig_s, der, &len);
	if (r < 0)
		return r;
	return digest_verify(pkey, key_types[t].digest, der, len, data, n);
}

/* RFC 8332 3: rsa-sha2-256 or rsa-sha2-512 only, with a key of BROKER_SSH_RSA_MIN_BITS to
 * BROKER_SSH_RSA_MAX_BITS bits; a signature shorter than the modulus is read with zeros first,
 * as OpenSSH reads it. */
static int verify_rsa(const struct al_wire *parts, const struct al_wire *type,
		      const struct al_wire *sig, const uint8_t *data, size_t n)
{
	_cleanup_(EVP_PKEY_freep) EVP_PKEY *pkey = NULL;
	uint8_t padded[BROKER_SSH_RSA_MAX_BITS / 8];
	struct al_wire e, mod;
	const char *md;
	unsigned bits;
	size_t len;
	int r;

	if (al_wire_is(type, "rsa-sha2-256"))
		md = "SHA256";
	else if (al_wire_is(type, "rsa-sha2-512"))
		md = "SHA512";
	else if (al_wire_is(type, "ssh-rsa"))
		return -EPROTONOSUPPORT; /* SHA-1 */
	else
		return -EBADMSG;
	if (!as_mpint(&parts[0], &e) || !as_mpint(&parts[1], &mod) || !rsa_exponent_ok(&e))
		return -EBADMSG;
	bits = mpint_bits(&mod);
	if (bits < BROKER_SSH_RSA_MIN_BITS || bits > BROKER_SSH_RSA_MAX_BITS)
		return -EPROTONOSUPPORT;
	len = (bits + 7) / 8;
	if (sig->len > len)
		return -EBADMSG;
	memset(padded, 0, len - sig->len);
	memcpy(padded + len - sig->len, sig->p, sig->len);
	r = rsa_public_key(&e, &mod, &pkey);
	if (r < 0)
		return r;
	return digest_verify(pkey, md, padded, len, data, n);
}

int broker_ssh_verify(const struct al_wire *key, const struct al_wire *sig, const uint8_t *data,
		      size_t n)
{
	struct al_wire k = *key, s = *sig, ktype, stype, blob, parts[2];
	int t, r = -EBADMSG;

	if (!al_wire_take_string(&k, &ktype) || !al_wire_take_string(&s, &stype) ||
	    !al_wire_take_string(&s, &blob) || s.len != 0)
		return -EBADMSG;
	t = key_type(&ktype);
	if (t < 0)
		return -EPROTONOSUPPORT;
	for (int i = 0; i < key_types[t].n_public; i++)
		if (!al_wire_take_string(&k, &parts[i]))
			return -EBADMSG;
	if (k.len != 0)
		return -EBADMSG;
	switch (key_types[t].kind) {
	case KIND_ED25519:
		r = verify_ed25519(parts, &stype, &blob, data, n);
		break;
	case KIND_ECDSA:
		r = verify_ecdsa(t, parts, &stype, &blob, data, n);
		break;
	case KIND_RSA:
		r = verify_rsa(parts, &stype, &blob, data, n);
		break;
	}
	ERR_clear_error();
	return r;
}
