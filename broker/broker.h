#pragma once

/* The broker's commands, for cli/: the vault (`airlock secret`) and the daemon
 * (`airlock broker`). The rest of airlock reaches the broker through broker/client.h. */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "common/error.h"

/* Where the vault is and how to get its key. */
struct broker_vault_options {
	const char *vault;    /* --vault, or NULL: $AIRLOCK_VAULT or the default */
	const char *key_file; /* --key-file, or NULL: $AIRLOCK_PASSPHRASE_FILE or a prompt */
};

/* `airlock secret put NAME`: the value is read from fd (stdin or --from-file), at most
 * BROKER_SECRET_MAX bytes, one trailing newline dropped; an empty value is refused. A new vault
 * is created (its folder too, mode 0700) and its passphrase asked twice. */
int broker_secret_put(const struct broker_vault_options *o, const char *name, int fd,
		      struct al_error *err);
/* `airlock secret put --ssh-key NAME`: the value is an OpenSSH private key as ssh-keygen writes
 * it (Ed25519, ECDSA, RSA), checked, decrypted with its passphrase when one protects it (the
 * file passphrase_file, else asked once on the terminal), and stored without it; the vault then
 * knows the entry as an SSH key. Prints "NAME TYPE FINGERPRINT" to out. A plain put of a value
 * that is an SSH key is refused. */
int broker_secret_put_ssh_key(const struct broker_vault_options *o, const char *name, int fd,
			      const char *passphrase_file, FILE *out, struct al_error *err);
/* `airlock secret ls`: one line per secret to out (name, bound hosts, created and updated
 * times; an SSH key's type and fingerprint), or a JSON array with json. Never a value. */
int broker_secret_list(const struct broker_vault_options *o, bool json, FILE *out,
		       struct al_error *err);
/* `airlock secret rm NAME` (-ENOENT when there is none). */
int broker_secret_remove(const struct broker_vault_options *o, const char *name,
			 struct al_error *err);
/* `airlock secret bind NAME --hosts h1,h2`: hosts are names or "*.suffix" patterns; the list
 * replaces the old one. */
int broker_secret_bind(const struct broker_vault_options *o, const char *name, const char *hosts,
		       struct al_error *err);

/* `airlock broker`: the daemon. */
struct broker_daemon_options {
	struct broker_vault_options vault;
	bool no_vault;	    /* serve without a vault (no "vault" sources) */
	const char *socket; /* NULL: broker_socket_default_path() */
	uid_t *allow_uids;  /* peers allowed besides the daemon's own uid */
#define BROKER_ALLOW_UIDS_MAX 64
	size_t n_allow_uids;
	const char *audit;     /* JSON-lines audit file, or NULL */
	uint64_t max_ttl_usec; /* the longest session; 0: BROKER_SESSION_TTL_MAX_USEC */
};
#define BROKER_SESSION_TTL_MAX_USEC (24ULL * 3600 * 1000 * 1000)

/* Runs until SIGINT or SIGTERM, then removes its socket. Returns 0, or -errno with err. */
int broker_daemon_run(const struct broker_daemon_options *o, struct al_error *err);

/* `airlock broker status` / `sessions`: asks the daemon at socket (NULL: the default) and prints
 * its answer as JSON to out. */
int broker_daemon_query(const char *socket, const char *op, FILE *out, struct al_error *err);
