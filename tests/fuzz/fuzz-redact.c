/* fuzz-redact: the sandbox writes whatever it likes to its stdout and stderr, in writes of any
 * size, and the redactor must hide every real value in it all the same. The input holds a few
 * values, how the text is cut into chunks, and the text; the stream's output after each chunk
 * must be exactly what a plain reference scan of the whole text decides at that point, and the
 * flushed output what the reference gives for the whole text.
 *
 * Input: a flags byte (bits 0-2: the number of values; bit 3: map values and text onto the
 * three bytes 'a', 'b' and NUL, so that values overlap each other and the text often), four
 * bytes of chunk sizes (bit 7 set: (size & 0x7f) * 16; 0: an empty chunk), then per value a
 * length byte (under 224: that modulo 32, so some are too short; else 32 + 12 * (byte - 224),
 * longer than the search window) and the value's bytes, and the rest is the text. */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/broker-internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_VALUES_MAX 7
#define FUZZ_CHUNKS_MAX 8192 /* a bound on empty chunks, too */

struct fuzz_value {
	struct broker_secret *secret;
	char replacement[32];
};

struct fuzz_buf {
	unsigned char *data;
	size_t len, size;
};

static void fuzz_append(struct fuzz_buf *b, const void *p, size_t n)
{
	if (n == 0)
		return;
	if (n > b->size - b->len) {
		b->size = MAX(b->len + n, 2 * b->size);
		b->data = realloc(b->data, b->size);
		if (!b->data)
			abort();
	}
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

/* The reference: decides the positions of text[*i, avail) one by one, trying every value at
 * each, as broker-internal.h describes. Stops at a position where a value may still begin,
 * unless the text is final. */
static void reference(const struct fuzz_value *v, size_t n, const unsigned char *text, size_t avail,
		      bool final, size_t *i, struct fuzz_buf *out)
{
	while (*i < avail) {
		const struct fuzz_value *best = NULL;

		for (size_t k = 0; k < n; k++) {
			size_t l = v[k].secret->len;

			if (l <= avail - *i) {
				if ((!best || l > best->secret->len) &&
				    memcmp(v[k].secret->data, text + *i, l) == 0)
					best = &v[k];
			} else if (!final &&
				   memcmp(v[k].secret->data, text + *i, avail - *i) == 0) {
				return;
			}
		}
		if (best) {
			fuzz_append(out, best->replacement, strlen(best->replacement));
			*i += best->secret->len;
		} else {
			fuzz_append(out, text + *i, 1);
			(*i)++;
		}
	}
}

static size_t chunk_size(const uint8_t sizes[4], size_t k)
{
	uint8_t c = sizes[k % 4];

	return c & 0x80 ? (size_t)(c & 0x7f) * 16 : c;
}

/* Streams text through rd in chunks and checks each output against the reference. */
static void fuzz_stream(const struct broker_redactor *rd, const struct fuzz_value *v, size_t n,
			const unsigned char *text, size_t len, const uint8_t sizes[4], size_t k)
{
	struct broker_redact_stream *s = NULL;
	struct fuzz_buf got = {0}, want = {0};
	size_t i = 0, ref = 0;

	if (broker_redact_stream_new(&s) < 0)
		abort();
	for (size_t chunks = 0; i < len || chunks == 0; chunks++, k++) {
		size_t c = chunks < FUZZ_CHUNKS_MAX ? MIN(chunk_size(sizes, k), len - i) : len - i;
		bool flush = i + c == len;
		unsigned char *out = NULL;
		size_t out_len = 0;

		if (broker_redact(rd, s, text + i, c, flush, &out, &out_len) < 0)
			abort();
		fuzz_append(&got, out, out_len);
		free(out);
		i += c;
		reference(v, n, text, i, flush, &ref, &want);
		if (got.len != want.len ||
		    (got.len > 0 && memcmp(got.data, want.data, got.len) != 0))
			__builtin_trap();
	}
	free(got.data);
	free(want.data);
	broker_redact_stream_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const unsigned char small[3] = {'a', 'b', '\0'};
	struct fuzz_value v[FUZZ_VALUES_MAX] = {0};
	struct broker_redactor *rd = NULL;
	unsigned char *text = NULL;
	const uint8_t *sizes;
	char name[8];
	size_t n = 0, want, len;
	bool narrow;

	if (size < 5)
		return 0;
	want = data[0] & 7;
	narrow = data[0] & 8;
	sizes = data + 1;
	data += 5;
	size -= 5;
	if (broker_redactor_new(&rd) < 0)
		abort();
	while (want-- > 0 && size > 0) {
		struct broker_secret *secret;
		int r;

		len = data[0] < 224 ? data[0] % 32u : 32 + 12 * (size_t)(data[0] - 224);
		data++;
		size--;
		if (len > size)
			break;
		secret = malloc(sizeof(*secret) + len); /* no NUL: the redactor must not need one */
		if (!secret)
			abort();
		secret->len = len;
		for (size_t i = 0; i < len; i++)
			secret->data[i] = (char)(narrow ? small[data[i] % 3] : data[i]);
		data += len;
		size -= len;
		(void)snprintf(name, sizeof(name), "V%zu", n);
		r = broker_redactor_add(rd, secret, name);
		if (len < BROKER_REDACT_MIN) {
			if (r != -EINVAL)
				__builtin_trap();
			free(secret);
			continue;
		}
		if (r < 0)
			__builtin_trap();
		(void)snprintf(v[n].replacement, sizeof(v[n].replacement), "[REDACTED:%s]", name);
		v[n++].secret = secret;
	}
	text = malloc(size ? size : 1);
	if (!text)
		abort();
	for (size_t i = 0; i < size; i++)
		text[i] = narrow ? small[data[i] % 3] : data[i];

	fuzz_stream(rd, v, n, text, size, sizes, 0);
	/* Once more, cut elsewhere, through the same redactor. */
	fuzz_stream(rd, v, n, text, size, sizes, 1);

	free(text);
	broker_redactor_free(rd);
	for (size_t i = 0; i < n; i++)
		free(v[i].secret);
	return 0;
}
