/* fuzz-http2: one inspected HTTP/2 connection (netns/http2.c), both ways. The input is records
 * of one byte of direction (even: the sandbox's, odd: the upstream's), one byte of length and
 * that many bytes; the sandbox's stream begins with the client preface and an empty SETTINGS,
 * the upstream's with an empty SETTINGS, so that the fuzzer starts past them. A fake broker
 * resolves S1 to V1, which is bound to the host (so it is looked for in every response), and
 * refuses S2. Checked: neither surrogate ever goes to the upstream (what is sent there is
 * decoded by a server session of libnghttp2's own: no field and no stream's body holds one), V1
 * never reaches the sandbox (what is sent there is decoded too: each field through an HPACK
 * decoder, each stream's DATA joined up; CI once found Huffman bytes that spelled V1 in a field
 * that was not it), errors are the documented ones and carry a message, and what each side is to
 * get stays bounded. */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nghttp2/nghttp2.h>

#include "broker/client.h"
#include "netns/netns-internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HOST "api.example.com"
#define S1 "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
#define V1 "(real-value-one)"
#define S2 "airlock_sur_0123456789abcdefghijABCDEFGHIJkl"

static const uint8_t preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
static const uint8_t settings[] = {0, 0, 0, 4, 0, 0, 0, 0, 0};

static int fake_resolve(void *userdata, const char *surrogate, struct broker_secret **ret,
			struct al_error *err)
{
	struct broker_secret *s;

	(void)userdata;
	if (strcmp(surrogate, S1) != 0)
		return al_error_set(err, -EPERM, "credential \"other\" is not bound to " HOST);
	s = broker_secret_new(strlen(V1));
	if (!s)
		return -ENOMEM;
	memcpy(s->data, V1, s->len);
	*ret = s;
	return 0;
}

static int fake_bound_value(void *userdata, const char *surrogate, struct broker_secret **ret,
			    struct al_error *err)
{
	*ret = NULL;
	return strcmp(surrogate, S1) == 0 ? fake_resolve(userdata, surrogate, ret, err) : 0;
}

static void fake_refused(void *userdata, int error, const char *message, uint32_t stream)
{
	(void)userdata;
	if (!message || !message[0] || stream == 0 || stream % 2 == 0)
		abort();
	(void)error;
}

/* The upstream's view: each field, and each stream's body (the first STREAMS_SEEN streams). */
#define STREAMS_SEEN 16
struct seen {
	struct netns_buf body[STREAMS_SEEN];
};

static bool has_surrogate(const uint8_t *p, size_t n)
{
	return p && n > 0 && (memmem(p, n, S1, strlen(S1)) || memmem(p, n, S2, strlen(S2)));
}

static int seen_header(nghttp2_session *s, const nghttp2_frame *frame, const uint8_t *name,
		       size_t nl, const uint8_t *value, size_t vl, uint8_t flags, void *userdata)
{
	(void)s, (void)frame, (void)flags, (void)userdata;
	if (has_surrogate(name, nl) || has_surrogate(value, vl))
		abort();
	return 0;
}

static int seen_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *data, size_t len,
		     void *userdata)
{
	struct seen *sn = userdata;
	struct netns_buf *b;

	(void)s, (void)flags;
	if (id <= 0 || id / 2 >= STREAMS_SEEN)
		return 0;
	b = &sn->body[id / 2];
	(void)netns_buf_append(b, data, len, SIZE_MAX);
	if (has_surrogate(netns_buf_head(b), netns_buf_len(b)))
		abort();
	return 0;
}

/* Decodes what went to the upstream as the upstream would. */
static void check_upstream_view(const uint8_t *p, size_t n)
{
	nghttp2_session_callbacks *cb;
	nghttp2_session *s;
	struct seen sn = {0};

	if (n == 0 || nghttp2_session_callbacks_new(&cb) != 0)
		return;
	nghttp2_session_callbacks_set_on_header_callback(cb, seen_header);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, seen_data);
	if (nghttp2_session_server_new(&s, cb, &sn) == 0) {
		(void)nghttp2_session_mem_recv(s, p, n);
		nghttp2_session_del(s);
	}
	nghttp2_session_callbacks_del(cb);
	for (size_t i = 0; i < STREAMS_SEEN; i++)
		netns_buf_done(&sn.body[i]);
}

/* Decodes what went to the sandbox as the sandbox would: each field of each HEADERS and
 * CONTINUATION block through an HPACK decoder, each stream's DATA joined up. V1 must be in
 * neither (raw bytes are no proof: a field's Huffman code can spell anything). */
static bool has_v1(const uint8_t *p, size_t n)
{
	return p && n > 0 && memmem(p, n, V1, strlen(V1));
}

static void check_sandbox_view(const uint8_t *p, size_t n)
{
	struct netns_buf block = {0}, body[STREAMS_SEEN] = {{0}};
	nghttp2_hd_inflater *hd = NULL;

	if (nghttp2_hd_inflate_new(&hd) != 0)
		return;
	for (size_t off = 0; off + 9 <= n;) {
		size_t len = (size_t)p[off] << 16 | (size_t)p[off + 1] << 8 | p[off + 2], pad = 0;
		uint8_t type = p[off + 3], flags = p[off + 4];
		uint32_t id = ((uint32_t)p[off + 5] & 0x7f) << 24 | (uint32_t)p[off + 6] << 16 |
			      (uint32_t)p[off + 7] << 8 | p[off + 8];
		const uint8_t *f = p + off + 9;

		if (off + 9 + len > n)
			break;
		off += 9 + len;
		if ((type == NGHTTP2_DATA || type == NGHTTP2_HEADERS) &&
		    (flags & NGHTTP2_FLAG_PADDED)) {
			if (len < 1 || f[0] >= len)
				abort(); /* the proxy never sends this */
			pad = f[0];
			f++, len -= 1 + pad;
		}
		if (type == NGHTTP2_HEADERS && (flags & NGHTTP2_FLAG_PRIORITY)) {
			if (len < 5)
				abort();
			f += 5, len -= 5;
		}
		if (type == NGHTTP2_DATA && id / 2 < STREAMS_SEEN && len > 0) {
			(void)netns_buf_append(&body[id / 2], f, len, SIZE_MAX);
			if (has_v1(netns_buf_head(&body[id / 2]), netns_buf_len(&body[id / 2])))
				abort();
		}
		if (type != NGHTTP2_HEADERS && type != NGHTTP2_CONTINUATION)
			continue;
		(void)netns_buf_append(&block, f, len, SIZE_MAX);
		if (!(flags & NGHTTP2_FLAG_END_HEADERS) || netns_buf_len(&block) == 0)
			continue;
		for (const uint8_t *in = netns_buf_head(&block), *end = in + netns_buf_len(&block);
		     ;) {
			nghttp2_nv nv;
			int fl = 0;
			ssize_t k = nghttp2_hd_inflate_hd2(hd, &nv, &fl, in, (size_t)(end - in), 1);

			if (k < 0)
				abort(); /* what the proxy's own encoder wrote decodes */
			in += k;
			if ((fl & NGHTTP2_HD_INFLATE_EMIT) &&
			    (has_v1(nv.name, nv.namelen) || has_v1(nv.value, nv.valuelen)))
				abort();
			if (fl & NGHTTP2_HD_INFLATE_FINAL) {
				nghttp2_hd_inflate_end_headers(hd);
				break;
			}
			if (k == 0 && in == end)
				break;
		}
		if (netns_buf_len(&block) > 0)
			netns_buf_consume(&block, netns_buf_len(&block));
	}
	nghttp2_hd_inflate_del(hd);
	netns_buf_done(&block);
	for (size_t i = 0; i < STREAMS_SEEN; i++)
		netns_buf_done(&body[i]);
}

static const struct netns_http_flow_ops ops = {
    .resolve = fake_resolve, .bound_value = fake_bound_value, .refused = fake_refused};
static const char *const surrogates[] = {S1, S2, NULL};

static void check_error(int r, const struct al_error *err)
{
	if (r < 0 && r != -EBADMSG && r != -ENOMEM && r != -EIO)
		abort();
	if (r < 0 && r != -ENOMEM && !err->msg[0])
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct netns_http_flow_options o = {
	    .host = HOST, .port = 443, .surrogates = surrogates, .ops = &ops};
	struct netns_buf to_c = {0}, to_u = {0}, seen_u = {0}, seen_c = {0};
	struct netns_h2 *h = NULL;
	struct al_error err = {0};
	int r;

	if (netns_h2_new(&o, &h) < 0)
		return 0;
	r = (int)MIN(netns_h2_sandbox_in(h, preface, sizeof(preface) - 1, &err), 0);
	if (r >= 0)
		r = (int)MIN(netns_h2_sandbox_in(h, settings, sizeof(settings), &err), 0);
	if (r >= 0)
		r = (int)MIN(netns_h2_upstream_in(h, settings, sizeof(settings), &err), 0);
	for (size_t i = 0; r >= 0 && i + 2 <= size;) {
		bool upstream = data[i] & 1;
		size_t n = data[i + 1];

		i += 2;
		n = n < size - i ? n : size - i;
		err = (struct al_error){0};
		/* What is not taken (the queues full) is dropped: the fuzzer only sends. */
		r = (int)MIN(upstream ? netns_h2_upstream_in(h, data + i, n, &err)
				      : netns_h2_sandbox_in(h, data + i, n, &err),
			     0);
		check_error(r, &err);
		i += n;
		if (r >= 0)
			r = netns_h2_out(h, &to_c, &to_u, &err);
		check_error(r, &err);
		if (netns_buf_len(&to_c) > 2 * NETNS_HTTP_FLOW_OUT_MAX + 65536 ||
		    netns_buf_len(&to_u) > 2 * NETNS_HTTP_FLOW_OUT_MAX + 65536)
			abort();
		/* What went out, kept whole for the checks (bounded by the input). */
		if (netns_buf_len(&to_u) > 0) {
			(void)netns_buf_append(&seen_u, netns_buf_head(&to_u), netns_buf_len(&to_u),
					       SIZE_MAX);
			netns_buf_consume(&to_u, netns_buf_len(&to_u));
		}
		if (netns_buf_len(&to_c) > 0) {
			(void)netns_buf_append(&seen_c, netns_buf_head(&to_c), netns_buf_len(&to_c),
					       SIZE_MAX);
			netns_buf_consume(&to_c, netns_buf_len(&to_c));
		}
	}
	if (netns_buf_len(&seen_u) > 0)
		check_upstream_view(netns_buf_head(&seen_u), netns_buf_len(&seen_u));
	if (netns_buf_len(&seen_c) > 0)
		check_sandbox_view(netns_buf_head(&seen_c), netns_buf_len(&seen_c));
	(void)netns_h2_idle(h);
	(void)netns_h2_done(h);
	netns_h2_upstream_eof(h);
	(void)netns_h2_out(h, &to_c, &to_u, &err);
	netns_h2_free(h);
	netns_buf_done(&to_c);
	netns_buf_done(&to_u);
	netns_buf_done(&seen_u);
	netns_buf_done(&seen_c);
	return 0;
}
