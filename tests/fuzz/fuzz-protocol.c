/* fuzz-protocol: the broker's wire format, as a hostile peer writes it to the daemon's socket.
 * The input is one frame: an 8-byte header, then the JSON (as many bytes as the header says, or
 * what there is), then the payload. The daemon parses the header and the JSON as a request; the
 * client parses the same kind of bytes as the daemon's answer, so they go through that parser too.
 * Besides "no crash", it checks:
 *  - a refused request says why (err.code is the return code, err.msg is not empty), keeps no
 *    state, and its error answer carries the code, the message and the id back to the client;
 *  - an accepted request encodes (the client's side) to JSON that parses again to the same
 *    request, and encodes to the same bytes again (the encoding is a fixed point). */

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/broker-internal.h"
#include "common/macro.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static _noreturn_ void fail(const char *what, const char *a, const char *b)
{
	fprintf(stderr, "%s\n  %s\n  %s\n", what, strempty(a), strempty(b));
	abort();
}

/* The credentials as the policy's canonical form writes them, or NULL (none, or no memory). */
static char *creds_text(const struct policy *p)
{
	char *s = NULL;

	if (p && policy_to_canonical_json(p, &s) < 0)
		return NULL;
	return s;
}

static bool same_request(const struct broker_request *a, const struct broker_request *b)
{
	_cleanup_free_ char *ca = creds_text(a->creds), *cb = creds_text(b->creds);

	return a->id == b->id && a->op == b->op && streq_ptr(a->session, b->session) &&
	       streq_ptr(a->surrogate, b->surrogate) && streq_ptr(a->host, b->host) &&
	       streq_ptr(a->name, b->name) && streq_ptr(a->policy_hash, b->policy_hash) &&
	       streq_ptr(a->label, b->label) && a->ttl_usec == b->ttl_usec &&
	       a->stream == b->stream && a->flush == b->flush && !a->creds == !b->creds &&
	       streq_ptr(ca, cb);
}

static void check_round_trip(const struct broker_request *q)
{
	_cleanup_free_ char *json = NULL, *again = NULL;
	struct broker_request p;
	struct al_error err = {0};
	size_t len, len2;
	int r;

	r = broker_request_encode(q, q->creds, &json, &len);
	if (r == -ENOMEM)
		return;
	if (r < 0)
		fail("an accepted request does not encode", broker_op_to_string(q->op), NULL);
	r = broker_request_parse(json, len, &p, &err);
	if (r == -ENOMEM)
		return;
	if (r < 0)
		fail("the encoding of an accepted request is refused", err.msg, json);
	if (!same_request(q, &p))
		fail("the encoding parses to another request", json, NULL);
	r = broker_request_encode(&p, p.creds, &again, &len2);
	if (r >= 0 && (len != len2 || memcmp(json, again, len) != 0))
		fail("the encoding is not stable", json, again);
	broker_request_done(&p);
}

/* The daemon's answer to a refused request, as the client reads it. */
static void check_refusal(int code, uint64_t id, const struct al_error *err)
{
	_cleanup_free_ char *json = NULL;
	struct broker_response resp;
	size_t len;
	int r;

	if (code == -ENOMEM)
		return;
	if (err->code != code || err->msg[0] == '\0')
		fail("a refusal without its message", err->msg, NULL);
	if (broker_response_error(id, code, err->msg, &json, &len) < 0)
		return;
	r = broker_response_parse(json, len, &resp, NULL);
	if (r == -ENOMEM)
		return;
	if (r < 0)
		fail("an error answer does not parse", json, NULL);
	if (resp.ok || resp.code != code || resp.id != id || !streq_ptr(resp.error, err->msg))
		fail("an error answer loses its code, id or message", json, err->msg);
	broker_response_done(&resp);
}

static void fuzz_request(const char *json, size_t len)
{
	struct broker_request q;
	struct al_error err = {0};
	int r;

	r = broker_request_parse(json, len, &q, &err);
	if (r < 0) {
		if (q.root || q.creds)
			fail("a refused request keeps state", err.msg, NULL);
		check_refusal(r, q.id, &err);
		return;
	}
	if (q.op >= _BROKER_OP_MAX || (q.op == BROKER_OP_OPEN) != !!q.creds)
		fail("a request with a bad op or credentials", err.msg, NULL);
	check_round_trip(&q);
	broker_request_done(&q);
}

static void fuzz_response(const char *json, size_t len)
{
	struct broker_response resp;
	struct al_error err = {0};
	char *text = NULL;
	size_t total = 0;

	if (broker_response_parse(json, len, &resp, &err) < 0)
		return;
	if (resp.ok && resp.code != 0)
		fail("an ok answer with an error code", NULL, NULL);
	for (size_t i = 0; i < resp.n_surrogates; i++)
		total += strlen(resp.names[i]) + strlen(resp.surrogates[i]);
	if (resp.error)
		total += strlen(resp.error);
	if (resp.session)
		total += strlen(resp.session);
	if (total > len) /* each byte of them is one (or an escape) of the input */
		fail("an answer holds more than its input", NULL, NULL);
	if (broker_response_to_string(&resp, &text) >= 0)
		free(text);
	broker_response_done(&resp);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	_cleanup_free_ char *json = NULL;
	uint32_t json_len, payload_len;
	struct al_error err = {0};
	size_t len;

	if (size < BROKER_FRAME_HEADER)
		return 0;
	if (broker_frame_parse(data, BROKER_PAYLOAD_MAX, &json_len, &payload_len, &err) < 0) {
		if (err.code == 0 || err.msg[0] == '\0')
			fail("a refused frame without its message", err.msg, NULL);
		return 0;
	}
	if (json_len == 0 || json_len > BROKER_JSON_MAX || payload_len > BROKER_PAYLOAD_MAX)
		fail("a frame over the limits is accepted", NULL, NULL);
	/* An exact-size copy of the JSON, so that the sanitizers see a read past its end. */
	len = MIN((size_t)json_len, size - BROKER_FRAME_HEADER);
	json = malloc(len ? len : 1);
	if (!json)
		return 0;
	memcpy(json, data + BROKER_FRAME_HEADER, len);
	fuzz_request(json, len);
	fuzz_response(json, len);
	return 0;
}
