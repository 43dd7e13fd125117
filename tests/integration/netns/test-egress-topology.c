/* The egress topology against the real kernel (suite root): a veth pair made with libnl from a
 * fresh "sandbox" netns to a proxy netns; a connection from the sandbox to any IPv4 address
 * reaches an IP_TRANSPARENT listener in the proxy netns, which sees the address asked for
 * (AnyIP); IPv6 has no way out; the host's own links are untouched; the proxy netns and the veth
 * vanish when airlock lets go. All traffic stays inside the namespaces this test creates. */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fd-util.h"
#include "netns/netns.h"

#define SKIP 77
#define TEST_PORT 8080
#define TEST_ADDR "203.0.113.7" /* TEST-NET-3: any address will do; none is reached */

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: check failed: %s (%s)\n", __FILE__, __LINE__,      \
				#cond, strerror(errno));                                           \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

static int listener = -1;

static int listen_transparent(void *userdata)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(TEST_PORT)};
	int one = 1;

	(void)userdata;
	listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (listener < 0 || setsockopt(listener, SOL_IP, IP_TRANSPARENT, &one, sizeof(one)) < 0 ||
	    bind(listener, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(listener, 8) < 0)
		return -errno;
	return 0;
}

/* A connection to TEST_ADDR at the port *userdata: its fd, or -errno. */
static int connect_v4(void *userdata)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(*(const int *)userdata)};
	int fd, r;

	(void)inet_pton(AF_INET, TEST_ADDR, &sa.sin_addr);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	r = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ? -errno : fd;
	if (r < 0)
		(void)al_close(fd);
	return r;
}

static int connect_v6(void *userdata)
{
	struct sockaddr_in6 sa = {.sin6_family = AF_INET6, .sin6_port = htons(TEST_PORT)};
	int fd, r;

	(void)userdata;
	(void)inet_pton(AF_INET6, "2001:db8::1", &sa.sin6_addr);
	fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	r = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ? -errno : 0;
	(void)al_close(fd);
	return r;
}

/* Whether the namespace holds an interface named name with an IPv6 address. */
static int has_ipv6(void *userdata)
{
	struct ifaddrs *ifa, *i;
	int found = 0;

	if (getifaddrs(&ifa) < 0)
		return -errno;
	for (i = ifa; i; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET6 &&
		    strcmp(i->ifa_name, (const char *)userdata) == 0)
			found = 1;
	freeifaddrs(ifa);
	return found;
}

static int ifindex_of(void *userdata)
{
	return (int)if_nametoindex((const char *)userdata);
}

static int new_netns(void)
{
	int own = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC), fresh;

	CHECK(own >= 0);
	CHECK(unshare(CLONE_NEWNET) == 0);
	fresh = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	CHECK(fresh >= 0);
	CHECK(setns(own, CLONE_NEWNET) == 0);
	(void)al_close(own);
	return fresh;
}

int main(void)
{
	struct netns_egress *e = NULL;
	struct al_error err = {0};
	struct sockaddr_in got;
	socklen_t len = sizeof(got);
	struct stat proxy_st;
	char addr[INET_ADDRSTRLEN];
	int sandbox, client, conn;

	if (geteuid() != 0) {
		fprintf(stderr, "needs root\n");
		return getenv("AIRLOCK_TEST_MUST_RUN") ? 1 : SKIP;
	}
	sandbox = new_netns();
	CHECK(netns_egress_new(sandbox, (const uint16_t[]){TEST_PORT}, 1, &e, &err) == 0 ||
	      (fprintf(stderr, "%s\n", err.msg), 0));
	printf("ok - the topology is made with libnl\n");

	/* The host has neither end. */
	CHECK(if_nametoindex(NETNS_PROXY_IF) == 0);
	CHECK(netns_run_in(sandbox, ifindex_of, (void *)NETNS_SANDBOX_IF) > 0);
	CHECK(netns_run_in(netns_egress_proxy_fd(e), ifindex_of, (void *)NETNS_PROXY_IF) > 0);
	printf("ok - each veth end is in its namespace, none on the host\n");

	CHECK(netns_run_in(netns_egress_proxy_fd(e), listen_transparent, NULL) == 0);
	client = netns_run_in(sandbox, connect_v4, &(int){TEST_PORT});
	CHECK(client >= 0);
	conn = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
	CHECK(conn >= 0);
	CHECK(getsockname(conn, (struct sockaddr *)&got, &len) == 0);
	CHECK(inet_ntop(AF_INET, &got.sin_addr, addr, sizeof(addr)));
	CHECK(strcmp(addr, TEST_ADDR) == 0 && ntohs(got.sin_port) == TEST_PORT);
	printf("ok - a connection to %s:%d reaches the proxy's transparent listener as %s\n",
	       TEST_ADDR, TEST_PORT, addr);
	CHECK(write(client, "x", 1) == 1);
	CHECK(read(conn, addr, 1) == 1 && addr[0] == 'x');
	printf("ok - bytes flow over it\n");

	CHECK(netns_run_in(sandbox, connect_v4, &(int){TEST_PORT + 1}) == -ENETUNREACH);
	printf("ok - a port without a listener is unreachable at once\n");

	CHECK(netns_run_in(sandbox, connect_v6, NULL) == -ENETUNREACH);
	CHECK(netns_run_in(sandbox, has_ipv6, (void *)NETNS_SANDBOX_IF) == 0);
	CHECK(netns_run_in(netns_egress_proxy_fd(e), has_ipv6, (void *)NETNS_PROXY_IF) == 0);
	printf("ok - IPv6 has no address on the veth and no route out\n");

	/* Letting go: the proxy netns disappears with the last reference, and the veth with it
	 * (so the sandbox end is gone too). */
	CHECK(fstat(netns_egress_proxy_fd(e), &proxy_st) == 0);
	(void)al_close(conn);
	(void)al_close(client);
	(void)al_close(listener);
	e = netns_egress_free(e);
	for (int i = 0; i < 200 && netns_run_in(sandbox, ifindex_of, (void *)NETNS_SANDBOX_IF) > 0;
	     i++)
		usleep(10000);
	CHECK(netns_run_in(sandbox, ifindex_of, (void *)NETNS_SANDBOX_IF) == 0);
	printf("ok - without airlock's hold the proxy netns and the veth pair vanish\n");
	(void)al_close(sandbox);
	return 0;
}
