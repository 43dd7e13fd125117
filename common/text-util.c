/* UTF-8 and base64: bytes that may or may not be text, on their way into JSON. */

#include <stdbool.h>
#include <stdlib.h>

#include "common/text-util.h"

enum al_utf8 al_utf8_scan(const unsigned char *b, size_t n, size_t *valid)
{
	size_t i = 0, need;

	for (;;) {
		unsigned c;

		*valid = i;
		if (i >= n)
			return AL_UTF8_WHOLE;
		c = b[i];
		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			need = 1;
		else if (c >= 0xe0 && c <= 0xef)
			need = 2;
		else if (c >= 0xf0 && c <= 0xf4)
			need = 3;
		else
			return AL_UTF8_NOT_TEXT;
		for (size_t j = 1; j <= need; j++) {
			if (i + j >= n)
				return AL_UTF8_CUT;
			if ((b[i + j] & 0xc0) != 0x80)
				return AL_UTF8_NOT_TEXT;
		}
		/* Overlong, a surrogate, or beyond U+10FFFF. */
		if ((c == 0xe0 && b[i + 1] < 0xa0) || (c == 0xed && b[i + 1] > 0x9f) ||
		    (c == 0xf0 && b[i + 1] < 0x90) || (c == 0xf4 && b[i + 1] > 0x8f))
			return AL_UTF8_NOT_TEXT;
		i += need + 1;
	}
}

size_t al_base64_encode_to(const unsigned char *b, size_t n, char *dst)
{
	static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char *o = dst;

	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)b[i] << 16 | (i + 1 < n ? (unsigned)b[i + 1] << 8 : 0) |
			     (i + 2 < n ? b[i + 2] : 0);

		*o++ = t[v >> 18 & 63];
		*o++ = t[v >> 12 & 63];
		*o++ = i + 1 < n ? t[v >> 6 & 63] : '=';
		*o++ = i + 2 < n ? t[v & 63] : '=';
	}
	*o = '\0';
	return (size_t)(o - dst);
}

char *al_base64_encode(const unsigned char *b, size_t n)
{
	char *out = malloc((n + 2) / 3 * 4 + 1);

	if (out)
		(void)al_base64_encode_to(b, n, out);
	return out;
}

void al_hex_lower(const unsigned char *b, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[b[i] >> 4];
		out[2 * i + 1] = digits[b[i] & 15];
	}
	out[2 * n] = '\0';
}
