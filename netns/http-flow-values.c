/* What the inspected HTTP flow searches for, and the values behind it: the surrogates and their
 * base64 forms (in requests, where they are swapped or refused), the real values resolved on the
 * flow (ops->resolve) or bound to its host (ops->bound_value), and the patterns each value turns
 * into in responses (as it is, escaped, in hex, in base64), each paired with the same form of its
 * surrogate. Real values stay in broker_secret memory; their forms are wiped when freed. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/client.h"
#include "netns/http-flow-internal.h"

#define VALUE_MIN 8 /* shorter real values are not looked for in responses */

/* ---- surrogates ---- */

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
	(void)flow_b64_encode(in, k + n, enc);
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

int flow_build_surrogate_matchers(struct netns_http_flow *f)
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
	r = flow_matcher_init(&f->surrogates, TAKE_PTR(raw), n_raw);
	if (r < 0)
		return r;
	return flow_matcher_init(&f->encoded, TAKE_PTR(enc), n_enc);
}

int flow_value(struct netns_http_flow *f, size_t idx, const char *where,
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

/* ---- real values, in responses ---- */

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
 * JSON-escaped or percent-encoded (flow_escaped_form()); the hex of the whole value, in lower and
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

int flow_refresh_values(struct netns_http_flow *f)
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
	flow_matcher_done(&f->values_m);
	wipe_free(f->value_forms, f->value_forms_size);
	f->value_forms = TAKE_PTR(forms);
	f->value_forms_size = size;
	f->values_m_for = f->n_values + f->n_bound + f->n_side;
	f->values_m_sent = sent;
	r = flow_matcher_init(&f->values_m, TAKE_PTR(pats), n);
out:
	wipe_free(forms, size);
	wipe_free(in, longest + 2);
	wipe_free(enc, (longest + 2) / 3 * 4 + 4);
	return r;
}

int flow_bound_values(struct netns_http_flow *f, struct al_error *err)
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

/* Whether p[0..n) holds b[0..m) in any case of its ASCII letters. */
static bool holds_nocase(const char *p, size_t n, const char *b, size_t m)
{
	for (size_t i = 0; m > 0 && i + m <= n; i++)
		if (ascii_eq_n(p + i, m, b, m))
			return true;
	return false;
}

bool flow_holds_value_nocase(const struct netns_http_flow *f, const char *p, size_t n)
{
	for (size_t i = 0; i < f->n_surrogates; i++) {
		const struct broker_secret *v = f->values[i] ? f->values[i] : f->bound[i];

		if (v && v->len >= VALUE_MIN && holds_nocase(p, n, v->data, v->len))
			return true;
	}
	for (size_t i = 0; i < f->n_side; i++)
		if (f->side[i].value_len >= VALUE_MIN &&
		    holds_nocase(p, n, f->sidecar->data + f->side[i].value, f->side[i].value_len))
			return true;
	return false;
}
