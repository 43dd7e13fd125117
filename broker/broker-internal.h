#pragma once

/* Internal interfaces of the broker module, for broker/ and tests/unit/broker/ only. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "broker/client.h"
#include "common/error.h"
#include "common/macro.h"
#include "common/wire-util.h"

/* Reads fd to its end into a new secret of at most max bytes: -EFBIG beyond, or -errno. */
int broker_secret_read_fd(int fd, size_t max, struct broker_secret **ret);

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

/* Like broker_vault_open(), but reusing v's key when path still has v's salt and key costs (a
 * daemon re-reads a vault that `airlock secret` changed without running Argon2id again). On
 * success *v is replaced. */
int broker_vault_reload(const char *path, struct broker_vault **v, struct al_error *err);

/* ---- key.c: where the vault is, and its key ----
 *
 * The vault's path: opt (--vault), else $AIRLOCK_VAULT, else /var/lib/airlock/vault for root,
 * else $XDG_DATA_HOME/airlock/vault (~/.local/share/airlock/vault). */
int broker_vault_path(const char *opt, char **ret, struct al_error *err);

/* Key material in sodium_malloc'd memory, and the broker_vault_key that points into it. */
struct broker_key {
	struct broker_vault_key k;
	struct broker_secret *material;
};

/* Gets the vault's key: a key file's 32 bytes (key_file, raw or 64 hex digits; refused when
 * group- or world-readable), else the passphrase in $AIRLOCK_PASSPHRASE_FILE (one trailing
 * newline dropped), else, when prompt is true and there is a terminal, a passphrase typed on
 * /dev/tty without echo (twice when confirm is true). -ENOKEY when there is no way to get one.
 * Errors name the file. */
int broker_key_acquire(const char *key_file, bool prompt, bool confirm, struct broker_key **ret,
		       struct al_error *err);
struct broker_key *broker_key_free(struct broker_key *k);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct broker_key *, broker_key_free);
/* The passphrase of the SSH key name: the file's (one trailing newline dropped), else typed on
 * /dev/tty without echo. -ENOKEY when there is no way to get one. */
int broker_ssh_passphrase(const char *file, const char *name, struct broker_secret **ret,
			  struct al_error *err);

/* ---- ssh-key.c: OpenSSH private keys, for the vault ----
 * `airlock secret put --ssh-key` reads a key file as ssh-keygen writes it (the PEM armour of
 * OpenSSH's own format; Ed25519, ECDSA and RSA keys), decrypts it when a passphrase protects it,
 * checks that its private part matches its public key, and stores it in the same format with no
 * cipher: a vault value that begins with the format's magic is an SSH key. */

#define BROKER_SSH_FINGERPRINT_MAX 64 /* "SHA256:" and 43 base64 digits, as ssh-keygen -l */

#define BROKER_SSH_RSA_MIN_BITS 2048  /* the agent neither signs nor verifies with less */
#define BROKER_SSH_RSA_MAX_BITS 16384 /* OpenSSH's limit */

/* A sign request's flags (draft-miller-ssh-agent): the RSA signature asked. With neither, an
 * RSA key would sign SHA-1's "ssh-rsa", which airlock refuses (OpenSSH 8.8 and later never ask
 * for it). */
#define BROKER_SSH_AGENT_RSA_SHA2_256 2
#define BROKER_SSH_AGENT_RSA_SHA2_512 4

struct broker_ssh_key {
	const char *type; /* "ssh-ed25519", "ecdsa-sha2-nistp256", ..., "ssh-rsa" (static) */
	unsigned bits;	  /* RSA: the modulus's; ECDSA: the curve's (256, 384, 521); Ed25519: 256 */
	char fingerprint[BROKER_SSH_FINGERPRINT_MAX];
	char comment[128]; /* cut short */
	bool encrypted;	   /* the key file was protected by a passphrase */
};

/* Reads the key file text (n bytes): *ret gets the key to store, k what it is. passphrase may be
 * NULL for a key that has none. Errors, each with one line in err: -EINVAL (not an OpenSSH
 * private key), -EBADMSG (malformed, or private and public parts that do not match),
 * -EPROTONOSUPPORT (a key type or cipher airlock does not use), -ENOKEY (a passphrase is
 * needed), -EACCES (a wrong passphrase), -EFBIG, -ENOMEM, -EIO. */
int broker_ssh_key_import(const char *text, size_t n, const struct broker_secret *passphrase,
			  struct broker_ssh_key *k, struct broker_secret **ret,
			  struct al_error *err);
/* Whether the key file text is protected by a passphrase (so that one is asked for). */
bool broker_ssh_key_is_encrypted(const char *text, size_t n);
/* Whether a vault value is an SSH key, and what key: the errors of import. */
bool broker_ssh_key_is_stored(const struct broker_secret *value);
int broker_ssh_key_parse(const struct broker_secret *value, struct broker_ssh_key *k,
			 struct al_error *err);
/* The fingerprint ssh-keygen -l shows of a public key blob ("SHA256:..."). */
void broker_ssh_fingerprint(const uint8_t *blob, size_t len, char out[BROKER_SSH_FINGERPRINT_MAX]);
/* The stored key's public key blob (string type, then its parts), malloc'd, and what it is. */
int broker_ssh_key_public(const struct broker_secret *stored, struct broker_ssh_key *k,
			  uint8_t **ret, size_t *ret_len, struct al_error *err);
/* Whether the agent signs with key k: -EPROTONOSUPPORT, with why in err, for an RSA key of
 * fewer than BROKER_SSH_RSA_MIN_BITS bits. */
int broker_ssh_key_check_signing(const struct broker_ssh_key *k, struct al_error *err);
/* The signature blob of n bytes of data with the stored key, as OpenSSH's ssh-agent makes it for
 * a SIGN_RESPONSE: string type, string signature. Ed25519: "ssh-ed25519" and 64 bytes; ECDSA:
 * "ecdsa-sha2-nistpN" and (mpint r, mpint s) over the curve's SHA-2 of data; RSA: PKCS #1 v1.5
 * with SHA-256 ("rsa-sha2-256") when flags has BROKER_SSH_AGENT_RSA_SHA2_256, else SHA-512
 * ("rsa-sha2-512") when it has BROKER_SSH_AGENT_RSA_SHA2_512, the signature as long as the
 * modulus. flags is ignored for other keys. -EPROTONOSUPPORT (with err) for an RSA request with
 * neither flag (SHA-1) and a key broker_ssh_key_check_signing() refuses; -EINVAL (not a stored
 * key), -EBADMSG, -ENOMEM, -EIO. */
int broker_ssh_key_sign(const struct broker_secret *stored, const uint8_t *data, size_t n,
			uint32_t flags, struct broker_secret **ret, struct al_error *err);
/* Whether sig (a signature blob: string type, string signature) is the public key key's (a key
 * blob) over n bytes of data, as OpenSSH's sshkey_verify() checks it: 0, -EPERM (it is not),
 * -EBADMSG (a malformed key or signature, or a signature of another type than the key's), or
 * -EPROTONOSUPPORT for what airlock does not verify: a key type other than Ed25519, ECDSA
 * nistp256/384/521 and RSA, SHA-1's "ssh-rsa" signature, an RSA key of fewer than
 * BROKER_SSH_RSA_MIN_BITS or more than BROKER_SSH_RSA_MAX_BITS bits. */
int broker_ssh_verify(const struct al_wire *key, const struct al_wire *sig, const uint8_t *data,
		      size_t n);

/* ---- ssh-agent-msg.c: the SSH agent protocol, as the destination-bound agent reads it ----
 * Parsers over bytes a sandbox sends; the parts point into them. */

#define BROKER_SSH_AGENT_MSG_MAX (256 * 1024) /* OpenSSH's own agent's limit */

enum broker_ssh_agent_type {
	BROKER_SSH_AGENT_OTHER, /* answered with failure */
	BROKER_SSH_AGENT_IDENTITIES,
	BROKER_SSH_AGENT_SIGN,
	BROKER_SSH_AGENT_SESSION_BIND,
};

struct broker_ssh_agent_msg {
	enum broker_ssh_agent_type type;
	struct al_wire key, data; /* SIGN: the key blob, the data to sign */
	uint32_t flags;		  /* SIGN: rsa-sha2-256 (2), rsa-sha2-512 (4) */
	struct al_wire hostkey, session_id, signature; /* SESSION_BIND */
	bool forwarding;			       /* SESSION_BIND */
};

/* The length of the whole message at the start of p (n bytes): 0 while it is not all there,
 * -EMSGSIZE for an empty one or one over BROKER_SSH_AGENT_MSG_MAX. */
ssize_t broker_ssh_agent_frame(const uint8_t *p, size_t n);
/* Parses a message's body (its type first; n bytes, without the length). -EBADMSG for a
 * malformed request of a known type; an unknown type or extension is BROKER_SSH_AGENT_OTHER. */
int broker_ssh_agent_parse(const uint8_t *p, size_t n, struct broker_ssh_agent_msg *ret);

/* What a sign request's data is: a user authentication request (RFC 4252 7, "publickey" or
 * OpenSSH's "publickey-hostbound-v00@openssh.com"), or a git commit's SSHSIG. */
enum broker_ssh_sign_kind {
	BROKER_SSH_SIGN_USERAUTH = 1,
	BROKER_SSH_SIGN_SSHSIG,
};

struct broker_ssh_sign_data {
	enum broker_ssh_sign_kind kind;
	struct al_wire session_id, user, algorithm, key, hostkey; /* USERAUTH */
	struct al_wire sshsig_namespace;			  /* SSHSIG */
};

/* -EBADMSG for data that is neither, whole and alone. */
int broker_ssh_sign_data_parse(const struct al_wire *data, struct broker_ssh_sign_data *ret);

/* Whether a session-bind's signature is the host key's over the session id, as OpenSSH's own
 * agent checks it before keeping the bind (broker_ssh_verify()): 0, -EPERM (it is not),
 * -EBADMSG (malformed), or -EPROTONOSUPPORT for a host key or signature airlock does not verify
 * (such as SHA-1's "ssh-rsa", or an RSA key under BROKER_SSH_RSA_MIN_BITS): such a bind is
 * refused. */
int broker_ssh_bind_verify(const struct broker_ssh_agent_msg *m);

/* A session-bind the agent accepted on a connection (its signature by the host key verified). */
struct broker_ssh_bind {
	struct al_wire hostkey, session_id;
	bool forwarding;
};

/* What a key may sign for: the host keys the proxy saw on connections it allowed to the key's
 * destinations in this run, and whether git may have it sign commits. */
struct broker_ssh_policy {
	const struct al_wire *hostkeys;
	size_t n_hostkeys;
	bool commit_signing;
};

/* Whether a sign request for key (its blob) with data d may be answered on a connection whose
 * accepted binds are binds[0, n_binds): a user authentication only for the session of the last
 * bind, not a forwarding one, whose host key policy holds, with the same key (and the same host
 * key, hostbound); an SSHSIG only in the "git" namespace and with commit signing allowed.
 * 0, or -EPERM with *why. */
int broker_ssh_agent_decide(const struct broker_ssh_sign_data *d, const struct al_wire *key,
			    const struct broker_ssh_bind *binds, size_t n_binds,
			    const struct broker_ssh_policy *policy, const char **why);

/* ---- ssh-agent.c: a session's destination-bound agent (session.c drives it) ----
 * It holds the session's SSH keys (borrowed: the session's values) and the host keys the egress
 * proxy saw, each with the destination ("host:port") of the connection it was seen on. */

#define BROKER_SSH_KEYS_MAX 16
#define BROKER_SSH_SEEN_MAX 256 /* host keys a session remembers */
#define BROKER_SSH_BINDS_MAX 16 /* session-binds one agent connection may make (OpenSSH's) */
#define BROKER_SSH_HOSTKEY_MAX 4096

struct broker_ssh_agent;
int broker_ssh_agent_new(struct broker_ssh_agent **ret);
struct broker_ssh_agent *broker_ssh_agent_free(struct broker_ssh_agent *a);
/* Adds credential spec's key (stored: the vault's value, which must outlive a). Refused, before
 * anything runs: a key the agent cannot sign with (broker_ssh_key_check_signing(): an RSA key
 * under BROKER_SSH_RSA_MIN_BITS), the same key twice. */
int broker_ssh_agent_add_key(struct broker_ssh_agent *a, const struct policy_credential *spec,
			     const struct broker_secret *stored, struct al_error *err);
/* Whether destination is one of a key's. */
bool broker_ssh_agent_wants(const struct broker_ssh_agent *a, const char *destination);
/* The proxy saw hostkey (a blob of len bytes) in the clear key exchange of a connection it
 * allowed to destination. -ENOSPC past BROKER_SSH_SEEN_MAX of them. */
int broker_ssh_agent_saw(struct broker_ssh_agent *a, const char *destination,
			 const uint8_t *hostkey, size_t len, struct al_error *err);

/* What an answer did, for the audit: action "ssh-list", "ssh-bind", "ssh-sign" (a user
 * authentication), "ssh-sign-commit" (an SSHSIG) or "ssh-other"; the key's credential and the
 * destination where the bound host key was seen, when known; why it was refused. */
struct broker_ssh_outcome {
	const char *action, *credential, *destination, *why;
	bool granted;
};
/* Answers one agent request: in is framed messages (u32 length, body), the session-binds the
 * agent connection made before (each verified again) and the request last. *ret is the answer's
 * body (without its length): a refusal is an answer (SSH_AGENT_FAILURE) with o->why.
 * -EBADMSG (with err) when in is malformed or what precedes the request is not verified binds. */
int broker_ssh_agent_answer(struct broker_ssh_agent *a, const uint8_t *in, size_t len,
			    struct broker_secret **ret, struct broker_ssh_outcome *o,
			    struct al_error *err);

/* bcrypt-pbkdf.c: OpenBSD's bcrypt_pbkdf, which OpenSSH key files use. key_len at most 1,024
 * bytes, rounds 1 to 65,536: -EINVAL beyond; -ENOMEM. */
int broker_bcrypt_pbkdf(const void *pass, size_t pass_len, const uint8_t *salt, size_t salt_len,
			unsigned rounds, uint8_t *key, size_t key_len);
/* Word i of Blowfish's initial state (the P-array, then the four S-boxes): pi's fraction in
 * hexadecimal, computed once. For tests. */
uint32_t broker_blowfish_pi_word(size_t i);

/* ---- source.c: a credential's real value, from its source ----
 *
 * The sources: vault (entry source_key, else the credential's name), env (of this process), file
 * (opened without following symbolic links), command (argv run without a shell, stdin
 * /dev/null, its stdout read with a time limit), keyring (a "user" key found with request_key(2)
 * and read with keyctl(2)). A file's or command's single trailing newline is dropped. */
struct broker_sources {
	const struct broker_vault *vault; /* NULL: there is no vault */
	const char *vault_path;		  /* for messages */
	uint64_t command_timeout_usec;	  /* 0: BROKER_COMMAND_TIMEOUT_USEC */
};
#define BROKER_COMMAND_TIMEOUT_USEC (10ULL * 1000 * 1000)

/* Reads cr's real value (at most BROKER_SECRET_MAX bytes, never empty). Errors name the
 * credential and its source, e.g. "credential github: vault source: no secret \"github\" in
 * /var/lib/airlock/vault"; -ENOENT, -EACCES, -EFBIG, -ETIMEDOUT (command), -ENODATA (empty),
 * -EIO (a command that failed). Never puts the value in err. */
int broker_source_read(const struct broker_sources *s, const struct policy_credential *cr,
		       struct broker_secret **ret, struct al_error *err);

/* ---- surrogate.c: stand-ins for real values ---- */
#define BROKER_SURROGATE_PREFIX "airlock_sur_"
#define BROKER_SURROGATE_MAX 512

enum broker_surrogate_shape {
	BROKER_SHAPE_OF_VALUE,	 /* read from the real value (below) */
	BROKER_SHAPE_AWS_SECRET, /* an AWS secret access key's: 40 of [A-Za-z0-9+/], no prefix */
};

/* A new random surrogate (malloc'd, NUL-terminated) for real. When real has a known token
 * format (ghp_, github_pat_, sk-ant-, sk-, xoxb-, glpat-, AKIA, ...) the surrogate keeps its
 * prefix, its length and each character's class (digit, lower, upper; others kept in place),
 * so client libraries that check the shape accept it; otherwise "airlock_sur_" and 32 random
 * letters and digits. A shape the policy knows (an AWS secret access key, which has no prefix to
 * be recognised by) is made as that shape's. Never equal to real, always at least 128 random bits
 * or as many as the format holds. */
int broker_surrogate_new(const struct broker_secret *real, enum broker_surrogate_shape shape,
			 char **ret);

/* ---- redact.c: real values out of a sandbox's output ----
 *
 * A redactor holds the values to hide (borrowed) and their replacement texts. A stream feeds
 * output through it chunk by chunk: each value found is replaced by "[REDACTED:NAME]", also
 * when its bytes arrive split over several chunks. Only a tail that could still begin a value
 * is held back, until the next chunk or the flush. */
struct broker_redactor;
struct broker_redact_stream;

int broker_redactor_new(struct broker_redactor **ret);
struct broker_redactor *broker_redactor_free(struct broker_redactor *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct broker_redactor *, broker_redactor_free);
/* Adds value (borrowed; it must outlive r) under name (copied). Values shorter than
 * BROKER_REDACT_MIN are not added: -EINVAL. */
#define BROKER_REDACT_MIN 4
int broker_redactor_add(struct broker_redactor *r, const struct broker_secret *value,
			const char *name);

int broker_redact_stream_new(struct broker_redact_stream **ret);
struct broker_redact_stream *broker_redact_stream_free(struct broker_redact_stream *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct broker_redact_stream *, broker_redact_stream_free);

/* Feeds len bytes of a stream. *ret_out (malloc'd, *ret_len bytes, may be 0) is the output
 * that is final now; with flush, also whatever was held back. The caller frees *ret_out after
 * wiping it. Returns 0 or -ENOMEM. */
int broker_redact(const struct broker_redactor *r, struct broker_redact_stream *s, const void *buf,
		  size_t len, bool flush, unsigned char **ret_out, size_t *ret_len);

/* ---- session.c: the broker's core, shared by the daemon and the embedded client ----
 *
 * A session is what one sandbox may have: its credentials' real values (read from their sources
 * when the session opens), a surrogate for each, and the hosts each is bound to. Every request
 * names the session; only the peer uid that opened it may use it. Every resolve, granted or
 * refused, is audited. */
struct broker;
struct broker_session;
struct al_audit;

struct broker_peer {
	uid_t uid;
	pid_t pid;
};

/* audit (borrowed, may be NULL) receives the "credential" and "violation" events. */
int broker_new(struct al_audit *audit, struct broker **ret);
struct broker *broker_free(struct broker *b);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct broker *, broker_free);

/* The vault that "vault" sources read (b takes v; path is copied). */
int broker_set_vault(struct broker *b, struct broker_vault *v, const char *path);
/* Re-reads the vault when its file changed since it was read. */
int broker_refresh_vault(struct broker *b, struct al_error *err);

/* Opening a session is three steps, so that a daemon reads slow sources (a command) off its
 * event loop: prepare (checks the request, copies the vault's values and bindings), read (the
 * other sources: any thread, touches nothing but the session), then add (surrogates, and the
 * session joins b). creds holds the credentials (taken); owner is an opaque tag of whoever must
 * close it (the daemon's connection). prepare takes o->creds, also when it fails. */
struct broker_open {
	struct broker_peer peer;
	struct policy *creds; /* only its credentials are used */
	const char *policy_hash, *label;
	uint64_t ttl_usec; /* 0: the longest allowed */
	const void *owner;
};
int broker_session_prepare(struct broker *b, struct broker_open *o, struct broker_session **ret,
			   struct al_error *err);
int broker_session_read_sources(struct broker_session *s, struct al_error *err);
/* Whether any credential is still to be read from its source (else the vault gave them all). */
bool broker_session_needs_sources(const struct broker_session *s);
int broker_session_add(struct broker *b, struct broker_session *s, struct al_error *err);
struct broker_session *broker_session_free(struct broker_session *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct broker_session *, broker_session_free);

/* The session's id (64 hex digits: the capability to use it) and its i-th credential's name and
 * surrogate. */
const char *broker_session_id(const struct broker_session *s);
size_t broker_session_count(const struct broker_session *s);
const char *broker_session_cred_name(const struct broker_session *s, size_t i);
const char *broker_session_cred_surrogate(const struct broker_session *s, size_t i);

/* The requests on an open session. Each looks the session up by id for peer (-ENOENT when it
 * does not exist, has expired, or is another uid's: the same answer, so ids cannot be probed).
 * Values are returned as borrowed bytes, valid until the next call on b. */
struct broker_bytes {
	const void *data;
	size_t len;
};
/* The real value behind surrogate, for a request to host. Every refusal is -EPERM (no such
 * session among them: a resolve is the proxy's, and its refusals are violations), audited, as is
 * a grant. */
int broker_resolve(struct broker *b, const struct broker_peer *peer, const char *id,
		   const char *surrogate, const char *host, struct broker_bytes *ret,
		   struct al_error *err);
/* What the sandbox gets for credential name (env_var and file injections): its surrogate, or its
 * real value when exposed. */
int broker_read(struct broker *b, const struct broker_peer *peer, const char *id, const char *name,
		struct broker_bytes *ret, struct al_error *err);
/* The sidecar headers for a request to host, "Name: value\r\n" each (may be empty). */
int broker_headers(struct broker *b, const struct broker_peer *peer, const char *id,
		   const char *host, struct broker_bytes *ret, struct al_error *err);
/* Output of the sandbox on stream (0 stdout, 1 stderr) with every real value redacted. */
int broker_redact_output(struct broker *b, const struct broker_peer *peer, const char *id,
			 unsigned stream, const void *buf, size_t len, bool flush,
			 struct broker_bytes *ret, struct al_error *err);
/* The egress proxy saw the SSH host key key (len bytes) on a connection it allowed to
 * destination ("host:port"): the session's agent keeps it. -ENOENT without SSH keys. */
int broker_ssh_hostkey(struct broker *b, const struct broker_peer *peer, const char *id,
		       const char *destination, const void *key, size_t len, struct al_error *err);
/* One request to the session's SSH agent (broker_ssh_agent_answer()); *ret is the answer's
 * body. Every answer is audited: a refused signature as a violation. */
int broker_ssh_request(struct broker *b, const struct broker_peer *peer, const char *id,
		       const void *in, size_t len, struct broker_bytes *ret,
		       struct broker_ssh_outcome *o, struct al_error *err);
int broker_close(struct broker *b, const struct broker_peer *peer, const char *id,
		 struct al_error *err);
/* Ends the sessions owner opened (its connection closed). */
void broker_close_owned(struct broker *b, const void *owner);
/* Ends the sessions whose time is up; returns how many remain. */
size_t broker_expire(struct broker *b);

/* For health and list: the number of sessions, and each one's facts. */
struct broker_session_info {
	const char *tag, *policy_hash, *label; /* tag: a hash of the id, which is not shown */
	uid_t uid;
	pid_t pid;
	uint64_t created, expires; /* seconds since the epoch */
	size_t n_credentials;
	const char *const *names;
};
size_t broker_session_total(const struct broker *b);
/* Calls fn for each session peer may see (its own uid's; every one for root). */
typedef int (*broker_session_fn)(const struct broker_session_info *i, void *userdata);
int broker_list(const struct broker *b, const struct broker_peer *peer, broker_session_fn fn,
		void *userdata);
const char *broker_vault_file(const struct broker *b);
size_t broker_vault_entries(const struct broker *b);

/* ---- server.c: the daemon's loop, also as airlock's embedded broker ----
 *
 * airlock's embedded broker (no daemon listens): a child process serves the connected sockets
 * fds (taken) with the daemon's code until they have all closed, opening the vault (o->vault)
 * when vault_cred names a credential that needs it. audit is borrowed. A setup error is sent on
 * fds[0] as the answer to the first request. */
struct broker_daemon_options;
int broker_embedded_serve(const struct broker_daemon_options *o, struct al_audit *audit,
			  const char *vault_cred, const int *fds, size_t n);

/* ---- protocol.c: the wire format ----
 *
 * Each message is a frame: u32 JSON length, u32 payload length (both big-endian), the JSON
 * object, then the payload bytes. Real values only ever travel in a payload, never in JSON, so
 * that they stay out of json-c's heap. Requests: {"v": 1, "id": N, "op": ..., ...}; responses
 * {"v": 1, "id": N, "ok": true, ...} or {"v": 1, "id": N, "ok": false, "errno": "EPERM",
 * "error": "..."}. docs/BROKER.md describes every op. */
#define BROKER_PROTOCOL_VERSION 1
#define BROKER_FRAME_HEADER 8
#define BROKER_JSON_MAX (64 * 1024)
#define BROKER_PAYLOAD_MAX (256 * 1024)		  /* in a request */
#define BROKER_RESPONSE_PAYLOAD_MAX (1024 * 1024) /* redacted output may grow */

enum broker_op {
	BROKER_OP_OPEN,
	BROKER_OP_RESOLVE,
	BROKER_OP_READ,
	BROKER_OP_HEADERS,
	BROKER_OP_REDACT,
	BROKER_OP_CLOSE,
	BROKER_OP_HEALTH,
	BROKER_OP_LIST,
	BROKER_OP_SSH_HOSTKEY,
	BROKER_OP_SSH_AGENT,
	_BROKER_OP_MAX,
};
const char *broker_op_to_string(enum broker_op op);

/* The two lengths of a frame header; -EMSGSIZE (with err) past BROKER_JSON_MAX or payload_max. */
int broker_frame_parse(const unsigned char hdr[BROKER_FRAME_HEADER], uint32_t payload_max,
		       uint32_t *ret_json, uint32_t *ret_payload, struct al_error *err);
void broker_frame_header(unsigned char hdr[BROKER_FRAME_HEADER], uint32_t json, uint32_t payload);

/* A parsed request. Its strings point into root (owned). */
struct broker_request {
	uint64_t id;
	enum broker_op op;
	const char *session, *surrogate, *host, *name, *policy_hash, *label;
	struct policy *creds; /* open: the credentials, as a policy (owned) */
	uint64_t ttl_usec;
	unsigned stream;
	bool flush;
	void *root;
};
/* Parses one request's JSON (-EINVAL, -EPROTONOSUPPORT for another version, each with err).
 * The id is set whenever it could be read, so that an error answer can carry it. */
int broker_request_parse(const char *json, size_t len, struct broker_request *ret,
			 struct al_error *err);
void broker_request_done(struct broker_request *r);

/* Encodes a request (the client's side): r's fields for its op; for open, p's credentials. */
int broker_request_encode(const struct broker_request *r, const struct policy *p, char **ret,
			  size_t *ret_len);

/* Responses: an error; a plain ok; open's (the session's id and surrogates); health's; list's. */
int broker_response_error(uint64_t id, int code, const char *msg, char **ret, size_t *ret_len);
int broker_response_ok(uint64_t id, char **ret, size_t *ret_len);
int broker_response_open(uint64_t id, const struct broker_session *s, char **ret, size_t *ret_len);
/* ssh_agent's: what the answer did (broker_ssh_outcome), for the proxy's audit. */
struct broker_ssh_outcome;
int broker_response_ssh(uint64_t id, const struct broker_ssh_outcome *out, char **ret,
			size_t *ret_len);
int broker_response_health(uint64_t id, const struct broker *b, uint64_t uptime_sec, char **ret,
			   size_t *ret_len);
int broker_response_list(uint64_t id, const struct broker *b, const struct broker_peer *peer,
			 char **ret, size_t *ret_len);

/* A parsed response (the client's side): ok, or code and error; for open, the session and the
 * surrogates by credential name; the whole JSON for health and list. */
struct broker_response {
	uint64_t id;
	bool ok;
	int code;
	const char *error, *session;
	size_t n_surrogates;
	const char **names, **surrogates;
	void *root;
};
int broker_response_parse(const char *json, size_t len, struct broker_response *ret,
			  struct al_error *err);
void broker_response_done(struct broker_response *r);
/* ssh_agent's answer's account of itself (broker_response_ssh()). */
void broker_response_ssh_verdict(const struct broker_response *r, struct broker_ssh_verdict *v);
/* The response's JSON, pretty-printed (health, list). */
int broker_response_to_string(const struct broker_response *r, char **ret);
