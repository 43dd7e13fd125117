/* fuzz-pg: the egress proxy ends a Postgres login on both sides (netns/pg.c): it reads what the
 * sandbox sends and what the upstream answers, both of which may be anything. The input is a
 * byte of settings (bits 0-1: how the sandbox is asked for its password, 3 counting as
 * cleartext; bit 2: whether the TLS handshake succeeds when the upstream asks for it), then a
 * run of chunks, each a direction byte (bit 0: from the upstream; bit 1: in the relay, through
 * netns_pg_relay_from_upstream() or, from the sandbox, netns_pg_relay_from_sandbox(), which
 * searches its statements for one that sets a password; bit 2: the proxy reports a failure of
 * its own first), a 16-bit
 * big-endian length and that many bytes. The proxy's random bytes are all 0x2a and the broker's
 * password is fixed, so that seeds can hold whole logins (tests/fuzz/corpus/pg/).
 *
 * Any answer but the documented ones is a bug; after an error every call fails with it; and the
 * real password never appears in what the sandbox is sent, unless the sandbox sent it itself (a
 * nonce or a user name it gave is echoed). */

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "broker/client.h"
#include "netns/pg-internal.h"

#define REAL "real-pw-Zq9"
#define SANDBOX_MAX (4 * 1024 * 1024) /* of what the sandbox was sent, kept to search */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int give_password(void *userdata, struct broker_secret **ret, struct al_error *err)
{
	struct broker_secret *s = broker_secret_new(strlen(REAL));

	(void)userdata;
	(void)err;
	if (!s)
		return -ENOMEM;
	memcpy(s->data, REAL, strlen(REAL));
	*ret = s;
	return 0;
}

static int fixed_random(void *userdata, uint8_t *buf, size_t n)
{
	(void)userdata;
	memset(buf, 0x2a, n);
	return 0;
}

static bool documented(int r)
{
	if (r >= 0)
		return r <= NETNS_PG_PASS;
	return r == -EBADMSG || r == -EPERM || r == -EPROTONOSUPPORT || r == -EACCES ||
	       r == -EMSGSIZE || r == -EINVAL || r == -ENOMEM || r == -EPROTO || r == -ECONNABORTED;
}

/* Moves what the sandbox is sent into seen (up to SANDBOX_MAX; the rest is dropped, as sent). */
static void collect(struct netns_buf *to_sandbox, struct netns_buf *seen)
{
	size_t n = netns_buf_len(to_sandbox);

	if (n > 0 && netns_buf_len(seen) + n <= SANDBOX_MAX &&
	    netns_buf_append(seen, netns_buf_head(to_sandbox), n, SANDBOX_MAX) < 0)
		__builtin_trap();
	if (n > 0)
		netns_buf_consume(to_sandbox, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct netns_pg_options o = {
	    .user = "app",
	    .database = "appdb",
	    .surrogate = "sur-Pw-1",
	    .password = give_password,
	    .random = fixed_random,
	};
	struct netns_buf to_sandbox = {0}, to_upstream = {0}, seen = {0};
	struct netns_pg *pg = NULL;
	bool tls_ok, relay = false, sandbox_sent_it = false;
	int error = 0;

	if (size < 1)
		return 0;
	o.client_auth = (data[0] & 3) == 0   ? NETNS_PG_AUTH_SCRAM
			: (data[0] & 3) == 1 ? NETNS_PG_AUTH_MD5
					     : NETNS_PG_AUTH_PASSWORD;
	tls_ok = data[0] & 4;
	data++;
	size--;
	if (netns_pg_new(&o, &pg) < 0)
		return 0;
	while (size >= 3) {
		size_t n = (size_t)data[1] << 8 | data[2];
		uint8_t dir = data[0];
		const uint8_t *p = data + 3;
		struct al_error err = {0};
		int r;

		n = n < size - 3 ? n : size - 3;
		if ((dir & 4) && netns_pg_report_failure(pg, "fuzz", &to_sandbox) < 0)
			__builtin_trap();
		if (!(dir & 1)) {
			sandbox_sent_it = sandbox_sent_it || memmem(p, n, REAL, strlen(REAL));
			if (relay && (dir & 2))
				r = netns_pg_relay_from_sandbox(pg, p, n, &to_upstream, &to_sandbox,
								&err);
			else
				r = netns_pg_from_sandbox(pg, p, n, &to_sandbox, &to_upstream,
							  &err);
			/* The search itself, on the chunk's bytes as a statement's text. */
			(void)netns_pg_sets_password(p, n);
		} else if (relay && (dir & 2))
			r = netns_pg_relay_from_upstream(pg, p, n, &to_sandbox, &err);
		else
			r = netns_pg_from_upstream(pg, p, n, &to_sandbox, &to_upstream, &err);
		if (!documented(r) || (error < 0 && r != error) || (r < 0 && err.code != r))
			__builtin_trap();
		if (r == NETNS_PG_START_TLS) {
			r = netns_pg_tls_ready(pg, tls_ok, &to_upstream, &err);
			if (!documented(r))
				__builtin_trap();
		}
		if (r < 0 && error == 0)
			error = r;
		relay = relay || r == NETNS_PG_RELAY;
		collect(&to_sandbox, &seen);
		if (netns_buf_len(&to_upstream) > 0)
			netns_buf_consume(&to_upstream, netns_buf_len(&to_upstream));
		data += 3 + n;
		size -= 3 + n;
	}
	if (!sandbox_sent_it && netns_buf_len(&seen) > 0 &&
	    memmem(netns_buf_head(&seen), netns_buf_len(&seen), REAL, strlen(REAL)))
		__builtin_trap();
	netns_pg_free(pg);
	netns_buf_done(&to_sandbox);
	netns_buf_done(&to_upstream);
	netns_buf_done(&seen);
	return 0;
}
