/* Redaction of real values in a sandbox's output.
 *
 * The semantics, over the whole stream T: scanning from the left, at the first position where
 * some value begins, the longest value beginning there (the first added, between equal ones) is
 * replaced by its "[REDACTED:NAME]", and the scan resumes after it. A stream decides a position
 * as soon as the bytes it has seen settle it: a position that could still begin a value whose
 * end has not arrived yet is held back, with everything after it, until the next chunk (at most
 * the longest value's length minus one bytes). So the output is the same however T is cut into
 * chunks, and only a possible secret's beginning is ever delayed.
 *
 * Finding where values begin is a Wu-Manber search: with m the shortest value's length (the
 * "window"), a value that begins at s covers T[s, s + m). Only the last two bytes of a window
 * are looked at; the shift table says how far the window may move before those two bytes could
 * be inside the first m bytes of some value, and when they end a value's first m bytes (shift
 * 0), the values of that pair's bucket are compared in full. On text without secrets the scan
 * moves by up to m - 1 bytes at a time, and looks at only one position in m - 1 or so. */

#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "broker/broker-internal.h"

/* Bounds on what a redactor holds; values are indexed with 16 bits. */
#define REDACT_VALUES_MAX 4096
/* The window is capped so that a shift fits in a byte; longer values still match in full. */
#define REDACT_WINDOW_MAX 255
#define REDACT_PAIRS 65536

struct redact_value {
	const struct broker_secret *secret; /* borrowed */
	char *replacement;
	size_t replacement_len;
	uint16_t next_bucket; /* the next value of the same bucket (index + 1), 0 for none */
	uint16_t next_first;  /* the next value with the same first byte (index + 1) */
};

/* The values whose window ends with one pair of bytes, in a hash table by that pair. */
struct redact_bucket {
	uint16_t pair;
	uint16_t head; /* the bucket's first value (index + 1), 0 for an empty slot */
};

struct broker_redactor {
	struct redact_value *values;
	size_t n_values;
	size_t window;	/* m: the shortest value's length, at most REDACT_WINDOW_MAX */
	size_t longest; /* the longest value's length */
	struct redact_bucket *buckets;
	unsigned bucket_bits;
	uint16_t first[256];			 /* the values by their first byte (index + 1) */
	uint64_t first_pairs[REDACT_PAIRS / 64]; /* whether a value begins with a pair */
	uint8_t shift[REDACT_PAIRS];
};

struct broker_redact_stream {
	unsigned char *carry; /* the held-back tail: may be part of a secret, so wiped */
	size_t len, size;
};

/* A growing buffer of output (or of held-back input) that is wiped whenever it is let go. */
struct redact_buf {
	unsigned char *data;
	size_t len, size;
};

static void redact_buf_done(struct redact_buf *b)
{
	if (b->data) {
		sodium_memzero(b->data, b->len);
		free(b->data);
	}
	*b = (struct redact_buf){0};
}

/* Makes room for n more bytes. A larger buffer is a copy: the old one is wiped. */
static int redact_buf_reserve(struct redact_buf *b, size_t n)
{
	unsigned char *data;
	size_t size;

	if (n <= b->size - b->len)
		return 0;
	if (__builtin_add_overflow(b->len, n, &size))
		return -ENOMEM;
	size = MAX(size, b->size < SIZE_MAX / 2 ? 2 * b->size : SIZE_MAX);
	data = malloc(size);
	if (!data)
		return -ENOMEM;
	if (b->len > 0)
		memcpy(data, b->data, b->len);
	redact_buf_done(&(struct redact_buf){.data = b->data, .len = b->len});
	b->data = data;
	b->size = size;
	return 0;
}

static int redact_buf_append(struct redact_buf *b, const void *p, size_t n)
{
	int r;

	if (n == 0)
		return 0;
	r = redact_buf_reserve(b, n);
	if (r < 0)
		return r;
	memcpy(b->data + b->len, p, n);
	b->len += n;
	return 0;
}

static inline uint16_t pair_at(const unsigned char *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline const unsigned char *value_bytes(const struct redact_value *v)
{
	return (const unsigned char *)v->secret->data;
}

int broker_redactor_new(struct broker_redactor **ret)
{
	struct broker_redactor *rd;

	assert(ret);
	rd = calloc(1, sizeof(*rd));
	if (!rd)
		return -ENOMEM;
	*ret = rd;
	return 0;
}

struct broker_redactor *broker_redactor_free(struct broker_redactor *rd)
{
	if (!rd)
		return NULL;
	for (size_t i = 0; i < rd->n_values; i++)
		free(rd->values[i].replacement);
	free(rd->values);
	free(rd->buckets);
	free(rd);
	return NULL;
}

/* The slot of pair in a table of 1 << bits slots: Fibonacci hashing, whose high bits depend on
 * both bytes, then linear probing. The table is never more than half full. */
static struct redact_bucket *bucket_slot(struct redact_bucket *buckets, unsigned bits,
					 uint16_t pair)
{
	size_t mask = ((size_t)1 << bits) - 1,
	       i = (uint32_t)(pair * UINT32_C(2654435769)) >> (32 - bits);

	while (buckets[i].head != 0 && buckets[i].pair != pair)
		i = (i + 1) & mask;
	return &buckets[i];
}

/* Builds the index of rd's values into buckets (1 << bits slots, zeroed, at least twice as many
 * as values). Each list is built backwards, so that it is in the order the values were added. */
static void redactor_index(struct broker_redactor *rd, struct redact_bucket *buckets, unsigned bits)
{
	size_t m = REDACT_WINDOW_MAX;

	rd->longest = 0;
	for (size_t k = 0; k < rd->n_values; k++) {
		m = MIN(m, rd->values[k].secret->len);
		rd->longest = MAX(rd->longest, rd->values[k].secret->len);
	}
	rd->window = m;
	memset(rd->shift, (int)(m - 1), sizeof(rd->shift));
	memset(rd->first, 0, sizeof(rd->first));
	memset(rd->first_pairs, 0, sizeof(rd->first_pairs));
	for (size_t k = rd->n_values; k-- > 0;) {
		struct redact_value *v = &rd->values[k];
		const unsigned char *p = value_bytes(v);
		struct redact_bucket *b;

		/* The pair ending at j may move m - 1 - j bytes before it is a window's end. */
		for (size_t j = 1; j < m; j++)
			rd->shift[pair_at(p + j - 1)] =
			    MIN(rd->shift[pair_at(p + j - 1)], m - 1 - j);
		b = bucket_slot(buckets, bits, pair_at(p + m - 2));
		b->pair = pair_at(p + m - 2);
		v->next_bucket = b->head;
		b->head = (uint16_t)(k + 1);
		v->next_first = rd->first[p[0]];
		rd->first[p[0]] = (uint16_t)(k + 1);
		rd->first_pairs[pair_at(p) / 64] |= UINT64_C(1) << (pair_at(p) % 64);
	}
	free(rd->buckets);
	rd->buckets = buckets;
	rd->bucket_bits = bits;
}

int broker_redactor_add(struct broker_redactor *rd, const struct broker_secret *value,
			const char *name)
{
	struct redact_value *values;
	struct redact_bucket *buckets;
	unsigned bits = 3;
	char *replacement;
	int n;

	assert(rd && value && name);
	if (value->len < BROKER_REDACT_MIN)
		return -EINVAL;
	if (rd->n_values >= REDACT_VALUES_MAX)
		return -E2BIG;
	while (((size_t)1 << bits) < 2 * (rd->n_values + 1))
		bits++;
	n = asprintf(&replacement, "[REDACTED:%s]", name);
	if (n < 0)
		return -ENOMEM;
	buckets = calloc((size_t)1 << bits, sizeof(*buckets));
	values = reallocarray(rd->values, rd->n_values + 1, sizeof(*values));
	if (values)
		rd->values = values;
	if (!buckets || !values) {
		free(buckets);
		free(replacement);
		return -ENOMEM;
	}
	values[rd->n_values++] = (struct redact_value){
	    .secret = value,
	    .replacement = replacement,
	    .replacement_len = (size_t)n,
	};
	redactor_index(rd, buckets, bits);
	return 0;
}

int broker_redact_stream_new(struct broker_redact_stream **ret)
{
	struct broker_redact_stream *s;

	assert(ret);
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	*ret = s;
	return 0;
}

struct broker_redact_stream *broker_redact_stream_free(struct broker_redact_stream *s)
{
	if (!s)
		return NULL;
	if (s->carry) {
		sodium_memzero(s->carry, s->size);
		free(s->carry);
	}
	free(s);
	return NULL;
}

/* Replaces the stream's carry by n bytes at p (which are not in the carry itself). On -ENOMEM
 * the carry is unchanged. */
static int stream_keep(struct broker_redact_stream *s, const unsigned char *p, size_t n)
{
	unsigned char *carry;

	if (n > s->size) {
		carry = malloc(n);
		if (!carry)
			return -ENOMEM;
		if (s->carry) {
			sodium_memzero(s->carry, s->size);
			free(s->carry);
		}
		s->carry = carry;
		s->size = n;
	}
	if (n > 0)
		memcpy(s->carry, p, n);
	if (n < s->len)
		sodium_memzero(s->carry + n, s->len - n);
	s->len = n;
	return 0;
}

enum redact_found {
	REDACT_NONE,	  /* no value begins in the range */
	REDACT_MATCH,	  /* a value begins there */
	REDACT_UNDECIDED, /* a value may begin there, but the input ends before it would */
};

/* What begins at buf[s], which has at least a window's bytes after it: the longest value (and
 * *ret_value), or one that may still, when the input is not final. */
static enum redact_found redact_check(const struct broker_redactor *rd, const unsigned char *buf,
				      size_t len, size_t s, bool final, size_t *ret_value)
{
	const struct redact_bucket *b;
	size_t avail = len - s, best = SIZE_MAX;
	uint16_t pair = pair_at(buf + s + rd->window - 2);

	b = bucket_slot(rd->buckets, rd->bucket_bits, pair);
	for (uint16_t k = b->head; k != 0; k = rd->values[k - 1].next_bucket) {
		const struct redact_value *v = &rd->values[k - 1];
		size_t l = v->secret->len;

		if (l > avail) {
			/* It outlasts every complete match here, so nothing is settled yet. */
			if (!final && memcmp(value_bytes(v), buf + s, avail) == 0)
				return REDACT_UNDECIDED;
		} else if ((best == SIZE_MAX || l > rd->values[best].secret->len) &&
			   memcmp(value_bytes(v), buf + s, l) == 0) {
			best = k - 1u;
		}
	}
	if (best == SIZE_MAX)
		return REDACT_NONE;
	*ret_value = best;
	return REDACT_MATCH;
}

/* Whether the n bytes at p, fewer than any value has, are how some value begins. */
static bool redact_begins_value(const struct broker_redactor *rd, const unsigned char *p, size_t n)
{
	if (n >= 2 && !(rd->first_pairs[pair_at(p) / 64] & UINT64_C(1) << (pair_at(p) % 64)))
		return false;
	for (uint16_t k = rd->first[p[0]]; k != 0; k = rd->values[k - 1].next_first)
		if (memcmp(value_bytes(&rd->values[k - 1]), p, n) == 0)
			return true;
	return false;
}

/* The first window end from pos on (before end) whose pair may end a value's window. This is
 * where nearly all the time goes: kept apart, the loop lives in registers. */
static size_t redact_skip(const uint8_t *shift, const unsigned char *buf, size_t pos, size_t end)
{
	while (pos < end) {
		uint8_t sh = shift[pair_at(buf + pos - 1)];

		if (sh == 0)
			break;
		pos += sh;
	}
	return pos;
}

/* The leftmost position in [from, limit) of buf[0, len) where a value begins or may begin. */
static enum redact_found redact_find(const struct broker_redactor *rd, const unsigned char *buf,
				     size_t len, size_t from, size_t limit, bool final,
				     size_t *ret_start, size_t *ret_value)
{
	size_t m = rd->window, tail, end, pos;
	enum redact_found f;

	if (rd->n_values == 0 || from >= limit)
		return REDACT_NONE;
	/* From tail on, fewer than m bytes are left: no value fits. */
	tail = len >= m ? len - m + 1 : 0;
	end = MIN(limit, tail) + m - 1;
	for (pos = redact_skip(rd->shift, buf, from + m - 1, end); pos < end;
	     pos = redact_skip(rd->shift, buf, pos + 1, end)) {
		f = redact_check(rd, buf, len, pos - (m - 1), final, ret_value);
		if (f != REDACT_NONE) {
			*ret_start = pos - (m - 1);
			return f;
		}
	}
	if (final)
		return REDACT_NONE;
	for (size_t s = MAX(from, tail); s < limit; s++)
		if (redact_begins_value(rd, buf + s, len - s)) {
			*ret_start = s;
			return REDACT_UNDECIDED;
		}
	return REDACT_NONE;
}

/* Redacts buf[*i, len) into out, deciding the positions before limit; *i ends where the scan
 * stopped (at limit or past it, after a value that began before it). When a position cannot be
 * decided yet, *ret_keep is set to it and *i to len: the rest must be held back. */
static int redact_run(const struct broker_redactor *rd, const unsigned char *buf, size_t len,
		      size_t limit, bool final, struct redact_buf *out, size_t *i,
		      const unsigned char **ret_keep)
{
	size_t start, value;
	int r;

	while (*i < limit) {
		switch (redact_find(rd, buf, len, *i, limit, final, &start, &value)) {
		case REDACT_NONE:
			r = redact_buf_append(out, buf + *i, limit - *i);
			*i = limit;
			return r;
		case REDACT_UNDECIDED:
			*ret_keep = buf + start;
			r = redact_buf_append(out, buf + *i, start - *i);
			*i = len;
			return r;
		case REDACT_MATCH:
			r = redact_buf_append(out, buf + *i, start - *i);
			if (r >= 0)
				r = redact_buf_append(out, rd->values[value].replacement,
						      rd->values[value].replacement_len);
			if (r < 0)
				return r;
			*i = start + rd->values[value].secret->len;
			break;
		}
	}
	return 0;
}

int broker_redact(const struct broker_redactor *rd, struct broker_redact_stream *s, const void *buf,
		  size_t len, bool flush, unsigned char **ret_out, size_t *ret_len)
{
	_cleanup_(redact_buf_done) struct redact_buf out = {0}, head = {0};
	const unsigned char *in = buf, *keep = NULL;
	size_t i = 0, keep_len = 0;
	int r;

	assert(rd && s && (buf || len == 0) && ret_out && ret_len);
	/* Room for the input and a replacement or two: more is rarely needed. */
	r = redact_buf_reserve(&out, len < SIZE_MAX - 64 - s->len ? s->len + len + 64 : SIZE_MAX);
	if (r < 0)
		return r;

	if (s->len > 0) {
		/* The carry's positions need at most the longest value's bytes after them. */
		size_t more = MIN(len, rd->longest);

		r = redact_buf_reserve(&head, s->len + more);
		if (r >= 0)
			r = redact_buf_append(&head, s->carry, s->len);
		if (r >= 0)
			r = redact_buf_append(&head, in, more);
		if (r >= 0)
			r = redact_run(rd, head.data, head.len, s->len, flush && more == len, &out,
				       &i, &keep);
		if (r < 0)
			return r;
		if (keep)
			keep_len = head.len - (size_t)(keep - head.data);
		i -= s->len;
	}
	if (!keep) {
		r = redact_run(rd, in, len, len, flush, &out, &i, &keep);
		if (r < 0)
			return r;
		keep_len = keep ? len - (size_t)(keep - in) : 0;
	}
	r = stream_keep(s, keep, keep_len);
	if (r < 0)
		return r;
	*ret_len = out.len;
	*ret_out = TAKE_PTR(out.data);
	return 0;
}
