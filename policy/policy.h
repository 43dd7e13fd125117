#pragma once

/* The one policy model: parse and validate the JSON policy (DESIGN.md), the embedded default,
 * command-line overrides, canonical serialization and its BLAKE2b-256 hash.
 *
 * A struct policy is always valid: every constructor validates, every setter validates its
 * argument, so the launcher never has to re-check a field. All strings are owned by the
 * policy and freed by policy_free(). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "common/macro.h"

#define POLICY_HASH_SIZE 32
#define POLICY_HASH_HEX_SIZE (POLICY_HASH_SIZE * 2 + 1)
#define POLICY_FILE_MAX (1024 * 1024) /* bytes: a larger policy file is refused */
#define POLICY_LIST_MAX 1024	      /* entries in any one array */
#define POLICY_STRING_MAX 4096	      /* bytes in any one string */

/* A capsule profile: a named set of containment contracts a policy declares it meets
 * ("profile"), each checked before anything runs (policy-profile.c, docs/SECURITY.md). */
enum policy_profile {
	POLICY_PROFILE_NONE,
	POLICY_PROFILE_LINUX_NS_V1,
};

enum policy_isolation {
	POLICY_ISOLATION_PROCESS,
	POLICY_ISOLATION_CONTAINER,
	POLICY_ISOLATION_NETWORK_POLICY,
};

enum policy_seccomp {
	POLICY_SECCOMP_BASELINE,
	POLICY_SECCOMP_RESTRICTED,
	POLICY_SECCOMP_STRICT,
};

enum policy_net_action {
	POLICY_NET_DENY,
	POLICY_NET_ALLOW,
};

enum policy_cred_source {
	POLICY_CRED_SOURCE_VAULT,
	POLICY_CRED_SOURCE_ENV,
	POLICY_CRED_SOURCE_FILE,
	POLICY_CRED_SOURCE_COMMAND,
	POLICY_CRED_SOURCE_KEYRING,
};

enum policy_injection {
	POLICY_INJECTION_ENV_VAR,
	POLICY_INJECTION_FILE,
	POLICY_INJECTION_SIDECAR,
	POLICY_INJECTION_SSH_AGENT, /* the SSH agent airlock serves the sandbox (kind SSH_KEY) */
};

/* What a credential's value is to the proxy. An AWS access key id names its secret access key
 * and session token (credentials of their own) and a scope: the proxy verifies a SigV4
 * signature made with the surrogate secret and signs the request again with the real one
 * (netns/sigv4.c); the secret's own surrogate is never swapped. */
enum policy_cred_kind {
	POLICY_CRED_PLAIN,
	POLICY_CRED_AWS_KEY_ID,
	POLICY_CRED_AWS_SECRET,
	POLICY_CRED_AWS_TOKEN,
	POLICY_CRED_SSH_KEY,  /* an "ssh" object: a vault key that signs through the agent */
	POLICY_CRED_POSTGRES, /* a "postgres" object: a password the proxy logs in with */
};

/* How the egress proxy asks the sandbox for a Postgres credential's (surrogate) password. */
enum policy_pg_auth {
	POLICY_PG_AUTH_SCRAM,	 /* "scram-sha-256" (the default) */
	POLICY_PG_AUTH_MD5,	 /* "md5" */
	POLICY_PG_AUTH_PASSWORD, /* "password": in the clear, on the sandbox's own link */
};

enum policy_dest_kind {
	POLICY_DEST_HOST,     /* "api.github.com" (lower-cased) */
	POLICY_DEST_WILDCARD, /* "*.pypi.org": any name below pypi.org, not pypi.org itself */
	POLICY_DEST_CIDR,     /* "10.0.0.0/8", "192.0.2.1" (= /32), "2001:db8::/32" */
};

struct policy_strv {
	char **items;
	size_t n;
};

struct policy_mount {
	char *source; /* absolute host path */
	char *target; /* absolute path in the sandbox, not "/" nor under /proc or /dev */
	bool read_only;
};

struct policy_env_var {
	char *name; /* [A-Za-z_][A-Za-z0-9_]* */
	char *value;
};

struct policy_credential {
	char *name; /* [A-Za-z0-9_.-]+, unique */
	enum policy_cred_source source;
	char *source_var;		/* env: "var" */
	char *source_path;		/* file: "path" */
	struct policy_strv source_argv; /* command: "command" (array of strings) */
	char *source_key;		/* vault: "key" (defaults to name); keyring: "key" */
	enum policy_injection injection;
	char *var_name;		  /* env_var */
	char *path;		  /* file: absolute path in the sandbox */
	char *header;		  /* sidecar */
	char *format;		  /* sidecar: contains exactly one "{}"; default "{}" */
	bool expose;		  /* give the real value instead of a surrogate */
	struct policy_strv hosts; /* names or "*.suffix" patterns the credential is bound to */
	/* "aws" (an access key id's): the names of its secret access key and session token (NULL:
	 * none) credentials, the regions and services a signature may name (empty: any). Those two
	 * credentials get kind AWS_SECRET and AWS_TOKEN, and aws_key the key id's index. */
	enum policy_cred_kind kind;
	char *aws_secret, *aws_token;
	struct policy_strv aws_regions, aws_services;
	size_t aws_key;
	/* "ssh" (kind SSH_KEY): where the key may sign a user authentication, each "host:port"
	 * (a lower-case name or an address, "[v6]:port"; port 22 when the policy gives none),
	 * and whether it may sign git commits (an SSHSIG in the "git" namespace). */
	struct policy_strv ssh_destinations;
	bool ssh_commit_signing;
	/* "postgres" (kind POSTGRES): the role and database the sandbox logs in as, and how it is
	 * asked for its password; hosts holds the destinations, each "host:port" (port 5432 when
	 * the policy gives none): the surrogate resolves only there, and only the proxy's Postgres
	 * login uses it. */
	char *pg_user, *pg_database;
	enum policy_pg_auth pg_auth;
};

struct policy_net_rule {
	char *destination; /* as written, normalised (lower case) */
	enum policy_dest_kind kind;
	uint8_t family;	    /* CIDR: AF_INET or AF_INET6 */
	uint8_t prefix_len; /* CIDR */
	uint8_t addr[16];   /* CIDR network address, host bits zero */
	uint16_t port;	    /* 0 = no port given: 80 and 443 */
	enum policy_net_action action;
};

struct policy_resolve {
	char *name;    /* lower case */
	char *address; /* literal IPv4 or IPv6 address, normalised */
};

/* Unset numeric limits are 0 ("no limit") unless said otherwise. */
struct policy_resources {
	uint64_t cpu_millis;   /* "cpu": "1.0" = 1000 */
	uint64_t memory;       /* bytes; "max" in JSON = 0 = no limit */
	uint64_t pids;	       /* max tasks; "max" in JSON = 0 = no limit */
	uint64_t disk;	       /* bytes: size cap of the sandbox's writable tmpfs (/tmp) */
	uint64_t timeout_usec; /* wall clock */
	uint64_t io_weight;    /* 1..10000 (cgroup v2 io.weight scale) */
	uint64_t nofile;       /* RLIMIT_NOFILE */
};

struct policy {
	char *id; /* may be NULL */
	int tier; /* 0..4 */
	enum policy_profile profile;
	enum policy_isolation isolation;
	char *image;	     /* container rootfs folder (absolute, resolved), or NULL = host /usr */
	bool network_policy; /* "network_policy" isolation listed too */
	enum policy_seccomp seccomp;
	struct {
		char *root;  /* host folder as written ("." allowed; resolved at launch) */
		char *mount; /* absolute path in the sandbox, default "/workspace" */
		struct policy_strv read, write, deny;
		uint64_t quota; /* bytes, 0 = none */
		bool protect;	/* the built-in protected entries and git's checks (default true) */
	} workspace;
	struct policy_mount *mounts;
	size_t n_mounts;
	struct policy_env_var *env;
	size_t n_env;
	struct policy_strv executables; /* absolute paths; empty = no allow list */
	struct policy_credential *credentials;
	size_t n_credentials;
	struct policy_resources resources;
	struct {
		enum policy_net_action default_action;
		struct policy_net_rule *rules;
		size_t n_rules;
		struct policy_resolve *resolve;
		size_t n_resolve;
		/* How long the egress proxy waits for a connection's first request head (or TLS
		 * ClientHello), and between its requests, before it closes it: 0 is
		 * POLICY_IDLE_TIMEOUT_DEFAULT_USEC (and the canonical form leaves it out). */
		uint64_t idle_timeout_usec;
	} network;
	char *audit;		   /* path of the JSON-lines audit file, or NULL */
	struct policy_strv labels; /* the policy's own result labels */
};

/* Loads and validates a policy. Errors: -EINVAL (message names the JSON path, e.g.
 * "credentials[1].hosts[0]: ..."), -EOPNOTSUPP (an isolation type that cannot be enforced,
 * message says which), -ENOENT/-EACCES/-EFBIG for the file itself. *ret is untouched on error. */
int policy_load_file(const char *path, struct policy **ret, struct al_error *err);
int policy_load_string(const char *json, struct policy **ret, struct al_error *err);
int policy_load_buffer(const char *buf, size_t len, struct policy **ret, struct al_error *err);

/* The embedded default of DESIGN.md: workspace = current folder (read-write), network denied,
 * no credentials, restricted seccomp, sane limits. Returns 0 or -ENOMEM. */
int policy_new_default(struct policy **ret);

struct policy *policy_free(struct policy *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct policy *, policy_free);

/* Whether p lets anything out: an allow rule, or default allow. Without it the sandbox gets
 * only lo, and no proxy runs; with it, admission counts host files as able to leave. */
bool policy_has_egress(const struct policy *p);
/* How many of p's credentials are SSH keys (served by airlock's agent). */
size_t policy_ssh_keys(const struct policy *p);
/* What a run refuses of a valid policy, since it could not be enforced, with one line in err:
 * SSH keys with no egress (the agent signs only for what the proxy sees). Not part of loading:
 * the broker loads credentials alone. `airlock policy check` and `airlock run` ask here. */
int policy_check_runnable(const struct policy *p, struct al_error *err);

/* Whether a host pattern of a policy (a rule's destination, a credential's hosts) or of a vault
 * binding covers name: a pattern that is a name, that name; "*.suffix", every name below suffix
 * but not suffix itself. Names compare in any case (DNS ignores it). The one place this rule is
 * decided: the proxy's rules, its interception and the broker's bindings all ask here. */
bool policy_host_covers(const char *pattern, const char *name);

/* Whether s is a workspace path pattern a policy may hold (what loading one checks, and what a
 * hand-built policy is held to): relative, no empty, "." or ".." component, "**" only whole, no
 * control character, at most POLICY_STRING_MAX bytes. */
bool policy_glob_is_valid(const char *s);

/* The longest timeout a policy (or --timeout) takes: a long agent run may want weeks; past a
 * year the value is a typo, and no later sum (deadlines, the broker's TTL) can overflow. exec's
 * requests stop at a day (AGENT_TIMEOUT_MAX_USEC): they come from agents, not the operator. */
#define POLICY_TIMEOUT_MAX_USEC (366ULL * 24 * 3600 * 1000000)
#define POLICY_IDLE_TIMEOUT_DEFAULT_USEC (60ULL * 1000000) /* network.idle_timeout */
#define POLICY_IDLE_TIMEOUT_MAX_USEC (3600ULL * 1000000)

/* Whether name may be set in a sandbox's environment by whoever asks for a command (a policy's
 * env, run -e, a request's or session exec's env): a variable name ([A-Za-z_][A-Za-z0-9_]*), and
 * none through which the dynamic loader or libc loads code or data (LD_*, MALLOC_*,
 * GCONV_PATH, ...: the executables allow list would mean nothing). -EINVAL with a message that
 * starts with field ("env", "--env") and quotes name. */
int policy_env_name_check(const char *field, const char *name, struct al_error *err);

/* Command-line overrides. Each validates its argument like the matching JSON field, names the
 * flag in err, and leaves p unchanged on error. */
int policy_set_workspace(struct policy *p, const char *root, struct al_error *err);
int policy_add_allow(struct policy *p, const char *host_port,
		     struct al_error *err); /* HOST[:PORT] */
int policy_add_resolve(struct policy *p, const char *pin,
		       struct al_error *err); /* NAME:ADDRESS or NAME:PORT:ADDRESS */
int policy_set_memory(struct policy *p, const char *size, struct al_error *err);
int policy_set_timeout(struct policy *p, const char *duration, struct al_error *err);
int policy_set_env(struct policy *p, const char *assignment, struct al_error *err); /* K=V */
int policy_set_seccomp(struct policy *p, const char *level, struct al_error *err);

/* Canonical serialization: compact JSON, keys in a fixed order, every field present with its
 * normalised value (sizes in bytes, durations in ms, cpu in millicores), arrays in the order
 * written except where order has no meaning (none so far). Two policies that mean the same
 * serialize the same. Returns a malloc'd string. */
int policy_to_canonical_json(const struct policy *p, char **ret);

/* Admission (DESIGN.md): a policy of tier POLICY_TIER_ADMITTED or more runs only when its hash is
 * listed in the admitted set at path: one hash (lower-case hex) per line, optionally followed by
 * blanks and a comment; blank lines and lines starting with '#' are skipped. The file must belong
 * to root (or the caller) and be writable by no one else. Returns 0 when p may run, -EPERM with
 * err naming the policy's hash when it may not, -EINVAL for a malformed set (line named). */
#define POLICY_TIER_ADMITTED 3
/* The tier checked is policy_effective_tier(): a policy cannot skip admission by declaring a
 * low tier. When the derived tier decides, the refusal names the field that raised it. */
int policy_check_admitted(const struct policy *p, const char *path, struct al_error *err);

/* Why a policy has the tier it has (docs/SECURITY.md, "The tier of a policy"). */
struct policy_tier_reason {
	char field[64];	 /* "credentials[0].source", "mounts[1]", ...; "" when nothing raised it */
	const char *why; /* static: "a command source", ...; NULL when nothing raised it */
};
/* The lowest tier what p can do on the host calls for (running host programs, reading host
 * secrets, writing host folders, egress, ...), 0..4, and into ret (may be NULL) the first field
 * that calls for it. Pure: looks at nothing but p. */
int policy_min_tier(const struct policy *p, struct policy_tier_reason *ret);
/* The higher of p->tier and policy_min_tier(p): the tier admission applies. ret (may be NULL)
 * says which field raised it, or is empty when the declared tier is as high. */
int policy_effective_tier(const struct policy *p, struct policy_tier_reason *ret);
/* The parser of the admitted set: whether hash is listed in text. */
int policy_admitted_in(const char *text, size_t len, const char *hash, bool *ret,
		       struct al_error *err);

/* BLAKE2b-256 over the canonical serialization. */
int policy_hash(const struct policy *p, uint8_t ret[POLICY_HASH_SIZE]);
int policy_hash_hex(const struct policy *p, char ret[POLICY_HASH_HEX_SIZE]);

const char *policy_seccomp_to_string(enum policy_seccomp s);
const char *policy_isolation_to_string(enum policy_isolation i);
const char *policy_cred_source_to_string(enum policy_cred_source s); /* "vault", "env", ... */

/* s as a credential's host, by the policy's rules: a host name or a "*.suffix" pattern,
 * lower-cased (malloc'd). -EINVAL when it is neither, -ENOMEM. */
int policy_host_pattern_normalize(const char *s, char **ret);

/* Profiles (policy-profile.c). A policy whose "profile" names one is held to each of its
 * contracts when it is loaded (the first refusal is the error) and again by the launcher, after
 * the command line's overrides. linux-ns-v1's own bounds are tighter than every policy's
 * (POLICY_LIST_MAX entries, POLICY_FILE_MAX bytes): */
#define POLICY_PROFILE_ID_MAX 256				/* bytes in "profile" */
#define POLICY_PROFILE_ROUTES_MAX 256				/* network.rules */
#define POLICY_PROFILE_EXECUTABLES_MAX 64			/* executables */
const char *policy_profile_to_string(enum policy_profile prof); /* NULL for NONE */
/* -EINVAL for a name no profile has. */
int policy_profile_from_string(const char *s, enum policy_profile *ret);
/* The contracts of prof, in the order they are checked and reported: "namespace", "seccomp",
 * "cgroup.memory", ..., named as the capsule names them. */
size_t policy_profile_n_contracts(enum policy_profile prof);
const char *policy_profile_contract(enum policy_profile prof, size_t i);
/* Whether p meets contract i of prof: 0, or -EINVAL with err naming the field and the contract
 * ("resources.cpu: linux-ns-v1 needs a cpu limit"). Looks at p and at the host that checks it:
 * the files executables names (policy-host.c). */
int policy_profile_check_contract(const struct policy *p, enum policy_profile prof, size_t i,
				  struct al_error *err);
/* Every contract of prof: the first refusal. */
int policy_profile_check(const struct policy *p, enum policy_profile prof, struct al_error *err);
/* policy_load_file() without the check of the policy's own profile, for `airlock policy check`,
 * which reports each contract itself. Nothing that runs a policy may use it. */
int policy_load_file_unprofiled(const char *path, struct policy **ret, struct al_error *err);
