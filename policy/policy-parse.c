/* The policy file: JSON (json-c) to struct policy. Every field is checked, unknown fields are
 * refused at every level, and every message starts with the JSON path of the field it is about.
 * The policy under construction starts as the embedded default, so an absent field keeps its
 * default; on error the half-built policy is freed and *ret is not touched. */

#include <fcntl.h>
#include <inttypes.h>
#include <string.h>

#include <json-c/json.h>

#include "common/fd-util.h"
#include "common/json-util.h"
#include "policy/policy-internal.h"

static int glob_item(const struct policy_where *w, const char *s, char **ret, struct al_error *err)
{
	int r;

	r = policy_check_glob(w, s, err);
	if (r < 0)
		return r;
	return policy_strdup(s, ret);
}

static int executable_item(const struct policy_where *w, const char *s, char **ret,
			   struct al_error *err)
{
	return policy_normalize_path(w, s, POLICY_PATH_ABSOLUTE | POLICY_PATH_NOT_ROOT, ret, err);
}

static int label_item(const struct policy_where *w, const char *s, char **ret, struct al_error *err)
{
	size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789:._/-");

	if (n == 0 || s[n] != '\0' || n > POLICY_NAME_MAX)
		return policy_error(err, -EINVAL, w,
				    "%s is not a valid label ([a-z0-9:._/-]{1,%d})", QUOTE(s),
				    POLICY_NAME_MAX);
	if (startswith(s, "src:"))
		return policy_error(err, -EINVAL, w,
				    "%s: labels starting with \"src:\" are reserved for airlock",
				    QUOTE(s));
	return policy_strdup(s, ret);
}

static int parse_canonical(struct policy *p, const struct policy_where *w, struct json_object *v,
			   struct al_error *err)
{
	(void)p;
	if (!json_object_is_type(v, json_type_int))
		return policy_json_type_error(w, "an integer", err);
	if (json_object_get_int64(v) != POLICY_CANONICAL_VERSION)
		return policy_error(err, -EINVAL, w,
				    "unsupported canonical form version (this airlock reads %d)",
				    POLICY_CANONICAL_VERSION);
	return 0;
}

static int parse_id(struct policy *p, const struct policy_where *w, struct json_object *v,
		    struct al_error *err)
{
	const char *s;
	int r;

	r = policy_json_string(w, v, POLICY_STRING_MAX, &s, err);
	if (r < 0)
		return r;
	if (!policy_is_name(s, POLICY_ID_MAX))
		return policy_error(err, -EINVAL, w, "%s is not a valid id ([A-Za-z0-9._-]{1,%d})",
				    QUOTE(s), POLICY_ID_MAX);
	return policy_strdup(s, &p->id);
}

/* Known names only: a contract airlock does not know is one it cannot enforce. */
static int parse_profile(struct policy *p, const struct policy_where *w, struct json_object *v,
			 struct al_error *err)
{
	const char *s;
	int r;

	r = policy_json_string(w, v, POLICY_PROFILE_ID_MAX, &s, err);
	if (r < 0)
		return r;
	r = policy_profile_from_string(s, &p->profile);
	if (r < 0)
		return policy_error(err, r, w, "%s is not a profile airlock enforces (linux-ns-v1)",
				    QUOTE(s));
	return 0;
}

static int parse_tier(struct policy *p, const struct policy_where *w, struct json_object *v,
		      struct al_error *err)
{
	int64_t i = 0;
	int r;

	r = policy_json_int(w, v, 0, POLICY_TIER_MAX, &i, err);
	if (r < 0)
		return r;
	p->tier = (int)i;
	return 0;
}

static int isolation_type(const struct policy_where *w, const char *s, enum policy_isolation *ret,
			  struct al_error *err)
{
	static const char *const unenforceable[] = {"gvisor", "micro_vm", "wasm", "custom"};
	static const enum policy_isolation known[] = {
	    POLICY_ISOLATION_PROCESS,
	    POLICY_ISOLATION_CONTAINER,
	    POLICY_ISOLATION_NETWORK_POLICY,
	};

	for (size_t i = 0; i < ELEMENTSOF(known); i++)
		if (streq(s, policy_isolation_to_string(known[i]))) {
			*ret = known[i];
			return 0;
		}
	for (size_t i = 0; i < ELEMENTSOF(unenforceable); i++)
		if (streq(s, unenforceable[i]))
			return policy_error(err, -EOPNOTSUPP, w,
					    "%s cannot be enforced by airlock (it provides "
					    "namespaces, seccomp, landlock and cgroups); refusing "
					    "to run",
					    QUOTE(s));
	return policy_error(err, -EINVAL, w,
			    "%s is not an isolation type (process, container or network_policy)",
			    QUOTE(s));
}

/* The list is read as a set: container wins over process (airlock applies its full sandbox
 * either way), an empty list means container, network_policy is a flag on top. */
static int parse_isolation(struct policy *p, const struct policy_where *w, struct json_object *v,
			   struct al_error *err)
{
	static const struct policy_field container_fields[] = {{"type"}, {"image"}};
	bool process = false, container = false, network_policy = false;
	_cleanup_free_ char *image = NULL;
	size_t n;
	int r;

	r = policy_json_array(w, v, &n, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		const struct policy_where iw = POLICY_WHERE_INDEX(w, i);
		struct json_object *o = json_object_array_get_idx(v, i), *f;
		enum policy_isolation kind = POLICY_ISOLATION_CONTAINER;
		const char *s;

		r = policy_json_object(&iw, o, err);
		if (r < 0)
			return r;
		r = policy_json_required_string(&iw, o, "type", &s, err);
		if (r < 0)
			return r;
		r = isolation_type(POLICY_AT(&iw, "type"), s, &kind, err);
		if (r < 0)
			return r;
		if (kind != POLICY_ISOLATION_CONTAINER && json_object_object_get_ex(o, "image", &f))
			return policy_error(err, -EINVAL, POLICY_AT(&iw, "image"),
					    "only a \"container\" isolation has an image");
		r = policy_json_check_fields(&iw, o, container_fields,
					     kind == POLICY_ISOLATION_CONTAINER ? 2 : 1, NULL, err);
		if (r < 0)
			return r;

		process |= kind == POLICY_ISOLATION_PROCESS;
		container |= kind == POLICY_ISOLATION_CONTAINER;
		network_policy |= kind == POLICY_ISOLATION_NETWORK_POLICY;
		if (!json_object_object_get_ex(o, "image", &f))
			continue;
		if (image)
			return policy_error(err, -EINVAL, POLICY_AT(&iw, "image"),
					    "only one container image may be given");
		r = policy_json_string(POLICY_AT(&iw, "image"), f, POLICY_STRING_MAX, &s, err);
		if (r < 0)
			return r;
		r = policy_resolve_image(POLICY_AT(&iw, "image"), s, &image, err);
		if (r < 0)
			return r;
	}
	p->isolation =
	    container || !process ? POLICY_ISOLATION_CONTAINER : POLICY_ISOLATION_PROCESS;
	p->network_policy = network_policy;
	free(p->image);
	p->image = TAKE_PTR(image);
	return 0;
}

static int parse_seccomp(struct policy *p, const struct policy_where *w, struct json_object *v,
			 struct al_error *err)
{
	const char *s;
	int r;

	r = policy_json_string(w, v, POLICY_STRING_MAX, &s, err);
	if (r < 0)
		return r;
	return policy_parse_seccomp(w, s, &p->seccomp, err);
}

/* A path string, normalised per flags, replacing *slot. */
static int parse_path_into(const struct policy_where *w, struct json_object *v, unsigned flags,
			   char **slot, struct al_error *err)
{
	const char *s;
	char *d = NULL;
	int r;

	r = policy_json_string(w, v, POLICY_STRING_MAX, &s, err);
	if (r < 0)
		return r;
	r = policy_normalize_path(w, s, flags, &d, err);
	if (r < 0)
		return r;
	free(*slot);
	*slot = d;
	return 0;
}

static int parse_workspace_root(struct policy *p, const struct policy_where *w,
				struct json_object *v, struct al_error *err)
{
	return parse_path_into(w, v, POLICY_PATH_ALLOW_DOTDOT, &p->workspace.root, err);
}

static int parse_workspace_mount(struct policy *p, const struct policy_where *w,
				 struct json_object *v, struct al_error *err)
{
	return parse_path_into(w, v, POLICY_PATH_SANDBOX, &p->workspace.mount, err);
}

static int parse_globs(const struct policy_where *w, struct json_object *v, struct policy_strv *ret,
		       struct al_error *err)
{
	policy_strv_done(ret); /* the default */
	return policy_json_strv(w, v, glob_item, ret, err);
}

static int parse_workspace_read(struct policy *p, const struct policy_where *w,
				struct json_object *v, struct al_error *err)
{
	return parse_globs(w, v, &p->workspace.read, err);
}

static int parse_workspace_write(struct policy *p, const struct policy_where *w,
				 struct json_object *v, struct al_error *err)
{
	return parse_globs(w, v, &p->workspace.write, err);
}

static int parse_workspace_deny(struct policy *p, const struct policy_where *w,
				struct json_object *v, struct al_error *err)
{
	return parse_globs(w, v, &p->workspace.deny, err);
}

static int parse_workspace_quota(struct policy *p, const struct policy_where *w,
				 struct json_object *v, struct al_error *err)
{
	return policy_json_size(w, v, &p->workspace.quota, err);
}

static int parse_workspace_protect(struct policy *p, const struct policy_where *w,
				   struct json_object *v, struct al_error *err)
{
	return policy_json_bool(w, v, &p->workspace.protect, err);
}

static int parse_workspace(struct policy *p, const struct policy_where *w, struct json_object *v,
			   struct al_error *err)
{
	static const struct policy_field fields[] = {
	    {"root", parse_workspace_root},	  {"mount", parse_workspace_mount},
	    {"read", parse_workspace_read},	  {"write", parse_workspace_write},
	    {"deny", parse_workspace_deny},	  {"quota", parse_workspace_quota},
	    {"protect", parse_workspace_protect},
	};

	return policy_json_fields(p, w, v, fields, ELEMENTSOF(fields), err);
}

static int parse_mount(struct policy *p, size_t idx, const struct policy_where *w,
		       struct json_object *o, struct al_error *err)
{
	static const struct policy_field fields[] = {{"source"}, {"target"}, {"mode"}};
	struct policy_mount *m = &p->mounts[idx];
	struct json_object *f;
	const char *s;
	int r;

	r = policy_json_checked_object(w, o, fields, ELEMENTSOF(fields), err);
	if (r < 0)
		return r;

	r = policy_json_required_string(w, o, "source", &s, err);
	if (r < 0)
		return r;
	r = policy_normalize_path(POLICY_AT(w, "source"), s, POLICY_PATH_ABSOLUTE, &m->source, err);
	if (r < 0)
		return r;

	r = policy_json_required_string(w, o, "target", &s, err);
	if (r < 0)
		return r;
	r = policy_normalize_path(POLICY_AT(w, "target"), s, POLICY_PATH_SANDBOX, &m->target, err);
	if (r < 0)
		return r;
	if (streq(m->target, p->workspace.mount))
		return policy_error(err, -EINVAL, POLICY_AT(w, "target"),
				    "%s is the workspace mount", QUOTE(s));
	for (size_t i = 0; i < idx; i++)
		if (streq(m->target, p->mounts[i].target))
			return policy_error(err, -EINVAL, POLICY_AT(w, "target"),
					    "%s is already the target of mounts[%zu]", QUOTE(s), i);

	m->read_only = true;
	if (!json_object_object_get_ex(o, "mode", &f))
		return 0;
	r = policy_json_string(POLICY_AT(w, "mode"), f, POLICY_STRING_MAX, &s, err);
	if (r < 0)
		return r;
	if (!streq(s, "ro") && !streq(s, "rw"))
		return policy_error(err, -EINVAL, POLICY_AT(w, "mode"),
				    "%s is not a mount mode (\"ro\" or \"rw\")", QUOTE(s));
	m->read_only = streq(s, "ro");
	return 0;
}

static int parse_mounts(struct policy *p, const struct policy_where *w, struct json_object *v,
			struct al_error *err)
{
	return policy_json_elements(p, w, v, sizeof(*p->mounts), (void **)&p->mounts, &p->n_mounts,
				    parse_mount, err);
}

static int parse_env(struct policy *p, const struct policy_where *w, struct json_object *v,
		     struct al_error *err)
{
	int r;

	r = policy_json_map(w, v, err);
	if (r < 0)
		return r;
	json_object_object_foreach(v, key, value)
	{
		const char *s;

		r = policy_check_env_name(POLICY_AT(w, key), key, err);
		if (r < 0)
			return r;
		r = policy_json_string(POLICY_AT(w, key), value, POLICY_ENV_VALUE_MAX, &s, err);
		if (r < 0)
			return r;
		r = policy_env_put(p, strdup(key), strdup(s));
		if (r < 0)
			return r;
	}
	return 0;
}

static int parse_executables(struct policy *p, const struct policy_where *w, struct json_object *v,
			     struct al_error *err)
{
	return policy_json_strv(w, v, executable_item, &p->executables, err);
}

static int parse_cpu(struct policy *p, const struct policy_where *w, struct json_object *v,
		     struct al_error *err)
{
	const char *s;
	int64_t i = 0;
	int r;

	if (json_object_is_type(v, json_type_int)) {
		r = policy_json_int(w, v, 1, POLICY_JSON_INT_MAX / 1000, &i, err);
		if (r < 0)
			return r;
		p->resources.cpu_millis = (uint64_t)i * 1000;
		return 0;
	}
	if (!json_object_is_type(v, json_type_string))
		return policy_json_type_error(
		    w, "a string such as \"1.5\" or \"500m\", or a number of CPUs", err);
	r = policy_json_string(w, v, POLICY_STRING_MAX, &s, err);
	if (r < 0)
		return r;
	return policy_parse_cpu(w, s, &p->resources.cpu_millis, err);
}

/* "max" lifts a limit that the defaults would otherwise set (stored as 0). */
static bool is_max(struct json_object *v)
{
	return json_object_is_type(v, json_type_string) && streq(json_object_get_string(v), "max");
}

static int parse_memory(struct policy *p, const struct policy_where *w, struct json_object *v,
			struct al_error *err)
{
	uint64_t bytes;
	int r;

	if (is_max(v)) {
		p->resources.memory = 0;
		return 0;
	}
	r = policy_json_size(w, v, &bytes, err);
	if (r < 0)
		return r;
	r = policy_check_memory(w, bytes, err);
	if (r < 0)
		return r;
	p->resources.memory = bytes;
	return 0;
}

static int parse_disk(struct policy *p, const struct policy_where *w, struct json_object *v,
		      struct al_error *err)
{
	uint64_t bytes;
	int r;

	r = policy_json_size(w, v, &bytes, err);
	if (r < 0)
		return r;
	r = policy_check_disk(w, bytes, err);
	if (r < 0)
		return r;
	p->resources.disk = bytes;
	return 0;
}

static int parse_timeout(struct policy *p, const struct policy_where *w, struct json_object *v,
			 struct al_error *err)
{
	const char *s;
	int r;

	if (!json_object_is_type(v, json_type_string))
		return policy_json_type_error(w, "a duration string such as \"30s\" or \"5m\"",
					      err);
	r = policy_json_string(w, v, POLICY_STRING_MAX, &s, err);
	if (r < 0)
		return r;
	return policy_parse_timeout(w, s, &p->resources.timeout_usec, err);
}

static int parse_bounded(const struct policy_where *w, struct json_object *v, uint64_t min,
			 uint64_t max, uint64_t *ret, struct al_error *err)
{
	int64_t i = 0;
	int r;

	r = policy_json_int(w, v, (int64_t)min, (int64_t)max, &i, err);
	if (r < 0)
		return r;
	*ret = (uint64_t)i;
	return 0;
}

static int parse_pids(struct policy *p, const struct policy_where *w, struct json_object *v,
		      struct al_error *err)
{
	if (is_max(v)) {
		p->resources.pids = 0;
		return 0;
	}
	return parse_bounded(w, v, 1, POLICY_PIDS_MAX, &p->resources.pids, err);
}

static int parse_io_weight(struct policy *p, const struct policy_where *w, struct json_object *v,
			   struct al_error *err)
{
	return parse_bounded(w, v, 1, POLICY_IO_WEIGHT_MAX, &p->resources.io_weight, err);
}

static int parse_nofile(struct policy *p, const struct policy_where *w, struct json_object *v,
			struct al_error *err)
{
	return parse_bounded(w, v, POLICY_NOFILE_MIN, POLICY_NOFILE_MAX, &p->resources.nofile, err);
}

static int parse_resources(struct policy *p, const struct policy_where *w, struct json_object *v,
			   struct al_error *err)
{
	static const struct policy_field fields[] = {
	    {"cpu", parse_cpu},	      {"memory", parse_memory},	  {"pids", parse_pids},
	    {"disk", parse_disk},     {"timeout", parse_timeout}, {"io_weight", parse_io_weight},
	    {"nofile", parse_nofile},
	};

	return policy_json_fields(p, w, v, fields, ELEMENTSOF(fields), err);
}

static int parse_action(const struct policy_where *w, struct json_object *v,
			enum policy_net_action *ret, struct al_error *err)
{
	const char *s;
	int r;

	r = policy_json_string(w, v, POLICY_STRING_MAX, &s, err);
	if (r < 0)
		return r;
	if (streq(s, "allow"))
		*ret = POLICY_NET_ALLOW;
	else if (streq(s, "deny"))
		*ret = POLICY_NET_DENY;
	else
		return policy_error(err, -EINVAL, w, "%s is not \"allow\" or \"deny\"", QUOTE(s));
	return 0;
}

static int parse_network_default(struct policy *p, const struct policy_where *w,
				 struct json_object *v, struct al_error *err)
{
	return parse_action(w, v, &p->network.default_action, err);
}

static int parse_rule(const struct policy_where *w, struct json_object *o,
		      struct policy_net_rule *rule, struct al_error *err)
{
	static const struct policy_field fields[] = {{"destination"}, {"port"}, {"action"}};
	struct json_object *f;
	const char *s;
	int64_t port = 0;
	int r;

	r = policy_json_checked_object(w, o, fields, ELEMENTSOF(fields), err);
	if (r < 0)
		return r;
	r = policy_json_required_string(w, o, "destination", &s, err);
	if (r < 0)
		return r;
	r = policy_parse_destination(POLICY_AT(w, "destination"), s, rule, err);
	if (r < 0)
		return r;
	if (json_object_object_get_ex(o, "port", &f)) {
		r = policy_json_int(POLICY_AT(w, "port"), f, 1, UINT16_MAX, &port, err);
		if (r < 0)
			return r;
		rule->port = (uint16_t)port;
	}
	r = policy_json_required(w, o, "action", &f, err);
	if (r < 0)
		return r;
	return parse_action(POLICY_AT(w, "action"), f, &rule->action, err);
}

static int parse_rule_at(struct policy *p, size_t idx, const struct policy_where *w,
			 struct json_object *o, struct al_error *err)
{
	return parse_rule(w, o, &p->network.rules[idx], err);
}

static int parse_network_rules(struct policy *p, const struct policy_where *w,
			       struct json_object *v, struct al_error *err)
{
	return policy_json_elements(p, w, v, sizeof(*p->network.rules), (void **)&p->network.rules,
				    &p->network.n_rules, parse_rule_at, err);
}

static int resolve_compare(const void *a, const void *b)
{
	return strcmp(((const struct policy_resolve *)a)->name,
		      ((const struct policy_resolve *)b)->name);
}

void policy_sort_resolve(struct policy *p)
{
	qsort(p->network.resolve, p->network.n_resolve, sizeof(*p->network.resolve),
	      resolve_compare);
}

static int parse_network_resolve(struct policy *p, const struct policy_where *w,
				 struct json_object *v, struct al_error *err)
{
	size_t n;
	int r;

	r = policy_json_map(w, v, err);
	if (r < 0)
		return r;
	n = (size_t)json_object_object_length(v);
	if (n == 0)
		return 0;
	p->network.resolve = calloc(n, sizeof(*p->network.resolve));
	if (!p->network.resolve)
		return -ENOMEM;
	json_object_object_foreach(v, key, value)
	{
		struct policy_resolve *e = &p->network.resolve[p->network.n_resolve++];
		const char *s;

		r = policy_normalize_host(POLICY_AT(w, key), key, &e->name, err);
		if (r < 0)
			return r;
		for (size_t i = 0; i + 1 < p->network.n_resolve; i++)
			if (streq(p->network.resolve[i].name, e->name))
				return policy_error(err, -EINVAL, POLICY_AT(w, key),
						    "\"%s\" is pinned twice (names ignore case)",
						    e->name);
		r = policy_json_string(POLICY_AT(w, key), value, POLICY_STRING_MAX, &s, err);
		if (r < 0)
			return r;
		r = policy_normalize_ip(POLICY_AT(w, key), s, &e->address, err);
		if (r < 0)
			return r;
	}
	policy_sort_resolve(p);
	return 0;
}

static int parse_network_idle_timeout(struct policy *p, const struct policy_where *w,
				      struct json_object *v, struct al_error *err)
{
	const char *s;
	uint64_t usec;
	int r;

	if (!json_object_is_type(v, json_type_string))
		return policy_json_type_error(w, "a duration string such as \"30s\"", err);
	r = policy_json_string(w, v, POLICY_STRING_MAX, &s, err);
	if (r < 0)
		return r;
	r = policy_parse_timeout(w, s, &usec, err);
	if (r < 0)
		return r;
	if (usec < 1000000 || usec > POLICY_IDLE_TIMEOUT_MAX_USEC)
		return policy_error(err, -EINVAL, w, "%s is not between 1s and 1h", QUOTE(s));
	/* The default, written out, is the default: the same canonical form, the same hash. */
	p->network.idle_timeout_usec = usec == POLICY_IDLE_TIMEOUT_DEFAULT_USEC ? 0 : usec;
	return 0;
}

static int parse_network(struct policy *p, const struct policy_where *w, struct json_object *v,
			 struct al_error *err)
{
	static const struct policy_field fields[] = {
	    {"default", parse_network_default},
	    {"rules", parse_network_rules},
	    {"resolve", parse_network_resolve},
	    {"idle_timeout", parse_network_idle_timeout},
	};

	return policy_json_fields(p, w, v, fields, ELEMENTSOF(fields), err);
}

static int parse_audit(struct policy *p, const struct policy_where *w, struct json_object *v,
		       struct al_error *err)
{
	return parse_path_into(w, v, POLICY_PATH_ALLOW_DOTDOT | POLICY_PATH_NOT_ROOT, &p->audit,
			       err);
}

static int parse_labels(struct policy *p, const struct policy_where *w, struct json_object *v,
			struct al_error *err)
{
	int r;

	r = policy_json_strv(w, v, label_item, &p->labels, err);
	if (r < 0)
		return r;
	for (size_t i = 1; i < p->labels.n; i++)
		for (size_t j = 0; j < i; j++)
			if (streq(p->labels.items[i], p->labels.items[j]))
				return policy_error(err, -EINVAL, &POLICY_WHERE_INDEX(w, i),
						    "%s is already labels[%zu]",
						    QUOTE(p->labels.items[i]), j);
	return 0;
}

/* The order of this table is the order of the checks: workspace comes before mounts (a mount
 * may not hide the workspace) and env before credentials (an injected variable may not be set
 * twice). */
static const struct policy_field policy_fields[] = {
    {"canonical", parse_canonical},
    {"id", parse_id},
    {"tier", parse_tier},
    {"profile", parse_profile},
    {"isolation", parse_isolation},
    {"seccomp", parse_seccomp},
    {"workspace", parse_workspace},
    {"mounts", parse_mounts},
    {"env", parse_env},
    {"executables", parse_executables},
    {"credentials", policy_parse_credentials},
    {"resources", parse_resources},
    {"network", parse_network},
    {"audit", parse_audit},
    {"labels", parse_labels},
};

/* json-c cuts a string at a NUL (keys silently, "\u0000" in a key becomes a shorter key), so
 * NULs are refused before it sees the text: raw NUL bytes, and "\u0000" escapes in strings. */
static int check_no_nul(const char *buf, size_t len, struct al_error *err)
{
	bool in_string = false;

	for (size_t i = 0; i < len; i++) {
		if (buf[i] == '\0')
			return al_error_set(err, -EINVAL, "invalid JSON at byte %zu: a NUL byte",
					    i);
		if (!in_string) {
			in_string = buf[i] == '"';
		} else if (buf[i] == '"') {
			in_string = false;
		} else if (buf[i] == '\\' && i + 1 < len) {
			if (len - i >= 6 && memcmp(buf + i + 1, "u0000", 5) == 0)
				return al_error_set(
				    err, -EINVAL,
				    "invalid JSON at byte %zu: strings may not contain \\u0000", i);
			i++; /* the escaped character */
		}
	}
	return 0;
}

static int load_buffer(const char *buf, size_t len, bool profiled, struct policy **ret,
		       struct al_error *err)
{
	_cleanup_(policy_freep) struct policy *p = NULL;
	_cleanup_json_ struct json_object *root = NULL;
	int r;

	if (len > POLICY_FILE_MAX)
		return al_error_set(err, -EFBIG, "the policy is larger than %d bytes",
				    POLICY_FILE_MAX);
	r = check_no_nul(buf, len, err);
	if (r < 0)
		return r;
	r = al_json_parse(buf, len, POLICY_JSON_DEPTH_MAX, &root, err);
	if (r < 0)
		return r;
	if (!json_object_is_type(root, json_type_object))
		return al_error_set(err, -EINVAL, "a policy is a JSON object");

	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	r = policy_init_defaults(p);
	if (r < 0)
		return r;
	r = policy_json_fields(p, NULL, root, policy_fields, ELEMENTSOF(policy_fields), err);
	if (r >= 0 && profiled)
		r = policy_profile_check(p, p->profile, err);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(p);
	return 0;
}

int policy_load_buffer(const char *buf, size_t len, struct policy **ret, struct al_error *err)
{
	return load_buffer(buf, len, true, ret, err);
}

int policy_load_string(const char *json, struct policy **ret, struct al_error *err)
{
	return policy_load_buffer(json, strlen(json), ret, err);
}

static int load_file(const char *path, bool profiled, struct policy **ret, struct al_error *err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int r;

	r = al_read_file_at(AT_FDCWD, path, POLICY_FILE_MAX, &buf, &len);
	if (r == -EFBIG)
		return al_error_set(err, r, "%s: the policy is larger than %d bytes", QUOTE(path),
				    POLICY_FILE_MAX);
	if (r < 0)
		return al_error_set(err, r, "%s: %s", QUOTE(path), strerror(-r));
	return load_buffer(buf, len, profiled, ret, err);
}

int policy_load_file(const char *path, struct policy **ret, struct al_error *err)
{
	return load_file(path, true, ret, err);
}

int policy_load_file_unprofiled(const char *path, struct policy **ret, struct al_error *err)
{
	return load_file(path, false, ret, err);
}
