/* The bench's ideal relay (bench/proxy-ceiling.sh): accepts TCP connections and relays each to
 * one upstream, with nothing else, in one of two ways:
 *   splice   - the bytes go through a pipe of 1 MiB per direction by splice(2), as airlock's
 *              pass-through moves a body, but with no parsing, no policy and no audit;
 *   sockmap  - the kernel moves each received segment to the other socket's send side (a BPF
 *              SK_SKB verdict program on a sockmap: bpf_sk_redirect_map), so that no process is
 *              in the data path at all. Needs CAP_BPF and CAP_NET_ADMIN.
 * It measures how fast any relay of this shape can be on this machine; it is not a proxy to use:
 * one thread, a blocking connect(), and an end of connection only when both sides have ended.
 *
 * usage: relay splice|sockmap LISTEN_IPV4 PORT UPSTREAM_IPV4 PORT */

#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PIPE_SIZE (1 << 20)
#define SLOTS 1024 /* sockets in the sockmap */

static void die(const char *what)
{
	fprintf(stderr, "relay: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* ---- the sockmap ---- */

static int sys_bpf(int cmd, union bpf_attr *a)
{
	return (int)syscall(SYS_bpf, cmd, a, sizeof(*a));
}

static int map_create(uint32_t type, uint32_t key_size, uint32_t value_size)
{
	union bpf_attr a = {
	    .map_type = type, .key_size = key_size, .value_size = value_size, .max_entries = SLOTS};
	int fd = sys_bpf(BPF_MAP_CREATE, &a);

	if (fd < 0)
		die("BPF_MAP_CREATE");
	return fd;
}

static void map_update(int map, const void *key, const void *value)
{
	union bpf_attr a = {
	    .map_fd = (uint32_t)map, .key = (uintptr_t)key, .value = (uintptr_t)value};

	if (sys_bpf(BPF_MAP_UPDATE_ELEM, &a) < 0)
		die("BPF_MAP_UPDATE_ELEM");
}

#define INSN(c, d, s, o, i)                                                                        \
	((struct bpf_insn){.code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i)})

static int peers, sockmap; /* socket cookie -> the peer's slot; slot -> socket */

/* The verdict program: the slot of the socket's peer, looked up by the socket's cookie, and the
 * segment redirected to that socket's send side; a socket not in peers keeps its segment. */
static void sockmap_setup(void)
{
	static char log[16384];

	sockmap = map_create(BPF_MAP_TYPE_SOCKMAP, 4, 4);
	peers = map_create(BPF_MAP_TYPE_HASH, 8, 4);
	struct bpf_insn prog[] = {
	    INSN(BPF_ALU64 | BPF_MOV | BPF_X, 6, 1, 0, 0), /* r6 = skb */
	    INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_get_socket_cookie),
	    INSN(BPF_STX | BPF_MEM | BPF_DW, 10, 0, -8, 0), /* fp[-8] = cookie */
	    INSN(BPF_LD | BPF_DW | BPF_IMM, 1, BPF_PSEUDO_MAP_FD, 0, peers),
	    INSN(0, 0, 0, 0, 0),
	    INSN(BPF_ALU64 | BPF_MOV | BPF_X, 2, 10, 0, 0),
	    INSN(BPF_ALU64 | BPF_ADD | BPF_K, 2, 0, 0, -8),
	    INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_map_lookup_elem),
	    INSN(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 7, 0), /* no peer: to "keep" */
	    INSN(BPF_LDX | BPF_MEM | BPF_W, 3, 0, 0, 0), /* r3 = the peer's slot */
	    INSN(BPF_ALU64 | BPF_MOV | BPF_X, 1, 6, 0, 0),
	    INSN(BPF_LD | BPF_DW | BPF_IMM, 2, BPF_PSEUDO_MAP_FD, 0, sockmap),
	    INSN(0, 0, 0, 0, 0),
	    INSN(BPF_ALU64 | BPF_MOV | BPF_K, 4, 0, 0, 0), /* flags 0: the peer's send side */
	    INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_sk_redirect_map),
	    INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
	    INSN(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, SK_PASS), /* keep */
	    INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
	};
	union bpf_attr a = {.prog_type = BPF_PROG_TYPE_SK_SKB,
			    .insns = (uintptr_t)prog,
			    .insn_cnt = sizeof(prog) / sizeof(prog[0]),
			    .license = (uintptr_t) "GPL",
			    .log_buf = (uintptr_t)log,
			    .log_size = sizeof(log),
			    .log_level = 1};
	int fd = sys_bpf(BPF_PROG_LOAD, &a);

	if (fd < 0) {
		fprintf(stderr, "%s", log);
		die("BPF_PROG_LOAD");
	}
	a = (union bpf_attr){.target_fd = (uint32_t)sockmap,
			     .attach_bpf_fd = (uint32_t)fd,
			     .attach_type = BPF_SK_SKB_VERDICT};
	if (sys_bpf(BPF_PROG_ATTACH, &a) < 0)
		die("BPF_PROG_ATTACH");
}

/* Sockets a and b at slots slot and slot + 1, each the other's peer. */
static void sockmap_pair(int a, int b, uint32_t slot)
{
	int fds[2] = {a, b};

	for (uint32_t i = 0; i < 2; i++) {
		uint64_t cookie;
		socklen_t len = sizeof(cookie);
		uint32_t self = slot + i, peer = slot + 1 - i;

		if (getsockopt(fds[i], SOL_SOCKET, SO_COOKIE, &cookie, &len) < 0)
			die("SO_COOKIE");
		map_update(peers, &cookie, &peer);
		map_update(sockmap, &self, &fds[i]);
	}
}

/* ---- the connections ---- */

struct half { /* one direction: from -> pipe -> to */
	int from, to, pipe[2];
	size_t piped;
	bool eof, shut;
};

struct pair {
	struct half h[2];
	bool dead;
};

/* Moves what it can from h->from to h->to; at the end of h->from and of the pipe, ends h->to. */
static void pump(struct half *h)
{
	for (;;) {
		if (!h->eof && h->piped < PIPE_SIZE) {
			ssize_t n = splice(h->from, NULL, h->pipe[1], NULL, PIPE_SIZE - h->piped,
					   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n > 0)
				h->piped += (size_t)n;
			else if (n == 0 || (errno != EAGAIN && errno != EINTR))
				h->eof = true;
		}
		if (h->piped == 0)
			break;
		ssize_t n = splice(h->pipe[0], NULL, h->to, NULL, h->piped,
				   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n <= 0)
			break;
		h->piped -= (size_t)n;
	}
	if (h->eof && h->piped == 0 && !h->shut) {
		shutdown(h->to, SHUT_WR);
		h->shut = true;
	}
}

static void pair_close(struct pair *p)
{
	for (int i = 0; i < 2; i++) {
		close(p->h[i].from);
		close(p->h[i].pipe[0]);
		close(p->h[i].pipe[1]);
	}
	p->dead = true;
}

static struct sockaddr_in address(const char *ip, const char *port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port))};

	if (inet_pton(AF_INET, ip, &a.sin_addr) != 1) {
		fprintf(stderr, "relay: not an IPv4 address: %s\n", ip);
		exit(2);
	}
	return a;
}

static void accept_pair(int listener, const struct sockaddr_in *upstream, int ep, bool use_sockmap,
			uint32_t *slot)
{
	int a = accept4(listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	int b = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	if (a < 0 || b < 0)
		die("accept");
	if (connect(b, (const struct sockaddr *)upstream, sizeof(*upstream)) < 0)
		die("connect to the upstream");
	/* As airlock's proxy: a relay must not hold a small write back for an ACK. */
	if (setsockopt(a, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0 ||
	    setsockopt(b, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0)
		die("TCP_NODELAY");
	if (fcntl(b, F_SETFL, O_NONBLOCK) < 0)
		die("O_NONBLOCK");

	struct pair *p = calloc(1, sizeof(*p));
	if (!p)
		die("calloc");
	p->h[0].from = p->h[1].to = a;
	p->h[1].from = p->h[0].to = b;
	for (int i = 0; i < 2; i++) {
		if (pipe2(p->h[i].pipe, O_NONBLOCK | O_CLOEXEC) < 0 ||
		    fcntl(p->h[i].pipe[0], F_SETPIPE_SZ, PIPE_SIZE) < 0)
			die("pipe");
	}
	if (use_sockmap) {
		if (*slot + 2 > SLOTS) {
			errno = ENOSPC;
			die("sockmap");
		}
		sockmap_pair(a, b, *slot);
		*slot += 2;
	}
	for (int i = 0; i < 2; i++) {
		struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET,
					 .data.ptr = p};
		if (epoll_ctl(ep, EPOLL_CTL_ADD, p->h[i].from, &ev) < 0)
			die("epoll_ctl");
	}
}

int main(int argc, char **argv)
{
	if (argc != 6 || (strcmp(argv[1], "splice") != 0 && strcmp(argv[1], "sockmap") != 0)) {
		fprintf(stderr,
			"usage: relay splice|sockmap LISTEN_IPV4 PORT UPSTREAM_IPV4 PORT\n");
		return 2;
	}
	bool use_sockmap = strcmp(argv[1], "sockmap") == 0;
	struct sockaddr_in at = address(argv[2], argv[3]), upstream = address(argv[4], argv[5]);
	int one = 1, listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0),
	    ep = epoll_create1(0);
	uint32_t slot = 0;

	if (listener < 0 || ep < 0)
		die("socket");
	if (use_sockmap)
		sockmap_setup();
	setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(listener, (const struct sockaddr *)&at, sizeof(at)) < 0 ||
	    listen(listener, 128) < 0)
		die("listen");
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
	if (epoll_ctl(ep, EPOLL_CTL_ADD, listener, &ev) < 0)
		die("epoll_ctl");

	for (;;) {
		struct epoll_event evs[64];
		int n = epoll_wait(ep, evs, 64, -1);

		if (n < 0 && errno != EINTR)
			die("epoll_wait");
		for (int i = 0; i < n; i++) {
			struct pair *p = evs[i].data.ptr;

			if (!p) {
				accept_pair(listener, &upstream, ep, use_sockmap, &slot);
				continue;
			}
			if (p->dead)
				continue;
			pump(&p->h[0]);
			pump(&p->h[1]);
			if (p->h[0].shut && p->h[1].shut)
				pair_close(p); /* freed never: a bench's connections are few */
		}
	}
}
