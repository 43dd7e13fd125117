/* Fuzzes the exec request parser (agent_request_parse), which reads what an agent framework (and
 * so, possibly, a model) wrote. Besides "no crash, no leak", checks:
 *  - a refused request says why: err.code is the return code, err.msg one non-empty line, and
 *    *ret is left alone;
 *  - an accepted request keeps agent.h's promises: argv NULL-terminated after argc entries, a
 *    known language, a timeout in (0, 24h], file paths relative without empty, "." or ".."
 *    components and each given once, no AIRLOCK_* variable, a command with a non-empty argv[0]
 *    and no code, wasm with a module's first bytes, any other language with code without NUL
 *    bytes; "input" and an inline "policy"
 *    serialized as JSON that parses;
 *  - an accepted request written back as JSON (timeout in microseconds, file data as base64)
 *    parses to the same request: nothing is lost or changed on the way, NUL bytes included. */

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "agent/agent.h"
#include "common/json-util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define JSON_DEPTH_MAX 64

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "exec request: %s\n", what);
		abort();
	}
}

static void check_refusal(int r, const struct agent_request *req, const struct al_error *err)
{
	check(!req, "*ret set on error");
	if (r == -ENOMEM)
		return;
	if (err->code != r || err->msg[0] == '\0' || strchr(err->msg, '\n')) {
		fprintf(stderr, "refused with %d but err = {%d, \"%s\"}\n", r, err->code, err->msg);
		abort();
	}
}

/* Written apart from the parser's own check: split on '/', look at each component. */
static bool is_clean_relative_path(const char *path)
{
	size_t len = strlen(path);

	if (len == 0 || path[0] == '/' || path[len - 1] == '/' || strstr(path, "//"))
		return false;
	for (const char *c = path; c;) {
		const char *slash = strchr(c, '/');
		size_t n = slash ? (size_t)(slash - c) : strlen(c);

		if (strncmp(c, ".", n) == 0 && n == 1)
			return false;
		if (strncmp(c, "..", n) == 0 && n == 2)
			return false;
		c = slash ? slash + 1 : NULL;
	}
	return true;
}

/* Parses one JSON value of any type into *ret (NULL for null): inside an array, since json-c
 * cannot tell where a scalar at the very end of its input ends. -EINVAL when s is not JSON. */
static int parse_value(const char *s, struct json_object **ret)
{
	_cleanup_json_ struct json_object *array = NULL;
	_cleanup_free_ char *wrapped = NULL;
	struct al_error err = {};
	int r;

	if (asprintf(&wrapped, "[%s]", s) < 0)
		return -ENOMEM;
	r = al_json_parse(wrapped, strlen(wrapped), JSON_DEPTH_MAX + 1, &array, &err);
	if (r < 0)
		return r;
	if (json_object_array_length(array) != 1)
		return -EINVAL;
	*ret = json_object_get(json_object_array_get_idx(array, 0));
	return 0;
}

static bool is_json(const char *s)
{
	_cleanup_json_ struct json_object *o = NULL;

	return parse_value(s, &o) == 0;
}

static void check_request(const struct agent_request *r)
{
	check(r->language < AGENT_LANGUAGE_MAX, "language out of range");
	check(agent_language_to_string(r->language) != NULL, "language without a name");
	check(r->argv != NULL, "argv is NULL");
	check(r->argc <= AGENT_ARGV_MAX, "too many argv entries");
	for (size_t i = 0; i < r->argc; i++)
		check(r->argv[i] != NULL, "NULL inside argv");
	check(r->argv[r->argc] == NULL, "argv not NULL-terminated after argc entries");
	check(r->timeout_usec > 0 && r->timeout_usec <= AGENT_TIMEOUT_MAX_USEC,
	      "timeout out of (0, 24h]");
	if (r->language == AGENT_LANGUAGE_COMMAND) {
		check(r->argc > 0 && r->argv[0][0] != '\0', "command without argv[0]");
		check(r->code == NULL, "command with code");
	} else {
		check(r->code != NULL, "no code");
		if (r->language == AGENT_LANGUAGE_WASM)
			check(r->code_len >= 8 && memcmp(r->code, "\0asm\1\0\0\0", 8) == 0,
			      "wasm code that is not a module");
		else
			check(memchr(r->code, '\0', r->code_len) == NULL, "NUL byte in code");
		check(r->code[r->code_len] == '\0', "code not NUL-terminated");
	}
	if (r->stdin_data)
		check(r->stdin_data[r->stdin_len] == '\0', "stdin not NUL-terminated");
	for (size_t i = 0; i < r->n_env; i++) {
		check(r->env[i].name && r->env[i].value, "NULL in env");
		check(strncmp(r->env[i].name, "AIRLOCK_", 8) != 0, "AIRLOCK_* variable in env");
		for (size_t j = 0; j < i; j++)
			check(strcmp(r->env[i].name, r->env[j].name) != 0, "env name twice");
	}
	check(r->n_files <= AGENT_FILES_MAX, "too many files");
	for (size_t i = 0; i < r->n_files; i++) {
		check(r->files[i].path != NULL, "file without a path");
		check(r->files[i].data != NULL || r->files[i].len == 0, "file data NULL");
		check(is_clean_relative_path(r->files[i].path), "file path not clean and relative");
		for (size_t j = 0; j < i; j++)
			check(strcmp(r->files[i].path, r->files[j].path) != 0, "file path twice");
	}
	check(!(r->policy_json && r->policy_path), "policy both inline and a path");
	if (r->policy_json)
		check(r->policy_json[0] == '{' && is_json(r->policy_json), "policy not an object");
	if (r->input)
		check(is_json(r->input), "input not JSON");
}

static char *base64_encode(const char *data, size_t len)
{
	static const char alphabet[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *d = (const unsigned char *)data;
	char *out = malloc((len + 2) / 3 * 4 + 1), *o = out;

	if (!out)
		return NULL;
	for (size_t i = 0; i < len; i += 3) {
		unsigned v = (unsigned)d[i] << 16;

		if (i + 1 < len)
			v |= (unsigned)d[i + 1] << 8;
		if (i + 2 < len)
			v |= d[i + 2];
		*o++ = alphabet[v >> 18 & 63];
		*o++ = alphabet[v >> 12 & 63];
		*o++ = i + 1 < len ? alphabet[v >> 6 & 63] : '=';
		*o++ = i + 2 < len ? alphabet[v & 63] : '=';
	}
	*o = '\0';
	return out;
}

/* Adds key:value (value may be the JSON null, i.e. NULL, when null is true). */
static int add(struct json_object *o, const char *key, struct json_object *v, bool null)
{
	if (!v && !null)
		return -ENOMEM;
	return json_object_object_add(o, key, v) < 0 ? -ENOMEM : 0;
}

static int add_string(struct json_object *o, const char *key, const char *s, size_t len)
{
	return add(o, key, json_object_new_string_len(s, (int)len), false);
}

static int add_parsed(struct json_object *o, const char *key, const char *json)
{
	struct json_object *v = NULL;
	int r;

	r = parse_value(json, &v);
	if (r < 0)
		return r;
	return add(o, key, v, true);
}

static int add_files(struct json_object *o, const struct agent_request *req)
{
	struct json_object *files = json_object_new_array();
	int r;

	r = add(o, "files", files, false);
	for (size_t i = 0; r >= 0 && i < req->n_files; i++) {
		_cleanup_free_ char *b64 = base64_encode(req->files[i].data, req->files[i].len);
		struct json_object *f = json_object_new_object();

		if (!f || !b64 || json_object_array_add(files, f) < 0) {
			(void)json_object_put(f);
			return -ENOMEM;
		}
		r = add_string(f, "path", req->files[i].path, strlen(req->files[i].path));
		if (r >= 0)
			r = add_string(f, "base64", b64, strlen(b64));
		if (r >= 0 && req->files[i].executable)
			r = add(f, "executable", json_object_new_boolean(1), false);
	}
	return r;
}

/* The request as JSON, in the forms the parser reads back exactly. */
static int request_to_json(const struct agent_request *req, char **ret)
{
	_cleanup_json_ struct json_object *o = json_object_new_object();
	const char *lang = agent_language_to_string(req->language);
	char timeout[32];
	int r;

	if (!o)
		return -ENOMEM;
	(void)snprintf(timeout, sizeof(timeout), "%" PRIu64 "us", req->timeout_usec);
	r = add_string(o, "language", lang, strlen(lang));
	if (r >= 0)
		r = add_string(o, "timeout", timeout, strlen(timeout));
	if (r >= 0 && req->code && req->language == AGENT_LANGUAGE_WASM) {
		_cleanup_free_ char *b64 = base64_encode(req->code, req->code_len);

		r = b64 ? add_string(o, "code", b64, strlen(b64)) : -ENOMEM;
	} else if (r >= 0 && req->code) {
		r = add_string(o, "code", req->code, req->code_len);
	}
	if (r >= 0 && req->argc > 0) {
		struct json_object *argv = json_object_new_array();

		r = add(o, "argv", argv, false);
		for (size_t i = 0; r >= 0 && i < req->argc; i++) {
			struct json_object *a =
			    json_object_new_string_len(req->argv[i], (int)strlen(req->argv[i]));

			if (!a || json_object_array_add(argv, a) < 0) {
				(void)json_object_put(a);
				r = -ENOMEM;
			}
		}
	}
	if (r >= 0 && req->stdin_data)
		r = add_string(o, "stdin", req->stdin_data, req->stdin_len);
	if (r >= 0 && req->input)
		r = add_parsed(o, "input", req->input);
	if (r >= 0 && req->n_env > 0) {
		struct json_object *env = json_object_new_object();

		r = add(o, "env", env, false);
		for (size_t i = 0; r >= 0 && i < req->n_env; i++)
			r = add_string(env, req->env[i].name, req->env[i].value,
				       strlen(req->env[i].value));
	}
	if (r >= 0 && req->memory)
		r = add_string(o, "memory", req->memory, strlen(req->memory));
	if (r >= 0 && req->n_files > 0)
		r = add_files(o, req);
	if (r >= 0 && req->policy_json)
		r = add_parsed(o, "policy", req->policy_json);
	if (r >= 0 && req->policy_path)
		r = add_string(o, "policy", req->policy_path, strlen(req->policy_path));
	if (r >= 0 && req->workspace)
		r = add_string(o, "workspace", req->workspace, strlen(req->workspace));
	if (r < 0)
		return r;
	return al_json_to_string(o, ret);
}

static bool same_string(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static bool same_bytes(const char *a, size_t a_len, const char *b, size_t b_len)
{
	return (!a && !b) || (a && b && a_len == b_len && memcmp(a, b, a_len) == 0);
}

static void check_same(const struct agent_request *a, const struct agent_request *b)
{
	check(a->language == b->language, "round trip: language");
	check(a->timeout_usec == b->timeout_usec, "round trip: timeout");
	check(same_bytes(a->code, a->code_len, b->code, b->code_len), "round trip: code");
	check(a->argc == b->argc, "round trip: argc");
	for (size_t i = 0; i < a->argc; i++)
		check(strcmp(a->argv[i], b->argv[i]) == 0, "round trip: argv");
	check(same_bytes(a->stdin_data, a->stdin_len, b->stdin_data, b->stdin_len),
	      "round trip: stdin");
	check(same_string(a->input, b->input), "round trip: input");
	check(a->n_env == b->n_env, "round trip: number of env variables");
	for (size_t i = 0; i < a->n_env; i++)
		check(strcmp(a->env[i].name, b->env[i].name) == 0 &&
			  strcmp(a->env[i].value, b->env[i].value) == 0,
		      "round trip: env");
	check(same_string(a->memory, b->memory), "round trip: memory");
	check(a->n_files == b->n_files, "round trip: number of files");
	for (size_t i = 0; i < a->n_files; i++)
		check(strcmp(a->files[i].path, b->files[i].path) == 0 &&
			  same_bytes(a->files[i].data, a->files[i].len, b->files[i].data,
				     b->files[i].len) &&
			  a->files[i].executable == b->files[i].executable,
		      "round trip: files");
	check(same_string(a->policy_json, b->policy_json), "round trip: inline policy");
	check(same_string(a->policy_path, b->policy_path), "round trip: policy path");
	check(same_string(a->workspace, b->workspace), "round trip: workspace");
}

static void check_round_trip(const struct agent_request *req)
{
	_cleanup_(agent_request_freep) struct agent_request *again = NULL;
	_cleanup_free_ char *json = NULL;
	struct al_error err = {};
	int r;

	if (request_to_json(req, &json) < 0)
		return; /* -ENOMEM */
	r = agent_request_parse(json, strlen(json), &again, &err);
	if (r == -ENOMEM)
		return;
	if (r < 0) {
		fprintf(stderr, "written back, the request is refused: %s\n%s\n", err.msg, json);
		abort();
	}
	check_request(again);
	check_same(req, again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	_cleanup_(agent_request_freep) struct agent_request *req = NULL;
	struct al_error err = {};
	int r;

	r = agent_request_parse((const char *)data, size, &req, &err);
	if (r < 0) {
		check_refusal(r, req, &err);
		return 0;
	}
	check(r == 0 && req != NULL, "accepted without a request");
	check_request(req);
	check_round_trip(req);
	return 0;
}
