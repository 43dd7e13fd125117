/* Surrogates: the random stand-ins the sandbox holds instead of real values.
 *
 * Client libraries often check a token's shape before they send it (a prefix, a length, an
 * alphabet), so a surrogate for a token of a known format looks like one: the same prefix and
 * length, each letter or digit replaced by a random one of the format's alphabet, separators
 * kept in place.
 * Anything else, and a format whose body is too short to hold enough randomness, gets the
 * generic "airlock_sur_" form. Only the shape of the real value is read, never copied. */

#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "broker/broker-internal.h"

#define SURROGATE_GENERIC_RANDOM 32 /* characters of [A-Za-z0-9]: 190 bits */
#define SURROGATE_AWS_SECRET_LEN 40
/* A shaped surrogate must hold this much randomness (in thousandths of a bit), or it could be
 * guessed, or come out equal to the real value too often. */
#define SURROGATE_MIN_MILLIBITS (64 * 1000)

/* The characters a format's body may hold. The letters of a hexadecimal format are a-f only. */
enum {
	TOKEN_DIGIT = 1 << 0,
	TOKEN_LOWER = 1 << 1,
	TOKEN_UPPER = 1 << 2,
	TOKEN_HEX = 1 << 3,
	TOKEN_ALNUM = TOKEN_DIGIT | TOKEN_LOWER | TOKEN_UPPER,
};

struct token_format {
	const char *prefix;
	unsigned alphabet;
	const char *separators; /* also allowed in the body, and kept in place */
	unsigned short min_body, max_body;
};

/* Prefixes and bodies as their issuers document them; a range where the length has changed
 * before or may change. */
static const struct token_format token_formats[] = {
    /* GitHub: 36 characters today, up to 255 in all announced. */
    {"ghp_", TOKEN_ALNUM, "", 36, 251},
    {"gho_", TOKEN_ALNUM, "", 36, 251},
    {"ghu_", TOKEN_ALNUM, "", 36, 251},
    {"ghs_", TOKEN_ALNUM, "", 36, 251},
    {"ghr_", TOKEN_ALNUM, "", 36, 251},
    {"github_pat_", TOKEN_ALNUM, "_", 60, 244},
    /* Anthropic: the key's kind and version are part of the prefix. */
    {"sk-ant-api03-", TOKEN_ALNUM, "-_", 40, 400},
    {"sk-ant-admin01-", TOKEN_ALNUM, "-_", 40, 400},
    {"sk-ant-oat01-", TOKEN_ALNUM, "-_", 40, 400},
    {"sk-ant-ort01-", TOKEN_ALNUM, "-_", 40, 400},
    {"sk-ant-", TOKEN_ALNUM, "-_", 40, 400},
    /* OpenAI, and the many APIs that copied its "sk-". */
    {"sk-proj-", TOKEN_ALNUM, "-_", 40, 400},
    {"sk-svcacct-", TOKEN_ALNUM, "-_", 40, 400},
    {"sk-admin-", TOKEN_ALNUM, "-_", 40, 400},
    {"sk-", TOKEN_ALNUM, "-_", 20, 400},
    /* Slack: numeric ids and a secret, separated by dashes. */
    {"xoxb-", TOKEN_ALNUM, "-", 20, 250},
    {"xoxp-", TOKEN_ALNUM, "-", 20, 250},
    {"xoxa-", TOKEN_ALNUM, "-", 20, 250},
    {"xoxr-", TOKEN_ALNUM, "-", 20, 250},
    {"xoxs-", TOKEN_ALNUM, "-", 20, 250},
    {"xoxe.xoxb-", TOKEN_ALNUM, "-", 20, 250},
    {"xoxe.xoxp-", TOKEN_ALNUM, "-", 20, 250},
    {"xoxe-", TOKEN_ALNUM, "-", 20, 250},
    {"xapp-", TOKEN_ALNUM, "-", 20, 250},
    /* GitLab: personal, deploy, runner and trigger tokens. */
    {"glpat-", TOKEN_ALNUM, "-_.", 20, 250},
    {"gldt-", TOKEN_ALNUM, "-_.", 20, 250},
    {"glrt-", TOKEN_ALNUM, "-_.", 20, 250},
    {"glptt-", TOKEN_ALNUM, "-_.", 20, 250},
    {"hf_", TOKEN_ALNUM, "", 30, 250},
    {"npm_", TOKEN_ALNUM, "", 36, 36},
    {"pypi-", TOKEN_ALNUM, "-_", 50, 400},
    /* AWS access key ids (the secret key has no prefix); Google API keys. */
    {"AKIA", TOKEN_DIGIT | TOKEN_UPPER, "", 16, 16},
    {"ASIA", TOKEN_DIGIT | TOKEN_UPPER, "", 16, 16},
    {"AIza", TOKEN_ALNUM, "-_", 35, 35},
    {"sk_live_", TOKEN_ALNUM, "", 24, 247},
    {"sk_test_", TOKEN_ALNUM, "", 24, 247},
    {"rk_live_", TOKEN_ALNUM, "", 24, 247},
    {"rk_test_", TOKEN_ALNUM, "", 24, 247},
    {"dop_v1_", TOKEN_DIGIT | TOKEN_HEX, "", 64, 64},
    {"doo_v1_", TOKEN_DIGIT | TOKEN_HEX, "", 64, 64},
    {"dor_v1_", TOKEN_DIGIT | TOKEN_HEX, "", 64, 64},
    {"shpat_", TOKEN_DIGIT | TOKEN_HEX, "", 32, 32},
    {"shpca_", TOKEN_DIGIT | TOKEN_HEX, "", 32, 32},
    {"shppa_", TOKEN_DIGIT | TOKEN_HEX, "", 32, 32},
    {"shpss_", TOKEN_DIGIT | TOKEN_HEX, "", 32, 32},
    {"SG.", TOKEN_ALNUM, "-_.", 60, 80},
    {"lin_api_", TOKEN_ALNUM, "", 40, 40},
    {"glsa_", TOKEN_ALNUM, "_", 40, 60},
};

/* A class of characters, and the randomness (in thousandths of a bit) one of them holds. */
struct char_class {
	char first;
	unsigned size, millibits;
};
static const struct char_class class_digit = {'0', 10, 3321}, class_lower = {'a', 26, 4700},
			       class_hex = {'a', 6, 2584}, class_upper = {'A', 26, 4700};

/* The class that c is replaced from, or NULL when f keeps c or does not allow it. */
static const struct char_class *char_class_of(const struct token_format *f, char c)
{
	if (c >= '0' && c <= '9')
		return f->alphabet & TOKEN_DIGIT ? &class_digit : NULL;
	if (c >= 'a' && c <= 'z') {
		if (f->alphabet & TOKEN_HEX)
			return c <= 'f' ? &class_hex : NULL;
		return f->alphabet & TOKEN_LOWER ? &class_lower : NULL;
	}
	if (c >= 'A' && c <= 'Z')
		return f->alphabet & TOKEN_UPPER ? &class_upper : NULL;
	return NULL;
}

/* The format of the longest known prefix of real, when real's body fits that format and its
 * shape holds enough randomness; else NULL. */
static const struct token_format *token_format_of(const struct broker_secret *real)
{
	const struct token_format *f = NULL;
	size_t prefix_len = 0, millibits = 0;

	for (size_t i = 0; i < ELEMENTSOF(token_formats); i++) {
		size_t l = strlen(token_formats[i].prefix);

		if (l > prefix_len && l < real->len &&
		    memcmp(real->data, token_formats[i].prefix, l) == 0) {
			f = &token_formats[i];
			prefix_len = l;
		}
	}
	if (!f || real->len >= BROKER_SURROGATE_MAX || real->len - prefix_len < f->min_body ||
	    real->len - prefix_len > f->max_body)
		return NULL;
	for (size_t i = prefix_len; i < real->len; i++) {
		const struct char_class *c = char_class_of(f, real->data[i]);

		if (c)
			millibits += c->millibits;
		else if (real->data[i] == '\0' || !strchr(f->separators, real->data[i]))
			return NULL;
	}
	return millibits >= SURROGATE_MIN_MILLIBITS ? f : NULL;
}

/* A character drawn uniformly from the format's whole alphabet: drawing from the real
 * character's own class would tell which positions of the real value hold digits, lower- or
 * upper-case letters (about 1.5 bits a character). */
static char random_char_of(const struct token_format *f)
{
	char alphabet[62];
	size_t n = 0;

	if (f->alphabet & (TOKEN_DIGIT | TOKEN_HEX))
		for (char c = '0'; c <= '9'; c++)
			alphabet[n++] = c;
	if (f->alphabet & TOKEN_HEX)
		for (char c = 'a'; c <= 'f'; c++)
			alphabet[n++] = c;
	else if (f->alphabet & TOKEN_LOWER)
		for (char c = 'a'; c <= 'z'; c++)
			alphabet[n++] = c;
	if (f->alphabet & TOKEN_UPPER)
		for (char c = 'A'; c <= 'Z'; c++)
			alphabet[n++] = c;
	return alphabet[randombytes_uniform((uint32_t)n)];
}

/* Writes a surrogate of real's shape (real->len bytes and a NUL) to s. */
static void surrogate_shaped(const struct token_format *f, const struct broker_secret *real,
			     char *s)
{
	size_t l = strlen(f->prefix);

	memcpy(s, f->prefix, l);
	for (size_t i = l; i < real->len; i++)
		s[i] = char_class_of(f, real->data[i]) ? random_char_of(f) : real->data[i];
	s[real->len] = '\0';
}

static void surrogate_generic(char *s)
{
	static const char alnum[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
	size_t l = strlen(BROKER_SURROGATE_PREFIX);

	memcpy(s, BROKER_SURROGATE_PREFIX, l);
	for (size_t i = 0; i < SURROGATE_GENERIC_RANDOM; i++)
		s[l + i] = alnum[randombytes_uniform(sizeof(alnum) - 1)];
	s[l + SURROGATE_GENERIC_RANDOM] = '\0';
}

/* Whether s (len bytes) holds real. A real value that is part of the generic prefix is in every
 * generic surrogate, and gives nothing away there. */
static bool surrogate_holds(const char *s, size_t len, const struct broker_secret *real)
{
	if (memmem(BROKER_SURROGATE_PREFIX, strlen(BROKER_SURROGATE_PREFIX), real->data, real->len))
		return false;
	return memmem(s, len, real->data, real->len) != NULL;
}

/* An AWS secret access key's shape: 40 characters of base64's alphabet (240 bits). */
static void surrogate_aws_secret(char *s)
{
	static const char b64[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

	for (size_t i = 0; i < SURROGATE_AWS_SECRET_LEN; i++)
		s[i] = b64[randombytes_uniform(sizeof(b64) - 1)];
	s[SURROGATE_AWS_SECRET_LEN] = '\0';
}

int broker_surrogate_new(const struct broker_secret *real, enum broker_surrogate_shape shape,
			 char **ret)
{
	_cleanup_free_ char *s = NULL;
	const struct token_format *f = NULL;
	bool aws = shape == BROKER_SHAPE_AWS_SECRET;
	size_t len;

	assert(real && ret);
	if (sodium_init() < 0)
		return -EIO;
	if (!aws)
		f = token_format_of(real);
	len = aws ? SURROGATE_AWS_SECRET_LEN
	      : f ? real->len
		  : strlen(BROKER_SURROGATE_PREFIX) + SURROGATE_GENERIC_RANDOM;
	s = malloc(len + 1);
	if (!s)
		return -ENOMEM;
	/* A shaped surrogate holds 64 bits or more, and a generic one can only hold a short real
	 * value: a second try is rare, a third rarer still. */
	for (;;) {
		if (aws)
			surrogate_aws_secret(s);
		else if (f)
			surrogate_shaped(f, real, s);
		else
			surrogate_generic(s);
		if (!surrogate_holds(s, len, real))
			break;
		sodium_memzero(s, len);
	}
	*ret = TAKE_PTR(s);
	return 0;
}
