/* Command-line overrides. Each checks its argument with the checker of the matching JSON field,
 * names its flag in the message ("--memory: \"12Q\" is not a size") and changes the policy only
 * once everything has been checked and allocated. */

#include <string.h>

#include "policy/policy-internal.h"

int policy_set_workspace(struct policy *p, const char *root, struct al_error *err)
{
	const struct policy_where w = {.key = "--workspace"};
	char *d = NULL;
	int r;

	r = policy_check_string(&w, root, POLICY_STRING_MAX, err);
	if (r < 0)
		return r;
	r = policy_normalize_path(&w, root, POLICY_PATH_ALLOW_DOTDOT, &d, err);
	if (r < 0)
		return r;
	free(p->workspace.root);
	p->workspace.root = d;
	return 0;
}

/* Splits HOST[:PORT], *.suffix[:PORT], IPv4[:PORT], CIDR[:PORT], [IPv6]:PORT, [IPv6 CIDR]:PORT,
 * or a bare IPv6 address or CIDR (more than one colon, no brackets: no port) into a malloc'd
 * destination and a port string (NULL when none). */
static int split_host_port(const struct policy_where *w, const char *s, char **ret_dest,
			   const char **ret_port, struct al_error *err)
{
	const char *end, *port = NULL, *colon;
	char *d;

	if (s[0] == '[') {
		end = strchr(s, ']');
		if (!end || (end[1] != '\0' && end[1] != ':'))
			return policy_error(err, -EINVAL, w,
					    "%s is not [ADDRESS] or [ADDRESS]:PORT", QUOTE(s));
		if (end[1] == ':')
			port = end + 2;
		d = strndup(s + 1, (size_t)(end - s - 1));
	} else {
		colon = strchr(s, ':');
		if (colon && !strchr(colon + 1, ':')) {
			port = colon + 1;
			d = strndup(s, (size_t)(colon - s));
		} else {
			d = strdup(s);
		}
	}
	if (!d)
		return -ENOMEM;
	*ret_dest = d;
	*ret_port = port;
	return 0;
}

int policy_add_allow(struct policy *p, const char *host_port, struct al_error *err)
{
	const struct policy_where w = {.key = "--allow"};
	struct policy_net_rule rule = {.action = POLICY_NET_ALLOW}, *rules;
	_cleanup_free_ char *dest = NULL;
	const char *port = NULL;
	int r;

	r = policy_check_string(&w, host_port, POLICY_STRING_MAX, err);
	if (r < 0)
		return r;
	if (p->network.n_rules >= POLICY_LIST_MAX)
		return policy_error(err, -EINVAL, &w, "the policy already has %d network rules",
				    POLICY_LIST_MAX);
	r = split_host_port(&w, host_port, &dest, &port, err);
	if (r < 0)
		return r;
	if (port) {
		r = policy_parse_port(&w, port, &rule.port, err);
		if (r < 0)
			return r;
	}
	rules = reallocarray(p->network.rules, p->network.n_rules + 1, sizeof(*rules));
	if (!rules)
		return -ENOMEM;
	p->network.rules = rules; /* a larger array changes nothing the policy says */
	r = policy_parse_destination(&w, dest, &rule, err);
	if (r < 0)
		return r;
	if (host_port[0] == '[' && rule.kind != POLICY_DEST_CIDR) {
		free(rule.destination);
		return policy_error(err, -EINVAL, &w, "%s is not an IP address", QUOTE(dest));
	}
	rules[p->network.n_rules++] = rule;
	return 0;
}

int policy_set_memory(struct policy *p, const char *size, struct al_error *err)
{
	const struct policy_where w = {.key = "--memory"};
	uint64_t bytes;
	int r;

	if (streq(size, "max")) {
		p->resources.memory = 0;
		return 0;
	}
	r = policy_parse_size(&w, size, &bytes, err);
	if (r < 0)
		return r;
	r = policy_check_memory(&w, bytes, err);
	if (r < 0)
		return r;
	p->resources.memory = bytes;
	return 0;
}

int policy_set_timeout(struct policy *p, const char *duration, struct al_error *err)
{
	const struct policy_where w = {.key = "--timeout"};
	uint64_t usec;
	int r;

	r = policy_parse_timeout(&w, duration, &usec, err);
	if (r < 0)
		return r;
	p->resources.timeout_usec = usec;
	return 0;
}

int policy_set_env(struct policy *p, const char *assignment, struct al_error *err)
{
	const struct policy_where w = {.key = "--env"};
	const struct policy_credential *c;
	_cleanup_free_ char *name = NULL;
	const char *eq = strchr(assignment, '=');
	bool found;
	int r;

	if (!eq)
		return policy_error(err, -EINVAL, &w, "%s is not NAME=VALUE", QUOTE(assignment));
	name = strndup(assignment, (size_t)(eq - assignment));
	if (!name)
		return -ENOMEM;
	r = policy_check_env_name(&w, name, err);
	if (r < 0)
		return r;
	r = policy_check_env_value(&w, eq + 1, err);
	if (r < 0)
		return r;
	c = policy_credential_by_var(p, name);
	if (c)
		return policy_error(err, -EINVAL, &w, "%s is set by credential \"%s\"", QUOTE(name),
				    c->name);
	(void)policy_env_find(p, name, &found);
	if (!found && p->n_env >= POLICY_LIST_MAX)
		return policy_error(err, -EINVAL, &w, "the policy already has %d variables",
				    POLICY_LIST_MAX);
	return policy_env_put(p, TAKE_PTR(name), strdup(eq + 1));
}

int policy_set_seccomp(struct policy *p, const char *level, struct al_error *err)
{
	const struct policy_where w = {.key = "--seccomp"};

	return policy_parse_seccomp(&w, level, &p->seccomp, err);
}

/* NAME:ADDRESS, or curl's NAME:PORT:ADDRESS (the pin then holds for every port); an IPv6
 * address may be in brackets. A pin of the same name in the policy is replaced. */
int policy_add_resolve(struct policy *p, const char *pin, struct al_error *err)
{
	const struct policy_where w = {.key = "--resolve"};
	_cleanup_free_ char *name = NULL, *addr = NULL, *host = NULL, *ip = NULL;
	const char *colon, *rest, *port_end;
	struct policy_resolve *l;
	size_t i;
	int r;

	r = policy_check_string(&w, pin, POLICY_STRING_MAX, err);
	if (r < 0)
		return r;
	colon = strchr(pin, ':');
	if (!colon || colon == pin)
		return policy_error(err, -EINVAL, &w, "%s is not NAME:ADDRESS", QUOTE(pin));
	rest = colon + 1;
	port_end = rest + strspn(rest, "0123456789");
	if (port_end > rest && *port_end == ':' && port_end - rest <= 5)
		rest = port_end + 1;
	host = strndup(pin, (size_t)(colon - pin));
	addr = rest[0] == '[' && rest[strlen(rest) - 1] == ']' ? strndup(rest + 1, strlen(rest) - 2)
							       : strdup(rest);
	if (!host || !addr)
		return -ENOMEM;
	r = policy_normalize_host(&w, host, &name, err);
	if (r < 0)
		return r;
	r = policy_normalize_ip(&w, addr, &ip, err);
	if (r < 0)
		return r;
	for (i = 0; i < p->network.n_resolve; i++)
		if (streq(p->network.resolve[i].name, name))
			break;
	if (i == p->network.n_resolve) {
		if (p->network.n_resolve >= POLICY_LIST_MAX)
			return policy_error(err, -EINVAL, &w, "the policy already pins %d names",
					    POLICY_LIST_MAX);
		l = reallocarray(p->network.resolve, i + 1, sizeof(*l));
		if (!l)
			return -ENOMEM;
		p->network.resolve = l;
		l[i] = (struct policy_resolve){.name = TAKE_PTR(name)};
		p->network.n_resolve++;
	}
	free(p->network.resolve[i].address);
	p->network.resolve[i].address = TAKE_PTR(ip);
	policy_sort_resolve(p);
	return 0;
}
