#define LOG_MODULE "broker"

/* The broker's core: sessions and the decisions on them. The daemon (server.c) and the embedded
 * client (client.c) both drive it; it does no I/O of its own except reading sources and writing
 * audit events. Not thread-safe: only broker_session_read_sources() may run on another thread,
 * on a session that is not yet added. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include <sodium.h>

#include "broker/broker-internal.h"
#include "broker/broker.h"
#include "common/audit.h"
#include "common/log.h"

/* A session's id is its capability: only the connection that opened it learns it (and hands it
 * to the workspace daemon's). Lists and audit events show its tag, a hash of it. */
#define ID_BYTES 32
#define TAG_BYTES 8
#define SESSIONS_MAX 4096
#define SESSIONS_PER_UID 512
/* The bytes of real values one session may have redacted: the redactor's worst case grows with
 * them, and it runs on the daemon's event loop. */
#define REDACT_BYTES_MAX (128 * 1024)

struct cred {
	const struct policy_credential *spec; /* in the session's policy */
	struct broker_secret *value;
	char *surrogate;
	struct policy_strv hosts; /* where it may go: the policy's, each covered by the vault */
	uint64_t reads;
};

static bool count_is_audited(uint64_t n)
{
	if (n <= 10)
		return true;
	while (n % 10 == 0)
		n /= 10;
	return n == 1;
}

struct broker_session {
	char id[ID_BYTES * 2 + 1];
	char tag[TAG_BYTES * 2 + 1];
	struct policy *policy; /* its credentials */
	char *policy_hash, *label;
	struct broker_peer peer;
	uint64_t created, expires; /* seconds since the epoch */
	uint64_t expires_mono;	   /* CLOCK_MONOTONIC, µs */
	const void *owner;
	struct cred *creds;
	size_t n;
	const char **names;
	struct broker_redactor *redactor;
	struct broker_redact_stream *streams[2];
	struct broker_secret *scratch; /* the last answer that held a real value */
	unsigned char *redacted;       /* the last redacted output */
	size_t redacted_len;
	struct broker_ssh_agent *ssh; /* its SSH keys' agent, or NULL */
	/* The agent's audit events (ssh_audit_admit()): tokens in thousandths of an event. */
	uint64_t ssh_audit_usec, ssh_audit_tokens, ssh_audit_dropped;
};

struct broker {
	struct al_audit *audit;
	struct broker_vault *vault;
	char *vault_path;
	struct stat vault_st;
	struct broker_session **sessions;
	size_t n_sessions;
};

static uint64_t now_mono_usec(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

int broker_new(struct al_audit *audit, struct broker **ret)
{
	struct broker *b;

	if (sodium_init() < 0)
		return -EIO;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->audit = audit;
	*ret = b;
	return 0;
}

struct broker *broker_free(struct broker *b)
{
	if (!b)
		return NULL;
	for (size_t i = 0; i < b->n_sessions; i++)
		broker_session_free(b->sessions[i]);
	free(b->sessions);
	broker_vault_free(b->vault);
	free(b->vault_path);
	free(b);
	return NULL;
}

int broker_set_vault(struct broker *b, struct broker_vault *v, const char *path)
{
	char *p = strdup(path);

	if (!p) {
		broker_vault_free(v);
		return -ENOMEM;
	}
	broker_vault_free(b->vault);
	free(b->vault_path);
	b->vault = v;
	b->vault_path = p;
	if (stat(path, &b->vault_st) < 0)
		b->vault_st = (struct stat){0};
	return 0;
}

int broker_refresh_vault(struct broker *b, struct al_error *err)
{
	struct stat st;
	int r;

	if (!b->vault)
		return 0;
	if (stat(b->vault_path, &st) < 0)
		return al_error_set_errno(err, -errno, "vault %s: cannot stat it", b->vault_path);
	if (st.st_ino == b->vault_st.st_ino && st.st_dev == b->vault_st.st_dev &&
	    st.st_size == b->vault_st.st_size && st.st_mtim.tv_sec == b->vault_st.st_mtim.tv_sec &&
	    st.st_mtim.tv_nsec == b->vault_st.st_mtim.tv_nsec)
		return 0;
	r = broker_vault_reload(b->vault_path, &b->vault, err);
	if (r < 0)
		return r;
	b->vault_st = st;
	return 0;
}

const char *broker_vault_file(const struct broker *b)
{
	return b->vault ? b->vault_path : NULL;
}

size_t broker_vault_entries(const struct broker *b)
{
	return b->vault ? broker_vault_count(b->vault) : 0;
}

/* ---- audit ---- */

static void audit(struct broker *b, const char *kind, const struct broker_session *s,
		  const struct broker_peer *peer, const struct al_audit_field *f, size_t n)
{
	struct al_audit_field all[12];
	size_t k = 0;
	int r;

	if (!b->audit)
		return;
	if (s)
		all[k++] = AL_AUDIT_S("session", s->tag);
	if (s && s->label)
		all[k++] = AL_AUDIT_S("label", s->label);
	all[k++] = AL_AUDIT_I("peer_uid", peer->uid);
	all[k++] = AL_AUDIT_I("peer_pid", peer->pid);
	for (size_t i = 0; i < n && k < ELEMENTSOF(all); i++)
		all[k++] = f[i];
	r = al_audit_event(b->audit, kind, all, k);
	if (r < 0)
		log_debug_errno(r, "Failed to write an audit event: %m");
}

/* ---- hosts ---- */

/* Whether a vault binding covers a policy's host pattern: a name by a match, "*.x" only by "*.x"
 * or a wider "*.y" that covers every name below x. */
static bool binding_covers(const struct broker_vault_entry *e, const char *pattern)
{
	for (size_t i = 0; i < e->n_hosts; i++) {
		if (strncmp(pattern, "*.", 2) != 0
			? policy_host_covers(e->hosts[i], pattern)
			: strncmp(e->hosts[i], "*.", 2) == 0 &&
			      (strcasecmp(e->hosts[i], pattern) == 0 ||
			       policy_host_covers(e->hosts[i], pattern + 2)))
			return true;
	}
	return false;
}

static bool cred_goes_to(const struct cred *c, const char *host)
{
	for (size_t i = 0; i < c->hosts.n; i++)
		if (policy_host_covers(c->hosts.items[i], host))
			return true;
	return false;
}

/* ---- sessions ---- */

struct broker_session *broker_session_free(struct broker_session *s)
{
	if (!s)
		return NULL;
	for (size_t i = 0; i < s->n; i++) {
		broker_secret_free(s->creds[i].value);
		free(s->creds[i].surrogate);
		free(s->creds[i].hosts.items); /* the strings are the policy's */
	}
	free(s->creds);
	free(s->names);
	broker_redact_stream_free(s->streams[0]);
	broker_redact_stream_free(s->streams[1]);
	broker_redactor_free(s->redactor);
	broker_secret_free(s->scratch);
	if (s->redacted) {
		sodium_memzero(s->redacted, s->redacted_len);
		free(s->redacted);
	}
	broker_ssh_agent_free(s->ssh);
	policy_free(s->policy);
	free(s->policy_hash);
	free(s->label);
	free(s);
	return NULL;
}

const char *broker_session_id(const struct broker_session *s)
{
	return s->id;
}

size_t broker_session_count(const struct broker_session *s)
{
	return s->n;
}

const char *broker_session_cred_name(const struct broker_session *s, size_t i)
{
	return s->creds[i].spec->name;
}

const char *broker_session_cred_surrogate(const struct broker_session *s, size_t i)
{
	return s->creds[i].surrogate;
}

/* What a vault binding names of c's host i: the host itself, or a Postgres destination's host
 * ("db.example:5432", "[2001:db8::1]:5432") without its port. */
static const char *binding_host(const struct cred *c, size_t i, char *buf, size_t size)
{
	const char *h = c->hosts.items[i], *colon = strrchr(h, ':');

	if (c->spec->kind != POLICY_CRED_POSTGRES || !colon)
		return h;
	if (h[0] == '[')
		(void)snprintf(buf, size, "%.*s", (int)(colon - h - 2), h + 1);
	else
		(void)snprintf(buf, size, "%.*s", (int)(colon - h), h);
	return buf;
}

/* The vault's side of a credential: its value, and the hosts it may go to (the policy's, each of
 * which the vault's binding must cover when the vault has one). */
static int prepare_vault_cred(struct broker *b, struct cred *c, struct al_error *err)
{
	char host[POLICY_STRING_MAX];
	const struct broker_vault_entry *e;
	const char *key = c->spec->source_key ? c->spec->source_key : c->spec->name;

	if (!b->vault)
		return al_error_set(err, -ENOENT,
				    "credential %s: vault source: this broker has no vault open",
				    c->spec->name);
	e = broker_vault_find(b->vault, key);
	if (!e)
		return al_error_set(err, -ENOENT,
				    "credential %s: vault source: no secret \"%s\" in %s",
				    c->spec->name, key, b->vault_path);
	if (broker_ssh_key_is_stored(e->value) != (c->spec->kind == POLICY_CRED_SSH_KEY))
		return al_error_set(
		    err, -EINVAL,
		    c->spec->kind == POLICY_CRED_SSH_KEY
			? "credential %s: vault source: \"%s\" is not an SSH key (airlock secret "
			  "put --ssh-key)"
			: "credential %s: vault source: \"%s\" is an SSH key, which only signs: "
			  "only a credential with an \"ssh\" object uses it",
		    c->spec->name, key);
	if (e->n_hosts > 0 && c->spec->expose)
		return al_error_set(
		    err, -EPERM,
		    "credential %s: the vault binds \"%s\" to hosts, so its value is "
		    "never exposed to a sandbox",
		    c->spec->name, key);
	for (size_t i = 0; e->n_hosts > 0 && i < c->hosts.n; i++)
		if (!binding_covers(e, binding_host(c, i, host, sizeof(host))))
			return al_error_set(err, -EPERM,
					    "credential %s: the vault binds \"%s\" to other hosts "
					    "than %s (airlock secret bind)",
					    c->spec->name, key,
					    binding_host(c, i, host, sizeof(host)));
	c->value = broker_secret_new(e->value->len);
	if (!c->value)
		return -ENOMEM;
	memcpy(c->value->data, e->value->data, e->value->len);
	return 0;
}

/* The tag of an id (its hex form): a hash, public, by which sessions are sorted and found
 * without comparing secrets in an order that timing could tell. */
static void tag_of(const char *id, char tag[TAG_BYTES * 2 + 1])
{
	unsigned char h[TAG_BYTES];

	(void)crypto_generichash(h, sizeof(h), (const unsigned char *)id, strlen(id), NULL, 0);
	(void)sodium_bin2hex(tag, TAG_BYTES * 2 + 1, h, sizeof(h));
}

/* Where the session tagged tag is in b's list (sorted by tag), or where it would go. */
static size_t locate(const struct broker *b, const char *tag, bool *found)
{
	size_t lo = 0, hi = b->n_sessions;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(b->sessions[mid]->tag, tag);

		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

static int session_alloc(struct broker_open *o, struct broker_session **ret)
{
	_cleanup_(broker_session_freep) struct broker_session *s = NULL;
	unsigned char id[ID_BYTES];
	size_t n = o->creds->n_credentials;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->policy = TAKE_PTR(o->creds); /* freed with s, on every path */
	s->creds = calloc(n ? n : 1, sizeof(*s->creds));
	s->names = calloc(n + 1, sizeof(*s->names)); /* NULL-terminated, for the audit */
	s->policy_hash = strdup(o->policy_hash);
	s->label = o->label ? strdup(o->label) : NULL;
	if (!s->creds || !s->names || !s->policy_hash || (o->label && !s->label))
		return -ENOMEM;
	s->n = n;
	s->peer = o->peer;
	s->owner = o->owner;
	randombytes_buf(id, sizeof(id));
	(void)sodium_bin2hex(s->id, sizeof(s->id), id, sizeof(id));
	sodium_memzero(id, sizeof(id));
	tag_of(s->id, s->tag);
	for (size_t i = 0; i < n; i++) {
		struct cred *c = &s->creds[i];

		c->spec = &s->policy->credentials[i];
		s->names[i] = c->spec->name;
		c->hosts.items = calloc(c->spec->hosts.n + 1, sizeof(char *));
		if (!c->hosts.items)
			return -ENOMEM;
		memcpy(c->hosts.items, c->spec->hosts.items, c->spec->hosts.n * sizeof(char *));
		c->hosts.n = c->spec->hosts.n;
	}
	*ret = TAKE_PTR(s);
	return 0;
}

static size_t sessions_of(const struct broker *b, uid_t uid)
{
	size_t n = 0;

	for (size_t i = 0; i < b->n_sessions; i++)
		n += b->sessions[i]->peer.uid == uid;
	return n;
}

int broker_session_prepare(struct broker *b, struct broker_open *o, struct broker_session **ret,
			   struct al_error *err)
{
	_cleanup_(broker_session_freep) struct broker_session *s = NULL;
	uint64_t ttl = o->ttl_usec;
	int r;

	if (b->n_sessions >= SESSIONS_MAX) {
		o->creds = policy_free(o->creds);
		return al_error_set(err, -EBUSY, "the broker holds %d sessions already",
				    SESSIONS_MAX);
	}
	if (sessions_of(b, o->peer.uid) >= SESSIONS_PER_UID) {
		o->creds = policy_free(o->creds);
		return al_error_set(err, -EBUSY, "uid %u holds %d sessions of this broker already",
				    (unsigned)o->peer.uid, SESSIONS_PER_UID);
	}
	r = session_alloc(o, &s);
	if (r < 0) {
		o->creds = policy_free(o->creds);
		return r;
	}
	if (ttl == 0 || ttl > BROKER_SESSION_TTL_MAX_USEC)
		ttl = BROKER_SESSION_TTL_MAX_USEC;
	s->created = (uint64_t)time(NULL);
	s->expires = s->created + ttl / 1000000;
	s->expires_mono = now_mono_usec() + ttl;
	if (s->policy->n_credentials > 0 && b->vault) {
		r = broker_refresh_vault(b, err);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < s->n; i++) {
		if (s->creds[i].spec->source != POLICY_CRED_SOURCE_VAULT)
			continue;
		r = prepare_vault_cred(b, &s->creds[i], err);
		if (r < 0)
			return r;
	}
	*ret = TAKE_PTR(s);
	return 0;
}

bool broker_session_needs_sources(const struct broker_session *s)
{
	for (size_t i = 0; i < s->n; i++)
		if (!s->creds[i].value)
			return true;
	return false;
}

int broker_session_read_sources(struct broker_session *s, struct al_error *err)
{
	const struct broker_sources src = {0};
	int r;

	for (size_t i = 0; i < s->n; i++) {
		if (s->creds[i].value)
			continue;
		r = broker_source_read(&src, s->creds[i].spec, &s->creds[i].value, err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Whether credential i's value is the same as an earlier one's (redacted once). */
static bool value_seen(const struct broker_session *s, size_t i)
{
	const struct broker_secret *v = s->creds[i].value;

	for (size_t k = 0; k < i; k++)
		if (s->creds[k].value->len == v->len &&
		    sodium_memcmp(s->creds[k].value->data, v->data, v->len) == 0)
			return true;
	return false;
}

/* Surrogates, and the redactor of the session's real values. */
static int arm(struct broker_session *s, struct al_error *err)
{
	size_t total = 0;
	int r;

	r = broker_redactor_new(&s->redactor);
	if (r >= 0)
		r = broker_redact_stream_new(&s->streams[0]);
	if (r >= 0)
		r = broker_redact_stream_new(&s->streams[1]);
	for (size_t i = 0; r >= 0 && i < s->n; i++) {
		/* An SSH key only signs, through the agent: no surrogate, and the sandbox never
		 * has it to print. */
		if (s->creds[i].spec->kind == POLICY_CRED_SSH_KEY) {
			if (!s->ssh)
				r = broker_ssh_agent_new(&s->ssh);
			if (r >= 0)
				r = broker_ssh_agent_add_key(s->ssh, s->creds[i].spec,
							     s->creds[i].value, err);
			if (r < 0)
				return err->msg[0] ? r : al_error_set_errno(err, r, "SSH agent");
			continue;
		}
		r = broker_surrogate_new(s->creds[i].value,
					 s->creds[i].spec->kind == POLICY_CRED_AWS_SECRET
					     ? BROKER_SHAPE_AWS_SECRET
					     : BROKER_SHAPE_OF_VALUE,
					 &s->creds[i].surrogate);
		if (r < 0 || value_seen(s, i))
			continue;
		total += s->creds[i].value->len;
		if (total > REDACT_BYTES_MAX)
			return al_error_set(
			    err, -E2BIG,
			    "the credentials hold more than %d bytes of real values, "
			    "more than the output can be redacted of",
			    REDACT_BYTES_MAX);
		r = broker_redactor_add(s->redactor, s->creds[i].value, s->creds[i].spec->name);
		if (r == -EINVAL) {
			log_debug("Credential %s is shorter than %d bytes: not redacted",
				  s->creds[i].spec->name, BROKER_REDACT_MIN);
			r = 0;
		}
	}
	return r < 0 ? al_error_set_errno(err, r, "Failed to make the session's surrogates") : 0;
}

int broker_session_add(struct broker *b, struct broker_session *s, struct al_error *err)
{
	struct broker_session **l;
	bool found;
	size_t pos;
	int r;

	r = arm(s, err);
	if (r < 0)
		return r;
	l = reallocarray(b->sessions, b->n_sessions + 1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	b->sessions = l;
	pos = locate(b, s->tag, &found);
	if (found) /* 64 bits of tag alike: a new id rather than two sessions under one tag */
		return al_error_set(err, -EEXIST, "Failed to give the session a unique id");
	memmove(b->sessions + pos + 1, b->sessions + pos,
		(b->n_sessions - pos) * sizeof(*b->sessions));
	b->sessions[pos] = s;
	b->n_sessions++;
	audit(b, "credential", s, &s->peer,
	      (struct al_audit_field[]){AL_AUDIT_S("action", "open"),
					AL_AUDIT_S("policy_hash", s->policy_hash),
					AL_AUDIT_SV("credentials", (char *const *)s->names)},
	      3);
	return 0;
}

static void remove_at(struct broker *b, size_t i)
{
	broker_session_free(b->sessions[i]);
	memmove(b->sessions + i, b->sessions + i + 1,
		(b->n_sessions - i - 1) * sizeof(*b->sessions));
	b->n_sessions--;
}

size_t broker_expire(struct broker *b)
{
	uint64_t now = now_mono_usec();

	for (size_t i = b->n_sessions; i-- > 0;)
		if (b->sessions[i]->expires_mono <= now) {
			audit(b, "credential", b->sessions[i], &b->sessions[i]->peer,
			      (struct al_audit_field[]){AL_AUDIT_S("action", "expire")}, 1);
			remove_at(b, i);
		}
	return b->n_sessions;
}

static ssize_t find_index(const struct broker *b, const struct broker_peer *peer, const char *id)
{
	char tag[TAG_BYTES * 2 + 1];
	const struct broker_session *s;
	bool found;
	size_t i;

	if (strlen(id) != ID_BYTES * 2)
		return -ENOENT;
	tag_of(id, tag);
	i = locate(b, tag, &found);
	if (!found)
		return -ENOENT;
	s = b->sessions[i];
	if (sodium_memcmp(s->id, id, ID_BYTES * 2) != 0 || s->peer.uid != peer->uid ||
	    s->expires_mono <= now_mono_usec())
		return -ENOENT;
	return (ssize_t)i;
}

static int find(struct broker *b, const struct broker_peer *peer, const char *id,
		struct broker_session **ret, struct al_error *err)
{
	ssize_t i = find_index(b, peer, id);

	if (i < 0)
		return al_error_set(err, -ENOENT, "no such session");
	*ret = b->sessions[i];
	return 0;
}

/* The session (other than s) whose surrogate this is, for the audit of a stolen surrogate. */
static const struct broker_session *owner_of(const struct broker *b, const struct broker_session *s,
					     const char *surrogate)
{
	for (size_t i = 0; i < b->n_sessions; i++)
		for (size_t k = 0; b->sessions[i] != s && k < b->sessions[i]->n; k++)
			if (streq_ptr(b->sessions[i]->creds[k].surrogate, surrogate))
				return b->sessions[i];
	return NULL;
}

static int refuse(struct broker *b, const struct broker_session *s, const struct broker_peer *peer,
		  const char *cred, const char *host, const char *why, struct al_error *err)
{
	struct al_audit_field f[5] = {AL_AUDIT_S("action", "resolve"),
				      AL_AUDIT_S("verdict", "refused"), AL_AUDIT_S("host", host),
				      AL_AUDIT_S("reason", why), AL_AUDIT_S("credential", cred)};

	audit(b, "violation", s, peer, f, cred ? 5 : 4);
	return al_error_set(err, -EPERM, "refused: %s", why);
}

int broker_resolve(struct broker *b, const struct broker_peer *peer, const char *id,
		   const char *surrogate, const char *host, struct broker_bytes *ret,
		   struct al_error *err)
{
	struct broker_session *s = NULL;
	int r;

	r = find(b, peer, id, &s, err);
	if (r < 0)
		return refuse(b, NULL, peer, NULL, host, "no such session", err);
	for (size_t i = 0; i < s->n; i++) {
		struct cred *c = &s->creds[i];

		if (!c->surrogate || !streq(c->surrogate, surrogate))
			continue;
		if (!cred_goes_to(c, host))
			return refuse(b, s, peer, c->spec->name, host,
				      "the credential is not bound to this host", err);
		audit(b, "credential", s, peer,
		      (struct al_audit_field[]){
			  AL_AUDIT_S("action", "resolve"), AL_AUDIT_S("verdict", "granted"),
			  AL_AUDIT_S("credential", c->spec->name), AL_AUDIT_S("host", host)},
		      4);
		*ret = (struct broker_bytes){c->value->data, c->value->len};
		return 0;
	}
	return refuse(b, s, peer, NULL, host,
		      owner_of(b, s, surrogate) ? "the surrogate belongs to another session"
						: "not a surrogate of this session",
		      err);
}

int broker_read(struct broker *b, const struct broker_peer *peer, const char *id, const char *name,
		struct broker_bytes *ret, struct al_error *err)
{
	struct broker_session *s = NULL;
	int r;

	r = find(b, peer, id, &s, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < s->n; i++) {
		struct cred *c = &s->creds[i];

		if (!streq(c->spec->name, name))
			continue;
		if (c->spec->injection != POLICY_INJECTION_FILE &&
		    c->spec->injection != POLICY_INJECTION_ENV_VAR)
			break;
		/* The sandbox opens credential files as often as it likes: the first ten reads
		 * of each are audited, then every power of ten, with the count. */
		c->reads++;
		if (count_is_audited(c->reads))
			audit(b, "credential", s, peer,
			      (struct al_audit_field[]){AL_AUDIT_S("action", "read"),
							AL_AUDIT_S("credential", name),
							AL_AUDIT_B("exposed", c->spec->expose),
							AL_AUDIT_I("count", (int64_t)c->reads)},
			      4);
		if (c->spec->expose)
			*ret = (struct broker_bytes){c->value->data, c->value->len};
		else
			*ret = (struct broker_bytes){c->surrogate, strlen(c->surrogate)};
		return 0;
	}
	return al_error_set(err, -ENOENT, "the session has no credential %s to read", name);
}

/* One "Header: value\r\n" line per sidecar credential bound to host, in the session's scratch
 * buffer (sodium memory: it holds real values). */
int broker_headers(struct broker *b, const struct broker_peer *peer, const char *id,
		   const char *host, struct broker_bytes *ret, struct al_error *err)
{
	struct broker_session *s = NULL;
	size_t len = 0, off = 0;
	int r;

	r = find(b, peer, id, &s, err);
	if (r < 0)
		return r;
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < s->n; i++) {
			const struct cred *c = &s->creds[i];
			const char *f, *brace;

			if (c->spec->injection != POLICY_INJECTION_SIDECAR ||
			    !cred_goes_to(c, host))
				continue;
			f = c->spec->format ? c->spec->format : "{}";
			brace = strstr(f, "{}");
			if (pass == 0) {
				len +=
				    strlen(c->spec->header) + 2 + strlen(f) - 2 + c->value->len + 2;
				continue;
			}
			off += (size_t)sprintf(s->scratch->data + off, "%s: %.*s", c->spec->header,
					       (int)(brace - f), f);
			memcpy(s->scratch->data + off, c->value->data, c->value->len);
			off += c->value->len;
			off += (size_t)sprintf(s->scratch->data + off, "%s\r\n", brace + 2);
		}
		if (pass == 0) {
			s->scratch = broker_secret_free(s->scratch);
			s->scratch = broker_secret_new(len);
			if (!s->scratch)
				return -ENOMEM;
		}
	}
	audit(b, "credential", s, peer,
	      (struct al_audit_field[]){AL_AUDIT_S("action", "headers"), AL_AUDIT_S("host", host),
					AL_AUDIT_I("headers", off > 0)},
	      3);
	*ret = (struct broker_bytes){s->scratch->data, off};
	return 0;
}

int broker_redact_output(struct broker *b, const struct broker_peer *peer, const char *id,
			 unsigned stream, const void *buf, size_t len, bool flush,
			 struct broker_bytes *ret, struct al_error *err)
{
	struct broker_session *s = NULL;
	unsigned char *out = NULL;
	size_t out_len = 0;
	int r;

	if (stream > 1)
		return al_error_set(err, -EINVAL, "no output stream %u", stream);
	r = find(b, peer, id, &s, err);
	if (r < 0)
		return r;
	r = broker_redact(s->redactor, s->streams[stream], buf, len, flush, &out, &out_len);
	if (r < 0)
		return al_error_set_errno(err, r, "Failed to redact output");
	if (s->redacted) {
		sodium_memzero(s->redacted, s->redacted_len);
		free(s->redacted);
	}
	s->redacted = out;
	s->redacted_len = out_len;
	*ret = (struct broker_bytes){out, out_len};
	return 0;
}

/* ---- the SSH agent ---- */

/* The sandbox asks its agent as fast as it likes: a session's agent events are rate limited as
 * the proxy's are (a burst, then a rate a second); the next event written counts what was
 * dropped. */
#define SSH_AUDIT_BURST UINT64_C(2000)
#define SSH_AUDIT_RATE UINT64_C(200)

static bool ssh_audit_admit(struct broker_session *s)
{
	uint64_t now = now_mono_usec();

	if (s->ssh_audit_usec == 0)
		s->ssh_audit_tokens = SSH_AUDIT_BURST * 1000;
	else
		s->ssh_audit_tokens =
		    MIN(SSH_AUDIT_BURST * 1000,
			s->ssh_audit_tokens + (now - s->ssh_audit_usec) * SSH_AUDIT_RATE / 1000);
	s->ssh_audit_usec = now;
	if (s->ssh_audit_tokens < 1000) {
		s->ssh_audit_dropped++;
		return false;
	}
	s->ssh_audit_tokens -= 1000;
	return true;
}

/* The session id names, which must have SSH keys. */
static int find_ssh(struct broker *b, const struct broker_peer *peer, const char *id,
		    struct broker_session **ret, struct al_error *err)
{
	int r = find(b, peer, id, ret, err);

	if (r >= 0 && !(*ret)->ssh)
		return al_error_set(err, -ENOENT, "the session has no SSH key");
	return r;
}

int broker_ssh_hostkey(struct broker *b, const struct broker_peer *peer, const char *id,
		       const char *destination, const void *key, size_t len, struct al_error *err)
{
	struct broker_session *s = NULL;
	char fp[BROKER_SSH_FINGERPRINT_MAX];
	int r;

	r = find_ssh(b, peer, id, &s, err);
	if (r < 0)
		return r;
	r = broker_ssh_agent_saw(s->ssh, destination, key, len, err);
	if (r < 0)
		return r;
	if (!ssh_audit_admit(s))
		return 0;
	broker_ssh_fingerprint(key, len, fp);
	audit(b, "credential", s, peer,
	      (struct al_audit_field[]){
		  AL_AUDIT_S("action", "ssh-hostkey"), AL_AUDIT_S("destination", destination),
		  AL_AUDIT_S("hostkey", fp),
		  AL_AUDIT_B("bound", broker_ssh_agent_wants(s->ssh, destination)),
		  AL_AUDIT_I("dropped", (int64_t)s->ssh_audit_dropped)},
	      s->ssh_audit_dropped ? 5 : 4);
	s->ssh_audit_dropped = 0;
	return 0;
}

int broker_ssh_request(struct broker *b, const struct broker_peer *peer, const char *id,
		       const void *in, size_t len, struct broker_bytes *ret,
		       struct broker_ssh_outcome *o, struct al_error *err)
{
	struct broker_session *s = NULL;
	struct al_audit_field f[7];
	size_t n = 0;
	int r;

	r = find_ssh(b, peer, id, &s, err);
	if (r < 0)
		return r;
	s->scratch = broker_secret_free(s->scratch);
	r = broker_ssh_agent_answer(s->ssh, in, len, &s->scratch, o, err);
	if (r < 0)
		return r;
	*ret = (struct broker_bytes){s->scratch->data, s->scratch->len};
	if (!ssh_audit_admit(s))
		return 0;
	if (s->ssh_audit_dropped)
		f[n++] = AL_AUDIT_I("dropped", (int64_t)s->ssh_audit_dropped);
	s->ssh_audit_dropped = 0;
	f[n++] = AL_AUDIT_S("action", o->action);
	f[n++] = AL_AUDIT_S("verdict", o->granted ? "granted" : "refused");
	if (o->credential)
		f[n++] = AL_AUDIT_S("credential", o->credential);
	if (o->destination)
		f[n++] = AL_AUDIT_S("destination", o->destination);
	if (o->why)
		f[n++] = AL_AUDIT_S("reason", o->why);
	audit(b, o->granted ? "credential" : "violation", s, peer, f, n);
	return 0;
}

int broker_close(struct broker *b, const struct broker_peer *peer, const char *id,
		 struct al_error *err)
{
	ssize_t i = find_index(b, peer, id);

	if (i < 0)
		return al_error_set(err, -ENOENT, "no such session");
	audit(b, "credential", b->sessions[i], peer,
	      (struct al_audit_field[]){AL_AUDIT_S("action", "close")}, 1);
	remove_at(b, (size_t)i);
	return 0;
}

void broker_close_owned(struct broker *b, const void *owner)
{
	for (size_t i = b->n_sessions; i-- > 0;)
		if (b->sessions[i]->owner == owner) {
			audit(b, "credential", b->sessions[i], &b->sessions[i]->peer,
			      (struct al_audit_field[]){AL_AUDIT_S("action", "close")}, 1);
			remove_at(b, i);
		}
}

size_t broker_session_total(const struct broker *b)
{
	return b->n_sessions;
}

int broker_list(const struct broker *b, const struct broker_peer *peer, broker_session_fn fn,
		void *userdata)
{
	int r;

	for (size_t i = 0; i < b->n_sessions; i++) {
		const struct broker_session *s = b->sessions[i];

		if (peer->uid != 0 && peer->uid != s->peer.uid)
			continue;
		r = fn(&(struct broker_session_info){.tag = s->tag,
						     .policy_hash = s->policy_hash,
						     .label = s->label,
						     .uid = s->peer.uid,
						     .pid = s->peer.pid,
						     .created = s->created,
						     .expires = s->expires,
						     .n_credentials = s->n,
						     .names = s->names},
		       userdata);
		if (r < 0)
			return r;
	}
	return 0;
}
