/* Fuzz target: a DNS query as the sandbox's resolver (or anything in the sandbox) sends it to the
 * proxy's responder. Checks what the responder relies on: a parsed name is lower-case host-name
 * characters within the limit, and the answer to it is well-formed and parses back as no query
 * (it is an answer). */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "netns/netns-internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t addr[4] = {198, 18, 0, 1};
	struct netns_dns_query q, again;
	uint8_t out[NETNS_DNS_MSG_MAX];
	size_t n;
	int r;

	r = netns_dns_parse_query(data, size, &q);
	if (r == -EBADMSG)
		return 0;
	if (r != 0 && r != -EOPNOTSUPP)
		abort();
	if (strlen(q.name) > NETNS_DNS_NAME_MAX ||
	    strspn(q.name, "abcdefghijklmnopqrstuvwxyz0123456789-_.") != strlen(q.name) ||
	    q.question + q.question_len > data + size)
		abort();
	n = netns_dns_answer(&q, NETNS_DNS_NOERROR, addr, 30, out, sizeof(out));
	if (n != q.question_len + 12 + 16)
		abort();
	if (netns_dns_parse_query(out, n, &again) != -EBADMSG)
		abort();
	return 0;
}
