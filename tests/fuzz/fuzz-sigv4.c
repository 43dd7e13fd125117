/* fuzz-sigv4: the egress proxy parses a SigV4 Authorization header and a presigned query straight
 * from the sandbox (netns/sigv4.c). The input's first line is parsed as an Authorization value
 * and as a query; when either parses, its parts must lie in the struct's own buffers, have their
 * documented shape, and the rest of the input (as a request target, and a header) is signed: any
 * answer but 0, -EBADMSG and -ENOMEM is a bug. */

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "netns/sigv4-internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool inside(const struct netns_sigv4_str *s, const char *buf, size_t size)
{
	return s->p >= buf && s->n <= size && (size_t)(s->p - buf) <= size - s->n;
}

static void check_and_sign(const struct netns_sigv4 *s, const char *rest, size_t n)
{
	const struct netns_http_header h[] = {
	    {.name = "Host", .name_len = 4, .value = rest, .value_len = n},
	    {.name = "x-amz-date", .name_len = 10, .value = "20130524T000000Z", .value_len = 16},
	};
	struct netns_sigv4_request rq = {
	    .method = {"GET", 3},
	    .target = {rest, n},
	    .headers = h,
	    .n_headers = 2,
	    .amz_date = {"20130524T000000Z", 16},
	    .payload_hash = {"UNSIGNED-PAYLOAD", 16},
	};
	char sig[NETNS_SIGV4_HEX_LEN + 1];
	int r;

	if (!inside(&s->key_id, s->credential, sizeof(s->credential)) ||
	    !inside(&s->date, s->credential, sizeof(s->credential)) ||
	    !inside(&s->region, s->credential, sizeof(s->credential)) ||
	    !inside(&s->service, s->credential, sizeof(s->credential)) || s->date.n != 8 ||
	    s->key_id.n == 0 || s->region.n == 0 || s->service.n == 0 ||
	    s->signed_headers_len == 0 || s->signed_headers_len > sizeof(s->signed_headers) ||
	    !netns_sigv4_is_hex64(s->signature, strlen(s->signature)))
		__builtin_trap();
	r = netns_sigv4_sign(s, &rq, (const uint8_t *)"secret", 6, sig, NULL);
	if (r != 0 && r != -EBADMSG && r != -ENOMEM)
		__builtin_trap();
	if (r == 0 && !netns_sigv4_is_hex64(sig, strlen(sig)))
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *nl = memchr(data, '\n', size);
	size_t first = nl ? (size_t)(nl - (const char *)data) : size;
	const char *rest = nl ? nl + 1 : (const char *)data + size;
	size_t rest_n = size - first - (nl ? 1 : 0);
	char *line = malloc(first ? first : 1), *tail = malloc(rest_n ? rest_n : 1);
	struct netns_sigv4 *s = malloc(sizeof(*s));
	int r;

	if (!line || !tail || !s)
		abort();
	memcpy(line, data, first);
	memcpy(tail, rest, rest_n);
	r = netns_sigv4_parse_authorization(line, first, s, NULL);
	if (r != 0 && r != 1 && r != -EBADMSG)
		__builtin_trap();
	if (r == 1)
		check_and_sign(s, tail, rest_n);
	r = netns_sigv4_parse_query(line, first, s, NULL);
	if (r != 0 && r != 1 && r != -EBADMSG)
		__builtin_trap();
	if (r == 1) {
		if (!s->presigned)
			__builtin_trap();
		check_and_sign(s, tail, rest_n);
	}
	free(line);
	free(tail);
	free(s);
	return 0;
}
