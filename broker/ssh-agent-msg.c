/* The SSH agent protocol's messages as airlock's agent reads them (broker-internal.h has the
 * contract; the protocol is draft-miller-ssh-agent, and OpenSSH's PROTOCOL.agent for the
 * session-bind@openssh.com extension). Every message is a u32 length and that many bytes, the
 * first its type. Only what the destination-bound agent needs is understood: the identities
 * request, a sign request, and session-bind; and the data a sign request carries is read as
 * what it claims to be, an SSH user authentication request (RFC 4252 7) or a git commit's
 * SSHSIG, so that the agent can tell which session and which purpose a signature is for. */

#include <errno.h>
#include <string.h>

#include "broker/broker-internal.h"

#define AGENTC_REQUEST_IDENTITIES 11
#define AGENTC_SIGN_REQUEST 13
#define AGENTC_EXTENSION 27
#define MSG_USERAUTH_REQUEST 50
#define SSHSIG_MAGIC "SSHSIG"

ssize_t broker_ssh_agent_frame(const uint8_t *p, size_t n)
{
	size_t len;

	if (n < 4)
		return 0;
	len = (size_t)p[0] << 24 | (size_t)p[1] << 16 | (size_t)p[2] << 8 | p[3];
	if (len == 0 || len > BROKER_SSH_AGENT_MSG_MAX)
		return -EMSGSIZE;
	return n - 4 >= len ? (ssize_t)(4 + len) : 0;
}

int broker_ssh_agent_parse(const uint8_t *p, size_t n, struct broker_ssh_agent_msg *ret)
{
	struct al_wire c = {p, n};
	struct al_wire name;
	uint32_t flags;
	uint8_t type, fwd;

	*ret = (struct broker_ssh_agent_msg){0};
	if (!al_wire_take_u8(&c, &type))
		return -EBADMSG;
	switch (type) {
	case AGENTC_REQUEST_IDENTITIES:
		ret->type = BROKER_SSH_AGENT_IDENTITIES;
		return c.len == 0 ? 0 : -EBADMSG;
	case AGENTC_SIGN_REQUEST:
		ret->type = BROKER_SSH_AGENT_SIGN;
		if (!al_wire_take_string(&c, &ret->key) || !al_wire_take_string(&c, &ret->data) ||
		    !al_wire_take_u32(&c, &flags) || c.len != 0)
			return -EBADMSG;
		ret->flags = flags;
		return 0;
	case AGENTC_EXTENSION:
		if (!al_wire_take_string(&c, &name))
			return -EBADMSG;
		if (!al_wire_is(&name, "session-bind@openssh.com")) {
			ret->type = BROKER_SSH_AGENT_OTHER;
			return 0;
		}
		ret->type = BROKER_SSH_AGENT_SESSION_BIND;
		if (!al_wire_take_string(&c, &ret->hostkey) ||
		    !al_wire_take_string(&c, &ret->session_id) ||
		    !al_wire_take_string(&c, &ret->signature) || !al_wire_take_u8(&c, &fwd) ||
		    fwd > 1 || c.len != 0 || ret->session_id.len == 0 || ret->session_id.len > 64)
			return -EBADMSG;
		ret->forwarding = fwd;
		return 0;
	default:
		ret->type = BROKER_SSH_AGENT_OTHER;
		return 0;
	}
}

int broker_ssh_sign_data_parse(const struct al_wire *data, struct broker_ssh_sign_data *ret)
{
	struct al_wire c = {data->p, data->len};
	struct al_wire service, method;
	uint8_t type, has_sig;

	*ret = (struct broker_ssh_sign_data){0};
	if (data->len >= 6 && memcmp(data->p, SSHSIG_MAGIC, 6) == 0) {
		/* "SSHSIG", string namespace, string reserved, string hash algorithm, string H */
		struct al_wire reserved, hash_alg, hash;

		c.p += 6;
		c.len -= 6;
		if (!al_wire_take_string(&c, &ret->sshsig_namespace) ||
		    !al_wire_take_string(&c, &reserved) || !al_wire_take_string(&c, &hash_alg) ||
		    !al_wire_take_string(&c, &hash) || c.len != 0)
			return -EBADMSG;
		ret->kind = BROKER_SSH_SIGN_SSHSIG;
		return 0;
	}
	/* RFC 4252 7: string session id, byte 50, string user, string "ssh-connection", string
	 * "publickey" (or OpenSSH's "publickey-hostbound-v00@openssh.com"), TRUE, string
	 * algorithm, string key, [string host key]. */
	if (!al_wire_take_string(&c, &ret->session_id) || ret->session_id.len == 0 ||
	    ret->session_id.len > 64 || !al_wire_take_u8(&c, &type) ||
	    type != MSG_USERAUTH_REQUEST || !al_wire_take_string(&c, &ret->user) ||
	    !al_wire_take_string(&c, &service) || !al_wire_take_string(&c, &method) ||
	    !al_wire_take_u8(&c, &has_sig) || has_sig != 1 ||
	    !al_wire_take_string(&c, &ret->algorithm) || !al_wire_take_string(&c, &ret->key))
		return -EBADMSG;
	if (!al_wire_is(&service, "ssh-connection"))
		return -EBADMSG;
	if (al_wire_is(&method, "publickey-hostbound-v00@openssh.com")) {
		if (!al_wire_take_string(&c, &ret->hostkey))
			return -EBADMSG;
	} else if (!al_wire_is(&method, "publickey")) {
		return -EBADMSG;
	}
	if (c.len != 0)
		return -EBADMSG;
	ret->kind = BROKER_SSH_SIGN_USERAUTH;
	return 0;
}

int broker_ssh_agent_decide(const struct broker_ssh_sign_data *d, const struct al_wire *key,
			    const struct broker_ssh_bind *binds, size_t n_binds,
			    const struct broker_ssh_policy *policy, const char **why)
{
	const struct broker_ssh_bind *b = n_binds ? &binds[n_binds - 1] : NULL;

	if (d->kind == BROKER_SSH_SIGN_SSHSIG) {
		if (!policy->commit_signing) {
			*why = "commit signing is not allowed for this key";
			return -EPERM;
		}
		if (!al_wire_is(&d->sshsig_namespace, "git")) {
			*why = "an SSHSIG signature outside the \"git\" namespace";
			return -EPERM;
		}
		return 0;
	}
	if (!al_wire_eq(&d->key, key)) {
		*why = "the request signs for another key than the one asked";
		return -EPERM;
	}
	/* OpenSSH's binding: the connection's last session-bind names the session this
	 * authentication is for, and was not made for a forwarded agent. */
	if (!b) {
		*why = "no session-bind@openssh.com binds the connection to a host (OpenSSH 8.9 or "
		       "later binds every connection)";
		return -EPERM;
	}
	if (b->forwarding) {
		*why = "the agent was forwarded: it signs only on the connection airlock saw";
		return -EPERM;
	}
	if (!al_wire_eq(&d->session_id, &b->session_id)) {
		*why = "the authentication is for another session than the bound one";
		return -EPERM;
	}
	if (d->hostkey.len && !al_wire_eq(&d->hostkey, &b->hostkey)) {
		*why = "the authentication names another host key than the bound one";
		return -EPERM;
	}
	for (size_t i = 0; i < policy->n_hostkeys; i++)
		if (al_wire_eq(&policy->hostkeys[i], &b->hostkey))
			return 0;
	*why = "its host key was not seen on a connection to the key's destinations";
	return -EPERM;
}

/* ---- a session-bind's signature ---- */

int broker_ssh_bind_verify(const struct broker_ssh_agent_msg *m)
{
	if (m->type != BROKER_SSH_AGENT_SESSION_BIND)
		return -EBADMSG;
	/* OpenSSH's agent: the host key's signature over the session id, of any type the key makes
	 * (airlock's refusals of SHA-1 and of short RSA keys aside). */
	return broker_ssh_verify(&m->hostkey, &m->signature, m->session_id.p, m->session_id.len);
}
