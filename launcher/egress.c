#define LOG_MODULE "launcher"

/* The sandbox's way out, airlock's side: before clone, the proxy's state (its CA, which the
 * sandbox must trust); once the sandbox's network namespace exists, the proxy's process
 * (airlock-net), which makes the veth pair into a proxy netns of its own while airlock makes the
 * sandbox's cgroups; the sandbox runs nothing before the proxy says it is ready. If the proxy dies
 * while the sandbox runs, the sandbox is killed and the run fails; at the end the proxy is killed,
 * and with its last socket the kernel removes the proxy netns and both ends of the veth pair.
 *
 * Without root the same topology is made inside the sandbox's user namespace, by the sandbox's
 * first process before it builds its root (launcher_egress_build()): both network namespaces are
 * that namespace's, the proxy's process stays the user's, in the host's namespaces, and takes the
 * sockets; nothing of the host's changes. */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "broker/client.h"
#include "common/audit.h"
#include "common/fd-util.h"
#include "common/log.h"
#include "common/socket-util.h"
#include "launcher/launcher-internal.h"
#include "netns/netns.h"

#define HOST_CA_BUNDLE "/etc/ssl/certs/ca-certificates.crt"
#define HOST_CA_BUNDLE_MAX (8 * 1024 * 1024)
#define READY_TIMEOUT_MSEC 10000 /* netlink and a few sockets: milliseconds, normally */

struct launcher_egress {
	struct netns_proxy_options o;
	struct netns_proxy *proxy;
	struct broker_client *broker;
	int sandbox_netns; /* for set_up(): as root borrowed, without root the child's own */
	int violations[2]; /* [0] airlock reads, [1] the proxy writes */
	int ready[2];	   /* [0] airlock reads, [1] the proxy reports its set-up */
	int handoff[2];	   /* without root: [0] the sandbox's child sends the sockets it made in
			    * launcher_egress_build(), [1] the proxy's process receives them */
	int agent[2];	   /* with SSH keys: [0] the sandbox's child sends the agent's listening
			    * socket, [1] the proxy's process receives it */
	struct launcher_daemon daemon;
};

int launcher_egress_new(const struct policy *p, struct al_audit *audit,
			struct broker_client *broker, const char *upstream_ca,
			struct launcher_egress **ret, struct al_error *err)
{
	_cleanup_(launcher_egress_freep) struct launcher_egress *eg = NULL;
	int r;

	eg = calloc(1, sizeof(*eg));
	if (!eg)
		return -ENOMEM;
	*eg = (struct launcher_egress){
	    .sandbox_netns = -EBADF,
	    .violations = {-EBADF, -EBADF},
	    .ready = {-EBADF, -EBADF},
	    .handoff = {-EBADF, -EBADF},
	    .agent = {-EBADF, -EBADF},
	};
	launcher_daemon_init(&eg->daemon);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, eg->violations) <
	    0)
		return al_error_set_errno(err, -errno, "Failed to create the violations socket");
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, eg->ready) < 0)
		return al_error_set_errno(err, -errno,
					  "Failed to create the egress proxy's socket");
	if (broker) {
		r = broker_client_attach(broker, &eg->broker, err);
		if (r < 0)
			return r;
	}
	eg->o = (struct netns_proxy_options){
	    .policy = p,
	    .audit = audit,
	    .broker = eg->broker,
	    .upstream_ca_file = upstream_ca,
	    .violations_fd = eg->violations[1],
	};
	r = netns_proxy_new(&eg->o, &eg->proxy, err);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(eg);
	return 0;
}

/* The trust store the sandbox gets when TLS is intercepted: the host's CAs, so that what passes
 * through still verifies, and the sandbox's own CA. NULL when nothing is intercepted. */
int launcher_egress_ca_bundle(const struct launcher_egress *eg, char **ret)
{
	_cleanup_free_ char *host = NULL;
	const char *ca = netns_proxy_ca_pem(eg->proxy);
	int r;

	*ret = NULL;
	if (!ca)
		return 0;
	r = al_read_file_at(AT_FDCWD, HOST_CA_BUNDLE, HOST_CA_BUNDLE_MAX, &host, NULL);
	if (r < 0 && r != -ENOENT)
		return r;
	if (asprintf(ret, "%s%s%s", host ? host : "", host ? "\n" : "", ca) < 0) {
		*ret = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* In the proxy's process as root, in the sandbox's first process without root: the veth pair into
 * the sandbox's netns, a proxy netns, and the proxy's sockets in it. The proxy netns is held only
 * by those sockets afterwards. */
static int set_up(struct launcher_egress *eg, struct al_error *err)
{
	_cleanup_(netns_egress_freep) struct netns_egress *topology = NULL;
	const uint16_t *ports;
	size_t n_ports;
	int r;

	ports = netns_proxy_ports(eg->proxy, &n_ports);
	r = netns_egress_new(eg->sandbox_netns, ports, n_ports, &topology, err);
	if (r < 0)
		return r;
	return netns_proxy_listen(eg->proxy, netns_egress_proxy_fd(topology), err);
}

/* Without root, in the sandbox's first process, as soon as airlock has written its id maps:
 * all set_up() does is this user namespace's to do (a network namespace beside the sandbox's,
 * the veth pair between them, transparent sockets there), and this process may do it before it
 * builds its root, while airlock makes the cgroups. It sends m (READY with the count of sockets
 * in value, or the ERROR) and then the sockets, AL_FDS_MAX a message, on sock to the proxy's
 * process, which stays the user's in the host's namespaces; it keeps none of them. */
int launcher_egress_build(struct launcher_egress *eg, int sock, struct al_error *err)
{
	struct launcher_sync_msg m = {.type = LAUNCHER_SYNC_READY};
	int fds[PROXY_KEEP_FDS];
	size_t n;
	int r;

	eg->sandbox_netns = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (eg->sandbox_netns < 0)
		r = al_error_set_errno(err, -errno,
				       "Failed to open the sandbox's network namespace");
	else
		r = set_up(eg, err);
	eg->sandbox_netns = al_close(eg->sandbox_netns);
	if (r < 0) {
		m = (struct launcher_sync_msg){
		    .type = LAUNCHER_SYNC_ERROR, .value = r, .err = *err};
		(void)launcher_sync_send(sock, &m, -EBADF);
		(void)al_close(sock);
		return r;
	}
	n = netns_proxy_fds(eg->proxy, fds, netns_proxy_socket_count(eg->proxy));
	m.value = (int32_t)n;
	r = launcher_sync_send(sock, &m, -EBADF);
	for (size_t i = 0; r >= 0 && i < n; i += AL_FDS_MAX) {
		struct launcher_sync_msg more = {.type = LAUNCHER_SYNC_READY};

		r = launcher_sync_send_fds(sock, &more, fds + i, MIN(n - i, (size_t)AL_FDS_MAX));
	}
	for (size_t i = 0; i < n; i++)
		(void)al_close(fds[i]);
	(void)al_close(sock);
	if (r < 0)
		return al_error_set_errno(err, r, "Failed to hand the egress proxy its sockets");
	return 0;
}

/* Without root: the sockets launcher_egress_build() made in the sandbox's first process. The
 * proxy netns is held by them alone from then on, as it is for root. */
static int receive_sockets(struct launcher_egress *eg, struct al_error *err)
{
	struct launcher_sync_msg m;
	int fds[PROXY_KEEP_FDS], r;
	size_t want, got = 0;

	r = launcher_sync_recv(eg->handoff[1], &m, NULL);
	r = launcher_sync_expect(r, &m, LAUNCHER_SYNC_READY, "egress set-up", err);
	want = r >= 0 ? (size_t)MAX(m.value, 0) : 0;
	if (want > ELEMENTSOF(fds))
		r = al_error_set(err, -EBADMSG, "The egress set-up sent %zu sockets", want);
	while (r >= 0 && got < want) {
		size_t k = MIN(want - got, (size_t)AL_FDS_MAX);

		r = launcher_sync_recv_fds(eg->handoff[1], &m, fds + got, k);
		if (r >= 0 && fds[got + k - 1] < 0)
			r = -EBADMSG;
		got += k; /* closed below on an error: al_close() of -EBADF is harmless */
		if (r < 0)
			(void)al_error_set_errno(err, r, "Failed to receive the egress sockets");
	}
	eg->handoff[1] = al_close(eg->handoff[1]);
	if (r < 0) {
		for (size_t i = 0; i < got; i++)
			(void)al_close(fds[i]);
		return r;
	}
	r = netns_proxy_adopt(eg->proxy, fds, got);
	if (r < 0)
		return al_error_set_errno(err, r, "The egress set-up sent %zu sockets", got);
	return 0;
}

/* The SSH agent's listening socket, which the sandbox's first process made in the sandbox's root
 * (only the sandbox can reach its path) and sends before it builds the rest. */
static int receive_agent(struct launcher_egress *eg, struct al_error *err)
{
	struct launcher_sync_msg m;
	int fd = -EBADF, r;

	r = launcher_sync_recv(eg->agent[1], &m, &fd);
	eg->agent[1] = al_close(eg->agent[1]);
	r = launcher_sync_expect(r, &m, LAUNCHER_SYNC_READY, "SSH agent set-up", err);
	if (r >= 0 && fd < 0)
		r = al_error_set(err, -EBADMSG, "The sandbox sent no SSH agent socket");
	if (r >= 0)
		r = netns_proxy_adopt_agent(eg->proxy, TAKE_FD(fd));
	(void)al_close(fd);
	if (r < 0 && !err->msg[0])
		return al_error_set_errno(err, r, "Failed to serve the SSH agent");
	return r;
}

_noreturn_ static void proxy_main(void *userdata)
{
	struct launcher_egress *eg = userdata;
	struct launcher_sync_msg m = {.type = LAUNCHER_SYNC_READY};
	int keep[PROXY_KEEP_FDS], n = 0, r;

	(void)prctl(PR_SET_NAME, "airlock-net", 0, 0, 0);
	/* The sandbox's end: with none left but the sandbox's, its exit is an end of file here. */
	eg->handoff[0] = al_close(eg->handoff[0]);
	eg->agent[0] = al_close(eg->agent[0]);
	if (eg->sandbox_netns >= 0)
		r = set_up(eg, &m.err);
	else
		r = receive_sockets(eg, &m.err);
	if (r >= 0 && eg->agent[1] >= 0)
		r = receive_agent(eg, &m.err);
	if (r < 0)
		m = (struct launcher_sync_msg){
		    .type = LAUNCHER_SYNC_ERROR, .value = r, .err = m.err};
	if (launcher_sync_send(eg->ready[1], &m, -EBADF) < 0 || r < 0)
		_exit(EXIT_FAILURE);
	keep[n++] = STDERR_FILENO;
	keep[n++] = eg->violations[1];
	if (eg->o.audit)
		keep[n++] = al_audit_fd(eg->o.audit);
	if (eg->broker)
		keep[n++] = broker_client_fd(eg->broker);
	n += (int)netns_proxy_fds(eg->proxy, keep + n, ELEMENTSOF(keep) - (size_t)n);
	if (al_close_all_except(keep, (size_t)n) < 0)
		_exit(EXIT_FAILURE);
	r = netns_proxy_serve(eg->proxy, -EBADF);
	if (r < 0)
		log_debug_errno(r, "The egress proxy failed: %m");
	_exit(EXIT_FAILURE);
}

int launcher_egress_start(struct launcher_egress *eg, int sandbox_netns, int *ret_build_fd,
			  int *ret_agent_fd, struct al_error *err)
{
	int r;

	*ret_build_fd = -EBADF;
	*ret_agent_fd = -EBADF;
	if (sandbox_netns < 0 &&
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, eg->handoff) < 0)
		return al_error_set_errno(err, -errno,
					  "Failed to create the egress set-up's socket");
	if (policy_ssh_keys(eg->o.policy) > 0 &&
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, eg->agent) < 0)
		return al_error_set_errno(err, -errno, "Failed to create the SSH agent's socket");
	eg->sandbox_netns = sandbox_netns;
	r = launcher_daemon_start(&eg->daemon, proxy_main, eg);
	eg->sandbox_netns = -EBADF;
	if (r < 0)
		return al_error_set_errno(err, r, "Failed to start the egress proxy");
	eg->violations[1] = al_close(eg->violations[1]);
	eg->ready[1] = al_close(eg->ready[1]);
	eg->handoff[1] = al_close(eg->handoff[1]);
	eg->agent[1] = al_close(eg->agent[1]);
	*ret_build_fd = TAKE_FD(eg->handoff[0]);
	*ret_agent_fd = TAKE_FD(eg->agent[0]);
	return 0;
}

int launcher_egress_wait_ready(struct launcher_egress *eg, struct al_error *err)
{
	struct launcher_sync_msg m;
	struct pollfd pfd = {.fd = eg->ready[0], .events = POLLIN};
	int r;

	r = poll(&pfd, 1, READY_TIMEOUT_MSEC);
	if (r == 0)
		return al_error_set(err, -ETIMEDOUT, "The egress proxy did not set up in %d s",
				    READY_TIMEOUT_MSEC / 1000);
	r = r < 0 ? -errno : launcher_sync_recv(eg->ready[0], &m, NULL);
	eg->ready[0] = al_close(eg->ready[0]);
	return launcher_sync_expect(r, &m, LAUNCHER_SYNC_READY, "egress proxy", err);
}

struct launcher_daemon *launcher_egress_daemon(struct launcher_egress *eg)
{
	return eg ? &eg->daemon : NULL;
}

int launcher_egress_read_violation(struct launcher_egress *eg, char *kind, size_t kind_size,
				   char *detail, size_t size, uint32_t *ret_count)
{
	struct netns_violation v;
	ssize_t n;

	n = recv(eg->violations[0], &v, sizeof(v), MSG_DONTWAIT);
	if (n < 0)
		return -errno;
	if (n != (ssize_t)sizeof(v))
		return n == 0 ? -EPIPE : -EBADMSG;
	v.kind[sizeof(v.kind) - 1] = '\0';
	v.detail[sizeof(v.detail) - 1] = '\0';
	(void)snprintf(kind, kind_size, "%s", v.kind);
	(void)snprintf(detail, size, "%s", v.detail);
	*ret_count = 1 + v.dropped;
	return 0;
}

int launcher_egress_violations_fd(const struct launcher_egress *eg)
{
	return eg ? eg->violations[0] : -EBADF;
}

struct launcher_egress *launcher_egress_free(struct launcher_egress *eg)
{
	if (!eg)
		return NULL;
	launcher_daemon_kill(&eg->daemon);
	(void)al_close(eg->violations[0]);
	(void)al_close(eg->violations[1]);
	(void)al_close(eg->ready[0]);
	(void)al_close(eg->ready[1]);
	(void)al_close(eg->handoff[0]);
	(void)al_close(eg->handoff[1]);
	(void)al_close(eg->agent[0]);
	(void)al_close(eg->agent[1]);
	eg->proxy = netns_proxy_free(eg->proxy);
	eg->broker = broker_client_free(eg->broker);
	free(eg);
	return NULL;
}
