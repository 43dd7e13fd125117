/* Admission: which policies of a high tier may run at all. The admitted set is a file the
 * operator keeps (by default /etc/airlock/admitted), one policy hash per line; the policy's own
 * fields cannot name it, so a request that brings its own policy cannot admit itself. Nor can a
 * policy lower its tier by declaring one: what it can do on the host sets a floor (the table of
 * docs/SECURITY.md, "The tier of a policy", which policy_min_tier() is). */

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fd-util.h"
#include "common/path-util.h"
#include "policy/policy-internal.h"

#define ADMITTED_FILE_MAX (1024 * 1024)

static bool is_hex_hash(const char *s, size_t n)
{
	if (n != POLICY_HASH_HEX_SIZE - 1)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!strchr("0123456789abcdef", s[i]) || s[i] == '\0')
			return false;
	return true;
}

/* Whether the file's owner and mode let it speak for the operator: root's or the caller's, and
 * writable by nobody else. */
static int check_trusted(int fd, const char *path, struct al_error *err)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return al_error_set(err, -errno, "%s: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return al_error_set(err, -EPERM, "The admitted set %s is not a regular file", path);
	if ((st.st_uid != 0 && st.st_uid != geteuid()) || (st.st_mode & (S_IWGRP | S_IWOTH)))
		return al_error_set(
		    err, -EPERM,
		    "The admitted set %s is not trusted: it must belong to root (or "
		    "this user) and be writable by no one else",
		    path);
	return 0;
}

int policy_admitted_in(const char *text, size_t len, const char *hash, bool *ret,
		       struct al_error *err)
{
	bool found = false;
	size_t line = 0;

	for (const char *p = text, *end = text + len; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p), w;

		line++;
		while (n > 0 && (*p == ' ' || *p == '\t'))
			p++, n--;
		/* Never past the line: text need not end in a NUL. */
		for (w = 0; w < n && p[w] != ' ' && p[w] != '\t' && p[w] != '#'; w++)
			;
		if (n > 0 && *p != '#') {
			if (!is_hex_hash(p, w) || (w < n && p[w] != ' ' && p[w] != '\t'))
				return al_error_set(err, -EINVAL,
						    "line %zu is not a policy hash (64 lower-case "
						    "hex digits, then an optional comment)",
						    line);
			/* Read on to the end: a malformed set is refused whole. */
			found = found || memcmp(p, hash, w) == 0;
		}
		p += n + (nl ? 1 : 0);
	}
	*ret = found;
	return 0;
}

struct tier_walk {
	int tier;
	struct policy_tier_reason reason;
};

/* Keeps the first field that calls for the highest tier so far. */
_printf_(4, 5) static void tier_raise(struct tier_walk *t, int tier, const char *why,
				      const char *fmt, ...)
{
	va_list ap;

	if (tier <= t->tier)
		return;
	t->tier = tier;
	t->reason.why = why;
	va_start(ap, fmt);
	(void)vsnprintf(t->reason.field, sizeof(t->reason.field), fmt, ap);
	va_end(ap);
}

static void credentials_tier(const struct policy *p, struct tier_walk *t)
{
	for (size_t i = 0; i < p->n_credentials; i++) {
		const struct policy_credential *c = &p->credentials[i];

		switch (c->source) {
		case POLICY_CRED_SOURCE_COMMAND:
			tier_raise(t, 4, "a command source", "credentials[%zu].source", i);
			break;
		case POLICY_CRED_SOURCE_FILE:
			tier_raise(t, 3, "a file source", "credentials[%zu].source", i);
			break;
		case POLICY_CRED_SOURCE_KEYRING:
			tier_raise(t, 3, "a keyring source", "credentials[%zu].source", i);
			break;
		case POLICY_CRED_SOURCE_ENV:
			tier_raise(t, 2, "an env source", "credentials[%zu].source", i);
			break;
		case POLICY_CRED_SOURCE_VAULT:
			tier_raise(t, 2, "a vault source", "credentials[%zu].source", i);
			break;
		}
		if (c->expose)
			tier_raise(t, 3, "an exposed credential", "credentials[%zu].expose", i);
	}
}

/* An allow rule is as wide as egress anywhere when it covers more than an IPv4 /8 or an IPv6 /16
 * (two /1 rules are 0.0.0.0/0), or a whole top-level domain ("*.com"). */
static bool rule_is_wide(const struct policy_net_rule *rule)
{
	if (rule->kind == POLICY_DEST_CIDR)
		return rule->prefix_len < (rule->family == AF_INET ? 8 : 16);
	if (rule->kind == POLICY_DEST_WILDCARD)
		return !strchr(rule->destination + 2, '.'); /* "*.tld" */
	return false;
}

struct span {
	uint64_t first, last;
};

static int span_compare(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	return x->first < y->first ? -1 : x->first > y->first;
}

/* Whether the allow rules of family cover together more than one rule may alone (an IPv4 /8, an
 * IPv6 /16): their ranges merged, so that a rule repeated (on another port) or inside another
 * counts once. IPv6 is counted in /64s, a longer prefix as one whole /64 (a bound, not less). */
static bool rules_are_wide_together(const struct policy *p, uint8_t family)
{
	struct span spans[POLICY_LIST_MAX];
	unsigned unit_bits = family == AF_INET ? 32 : 64, wide = family == AF_INET ? 8 : 16;
	uint64_t total = 0, limit = UINT64_C(1) << (unit_bits - wide);
	size_t n = 0;

	for (size_t i = 0; i < p->network.n_rules && n < ELEMENTSOF(spans); i++) {
		const struct policy_net_rule *rule = &p->network.rules[i];
		uint64_t first = 0;
		unsigned host_bits;

		if (rule->action != POLICY_NET_ALLOW || rule->kind != POLICY_DEST_CIDR ||
		    rule->family != family)
			continue;
		for (unsigned b = 0; b < unit_bits / 8; b++)
			first = first << 8 | rule->addr[b];
		host_bits = rule->prefix_len >= unit_bits ? 0 : unit_bits - rule->prefix_len;
		first &= host_bits >= 64 ? 0 : ~((UINT64_C(1) << host_bits) - 1);
		spans[n].first = first;
		spans[n].last =
		    first + (host_bits >= 64 ? UINT64_MAX : (UINT64_C(1) << host_bits) - 1);
		n++;
	}
	qsort(spans, n, sizeof(spans[0]), span_compare);
	for (size_t i = 0; i < n;) {
		struct span s = spans[i];

		for (i++; i < n && spans[i].first <= s.last; i++)
			s.last = MAX(s.last, spans[i].last);
		/* s.last - s.first + 1 addresses (units); more than limit in all is wide */
		if (s.last - s.first >= limit - total)
			return true;
		total += s.last - s.first + 1;
	}
	return false;
}

static void network_tier(const struct policy *p, struct tier_walk *t)
{
	if (p->network.default_action == POLICY_NET_ALLOW)
		tier_raise(t, 3, "allowing all egress", "network.default");
	for (size_t i = 0; i < p->network.n_rules; i++) {
		const struct policy_net_rule *rule = &p->network.rules[i];

		if (rule->action != POLICY_NET_ALLOW)
			continue;
		if (rule_is_wide(rule))
			tier_raise(t, 3, "a rule allowing a wide part of the internet",
				   "network.rules[%zu]", i);
		else
			tier_raise(t, 2, "egress", "network.rules[%zu]", i);
	}
	if (rules_are_wide_together(p, AF_INET) || rules_are_wide_together(p, AF_INET6))
		tier_raise(t, 3,
			   "rules allowing together a wide part of the internet (more than an "
			   "IPv4 /8 or an IPv6 /16)",
			   "network.rules");
	if (p->network.n_resolve > 0)
		tier_raise(t, 2, "pinned names", "network.resolve");
}

/* Whether a read-only mount of source shows nothing a sandbox does not see already: it lies in
 * /usr, which every sandbox has read-only (and which holds no service's socket). A source has no
 * ".." (the policy refuses it) and is its own real path (the launcher refuses one that resolves
 * through a link). */
static bool is_system_tree(const char *source)
{
	return al_path_is_within(source, "/usr");
}

int policy_min_tier(const struct policy *p, struct policy_tier_reason *ret)
{
	struct tier_walk t = {0};

	credentials_tier(p, &t);
	for (size_t i = 0; i < p->n_mounts; i++) {
		if (!p->mounts[i].read_only)
			tier_raise(&t, 3, "a writable host folder", "mounts[%zu]", i);
		else if (!is_system_tree(p->mounts[i].source))
			tier_raise(
			    &t, 3,
			    "a host folder (read-only stops no connect() to a host service's "
			    "socket in it, nor writes to its FIFOs)",
			    "mounts[%zu]", i);
	}
	if (p->image)
		tier_raise(&t, 3,
			   "a container image (a host folder, whose sockets and FIFOs a read-only "
			   "bind leaves open)",
			   "isolation.image");
	if (p->audit)
		tier_raise(&t, 3, "an audit file on the host", "audit");
	if (!p->workspace.protect)
		tier_raise(
		    &t, 4,
		    "lifting the workspace's protected entries (the host's git, shell, editor "
		    "and agents then run what the sandbox wrote)",
		    "workspace.protect");
	network_tier(p, &t);
	if (p->seccomp == POLICY_SECCOMP_BASELINE)
		tier_raise(&t, 2, "the baseline seccomp level", "seccomp");
	if (ret)
		*ret = t.reason;
	return t.tier;
}

int policy_effective_tier(const struct policy *p, struct policy_tier_reason *ret)
{
	struct policy_tier_reason reason;
	int tier = policy_min_tier(p, &reason);

	if (tier <= p->tier) {
		if (ret)
			*ret = (struct policy_tier_reason){0};
		return p->tier;
	}
	if (ret)
		*ret = reason;
	return tier;
}

/* "Policy HASH (tier N)", or what raised it: "FIELD: WHY makes this a tier N policy; its hash
 * HASH". */
static void describe(const struct policy_tier_reason *why, int tier, const char *hash, char *buf,
		     size_t size)
{
	if (why->why)
		(void)snprintf(buf, size, "%s: %s makes this a tier %d policy; its hash %s",
			       why->field, why->why, tier, hash);
	else
		(void)snprintf(buf, size, "Policy %s (tier %d)", hash, tier);
}

int policy_check_admitted(const struct policy *p, const char *path, struct al_error *err)
{
	char hash[POLICY_HASH_HEX_SIZE], what[256];
	struct policy_tier_reason why;
	_cleanup_free_ char *text = NULL;
	_cleanup_close_ int fd = -EBADF;
	bool admitted = false;
	int tier, r;
	size_t len;

	tier = policy_effective_tier(p, &why);
	if (tier < POLICY_TIER_ADMITTED)
		return 0;
	r = policy_hash_hex(p, hash);
	if (r < 0)
		return al_error_set(err, r, "Failed to hash the policy");
	describe(&why, tier, hash, what, sizeof(what));
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return al_error_set(err, -EPERM,
				    "%s is not admitted: the admitted set %s cannot be read (%s)",
				    what, path, strerror(errno));
	r = check_trusted(fd, path, err);
	if (r < 0)
		return r;
	r = al_read_fd(fd, ADMITTED_FILE_MAX, &text, &len);
	if (r < 0)
		return al_error_set(err, r, "The admitted set %s cannot be read: %s", path,
				    strerror(-r));
	r = policy_admitted_in(text, len, hash, &admitted, err);
	if (r < 0) {
		al_error_prefix(err, "The admitted set %s", path);
		return r;
	}
	if (!admitted)
		return al_error_set(err, -EPERM, "%s is not admitted%s %s", what,
				    why.why ? " in" : ": its hash is not in", path);
	return 0;
}
