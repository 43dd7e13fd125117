/* request.c: the exec request, JSON to struct agent_request.
 *
 * Requests in the tests are written with ' where JSON wants ", so that they stay readable as C
 * string literals: {'language': 'python'}. No test request needs a literal ' character. */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/agent.h"

#define SECOND_USEC 1000000ULL

static char *test_json(const char *quoted)
{
	char *s = strdup(quoted);

	if (!s)
		abort();
	for (char *c = s; *c; c++)
		if (*c == '\'')
			*c = '"';
	return s;
}

/* Parses a request that must parse; fails the test at the caller's line otherwise. */
static struct agent_request *parse_at(const char *quoted, const char *file, int line)
{
	_cleanup_free_ char *json = test_json(quoted);
	struct agent_request *r = NULL;
	struct al_error err = {};
	int q;

	q = agent_request_parse(json, strlen(json), &r, &err);
	if (q < 0 || !r) {
		print_error("agent_request_parse(%s) = %d: %s\n", json, q, err.msg);
		_fail(file, line);
	}
	return r;
}
#define parse(quoted) parse_at((quoted), __FILE__, __LINE__)

/* Parses a request that must be refused with -EINVAL and a message starting with prefix (the
 * field), leaving *ret alone. */
static void parse_fails_at(const char *quoted, const char *prefix, const char *file, int line)
{
	_cleanup_free_ char *json = test_json(quoted);
	struct agent_request *r = NULL;
	struct al_error err = {};
	int q;

	q = agent_request_parse(json, strlen(json), &r, &err);
	if (q != -EINVAL || err.code != -EINVAL || r ||
	    strncmp(err.msg, prefix, strlen(prefix)) != 0) {
		print_error("agent_request_parse(%s) = %d, err {%d, \"%s\"}; expected -EINVAL "
			    "\"%s...\"\n",
			    json, q, err.code, err.msg, prefix);
		agent_request_free(r);
		_fail(file, line);
	}
}
#define parse_fails(quoted, prefix) parse_fails_at((quoted), (prefix), __FILE__, __LINE__)

/* A python request with more fields (they go in before the closing brace). */
#define PYTHON(more) "{'language': 'python', 'code': 'print(1)', 'timeout': 30" more "}"

static void test_minimal_python_request_parses(void **state)
{
	_cleanup_(agent_request_freep) struct agent_request *r =
	    parse("{'language': 'python', 'code': 'print(1)', 'timeout': 30}");

	(void)state;
	assert_int_equal(r->language, AGENT_LANGUAGE_PYTHON);
	assert_string_equal(r->code, "print(1)");
	assert_int_equal(r->code_len, 8);
	assert_int_equal(r->timeout_usec, 30 * SECOND_USEC);
	/* argv is always NULL-terminated, even without "argv". */
	assert_non_null(r->argv);
	assert_int_equal(r->argc, 0);
	assert_null(r->argv[0]);
	assert_null(r->stdin_data);
	assert_null(r->input);
	assert_int_equal(r->n_env, 0);
	assert_null(r->memory);
	assert_int_equal(r->n_files, 0);
	assert_null(r->policy_json);
	assert_null(r->policy_path);
	assert_null(r->workspace);
}

static void test_every_language_parses_by_name(void **state)
{
	static const struct {
		const char *json;
		enum agent_language language;
	} cases[] = {
	    {"{'language': 'python', 'code': 'x', 'timeout': 1}", AGENT_LANGUAGE_PYTHON},
	    {"{'language': 'javascript', 'code': 'x', 'timeout': 1}", AGENT_LANGUAGE_JAVASCRIPT},
	    {"{'language': 'typescript', 'code': 'x', 'timeout': 1}", AGENT_LANGUAGE_TYPESCRIPT},
	    {"{'language': 'rust', 'code': 'x', 'timeout': 1}", AGENT_LANGUAGE_RUST},
	    {"{'language': 'shell', 'code': 'x', 'timeout': 1}", AGENT_LANGUAGE_SHELL},
	    {"{'language': 'command', 'argv': ['x'], 'timeout': 1}", AGENT_LANGUAGE_COMMAND},
	    {"{'language': 'wasm', 'code': 'AGFzbQEAAAA=', 'timeout': 1}", AGENT_LANGUAGE_WASM},
	};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		_cleanup_(agent_request_freep) struct agent_request *r = parse(cases[i].json);

		assert_int_equal(r->language, cases[i].language);
	}
}

/* A wasm request's code is its module in base64: decoded, NUL bytes and all; what is not base64
 * or not a module (version 1) is refused naming code. */
static void test_wasm_code_is_a_module_in_base64(void **state)
{
	/* "\0asm", version 1, then an empty custom section "x". */
	_cleanup_(agent_request_freep) struct agent_request *r =
	    parse("{'language': 'wasm', 'code': 'AGFzbQEAAAAAAgF4', 'timeout': 1}");

	(void)state;
	assert_int_equal(r->code_len, 12);
	assert_memory_equal(r->code, "\0asm\1\0\0\0\0\2\1x", 12);
	parse_fails("{'language': 'wasm', 'code': '(module)', 'timeout': 1}",
		    "code: for language wasm, the module in standard base64");
	parse_fails("{'language': 'wasm', 'code': 'aGVsbG8gd29ybGQ=', 'timeout': 1}",
		    "code: not a WebAssembly module");
	/* Version 2 (or a text module's first bytes) is not what runs here. */
	parse_fails("{'language': 'wasm', 'code': 'AGFzbQIAAAA=', 'timeout': 1}",
		    "code: not a WebAssembly module");
	parse_fails("{'language': 'wasm', 'code': '', 'timeout': 1}",
		    "code: not a WebAssembly module");
}

static void test_free_accepts_null(void **state)
{
	(void)state;
	assert_null(agent_request_free(NULL));
}

static void test_timeout_missing_is_refused_naming_timeout(void **state)
{
	(void)state;
	parse_fails("{'language': 'python', 'code': 'print(1)'}", "timeout: required");
	parse_fails("{'language': 'command', 'argv': ['ls']}", "timeout: required");
}

static void test_timeout_as_seconds_number(void **state)
{
	_cleanup_(agent_request_freep) struct agent_request *whole =
	    parse("{'language': 'shell', 'code': 'x', 'timeout': 30}");
	_cleanup_(agent_request_freep) struct agent_request *fraction =
	    parse("{'language': 'shell', 'code': 'x', 'timeout': 1.5}");
	_cleanup_(agent_request_freep) struct agent_request *day =
	    parse("{'language': 'shell', 'code': 'x', 'timeout': 86400}");

	(void)state;
	assert_int_equal(whole->timeout_usec, 30 * SECOND_USEC);
	assert_int_equal(fraction->timeout_usec, 1500000);
	assert_int_equal(day->timeout_usec, AGENT_TIMEOUT_MAX_USEC);
}

static void test_timeout_as_duration_string(void **state)
{
	_cleanup_(agent_request_freep) struct agent_request *s =
	    parse("{'language': 'shell', 'code': 'x', 'timeout': '30s'}");
	_cleanup_(agent_request_freep) struct agent_request *ms =
	    parse("{'language': 'shell', 'code': 'x', 'timeout': '1m30s'}");
	_cleanup_(agent_request_freep) struct agent_request *day =
	    parse("{'language': 'shell', 'code': 'x', 'timeout': '24h'}");
	_cleanup_(agent_request_freep) struct agent_request *us =
	    parse("{'language': 'shell', 'code': 'x', 'timeout': '1us'}");

	(void)state;
	assert_int_equal(s->timeout_usec, 30 * SECOND_USEC);
	assert_int_equal(ms->timeout_usec, 90 * SECOND_USEC);
	assert_int_equal(day->timeout_usec, AGENT_TIMEOUT_MAX_USEC);
	assert_int_equal(us->timeout_usec, 1);
}

static void test_timeout_zero_negative_or_over_a_day_is_refused(void **state)
{
	(void)state;
	parse_fails("{'language': 'shell', 'code': 'x', 'timeout': 0}", "timeout:");
	parse_fails("{'language': 'shell', 'code': 'x', 'timeout': 0.0}", "timeout:");
	parse_fails("{'language': 'shell', 'code': 'x', 'timeout': -1}", "timeout:");
	parse_fails("{'language': 'shell', 'code': 'x', 'timeout': -0.5}", "timeout:");
	parse_fails("{'language': 'shell', 'code': 'x', 'timeout': 86401}", "timeout:");
	parse_fails("{'language': 'shell', 'code': 'x', 'timeout': 86400.5}", "timeout:");
	parse_fails("{'language': 'shell', 'code': 'x', 'timeout': 1e300}", "timeout:");
	/* Less than a microsecond is no time at all. */
	parse_fails("{'language': 'shell', 'code': 'x', 'timeout': 1e-9}", "timeout:");
	parse_fails("{'language': 'shell', 'code': 'x', 'timeout': '0s'}", "timeout:");
	parse_fails("{'language': 'shell', 'code': 'x', 'timeout': '24h1s'}", "timeout:");
	parse_fails("{'language': 'shell', 'code': 'x', 'timeout': '2d'}", "timeout:");
}

static void test_timeout_of_another_form_is_refused(void **state)
{
	(void)state;
	parse_fails("{'language': 'shell', 'code': 'x', 'timeout': '30'}", "timeout:");
	parse_fails("{'language': 'shell', 'code': 'x', 'timeout': '-30s'}", "timeout:");
	parse_fails("{'language': 'shell', 'code': 'x', 'timeout': 'soon'}", "timeout:");
	parse_fails("{'language': 'shell', 'code': 'x', 'timeout': ''}", "timeout:");
	parse_fails("{'language': 'shell', 'code': 'x', 'timeout': true}", "timeout:");
	parse_fails("{'language': 'shell', 'code': 'x', 'timeout': null}", "timeout:");
	parse_fails("{'language': 'shell', 'code': 'x', 'timeout': [30]}", "timeout:");
}

static void test_unknown_field_is_refused_naming_it(void **state)
{
	(void)state;
	parse_fails(PYTHON(", 'cwd': '/'"), "cwd: unknown field");
	parse_fails(PYTHON(", 'Timeout': 5"), "Timeout: unknown field");
	parse_fails("{'language': 'shell', 'code': 'x', 'timeout': 1, 'files': [{'path': 'a', "
		    "'content': '', 'mode': '0755'}]}",
		    "files[0].mode: unknown field");
}

static void test_language_unknown_is_refused(void **state)
{
	(void)state;
	parse_fails("{'language': 'cobol', 'code': 'x', 'timeout': 1}", "language: \"cobol\"");
	parse_fails("{'language': 'Python', 'code': 'x', 'timeout': 1}", "language: \"Python\"");
	parse_fails("{'language': '', 'code': 'x', 'timeout': 1}", "language:");
	parse_fails("{'language': 1, 'code': 'x', 'timeout': 1}", "language: must be a string");
	parse_fails("{'code': 'x', 'timeout': 1}", "language: required");
}

static void test_command_needs_argv_and_refuses_code(void **state)
{
	_cleanup_(agent_request_freep) struct agent_request *r =
	    parse("{'language': 'command', 'argv': ['ls', '-l', ''], 'timeout': 1}");

	(void)state;
	assert_int_equal(r->argc, 3);
	assert_string_equal(r->argv[0], "ls");
	assert_string_equal(r->argv[1], "-l");
	assert_string_equal(r->argv[2], "");
	assert_null(r->argv[3]);
	assert_null(r->code);
	parse_fails("{'language': 'command', 'timeout': 1}", "argv: required");
	parse_fails("{'language': 'command', 'argv': [], 'timeout': 1}", "argv: required");
	parse_fails("{'language': 'command', 'argv': [''], 'timeout': 1}", "argv: required");
	parse_fails("{'language': 'command', 'argv': ['ls'], 'code': 'ls', 'timeout': 1}",
		    "code: not for language command");
	parse_fails("{'language': 'command', 'argv': 'ls -l', 'timeout': 1}", "argv: must be");
	parse_fails("{'language': 'command', 'argv': ['ls', 1], 'timeout': 1}",
		    "argv[1]: must be a string");
	parse_fails("{'language': 'command', 'argv': ['l\\u0000s'], 'timeout': 1}",
		    "argv[0]: contains a NUL byte");
}

static void test_non_command_needs_code(void **state)
{
	static const char *const languages[] = {"python", "javascript", "typescript",
						"rust",	  "shell",	"wasm"};
	_cleanup_(agent_request_freep) struct agent_request *args =
	    parse("{'language': 'python', 'code': '', 'argv': ['--n', '3'], 'timeout': 1}");

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(languages); i++) {
		char json[128], prefix[64];

		(void)snprintf(json, sizeof(json), "{'language': '%s', 'timeout': 1}",
			       languages[i]);
		(void)snprintf(prefix, sizeof(prefix), "code: required for language %s",
			       languages[i]);
		parse_fails(json, prefix);
	}
	/* Empty code is code; argv are then the program's arguments. */
	assert_string_equal(args->code, "");
	assert_int_equal(args->argc, 2);
	assert_string_equal(args->argv[1], "3");
	assert_null(args->argv[2]);
	parse_fails("{'language': 'python', 'code': 'print(\\u0000)', 'timeout': 1}",
		    "code: contains a NUL byte");
	parse_fails("{'language': 'python', 'code': ['print(1)'], 'timeout': 1}",
		    "code: must be a string");
}

static void test_file_path_absolute_or_with_dot_components_is_refused(void **state)
{
	static const char *const bad[] = {
	    "../x", "/etc/passwd", "a/../b", "a/..", "./a", "a/./b",
	    ".",    "..",	   "",	     "a//b", "a/",  "/",
	};
	static const char *const good[] = {"main.py", "src/lib/util.py", ".hidden", "a..b",
					   "...",     "..a/b."};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		char json[256];

		(void)snprintf(json, sizeof(json),
			       "{'language': 'shell', 'code': 'x', 'timeout': 1, "
			       "'files': [{'path': '%s', 'content': 'x'}]}",
			       bad[i]);
		parse_fails(json, "files[0].path: \"");
	}
	for (size_t i = 0; i < ELEMENTSOF(good); i++) {
		_cleanup_(agent_request_freep) struct agent_request *r = NULL;
		char json[256];

		(void)snprintf(json, sizeof(json),
			       "{'language': 'shell', 'code': 'x', 'timeout': 1, "
			       "'files': [{'path': '%s', 'content': 'x'}]}",
			       good[i]);
		r = parse(json);
		assert_int_equal(r->n_files, 1);
		assert_string_equal(r->files[0].path, good[i]);
	}
	parse_fails("{'language': 'shell', 'code': 'x', 'timeout': 1, "
		    "'files': [{'content': 'x'}]}",
		    "files[0].path: required");
	parse_fails("{'language': 'shell', 'code': 'x', 'timeout': 1, "
		    "'files': [{'path': 'a\\u0000b', 'content': 'x'}]}",
		    "files[].path: contains a NUL byte");
}

static void test_file_content_keeps_nul_bytes_and_executable(void **state)
{
	_cleanup_(agent_request_freep) struct agent_request *r =
	    parse("{'language': 'shell', 'code': 'x', 'timeout': 1, 'files': ["
		  "{'path': 'a', 'content': 'x\\u0000y', 'executable': true},"
		  "{'path': 'b', 'content': '', 'executable': false},"
		  "{'path': 'c', 'content': 'z'}]}");

	(void)state;
	assert_int_equal(r->n_files, 3);
	assert_int_equal(r->files[0].len, 3);
	assert_memory_equal(r->files[0].data, "x\0y", 3);
	assert_true(r->files[0].executable);
	assert_int_equal(r->files[1].len, 0);
	assert_false(r->files[1].executable);
	assert_false(r->files[2].executable);
	parse_fails("{'language': 'shell', 'code': 'x', 'timeout': 1, "
		    "'files': [{'path': 'a', 'content': 'x', 'executable': 1}]}",
		    "files[0].executable: must be a boolean");
	parse_fails("{'language': 'shell', 'code': 'x', 'timeout': 1, "
		    "'files': [{'path': 'a'}]}",
		    "files[0]: needs one of content and base64");
	parse_fails("{'language': 'shell', 'code': 'x', 'timeout': 1, "
		    "'files': [{'path': 'a', 'content': 'x', 'base64': 'eA=='}]}",
		    "files[0]: needs one of content and base64");
	parse_fails("{'language': 'shell', 'code': 'x', 'timeout': 1, 'files': {}}",
		    "files: must be an array");
	parse_fails("{'language': 'shell', 'code': 'x', 'timeout': 1, 'files': ['a']}",
		    "files[0]: must be an object");
}

/* Decodes one base64 file and checks its bytes. */
static void check_base64_at(const char *b64, const char *data, size_t len, const char *file,
			    int line)
{
	_cleanup_(agent_request_freep) struct agent_request *r = NULL;
	char json[256];

	(void)snprintf(json, sizeof(json),
		       "{'language': 'shell', 'code': 'x', 'timeout': 1, "
		       "'files': [{'path': 'f', 'base64': '%s'}]}",
		       b64);
	r = parse_at(json, file, line);
	if (r->files[0].len != len || memcmp(r->files[0].data, data, len) != 0) {
		print_error("base64 %s decodes to %zu bytes, expected %zu\n", b64, r->files[0].len,
			    len);
		_fail(file, line);
	}
}
#define check_base64(b64, data, len) check_base64_at((b64), (data), (len), __FILE__, __LINE__)

static void test_base64_valid_is_decoded(void **state)
{
	(void)state;
	check_base64("", "", 0);
	check_base64("aA==", "h", 1);
	check_base64("aGk=", "hi", 2);
	check_base64("aGVsbG8h", "hello!", 6);
	check_base64("aGVsbG8=", "hello", 5);
	check_base64("AAECAwQFBgcICQ==", "\0\1\2\3\4\5\6\7\10\11", 10);
	check_base64("+/+/", "\xfb\xff\xbf", 3);
}

static void test_base64_with_invalid_padding_is_refused(void **state)
{
	static const char *const bad[] = {
	    "aGVsbG8",	    /* no padding */
	    "aGk",	    /* no padding */
	    "aGVsbG8==",    /* too much */
	    "aGk==",	    /* too much */
	    "a===",	    /* three */
	    "====",	    /* padding only */
	    "YQ==YQ==",	    /* padding inside */
	    "aGk=aGk=",	    /* padding inside */
	    "aGV=bG8h",	    /* padding inside */
	    "aB==",	    /* bits left over after the last byte */
	    "aGl=",	    /* bits left over after the last byte */
	    "=aGk",	    /* padding first */
	    "aG=k",	    /* padding then data */
	    "a",	    /* a lone character */
	    "aGVsbG8=aGk=", /* two encodings glued */
	};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		char json[256];

		(void)snprintf(json, sizeof(json),
			       "{'language': 'shell', 'code': 'x', 'timeout': 1, "
			       "'files': [{'path': 'f', 'base64': '%s'}]}",
			       bad[i]);
		parse_fails(json, "files[0].base64: not valid base64");
	}
}

static void test_base64_with_bad_characters_is_refused(void **state)
{
	static const char *const bad[] = {
	    "aGk gaGk",	      /* a blank */
	    "aGVs\\nG8=",     /* a newline (JSON-escaped) */
	    "aGVs-G8_",	      /* the URL-safe alphabet */
	    "aGVs*G8=",	      /* punctuation */
	    "aG\\u00e9G8=",   /* a non-ASCII letter */
	    "aGVs\\u0000G8=", /* a NUL byte */
	};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		char json[256];

		(void)snprintf(json, sizeof(json),
			       "{'language': 'shell', 'code': 'x', 'timeout': 1, "
			       "'files': [{'path': 'f', 'base64': '%s'}]}",
			       bad[i]);
		parse_fails(json, "files[0].base64: not valid base64");
	}
	parse_fails("{'language': 'shell', 'code': 'x', 'timeout': 1, "
		    "'files': [{'path': 'f', 'base64': 5}]}",
		    "files[].base64: must be a string");
}

static void test_duplicate_file_paths_are_refused(void **state)
{
	(void)state;
	parse_fails("{'language': 'shell', 'code': 'x', 'timeout': 1, 'files': ["
		    "{'path': 'a.txt', 'content': 'x'}, {'path': 'b', 'content': 'y'},"
		    "{'path': 'a.txt', 'base64': 'eA=='}]}",
		    "files[2].path: already files[0]");
}

static void test_env_variables_are_kept_in_order(void **state)
{
	_cleanup_(agent_request_freep) struct agent_request *r =
	    parse(PYTHON(", 'env': {'LANG': 'C.UTF-8', 'EMPTY': '', 'A_AIRLOCK_B': 'x'}"));

	(void)state;
	assert_int_equal(r->n_env, 3);
	assert_string_equal(r->env[0].name, "LANG");
	assert_string_equal(r->env[0].value, "C.UTF-8");
	assert_string_equal(r->env[1].name, "EMPTY");
	assert_string_equal(r->env[1].value, "");
	assert_string_equal(r->env[2].name, "A_AIRLOCK_B");
}

static void test_env_airlock_variables_are_refused(void **state)
{
	(void)state;
	parse_fails(PYTHON(", 'env': {'AIRLOCK_RESULT': '/tmp/x'}"),
		    "env.AIRLOCK_RESULT: AIRLOCK_* variables are airlock's");
	parse_fails(PYTHON(", 'env': {'LANG': 'C', 'AIRLOCK_INPUT': 'x'}"), "env.AIRLOCK_INPUT:");
	parse_fails(PYTHON(", 'env': {'AIRLOCK_': 'x'}"), "env.AIRLOCK_:");
	parse_fails(PYTHON(", 'env': {'N': 1}"), "env.N: must be a string");
	parse_fails(PYTHON(", 'env': {'N': 'a\\u0000b'}"), "env.N: contains a NUL byte");
	parse_fails(PYTHON(", 'env': ['A=b']"), "env: must be an object");
}

static void test_policy_object_is_serialized(void **state)
{
	_cleanup_(agent_request_freep) struct agent_request *r =
	    parse(PYTHON(", 'policy': {'tier': 1, 'env': {'LANG': 'C'}, 'audit': '/var/log/a'}"));

	(void)state;
	assert_string_equal(r->policy_json,
			    "{\"tier\":1,\"env\":{\"LANG\":\"C\"},\"audit\":\"/var/log/a\"}");
	assert_null(r->policy_path);
}

static void test_policy_string_is_a_path(void **state)
{
	_cleanup_(agent_request_freep) struct agent_request *r =
	    parse(PYTHON(", 'policy': '/etc/airlock/policies/ci.json'"));

	(void)state;
	assert_string_equal(r->policy_path, "/etc/airlock/policies/ci.json");
	assert_null(r->policy_json);
	parse_fails(PYTHON(", 'policy': 5"), "policy: must be an object or a path");
	parse_fails(PYTHON(", 'policy': ['a']"), "policy: must be an object or a path");
	parse_fails(PYTHON(", 'policy': null"), "policy: must be an object or a path");
}

/* Parses a request whose "input" is the given JSON, and checks its serialization. */
static void check_input_at(const char *input, const char *serialized, const char *file, int line)
{
	_cleanup_(agent_request_freep) struct agent_request *r = NULL;
	char json[256];

	(void)snprintf(json, sizeof(json), PYTHON(", 'input': %s"), input);
	r = parse_at(json, file, line);
	if (!r->input || strcmp(r->input, serialized) != 0) {
		print_error("input %s serialized as %s, expected %s\n", input,
			    r->input ? r->input : "(null)", serialized);
		_fail(file, line);
	}
}
#define check_input(input, serialized) check_input_at((input), (serialized), __FILE__, __LINE__)

static void test_input_of_any_json_type_is_serialized(void **state)
{
	(void)state;
	check_input("{'rows': [1, 2.5, 'x'], 'ok': true, 'none': null}",
		    "{\"rows\":[1,2.5,\"x\"],\"ok\":true,\"none\":null}");
	check_input("[]", "[]");
	check_input("{}", "{}");
	check_input("42", "42");
	check_input("-1.25", "-1.25");
	check_input("'a/b \\u00e9'", "\"a/b \xc3\xa9\"");
	check_input("'line\\nnext'", "\"line\\nnext\"");
	check_input("true", "true");
	check_input("null", "null");
}

static void test_stdin_with_nul_is_kept_with_its_length(void **state)
{
	_cleanup_(agent_request_freep) struct agent_request *r =
	    parse(PYTHON(", 'stdin': 'a\\u0000b\\n'"));
	_cleanup_(agent_request_freep) struct agent_request *empty = parse(PYTHON(", 'stdin': ''"));

	(void)state;
	assert_int_equal(r->stdin_len, 4);
	assert_memory_equal(r->stdin_data, "a\0b\n", 5);
	/* Empty stdin is given (and not "none"). */
	assert_non_null(empty->stdin_data);
	assert_int_equal(empty->stdin_len, 0);
	parse_fails(PYTHON(", 'stdin': 1"), "stdin: must be a string");
}

static void test_memory_as_size_string_or_bytes(void **state)
{
	_cleanup_(agent_request_freep) struct agent_request *s =
	    parse(PYTHON(", 'memory': '512Mi'"));
	_cleanup_(agent_request_freep) struct agent_request *n =
	    parse(PYTHON(", 'memory': 1048576"));

	(void)state;
	assert_string_equal(s->memory, "512Mi");
	assert_string_equal(n->memory, "1048576");
	parse_fails(PYTHON(", 'memory': 0"), "memory: must be a positive size");
	parse_fails(PYTHON(", 'memory': -1"), "memory: must be a positive size");
	parse_fails(PYTHON(", 'memory': 1.5"), "memory: must be a string");
}

static void test_workspace_is_kept(void **state)
{
	_cleanup_(agent_request_freep) struct agent_request *r =
	    parse(PYTHON(", 'workspace': '/home/u/project'"));

	(void)state;
	assert_string_equal(r->workspace, "/home/u/project");
	parse_fails(PYTHON(", 'workspace': true"), "workspace: must be a string");
}

static void test_not_an_object_or_not_json_is_refused(void **state)
{
	static const char truncated[] = "{\"language\": \"python\"";
	static const char nul_inside[] = "{\"language\": \"python\"\0}";
	struct agent_request *r = NULL;
	struct al_error err = {};

	(void)state;
	parse_fails("['language', 'python']", "a request is a JSON object");
	parse_fails("'python'", "a request is a JSON object");
	/* A bare scalar is refused too (json-c wants a byte after it to see it end). */
	parse_fails("null", "");
	parse_fails("42", "");
	parse_fails(PYTHON("") " {}", "invalid JSON");
	assert_int_equal(agent_request_parse(truncated, sizeof(truncated) - 1, &r, &err), -EINVAL);
	assert_null(r);
	assert_string_equal(err.msg, "invalid JSON: unexpected end of input");
	assert_int_equal(agent_request_parse(nul_inside, sizeof(nul_inside) - 1, &r, &err),
			 -EINVAL);
	assert_null(r);
	assert_int_equal(agent_request_parse("", 0, &r, &err), -EINVAL);
	assert_null(r);
}

static void test_request_is_read_within_len(void **state)
{
	/* No NUL needed after the request: the bytes after len are not part of it. */
	static const char buf[] =
	    "{\"language\": \"shell\", \"code\": \"x\", \"timeout\": 1}garbage";
	_cleanup_(agent_request_freep) struct agent_request *r = NULL;
	struct al_error err = {};

	(void)state;
	assert_int_equal(agent_request_parse(buf, strlen(buf) - strlen("garbage"), &r, &err), 0);
	assert_int_equal(r->language, AGENT_LANGUAGE_SHELL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_minimal_python_request_parses),
	    cmocka_unit_test(test_every_language_parses_by_name),
	    cmocka_unit_test(test_free_accepts_null),
	    cmocka_unit_test(test_timeout_missing_is_refused_naming_timeout),
	    cmocka_unit_test(test_timeout_as_seconds_number),
	    cmocka_unit_test(test_timeout_as_duration_string),
	    cmocka_unit_test(test_timeout_zero_negative_or_over_a_day_is_refused),
	    cmocka_unit_test(test_timeout_of_another_form_is_refused),
	    cmocka_unit_test(test_unknown_field_is_refused_naming_it),
	    cmocka_unit_test(test_language_unknown_is_refused),
	    cmocka_unit_test(test_command_needs_argv_and_refuses_code),
	    cmocka_unit_test(test_non_command_needs_code),
	    cmocka_unit_test(test_wasm_code_is_a_module_in_base64),
	    cmocka_unit_test(test_file_path_absolute_or_with_dot_components_is_refused),
	    cmocka_unit_test(test_file_content_keeps_nul_bytes_and_executable),
	    cmocka_unit_test(test_base64_valid_is_decoded),
	    cmocka_unit_test(test_base64_with_invalid_padding_is_refused),
	    cmocka_unit_test(test_base64_with_bad_characters_is_refused),
	    cmocka_unit_test(test_duplicate_file_paths_are_refused),
	    cmocka_unit_test(test_env_variables_are_kept_in_order),
	    cmocka_unit_test(test_env_airlock_variables_are_refused),
	    cmocka_unit_test(test_policy_object_is_serialized),
	    cmocka_unit_test(test_policy_string_is_a_path),
	    cmocka_unit_test(test_input_of_any_json_type_is_serialized),
	    cmocka_unit_test(test_stdin_with_nul_is_kept_with_its_length),
	    cmocka_unit_test(test_memory_as_size_string_or_bytes),
	    cmocka_unit_test(test_workspace_is_kept),
	    cmocka_unit_test(test_not_an_object_or_not_json_is_refused),
	    cmocka_unit_test(test_request_is_read_within_len),
	};

	return cmocka_run_group_tests_name("agent-request", tests, NULL, NULL);
}
