#pragma once

/* Shared by the policy module's .c files and tests/unit/policy/ only.
 *
 * The value checkers below validate one value of the policy, wherever it comes from: a JSON
 * field (policy-parse.c) or a command-line flag (policy-override.c). They name the place of the
 * value in their error message through a struct policy_where, so that one checker gives
 * "credentials[1].hosts[0]: ..." for a file and "--allow: ..." for a flag. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "policy/policy.h"

/* The defaults of an absent field, shared by the embedded default and by file policies ("sane
 * limits"). cpu, timeout and io_weight have no default: absent means no limit. */
#define POLICY_DEFAULT_MEMORY (UINT64_C(2) << 30) /* 2Gi */
#define POLICY_DEFAULT_PIDS UINT64_C(1024)
#define POLICY_DEFAULT_DISK (UINT64_C(512) << 20) /* 512Mi: the sandbox's /tmp */
#define POLICY_DEFAULT_NOFILE UINT64_C(1024)
#define POLICY_DEFAULT_WORKSPACE_ROOT "."
#define POLICY_DEFAULT_WORKSPACE_MOUNT "/workspace"
#define POLICY_DEFAULT_SIDECAR_FORMAT "{}"

#define POLICY_ENV_NAME_MAX 256
#define POLICY_ENV_VALUE_MAX (32 * 1024)
#define POLICY_ID_MAX 64
#define POLICY_NAME_MAX 64 /* credential names, labels */
#define POLICY_HOST_MAX 253
#define POLICY_TIER_MAX 4
#define POLICY_PIDS_MAX UINT64_C(4194304) /* the kernel's PID_MAX_LIMIT */
#define POLICY_MEMORY_MIN (UINT64_C(1) << 20)
#define POLICY_DISK_MIN (UINT64_C(1) << 20)
#define POLICY_IO_WEIGHT_MAX UINT64_C(10000)
#define POLICY_NOFILE_MIN UINT64_C(16)
#define POLICY_NOFILE_MAX UINT64_C(1048576)
#define POLICY_JSON_DEPTH_MAX 16
#define POLICY_CANONICAL_VERSION 1
/* JSON integers above 2^53 lose precision in most JSON tools (and json-c clamps on overflow):
 * such values are refused, a size that large has to be written as a string. */
#define POLICY_JSON_INT_MAX (INT64_C(1) << 53)

/* Where a value sits: a chain from the innermost element up to the top level, built on the stack
 * by the parser at no cost and formatted only when there is an error. A top-level key is printed
 * as is (so an override can use its flag name, "--memory"); nested keys get a dot, array
 * elements "[i]", and keys that are not plain words are quoted: env["A B"]. */
struct policy_where {
	const struct policy_where *up;
	const char *key; /* NULL for an array element */
	size_t index;
};

#define POLICY_WHERE_KEY(parent, k) ((struct policy_where){.up = (parent), .key = (k)})
#define POLICY_WHERE_INDEX(parent, i) ((struct policy_where){.up = (parent), .index = (i)})

/* Formats w into buf (always NUL-terminated, truncated to fit). */
void policy_where_format(const struct policy_where *w, char *buf, size_t size);

/* Sets err to "<where>: <message>" and returns code. w may be NULL (the whole document). */
int policy_error(struct al_error *err, int code, const struct policy_where *w, const char *fmt, ...)
    _printf_(4, 5);

/* s quoted for a message (al_quote()). */
#define QUOTE(s) AL_QUOTE(s)

/* Value checkers. Each returns 0 or -EINVAL (message names w) or -ENOMEM. The strings they
 * store are malloc'd and owned by the caller. */

bool policy_utf8_is_valid(const char *s, size_t len);

/* Any string: at most max bytes, valid UTF-8 (NUL bytes never reach here: see policy-parse.c). */
int policy_check_string(const struct policy_where *w, const char *s, size_t max,
			struct al_error *err);

enum policy_path_flags {
	POLICY_PATH_ABSOLUTE = 1 << 0, /* must start with "/" */
	POLICY_PATH_NOT_ROOT = 1 << 1, /* "/" itself is refused */
	POLICY_PATH_SANDBOX =
	    1 << 2, /* a place in the sandbox: not "/", nor in /proc, /dev, /sys */
	POLICY_PATH_ALLOW_DOTDOT = 1 << 3, /* keep ".." components instead of refusing them */
};

/* Normalises a path: "//" collapsed, "." components and a trailing "/" dropped ("." stays "."
 * when nothing else is left). Refuses "", control characters, ".." (unless allowed), a component
 * longer than NAME_MAX and a path of PATH_MAX bytes or more. */
int policy_normalize_path(const struct policy_where *w, const char *s, unsigned flags, char **ret,
			  struct al_error *err);

/* A workspace glob: relative, non-empty components, no "." or "..", "**" only as a whole
 * component, no control characters. */
int policy_check_glob(const struct policy_where *w, const char *s, struct al_error *err);

bool policy_env_name_is_valid(const char *s);
/* A variable the sandbox may be given: a valid name, and not one of the dynamic loader's
 * injection variables (LD_*, MALLOC_*, GCONV_PATH, ...). */
int policy_check_env_name(const struct policy_where *w, const char *name, struct al_error *err);
int policy_check_env_value(const struct policy_where *w, const char *value, struct al_error *err);

/* RFC 1123 host name: labels of [a-z0-9-] (1..63, no "-" at either end), at most 253 bytes in all,
 * no trailing dot, and a last label that is not all digits (so that it can never be taken for an
 * IPv4 address). Upper case is accepted and lower-cased into *ret. */
int policy_normalize_host(const struct policy_where *w, const char *s, char **ret,
			  struct al_error *err);
/* A host name or a "*.suffix" pattern. */
int policy_normalize_host_pattern(const struct policy_where *w, const char *s, bool *ret_wildcard,
				  char **ret, struct al_error *err);

/* An IPv4 or IPv6 address literal (not IPv4-mapped IPv6), normalised by inet_ntop. */
int policy_normalize_ip(const struct policy_where *w, const char *s, char **ret,
			struct al_error *err);

/* A network rule destination: host, "*.suffix", address or CIDR. Fills destination, kind,
 * family, prefix_len and addr of rule; ports and action are the caller's. */
int policy_parse_destination(const struct policy_where *w, const char *s,
			     struct policy_net_rule *rule, struct al_error *err);

/* "1".."65535" exactly (no sign, no leading zero). */
int policy_parse_port(const struct policy_where *w, const char *s, uint16_t *ret,
		      struct al_error *err);

/* The value parsers of common/parse-util.h plus the limits of each resource. */
int policy_parse_size(const struct policy_where *w, const char *s, uint64_t *ret,
		      struct al_error *err);
int policy_check_memory(const struct policy_where *w, uint64_t bytes, struct al_error *err);
int policy_check_disk(const struct policy_where *w, uint64_t bytes, struct al_error *err);
int policy_parse_timeout(const struct policy_where *w, const char *s, uint64_t *ret,
			 struct al_error *err);
int policy_parse_cpu(const struct policy_where *w, const char *s, uint64_t *ret,
		     struct al_error *err);
int policy_parse_seccomp(const struct policy_where *w, const char *s, enum policy_seccomp *ret,
			 struct al_error *err);

/* Checks that image is a root filesystem folder and returns its resolved path: -EOPNOTSUPP
 * when it isn't one (see policy-image.c). */
int policy_resolve_image(const struct policy_where *w, const char *image, char **ret,
			 struct al_error *err);

/* JSON access (policy-json.c), for the parsers of policy-parse.c and policy-credential.c. Each
 * checks the type of a value and fills err with "<where>: expected ..." when it is wrong. */

struct json_object;

/* The place of field k inside the object at w: a compound literal, which lives until the end of
 * the enclosing block, as long as any message needs it. */
#define POLICY_AT(w, k) (&POLICY_WHERE_KEY((w), (k)))

typedef int (*policy_field_parse_fn)(struct policy *p, const struct policy_where *w,
				     struct json_object *v, struct al_error *err);

/* One known field of an object; parse is NULL where the caller handles the field itself. */
struct policy_field {
	const char *name;
	policy_field_parse_fn parse;
};

/* Turns one string (already type- and length-checked) into the malloc'd value to store. */
typedef int (*policy_item_parse_fn)(const struct policy_where *w, const char *s, char **ret,
				    struct al_error *err);

int policy_json_type_error(const struct policy_where *w, const char *what, struct al_error *err);
int policy_json_missing(const struct policy_where *w, struct al_error *err);
int policy_json_object(const struct policy_where *w, struct json_object *v, struct al_error *err);
/* Refuses every key of o that fields doesn't list. what ("for source type \"env\" ") tells why
 * a field is not allowed here when it is allowed elsewhere; it may be NULL. */
int policy_json_check_fields(const struct policy_where *w, struct json_object *o,
			     const struct policy_field *fields, size_t n_fields, const char *what,
			     struct al_error *err);
/* Checks that o is an object with only the listed fields. */
int policy_json_checked_object(const struct policy_where *w, struct json_object *o,
			       const struct policy_field *fields, size_t n_fields,
			       struct al_error *err);
/* The field key of o, which must be there. */
int policy_json_required(const struct policy_where *w, struct json_object *o, const char *key,
			 struct json_object **ret, struct al_error *err);
/* The string field key of o (see policy_json_string), which must be there. */
int policy_json_required_string(const struct policy_where *w, struct json_object *o,
				const char *key, const char **ret, struct al_error *err);
/* Checks that v is an object with only the listed fields and calls the parser of each field
 * present, in table order (which is also the order of the checks that span fields). */
int policy_json_fields(struct policy *p, const struct policy_where *w, struct json_object *v,
		       const struct policy_field *fields, size_t n_fields, struct al_error *err);
/* A string of at most max bytes, valid UTF-8. The pointer lives as long as v. */
int policy_json_string(const struct policy_where *w, struct json_object *v, size_t max,
		       const char **ret, struct al_error *err);
int policy_json_int(const struct policy_where *w, struct json_object *v, int64_t min, int64_t max,
		    int64_t *ret, struct al_error *err);
int policy_json_bool(const struct policy_where *w, struct json_object *v, bool *ret,
		     struct al_error *err);
/* An array of at most POLICY_LIST_MAX entries. */
int policy_json_array(const struct policy_where *w, struct json_object *v, size_t *ret_n,
		      struct al_error *err);
/* An array of objects: allocates *items (one zeroed element of item_size per entry, the count in
 * *n_items, both set before parsing so that policy_free() releases a half-parsed array) and calls
 * parse for each entry with its index. */
typedef int (*policy_element_parse_fn)(struct policy *p, size_t idx, const struct policy_where *w,
				       struct json_object *o, struct al_error *err);
int policy_json_elements(struct policy *p, const struct policy_where *w, struct json_object *v,
			 size_t item_size, void **items, size_t *n_items,
			 policy_element_parse_fn parse, struct al_error *err);
/* An object used as a map (env, resolve): any keys, at most POLICY_LIST_MAX of them. */
int policy_json_map(const struct policy_where *w, struct json_object *v, struct al_error *err);
/* A size: a string ("512Mi") or a number of bytes (up to POLICY_JSON_INT_MAX). */
int policy_json_size(const struct policy_where *w, struct json_object *v, uint64_t *ret,
		     struct al_error *err);
/* Appends the strings of the array v to ret, each turned into its stored form by parse. */
int policy_json_strv(const struct policy_where *w, struct json_object *v,
		     policy_item_parse_fn parse, struct policy_strv *ret, struct al_error *err);

int policy_strdup(const char *s, char **ret);
/* [A-Za-z0-9_.-]{1,max}: policy ids and credential names. */
bool policy_is_name(const char *s, size_t max);

/* credentials[] (policy-credential.c). Needs p->env parsed already. */
int policy_parse_credentials(struct policy *p, const struct policy_where *w, struct json_object *v,
			     struct al_error *err);

/* Lists and the env table. */
void policy_strv_done(struct policy_strv *v);
static inline void policy_strv_donep(struct policy_strv *v)
{
	policy_strv_done(v);
}
/* Takes s (even on failure). */
int policy_strv_push(struct policy_strv *v, char *s);
/* Copies src into ret (which it overwrites). */
int policy_strv_copy(const struct policy_strv *src, struct policy_strv *ret);

/* Index of name in p->env (kept sorted by name), or the index where it would go with
 * *ret_found = false. */
size_t policy_env_find(const struct policy *p, const char *name, bool *ret_found);
/* Sets name=value, replacing a variable of that name. Takes both strings (even on failure). */
int policy_env_put(struct policy *p, char *name, char *value);

/* The credential whose env_var injection uses var, or NULL. */
const struct policy_credential *policy_credential_by_var(const struct policy *p, const char *var);

/* Fills the defaults into a zeroed policy (which then owns nothing but the default lists). */
int policy_init_defaults(struct policy *p);

const char *policy_net_action_to_string(enum policy_net_action a);
const char *policy_injection_to_string(enum policy_injection i);

/* Sorts p->network.resolve by name (the canonical order). */
void policy_sort_resolve(struct policy *p);

/* policy-host.c: what a profile's contracts measure a policy against on the host that checks
 * it (unit tests wrap these two). */
struct policy_host_facts {
	uint64_t mem_total; /* bytes (MemTotal) */
	uint64_t pid_max;   /* /proc/sys/kernel/pid_max, at most POLICY_PIDS_MAX */
	uint64_t cpus;	    /* online */
};
int policy_host_facts(struct policy_host_facts *ret);
/* Stats the file path names inside root ("/", or an image's folder), every symbolic link
 * followed and resolved inside root, as the sandbox would see it. -errno. */
struct stat;
int policy_host_stat(const char *root, const char *path, struct stat *ret);
