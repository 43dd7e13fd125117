/* bcrypt_pbkdf, the key derivation of passphrase-protected OpenSSH private keys (OpenSSH's
 * PROTOCOL.key names it; it is OpenBSD's): PBKDF2's shape with SHA-512 and, as its PRF, a bcrypt
 * hash, which is Blowfish's expensive key schedule (Provos and Mazières' "eksblowfish") run
 * over the passphrase's and the salt's SHA-512 and then used to encrypt a fixed text 64 times.
 * Neither libsodium nor OpenSSL has it, nor the salted key schedule it needs, so Blowfish is
 * here too. Blowfish starts from the hexadecimal digits of pi's fraction (its P-array the first
 * 18 words, its S-boxes the next 1,024): they are computed once, with Machin's formula in fixed
 * point, rather than copied in as a table. */

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "broker/broker-internal.h"

#define PI_WORDS (18 + 4 * 256)
#define GUARD_WORDS 4
#define HASH_LEN 32 /* bcrypt_hash's output */
#define ROUNDS_MAX (1U << 16)

struct blowfish {
	uint32_t p[18];
	uint32_t s[4][256];
};

static uint32_t pi_words[PI_WORDS];
static pthread_once_t pi_once = PTHREAD_ONCE_INIT;

/* ---- pi in fixed point: w[0] the integer part, w[1..n-1] the fraction, 32 bits a word ---- */

/* w /= d; d < 2^32. */
static void fx_div(uint32_t *w, size_t n, uint32_t d)
{
	uint64_t rem = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t cur = (rem << 32) | w[i];

		w[i] = (uint32_t)(cur / d);
		rem = cur % d;
	}
}

/* w += a, or w -= a when neg. */
static void fx_add(uint32_t *w, const uint32_t *a, size_t n, bool neg)
{
	uint64_t carry = 0;

	for (size_t i = n; i-- > 0;) {
		if (neg) {
			uint64_t sub = (uint64_t)a[i] + carry;

			carry = w[i] < sub;
			w[i] = (uint32_t)((uint64_t)w[i] - sub);
		} else {
			uint64_t sum = (uint64_t)w[i] + a[i] + carry;

			w[i] = (uint32_t)sum;
			carry = sum >> 32;
		}
	}
}

static bool fx_zero(const uint32_t *w, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (w[i])
			return false;
	return true;
}

/* sum += mult * arctan(1/k), or -= when neg: arctan(1/k) = sum over j of
 * (-1)^j / ((2j+1) k^(2j+1)). power and term are scratch space of n words. */
static void fx_arctan_inv(uint32_t *sum, size_t n, uint32_t k, uint32_t mult, bool neg,
			  uint32_t *power, uint32_t *term)
{
	memset(power, 0, n * sizeof(*power));
	power[0] = mult;
	fx_div(power, n, k);
	for (uint32_t j = 0; !fx_zero(power, n); j++) {
		memcpy(term, power, n * sizeof(*term));
		fx_div(term, n, 2 * j + 1);
		fx_add(sum, term, n, (j & 1) != neg);
		fx_div(power, n, k * k);
	}
}

static void pi_compute(void)
{
	size_t n = 1 + PI_WORDS + GUARD_WORDS;
	uint32_t *sum = calloc(n, sizeof(*sum)), *power = malloc(n * sizeof(*power)),
		 *term = malloc(n * sizeof(*term));

	if (!sum || !power || !term)
		abort(); /* a few kilobytes, once */
	/* pi = 16 arctan(1/5) - 4 arctan(1/239). Each division truncates by less than one unit of
	 * the last guard word: some ten thousand units in all, far below the words kept. */
	fx_arctan_inv(sum, n, 5, 16, false, power, term);
	fx_arctan_inv(sum, n, 239, 4, true, power, term);
	memcpy(pi_words, sum + 1, sizeof(pi_words));
	free(sum);
	free(power);
	free(term);
}

/* ---- Blowfish ---- */

static uint32_t f(const struct blowfish *b, uint32_t x)
{
	return ((b->s[0][x >> 24] + b->s[1][(x >> 16) & 0xff]) ^ b->s[2][(x >> 8) & 0xff]) +
	       b->s[3][x & 0xff];
}

static void encipher(const struct blowfish *b, uint32_t *xl, uint32_t *xr)
{
	uint32_t l = *xl, r = *xr, t;

	for (int i = 0; i < 16; i++) {
		l ^= b->p[i];
		r ^= f(b, l);
		t = l, l = r, r = t;
	}
	t = l, l = r, r = t;
	r ^= b->p[16];
	l ^= b->p[17];
	*xl = l;
	*xr = r;
}

/* The next 4 bytes of data (big-endian), going round it. */
static uint32_t stream_word(const uint8_t *data, size_t len, size_t *j)
{
	uint32_t w = 0;

	for (int i = 0; i < 4; i++) {
		if (*j >= len)
			*j = 0;
		w = (w << 8) | data[(*j)++];
	}
	return w;
}

static void init_state(struct blowfish *b)
{
	memcpy(b->p, pi_words, sizeof(b->p));
	memcpy(b->s, pi_words + 18, sizeof(b->s));
}

/* The key schedule: key mixed into P, then P and the S-boxes replaced by the encryptions of a
 * running block, into which salt is mixed (eksblowfish's; no salt, salt_len 0, is Blowfish's
 * own). */
static void expand_state(struct blowfish *b, const uint8_t *salt, size_t salt_len,
			 const uint8_t *key, size_t key_len)
{
	uint32_t l = 0, r = 0;
	size_t j = 0, k = 0;

	for (int i = 0; i < 18; i++)
		b->p[i] ^= stream_word(key, key_len, &j);
	for (int i = 0; i < 18 + 4 * 256; i += 2) {
		if (salt_len) {
			l ^= stream_word(salt, salt_len, &k);
			r ^= stream_word(salt, salt_len, &k);
		}
		encipher(b, &l, &r);
		if (i < 18) {
			b->p[i] = l;
			b->p[i + 1] = r;
		} else {
			b->s[(i - 18) / 256][(i - 18) % 256] = l;
			b->s[(i - 18) / 256][(i - 18) % 256 + 1] = r;
		}
	}
}

/* bcrypt_hash: the expensive schedule over the two SHA-512s, then 64 encryptions of a fixed
 * text; the words written out little-endian. */
static void bcrypt_hash(const uint8_t sha_pass[64], const uint8_t sha_salt[64],
			uint8_t out[HASH_LEN])
{
	static const char text[] = "OxychromaticBlowfishSwatDynamite";
	struct blowfish b;
	uint32_t c[HASH_LEN / 4];
	size_t j = 0;

	init_state(&b);
	expand_state(&b, sha_salt, 64, sha_pass, 64);
	for (int i = 0; i < 64; i++) {
		expand_state(&b, NULL, 0, sha_salt, 64);
		expand_state(&b, NULL, 0, sha_pass, 64);
	}
	for (size_t i = 0; i < HASH_LEN / 4; i++)
		c[i] = stream_word((const uint8_t *)text, HASH_LEN, &j);
	for (int i = 0; i < 64; i++)
		for (size_t k = 0; k < HASH_LEN / 4; k += 2)
			encipher(&b, &c[k], &c[k + 1]);
	for (size_t i = 0; i < HASH_LEN / 4; i++) {
		out[4 * i + 3] = (uint8_t)(c[i] >> 24);
		out[4 * i + 2] = (uint8_t)(c[i] >> 16);
		out[4 * i + 1] = (uint8_t)(c[i] >> 8);
		out[4 * i] = (uint8_t)c[i];
	}
	sodium_memzero(&b, sizeof(b));
	sodium_memzero(c, sizeof(c));
}

int broker_bcrypt_pbkdf(const void *pass, size_t pass_len, const uint8_t *salt, size_t salt_len,
			unsigned rounds, uint8_t *key, size_t key_len)
{
	uint8_t sha_pass[64], sha_salt[64], tmp[HASH_LEN], out[HASH_LEN], *count_salt;
	size_t stride = (key_len + HASH_LEN - 1) / HASH_LEN, amt, left = key_len;

	if (rounds < 1 || rounds > ROUNDS_MAX || key_len == 0 || key_len > HASH_LEN * HASH_LEN ||
	    salt_len == 0 || salt_len > 1024)
		return -EINVAL;
	if (pthread_once(&pi_once, pi_compute) != 0)
		return -EIO;
	count_salt = malloc(salt_len + 4);
	if (!count_salt)
		return -ENOMEM;
	amt = (key_len + stride - 1) / stride;
	crypto_hash_sha512(sha_pass, pass, pass_len);
	memcpy(count_salt, salt, salt_len);
	for (uint32_t count = 1; left > 0; count++) {
		size_t i;

		count_salt[salt_len] = (uint8_t)(count >> 24);
		count_salt[salt_len + 1] = (uint8_t)(count >> 16);
		count_salt[salt_len + 2] = (uint8_t)(count >> 8);
		count_salt[salt_len + 3] = (uint8_t)count;
		crypto_hash_sha512(sha_salt, count_salt, salt_len + 4);
		bcrypt_hash(sha_pass, sha_salt, tmp);
		memcpy(out, tmp, sizeof(out));
		for (unsigned r = 1; r < rounds; r++) {
			crypto_hash_sha512(sha_salt, tmp, sizeof(tmp));
			bcrypt_hash(sha_pass, sha_salt, tmp);
			for (size_t k = 0; k < sizeof(out); k++)
				out[k] ^= tmp[k];
		}
		/* The output's bytes are spread: byte i of this round goes to i * stride. */
		amt = MIN(amt, left);
		for (i = 0; i < amt; i++) {
			size_t dest = i * stride + (count - 1);

			if (dest >= key_len)
				break;
			key[dest] = out[i];
		}
		left -= i;
	}
	sodium_memzero(sha_pass, sizeof(sha_pass));
	sodium_memzero(sha_salt, sizeof(sha_salt));
	sodium_memzero(tmp, sizeof(tmp));
	sodium_memzero(out, sizeof(out));
	sodium_memzero(count_salt, salt_len + 4);
	free(count_salt);
	return 0;
}

uint32_t broker_blowfish_pi_word(size_t i)
{
	(void)pthread_once(&pi_once, pi_compute);
	return i < PI_WORDS ? pi_words[i] : 0;
}
