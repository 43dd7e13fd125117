#include <stdlib.h>
#include <string.h>

#include "common/json-util.h"

/* ---- duplicate keys ----
 * json-c keeps the last of two equal keys, so {"tier": 4, "tier": 1} would read as tier 1 while a
 * reviewer reads tier 4: every document with a repeated key is refused. The text (already parsed,
 * so valid strict JSON) is scanned once: each ':' outside a string is one key of the innermost
 * open object, so the keys written per object are counted, in the order the objects open. The
 * parsed tree is walked in the same (pre-)order; an object with fewer keys than were written held
 * a repeated one. Only then are that object's keys decoded, by json-c itself, to name it. The
 * same scan refuses a lone UTF-16 surrogate escape (see skip_escape()). */

struct key_counts {
	size_t *keys;  /* per object, in the order the objects open */
	size_t *start; /* offset of each object's '{' */
	size_t n;
};

/* The UTF-16 unit of the \\uXXXX escape at p (4 hex digits, as json-c checked), or -EINVAL
 * when p is not such an escape. */
static int escaped_unit(const char *p, const char *end)
{
	char hex[5];
	char *e;
	long v;

	if (end - p < 6 || p[0] != '\\' || p[1] != 'u')
		return -EINVAL;
	memcpy(hex, p + 2, 4);
	hex[4] = '\0';
	v = strtol(hex, &e, 16);
	return *e ? -EINVAL : (int)v;
}

/* Past the escape at buf[i] (a backslash): the index of its last byte. A UTF-16 surrogate that is
 * not one half of a pair is refused: json-c would turn it into U+FFFD, and two documents that
 * differ would read as one. */
static int skip_escape(const char *buf, size_t len, size_t i, size_t *ret, struct al_error *err)
{
	int u = escaped_unit(buf + i, buf + len), lo;

	if (u < 0xd800 || u > 0xdfff) {
		*ret = i + (u < 0 ? 1 : 5);
		return 0;
	}
	lo = u <= 0xdbff ? escaped_unit(buf + i + 6, buf + len) : -EINVAL;
	if (lo < 0xdc00 || lo > 0xdfff)
		return al_error_set(err, -EINVAL,
				    "invalid JSON at byte %zu: \\u%04x is half of a UTF-16 "
				    "surrogate pair, alone",
				    i, (unsigned)u);
	*ret = i + 11;
	return 0;
}

static int count_keys(const char *buf, size_t len, int max_depth, struct key_counts *c,
		      struct al_error *err)
{
	_cleanup_free_ ssize_t *open = calloc((size_t)max_depth + 1, sizeof(*open));
	size_t cap = 0, depth = 0;
	bool in_string = false;

	if (!open)
		return -ENOMEM;
	for (size_t i = 0; i < len; i++) {
		char ch = buf[i];

		if (in_string) {
			if (ch == '\\') {
				int r = skip_escape(buf, len, i, &i, err);

				if (r < 0)
					return r;
			} else if (ch == '"') {
				in_string = false;
			}
			continue;
		}
		if (ch == '"') {
			in_string = true;
		} else if (ch == '\'') {
			/* json-c takes 'single-quoted' strings even when strict; JSON has none (and
			 * this scan would read them as other text). Found by fuzz-policy. */
			return al_error_set(
			    err, -EINVAL, "invalid JSON at byte %zu: a string in single quotes", i);
		} else if (ch == '{' || ch == '[') {
			if (depth > (size_t)max_depth)
				return al_error_set(
				    err, -EINVAL, "invalid JSON at byte %zu: nested too deeply", i);
			open[depth++] = ch == '[' ? -1 : (ssize_t)c->n;
			if (ch == '[')
				continue;
			if (c->n == cap) {
				size_t ncap = cap ? cap * 2 : 16;
				size_t *k = reallocarray(c->keys, ncap, sizeof(*k));

				if (!k)
					return -ENOMEM;
				c->keys = k;
				k = reallocarray(c->start, ncap, sizeof(*k));
				if (!k)
					return -ENOMEM;
				c->start = k;
				cap = ncap;
			}
			c->keys[c->n] = 0;
			c->start[c->n++] = i;
		} else if (ch == '}' || ch == ']') {
			if (depth > 0)
				depth--;
		} else if (ch == ':' && depth > 0 && open[depth - 1] >= 0) {
			c->keys[open[depth - 1]]++;
		}
	}
	return 0;
}

/* The index (in c) of the first object, in pre-order from o, whose parsed keys are fewer than
 * its written ones; -ENOENT when there is none. *next is the index of o's object (if o is one). */
static ssize_t find_short_object(struct json_object *o, const struct key_counts *c, size_t *next)
{
	ssize_t r;

	if (json_object_is_type(o, json_type_object)) {
		size_t me = (*next)++;

		if (me >= c->n || (size_t)json_object_object_length(o) != c->keys[me])
			return (ssize_t)me;
		json_object_object_foreach(o, key, v)
		{
			(void)key;
			r = v ? find_short_object(v, c, next) : -ENOENT;
			if (r >= 0)
				return r;
		}
	} else if (json_object_is_type(o, json_type_array)) {
		for (size_t i = 0, n = json_object_array_length(o); i < n; i++) {
			struct json_object *v = json_object_array_get_idx(o, i);

			r = v ? find_short_object(v, c, next) : -ENOENT;
			if (r >= 0)
				return r;
		}
	}
	return -ENOENT;
}

/* A JSON string literal (buf, n bytes) decoded by json-c; NULL when it is not one. */
static struct json_object *decode_string(const char *buf, size_t n)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *o;

	if (!tok)
		return NULL;
	o = json_tokener_parse_ex(tok, buf, (int)n);
	json_tokener_free(tok);
	if (o && !json_object_is_type(o, json_type_string)) {
		(void)json_object_put(o);
		o = NULL;
	}
	return o;
}

/* Names the repeated key of the object whose '{' is at buf[start]: decodes each of its keys (a
 * string directly inside it, followed by ':') with json-c and compares it with the earlier ones. */
static int name_repeated_key(const char *buf, size_t len, size_t start, struct al_error *err)
{
	_cleanup_json_ struct json_object *seen = json_object_new_object();
	size_t depth = 0, key_start = 0;
	bool in_string = false;

	if (!seen)
		return -ENOMEM;
	for (size_t i = start; i < len; i++) {
		char ch = buf[i];

		if (in_string) {
			if (ch == '\\')
				i++;
			else if (ch == '"')
				in_string = false;
			continue;
		}
		if (ch == '"') {
			in_string = true;
			key_start = i;
		} else if (ch == '{' || ch == '[') {
			depth++;
		} else if (ch == '}' || ch == ']') {
			if (--depth == 0)
				break;
		} else if (ch == ':' && depth == 1) {
			_cleanup_json_ struct json_object *k = NULL;
			const char *name;

			k = decode_string(buf + key_start, i - key_start);
			if (!k)
				return -ENOMEM;
			name = json_object_get_string(k);
			if (json_object_object_get_ex(seen, name, NULL))
				return al_error_set(
				    err, -EINVAL,
				    "invalid JSON at byte %zu: the key %s is repeated", key_start,
				    AL_QUOTE(name));
			if (json_object_object_add(seen, name, NULL) < 0)
				return -ENOMEM;
		}
	}
	return al_error_set(err, -EINVAL, "invalid JSON at byte %zu: a key is repeated", start);
}

static int check_unique_keys(const char *buf, size_t len, int max_depth, struct json_object *o,
			     struct al_error *err)
{
	struct key_counts c = {};
	size_t next = 0;
	ssize_t bad;
	int r;

	r = count_keys(buf, len, max_depth, &c, err);
	bad = r < 0 ? -ENOENT : find_short_object(o, &c, &next);
	if (r >= 0 && bad >= 0)
		r = name_repeated_key(buf, len, c.start[bad], err);
	free(c.keys);
	free(c.start);
	return r;
}

int al_json_parse(const char *buf, size_t len, int max_depth, struct json_object **ret,
		  struct al_error *err)
{
	struct json_tokener *tok;
	struct json_object *o;
	enum json_tokener_error jerr;
	size_t off;
	int r;

	if (len > INT32_MAX)
		return al_error_set(err, -EFBIG, "document too large");
	tok = json_tokener_new_ex(max_depth);
	if (!tok)
		return -ENOMEM;
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	o = json_tokener_parse_ex(tok, buf, (int)len);
	jerr = json_tokener_get_error(tok);
	off = json_tokener_get_parse_end(tok);
	/* A number or literal at the very end waits for a byte that ends it: give it a blank. */
	if (!o && jerr == json_tokener_continue) {
		o = json_tokener_parse_ex(tok, " ", 1);
		jerr = json_tokener_get_error(tok);
		off = len;
	}
	json_tokener_free(tok);
	if (!o && jerr == json_tokener_success)
		return al_error_set(err, -EINVAL, "the JSON document is null");
	if (!o || jerr != json_tokener_success) {
		if (o)
			(void)json_object_put(o);
		if (jerr == json_tokener_continue)
			return al_error_set(err, -EINVAL, "invalid JSON: unexpected end of input");
		return al_error_set(err, -EINVAL, "invalid JSON at byte %zu: %s", off,
				    json_tokener_error_desc(jerr));
	}
	for (; off < len; off++)
		if (!strchr(" \t\r\n", buf[off])) {
			(void)json_object_put(o);
			return al_error_set(
			    err, -EINVAL, "invalid JSON at byte %zu: trailing data after the value",
			    off);
		}
	r = check_unique_keys(buf, len, max_depth, o, err);
	if (r < 0) {
		(void)json_object_put(o);
		return r;
	}
	*ret = o;
	return 0;
}

int al_json_add(struct json_object *obj, const char *key, struct json_object *value)
{
	if (!value)
		return -ENOMEM;
	if (json_object_object_add(obj, key, value) < 0) {
		(void)json_object_put(value);
		return -ENOMEM;
	}
	return 0;
}

int al_json_add_or_null(struct json_object *obj, const char *key, struct json_object *value)
{
	if (!value)
		return json_object_object_add(obj, key, NULL) < 0 ? -ENOMEM : 0;
	return al_json_add(obj, key, value);
}

int al_json_to_string(struct json_object *obj, char **ret)
{
	const char *s;
	char *d;

	s = json_object_to_json_string_ext(obj,
					   JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	if (!s)
		return -ENOMEM;
	d = strdup(s);
	if (!d)
		return -ENOMEM;
	*ret = d;
	return 0;
}
