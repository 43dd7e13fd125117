/* fuzz-ssh-agent: airlock's SSH agent reads requests from the sandbox (broker/ssh-agent-msg.c).
 * The input is a run of chunks as a capture of an agent socket holds them (a direction byte,
 * bit 0 set for the agent's answers, which are skipped; a 16-bit big-endian length; the bytes);
 * the client's bytes are framed into messages, each parsed, a sign request's data parsed, and
 * the decision asked with the connection's binds so far and a policy holding the first bind's
 * host key. Any answer but the documented errors is a bug, and so is a signature allowed for
 * what is not a user authentication bound to the last bind, nor a git SSHSIG.
 *
 * Then the whole stream goes through a session's agent (broker/ssh-agent.c) as the proxy sends
 * it: each message after the binds the agent accepted so far, with a key of the tests
 * (KEY_ED25519_PLAIN, which the seed's login signs with) and the first bind's host key seen at
 * the key's destination. A user authentication signed must name that destination; an answer
 * must come for every request that is framed whole. */

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "broker/broker-internal.h"
#include "policy/policy.h"
#include "tests/unit/broker/ssh-test-keys.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define BINDS_MAX 8

#define DESTINATION "git.example.org:22"

static void answer_all(const uint8_t *stream, size_t have)
{
	static struct broker_secret *key;
	static char *dests[] = {(char *)DESTINATION};
	static struct policy_credential spec = {
	    .name = (char *)"deploy",
	    .kind = POLICY_CRED_SSH_KEY,
	    .injection = POLICY_INJECTION_SSH_AGENT,
	    .ssh_destinations = {dests, 1},
	    .ssh_commit_signing = true,
	};
	struct broker_ssh_agent *a = NULL;
	uint8_t in[2 * 4096];
	size_t binds = 0, n_binds = 0;
	bool seen = false;

	if (!key) {
		struct broker_ssh_key k;

		if (broker_ssh_key_import(KEY_ED25519_PLAIN, strlen(KEY_ED25519_PLAIN), NULL, &k,
					  &key, NULL) < 0)
			__builtin_trap();
	}
	if (broker_ssh_agent_new(&a) < 0 || broker_ssh_agent_add_key(a, &spec, key, NULL) < 0)
		__builtin_trap();
	for (size_t off = 0; off < have;) {
		ssize_t len = broker_ssh_agent_frame(stream + off, have - off);
		struct broker_secret *answer = NULL;
		struct broker_ssh_outcome o;
		struct broker_ssh_agent_msg m;
		int r;

		if (len <= 0)
			break;
		if (!seen && broker_ssh_agent_parse(stream + off + 4, (size_t)len - 4, &m) == 0 &&
		    m.type == BROKER_SSH_AGENT_SESSION_BIND && m.hostkey.len > 0) {
			if (broker_ssh_agent_saw(a, DESTINATION, m.hostkey.p, m.hostkey.len, NULL) <
				0 &&
			    m.hostkey.len <= BROKER_SSH_HOSTKEY_MAX)
				__builtin_trap();
			seen = true;
		}
		memcpy(in + binds, stream + off, (size_t)len);
		r = broker_ssh_agent_answer(a, in, binds + (size_t)len, &answer, &o, NULL);
		if (r < 0 && r != -EBADMSG)
			__builtin_trap();
		if (r == 0 && (!answer || answer->len == 0 || !o.action))
			__builtin_trap();
		if (r == 0 && o.granted && streq(o.action, "ssh-sign") &&
		    (!o.destination || !streq(o.destination, DESTINATION)))
			__builtin_trap();
		/* The proxy keeps a bind the agent accepted, for the requests after it; no more
		 * than a connection may make are accepted. */
		if (r == 0 && o.granted && streq(o.action, "ssh-bind")) {
			if (n_binds++ >= BROKER_SSH_BINDS_MAX)
				__builtin_trap();
			binds += (size_t)len;
		}
		broker_secret_free(answer);
		off += (size_t)len;
	}
	broker_ssh_agent_free(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t stream[4096];
	size_t have = 0;
	struct broker_ssh_bind binds[BINDS_MAX];
	size_t n_binds = 0;

	while (size >= 3) {
		size_t n = (size_t)data[1] << 8 | data[2];

		n = n < size - 3 ? n : size - 3;
		if (!(data[0] & 1) && n <= sizeof(stream) - have) {
			memcpy(stream + have, data + 3, n);
			have += n;
		}
		data += 3 + n;
		size -= 3 + n;
	}
	for (size_t off = 0; off < have;) {
		ssize_t len = broker_ssh_agent_frame(stream + off, have - off);
		struct broker_ssh_agent_msg m;
		struct broker_ssh_sign_data d;
		const char *why = NULL;
		int r;

		if (len < 0 && len != -EMSGSIZE)
			__builtin_trap();
		if (len <= 0)
			break;
		r = broker_ssh_agent_parse(stream + off + 4, (size_t)len - 4, &m);
		off += (size_t)len;
		if (r < 0 && r != -EBADMSG)
			__builtin_trap();
		if (r < 0)
			continue;
		if (m.type == BROKER_SSH_AGENT_SESSION_BIND && n_binds < BINDS_MAX)
			binds[n_binds++] =
			    (struct broker_ssh_bind){m.hostkey, m.session_id, m.forwarding};
		if (m.type != BROKER_SSH_AGENT_SIGN)
			continue;
		r = broker_ssh_sign_data_parse(&m.data, &d);
		if (r < 0 && r != -EBADMSG)
			__builtin_trap();
		if (r < 0)
			continue;
		struct broker_ssh_policy p = {n_binds ? &binds[0].hostkey : NULL, n_binds ? 1 : 0,
					      true};
		r = broker_ssh_agent_decide(&d, &m.key, binds, n_binds, &p, &why);
		if (r < 0 && (r != -EPERM || !why))
			__builtin_trap();
		if (r == 0 && d.kind == BROKER_SSH_SIGN_USERAUTH &&
		    (n_binds == 0 || binds[n_binds - 1].forwarding ||
		     d.session_id.len != binds[n_binds - 1].session_id.len ||
		     memcmp(d.session_id.p, binds[n_binds - 1].session_id.p, d.session_id.len) !=
			 0))
			__builtin_trap();
	}
	answer_all(stream, have);
	return 0;
}
