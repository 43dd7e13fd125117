#define LOG_MODULE "netns"

/* The egress topology (see netns.h), made with libnl-route-3 only: no `ip`, no sysctl tool. */

#include <errno.h>
#include <fcntl.h>
#include <linux/fib_rules.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
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

int netns_new(int *ret)
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
	peer = rtnl_link_veth_get_peer(veth);
	/* One queue each way: a veth device gets one per CPU unless told, and cutting them to one
	 * once registered waits for two RCU grace periods under the rtnl lock (milliseconds). */
	for (struct rtnl_link *l = veth; l; l = l == veth ? peer : NULL) {
		rtnl_link_set_mtu(l, NETNS_MTU);
		rtnl_link_set_num_tx_queues(l, 1);
		rtnl_link_set_num_rx_queues(l, 1);
	}
	rtnl_link_set_name(veth, NETNS_PROXY_IF);
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

/* One routing policy rule: ip rule add prio PRIO [iif IIF] [to DST] [ipproto tcp dport PORT]
 * ACTION [lookup TABLE]. */
struct rule_spec {
	uint32_t prio;
	const char *iif, *dst; /* NULL: any */
	uint16_t tcp_port;     /* 0: any protocol and port */
	uint8_t action;	       /* FR_ACT_* */
	uint32_t table;	       /* for FR_ACT_TO_TBL */
};

static int add_rule(struct nl_sock *sk, const struct rule_spec *spec)
{
	_cleanup_(netns_rtnl_rule_putp) struct rtnl_rule *rule = NULL;
	_cleanup_(netns_nl_addr_putp) struct nl_addr *dst = NULL;
	int r = 0;

	rule = rtnl_rule_alloc();
	if (!rule)
		return -ENOMEM;
	rtnl_rule_set_family(rule, AF_INET);
	rtnl_rule_set_prio(rule, spec->prio);
	rtnl_rule_set_action(rule, spec->action);
	if (spec->action == FR_ACT_TO_TBL)
		rtnl_rule_set_table(rule, spec->table);
	if (spec->iif)
		r = netns_errno_from_nl(rtnl_rule_set_iif(rule, spec->iif));
	if (r >= 0 && spec->dst) {
		r = netns_errno_from_nl(nl_addr_parse(spec->dst, AF_INET, &dst));
		if (r >= 0)
			r = netns_errno_from_nl(rtnl_rule_set_dst(rule, dst));
	}
	if (r >= 0 && spec->tcp_port) {
		r = netns_errno_from_nl(rtnl_rule_set_ipproto(rule, IPPROTO_TCP));
		if (r >= 0)
			r = netns_errno_from_nl(rtnl_rule_set_dport(rule, spec->tcp_port));
	}
	if (r >= 0)
		r = netns_errno_from_nl(rtnl_rule_add(sk, rule, NLM_F_CREATE | NLM_F_EXCL));
	return r;
}

/* Rules that send TCP to tcp_ports to through's table, then one that gives the rest of what
 * through matches (the same iif) last_action. */
static int add_port_rules(struct nl_sock *sk, struct rule_spec through, const uint16_t *tcp_ports,
			  size_t n_ports, uint8_t last_action)
{
	struct rule_spec rest = {
	    .prio = through.prio + 1, .iif = through.iif, .action = last_action};
	int r = 0;

	for (size_t i = 0; r >= 0 && i < n_ports; i++) {
		through.tcp_port = tcp_ports[i];
		r = add_rule(sk, &through);
	}
	if (r >= 0)
		r = add_rule(sk, &rest);
	return r;
}

/* Per namespace and per device, so written from inside the namespace. */
struct ipconf {
	const char *family; /* "ipv4", "ipv6" */
	const char *dev, *key, *value;
};

static int write_ipconf(void *userdata)
{
	const struct ipconf *c = userdata;
	char path[128];

	(void)snprintf(path, sizeof(path), "/proc/sys/net/%s/conf/%s/%s", c->family, c->dev,
		       c->key);
	return al_write_file_at(AT_FDCWD, path, c->value);
}

/* No IPv6 on a veth end: no link-local address either, so no IPv6 path exists at all. */
static int disable_ipv6(int ns, const char *dev)
{
	struct ipconf c = {"ipv6", dev, "disable_ipv6", "1"};

	return netns_run_in(ns, write_ipconf, &c);
}

static int setup_proxy(struct nl_sock *sk, int proxy_ns, const uint16_t *tcp_ports, size_t n_ports,
		       struct al_error *err)
{
	/* ip_error() answers a prohibited packet with ICMP only on a forwarding device. Nothing
	 * is ever forwarded: every packet from the sandbox is local or prohibited. */
	struct ipconf fwd = {"ipv4", NETNS_PROXY_IF, "forwarding", "1"};
	int ifindex = 0, lo = 0, r;

	r = link_up(sk, "lo", &lo);
	if (r < 0)
		return al_error_set_errno(err, r, "proxy netns: cannot bring lo up");
	r = disable_ipv6(proxy_ns, NETNS_PROXY_IF);
	if (r < 0)
		return al_error_set_errno(err, r, "proxy netns: cannot disable IPv6 on %s",
					  NETNS_PROXY_IF);
	r = netns_run_in(proxy_ns, write_ipconf, &fwd);
	if (r < 0)
		return al_error_set_errno(err, r, "proxy netns: cannot enable ICMP errors on %s",
					  NETNS_PROXY_IF);
	r = link_up(sk, NETNS_PROXY_IF, &ifindex);
	if (r >= 0)
		r = add_address(sk, ifindex, NETNS_PROXY_ADDR);
	if (r < 0)
		return al_error_set_errno(err, r, "proxy netns: cannot configure %s",
					  NETNS_PROXY_IF);
	/* What arrives from the sandbox for a port a listener serves is local (AnyIP). The rest
	 * is prohibited, answered with ICMP: a reset could not leave, as no route has the address
	 * it was sent to as a source. The sandbox's own rules fail it sooner (setup_sandbox()). */
	r = add_port_rules(sk,
			   (struct rule_spec){.prio = NETNS_ANYIP_PRIO,
					      .iif = NETNS_PROXY_IF,
					      .action = FR_ACT_TO_TBL,
					      .table = NETNS_ANYIP_TABLE},
			   tcp_ports, n_ports, FR_ACT_PROHIBIT);
	if (r >= 0)
		r = add_route(sk, "0.0.0.0/0", lo, NULL, RTN_LOCAL, NETNS_ANYIP_TABLE);
	if (r < 0)
		return al_error_set_errno(err, r,
					  "proxy netns: cannot route the sandbox's "
					  "traffic to its listeners (AnyIP)");
	return 0;
}

static int setup_sandbox(struct nl_sock *sk, int sandbox_ns, const uint16_t *tcp_ports,
			 size_t n_ports, struct al_error *err)
{
	const struct rule_spec to_proxy = {.prio = NETNS_ANYIP_PRIO,
					   .dst = NETNS_PROXY_ADDR "/32",
					   .action = FR_ACT_TO_TBL,
					   .table = RT_TABLE_MAIN};
	int ifindex = 0, r;

	r = link_up(sk, "lo", NULL);
	if (r < 0)
		return al_error_set_errno(err, r, "sandbox netns: cannot bring lo up");
	r = disable_ipv6(sandbox_ns, NETNS_SANDBOX_IF);
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
	/* Only what the proxy serves takes the default route: the proxy's own address (DNS, the
	 * explicit proxy) and TCP to its ports. Anything else is unreachable from the start, so
	 * it fails in connect() or sendto() at once, with no ICMP and its rate limits involved. */
	r = add_rule(sk, &to_proxy);
	if (r >= 0)
		r = add_port_rules(sk,
				   (struct rule_spec){.prio = NETNS_ANYIP_PRIO,
						      .action = FR_ACT_TO_TBL,
						      .table = RT_TABLE_MAIN},
				   tcp_ports, n_ports, FR_ACT_UNREACHABLE);
	if (r < 0)
		return al_error_set_errno(err, r, "sandbox netns: cannot add its routing rules");
	return 0;
}

int netns_egress_new(int sandbox_netns, const uint16_t *tcp_ports, size_t n_ports,
		     struct netns_egress **ret, struct al_error *err)
{
	_cleanup_(netns_egress_freep) struct netns_egress *e = NULL;
	_cleanup_(netns_nl_socket_freep) struct nl_sock *sk_proxy = NULL, *sk_sandbox = NULL;
	int r;

	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->proxy_ns = -EBADF;
	r = netns_new(&e->proxy_ns);
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
	r = setup_proxy(sk_proxy, e->proxy_ns, tcp_ports, n_ports, err);
	if (r >= 0)
		r = setup_sandbox(sk_sandbox, sandbox_netns, tcp_ports, n_ports, err);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(e);
	return 0;
}
