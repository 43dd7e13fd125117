#define LOG_MODULE "netns"

/* SSH through the egress proxy, for the destination-bound agent (issue 19):
 *
 *   - the watch (PHASE_SSH): an SSH connection is copied, not spliced, until both sides' NEWKEYS,
 *     and read as it passes (ssh.c) for the server's host key, which the broker is told with the
 *     connection's destination ("host:port"); then it is spliced like any other;
 *   - the agent: the sandbox's SSH_AUTH_SOCK is a socket the sandbox's first process made in its
 *     root and handed here. Each request goes to the broker, which answers it: the proxy keeps
 *     only the session-binds each connection made (sent along with every later request, where
 *     the broker verifies them again) and reports refusals as credential violations.
 *
 * The proxy holds no key: a signature is the broker's answer. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "broker/client.h"
#include "common/audit.h"
#include "common/fd-util.h"
#include "common/log.h"
#include "common/wire-util.h"
#include "netns/proxy-internal.h"
#include "netns/ssh-internal.h"

#define SSH_COPY_CHUNK (16 * 1024) /* bytes copied at a time while the watch reads them */
#define AGENTS_MAX 64		   /* agent connections at once */
#define AGENT_MSG_MAX (64 * 1024)  /* OpenSSH's requests are a few KiB */
#define AGENT_OUT_MAX (64 * 1024)  /* answers a connection holds unread before it is not read */
#define AGENT_BINDS_MAX 16	   /* session-binds one connection keeps (OpenSSH's own limit) */
#define AGENT_EXTENSION 27

struct proxy_ssh {
	struct netns_ssh_watch watch;
	bool reported; /* the host key went to the broker */
};

struct proxy_agent {
	struct netns_proxy *proxy;
	struct proxy_agent *prev, *next;
	struct proxy_watch w;
	struct netns_buf in, out;
	struct netns_buf binds; /* the accepted session-binds, framed as they came */
	size_t n_binds;
};

/* ---- the watch ---- */

bool proxy_ssh_wanted(const struct netns_proxy *p)
{
	return p->n_ssh_keys > 0;
}

void proxy_ssh_start(struct conn *c)
{
	c->ssh = calloc(1, sizeof(*c->ssh));
	if (!c->ssh) {
		proxy_audit(c, "error", "out of memory");
		proxy_close(c, true);
		return;
	}
	c->mode = "ssh";
	proxy_audit(c, "allow", c->verdict.reason ? c->verdict.reason : "allowed");
	c->phase = PHASE_SSH;
	c->idle_deadline = 0;
}

void proxy_ssh_free(struct conn *c)
{
	if (!c->ssh)
		return;
	netns_ssh_watch_done(&c->ssh->watch);
	free(c->ssh);
	c->ssh = NULL;
}

static void report_hostkey(struct conn *c)
{
	struct netns_proxy *p = c->proxy;
	struct al_error err = {0};
	const uint8_t *key;
	char dest[NETNS_DNS_NAME_MAX + 16];
	size_t len;
	int r;

	key = netns_ssh_hostkey(&c->ssh->watch, &len);
	if (!key || c->ssh->reported)
		return;
	c->ssh->reported = true;
	proxy_destination(c, dest, sizeof(dest));
	r = broker_client_ssh_hostkey(p->o->broker, dest, key, len, &err);
	if (r < 0)
		log_debug("SSH host key of %s not kept: %s", dest, err.msg);
	if (proxy_audit_admit(p))
		(void)al_audit_event(p->o->audit, "credential",
				     (const struct al_audit_field[]){
					 AL_AUDIT_S("action", "ssh-hostkey"),
					 AL_AUDIT_S("destination", dest),
					 AL_AUDIT_S("verdict", r < 0 ? "error" : "seen"),
				     },
				     3);
}

/* Copies what one side sent to the other, the watch reading it; *progress when bytes moved. */
static int copy_side(struct conn *c, bool from_server, bool *progress)
{
	int src = from_server ? c->ufd : c->cfd, dst = from_server ? c->cfd : c->ufd;
	struct netns_buf *b = from_server ? &c->to_c : &c->to_u;
	bool *eof = from_server ? &c->u_eof : &c->c_eof;
	uint8_t buf[SSH_COPY_CHUNK];
	struct al_error err = {0};
	ssize_t n;
	int r;

	if (!*eof && netns_buf_len(b) == 0) {
		n = recv(src, buf, sizeof(buf), MSG_DONTWAIT);
		if (n > 0) {
			/* A watch that failed (not SSH, or a key exchange it does not know) reads
			 * nothing more: the connection goes on, but its host key signs nothing. */
			if (netns_ssh_feed(&c->ssh->watch, from_server, buf, (size_t)n, &err) < 0)
				log_debug("SSH watch: %s", err.msg);
			r = netns_buf_append(b, buf, (size_t)n, SSH_COPY_CHUNK);
			if (r < 0)
				return r;
			*progress = true;
		} else if (n == 0) {
			*eof = true;
			*progress = true;
		} else if (errno != EAGAIN && errno != EINTR) {
			return -errno;
		}
	}
	if (netns_buf_len(b) > 0) {
		n = send(dst, netns_buf_head(b), netns_buf_len(b), MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n > 0) {
			netns_buf_consume(b, (size_t)n);
			*progress = true;
		} else if (n < 0 && errno != EAGAIN && errno != EINTR) {
			return -errno;
		}
	}
	return 0;
}

static bool watch_over(const struct netns_ssh_watch *w)
{
	return w->error || (w->client.state == NETNS_SSH_DONE && w->server.state == NETNS_SSH_DONE);
}

int proxy_ssh(struct conn *c)
{
	bool progress;
	int r;

	do {
		progress = false;
		r = copy_side(c, false, &progress);
		if (r >= 0)
			r = copy_side(c, true, &progress);
		if (r < 0) {
			proxy_close(c, true);
			return r;
		}
		report_hostkey(c);
	} while (progress && !watch_over(&c->ssh->watch) && !c->c_eof && !c->u_eof);
	/* Once the watch has what it reads (or an end came), the rest is spliced: what was read
	 * and not yet sent goes first. */
	if ((watch_over(&c->ssh->watch) || c->c_eof || c->u_eof) && netns_buf_len(&c->to_u) == 0 &&
	    netns_buf_len(&c->to_c) == 0) {
		proxy_ssh_free(c);
		return proxy_start_splice(c, "ssh");
	}
	return 0;
}

/* ---- the agent ---- */

static void agent_free(struct proxy_agent *a)
{
	struct netns_proxy *p = a->proxy;

	if (a->prev)
		a->prev->next = a->next;
	else
		p->agents = a->next;
	if (a->next)
		a->next->prev = a->prev;
	p->n_agents--;
	(void)al_close(a->w.fd);
	netns_buf_done(&a->in);
	netns_buf_done(&a->out);
	netns_buf_done(&a->binds);
	free(a);
}

/* Read while there is room for what it asks: a client that does not read its answers is not
 * read either (the proxy's memory is not the sandbox's cgroup's). */
static bool agent_may_read(const struct proxy_agent *a)
{
	return netns_buf_len(&a->out) < AGENT_OUT_MAX && netns_buf_len(&a->in) < AGENT_MSG_MAX + 4;
}

static void agent_events(struct proxy_agent *a)
{
	struct epoll_event ev = {.events = (agent_may_read(a) ? EPOLLIN | EPOLLRDHUP : 0) |
					   (netns_buf_len(&a->out) ? EPOLLOUT : 0),
				 .data.ptr = &a->w};

	(void)epoll_ctl(a->proxy->epoll_fd, EPOLL_CTL_MOD, a->w.fd, &ev);
}

static bool is_session_bind(const uint8_t *body, size_t n)
{
	struct al_wire c = {body, n}, name;
	uint8_t type;

	return al_wire_take_u8(&c, &type) && type == AGENT_EXTENSION &&
	       al_wire_take_string(&c, &name) && al_wire_is(&name, "session-bind@openssh.com");
}

static void agent_audit(struct netns_proxy *p, const struct broker_ssh_verdict *v)
{
	struct al_audit_field f[5];
	size_t n = 0;
	bool commit = streq(v->action, "ssh-sign-commit");

	f[n++] = AL_AUDIT_S("action", v->action);
	f[n++] = AL_AUDIT_S("verdict", v->granted ? "granted" : "refused");
	if (v->credential[0])
		f[n++] = AL_AUDIT_S("credential", v->credential);
	if (v->destination[0])
		f[n++] = AL_AUDIT_S("destination", v->destination);
	if (v->reason[0])
		f[n++] = AL_AUDIT_S("reason", v->reason);
	if (proxy_audit_admit(p))
		(void)al_audit_event(p->o->audit, "credential", f, n);
	/* A signature refused is a credential violation, naming the key and the host. */
	if (!v->granted && strncmp(v->action, "ssh-sign", 8) == 0)
		proxy_violation(p, "credential", "ssh key %s for %s: %s",
				v->credential[0] ? v->credential : "(none)",
				commit		    ? "a git commit"
				: v->destination[0] ? v->destination
						    : "an unknown host",
				v->reason);
}

/* A request that is not one: the connection ends, audited and reported. */
static void agent_malformed(struct netns_proxy *p, const char *why)
{
	struct broker_ssh_verdict v = {.action = "ssh-other"};

	(void)snprintf(v.reason, sizeof(v.reason), "malformed: %s", why);
	agent_audit(p, &v);
	proxy_violation(p, "credential", "ssh agent: %s", v.reason);
}

/* One whole request (frame: its length and body): the broker answers it. */
static int agent_request(struct proxy_agent *a, const uint8_t *frame, size_t n)
{
	struct netns_proxy *p = a->proxy;
	_cleanup_(broker_secret_freep) struct broker_secret *answer = NULL;
	struct broker_ssh_verdict v;
	struct netns_buf all = {0};
	struct al_error err = {0};
	uint8_t len[4];
	bool bind = is_session_bind(frame + 4, n - 4);
	int r;

	r = netns_buf_append(&all, netns_buf_head(&a->binds), netns_buf_len(&a->binds), SIZE_MAX);
	if (r >= 0)
		r = netns_buf_append(&all, frame, n, SIZE_MAX);
	if (r >= 0)
		r = broker_client_ssh_agent(p->o->broker, netns_buf_head(&all), netns_buf_len(&all),
					    &answer, &v, &err);
	netns_buf_done(&all);
	if (r < 0) {
		log_debug("SSH agent request refused by the broker: %s", err.msg);
		agent_malformed(p, err.msg[0] ? err.msg : "the broker refused the request");
		return r;
	}
	agent_audit(p, &v);
	if (bind && v.granted) {
		if (a->n_binds >= AGENT_BINDS_MAX)
			return -E2BIG;
		r = netns_buf_append(&a->binds, frame, n, SIZE_MAX);
		if (r < 0)
			return r;
		a->n_binds++;
	}
	al_wire_put_u32(len, (uint32_t)answer->len);
	r = netns_buf_append(&a->out, len, sizeof(len), SIZE_MAX);
	if (r >= 0)
		r = netns_buf_append(&a->out, answer->data, answer->len, SIZE_MAX);
	return r;
}

/* Answers the whole requests read, while there is room for the answers. */
static int agent_process(struct proxy_agent *a)
{
	int r;

	while (netns_buf_len(&a->out) < AGENT_OUT_MAX) {
		const uint8_t *h = netns_buf_head(&a->in);
		size_t have = netns_buf_len(&a->in), len;

		if (have < 4)
			return 0;
		len = (size_t)h[0] << 24 | (size_t)h[1] << 16 | (size_t)h[2] << 8 | h[3];
		if (len == 0 || len > AGENT_MSG_MAX) {
			agent_malformed(a->proxy,
					len ? "a message over 64 KiB" : "an empty message");
			return -EMSGSIZE;
		}
		if (have < 4 + len)
			return 0;
		r = agent_request(a, h, 4 + len);
		if (r < 0)
			return r;
		netns_buf_consume(&a->in, 4 + len);
	}
	return 0;
}

static int agent_read(struct proxy_agent *a)
{
	uint8_t buf[16 * 1024];
	ssize_t n;
	int r;

	while (agent_may_read(a)) {
		n = recv(a->w.fd, buf, MIN(sizeof(buf), AGENT_MSG_MAX + 4 - netns_buf_len(&a->in)),
			 MSG_DONTWAIT);
		if (n == 0)
			return -ECONNRESET;
		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -errno;
		r = netns_buf_append(&a->in, buf, (size_t)n, AGENT_MSG_MAX + 4);
		if (r >= 0)
			r = agent_process(a);
		if (r < 0)
			return r;
	}
	return 0;
}

static int agent_write(struct proxy_agent *a)
{
	while (netns_buf_len(&a->out) > 0) {
		ssize_t n = send(a->w.fd, netns_buf_head(&a->out), netns_buf_len(&a->out),
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -errno;
		netns_buf_consume(&a->out, (size_t)n);
	}
	return 0;
}

void proxy_agent_handle(struct proxy_agent *a, uint32_t events)
{
	int r = 0;

	if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
		r = agent_read(a);
	if (r >= 0)
		r = agent_write(a);
	/* Room made for answers: the requests waiting are answered, then sent. */
	if (r >= 0)
		r = agent_process(a);
	if (r >= 0)
		r = agent_write(a);
	if (r < 0) {
		agent_free(a);
		return;
	}
	agent_events(a);
}

void proxy_agent_accept(struct netns_proxy *p)
{
	for (;;) {
		struct proxy_agent *a;
		struct epoll_event ev;
		int fd = accept4(p->agent.fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

		if (fd < 0)
			return;
		if (p->n_agents >= AGENTS_MAX || !(a = calloc(1, sizeof(*a)))) {
			(void)al_close(fd);
			continue;
		}
		a->proxy = p;
		a->w = (struct proxy_watch){.type = WATCH_AGENT, .fd = fd, .agent = a};
		ev = (struct epoll_event){.events = EPOLLIN | EPOLLRDHUP, .data.ptr = &a->w};
		if (epoll_ctl(p->epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0) {
			(void)al_close(fd);
			free(a);
			continue;
		}
		a->next = p->agents;
		if (p->agents)
			p->agents->prev = a;
		p->agents = a;
		p->n_agents++;
	}
}

void proxy_agents_free(struct netns_proxy *p)
{
	while (p->agents)
		agent_free(p->agents);
	p->agent.fd = al_close(p->agent.fd);
}
