/* tests/unit/netns/test-ws.c: WebSocket frames (ws.c) and the relay of an inspected flow after
 * an HTTP/1.1 upgrade (http-flow-ws.c). Frames are fed whole and a byte at a time; what the flow
 * passes on is parsed again and compared. A fake broker resolves S_OK (bound to the host) to a
 * longer value, and refuses S_NO (not bound). */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "broker/client.h"
#include "netns/netns-internal.h"

#define HOST "api.example.com"
#define S_OK "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
#define V_OK "the-real-value-of-the-bound-token-which-is-longer-0001"
#define S_NO "airlock_sur_0123456789abcdefghijABCDEFGHIJkl"
#define KEY "dGhlIHNhbXBsZSBub25jZQ=="
#define ACCEPT "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
#define UPGRADE_REQ                                                                                \
	"GET /chat HTTP/1.1\r\nHost: " HOST "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"    \
	"Sec-WebSocket-Key: " KEY "\r\nSec-WebSocket-Version: 13\r\n"                              \
	"Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n"                 \
	"X-Token: " S_OK "\r\n\r\n"
#define SWITCH                                                                                     \
	"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"        \
	"Sec-WebSocket-Accept: " ACCEPT "\r\n\r\n"

/* ---- the frame parser ---- */

struct frames {
	char text[4096]; /* the data payloads, unmasked, concatenated */
	size_t n;
	uint8_t opcodes[64]; /* of each frame */
	bool fins[64], masked[64];
	size_t n_frames, n_messages;
	char control[256]; /* control payloads */
	size_t control_n;
};

/* Parses buf (len bytes) in pieces of at most piece bytes: 0, or the parser's error. */
static int parse_all(bool client, const uint8_t *buf, size_t len, size_t piece, struct frames *fs)
{
	struct netns_ws_parser ps;
	struct netns_ws_event ev;
	size_t done = 0;
	ssize_t n;

	memset(fs, 0, sizeof(*fs));
	netns_ws_parser_init(&ps, client);
	for (;;) {
		size_t avail = MIN(len - done, piece);

		n = netns_ws_parse(&ps, buf + done, avail, &ev, NULL);
		if (n < 0)
			return (int)n;
		done += (size_t)n;
		switch (ev.kind) {
		case NETNS_WS_MORE:
			if (done == len)
				return netns_ws_parser_at_boundary(&ps, false) ? 0 : -EAGAIN;
			break;
		case NETNS_WS_HEAD:
			assert_true(fs->n_frames < 64);
			fs->opcodes[fs->n_frames] = ev.frame->opcode;
			fs->fins[fs->n_frames] = ev.frame->fin;
			fs->masked[fs->n_frames++] = ev.frame->masked;
			break;
		case NETNS_WS_DATA: {
			char *dst = netns_ws_is_control(ev.frame->opcode)
					? fs->control + fs->control_n
					: fs->text + fs->n;

			memcpy(dst, ev.data, ev.n);
			if (ev.frame->masked)
				netns_ws_mask(ev.frame->mask, ev.offset, (uint8_t *)dst, ev.n);
			if (netns_ws_is_control(ev.frame->opcode))
				fs->control_n += ev.n;
			else
				fs->n += ev.n;
			break;
		}
		case NETNS_WS_END:
			fs->n_messages += ev.message_end;
			break;
		}
	}
}

static void test_ws_accept_is_rfc_6455s_example(void **state)
{
	char acc[NETNS_WS_ACCEPT_LEN + 1];

	(void)state;
	assert_int_equal(netns_ws_accept(KEY, strlen(KEY), acc), 0);
	assert_string_equal(acc, ACCEPT);
	assert_int_equal(netns_ws_accept("dGhlIHNhbXBsZSBub25jZQ", 22, acc), -EINVAL);
	assert_int_equal(netns_ws_accept("dGhlIHNhbXBsZSBub25jZQ=a", 24, acc), -EINVAL);
	assert_int_equal(netns_ws_accept("dGhlIHNhbXBsZSBub25j*Q==", 24, acc), -EINVAL);
}

static void test_ws_parses_rfc_6455s_examples_in_every_split(void **state)
{
	static const uint8_t hello[] = {0x81, 0x05, 'H', 'e', 'l', 'l', 'o'};
	static const uint8_t masked[] = {0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d,
					 0x7f, 0x9f, 0x4d, 0x51, 0x58};
	static const uint8_t fragmented[] = {0x01, 0x03, 'H',  'e', 'l', 0x89,
					     0x00, 0x80, 0x02, 'l', 'o'};
	uint8_t big[4 + 256], huge[NETNS_WS_HEAD_MAX];
	struct frames fs;

	(void)state;
	for (size_t piece = 1; piece <= sizeof(masked); piece++) {
		assert_int_equal(parse_all(false, hello, sizeof(hello), piece, &fs), 0);
		assert_int_equal(fs.n, 5);
		assert_memory_equal(fs.text, "Hello", 5);
		assert_int_equal(fs.n_messages, 1);
		assert_int_equal(parse_all(true, masked, sizeof(masked), piece, &fs), 0);
		assert_memory_equal(fs.text, "Hello", 5);
		assert_true(fs.masked[0]);
		assert_int_equal(parse_all(false, fragmented, sizeof(fragmented), piece, &fs), 0);
		assert_int_equal(fs.n_frames, 3);
		assert_int_equal(fs.opcodes[1], NETNS_WS_PING);
		assert_int_equal(fs.n_messages, 1);
		assert_memory_equal(fs.text, "Hello", 5);
	}
	memset(big, 'x', sizeof(big));
	assert_int_equal(netns_ws_put_head(big, true, NETNS_WS_BINARY, NULL, 256), 4);
	assert_memory_equal(big, "\x82\x7e\x01\x00", 4);
	assert_int_equal(parse_all(false, big, sizeof(big), 7, &fs), 0);
	assert_int_equal(fs.n, 256);
	assert_int_equal(netns_ws_put_head(huge, true, NETNS_WS_BINARY, NULL, 65536), 10);
	assert_memory_equal(huge, "\x82\x7f\x00\x00\x00\x00\x00\x01\x00\x00", 10);
}

static void test_ws_parser_streams_a_long_payload_without_gathering_it(void **state)
{
	static uint8_t huge[10 + 65536];
	struct netns_ws_parser ps;
	struct netns_ws_event ev;
	size_t done = 0, data = 0, events = 0;

	(void)state;
	memset(huge, 'y', sizeof(huge));
	(void)netns_ws_put_head(huge, true, NETNS_WS_BINARY, NULL, 65536);
	netns_ws_parser_init(&ps, false);
	while (done < sizeof(huge)) {
		ssize_t n = netns_ws_parse(&ps, huge + done, MIN(sizeof(huge) - done, (size_t)4096),
					   &ev, NULL);

		assert_true(n >= 0);
		done += (size_t)n;
		events++;
		if (ev.kind == NETNS_WS_DATA) {
			assert_true(ev.n <= 4096);
			data += ev.n;
		}
	}
	assert_int_equal(data, 65536);
	assert_int_equal(netns_ws_parse(&ps, huge, 0, &ev, NULL), 0);
	assert_int_equal(ev.kind, NETNS_WS_END);
	assert_true(ev.message_end);
	assert_true(netns_ws_parser_at_boundary(&ps, true));
	assert_true(events > 16);
}

static void test_ws_parser_refuses_what_no_agreed_protocol_allows(void **state)
{
	static const struct {
		bool client;
		size_t len;
		uint8_t b[16];
	} bad[] = {
	    {false, 2, {0xc1, 0x00}},		  /* RSV1 (permessage-deflate) */
	    {false, 2, {0x91, 0x00}},		  /* RSV3 */
	    {false, 2, {0x83, 0x00}},		  /* opcode 3 */
	    {false, 2, {0x8b, 0x00}},		  /* opcode 0xb */
	    {false, 4, {0x89, 0x7e, 0x00, 0x7e}}, /* a ping of 126 bytes */
	    {false, 2, {0x09, 0x00}},		  /* a fragmented ping */
	    {false, 2, {0x80, 0x00}},		  /* a continuation without a message */
	    {false, 4, {0x01, 0x00, 0x81, 0x00}}, /* a message within a message */
	    {false, 4, {0x82, 0x7e, 0x00, 0x05}}, /* 16-bit length for 5 */
	    {false, 10, {0x82, 0x7f, 0, 0, 0, 0, 0, 0, 0xff, 0xff}}, /* 64-bit for 65535 */
	    {false, 10, {0x82, 0x7f, 0x80, 0, 0, 0, 0, 0, 0, 0}},    /* 2^63 */
	    {false, 3, {0x88, 0x01, 0x03}},			     /* a Close of one byte */
	    {true, 2, {0x81, 0x00}},				     /* unmasked, from the client */
	    {false, 6, {0x81, 0x80, 1, 2, 3, 4}},		     /* masked, from the server */
	};
	struct frames fs;

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		struct al_error err = {0};
		struct netns_ws_parser ps;
		struct netns_ws_event ev;
		size_t done = 0;
		ssize_t n = 0;

		for (size_t piece = 1; piece <= bad[i].len; piece++)
			assert_int_equal(parse_all(bad[i].client, bad[i].b, bad[i].len, piece, &fs),
					 -EBADMSG);
		netns_ws_parser_init(&ps, bad[i].client);
		while (done < bad[i].len && (n = netns_ws_parse(&ps, bad[i].b + done,
								bad[i].len - done, &ev, &err)) >= 0)
			done += (size_t)n;
		assert_int_equal(n, -EBADMSG);
		assert_non_null(strstr(err.msg, "WebSocket"));
	}
}

static void test_ws_put_head_round_trips(void **state)
{
	static const uint64_t lens[] = {0, 1, 125, 126, 65535, 65536, UINT64_C(1) << 40};
	const uint8_t mask[4] = {9, 8, 7, 6};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(lens); i++) {
		uint8_t head[NETNS_WS_HEAD_MAX];
		struct netns_ws_parser ps;
		struct netns_ws_event ev;
		size_t hl = netns_ws_put_head(head, false, NETNS_WS_TEXT, mask, lens[i]);

		netns_ws_parser_init(&ps, true);
		assert_int_equal(netns_ws_parse(&ps, head, hl, &ev, NULL), (ssize_t)hl);
		assert_int_equal(ev.kind, NETNS_WS_HEAD);
		assert_true(ev.frame->len == lens[i]);
		assert_false(ev.frame->fin);
		assert_memory_equal(ev.frame->mask, mask, 4);
	}
}

/* ---- the relay of an inspected flow ---- */

struct fake {
	unsigned swaps;
	char where[64];
};

static int secret(const char *value, struct broker_secret **ret)
{
	struct broker_secret *s = broker_secret_new(strlen(value));

	if (!s)
		return -ENOMEM;
	memcpy(s->data, value, s->len);
	*ret = s;
	return 0;
}

static int fake_resolve(void *userdata, const char *surrogate, struct broker_secret **ret,
			struct al_error *err)
{
	(void)userdata;
	if (strcmp(surrogate, S_OK) == 0)
		return secret(V_OK, ret);
	return al_error_set(err, -EPERM, "credential \"other\" is not bound to " HOST);
}

static int fake_bound_value(void *userdata, const char *surrogate, struct broker_secret **ret,
			    struct al_error *err)
{
	(void)userdata;
	(void)err;
	*ret = NULL;
	return strcmp(surrogate, S_OK) == 0 ? secret(V_OK, ret) : 0;
}

static void fake_swapped(void *userdata, const char *surrogate, const char *where, uint32_t stream)
{
	struct fake *fk = userdata;

	(void)surrogate;
	(void)stream;
	fk->swaps++;
	(void)snprintf(fk->where, sizeof(fk->where), "%s", where);
}

static const char *const surrogates[] = {S_OK, S_NO, NULL};
static const struct netns_http_flow_ops ops = {
    .resolve = fake_resolve, .swapped = fake_swapped, .bound_value = fake_bound_value};

struct wt {
	struct fake fake;
	struct netns_http_flow_options o;
	struct netns_http_flow *f;
	struct netns_buf up, down;
	struct al_error err;
};

static struct wt *wt_new(void)
{
	struct wt *t = calloc(1, sizeof(*t));

	assert_non_null(t);
	t->o = (struct netns_http_flow_options){
	    .host = HOST, .port = 443, .surrogates = surrogates, .ops = &ops, .userdata = &t->fake};
	assert_int_equal(netns_http_flow_new(&t->o, &t->f), 0);
	return t;
}

static void wt_free(struct wt *t)
{
	netns_http_flow_free(t->f);
	netns_buf_done(&t->up);
	netns_buf_done(&t->down);
	free(t);
}

/* b's bytes as a string: a copy, NUL-terminated (a buffer is not). */
static const char *text(const struct netns_buf *b)
{
	static char copy[256 * 1024];
	size_t n = netns_buf_len(b) < sizeof(copy) - 1 ? netns_buf_len(b) : sizeof(copy) - 1;

	if (n > 0)
		memcpy(copy, netns_buf_head(b), n);
	copy[n] = '\0';
	return copy;
}

static void drain(struct netns_buf *b)
{
	if (netns_buf_len(b) > 0)
		netns_buf_consume(b, netns_buf_len(b));
}

/* Feeds len bytes in pieces of at most piece: the first error, or the bytes taken. */
static ssize_t feed(struct wt *t, bool request, const void *buf, size_t len, size_t piece)
{
	size_t done = 0;

	while (done < len) {
		size_t n = MIN(len - done, piece);
		ssize_t r = request ? netns_http_flow_request(t->f, (const uint8_t *)buf + done, n,
							      &t->up, &t->err)
				    : netns_http_flow_response(t->f, (const uint8_t *)buf + done, n,
							       &t->down, &t->err);

		if (r < 0)
			return r;
		done += (size_t)r;
		if ((size_t)r < n)
			break;
	}
	return (ssize_t)done;
}

/* A frame as a client (masked) or a server sends it. */
static size_t frame(uint8_t *dst, bool client, bool fin, uint8_t opcode, const char *payload)
{
	static const uint8_t mask[4] = {0x37, 0xfa, 0x21, 0x3d};
	size_t n = strlen(payload),
	       hl = netns_ws_put_head(dst, fin, opcode, client ? mask : NULL, n);

	memcpy(dst + hl, payload, n);
	if (client)
		netns_ws_mask(mask, 0, dst + hl, n);
	return hl + n;
}

/* The upgrade, answered: both directions relay frames. */
static struct wt *wt_upgraded(void)
{
	struct wt *t = wt_new();

	assert_int_equal(feed(t, true, UPGRADE_REQ, strlen(UPGRADE_REQ), SIZE_MAX),
			 (ssize_t)strlen(UPGRADE_REQ));
	assert_int_equal(feed(t, false, SWITCH, strlen(SWITCH), SIZE_MAX), (ssize_t)strlen(SWITCH));
	assert_false(netns_http_flow_idle(t->f));
	drain(&t->up);
	drain(&t->down);
	return t;
}

static void test_flow_keeps_a_websocket_upgrade_and_drops_its_extensions(void **state)
{
	struct wt *t = wt_new();

	(void)state;
	assert_int_equal(feed(t, true, UPGRADE_REQ, strlen(UPGRADE_REQ), SIZE_MAX),
			 (ssize_t)strlen(UPGRADE_REQ));
	assert_non_null(strstr(text(&t->up), "\r\nUpgrade: websocket\r\n"));
	assert_non_null(strstr(text(&t->up), "\r\nConnection: Upgrade\r\n"));
	assert_non_null(strstr(text(&t->up), "\r\nSec-WebSocket-Key: " KEY "\r\n"));
	assert_non_null(strstr(text(&t->up), "\r\nX-Token: " V_OK "\r\n"));
	assert_null(strstr(text(&t->up), "Extensions"));
	assert_null(strstr(text(&t->up), "deflate"));
	assert_int_equal(feed(t, false, SWITCH, strlen(SWITCH), 3), (ssize_t)strlen(SWITCH));
	assert_string_equal(text(&t->down), SWITCH);
	wt_free(t);
}

static void test_flow_still_removes_other_upgrades(void **state)
{
	static const char *const reqs[] = {
	    "GET / HTTP/1.1\r\nHost: " HOST "\r\nUpgrade: h2c\r\nConnection: Upgrade, "
	    "HTTP2-Settings\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n",
	    /* websocket, but no key */
	    "GET / HTTP/1.1\r\nHost: " HOST "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
	    /* websocket, but with a body */
	    "POST / HTTP/1.1\r\nHost: " HOST "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
	    "Sec-WebSocket-Key: " KEY "\r\nContent-Length: 1\r\n\r\nx",
	    /* websocket, not named in Connection */
	    "GET / HTTP/1.1\r\nHost: " HOST "\r\nUpgrade: websocket\r\nSec-WebSocket-Key: " KEY
	    "\r\n\r\n",
	};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(reqs); i++) {
		struct wt *t = wt_new();

		assert_int_equal(feed(t, true, reqs[i], strlen(reqs[i]), SIZE_MAX),
				 (ssize_t)strlen(reqs[i]));
		assert_null(strstr(text(&t->up), "Upgrade:"));
		assert_null(strstr(text(&t->up), "HTTP2-Settings"));
		assert_null(strstr(text(&t->up), "Connection: Upgrade"));
		/* ... and a 101 to it is refused, as to any request that is not one. */
		assert_int_equal(feed(t, false, SWITCH, strlen(SWITCH), SIZE_MAX), -EPROTO);
		assert_non_null(strstr(t->err.msg, "switched protocols"));
		wt_free(t);
	}
}

static void test_flow_refuses_a_101_that_is_not_the_websocket_asked_for(void **state)
{
	static const char *const bad[] = {
	    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
	    "Sec-WebSocket-Accept: AAAAAAAAAAAAAAAAAAAAAAAAAAA=\r\n\r\n",
	    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
	    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n"
	    "Sec-WebSocket-Accept: " ACCEPT "\r\n\r\n",
	    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
	    "Sec-WebSocket-Accept: " ACCEPT "\r\n\r\n",
	    SWITCH, /* with an extension, below */
	};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		struct wt *t = wt_new();
		char resp[512];

		(void)snprintf(resp, sizeof(resp), "%s", bad[i]);
		if (i == ELEMENTSOF(bad) - 1)
			(void)snprintf(resp, sizeof(resp),
				       "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
				       "Connection: Upgrade\r\nSec-WebSocket-Accept: " ACCEPT "\r\n"
				       "Sec-WebSocket-Extensions: permessage-deflate\r\n\r\n");
		assert_int_equal(feed(t, true, UPGRADE_REQ, strlen(UPGRADE_REQ), SIZE_MAX),
				 (ssize_t)strlen(UPGRADE_REQ));
		assert_int_equal(feed(t, false, resp, strlen(resp), SIZE_MAX), -EPROTO);
		assert_int_equal(netns_buf_len(&t->down), 0);
		wt_free(t);
	}
}

static void test_flow_holds_bytes_after_an_upgrade_until_its_answer(void **state)
{
	static const char next[] = "GET /next HTTP/1.1\r\nHost: " HOST "\r\n\r\n";
	static const char no[] = "HTTP/1.1 400 Bad Request\r\nContent-Length: 2\r\n\r\nno";
	struct wt *t = wt_new();
	char both[1024];

	(void)state;
	(void)snprintf(both, sizeof(both), "%s%s", UPGRADE_REQ, next);
	/* The next request waits, unread, until the upgrade is declined. */
	assert_int_equal(feed(t, true, both, strlen(both), SIZE_MAX), (ssize_t)strlen(UPGRADE_REQ));
	assert_null(strstr(text(&t->up), "/next"));
	assert_int_equal(feed(t, false, no, strlen(no), SIZE_MAX), (ssize_t)strlen(no));
	assert_int_equal(feed(t, true, next, strlen(next), SIZE_MAX), (ssize_t)strlen(next));
	assert_non_null(strstr(text(&t->up), "GET /next HTTP/1.1"));
	wt_free(t);
}

static void test_flow_swaps_a_surrogate_in_a_client_frame_and_turns_it_back(void **state)
{
	char msg[256];
	uint8_t in[512];
	struct frames fs;

	(void)state;
	(void)snprintf(msg, sizeof(msg), "{\"token\": \"%s\"}", S_OK);
	for (size_t piece = 1; piece <= 64; piece = piece * 2 + 1) {
		struct wt *t = wt_upgraded();
		size_t n = frame(in, true, true, NETNS_WS_TEXT, msg);

		assert_int_equal(feed(t, true, in, n, piece), (ssize_t)n);
		assert_int_equal(
		    parse_all(true, netns_buf_head(&t->up), netns_buf_len(&t->up), SIZE_MAX, &fs),
		    0);
		assert_int_equal(fs.n_messages, 1);
		assert_int_equal(fs.opcodes[0], NETNS_WS_TEXT);
		assert_true(fs.masked[0]);
		fs.text[fs.n] = '\0';
		assert_string_equal(fs.text, "{\"token\": \"" V_OK "\"}");
		assert_string_equal(t->fake.where, "websocket frame");

		/* The server echoes it: the sandbox sees the surrogate. */
		n = frame(in, false, true, NETNS_WS_TEXT, "echo " V_OK "!");
		assert_int_equal(feed(t, false, in, n, piece), (ssize_t)n);
		assert_int_equal(parse_all(false, netns_buf_head(&t->down), netns_buf_len(&t->down),
					   SIZE_MAX, &fs),
				 0);
		assert_false(fs.masked[0]);
		fs.text[fs.n] = '\0';
		assert_string_equal(fs.text, "echo " S_OK "!");
		wt_free(t);
	}
}

static void test_flow_swaps_a_surrogate_split_across_frames(void **state)
{
	const char *s = S_OK;
	uint8_t in[512];
	struct frames fs;
	struct wt *t = wt_upgraded();
	size_t n = 0;
	char a[64], b[64];

	(void)state;
	(void)snprintf(a, sizeof(a), "key=%.10s", s);
	(void)snprintf(b, sizeof(b), "%s;", s + 10);
	n += frame(in + n, true, false, NETNS_WS_TEXT, a);
	n += frame(in + n, true, true, NETNS_WS_PING, "ping " S_OK);
	n += frame(in + n, true, true, NETNS_WS_CONT, b);
	assert_int_equal(feed(t, true, in, n, SIZE_MAX), (ssize_t)n);
	assert_int_equal(
	    parse_all(true, netns_buf_head(&t->up), netns_buf_len(&t->up), SIZE_MAX, &fs), 0);
	fs.text[fs.n] = '\0';
	assert_string_equal(fs.text, "key=" V_OK ";");
	fs.control[fs.control_n] = '\0';
	assert_string_equal(fs.control, "ping " V_OK);
	assert_int_equal(fs.n_messages, 1);
	assert_null(memmem(netns_buf_head(&t->up), netns_buf_len(&t->up), "AbCdEfGhIj", 10));
	wt_free(t);
}

static void test_flow_refuses_a_surrogate_not_bound_with_a_close_frame(void **state)
{
	uint8_t in[512];
	struct frames fs;
	struct wt *t = wt_upgraded();
	size_t n = 0;

	(void)state;
	n += frame(in + n, true, true, NETNS_WS_TEXT, "fine");
	n += frame(in + n, true, true, NETNS_WS_BINARY, "leak " S_NO " now");
	assert_int_equal(feed(t, true, in, n, SIZE_MAX), -EPERM);
	assert_non_null(strstr(t->err.msg, "not bound"));
	assert_null(memmem(netns_buf_head(&t->up), netns_buf_len(&t->up), "leak", 4));
	assert_true(netns_http_flow_error_response(t->f, 403, t->err.msg, &t->down));
	assert_int_equal(
	    parse_all(false, netns_buf_head(&t->down), netns_buf_len(&t->down), SIZE_MAX, &fs), 0);
	assert_int_equal(fs.opcodes[0], NETNS_WS_CLOSE);
	assert_int_equal((uint8_t)fs.control[0] << 8 | (uint8_t)fs.control[1], 1008);
	assert_true(fs.control_n <= NETNS_WS_CONTROL_MAX);
	wt_free(t);
}

static void test_flow_refuses_a_control_frame_a_value_makes_too_long(void **state)
{
	char ping[NETNS_WS_CONTROL_MAX + 1];
	uint8_t in[256];
	struct wt *t = wt_upgraded();
	size_t n;

	(void)state;
	memset(ping, 'p', sizeof(ping) - 1);
	ping[sizeof(ping) - 1] = '\0';
	memcpy(ping, S_OK, strlen(S_OK));
	n = frame(in, true, true, NETNS_WS_PING, ping);
	assert_int_equal(feed(t, true, in, n, SIZE_MAX), -EMSGSIZE);
	wt_free(t);
}

static void test_flow_refuses_bad_frames_and_a_close_within_a_message(void **state)
{
	static const uint8_t rsv[] = {0xc1, 0x80, 1, 2, 3, 4};
	static const uint8_t cut[] = {0x01, 0x03, 'a', 'b', 'c'};
	struct wt *t = wt_upgraded();
	struct al_error err = {0};

	(void)state;
	assert_int_equal(feed(t, true, rsv, sizeof(rsv), SIZE_MAX), -EBADMSG);
	/* The sandbox is told why, as a protocol error. */
	assert_true(netns_http_flow_error_response(t->f, 400, t->err.msg, &t->down));
	assert_memory_equal(netns_buf_head(&t->down), "\x88", 1);
	assert_int_equal(netns_buf_head(&t->down)[2] << 8 | netns_buf_head(&t->down)[3], 1002);
	wt_free(t);
	t = wt_upgraded();
	assert_int_equal(feed(t, false, rsv, 2, SIZE_MAX), -EBADMSG);
	wt_free(t);
	/* The upstream closes within a message: cut short. */
	t = wt_upgraded();
	assert_int_equal(feed(t, false, cut, sizeof(cut), SIZE_MAX), (ssize_t)sizeof(cut));
	assert_int_equal(netns_http_flow_response_eof(t->f, &t->down, &err), -EPIPE);
	wt_free(t);
	t = wt_upgraded();
	assert_int_equal(netns_http_flow_response_eof(t->f, &t->down, &err), 0);
	wt_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ws_accept_is_rfc_6455s_example),
	    cmocka_unit_test(test_ws_parses_rfc_6455s_examples_in_every_split),
	    cmocka_unit_test(test_ws_parser_streams_a_long_payload_without_gathering_it),
	    cmocka_unit_test(test_ws_parser_refuses_what_no_agreed_protocol_allows),
	    cmocka_unit_test(test_ws_put_head_round_trips),
	    cmocka_unit_test(test_flow_keeps_a_websocket_upgrade_and_drops_its_extensions),
	    cmocka_unit_test(test_flow_still_removes_other_upgrades),
	    cmocka_unit_test(test_flow_refuses_a_101_that_is_not_the_websocket_asked_for),
	    cmocka_unit_test(test_flow_holds_bytes_after_an_upgrade_until_its_answer),
	    cmocka_unit_test(test_flow_swaps_a_surrogate_in_a_client_frame_and_turns_it_back),
	    cmocka_unit_test(test_flow_swaps_a_surrogate_split_across_frames),
	    cmocka_unit_test(test_flow_refuses_a_surrogate_not_bound_with_a_close_frame),
	    cmocka_unit_test(test_flow_refuses_a_control_frame_a_value_makes_too_long),
	    cmocka_unit_test(test_flow_refuses_bad_frames_and_a_close_within_a_message),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
