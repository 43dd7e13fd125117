/* The DNS responder on the proxy's address: the sandbox's only name service. A name some rule
 * lets through gets a synthetic A record (198.18.0.0/15) that the proxy maps back to the name,
 * and an empty AAAA answer (the sandbox has no IPv6 route); every other name gets NXDOMAIN, and
 * other record types are refused. No query is ever passed on, so names cannot carry data out. */

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>

#include "common/audit.h"
#include "netns/proxy-internal.h"
#include "policy/policy.h"

#define SYNTH_TTL 300 /* a synthetic address always stands for the same name */

static const char *type_name(uint16_t qtype, char *buf, size_t size)
{
	switch (qtype) {
	case NETNS_DNS_A:
		return "A";
	case NETNS_DNS_AAAA:
		return "AAAA";
	default:
		(void)snprintf(buf, size, "TYPE%u", qtype);
		return buf;
	}
}

static const char *rcode_name(enum netns_dns_rcode rcode)
{
	switch (rcode) {
	case NETNS_DNS_NOERROR:
		return "NOERROR";
	case NETNS_DNS_NXDOMAIN:
		return "NXDOMAIN";
	case NETNS_DNS_REFUSED:
		return "REFUSED";
	case NETNS_DNS_SERVFAIL:
		return "SERVFAIL";
	default:
		return "NOTIMP";
	}
}

/* The answer to one query: its rcode, and the address when there is one. */
static enum netns_dns_rcode decide(struct netns_proxy *p, const struct netns_dns_query *q,
				   uint8_t addr[4], bool *ret_has_addr)
{
	*ret_has_addr = false;
	if (q->qclass != 1 /* IN */)
		return NETNS_DNS_REFUSED;
	if (!netns_name_may_connect(p->o->policy, q->name)) {
		/* Only the name is reported: which record type was asked is in the audit. */
		proxy_violation(p, "dns", "%s", q->name);
		return NETNS_DNS_NXDOMAIN;
	}
	if (q->qtype == NETNS_DNS_AAAA)
		return NETNS_DNS_NOERROR; /* no records */
	if (q->qtype != NETNS_DNS_A)
		return NETNS_DNS_REFUSED;
	if (netns_synth_addr(p->synth, q->name, addr) < 0)
		return NETNS_DNS_SERVFAIL;
	*ret_has_addr = true;
	return NETNS_DNS_NOERROR;
}

static void answer_one(struct netns_proxy *p, const uint8_t *msg, size_t len,
		       const struct sockaddr_in *from)
{
	uint8_t out[NETNS_DNS_MSG_MAX], addr[4];
	struct netns_dns_query q;
	enum netns_dns_rcode rcode;
	char ip[INET_ADDRSTRLEN] = "-", tbuf[16];
	bool has_addr = false;
	size_t n;
	int r;

	r = netns_dns_parse_query(msg, len, &q);
	if (r == -EBADMSG)
		return; /* nothing to answer to */
	rcode = r < 0 ? NETNS_DNS_NOTIMP : decide(p, &q, addr, &has_addr);
	n = netns_dns_answer(&q, rcode, has_addr ? addr : NULL, SYNTH_TTL, out, sizeof(out));
	(void)sendto(p->dns.fd, out, n, MSG_DONTWAIT, (const struct sockaddr *)from, sizeof(*from));
	if (has_addr)
		(void)inet_ntop(AF_INET, addr, ip, sizeof(ip));
	if (r >= 0 && proxy_audit_admit(p))
		(void)al_audit_event(
		    p->o->audit, "dns",
		    (const struct al_audit_field[]){
			AL_AUDIT_S("name", q.name),
			AL_AUDIT_S("type", type_name(q.qtype, tbuf, sizeof(tbuf))),
			AL_AUDIT_S("verdict", rcode == NETNS_DNS_NOERROR ? "allow" : "deny"),
			AL_AUDIT_S("rcode", rcode_name(rcode)),
			AL_AUDIT_S("answer", ip),
		    },
		    5);
}

void proxy_dns_serve(struct netns_proxy *p)
{
	uint8_t msg[NETNS_DNS_MSG_MAX * 2];

	for (;;) {
		struct sockaddr_in from;
		socklen_t flen = sizeof(from);
		ssize_t n;

		n = recvfrom(p->dns.fd, msg, sizeof(msg), MSG_DONTWAIT, (struct sockaddr *)&from,
			     &flen);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		if (flen != sizeof(from) || from.sin_family != AF_INET)
			continue;
		answer_one(p, msg, (size_t)n, &from);
	}
}
