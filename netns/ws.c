/* WebSocket frames (RFC 6455 5) for the egress proxy's relay (netns-internal.h has the
 * contract): an incremental parser, one per direction, that never gathers a payload, a head
 * writer, and the handshake's accept value (with a SHA-1 of its own: OpenSSL lives in tls.c,
 * and the fuzz targets build this file without it).
 *
 * Decisions the contract leaves open:
 * - The proxy lets no extension through (it removes Sec-WebSocket-Extensions from the request
 *   and refuses a response that agrees to one), so RSV1-3 are always refused: permessage-deflate
 *   would hide values from the search.
 * - Lengths must be in their shortest form (RFC 6455 5.2 says "minimal number of bytes"); two
 *   parsers that read a padded length alike still do not need one.
 * - A Close payload's status code and a text frame's UTF-8 are the endpoints' to check. */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "common/text-util.h"
#include "netns/netns-internal.h"

#define WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
#define WS_KEY_LEN 24 /* base64 of 16 bytes */

static bool is_known_opcode(uint8_t op)
{
	return op <= NETNS_WS_BINARY || (op >= NETNS_WS_CLOSE && op <= NETNS_WS_PONG);
}

/* The head's length once its first two bytes are known. */
static size_t head_len(const struct netns_ws_parser *ps)
{
	uint8_t l = ps->head[1] & 0x7f;

	return 2 + (l == 126 ? 2 : l == 127 ? 8 : 0) + ((ps->head[1] & 0x80) ? 4 : 0);
}

/* Judges the first two bytes of a head. */
static int check_start(const struct netns_ws_parser *ps, struct al_error *err)
{
	uint8_t b0 = ps->head[0], b1 = ps->head[1], op = b0 & 0x0f;
	bool fin = b0 & 0x80, masked = b1 & 0x80;

	if (b0 & 0x70)
		return al_error_set(
		    err, -EBADMSG,
		    "A WebSocket frame has RSV bits set, but no extension was agreed");
	if (!is_known_opcode(op))
		return al_error_set(err, -EBADMSG, "A WebSocket frame has the unknown opcode 0x%x",
				    op);
	if (netns_ws_is_control(op) && (!fin || (b1 & 0x7f) > NETNS_WS_CONTROL_MAX))
		return al_error_set(
		    err, -EBADMSG,
		    "A WebSocket control frame is fragmented or longer than %d bytes",
		    NETNS_WS_CONTROL_MAX);
	if (op == NETNS_WS_CONT && !ps->in_message)
		return al_error_set(err, -EBADMSG,
				    "A WebSocket continuation frame comes without a message");
	if ((op == NETNS_WS_TEXT || op == NETNS_WS_BINARY) && ps->in_message)
		return al_error_set(err, -EBADMSG,
				    "A WebSocket message begins within a fragmented one");
	if (masked != ps->client)
		return al_error_set(err, -EBADMSG, "%s",
				    ps->client ? "A WebSocket frame from the client is not masked"
					       : "A WebSocket frame from the server is masked");
	return 0;
}

/* Decodes the whole head into ps->frame. */
static int parse_head(struct netns_ws_parser *ps, struct al_error *err)
{
	const uint8_t *h = ps->head;
	struct netns_ws_frame *fr = &ps->frame;
	uint8_t l = h[1] & 0x7f;
	size_t at = 2;

	*fr = (struct netns_ws_frame){
	    .fin = h[0] & 0x80, .opcode = h[0] & 0x0f, .masked = h[1] & 0x80, .len = l};
	if (l == 126) {
		fr->len = (uint64_t)h[2] << 8 | h[3];
		at = 4;
		if (fr->len < 126)
			return al_error_set(
			    err, -EBADMSG,
			    "A WebSocket frame's length is not in its shortest form");
	} else if (l == 127) {
		fr->len = 0;
		for (size_t i = 0; i < 8; i++)
			fr->len = fr->len << 8 | h[2 + i];
		at = 10;
		if (fr->len >> 63)
			return al_error_set(err, -EBADMSG,
					    "A WebSocket frame's length is 2^63 or more");
		if (fr->len <= 0xffff)
			return al_error_set(
			    err, -EBADMSG,
			    "A WebSocket frame's length is not in its shortest form");
	}
	if (fr->masked)
		memcpy(fr->mask, h + at, 4);
	if (fr->opcode == NETNS_WS_CLOSE && fr->len == 1)
		return al_error_set(err, -EBADMSG,
				    "A WebSocket Close frame has a payload of one byte");
	return 0;
}

ssize_t netns_ws_parse(struct netns_ws_parser *ps, const uint8_t *buf, size_t len,
		       struct netns_ws_event *ev, struct al_error *err)
{
	size_t take, need;
	int r;

	*ev = (struct netns_ws_event){.kind = NETNS_WS_MORE, .frame = &ps->frame};
	if (ps->in_frame) {
		if (ps->done == ps->frame.len) {
			/* The end, without a byte: the next call reads the next head. */
			ev->kind = NETNS_WS_END;
			ps->in_frame = false;
			ps->head_n = 0;
			if (!netns_ws_is_control(ps->frame.opcode)) {
				ps->in_message = !ps->frame.fin;
				ev->message_end = ps->frame.fin;
			}
			return 0;
		}
		if (len == 0)
			return 0;
		take = (size_t)MIN((uint64_t)len, ps->frame.len - ps->done);
		ev->kind = NETNS_WS_DATA;
		ev->data = buf;
		ev->n = take;
		ev->offset = ps->done;
		ps->done += take;
		return (ssize_t)take;
	}
	/* The head, gathered in ps->head: its first two bytes say how long it is. */
	need = ps->head_n < 2 ? 2 : head_len(ps);
	take = 0;
	for (;;) {
		size_t k = MIN(len - take, need - ps->head_n);

		memcpy(ps->head + ps->head_n, buf + take, k);
		ps->head_n += k;
		take += k;
		if (ps->head_n < need)
			return (ssize_t)take;
		if (need > 2)
			break;
		r = check_start(ps, err);
		if (r < 0)
			return r;
		need = head_len(ps);
		if (need == 2)
			break;
	}
	r = parse_head(ps, err);
	if (r < 0)
		return r;
	ps->in_frame = true;
	ps->done = 0;
	ev->kind = NETNS_WS_HEAD;
	return (ssize_t)take;
}

bool netns_ws_parser_at_boundary(const struct netns_ws_parser *ps, bool message)
{
	return !ps->in_frame && ps->head_n == 0 && (!message || !ps->in_message);
}

void netns_ws_mask(const uint8_t mask[4], uint64_t offset, uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] ^= mask[(offset + i) & 3];
}

size_t netns_ws_put_head(uint8_t dst[static NETNS_WS_HEAD_MAX], bool fin, uint8_t opcode,
			 const uint8_t *mask, uint64_t len)
{
	size_t at = 2;

	dst[0] = (uint8_t)((fin ? 0x80 : 0) | (opcode & 0x0f));
	dst[1] = mask ? 0x80 : 0;
	if (len < 126)
		dst[1] |= (uint8_t)len;
	else if (len <= 0xffff) {
		dst[1] |= 126;
		dst[2] = (uint8_t)(len >> 8);
		dst[3] = (uint8_t)len;
		at = 4;
	} else {
		dst[1] |= 127;
		for (size_t i = 0; i < 8; i++)
			dst[2 + i] = (uint8_t)(len >> (56 - 8 * i));
		at = 10;
	}
	if (mask) {
		memcpy(dst + at, mask, 4);
		at += 4;
	}
	return at;
}

/* ---- the handshake's accept value ---- */

static uint32_t rol32(uint32_t x, unsigned k)
{
	return x << k | x >> (32 - k);
}

static void sha1_block(uint32_t h[5], const uint8_t b[64])
{
	uint32_t w[80], a = h[0], bb = h[1], c = h[2], d = h[3], e = h[4];

	for (size_t i = 0; i < 16; i++)
		w[i] = (uint32_t)b[4 * i] << 24 | (uint32_t)b[4 * i + 1] << 16 |
		       (uint32_t)b[4 * i + 2] << 8 | b[4 * i + 3];
	for (size_t i = 16; i < 80; i++)
		w[i] = rol32(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
	for (size_t i = 0; i < 80; i++) {
		uint32_t f, k, t;

		if (i < 20)
			f = (bb & c) | (~bb & d), k = 0x5a827999;
		else if (i < 40)
			f = bb ^ c ^ d, k = 0x6ed9eba1;
		else if (i < 60)
			f = (bb & c) | (bb & d) | (c & d), k = 0x8f1bbcdc;
		else
			f = bb ^ c ^ d, k = 0xca62c1d6;
		t = rol32(a, 5) + f + e + k + w[i];
		e = d;
		d = c;
		c = rol32(bb, 30);
		bb = a;
		a = t;
	}
	h[0] += a;
	h[1] += bb;
	h[2] += c;
	h[3] += d;
	h[4] += e;
}

/* SHA-1 (FIPS 180-4) of n < 119 bytes: all the handshake needs, and nothing here needs it to
 * resist collisions (RFC 6455 10.7 uses it only to show that the server read the key). */
static void sha1_short(const uint8_t *p, size_t n, uint8_t ret[20])
{
	uint32_t h[5] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0};
	uint8_t m[128] = {0};
	size_t blocks = n + 9 <= 64 ? 1 : 2;
	uint64_t bits = (uint64_t)n * 8;

	memcpy(m, p, n);
	m[n] = 0x80;
	for (size_t i = 0; i < 8; i++)
		m[64 * blocks - 1 - i] = (uint8_t)(bits >> (8 * i));
	for (size_t i = 0; i < blocks; i++)
		sha1_block(h, m + 64 * i);
	for (size_t i = 0; i < 20; i++)
		ret[i] = (uint8_t)(h[i / 4] >> (24 - 8 * (i % 4)));
}

static bool is_b64_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '+' || c == '/';
}

int netns_ws_accept(const char *key, size_t key_len, char ret[static NETNS_WS_ACCEPT_LEN + 1])
{
	char in[WS_KEY_LEN + sizeof(WS_GUID)];
	uint8_t digest[20];
	_cleanup_free_ char *enc = NULL;

	if (key_len != WS_KEY_LEN || key[22] != '=' || key[23] != '=')
		return -EINVAL;
	for (size_t i = 0; i < 22; i++)
		if (!is_b64_char(key[i]))
			return -EINVAL;
	memcpy(in, key, WS_KEY_LEN);
	memcpy(in + WS_KEY_LEN, WS_GUID, sizeof(WS_GUID) - 1);
	sha1_short((const uint8_t *)in, WS_KEY_LEN + sizeof(WS_GUID) - 1, digest);
	enc = al_base64_encode(digest, sizeof(digest));
	if (!enc)
		return -ENOMEM;
	memcpy(ret, enc, NETNS_WS_ACCEPT_LEN + 1);
	return 0;
}
