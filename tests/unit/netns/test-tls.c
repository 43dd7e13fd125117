/* tests/unit/netns/test-tls.c: TLS interception (netns/tls.c). Both ends run in this process,
 * over non-blocking socketpairs (and loopback TCP for resets), driven by a small poll loop. The
 * far ends are either netns_tls connections or plain OpenSSL ones made here, which can look at
 * what ours send: certificates, ALPN, SNI, resumption.
 *
 * AIRLOCK_TLS_BENCH=1 also measures handshakes per second (printed as TAP comments). */

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "common/fd-util.h"
#include "common/macro.h"
#include "netns/netns-internal.h"

#define POLL_TIMEOUT_MS 10000
#define READ_AHEAD_RECORDS 5

DEFINE_TRIVIAL_CLEANUP_FUNC(X509 *, X509_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(EVP_PKEY *, EVP_PKEY_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(SSL_CTX *, SSL_CTX_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(SSL_SESSION *, SSL_SESSION_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(GENERAL_NAMES *, GENERAL_NAMES_free);

/* ---- Helpers ---- */

static X509 *pem_to_x509(const char *pem)
{
	BIO *b = BIO_new_mem_buf(pem, -1);
	X509 *x;

	assert_non_null(b);
	x = PEM_read_bio_X509(b, NULL, NULL, NULL);
	BIO_free(b);
	return x;
}

/* A temporary file holding content; unlink_and_free() removes it. */
static char *temp_file(const char *content)
{
	char *path = strdup("/tmp/airlock-test-tls-XXXXXX");
	int fd;

	assert_non_null(path);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(al_write_all(fd, content, strlen(content)), 0);
	(void)al_close(fd);
	return path;
}

static void unlink_and_free(char **path)
{
	if (*path) {
		(void)unlink(*path);
		free(*path);
		*path = NULL;
	}
}

/* A netns_tls whose client trusts the certificates in pem. The file that carries them is read
 * at once, and removed at once. */
static struct netns_tls *new_trusting(const char *pem)
{
	_cleanup_(unlink_and_free) char *path = temp_file(pem);
	struct netns_tls *t = NULL;
	struct al_error err = {0};

	assert_int_equal(netns_tls_new(path, &t, &err), 0);
	return t;
}

static void pair(int fds[2])
{
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds),
			 0);
}

static void close_pair(int fds[2])
{
	fds[0] = al_close(fds[0]);
	fds[1] = al_close(fds[1]);
}

/* A proxy (ours: netns_tls_new(NULL)) and an upstream-facing netns_tls that trusts it, as the
 * proxy's own client would trust a real upstream. */
struct fixture {
	struct netns_tls *proxy, *trusting;
	X509 *ca;
};

static void fixture_init(struct fixture *f)
{
	struct al_error err = {0};

	*f = (struct fixture){0};
	assert_int_equal(netns_tls_new(NULL, &f->proxy, &err), 0);
	f->trusting = new_trusting(netns_tls_ca_pem(f->proxy));
	f->ca = pem_to_x509(netns_tls_ca_pem(f->proxy));
	assert_non_null(f->ca);
}

static void fixture_done(struct fixture *f)
{
	f->trusting = netns_tls_free(f->trusting);
	f->proxy = netns_tls_free(f->proxy);
	X509_free(f->ca);
	/* Nothing that failed left an error behind for a later OpenSSL call to trip on. */
	assert_int_equal(ERR_peek_error(), 0);
}

/* One end of a connection: ours (c) or a plain OpenSSL one made here (ssl). */
struct end {
	struct netns_tls_conn *c;
	SSL *ssl;
	int fd;
	int r; /* the handshake's result, -EAGAIN while it goes on */
	short events;
	struct al_error err;
};

static void end_step(struct end *e)
{
	int k, r;

	if (e->c) {
		e->r = netns_tls_handshake(e->c, &e->err);
		e->events = (short)(e->r == -EAGAIN ? netns_tls_wants(e->c) : 0);
	} else {
		k = SSL_do_handshake(e->ssl);
		r = k == 1 ? SSL_ERROR_NONE : SSL_get_error(e->ssl, k);
		e->r = r == SSL_ERROR_NONE ? 0 : -EAGAIN;
		e->events = r == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
		if (r != SSL_ERROR_NONE && r != SSL_ERROR_WANT_READ && r != SSL_ERROR_WANT_WRITE) {
			e->r = -EPROTO;
			(void)snprintf(e->err.msg, sizeof(e->err.msg), "%s",
				       ERR_reason_error_string(ERR_peek_error()));
		}
		ERR_clear_error();
	}
	/* A failed end says no more: its peer must see the end rather than wait. */
	if (e->r < 0 && e->r != -EAGAIN)
		(void)shutdown(e->fd, SHUT_RDWR);
}

/* Runs both handshakes to their ends, waiting with poll() on what each wants. */
static void handshake(struct end *a, struct end *b)
{
	a->r = b->r = -EAGAIN;
	for (;;) {
		struct pollfd p[2];
		nfds_t n = 0;

		if (a->r == -EAGAIN)
			end_step(a);
		if (b->r == -EAGAIN)
			end_step(b);
		if (a->r == -EAGAIN)
			p[n++] = (struct pollfd){.fd = a->fd, .events = a->events};
		if (b->r == -EAGAIN)
			p[n++] = (struct pollfd){.fd = b->fd, .events = b->events};
		if (n == 0)
			return;
		assert_true(poll(p, n, POLL_TIMEOUT_MS) > 0);
	}
}

static void wait_fd(int fd, uint32_t wants)
{
	struct pollfd p = {.fd = fd, .events = (short)wants};

	assert_true(wants != 0);
	assert_true(poll(&p, 1, POLL_TIMEOUT_MS) > 0);
}

/* Reads from one of our connections until n bytes or the end; returns the count. */
static size_t read_some(struct netns_tls_conn *c, int fd, void *buf, size_t n)
{
	ssize_t k;

	for (;;) {
		k = netns_tls_read(c, buf, n);
		if (k != -EAGAIN)
			break;
		wait_fd(fd, netns_tls_wants(c));
	}
	assert_true(k >= 0);
	return (size_t)k;
}

static void write_all(struct netns_tls_conn *c, int fd, const void *buf, size_t n)
{
	ssize_t k;

	while (n > 0) {
		k = netns_tls_write(c, buf, n);
		if (k == -EAGAIN) {
			wait_fd(fd, netns_tls_wants(c));
			continue;
		}
		assert_true(k > 0);
		buf = (const uint8_t *)buf + k;
		n -= (size_t)k;
	}
}

static int ssl_read_some(SSL *ssl, int fd, void *buf, size_t n)
{
	size_t k;
	int r;

	for (;;) {
		if (SSL_read_ex(ssl, buf, n, &k))
			return (int)k;
		r = SSL_get_error(ssl, 0);
		if (r != SSL_ERROR_WANT_READ && r != SSL_ERROR_WANT_WRITE)
			return -1;
		wait_fd(fd, r == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT);
	}
}

/* A plain OpenSSL client on fd for name: verifying against ca (unless NULL), offering alpn
 * (wire format, unless NULL), resuming session (unless NULL). */
static SSL *plain_client(int fd, const char *name, X509 *ca, const char *alpn, SSL_SESSION *session)
{
	_cleanup_(SSL_CTX_freep) SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	SSL *ssl;

	assert_non_null(ctx);
	if (ca) {
		assert_int_equal(X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), ca), 1);
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	}
	if (alpn)
		assert_int_equal(SSL_CTX_set_alpn_protos(ctx, (const unsigned char *)alpn,
							 (unsigned)strlen(alpn)),
				 0);
	ssl = SSL_new(ctx);
	assert_non_null(ssl);
	assert_int_equal(SSL_set_fd(ssl, fd), 1);
	assert_int_equal(SSL_set_tlsext_host_name(ssl, name), 1);
	assert_int_equal(SSL_set1_host(ssl, name), 1);
	if (session)
		assert_int_equal(SSL_set_session(ssl, session), 1);
	SSL_set_connect_state(ssl);
	return ssl;
}

/* A self-signed certificate for the names (the first one also its CN), for a plain upstream;
 * "CN=name" makes one that names its host in the CN alone, without a subjectAltName. */
static X509 *self_signed(EVP_PKEY *key, const char *names)
{
	_cleanup_(X509_freep) X509 *x = X509_new();
	bool cn_only = strncmp(names, "CN=", 3) == 0;
	X509_EXTENSION *ext;
	X509V3_CTX v3;
	char cn[64];

	assert_non_null(x);
	(void)snprintf(cn, sizeof(cn), "%.*s", (int)strcspn(names + (cn_only ? 3 : 4), ","),
		       names + (cn_only ? 3 : 4));
	assert_int_equal(X509_set_version(x, X509_VERSION_3), 1);
	assert_int_equal(ASN1_INTEGER_set(X509_get_serialNumber(x), 42), 1);
	assert_non_null(X509_gmtime_adj(X509_getm_notBefore(x), -60));
	assert_non_null(X509_gmtime_adj(X509_getm_notAfter(x), 3600));
	assert_int_equal(X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_UTF8,
						    (const unsigned char *)cn, -1, -1, 0),
			 1);
	assert_int_equal(X509_set_issuer_name(x, X509_get_subject_name(x)), 1);
	assert_int_equal(X509_set_pubkey(x, key), 1);
	if (!cn_only) {
		X509V3_set_ctx(&v3, x, x, NULL, NULL, 0);
		ext = X509V3_EXT_conf_nid(NULL, &v3, NID_subject_alt_name, names);
		assert_non_null(ext);
		assert_int_equal(X509_add_ext(x, ext, -1), 1);
		X509_EXTENSION_free(ext);
	}
	assert_true(X509_sign(x, key, EVP_sha256()) > 0);
	return TAKE_PTR(x);
}

static char *x509_to_pem(X509 *x)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *data, *pem;
	long len;

	assert_non_null(b);
	assert_int_equal(PEM_write_bio_X509(b, x), 1);
	len = BIO_get_mem_data(b, &data);
	pem = strndup(data, (size_t)len);
	BIO_free(b);
	assert_non_null(pem);
	return pem;
}

/* What a plain upstream saw of our client's hello. */
struct seen_hello {
	char alpn[64];
	size_t alpn_len;
	char sni[256];
	bool psk; /* a TLS 1.3 ticket was offered */
};

static int record_hello(SSL *ssl, int *alert, void *arg)
{
	struct seen_hello *seen = arg;
	const unsigned char *p;
	size_t len;

	seen->psk = SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_psk, &p, &len) == 1;
	return SSL_CLIENT_HELLO_SUCCESS;
}

static int record_alpn(SSL *ssl, const unsigned char **out, unsigned char *outlen,
		       const unsigned char *in, unsigned int inlen, void *arg)
{
	struct seen_hello *seen = arg;
	const char *sni = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);

	seen->alpn_len = MIN((size_t)inlen, sizeof(seen->alpn));
	memcpy(seen->alpn, in, seen->alpn_len);
	(void)snprintf(seen->sni, sizeof(seen->sni), "%s", sni ? sni : "");
	if (inlen >= 9 && memcmp(in, "\x08http/1.1", 9) == 0) {
		*out = in + 1;
		*outlen = 8;
		return SSL_TLSEXT_ERR_OK;
	}
	if (inlen >= 3 && memcmp(in, "\x02h2", 3) == 0) {
		*out = in + 1;
		*outlen = 2;
		return SSL_TLSEXT_ERR_OK;
	}
	return SSL_TLSEXT_ERR_NOACK;
}

/* A plain OpenSSL upstream serving a self-signed certificate for names ("DNS:a,DNS:b"), with
 * its default session tickets; its certificate's PEM in *ret_pem. */
static SSL_CTX *plain_server_ctx(const char *names, struct seen_hello *seen, char **ret_pem)
{
	_cleanup_(EVP_PKEY_freep) EVP_PKEY *key = EVP_EC_gen("P-256");
	_cleanup_(X509_freep) X509 *cert = NULL;
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());

	assert_non_null(key);
	assert_non_null(ctx);
	cert = self_signed(key, names);
	assert_int_equal(SSL_CTX_use_certificate(ctx, cert), 1);
	assert_int_equal(SSL_CTX_use_PrivateKey(ctx, key), 1);
	SSL_CTX_set_alpn_select_cb(ctx, record_alpn, seen);
	SSL_CTX_set_client_hello_cb(ctx, record_hello, seen);
	*ret_pem = x509_to_pem(cert);
	return ctx;
}

static SSL *plain_server(SSL_CTX *ctx, int fd)
{
	SSL *ssl = SSL_new(ctx);

	assert_non_null(ssl);
	assert_int_equal(SSL_set_fd(ssl, fd), 1);
	SSL_set_accept_state(ssl);
	return ssl;
}

/* Our server for name on fds[0], and a plain client verifying against ca on fds[1]; handshakes
 * and returns the certificate the client got. */
static X509 *leaf_of(struct netns_tls *t, X509 *ca, const char *name)
{
	struct end s = {0}, c = {0};
	int fds[2];
	X509 *leaf;

	pair(fds);
	s.fd = fds[0];
	c.fd = fds[1];
	assert_int_equal(netns_tls_accept(t, s.fd, name, &s.c, &s.err), 0);
	c.ssl = plain_client(c.fd, name, ca, NULL, NULL);
	handshake(&s, &c);
	assert_int_equal(s.r, 0);
	assert_int_equal(c.r, 0);
	leaf = SSL_get1_peer_certificate(c.ssl);
	assert_non_null(leaf);
	SSL_free(c.ssl);
	netns_tls_conn_free(s.c);
	close_pair(fds);
	return leaf;
}

static bool same_serial(X509 *a, X509 *b)
{
	return ASN1_INTEGER_cmp(X509_get0_serialNumber(a), X509_get0_serialNumber(b)) == 0;
}

static bool is_critical(X509 *x, int nid)
{
	int i = X509_get_ext_by_NID(x, nid, -1);

	assert_true(i >= 0);
	return X509_EXTENSION_get_critical(X509_get_ext(x, i)) == 1;
}

/* Whether t lies within a minute of now + offset seconds. */
static bool within(const ASN1_TIME *t, time_t offset)
{
	time_t lo = time(NULL) + offset - 60, hi = lo + 120;

	return X509_cmp_time(t, &lo) > 0 && X509_cmp_time(t, &hi) < 0;
}

/* ---- The CA ---- */

static void test_ca_pem_is_a_self_signed_p256_ca_valid_now(void **state)
{
	_cleanup_(netns_tls_freep) struct netns_tls *t = NULL, *t2 = NULL;
	_cleanup_(X509_freep) X509 *ca = NULL, *ca2 = NULL;
	struct al_error err = {0};
	char name[128], group[32];
	EVP_PKEY *key;

	(void)state;
	assert_int_equal(netns_tls_new(NULL, &t, &err), 0);
	assert_null(strstr(netns_tls_ca_pem(t), "PRIVATE"));
	ca = pem_to_x509(netns_tls_ca_pem(t));
	assert_non_null(ca);
	assert_int_equal(X509_get_version(ca), X509_VERSION_3);
	assert_int_equal(X509_check_ca(ca), 1);
	assert_int_equal(X509_get_pathlen(ca), 0);
	assert_true(is_critical(ca, NID_basic_constraints));
	assert_true(is_critical(ca, NID_key_usage));
	assert_int_equal(X509_get_key_usage(ca), KU_KEY_CERT_SIGN | KU_CRL_SIGN);
	assert_non_null(X509_get0_subject_key_id(ca));
	key = X509_get0_pubkey(ca);
	assert_true(EVP_PKEY_is_a(key, "EC"));
	assert_int_equal(EVP_PKEY_get_group_name(key, group, sizeof(group), NULL), 1);
	assert_string_equal(group, "prime256v1");
	assert_int_equal(X509_check_issued(ca, ca), X509_V_OK);
	assert_int_equal(X509_verify(ca, key), 1);
	assert_int_equal(X509_get_signature_nid(ca), NID_ecdsa_with_SHA256);
	/* Valid from an hour ago for a week, give or take the test's own minute. */
	assert_true(within(X509_get0_notBefore(ca), -3600));
	assert_true(within(X509_get0_notAfter(ca), 7 * 24 * 3600));
	assert_true(X509_NAME_get_text_by_NID(X509_get_subject_name(ca), NID_commonName, name,
					      sizeof(name)) > 0);
	assert_non_null(startswith(name, "airlock sandbox CA "));

	/* Each sandbox has a CA of its own: another name, serial and key. */
	assert_int_equal(netns_tls_new(NULL, &t2, &err), 0);
	ca2 = pem_to_x509(netns_tls_ca_pem(t2));
	assert_non_null(ca2);
	assert_int_not_equal(X509_NAME_cmp(X509_get_subject_name(ca), X509_get_subject_name(ca2)),
			     0);
	assert_false(same_serial(ca, ca2));
	assert_int_not_equal(EVP_PKEY_eq(key, X509_get0_pubkey(ca2)), 1);
	assert_int_equal(ERR_peek_error(), 0);
}

static void test_ca_serial_is_a_random_positive_128_bit_number(void **state)
{
	_cleanup_(netns_tls_freep) struct netns_tls *t = NULL;
	_cleanup_(X509_freep) X509 *ca = NULL;
	struct al_error err = {0};
	const ASN1_INTEGER *serial;
	BIGNUM *bn;

	(void)state;
	assert_int_equal(netns_tls_new(NULL, &t, &err), 0);
	ca = pem_to_x509(netns_tls_ca_pem(t));
	assert_non_null(ca);
	serial = X509_get0_serialNumber(ca);
	bn = ASN1_INTEGER_to_BN(serial, NULL);
	assert_non_null(bn);
	assert_false(BN_is_negative(bn));
	assert_false(BN_is_zero(bn));
	assert_true(BN_num_bits(bn) <= 128);
	assert_true(BN_num_bits(bn) > 64); /* all but 2^-64 of random 128-bit numbers */
	BN_free(bn);
}

static void test_new_with_missing_ca_file_names_the_file(void **state)
{
	struct netns_tls *t = NULL;
	struct al_error err = {0};

	(void)state;
	assert_int_equal(netns_tls_new("/nonexistent/airlock-ca.pem", &t, &err), -EIO);
	assert_null(t);
	assert_non_null(strstr(err.msg, "/nonexistent/airlock-ca.pem"));
	assert_non_null(strstr(err.msg, "No such file"));
	assert_int_equal(ERR_peek_error(), 0);
}

static void test_new_with_a_ca_file_without_certificates_fails(void **state)
{
	_cleanup_(unlink_and_free) char *path = temp_file("not a certificate\n");
	struct netns_tls *t = NULL;
	struct al_error err = {0};

	(void)state;
	assert_int_equal(netns_tls_new(path, &t, &err), -EIO);
	assert_null(t);
	assert_non_null(strstr(err.msg, path));
	assert_int_equal(ERR_peek_error(), 0);
}

/* ---- Leaves ---- */

static void test_leaf_names_the_host_and_chains_to_the_ca(void **state)
{
	_cleanup_(GENERAL_NAMES_freep) GENERAL_NAMES *san = NULL;
	_cleanup_(X509_freep) X509 *leaf = NULL;
	struct fixture f;
	const GENERAL_NAME *gn;
	char cn[64], group[32];
	int crit = 0;

	(void)state;
	fixture_init(&f);
	/* The plain client verified the chain and the name in the handshake. */
	leaf = leaf_of(f.proxy, f.ca, "api.test");
	assert_int_equal(X509_verify(leaf, X509_get0_pubkey(f.ca)), 1);
	assert_int_equal(X509_check_issued(f.ca, leaf), X509_V_OK);
	assert_int_equal(
	    ASN1_OCTET_STRING_cmp(X509_get0_authority_key_id(leaf), X509_get0_subject_key_id(f.ca)),
	    0);
	assert_int_equal(X509_check_host(leaf, "api.test", 0, 0, NULL), 1);
	assert_int_equal(X509_check_host(leaf, "other.test", 0, 0, NULL), 0);
	san = X509_get_ext_d2i(leaf, NID_subject_alt_name, &crit, NULL);
	assert_non_null(san);
	assert_int_equal(crit, 0);
	assert_int_equal(sk_GENERAL_NAME_num(san), 1);
	gn = sk_GENERAL_NAME_value(san, 0);
	assert_int_equal(gn->type, GEN_DNS);
	assert_string_equal((const char *)ASN1_STRING_get0_data(gn->d.dNSName), "api.test");
	assert_int_equal(
	    X509_NAME_get_text_by_NID(X509_get_subject_name(leaf), NID_commonName, cn, sizeof(cn)),
	    8);
	assert_string_equal(cn, "api.test");
	assert_int_equal(X509_check_ca(leaf), 0);
	assert_int_equal(X509_get_extended_key_usage(leaf), XKU_SSL_SERVER);
	assert_int_equal(X509_get_key_usage(leaf), KU_DIGITAL_SIGNATURE);
	assert_int_equal(X509_get_signature_nid(leaf), NID_ecdsa_with_SHA256);
	assert_int_equal(
	    EVP_PKEY_get_group_name(X509_get0_pubkey(leaf), group, sizeof(group), NULL), 1);
	assert_string_equal(group, "prime256v1");
	/* Valid now, never beyond the CA. */
	assert_true(X509_cmp_current_time(X509_get0_notBefore(leaf)) < 0);
	assert_true(ASN1_TIME_compare(X509_get0_notBefore(leaf), X509_get0_notBefore(f.ca)) >= 0);
	assert_true(ASN1_TIME_compare(X509_get0_notAfter(leaf), X509_get0_notAfter(f.ca)) <= 0);
	assert_true(X509_cmp_current_time(X509_get0_notAfter(leaf)) > 0);
	fixture_done(&f);
}

static void test_second_connection_to_a_name_reuses_the_cached_leaf(void **state)
{
	_cleanup_(X509_freep) X509 *a = NULL, *b = NULL, *other = NULL;
	struct fixture f;

	(void)state;
	fixture_init(&f);
	a = leaf_of(f.proxy, f.ca, "api.test");
	b = leaf_of(f.proxy, f.ca, "api.test");
	assert_int_equal(X509_cmp(a, b), 0);
	assert_true(same_serial(a, b));
	/* Another name has a leaf of its own, for the one shared leaf key. */
	other = leaf_of(f.proxy, f.ca, "www.test");
	assert_false(same_serial(a, other));
	assert_int_equal(EVP_PKEY_eq(X509_get0_pubkey(a), X509_get0_pubkey(other)), 1);
	fixture_done(&f);
}

static void test_names_past_the_cache_cap_work_and_evicted_ones_are_minted_again(void **state)
{
	_cleanup_(X509_freep) X509 *first = NULL, *again = NULL, *recent = NULL,
				   *recent_again = NULL;
	struct netns_tls_conn *c = NULL;
	struct al_error err = {0};
	struct fixture f;
	char name[32];
	int fds[2];

	(void)state;
	fixture_init(&f);
	first = leaf_of(f.proxy, f.ca, "n0.test");
	pair(fds);
	for (unsigned i = 1; i <= 1100; i++) {
		(void)snprintf(name, sizeof(name), "n%u.test", i);
		assert_int_equal(netns_tls_accept(f.proxy, fds[0], name, &c, &err), 0);
		c = netns_tls_conn_free(c);
	}
	close_pair(fds);
	recent = leaf_of(f.proxy, f.ca, "n1100.test");
	again = leaf_of(f.proxy, f.ca, "n0.test");
	assert_int_equal(X509_check_host(again, "n0.test", 0, 0, NULL), 1);
	assert_false(same_serial(first, again));
	recent_again = leaf_of(f.proxy, f.ca, "n1100.test");
	assert_true(same_serial(recent, recent_again));
	fixture_done(&f);
}

static void test_long_name_gets_a_leaf_with_a_critical_san_and_no_cn(void **state)
{
	_cleanup_(X509_freep) X509 *leaf = NULL;
	struct end s = {0}, c = {0};
	char name[NETNS_DNS_NAME_MAX + 1];
	struct fixture f;
	int fds[2];

	(void)state;
	fixture_init(&f);
	/* 4 labels of 60 letters and ".test": 249 characters, above the 64 a CN may hold. */
	name[0] = '\0';
	for (int i = 0; i < 4; i++) {
		char label[62];

		memset(label, 'a' + i, 60);
		label[60] = '.';
		label[61] = '\0';
		strcat(name, label);
	}
	strcat(name, "test");
	assert_int_equal(strlen(name), 248);
	leaf = leaf_of(f.proxy, f.ca, name);
	assert_int_equal(X509_NAME_entry_count(X509_get_subject_name(leaf)), 0);
	assert_true(is_critical(leaf, NID_subject_alt_name));

	/* Our own client accepts it for that name. */
	pair(fds);
	s.fd = fds[0];
	c.fd = fds[1];
	assert_int_equal(netns_tls_accept(f.proxy, s.fd, name, &s.c, &s.err), 0);
	assert_int_equal(netns_tls_connect(f.trusting, c.fd, name, false, &c.c, &c.err), 0);
	handshake(&s, &c);
	assert_int_equal(c.r, 0);
	assert_int_equal(s.r, 0);
	netns_tls_conn_free(s.c);
	netns_tls_conn_free(c.c);
	close_pair(fds);
	fixture_done(&f);
}

static void test_names_that_are_no_host_names_are_refused(void **state)
{
	static const char *const bad[] = {
	    "",		".",	  "a..test",	   ".a.test",
	    "a.test.",	"a test", "a/test",	   "a,DNS:evil.test",
	    "10.0.0.1", "::1",	  "\xc3\xa9.test",
	};
	char too_long[NETNS_DNS_NAME_MAX + 2];
	struct netns_tls_conn *c = NULL;
	struct al_error err = {0};
	struct fixture f;
	int fds[2];

	(void)state;
	fixture_init(&f);
	pair(fds);
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		assert_int_equal(netns_tls_accept(f.proxy, fds[0], bad[i], &c, &err), -EINVAL);
		assert_null(c);
		assert_int_equal(netns_tls_connect(f.proxy, fds[1], bad[i], false, &c, &err),
				 -EINVAL);
		assert_null(c);
	}
	memset(too_long, 'a', sizeof(too_long) - 1);
	too_long[sizeof(too_long) - 1] = '\0';
	assert_int_equal(netns_tls_accept(f.proxy, fds[0], too_long, &c, &err), -EINVAL);
	too_long[NETNS_DNS_NAME_MAX] = '\0';
	assert_int_equal(netns_tls_accept(f.proxy, fds[0], too_long, &c, &err), 0);
	c = netns_tls_conn_free(c);
	close_pair(fds);
	fixture_done(&f);
}

/* ---- Our server and our client together ---- */

struct xfer {
	struct netns_tls_conn *src, *dst;
	const uint8_t *data;
	uint8_t *got;
	size_t size, sent, received;
	uint8_t *scratch[2]; /* where a blocked write is retried from: somewhere else each time */
	unsigned which;
	size_t retry; /* the length of the blocked write, 0 when none */
	uint32_t src_wants, dst_wants;
	unsigned partial, blocked;
};

#define XFER_CHUNK (64 * 1024)

static void xfer_step(struct xfer *x)
{
	ssize_t k;

	x->src_wants = x->dst_wants = 0;
	while (x->sent < x->size) {
		size_t n = x->retry ? x->retry : MIN(x->size - x->sent, (size_t)XFER_CHUNK);
		const uint8_t *p = x->data + x->sent;

		if (x->retry) {
			x->which ^= 1;
			memcpy(x->scratch[x->which], p, n);
			p = x->scratch[x->which];
		}
		k = netns_tls_write(x->src, p, n);
		if (k == -EAGAIN) {
			x->retry = n;
			x->blocked++;
			x->src_wants = netns_tls_wants(x->src);
			assert_true(x->src_wants != 0);
			break;
		}
		assert_true(k > 0 && (size_t)k <= n);
		x->partial += (size_t)k < n;
		x->retry = 0;
		x->sent += (size_t)k;
	}
	while (x->received < x->size) {
		k = netns_tls_read(x->dst, x->got + x->received, x->size - x->received);
		if (k == -EAGAIN) {
			x->dst_wants = netns_tls_wants(x->dst);
			assert_true(x->dst_wants != 0);
			break;
		}
		assert_true(k > 0);
		x->received += (size_t)k;
	}
}

static void xfer_init(struct xfer *x, struct netns_tls_conn *src, struct netns_tls_conn *dst,
		      size_t size, unsigned seed)
{
	uint8_t *data = malloc(size);

	assert_non_null(data);
	for (size_t i = 0; i < size; i++)
		data[i] = (uint8_t)((i * 2654435761u) >> 13 ^ seed);
	*x = (struct xfer){.src = src, .dst = dst, .data = data, .size = size};
	x->got = malloc(size);
	x->scratch[0] = malloc(XFER_CHUNK);
	x->scratch[1] = malloc(XFER_CHUNK);
	assert_non_null(x->got);
	assert_non_null(x->scratch[0]);
	assert_non_null(x->scratch[1]);
}

static void xfer_done(struct xfer *x)
{
	assert_int_equal(x->received, x->size);
	assert_memory_equal(x->got, x->data, x->size);
	free((void *)x->data);
	free(x->got);
	free(x->scratch[0]);
	free(x->scratch[1]);
}

/* Our server for api.test on fds[0], our client trusting its CA on fds[1], handshaken. */
static void connect_pair(struct fixture *f, int fds[2], struct end *s, struct end *c)
{
	pair(fds);
	*s = (struct end){.fd = fds[0]};
	*c = (struct end){.fd = fds[1]};
	assert_int_equal(netns_tls_accept(f->proxy, s->fd, "api.test", &s->c, &s->err), 0);
	assert_int_equal(netns_tls_connect(f->trusting, c->fd, "api.test", false, &c->c, &c->err),
			 0);
	handshake(s, c);
	assert_int_equal(s->r, 0);
	assert_int_equal(c->r, 0);
}

static void test_accept_and_connect_move_data_both_ways_and_close_cleanly(void **state)
{
	const size_t size = 3 * 1024 * 1024 / 2 + 7; /* over 1 MiB, not a multiple of a record */
	struct end s, c;
	struct xfer down, up;
	struct fixture f;
	uint8_t buf[64];
	int fds[2];

	(void)state;
	fixture_init(&f);
	connect_pair(&f, fds, &s, &c);
	assert_int_equal(netns_tls_handshake(s.c, &s.err), 0); /* done stays done */

	xfer_init(&down, s.c, c.c, size, 0x5a);
	xfer_init(&up, c.c, s.c, size, 0xa5);
	for (;;) {
		struct pollfd p[2];
		uint32_t s_wants, c_wants;

		xfer_step(&down);
		xfer_step(&up);
		if (down.received == size && up.received == size)
			break;
		s_wants = down.src_wants | up.dst_wants;
		c_wants = up.src_wants | down.dst_wants;
		p[0] = (struct pollfd){.fd = s.fd, .events = (short)s_wants};
		p[1] = (struct pollfd){.fd = c.fd, .events = (short)c_wants};
		if (s_wants || c_wants)
			assert_true(poll(p, 2, POLL_TIMEOUT_MS) > 0);
	}
	/* The socket buffers are far smaller: writes blocked, were retried from moved buffers,
	 * and some took fewer bytes than offered. */
	assert_true(down.blocked > 0 && up.blocked > 0);
	assert_true(down.partial + up.partial > 0);
	xfer_done(&down);
	xfer_done(&up);

	/* Decrypted bytes left over are pending; the fd may well be idle. */
	write_all(s.c, s.fd, "0123456789", 10);
	assert_int_equal(read_some(c.c, c.fd, buf, 4), 4);
	assert_true(netns_tls_pending(c.c));
	assert_int_equal(read_some(c.c, c.fd, buf + 4, sizeof(buf) - 4), 6);
	assert_memory_equal(buf, "0123456789", 10);
	assert_false(netns_tls_pending(c.c));

	/* close_notify, once, either way. */
	netns_tls_close(s.c);
	netns_tls_close(s.c);
	assert_int_equal(read_some(c.c, c.fd, buf, sizeof(buf)), 0);
	netns_tls_close(c.c);
	assert_int_equal(read_some(s.c, s.fd, buf, sizeof(buf)), 0);
	netns_tls_conn_free(s.c);
	netns_tls_conn_free(c.c);
	close_pair(fds);
	fixture_done(&f);
}

/* Read-ahead: a burst of records is taken from the socket at once and held by OpenSSL, so the fd
 * goes idle while records wait; netns_tls_pending() tells, and each read returns the next record
 * without waiting on the fd (what the proxy relies on: it reads a side until -EAGAIN, never
 * on the fd's readiness). */
static void test_records_read_ahead_are_pending_while_the_fd_is_idle(void **state)
{
	char rec[100], buf[READ_AHEAD_RECORDS * sizeof(rec)];
	struct pollfd p;
	struct end s, c;
	struct fixture f;
	int fds[2];

	(void)state;
	fixture_init(&f);
	connect_pair(&f, fds, &s, &c);
	for (int i = 0; i < READ_AHEAD_RECORDS; i++) {
		memset(rec, 'a' + i, sizeof(rec));
		write_all(s.c, s.fd, rec, sizeof(rec)); /* a record each */
	}
	assert_int_equal(read_some(c.c, c.fd, buf, sizeof(buf)), sizeof(rec));
	p = (struct pollfd){.fd = c.fd, .events = POLLIN};
	assert_int_equal(poll(&p, 1, 0), 0);
	for (int i = 1; i < READ_AHEAD_RECORDS; i++) {
		assert_true(netns_tls_pending(c.c));
		assert_int_equal(netns_tls_read(c.c, buf, sizeof(buf)), sizeof(rec));
		assert_int_equal(buf[0], 'a' + i);
	}
	assert_false(netns_tls_pending(c.c));
	assert_int_equal(netns_tls_read(c.c, buf, sizeof(buf)), -EAGAIN);
	assert_int_equal(netns_tls_wants(c.c), POLLIN);
	netns_tls_conn_free(s.c);
	netns_tls_conn_free(c.c);
	close_pair(fds);
	fixture_done(&f);
}

/* A reader told of every readiness event (netns_tls_readable()): once a short read says the socket
 * is read out, reads say -EAGAIN until the next event, then take what came; the peer's
 * close_notify reads as the end every time after. */
static void test_read_out_side_waits_for_its_next_event_and_keeps_saying_the_end(void **state)
{
	struct end s, c;
	struct fixture f;
	uint8_t buf[64];
	int fds[2];

	(void)state;
	fixture_init(&f);
	connect_pair(&f, fds, &s, &c);
	write_all(s.c, s.fd, "one", 3);
	netns_tls_readable(c.c, false);
	assert_int_equal(read_some(c.c, c.fd, buf, sizeof(buf)), 3);
	assert_int_equal(netns_tls_read(c.c, buf, sizeof(buf)), -EAGAIN);
	assert_int_equal(netns_tls_wants(c.c), EPOLLIN);
	write_all(s.c, s.fd, "two", 3);
	assert_int_equal(netns_tls_read(c.c, buf, sizeof(buf)), -EAGAIN); /* no event yet */
	netns_tls_readable(c.c, false);
	assert_int_equal(netns_tls_read(c.c, buf, sizeof(buf)), 3);
	assert_memory_equal(buf, "two", 3);
	assert_int_equal(netns_tls_read(c.c, buf, sizeof(buf)), -EAGAIN);

	netns_tls_close(s.c);
	netns_tls_readable(c.c, false);
	assert_int_equal(read_some(c.c, c.fd, buf, sizeof(buf)), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(netns_tls_read(c.c, buf, sizeof(buf)), 0);
	netns_tls_conn_free(s.c);
	netns_tls_conn_free(c.c);
	close_pair(fds);
	fixture_done(&f);
}

static void test_eof_without_close_notify_reads_as_the_end(void **state)
{
	struct end s, c;
	struct fixture f;
	uint8_t buf[16];
	int fds[2];

	(void)state;
	fixture_init(&f);
	connect_pair(&f, fds, &s, &c);
	write_all(s.c, s.fd, "bye", 3);
	assert_int_equal(shutdown(s.fd, SHUT_WR), 0);
	assert_int_equal(read_some(c.c, c.fd, buf, sizeof(buf)), 3);
	assert_int_equal(read_some(c.c, c.fd, buf, sizeof(buf)), 0);
	/* Still answered with a close_notify, as after the peer's own: a clean end. */
	netns_tls_close(c.c);
	assert_int_equal(read_some(s.c, s.fd, buf, sizeof(buf)), 0);
	netns_tls_conn_free(s.c);
	netns_tls_conn_free(c.c);
	close_pair(fds);
	fixture_done(&f);
}

static void test_close_never_blocks_on_a_full_socket(void **state)
{
	uint8_t junk[4096] = {0};
	struct end s, c;
	struct fixture f;
	int fds[2];
	ssize_t k;

	(void)state;
	fixture_init(&f);
	connect_pair(&f, fds, &s, &c);
	/* Fill the socket: the client never reads. */
	do
		k = netns_tls_write(s.c, junk, sizeof(junk));
	while (k > 0);
	assert_int_equal(k, -EAGAIN);
	assert_int_equal(netns_tls_wants(s.c), EPOLLOUT);
	netns_tls_close(s.c); /* returns at once */
	netns_tls_conn_free(s.c);
	netns_tls_conn_free(c.c);
	close_pair(fds);
	fixture_done(&f);
}

/* Reads from c until exactly want's bytes came, and checks them. */
static void read_exactly(struct netns_tls_conn *c, int fd, const void *want, size_t n)
{
	uint8_t *got = malloc(n);
	size_t have = 0;

	assert_non_null(got);
	while (have < n)
		have += read_some(c, fd, got + have, n - have);
	assert_memory_equal(got, want, n);
	free(got);
}

/* Queued writes (what the proxy sends from its ring): the records wait until their user sends
 * them, a full queue says -EAGAIN, and anything written with the queue off (data, the
 * close_notify) goes after what waits. */
static void test_queued_records_wait_for_their_sender_and_go_first(void **state)
{
	static uint8_t chunk[16 * 1024];
	uint8_t *sent = NULL;
	size_t len, n_sent = 0, n_chunks = 0;
	const uint8_t *head;
	struct pollfd p;
	struct end s, c;
	struct fixture f;
	int fds[2];
	ssize_t k;

	(void)state;
	fixture_init(&f);
	connect_pair(&f, fds, &s, &c);
	/* The client takes the session ticket that followed the handshake. */
	assert_int_equal(netns_tls_read(c.c, chunk, sizeof(chunk)), -EAGAIN);
	p = (struct pollfd){.fd = c.fd, .events = POLLIN};
	assert_int_equal(poll(&p, 1, 0), 0);
	for (size_t i = 0; i < sizeof(chunk); i++)
		chunk[i] = (uint8_t)(i * 7);

	netns_tls_queue(s.c, true);
	assert_int_equal(netns_tls_write(s.c, "one", 3), 3);
	head = netns_tls_queued(s.c, &len);
	assert_true(len > 3); /* a record: header, ciphertext, tag */
	assert_non_null(head);
	p = (struct pollfd){.fd = c.fd, .events = POLLIN};
	assert_int_equal(poll(&p, 1, 0), 0); /* nothing sent */

	/* The queue fills: then OpenSSL keeps the record, and the write is tried again. */
	while ((k = netns_tls_write(s.c, chunk, sizeof(chunk))) > 0) {
		assert_int_equal(k, sizeof(chunk));
		n_chunks++;
	}
	assert_int_equal(k, -EAGAIN);
	assert_int_equal(netns_tls_wants(s.c), EPOLLOUT);
	assert_true(n_chunks >= 3 && n_chunks <= 5);
	(void)netns_tls_queued(s.c, &len);
	assert_true(len >= 64 * 1024 && len < 64 * 1024 + 2 * sizeof(chunk));

	/* The user sends some of it; the rest goes first when the queue is off. */
	head = netns_tls_queued(s.c, &len);
	assert_int_equal(send(s.fd, head, 1000, MSG_NOSIGNAL), 1000);
	netns_tls_queued_sent(s.c, 1000);
	netns_tls_queue(s.c, false);
	assert_int_equal(netns_tls_write(s.c, chunk, sizeof(chunk)), sizeof(chunk)); /* the retry */
	(void)netns_tls_queued(s.c, &len);
	assert_int_equal(len, 0);
	write_all(s.c, s.fd, "two", 3);

	sent = malloc(3 + (n_chunks + 1) * sizeof(chunk) + 3);
	assert_non_null(sent);
	memcpy(sent, "one", 3);
	n_sent = 3;
	for (size_t i = 0; i <= n_chunks; i++, n_sent += sizeof(chunk))
		memcpy(sent + n_sent, chunk, sizeof(chunk));
	memcpy(sent + n_sent, "two", 3);
	n_sent += 3;
	read_exactly(c.c, c.fd, sent, n_sent);

	/* netns_tls_flush() sends the queue alone; a close_notify goes after what waits. */
	netns_tls_queue(s.c, true);
	write_all(s.c, s.fd, "three", 5);
	netns_tls_queue(s.c, false);
	assert_int_equal(netns_tls_flush(s.c), 0);
	(void)netns_tls_queued(s.c, &len);
	assert_int_equal(len, 0);
	read_exactly(c.c, c.fd, "three", 5);
	netns_tls_queue(s.c, true);
	write_all(s.c, s.fd, "four", 4);
	netns_tls_queue(s.c, false);
	netns_tls_close(s.c);
	read_exactly(c.c, c.fd, "four", 4);
	assert_int_equal(read_some(c.c, c.fd, chunk, sizeof(chunk)), 0);

	free(sent);
	netns_tls_conn_free(s.c);
	netns_tls_conn_free(c.c);
	close_pair(fds);
	fixture_done(&f);
}

/* A connected pair of non-blocking loopback TCP sockets; the client's connect() may still be
 * in progress. */
static void tcp_pair(int fds[2])
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int l, r;

	l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(l >= 0);
	assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(l, 1), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&a, &len), 0);
	fds[1] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	assert_true(fds[1] >= 0);
	r = connect(fds[1], (struct sockaddr *)&a, sizeof(a));
	assert_true(r == 0 || errno == EINPROGRESS);
	fds[0] = accept4(l, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	assert_true(fds[0] >= 0);
	(void)al_close(l);
}

static void test_reset_reads_as_econnreset_and_writes_as_epipe(void **state)
{
	const struct linger lg = {.l_onoff = 1, .l_linger = 0};
	struct end s = {0}, c = {0};
	struct fixture f;
	uint8_t buf[16];
	int fds[2];
	ssize_t k;

	(void)state;
	fixture_init(&f);
	tcp_pair(fds);
	s.fd = fds[0];
	c.fd = fds[1];
	assert_int_equal(netns_tls_accept(f.proxy, s.fd, "api.test", &s.c, &s.err), 0);
	assert_int_equal(netns_tls_connect(f.trusting, c.fd, "api.test", false, &c.c, &c.err), 0);
	handshake(&s, &c);
	assert_int_equal(c.r, 0);
	assert_int_equal(s.r, 0);
	netns_tls_conn_free(s.c);
	assert_int_equal(setsockopt(s.fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0);
	s.fd = fds[0] = al_close(fds[0]);
	wait_fd(c.fd, EPOLLIN);
	assert_int_equal(netns_tls_read(c.c, buf, sizeof(buf)), -ECONNRESET);
	k = netns_tls_write(c.c, "x", 1);
	assert_true(k == -EPIPE);
	netns_tls_close(c.c);
	netns_tls_conn_free(c.c);
	close_pair(fds);
	fixture_done(&f);
}

static void test_connect_to_a_refused_port_fails_the_handshake_with_econnrefused(void **state)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct netns_tls_conn *c = NULL;
	socklen_t len = sizeof(a);
	struct al_error err = {0};
	struct fixture f;
	int fd, r;

	(void)state;
	fixture_init(&f);
	/* A port nobody listens on: bound, never listening. */
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	fd = al_close(fd);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	r = connect(fd, (struct sockaddr *)&a, sizeof(a));
	assert_true(r < 0 && errno == EINPROGRESS);
	assert_int_equal(netns_tls_connect(f.trusting, fd, "api.test", false, &c, &err), 0);
	while ((r = netns_tls_handshake(c, &err)) == -EAGAIN)
		wait_fd(fd, netns_tls_wants(c));
	assert_int_equal(r, -ECONNREFUSED);
	assert_non_null(strstr(err.msg, "api.test"));
	assert_non_null(strstr(err.msg, "refused"));
	c = netns_tls_conn_free(c);
	(void)al_close(fd);
	fixture_done(&f);
}

/* ---- Verification of the upstream ---- */

static void test_connect_refuses_a_certificate_for_another_name(void **state)
{
	struct end s = {0}, c = {0};
	struct fixture f;
	int fds[2];

	(void)state;
	fixture_init(&f);
	pair(fds);
	s.fd = fds[0];
	c.fd = fds[1];
	assert_int_equal(netns_tls_accept(f.proxy, s.fd, "api.test", &s.c, &s.err), 0);
	assert_int_equal(netns_tls_connect(f.trusting, c.fd, "other.test", false, &c.c, &c.err), 0);
	handshake(&s, &c);
	assert_int_equal(c.r, -EPROTO);
	assert_int_equal(c.err.code, -EPROTO);
	assert_non_null(strstr(c.err.msg, "other.test"));
	assert_non_null(strstr(c.err.msg, "certificate verify failed: hostname mismatch"));
	assert_true(s.r == -EPROTO || s.r == -ECONNRESET); /* the client's alert */
	netns_tls_conn_free(s.c);
	netns_tls_conn_free(c.c);
	close_pair(fds);
	fixture_done(&f);
}

static void test_connect_with_the_default_store_refuses_the_sandbox_ca(void **state)
{
	struct end s = {0}, c = {0};
	struct fixture f;
	int fds[2];

	(void)state;
	fixture_init(&f);
	pair(fds);
	s.fd = fds[0];
	c.fd = fds[1];
	assert_int_equal(netns_tls_accept(f.proxy, s.fd, "api.test", &s.c, &s.err), 0);
	/* f.proxy's own client uses the host's store, which knows nothing of its CA. */
	assert_int_equal(netns_tls_connect(f.proxy, c.fd, "api.test", false, &c.c, &c.err), 0);
	handshake(&s, &c);
	assert_int_equal(c.r, -EPROTO);
	assert_non_null(strstr(c.err.msg, "certificate verify failed: unable to get local issuer"));
	assert_int_not_equal(s.r, 0);
	netns_tls_conn_free(s.c);
	netns_tls_conn_free(c.c);
	close_pair(fds);
	fixture_done(&f);
}

static void test_connect_with_the_default_store_trusts_what_the_host_trusts(void **state)
{
	_cleanup_(netns_tls_freep) struct netns_tls *t = NULL;
	_cleanup_(unlink_and_free) char *bundle = NULL;
	struct end s = {0}, c = {0};
	struct al_error err = {0};
	struct fixture f;
	int fds[2];

	(void)state;
	fixture_init(&f);
	/* The host's store is OpenSSL's default, which SSL_CERT_FILE replaces; it is read at the
	 * first connection. */
	bundle = temp_file(netns_tls_ca_pem(f.proxy));
	assert_int_equal(netns_tls_new(NULL, &t, &err), 0);
	assert_int_equal(setenv("SSL_CERT_FILE", bundle, 1), 0);
	pair(fds);
	s.fd = fds[0];
	c.fd = fds[1];
	assert_int_equal(netns_tls_accept(f.proxy, s.fd, "api.test", &s.c, &s.err), 0);
	assert_int_equal(netns_tls_connect(t, c.fd, "api.test", false, &c.c, &c.err), 0);
	assert_int_equal(unsetenv("SSL_CERT_FILE"), 0);
	unlink_and_free(&bundle);
	handshake(&s, &c);
	assert_int_equal(c.r, 0);
	assert_int_equal(s.r, 0);
	netns_tls_conn_free(s.c);
	netns_tls_conn_free(c.c);
	close_pair(fds);
	fixture_done(&f);
}

/* ---- ALPN and SNI ---- */

/* Our server for api.test, a plain client offering alpn: the handshake results, and what was
 * selected in *ret (NUL-terminated). */
static void alpn_handshake(struct fixture *f, const char *alpn, bool h2, struct end *s,
			   struct end *c, char ret[static 32])
{
	const unsigned char *sel = NULL;
	unsigned sel_len = 0;
	int fds[2];

	pair(fds);
	*s = (struct end){.fd = fds[0]};
	*c = (struct end){.fd = fds[1]};
	assert_int_equal(netns_tls_accept(f->proxy, s->fd, "api.test", &s->c, &s->err), 0);
	netns_tls_allow_h2(s->c, h2);
	c->ssl = plain_client(c->fd, "api.test", f->ca, alpn, NULL);
	handshake(s, c);
	SSL_get0_alpn_selected(c->ssl, &sel, &sel_len);
	(void)snprintf(ret, 32, "%.*s", (int)sel_len, sel ? (const char *)sel : "");
	if (s->r == 0)
		assert_int_equal(netns_tls_is_h2(s->c), streq(ret, "h2"));
	netns_tls_conn_free(s->c);
	SSL_free(c->ssl);
	close_pair(fds);
}

static void test_alpn_selects_http11_from_h2_and_http11(void **state)
{
	struct end s, c;
	struct fixture f;
	char sel[32];

	(void)state;
	fixture_init(&f);
	alpn_handshake(&f, "\x02h2\x08http/1.1", false, &s, &c, sel);
	assert_int_equal(s.r, 0);
	assert_int_equal(c.r, 0);
	assert_string_equal(sel, "http/1.1");
	alpn_handshake(&f, "\x08http/1.1\x02h2", false, &s, &c, sel);
	assert_string_equal(sel, "http/1.1");
	fixture_done(&f);
}

/* Once the upstream chose h2, the sandbox gets it when it offers it, wherever in its list. */
static void test_alpn_selects_h2_when_allowed(void **state)
{
	struct end s, c;
	struct fixture f;
	char sel[32];

	(void)state;
	fixture_init(&f);
	alpn_handshake(&f, "\x08http/1.1\x02h2", true, &s, &c, sel);
	assert_int_equal(s.r, 0);
	assert_string_equal(sel, "h2");
	alpn_handshake(&f, "\x02h2", true, &s, &c, sel);
	assert_string_equal(sel, "h2");
	alpn_handshake(&f, "\x08http/1.1", true, &s, &c, sel);
	assert_string_equal(sel, "http/1.1");
	fixture_done(&f);
}

/* `curl --http1.0` offers http/1.0 alone: it gets it; a client offering both gets http/1.1. */
static void test_alpn_selects_http10_only_without_http11(void **state)
{
	static const struct {
		const char *offer;
		bool h2;
		const char *selected;
	} cases[] = {
	    {"\x08http/1.0", true, "http/1.0"},
	    {"\x08http/1.0\x08http/1.1", false, "http/1.1"},
	    {"\x02h2\x08http/1.0", true, "h2"},
	    {"\x02h2\x08http/1.0", false, "http/1.0"},
	};
	struct end s, c;
	struct fixture f;
	char sel[32];

	(void)state;
	fixture_init(&f);
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		alpn_handshake(&f, cases[i].offer, cases[i].h2, &s, &c, sel);
		assert_int_equal(s.r, 0);
		assert_int_equal(c.r, 0);
		assert_string_equal(sel, cases[i].selected);
	}
	fixture_done(&f);
}

static void test_alpn_without_http1x_is_refused_with_no_application_protocol(void **state)
{
	struct end s, c;
	struct fixture f;
	char sel[32];

	(void)state;
	fixture_init(&f);
	alpn_handshake(&f, "\x02h2", false, &s, &c, sel);
	assert_int_equal(s.r, -EPROTO);
	assert_non_null(strstr(s.err.msg, "the sandbox for api.test"));
	assert_non_null(strstr(s.err.msg, "ALPN without HTTP/1.x"));
	assert_int_equal(c.r, -EPROTO);
	assert_non_null(strstr(c.err.msg, "no application protocol"));
	fixture_done(&f);
}

static void test_client_without_alpn_gets_none(void **state)
{
	struct end s, c;
	struct fixture f;
	char sel[32];

	(void)state;
	fixture_init(&f);
	alpn_handshake(&f, NULL, false, &s, &c, sel);
	assert_int_equal(s.r, 0);
	assert_int_equal(c.r, 0);
	assert_string_equal(sel, "");
	fixture_done(&f);
}

/* A plain upstream's context serving a self-signed certificate for names (see self_signed()),
 * what its hellos showed, and our client trusting that certificate. */
struct upstream {
	SSL_CTX *ctx;
	struct netns_tls *t;
	struct seen_hello seen;
};

static void upstream_init(struct upstream *u, const char *names)
{
	_cleanup_free_ char *pem = NULL;

	*u = (struct upstream){0};
	u->ctx = plain_server_ctx(names, &u->seen, &pem);
	u->t = new_trusting(pem);
}

static void upstream_done(struct upstream *u)
{
	u->t = netns_tls_free(u->t);
	SSL_CTX_free(u->ctx);
	u->ctx = NULL;
}

/* Our client for "api.test" against a plain upstream serving a self-signed certificate for names
 * (see self_signed()) that the client trusts: handshakes, then calls check with both ends. */
static void connect_to_plain(const char *names, bool offer_h2,
			     void (*check)(struct end *s, struct end *c,
					   const struct seen_hello *seen))
{
	struct upstream u;
	struct end s = {0}, c = {0};
	int fds[2];

	upstream_init(&u, names);
	pair(fds);
	s.fd = fds[0];
	c.fd = fds[1];
	s.ssl = plain_server(u.ctx, s.fd);
	assert_int_equal(netns_tls_connect(u.t, c.fd, "api.test", offer_h2, &c.c, &c.err), 0);
	handshake(&s, &c);
	check(&s, &c, &u.seen);
	SSL_free(s.ssl);
	netns_tls_conn_free(c.c);
	close_pair(fds);
	upstream_done(&u);
}

static void check_sni_and_http11(struct end *s, struct end *c, const struct seen_hello *seen)
{
	assert_int_equal(c->r, 0);
	assert_int_equal(s->r, 0);
	assert_string_equal(seen->sni, "api.test");
	assert_int_equal(seen->alpn_len, 9);
	assert_memory_equal(seen->alpn, "\x08http/1.1", 9);
	assert_true(SSL_version(s->ssl) >= TLS1_2_VERSION);
}

static void test_connect_sends_sni_and_offers_only_http11(void **state)
{
	(void)state;
	connect_to_plain("DNS:api.test", false, check_sni_and_http11);
}

static void check_h2_offered_and_chosen(struct end *s, struct end *c, const struct seen_hello *seen)
{
	assert_int_equal(c->r, 0);
	assert_int_equal(s->r, 0);
	assert_int_equal(seen->alpn_len, 12);
	assert_memory_equal(seen->alpn, "\x02h2\x08http/1.1", 12);
	assert_true(netns_tls_is_h2(c->c));
}

static void test_connect_offers_h2_when_asked_and_reports_the_choice(void **state)
{
	(void)state;
	connect_to_plain("DNS:api.test", true, check_h2_offered_and_chosen);
}

static void check_refused_as_mismatch(struct end *s, struct end *c, const struct seen_hello *seen)
{
	(void)s;
	(void)seen;
	assert_int_equal(c->r, -EPROTO);
	assert_non_null(strstr(c->err.msg, "hostname mismatch"));
}

static void test_connect_refuses_a_certificate_naming_the_host_in_its_cn_only(void **state)
{
	(void)state;
	connect_to_plain("CN=api.test", false, check_refused_as_mismatch);
}

/* ---- Resumption ---- */

/* n connections of t's client for name to plain servers of ctx at once: handshakes, a byte from
 * each server (which brings TLS 1.3's tickets along), close. Returns how many resumed. */
static size_t upstream_parallel(struct netns_tls *t, SSL_CTX *ctx, const char *name, size_t n)
{
	struct end s[24] = {0}, c[24] = {0};
	int fds[24][2];
	size_t reused = 0;
	uint8_t b;

	assert_true(n <= ELEMENTSOF(s));
	for (size_t i = 0; i < n; i++) {
		pair(fds[i]);
		s[i].fd = fds[i][0];
		c[i].fd = fds[i][1];
		s[i].ssl = plain_server(ctx, s[i].fd);
		assert_int_equal(netns_tls_connect(t, c[i].fd, name, false, &c[i].c, &c[i].err), 0);
	}
	for (size_t i = 0; i < n; i++) {
		handshake(&s[i], &c[i]);
		assert_int_equal(c[i].r, 0);
		assert_int_equal(s[i].r, 0);
		assert_int_equal(SSL_write(s[i].ssl, "x", 1), 1);
		assert_int_equal(read_some(c[i].c, c[i].fd, &b, 1), 1);
	}
	for (size_t i = 0; i < n; i++) {
		netns_tls_close(c[i].c);
		reused += SSL_session_reused(s[i].ssl);
		SSL_free(s[i].ssl);
		netns_tls_conn_free(c[i].c);
		close_pair(fds[i]);
	}
	return reused;
}

/* One such connection: whether it resumed. */
static bool upstream_once(struct netns_tls *t, SSL_CTX *ctx, const char *name)
{
	return upstream_parallel(t, ctx, name, 1) == 1;
}

static void test_client_resumes_the_upstream_session_of_the_same_name(void **state)
{
	struct upstream u;

	(void)state;
	upstream_init(&u, "DNS:api.test,DNS:www.test");
	assert_false(upstream_once(u.t, u.ctx, "api.test"));
	assert_true(upstream_once(u.t, u.ctx, "api.test"));
	/* each resumption brings a new ticket */
	assert_true(upstream_once(u.t, u.ctx, "api.test"));
	/* Sessions are per name. */
	assert_false(upstream_once(u.t, u.ctx, "www.test"));
	assert_true(upstream_once(u.t, u.ctx, "www.test"));
	upstream_done(&u);
}

/* A client keeping many connections busy at once (a load generator, a package manager): each
 * takes a ticket of its own, and enough are kept for all of them. */
static void test_client_keeps_tickets_for_connections_at_once(void **state)
{
	struct upstream u;

	(void)state;
	upstream_init(&u, "DNS:api.test");
	assert_int_equal(upstream_parallel(u.t, u.ctx, "api.test", 24), 0);
	assert_int_equal(upstream_parallel(u.t, u.ctx, "api.test", 24), 24);
	assert_int_equal(upstream_parallel(u.t, u.ctx, "api.test", 24), 24);
	upstream_done(&u);
}

static void test_client_resumes_a_tls12_upstream_session(void **state)
{
	struct upstream u;

	(void)state;
	upstream_init(&u, "DNS:api.test");
	assert_int_equal(SSL_CTX_set_max_proto_version(u.ctx, TLS1_2_VERSION), 1);
	assert_false(upstream_once(u.t, u.ctx, "api.test"));
	assert_true(upstream_once(u.t, u.ctx, "api.test"));
	assert_true(upstream_once(u.t, u.ctx, "api.test"));
	upstream_done(&u);
}

static void test_client_uses_a_tls13_ticket_only_once(void **state)
{
	struct upstream u;
	struct end s[2] = {0}, c[2] = {0};
	int fds[2][2];

	(void)state;
	upstream_init(&u, "DNS:api.test");
	assert_int_equal(SSL_CTX_set_num_tickets(u.ctx, 1), 1);
	assert_false(upstream_once(u.t, u.ctx, "api.test"));
	/* One ticket, two connections at once (both hellos out before either handshake ends, as
	 * OpenSSL only retires a used TLS 1.3 session at the end): the second must not offer the
	 * ticket again (RFC 8446 C.4), and does without. */
	for (int i = 0; i < 2; i++) {
		pair(fds[i]);
		s[i].fd = fds[i][0];
		c[i].fd = fds[i][1];
		s[i].ssl = plain_server(u.ctx, s[i].fd);
		assert_int_equal(
		    netns_tls_connect(u.t, c[i].fd, "api.test", false, &c[i].c, &c[i].err), 0);
		assert_int_equal(netns_tls_handshake(c[i].c, &c[i].err), -EAGAIN);
	}
	for (int i = 0; i < 2; i++) {
		handshake(&s[i], &c[i]);
		assert_int_equal(c[i].r, 0);
		assert_int_equal(u.seen.psk, i == 0);
		assert_int_equal(SSL_session_reused(s[i].ssl), i == 0);
	}
	for (int i = 0; i < 2; i++) {
		SSL_free(s[i].ssl);
		netns_tls_conn_free(c[i].c);
		close_pair(fds[i]);
	}
	upstream_done(&u);
}

static void test_server_resumes_a_session_of_the_sandbox(void **state)
{
	_cleanup_(SSL_SESSION_freep) SSL_SESSION *session = NULL;
	struct end s, c;
	struct fixture f;
	uint8_t b;
	int fds[2];

	(void)state;
	fixture_init(&f);
	for (int i = 0; i < 2; i++) {
		pair(fds);
		s = (struct end){.fd = fds[0]};
		c = (struct end){.fd = fds[1]};
		assert_int_equal(netns_tls_accept(f.proxy, s.fd, "api.test", &s.c, &s.err), 0);
		c.ssl = plain_client(c.fd, "api.test", f.ca, NULL, session);
		handshake(&s, &c);
		assert_int_equal(s.r, 0);
		assert_int_equal(c.r, 0);
		write_all(s.c, s.fd, "x", 1);
		assert_int_equal(ssl_read_some(c.ssl, c.fd, &b, 1), 1);
		assert_int_equal(SSL_session_reused(c.ssl), i == 1);
		SSL_SESSION_free(session);
		session = SSL_get1_session(c.ssl);
		assert_non_null(session);
		/* Without a close_notify, OpenSSL would take the session for a bad one. */
		(void)SSL_shutdown(c.ssl);
		SSL_free(c.ssl);
		netns_tls_conn_free(s.c);
		close_pair(fds);
	}
	fixture_done(&f);
}

static int tickets_seen;

static int count_ticket(SSL *ssl, SSL_SESSION *session)
{
	(void)ssl;
	(void)session;
	tickets_seen++;
	return 0; /* not kept */
}

/* A client listing AES-256 first (OpenSSL's default order) still gets AES-128 (its key schedule
 * is SHA-256's), and one ticket. */
static void test_server_chooses_aes128_and_issues_one_ticket(void **state)
{
	struct end s = {0}, c = {0};
	struct fixture f;
	SSL_CTX *cctx;
	uint8_t b;
	int fds[2];

	(void)state;
	fixture_init(&f);
	pair(fds);
	s.fd = fds[0];
	c.fd = fds[1];
	assert_int_equal(netns_tls_accept(f.proxy, s.fd, "api.test", &s.c, &s.err), 0);
	c.ssl = plain_client(c.fd, "api.test", f.ca, NULL, NULL);
	cctx = SSL_get_SSL_CTX(c.ssl);
	SSL_CTX_set_session_cache_mode(cctx, SSL_SESS_CACHE_CLIENT);
	SSL_CTX_sess_set_new_cb(cctx, count_ticket);
	tickets_seen = 0;
	handshake(&s, &c);
	assert_int_equal(s.r, 0);
	assert_int_equal(c.r, 0);
	write_all(s.c, s.fd, "x", 1);
	assert_int_equal(ssl_read_some(c.ssl, c.fd, &b, 1), 1);
	assert_string_equal(SSL_CIPHER_get_name(SSL_get_current_cipher(c.ssl)),
			    "TLS_AES_128_GCM_SHA256");
	assert_int_equal(tickets_seen, 1);
	SSL_free(c.ssl);
	netns_tls_conn_free(s.c);
	close_pair(fds);
	fixture_done(&f);
}

/* ---- What a hostile sandbox might send ---- */

static int accept_and_feed(struct fixture *f, const void *bytes, size_t n, bool then_eof,
			   struct al_error *err)
{
	struct netns_tls_conn *c = NULL;
	int fds[2], r;

	pair(fds);
	assert_int_equal(netns_tls_accept(f->proxy, fds[0], "api.test", &c, err), 0);
	assert_int_equal(send(fds[1], bytes, n, MSG_NOSIGNAL), (ssize_t)n);
	if (then_eof)
		assert_int_equal(shutdown(fds[1], SHUT_WR), 0);
	while ((r = netns_tls_handshake(c, err)) == -EAGAIN)
		wait_fd(fds[0], netns_tls_wants(c));
	c = netns_tls_conn_free(c);
	close_pair(fds);
	return r;
}

static void test_garbage_from_the_sandbox_fails_the_handshake_with_eproto(void **state)
{
	static const char http[] = "GET / HTTP/1.1\r\nHost: api.test\r\n\r\n";
	static const uint8_t bad_record[] = {0x16, 0x03, 0x01, 0x00, 0x08, 0x01, 0x00,
					     0x00, 0x04, 0xde, 0xad, 0xbe, 0xef};
	uint8_t noise[512];
	struct al_error err = {0};
	struct fixture f;

	(void)state;
	fixture_init(&f);
	assert_int_equal(accept_and_feed(&f, http, strlen(http), false, &err), -EPROTO);
	assert_non_null(strstr(err.msg, "TLS handshake with the sandbox for api.test failed"));
	assert_int_equal(accept_and_feed(&f, bad_record, sizeof(bad_record), false, &err), -EPROTO);
	for (size_t i = 0; i < sizeof(noise); i++)
		noise[i] = (uint8_t)(i * 131 + 17);
	assert_int_equal(accept_and_feed(&f, noise, sizeof(noise), false, &err), -EPROTO);
	assert_int_equal(ERR_peek_error(), 0);
	fixture_done(&f);
}

static void test_hello_cut_short_by_eof_gives_econnreset(void **state)
{
	static const uint8_t start[] = {0x16, 0x03, 0x01, 0x01, 0x00, 0x01, 0x00, 0x00, 0xfc};
	struct al_error err = {0};
	struct fixture f;

	(void)state;
	fixture_init(&f);
	assert_int_equal(accept_and_feed(&f, start, sizeof(start), true, &err), -ECONNRESET);
	assert_non_null(strstr(err.msg, "closed"));
	fixture_done(&f);
}

/* ---- Figures (AIRLOCK_TLS_BENCH=1) ---- */

static double now_seconds(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Connections per second from t's client to proxy's server, cycling through n names: a
 * handshake, a byte each way, close_notify both ways. */
static double bench_connections(struct fixture *f, unsigned n_names, double seconds)
{
	double start = now_seconds(), elapsed;
	unsigned count = 0;
	char name[32];

	do {
		struct end s = {0}, c = {0};
		uint8_t b;
		int fds[2];

		(void)snprintf(name, sizeof(name), "b%u.test", count % n_names);
		pair(fds);
		s.fd = fds[0];
		c.fd = fds[1];
		assert_int_equal(netns_tls_accept(f->proxy, s.fd, name, &s.c, &s.err), 0);
		assert_int_equal(netns_tls_connect(f->trusting, c.fd, name, false, &c.c, &c.err),
				 0);
		handshake(&s, &c);
		assert_int_equal(s.r, 0);
		assert_int_equal(c.r, 0);
		write_all(c.c, c.fd, "q", 1);
		assert_int_equal(read_some(s.c, s.fd, &b, 1), 1);
		write_all(s.c, s.fd, "a", 1);
		assert_int_equal(read_some(c.c, c.fd, &b, 1), 1);
		netns_tls_close(c.c);
		netns_tls_close(s.c);
		netns_tls_conn_free(s.c);
		netns_tls_conn_free(c.c);
		close_pair(fds);
		count++;
		elapsed = now_seconds() - start;
	} while (elapsed < seconds);
	return count / elapsed;
}

static void bench(void)
{
	struct netns_tls_conn *c = NULL;
	struct al_error err = {0};
	struct fixture f;
	double start, full, resumed;
	char name[32];
	int fds[2];

	/* What a sandbox's launch pays: two keys, the CA, the host's CA store. */
	start = now_seconds();
	for (unsigned i = 0; i < 20; i++) {
		struct netns_tls *t = NULL;

		assert_int_equal(netns_tls_new(NULL, &t, &err), 0);
		netns_tls_free(t);
	}
	printf("# netns_tls_new(NULL): %.2f ms\n", (now_seconds() - start) / 20 * 1e3);
	/* And at its first connection, the host's CA store. */
	start = now_seconds();
	for (unsigned i = 0; i < 5; i++) {
		struct netns_tls *t = NULL;

		assert_int_equal(netns_tls_new(NULL, &t, &err), 0);
		pair(fds);
		assert_int_equal(netns_tls_connect(t, fds[1], "api.test", false, &c, &err), 0);
		c = netns_tls_conn_free(c);
		close_pair(fds);
		netns_tls_free(t);
	}
	printf("# netns_tls_new(NULL) and a first netns_tls_connect(): %.2f ms\n",
	       (now_seconds() - start) / 5 * 1e3);
	fixture_init(&f);
	/* Minting: a leaf per new name. */
	pair(fds);
	start = now_seconds();
	for (unsigned i = 0; i < 1000; i++) {
		(void)snprintf(name, sizeof(name), "m%u.test", i);
		assert_int_equal(netns_tls_accept(f.proxy, fds[0], name, &c, &err), 0);
		c = netns_tls_conn_free(c);
	}
	printf("# leaves minted: %.0f/s\n", 1000 / (now_seconds() - start));
	close_pair(fds);
	/* Full handshakes: 300 names, more than the client keeps sessions for (leaves minted in a
	 * first round); then resumed ones, with one name. */
	(void)bench_connections(&f, 300, 0.3);
	full = bench_connections(&f, 300, 2.0);
	resumed = bench_connections(&f, 1, 2.0);
	printf("# connections (accept+connect, both sides in this thread): full handshakes %.0f/s, "
	       "resumed %.0f/s (x%.2f)\n",
	       full, resumed, resumed / full);
	fixture_done(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ca_pem_is_a_self_signed_p256_ca_valid_now),
	    cmocka_unit_test(test_ca_serial_is_a_random_positive_128_bit_number),
	    cmocka_unit_test(test_new_with_missing_ca_file_names_the_file),
	    cmocka_unit_test(test_new_with_a_ca_file_without_certificates_fails),
	    cmocka_unit_test(test_leaf_names_the_host_and_chains_to_the_ca),
	    cmocka_unit_test(test_second_connection_to_a_name_reuses_the_cached_leaf),
	    cmocka_unit_test(test_names_past_the_cache_cap_work_and_evicted_ones_are_minted_again),
	    cmocka_unit_test(test_long_name_gets_a_leaf_with_a_critical_san_and_no_cn),
	    cmocka_unit_test(test_names_that_are_no_host_names_are_refused),
	    cmocka_unit_test(test_accept_and_connect_move_data_both_ways_and_close_cleanly),
	    cmocka_unit_test(test_records_read_ahead_are_pending_while_the_fd_is_idle),
	    cmocka_unit_test(test_read_out_side_waits_for_its_next_event_and_keeps_saying_the_end),
	    cmocka_unit_test(test_eof_without_close_notify_reads_as_the_end),
	    cmocka_unit_test(test_close_never_blocks_on_a_full_socket),
	    cmocka_unit_test(test_queued_records_wait_for_their_sender_and_go_first),
	    cmocka_unit_test(test_reset_reads_as_econnreset_and_writes_as_epipe),
	    cmocka_unit_test(test_connect_to_a_refused_port_fails_the_handshake_with_econnrefused),
	    cmocka_unit_test(test_connect_refuses_a_certificate_for_another_name),
	    cmocka_unit_test(test_connect_with_the_default_store_refuses_the_sandbox_ca),
	    cmocka_unit_test(test_connect_with_the_default_store_trusts_what_the_host_trusts),
	    cmocka_unit_test(test_alpn_selects_http11_from_h2_and_http11),
	    cmocka_unit_test(test_alpn_selects_h2_when_allowed),
	    cmocka_unit_test(test_alpn_selects_http10_only_without_http11),
	    cmocka_unit_test(test_alpn_without_http1x_is_refused_with_no_application_protocol),
	    cmocka_unit_test(test_client_without_alpn_gets_none),
	    cmocka_unit_test(test_connect_sends_sni_and_offers_only_http11),
	    cmocka_unit_test(test_connect_offers_h2_when_asked_and_reports_the_choice),
	    cmocka_unit_test(test_connect_refuses_a_certificate_naming_the_host_in_its_cn_only),
	    cmocka_unit_test(test_client_resumes_the_upstream_session_of_the_same_name),
	    cmocka_unit_test(test_client_keeps_tickets_for_connections_at_once),
	    cmocka_unit_test(test_client_resumes_a_tls12_upstream_session),
	    cmocka_unit_test(test_client_uses_a_tls13_ticket_only_once),
	    cmocka_unit_test(test_server_resumes_a_session_of_the_sandbox),
	    cmocka_unit_test(test_server_chooses_aes128_and_issues_one_ticket),
	    cmocka_unit_test(test_garbage_from_the_sandbox_fails_the_handshake_with_eproto),
	    cmocka_unit_test(test_hello_cut_short_by_eof_gives_econnreset),
	};
	int r;

	/* The plain OpenSSL ends here write with write(2). */
	(void)signal(SIGPIPE, SIG_IGN);
	r = cmocka_run_group_tests(tests, NULL, NULL);
	if (r == 0 && getenv("AIRLOCK_TLS_BENCH"))
		bench();
	return r;
}
