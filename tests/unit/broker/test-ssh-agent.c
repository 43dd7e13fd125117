/* tests/unit/broker/test-ssh-agent.c: a session's destination-bound agent (broker/ssh-agent.c)
 * answering the requests of a real exchange: OpenSSH 9.2's ssh logging in with a key in
 * ssh-agent, captured through a relay (tests/fuzz/corpus/ssh-agent/openssh-9.2-login-ed25519;
 * the user key is KEY_ED25519_PLAIN). With the host key seen at one of the key's destinations,
 * the agent's signature is byte for byte the one OpenSSH's own agent gave (Ed25519 is
 * deterministic); then each refusal, and what the audit learns of it. */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "broker/broker-internal.h"
#include "policy/policy.h"
#include "tests/unit/broker/ssh-capture.h"
#include "tests/unit/broker/ssh-test-keys.h"

/* A 1024-bit RSA key: the agent signs with none under 2048 bits. */
#define KEY_RSA1024_PLAIN                                                                          \
	"-----BEGIN OPENSSH PRIVATE KEY-----\n"                                                    \
	"b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAlwAAAAdzc2gtcn\n"                 \
	"NhAAAAAwEAAQAAAIEAwDaAvU6rpSVZAxbPa7/gPmBd2PkWvUIvP3KUIm7mWddNslEf5dtJ\n"                 \
	"Tt1xnTIaTpCaR/AJsVZfptlSBufj9ImskX3+HQQ6oHZJkCHwBKEvSISFbwe7tVCwfrwACL\n"                 \
	"k7Y82bjwg4q9UDT0cb64UCbiGDaNTsafNmuZuqZ+or5dzJqgcAAAIABPrvKgT67yoAAAAH\n"                 \
	"c3NoLXJzYQAAAIEAwDaAvU6rpSVZAxbPa7/gPmBd2PkWvUIvP3KUIm7mWddNslEf5dtJTt\n"                 \
	"1xnTIaTpCaR/AJsVZfptlSBufj9ImskX3+HQQ6oHZJkCHwBKEvSISFbwe7tVCwfrwACLk7\n"                 \
	"Y82bjwg4q9UDT0cb64UCbiGDaNTsafNmuZuqZ+or5dzJqgcAAAADAQABAAAAgCo7D1gIc9\n"                 \
	"/p77+lAFedJaiuxY/JUnyskPLwuqlCEmxEyLZX6pk278lbD/5Ips0CKlOJ4qdK4eMntkT8\n"                 \
	"J/JvWTGQjykCp80XPfVMbCYJ8IpLg6yX0+yLPAM0JF7v7r9dbYpkx8fPiah7A2Vk+EqYdE\n"                 \
	"zv8O5r9PZ+3w5mH8OvqwhpAAAAQQDL69e3u15EKSHQ1XF6jNXMc7aWRm9hHLqT6QYVJVBK\n"                 \
	"ZGjYIBSoUYrzXI0LN7Sa3WXO+xGcKZC8v1DRhGH8D2i5AAAAQQDp7sjNW0bLUJs/p4mdhc\n"                 \
	"KYmX4hfW1rB62evMU5QfE6sBdF38as2zgYySFb2dmMj2NqRKs9jlbz5wAbIAFynV7jAAAA\n"                 \
	"QQDSWDsGVs/cqfj77ieqK43+BW8oMbjlzz9OTglNxabpheZEjsFKesM7+tjyR8E2MWMpOx\n"                 \
	"dJkHGFgthYwoD8n62NAAAABHRlc3QBAgMEBQY=\n"                                                 \
	"-----END OPENSSH PRIVATE KEY-----\n"

#define AGENT_FAILURE 5
#define AGENT_SUCCESS 6
#define AGENT_IDENTITIES_ANSWER 12
#define AGENT_SIGN_RESPONSE 14

/* Framed messages of one side of the capture, in order. */
struct side {
	uint8_t buf[8192];
	size_t n, off[8], len[8], count;
};

struct fixture {
	struct side client, agent;
	size_t bind, sign; /* the client's session-bind and sign request, by index */
	struct broker_secret *key;
	struct policy_credential spec;
	char *dests[2];
	struct broker_ssh_agent *a;
	struct broker_ssh_agent_msg bind_msg;
};

static void split(struct side *s)
{
	for (size_t off = 0; off < s->n;) {
		ssize_t len = broker_ssh_agent_frame(s->buf + off, s->n - off);

		assert_true(len > 0 && s->count < ELEMENTSOF(s->off));
		s->off[s->count] = off;
		s->len[s->count++] = (size_t)len;
		off += (size_t)len;
	}
}

static void load(struct fixture *f)
{
	ssh_capture_read("openssh-9.2-login-ed25519", f->client.buf, &f->client.n, f->agent.buf,
			 &f->agent.n, sizeof(f->client.buf));
	split(&f->client);
	split(&f->agent);
	f->bind = f->sign = SIZE_MAX;
	for (size_t i = 0; i < f->client.count; i++) {
		struct broker_ssh_agent_msg m;

		assert_int_equal(broker_ssh_agent_parse(f->client.buf + f->client.off[i] + 4,
							f->client.len[i] - 4, &m),
				 0);
		if (m.type == BROKER_SSH_AGENT_SESSION_BIND) {
			f->bind = i;
			f->bind_msg = m;
		}
		if (m.type == BROKER_SSH_AGENT_SIGN)
			f->sign = i;
	}
	assert_true(f->bind != SIZE_MAX && f->sign != SIZE_MAX);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct broker_ssh_key k;
	struct al_error err = {0};

	assert_non_null(f);
	load(f);
	assert_int_equal(broker_ssh_key_import(KEY_ED25519_PLAIN, strlen(KEY_ED25519_PLAIN), NULL,
					       &k, &f->key, &err),
			 0);
	f->dests[0] = (char *)"git.example.org:22";
	f->spec = (struct policy_credential){
	    .name = (char *)"deploy",
	    .kind = POLICY_CRED_SSH_KEY,
	    .injection = POLICY_INJECTION_SSH_AGENT,
	    .ssh_destinations = {f->dests, 1},
	};
	assert_int_equal(broker_ssh_agent_new(&f->a), 0);
	assert_int_equal(broker_ssh_agent_add_key(f->a, &f->spec, f->key, &err), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	broker_ssh_agent_free(f->a);
	broker_secret_free(f->key);
	free(f);
	return 0;
}

/* The agent's answer to the client's messages idx[0..n) sent together (binds, then a request). */
static int ask(struct fixture *f, const size_t *idx, size_t n, struct broker_secret **ret,
	       struct broker_ssh_outcome *o)
{
	uint8_t in[8192];
	size_t len = 0;
	struct al_error err = {0};

	for (size_t i = 0; i < n; i++) {
		memcpy(in + len, f->client.buf + f->client.off[idx[i]], f->client.len[idx[i]]);
		len += f->client.len[idx[i]];
	}
	return broker_ssh_agent_answer(f->a, in, len, ret, o, &err);
}

static void saw_host_at(struct fixture *f, const char *destination)
{
	struct al_error err = {0};

	assert_int_equal(broker_ssh_agent_saw(f->a, destination, f->bind_msg.hostkey.p,
					      f->bind_msg.hostkey.len, &err),
			 0);
}

static void test_signature_is_openssh_agents_own(void **state)
{
	struct fixture *f = *state;
	const size_t msgs[] = {f->bind, f->sign};
	struct broker_secret *answer = NULL;
	struct broker_ssh_outcome o;
	const struct side *ag = &f->agent;
	bool matched = false;

	saw_host_at(f, "git.example.org:22");
	assert_true(broker_ssh_agent_wants(f->a, "GIT.example.org:22"));
	assert_false(broker_ssh_agent_wants(f->a, "git.example.org:2222"));
	/* The bind alone: verified, answered with success. */
	assert_int_equal(ask(f, &f->bind, 1, &answer, &o), 0);
	assert_int_equal(answer->len, 1);
	assert_int_equal((uint8_t)answer->data[0], AGENT_SUCCESS);
	assert_string_equal(o.action, "ssh-bind");
	assert_true(o.granted);
	assert_string_equal(o.destination, "git.example.org:22");
	answer = broker_secret_free(answer);

	assert_int_equal(ask(f, msgs, 2, &answer, &o), 0);
	assert_string_equal(o.action, "ssh-sign");
	assert_true(o.granted);
	assert_string_equal(o.credential, "deploy");
	assert_string_equal(o.destination, "git.example.org:22");
	assert_int_equal((uint8_t)answer->data[0], AGENT_SIGN_RESPONSE);
	/* The real agent answered the same request: the same bytes (its answer framed). */
	for (size_t i = 0; i < ag->count; i++)
		if (ag->len[i] == 4 + answer->len &&
		    memcmp(ag->buf + ag->off[i] + 4, answer->data, answer->len) == 0)
			matched = true;
	assert_true(matched);
	broker_secret_free(answer);
}

static void test_identities_list_the_policys_keys_by_name(void **state)
{
	struct fixture *f = *state;
	struct broker_secret *answer = NULL;
	struct broker_ssh_outcome o;
	const uint8_t req[] = {0, 0, 0, 1, 11};
	struct al_error err = {0};
	struct al_wire c, blob = {0}, comment = {0};
	uint32_t n;
	uint8_t type;

	assert_int_equal(broker_ssh_agent_answer(f->a, req, sizeof(req), &answer, &o, &err), 0);
	assert_string_equal(o.action, "ssh-list");
	c = (struct al_wire){(const uint8_t *)answer->data, answer->len};
	assert_true(al_wire_take_u8(&c, &type) && type == AGENT_IDENTITIES_ANSWER);
	assert_true(al_wire_take_u32(&c, &n) && n == 1);
	assert_true(al_wire_take_string(&c, &blob) && al_wire_take_string(&c, &comment));
	assert_true(al_wire_is(&comment, "deploy"));
	assert_int_equal(c.len, 0);
	assert_true(al_wire_eq(
	    &blob, &(struct al_wire){f->client.buf + f->client.off[f->sign] + 9, blob.len}));
	broker_secret_free(answer);
}

static void test_host_seen_elsewhere_is_refused_and_named(void **state)
{
	struct fixture *f = *state;
	const size_t msgs[] = {f->bind, f->sign};
	struct broker_secret *answer = NULL;
	struct broker_ssh_outcome o;

	/* Not seen at all, then seen on an allowed connection to another host. */
	assert_int_equal(ask(f, msgs, 2, &answer, &o), 0);
	assert_int_equal((uint8_t)answer->data[0], AGENT_FAILURE);
	assert_false(o.granted);
	assert_null(o.destination);
	answer = broker_secret_free(answer);
	saw_host_at(f, "other.example.org:22");
	assert_int_equal(ask(f, msgs, 2, &answer, &o), 0);
	assert_int_equal((uint8_t)answer->data[0], AGENT_FAILURE);
	assert_string_equal(o.credential, "deploy");
	assert_string_equal(o.destination, "other.example.org:22");
	assert_non_null(strstr(o.why, "not seen on a connection to the key's destinations"));
	broker_secret_free(answer);
}

static void test_sign_without_a_bind_is_refused(void **state)
{
	struct fixture *f = *state;
	struct broker_secret *answer = NULL;
	struct broker_ssh_outcome o;

	saw_host_at(f, "git.example.org:22");
	assert_int_equal(ask(f, &f->sign, 1, &answer, &o), 0);
	assert_int_equal((uint8_t)answer->data[0], AGENT_FAILURE);
	assert_non_null(strstr(o.why, "no session-bind"));
	broker_secret_free(answer);
}

static void test_unverified_bind_before_a_request_is_malformed(void **state)
{
	struct fixture *f = *state;
	uint8_t in[8192];
	size_t bl = f->client.len[f->bind], sl = f->client.len[f->sign];
	struct broker_secret *answer = NULL;
	struct broker_ssh_outcome o;
	struct al_error err = {0};

	saw_host_at(f, "git.example.org:22");
	memcpy(in, f->client.buf + f->client.off[f->bind], bl);
	memcpy(in + bl, f->client.buf + f->client.off[f->sign], sl);
	in[bl - 2] ^= 1; /* the bind's signature */
	assert_int_equal(broker_ssh_agent_answer(f->a, in, bl + sl, &answer, &o, &err), -EBADMSG);
	assert_null(answer);
	/* A request cut short, or trailing bytes, are malformed too. */
	assert_int_equal(broker_ssh_agent_answer(f->a, in + bl, sl - 1, &answer, &o, &err),
			 -EBADMSG);
}

/* An SSHSIG request for the key: git's commit signing, only when the policy allows it. */
static void test_commit_signing_follows_the_policy(void **state)
{
	struct fixture *f = *state;
	const struct side *c = &f->client;
	uint8_t in[512], *p = in + 4;
	const size_t key_len = 51; /* string "ssh-ed25519", string 32 bytes */
	static const char data[] = "SSHSIG\0\0\0\3git\0\0\0\0\0\0\0\6sha512\0\0\0\2hh";
	struct broker_secret *answer = NULL;
	struct broker_ssh_outcome o;
	struct al_error err = {0};

	*p++ = 13;
	al_wire_put_u32(p, (uint32_t)key_len), p += 4;
	memcpy(p, c->buf + c->off[f->sign] + 9, key_len), p += key_len;
	al_wire_put_u32(p, sizeof(data) - 1), p += 4;
	memcpy(p, data, sizeof(data) - 1), p += sizeof(data) - 1;
	al_wire_put_u32(p, 0), p += 4;
	al_wire_put_u32(in, (uint32_t)(p - in - 4));
	assert_int_equal(broker_ssh_agent_answer(f->a, in, (size_t)(p - in), &answer, &o, &err), 0);
	assert_string_equal(o.action, "ssh-sign-commit");
	assert_false(o.granted);
	assert_non_null(strstr(o.why, "commit signing is not allowed"));
	answer = broker_secret_free(answer);
	f->spec.ssh_commit_signing = true;
	assert_int_equal(broker_ssh_agent_answer(f->a, in, (size_t)(p - in), &answer, &o, &err), 0);
	assert_true(o.granted);
	assert_int_equal((uint8_t)answer->data[0], AGENT_SIGN_RESPONSE);
	broker_secret_free(answer);
}

static void test_other_requests_fail_and_keys_are_not_added_twice(void **state)
{
	struct fixture *f = *state;
	const uint8_t remove_all[] = {0, 0, 0, 1, 19};
	struct broker_secret *answer = NULL;
	struct broker_ssh_outcome o;
	struct policy_credential twin = f->spec;
	struct al_error err = {0};

	assert_int_equal(
	    broker_ssh_agent_answer(f->a, remove_all, sizeof(remove_all), &answer, &o, &err), 0);
	assert_int_equal((uint8_t)answer->data[0], AGENT_FAILURE);
	assert_string_equal(o.action, "ssh-other");
	broker_secret_free(answer);
	twin.name = (char *)"again";
	assert_int_equal(broker_ssh_agent_add_key(f->a, &twin, f->key, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "the same SSH key as credential deploy"));
}

static void test_keys_of_each_type_are_listed_and_weak_rsa_is_refused(void **state)
{
	struct fixture *f = *state;
	static const char *const keys[] = {KEY_ECDSA256_PLAIN, KEY_RSA3072_PLAIN};
	static const char *const names[] = {"ecdsa", "rsa"};
	struct broker_secret *stored[2] = {NULL}, *weak = NULL, *answer = NULL;
	struct policy_credential spec[2];
	struct broker_ssh_key k;
	struct broker_ssh_outcome o;
	const uint8_t req[] = {0, 0, 0, 1, 11};
	struct al_error err = {0};
	uint32_t n;
	uint8_t type;
	struct al_wire c;

	for (size_t i = 0; i < 2; i++) {
		assert_int_equal(
		    broker_ssh_key_import(keys[i], strlen(keys[i]), NULL, &k, &stored[i], &err), 0);
		spec[i] = f->spec;
		spec[i].name = (char *)names[i];
		assert_int_equal(broker_ssh_agent_add_key(f->a, &spec[i], stored[i], &err), 0);
	}
	assert_int_equal(broker_ssh_agent_answer(f->a, req, sizeof(req), &answer, &o, &err), 0);
	c = (struct al_wire){(const uint8_t *)answer->data, answer->len};
	assert_true(al_wire_take_u8(&c, &type) && type == AGENT_IDENTITIES_ANSWER);
	assert_true(al_wire_take_u32(&c, &n) && n == 3);
	broker_secret_free(answer);
	/* Refused before anything runs, naming the credential. */
	assert_int_equal(broker_ssh_key_import(KEY_RSA1024_PLAIN, strlen(KEY_RSA1024_PLAIN), NULL,
					       &k, &weak, &err),
			 0);
	spec[0].name = (char *)"weak";
	err = (struct al_error){0};
	assert_true(broker_ssh_agent_add_key(f->a, &spec[0], weak, &err) < 0);
	assert_non_null(strstr(err.msg, "credential weak"));
	assert_non_null(strstr(err.msg, "2048"));
	broker_secret_free(weak);
	/* The agent borrows its keys: they are freed with the fixture's agent, after it. */
	broker_ssh_agent_free(f->a);
	f->a = NULL;
	broker_secret_free(stored[0]);
	broker_secret_free(stored[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_signature_is_openssh_agents_own, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_identities_list_the_policys_keys_by_name, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_host_seen_elsewhere_is_refused_and_named, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_sign_without_a_bind_is_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_unverified_bind_before_a_request_is_malformed,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_commit_signing_follows_the_policy, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_other_requests_fail_and_keys_are_not_added_twice,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(
		test_keys_of_each_type_are_listed_and_weak_rsa_is_refused, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
