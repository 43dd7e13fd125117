/* `airlock capabilities --json`: what this machine can enforce, so that a framework can choose a
 * backend, or refuse, before it sends any code. Each control is probed by trying it. */

#include <errno.h>
#include <limits.h>
#include <string.h>

#include <json-c/json.h>

#include "agent/agent-internal.h"
#include "common/json-util.h"

/* Adds key: v, where a NULL v is JSON null ("none"), not a failure. */
static int add_nullable(struct json_object *o, const char *key, struct json_object *v)
{
	return json_object_object_add(o, key, v) < 0 ? -ENOMEM : 0;
}

static struct json_object *namespaces_json(const struct launcher_capabilities *c)
{
	struct json_object *o = json_object_new_object();
	int r = 0;

	if (!o)
		return NULL;
	r |= al_json_add(o, "user", json_object_new_boolean(c->user_ns));
	r |= al_json_add(o, "mount", json_object_new_boolean(c->mount_ns));
	r |= al_json_add(o, "pid", json_object_new_boolean(c->pid_ns));
	r |= al_json_add(o, "net", json_object_new_boolean(c->net_ns));
	r |= al_json_add(o, "ipc", json_object_new_boolean(c->ipc_ns));
	r |= al_json_add(o, "uts", json_object_new_boolean(c->uts_ns));
	r |= al_json_add(o, "cgroup", json_object_new_boolean(c->cgroup_ns));
	return r ? (json_object_put(o), NULL) : o;
}

static struct json_object *cgroups_json(const struct launcher_capabilities *c)
{
	struct json_object *o = json_object_new_object(), *list = json_object_new_array();
	int r = 0;

	if (!o || !list) {
		(void)json_object_put(o);
		(void)json_object_put(list);
		return NULL;
	}
	for (const char *p = c->cgroup_controllers; *p;) {
		size_t n = strcspn(p, " ");

		if (n > 0 && json_object_array_add(list, json_object_new_string_len(p, (int)n)) < 0)
			r = -ENOMEM;
		p += n;
		p += *p == ' ';
	}
	r |= add_nullable(o, "version",
			  c->cgroup_version ? json_object_new_int(c->cgroup_version) : NULL);
	r |= al_json_add(o, "controllers", list);
	r |= al_json_add(o, "limits", json_object_new_boolean(c->cgroup_limits));
	return r ? (json_object_put(o), NULL) : o;
}

/* How the workspace filesystem is served here, and why. */
static struct json_object *filesystem_json(const struct launcher_capabilities *c)
{
	struct json_object *o = json_object_new_object();
	int r = 0;

	if (!o)
		return NULL;
	r |= al_json_add(o, "libfuse", json_object_new_string(c->fs.libfuse));
	r |= al_json_add(o, "transport",
			 json_object_new_string(fusefs_transport_name(c->fs.transport)));
	r |= al_json_add(o, "transport_reason", json_object_new_string(c->fs.transport_why));
	r |= al_json_add(o, "passthrough", json_object_new_boolean(c->fs.passthrough));
	r |= al_json_add(o, "passthrough_reason", json_object_new_string(c->fs.passthrough_why));
	return r ? (json_object_put(o), NULL) : o;
}

/* Each language with the runtime the default policy's sandbox would use, or null. */
static struct json_object *languages_json(void)
{
	_cleanup_(policy_freep) struct policy *p = NULL;
	struct json_object *o = json_object_new_object();

	if (!o || policy_new_default(&p) < 0)
		return o ? (json_object_put(o), NULL) : NULL;
	for (size_t l = 0; l < AGENT_LANGUAGE_MAX; l++) {
		struct json_object *v = NULL;
		char rt[PATH_MAX];

		if (l == AGENT_LANGUAGE_COMMAND)
			v = json_object_new_boolean(true);
		else if (agent_language_runtime(l, p, rt, sizeof(rt), NULL) >= 0)
			v = json_object_new_string(rt);
		if (add_nullable(o, agent_language_to_string(l), v) < 0)
			return json_object_put(o), NULL;
	}
	return o;
}

/* The capsule profiles this machine can enforce for this user (launcher_capabilities()). */
static struct json_object *profiles_json(const struct launcher_capabilities *c)
{
	struct json_object *a = json_object_new_array();

	if (a && c->profile_linux_ns_v1 &&
	    json_object_array_add(a, json_object_new_string(
					 policy_profile_to_string(POLICY_PROFILE_LINUX_NS_V1))) < 0)
		return json_object_put(a), NULL;
	return a;
}

int agent_capabilities_print(FILE *out)
{
	_cleanup_json_ struct json_object *o = json_object_new_object();
	struct launcher_capabilities c;
	int r = 0;

	if (!o)
		return -ENOMEM;
	launcher_capabilities(&c);
	r |= al_json_add(o, "version", json_object_new_string(AIRLOCK_VERSION));
	r |= al_json_add(o, "runnable", json_object_new_boolean(c.missing == 0));
	r |= al_json_add(o, "namespaces", namespaces_json(&c));
	r |= al_json_add(o, "seccomp", json_object_new_boolean(c.seccomp));
	r |= add_nullable(o, "landlock_abi",
			  c.landlock_abi ? json_object_new_int(c.landlock_abi) : NULL);
	r |= al_json_add(o, "cgroups", cgroups_json(&c));
	r |= al_json_add(o, "fuse", json_object_new_boolean(c.fuse));
	r |= al_json_add(o, "filesystem", filesystem_json(&c));
	r |= al_json_add(o, "network_policy", json_object_new_boolean(c.network_policy));
	r |= al_json_add(o, "tls_interception", json_object_new_boolean(c.tls_interception));
	r |= al_json_add(o, "profiles", profiles_json(&c));
	r |= al_json_add(o, "persistent_sessions", json_object_new_boolean(true));
	r |= al_json_add(o, "languages", languages_json());
	return r != 0 ? -ENOMEM : agent_json_print(out, o);
}
