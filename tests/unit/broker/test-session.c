/* tests/unit/broker/test-session.c: the broker's core, driven directly as the daemon and the
 * embedded client drive it. Which session and which hosts get a real value, what the sandbox
 * reads, the sidecar headers, redaction, the end of sessions, and the vault's bindings. */

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "broker/broker-internal.h"
#include "common/audit.h"
#include "common/fd-util.h"

#define PHASH "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

#define GITHUB_VALUE "ghp_0123456789abcdefghijABCDEFGHIJ012345"
#define ANTHROPIC_VALUE "sk-ant-api03-realvalue-0123456789"
#define OPENAI_VALUE "sk-proj-openai-realvalue-98765"
#define EXTRA_VALUE "extra-real-value-4242"

/* Four credentials from the environment: one per injection, one exposed, two sidecars that share
 * the hosts below openai.com. */
#define CREDS                                                                                      \
	"[{\"name\":\"github\",\"source\":{\"type\":\"env\",\"var\":\"AL_TEST_SESSION_GITHUB\"},"  \
	"\"injection\":{\"type\":\"env_var\",\"var_name\":\"GITHUB_TOKEN\"},"                      \
	"\"hosts\":[\"api.github.com\",\"*.githubusercontent.com\"]},"                             \
	"{\"name\":\"anthropic\",\"source\":{\"type\":\"env\",\"var\":\"AL_TEST_SESSION_ANTH\"},"  \
	"\"injection\":{\"type\":\"file\",\"path\":\"/run/secrets/anthropic\"},"                   \
	"\"hosts\":[\"api.anthropic.com\"],\"expose\":true},"                                      \
	"{\"name\":\"openai\",\"source\":{\"type\":\"env\",\"var\":\"AL_TEST_SESSION_OPENAI\"},"   \
	"\"injection\":{\"type\":\"sidecar\",\"header\":\"Authorization\",\"format\":\"Bearer "    \
	"{}\"},\"hosts\":[\"api.openai.com\"]},"                                                   \
	"{\"name\":\"extra\",\"source\":{\"type\":\"env\",\"var\":\"AL_TEST_SESSION_EXTRA\"},"     \
	"\"injection\":{\"type\":\"sidecar\",\"header\":\"X-Extra\",\"format\":\"k={};v=1\"},"     \
	"\"hosts\":[\"*.OpenAI.com\"]}]"

static const char *const values[] = {GITHUB_VALUE, ANTHROPIC_VALUE, OPENAI_VALUE, EXTRA_VALUE};

/* The owners the tests tag sessions with (the daemon tags them with its connection). */
static const char owner_a, owner_b;

struct fixture {
	char dir[64];
	char audit_path[128], vault_path[128];
	struct al_audit *audit;
	struct broker *b;
};

static const unsigned char vault_key[32] = {0x5e, 0xc2, 0xe7, 1, 2, 3, 4, 5, 6, 7, 8, 9};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	strcpy(f->dir, "/tmp/airlock-session-test.XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	(void)snprintf(f->audit_path, sizeof(f->audit_path), "%s/audit.jsonl", f->dir);
	(void)snprintf(f->vault_path, sizeof(f->vault_path), "%s/vault", f->dir);
	if (al_audit_open(f->audit_path, "test-session", &f->audit) < 0 ||
	    broker_new(f->audit, &f->b) < 0)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[256];
	int r;

	broker_free(f->b);
	al_audit_close(f->audit);
	(void)snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	r = system(cmd);
	free(f);
	return r == 0 ? 0 : -1;
}

static int group_setup(void **state)
{
	static const char *const env[][2] = {
	    {"AL_TEST_SESSION_GITHUB", GITHUB_VALUE},
	    {"AL_TEST_SESSION_ANTH", ANTHROPIC_VALUE},
	    {"AL_TEST_SESSION_OPENAI", OPENAI_VALUE},
	    {"AL_TEST_SESSION_EXTRA", EXTRA_VALUE},
	};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(env); i++)
		if (setenv(env[i][0], env[i][1], 1) < 0)
			return -1;
	return 0;
}

struct opened {
	uid_t uid;
	uint64_t ttl_usec;
	const void *owner;
};

/* Opens a session of creds (a JSON array) the way the daemon does. On error *ret is untouched
 * and err says why. */
static int open_session(struct fixture *f, const char *creds, const struct opened *o,
			struct broker_session **ret, struct al_error *err)
{
	struct broker_open bo = {.peer = {o ? o->uid : 1000, 4242},
				 .policy_hash = PHASH,
				 .label = "test",
				 .ttl_usec = o ? o->ttl_usec : 0,
				 .owner = o ? o->owner : NULL};
	struct broker_session *s = NULL;
	char json[4096];
	int r;

	(void)snprintf(json, sizeof(json), "{\"credentials\":%s}", creds);
	*err = (struct al_error){0};
	r = policy_load_string(json, &bo.creds, err);
	assert_int_equal(r, 0);
	r = broker_session_prepare(f->b, &bo, &s, err);
	assert_null(bo.creds); /* taken, also on failure */
	if (r < 0)
		return r;
	r = broker_session_read_sources(s, err);
	if (r >= 0)
		r = broker_session_add(f->b, s, err);
	if (r < 0) {
		broker_session_free(s);
		return r;
	}
	*ret = s;
	return 0;
}

static struct broker_session *open_ok(struct fixture *f, const char *creds, const struct opened *o)
{
	struct broker_session *s = NULL;
	struct al_error err = {0};

	assert_int_equal(open_session(f, creds, o, &s, &err), 0);
	return s;
}

static const struct broker_peer owner_peer = {1000, 4242};

static int resolve(struct fixture *f, const struct broker_session *s, const char *surrogate,
		   const char *host, struct broker_bytes *ret, struct al_error *err)
{
	*err = (struct al_error){0};
	return broker_resolve(f->b, &owner_peer, broker_session_id(s), surrogate, host, ret, err);
}

static bool bytes_equal(const struct broker_bytes *b, const char *s)
{
	return b->len == strlen(s) && memcmp(b->data, s, b->len) == 0;
}

/* The audit file's line that holds what, or NULL. The caller frees the line. */
static char *audit_line(struct fixture *f, const char *what)
{
	_cleanup_free_ char *all = NULL;
	const char *hit, *start, *end;

	assert_int_equal(al_read_file_at(AT_FDCWD, f->audit_path, 1 << 20, &all, NULL), 0);
	hit = strstr(all, what);
	if (!hit)
		return NULL;
	for (start = hit; start > all && start[-1] != '\n'; start--)
		;
	end = strchrnul(hit, '\n');
	return strndup(start, (size_t)(end - start));
}

static void assert_audit_holds_no_value(struct fixture *f)
{
	_cleanup_free_ char *all = NULL;

	assert_int_equal(al_read_file_at(AT_FDCWD, f->audit_path, 1 << 20, &all, NULL), 0);
	for (size_t i = 0; i < ELEMENTSOF(values); i++)
		assert_null(strstr(all, values[i]));
}

/* ---- surrogates ---- */

static void test_surrogates_differ_per_session_and_from_the_value(void **state)
{
	struct fixture *f = *state;
	struct broker_session *s1, *s2;

	s1 = open_ok(f, CREDS, NULL);
	s2 = open_ok(f, CREDS, NULL);
	assert_int_equal(broker_session_count(s1), 4);
	assert_string_not_equal(broker_session_id(s1), broker_session_id(s2));
	assert_int_equal(strlen(broker_session_id(s1)), 64);
	assert_int_equal(strspn(broker_session_id(s1), "0123456789abcdef"), 64);
	for (size_t i = 0; i < broker_session_count(s1); i++) {
		const char *a = broker_session_cred_surrogate(s1, i),
			   *b = broker_session_cred_surrogate(s2, i);

		assert_string_equal(broker_session_cred_name(s1, i),
				    broker_session_cred_name(s2, i));
		assert_string_not_equal(a, b);
		assert_string_not_equal(a, values[i]);
		assert_null(strstr(a, values[i]));
	}
	/* A known token format keeps its shape, so that client libraries accept the surrogate. */
	assert_memory_equal(broker_session_cred_surrogate(s1, 0), "ghp_", 4);
	assert_int_equal(strlen(broker_session_cred_surrogate(s1, 0)), strlen(GITHUB_VALUE));
	assert_int_equal(broker_session_total(f->b), 2);
}

/* ---- resolve ---- */

static void test_resolve_grants_the_value_only_for_bound_hosts(void **state)
{
	static const char *const granted[] = {
	    "api.github.com",
	    "API.GitHub.COM",
	    "raw.githubusercontent.com",
	    "a.b.GitHubUserContent.com",
	};
	static const char *const refused[] = {
	    "githubusercontent.com", /* "*.x" is below x, not x itself */
	    "xgithubusercontent.com", "github.com", "api.github.com.evil.com", "evil.com",
	    "api.anthropic.com", /* another credential's host */
	};
	struct fixture *f = *state;
	struct broker_session *s = open_ok(f, CREDS, NULL);
	const char *sur = broker_session_cred_surrogate(s, 0);
	struct broker_bytes v = {0};
	struct al_error err;

	for (size_t i = 0; i < ELEMENTSOF(granted); i++) {
		assert_int_equal(resolve(f, s, sur, granted[i], &v, &err), 0);
		assert_true(bytes_equal(&v, GITHUB_VALUE));
	}
	for (size_t i = 0; i < ELEMENTSOF(refused); i++) {
		assert_int_equal(resolve(f, s, sur, refused[i], &v, &err), -EPERM);
		assert_non_null(strstr(err.msg, "not bound to this host"));
		assert_null(strstr(err.msg, GITHUB_VALUE));
	}
	/* A sidecar credential resolves too (the proxy asks for it on its hosts). */
	assert_int_equal(
	    resolve(f, s, broker_session_cred_surrogate(s, 2), "api.openai.com", &v, &err), 0);
	assert_true(bytes_equal(&v, OPENAI_VALUE));
	assert_int_equal(
	    resolve(f, s, "airlock_sur_notasurrogate0000000000000", "api.github.com", &v, &err),
	    -EPERM);
	assert_non_null(strstr(err.msg, "not a surrogate of this session"));
	/* The real value is no surrogate of it. */
	assert_int_equal(resolve(f, s, GITHUB_VALUE, "api.github.com", &v, &err), -EPERM);
}

static void test_resolve_refuses_another_sessions_surrogate_and_audits_it(void **state)
{
	struct fixture *f = *state;
	struct broker_session *mine = open_ok(f, CREDS, NULL), *theirs = open_ok(f, CREDS, NULL);
	_cleanup_free_ char *line = NULL;
	struct broker_bytes v = {0};
	struct al_error err;

	assert_int_equal(
	    resolve(f, mine, broker_session_cred_surrogate(mine, 0), "api.github.com", &v, &err),
	    0);
	assert_int_equal(
	    resolve(f, mine, broker_session_cred_surrogate(theirs, 0), "api.github.com", &v, &err),
	    -EPERM);
	assert_non_null(strstr(err.msg, "belongs to another session"));
	line = audit_line(f, "belongs to another session");
	assert_non_null(line);
	assert_non_null(strstr(line, "\"kind\":\"violation\""));
	assert_non_null(strstr(line, "\"verdict\":\"refused\""));
	/* The audit names the session by its tag: the id is the session's capability. */
	assert_null(strstr(line, broker_session_id(mine)));
	assert_non_null(strstr(line, "\"session\":\""));
	assert_non_null(strstr(line, "\"host\":\"api.github.com\""));
	free(line);
	line = audit_line(f, "\"verdict\":\"granted\"");
	assert_non_null(line);
	assert_non_null(strstr(line, "\"credential\":\"github\""));
	assert_audit_holds_no_value(f);
}

/* ---- lookups ---- */

static void test_other_uid_gets_enoent_for_an_existing_session(void **state)
{
	struct fixture *f = *state;
	struct broker_session *s = open_ok(f, CREDS, NULL);
	const struct broker_peer other = {1001, 4242};
	const char *id = broker_session_id(s);
	const char *unknown = "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff";
	struct broker_bytes v = {0};
	struct al_error err = {0}, err_unknown = {0};
	const char *want = "no such session";

	assert_int_equal(broker_read(f->b, &other, id, "github", &v, &err), -ENOENT);
	assert_string_equal(err.msg, want);
	assert_int_equal(broker_headers(f->b, &other, id, "api.openai.com", &v, &err), -ENOENT);
	assert_string_equal(err.msg, want);
	assert_int_equal(broker_redact_output(f->b, &other, id, 0, "x", 1, true, &v, &err),
			 -ENOENT);
	assert_int_equal(broker_close(f->b, &other, id, &err), -ENOENT);
	assert_string_equal(err.msg, want);
	/* resolve refuses it as it refuses an id that does not exist: ids cannot be probed. */
	assert_int_equal(broker_resolve(f->b, &other, id, broker_session_cred_surrogate(s, 0),
					"api.github.com", &v, &err),
			 -EPERM);
	assert_int_equal(broker_resolve(f->b, &owner_peer, unknown,
					broker_session_cred_surrogate(s, 0), "api.github.com", &v,
					&err_unknown),
			 -EPERM);
	assert_string_equal(err.msg, err_unknown.msg);
	assert_int_equal(broker_read(f->b, &owner_peer, unknown, "github", &v, &err), -ENOENT);
	/* The session is untouched and still its owner's. */
	assert_int_equal(broker_session_total(f->b), 1);
	assert_int_equal(broker_read(f->b, &owner_peer, id, "github", &v, &err), 0);
	assert_audit_holds_no_value(f);
}

/* ---- read, headers, redact ---- */

static void test_read_gives_the_surrogate_or_the_exposed_value(void **state)
{
	struct fixture *f = *state;
	struct broker_session *s = open_ok(f, CREDS, NULL);
	const char *id = broker_session_id(s);
	struct broker_bytes v = {0};
	struct al_error err = {0};

	assert_int_equal(broker_read(f->b, &owner_peer, id, "github", &v, &err), 0);
	assert_true(bytes_equal(&v, broker_session_cred_surrogate(s, 0)));
	assert_int_equal(broker_read(f->b, &owner_peer, id, "anthropic", &v, &err), 0);
	assert_true(bytes_equal(&v, ANTHROPIC_VALUE));
	/* A sidecar credential is never given to the sandbox. */
	assert_int_equal(broker_read(f->b, &owner_peer, id, "openai", &v, &err), -ENOENT);
	assert_null(strstr(err.msg, OPENAI_VALUE));
	assert_int_equal(broker_read(f->b, &owner_peer, id, "nonesuch", &v, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "no credential nonesuch"));
	assert_audit_holds_no_value(f);
}

static void test_headers_are_the_sidecar_credentials_bound_to_the_host(void **state)
{
	struct fixture *f = *state;
	struct broker_session *s = open_ok(f, CREDS, NULL);
	const char *id = broker_session_id(s);
	struct broker_bytes v = {0};
	struct al_error err = {0};

	assert_int_equal(broker_headers(f->b, &owner_peer, id, "api.openai.com", &v, &err), 0);
	assert_true(bytes_equal(&v, "Authorization: Bearer " OPENAI_VALUE "\r\n"
				    "X-Extra: k=" EXTRA_VALUE ";v=1\r\n"));
	assert_int_equal(broker_headers(f->b, &owner_peer, id, "Files.OpenAI.com", &v, &err), 0);
	assert_true(bytes_equal(&v, "X-Extra: k=" EXTRA_VALUE ";v=1\r\n"));
	/* Not for a bare suffix, nor for credentials injected another way. */
	assert_int_equal(broker_headers(f->b, &owner_peer, id, "openai.com", &v, &err), 0);
	assert_int_equal(v.len, 0);
	assert_int_equal(broker_headers(f->b, &owner_peer, id, "api.github.com", &v, &err), 0);
	assert_int_equal(v.len, 0);
	assert_int_equal(broker_headers(f->b, &owner_peer, id, "api.anthropic.com", &v, &err), 0);
	assert_int_equal(v.len, 0);
	assert_audit_holds_no_value(f);
}

/* Feeds chunk to stream and appends the output to out (at most size bytes, NUL-terminated). */
static void redact(struct fixture *f, const char *id, unsigned stream, const char *chunk,
		   bool flush, char *out, size_t size)
{
	struct broker_bytes v = {0};
	struct al_error err = {0};
	size_t n = strlen(out);

	assert_int_equal(broker_redact_output(f->b, &owner_peer, id, stream, chunk, strlen(chunk),
					      flush, &v, &err),
			 0);
	assert_true(n + v.len < size);
	memcpy(out + n, v.data, v.len);
	out[n + v.len] = '\0';
}

static void test_redact_replaces_values_across_chunks_per_stream(void **state)
{
	struct fixture *f = *state;
	struct broker_session *s = open_ok(f, CREDS, NULL);
	const char *id = broker_session_id(s);
	char out[2][512] = {"", ""};
	struct broker_bytes v = {0};
	struct al_error err = {0};

	/* Each value split over chunks, with the other stream written in between. */
	redact(f, id, 0, "token=ghp_0123456789abcdefghij", false, out[0], sizeof(out[0]));
	redact(f, id, 1, "err: sk-ant-api03-real", false, out[1], sizeof(out[1]));
	redact(f, id, 0, "ABCDEFGHIJ012345 and sk-proj", false, out[0], sizeof(out[0]));
	redact(f, id, 1, "value-0123456789\n", false, out[1], sizeof(out[1]));
	redact(f, id, 0, "-openai-realvalue-98765", true, out[0], sizeof(out[0]));
	redact(f, id, 1, "", true, out[1], sizeof(out[1]));
	assert_string_equal(out[0], "token=[REDACTED:github] and [REDACTED:openai]");
	assert_string_equal(out[1], "err: [REDACTED:anthropic]\n");
	/* A stream's own chunks only: a value split across the two streams is not one. */
	out[0][0] = out[1][0] = '\0';
	redact(f, id, 0, "ghp_0123456789abcdefghij", true, out[0], sizeof(out[0]));
	redact(f, id, 1, "ABCDEFGHIJ012345", true, out[1], sizeof(out[1]));
	assert_string_equal(out[0], "ghp_0123456789abcdefghij");
	assert_string_equal(out[1], "ABCDEFGHIJ012345");
	assert_int_equal(broker_redact_output(f->b, &owner_peer, id, 2, "x", 1, true, &v, &err),
			 -EINVAL);
}

/* ---- the end of sessions ---- */

static void test_close_ends_the_session(void **state)
{
	struct fixture *f = *state;
	struct broker_session *s = open_ok(f, CREDS, NULL), *keep = open_ok(f, CREDS, NULL);
	char id[80];
	struct broker_bytes v = {0};
	struct al_error err = {0};

	strcpy(id, broker_session_id(s));
	assert_int_equal(broker_close(f->b, &owner_peer, id, &err), 0);
	assert_int_equal(broker_session_total(f->b), 1);
	assert_int_equal(broker_read(f->b, &owner_peer, id, "github", &v, &err), -ENOENT);
	assert_int_equal(broker_close(f->b, &owner_peer, id, &err), -ENOENT);
	assert_int_equal(
	    broker_read(f->b, &owner_peer, broker_session_id(keep), "github", &v, &err), 0);
}

static void test_close_owned_ends_only_the_owners_sessions(void **state)
{
	struct fixture *f = *state;
	const struct opened a = {.uid = 1000, .owner = &owner_a},
			    b = {.uid = 1000, .owner = &owner_b};
	struct broker_session *kept;
	char ids[2][80];
	struct broker_bytes v = {0};
	struct al_error err = {0};

	strcpy(ids[0], broker_session_id(open_ok(f, CREDS, &a)));
	kept = open_ok(f, CREDS, &b);
	strcpy(ids[1], broker_session_id(open_ok(f, CREDS, &a)));
	broker_close_owned(f->b, &owner_a);
	assert_int_equal(broker_session_total(f->b), 1);
	for (size_t i = 0; i < 2; i++)
		assert_int_equal(broker_read(f->b, &owner_peer, ids[i], "github", &v, &err),
				 -ENOENT);
	assert_int_equal(
	    broker_read(f->b, &owner_peer, broker_session_id(kept), "github", &v, &err), 0);
	broker_close_owned(f->b, &owner_a); /* nothing left of a's */
	assert_int_equal(broker_session_total(f->b), 1);
}

static void test_session_is_gone_after_its_ttl(void **state)
{
	struct fixture *f = *state;
	const struct opened brief = {.uid = 1000, .ttl_usec = 1000};
	struct broker_session *s = open_ok(f, CREDS, &brief), *lasting = open_ok(f, CREDS, NULL);
	_cleanup_free_ char *line = NULL;
	char id[80];
	struct broker_bytes v = {0};
	struct al_error err = {0};

	strcpy(id, broker_session_id(s));
	assert_int_equal(usleep(5000), 0);
	/* Looked up after its time, it is not there, even before it is swept. */
	assert_int_equal(broker_session_total(f->b), 2);
	assert_int_equal(broker_read(f->b, &owner_peer, id, "github", &v, &err), -ENOENT);
	assert_int_equal(broker_resolve(f->b, &owner_peer, id, broker_session_cred_surrogate(s, 0),
					"api.github.com", &v, &err),
			 -EPERM);
	assert_int_equal(broker_expire(f->b), 1);
	assert_int_equal(broker_session_total(f->b), 1);
	assert_int_equal(broker_close(f->b, &owner_peer, id, &err), -ENOENT);
	assert_int_equal(
	    broker_read(f->b, &owner_peer, broker_session_id(lasting), "github", &v, &err), 0);
	line = audit_line(f, "\"action\":\"expire\"");
	assert_non_null(line);
	assert_null(strstr(line, id)); /* its tag, not its id */
}

static void test_broker_caps_its_sessions(void **state)
{
	struct fixture *f = *state;
	struct broker_session *s = NULL;
	struct al_error err = {0};
	size_t n;
	int r = 0;

	for (n = 0; n < 100000; n++) {
		r = open_session(f, "[]", NULL, &s, &err);
		if (r < 0)
			break;
	}
	assert_int_equal(r, -EBUSY);
	assert_int_equal(broker_session_total(f->b), n);
	assert_true(n >= 64);
	/* One uid's cap is named as such, not as the broker's (which is larger). */
	assert_non_null(strstr(err.msg, "uid"));
	assert_int_equal(n, 512);
	/* Once one ends, there is room for one more. */
	assert_int_equal(broker_close(f->b, &owner_peer, broker_session_id(s), &err), 0);
	assert_int_equal(open_session(f, "[]", NULL, &s, &err), 0);
	assert_int_equal(open_session(f, "[]", NULL, &s, &err), -EBUSY);
}

/* ---- the vault ---- */

/* A vault at f->vault_path: "gh" bound to api.github.com, "wide" to *.example.com, "free" to
 * nothing; saved, then given to the broker. */
static void make_vault(struct fixture *f)
{
	const struct broker_vault_key k = {.key = vault_key};
	char *gh[] = {(char *)"api.github.com"}, *wide[] = {(char *)"*.Example.com"};
	struct broker_vault *v = NULL;
	struct al_error err = {0};

	assert_int_equal(broker_vault_new(&k, &v), 0);
	assert_int_equal(broker_vault_put(v, "gh", "vault-gh-value-1", 16, 1), 0);
	assert_int_equal(broker_vault_put(v, "wide", "vault-wide-value", 16, 1), 0);
	assert_int_equal(broker_vault_put(v, "free", "vault-free-value", 16, 1), 0);
	assert_int_equal(broker_vault_bind(v, "gh", gh, 1, 2), 0);
	assert_int_equal(broker_vault_bind(v, "wide", wide, 1, 2), 0);
	assert_int_equal(broker_vault_save(v, f->vault_path, &err), 0);
	assert_int_equal(broker_set_vault(f->b, v, f->vault_path), 0);
	assert_string_equal(broker_vault_file(f->b), f->vault_path);
	assert_int_equal(broker_vault_entries(f->b), 3);
}

/* One vault credential of key, bound to hosts (a JSON list). */
static int open_vault_cred(struct fixture *f, const char *key, const char *hosts,
			   struct broker_session **ret, struct al_error *err)
{
	char creds[512];

	(void)snprintf(creds, sizeof(creds),
		       "[{\"name\":\"cred\",\"source\":{\"type\":\"vault\",\"key\":\"%s\"},"
		       "\"injection\":{\"type\":\"env_var\",\"var_name\":\"CRED\"},\"hosts\":%s}]",
		       key, hosts);
	return open_session(f, creds, NULL, ret, err);
}

static void test_vault_binding_that_does_not_cover_a_policy_host_refuses_the_session(void **state)
{
	static const struct {
		const char *key, *hosts;
	} refused[] = {
	    {"gh", "[\"api.github.com\",\"uploads.github.com\"]"},
	    {"gh", "[\"*.github.com\"]"},
	    {"gh", "[\"github.com\"]"},
	    {"wide", "[\"example.com\"]"}, /* the bare suffix is not below it */
	    {"wide", "[\"*.com\"]"},	   /* wider than the binding */
	    {"wide", "[\"api.example.org\"]"},
	};
	struct fixture *f = *state;
	struct broker_session *s = NULL;
	struct al_error err = {0};

	make_vault(f);
	for (size_t i = 0; i < ELEMENTSOF(refused); i++) {
		assert_int_equal(open_vault_cred(f, refused[i].key, refused[i].hosts, &s, &err),
				 -EPERM);
		assert_non_null(strstr(err.msg, "the vault binds"));
		assert_null(strstr(err.msg, "vault-"));
	}
	assert_int_equal(broker_session_total(f->b), 0);
}

static void test_vault_wider_binding_covers_the_names_below_it(void **state)
{
	static const struct {
		const char *key, *hosts;
	} granted[] = {
	    {"gh", "[\"api.github.com\"]"},
	    {"gh", "[\"API.GITHUB.COM\"]"},
	    {"wide", "[\"api.example.com\",\"*.api.example.com\"]"},
	    {"wide", "[\"*.example.com\"]"},
	    {"free", "[\"anything.example.org\",\"*.org\"]"}, /* no binding: the policy decides */
	};
	struct fixture *f = *state;
	struct broker_session *s = NULL;
	struct broker_bytes v = {0};
	struct al_error err = {0};

	make_vault(f);
	for (size_t i = 0; i < ELEMENTSOF(granted); i++) {
		assert_int_equal(open_vault_cred(f, granted[i].key, granted[i].hosts, &s, &err), 0);
		assert_int_equal(
		    broker_read(f->b, &owner_peer, broker_session_id(s), "cred", &v, &err), 0);
		assert_true(bytes_equal(&v, broker_session_cred_surrogate(s, 0)));
	}
	assert_int_equal(open_vault_cred(f, "wide", "[\"deep.api.example.com\"]", &s, &err), 0);
	assert_int_equal(
	    resolve(f, s, broker_session_cred_surrogate(s, 0), "deep.api.example.com", &v, &err),
	    0);
	assert_true(bytes_equal(&v, "vault-wide-value"));
	/* The policy's hosts still decide: the binding covers more than the session may use. */
	assert_int_equal(
	    resolve(f, s, broker_session_cred_surrogate(s, 0), "www.example.com", &v, &err),
	    -EPERM);
}

static void test_vault_source_without_a_vault_or_an_entry_is_enoent(void **state)
{
	struct fixture *f = *state;
	struct broker_session *s = NULL;
	struct al_error err = {0};

	assert_int_equal(open_vault_cred(f, "gh", "[\"api.github.com\"]", &s, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "no vault open"));
	make_vault(f);
	assert_int_equal(open_vault_cred(f, "nonesuch", "[\"api.github.com\"]", &s, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "no secret \"nonesuch\""));
	assert_non_null(strstr(err.msg, f->vault_path));
}

static void test_refresh_vault_picks_up_a_saved_change(void **state)
{
	const struct broker_vault_key k = {.key = vault_key};
	struct fixture *f = *state;
	struct broker_session *before = NULL, *after = NULL;
	struct broker_vault *v = NULL;
	struct broker_bytes got = {0};
	struct al_error err = {0};

	make_vault(f);
	assert_int_equal(open_vault_cred(f, "gh", "[\"api.github.com\"]", &before, &err), 0);
	/* Nothing changed: nothing to do. */
	assert_int_equal(broker_refresh_vault(f->b, &err), 0);
	assert_int_equal(broker_vault_entries(f->b), 3);

	/* What `airlock secret put` does meanwhile. */
	assert_int_equal(broker_vault_open(f->vault_path, &k, false, &v, &err), 0);
	assert_int_equal(broker_vault_put(v, "gh", "vault-gh-value-2", 16, 3), 0);
	assert_int_equal(broker_vault_put(v, "added", "vault-added-value", 17, 3), 0);
	assert_int_equal(broker_vault_save(v, f->vault_path, &err), 0);
	broker_vault_free(v);

	/* A new session sees the change; the open one keeps what it was given. */
	assert_int_equal(open_vault_cred(f, "gh", "[\"api.github.com\"]", &after, &err), 0);
	assert_int_equal(broker_vault_entries(f->b), 4);
	assert_int_equal(resolve(f, after, broker_session_cred_surrogate(after, 0),
				 "api.github.com", &got, &err),
			 0);
	assert_true(bytes_equal(&got, "vault-gh-value-2"));
	assert_int_equal(resolve(f, before, broker_session_cred_surrogate(before, 0),
				 "api.github.com", &got, &err),
			 0);
	assert_true(bytes_equal(&got, "vault-gh-value-1"));
	assert_int_equal(broker_refresh_vault(f->b, &err), 0);

	/* A vault file that went away is an error, and the vault in memory stays. */
	assert_int_equal(unlink(f->vault_path), 0);
	assert_int_equal(broker_refresh_vault(f->b, &err), -ENOENT);
	assert_non_null(strstr(err.msg, f->vault_path));
	assert_int_equal(broker_vault_entries(f->b), 4);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_surrogates_differ_per_session_and_from_the_value),
	    T(test_resolve_grants_the_value_only_for_bound_hosts),
	    T(test_resolve_refuses_another_sessions_surrogate_and_audits_it),
	    T(test_other_uid_gets_enoent_for_an_existing_session),
	    T(test_read_gives_the_surrogate_or_the_exposed_value),
	    T(test_headers_are_the_sidecar_credentials_bound_to_the_host),
	    T(test_redact_replaces_values_across_chunks_per_stream),
	    T(test_close_ends_the_session),
	    T(test_close_owned_ends_only_the_owners_sessions),
	    T(test_session_is_gone_after_its_ttl),
	    T(test_broker_caps_its_sessions),
	    T(test_vault_binding_that_does_not_cover_a_policy_host_refuses_the_session),
	    T(test_vault_wider_binding_covers_the_names_below_it),
	    T(test_vault_source_without_a_vault_or_an_entry_is_enoent),
	    T(test_refresh_vault_picks_up_a_saved_change),
	};

	return cmocka_run_group_tests(tests, group_setup, NULL);
}
