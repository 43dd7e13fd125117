#include <string.h>

#include "common/json-util.h"

int al_json_parse(const char *buf, size_t len, int max_depth, struct json_object **ret,
		  struct al_error *err)
{
	struct json_tokener *tok;
	struct json_object *o;
	enum json_tokener_error jerr;
	size_t off;

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
