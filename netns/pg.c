/* A Postgres login through the egress proxy (pg-internal.h has the contract): the sandbox's
 * startup and authentication ended here with the surrogate, the upstream's done with the real
 * password, then the upstream's messages relayed and watched for the real password. Messages
 * (protocol 3, "Message Formats" in Postgres's documentation): the first ones from the sandbox
 * are a length and a code; every other message, either way, is a type byte and a length that
 * counts itself. Every field is read within its message's bounds. */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "broker/client.h"
#include "common/text-util.h"
#include "common/wire-util.h"
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
};

static uint32_t get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* ---- messages out ---- */

/* Appends a message of type (0: untyped, as the startup) with body n bytes, whole or not at all. */
static int put_message(struct netns_buf *out, char type, const void *body, size_t n)
{
	uint8_t head[5] = {(uint8_t)type};
	size_t h = type ? 5 : 4, before = netns_buf_len(out);
	int r;

	if (n > NETNS_PG_OUT_MAX - h || before > NETNS_PG_OUT_MAX - n - h)
		return -EMSGSIZE;
	al_wire_put_u32(head + 1, (uint32_t)(n + 4));
	r = netns_buf_append(out, type ? head : head + 1, h, NETNS_PG_OUT_MAX);
	if (r >= 0)
		r = netns_buf_append(out, body, n, NETNS_PG_OUT_MAX);
	if (r < 0 && netns_buf_len(out) > before) {
		/* The head went in, not the body: take it back (the buffer may have moved). */
		explicit_bzero(out->data + out->start + before, netns_buf_len(out) - before);
		out->end = out->start + before;
	}
	return r;
}

static int buf_u32(struct netns_buf *b, uint32_t v)
{
	uint8_t p[4];

	al_wire_put_u32(p, v);
	return netns_buf_append(b, p, 4, NETNS_PG_OUT_MAX);
}

/* src's bytes (an empty buffer may have no storage at all). */
static int buf_append_buf(struct netns_buf *dst, const struct netns_buf *src, size_t max)
{
	if (netns_buf_len(src) == 0)
		return 0;
	return netns_buf_append(dst, netns_buf_head(src), netns_buf_len(src), max);
}

/* s and its NUL. */
static int buf_str(struct netns_buf *b, const char *s)
{
	return netns_buf_append(b, s, strlen(s) + 1, NETNS_PG_OUT_MAX);
}

/* A FATAL ErrorResponse with sqlstate and text. */
static int put_error(struct netns_buf *out, const char *sqlstate, const char *text)
{
	_cleanup_(netns_buf_done) struct netns_buf b = {0};
	int r;

	r = buf_str(&b, "SFATAL");
	if (r >= 0)
		r = buf_str(&b, "VFATAL");
	if (r >= 0)
		r = netns_buf_printf(&b, NETNS_PG_OUT_MAX, "C%s", sqlstate);
	if (r >= 0)
		r = netns_buf_append(&b, "", 1, NETNS_PG_OUT_MAX);
	if (r >= 0)
		r = netns_buf_printf(&b, NETNS_PG_OUT_MAX, "M%s", text);
	if (r >= 0)
		r = netns_buf_append(&b, "\0", 2, NETNS_PG_OUT_MAX); /* its end, and the list's */
	if (r < 0)
		return r;
	return put_message(out, 'E', netns_buf_head(&b), netns_buf_len(&b));
}

/* Whether the sandbox can take an ErrorResponse now: before the relay, or in it between two
 * messages with nothing held back. */
static bool sandbox_can_be_told(const struct netns_pg *pg)
{
	if (pg->told || pg->state == PG_PASS)
		return false;
	if (pg->state != PG_RELAY)
		return true;
	return pg->relay.head_n == 0 && pg->relay.sent == netns_buf_len(&pg->relay.win);
}

/* Keeps r as the connection's error and says why in err ("Postgres: " and the text); with
 * sqlstate, also to the sandbox ("airlock: " and the text) when it can take it. */
_printf_(6, 7) static int fail(struct netns_pg *pg, int r, struct netns_buf *to_sandbox,
			       const char *sqlstate, struct al_error *err, const char *fmt, ...)
{
	char text[PG_ERROR_TEXT_MAX], full[PG_ERROR_TEXT_MAX + 16];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (sqlstate && to_sandbox && sandbox_can_be_told(pg)) {
		(void)snprintf(full, sizeof(full), "airlock: %s", text);
		if (put_error(to_sandbox, sqlstate, full) >= 0)
			pg->told = true;
	}
	pg->error = r;
	return al_error_set(err, r, "Postgres: %s", text);
}

/* A message from the sandbox that breaks the protocol. */
#define bad_sandbox(pg, to_sandbox, err, ...)                                                      \
	fail(pg, -EBADMSG, to_sandbox, "08P01", err, __VA_ARGS__)
/* A message from the upstream that breaks it. */
#define bad_upstream(pg, to_sandbox, err, ...)                                                     \
	fail(pg, -EBADMSG, to_sandbox, "08006", err, __VA_ARGS__)

/* ---- messages in ---- */

/* Takes from *p (*n bytes) what completes the message under way in acc (typed: a type byte
 * first; max: its largest length). Returns its whole length once it is in acc, 0 while more
 * bytes are needed, -EMSGSIZE, -EBADMSG (a length that cannot be). */
static ssize_t frame(struct netns_buf *acc, bool typed, size_t max, const uint8_t **p, size_t *n)
{
	size_t h = typed ? 5 : 4, have = netns_buf_len(acc), want, take;
	uint32_t len;
	int r;

	if (have < h) {
		take = MIN(*n, h - have);
		r = netns_buf_append(acc, *p, take, h);
		if (r < 0)
			return r;
		*p += take;
		*n -= take;
		have += take;
		if (have < h)
			return 0;
	}
	len = get_u32(netns_buf_head(acc) + (typed ? 1 : 0));
	if (len > max)
		return -EMSGSIZE;
	if (len < (typed ? 4 : 8))
		return -EBADMSG;
	want = (typed ? 1 : 0) + (size_t)len;
	take = MIN(*n, want - have);
	r = netns_buf_append(acc, *p, take, want);
	if (r < 0)
		return r;
	*p += take;
	*n -= take;
	return have + take == want ? (ssize_t)want : 0;
}

/* A NUL-terminated string at the front of c: false when no NUL ends it. */
static bool take_cstring(struct al_wire *c, const char **ret, size_t *ret_len)
{
	const uint8_t *nul = c->len ? memchr(c->p, '\0', c->len) : NULL;

	if (!nul)
		return false;
	*ret = (const char *)c->p;
	*ret_len = (size_t)(nul - c->p);
	c->p = nul + 1;
	c->len -= *ret_len + 1;
	return true;
}

/* Whether the n bytes at s are text with no NUL (SCRAM messages are). */
static bool is_text(const uint8_t *s, size_t n)
{
	return n <= SCRAM_MESSAGE_MAX && !memchr(s, '\0', n);
}

/* A SCRAM nonce: printable ASCII but ','. */
static bool is_nonce(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x21 || s[i] > 0x7e || s[i] == ',')
			return false;
	return n > 0;
}

static int random_bytes(struct netns_pg *pg, uint8_t *buf, size_t n)
{
	return pg->random_fn ? pg->random_fn(pg->userdata, buf, n) : netns_pg_random(buf, n);
}

/* ---- the sandbox's side: the proxy is its server ---- */

static int ask_sandbox(struct netns_pg *pg, struct netns_buf *to_sandbox, struct al_error *err)
{
	uint8_t body[4 + sizeof(SCRAM_MECHANISM) + 1];
	size_t n = 4;
	int r;

	switch (pg->client_auth) {
	case NETNS_PG_AUTH_SCRAM:
		al_wire_put_u32(body, AUTH_SASL);
		memcpy(body + 4, SCRAM_MECHANISM, sizeof(SCRAM_MECHANISM));
		body[4 + sizeof(SCRAM_MECHANISM)] = '\0'; /* the list's end */
		n = sizeof(body);
		pg->state = PG_SANDBOX_SASL_FIRST;
		break;
	case NETNS_PG_AUTH_MD5:
		r = random_bytes(pg, pg->md5_salt, sizeof(pg->md5_salt));
		if (r < 0)
			return fail(pg, r, to_sandbox, "XX000", err, "no random bytes");
		al_wire_put_u32(body, AUTH_MD5);
		memcpy(body + 4, pg->md5_salt, 4);
		n = 8;
		pg->state = PG_SANDBOX_PASSWORD;
		break;
	case NETNS_PG_AUTH_PASSWORD:
	default:
		al_wire_put_u32(body, AUTH_CLEARTEXT);
		pg->state = PG_SANDBOX_PASSWORD;
		break;
	}
	return put_message(to_sandbox, 'R', body, n);
}

/* The StartupMessage's parameters: user and database kept aside, "_pq_." protocol options
 * listed in pq (to be declined), the others kept for the upstream. */
static int startup_parameters(struct netns_pg *pg, struct al_wire c, const char **ret_user,
			      const char **ret_database, struct netns_buf *pq, uint32_t *ret_n_pq,
			      struct netns_buf *to_sandbox, struct al_error *err)
{
	const char *user = NULL, *database = NULL;
	uint32_t n_pq = 0;
	int r;

	for (;;) {
		const char *k, *v;
		size_t kl, vl;

		if (!take_cstring(&c, &k, &kl) || (kl > 0 && !take_cstring(&c, &v, &vl)))
			return bad_sandbox(pg, to_sandbox, err, "a startup packet cut short");
		if (kl == 0)
			break;
		if (strcmp(k, "user") == 0 || strcmp(k, "database") == 0) {
			const char **slot = k[0] == 'u' ? &user : &database;

			if (*slot)
				return bad_sandbox(pg, to_sandbox, err,
						   "a startup packet with \"%s\" twice", k);
			*slot = v;
			continue;
		}
		if (strncmp(k, "_pq_.", 5) == 0) {
			r = buf_str(pq, k);
			n_pq++;
		} else {
			r = netns_buf_append(&pg->params, k, kl + 1, NETNS_PG_STARTUP_MAX);
			if (r >= 0)
				r = netns_buf_append(&pg->params, v, vl + 1, NETNS_PG_STARTUP_MAX);
		}
		if (r < 0)
			return fail(pg, r, to_sandbox, "53200", err, "out of memory");
	}
	if (c.len != 0)
		return bad_sandbox(pg, to_sandbox, err, "bytes after a startup packet's end");
	*ret_user = user;
	*ret_database = database;
	*ret_n_pq = n_pq;
	return 0;
}

static int sandbox_startup(struct netns_pg *pg, const uint8_t *m, size_t len,
			   struct netns_buf *to_sandbox, struct al_error *err)
{
	_cleanup_(netns_buf_done) struct netns_buf pq = {0};
	const char *user = NULL, *database = NULL;
	uint32_t version = get_u32(m + 4), n_pq = 0;
	int r;

	if (version >> 16 != 3)
		return bad_sandbox(pg, to_sandbox, err, "protocol %u.%u asked for, not 3",
				   version >> 16, version & 0xffff);
	r = startup_parameters(pg, (struct al_wire){m + 8, len - 8}, &user, &database, &pq, &n_pq,
			       to_sandbox, err);
	if (r < 0)
		return r;
	if (!user || !user[0])
		return fail(pg, -EPERM, to_sandbox, "28000", err,
			    "no user name in the startup packet");
	if (!database || !database[0])
		database = user; /* as the server does */
	if (strcmp(user, pg->user) != 0 || strcmp(database, pg->database) != 0)
		return fail(pg, -EPERM, to_sandbox, "28000", err,
			    "no credential for user \"%.64s\" and database \"%.64s\" on this "
			    "connection",
			    user, database);
	if ((version & 0xffff) != 0 || n_pq > 0) {
		/* NegotiateProtocolVersion: 3.0, and none of the options. */
		_cleanup_(netns_buf_done) struct netns_buf v = {0};

		r = buf_u32(&v, 0);
		if (r >= 0)
			r = buf_u32(&v, n_pq);
		if (r >= 0)
			r = buf_append_buf(&v, &pq, NETNS_PG_OUT_MAX);
		if (r >= 0)
			r = put_message(to_sandbox, 'v', netns_buf_head(&v), netns_buf_len(&v));
		if (r < 0)
			return fail(pg, r, to_sandbox, "53200", err, "out of memory");
	}
	return ask_sandbox(pg, to_sandbox, err);
}

/* The sandbox's first, untyped message. */
static int sandbox_first(struct netns_pg *pg, const uint8_t *m, size_t len,
			 struct netns_buf *to_sandbox, struct netns_buf *to_upstream,
			 struct al_error *err)
{
	uint32_t code = get_u32(m + 4);

	if (code == PG_SSL_REQUEST || code == PG_GSSENC_REQUEST) {
		if (len != 8 || ++pg->negotiations > PG_NEGOTIATIONS_MAX)
			return bad_sandbox(pg, to_sandbox, err, "an SSLRequest out of place");
		/* 'N': the sandbox's link to the proxy does not leave the machine. */
		return netns_buf_append(to_sandbox, "N", 1, NETNS_PG_OUT_MAX);
	}
	if (code == PG_CANCEL_REQUEST) {
		if (len != 16)
			return bad_sandbox(pg, to_sandbox, err, "a CancelRequest of a bad length");
		pg->state = PG_PASS;
		pg->announce = NETNS_PG_PASS;
		return netns_buf_append(to_upstream, m, len, NETNS_PG_OUT_MAX);
	}
	return sandbox_startup(pg, m, len, to_sandbox, err);
}

/* The sandbox's client-first-message (RFC 5802 7): gs2-header "n=" name ",r=" nonce. */
static int sandbox_client_first(struct netns_pg *pg, const char *s, size_t n,
				struct netns_buf *to_sandbox, struct al_error *err)
{
	uint8_t raw[SCRAM_NONCE_RAW];
	char server_nonce[SCRAM_NONCE_B64 + 1], salt[4 * ((SCRAM_SALT_LEN + 2) / 3) + 1];
	const char *bare, *comma, *nonce;
	size_t nonce_len;
	int r;

	if (n >= 1 && s[0] == 'p')
		return bad_sandbox(pg, to_sandbox, err, "SCRAM channel binding is not offered");
	if (n < 3 || (s[0] != 'n' && s[0] != 'y') || s[1] != ',' || s[2] != ',')
		return bad_sandbox(pg, to_sandbox, err,
				   "a SCRAM client-first-message without a GS2 header");
	bare = s + 3;
	n -= 3;
	comma = memchr(bare, ',', n);
	if (n < 2 || memcmp(bare, "n=", 2) != 0 || !comma || (size_t)(comma - bare) + 3 > n ||
	    memcmp(comma + 1, "r=", 2) != 0)
		return bad_sandbox(pg, to_sandbox, err, "a malformed SCRAM client-first-message");
	nonce = comma + 3;
	nonce_len = n - (size_t)(nonce - bare);
	if (nonce_len > SCRAM_CLIENT_NONCE_MAX || !is_nonce(nonce, nonce_len))
		return bad_sandbox(pg, to_sandbox, err, "a malformed SCRAM client nonce");

	r = random_bytes(pg, raw, sizeof(raw));
	if (r >= 0)
		r = random_bytes(pg, pg->salt, sizeof(pg->salt));
	if (r < 0)
		return fail(pg, r, to_sandbox, "XX000", err, "no random bytes");
	(void)netns_pg_b64_encode(raw, sizeof(raw), server_nonce);
	(void)netns_pg_b64_encode(pg->salt, sizeof(pg->salt), salt);
	memcpy(pg->gs2, s, 3);
	pg->gs2[3] = '\0';
	pg->first_bare = strndup(bare, n);
	if (asprintf(&pg->nonce, "%.*s%s", (int)nonce_len, nonce, server_nonce) < 0)
		pg->nonce = NULL;
	if (pg->nonce && asprintf(&pg->server_first, "r=%s,s=%s,i=%u", pg->nonce, salt,
				  NETNS_PG_SCRAM_ITERATIONS) < 0)
		pg->server_first = NULL;
	if (!pg->first_bare || !pg->nonce || !pg->server_first)
		return fail(pg, -ENOMEM, to_sandbox, "53200", err, "out of memory");
	return 0;
}

static int sandbox_sasl_first(struct netns_pg *pg, const uint8_t *body, size_t n,
			      struct netns_buf *to_sandbox, struct al_error *err)
{
	_cleanup_(netns_buf_done) struct netns_buf m = {0};
	struct al_wire c = {body, n};
	const char *mech;
	size_t mech_len;
	uint32_t len;
	int r;

	if (!take_cstring(&c, &mech, &mech_len) || !al_wire_take_u32(&c, &len))
		return bad_sandbox(pg, to_sandbox, err, "a malformed SASLInitialResponse");
	if (strcmp(mech, SCRAM_MECHANISM_PLUS) == 0)
		return bad_sandbox(pg, to_sandbox, err, "SCRAM channel binding is not offered");
	if (strcmp(mech, SCRAM_MECHANISM) != 0)
		return bad_sandbox(pg, to_sandbox, err, "a SASL mechanism that was not offered");
	if (len != c.len || !is_text(c.p, c.len))
		return bad_sandbox(pg, to_sandbox, err, "a malformed SASLInitialResponse");
	r = sandbox_client_first(pg, (const char *)c.p, c.len, to_sandbox, err);
	if (r < 0)
		return r;
	r = buf_u32(&m, AUTH_SASL_CONTINUE);
	if (r >= 0)
		r = netns_buf_append(&m, pg->server_first, strlen(pg->server_first),
				     NETNS_PG_OUT_MAX);
	if (r >= 0)
		r = put_message(to_sandbox, 'R', netns_buf_head(&m), netns_buf_len(&m));
	if (r < 0)
		return fail(pg, r, to_sandbox, "53200", err, "out of memory");
	pg->state = PG_SANDBOX_SASL_FINAL;
	return 0;
}

/* A wrong password, refused as Postgres refuses one. */
static int wrong_password(struct netns_pg *pg, struct netns_buf *to_sandbox, struct al_error *err)
{
	char text[PG_ERROR_TEXT_MAX];

	(void)snprintf(text, sizeof(text), "password authentication failed for user \"%s\"",
		       pg->user);
	if (put_error(to_sandbox, "28P01", text) >= 0)
		pg->told = true;
	pg->error = -EPERM;
	return al_error_set(err, -EPERM, "Postgres: the sandbox gave a wrong password for user %s",
			    pg->user);
}

/* The sandbox is in: the upstream is reached next, with an SSLRequest. */
static int sandbox_authenticated(struct netns_pg *pg, struct netns_buf *to_sandbox,
				 struct netns_buf *to_upstream, struct al_error *err)
{
	uint8_t req[4];
	int r;

	al_wire_put_u32(req, PG_SSL_REQUEST);
	r = put_message(to_upstream, 0, req, sizeof(req));
	if (r < 0)
		return fail(pg, r, to_sandbox, "53200", err, "out of memory");
	pg->state = PG_UPSTREAM_SSL;
	pg->announce = NETNS_PG_CONNECT;
	return 0;
}

/* The sandbox's client-final-message: "c=" GS2 header ",r=" nonce ",p=" proof. */
static int sandbox_sasl_final(struct netns_pg *pg, const uint8_t *body, size_t n,
			      struct netns_buf *to_sandbox, struct netns_buf *to_upstream,
			      struct al_error *err)
{
	_cleanup_free_ char *auth = NULL;
	struct netns_pg_scram_keys k;
	uint8_t proof[NETNS_PG_SCRAM_KEY_LEN + 3], gs2[8], sig[NETNS_PG_SCRAM_KEY_LEN];
	char final[4 + 2 + SCRAM_SIGNATURE_B64 + 1]; /* the code, "v=", the signature, a NUL */
	const char *s = (const char *)body, *c1, *c2;
	size_t len, nonce_len = strlen(pg->nonce);
	bool ok;
	int r;

	if (!is_text(body, n))
		return bad_sandbox(pg, to_sandbox, err, "a malformed SCRAM client-final-message");
	c1 = memchr(s, ',', n);
	c2 = c1 ? memchr(c1 + 1, ',', n - (size_t)(c1 + 1 - s)) : NULL;
	if (!c2 || n < 2 || memcmp(s, "c=", 2) != 0 || (size_t)(c2 - c1) != 3 + nonce_len ||
	    memcmp(c1 + 1, "r=", 2) != 0 || (size_t)(s + n - c2) < 3 ||
	    memcmp(c2 + 1, "p=", 2) != 0)
		return bad_sandbox(pg, to_sandbox, err, "a malformed SCRAM client-final-message");
	if (netns_pg_b64_decode(s + 2, (size_t)(c1 - s) - 2, gs2, sizeof(gs2), &len) < 0 ||
	    len != 3 || memcmp(gs2, pg->gs2, 3) != 0)
		return bad_sandbox(pg, to_sandbox, err, "SCRAM channel binding data that differs");
	if (memcmp(c1 + 3, pg->nonce, nonce_len) != 0)
		return bad_sandbox(pg, to_sandbox, err, "a SCRAM nonce that differs");
	if (netns_pg_b64_decode(c2 + 3, (size_t)(s + n - c2) - 3, proof, sizeof(proof), &len) < 0 ||
	    len != NETNS_PG_SCRAM_KEY_LEN)
		return bad_sandbox(pg, to_sandbox, err, "a malformed SCRAM proof");

	/* AuthMessage = client-first-bare "," server-first "," client-final-without-proof. */
	if (asprintf(&auth, "%s,%s,%.*s", pg->first_bare, pg->server_first, (int)(c2 - s), s) < 0) {
		auth = NULL;
		return fail(pg, -ENOMEM, to_sandbox, "53200", err, "out of memory");
	}
	r = netns_pg_scram_derive(pg->surrogate, strlen(pg->surrogate), pg->salt, sizeof(pg->salt),
				  NETNS_PG_SCRAM_ITERATIONS, &k);
	if (r < 0)
		return fail(pg, r, to_sandbox, "53200", err, "out of memory");
	ok = netns_pg_scram_proof_ok(&k, auth, strlen(auth), proof);
	r = ok ? netns_pg_scram_signature(&k, auth, strlen(auth), sig) : 0;
	explicit_bzero(&k, sizeof(k));
	if (!ok)
		return wrong_password(pg, to_sandbox, err);
	if (r < 0)
		return fail(pg, r, to_sandbox, "53200", err, "out of memory");
	al_wire_put_u32((uint8_t *) final, AUTH_SASL_FINAL);
	memcpy(final + 4, "v=", 2);
	len = 6 + netns_pg_b64_encode(sig, sizeof(sig), final + 6);
	r = put_message(to_sandbox, 'R', final, len);
	if (r < 0)
		return fail(pg, r, to_sandbox, "53200", err, "out of memory");
	return sandbox_authenticated(pg, to_sandbox, to_upstream, err);
}

/* A PasswordMessage: the surrogate itself, or its MD5 response. */
static int sandbox_password(struct netns_pg *pg, const uint8_t *body, size_t n,
			    struct netns_buf *to_sandbox, struct netns_buf *to_upstream,
			    struct al_error *err)
{
	char want[NETNS_PG_MD5_RESPONSE_LEN + 1];
	bool ok;
	int r;

	if (n == 0 || memchr(body, '\0', n) != body + n - 1)
		return bad_sandbox(pg, to_sandbox, err, "a malformed PasswordMessage");
	if (pg->client_auth == NETNS_PG_AUTH_MD5) {
		r = netns_pg_md5_response(pg->surrogate, strlen(pg->surrogate), pg->user,
					  pg->md5_salt, want);
		if (r < 0)
			return fail(pg, r, to_sandbox, "53200", err, "out of memory");
		ok = netns_pg_equal_secret(body, n - 1, want, NETNS_PG_MD5_RESPONSE_LEN);
		explicit_bzero(want, sizeof(want));
	} else
		ok = netns_pg_equal_secret(body, n - 1, pg->surrogate, strlen(pg->surrogate));
	if (!ok)
		return wrong_password(pg, to_sandbox, err);
	return sandbox_authenticated(pg, to_sandbox, to_upstream, err);
}

static int sandbox_message(struct netns_pg *pg, const uint8_t *m, size_t len,
			   struct netns_buf *to_sandbox, struct netns_buf *to_upstream,
			   struct al_error *err)
{
	if (pg->state == PG_STARTUP)
		return sandbox_first(pg, m, len, to_sandbox, to_upstream, err);
	if (m[0] != 'p')
		return bad_sandbox(pg, to_sandbox, err,
				   "a message of type 0x%02x during authentication", m[0]);
	if (pg->state == PG_SANDBOX_SASL_FIRST)
		return sandbox_sasl_first(pg, m + 5, len - 5, to_sandbox, err);
	if (pg->state == PG_SANDBOX_SASL_FINAL)
		return sandbox_sasl_final(pg, m + 5, len - 5, to_sandbox, to_upstream, err);
	return sandbox_password(pg, m + 5, len - 5, to_sandbox, to_upstream, err);
}

/* ---- the relay: the upstream's messages from AuthenticationOk on ---- */

/* Moves the framing over n bytes; whether it ends between two messages. -EBADMSG. */
static int relay_frame(struct pg_relay *rl, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n;) {
		size_t take;

		if (rl->head_n < 5) {
			rl->head[rl->head_n++] = p[i++];
			if (rl->head_n == 5) {
				uint32_t len = get_u32(rl->head + 1);

				if (len < 4 || len > INT32_MAX)
					return -EBADMSG;
				rl->left = len - 4;
				if (rl->left == 0)
					rl->head_n = 0;
			}
			continue;
		}
		take = (size_t)MIN((uint64_t)(n - i), rl->left);
		i += take;
		rl->left -= take;
		if (rl->left == 0)
			rl->head_n = 0;
	}
	return 0;
}

static int relay_feed(struct netns_pg *pg, const uint8_t *p, size_t n, struct netns_buf *to_sandbox,
		      struct al_error *err)
{
	struct pg_relay *rl = &pg->relay;
	size_t pw = pg->password ? pg->password->len : 0, keep = pw ? pw - 1 : 0, len, hold;
	int r;

	if (n == 0)
		return 0;
	if (relay_frame(rl, p, n) < 0)
		return fail(pg, -EBADMSG, to_sandbox, NULL, err,
			    "the upstream sent a message of a bad length");
	r = netns_buf_append(&rl->win, p, n, NETNS_PG_OUT_MAX);
	if (r < 0)
		return fail(pg, r, to_sandbox, NULL, err, "the relay's window is full");
	len = netns_buf_len(&rl->win);
	if (pw && memmem(netns_buf_head(&rl->win), len, pg->password->data, pw))
		return fail(pg, -EPERM, to_sandbox, NULL, err,
			    "the upstream sent the real password toward the sandbox");
	/* Between two messages everything goes: the start of the password may then be out
	 * already, never its end. Within one, what could begin it waits for the next bytes. */
	hold = rl->head_n == 0 ? 0 : MIN(keep, len - rl->sent);
	r = netns_buf_append(to_sandbox, netns_buf_head(&rl->win) + rl->sent, len - hold - rl->sent,
			     NETNS_PG_OUT_MAX);
	if (r < 0)
		return fail(pg, r, to_sandbox, NULL, err, "the sandbox's buffer is full");
	rl->sent = len - hold;
	netns_buf_consume(&rl->win, rl->sent - MIN(keep, rl->sent));
	rl->sent = MIN(keep, rl->sent);
	return 0;
}

/* ---- the upstream's side: the proxy is its client ---- */

static int send_startup(struct netns_pg *pg, struct netns_buf *to_upstream, struct al_error *err)
{
	_cleanup_(netns_buf_done) struct netns_buf b = {0};
	int r;

	r = buf_u32(&b, PG_PROTOCOL_3_0);
	if (r >= 0)
		r = buf_str(&b, "user");
	if (r >= 0)
		r = buf_str(&b, pg->user);
	if (r >= 0)
		r = buf_str(&b, "database");
	if (r >= 0)
		r = buf_str(&b, pg->database);
	if (r >= 0)
		r = buf_append_buf(&b, &pg->params, NETNS_PG_OUT_MAX);
	if (r >= 0)
		r = netns_buf_append(&b, "", 1, NETNS_PG_OUT_MAX);
	if (r >= 0)
		r = put_message(to_upstream, 0, netns_buf_head(&b), netns_buf_len(&b));
	if (r < 0)
		return fail(pg, r, NULL, NULL, err, "out of memory");
	pg->state = PG_UPSTREAM_AUTH;
	return 0;
}

/* The real password, asked for once. */
static int fetch_password(struct netns_pg *pg, struct netns_buf *to_sandbox, struct al_error *err)
{
	struct broker_secret *s = NULL;
	int r;

	if (pg->password)
		return 0;
	r = pg->password_fn(pg->userdata, &s, err);
	if (r < 0) {
		char why[sizeof(err->msg)];

		(void)snprintf(why, sizeof(why), "%s", err ? err->msg : "");
		return fail(pg, r, to_sandbox, "28000", err,
			    "no password for this credential from the broker%s%s",
			    why[0] ? ": " : "", why);
	}
	if (!s)
		return fail(pg, -EINVAL, to_sandbox, "28000", err,
			    "no password for this credential from the broker");
	pg->password = s;
	if (s->len == 0 || memchr(s->data, '\0', s->len))
		return fail(pg, -EINVAL, to_sandbox, "28000", err,
			    "the credential's password is empty or holds a NUL byte");
	pg->secrets = broker_secret_new(sizeof(struct pg_upstream_secrets));
	if (!pg->secrets)
		return fail(pg, -ENOMEM, to_sandbox, "53200", err, "out of memory");
	return 0;
}

static struct pg_upstream_secrets *secrets(struct netns_pg *pg)
{
	return (struct pg_upstream_secrets *)(void *)pg->secrets->data;
}

static int send_password(struct netns_pg *pg, const char *pw, size_t len,
			 struct netns_buf *to_sandbox, struct netns_buf *to_upstream,
			 struct al_error *err)
{
	int r;

	/* A password is a string with its NUL. */
	r = put_message(to_upstream, 'p', pw, len + 1);
	if (r < 0)
		return fail(pg, r, to_sandbox, "53200", err, "out of memory");
	pg->up = UP_PASSWORD;
	return 0;
}

/* AuthenticationSASL: SCRAM-SHA-256 if offered, never -PLUS. */
static int upstream_sasl(struct netns_pg *pg, struct al_wire c, struct netns_buf *to_sandbox,
			 struct netns_buf *to_upstream, struct al_error *err)
{
	_cleanup_(netns_buf_done) struct netns_buf m = {0};
	uint8_t raw[SCRAM_NONCE_RAW];
	bool plain = false, plus = false, ascii = true;
	size_t valid;
	int r;

	for (;;) {
		const char *mech;
		size_t len;

		if (!take_cstring(&c, &mech, &len))
			return bad_upstream(pg, to_sandbox, err,
					    "the upstream sent a malformed AuthenticationSASL");
		if (len == 0)
			break;
		plain |= strcmp(mech, SCRAM_MECHANISM) == 0;
		plus |= strcmp(mech, SCRAM_MECHANISM_PLUS) == 0;
	}
	if (c.len != 0)
		return bad_upstream(pg, to_sandbox, err,
				    "the upstream sent a malformed AuthenticationSASL");
	if (!plain)
		return fail(pg, -EPROTONOSUPPORT, to_sandbox, "28000", err,
			    "the upstream offers %s, which the proxy does not do",
			    plus ? "SCRAM with channel binding only" : "no SASL mechanism");
	/* SASLprep leaves ASCII, and a password that is not UTF-8, as it is; other text it
	 * would normalise, which is not done here. */
	for (size_t i = 0; i < pg->password->len; i++)
		ascii = ascii && (uint8_t)pg->password->data[i] < 0x80;
	if (!ascii && al_utf8_scan((const unsigned char *)pg->password->data, pg->password->len,
				   &valid) == AL_UTF8_WHOLE)
		return fail(
		    pg, -EPROTONOSUPPORT, to_sandbox, "28000", err,
		    "the credential's password needs SASLprep, which the proxy does not do");
	r = random_bytes(pg, raw, sizeof(raw));
	if (r < 0)
		return fail(pg, r, to_sandbox, "XX000", err, "no random bytes");
	(void)netns_pg_b64_encode(raw, sizeof(raw), pg->up_nonce);
	r = buf_str(&m, SCRAM_MECHANISM);
	if (r >= 0)
		r = buf_u32(&m, (uint32_t)strlen("n,,n=,r=") + SCRAM_NONCE_B64);
	if (r >= 0)
		r = netns_buf_printf(&m, NETNS_PG_OUT_MAX, "n,,n=,r=%s", pg->up_nonce);
	if (r >= 0)
		r = put_message(to_upstream, 'p', netns_buf_head(&m), netns_buf_len(&m));
	if (r < 0)
		return fail(pg, r, to_sandbox, "53200", err, "out of memory");
	pg->up = UP_SCRAM_FIRST;
	pg->up_method = "scram-sha-256";
	return 0;
}

/* The upstream's server-first-message: "r=" nonce ",s=" salt ",i=" iterations. */
static int upstream_server_first(struct netns_pg *pg, const char *s, size_t n,
				 size_t *ret_nonce_len, uint8_t *salt, size_t *ret_salt_len,
				 uint32_t *ret_iterations, struct netns_buf *to_sandbox,
				 struct al_error *err)
{
	const char *c1 = memchr(s, ',', n), *c2, *it;
	size_t it_len;
	uint64_t v = 0;

	c2 = c1 ? memchr(c1 + 1, ',', n - (size_t)(c1 + 1 - s)) : NULL;
	if (!c2 || n < 2 || memcmp(s, "r=", 2) != 0 || c2 - c1 < 3 ||
	    memcmp(c1 + 1, "s=", 2) != 0 || (size_t)(s + n - c2) < 4 ||
	    memcmp(c2 + 1, "i=", 2) != 0)
		return bad_upstream(pg, to_sandbox, err,
				    "the upstream sent a malformed SCRAM server-first-message");
	if ((size_t)(c1 - s) - 2 <= SCRAM_NONCE_B64 ||
	    memcmp(s + 2, pg->up_nonce, SCRAM_NONCE_B64) || !is_nonce(s + 2, (size_t)(c1 - s) - 2))
		return bad_upstream(pg, to_sandbox, err,
				    "the upstream's SCRAM nonce does not extend the proxy's");
	if (netns_pg_b64_decode(c1 + 3, (size_t)(c2 - c1) - 3, salt, SCRAM_SALT_MAX, ret_salt_len) <
		0 ||
	    *ret_salt_len == 0)
		return bad_upstream(pg, to_sandbox, err,
				    "the upstream sent a malformed SCRAM salt");
	it = c2 + 3;
	it_len = (size_t)(s + n - it);
	for (size_t i = 0; i < it_len && v <= NETNS_PG_SCRAM_ITERATIONS_MAX; i++) {
		if (it[i] < '0' || it[i] > '9')
			return bad_upstream(pg, to_sandbox, err,
					    "the upstream sent a malformed SCRAM iteration count");
		v = v * 10 + (uint64_t)(it[i] - '0');
	}
	if (v == 0)
		return bad_upstream(pg, to_sandbox, err,
				    "the upstream sent a malformed SCRAM iteration count");
	if (v > NETNS_PG_SCRAM_ITERATIONS_MAX)
		return fail(pg, -EPROTONOSUPPORT, to_sandbox, "28000", err,
			    "the upstream asks for more SCRAM iterations than %u",
			    NETNS_PG_SCRAM_ITERATIONS_MAX);
	*ret_nonce_len = (size_t)(c1 - s) - 2;
	*ret_iterations = (uint32_t)v;
	return 0;
}

/* AuthenticationSASLContinue: the proof goes, the server's signature is kept to check. */
static int upstream_sasl_continue(struct netns_pg *pg, const uint8_t *data, size_t n,
				  struct netns_buf *to_sandbox, struct netns_buf *to_upstream,
				  struct al_error *err)
{
	_cleanup_free_ char *auth = NULL;
	struct pg_upstream_secrets *sec = secrets(pg);
	_cleanup_free_ char *final = NULL;
	uint8_t salt[SCRAM_SALT_MAX], proof[NETNS_PG_SCRAM_KEY_LEN];
	size_t nonce_len = 0, salt_len = 0, len;
	uint32_t iterations = 0;
	int r;

	if (!is_text(data, n))
		return bad_upstream(pg, to_sandbox, err,
				    "the upstream sent a malformed SCRAM server-first-message");
	r = upstream_server_first(pg, (const char *)data, n, &nonce_len, salt, &salt_len,
				  &iterations, to_sandbox, err);
	if (r < 0)
		return r;
	/* client-final-without-proof: "c=" base64("n,,") ",r=" the whole nonce. */
	final = malloc(strlen("c=biws,r=") + nonce_len + strlen(",p=") + SCRAM_SIGNATURE_B64 + 1);
	if (!final)
		return fail(pg, -ENOMEM, to_sandbox, "53200", err, "out of memory");
	len = (size_t)sprintf(final, "c=biws,r=%.*s", (int)nonce_len, (const char *)data + 2);
	/* AuthMessage = client-first-bare "," server-first "," client-final-without-proof. */
	if (asprintf(&auth, "n=,r=%s,%.*s,%s", pg->up_nonce, (int)n, (const char *)data, final) <
	    0) {
		auth = NULL;
		return fail(pg, -ENOMEM, to_sandbox, "53200", err, "out of memory");
	}
	r = netns_pg_scram_derive(pg->password->data, pg->password->len, salt, salt_len, iterations,
				  &sec->keys);
	if (r >= 0)
		r = netns_pg_scram_proof(&sec->keys, auth, strlen(auth), proof);
	if (r >= 0)
		r = netns_pg_scram_signature(&sec->keys, auth, strlen(auth), sec->signature);
	explicit_bzero(&sec->keys, sizeof(sec->keys));
	if (r < 0)
		return fail(pg, r, to_sandbox, "53200", err, "out of memory");
	memcpy(final + len, ",p=", 3);
	len += 3;
	len += netns_pg_b64_encode(proof, sizeof(proof), final + len);
	explicit_bzero(proof, sizeof(proof));
	r = put_message(to_upstream, 'p', final, len);
	explicit_bzero(final, len);
	if (r < 0)
		return fail(pg, r, to_sandbox, "53200", err, "out of memory");
	pg->up = UP_SCRAM_FINAL;
	return 0;
}

/* AuthenticationSASLFinal: "v=" and the server's signature, which must be the one expected. */
static int upstream_sasl_final(struct netns_pg *pg, const uint8_t *data, size_t n,
			       struct netns_buf *to_sandbox, struct al_error *err)
{
	uint8_t sig[NETNS_PG_SCRAM_KEY_LEN + 3];
	size_t len;

	if (n < 2 || memcmp(data, "v=", 2) != 0 ||
	    netns_pg_b64_decode((const char *)data + 2, n - 2, sig, sizeof(sig), &len) < 0 ||
	    len != NETNS_PG_SCRAM_KEY_LEN ||
	    !netns_pg_equal_secret(sig, len, secrets(pg)->signature, NETNS_PG_SCRAM_KEY_LEN))
		return fail(pg, -EACCES, to_sandbox, "28000", err,
			    "the upstream did not prove it knows the password (SCRAM server "
			    "signature)");
	pg->up = UP_SCRAM_DONE;
	return 0;
}

/* An ErrorResponse during the upstream's authentication: passed to the sandbox unless it holds
 * the real password (then a generic one goes instead). Ends the connection with -EACCES. */
static int upstream_error(struct netns_pg *pg, const uint8_t *m, size_t len,
			  struct netns_buf *to_sandbox, struct al_error *err)
{
	char code[6] = "?";
	struct al_wire c = {m + 5, len - 5};
	bool leak;
	int r;

	if (c.len == 0 || c.p[c.len - 1] != '\0')
		return bad_upstream(pg, to_sandbox, err,
				    "the upstream sent a malformed ErrorResponse");
	/* Its SQLSTATE, for err: the field 'C'. */
	for (;;) {
		const char *v;
		size_t n;
		uint8_t type;

		if (!al_wire_take_u8(&c, &type) || type == '\0' || !take_cstring(&c, &v, &n))
			break;
		if (type == 'C' && n == 5)
			memcpy(code, v, 6);
	}
	leak = pg->password && memmem(m, len, pg->password->data, pg->password->len) != NULL;
	if (leak) {
		char text[PG_ERROR_TEXT_MAX];

		(void)snprintf(text, sizeof(text), "password authentication failed for user \"%s\"",
			       pg->user);
		r = put_error(to_sandbox, "28P01", text);
	} else
		r = netns_buf_append(to_sandbox, m, len, NETNS_PG_OUT_MAX);
	pg->told = r >= 0;
	pg->error = -EACCES;
	return al_error_set(err, -EACCES,
			    "Postgres: the upstream refused the login (SQLSTATE %s)%s", code,
			    leak ? "; its message held the password and was replaced" : "");
}

/* AuthenticationOk: the upstream let the proxy in. Only after a whole exchange (or none). */
static int upstream_ok(struct netns_pg *pg, const uint8_t *m, size_t len,
		       struct netns_buf *to_sandbox, struct netns_buf *to_upstream,
		       struct al_error *err)
{
	int r;

	if (pg->up == UP_SCRAM_FIRST || pg->up == UP_SCRAM_FINAL)
		return fail(pg, -EACCES, to_sandbox, "28000", err,
			    "the upstream did not prove it knows the password (AuthenticationOk "
			    "before the SCRAM exchange ended)");
	if (pg->up == UP_NONE)
		pg->up_method = "trust";
	r = buf_append_buf(to_upstream, &pg->pending, NETNS_PG_OUT_MAX);
	if (r < 0)
		return fail(pg, r, to_sandbox, "53200", err, "out of memory");
	netns_buf_done(&pg->pending);
	pg->state = PG_RELAY;
	pg->announce = NETNS_PG_RELAY;
	return relay_feed(pg, m, len, to_sandbox, err);
}

static int upstream_auth_request(struct netns_pg *pg, const uint8_t *m, size_t len,
				 struct netns_buf *to_sandbox, struct netns_buf *to_upstream,
				 struct al_error *err)
{
	const uint8_t *data = m + 9;
	size_t n = len - 9;
	uint32_t code;
	int r;

	if (len < 9)
		return bad_upstream(pg, to_sandbox, err, "the upstream sent a malformed request");
	code = get_u32(m + 5);
	switch (code) {
	case AUTH_OK:
		if (n != 0)
			break;
		return upstream_ok(pg, m, len, to_sandbox, to_upstream, err);
	case AUTH_CLEARTEXT:
		if (n != 0 || pg->up != UP_NONE)
			break;
		pg->up_method = "password";
		if (!pg->tls)
			return fail(pg, -EPROTONOSUPPORT, to_sandbox, "28000", err,
				    "the upstream asks for the password in clear without TLS");
		return send_password(pg, pg->password->data, pg->password->len, to_sandbox,
				     to_upstream, err);
	case AUTH_MD5:
		if (n != 4 || pg->up != UP_NONE)
			break;
		pg->up_method = "md5";
		r = netns_pg_md5_response(pg->password->data, pg->password->len, pg->user, data,
					  secrets(pg)->md5);
		if (r < 0)
			return fail(pg, r, to_sandbox, "53200", err, "out of memory");
		r = send_password(pg, secrets(pg)->md5, NETNS_PG_MD5_RESPONSE_LEN, to_sandbox,
				  to_upstream, err);
		explicit_bzero(secrets(pg)->md5, sizeof(secrets(pg)->md5));
		return r;
	case AUTH_SASL:
		if (pg->up != UP_NONE)
			break;
		return upstream_sasl(pg, (struct al_wire){data, n}, to_sandbox, to_upstream, err);
	case AUTH_SASL_CONTINUE:
		if (pg->up != UP_SCRAM_FIRST)
			break;
		return upstream_sasl_continue(pg, data, n, to_sandbox, to_upstream, err);
	case AUTH_SASL_FINAL:
		if (pg->up != UP_SCRAM_FINAL)
			break;
		return upstream_sasl_final(pg, data, n, to_sandbox, err);
	case AUTH_KERBEROS:
	case AUTH_SCM:
	case AUTH_GSS:
	case AUTH_GSS_CONTINUE:
	case AUTH_SSPI:
		return fail(pg, -EPROTONOSUPPORT, to_sandbox, "28000", err,
			    "the upstream asks for an authentication the proxy does not do (%u)",
			    code);
	default:
		break;
	}
	return bad_upstream(pg, to_sandbox, err,
			    "the upstream sent an authentication request out of place (%u)", code);
}

static int upstream_message(struct netns_pg *pg, const uint8_t *m, size_t len,
			    struct netns_buf *to_sandbox, struct netns_buf *to_upstream,
			    struct al_error *err)
{
	int r;

	/* Asked for at the first message, whatever it is: each is searched for it. */
	r = fetch_password(pg, to_sandbox, err);
	if (r < 0)
		return r;
	switch (m[0]) {
	case 'R':
		return upstream_auth_request(pg, m, len, to_sandbox, to_upstream, err);
	case 'E':
		return upstream_error(pg, m, len, to_sandbox, err);
	case 'N':
		return 0; /* a notice before the login: the sandbox's client takes none then */
	default:
		return bad_upstream(pg, to_sandbox, err,
				    "the upstream sent a message of type 0x%02x during "
				    "authentication",
				    m[0]);
	}
}

/* ---- the calls ---- */

static int refused_earlier(const struct netns_pg *pg, struct al_error *err)
{
	return al_error_set(err, pg->error, "Postgres: the connection failed earlier");
}

static int step(struct netns_pg *pg)
{
	enum netns_pg_step s = pg->announce;

	pg->announce = NETNS_PG_MORE;
	if (s != NETNS_PG_MORE)
		return (int)s;
	return pg->state == PG_RELAY ? NETNS_PG_RELAY : NETNS_PG_MORE;
}

int netns_pg_from_sandbox(struct netns_pg *pg, const uint8_t *p, size_t n,
			  struct netns_buf *to_sandbox, struct netns_buf *to_upstream,
			  struct al_error *err)
{
	int r;

	if (pg->error < 0)
		return refused_earlier(pg, err);
	while (n > 0) {
		ssize_t len;

		switch (pg->state) {
		case PG_STARTUP:
		case PG_SANDBOX_SASL_FIRST:
		case PG_SANDBOX_SASL_FINAL:
		case PG_SANDBOX_PASSWORD:
			len = frame(&pg->in_sandbox, pg->state != PG_STARTUP,
				    pg->state == PG_STARTUP ? NETNS_PG_STARTUP_MAX
							    : NETNS_PG_AUTH_MESSAGE_MAX,
				    &p, &n);
			if (len == -EMSGSIZE)
				return fail(pg, -EMSGSIZE, to_sandbox, "08P01", err,
					    "a message from the sandbox too long");
			if (len < 0 && len != -EBADMSG)
				return fail(pg, (int)len, to_sandbox, "53200", err,
					    "out of memory");
			if (len < 0)
				return bad_sandbox(pg, to_sandbox, err,
						   "a message from the sandbox of a bad length");
			if (len == 0)
				break;
			r = sandbox_message(pg, netns_buf_head(&pg->in_sandbox), (size_t)len,
					    to_sandbox, to_upstream, err);
			netns_buf_consume(&pg->in_sandbox, (size_t)len);
			if (r < 0)
				return pg->error < 0
					   ? r
					   : fail(pg, r, to_sandbox, "53200", err, "out of memory");
			break;
		case PG_UPSTREAM_SSL:
		case PG_UPSTREAM_TLS:
		case PG_UPSTREAM_AUTH:
			r = netns_buf_append(&pg->pending, p, n, NETNS_PG_AUTH_MESSAGE_MAX);
			if (r < 0)
				return fail(pg, r, to_sandbox, "08P01", err,
					    "too much from the sandbox before the login ended");
			n = 0;
			break;
		case PG_RELAY:
			r = netns_buf_append(to_upstream, p, n, NETNS_PG_OUT_MAX);
			if (r < 0)
				return fail(pg, r, to_sandbox, NULL, err,
					    "the upstream's buffer is full");
			n = 0;
			break;
		case PG_PASS:
		default:
			return fail(pg, -EBADMSG, to_sandbox, NULL, err,
				    "the sandbox sent more after a CancelRequest");
		}
	}
	return step(pg);
}

int netns_pg_from_upstream(struct netns_pg *pg, const uint8_t *p, size_t n,
			   struct netns_buf *to_sandbox, struct netns_buf *to_upstream,
			   struct al_error *err)
{
	int r;

	if (pg->error < 0)
		return refused_earlier(pg, err);
	while (n > 0) {
		ssize_t len;

		switch (pg->state) {
		case PG_UPSTREAM_SSL:
			/* Nothing may follow the answer: bytes after an 'S' would be read as if
			 * they came over TLS (CVE-2021-23222). */
			if (n != 1 || (p[0] != 'S' && p[0] != 'N'))
				return bad_upstream(
				    pg, to_sandbox, err,
				    "the upstream's answer to SSLRequest is not 'S' "
				    "or 'N' alone");
			if (p[0] == 'S') {
				pg->state = PG_UPSTREAM_TLS;
				pg->announce = NETNS_PG_START_TLS;
				return step(pg);
			}
			r = send_startup(pg, to_upstream, err);
			if (r < 0)
				return r;
			n = 0;
			break;
		case PG_UPSTREAM_AUTH:
			len = frame(&pg->in_upstream, true, NETNS_PG_AUTH_MESSAGE_MAX, &p, &n);
			if (len == -EMSGSIZE)
				return fail(pg, -EMSGSIZE, to_sandbox, "08006", err,
					    "a message from the upstream too long");
			if (len < 0 && len != -EBADMSG)
				return fail(pg, (int)len, to_sandbox, "53200", err,
					    "out of memory");
			if (len < 0)
				return bad_upstream(pg, to_sandbox, err,
						    "a message from the upstream of a bad length");
			if (len == 0)
				break;
			r = upstream_message(pg, netns_buf_head(&pg->in_upstream), (size_t)len,
					     to_sandbox, to_upstream, err);
			netns_buf_consume(&pg->in_upstream, (size_t)len);
			if (r < 0)
				return pg->error < 0
					   ? r
					   : fail(pg, r, to_sandbox, "53200", err, "out of memory");
			break;
		case PG_RELAY:
			r = relay_feed(pg, p, n, to_sandbox, err);
			if (r < 0)
				return r;
			n = 0;
			break;
		default:
			return bad_upstream(pg, to_sandbox, err, "the upstream spoke out of turn");
		}
	}
	return step(pg);
}

int netns_pg_tls_ready(struct netns_pg *pg, bool tls, struct netns_buf *to_upstream,
		       struct al_error *err)
{
	int r;

	if (pg->error < 0)
		return refused_earlier(pg, err);
	if (pg->state != PG_UPSTREAM_TLS)
		return fail(pg, -EINVAL, NULL, NULL, err, "TLS ready out of turn");
	if (!tls)
		return fail(pg, -EPROTO, NULL, NULL, err, "TLS to the upstream failed");
	pg->tls = true;
	r = send_startup(pg, to_upstream, err);
	return r < 0 ? r : step(pg);
}

int netns_pg_relay_from_upstream(struct netns_pg *pg, const uint8_t *p, size_t n,
				 struct netns_buf *to_sandbox, struct al_error *err)
{
	int r;

	if (pg->error < 0)
		return refused_earlier(pg, err);
	if (pg->state != PG_RELAY)
		return fail(pg, -EINVAL, NULL, NULL, err, "relay before the login ended");
	r = relay_feed(pg, p, n, to_sandbox, err);
	return r < 0 ? r : step(pg);
}

int netns_pg_report_failure(struct netns_pg *pg, const char *message, struct netns_buf *to_sandbox)
{
	char text[PG_ERROR_TEXT_MAX];
	int r;

	if (!sandbox_can_be_told(pg))
		return 0;
	(void)snprintf(text, sizeof(text), "airlock: %s", message);
	r = put_error(to_sandbox, "08006", text);
	if (r < 0)
		return r;
	pg->told = true;
	if (pg->error == 0)
		pg->error = -ECONNABORTED;
	return 0;
}

const char *netns_pg_upstream_auth(const struct netns_pg *pg)
{
	return pg->up_method;
}

bool netns_pg_upstream_tls(const struct netns_pg *pg)
{
	return pg->tls;
}

static bool is_printable_ascii(const char *s)
{
	for (; *s; s++)
		if (*s < 0x20 || *s > 0x7e)
			return false;
	return true;
}

int netns_pg_new(const struct netns_pg_options *o, struct netns_pg **ret)
{
	_cleanup_(netns_pg_freep) struct netns_pg *pg = NULL;

	if (!o->user || !o->user[0] || !o->database || !o->database[0] || !o->surrogate ||
	    !o->surrogate[0] || !is_printable_ascii(o->surrogate) || !o->password)
		return -EINVAL;
	pg = calloc(1, sizeof(*pg));
	if (!pg)
		return -ENOMEM;
	pg->user = strdup(o->user);
	pg->database = strdup(o->database);
	pg->surrogate = strdup(o->surrogate);
	if (!pg->user || !pg->database || !pg->surrogate)
		return -ENOMEM;
	pg->client_auth = o->client_auth;
	pg->password_fn = o->password;
	pg->random_fn = o->random;
	pg->userdata = o->userdata;
	*ret = TAKE_PTR(pg);
	return 0;
}

static void free_wiped(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

struct netns_pg *netns_pg_free(struct netns_pg *pg)
{
	if (!pg)
		return NULL;
	free(pg->user);
	free(pg->database);
	free_wiped(pg->surrogate);
	free(pg->first_bare);
	free(pg->server_first);
	free(pg->nonce);
	netns_buf_done(&pg->in_sandbox);
	netns_buf_done(&pg->in_upstream);
	netns_buf_done(&pg->params);
	netns_buf_done(&pg->pending);
	netns_buf_done(&pg->relay.win);
	pg->password = broker_secret_free(pg->password);
	pg->secrets = broker_secret_free(pg->secrets);
	explicit_bzero(pg, sizeof(*pg));
	free(pg);
	return NULL;
}
