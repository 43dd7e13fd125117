/* tests/unit/netns/test-http.c: the egress proxy's HTTP/1.1 request parser. Each rule is tested
 * both ways; every input is parsed from a heap copy of exactly its length, so that the sanitizer
 * build catches a read past the end, and every prefix of it too, so that a parser that answers
 * before it has seen enough is caught. */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "netns/netns-internal.h"

/* A string literal, which may hold NULs, as buffer and length. */
#define S(lit) lit, sizeof(lit) - 1

#define CURL_GET                                                                                   \
	"GET /repos/airlock/airlock HTTP/1.1\r\n"                                                  \
	"Host: api.github.com\r\n"                                                                 \
	"User-Agent: curl/7.88.1\r\n"                                                              \
	"Accept: */*\r\n"                                                                          \
	"Authorization: Bearer ghp_surrogate0123456789\r\n"                                        \
	"\r\n"
#define CURL_POST_BODY "{\"model\":\"claude\",\"max_tokens\":1}"
#define CURL_POST                                                                                  \
	"POST /v1/messages HTTP/1.1\r\n"                                                           \
	"Host: api.anthropic.com\r\n"                                                              \
	"User-Agent: curl/7.88.1\r\n"                                                              \
	"Accept: */*\r\n"                                                                          \
	"x-api-key: sk-ant-surrogate\r\n"                                                          \
	"content-type: application/json\r\n"                                                       \
	"Content-Length: 33\r\n"                                                                   \
	"\r\n"
#define CURL_PROXY_GET                                                                             \
	"GET http://deb.debian.org/debian/dists/bookworm/InRelease HTTP/1.1\r\n"                   \
	"Host: deb.debian.org\r\n"                                                                 \
	"User-Agent: curl/7.88.1\r\n"                                                              \
	"Accept: */*\r\n"                                                                          \
	"Proxy-Connection: Keep-Alive\r\n"                                                         \
	"\r\n"
#define CURL_CONNECT                                                                               \
	"CONNECT api.github.com:443 HTTP/1.1\r\n"                                                  \
	"Host: api.github.com:443\r\n"                                                             \
	"User-Agent: curl/7.88.1\r\n"                                                              \
	"Proxy-Connection: Keep-Alive\r\n"                                                         \
	"\r\n"
#define URLLIB_GET                                                                                 \
	"GET /simple/requests/ HTTP/1.1\r\n"                                                       \
	"Accept-Encoding: identity\r\n"                                                            \
	"Host: pypi.org\r\n"                                                                       \
	"User-Agent: Python-urllib/3.11\r\n"                                                       \
	"Connection: close\r\n"                                                                    \
	"\r\n"
#define GIT_INFO_REFS                                                                              \
	"GET /airlock/airlock.git/info/refs?service=git-upload-pack HTTP/1.1\r\n"                  \
	"Host: github.com\r\n"                                                                     \
	"User-Agent: git/2.39.2\r\n"                                                               \
	"Accept: */*\r\n"                                                                          \
	"Accept-Encoding: deflate, gzip, br\r\n"                                                   \
	"Accept-Language: C, *;q=0.9\r\n"                                                          \
	"Pragma: no-cache\r\n"                                                                     \
	"Git-Protocol: version=2\r\n"                                                              \
	"\r\n"
#define GIT_UPLOAD_PACK                                                                            \
	"POST /airlock/airlock.git/git-upload-pack HTTP/1.1\r\n"                                   \
	"Host: github.com\r\n"                                                                     \
	"User-Agent: git/2.39.2\r\n"                                                               \
	"Accept-Encoding: deflate, gzip, br\r\n"                                                   \
	"Content-Type: application/x-git-upload-pack-request\r\n"                                  \
	"Accept: application/x-git-upload-pack-result\r\n"                                         \
	"Git-Protocol: version=2\r\n"                                                              \
	"Transfer-Encoding: chunked\r\n"                                                           \
	"\r\n"

static char *copy(const char *buf, size_t len)
{
	char *p = malloc(len > 0 ? len : 1);

	assert_non_null(p);
	memcpy(p, buf, len);
	return p;
}

static int parse_copy(const char *buf, size_t len, struct netns_http_request *ret,
		      struct al_error *err)
{
	char *p = copy(buf, len);
	int r;

	r = netns_http_parse_request(p, len, ret, err);
	/* The spans point into the copy: move them to buf, which the caller still holds. */
	if (r == 0) {
		ret->method = buf + (ret->method - p);
		ret->target = buf + (ret->target - p);
		if (ret->host)
			ret->host = buf + (ret->host - p);
		for (size_t i = 0; i < ret->n_headers; i++) {
			ret->headers[i].name = buf + (ret->headers[i].name - p);
			ret->headers[i].value = buf + (ret->headers[i].value - p);
		}
	}
	free(p);
	return r;
}

/* Parses buf, which must be accepted, and checks that every shorter prefix of its head needs
 * more bytes. */
static void parse_ok(const char *buf, size_t len, struct netns_http_request *req)
{
	struct netns_http_request tmp;
	struct al_error err = {0};
	int r;

	r = parse_copy(buf, len, req, &err);
	if (r != 0)
		fail_msg("refused (%d): %s", r, err.msg);
	assert_true(req->head_len <= len);
	for (size_t i = 0; i < req->head_len; i++) {
		r = parse_copy(buf, i, &tmp, &err);
		if (r != -EAGAIN)
			fail_msg("prefix of %zu bytes: %d (%s)", i, r, err.msg);
	}
}

/* Parses buf, which must be refused with code and a message holding what; its prefixes must
 * need more bytes or be refused the same way, and the output must be left alone. */
static void refused_with(const char *buf, size_t len, int code, const char *what)
{
	struct netns_http_request req, before;
	struct al_error err = {0};
	int r;

	memset(&req, 0x5a, sizeof(req));
	before = req;
	r = parse_copy(buf, len, &req, &err);
	if (r != code)
		fail_msg("expected %d, got %d (%s)", code, r, err.msg);
	if (!strstr(err.msg, what))
		fail_msg("message \"%s\" does not say \"%s\"", err.msg, what);
	assert_memory_equal(&req, &before, sizeof(req));
	for (size_t i = 0; i < len; i++) {
		r = parse_copy(buf, i, &req, &err);
		if (r != -EAGAIN && r != code)
			fail_msg("prefix of %zu bytes: %d (%s)", i, r, err.msg);
	}
}

#define refused(lit, what) refused_with(S(lit), -EBADMSG, what)

static void assert_span(const char *p, size_t n, const char *expected)
{
	if (n != strlen(expected) || memcmp(p, expected, n) != 0)
		fail_msg("\"%.*s\" is not \"%s\"", (int)n, p, expected);
}

static const struct netns_http_header *header(const struct netns_http_request *req,
					      const char *name)
{
	for (size_t i = 0; i < req->n_headers; i++)
		if (req->headers[i].name_len == strlen(name) &&
		    memcmp(req->headers[i].name, name, strlen(name)) == 0)
			return &req->headers[i];
	fail_msg("no header %s", name);
	return NULL;
}

static void test_http_reads_curl_get_with_its_default_headers(void **state)
{
	struct netns_http_request req;

	(void)state;
	parse_ok(S(CURL_GET "tail"), &req);
	assert_span(req.method, req.method_len, "GET");
	assert_span(req.target, req.target_len, "/repos/airlock/airlock");
	assert_int_equal(req.minor_version, 1);
	assert_int_equal(req.head_len, strlen(CURL_GET));
	assert_int_equal(req.n_headers, 4);
	assert_span(req.headers[0].name, req.headers[0].name_len, "Host");
	assert_span(req.headers[1].value, req.headers[1].value_len, "curl/7.88.1");
	assert_span(header(&req, "Authorization")->value, header(&req, "Authorization")->value_len,
		    "Bearer ghp_surrogate0123456789");
	assert_span(req.host, req.host_len, "api.github.com");
	assert_int_equal(req.body, NETNS_HTTP_BODY_NONE);
	assert_int_equal(req.content_length, 0);
	assert_false(req.connect);
	assert_true(req.keep_alive);
}

static void test_http_reads_curl_post_with_content_length(void **state)
{
	struct netns_http_request req;

	(void)state;
	assert_int_equal(strlen(CURL_POST_BODY), 33);
	parse_ok(S(CURL_POST CURL_POST_BODY), &req);
	assert_span(req.method, req.method_len, "POST");
	assert_int_equal(req.body, NETNS_HTTP_BODY_LENGTH);
	assert_int_equal(req.content_length, 33);
	assert_int_equal(req.head_len, strlen(CURL_POST));
	assert_span(header(&req, "x-api-key")->value, header(&req, "x-api-key")->value_len,
		    "sk-ant-surrogate");
}

static void test_http_reads_urllib_request_that_closes(void **state)
{
	struct netns_http_request req;

	(void)state;
	parse_ok(S(URLLIB_GET), &req);
	assert_span(req.host, req.host_len, "pypi.org");
	assert_span(req.headers[0].value, req.headers[0].value_len, "identity");
	assert_false(req.keep_alive);
	assert_int_equal(req.body, NETNS_HTTP_BODY_NONE);
}

static void test_http_reads_git_smart_http_requests(void **state)
{
	struct netns_http_request req;

	(void)state;
	parse_ok(S(GIT_INFO_REFS), &req);
	assert_span(req.target, req.target_len,
		    "/airlock/airlock.git/info/refs?service=git-upload-pack");
	assert_span(req.host, req.host_len, "github.com");
	assert_int_equal(req.n_headers, 7);
	assert_span(header(&req, "Git-Protocol")->value, header(&req, "Git-Protocol")->value_len,
		    "version=2");
	assert_true(req.keep_alive);

	parse_ok(S(GIT_UPLOAD_PACK "4\r\n0000\r\n0\r\n\r\n"), &req);
	assert_int_equal(req.body, NETNS_HTTP_BODY_CHUNKED);
	assert_int_equal(req.head_len, strlen(GIT_UPLOAD_PACK));
}

static void test_http_reads_connect_to_host_and_port(void **state)
{
	struct netns_http_request req;

	(void)state;
	parse_ok(S(CURL_CONNECT), &req);
	assert_true(req.connect);
	assert_span(req.target, req.target_len, "api.github.com:443");
	assert_span(req.host, req.host_len, "api.github.com:443");
	assert_int_equal(req.body, NETNS_HTTP_BODY_NONE);

	parse_ok(S("CONNECT [2001:db8::1]:8443 HTTP/1.1\r\nHost: [2001:db8::1]:8443\r\n\r\n"),
		 &req);
	assert_span(req.target, req.target_len, "[2001:db8::1]:8443");
	parse_ok(S("CONNECT 10.0.0.1:443 HTTP/1.0\r\n\r\n"), &req);
	assert_true(req.connect);
	assert_null(req.host);
	/* "Content-Length: 0" says there is no content, which CONNECT has anyway. */
	parse_ok(
	    S("CONNECT a.example:443 HTTP/1.1\r\nHost: a.example\r\nContent-Length: 0\r\n\r\n"),
	    &req);
	assert_int_equal(req.body, NETNS_HTTP_BODY_NONE);
}

static void test_http_refuses_connect_without_host_and_port(void **state)
{
	(void)state;
	refused("CONNECT api.github.com HTTP/1.1\r\nHost: api.github.com\r\n\r\n",
		"CONNECT target");
	refused("CONNECT / HTTP/1.1\r\nHost: a\r\n\r\n", "CONNECT target");
	refused("CONNECT http://a:443/ HTTP/1.1\r\nHost: a\r\n\r\n", "CONNECT target");
	refused("CONNECT a:0 HTTP/1.1\r\nHost: a\r\n\r\n", "CONNECT target");
	refused("CONNECT a:65536 HTTP/1.1\r\nHost: a\r\n\r\n", "CONNECT target");
	refused("CONNECT a:000443 HTTP/1.1\r\nHost: a\r\n\r\n", "CONNECT target");
	refused("CONNECT a: HTTP/1.1\r\nHost: a\r\n\r\n", "CONNECT target");
	refused("CONNECT :443 HTTP/1.1\r\nHost: a\r\n\r\n", "CONNECT target");
	refused("CONNECT user@a:443 HTTP/1.1\r\nHost: a\r\n\r\n", "CONNECT target");
	refused("CONNECT [::1:443 HTTP/1.1\r\nHost: a\r\n\r\n", "CONNECT target");
	refused("CONNECT [1.2.3.4]:443 HTTP/1.1\r\nHost: a\r\n\r\n", "CONNECT target");
}

static void test_http_refuses_connect_with_content(void **state)
{
	(void)state;
	refused("CONNECT a:443 HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n", "CONNECT");
	refused("CONNECT a:443 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n",
		"CONNECT");
}

static void test_http_reads_absolute_form_target(void **state)
{
	struct netns_http_request req;

	(void)state;
	parse_ok(S(CURL_PROXY_GET), &req);
	assert_span(req.target, req.target_len,
		    "http://deb.debian.org/debian/dists/bookworm/InRelease");
	assert_span(req.host, req.host_len, "deb.debian.org");
	assert_false(req.connect);
	parse_ok(S("GET HTTPS://[::1]:8443?q=1 HTTP/1.1\r\nHost: [::1]:8443\r\n\r\n"), &req);
	parse_ok(S("GET http://a.example HTTP/1.1\r\nHost: a.example\r\n\r\n"), &req);
	/* HTTP/1.0 needs no Host: the proxy reads the authority from the target. */
	parse_ok(S("GET http://a.example/ HTTP/1.0\r\n\r\n"), &req);
	assert_null(req.host);
}

static void test_http_refuses_absolute_form_a_url_parser_could_misread(void **state)
{
	(void)state;
	refused(
	    "GET http://allowed.example@evil.example/ HTTP/1.1\r\nHost: allowed.example\r\n\r\n",
	    "authority");
	refused("GET http://evil.example\\@allowed.example/ HTTP/1.1\r\nHost: a\r\n\r\n",
		"authority");
	refused("GET http:///path HTTP/1.1\r\nHost: a\r\n\r\n", "authority");
	refused("GET http://a%2eexample/ HTTP/1.1\r\nHost: a\r\n\r\n", "authority");
	refused("GET http://a:99999/ HTTP/1.1\r\nHost: a\r\n\r\n", "authority");
	refused("GET ftp://a.example/ HTTP/1.1\r\nHost: a.example\r\n\r\n", "is not a path");
	refused("GET http:/a.example/ HTTP/1.1\r\nHost: a.example\r\n\r\n", "is not a path");
	refused("GET a.example:80 HTTP/1.1\r\nHost: a.example\r\n\r\n", "is not a path");
	refused("GET /index.html#top HTTP/1.1\r\nHost: a\r\n\r\n", "fragment");
}

static void test_http_accepts_asterisk_form_only_with_options(void **state)
{
	struct netns_http_request req;

	(void)state;
	parse_ok(S("OPTIONS * HTTP/1.1\r\nHost: a.example\r\n\r\n"), &req);
	assert_span(req.target, req.target_len, "*");
	parse_ok(S("OPTIONS /x HTTP/1.1\r\nHost: a.example\r\n\r\n"), &req);
	refused("GET * HTTP/1.1\r\nHost: a.example\r\n\r\n", "only for OPTIONS");
	refused("OPTIONS ** HTTP/1.1\r\nHost: a.example\r\n\r\n", "is not a path");
}

static void test_http_accepts_only_http_1_0_and_1_1(void **state)
{
	struct netns_http_request req;

	(void)state;
	parse_ok(S("GET / HTTP/1.0\r\n\r\n"), &req);
	assert_int_equal(req.minor_version, 0);
	assert_null(req.host);
	refused("GET / HTTP/2.0\r\nHost: a\r\n\r\n", "version");
	refused("GET / HTTP/1.2\r\nHost: a\r\n\r\n", "version");
	refused("GET / HTTP/0.9\r\nHost: a\r\n\r\n", "version");
	refused("GET / http/1.1\r\nHost: a\r\n\r\n", "version");
	refused("GET / HTTP/1.10\r\nHost: a\r\n\r\n", "version");
	refused("GET / HTTP/1\r\nHost: a\r\n\r\n", "version");
	refused("GET / HTTP/1.1 \r\nHost: a\r\n\r\n", "version");
	refused("GET / HTTP/1.1 junk\r\nHost: a\r\n\r\n", "version");
	/* HTTP/0.9 has no version: its line lacks the second space. */
	refused("GET /\r\n\r\n", "target");
}

static void test_http_refuses_malformed_request_lines(void **state)
{
	(void)state;
	refused("\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", "Empty line before the request line");
	refused(" GET / HTTP/1.1\r\nHost: a\r\n\r\n", "method");
	refused("G(T / HTTP/1.1\r\nHost: a\r\n\r\n", "method");
	refused("GET\t/ HTTP/1.1\r\nHost: a\r\n\r\n", "method");
	refused("GET  / HTTP/1.1\r\nHost: a\r\n\r\n", "target");
	refused("GET /  HTTP/1.1\r\nHost: a\r\n\r\n", "version");
	refused("GET /a\tb HTTP/1.1\r\nHost: a\r\n\r\n", "target");
	refused("GET /\xc3\xa9 HTTP/1.1\r\nHost: a\r\n\r\n", "target");
	refused("GET /a\x7f HTTP/1.1\r\nHost: a\r\n\r\n", "Control character 0x7f");
	refused("GET / a HTTP/1.1\r\nHost: a\r\n\r\n", "version");
}

static void test_http_methods_are_tokens_and_case_sensitive(void **state)
{
	struct netns_http_request req;

	(void)state;
	parse_ok(S("PROPFIND /dav/ HTTP/1.1\r\nHost: a\r\n\r\n"), &req);
	assert_span(req.method, req.method_len, "PROPFIND");
	parse_ok(S("connect /x HTTP/1.1\r\nHost: a\r\n\r\n"), &req);
	assert_false(req.connect);
	refused("connect a:443 HTTP/1.1\r\nHost: a\r\n\r\n", "is not a path");
}

static void test_http_header_values_skip_and_trim_whitespace(void **state)
{
	struct netns_http_request req;

	(void)state;
	parse_ok(S("GET / HTTP/1.1\r\nHost:a.example\r\nX-A: \t one two \t\r\nX-B:\r\nX-C:   \r\n"
		   "X-D: caf\xc3\xa9\r\n\r\n"),
		 &req);
	assert_int_equal(req.n_headers, 5);
	assert_span(req.host, req.host_len, "a.example");
	assert_span(header(&req, "X-A")->value, header(&req, "X-A")->value_len, "one two");
	assert_int_equal(header(&req, "X-B")->value_len, 0);
	assert_int_equal(header(&req, "X-C")->value_len, 0);
	/* obs-text passes through: it is opaque data, not framing. */
	assert_span(header(&req, "X-D")->value, header(&req, "X-D")->value_len, "caf\xc3\xa9");
}

static void test_http_refuses_obs_fold(void **state)
{
	(void)state;
	refused("GET / HTTP/1.1\r\nHost: a\r\nX-Pad: x\r\n\tTransfer-Encoding: chunked\r\n\r\n",
		"obs-fold");
	refused("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n , identity\r\n\r\n",
		"obs-fold");
	refused("GET / HTTP/1.1\r\n Host: a\r\n\r\n", "obs-fold");
}

static void test_http_refuses_whitespace_before_colon(void **state)
{
	(void)state;
	refused("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding : chunked\r\n\r\n",
		"whitespace before its ':'");
	refused("GET / HTTP/1.1\r\nHost\t: a\r\n\r\n", "whitespace before its ':'");
}

static void test_http_refuses_header_names_that_are_not_tokens(void **state)
{
	(void)state;
	refused("GET / HTTP/1.1\r\nHost: a\r\n: empty name\r\n\r\n", "not a token");
	refused("GET / HTTP/1.1\r\nHost: a\r\nNo colon\r\n\r\n", "not a token");
	refused("GET / HTTP/1.1\r\nHost: a\r\nNoColon\r\n\r\n", "not a token");
	refused("GET / HTTP/1.1\r\nHost: a\r\nX(y): z\r\n\r\n", "not a token");
	refused("GET / HTTP/1.1\r\nHost: a\r\nX\xc3\xa9: z\r\n\r\n", "not a token");
}

static void test_http_refuses_control_characters(void **state)
{
	(void)state;
	refused("GET / HTTP/1.1\r\nHost: a\r\nX-A: a\0b\r\n\r\n", "Control character 0x00");
	refused("GET / HTTP/1.1\r\nHost: a\r\nX\0: b\r\n\r\n", "Control character 0x00");
	refused("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\x0b"
		"chunked\r\n\r\n",
		"Control character 0x0b");
	refused("GET / HTTP/1.1\r\nHost: a\r\nX-A: \x1b[31m\r\n\r\n", "Control character 0x1b");
	refused("GET / HTTP/1.1\r\nHost: a\r\nX-A: a\x7f\r\n\r\n", "Control character 0x7f");
	/* Refused at once, before the line ends. */
	refused("GET / HTTP/1.1\r\nHost: a\r\nX-A: \0", "Control character 0x00");
}

static void test_http_refuses_bare_lf_and_bare_cr(void **state)
{
	(void)state;
	refused("GET / HTTP/1.1\nHost: a\n\n", "Bare LF");
	refused("GET / HTTP/1.1\r\nHost: a\n\r\n", "Bare LF");
	refused("GET / HTTP/1.1\r\nHost: a\r\n\n", "Bare LF");
	refused("GET / HTTP/1.1\r\nHost: a\r\nX-A: a\nTransfer-Encoding: chunked\r\n\r\n",
		"Bare LF");
	refused("GET / HTTP/1.1\rHost: a\r\n\r\n", "Bare CR");
	refused("GET / HTTP/1.1\r\nHost: a\r\nX-A: a\rb\r\n\r\n", "Bare CR");
	refused("GET / HTTP/1.1\r\nHost: a\r\n\r\r\n", "Bare CR");
}

static void test_http_needs_one_host_header_in_http_1_1(void **state)
{
	struct netns_http_request req;

	(void)state;
	refused("GET / HTTP/1.1\r\nUser-Agent: x\r\n\r\n", "without a Host header");
	refused("GET / HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\n\r\n",
		"More than one Host header");
	refused("GET / HTTP/1.1\r\nHost: a.example\r\nhOST: a.example\r\n\r\n",
		"More than one Host header");
	refused("GET / HTTP/1.0\r\nHost: a.example\r\nHost: b.example\r\n\r\n",
		"More than one Host header");
	parse_ok(S("GET / HTTP/1.1\r\nhost: A.Example:8080\r\n\r\n"), &req);
	assert_span(req.host, req.host_len, "A.Example:8080");
	parse_ok(S("GET / HTTP/1.0\r\nHost: [::1]\r\n\r\n"), &req);
	assert_span(req.host, req.host_len, "[::1]");
}

static void test_http_refuses_host_that_is_not_host_and_port(void **state)
{
	(void)state;
	refused("GET / HTTP/1.1\r\nHost:\r\n\r\n", "Host");
	refused("GET / HTTP/1.1\r\nHost: a.example b.example\r\n\r\n", "Host");
	refused("GET / HTTP/1.1\r\nHost: a.example, b.example\r\n\r\n", "Host");
	refused("GET / HTTP/1.1\r\nHost: user@a.example\r\n\r\n", "Host");
	refused("GET / HTTP/1.1\r\nHost: a.example/x\r\n\r\n", "Host");
	refused("GET / HTTP/1.1\r\nHost: a.example:\r\n\r\n", "Host");
	refused("GET / HTTP/1.1\r\nHost: a.example:http\r\n\r\n", "Host");
	refused("GET / HTTP/1.1\r\nHost: a%2eexample\r\n\r\n", "Host");
	refused("GET / HTTP/1.1\r\nHost: [::1\r\n\r\n", "Host");
	refused("GET / HTTP/1.1\r\nHost: [fe80::1%25eth0]\r\n\r\n", "Host");
	refused("GET / HTTP/1.1\r\nHost: a\xc3\xa9.example\r\n\r\n", "Host");
}

static void test_http_without_framing_headers_has_no_body(void **state)
{
	struct netns_http_request req;

	(void)state;
	parse_ok(S("POST /upload HTTP/1.1\r\nHost: a\r\n\r\nnot a body"), &req);
	assert_int_equal(req.body, NETNS_HTTP_BODY_NONE);
	assert_int_equal(req.content_length, 0);
}

static void test_http_reads_content_length(void **state)
{
	struct netns_http_request req;

	(void)state;
	parse_ok(S("POST / HTTP/1.1\r\nHost: a\r\ncontent-LENGTH: 0\r\n\r\n"), &req);
	assert_int_equal(req.body, NETNS_HTTP_BODY_LENGTH);
	assert_int_equal(req.content_length, 0);
	parse_ok(S("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 007\r\n\r\n"), &req);
	assert_int_equal(req.content_length, 7);
	parse_ok(S("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 9007199254740991\r\n\r\n"), &req);
	assert_int_equal(req.content_length, (UINT64_C(1) << 53) - 1);
}

static void test_http_accepts_repeated_content_length_only_when_identical(void **state)
{
	struct netns_http_request req;

	(void)state;
	parse_ok(S("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n"),
		 &req);
	assert_int_equal(req.content_length, 5);
	parse_ok(S("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5 ,5, 5\r\n\r\n"), &req);
	assert_int_equal(req.content_length, 5);
	refused("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
		"Content-Length values 5 and 6 differ");
	refused("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 50\r\n\r\n",
		"Content-Length values 5 and 50 differ");
	refused("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\ncontent-length: 44\r\n\r\n",
		"differ");
}

static void test_http_refuses_content_length_that_is_not_digits(void **state)
{
	(void)state;
	refused("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\n", "\"+5\" is not");
	refused("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", "is not a decimal");
	refused("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0x10\r\n\r\n", "is not a decimal");
	refused("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5 5\r\n\r\n", "is not a decimal");
	refused("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5.0\r\n\r\n", "is not a decimal");
	refused("POST / HTTP/1.1\r\nHost: a\r\nContent-Length:\r\n\r\n", "is not a decimal");
	refused("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5,\r\n\r\n", "is not a decimal");
	refused("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: \"5\"\r\n\r\n", "is not a decimal");
}

static void test_http_refuses_content_length_past_2_53(void **state)
{
	(void)state;
	refused("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 9007199254740992\r\n\r\n",
		"larger than 2^53-1");
	refused("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 18446744073709551616\r\n\r\n",
		"larger than 2^53-1");
	refused("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: "
		"99999999999999999999999999999999999999\r\n\r\n",
		"\"99999999...\" is larger");
}

static void test_http_reads_chunked_transfer_encoding(void **state)
{
	struct netns_http_request req;

	(void)state;
	parse_ok(S("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"), &req);
	assert_int_equal(req.body, NETNS_HTTP_BODY_CHUNKED);
	assert_int_equal(req.content_length, 0);
	parse_ok(S("POST / HTTP/1.1\r\nHost: a\r\ntransfer-encoding: gzip, Chunked\r\n\r\n"), &req);
	assert_int_equal(req.body, NETNS_HTTP_BODY_CHUNKED);
}

static void test_http_refuses_transfer_encoding_not_ending_in_chunked(void **state)
{
	(void)state;
	refused("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n",
		"does not end in chunked");
	refused("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, identity\r\n\r\n",
		"chunked is not the last coding");
	refused("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, chunked\r\n\r\n",
		"chunked is not the last coding");
	refused("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: xchunked\r\n\r\n",
		"does not end in chunked");
	refused("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked;q=1\r\n\r\n",
		"not a coding name");
	refused("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: \"chunked\"\r\n\r\n",
		"not a coding name");
	refused("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: , chunked\r\n\r\n",
		"not a coding name");
	refused("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\r\n\r\n", "not a coding name");
}

static void test_http_refuses_two_transfer_encoding_headers(void **state)
{
	(void)state;
	refused("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: "
		"x\r\n\r\n",
		"More than one Transfer-Encoding");
	refused("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: "
		"chunked\r\n\r\n",
		"does not end in chunked");
	refused("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n"
		"TRANSFER-ENCODING: chunked\r\n\r\n",
		"More than one Transfer-Encoding");
}

static void test_http_refuses_cl_te(void **state)
{
	(void)state;
	refused("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 6\r\nTransfer-Encoding: "
		"chunked\r\n\r\n0\r\n\r\nG",
		"Both Transfer-Encoding and Content-Length");
}

static void test_http_refuses_te_cl(void **state)
{
	(void)state;
	refused("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: "
		"3\r\n\r\n8\r\nSMUGGLED\r\n0\r\n\r\n",
		"Both Transfer-Encoding and Content-Length");
	refused("POST / HTTP/1.1\r\nHost: a\r\ntransfer-encoding: chunked\r\ncontent-length: "
		"0\r\n\r\n",
		"Both Transfer-Encoding and Content-Length");
}

static void test_http_refuses_framing_headers_spelled_with_underscores(void **state)
{
	struct netns_http_request req;

	(void)state;
	refused("POST / HTTP/1.1\r\nHost: a\r\nTransfer_Encoding: chunked\r\n\r\n",
		"spells a framing header with '_'");
	refused("POST / HTTP/1.1\r\nHost: a\r\ncontent_length: 5\r\n\r\n",
		"spells a framing header with '_'");
	parse_ok(S("GET / HTTP/1.1\r\nHost: a\r\nX_Trace_Id: 5\r\n\r\n"), &req);
}

static void test_http_refuses_transfer_encoding_in_http_1_0(void **state)
{
	(void)state;
	refused("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
		"Transfer-Encoding in an HTTP/1.0 request");
}

static void test_http_1_1_keeps_alive_unless_connection_close(void **state)
{
	struct netns_http_request req;

	(void)state;
	parse_ok(S("GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive\r\n\r\n"), &req);
	assert_true(req.keep_alive);
	parse_ok(S("GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, CLOSE\r\n\r\n"), &req);
	assert_false(req.keep_alive);
	parse_ok(S("GET / HTTP/1.1\r\nHost: a\r\nConnection: te\r\nconnection: ,close,\r\n\r\n"),
		 &req);
	assert_false(req.keep_alive);
	parse_ok(S("GET / HTTP/1.1\r\nHost: a\r\nConnection: closed\r\n\r\n"), &req);
	assert_true(req.keep_alive);
	parse_ok(S("GET / HTTP/1.1\r\nHost: a\r\nProxy-Connection: close\r\n\r\n"), &req);
	assert_true(req.keep_alive);
	refused("GET / HTTP/1.1\r\nHost: a\r\nConnection: close;x\r\n\r\n", "not an option name");
	refused("GET / HTTP/1.1\r\nHost: a\r\nConnection: keep alive\r\n\r\n",
		"not an option name");
}

static void test_http_1_0_keeps_alive_only_when_asked(void **state)
{
	struct netns_http_request req;

	(void)state;
	parse_ok(S("GET / HTTP/1.0\r\n\r\n"), &req);
	assert_false(req.keep_alive);
	parse_ok(S("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n"), &req);
	assert_true(req.keep_alive);
	parse_ok(S("GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n"), &req);
	assert_false(req.keep_alive);
}

static void test_http_every_prefix_of_a_valid_request_needs_more(void **state)
{
	static const char *const requests[] = {
	    CURL_GET,	CURL_POST,     CURL_PROXY_GET,	CURL_CONNECT,
	    URLLIB_GET, GIT_INFO_REFS, GIT_UPLOAD_PACK, "GET / HTTP/1.0\r\n\r\n",
	};
	struct netns_http_request req;
	struct al_error err = {0};
	int r;

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(requests); i++) {
		size_t len = strlen(requests[i]);

		/* Byte by byte, as a slow client sends: nothing is decided before the last. */
		for (size_t n = 0; n < len; n++) {
			r = parse_copy(requests[i], n, &req, &err);
			if (r != -EAGAIN)
				fail_msg("request %zu, %zu of %zu bytes: %d (%s)", i, n, len, r,
					 err.msg);
		}
		assert_int_equal(parse_copy(requests[i], len, &req, &err), 0);
		assert_int_equal(req.head_len, len);
	}
}

static void test_http_pipelined_requests_are_delimited_by_head_len(void **state)
{
	static const char two[] = URLLIB_GET CURL_POST CURL_POST_BODY GIT_UPLOAD_PACK
	    "4\r\n0000\r\n1;x=\"y\"\r\nA\r\n0\r\n\r\n" CURL_GET;
	struct netns_http_request req;
	uint64_t size;
	size_t off = 0, line_len;

	(void)state;
	parse_ok(two, sizeof(two) - 1, &req);
	assert_int_equal(req.head_len, strlen(URLLIB_GET));
	off += req.head_len;

	parse_ok(two + off, sizeof(two) - 1 - off, &req);
	assert_span(req.method, req.method_len, "POST");
	assert_int_equal(req.body, NETNS_HTTP_BODY_LENGTH);
	off += req.head_len + req.content_length;

	parse_ok(two + off, sizeof(two) - 1 - off, &req);
	assert_int_equal(req.body, NETNS_HTTP_BODY_CHUNKED);
	off += req.head_len;
	do {
		assert_int_equal(
		    netns_http_parse_chunk_size(two + off, sizeof(two) - 1 - off, &size, &line_len),
		    0);
		off += line_len + size + (size > 0 ? 2 : 0);
	} while (size > 0);
	assert_memory_equal(two + off, "\r\n", 2); /* the empty trailer section */
	off += 2;

	parse_ok(two + off, sizeof(two) - 1 - off, &req);
	assert_span(req.host, req.host_len, "api.github.com");
	assert_int_equal(off + req.head_len, sizeof(two) - 1);
}

/* A request of exactly size bytes whose last header pads it out. */
static char *padded_request(size_t size)
{
	static const char head[] = "GET / HTTP/1.1\r\nHost: a\r\nX-Pad: ";
	char *p = malloc(size);

	assert_non_null(p);
	assert_true(size >= sizeof(head) + 4);
	memcpy(p, head, sizeof(head) - 1);
	memset(p + sizeof(head) - 1, 'x', size - (sizeof(head) - 1) - 4);
	memcpy(p + size - 4, "\r\n\r\n", 4);
	return p;
}

static void test_http_limits_the_head_size(void **state)
{
	struct netns_http_request req;
	struct al_error err = {0};
	char *p;

	(void)state;
	p = padded_request(NETNS_HTTP_HEAD_MAX);
	assert_int_equal(netns_http_parse_request(p, NETNS_HTTP_HEAD_MAX, &req, &err), 0);
	assert_int_equal(req.head_len, NETNS_HTTP_HEAD_MAX);
	/* Still incomplete just below the limit; at the limit, it can never complete. */
	assert_int_equal(netns_http_parse_request(p, NETNS_HTTP_HEAD_MAX - 1, &req, &err), -EAGAIN);
	free(p);

	p = padded_request(NETNS_HTTP_HEAD_MAX + 1);
	assert_int_equal(netns_http_parse_request(p, NETNS_HTTP_HEAD_MAX - 1, &req, &err), -EAGAIN);
	assert_int_equal(netns_http_parse_request(p, NETNS_HTTP_HEAD_MAX, &req, &err), -EMSGSIZE);
	assert_int_equal(netns_http_parse_request(p, NETNS_HTTP_HEAD_MAX + 1, &req, &err),
			 -EMSGSIZE);
	assert_non_null(strstr(err.msg, "longer than"));
	free(p);
}

/* A request with n headers: Host and n - 1 others. */
static size_t many_headers(char *buf, size_t size, size_t n)
{
	size_t o = (size_t)snprintf(buf, size, "GET / HTTP/1.1\r\nHost: a\r\n");

	for (size_t i = 1; i < n; i++)
		o += (size_t)snprintf(buf + o, size - o, "X-%zu: %zu\r\n", i, i);
	o += (size_t)snprintf(buf + o, size - o, "\r\n");
	assert_true(o < size);
	return o;
}

static void test_http_limits_the_header_count(void **state)
{
	struct netns_http_request req;
	struct al_error err = {0};
	char buf[4096];
	size_t len;

	(void)state;
	len = many_headers(buf, sizeof(buf), NETNS_HTTP_HEADERS_MAX);
	assert_int_equal(netns_http_parse_request(buf, len, &req, &err), 0);
	assert_int_equal(req.n_headers, NETNS_HTTP_HEADERS_MAX);
	assert_span(req.headers[NETNS_HTTP_HEADERS_MAX - 1].value,
		    req.headers[NETNS_HTTP_HEADERS_MAX - 1].value_len, "99");

	len = many_headers(buf, sizeof(buf), NETNS_HTTP_HEADERS_MAX + 1);
	refused_with(buf, len, -EMSGSIZE, "More than 100 headers");
}

static void test_http_messages_quote_few_bytes_escaped(void **state)
{
	struct netns_http_request req;
	struct al_error err = {0};

	(void)state;
	assert_int_equal(netns_http_parse_request(S("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: "
						    "1\xff\"\\34567890123456789\r\n\r\n"),
						  &req, &err),
			 -EBADMSG);
	assert_string_equal(err.msg,
			    "Content-Length \"1\\xff\\x22\\x5c3456...\" is not a decimal number");
}

static void chunk_ok(const char *line, uint64_t size)
{
	size_t len = strlen(line), line_len = 0;
	uint64_t got = 0;
	char *p = copy(line, len);

	if (netns_http_parse_chunk_size(p, len, &got, &line_len) != 0)
		fail_msg("chunk-size line \"%s\" refused", line);
	assert_int_equal(got, size);
	assert_int_equal(line_len, len);
	for (size_t i = 0; i < len; i++)
		if (netns_http_parse_chunk_size(p, i, &got, &line_len) != -EAGAIN)
			fail_msg("prefix of %zu bytes of \"%s\" does not need more", i, line);
	free(p);
}

/* Parses a chunk-size line, which must leave the outputs alone unless it passes. */
static int chunk_n(const char *buf, size_t len)
{
	size_t line_len = 7;
	uint64_t size = 7;
	char *p = copy(buf, len);
	int r;

	r = netns_http_parse_chunk_size(p, len, &size, &line_len);
	free(p);
	if (r < 0) {
		assert_int_equal(size, 7);
		assert_int_equal(line_len, 7);
	}
	return r;
}

#define chunk(lit) chunk_n(S(lit))

static void test_http_reads_chunk_sizes(void **state)
{
	(void)state;
	chunk_ok("0\r\n", 0);
	chunk_ok("1a2B\r\n", 0x1a2b);
	chunk_ok("00000000000000ff\r\n", 0xff);
	chunk_ok("1fffffffffffff\r\n", (UINT64_C(1) << 53) - 1);
	assert_int_equal(chunk("1a\r\nbody"), 0);
}

static void test_http_reads_chunk_extensions(void **state)
{
	(void)state;
	chunk_ok("5;name\r\n", 5);
	chunk_ok("5;name=value\r\n", 5);
	chunk_ok("5;a=1;b;c=\"quoted \\\" string;\\\\\"\r\n", 5);
	chunk_ok("5 ; a = b\t;c\r\n", 5);
	chunk_ok("5;a=\"\"\r\n", 5);
	assert_int_equal(chunk("5;\r\n"), -EBADMSG);
	assert_int_equal(chunk("5;=x\r\n"), -EBADMSG);
	assert_int_equal(chunk("5;a=\r\n"), -EBADMSG);
	assert_int_equal(chunk("5;a=b c\r\n"), -EBADMSG);
	assert_int_equal(chunk("5;a \r\n"), -EBADMSG);
	assert_int_equal(chunk("5;a=\"x\ny\"\r\n"), -EBADMSG);
	assert_int_equal(chunk("5;a=\"x\0y\"\r\n"), -EBADMSG);
	assert_int_equal(chunk("5;a=\"unterminated\r\n"), -EBADMSG);
	assert_int_equal(chunk("5;a=\"unterminated"), -EAGAIN);
	assert_int_equal(chunk("5;a@b\r\n"), -EBADMSG);
}

static void test_http_refuses_chunk_size_past_16_digits_or_2_53(void **state)
{
	(void)state;
	assert_int_equal(chunk("20000000000000\r\n"), -EBADMSG);
	assert_int_equal(chunk("ffffffffffffffff\r\n"), -EBADMSG);
	assert_int_equal(chunk("10000000000000000\r\n"), -EBADMSG);
	assert_int_equal(chunk("00000000000000001\r\n"), -EBADMSG);
}

static void test_http_chunk_size_line_needs_crlf(void **state)
{
	(void)state;
	assert_int_equal(chunk(""), -EAGAIN);
	assert_int_equal(chunk("5"), -EAGAIN);
	assert_int_equal(chunk("5\r"), -EAGAIN);
	assert_int_equal(chunk("5\n"), -EBADMSG);
	assert_int_equal(chunk("5\rx"), -EBADMSG);
	assert_int_equal(chunk("5\r\r\n"), -EBADMSG);
	assert_int_equal(chunk("5;a\n"), -EBADMSG);
	assert_int_equal(chunk("5 \r\n"), -EBADMSG);
}

static void test_http_refuses_chunk_size_that_is_not_hex(void **state)
{
	(void)state;
	assert_int_equal(chunk("\r\n"), -EBADMSG);
	assert_int_equal(chunk("g\r\n"), -EBADMSG);
	assert_int_equal(chunk("-5\r\n"), -EBADMSG);
	assert_int_equal(chunk("+5\r\n"), -EBADMSG);
	assert_int_equal(chunk(" 5\r\n"), -EBADMSG);
	assert_int_equal(chunk("0x5\r\n"), -EBADMSG);
	assert_int_equal(chunk("5g\r\n"), -EBADMSG);
}

static void test_http_refuses_endless_chunk_extensions(void **state)
{
	size_t len = 8192, line_len;
	uint64_t size;
	char *p = malloc(len);

	(void)state;
	assert_non_null(p);
	memcpy(p, "5;a=", 4);
	memset(p + 4, 'x', len - 4);
	assert_int_equal(netns_http_parse_chunk_size(p, 4095, &size, &line_len), -EAGAIN);
	assert_int_equal(netns_http_parse_chunk_size(p, 4096, &size, &line_len), -EBADMSG);
	assert_int_equal(netns_http_parse_chunk_size(p, len, &size, &line_len), -EBADMSG);
	/* A line of exactly the limit still passes. */
	memcpy(p + 4094, "\r\n", 2);
	assert_int_equal(netns_http_parse_chunk_size(p, len, &size, &line_len), 0);
	assert_int_equal(line_len, 4096);
	free(p);
}

/* What the proxy's sniff takes for HTTP (its flow) and for another protocol (spliced): every
 * prefix of a request line waits for more, a whole one is HTTP, and the first byte that no
 * request line could have says "not HTTP" at once. */
static void test_http_request_line_begins_tells_http_from_other_protocols(void **state)
{
	static const struct {
		const char *text;
		int want;
	} cases[] = {
	    {"GET / HTTP/1.1\r\n", 1},
	    {"GET /a?b=c HTTP/1.0\r\nHost: x\r\n", 1},
	    {"VERSION-CONTROL /x HTTP/1.1\r\n", 1},
	    {"get / HTTP/1.1\r\n", 1}, /* a token, as the parser takes it */
	    {"GET http://a.test:8080/ HTTP/1.1\r\n", 1},
	    {"PING\r\n", 0},	    /* Redis's inline command */
	    {"get key\r\n", 0},	    /* memcached */
	    {"SET k 0 0 1\r\n", 0}, /* memcached, "0" is no version */
	    {"GET / HTTP/2.0\r\n", 0},
	    {"GET / HTTP/1.2\r\n", 0},
	    {"GET / HTTP/1.1\n", 0}, /* a bare LF, which the parser refuses */
	    {"GET  / HTTP/1.1\r\n", 0},
	    {"GET / HTTP/1.1 \r\n", 0},
	    {" GET / HTTP/1.1\r\n", 0},
	    {"\r\nGET / HTTP/1.1\r\n", 0},
	    {"GET /\x7f HTTP/1.1\r\n", 0},
	    {"EHLO x\r\n", 0},
	    {"GETTHEREALLYLONGMETHODNAMETHATGOESON / HTTP/1.1\r\n", 0},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *t = cases[i].text;
		size_t n = strlen(t), first_no = n;
		int last = -EAGAIN;

		/* The answer on each prefix: -EAGAIN up to the byte that decides, then that. */
		for (size_t k = 1; k <= n; k++) {
			int r = netns_http_request_line_begins(t, k);

			if (last != -EAGAIN) {
				if (r != last)
					fail_msg("case %zu \"%s\": %d after %d at %zu", i, t, r,
						 last, k);
				continue;
			}
			if (r == 0 && first_no == n)
				first_no = k;
			last = r;
		}
		if (last != cases[i].want)
			fail_msg("case %zu \"%s\": %d, not %d", i, t, last, cases[i].want);
		if (cases[i].want == 0 && first_no == n && t[n - 1] != '\n')
			fail_msg("case %zu \"%s\": told only at its end", i, t);
	}
	assert_int_equal(netns_http_request_line_begins("", 0), -EAGAIN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_http_reads_curl_get_with_its_default_headers),
	    cmocka_unit_test(test_http_reads_curl_post_with_content_length),
	    cmocka_unit_test(test_http_reads_urllib_request_that_closes),
	    cmocka_unit_test(test_http_reads_git_smart_http_requests),
	    cmocka_unit_test(test_http_reads_connect_to_host_and_port),
	    cmocka_unit_test(test_http_refuses_connect_without_host_and_port),
	    cmocka_unit_test(test_http_refuses_connect_with_content),
	    cmocka_unit_test(test_http_reads_absolute_form_target),
	    cmocka_unit_test(test_http_refuses_absolute_form_a_url_parser_could_misread),
	    cmocka_unit_test(test_http_accepts_asterisk_form_only_with_options),
	    cmocka_unit_test(test_http_accepts_only_http_1_0_and_1_1),
	    cmocka_unit_test(test_http_refuses_malformed_request_lines),
	    cmocka_unit_test(test_http_methods_are_tokens_and_case_sensitive),
	    cmocka_unit_test(test_http_header_values_skip_and_trim_whitespace),
	    cmocka_unit_test(test_http_refuses_obs_fold),
	    cmocka_unit_test(test_http_refuses_whitespace_before_colon),
	    cmocka_unit_test(test_http_refuses_header_names_that_are_not_tokens),
	    cmocka_unit_test(test_http_refuses_control_characters),
	    cmocka_unit_test(test_http_refuses_bare_lf_and_bare_cr),
	    cmocka_unit_test(test_http_needs_one_host_header_in_http_1_1),
	    cmocka_unit_test(test_http_refuses_host_that_is_not_host_and_port),
	    cmocka_unit_test(test_http_without_framing_headers_has_no_body),
	    cmocka_unit_test(test_http_reads_content_length),
	    cmocka_unit_test(test_http_accepts_repeated_content_length_only_when_identical),
	    cmocka_unit_test(test_http_refuses_content_length_that_is_not_digits),
	    cmocka_unit_test(test_http_refuses_content_length_past_2_53),
	    cmocka_unit_test(test_http_reads_chunked_transfer_encoding),
	    cmocka_unit_test(test_http_refuses_transfer_encoding_not_ending_in_chunked),
	    cmocka_unit_test(test_http_refuses_two_transfer_encoding_headers),
	    cmocka_unit_test(test_http_refuses_cl_te),
	    cmocka_unit_test(test_http_refuses_te_cl),
	    cmocka_unit_test(test_http_refuses_framing_headers_spelled_with_underscores),
	    cmocka_unit_test(test_http_refuses_transfer_encoding_in_http_1_0),
	    cmocka_unit_test(test_http_1_1_keeps_alive_unless_connection_close),
	    cmocka_unit_test(test_http_1_0_keeps_alive_only_when_asked),
	    cmocka_unit_test(test_http_every_prefix_of_a_valid_request_needs_more),
	    cmocka_unit_test(test_http_pipelined_requests_are_delimited_by_head_len),
	    cmocka_unit_test(test_http_limits_the_head_size),
	    cmocka_unit_test(test_http_limits_the_header_count),
	    cmocka_unit_test(test_http_messages_quote_few_bytes_escaped),
	    cmocka_unit_test(test_http_reads_chunk_sizes),
	    cmocka_unit_test(test_http_reads_chunk_extensions),
	    cmocka_unit_test(test_http_refuses_chunk_size_past_16_digits_or_2_53),
	    cmocka_unit_test(test_http_chunk_size_line_needs_crlf),
	    cmocka_unit_test(test_http_refuses_chunk_size_that_is_not_hex),
	    cmocka_unit_test(test_http_refuses_endless_chunk_extensions),
	    cmocka_unit_test(test_http_request_line_begins_tells_http_from_other_protocols),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
