/* Fuzz target: the first bytes of a connection the sandbox opens to a TLS port, as the egress
 * proxy peeks at them. Each input is parsed as it came and, so that mutations reach the extensions
 * without having to keep a record and a handshake header right, also as the body of a ClientHello
 * wrapped in correct ones. Checks what the proxy relies on: the result is 0, -EAGAIN or -EBADMSG;
 * -EAGAIN never at NETNS_TLS_HELLO_MAX bytes nor for a complete message; a parsed sni is "" or a
 * lower-case host name that is no IPv4 literal; and the prefixes of a small input agree with each
 * other: once refused, refused for good; once parsed, parsed the same. */

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "netns/netns-internal.h"

#define PREFIXES_MAX 512 /* inputs up to this size have each prefix parsed too */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool is_number(const char *s, size_t n)
{
	if (n >= 2 && s[0] == '0' && s[1] == 'x')
		return strspn(s + 2, "0123456789abcdef") >= n - 2;
	return strspn(s, "0123456789") >= n;
}

static bool is_host_name(const char *s)
{
	size_t len = strnlen(s, NETNS_DNS_NAME_MAX + 1);
	const char *label = s;

	if (len > NETNS_DNS_NAME_MAX)
		return false;
	for (;;) {
		size_t n = strspn(label, "abcdefghijklmnopqrstuvwxyz0123456789-");

		if (n < 1 || n > 63)
			return false;
		if (label[n] == '\0')
			return !is_number(label, n);
		if (label[n] != '.')
			return false;
		label += n + 1;
	}
}

static int parse(const uint8_t *buf, size_t len, struct netns_tls_hello *ret)
{
	int r = netns_tls_parse_hello(buf, len, ret);

	if (r != 0 && r != -EAGAIN && r != -EBADMSG)
		abort();
	if (r == -EAGAIN && len >= NETNS_TLS_HELLO_MAX)
		abort();
	if (r == 0 && ret->sni[0] != '\0' && !is_host_name(ret->sni))
		abort();
	return r;
}

/* Parses each prefix of data from the end of an exact-size copy, so that a read past the prefix
 * is a read past the allocation. */
static void parse_prefixes(const uint8_t *data, size_t size)
{
	struct netns_tls_hello first = {.sni = ""}, h;
	uint8_t *copy = malloc(size > 0 ? size : 1);
	int last = -EAGAIN;

	if (!copy)
		return;
	for (size_t i = 0; i <= size; i++) {
		int r;

		memcpy(copy + size - i, data, i);
		r = parse(copy + size - i, i, &h);
		if ((last == -EBADMSG && r != -EBADMSG) || (last == 0 && r != 0))
			abort();
		if (r == 0 && last == 0 &&
		    (strcmp(h.sni, first.sni) != 0 || h.alpn_h2 != first.alpn_h2 ||
		     h.alpn_http11 != first.alpn_http11))
			abort();
		if (r == 0 && last != 0)
			first = h;
		last = r;
	}
	free(copy);
}

/* data as a ClientHello's body in one record: a complete message, parsed or refused. */
static void parse_as_body(const uint8_t *data, size_t size)
{
	size_t len = 5 + 4 + size;
	struct netns_tls_hello h;
	uint8_t *buf;

	if (4 + size > 16 * 1024)
		return;
	buf = malloc(len);
	if (!buf)
		return;
	memcpy(buf,
	       (const uint8_t[]){0x16, 0x03, 0x01, (uint8_t)((4 + size) >> 8), (uint8_t)(4 + size),
				 0x01, 0x00, (uint8_t)(size >> 8), (uint8_t)size},
	       9);
	memcpy(buf + 9, data, size);
	if (parse(buf, len, &h) == -EAGAIN)
		abort();
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct netns_tls_hello h;

	if (size <= PREFIXES_MAX)
		parse_prefixes(data, size);
	else
		(void)parse(data, size, &h);
	parse_as_body(data, size);
	return 0;
}
