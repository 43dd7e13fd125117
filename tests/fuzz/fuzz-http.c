/* fuzz-http: the egress proxy parses HTTP/1.1 request heads and chunk-size lines straight from
 * the sandbox. The input is parsed as a request whose every span must lie in its head; then its
 * prefixes, which must need more bytes or get the whole input's answer, as they would when the
 * request arrives in pieces; then as a chunk-size line, at its start and after a chunked head. */

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "netns/netns-internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool inside(const char *p, size_t n, const char *start, size_t len)
{
	return p >= start && n <= len && (size_t)(p - start) <= len - n;
}

static bool has_byte(const char *p, size_t n, const char *set)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] == '\0' || strchr(set, p[i]))
			return true;
	return false;
}

static void check_request(const char *buf, size_t len, const struct netns_http_request *req)
{
	bool host_found = false;

	if (req->head_len < strlen("G / HTTP/1.0\r\n\r\n") || req->head_len > len ||
	    req->head_len > NETNS_HTTP_HEAD_MAX ||
	    memcmp(buf + req->head_len - 4, "\r\n\r\n", 4) != 0)
		__builtin_trap();
	if (req->method != buf || req->method_len == 0 || req->target_len == 0 ||
	    req->target != buf + req->method_len + 1 ||
	    !inside(req->target, req->target_len, buf, req->head_len) ||
	    has_byte(req->method, req->method_len + 1 + req->target_len, "\r\n\t"))
		__builtin_trap();
	if (req->minor_version != 0 && req->minor_version != 1)
		__builtin_trap();
	if (req->n_headers > NETNS_HTTP_HEADERS_MAX)
		__builtin_trap();
	for (size_t i = 0; i < req->n_headers; i++) {
		const struct netns_http_header *h = &req->headers[i];

		if (h->name_len == 0 || !inside(h->name, h->name_len, buf, req->head_len) ||
		    !inside(h->value, h->value_len, buf, req->head_len) ||
		    h->value < h->name + h->name_len + 1 || h->name[h->name_len] != ':' ||
		    has_byte(h->name, h->name_len, " \t\r\n:") ||
		    has_byte(h->value, h->value_len, "\r\n"))
			__builtin_trap();
		/* Trimmed: no whitespace at either end of a value. */
		if (h->value_len > 0 &&
		    (strchr(" \t", h->value[0]) || strchr(" \t", h->value[h->value_len - 1])))
			__builtin_trap();
		if (req->host == h->value && req->host_len == h->value_len)
			host_found = true;
	}
	if (req->host && !host_found)
		__builtin_trap();
	if (req->minor_version == 1 && !req->host)
		__builtin_trap();
	if (req->connect && req->body != NETNS_HTTP_BODY_NONE)
		__builtin_trap();
	if (req->body != NETNS_HTTP_BODY_LENGTH && req->content_length != 0)
		__builtin_trap();
	if (req->content_length > (UINT64_C(1) << 53) - 1)
		__builtin_trap();
}

static bool same_request(const struct netns_http_request *a, const struct netns_http_request *b)
{
	return a->method == b->method && a->method_len == b->method_len && a->target == b->target &&
	       a->target_len == b->target_len && a->minor_version == b->minor_version &&
	       a->n_headers == b->n_headers && a->head_len == b->head_len && a->body == b->body &&
	       a->content_length == b->content_length && a->host == b->host &&
	       a->host_len == b->host_len && a->connect == b->connect &&
	       a->keep_alive == b->keep_alive &&
	       memcmp(a->headers, b->headers, a->n_headers * sizeof(a->headers[0])) == 0;
}

/* A prefix needs more bytes, or is answered as the whole input is: in particular, once it holds
 * the whole head, it gets the same request. */
static void check_prefix(const char *buf, size_t n, int r_whole,
			 const struct netns_http_request *whole)
{
	struct netns_http_request req;
	struct al_error err = {0};
	int r;

	r = netns_http_parse_request(buf, n, &req, &err);
	if (r_whole == 0 && n < whole->head_len && r != -EAGAIN)
		__builtin_trap();
	if (r == -EAGAIN)
		return;
	if (r != r_whole || (r == 0 && !same_request(&req, whole)))
		__builtin_trap();
	if (r < 0 && err.code != r)
		__builtin_trap();
}

/* The sniff's test for a request line (netns_http_request_line_begins()) says HTTP for every
 * request the parser takes (a method it would not take for one aside), and a prefix's answer is
 * "more" or the whole input's. */
static void check_request_line(const char *buf, size_t size, int r_parse,
			       const struct netns_http_request *req)
{
	int v = netns_http_request_line_begins(buf, size);

	if (v != 1 && v != 0 && v != -EAGAIN)
		__builtin_trap();
	if (r_parse == 0 && req->method_len <= NETNS_HTTP_METHOD_MAX && v != 1)
		__builtin_trap();
	for (size_t n = size / 2; n < size; n += MAX((size_t)1, (size - n) / 2)) {
		int w = netns_http_request_line_begins(buf, n);

		if (w != -EAGAIN && w != v)
			__builtin_trap();
	}
}

static int hex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static void check_chunk_size(const char *buf, size_t len)
{
	uint64_t size, value = 0;
	size_t line_len, digits = 0;
	int r;

	r = netns_http_parse_chunk_size(buf, len, &size, &line_len);
	if (r != 0 && r != -EAGAIN && r != -EBADMSG)
		__builtin_trap();
	if (r != 0)
		return;
	if (line_len < 3 || line_len > len || memcmp(buf + line_len - 2, "\r\n", 2) != 0 ||
	    has_byte(buf, line_len - 2, "\r\n"))
		__builtin_trap();
	/* The size is the hex number the line starts with. */
	for (; digits < line_len && hex(buf[digits]) >= 0; digits++)
		value = value << 4 | (uint64_t)hex(buf[digits]);
	if (digits == 0 || digits > 16 || value != size)
		__builtin_trap();
	/* Any shorter piece of the line needs more bytes. */
	if (netns_http_parse_chunk_size(buf, line_len - 1, &size, &line_len) != -EAGAIN ||
	    netns_http_parse_chunk_size(buf, digits, &size, &line_len) != -EAGAIN)
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	struct netns_http_request req, untouched;
	struct al_error err = {0};
	int r;

	/* Refused input leaves the output alone. */
	memset(&req, 0xa5, sizeof(req));
	memset(&untouched, 0xa5, sizeof(untouched));
	r = netns_http_parse_request(buf, size, &req, &err);
	if (r != 0 && r != -EAGAIN && r != -EBADMSG && r != -EMSGSIZE)
		__builtin_trap();
	if (r < 0 && memcmp(&req, &untouched, sizeof(req)) != 0)
		__builtin_trap();
	if (r < 0 && r != -EAGAIN && (err.code != r || err.msg[0] == '\0'))
		__builtin_trap();
	if (r == 0)
		check_request(buf, size, &req);

	if (size > 0) {
		check_prefix(buf, size / 2, r, &req);
		check_prefix(buf, size - 1, r, &req);
	}
	if (r == 0) {
		check_prefix(buf, req.head_len - 1, r, &req);
		check_prefix(buf, req.head_len, r, &req);
	}

	check_request_line(buf, size, r, &req);
	check_chunk_size(buf, size);
	if (r == 0 && req.body == NETNS_HTTP_BODY_CHUNKED)
		check_chunk_size(buf + req.head_len, size - req.head_len);
	return 0;
}
