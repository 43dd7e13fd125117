#define LOG_MODULE "netns"

/* Upstream connections kept for the next connection (proxy-internal.h): an intercepted HTTP/1.1
 * connection's upstream side, TLS and all, when the sandbox's side ends at a message boundary.
 * The next sandbox connection to the same name and port, once its ClientHello is read, gets it
 * instead of a TCP connect and a TLS handshake of its own: what a browser or an HTTP client's
 * pool does, kept by the proxy since the sandbox's clients are mostly one connection per process
 * (curl, a script's one request).
 *
 * What keeps one connection's bytes from another's:
 * - only a connection whose every request was answered in full, each answer framed by its length
 *   or chunks, none of them told to close, is kept (netns_http_flow_upstream_reusable()), with
 *   nothing read and not taken, nothing held by OpenSSL, nothing unsent;
 * - a kept connection is read once more before it is given out: anything it says while kept (an
 *   answer no request asked for, its end, a reset) and it is closed instead;
 * - it is kept PROXY_POOL_IDLE_MSEC at most, under the idle time after which servers end
 *   keep-alive connections (2 s for gunicorn, 5 s for Apache, Node.js and uvicorn, 60-75 s for
 *   nginx and the cloud's load balancers), so that a server's close seldom crosses the next
 *   request; one that does makes the proxy send idempotent requests again on a new connection
 *   (proxy-relay.c, kept_ended()), and ends any other request without an answer, as it would
 *   for a client that kept its own connection.
 * Nothing of the sandbox reaches a kept connection: the request a sandbox sends after its own
 * Connection: close is dropped (http-flow.c), and the sandbox never learns which connection its
 * requests took. */

#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "common/fd-util.h"
#include "common/log.h"
#include "netns/proxy-internal.h"

static void pooled_close(struct netns_proxy *p, struct proxy_pooled *e)
{
	if (e->tls)
		netns_tls_close(e->tls);
	e->tls = netns_tls_conn_free(e->tls);
	e->fd = al_close(e->fd);
	p->n_big_rcvbufs -= e->big_rcvbuf;
}

static void pool_remove(struct netns_proxy *p, size_t i)
{
	p->pool[i] = p->pool[--p->n_pool];
}

bool proxy_pool_put(struct conn *c)
{
	struct netns_proxy *p = c->proxy;
	struct proxy_pooled *e;

	if (!c->flow || c->h2 || c->failed || !c->u_ready || c->u_eof || c->u_shut || !c->name[0] ||
	    netns_buf_len(&c->uin) > 0 || proxy_send_waiting(c, false) > 0 || c->cu.pipe.fill > 0 ||
	    (c->utls && netns_tls_pending(c->utls)) || !netns_http_flow_upstream_reusable(c->flow))
		return false;
	/* Its events named c, which is ending. */
	if (epoll_ctl(p->epoll_fd, EPOLL_CTL_DEL, c->ufd, NULL) < 0)
		return false;
	if (p->n_pool == PROXY_POOL_MAX) {
		size_t oldest = 0;

		for (size_t i = 1; i < p->n_pool; i++)
			if (p->pool[i].since < p->pool[oldest].since)
				oldest = i;
		pooled_close(p, &p->pool[oldest]);
		pool_remove(p, oldest);
	}
	e = &p->pool[p->n_pool++];
	*e = (struct proxy_pooled){
	    .port = c->port,
	    .offered_h2 = c->u_offered_h2,
	    .big_rcvbuf = c->big_rcvbuf,
	    .fd = c->ufd,
	    .tls = c->utls,
	    .upstream = c->upstream,
	    .verdict = c->verdict,
	    .since = proxy_now_msec(),
	};
	memcpy(e->name, c->name, sizeof(e->name));
	c->big_rcvbuf = false;
	c->utls = NULL;
	c->ufd = c->uw.fd = -EBADF;
	return true;
}

/* Whether e may serve c: the same name and port, TLS or plain as c, and an h2 offer to the
 * upstream when c's sandbox offers h2 (the upstream chose HTTP/1.1 knowing it could have had
 * h2). */
static bool pooled_fits(const struct proxy_pooled *e, const char *name, uint16_t port, bool tls,
			bool h2)
{
	return e->port == port && streq(e->name, name) && (e->tls != NULL) == tls &&
	       (!h2 || e->offered_h2);
}

bool proxy_pool_has(const struct netns_proxy *p, const char *name, uint16_t port)
{
	for (size_t i = 0; i < p->n_pool; i++)
		if (p->pool[i].port == port && streq(p->pool[i].name, name))
			return true;
	return false;
}

/* Whether a kept connection said nothing while it was kept: a read finds no byte and no end. */
static bool pooled_quiet(struct proxy_pooled *e)
{
	uint8_t b[64];
	ssize_t n;

	if (!e->tls)
		return recv(e->fd, b, sizeof(b), MSG_DONTWAIT) < 0 && errno == EAGAIN;
	netns_tls_readable(e->tls, false);
	n = netns_tls_read(e->tls, b, sizeof(b));
	explicit_bzero(b, sizeof(b));
	return n == -EAGAIN;
}

bool proxy_pool_take(struct conn *c, bool tls)
{
	struct netns_proxy *p = c->proxy;
	uint64_t now = proxy_now_msec();

	/* The newest first: the likeliest to be alive. */
	for (size_t i = p->n_pool; i-- > 0;) {
		struct proxy_pooled e = p->pool[i];

		if (!pooled_fits(&e, c->name, c->port, tls, c->hello_h2))
			continue;
		pool_remove(p, i);
		if (now - e.since > PROXY_POOL_IDLE_MSEC || !pooled_quiet(&e)) {
			pooled_close(p, &e);
			continue;
		}
		c->ufd = c->uw.fd = e.fd;
		c->utls = e.tls;
		c->u_offered_h2 = e.offered_h2;
		c->big_rcvbuf = e.big_rcvbuf;
		c->upstream = e.upstream;
		c->verdict = e.verdict;
		c->u_kept = true;
		if (proxy_watch_upstream(c) < 0) {
			/* c has it now, and closes it. */
			proxy_close(c, true);
			return false;
		}
		return true;
	}
	return false;
}

void proxy_pool_expire(struct netns_proxy *p, uint64_t now)
{
	for (size_t i = p->n_pool; i-- > 0;)
		if (now - p->pool[i].since > PROXY_POOL_IDLE_MSEC) {
			pooled_close(p, &p->pool[i]);
			pool_remove(p, i);
		}
}

void proxy_pool_free(struct netns_proxy *p)
{
	while (p->n_pool > 0)
		pooled_close(p, &p->pool[--p->n_pool]);
}
