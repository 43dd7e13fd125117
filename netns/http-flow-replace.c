/* Text written with the matcher's finds replaced (http-flow-match.c): a head's fields whole
 * (flow_put_replaced()), a body as it streams, holding back only a tail that could begin a pattern
 * (flow_body_pass()). A find in a base64 form of a real value grows to its whole base64 run, which
 * is encoded again with the value swapped, so that no bit of the value's encoding is left
 * (grow_b64_match()). Every copy of a value made here is wiped before it is freed. */

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "netns/http-flow-internal.h"

#define HITS_MAX 32    /* replacements per emitted piece of a body */
#define CASE_NONE (-1) /* hex_case(): digits only */
/* The longest base64 run that is encoded again whole around a real value in a response (and
 * that a body holds back until it knows its end); in a longer one only the characters that the
 * value's bits alone decide are replaced. */
#define B64_RUN_MAX 4096

/* ---- base64 runs around a real value, encoded again whole ---- */

/* The value of c in the alphabet (ALPHA_STD or ALPHA_URL), or -1. */
static int b64_alphabet_value(unsigned char c, uint8_t alphabet)
{
	if (c == '+' || c == '/')
		return alphabet == ALPHA_STD ? flow_b64_value(c) : -1;
	if (c == '-' || c == '_')
		return alphabet == ALPHA_URL ? (c == '-' ? 62 : 63) : -1;
	return flow_b64_value(c);
}

/* Whether c may be part of a base64 run in either alphabet, padding included. */
static bool is_b64_run_char(unsigned char c)
{
	return flow_b64_value(c) >= 0 || c == '-' || c == '_' || c == '=';
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
	len = flow_b64_encode(d, n, t);
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
	const uint8_t *o = flow_matcher_find(m, from, end, &other);

	if (o && o < pe)
		return 1;
	return more && from + flow_matcher_partial(m, from, (size_t)(end - from)) < pe ? GROW_WAIT
										       : 0;
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
	for (at = buf; (hit = flow_matcher_find(m, at, buf + n, &other)); at = hit + 1) {
		if ((size_t)(hit - buf) >= text_end)
			break;
		if ((size_t)(hit - buf) + other.len > before) {
			r = 1;
			break;
		}
	}
	if (r == 0 && more && pe + after == end && flow_matcher_partial(m, buf, n) < text_end)
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

/* The first match in [s, end) as it is replaced: flow_matcher_find(), grown to its base64 run. NULL
 * (*r 0) when there is none, or on error (*r -ENOMEM). */
static const uint8_t *find_replacement(const struct matcher *m, const uint8_t *s,
				       const uint8_t *end, bool more, struct match *ret, int *r)
{
	const uint8_t *q = flow_matcher_find(m, s, end, ret);

	ret->text = NULL;
	ret->text_len = 0;
	*r = 0;
	if (!q)
		return NULL;
	*r = grow_b64_match(m, s, end, more, &q, ret);
	return *r < 0 ? NULL : q;
}

/* ---- replacements written ---- */

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
		k = flow_escaped_form(pt->bytes[i], t + at, mt->len - at);
		if (k == 3 || k == 6)
			match_case = hex_case(t + at + k - 2);
	}
	at = 0;
	for (size_t i = 0; i < pt->len; i++, at += (size_t)k) {
		size_t fl = 1;
		int upper;

		k = flow_escaped_form(pt->bytes[i], t + at, mt->len - at);
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

void flow_put_replaced(struct writer *w, const struct matcher *m, const void *p, size_t n)
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

		/* Only a match that starts before limit is passed now: what follows it is held,
		 * and read again with the bytes that come after it. */
		while (n_hits < HITS_MAX &&
		       (hit = flow_matcher_find_before(m, q, p + limit, p + n, &mt))) {
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

int flow_body_pass(struct netns_buf *hold, const struct matcher *m, const char *refuse,
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
	limit = final ? pn : flow_matcher_partial(m, p, pn);
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
