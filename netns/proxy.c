#define LOG_MODULE "netns"

/* The egress proxy (netns.h): sockets, the event loop, and each connection's way from accept to
 * a relay. One thread, edge-triggered epoll: every event on a connection runs its pump, which
 * makes all the progress it can until each side would block, so no readiness is ever lost.
 *
 * A connection's phases:
 *   HEAD        explicit proxy only: the request head (CONNECT, or an absolute-form request)
 *   LOOKUP      the name's upstream address (pinned, or from the lookup worker)
 *   CONNECTING  the upstream's TCP handshake
 *   SNIFF       what the sandbox speaks first: a TLS ClientHello (its SNI is checked), HTTP, or
 *               nothing yet (a server that speaks first gets a splice)
 *   SPLICE      bytes moved between the sockets through pipes, never copied to user space
 *   FLOW        inspected HTTP (http-flow.c), over TLS terminated at both ends when the name is
 *               bound to a credential
 * The listening sockets live in the proxy netns; upstream sockets are made in the process's own
 * (a socket keeps the netns it was made in), so the sandbox's traffic leaves from the host. */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "broker/client.h"
#include "common/audit.h"
#include "common/fd-util.h"
#include "common/log.h"
#include "netns/netns-internal.h"
#include "netns/netns.h"
#include "netns/proxy-internal.h"
#include "policy/policy.h"

static void conn_close(struct conn *c, bool reset);
static void conn_pump(struct conn *c);

/* ---- reports: the audit, and violations to airlock ---- */

void proxy_violation(struct netns_proxy *p, const char *kind, const char *fmt, ...)
{
	struct netns_violation v = {.dropped = p->violations_dropped};
	va_list ap;

	if (p->o->violations_fd < 0)
		return;
	(void)snprintf(v.kind, sizeof(v.kind), "%s", kind);
	va_start(ap, fmt);
	(void)vsnprintf(v.detail, sizeof(v.detail), fmt, ap);
	va_end(ap);
	if (send(p->o->violations_fd, &v, sizeof(v), MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		p->violations_dropped++;
	else
		p->violations_dropped = 0;
}

static const char *rule_name(const struct netns_verdict *v)
{
	return v->rule ? v->rule->destination : "default";
}

static void format_addr(const struct netns_addr *a, char *buf, size_t size)
{
	if (!a->family || !inet_ntop(a->family, a->addr, buf, (socklen_t)size))
		(void)snprintf(buf, size, "-");
}

/* "host:port" of c: the name the sandbox asked for, else the address. */
void proxy_destination(const struct conn *c, char *buf, size_t size)
{
	char ip[INET6_ADDRSTRLEN] = "-";

	if (c->name[0]) {
		(void)snprintf(buf, size, "%s:%u", c->name, c->port);
		return;
	}
	if (c->upstream.family)
		(void)inet_ntop(c->upstream.family, c->upstream.addr, ip, sizeof(ip));
	(void)snprintf(buf, size, c->upstream.family == AF_INET6 ? "[%s]:%u" : "%s:%u", ip,
		       c->port);
}

uint64_t proxy_now_msec(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Whether one more audit event may be written: a token bucket (AUDIT_BURST events, refilled at
 * AUDIT_RATE a second), so that a sandbox flooding the proxy with queries or connections cannot
 * fill the host's disk through the audit file. Where events are dropped, one event says so, and
 * one says how many were when they are written again. */
bool proxy_audit_admit(struct netns_proxy *p)
{
	uint64_t now;

	if (!p->o->audit)
		return false;
	now = proxy_now_msec();
	p->audit_tokens =
	    MIN(p->audit_tokens + (now - p->audit_ms) * AUDIT_RATE, (uint64_t)AUDIT_BURST * 1000);
	p->audit_ms = now;
	/* Once dropping, until half the burst is back: one pair of notes per stretch, not one
	 * per refilled token. */
	if (p->audit_tokens < (p->audit_dropped > 0 ? AUDIT_BURST / 2 * 1000 : 1000)) {
		if (p->audit_dropped++ == 0)
			(void)al_audit_event(
			    p->o->audit, "audit",
			    (const struct al_audit_field[]){
				AL_AUDIT_S("action", "drop"),
				AL_AUDIT_S("reason", "over the egress events' rate limit"),
			    },
			    2);
		return false;
	}
	p->audit_tokens -= 1000;
	if (p->audit_dropped > 0) {
		(void)al_audit_event(p->o->audit, "audit",
				     (const struct al_audit_field[]){
					 AL_AUDIT_S("action", "resume"),
					 AL_AUDIT_I("dropped", (int64_t)p->audit_dropped),
				     },
				     2);
		p->audit_dropped = 0;
	}
	return true;
}

/* The connection's one audit event: its verdict, and for an allowed one how it is relayed. */
static void conn_audit(struct conn *c, const char *verdict, const char *reason)
{
	char ip[INET6_ADDRSTRLEN];

	if (c->audited)
		return;
	c->audited = true;
	format_addr(&c->upstream, ip, sizeof(ip));
	if (!proxy_audit_admit(c->proxy))
		return;
	(void)al_audit_event(
	    c->proxy->o->audit, "net",
	    (const struct al_audit_field[]){
		AL_AUDIT_S("name", c->name[0] ? c->name : "-"),
		AL_AUDIT_S("ip", ip),
		AL_AUDIT_I("port", c->port),
		AL_AUDIT_S("via", c->explicit_proxy ? "proxy" : "transparent"),
		AL_AUDIT_S("verdict", verdict),
		AL_AUDIT_S("rule", rule_name(c->name[0] ? &c->name_verdict : &c->verdict)),
		AL_AUDIT_S("ip_rule", c->upstream.family ? rule_name(&c->verdict) : "-"),
		AL_AUDIT_S("reason", reason),
		AL_AUDIT_S("mode", c->mode ? c->mode : "-"),
	    },
	    9);
}

/* Refuses the connection: audited, reported, and ended (with a 403 for an explicit proxy's
 * client, a reset otherwise, so that the sandbox's program fails at once). */
static void conn_refuse(struct conn *c, const char *reason)
{
	char answer[256];
	int n;

	conn_audit(c, "deny", reason);
	proxy_violation(c->proxy, "net", "%s:%u %s", c->name[0] ? c->name : c->target, c->port,
			reason);
	if (c->explicit_proxy && c->phase <= PHASE_CONNECTING) {
		n = snprintf(answer, sizeof(answer),
			     "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\n"
			     "Content-Length: %zu\r\nConnection: close\r\n\r\nairlock: %s\n",
			     strlen(reason) + 10, reason);
		(void)send(c->cfd, answer, (size_t)MIN(n, (int)sizeof(answer) - 1),
			   MSG_DONTWAIT | MSG_NOSIGNAL);
		conn_close(c, false);
		return;
	}
	conn_close(c, true);
}

/* ---- connections ---- */

static int watch_add(struct netns_proxy *p, struct proxy_watch *w, uint32_t events)
{
	struct epoll_event ev = {.events = events, .data.ptr = w};

	return RET_NERRNO(epoll_ctl(p->epoll_fd, EPOLL_CTL_ADD, w->fd, &ev));
}

int proxy_watch_upstream(struct conn *c)
{
	return watch_add(c->proxy, &c->uw, EPOLLIN | EPOLLPRI | EPOLLOUT | EPOLLRDHUP | EPOLLET);
}

/* Pipes are kept: a connection that turns to bulk otherwise spends system calls making and
 * closing its pipe. */
int proxy_pipe_get(struct netns_proxy *p, struct proxy_pipe *ret)
{
	int n;

	if (p->n_pipes > 0) {
		*ret = p->pipes[--p->n_pipes];
		return 0;
	}
	if (pipe2(ret->fd, O_NONBLOCK | O_CLOEXEC) < 0)
		return -errno;
	if (p->n_big_pipes < PROXY_BIG_PIPES_MAX &&
	    fcntl(ret->fd[1], F_SETPIPE_SZ, PROXY_PIPE_BYTES) >= 0)
		p->n_big_pipes++;
	n = fcntl(ret->fd[1], F_GETPIPE_SZ);
	if (n <= 0) {
		ret->fd[0] = al_close(ret->fd[0]);
		ret->fd[1] = al_close(ret->fd[1]);
		return n < 0 ? -errno : -EIO;
	}
	ret->size = (size_t)n;
	ret->fill = 0;
	return 0;
}

void proxy_pipe_put(struct netns_proxy *p, struct proxy_pipe *pp)
{
	if (pp->fd[0] >= 0 && pp->fill == 0 && p->n_pipes < PROXY_PIPES_KEPT) {
		p->pipes[p->n_pipes++] = *pp;
		*pp = (struct proxy_pipe){.fd = {-EBADF, -EBADF}};
		return;
	}
	if (pp->fd[0] >= 0 && pp->size >= PROXY_PIPE_BYTES)
		p->n_big_pipes--;
	pp->fd[0] = al_close(pp->fd[0]);
	pp->fd[1] = al_close(pp->fd[1]);
}

static void conn_free(struct conn *c)
{
	c->proxy->n_big_rcvbufs -= c->big_rcvbuf;
	proxy_ssh_free(c);
	proxy_pg_free(c);
	c->flow = netns_http_flow_free(c->flow);
	c->h2 = netns_h2_free(c->h2);
	c->ctls = netns_tls_conn_free(c->ctls);
	c->utls = netns_tls_conn_free(c->utls);
	netns_buf_done(&c->cin);
	netns_buf_done(&c->uin);
	netns_buf_done(&c->to_u);
	netns_buf_done(&c->to_c);
	netns_buf_done(&c->sent_u);
	proxy_pipe_put(c->proxy, &c->cu.pipe);
	proxy_pipe_put(c->proxy, &c->uc.pipe);
	free(c);
}

/* Ends c. reset: with an RST, so that the peer sees a failure and not a clean end. The memory
 * stays while a lookup is under way, since the worker's answer names c. */
static void conn_close(struct conn *c, bool reset)
{
	const struct linger lg = {.l_onoff = 1, .l_linger = 0};

	if (c->closed)
		return;
	c->closed = true;
	if (c->ctls && !reset)
		netns_tls_close(c->ctls);
	if (c->utls && !reset)
		netns_tls_close(c->utls);
	if (reset) {
		(void)setsockopt(c->cfd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		if (c->ufd >= 0)
			(void)setsockopt(c->ufd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	}
	/* Closing removes them from the epoll set; events already fetched are skipped through
	 * c->closed (see serve()). */
	c->cfd = al_close(c->cfd);
	c->ufd = al_close(c->ufd);
	c->cw.fd = c->uw.fd = -EBADF;
	if (!c->lookup_pending)
		proxy_defer_free(c->proxy, c);
}

static int conn_new(struct netns_proxy *p, int fd, bool explicit_proxy, struct conn **ret)
{
	struct conn *c;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	*c = (struct conn){
	    .proxy = p,
	    .cfd = fd,
	    .ufd = -EBADF,
	    .explicit_proxy = explicit_proxy,
	    .phase = explicit_proxy ? PHASE_HEAD : PHASE_LOOKUP,
	    .cu.pipe.fd = {-EBADF, -EBADF},
	    .uc.pipe.fd = {-EBADF, -EBADF},
	    .cw = {.type = WATCH_CLIENT, .fd = fd},
	    .uw = {.type = WATCH_UPSTREAM, .fd = -EBADF},
	    .idle_deadline = proxy_now_msec() + p->idle_msec,
	};
	c->cw.conn = c->uw.conn = c;
	c->next = p->conns;
	if (p->conns)
		p->conns->prev = c;
	p->conns = c;
	p->n_conns++;
	*ret = c;
	return 0;
}

/* ---- upstream ---- */

static void set_nodelay(int fd)
{
	const int one = 1;

	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* Starts c's connect to c->upstream: 0 when it is under way, 1 when it is done, -errno after
 * closing c. */
static int conn_connect_start(struct conn *c)
{
	struct sockaddr_storage ss = {0};
	socklen_t len;
	int fd, r;

	if (c->upstream.family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(c->port);
		memcpy(&sin->sin_addr, c->upstream.addr, 4);
		len = sizeof(*sin);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(c->port);
		memcpy(&sin6->sin6_addr, c->upstream.addr, 16);
		len = sizeof(*sin6);
	}
	fd = socket(c->upstream.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		r = -errno;
		conn_refuse(c, "no upstream socket");
		return r;
	}
	c->ufd = c->uw.fd = fd;
	set_nodelay(fd);
	c->big_rcvbuf = c->proxy->n_big_rcvbufs < PROXY_BIG_RCVBUFS;
	c->proxy->n_big_rcvbufs += c->big_rcvbuf;
	/* Before connect(): the window scale is agreed in the handshake. */
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF,
			 &(int){c->big_rcvbuf ? PROXY_UPSTREAM_RCVBUF : PROXY_SANDBOX_SOCKBUF},
			 sizeof(int));
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &(int){PROXY_UPSTREAM_NOTSENT},
			 sizeof(int));
	r = RET_NERRNO(connect(fd, (struct sockaddr *)&ss, len));
	if (r < 0 && r != -EINPROGRESS) {
		conn_audit(c, "error", "upstream unreachable");
		conn_close(c, true);
		return r;
	}
	c->phase = PHASE_CONNECTING;
	if (proxy_watch_upstream(c) < 0) {
		conn_close(c, true);
		return -EIO;
	}
	return r == 0;
}

static void conn_connect(struct conn *c)
{
	if (conn_connect_start(c) > 0)
		conn_pump(c);
}

int proxy_connect_again(struct conn *c)
{
	/* The pump that called goes on to the phase CONNECTING; a connect already done says so
	 * with the event that watching the socket gives at once. */
	int r = conn_connect_start(c);

	return MIN(r, 0);
}

/* The addresses of airlock's own network namespace, where upstream sockets are made: a name
 * resolving to one of them would reach the host's own services (listening on a public address,
 * not only on loopback). Read once, at the start. */
static int list_host_addrs(struct netns_proxy *p)
{
	struct ifaddrs *ifa = NULL;
	size_t n = 0;

	if (getifaddrs(&ifa) < 0)
		return -errno;
	for (struct ifaddrs *i = ifa; i; i = i->ifa_next)
		n++;
	p->host_addrs = calloc(MAX(n, (size_t)1), sizeof(*p->host_addrs));
	if (!p->host_addrs) {
		freeifaddrs(ifa);
		return -ENOMEM;
	}
	for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
		struct netns_addr *a = &p->host_addrs[p->n_host_addrs];

		/* Loopback is special-use, opened only by a rule within it; the host's other
		 * addresses, special-use or not (private, ULA, test ranges: found by review, an
		 * IPv6 ULA of the host's was reached through a rule for its /126), only by a rule
		 * naming exactly that address. */
		if (i->ifa_addr && netns_addr_from_sockaddr(i->ifa_addr, a) &&
		    !streq_ptr(netns_addr_special(a->family, a->addr), "loopback"))
			p->n_host_addrs++;
	}
	freeifaddrs(ifa);
	return 0;
}

/* Whether a is one of the host's public addresses that v does not open: only a rule naming
 * exactly that address does, as a special range is opened only by a rule within it. */
static bool reaches_host(const struct netns_proxy *p, const struct netns_addr *a,
			 const struct netns_verdict *v)
{
	for (size_t i = 0; i < p->n_host_addrs; i++)
		if (netns_addr_equal(&p->host_addrs[i], a))
			return !(v->rule && v->rule->kind == POLICY_DEST_CIDR &&
				 v->rule->prefix_len == (a->family == AF_INET ? 32 : 128));
	return false;
}

/* Decides a (for c's name, or raw), then whether it is the host's own. */
static void decide_addr(struct conn *c, const struct netns_addr *a, struct netns_verdict *v)
{
	netns_decide_addr(c->proxy->o->policy, c->name[0] ? c->name : NULL, a->family, a->addr,
			  c->port, v);
	if (v->allow && reaches_host(c->proxy, a, v))
		*v = (struct netns_verdict){.reason = "an address of the host itself"};
	/* What a credential's host answers is searched for its values (un-swapped) only on the
	 * connections made by its name: by the address its name is pinned to, the real value a
	 * host echoes would reach the sandbox (found by review), so the address is refused. */
	else if (v->allow && !c->name[0] && netns_pinned_bound_name(c->proxy->o->policy, a))
		*v = (struct netns_verdict){
		    .reason = "the address of a credential's host: reach it by its name"};
}

/* The name's addresses are known: the first one the rules allow is connected to. An address of
 * special use (a name pointing at loopback or the metadata service: DNS rebinding) is refused
 * unless a rule names its range. */
static void conn_addresses(struct conn *c, const struct netns_addr *addrs, size_t n)
{
	struct netns_verdict first = {0}, v;

	for (size_t i = 0; i < n; i++) {
		decide_addr(c, &addrs[i], &v);
		if (v.allow) {
			c->upstream = addrs[i];
			c->verdict = v;
			conn_connect(c);
			return;
		}
		if (i == 0) {
			first = v;
			c->upstream = addrs[i];
		}
	}
	c->verdict = first;
	conn_refuse(c, first.reason ? first.reason : "no address");
}

/* Where c goes: a name (from a synthetic address or the explicit proxy's request) is decided
 * first by name, then by the address it resolves to; a raw address by the CIDR rules only. */
static void conn_route(struct conn *c)
{
	struct netns_proxy *p = c->proxy;
	struct netns_addr a;
	int r;

	if (!c->name[0]) {
		decide_addr(c, &c->upstream, &c->verdict);
		if (!c->verdict.allow) {
			conn_refuse(c, c->verdict.reason);
			return;
		}
		conn_connect(c);
		return;
	}
	netns_decide_name(p->o->policy, c->name, c->port, &c->name_verdict);
	c->verdict = c->name_verdict;
	if (!c->verdict.allow) {
		conn_refuse(c, c->verdict.reason);
		return;
	}
	/* A kept upstream may serve it: an explicit proxy's plain request at once; else once its
	 * first bytes say TLS or HTTP for this name (proxy_sniff()), nothing being connected until
	 * then. An explicit proxy's CONNECT is answered first. */
	if (c->absolute_form && !c->pool_tried && proxy_pool_take(c, false)) {
		proxy_start_plain_flow(c);
		return;
	}
	if (c->closed)
		return;
	if (!c->pool_tried && !c->absolute_form && proxy_pool_has(p, c->name, c->port)) {
		if (c->explicit_proxy && !proxy_answer_tunnel(c))
			return;
		c->phase = PHASE_SNIFF;
		return;
	}
	c->phase = PHASE_LOOKUP;
	if (netns_lookup_pinned(p->lookup, c->name, &a) >= 0) {
		conn_addresses(c, &a, 1);
		return;
	}
	r = netns_lookup_start(p->lookup, c->name, c);
	if (r < 0) {
		conn_refuse(c, "lookup queue full");
		return;
	}
	c->lookup_pending = true;
}

static void on_lookup(struct netns_proxy *p)
{
	struct netns_lookup_answer a;

	while (netns_lookup_take(p->lookup, &a) >= 0) {
		struct conn *c = a.cookie;

		c->lookup_pending = false;
		if (c->closed) {
			proxy_defer_free(p, c);
			continue;
		}
		if (a.error < 0) {
			conn_audit(c, "error",
				   a.error == -ENOENT ? "no such name" : "lookup failed");
			conn_close(c, true);
			continue;
		}
		conn_addresses(c, a.addrs, a.n);
	}
}

/* ---- accepting ---- */

/* A transparent connection: the address the sandbox asked for is the socket's own. A synthetic
 * address stands for the name the DNS responder gave it out for. */
static void accept_transparent(struct netns_proxy *p, struct conn *c)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	const char *name;

	if (getsockname(c->cfd, (struct sockaddr *)&sin, &len) < 0 || sin.sin_family != AF_INET) {
		conn_close(c, true);
		return;
	}
	c->port = ntohs(sin.sin_port);
	c->upstream.family = AF_INET;
	memcpy(c->upstream.addr, &sin.sin_addr, 4);
	(void)inet_ntop(AF_INET, &sin.sin_addr, c->target, sizeof(c->target));
	if (sin.sin_addr.s_addr == p->proxy_addr) {
		/* The proxy itself: its explicit port, or nothing. */
		if (c->port != NETNS_HTTP_PROXY_PORT) {
			conn_refuse(c, "the proxy's own address");
			return;
		}
		c->explicit_proxy = true;
		c->phase = PHASE_HEAD;
		conn_pump(c);
		return;
	}
	name = netns_synth_name(p->synth, c->upstream.addr);
	if (name) {
		(void)snprintf(c->name, sizeof(c->name), "%s", name);
		c->upstream = (struct netns_addr){0};
	} else if (netns_synth_is_range(c->upstream.addr)) {
		conn_refuse(c, "a synthetic address given out for no name");
		return;
	}
	conn_route(c);
}

static void on_listener(struct netns_proxy *p, struct proxy_watch *w)
{
	for (;;) {
		struct conn *c;
		int fd;

		fd = accept4(w->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE)
				log_debug("Out of file descriptors: connections wait");
			return;
		}
		if (p->n_conns >= PROXY_CONNS_MAX || conn_new(p, fd, false, &c) < 0) {
			const struct linger lg = {.l_onoff = 1, .l_linger = 0};

			(void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
			(void)al_close(fd);
			proxy_violation(p, "net", "too many connections");
			continue;
		}
		/* TCP_NODELAY comes from the listener. */
		if (watch_add(p, &c->cw, EPOLLIN | EPOLLPRI | EPOLLOUT | EPOLLRDHUP | EPOLLET) <
		    0) {
			conn_close(c, true);
			continue;
		}
		accept_transparent(p, c);
	}
}

/* ---- the pump: each phase's progress ---- */

/* Notes what an event says of a side, for the relay (which then reads only a side that may
 * have bytes) and for the connect (which then needs no system call to know it is done). */
static void conn_note(struct proxy_watch *w, uint32_t events)
{
	const uint32_t hup = EPOLLRDHUP | EPOLLHUP | EPOLLERR;
	struct conn *c = w->conn;
	bool client = w->type == WATCH_CLIENT;
	struct conn_events *e = client ? &c->cev : &c->uev;
	struct netns_tls_conn *tls = client ? c->ctls : c->utls;

	if (!client)
		c->u_writable |= (events & (EPOLLOUT | hup)) == EPOLLOUT;
	if (!(events & (EPOLLIN | EPOLLPRI | hup)))
		return;
	e->readable = true;
	e->read_on |= (events & (EPOLLPRI | hup)) != 0;
	if (tls)
		netns_tls_readable(tls, e->read_on);
}

static void conn_pump(struct conn *c)
{
	int r;

	/* A phase may move c on to the next one, which then runs at once. */
	for (;;) {
		enum conn_phase before = c->phase;

		if (c->closed)
			return;
		switch (c->phase) {
		case PHASE_HEAD:
			r = proxy_read_head(c);
			break;
		case PHASE_LOOKUP:
			/* Waiting for the worker; the sandbox's bytes stay in its socket. */
			return;
		case PHASE_CONNECTING:
			r = proxy_connected(c);
			break;
		case PHASE_SNIFF:
			r = proxy_sniff(c);
			break;
		case PHASE_SPLICE:
			r = proxy_splice(c);
			break;
		case PHASE_FLOW:
			r = proxy_flow(c);
			break;
		case PHASE_SSH:
			r = proxy_ssh(c);
			break;
		case PHASE_PG:
			r = proxy_pg(c);
			break;
		default:
			r = -EINVAL;
		}
		if (r < 0 || c->closed)
			return;
		if (c->phase == before)
			return;
	}
}

void proxy_pump(struct conn *c)
{
	conn_pump(c);
}

void proxy_enter_route(struct conn *c)
{
	conn_route(c);
}

void proxy_close(struct conn *c, bool reset)
{
	conn_close(c, reset);
}

void proxy_refuse(struct conn *c, const char *reason)
{
	conn_refuse(c, reason);
}

void proxy_audit(struct conn *c, const char *verdict, const char *reason)
{
	conn_audit(c, verdict, reason);
}

/* ---- sockets and the loop ---- */

static int open_listener(void *userdata)
{
	struct proxy_watch *w = userdata;
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(w->port)};
	const int one = 1;
	_cleanup_close_ int fd = -EBADF;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* IP_TRANSPARENT: with the AnyIP route, connections to any address are accepted here and
	 * answered from that address. */
	if (setsockopt(fd, SOL_IP, IP_TRANSPARENT, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0 ||
	    /* These and TCP_NODELAY are inherited by each accepted connection (see
	     * PROXY_SANDBOX_SOCKBUF). */
	    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &(int){PROXY_SANDBOX_SOCKBUF}, sizeof(int)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &(int){PROXY_SANDBOX_SOCKBUF}, sizeof(int)) < 0 ||
	    bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 || listen(fd, SOMAXCONN) < 0)
		return -errno;
	w->fd = TAKE_FD(fd);
	return 0;
}

static int open_dns(void *userdata)
{
	struct proxy_watch *w = userdata;
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(53)};
	_cleanup_close_ int fd = -EBADF;

	if (inet_pton(AF_INET, NETNS_PROXY_ADDR, &sin.sin_addr) != 1)
		return -EINVAL;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0)
		return -errno;
	w->fd = TAKE_FD(fd);
	return 0;
}

static bool port_listed(const struct netns_proxy *p, uint16_t port)
{
	for (size_t i = 0; i < p->n_listeners; i++)
		if (p->listeners[i].port == port)
			return true;
	return false;
}

static int add_port(struct netns_proxy *p, uint16_t port)
{
	if (port_listed(p, port))
		return 0;
	if (p->n_listeners >= PROXY_LISTENERS_MAX)
		return -E2BIG;
	p->ports[p->n_listeners] = port;
	p->listeners[p->n_listeners++] =
	    (struct proxy_watch){.type = WATCH_LISTENER, .port = port, .fd = -EBADF};
	return 0;
}

/* One listener per port an allow rule names (80 and 443 for a rule without one, and for
 * default allow), plus the explicit proxy's. */
static int list_ports(struct netns_proxy *p)
{
	const struct policy *pol = p->o->policy;
	int r = 0;

	if (pol->network.default_action == POLICY_NET_ALLOW) {
		r = add_port(p, 80);
		if (r >= 0)
			r = add_port(p, 443);
	}
	for (size_t i = 0; r >= 0 && i < pol->network.n_rules; i++) {
		const struct policy_net_rule *rule = &pol->network.rules[i];

		if (rule->action != POLICY_NET_ALLOW)
			continue;
		if (rule->port) {
			r = add_port(p, rule->port);
		} else {
			r = add_port(p, 80);
			if (r >= 0)
				r = add_port(p, 443);
		}
	}
	if (r >= 0)
		r = add_port(p, NETNS_HTTP_PROXY_PORT);
	return r;
}

/* The surrogates the sandbox holds (credentials given by env_var or file and not exposed), which
 * the flows look for. */
static int list_surrogates(struct netns_proxy *p)
{
	const struct policy *pol = p->o->policy;
	size_t n = 0;

	p->surrogates = calloc(pol->n_credentials + 1, sizeof(*p->surrogates));
	p->surrogate_names = calloc(pol->n_credentials + 1, sizeof(*p->surrogate_names));
	if (!p->surrogates || !p->surrogate_names)
		return -ENOMEM;
	for (size_t i = 0; i < pol->n_credentials; i++) {
		const struct policy_credential *cred = &pol->credentials[i];
		const char *s;

		if (cred->injection == POLICY_INJECTION_SIDECAR)
			p->has_sidecar = true;
		s = broker_client_surrogate(p->o->broker, cred->name);
		if (!s || cred->expose)
			continue;
		p->surrogates[n] = s;
		p->surrogate_names[n++] = cred->name;
	}
	return 0;
}

int netns_proxy_new(const struct netns_proxy_options *o, struct netns_proxy **ret,
		    struct al_error *err)
{
	_cleanup_(netns_proxy_freep) struct netns_proxy *p = NULL;
	int r;

	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	*p = (struct netns_proxy){
	    .o = o,
	    .epoll_fd = -EBADF,
	    .audit_ms = proxy_now_msec(),
	    .audit_tokens = (uint64_t)AUDIT_BURST * 1000,
	    .idle_msec =
		(o->policy->network.idle_timeout_usec ? o->policy->network.idle_timeout_usec
						      : POLICY_IDLE_TIMEOUT_DEFAULT_USEC) /
		1000,
	};
	p->dns = (struct proxy_watch){.type = WATCH_DNS, .fd = -EBADF};
	p->agent = (struct proxy_watch){.type = WATCH_AGENT_LISTEN, .fd = -EBADF};
	p->n_ssh_keys = policy_ssh_keys(o->policy);
	if (inet_pton(AF_INET, NETNS_PROXY_ADDR, &p->proxy_addr) != 1)
		return -EINVAL;
	r = proxy_send_configure(p);
	if (r < 0)
		return al_error_set(err, r, "AIRLOCK_NET_SEND must be \"batched\" or \"direct\"");
	r = list_ports(p);
	if (r < 0)
		return al_error_set_errno(err, r,
					  "network: too many ports to listen on (at most %d)",
					  PROXY_LISTENERS_MAX);
	r = netns_synth_new(&p->synth);
	if (r < 0)
		return r;
	r = list_host_addrs(p);
	if (r < 0)
		return al_error_set_errno(err, r, "proxy: cannot list the host's addresses");
	if (o->broker) {
		r = list_surrogates(p);
		if (r < 0)
			return r;
		for (size_t i = 0; i < o->policy->n_credentials && !p->tls; i++)
			if (o->policy->credentials[i].hosts.n > 0) {
				r = netns_tls_new(o->upstream_ca_file, &p->tls, err);
				if (r < 0)
					return r;
			}
	}
	*ret = TAKE_PTR(p);
	return 0;
}

int netns_proxy_listen(struct netns_proxy *p, int proxy_netns, struct al_error *err)
{
	int r;

	for (size_t i = 0; i < p->n_listeners; i++) {
		r = netns_run_in(proxy_netns, open_listener, &p->listeners[i]);
		if (r < 0)
			return al_error_set_errno(err, r, "proxy: cannot listen on port %u",
						  p->listeners[i].port);
	}
	r = netns_run_in(proxy_netns, open_dns, &p->dns);
	if (r < 0)
		return al_error_set_errno(err, r, "proxy: cannot open the DNS responder's socket");
	return 0;
}

struct netns_proxy *netns_proxy_free(struct netns_proxy *p)
{
	if (!p)
		return NULL;
	/* No answer can name a connection once the worker is stopped. */
	p->lookup = netns_lookup_free(p->lookup);
	free(p->host_addrs);
	while (p->n_pipes > 0) {
		p->n_pipes--;
		(void)al_close(p->pipes[p->n_pipes].fd[0]);
		(void)al_close(p->pipes[p->n_pipes].fd[1]);
	}
	while (p->conns) {
		struct conn *c = p->conns;

		c->lookup_pending = false;
		if (c->closed)
			proxy_defer_free(p, c);
		else
			conn_close(c, true);
	}
	proxy_free_deferred(p);
	proxy_pool_free(p);
	proxy_agents_free(p);
	proxy_send_free(p);
	for (size_t i = 0; i < p->n_listeners; i++)
		(void)al_close(p->listeners[i].fd);
	(void)al_close(p->dns.fd);
	(void)al_close(p->epoll_fd);
	p->synth = netns_synth_free(p->synth);
	p->tls = netns_tls_free(p->tls);
	free(p->surrogates);
	free(p->surrogate_names);
	free(p);
	return NULL;
}

const char *netns_proxy_ca_pem(const struct netns_proxy *p)
{
	return p->tls ? netns_tls_ca_pem(p->tls) : NULL;
}

const uint16_t *netns_proxy_ports(const struct netns_proxy *p, size_t *ret_n)
{
	*ret_n = p->n_listeners;
	return p->ports;
}

size_t netns_proxy_fds(const struct netns_proxy *p, int *fds, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < p->n_listeners && k < n; i++)
		fds[k++] = p->listeners[i].fd;
	if (k < n)
		fds[k++] = p->dns.fd;
	if (k < n && p->agent.fd >= 0)
		fds[k++] = p->agent.fd;
	return k;
}

int netns_proxy_adopt_agent(struct netns_proxy *p, int fd)
{
	if (p->n_ssh_keys == 0 || p->agent.fd >= 0) {
		(void)al_close(fd);
		return -EBADMSG;
	}
	p->agent.fd = fd;
	return 0;
}

size_t netns_proxy_socket_count(const struct netns_proxy *p)
{
	return p->n_listeners + 1;
}

int netns_proxy_adopt(struct netns_proxy *p, int *fds, size_t n)
{
	if (n != netns_proxy_socket_count(p)) {
		for (size_t i = 0; i < n; i++)
			fds[i] = al_close(fds[i]);
		return -EBADMSG;
	}
	for (size_t i = 0; i < p->n_listeners; i++) {
		(void)al_close(p->listeners[i].fd);
		p->listeners[i].fd = TAKE_FD(fds[i]);
	}
	(void)al_close(p->dns.fd);
	p->dns.fd = TAKE_FD(fds[n - 1]);
	return 0;
}

/* Unlinks c; it is freed after the batch of events, as a later event of the batch may still
 * point at it (and finds it closed). */
void proxy_defer_free(struct netns_proxy *p, struct conn *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		p->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	p->n_conns--;
	c->prev = NULL;
	c->next = p->dead;
	p->dead = c;
}

void proxy_free_deferred(struct netns_proxy *p)
{
	while (p->dead) {
		struct conn *c = p->dead;

		p->dead = c->next;
		conn_free(c);
	}
}

static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* Ends the connections whose sandbox side kept them idle past their deadline (slow-loris: a
 * sandbox that opens connections and sends nothing, or a head a byte at a time, to hold the
 * proxy's slots). */
static void sweep_idle(struct netns_proxy *p)
{
	uint64_t now = proxy_now_msec();

	if (now - p->idle_swept < PROXY_IDLE_SWEEP_MSEC)
		return;
	p->idle_swept = now;
	proxy_pool_expire(p, now);
	/* A connection closed here goes to the dead list through its next: the next is taken
	 * first (found by the red team: the sweep ended at the first connection it closed). */
	for (struct conn *c = p->conns, *next; c; c = next) {
		next = c->next;
		if (c->closed || !c->idle_deadline || now < c->idle_deadline)
			continue;
		conn_audit(c, "error", "idle: no request within network.idle_timeout");
		conn_close(c, true);
	}
}

/* The connections whose request line was waited for long enough: what came is taken for another
 * protocol (proxy_sniff()). */
static void sniff_over(struct netns_proxy *p)
{
	uint64_t now = proxy_now_msec();

	if (!p->sniff_due || now < p->sniff_due)
		return;
	p->sniff_due = 0;
	for (struct conn *c = p->conns, *next; c; c = next) {
		next = c->next;
		if (c->closed || c->phase != PHASE_SNIFF || !c->sniff_line_until)
			continue;
		if (now >= c->sniff_line_until)
			conn_pump(c);
		else
			proxy_sniff_due(p, c->sniff_line_until);
	}
}

/* How long the loop may sleep: until the next sweep while connections (or kept upstreams) are
 * open, or the earliest sniff deadline before it; for ever without any. */
static int loop_timeout(const struct netns_proxy *p)
{
	const int forever = -1; /* epoll_wait()'s */
	uint64_t now;

	if (!p->conns && !p->n_pool)
		return forever;
	if (!p->sniff_due)
		return PROXY_IDLE_SWEEP_MSEC;
	now = proxy_now_msec();
	return (int)MIN(p->sniff_due > now ? p->sniff_due - now : 0,
			(uint64_t)PROXY_IDLE_SWEEP_MSEC);
}

int netns_proxy_serve(struct netns_proxy *p, int stop_fd)
{
	struct proxy_watch stop = {.type = WATCH_STOP, .fd = stop_fd};
	struct proxy_watch lookup = {.type = WATCH_LOOKUP};
	struct epoll_event evs[64];
	int n, r;

	raise_nofile();
	r = netns_lookup_new(p->o->policy, &p->lookup);
	if (r < 0)
		return r;
	lookup.fd = netns_lookup_fd(p->lookup);
	p->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (p->epoll_fd < 0)
		return -errno;
	r = proxy_send_start(p);
	if (r < 0)
		return r;
	for (size_t i = 0; i < p->n_listeners; i++) {
		r = watch_add(p, &p->listeners[i], EPOLLIN);
		if (r < 0)
			return r;
	}
	r = watch_add(p, &p->dns, EPOLLIN);
	if (r >= 0)
		r = watch_add(p, &lookup, EPOLLIN);
	if (r >= 0 && stop_fd >= 0)
		r = watch_add(p, &stop, EPOLLIN);
	if (r >= 0 && p->agent.fd >= 0)
		r = watch_add(p, &p->agent, EPOLLIN);
	if (r < 0)
		return r;
	for (;;) {
		n = epoll_wait(p->epoll_fd, evs, ELEMENTSOF(evs), loop_timeout(p));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (int i = 0; i < n; i++) {
			struct proxy_watch *w = evs[i].data.ptr;

			switch (w->type) {
			case WATCH_STOP:
				return 0;
			case WATCH_LISTENER:
				on_listener(p, w);
				break;
			case WATCH_DNS:
				proxy_dns_serve(p);
				break;
			case WATCH_LOOKUP:
				on_lookup(p);
				break;
			case WATCH_CLIENT:
			case WATCH_UPSTREAM:
				conn_note(w, evs[i].events);
				conn_pump(w->conn);
				break;
			case WATCH_AGENT_LISTEN:
				proxy_agent_accept(p);
				break;
			case WATCH_AGENT:
				proxy_agent_handle(w->agent, evs[i].events);
				break;
			}
		}
		proxy_send_turn(p);
		sniff_over(p);
		sweep_idle(p);
		proxy_send_turn(p);
		proxy_free_deferred(p);
	}
}
