/* The policy object: its lifecycle, the embedded default, and the small containers it is made
 * of. Parsing is in policy-parse.c, overrides in policy-override.c, the canonical form and hash
 * in policy-canonical.c. */

#include <stddef.h>
#include <string.h>

#include "common/sort-util.h"
#include "policy/policy-internal.h"

void policy_strv_done(struct policy_strv *v)
{
	for (size_t i = 0; i < v->n; i++)
		free(v->items[i]);
	free(v->items);
	*v = (struct policy_strv){};
}

int policy_strv_push(struct policy_strv *v, char *s)
{
	char **items;

	if (!s)
		return -ENOMEM;
	/* Keep a NULL after the last item, so that a command can be passed to execv() as is. */
	items = reallocarray(v->items, v->n + 2, sizeof(*items));
	if (!items) {
		free(s);
		return -ENOMEM;
	}
	items[v->n++] = s;
	items[v->n] = NULL;
	v->items = items;
	return 0;
}

int policy_strv_copy(const struct policy_strv *src, struct policy_strv *ret)
{
	struct policy_strv v = {};
	int r;

	for (size_t i = 0; i < src->n; i++) {
		r = policy_strv_push(&v, strdup(src->items[i]));
		if (r < 0) {
			policy_strv_done(&v);
			return r;
		}
	}
	*ret = v;
	return 0;
}

size_t policy_env_find(const struct policy *p, const char *name, bool *ret_found)
{
	return al_sorted_find(p->env, p->n_env, sizeof(*p->env),
			      offsetof(struct policy_env_var, name), name, ret_found);
}

int policy_env_put(struct policy *p, char *name, char *value)
{
	struct policy_env_var *env;
	bool found;
	size_t i;

	if (!name || !value) {
		free(name);
		free(value);
		return -ENOMEM;
	}
	i = policy_env_find(p, name, &found);
	if (found) {
		free(name);
		free(p->env[i].value);
		p->env[i].value = value;
		return 0;
	}
	env = reallocarray(p->env, p->n_env + 1, sizeof(*env));
	if (!env) {
		free(name);
		free(value);
		return -ENOMEM;
	}
	p->env = env;
	memmove(env + i + 1, env + i, (p->n_env - i) * sizeof(*env));
	env[i] = (struct policy_env_var){.name = name, .value = value};
	p->n_env++;
	return 0;
}

const struct policy_credential *policy_credential_by_var(const struct policy *p, const char *var)
{
	for (size_t i = 0; i < p->n_credentials; i++) {
		const struct policy_credential *c = &p->credentials[i];

		if (c->injection == POLICY_INJECTION_ENV_VAR && streq_ptr(c->var_name, var))
			return c;
	}
	return NULL;
}

int policy_init_defaults(struct policy *p)
{
	p->tier = 0;
	p->isolation = POLICY_ISOLATION_CONTAINER;
	p->seccomp = POLICY_SECCOMP_RESTRICTED;
	p->workspace.root = strdup(POLICY_DEFAULT_WORKSPACE_ROOT);
	p->workspace.mount = strdup(POLICY_DEFAULT_WORKSPACE_MOUNT);
	p->workspace.protect = true;
	if (!p->workspace.root || !p->workspace.mount)
		return -ENOMEM;
	if (policy_strv_push(&p->workspace.read, strdup("**")) < 0 ||
	    policy_strv_push(&p->workspace.write, strdup("**")) < 0)
		return -ENOMEM;
	p->resources = (struct policy_resources){
	    .memory = POLICY_DEFAULT_MEMORY,
	    .pids = POLICY_DEFAULT_PIDS,
	    .disk = POLICY_DEFAULT_DISK,
	    .nofile = POLICY_DEFAULT_NOFILE,
	};
	p->network.default_action = POLICY_NET_DENY;
	return 0;
}

int policy_new_default(struct policy **ret)
{
	_cleanup_(policy_freep) struct policy *p = NULL;

	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	if (policy_init_defaults(p) < 0)
		return -ENOMEM;
	*ret = TAKE_PTR(p);
	return 0;
}

static void credential_done(struct policy_credential *c)
{
	free(c->name);
	free(c->source_var);
	free(c->source_path);
	policy_strv_done(&c->source_argv);
	free(c->source_key);
	free(c->var_name);
	free(c->path);
	free(c->header);
	free(c->format);
	policy_strv_done(&c->hosts);
	free(c->aws_secret);
	free(c->aws_token);
	policy_strv_done(&c->aws_regions);
	policy_strv_done(&c->aws_services);
	policy_strv_done(&c->ssh_destinations);
	free(c->pg_user);
	free(c->pg_database);
}

struct policy *policy_free(struct policy *p)
{
	if (!p)
		return NULL;
	free(p->id);
	free(p->image);
	free(p->workspace.root);
	free(p->workspace.mount);
	policy_strv_done(&p->workspace.read);
	policy_strv_done(&p->workspace.write);
	policy_strv_done(&p->workspace.deny);
	for (size_t i = 0; i < p->n_mounts; i++) {
		free(p->mounts[i].source);
		free(p->mounts[i].target);
	}
	free(p->mounts);
	for (size_t i = 0; i < p->n_env; i++) {
		free(p->env[i].name);
		free(p->env[i].value);
	}
	free(p->env);
	policy_strv_done(&p->executables);
	for (size_t i = 0; i < p->n_credentials; i++)
		credential_done(&p->credentials[i]);
	free(p->credentials);
	for (size_t i = 0; i < p->network.n_rules; i++)
		free(p->network.rules[i].destination);
	free(p->network.rules);
	for (size_t i = 0; i < p->network.n_resolve; i++) {
		free(p->network.resolve[i].name);
		free(p->network.resolve[i].address);
	}
	free(p->network.resolve);
	free(p->audit);
	policy_strv_done(&p->labels);
	free(p);
	return NULL;
}

/* The to_string helpers return NULL for a value outside the enum (a programmer error). */

const char *policy_seccomp_to_string(enum policy_seccomp s)
{
	switch (s) {
	case POLICY_SECCOMP_BASELINE:
		return "baseline";
	case POLICY_SECCOMP_RESTRICTED:
		return "restricted";
	case POLICY_SECCOMP_STRICT:
		return "strict";
	}
	return NULL;
}

const char *policy_isolation_to_string(enum policy_isolation i)
{
	switch (i) {
	case POLICY_ISOLATION_PROCESS:
		return "process";
	case POLICY_ISOLATION_CONTAINER:
		return "container";
	case POLICY_ISOLATION_NETWORK_POLICY:
		return "network_policy";
	}
	return NULL;
}

const char *policy_net_action_to_string(enum policy_net_action a)
{
	switch (a) {
	case POLICY_NET_DENY:
		return "deny";
	case POLICY_NET_ALLOW:
		return "allow";
	}
	return NULL;
}

const char *policy_cred_source_to_string(enum policy_cred_source s)
{
	switch (s) {
	case POLICY_CRED_SOURCE_VAULT:
		return "vault";
	case POLICY_CRED_SOURCE_ENV:
		return "env";
	case POLICY_CRED_SOURCE_FILE:
		return "file";
	case POLICY_CRED_SOURCE_COMMAND:
		return "command";
	case POLICY_CRED_SOURCE_KEYRING:
		return "keyring";
	}
	return NULL;
}

const char *policy_injection_to_string(enum policy_injection i)
{
	switch (i) {
	case POLICY_INJECTION_ENV_VAR:
		return "env_var";
	case POLICY_INJECTION_FILE:
		return "file";
	case POLICY_INJECTION_SIDECAR:
		return "sidecar";
	case POLICY_INJECTION_SSH_AGENT:
		return "ssh_agent";
	}
	return NULL;
}

bool policy_host_covers(const char *pattern, const char *name)
{
	size_t nl = strlen(name), sl;

	if (strncmp(pattern, "*.", 2) != 0)
		return strcasecmp(pattern, name) == 0;
	sl = strlen(pattern + 1); /* ".suffix" */
	return nl > sl && strcasecmp(name + nl - sl, pattern + 1) == 0;
}

size_t policy_ssh_keys(const struct policy *p)
{
	size_t n = 0;

	for (size_t i = 0; i < p->n_credentials; i++)
		n += p->credentials[i].kind == POLICY_CRED_SSH_KEY;
	return n;
}

int policy_check_runnable(const struct policy *p, struct al_error *err)
{
	if (policy_ssh_keys(p) > 0 && !policy_has_egress(p))
		return al_error_set(err, -EINVAL,
				    "credentials: an SSH key signs only for connections the egress "
				    "proxy sees, and the policy's network allows none");
	return 0;
}

bool policy_has_egress(const struct policy *p)
{
	if (p->network.default_action == POLICY_NET_ALLOW)
		return true;
	for (size_t i = 0; i < p->network.n_rules; i++)
		if (p->network.rules[i].action == POLICY_NET_ALLOW)
			return true;
	return false;
}
