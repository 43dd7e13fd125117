#pragma once

/* The sandbox's way out: a veth pair from the sandbox's network namespace to a proxy network
 * namespace of airlock's own, configured with netlink (libnl-route-3). Nothing of the host's own
 * links, addresses, routes or firewall changes.
 *
 *   sandbox netns                         proxy netns
 *   lo, eth0 10.255.255.2/30  <-- veth -->  lo, al-proxy 10.255.255.1/30
 *   default via 10.255.255.1              rule iif al-proxy lookup 100 (AnyIP):
 *   no IPv6 on eth0                       local 0.0.0.0/0 dev lo table 100
 *                                         rule iif al-proxy prohibit (the rest)
 *
 * With AnyIP, a listener with IP_TRANSPARENT in the proxy netns accepts the sandbox's connection
 * to any address, and getsockname() gives the address the sandbox asked for. The AnyIP rule is
 * one per TCP port a listener serves (ipproto tcp dport P); anything else from the sandbox is
 * answered with ICMP "administratively prohibited", so it fails at once. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "common/macro.h"

#define NETNS_PROXY_IF "al-proxy"
#define NETNS_SANDBOX_IF "eth0"
#define NETNS_PROXY_ADDR "10.255.255.1"
#define NETNS_SANDBOX_ADDR "10.255.255.2"
#define NETNS_PREFIXLEN 30
/* The veth pair's MTU: the pair never leaves the machine, so it is as large as loopback's
 * (fewer segments and ACKs per byte through the proxy). */
#define NETNS_MTU 65535
#define NETNS_ANYIP_TABLE 100
#define NETNS_ANYIP_PRIO 100 /* the AnyIP rules; the prohibit rule is the next */

struct netns_egress;

/* Makes the proxy netns and the veth pair, the sandbox's end created directly inside
 * sandbox_netns (an fd of it, borrowed: moving a device between namespaces costs ~30 ms). TCP
 * to tcp_ports reaches the proxy netns's listeners; everything else is prohibited. The caller
 * must be single-threaded: it enters each namespace in turn. Errors name the step. */
int netns_egress_new(int sandbox_netns, const uint16_t *tcp_ports, size_t n_ports,
		     struct netns_egress **ret, struct al_error *err);

/* Closes airlock's hold on the proxy netns. The kernel removes it and the veth pair (both ends)
 * once nothing else holds it: no step of airlock's is needed, so none can be missed. */
struct netns_egress *netns_egress_free(struct netns_egress *e);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct netns_egress *, netns_egress_free);

/* A new network namespace, held by the fd in *ret; the calling thread stays in its own (if it
 * cannot step back, the process aborts: it would be stranded in the new one). */
int netns_new(int *ret);

/* The proxy netns (for the proxy's listening sockets), borrowed. */
int netns_egress_proxy_fd(const struct netns_egress *e);

/* Runs fn(userdata) with the calling thread in the network namespace nsfd, then returns to its
 * own. fn's result is returned; -errno when a namespace cannot be entered or left. */
typedef int (*netns_fn)(void *userdata);
int netns_run_in(int nsfd, netns_fn fn, void *userdata);

/* ---- The egress proxy (proxy.c): what the sandbox reaches through the veth pair ----
 *
 * One process of airlock's serves it: a DNS responder on NETNS_PROXY_ADDR:53 (synthetic
 * addresses for the names the policy lets through, NXDOMAIN for the rest), an explicit HTTP
 * proxy (CONNECT and absolute-form requests) on NETNS_PROXY_ADDR:NETNS_HTTP_PROXY_PORT, and one
 * transparent listener per port an allow rule names (80 and 443 for a rule without a port).
 * Each connection is decided by the policy's rules, then relayed: spliced when nothing needs to
 * be read, inspected as HTTP when surrogates could be in it, and with TLS terminated (by a
 * per-sandbox CA) for the hosts a credential is bound to, where surrogates are swapped for real
 * values. Every connection, DNS answer and swap is an audit event. */
struct al_audit;
struct broker_client;
struct policy;
struct netns_proxy;

#define NETNS_HTTP_PROXY_PORT 3128
#define NETNS_CA_BUNDLE "/etc/airlock/ca-bundle.pem"	/* in the sandbox */
#define NETNS_SSH_AGENT_SOCKET "/run/airlock/ssh-agent" /* in the sandbox: SSH_AUTH_SOCK */

/* What the proxy reports to airlock, one datagram each, on violations_fd. */
struct netns_violation {
	char kind[16];	  /* "net", "dns", "credential" */
	char detail[128]; /* e.g. "example.org:443", truncated */
	uint32_t dropped; /* earlier reports that did not fit */
};

struct netns_proxy_options {
	const struct policy *policy;  /* its network rules, resolve pins and credentials */
	struct al_audit *audit;	      /* may be NULL */
	struct broker_client *broker; /* the session's credentials (NULL: none); a client of
				       * the proxy's own (broker_client_attach()) */
	const char *upstream_ca_file; /* upstream TLS is verified against it; NULL: the host's
				       * store */
	int violations_fd;	      /* a SOCK_SEQPACKET end, or -EBADF */
};

/* Prepares the proxy, and, when a credential is bound to hosts, makes the CA for TLS
 * interception. o is borrowed and must outlive the proxy. Errors name the step. */
int netns_proxy_new(const struct netns_proxy_options *o, struct netns_proxy **ret,
		    struct al_error *err);
/* Opens the proxy's sockets in proxy_netns: a transparent listener per port, the DNS responder's.
 */
int netns_proxy_listen(struct netns_proxy *p, int proxy_netns, struct al_error *err);
struct netns_proxy *netns_proxy_free(struct netns_proxy *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct netns_proxy *, netns_proxy_free);
/* The CA certificate the sandbox must trust (PEM), or NULL when nothing is intercepted. */
const char *netns_proxy_ca_pem(const struct netns_proxy *p);
/* The TCP ports p listens on, borrowed; *ret_n of them. */
const uint16_t *netns_proxy_ports(const struct netns_proxy *p, size_t *ret_n);
/* The fds a process serving p must keep, into fds; returns how many (at most n). After
 * netns_proxy_listen(), the first netns_proxy_socket_count() of them are its sockets. */
size_t netns_proxy_fds(const struct netns_proxy *p, int *fds, size_t n);
/* How many sockets netns_proxy_listen() opens. */
size_t netns_proxy_socket_count(const struct netns_proxy *p);
/* Takes the n sockets another process opened with netns_proxy_listen() on a copy of p (the
 * first netns_proxy_fds() of its), in that order: -EBADMSG unless n is
 * netns_proxy_socket_count(). The fds are p's then, whatever the result. */
int netns_proxy_adopt(struct netns_proxy *p, int *fds, size_t n);
/* Takes fd, a listening AF_UNIX stream socket, to serve the policy's SSH keys on (the proxy
 * relays each request to the broker and keeps each connection's session-binds). */
int netns_proxy_adopt_agent(struct netns_proxy *p, int fd);
/* Serves until stop_fd (may be -EBADF) is readable or hangs up; returns 0 then, or -errno when
 * the proxy cannot go on. Single-threaded, except for name lookups: a worker thread started
 * here (so after any fork). */
int netns_proxy_serve(struct netns_proxy *p, int stop_fd);
