/* One inspected HTTP/1.1 connection of the egress proxy, both directions (netns-internal.h has
 * the contract).
 *
 * Each direction is a byte-in, byte-out state machine. A head (request, response, trailers) is
 * taken whole: gathered until its empty line, parsed strictly, and written out again from the
 * parsed fields, so that nothing a parser did not understand reaches the other side. A body
 * streams through: scanned for surrogates (requests, where one is refused) or for the real values
 * resolved on this flow or bound to its host (responses, where each is turned back into its
 * surrogate), holding back only a tail that could begin one (and a base64 run, whose whole is
 * encoded again around a value), and framed anew where its length may change.
 *
 * Decisions the contract leaves open:
 * - Request trailers are refused (no client in use sends any, and servers merge them into the
 *   headers in different ways); response trailers pass, with real values replaced.
 * - Chunk extensions are dropped (a request's are checked for surrogates first), and a chunked
 *   body is re-emitted in the pieces in which it is released, not in the ones it came in.
 * - A request that ends the connection (Connection: close, or any HTTP/1.0 request, whose
 *   keep-alive is not forwarded) is the last one: bytes after it are dropped, as a server drops
 *   them (RFC 9112 9.6).
 * - Responses go out as HTTP/1.1 (an intermediary sends its own version), with
 *   "Connection: close" when the connection ends after them. Whether a Content-Length body is
 *   re-framed is decided at its head, from the values resolved by then: when one of them differs
 *   in length from its surrogate, it goes out chunked to an HTTP/1.1 client, and close-delimited
 *   to an HTTP/1.0 one (whose request went upstream as the connection's last).
 * - In responses, real values shorter than VALUE_MIN bytes are left alone (replacing every
 *   occurrence of a few bytes would corrupt bodies), and a sidecar header's value is replaced by
 *   as many '*' (an API that echoes headers would otherwise show the sandbox a value it never
 *   held).
 * - Bodies are searched for surrogates as they are; heads also for their base64 and
 *   percent-encoded forms. Responses are searched for real values as they are, in base64 and hex,
 *   and with any of their bytes JSON-escaped or percent-encoded (a server escapes what it likes);
 *   a value's byte in a one-, three- or six-byte form turns into the surrogate's byte in the same
 *   form and case, so that Content-Length bodies keep their length where values and surrogates
 *   do. A value with a byte JSON escapes in two bytes ('/') can change a body's length: such
 *   bodies are re-framed like those of values longer or shorter than their surrogates. The end of a
 * Content-Length body and the next request line are searched together too: the upstream reads two
 * messages, but would still receive a whole surrogate.
 * - Connection options that name a removed, a framing or a sidecar header are dropped (a later
 *   hop would remove that header, or frame the body differently).
 *
 * Real values live only in broker_secret memory and in netns_buf storage, which is wiped; every
 * other temporary copy is wiped before it is freed. No message names a value. */

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "broker/client.h"
#include "netns/netns-internal.h"

#define PENDING_MAX 64 /* requests passed on and not answered yet */
#define SIDECAR_LINES_MAX 16
#define CHUNK_LINE_MAX 4096 /* http.c refuses a longer chunk-size line */
/* A request or response head as written out, values swapped in. */
#define HEAD_OUT_MAX (2 * NETNS_HTTP_HEAD_MAX)
/* Body bytes are taken in steps whose output is about this long at most. */
#define STEP_OUT (64 * 1024)
/* The hard ceiling of out, which the steps never reach: a failsafe, not flow control. */
#define OUT_LIMIT ((size_t)NETNS_HTTP_FLOW_OUT_MAX + HEAD_OUT_MAX + 1024 * 1024)
#define VALUE_MIN 8 /* shorter real values are not looked for in responses */
#define BODY_LENGTH_MAX ((UINT64_C(1) << 53) - 1)
#define HITS_MAX 32	 /* replacements per emitted piece of a body */
#define PERCENT_ROUNDS 4 /* %2567 is decoded twice, and so on */
#define WINDOW_MAX 8	 /* bytes of a pattern that the matcher hashes */
#define WHERE_MAX 96
#define FORM_MORE (-1) /* escaped_form(): the text ends before it can tell */
#define CASE_NONE (-1) /* hex_case(): digits only */
/* Bytes that may begin an escaped pattern (the first byte of each real value, '%', '\\', '+'):
 * each byte once. */
#define MATCHER_STARTS_MAX 256
#define ALPHA_STD 1 /* base64 alphabets (struct pattern) */
#define ALPHA_URL 2
/* The longest base64 run that is encoded again whole around a real value in a response (and
 * that a body holds back until it knows its end); in a longer one only the characters that the
 * value's bits alone decide are replaced. */
#define B64_RUN_MAX 4096

/* ---- characters ---- */

static unsigned char ascii_lower(unsigned char c)
{
	return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
}

/* ASCII only: strncasecmp() follows the locale. */
static bool ascii_eq_n(const char *s, size_t n, const char *t, size_t m)
{
	if (n != m)
		return false;
	for (size_t i = 0; i < n; i++)
		if (ascii_lower((unsigned char)s[i]) != ascii_lower((unsigned char)t[i]))
			return false;
	return true;
}

static bool ascii_eq(const char *s, size_t n, const char *lower)
{
	return ascii_eq_n(s, n, lower, strlen(lower));
}

/* "header <name>", the name lower-cased and cut short: where a surrogate was, for messages. */
static const char *where_header(const char *name, size_t n, char buf[static WHERE_MAX])
{
	size_t o = (size_t)snprintf(buf, WHERE_MAX, "header ");

	for (size_t i = 0; i < n && o < WHERE_MAX - 1; i++)
		buf[o++] = (char)ascii_lower((unsigned char)name[i]);
	buf[o] = '\0';
	return buf;
}

/* ---- base64 (RFC 4648 4), for Basic credentials and the encoded forms of surrogates ---- */

static const char B64_STD[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Encodes n bytes into dst (room for 4 * ((n + 2) / 3)), padded; returns the length. */
static size_t b64_encode(const uint8_t *src, size_t n, char *dst)
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

static int b64_value(unsigned char c)
{
	const char *p = c ? strchr(B64_STD, c) : NULL;

	return p ? (int)(p - B64_STD) : -1;
}

/* Decodes standard base64, padded or not, into dst (room for n / 4 * 3 + 2): -EINVAL when s is
 * not that. */
static int b64_decode(const char *s, size_t n, uint8_t *dst, size_t *ret_len)
{
	size_t pad = 0, o = 0;
	uint32_t acc = 0;
	unsigned bits = 0;

	while (n > 0 && s[n - 1] == '=' && pad < 2)
		n--, pad++;
	if (n % 4 == 1 || (pad > 0 && (n + pad) % 4 != 0))
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		int v = b64_value((unsigned char)s[i]);

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

/* Decodes every %XX of s in place; returns the new length. */
static size_t percent_decode(uint8_t *s, size_t n)
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
 * The first WINDOW_MAX bytes (fewer for a shorter pattern) of each pattern are hashed into a bit
 * table; the text is read one window at a time, and only a window whose hash is in the table is
 * compared with the patterns. An escaped pattern (a real value, in responses) may begin with an
 * escape, so it is not hashed: it is tried where the text holds its first byte, '%' or '\\'. */
static void wipe_free(void *p, size_t n)
{
	if (p)
		explicit_bzero(p, n);
	free(p);
}

struct pattern {
	const uint8_t *bytes;
	size_t len;
	const uint8_t *sub; /* its replacement, in responses */
	size_t sub_len;
	size_t owner; /* the surrogate it is, or encodes */
	uint32_t key;
	/* Also found with any of its bytes escaped (escaped_form()): in the text, it is then
	 * longer than len. */
	bool escaped;
	/* A base64 form of a real value (in responses): its alphabet (ALPHA_STD, ALPHA_URL, or 0
	 * for none), the value's offset (0-2) past a multiple of three bytes, and the value and
	 * surrogate themselves, for grow_b64_match(). */
	uint8_t b64, b64_k;
	const uint8_t *value, *surrogate;
	size_t value_len, surrogate_len;
};

/* What the matcher found: a pattern, and the bytes of the text it covers. */
struct match {
	const struct pattern *pt;
	size_t len;
	/* A whole base64 run encoded again (grow_b64_match()), its replacement; owned, wiped. */
	uint8_t *text;
	size_t text_len;
};

struct matcher {
	struct pattern *pats; /* owned; the escaped ones first */
	size_t n, min_len, max_len;
	size_t n_escaped;  /* patterns with .escaped */
	size_t growth;	   /* output bytes per input byte, at most, once replaced */
	bool same_len;	   /* every replacement keeps the length */
	bool has_b64;	   /* some patterns are base64 forms of real values */
	uint64_t mask;	   /* the window's bytes of a 64-bit load */
	unsigned shift;	   /* of the hash, to index keys */
	uint64_t *keys;	   /* a bit per hash value */
	size_t n_keys;	   /* words */
	uint64_t first[4]; /* a bit per byte that may begin a match */
	/* The bytes that may begin a match of an escaped pattern: its first byte, '%', '\\', and
	 * '+' for a space. */
	uint8_t starts[MATCHER_STARTS_MAX];
	size_t n_starts;
};

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

/* The forms of a byte c that the un-swap looks for: JSON's "\\u00XX" (either case), "\\/" and
 * the other two-byte escapes, percent-encoding's "%XX" (either case), '+' for a space, and c
 * itself. Returns the length of the form at t (n bytes), 0 when there is none, FORM_MORE when t
 * ends before it can tell. An escape that decodes to c is taken before c itself (a value holding
 * '%' or '\\' may then be missed in a mix of forms; its literal form is a pattern of its own). */
static int escaped_form(uint8_t c, const uint8_t *t, size_t n)
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
		int k = escaped_form(pt->bytes[i], t + at, n - at);

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

static void matcher_done(struct matcher *m)
{
	/* The table holds hashes of real values: little, but not nothing. */
	if (m->keys)
		explicit_bzero(m->keys, m->n_keys * sizeof(*m->keys));
	if (m->pats)
		explicit_bzero(m->pats, m->n * sizeof(*m->pats));
	free(m->keys);
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

/* Makes m find pats[0..n) (taken over, even on error, and reordered; no empty pattern).
 * -ENOMEM. */
static int matcher_init(struct matcher *m, struct pattern *pats, size_t n)
{
	uint8_t mask[sizeof(uint64_t)] = {0};
	size_t bits = 1024, window;

	*m = (struct matcher){.pats = pats, .n = n, .growth = 1, .same_len = true};
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
		}
	}
	window = MIN(m->min_len, (size_t)WINDOW_MAX);
	memset(mask, 0xff, window);
	memcpy(&m->mask, mask, sizeof(m->mask));
	while (bits < 65536 && bits < n * 1024)
		bits *= 2;
	m->shift = 64 - (unsigned)__builtin_ctzll(bits);
	m->n_keys = bits / 64;
	m->keys = calloc(m->n_keys, sizeof(*m->keys));
	if (!m->keys)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		uint8_t c = pats[i].bytes[0];

		set_bit(m->first, c);
		if (!pats[i].escaped) {
			pats[i].key =
			    window_key(load_window(pats[i].bytes, pats[i].len) & m->mask, m->shift);
			set_bit(m->keys, pats[i].key);
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

/* The first match of a hashed pattern that starts in [q, stop) and ends by end, or NULL. */
static inline const uint8_t *matcher_scan(const struct matcher *m, const uint8_t *q,
					  const uint8_t *stop, const uint8_t *end,
					  struct match *ret)
{
	const uint64_t *keys = m->keys, mask = m->mask;
	const unsigned shift = m->shift;
	const uint8_t *fast;
	uint64_t w;
	uint32_t key;

	/* The hot loop: one fixed-size load, a multiply and a bit test per byte, and one bound. */
	fast = (size_t)(end - q) >= sizeof(w) ? end - (sizeof(w) - 1) : q;
	for (fast = MIN(fast, stop); q < fast; q++) {
		memcpy(&w, q, sizeof(w));
		key = window_key(w & mask, shift);
		if (bit_is_set(keys, key) && matcher_verify(m, q, end, key, true, false, ret))
			return q;
	}
	for (; q < stop; q++) {
		key = window_key(load_window(q, (size_t)(end - q)) & mask, shift);
		if (bit_is_set(keys, key) && matcher_verify(m, q, end, key, true, false, ret))
			return q;
	}
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

/* The leftmost whole match in [p, end) (the longest there), or NULL. Escaped patterns are tried
 * only where one of their start bytes is. */
static const uint8_t *matcher_find(const struct matcher *m, const uint8_t *p, const uint8_t *end,
				   struct match *ret)
{
	const uint8_t *next[MATCHER_STARTS_MAX], *q = p, *stop, *hit;
	uint32_t key;

	if (m->n == 0 || (size_t)(end - p) < m->min_len)
		return NULL;
	stop = end - m->min_len + 1;
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

/* Where the tail of p[0..n) that could begin a pattern starts (the earliest such offset), or n:
 * the bytes a stream must hold back until it knows more. */
static size_t matcher_partial(const struct matcher *m, const uint8_t *p, size_t n)
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

/* Input bytes of a body step: its output, replacements included, stays near STEP_OUT. */
static size_t matcher_step(const struct matcher *m)
{
	size_t growth = m->growth > 0 ? m->growth : 1;

	return MAX((size_t)STEP_OUT / growth, (size_t)1);
}

/* ---- base64 runs around a real value, encoded again whole ---- */

/* The value of c in the alphabet (ALPHA_STD or ALPHA_URL), or -1. */
static int b64_alphabet_value(unsigned char c, uint8_t alphabet)
{
	if (c == '+' || c == '/')
		return alphabet == ALPHA_STD ? b64_value(c) : -1;
	if (c == '-' || c == '_')
		return alphabet == ALPHA_URL ? (c == '-' ? 62 : 63) : -1;
	return b64_value(c);
}

/* Whether c may be part of a base64 run in either alphabet, padding included. */
static bool is_b64_run_char(unsigned char c)
{
	return b64_value(c) >= 0 || c == '-' || c == '_' || c == '=';
}

static void match_done(struct match *mt)
{
	wipe_free(mt->text, mt->text_len);
	mt->text = NULL;
	mt->text_len = 0;
}

/* The bytes of d (n) with every real value of m's base64 patterns swapped for its surrogate,
 * into out when not NULL; returns their number. */
static size_t swap_decoded(const struct matcher *m, const uint8_t *d, size_t n, uint8_t *out)
{
	size_t o = 0;

	for (size_t i = 0; i < n;) {
		const struct pattern *best = NULL;

		for (size_t j = 0; j < m->n; j++) {
			const struct pattern *pt = &m->pats[j];

			if (pt->b64 && pt->value_len <= n - i &&
			    (!best || pt->value_len > best->value_len) &&
			    memcmp(d + i, pt->value, pt->value_len) == 0)
				best = pt;
		}
		if (!best) {
			if (out)
				out[o] = d[i];
			o++;
			i++;
			continue;
		}
		if (out)
			memcpy(out + o, best->surrogate, best->surrogate_len);
		o += best->surrogate_len;
		i += best->value_len;
	}
	return o;
}

/* Encodes d (n bytes) in alphabet into a new buffer, padded or not: -ENOMEM. */
static int b64_encode_new(const uint8_t *d, size_t n, uint8_t alphabet, bool padded, uint8_t **ret,
			  size_t *ret_len)
{
	size_t size = (n + 2) / 3 * 4, len;
	char *t = malloc(MAX(size, (size_t)1));

	if (!t)
		return -ENOMEM;
	len = b64_encode(d, n, t);
	for (size_t i = 0; alphabet == ALPHA_URL && i < len; i++)
		t[i] = t[i] == '+' ? '-' : t[i] == '/' ? '_' : t[i];
	while (!padded && len > 0 && t[len - 1] == '=')
		len--;
	*ret = (uint8_t *)t;
	*ret_len = len;
	return 0;
}

#define GROW_WAIT 2 /* grow_b64_match(): the match must wait for more bytes */

/* Whether another match starts in [from, pe) of [from, end): 1, GROW_WAIT when one may (more
 * bytes to come), 0 when not. A run that holds one is not encoded again: that would write the
 * other match's bytes back as they were, but for its last character maybe (the hex of a value
 * right after a base64 run is a run of base64 characters). */
static int run_holds_other_match(const struct matcher *m, const uint8_t *from, const uint8_t *pe,
				 const uint8_t *end, bool more)
{
	struct match other;
	const uint8_t *o = matcher_find(m, from, end, &other);

	if (o && o < pe)
		return 1;
	return more && from + matcher_partial(m, from, (size_t)(end - from)) < pe ? GROW_WAIT : 0;
}

/* Whether the text of a grown match mt, in place of [rs, pe) between the bytes around it (from
 * lo to end), holds or makes another match: encoded again, the run writes back what it held
 * beyond the value as it was (the hex of another value, say, whose digits are base64 characters
 * too), and its padding and edges may differ, which can join what is on either side. 1 when it
 * does, GROW_WAIT when it may once more bytes come, 0 when not; -ENOMEM. */
static int grown_text_makes_match(const struct matcher *m, const uint8_t *lo, const uint8_t *rs,
				  const uint8_t *pe, const uint8_t *end, bool more,
				  const struct match *mt)
{
	size_t before = MIN((size_t)(rs - lo), m->max_len),
	       after = MIN((size_t)(end - pe), m->max_len);
	size_t n = before + mt->text_len + after, text_end = before + mt->text_len;
	const uint8_t *at, *hit;
	struct match other;
	uint8_t *buf;
	int r = 0;

	buf = malloc(n);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, rs - before, before);
	memcpy(buf + before, mt->text, mt->text_len);
	memcpy(buf + text_end, pe, after);
	for (at = buf; (hit = matcher_find(m, at, buf + n, &other)); at = hit + 1) {
		if ((size_t)(hit - buf) >= text_end)
			break;
		if ((size_t)(hit - buf) + other.len > before) {
			r = 1;
			break;
		}
	}
	if (r == 0 && more && pe + after == end && matcher_partial(m, buf, n) < text_end)
		r = GROW_WAIT;
	wipe_free(buf, n);
	return r;
}

/* A base64 form of a real value replaces only the characters that the value's bits alone
 * decide: the one before them and the one after mix its bits with its neighbours', and the rest
 * of the run is shifted when the surrogate's length differs from the value's. So a match *q, mt
 * in [lo, end) grows to its whole run of its alphabet (and its padding), when the run decodes, at
 * the match's alignment, to bytes that hold the whole value where the match says: the run is
 * encoded again with every real value in it swapped (padded when it was, or when a standard run
 * of whole groups had no padding to need), and the match covers it. Else (a longer run than
 * B64_RUN_MAX, one that reaches end while more may follow, another alignment, a text that holds
 * or makes another match) it is left as it is. GROW_WAIT when whether it makes one depends on
 * bytes yet to come (more); -ENOMEM. */
static int grow_b64_match(const struct matcher *m, const uint8_t *lo, const uint8_t *end, bool more,
			  const uint8_t **q, struct match *mt)
{
	const struct pattern *pt = mt->pt;
	const uint8_t *rs = *q, *re = *q + mt->len, *pe;
	size_t chars, first = (8 * (size_t)pt->b64_k + 5) / 6, dn = 0, sn, off;
	uint8_t *d = NULL, *sw = NULL;
	uint32_t acc = 0;
	unsigned bits = 0;
	int r = 0;

	if (!pt->b64)
		return 0;
	while (rs > lo && (size_t)(re - rs) <= B64_RUN_MAX &&
	       b64_alphabet_value(rs[-1], pt->b64) >= 0)
		rs--;
	while (re < end && (size_t)(re - rs) <= B64_RUN_MAX &&
	       b64_alphabet_value(*re, pt->b64) >= 0)
		re++;
	for (pe = re; pe < end && pe - re < 2 && *pe == '=';)
		pe++;
	chars = (size_t)(re - rs);
	if (chars > B64_RUN_MAX || (more && pe == end) || (size_t)(*q - rs) % 4 != first ||
	    chars % 4 == 1)
		return 0;
	r = run_holds_other_match(m, *q + 1, pe, end, more);
	if (r != 0)
		return r == GROW_WAIT ? r : 0;
	d = malloc(chars / 4 * 3 + 3);
	if (!d)
		return -ENOMEM;
	for (size_t i = 0; i < chars; i++) {
		acc = (acc << 6 | (uint32_t)b64_alphabet_value(rs[i], pt->b64)) & 0xffffff;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			d[dn++] = (uint8_t)(acc >> bits);
		}
	}
	acc = 0;
	off = (size_t)(*q - rs - first) / 4 * 3 + pt->b64_k;
	if (off + pt->value_len > dn || memcmp(d + off, pt->value, pt->value_len) != 0)
		goto out;
	sn = swap_decoded(m, d, dn, NULL);
	sw = malloc(MAX(sn, (size_t)1));
	if (!sw) {
		r = -ENOMEM;
		goto out;
	}
	(void)swap_decoded(m, d, dn, sw);
	match_done(mt);
	r = b64_encode_new(sw, sn, pt->b64, pe > re || (pt->b64 == ALPHA_STD && chars % 4 == 0),
			   &mt->text, &mt->text_len);
	if (r >= 0)
		r = grown_text_makes_match(m, lo, rs, pe, end, more, mt);
	if (r == 0) {
		mt->len = (size_t)(pe - rs);
		*q = rs;
	} else {
		/* Left as it is: the other match is found on its own. */
		match_done(mt);
		if (r == 1)
			r = 0;
	}
	explicit_bzero(sw, sn);
	free(sw);
out:
	wipe_free(d, chars / 4 * 3 + 3);
	return r;
}

/* The first match in [s, end) as it is replaced: matcher_find(), grown to its base64 run. NULL
 * (*r 0) when there is none, or on error (*r -ENOMEM). */
static const uint8_t *find_replacement(const struct matcher *m, const uint8_t *s,
				       const uint8_t *end, bool more, struct match *ret, int *r)
{
	const uint8_t *q = matcher_find(m, s, end, ret);

	ret->text = NULL;
	ret->text_len = 0;
	*r = 0;
	if (!q)
		return NULL;
	*r = grow_b64_match(m, s, end, more, &q, ret);
	return *r < 0 ? NULL : q;
}

/* ---- writing to a buffer, with the first error kept ---- */

struct writer {
	struct netns_buf *b;
	size_t max;
	int r;
};

static void put(struct writer *w, const void *p, size_t n)
{
	if (w->r >= 0)
		w->r = netns_buf_append(w->b, p, n, w->max);
}

static void put_str(struct writer *w, const char *s)
{
	put(w, s, strlen(s));
}

/* Whether the hex digits of an escape at h (two) are upper-case: 1, 0 lower-case, CASE_NONE
 * digits only. */
static int hex_case(const uint8_t *h)
{
	for (size_t i = 0; i < 2; i++)
		if (http_is_alpha(h[i]))
			return h[i] < 'a';
	return CASE_NONE;
}

/* Writes the replacement of the match mt at t to w, or only counts its bytes when w is NULL;
 * returns their number. An escaped pattern's replacement, when it is as long as the pattern, is
 * written byte by byte in the forms the text has, so that the text keeps its length: c as c,
 * %XX and \u00XX in the case of the text's hex digits (where those are digits only, of the
 * match's first escape that has letters; else %XX upper, \u00XX lower, as most encoders write
 * them); and where the text has a two-byte JSON escape or '+', the byte as it is. Else the
 * replacement is written as it is. */
static size_t put_sub(struct writer *w, const struct match *mt, const uint8_t *t)
{
	const struct pattern *pt = mt->pt;
	size_t at = 0, o = 0;
	int match_case = CASE_NONE, k;
	char form[8];

	if (mt->text) {
		if (w)
			put(w, mt->text, mt->text_len);
		return mt->text_len;
	}
	if (!pt->escaped || pt->sub_len != pt->len) {
		if (w)
			put(w, pt->sub, pt->sub_len);
		return pt->sub_len;
	}
	for (size_t i = 0; i < pt->len && match_case == CASE_NONE; i++, at += (size_t)k) {
		k = escaped_form(pt->bytes[i], t + at, mt->len - at);
		if (k == 3 || k == 6)
			match_case = hex_case(t + at + k - 2);
	}
	at = 0;
	for (size_t i = 0; i < pt->len; i++, at += (size_t)k) {
		size_t fl = 1;
		int upper;

		k = escaped_form(pt->bytes[i], t + at, mt->len - at);
		assert(k > 0);
		form[0] = (char)pt->sub[i];
		if (k == 3 || k == 6) {
			upper = hex_case(t + at + k - 2);
			if (upper == CASE_NONE)
				upper = match_case != CASE_NONE ? match_case : k == 3;
			fl = (size_t)snprintf(form, sizeof(form), upper ? "%s%02X" : "%s%02x",
					      k == 3 ? "%" : "\\u00", pt->sub[i]);
		}
		if (w)
			put(w, form, fl);
		o += fl;
	}
	return o;
}

/* Writes p with every pattern of m replaced. */
static void put_replaced(struct writer *w, const struct matcher *m, const void *p, size_t n)
{
	const uint8_t *s = p, *end = s + n, *q;
	struct match mt;
	int r;

	while ((q = find_replacement(m, s, end, false, &mt, &r))) {
		put(w, s, (size_t)(q - s));
		(void)put_sub(w, &mt, q);
		s = q + mt.len;
		match_done(&mt);
	}
	if (r < 0 && w->r >= 0)
		w->r = r;
	put(w, s, (size_t)(end - s));
}

/* Writes n bytes as base64, through a small buffer that is wiped. */
static void put_b64(struct writer *w, const uint8_t *p, size_t n)
{
	char enc[256];

	for (size_t i = 0; i < n; i += 192) {
		size_t k = b64_encode(p + i, MIN(n - i, (size_t)192), enc);

		put(w, enc, k);
	}
	explicit_bzero(enc, sizeof(enc));
}

/* Drops the first n bytes of b, wiped. netns_buf_consume() is not called on a buffer that never
 * held anything (its storage is NULL then). */
static void buf_drop(struct netns_buf *b, size_t n)
{
	if (n > 0)
		netns_buf_consume(b, n);
}

static void buf_clear(struct netns_buf *b)
{
	buf_drop(b, netns_buf_len(b));
}

/* Drops what was appended to b after its first len bytes. */
static void buf_truncate(struct netns_buf *b, size_t len)
{
	size_t n = netns_buf_len(b);

	if (n <= len)
		return;
	explicit_bzero(b->data + b->start + len, n - len);
	b->end = b->start + len;
}

/* ---- units that may arrive in pieces: heads, chunk-size lines, CRLFs ---- */

struct unit {
	const uint8_t *p;
	size_t n;
	size_t had; /* bytes that earlier feeds left in acc */
};

/* The bytes of the unit so far: buf itself when nothing waits in acc, else acc with as much of
 * buf appended as cap allows. */
static int unit_gather(struct netns_buf *acc, const uint8_t *buf, size_t len, size_t cap,
		       struct unit *u)
{
	int r;

	u->had = netns_buf_len(acc);
	if (u->had == 0) {
		u->p = buf;
		u->n = MIN(len, cap);
		return 0;
	}
	r = netns_buf_append(acc, buf, MIN(len, cap - u->had), cap);
	if (r < 0)
		return r;
	u->p = netns_buf_head(acc);
	u->n = netns_buf_len(acc);
	return 0;
}

/* The unit is complete at unit_len bytes: returns the bytes of this feed it took. */
static size_t unit_take(struct netns_buf *acc, const struct unit *u, size_t unit_len)
{
	buf_clear(acc);
	return unit_len - u->had;
}

/* More bytes are needed: keeps what there is. Returns the bytes of this feed taken, or -ENOMEM. */
static ssize_t unit_wait(struct netns_buf *acc, const struct unit *u)
{
	int r;

	if (u->had > 0)
		return (ssize_t)(u->n - u->had);
	r = netns_buf_append(acc, u->p, u->n, SIZE_MAX);
	return r < 0 ? r : (ssize_t)u->n;
}

/* Whether a head could be complete: it holds an empty line (or a bare-LF one, which the parser
 * refuses), or it is as long as a head may be. */
static bool head_ready(const struct unit *u, size_t cap)
{
	size_t from = u->had > 3 ? u->had - 3 : 0;

	return u->n >= cap || memmem(u->p + from, u->n - from, "\r\n\r\n", 4) ||
	       memmem(u->p + from, u->n - from, "\n\n", 2);
}

/* ---- the flow ---- */

enum req_state {
	REQ_HEAD,
	REQ_BODY, /* Content-Length */
	REQ_CHUNK_LINE,
	REQ_CHUNK_DATA,
	REQ_CHUNK_END, /* the CRLF after a chunk's data */
	REQ_TRAILERS,
	REQ_CLOSED, /* after the connection's last request */
};

enum resp_state {
	RESP_HEAD,
	RESP_BODY, /* Content-Length */
	RESP_CHUNK_LINE,
	RESP_CHUNK_DATA,
	RESP_CHUNK_END,
	RESP_TRAILERS,
	RESP_UNTIL_CLOSE,
	RESP_CLOSED,
};

enum framing {
	FRAME_NONE,
	FRAME_LENGTH,
	FRAME_CHUNKED,
	FRAME_CLOSE,
};

struct pending {
	bool head;   /* a HEAD request: the response has no body */
	bool http11; /* the client reads chunked bodies */
	bool close;  /* the connection ends after the response */
};

struct sidecar_line {
	size_t name, name_len, value, value_len; /* offsets into the sidecar secret */
};

struct netns_http_flow {
	struct netns_http_flow_options o;
	size_t n_surrogates;
	struct matcher surrogates; /* each surrogate */
	struct matcher encoded;	   /* their base64 forms */
	uint8_t *encoded_text;
	struct broker_secret **values; /* by surrogate, once resolved */
	size_t n_values;
	/* By surrogate: the values bound to the host that were not resolved on the flow, asked for
	 * before the first response head, only to be turned back in responses (never sent). */
	struct broker_secret **bound;
	size_t n_bound;
	bool bound_asked;

	bool sidecar_asked;
	struct broker_secret *sidecar; /* NULL: none */
	struct sidecar_line side[SIDECAR_LINES_MAX];
	size_t n_side;
	char *stars; /* what a sidecar value turns into in responses */

	struct pending pending[PENDING_MAX];
	size_t pending_first, n_pending;

	enum req_state req;
	struct netns_buf req_acc, req_hold;
	/* The end of the last Content-Length body, when it could begin a surrogate that the next
	 * request line would complete. */
	struct netns_buf req_tail;
	uint64_t req_left;
	bool req_close;

	enum resp_state resp;
	struct netns_buf resp_acc, resp_hold;
	uint64_t resp_left;
	enum framing resp_out; /* of the current response's body, towards the sandbox */
	bool resp_close;
	bool resp_sniff;       /* the body's first bytes are still to be judged (sniff_body()) */
	uint8_t resp_first[4]; /* ... and those seen so far */
	size_t resp_first_len;
	struct matcher values_m; /* real values, to turn back into surrogates */
	size_t values_m_for;	 /* n_values + n_bound + n_side when it was built */
	bool values_m_sent;	 /* ... and it holds a value that went upstream on this flow */
	uint8_t *value_forms;	 /* the base64 forms of the real values (wiped) */
	size_t value_forms_size;

	struct netns_buf work; /* Basic credentials being swapped */
	int error;
};

/* Writes the characters of the base64 encoding of p (n bytes) that only p's bits decide when p
 * starts k bytes (0-2) past a multiple of three in the encoded text, in the standard (*std) and
 * the URL (*url) alphabets, at *text; returns how many there are (each). in and enc are room for
 * n + 2 bytes and their encoding. */
static size_t b64_form(const uint8_t *p, size_t n, size_t k, uint8_t *in, char *enc, uint8_t **std,
		       uint8_t **url, uint8_t **text)
{
	size_t first = (8 * k + 5) / 6, end = 8 * (k + n) / 6, m = end > first ? end - first : 0;

	memset(in, 0, k);
	memcpy(in + k, p, n);
	(void)b64_encode(in, k + n, enc);
	*std = *text;
	*url = *std + m;
	memcpy(*std, enc + first, m);
	for (size_t i = 0; i < m; i++)
		(*url)[i] = (*std)[i] == '+' ? '-' : (*std)[i] == '/' ? '_' : (*std)[i];
	*text = *url + m;
	return m;
}

/* The base64 forms of a surrogate s (len bytes) in any longer text: at each of the three
 * alignments, the characters that only s's bits decide, in the standard and the URL alphabets.
 * Appends them to pats, their text at *text; in and enc are room for len + 2 bytes and their
 * encoding. */
static void add_encoded_forms(const char *s, size_t len, size_t owner, uint8_t *in, char *enc,
			      struct pattern *pats, size_t *n, uint8_t **text)
{
	for (size_t k = 0; k < 3; k++) {
		uint8_t *std, *url;
		size_t m = b64_form((const uint8_t *)s, len, k, in, enc, &std, &url, text);

		if (m < WINDOW_MAX)
			continue;
		pats[(*n)++] = (struct pattern){.bytes = std, .len = m, .owner = owner};
		if (memcmp(std, url, m) != 0)
			pats[(*n)++] = (struct pattern){.bytes = url, .len = m, .owner = owner};
	}
}

static int build_surrogate_matchers(struct netns_http_flow *f)
{
	_cleanup_free_ struct pattern *raw = NULL, *enc = NULL;
	_cleanup_free_ uint8_t *in = NULL;
	_cleanup_free_ char *in_enc = NULL;
	size_t n_raw = 0, n_enc = 0, text = 0, longest = 0;
	uint8_t *t;
	int r;

	for (size_t i = 0; i < f->n_surrogates; i++)
		longest = MAX(longest, strlen(f->o.surrogates[i]));
	text = 6 * f->n_surrogates * ((longest + 2) / 3 * 4 + 4);
	raw = calloc(MAX(f->n_surrogates, (size_t)1), sizeof(*raw));
	enc = calloc(MAX(6 * f->n_surrogates, (size_t)1), sizeof(*enc));
	in = malloc(longest + 2);
	in_enc = malloc((longest + 2) / 3 * 4 + 4);
	f->encoded_text = t = malloc(MAX(text, (size_t)1));
	if (!raw || !enc || !in || !in_enc || !t)
		return -ENOMEM;
	for (size_t i = 0; i < f->n_surrogates; i++) {
		const char *s = f->o.surrogates[i];
		size_t len = strlen(s);

		if (len == 0)
			continue;
		raw[n_raw++] = (struct pattern){.bytes = (const uint8_t *)s,
						.len = len,
						.sub = (const uint8_t *)s,
						.sub_len = len,
						.owner = i};
		add_encoded_forms(s, len, i, in, in_enc, enc, &n_enc, &t);
	}
	r = matcher_init(&f->surrogates, TAKE_PTR(raw), n_raw);
	if (r < 0)
		return r;
	return matcher_init(&f->encoded, TAKE_PTR(enc), n_enc);
}

int netns_http_flow_new(const struct netns_http_flow_options *o, struct netns_http_flow **ret)
{
	_cleanup_(netns_http_flow_freep) struct netns_http_flow *f = NULL;
	int r;

	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->o = *o;
	while (o->surrogates && o->surrogates[f->n_surrogates])
		f->n_surrogates++;
	f->values = calloc(MAX(f->n_surrogates, (size_t)1), sizeof(*f->values));
	f->bound = calloc(MAX(f->n_surrogates, (size_t)1), sizeof(*f->bound));
	if (!f->values || !f->bound)
		return -ENOMEM;
	r = build_surrogate_matchers(f);
	if (r < 0)
		return r;
	r = matcher_init(&f->values_m, NULL, 0);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(f);
	return 0;
}

struct netns_http_flow *netns_http_flow_free(struct netns_http_flow *f)
{
	if (!f)
		return NULL;
	for (size_t i = 0; i < f->n_surrogates; i++) {
		f->values[i] = broker_secret_free(f->values[i]);
		if (f->bound)
			f->bound[i] = broker_secret_free(f->bound[i]);
	}
	free(f->values);
	free(f->bound);
	f->sidecar = broker_secret_free(f->sidecar);
	free(f->stars);
	matcher_done(&f->surrogates);
	matcher_done(&f->encoded);
	matcher_done(&f->values_m);
	wipe_free(f->value_forms, f->value_forms_size);
	free(f->encoded_text);
	netns_buf_done(&f->req_acc);
	netns_buf_done(&f->req_hold);
	netns_buf_done(&f->req_tail);
	netns_buf_done(&f->resp_acc);
	netns_buf_done(&f->resp_hold);
	netns_buf_done(&f->work);
	free(f);
	return NULL;
}

static int flow_fail(struct netns_http_flow *f, int r)
{
	f->error = r;
	return r;
}

/* ---- surrogates in requests ---- */

/* The real value behind surrogate idx, resolved once per flow. */
static int flow_value(struct netns_http_flow *f, size_t idx, const char *where,
		      const struct broker_secret **ret, struct al_error *err)
{
	struct broker_secret *s = NULL;
	int r;

	if (!f->values[idx]) {
		if (!f->o.ops || !f->o.ops->resolve)
			return al_error_set(err, -EPERM, "A surrogate in the %s cannot be resolved",
					    where);
		if (err)
			*err = (struct al_error){0};
		r = f->o.ops->resolve(f->o.userdata, f->o.surrogates[idx], &s, err);
		if (r < 0) {
			if (err && err->code != r)
				return al_error_set(
				    err, r, "Resolving the surrogate in the %s failed", where);
			al_error_prefix(err, "%s", where);
			return r;
		}
		if (!s)
			return al_error_set(err, -EIO, "The broker sent no value for the %s",
					    where);
		f->values[idx] = s;
		f->n_values++;
	}
	*ret = f->values[idx];
	return 0;
}

static bool is_field_value(const struct broker_secret *v)
{
	for (size_t i = 0; i < v->len; i++)
		if (http_is_ctl((unsigned char)v->data[i]))
			return false;
	return true;
}

/* Writes p with every surrogate swapped for its real value; in_field: the values must be fit for
 * a header field. */
static int put_swapped(struct netns_http_flow *f, struct writer *w, const uint8_t *p, size_t n,
		       bool in_field, const char *where, struct al_error *err)
{
	const uint8_t *end = p + n, *q;
	const struct broker_secret *v = NULL;
	struct match mt;
	int r;

	while ((q = matcher_find(&f->surrogates, p, end, &mt))) {
		r = flow_value(f, mt.pt->owner, where, &v, err);
		if (r < 0)
			return r;
		if (in_field && !is_field_value(v))
			return al_error_set(
			    err, -EINVAL,
			    "The value behind the surrogate in the %s holds a control "
			    "character",
			    where);
		put(w, p, (size_t)(q - p));
		put(w, v->data, v->len);
		if (f->o.ops && f->o.ops->swapped)
			f->o.ops->swapped(f->o.userdata, f->o.surrogates[mt.pt->owner], where);
		p = q + mt.len;
	}
	put(w, p, (size_t)(end - p));
	return 0;
}

/* Refuses a surrogate hidden by percent-encoding (once or several times) in p. */
static int refuse_percent_encoded(const struct netns_http_flow *f, const char *p, size_t n,
				  const char *where, struct al_error *err)
{
	struct match mt;
	size_t size = MAX(n, (size_t)1);
	uint8_t *d;
	int r = 0;

	d = malloc(size);
	if (!d)
		return -ENOMEM;
	memcpy(d, p, n);
	for (unsigned i = 0; i < PERCENT_ROUNDS && memchr(d, '%', n); i++) {
		size_t m = percent_decode(d, n);

		if (m == n)
			break;
		n = m;
		if (matcher_find(&f->surrogates, d, d + n, &mt) ||
		    matcher_find(&f->encoded, d, d + n, &mt)) {
			r = al_error_set(err, -EPERM,
					 "A percent-encoded surrogate in the %s is refused", where);
			break;
		}
	}
	explicit_bzero(d, size);
	free(d);
	return r;
}

/* Refuses a surrogate in p: as it is (unless raw_ok, where it is swapped), base64-encoded, or
 * percent-encoded. */
static int refuse_surrogates(const struct netns_http_flow *f, const char *p, size_t n, bool raw_ok,
			     const char *where, struct al_error *err)
{
	const uint8_t *s = (const uint8_t *)p;
	struct match mt;

	if (!raw_ok && matcher_find(&f->surrogates, s, s + n, &mt))
		return al_error_set(err, -EPERM, "A surrogate in the %s is refused", where);
	if (matcher_find(&f->encoded, s, s + n, &mt))
		return al_error_set(err, -EPERM, "A base64-encoded surrogate in the %s is refused",
				    where);
	if (memchr(p, '%', n))
		return refuse_percent_encoded(f, p, n, where, err);
	return 0;
}

/* Authorization: Basic <base64 of user:password>: a surrogate in the decoded credentials is
 * swapped, and the result encoded again. Returns 1 when it wrote the value, 0 when the value is
 * not such credentials with a surrogate in them (the caller writes it). */
static int put_basic(struct netns_http_flow *f, struct writer *w, const struct netns_http_header *h,
		     struct al_error *err)
{
	struct writer ww = {.b = &f->work, .max = HEAD_OUT_MAX};
	struct match mt;
	size_t i, dn = 0;
	uint8_t *d;
	int r = 0;

	if (h->value_len < 6 || !ascii_eq(h->value, 5, "basic") || h->value[5] != ' ')
		return 0;
	i = http_span(h->value, h->value_len, 6, http_is_ows);
	d = malloc(h->value_len / 4 * 3 + 3);
	if (!d)
		return -ENOMEM;
	if (b64_decode(h->value + i, h->value_len - i, d, &dn) < 0 ||
	    !matcher_find(&f->surrogates, d, d + dn, &mt))
		goto out;
	r = put_swapped(f, &ww, d, dn, false, "header authorization (basic)", err);
	if (r >= 0 && ww.r < 0)
		r = al_error_set(err, ww.r, "Basic credentials too long");
	if (r >= 0) {
		put(w, h->value, i);
		put_b64(w, netns_buf_head(&f->work), netns_buf_len(&f->work));
		r = 1;
	}
	buf_clear(&f->work);
out:
	explicit_bzero(d, dn);
	free(d);
	return r;
}

/* ---- request heads ---- */

/* Removed from every request: hop-by-hop, or a way around the inspection (h2c). */
static bool is_hop_header(const char *name, size_t n)
{
	return ascii_eq(name, n, "upgrade") || ascii_eq(name, n, "http2-settings") ||
	       ascii_eq(name, n, "proxy-authorization") || ascii_eq(name, n, "proxy-connection") ||
	       ascii_eq(name, n, "te");
}

static bool is_sidecar_name(const struct netns_http_flow *f, const char *name, size_t n)
{
	for (size_t i = 0; i < f->n_side; i++)
		if (ascii_eq_n(name, n, f->sidecar->data + f->side[i].name, f->side[i].name_len))
			return true;
	return false;
}

/* A Connection option that is not passed on: one naming a removed header, a framing header (a
 * hop-by-hop Content-Length would let a later hop frame the body differently), or a sidecar
 * header; and keep-alive in HTTP/1.0, whose requests all go upstream as the last. */
static bool is_dropped_option(const struct netns_http_flow *f, const char *s, size_t n, bool http10)
{
	return is_hop_header(s, n) || ascii_eq(s, n, "content-length") ||
	       ascii_eq(s, n, "transfer-encoding") || ascii_eq(s, n, "host") ||
	       is_sidecar_name(f, s, n) || (http10 && ascii_eq(s, n, "keep-alive"));
}

static void put_connection(const struct netns_http_flow *f, struct writer *w,
			   const struct netns_http_header *h, bool http10)
{
	const char *p = h->value, *end = p + h->value_len;
	bool any = false;

	while (p <= end) {
		const char *comma = memchr(p, ',', (size_t)(end - p)), *e = comma ? comma : end;
		const char *s = p;

		while (s < e && http_is_ows((unsigned char)*s))
			s++;
		while (e > s && http_is_ows((unsigned char)e[-1]))
			e--;
		if (e > s && !is_dropped_option(f, s, (size_t)(e - s), http10)) {
			put_str(w, any ? ", " : "Connection: ");
			put(w, s, (size_t)(e - s));
			any = true;
		}
		if (!comma)
			break;
		p = comma + 1;
	}
	if (any)
		put_str(w, "\r\n");
}

static int put_request_field(struct netns_http_flow *f, struct writer *w,
			     const struct netns_http_request *req,
			     const struct netns_http_header *h, struct al_error *err)
{
	char where[WHERE_MAX];
	int r;

	if (is_hop_header(h->name, h->name_len) || is_sidecar_name(f, h->name, h->name_len))
		return 0;
	/* A real value echoed back compressed could not be turned back into its surrogate (and a
	 * response that comes compressed all the same is refused: is_encoded()). */
	if (ascii_eq(h->name, h->name_len, "accept-encoding")) {
		put_str(w, "Accept-Encoding: identity\r\n");
		return 0;
	}
	r = refuse_surrogates(f, h->name, h->name_len, false, "request header name", err);
	if (r < 0)
		return r;
	where_header(h->name, h->name_len, where);
	if (ascii_eq(h->name, h->name_len, "connection")) {
		/* Options are header names: a surrogate in one is refused, not swapped. */
		r = refuse_surrogates(f, h->value, h->value_len, false, where, err);
		if (r >= 0)
			put_connection(f, w, h, req->minor_version == 0);
		return r;
	}
	put(w, h->name, h->name_len);
	put_str(w, ": ");
	r = 0;
	if (ascii_eq(h->name, h->name_len, "authorization"))
		r = put_basic(f, w, h, err);
	if (r == 0) {
		r = refuse_surrogates(f, h->value, h->value_len, true, where, err);
		if (r >= 0)
			r = put_swapped(f, w, (const uint8_t *)h->value, h->value_len, true, where,
					err);
	}
	if (r < 0)
		return r;
	put_str(w, "\r\n");
	return 0;
}

/* Whether an authority (host[:port], as http.c accepted it) names the flow's host: the same name
 * in any case, a trailing dot allowed, and a port, if one is written, the connection's. */
static bool authority_is_flow(const struct netns_http_flow *f, const char *a, size_t n)
{
	const char *want = f->o.host, *rest;
	size_t host_len, want_len = strlen(want);
	const char *host = a;
	unsigned port = 0;

	if (n > 0 && a[0] == '[') {
		const char *close = memchr(a, ']', n);

		if (!close)
			return false;
		host = a + 1;
		host_len = (size_t)(close - host);
		rest = close + 1;
		if (want_len >= 2 && want[0] == '[' && want[want_len - 1] == ']')
			want++, want_len -= 2;
	} else {
		const char *colon = memchr(a, ':', n);

		host_len = colon ? (size_t)(colon - a) : n;
		rest = a + host_len;
		if (host_len > 1 && host[host_len - 1] == '.')
			host_len--;
	}
	if (rest < a + n) {
		size_t digits = (size_t)(a + n - rest) - 1;

		if (*rest != ':' || digits == 0 || digits > 5 ||
		    http_span(rest + 1, digits, 0, http_is_digit) != digits)
			return false;
		for (size_t i = 0; i < digits; i++)
			port = port * 10 + (unsigned)(rest[1 + i] - '0');
		if (port != f->o.port)
			return false;
	}
	return ascii_eq_n(host, host_len, want, want_len);
}

static int check_request(const struct netns_http_flow *f, const struct netns_http_request *req,
			 struct al_error *err)
{
	const char *t = req->target;
	size_t n = req->target_len;
	int r;

	if (req->connect)
		return al_error_set(err, -EBADMSG, "CONNECT inside an inspected connection");
	if (req->host && !authority_is_flow(f, req->host, req->host_len))
		return al_error_set(err, -EPROTO, "The Host header names another host than %s:%u",
				    f->o.host, f->o.port);
	/* http.c let through only a path, "*", or an http(s) URI as the target. */
	if (t[0] != '/' && !(n == 1 && t[0] == '*')) {
		const char *a = memmem(t, n, "://", 3);
		size_t an = 0;

		if (!a)
			return al_error_set(err, -EBADMSG, "The request target is not a URI");
		a += 3;
		while (a + an < t + n && a[an] != '/' && a[an] != '?')
			an++;
		if (!authority_is_flow(f, a, an))
			return al_error_set(err, -EPROTO,
					    "The request target names another host than %s:%u",
					    f->o.host, f->o.port);
	}
	r = refuse_surrogates(f, req->method, req->method_len, false, "request method", err);
	if (r < 0)
		return r;
	return refuse_surrogates(f, t, n, false, "request target", err);
}

/* The sidecar's "Name: value\r\n" lines: names that are tokens and frame nothing, values without
 * control characters. The message names the line, never its value. */
static int parse_sidecar(struct netns_http_flow *f, const struct broker_secret *s,
			 struct al_error *err)
{
	const char *p = s->data;
	size_t pos = 0, max_value = 0;

	while (pos < s->len) {
		const char *crlf = memmem(p + pos, s->len - pos, "\r\n", 2);
		size_t end = crlf ? (size_t)(crlf - p) : s->len, colon, v, e;

		colon = http_span(p, end, pos, http_is_tchar);
		if (!crlf || f->n_side == SIDECAR_LINES_MAX || colon == pos || colon == end ||
		    p[colon] != ':')
			return al_error_set(err, -EINVAL, "Sidecar header %zu is malformed",
					    f->n_side + 1);
		v = http_span(p, end, colon + 1, http_is_ows);
		for (e = end; e > v && http_is_ows((unsigned char)p[e - 1]); e--)
			;
		for (size_t i = v; i < e; i++)
			if (http_is_ctl((unsigned char)p[i]))
				return al_error_set(err, -EINVAL,
						    "Sidecar header %zu holds a control character",
						    f->n_side + 1);
		if (ascii_eq(p + pos, colon - pos, "host") ||
		    ascii_eq(p + pos, colon - pos, "content-length") ||
		    ascii_eq(p + pos, colon - pos, "transfer-encoding") ||
		    ascii_eq(p + pos, colon - pos, "connection") ||
		    is_hop_header(p + pos, colon - pos))
			return al_error_set(err, -EINVAL, "Sidecar header %zu may not be %.*s",
					    f->n_side + 1, (int)(colon - pos), p + pos);
		f->side[f->n_side++] = (struct sidecar_line){
		    .name = pos, .name_len = colon - pos, .value = v, .value_len = e - v};
		max_value = MAX(max_value, e - v);
		pos = end + 2;
	}
	f->stars = malloc(max_value + 1);
	if (!f->stars)
		return -ENOMEM;
	memset(f->stars, '*', max_value);
	return 0;
}

/* Asks for the sidecar headers, once, before the first request is passed on. */
static int flow_sidecar(struct netns_http_flow *f, struct al_error *err)
{
	struct broker_secret *s = NULL;
	int r;

	if (f->sidecar_asked)
		return 0;
	f->sidecar_asked = true;
	if (!f->o.ops || !f->o.ops->sidecar)
		return 0;
	if (err)
		*err = (struct al_error){0};
	r = f->o.ops->sidecar(f->o.userdata, &s, err);
	if (r < 0) {
		if (err && err->code != r)
			return al_error_set(err, r, "Asking for the sidecar headers failed");
		return r;
	}
	if (!s)
		return 0;
	f->sidecar = s;
	r = parse_sidecar(f, s, err);
	if (r < 0) {
		f->n_side = 0;
		f->sidecar = broker_secret_free(f->sidecar);
	}
	return r;
}

/* An absolute-form target (what a client sends to a proxy: "http://host:port/path?q"), which
 * check_request() found to name the flow's host, as its authority and its origin-form: a request
 * to an origin carries only the latter (RFC 9112 3.2.1), and its Host is the former (3.2.2).
 * False for a target already in origin-form (or "*"). */
static bool split_absolute_form(const struct netns_http_request *req, const char **authority,
				size_t *authority_len, const char **origin, size_t *origin_len)
{
	const char *t = req->target, *a = memmem(t, req->target_len, "://", 3);
	size_t an = 0;

	if (t[0] == '/' || !a)
		return false;
	a += 3;
	while (a + an < t + req->target_len && a[an] != '/' && a[an] != '?')
		an++;
	*authority = a;
	*authority_len = an;
	*origin = a + an;
	*origin_len = (size_t)(t + req->target_len - *origin);
	return true;
}

static int put_request_head(struct netns_http_flow *f, const struct netns_http_request *req,
			    struct netns_buf *out, struct al_error *err)
{
	struct writer w = {.b = out, .max = netns_buf_len(out) + HEAD_OUT_MAX};
	char version[sizeof(" HTTP/1.x\r\n")];
	const char *authority, *origin;
	size_t authority_len, origin_len;
	bool absolute = split_absolute_form(req, &authority, &authority_len, &origin, &origin_len);
	int r;

	put(&w, req->method, req->method_len);
	put_str(&w, " ");
	if (!absolute)
		put(&w, req->target, req->target_len);
	else if (origin_len == 0 || origin[0] == '?')
		put_str(&w, "/"); /* an empty path is "/" (and a query follows it) */
	if (absolute)
		put(&w, origin, origin_len);
	(void)snprintf(version, sizeof(version), " HTTP/1.%d\r\n", req->minor_version);
	put_str(&w, version);
	if (absolute) {
		put_str(&w, "Host: ");
		put(&w, authority, authority_len);
		put_str(&w, "\r\n");
	}
	for (size_t i = 0; i < req->n_headers; i++) {
		if (absolute && ascii_eq(req->headers[i].name, req->headers[i].name_len, "host"))
			continue;
		r = put_request_field(f, &w, req, &req->headers[i], err);
		if (r < 0)
			return r;
	}
	if (f->sidecar)
		put(&w, f->sidecar->data, f->sidecar->len);
	put_str(&w, "\r\n");
	if (w.r == -EMSGSIZE)
		return al_error_set(
		    err, -EMSGSIZE,
		    "The request head is longer than %d bytes with values swapped in",
		    HEAD_OUT_MAX);
	return w.r;
}

/* Whether the end of the last body and the request line that follows make a surrogate: the
 * upstream would read them as two messages, but no whole surrogate may go to it. */
static int check_body_tail(struct netns_http_flow *f, const struct netns_http_request *req,
			   struct al_error *err)
{
	struct match mt;
	const uint8_t *p;
	size_t n = netns_buf_len(&f->req_tail);
	int r;

	if (n == 0)
		return 0;
	/* The request line starts at method: method, a space, the target. */
	r = netns_buf_append(&f->req_tail, req->method,
			     MIN(req->method_len + 1 + req->target_len, f->surrogates.max_len),
			     SIZE_MAX);
	if (r < 0)
		return r;
	p = netns_buf_head(&f->req_tail);
	r = matcher_find(&f->surrogates, p, p + netns_buf_len(&f->req_tail), &mt) ? -EPERM : 0;
	buf_clear(&f->req_tail);
	if (r < 0)
		return al_error_set(err, r, "A surrogate in the request body is refused");
	return 0;
}

/* Before the last step of a Content-Length body: keeps its end (what hold keeps back, then data)
 * where it could begin a surrogate, for check_body_tail(). */
static int keep_body_tail(struct netns_http_flow *f, const uint8_t *data, size_t n)
{
	size_t keep = f->surrogates.max_len > 0 ? f->surrogates.max_len - 1 : 0;
	size_t from_data = MIN(n, keep),
	       from_hold = MIN(keep - from_data, netns_buf_len(&f->req_hold));
	int r;

	buf_clear(&f->req_tail);
	if (from_data + from_hold == 0)
		return 0;
	r = from_hold == 0
		? 0
		: netns_buf_append(&f->req_tail, f->req_hold.data + f->req_hold.end - from_hold,
				   from_hold, SIZE_MAX);
	if (r >= 0)
		r = netns_buf_append(&f->req_tail, data + n - from_data, from_data, SIZE_MAX);
	if (r < 0)
		return r;
	buf_drop(&f->req_tail, matcher_partial(&f->surrogates, netns_buf_head(&f->req_tail),
					       netns_buf_len(&f->req_tail)));
	return 0;
}

static void request_done(struct netns_http_flow *f)
{
	f->req = f->req_close ? REQ_CLOSED : REQ_HEAD;
}

/* Checks, rewrites and passes on a parsed request head, and sets up its body. */
static int request_head_done(struct netns_http_flow *f, const struct netns_http_request *req,
			     struct netns_buf *out, struct al_error *err)
{
	size_t start = netns_buf_len(out);
	int r;

	r = check_request(f, req, err);
	if (r < 0)
		return r;
	r = check_body_tail(f, req, err);
	if (r < 0)
		return r;
	if (f->n_pending == PENDING_MAX)
		return al_error_set(err, -EBADMSG, "More than %d requests wait for their responses",
				    PENDING_MAX);
	r = flow_sidecar(f, err);
	if (r < 0)
		return r;
	r = put_request_head(f, req, out, err);
	if (r < 0) {
		buf_truncate(out, start);
		return r;
	}
	f->req_close = !req->keep_alive || req->minor_version == 0;
	f->pending[(f->pending_first + f->n_pending++) % PENDING_MAX] = (struct pending){
	    .head = req->method_len == 4 && memcmp(req->method, "HEAD", 4) == 0,
	    .http11 = req->minor_version == 1,
	    .close = f->req_close,
	};
	if (req->body == NETNS_HTTP_BODY_CHUNKED)
		f->req = REQ_CHUNK_LINE;
	else if (req->body == NETNS_HTTP_BODY_LENGTH && req->content_length > 0) {
		f->req = REQ_BODY;
		f->req_left = req->content_length;
	} else
		request_done(f);
	return 0;
}

static ssize_t request_head(struct netns_http_flow *f, const uint8_t *buf, size_t len,
			    struct netns_buf *out, struct al_error *err)
{
	struct netns_http_request req;
	struct unit u;
	int r;

	r = unit_gather(&f->req_acc, buf, len, NETNS_HTTP_HEAD_MAX, &u);
	if (r < 0)
		return r;
	if (!head_ready(&u, NETNS_HTTP_HEAD_MAX))
		return unit_wait(&f->req_acc, &u);
	r = netns_http_parse_request((const char *)u.p, u.n, &req, err);
	if (r == -EAGAIN)
		return unit_wait(&f->req_acc, &u);
	if (r < 0)
		return r;
	r = request_head_done(f, &req, out, err);
	if (r < 0)
		return r;
	return (ssize_t)unit_take(&f->req_acc, &u, req.head_len);
}

/* ---- bodies, both ways ---- */

struct hit {
	size_t pos;
	struct match mt;
};

/* Writes p[at..end) with the hits replaced, as one chunk when chunked. */
static int put_body_piece(const uint8_t *p, size_t at, size_t end, const struct hit *hits,
			  size_t n_hits, bool chunked, struct netns_buf *out, struct al_error *err)
{
	struct writer w = {.b = out, .max = OUT_LIMIT};
	size_t total = end - at;
	char line[32];

	for (size_t i = 0; i < n_hits; i++)
		total = total - hits[i].mt.len + put_sub(NULL, &hits[i].mt, p + hits[i].pos);
	if (total == 0)
		return 0; /* an empty chunk would end the body */
	if (chunked) {
		(void)snprintf(line, sizeof(line), "%zx\r\n", total);
		put_str(&w, line);
	}
	for (size_t i = 0; i < n_hits; i++) {
		put(&w, p + at, hits[i].pos - at);
		(void)put_sub(&w, &hits[i].mt, p + hits[i].pos);
		at = hits[i].pos + hits[i].mt.len;
	}
	put(&w, p + at, end - at);
	if (chunked)
		put_str(&w, "\r\n");
	if (w.r == -EMSGSIZE)
		return al_error_set(err, -EMSGSIZE, "The output buffer passed its limit");
	return w.r;
}

/* Passes on p[0..n) up to where it must be held back (limit, or the end of a match that begins
 * before it), replacing matches, or refusing them when refuse names where they are. Returns the
 * offset up to which it passed. */
static ssize_t put_body(const struct matcher *m, const char *refuse, const uint8_t *p, size_t n,
			size_t limit, bool final, bool chunked, struct netns_buf *out,
			struct al_error *err)
{
	size_t at = 0;
	int r = 0;

	for (;;) {
		struct hit hits[HITS_MAX];
		const uint8_t *q = p + at, *hit;
		struct match mt;
		size_t n_hits = 0, end;

		while (n_hits < HITS_MAX && (hit = matcher_find(m, q, p + n, &mt)) &&
		       (size_t)(hit - p) < limit) {
			if (refuse)
				return al_error_set(err, -EPERM, "A surrogate in the %s is refused",
						    refuse);
			mt.text = NULL;
			mt.text_len = 0;
			r = grow_b64_match(m, q, p + n, !final, &hit, &mt);
			if (r == GROW_WAIT) {
				/* Held back with what follows, to be looked at again. */
				limit = (size_t)(hit - p);
				r = 0;
				break;
			}
			if (r < 0)
				break;
			hits[n_hits++] = (struct hit){.pos = (size_t)(hit - p), .mt = mt};
			q = hit + mt.len;
		}
		end = n_hits == HITS_MAX ? (size_t)(q - p) : MAX(limit, (size_t)(q - p));
		if (r >= 0)
			r = put_body_piece(p, at, end, hits, n_hits, chunked, out, err);
		for (size_t i = 0; i < n_hits; i++)
			match_done(&hits[i].mt);
		if (r < 0)
			return r;
		at = end;
		if (n_hits < HITS_MAX)
			return (ssize_t)at;
	}
}

/* Streams n bytes of a body: what hold kept back from earlier bytes and data are scanned as one,
 * and a tail that could begin a pattern is kept back again, unless final (the body's end). */
static int body_pass(struct netns_buf *hold, const struct matcher *m, const char *refuse,
		     const uint8_t *data, size_t n, bool final, bool chunked, struct netns_buf *out,
		     struct al_error *err)
{
	const uint8_t *p = data;
	size_t pn = n, limit;
	ssize_t at;
	int r;

	if (n == 0 && netns_buf_len(hold) == 0)
		return 0;
	if (netns_buf_len(hold) > 0) {
		r = netns_buf_append(hold, data, n, SIZE_MAX);
		if (r < 0)
			return r;
		p = netns_buf_head(hold);
		pn = netns_buf_len(hold);
	}
	limit = final ? pn : matcher_partial(m, p, pn);
	if (!final && m->has_b64) {
		/* A base64 run at the end is held back until its end is known (grow_b64_match()),
		 * unless it is too long to be encoded again. */
		size_t rs = pn;

		while (rs > 0 && pn - rs <= B64_RUN_MAX && is_b64_run_char(p[rs - 1]))
			rs--;
		if (pn - rs <= B64_RUN_MAX)
			limit = MIN(limit, rs);
	}
	at = put_body(m, refuse, p, pn, limit, final, chunked, out, err);
	if (at < 0)
		return (int)at;
	if (p == data)
		return netns_buf_append(hold, data + at, pn - (size_t)at, SIZE_MAX);
	buf_drop(hold, (size_t)at);
	return 0;
}

/* A CRLF (after chunk data, or as empty trailers) at the start of the unit: 1, 0 when more bytes
 * are needed, -EBADMSG when something else is there. */
static int unit_crlf(const struct unit *u)
{
	if (u->n >= 1 && u->p[0] != '\r')
		return -EBADMSG;
	if (u->n < 2)
		return 0;
	return u->p[1] == '\n' ? 1 : -EBADMSG;
}

/* ---- request bodies ---- */

static ssize_t request_data(struct netns_http_flow *f, const uint8_t *buf, size_t len,
			    struct netns_buf *out, struct al_error *err)
{
	bool chunked = f->req == REQ_CHUNK_DATA;
	size_t n = (size_t)MIN((uint64_t)len, f->req_left);
	int r;

	n = MIN(n, matcher_step(&f->surrogates));
	if (!chunked && n == f->req_left) {
		r = keep_body_tail(f, buf, n);
		if (r < 0)
			return r;
	}
	r = body_pass(&f->req_hold, &f->surrogates, "request body", buf, n,
		      !chunked && n == f->req_left, chunked, out, err);
	if (r < 0)
		return r;
	f->req_left -= n;
	if (f->req_left == 0) {
		if (chunked)
			f->req = REQ_CHUNK_END;
		else
			request_done(f);
	}
	return (ssize_t)n;
}

static ssize_t request_chunk_line(struct netns_http_flow *f, const uint8_t *buf, size_t len,
				  struct netns_buf *out, struct al_error *err)
{
	uint64_t size;
	size_t line_len;
	struct unit u;
	int r;

	r = unit_gather(&f->req_acc, buf, len, CHUNK_LINE_MAX, &u);
	if (r < 0)
		return r;
	r = netns_http_parse_chunk_size((const char *)u.p, u.n, &size, &line_len);
	if (r == -EAGAIN)
		return unit_wait(&f->req_acc, &u);
	if (r < 0)
		return al_error_set(err, -EBADMSG, "Malformed chunk-size line in the request body");
	r = refuse_surrogates(f, (const char *)u.p, line_len - 2, false, "request chunk extension",
			      err);
	if (r < 0)
		return r;
	if (size == 0) {
		r = body_pass(&f->req_hold, &f->surrogates, "request body", NULL, 0, true, true,
			      out, err);
		if (r < 0)
			return r;
		f->req = REQ_TRAILERS;
	} else {
		f->req_left = size;
		f->req = REQ_CHUNK_DATA;
	}
	return (ssize_t)unit_take(&f->req_acc, &u, line_len);
}

/* The CRLF after chunk data, and the end of the body: refused unless its trailer section is
 * empty. */
static ssize_t request_crlf(struct netns_http_flow *f, const uint8_t *buf, size_t len,
			    struct netns_buf *out, struct al_error *err)
{
	bool trailers = f->req == REQ_TRAILERS;
	struct unit u;
	int r;

	r = unit_gather(&f->req_acc, buf, len, 2, &u);
	if (r < 0)
		return r;
	r = unit_crlf(&u);
	if (r == 0)
		return unit_wait(&f->req_acc, &u);
	if (r < 0)
		return al_error_set(err, -EBADMSG, "%s",
				    trailers ? "Request trailers are refused"
					     : "Chunk data in the request body is not followed by "
					       "CRLF");
	if (trailers) {
		r = netns_buf_append(out, "0\r\n\r\n", 5, OUT_LIMIT);
		if (r < 0)
			return r;
		request_done(f);
	} else
		f->req = REQ_CHUNK_LINE;
	return (ssize_t)unit_take(&f->req_acc, &u, 2);
}

static ssize_t request_step(struct netns_http_flow *f, const uint8_t *buf, size_t len,
			    struct netns_buf *out, struct al_error *err)
{
	switch (f->req) {
	case REQ_HEAD:
		return request_head(f, buf, len, out, err);
	case REQ_BODY:
	case REQ_CHUNK_DATA:
		return request_data(f, buf, len, out, err);
	case REQ_CHUNK_LINE:
		return request_chunk_line(f, buf, len, out, err);
	case REQ_CHUNK_END:
	case REQ_TRAILERS:
		return request_crlf(f, buf, len, out, err);
	case REQ_CLOSED:
		break;
	}
	return (ssize_t)len; /* after the connection's last request: dropped */
}

ssize_t netns_http_flow_request(struct netns_http_flow *f, const uint8_t *buf, size_t len,
				struct netns_buf *out, struct al_error *err)
{
	size_t entry = netns_buf_len(out), done = 0;
	ssize_t n;

	if (f->error < 0)
		return al_error_set(err, f->error, "The connection was refused earlier");
	while (done < len && netns_buf_len(out) <= NETNS_HTTP_FLOW_OUT_MAX) {
		n = request_step(f, buf + done, len - done, out, err);
		if (n < 0) {
			/* Nothing of a refused feed goes upstream. */
			buf_truncate(out, entry);
			return flow_fail(f, (int)n);
		}
		done += (size_t)n;
	}
	return (ssize_t)done;
}

/* ---- response heads ---- */

struct response_head {
	int minor, status;
	const char *reason;
	size_t reason_len;
	struct netns_http_header headers[NETNS_HTTP_HEADERS_MAX];
	size_t n_headers;
	size_t head_len;
	bool has_length, has_te, chunked;
	bool te_coded; /* a transfer coding other than chunked (compression) */
	uint64_t length;
	bool close, keep_alive;
};

/* The line at buf[*pos]: lines end in CRLF, and hold no other control character but HTAB. */
static int head_line(const char *buf, size_t len, size_t *pos, size_t *ret_len,
		     struct al_error *err)
{
	for (size_t i = *pos; i < len; i++) {
		unsigned char c = (unsigned char)buf[i];

		if (c == '\r') {
			if (i + 1 == len)
				break;
			if (buf[i + 1] != '\n')
				return al_error_set(err, -EBADMSG, "Bare CR in a response head");
			*ret_len = i - *pos;
			*pos = i + 2;
			return 0;
		}
		if (c == '\n')
			return al_error_set(err, -EBADMSG, "Bare LF in a response head");
		if (http_is_ctl(c))
			return al_error_set(err, -EBADMSG,
					    "Control character 0x%02x in a response head", c);
	}
	return -EAGAIN;
}

/* status-line = HTTP-version SP status-code SP [ reason-phrase ] (RFC 9112 4); the SP before an
 * empty reason may be missing. */
static int parse_status_line(const char *l, size_t n, struct response_head *rh,
			     struct al_error *err)
{
	if (n < 12 || memcmp(l, "HTTP/1.", 7) != 0 || (l[7] != '0' && l[7] != '1') || l[8] != ' ' ||
	    !http_is_digit((unsigned char)l[9]) || l[9] == '0' ||
	    !http_is_digit((unsigned char)l[10]) || !http_is_digit((unsigned char)l[11]) ||
	    (n > 12 && l[12] != ' '))
		return al_error_set(err, -EBADMSG,
				    "The status line is not HTTP/1.x, a status code and a reason");
	rh->minor = l[7] - '0';
	rh->status = (l[9] - '0') * 100 + (l[10] - '0') * 10 + (l[11] - '0');
	rh->reason = n > 12 ? l + 13 : l + 12;
	rh->reason_len = n > 12 ? n - 13 : 0;
	return 0;
}

/* field-line = field-name ":" OWS field-value OWS: no obs-fold, no whitespace before the colon. */
static int parse_field_line(const char *l, size_t n, struct netns_http_header *h,
			    struct al_error *err)
{
	size_t colon = http_span(l, n, 0, http_is_tchar), v, e;

	if (colon == 0 || colon == n || l[colon] != ':')
		return al_error_set(err, -EBADMSG,
				    "A response header is not a name, a colon and a value");
	v = http_span(l, n, colon + 1, http_is_ows);
	for (e = n; e > v && http_is_ows((unsigned char)l[e - 1]); e--)
		;
	*h = (struct netns_http_header){
	    .name = l, .name_len = colon, .value = l + v, .value_len = e - v};
	return 0;
}

/* Field lines from buf[*pos] to the empty line. */
static int parse_fields(const char *buf, size_t len, size_t *pos, struct netns_http_header *h,
			size_t *n, struct al_error *err)
{
	size_t line_len;
	int r;

	for (;;) {
		const char *line = buf + *pos;

		r = head_line(buf, len, pos, &line_len, err);
		if (r < 0)
			return r;
		if (line_len == 0)
			return 0;
		if (*n == NETNS_HTTP_HEADERS_MAX)
			return al_error_set(err, -EMSGSIZE, "More than %d response headers",
					    NETNS_HTTP_HEADERS_MAX);
		r = parse_field_line(line, line_len, &h[*n], err);
		if (r < 0)
			return r;
		(*n)++;
	}
}

/* Each element of a comma-separated list, trimmed; refuses empty ones unless allow_empty. */
static int list_each(const struct netns_http_header *h, bool allow_empty,
		     int (*fn)(struct response_head *rh, const char *s, size_t n, bool last,
			       struct al_error *err),
		     struct response_head *rh, struct al_error *err)
{
	const char *p = h->value, *end = p + h->value_len;
	int r;

	for (;;) {
		const char *comma = memchr(p, ',', (size_t)(end - p)), *e = comma ? comma : end;
		const char *s = p;

		while (s < e && http_is_ows((unsigned char)*s))
			s++;
		while (e > s && http_is_ows((unsigned char)e[-1]))
			e--;
		if (e > s || !allow_empty) {
			r = fn(rh, s, (size_t)(e - s), !comma, err);
			if (r < 0)
				return r;
		}
		if (!comma)
			return 0;
		p = comma + 1;
	}
}

static int on_length(struct response_head *rh, const char *s, size_t n, bool last,
		     struct al_error *err)
{
	uint64_t v = 0;

	if (n == 0 || http_span(s, n, 0, http_is_digit) != n)
		return al_error_set(err, -EBADMSG, "Content-Length is not a decimal number");
	for (size_t i = 0; i < n; i++) {
		v = v * 10 + (uint64_t)(s[i] - '0');
		if (v > BODY_LENGTH_MAX)
			return al_error_set(err, -EBADMSG, "Content-Length is larger than 2^53-1");
	}
	if (rh->has_length && v != rh->length)
		return al_error_set(err, -EBADMSG, "Content-Length values differ");
	rh->has_length = true;
	rh->length = v;
	return 0;
}

static int on_coding(struct response_head *rh, const char *s, size_t n, bool last,
		     struct al_error *err)
{
	if (n == 0 || http_span(s, n, 0, http_is_tchar) != n)
		return al_error_set(err, -EBADMSG, "Transfer-Encoding is not a list of codings");
	if (ascii_eq(s, n, "chunked") && !last)
		return al_error_set(err, -EBADMSG, "Transfer-Encoding: chunked is not the last");
	rh->chunked = ascii_eq(s, n, "chunked");
	rh->te_coded |= !rh->chunked;
	return 0;
}

static int on_option(struct response_head *rh, const char *s, size_t n, bool last,
		     struct al_error *err)
{
	if (http_span(s, n, 0, http_is_tchar) != n)
		return al_error_set(err, -EBADMSG, "Connection is not a list of options");
	if (ascii_eq(s, n, "close"))
		rh->close = true;
	else if (ascii_eq(s, n, "keep-alive"))
		rh->keep_alive = true;
	return 0;
}

/* The framing fields (RFC 9112 6): what two parsers could read differently is refused. */
static int judge_response(struct response_head *rh, struct al_error *err)
{
	int r = 0;

	for (size_t i = 0; i < rh->n_headers && r >= 0; i++) {
		const struct netns_http_header *h = &rh->headers[i];

		if (ascii_eq(h->name, h->name_len, "content-length"))
			r = list_each(h, false, on_length, rh, err);
		else if (ascii_eq(h->name, h->name_len, "transfer-encoding")) {
			if (rh->has_te)
				return al_error_set(err, -EBADMSG,
						    "More than one Transfer-Encoding header");
			rh->has_te = true;
			r = list_each(h, false, on_coding, rh, err);
		} else if (ascii_eq(h->name, h->name_len, "connection"))
			r = list_each(h, true, on_option, rh, err);
	}
	if (r < 0)
		return r;
	if (rh->has_te && rh->has_length)
		return al_error_set(err, -EBADMSG,
				    "Both Transfer-Encoding and Content-Length in a response");
	if (rh->has_te && rh->minor == 0)
		return al_error_set(err, -EBADMSG, "Transfer-Encoding in an HTTP/1.0 response");
	rh->keep_alive = !rh->close && (rh->minor == 1 || rh->keep_alive);
	return 0;
}

static int parse_response_head(const char *buf, size_t len, struct response_head *rh,
			       struct al_error *err)
{
	size_t pos = 0, line_len;
	int r;

	*rh = (struct response_head){0};
	r = head_line(buf, len, &pos, &line_len, err);
	if (r >= 0)
		r = parse_status_line(buf, line_len, rh, err);
	if (r >= 0)
		r = parse_fields(buf, len, &pos, rh->headers, &rh->n_headers, err);
	if (r == -EAGAIN && len >= NETNS_HTTP_HEAD_MAX)
		return al_error_set(err, -EMSGSIZE, "The response head is longer than %d bytes",
				    NETNS_HTTP_HEAD_MAX);
	if (r < 0)
		return r;
	rh->head_len = pos;
	return judge_response(rh, err);
}

/* Writes p (n bytes) in hex to *text, upper-case or not; returns where. */
static const uint8_t *hex_form(const uint8_t *p, size_t n, bool upper, uint8_t **text)
{
	static const char lower_digits[] = "0123456789abcdef", upper_digits[] = "0123456789ABCDEF";
	const char *d = upper ? upper_digits : lower_digits;
	uint8_t *t = *text;

	for (size_t i = 0; i < n; i++) {
		t[2 * i] = (uint8_t)d[p[i] >> 4];
		t[2 * i + 1] = (uint8_t)d[p[i] & 15];
	}
	*text = t + 2 * n;
	return t;
}

/* The patterns of real value v, owned by surrogate s: v itself, also with any of its bytes
 * JSON-escaped or percent-encoded (escaped_form()); the hex of the whole value, in lower and
 * upper case; and its base64 forms at each alignment and in both alphabets (an API that echoes
 * what it got as base64, Basic credentials first of all, must show the sandbox the same form of
 * the surrogate). Each turns into the same form of s. in and enc are room for the longer of the
 * two + 2 bytes and their encoding; the forms go to *text. */
static void add_value_patterns(const struct broker_secret *v, const char *s, size_t owner,
			       uint8_t *in, char *enc, struct pattern *pats, size_t *n,
			       uint8_t **text)
{
	size_t slen = strlen(s);

	pats[(*n)++] = (struct pattern){.bytes = (const uint8_t *)v->data,
					.len = v->len,
					.sub = (const uint8_t *)s,
					.sub_len = slen,
					.owner = owner};
	pats[(*n)++] = (struct pattern){.bytes = (const uint8_t *)v->data,
					.len = v->len,
					.sub = (const uint8_t *)s,
					.sub_len = slen,
					.owner = owner,
					.escaped = true};
	for (int upper = 0; upper <= 1; upper++) {
		const uint8_t *vh = hex_form((const uint8_t *)v->data, v->len, upper, text);
		const uint8_t *sh = hex_form((const uint8_t *)s, slen, upper, text);

		pats[(*n)++] = (struct pattern){
		    .bytes = vh, .len = 2 * v->len, .sub = sh, .sub_len = 2 * slen, .owner = owner};
	}
	for (size_t k = 0; k < 3; k++) {
		uint8_t *vstd, *vurl, *sstd, *surl;
		size_t vm, sm;

		vm = b64_form((const uint8_t *)v->data, v->len, k, in, enc, &vstd, &vurl, text);
		sm = b64_form((const uint8_t *)s, slen, k, in, enc, &sstd, &surl, text);
		if (vm < WINDOW_MAX)
			continue;
		pats[(*n)++] = (struct pattern){.bytes = vstd,
						.len = vm,
						.sub = sstd,
						.sub_len = sm,
						.owner = owner,
						.b64 = ALPHA_STD,
						.b64_k = (uint8_t)k,
						.value = (const uint8_t *)v->data,
						.value_len = v->len,
						.surrogate = (const uint8_t *)s,
						.surrogate_len = slen};
		if (memcmp(vstd, vurl, vm) != 0) {
			pats[*n] = pats[*n - 1];
			pats[*n].bytes = vurl;
			pats[*n].sub = surl;
			pats[(*n)++].b64 = ALPHA_URL;
		}
	}
}

/* Builds the matcher of the real values resolved so far, those bound to the host (and the
 * sidecar's), to turn them back into surrogates (and '*'s), when new ones came since the last
 * response head. */
static int refresh_values(struct netns_http_flow *f)
{
	_cleanup_free_ struct pattern *pats = NULL;
	uint8_t *forms = NULL, *text, *in = NULL;
	size_t n = 0, longest = 0, size;
	char *enc = NULL;
	bool sent;
	int r = -ENOMEM;

	if (f->values_m_for == f->n_values + f->n_bound + f->n_side)
		return 0;
	for (size_t i = 0; i < f->n_surrogates; i++) {
		const struct broker_secret *v = f->values[i] ? f->values[i] : f->bound[i];

		if (!v)
			continue;
		longest = MAX(longest, v->len);
		longest = MAX(longest, strlen(f->o.surrogates[i]));
	}
	/* Per value: 3 alignments, 2 alphabets, the value's form and the surrogate's; hex in two
	 * cases, of both. */
	size = MAX(f->n_surrogates * (12 * ((longest + 2) / 3 * 4 + 4) + 8 * longest), (size_t)1);
	pats = calloc(10 * f->n_surrogates + f->n_side + 1, sizeof(*pats));
	forms = text = malloc(size);
	in = malloc(longest + 2);
	enc = malloc((longest + 2) / 3 * 4 + 4);
	if (!pats || !forms || !in || !enc)
		goto out;
	sent = false;
	for (size_t i = 0; i < f->n_surrogates; i++) {
		const struct broker_secret *v = f->values[i] ? f->values[i] : f->bound[i];

		if (v && v->len >= VALUE_MIN) {
			add_value_patterns(v, f->o.surrogates[i], i, in, enc, pats, &n, &text);
			sent |= f->values[i] != NULL;
		}
	}
	for (size_t i = 0; i < f->n_side; i++)
		if (f->side[i].value_len >= VALUE_MIN) {
			pats[n++] = (struct pattern){.bytes = (const uint8_t *)f->sidecar->data +
							      f->side[i].value,
						     .len = f->side[i].value_len,
						     .sub = (const uint8_t *)f->stars,
						     .sub_len = f->side[i].value_len};
			sent = true;
		}
	matcher_done(&f->values_m);
	wipe_free(f->value_forms, f->value_forms_size);
	f->value_forms = TAKE_PTR(forms);
	f->value_forms_size = size;
	f->values_m_for = f->n_values + f->n_bound + f->n_side;
	f->values_m_sent = sent;
	r = matcher_init(&f->values_m, TAKE_PTR(pats), n);
out:
	wipe_free(forms, size);
	wipe_free(in, longest + 2);
	wipe_free(enc, (longest + 2) / 3 * 4 + 4);
	return r;
}

/* Asks, once, before the first response head is passed on, for the values of the surrogates not
 * resolved on this flow that are bound to its host: a host may show a value that was sent on
 * another connection, and every response from it is searched for them. Any failure refuses the
 * response (-ENOKEY): it could not be searched. */
static int flow_bound_values(struct netns_http_flow *f, struct al_error *err)
{
	int r;

	if (f->bound_asked)
		return 0;
	f->bound_asked = true;
	if (!f->o.ops || !f->o.ops->bound_value)
		return 0;
	for (size_t i = 0; i < f->n_surrogates; i++) {
		struct broker_secret *s = NULL;

		if (f->values[i])
			continue;
		if (err)
			*err = (struct al_error){0};
		r = f->o.ops->bound_value(f->o.userdata, f->o.surrogates[i], &s, err);
		if (r < 0) {
			char why[AL_ERROR_MSG_MAX];

			(void)snprintf(why, sizeof(why), "%s",
				       err && err->msg[0] ? err->msg : "no answer");
			return al_error_set(err, -ENOKEY,
					    "The values bound to %s cannot be asked for (%s): the "
					    "response cannot be searched for them",
					    f->o.host, why);
		}
		if (!s)
			continue;
		f->bound[i] = s;
		f->n_bound++;
	}
	return 0;
}

static enum framing response_framing_in(const struct pending *pq, const struct response_head *rh)
{
	if (pq->head || rh->status < 200 || rh->status == 204 || rh->status == 304)
		return FRAME_NONE;
	if (rh->has_te)
		return rh->chunked ? FRAME_CHUNKED : FRAME_CLOSE;
	return rh->has_length ? FRAME_LENGTH : FRAME_CLOSE;
}

/* How the body goes on to the sandbox: a Content-Length body whose length may change in the
 * replacements is chunked for an HTTP/1.1 client and close-delimited for HTTP/1.0, which is also
 * how an HTTP/1.0 client gets a chunked body. */
static enum framing response_framing_out(const struct netns_http_flow *f, const struct pending *pq,
					 enum framing in)
{
	if (in == FRAME_LENGTH && !f->values_m.same_len)
		return pq->http11 ? FRAME_CHUNKED : FRAME_CLOSE;
	if (in == FRAME_CHUNKED && !pq->http11)
		return FRAME_CLOSE;
	return in;
}

static bool response_field_dropped(const struct netns_http_header *h, enum framing in,
				   enum framing out, bool close)
{
	if (in == FRAME_LENGTH && out != FRAME_LENGTH &&
	    ascii_eq(h->name, h->name_len, "content-length"))
		return true;
	if (in == FRAME_CHUNKED && out == FRAME_CLOSE &&
	    ascii_eq(h->name, h->name_len, "transfer-encoding"))
		return true;
	return close && (ascii_eq(h->name, h->name_len, "connection") ||
			 ascii_eq(h->name, h->name_len, "keep-alive"));
}

static int put_response_head(struct netns_http_flow *f, const struct response_head *rh,
			     enum framing in, enum framing outf, bool close, struct netns_buf *out,
			     struct al_error *err)
{
	size_t start = netns_buf_len(out);
	struct writer w = {.b = out, .max = start + HEAD_OUT_MAX};
	char status[sizeof("HTTP/1.1 999 ")];

	(void)snprintf(status, sizeof(status), "HTTP/1.1 %03d ", rh->status);
	put_str(&w, status);
	put_replaced(&w, &f->values_m, rh->reason, rh->reason_len);
	put_str(&w, "\r\n");
	for (size_t i = 0; i < rh->n_headers; i++) {
		const struct netns_http_header *h = &rh->headers[i];

		if (response_field_dropped(h, in, outf, close))
			continue;
		put_replaced(&w, &f->values_m, h->name, h->name_len);
		put_str(&w, ": ");
		/* The framing the flow read is the one it passes on. */
		if (ascii_eq(h->name, h->name_len, "content-length") ||
		    ascii_eq(h->name, h->name_len, "transfer-encoding"))
			put(&w, h->value, h->value_len);
		else
			put_replaced(&w, &f->values_m, h->value, h->value_len);
		put_str(&w, "\r\n");
	}
	if (in == FRAME_LENGTH && outf == FRAME_CHUNKED)
		put_str(&w, "Transfer-Encoding: chunked\r\n");
	if (close)
		put_str(&w, "Connection: close\r\n");
	put_str(&w, "\r\n");
	if (w.r < 0) {
		buf_truncate(out, start);
		if (w.r == -EMSGSIZE)
			return al_error_set(err, -EMSGSIZE,
					    "The response head is longer than %d bytes rewritten",
					    HEAD_OUT_MAX);
	}
	return w.r;
}

static void response_done(struct netns_http_flow *f)
{
	f->pending_first = (f->pending_first + 1) % PENDING_MAX;
	f->n_pending--;
	f->resp = f->resp_close ? RESP_CLOSED : RESP_HEAD;
}

/* Whether a response's content is encoded (compressed), though the request asked for identity:
 * by its Content-Encoding, or by a transfer coding other than chunked (none was asked for:
 * TE is a hop-by-hop field, not passed on). */
static bool is_encoded(const struct response_head *rh)
{
	if (rh->te_coded)
		return true;
	for (size_t i = 0; i < rh->n_headers; i++) {
		const struct netns_http_header *h = &rh->headers[i];
		size_t a, b;

		if (!ascii_eq(h->name, h->name_len, "content-encoding"))
			continue;
		a = http_span(h->value, h->value_len, 0, http_is_ows);
		for (b = h->value_len; b > a && http_is_ows((unsigned char)h->value[b - 1]); b--)
			;
		if (!ascii_eq(h->value + a, b - a, "identity"))
			return true;
	}
	return false;
}

/* Compressed formats by their first bytes. Brotli has none: a brotli body is refused only by its
 * Content-Encoding (is_encoded()). */
static const struct {
	const char *name;
	size_t len;
	uint8_t magic[4];
} compressed_magics[] = {
    {"gzip", 2, {0x1f, 0x8b}}, {"zstd", 4, {0x28, 0xb5, 0x2f, 0xfd}},
    {"zlib", 2, {0x78, 0x01}}, {"zlib", 2, {0x78, 0x5e}},
    {"zlib", 2, {0x78, 0x9c}}, {"zlib", 2, {0x78, 0xda}},
};

/* Judges a body by its first bytes, n more of which are at p: a compressed body, whatever its
 * headers say, could hold a real value where it cannot be searched for (-EIO). */
static int sniff_body(struct netns_http_flow *f, const uint8_t *p, size_t n, struct al_error *err)
{
	size_t take = MIN(n, sizeof(f->resp_first) - f->resp_first_len);
	bool maybe = false;

	memcpy(f->resp_first + f->resp_first_len, p, take);
	f->resp_first_len += take;
	for (size_t i = 0; i < ELEMENTSOF(compressed_magics); i++) {
		size_t k = MIN(compressed_magics[i].len, f->resp_first_len);

		if (memcmp(f->resp_first, compressed_magics[i].magic, k) != 0)
			continue;
		if (k == compressed_magics[i].len)
			return al_error_set(
			    err, -EIO,
			    "The upstream sent a compressed body (%s), which cannot "
			    "be searched for credential values",
			    compressed_magics[i].name);
		maybe = true;
	}
	f->resp_sniff = maybe;
	return 0;
}

/* Passes on a parsed response head and sets up its body. */
static int response_head_done(struct netns_http_flow *f, const struct response_head *rh,
			      struct netns_buf *out, struct al_error *err)
{
	const struct pending *pq = &f->pending[f->pending_first];
	enum framing in, outf;
	int r;

	if (rh->status == 101)
		return al_error_set(err, -EPROTO,
				    "The upstream switched protocols, which no request asked for");
	r = flow_bound_values(f, err);
	if (r >= 0)
		r = refresh_values(f);
	if (r < 0)
		return r;
	/* Every request asked for identity: a compressed response is refused wherever a value is
	 * looked for (on a bound host, from the first response). */
	if (f->values_m.n > 0 && is_encoded(rh))
		return al_error_set(err, -EIO,
				    "The upstream sent a compressed response, which cannot be "
				    "searched for credential values");
	/* The framing fields are passed on as they are, which they could not be if they held a
	 * value: digits only, Content-Length could (a long enough number). */
	for (size_t i = 0; i < rh->n_headers && f->values_m.n > 0; i++) {
		const struct netns_http_header *h = &rh->headers[i];
		struct match mt;

		if (ascii_eq(h->name, h->name_len, "content-length") &&
		    matcher_find(&f->values_m, (const uint8_t *)h->value,
				 (const uint8_t *)h->value + h->value_len, &mt))
			return al_error_set(
			    err, -EBADMSG, "The response's Content-Length is a credential's value");
	}
	in = response_framing_in(pq, rh);
	if (rh->status < 200)
		return put_response_head(f, rh, FRAME_NONE, FRAME_NONE, false, out, err);
	outf = response_framing_out(f, pq, in);
	f->resp_close = !rh->keep_alive || pq->close || in == FRAME_CLOSE || outf == FRAME_CLOSE;
	r = put_response_head(f, rh, in, outf, f->resp_close, out, err);
	if (r < 0)
		return r;
	f->resp_out = outf;
	/* Once a value went upstream on this connection, every body is judged by its first bytes
	 * (before, a compressed body is taken for a file the host serves: docs/EGRESS.md). */
	f->resp_sniff = f->values_m_sent;
	f->resp_first_len = 0;
	if (in == FRAME_CHUNKED)
		f->resp = RESP_CHUNK_LINE;
	else if (in == FRAME_CLOSE)
		f->resp = RESP_UNTIL_CLOSE;
	else if (in == FRAME_LENGTH && rh->length > 0) {
		f->resp = RESP_BODY;
		f->resp_left = rh->length;
	} else {
		if (outf == FRAME_CHUNKED)
			r = netns_buf_append(out, "0\r\n\r\n", 5, OUT_LIMIT);
		response_done(f);
	}
	return r;
}

static ssize_t response_head(struct netns_http_flow *f, const uint8_t *buf, size_t len,
			     struct netns_buf *out, struct al_error *err)
{
	struct response_head rh;
	struct unit u;
	int r;

	if (f->n_pending == 0)
		return al_error_set(err, -EPROTO,
				    "The upstream sent a response that no request asked for");
	r = unit_gather(&f->resp_acc, buf, len, NETNS_HTTP_HEAD_MAX, &u);
	if (r < 0)
		return r;
	if (!head_ready(&u, NETNS_HTTP_HEAD_MAX))
		return unit_wait(&f->resp_acc, &u);
	r = parse_response_head((const char *)u.p, u.n, &rh, err);
	if (r == -EAGAIN)
		return unit_wait(&f->resp_acc, &u);
	if (r < 0)
		return r;
	r = response_head_done(f, &rh, out, err);
	if (r < 0)
		return r;
	return (ssize_t)unit_take(&f->resp_acc, &u, rh.head_len);
}

/* ---- response bodies ---- */

static ssize_t response_data(struct netns_http_flow *f, const uint8_t *buf, size_t len,
			     struct netns_buf *out, struct al_error *err)
{
	bool until_close = f->resp == RESP_UNTIL_CLOSE;
	size_t n = until_close ? len : (size_t)MIN((uint64_t)len, f->resp_left);
	bool final;
	int r;

	n = MIN(n, matcher_step(&f->values_m));
	if (f->resp_sniff) {
		r = sniff_body(f, buf, n, err);
		if (r < 0)
			return r;
	}
	final = f->resp == RESP_BODY && n == f->resp_left;
	r = body_pass(&f->resp_hold, &f->values_m, NULL, buf, n, final,
		      f->resp_out == FRAME_CHUNKED, out, err);
	if (r < 0)
		return r;
	if (until_close)
		return (ssize_t)n;
	f->resp_left -= n;
	if (f->resp_left > 0)
		return (ssize_t)n;
	if (f->resp == RESP_CHUNK_DATA) {
		f->resp = RESP_CHUNK_END;
		return (ssize_t)n;
	}
	if (f->resp_out == FRAME_CHUNKED) {
		r = netns_buf_append(out, "0\r\n\r\n", 5, OUT_LIMIT);
		if (r < 0)
			return r;
	}
	response_done(f);
	return (ssize_t)n;
}

static ssize_t response_chunk_line(struct netns_http_flow *f, const uint8_t *buf, size_t len,
				   struct netns_buf *out, struct al_error *err)
{
	uint64_t size;
	size_t line_len;
	struct unit u;
	int r;

	r = unit_gather(&f->resp_acc, buf, len, CHUNK_LINE_MAX, &u);
	if (r < 0)
		return r;
	r = netns_http_parse_chunk_size((const char *)u.p, u.n, &size, &line_len);
	if (r == -EAGAIN)
		return unit_wait(&f->resp_acc, &u);
	if (r < 0)
		return al_error_set(err, -EBADMSG, "Malformed chunk-size line in a response");
	if (size == 0) {
		r = body_pass(&f->resp_hold, &f->values_m, NULL, NULL, 0, true,
			      f->resp_out == FRAME_CHUNKED, out, err);
		if (r < 0)
			return r;
		f->resp = RESP_TRAILERS;
	} else {
		f->resp_left = size;
		f->resp = RESP_CHUNK_DATA;
	}
	return (ssize_t)unit_take(&f->resp_acc, &u, line_len);
}

static ssize_t response_chunk_end(struct netns_http_flow *f, const uint8_t *buf, size_t len,
				  struct al_error *err)
{
	struct unit u;
	int r;

	r = unit_gather(&f->resp_acc, buf, len, 2, &u);
	if (r < 0)
		return r;
	r = unit_crlf(&u);
	if (r == 0)
		return unit_wait(&f->resp_acc, &u);
	if (r < 0)
		return al_error_set(err, -EBADMSG,
				    "Chunk data in a response is not followed by CRLF");
	f->resp = RESP_CHUNK_LINE;
	return (ssize_t)unit_take(&f->resp_acc, &u, 2);
}

/* The trailer section ends a chunked body: its fields pass, values replaced, when the body goes
 * on chunked. */
static ssize_t response_trailers(struct netns_http_flow *f, const uint8_t *buf, size_t len,
				 struct netns_buf *out, struct al_error *err)
{
	struct netns_http_header fields[NETNS_HTTP_HEADERS_MAX];
	size_t pos = 0, n = 0;
	struct writer w = {.b = out, .max = netns_buf_len(out) + HEAD_OUT_MAX};
	struct unit u;
	int r;

	r = unit_gather(&f->resp_acc, buf, len, NETNS_HTTP_HEAD_MAX, &u);
	if (r < 0)
		return r;
	r = unit_crlf(&u);
	if (r == 0 && u.n < 2)
		return unit_wait(&f->resp_acc, &u);
	if (r <= 0 && !head_ready(&u, NETNS_HTTP_HEAD_MAX))
		return unit_wait(&f->resp_acc, &u);
	r = parse_fields((const char *)u.p, u.n, &pos, fields, &n, err);
	if (r == -EAGAIN)
		return u.n >= NETNS_HTTP_HEAD_MAX
			   ? al_error_set(err, -EMSGSIZE, "Response trailers are too long")
			   : unit_wait(&f->resp_acc, &u);
	if (r < 0)
		return r;
	if (f->resp_out == FRAME_CHUNKED) {
		put_str(&w, "0\r\n");
		for (size_t i = 0; i < n; i++) {
			put_replaced(&w, &f->values_m, fields[i].name, fields[i].name_len);
			put_str(&w, ": ");
			put_replaced(&w, &f->values_m, fields[i].value, fields[i].value_len);
			put_str(&w, "\r\n");
		}
		put_str(&w, "\r\n");
		if (w.r < 0)
			return w.r == -EMSGSIZE
				   ? al_error_set(err, -EMSGSIZE, "Response trailers are too long")
				   : w.r;
	}
	response_done(f);
	return (ssize_t)unit_take(&f->resp_acc, &u, pos);
}

static ssize_t response_step(struct netns_http_flow *f, const uint8_t *buf, size_t len,
			     struct netns_buf *out, struct al_error *err)
{
	switch (f->resp) {
	case RESP_HEAD:
		return response_head(f, buf, len, out, err);
	case RESP_BODY:
	case RESP_CHUNK_DATA:
	case RESP_UNTIL_CLOSE:
		return response_data(f, buf, len, out, err);
	case RESP_CHUNK_LINE:
		return response_chunk_line(f, buf, len, out, err);
	case RESP_CHUNK_END:
		return response_chunk_end(f, buf, len, err);
	case RESP_TRAILERS:
		return response_trailers(f, buf, len, out, err);
	case RESP_CLOSED:
		break;
	}
	return (ssize_t)len; /* after the connection's last response: dropped */
}

ssize_t netns_http_flow_response(struct netns_http_flow *f, const uint8_t *buf, size_t len,
				 struct netns_buf *out, struct al_error *err)
{
	size_t done = 0;
	ssize_t n;

	if (f->error < 0)
		return al_error_set(err, f->error, "The connection was refused earlier");
	while (done < len && netns_buf_len(out) <= NETNS_HTTP_FLOW_OUT_MAX) {
		n = response_step(f, buf + done, len - done, out, err);
		if (n < 0)
			return flow_fail(f, (int)n);
		done += (size_t)n;
	}
	return (ssize_t)done;
}

bool netns_http_flow_idle(const struct netns_http_flow *f)
{
	return f->req == REQ_HEAD && f->n_pending == 0 && f->resp == RESP_HEAD &&
	       netns_buf_len(&f->resp_acc) == 0;
}

int netns_http_flow_response_eof(struct netns_http_flow *f, struct netns_buf *out,
				 struct al_error *err)
{
	enum resp_state state = f->resp;
	int r;

	if (f->error < 0)
		return al_error_set(err, f->error, "The connection was refused earlier");
	f->resp = RESP_CLOSED;
	if (state == RESP_UNTIL_CLOSE) {
		r = body_pass(&f->resp_hold, &f->values_m, NULL, NULL, 0, true, false, out, err);
		if (r < 0)
			return flow_fail(f, r);
		return 0;
	}
	if (state == RESP_CLOSED || (state == RESP_HEAD && netns_buf_len(&f->resp_acc) == 0))
		return 0;
	return al_error_set(err, -EPIPE, "The upstream closed the connection within a response");
}

static const char *status_reason(int status)
{
	switch (status) {
	case 400:
		return "Bad Request";
	case 403:
		return "Forbidden";
	case 421:
		return "Misdirected Request";
	case 431:
		return "Request Header Fields Too Large";
	case 500:
		return "Internal Server Error";
	case 502:
		return "Bad Gateway";
	case 504:
		return "Gateway Timeout";
	}
	return "Error";
}

bool netns_http_flow_error_response(struct netns_http_flow *f, int status, const char *message,
				    struct netns_buf *out)
{
	/* Only between responses: within one, the sandbox would read this as its bytes. */
	if (f->resp != RESP_HEAD)
		return false;
	f->resp = RESP_CLOSED;
	return netns_buf_printf(out, OUT_LIMIT,
				"HTTP/1.1 %d %s\r\n"
				"Content-Type: text/plain\r\n"
				"Content-Length: %zu\r\n"
				"Connection: close\r\n"
				"\r\n"
				"airlock: %s\n",
				status, status_reason(status),
				strlen("airlock: \n") + strlen(message), message) >= 0;
}
