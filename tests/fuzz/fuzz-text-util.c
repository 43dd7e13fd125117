/* Fuzz target: common/text-util.c as serve turns process output into events. The first byte picks
 * where the output is split into reads; each read goes through al_utf8_scan() as serve's pump does
 * (text first, a cut sequence carried into the next read, the rest as base64). Checks that the
 * events give back the output byte for byte, that what is called text re-scans as whole UTF-8,
 * that a carry is at most 3 bytes, and that base64 is the standard encoding's length. */

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/text-util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Decodes what al_base64_encode() made, appending to out. */
static size_t unbase64(const char *s, uint8_t *out)
{
	size_t n = 0, len = strlen(s);

	if (len % 4)
		abort();
	for (size_t i = 0; i < len; i += 4) {
		unsigned v = 0, pad = 0;

		for (size_t j = 0; j < 4; j++) {
			const char *p = s[i + j] == '=' ? NULL : strchr(b64, s[i + j]);

			if (s[i + j] == '=')
				pad++;
			else if (!p || !*p || pad)
				abort();
			v = v << 6 | (p ? (unsigned)(p - b64) : 0);
		}
		out[n++] = (uint8_t)(v >> 16);
		if (pad < 2)
			out[n++] = (uint8_t)(v >> 8);
		if (pad < 1)
			out[n++] = (uint8_t)v;
	}
	return n;
}

static void emit(const uint8_t *b, size_t n, bool text, uint8_t *out, size_t *len)
{
	size_t valid;

	if (n == 0)
		return;
	if (text) {
		if (al_utf8_scan(b, n, &valid) != AL_UTF8_WHOLE || valid != n)
			abort();
		memcpy(out + *len, b, n);
		*len += n;
	} else {
		char *s = al_base64_encode(b, n);

		if (!s || strlen(s) != (n + 2) / 3 * 4)
			abort();
		*len += unbase64(s, out + *len);
		free(s);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t buf[4096 + 4] = {0}, *out;
	size_t step, carry = 0, len = 0, valid;

	if (size < 1 || size > 65536)
		return 0;
	step = (size_t)data[0] % 64 + 1;
	data++, size--;
	out = malloc(size + 1);
	if (!out)
		abort();
	for (size_t off = 0; off < size; off += step) {
		size_t k = size - off < step ? size - off : step, n = carry + k;

		memcpy(buf + carry, data + off, k);
		switch (al_utf8_scan(buf, n, &valid)) {
		case AL_UTF8_WHOLE:
			if (valid != n)
				abort();
			emit(buf, n, true, out, &len);
			carry = 0;
			break;
		case AL_UTF8_CUT:
			if (n - valid > 3 || n - valid == 0)
				abort();
			emit(buf, valid, true, out, &len);
			carry = n - valid;
			memmove(buf, buf + valid, carry);
			break;
		case AL_UTF8_NOT_TEXT:
			if (valid >= n)
				abort();
			emit(buf, valid, true, out, &len);
			emit(buf + valid, n - valid, false, out, &len);
			carry = 0;
			break;
		}
	}
	emit(buf, carry, false, out, &len);
	if (len != size || memcmp(out, data, size) != 0)
		abort();
	free(out);
	return 0;
}
