#pragma once

/* Helpers shared by the policy unit tests.
 *
 * Policies in the tests are written with ' where JSON wants ", so that they stay readable as C
 * string literals: {'tier': 5}. test_json() turns them into JSON. No test policy needs a literal
 * ' character. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "policy/policy.h"

/* malloc() for tests: there is nothing to test once memory runs out. */
static inline void *test_alloc(size_t size)
{
	void *p = malloc(size);

	if (!p)
		abort();
	return p;
}

static inline char *test_json(const char *quoted)
{
	char *s = strdup(quoted);

	if (!s)
		abort();
	for (char *c = s; *c; c++)
		if (*c == '\'')
			*c = '"';
	return s;
}

/* Loads a policy that must load; fails the test at the caller's line otherwise. */
static inline struct policy *test_load_at(const char *quoted, const char *file, int line)
{
	_cleanup_free_ char *json = test_json(quoted);
	struct al_error err = {};
	struct policy *p = NULL;
	int r;

	r = policy_load_string(json, &p, &err);
	if (r < 0 || !p) {
		print_error("policy_load_string(%s) = %d: %s\n", json, r, err.msg);
		_fail(file, line);
	}
	return p;
}
#define test_load(quoted) test_load_at((quoted), __FILE__, __LINE__)

/* The canonical JSON of a policy that must load. */
static inline char *test_canonical_at(const char *quoted, const char *file, int line)
{
	_cleanup_(policy_freep) struct policy *p = test_load_at(quoted, file, line);
	char *c = NULL;

	if (policy_to_canonical_json(p, &c) < 0)
		_fail(file, line);
	return c;
}
#define test_canonical(quoted) test_canonical_at((quoted), __FILE__, __LINE__)

/* Checks that err holds code and a message that starts with prefix. */
static inline bool test_error_matches(const struct al_error *err, int r, int code,
				      const char *prefix)
{
	if (r == code && err->code == code && strncmp(err->msg, prefix, strlen(prefix)) == 0)
		return true;
	print_error("expected %d \"%s...\", got %d (err.code %d) \"%s\"\n", code, prefix, r,
		    err->code, err->msg);
	return false;
}

/* Loads a policy that must fail with code and a message starting with prefix (the JSON path). */
static inline void test_load_fails_at(const char *quoted, int code, const char *prefix,
				      const char *file, int line)
{
	_cleanup_free_ char *json = test_json(quoted);
	struct policy *p = NULL;
	struct al_error err = {};
	int r;

	r = policy_load_string(json, &p, &err);
	if (!test_error_matches(&err, r, code, prefix) || p) {
		print_error("policy: %s\n", json);
		_fail(file, line);
	}
}
#define test_load_fails(quoted, code, prefix)                                                      \
	test_load_fails_at((quoted), (code), (prefix), __FILE__, __LINE__)

/* The policy of DESIGN.md, verbatim. */
static inline const char *test_design_example(void)
{
	return "{\n"
	       "  \"id\": \"example\", \"tier\": 1,\n"
	       "  \"isolation\": [{\"type\": \"container\"}],\n"
	       "  \"seccomp\": \"restricted\",\n"
	       "  \"workspace\": {\"root\": \".\", \"mount\": \"/workspace\",\n"
	       "                \"read\": [\"**\"], \"write\": [\"src/**\", \"out/**\"],\n"
	       "                \"deny\": [\"**/.env\", \".git/config\"], \"quota\": \"1Gi\"},\n"
	       "  \"mounts\": [{\"source\": \"/opt/tools\", \"target\": \"/opt/tools\", \"mode\": "
	       "\"ro\"}],\n"
	       "  \"env\": {\"LANG\": \"C.UTF-8\"},\n"
	       "  \"executables\": [\"/usr/bin/python3\", \"/usr/bin/git\"],\n"
	       "  \"credentials\": [\n"
	       "    {\"name\": \"github\", \"source\": {\"type\": \"vault\"},\n"
	       "     \"injection\": {\"type\": \"env_var\", \"var_name\": \"GITHUB_TOKEN\"},\n"
	       "     \"hosts\": [\"api.github.com\"]},\n"
	       "    {\"name\": \"anthropic\", \"source\": {\"type\": \"env\", \"var\": "
	       "\"ANTHROPIC_API_KEY\"},\n"
	       "     \"injection\": {\"type\": \"file\", \"path\": \"/run/secrets/anthropic\"},\n"
	       "     \"hosts\": [\"api.anthropic.com\"]},\n"
	       "    {\"name\": \"openai\", \"source\": {\"type\": \"file\", \"path\": "
	       "\"/etc/airlock/openai.key\"},\n"
	       "     \"injection\": {\"type\": \"sidecar\", \"header\": \"Authorization\", "
	       "\"format\": "
	       "\"Bearer {}\"},\n"
	       "     \"hosts\": [\"api.openai.com\"]}\n"
	       "  ],\n"
	       "  \"resources\": {\"cpu\": \"1.0\", \"memory\": \"512Mi\", \"pids\": 256, "
	       "\"disk\": \"1Gi\",\n"
	       "                \"timeout\": \"300s\"},\n"
	       "  \"network\": {\"default\": \"deny\",\n"
	       "              \"rules\": [{\"destination\": \"api.github.com\", \"port\": 443, "
	       "\"action\": "
	       "\"allow\"},\n"
	       "                        {\"destination\": \"*.pypi.org\", \"action\": \"allow\"},\n"
	       "                        {\"destination\": \"10.0.0.0/8\", \"action\": \"deny\"}],\n"
	       "              \"resolve\": {\"git.internal\": \"192.0.2.10\"}},\n"
	       "  \"audit\": \"/var/log/airlock/example.jsonl\"\n"
	       "}\n";
}
