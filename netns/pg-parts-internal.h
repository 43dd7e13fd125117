#pragma once

/* The parts of a Postgres login through the proxy (pg-internal.h has its contract), for
 * netns/pg*.c only:
 * - pg.c: the connection's life, messages framed in and written out, errors, the relay and its
 *   watch for the real password, and the calls that step it all;
 * - pg-sandbox.c: the proxy as the sandbox's server: its startup, and its login by the
 *   surrogate;
 * - pg-upstream.c: the proxy as the upstream's client: the startup, and the login by the real
 *   password up to AuthenticationOk;
 * - pg-auth.c: the arithmetic of SCRAM and MD5.
 * Messages (protocol 3, "Message Formats" in Postgres's documentation): the first ones from the
 * sandbox are a length and a code; every other message, either way, is a type byte and a length
 * that counts itself. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"
#include "common/macro.h"
#include "common/wire-util.h"
#include "netns/netns-internal.h"
#include "netns/pg-internal.h"

#define PG_SSL_REQUEST 80877103
#define PG_GSSENC_REQUEST 80877104
#define PG_CANCEL_REQUEST 80877102
#define PG_PROTOCOL_3_0 196608
#define PG_NEGOTIATIONS_MAX 2 /* an SSLRequest and a GSSENCRequest, as the server takes */

/* AuthenticationXxx ('R') codes. */
enum {
	AUTH_OK = 0,
	AUTH_KERBEROS = 2,
	AUTH_CLEARTEXT = 3,
	AUTH_MD5 = 5,
	AUTH_SCM = 6,
	AUTH_GSS = 7,
	AUTH_GSS_CONTINUE = 8,
	AUTH_SSPI = 9,
	AUTH_SASL = 10,
	AUTH_SASL_CONTINUE = 11,
	AUTH_SASL_FINAL = 12,
};

#define SCRAM_MECHANISM "SCRAM-SHA-256"
#define SCRAM_MECHANISM_PLUS "SCRAM-SHA-256-PLUS"
#define SCRAM_NONCE_RAW 18 /* random bytes in a nonce of the proxy's, as Postgres's */
#define SCRAM_NONCE_B64 24
#define SCRAM_SALT_LEN 16	   /* the salt the proxy gives the sandbox */
#define SCRAM_SALT_MAX 128	   /* an upstream's salt */
#define SCRAM_CLIENT_NONCE_MAX 256 /* the sandbox's nonce */
#define SCRAM_MESSAGE_MAX 1024	   /* a SCRAM message from either side */
#define SCRAM_SIGNATURE_B64 44	   /* base64 of 32 bytes */
#define PG_ERROR_TEXT_MAX 256	   /* an ErrorResponse's message made here */

enum pg_state {
	PG_STARTUP,	       /* the sandbox's first messages: untyped */
	PG_SANDBOX_SASL_FIRST, /* AuthenticationSASL sent, its SASLInitialResponse awaited */
	PG_SANDBOX_SASL_FINAL, /* AuthenticationSASLContinue sent, its SASLResponse awaited */
	PG_SANDBOX_PASSWORD,   /* MD5 or cleartext asked, its PasswordMessage awaited */
	PG_UPSTREAM_SSL,       /* the SSLRequest sent, its one-byte answer awaited */
	PG_UPSTREAM_TLS,       /* the caller's TLS handshake */
	PG_UPSTREAM_AUTH,      /* the startup sent, the upstream's authentication */
	PG_RELAY,
	PG_PASS, /* a CancelRequest passed on */
};

/* How far the upstream's authentication came. */
enum pg_upstream_auth {
	UP_NONE,
	UP_PASSWORD,	/* MD5 or cleartext sent */
	UP_SCRAM_FIRST, /* client-first sent */
	UP_SCRAM_FINAL, /* client-final sent */
	UP_SCRAM_DONE,	/* the server's signature verified */
};

/* What the upstream's exchange derives from the real password, in broker_secret memory. */
struct pg_upstream_secrets {
	struct netns_pg_scram_keys keys;
	uint8_t signature[NETNS_PG_SCRAM_KEY_LEN]; /* the server's, expected */
	char md5[NETNS_PG_MD5_RESPONSE_LEN + 1];
};

/* The upstream's messages after AuthenticationOk: framed, and watched for the real password
 * over the whole stream. win holds the last bytes sent on (sent of them, fewer than the
 * password), then those held back, which may be the start of the password. */
struct pg_relay {
	uint8_t head[5];
	size_t head_n;
	uint64_t left; /* of the body under way */
	struct netns_buf win;
	size_t sent;
};

/* The sandbox's messages in the relay: framed; a Query or Parse is held whole in stmt (its head
 * and body) to be searched. */
struct pg_front {
	uint8_t head[5];
	size_t head_n;
	uint64_t left; /* of the body under way */
	bool hold;
	struct netns_buf stmt;
};

struct netns_pg {
	char *user, *database, *surrogate;
	enum netns_pg_auth client_auth;
	int (*password_fn)(void *userdata, struct broker_secret **ret, struct al_error *err);
	int (*random_fn)(void *userdata, uint8_t *buf, size_t n);
	void *userdata;

	enum pg_state state;
	int error;		     /* kept: every later call returns it */
	bool told;		     /* an ErrorResponse went to the sandbox */
	enum netns_pg_step announce; /* a step reached in this call */
	unsigned negotiations;
	struct netns_buf in_sandbox, in_upstream; /* a message under way from each */
	struct netns_buf params;		  /* the sandbox's other startup parameters */
	struct netns_buf pending;		  /* sandbox bytes that wait for the relay */

	/* The sandbox's SCRAM exchange (the proxy is its server), or its MD5 salt. */
	char gs2[4]; /* its GS2 header: "n,," or "y,," */
	char *first_bare, *server_first, *nonce;
	uint8_t salt[SCRAM_SALT_LEN];
	uint8_t md5_salt[4];

	/* The upstream's. */
	bool tls;
	enum pg_upstream_auth up;
	const char *up_method;
	char up_nonce[SCRAM_NONCE_B64 + 1];
	struct broker_secret *password;
	struct broker_secret *secrets; /* struct pg_upstream_secrets */
	struct pg_relay relay;
	struct pg_front front;
};

static inline uint32_t pg_get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* ---- pg.c ---- */

/* Appends a message of type (0: untyped, as the startup) with body n bytes, whole or not at
 * all: -EMSGSIZE past NETNS_PG_OUT_MAX, -ENOMEM. */
int pg_put_message(struct netns_buf *out, char type, const void *body, size_t n);
/* A FATAL ErrorResponse with sqlstate and text. */
int pg_put_error(struct netns_buf *out, const char *sqlstate, const char *text);
int pg_buf_u32(struct netns_buf *b, uint32_t v);
/* s and its NUL. */
int pg_buf_str(struct netns_buf *b, const char *s);
/* src's bytes (an empty buffer may have no storage at all). */
int pg_buf_append_buf(struct netns_buf *dst, const struct netns_buf *src, size_t max);
/* Keeps r as the connection's error and says why in err ("Postgres: " and the text); with
 * sqlstate, also to the sandbox ("airlock: " and the text) when it can take it. Returns r. */
int pg_fail(struct netns_pg *pg, int r, struct netns_buf *to_sandbox, const char *sqlstate,
	    struct al_error *err, const char *fmt, ...) _printf_(6, 7);
/* A message from the sandbox that breaks the protocol. */
#define pg_bad_sandbox(pg, to_sandbox, err, ...)                                                   \
	pg_fail(pg, -EBADMSG, to_sandbox, "08P01", err, __VA_ARGS__)
/* A message from the upstream that breaks it. */
#define pg_bad_upstream(pg, to_sandbox, err, ...)                                                  \
	pg_fail(pg, -EBADMSG, to_sandbox, "08006", err, __VA_ARGS__)

/* A NUL-terminated string at the front of c: false when no NUL ends it. */
bool pg_take_cstring(struct al_wire *c, const char **ret, size_t *ret_len);
/* Whether the n bytes at s are text with no NUL, as SCRAM messages are. */
bool pg_is_text(const uint8_t *s, size_t n);
/* A SCRAM nonce: printable ASCII but ','. */
bool pg_is_nonce(const char *s, size_t n);
/* The options' random bytes, or OpenSSL's. */
int pg_random_bytes(struct netns_pg *pg, uint8_t *buf, size_t n);
/* The upstream's bytes from AuthenticationOk on, to to_sandbox, watched. */
int pg_relay_feed(struct netns_pg *pg, const uint8_t *p, size_t n, struct netns_buf *to_sandbox,
		  struct al_error *err);

/* The sandbox's bytes from the relay's start on, to to_upstream, filtered. */
int pg_front_feed(struct netns_pg *pg, const uint8_t *p, size_t n, struct netns_buf *to_upstream,
		  struct netns_buf *to_sandbox, struct al_error *err);

/* ---- pg-sandbox.c ---- */

/* One whole message from the sandbox (m, len bytes), before the upstream is reached: its
 * startup (untyped) or a message of its login. */
int pg_sandbox_message(struct netns_pg *pg, const uint8_t *m, size_t len,
		       struct netns_buf *to_sandbox, struct netns_buf *to_upstream,
		       struct al_error *err);

/* ---- pg-upstream.c ---- */

/* The startup for the upstream: the credential's user and database, the sandbox's other
 * parameters. */
int pg_upstream_startup(struct netns_pg *pg, struct netns_buf *to_upstream, struct al_error *err);
/* One whole message from the upstream (m, len bytes) during its login. */
int pg_upstream_message(struct netns_pg *pg, const uint8_t *m, size_t len,
			struct netns_buf *to_sandbox, struct netns_buf *to_upstream,
			struct al_error *err);
