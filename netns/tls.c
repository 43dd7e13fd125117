/* TLS interception for the egress proxy, with OpenSSL 3 (the only user of OpenSSL in airlock).
 *
 * Each sandbox gets its own certificate authority, made in memory at launch: a P-256 key and a
 * self-signed certificate that the sandbox trusts. The CA mints one leaf certificate per name,
 * on first use, all for one shared P-256 leaf key; leaves are cached (the least recently used
 * goes first past LEAF_CACHE_MAX names). Towards the upstream the proxy is an ordinary verifying
 * client. Neither key is ever written anywhere; both die with the netns_tls.
 *
 * Decisions worth knowing:
 * - Validity. The CA is valid from an hour ago (a client whose clock lags a little still accepts
 *   it) for CA_LIFETIME (7 days), and no leaf outlives it. The period protects nothing, since
 *   the key never leaves this process and only this sandbox trusts the certificate; it only has
 *   to cover the sandbox's life. A sandbox running longer than that (no timeout) loses
 *   intercepted TLS: minting then fails with -EKEYEXPIRED and leaves already given expire.
 * - ALPN. The proxy speaks HTTP/1.1, and HTTP/2 where both ends do: the upstream is offered h2
 *   only when the sandbox offered it (netns_tls_connect()'s offer_h2), and the sandbox gets h2
 *   only when the upstream chose it (netns_tls_allow_h2(), before the sandbox's handshake), so
 *   that both sides of a connection speak the same version. Otherwise a client offering
 *   http/1.1 gets it, and one offering http/1.0 without it (`curl --http1.0`) gets http/1.0
 *   (its requests are HTTP/1.0, which the flow passes on to an upstream offered http/1.1, as
 *   any HTTP/1.1 server takes them); one offering no ALPN at all gets none (HTTP/1.1 is what
 *   TLS without ALPN means). One offering protocols but not one it may have (say h2 alone,
 *   toward an upstream that chose HTTP/1.1) is refused with the fatal no_application_protocol
 *   alert, as RFC 7301
 *   3.2 requires: proceeding without ALPN would leave such a client to speak h2 at an HTTP/1.1
 *   parser and fail later with a less clear error.
 * - End of stream. netns_tls_read() returns 0 at close_notify and also at a bare EOF
 *   (SSL_OP_IGNORE_UNEXPECTED_EOF): many servers just close, and every message the proxy
 *   passes on is framed by HTTP, so a truncation is seen there (netns_http_flow_response_eof).
 * - Suites. TLS 1.3's AES-128-GCM first, and the server side chooses (CIPHERSUITES).
 * - Resumption. The server side issues one TLS session ticket per connection (stateless, keys
 *   random per netns_tls). The client side keeps the upstream's last SESSIONS_PER_NAME
 *   sessions per name (for SESSION_CACHE_MAX names, SESSIONS_MAX in all: enough for the
 *   tickets of as many connections at once as a client opens, each of which takes one; with 4,
 *   a client keeping 32 connections busy resumed one handshake in three). A TLS 1.2 session
 *   serves as long as it lasts, a TLS 1.3 one once (RFC 8446 C.4): it leaves the cache when
 *   taken, since OpenSSL itself retires it only when its handshake ends, and connections in
 *   parallel would offer the same ticket. A resumed session was verified for that same name.
 * - I/O goes through a small BIO of our own on the borrowed fd: send() with MSG_NOSIGNAL (a
 *   peer that went away is an error to return, not a SIGPIPE), and exact socket errors.
 *   Read-ahead is on: OpenSSL takes what the socket holds in one recv() (a record's header and
 *   body, and the records after it) rather than two per record, so whole records may wait in
 *   its buffers while the fd looks idle (netns_tls_pending() tells). A connection's user must
 *   therefore read until -EAGAIN (which means the socket is drained and no whole record is
 *   held) and never decide on the fd's readiness alone: the proxy does (proxy-relay.c).
 *   A user that tells netns_tls_readable() of every readiness event on the fd saves the
 *   system call of that last read: a recv() shorter than asked says the socket is read out,
 *   and until the next event the BIO answers EAGAIN itself.
 *   Writes may be queued instead (netns_tls_queue()): the BIO appends the records to the
 *   connection's queue, for the user to send with its other sends (the proxy's ring,
 *   proxy-send.c); a full queue is EAGAIN, and a write made with the queue off sends it first,
 *   so the records keep their order.
 *
 * A netns_tls and its connections are used from one thread, and every connection is freed
 * before the netns_tls that made it (they share its BIO method and session cache). */

#include <arpa/inet.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "common/error.h"
#include "common/macro.h"
#include "netns/netns-internal.h"

#define CA_BACKDATE (60 * 60)
#define CA_LIFETIME (7 * 24 * 60 * 60)
#define CN_MAX 64 /* ub-common-name (RFC 5280 A.1); longer names go in the SAN only */
#define LEAF_CACHE_MAX 1024
#define SESSION_CACHE_MAX 256
#define SESSIONS_PER_NAME 32
#define SESSIONS_MAX 512 /* in all, of every name */
#define SERVER_SESSION_CACHE_MAX 1024
#define SERIAL_BYTES 16
/* Records queued for a user's send at most (netns_tls_queue()), and kept allocated between
 * sends: a keep-alive answer's record or two stays under it. */
#define TLS_QUEUED_MAX (64 * 1024)
#define TLS_QUEUED_KEPT (16 * 1024)
/* TLS 1.3's suites, AES-128 first: its key schedule runs on SHA-256, which CPUs compute in
 * hardware (SHA-384's SHA-512 blocks are software), at the 128-bit level that x25519 and P-256
 * give anyway. */
#define CIPHERSUITES "TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_256_GCM_SHA384"

static const unsigned char alpn_http11[] = "\x08http/1.1";
static const unsigned char alpn_http10[] = "\x08http/1.0";
static const unsigned char alpn_h2[] = "\x02h2";
static const unsigned char alpn_h2_http11[] = "\x02h2\x08http/1.1";

DEFINE_TRIVIAL_CLEANUP_FUNC(X509 *, X509_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(X509_EXTENSION *, X509_EXTENSION_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(GENERAL_NAMES *, GENERAL_NAMES_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(GENERAL_NAME *, GENERAL_NAME_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(ASN1_IA5STRING *, ASN1_IA5STRING_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(BIGNUM *, BN_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(BIO *, BIO_free_all);
DEFINE_TRIVIAL_CLEANUP_FUNC(SSL_CTX *, SSL_CTX_free);

/* ---- A bounded map from names to values, the least recently used evicted first ----
 *
 * For the leaves and the upstream sessions. The names come from the sandbox, so the entries are
 * capped; the table has at least twice as many buckets as entries. */
struct lru_entry {
	struct lru_entry *chain;	 /* the next in its bucket */
	struct lru_entry *newer, *older; /* the order of use */
	void *value;
	char name[];
};

struct lru {
	struct lru_entry **buckets;
	size_t n_buckets, n, max;
	struct lru_entry *newest, *oldest;
	void (*free_value)(void *value);
};

static int lru_init(struct lru *c, size_t max, void (*free_value)(void *value))
{
	size_t n = 1;

	while (n < 2 * max)
		n <<= 1;
	*c = (struct lru){.n_buckets = n, .max = max, .free_value = free_value};
	c->buckets = calloc(n, sizeof(*c->buckets));
	return c->buckets ? 0 : -ENOMEM;
}

/* FNV-1a. A sandbox choosing colliding names only lengthens its own chains, which the cap
 * bounds. */
static struct lru_entry **lru_slot(const struct lru *c, const char *name)
{
	uint64_t h = UINT64_C(14695981039346656037);
	struct lru_entry **e;

	for (const char *p = name; *p; p++)
		h = (h ^ (uint8_t)*p) * UINT64_C(1099511628211);
	for (e = &c->buckets[h & (c->n_buckets - 1)]; *e; e = &(*e)->chain)
		if (streq((*e)->name, name))
			break;
	return e;
}

static void lru_unlink(struct lru *c, struct lru_entry *e)
{
	*(e->newer ? &e->newer->older : &c->newest) = e->older;
	*(e->older ? &e->older->newer : &c->oldest) = e->newer;
}

static void lru_push(struct lru *c, struct lru_entry *e)
{
	e->newer = NULL;
	e->older = c->newest;
	*(c->newest ? &c->newest->newer : &c->oldest) = e;
	c->newest = e;
}

static void lru_evict(struct lru *c, struct lru_entry *e)
{
	struct lru_entry **slot = lru_slot(c, e->name);

	*slot = e->chain;
	lru_unlink(c, e);
	c->free_value(e->value);
	free(e);
	c->n--;
}

/* The value for name (borrowed), which becomes the most recently used, or NULL. */
static void *lru_get(struct lru *c, const char *name)
{
	struct lru_entry *e = *lru_slot(c, name);

	if (!e)
		return NULL;
	lru_unlink(c, e);
	lru_push(c, e);
	return e->value;
}

/* Adds name, which is not there yet, with value (taken on success), evicting the least
 * recently used entry when full. */
static int lru_add(struct lru *c, const char *name, void *value)
{
	size_t len = strlen(name);
	struct lru_entry *e;

	e = malloc(sizeof(*e) + len + 1);
	if (!e)
		return -ENOMEM;
	if (c->n == c->max)
		lru_evict(c, c->oldest);
	memcpy(e->name, name, len + 1);
	e->value = value;
	e->chain = NULL;
	*lru_slot(c, name) = e;
	lru_push(c, e);
	c->n++;
	return 0;
}

static void lru_done(struct lru *c)
{
	while (c->oldest)
		lru_evict(c, c->oldest);
	free(c->buckets);
	c->buckets = NULL;
}

/* ---- The CA and its leaves ---- */

struct session_slot {
	size_t *total; /* the netns_tls's count of sessions held */
	size_t n;
	SSL_SESSION *sessions[SESSIONS_PER_NAME]; /* the oldest first */
};

struct netns_tls {
	EVP_PKEY *ca_key, *leaf_key;
	X509 *ca;
	char *ca_pem;
	time_t not_before, not_after; /* the CA's validity */
	SSL_CTX *server, *client;
	bool client_trusts; /* the client's CA store is loaded */
	BIO_METHOD *bio_method;
	struct lru leaves;   /* name -> X509 */
	struct lru sessions; /* name -> struct session_slot, of upstream sessions */
	size_t n_sessions;   /* held in all the slots */
};

struct netns_tls_conn {
	SSL *ssl;
	int fd;
	bool server;
	bool eof;	   /* the fd read EOF */
	bool failed;	   /* a fatal error: no close_notify may follow */
	bool closed;	   /* close_notify was sent (or tried) */
	bool alpn_refused; /* the client offered ALPN without HTTP/1.x */
	bool h2_allowed;   /* server: h2 may be chosen (netns_tls_allow_h2()) */
	bool events;	   /* netns_tls_readable() is told of every readiness event */
	bool drained;	   /* ... and none came since the socket was read out */
	bool read_on;	   /* ... and one said its end, an error or urgent data came */
	int io_error;	   /* the last socket error, -errno */
	uint32_t wants;	   /* EPOLLIN/EPOLLOUT after -EAGAIN */
	bool queue;	   /* writes wait in queued (netns_tls_queue()) */

	struct netns_buf queued; /* records made and not sent yet */
	char name[];
};

/* Fills err with what failed and OpenSSL's reason for it (the earliest queued error), and
 * empties this thread's error queue, so that no later call mistakes it for its own. Returns
 * -ENOMEM when OpenSSL ran out of memory, else code. */
_printf_(3, 4) static int tls_error(struct al_error *err, int code, const char *fmt, ...)
{
	char what[AL_ERROR_MSG_MAX], reason[256] = "unknown error";
	unsigned long e = ERR_get_error();
	va_list ap;

	if (e != 0) {
		ERR_error_string_n(e, reason, sizeof(reason));
		if (ERR_GET_REASON(e) == ERR_R_MALLOC_FAILURE)
			code = -ENOMEM;
	}
	ERR_clear_error();
	va_start(ap, fmt);
	(void)vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return al_error_set(err, code, "%s: %s", what, reason);
}

/* Names come from the policy and from the sandbox's SNI (checked by netns_tls_parse_hello());
 * they are checked again here since they go into certificates and onto the wire. */
static int check_name(const char *name, struct al_error *err)
{
	static const char host_chars[] = "abcdefghijklmnopqrstuvwxyz"
					 "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
					 "0123456789.-_";
	size_t n = strnlen(name, NETNS_DNS_NAME_MAX + 1);
	struct in_addr a;

	if (n == 0 || n > NETNS_DNS_NAME_MAX || strspn(name, host_chars) != n || name[0] == '.' ||
	    name[n - 1] == '.' || strstr(name, ".."))
		return al_error_set(err, -EINVAL, "\"%.*s\" is not a host name", NETNS_DNS_NAME_MAX,
				    name);
	if (inet_pton(AF_INET, name, &a) == 1)
		return al_error_set(err, -EINVAL, "%s is an IP address, not a host name", name);
	return 0;
}

static int make_key(EVP_PKEY **ret, struct al_error *err)
{
	EVP_PKEY *k = EVP_EC_gen("P-256");

	if (!k)
		return tls_error(err, -EIO, "Failed to generate a P-256 key");
	*ret = k;
	return 0;
}

static int set_random_serial(X509 *x)
{
	_cleanup_(BN_freep) BIGNUM *bn = NULL;
	uint8_t b[SERIAL_BYTES];

	if (RAND_bytes(b, sizeof(b)) != 1)
		return 0;
	b[0] |= 0x01; /* never zero (RFC 5280 4.1.2.2); BN_bin2bn() makes it positive */
	bn = BN_bin2bn(b, sizeof(b), NULL);
	return bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x));
}

/* A version 3 certificate for key with a random serial, the subject CN=cn (none when NULL) and
 * the given validity, yet without issuer, extensions or signature. */
static int cert_new(const char *cn, EVP_PKEY *key, time_t not_before, time_t not_after, X509 **ret)
{
	_cleanup_(X509_freep) X509 *x = X509_new();

	if (!x || !X509_set_version(x, X509_VERSION_3) || !set_random_serial(x) ||
	    !ASN1_TIME_set(X509_getm_notBefore(x), not_before) ||
	    !ASN1_TIME_set(X509_getm_notAfter(x), not_after) || !X509_set_pubkey(x, key))
		return 0;
	if (cn && !X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_UTF8,
					      (const unsigned char *)cn, -1, -1, 0))
		return 0;
	*ret = TAKE_PTR(x);
	return 1;
}

/* Adds an extension written in OpenSSL's configuration syntax (constants only). */
static int cert_add_ext(X509 *x, X509V3_CTX *v3, int nid, const char *value)
{
	_cleanup_(X509_EXTENSION_freep) X509_EXTENSION *ext =
	    X509V3_EXT_conf_nid(NULL, v3, nid, value);

	return ext && X509_add_ext(x, ext, -1);
}

/* subjectAltName DNS:name, built from its parts (a name is never parsed as configuration). */
static int cert_add_san(X509 *x, const char *name, bool critical)
{
	_cleanup_(GENERAL_NAMES_freep) GENERAL_NAMES *names = GENERAL_NAMES_new();
	_cleanup_(GENERAL_NAME_freep) GENERAL_NAME *gn = GENERAL_NAME_new();
	_cleanup_(ASN1_IA5STRING_freep) ASN1_IA5STRING *dns = ASN1_IA5STRING_new();

	if (!names || !gn || !dns || !ASN1_STRING_set(dns, name, -1))
		return 0;
	GENERAL_NAME_set0_value(gn, GEN_DNS, TAKE_PTR(dns));
	if (!sk_GENERAL_NAME_push(names, gn))
		return 0;
	gn = NULL;
	return X509_add1_ext_i2d(x, NID_subject_alt_name, names, critical, X509V3_ADD_DEFAULT) == 1;
}

static int make_ca(struct netns_tls *t, struct al_error *err)
{
	_cleanup_(X509_freep) X509 *x = NULL;
	uint8_t id[8];
	char cn[64];
	X509V3_CTX v3;
	time_t now = time(NULL);

	t->not_before = now - CA_BACKDATE;
	t->not_after = now + CA_LIFETIME;
	if (RAND_bytes(id, sizeof(id)) != 1)
		return tls_error(err, -EIO, "Failed to get random bytes for the CA's name");
	(void)snprintf(cn, sizeof(cn), "airlock sandbox CA %02x%02x%02x%02x%02x%02x%02x%02x", id[0],
		       id[1], id[2], id[3], id[4], id[5], id[6], id[7]);
	if (!cert_new(cn, t->ca_key, t->not_before, t->not_after, &x) ||
	    !X509_set_issuer_name(x, X509_get_subject_name(x)))
		return tls_error(err, -EIO, "Failed to make the sandbox CA certificate");
	X509V3_set_ctx(&v3, x, x, NULL, NULL, 0);
	if (!cert_add_ext(x, &v3, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") ||
	    !cert_add_ext(x, &v3, NID_key_usage, "critical,keyCertSign,cRLSign") ||
	    !cert_add_ext(x, &v3, NID_subject_key_identifier, "hash"))
		return tls_error(err, -EIO,
				 "Failed to add extensions to the sandbox CA certificate");
	if (X509_sign(x, t->ca_key, EVP_sha256()) <= 0)
		return tls_error(err, -EIO, "Failed to sign the sandbox CA certificate");
	t->ca = TAKE_PTR(x);
	return 0;
}

static int make_ca_pem(struct netns_tls *t, struct al_error *err)
{
	_cleanup_(BIO_free_allp) BIO *b = BIO_new(BIO_s_mem());
	char *data;
	long len;

	if (!b || !PEM_write_bio_X509(b, t->ca))
		return tls_error(err, -EIO, "Failed to write the sandbox CA certificate as PEM");
	len = BIO_get_mem_data(b, &data);
	t->ca_pem = strndup(data, (size_t)len);
	return t->ca_pem ? 0 : -ENOMEM;
}

/* A leaf for name, signed by the CA: valid from an hour ago (not before the CA) until the CA
 * expires, for TLS servers only. */
static int leaf_mint(struct netns_tls *t, const char *name, X509 **ret, struct al_error *err)
{
	_cleanup_(X509_freep) X509 *x = NULL;
	bool has_cn = strlen(name) <= CN_MAX;
	time_t now = time(NULL);
	X509V3_CTX v3;

	if (now >= t->not_after)
		return al_error_set(err, -EKEYEXPIRED,
				    "Cannot mint a certificate for %s: the sandbox CA has expired",
				    name);
	/* Without a subject, the SAN is the only identity and must be critical (RFC 5280
	 * 4.2.1.6). */
	if (!cert_new(has_cn ? name : NULL, t->leaf_key, MAX(now - CA_BACKDATE, t->not_before),
		      t->not_after, &x) ||
	    !X509_set_issuer_name(x, X509_get_subject_name(t->ca)) ||
	    !cert_add_san(x, name, !has_cn))
		return tls_error(err, -EIO, "Failed to make a certificate for %s", name);
	X509V3_set_ctx(&v3, t->ca, x, NULL, NULL, 0);
	if (!cert_add_ext(x, &v3, NID_key_usage, "critical,digitalSignature") ||
	    !cert_add_ext(x, &v3, NID_ext_key_usage, "serverAuth") ||
	    !cert_add_ext(x, &v3, NID_authority_key_identifier, "keyid:always"))
		return tls_error(err, -EIO, "Failed to add extensions to the certificate for %s",
				 name);
	if (X509_sign(x, t->ca_key, EVP_sha256()) <= 0)
		return tls_error(err, -EIO, "Failed to sign the certificate for %s", name);
	*ret = TAKE_PTR(x);
	return 0;
}

/* The leaf for name (borrowed from the cache), minted on first use. */
static int leaf_get(struct netns_tls *t, const char *name, X509 **ret, struct al_error *err)
{
	X509 *x = lru_get(&t->leaves, name);
	int r;

	if (!x) {
		r = leaf_mint(t, name, &x, err);
		if (r < 0)
			return r;
		r = lru_add(&t->leaves, name, x);
		if (r < 0) {
			X509_free(x);
			return r;
		}
	}
	*ret = x;
	return 0;
}

static void leaf_free(void *p)
{
	X509_free(p);
}

/* ---- Upstream sessions, per name ---- */

static void session_slot_free(void *p)
{
	struct session_slot *s = p;

	for (size_t i = 0; i < s->n; i++)
		SSL_SESSION_free(s->sessions[i]);
	*s->total -= s->n;
	free(s);
}

/* Keeps s (one reference, taken on success) as name's newest session. */
static int session_put(struct netns_tls *t, const char *name, SSL_SESSION *s)
{
	struct session_slot *slot = lru_get(&t->sessions, name);
	int r;

	if (!slot) {
		slot = calloc(1, sizeof(*slot));
		if (!slot)
			return -ENOMEM;
		slot->total = &t->n_sessions;
		r = lru_add(&t->sessions, name, slot);
		if (r < 0) {
			free(slot);
			return r;
		}
	}
	if (slot->n == SESSIONS_PER_NAME) {
		SSL_SESSION_free(slot->sessions[0]);
		memmove(slot->sessions, slot->sessions + 1,
			(SESSIONS_PER_NAME - 1) * sizeof(slot->sessions[0]));
		slot->n--;
		t->n_sessions--;
	}
	/* Full: the sessions held serve as well as this one would. */
	if (t->n_sessions >= SESSIONS_MAX)
		return -ENOSPC;
	slot->sessions[slot->n++] = s;
	t->n_sessions++;
	return 0;
}

/* The newest usable session for name (a reference for the caller), or NULL. A TLS 1.3 session
 * leaves the cache: its ticket is for one use. */
static SSL_SESSION *session_take(struct netns_tls *t, const char *name)
{
	struct session_slot *slot = lru_get(&t->sessions, name);
	time_t now = time(NULL);

	while (slot && slot->n > 0) {
		SSL_SESSION *s = slot->sessions[--slot->n];

		t->n_sessions--;
		if (!SSL_SESSION_is_resumable(s) ||
		    SSL_SESSION_get_time(s) + SSL_SESSION_get_timeout(s) <= now) {
			SSL_SESSION_free(s);
			continue;
		}
		if (SSL_SESSION_get_protocol_version(s) < TLS1_3_VERSION && SSL_SESSION_up_ref(s)) {
			slot->n++;
			t->n_sessions++;
		}
		return s;
	}
	return NULL;
}

/* OpenSSL hands the client a session it may resume (after the handshake in TLS 1.2, with each
 * NewSessionTicket in TLS 1.3). Returns 1 when it keeps the reference. */
static int client_new_session(SSL *ssl, SSL_SESSION *s)
{
	struct netns_tls *t = SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl));
	struct netns_tls_conn *c = SSL_get_app_data(ssl);

	return session_put(t, c->name, s) >= 0;
}

/* ---- The sockets: a BIO on the borrowed fd ---- */

static int bio_sock_read(BIO *b, char *buf, size_t n, size_t *ret)
{
	struct netns_tls_conn *c = BIO_get_data(b);
	ssize_t k;

	BIO_clear_retry_flags(b);
	if (c->drained) {
		BIO_set_retry_read(b);
		return 0;
	}
	k = recv(c->fd, buf, n, 0);
	if (k < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
			BIO_set_retry_read(b);
			c->drained = c->events && errno != EINTR;
		} else {
			c->io_error = -errno;
		}
		return 0;
	}
	if (k == 0 && n > 0)
		c->eof = true;
	/* A TCP read stops short only where the queue ends: the next read would say EAGAIN
	 * (unless the end has come, which a read must see). */
	if ((size_t)k < n && k > 0 && c->events && !c->read_on)
		c->drained = true;
	*ret = (size_t)k;
	return k > 0;
}

int netns_tls_flush(struct netns_tls_conn *c)
{
	ssize_t k;

	while (netns_buf_len(&c->queued) > 0) {
		k = send(c->fd, netns_buf_head(&c->queued), netns_buf_len(&c->queued),
			 MSG_NOSIGNAL);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		netns_tls_queued_sent(c, (size_t)k);
	}
	return 0;
}

static int bio_sock_write(BIO *b, const char *buf, size_t n, size_t *ret)
{
	struct netns_tls_conn *c = BIO_get_data(b);
	ssize_t k = 0;
	int r;

	BIO_clear_retry_flags(b);
	if (c->queue) {
		/* Full: OpenSSL keeps the record and writes it again once the queue is sent. */
		if (netns_buf_len(&c->queued) >= TLS_QUEUED_MAX) {
			BIO_set_retry_write(b);
			return 0;
		}
		r = netns_buf_append(&c->queued, buf, n, SIZE_MAX);
		if (r < 0) {
			c->io_error = r;
			return 0;
		}
		*ret = n;
		return 1;
	}
	/* What was queued goes first. */
	r = netns_tls_flush(c);
	if (r == 0) {
		k = send(c->fd, buf, n, MSG_NOSIGNAL);
		r = k < 0 ? -errno : 0;
	}
	if (r < 0) {
		if (r == -EAGAIN || r == -EINTR)
			BIO_set_retry_write(b);
		else
			c->io_error = r;
		return 0;
	}
	*ret = (size_t)k;
	return 1;
}

static long bio_sock_ctrl(BIO *b, int cmd, long num, void *ptr)
{
	struct netns_tls_conn *c = BIO_get_data(b);

	switch (cmd) {
	case BIO_CTRL_FLUSH:
		return 1;
	case BIO_CTRL_EOF: /* how OpenSSL tells an EOF from an error */
		return c->eof;
	case BIO_C_GET_FD:
		if (ptr)
			*(int *)ptr = c->fd;
		return c->fd;
	default:
		return 0;
	}
}

/* The BIO's type has no index of its own: nothing looks it up by type, and
 * BIO_get_new_index() would spend one of a small process-wide range per netns_tls. */
static int make_bio_method(struct netns_tls *t, struct al_error *err)
{
	t->bio_method = BIO_meth_new(BIO_TYPE_SOURCE_SINK | BIO_TYPE_DESCRIPTOR, "airlock socket");
	if (!t->bio_method || !BIO_meth_set_read_ex(t->bio_method, bio_sock_read) ||
	    !BIO_meth_set_write_ex(t->bio_method, bio_sock_write) ||
	    !BIO_meth_set_ctrl(t->bio_method, bio_sock_ctrl))
		return tls_error(err, -EIO, "Failed to make a BIO method");
	return 0;
}

/* ---- Contexts ---- */

/* Whether the ALPN list in[0..inlen) offers proto (a length byte, then the name). */
static const unsigned char *alpn_find(const unsigned char *in, unsigned int inlen,
				      const unsigned char *proto)
{
	for (unsigned int i = 0; i < inlen; i += 1u + in[i]) {
		unsigned int n = in[i];

		if (n > inlen - i - 1)
			break;
		if (n == proto[0] && memcmp(in + i + 1, proto + 1, n) == 0)
			return in + i;
	}
	return NULL;
}

/* ALPN (RFC 7301 3.2): h2 when offered and allowed, else http/1.1 when offered, else http/1.0
 * when offered, else a fatal no_application_protocol alert; see the top of this file. */
static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
		       const unsigned char *in, unsigned int inlen, void *arg)
{
	struct netns_tls_conn *c = SSL_get_app_data(ssl);
	const unsigned char *p = NULL;

	(void)arg;
	if (c && c->h2_allowed)
		p = alpn_find(in, inlen, alpn_h2);
	if (!p)
		p = alpn_find(in, inlen, alpn_http11);
	if (!p)
		p = alpn_find(in, inlen, alpn_http10);
	if (p) {
		*out = p + 1;
		*outlen = p[0];
		return SSL_TLSEXT_ERR_OK;
	}
	if (c)
		c->alpn_refused = true;
	return SSL_TLSEXT_ERR_ALERT_FATAL;
}

/* What both sides share: TLS 1.2 at least, TLS 1.3's suites in CIPHERSUITES' order, no
 * renegotiation (TLS 1.2's; a DoS lever and nothing the proxy needs), an EOF read as a close,
 * writes that may be partial and retried from a moved buffer. */
static SSL_CTX *ctx_new(const SSL_METHOD *method)
{
	_cleanup_(SSL_CTX_freep) SSL_CTX *ctx = SSL_CTX_new(method);

	if (!ctx || !SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) ||
	    !SSL_CTX_set_ciphersuites(ctx, CIPHERSUITES))
		return NULL;
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_IGNORE_UNEXPECTED_EOF);
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	SSL_CTX_set_read_ahead(ctx, 1);
	return TAKE_PTR(ctx);
}

static int make_server_ctx(struct netns_tls *t, struct al_error *err)
{
	static const unsigned char sid_ctx[] = "airlock";

	t->server = ctx_new(TLS_server_method());
	if (!t->server || !SSL_CTX_set_session_id_context(t->server, sid_ctx, sizeof(sid_ctx) - 1))
		return tls_error(err, -EIO, "Failed to make the TLS server context");
	SSL_CTX_sess_set_cache_size(t->server, SERVER_SESSION_CACHE_MAX);
	/* The suite is ours to choose (CIPHERSUITES' order). One ticket a connection: a client
	 * resumes a connection with one, and gets a new one with each (OpenSSL's default, two,
	 * costs a second ticket's sealing and record on every handshake). */
	SSL_CTX_set_options(t->server, SSL_OP_CIPHER_SERVER_PREFERENCE);
	if (!SSL_CTX_set_num_tickets(t->server, 1))
		return tls_error(err, -EIO, "Failed to make the TLS server context");
	SSL_CTX_set_alpn_select_cb(t->server, alpn_select, NULL);
	return 0;
}

static int make_client_ctx(struct netns_tls *t, const char *ca_file, struct al_error *err)
{
	t->client = ctx_new(TLS_client_method());
	if (!t->client ||
	    SSL_CTX_set_alpn_protos(t->client, alpn_http11, sizeof(alpn_http11) - 1) != 0)
		return tls_error(err, -EIO, "Failed to make the TLS client context");
	SSL_CTX_set_verify(t->client, SSL_VERIFY_PEER, NULL);
	if (ca_file && !SSL_CTX_load_verify_locations(t->client, ca_file, NULL))
		return tls_error(err, -EIO, "Failed to load the upstream CA file %s", ca_file);
	t->client_trusts = ca_file != NULL;
	/* Sessions go to our cache only, keyed by name (OpenSSL's client cache has no lookup). */
	SSL_CTX_set_session_cache_mode(t->client,
				       SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
	SSL_CTX_sess_set_new_cb(t->client, client_new_session);
	if (!SSL_CTX_set_app_data(t->client, t))
		return tls_error(err, -EIO, "Failed to make the TLS client context");
	return 0;
}

int netns_tls_new(const char *upstream_ca_file, struct netns_tls **ret, struct al_error *err)
{
	_cleanup_(netns_tls_freep) struct netns_tls *t = NULL;
	int r;

	ERR_clear_error();
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	r = lru_init(&t->leaves, LEAF_CACHE_MAX, leaf_free);
	if (r >= 0)
		r = lru_init(&t->sessions, SESSION_CACHE_MAX, session_slot_free);
	if (r < 0)
		return r;
	r = make_key(&t->ca_key, err);
	if (r >= 0)
		r = make_key(&t->leaf_key, err);
	if (r >= 0)
		r = make_ca(t, err);
	if (r >= 0)
		r = make_ca_pem(t, err);
	if (r >= 0)
		r = make_bio_method(t, err);
	if (r >= 0)
		r = make_server_ctx(t, err);
	if (r >= 0)
		r = make_client_ctx(t, upstream_ca_file, err);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(t);
	return 0;
}

struct netns_tls *netns_tls_free(struct netns_tls *t)
{
	if (!t)
		return NULL;
	lru_done(&t->leaves);
	lru_done(&t->sessions);
	SSL_CTX_free(t->client);
	SSL_CTX_free(t->server);
	BIO_meth_free(t->bio_method);
	X509_free(t->ca);
	EVP_PKEY_free(t->leaf_key);
	EVP_PKEY_free(t->ca_key);
	free(t->ca_pem);
	free(t);
	return NULL;
}

const char *netns_tls_ca_pem(const struct netns_tls *t)
{
	return t->ca_pem;
}

/* ---- Connections ---- */

static int conn_new(struct netns_tls *t, bool server, int fd, const char *name,
		    struct netns_tls_conn **ret, struct al_error *err)
{
	_cleanup_(netns_tls_conn_freep) struct netns_tls_conn *c = NULL;
	size_t len = strlen(name);
	BIO *bio;

	c = calloc(1, sizeof(*c) + len + 1);
	if (!c)
		return -ENOMEM;
	c->fd = fd;
	c->server = server;
	memcpy(c->name, name, len + 1);
	c->ssl = SSL_new(server ? t->server : t->client);
	bio = BIO_new(t->bio_method);
	if (!c->ssl || !bio) {
		BIO_free(bio);
		return tls_error(err, -ENOMEM, "Failed to make a TLS connection for %s", name);
	}
	BIO_set_data(bio, c);
	BIO_set_init(bio, 1);
	SSL_set_bio(c->ssl, bio, bio);
	if (!SSL_set_app_data(c->ssl, c))
		return tls_error(err, -ENOMEM, "Failed to make a TLS connection for %s", name);
	*ret = TAKE_PTR(c);
	return 0;
}

int netns_tls_accept(struct netns_tls *t, int fd, const char *name, struct netns_tls_conn **ret,
		     struct al_error *err)
{
	_cleanup_(netns_tls_conn_freep) struct netns_tls_conn *c = NULL;
	X509 *leaf;
	int r;

	ERR_clear_error();
	r = check_name(name, err);
	if (r >= 0)
		r = leaf_get(t, name, &leaf, err);
	if (r >= 0)
		r = conn_new(t, true, fd, name, &c, err);
	if (r < 0)
		return r;
	if (!SSL_use_certificate(c->ssl, leaf) || !SSL_use_PrivateKey(c->ssl, t->leaf_key))
		return tls_error(err, -EIO, "Failed to use the certificate for %s", name);
	SSL_set_accept_state(c->ssl);
	*ret = TAKE_PTR(c);
	return 0;
}

/* The host's CA store is loaded on first use: parsing its bundle takes OpenSSL 3.0 some 20 ms,
 * which a sandbox that never connects to a bound host would pay at launch for nothing. */
static int load_host_store(struct netns_tls *t, struct al_error *err)
{
	if (t->client_trusts)
		return 0;
	if (!SSL_CTX_set_default_verify_paths(t->client))
		return tls_error(err, -EIO, "Failed to load the host's CA store");
	t->client_trusts = true;
	return 0;
}

int netns_tls_connect(struct netns_tls *t, int fd, const char *name, bool offer_h2,
		      struct netns_tls_conn **ret, struct al_error *err)
{
	_cleanup_(netns_tls_conn_freep) struct netns_tls_conn *c = NULL;
	SSL_SESSION *s;
	int r;

	ERR_clear_error();
	r = check_name(name, err);
	if (r >= 0)
		r = load_host_store(t, err);
	if (r >= 0)
		r = conn_new(t, false, fd, name, &c, err);
	if (r < 0)
		return r;
	/* SNI, and the name the certificate must carry: in its subjectAltName (a CN alone is not
	 * believed, as browsers do), no "f*.example.com" wildcards. */
	SSL_set_hostflags(c->ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS |
				      X509_CHECK_FLAG_NEVER_CHECK_SUBJECT);
	if (!SSL_set_tlsext_host_name(c->ssl, name) || !SSL_set1_host(c->ssl, name))
		return tls_error(err, -EIO, "Failed to set the server name %s", name);
	if (offer_h2 &&
	    SSL_set_alpn_protos(c->ssl, alpn_h2_http11, sizeof(alpn_h2_http11) - 1) != 0)
		return tls_error(err, -EIO, "Failed to offer h2 to %s", name);
	s = session_take(t, name);
	if (s) {
		r = SSL_set_session(c->ssl, s);
		SSL_SESSION_free(s);
		if (!r)
			return tls_error(err, -EIO, "Failed to resume a session with %s", name);
	}
	SSL_set_connect_state(c->ssl);
	*ret = TAKE_PTR(c);
	return 0;
}

int netns_tls_offer_alpn(struct netns_tls_conn *c, const char *proto)
{
	unsigned char list[256];
	size_t n = strlen(proto);

	if (n == 0 || n > 255)
		return -EINVAL;
	list[0] = (unsigned char)n;
	memcpy(list + 1, proto, n);
	return SSL_set_alpn_protos(c->ssl, list, (unsigned)n + 1) == 0 ? 0 : -EIO;
}

struct netns_tls_conn *netns_tls_conn_free(struct netns_tls_conn *c)
{
	if (!c)
		return NULL;
	SSL_free(c->ssl);
	ERR_clear_error();
	netns_buf_done(&c->queued);
	free(c);
	return NULL;
}

enum conn_op {
	OP_HANDSHAKE,
	OP_READ,
	OP_WRITE,
};

/* Before each SSL call: SSL_get_error() reads this thread's error queue, which must be empty. */
static void conn_begin(struct netns_tls_conn *c)
{
	ERR_clear_error();
	c->io_error = 0;
	c->wants = 0;
}

/* What the failure ret of an SSL call op means: -EAGAIN (c->wants set), 0 (read: the peer
 * closed), or -errno. The error queue is left for the caller to read. */
static int conn_failure(struct netns_tls_conn *c, int ret, enum conn_op op)
{
	switch (SSL_get_error(c->ssl, ret)) {
	case SSL_ERROR_WANT_READ:
		c->wants = EPOLLIN;
		return -EAGAIN;
	case SSL_ERROR_WANT_WRITE:
		c->wants = EPOLLOUT;
		return -EAGAIN;
	case SSL_ERROR_ZERO_RETURN: /* close_notify, or an EOF */
		return op == OP_READ ? 0 : op == OP_WRITE ? -EPIPE : -ECONNRESET;
	case SSL_ERROR_SYSCALL:
		c->failed = true;
		if (c->io_error == 0)
			return op == OP_READ ? 0 : op == OP_WRITE ? -EPIPE : -ECONNRESET;
		if (c->io_error == -EPIPE || c->io_error == -ECONNRESET)
			return op == OP_WRITE ? -EPIPE : -ECONNRESET;
		return c->io_error;
	default:
		c->failed = true;
		return -EPROTO;
	}
}

/* Says why the handshake failed (r), for the user: the verification's verdict first, since
 * OpenSSL's own message only says that it failed. */
static int handshake_error(struct netns_tls_conn *c, int r, struct al_error *err)
{
	long v = c->server ? X509_V_OK : SSL_get_verify_result(c->ssl);
	char peer[NETNS_DNS_NAME_MAX + 32];

	(void)snprintf(peer, sizeof(peer), c->server ? "the sandbox for %s" : "%s", c->name);
	if (r == -EPROTO && v == X509_V_OK && !c->alpn_refused)
		return tls_error(err, r, "TLS handshake with %s failed", peer);
	ERR_clear_error();
	if (v != X509_V_OK)
		return al_error_set(err, r,
				    "TLS handshake with %s failed: certificate verify failed: %s",
				    peer, X509_verify_cert_error_string(v));
	if (c->alpn_refused)
		return al_error_set(err, r, "TLS handshake with %s failed: ALPN without HTTP/1.x",
				    peer);
	if (r == -ECONNRESET)
		return al_error_set(err, r, "TLS handshake with %s failed: connection closed",
				    peer);
	return al_error_set_errno(err, r, "TLS handshake with %s failed", peer);
}

int netns_tls_handshake(struct netns_tls_conn *c, struct al_error *err)
{
	int r;

	if (SSL_is_init_finished(c->ssl))
		return 0;
	conn_begin(c);
	r = SSL_do_handshake(c->ssl);
	if (r == 1)
		return 0;
	r = conn_failure(c, r, OP_HANDSHAKE);
	if (r == -EAGAIN)
		return r;
	return handshake_error(c, r, err);
}

ssize_t netns_tls_read(struct netns_tls_conn *c, void *buf, size_t n)
{
	size_t k;
	int r;

	/* The socket is read out (no event since) and OpenSSL holds no byte: SSL_read() would say
	 * it wants to read, and is not asked (a relay asks each side once more than it has data,
	 * and each ask cleared the error queue twice). Not after the peer's close_notify, a
	 * failure or the socket's end, which a read must keep saying, nor when the last call
	 * wanted to write (a read may have that write to finish). */
	if (c->drained && !c->eof && !c->failed && c->wants != EPOLLOUT &&
	    SSL_is_init_finished(c->ssl) && SSL_has_pending(c->ssl) == 0 &&
	    !(SSL_get_shutdown(c->ssl) & SSL_RECEIVED_SHUTDOWN)) {
		c->io_error = 0;
		c->wants = EPOLLIN;
		return -EAGAIN;
	}
	conn_begin(c);
	if (SSL_read_ex(c->ssl, buf, n, &k))
		return (ssize_t)k;
	r = conn_failure(c, 0, OP_READ);
	ERR_clear_error();
	return r;
}

ssize_t netns_tls_write(struct netns_tls_conn *c, const void *buf, size_t n)
{
	size_t k;
	int r;

	if (n == 0)
		return 0;
	conn_begin(c);
	if (SSL_write_ex(c->ssl, buf, n, &k))
		return (ssize_t)k;
	r = conn_failure(c, 0, OP_WRITE);
	ERR_clear_error();
	return r;
}

void netns_tls_close(struct netns_tls_conn *c)
{
	/* After a fatal error OpenSSL forbids a close_notify; before the handshake there is
	 * nothing to close. A blocked write of it is just dropped. */
	if (c->closed || c->failed || !SSL_is_init_finished(c->ssl))
		return;
	c->closed = true;
	conn_begin(c);
	(void)SSL_shutdown(c->ssl);
	ERR_clear_error();
}

void netns_tls_allow_h2(struct netns_tls_conn *c, bool allow)
{
	c->h2_allowed = allow;
}

bool netns_tls_is_h2(const struct netns_tls_conn *c)
{
	const unsigned char *p;
	unsigned int n;

	SSL_get0_alpn_selected(c->ssl, &p, &n);
	return n == sizeof(alpn_h2) - 2 && memcmp(p, alpn_h2 + 1, n) == 0;
}

uint32_t netns_tls_wants(const struct netns_tls_conn *c)
{
	return c->wants;
}

void netns_tls_readable(struct netns_tls_conn *c, bool read_on)
{
	c->events = true;
	c->drained = false;
	c->read_on |= read_on;
}

bool netns_tls_pending(const struct netns_tls_conn *c)
{
	return SSL_has_pending(c->ssl) == 1;
}

void netns_tls_queue(struct netns_tls_conn *c, bool on)
{
	c->queue = on;
}

const uint8_t *netns_tls_queued(const struct netns_tls_conn *c, size_t *len)
{
	*len = netns_buf_len(&c->queued);
	return netns_buf_head(&c->queued);
}

void netns_tls_queued_sent(struct netns_tls_conn *c, size_t n)
{
	netns_buf_consume(&c->queued, n);
	/* A download's queue grew to TLS_QUEUED_MAX: not kept for the keep-alive answers after. */
	if (netns_buf_len(&c->queued) == 0 && c->queued.size > TLS_QUEUED_KEPT)
		netns_buf_done(&c->queued);
}
