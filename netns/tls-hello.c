/* The TLS ClientHello, as the egress proxy peeks at it (RFC 8446 4.1.2 and 5.1, RFC 5246 7.4.1.2,
 * RFC 6066 3 for server_name, RFC 7301 3.1 for ALPN). The sandbox writes these bytes, so every
 * length is checked against the one that encloses it before anything is read, and a parse that
 * runs out of bytes tells a prefix that may still grow into a hello (-EAGAIN) from one that can
 * never become one (-EBADMSG): the proxy waits only for the former. */

#include <errno.h>
#include <string.h>

#include "common/macro.h"
#include "netns/netns-internal.h"

#define RECORD_HEADER_LEN 5
#define RECORD_PAYLOAD_MAX (16 * 1024) /* 2^14: TLSPlaintext.length */
#define CONTENT_HANDSHAKE 22
#define HANDSHAKE_HEADER_LEN 4
#define HANDSHAKE_CLIENT_HELLO 1
#define RANDOM_LEN 32
#define SESSION_ID_MAX 32
#define EXT_SERVER_NAME 0
#define EXT_ALPN 16
#define NAME_TYPE_HOST_NAME 0
#define LABEL_MAX 63

/* Bytes of the handshake message: [pos, end) is the vector being read, of which the bytes
 * before avail have arrived. A read past end is a length that lies; one past avail must wait. */
struct reader {
	const uint8_t *p;
	size_t pos, end, avail;
};

static int reader_need(const struct reader *rd, size_t n)
{
	if (n > rd->end - rd->pos)
		return -EBADMSG;
	if (rd->pos + n > rd->avail)
		return -EAGAIN;
	return 0;
}

/* Reads a big-endian integer of size bytes (1 to 3). */
static int reader_uint(struct reader *rd, size_t size, size_t *ret)
{
	size_t v = 0;
	int r;

	r = reader_need(rd, size);
	if (r < 0)
		return r;
	for (size_t i = 0; i < size; i++)
		v = v << 8 | rd->p[rd->pos++];
	*ret = v;
	return 0;
}

static int reader_skip(struct reader *rd, size_t n)
{
	int r;

	r = reader_need(rd, n);
	if (r < 0)
		return r;
	rd->pos += n;
	return 0;
}

/* Opens the vector at rd's position, with a length field of size bytes and between min and max
 * bytes of content, as ret, and moves rd past it (its content need not have arrived yet). */
static int reader_vector(struct reader *rd, size_t size, size_t min, size_t max, struct reader *ret)
{
	size_t n;
	int r;

	r = reader_uint(rd, size, &n);
	if (r < 0)
		return r;
	if (n < min || n > max || n > rd->end - rd->pos)
		return -EBADMSG;
	*ret = (struct reader){.p = rd->p, .pos = rd->pos, .end = rd->pos + n, .avail = rd->avail};
	rd->pos += n;
	return 0;
}

static bool is_host_char(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-';
}

/* Whether the last label of name (no trailing dot) is a number, as in "10.0.0.1", "2130706433" or
 * "127.0.0.0x1": URL parsers and inet_aton() read such a name as an IPv4 address, and no top-level
 * domain is numeric (RFC 3696 2), so it is an address literal and not a host name. */
static bool ends_in_number(const char *name, size_t len)
{
	const char *dot = memrchr(name, '.', len);
	const char *label = dot ? dot + 1 : name, *end = name + len;

	if (end - label >= 2 && label[0] == '0' && label[1] == 'x')
		return strspn(label + 2, "0123456789abcdef") == (size_t)(end - label - 2);
	return strspn(label, "0123456789") == (size_t)(end - label);
}

/* Checks the host_name in rd (its whole vector) as far as it has arrived, and copies it into ret
 * lower-cased, without a trailing dot. */
static int parse_host_name(const struct reader *rd, char ret[static NETNS_DNS_NAME_MAX + 1])
{
	size_t len = rd->end - rd->pos, have = MIN(len, rd->avail - rd->pos), label = 0;
	const uint8_t *s = rd->p + rd->pos;

	for (size_t i = 0; i < have; i++) {
		uint8_t c = s[i];

		if (c == '.') {
			if (label == 0)
				return -EBADMSG; /* an empty label: a leading dot or ".." */
			label = 0;
		} else if (!is_host_char(c)) {
			return -EBADMSG;
		} else if (++label > LABEL_MAX) {
			return -EBADMSG;
		}
		if (i < NETNS_DNS_NAME_MAX)
			ret[i] = (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
	}
	if (have < len)
		return -EAGAIN;
	if (label == 0)
		len--; /* the trailing dot of an absolute name */
	if (len > NETNS_DNS_NAME_MAX)
		return -EBADMSG;
	ret[len] = '\0';
	return ends_in_number(ret, len) ? -EBADMSG : 0;
}

/* server_name (RFC 6066 3): a ServerNameList holding exactly one entry, a host_name. */
static int parse_server_name(struct reader *ext, struct netns_tls_hello *h)
{
	struct reader list, name;
	size_t type;
	int r;

	r = reader_vector(ext, 2, 1, UINT16_MAX, &list);
	if (r < 0)
		return r;
	if (ext->pos != ext->end)
		return -EBADMSG;
	r = reader_uint(&list, 1, &type);
	if (r < 0)
		return r;
	if (type != NAME_TYPE_HOST_NAME)
		return -EBADMSG;
	/* One byte more than a name: the trailing dot. */
	r = reader_vector(&list, 2, 1, NETNS_DNS_NAME_MAX + 1, &name);
	if (r < 0)
		return r;
	if (list.pos != list.end)
		return -EBADMSG; /* a second name: which one would the server use? */
	return parse_host_name(&name, h->sni);
}

/* application_layer_protocol_negotiation (RFC 7301 3.1): a ProtocolNameList of opaque names. */
static int parse_alpn(struct reader *ext, struct netns_tls_hello *h)
{
	struct reader list;
	int r;

	r = reader_vector(ext, 2, 2, UINT16_MAX, &list);
	if (r < 0)
		return r;
	if (ext->pos != ext->end)
		return -EBADMSG;
	while (list.pos < list.end) {
		struct reader name;
		size_t n;

		r = reader_vector(&list, 1, 1, UINT8_MAX, &name);
		if (r < 0)
			return r;
		n = name.end - name.pos;
		r = reader_need(&name, n);
		if (r < 0)
			return r;
		if (n == 2 && memcmp(name.p + name.pos, "h2", 2) == 0)
			h->alpn_h2 = true;
		else if (n == 8 && memcmp(name.p + name.pos, "http/1.1", 8) == 0)
			h->alpn_http11 = true;
	}
	return 0;
}

static int parse_extensions(struct reader *body, struct netns_tls_hello *h)
{
	uint64_t seen[(UINT16_MAX + 1) / 64] = {0};
	struct reader exts;
	int r;

	r = reader_vector(body, 2, 0, UINT16_MAX, &exts);
	if (r < 0)
		return r;
	if (body->pos != body->end)
		return -EBADMSG;
	while (exts.pos < exts.end) {
		struct reader ext;
		size_t type;

		r = reader_uint(&exts, 2, &type);
		if (r < 0)
			return r;
		if (seen[type / 64] & (UINT64_C(1) << (type % 64)))
			return -EBADMSG; /* RFC 8446 4.2: at most one of each type */
		seen[type / 64] |= UINT64_C(1) << (type % 64);
		r = reader_vector(&exts, 2, 0, UINT16_MAX, &ext);
		if (r < 0)
			return r;
		if (type == EXT_SERVER_NAME)
			r = parse_server_name(&ext, h);
		else if (type == EXT_ALPN)
			r = parse_alpn(&ext, h);
		else
			r = reader_skip(&ext, ext.end - ext.pos);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Parses the handshake message in msg, of which avail bytes have arrived. */
static int parse_client_hello(const uint8_t *msg, size_t avail, struct netns_tls_hello *ret)
{
	struct netns_tls_hello h = {.sni = ""};
	struct reader top = {.p = msg, .end = SIZE_MAX, .avail = avail}, body, v;
	size_t type, version;
	int r;

	r = reader_uint(&top, 1, &type);
	if (r < 0)
		return r;
	if (type != HANDSHAKE_CLIENT_HELLO)
		return -EBADMSG;
	r = reader_vector(&top, 3, 0, SIZE_MAX, &body);
	if (r < 0)
		return r;
	r = reader_uint(&body, 2, &version);
	if (r < 0)
		return r;
	if (version >> 8 != 3 || (version & 0xff) < 1)
		return -EBADMSG; /* SSL 3.0 or not TLS at all */
	r = reader_skip(&body, RANDOM_LEN);
	if (r >= 0)
		r = reader_vector(&body, 1, 0, SESSION_ID_MAX, &v);
	if (r >= 0)
		r = reader_skip(&v, v.end - v.pos);
	if (r >= 0)
		r = reader_vector(&body, 2, 2, UINT16_MAX - 1, &v);
	if (r >= 0)
		r = (v.end - v.pos) % 2 ? -EBADMSG : reader_skip(&v, v.end - v.pos);
	if (r >= 0)
		r = reader_vector(&body, 1, 1, UINT8_MAX, &v);
	if (r >= 0)
		r = reader_skip(&v, v.end - v.pos);
	/* Before TLS 1.3 a hello may end here, without extensions (RFC 5246 7.4.1.2). */
	if (r >= 0 && body.pos < body.end)
		r = parse_extensions(&body, &h);
	if (r < 0)
		return r;
	*ret = h;
	return 0;
}

/* Checks the record header at p, of which avail bytes have arrived, byte by byte. */
static int check_record_header(const uint8_t *p, size_t avail, size_t *ret_len)
{
	size_t len;

	if (avail >= 1 && p[0] != CONTENT_HANDSHAKE)
		return -EBADMSG;
	/* legacy_record_version: TLS 1.0 to 1.3 (a ClientHello's is 0x0301 or 0x0303) */
	if (avail >= 2 && p[1] != 3)
		return -EBADMSG;
	if (avail >= 3 && (p[2] < 1 || p[2] > 4))
		return -EBADMSG;
	if (avail >= 4 && p[3] > RECORD_PAYLOAD_MAX >> 8)
		return -EBADMSG;
	if (avail < RECORD_HEADER_LEN)
		return -EAGAIN;
	len = (size_t)p[3] << 8 | p[4];
	if (len == 0 || len > RECORD_PAYLOAD_MAX)
		return -EBADMSG; /* no empty handshake fragments (RFC 8446 5.1) */
	*ret_len = len;
	return 0;
}

/* Collects the handshake message from the records at the start of buf, as far as they have
 * arrived: in place when it starts in a single record, else copied into hs. Checks that the
 * hello fits in NETNS_TLS_HELLO_MAX bytes of records, and that its last record ends with it,
 * since a client sends nothing else before the server's answer. */
static int gather(const uint8_t *buf, size_t len, uint8_t hs[static RECORD_PAYLOAD_MAX],
		  const uint8_t **ret_msg, size_t *ret_avail)
{
	size_t limit = MIN(len, (size_t)NETNS_TLS_HELLO_MAX), off = 0, got = 0;
	const uint8_t *msg = buf;

	for (;;) {
		size_t rec_len, data, n, rec_end, msg_len, end;
		int r;

		r = check_record_header(buf + off, limit - off, &rec_len);
		if (r == -EAGAIN)
			break;
		if (r < 0)
			return r;
		data = off + RECORD_HEADER_LEN;
		n = MIN(rec_len, limit - data);
		if (off == 0) {
			msg = buf + data;
		} else {
			if (msg != hs)
				memcpy(hs, msg, got);
			msg = hs;
			memcpy(hs + got, buf + data, n);
		}
		rec_end = got + rec_len;
		got += n;
		if (got >= HANDSHAKE_HEADER_LEN) {
			msg_len = HANDSHAKE_HEADER_LEN +
				  ((size_t)msg[1] << 16 | (size_t)msg[2] << 8 | msg[3]);
			if (rec_end > msg_len)
				return -EBADMSG;
			/* Where its records end, at the earliest. */
			end = data + rec_len;
			if (rec_end < msg_len)
				end += RECORD_HEADER_LEN + msg_len - rec_end;
			if (end > NETNS_TLS_HELLO_MAX)
				return -EBADMSG;
			if (rec_end == msg_len)
				break;
		}
		if (n < rec_len)
			break;
		off = data + rec_len;
	}
	*ret_msg = msg;
	*ret_avail = got;
	return 0;
}

int netns_tls_parse_hello(const uint8_t *buf, size_t len, struct netns_tls_hello *ret)
{
	uint8_t hs[RECORD_PAYLOAD_MAX];
	const uint8_t *msg;
	size_t avail;
	int r;

	r = gather(buf, len, hs, &msg, &avail);
	if (r < 0)
		return r;
	r = parse_client_hello(msg, avail, ret);
	/* gather() refuses a hello that cannot end within NETNS_TLS_HELLO_MAX bytes, so this does
	 * not happen; but the proxy never reads more, and must not wait for more. */
	if (r == -EAGAIN && len >= NETNS_TLS_HELLO_MAX)
		return -EBADMSG;
	return r;
}
