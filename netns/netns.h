#pragma once

/* The sandbox's way out: a veth pair from the sandbox's network namespace to a proxy network
 * namespace of airlock's own, configured with netlink (libnl-route-3). Nothing of the host's own
 * links, addresses, routes or firewall changes.
 *
 *   sandbox netns                         proxy netns
 *   lo, eth0 10.255.255.2/30  <-- veth -->  lo, al-proxy 10.255.255.1/30
 *   default via 10.255.255.1              rule iif al-proxy lookup 100 (AnyIP):
 *   no IPv6 on eth0                       local 0.0.0.0/0 dev lo table 100
 *
 * With AnyIP, a listener with IP_TRANSPARENT in the proxy netns accepts the sandbox's connection
 * to any address, and getsockname() gives the address the sandbox asked for. */

#include "common/error.h"
#include "common/macro.h"

#define NETNS_PROXY_IF "al-proxy"
#define NETNS_SANDBOX_IF "eth0"
#define NETNS_PROXY_ADDR "10.255.255.1"
#define NETNS_SANDBOX_ADDR "10.255.255.2"
#define NETNS_PREFIXLEN 30
#define NETNS_ANYIP_TABLE 100

struct netns_egress;

/* Makes the proxy netns and the veth pair, the sandbox's end created directly inside
 * sandbox_netns (an fd of it, borrowed: moving a device between namespaces costs ~30 ms). The
 * caller must be single-threaded: it enters each namespace in turn. Errors name the step. */
int netns_egress_new(int sandbox_netns, struct netns_egress **ret, struct al_error *err);

/* Closes airlock's hold on the proxy netns. The kernel removes it and the veth pair (both ends)
 * once nothing else holds it: no step of airlock's is needed, so none can be missed. */
struct netns_egress *netns_egress_free(struct netns_egress *e);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct netns_egress *, netns_egress_free);

/* The proxy netns (for the proxy's listening sockets), borrowed. */
int netns_egress_proxy_fd(const struct netns_egress *e);

/* Runs fn(userdata) with the calling thread in the network namespace nsfd, then returns to its
 * own. fn's result is returned; -errno when a namespace cannot be entered or left. */
typedef int (*netns_fn)(void *userdata);
int netns_run_in(int nsfd, netns_fn fn, void *userdata);
