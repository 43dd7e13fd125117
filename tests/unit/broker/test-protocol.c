/* tests/unit/broker/test-protocol.c: the broker's wire format. Frame headers and their limits,
 * what each request must and may hold, the checks on every field, encode/parse round trips and
 * the answers the client reads back. */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "broker/broker-internal.h"
#include "common/macro.h"

#define SID "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define PHASH "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
#define CREDS_JSON                                                                                 \
	"[{\"name\":\"github\",\"source\":{\"type\":\"env\",\"var\":\"AL_TEST_PROTO_GITHUB\"},"    \
	"\"injection\":{\"type\":\"env_var\",\"var_name\":\"GITHUB_TOKEN\"},"                      \
	"\"hosts\":[\"api.github.com\"]},"                                                         \
	"{\"name\":\"openai\",\"source\":{\"type\":\"env\",\"var\":\"AL_TEST_PROTO_OPENAI\"},"     \
	"\"injection\":{\"type\":\"sidecar\",\"header\":\"Authorization\",\"format\":\"Bearer "    \
	"{}\"},\"hosts\":[\"api.openai.com\",\"*.openai.com\"]}]"

/* Each field of a request, as JSON. */
#define F_SESSION "\"session\":\"" SID "\""
#define F_SURROGATE "\"surrogate\":\"airlock_sur_0123456789abcdefghijklmnopqrstuv\""
#define F_HOST "\"host\":\"api.github.com\""
#define F_NAME "\"name\":\"github\""
#define F_POLICY_HASH "\"policy_hash\":\"" PHASH "\""
#define F_CREDENTIALS "\"credentials\":" CREDS_JSON
#define F_LABEL "\"label\":\"run-1\""
#define F_TTL "\"ttl_ms\":1500"
#define F_STREAM "\"stream\":1"
#define F_FLUSH "\"flush\":true"

static const char *const all_fields[] = {
    F_SESSION,	   F_SURROGATE, F_HOST, F_NAME,	  F_POLICY_HASH,
    F_CREDENTIALS, F_LABEL,	F_TTL,	F_STREAM, F_FLUSH,
};

/* Each op, its fields: the first n_required are required, the others allowed. */
static const struct {
	enum broker_op op;
	const char *fields[4];
	size_t n, n_required;
} ops[] = {
    {BROKER_OP_OPEN, {F_POLICY_HASH, F_CREDENTIALS, F_LABEL, F_TTL}, 4, 2},
    {BROKER_OP_RESOLVE, {F_SESSION, F_SURROGATE, F_HOST}, 3, 3},
    {BROKER_OP_READ, {F_SESSION, F_NAME}, 2, 2},
    {BROKER_OP_HEADERS, {F_SESSION, F_HOST}, 2, 2},
    {BROKER_OP_REDACT, {F_SESSION, F_STREAM, F_FLUSH}, 3, 2},
    {BROKER_OP_CLOSE, {F_SESSION}, 1, 1},
    {BROKER_OP_HEALTH, {NULL}, 0, 0},
    {BROKER_OP_LIST, {NULL}, 0, 0},
    {BROKER_OP_SSH_HOSTKEY, {F_SESSION, F_HOST}, 2, 2},
    {BROKER_OP_SSH_AGENT, {F_SESSION}, 1, 1},
};

static int parse_fmt(struct broker_request *q, struct al_error *err, const char *fmt, ...)
    _printf_(3, 4);

static int parse_fmt(struct broker_request *q, struct al_error *err, const char *fmt, ...)
{
	char buf[8192];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	assert_true(n > 0 && (size_t)n < sizeof(buf));
	*err = (struct al_error){0};
	return broker_request_parse(buf, (size_t)n, q, err);
}

/* A request of op with the fields of ops[i], leaving out field skip (or none: SIZE_MAX), plus
 * extra (or NULL). */
static int parse_op(size_t i, size_t skip, const char *extra, struct broker_request *q,
		    struct al_error *err)
{
	char buf[8192];
	size_t n;

	n = (size_t)snprintf(buf, sizeof(buf), "{\"v\":1,\"id\":5,\"op\":\"%s\"",
			     broker_op_to_string(ops[i].op));
	for (size_t k = 0; k < ops[i].n; k++)
		if (k != skip)
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, ",%s", ops[i].fields[k]);
	if (extra)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, ",%s", extra);
	n += (size_t)snprintf(buf + n, sizeof(buf) - n, "}");
	assert_true(n < sizeof(buf));
	*err = (struct al_error){0};
	return broker_request_parse(buf, n, q, err);
}

static bool op_has_field(size_t i, const char *field)
{
	for (size_t k = 0; k < ops[i].n; k++)
		if (streq(ops[i].fields[k], field))
			return true;
	return false;
}

/* ---- frames ---- */

static void test_frame_header_is_two_big_endian_lengths(void **state)
{
	unsigned char hdr[BROKER_FRAME_HEADER];
	uint32_t json = 0, payload = 0;

	(void)state;
	broker_frame_header(hdr, 0x1234, 0x20001);
	assert_memory_equal(hdr, "\x00\x00\x12\x34\x00\x02\x00\x01", BROKER_FRAME_HEADER);
	assert_int_equal(broker_frame_parse(hdr, BROKER_PAYLOAD_MAX, &json, &payload, NULL), 0);
	assert_int_equal(json, 0x1234);
	assert_int_equal(payload, 0x20001);
}

static void test_frame_refuses_an_empty_message(void **state)
{
	unsigned char hdr[BROKER_FRAME_HEADER];
	uint32_t json = 7, payload = 7;
	struct al_error err = {0};

	(void)state;
	broker_frame_header(hdr, 0, 0);
	assert_int_equal(broker_frame_parse(hdr, BROKER_PAYLOAD_MAX, &json, &payload, &err),
			 -EBADMSG);
	assert_non_null(strstr(err.msg, "empty message"));
	assert_int_equal(json, 7); /* untouched on error */
	assert_int_equal(payload, 7);
}

static void test_frame_refuses_json_over_the_limit(void **state)
{
	unsigned char hdr[BROKER_FRAME_HEADER];
	uint32_t json = 0, payload = 0;
	struct al_error err = {0};

	(void)state;
	broker_frame_header(hdr, BROKER_JSON_MAX, 0);
	assert_int_equal(broker_frame_parse(hdr, BROKER_PAYLOAD_MAX, &json, &payload, &err), 0);
	assert_int_equal(json, BROKER_JSON_MAX);
	broker_frame_header(hdr, BROKER_JSON_MAX + 1, 0);
	assert_int_equal(broker_frame_parse(hdr, BROKER_PAYLOAD_MAX, &json, &payload, &err),
			 -EMSGSIZE);
	assert_non_null(strstr(err.msg, "65537 bytes"));
	memset(hdr, 0xff, 4);
	assert_int_equal(broker_frame_parse(hdr, BROKER_PAYLOAD_MAX, &json, &payload, &err),
			 -EMSGSIZE);
	assert_int_equal(json, BROKER_JSON_MAX);
}

static void test_frame_refuses_payload_over_the_callers_limit(void **state)
{
	unsigned char hdr[BROKER_FRAME_HEADER];
	uint32_t json = 0, payload = 0;
	struct al_error err = {0};

	(void)state;
	broker_frame_header(hdr, 10, BROKER_PAYLOAD_MAX);
	assert_int_equal(broker_frame_parse(hdr, BROKER_PAYLOAD_MAX, &json, &payload, &err), 0);
	assert_int_equal(payload, BROKER_PAYLOAD_MAX);
	broker_frame_header(hdr, 10, BROKER_PAYLOAD_MAX + 1);
	assert_int_equal(broker_frame_parse(hdr, BROKER_PAYLOAD_MAX, &json, &payload, &err),
			 -EMSGSIZE);
	assert_non_null(strstr(err.msg, "payload of 262145 bytes"));
	assert_int_equal(payload, BROKER_PAYLOAD_MAX);
	/* The client takes larger answers (redacted output may grow), but not without limit. */
	assert_int_equal(
	    broker_frame_parse(hdr, BROKER_RESPONSE_PAYLOAD_MAX, &json, &payload, &err), 0);
	assert_int_equal(payload, BROKER_PAYLOAD_MAX + 1);
	broker_frame_header(hdr, 10, UINT32_MAX);
	assert_int_equal(
	    broker_frame_parse(hdr, BROKER_RESPONSE_PAYLOAD_MAX, &json, &payload, &err), -EMSGSIZE);
}

/* ---- requests ---- */

static void test_request_of_each_op_parses_with_its_fields(void **state)
{
	struct broker_request q;
	struct al_error err;

	(void)state;
	assert_int_equal(ELEMENTSOF(ops), _BROKER_OP_MAX);
	for (size_t i = 0; i < ELEMENTSOF(ops); i++) {
		assert_int_equal(parse_op(i, SIZE_MAX, NULL, &q, &err), 0);
		assert_int_equal(q.op, ops[i].op);
		assert_int_equal(q.id, 5);
		assert_non_null(q.root);
		assert_int_equal(q.creds != NULL, ops[i].op == BROKER_OP_OPEN);
		broker_request_done(&q);
		assert_null(q.root);
	}
}

static void test_request_fields_hold_what_was_sent(void **state)
{
	struct broker_request q;
	struct al_error err;

	(void)state;
	assert_int_equal(parse_op(0, SIZE_MAX, NULL, &q, &err), 0);
	assert_string_equal(q.policy_hash, PHASH);
	assert_string_equal(q.label, "run-1");
	assert_int_equal(q.ttl_usec, 1500 * 1000);
	assert_int_equal(q.creds->n_credentials, 2);
	assert_string_equal(q.creds->credentials[1].name, "openai");
	assert_string_equal(q.creds->credentials[1].format, "Bearer {}");
	assert_string_equal(q.creds->credentials[1].hosts.items[1], "*.openai.com");
	broker_request_done(&q);
	assert_int_equal(parse_op(1, SIZE_MAX, NULL, &q, &err), 0);
	assert_string_equal(q.session, SID);
	assert_string_equal(q.surrogate, "airlock_sur_0123456789abcdefghijklmnopqrstuv");
	assert_string_equal(q.host, "api.github.com");
	assert_null(q.name);
	broker_request_done(&q);
	assert_int_equal(parse_op(4, SIZE_MAX, NULL, &q, &err), 0);
	assert_int_equal(q.stream, 1);
	assert_true(q.flush);
	broker_request_done(&q);
	/* The optional fields default to nothing. */
	assert_int_equal(parse_op(4, 2, NULL, &q, &err), 0);
	assert_false(q.flush);
	broker_request_done(&q);
	assert_int_equal(parse_op(0, 3, NULL, &q, &err), 0);
	assert_int_equal(q.ttl_usec, 0);
	broker_request_done(&q);
}

static void test_request_without_a_required_field_is_refused_by_name(void **state)
{
	struct broker_request q;
	struct al_error err;
	char want[64];

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(ops); i++)
		for (size_t k = 0; k < ops[i].n; k++) {
			int r = parse_op(i, k, NULL, &q, &err);

			if (k >= ops[i].n_required) {
				assert_int_equal(r, 0);
				broker_request_done(&q);
				continue;
			}
			assert_int_equal(r, -EINVAL);
			assert_null(q.root);
			assert_null(q.creds);
			(void)snprintf(want, sizeof(want), "op %s needs field \"",
				       broker_op_to_string(ops[i].op));
			assert_non_null(strstr(err.msg, want));
			assert_non_null(strstr(ops[i].fields[k], strchr(err.msg, '"') + 1));
		}
}

static void test_request_with_a_field_of_another_op_is_refused(void **state)
{
	struct broker_request q;
	struct al_error err;

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(ops); i++) {
		assert_int_equal(parse_op(i, SIZE_MAX, "\"bogus\":1", &q, &err), -EINVAL);
		assert_non_null(strstr(err.msg, "unknown field \"bogus\" for op"));
		for (size_t f = 0; f < ELEMENTSOF(all_fields); f++) {
			if (op_has_field(i, all_fields[f]))
				continue;
			assert_int_equal(parse_op(i, SIZE_MAX, all_fields[f], &q, &err), -EINVAL);
			assert_non_null(strstr(err.msg, "unknown field"));
			assert_non_null(strstr(err.msg, broker_op_to_string(ops[i].op)));
		}
	}
}

static void test_request_needs_op_version_and_an_object(void **state)
{
	struct broker_request q;
	struct al_error err;

	(void)state;
	assert_int_equal(parse_fmt(&q, &err, "{\"v\":1,\"id\":1}"), -EINVAL);
	assert_non_null(strstr(err.msg, "no \"op\""));
	assert_int_equal(parse_fmt(&q, &err, "{\"v\":1,\"id\":1,\"op\":\"steal\"}"), -EINVAL);
	assert_non_null(strstr(err.msg, "unknown op \"steal\""));
	assert_int_equal(parse_fmt(&q, &err, "{\"v\":1,\"id\":1,\"op\":7}"), -EINVAL);
	assert_int_equal(parse_fmt(&q, &err, "{\"id\":1,\"op\":\"health\"}"), -EINVAL);
	assert_non_null(strstr(err.msg, "no protocol version"));
	assert_int_equal(parse_fmt(&q, &err, "{\"v\":\"1\",\"id\":1,\"op\":\"health\"}"), -EINVAL);
	assert_int_equal(parse_fmt(&q, &err, "[{\"v\":1,\"id\":1,\"op\":\"health\"}]"), -EINVAL);
	assert_non_null(strstr(err.msg, "JSON object"));
	assert_int_equal(parse_fmt(&q, &err, "{\"v\":1,\"id\":1,\"op\":\"health\"} x"), -EINVAL);
	assert_int_equal(parse_fmt(&q, &err, "{\"v\":1,\"id\":1,\"op\":\"hea"), -EINVAL);
	assert_int_equal(broker_request_parse("", 0, &q, &err), -EINVAL);
}

static void test_request_of_another_version_is_protonosupport(void **state)
{
	struct broker_request q;
	struct al_error err;

	(void)state;
	assert_int_equal(parse_fmt(&q, &err, "{\"v\":2,\"id\":9,\"op\":\"health\"}"),
			 -EPROTONOSUPPORT);
	assert_non_null(strstr(err.msg, "protocol version 2 is not supported"));
	assert_int_equal(q.id, 9);
	assert_int_equal(parse_fmt(&q, &err, "{\"v\":0,\"id\":9,\"op\":\"health\"}"),
			 -EPROTONOSUPPORT);
	/* Also before anything else of the request is looked at. */
	assert_int_equal(parse_fmt(&q, &err, "{\"v\":3,\"id\":9,\"op\":\"teleport\",\"x\":[]}"),
			 -EPROTONOSUPPORT);
	assert_int_equal(parse_fmt(&q, &err, "{\"v\":4294967296,\"id\":9,\"op\":\"health\"}"),
			 -EINVAL);
}

static void test_request_id_is_kept_when_refused(void **state)
{
	struct broker_request q;
	struct al_error err;

	(void)state;
	assert_int_equal(parse_fmt(&q, &err, "{\"v\":1,\"id\":42,\"op\":\"steal\"}"), -EINVAL);
	assert_int_equal(q.id, 42);
	assert_int_equal(
	    parse_fmt(&q, &err, "{\"op\":\"close\",\"session\":\"x\",\"id\":43,\"v\":1}"), -EINVAL);
	assert_int_equal(q.id, 43);
	assert_null(q.root);
	assert_int_equal(parse_fmt(&q, &err,
				   "{\"v\":1,\"id\":44,\"op\":\"open\",\"policy_hash\":\"" PHASH
				   "\",\"credentials\":[{\"name\":\"x\"}]}"),
			 -EINVAL);
	assert_int_equal(q.id, 44);
	assert_null(q.creds);
	/* The largest id a double holds exactly is the largest allowed. */
	assert_int_equal(parse_fmt(&q, &err, "{\"v\":1,\"id\":9007199254740991,\"op\":\"list\"}"),
			 0);
	assert_int_equal(q.id, 9007199254740991ULL);
	broker_request_done(&q);
	assert_int_equal(parse_fmt(&q, &err, "{\"v\":1,\"id\":9007199254740992,\"op\":\"list\"}"),
			 -EINVAL);
	assert_non_null(strstr(err.msg, "id: out of range"));
	assert_int_equal(q.id, 0);
	assert_int_equal(parse_fmt(&q, &err, "{\"v\":1,\"id\":-1,\"op\":\"list\"}"), -EINVAL);
	assert_int_equal(parse_fmt(&q, &err, "{\"v\":1,\"id\":1.5,\"op\":\"list\"}"), -EINVAL);
	/* Without an id, the answer carries 0. */
	assert_int_equal(parse_fmt(&q, &err, "{\"v\":1,\"op\":\"list\"}"), 0);
	assert_int_equal(q.id, 0);
	broker_request_done(&q);
}

static void test_request_session_is_64_lowercase_hex_digits(void **state)
{
	static const char *const bad[] = {
	    "\"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\"",   /* 63 */
	    "\"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0\"", /* 65 */
	    "\"0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef\"",
	    "\"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdeg\"",
	    "\"0123456789abcdef\\u00000123456789abcde0123456789abcdef0123456789abcdef\"",
	    "\"\"",
	    "12345678901234567890",
	    "null",
	};
	struct broker_request q;
	struct al_error err;

	(void)state;
	assert_int_equal(
	    parse_fmt(&q, &err, "{\"v\":1,\"id\":1,\"op\":\"close\",\"session\":\"%s\"}", SID), 0);
	assert_string_equal(q.session, SID);
	broker_request_done(&q);
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		assert_int_equal(parse_fmt(&q, &err,
					   "{\"v\":1,\"id\":1,\"op\":\"close\",\"session\":%s}",
					   bad[i]),
				 -EINVAL);
		assert_non_null(strstr(err.msg, "session"));
	}
}

static void test_request_host_holds_only_host_characters(void **state)
{
	static const char *const good[] = {
	    "api.github.com", "API.GitHub.com", "[2001:db8::1]:443", "my_host-1:8080", "10.0.0.1",
	};
	static const char *const bad[] = {
	    "api github.com", "api.github.com/x", "user@host", "h\\u00e9te",
	    "a\\tb",	      "a\\u0000b",	  "",	       "h%2fx",
	    "*.github.com",
	};
	struct broker_request q;
	struct al_error err;
	char longest[300];

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(good); i++) {
		assert_int_equal(parse_fmt(&q, &err,
					   "{\"v\":1,\"id\":1,\"op\":\"headers\",\"session\":\"" SID
					   "\",\"host\":\"%s\"}",
					   good[i]),
				 0);
		assert_string_equal(q.host, good[i]);
		broker_request_done(&q);
	}
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		assert_int_equal(parse_fmt(&q, &err,
					   "{\"v\":1,\"id\":1,\"op\":\"headers\",\"session\":\"" SID
					   "\",\"host\":\"%s\"}",
					   bad[i]),
				 -EINVAL);
		assert_non_null(strstr(err.msg, "host:"));
	}
	/* A name of 253 bytes and room for ":port" or "[v6]:port" (ssh_hostkey). */
	memset(longest, 'a', 253 + 9);
	longest[253 + 9] = '\0';
	assert_int_equal(parse_fmt(&q, &err,
				   "{\"v\":1,\"id\":1,\"op\":\"headers\",\"session\":\"" SID
				   "\",\"host\":\"%s\"}",
				   longest),
			 0);
	broker_request_done(&q);
	strcat(longest, "a");
	assert_int_equal(parse_fmt(&q, &err,
				   "{\"v\":1,\"id\":1,\"op\":\"headers\",\"session\":\"" SID
				   "\",\"host\":\"%s\"}",
				   longest),
			 -EINVAL);
}

static void test_request_other_fields_are_checked(void **state)
{
	static const char *const bad[] = {
	    "\"op\":\"read\",\"session\":\"" SID "\",\"name\":\"git hub\"",
	    "\"op\":\"read\",\"session\":\"" SID "\",\"name\":\"git/hub\"",
	    "\"op\":\"resolve\",\"session\":\"" SID "\",\"host\":\"h\",\"surrogate\":\"a b\"",
	    "\"op\":\"resolve\",\"session\":\"" SID "\",\"host\":\"h\",\"surrogate\":\"\\u0001x\"",
	    "\"op\":\"redact\",\"session\":\"" SID "\",\"stream\":2",
	    "\"op\":\"redact\",\"session\":\"" SID "\",\"stream\":-1",
	    "\"op\":\"redact\",\"session\":\"" SID "\",\"stream\":0,\"flush\":1",
	    "\"op\":\"open\",\"policy_hash\":\"" PHASH "0\",\"credentials\":[]",
	    "\"op\":\"open\",\"policy_hash\":\"abcd\",\"credentials\":[]",
	    "\"op\":\"open\",\"policy_hash\":\"" PHASH "\",\"credentials\":{}",
	    "\"op\":\"open\",\"policy_hash\":\"" PHASH "\",\"credentials\":[],\"label\":\"a\\nb\"",
	    "\"op\":\"open\",\"policy_hash\":\"" PHASH "\",\"credentials\":[],\"ttl_ms\":-5",
	    "\"op\":\"open\",\"policy_hash\":\"" PHASH "\",\"credentials\":[],\"ttl_ms\":1e3",
	    "\"op\":\"open\",\"policy_hash\":\"" PHASH
	    "\",\"credentials\":[],\"ttl_ms\":18446744073709552",
	};
	struct broker_request q;
	struct al_error err;

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		assert_int_equal(parse_fmt(&q, &err, "{\"v\":1,\"id\":1,%s}", bad[i]), -EINVAL);
		assert_true(err.msg[0] != '\0');
	}
	/* The longest TTL that fits in microseconds is allowed. */
	assert_int_equal(parse_fmt(&q, &err,
				   "{\"v\":1,\"id\":1,\"op\":\"open\",\"policy_hash\":\"" PHASH
				   "\",\"credentials\":[],\"ttl_ms\":18446744073709551}"),
			 0);
	assert_int_equal(q.ttl_usec, 18446744073709551ULL * 1000);
	broker_request_done(&q);
}

/* What the policy parser says about {"credentials": creds}. */
static void policy_message(const char *creds, char msg[static AL_ERROR_MSG_MAX])
{
	struct policy *p = NULL;
	struct al_error err = {0};
	char buf[4096];

	(void)snprintf(buf, sizeof(buf), "{\"credentials\":%s}", creds);
	assert_int_equal(policy_load_string(buf, &p, &err), -EINVAL);
	assert_null(p);
	memcpy(msg, err.msg, AL_ERROR_MSG_MAX);
}

static void test_request_credentials_go_through_the_policy_parser(void **state)
{
	static const char *const bad[] = {
	    /* a host that is no host */
	    "[{\"name\":\"x\",\"source\":{\"type\":\"env\",\"var\":\"X\"},"
	    "\"injection\":{\"type\":\"env_var\",\"var_name\":\"X\"},\"hosts\":[\"exa "
	    "mple.com\"]}]",
	    /* no host and not exposed */
	    "[{\"name\":\"x\",\"source\":{\"type\":\"env\",\"var\":\"X\"},"
	    "\"injection\":{\"type\":\"env_var\",\"var_name\":\"X\"}}]",
	    /* an unknown source */
	    "[{\"name\":\"x\",\"source\":{\"type\":\"cloud\"},"
	    "\"injection\":{\"type\":\"env_var\",\"var_name\":\"X\"},\"hosts\":[\"a.com\"]}]",
	    /* a header the proxy owns */
	    "[{\"name\":\"x\",\"source\":{\"type\":\"env\",\"var\":\"X\"},"
	    "\"injection\":{\"type\":\"sidecar\",\"header\":\"Host\"},\"hosts\":[\"a.com\"]}]",
	    /* two credentials of one name */
	    "[{\"name\":\"x\",\"source\":{\"type\":\"vault\"},"
	    "\"injection\":{\"type\":\"env_var\",\"var_name\":\"X\"},\"hosts\":[\"a.com\"]},"
	    "{\"name\":\"x\",\"source\":{\"type\":\"vault\"},"
	    "\"injection\":{\"type\":\"env_var\",\"var_name\":\"Y\"},\"hosts\":[\"a.com\"]}]",
	    /* a field a credential does not have */
	    "[{\"name\":\"x\",\"source\":{\"type\":\"vault\"},\"value\":\"s3cr3t\","
	    "\"injection\":{\"type\":\"env_var\",\"var_name\":\"X\"},\"hosts\":[\"a.com\"]}]",
	};
	struct broker_request q;
	struct al_error err;
	char want[AL_ERROR_MSG_MAX];

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		policy_message(bad[i], want);
		assert_int_equal(
		    parse_fmt(&q, &err,
			      "{\"v\":1,\"id\":3,\"op\":\"open\",\"policy_hash\":\"" PHASH
			      "\",\"credentials\":%s}",
			      bad[i]),
		    -EINVAL);
		assert_string_equal(err.msg, want);
		assert_non_null(strstr(err.msg, "credentials["));
		assert_null(q.creds);
		assert_int_equal(q.id, 3);
	}
	/* Only the credentials are read: other policy fields are not smuggled in with them. */
	assert_int_equal(parse_fmt(&q, &err,
				   "{\"v\":1,\"id\":3,\"op\":\"open\",\"policy_hash\":\"" PHASH
				   "\",\"credentials\":[],\"network\":{}}"),
			 -EINVAL);
	assert_non_null(strstr(err.msg, "unknown field \"network\""));
}

/* ---- round trips ---- */

static char *canonical(const struct policy *p)
{
	char *s = NULL;

	assert_int_equal(policy_to_canonical_json(p, &s), 0);
	return s;
}

static void assert_same_request(const struct broker_request *a, const struct broker_request *b)
{
	assert_int_equal(a->id, b->id);
	assert_int_equal(a->op, b->op);
	assert_true(streq_ptr(a->session, b->session));
	assert_true(streq_ptr(a->surrogate, b->surrogate));
	assert_true(streq_ptr(a->host, b->host));
	assert_true(streq_ptr(a->name, b->name));
	assert_true(streq_ptr(a->policy_hash, b->policy_hash));
	assert_true(streq_ptr(a->label, b->label));
	assert_int_equal(a->ttl_usec, b->ttl_usec);
	assert_int_equal(a->stream, b->stream);
	assert_int_equal(a->flush, b->flush);
}

static void test_request_encode_and_parse_round_trip_each_op(void **state)
{
	struct policy *p = NULL;
	const struct broker_request reqs[] = {
	    {.id = 1,
	     .op = BROKER_OP_OPEN,
	     .policy_hash = PHASH,
	     .label = "ci/run#7",
	     .ttl_usec = 90 * 1000 * 1000},
	    {.id = 2, .op = BROKER_OP_OPEN, .policy_hash = PHASH},
	    {.id = 3,
	     .op = BROKER_OP_RESOLVE,
	     .session = SID,
	     .surrogate = "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
	     .host = "api.github.com"},
	    {.id = 4, .op = BROKER_OP_READ, .session = SID, .name = "github"},
	    {.id = 5, .op = BROKER_OP_HEADERS, .session = SID, .host = "[::1]:8443"},
	    {.id = 6, .op = BROKER_OP_REDACT, .session = SID, .stream = 1, .flush = true},
	    {.id = 7, .op = BROKER_OP_REDACT, .session = SID, .stream = 0},
	    {.id = 8, .op = BROKER_OP_CLOSE, .session = SID},
	    {.id = 9, .op = BROKER_OP_HEALTH},
	    {.id = 9007199254740991ULL, .op = BROKER_OP_LIST},
	};
	struct al_error err = {0};

	(void)state;
	assert_int_equal(policy_load_string("{\"credentials\":" CREDS_JSON "}", &p, &err), 0);
	for (size_t i = 0; i < ELEMENTSOF(reqs); i++) {
		_cleanup_free_ char *json = NULL;
		struct broker_request q;
		size_t len;

		assert_int_equal(broker_request_encode(&reqs[i], p, &json, &len), 0);
		assert_int_equal(len, strlen(json));
		assert_int_equal(broker_request_parse(json, len, &q, &err), 0);
		assert_same_request(&reqs[i], &q);
		if (reqs[i].op == BROKER_OP_OPEN) {
			_cleanup_free_ char *want = canonical(p), *got = canonical(q.creds);

			assert_string_equal(got, want);
		} else {
			assert_null(q.creds);
		}
		broker_request_done(&q);
	}
	policy_free(p);
}

static void test_request_encode_leaves_out_fields_the_op_does_not_have(void **state)
{
	const struct broker_request r = {.id = 1,
					 .op = BROKER_OP_CLOSE,
					 .session = SID,
					 .host = "api.github.com",
					 .name = "github",
					 .stream = 1};
	_cleanup_free_ char *json = NULL;
	struct broker_request q;
	struct al_error err = {0};
	size_t len;

	(void)state;
	assert_int_equal(broker_request_encode(&r, NULL, &json, &len), 0);
	assert_null(strstr(json, "api.github.com"));
	assert_null(strstr(json, "stream"));
	assert_int_equal(broker_request_parse(json, len, &q, &err), 0);
	assert_null(q.host);
	broker_request_done(&q);
}

/* ---- answers ---- */

static void test_error_answer_carries_the_errno_back(void **state)
{
	static const struct {
		int code;
		const char *name;
	} codes[] = {
	    {-EINVAL, "EINVAL"},	 {-ENOENT, "ENOENT"},
	    {-EPERM, "EPERM"},		 {-EACCES, "EACCES"},
	    {-EMSGSIZE, "EMSGSIZE"},	 {-EPROTONOSUPPORT, "EPROTONOSUPPORT"},
	    {-ENOMEM, "ENOMEM"},	 {-EBUSY, "EBUSY"},
	    {-ETIMEDOUT, "ETIMEDOUT"},	 {-EFBIG, "EFBIG"},
	    {-ENODATA, "ENODATA"},	 {-EIO, "EIO"},
	    {-EOPNOTSUPP, "EOPNOTSUPP"}, {-EBADMSG, "EBADMSG"},
	    {-ENOKEY, "ENOKEY"},	 {-EEXIST, "EEXIST"},
	};
	struct broker_response resp;
	struct al_error err = {0};
	char want[64];

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(codes); i++) {
		_cleanup_free_ char *json = NULL;
		size_t len;

		assert_int_equal(
		    broker_response_error(77, codes[i].code, "refused: \"why\"\\", &json, &len), 0);
		/* On the wire, errno's name: the two ends need not share errno's numbers. */
		(void)snprintf(want, sizeof(want), "\"errno\":\"%s\"", codes[i].name);
		assert_non_null(strstr(json, want));
		assert_int_equal(broker_response_parse(json, len, &resp, &err), 0);
		assert_false(resp.ok);
		assert_int_equal(resp.code, codes[i].code);
		assert_int_equal(resp.id, 77);
		assert_string_equal(resp.error, "refused: \"why\"\\");
		broker_response_done(&resp);
	}
}

static void test_error_answer_names_an_unlisted_errno_eio(void **state)
{
	_cleanup_free_ char *json = NULL;
	struct broker_response resp;
	size_t len;

	(void)state;
	assert_int_equal(broker_response_error(1, -EXDEV, "odd", &json, &len), 0);
	assert_non_null(strstr(json, "\"errno\":\"EIO\""));
	assert_int_equal(broker_response_parse(json, len, &resp, NULL), 0);
	assert_int_equal(resp.code, -EIO);
	broker_response_done(&resp);
	/* An answer whose errno the client does not know is an I/O error, not success. */
	assert_int_equal(
	    broker_response_parse("{\"ok\":false,\"errno\":\"EWHAT\"}", 29, &resp, NULL), 0);
	assert_int_equal(resp.code, -EIO);
	broker_response_done(&resp);
}

static void test_answer_without_ok_is_refused(void **state)
{
	static const char *const bad[] = {
	    "{\"v\":1,\"id\":1}",
	    "{\"v\":1,\"id\":1,\"ok\":1}",
	    "[true]",
	    "{\"ok\":true,\"surrogates\":[]}",
	    "{\"ok\":true,\"surrogates\":{\"github\":1}}",
	};
	struct broker_response resp;
	struct al_error err = {0};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		assert_int_equal(broker_response_parse(bad[i], strlen(bad[i]), &resp, &err),
				 -EBADMSG);
		assert_true(err.msg[0] != '\0');
	}
	assert_int_equal(broker_response_parse("{\"ok\":tru", 9, &resp, &err), -EINVAL);
}

static void test_ok_answer_parses_as_ok(void **state)
{
	_cleanup_free_ char *json = NULL;
	struct broker_response resp;
	size_t len;

	(void)state;
	assert_int_equal(broker_response_ok(12, &json, &len), 0);
	assert_int_equal(broker_response_parse(json, len, &resp, NULL), 0);
	assert_true(resp.ok);
	assert_int_equal(resp.code, 0);
	assert_int_equal(resp.id, 12);
	assert_null(resp.error);
	assert_null(resp.session);
	assert_int_equal(resp.n_surrogates, 0);
	broker_response_done(&resp);
}

/* A broker with one session of CREDS_JSON's credentials, opened by uid. */
static struct broker *broker_with_session(uid_t uid, struct broker_session **ret)
{
	struct broker *b = NULL;
	struct broker_session *s = NULL;
	struct policy *p = NULL;
	struct al_error err = {0};

	assert_int_equal(
	    setenv("AL_TEST_PROTO_GITHUB", "ghp_0123456789abcdefghijABCDEFGHIJ012345", 1), 0);
	assert_int_equal(setenv("AL_TEST_PROTO_OPENAI", "sk-proj-secretvalue0123456789", 1), 0);
	assert_int_equal(broker_new(NULL, &b), 0);
	assert_int_equal(policy_load_string("{\"credentials\":" CREDS_JSON "}", &p, &err), 0);
	assert_int_equal(
	    broker_session_prepare(
		b, &(struct broker_open){.peer = {uid, 100}, .creds = p, .policy_hash = PHASH}, &s,
		&err),
	    0);
	assert_int_equal(broker_session_read_sources(s, &err), 0);
	assert_int_equal(broker_session_add(b, s, &err), 0);
	*ret = s;
	return b;
}

static void test_open_answer_carries_the_session_and_its_surrogates(void **state)
{
	_cleanup_(broker_freep) struct broker *b = NULL;
	_cleanup_free_ char *json = NULL;
	struct broker_session *s = NULL;
	struct broker_response resp;
	size_t len;

	(void)state;
	b = broker_with_session(1000, &s);
	assert_int_equal(broker_response_open(21, s, &json, &len), 0);
	assert_null(strstr(json, "ghp_0123456789abcdefghijABCDEFGHIJ012345"));
	assert_null(strstr(json, "sk-proj-secretvalue0123456789"));
	assert_int_equal(broker_response_parse(json, len, &resp, NULL), 0);
	assert_true(resp.ok);
	assert_int_equal(resp.id, 21);
	assert_string_equal(resp.session, broker_session_id(s));
	assert_int_equal(resp.n_surrogates, broker_session_count(s));
	assert_int_equal(resp.n_surrogates, 2);
	for (size_t i = 0; i < resp.n_surrogates; i++) {
		assert_string_equal(resp.names[i], broker_session_cred_name(s, i));
		assert_string_equal(resp.surrogates[i], broker_session_cred_surrogate(s, i));
	}
	broker_response_done(&resp);
}

static void test_health_and_list_answers_describe_the_sessions(void **state)
{
	_cleanup_(broker_freep) struct broker *b = NULL;
	struct broker_session *s = NULL;
	struct broker_response resp;
	struct json_object *v, *e;
	char *text = NULL;
	size_t len;

	(void)state;
	b = broker_with_session(1000, &s);
	{
		_cleanup_free_ char *json = NULL;

		assert_int_equal(broker_response_health(1, b, 33, &json, &len), 0);
		assert_int_equal(broker_response_parse(json, len, &resp, NULL), 0);
	}
	assert_true(json_object_object_get_ex(resp.root, "sessions", &v));
	assert_int_equal(json_object_get_int(v), 1);
	assert_true(json_object_object_get_ex(resp.root, "uptime_s", &v));
	assert_int_equal(json_object_get_int(v), 33);
	assert_false(json_object_object_get_ex(resp.root, "vault", &v));
	assert_int_equal(broker_response_to_string(&resp, &text), 0);
	assert_non_null(strstr(text, "serving"));
	free(text);
	broker_response_done(&resp);

	/* The owner and root see the session; another uid does not. */
	for (size_t i = 0; i < 2; i++) {
		_cleanup_free_ char *json = NULL;
		const uid_t uid = i == 0 ? 0 : 1000;

		assert_int_equal(
		    broker_response_list(2, b, &(struct broker_peer){uid, 1}, &json, &len), 0);
		assert_int_equal(broker_response_parse(json, len, &resp, NULL), 0);
		assert_true(json_object_object_get_ex(resp.root, "sessions", &v));
		assert_int_equal(json_object_array_length(v), 1);
		e = json_object_array_get_idx(v, 0);
		/* The id is the session's capability: a list shows its tag only. */
		assert_false(json_object_object_get_ex(e, "id", &v));
		assert_true(json_object_object_get_ex(e, "tag", &v));
		assert_int_equal(strlen(json_object_get_string(v)), 16);
		assert_null(strstr(json, broker_session_id(s)));
		broker_response_done(&resp);
	}
	{
		_cleanup_free_ char *json = NULL;

		assert_int_equal(
		    broker_response_list(3, b, &(struct broker_peer){1001, 1}, &json, &len), 0);
		assert_int_equal(broker_response_parse(json, len, &resp, NULL), 0);
		assert_true(json_object_object_get_ex(resp.root, "sessions", &v));
		assert_int_equal(json_object_array_length(v), 0);
		broker_response_done(&resp);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_frame_header_is_two_big_endian_lengths),
	    cmocka_unit_test(test_frame_refuses_an_empty_message),
	    cmocka_unit_test(test_frame_refuses_json_over_the_limit),
	    cmocka_unit_test(test_frame_refuses_payload_over_the_callers_limit),
	    cmocka_unit_test(test_request_of_each_op_parses_with_its_fields),
	    cmocka_unit_test(test_request_fields_hold_what_was_sent),
	    cmocka_unit_test(test_request_without_a_required_field_is_refused_by_name),
	    cmocka_unit_test(test_request_with_a_field_of_another_op_is_refused),
	    cmocka_unit_test(test_request_needs_op_version_and_an_object),
	    cmocka_unit_test(test_request_of_another_version_is_protonosupport),
	    cmocka_unit_test(test_request_id_is_kept_when_refused),
	    cmocka_unit_test(test_request_session_is_64_lowercase_hex_digits),
	    cmocka_unit_test(test_request_host_holds_only_host_characters),
	    cmocka_unit_test(test_request_other_fields_are_checked),
	    cmocka_unit_test(test_request_credentials_go_through_the_policy_parser),
	    cmocka_unit_test(test_request_encode_and_parse_round_trip_each_op),
	    cmocka_unit_test(test_request_encode_leaves_out_fields_the_op_does_not_have),
	    cmocka_unit_test(test_error_answer_carries_the_errno_back),
	    cmocka_unit_test(test_error_answer_names_an_unlisted_errno_eio),
	    cmocka_unit_test(test_answer_without_ok_is_refused),
	    cmocka_unit_test(test_ok_answer_parses_as_ok),
	    cmocka_unit_test(test_open_answer_carries_the_session_and_its_surrogates),
	    cmocka_unit_test(test_health_and_list_answers_describe_the_sessions),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
