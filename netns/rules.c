#define LOG_MODULE "netns"

/* The egress decisions (see netns-internal.h): pure functions of the policy and a destination,
 * so that the proxy, the DNS responder and the tests ask the same question the same way. */

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "netns/netns-internal.h"
#include "policy/policy.h"

/* Ranges no name or raw address reaches unless a rule names them (RFC 6890 and friends). */
static const struct special {
	int family;
	uint8_t prefix_len;
	uint8_t net[16];
	const char *name;
} specials[] = {
    {AF_INET, 8, {0}, "this network"},
    {AF_INET, 8, {10}, "private"},
    {AF_INET, 10, {100, 64}, "shared address space (CGNAT)"},
    {AF_INET, 8, {127}, "loopback"},
    {AF_INET, 32, {169, 254, 169, 254}, "metadata service"},
    {AF_INET, 16, {169, 254}, "link-local"},
    {AF_INET, 12, {172, 16}, "private"},
    {AF_INET, 24, {192, 0, 0}, "IETF protocol assignments"},
    {AF_INET, 16, {192, 168}, "private"},
    {AF_INET, 15, {198, 18}, "benchmarking (airlock's synthetic addresses)"},
    {AF_INET, 4, {224}, "multicast"},
    {AF_INET, 4, {240}, "reserved"},
    {AF_INET6, 128, {[15] = 1}, "loopback"},
    {AF_INET6, 128, {0}, "unspecified"},
    {AF_INET6, 96, {[10] = 0xff, [11] = 0xff}, "IPv4-mapped"},
    {AF_INET6, 128, {0xfd, 0x00, 0x0e, 0xc2, [14] = 0x02, [15] = 0x54}, "metadata service"},
    {AF_INET6, 7, {0xfc}, "unique local"},
    {AF_INET6, 10, {0xfe, 0x80}, "link-local"},
    {AF_INET6, 8, {0xff}, "multicast"},
    {AF_INET6, 96, {0x00, 0x64, 0xff, 0x9b}, "NAT64 (reaches IPv4)"},
    {AF_INET6, 48, {0x00, 0x64, 0xff, 0x9b, 0x00, 0x01}, "NAT64 (reaches IPv4)"},
    {AF_INET6, 16, {0x20, 0x02}, "6to4 (reaches IPv4)"},
    {AF_INET6, 32, {0x20, 0x01}, "Teredo"},
    {AF_INET6, 10, {0xfe, 0xc0}, "site-local"},
    {AF_INET6, 64, {0x01, 0x00}, "discard-only"},
    /* After ::, ::1 and ::ffff:0:0/96, so that those keep their names: the rest of ::/8 holds
     * the IPv4-compatible (::a.b.c.d) and IPv4-translated (::ffff:0:a.b.c.d, SIIT) forms,
     * which a host with sit0 or a translator delivers to IPv4. */
    {AF_INET6, 8, {0}, "reserved (IPv4-compatible or IPv4-translated)"},
};

/* Whether addr lies in net/prefix_len. */
static bool in_prefix(const uint8_t *addr, const uint8_t *net, unsigned prefix_len)
{
	unsigned full = prefix_len / 8, rest = prefix_len % 8;

	if (memcmp(addr, net, full) != 0)
		return false;
	return rest == 0 || ((addr[full] ^ net[full]) & (uint8_t)(0xff << (8 - rest))) == 0;
}

static const struct special *special_of(int family, const uint8_t *addr)
{
	/* The metadata /32 is listed before link-local's /16, so the narrower name wins. */
	for (size_t i = 0; i < ELEMENTSOF(specials); i++)
		if (specials[i].family == family &&
		    in_prefix(addr, specials[i].net, specials[i].prefix_len))
			return &specials[i];
	return NULL;
}

const char *netns_addr_special(int family, const uint8_t *addr)
{
	const struct special *s = special_of(family, addr);

	return s ? s->name : NULL;
}

/* A rule without a port: an allow opens 80 and 443 (the web), a deny closes every port (a
 * reader takes "deny evil.example" to mean the host, not its web ports). */
static bool port_matches(const struct policy_net_rule *r, uint16_t port)
{
	if (r->port)
		return r->port == port;
	return r->action == POLICY_NET_DENY || port == 80 || port == 443;
}

static bool name_matches(const struct policy_net_rule *r, const char *name)
{
	return (r->kind == POLICY_DEST_HOST || r->kind == POLICY_DEST_WILDCARD) &&
	       policy_host_covers(r->destination, name);
}

/* Whether name is an address written as a name: any form inet_aton() and so the host's resolver
 * take (1.2.3.4, 0x7f.1, 2130706433), or IPv6. */
static bool is_ip_literal(const char *name)
{
	struct in6_addr a6;
	struct in_addr a4;

	return inet_aton(name, &a4) == 1 || inet_pton(AF_INET6, name, &a6) == 1;
}

/* The first rule naming name and port decides, else the default. */
static void decide_by_rules(const struct policy *p, const char *name, uint16_t port,
			    struct netns_verdict *ret)
{
	for (size_t i = 0; i < p->network.n_rules; i++) {
		const struct policy_net_rule *r = &p->network.rules[i];

		if (!name_matches(r, name) || !port_matches(r, port))
			continue;
		*ret = (struct netns_verdict){.allow = r->action == POLICY_NET_ALLOW,
					      .rule = r,
					      .reason = r->action == POLICY_NET_ALLOW
							    ? "allowed by a rule"
							    : "denied by a rule"};
		return;
	}
	*ret = (struct netns_verdict){.allow = p->network.default_action == POLICY_NET_ALLOW,
				      .reason = p->network.default_action == POLICY_NET_ALLOW
						    ? "allowed by default"
						    : "denied by default"};
}

void netns_decide_name(const struct policy *p, const char *name, uint16_t port,
		       struct netns_verdict *ret)
{
	/* A raw address passes only by a CIDR rule, also when it comes as a name (CONNECT
	 * 1.2.3.4.:443, a DNS query for it) under a default or wildcard allow. */
	if (is_ip_literal(name)) {
		*ret = (struct netns_verdict){.reason = "an address is not a name: raw addresses "
							"pass only by a CIDR rule"};
		return;
	}
	decide_by_rules(p, name, port, ret);
}

void netns_decide_addr(const struct policy *p, const char *name, int family, const uint8_t *addr,
		       uint16_t port, struct netns_verdict *ret)
{
	const struct special *s = special_of(family, addr);

	for (size_t i = 0; i < p->network.n_rules; i++) {
		const struct policy_net_rule *r = &p->network.rules[i];

		if (r->kind != POLICY_DEST_CIDR || r->family != family ||
		    !in_prefix(addr, r->addr, r->prefix_len) || !port_matches(r, port))
			continue;
		if (r->action == POLICY_NET_DENY) {
			*ret = (struct netns_verdict){.rule = r, .reason = "denied by a rule"};
			return;
		}
		/* An allow rule opens a special range only by naming (part of) it. */
		if (s &&
		    !(r->prefix_len >= s->prefix_len && in_prefix(r->addr, s->net, s->prefix_len)))
			continue;
		*ret =
		    (struct netns_verdict){.allow = true, .rule = r, .reason = "allowed by a rule"};
		return;
	}
	if (s) {
		*ret = (struct netns_verdict){.reason = "a special-use address no rule names"};
		return;
	}
	if (!name) {
		*ret = (struct netns_verdict){.reason = "a raw address no rule allows"};
		return;
	}
	/* A name's address: the name's own verdict stands. */
	netns_decide_name(p, name, port, ret);
}

/* Some port lets name through: one a rule names, 80 or 443, or one no rule names (decided by the
 * default alone). */
bool netns_name_may_connect(const struct policy *p, const char *name)
{
	uint16_t other = 1;
	struct netns_verdict v;

	if (is_ip_literal(name))
		return false;
	decide_by_rules(p, name, 80, &v);
	if (v.allow)
		return true;
	decide_by_rules(p, name, 443, &v);
	if (v.allow)
		return true;
	for (size_t i = 0; i < p->network.n_rules; i++) {
		const struct policy_net_rule *r = &p->network.rules[i];

		if (r->port == 0)
			continue;
		decide_by_rules(p, name, r->port, &v);
		if (v.allow)
			return true;
		if (r->port >= other && r->port < UINT16_MAX)
			other = (uint16_t)(r->port + 1); /* past every port a rule names */
	}
	decide_by_rules(p, name, other, &v);
	return v.allow;
}

bool netns_name_is_bound(const struct policy *p, const char *name)
{
	for (size_t i = 0; i < p->n_credentials; i++)
		for (size_t j = 0; j < p->credentials[i].hosts.n; j++)
			if (policy_host_covers(p->credentials[i].hosts.items[j], name))
				return true;
	return false;
}
