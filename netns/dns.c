#define LOG_MODULE "netns"

/* The DNS responder's wire format: one question in, one answer out (RFC 1035 4.1). The sandbox
 * writes the query, so every length is checked against the buffer and the name against the
 * characters host names use; a name is never followed through a compression pointer. */

#include <errno.h>
#include <string.h>

#include "netns/netns-internal.h"

#define HEADER_LEN 12
#define FLAG_QR 0x8000
#define FLAG_OPCODE 0x7800
#define FLAG_AA 0x0400
#define FLAG_RD 0x0100
#define FLAG_RA 0x0080
#define LABEL_MAX 63
#define CLASS_IN 1

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static bool is_label_char(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '_';
}

/* Reads the question's name at buf[*off]: labels up to the root label, into name (lower-case,
 * dot-separated, no trailing dot; "" for the root). */
static int parse_name(const uint8_t *buf, size_t len, size_t *off, char *name)
{
	size_t out = 0, p = *off;

	for (;;) {
		uint8_t l;

		if (p >= len)
			return -EBADMSG;
		l = buf[p++];
		if (l == 0)
			break;
		/* 0xC0: a compression pointer; 0x40 and 0x80: reserved label types. */
		if (l > LABEL_MAX || p + l > len)
			return -EBADMSG;
		if (out + (out > 0) + l > NETNS_DNS_NAME_MAX)
			return -EBADMSG;
		if (out > 0)
			name[out++] = '.';
		for (size_t i = 0; i < l; i++) {
			uint8_t c = buf[p + i];

			if (!is_label_char(c))
				return -EBADMSG;
			name[out++] = (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
		}
		p += l;
	}
	name[out] = '\0';
	*off = p;
	return 0;
}

int netns_dns_parse_query(const uint8_t *buf, size_t len, struct netns_dns_query *ret)
{
	struct netns_dns_query q = {0};
	size_t off = HEADER_LEN;
	int r;

	if (len < HEADER_LEN || len > UINT16_MAX)
		return -EBADMSG;
	q.id = get16(buf);
	q.flags = get16(buf + 2);
	if (q.flags & FLAG_QR)
		return -EBADMSG; /* an answer: never answered, or two responders could loop */
	if (get16(buf + 4) != 1 || get16(buf + 6) != 0 || get16(buf + 8) != 0)
		return -EBADMSG;
	r = parse_name(buf, len, &off, q.name);
	if (r < 0)
		return r;
	if (off + 4 > len)
		return -EBADMSG;
	q.qtype = get16(buf + off);
	q.qclass = get16(buf + off + 2);
	q.question = buf + HEADER_LEN;
	q.question_len = off + 4 - HEADER_LEN;
	*ret = q;
	/* A well-formed message of another opcode (IQUERY, STATUS, UPDATE...) gets NOTIMP. */
	return (q.flags & FLAG_OPCODE) ? -EOPNOTSUPP : 0;
}

size_t netns_dns_answer(const struct netns_dns_query *q, enum netns_dns_rcode rcode,
			const uint8_t *addr, uint32_t ttl, uint8_t *buf, size_t size)
{
	size_t n = HEADER_LEN;

	if (size < NETNS_DNS_MSG_MAX || q->question_len > NETNS_DNS_MSG_MAX - HEADER_LEN - 16)
		return 0;
	put16(buf, q->id);
	/* An authoritative answer, recursion "available" (the proxy resolves itself), RD echoed,
	 * the opcode echoed. */
	put16(buf + 2, (uint16_t)(FLAG_QR | (q->flags & (FLAG_OPCODE | FLAG_RD)) | FLAG_AA |
				  FLAG_RA | (rcode & 0xf)));
	put16(buf + 4, 1);
	put16(buf + 6, addr ? 1 : 0);
	put16(buf + 8, 0);
	put16(buf + 10, 0);
	memcpy(buf + n, q->question, q->question_len);
	n += q->question_len;
	if (!addr)
		return n;
	put16(buf + n, 0xc000 | HEADER_LEN); /* the name: the question's */
	put16(buf + n + 2, NETNS_DNS_A);
	put16(buf + n + 4, CLASS_IN);
	put16(buf + n + 6, (uint16_t)(ttl >> 16));
	put16(buf + n + 8, (uint16_t)ttl);
	put16(buf + n + 10, 4);
	memcpy(buf + n + 12, addr, 4);
	return n + 16;
}
