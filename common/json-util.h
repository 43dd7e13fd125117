#pragma once

/* json-c adapters: cleanup attribute and small typed accessors. json-c returns NULL on failure;
 * these map that to -errno. */

#include <stdint.h>

#include <json-c/json.h>

#include "common/error.h"
#include "common/macro.h"

static inline void al_json_putp(struct json_object **o)
{
	if (*o)
		(void)json_object_put(*o);
}
#define _cleanup_json_ _cleanup_(al_json_putp)

/* Parses a whole buffer (len bytes, no NUL needed) as one JSON value, nesting depth limited to
 * max_depth. Trailing non-space data is an error. On error fills err with the position. */
int al_json_parse(const char *buf, size_t len, int max_depth, struct json_object **ret,
		  struct al_error *err);

/* Adds key:value to obj, taking the reference to value even on failure. */
int al_json_add(struct json_object *obj, const char *key, struct json_object *value);

/* As al_json_add(), but a NULL value is JSON's null (not a failure). */
int al_json_add_or_null(struct json_object *obj, const char *key, struct json_object *value);

/* Serializes obj compactly (no spaces, keys in insertion order) into a malloc'd string. */
int al_json_to_string(struct json_object *obj, char **ret);
