/* The proxy as the sandbox's Postgres server (pg-parts-internal.h): the sandbox's first
 * messages (SSLRequest and GSSENCRequest answered 'N', a CancelRequest passed on, the startup
 * held to the credential's user and database), then its login by the surrogate: SCRAM-SHA-256
 * as RFC 5802 and 7677 have it and Postgres does it, MD5, or cleartext. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/text-util.h"
#include "netns/pg-parts-internal.h"

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
		r = pg_random_bytes(pg, pg->md5_salt, sizeof(pg->md5_salt));
		if (r < 0)
			return pg_fail(pg, r, to_sandbox, "XX000", err, "no random bytes");
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
	return pg_put_message(to_sandbox, 'R', body, n);
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

		if (!pg_take_cstring(&c, &k, &kl) || (kl > 0 && !pg_take_cstring(&c, &v, &vl)))
			return pg_bad_sandbox(pg, to_sandbox, err, "a startup packet cut short");
		if (kl == 0)
			break;
		if (strcmp(k, "user") == 0 || strcmp(k, "database") == 0) {
			const char **slot = k[0] == 'u' ? &user : &database;

			if (*slot)
				return pg_bad_sandbox(pg, to_sandbox, err,
						      "a startup packet with \"%s\" twice", k);
			*slot = v;
			continue;
		}
		if (strncmp(k, "_pq_.", 5) == 0) {
			r = pg_buf_str(pq, k);
			n_pq++;
		} else {
			r = netns_buf_append(&pg->params, k, kl + 1, NETNS_PG_STARTUP_MAX);
			if (r >= 0)
				r = netns_buf_append(&pg->params, v, vl + 1, NETNS_PG_STARTUP_MAX);
		}
		if (r < 0)
			return pg_fail(pg, r, to_sandbox, "53200", err, "out of memory");
	}
	if (c.len != 0)
		return pg_bad_sandbox(pg, to_sandbox, err, "bytes after a startup packet's end");
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
	uint32_t version = pg_get_u32(m + 4), n_pq = 0;
	int r;

	if (version >> 16 != 3)
		return pg_bad_sandbox(pg, to_sandbox, err, "protocol %u.%u asked for, not 3",
				      version >> 16, version & 0xffff);
	r = startup_parameters(pg, (struct al_wire){m + 8, len - 8}, &user, &database, &pq, &n_pq,
			       to_sandbox, err);
	if (r < 0)
		return r;
	if (!user || !user[0])
		return pg_fail(pg, -EPERM, to_sandbox, "28000", err,
			       "no user name in the startup packet");
	if (!database || !database[0])
		database = user; /* as the server does */
	if (strcmp(user, pg->user) != 0 || strcmp(database, pg->database) != 0)
		return pg_fail(pg, -EPERM, to_sandbox, "28000", err,
			       "no credential for user \"%.64s\" and database \"%.64s\" on this "
			       "connection",
			       user, database);
	if ((version & 0xffff) != 0 || n_pq > 0) {
		/* NegotiateProtocolVersion: 3.0, and none of the options. */
		_cleanup_(netns_buf_done) struct netns_buf v = {0};

		r = pg_buf_u32(&v, 0);
		if (r >= 0)
			r = pg_buf_u32(&v, n_pq);
		if (r >= 0)
			r = pg_buf_append_buf(&v, &pq, NETNS_PG_OUT_MAX);
		if (r >= 0)
			r = pg_put_message(to_sandbox, 'v', netns_buf_head(&v), netns_buf_len(&v));
		if (r < 0)
			return pg_fail(pg, r, to_sandbox, "53200", err, "out of memory");
	}
	return ask_sandbox(pg, to_sandbox, err);
}

/* The sandbox's first, untyped message. */
static int sandbox_first(struct netns_pg *pg, const uint8_t *m, size_t len,
			 struct netns_buf *to_sandbox, struct netns_buf *to_upstream,
			 struct al_error *err)
{
	uint32_t code = pg_get_u32(m + 4);

	if (code == PG_SSL_REQUEST || code == PG_GSSENC_REQUEST) {
		if (len != 8 || ++pg->negotiations > PG_NEGOTIATIONS_MAX)
			return pg_bad_sandbox(pg, to_sandbox, err, "an SSLRequest out of place");
		/* 'N': the sandbox's link to the proxy does not leave the machine. */
		return netns_buf_append(to_sandbox, "N", 1, NETNS_PG_OUT_MAX);
	}
	if (code == PG_CANCEL_REQUEST) {
		if (len != 16)
			return pg_bad_sandbox(pg, to_sandbox, err,
					      "a CancelRequest of a bad length");
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
		return pg_bad_sandbox(pg, to_sandbox, err, "SCRAM channel binding is not offered");
	if (n < 3 || (s[0] != 'n' && s[0] != 'y') || s[1] != ',' || s[2] != ',')
		return pg_bad_sandbox(pg, to_sandbox, err,
				      "a SCRAM client-first-message without a GS2 header");
	bare = s + 3;
	n -= 3;
	comma = memchr(bare, ',', n);
	if (n < 2 || memcmp(bare, "n=", 2) != 0 || !comma || (size_t)(comma - bare) + 3 > n ||
	    memcmp(comma + 1, "r=", 2) != 0)
		return pg_bad_sandbox(pg, to_sandbox, err,
				      "a malformed SCRAM client-first-message");
	nonce = comma + 3;
	nonce_len = n - (size_t)(nonce - bare);
	if (nonce_len > SCRAM_CLIENT_NONCE_MAX || !pg_is_nonce(nonce, nonce_len))
		return pg_bad_sandbox(pg, to_sandbox, err, "a malformed SCRAM client nonce");

	r = pg_random_bytes(pg, raw, sizeof(raw));
	if (r >= 0)
		r = pg_random_bytes(pg, pg->salt, sizeof(pg->salt));
	if (r < 0)
		return pg_fail(pg, r, to_sandbox, "XX000", err, "no random bytes");
	(void)al_base64_encode_to(raw, sizeof(raw), server_nonce);
	(void)al_base64_encode_to(pg->salt, sizeof(pg->salt), salt);
	memcpy(pg->gs2, s, 3);
	pg->gs2[3] = '\0';
	pg->first_bare = strndup(bare, n);
	if (asprintf(&pg->nonce, "%.*s%s", (int)nonce_len, nonce, server_nonce) < 0)
		pg->nonce = NULL;
	if (pg->nonce && asprintf(&pg->server_first, "r=%s,s=%s,i=%u", pg->nonce, salt,
				  NETNS_PG_SCRAM_ITERATIONS) < 0)
		pg->server_first = NULL;
	if (!pg->first_bare || !pg->nonce || !pg->server_first)
		return pg_fail(pg, -ENOMEM, to_sandbox, "53200", err, "out of memory");
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

	if (!pg_take_cstring(&c, &mech, &mech_len) || !al_wire_take_u32(&c, &len))
		return pg_bad_sandbox(pg, to_sandbox, err, "a malformed SASLInitialResponse");
	if (strcmp(mech, SCRAM_MECHANISM_PLUS) == 0)
		return pg_bad_sandbox(pg, to_sandbox, err, "SCRAM channel binding is not offered");
	if (strcmp(mech, SCRAM_MECHANISM) != 0)
		return pg_bad_sandbox(pg, to_sandbox, err, "a SASL mechanism that was not offered");
	if (len != c.len || !pg_is_text(c.p, c.len))
		return pg_bad_sandbox(pg, to_sandbox, err, "a malformed SASLInitialResponse");
	r = sandbox_client_first(pg, (const char *)c.p, c.len, to_sandbox, err);
	if (r < 0)
		return r;
	r = pg_buf_u32(&m, AUTH_SASL_CONTINUE);
	if (r >= 0)
		r = netns_buf_append(&m, pg->server_first, strlen(pg->server_first),
				     NETNS_PG_OUT_MAX);
	if (r >= 0)
		r = pg_put_message(to_sandbox, 'R', netns_buf_head(&m), netns_buf_len(&m));
	if (r < 0)
		return pg_fail(pg, r, to_sandbox, "53200", err, "out of memory");
	pg->state = PG_SANDBOX_SASL_FINAL;
	return 0;
}

/* A wrong password, refused as Postgres refuses one. */
static int wrong_password(struct netns_pg *pg, struct netns_buf *to_sandbox, struct al_error *err)
{
	char text[PG_ERROR_TEXT_MAX];

	(void)snprintf(text, sizeof(text), "password authentication failed for user \"%s\"",
		       pg->user);
	if (pg_put_error(to_sandbox, "28P01", text) >= 0)
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
	r = pg_put_message(to_upstream, 0, req, sizeof(req));
	if (r < 0)
		return pg_fail(pg, r, to_sandbox, "53200", err, "out of memory");
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

	if (!pg_is_text(body, n))
		return pg_bad_sandbox(pg, to_sandbox, err,
				      "a malformed SCRAM client-final-message");
	c1 = memchr(s, ',', n);
	c2 = c1 ? memchr(c1 + 1, ',', n - (size_t)(c1 + 1 - s)) : NULL;
	if (!c2 || n < 2 || memcmp(s, "c=", 2) != 0 || (size_t)(c2 - c1) != 3 + nonce_len ||
	    memcmp(c1 + 1, "r=", 2) != 0 || (size_t)(s + n - c2) < 3 ||
	    memcmp(c2 + 1, "p=", 2) != 0)
		return pg_bad_sandbox(pg, to_sandbox, err,
				      "a malformed SCRAM client-final-message");
	if (netns_pg_b64_decode(s + 2, (size_t)(c1 - s) - 2, gs2, sizeof(gs2), &len) < 0 ||
	    len != 3 || memcmp(gs2, pg->gs2, 3) != 0)
		return pg_bad_sandbox(pg, to_sandbox, err,
				      "SCRAM channel binding data that differs");
	if (memcmp(c1 + 3, pg->nonce, nonce_len) != 0)
		return pg_bad_sandbox(pg, to_sandbox, err, "a SCRAM nonce that differs");
	if (netns_pg_b64_decode(c2 + 3, (size_t)(s + n - c2) - 3, proof, sizeof(proof), &len) < 0 ||
	    len != NETNS_PG_SCRAM_KEY_LEN)
		return pg_bad_sandbox(pg, to_sandbox, err, "a malformed SCRAM proof");

	/* AuthMessage = client-first-bare "," server-first "," client-final-without-proof. */
	if (asprintf(&auth, "%s,%s,%.*s", pg->first_bare, pg->server_first, (int)(c2 - s), s) < 0) {
		auth = NULL;
		return pg_fail(pg, -ENOMEM, to_sandbox, "53200", err, "out of memory");
	}
	r = netns_pg_scram_derive(pg->surrogate, strlen(pg->surrogate), pg->salt, sizeof(pg->salt),
				  NETNS_PG_SCRAM_ITERATIONS, &k);
	if (r < 0)
		return pg_fail(pg, r, to_sandbox, "53200", err, "out of memory");
	ok = netns_pg_scram_proof_ok(&k, auth, strlen(auth), proof);
	r = ok ? netns_pg_scram_signature(&k, auth, strlen(auth), sig) : 0;
	explicit_bzero(&k, sizeof(k));
	if (!ok)
		return wrong_password(pg, to_sandbox, err);
	if (r < 0)
		return pg_fail(pg, r, to_sandbox, "53200", err, "out of memory");
	al_wire_put_u32((uint8_t *) final, AUTH_SASL_FINAL);
	memcpy(final + 4, "v=", 2);
	len = 6 + al_base64_encode_to(sig, sizeof(sig), final + 6);
	r = pg_put_message(to_sandbox, 'R', final, len);
	if (r < 0)
		return pg_fail(pg, r, to_sandbox, "53200", err, "out of memory");
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
		return pg_bad_sandbox(pg, to_sandbox, err, "a malformed PasswordMessage");
	if (pg->client_auth == NETNS_PG_AUTH_MD5) {
		r = netns_pg_md5_response(pg->surrogate, strlen(pg->surrogate), pg->user,
					  pg->md5_salt, want);
		if (r < 0)
			return pg_fail(pg, r, to_sandbox, "53200", err, "out of memory");
		ok = netns_pg_equal_secret(body, n - 1, want, NETNS_PG_MD5_RESPONSE_LEN);
		explicit_bzero(want, sizeof(want));
	} else
		ok = netns_pg_equal_secret(body, n - 1, pg->surrogate, strlen(pg->surrogate));
	if (!ok)
		return wrong_password(pg, to_sandbox, err);
	return sandbox_authenticated(pg, to_sandbox, to_upstream, err);
}

int pg_sandbox_message(struct netns_pg *pg, const uint8_t *m, size_t len,
		       struct netns_buf *to_sandbox, struct netns_buf *to_upstream,
		       struct al_error *err)
{
	if (pg->state == PG_STARTUP)
		return sandbox_first(pg, m, len, to_sandbox, to_upstream, err);
	if (m[0] != 'p')
		return pg_bad_sandbox(pg, to_sandbox, err,
				      "a message of type 0x%02x during authentication", m[0]);
	if (pg->state == PG_SANDBOX_SASL_FIRST)
		return sandbox_sasl_first(pg, m + 5, len - 5, to_sandbox, err);
	if (pg->state == PG_SANDBOX_SASL_FINAL)
		return sandbox_sasl_final(pg, m + 5, len - 5, to_sandbox, to_upstream, err);
	return sandbox_password(pg, m + 5, len - 5, to_sandbox, to_upstream, err);
}
