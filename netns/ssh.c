/* The clear start of an SSH connection (ssh-internal.h has the contract). Nothing here changes
 * a byte: the proxy passes both directions on as they are and only reads along. */

#include <errno.h>
#include <string.h>

#include "common/wire-util.h"
#include "netns/ssh-internal.h"

#define MSG_NEWKEYS 21
#define MSG_KEXINIT 20
#define MSG_KEX_REPLY 31     /* KEXDH_REPLY, KEX_ECDH_REPLY and the hybrids' */
#define MSG_KEX_GEX_REPLY 33 /* diffie-hellman-group-exchange-* */

/* The key exchanges whose reply carries the host key first, and in which message. */
static const struct {
	const char *prefix;
	uint8_t reply;
} kex_replies[] = {
    {"diffie-hellman-group-exchange-", MSG_KEX_GEX_REPLY},
    {"diffie-hellman-group", MSG_KEX_REPLY},
    {"ecdh-sha2-", MSG_KEX_REPLY},
    {"curve25519-sha256", MSG_KEX_REPLY},
    {"sntrup761x25519-sha512", MSG_KEX_REPLY},
    {"mlkem768x25519-sha256", MSG_KEX_REPLY},
};

static int fail(struct netns_ssh_watch *w, int r, struct al_error *err, const char *why)
{
	w->error = r;
	return al_error_set(err, r, "SSH: %s", why);
}

/* The first name of the client's list that the server's holds too (RFC 4253 7.1). */
static bool negotiate(const char *client, const char *server, char *ret, size_t size)
{
	for (const char *c = client; *c;) {
		size_t cl = strcspn(c, ",");

		for (const char *s = server; *s;) {
			size_t sl = strcspn(s, ",");

			if (sl == cl && memcmp(c, s, cl) == 0 && cl < size) {
				memcpy(ret, c, cl);
				ret[cl] = '\0';
				return true;
			}
			s += sl + (s[sl] == ',');
		}
		c += cl + (c[cl] == ',');
	}
	return false;
}

/* KEXINIT: a cookie of 16 bytes, then the kex_algorithms name-list (and more, not read). */
static int kexinit(struct netns_ssh_watch *w, struct netns_ssh_side *side, struct al_wire c,
		   struct al_error *err)
{
	struct al_wire names;

	if (side->kexinit)
		return 0; /* a later exchange's: encrypted by then, never seen here */
	if (c.len < 16)
		return fail(w, -EBADMSG, err, "a KEXINIT too short");
	c.p += 16;
	c.len -= 16;
	if (!al_wire_take_string(&c, &names) || names.len == 0 ||
	    names.len >= sizeof(side->kex_names) || memchr(names.p, '\0', names.len))
		return fail(w, -EBADMSG, err, "a KEXINIT without a valid kex_algorithms list");
	memcpy(side->kex_names, names.p, names.len);
	side->kex_names[names.len] = '\0';
	side->kexinit = true;
	if (w->client.kexinit && w->server.kexinit &&
	    !negotiate(w->client.kex_names, w->server.kex_names, w->kex, sizeof(w->kex)))
		return fail(w, -EBADMSG, err, "the two sides share no key exchange");
	return 0;
}

/* A server's message 31 or 33: the reply with the host key, under the agreed key exchange. */
static int reply(struct netns_ssh_watch *w, uint8_t type, struct al_wire c, struct al_error *err)
{
	struct al_wire key;
	uint8_t want = 0;

	if (!w->kex[0])
		return fail(w, -EBADMSG, err, "a key exchange message before both KEXINITs");
	for (size_t i = 0; i < ELEMENTSOF(kex_replies) && !want; i++)
		if (strncmp(w->kex, kex_replies[i].prefix, strlen(kex_replies[i].prefix)) == 0)
			want = kex_replies[i].reply;
	if (!want)
		return fail(w, -EPROTONOSUPPORT, err,
			    "a key exchange whose host key the proxy cannot read");
	if (type != want)
		return 0; /* diffie-hellman-group-exchange's GROUP (31) */
	if (w->hostkey_len)
		return fail(w, -EBADMSG, err, "a second host key in the first key exchange");
	if (!al_wire_take_string(&c, &key) || key.len == 0 || key.len > sizeof(w->hostkey))
		return fail(w, -EBADMSG, err, "a key exchange reply without a valid host key");
	memcpy(w->hostkey, key.p, key.len);
	w->hostkey_len = key.len;
	return 0;
}

static int packet(struct netns_ssh_watch *w, struct netns_ssh_side *side, bool from_server,
		  const uint8_t *p, size_t n, struct al_error *err)
{
	struct al_wire c = {p + 5, n - 5};
	uint8_t pad = p[4], type;

	if (pad < 4 || (size_t)pad + 1 > n - 4)
		return fail(w, -EBADMSG, err, "a packet with a bad padding length");
	c.len -= pad;
	if (c.len == 0)
		return fail(w, -EBADMSG, err, "an empty packet");
	type = c.p[0];
	c.p++;
	c.len--;
	if (type == MSG_NEWKEYS) {
		side->state = NETNS_SSH_DONE;
		return 0;
	}
	if (type == MSG_KEXINIT)
		return kexinit(w, side, c, err);
	if (from_server && (type == MSG_KEX_REPLY || type == MSG_KEX_GEX_REPLY))
		return reply(w, type, c, err);
	return 0;
}

/* An identification line (RFC 4253 4.2): "SSH-2.0-" or "SSH-1.99-"; a server's other lines
 * before it are counted and skipped. */
static int line(struct netns_ssh_watch *w, struct netns_ssh_side *side, bool from_server,
		const uint8_t *p, size_t n, struct al_error *err)
{
	if (n >= 4 && memcmp(p, "SSH-", 4) == 0) {
		if ((n >= 8 && memcmp(p, "SSH-2.0-", 8) == 0) ||
		    (n >= 9 && memcmp(p, "SSH-1.99-", 9) == 0)) {
			side->state = NETNS_SSH_PACKET;
			return 0;
		}
		return fail(w, -EPROTONOSUPPORT, err, "not SSH protocol 2");
	}
	if (!from_server || ++side->lines > NETNS_SSH_LINES_MAX)
		return fail(w, -EBADMSG, err, "no identification line");
	return 0;
}

/* Takes what of p (n bytes) completes the unit under way: a line, or a packet. Returns the
 * bytes taken. */
static ssize_t step(struct netns_ssh_watch *w, struct netns_ssh_side *side, bool from_server,
		    const uint8_t *p, size_t n, struct al_error *err)
{
	size_t have = netns_buf_len(&side->acc), want, take;
	const uint8_t *u;
	int r;

	if (side->state == NETNS_SSH_IDENT) {
		const uint8_t *nl = memchr(p, '\n', n);

		take = nl ? (size_t)(nl - p) + 1 : n;
		if (have + take > NETNS_SSH_LINE_MAX)
			return fail(w, -EBADMSG, err, "an identification line too long");
		r = netns_buf_append(&side->acc, p, take, NETNS_SSH_LINE_MAX);
		if (r < 0 || !nl)
			return r < 0 ? fail(w, r, err, "out of memory") : (ssize_t)take;
		r = line(w, side, from_server, netns_buf_head(&side->acc), have + take, err);
		netns_buf_consume(&side->acc, have + take);
		return r < 0 ? r : (ssize_t)take;
	}
	/* A packet: its length first (checked as soon as it is whole), then the rest. */
	want = 4;
	if (have >= 4) {
		u = netns_buf_head(&side->acc);
		want = 4 + ((size_t)u[0] << 24 | (size_t)u[1] << 16 | (size_t)u[2] << 8 | u[3]);
	}
	take = MIN(n, want - have);
	r = netns_buf_append(&side->acc, p, take, 4 + NETNS_SSH_PACKET_MAX);
	if (r < 0)
		return fail(w, r, err, "out of memory");
	if (have < 4 && have + take == 4) {
		u = netns_buf_head(&side->acc);
		want = 4 + ((size_t)u[0] << 24 | (size_t)u[1] << 16 | (size_t)u[2] << 8 | u[3]);
		if (want < 4 + 8 || want > 4 + NETNS_SSH_PACKET_MAX)
			return fail(w, -EBADMSG, err, "a packet of a bad length");
		return (ssize_t)take;
	}
	if (have + take == want) {
		r = packet(w, side, from_server, netns_buf_head(&side->acc), want, err);
		netns_buf_consume(&side->acc, want);
		if (r < 0)
			return r;
	}
	return (ssize_t)take;
}

int netns_ssh_feed(struct netns_ssh_watch *w, bool from_server, const uint8_t *p, size_t n,
		   struct al_error *err)
{
	struct netns_ssh_side *side = from_server ? &w->server : &w->client;

	if (w->error < 0)
		return al_error_set(err, w->error, "SSH: refused earlier");
	while (n > 0 && side->state != NETNS_SSH_DONE) {
		ssize_t k = step(w, side, from_server, p, n, err);

		if (k < 0)
			return (int)k;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

const uint8_t *netns_ssh_hostkey(const struct netns_ssh_watch *w, size_t *ret_len)
{
	*ret_len = w->hostkey_len;
	return w->hostkey_len ? w->hostkey : NULL;
}

void netns_ssh_watch_done(struct netns_ssh_watch *w)
{
	netns_buf_done(&w->client.acc);
	netns_buf_done(&w->server.acc);
}
