#pragma once

/* `airlock serve`: the agent API as a long-running HTTP/1.1 service (docs/API.md). It listens on
 * a Unix socket (mode 0600; SO_PEERCRED: this user, root and --allow-uid) and optionally on a
 * TCP address with a bearer token. Every request that runs something runs it in a child airlock
 * process (exec, session start, session exec): a sandbox's signals or failure never reach the
 * service, and a client's hang-up kills what it started by killing that child. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent/agent.h"
#include "common/error.h"

#define SERVE_ALLOW_UIDS_MAX 32

struct serve_options {
	const char *socket_path; /* the Unix socket; NULL: serve_default_socket() */
	const char *listen;	 /* "HOST:PORT" for TCP, or NULL */
	const char *token_file;	 /* the bearer token for TCP (required with listen) */
	uid_t allow_uids[SERVE_ALLOW_UIDS_MAX];
	size_t n_allow_uids;
	/* What a request may bring, as for `airlock exec` (policy, policy_dir, allow, admitted,
	 * upstream_ca). The broker options are passed on as given (argv form). */
	struct agent_exec_options exec;
	char **broker_argv;		 /* NULL-terminated options for the children, or NULL */
	size_t max_request;		 /* bytes of one request body (files: AGENT_FILE_MAX) */
	unsigned max_streams;		 /* per client: execs and process streams at once */
	unsigned max_sessions;		 /* per client */
	unsigned max_connections;	 /* per listener */
	unsigned max_client_connections; /* per uid on the socket, per address on TCP */
};

#define SERVE_MAX_STREAMS_DEFAULT 32
#define SERVE_MAX_SESSIONS_DEFAULT 16
#define SERVE_MAX_CONNECTIONS_DEFAULT 256
#define SERVE_MAX_CLIENT_CONNECTIONS_DEFAULT 64

/* root: /run/airlock/serve.sock; others: $XDG_RUNTIME_DIR/airlock/serve.sock. */
int serve_default_socket(char *buf, size_t size);

/* Checks o (a listener or other uids need an operator's policy: --policy or --policy-dir),
 * listens, and serves until SIGINT or SIGTERM; then stops the sessions it started. */
int serve_main(const struct serve_options *o, struct al_error *err);
