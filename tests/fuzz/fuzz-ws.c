/* fuzz-ws: WebSocket frames (ws.c) and their relay on an inspected flow (http-flow-ws.c). The
 * input is two bytes (flags, the feed size), then the bytes.
 * - Flag 1 clear: the bytes are frames for one parser (from the client with flag 2), fed in
 *   pieces of the feed size and whole: both give the same events (a digest of them); a DATA event
 *   lies within the bytes fed and continues its frame's payload, whose length the END matches;
 *   errors are -EBADMSG with a message.
 * - Flag 1 set: a flow is upgraded (a WebSocket request, its 101), then the bytes up to a line
 *   "=====" are the sandbox's frames and the rest the upstream's, each fed in pieces. A fake
 *   broker resolves S1 (bound) and refuses S2. Checked: what goes upstream parses again as masked
 *   frames whose payloads hold no surrogate, and what goes to the sandbox as unmasked frames whose
 *   messages and control payloads hold no whole V1; errors are the documented ones, with a
 *   message; after a refusal the sandbox gets a Close frame. */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "broker/client.h"
#include "netns/netns-internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HOST "api.example.com"
#define S1 "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
#define V1 "(real-value-one-that-is-long)"
#define S2 "airlock_sur_0123456789abcdefghijABCDEFGHIJkl"
#define KEY "dGhlIHNhbXBsZSBub25jZQ=="
#define UPGRADE                                                                                    \
	"GET / HTTP/1.1\r\nHost: " HOST "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"        \
	"Sec-WebSocket-Key: " KEY "\r\n\r\n"
#define SWITCH                                                                                     \
	"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"        \
	"Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n"
#define SEPARATOR "\n=====\n"
#define MESSAGE_MAX (1024 * 1024)

/* ---- the parser alone ---- */

struct digest {
	uint64_t h;
	size_t events;
};

static void mix(struct digest *d, uint64_t v)
{
	d->h = (d->h ^ v) * 0x100000001b3ull;
	d->events++;
}

/* Parses buf in pieces of at most piece bytes; returns the digest, or the error. */
static int parse(bool client, const uint8_t *buf, size_t len, size_t piece, struct digest *d)
{
	struct netns_ws_parser ps;
	struct netns_ws_event ev;
	struct al_error err = {0};
	uint64_t next = 0;
	size_t done = 0;

	*d = (struct digest){.h = 14695981039346656037ull};
	netns_ws_parser_init(&ps, client);
	for (;;) {
		size_t avail = len - done < piece ? len - done : piece;
		ssize_t n = netns_ws_parse(&ps, buf + done, avail, &ev, &err);

		if (n < 0) {
			if (n != -EBADMSG || !err.msg[0])
				__builtin_trap();
			return (int)n;
		}
		if ((size_t)n > avail)
			__builtin_trap();
		done += (size_t)n;
		switch (ev.kind) {
		case NETNS_WS_MORE:
			if (done == len)
				return 0;
			break;
		case NETNS_WS_HEAD:
			if (netns_ws_is_control(ev.frame->opcode) &&
			    (ev.frame->len > NETNS_WS_CONTROL_MAX || !ev.frame->fin))
				__builtin_trap();
			if (ev.frame->masked != client)
				__builtin_trap();
			next = 0;
			mix(d, (uint64_t)ev.frame->opcode << 56 | ev.frame->len);
			break;
		case NETNS_WS_DATA:
			if (ev.offset != next || ev.n == 0 || ev.data != buf + done - ev.n)
				__builtin_trap();
			next += ev.n;
			for (size_t i = 0; i < ev.n; i++)
				mix(d, ev.data[i]);
			d->events -= ev.n; /* the same bytes, in however many events */
			break;
		case NETNS_WS_END:
			if (next != ev.frame->len)
				__builtin_trap();
			mix(d, 0xe0d + ev.message_end);
			break;
		}
	}
}

static void fuzz_parser(bool client, const uint8_t *buf, size_t len, size_t piece)
{
	struct digest whole, pieces;
	int a = parse(client, buf, len, SIZE_MAX, &whole);
	int b = parse(client, buf, len, piece, &pieces);

	if (a != b || (a == 0 && (whole.h != pieces.h || whole.events != pieces.events)))
		__builtin_trap();
}

/* ---- the relay ---- */

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
	if (strcmp(surrogate, S1) == 0)
		return secret(V1, ret);
	return al_error_set(err, -EPERM, "credential \"other\" is not bound to " HOST);
}

static int fake_bound_value(void *userdata, const char *surrogate, struct broker_secret **ret,
			    struct al_error *err)
{
	(void)userdata;
	(void)err;
	*ret = NULL;
	return strcmp(surrogate, S1) == 0 ? secret(V1, ret) : 0;
}

static bool holds(const uint8_t *p, size_t n, const char *s)
{
	return memmem(p, n, s, strlen(s)) != NULL;
}

/* Parses what the flow wrote: whole frames only (the last may still be cut short by a feed that
 * stopped), each message's payload and each control payload checked for the forbidden strings. */
static void check_out(const struct netns_buf *b, bool client, const char *const *forbidden)
{
	static uint8_t msg[MESSAGE_MAX];
	struct netns_ws_parser ps;
	struct netns_ws_event ev;
	const uint8_t *p = b->data ? netns_buf_head(b) : (const uint8_t *)"";
	size_t len = netns_buf_len(b), done = 0, mn = 0;
	uint8_t ctl[NETNS_WS_CONTROL_MAX];
	size_t cn = 0;

	netns_ws_parser_init(&ps, client);
	for (;;) {
		ssize_t n = netns_ws_parse(&ps, p + done, len - done, &ev, NULL);

		if (n < 0)
			__builtin_trap();
		done += (size_t)n;
		if (ev.kind == NETNS_WS_MORE)
			break;
		if (ev.kind == NETNS_WS_HEAD && netns_ws_is_control(ev.frame->opcode))
			cn = 0;
		if (ev.kind == NETNS_WS_DATA) {
			bool control = netns_ws_is_control(ev.frame->opcode);
			uint8_t *dst = control ? ctl + cn : msg + mn;

			if (!control && mn + ev.n > MESSAGE_MAX)
				return; /* too long to check here */
			memcpy(dst, ev.data, ev.n);
			if (ev.frame->masked)
				netns_ws_mask(ev.frame->mask, ev.offset, dst, ev.n);
			*(control ? &cn : &mn) += ev.n;
		}
		if (ev.kind != NETNS_WS_END)
			continue;
		for (size_t i = 0; forbidden[i]; i++) {
			if (netns_ws_is_control(ev.frame->opcode) && holds(ctl, cn, forbidden[i]))
				__builtin_trap();
			if (ev.message_end && holds(msg, mn, forbidden[i]))
				__builtin_trap();
		}
		if (ev.message_end)
			mn = 0;
	}
	/* Within a message cut short by the end of the input: what went out of it so far. */
	for (size_t i = 0; forbidden[i]; i++)
		if (holds(msg, mn, forbidden[i]))
			__builtin_trap();
}

static bool is_documented(ssize_t r)
{
	return r == -EBADMSG || r == -EPERM || r == -EMSGSIZE || r == -EPROTO;
}

/* Feeds buf in pieces: false after an error (checked). */
static bool feed(struct netns_http_flow *f, bool request, const uint8_t *buf, size_t len,
		 size_t piece, struct netns_buf *out)
{
	size_t done = 0;

	while (done < len) {
		struct al_error err = {0};
		size_t n = len - done < piece ? len - done : piece;
		ssize_t r = request ? netns_http_flow_request(f, buf + done, n, out, &err)
				    : netns_http_flow_response(f, buf + done, n, out, &err);

		if (r < 0) {
			if (!is_documented(r) || !err.msg[0])
				__builtin_trap();
			return false;
		}
		if ((size_t)r < n && netns_buf_len(out) <= NETNS_HTTP_FLOW_OUT_MAX)
			__builtin_trap();
		done += (size_t)r;
		if ((size_t)r < n)
			return true; /* out is full: the rest is not fed */
	}
	return true;
}

static void fuzz_relay(const uint8_t *buf, size_t len, size_t piece)
{
	static const char *const surrogates[] = {S1, S2, NULL};
	static const char *const to_upstream[] = {S1, S2, NULL};
	static const char *const to_sandbox[] = {V1, NULL};
	static const struct netns_http_flow_ops ops = {.resolve = fake_resolve,
						       .bound_value = fake_bound_value};
	const struct netns_http_flow_options o = {
	    .host = HOST, .port = 443, .surrogates = surrogates, .ops = &ops};
	struct netns_http_flow *f = NULL;
	struct netns_buf up = {0}, down = {0};
	const uint8_t *sep = memmem(buf, len, SEPARATOR, strlen(SEPARATOR));
	size_t cn = sep ? (size_t)(sep - buf) : len;
	bool ok;

	if (netns_http_flow_new(&o, &f) < 0)
		return;
	if (!feed(f, true, (const uint8_t *)UPGRADE, strlen(UPGRADE), SIZE_MAX, &up) ||
	    !feed(f, false, (const uint8_t *)SWITCH, strlen(SWITCH), SIZE_MAX, &down))
		__builtin_trap();
	netns_buf_done(&up);
	netns_buf_done(&down);
	ok = feed(f, true, buf, cn, piece, &up);
	check_out(&up, true, to_upstream);
	if (!ok) {
		netns_buf_done(&down);
		if (!netns_http_flow_error_response(f, 403, "refused", &down))
			__builtin_trap();
		check_out(&down, false, to_sandbox);
	} else if (sep) {
		(void)feed(f, false, sep + strlen(SEPARATOR), len - cn - strlen(SEPARATOR), piece,
			   &down);
		check_out(&down, false, to_sandbox);
	}
	netns_buf_done(&up);
	netns_buf_done(&down);
	netns_http_flow_free(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t piece;

	if (size < 2)
		return 0;
	piece = (size_t)data[1] + 1;
	if (data[0] & 1)
		fuzz_relay(data + 2, size - 2, piece);
	else
		fuzz_parser(data[0] & 2, data + 2, size - 2, piece);
	return 0;
}
