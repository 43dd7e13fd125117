/* Typed access to the JSON tree of a policy file (json-c), with the messages every field shares:
 * the type expected, a missing field, an unknown one. */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "policy/policy-internal.h"

int policy_json_type_error(const struct policy_where *w, const char *what, struct al_error *err)
{
	return policy_error(err, -EINVAL, w, "expected %s", what);
}

int policy_json_missing(const struct policy_where *w, struct al_error *err)
{
	return policy_error(err, -EINVAL, w, "required field is missing");
}

int policy_json_object(const struct policy_where *w, struct json_object *v, struct al_error *err)
{
	if (!json_object_is_type(v, json_type_object))
		return policy_json_type_error(w, "an object", err);
	return 0;
}

int policy_json_check_fields(const struct policy_where *w, struct json_object *o,
			     const struct policy_field *fields, size_t n_fields, const char *what,
			     struct al_error *err)
{
	json_object_object_foreach(o, key, value)
	{
		char list[256] = "";
		size_t len = 0;
		bool known = false;

		(void)value;
		for (size_t i = 0; i < n_fields && !known; i++)
			known = streq(key, fields[i].name);
		if (known)
			continue;
		for (size_t i = 0; i < n_fields && len < sizeof(list); i++) {
			int n = snprintf(list + len, sizeof(list) - len, "%s%s", i > 0 ? ", " : "",
					 fields[i].name);

			if (n > 0)
				len += (size_t)n;
		}
		return policy_error(err, -EINVAL, POLICY_AT(w, key),
				    "unknown field %s(expected %s)", strempty(what), list);
	}
	return 0;
}

int policy_json_checked_object(const struct policy_where *w, struct json_object *o,
			       const struct policy_field *fields, size_t n_fields,
			       struct al_error *err)
{
	int r;

	r = policy_json_object(w, o, err);
	if (r < 0)
		return r;
	return policy_json_check_fields(w, o, fields, n_fields, NULL, err);
}

int policy_json_required(const struct policy_where *w, struct json_object *o, const char *key,
			 struct json_object **ret, struct al_error *err)
{
	if (!json_object_object_get_ex(o, key, ret))
		return policy_json_missing(POLICY_AT(w, key), err);
	return 0;
}

int policy_json_required_string(const struct policy_where *w, struct json_object *o,
				const char *key, const char **ret, struct al_error *err)
{
	struct json_object *f;
	int r;

	r = policy_json_required(w, o, key, &f, err);
	if (r < 0)
		return r;
	return policy_json_string(POLICY_AT(w, key), f, POLICY_STRING_MAX, ret, err);
}

int policy_json_fields(struct policy *p, const struct policy_where *w, struct json_object *v,
		       const struct policy_field *fields, size_t n_fields, struct al_error *err)
{
	struct json_object *f;
	int r;

	r = policy_json_checked_object(w, v, fields, n_fields, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n_fields; i++) {
		if (!json_object_object_get_ex(v, fields[i].name, &f))
			continue;
		r = fields[i].parse(p, POLICY_AT(w, fields[i].name), f, err);
		if (r < 0)
			return r;
	}
	return 0;
}

int policy_json_string(const struct policy_where *w, struct json_object *v, size_t max,
		       const char **ret, struct al_error *err)
{
	const char *s;
	int r;

	if (!json_object_is_type(v, json_type_string))
		return policy_json_type_error(w, "a string", err);
	s = json_object_get_string(v);
	r = policy_check_string(w, s, max, err);
	if (r < 0)
		return r;
	*ret = s;
	return 0;
}

int policy_json_int(const struct policy_where *w, struct json_object *v, int64_t min, int64_t max,
		    int64_t *ret, struct al_error *err)
{
	int64_t i = 0;

	if (!json_object_is_type(v, json_type_int))
		return policy_json_type_error(w, "an integer", err);
	/* json-c clamps what doesn't fit in 64 bits to the limits, which are out of every range. */
	i = json_object_get_int64(v);
	if (i < min || i > max)
		return policy_error(
		    err, -EINVAL, w,
		    "out of range (expected an integer from %" PRId64 " to %" PRId64 ")", min, max);
	*ret = i;
	return 0;
}

int policy_json_bool(const struct policy_where *w, struct json_object *v, bool *ret,
		     struct al_error *err)
{
	if (!json_object_is_type(v, json_type_boolean))
		return policy_json_type_error(w, "true or false", err);
	*ret = json_object_get_boolean(v);
	return 0;
}

int policy_json_array(const struct policy_where *w, struct json_object *v, size_t *ret_n,
		      struct al_error *err)
{
	size_t n;

	if (!json_object_is_type(v, json_type_array))
		return policy_json_type_error(w, "an array", err);
	n = json_object_array_length(v);
	if (n > POLICY_LIST_MAX)
		return policy_error(err, -EINVAL, w, "has %zu entries, more than the limit of %d",
				    n, POLICY_LIST_MAX);
	*ret_n = n;
	return 0;
}

int policy_json_map(const struct policy_where *w, struct json_object *v, struct al_error *err)
{
	int n;

	if (!json_object_is_type(v, json_type_object))
		return policy_json_type_error(w, "an object", err);
	n = json_object_object_length(v);
	if (n > POLICY_LIST_MAX)
		return policy_error(err, -EINVAL, w, "has %d entries, more than the limit of %d", n,
				    POLICY_LIST_MAX);
	return 0;
}

int policy_json_size(const struct policy_where *w, struct json_object *v, uint64_t *ret,
		     struct al_error *err)
{
	const char *s = NULL;
	int64_t i = 0;
	int r;

	if (json_object_is_type(v, json_type_string)) {
		r = policy_json_string(w, v, POLICY_STRING_MAX, &s, err);
		if (r < 0)
			return r;
		return policy_parse_size(w, s, ret, err);
	}
	if (!json_object_is_type(v, json_type_int))
		return policy_json_type_error(
		    w, "a size (a string such as \"512Mi\", or a number of bytes)", err);
	r = policy_json_int(w, v, 0, POLICY_JSON_INT_MAX, &i, err);
	if (r < 0)
		return r;
	*ret = (uint64_t)i;
	return 0;
}

int policy_json_strv(const struct policy_where *w, struct json_object *v,
		     policy_item_parse_fn parse, struct policy_strv *ret, struct al_error *err)
{
	size_t n = 0;
	int r;

	r = policy_json_array(w, v, &n, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		const struct policy_where iw = POLICY_WHERE_INDEX(w, i);
		const char *s = NULL;
		char *d = NULL;

		r = policy_json_string(&iw, json_object_array_get_idx(v, i), POLICY_STRING_MAX, &s,
				       err);
		if (r < 0)
			return r;
		r = parse(&iw, s, &d, err);
		if (r < 0)
			return r;
		r = policy_strv_push(ret, d);
		if (r < 0)
			return r;
	}
	return 0;
}

int policy_strdup(const char *s, char **ret)
{
	char *d = strdup(s);

	if (!d)
		return -ENOMEM;
	*ret = d;
	return 0;
}

bool policy_is_name(const char *s, size_t max)
{
	size_t n = strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-");

	return n > 0 && s[n] == '\0' && n <= max;
}

int policy_json_elements(struct policy *p, const struct policy_where *w, struct json_object *v,
			 size_t item_size, void **items, size_t *n_items,
			 policy_element_parse_fn parse, struct al_error *err)
{
	size_t n = 0;
	int r;

	r = policy_json_array(w, v, &n, err);
	if (r < 0 || n == 0)
		return r;
	*items = calloc(n, item_size);
	if (!*items)
		return -ENOMEM;
	*n_items = n;
	for (size_t i = 0; i < n; i++) {
		r = parse(p, i, &POLICY_WHERE_INDEX(w, i), json_object_array_get_idx(v, i), err);
		if (r < 0)
			return r;
	}
	return 0;
}
