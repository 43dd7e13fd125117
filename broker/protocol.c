#define LOG_MODULE "broker"

/* The broker's wire format (see broker-internal.h and docs/BROKER.md): frames of JSON plus an
 * optional binary payload. Requests come from peers the broker does not trust to be well-formed:
 * every field is checked for its type, its length and its characters, and anything unknown is an
 * error, as in policies. */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "broker/broker-internal.h"
#include "common/json-util.h"

#define JSON_DEPTH_MAX 16
#define ID_LEN 64
#define HOST_MAX (253 + 9) /* a name, or "host:port" (ssh_hostkey), "[v6]:port" */
#define LABEL_MAX 128
#define SURROGATE_FIELD_MAX BROKER_SURROGATE_MAX
#define POLICY_HASH_LEN (POLICY_HASH_SIZE * 2)

static const char *const op_names[_BROKER_OP_MAX] = {
    [BROKER_OP_OPEN] = "open",
    [BROKER_OP_RESOLVE] = "resolve",
    [BROKER_OP_READ] = "read",
    [BROKER_OP_HEADERS] = "headers",
    [BROKER_OP_REDACT] = "redact",
    [BROKER_OP_CLOSE] = "close",
    [BROKER_OP_HEALTH] = "health",
    [BROKER_OP_LIST] = "list",
    [BROKER_OP_SSH_HOSTKEY] = "ssh_hostkey",
    [BROKER_OP_SSH_AGENT] = "ssh_agent",
};

const char *broker_op_to_string(enum broker_op op)
{
	return op < _BROKER_OP_MAX ? op_names[op] : NULL;
}

static int op_from_string(const char *s)
{
	for (size_t i = 0; i < _BROKER_OP_MAX; i++)
		if (streq(s, op_names[i]))
			return (int)i;
	return -EINVAL;
}

/* ---- frames ---- */

static uint32_t get_be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put_be32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

int broker_frame_parse(const unsigned char hdr[BROKER_FRAME_HEADER], uint32_t payload_max,
		       uint32_t *ret_json, uint32_t *ret_payload, struct al_error *err)
{
	uint32_t json = get_be32(hdr), payload = get_be32(hdr + 4);

	if (json == 0)
		return al_error_set(err, -EBADMSG, "empty message");
	if (json > BROKER_JSON_MAX)
		return al_error_set(err, -EMSGSIZE, "message of %" PRIu32 " bytes, over %d", json,
				    BROKER_JSON_MAX);
	if (payload > payload_max)
		return al_error_set(err, -EMSGSIZE, "payload of %" PRIu32 " bytes, over %" PRIu32,
				    payload, payload_max);
	*ret_json = json;
	*ret_payload = payload;
	return 0;
}

void broker_frame_header(unsigned char hdr[BROKER_FRAME_HEADER], uint32_t json, uint32_t payload)
{
	put_be32(hdr, json);
	put_be32(hdr + 4, payload);
}

/* ---- field checks ---- */

/* The string at key: -ENOENT when absent, -EINVAL (with err) when not a string, empty, longer
 * than max, holding a NUL or a character outside allowed (NULL: printable ASCII but space). */
static int get_string(struct json_object *o, const char *key, size_t max, const char *allowed,
		      const char **ret, struct al_error *err)
{
	struct json_object *v;
	const char *s;
	size_t len;

	if (!json_object_object_get_ex(o, key, &v))
		return -ENOENT;
	if (!json_object_is_type(v, json_type_string))
		return al_error_set(err, -EINVAL, "%s: not a string", key);
	s = json_object_get_string(v);
	len = (size_t)json_object_get_string_len(v);
	if (len == 0 || len > max || strlen(s) != len)
		return al_error_set(err, -EINVAL, "%s: empty, longer than %zu bytes or holding NUL",
				    key, max);
	for (size_t i = 0; i < len; i++)
		if (allowed ? !strchr(allowed, s[i]) : (s[i] < 0x21 || s[i] > 0x7e))
			return al_error_set(err, -EINVAL, "%s: invalid character at byte %zu", key,
					    i);
	*ret = s;
	return 0;
}

static int get_uint(struct json_object *o, const char *key, uint64_t max, uint64_t *ret,
		    struct al_error *err)
{
	struct json_object *v;
	int64_t n;

	if (!json_object_object_get_ex(o, key, &v))
		return -ENOENT;
	if (!json_object_is_type(v, json_type_int))
		return al_error_set(err, -EINVAL, "%s: not an integer", key);
	errno = 0;
	n = json_object_get_int64(v);
	if (n < 0 || (uint64_t)n > max || errno != 0)
		return al_error_set(err, -EINVAL, "%s: out of range (0 to %" PRIu64 ")", key, max);
	*ret = (uint64_t)n;
	return 0;
}

#define HEX "0123456789abcdef"
#define NAME_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-"
#define HOST_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_:[]"

/* Which fields each op needs (required) and may have (allowed besides v, id and op). */
enum {
	F_SESSION = 1 << 0,
	F_SURROGATE = 1 << 1,
	F_HOST = 1 << 2,
	F_NAME = 1 << 3,
	F_POLICY_HASH = 1 << 4,
	F_CREDENTIALS = 1 << 5,
	F_LABEL = 1 << 6,
	F_TTL = 1 << 7,
	F_STREAM = 1 << 8,
	F_FLUSH = 1 << 9,
};

static const struct {
	unsigned required, allowed;
} op_fields[_BROKER_OP_MAX] = {
    [BROKER_OP_OPEN] = {F_POLICY_HASH | F_CREDENTIALS, F_LABEL | F_TTL},
    [BROKER_OP_RESOLVE] = {F_SESSION | F_SURROGATE | F_HOST, 0},
    [BROKER_OP_READ] = {F_SESSION | F_NAME, 0},
    [BROKER_OP_HEADERS] = {F_SESSION | F_HOST, 0},
    [BROKER_OP_REDACT] = {F_SESSION | F_STREAM, F_FLUSH},
    [BROKER_OP_CLOSE] = {F_SESSION, 0},
    [BROKER_OP_HEALTH] = {0, 0},
    [BROKER_OP_LIST] = {0, 0},
    [BROKER_OP_SSH_HOSTKEY] = {F_SESSION | F_HOST, 0},
    [BROKER_OP_SSH_AGENT] = {F_SESSION, 0},
};

static const struct {
	const char *key;
	unsigned flag;
} field_names[] = {
    {"session", F_SESSION},
    {"surrogate", F_SURROGATE},
    {"host", F_HOST},
    {"name", F_NAME},
    {"policy_hash", F_POLICY_HASH},
    {"credentials", F_CREDENTIALS},
    {"label", F_LABEL},
    {"ttl_ms", F_TTL},
    {"stream", F_STREAM},
    {"flush", F_FLUSH},
};

/* How many of the first max bytes of s are printable ASCII: what of a peer's key a message may
 * quote. */
static size_t printable_prefix(const char *s, size_t max)
{
	size_t n = 0;

	while (n < max && s[n] >= 0x20 && s[n] <= 0x7e)
		n++;
	return n;
}

static int check_keys(struct json_object *o, enum broker_op op, struct al_error *err)
{
	unsigned seen = 0, want = op_fields[op].required, may = want | op_fields[op].allowed;

	json_object_object_foreach(o, key, val)
	{
		unsigned flag = 0;

		(void)val;
		if (streq(key, "v") || streq(key, "id") || streq(key, "op"))
			continue;
		for (size_t i = 0; i < ELEMENTSOF(field_names); i++)
			if (streq(key, field_names[i].key))
				flag = field_names[i].flag;
		if (!(flag & may))
			return al_error_set(err, -EINVAL, "unknown field \"%.*s\" for op %s",
					    (int)printable_prefix(key, 64), key, op_names[op]);
		seen |= flag;
	}
	for (size_t i = 0; i < ELEMENTSOF(field_names); i++)
		if ((want & field_names[i].flag) && !(seen & field_names[i].flag))
			return al_error_set(err, -EINVAL, "op %s needs field \"%s\"", op_names[op],
					    field_names[i].key);
	return 0;
}

/* The open request's credentials, through the policy parser: the same rules as in a policy. */
static int parse_credentials(struct json_object *o, struct policy **ret, struct al_error *err)
{
	_cleanup_json_ struct json_object *wrap = NULL;
	_cleanup_free_ char *s = NULL;
	struct json_object *creds;
	int r;

	if (!json_object_object_get_ex(o, "credentials", &creds) ||
	    !json_object_is_type(creds, json_type_array))
		return al_error_set(err, -EINVAL, "credentials: not an array");
	wrap = json_object_new_object();
	if (!wrap)
		return -ENOMEM;
	r = al_json_add(wrap, "credentials", json_object_get(creds));
	if (r >= 0)
		r = al_json_to_string(wrap, &s);
	if (r < 0)
		return r;
	return policy_load_string(s, ret, err);
}

static int parse_fields(struct json_object *o, struct broker_request *r, struct al_error *err)
{
	struct json_object *v;
	uint64_t n;
	int k;

	k = get_string(o, "session", ID_LEN, HEX, &r->session, err);
	if (k >= 0 && strlen(r->session) != ID_LEN)
		return al_error_set(err, -EINVAL, "session: not a session id");
	if (k == -EINVAL)
		return k;
	if (get_string(o, "surrogate", SURROGATE_FIELD_MAX, NULL, &r->surrogate, err) == -EINVAL ||
	    get_string(o, "host", HOST_MAX, HOST_CHARS, &r->host, err) == -EINVAL ||
	    get_string(o, "name", 128, NAME_CHARS, &r->name, err) == -EINVAL ||
	    get_string(o, "label", LABEL_MAX, NULL, &r->label, err) == -EINVAL)
		return -EINVAL;
	k = get_string(o, "policy_hash", POLICY_HASH_LEN, HEX, &r->policy_hash, err);
	if (k == -EINVAL || (k >= 0 && strlen(r->policy_hash) != POLICY_HASH_LEN))
		return al_error_set(err, -EINVAL, "policy_hash: not a BLAKE2b-256 hash in hex");
	k = get_uint(o, "ttl_ms", UINT64_MAX / 1000, &n, err);
	if (k == -EINVAL)
		return k;
	r->ttl_usec = k >= 0 ? n * 1000 : 0;
	k = get_uint(o, "stream", 1, &n, err);
	if (k == -EINVAL)
		return k;
	r->stream = k >= 0 ? (unsigned)n : 0;
	if (json_object_object_get_ex(o, "flush", &v)) {
		if (!json_object_is_type(v, json_type_boolean))
			return al_error_set(err, -EINVAL, "flush: not a boolean");
		r->flush = json_object_get_boolean(v);
	}
	if (r->op == BROKER_OP_OPEN)
		return parse_credentials(o, &r->creds, err);
	return 0;
}

int broker_request_parse(const char *json, size_t len, struct broker_request *ret,
			 struct al_error *err)
{
	_cleanup_json_ struct json_object *o = NULL;
	struct broker_request r = {0};
	const char *op;
	uint64_t version;
	int k;

	*ret = (struct broker_request){0};
	k = al_json_parse(json, len, JSON_DEPTH_MAX, &o, err);
	if (k < 0)
		return k;
	if (!json_object_is_type(o, json_type_object))
		return al_error_set(err, -EINVAL, "a request is a JSON object");
	/* The id first: an error answer carries it when it can. */
	k = get_uint(o, "id", UINT64_MAX >> 11, &r.id, err);
	if (k == -EINVAL)
		return k;
	ret->id = r.id;
	k = get_uint(o, "v", UINT32_MAX, &version, err);
	if (k == -ENOENT)
		return al_error_set(err, -EINVAL, "the request has no protocol version (\"v\")");
	if (k < 0)
		return k;
	if (version != BROKER_PROTOCOL_VERSION)
		return al_error_set(err, -EPROTONOSUPPORT,
				    "protocol version %" PRIu64 " is not supported (this broker "
				    "speaks %d)",
				    version, BROKER_PROTOCOL_VERSION);
	k = get_string(o, "op", 16, NULL, &op, err);
	if (k == -ENOENT)
		return al_error_set(err, -EINVAL, "the request has no \"op\"");
	if (k < 0)
		return k;
	k = op_from_string(op);
	if (k < 0)
		return al_error_set(err, -EINVAL, "unknown op \"%s\"", op);
	r.op = (enum broker_op)k;
	k = check_keys(o, r.op, err);
	if (k >= 0)
		k = parse_fields(o, &r, err);
	if (k < 0) {
		policy_free(r.creds);
		return k;
	}
	r.root = TAKE_PTR(o);
	*ret = r;
	return 0;
}

void broker_request_done(struct broker_request *r)
{
	r->creds = policy_free(r->creds);
	if (r->root)
		(void)json_object_put(r->root);
	*r = (struct broker_request){0};
}

/* ---- encoding ---- */

static int finish(struct json_object *o, char **ret, size_t *ret_len)
{
	char *s;
	int r;

	r = al_json_to_string(o, &s);
	if (r < 0)
		return r;
	*ret_len = strlen(s);
	*ret = s;
	return 0;
}

static int add_string(struct json_object *o, const char *key, const char *v)
{
	return v ? al_json_add(o, key, json_object_new_string(v)) : 0;
}

static struct json_object *message_new(uint64_t id)
{
	struct json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	if (al_json_add(o, "v", json_object_new_int(BROKER_PROTOCOL_VERSION)) < 0 ||
	    al_json_add(o, "id", json_object_new_int64((int64_t)id)) < 0) {
		(void)json_object_put(o);
		return NULL;
	}
	return o;
}

/* The credentials of p, as the policy's canonical form writes them. */
static int credentials_of(const struct policy *p, struct json_object **ret)
{
	_cleanup_json_ struct json_object *whole = NULL;
	_cleanup_free_ char *s = NULL;
	struct json_object *creds;
	int r;

	r = policy_to_canonical_json(p, &s);
	if (r < 0)
		return r;
	r = al_json_parse(s, strlen(s), JSON_DEPTH_MAX, &whole, NULL);
	if (r < 0)
		return r;
	if (!json_object_object_get_ex(whole, "credentials", &creds))
		return -EINVAL;
	*ret = json_object_get(creds);
	return 0;
}

int broker_request_encode(const struct broker_request *r, const struct policy *p, char **ret,
			  size_t *ret_len)
{
	_cleanup_json_ struct json_object *o = NULL;
	struct json_object *creds;
	unsigned f;
	int k;

	o = message_new(r->id);
	if (!o)
		return -ENOMEM;
	f = op_fields[r->op].required | op_fields[r->op].allowed;
	k = add_string(o, "op", op_names[r->op]);
	if (k >= 0 && (f & F_SESSION))
		k = add_string(o, "session", r->session);
	if (k >= 0 && (f & F_SURROGATE))
		k = add_string(o, "surrogate", r->surrogate);
	if (k >= 0 && (f & F_HOST))
		k = add_string(o, "host", r->host);
	if (k >= 0 && (f & F_NAME))
		k = add_string(o, "name", r->name);
	if (k >= 0 && (f & F_POLICY_HASH))
		k = add_string(o, "policy_hash", r->policy_hash);
	if (k >= 0 && (f & F_LABEL))
		k = add_string(o, "label", r->label);
	if (k >= 0 && (f & F_TTL) && r->ttl_usec)
		k = al_json_add(o, "ttl_ms",
				json_object_new_int64(
				    (int64_t)(r->ttl_usec / 1000 + (r->ttl_usec % 1000 != 0))));
	if (k >= 0 && (f & F_STREAM))
		k = al_json_add(o, "stream", json_object_new_int((int)r->stream));
	if (k >= 0 && (f & F_FLUSH))
		k = al_json_add(o, "flush", json_object_new_boolean(r->flush));
	if (k >= 0 && (f & F_CREDENTIALS)) {
		k = credentials_of(p, &creds);
		if (k >= 0)
			k = al_json_add(o, "credentials", creds);
	}
	if (k < 0)
		return k;
	return finish(o, ret, ret_len);
}

static const struct {
	int code;
	const char *name;
} errno_names[] = {
    {EINVAL, "EINVAL"},		{ENOENT, "ENOENT"},	{EPERM, "EPERM"},
    {EACCES, "EACCES"},		{EMSGSIZE, "EMSGSIZE"}, {EPROTONOSUPPORT, "EPROTONOSUPPORT"},
    {ENOMEM, "ENOMEM"},		{EBUSY, "EBUSY"},	{ETIMEDOUT, "ETIMEDOUT"},
    {EFBIG, "EFBIG"},		{ENODATA, "ENODATA"},	{EIO, "EIO"},
    {EOPNOTSUPP, "EOPNOTSUPP"}, {EBADMSG, "EBADMSG"},	{ENOKEY, "ENOKEY"},
    {EEXIST, "EEXIST"},
};

int broker_response_error(uint64_t id, int code, const char *msg, char **ret, size_t *ret_len)
{
	_cleanup_json_ struct json_object *o = NULL;
	const char *name = "EIO";
	int r;

	for (size_t i = 0; i < ELEMENTSOF(errno_names); i++)
		if (errno_names[i].code == -code)
			name = errno_names[i].name;
	o = message_new(id);
	if (!o)
		return -ENOMEM;
	r = al_json_add(o, "ok", json_object_new_boolean(false));
	if (r >= 0)
		r = add_string(o, "errno", name);
	if (r >= 0)
		r = add_string(o, "error", msg);
	if (r < 0)
		return r;
	return finish(o, ret, ret_len);
}

static struct json_object *ok_new(uint64_t id)
{
	struct json_object *o = message_new(id);

	if (o && al_json_add(o, "ok", json_object_new_boolean(true)) < 0) {
		(void)json_object_put(o);
		return NULL;
	}
	return o;
}

int broker_response_ok(uint64_t id, char **ret, size_t *ret_len)
{
	_cleanup_json_ struct json_object *o = ok_new(id);

	if (!o)
		return -ENOMEM;
	return finish(o, ret, ret_len);
}

int broker_response_ssh(uint64_t id, const struct broker_ssh_outcome *out, char **ret,
			size_t *ret_len)
{
	_cleanup_json_ struct json_object *o = ok_new(id);
	int r;

	if (!o)
		return -ENOMEM;
	r = add_string(o, "action", out->action);
	if (r >= 0)
		r = add_string(o, "verdict", out->granted ? "granted" : "refused");
	if (r >= 0)
		r = add_string(o, "credential", out->credential);
	if (r >= 0)
		r = add_string(o, "destination", out->destination);
	if (r >= 0)
		r = add_string(o, "reason", out->why);
	if (r < 0)
		return r;
	return finish(o, ret, ret_len);
}

int broker_response_open(uint64_t id, const struct broker_session *s, char **ret, size_t *ret_len)
{
	_cleanup_json_ struct json_object *o = ok_new(id);
	struct json_object *sur;
	int r;

	if (!o)
		return -ENOMEM;
	r = add_string(o, "session", broker_session_id(s));
	sur = json_object_new_object();
	if (r >= 0)
		r = al_json_add(o, "surrogates", sur);
	for (size_t i = 0; r >= 0 && i < broker_session_count(s); i++)
		if (broker_session_cred_surrogate(s, i)) /* an SSH key has none */
			r = add_string(sur, broker_session_cred_name(s, i),
				       broker_session_cred_surrogate(s, i));
	if (r < 0)
		return r;
	return finish(o, ret, ret_len);
}

int broker_response_health(uint64_t id, const struct broker *b, uint64_t uptime_sec, char **ret,
			   size_t *ret_len)
{
	_cleanup_json_ struct json_object *o = ok_new(id);
	int r;

	if (!o)
		return -ENOMEM;
	r = add_string(o, "status", "serving");
	if (r >= 0)
		r = al_json_add(o, "protocol", json_object_new_int(BROKER_PROTOCOL_VERSION));
	if (r >= 0)
		r = al_json_add(o, "uptime_s", json_object_new_int64((int64_t)uptime_sec));
	if (r >= 0)
		r = al_json_add(o, "sessions",
				json_object_new_int64((int64_t)broker_session_total(b)));
	if (r >= 0 && broker_vault_file(b))
		r = add_string(o, "vault", broker_vault_file(b));
	if (r >= 0 && broker_vault_file(b))
		r = al_json_add(o, "vault_entries",
				json_object_new_int64((int64_t)broker_vault_entries(b)));
	if (r < 0)
		return r;
	return finish(o, ret, ret_len);
}

/* A list answer must fit the client's JSON limit: at most this many sessions, then "more". */
#define LIST_MAX 100

struct list_state {
	struct json_object *sessions;
	size_t n, more;
};

static int list_one(const struct broker_session_info *i, void *userdata)
{
	struct list_state *st = userdata;
	struct json_object *a = st->sessions, *s, *names;
	int r;

	if (st->n >= LIST_MAX) {
		st->more++;
		return 0;
	}
	st->n++;

	s = json_object_new_object();
	if (!s)
		return -ENOMEM;
	r = json_object_array_add(a, s) < 0 ? -ENOMEM : 0;
	if (r < 0) {
		(void)json_object_put(s);
		return r;
	}
	r = add_string(s, "tag", i->tag);
	if (r >= 0)
		r = add_string(s, "policy_hash", i->policy_hash);
	if (r >= 0)
		r = add_string(s, "label", i->label);
	if (r >= 0)
		r = al_json_add(s, "uid", json_object_new_int64(i->uid));
	if (r >= 0)
		r = al_json_add(s, "pid", json_object_new_int64(i->pid));
	if (r >= 0)
		r = al_json_add(s, "created", json_object_new_int64((int64_t)i->created));
	if (r >= 0)
		r = al_json_add(s, "expires", json_object_new_int64((int64_t)i->expires));
	names = json_object_new_array();
	if (r >= 0)
		r = al_json_add(s, "credentials", names);
	for (size_t k = 0; r >= 0 && k < i->n_credentials; k++)
		r = json_object_array_add(names, json_object_new_string(i->names[k])) < 0 ? -ENOMEM
											  : 0;
	return r;
}

int broker_response_list(uint64_t id, const struct broker *b, const struct broker_peer *peer,
			 char **ret, size_t *ret_len)
{
	_cleanup_json_ struct json_object *o = ok_new(id);
	struct list_state st = {0};
	int r;

	if (!o)
		return -ENOMEM;
	st.sessions = json_object_new_array();
	r = al_json_add(o, "sessions", st.sessions);
	if (r >= 0)
		r = broker_list(b, peer, list_one, &st);
	if (r >= 0 && st.more > 0)
		r = al_json_add(o, "more", json_object_new_int64((int64_t)st.more));
	if (r < 0)
		return r;
	return finish(o, ret, ret_len);
}

/* ---- the client's side ---- */

static int errno_from_name(const char *name)
{
	for (size_t i = 0; name && i < ELEMENTSOF(errno_names); i++)
		if (streq(name, errno_names[i].name))
			return -errno_names[i].code;
	return -EIO;
}

static int parse_surrogates(struct json_object *o, struct broker_response *r, struct al_error *err)
{
	struct json_object *sur;
	size_t n, i = 0;

	if (!json_object_object_get_ex(o, "surrogates", &sur))
		return 0;
	if (!json_object_is_type(sur, json_type_object))
		return al_error_set(err, -EBADMSG, "surrogates: not an object");
	n = (size_t)json_object_object_length(sur);
	r->names = calloc(n ? n : 1, sizeof(*r->names));
	r->surrogates = calloc(n ? n : 1, sizeof(*r->surrogates));
	if (!r->names || !r->surrogates)
		return -ENOMEM;
	json_object_object_foreach(sur, key, val)
	{
		if (!json_object_is_type(val, json_type_string))
			return al_error_set(err, -EBADMSG, "surrogates.%.64s: not a string", key);
		r->names[i] = key;
		r->surrogates[i++] = json_object_get_string(val);
	}
	r->n_surrogates = i;
	return 0;
}

int broker_response_parse(const char *json, size_t len, struct broker_response *ret,
			  struct al_error *err)
{
	_cleanup_json_ struct json_object *o = NULL;
	struct broker_response r = {0};
	struct json_object *v;
	const char *s;
	int k;

	k = al_json_parse(json, len, JSON_DEPTH_MAX, &o, err);
	if (k < 0)
		return k;
	if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, "ok", &v) ||
	    !json_object_is_type(v, json_type_boolean))
		return al_error_set(err, -EBADMSG, "the broker's answer has no \"ok\"");
	r.ok = json_object_get_boolean(v);
	(void)get_uint(o, "id", UINT64_MAX >> 11, &r.id, NULL);
	if (!r.ok) {
		k = get_string(o, "errno", 32, NULL, &s, NULL);
		r.code = errno_from_name(k >= 0 ? s : NULL);
		if (json_object_object_get_ex(o, "error", &v) &&
		    json_object_is_type(v, json_type_string))
			r.error = json_object_get_string(v);
	}
	if (json_object_object_get_ex(o, "session", &v) && json_object_is_type(v, json_type_string))
		r.session = json_object_get_string(v);
	k = parse_surrogates(o, &r, err);
	if (k < 0) {
		free(r.names);
		free(r.surrogates);
		return k;
	}
	r.root = TAKE_PTR(o);
	*ret = r;
	return 0;
}

/* The string key of r's JSON into buf, or "" without one. */
static void copy_field(const struct broker_response *r, const char *key, char *buf, size_t size)
{
	struct json_object *v;

	buf[0] = '\0';
	if (json_object_object_get_ex(r->root, key, &v) && json_object_is_type(v, json_type_string))
		(void)snprintf(buf, size, "%s", json_object_get_string(v));
}

void broker_response_ssh_verdict(const struct broker_response *r, struct broker_ssh_verdict *v)
{
	char verdict[16];

	copy_field(r, "action", v->action, sizeof(v->action));
	copy_field(r, "credential", v->credential, sizeof(v->credential));
	copy_field(r, "destination", v->destination, sizeof(v->destination));
	copy_field(r, "reason", v->reason, sizeof(v->reason));
	copy_field(r, "verdict", verdict, sizeof(verdict));
	v->granted = streq(verdict, "granted");
}

void broker_response_done(struct broker_response *r)
{
	free(r->names);
	free(r->surrogates);
	if (r->root)
		(void)json_object_put(r->root);
	*r = (struct broker_response){0};
}

int broker_response_to_string(const struct broker_response *r, char **ret)
{
	const char *s;
	char *d;

	s = json_object_to_json_string_ext(r->root, JSON_C_TO_STRING_PRETTY |
							JSON_C_TO_STRING_SPACED |
							JSON_C_TO_STRING_NOSLASHESCAPE);
	if (!s)
		return -ENOMEM;
	d = strdup(s);
	if (!d)
		return -ENOMEM;
	*ret = d;
	return 0;
}
