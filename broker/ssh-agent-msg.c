/* The SSH agent protocol's messages as airlock's agent reads them (broker-internal.h has the
 * contract; the protocol is draft-miller-ssh-agent, and OpenSSH's PROTOCOL.agent for the
 * session-bind@openssh.com extension). Every message is a u32 length and that many bytes, the
 * first its type. Only what the destination-bound agent needs is understood: the identities
 * request, a sign request, and session-bind; and the data a sign request carries is read as
 * what it claims to be, an SSH user authentication request (RFC 4252 7) or a git commit's
 * SSHSIG, so that the agent can tell which session and which purpose a signature is for. */

#include <errno.h>
#include <string.h>

#include <sodium.h>

#include "broker/broker-internal.h"

#define AGENTC_REQUEST_IDENTITIES 11
#define AGENTC_SIGN_REQUEST 13
#define AGENTC_EXTENSION 27
#define MSG_USERAUTH_REQUEST 50
#define SSHSIG_MAGIC "SSHSIG"

struct cursor {
	const uint8_t *p;
	size_t left;
};

static bool take_u32(struct cursor *c, uint32_t *ret)
{
	if (c->left < 4)
		return false;
	*ret = (uint32_t)c->p[0] << 24 | (uint32_t)c->p[1] << 16 | (uint32_t)c->p[2] << 8 | c->p[3];
	c->p += 4;
	c->left -= 4;
	return true;
}

static bool take_u8(struct cursor *c, uint8_t *ret)
{
	if (c->left < 1)
		return false;
	*ret = c->p[0];
	c->p++;
	c->left--;
	return true;
}

static bool take_string(struct cursor *c, struct broker_ssh_bytes *ret)
{
	uint32_t n;

	if (!take_u32(c, &n) || n > c->left)
		return false;
	*ret = (struct broker_ssh_bytes){c->p, n};
	c->p += n;
	c->left -= n;
	return true;
}

static bool bytes_is(const struct broker_ssh_bytes *b, const char *text)
{
	return b->len == strlen(text) && memcmp(b->p, text, b->len) == 0;
}

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
	struct cursor c = {p, n};
	struct broker_ssh_bytes name;
	uint32_t flags;
	uint8_t type, fwd;

	*ret = (struct broker_ssh_agent_msg){0};
	if (!take_u8(&c, &type))
		return -EBADMSG;
	switch (type) {
	case AGENTC_REQUEST_IDENTITIES:
		ret->type = BROKER_SSH_AGENT_IDENTITIES;
		return c.left == 0 ? 0 : -EBADMSG;
	case AGENTC_SIGN_REQUEST:
		ret->type = BROKER_SSH_AGENT_SIGN;
		if (!take_string(&c, &ret->key) || !take_string(&c, &ret->data) ||
		    !take_u32(&c, &flags) || c.left != 0)
			return -EBADMSG;
		ret->flags = flags;
		return 0;
	case AGENTC_EXTENSION:
		if (!take_string(&c, &name))
			return -EBADMSG;
		if (!bytes_is(&name, "session-bind@openssh.com")) {
			ret->type = BROKER_SSH_AGENT_OTHER;
			return 0;
		}
		ret->type = BROKER_SSH_AGENT_SESSION_BIND;
		if (!take_string(&c, &ret->hostkey) || !take_string(&c, &ret->session_id) ||
		    !take_string(&c, &ret->signature) || !take_u8(&c, &fwd) || fwd > 1 ||
		    c.left != 0 || ret->session_id.len == 0 || ret->session_id.len > 64)
			return -EBADMSG;
		ret->forwarding = fwd;
		return 0;
	default:
		ret->type = BROKER_SSH_AGENT_OTHER;
		return 0;
	}
}

int broker_ssh_sign_data_parse(const struct broker_ssh_bytes *data,
			       struct broker_ssh_sign_data *ret)
{
	struct cursor c = {data->p, data->len};
	struct broker_ssh_bytes service, method;
	uint8_t type, has_sig;

	*ret = (struct broker_ssh_sign_data){0};
	if (data->len >= 6 && memcmp(data->p, SSHSIG_MAGIC, 6) == 0) {
		/* "SSHSIG", string namespace, string reserved, string hash algorithm, string H */
		struct broker_ssh_bytes reserved, hash_alg, hash;

		c.p += 6;
		c.left -= 6;
		if (!take_string(&c, &ret->sshsig_namespace) || !take_string(&c, &reserved) ||
		    !take_string(&c, &hash_alg) || !take_string(&c, &hash) || c.left != 0)
			return -EBADMSG;
		ret->kind = BROKER_SSH_SIGN_SSHSIG;
		return 0;
	}
	/* RFC 4252 7: string session id, byte 50, string user, string "ssh-connection", string
	 * "publickey" (or OpenSSH's "publickey-hostbound-v00@openssh.com"), TRUE, string
	 * algorithm, string key, [string host key]. */
	if (!take_string(&c, &ret->session_id) || ret->session_id.len == 0 ||
	    ret->session_id.len > 64 || !take_u8(&c, &type) || type != MSG_USERAUTH_REQUEST ||
	    !take_string(&c, &ret->user) || !take_string(&c, &service) ||
	    !take_string(&c, &method) || !take_u8(&c, &has_sig) || has_sig != 1 ||
	    !take_string(&c, &ret->algorithm) || !take_string(&c, &ret->key))
		return -EBADMSG;
	if (!bytes_is(&service, "ssh-connection"))
		return -EBADMSG;
	if (bytes_is(&method, "publickey-hostbound-v00@openssh.com")) {
		if (!take_string(&c, &ret->hostkey))
			return -EBADMSG;
	} else if (!bytes_is(&method, "publickey")) {
		return -EBADMSG;
	}
	if (c.left != 0)
		return -EBADMSG;
	ret->kind = BROKER_SSH_SIGN_USERAUTH;
	return 0;
}

static bool bytes_eq(const struct broker_ssh_bytes *a, const struct broker_ssh_bytes *b)
{
	return a->len == b->len && (a->len == 0 || memcmp(a->p, b->p, a->len) == 0);
}

int broker_ssh_agent_decide(const struct broker_ssh_sign_data *d,
			    const struct broker_ssh_bytes *key, const struct broker_ssh_bind *binds,
			    size_t n_binds, const struct broker_ssh_policy *policy,
			    const char **why)
{
	const struct broker_ssh_bind *b = n_binds ? &binds[n_binds - 1] : NULL;

	if (d->kind == BROKER_SSH_SIGN_SSHSIG) {
		if (!policy->commit_signing) {
			*why = "commit signing is not allowed for this key";
			return -EPERM;
		}
		if (!bytes_is(&d->sshsig_namespace, "git")) {
			*why = "an SSHSIG signature outside the \"git\" namespace";
			return -EPERM;
		}
		return 0;
	}
	if (!bytes_eq(&d->key, key)) {
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
	if (!bytes_eq(&d->session_id, &b->session_id)) {
		*why = "the authentication is for another session than the bound one";
		return -EPERM;
	}
	if (d->hostkey.len && !bytes_eq(&d->hostkey, &b->hostkey)) {
		*why = "the authentication names another host key than the bound one";
		return -EPERM;
	}
	for (size_t i = 0; i < policy->n_hostkeys; i++)
		if (bytes_eq(&policy->hostkeys[i], &b->hostkey))
			return 0;
	*why = "the host key is not one airlock's proxy saw on a connection to this key's "
	       "destinations";
	return -EPERM;
}

/* ---- a session-bind's signature ---- */

int broker_ssh_bind_verify(const struct broker_ssh_agent_msg *m)
{
	struct cursor k = {m->hostkey.p, m->hostkey.len}, s = {m->signature.p, m->signature.len};
	struct broker_ssh_bytes ktype, pk, stype, sig;

	if (m->type != BROKER_SSH_AGENT_SESSION_BIND || !take_string(&k, &ktype) ||
	    !take_string(&s, &stype) || !take_string(&s, &sig) || s.left != 0)
		return -EBADMSG;
	if (!bytes_is(&ktype, "ssh-ed25519"))
		return -EPROTONOSUPPORT;
	if (!bytes_is(&stype, "ssh-ed25519") || !take_string(&k, &pk) || k.left != 0 ||
	    pk.len != crypto_sign_ed25519_PUBLICKEYBYTES || sig.len != crypto_sign_ed25519_BYTES)
		return -EBADMSG;
	return crypto_sign_ed25519_verify_detached(sig.p, m->session_id.p, m->session_id.len,
						   pk.p) == 0
		   ? 0
		   : -EPERM;
}
