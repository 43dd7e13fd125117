#define LOG_MODULE "netns"

/* The egress topology (see netns.h), made with libnl-route-3 only: no `ip`, no sysctl tool. */

#include <errno.h>
#include <fcntl.h>
#include <linux/fib_rules.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <netlink/route/link/veth.h>

#include "common/fd-util.h"
#include "netns/netns.h"
#include "netns/nl-util.h"

struct netns_egress {
	int proxy_ns;
};

struct netns_egress *netns_egress_free(struct netns_egress *e)
{
	if (!e)
		return NULL;
	(void)al_close(e->proxy_ns);
	free(e);
	return NULL;
}

int netns_egress_proxy_fd(const struct netns_egress *e)
{
	return e->proxy_ns;
}

/* A new network namespace, held by an fd; the calling thread stays in its own. */
static int new_netns(int *ret)
{
	_cleanup_close_ int own = -EBADF, fresh = -EBADF;
	int r;

	own = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (own < 0)
		return -errno;
	if (unshare(CLONE_NEWNET) < 0)
		return -errno;
	fresh = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	r = fresh < 0 ? -errno : 0;
	if (setns(own, CLONE_NEWNET) < 0)
		abort(); /* see netns_run_in() */
	if (r < 0)
		return r;
	*ret = TAKE_FD(fresh);
	return 0;
}

/* The veth pair: the proxy's end made in the proxy netns (sk's), its peer directly in the
 * sandbox's. */
static int add_veth(struct nl_sock *sk, int sandbox_ns)
{
	_cleanup_(netns_rtnl_link_putp) struct rtnl_link *veth = NULL;
	struct rtnl_link *peer;

	veth = rtnl_link_veth_alloc();
	if (!veth)
		return -ENOMEM;
	rtnl_link_set_name(veth, NETNS_PROXY_IF);
	peer = rtnl_link_veth_get_peer(veth);
	rtnl_link_set_name(peer, NETNS_SANDBOX_IF);
	rtnl_link_set_ns_fd(peer, sandbox_ns);
	rtnl_link_put(peer);
	return netns_errno_from_nl(rtnl_link_add(sk, veth, NLM_F_CREATE | NLM_F_EXCL));
}

static int link_up(struct nl_sock *sk, const char *name, int *ret_ifindex)
{
	_cleanup_(netns_rtnl_link_putp) struct rtnl_link *link = NULL, *change = NULL;
	int r;

	r = netns_errno_from_nl(rtnl_link_get_kernel(sk, 0, name, &link));
	if (r < 0)
		return r;
	change = rtnl_link_alloc();
	if (!change)
		return -ENOMEM;
	rtnl_link_set_flags(change, IFF_UP);
	r = netns_errno_from_nl(rtnl_link_change(sk, link, change, 0));
	if (r >= 0 && ret_ifindex)
		*ret_ifindex = rtnl_link_get_ifindex(link);
	return r;
}

static int add_address(struct nl_sock *sk, int ifindex, const char *addr)
{
	_cleanup_(netns_rtnl_addr_putp) struct rtnl_addr *a = NULL;
	_cleanup_(netns_nl_addr_putp) struct nl_addr *local = NULL;
	char text[32];
	int r;

	(void)snprintf(text, sizeof(text), "%s/%d", addr, NETNS_PREFIXLEN);
	r = netns_errno_from_nl(nl_addr_parse(text, AF_INET, &local));
	if (r < 0)
		return r;
	a = rtnl_addr_alloc();
	if (!a)
		return -ENOMEM;
	rtnl_addr_set_ifindex(a, ifindex);
	r = netns_errno_from_nl(rtnl_addr_set_local(a, local));
	if (r >= 0)
		r = netns_errno_from_nl(rtnl_addr_add(sk, a, 0));
	return r;
}

/* A route to dst ("default" or a prefix) through ifindex, via gateway (or NULL), of type (RTN_*)
 * in table. */
static int add_route(struct nl_sock *sk, const char *dst, int ifindex, const char *gateway,
		     uint8_t type, uint32_t table)
{
	_cleanup_(netns_rtnl_route_putp) struct rtnl_route *route = NULL;
	_cleanup_(netns_nl_addr_putp) struct nl_addr *d = NULL, *gw = NULL;
	struct rtnl_nexthop *nh;
	int r;

	r = netns_errno_from_nl(nl_addr_parse(dst, AF_INET, &d));
	if (r >= 0 && gateway)
		r = netns_errno_from_nl(nl_addr_parse(gateway, AF_INET, &gw));
	if (r < 0)
		return r;
	route = rtnl_route_alloc();
	nh = rtnl_route_nh_alloc();
	if (!route || !nh) {
		if (nh)
			rtnl_route_nh_free(nh);
		return -ENOMEM;
	}
	rtnl_route_set_family(route, AF_INET);
	rtnl_route_set_table(route, table);
	rtnl_route_set_type(route, type);
	rtnl_route_set_scope(route, type == RTN_LOCAL ? RT_SCOPE_HOST : RT_SCOPE_UNIVERSE);
	r = netns_errno_from_nl(rtnl_route_set_dst(route, d));
	if (r < 0) {
		rtnl_route_nh_free(nh);
		return r;
	}
	rtnl_route_nh_set_ifindex(nh, ifindex);
	if (gw)
		rtnl_route_nh_set_gateway(nh, gw);
	rtnl_route_add_nexthop(route, nh);
	return netns_errno_from_nl(rtnl_route_add(sk, route, NLM_F_CREATE | NLM_F_EXCL));
}

/* ip rule add iif al-proxy lookup NETNS_ANYIP_TABLE: what arrives from the sandbox is local. */
static int add_anyip_rule(struct nl_sock *sk)
{
	_cleanup_(netns_rtnl_rule_putp) struct rtnl_rule *rule = NULL;
	int r;

	rule = rtnl_rule_alloc();
	if (!rule)
		return -ENOMEM;
	rtnl_rule_set_family(rule, AF_INET);
	rtnl_rule_set_prio(rule, 100);
	rtnl_rule_set_table(rule, NETNS_ANYIP_TABLE);
	rtnl_rule_set_action(rule, FR_ACT_TO_TBL);
	r = netns_errno_from_nl(rtnl_rule_set_iif(rule, NETNS_PROXY_IF));
	if (r >= 0)
		r = netns_errno_from_nl(rtnl_rule_add(sk, rule, NLM_F_CREATE | NLM_F_EXCL));
	return r;
}

/* No IPv6 on the veth ends: no link-local address either, so no IPv6 path exists at all. Per
 * namespace, so written from inside it. */
static int disable_ipv6(void *userdata)
{
	char path[128];

	(void)snprintf(path, sizeof(path), "/proc/sys/net/ipv6/conf/%s/disable_ipv6",
		       (const char *)userdata);
	return al_write_file_at(AT_FDCWD, path, "1");
}

static int setup_proxy(struct nl_sock *sk, int proxy_ns, struct al_error *err)
{
	int ifindex = 0, lo = 0, r;

	r = link_up(sk, "lo", &lo);
	if (r < 0)
		return al_error_set_errno(err, r, "proxy netns: cannot bring lo up");
	r = netns_run_in(proxy_ns, disable_ipv6, (void *)NETNS_PROXY_IF);
	if (r < 0)
		return al_error_set_errno(err, r, "proxy netns: cannot disable IPv6 on %s",
					  NETNS_PROXY_IF);
	r = link_up(sk, NETNS_PROXY_IF, &ifindex);
	if (r >= 0)
		r = add_address(sk, ifindex, NETNS_PROXY_ADDR);
	if (r < 0)
		return al_error_set_errno(err, r, "proxy netns: cannot configure %s",
					  NETNS_PROXY_IF);
	r = add_anyip_rule(sk);
	if (r >= 0)
		r = add_route(sk, "0.0.0.0/0", lo, NULL, RTN_LOCAL, NETNS_ANYIP_TABLE);
	if (r < 0)
		return al_error_set_errno(err, r,
					  "proxy netns: cannot route the sandbox's "
					  "traffic to its listeners (AnyIP)");
	return 0;
}

static int setup_sandbox(struct nl_sock *sk, int sandbox_ns, struct al_error *err)
{
	int ifindex = 0, r;

	r = link_up(sk, "lo", NULL);
	if (r < 0)
		return al_error_set_errno(err, r, "sandbox netns: cannot bring lo up");
	r = netns_run_in(sandbox_ns, disable_ipv6, (void *)NETNS_SANDBOX_IF);
	if (r < 0)
		return al_error_set_errno(err, r, "sandbox netns: cannot disable IPv6 on %s",
					  NETNS_SANDBOX_IF);
	r = link_up(sk, NETNS_SANDBOX_IF, &ifindex);
	if (r >= 0)
		r = add_address(sk, ifindex, NETNS_SANDBOX_ADDR);
	if (r >= 0)
		r = add_route(sk, "default", ifindex, NETNS_PROXY_ADDR, RTN_UNICAST, RT_TABLE_MAIN);
	if (r < 0)
		return al_error_set_errno(err, r, "sandbox netns: cannot configure %s",
					  NETNS_SANDBOX_IF);
	return 0;
}

int netns_egress_new(int sandbox_netns, struct netns_egress **ret, struct al_error *err)
{
	_cleanup_(netns_egress_freep) struct netns_egress *e = NULL;
	_cleanup_(netns_nl_socket_freep) struct nl_sock *sk_proxy = NULL, *sk_sandbox = NULL;
	int r;

	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->proxy_ns = -EBADF;
	r = new_netns(&e->proxy_ns);
	if (r < 0)
		return al_error_set_errno(err, r, "Failed to create the proxy's network namespace");
	r = netns_nl_socket_in(e->proxy_ns, &sk_proxy);
	if (r >= 0)
		r = netns_nl_socket_in(sandbox_netns, &sk_sandbox);
	if (r < 0)
		return al_error_set_errno(err, r, "Failed to open a netlink socket");
	r = add_veth(sk_proxy, sandbox_netns);
	if (r < 0)
		return al_error_set_errno(err, r, "Failed to create the veth pair %s/%s",
					  NETNS_PROXY_IF, NETNS_SANDBOX_IF);
	r = setup_proxy(sk_proxy, e->proxy_ns, err);
	if (r >= 0)
		r = setup_sandbox(sk_sandbox, sandbox_netns, err);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(e);
	return 0;
}
