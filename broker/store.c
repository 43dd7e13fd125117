#define LOG_MODULE "broker"

/* `airlock secret`: put, list, remove and bind the vault's secrets. A value goes from its fd
 * into sodium_malloc'd memory and from there into the vault, and nowhere else: nothing here
 * prints or returns one. Every change is broker_vault_update(): read, change and save under the
 * vault's lock. */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "broker/broker-internal.h"
#include "broker/broker.h"
#include "common/fd-util.h"
#include "common/log.h"
#include "common/path-util.h"

#define NAME_LEN_MAX 128

/* ---- checks ---- */

#define NAME_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"

/* Names never appear in the message: a mistyped command line may have put a value there. */
static int check_name(const char *name, struct al_error *err)
{
	size_t len = strlen(name);

	if (len == 0 || len > NAME_LEN_MAX || strspn(name, NAME_CHARS) != len)
		return al_error_set(err, -EINVAL,
				    "invalid secret name: use 1 to %d letters, digits, '_', '.' "
				    "and '-'",
				    NAME_LEN_MAX);
	return 0;
}

struct host_list {
	char **hosts;
	size_t n;
};

static void host_list_done(struct host_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->hosts[i]);
	free(l->hosts);
	*l = (struct host_list){0};
}

/* Adds item (its len bytes) to l, lower-cased, once. */
static int host_list_add(struct host_list *l, const char *item, size_t len, struct al_error *err)
{
	_cleanup_free_ char *raw = strndup(item, len), *s = NULL;
	char **grown;
	int r;

	if (!raw)
		return -ENOMEM;
	r = policy_host_pattern_normalize(raw, &s);
	if (r == -EINVAL)
		return al_error_set(err, -EINVAL,
				    "host \"%s\" is not a valid host name or \"*.suffix\" pattern",
				    raw);
	if (r < 0)
		return r;
	for (size_t i = 0; i < l->n; i++)
		if (streq(l->hosts[i], s))
			return 0;
	if (l->n >= BROKER_VAULT_HOSTS_MAX)
		return al_error_set(err, -E2BIG, "a secret is bound to at most %d hosts",
				    BROKER_VAULT_HOSTS_MAX);
	grown = reallocarray(l->hosts, l->n + 1, sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	l->hosts = grown;
	l->hosts[l->n++] = TAKE_PTR(s);
	return 0;
}

/* "h1,h2": host names or "*.suffix" patterns, lower-cased, each once. */
static int parse_hosts(const char *list, struct host_list *ret, struct al_error *err)
{
	struct host_list l = {0};
	const char *p = list;
	size_t i = 1, len;
	int r = 0;

	for (;; i++) {
		len = strcspn(p, ",");
		if (len == 0) {
			r = al_error_set(err, -EINVAL, "hosts \"%s\": item %zu is empty", list, i);
			break;
		}
		r = host_list_add(&l, p, len, err);
		if (r < 0 || p[len] == '\0')
			break;
		p += len + 1;
	}
	if (r < 0) {
		host_list_done(&l);
		return r;
	}
	*ret = l;
	return 0;
}

/* ---- the value ---- */

/* Reads name's value from fd: at most BROKER_SECRET_MAX bytes after one trailing newline is
 * dropped, and not empty. A terminal is refused: a value typed there would show on the
 * screen. */
static int read_value(int fd, const char *name, struct broker_secret **ret, struct al_error *err)
{
	_cleanup_(broker_secret_freep) struct broker_secret *s = NULL;
	const size_t max = BROKER_SECRET_MAX + 1; /* + 1: its newline */
	size_t len;
	int r;

	if (isatty(fd))
		return al_error_set(err, -EINVAL,
				    "secret %s: the value would be read from a terminal, where it "
				    "would show: pipe it in or use --from-file",
				    name);
	r = broker_secret_read_fd(fd, max, &s);
	if (r == -EFBIG)
		len = max + 1;
	else if (r < 0)
		return al_error_set_errno(err, r, "secret %s: cannot read the value", name);
	else
		len = s->len;
	if (len > 0 && len <= max && s->data[len - 1] == '\n')
		len--;
	if (len > BROKER_SECRET_MAX)
		return al_error_set(err, -EFBIG, "secret %s: the value is larger than %d bytes",
				    name, BROKER_SECRET_MAX);
	if (len == 0)
		return al_error_set(err, -EINVAL, "secret %s: the value is empty", name);
	s->data[len] = '\0';
	s->len = len; /* the dropped newline is no secret */
	*ret = TAKE_PTR(s);
	return 0;
}

/* ---- the vault and its key ---- */

/* Creates the folders above path that are missing, mode 0700. */
static int make_folders(const char *path, struct al_error *err)
{
	_cleanup_free_ char *dir = strdup(path);
	char *slash;
	int r;

	if (!dir)
		return -ENOMEM;
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	r = al_mkdir_p(dir, 0700);
	if (r < 0)
		return al_error_set_errno(err, r, "vault %s: cannot create folder %s", path, dir);
	return 0;
}

/* The vault's path and key. A missing vault is an error unless create is true; then its folder
 * is made, and a passphrase typed on a terminal is asked twice. */
static int vault_setup(const struct broker_vault_options *o, bool create, char **ret_path,
		       struct broker_key **ret_key, struct al_error *err)
{
	_cleanup_(broker_key_freep) struct broker_key *key = NULL;
	_cleanup_free_ char *path = NULL;
	bool exists = true;
	struct stat st;
	int r;

	r = broker_vault_path(o->vault, &path, err);
	if (r < 0)
		return r;
	if (stat(path, &st) < 0) {
		if (errno != ENOENT)
			return al_error_set_errno(err, -errno, "vault %s", path);
		if (!create)
			return al_error_set(
			    err, -ENOENT, "there is no vault at %s (airlock secret put makes one)",
			    path);
		exists = false;
	} else if (!S_ISREG(st.st_mode)) {
		return al_error_set(err, -EINVAL, "vault %s is not a regular file", path);
	}
	r = broker_key_acquire(o->key_file, true, !exists, &key, err);
	if (r < 0) {
		al_error_prefix(err, "vault %s", path);
		return r;
	}
	if (!exists) {
		r = make_folders(path, err);
		if (r < 0)
			return r;
	}
	*ret_path = TAKE_PTR(path);
	*ret_key = TAKE_PTR(key);
	return 0;
}

static uint64_t now(void)
{
	time_t t = time(NULL);

	return t > 0 ? (uint64_t)t : 0;
}

/* ---- the commands ---- */

struct change {
	const char *path, *name;
	const struct broker_secret *value;
	const struct host_list *hosts;
};

static int no_such_secret(const struct change *c, struct al_error *err)
{
	return al_error_set(err, -ENOENT, "vault %s has no secret \"%s\"", c->path, c->name);
}

static int change_put(struct broker_vault *v, void *userdata, struct al_error *err)
{
	const struct change *c = userdata;
	int r;

	r = broker_vault_put(v, c->name, c->value->data, c->value->len, now());
	if (r == -ENOSPC)
		return al_error_set(err, r, "vault %s is full (%d secrets)", c->path,
				    BROKER_VAULT_ENTRIES_MAX);
	if (r < 0)
		return al_error_set_errno(err, r, "vault %s: cannot store secret %s", c->path,
					  c->name);
	return 0;
}

static int change_remove(struct broker_vault *v, void *userdata, struct al_error *err)
{
	const struct change *c = userdata;
	int r;

	r = broker_vault_remove(v, c->name);
	return r == -ENOENT ? no_such_secret(c, err) : r;
}

static int change_bind(struct broker_vault *v, void *userdata, struct al_error *err)
{
	const struct change *c = userdata;
	int r;

	r = broker_vault_bind(v, c->name, c->hosts->hosts, c->hosts->n, now());
	if (r == -ENOENT)
		return no_such_secret(c, err);
	if (r < 0)
		return al_error_set_errno(err, r, "vault %s: cannot bind secret %s", c->path,
					  c->name);
	return 0;
}

static int store(const struct broker_vault_options *o, const char *name,
		 const struct broker_secret *value, struct al_error *err)
{
	_cleanup_(broker_key_freep) struct broker_key *key = NULL;
	_cleanup_free_ char *path = NULL;
	int r;

	r = vault_setup(o, true, &path, &key, err);
	if (r < 0)
		return r;
	return broker_vault_update(path, &key->k, change_put,
				   &(struct change){.path = path, .name = name, .value = value},
				   err);
}

/* Whether value is an SSH private key (a key file's text, or the form the vault keeps one in). */
static bool looks_like_ssh_key(const struct broker_secret *value)
{
	return broker_ssh_key_is_stored(value) ||
	       memmem(value->data, value->len, "-----BEGIN OPENSSH PRIVATE KEY-----", 35);
}

int broker_secret_put(const struct broker_vault_options *o, const char *name, int fd,
		      struct al_error *err)
{
	_cleanup_(broker_secret_freep) struct broker_secret *value = NULL;
	int r;

	if (sodium_init() < 0)
		return al_error_set(err, -EIO, "Failed to initialize libsodium");
	r = check_name(name, err);
	if (r >= 0)
		r = read_value(fd, name, &value, err);
	if (r < 0)
		return r;
	/* A key stored as a plain secret would be handed out as one (a surrogate swapped in
	 * traffic, an exposed value): it goes in as an SSH key, which only signs. */
	if (looks_like_ssh_key(value))
		return al_error_set(err, -EINVAL,
				    "secret %s: the value is an SSH private key: store it with "
				    "airlock secret put --ssh-key",
				    name);
	return store(o, name, value, err);
}

int broker_secret_put_ssh_key(const struct broker_vault_options *o, const char *name, int fd,
			      const char *passphrase_file, FILE *out, struct al_error *err)
{
	_cleanup_(broker_secret_freep) struct broker_secret *text = NULL, *pass = NULL,
							    *value = NULL;
	struct al_error why = {0};
	struct broker_ssh_key k;
	int r;

	if (sodium_init() < 0)
		return al_error_set(err, -EIO, "Failed to initialize libsodium");
	r = check_name(name, err);
	if (r >= 0)
		r = read_value(fd, name, &text, err);
	if (r < 0)
		return r;
	if (broker_ssh_key_is_encrypted(text->data, text->len)) {
		r = broker_ssh_passphrase(passphrase_file, name, &pass, err);
		if (r < 0)
			return r;
	}
	r = broker_ssh_key_import(text->data, text->len, pass, &k, &value, &why);
	if (r < 0)
		return al_error_set(err, r, "secret %s: %s", name, why.msg);
	r = store(o, name, value, err);
	if (r < 0)
		return r;
	fprintf(out, "%s %s %s\n", name, k.type, k.fingerprint);
	return fflush(out) == 0 ? 0 : -errno;
}

int broker_secret_remove(const struct broker_vault_options *o, const char *name,
			 struct al_error *err)
{
	_cleanup_(broker_key_freep) struct broker_key *key = NULL;
	_cleanup_free_ char *path = NULL;
	int r;

	r = check_name(name, err);
	if (r >= 0)
		r = vault_setup(o, false, &path, &key, err);
	if (r < 0)
		return r;
	return broker_vault_update(path, &key->k, change_remove,
				   &(struct change){.path = path, .name = name}, err);
}

int broker_secret_bind(const struct broker_vault_options *o, const char *name, const char *hosts,
		       struct al_error *err)
{
	_cleanup_(broker_key_freep) struct broker_key *key = NULL;
	_cleanup_free_ char *path = NULL;
	struct host_list l = {0};
	int r;

	r = check_name(name, err);
	if (r >= 0)
		r = parse_hosts(hosts, &l, err);
	if (r >= 0)
		r = vault_setup(o, false, &path, &key, err);
	if (r >= 0)
		r = broker_vault_update(path, &key->k, change_bind,
					&(struct change){.path = path, .name = name, .hosts = &l},
					err);
	host_list_done(&l);
	return r;
}

/* ---- listing ---- */

/* ISO 8601, UTC. */
static void format_time(uint64_t t, char buf[static 32])
{
	time_t tt = t > (uint64_t)INT64_MAX ? INT64_MAX : (time_t)t;
	struct tm tm;

	if (!gmtime_r(&tt, &tm) || strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		(void)snprintf(buf, 32, "@%llu", (unsigned long long)t);
}

/* A JSON string. Names and hosts are plain already; this keeps the output JSON whatever they
 * hold. */
static void print_json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

static void print_json_entry(FILE *out, const struct broker_vault_entry *e, bool last)
{
	char created[32], updated[32];
	struct broker_ssh_key k;

	format_time(e->created, created);
	format_time(e->updated, updated);
	fputs("  {\"name\": ", out);
	print_json_string(out, e->name);
	fputs(", \"hosts\": [", out);
	for (size_t h = 0; h < e->n_hosts; h++) {
		if (h > 0)
			fputs(", ", out);
		print_json_string(out, e->hosts[h]);
	}
	fprintf(out, "], \"created\": \"%s\", \"updated\": \"%s\"", created, updated);
	if (broker_ssh_key_parse(e->value, &k, NULL) >= 0) {
		fprintf(out,
			", \"ssh_key\": {\"type\": \"%s\", \"fingerprint\": \"%s\", \"comment\": ",
			k.type, k.fingerprint);
		print_json_string(out, k.comment);
		fputc('}', out);
	}
	fprintf(out, "}%s\n", last ? "" : ",");
}

/* The comma-separated hosts of e, or "-" (NULL without memory). */
static char *join_hosts(const struct broker_vault_entry *e)
{
	size_t len = 1;
	char *s, *p;

	if (e->n_hosts == 0)
		return strdup("-");
	for (size_t h = 0; h < e->n_hosts; h++)
		len += strlen(e->hosts[h]) + 1;
	s = p = malloc(len);
	if (!s)
		return NULL;
	for (size_t h = 0; h < e->n_hosts; h++) {
		if (h > 0)
			*p++ = ',';
		p = stpcpy(p, e->hosts[h]);
	}
	return s;
}

/* One line per secret: name, hosts, created, updated, in aligned columns, and for an SSH key its
 * type and fingerprint (no field holds a space, so that scripts can split them). */
static int print_text(FILE *out, const struct broker_vault *v)
{
	size_t n = broker_vault_count(v), name_width = 0, hosts_width = 0;
	_cleanup_free_ char **hosts = calloc(n ? n : 1, sizeof(*hosts));
	char created[32], updated[32];
	int r = 0;

	if (!hosts)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct broker_vault_entry *e = broker_vault_entry(v, i);

		hosts[i] = join_hosts(e);
		if (!hosts[i]) {
			r = -ENOMEM;
			break;
		}
		name_width = MAX(name_width, strlen(e->name));
		hosts_width = MAX(hosts_width, strlen(hosts[i]));
	}
	for (size_t i = 0; i < n && r >= 0; i++) {
		const struct broker_vault_entry *e = broker_vault_entry(v, i);

		struct broker_ssh_key k;

		format_time(e->created, created);
		format_time(e->updated, updated);
		fprintf(out, "%-*s  %-*s  %s  %s", (int)name_width, e->name, (int)hosts_width,
			hosts[i], created, updated);
		if (broker_ssh_key_parse(e->value, &k, NULL) >= 0)
			fprintf(out, "  %s  %s", k.type, k.fingerprint);
		fputc('\n', out);
	}
	for (size_t i = 0; i < n; i++)
		free(hosts[i]);
	return r;
}

int broker_secret_list(const struct broker_vault_options *o, bool json, FILE *out,
		       struct al_error *err)
{
	_cleanup_(broker_vault_freep) struct broker_vault *v = NULL;
	_cleanup_(broker_key_freep) struct broker_key *key = NULL;
	_cleanup_free_ char *path = NULL;
	size_t n;
	int r;

	r = vault_setup(o, false, &path, &key, err);
	if (r < 0)
		return r;
	/* No lock: a save replaces the file whole, so a reader sees the old one or the new. */
	r = broker_vault_open(path, &key->k, false, &v, err);
	if (r < 0)
		return r;
	n = broker_vault_count(v);
	if (json) {
		fputs(n == 0 ? "[]\n" : "[\n", out);
		for (size_t i = 0; i < n; i++)
			print_json_entry(out, broker_vault_entry(v, i), i + 1 == n);
		if (n > 0)
			fputs("]\n", out);
	} else {
		r = print_text(out, v);
		if (r < 0)
			return r;
	}
	r = fflush(out) != 0 ? -errno : ferror(out) ? -EIO : 0;
	if (r < 0)
		return al_error_set_errno(err, r, "cannot write the list of secrets");
	return 0;
}
