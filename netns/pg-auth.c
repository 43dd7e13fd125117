/* The arithmetic of Postgres's password exchanges (pg-internal.h has the contract): SCRAM-SHA-256
 * keys, proofs and signatures, the MD5 response, base64, random bytes. OpenSSL's digests, as
 * sigv4.c uses them. */

#include <errno.h>
#include <limits.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "common/text-util.h"
#include "netns/pg-internal.h"

static int hmac(const uint8_t *key, const void *data, size_t n,
		uint8_t ret[static NETNS_PG_SCRAM_KEY_LEN])
{
	unsigned len = 0;

	if (!HMAC(EVP_sha256(), key, NETNS_PG_SCRAM_KEY_LEN, data, n, ret, &len) ||
	    len != NETNS_PG_SCRAM_KEY_LEN)
		return -ENOMEM;
	return 0;
}

static int sha256(const void *data, size_t n, uint8_t ret[static NETNS_PG_SCRAM_KEY_LEN])
{
	unsigned len = 0;

	if (!EVP_Digest(data, n, ret, &len, EVP_sha256(), NULL) || len != NETNS_PG_SCRAM_KEY_LEN)
		return -ENOMEM;
	return 0;
}

int netns_pg_scram_derive(const char *password, size_t len, const uint8_t *salt, size_t salt_len,
			  uint32_t iterations, struct netns_pg_scram_keys *ret)
{
	uint8_t salted[NETNS_PG_SCRAM_KEY_LEN];
	int r;

	if (salt_len == 0 || salt_len > INT_MAX || iterations == 0 || iterations > INT_MAX ||
	    len > INT_MAX)
		return -EINVAL;
	if (!PKCS5_PBKDF2_HMAC(password, (int)len, salt, (int)salt_len, (int)iterations,
			       EVP_sha256(), sizeof(salted), salted))
		return -ENOMEM;
	r = hmac(salted, "Client Key", strlen("Client Key"), ret->client_key);
	if (r >= 0)
		r = sha256(ret->client_key, sizeof(ret->client_key), ret->stored_key);
	if (r >= 0)
		r = hmac(salted, "Server Key", strlen("Server Key"), ret->server_key);
	OPENSSL_cleanse(salted, sizeof(salted));
	if (r < 0)
		OPENSSL_cleanse(ret, sizeof(*ret));
	return r;
}

int netns_pg_scram_proof(const struct netns_pg_scram_keys *k, const char *auth_message, size_t n,
			 uint8_t ret[static NETNS_PG_SCRAM_KEY_LEN])
{
	uint8_t sig[NETNS_PG_SCRAM_KEY_LEN];
	int r;

	r = hmac(k->stored_key, auth_message, n, sig);
	if (r < 0)
		return r;
	for (size_t i = 0; i < sizeof(sig); i++)
		ret[i] = k->client_key[i] ^ sig[i];
	OPENSSL_cleanse(sig, sizeof(sig));
	return 0;
}

bool netns_pg_scram_proof_ok(const struct netns_pg_scram_keys *k, const char *auth_message,
			     size_t n, const uint8_t proof[static NETNS_PG_SCRAM_KEY_LEN])
{
	uint8_t sig[NETNS_PG_SCRAM_KEY_LEN], client_key[NETNS_PG_SCRAM_KEY_LEN],
	    stored[NETNS_PG_SCRAM_KEY_LEN];
	bool ok;

	/* The proof XOR ClientSignature is the client's ClientKey; its hash must be StoredKey. */
	ok = hmac(k->stored_key, auth_message, n, sig) >= 0;
	for (size_t i = 0; i < sizeof(sig); i++)
		client_key[i] = proof[i] ^ sig[i];
	ok = ok && sha256(client_key, sizeof(client_key), stored) >= 0 &&
	     CRYPTO_memcmp(stored, k->stored_key, sizeof(stored)) == 0;
	OPENSSL_cleanse(sig, sizeof(sig));
	OPENSSL_cleanse(client_key, sizeof(client_key));
	OPENSSL_cleanse(stored, sizeof(stored));
	return ok;
}

int netns_pg_scram_signature(const struct netns_pg_scram_keys *k, const char *auth_message,
			     size_t n, uint8_t ret[static NETNS_PG_SCRAM_KEY_LEN])
{
	return hmac(k->server_key, auth_message, n, ret);
}

int netns_pg_md5_response(const char *password, size_t len, const char *user,
			  const uint8_t salt[static 4],
			  char ret[static NETNS_PG_MD5_RESPONSE_LEN + 1])
{
	uint8_t md[16];
	EVP_MD_CTX *ctx;
	bool ok;

	/* The inner hex digest is written where the answer goes, then overwritten by it. */
	ctx = EVP_MD_CTX_new();
	if (!ctx)
		return -ENOMEM;
	ok = EVP_DigestInit_ex(ctx, EVP_md5(), NULL) && EVP_DigestUpdate(ctx, password, len) &&
	     EVP_DigestUpdate(ctx, user, strlen(user)) && EVP_DigestFinal_ex(ctx, md, NULL);
	if (ok) {
		al_hex_lower(md, sizeof(md), ret + 3);
		ok = EVP_DigestInit_ex(ctx, EVP_md5(), NULL) &&
		     EVP_DigestUpdate(ctx, ret + 3, 32) && EVP_DigestUpdate(ctx, salt, 4) &&
		     EVP_DigestFinal_ex(ctx, md, NULL);
	}
	EVP_MD_CTX_free(ctx);
	if (!ok) {
		OPENSSL_cleanse(md, sizeof(md));
		OPENSSL_cleanse(ret, NETNS_PG_MD5_RESPONSE_LEN + 1);
		return -ENOMEM;
	}
	memcpy(ret, "md5", 3);
	al_hex_lower(md, sizeof(md), ret + 3);
	OPENSSL_cleanse(md, sizeof(md));
	return 0;
}

bool netns_pg_equal_secret(const void *a, size_t a_len, const void *b, size_t b_len)
{
	uint8_t ha[NETNS_PG_SCRAM_KEY_LEN], hb[NETNS_PG_SCRAM_KEY_LEN];
	bool ok;

	ok = sha256(a, a_len, ha) >= 0 && sha256(b, b_len, hb) >= 0 &&
	     CRYPTO_memcmp(ha, hb, sizeof(ha)) == 0;
	OPENSSL_cleanse(ha, sizeof(ha));
	OPENSSL_cleanse(hb, sizeof(hb));
	return ok;
}

/* The value of c in the standard alphabet, or -EINVAL. */
static int b64_value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -EINVAL;
}

int netns_pg_b64_decode(const char *s, size_t n, uint8_t *dst, size_t size, size_t *ret_len)
{
	size_t o = 0;

	if (n % 4 != 0)
		return -EBADMSG;
	for (size_t i = 0; i < n; i += 4) {
		int v[4];
		size_t pad = 0;

		for (size_t k = 0; k < 4; k++) {
			v[k] = b64_value(s[i + k]);
			/* '=' only at the end: the last one or two characters. */
			if (v[k] < 0 && !(s[i + k] == '=' && i + 4 == n && k >= 2))
				return -EBADMSG;
			if (v[k] < 0)
				pad++;
			else if (pad)
				return -EBADMSG;
		}
		if (size - o < 3 - pad)
			return -EBADMSG;
		dst[o++] = (uint8_t)(v[0] << 2 | v[1] >> 4);
		if (pad < 2)
			dst[o++] = (uint8_t)(v[1] << 4 | v[2] >> 2);
		if (pad < 1)
			dst[o++] = (uint8_t)(v[2] << 6 | v[3]);
	}
	*ret_len = o;
	return 0;
}

int netns_pg_random(uint8_t *buf, size_t n)
{
	if (n > INT_MAX || RAND_bytes(buf, (int)n) != 1)
		return -EIO;
	return 0;
}
