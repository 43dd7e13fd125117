/* The canonical form of a policy and its hash.
 *
 * {"canonical":1, then every field in the order of policy-parse.c's table}, compact, with the
 * values normalised: sizes as decimal byte strings, durations as "<n>ms" (or "<n>us"), cpu as
 * "<n>m", defaults filled in, env and resolve sorted by name, isolation reduced to what it means
 * ([container or process (+ image)] then [network_policy]), other arrays in the order written.
 * Fields without a value (id, image, audit, and quota, cpu, timeout, io_weight, a rule's port
 * when "none") are left out. The output is itself a policy that loads to the same output. */

#include <inttypes.h>
#include <stdio.h>

#include <json-c/json.h>
#include <sodium.h>

#include "common/json-util.h"
#include "policy/policy-internal.h"

/* Adds a new empty object or array under key and returns it (owned by parent), NULL on ENOMEM. */
static struct json_object *add_container(struct json_object *parent, const char *key,
					 struct json_object *child)
{
	if (!child)
		return NULL;
	if (key) {
		if (al_json_add(parent, key, child) < 0)
			return NULL;
	} else if (json_object_array_add(parent, child) < 0) {
		(void)json_object_put(child);
		return NULL;
	}
	return child;
}

static struct json_object *add_object(struct json_object *parent, const char *key)
{
	return add_container(parent, key, json_object_new_object());
}

static struct json_object *add_array(struct json_object *parent, const char *key)
{
	return add_container(parent, key, json_object_new_array());
}

static int add_string(struct json_object *o, const char *key, const char *s)
{
	return al_json_add(o, key, json_object_new_string(s));
}

static int add_int(struct json_object *o, const char *key, int64_t i)
{
	return al_json_add(o, key, json_object_new_int64(i));
}

static int add_bytes(struct json_object *o, const char *key, uint64_t bytes)
{
	char buf[32];

	(void)snprintf(buf, sizeof(buf), "%" PRIu64, bytes);
	return add_string(o, key, buf);
}

static int add_strv(struct json_object *o, const char *key, const struct policy_strv *v)
{
	struct json_object *a = add_array(o, key);

	if (!a)
		return -ENOMEM;
	for (size_t i = 0; i < v->n; i++) {
		struct json_object *s = json_object_new_string(v->items[i]);

		/* json_object_array_add() would store a NULL as a JSON null. */
		if (!s)
			return -ENOMEM;
		if (json_object_array_add(a, s) < 0) {
			(void)json_object_put(s);
			return -ENOMEM;
		}
	}
	return 0;
}

static int add_isolation(struct json_object *root, const struct policy *p)
{
	struct json_object *a = add_array(root, "isolation"), *o;

	if (!a || !(o = add_object(a, NULL)))
		return -ENOMEM;
	if (add_string(o, "type", policy_isolation_to_string(p->isolation)) < 0 ||
	    (p->image && add_string(o, "image", p->image) < 0))
		return -ENOMEM;
	if (!p->network_policy)
		return 0;
	o = add_object(a, NULL);
	if (!o)
		return -ENOMEM;
	return add_string(o, "type", policy_isolation_to_string(POLICY_ISOLATION_NETWORK_POLICY));
}

static int add_workspace(struct json_object *root, const struct policy *p)
{
	struct json_object *o = add_object(root, "workspace");

	if (!o || add_string(o, "root", p->workspace.root) < 0 ||
	    add_string(o, "mount", p->workspace.mount) < 0 ||
	    add_strv(o, "read", &p->workspace.read) < 0 ||
	    add_strv(o, "write", &p->workspace.write) < 0 ||
	    add_strv(o, "deny", &p->workspace.deny) < 0 ||
	    (p->workspace.quota > 0 && add_bytes(o, "quota", p->workspace.quota) < 0) ||
	    (!p->workspace.protect &&
	     al_json_add(o, "protect", json_object_new_boolean(false)) < 0))
		return -ENOMEM;
	return 0;
}

static int add_mounts(struct json_object *root, const struct policy *p)
{
	struct json_object *a = add_array(root, "mounts");

	if (!a)
		return -ENOMEM;
	for (size_t i = 0; i < p->n_mounts; i++) {
		struct json_object *o = add_object(a, NULL);

		if (!o || add_string(o, "source", p->mounts[i].source) < 0 ||
		    add_string(o, "target", p->mounts[i].target) < 0 ||
		    add_string(o, "mode", p->mounts[i].read_only ? "ro" : "rw") < 0)
			return -ENOMEM;
	}
	return 0;
}

static int add_env(struct json_object *root, const struct policy *p)
{
	struct json_object *o = add_object(root, "env");

	if (!o)
		return -ENOMEM;
	/* p->env is kept sorted by name. */
	for (size_t i = 0; i < p->n_env; i++)
		if (add_string(o, p->env[i].name, p->env[i].value) < 0)
			return -ENOMEM;
	return 0;
}

static int add_credential_source(struct json_object *c, const struct policy_credential *cred)
{
	struct json_object *o = add_object(c, "source");

	if (!o || add_string(o, "type", policy_cred_source_to_string(cred->source)) < 0)
		return -ENOMEM;
	switch (cred->source) {
	case POLICY_CRED_SOURCE_VAULT:
	case POLICY_CRED_SOURCE_KEYRING:
		return add_string(o, "key", cred->source_key);
	case POLICY_CRED_SOURCE_ENV:
		return add_string(o, "var", cred->source_var);
	case POLICY_CRED_SOURCE_FILE:
		return add_string(o, "path", cred->source_path);
	case POLICY_CRED_SOURCE_COMMAND:
		return add_strv(o, "command", &cred->source_argv);
	}
	return -EINVAL;
}

static int add_credential_injection(struct json_object *c, const struct policy_credential *cred)
{
	struct json_object *o = add_object(c, "injection");

	if (!o || add_string(o, "type", policy_injection_to_string(cred->injection)) < 0)
		return -ENOMEM;
	switch (cred->injection) {
	case POLICY_INJECTION_ENV_VAR:
		return add_string(o, "var_name", cred->var_name);
	case POLICY_INJECTION_FILE:
		return add_string(o, "path", cred->path);
	case POLICY_INJECTION_SIDECAR:
		if (add_string(o, "header", cred->header) < 0)
			return -ENOMEM;
		return add_string(o, "format", cred->format);
	case POLICY_INJECTION_SSH_AGENT:
		return 0;
	}
	return -EINVAL;
}

/* An AWS access key id's "aws" object. */
static int add_credential_aws(struct json_object *c, const struct policy_credential *cred)
{
	struct json_object *o;

	if (cred->kind != POLICY_CRED_AWS_KEY_ID)
		return 0;
	o = add_object(c, "aws");
	if (!o || add_string(o, "secret_access_key", cred->aws_secret) < 0 ||
	    (cred->aws_token && add_string(o, "session_token", cred->aws_token) < 0) ||
	    add_strv(o, "regions", &cred->aws_regions) < 0 ||
	    add_strv(o, "services", &cred->aws_services) < 0)
		return -ENOMEM;
	return 0;
}

/* An SSH key's "ssh" object. */
static int add_credential_ssh(struct json_object *c, const struct policy_credential *cred)
{
	struct json_object *o;

	if (cred->kind != POLICY_CRED_SSH_KEY)
		return 0;
	o = add_object(c, "ssh");
	if (!o || add_strv(o, "destinations", &cred->ssh_destinations) < 0 ||
	    al_json_add(o, "commit_signing", json_object_new_boolean(cred->ssh_commit_signing)) < 0)
		return -ENOMEM;
	return 0;
}

/* A Postgres credential's "postgres" object (its destinations are its hosts). */
static int add_credential_postgres(struct json_object *c, const struct policy_credential *cred)
{
	static const char *const auth[] = {
	    [POLICY_PG_AUTH_SCRAM] = "scram-sha-256",
	    [POLICY_PG_AUTH_MD5] = "md5",
	    [POLICY_PG_AUTH_PASSWORD] = "password",
	};
	struct json_object *o = add_object(c, "postgres");

	if (!o || add_string(o, "user", cred->pg_user) < 0 ||
	    add_string(o, "database", cred->pg_database) < 0 ||
	    add_strv(o, "destinations", &cred->hosts) < 0 ||
	    add_string(o, "client_auth", auth[cred->pg_auth]) < 0)
		return -ENOMEM;
	return 0;
}

static int add_credentials(struct json_object *root, const struct policy *p)
{
	struct json_object *a = add_array(root, "credentials");
	int r;

	if (!a)
		return -ENOMEM;
	for (size_t i = 0; i < p->n_credentials; i++) {
		const struct policy_credential *cred = &p->credentials[i];
		struct json_object *o = add_object(a, NULL);

		if (!o || add_string(o, "name", cred->name) < 0)
			return -ENOMEM;
		r = add_credential_source(o, cred);
		if (r < 0)
			return r;
		r = add_credential_injection(o, cred);
		if (r < 0)
			return r;
		if (cred->kind == POLICY_CRED_SSH_KEY) {
			if (add_credential_ssh(o, cred) < 0)
				return -ENOMEM;
			continue;
		}
		if (cred->kind == POLICY_CRED_POSTGRES) {
			if (add_credential_postgres(o, cred) < 0)
				return -ENOMEM;
			continue;
		}
		if (add_strv(o, "hosts", &cred->hosts) < 0 ||
		    al_json_add(o, "expose", json_object_new_boolean(cred->expose)) < 0 ||
		    add_credential_aws(o, cred) < 0)
			return -ENOMEM;
	}
	return 0;
}

static int add_resources(struct json_object *root, const struct policy_resources *res)
{
	struct json_object *o = add_object(root, "resources");
	char buf[32];
	int r;

	if (!o)
		return -ENOMEM;
	if (res->cpu_millis > 0) {
		(void)snprintf(buf, sizeof(buf), "%" PRIu64 "m", res->cpu_millis);
		if (add_string(o, "cpu", buf) < 0)
			return -ENOMEM;
	}
	r = res->memory > 0 ? add_bytes(o, "memory", res->memory) : add_string(o, "memory", "max");
	if (r >= 0)
		r = res->pids > 0 ? add_int(o, "pids", (int64_t)res->pids)
				  : add_string(o, "pids", "max");
	if (r < 0 || add_bytes(o, "disk", res->disk) < 0)
		return -ENOMEM;
	if (res->timeout_usec > 0) {
		if (res->timeout_usec % 1000 == 0)
			(void)snprintf(buf, sizeof(buf), "%" PRIu64 "ms", res->timeout_usec / 1000);
		else
			(void)snprintf(buf, sizeof(buf), "%" PRIu64 "us", res->timeout_usec);
		if (add_string(o, "timeout", buf) < 0)
			return -ENOMEM;
	}
	if (res->io_weight > 0 && add_int(o, "io_weight", (int64_t)res->io_weight) < 0)
		return -ENOMEM;
	return add_int(o, "nofile", (int64_t)res->nofile);
}

static int add_network(struct json_object *root, const struct policy *p)
{
	struct json_object *o = add_object(root, "network"), *a, *m;

	if (!o ||
	    add_string(o, "default", policy_net_action_to_string(p->network.default_action)) < 0)
		return -ENOMEM;
	a = add_array(o, "rules");
	if (!a)
		return -ENOMEM;
	for (size_t i = 0; i < p->network.n_rules; i++) {
		const struct policy_net_rule *rule = &p->network.rules[i];
		struct json_object *jr = add_object(a, NULL);

		if (!jr || add_string(jr, "destination", rule->destination) < 0 ||
		    (rule->port > 0 && add_int(jr, "port", rule->port) < 0) ||
		    add_string(jr, "action", policy_net_action_to_string(rule->action)) < 0)
			return -ENOMEM;
	}
	m = add_object(o, "resolve");
	if (!m)
		return -ENOMEM;
	/* p->network.resolve is kept sorted by name. */
	for (size_t i = 0; i < p->network.n_resolve; i++)
		if (add_string(m, p->network.resolve[i].name, p->network.resolve[i].address) < 0)
			return -ENOMEM;
	/* Only when it is not the default: the hashes of policies without it stay as they were. */
	if (p->network.idle_timeout_usec > 0) {
		char buf[32];

		(void)snprintf(buf, sizeof(buf), "%" PRIu64 "ms",
			       p->network.idle_timeout_usec / 1000);
		if (add_string(o, "idle_timeout", buf) < 0)
			return -ENOMEM;
	}
	return 0;
}

int policy_to_canonical_json(const struct policy *p, char **ret)
{
	_cleanup_json_ struct json_object *root = NULL;
	int r;

	root = json_object_new_object();
	if (!root)
		return -ENOMEM;
	r = add_int(root, "canonical", POLICY_CANONICAL_VERSION);
	if (r >= 0 && p->id)
		r = add_string(root, "id", p->id);
	if (r >= 0)
		r = add_int(root, "tier", p->tier);
	/* Only when declared: the hashes of policies without one stay what they were. */
	if (r >= 0 && p->profile != POLICY_PROFILE_NONE)
		r = add_string(root, "profile", policy_profile_to_string(p->profile));
	if (r >= 0)
		r = add_isolation(root, p);
	if (r >= 0)
		r = add_string(root, "seccomp", policy_seccomp_to_string(p->seccomp));
	if (r >= 0)
		r = add_workspace(root, p);
	if (r >= 0)
		r = add_mounts(root, p);
	if (r >= 0)
		r = add_env(root, p);
	if (r >= 0)
		r = add_strv(root, "executables", &p->executables);
	if (r >= 0)
		r = add_credentials(root, p);
	if (r >= 0)
		r = add_resources(root, &p->resources);
	if (r >= 0)
		r = add_network(root, p);
	if (r >= 0 && p->audit)
		r = add_string(root, "audit", p->audit);
	if (r >= 0)
		r = add_strv(root, "labels", &p->labels);
	if (r < 0)
		return r;
	return al_json_to_string(root, ret);
}

int policy_hash(const struct policy *p, uint8_t ret[POLICY_HASH_SIZE])
{
	_cleanup_free_ char *json = NULL;
	uint8_t h[POLICY_HASH_SIZE];
	int r;

	r = policy_to_canonical_json(p, &json);
	if (r < 0)
		return r;
	/* sodium_init() only picks the fastest implementation; it is safe to call again. */
	if (sodium_init() < 0)
		return -EIO;
	if (crypto_generichash(h, sizeof(h), (const unsigned char *)json, strlen(json), NULL, 0) <
	    0)
		return -EIO;
	memcpy(ret, h, sizeof(h));
	return 0;
}

int policy_hash_hex(const struct policy *p, char ret[POLICY_HASH_HEX_SIZE])
{
	uint8_t h[POLICY_HASH_SIZE];
	int r;

	r = policy_hash(p, h);
	if (r < 0)
		return r;
	(void)sodium_bin2hex(ret, POLICY_HASH_HEX_SIZE, h, sizeof(h));
	return 0;
}
