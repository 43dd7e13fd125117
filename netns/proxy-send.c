/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The proxy's sends, batched per turn of its loop.
 *
 * A send to a peer that sleeps in epoll wakes it, and the kernel (preemption at the return to
 * user mode, as with CONFIG_PREEMPT_NONE, or a wake-up on the sender's CPU) often runs the
 * woken task before the sender's next system call. Sending each answer as it is made then lets
 * the server and the client take one request at a time: on 2 CPUs shared by a client, a server
 * and the proxy, nginx took 2 requests per epoll_wait() through the proxy against 30 direct,
 * and the proxy was preempted about once per request; batched, nginx takes 17 (docs/BENCHMARKS.md).
 *
 * So the relay and the HTTP flow leave what they would send to a plain socket where it already
 * waits (a connection's to_c or to_u), or with TLS have OpenSSL's records of it queued in its
 * connection (netns_tls_queue()), and queue the connection here (proxy_send_later()). At
 * the end of the loop's turn every queued side is sent with one io_uring_enter(): one return to
 * user mode for all of them. Each send has MSG_DONTWAIT, so it is done (or says EAGAIN) within
 * that call; its result is applied to the buffer as a send()'s would be, and each connection
 * that sent something, or failed, is pumped again, which may queue more (a next turn within the
 * same one). Bytes leave their buffer only once they are sent, and every "all sent" condition
 * (the end of a response, a kept upstream, a shutdown) counts what is queued too
 * (proxy_send_waiting()).
 *
 * Where io_uring cannot be had (an older kernel, kernel.io_uring_disabled, a seccomp filter
 * around airlock), or AIRLOCK_NET_SEND=direct, each send is made when it is made, as before. */

#include <errno.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/macro.h"
#include "netns/netns-internal.h"
#include "netns/proxy-internal.h"

/* Connections queued in one turn: those open, and those closed within it. */
#define SEND_QUEUE_MAX (2 * PROXY_CONNS_MAX)
/* One per side, so that a turn's sends always fit. */
#define SEND_RING_ENTRIES (2 * SEND_QUEUE_MAX)

enum {
	SEND_TO_SANDBOX = 1,
	SEND_TO_UPSTREAM = 2,
};

int proxy_send_configure(struct netns_proxy *p)
{
	const char *mode = secure_getenv("AIRLOCK_NET_SEND");

	if (!mode || strcmp(mode, "batched") == 0)
		p->send_batched = true;
	else if (strcmp(mode, "direct") == 0)
		p->send_batched = false;
	else
		return -EINVAL;
	return 0;
}

int proxy_send_start(struct netns_proxy *p)
{
	struct io_uring *ring;

	if (!p->send_batched)
		return 0;
	ring = calloc(1, sizeof(*ring));
	p->send_queue = calloc(SEND_QUEUE_MAX, sizeof(*p->send_queue));
	if (!ring || !p->send_queue) {
		free(ring);
		proxy_send_free(p);
		return -ENOMEM;
	}
	if (io_uring_queue_init(SEND_RING_ENTRIES, ring, IORING_SETUP_SUBMIT_ALL) < 0) {
		free(ring);
		proxy_send_free(p);
		return 0; /* each send made at once */
	}
	p->send_ring = ring;
	return 0;
}

void proxy_send_free(struct netns_proxy *p)
{
	if (p->send_ring) {
		io_uring_queue_exit(p->send_ring);
		free(p->send_ring);
		p->send_ring = NULL;
	}
	free(p->send_queue);
	p->send_queue = NULL;
}

/* What waits for c's side: the bytes in to_c or to_u, or with TLS the records its connection
 * queued (netns_tls_queue()). */
struct side {
	int fd;
	const uint8_t *head;
	size_t len;
};

/* Whether c's side may be sent to from the ring (and what waits for it, when s is not NULL). */
static bool side_of(struct conn *c, bool to_sandbox, struct side *s)
{
	struct netns_tls_conn *tls = proxy_side_tls(c, to_sandbox);
	const struct netns_buf *b = to_sandbox ? &c->to_c : &c->to_u;

	if (c->closed || (c->phase != PHASE_FLOW && c->phase != PHASE_SPLICE))
		return false;
	/* A flow's side once its handshake is done; not a kept upstream's first requests. A
	 * relay's sides are plain sockets from the start. */
	if (c->phase == PHASE_FLOW && (to_sandbox ? !c->c_ready : c->u_kept || !c->u_ready))
		return false;
	if (s) {
		s->fd = to_sandbox ? c->cfd : c->ufd;
		s->head = tls ? netns_tls_queued(tls, &s->len) : netns_buf_head(b);
		if (!tls)
			s->len = netns_buf_len(b);
	}
	return true;
}

static void side_sent(struct conn *c, bool to_sandbox, size_t n)
{
	struct netns_tls_conn *tls = proxy_side_tls(c, to_sandbox);

	if (tls)
		netns_tls_queued_sent(tls, n);
	else
		netns_buf_consume(to_sandbox ? &c->to_c : &c->to_u, n);
}

size_t proxy_send_waiting(const struct conn *c, bool to_sandbox)
{
	struct netns_tls_conn *tls = proxy_side_tls(c, to_sandbox);
	size_t queued = 0;

	if (tls)
		(void)netns_tls_queued(tls, &queued);
	return netns_buf_len(to_sandbox ? &c->to_c : &c->to_u) + queued;
}

/* Whether c's side ends once what waits for it is sent (the flow's last answer, a refusal, an
 * end that came from the other side). That is sent at once, so that the end goes right behind
 * it: a peer that had the last bytes before the end would often end its side first, and the
 * side that ends first keeps the connection's TIME_WAIT; a client of many short connections
 * would then keep them all, and run out of ports to connect from. */
static bool ends_after(const struct conn *c, bool to_sandbox)
{
	if (to_sandbox)
		return c->failed || c->u_eof || (c->flow && netns_http_flow_done(c->flow));
	return c->c_eof;
}

bool proxy_send_batches(struct conn *c, bool to_sandbox)
{
	struct netns_proxy *p = c->proxy;

	return p->send_ring && (c->send_queued || p->n_send_queue < SEND_QUEUE_MAX) &&
	       !(c->send_direct & (to_sandbox ? SEND_TO_SANDBOX : SEND_TO_UPSTREAM)) &&
	       !ends_after(c, to_sandbox) && side_of(c, to_sandbox, NULL);
}

void proxy_send_queue(struct conn *c, bool to_sandbox)
{
	struct netns_proxy *p = c->proxy;
	struct side s;

	if (!side_of(c, to_sandbox, &s) || s.len == 0)
		return;
	if (!c->send_queued)
		p->send_queue[p->n_send_queue++] = c;
	c->send_queued |= to_sandbox ? SEND_TO_SANDBOX : SEND_TO_UPSTREAM;
}

bool proxy_send_later(struct conn *c, bool to_sandbox)
{
	if (!proxy_send_batches(c, to_sandbox))
		return false;
	proxy_send_queue(c, to_sandbox);
	return true;
}

/* Applies a send's result to the side it was for, as a send()'s. */
static void sent(struct conn *c, int side, int res)
{
	bool to_sandbox = side == SEND_TO_SANDBOX;

	c->send_queued &= (uint8_t)~side;
	if (res > 0 && side_of(c, to_sandbox, NULL)) {
		side_sent(c, to_sandbox, (size_t)res);
		c->send_moved = true;
	} else if (res < 0 && res != -EAGAIN) {
		/* The next send is a send(), which says it. */
		c->send_direct |= (uint8_t)side;
		c->send_moved = true;
	}
}

/* Sends the queued sides of q's connections in one system call, and applies each result. The
 * buffers stay as they are until every send is done: a send with MSG_DONTWAIT is done within the
 * call, and each result is waited for all the same. -errno when the ring failed: the sides still
 * queued then may or may not have been sent. */
static int send_queued(struct io_uring *ring, struct conn **q, size_t n)
{
	struct io_uring_cqe *cqe;
	unsigned int want = 0;
	int r, submitted;

	for (size_t i = 0; i < n; i++)
		for (int side = SEND_TO_SANDBOX; side <= SEND_TO_UPSTREAM; side++) {
			struct io_uring_sqe *sqe;
			struct side s = {0};

			if (!(q[i]->send_queued & side))
				continue;
			if (!side_of(q[i], side == SEND_TO_SANDBOX, &s))
				s.len = 0;
			sqe = s.len > 0 ? io_uring_get_sqe(ring) : NULL;
			if (!sqe) {
				/* Nothing to send (or, which cannot be, no entry: then a send()).
				 */
				if (s.len > 0)
					q[i]->send_direct |= (uint8_t)side;
				sent(q[i], side, 0);
				continue;
			}
			io_uring_prep_send(sqe, s.fd, s.head, s.len, MSG_DONTWAIT | MSG_NOSIGNAL);
			io_uring_sqe_set_data64(sqe, (uint64_t)i << 2 | (uint64_t)side);
			want++;
		}
	if (want == 0)
		return 0;
	submitted = io_uring_submit(ring);
	if (submitted < 0)
		return submitted;
	for (int seen = 0; seen < submitted; seen++) {
		do
			r = io_uring_wait_cqe(ring, &cqe);
		while (r == -EINTR || r == -EAGAIN);
		if (r < 0)
			return r;
		sent(q[cqe->user_data >> 2], (int)(cqe->user_data & 3), cqe->res);
		io_uring_cqe_seen(ring, cqe);
	}
	return (unsigned int)submitted == want ? 0 : -EIO;
}

void proxy_send_turn(struct netns_proxy *p)
{
	struct conn *q[SEND_QUEUE_MAX];
	size_t n;

	while (p->n_send_queue > 0) {
		n = p->n_send_queue;
		memcpy(q, p->send_queue, n * sizeof(*q));
		p->n_send_queue = 0;
		if (send_queued(p->send_ring, q, n) < 0) {
			/* Every send is a send() from now on. A side whose send is not known to be
			 * done or not cannot go on: its connection is reset. */
			proxy_send_free(p);
			for (size_t i = 0; i < n; i++)
				if (q[i]->send_queued) {
					q[i]->send_queued = 0;
					proxy_close(q[i], true);
				}
		}
		/* What sent, or failed, goes on (more to read, an end to pass on). */
		for (size_t i = 0; i < n; i++)
			if (q[i]->send_moved) {
				q[i]->send_moved = false;
				proxy_pump(q[i]);
			}
	}
}
