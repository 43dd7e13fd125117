/* WebSocket on an inspected HTTP/1.1 flow (RFC 6455): the upgrade judged both ways, then the
 * frames of both directions relayed (ws.c parses them).
 *
 * The request keeps "Upgrade: websocket" (any other Upgrade, h2c first of all, is removed as
 * always) and loses Sec-WebSocket-Extensions: no extension is ever agreed, since
 * permessage-deflate would hide values from the search. The 101 must agree to exactly that
 * (the accept value for the key sent, no extension), else the connection is refused.
 *
 * Then every frame is parsed and written out again. Data payloads stream through the same search
 * as bodies: the sandbox's for surrogates, each swapped for its real value (ops->resolve refuses
 * one on a host its credential is not bound to: the flow ends, and the sandbox gets a Close
 * frame 1008), the upstream's for real values, each turned back into its surrogate. The search
 * runs over a message, not a frame: a tail that could begin a pattern is held back across the
 * frames of a message, and what the search releases goes out as frames of its own (a message
 * may be fragmented anew by an intermediary when no extension was agreed: RFC 6455 5.4), with
 * lengths for what they carry and, towards the upstream, fresh masks. Control frames (at most
 * 125 bytes) are searched whole, and may come between the frames of a message.
 *
 * Decisions the contract leaves open:
 * - A surrogate is swapped in text and binary messages alike, and in ping, pong and close
 *   payloads (where a longer value that makes one pass 125 bytes is refused, -EMSGSIZE).
 * - Only a surrogate as it is swapped in a frame: its encoded forms are not looked for, as in
 *   bodies.
 * - The request that upgrades is the flow's last: bytes after it wait, unread, until its answer
 *   says whether they are frames (a 101) or the next request. */

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/types.h>

#include "broker/client.h"
#include "netns/http-flow-internal.h"

#define WS_STEP (16 * 1024) /* payload bytes unmasked and searched at a time */

/* ---- the handshake ---- */

/* Whether a field list (Connection) names token. */
static bool list_has(const char *value, size_t n, const char *token)
{
	const char *p = value, *end = value + n, *s;
	bool more;
	size_t k;

	do {
		more = flow_list_next(&p, end, &s, &k);
		if (ascii_eq(s, k, token))
			return true;
	} while (more);
	return false;
}

/* The one field named name among h[0..n): its index, -ENOENT when none, -EEXIST for more. */
static int the_field(const struct netns_http_header *h, size_t n, const char *name)
{
	int found = -ENOENT;

	for (size_t i = 0; i < n; i++) {
		if (!ascii_eq(h[i].name, h[i].name_len, name))
			continue;
		if (found >= 0)
			return -EEXIST;
		found = (int)i;
	}
	return found;
}

/* Whether some field named name among h[0..n) lists token. */
static bool fields_list(const struct netns_http_header *h, size_t n, const char *name,
			const char *token)
{
	for (size_t i = 0; i < n; i++)
		if (ascii_eq(h[i].name, h[i].name_len, name) &&
		    list_has(h[i].value, h[i].value_len, token))
			return true;
	return false;
}

void flow_ws_request(struct netns_http_flow *f, const struct netns_http_request *req)
{
	const struct netns_http_header *h = req->headers;
	int up, key;

	f->req_ws = false;
	up = the_field(h, req->n_headers, "upgrade");
	key = the_field(h, req->n_headers, "sec-websocket-key");
	if (up < 0 || key < 0 || !ascii_eq(h[up].value, h[up].value_len, "websocket") ||
	    !fields_list(h, req->n_headers, "connection", "upgrade"))
		return;
	if (req->method_len != 3 || memcmp(req->method, "GET", 3) != 0 || req->minor_version != 1 ||
	    !req->keep_alive || req->body == NETNS_HTTP_BODY_CHUNKED ||
	    (req->body == NETNS_HTTP_BODY_LENGTH && req->content_length > 0))
		return;
	if (netns_ws_accept(h[key].value, h[key].value_len, f->ws_accept) < 0)
		return;
	f->req_ws = true;
}

int flow_ws_check_switch(const struct netns_http_flow *f, const struct response_head *rh,
			 struct al_error *err)
{
	const struct netns_http_header *h = rh->headers;
	int up, acc;

	up = the_field(h, rh->n_headers, "upgrade");
	acc = the_field(h, rh->n_headers, "sec-websocket-accept");
	if (rh->minor != 1 || up < 0 || !ascii_eq(h[up].value, h[up].value_len, "websocket") ||
	    !fields_list(h, rh->n_headers, "connection", "upgrade"))
		return al_error_set(err, -EPROTO,
				    "The upstream's 101 does not switch to the WebSocket protocol");
	if (acc < 0 || h[acc].value_len != NETNS_WS_ACCEPT_LEN ||
	    memcmp(h[acc].value, f->ws_accept, NETNS_WS_ACCEPT_LEN) != 0)
		return al_error_set(
		    err, -EPROTO,
		    "The upstream's 101 has no Sec-WebSocket-Accept for the key sent");
	if (the_field(h, rh->n_headers, "sec-websocket-extensions") != -ENOENT)
		return al_error_set(
		    err, -EPROTO,
		    "The upstream agreed to a WebSocket extension, which no request "
		    "offered");
	return 0;
}

void flow_ws_start(struct netns_http_flow *f)
{
	netns_ws_parser_init(&f->ws_up.ps, true);
	netns_ws_parser_init(&f->ws_down.ps, false);
	f->pending_first = (f->pending_first + 1) % PENDING_MAX;
	f->n_pending--;
	f->req = REQ_WS;
	f->resp = RESP_WS;
}

/* ---- frames ---- */

/* A fresh mask for a frame to the upstream (RFC 6455 5.3: unpredictable). */
static int next_mask(struct netns_http_flow *f, uint8_t mask[4])
{
	if (f->ws_masks_used == 0 || f->ws_masks_used >= sizeof(f->ws_masks)) {
		ssize_t k = getrandom(f->ws_masks, sizeof(f->ws_masks), 0);

		if (k != (ssize_t)sizeof(f->ws_masks))
			return k < 0 ? -errno : -EIO;
		f->ws_masks_used = 0;
	}
	memcpy(mask, f->ws_masks + f->ws_masks_used, 4);
	f->ws_masks_used += 4;
	return 0;
}

/* Writes piece as one frame (masked towards the upstream) and empties it. */
static int put_frame(struct netns_http_flow *f, bool client, bool fin, uint8_t opcode,
		     struct netns_buf *piece, struct netns_buf *out)
{
	uint8_t head[NETNS_WS_HEAD_MAX], mask[4];
	size_t n = netns_buf_len(piece), hl;
	int r;

	if (client) {
		r = next_mask(f, mask);
		if (r < 0)
			return r;
		if (n > 0) /* an empty piece may have no storage yet */
			netns_ws_mask(mask, 0, piece->data + piece->start, n);
	}
	hl = netns_ws_put_head(head, fin, opcode, client ? mask : NULL, n);
	r = netns_buf_append(out, head, hl, OUT_LIMIT);
	if (r >= 0 && n > 0)
		r = netns_buf_append(out, netns_buf_head(piece), n, OUT_LIMIT);
	buf_clear(piece);
	return r;
}

/* Writes what hold kept back and data (n bytes) to piece with every surrogate swapped for its
 * real value, and keeps back again a tail that could begin one, unless final. hold may be NULL
 * when final. */
static int swap_pass(struct netns_http_flow *f, struct netns_buf *hold, const uint8_t *data,
		     size_t n, bool final, struct netns_buf *piece, struct al_error *err)
{
	struct writer w = {.b = piece, .max = OUT_LIMIT};
	const struct broker_secret *v;
	const uint8_t *p = data, *q;
	size_t pn = n, at = 0, limit;
	struct match mt;
	int r;

	if (hold && netns_buf_len(hold) > 0) {
		r = netns_buf_append(hold, data, n, SIZE_MAX);
		if (r < 0)
			return r;
		p = netns_buf_head(hold);
		pn = netns_buf_len(hold);
	}
	limit = final ? pn : flow_matcher_partial(&f->surrogates, p, pn);
	while ((q = flow_matcher_find(&f->surrogates, p + at, p + pn, &mt)) &&
	       (size_t)(q - p) < limit) {
		r = flow_value(f, mt.pt->owner, "websocket frame", &v, err);
		if (r < 0)
			return r;
		put(&w, p + at, (size_t)(q - p) - at);
		put(&w, v->data, v->len);
		if (f->o.ops && f->o.ops->swapped)
			f->o.ops->swapped(f->o.userdata, f->o.surrogates[mt.pt->owner],
					  "websocket frame", f->stream);
		at = (size_t)(q - p) + mt.len;
	}
	limit = MAX(limit, at);
	put(&w, p + at, limit - at);
	if (w.r < 0)
		return w.r == -EMSGSIZE
			   ? al_error_set(err, -EMSGSIZE, "The output buffer passed its limit")
			   : w.r;
	if (p == data)
		return hold ? netns_buf_append(hold, data + limit, pn - limit, SIZE_MAX) : 0;
	buf_drop(hold, limit);
	return 0;
}

/* Searches a piece of a data message (final: its end) and writes what is released as a frame. */
static int data_piece(struct netns_http_flow *f, struct ws_dir *d, bool client, const uint8_t *p,
		      size_t n, bool final, struct netns_buf *out, struct al_error *err)
{
	int r;

	if (client)
		r = swap_pass(f, &d->hold, p, n, final, &d->piece, err);
	else
		r = flow_body_pass(&d->hold, &f->values_m, NULL, p, n, final, false, &d->piece,
				   err);
	if (r < 0)
		return r;
	if (netns_buf_len(&d->piece) == 0 && !final)
		return 0;
	r = put_frame(f, client, final, d->started ? NETNS_WS_CONT : d->opcode, &d->piece, out);
	d->started = !final;
	return r;
}

/* A control frame, whole: searched, and written out at once. */
static int control_frame(struct netns_http_flow *f, struct ws_dir *d, bool client, uint8_t opcode,
			 struct netns_buf *out, struct al_error *err)
{
	struct writer w = {.b = &d->piece, .max = OUT_LIMIT};
	int r;

	/* piece is empty here: what a message's search released went out with its frame. */
	if (client)
		r = swap_pass(f, NULL, d->ctl, d->ctl_n, true, &d->piece, err);
	else {
		flow_put_replaced(&w, &f->values_m, d->ctl, d->ctl_n);
		r = w.r;
	}
	explicit_bzero(d->ctl, sizeof(d->ctl));
	d->ctl_n = 0;
	if (r >= 0 && netns_buf_len(&d->piece) > NETNS_WS_CONTROL_MAX)
		r = al_error_set(err, -EMSGSIZE,
				 "A WebSocket control frame would be longer than %d bytes with a "
				 "value swapped in",
				 NETNS_WS_CONTROL_MAX);
	if (r < 0) {
		buf_clear(&d->piece);
		return r;
	}
	return put_frame(f, client, true, opcode, &d->piece, out);
}

static int on_data(struct netns_http_flow *f, struct ws_dir *d, bool client,
		   const struct netns_ws_event *ev, struct netns_buf *out, struct al_error *err)
{
	const struct netns_ws_frame *fr = ev->frame;
	uint8_t tmp[WS_STEP];
	int r;

	memcpy(tmp, ev->data, ev->n);
	if (fr->masked)
		netns_ws_mask(fr->mask, ev->offset, tmp, ev->n);
	if (netns_ws_is_control(fr->opcode)) {
		memcpy(d->ctl + d->ctl_n, tmp, ev->n);
		d->ctl_n += ev->n;
		r = 0;
	} else
		r = data_piece(f, d, client, tmp, ev->n, fr->fin && ev->offset + ev->n == fr->len,
			       out, err);
	explicit_bzero(tmp, ev->n);
	return r;
}

ssize_t flow_ws_relay(struct netns_http_flow *f, struct ws_dir *d, bool client, const uint8_t *buf,
		      size_t len, struct netns_buf *out, struct al_error *err)
{
	struct netns_ws_event ev;
	size_t done = 0;
	ssize_t n;
	int r = 0;

	if (!client) {
		/* A value resolved in the sandbox's frames is turned back from now on. */
		r = flow_refresh_values(f);
		if (r < 0)
			return r;
	}
	while (netns_buf_len(out) <= NETNS_HTTP_FLOW_OUT_MAX) {
		n = netns_ws_parse(&d->ps, buf + done, MIN(len - done, (size_t)WS_STEP), &ev, err);
		if (n < 0)
			return n;
		done += (size_t)n;
		switch (ev.kind) {
		case NETNS_WS_MORE:
			return (ssize_t)done;
		case NETNS_WS_HEAD:
			if (ev.frame->opcode == NETNS_WS_TEXT ||
			    ev.frame->opcode == NETNS_WS_BINARY) {
				d->opcode = ev.frame->opcode;
				d->started = false;
			}
			break;
		case NETNS_WS_DATA:
			r = on_data(f, d, client, &ev, out, err);
			break;
		case NETNS_WS_END:
			if (netns_ws_is_control(ev.frame->opcode))
				r = control_frame(f, d, client, ev.frame->opcode, out, err);
			else if (ev.message_end && ev.frame->len == 0)
				r = data_piece(f, d, client, (const uint8_t *)"", 0, true, out,
					       err);
			break;
		}
		if (r < 0)
			return r;
	}
	return (ssize_t)done;
}

bool flow_ws_at_boundary(const struct ws_dir *d)
{
	return netns_ws_parser_at_boundary(&d->ps, true);
}

int flow_ws_close(struct netns_buf *out, const char *message)
{
	return flow_ws_close_status(out, 403, message);
}

int flow_ws_close_status(struct netns_buf *out, int status, const char *message)
{
	/* RFC 6455 7.4.1: policy violation, protocol error, message too big, internal error. */
	unsigned code = status == 403 ? 1008 : status == 400 ? 1002 : status == 431 ? 1009 : 1011;
	uint8_t frame[NETNS_WS_HEAD_MAX + NETNS_WS_CONTROL_MAX];
	size_t n = MIN(strlen(message), (size_t)NETNS_WS_CONTROL_MAX - 2 - strlen("airlock: "));
	size_t hl =
	    netns_ws_put_head(frame, true, NETNS_WS_CLOSE, NULL, 2 + strlen("airlock: ") + n);

	frame[hl] = (uint8_t)(code >> 8);
	frame[hl + 1] = (uint8_t)code;
	memcpy(frame + hl + 2, "airlock: ", strlen("airlock: "));
	memcpy(frame + hl + 2 + strlen("airlock: "), message, n);
	return netns_buf_append(out, frame, hl + 2 + strlen("airlock: ") + n, OUT_LIMIT);
}

void flow_ws_dir_done(struct ws_dir *d)
{
	netns_buf_done(&d->hold);
	netns_buf_done(&d->piece);
	explicit_bzero(d->ctl, sizeof(d->ctl));
	d->ctl_n = 0;
}
