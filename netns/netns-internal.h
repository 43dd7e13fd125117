#pragma once

/* Internal interfaces of the netns module (the egress proxy's parts), for netns/ and
 * tests/unit/netns/ only. Every parser here reads bytes the sandbox controls: each has a
 * libFuzzer harness in tests/fuzz/. None allocates unless it says so; none logs. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "common/macro.h"

/* ---- dns.c: the DNS responder's wire format (RFC 1035) ----
 *
 * The sandbox's resolver asks the proxy end; only one question per query is answered. */
#define NETNS_DNS_NAME_MAX 253
#define NETNS_DNS_MSG_MAX 512 /* over UDP, without EDNS0 */

enum netns_dns_type {
	NETNS_DNS_A = 1,
	NETNS_DNS_AAAA = 28,
};

struct netns_dns_query {
	uint16_t id;
	uint16_t flags;			   /* as received (RD is echoed) */
	char name[NETNS_DNS_NAME_MAX + 1]; /* lower-case, no trailing dot */
	uint16_t qtype, qclass;
	size_t question_len;	 /* bytes of the question, for the answer */
	const uint8_t *question; /* into the query buffer */
};

/* Parses a query: a header with QR clear, opcode QUERY, exactly one question (QDCOUNT 1, no
 * answers or authorities; additional records such as EDNS0 OPT are ignored), a name of labels
 * of letters, digits, '-' and '_' (no compression pointers in a question). -EBADMSG for
 * anything else (a query that cannot be answered at all); -EOPNOTSUPP for a well-formed
 * message that is not a standard query (answered NOTIMP). */
int netns_dns_parse_query(const uint8_t *buf, size_t len, struct netns_dns_query *ret);

enum netns_dns_rcode {
	NETNS_DNS_NOERROR = 0,
	NETNS_DNS_FORMERR = 1,
	NETNS_DNS_SERVFAIL = 2,
	NETNS_DNS_NXDOMAIN = 3,
	NETNS_DNS_NOTIMP = 4,
	NETNS_DNS_REFUSED = 5,
};

/* Writes the answer to q into buf (size bytes, at least NETNS_DNS_MSG_MAX): rcode, and when
 * addr is not NULL one A record (4 bytes, network order) with ttl, pointing at the question's
 * name. Returns its length. */
size_t netns_dns_answer(const struct netns_dns_query *q, enum netns_dns_rcode rcode,
			const uint8_t *addr, uint32_t ttl, uint8_t *buf, size_t size);

/* ---- tls-hello.c: the TLS ClientHello (RFC 8446 4.1.2, and TLS 1.0-1.2's) ----
 *
 * The proxy reads the first record(s) of a connection without consuming them (MSG_PEEK) and
 * decides from the server name. */
#define NETNS_TLS_HELLO_MAX (16 * 1024 + 5)

struct netns_tls_hello {
	char sni[NETNS_DNS_NAME_MAX + 1]; /* lower-case host_name, or "" when none was sent */
	bool alpn_h2;			  /* the client offers "h2" */
	bool alpn_http11;		  /* the client offers "http/1.1" */
};

/* Parses buf (len bytes from the start of the connection). Returns 0 with ret filled, -EAGAIN
 * when more bytes are needed (a record or handshake message cut short; never beyond
 * NETNS_TLS_HELLO_MAX), -EBADMSG when it is not a well-formed ClientHello: not a handshake
 * record, a length that lies, a server_name extension with more than one name or a name that is
 * not a valid host name (an IP literal is no host name), a duplicate extension. */
int netns_tls_parse_hello(const uint8_t *buf, size_t len, struct netns_tls_hello *ret);

/* ---- http.c: HTTP/1.1 requests (RFC 9112), as the proxy reads them ---- */
#define NETNS_HTTP_HEADERS_MAX 100
#define NETNS_HTTP_HEAD_MAX (64 * 1024) /* request line and headers */

struct netns_http_header {
	const char *name, *value; /* into the buffer; not NUL-terminated */
	size_t name_len, value_len;
};

enum netns_http_body {
	NETNS_HTTP_BODY_NONE,
	NETNS_HTTP_BODY_LENGTH,	 /* content_length bytes */
	NETNS_HTTP_BODY_CHUNKED, /* Transfer-Encoding: chunked (the last coding) */
};

struct netns_http_request {
	const char *method, *target; /* into the buffer */
	size_t method_len, target_len;
	int minor_version; /* HTTP/1.x */
	struct netns_http_header headers[NETNS_HTTP_HEADERS_MAX];
	size_t n_headers;
	size_t head_len; /* bytes of the request line and headers, with the empty line */
	enum netns_http_body body;
	uint64_t content_length;
	const char *host; /* the Host header's value, or NULL */
	size_t host_len;
	bool connect;	 /* method CONNECT: target is authority-form host:port */
	bool keep_alive; /* persistent after this request */
};

/* Parses the head of one request at the start of buf (len bytes). Returns 0 with ret filled,
 * -EAGAIN when the head is not complete yet (and len < NETNS_HTTP_HEAD_MAX), -EMSGSIZE past
 * NETNS_HTTP_HEAD_MAX or NETNS_HTTP_HEADERS_MAX, -EBADMSG (err says why) for anything a
 * smuggler could use or a server might read differently: obs-fold (a header line starting with
 * space or tab), whitespace before a colon, a bare CR or LF, NUL or other control characters,
 * both Content-Length and Transfer-Encoding, two Content-Lengths that differ, a Content-Length
 * that is not all digits, a Transfer-Encoding whose last coding is not chunked, more than one
 * Host header or none in HTTP/1.1 (HTTP/1.0 may have none: host is NULL then), a version other
 * than HTTP/1.0 or 1.1. The caller checks Host and an absolute-form target's authority against
 * the name the connection is for, and strips Upgrade (h2c would tunnel past the header swap). */
int netns_http_parse_request(const char *buf, size_t len, struct netns_http_request *ret,
			     struct al_error *err);

/* Parses a chunk-size line ("1a2b;ext\r\n") at the start of buf: -EAGAIN, -EBADMSG, or 0 with
 * the size and the line's length. */
int netns_http_parse_chunk_size(const char *buf, size_t len, uint64_t *ret_size,
				size_t *ret_line_len);

/* ---- rules.c: what the policy's network rules say about a connection ----
 *
 * A name is decided by the first host or "*.suffix" rule that names it and the port (a rule
 * without a port covers 80 and 443), else by network.default. An address (a raw IP the sandbox
 * connects to, or what a name resolved to) passes only by an allow rule whose CIDR holds it, and
 * a deny rule's CIDR refuses it even for an allowed name. Addresses of special use (loopback,
 * private, link-local, CGNAT, the metadata service, multicast, ...) are refused even then,
 * unless the allowing rule's CIDR lies within that range: naming the range is the only way. */
struct policy;
struct policy_net_rule;

struct netns_verdict {
	bool allow;
	const struct policy_net_rule *rule; /* the deciding rule, or NULL (the default, a range) */
	const char *reason;		    /* a static string for the audit */
};

/* A connection to name (lower case, no trailing dot) at port, before any address is known. */
void netns_decide_name(const struct policy *p, const char *name, uint16_t port,
		       struct netns_verdict *ret);
/* A connection to addr (family AF_INET or AF_INET6, network order) at port; name is what the
 * sandbox asked for (NULL for a raw IP). */
void netns_decide_addr(const struct policy *p, const char *name, int family, const uint8_t *addr,
		       uint16_t port, struct netns_verdict *ret);
/* Whether any rule could let name through on some port (the DNS responder answers only those). */
bool netns_name_may_connect(const struct policy *p, const char *name);
/* The special-use range addr lies in ("loopback", "private", ...), or NULL. */
const char *netns_addr_special(int family, const uint8_t *addr);

/* ---- synth.c: synthetic addresses (198.18.0.0/15) standing for names ----
 *
 * The DNS responder answers an allowed name with an address of its own; a connection to that
 * address is a connection to that name. Addresses are handed out in order and never reused for
 * another name during the sandbox's life. */
#define NETNS_SYNTH_MAX ((1u << 17) - 2) /* 198.18.0.1 .. 198.19.255.254 */
struct netns_synth;

int netns_synth_new(struct netns_synth **ret);
struct netns_synth *netns_synth_free(struct netns_synth *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct netns_synth *, netns_synth_free);
/* The address of name (copied; given one on first use), network order: -ENOSPC when all are
 * given, -ENOMEM. */
int netns_synth_addr(struct netns_synth *s, const char *name, uint8_t ret[4]);
/* The name an address stands for, or NULL (not a synthetic address, or not given). */
const char *netns_synth_name(const struct netns_synth *s, const uint8_t addr[4]);
