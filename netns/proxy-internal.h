#pragma once

/* The egress proxy's parts (proxy.c: sockets, loop, accepting and routing; proxy-relay.c: the
 * phases after the upstream connects; proxy-dns.c: the DNS responder), for netns/ only. */

#include <stdbool.h>
#include <stdint.h>

#include "netns/netns-internal.h"
#include "netns/netns.h"

#define PROXY_CONNS_MAX 256	/* connections at once (a browser's own cap); more are reset */
#define PROXY_LISTENERS_MAX 64	/* ports */
#define PROXY_CHUNK (16 * 1024) /* bytes read at a time into an inspected flow */
#define PROXY_PIPES_KEPT 64	/* empty splice pipes kept for the next connections */
#define PROXY_PIPE_BYTES (1024 * 1024) /* asked for a splice pipe; the default is 64 KiB */
/* A relayed connection copies what comes in reads of less than this through the proxy's own
 * buffer (one recv, one send), and splices the rest (see proxy-relay.c). */
#define PROXY_COPY_BYTES (16 * 1024)
/* What the sandbox can make the proxy hold in the kernel is bounded, connection by connection:
 * only this many pipes at once get PROXY_PIPE_BYTES (the others keep the default), the sandbox's
 * side of each connection (a hop on this machine, where small buffers cost no speed) has fixed
 * buffers, and an upstream socket queues at most PROXY_UPSTREAM_NOTSENT bytes it could not send
 * yet (TCP_NOTSENT_LOWAT: what is in flight is not limited). */
#define PROXY_BIG_PIPES_MAX 32
#define PROXY_SANDBOX_SOCKBUF (256 * 1024)
#define PROXY_UPSTREAM_NOTSENT (128 * 1024)
/* An upstream's receive buffer (which the kernel's autotuning would grow to tcp_rmem's maximum,
 * 32 MiB here, while a sandbox that does not read holds it full) is fixed: PROXY_UPSTREAM_RCVBUF
 * for at most PROXY_BIG_RCVBUFS connections at once (a window for a fast download from far
 * away), PROXY_SANDBOX_SOCKBUF for the others. The kernel doubles each for its overhead. */
#define PROXY_BIG_RCVBUFS 32
#define PROXY_UPSTREAM_RCVBUF (2 * 1024 * 1024)
/* Upstream connections kept for the next connection (proxy-pool.c): at most this many, each at
 * most this long. */
#define PROXY_POOL_MAX 32
#define PROXY_POOL_IDLE_MSEC 1500
/* What is held of the requests sent to a kept upstream before its first answer, to send them
 * again when it ends first (proxy-relay.c): past this, they are not sent again. */
#define PROXY_RESEND_MAX (64 * 1024)

enum proxy_watch_type {
	WATCH_LISTENER,
	WATCH_DNS,
	WATCH_LOOKUP,
	WATCH_STOP,
	WATCH_CLIENT,
	WATCH_UPSTREAM,
	WATCH_AGENT_LISTEN, /* the SSH agent's socket in the sandbox */
	WATCH_AGENT,	    /* one connection to it */
};

struct io_uring;
struct proxy_agent;
struct proxy_ssh;

/* What an epoll event points at. */
struct proxy_watch {
	enum proxy_watch_type type;
	int fd;
	uint16_t port;		   /* WATCH_LISTENER */
	struct conn *conn;	   /* WATCH_CLIENT, WATCH_UPSTREAM */
	struct proxy_agent *agent; /* WATCH_AGENT */
};

enum conn_phase {
	PHASE_HEAD,
	PHASE_LOOKUP,
	PHASE_CONNECTING,
	PHASE_SNIFF,
	PHASE_SPLICE,
	PHASE_FLOW,
	PHASE_SSH, /* copied while the SSH watch reads the clear key exchange, then spliced */
	PHASE_PG,  /* a Postgres login the proxy ends on both sides, then relayed (proxy-pg.c) */
};

struct proxy_pg;

/* A splice pipe; the proxy keeps empty ones for the next (proxy_pipe_get()). */
struct proxy_pipe {
	int fd[2];   /* -EBADF: none */
	size_t size; /* the bytes it holds; 0: none */
	size_t fill; /* the bytes in it */
};

/* One direction of the unread relay (proxy-relay.c). */
struct relay_dir {
	struct proxy_pipe pipe; /* taken at its first bulk */
	bool bulk;		/* read into the pipe, not copied */
};

/* What the events said of one side of a connection (conn_note()). */
struct conn_events {
	bool readable; /* it may have bytes (or its end) to read */
	bool read_on;  /* its end, an error or urgent data came: a short read does not mean it is
			* read out (a TCP read stops at the urgent mark too) */
};

struct conn {
	struct netns_proxy *proxy;
	struct conn *prev, *next;
	struct proxy_watch cw, uw; /* the sandbox's side (client), the upstream's */
	int cfd, ufd;
	enum conn_phase phase;
	bool explicit_proxy; /* came to the proxy's own port (HTTP_PROXY) */
	bool absolute_form;  /* explicit proxy, a plain request: inspected from its first byte */
	bool lookup_pending, closed, audited;
	bool pool_tried;      /* a kept upstream was looked for (proxy-pool.c): connect one now */
	bool tunnel_answered; /* the explicit proxy's CONNECT got its 200 */
	bool big_rcvbuf;      /* counted in the proxy's n_big_rcvbufs */
	size_t head_scanned;  /* HEAD: the bytes of cin searched for the head's end */
	size_t sniff_need;    /* SNIFF: the bytes queued before the next look at them */
	/* SNIFF: proxy_now_msec() until which the start of an HTTP request line is waited for
	 * (0: none is); past it, what came is not HTTP */
	uint64_t sniff_line_until;
	char name[NETNS_DNS_NAME_MAX + 1];   /* the name the connection is for, or "" (raw IP) */
	char target[NETNS_DNS_NAME_MAX + 1]; /* what the sandbox asked for, for messages */
	uint16_t port;
	struct netns_addr upstream;
	struct netns_verdict name_verdict; /* the name's, when there is a name */
	struct netns_verdict verdict;	   /* the address's (or the name's, until it is known) */
	const char *mode;		   /* how it is relayed, for the audit */

	/* SPLICE: each direction (sandbox to upstream, and back); to_u and to_c hold what was
	 * copied and not yet sent */
	struct relay_dir cu, uc;
	/* both: each side's read end reached, and its write end shut */
	bool c_eof, u_eof, c_shut, u_shut;
	/* what the events said of each side, and that the upstream is writable (conn_note()) */
	struct conn_events cev, uev;
	bool u_writable;

	/* SSH: the watch (proxy-ssh.c); to_u and to_c hold what it read and has not sent */
	struct proxy_ssh *ssh;
	/* PG: the login and the relay (proxy-pg.c); to_u and to_c hold what waits for each side */
	struct proxy_pg *pg;

	/* FLOW: HTTP/1.1 (flow), or HTTP/2 (h2) once both handshakes chose it */
	struct netns_http_flow *flow;
	struct netns_h2 *h2;
	bool hello_h2;	   /* the sandbox's ClientHello offers h2 */
	bool u_offered_h2; /* the upstream's TLS was offered h2 (for proxy-pool.c) */
	struct netns_http_flow_options flow_opts;
	struct netns_tls_conn *ctls, *utls; /* NULL: plain */
	bool c_ready, u_ready;		    /* handshakes done (or plain) */
	bool failed;			    /* an error response is being flushed, then close */
	bool fail_reset;		    /* ... none could be given: the close is a reset */
	bool eof_flushed, eof_error;	    /* the upstream's end was given to the flow */
	struct netns_buf cin, uin;	    /* read, not yet taken by the flow */
	struct netns_buf to_u, to_c;	    /* from the flow, not yet sent */
	/* A kept upstream (proxy-pool.c) that has not answered yet, and what was sent to it: sent
	 * again on a connection of the proxy's own if it ends first (u_again: that connect) */
	bool u_kept, u_again;
	struct netns_buf sent_u;

	/* proxy-send.c: the sides (bits) queued for the turn's sends, the sides sent to directly
	 * (a batched send failed: a send() says how), and that a batched send moved bytes */
	uint8_t send_queued, send_direct;
	bool send_moved;

	/* CLOCK_MONOTONIC_COARSE msec by which the sandbox must have sent its first request head
	 * or ClientHello, or, on an idle flow, its next head; 0: none (a response or a body under
	 * way, a splice). Bytes of a head that come slowly do not move it. */
	uint64_t idle_deadline;
};

/* An upstream connection kept for the next connection to its name and port (proxy-pool.c). */
struct proxy_pooled {
	char name[NETNS_DNS_NAME_MAX + 1];
	uint16_t port;
	bool offered_h2; /* h2 was offered to the upstream (it chose HTTP/1.1) */
	bool big_rcvbuf; /* counted in the proxy's n_big_rcvbufs */
	int fd;
	struct netns_tls_conn *tls;
	struct netns_addr upstream;
	struct netns_verdict verdict; /* its address's, for the audit */
	uint64_t since;		      /* proxy_now_msec() when it was kept */
};

struct netns_proxy {
	const struct netns_proxy_options *o;
	int epoll_fd;
	uint32_t proxy_addr; /* NETNS_PROXY_ADDR, network order */
	struct proxy_watch listeners[PROXY_LISTENERS_MAX];
	uint16_t ports[PROXY_LISTENERS_MAX]; /* each listener's, for the AnyIP rules */
	size_t n_listeners;
	struct proxy_watch dns;
	struct netns_synth *synth;
	struct netns_lookup *lookup;
	struct netns_tls *tls;	      /* NULL: nothing is intercepted */
	const char **surrogates;      /* NULL-terminated, borrowed from the broker client */
	const char **surrogate_names; /* the credential of each */
	bool has_sidecar;
	struct proxy_pipe pipes[PROXY_PIPES_KEPT]; /* empty, for the next bulk relay */
	uint8_t copy[PROXY_COPY_BYTES]; /* a relay's copy, sent before the next is read */
	size_t n_pipes;
	size_t n_big_pipes;	       /* open pipes of PROXY_PIPE_BYTES, kept ones included */
	size_t n_big_rcvbufs;	       /* upstream sockets of PROXY_UPSTREAM_RCVBUF */
	struct netns_addr *host_addrs; /* the host's public addresses (see reaches_host()) */
	size_t n_host_addrs;
	struct conn *conns, *dead;
	size_t n_conns;
	uint32_t violations_dropped;
	/* The audit's rate limit (proxy_audit_admit()): tokens in thousandths of an event. */
	uint64_t audit_ms, audit_tokens, audit_dropped;
	/* The SSH agent (proxy-ssh.c), with the policy's SSH keys. */
	size_t n_ssh_keys;
	struct proxy_watch agent; /* WATCH_AGENT_LISTEN; fd -EBADF until adopted */
	struct proxy_agent *agents;
	size_t n_agents;
	struct proxy_pooled pool[PROXY_POOL_MAX];
	size_t n_pool;
	uint64_t idle_msec;  /* the policy's network.idle_timeout */
	uint64_t idle_swept; /* when the connections were last looked at for it */
	uint64_t sniff_due;  /* the earliest sniff_line_until of a connection, or 0 */
	/* proxy-send.c: the ring of the turn's sends (NULL: each send made at once), and the
	 * connections queued for them */
	bool send_batched;
	struct io_uring *send_ring;
	struct conn **send_queue;
	size_t n_send_queue;
};

/* The TLS connection of c's side toward the sandbox, or toward the upstream (NULL: plain). */
static inline struct netns_tls_conn *proxy_side_tls(const struct conn *c, bool to_sandbox)
{
	return to_sandbox ? c->ctls : c->utls;
}

/* Makes until (a connection's sniff_line_until) the loop's next sniff deadline if it is the
 * earliest. */
static inline void proxy_sniff_due(struct netns_proxy *p, uint64_t until)
{
	if (!p->sniff_due || until < p->sniff_due)
		p->sniff_due = until;
}

/* Looked at once a second: an idle connection ends within a second of its deadline. */
#define PROXY_IDLE_SWEEP_MSEC 1000
/* How long the first bytes of what may be an HTTP request line are waited for before they are
 * taken for another protocol's (a short command with no line end: ZooKeeper's "ruok"); the
 * loop wakes for the earliest such deadline (netns_proxy_serve()). */
#define PROXY_SNIFF_LINE_MSEC 1000
uint64_t proxy_now_msec(void);

#define AUDIT_BURST 2000 /* events written at once before the rate limit applies */
#define AUDIT_RATE 200	 /* events a second, after a burst */

/* proxy.c */
#define PROXY_DESTINATION_MAX (NETNS_DNS_NAME_MAX + 16)
/* "host:port" of c (a credential's destination form): the name the sandbox asked for, else the
 * address ("[v6]:port"). */
void proxy_destination(const struct conn *c, char *buf, size_t size);
bool proxy_audit_admit(struct netns_proxy *p);
void proxy_violation(struct netns_proxy *p, const char *kind, const char *fmt, ...) _printf_(3, 4);
void proxy_audit(struct conn *c, const char *verdict, const char *reason);
void proxy_refuse(struct conn *c, const char *reason);
void proxy_close(struct conn *c, bool reset);
void proxy_enter_route(struct conn *c);
void proxy_defer_free(struct netns_proxy *p, struct conn *c);
void proxy_free_deferred(struct netns_proxy *p);
/* Watches c's upstream fd (after proxy_pool_take()). */
int proxy_watch_upstream(struct conn *c);
/* Connects c to c->upstream again (its kept upstream ended before answering): the phase
 * CONNECTING, then proxy_connected(). -errno after closing c. */
int proxy_connect_again(struct conn *c);
/* A pipe for splice, empty: a kept one, or a new one. -errno when none can be made. */
int proxy_pipe_get(struct netns_proxy *p, struct proxy_pipe *ret);
/* Gives a pipe back (or nothing, when pp has none): kept when it is empty and there is room,
 * else closed. */
void proxy_pipe_put(struct netns_proxy *p, struct proxy_pipe *pp);

/* Runs c's phases with what its sides have now (after a batched send, proxy-send.c). */
void proxy_pump(struct conn *c);

/* proxy-send.c: sends batched per turn of the loop. proxy_send_batches() says whether c's side
 * (the sandbox's, or the upstream's) is sent to that way: then what waits for it stays where it
 * is (c->to_c or c->to_u; with TLS, the records its connection made of them while
 * netns_tls_queue() was on), proxy_send_later() says so too and queues c when bytes wait (false:
 * the caller sends them itself; proxy_send_queue() queues a side already known to be batched),
 * and proxy_send_turn(), at the end of the turn, sends it, and
 * pumps c again when bytes moved. proxy_send_waiting() counts what still waits for a side
 * (buffered and queued): an end passed on, or a connection kept, only once it is 0.
 * proxy_send_configure() reads AIRLOCK_NET_SEND ("batched", the default, or "direct": every
 * send made at once; -EINVAL for anything else); proxy_send_start(), in the proxy's own process,
 * sets the ring up (where none can be had, every send is made at once). */
int proxy_send_configure(struct netns_proxy *p);
int proxy_send_start(struct netns_proxy *p);
void proxy_send_free(struct netns_proxy *p);
bool proxy_send_batches(struct conn *c, bool to_sandbox);
bool proxy_send_later(struct conn *c, bool to_sandbox);
void proxy_send_queue(struct conn *c, bool to_sandbox);
size_t proxy_send_waiting(const struct conn *c, bool to_sandbox);
void proxy_send_turn(struct netns_proxy *p);

/* proxy-relay.c: each returns 0 (progress made, or waiting), or -errno after closing c. */
int proxy_read_head(struct conn *c);
int proxy_connected(struct conn *c);
int proxy_sniff(struct conn *c);
int proxy_splice(struct conn *c);
int proxy_flow(struct conn *c);
/* The explicit proxy's answer to a CONNECT, sent once: false after closing c. */
bool proxy_answer_tunnel(struct conn *c);

/* Reads or writes one side of c: its fd, through TLS when tls is not NULL. -EAGAIN when it
 * would block; a read's 0 is the end. */
ssize_t proxy_end_read(int fd, struct netns_tls_conn *tls, void *buf, size_t n);
ssize_t proxy_end_write(int fd, struct netns_tls_conn *tls, const void *buf, size_t n);
/* The splice of what is left of c (proxy-relay.c), relayed unread from now on. */
int proxy_start_splice(struct conn *c, const char *mode);
/* The flow of c's plain HTTP (proxy-relay.c), on the kept upstream c took. */
void proxy_start_plain_flow(struct conn *c);

/* proxy-pool.c: upstream connections kept for the next connection to the same name and port.
 * proxy_pool_put() takes c's upstream when its flow is at a boundary that lets it carry another
 * connection's requests (true: c has none left). proxy_pool_has() says whether one may be there
 * for c's name and port (TLS or plain); proxy_pool_take() gives c one of the kind tls says that is
 * still quiet (true), closing those that spoke or aged while kept; false and c closed when it
 * could not be watched. */
bool proxy_pool_put(struct conn *c);
bool proxy_pool_has(const struct netns_proxy *p, const char *name, uint16_t port);
bool proxy_pool_take(struct conn *c, bool tls);
void proxy_pool_expire(struct netns_proxy *p, uint64_t now);
void proxy_pool_free(struct netns_proxy *p);

/* proxy-ssh.c: the SSH watch and the agent */
bool proxy_ssh_wanted(const struct netns_proxy *p);
void proxy_ssh_start(struct conn *c);
int proxy_ssh(struct conn *c);
void proxy_ssh_free(struct conn *c);
void proxy_agent_accept(struct netns_proxy *p);
void proxy_agent_handle(struct proxy_agent *a, uint32_t events);
void proxy_agents_free(struct netns_proxy *p);

/* proxy-pg.c: Postgres logins. proxy_pg_start() takes c (true) when its destination is a
 * Postgres credential's. */
bool proxy_pg_start(struct conn *c);
int proxy_pg(struct conn *c);
void proxy_pg_free(struct conn *c);

/* proxy-dns.c */
void proxy_dns_serve(struct netns_proxy *p);
