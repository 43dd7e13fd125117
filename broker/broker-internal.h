#pragma once

/* Internal interfaces of the broker module, for broker/ and tests/unit/broker/ only. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/client.h"
#include "common/error.h"
#include "common/macro.h"

/* A secret buffer of len bytes (plus a NUL), in sodium_malloc'd memory; NULL without memory. */
struct broker_secret *broker_secret_new(size_t len);

/* ---- vault.c: the encrypted secret store (one file) ----
 *
 * Layout (integers little-endian):
 *   "ALVAULT\0" | u32 version (1) | u32 kdf (1 = Argon2id over a passphrase, 2 = raw 32-byte
 *   key) | u64 opslimit | u64 memlimit | salt[16] | keycheck[32] | nonce[24] | u64 length |
 *   ciphertext[length]
 * The ciphertext is XChaCha20-Poly1305 of the entries, with everything before it as associated
 * data, so a changed header fails authentication too. keycheck is a keyed BLAKE2b of a constant
 * under the key: it tells a wrong passphrase from a tampered file without revealing the key.
 * Entries: u32 count, then per entry u16 name length, name, u32 value length, value, u16 host
 * count, per host u16 length and host, u64 created, u64 updated (seconds since the epoch). */

#define BROKER_VAULT_VERSION 1
#define BROKER_VAULT_ENTRIES_MAX 4096
#define BROKER_VAULT_HOSTS_MAX 64
#define BROKER_VAULT_FILE_MAX (64 * 1024 * 1024)

/* How the vault's key is made: from a passphrase (Argon2id with the stored salt and costs) or
 * given (a key file's 32 bytes). */
struct broker_vault_key {
	const char *passphrase; /* or NULL */
	size_t passphrase_len;
	const unsigned char *key;    /* 32 bytes, or NULL */
	uint64_t opslimit, memlimit; /* for a new vault; 0 = libsodium's "moderate" */
};

struct broker_vault_entry {
	char *name;
	struct broker_secret *value;
	char **hosts;
	size_t n_hosts;
	uint64_t created, updated;
};

struct broker_vault;

/* Reads and decrypts path. A missing file gives an empty vault when create is true (its key
 * derived now, with a new salt). Errors, each with its own message naming path: -ENOENT,
 * -EINVAL (not a vault), -EPROTONOSUPPORT (a newer format), -EBADMSG with "truncated" or with
 * "tampered with or corrupt", -EACCES (wrong passphrase or key), -EFBIG. */
int broker_vault_open(const char *path, const struct broker_vault_key *k, bool create,
		      struct broker_vault **ret, struct al_error *err);
struct broker_vault *broker_vault_free(struct broker_vault *v);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct broker_vault *, broker_vault_free);

/* The steps of broker_vault_open(), for the fuzzer: an empty vault with its key; a file's bytes
 * (name only names it in messages); the decrypted entries into an empty vault (-EBADMSG when
 * malformed; v may hold some entries then, freed with it). */
int broker_vault_new(const struct broker_vault_key *k, struct broker_vault **ret);
int broker_vault_decode(const char *name, const unsigned char *buf, size_t size,
			const struct broker_vault_key *k, struct broker_vault **ret,
			struct al_error *err);
int broker_vault_parse_entries(struct broker_vault *v, const unsigned char *buf, size_t len);

/* Encrypts v (a new nonce) and replaces path atomically: a temporary file in the same folder,
 * fsync, rename, fsync of the folder. A crash leaves the old file or the new one. */
int broker_vault_save(struct broker_vault *v, const char *path, struct al_error *err);

/* The vault's entries, in name order. */
size_t broker_vault_count(const struct broker_vault *v);
const struct broker_vault_entry *broker_vault_entry(const struct broker_vault *v, size_t i);
const struct broker_vault_entry *broker_vault_find(const struct broker_vault *v, const char *name);

/* Sets name's value (copied; created is kept for an existing entry), removes it (-ENOENT), or
 * binds it to hosts (replacing its list). now is the time to record. */
int broker_vault_put(struct broker_vault *v, const char *name, const void *value, size_t len,
		     uint64_t now);
int broker_vault_remove(struct broker_vault *v, const char *name);
int broker_vault_bind(struct broker_vault *v, const char *name, char *const *hosts, size_t n,
		      uint64_t now);

/* Read, change and save path under an exclusive lock (path + ".lock"), so that concurrent
 * writers serialize and none loses another's change. change returns 0 or -errno (with err). */
typedef int (*broker_vault_change_fn)(struct broker_vault *v, void *userdata, struct al_error *err);
int broker_vault_update(const char *path, const struct broker_vault_key *k,
			broker_vault_change_fn change, void *userdata, struct al_error *err);
