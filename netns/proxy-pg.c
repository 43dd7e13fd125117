#define LOG_MODULE "netns"

/* Postgres logins through the egress proxy (issue 19): a connection to a destination of a
 * credential of kind postgres is a Postgres login the proxy ends on both sides (pg.c): the
 * sandbox authenticates with its surrogate, the proxy with the real password, which it asks the
 * broker for (for that credential, at that destination), and never lets back to the sandbox.
 * Then the two are relayed: the upstream's messages through pg.c's watch, the sandbox's as they
 * come, through TLS when the upstream offered it. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "broker/client.h"
#include "common/audit.h"
#include "common/log.h"
#include "netns/pg-internal.h"
#include "netns/proxy-internal.h"
#include "policy/policy.h"

#define PG_CHUNK (16 * 1024)
#define PG_HELD_MAX (256 * 1024) /* bytes waiting for a side before it is read no more */

struct proxy_pg {
	struct netns_pg *pg;
	const struct policy_credential *cred;
	const char *surrogate; /* the broker client's */
	char dest[PROXY_DESTINATION_MAX];
	bool connected;	  /* NETNS_PG_CONNECT or _PASS came: to_upstream may go out */
	bool tls_pending; /* the upstream's TLS handshake is under way */
	bool relay, pass;
	bool failing; /* to_sandbox is flushed, then the connection ends */
};

static const struct policy_credential *credential_at(const struct policy *p, const char *dest)
{
	for (size_t i = 0; i < p->n_credentials; i++) {
		const struct policy_credential *c = &p->credentials[i];

		if (c->kind != POLICY_CRED_POSTGRES)
			continue;
		for (size_t k = 0; k < c->hosts.n; k++)
			if (policy_host_covers(c->hosts.items[k], dest))
				return c;
	}
	return NULL;
}

static int pg_password(void *userdata, struct broker_secret **ret, struct al_error *err)
{
	struct conn *c = userdata;

	return broker_client_resolve(c->proxy->o->broker, c->pg->surrogate, c->pg->dest, ret, err);
}

void proxy_pg_free(struct conn *c)
{
	if (!c->pg)
		return;
	c->pg->pg = netns_pg_free(c->pg->pg);
	free(c->pg);
	c->pg = NULL;
}

bool proxy_pg_start(struct conn *c)
{
	static const enum netns_pg_auth auth[] = {
	    [POLICY_PG_AUTH_SCRAM] = NETNS_PG_AUTH_SCRAM,
	    [POLICY_PG_AUTH_MD5] = NETNS_PG_AUTH_MD5,
	    [POLICY_PG_AUTH_PASSWORD] = NETNS_PG_AUTH_PASSWORD,
	};
	struct netns_proxy *p = c->proxy;
	char dest[PROXY_DESTINATION_MAX];
	const struct policy_credential *cred;
	struct netns_pg_options o;
	int r;

	if (!p->o->broker)
		return false;
	proxy_destination(c, dest, sizeof(dest));
	cred = credential_at(p->o->policy, dest);
	if (!cred)
		return false;
	c->pg = calloc(1, sizeof(*c->pg));
	if (!c->pg) {
		proxy_audit(c, "error", "out of memory");
		proxy_close(c, true);
		return true;
	}
	c->pg->cred = cred;
	c->pg->surrogate = broker_client_surrogate(p->o->broker, cred->name);
	(void)snprintf(c->pg->dest, sizeof(c->pg->dest), "%s", dest);
	o = (struct netns_pg_options){
	    .user = cred->pg_user,
	    .database = cred->pg_database,
	    .surrogate = c->pg->surrogate,
	    .client_auth = auth[cred->pg_auth],
	    .password = pg_password,
	    .userdata = c,
	};
	r = c->pg->surrogate ? netns_pg_new(&o, &c->pg->pg) : -ENOENT;
	if (r < 0) {
		log_debug_errno(r, "Cannot log in to Postgres at %s: %m", dest);
		proxy_audit(c, "error", "cannot set up the Postgres login");
		proxy_close(c, true);
		return true;
	}
	c->mode = "postgres";
	c->phase = PHASE_PG;
	return true;
}

/* Where a failure came from, and so what the sandbox is told. */
enum pg_origin {
	PG_PROXY, /* the proxy's own (TLS, the upstream gone): told with an 08006 here */
	PG_TOLD,  /* pg.c's verdict: it put the sandbox's ErrorResponse in to_c where it could */
	PG_LEAK,  /* the upstream's messages would hand over the real password: nothing more */
};

/* A refusal or failure: audited (a violation when the sandbox's doing), the sandbox told, then
 * the end. */
static void pg_fail(struct conn *c, int r, const char *message, enum pg_origin origin)
{
	struct proxy_pg *pg = c->pg;
	bool sandbox = r == -EPERM || r == -EBADMSG;

	c->audited = false; /* a verdict of its own */
	proxy_audit(c, sandbox ? "deny" : "error", message);
	if (sandbox)
		proxy_violation(c->proxy, r == -EPERM ? "credential" : "net",
				"postgres %s at %s: %s", pg->cred->name, pg->dest, message);
	if (origin == PG_PROXY)
		(void)netns_pg_report_failure(pg->pg, message, &c->to_c);
	else if (origin == PG_LEAK)
		netns_buf_done(&c->to_c);
	netns_buf_done(&c->to_u);
	pg->failing = true;
	c->u_eof = true;
}

static void pg_relaying(struct conn *c)
{
	struct proxy_pg *pg = c->pg;
	const struct al_audit_field f[] = {
	    AL_AUDIT_S("action", "postgres-login"),
	    AL_AUDIT_S("credential", pg->cred->name),
	    AL_AUDIT_S("destination", pg->dest),
	    AL_AUDIT_S("upstream_auth",
		       netns_pg_upstream_auth(pg->pg) ? netns_pg_upstream_auth(pg->pg) : "-"),
	    AL_AUDIT_B("upstream_tls", netns_pg_upstream_tls(pg->pg)),
	};

	pg->relay = true;
	c->idle_deadline = 0; /* a session may be idle as long as it likes */
	if (proxy_audit_admit(c->proxy))
		(void)al_audit_event(c->proxy->o->audit, "credential", f, ELEMENTSOF(f));
}

/* What a step asks of the connection. */
static int pg_step(struct conn *c, int step, const struct al_error *err, enum pg_origin origin)
{
	struct proxy_pg *pg = c->pg;
	struct al_error e = {0};
	int r;

	if (step < 0) {
		pg_fail(c, step, err->msg[0] ? err->msg : "the Postgres login failed", origin);
		return 0;
	}
	switch (step) {
	case NETNS_PG_CONNECT:
		pg->connected = true;
		proxy_audit(c, "allow", c->verdict.reason ? c->verdict.reason : "allowed");
		break;
	case NETNS_PG_PASS:
		pg->connected = pg->pass = true;
		proxy_audit(c, "allow", "a Postgres CancelRequest, passed on");
		break;
	case NETNS_PG_START_TLS:
		if (!c->name[0] || !c->proxy->tls) {
			pg_fail(c, -EPROTO, "TLS to the upstream needs its name", PG_PROXY);
			return 0;
		}
		r = netns_tls_connect(c->proxy->tls, c->ufd, c->name, false, &c->utls, &e);
		if (r >= 0)
			r = netns_tls_offer_alpn(c->utls, "postgresql");
		if (r < 0) {
			pg_fail(c, -EPROTO, e.msg[0] ? e.msg : "cannot start TLS to the upstream",
				PG_PROXY);
			return 0;
		}
		pg->tls_pending = true;
		break;
	case NETNS_PG_RELAY:
		if (!pg->relay)
			pg_relaying(c);
		break;
	}
	return 0;
}

/* Reads what the sandbox sent; *progress when bytes moved. */
static int pg_read_sandbox(struct conn *c, bool *progress)
{
	struct proxy_pg *pg = c->pg;
	uint8_t buf[PG_CHUNK];
	struct al_error err = {0};
	ssize_t n;

	if (c->c_eof || pg->failing || netns_buf_len(&c->to_u) >= PG_HELD_MAX)
		return 0;
	n = recv(c->cfd, buf, sizeof(buf), MSG_DONTWAIT);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	*progress = true;
	if (n == 0) {
		c->c_eof = true;
		return 0;
	}
	if (pg->relay)
		return pg_step(
		    c,
		    netns_pg_relay_from_sandbox(pg->pg, buf, (size_t)n, &c->to_u, &c->to_c, &err),
		    &err, PG_TOLD);
	return pg_step(c, netns_pg_from_sandbox(pg->pg, buf, (size_t)n, &c->to_c, &c->to_u, &err),
		       &err, PG_TOLD);
}

/* Reads what the upstream sent (through TLS once it is up). */
static int pg_read_upstream(struct conn *c, bool *progress)
{
	struct proxy_pg *pg = c->pg;
	uint8_t buf[PG_CHUNK];
	struct al_error err = {0};
	ssize_t n;

	if (c->u_eof || pg->failing || pg->tls_pending || netns_buf_len(&c->to_c) >= PG_HELD_MAX)
		return 0;
	n = proxy_end_read(c->ufd, c->utls, buf, sizeof(buf));
	if (n == -EAGAIN)
		return 0;
	*progress = true;
	if (n <= 0) {
		c->u_eof = true;
		if (!pg->relay)
			pg_fail(c, -ECONNRESET,
				"the upstream ended the connection during the login", PG_PROXY);
		return 0;
	}
	if (pg->pass) /* a CancelRequest's answer is the end */
		return 0;
	if (pg->relay)
		return pg_step(c,
			       netns_pg_relay_from_upstream(pg->pg, buf, (size_t)n, &c->to_c, &err),
			       &err, PG_LEAK);
	return pg_step(c, netns_pg_from_upstream(pg->pg, buf, (size_t)n, &c->to_c, &c->to_u, &err),
		       &err, PG_TOLD);
}

/* The upstream's TLS handshake, after its 'S'. */
static int pg_handshake(struct conn *c, bool *progress)
{
	struct proxy_pg *pg = c->pg;
	struct al_error err = {0};
	int r;

	if (!pg->tls_pending || pg->failing)
		return 0;
	r = netns_tls_handshake(c->utls, &err);
	if (r == -EAGAIN)
		return 0;
	*progress = true;
	pg->tls_pending = false;
	if (r < 0) {
		(void)netns_pg_tls_ready(pg->pg, false, &c->to_u, &err);
		pg_fail(c, -EPROTO, err.msg[0] ? err.msg : "TLS with the upstream failed",
			PG_PROXY);
		return 0;
	}
	return pg_step(c, netns_pg_tls_ready(pg->pg, true, &c->to_u, &err), &err, PG_TOLD);
}

/* Sends what waits for each side; *progress when bytes moved. */
static int pg_write(struct conn *c, bool *progress)
{
	struct proxy_pg *pg = c->pg;
	ssize_t n;

	while (netns_buf_len(&c->to_c) > 0) {
		n = send(c->cfd, netns_buf_head(&c->to_c), netns_buf_len(&c->to_c),
			 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -errno;
		netns_buf_consume(&c->to_c, (size_t)n);
		*progress = true;
	}
	while (pg->connected && !pg->tls_pending && !pg->failing && netns_buf_len(&c->to_u) > 0) {
		n = proxy_end_write(c->ufd, c->utls, netns_buf_head(&c->to_u),
				    netns_buf_len(&c->to_u));
		if (n == -EAGAIN)
			return 0;
		if (n < 0)
			return (int)n;
		netns_buf_consume(&c->to_u, (size_t)n);
		*progress = true;
	}
	return 0;
}

/* Whether the connection is over: a failure told, a CancelRequest passed, or both ends came
 * and all was sent. */
static bool pg_over(const struct conn *c)
{
	const struct proxy_pg *pg = c->pg;

	if (netns_buf_len(&c->to_c) > 0)
		return false;
	if (pg->failing || (!pg->relay && !pg->pass && c->c_eof))
		return true;
	if (netns_buf_len(&c->to_u) > 0)
		return false;
	return pg->pass ? c->u_eof || c->c_eof : c->c_eof && c->u_eof;
}

int proxy_pg(struct conn *c)
{
	struct proxy_pg *pg = c->pg;
	bool progress;
	int r;

	do {
		progress = false;
		r = pg_handshake(c, &progress);
		if (r >= 0)
			r = pg_read_sandbox(c, &progress);
		if (r >= 0)
			r = pg_read_upstream(c, &progress);
		if (r >= 0)
			r = pg_write(c, &progress);
		if (r < 0) {
			if (!pg->failing)
				proxy_audit(c, "error", "the Postgres connection failed");
			proxy_close(c, true);
			return r;
		}
		/* One side's end, once what it sent is through, goes to the other. */
		if (pg->relay && c->c_eof && netns_buf_len(&c->to_u) == 0 && !c->u_shut) {
			if (c->utls)
				netns_tls_close(c->utls);
			(void)shutdown(c->ufd, SHUT_WR);
			c->u_shut = true;
		}
		if (pg->relay && c->u_eof && netns_buf_len(&c->to_c) == 0 && !c->c_shut) {
			(void)shutdown(c->cfd, SHUT_WR);
			c->c_shut = true;
		}
		if (pg_over(c)) {
			/* Not reset: the sandbox reads the ErrorResponse it was sent first. */
			proxy_close(c, false);
			return 0;
		}
	} while (progress);
	return 0;
}
