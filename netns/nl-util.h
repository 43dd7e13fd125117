#pragma once

/* libnl adapters for netns/: errors as -errno, cleanup helpers, sockets in a given namespace. */

#include <netlink/addr.h>
#include <netlink/errno.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/route.h>
#include <netlink/route/rule.h>
#include <netlink/socket.h>

#include "common/macro.h"

/* libnl's -NLE_* as -errno. */
int netns_errno_from_nl(int nle);

static inline void netns_nl_socket_freep(struct nl_sock **s)
{
	if (*s)
		nl_socket_free(*s);
}
static inline void netns_rtnl_link_putp(struct rtnl_link **l)
{
	if (*l)
		rtnl_link_put(*l);
}
static inline void netns_rtnl_addr_putp(struct rtnl_addr **a)
{
	if (*a)
		rtnl_addr_put(*a);
}
static inline void netns_rtnl_route_putp(struct rtnl_route **r)
{
	if (*r)
		rtnl_route_put(*r);
}
static inline void netns_rtnl_rule_putp(struct rtnl_rule **r)
{
	if (*r)
		rtnl_rule_put(*r);
}
static inline void netns_nl_addr_putp(struct nl_addr **a)
{
	if (*a)
		nl_addr_put(*a);
}

/* A NETLINK_ROUTE socket connected in the network namespace nsfd. */
int netns_nl_socket_in(int nsfd, struct nl_sock **ret);
