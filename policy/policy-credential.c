/* credentials[]: where each secret comes from (source), how the sandbox gets it (injection), and
 * the hosts it may be sent to. Names, injected variables and injected files are unique, and an
 * injected variable is not also set in env (which is parsed before). */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <json-c/json.h>

#include "policy/policy-internal.h"

static int host_item(const struct policy_where *w, const char *s, char **ret, struct al_error *err)
{
	return policy_normalize_host_pattern(w, s, NULL, ret, err);
}

/* A free-form name of what is, for the broker or a server, a key or a role: not empty, at most
 * max bytes, no control character. what names it in messages ("key", "name"). */
static int parse_printable(const struct policy_where *w, struct json_object *v, size_t max,
			   const char *what, char **ret, struct al_error *err)
{
	const char *s;
	int r;

	r = policy_json_string(w, v, max, &s, err);
	if (r < 0)
		return r;
	if (s[0] == '\0')
		return policy_error(err, -EINVAL, w, "the %s is empty", what);
	for (const char *c = s; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			return policy_error(err, -EINVAL, w, "%s contains a control character",
					    QUOTE(s));
	return policy_strdup(s, ret);
}

/* A vault or keyring key: free-form, as the broker defines it, but printable. */
static int parse_key(const struct policy_where *w, struct json_object *v, char **ret,
		     struct al_error *err)
{
	return parse_printable(w, v, POLICY_STRING_MAX, "key", ret, err);
}

static int parse_command(const struct policy_where *w, struct json_object *v,
			 struct policy_strv *ret, struct al_error *err)
{
	size_t n;
	int r;

	r = policy_json_array(w, v, &n, err);
	if (r < 0)
		return r;
	if (n == 0)
		return policy_error(err, -EINVAL, w, "the command is empty");
	for (size_t i = 0; i < n; i++) {
		const struct policy_where iw = POLICY_WHERE_INDEX(w, i);
		const char *s;
		char *d = NULL;

		r = policy_json_string(&iw, json_object_array_get_idx(v, i), POLICY_STRING_MAX, &s,
				       err);
		if (r < 0)
			return r;
		if (i == 0)
			r = policy_normalize_path(
			    &iw, s, POLICY_PATH_ABSOLUTE | POLICY_PATH_NOT_ROOT, &d, err);
		else
			r = policy_strdup(s, &d);
		if (r < 0)
			return r;
		r = policy_strv_push(ret, d);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The one field of a source besides its type, at w. */
static int parse_source_value(struct policy_credential *c, const struct policy_where *w,
			      struct json_object *v, struct al_error *err)
{
	const char *s;
	int r;

	switch (c->source) {
	case POLICY_CRED_SOURCE_VAULT:
	case POLICY_CRED_SOURCE_KEYRING:
		return parse_key(w, v, &c->source_key, err);
	case POLICY_CRED_SOURCE_ENV:
		r = policy_json_string(w, v, POLICY_STRING_MAX, &s, err);
		if (r < 0)
			return r;
		if (!policy_env_name_is_valid(s))
			return policy_error(err, -EINVAL, w, "%s is not a valid variable name",
					    QUOTE(s));
		return policy_strdup(s, &c->source_var);
	case POLICY_CRED_SOURCE_FILE:
		r = policy_json_string(w, v, POLICY_STRING_MAX, &s, err);
		if (r < 0)
			return r;
		return policy_normalize_path(w, s, POLICY_PATH_ABSOLUTE | POLICY_PATH_NOT_ROOT,
					     &c->source_path, err);
	case POLICY_CRED_SOURCE_COMMAND:
		return parse_command(w, v, &c->source_argv, err);
	}
	return -EINVAL;
}

static int parse_source(struct policy_credential *c, const struct policy_where *w,
			struct json_object *o, struct al_error *err)
{
	static const struct {
		enum policy_cred_source type;
		const char *field; /* the one field besides "type" */
		bool required;
	} types[] = {
	    {POLICY_CRED_SOURCE_VAULT, "key", false},
	    {POLICY_CRED_SOURCE_ENV, "var", true},
	    {POLICY_CRED_SOURCE_FILE, "path", true},
	    {POLICY_CRED_SOURCE_COMMAND, "command", true},
	    {POLICY_CRED_SOURCE_KEYRING, "key", true},
	};
	char what[64];
	struct json_object *f;
	const char *s;
	size_t t;
	int r;

	r = policy_json_object(w, o, err);
	if (r < 0)
		return r;
	r = policy_json_required_string(w, o, "type", &s, err);
	if (r < 0)
		return r;
	for (t = 0; t < ELEMENTSOF(types); t++)
		if (streq(s, policy_cred_source_to_string(types[t].type)))
			break;
	if (t == ELEMENTSOF(types))
		return policy_error(err, -EINVAL, POLICY_AT(w, "type"),
				    "%s is not a credential source (vault, env, file, command or "
				    "keyring)",
				    QUOTE(s));
	c->source = types[t].type;
	(void)snprintf(what, sizeof(what), "for source type \"%s\" ", s);
	r = policy_json_check_fields(
	    w, o, (const struct policy_field[]){{"type"}, {types[t].field}}, 2, what, err);
	if (r < 0)
		return r;

	if (!json_object_object_get_ex(o, types[t].field, &f)) {
		if (types[t].required)
			return policy_json_missing(POLICY_AT(w, types[t].field), err);
		return policy_strdup(c->name, &c->source_key); /* vault: the key is the name */
	}
	return parse_source_value(c, POLICY_AT(w, types[t].field), f, err);
}

/* An HTTP field name (RFC 9110 token), and not one that frames the message or the connection:
 * the proxy must stay the only one to set those. */
static int check_header_name(const struct policy_where *w, const char *s, struct al_error *err)
{
	static const char *const framing[] = {
	    "connection", "content-length",    "host",	  "keep-alive", "proxy-connection", "te",
	    "trailer",	  "transfer-encoding", "upgrade",
	};
	size_t n = strspn(s, "!#$%&'*+-.^_`|~0123456789"
			     "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz");

	if (n == 0 || s[n] != '\0' || n > 256)
		return policy_error(err, -EINVAL, w, "%s is not a valid HTTP header name",
				    QUOTE(s));
	for (size_t i = 0; i < ELEMENTSOF(framing); i++)
		if (strcasecmp(s, framing[i]) == 0)
			return policy_error(err, -EINVAL, w,
					    "%s is set by the proxy and cannot carry a credential",
					    QUOTE(s));
	return 0;
}

static int check_header_format(const struct policy_where *w, const char *s, struct al_error *err)
{
	const char *first = strstr(s, "{}");

	for (const char *c = s; *c; c++)
		if (!((*c >= 0x20 && *c < 0x7f) || *c == '\t'))
			return policy_error(
			    err, -EINVAL, w,
			    "%s has a character not allowed in an HTTP header value", QUOTE(s));
	if (!first || strstr(first + 2, "{}"))
		return policy_error(err, -EINVAL, w,
				    "%s must contain \"{}\" (where the secret goes) exactly once",
				    QUOTE(s));
	return 0;
}

static int parse_injection_env_var(struct policy *p, struct policy_credential *c,
				   const struct policy_where *w, const char *s,
				   struct al_error *err)
{
	bool found;
	int r;

	r = policy_check_env_name(w, s, err);
	if (r < 0)
		return r;
	if (policy_credential_by_var(p, s))
		return policy_error(err, -EINVAL, w, "%s is already used by another credential",
				    QUOTE(s));
	(void)policy_env_find(p, s, &found);
	if (found)
		return policy_error(err, -EINVAL, w, "%s is also set in env", QUOTE(s));
	return policy_strdup(s, &c->var_name);
}

static int parse_injection_file(struct policy *p, size_t idx, const struct policy_where *w,
				const char *s, struct al_error *err)
{
	struct policy_credential *c = &p->credentials[idx];
	int r;

	r = policy_normalize_path(w, s, POLICY_PATH_SANDBOX, &c->path, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < idx; i++)
		if (p->credentials[i].injection == POLICY_INJECTION_FILE &&
		    streq(p->credentials[i].path, c->path))
			return policy_error(err, -EINVAL, w,
					    "%s is already the file of credentials[%zu]", QUOTE(s),
					    i);
	return 0;
}

/* A sidecar injection at w (the object o), whose header is already read. */
static int parse_injection_sidecar(struct policy_credential *c, const struct policy_where *w,
				   struct json_object *o, const char *header, struct al_error *err)
{
	const char *format = POLICY_DEFAULT_SIDECAR_FORMAT;
	struct json_object *f;
	int r;

	r = check_header_name(POLICY_AT(w, "header"), header, err);
	if (r < 0)
		return r;
	if (json_object_object_get_ex(o, "format", &f)) {
		r = policy_json_string(POLICY_AT(w, "format"), f, POLICY_STRING_MAX, &format, err);
		if (r < 0)
			return r;
		r = check_header_format(POLICY_AT(w, "format"), format, err);
		if (r < 0)
			return r;
	}
	r = policy_strdup(header, &c->header);
	if (r < 0)
		return r;
	return policy_strdup(format, &c->format);
}

static int parse_injection(struct policy *p, size_t idx, const struct policy_where *w,
			   struct json_object *o, struct al_error *err)
{
	static const struct policy_field env_var_fields[] = {{"type"}, {"var_name"}};
	static const struct policy_field file_fields[] = {{"type"}, {"path"}};
	static const struct policy_field sidecar_fields[] = {{"type"}, {"header"}, {"format"}};
	struct policy_credential *c = &p->credentials[idx];
	const struct policy_field *fields;
	char what[64];
	const char *s;
	int r;

	r = policy_json_object(w, o, err);
	if (r < 0)
		return r;
	r = policy_json_required_string(w, o, "type", &s, err);
	if (r < 0)
		return r;
	if (streq(s, "env_var")) {
		c->injection = POLICY_INJECTION_ENV_VAR;
		fields = env_var_fields;
	} else if (streq(s, "file")) {
		c->injection = POLICY_INJECTION_FILE;
		fields = file_fields;
	} else if (streq(s, "sidecar")) {
		c->injection = POLICY_INJECTION_SIDECAR;
		fields = sidecar_fields;
	} else if (streq(s, "ssh_agent")) {
		/* Nothing to say: the key is served by the agent at a path of airlock's. */
		c->injection = POLICY_INJECTION_SSH_AGENT;
		return policy_json_check_fields(w, o, env_var_fields, 1,
						"for injection type \"ssh_agent\" ", err);
	} else {
		return policy_error(
		    err, -EINVAL, POLICY_AT(w, "type"),
		    "%s is not an injection type (env_var, file, sidecar or ssh_agent)", QUOTE(s));
	}
	(void)snprintf(what, sizeof(what), "for injection type \"%s\" ", s);
	r = policy_json_check_fields(w, o, fields, c->injection == POLICY_INJECTION_SIDECAR ? 3 : 2,
				     what, err);
	if (r < 0)
		return r;

	/* fields[1] is the required one. */
	r = policy_json_required_string(w, o, fields[1].name, &s, err);
	if (r < 0)
		return r;
	switch (c->injection) {
	case POLICY_INJECTION_ENV_VAR:
		return parse_injection_env_var(p, c, POLICY_AT(w, "var_name"), s, err);
	case POLICY_INJECTION_FILE:
		return parse_injection_file(p, idx, POLICY_AT(w, "path"), s, err);
	case POLICY_INJECTION_SIDECAR:
		return parse_injection_sidecar(c, w, o, s, err);
	case POLICY_INJECTION_SSH_AGENT:
		break;
	}
	return -EINVAL;
}

/* The name of credentials[idx], unique among the credentials before it. */
static int parse_name(struct policy *p, size_t idx, const struct policy_where *w,
		      struct json_object *v, struct al_error *err)
{
	const char *s;
	int r;

	r = policy_json_string(w, v, POLICY_STRING_MAX, &s, err);
	if (r < 0)
		return r;
	if (!policy_is_name(s, POLICY_NAME_MAX))
		return policy_error(err, -EINVAL, w,
				    "%s is not a valid credential name ([A-Za-z0-9_.-]{1,%d})",
				    QUOTE(s), POLICY_NAME_MAX);
	for (size_t i = 0; i < idx; i++)
		if (streq(p->credentials[i].name, s))
			return policy_error(err, -EINVAL, w,
					    "%s is already the name of credentials[%zu]", QUOTE(s),
					    i);
	return policy_strdup(s, &p->credentials[idx].name);
}

/* A region or service of an AWS scope: what SigV4's credential scope may name. */
static int scope_item(const struct policy_where *w, const char *s, char **ret, struct al_error *err)
{
	size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-");

	if (n == 0 || s[n] != '\0' || n > 64)
		return policy_error(err, -EINVAL, w,
				    "%s is not an AWS region or service name "
				    "([a-z0-9-]{1,64})",
				    QUOTE(s));
	return policy_strdup(s, ret);
}

/* "aws": {"secret_access_key": NAME, "session_token": NAME?, "regions": [...]?,
 * "services": [...]?} makes c an AWS access key id; the names are checked once every
 * credential is known (link_aws()). */
static int parse_aws(struct policy_credential *c, const struct policy_where *w,
		     struct json_object *o, struct al_error *err)
{
	static const struct policy_field fields[] = {
	    {"secret_access_key"},
	    {"session_token"},
	    {"regions"},
	    {"services"},
	};
	struct json_object *f;
	const char *s;
	int r;

	r = policy_json_checked_object(w, o, fields, ELEMENTSOF(fields), err);
	if (r < 0)
		return r;
	c->kind = POLICY_CRED_AWS_KEY_ID;
	r = policy_json_required_string(w, o, "secret_access_key", &s, err);
	if (r < 0)
		return r;
	r = policy_strdup(s, &c->aws_secret);
	if (r < 0)
		return r;
	if (json_object_object_get_ex(o, "session_token", &f)) {
		r = policy_json_string(POLICY_AT(w, "session_token"), f, POLICY_STRING_MAX, &s,
				       err);
		if (r < 0)
			return r;
		r = policy_strdup(s, &c->aws_token);
		if (r < 0)
			return r;
	}
	if (json_object_object_get_ex(o, "regions", &f)) {
		r = policy_json_strv(POLICY_AT(w, "regions"), f, scope_item, &c->aws_regions, err);
		if (r < 0)
			return r;
	}
	if (json_object_object_get_ex(o, "services", &f)) {
		r = policy_json_strv(POLICY_AT(w, "services"), f, scope_item, &c->aws_services,
				     err);
		if (r < 0)
			return r;
	}
	if (c->injection == POLICY_INJECTION_SIDECAR || c->expose)
		return policy_error(err, -EINVAL, w,
				    "an AWS access key id is given to the sandbox as a surrogate "
				    "(env_var or file, not exposed)");
	return 0;
}

static bool same_hosts(const struct policy_strv *a, const struct policy_strv *b)
{
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++) {
		size_t j;

		for (j = 0; j < b->n && !streq(a->items[i], b->items[j]); j++)
			;
		if (j == b->n)
			return false;
	}
	return true;
}

/* The credential that key (credentials[k]) names as its secret or token (field), made kind. */
static int link_aws_part(struct policy *p, size_t k, const char *name, const char *field,
			 enum policy_cred_kind kind, const struct policy_where *w,
			 struct al_error *err)
{
	const struct policy_where cw = POLICY_WHERE_INDEX(w, k);
	const struct policy_where *aw = POLICY_AT(POLICY_AT(&cw, "aws"), field);
	struct policy_credential *key = &p->credentials[k];

	for (size_t i = 0; i < p->n_credentials; i++) {
		struct policy_credential *c = &p->credentials[i];

		if (!streq(c->name, name))
			continue;
		if (c->kind != POLICY_CRED_PLAIN)
			return policy_error(err, -EINVAL, aw,
					    "%s is already an AWS access key id, secret or token",
					    QUOTE(name));
		if (c->expose || c->injection == POLICY_INJECTION_SIDECAR)
			return policy_error(
			    err, -EINVAL, aw,
			    "%s is given to the sandbox exposed or as a sidecar: the "
			    "parts of an AWS key are surrogates (env_var or file)",
			    QUOTE(name));
		if (!same_hosts(&c->hosts, &key->hosts))
			return policy_error(
			    err, -EINVAL, aw,
			    "%s is not bound to the same hosts as its access key id", QUOTE(name));
		c->kind = kind;
		c->aws_key = k;
		return 0;
	}
	return policy_error(err, -EINVAL, aw, "%s names no credential", QUOTE(name));
}

/* Links each AWS access key id to its secret access key and session token. */
static int link_aws(struct policy *p, const struct policy_where *w, struct al_error *err)
{
	int r;

	for (size_t k = 0; k < p->n_credentials; k++) {
		const struct policy_credential *key = &p->credentials[k];

		if (key->kind != POLICY_CRED_AWS_KEY_ID)
			continue;
		r = link_aws_part(p, k, key->aws_secret, "secret_access_key",
				  POLICY_CRED_AWS_SECRET, w, err);
		if (r >= 0 && key->aws_token)
			r = link_aws_part(p, k, key->aws_token, "session_token",
					  POLICY_CRED_AWS_TOKEN, w, err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* A destination: "host", "host:port", an address, "[v6]" or "[v6]:port", into "host:port"
 * ("[v6]:port"), port default_port when none is given. */
static int destination(const struct policy_where *w, const char *s, uint16_t default_port,
		       char **ret, struct al_error *err)
{
	_cleanup_free_ char *host = NULL, *norm = NULL;
	const char *colon = strrchr(s, ':'), *port_text = NULL;
	uint16_t port = default_port;
	bool v6 = false;
	int r;

	if (s[0] == '[') {
		const char *end = strchr(s, ']');

		if (!end || (end[1] != '\0' && end[1] != ':'))
			return policy_error(err, -EINVAL, w,
					    "%s is not a destination (host, host:port, "
					    "address or [address]:port)",
					    QUOTE(s));
		host = strndup(s + 1, (size_t)(end - s - 1));
		port_text = end[1] == ':' ? end + 2 : NULL;
		v6 = true;
	} else if (colon && strchr(s, ':') == colon) {
		host = strndup(s, (size_t)(colon - s));
		port_text = colon + 1;
	} else {
		host = strdup(s);
	}
	if (!host)
		return -ENOMEM;
	if (port_text) {
		r = policy_parse_port(w, port_text, &port, err);
		if (r < 0)
			return r;
	}
	/* An address, else a name: a bare IPv6 address has more than one colon. */
	if (v6 || (colon && !port_text) || strspn(host, "0123456789.") == strlen(host))
		r = policy_normalize_ip(w, host, &norm, err);
	else
		r = policy_normalize_host(w, host, &norm, err);
	if (r < 0)
		return r;
	if (asprintf(ret, strchr(norm, ':') ? "[%s]:%u" : "%s:%u", norm, (unsigned)port) < 0) {
		*ret = NULL;
		return -ENOMEM;
	}
	return 0;
}

static int ssh_destination(const struct policy_where *w, const char *s, char **ret,
			   struct al_error *err)
{
	return destination(w, s, 22, ret, err);
}

static int pg_destination(const struct policy_where *w, const char *s, char **ret,
			  struct al_error *err)
{
	return destination(w, s, 5432, ret, err);
}

/* o's required "destinations": at least one, each read by item; what names the credential's
 * kind in the refusal of none. */
static int parse_destinations(const struct policy_where *w, struct json_object *o,
			      policy_item_parse_fn item, const char *what, struct policy_strv *ret,
			      struct al_error *err)
{
	struct json_object *f;
	int r;

	r = policy_json_required(w, o, "destinations", &f, err);
	if (r >= 0)
		r = policy_json_strv(POLICY_AT(w, "destinations"), f, item, ret, err);
	if (r >= 0 && ret->n == 0)
		r = policy_error(err, -EINVAL, POLICY_AT(w, "destinations"),
				 "%s needs at least one destination", what);
	return r;
}

/* A Postgres role or database name: what libpq sends, printable, at most 63 bytes (NAMEDATALEN). */
static int pg_name(const struct policy_where *w, struct json_object *v, char **ret,
		   struct al_error *err)
{
	return parse_printable(w, v, 63, "name", ret, err);
}

/* "postgres": {"user": U, "database": D?, "destinations": [...], "client_auth": A?} makes c a
 * Postgres password (kind POSTGRES): the sandbox gets a surrogate (env_var or file) and logs in
 * with it as U to D (default U) at a destination, where the proxy logs in with the real one. */
static int parse_postgres(struct policy_credential *c, const struct policy_where *w,
			  struct json_object *o, struct al_error *err)
{
	static const struct policy_field fields[] = {
	    {"user"}, {"database"}, {"destinations"}, {"client_auth"}};
	struct json_object *f;
	const char *s;
	int r;

	r = policy_json_checked_object(w, o, fields, ELEMENTSOF(fields), err);
	if (r < 0)
		return r;
	r = policy_json_required(w, o, "user", &f, err);
	if (r >= 0)
		r = pg_name(POLICY_AT(w, "user"), f, &c->pg_user, err);
	if (r >= 0 && json_object_object_get_ex(o, "database", &f))
		r = pg_name(POLICY_AT(w, "database"), f, &c->pg_database, err);
	else if (r >= 0)
		r = policy_strdup(c->pg_user, &c->pg_database);
	if (r >= 0)
		r = parse_destinations(w, o, pg_destination, "a Postgres credential", &c->hosts,
				       err);
	if (r < 0)
		return r;
	c->pg_auth = POLICY_PG_AUTH_SCRAM;
	if (json_object_object_get_ex(o, "client_auth", &f)) {
		r = policy_json_string(POLICY_AT(w, "client_auth"), f, 32, &s, err);
		if (r < 0)
			return r;
		if (streq(s, "md5"))
			c->pg_auth = POLICY_PG_AUTH_MD5;
		else if (streq(s, "password"))
			c->pg_auth = POLICY_PG_AUTH_PASSWORD;
		else if (!streq(s, "scram-sha-256"))
			return policy_error(err, -EINVAL, POLICY_AT(w, "client_auth"),
					    "%s is not scram-sha-256, md5 or password", QUOTE(s));
	}
	c->kind = POLICY_CRED_POSTGRES;
	return 0;
}

/* The proxy ends a login at a destination with one credential: no two share one. */
static int check_pg_destinations(const struct policy *p, size_t idx, const struct policy_where *w,
				 struct al_error *err)
{
	const struct policy_credential *c = &p->credentials[idx];

	for (size_t i = 0; i < idx; i++) {
		const struct policy_credential *o = &p->credentials[i];

		if (o->kind != POLICY_CRED_POSTGRES)
			continue;
		for (size_t k = 0; k < c->hosts.n; k++)
			for (size_t j = 0; j < o->hosts.n; j++)
				if (strcasecmp(c->hosts.items[k], o->hosts.items[j]) == 0)
					return policy_error(
					    err, -EINVAL, POLICY_AT(w, "destinations"),
					    "%s is already a destination of credentials[%zu]",
					    c->hosts.items[k], i);
	}
	return 0;
}

/* "ssh": {"destinations": [...], "commit_signing": bool?} makes c an SSH key (kind SSH_KEY),
 * served to the sandbox only through airlock's agent: a vault source (where `airlock secret put
 * --ssh-key` keeps keys) and injection ssh_agent; it has no hosts and is never exposed. */
static int parse_ssh(struct policy_credential *c, const struct policy_where *w,
		     struct json_object *o, struct al_error *err)
{
	static const struct policy_field fields[] = {{"destinations"}, {"commit_signing"}};
	struct json_object *f;
	int r;

	r = policy_json_checked_object(w, o, fields, ELEMENTSOF(fields), err);
	if (r < 0)
		return r;
	r = parse_destinations(w, o, ssh_destination, "an SSH key", &c->ssh_destinations, err);
	if (r < 0)
		return r;
	if (json_object_object_get_ex(o, "commit_signing", &f)) {
		r = policy_json_bool(POLICY_AT(w, "commit_signing"), f, &c->ssh_commit_signing,
				     err);
		if (r < 0)
			return r;
	}
	c->kind = POLICY_CRED_SSH_KEY;
	return 0;
}

/* An SSH key's other fields, once the credential is read: what the agent alone may serve. */
static int check_ssh(const struct policy_credential *c, const struct policy_where *w,
		     struct al_error *err)
{
	bool ssh = c->kind == POLICY_CRED_SSH_KEY;

	if (ssh != (c->injection == POLICY_INJECTION_SSH_AGENT))
		return policy_error(err, -EINVAL, POLICY_AT(w, ssh ? "injection" : "ssh"),
				    ssh ? "an SSH key's injection is {\"type\": \"ssh_agent\"}"
					: "injection ssh_agent serves an SSH key: the credential "
					  "needs an \"ssh\" object");
	if (!ssh)
		return 0;
	if (c->source != POLICY_CRED_SOURCE_VAULT)
		return policy_error(err, -EINVAL, POLICY_AT(w, "source"),
				    "an SSH key comes from the vault (airlock secret put "
				    "--ssh-key NAME)");
	if (c->hosts.n > 0)
		return policy_error(err, -EINVAL, POLICY_AT(w, "hosts"),
				    "an SSH key has no hosts: it signs for ssh.destinations");
	if (c->expose)
		return policy_error(err, -EINVAL, POLICY_AT(w, "expose"),
				    "an SSH key only signs: it is never exposed");
	return 0;
}

static int parse_credential(struct policy *p, size_t idx, const struct policy_where *w,
			    struct json_object *o, struct al_error *err)
{
	static const struct policy_field fields[] = {
	    {"name"},	{"source"}, {"injection"}, {"hosts"},
	    {"expose"}, {"aws"},    {"ssh"},	   {"postgres"},
	};
	struct policy_credential *c = &p->credentials[idx];
	struct json_object *f;
	int r;

	r = policy_json_checked_object(w, o, fields, ELEMENTSOF(fields), err);
	if (r < 0)
		return r;

	r = policy_json_required(w, o, "name", &f, err);
	if (r < 0)
		return r;
	r = parse_name(p, idx, POLICY_AT(w, "name"), f, err);
	if (r < 0)
		return r;

	r = policy_json_required(w, o, "source", &f, err);
	if (r < 0)
		return r;
	r = parse_source(c, POLICY_AT(w, "source"), f, err);
	if (r < 0)
		return r;

	r = policy_json_required(w, o, "injection", &f, err);
	if (r < 0)
		return r;
	r = parse_injection(p, idx, POLICY_AT(w, "injection"), f, err);
	if (r < 0)
		return r;

	if (json_object_object_get_ex(o, "expose", &f)) {
		r = policy_json_bool(POLICY_AT(w, "expose"), f, &c->expose, err);
		if (r < 0)
			return r;
		if (c->expose && c->injection == POLICY_INJECTION_SIDECAR)
			return policy_error(err, -EINVAL, POLICY_AT(w, "expose"),
					    "a sidecar credential is never given to the sandbox, "
					    "so it cannot be exposed");
	}

	if (json_object_object_get_ex(o, "hosts", &f)) {
		r = policy_json_strv(POLICY_AT(w, "hosts"), f, host_item, &c->hosts, err);
		if (r < 0)
			return r;
	}
	if (json_object_object_get_ex(o, "ssh", &f)) {
		r = parse_ssh(c, POLICY_AT(w, "ssh"), f, err);
		if (r < 0)
			return r;
	}
	if (json_object_object_get_ex(o, "postgres", &f)) {
		const char *clash = c->kind == POLICY_CRED_SSH_KEY ? "an SSH key"
				    : c->hosts.n > 0 ? "hosts (its destinations name them)"
				    : c->expose	     ? "exposed (the proxy logs in with it)"
				    : c->injection == POLICY_INJECTION_SIDECAR	? "a sidecar"
				    : json_object_object_get_ex(o, "aws", NULL) ? "an AWS key"
										: NULL;

		if (clash)
			return policy_error(err, -EINVAL, POLICY_AT(w, "postgres"),
					    "a Postgres credential cannot also be %s", clash);
		r = parse_postgres(c, POLICY_AT(w, "postgres"), f, err);
		if (r < 0)
			return r;
		return check_pg_destinations(p, idx, POLICY_AT(w, "postgres"), err);
	}
	r = check_ssh(c, w, err);
	if (r >= 0 && c->kind == POLICY_CRED_SSH_KEY && json_object_object_get_ex(o, "aws", &f))
		r = policy_error(err, -EINVAL, POLICY_AT(w, "aws"),
				 "a credential is an SSH key or an AWS key, not both");
	if (r < 0 || c->kind == POLICY_CRED_SSH_KEY)
		return r;
	if (c->hosts.n == 0 && !c->expose)
		return policy_error(
		    err, -EINVAL, POLICY_AT(w, "hosts"),
		    "a credential needs at least one host, unless \"expose\" is true");
	if (json_object_object_get_ex(o, "aws", &f))
		return parse_aws(c, POLICY_AT(w, "aws"), f, err);
	return 0;
}

int policy_parse_credentials(struct policy *p, const struct policy_where *w, struct json_object *v,
			     struct al_error *err)
{
	int r;

	r = policy_json_elements(p, w, v, sizeof(*p->credentials), (void **)&p->credentials,
				 &p->n_credentials, parse_credential, err);
	if (r < 0)
		return r;
	return link_aws(p, w, err);
}
