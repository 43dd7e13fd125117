/* tests/unit/netns/test-http-flow.c: one inspected HTTP/1.1 connection of the egress proxy.
 * Requests and responses are fed as the proxy feeds them, whole and in every split, and what the
 * flow passes on is compared byte for byte. A fake broker maps three surrogates: one to a shorter
 * value, one it refuses, one to a value of the same length. */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "broker/client.h"
#include "common/macro.h"
#include "netns/http-flow-internal.h"
#include "netns/netns-internal.h"

#define S_GH "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
#define V_GH "github-real-token-value-0001"
#define S_REFUSED "airlock_sur_0123456789abcdefghijABCDEFGHIJkl"
#define S_SAME "airlock_sur_ZYXWVUTSRQponmlkjihgfedcba987654"
#define V_SAME "same-length-real-value-for-the-surrogate-ok!"
/* A value with characters JSON escapes in two bytes ('/') and forms write as '+' (' '), its
 * surrogate as long. */
#define S_SLASH "airlock_sur_slashSLASH012345"
#define V_SLASH "real/value with/slashes/0001"
#define SIDE_VALUE "Bearer sk-sidecar-real-value-42"
/* A value of 30 bytes (a multiple of three) behind a generic surrogate (44). */
#define S_LEN30 "airlock_sur_len30LEN30abcdefghij0123456789xy"
#define V_LEN30 "thirty-byte-real-value-0123456"
/* A value of digits only (an account number). */
#define S_NUM "airlock_sur_numNUMabcdefghij0123456789xyzW"
#define V_NUM "31415926535"

#define HOST "api.github.com"
#define GET_ROOT "GET / HTTP/1.1\r\nHost: " HOST "\r\n\r\n"

struct fake {
	const char *sidecar; /* NULL: none */
	unsigned resolve_calls, sidecar_calls, bound_calls;
	int bound_error; /* bound_value fails with it */
	char swapped[8][96];
	unsigned n_swapped;
};

struct ft {
	struct fake fake;
	struct netns_http_flow_ops ops;
	struct netns_http_flow_options o;
	struct netns_http_flow *f;
	struct netns_buf up, down;
	struct al_error err;
};

static const char *const surrogates[] = {S_GH, S_REFUSED, S_SAME, S_SLASH, S_LEN30, S_NUM, NULL};

static int fake_secret(const char *value, struct broker_secret **ret)
{
	struct broker_secret *s = broker_secret_new(strlen(value));

	if (!s)
		return -ENOMEM;
	memcpy(s->data, value, s->len);
	*ret = s;
	return 0;
}

static int fake_resolve(void *userdata, const char *surrogate, struct broker_secret **ret,
			struct al_error *err)
{
	struct fake *fk = userdata;

	fk->resolve_calls++;
	if (strcmp(surrogate, S_GH) == 0)
		return fake_secret(V_GH, ret);
	if (strcmp(surrogate, S_SAME) == 0)
		return fake_secret(V_SAME, ret);
	if (strcmp(surrogate, S_SLASH) == 0)
		return fake_secret(V_SLASH, ret);
	if (strcmp(surrogate, S_LEN30) == 0)
		return fake_secret(V_LEN30, ret);
	if (strcmp(surrogate, S_NUM) == 0)
		return fake_secret(V_NUM, ret);
	return al_error_set(err, -EPERM, "credential \"npm\" is not bound to this host");
}

static int fake_sidecar(void *userdata, struct broker_secret **ret, struct al_error *err)
{
	struct fake *fk = userdata;

	fk->sidecar_calls++;
	*ret = NULL;
	return fk->sidecar ? fake_secret(fk->sidecar, ret) : 0;
}

/* S_GH and S_SAME are bound to the host; S_REFUSED is not. */
static int fake_bound_value(void *userdata, const char *surrogate, struct broker_secret **ret,
			    struct al_error *err)
{
	struct fake *fk = userdata;

	fk->bound_calls++;
	*ret = NULL;
	if (fk->bound_error)
		return al_error_set(err, fk->bound_error, "the broker is gone");
	if (strcmp(surrogate, S_GH) == 0)
		return fake_secret(V_GH, ret);
	if (strcmp(surrogate, S_SAME) == 0)
		return fake_secret(V_SAME, ret);
	return 0;
}

static void fake_swapped(void *userdata, const char *surrogate, const char *where, uint32_t stream)
{
	struct fake *fk = userdata;

	assert_int_equal(stream, 0);
	if (fk->n_swapped < 8)
		(void)snprintf(fk->swapped[fk->n_swapped++], sizeof(fk->swapped[0]), "%.4s %s",
			       surrogate, where);
}

static struct ft *ft_new_at(uint16_t port, const char *sidecar)
{
	struct ft *t = calloc(1, sizeof(*t));

	assert_non_null(t);
	t->fake.sidecar = sidecar;
	t->ops = (struct netns_http_flow_ops){
	    .resolve = fake_resolve, .sidecar = fake_sidecar, .swapped = fake_swapped};
	t->o = (struct netns_http_flow_options){.host = HOST,
						.port = port,
						.surrogates = surrogates,
						.ops = &t->ops,
						.userdata = &t->fake};
	assert_int_equal(netns_http_flow_new(&t->o, &t->f), 0);
	return t;
}

static struct ft *ft_new(void)
{
	return ft_new_at(443, NULL);
}

static void ft_free(struct ft *t)
{
	netns_http_flow_free(t->f);
	netns_buf_done(&t->up);
	netns_buf_done(&t->down);
	free(t);
}

/* Feeds buf in pieces of at most piece bytes, each from a heap copy of exactly its size; returns
 * the first error, or 0 when all was consumed. */
static int feed(struct ft *t, bool request, const void *buf, size_t len, size_t piece)
{
	const uint8_t *p = buf;

	while (len > 0) {
		size_t n = MIN(len, piece);
		uint8_t *c = malloc(n);
		ssize_t r;

		assert_non_null(c);
		memcpy(c, p, n);
		r = request ? netns_http_flow_request(t->f, c, n, &t->up, &t->err)
			    : netns_http_flow_response(t->f, c, n, &t->down, &t->err);
		free(c);
		if (r < 0)
			return (int)r;
		assert_true((size_t)r == n);
		p += n;
		len -= n;
	}
	return 0;
}

static int send_req(struct ft *t, const char *s)
{
	return feed(t, true, s, strlen(s), SIZE_MAX);
}

static int send_resp(struct ft *t, const char *s)
{
	return feed(t, false, s, strlen(s), SIZE_MAX);
}

/* netns_buf_head() of a buffer that never held anything is NULL + 0. */
static const char *buf_text(const struct netns_buf *b)
{
	return b->data ? (const char *)netns_buf_head(b) : "";
}

static void drain(struct netns_buf *b)
{
	if (netns_buf_len(b) > 0)
		netns_buf_consume(b, netns_buf_len(b));
}

static void expect_buf(struct netns_buf *b, const void *expected, size_t n)
{
	if (netns_buf_len(b) != n || memcmp(buf_text(b), expected, n) != 0)
		fail_msg("got (%zu bytes)\n%.*s\nexpected (%zu bytes)\n%.*s", netns_buf_len(b),
			 (int)netns_buf_len(b), buf_text(b), n, (int)n, (const char *)expected);
	if (n > 0)
		netns_buf_consume(b, n);
}

static void expect_up(struct ft *t, const char *expected)
{
	expect_buf(&t->up, expected, strlen(expected));
}

static void expect_down(struct ft *t, const char *expected)
{
	expect_buf(&t->down, expected, strlen(expected));
}

static bool buf_has(const struct netns_buf *b, const char *s)
{
	return memmem(buf_text(b), netns_buf_len(b), s, strlen(s)) != NULL;
}

static void expect_refused(struct ft *t, const char *request, int code, const char *what)
{
	int r = send_req(t, request);

	if (r != code)
		fail_msg("expected %d, got %d (%s)", code, r, t->err.msg);
	if (!strstr(t->err.msg, what))
		fail_msg("message \"%s\" does not say \"%s\"", t->err.msg, what);
	assert_int_equal(netns_buf_len(&t->up), 0);
}

/* A request refused on a flow of its own. */
static void refused(const char *request, int code, const char *what)
{
	struct ft *t = ft_new();

	expect_refused(t, request, code, what);
	ft_free(t);
}

static char *b64(const char *s)
{
	static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t n = strlen(s), o = 0;
	char *d = malloc(n / 3 * 4 + 5);

	assert_non_null(d);
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)(uint8_t)s[i] << 16;

		v |= i + 1 < n ? (uint32_t)(uint8_t)s[i + 1] << 8 : 0;
		v |= i + 2 < n ? (uint8_t)s[i + 2] : 0;
		d[o++] = a[v >> 18 & 63];
		d[o++] = a[v >> 12 & 63];
		d[o++] = i + 1 < n ? a[v >> 6 & 63] : '=';
		d[o++] = i + 2 < n ? a[v & 63] : '=';
	}
	d[o] = '\0';
	return d;
}

static char *str_printf(const char *fmt, ...) _printf_(1, 2);
static char *str_printf(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	assert_true(vasprintf(&s, fmt, ap) >= 0);
	va_end(ap);
	return s;
}

/* ---- request heads ---- */

static void test_flow_rebuilds_request_head_with_surrogate_swapped(void **state)
{
	struct ft *t = ft_new();

	(void)state;
	assert_int_equal(send_req(t, "GET /user HTTP/1.1\r\n"
				     "Host: " HOST "\r\n"
				     "Authorization:   Bearer " S_GH "  \r\n"
				     "Accept: */*\r\n"
				     "\r\n"),
			 0);
	expect_up(t, "GET /user HTTP/1.1\r\n"
		     "Host: " HOST "\r\n"
		     "Authorization: Bearer " V_GH "\r\n"
		     "Accept: */*\r\n"
		     "\r\n");
	assert_int_equal(t->fake.n_swapped, 1);
	assert_string_equal(t->fake.swapped[0], "ghp_ header authorization");
	ft_free(t);
}

static void test_flow_swaps_several_surrogates_and_resolves_each_once(void **state)
{
	struct ft *t = ft_new();

	(void)state;
	assert_int_equal(send_req(t, "GET / HTTP/1.1\r\nHost: " HOST "\r\n"
				     "Cookie: a=" S_GH "; b=" S_SAME "; c=" S_GH "\r\n\r\n"),
			 0);
	expect_up(t, "GET / HTTP/1.1\r\nHost: " HOST "\r\n"
		     "Cookie: a=" V_GH "; b=" V_SAME "; c=" V_GH "\r\n\r\n");
	assert_int_equal(send_req(t, "GET / HTTP/1.1\r\nHost: " HOST "\r\nX-T: " S_GH "\r\n\r\n"),
			 0);
	expect_up(t, "GET / HTTP/1.1\r\nHost: " HOST "\r\nX-T: " V_GH "\r\n\r\n");
	assert_int_equal(t->fake.resolve_calls, 2);
	ft_free(t);
}

static void test_flow_strips_upgrade_and_proxy_headers_and_their_connection_options(void **state)
{
	struct ft *t = ft_new();

	(void)state;
	assert_int_equal(send_req(t, "GET / HTTP/1.1\r\n"
				     "Host: " HOST "\r\n"
				     "Connection: Upgrade, HTTP2-Settings, keep-alive,, X-Foo, "
				     "content-length, Proxy-Authorization\r\n"
				     "Upgrade: h2c\r\n"
				     "HTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n"
				     "Proxy-Authorization: Basic Zm9vOmJhcg==\r\n"
				     "Proxy-Connection: keep-alive\r\n"
				     "X-Foo: 1\r\n"
				     "\r\n"),
			 0);
	expect_up(t, "GET / HTTP/1.1\r\n"
		     "Host: " HOST "\r\n"
		     "Connection: keep-alive, X-Foo\r\n"
		     "X-Foo: 1\r\n"
		     "\r\n");
	/* A Connection header left with nothing is not sent. */
	assert_int_equal(send_req(t, "GET / HTTP/1.1\r\nHost: " HOST "\r\n"
				     "Connection: upgrade\r\nUpgrade: websocket\r\n\r\n"),
			 0);
	expect_up(t, GET_ROOT);
	ft_free(t);
}

static void test_flow_refuses_request_naming_another_host(void **state)
{
	(void)state;
	refused("GET / HTTP/1.1\r\nHost: evil.example\r\n\r\n", -EPROTO, "Host");
	refused("GET / HTTP/1.1\r\nHost: api.github.com.evil.example\r\n\r\n", -EPROTO, "Host");
	refused("GET / HTTP/1.1\r\nHost: api.github.co\r\n\r\n", -EPROTO, "Host");
	refused("GET / HTTP/1.1\r\nHost: api.github.com..\r\n\r\n", -EPROTO, "Host");
	refused("GET / HTTP/1.1\r\nHost: api.github.com:8443\r\n\r\n", -EPROTO, "Host");
	refused("GET / HTTP/1.1\r\nHost: [::1]\r\n\r\n", -EPROTO, "Host");
	refused("GET http://evil.example/ HTTP/1.1\r\nHost: " HOST "\r\n\r\n", -EPROTO,
		"request target");
	refused("GET https://api.github.com:80/ HTTP/1.1\r\nHost: " HOST "\r\n\r\n", -EPROTO,
		"request target");
	refused("GET http://evil.example/ HTTP/1.0\r\n\r\n", -EPROTO, "request target");
	refused("CONNECT api.github.com:443 HTTP/1.1\r\nHost: api.github.com:443\r\n\r\n", -EBADMSG,
		"CONNECT");
}

static void test_flow_accepts_host_in_any_case_with_a_trailing_dot_and_its_own_port(void **state)
{
	static const char *const hosts[] = {"API.GitHub.COM", "api.github.com.",
					    "api.github.com:443", "Api.Github.Com.:443"};
	struct ft *t = ft_new();

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(hosts); i++) {
		char *req = str_printf("GET / HTTP/1.1\r\nHost: %s\r\n\r\n", hosts[i]);

		assert_int_equal(send_req(t, req), 0);
		expect_up(t, req);
		free(req);
	}
	assert_int_equal(send_req(t, "GET https://api.github.com:443/x?y HTTP/1.1\r\n"
				     "Host: " HOST "\r\n\r\n"),
			 0);
	/* To the origin in origin-form, its Host the target's authority (RFC 9112 3.2.1, 3.2.2). */
	expect_up(t, "GET /x?y HTTP/1.1\r\nHost: api.github.com:443\r\n\r\n");
	ft_free(t);
}

/* What a client sends a proxy (HTTP_PROXY: curl, pip, urllib) goes to the origin as a request to
 * an origin: the path and query alone ("/" when the path is empty), Host from the target in
 * place of the client's, whatever else the head holds kept. */
static void test_flow_sends_an_absolute_form_target_in_origin_form(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
	    {"GET http://api.github.com/a/b?c=d HTTP/1.1\r\nHost: api.github.com\r\nX: 1\r\n\r\n",
	     "GET /a/b?c=d HTTP/1.1\r\nHost: api.github.com\r\nX: 1\r\n\r\n"},
	    {"GET http://API.github.com HTTP/1.1\r\nHost: api.github.com\r\n\r\n",
	     "GET / HTTP/1.1\r\nHost: API.github.com\r\n\r\n"},
	    {"HEAD http://api.github.com?q=1 HTTP/1.1\r\nHost: api.github.com.\r\n\r\n",
	     "HEAD /?q=1 HTTP/1.1\r\nHost: api.github.com\r\n\r\n"},
	    {"OPTIONS * HTTP/1.1\r\nHost: api.github.com\r\n\r\n",
	     "OPTIONS * HTTP/1.1\r\nHost: api.github.com\r\n\r\n"},
	};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct ft *t = ft_new();

		assert_int_equal(send_req(t, cases[i].in), 0);
		expect_up(t, cases[i].out);
		ft_free(t);
	}
}

static void test_flow_passes_http_1_0_without_host_as_the_last_request(void **state)
{
	struct ft *t = ft_new();

	(void)state;
	assert_int_equal(send_req(t, "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"
				     "GET /second HTTP/1.0\r\n\r\n"),
			 0);
	/* keep-alive is not passed on: the upstream closes after the answer. */
	expect_up(t, "GET / HTTP/1.0\r\n\r\n");
	ft_free(t);

	t = ft_new();
	assert_int_equal(send_req(t, "GET http://api.github.com/x HTTP/1.0\r\n\r\n"), 0);
	expect_up(t, "GET /x HTTP/1.0\r\nHost: api.github.com\r\n\r\n");
	ft_free(t);
}

static void test_flow_swaps_surrogate_inside_basic_credentials(void **state)
{
	char *in = b64("x-access-token:" S_GH), *want = b64("x-access-token:" V_GH);
	char *req = str_printf("GET /r.git/info/refs HTTP/1.1\r\nHost: " HOST "\r\n"
			       "Authorization: Basic %s\r\n\r\n",
			       in);
	char *exp = str_printf("GET /r.git/info/refs HTTP/1.1\r\nHost: " HOST "\r\n"
			       "Authorization: Basic %s\r\n\r\n",
			       want);
	struct ft *t = ft_new();

	(void)state;
	assert_int_equal(send_req(t, req), 0);
	expect_up(t, exp);
	assert_string_equal(t->fake.swapped[0], "ghp_ header authorization (basic)");
	/* Credentials without a surrogate pass as they are. */
	assert_int_equal(send_req(t, "GET / HTTP/1.1\r\nHost: " HOST "\r\n"
				     "Authorization: basic Zm9vOmJhcg==\r\n\r\n"),
			 0);
	expect_up(t,
		  "GET / HTTP/1.1\r\nHost: " HOST "\r\nAuthorization: basic Zm9vOmJhcg==\r\n\r\n");
	ft_free(t);
	free(in);
	free(want);
	free(req);
	free(exp);
}

static void test_flow_refuses_surrogate_in_request_target_raw_or_encoded(void **state)
{
	char *enc = b64("token=" S_GH), *req;

	(void)state;
	refused("GET /x?t=" S_GH " HTTP/1.1\r\nHost: " HOST "\r\n\r\n", -EPERM, "request target");
	refused("GET /x?t=%67hp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789 HTTP/1.1\r\nHost: " HOST
		"\r\n\r\n",
		-EPERM, "percent-encoded surrogate in the request target");
	refused("GET /x?t=%2567hp%255FAbCdEfGhIjKlMnOpQrStUvWxYz0123456789 HTTP/1.1\r\nHost: " HOST
		"\r\n\r\n",
		-EPERM, "request target");
	req = str_printf("GET /x?s=%s HTTP/1.1\r\nHost: " HOST "\r\n\r\n", enc);
	refused(req, -EPERM, "base64-encoded surrogate in the request target");
	free(req);
	free(enc);
	refused(S_GH " / HTTP/1.1\r\nHost: " HOST "\r\n\r\n", -EPERM, "request method");
}

static void test_flow_refuses_encoded_surrogate_in_other_headers(void **state)
{
	/* At each alignment in the text, and in the URL-safe alphabet too. */
	static const char *const prefixes[] = {"", "a", "ab", "{\"token\":\""};
	char *req;

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(prefixes); i++) {
		char *plain = str_printf("%s%s\"}", prefixes[i], S_GH), *enc = b64(plain);

		req = str_printf("GET / HTTP/1.1\r\nHost: " HOST "\r\nCookie: s=%s\r\n\r\n", enc);
		refused(req, -EPERM, "base64-encoded surrogate in the header cookie");
		free(req);
		for (char *c = enc; *c; c++)
			*c = *c == '+' ? '-' : *c == '/' ? '_' : *c;
		req = str_printf("GET / HTTP/1.1\r\nHost: " HOST "\r\nX-Session: %s\r\n\r\n", enc);
		refused(req, -EPERM, "header x-session");
		free(req);
		free(plain);
		free(enc);
	}
	refused("GET / HTTP/1.1\r\nHost: " HOST
		"\r\nX-Token: ghp%5FAbCdEfGhIjKlMnOpQrStUvWxYz0123456789\r\n\r\n",
		-EPERM, "percent-encoded surrogate in the header x-token");
	refused("GET / HTTP/1.1\r\nHost: " HOST "\r\n" S_GH ": 1\r\n\r\n", -EPERM,
		"request header name");
	refused("GET / HTTP/1.1\r\nHost: " HOST "\r\nConnection: x-" S_GH "\r\n\r\n", -EPERM,
		"header connection");
}

static void test_flow_refuses_what_the_broker_refuses(void **state)
{
	struct ft *t = ft_new();

	(void)state;
	expect_refused(t, "GET / HTTP/1.1\r\nHost: " HOST "\r\nX-Api-Key: " S_REFUSED "\r\n\r\n",
		       -EPERM, "header x-api-key: credential \"npm\" is not bound");
	/* The flow is over. */
	assert_int_equal(send_req(t, GET_ROOT), -EPERM);
	assert_int_equal(send_resp(t, "HTTP/1.1 200 OK\r\n\r\n"), -EPERM);
	ft_free(t);
}

static void test_flow_swaps_surrogate_of_a_head_split_at_every_byte(void **state)
{
	static const char req[] = "POST /v1 HTTP/1.1\r\nHost: " HOST "\r\n"
				  "Authorization: token " S_GH "\r\nContent-Length: 3\r\n\r\nabc";
	static const char exp[] = "POST /v1 HTTP/1.1\r\nHost: " HOST "\r\n"
				  "Authorization: token " V_GH "\r\nContent-Length: 3\r\n\r\nabc";

	struct ft *t;

	(void)state;
	for (size_t i = 1; i < sizeof(req) - 1; i++) {
		t = ft_new();
		assert_int_equal(feed(t, true, req, i, SIZE_MAX), 0);
		assert_int_equal(feed(t, true, req + i, sizeof(req) - 1 - i, SIZE_MAX), 0);
		expect_up(t, exp);
		ft_free(t);
	}
	/* Byte by byte. */
	t = ft_new();
	assert_int_equal(feed(t, true, req, sizeof(req) - 1, 1), 0);
	expect_up(t, exp);
	ft_free(t);
}

static void test_flow_adds_sidecar_headers_to_every_request_asked_once(void **state)
{
	struct ft *t = ft_new_at(443, "Authorization: " SIDE_VALUE "\r\nX-Org: acme\r\n");
	char *resp;

	(void)state;
	assert_int_equal(send_req(t, "GET /a HTTP/1.1\r\nHost: " HOST "\r\n"
				     "authorization: Bearer forged\r\n"
				     "Connection: Authorization, x-org\r\n"
				     "X-ORG: other\r\n\r\n"
				     "GET /b HTTP/1.1\r\nHost: " HOST "\r\n\r\n"),
			 0);
	expect_up(t, "GET /a HTTP/1.1\r\nHost: " HOST "\r\n"
		     "Authorization: " SIDE_VALUE "\r\nX-Org: acme\r\n\r\n"
		     "GET /b HTTP/1.1\r\nHost: " HOST "\r\n"
		     "Authorization: " SIDE_VALUE "\r\nX-Org: acme\r\n\r\n");
	assert_int_equal(t->fake.sidecar_calls, 1);
	/* Its value is masked in what comes back, keeping the length. */
	resp = str_printf("HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n{\"a\":\"%s\"}",
			  strlen(SIDE_VALUE) + 8, SIDE_VALUE);
	assert_int_equal(send_resp(t, resp), 0);
	memset(strstr(resp, SIDE_VALUE), '*', strlen(SIDE_VALUE));
	expect_down(t, resp);
	free(resp);
	ft_free(t);
}

static void test_flow_refuses_malformed_sidecar(void **state)
{
	struct ft *t = ft_new_at(443, "Content-Length: 5\r\n");

	(void)state;
	expect_refused(t, GET_ROOT, -EINVAL, "Sidecar header 1");
	ft_free(t);
	t = ft_new_at(443, "X-A: " SIDE_VALUE);
	expect_refused(t, GET_ROOT, -EINVAL, "malformed");
	assert_null(strstr(t->err.msg, "sk-sidecar"));
	ft_free(t);
}

/* ---- request bodies ---- */

static void test_flow_passes_pipelined_requests_and_matches_responses_in_order(void **state)
{
	static const char reqs[] = "GET /1 HTTP/1.1\r\nHost: " HOST "\r\n\r\n"
				   "POST /2 HTTP/1.1\r\nHost: " HOST "\r\nContent-Length: 5\r\n\r\n"
				   "hello"
				   "HEAD /3 HTTP/1.1\r\nHost: " HOST "\r\n\r\n"
				   "GET /4 HTTP/1.1\r\nHost: " HOST "\r\n\r\n";
	static const char resps[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nr1"
				    "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n"
				    "2\r\nr2\r\n0\r\n\r\n"
				    "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"
				    "HTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n";
	struct ft *t = ft_new();

	(void)state;
	assert_int_equal(send_req(t, reqs), 0);
	expect_up(t, reqs);
	for (size_t piece = 1; piece <= sizeof(resps) + 7; piece += 7) {
		struct ft *u = ft_new();

		assert_int_equal(send_req(u, reqs), 0);
		assert_int_equal(feed(u, false, resps, sizeof(resps) - 1, piece), 0);
		/* In one piece, the responses pass as they are (the chunks are re-emitted as
		 * they come); in any pieces, all four are answered and a fifth is refused. */
		assert_true(buf_has(&u->down, "HTTP/1.1 204 No Content\r\nContent-Length: 9"));
		if (piece > sizeof(resps) - 1)
			expect_down(u, resps);
		assert_int_equal(send_resp(u, "HTTP/1.1 200 OK\r\n\r\n"), -EPROTO);
		ft_free(u);
	}
	ft_free(t);
}

static void test_flow_drops_bytes_after_a_request_that_closes(void **state)
{
	struct ft *t = ft_new();

	(void)state;
	assert_int_equal(send_req(t, "GET / HTTP/1.1\r\nHost: " HOST "\r\nConnection: close\r\n\r\n"
				     "GET /smuggled HTTP/1.1\r\nHost: " HOST "\r\n\r\n"),
			 0);
	expect_up(t, "GET / HTTP/1.1\r\nHost: " HOST "\r\nConnection: close\r\n\r\n");
	assert_int_equal(send_req(t, "GET /more HTTP/1.1\r\nX: " S_GH "\r\n\r\n"), 0);
	assert_int_equal(netns_buf_len(&t->up), 0);
	ft_free(t);
}

/* A flow whose upstream connection may be kept (keep_upstream): the sandbox's Connection: close
 * ends its own side only. */
static struct ft *ft_new_kept(void)
{
	struct ft *t = ft_new();

	netns_http_flow_free(t->f);
	t->o.keep_upstream = true;
	assert_int_equal(netns_http_flow_new(&t->o, &t->f), 0);
	return t;
}

static void test_flow_keeping_the_upstream_passes_no_close_and_ends_the_sandbox_side(void **state)
{
	struct ft *t = ft_new_kept();

	(void)state;
	assert_true(netns_http_flow_upstream_reusable(t->f)); /* nothing asked yet */
	assert_int_equal(send_req(t, "GET /1 HTTP/1.1\r\nHost: " HOST "\r\n\r\n"), 0);
	expect_up(t, "GET /1 HTTP/1.1\r\nHost: " HOST "\r\n\r\n");
	assert_false(netns_http_flow_upstream_reusable(t->f)); /* its answer is due */
	assert_int_equal(send_resp(t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nr1"), 0);
	expect_down(t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nr1");
	assert_true(netns_http_flow_upstream_reusable(t->f));
	assert_false(netns_http_flow_done(t->f));

	/* close (among other options) is the sandbox's connection's: not passed on, and said in
	 * the answer, after which the flow is done and what the sandbox sends is dropped. */
	assert_int_equal(send_req(t, "GET /2 HTTP/1.1\r\nHost: " HOST
				     "\r\nConnection: close, x-opt\r\nX-Opt: 1\r\n\r\n"
				     "GET /smuggled HTTP/1.1\r\nHost: " HOST "\r\n\r\n"),
			 0);
	expect_up(t, "GET /2 HTTP/1.1\r\nHost: " HOST "\r\nConnection: x-opt\r\nX-Opt: 1\r\n\r\n");
	assert_false(netns_http_flow_done(t->f));
	assert_int_equal(send_resp(t, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
				      "2\r\nr2\r\n0\r\n\r\n"),
			 0);
	expect_down(t, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
		       "2\r\nr2\r\n0\r\n\r\n");
	assert_true(netns_http_flow_done(t->f));
	assert_true(netns_http_flow_upstream_reusable(t->f));
	assert_int_equal(send_req(t, "GET /3 HTTP/1.1\r\nHost: " HOST "\r\n\r\n"), 0);
	assert_int_equal(netns_buf_len(&t->up), 0);
	ft_free(t);

	/* Without keep_upstream, close is passed on, and the upstream's connection is spent. */
	t = ft_new();
	assert_int_equal(
	    send_req(t, "GET / HTTP/1.1\r\nHost: " HOST "\r\nConnection: close\r\n\r\n"), 0);
	expect_up(t, "GET / HTTP/1.1\r\nHost: " HOST "\r\nConnection: close\r\n\r\n");
	assert_int_equal(send_resp(t, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"), 0);
	assert_true(netns_http_flow_done(t->f));
	assert_false(netns_http_flow_upstream_reusable(t->f));
	ft_free(t);
}

static struct ft *ft_new_proxied_at(uint16_t port)
{
	struct ft *t = ft_new_at(port, NULL);

	netns_http_flow_free(t->f);
	t->o.keep_upstream = t->o.origin_switch = true;
	assert_int_equal(netns_http_flow_new(&t->o, &t->f), 0);
	return t;
}

static struct ft *ft_new_proxied(void)
{
	return ft_new_proxied_at(80);
}

#define ORIGIN_1 "GET http://" HOST "/1 HTTP/1.1\r\nHost: " HOST "\r\n\r\n"
#define ORIGIN_2 "GET http://other.test:8080/2 HTTP/1.1\r\nHost: other.test:8080\r\n\r\n"
#define ORIGIN_3 "GET http://" HOST "/3 HTTP/1.1\r\nHost: " HOST "\r\n\r\n"
#define ANSWER_1 "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nr1"

static void expect_other_origin(struct ft *t, const char *head)
{
	const uint8_t *p = NULL;
	size_t n = 0;

	assert_true(netns_http_flow_other_origin(t->f, &p, &n));
	if (n != strlen(head) || memcmp(p, head, n) != 0)
		fail_msg("held (%zu bytes)\n%.*s\nexpected\n%s", n, (int)n, (const char *)p, head);
}

/* On the explicit proxy's connection (origin_switch), a request whose absolute-form target names
 * another origin is held whole, nothing after it is taken, and it is given back once every
 * answer before it is out; the rules for the flow's own origin are unchanged. */
static void test_flow_holds_a_request_for_another_origin(void **state)
{
	static const char all[] = ORIGIN_1 ORIGIN_2 ORIGIN_3;
	const uint8_t *p;
	size_t n, taken = 0;
	struct ft *t = ft_new_proxied();
	ssize_t r;

	(void)state;
	r = netns_http_flow_request(t->f, (const uint8_t *)all, strlen(all), &t->up, &t->err);
	assert_int_equal(r, strlen(ORIGIN_1 ORIGIN_2));
	expect_up(t, "GET /1 HTTP/1.1\r\nHost: " HOST "\r\n\r\n");
	assert_false(netns_http_flow_other_origin(t->f, &p, &n)); /* its answer is due */
	assert_false(netns_http_flow_idle(t->f));
	r = netns_http_flow_request(t->f, (const uint8_t *)all + r, strlen(ORIGIN_3), &t->up,
				    &t->err);
	assert_int_equal(r, 0);
	assert_int_equal(send_resp(t, ANSWER_1), 0);
	expect_down(t, ANSWER_1);
	expect_other_origin(t, ORIGIN_2);
	assert_true(netns_http_flow_upstream_reusable(t->f));
	/* The upstream may end after its answers: the request still goes on. */
	assert_int_equal(netns_http_flow_response_eof(t->f, &t->down, &t->err), 0);
	expect_other_origin(t, ORIGIN_2);
	ft_free(t);

	/* A byte at a time: held at its last byte, nothing after it taken. */
	t = ft_new_proxied();
	for (size_t i = 0; i < strlen(all); i++) {
		r = netns_http_flow_request(t->f, (const uint8_t *)all + i, 1, &t->up, &t->err);
		assert_true(r == 0 || r == 1);
		taken += (size_t)r;
	}
	assert_int_equal(taken, strlen(ORIGIN_1 ORIGIN_2));
	assert_int_equal(send_resp(t, ANSWER_1), 0);
	expect_other_origin(t, ORIGIN_2);
	ft_free(t);

	/* The same origin, however written, stays on the flow; another port is another origin,
	 * and so is an https:// target (the proxy refuses it then). */
	t = ft_new_proxied();
	assert_int_equal(send_req(t, "GET http://API.github.com.:80/a HTTP/1.1\r\nHost: " HOST
				     "\r\n\r\nGET http://api.github.com/b HTTP/1.1\r\nHost: " HOST
				     "\r\n\r\n"),
			 0);
	expect_up(t, "GET /a HTTP/1.1\r\nHost: API.github.com.:80\r\n\r\n"
		     "GET /b HTTP/1.1\r\nHost: api.github.com\r\n\r\n");
	assert_false(netns_http_flow_other_origin(t->f, &p, &n));
	ft_free(t);
	t = ft_new_proxied();
	assert_int_equal(send_req(t, "GET http://" HOST ":81/ HTTP/1.1\r\nHost: x\r\n\r\n"), 0);
	expect_other_origin(t, "GET http://" HOST ":81/ HTTP/1.1\r\nHost: x\r\n\r\n");
	assert_int_equal(netns_buf_len(&t->up), 0);
	ft_free(t);
	t = ft_new_proxied();
	assert_int_equal(send_req(t, "GET https://" HOST "/ HTTP/1.1\r\nHost: " HOST "\r\n\r\n"),
			 0);
	expect_other_origin(t, "GET https://" HOST "/ HTTP/1.1\r\nHost: " HOST "\r\n\r\n");
	ft_free(t);
	/* Without a port, http's own (80), whatever the Host says (the target's wins). */
	t = ft_new_proxied_at(8080);
	assert_int_equal(send_req(t, "GET http://" HOST ":8080/ HTTP/1.1\r\nHost: " HOST
				     "\r\n\r\nGET http://" HOST "/ HTTP/1.1\r\nHost: " HOST
				     "\r\n\r\n"),
			 0);
	expect_up(t, "GET / HTTP/1.1\r\nHost: " HOST ":8080\r\n\r\n");
	assert_int_equal(send_resp(t, ANSWER_1), 0);
	expect_other_origin(t, "GET http://" HOST "/ HTTP/1.1\r\nHost: " HOST "\r\n\r\n");
	ft_free(t);

	/* A Host naming another host than its own target's is refused as before, and so is a
	 * foreign Host with an origin-form target. */
	t = ft_new_proxied();
	expect_refused(t, "GET http://" HOST "/ HTTP/1.1\r\nHost: other.test\r\n\r\n", -EPROTO,
		       "Host header names another host");
	ft_free(t);
	t = ft_new_proxied();
	expect_refused(t, "GET / HTTP/1.1\r\nHost: other.test\r\n\r\n", -EPROTO,
		       "Host header names another host");
	ft_free(t);

	/* An answer that ends the connection: the held request never goes on. */
	t = ft_new_proxied();
	assert_int_equal(send_req(t, ORIGIN_1 ORIGIN_2), 0);
	assert_int_equal(
	    send_resp(t, "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"), 0);
	assert_false(netns_http_flow_other_origin(t->f, &p, &n));
	assert_int_equal(netns_http_flow_response_eof(t->f, &t->down, &t->err), 0);
	assert_false(netns_http_flow_other_origin(t->f, &p, &n));
	ft_free(t);

	/* Without origin_switch (a transparent connection), the target's host is refused. */
	refused(ORIGIN_2, -EPROTO, "Host header names another host");
	refused("GET http://other.test/ HTTP/1.1\r\nHost: " HOST "\r\n\r\n", -EPROTO,
		"request target names another host");
}

/* The bodies a flow leaves unread (the proxy moves them itself): a Content-Length body when
 * nothing is searched in it, told back with _skip(), the flow then where it would be had it read
 * them; nothing of a chunked body, of a request on a flow with surrogates, or of a response whose
 * real values are looked for. */
static void test_flow_leaves_unsearched_bodies_unread(void **state)
{
	static const char *const none[] = {NULL};
	struct ft *t = ft_new_kept();

	(void)state;
	netns_http_flow_free(t->f);
	t->o.surrogates = none;
	assert_int_equal(netns_http_flow_new(&t->o, &t->f), 0);

	/* A request body: its head goes through the flow, its bytes need not. */
	assert_int_equal(netns_http_flow_request_raw(t->f), 0);
	assert_int_equal(
	    send_req(t, "PUT /a HTTP/1.1\r\nHost: " HOST "\r\nContent-Length: 10\r\n\r\n0123"), 0);
	expect_up(t, "PUT /a HTTP/1.1\r\nHost: " HOST "\r\nContent-Length: 10\r\n\r\n0123");
	assert_int_equal(netns_http_flow_request_raw(t->f), 6);
	netns_http_flow_request_skip(t->f, 2);
	assert_int_equal(netns_http_flow_request_raw(t->f), 4);
	netns_http_flow_request_skip(t->f, 4);
	assert_int_equal(netns_http_flow_request_raw(t->f), 0);
	/* ... and the next request is a head again. */
	assert_int_equal(send_req(t, "GET /b HTTP/1.1\r\nHost: " HOST "\r\n\r\n"), 0);
	expect_up(t, "GET /b HTTP/1.1\r\nHost: " HOST "\r\n\r\n");

	/* A response body, the same; then the next answer's head. */
	assert_int_equal(netns_http_flow_response_raw(t->f), 0);
	assert_int_equal(send_resp(t, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"), 0);
	expect_down(t, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n");
	assert_int_equal(netns_http_flow_response_raw(t->f), 5);
	assert_false(netns_http_flow_upstream_reusable(t->f));
	netns_http_flow_response_skip(t->f, 5);
	assert_int_equal(netns_http_flow_response_raw(t->f), 0);
	assert_int_equal(send_resp(t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nb!"), 0);
	expect_down(t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nb!");
	assert_false(netns_http_flow_upstream_reusable(t->f)); /* a request had a body */
	assert_true(netns_http_flow_idle(t->f));

	/* A chunked answer is framed by the flow, byte by byte. */
	assert_int_equal(send_req(t, "GET /c HTTP/1.1\r\nHost: " HOST "\r\n\r\n"), 0);
	drain(&t->up);
	assert_int_equal(send_resp(t, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
				      "3\r\n"),
			 0);
	assert_int_equal(netns_http_flow_response_raw(t->f), 0);
	assert_int_equal(send_resp(t, "abc\r\n0\r\n\r\n"), 0);
	drain(&t->down);

	/* One the close ends: all of it, until the end. */
	assert_int_equal(send_req(t, "GET /d HTTP/1.1\r\nHost: " HOST "\r\n\r\n"), 0);
	drain(&t->up);
	assert_int_equal(send_resp(t, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n"), 0);
	drain(&t->down);
	assert_int_equal(netns_http_flow_response_raw(t->f), UINT64_MAX);
	netns_http_flow_response_skip(t->f, 1000);
	assert_int_equal(netns_http_flow_response_raw(t->f), UINT64_MAX);
	assert_int_equal(netns_http_flow_response_eof(t->f, &t->down, &t->err), 0);
	assert_int_equal(netns_buf_len(&t->down), 0);
	ft_free(t);

	/* With surrogates, a request body is searched: none of it is left unread. */
	t = ft_new();
	assert_int_equal(
	    send_req(t, "POST /e HTTP/1.1\r\nHost: " HOST "\r\nContent-Length: 4\r\n\r\n"), 0);
	assert_int_equal(netns_http_flow_request_raw(t->f), 0);
	ft_free(t);

	/* Nor of an answer once a real value went upstream (it could be echoed). */
	t = ft_new();
	assert_int_equal(send_req(t, "GET /f HTTP/1.1\r\nHost: " HOST
				     "\r\nAuthorization: Bearer " S_GH "\r\n\r\n"),
			 0);
	assert_int_equal(send_resp(t, "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n"), 0);
	assert_int_equal(netns_http_flow_response_raw(t->f), 0);
	ft_free(t);
}

static void test_flow_upstream_not_reusable_when_told_or_free_to_close(void **state)
{
	static const char get[] = "GET / HTTP/1.1\r\nHost: " HOST "\r\n\r\n";
	static const struct {
		const char *req, *resp;
	} spent[] = {
	    /* HTTP/1.0: the request goes upstream as the connection's last */
	    {"GET / HTTP/1.0\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"},
	    {"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
	     "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"},
	    /* the upstream says it closes, or answers in HTTP/1.0, or ends its body by closing */
	    {get, "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"},
	    {get, "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n"},
	    {get, "HTTP/1.1 200 OK\r\n\r\nuntil the end"},
	    /* an answer cut short */
	    {get, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n12345"},
	    {get, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n"},
	    /* a request under way: its head, or its body */
	    {"POST / HTTP/1.1\r\nHost: " HOST "\r\nContent-Length: 9\r\n\r\n1234", NULL},
	    /* a request with a body, answered in full: a server that did not read the body (a
	     * GET's, one it answered early) would take it for the next connection's request */
	    {"GET / HTTP/1.1\r\nHost: " HOST "\r\nContent-Length: 4\r\n\r\nGET ",
	     "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"},
	    {"POST / HTTP/1.1\r\nHost: " HOST "\r\nContent-Length: 2\r\n\r\n{}",
	     "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"},
	    {"PUT / HTTP/1.1\r\nHost: " HOST
	     "\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n",
	     "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n"},
	};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(spent); i++) {
		struct ft *t = ft_new_kept();

		assert_int_equal(send_req(t, spent[i].req), 0);
		if (spent[i].resp)
			assert_int_equal(send_resp(t, spent[i].resp), 0);
		if (netns_http_flow_upstream_reusable(t->f))
			fail_msg("case %zu: the upstream is taken for reusable", i);
		ft_free(t);
	}
}

/* What went to a kept upstream that ended before answering may go again only while no answer
 * has begun and every request is idempotent. */
static void test_flow_replayable_only_before_an_answer_and_for_idempotent_requests(void **state)
{
	static const char *const again[] = {
	    "GET /a HTTP/1.1\r\nHost: " HOST "\r\n\r\nHEAD /b HTTP/1.1\r\nHost: " HOST "\r\n\r\n",
	    "OPTIONS * HTTP/1.1\r\nHost: " HOST "\r\n\r\n",
	    "PUT /f HTTP/1.1\r\nHost: " HOST "\r\nContent-Length: 4\r\n\r\nda",
	    "DELETE /f HTTP/1.1\r\nHost: " HOST "\r\n\r\n",
	    "GET /c HTTP/1.0\r\n\r\n",
	};
	static const char *const once[] = {
	    "POST / HTTP/1.1\r\nHost: " HOST "\r\nContent-Length: 0\r\n\r\n",
	    "GET /a HTTP/1.1\r\nHost: " HOST "\r\n\r\nPATCH /b HTTP/1.1\r\nHost: " HOST
	    "\r\nContent-Length: 0\r\n\r\n",
	    "get / HTTP/1.1\r\nHost: " HOST "\r\n\r\n", /* methods are case-sensitive */
	    "GET /ws HTTP/1.1\r\nHost: " HOST "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
	    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
	};
	struct ft *t;

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(again); i++) {
		t = ft_new_kept();
		assert_true(netns_http_flow_replayable(t->f)); /* nothing sent */
		assert_int_equal(send_req(t, again[i]), 0);
		if (!netns_http_flow_replayable(t->f))
			fail_msg("case %zu: not sent again", i);
		ft_free(t);
	}
	for (size_t i = 0; i < ELEMENTSOF(once); i++) {
		t = ft_new_kept();
		(void)send_req(t, once[i]);
		if (netns_http_flow_replayable(t->f))
			fail_msg("case %zu: sent again", i);
		ft_free(t);
	}

	/* Once an answer has begun, nothing goes again, even after it ends. */
	t = ft_new_kept();
	assert_int_equal(send_req(t, "GET /1 HTTP/1.1\r\nHost: " HOST "\r\n\r\n"), 0);
	assert_int_equal(send_resp(t, "HTTP/1.1 200 OK\r\n"), 0);
	assert_false(netns_http_flow_replayable(t->f));
	assert_int_equal(send_resp(t, "Content-Length: 0\r\n\r\n"), 0);
	assert_int_equal(send_req(t, "GET /2 HTTP/1.1\r\nHost: " HOST "\r\n\r\n"), 0);
	assert_false(netns_http_flow_replayable(t->f));
	ft_free(t);
}

static void test_flow_passes_expect_100_continue(void **state)
{
	struct ft *t = ft_new();

	(void)state;
	assert_int_equal(send_req(t, "PUT /f HTTP/1.1\r\nHost: " HOST "\r\nExpect: 100-continue\r\n"
				     "Content-Length: 4\r\n\r\n"),
			 0);
	expect_up(t, "PUT /f HTTP/1.1\r\nHost: " HOST "\r\nExpect: 100-continue\r\n"
		     "Content-Length: 4\r\n\r\n");
	assert_int_equal(send_resp(t, "HTTP/1.1 100 Continue\r\n\r\n"), 0);
	expect_down(t, "HTTP/1.1 100 Continue\r\n\r\n");
	assert_int_equal(send_req(t, "data"), 0);
	expect_up(t, "data");
	assert_int_equal(send_resp(t, "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n"), 0);
	expect_down(t, "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n");
	ft_free(t);
}

static void test_flow_refuses_surrogate_in_body_split_at_every_byte(void **state)
{
	static const char body[] = "{\"note\":\"" S_GH "\"}";
	char *head = str_printf("POST / HTTP/1.1\r\nHost: " HOST "\r\nContent-Length: %zu\r\n\r\n",
				sizeof(body) - 1);

	(void)state;
	for (size_t i = 0; i <= sizeof(body) - 1; i++) {
		struct ft *t = ft_new();
		int r;

		assert_int_equal(send_req(t, head), 0);
		netns_buf_consume(&t->up, strlen(head));
		r = feed(t, true, body, i, SIZE_MAX);
		if (r == 0)
			r = feed(t, true, body + i, sizeof(body) - 1 - i, SIZE_MAX);
		assert_int_equal(r, -EPERM);
		assert_non_null(strstr(t->err.msg, "request body"));
		/* Of the surrogate, no more than a prefix has been passed on. */
		assert_false(buf_has(&t->up, S_GH));
		assert_false(buf_has(&t->up, "ghp_"));
		ft_free(t);
	}
	free(head);
}

static void test_flow_holds_back_only_what_could_begin_a_surrogate(void **state)
{
	struct ft *t = ft_new();

	(void)state;
	assert_int_equal(send_req(t, "POST / HTTP/1.1\r\nHost: " HOST "\r\n"
				     "Content-Length: 40\r\n\r\n"),
			 0);
	drain(&t->up);
	assert_int_equal(send_req(t, "0123456789"), 0);
	expect_up(t, "0123456789");
	assert_int_equal(send_req(t, "abcghp_AbC"), 0);
	expect_up(t, "abc");
	assert_int_equal(send_req(t, "dXairlock_s"), 0);
	expect_up(t, "ghp_AbCdX");
	/* The body ends: whatever was held goes. */
	assert_int_equal(send_req(t, "ur_012345"), 0);
	expect_up(t, "airlock_sur_012345");
	ft_free(t);
}

static void test_flow_refuses_surrogate_across_a_body_and_the_next_request_line(void **state)
{
	(void)state;
	refused("POST / HTTP/1.1\r\nHost: " HOST "\r\nContent-Length: 10\r\n\r\n"
		"xxxxghp_Ab"
		"CdEfGhIjKlMnOpQrStUvWxYz0123456789 / HTTP/1.1\r\nHost: " HOST "\r\n\r\n",
		-EPERM, "request body");
}

static void test_flow_rechunks_chunked_request_without_extensions(void **state)
{
	struct ft *t = ft_new();

	(void)state;
	assert_int_equal(send_req(t, "POST /p HTTP/1.1\r\nHost: " HOST "\r\n"
				     "Transfer-Encoding: gzip, chunked\r\n\r\n"
				     "5;name=\"v\"\r\nhello\r\n"
				     "A\r\n, world!!!\r\n"
				     "0\r\n\r\n"
				     "GET / HTTP/1.1\r\nHost: " HOST "\r\n\r\n"),
			 0);
	expect_up(t, "POST /p HTTP/1.1\r\nHost: " HOST "\r\n"
		     "Transfer-Encoding: gzip, chunked\r\n\r\n"
		     "5\r\nhello\r\n"
		     "a\r\n, world!!!\r\n"
		     "0\r\n\r\n"
		     "GET / HTTP/1.1\r\nHost: " HOST "\r\n\r\n");
	ft_free(t);
}

static void test_flow_passes_framing_fields_in_one_form(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
	    {"Content-Length: 5, 5\r\n", "Content-Length: 5\r\n"},
	    {"Content-Length: 5\r\nX-A: a\r\nContent-Length: 5,5\r\n",
	     "Content-Length: 5\r\nX-A: a\r\n"},
	    {"Transfer-Encoding: identity, chunked\r\n", "Transfer-Encoding: chunked\r\n"},
	    {"Transfer-Encoding: Identity , GZIP,Chunked\r\n",
	     "Transfer-Encoding: gzip, chunked\r\n"},
	};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		bool chunked = strstr(cases[i].in, "chunked") || strstr(cases[i].in, "Chunked");
		const char *body = chunked ? "5\r\nhello\r\n0\r\n\r\n" : "hello";
		char *req =
		    str_printf("POST /p HTTP/1.1\r\nHost: " HOST "\r\n%s\r\n%s", cases[i].in, body);
		char *want = str_printf("POST /p HTTP/1.1\r\nHost: " HOST "\r\n%s\r\n%s",
					cases[i].out, body);
		struct ft *t = ft_new();

		assert_int_equal(send_req(t, req), 0);
		expect_up(t, want);
		ft_free(t);
		free(req);
		free(want);
	}
	/* A surrogate there (a token, as a coding's name is) is refused, not swapped. */
	refused("POST /p HTTP/1.1\r\nHost: " HOST "\r\nTransfer-Encoding: " S_NUM
		", chunked\r\n\r\n",
		-EPERM, "header transfer-encoding");
}

static void test_flow_refuses_surrogate_across_chunks_in_extensions_or_trailers(void **state)
{
	(void)state;
	refused("POST / HTTP/1.1\r\nHost: " HOST "\r\nTransfer-Encoding: chunked\r\n\r\n"
		"6\r\nxx ghp\r\n"
		"25\r\n_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789\r\n0\r\n\r\n",
		-EPERM, "request body");
	refused("POST / HTTP/1.1\r\nHost: " HOST "\r\nTransfer-Encoding: chunked\r\n\r\n"
		"1;t=" S_GH "\r\nx\r\n0\r\n\r\n",
		-EPERM, "request chunk extension");
	refused("POST / HTTP/1.1\r\nHost: " HOST "\r\nTransfer-Encoding: chunked\r\n\r\n"
		"1\r\nx\r\n0\r\nX-Trailer: 1\r\n\r\n",
		-EBADMSG, "trailers");
	refused("POST / HTTP/1.1\r\nHost: " HOST "\r\nTransfer-Encoding: chunked\r\n\r\n"
		"1\r\nxy\r\n0\r\n\r\n",
		-EBADMSG, "not followed by CRLF");
}

static void test_flow_refuses_smuggling_attempts(void **state)
{
	(void)state;
	refused("POST / HTTP/1.1\r\nHost: " HOST "\r\nContent-Length: 4\r\n"
		"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		-EBADMSG, "Both");
	refused("GET / HTTP/1.1\r\nHost: " HOST "\r\nX: a\r\n b\r\n\r\n", -EBADMSG, "obs-fold");
	refused("GET / HTTP/1.1\nHost: " HOST "\n\n", -EBADMSG, "Bare LF");
	refused("GET / HTTP/1.1\r\nHost: " HOST "\r\nHost: " HOST "\r\n\r\n", -EBADMSG, "Host");
}

static void test_flow_refuses_too_many_unanswered_requests(void **state)
{
	struct ft *t = ft_new();
	int r = 0;

	(void)state;
	for (unsigned i = 0; i < 100 && r == 0; i++) {
		r = send_req(t, GET_ROOT);
		drain(&t->up);
	}
	assert_int_equal(r, -EBADMSG);
	assert_non_null(strstr(t->err.msg, "wait for their responses"));
	ft_free(t);
}

/* ---- responses ---- */

static void test_flow_refuses_101_and_responses_nothing_asked_for(void **state)
{
	struct ft *t = ft_new();

	(void)state;
	assert_int_equal(send_resp(t, "HTTP/1.1 200 OK\r\n\r\n"), -EPROTO);
	ft_free(t);
	t = ft_new();
	assert_int_equal(send_req(t, GET_ROOT), 0);
	assert_int_equal(send_resp(t, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n"),
			 -EPROTO);
	assert_int_equal(netns_buf_len(&t->down), 0);
	ft_free(t);
}

static void test_flow_responses_to_head_and_204_304_have_no_body(void **state)
{
	struct ft *t = ft_new();

	(void)state;
	assert_int_equal(send_req(t, "HEAD / HTTP/1.1\r\nHost: " HOST "\r\n\r\n" GET_ROOT GET_ROOT),
			 0);
	assert_int_equal(send_resp(t,
				   "HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n"
				   "HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n"
				   "HTTP/1.1 204 No Content\r\n\r\n"),
			 0);
	expect_down(t, "HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n"
		       "HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n"
		       "HTTP/1.1 204 No Content\r\n\r\n");
	ft_free(t);
}

/* A flow with S_GH (or S_SAME) resolved by a request, its response fed in pieces. */
static struct ft *flow_with_value(const char *surrogate, int minor)
{
	struct ft *t = ft_new();
	char *req =
	    str_printf("GET / HTTP/1.%d\r\nHost: " HOST "\r\nX-T: %s\r\n\r\n", minor, surrogate);

	assert_int_equal(send_req(t, req), 0);
	drain(&t->up);
	free(req);
	return t;
}

static void test_flow_turns_same_length_values_back_keeping_content_length(void **state)
{
	struct ft *t = flow_with_value(S_SAME, 1);

	(void)state;
	assert_int_equal(send_resp(t, "HTTP/1.1 200 OK\r\nX-Echo: " V_SAME "\r\n"
				      "Content-Length: 50\r\n\r\n"
				      "<<<" V_SAME ">>>"),
			 0);
	expect_down(t, "HTTP/1.1 200 OK\r\nX-Echo: " S_SAME "\r\n"
		       "Content-Length: 50\r\n\r\n"
		       "<<<" S_SAME ">>>");
	ft_free(t);
}

static void test_flow_turns_base64_echo_of_basic_credentials_back(void **state)
{
	char *in = b64("x-access-token:" S_GH), *real = b64("x-access-token:" V_GH);
	char *req = str_printf("GET /echo HTTP/1.1\r\nHost: " HOST "\r\n"
			       "Authorization: Basic %s\r\n\r\n",
			       in);
	char *resp =
	    str_printf("HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n{\"auth\":\"Basic %s\"}",
		       strlen(real) + 17, real);
	/* The value alone, as an API that encodes what it got would show it. */
	char *alone = b64(V_GH);
	char *resp2 =
	    str_printf("HTTP/1.1 200 OK\r\nX-Got: %s\r\nContent-Length: 0\r\n\r\n", alone);
	struct ft *t = ft_new();

	(void)state;
	assert_int_equal(send_req(t, req), 0);
	assert_true(buf_has(&t->up, real));
	drain(&t->up);
	assert_int_equal(send_resp(t, resp), 0);
	assert_false(buf_has(&t->down, real));
	assert_false(buf_has(&t->down, V_GH));
	/* What the sandbox sees decodes to its own user and (the middle of) the surrogate. */
	assert_true(buf_has(&t->down, "Basic eC1hY2Nlc3MtdG9rZW46"));
	drain(&t->down);
	assert_int_equal(send_req(t, "GET /again HTTP/1.1\r\nHost: " HOST "\r\n\r\n"), 0);
	drain(&t->up);
	assert_int_equal(send_resp(t, resp2), 0);
	assert_false(buf_has(&t->down, alone));
	ft_free(t);
	free(in);
	free(real);
	free(req);
	free(resp);
	free(alone);
	free(resp2);
}

/* The body of the response in t->down (its head dropped), de-chunked when chunked; consumed. */
static char *down_body(struct ft *t)
{
	const char *p, *head_end;
	char *body;
	size_t n = 0;

	assert_int_equal(netns_buf_append(&t->down, "", 1, SIZE_MAX), 0);
	p = buf_text(&t->down);
	head_end = strstr(p, "\r\n\r\n");
	assert_non_null(head_end);
	body = calloc(1, netns_buf_len(&t->down));
	assert_non_null(body);
	if (!memmem(p, (size_t)(head_end - p), "Transfer-Encoding: chunked", 26)) {
		strcpy(body, head_end + 4);
		drain(&t->down);
		return body;
	}
	p = head_end + 4;
	for (;;) {
		size_t size = strtoul(p, NULL, 16);

		p = strstr(p, "\r\n") + 2;
		if (size == 0)
			break;
		memcpy(body + n, p, size);
		n += size;
		p += size + 2;
	}
	drain(&t->down);
	return body;
}

/* base64 in the URL alphabet, unpadded. */
static char *b64url(const char *s)
{
	char *e = b64(s);

	for (char *c = e; *c; c++)
		*c = *c == '+' ? '-' : *c == '/' ? '_' : *c;
	if (strchr(e, '='))
		*strchr(e, '=') = '\0';
	return e;
}

/* What a URL-alphabet run ru (unpadded) of real bytes turns into, sur encoded: unpadded, unless
 * ru could as well be a standard run of whole groups (no '-' or '_', a multiple of four), which
 * a standard encoder would have padded. */
static char *want_url(const char *ru, const char *sur)
{
	char *su = b64url(sur), *ss;

	if (strpbrk(ru, "-_") || strlen(ru) % 4 != 0)
		return su;
	ss = b64(sur);
	for (char *c = ss; *c; c++)
		*c = *c == '+' ? '-' : *c == '/' ? '_' : *c;
	free(su);
	return ss;
}

/* A base64 echo of credentials holding a real value (Basic's user:value, or the value alone, in
 * either alphabet) decodes to the same credentials with the surrogate, whole: the run is encoded
 * again, not only the characters that the value's bits alone decide. For values of 28, 44 and 30
 * bytes (1, 2 and 0 past a multiple of three) behind surrogates of 40, 44 and 44, after 0, 1 and
 * 2 bytes, with and without bytes after them; and split at every byte. */
static void test_flow_encodes_a_base64_run_again_whole_around_a_value(void **state)
{
	static const char *const pairs[][2] = {{S_GH, V_GH}, {S_SAME, V_SAME}, {S_LEN30, V_LEN30}};
	static const char *const before[] = {"", "u", "u:"};
	static const char *const after[] = {"", ":x", "!!"};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(pairs); i++)
		for (size_t j = 0; j < ELEMENTSOF(before); j++)
			for (size_t k = 0; k < ELEMENTSOF(after); k++) {
				char *real = str_printf("%s%s%s", before[j], pairs[i][1], after[k]);
				char *sur = str_printf("%s%s%s", before[j], pairs[i][0], after[k]);
				char *rs = b64(real), *ss = b64(sur), *ru = b64url(real),
				     *su = want_url(ru, sur);
				char *resp = str_printf("HTTP/1.1 200 OK\r\nX-Echo: Basic %s\r\n"
							"Content-Length: %zu\r\n\r\n"
							"{\"a\":\"%s\",\"b\":\"%s\"}",
							rs, strlen(rs) + strlen(ru) + 15, rs, ru);
				char *want_head = str_printf("X-Echo: Basic %s\r\n", ss);
				char *want_body = str_printf("{\"a\":\"%s\",\"b\":\"%s\"}", ss, su);
				size_t splits = i == 0 && j == 2 && k == 0 ? strlen(resp) : 1;

				for (size_t cut = 0; cut < splits; cut++) {
					struct ft *t = flow_with_value(pairs[i][0], 1);
					char *body;

					assert_int_equal(feed(t, false, resp, cut, SIZE_MAX), 0);
					assert_int_equal(feed(t, false, resp + cut,
							      strlen(resp) - cut, SIZE_MAX),
							 0);
					if (!buf_has(&t->down, want_head))
						fail_msg("value %zu, before %zu, after %zu, cut "
							 "%zu: no %s in\n%s",
							 i, j, k, cut, want_head,
							 buf_text(&t->down));
					body = down_body(t);
					if (strcmp(body, want_body) != 0)
						fail_msg("value %zu, before %zu, after %zu, cut "
							 "%zu: body %s, expected %s",
							 i, j, k, cut, body, want_body);
					free(body);
					ft_free(t);
				}
				free(real);
				free(sur);
				free(rs);
				free(ss);
				free(ru);
				free(su);
				free(resp);
				free(want_head);
				free(want_body);
			}
}

/* A flow whose ops also give the values bound to the host. */
static struct ft *ft_new_bound(void)
{
	struct ft *t = ft_new();

	t->ops.bound_value = fake_bound_value;
	return t;
}

/* A bound host may show a value sent on another connection: every response is searched for the
 * values bound to it from the first byte, though nothing was swapped on this flow; they are
 * asked for once, and never swapped into a request (that still takes a resolve). */
static void test_flow_turns_back_values_bound_to_the_host_without_a_swap(void **state)
{
	struct ft *t = ft_new_bound();
	char *real = b64("u:" V_GH), *sur = b64("u:" S_GH);
	char *resp = str_printf("HTTP/1.1 200 OK\r\nX-Last: Bearer " V_GH "\r\n"
				"Content-Length: %zu\r\n\r\n%s " V_SAME,
				strlen(real) + 1 + strlen(V_SAME), real);
	char *want = str_printf("HTTP/1.1 200 OK\r\nX-Last: Bearer " S_GH "\r\n"
				"Transfer-Encoding: chunked\r\n\r\n"
				"%zx\r\n%s " S_SAME "\r\n0\r\n\r\n",
				strlen(sur) + 1 + strlen(S_SAME), sur);

	(void)state;
	assert_int_equal(send_req(t, GET_ROOT), 0);
	expect_up(t, GET_ROOT);
	assert_int_equal(t->fake.bound_calls, 0);
	assert_int_equal(send_resp(t, resp), 0);
	expect_down(t, want);
	assert_int_equal(t->fake.resolve_calls, 0);
	assert_int_equal(t->fake.bound_calls, ELEMENTSOF(surrogates) - 1);
	/* Asked once; a swap still resolves. */
	assert_int_equal(send_req(t, "GET / HTTP/1.1\r\nHost: " HOST "\r\nX-T: " S_GH "\r\n\r\n"),
			 0);
	expect_up(t, "GET / HTTP/1.1\r\nHost: " HOST "\r\nX-T: " V_GH "\r\n\r\n");
	assert_int_equal(t->fake.resolve_calls, 1);
	assert_int_equal(send_resp(t, "HTTP/1.1 200 OK\r\nX-Last: " V_GH "\r\n"
				      "Content-Length: 0\r\n\r\n"),
			 0);
	expect_down(t, "HTTP/1.1 200 OK\r\nX-Last: " S_GH "\r\n"
		       "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n");
	assert_int_equal(t->fake.bound_calls, ELEMENTSOF(surrogates) - 1);
	ft_free(t);
	free(real);
	free(sur);
	free(resp);
	free(want);
}

/* On a bound host, a compressed response (Content-Encoding) is refused from the first one, since
 * every request asked for identity; a body that only begins like a compressed stream (a file) is
 * refused only once a value went upstream on the flow. When the bound values cannot be had, no
 * response passes. */
static void test_flow_on_a_bound_host_refuses_compressed_responses_before_any_swap(void **state)
{
	struct ft *t = ft_new_bound();

	(void)state;
	assert_int_equal(send_req(t, GET_ROOT), 0);
	assert_int_equal(send_resp(t, "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n"
				      "Content-Length: 0\r\n\r\n"),
			 -EIO);
	assert_non_null(strstr(t->err.msg, "compressed"));
	assert_int_equal(netns_buf_len(&t->down), 0);
	ft_free(t);

	t = ft_new_bound();
	assert_int_equal(send_req(t, GET_ROOT), 0);
	assert_int_equal(send_resp(t, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n"
				      "\x1f\x8b\x08\x00"),
			 0);
	assert_true(buf_has(&t->down, "\x1f\x8b\x08\x00"));
	ft_free(t);

	t = ft_new_bound();
	t->fake.bound_error = -ECONNRESET;
	assert_int_equal(send_req(t, GET_ROOT), 0);
	assert_int_equal(send_resp(t, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"), -ENOKEY);
	assert_non_null(strstr(t->err.msg, "the broker is gone"));
	assert_int_equal(netns_buf_len(&t->down), 0);
	ft_free(t);
}

static void test_flow_asks_for_identity_and_refuses_compressed_echo(void **state)
{
	struct ft *t = ft_new();

	(void)state;
	assert_int_equal(send_req(t, "GET / HTTP/1.1\r\nHost: " HOST "\r\n"
				     "Accept-Encoding: gzip, br\r\nX-T: " S_GH "\r\n\r\n"),
			 0);
	expect_up(t, "GET / HTTP/1.1\r\nHost: " HOST "\r\nAccept-Encoding: identity\r\n"
		     "X-T: " V_GH "\r\n\r\n");
	assert_int_equal(send_resp(t, "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n"
				      "Content-Length: 3\r\n\r\nabc"),
			 -EIO);
	assert_non_null(strstr(t->err.msg, "compressed"));
	assert_int_equal(netns_buf_len(&t->down), 0);
	ft_free(t);

	/* Before any value was sent, a compressed response passes. */
	t = ft_new();
	assert_int_equal(send_req(t, "GET / HTTP/1.1\r\nHost: " HOST "\r\n\r\n"), 0);
	drain(&t->up);
	assert_int_equal(send_resp(t, "HTTP/1.1 200 OK\r\nContent-Encoding: identity \r\n"
				      "Content-Length: 0\r\n\r\n"),
			 0);
	assert_int_equal(send_req(t, "GET / HTTP/1.1\r\nHost: " HOST "\r\n\r\n"), 0);
	assert_int_equal(send_resp(t, "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n"
				      "Content-Length: 0\r\n\r\n"),
			 0);
	ft_free(t);
}

static void test_flow_reframes_content_length_as_chunked_when_lengths_differ(void **state)
{
	struct ft *t = flow_with_value(S_GH, 1);

	(void)state;
	assert_int_equal(send_resp(t, "HTTP/1.1 200 OK\r\nContent-Length: 34\r\n"
				      "Connection: keep-alive\r\n\r\n"
				      "<<<" V_GH ">>>"),
			 0);
	expect_down(t, "HTTP/1.1 200 OK\r\nConnection: keep-alive\r\n"
		       "Transfer-Encoding: chunked\r\n\r\n"
		       "2e\r\n<<<" S_GH ">>>\r\n"
		       "0\r\n\r\n");
	/* The connection goes on. */
	assert_int_equal(send_req(t, GET_ROOT), 0);
	assert_int_equal(send_resp(t, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"), 0);
	expect_down(t, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n");
	ft_free(t);
}

static void test_flow_reframes_as_close_delimited_for_http_1_0(void **state)
{
	struct ft *t = flow_with_value(S_GH, 0);

	(void)state;
	assert_int_equal(send_resp(t, "HTTP/1.0 200 OK\r\nContent-Length: 34\r\n"
				      "Connection: keep-alive\r\nKeep-Alive: timeout=5\r\n\r\n"
				      "<<<" V_GH ">>>"
				      "trailing garbage"),
			 0);
	expect_down(t, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n"
		       "<<<" S_GH ">>>");
	assert_int_equal(netns_http_flow_response_eof(t->f, &t->down, &t->err), 0);
	ft_free(t);
}

static void test_flow_dechunks_response_for_http_1_0_client(void **state)
{
	struct ft *t = ft_new();

	(void)state;
	assert_int_equal(send_req(t, "GET / HTTP/1.0\r\n\r\n"), 0);
	assert_int_equal(send_resp(t, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
				      "3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nX-T: 1\r\n\r\n"),
			 0);
	expect_down(t, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nabcde");
	ft_free(t);
}

static void test_flow_replaces_value_split_at_every_byte_of_a_response(void **state)
{
	static const char resp[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
				   "f\r\n{\"token\":\"githu\r\n"
				   "19\r\nb-real-token-value-0001\"}\r\n"
				   "0\r\nX-Echo: " V_GH "\r\n\r\n";

	(void)state;
	for (size_t i = 1; i < sizeof(resp) - 1; i++) {
		struct ft *t = flow_with_value(S_GH, 1);
		char body[256];
		const char *p;
		size_t n = 0;

		assert_int_equal(feed(t, false, resp, i, SIZE_MAX), 0);
		assert_int_equal(feed(t, false, resp + i, sizeof(resp) - 1 - i, SIZE_MAX), 0);
		assert_false(buf_has(&t->down, V_GH));
		assert_false(buf_has(&t->down, "github-"));
		assert_int_equal(netns_buf_append(&t->down, "", 1, SIZE_MAX), 0);
		/* Whatever the chunks, the body reads the same. */
		p = strstr((const char *)netns_buf_head(&t->down), "\r\n\r\n") + 4;
		for (;;) {
			size_t size = strtoul(p, NULL, 16);

			p = strstr(p, "\r\n") + 2;
			if (size == 0)
				break;
			memcpy(body + n, p, size);
			n += size;
			p += size + 2;
		}
		body[n] = '\0';
		assert_string_equal(body, "{\"token\":\"" S_GH "\"}");
		assert_string_equal(p, "X-Echo: " S_GH "\r\n\r\n");
		ft_free(t);
	}
}

static void test_flow_ends_close_delimited_response_at_eof(void **state)
{
	struct ft *t = flow_with_value(S_SAME, 1);

	(void)state;
	assert_int_equal(send_resp(t, "HTTP/1.1 200 OK\r\n\r\nabc " V_SAME " ends same-len"), 0);
	expect_down(t, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nabc " S_SAME " ends ");
	assert_int_equal(netns_http_flow_response_eof(t->f, &t->down, &t->err), 0);
	expect_down(t, "same-len");
	ft_free(t);

	t = ft_new();
	assert_int_equal(send_req(t, GET_ROOT), 0);
	assert_int_equal(send_resp(t, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"), 0);
	assert_int_equal(netns_http_flow_response_eof(t->f, &t->down, &t->err), -EPIPE);
	ft_free(t);

	/* Between responses, the upstream may close. */
	t = ft_new();
	assert_int_equal(send_req(t, GET_ROOT), 0);
	assert_int_equal(netns_http_flow_response_eof(t->f, &t->down, &t->err), 0);
	ft_free(t);
}

static void resp_refused(const char *resp, int code, const char *what)
{
	struct ft *t = ft_new();
	int r;

	assert_int_equal(send_req(t, GET_ROOT), 0);
	r = send_resp(t, resp);
	if (r != code)
		fail_msg("expected %d, got %d (%s)", code, r, t->err.msg);
	if (!strstr(t->err.msg, what))
		fail_msg("message \"%s\" does not say \"%s\"", t->err.msg, what);
	assert_int_equal(netns_buf_len(&t->down), 0);
	ft_free(t);
}

static void test_flow_refuses_ambiguous_or_malformed_responses(void **state)
{
	(void)state;
	resp_refused("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
		     -EBADMSG, "Both");
	resp_refused("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", -EBADMSG,
		     "differ");
	resp_refused("HTTP/1.1 200 OK\r\nContent-Length: 3x\r\n\r\n", -EBADMSG, "decimal");
	resp_refused("HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\r\n", -EBADMSG, "not a name");
	resp_refused("HTTP/1.1 200 OK\r\nX : a\r\n\r\n", -EBADMSG, "not a name");
	resp_refused("HTTP/1.1 200 OK\nX: a\n\n", -EBADMSG, "Bare LF");
	resp_refused("HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n", -EBADMSG, "Bare CR");
	resp_refused("HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", -EBADMSG, "1.0");
	resp_refused("HTTP/2 200 OK\r\n\r\n", -EBADMSG, "status line");
	resp_refused("HTTP/1.1 20 OK\r\n\r\n", -EBADMSG, "status line");
	resp_refused("HTTP/1.1 200 OK\r\nX: \x01\r\n\r\n", -EBADMSG, "Control character");
}

static void test_flow_refuses_malformed_chunks_in_a_response(void **state)
{
	static const char head[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
	static const char *const bodies[] = {"zz\r\n", "2\r\nabc\r\n",
					     "1\r\na\r\n0\r\nX: a\nb\r\n\r\n", "1 x\r\n"};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(bodies); i++) {
		struct ft *t = ft_new();

		assert_int_equal(send_req(t, GET_ROOT), 0);
		assert_int_equal(send_resp(t, head), 0);
		expect_down(t, head);
		assert_int_equal(send_resp(t, bodies[i]), -EBADMSG);
		assert_false(buf_has(&t->down, "\r\n0\r\n"));
		ft_free(t);
	}
}

static void test_flow_refuses_response_head_over_the_cap(void **state)
{
	struct ft *t = ft_new();
	size_t n = NETNS_HTTP_HEAD_MAX + 100;
	char *big = malloc(n);

	(void)state;
	assert_non_null(big);
	memcpy(big, "HTTP/1.1 200 OK\r\nX: ", 20);
	memset(big + 20, 'a', n - 20);
	assert_int_equal(send_req(t, GET_ROOT), 0);
	assert_int_equal(feed(t, false, big, n, 1000), -EMSGSIZE);
	assert_int_equal(netns_buf_len(&t->down), 0);
	free(big);
	ft_free(t);
}

static void test_flow_consumes_less_while_out_is_full(void **state)
{
	size_t body_len = 3 * NETNS_HTTP_FLOW_OUT_MAX, done = 0, total = 0;
	uint8_t *body = malloc(body_len);
	char *head = str_printf("POST / HTTP/1.1\r\nHost: " HOST "\r\nContent-Length: %zu\r\n\r\n",
				body_len);
	struct ft *t = ft_new();
	ssize_t r;

	(void)state;
	assert_non_null(body);
	for (size_t i = 0; i < body_len; i++)
		body[i] = (uint8_t)('a' + i % 26);
	assert_int_equal(send_req(t, head), 0);
	total = netns_buf_len(&t->up);
	netns_buf_consume(&t->up, total);
	r = netns_http_flow_request(t->f, body, body_len, &t->up, &t->err);
	assert_true(r > 0 && (size_t)r < body_len);
	assert_true(netns_buf_len(&t->up) > NETNS_HTTP_FLOW_OUT_MAX);
	assert_true(netns_buf_len(&t->up) <= NETNS_HTTP_FLOW_OUT_MAX + 64 * 1024 + 64);
	/* Nothing more is taken until out drains. */
	assert_int_equal(
	    netns_http_flow_request(t->f, body + r, body_len - (size_t)r, &t->up, &t->err), 0);
	done = (size_t)r;
	total = 0;
	while (netns_buf_len(&t->up) > 0 || done < body_len) {
		size_t n = netns_buf_len(&t->up);

		if (n > 0) {
			assert_memory_equal(netns_buf_head(&t->up), body + total, n);
			netns_buf_consume(&t->up, n);
		}
		total += n;
		r = netns_http_flow_request(t->f, body + done, body_len - done, &t->up, &t->err);
		assert_true(r >= 0);
		done += (size_t)r;
	}
	assert_int_equal(total, body_len);
	free(body);
	free(head);
	ft_free(t);
}

static void test_flow_error_response_only_between_responses(void **state)
{
	static const char msg[] = "The Host header names another host than api.github.com:443";
	struct ft *t = ft_new();
	char *exp;

	(void)state;
	expect_refused(t, "GET / HTTP/1.1\r\nHost: evil.example\r\n\r\n", -EPROTO, "Host");
	assert_string_equal(t->err.msg, msg);
	assert_true(netns_http_flow_error_response(t->f, 403, t->err.msg, &t->down));
	exp = str_printf("HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\n"
			 "Content-Length: %zu\r\nConnection: close\r\n\r\n"
			 "airlock: %s\n",
			 strlen("airlock: \n") + strlen(msg), msg);
	expect_down(t, exp);
	free(exp);
	/* Once only. */
	assert_false(netns_http_flow_error_response(t->f, 403, "again", &t->down));
	assert_int_equal(netns_buf_len(&t->down), 0);
	ft_free(t);

	/* Within a response, nothing can be said. */
	t = ft_new();
	assert_int_equal(send_req(t, GET_ROOT), 0);
	assert_int_equal(send_resp(t, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"), 0);
	drain(&t->down);
	assert_false(netns_http_flow_error_response(t->f, 502, "upstream", &t->down));
	assert_int_equal(netns_buf_len(&t->down), 0);
	ft_free(t);
}

static void test_flow_passes_response_trailers_with_values_replaced(void **state)
{
	struct ft *t = flow_with_value(S_SAME, 1);

	(void)state;
	assert_int_equal(send_resp(t, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
				      "Trailer: X-Sig\r\n\r\n"
				      "4;ext=1\r\nbody\r\n0\r\nX-Sig: " V_SAME "\r\n\r\n"),
			 0);
	expect_down(t, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sig\r\n\r\n"
		       "4\r\nbody\r\n0\r\nX-Sig: " S_SAME "\r\n\r\n");
	ft_free(t);
}

/* ---- encoded echoes of real values ---- */

enum hex_case {
	HEX_LOWER,
	HEX_UPPER,
	HEX_MIXED, /* upper and lower in turn, escape by escape */
};

static void put_hex(char *d, unsigned char c, bool upper)
{
	(void)sprintf(d, upper ? "%02X" : "%02x", c);
}

static bool hex_has_letter(unsigned char c)
{
	return (c >> 4) > 9 || (c & 15) > 9;
}

/* Whether the k-th escape of a string encoded with hc is upper-case. */
static bool is_upper(enum hex_case hc, size_t k)
{
	return hc == HEX_UPPER || (hc == HEX_MIXED && k % 2);
}

/* The case the flow writes a surrogate's byte in, at the k-th escape of the value (at byte i):
 * the value's there when its hex has letters; else that of the value's first escape with
 * letters; else upper for percent-encoding, lower for JSON. */
static bool sub_is_upper(const char *value, size_t every, enum hex_case hc, size_t i, size_t k,
			 bool json)
{
	size_t j = 0;

	if (hex_has_letter((unsigned char)value[i]))
		return is_upper(hc, k);
	for (size_t m = 0; value[m]; m++) {
		bool escaped = json ? m % every == 0 : value[m] != ' ' && m % every == 0;

		if (!escaped)
			continue;
		if (hex_has_letter((unsigned char)value[m]))
			return is_upper(hc, j);
		j++;
	}
	return !json;
}

/* s with every every-th byte (from the first) written as \u00XX, '/' as \/; the case of the hex
 * digits as hc says, or, when value is not NULL, as the flow writes s in place of value. */
static char *json_escaped_as(const char *s, size_t every, enum hex_case hc, const char *value)
{
	char *d = malloc(6 * strlen(s) + 1), *o = d;
	size_t k = 0;

	assert_non_null(d);
	for (size_t i = 0; s[i]; i++) {
		if (i % every == 0) {
			o += sprintf(o, "\\u00");
			put_hex(o, (unsigned char)s[i],
				value ? sub_is_upper(value, every, hc, i, k, true)
				      : is_upper(hc, k));
			k++;
			o += 2;
		} else if (s[i] == '/') {
			o += sprintf(o, "\\/");
		} else
			*o++ = s[i];
	}
	*o = '\0';
	return d;
}

static char *json_escaped(const char *s, size_t every, enum hex_case hc)
{
	return json_escaped_as(s, every, hc, NULL);
}

/* s with every every-th byte percent-encoded, and spaces as '+' (the case as above). */
static char *percent_encoded_as(const char *s, size_t every, enum hex_case hc, const char *value)
{
	char *d = malloc(3 * strlen(s) + 1), *o = d;
	size_t k = 0;

	assert_non_null(d);
	for (size_t i = 0; s[i]; i++) {
		if (s[i] == ' ') {
			*o++ = '+';
		} else if (i % every == 0) {
			*o++ = '%';
			put_hex(o, (unsigned char)s[i],
				value ? sub_is_upper(value, every, hc, i, k, false)
				      : is_upper(hc, k));
			k++;
			o += 2;
		} else
			*o++ = s[i];
	}
	*o = '\0';
	return d;
}

static char *percent_encoded(const char *s, size_t every, enum hex_case hc)
{
	return percent_encoded_as(s, every, hc, NULL);
}

static char *hex_of(const char *s, bool upper)
{
	char *d = malloc(2 * strlen(s) + 1);

	assert_non_null(d);
	for (size_t i = 0; s[i]; i++)
		put_hex(d + 2 * i, (unsigned char)s[i], upper);
	d[2 * strlen(s)] = '\0';
	return d;
}

/* A flow that sent surrogate answers "<head>X-Echo: <echo>" and a Content-Length body
 * {"t":"<echo>"}; what the sandbox gets must be "X-Echo: <expected>" and {"t":"<expected>"},
 * framed as a Content-Length body when same_length, else chunked, whatever the pieces. */
static void expect_echo_turned_back(const char *surrogate, const char *echo, const char *expected,
				    bool same_length)
{
	char *resp = str_printf("HTTP/1.1 200 OK\r\nX-Echo: %s\r\nContent-Length: %zu\r\n\r\n"
				"{\"t\":\"%s\"}",
				echo, strlen(echo) + 8, echo);
	char *want = same_length ? str_printf("HTTP/1.1 200 OK\r\nX-Echo: %s\r\nContent-Length: "
					      "%zu\r\n\r\n{\"t\":\"%s\"}",
					      expected, strlen(expected) + 8, expected)
				 : str_printf("HTTP/1.1 200 OK\r\nX-Echo: %s\r\nTransfer-Encoding: "
					      "chunked\r\n\r\n%zx\r\n{\"t\":\"%s\"}\r\n0\r\n\r\n",
					      expected, strlen(expected) + 8, expected);
	size_t head_len = (size_t)(strstr(resp, "\r\n\r\n") + 4 - resp);

	/* Whole, and split at every byte of the body (the head is taken whole anyway). */
	for (size_t split = head_len; split < strlen(resp); split++) {
		struct ft *t = flow_with_value(surrogate, 1);
		struct netns_buf *d = &t->down;

		assert_int_equal(feed(t, false, resp, split, SIZE_MAX), 0);
		assert_int_equal(feed(t, false, resp + split, strlen(resp) - split, SIZE_MAX), 0);
		if (same_length || split == head_len) {
			expect_down(t, want);
		} else {
			/* Other pieces, other chunks: the head and the body's bytes are the same.
			 */
			assert_true(netns_buf_len(d) > 0);
			assert_int_equal(netns_buf_append(d, "", 1, SIZE_MAX), 0);
			assert_non_null(strstr(buf_text(d), expected));
			assert_null(strstr(buf_text(d), echo));
		}
		ft_free(t);
	}
	free(resp);
	free(want);
}

static void test_flow_turns_json_escaped_values_back_in_the_same_form(void **state)
{
	static const size_t everies[] = {1, 2, 3, 7, 100};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(everies); i++)
		for (enum hex_case hc = HEX_LOWER; hc <= HEX_MIXED; hc++) {
			char *echo = json_escaped(V_SAME, everies[i], hc);
			char *expected = json_escaped_as(S_SAME, everies[i], hc, V_SAME);
			char *echo_gh = json_escaped(V_GH, everies[i], hc);

			/* Same length: the surrogate escaped as the value was. */
			expect_echo_turned_back(S_SAME, echo, expected, true);
			/* Another length: the surrogate as it is. */
			expect_echo_turned_back(S_GH, echo_gh, S_GH, false);
			free(echo);
			free(expected);
			free(echo_gh);
		}
}

static void test_flow_turns_json_escaped_slashes_back(void **state)
{
	char *echo = json_escaped(V_SLASH, 1000, HEX_LOWER);
	char *expected = json_escaped_as(S_SLASH, 1000, HEX_LOWER, V_SLASH);
	char *echo5 = json_escaped(V_SLASH, 5, HEX_UPPER),
	     *expected5 = json_escaped_as(S_SLASH, 5, HEX_UPPER, V_SLASH);

	(void)state;
	assert_non_null(strstr(echo, "eal\\/value"));
	/* "\/" is shorter than any form of a surrogate's byte other than itself: the body is
	 * re-framed, and the surrogate's byte goes as it is there. */
	expect_echo_turned_back(S_SLASH, echo, expected, false);
	expect_echo_turned_back(S_SLASH, echo5, expected5, false);
	free(echo);
	free(expected);
	free(echo5);
	free(expected5);
}

static void test_flow_turns_percent_encoded_values_back_in_the_same_form(void **state)
{
	static const size_t everies[] = {1, 2, 5, 100};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(everies); i++)
		for (enum hex_case hc = HEX_LOWER; hc <= HEX_MIXED; hc++) {
			char *echo = percent_encoded(V_SAME, everies[i], hc);
			char *expected = percent_encoded_as(S_SAME, everies[i], hc, V_SAME);
			char *echo_gh = percent_encoded(V_GH, everies[i], hc);

			expect_echo_turned_back(S_SAME, echo, expected, true);
			expect_echo_turned_back(S_GH, echo_gh, S_GH, false);
			free(echo);
			free(expected);
			free(echo_gh);
		}
}

static void test_flow_turns_form_encoded_spaces_and_slashes_back(void **state)
{
	/* '+' and %2F become the surrogate's bytes, in the same forms. */
	char expected[3 * sizeof(S_SLASH)], *o = expected;

	(void)state;
	for (size_t i = 0; i < strlen(V_SLASH); i++)
		if (V_SLASH[i] == '/')
			o += sprintf(o, "%%%02X", (unsigned char)S_SLASH[i]);
		else
			*o++ = S_SLASH[i];
	*o = '\0';
	expect_echo_turned_back(S_SLASH, "real%2Fvalue+with%2Fslashes%2F0001", expected, false);
}

static void test_flow_turns_hex_values_back_in_the_same_case(void **state)
{
	(void)state;
	for (int upper = 0; upper <= 1; upper++) {
		char *echo = hex_of(V_SAME, upper), *expected = hex_of(S_SAME, upper);
		char *echo_gh = hex_of(V_GH, upper), *expected_gh = hex_of(S_GH, upper);

		expect_echo_turned_back(S_SAME, echo, expected, true);
		expect_echo_turned_back(S_GH, echo_gh, expected_gh, false);
		free(echo);
		free(expected);
		free(echo_gh);
		free(expected_gh);
	}
}

/* The body the sandbox gets of resp, cut in two at cut, on a flow that sent S_SAME and S_GH. */
static char *body_of_two_value_flow(const char *resp, size_t cut)
{
	struct ft *t = ft_new();
	char *down;

	assert_int_equal(send_req(t, "GET / HTTP/1.1\r\nHost: " HOST "\r\nX-A: " S_SAME
				     "\r\nX-B: " S_GH "\r\n\r\n"),
			 0);
	drain(&t->up);
	assert_int_equal(feed(t, false, resp, cut, SIZE_MAX), 0);
	assert_int_equal(feed(t, false, resp + cut, strlen(resp) - cut, SIZE_MAX), 0);
	down = down_body(t);
	ft_free(t);
	return down;
}

static char *response_of(const char *body)
{
	return str_printf("HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n%s", strlen(body), body);
}

/* A base64 run around a value that runs on into another value's hex (or, in the URL alphabet,
 * into the other value as it is: its letters, digits and '-' continue the run) is not encoded
 * again whole, for that would write the other value back as it was (but for its last
 * character): each is swapped on its own. Split at every byte, so that the run's end is not
 * known at first. */
static void test_flow_swaps_a_value_that_runs_on_from_a_base64_run(void **state)
{
	char *plain = b64("u:" V_SAME), *url = b64url("u:" V_SAME), *hex = hex_of(V_GH, false),
	     *upper = hex_of(V_GH, true);
	const char *runs[][2] = {{plain, hex}, {plain, upper}, {url, V_GH}};
	char *want_hex = hex_of(S_GH, false), *want_upper = hex_of(S_GH, true);
	const char *wants[] = {want_hex, want_upper, S_GH};

	(void)state;
	*strchr(plain, '=') = '\0';
	for (size_t i = 0; i < ELEMENTSOF(runs); i++) {
		char *body = str_printf("{\"auth\":\"Basic %s%s\"}", runs[i][0], runs[i][1]);
		char *resp = response_of(body);
		/* The characters that V_SAME's bits alone decide, well inside the run. */
		char *inner = strndup(runs[i][0] + 4, strlen(runs[i][0]) - 8);
		/* All of the other value but its last byte's digits, which the run's last
		 * character would mix. */
		char *most = strndup(runs[i][1], strlen(runs[i][1]) - 2);

		for (size_t cut = 0; cut < strlen(resp); cut++) {
			char *down = body_of_two_value_flow(resp, cut);

			if (strstr(down, most) || strstr(down, inner) || !strstr(down, wants[i]))
				fail_msg("run %zu, cut %zu: %s", i, cut, down);
			free(down);
		}
		free(body);
		free(resp);
		free(inner);
		free(most);
	}
	free(plain);
	free(url);
	free(hex);
	free(upper);
	free(want_hex);
	free(want_upper);
}

/* Nor is a run encoded again whole when its text would join with what follows into a value: a
 * run of whole groups loses its padding that way, and the hex of a value that the padding split
 * would be whole after it. */
static void test_flow_keeps_the_padding_that_splits_a_value_after_a_base64_run(void **state)
{
	char *run = b64("u:" V_SAME), *hex = hex_of(V_GH, false);

	(void)state;
	*strchr(run, '=') = '\0';
	for (size_t k = 2; k < strlen(hex); k += 6)
		for (size_t pads = 1; pads <= 2; pads++) {
			char *body = str_printf("{\"auth\":\"Basic %s%.*s%.*s%s\"}", run, (int)k,
						hex, (int)pads, "==", hex + k);
			char *resp = response_of(body);

			for (size_t cut = 0; cut < strlen(resp); cut++) {
				char *down = body_of_two_value_flow(resp, cut);

				if (strstr(down, hex))
					fail_msg("split %zu, %zu '=', cut %zu: %s", k, pads, cut,
						 down);
				free(down);
			}
			free(body);
			free(resp);
		}
	free(run);
	free(hex);
}

/* A response to a flow that sent a value, its body in pieces of piece bytes: the error. */
static int compressed_body(const char *head, const void *body, size_t n, size_t piece)
{
	struct ft *t = flow_with_value(S_GH, 1);
	int r = send_resp(t, head);

	if (r >= 0)
		r = feed(t, false, body, n, piece);
	if (r < 0 && !strstr(t->err.msg, "compressed"))
		fail_msg("message \"%s\" does not say \"compressed\"", t->err.msg);
	ft_free(t);
	return r;
}

static void test_flow_refuses_compressed_bodies_by_their_magic_bytes(void **state)
{
	static const struct {
		const char *magic;
		size_t n;
	} magics[] = {
	    {"\x1f\x8b\x08\x00", 4}, {"\x28\xb5\x2f\xfd", 4}, {"\x78\x01", 2},
	    {"\x78\x5e", 2},	     {"\x78\x9c", 2},	      {"\x78\xda", 2},
	};
	char body[64], chunked[128];

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(magics); i++) {
		memset(body, 'z', sizeof(body));
		memcpy(body, magics[i].magic, magics[i].n);
		/* Whatever the headers say, and in whatever pieces the bytes come. */
		for (size_t piece = 1; piece <= 5; piece += 4) {
			assert_int_equal(compressed_body("HTTP/1.1 200 OK\r\nContent-Length: 64\r\n"
							 "Content-Type: text/plain\r\n\r\n",
							 body, sizeof(body), piece),
					 -EIO);
			assert_int_equal(
			    compressed_body("HTTP/1.1 200 OK\r\n\r\n", body, sizeof(body), piece),
			    -EIO);
		}
		/* Chunked, the magic split across chunks of one byte. */
		size_t n =
		    (size_t)sprintf(chunked, "1\r\n%c\r\n1\r\n%c\r\n%zx\r\n", magics[i].magic[0],
				    magics[i].magic[1], sizeof(body) - 2);
		memcpy(chunked + n, body + 2, sizeof(body) - 2);
		n += sizeof(body) - 2;
		memcpy(chunked + n, "\r\n0\r\n\r\n", 7);
		assert_int_equal(
		    compressed_body("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
				    chunked, n + 7, 3),
		    -EIO);
	}
	/* Bytes that only begin like a magic pass. */
	assert_int_equal(
	    compressed_body("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n", "\x1f\x8a..", 4, 1), 0);
	assert_int_equal(
	    compressed_body("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n", "\x28\xb5\x2f.", 4, 1),
	    0);
	assert_int_equal(
	    compressed_body("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n", "xyz", 3, 1), 0);
}

/* A transfer coding other than chunked compresses the body as a Content-Encoding does: refused
 * once a value went upstream (and no request asks for one: TE is not passed on). */
static void test_flow_refuses_transfer_codings_other_than_chunked(void **state)
{
	static const char *const codings[] = {"gzip, chunked", "br,chunked", "x-anything",
					      "ch" V_GH "unked"};
	struct ft *t;

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(codings); i++) {
		char *head =
		    str_printf("HTTP/1.1 200 OK\r\nTransfer-Encoding: %s\r\n\r\n", codings[i]);

		t = flow_with_value(S_GH, 1);
		assert_int_equal(send_resp(t, head), -EIO);
		assert_non_null(strstr(t->err.msg, "compressed"));
		assert_false(buf_has(&t->down, V_GH));
		ft_free(t);
		free(head);
	}
	t = ft_new();
	assert_int_equal(send_req(t, "GET / HTTP/1.1\r\nHost: " HOST "\r\nTE: gzip\r\n\r\n"), 0);
	expect_up(t, GET_ROOT);
	ft_free(t);
}

/* Content-Length is passed on as it is: one that is a value (digits only) is refused. */
static void test_flow_refuses_a_content_length_that_is_a_value(void **state)
{
	struct ft *t = flow_with_value(S_NUM, 1);

	(void)state;
	assert_int_equal(send_resp(t, "HTTP/1.1 200 OK\r\nContent-Length: " V_NUM "\r\n\r\n"),
			 -EBADMSG);
	assert_false(buf_has(&t->down, V_NUM));
	ft_free(t);
}

static void test_flow_passes_compressed_bodies_before_any_value_was_sent(void **state)
{
	struct ft *t = ft_new();

	(void)state;
	assert_int_equal(send_req(t, GET_ROOT), 0);
	assert_int_equal(
	    feed(t, false, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n\x1f\x8b\x08\x00", 42, 1),
	    0);
	assert_int_equal(netns_buf_len(&t->down), 42);
	ft_free(t);
}

/* ---- throughput (reported, not asserted) ---- */

static double now_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Streams body_len bytes in 16 KiB feeds (a TLS record each) one way; returns MB/s. */
static double stream(struct ft *t, bool request, const uint8_t *body, size_t body_len,
		     size_t *ret_out)
{
	struct netns_buf *out = request ? &t->up : &t->down;
	double start = now_sec();
	size_t done = 0, total = 0;

	while (done < body_len) {
		size_t n = MIN(body_len - done, (size_t)16384);
		ssize_t r = request ? netns_http_flow_request(t->f, body + done, n, out, &t->err)
				    : netns_http_flow_response(t->f, body + done, n, out, &t->err);

		assert_true(r >= 0);
		done += (size_t)r;
		total += netns_buf_len(out);
		drain(out);
	}
	*ret_out = total;
	return (double)body_len / (now_sec() - start) / 1e6;
}

static void test_flow_throughput_of_a_10_mib_body(void **state)
{
	size_t len = 10 * 1024 * 1024, out_len;
	uint8_t *body = malloc(len);
	char head[256];
	struct ft *t;
	double req_mbs, resp_mbs, chunked_mbs;

	(void)state;
	assert_non_null(body);
	/* Text-like bytes, with many 'a' and 'g' (the surrogates' first bytes). */
	for (size_t i = 0; i < len; i++)
		body[i] = (uint8_t) "the quick brown fox jumps over a lazy dog, again\n"[i % 49];

	t = flow_with_value(S_SAME, 1);
	(void)snprintf(head, sizeof(head),
		       "POST / HTTP/1.1\r\nHost: " HOST "\r\nContent-Length: %zu\r\n\r\n", len);
	assert_int_equal(send_req(t, head), 0);
	drain(&t->up);
	req_mbs = stream(t, true, body, len, &out_len);
	assert_int_equal(out_len, len);
	(void)snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n", len);
	assert_int_equal(send_resp(t, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"), 0);
	assert_int_equal(send_resp(t, head), 0);
	drain(&t->down);
	resp_mbs = stream(t, false, body, len, &out_len);
	assert_int_equal(out_len, len);
	ft_free(t);

	/* A value whose surrogate is longer: the body is re-framed as chunked. */
	t = flow_with_value(S_GH, 1);
	assert_int_equal(send_resp(t, head), 0);
	drain(&t->down);
	chunked_mbs = stream(t, false, body, len, &out_len);
	assert_true(out_len > len);
	ft_free(t);

	print_message("# 10 MiB body: request %.0f MB/s, response %.0f MB/s, re-framed response "
		      "%.0f MB/s\n",
		      req_mbs, resp_mbs, chunked_mbs);
	free(body);
}

/* A request head with a surrogate swapped in and its response head, as a client library sends
 * and a server answers them. */
static void test_flow_throughput_of_request_and_response_heads(void **state)
{
	static const char req[] = "POST /v1/messages HTTP/1.1\r\nHost: " HOST "\r\n"
				  "User-Agent: python-httpx/0.27.0\r\nAccept: application/json\r\n"
				  "Accept-Encoding: gzip, deflate\r\nConnection: keep-alive\r\n"
				  "Authorization: Bearer " S_GH "\r\n"
				  "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
	static const char resp[] =
	    "HTTP/1.1 200 OK\r\nDate: Mon, 01 Jan 2024 00:00:00 GMT\r\n"
	    "Content-Type: application/json\r\nContent-Length: 2\r\n"
	    "Connection: keep-alive\r\nX-Request-Id: req_0123456789abcdef\r\n"
	    "Server: cloudflare\r\n\r\n{}";
	struct ft *t = ft_new();
	unsigned n = 20000;
	double start;

	(void)state;
	start = now_sec();
	for (unsigned i = 0; i < n; i++) {
		assert_int_equal(netns_http_flow_request(t->f, (const uint8_t *)req,
							 sizeof(req) - 1, &t->up, &t->err),
				 sizeof(req) - 1);
		assert_int_equal(netns_http_flow_response(t->f, (const uint8_t *)resp,
							  sizeof(resp) - 1, &t->down, &t->err),
				 sizeof(resp) - 1);
		drain(&t->up);
		drain(&t->down);
	}
	print_message("# heads: %.0f requests and responses a second\n", n / (now_sec() - start));
	assert_int_equal(t->fake.resolve_calls, 1);
	ft_free(t);
}

/* The leftmost match in [p, end) of pats (hashed ones: none escaped), the longest there, as the
 * matcher must find it: by comparing at every byte. */
static const uint8_t *naive_find(const struct pattern *pats, size_t n, const uint8_t *p,
				 const uint8_t *end, size_t *ret_len)
{
	for (; p < end; p++) {
		size_t best = 0;

		for (size_t i = 0; i < n; i++)
			if (pats[i].len <= (size_t)(end - p) && pats[i].len > best &&
			    memcmp(p, pats[i].bytes, pats[i].len) == 0)
				best = pats[i].len;
		if (best > 0) {
			*ret_len = best;
			return p;
		}
	}
	return NULL;
}

/* The matcher reads one window every few bytes (as many as the shortest pattern allows): every
 * match is still found at its start, whatever that start is past a multiple of the stride, at
 * the text's ends, and overlapping or nested in others; before a limit, only what starts
 * before it. Patterns of two letters over random text of the same letters, so that windows
 * often hash alike and compare, against a search at every byte. */
static void test_matcher_finds_every_match_that_a_byte_by_byte_search_finds(void **state)
{
	static const size_t shortest[] = {8, 9, 12, 20, 39, 40, 41, 64};
	uint8_t text[600], pat_bytes[6][64 + 30];
	unsigned seed = 12345;

	(void)state;
	for (size_t round = 0; round < 400; round++) {
		size_t min_len = shortest[round % ELEMENTSOF(shortest)], n = 1 + round % 6;
		struct pattern *pats = calloc(n, sizeof(*pats)), ref[6];
		struct matcher m;

		assert_non_null(pats);
		for (size_t i = 0; i < n; i++) {
			size_t len = min_len + (i == 0 ? 0 : (size_t)rand_r(&seed) % 30);

			assert_true(len <= sizeof(pat_bytes[i]));

			for (size_t k = 0; k < len; k++)
				pat_bytes[i][k] = (uint8_t)(rand_r(&seed) % 8 == 0 ? 'b' : 'a');
			/* Some share a prefix or are a prefix of another. */
			if (i > 0 && rand_r(&seed) % 3 == 0)
				memcpy(pat_bytes[i], pat_bytes[0], MIN(len, pats[0].len));
			pats[i] = (struct pattern){.bytes = pat_bytes[i],
						   .len = len,
						   .sub = pat_bytes[i],
						   .sub_len = len,
						   .owner = i};
		}
		memcpy(ref, pats, n * sizeof(*pats));
		for (size_t k = 0; k < sizeof(text); k++)
			text[k] = (uint8_t)(rand_r(&seed) % 8 == 0 ? 'b' : 'a');
		/* Planted at random places, the ends included. */
		for (size_t k = 0; k < 8; k++) {
			const struct pattern *pt = &ref[(size_t)rand_r(&seed) % n];
			size_t at = k == 0   ? 0
				    : k == 1 ? sizeof(text) - pt->len
					     : (size_t)rand_r(&seed) % (sizeof(text) - pt->len);

			memcpy(text + at, pt->bytes, pt->len);
		}
		assert_int_equal(flow_matcher_init(&m, pats, n), 0);
		for (size_t from = 0; from < sizeof(text); from += 1 + (size_t)rand_r(&seed) % 7) {
			const uint8_t *end = text + sizeof(text) - (size_t)rand_r(&seed) % 4;
			const uint8_t *before = text + from + (size_t)rand_r(&seed) % 200;
			const uint8_t *want, *got;
			size_t want_len = 0;
			struct match mt;

			want = naive_find(ref, n, text + from, end, &want_len);
			got = flow_matcher_find(&m, text + from, end, &mt);
			assert_ptr_equal(got, want);
			if (got)
				assert_int_equal(mt.len, want_len);
			got = flow_matcher_find_before(&m, text + from, before, end, &mt);
			assert_ptr_equal(got, want && want < before ? want : NULL);
		}
		flow_matcher_done(&m);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_flow_rebuilds_request_head_with_surrogate_swapped),
	    cmocka_unit_test(test_flow_swaps_several_surrogates_and_resolves_each_once),
	    cmocka_unit_test(
		test_flow_strips_upgrade_and_proxy_headers_and_their_connection_options),
	    cmocka_unit_test(test_flow_refuses_request_naming_another_host),
	    cmocka_unit_test(
		test_flow_accepts_host_in_any_case_with_a_trailing_dot_and_its_own_port),
	    cmocka_unit_test(test_flow_sends_an_absolute_form_target_in_origin_form),
	    cmocka_unit_test(test_flow_holds_a_request_for_another_origin),
	    cmocka_unit_test(test_flow_passes_http_1_0_without_host_as_the_last_request),
	    cmocka_unit_test(test_flow_swaps_surrogate_inside_basic_credentials),
	    cmocka_unit_test(test_flow_turns_base64_echo_of_basic_credentials_back),
	    cmocka_unit_test(test_flow_encodes_a_base64_run_again_whole_around_a_value),
	    cmocka_unit_test(test_flow_turns_back_values_bound_to_the_host_without_a_swap),
	    cmocka_unit_test(
		test_flow_on_a_bound_host_refuses_compressed_responses_before_any_swap),
	    cmocka_unit_test(test_flow_asks_for_identity_and_refuses_compressed_echo),
	    cmocka_unit_test(test_flow_refuses_surrogate_in_request_target_raw_or_encoded),
	    cmocka_unit_test(test_flow_refuses_encoded_surrogate_in_other_headers),
	    cmocka_unit_test(test_flow_refuses_what_the_broker_refuses),
	    cmocka_unit_test(test_flow_swaps_surrogate_of_a_head_split_at_every_byte),
	    cmocka_unit_test(test_flow_adds_sidecar_headers_to_every_request_asked_once),
	    cmocka_unit_test(test_flow_refuses_malformed_sidecar),
	    cmocka_unit_test(test_flow_passes_pipelined_requests_and_matches_responses_in_order),
	    cmocka_unit_test(test_flow_drops_bytes_after_a_request_that_closes),
	    cmocka_unit_test(
		test_flow_keeping_the_upstream_passes_no_close_and_ends_the_sandbox_side),
	    cmocka_unit_test(test_flow_leaves_unsearched_bodies_unread),
	    cmocka_unit_test(test_flow_upstream_not_reusable_when_told_or_free_to_close),
	    cmocka_unit_test(
		test_flow_replayable_only_before_an_answer_and_for_idempotent_requests),
	    cmocka_unit_test(test_flow_passes_expect_100_continue),
	    cmocka_unit_test(test_flow_refuses_surrogate_in_body_split_at_every_byte),
	    cmocka_unit_test(test_flow_holds_back_only_what_could_begin_a_surrogate),
	    cmocka_unit_test(test_flow_refuses_surrogate_across_a_body_and_the_next_request_line),
	    cmocka_unit_test(test_flow_rechunks_chunked_request_without_extensions),
	    cmocka_unit_test(test_flow_passes_framing_fields_in_one_form),
	    cmocka_unit_test(test_flow_refuses_surrogate_across_chunks_in_extensions_or_trailers),
	    cmocka_unit_test(test_flow_refuses_smuggling_attempts),
	    cmocka_unit_test(test_flow_refuses_too_many_unanswered_requests),
	    cmocka_unit_test(test_flow_refuses_101_and_responses_nothing_asked_for),
	    cmocka_unit_test(test_flow_responses_to_head_and_204_304_have_no_body),
	    cmocka_unit_test(test_flow_turns_same_length_values_back_keeping_content_length),
	    cmocka_unit_test(test_flow_reframes_content_length_as_chunked_when_lengths_differ),
	    cmocka_unit_test(test_flow_reframes_as_close_delimited_for_http_1_0),
	    cmocka_unit_test(test_flow_dechunks_response_for_http_1_0_client),
	    cmocka_unit_test(test_flow_replaces_value_split_at_every_byte_of_a_response),
	    cmocka_unit_test(test_flow_ends_close_delimited_response_at_eof),
	    cmocka_unit_test(test_flow_refuses_ambiguous_or_malformed_responses),
	    cmocka_unit_test(test_flow_refuses_malformed_chunks_in_a_response),
	    cmocka_unit_test(test_flow_refuses_response_head_over_the_cap),
	    cmocka_unit_test(test_flow_consumes_less_while_out_is_full),
	    cmocka_unit_test(test_flow_error_response_only_between_responses),
	    cmocka_unit_test(test_flow_passes_response_trailers_with_values_replaced),
	    cmocka_unit_test(test_flow_turns_json_escaped_values_back_in_the_same_form),
	    cmocka_unit_test(test_flow_turns_json_escaped_slashes_back),
	    cmocka_unit_test(test_flow_turns_percent_encoded_values_back_in_the_same_form),
	    cmocka_unit_test(test_flow_turns_form_encoded_spaces_and_slashes_back),
	    cmocka_unit_test(test_flow_turns_hex_values_back_in_the_same_case),
	    cmocka_unit_test(test_flow_swaps_a_value_that_runs_on_from_a_base64_run),
	    cmocka_unit_test(test_flow_keeps_the_padding_that_splits_a_value_after_a_base64_run),
	    cmocka_unit_test(test_flow_refuses_compressed_bodies_by_their_magic_bytes),
	    cmocka_unit_test(test_flow_passes_compressed_bodies_before_any_value_was_sent),
	    cmocka_unit_test(test_flow_refuses_transfer_codings_other_than_chunked),
	    cmocka_unit_test(test_flow_refuses_a_content_length_that_is_a_value),
	    cmocka_unit_test(test_matcher_finds_every_match_that_a_byte_by_byte_search_finds),
	    cmocka_unit_test(test_flow_throughput_of_a_10_mib_body),
	    cmocka_unit_test(test_flow_throughput_of_request_and_response_heads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
