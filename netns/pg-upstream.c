/* The proxy as the upstream's Postgres client (pg-parts-internal.h): the startup with the
 * credential's user and database, then the login the upstream asks for with the real password
 * from the broker: SCRAM-SHA-256 (its server signature checked), MD5, or cleartext over TLS;
 * its ErrorResponse passed to the sandbox without the password; AuthenticationOk starts the
 * relay. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/client.h"
#include "common/text-util.h"
#include "netns/pg-parts-internal.h"

int pg_upstream_startup(struct netns_pg *pg, struct netns_buf *to_upstream, struct al_error *err)
{
	_cleanup_(netns_buf_done) struct netns_buf b = {0};
	int r;

	r = pg_buf_u32(&b, PG_PROTOCOL_3_0);
	if (r >= 0)
		r = pg_buf_str(&b, "user");
	if (r >= 0)
		r = pg_buf_str(&b, pg->user);
	if (r >= 0)
		r = pg_buf_str(&b, "database");
	if (r >= 0)
		r = pg_buf_str(&b, pg->database);
	if (r >= 0)
		r = pg_buf_append_buf(&b, &pg->params, NETNS_PG_OUT_MAX);
	if (r >= 0)
		r = netns_buf_append(&b, "", 1, NETNS_PG_OUT_MAX);
	if (r >= 0)
		r = pg_put_message(to_upstream, 0, netns_buf_head(&b), netns_buf_len(&b));
	if (r < 0)
		return pg_fail(pg, r, NULL, NULL, err, "out of memory");
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
		return pg_fail(pg, r, to_sandbox, "28000", err,
			       "no password for this credential from the broker%s%s",
			       why[0] ? ": " : "", why);
	}
	if (!s)
		return pg_fail(pg, -EINVAL, to_sandbox, "28000", err,
			       "no password for this credential from the broker");
	pg->password = s;
	if (s->len == 0 || memchr(s->data, '\0', s->len))
		return pg_fail(pg, -EINVAL, to_sandbox, "28000", err,
			       "the credential's password is empty or holds a NUL byte");
	pg->secrets = broker_secret_new(sizeof(struct pg_upstream_secrets));
	if (!pg->secrets)
		return pg_fail(pg, -ENOMEM, to_sandbox, "53200", err, "out of memory");
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
	r = pg_put_message(to_upstream, 'p', pw, len + 1);
	if (r < 0)
		return pg_fail(pg, r, to_sandbox, "53200", err, "out of memory");
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

		if (!pg_take_cstring(&c, &mech, &len))
			return pg_bad_upstream(pg, to_sandbox, err,
					       "the upstream sent a malformed AuthenticationSASL");
		if (len == 0)
			break;
		plain |= strcmp(mech, SCRAM_MECHANISM) == 0;
		plus |= strcmp(mech, SCRAM_MECHANISM_PLUS) == 0;
	}
	if (c.len != 0)
		return pg_bad_upstream(pg, to_sandbox, err,
				       "the upstream sent a malformed AuthenticationSASL");
	if (!plain)
		return pg_fail(pg, -EPROTONOSUPPORT, to_sandbox, "28000", err,
			       "the upstream offers %s, which the proxy does not do",
			       plus ? "SCRAM with channel binding only" : "no SASL mechanism");
	/* SASLprep leaves ASCII, and a password that is not UTF-8, as it is; other text it
	 * would normalise, which is not done here. */
	for (size_t i = 0; i < pg->password->len; i++)
		ascii = ascii && (uint8_t)pg->password->data[i] < 0x80;
	if (!ascii && al_utf8_scan((const unsigned char *)pg->password->data, pg->password->len,
				   &valid) == AL_UTF8_WHOLE)
		return pg_fail(
		    pg, -EPROTONOSUPPORT, to_sandbox, "28000", err,
		    "the credential's password needs SASLprep, which the proxy does not do");
	r = pg_random_bytes(pg, raw, sizeof(raw));
	if (r < 0)
		return pg_fail(pg, r, to_sandbox, "XX000", err, "no random bytes");
	(void)al_base64_encode_to(raw, sizeof(raw), pg->up_nonce);
	r = pg_buf_str(&m, SCRAM_MECHANISM);
	if (r >= 0)
		r = pg_buf_u32(&m, (uint32_t)strlen("n,,n=,r=") + SCRAM_NONCE_B64);
	if (r >= 0)
		r = netns_buf_printf(&m, NETNS_PG_OUT_MAX, "n,,n=,r=%s", pg->up_nonce);
	if (r >= 0)
		r = pg_put_message(to_upstream, 'p', netns_buf_head(&m), netns_buf_len(&m));
	if (r < 0)
		return pg_fail(pg, r, to_sandbox, "53200", err, "out of memory");
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
		return pg_bad_upstream(pg, to_sandbox, err,
				       "the upstream sent a malformed SCRAM server-first-message");
	if ((size_t)(c1 - s) - 2 <= SCRAM_NONCE_B64 ||
	    memcmp(s + 2, pg->up_nonce, SCRAM_NONCE_B64) ||
	    !pg_is_nonce(s + 2, (size_t)(c1 - s) - 2))
		return pg_bad_upstream(pg, to_sandbox, err,
				       "the upstream's SCRAM nonce does not extend the proxy's");
	if (netns_pg_b64_decode(c1 + 3, (size_t)(c2 - c1) - 3, salt, SCRAM_SALT_MAX, ret_salt_len) <
		0 ||
	    *ret_salt_len == 0)
		return pg_bad_upstream(pg, to_sandbox, err,
				       "the upstream sent a malformed SCRAM salt");
	it = c2 + 3;
	it_len = (size_t)(s + n - it);
	for (size_t i = 0; i < it_len && v <= NETNS_PG_SCRAM_ITERATIONS_MAX; i++) {
		if (it[i] < '0' || it[i] > '9')
			return pg_bad_upstream(
			    pg, to_sandbox, err,
			    "the upstream sent a malformed SCRAM iteration count");
		v = v * 10 + (uint64_t)(it[i] - '0');
	}
	if (v == 0)
		return pg_bad_upstream(pg, to_sandbox, err,
				       "the upstream sent a malformed SCRAM iteration count");
	if (v > NETNS_PG_SCRAM_ITERATIONS_MAX)
		return pg_fail(pg, -EPROTONOSUPPORT, to_sandbox, "28000", err,
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

	if (!pg_is_text(data, n))
		return pg_bad_upstream(pg, to_sandbox, err,
				       "the upstream sent a malformed SCRAM server-first-message");
	r = upstream_server_first(pg, (const char *)data, n, &nonce_len, salt, &salt_len,
				  &iterations, to_sandbox, err);
	if (r < 0)
		return r;
	/* client-final-without-proof: "c=" base64("n,,") ",r=" the whole nonce. */
	final = malloc(strlen("c=biws,r=") + nonce_len + strlen(",p=") + SCRAM_SIGNATURE_B64 + 1);
	if (!final)
		return pg_fail(pg, -ENOMEM, to_sandbox, "53200", err, "out of memory");
	len = (size_t)sprintf(final, "c=biws,r=%.*s", (int)nonce_len, (const char *)data + 2);
	/* AuthMessage = client-first-bare "," server-first "," client-final-without-proof. */
	if (asprintf(&auth, "n=,r=%s,%.*s,%s", pg->up_nonce, (int)n, (const char *)data, final) <
	    0) {
		auth = NULL;
		return pg_fail(pg, -ENOMEM, to_sandbox, "53200", err, "out of memory");
	}
	r = netns_pg_scram_derive(pg->password->data, pg->password->len, salt, salt_len, iterations,
				  &sec->keys);
	if (r >= 0)
		r = netns_pg_scram_proof(&sec->keys, auth, strlen(auth), proof);
	if (r >= 0)
		r = netns_pg_scram_signature(&sec->keys, auth, strlen(auth), sec->signature);
	explicit_bzero(&sec->keys, sizeof(sec->keys));
	if (r < 0)
		return pg_fail(pg, r, to_sandbox, "53200", err, "out of memory");
	memcpy(final + len, ",p=", 3);
	len += 3;
	len += al_base64_encode_to(proof, sizeof(proof), final + len);
	explicit_bzero(proof, sizeof(proof));
	r = pg_put_message(to_upstream, 'p', final, len);
	explicit_bzero(final, len);
	if (r < 0)
		return pg_fail(pg, r, to_sandbox, "53200", err, "out of memory");
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
		return pg_fail(pg, -EACCES, to_sandbox, "28000", err,
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
		return pg_bad_upstream(pg, to_sandbox, err,
				       "the upstream sent a malformed ErrorResponse");
	/* Its SQLSTATE, for err: the field 'C'. */
	for (;;) {
		const char *v;
		size_t n;
		uint8_t type;

		if (!al_wire_take_u8(&c, &type) || type == '\0' || !pg_take_cstring(&c, &v, &n))
			break;
		if (type == 'C' && n == 5)
			memcpy(code, v, 6);
	}
	leak = pg->password && memmem(m, len, pg->password->data, pg->password->len) != NULL;
	if (leak) {
		char text[PG_ERROR_TEXT_MAX];

		(void)snprintf(text, sizeof(text), "password authentication failed for user \"%s\"",
			       pg->user);
		r = pg_put_error(to_sandbox, "28P01", text);
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
		return pg_fail(pg, -EACCES, to_sandbox, "28000", err,
			       "the upstream did not prove it knows the password (AuthenticationOk "
			       "before the SCRAM exchange ended)");
	if (pg->up == UP_NONE)
		pg->up_method = "trust";
	/* What the sandbox sent meanwhile goes through the relay's filter like the rest. */
	if (netns_buf_len(&pg->pending) > 0) {
		r = pg_front_feed(pg, netns_buf_head(&pg->pending), netns_buf_len(&pg->pending),
				  to_upstream, to_sandbox, err);
		netns_buf_done(&pg->pending);
		if (r < 0)
			return r;
	}
	pg->state = PG_RELAY;
	pg->announce = NETNS_PG_RELAY;
	return pg_relay_feed(pg, m, len, to_sandbox, err);
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
		return pg_bad_upstream(pg, to_sandbox, err,
				       "the upstream sent a malformed request");
	code = pg_get_u32(m + 5);
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
			return pg_fail(pg, -EPROTONOSUPPORT, to_sandbox, "28000", err,
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
			return pg_fail(pg, r, to_sandbox, "53200", err, "out of memory");
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
		return pg_fail(pg, -EPROTONOSUPPORT, to_sandbox, "28000", err,
			       "the upstream asks for an authentication the proxy does not do (%u)",
			       code);
	default:
		break;
	}
	return pg_bad_upstream(pg, to_sandbox, err,
			       "the upstream sent an authentication request out of place (%u)",
			       code);
}

int pg_upstream_message(struct netns_pg *pg, const uint8_t *m, size_t len,
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
		return pg_bad_upstream(pg, to_sandbox, err,
				       "the upstream sent a message of type 0x%02x during "
				       "authentication",
				       m[0]);
	}
}
