#pragma once

/* How the rest of airlock asks the broker for credentials: a session with the broker daemon over
 * its socket or, when no daemon listens, with airlock's own broker (the same code in a child
 * process). fusefs, netns and launcher use this header only. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "common/macro.h"
#include "policy/policy.h"

struct al_audit;
struct broker_client;

/* A secret value: len bytes at data (NUL-terminated), in memory that is wiped when freed. */
struct broker_secret {
	size_t len;
	char data[];
};
#define BROKER_SECRET_MAX (64 * 1024)
/* A secret buffer of len bytes (plus a NUL), in memory that is locked and wiped when freed; NULL
 * without memory. */
struct broker_secret *broker_secret_new(size_t len);
struct broker_secret *broker_secret_free(struct broker_secret *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct broker_secret *, broker_secret_free);

struct broker_client_options {
	/* The daemon's socket. NULL: $AIRLOCK_BROKER, else broker_socket_default_path(); a socket
	 * named by either must answer, the default one is used only when a daemon listens there. */
	const char *socket;
	bool embedded; /* never ask a daemon */
	/* The embedded broker's vault (for "vault" sources) and where its events go. */
	const char *vault, *key_file;
	struct al_audit *audit;
	const char *label; /* names the session in the daemon's list and audit */
	/* The caller needs the credentials' real values (airlock run: swaps, sidecars, exposed
	 * values): a daemon of another uid, which gives surrogates only, is refused up front. */
	bool needs_values;
	uint64_t ttl_usec; /* 0: the broker's longest */
};

/* The daemon's default socket, broker.sock in al_state_dir(AL_STATE_RUNTIME):
 * /run/airlock/broker.sock for root, else $XDG_RUNTIME_DIR/airlock/broker.sock. Returns 0,
 * -ENOMEM, or -ENOENT without a runtime folder. */
int broker_socket_default_path(char **ret);

/* Opens a session for policy p's credentials (p is borrowed and must outlive the client): every
 * credential's real value is read from its source now, so a credential that cannot be served
 * fails here, before anything runs. Errors name the credential and its source, or the socket. */
int broker_client_open(const struct policy *p, const struct broker_client_options *o,
		       struct broker_client **ret, struct al_error *err);
/* Ends the session (when this client opened it) and frees c. */
struct broker_client *broker_client_free(struct broker_client *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct broker_client *, broker_client_free);

/* A second client on the same session, for another process (the workspace daemon): a connection
 * of its own (the session still ends with c). airlock's own broker has one such connection. */
int broker_client_attach(struct broker_client *c, struct broker_client **ret, struct al_error *err);
/* The client's connection (a forked process that uses the client keeps it open), or -EBADF. */
int broker_client_fd(const struct broker_client *c);

/* The surrogate of credential name, or NULL. */
const char *broker_client_surrogate(const struct broker_client *c, const char *name);

/* What the sandbox gets for credential name (injection env_var or file): its surrogate, or the
 * real value with "expose": true. -ENOENT for no such credential. */
int broker_client_read(struct broker_client *c, const char *name, struct broker_secret **ret,
		       struct al_error *err);
/* The real value behind surrogate for a request to host; -EPERM when refused. */
int broker_client_resolve(struct broker_client *c, const char *surrogate, const char *host,
			  struct broker_secret **ret, struct al_error *err);
/* The sidecar headers for host, "Name: value\r\n" each (may be empty). */
int broker_client_headers(struct broker_client *c, const char *host, struct broker_secret **ret,
			  struct al_error *err);
/* The egress proxy saw the SSH host key key (a blob of len bytes) in the clear key exchange of
 * a connection it allowed to destination ("host:port"). */
int broker_client_ssh_hostkey(struct broker_client *c, const char *destination, const void *key,
			      size_t len, struct al_error *err);
/* What the agent did with a request, for the proxy's audit: action ("ssh-list", "ssh-bind",
 * "ssh-sign", "ssh-sign-commit", "ssh-other"), the key's credential and the destination the
 * bound host key was seen at (empty when not known), why it was refused. Cut short to fit. */
struct broker_ssh_verdict {
	char action[24], credential[128], destination[272], reason[160];
	bool granted;
};
/* One request to the session's SSH agent: in is the agent connection's session-binds and the
 * request, each framed as on the agent's socket; *ret the answer's body (not framed). */
int broker_client_ssh_agent(struct broker_client *c, const void *in, size_t len,
			    struct broker_secret **ret, struct broker_ssh_verdict *v,
			    struct al_error *err);
/* Output of the sandbox on stream (0 stdout, 1 stderr), with every real value replaced by
 * "[REDACTED:NAME]", also when split across chunks; flush at the end of the stream. *ret is the
 * output that is final now (it may be empty, or hold what earlier chunks held back). */
int broker_client_redact(struct broker_client *c, unsigned stream, const void *buf, size_t len,
			 bool flush, struct broker_secret **ret, struct al_error *err);
