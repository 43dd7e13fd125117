/* The exec request: JSON (json-c) to struct agent_request. Like the policy parser, it refuses
 * unknown fields and wrong types, and every message names the field. The request comes from an
 * agent framework, which may pass on what a model wrote: everything is capped. */

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "agent/agent.h"
#include "common/json-util.h"
#include "common/parse-util.h"

#define REQUEST_DEPTH_MAX 64
#define STRING_MAX (8 * 1024 * 1024)

static const char *const language_names[AGENT_LANGUAGE_MAX] = {
    [AGENT_LANGUAGE_COMMAND] = "command",
    [AGENT_LANGUAGE_PYTHON] = "python",
    [AGENT_LANGUAGE_JAVASCRIPT] = "javascript",
    [AGENT_LANGUAGE_TYPESCRIPT] = "typescript",
    [AGENT_LANGUAGE_RUST] = "rust",
    [AGENT_LANGUAGE_SHELL] = "shell",
    [AGENT_LANGUAGE_WASM] = "wasm",
};

const char *agent_language_to_string(enum agent_language l)
{
	return l < AGENT_LANGUAGE_MAX ? language_names[l] : NULL;
}

int agent_language_from_string(const char *s, enum agent_language *ret)
{
	for (size_t i = 0; i < AGENT_LANGUAGE_MAX; i++)
		if (streq(s, language_names[i])) {
			*ret = (enum agent_language)i;
			return 0;
		}
	return -EINVAL;
}

const char *agent_error_kind_to_string(enum agent_error_kind k)
{
	static const char *const names[] = {
	    [AGENT_ERROR_NONE] = NULL,
	    [AGENT_ERROR_INVALID_REQUEST] = "invalid_request",
	    [AGENT_ERROR_UNSUPPORTED_LANGUAGE] = "unsupported_language",
	    [AGENT_ERROR_UNSUPPORTED_POLICY] = "unsupported_policy",
	    [AGENT_ERROR_SETUP_FAILED] = "setup_failed",
	};

	return k < ELEMENTSOF(names) ? names[k] : NULL;
}

struct agent_request *agent_request_free(struct agent_request *r)
{
	if (!r)
		return NULL;
	free(r->code);
	for (size_t i = 0; i < r->argc; i++)
		free(r->argv[i]);
	free(r->argv);
	free(r->stdin_data);
	free(r->input);
	for (size_t i = 0; i < r->n_env; i++) {
		free(r->env[i].name);
		free(r->env[i].value);
	}
	free(r->env);
	free(r->memory);
	for (size_t i = 0; i < r->n_files; i++) {
		free(r->files[i].path);
		free(r->files[i].data);
	}
	free(r->files);
	free(r->policy_json);
	free(r->policy_path);
	free(r->workspace);
	free(r);
	return NULL;
}

/* A string value without NUL bytes (json-c keeps them; C strings would cut them), copied. */
static int get_string(struct json_object *v, const char *field, size_t max, char **ret,
		      size_t *ret_len, struct al_error *err)
{
	const char *s;
	size_t len;

	if (!json_object_is_type(v, json_type_string))
		return al_error_set(err, -EINVAL, "%s: must be a string", field);
	s = json_object_get_string(v);
	len = (size_t)json_object_get_string_len(v);
	if (len > max)
		return al_error_set(err, -EINVAL, "%s: longer than %zu bytes", field, max);
	if (!ret_len && memchr(s, '\0', len))
		return al_error_set(err, -EINVAL, "%s: contains a NUL byte", field);
	*ret = malloc(len + 1);
	if (!*ret)
		return -ENOMEM;
	memcpy(*ret, s, len);
	(*ret)[len] = '\0';
	if (ret_len)
		*ret_len = len;
	return 0;
}

static int parse_language(struct agent_request *r, struct json_object *v, struct al_error *err)
{
	const char *s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;

	if (!s)
		return al_error_set(err, -EINVAL, "language: must be a string");
	if ((size_t)json_object_get_string_len(v) != strlen(s))
		return al_error_set(err, -EINVAL, "language: contains a NUL byte");
	if (agent_language_from_string(s, &r->language) < 0)
		return al_error_set(
		    err, -EINVAL,
		    "language: \"%.64s\" is not one of command, python, javascript, "
		    "typescript, rust, shell, wasm",
		    s);
	return 0;
}

static int parse_argv(struct agent_request *r, struct json_object *v, struct al_error *err)
{
	size_t n;
	int q;

	if (!json_object_is_type(v, json_type_array))
		return al_error_set(err, -EINVAL, "argv: must be an array of strings");
	n = json_object_array_length(v);
	if (n > AGENT_ARGV_MAX)
		return al_error_set(err, -EINVAL, "argv: more than %d entries", AGENT_ARGV_MAX);
	r->argv = calloc(n + 1, sizeof(*r->argv));
	if (!r->argv)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		char field[32];

		(void)snprintf(field, sizeof(field), "argv[%zu]", i);
		q = get_string(json_object_array_get_idx(v, i), field, STRING_MAX, &r->argv[i],
			       NULL, err);
		if (q < 0)
			return q;
		r->argc++;
	}
	return 0;
}

/* Seconds (a number) or a duration string ("30s", "5m"). */
static int parse_timeout(struct agent_request *r, struct json_object *v, struct al_error *err)
{
	uint64_t usec;

	if (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)) {
		double d = json_object_get_double(v);

		if (!isfinite(d) || d <= 0 || d * 1e6 > (double)AGENT_TIMEOUT_MAX_USEC)
			return al_error_set(err, -EINVAL,
					    "timeout: must be more than 0 and at most 24h");
		usec = (uint64_t)(d * 1e6);
	} else if (json_object_is_type(v, json_type_string)) {
		if ((size_t)json_object_get_string_len(v) != strlen(json_object_get_string(v)) ||
		    al_parse_duration(json_object_get_string(v), &usec) < 0)
			return al_error_set(err, -EINVAL,
					    "timeout: \"%.64s\" is not a duration (e.g. 30s, 5m)",
					    json_object_get_string(v));
	} else {
		return al_error_set(err, -EINVAL,
				    "timeout: must be seconds (a number) or a duration string");
	}
	if (usec == 0 || usec > AGENT_TIMEOUT_MAX_USEC)
		return al_error_set(err, -EINVAL, "timeout: must be more than 0 and at most 24h");
	r->timeout_usec = usec;
	return 0;
}

static int parse_memory(struct agent_request *r, struct json_object *v, struct al_error *err)
{
	int q;

	if (json_object_is_type(v, json_type_int)) {
		int64_t b = json_object_get_int64(v);

		if (b <= 0)
			return al_error_set(err, -EINVAL, "memory: must be a positive size");
		return asprintf(&r->memory, "%lld", (long long)b) < 0 ? -ENOMEM : 0;
	}
	q = get_string(v, "memory", 64, &r->memory, NULL, err);
	if (q >= 0 && r->memory[0] == '\0')
		return al_error_set(err, -EINVAL, "memory: empty");
	return q;
}

static int parse_env(struct agent_request *r, struct json_object *v, struct al_error *err)
{
	size_t n;
	int q;

	if (!json_object_is_type(v, json_type_object))
		return al_error_set(err, -EINVAL, "env: must be an object of strings");
	n = (size_t)json_object_object_length(v);
	r->env = calloc(n, sizeof(*r->env));
	if (!r->env)
		return n == 0 ? 0 : -ENOMEM;
	json_object_object_foreach(v, key, val)
	{
		struct agent_env_var *e = &r->env[r->n_env];
		char field[64];

		(void)snprintf(field, sizeof(field), "env.%.40s", key);
		q = policy_env_name_check("env", key, err);
		if (q < 0)
			return q;
		if (startswith(key, "AIRLOCK_"))
			return al_error_set(err, -EINVAL, "%s: AIRLOCK_* variables are airlock's",
					    field);
		e->name = strdup(key);
		if (!e->name)
			return -ENOMEM;
		r->n_env++;
		q = get_string(val, field, STRING_MAX, &e->value, NULL, err);
		if (q < 0)
			return q;
	}
	return 0;
}

/* A workspace path: relative, no empty, "." or ".." component. */
bool agent_path_is_relative(const char *p)
{
	if (*p == '\0' || *p == '/')
		return false;
	for (;;) {
		size_t n = strcspn(p, "/");

		if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		if (p[n] == '\0')
			return true;
		p += n + 1;
	}
}

static int base64_value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* Strict standard base64 (padding required, no blanks) into a malloc'd buffer. */
static int base64_decode(const char *s, size_t len, char **ret, size_t *ret_len)
{
	_cleanup_free_ char *out = NULL;
	size_t o = 0;

	if (len % 4 != 0)
		return -EINVAL;
	out = malloc(len / 4 * 3 + 1);
	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < len; i += 4) {
		int v[4];
		bool last = i + 4 == len;

		for (int k = 0; k < 4; k++)
			v[k] = base64_value(s[i + k]);
		if (v[0] < 0 || v[1] < 0)
			return -EINVAL;
		if (last && s[i + 2] == '=' && s[i + 3] == '=') {
			if (v[1] & 0xf)
				return -EINVAL;
			out[o++] = (char)(v[0] << 2 | v[1] >> 4);
			break;
		}
		if (v[2] < 0)
			return -EINVAL;
		if (last && s[i + 3] == '=') {
			if (v[2] & 0x3)
				return -EINVAL;
			out[o++] = (char)(v[0] << 2 | v[1] >> 4);
			out[o++] = (char)((v[1] & 0xf) << 4 | v[2] >> 2);
			break;
		}
		if (v[3] < 0)
			return -EINVAL;
		out[o++] = (char)(v[0] << 2 | v[1] >> 4);
		out[o++] = (char)((v[1] & 0xf) << 4 | v[2] >> 2);
		out[o++] = (char)((v[2] & 0x3) << 6 | v[3]);
	}
	*ret_len = o;
	*ret = TAKE_PTR(out);
	return 0;
}

static int parse_file(struct agent_file *f, size_t i, struct json_object *v, struct al_error *err)
{
	struct json_object *content = NULL, *b64 = NULL, *path = NULL, *exe = NULL;
	_cleanup_free_ char *raw = NULL;
	size_t len;
	int q;

	if (!json_object_is_type(v, json_type_object))
		return al_error_set(err, -EINVAL, "files[%zu]: must be an object", i);
	json_object_object_foreach(v, key, val)
	{
		if (streq(key, "path"))
			path = val;
		else if (streq(key, "content"))
			content = val;
		else if (streq(key, "base64"))
			b64 = val;
		else if (streq(key, "executable"))
			exe = val;
		else
			return al_error_set(err, -EINVAL, "files[%zu].%.40s: unknown field", i,
					    key);
	}
	if (!path)
		return al_error_set(err, -EINVAL, "files[%zu].path: required", i);
	q = get_string(path, "files[].path", 4096, &f->path, NULL, err);
	if (q < 0)
		return q;
	if (!agent_path_is_relative(f->path))
		return al_error_set(err, -EINVAL,
				    "files[%zu].path: \"%.64s\" is not a relative path without "
				    "\".\" or \"..\"",
				    i, f->path);
	if (!content == !b64)
		return al_error_set(err, -EINVAL, "files[%zu]: needs one of content and base64", i);
	if (exe && !json_object_is_type(exe, json_type_boolean))
		return al_error_set(err, -EINVAL, "files[%zu].executable: must be a boolean", i);
	f->executable = exe && json_object_get_boolean(exe);
	if (content)
		return get_string(content, "files[].content", STRING_MAX, &f->data, &f->len, err);
	q = get_string(b64, "files[].base64", STRING_MAX, &raw, &len, err);
	if (q < 0)
		return q;
	q = base64_decode(raw, len, &f->data, &f->len);
	if (q == -EINVAL)
		return al_error_set(err, q, "files[%zu].base64: not valid base64", i);
	return q;
}

static int parse_files(struct agent_request *r, struct json_object *v, struct al_error *err)
{
	size_t n;
	int q;

	if (!json_object_is_type(v, json_type_array))
		return al_error_set(err, -EINVAL, "files: must be an array");
	n = json_object_array_length(v);
	if (n > AGENT_FILES_MAX)
		return al_error_set(err, -EINVAL, "files: more than %d entries", AGENT_FILES_MAX);
	r->files = calloc(n, sizeof(*r->files));
	if (!r->files)
		return n == 0 ? 0 : -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		q = parse_file(&r->files[i], i, json_object_array_get_idx(v, i), err);
		r->n_files++;
		if (q < 0)
			return q;
		for (size_t j = 0; j < i; j++) {
			const char *a = r->files[j].path, *b = r->files[i].path;
			size_t la = strlen(a), lb = strlen(b);

			if (streq(a, b))
				return al_error_set(err, -EINVAL,
						    "files[%zu].path: already files[%zu]", i, j);
			/* One would have to be a folder for the other. */
			if ((la < lb && strncmp(a, b, la) == 0 && b[la] == '/') ||
			    (lb < la && strncmp(a, b, lb) == 0 && a[lb] == '/'))
				return al_error_set(err, -EINVAL,
						    "files[%zu].path: files[%zu] is a file, not a "
						    "folder, on its way",
						    i, j);
		}
	}
	return 0;
}

static int parse_policy(struct agent_request *r, struct json_object *v, struct al_error *err)
{
	if (json_object_is_type(v, json_type_string))
		return get_string(v, "policy", 4096, &r->policy_path, NULL, err);
	if (!json_object_is_type(v, json_type_object))
		return al_error_set(err, -EINVAL, "policy: must be an object or a path");
	return al_json_to_string(v, &r->policy_json);
}

/* json-c takes NaN and Infinity, which JSON does not have and the program's parser may refuse. */
static bool is_finite_json(struct json_object *v, int depth)
{
	if (depth > REQUEST_DEPTH_MAX)
		return false;
	if (json_object_is_type(v, json_type_double))
		return isfinite(json_object_get_double(v));
	if (json_object_is_type(v, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(v); i++)
			if (!is_finite_json(json_object_array_get_idx(v, i), depth + 1))
				return false;
	} else if (json_object_is_type(v, json_type_object)) {
		json_object_object_foreach(v, key, val)
		{
			(void)key;
			if (!is_finite_json(val, depth + 1))
				return false;
		}
	}
	return true;
}

static int parse_field(struct agent_request *r, const char *key, struct json_object *v,
		       struct al_error *err)
{
	if (streq(key, "language"))
		return parse_language(r, v, err);
	if (streq(key, "code"))
		return get_string(v, "code", STRING_MAX, &r->code, &r->code_len, err);
	if (streq(key, "argv"))
		return parse_argv(r, v, err);
	if (streq(key, "stdin"))
		return get_string(v, "stdin", STRING_MAX, &r->stdin_data, &r->stdin_len, err);
	if (streq(key, "input")) {
		if (!is_finite_json(v, 0))
			return al_error_set(err, -EINVAL,
					    "input: NaN and Infinity are not JSON numbers");
		return al_json_to_string(v, &r->input);
	}
	if (streq(key, "env"))
		return parse_env(r, v, err);
	if (streq(key, "timeout"))
		return parse_timeout(r, v, err);
	if (streq(key, "memory"))
		return parse_memory(r, v, err);
	if (streq(key, "files"))
		return parse_files(r, v, err);
	if (streq(key, "policy"))
		return parse_policy(r, v, err);
	if (streq(key, "workspace"))
		return get_string(v, "workspace", 4096, &r->workspace, NULL, err);
	return al_error_set(err, -EINVAL, "%.64s: unknown field", key);
}

/* A wasm request's code is its module in base64: decoded in place. */
static int decode_module(struct agent_request *r, struct al_error *err)
{
	char *module;
	size_t len;
	int q;

	q = base64_decode(r->code, r->code_len, &module, &len);
	if (q == -ENOMEM)
		return q;
	if (q < 0)
		return al_error_set(err, -EINVAL,
				    "code: for language wasm, the module in standard base64");
	if (len < 8 || memcmp(module, "\0asm\1\0\0\0", 8) != 0) {
		free(module);
		return al_error_set(err, -EINVAL,
				    "code: not a WebAssembly module (version 1 binary format)");
	}
	module[len] = '\0'; /* as every code is (base64_decode() left room) */
	free(r->code);
	r->code = module;
	r->code_len = len;
	return 0;
}

static int check_request(struct agent_request *r, bool has_language, struct al_error *err)
{
	if (!has_language)
		return al_error_set(err, -EINVAL, "language: required");
	if (r->timeout_usec == 0)
		return al_error_set(err, -EINVAL, "timeout: required (seconds, or e.g. \"30s\")");
	if (r->language == AGENT_LANGUAGE_COMMAND) {
		if (r->code)
			return al_error_set(err, -EINVAL,
					    "code: not for language command (use argv)");
		if (r->argc == 0 || r->argv[0][0] == '\0')
			return al_error_set(err, -EINVAL,
					    "argv: required for language command, with a "
					    "non-empty argv[0]");
	} else if (!r->code) {
		return al_error_set(err, -EINVAL, "code: required for language %s",
				    agent_language_to_string(r->language));
	} else if (r->language == AGENT_LANGUAGE_WASM) {
		return decode_module(r, err);
	} else if (memchr(r->code, '\0', r->code_len)) {
		return al_error_set(err, -EINVAL, "code: contains a NUL byte");
	}
	return 0;
}

int agent_request_parse(const char *buf, size_t len, struct agent_request **ret,
			struct al_error *err)
{
	_cleanup_(agent_request_freep) struct agent_request *r = NULL;
	_cleanup_json_ struct json_object *root = NULL;
	bool has_language = false;
	int q;

	if (len > AGENT_REQUEST_MAX)
		return al_error_set(err, -EFBIG, "the request is larger than %d bytes",
				    AGENT_REQUEST_MAX);
	q = al_json_parse(buf, len, REQUEST_DEPTH_MAX, &root, err);
	if (q < 0)
		return q;
	if (!json_object_is_type(root, json_type_object))
		return al_error_set(err, -EINVAL, "a request is a JSON object");
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	json_object_object_foreach(root, key, v)
	{
		/* json-c keeps the last of repeated keys: no field is set twice here anyway. */
		q = parse_field(r, key, v, err);
		if (q < 0)
			return q;
		has_language = has_language || streq(key, "language");
	}
	q = check_request(r, has_language, err);
	if (q < 0)
		return q;
	if (!r->argv) {
		r->argv = calloc(1, sizeof(*r->argv));
		if (!r->argv)
			return -ENOMEM;
	}
	*ret = TAKE_PTR(r);
	return 0;
}
