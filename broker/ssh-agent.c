/* The destination-bound SSH agent of a session (broker-internal.h has the contract). The egress
 * proxy relays the sandbox's agent connections here one request at a time, each preceded by the
 * session-binds the connection made before it (the proxy keeps a connection's binds, the broker
 * keeps nothing per connection and checks every bind again), and reports the host keys it sees
 * in the clear key exchange of SSH connections. A signature is made only for what the policy and
 * what the proxy saw allow (broker_ssh_agent_decide()). */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "broker/broker-internal.h"

#define AGENT_FAILURE 5
#define AGENT_SUCCESS 6
#define AGENT_IDENTITIES_ANSWER 12
#define AGENT_SIGN_RESPONSE 14

struct broker_ssh_agent_key {
	const struct policy_credential *spec;
	const struct broker_secret *stored; /* the session's value: the key as the vault keeps it */
	uint8_t *pub;
	size_t pub_len;
};

struct broker_ssh_seen {
	uint8_t *hostkey;
	size_t len;
	char *destination; /* "host:port" */
};

struct broker_ssh_agent {
	struct broker_ssh_agent_key keys[BROKER_SSH_KEYS_MAX];
	size_t n_keys;
	struct broker_ssh_seen seen[BROKER_SSH_SEEN_MAX];
	size_t n_seen;
};

int broker_ssh_agent_new(struct broker_ssh_agent **ret)
{
	*ret = calloc(1, sizeof(**ret));
	return *ret ? 0 : -ENOMEM;
}

struct broker_ssh_agent *broker_ssh_agent_free(struct broker_ssh_agent *a)
{
	if (!a)
		return NULL;
	for (size_t i = 0; i < a->n_keys; i++)
		free(a->keys[i].pub);
	for (size_t i = 0; i < a->n_seen; i++) {
		free(a->seen[i].hostkey);
		free(a->seen[i].destination);
	}
	free(a);
	return NULL;
}

int broker_ssh_agent_add_key(struct broker_ssh_agent *a, const struct policy_credential *spec,
			     const struct broker_secret *stored, struct al_error *err)
{
	struct broker_ssh_agent_key *k;
	struct broker_ssh_key info;
	int r;

	if (a->n_keys >= BROKER_SSH_KEYS_MAX)
		return al_error_set(err, -E2BIG, "credential %s: more than %d SSH keys", spec->name,
				    BROKER_SSH_KEYS_MAX);
	k = &a->keys[a->n_keys];
	r = broker_ssh_key_public(stored, &info, &k->pub, &k->pub_len, err);
	if (r < 0) {
		al_error_prefix(err, "credential %s", spec->name);
		return r;
	}
	/* A key the agent could list but not sign with would fail late, in the middle of a git
	 * push: refused now, before anything runs. */
	r = broker_ssh_key_check_signing(&info, err);
	if (r < 0) {
		free(k->pub);
		k->pub = NULL;
		al_error_prefix(err, "credential %s", spec->name);
		return r;
	}
	for (size_t i = 0; i < a->n_keys; i++)
		if (a->keys[i].pub_len == k->pub_len &&
		    memcmp(a->keys[i].pub, k->pub, k->pub_len) == 0) {
			free(k->pub);
			k->pub = NULL;
			return al_error_set(err, -EINVAL,
					    "credential %s: the same SSH key as credential %s",
					    spec->name, a->keys[i].spec->name);
		}
	k->spec = spec;
	k->stored = stored;
	a->n_keys++;
	return 0;
}

static bool is_destination(const struct policy_credential *spec, const char *destination)
{
	for (size_t i = 0; i < spec->ssh_destinations.n; i++)
		if (policy_host_covers(spec->ssh_destinations.items[i], destination))
			return true;
	return false;
}

bool broker_ssh_agent_wants(const struct broker_ssh_agent *a, const char *destination)
{
	for (size_t i = 0; i < a->n_keys; i++)
		if (is_destination(a->keys[i].spec, destination))
			return true;
	return false;
}

int broker_ssh_agent_saw(struct broker_ssh_agent *a, const char *destination,
			 const uint8_t *hostkey, size_t len, struct al_error *err)
{
	struct broker_ssh_seen *s;

	if (len == 0 || len > BROKER_SSH_HOSTKEY_MAX)
		return al_error_set(err, -EINVAL, "a host key of %zu bytes", len);
	for (size_t i = 0; i < a->n_seen; i++)
		if (a->seen[i].len == len && memcmp(a->seen[i].hostkey, hostkey, len) == 0 &&
		    strcasecmp(a->seen[i].destination, destination) == 0)
			return 0;
	if (a->n_seen >= BROKER_SSH_SEEN_MAX)
		return al_error_set(err, -ENOSPC,
				    "the session has seen %d SSH host keys already: no more are "
				    "kept",
				    BROKER_SSH_SEEN_MAX);
	s = &a->seen[a->n_seen];
	s->hostkey = malloc(len);
	s->destination = strdup(destination);
	if (!s->hostkey || !s->destination) {
		free(s->hostkey);
		s->hostkey = NULL;
		free(s->destination);
		s->destination = NULL;
		return -ENOMEM;
	}
	memcpy(s->hostkey, hostkey, len);
	s->len = len;
	a->n_seen++;
	return 0;
}

/* Where a host key was seen: one of key's destinations when it was seen there, else any. */
static const char *seen_at(const struct broker_ssh_agent *a, const struct broker_ssh_agent_key *k,
			   const struct al_wire *hostkey)
{
	const char *any = NULL;

	for (size_t i = 0; i < a->n_seen; i++) {
		const struct broker_ssh_seen *s = &a->seen[i];

		if (s->len != hostkey->len || memcmp(s->hostkey, hostkey->p, s->len) != 0)
			continue;
		if (k && is_destination(k->spec, s->destination))
			return s->destination;
		any = any ? any : s->destination;
	}
	return any;
}

static int reply_byte(uint8_t type, struct broker_secret **ret)
{
	*ret = broker_secret_new(1);
	if (!*ret)
		return -ENOMEM;
	(*ret)->data[0] = (char)type;
	return 0;
}

static int answer_identities(const struct broker_ssh_agent *a, struct broker_secret **ret)
{
	size_t len = 1 + 4;
	uint8_t *p;

	for (size_t i = 0; i < a->n_keys; i++)
		len += 4 + a->keys[i].pub_len + 4 + strlen(a->keys[i].spec->name);
	*ret = broker_secret_new(len);
	if (!*ret)
		return -ENOMEM;
	p = (uint8_t *)(*ret)->data;
	*p++ = AGENT_IDENTITIES_ANSWER;
	al_wire_put_u32(p, (uint32_t)a->n_keys), p += 4;
	for (size_t i = 0; i < a->n_keys; i++) {
		const struct broker_ssh_agent_key *k = &a->keys[i];
		size_t nl = strlen(k->spec->name);

		al_wire_put_u32(p, (uint32_t)k->pub_len), p += 4;
		memcpy(p, k->pub, k->pub_len), p += k->pub_len;
		/* The comment: the credential's name, which is what the policy calls it. */
		al_wire_put_u32(p, (uint32_t)nl), p += 4;
		memcpy(p, k->spec->name, nl), p += nl;
	}
	return 0;
}

static int answer_sign(struct broker_ssh_agent *a, const struct broker_ssh_agent_msg *m,
		       const struct broker_ssh_bind *binds, size_t n_binds,
		       struct broker_secret **ret, struct broker_ssh_outcome *o,
		       struct al_error *err)
{
	_cleanup_(broker_secret_freep) struct broker_secret *sig = NULL;
	const struct broker_ssh_agent_key *k = NULL;
	struct al_wire hostkeys[BROKER_SSH_SEEN_MAX];
	struct broker_ssh_policy policy = {.hostkeys = hostkeys};
	struct broker_ssh_sign_data d;
	uint8_t *p;
	int r;

	o->action = "ssh-sign";
	for (size_t i = 0; i < a->n_keys && !k; i++)
		if (a->keys[i].pub_len == m->key.len &&
		    memcmp(a->keys[i].pub, m->key.p, m->key.len) == 0)
			k = &a->keys[i];
	if (n_binds > 0)
		o->destination = seen_at(a, k, &binds[n_binds - 1].hostkey);
	if (!k) {
		o->why = "the key is not one of this session's";
		return reply_byte(AGENT_FAILURE, ret);
	}
	o->credential = k->spec->name;
	if (broker_ssh_sign_data_parse(&m->data, &d) < 0) {
		o->why = "the data is neither a user authentication nor a git signature";
		return reply_byte(AGENT_FAILURE, ret);
	}
	if (d.kind == BROKER_SSH_SIGN_SSHSIG) {
		o->action = "ssh-sign-commit";
		o->destination = NULL;
	}
	for (size_t i = 0; i < a->n_seen; i++)
		if (is_destination(k->spec, a->seen[i].destination))
			hostkeys[policy.n_hostkeys++] =
			    (struct al_wire){a->seen[i].hostkey, a->seen[i].len};
	policy.commit_signing = k->spec->ssh_commit_signing;
	/* A connection an ssh forwarded its agent on (-A) is bound first with the forwarding flag,
	 * then by the remote host's ssh to wherever it goes next: its last bind is never the
	 * forwarding one, and the hop was never seen by the proxy. Any forwarding bind refuses
	 * the connection's logins. */
	for (size_t i = 0; d.kind == BROKER_SSH_SIGN_USERAUTH && i < n_binds; i++)
		if (binds[i].forwarding) {
			o->why = "the agent was forwarded (ssh -A): it signs only on connections "
				 "the proxy saw";
			return reply_byte(AGENT_FAILURE, ret);
		}
	if (broker_ssh_agent_decide(&d, &m->key, binds, n_binds, &policy, &o->why) < 0)
		return reply_byte(AGENT_FAILURE, ret);
	r = broker_ssh_key_sign(k->stored, m->data.p, m->data.len, m->flags, &sig, err);
	if (r == -EPROTONOSUPPORT) {
		/* add_key() refused the keys that cannot sign: what is left is SHA-1's ssh-rsa. */
		o->why = "an RSA signature with SHA-1 (ssh-rsa) was asked: the agent makes "
			 "rsa-sha2-256 and rsa-sha2-512 only";
		return reply_byte(AGENT_FAILURE, ret);
	}
	if (r < 0)
		return r;
	*ret = broker_secret_new(1 + 4 + sig->len);
	if (!*ret)
		return -ENOMEM;
	p = (uint8_t *)(*ret)->data;
	*p++ = AGENT_SIGN_RESPONSE;
	al_wire_put_u32(p, (uint32_t)sig->len), p += 4;
	memcpy(p, sig->data, sig->len);
	o->granted = true;
	o->why = NULL;
	return 0;
}

int broker_ssh_agent_answer(struct broker_ssh_agent *a, const uint8_t *in, size_t len,
			    struct broker_secret **ret, struct broker_ssh_outcome *o,
			    struct al_error *err)
{
	struct broker_ssh_bind binds[BROKER_SSH_BINDS_MAX];
	struct broker_ssh_agent_msg m = {0};
	size_t n_binds = 0;
	int r;

	*ret = NULL;
	*o = (struct broker_ssh_outcome){.action = "ssh-other"};
	/* Framed messages: the connection's binds, then the request. */
	while (len > 0) {
		ssize_t n = broker_ssh_agent_frame(in, len);

		if (n <= 0)
			return al_error_set(err, -EBADMSG,
					    "the agent messages are not framed whole");
		r = broker_ssh_agent_parse(in + 4, (size_t)n - 4, &m);
		if (r < 0)
			return al_error_set(err, r, "a malformed agent message");
		in += n;
		len -= (size_t)n;
		if (len == 0)
			break;
		/* A bind the connection made earlier: verified again, not taken on trust. */
		if (m.type != BROKER_SSH_AGENT_SESSION_BIND || n_binds >= BROKER_SSH_BINDS_MAX ||
		    broker_ssh_bind_verify(&m) < 0)
			return al_error_set(err, -EBADMSG,
					    "what precedes the request is not the connection's "
					    "verified session-binds");
		binds[n_binds++] = (struct broker_ssh_bind){
		    .hostkey = m.hostkey, .session_id = m.session_id, .forwarding = m.forwarding};
	}
	switch (m.type) {
	case BROKER_SSH_AGENT_IDENTITIES:
		o->action = "ssh-list";
		o->granted = true;
		return answer_identities(a, ret);
	case BROKER_SSH_AGENT_SESSION_BIND:
		o->action = "ssh-bind";
		o->destination = seen_at(a, NULL, &m.hostkey);
		r = broker_ssh_bind_verify(&m);
		if (r == -EPROTONOSUPPORT)
			o->why = "the host key or its signature is of a kind the agent does not "
				 "verify (SHA-1 ssh-rsa, RSA under 2048 bits, a certificate)";
		else if (r < 0)
			o->why = "the host key's signature over the session does not verify";
		else if (n_binds >= BROKER_SSH_BINDS_MAX)
			o->why = "too many session-binds on one connection";
		o->granted = !o->why;
		return reply_byte(o->granted ? AGENT_SUCCESS : AGENT_FAILURE, ret);
	case BROKER_SSH_AGENT_SIGN:
		return answer_sign(a, &m, binds, n_binds, ret, o, err);
	case BROKER_SSH_AGENT_OTHER:
		break;
	}
	o->why = "the agent only lists its keys and signs";
	return reply_byte(AGENT_FAILURE, ret);
}
