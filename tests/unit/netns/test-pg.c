/* tests/unit/netns/test-pg.c: a Postgres login through the proxy (netns/pg.c, netns/pg-auth.c).
 * The test plays both ends: a client in the sandbox and a server upstream, each written here
 * from the protocol's documentation with OpenSSL's own PBKDF2 and HMAC (not the proxy's), and
 * drives the proxy between them a byte at a time and in whole chunks. The arithmetic is checked
 * against RFC 7677's example and a known MD5 password hash; the refusals each on its own. */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include "broker/client.h"
#include "common/text-util.h"
#include "netns/pg-internal.h"

#define USER "app"
#define DATABASE "appdb"
#define SURROGATE "airlock_sur_Xq7mW2pLk9"
#define REAL "s3cret-Real-pw!"

/* ---- the test's harness around one connection ---- */

struct conn {
	struct netns_pg *pg;
	struct netns_buf to_sandbox, to_upstream;
	struct al_error err;
	const char *real; /* what the password callback gives */
	unsigned password_calls;
	size_t chunk; /* bytes fed per call */
};

static int give_password(void *userdata, struct broker_secret **ret, struct al_error *err)
{
	struct conn *c = userdata;
	struct broker_secret *s;

	(void)err;
	c->password_calls++;
	s = broker_secret_new(strlen(c->real));
	assert_non_null(s);
	memcpy(s->data, c->real, strlen(c->real));
	*ret = s;
	return 0;
}

static void conn_open(struct conn *c, enum netns_pg_auth auth, size_t chunk)
{
	struct netns_pg_options o = {
	    .user = USER,
	    .database = DATABASE,
	    .surrogate = SURROGATE,
	    .client_auth = auth,
	    .password = give_password,
	    .userdata = c,
	};

	*c = (struct conn){.real = REAL, .chunk = chunk};
	assert_int_equal(netns_pg_new(&o, &c->pg), 0);
}

static void conn_close(struct conn *c)
{
	c->pg = netns_pg_free(c->pg);
	netns_buf_done(&c->to_sandbox);
	netns_buf_done(&c->to_upstream);
}

/* Feeds bytes from one side in pieces of c->chunk: the first error, else the step that was
 * reached (NETNS_PG_MORE when none was). */
static int feed(struct conn *c, bool from_upstream, const void *data, size_t n)
{
	const uint8_t *p = data;
	int step = NETNS_PG_MORE;

	for (size_t off = 0; off < n || (n == 0 && off == 0); off += c->chunk) {
		size_t k = MIN(c->chunk, n - off);
		int r = from_upstream ? netns_pg_from_upstream(c->pg, p + off, k, &c->to_sandbox,
							       &c->to_upstream, &c->err)
				      : netns_pg_from_sandbox(c->pg, p + off, k, &c->to_sandbox,
							      &c->to_upstream, &c->err);

		if (r < 0)
			return r;
		if (r != NETNS_PG_MORE)
			step = r;
		if (n == 0)
			break;
	}
	return step;
}

static int from_sandbox(struct conn *c, const void *data, size_t n)
{
	return feed(c, false, data, n);
}

static int from_upstream(struct conn *c, const void *data, size_t n)
{
	return feed(c, true, data, n);
}

/* ---- messages ---- */

struct msg {
	uint8_t b[4096];
	size_t n;
};

static void put_u32(struct msg *m, uint32_t v)
{
	m->b[m->n++] = (uint8_t)(v >> 24);
	m->b[m->n++] = (uint8_t)(v >> 16);
	m->b[m->n++] = (uint8_t)(v >> 8);
	m->b[m->n++] = (uint8_t)v;
}

static void put_bytes(struct msg *m, const void *p, size_t n)
{
	assert_true(m->n + n <= sizeof(m->b));
	if (n > 0)
		memcpy(m->b + m->n, p, n);
	m->n += n;
}

static void put_str(struct msg *m, const char *s)
{
	put_bytes(m, s, strlen(s) + 1);
}

static uint32_t get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Starts a typed message; end() writes its length. */
static void begin(struct msg *m, char type)
{
	m->n = 0;
	m->b[m->n++] = (uint8_t)type;
	put_u32(m, 0);
}

static void end(struct msg *m)
{
	uint32_t len = (uint32_t)(m->n - 1);

	m->b[1] = (uint8_t)(len >> 24);
	m->b[2] = (uint8_t)(len >> 16);
	m->b[3] = (uint8_t)(len >> 8);
	m->b[4] = (uint8_t)len;
}

/* A StartupMessage: name, value, ..., NULL. */
static void startup(struct msg *m, uint32_t version, ...)
{
	va_list ap;
	const char *s;

	m->n = 0;
	put_u32(m, 0);
	put_u32(m, version);
	va_start(ap, version);
	while ((s = va_arg(ap, const char *)))
		put_str(m, s);
	va_end(ap);
	m->b[m->n++] = 0;
	m->b[0] = (uint8_t)(m->n >> 24);
	m->b[1] = (uint8_t)(m->n >> 16);
	m->b[2] = (uint8_t)(m->n >> 8);
	m->b[3] = (uint8_t)m->n;
}

static void auth_request(struct msg *m, uint32_t code, const void *data, size_t n)
{
	begin(m, 'R');
	put_u32(m, code);
	put_bytes(m, data, n);
	end(m);
}

/* Takes the first message out of b: its type, and a copy of its body (NUL-terminated). */
static char take(struct netns_buf *b, uint8_t *body, size_t size, size_t *ret_len)
{
	const uint8_t *p = netns_buf_head(b);
	size_t len;
	char type;

	assert_true(netns_buf_len(b) >= 5);
	type = (char)p[0];
	len = get_u32(p + 1) - 4;
	assert_true(netns_buf_len(b) >= 5 + len);
	assert_true(len < size);
	memcpy(body, p + 5, len);
	body[len] = 0;
	netns_buf_consume(b, 5 + len);
	if (ret_len)
		*ret_len = len;
	return type;
}

/* The ErrorResponse at the head of b: its SQLSTATE must be code; returns its message. */
static const char *take_error(struct netns_buf *b, const char *code)
{
	static uint8_t body[4096];
	const char *f, *message = NULL, *sqlstate = NULL;
	size_t len;

	assert_int_equal(take(b, body, sizeof(body), &len), 'E');
	for (f = (const char *)body; *f; f += strlen(f) + 1) {
		if (f[0] == 'C')
			sqlstate = f + 1;
		if (f[0] == 'M')
			message = f + 1;
	}
	assert_non_null(sqlstate);
	assert_string_equal(sqlstate, code);
	assert_non_null(message);
	return message;
}

static bool holds(const struct netns_buf *b, const char *s)
{
	return netns_buf_len(b) > 0 && memmem(netns_buf_head(b), netns_buf_len(b), s, strlen(s));
}

/* ---- SCRAM-SHA-256, written here with OpenSSL's primitives ---- */

struct scram {
	uint8_t client_key[32], stored_key[32], server_key[32];
};

static void scram_keys(const char *password, const uint8_t *salt, size_t salt_len,
		       unsigned iterations, struct scram *k)
{
	uint8_t salted[32];
	unsigned len;

	assert_int_equal(PKCS5_PBKDF2_HMAC(password, (int)strlen(password), salt, (int)salt_len,
					   (int)iterations, EVP_sha256(), 32, salted),
			 1);
	assert_non_null(
	    HMAC(EVP_sha256(), salted, 32, (const uint8_t *)"Client Key", 10, k->client_key, &len));
	SHA256(k->client_key, 32, k->stored_key);
	assert_non_null(
	    HMAC(EVP_sha256(), salted, 32, (const uint8_t *)"Server Key", 10, k->server_key, &len));
}

static void b64(const uint8_t *p, size_t n, char *out)
{
	EVP_EncodeBlock((uint8_t *)out, p, (int)n);
}

static size_t unb64(const char *s, uint8_t *out)
{
	size_t n = strlen(s);
	int len = EVP_DecodeBlock(out, (const uint8_t *)s, (int)n);

	assert_true(len >= 0);
	return (size_t)len - (n >= 1 && s[n - 1] == '=') - (n >= 2 && s[n - 2] == '=');
}

/* The value of attribute name= in a SCRAM message. */
static void attr(const char *msg, const char *name, char *out, size_t size)
{
	const char *p = msg;
	size_t nl = strlen(name);

	for (;;) {
		if (strncmp(p, name, nl) == 0 && p[nl] == '=') {
			size_t len = strcspn(p + nl + 1, ",");

			assert_true(len < size);
			memcpy(out, p + nl + 1, len);
			out[len] = 0;
			return;
		}
		p = strchr(p, ',');
		assert_non_null(p);
		p++;
	}
}

/* The client's final message with its proof over auth_message; the server's signature into
 * ret_sig. */
static void scram_client_final(const struct scram *k, const char *auth_message,
			       const char *without_proof, char *out, uint8_t ret_sig[32])
{
	uint8_t sig[32], proof[32];
	char proof64[64];
	unsigned len;

	assert_non_null(HMAC(EVP_sha256(), k->stored_key, 32, (const uint8_t *)auth_message,
			     strlen(auth_message), sig, &len));
	for (size_t i = 0; i < 32; i++)
		proof[i] = k->client_key[i] ^ sig[i];
	b64(proof, 32, proof64);
	sprintf(out, "%s,p=%s", without_proof, proof64);
	assert_non_null(HMAC(EVP_sha256(), k->server_key, 32, (const uint8_t *)auth_message,
			     strlen(auth_message), ret_sig, &len));
}

/* ---- the sandbox's side ---- */

static void send_startup(struct conn *c, const char *user, const char *database)
{
	struct msg m;

	if (database)
		startup(&m, 196608, "user", user, "database", database, "application_name", "psql",
			"client_encoding", "UTF8", NULL);
	else
		startup(&m, 196608, "user", user, "application_name", "psql", NULL);
	assert_int_equal(from_sandbox(c, m.b, m.n), NETNS_PG_MORE);
}

/* The sandbox's SCRAM login with password; returns the proxy's step after the proof. */
static int sandbox_scram(struct conn *c, const char *password)
{
	uint8_t body[1024], salt[64], sig[48], want_sig[32];
	char server_first[1024], nonce[1024], salt64[1024], iter[16], auth[4096], final[4096],
	    without[2048], v[1024];
	struct scram k;
	struct msg m;
	size_t len;
	int r;

	assert_int_equal(take(&c->to_sandbox, body, sizeof(body), &len), 'R');
	assert_int_equal(get_u32(body), 10);
	/* Offered: SCRAM-SHA-256 alone. */
	assert_int_equal(len, 4 + sizeof("SCRAM-SHA-256") + 1);
	assert_memory_equal(body + 4, "SCRAM-SHA-256\0", sizeof("SCRAM-SHA-256") + 1);

	begin(&m, 'p');
	put_str(&m, "SCRAM-SHA-256");
	put_u32(&m, (uint32_t)strlen("n,,n=,r=rOprNGfwEbeRWgbNEkqO"));
	put_bytes(&m, "n,,n=,r=rOprNGfwEbeRWgbNEkqO", strlen("n,,n=,r=rOprNGfwEbeRWgbNEkqO"));
	end(&m);
	assert_int_equal(from_sandbox(c, m.b, m.n), NETNS_PG_MORE);

	assert_int_equal(take(&c->to_sandbox, body, sizeof(body), &len), 'R');
	assert_int_equal(get_u32(body), 11);
	snprintf(server_first, sizeof(server_first), "%s", (const char *)body + 4);
	attr(server_first, "r", nonce, sizeof(nonce));
	attr(server_first, "s", salt64, sizeof(salt64));
	attr(server_first, "i", iter, sizeof(iter));
	assert_int_equal(strncmp(nonce, "rOprNGfwEbeRWgbNEkqO", 20), 0);
	assert_true(strlen(nonce) > 20);
	assert_string_equal(iter, "4096");
	len = unb64(salt64, salt);
	assert_int_equal(len, 16);

	scram_keys(password, salt, len, 4096, &k);
	snprintf(without, sizeof(without), "c=biws,r=%s", nonce);
	snprintf(auth, sizeof(auth), "n=,r=rOprNGfwEbeRWgbNEkqO,%s,%s", server_first, without);
	scram_client_final(&k, auth, without, final, want_sig);
	begin(&m, 'p');
	put_bytes(&m, final, strlen(final));
	end(&m);
	r = from_sandbox(c, m.b, m.n);
	if (r < 0)
		return r;
	assert_int_equal(take(&c->to_sandbox, body, sizeof(body), &len), 'R');
	assert_int_equal(get_u32(body), 12);
	snprintf(v, sizeof(v), "%s", (const char *)body + 4);
	assert_int_equal(strncmp(v, "v=", 2), 0);
	assert_int_equal(unb64(v + 2, sig), 32);
	assert_memory_equal(sig, want_sig, 32);
	return r;
}

/* md5 + md5hex(md5hex(password + user) + salt). */
static void md5_response(const char *password, const char *user, const uint8_t salt[4],
			 char out[36])
{
	uint8_t md[16], in[64 + 4];
	char hex[33];
	unsigned len;

	snprintf((char *)in, sizeof(in), "%s%s", password, user);
	assert_int_equal(EVP_Digest(in, strlen((char *)in), md, &len, EVP_md5(), NULL), 1);
	for (size_t i = 0; i < 16; i++)
		sprintf(hex + 2 * i, "%02x", md[i]);
	memcpy(in, hex, 32);
	memcpy(in + 32, salt, 4);
	assert_int_equal(EVP_Digest(in, 36, md, &len, EVP_md5(), NULL), 1);
	strcpy(out, "md5");
	for (size_t i = 0; i < 16; i++)
		sprintf(out + 3 + 2 * i, "%02x", md[i]);
}

static int sandbox_md5(struct conn *c, const char *password)
{
	uint8_t body[64];
	char resp[36];
	struct msg m;
	size_t len;

	assert_int_equal(take(&c->to_sandbox, body, sizeof(body), &len), 'R');
	assert_int_equal(get_u32(body), 5);
	assert_int_equal(len, 8);
	md5_response(password, USER, body + 4, resp);
	begin(&m, 'p');
	put_str(&m, resp);
	end(&m);
	return from_sandbox(c, m.b, m.n);
}

static int sandbox_cleartext(struct conn *c, const char *password)
{
	uint8_t body[64];
	struct msg m;
	size_t len;

	assert_int_equal(take(&c->to_sandbox, body, sizeof(body), &len), 'R');
	assert_int_equal(get_u32(body), 3);
	assert_int_equal(len, 4);
	begin(&m, 'p');
	put_str(&m, password);
	end(&m);
	return from_sandbox(c, m.b, m.n);
}

/* The sandbox logs in (startup and its method) and the proxy asks to reach the upstream. */
static void sandbox_logs_in(struct conn *c, enum netns_pg_auth auth)
{
	int r;

	send_startup(c, USER, DATABASE);
	r = auth == NETNS_PG_AUTH_SCRAM ? sandbox_scram(c, SURROGATE)
	    : auth == NETNS_PG_AUTH_MD5 ? sandbox_md5(c, SURROGATE)
					: sandbox_cleartext(c, SURROGATE);
	assert_int_equal(r, NETNS_PG_CONNECT);
	assert_int_equal(netns_buf_len(&c->to_sandbox), 0);
	/* An SSLRequest first. */
	assert_int_equal(netns_buf_len(&c->to_upstream), 8);
	assert_memory_equal(netns_buf_head(&c->to_upstream), "\0\0\0\x08\x04\xd2\x16\x2f", 8);
	netns_buf_consume(&c->to_upstream, 8);
}

/* ---- the upstream's side ---- */

/* The upstream answers the SSLRequest (tls: 'S', and the handshake is said to be done), then
 * reads the startup. */
static void upstream_takes_startup(struct conn *c, bool tls)
{
	const uint8_t *p;
	size_t len;

	if (tls) {
		assert_int_equal(from_upstream(c, "S", 1), NETNS_PG_START_TLS);
		assert_int_equal(netns_buf_len(&c->to_upstream), 0);
		assert_int_equal(netns_pg_tls_ready(c->pg, true, &c->to_upstream, &c->err),
				 NETNS_PG_MORE);
	} else
		assert_int_equal(from_upstream(c, "N", 1), NETNS_PG_MORE);
	assert_int_equal(netns_pg_upstream_tls(c->pg), tls);
	p = netns_buf_head(&c->to_upstream);
	len = get_u32(p);
	assert_int_equal(netns_buf_len(&c->to_upstream), len);
	assert_int_equal(get_u32(p + 4), 196608);
	/* The credential's user and database, then the sandbox's other parameters. */
	assert_int_equal(len, 8 + sizeof("user\0" USER "\0database\0" DATABASE
					 "\0application_name\0psql\0client_encoding\0UTF8\0"));
	assert_memory_equal(p + 8,
			    "user\0" USER "\0database\0" DATABASE
			    "\0application_name\0psql\0client_encoding\0UTF8\0",
			    len - 8);
	netns_buf_consume(&c->to_upstream, len);
}

/* The upstream's SCRAM exchange up to its final message (which is returned, unsent): sasl is
 * the mechanism list it offers (NUL-separated, with the list's end). */
static void upstream_scram(struct conn *c, const void *sasl, size_t sasl_len, struct msg *ret_final)
{
	static const uint8_t salt[16] = "saltsaltsaltsalt";
	uint8_t body[1024], sig[32];
	char client_first[1024], nonce[2048], server_first[4096], final[4096], want[4096],
	    auth[8192], salt64[64], sig64[64];
	struct scram k;
	struct msg m;
	size_t len;
	uint32_t n;

	auth_request(&m, 10, sasl, sasl_len);
	assert_int_equal(from_upstream(c, m.b, m.n), NETNS_PG_MORE);
	assert_int_equal(c->password_calls, 1);
	/* SASLInitialResponse: SCRAM-SHA-256 (never -PLUS), "n,," and a nonce. */
	assert_int_equal(take(&c->to_upstream, body, sizeof(body), &len), 'p');
	assert_string_equal((char *)body, "SCRAM-SHA-256");
	n = get_u32(body + 14);
	assert_int_equal(n, len - 18);
	memcpy(client_first, body + 18, n);
	client_first[n] = 0;
	assert_int_equal(strncmp(client_first, "n,,n=,r=", 8), 0);
	snprintf(nonce, sizeof(nonce), "%sSERVERnonce", client_first + 8);
	b64(salt, sizeof(salt), salt64);
	snprintf(server_first, sizeof(server_first), "r=%s,s=%s,i=4096", nonce, salt64);
	auth_request(&m, 11, server_first, strlen(server_first));
	assert_int_equal(from_upstream(c, m.b, m.n), NETNS_PG_MORE);

	/* The proof must be the one for the real password. */
	scram_keys(REAL, salt, sizeof(salt), 4096, &k);
	assert_int_equal(take(&c->to_upstream, body, sizeof(body), &len), 'p');
	snprintf(final, sizeof(final), "%s", (char *)body);
	snprintf(auth, sizeof(auth), "%s,%s,c=biws,r=%s", client_first + 3, server_first, nonce);
	scram_client_final(&k, auth, strstr(auth, "c=biws"), want, sig);
	assert_string_equal(final, want);
	assert_int_equal(netns_buf_len(&c->to_upstream), 0);
	b64(sig, 32, sig64);
	snprintf(final, sizeof(final), "v=%s", sig64);
	auth_request(ret_final, 12, final, strlen(final));
}

/* What a server sends after AuthenticationOk, up to ReadyForQuery. */
static void after_ok(struct msg *m)
{
	struct msg s;

	begin(&s, 'S');
	put_str(&s, "server_version");
	put_str(&s, "15.8");
	end(&s);
	put_bytes(m, s.b, s.n);
	begin(&s, 'K');
	put_u32(&s, 4242);
	put_u32(&s, 0x5eed);
	end(&s);
	put_bytes(m, s.b, s.n);
	begin(&s, 'Z');
	put_bytes(&s, "I", 1);
	end(&s);
	put_bytes(m, s.b, s.n);
}

/* AuthenticationOk and what follows, to the sandbox: the relay starts. */
static void upstream_lets_in(struct conn *c, struct msg *before)
{
	struct msg m = {.n = 0};

	if (before)
		put_bytes(&m, before->b, before->n);
	put_bytes(&m, "R\0\0\0\x08\0\0\0\0", 9);
	after_ok(&m);
	assert_int_equal(from_upstream(c, m.b, m.n), NETNS_PG_RELAY);
	/* The sandbox gets AuthenticationOk and the rest as they came. */
	assert_int_equal(netns_buf_len(&c->to_sandbox), m.n - (before ? before->n : 0));
	assert_memory_equal(netns_buf_head(&c->to_sandbox), m.b + (before ? before->n : 0),
			    netns_buf_len(&c->to_sandbox));
	netns_buf_consume(&c->to_sandbox, netns_buf_len(&c->to_sandbox));
}

/* ---- whole logins ---- */

static void test_pg_scram_login_both_ways_with_tls_upstream(void **state)
{
	static const uint8_t sasl[] = "SCRAM-SHA-256-PLUS\0SCRAM-SHA-256\0";

	(void)state;
	for (size_t chunk = 1; chunk <= 4096; chunk *= 4096) {
		struct conn c;
		struct msg final, q;

		conn_open(&c, NETNS_PG_AUTH_SCRAM, chunk);
		sandbox_logs_in(&c, NETNS_PG_AUTH_SCRAM);
		/* The sandbox's first query, early: it waits for the relay. */
		begin(&q, 'Q');
		put_str(&q, "SELECT 1");
		end(&q);
		assert_int_equal(from_sandbox(&c, q.b, q.n), NETNS_PG_MORE);
		upstream_takes_startup(&c, true);
		upstream_scram(&c, sasl, sizeof(sasl), &final);
		upstream_lets_in(&c, &final);
		assert_string_equal(netns_pg_upstream_auth(c.pg), "scram-sha-256");
		/* The early query went out with the relay, and later bytes pass as they are. */
		assert_int_equal(netns_buf_len(&c.to_upstream), q.n);
		assert_memory_equal(netns_buf_head(&c.to_upstream), q.b, q.n);
		netns_buf_consume(&c.to_upstream, q.n);
		assert_int_equal(from_sandbox(&c, q.b, q.n), NETNS_PG_RELAY);
		assert_int_equal(netns_buf_len(&c.to_upstream), q.n);
		assert_int_equal(c.password_calls, 1);
		conn_close(&c);
	}
}

static void test_pg_md5_login_both_ways_plain_upstream(void **state)
{
	static const uint8_t salt[4] = {0x01, 0x02, 0xfe, 0xff};

	(void)state;
	for (size_t chunk = 1; chunk <= 4096; chunk *= 4096) {
		struct conn c;
		uint8_t body[128];
		char want[36];
		struct msg m;
		size_t len;

		conn_open(&c, NETNS_PG_AUTH_MD5, chunk);
		sandbox_logs_in(&c, NETNS_PG_AUTH_MD5);
		upstream_takes_startup(&c, false);
		auth_request(&m, 5, salt, 4);
		assert_int_equal(from_upstream(&c, m.b, m.n), NETNS_PG_MORE);
		assert_int_equal(take(&c.to_upstream, body, sizeof(body), &len), 'p');
		md5_response(REAL, USER, salt, want);
		assert_int_equal(len, 36);
		assert_string_equal((char *)body, want);
		upstream_lets_in(&c, NULL);
		assert_string_equal(netns_pg_upstream_auth(c.pg), "md5");
		conn_close(&c);
	}
}

static void test_pg_cleartext_login_both_ways_tls_upstream(void **state)
{
	struct conn c;
	uint8_t body[128];
	struct msg m;
	size_t len;

	(void)state;
	conn_open(&c, NETNS_PG_AUTH_PASSWORD, 7);
	sandbox_logs_in(&c, NETNS_PG_AUTH_PASSWORD);
	upstream_takes_startup(&c, true);
	auth_request(&m, 3, NULL, 0);
	assert_int_equal(from_upstream(&c, m.b, m.n), NETNS_PG_MORE);
	assert_int_equal(take(&c.to_upstream, body, sizeof(body), &len), 'p');
	assert_int_equal(len, strlen(REAL) + 1);
	assert_string_equal((char *)body, REAL);
	upstream_lets_in(&c, NULL);
	conn_close(&c);
}

static void test_pg_trust_upstream_lets_in_at_once(void **state)
{
	struct conn c;

	(void)state;
	conn_open(&c, NETNS_PG_AUTH_SCRAM, 4096);
	sandbox_logs_in(&c, NETNS_PG_AUTH_SCRAM);
	upstream_takes_startup(&c, false);
	upstream_lets_in(&c, NULL);
	assert_string_equal(netns_pg_upstream_auth(c.pg), "trust");
	/* The password was asked for all the same: the relay watches for it. */
	assert_int_equal(c.password_calls, 1);
	conn_close(&c);
}

static void test_pg_database_defaults_to_the_user(void **state)
{
	struct netns_pg_options o = {
	    .user = USER,
	    .database = USER,
	    .surrogate = SURROGATE,
	    .client_auth = NETNS_PG_AUTH_PASSWORD,
	    .password = give_password,
	};
	struct conn c = {.real = REAL, .chunk = 4096};

	(void)state;
	o.userdata = &c;
	assert_int_equal(netns_pg_new(&o, &c.pg), 0);
	send_startup(&c, USER, NULL);
	assert_int_equal(sandbox_cleartext(&c, SURROGATE), NETNS_PG_CONNECT);
	conn_close(&c);
}

/* ---- the sandbox refused ---- */

static void test_pg_wrong_surrogate_refused_by_each_method(void **state)
{
	(void)state;
	for (int auth = NETNS_PG_AUTH_SCRAM; auth <= NETNS_PG_AUTH_PASSWORD; auth++) {
		struct conn c;
		int r;

		conn_open(&c, (enum netns_pg_auth)auth, 3);
		send_startup(&c, USER, DATABASE);
		r = auth == NETNS_PG_AUTH_SCRAM ? sandbox_scram(&c, "airlock_sur_wrong")
		    : auth == NETNS_PG_AUTH_MD5 ? sandbox_md5(&c, REAL)
						: sandbox_cleartext(&c, SURROGATE "x");
		assert_int_equal(r, -EPERM);
		assert_string_equal(take_error(&c.to_sandbox, "28P01"),
				    "password authentication failed for user \"app\"");
		assert_int_equal(netns_buf_len(&c.to_sandbox), 0);
		/* The upstream was never reached, and the error stays. */
		assert_int_equal(netns_buf_len(&c.to_upstream), 0);
		assert_int_equal(c.password_calls, 0);
		assert_int_equal(from_sandbox(&c, "x", 1), -EPERM);
		conn_close(&c);
	}
}

static void test_pg_other_user_or_database_refused(void **state)
{
	static const char *const asks[][2] = {
	    {"postgres", DATABASE},
	    {USER, "postgres"},
	    {USER, NULL}, /* the database defaults to the user: "app", not "appdb" */
	    {"APP", DATABASE},
	};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(asks); i++) {
		struct conn c;
		struct msg m;

		conn_open(&c, NETNS_PG_AUTH_SCRAM, 1);
		if (asks[i][1])
			startup(&m, 196608, "user", asks[i][0], "database", asks[i][1], NULL);
		else
			startup(&m, 196608, "user", asks[i][0], NULL);
		assert_int_equal(from_sandbox(&c, m.b, m.n), -EPERM);
		assert_non_null(
		    strstr(take_error(&c.to_sandbox, "28000"), "no credential for user"));
		assert_int_equal(netns_buf_len(&c.to_upstream), 0);
		conn_close(&c);
	}
}

static void test_pg_channel_binding_refused(void **state)
{
	static const char *const firsts[] = {"p=tls-server-end-point,,n=,r=abc",
					     "n,a=admin,n=,r=abc"};

	(void)state;
	for (size_t i = 0; i < 3; i++) {
		const char *mech = i == 2 ? "SCRAM-SHA-256-PLUS" : "SCRAM-SHA-256";
		const char *first = i == 2 ? firsts[0] : firsts[i];
		uint8_t body[64];
		struct conn c;
		struct msg m;

		conn_open(&c, NETNS_PG_AUTH_SCRAM, 4096);
		send_startup(&c, USER, DATABASE);
		assert_int_equal(take(&c.to_sandbox, body, sizeof(body), NULL), 'R');
		begin(&m, 'p');
		put_str(&m, mech);
		put_u32(&m, (uint32_t)strlen(first));
		put_bytes(&m, first, strlen(first));
		end(&m);
		assert_int_equal(from_sandbox(&c, m.b, m.n), -EBADMSG);
		(void)take_error(&c.to_sandbox, "08P01");
		assert_int_equal(netns_buf_len(&c.to_upstream), 0);
		conn_close(&c);
	}
}

static void test_pg_ssl_and_gssenc_requests_answered_n(void **state)
{
	static const uint8_t ssl[] = {0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f};
	static const uint8_t gss[] = {0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x30};
	struct conn c;

	(void)state;
	conn_open(&c, NETNS_PG_AUTH_PASSWORD, 1);
	assert_int_equal(from_sandbox(&c, gss, sizeof(gss)), NETNS_PG_MORE);
	assert_int_equal(from_sandbox(&c, ssl, sizeof(ssl)), NETNS_PG_MORE);
	assert_int_equal(netns_buf_len(&c.to_sandbox), 2);
	assert_memory_equal(netns_buf_head(&c.to_sandbox), "NN", 2);
	netns_buf_consume(&c.to_sandbox, 2);
	/* A third is one too many. */
	assert_int_equal(from_sandbox(&c, ssl, sizeof(ssl)), -EBADMSG);
	conn_close(&c);

	conn_open(&c, NETNS_PG_AUTH_PASSWORD, 1);
	assert_int_equal(from_sandbox(&c, ssl, sizeof(ssl)), NETNS_PG_MORE);
	netns_buf_consume(&c.to_sandbox, 1);
	send_startup(&c, USER, DATABASE);
	assert_int_equal(sandbox_cleartext(&c, SURROGATE), NETNS_PG_CONNECT);
	conn_close(&c);
}

static void test_pg_cancel_request_passes_as_it_came(void **state)
{
	static const uint8_t cancel[] = {0, 0, 0,    16,   0x04, 0xd2, 0x16, 0x2e,
					 0, 0, 0x10, 0x92, 0xde, 0xad, 0xbe, 0xef};
	struct conn c;

	(void)state;
	conn_open(&c, NETNS_PG_AUTH_SCRAM, 1);
	assert_int_equal(from_sandbox(&c, cancel, sizeof(cancel)), NETNS_PG_PASS);
	assert_int_equal(netns_buf_len(&c.to_upstream), sizeof(cancel));
	assert_memory_equal(netns_buf_head(&c.to_upstream), cancel, sizeof(cancel));
	assert_int_equal(netns_buf_len(&c.to_sandbox), 0);
	/* Nothing follows a cancel request. */
	assert_int_equal(from_sandbox(&c, "Q", 1), -EBADMSG);
	conn_close(&c);
}

static void test_pg_later_protocol_negotiated_down_to_3_0(void **state)
{
	struct conn c;
	uint8_t body[256];
	struct msg m;
	size_t len;

	(void)state;
	conn_open(&c, NETNS_PG_AUTH_PASSWORD, 1);
	startup(&m, 196608 + 2, "user", USER, "database", DATABASE, "_pq_.compression", "on", NULL);
	assert_int_equal(from_sandbox(&c, m.b, m.n), NETNS_PG_MORE);
	assert_int_equal(take(&c.to_sandbox, body, sizeof(body), &len), 'v');
	assert_int_equal(get_u32(body), 0);
	assert_int_equal(get_u32(body + 4), 1);
	assert_string_equal((char *)body + 8, "_pq_.compression");
	assert_int_equal(sandbox_cleartext(&c, SURROGATE), NETNS_PG_CONNECT);
	netns_buf_consume(&c.to_upstream, 8);
	/* Upstream: 3.0, and no _pq_ option. */
	assert_int_equal(from_upstream(&c, "N", 1), NETNS_PG_MORE);
	assert_int_equal(get_u32(netns_buf_head(&c.to_upstream) + 4), 196608);
	assert_false(holds(&c.to_upstream, "_pq_"));
	conn_close(&c);

	conn_open(&c, NETNS_PG_AUTH_PASSWORD, 1);
	startup(&m, 4 << 16, "user", USER, NULL);
	assert_int_equal(from_sandbox(&c, m.b, m.n), -EBADMSG);
	conn_close(&c);
}

static void test_pg_oversized_messages_refused(void **state)
{
	static const uint8_t big_startup[] = {0, 0, 0x27, 0x11, 0, 3, 0, 0}; /* 10001 bytes */
	static const uint8_t big_auth[] = {'p', 0, 0x10, 0, 0x05};	     /* 1 MiB + 1 */
	static const uint8_t short_msg[] = {'p', 0, 0, 0, 3};
	struct conn c;

	(void)state;
	conn_open(&c, NETNS_PG_AUTH_PASSWORD, 1);
	assert_int_equal(from_sandbox(&c, big_startup, sizeof(big_startup)), -EMSGSIZE);
	conn_close(&c);

	conn_open(&c, NETNS_PG_AUTH_PASSWORD, 1);
	send_startup(&c, USER, DATABASE);
	assert_int_equal(from_sandbox(&c, big_auth, sizeof(big_auth)), -EMSGSIZE);
	conn_close(&c);

	conn_open(&c, NETNS_PG_AUTH_PASSWORD, 1);
	send_startup(&c, USER, DATABASE);
	assert_int_equal(from_sandbox(&c, short_msg, sizeof(short_msg)), -EBADMSG);
	conn_close(&c);

	conn_open(&c, NETNS_PG_AUTH_PASSWORD, 4096);
	sandbox_logs_in(&c, NETNS_PG_AUTH_PASSWORD);
	upstream_takes_startup(&c, false);
	assert_int_equal(from_upstream(&c, (const uint8_t[]){'E', 0, 0x10, 0, 0x05}, 5), -EMSGSIZE);
	conn_close(&c);
}

/* ---- the upstream refused ---- */

/* A connection whose sandbox logged in and whose upstream read the startup. */
static void logged_in(struct conn *c, enum netns_pg_auth auth, bool tls, size_t chunk)
{
	conn_open(c, auth, chunk);
	sandbox_logs_in(c, auth);
	upstream_takes_startup(c, tls);
}

static void test_pg_upstream_cleartext_without_tls_refused(void **state)
{
	struct conn c;
	struct msg m;

	(void)state;
	logged_in(&c, NETNS_PG_AUTH_SCRAM, false, 1);
	auth_request(&m, 3, NULL, 0);
	assert_int_equal(from_upstream(&c, m.b, m.n), -EPROTONOSUPPORT);
	/* The password did not go out; the sandbox is told. */
	assert_int_equal(netns_buf_len(&c.to_upstream), 0);
	assert_non_null(strstr(take_error(&c.to_sandbox, "28000"), "without TLS"));
	assert_false(holds(&c.to_sandbox, REAL));
	conn_close(&c);
}

static void test_pg_upstream_methods_refused(void **state)
{
	static const uint8_t plus_only[] = "SCRAM-SHA-256-PLUS\0";
	static const uint8_t unknown[] = "SCRAM-SHA-1\0";
	static const struct {
		uint32_t code;
		const void *data;
		size_t n;
	} asks[] = {
	    {2, NULL, 0}, /* Kerberos V5 */
	    {7, NULL, 0}, /* GSS */
	    {9, NULL, 0}, /* SSPI */
	    {10, plus_only, sizeof(plus_only)},
	    {10, unknown, sizeof(unknown)},
	};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(asks); i++) {
		struct conn c;
		struct msg m;

		logged_in(&c, NETNS_PG_AUTH_MD5, true, 4096);
		auth_request(&m, asks[i].code, asks[i].data, asks[i].n);
		assert_int_equal(from_upstream(&c, m.b, m.n), -EPROTONOSUPPORT);
		assert_int_equal(netns_buf_len(&c.to_upstream), 0);
		(void)take_error(&c.to_sandbox, "28000");
		conn_close(&c);
	}
}

static void test_pg_upstream_scram_signature_must_verify(void **state)
{
	static const uint8_t sasl[] = "SCRAM-SHA-256\0";

	(void)state;
	for (int kind = 0; kind < 3; kind++) {
		struct conn c;
		struct msg final;

		logged_in(&c, NETNS_PG_AUTH_SCRAM, true, 1);
		upstream_scram(&c, sasl, sizeof(sasl), &final);
		if (kind == 0) {
			/* Another signature: its first base64 character changed. */
			final.b[9 + 2] = final.b[9 + 2] == 'A' ? 'B' : 'A';
			assert_int_equal(from_upstream(&c, final.b, final.n), -EACCES);
		} else if (kind == 1) {
			/* No AuthenticationSASLFinal at all: AuthenticationOk straight away. */
			assert_int_equal(from_upstream(&c, "R\0\0\0\x08\0\0\0\0", 9), -EACCES);
		} else {
			/* "e=": the server's error. */
			struct msg m;

			auth_request(&m, 12, "e=invalid-proof", 15);
			assert_int_equal(from_upstream(&c, m.b, m.n), -EACCES);
		}
		(void)take_error(&c.to_sandbox, "28000");
		assert_int_equal(netns_buf_len(&c.to_sandbox), 0);
		conn_close(&c);
	}
}

static void test_pg_upstream_error_passed_on(void **state)
{
	struct conn c;
	struct msg m;

	(void)state;
	logged_in(&c, NETNS_PG_AUTH_SCRAM, false, 2);
	begin(&m, 'E');
	put_str(&m, "SFATAL");
	put_str(&m, "C28P01");
	put_str(&m, "Mpassword authentication failed for user \"app\"");
	m.b[m.n++] = 0;
	end(&m);
	assert_int_equal(from_upstream(&c, m.b, m.n), -EACCES);
	assert_non_null(strstr(c.err.msg, "28P01"));
	assert_int_equal(netns_buf_len(&c.to_sandbox), m.n);
	assert_memory_equal(netns_buf_head(&c.to_sandbox), m.b, m.n);
	conn_close(&c);
}

static void test_pg_upstream_error_with_the_password_replaced(void **state)
{
	struct conn c;
	struct msg m;

	(void)state;
	logged_in(&c, NETNS_PG_AUTH_MD5, true, 3);
	auth_request(&m, 3, NULL, 0);
	assert_int_equal(from_upstream(&c, m.b, m.n), NETNS_PG_MORE);
	netns_buf_consume(&c.to_upstream, netns_buf_len(&c.to_upstream));
	begin(&m, 'E');
	put_str(&m, "SFATAL");
	put_str(&m, "C28P01");
	put_str(&m, "Mpassword \"" REAL "\" is not the one for user \"app\"");
	m.b[m.n++] = 0;
	end(&m);
	assert_int_equal(from_upstream(&c, m.b, m.n), -EACCES);
	assert_false(holds(&c.to_sandbox, REAL));
	assert_string_equal(take_error(&c.to_sandbox, "28P01"),
			    "password authentication failed for user \"app\"");
	assert_int_equal(netns_buf_len(&c.to_sandbox), 0);
	conn_close(&c);
}

static void test_pg_upstream_answers_out_of_place_refused(void **state)
{
	struct conn c;

	(void)state;
	/* Bytes after 'S' (they would be read as if they came over TLS). */
	conn_open(&c, NETNS_PG_AUTH_PASSWORD, 4096);
	sandbox_logs_in(&c, NETNS_PG_AUTH_PASSWORD);
	assert_int_equal(from_upstream(&c, "SR", 2), -EBADMSG);
	conn_close(&c);

	/* An answer that is neither. */
	conn_open(&c, NETNS_PG_AUTH_PASSWORD, 4096);
	sandbox_logs_in(&c, NETNS_PG_AUTH_PASSWORD);
	assert_int_equal(from_upstream(&c, "E", 1), -EBADMSG);
	(void)take_error(&c.to_sandbox, "08006");
	conn_close(&c);

	/* The upstream before the sandbox logged in. */
	conn_open(&c, NETNS_PG_AUTH_PASSWORD, 4096);
	assert_int_equal(from_upstream(&c, "N", 1), -EBADMSG);
	conn_close(&c);

	/* A query result during the login. */
	logged_in(&c, NETNS_PG_AUTH_PASSWORD, false, 4096);
	assert_int_equal(from_upstream(&c, "Z\0\0\0\x05I", 6), -EBADMSG);
	conn_close(&c);

	/* MD5 asked twice. */
	logged_in(&c, NETNS_PG_AUTH_PASSWORD, false, 4096);
	assert_int_equal(from_upstream(&c, "R\0\0\0\x0c\0\0\0\x05salt", 13), NETNS_PG_MORE);
	assert_int_equal(from_upstream(&c, "R\0\0\0\x0c\0\0\0\x05salt", 13), -EBADMSG);
	conn_close(&c);
}

static void test_pg_password_needing_saslprep_refused(void **state)
{
	static const uint8_t sasl[] = "SCRAM-SHA-256\0";
	struct conn c;
	struct msg m;

	(void)state;
	logged_in(&c, NETNS_PG_AUTH_SCRAM, true, 4096);
	c.real = "p\xc3\xa4ssword"; /* "pässword" */
	auth_request(&m, 10, sasl, sizeof(sasl));
	assert_int_equal(from_upstream(&c, m.b, m.n), -EPROTONOSUPPORT);
	assert_int_equal(netns_buf_len(&c.to_upstream), 0);
	conn_close(&c);
}

static void test_pg_tls_failure_reported_to_the_sandbox(void **state)
{
	struct conn c;

	(void)state;
	conn_open(&c, NETNS_PG_AUTH_SCRAM, 4096);
	sandbox_logs_in(&c, NETNS_PG_AUTH_SCRAM);
	assert_int_equal(from_upstream(&c, "S", 1), NETNS_PG_START_TLS);
	assert_int_equal(netns_pg_tls_ready(c.pg, false, &c.to_upstream, &c.err), -EPROTO);
	assert_int_equal(netns_pg_report_failure(c.pg, "TLS to the upstream failed", &c.to_sandbox),
			 0);
	assert_string_equal(take_error(&c.to_sandbox, "08006"),
			    "airlock: TLS to the upstream failed");
	assert_int_equal(netns_buf_len(&c.to_upstream), 0);
	conn_close(&c);
}

/* ---- the relay ---- */

/* A DataRow with one column holding text. */
static void data_row(struct msg *m, const char *text)
{
	begin(m, 'D');
	m->b[m->n++] = 0;
	m->b[m->n++] = 1;
	put_u32(m, (uint32_t)strlen(text));
	put_bytes(m, text, strlen(text));
	end(m);
}

static void relayed(struct conn *c)
{
	logged_in(c, NETNS_PG_AUTH_PASSWORD, false, 4096);
	upstream_lets_in(c, NULL);
}

static int relay(struct conn *c, const void *p, size_t n, size_t chunk)
{
	int r = NETNS_PG_RELAY;

	for (size_t off = 0; off < n && r >= 0; off += chunk)
		r = netns_pg_relay_from_upstream(c->pg, (const uint8_t *)p + off,
						 MIN(chunk, n - off), &c->to_sandbox, &c->err);
	return r;
}

static void test_pg_relay_passes_messages_and_holds_nothing_between_them(void **state)
{
	struct conn c;
	struct msg m;

	(void)state;
	relayed(&c);
	/* "s3cret-" begins the password: within the row it waits, at its end it goes. */
	data_row(&m, "a row ending in s3cret-");
	for (size_t i = 0; i < m.n; i++) {
		assert_int_equal(relay(&c, m.b + i, 1, 1), NETNS_PG_RELAY);
		if (i + 1 < m.n)
			assert_true(netns_buf_len(&c.to_sandbox) <= i + 1);
	}
	assert_int_equal(netns_buf_len(&c.to_sandbox), m.n);
	assert_memory_equal(netns_buf_head(&c.to_sandbox), m.b, m.n);
	netns_buf_consume(&c.to_sandbox, m.n);
	/* The sandbox's own bytes pass as they are. */
	assert_int_equal(from_sandbox(&c, "X\0\0\0\x04", 5), NETNS_PG_RELAY);
	assert_int_equal(netns_buf_len(&c.to_upstream), 5);
	/* Between messages the proxy may tell the sandbox of its own failure. */
	assert_int_equal(netns_pg_report_failure(c.pg, "upstream gone", &c.to_sandbox), 0);
	(void)take_error(&c.to_sandbox, "08006");
	conn_close(&c);
}

static void test_pg_relay_refuses_the_real_password(void **state)
{
	(void)state;
	for (int kind = 0; kind < 4; kind++) {
		size_t chunk = kind % 2 ? 1 : 4096;
		struct msg m;
		struct conn c;

		relayed(&c);
		if (kind < 2) {
			data_row(&m, "leaked: " REAL " there");
		} else {
			/* Across a boundary: a row ends with the password's start, and the next
			 * message's head ('R', a length of 0x65616c2d) and body go on with it. */
			data_row(&m, "a row ending in s3cret-");
			put_bytes(&m, "Real-pw!", 8);
		}
		assert_int_equal(relay(&c, m.b, m.n, chunk), -EPERM);
		assert_false(holds(&c.to_sandbox, REAL));
		/* Whatever went out, the password's last byte did not. */
		assert_true(netns_buf_len(&c.to_sandbox) < m.n - 1);
		assert_int_equal(relay(&c, "Z", 1, 1), -EPERM);
		/* Mid-message: the sandbox cannot be told any more. */
		assert_int_equal(netns_pg_report_failure(c.pg, "x", &c.to_sandbox), 0);
		assert_false(holds(&c.to_sandbox, "airlock"));
		conn_close(&c);
	}
}

static void test_pg_relay_refuses_a_bad_length(void **state)
{
	struct conn c;

	(void)state;
	relayed(&c);
	assert_int_equal(relay(&c, "D\0\0\0\x03", 5, 1), -EBADMSG);
	conn_close(&c);
	relayed(&c);
	assert_int_equal(relay(&c, "D\x80\0\0\0", 5, 5), -EBADMSG);
	conn_close(&c);
}

/* ---- the arithmetic ---- */

/* A sandbox's login message is refused from its length on, far below what an upstream's may be;
 * what it sends while the upstream's login runs is capped too. */
static void test_pg_sandbox_login_messages_capped_from_their_length(void **state)
{
	static const uint8_t over[] = {'p', 0, 0, 0x10, 0x01}; /* 4097 bytes: its head only */
	static uint8_t flood[NETNS_PG_PENDING_MAX + 1];
	struct conn c;

	(void)state;
	conn_open(&c, NETNS_PG_AUTH_PASSWORD, 4096);
	send_startup(&c, USER, DATABASE);
	netns_buf_consume(&c.to_sandbox, netns_buf_len(&c.to_sandbox));
	assert_int_equal(from_sandbox(&c, over, sizeof(over)), -EMSGSIZE);
	(void)take_error(&c.to_sandbox, "08P01");
	conn_close(&c);

	conn_open(&c, NETNS_PG_AUTH_SCRAM, 1);
	send_startup(&c, USER, DATABASE);
	assert_int_equal(from_sandbox(&c, over, sizeof(over)), -EMSGSIZE);
	conn_close(&c);

	/* While the upstream's login runs: up to NETNS_PG_PENDING_MAX, not a byte more. */
	memset(flood, 'x', sizeof(flood));
	logged_in(&c, NETNS_PG_AUTH_PASSWORD, false, 4096);
	netns_buf_consume(&c.to_sandbox, netns_buf_len(&c.to_sandbox));
	assert_int_equal(from_sandbox(&c, flood, NETNS_PG_PENDING_MAX), NETNS_PG_MORE);
	assert_int_equal(from_sandbox(&c, flood, 1), -EMSGSIZE);
	(void)take_error(&c.to_sandbox, "08P01");
	conn_close(&c);
}

static void query(struct msg *m, char type, const char *text)
{
	begin(m, type);
	if (type == 'P')
		put_str(m, "stmt1");
	put_str(m, text);
	if (type == 'P')
		put_bytes(m, "\0\0", 2);
	end(m);
}

static int relay_sandbox(struct conn *c, const void *p, size_t n, size_t chunk)
{
	int r = NETNS_PG_RELAY;

	for (size_t off = 0; off < n && r >= 0; off += chunk)
		r = netns_pg_relay_from_sandbox(c->pg, (const uint8_t *)p + off,
						MIN(chunk, n - off), &c->to_upstream,
						&c->to_sandbox, &c->err);
	return r;
}

static bool sets(const char *sql)
{
	return netns_pg_sets_password((const uint8_t *)sql, strlen(sql));
}

static void test_pg_statement_that_sets_a_password_found(void **state)
{
	(void)state;
	assert_true(sets("ALTER ROLE app_scram PASSWORD 'x'"));
	assert_true(sets("alter user \"app\" with encrypted password 'SCRAM-SHA-256$4096:...'"));
	assert_true(sets("  Alter\n\tROLE/* a /* nested */ comment */app -- c\n PassWord NULL;"));
	assert_true(sets("select 1; CREATE ROLE r LOGIN PASSWORD 'p'"));
	assert_true(sets("create user u password 'p'"));
	assert_true(sets("DO $$BEGIN ALTER ROLE app PASSWORD 'x'; END$$"));
	assert_true(sets("select $$'$$; alter role app password 'x' --'"));
	assert_true(sets("select E'\\''; alter role app password 'x'"));
	assert_true(sets("select $q$ $$ $q$; alter role app password 'x'"));
	assert_true(sets("select $a$ x $b$ alter role app password 'x' $b$ $a$"));
	assert_true(sets("select '\\''; alter role app password 'x'"));
	assert_false(sets(""));
	assert_false(sets("\""));
	assert_false(sets("'"));
	assert_false(sets("select 'alter role app password x'"));
	assert_false(sets("ALTER ROLE app SET search_path = public; select password from t"));
	assert_false(sets("alter role app connection limit 3; -- password"));
	assert_false(sets("alter role password_owner rename to b"));
	assert_false(sets("select * from alter_role_password"));
	assert_false(sets("ALTER TABLE t ADD COLUMN password text"));
	assert_false(sets("select $1, a$b from t where x = $q$alter role$q$ and y = 'password'"));
}

static void test_pg_relay_refuses_a_statement_that_sets_a_password(void **state)
{
	static const char *const refused[] = {
	    "ALTER ROLE app PASSWORD 'chosen'",
	    "ALTER USER app PASSWORD 'SCRAM-SHA-256$4096:c2FsdA==$a:b'", /* psql's \password */
	};

	(void)state;
	for (int kind = 0; kind < 8; kind++) {
		size_t chunk = kind % 2 ? 1 : 4096;
		struct msg m;
		struct conn c;

		relayed(&c);
		query(&m, kind & 4 ? 'P' : 'Q', refused[(kind >> 1) & 1]);
		assert_int_equal(relay_sandbox(&c, m.b, m.n, chunk), -EPERM);
		assert_int_equal(c.err.code, -EPERM);
		assert_int_equal(netns_buf_len(&c.to_upstream), 0);
		assert_non_null(strstr(take_error(&c.to_sandbox, "42501"), "password is refused"));
		assert_int_equal(relay_sandbox(&c, "X\0\0\0\x04", 5, 5), -EPERM);
		conn_close(&c);
	}
}

static void test_pg_relay_passes_other_statements_and_copy_data(void **state)
{
	struct msg m, d;
	struct conn c;

	(void)state;
	relayed(&c);
	query(&m, 'Q', "ALTER ROLE app SET work_mem = '64MB'");
	assert_int_equal(relay_sandbox(&c, m.b, m.n, 1), NETNS_PG_RELAY);
	assert_int_equal(netns_buf_len(&c.to_upstream), m.n);
	assert_memory_equal(netns_buf_head(&c.to_upstream), m.b, m.n);
	netns_buf_consume(&c.to_upstream, m.n);
	/* COPY data streams unsearched, as it comes. */
	begin(&d, 'd');
	put_bytes(&d, "alter role app password 'x'\n", 28);
	end(&d);
	assert_int_equal(relay_sandbox(&c, d.b, 10, 10), NETNS_PG_RELAY);
	assert_int_equal(netns_buf_len(&c.to_upstream), 10);
	assert_int_equal(relay_sandbox(&c, d.b + 10, d.n - 10, 4096), NETNS_PG_RELAY);
	assert_int_equal(netns_buf_len(&c.to_upstream), d.n);
	assert_memory_equal(netns_buf_head(&c.to_upstream), d.b, d.n);
	netns_buf_consume(&c.to_upstream, d.n);
	/* netns_pg_from_sandbox() in the relay filters as well. */
	query(&m, 'Q', "alter role app password 'x'");
	assert_int_equal(from_sandbox(&c, m.b, m.n), -EPERM);
	conn_close(&c);

	/* A bad length ends it. */
	relayed(&c);
	assert_int_equal(relay_sandbox(&c, "Q\0\0\0\x03", 5, 5), -EBADMSG);
	conn_close(&c);

	/* Before the relay the call is refused. */
	logged_in(&c, NETNS_PG_AUTH_PASSWORD, false, 4096);
	assert_int_equal(relay_sandbox(&c, "X\0\0\0\x04", 5, 5), -EINVAL);
	conn_close(&c);
}

/* What the sandbox sent while the upstream's login ran is filtered when the relay starts. */
static void test_pg_pending_statement_that_sets_a_password_refused(void **state)
{
	struct msg m;
	struct conn c;

	(void)state;
	logged_in(&c, NETNS_PG_AUTH_PASSWORD, false, 4096);
	netns_buf_consume(&c.to_upstream, netns_buf_len(&c.to_upstream));
	netns_buf_consume(&c.to_sandbox, netns_buf_len(&c.to_sandbox));
	query(&m, 'Q', "alter role app password 'x'");
	assert_int_equal(from_sandbox(&c, m.b, m.n), NETNS_PG_MORE);
	assert_int_equal(from_upstream(&c, "R\0\0\0\x08\0\0\0\0", 9), -EPERM);
	assert_int_equal(netns_buf_len(&c.to_upstream), 0);
	(void)take_error(&c.to_sandbox, "42501");
	conn_close(&c);
}

static void test_pg_scram_matches_rfc7677(void **state)
{
	/* RFC 7677 3: user "user", password "pencil". */
	static const char auth[] =
	    "n=user,r=rOprNGfwEbeRWgbNEkqO,"
	    "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,"
	    "i=4096,c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
	struct netns_pg_scram_keys k;
	uint8_t salt[16], proof[32], sig[32];
	char out[64];
	size_t len;

	(void)state;
	assert_int_equal(
	    netns_pg_b64_decode("W22ZaJ0SNY7soEsUEjb6gQ==", 24, salt, sizeof(salt), &len), 0);
	assert_int_equal(len, 16);
	assert_int_equal(netns_pg_scram_derive("pencil", 6, salt, len, 4096, &k), 0);
	assert_int_equal(netns_pg_scram_proof(&k, auth, strlen(auth), proof), 0);
	al_base64_encode_to(proof, 32, out);
	assert_string_equal(out, "dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=");
	assert_true(netns_pg_scram_proof_ok(&k, auth, strlen(auth), proof));
	proof[31] ^= 1;
	assert_false(netns_pg_scram_proof_ok(&k, auth, strlen(auth), proof));
	assert_int_equal(netns_pg_scram_signature(&k, auth, strlen(auth), sig), 0);
	al_base64_encode_to(sig, 32, out);
	assert_string_equal(out, "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=");
}

static void test_pg_md5_matches_postgres(void **state)
{
	static const uint8_t salt[4] = {0x93, 0x3f, 0x0a, 0x01};
	char got[NETNS_PG_MD5_RESPONSE_LEN + 1], want[36];

	(void)state;
	/* pg_authid's well-known hash of password "postgres" for user "postgres", salted. */
	md5_response("postgres", "postgres", salt, want);
	assert_int_equal(netns_pg_md5_response("postgres", 8, "postgres", salt, got), 0);
	assert_string_equal(got, want);
	{
		uint8_t in[36];
		uint8_t md[16];
		unsigned len;
		char hex[33];

		memcpy(in, "3175bce1d3201d16594cebf9d7eb3f9d", 32);
		memcpy(in + 32, salt, 4);
		assert_int_equal(EVP_Digest(in, 36, md, &len, EVP_md5(), NULL), 1);
		for (size_t i = 0; i < 16; i++)
			sprintf(hex + 2 * i, "%02x", md[i]);
		assert_string_equal(got + 3, hex);
	}
}

static void test_pg_base64_is_strict(void **state)
{
	static const char *const bad[] = {"abc", "a===", "ab=c", "====", "ab c", "ab\0c"};
	uint8_t out[8];
	size_t len;

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(bad); i++)
		assert_int_equal(netns_pg_b64_decode(bad[i], 4, out, sizeof(out), &len), -EBADMSG);
	assert_int_equal(netns_pg_b64_decode("biws", 4, out, sizeof(out), &len), 0);
	assert_int_equal(len, 3);
	assert_memory_equal(out, "n,,", 3);
	assert_int_equal(netns_pg_b64_decode("YQ==", 4, out, sizeof(out), &len), 0);
	assert_int_equal(len, 1);
	/* Too long for the room given. */
	assert_int_equal(netns_pg_b64_decode("YWJjZA==", 8, out, 3, &len), -EBADMSG);
	assert_true(netns_pg_equal_secret("abc", 3, "abc", 3));
	assert_false(netns_pg_equal_secret("abc", 3, "abcd", 4));
}

static void test_pg_new_refuses_bad_options(void **state)
{
	struct netns_pg_options o = {
	    .user = USER,
	    .database = DATABASE,
	    .surrogate = "s\xc3\xa4",
	    .password = give_password,
	};
	struct netns_pg *pg = NULL;

	(void)state;
	assert_int_equal(netns_pg_new(&o, &pg), -EINVAL);
	o.surrogate = "";
	assert_int_equal(netns_pg_new(&o, &pg), -EINVAL);
	o.surrogate = SURROGATE;
	o.user = "";
	assert_int_equal(netns_pg_new(&o, &pg), -EINVAL);
	assert_null(pg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pg_scram_login_both_ways_with_tls_upstream),
	    cmocka_unit_test(test_pg_md5_login_both_ways_plain_upstream),
	    cmocka_unit_test(test_pg_cleartext_login_both_ways_tls_upstream),
	    cmocka_unit_test(test_pg_trust_upstream_lets_in_at_once),
	    cmocka_unit_test(test_pg_database_defaults_to_the_user),
	    cmocka_unit_test(test_pg_wrong_surrogate_refused_by_each_method),
	    cmocka_unit_test(test_pg_other_user_or_database_refused),
	    cmocka_unit_test(test_pg_channel_binding_refused),
	    cmocka_unit_test(test_pg_ssl_and_gssenc_requests_answered_n),
	    cmocka_unit_test(test_pg_cancel_request_passes_as_it_came),
	    cmocka_unit_test(test_pg_later_protocol_negotiated_down_to_3_0),
	    cmocka_unit_test(test_pg_oversized_messages_refused),
	    cmocka_unit_test(test_pg_upstream_cleartext_without_tls_refused),
	    cmocka_unit_test(test_pg_upstream_methods_refused),
	    cmocka_unit_test(test_pg_upstream_scram_signature_must_verify),
	    cmocka_unit_test(test_pg_upstream_error_passed_on),
	    cmocka_unit_test(test_pg_upstream_error_with_the_password_replaced),
	    cmocka_unit_test(test_pg_upstream_answers_out_of_place_refused),
	    cmocka_unit_test(test_pg_password_needing_saslprep_refused),
	    cmocka_unit_test(test_pg_tls_failure_reported_to_the_sandbox),
	    cmocka_unit_test(test_pg_relay_passes_messages_and_holds_nothing_between_them),
	    cmocka_unit_test(test_pg_relay_refuses_the_real_password),
	    cmocka_unit_test(test_pg_relay_refuses_a_bad_length),
	    cmocka_unit_test(test_pg_sandbox_login_messages_capped_from_their_length),
	    cmocka_unit_test(test_pg_statement_that_sets_a_password_found),
	    cmocka_unit_test(test_pg_relay_refuses_a_statement_that_sets_a_password),
	    cmocka_unit_test(test_pg_relay_passes_other_statements_and_copy_data),
	    cmocka_unit_test(test_pg_pending_statement_that_sets_a_password_refused),
	    cmocka_unit_test(test_pg_scram_matches_rfc7677),
	    cmocka_unit_test(test_pg_md5_matches_postgres),
	    cmocka_unit_test(test_pg_base64_is_strict),
	    cmocka_unit_test(test_pg_new_refuses_bad_options),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
