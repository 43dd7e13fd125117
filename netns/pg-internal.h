#pragma once

/* A Postgres login through the egress proxy (pg*.c), for netns/ and tests/ only.
 *
 * The sandbox holds a surrogate password for a credential of kind postgres (a user, a database,
 * the real password in the broker, a bound host:port). The proxy ends the sandbox's startup and
 * authentication itself and opens its own to the upstream with the real password, so that the
 * real password never crosses into the sandbox:
 *
 *  1. The sandbox's SSLRequest or GSSENCRequest is answered 'N' (its link to the proxy is on
 *     this machine), then its StartupMessage (protocol 3; a later minor version or "_pq_."
 *     options are answered with NegotiateProtocolVersion, 3.0 and none) must ask for the
 *     credential's user and database (the database defaults to the user, as libpq's does).
 *     A CancelRequest as the first message carries no secret: it is passed on as it came.
 *  2. The proxy authenticates the sandbox with the surrogate as its password: SCRAM-SHA-256
 *     (RFC 5802 and 7677 as Postgres has it: no channel binding offered, a fresh salt, 4096
 *     iterations), MD5 (a fresh salt) or cleartext, as the credential says. Compared in constant
 *     time; a wrong password is refused as Postgres refuses one (28P01).
 *  3. Only then does it reach the upstream: an SSLRequest first ('S': the caller does TLS; 'N':
 *     plain), then the credential's user and database with the sandbox's other startup
 *     parameters, and the authentication the upstream asks for, with the real password from the
 *     broker: SCRAM-SHA-256 (also when offered beside -PLUS; channel binding is never chosen),
 *     whose server signature must verify before AuthenticationOk counts, MD5, or cleartext over
 *     TLS only. Trust (AuthenticationOk at once) is taken as it is.
 *  4. From the upstream's AuthenticationOk on, its messages go to the sandbox as they come,
 *     watched: a message stream that would hand the sandbox the real password's bytes in a row
 *     ends the connection before their last byte leaves. The sandbox's messages pass unchanged,
 *     but for a best-effort filter: a Query or Parse (up to NETNS_PG_STATEMENT_MAX) that sets a
 *     role's password (ALTER/CREATE ROLE, USER or GROUP ... PASSWORD) ends the connection, so
 *     that the sandbox cannot give the credential's role a password of its own choosing. Dynamic
 *     SQL (EXECUTE, a function that builds the statement) escapes it.
 *
 * Errors end the connection. Before the relay, the sandbox is told why in a Postgres
 * ErrorResponse appended to to_sandbox (never with the real password in it), so the caller
 * flushes to_sandbox and then closes both sides. Every error is kept: later calls return it
 * again. Nothing here logs or touches a socket. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "common/macro.h"
#include "netns/netns-internal.h"

#define NETNS_PG_STARTUP_MAX 10000		/* a startup packet, as the server takes one */
#define NETNS_PG_AUTH_MESSAGE_MAX (1024 * 1024) /* an upstream's message before the relay */
/* A sandbox's login message (SASLInitialResponse, SASLResponse, PasswordMessage): each is well
 * under 1 KiB. Refused from its length on, so an unfinished one holds little of the proxy. */
#define NETNS_PG_LOGIN_MESSAGE_MAX 4096
/* What the sandbox may send while the upstream's login runs (it waits for the relay). */
#define NETNS_PG_PENDING_MAX (16 * 1024)
/* A Query or Parse whose text the relay gathers whole to search it; a longer one passes
 * unsearched (the search is best effort in any case: dynamic SQL escapes it). */
#define NETNS_PG_STATEMENT_MAX (1024 * 1024)
#define NETNS_PG_SCRAM_ITERATIONS 4096 /* what the proxy asks of the sandbox */
/* What an upstream may ask of the proxy: each login runs this many HMACs on the proxy's thread
 * (OWASP's figure for PBKDF2-HMAC-SHA256). */
#define NETNS_PG_SCRAM_ITERATIONS_MAX 600000
/* Bytes the proxy holds for either side: the caller feeds no more than it drains. */
#define NETNS_PG_OUT_MAX (8 * 1024 * 1024)

struct broker_secret;
struct netns_pg;

/* How the proxy asks the sandbox for the surrogate. */
enum netns_pg_auth {
	NETNS_PG_AUTH_SCRAM,
	NETNS_PG_AUTH_MD5,
	NETNS_PG_AUTH_PASSWORD,
};

struct netns_pg_options {
	/* The credential's: the sandbox must ask for these. Copied. */
	const char *user, *database;
	/* The password the sandbox must give: printable ASCII (what SASLprep leaves as it is).
	 * Copied. */
	const char *surrogate;
	enum netns_pg_auth client_auth;
	/* The real password (the proxy asks the broker): 0 and *ret (the connection keeps it,
	 * for the relay's watch, and frees it), or -errno with err. Called once, when the
	 * upstream's first message after the startup comes (AuthenticationOk and ErrorResponse
	 * included: every message is searched for it). */
	int (*password)(void *userdata, struct broker_secret **ret, struct al_error *err);
	/* Fills buf with n random bytes (salts, nonces): 0 or -errno. NULL: OpenSSL's
	 * RAND_bytes(). Tests and the fuzzer make the bytes predictable. */
	int (*random)(void *userdata, uint8_t *buf, size_t n);
	void *userdata;
};

enum netns_pg_step {
	NETNS_PG_MORE,	    /* waiting for bytes */
	NETNS_PG_CONNECT,   /* the sandbox is authenticated: connect to the upstream and send it
			       to_upstream (an SSLRequest); returned once */
	NETNS_PG_START_TLS, /* the upstream answered 'S': the caller does the TLS handshake on the
			       upstream socket (ALPN "postgresql" or none: Postgres 17 refuses
			       others), then calls netns_pg_tls_ready(); returned once */
	NETNS_PG_RELAY,	    /* authenticated both ways: from now on bytes from the upstream go
			       through netns_pg_relay_from_upstream(), the sandbox's unchanged */
	NETNS_PG_PASS,	    /* the sandbox sent a CancelRequest: connect to the upstream, send it
			       to_upstream (the request as it came), close; returned once */
};

/* -EINVAL when a string of o is empty or the surrogate is not printable ASCII, -ENOMEM. */
int netns_pg_new(const struct netns_pg_options *o, struct netns_pg **ret);
/* Wipes the real password, every key and every buffer. */
struct netns_pg *netns_pg_free(struct netns_pg *pg);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct netns_pg *, netns_pg_free);

/* Bytes from the sandbox, or from the upstream (decrypted, once TLS is up); what to send goes
 * to to_sandbox and to_upstream. Returns a step (>= 0), or -errno with err:
 *   -EBADMSG          a malformed or unexpected message, from either side;
 *   -EPERM            the sandbox asked for another user or database (ErrorResponse 28000), gave
 *                     a wrong password (28P01), or sent a statement that sets a role's password
 *                     (42501, when the sandbox can take it), or, in the relay, the upstream sent
 *                     the real password (no ErrorResponse then: the caller closes);
 *   -EPROTONOSUPPORT  the upstream asks for an authentication the proxy refuses: cleartext
 *                     without TLS, Kerberos, GSS, SSPI, SCRAM with channel binding only, or
 *                     SCRAM with a password that needs SASLprep (non-ASCII UTF-8);
 *   -EACCES           the upstream refused the real password (its ErrorResponse is passed on,
 *                     or a generic one when it held the password), or did not prove knowing it
 *                     (a SCRAM server signature that does not verify, or AuthenticationOk
 *                     before the exchange ended);
 *   -EMSGSIZE         a startup packet over NETNS_PG_STARTUP_MAX, a sandbox's login message over
 *                     NETNS_PG_LOGIN_MESSAGE_MAX (08P01, as soon as its length came), an
 *                     upstream's over NETNS_PG_AUTH_MESSAGE_MAX before the relay, more than
 *                     NETNS_PG_PENDING_MAX from the sandbox while the upstream's login runs, or
 *                     out buffers past NETNS_PG_OUT_MAX;
 *   -EINVAL           the broker's password is empty or holds a NUL byte;
 *   -ENOMEM, and what o->password() or o->random() return.
 * A step other than NETNS_PG_MORE is returned at most once, when it is reached (NETNS_PG_RELAY
 * from then on). Sandbox bytes that come while the upstream is being reached wait (up to
 * NETNS_PG_PENDING_MAX) and go out, filtered, with the relay; in the relay they go through
 * netns_pg_relay_from_sandbox(). */
int netns_pg_from_sandbox(struct netns_pg *pg, const uint8_t *p, size_t n,
			  struct netns_buf *to_sandbox, struct netns_buf *to_upstream,
			  struct al_error *err);
int netns_pg_from_upstream(struct netns_pg *pg, const uint8_t *p, size_t n,
			   struct netns_buf *to_sandbox, struct netns_buf *to_upstream,
			   struct al_error *err);
/* After NETNS_PG_START_TLS: tls says the handshake succeeded, and the startup goes to
 * to_upstream (to be sent over TLS): NETNS_PG_MORE. When it failed: -EPROTO (the caller may
 * tell the sandbox with netns_pg_report_failure()). -EINVAL at any other time. */
int netns_pg_tls_ready(struct netns_pg *pg, bool tls, struct netns_buf *to_upstream,
		       struct al_error *err);
/* In the relay: the upstream's bytes, parsed as backend messages (a type byte and a length,
 * across chunks), to to_sandbox, watched for the real password (-EPERM; -EBADMSG for a length
 * below 4; -EINVAL before the relay). The last bytes of a message under way may be held back
 * until more of it comes, never past its end. */
int netns_pg_relay_from_upstream(struct netns_pg *pg, const uint8_t *p, size_t n,
				 struct netns_buf *to_sandbox, struct al_error *err);
/* In the relay: the sandbox's bytes, parsed as frontend messages (a type byte and a length,
 * across chunks), to to_upstream as they come, but for a Query or Parse up to
 * NETNS_PG_STATEMENT_MAX, held until whole and searched: one that sets a role's password ends
 * the connection (-EPERM, ErrorResponse 42501 to to_sandbox when it can take one). -EBADMSG for
 * a bad length, -EMSGSIZE past NETNS_PG_OUT_MAX, -EINVAL before the relay. */
int netns_pg_relay_from_sandbox(struct netns_pg *pg, const uint8_t *p, size_t n,
				struct netns_buf *to_upstream, struct netns_buf *to_sandbox,
				struct al_error *err);
/* Whether a statement's text (n bytes, Postgres's SQL) sets a role's password: case-insensitive,
 * comments and whitespace runs taken as one space. Best effort: see the contract above. */
bool netns_pg_sets_password(const uint8_t *s, size_t n);
/* The proxy's own failure (the upstream unreachable, its TLS or its connection gone): a FATAL
 * ErrorResponse (08006, "airlock: " and message) for the sandbox, when it can take one now:
 * before the relay, or in it between two messages. 0 (also when nothing was added), -ENOMEM. */
int netns_pg_report_failure(struct netns_pg *pg, const char *message, struct netns_buf *to_sandbox);
/* For the audit: the authentication the upstream asked for ("scram-sha-256", "md5",
 * "password", "trust"), or NULL before it did; whether the upstream link is TLS. */
const char *netns_pg_upstream_auth(const struct netns_pg *pg);
bool netns_pg_upstream_tls(const struct netns_pg *pg);

/* ---- pg-auth.c: the password exchanges' arithmetic (OpenSSL) ----
 *
 * SCRAM-SHA-256 (RFC 5802 3): SaltedPassword = PBKDF2-HMAC-SHA256(password, salt, i);
 * ClientKey = HMAC(SaltedPassword, "Client Key"), StoredKey = SHA256(ClientKey), ServerKey =
 * HMAC(SaltedPassword, "Server Key"); a proof is ClientKey XOR HMAC(StoredKey, AuthMessage), the
 * server's signature HMAC(ServerKey, AuthMessage). Keys derived from a real password live in
 * broker_secret memory (the caller's) and are wiped. */
#define NETNS_PG_SCRAM_KEY_LEN 32
#define NETNS_PG_MD5_RESPONSE_LEN 35 /* "md5" and 32 hex digits */

struct netns_pg_scram_keys {
	uint8_t client_key[NETNS_PG_SCRAM_KEY_LEN];
	uint8_t stored_key[NETNS_PG_SCRAM_KEY_LEN];
	uint8_t server_key[NETNS_PG_SCRAM_KEY_LEN];
};

/* -EINVAL (a salt or iteration count out of range), -ENOMEM. */
int netns_pg_scram_derive(const char *password, size_t len, const uint8_t *salt, size_t salt_len,
			  uint32_t iterations, struct netns_pg_scram_keys *ret);
/* The client's proof over auth_message (n bytes). */
int netns_pg_scram_proof(const struct netns_pg_scram_keys *k, const char *auth_message, size_t n,
			 uint8_t ret[static NETNS_PG_SCRAM_KEY_LEN]);
/* Whether proof is the client's proof for k's StoredKey (constant time). */
bool netns_pg_scram_proof_ok(const struct netns_pg_scram_keys *k, const char *auth_message,
			     size_t n, const uint8_t proof[static NETNS_PG_SCRAM_KEY_LEN]);
/* The server's signature over auth_message. */
int netns_pg_scram_signature(const struct netns_pg_scram_keys *k, const char *auth_message,
			     size_t n, uint8_t ret[static NETNS_PG_SCRAM_KEY_LEN]);
/* "md5" + md5hex(md5hex(password + user) + salt), NUL-terminated. The inner hash stands for the
 * password: it is made in ret's memory and wiped. */
int netns_pg_md5_response(const char *password, size_t len, const char *user,
			  const uint8_t salt[static 4],
			  char ret[static NETNS_PG_MD5_RESPONSE_LEN + 1]);
/* Whether a and b hold the same bytes, in a time that depends on neither (SHA-256 of each,
 * compared). */
bool netns_pg_equal_secret(const void *a, size_t a_len, const void *b, size_t b_len);
/* Decodes padded standard base64 (s, n bytes) into dst (size bytes): -EBADMSG when s is not
 * that, or does not fit. */
int netns_pg_b64_decode(const char *s, size_t n, uint8_t *dst, size_t size, size_t *ret_len);
/* n random bytes from OpenSSL: 0 or -EIO. */
int netns_pg_random(uint8_t *buf, size_t n);
