#pragma once

/* Internal interfaces of the netns module (the egress proxy's parts), for netns/ and
 * tests/unit/netns/ only. Every parser here reads bytes the sandbox controls: each has a
 * libFuzzer harness in tests/fuzz/. None allocates unless it says so; none logs. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

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

/* RFC 9110's character classes, for the HTTP parser and the flow. */
static inline bool http_is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

static inline bool http_is_alpha(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static inline bool http_is_tchar(unsigned char c)
{
	return http_is_alpha(c) || http_is_digit(c) || (c != '\0' && strchr("!#$%&'*+-.^_`|~", c));
}

static inline bool http_is_vchar(unsigned char c)
{
	return c > ' ' && c < 0x7f;
}

static inline bool http_is_ows(unsigned char c)
{
	return c == ' ' || c == '\t';
}

/* The index of the first byte in s[i..n) that accept refuses, or n. */
static inline size_t http_span(const char *s, size_t n, size_t i, bool (*accept)(unsigned char))
{
	while (i < n && accept((unsigned char)s[i]))
		i++;
	return i;
}

/* A control character other than HTAB (which field values may hold). */
static inline bool http_is_ctl(unsigned char c)
{
	return (c < ' ' && c != '\t') || c == 0x7f;
}

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

/* Whether the n bytes at buf begin with a request line as netns_http_parse_request() reads one
 * (a method token, one space, a visible target, one space, "HTTP/1.0" or "HTTP/1.1", CRLF): 1
 * when a whole one is there, -EAGAIN when the bytes could still become one, 0 when they cannot
 * (another protocol spoken first: Redis's inline commands, memcached's). A method longer than
 * NETNS_HTTP_METHOD_MAX is taken for no request. */
#define NETNS_HTTP_METHOD_MAX 32
int netns_http_request_line_begins(const char *buf, size_t n);

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
/* Whether addr lies in 198.18.0.0/15. */
bool netns_synth_is_range(const uint8_t addr[4]);

/* ---- buf.c: byte buffers between the proxy's sockets ----
 *
 * A buffer of what is to be sent on: appended at the end, consumed from the front. It may hold
 * real credential values (swapped into requests), so it is wiped whenever bytes leave it. */
struct netns_buf {
	uint8_t *data;
	size_t start, end, size; /* the bytes waiting are data[start..end) */
};

static inline size_t netns_buf_len(const struct netns_buf *b)
{
	return b->end - b->start;
}
static inline const uint8_t *netns_buf_head(const struct netns_buf *b)
{
	return b->data + b->start;
}
/* Appends n bytes: -ENOMEM, or -EMSGSIZE when the buffer would pass max bytes. */
int netns_buf_append(struct netns_buf *b, const void *p, size_t n, size_t max);
int netns_buf_printf(struct netns_buf *b, size_t max, const char *fmt, ...) _printf_(3, 4);
/* Drops the first n bytes (wiped). */
void netns_buf_consume(struct netns_buf *b, size_t n);
/* Wipes and frees the storage; b is empty and reusable afterwards. */
void netns_buf_done(struct netns_buf *b);

/* ---- http-flow.c: one inspected HTTP/1.1 connection, both directions ----
 *
 * The proxy feeds what the sandbox sends (plain, or decrypted from intercepted TLS) and what the
 * upstream answers; the flow appends the bytes to pass on to out buffers.
 *
 * Requests: each head is parsed strictly (http.c); Host and an absolute-form target must name the
 * flow's host (and port, when one is written and it is not the connection's); Upgrade,
 * HTTP2-Settings, Proxy-Authorization and Proxy-Connection are removed; every surrogate in a
 * header value, raw or inside "Authorization: Basic" (base64 of user:password), is replaced by
 * the real value for this host (ops->resolve); a sidecar's headers are added to every request.
 * A surrogate anywhere else (the request target, a body, a chunk extension or trailer, a
 * percent- or base64-encoded form outside Basic) or one the broker refuses for this host ends
 * the flow with a refusal, and no byte of that surrogate is passed on: bodies are scanned as
 * they stream, holding back only a tail that could begin a surrogate.
 *
 * Responses: heads parsed (status line, headers, same strictness), bodies framed (Content-Length,
 * chunked, until close; none for HEAD, 1xx, 204, 304; pipelined requests answered in order) and
 * every real value resolved on this flow or bound to its host (ops->bound_value) turned back
 * into its surrogate, in headers and bodies, from the first response on, as it is and in the same
 * form where it is echoed base64-, hex-, JSON- or percent-encoded (a base64 run holding a value
 * is encoded again whole, so that no bit of the value's encoding is left). A
 * Content-Length body is re-framed as chunked (HTTP/1.1) or close-delimited (1.0) when a value
 * and its surrogate differ in length, since the length can then change. */
struct broker_secret;
struct netns_http_flow;

#define NETNS_HTTP_FLOW_OUT_MAX (256 * 1024) /* out never grows past this plus one head */

struct netns_http_flow_ops {
	/* The real value behind surrogate for a request to the flow's host: 0 and *ret (the flow
	 * frees it), -EPERM when the broker refuses (err says why), another -errno when it cannot
	 * answer. */
	int (*resolve)(void *userdata, const char *surrogate, struct broker_secret **ret,
		       struct al_error *err);
	/* The sidecar headers for the flow's host, "Name: value\r\n" each (may be empty); asked
	 * once per flow, before the first request is passed on. NULL: none. */
	int (*sidecar)(void *userdata, struct broker_secret **ret, struct al_error *err);
	/* A surrogate was swapped for its value (where: e.g. "header authorization"; stream: the
	 * HTTP/2 stream, 0 in HTTP/1.1), for the audit. NULL: not reported. */
	void (*swapped)(void *userdata, const char *surrogate, const char *where, uint32_t stream);
	/* The real value behind surrogate when its credential is bound to the flow's host, only to
	 * be turned back into the surrogate in responses, never sent (so it is asked for on plain
	 * connections too): 0 and *ret (the flow frees it), 0 and *ret NULL when the credential is
	 * not bound to the host, another -errno when it cannot answer. Asked once per flow, before
	 * its first response head, for each surrogate not resolved on it by then: a bound host may
	 * show a value that was sent on another connection. NULL: only the values resolved on the
	 * flow are turned back. */
	int (*bound_value)(void *userdata, const char *surrogate, struct broker_secret **ret,
			   struct al_error *err);
	/* HTTP/2 only (http2.c): a stream was refused (error and message as a flow's errors say),
	 * the connection goes on. NULL: not reported. */
	void (*refused)(void *userdata, int error, const char *message, uint32_t stream);
};

struct netns_http_flow_options {
	const char *host; /* the name the connection is for: lower case, no trailing dot */
	uint16_t port;	  /* the port the sandbox connected to */
	const char *const *surrogates; /* the session's surrogates, NULL-terminated (may be none) */
	/* The credential of each surrogate, and the policy that has them (its AWS keys are signed
	 * again: http-flow-sigv4.c); NULL: none. */
	const char *const *surrogate_names;
	const struct policy *policy;
	const struct netns_http_flow_ops *ops;
	void *userdata;
	/* The upstream's connection may carry a later connection's requests (the proxy keeps it:
	 * proxy-pool.c): a request's Connection: close is not passed on. The sandbox still gets its
	 * answer with Connection: close, and nothing it sends after that request is taken. */
	bool keep_upstream;
	/* The connection came to the explicit proxy (HTTP_PROXY), whose client may send requests
	 * for several origins on it: one whose absolute-form target names another origin is not
	 * refused but held, and nothing after it is taken (netns_http_flow_other_origin()). */
	bool origin_switch;
};

/* All of o is borrowed and must outlive the flow. -ENOMEM only. */
int netns_http_flow_new(const struct netns_http_flow_options *o, struct netns_http_flow **ret);
/* Wipes every value the flow holds. */
struct netns_http_flow *netns_http_flow_free(struct netns_http_flow *f);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct netns_http_flow *, netns_http_flow_free);

/* Feeds len bytes from the sandbox; appends what goes upstream to out. Returns the bytes
 * consumed (all of them, unless out is past NETNS_HTTP_FLOW_OUT_MAX: feed the rest once out has
 * drained). Errors end the flow (err says why; the caller answers with
 * netns_http_flow_error_response() and closes both sides): -EPERM a surrogate refused, -EBADMSG
 * a malformed or ambiguous request (smuggling), -EMSGSIZE a head too large, -EPROTO a Host or
 * target naming another host, other -errno from ops->resolve. */
ssize_t netns_http_flow_request(struct netns_http_flow *f, const uint8_t *buf, size_t len,
				struct netns_buf *out, struct al_error *err);
/* The same for the upstream's bytes, appended to out for the sandbox. -EBADMSG for a response
 * that cannot be framed, -EPROTO for a response nothing asked for (or a protocol switch), -EIO
 * for a compressed response (it cannot be searched for values): by its Content-Encoding while
 * any value is looked for, and, once a value went upstream on the flow, by its body's first bytes
 * (gzip, zstd, zlib) whatever its headers say; -ENOKEY when the values bound to the host cannot
 * be had (ops->bound_value failed). */
ssize_t netns_http_flow_response(struct netns_http_flow *f, const uint8_t *buf, size_t len,
				 struct netns_buf *out, struct al_error *err);
/* Body bytes of the message under way in one direction that the flow would pass on as they are,
 * unread: what is left of a request's Content-Length body when nothing is searched in it (the
 * flow has no surrogates), or of a response's Content-Length body (UINT64_MAX for one the close
 * ends) when no real value is looked for in it and it keeps its framing; 0 otherwise. The caller
 * may move up to that many bytes from one side to the other itself, after all that the flow gave
 * it for that side is out, and then tells the flow with ..._skip() (n at most what _raw()
 * said). */
uint64_t netns_http_flow_request_raw(const struct netns_http_flow *f);
void netns_http_flow_request_skip(struct netns_http_flow *f, uint64_t n);
uint64_t netns_http_flow_response_raw(const struct netns_http_flow *f);
void netns_http_flow_response_skip(struct netns_http_flow *f, uint64_t n);
/* Whether the flow waits for the sandbox's next request head (having none of it yet, or part of
 * it) with no response under way: the connection is idle, or a head comes slowly. */
bool netns_http_flow_idle(const struct netns_http_flow *f);
/* Whether the upstream's connection may carry another connection's requests: every request
 * answered in full, each answer framed by its length or chunks (not ended by the close), none told
 * to end the connection (an HTTP/1.0 request, an answer's Connection: close), none with a body (a
 * server that does not read one would take it for the next request), no protocol switch, no
 * refusal. */
bool netns_http_flow_upstream_reusable(const struct netns_http_flow *f);
/* Whether what was sent upstream so far may be sent again on another connection, when the one it
 * went on ended without a byte of answer (a kept connection whose server closed it as the request
 * came, RFC 9112 9.3.1): no response begun, every request sent idempotent (RFC 9110 9.2.2), no
 * protocol switch, no refusal. */
bool netns_http_flow_replayable(const struct netns_http_flow *f);
/* Whether the sandbox's side is over: its last request (Connection: close) is in, and its answer
 * out. */
bool netns_http_flow_done(const struct netns_http_flow *f);
/* With o->origin_switch: the head of the sandbox's request for another origin, held with every
 * byte before it taken (what comes after it is not), once every response before it is out: true,
 * and *head and *len give it (valid until the flow is freed). The caller goes on with that head
 * and what follows on the other origin's upstream, with a new flow. False while there is none,
 * or while answers are under way. */
bool netns_http_flow_other_origin(const struct netns_http_flow *f, const uint8_t **head,
				  size_t *len);
/* The upstream closed its side: ends a close-delimited body, flushing what was held back.
 * -EPIPE when a response was cut short (the caller then just closes the sandbox's side). */
int netns_http_flow_response_eof(struct netns_http_flow *f, struct netns_buf *out,
				 struct al_error *err);
/* After an error: appends a response with status (403, 400, 431, 502) and err's message to out,
 * if the sandbox's response stream is at a message boundary (else nothing can be said: false,
 * and the caller resets the connection, so that a cut-short response is not taken as whole). */
bool netns_http_flow_error_response(struct netns_http_flow *f, int status, const char *message,
				    struct netns_buf *out);

/* ---- http2.c: one inspected HTTP/2 connection, both sides ----
 *
 * Over intercepted TLS where both the sandbox and the upstream chose h2 (tls.c). Each of the
 * sandbox's streams becomes one of the upstream's, its messages judged as http-flow.c judges
 * HTTP/1.1's (same checks, swaps, refusals and un-swaps, with o), a refusal ending the stream
 * (ops->refused) and not the connection. The proxy feeds each side's bytes in and takes what is
 * to be sent to each out; a connection error (a protocol violation, a flood) is an error of
 * netns_h2_*_in(), after which the caller closes both sides. */
struct netns_h2;

/* o is borrowed and must outlive the connection. -ENOMEM only. */
int netns_h2_new(const struct netns_http_flow_options *o, struct netns_h2 **ret);
/* Wipes every value it holds. */
struct netns_h2 *netns_h2_free(struct netns_h2 *h);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct netns_h2 *, netns_h2_free);
/* Takes bytes from the sandbox, or from the upstream: how many (fewer than len, even none, while
 * what is queued for either side waits to be taken out: netns_h2_out(), then feed the rest),
 * -EBADMSG for a connection error (err says why), -ENOMEM. */
ssize_t netns_h2_sandbox_in(struct netns_h2 *h, const uint8_t *buf, size_t len,
			    struct al_error *err);
ssize_t netns_h2_upstream_in(struct netns_h2 *h, const uint8_t *buf, size_t len,
			     struct al_error *err);
/* Appends what is to be sent to each side, while each buffer is under NETNS_HTTP_FLOW_OUT_MAX. */
int netns_h2_out(struct netns_h2 *h, struct netns_buf *to_sandbox, struct netns_buf *to_upstream,
		 struct al_error *err);
/* The upstream closed: the streams under way are ended, and the sandbox told (GOAWAY). */
void netns_h2_upstream_eof(struct netns_h2 *h);
/* No stream is open. */
bool netns_h2_idle(const struct netns_h2 *h);
/* The sandbox's side has nothing more to say or hear: the connection may close. */
bool netns_h2_done(const struct netns_h2 *h);

/* ---- ws.c: WebSocket frames (RFC 6455 5), as the proxy relays them ----
 *
 * After an HTTP/1.1 Upgrade (or an HTTP/2 extended CONNECT, RFC 8441) the connection carries
 * frames both ways. A parser per direction takes bytes as they come and gives out, one at a time,
 * each frame's head, its payload in pieces (never gathered: memory stays bounded whatever the
 * frame's length) and its end. No extension is ever negotiated through the proxy, so the parser
 * is strict: RSV bits, an unknown opcode, a control frame longer than 125 bytes or fragmented, a
 * continuation without a message or a new message within one, a length not in its shortest form
 * or past 2^63-1, a Close payload of one byte, a client frame without a mask or a server frame
 * with one are -EBADMSG (err says why). */
#define NETNS_WS_HEAD_MAX 14	 /* 2 + 8 (length) + 4 (mask) */
#define NETNS_WS_CONTROL_MAX 125 /* a control frame's payload */

enum netns_ws_opcode {
	NETNS_WS_CONT = 0x0,
	NETNS_WS_TEXT = 0x1,
	NETNS_WS_BINARY = 0x2,
	NETNS_WS_CLOSE = 0x8,
	NETNS_WS_PING = 0x9,
	NETNS_WS_PONG = 0xa,
};

static inline bool netns_ws_is_control(uint8_t opcode)
{
	return opcode >= NETNS_WS_CLOSE;
}

struct netns_ws_frame {
	bool fin;
	uint8_t opcode; /* enum netns_ws_opcode */
	bool masked;
	uint8_t mask[4];
	uint64_t len; /* of the payload */
};

enum netns_ws_event_kind {
	NETNS_WS_MORE, /* more bytes are needed */
	NETNS_WS_HEAD, /* a frame's head: ev.frame */
	NETNS_WS_DATA, /* payload bytes, still masked as they came: ev.data, ev.n at ev.offset */
	NETNS_WS_END,  /* the frame's payload is complete */
};

struct netns_ws_event {
	enum netns_ws_event_kind kind;
	const struct netns_ws_frame *frame; /* the current frame (HEAD, DATA, END) */
	const uint8_t *data;		    /* DATA: into the bytes fed */
	size_t n;
	uint64_t offset;  /* DATA: of data[0] in the payload (for the mask) */
	bool message_end; /* END: the frame ends a data message (FIN on a text/binary/cont) */
};

struct netns_ws_parser {
	bool client; /* the sandbox's side: frames are masked */
	uint8_t head[NETNS_WS_HEAD_MAX];
	size_t head_n;
	bool in_frame; /* the head is parsed; payload (or its END) is next */
	struct netns_ws_frame frame;
	uint64_t done;	 /* payload bytes given out */
	bool in_message; /* a fragmented data message is under way */
};

/* A parser for frames from the client (masked) or from the server. */
static inline void netns_ws_parser_init(struct netns_ws_parser *ps, bool client)
{
	*ps = (struct netns_ws_parser){.client = client};
}
/* Takes what it can of buf (len bytes): returns the bytes consumed (0 is possible, e.g. before
 * an END), with *ev the next event; NETNS_WS_MORE when buf is used up without one. -EBADMSG. */
ssize_t netns_ws_parse(struct netns_ws_parser *ps, const uint8_t *buf, size_t len,
		       struct netns_ws_event *ev, struct al_error *err);
/* Whether the parser is between frames (and within no message, with message too). */
bool netns_ws_parser_at_boundary(const struct netns_ws_parser *ps, bool message);
/* XORs p (n bytes at offset of a payload) with mask, in place: masks and unmasks. */
void netns_ws_mask(const uint8_t mask[4], uint64_t offset, uint8_t *p, size_t n);
/* Writes a frame head for a payload of len bytes (masked when mask is not NULL) into dst;
 * returns its length (at most NETNS_WS_HEAD_MAX). */
size_t netns_ws_put_head(uint8_t dst[static NETNS_WS_HEAD_MAX], bool fin, uint8_t opcode,
			 const uint8_t *mask, uint64_t len);
/* The Sec-WebSocket-Accept for a Sec-WebSocket-Key (key_len bytes; RFC 6455 4.2.2): base64 of
 * SHA-1 of the key and the protocol's GUID, NUL-terminated. -EINVAL when the key is not base64
 * of 16 bytes, -ENOMEM. */
#define NETNS_WS_ACCEPT_LEN 28
int netns_ws_accept(const char *key, size_t key_len, char ret[static NETNS_WS_ACCEPT_LEN + 1]);

/* ---- tls.c: TLS interception (OpenSSL 3 is used here only) ----
 *
 * A per-sandbox certificate authority, made in memory at launch (P-256; its key never leaves
 * airlock's memory), mints a leaf certificate per name (cached); towards the upstream, TLS is
 * verified against the host's CA store or a given CA file. Connections are non-blocking: a call
 * that would block returns -EAGAIN and netns_tls_wants() says on what to wait. */
struct netns_tls;
struct netns_tls_conn;

/* upstream_ca_file: a PEM file of the CAs that upstreams are verified against; NULL: the host's
 * default store. Errors name what failed. */
int netns_tls_new(const char *upstream_ca_file, struct netns_tls **ret, struct al_error *err);
struct netns_tls *netns_tls_free(struct netns_tls *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct netns_tls *, netns_tls_free);
/* The CA certificate, PEM, NUL-terminated (borrowed): what the sandbox trusts. */
const char *netns_tls_ca_pem(const struct netns_tls *t);

/* The sandbox's side of an intercepted connection on fd (borrowed; the ClientHello is still
 * unread in it): TLS 1.2+ as a server for name with a minted leaf, ALPN http/1.1 (and h2 once
 * netns_tls_allow_h2() says so). */
int netns_tls_accept(struct netns_tls *t, int fd, const char *name, struct netns_tls_conn **ret,
		     struct al_error *err);
/* The upstream's side on fd (borrowed, connecting or connected): TLS 1.2+ as a client with SNI
 * name, the certificate verified for name, ALPN http/1.1 (h2 and http/1.1 with offer_h2). */
int netns_tls_connect(struct netns_tls *t, int fd, const char *name, bool offer_h2,
		      struct netns_tls_conn **ret, struct al_error *err);
/* A client side offers the one protocol name proto in ALPN instead (Postgres: "postgresql");
 * called before its handshake. */
int netns_tls_offer_alpn(struct netns_tls_conn *c, const char *proto);
/* A server side may choose h2 when the client offers it; called before its handshake. */
void netns_tls_allow_h2(struct netns_tls_conn *c, bool allow);
/* Whether the handshake chose h2. */
bool netns_tls_is_h2(const struct netns_tls_conn *c);
struct netns_tls_conn *netns_tls_conn_free(struct netns_tls_conn *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct netns_tls_conn *, netns_tls_conn_free);

/* Advances the handshake: 0 done, -EAGAIN, -ECONNRESET (peer closed), -EPROTO (err says why,
 * e.g. the upstream's certificate failed verification and how). */
int netns_tls_handshake(struct netns_tls_conn *c, struct al_error *err);
/* Reads decrypted bytes: > 0, 0 at the peer's clean close (close_notify or EOF), -EAGAIN,
 * -ECONNRESET, -EPROTO. */
ssize_t netns_tls_read(struct netns_tls_conn *c, void *buf, size_t n);
/* Writes: > 0 bytes taken (may be fewer than n), -EAGAIN (call again with the same bytes),
 * -EPIPE, -EPROTO. */
ssize_t netns_tls_write(struct netns_tls_conn *c, const void *buf, size_t n);
/* Sends close_notify (best effort, never blocks). */
void netns_tls_close(struct netns_tls_conn *c);
/* After -EAGAIN: EPOLLIN and/or EPOLLOUT, what the connection waits for on its fd. */
uint32_t netns_tls_wants(const struct netns_tls_conn *c);
/* An edge-triggered readiness event on c's fd said it may have bytes (read_on: or its end, an
 * error or urgent data, where a TCP read stops short too). A user that calls this for every
 * such event, from the first on, lets c skip the read that would say EAGAIN: a short read says
 * the socket is read out until the next event. */
void netns_tls_readable(struct netns_tls_conn *c, bool read_on);
/* Bytes are buffered in OpenSSL (decrypted, or records read ahead from the socket, whole or in
 * part): the fd may be idle while a read would still return data. Read until -EAGAIN before
 * waiting on the fd. */
bool netns_tls_pending(const struct netns_tls_conn *c);
/* While on, what c writes (the records of netns_tls_write(), up to 64 KiB; then -EAGAIN) waits
 * in its queue for the user to send: netns_tls_queued() shows it, netns_tls_queued_sent() drops
 * what was sent of it. Off, every write (a handshake's, a close_notify, a read's reply) sends
 * the queue first; netns_tls_flush() sends it alone: 0 when it is out, -EAGAIN, -errno. A user
 * that queues decides when its bytes leave: before an end (netns_tls_close()), the queue must
 * be out. */
void netns_tls_queue(struct netns_tls_conn *c, bool on);
const uint8_t *netns_tls_queued(const struct netns_tls_conn *c, size_t *len);
void netns_tls_queued_sent(struct netns_tls_conn *c, size_t n);
int netns_tls_flush(struct netns_tls_conn *c);

/* Whether name is bound to one of p's credentials (a host or "*.suffix" of its hosts): TLS to it
 * is intercepted so that surrogates can be swapped. */
bool netns_name_is_bound(const struct policy *p, const char *name);

/* ---- lookup.c: names to upstream addresses, off the proxy's thread ----
 *
 * The proxy's event loop must not wait for the host's resolver: getaddrinfo() runs in one
 * worker thread, and answers come back through an eventfd. Names pinned by the policy
 * (network.resolve, --resolve) are answered at once, without the worker. */
#define NETNS_LOOKUP_ADDRS_MAX 8

struct netns_addr {
	int family; /* AF_INET or AF_INET6 */
	uint8_t addr[16];
};

static inline bool netns_addr_equal(const struct netns_addr *a, const struct netns_addr *b)
{
	return a->family == b->family &&
	       memcmp(a->addr, b->addr, a->family == AF_INET ? 4 : 16) == 0;
}

struct sockaddr;
/* sa as a netns_addr; false when it is neither IPv4 nor IPv6 (ret is left alone). */
bool netns_addr_from_sockaddr(const struct sockaddr *sa, struct netns_addr *ret);

struct netns_lookup_answer {
	void *cookie;
	int error; /* 0, or -errno (-ENOENT: no such name, -EAGAIN: try later) */
	size_t n;
	struct netns_addr addrs[NETNS_LOOKUP_ADDRS_MAX];
};

struct netns_lookup;

int netns_lookup_new(const struct policy *p, struct netns_lookup **ret);
/* Stops and joins the worker; unanswered questions are dropped. */
struct netns_lookup *netns_lookup_free(struct netns_lookup *l);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct netns_lookup *, netns_lookup_free);
/* Readable when answers wait (an eventfd). */
int netns_lookup_fd(const struct netns_lookup *l);
/* A pinned name's address into ret (0), or -ENOENT when name is not pinned. */
int netns_lookup_pinned(const struct netns_lookup *l, const char *name, struct netns_addr *ret);
/* A name the policy pins (network.resolve) to a, and that a credential is bound to, or NULL. */
const char *netns_pinned_bound_name(const struct policy *p, const struct netns_addr *a);
/* Asks for name's addresses; the answer carries cookie. -ENOMEM, -EBUSY (too many waiting). */
int netns_lookup_start(struct netns_lookup *l, const char *name, void *cookie);
/* Takes one answer: 0, or -EAGAIN when none waits. */
int netns_lookup_take(struct netns_lookup *l, struct netns_lookup_answer *ret);
