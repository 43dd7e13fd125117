/* The matcher of the inspected HTTP flow: a few dozen patterns (the surrogates and their base64
 * forms in requests; the real values as they are, escaped, in hex and in base64 in responses:
 * http-flow-values.c) found in one pass over a head or a body, and the codecs the patterns are
 * made and checked with. It reads the text and never writes it: http-flow-replace.c replaces what
 * it finds. */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "netns/http-flow-internal.h"

/* Body bytes are taken in steps whose output is about this long at most. */
#define STEP_OUT (64 * 1024)

/* ---- base64 (RFC 4648 4), for Basic credentials and the encoded forms of surrogates ---- */

static const char B64_STD[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t flow_b64_encode(const uint8_t *src, size_t n, char *dst)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)src[i] << 16;

		if (i + 1 < n)
			v |= (uint32_t)src[i + 1] << 8;
		if (i + 2 < n)
			v |= src[i + 2];
		dst[o++] = B64_STD[v >> 18 & 63];
		dst[o++] = B64_STD[v >> 12 & 63];
		dst[o++] = i + 1 < n ? B64_STD[v >> 6 & 63] : '=';
		dst[o++] = i + 2 < n ? B64_STD[v & 63] : '=';
	}
	return o;
}

const uint8_t flow_b64_std_values[256] = {
    ['A'] = 1,	['B'] = 2,  ['C'] = 3,	['D'] = 4,  ['E'] = 5,	['F'] = 6,  ['G'] = 7,	['H'] = 8,
    ['I'] = 9,	['J'] = 10, ['K'] = 11, ['L'] = 12, ['M'] = 13, ['N'] = 14, ['O'] = 15, ['P'] = 16,
    ['Q'] = 17, ['R'] = 18, ['S'] = 19, ['T'] = 20, ['U'] = 21, ['V'] = 22, ['W'] = 23, ['X'] = 24,
    ['Y'] = 25, ['Z'] = 26, ['a'] = 27, ['b'] = 28, ['c'] = 29, ['d'] = 30, ['e'] = 31, ['f'] = 32,
    ['g'] = 33, ['h'] = 34, ['i'] = 35, ['j'] = 36, ['k'] = 37, ['l'] = 38, ['m'] = 39, ['n'] = 40,
    ['o'] = 41, ['p'] = 42, ['q'] = 43, ['r'] = 44, ['s'] = 45, ['t'] = 46, ['u'] = 47, ['v'] = 48,
    ['w'] = 49, ['x'] = 50, ['y'] = 51, ['z'] = 52, ['0'] = 53, ['1'] = 54, ['2'] = 55, ['3'] = 56,
    ['4'] = 57, ['5'] = 58, ['6'] = 59, ['7'] = 60, ['8'] = 61, ['9'] = 62, ['+'] = 63, ['/'] = 64,
};

int flow_b64_decode(const char *s, size_t n, uint8_t *dst, size_t *ret_len)
{
	size_t pad = 0, o = 0;
	uint32_t acc = 0;
	unsigned bits = 0;

	while (n > 0 && s[n - 1] == '=' && pad < 2)
		n--, pad++;
	if (n % 4 == 1 || (pad > 0 && (n + pad) % 4 != 0))
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		int v = flow_b64_value((unsigned char)s[i]);

		if (v < 0)
			return -EINVAL;
		acc = (acc << 6 | (uint32_t)v) & 0xffffff;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			dst[o++] = (uint8_t)(acc >> bits);
		}
	}
	*ret_len = o;
	return 0;
}

/* ---- percent-encoding ---- */

static int hex_value(unsigned char c)
{
	if (http_is_digit(c))
		return c - '0';
	c = ascii_lower(c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

size_t flow_percent_decode(uint8_t *s, size_t n)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		int hi, lo;

		if (s[i] == '%' && i + 2 < n && (hi = hex_value(s[i + 1])) >= 0 &&
		    (lo = hex_value(s[i + 2])) >= 0) {
			s[o++] = (uint8_t)(hi << 4 | lo);
			i += 2;
		} else
			s[o++] = s[i];
	}
	return o;
}

/* ---- the matcher: a few dozen patterns of 8 bytes or more, found in one pass ----
 *
 * Windows of WINDOW_MAX bytes (fewer when a pattern is shorter) are hashed into a bit table, and
 * the text is read one window every stride bytes: only a window whose hash is in the table is
 * compared with the patterns. A pattern of L bytes or more (L the shortest hashed one's length)
 * that starts at i holds the text's windows at i .. i + L - window, so with stride L - window + 1
 * one of them is read whatever i is; each pattern's windows at its first stride offsets are in
 * the table, and a window found at offset j of a pattern is compared with the text j bytes
 * before it. Secrets and surrogates are tens of bytes long: a 40-byte token is looked for at one
 * byte in 32, not at each. An escaped pattern (a real value, in responses) may begin with an
 * escape, so it is not hashed: it is tried where the text holds its first byte, '%' or '\\'. */

/* The letter of c's two-byte JSON escape ("\\n" for a newline), or 0. */
static uint8_t json_short_escape(uint8_t c)
{
	switch (c) {
	case '"':
	case '\\':
	case '/':
		return c;
	case '\b':
		return 'b';
	case '\f':
		return 'f';
	case '\n':
		return 'n';
	case '\r':
		return 'r';
	case '\t':
		return 't';
	}
	return 0;
}

int flow_escaped_form(uint8_t c, const uint8_t *t, size_t n)
{
	int hi, lo;

	if (n == 0)
		return FORM_MORE;
	/* The common cases first: no escape begins at t. */
	if (t[0] != '\\' && t[0] != '%')
		return t[0] == c || (t[0] == '+' && c == ' ') ? 1 : 0;
	if (t[0] == '\\') {
		if (n < 2)
			return FORM_MORE;
		if (t[1] == json_short_escape(c))
			return 2;
		if (t[1] == 'u') {
			if (n < 6)
				return memcmp(t + 2, "00", MIN(n - 2, (size_t)2)) == 0 ? FORM_MORE
										       : 0;
			hi = hex_value(t[4]);
			lo = hex_value(t[5]);
			if (t[2] == '0' && t[3] == '0' && hi >= 0 && lo >= 0 && (hi << 4 | lo) == c)
				return 6;
		}
	} else {
		if (n < 3)
			return n < 2 || hex_value(t[1]) >= 0 ? FORM_MORE : c == '%';
		hi = hex_value(t[1]);
		lo = hex_value(t[2]);
		if (hi >= 0 && lo >= 0 && (hi << 4 | lo) == c)
			return 3;
	}
	return t[0] == c;
}

/* The length of the text at t (n bytes) that is pt with each byte in one of its forms: > 0, 0
 * when it is not there, FORM_MORE when t ends first. */
static ssize_t escaped_match(const struct pattern *pt, const uint8_t *t, size_t n)
{
	size_t at = 0;

	for (size_t i = 0; i < pt->len; i++) {
		int k = flow_escaped_form(pt->bytes[i], t + at, n - at);

		if (k <= 0)
			return k;
		at += (size_t)k;
	}
	return (ssize_t)at;
}

/* Whether a byte of p has a two-byte JSON escape: shorter than the surrogate's byte written in
 * any other escaped form, so that a replacement may shorten the text. */
static bool has_short_escape(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (json_short_escape(p[i]))
			return true;
	return false;
}

static uint64_t load_window(const uint8_t *p, size_t avail)
{
	uint64_t w = 0;

	memcpy(&w, p, avail >= sizeof(w) ? sizeof(w) : avail);
	return w;
}

static uint32_t window_key(uint64_t w, unsigned shift)
{
	return (uint32_t)((w * UINT64_C(0x9e3779b97f4a7c15)) >> shift);
}

static bool bit_is_set(const uint64_t *bits, size_t i)
{
	return bits[i / 64] >> (i % 64) & 1;
}

static void set_bit(uint64_t *bits, size_t i)
{
	bits[i / 64] |= UINT64_C(1) << (i % 64);
}

void flow_matcher_done(struct matcher *m)
{
	/* The table holds hashes of real values: little, but not nothing. */
	if (m->keys)
		explicit_bzero(m->keys, m->n_keys * sizeof(*m->keys));
	if (m->offset_keys)
		explicit_bzero(m->offset_keys,
			       (m->n - m->n_escaped) * m->stride * sizeof(*m->offset_keys));
	if (m->pats)
		explicit_bzero(m->pats, m->n * sizeof(*m->pats));
	free(m->keys);
	free(m->offset_keys);
	free(m->pats);
	explicit_bzero(m, sizeof(*m));
}

static void matcher_add_start(struct matcher *m, uint8_t c)
{
	for (size_t i = 0; i < m->n_starts; i++)
		if (m->starts[i] == c)
			return;
	m->starts[m->n_starts++] = c;
	set_bit(m->first, c);
}

int flow_matcher_init(struct matcher *m, struct pattern *pats, size_t n)
{
	uint8_t mask[sizeof(uint64_t)] = {0};
	size_t bits = 1024, hashed_len = SIZE_MAX;

	*m = (struct matcher){.pats = pats, .n = n, .growth = 1, .same_len = true, .stride = 1};
	if (n == 0)
		return 0;
	m->min_len = SIZE_MAX;
	for (size_t i = 0; i < n; i++) {
		m->min_len = MIN(m->min_len, pats[i].len);
		/* "\u00XX" is the longest form of a byte. */
		m->max_len = MAX(m->max_len, pats[i].len * (pats[i].escaped ? 6 : 1));
		m->same_len &= pats[i].sub_len == pats[i].len &&
			       !(pats[i].escaped && has_short_escape(pats[i].bytes, pats[i].len));
		m->growth = MAX(m->growth, (pats[i].sub_len + pats[i].len - 1) / pats[i].len);
		m->has_b64 |= pats[i].b64 != 0;
		if (pats[i].escaped) {
			struct pattern t = pats[m->n_escaped];

			pats[m->n_escaped++] = pats[i];
			pats[i] = t;
		} else {
			hashed_len = MIN(hashed_len, pats[i].len);
		}
	}
	m->window = MIN(m->min_len, (size_t)WINDOW_MAX);
	memset(mask, 0xff, m->window);
	memcpy(&m->mask, mask, sizeof(m->mask));
	if (m->n_escaped < n)
		m->stride = MIN(hashed_len - m->window + 1, (size_t)STRIDE_MAX);
	/* About one bit in 64 set or fewer: a window read is compared with the patterns rarely. */
	while (bits < 65536 && bits < (n - m->n_escaped) * m->stride * 64)
		bits *= 2;
	m->shift = 64 - (unsigned)__builtin_ctzll(bits);
	m->n_keys = bits / 64;
	m->keys = calloc(m->n_keys, sizeof(*m->keys));
	m->offset_keys = calloc((n - m->n_escaped) * m->stride + 1, sizeof(*m->offset_keys));
	if (!m->keys || !m->offset_keys)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		uint8_t c = pats[i].bytes[0];

		set_bit(m->first, c);
		if (!pats[i].escaped) {
			uint32_t *k = m->offset_keys + (i - m->n_escaped) * m->stride;

			for (size_t j = 0; j < m->stride; j++) {
				k[j] = window_key(load_window(pats[i].bytes + j, pats[i].len - j) &
						      m->mask,
						  m->shift);
				set_bit(m->keys, k[j]);
			}
			pats[i].key = k[0];
			continue;
		}
		matcher_add_start(m, c);
		matcher_add_start(m, '%');
		matcher_add_start(m, '\\');
		if (c == ' ')
			matcher_add_start(m, '+');
	}
	return 0;
}

/* The longest match that starts at q and ends by end: among the patterns hashed to key when
 * hashed, and the escaped ones when escaped. */
static bool matcher_verify(const struct matcher *m, const uint8_t *q, const uint8_t *end,
			   uint32_t key, bool hashed, bool escaped, struct match *ret)
{
	struct match best = {0};
	size_t i = escaped ? 0 : m->n_escaped;

	for (; i < (hashed ? m->n : m->n_escaped); i++) {
		const struct pattern *pt = &m->pats[i];
		ssize_t k;

		if (pt->escaped) {
			if ((k = escaped_match(pt, q, (size_t)(end - q))) > 0 &&
			    (size_t)k > best.len)
				best = (struct match){.pt = pt, .len = (size_t)k};
		} else if (pt->key == key && pt->len <= (size_t)(end - q) && pt->len > best.len &&
			   memcmp(q, pt->bytes, pt->len) == 0)
			best = (struct match){.pt = pt, .len = pt->len};
	}
	*ret = best;
	return best.pt;
}

/* The match of a hashed pattern found by the window read at q + at (its hash: key) that starts
 * first in [q, q + span) and ends by q + avail (the longest there): its start's offset from q,
 * or SIZE_MAX. */
static size_t matcher_verify_window(const struct matcher *m, const uint8_t *q, size_t at,
				    size_t span, size_t avail, uint32_t key, struct match *ret)
{
	size_t best = SIZE_MAX, start;

	for (size_t i = m->n_escaped; i < m->n; i++) {
		const struct pattern *pt = &m->pats[i];
		const uint32_t *k = m->offset_keys + (i - m->n_escaped) * m->stride;

		for (size_t j = 0; j < m->stride && j <= at; j++) {
			if (k[j] != key)
				continue;
			start = at - j;
			if (start >= span || start > best || pt->len > avail - start ||
			    (start == best && pt->len <= ret->len) ||
			    memcmp(q + start, pt->bytes, pt->len) != 0)
				continue;
			best = start;
			*ret = (struct match){.pt = pt, .len = pt->len};
		}
	}
	return best;
}

/* The first match of a hashed pattern that starts in [q, stop) and ends by end (the longest
 * there), or NULL. The windows read are at q, q + stride, ...: a match that starts in [q, stop)
 * holds one of them that begins before stop + stride - 1 (see above). */
static inline const uint8_t *matcher_scan(const struct matcher *m, const uint8_t *q,
					  const uint8_t *stop, const uint8_t *end,
					  struct match *ret)
{
	const uint64_t *keys = m->keys, mask = m->mask;
	const unsigned shift = m->shift;
	const size_t stride = m->stride, avail = (size_t)(end - q);
	size_t span, last, fast, at, hit;
	uint64_t w;
	uint32_t key;

	if (stop <= q || m->n_escaped == m->n || avail < m->window)
		return NULL;
	span = (size_t)(stop - q);
	/* The last window that may be read, and the last one a full 8-byte load may read. */
	last = MIN(span - 1 + stride - 1, avail - m->window);
	fast = avail >= sizeof(w) ? MIN(last, avail - sizeof(w)) : 0;
	/* The hot loop: one fixed-size load, a multiply and a bit test per window. */
	for (at = 0; at <= fast && avail >= sizeof(w); at += stride) {
		memcpy(&w, q + at, sizeof(w));
		key = window_key(w & mask, shift);
		if (bit_is_set(keys, key) &&
		    (hit = matcher_verify_window(m, q, at, span, avail, key, ret)) != SIZE_MAX)
			return q + hit;
	}
	for (; at <= last; at += stride) {
		key = window_key(load_window(q + at, avail - at) & mask, shift);
		if (bit_is_set(keys, key) &&
		    (hit = matcher_verify_window(m, q, at, span, avail, key, ret)) != SIZE_MAX)
			return q + hit;
	}
	*ret = (struct match){0};
	return NULL;
}

/* The next byte in [q, end) that may begin a match of an escaped pattern, or end. next caches
 * where each of m->starts is next found (NULL: not looked for yet), so that the text is read
 * by memchr() once per start byte. */
static const uint8_t *matcher_next_start(const struct matcher *m, const uint8_t **next,
					 const uint8_t *q, const uint8_t *end)
{
	const uint8_t *best = end;

	for (size_t i = 0; i < m->n_starts; i++) {
		if (!next[i] || next[i] < q) {
			next[i] = memchr(q, m->starts[i], (size_t)(end - q));
			if (!next[i])
				next[i] = end;
		}
		best = MIN(best, next[i]);
	}
	return best;
}

const uint8_t *flow_matcher_find(const struct matcher *m, const uint8_t *p, const uint8_t *end,
				 struct match *ret)
{
	return flow_matcher_find_before(m, p, end, end, ret);
}

const uint8_t *flow_matcher_find_before(const struct matcher *m, const uint8_t *p,
					const uint8_t *before, const uint8_t *end,
					struct match *ret)
{
	const uint8_t *next[MATCHER_STARTS_MAX], *q = p, *stop, *hit;
	uint32_t key;

	if (m->n == 0 || (size_t)(end - p) < m->min_len || before <= p)
		return NULL;
	stop = MIN(end - m->min_len + 1, before);
	if (m->n_escaped == 0)
		return matcher_scan(m, p, stop, end, ret);
	for (size_t i = 0; i < m->n_starts; i++)
		next[i] = NULL;
	for (;;) {
		const uint8_t *start = matcher_next_start(m, next, q, end);

		hit = matcher_scan(m, q, MIN(start, stop), end, ret);
		if (hit || start >= stop)
			return hit;
		key = window_key(load_window(start, (size_t)(end - start)) & m->mask, m->shift);
		if (matcher_verify(m, start, end, key, bit_is_set(m->keys, key), true, ret))
			return start;
		q = start + 1;
	}
}

size_t flow_matcher_partial(const struct matcher *m, const uint8_t *p, size_t n)
{
	if (m->n == 0)
		return n;
	for (size_t i = n - MIN(n, m->max_len - 1); i < n; i++) {
		if (!bit_is_set(m->first, p[i]))
			continue;
		for (size_t j = 0; j < m->n; j++) {
			const struct pattern *pt = &m->pats[j];

			if (pt->escaped ? escaped_match(pt, p + i, n - i) < 0
					: n - i < pt->len && memcmp(p + i, pt->bytes, n - i) == 0)
				return i;
		}
	}
	return n;
}

size_t flow_matcher_step(const struct matcher *m)
{
	size_t growth = m->growth > 0 ? m->growth : 1;

	return MAX((size_t)STEP_OUT / growth, (size_t)1);
}
