/* netns/http2.c: an inspected HTTP/2 connection between a real client session (the sandbox's,
 * libnghttp2's) and a real server session (the upstream's), all in memory: swaps and un-swaps
 * per stream, refusals that end a stream and not the connection, and the limits (field section
 * size, CONTINUATION floods, rapid reset, flow control end to end). */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <nghttp2/nghttp2.h>

#include "broker/client.h"
#include "netns/netns-internal.h"

#define HOST "api.test"
#define S1 "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
#define V1 "real-value-one-0123"
#define S2 "airlock_sur_0123456789abcdefghijABCDEFGHIJkl"
#define STREAMS 8

/* What each side saw of a stream. */
struct seen {
	char headers[4096]; /* "name: value\n" */
	char body[4096];
	size_t body_len;
	int status;
	bool closed;
	uint32_t close_code;
};

struct fixture {
	struct netns_h2 *h;
	struct netns_http_flow_options o;
	nghttp2_session *client, *server;
	struct netns_buf to_c, to_u;
	struct seen c[STREAMS + 1], s[STREAMS + 1]; /* by stream id / 2 */
	int swapped, refused;
	uint32_t refused_stream;
	const char *answer;	  /* the server's response body */
	const char *answer_field; /* and a field it adds, named so (value "1"), or NULL */
	bool server_silent;	  /* the server takes bytes but never reads them (flow control) */
	size_t server_unread;	  /* ... and how many it left unread */
	int error;		  /* the last netns_h2_* error */
	int refused_streams;	  /* the client's streams closed with REFUSED_STREAM */
};

static struct fixture *fx;

/* ---- the broker ---- */

static int fake_resolve(void *userdata, const char *surrogate, struct broker_secret **ret,
			struct al_error *err)
{
	struct broker_secret *s;

	(void)userdata;
	if (strcmp(surrogate, S1) != 0)
		return al_error_set(err, -EPERM, "credential \"two\" is not bound to " HOST);
	s = broker_secret_new(strlen(V1));
	assert_non_null(s);
	memcpy(s->data, V1, s->len);
	*ret = s;
	return 0;
}

static void fake_swapped(void *userdata, const char *surrogate, const char *where, uint32_t stream)
{
	struct fixture *f = userdata;

	(void)surrogate;
	(void)where;
	assert_true(stream > 0);
	f->swapped++;
}

static void fake_refused(void *userdata, int error, const char *message, uint32_t stream)
{
	struct fixture *f = userdata;

	(void)error;
	assert_non_null(message);
	f->refused++;
	f->refused_stream = stream;
}

static const struct netns_http_flow_ops ops = {
    .resolve = fake_resolve, .swapped = fake_swapped, .refused = fake_refused};
static const char *const surrogates[] = {S1, S2, NULL};

/* ---- both ends ---- */

/* The first STREAMS streams are kept apart; the others (a flood's) share one more. */
static struct seen *seen_of(struct seen *side, int32_t id)
{
	assert_true(id > 0);
	return &side[id / 2 < STREAMS ? id / 2 : STREAMS];
}

static int on_header(nghttp2_session *s, const nghttp2_frame *frame, const uint8_t *name, size_t nl,
		     const uint8_t *value, size_t vl, uint8_t flags, void *userdata)
{
	struct seen *sn = seen_of(userdata == fx->c ? fx->c : fx->s, frame->hd.stream_id);
	size_t o = strlen(sn->headers);

	(void)s;
	(void)flags;
	if (nl == 7 && memcmp(name, ":status", 7) == 0)
		sn->status = atoi((const char *)value);
	(void)snprintf(sn->headers + o, sizeof(sn->headers) - o, "%.*s: %.*s\n", (int)nl, name,
		       (int)vl, value);
	return 0;
}

static int on_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *data, size_t len,
		   void *userdata)
{
	struct seen *sn = seen_of(userdata == fx->c ? fx->c : fx->s, id);
	size_t k =
	    len < sizeof(sn->body) - 1 - sn->body_len ? len : sizeof(sn->body) - 1 - sn->body_len;

	(void)flags;
	memcpy(sn->body + sn->body_len, data, k);
	sn->body_len += k;
	if (userdata == fx->s && fx->server_silent)
		fx->server_unread += len; /* not consumed: the window stays shut */
	else
		(void)nghttp2_session_consume(s, id, len);
	return 0;
}

static int on_close(nghttp2_session *s, int32_t id, uint32_t code, void *userdata)
{
	struct seen *sn = seen_of(userdata == fx->c ? fx->c : fx->s, id);

	(void)s;
	sn->closed = true;
	sn->close_code = code;
	if (userdata == fx->c && code == NGHTTP2_REFUSED_STREAM)
		fx->refused_streams++;
	return 0;
}

static ssize_t answer_read(nghttp2_session *s, int32_t id, uint8_t *buf, size_t length,
			   uint32_t *flags, nghttp2_data_source *source, void *userdata)
{
	const char *a = source->ptr;
	size_t n = strlen(a) < length ? strlen(a) : length;

	(void)s, (void)id, (void)userdata;
	memcpy(buf, a, n);
	*flags |= NGHTTP2_DATA_FLAG_EOF;
	return (ssize_t)n;
}

/* The upstream answers each request once it ended: 200 and fx->answer. */
static int server_frame(nghttp2_session *s, const nghttp2_frame *frame, void *userdata)
{
	const nghttp2_nv nv[] = {
	    {(uint8_t *)":status", (uint8_t *)"200", 7, 3, 0},
	    {(uint8_t *)fx->answer_field, (uint8_t *)"1",
	     fx->answer_field ? strlen(fx->answer_field) : 0, 1, 0},
	};
	nghttp2_data_provider prd = {.source.ptr = (void *)fx->answer,
				     .read_callback = answer_read};

	(void)userdata;
	if ((frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) &&
	    (frame->hd.flags & NGHTTP2_FLAG_END_STREAM))
		assert_int_equal(nghttp2_submit_response(s, frame->hd.stream_id, nv,
							 fx->answer_field ? 2 : 1, &prd),
				 0);
	return 0;
}

static nghttp2_session *session(bool server, void *userdata)
{
	nghttp2_session_callbacks *cb;
	nghttp2_option *opt;
	nghttp2_session *s;

	assert_int_equal(nghttp2_session_callbacks_new(&cb), 0);
	assert_int_equal(nghttp2_option_new(&opt), 0);
	nghttp2_option_set_no_auto_window_update(opt, 1);
	nghttp2_option_set_max_send_header_block_length(opt, 256 * 1024);
	nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_close);
	if (server)
		nghttp2_session_callbacks_set_on_frame_recv_callback(cb, server_frame);
	assert_int_equal(server ? nghttp2_session_server_new2(&s, cb, userdata, opt)
				: nghttp2_session_client_new2(&s, cb, userdata, opt),
			 0);
	nghttp2_session_callbacks_del(cb);
	nghttp2_option_del(opt);
	assert_int_equal(nghttp2_submit_settings(s, NGHTTP2_FLAG_NONE, NULL, 0), 0);
	return s;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	fx = f;
	f->o = (struct netns_http_flow_options){
	    .host = HOST, .port = 443, .surrogates = surrogates, .ops = &ops, .userdata = f};
	f->answer = "hello";
	assert_int_equal(netns_h2_new(&f->o, &f->h), 0);
	f->client = session(false, f->c);
	f->server = session(true, f->s);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	netns_h2_free(f->h);
	nghttp2_session_del(f->client);
	nghttp2_session_del(f->server);
	netns_buf_done(&f->to_c);
	netns_buf_done(&f->to_u);
	free(f);
	return 0;
}

static void deliver(struct fixture *f);

/* Gives n bytes from the client (or the server) to the proxy, whole: what it does not take yet
 * waits for its queued frames to be delivered. */
static int give(struct fixture *f, bool client, const uint8_t *p, size_t n)
{
	struct al_error err = {0};

	while (n > 0) {
		ssize_t k = client ? netns_h2_sandbox_in(f->h, p, n, &err)
				   : netns_h2_upstream_in(f->h, p, n, &err);

		if (k < 0)
			return (int)k;
		p += k;
		n -= (size_t)k;
		if (n > 0)
			deliver(f);
	}
	return 0;
}

/* Takes what the proxy has for each side out, and hands it over. */
static void deliver(struct fixture *f)
{
	struct al_error err = {0};

	f->error = netns_h2_out(f->h, &f->to_c, &f->to_u, &err);
	if (netns_buf_len(&f->to_u) > 0) {
		assert_true(nghttp2_session_mem_recv(f->server, netns_buf_head(&f->to_u),
						     netns_buf_len(&f->to_u)) >= 0);
		netns_buf_consume(&f->to_u, netns_buf_len(&f->to_u));
	}
	if (netns_buf_len(&f->to_c) > 0) {
		assert_true(nghttp2_session_mem_recv(f->client, netns_buf_head(&f->to_c),
						     netns_buf_len(&f->to_c)) >= 0);
		netns_buf_consume(&f->to_c, netns_buf_len(&f->to_c));
	}
}

/* Moves bytes until nothing moves: what the client sends to the proxy, what the proxy has for
 * each side, what the server answers. Stops at a connection error (f->error). */
static void pump(struct fixture *f)
{
	struct al_error err = {0};
	bool moved;

	do {
		const uint8_t *p;
		ssize_t n;

		moved = false;
		while ((n = nghttp2_session_mem_send(f->client, &p)) > 0) {
			moved = true;
			f->error = give(f, true, p, (size_t)n);
			if (f->error < 0)
				return;
		}
		while ((n = nghttp2_session_mem_send(f->server, &p)) > 0) {
			moved = true;
			f->error = give(f, false, p, (size_t)n);
			if (f->error < 0)
				return;
		}
		f->error = netns_h2_out(f->h, &f->to_c, &f->to_u, &err);
		if (f->error < 0)
			return;
		if (netns_buf_len(&f->to_u) > 0) {
			moved = true;
			assert_true(nghttp2_session_mem_recv(f->server, netns_buf_head(&f->to_u),
							     netns_buf_len(&f->to_u)) >= 0);
			netns_buf_consume(&f->to_u, netns_buf_len(&f->to_u));
		}
		if (netns_buf_len(&f->to_c) > 0) {
			moved = true;
			assert_true(nghttp2_session_mem_recv(f->client, netns_buf_head(&f->to_c),
							     netns_buf_len(&f->to_c)) >= 0);
			netns_buf_consume(&f->to_c, netns_buf_len(&f->to_c));
		}
	} while (moved);
}

/* Sends what the client has to the proxy, and nothing else. */
static void client_flush(struct fixture *f)
{
	struct al_error err = {0};
	const uint8_t *p;
	ssize_t n;

	(void)err;
	while (f->error >= 0 && (n = nghttp2_session_mem_send(f->client, &p)) > 0)
		f->error = give(f, true, p, (size_t)n);
}

#define NV(n, v)                                                                                   \
	{                                                                                          \
		(uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v), NGHTTP2_NV_FLAG_NONE     \
	}

/* A GET for path with one more field, as the sandbox sends it. */
static int32_t get(struct fixture *f, const char *path, const char *name, const char *value)
{
	nghttp2_nv nv[] = {
	    NV(":method", "GET"), NV(":scheme", "https"), NV(":authority", HOST),
	    NV(":path", path),	  NV("x-none", ""),
	};
	int32_t id;

	if (name)
		nv[4] = (nghttp2_nv){(uint8_t *)name, (uint8_t *)value, strlen(name), strlen(value),
				     NGHTTP2_NV_FLAG_NONE};
	id = nghttp2_submit_request(f->client, NULL, nv, name ? 5 : 4, NULL, NULL);
	assert_true(id > 0);
	return id;
}

/* ---- tests ---- */

static void test_a_surrogate_in_a_field_is_swapped_and_the_echo_turned_back(void **state)
{
	struct fixture *f = *state;
	int32_t id;

	f->answer = "you sent " V1 ".";
	id = get(f, "/", "authorization", "Bearer " S1);
	pump(f);
	assert_int_equal(f->error, 0);
	assert_non_null(strstr(seen_of(f->s, id)->headers, "authorization: Bearer " V1 "\n"));
	assert_null(strstr(seen_of(f->s, id)->headers, S1));
	assert_int_equal(seen_of(f->c, id)->status, 200);
	assert_string_equal(seen_of(f->c, id)->body, "you sent " S1 ".");
	assert_true(seen_of(f->c, id)->closed);
	assert_int_equal(f->swapped, 1);
	assert_true(netns_h2_idle(f->h));
}

/* HTTP/2 names are lower case, so a value an upstream puts in one cannot be turned back (the
 * surrogate may hold upper-case letters), and comes folded: the response is refused (found by
 * the red team: the real token reached the sandbox in a header name). */
static void test_a_value_in_a_response_field_name_is_refused(void **state)
{
	struct fixture *f = *state;
	int32_t id;

	f->answer_field = "x-real-value-one-0123-seen";
	id = get(f, "/", "authorization", "Bearer " S1);
	pump(f);
	assert_int_equal(f->error, 0);
	assert_int_equal(seen_of(f->c, id)->status, 502);
	assert_null(strstr(seen_of(f->c, id)->headers, V1));
	assert_int_equal(f->refused, 1);
}

static void test_a_surrogate_in_the_path_is_refused_on_its_stream_only(void **state)
{
	struct fixture *f = *state;
	int32_t bad, good;

	bad = get(f, "/?t=" S1, NULL, NULL);
	good = get(f, "/ok", NULL, NULL);
	pump(f);
	assert_int_equal(f->error, 0);
	assert_int_equal(seen_of(f->c, bad)->status, 403);
	assert_non_null(strstr(seen_of(f->c, bad)->body, "airlock: "));
	/* Nothing of it reached the upstream, which saw one request: the next (its stream 1). */
	assert_null(strstr(seen_of(f->s, 1)->headers, S1));
	assert_non_null(strstr(seen_of(f->s, 1)->headers, ":path: /ok\n"));
	assert_int_equal(seen_of(f->s, 3)->headers[0], '\0');
	assert_int_equal(f->refused, 1);
	assert_int_equal(f->refused_stream, (uint32_t)bad);
	assert_int_equal(seen_of(f->c, good)->status, 200);
	assert_string_equal(seen_of(f->c, good)->body, "hello");
}

static void test_a_surrogate_toward_an_unbound_host_is_refused(void **state)
{
	struct fixture *f = *state;
	int32_t id = get(f, "/", "x-key", S2);

	pump(f);
	assert_int_equal(seen_of(f->c, id)->status, 403);
	assert_int_equal(seen_of(f->s, id)->headers[0], '\0');
}

static void test_another_authority_is_refused(void **state)
{
	struct fixture *f = *state;
	nghttp2_nv nv[] = {NV(":method", "GET"), NV(":scheme", "https"),
			   NV(":authority", "evil.test"), NV(":path", "/")};
	int32_t id = nghttp2_submit_request(f->client, NULL, nv, 4, NULL, NULL);

	pump(f);
	assert_int_equal(seen_of(f->c, id)->status, 403);
	assert_int_equal(seen_of(f->s, id)->headers[0], '\0');
}

static void test_a_field_section_past_64_kib_gets_431(void **state)
{
	struct fixture *f = *state;
	static char big[20000];
	nghttp2_nv nv[8] = {NV(":method", "GET"), NV(":scheme", "https"), NV(":authority", HOST),
			    NV(":path", "/")};
	int32_t id;

	memset(big, 'a', sizeof(big) - 1);
	for (size_t i = 4; i < 8; i++)
		nv[i] = (nghttp2_nv){(uint8_t *)(i % 2 ? "x-b" : "x-a"), (uint8_t *)big, 3,
				     sizeof(big) - 1, NGHTTP2_NV_FLAG_NO_INDEX};
	id = nghttp2_submit_request(f->client, NULL, nv, 8, NULL, NULL);
	pump(f);
	assert_int_equal(f->error, 0);
	assert_int_equal(seen_of(f->c, id)->status, 431);
	assert_int_equal(seen_of(f->s, id)->headers[0], '\0');
}

/* HEADERS without END_HEADERS, then CONTINUATION frames: past 8 of them the connection ends. */
static void test_a_continuation_flood_ends_the_connection(void **state)
{
	struct fixture *f = *state;
	static const uint8_t preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
	static const uint8_t settings[] = {0, 0, 0, 4, 0, 0, 0, 0, 0};
	/* HEADERS on stream 1, no flags, one field ":method: GET" (indexed, 0x82) */
	static const uint8_t headers[] = {0, 0, 1, 1, 0, 0, 0, 0, 1, 0x82};
	/* CONTINUATION on stream 1, no flags, "x: y" literal without indexing */
	static const uint8_t cont[] = {0, 0, 5, 9, 0, 0, 0, 0, 1, 0x00, 1, 'x', 1, 'y'};
	struct al_error err = {0};
	ssize_t r;

	/* A fresh connection of raw bytes (the fixture's client stays silent). */
	r = netns_h2_sandbox_in(f->h, preface, sizeof(preface) - 1, &err);
	assert_int_equal(r, sizeof(preface) - 1);
	r = netns_h2_sandbox_in(f->h, settings, sizeof(settings), &err);
	assert_int_equal(r, sizeof(settings));
	r = netns_h2_sandbox_in(f->h, headers, sizeof(headers), &err);
	assert_int_equal(r, sizeof(headers));
	for (int i = 0; i < 100 && r >= 0; i++)
		r = netns_h2_sandbox_in(f->h, cont, sizeof(cont), &err);
	assert_true(r < 0 || netns_h2_done(f->h));
	if (r < 0)
		assert_non_null(strstr(err.msg, "HTTP/2 from the sandbox"));
}

/* Streams opened and reset at once, past the burst: the connection ends. */
static void test_rapid_reset_ends_the_connection(void **state)
{
	struct fixture *f = *state;
	int i;

	for (i = 0; i < 3000 && f->error >= 0 && !netns_h2_done(f->h); i++) {
		int32_t id = get(f, "/", NULL, NULL);

		client_flush(f); /* the HEADERS go before the reset (else nghttp2 drops both) */
		assert_int_equal(
		    nghttp2_submit_rst_stream(f->client, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL), 0);
		client_flush(f);
		if (i % 50 == 49)
			pump(f);
	}
	pump(f);
	assert_true(f->error < 0 || netns_h2_done(f->h));
	assert_true(i < 3000);
}

/* The upstream does not read: the sandbox can send no more than one stream window before the
 * proxy stops taking it (no automatic WINDOW_UPDATE). */
static ssize_t zeros_read(nghttp2_session *s, int32_t id, uint8_t *buf, size_t length,
			  uint32_t *flags, nghttp2_data_source *source, void *userdata)
{
	size_t *left = source->ptr;
	size_t n = length < *left ? length : *left;

	(void)s, (void)id, (void)userdata;
	memset(buf, 'z', n);
	*left -= n;
	if (*left == 0)
		*flags |= NGHTTP2_DATA_FLAG_EOF;
	return (ssize_t)n;
}

static void test_flow_control_is_end_to_end(void **state)
{
	struct fixture *f = *state;
	size_t left = 4 * 1024 * 1024, sent;
	nghttp2_nv nv[] = {NV(":method", "POST"), NV(":scheme", "https"), NV(":authority", HOST),
			   NV(":path", "/upload")};
	nghttp2_data_provider prd = {.source.ptr = &left, .read_callback = zeros_read};
	int32_t id;

	f->server_silent = true;
	id = nghttp2_submit_request(f->client, NULL, nv, 4, &prd, NULL);
	assert_true(id > 0);
	pump(f);
	assert_int_equal(f->error, 0);
	sent = 4 * 1024 * 1024 - left;
	/* The upstream's window (65,535 by default) plus the proxy's stream window (256 KiB). */
	assert_true(sent <= 65535 + 256 * 1024);
	assert_true(sent >= 65535);
	assert_true(f->server_unread <= 65535);
	/* Once the upstream reads, the rest flows. */
	f->server_silent = false;
	assert_int_equal(nghttp2_session_consume(f->server, id, f->server_unread), 0);
	while (left > 0 && f->error >= 0) {
		size_t before = left;

		pump(f);
		if (left == before)
			break;
	}
	assert_int_equal(left, 0);
}

static ssize_t never_read(nghttp2_session *s, int32_t id, uint8_t *buf, size_t length,
			  uint32_t *flags, nghttp2_data_source *source, void *userdata)
{
	(void)s, (void)id, (void)buf, (void)length, (void)flags, (void)source, (void)userdata;
	return NGHTTP2_ERR_DEFERRED;
}

/* An upstream that takes one stream at a time and never answers: the sandbox's requests queue
 * behind it, and resetting them (below the reset rate limit) frees the sandbox's stream slots
 * but not the queued heads. Past the connection's bounds new streams are refused, instead of
 * heads piling up without end (found by the red team: 540 MB in 80 s). */
static void test_streams_queued_behind_the_upstream_are_bounded(void **state)
{
	struct fixture *f = *state;
	static char big[16000];
	const nghttp2_settings_entry one = {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 1};
	nghttp2_data_provider prd = {.read_callback = never_read};
	nghttp2_nv nv[] = {NV(":method", "POST"), NV(":scheme", "https"), NV(":authority", HOST),
			   NV(":path", "/"), NV("x-big", "")};

	memset(big, 'b', sizeof(big) - 1);
	nv[4].value = (uint8_t *)big;
	nv[4].valuelen = sizeof(big) - 1;
	nv[4].flags = NGHTTP2_NV_FLAG_NO_INDEX;
	assert_int_equal(nghttp2_submit_settings(f->server, NGHTTP2_FLAG_NONE, &one, 1), 0);
	pump(f);
	for (int i = 0; i < 400 && f->error >= 0; i++) {
		int32_t id = nghttp2_submit_request(f->client, NULL, nv, 5, &prd, NULL);

		assert_true(id > 0);
		client_flush(f);
		if (i > 0) /* the first holds the upstream's one stream */
			assert_int_equal(nghttp2_submit_rst_stream(f->client, NGHTTP2_FLAG_NONE, id,
								   NGHTTP2_CANCEL),
					 0);
		client_flush(f);
		if (i % 20 == 19)
			pump(f);
	}
	pump(f);
	assert_int_equal(f->error, 0);
	/* At most 100 streams (or 1 MiB of heads) wait: the next one is refused at once. */
	{
		int32_t id = get(f, "/next", NULL, NULL);

		pump(f);
		assert_true(seen_of(f->c, id)->closed);
		assert_int_equal(seen_of(f->c, id)->close_code, NGHTTP2_REFUSED_STREAM);
	}
}

/* A sandbox that opens streams and never reads what it is answered (the proxy refusing them as
 * fast as they come): past a bound of frames queued for it, the proxy takes no more of its input,
 * instead of queueing refusals without end (found by the red team: 540 MB in 60 s). */
static void test_a_sandbox_that_never_reads_stops_being_read(void **state)
{
	struct fixture *f = *state;
	static const uint8_t preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
	static const uint8_t settings[] = {0, 0, 0, 4, 0, 0, 0, 0, 0};
	/* HEADERS, END_HEADERS, on stream ID: :method GET, :scheme https, :path / (indexed),
	 * :authority api.test (literal, indexed name) */
	uint8_t headers[] = {0,	   0,	 13, 1,	  4,   0,   0,	 0,   0,   0x82, 0x87,
			     0x84, 0x01, 8,  'a', 'p', 'i', '.', 't', 'e', 's',	 't'};
	struct al_error err = {0};
	size_t taken = 0, offered = 0;

	assert_int_equal(netns_h2_sandbox_in(f->h, preface, sizeof(preface) - 1, &err),
			 sizeof(preface) - 1);
	assert_int_equal(netns_h2_sandbox_in(f->h, settings, sizeof(settings), &err),
			 sizeof(settings));
	/* Streams past every limit, as fast as they come; nothing is ever read back. */
	for (uint32_t id = 1; id < 2 * 400000; id += 2) {
		ssize_t k;

		headers[5] = (uint8_t)(id >> 24);
		headers[6] = (uint8_t)(id >> 16);
		headers[7] = (uint8_t)(id >> 8);
		headers[8] = (uint8_t)id;
		k = netns_h2_sandbox_in(f->h, headers, sizeof(headers), &err);
		assert_true(k >= 0);
		offered += sizeof(headers);
		taken += (size_t)k;
		assert_int_equal(netns_h2_out(f->h, &f->to_c, &f->to_u, &err), 0);
		if (k == 0)
			break;
	}
	assert_true(taken < offered);
	assert_true(netns_buf_len(&f->to_c) <= NETNS_HTTP_FLOW_OUT_MAX + 65536);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(
		test_a_surrogate_in_a_field_is_swapped_and_the_echo_turned_back, setup, teardown),
	    cmocka_unit_test_setup_teardown(
		test_a_surrogate_in_the_path_is_refused_on_its_stream_only, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_a_value_in_a_response_field_name_is_refused, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_a_surrogate_toward_an_unbound_host_is_refused,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_another_authority_is_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_a_field_section_past_64_kib_gets_431, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_a_continuation_flood_ends_the_connection, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_rapid_reset_ends_the_connection, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_flow_control_is_end_to_end, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_streams_queued_behind_the_upstream_are_bounded,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_a_sandbox_that_never_reads_stops_being_read, setup,
					    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
