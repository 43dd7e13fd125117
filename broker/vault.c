#define LOG_MODULE "broker"

/* The vault: secrets encrypted at rest in one file (see broker-internal.h for the layout). Keys
 * and values live in sodium_malloc'd memory and are wiped when freed. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "broker/broker-internal.h"
#include "common/fd-util.h"
#include "common/log.h"
#include "common/sort-util.h"

#define MAGIC "ALVAULT"
#define KDF_PASSPHRASE 1
#define KDF_KEY 2
#define SALT_SIZE 16
#define KEYCHECK_SIZE 32
#define NONCE_SIZE crypto_aead_xchacha20poly1305_ietf_NPUBBYTES
#define KEY_SIZE crypto_aead_xchacha20poly1305_ietf_KEYBYTES
#define ABYTES crypto_aead_xchacha20poly1305_ietf_ABYTES
/* magic, version, kdf, opslimit, memlimit, salt, keycheck, nonce, length */
#define HEADER_SIZE (8 + 4 + 4 + 8 + 8 + SALT_SIZE + KEYCHECK_SIZE + NONCE_SIZE + 8)
#define KEYCHECK_TEXT "airlock vault key check"

struct broker_vault {
	uint32_t kdf;
	uint64_t opslimit, memlimit;
	unsigned char salt[SALT_SIZE];
	unsigned char *key; /* sodium_malloc'd KEY_SIZE */
	struct broker_vault_entry *entries;
	size_t n;
};

/* ---- little-endian buffer helpers ---- */

static void put_le(unsigned char *p, uint64_t v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le(const unsigned char *p, size_t n)
{
	uint64_t v = 0;

	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

struct reader {
	const unsigned char *p;
	size_t left;
};

static bool take(struct reader *r, void *out, size_t n)
{
	if (r->left < n)
		return false;
	if (out)
		memcpy(out, r->p, n);
	r->p += n;
	r->left -= n;
	return true;
}

static bool take_le(struct reader *r, size_t n, uint64_t *ret)
{
	unsigned char b[8];

	if (!take(r, b, n))
		return false;
	*ret = get_le(b, n);
	return true;
}

/* A NUL-terminated copy of the next len bytes, refusing an embedded NUL. */
static char *take_string(struct reader *r, size_t len)
{
	char *s;

	if (r->left < len || memchr(r->p, '\0', len))
		return NULL;
	s = strndup((const char *)r->p, len);
	if (s)
		(void)take(r, NULL, len);
	return s;
}

/* ---- entries ---- */

static void entry_done(struct broker_vault_entry *e)
{
	free(e->name);
	broker_secret_free(e->value);
	for (size_t i = 0; i < e->n_hosts; i++)
		free(e->hosts[i]);
	free(e->hosts);
	*e = (struct broker_vault_entry){0};
}

struct broker_vault *broker_vault_free(struct broker_vault *v)
{
	if (!v)
		return NULL;
	for (size_t i = 0; i < v->n; i++)
		entry_done(&v->entries[i]);
	free(v->entries);
	if (v->key)
		sodium_free(v->key);
	free(v);
	return NULL;
}

static int parse_entry(struct reader *r, struct broker_vault_entry *e)
{
	uint64_t name_len, value_len, n_hosts, len;

	if (!take_le(r, 2, &name_len) || name_len == 0)
		return -EBADMSG;
	e->name = take_string(r, name_len);
	if (!e->name || !take_le(r, 4, &value_len) || value_len > BROKER_SECRET_MAX ||
	    r->left < value_len)
		return -EBADMSG;
	e->value = broker_secret_new(value_len);
	if (!e->value)
		return -ENOMEM;
	(void)take(r, e->value->data, value_len);
	if (!take_le(r, 2, &n_hosts) || n_hosts > BROKER_VAULT_HOSTS_MAX)
		return -EBADMSG;
	e->hosts = calloc(n_hosts + 1, sizeof(*e->hosts));
	if (!e->hosts)
		return -ENOMEM;
	for (; e->n_hosts < n_hosts; e->n_hosts++) {
		if (!take_le(r, 2, &len) || len == 0)
			return -EBADMSG;
		e->hosts[e->n_hosts] = take_string(r, len);
		if (!e->hosts[e->n_hosts])
			return -EBADMSG;
	}
	if (!take_le(r, 8, &e->created) || !take_le(r, 8, &e->updated))
		return -EBADMSG;
	return 0;
}

int broker_vault_parse_entries(struct broker_vault *v, const unsigned char *buf, size_t len)
{
	struct reader r = {.p = buf, .left = len};
	uint64_t count;
	int res;

	if (!take_le(&r, 4, &count) || count > BROKER_VAULT_ENTRIES_MAX)
		return -EBADMSG;
	v->entries = calloc(count ? count : 1, sizeof(*v->entries));
	if (!v->entries)
		return -ENOMEM;
	for (; v->n < count; v->n++) {
		res = parse_entry(&r, &v->entries[v->n]);
		if (res < 0) {
			v->n++; /* freed with the rest */
			return res;
		}
		if (v->n > 0 && strcmp(v->entries[v->n - 1].name, v->entries[v->n].name) >= 0) {
			v->n++;
			return -EBADMSG;
		}
	}
	return r.left == 0 ? 0 : -EBADMSG;
}

/* The serialized entries in sodium_malloc'd memory (they hold the values). */
static int serialize_entries(const struct broker_vault *v, unsigned char **ret, size_t *ret_len)
{
	size_t len = 4, off = 0;
	unsigned char *b;

	for (size_t i = 0; i < v->n; i++) {
		const struct broker_vault_entry *e = &v->entries[i];

		len += 2 + strlen(e->name) + 4 + e->value->len + 2 + 16;
		for (size_t h = 0; h < e->n_hosts; h++)
			len += 2 + strlen(e->hosts[h]);
	}
	b = sodium_malloc(len ? len : 1);
	if (!b)
		return -ENOMEM;
	put_le(b + off, v->n, 4), off += 4;
	for (size_t i = 0; i < v->n; i++) {
		const struct broker_vault_entry *e = &v->entries[i];
		size_t l = strlen(e->name);

		put_le(b + off, l, 2), off += 2;
		memcpy(b + off, e->name, l), off += l;
		put_le(b + off, e->value->len, 4), off += 4;
		memcpy(b + off, e->value->data, e->value->len), off += e->value->len;
		put_le(b + off, e->n_hosts, 2), off += 2;
		for (size_t h = 0; h < e->n_hosts; h++) {
			l = strlen(e->hosts[h]);
			put_le(b + off, l, 2), off += 2;
			memcpy(b + off, e->hosts[h], l), off += l;
		}
		put_le(b + off, e->created, 8), off += 8;
		put_le(b + off, e->updated, 8), off += 8;
	}
	*ret = b;
	*ret_len = len;
	return 0;
}

/* ---- keys ---- */

static int derive_key(struct broker_vault *v, const struct broker_vault_key *k)
{
	v->key = sodium_malloc(KEY_SIZE);
	if (!v->key)
		return -ENOMEM;
	if (v->kdf == KDF_KEY) {
		memcpy(v->key, k->key, KEY_SIZE);
		return 0;
	}
	if (crypto_pwhash(v->key, KEY_SIZE, k->passphrase, k->passphrase_len, v->salt, v->opslimit,
			  (size_t)v->memlimit, crypto_pwhash_ALG_ARGON2ID13) != 0)
		return -ENOMEM; /* Argon2id fails only for want of memory */
	return 0;
}

static void keycheck(const struct broker_vault *v, unsigned char out[KEYCHECK_SIZE])
{
	(void)crypto_generichash(out, KEYCHECK_SIZE, (const unsigned char *)KEYCHECK_TEXT,
				 strlen(KEYCHECK_TEXT), v->key, KEY_SIZE);
}

int broker_vault_new(const struct broker_vault_key *k, struct broker_vault **ret)
{
	_cleanup_(broker_vault_freep) struct broker_vault *v = NULL;
	int r;

	if (sodium_init() < 0)
		return -EIO;
	if (!k->key && !k->passphrase)
		return -EINVAL;
	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	v->kdf = k->key ? KDF_KEY : KDF_PASSPHRASE;
	v->opslimit = k->opslimit ?: crypto_pwhash_OPSLIMIT_MODERATE;
	v->memlimit = k->memlimit ?: crypto_pwhash_MEMLIMIT_MODERATE;
	randombytes_buf(v->salt, sizeof(v->salt));
	r = derive_key(v, k);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(v);
	return 0;
}

/* ---- reading ---- */

/* Whether v's key is the one a file with these key parameters needs. */
static bool same_key(const struct broker_vault *v, const struct broker_vault *reuse)
{
	return reuse && reuse->kdf == v->kdf && reuse->opslimit == v->opslimit &&
	       reuse->memlimit == v->memlimit &&
	       sodium_memcmp(reuse->salt, v->salt, SALT_SIZE) == 0;
}

static int decode(const char *path, const unsigned char *buf, size_t size,
		  const struct broker_vault_key *k, const struct broker_vault *reuse,
		  struct broker_vault **ret, struct al_error *err)
{
	_cleanup_(broker_vault_freep) struct broker_vault *v = NULL;
	struct reader r = {.p = buf, .left = size};
	unsigned char magic[8], check[KEYCHECK_SIZE], want[KEYCHECK_SIZE], nonce[NONCE_SIZE];
	unsigned char *plain = NULL;
	unsigned long long plain_len;
	uint64_t version, kdf, length;
	int res;

	if (!take(&r, magic, sizeof(magic)) || memcmp(magic, MAGIC, sizeof(magic)) != 0)
		return al_error_set(err, -EINVAL, "%s is not an airlock vault", path);
	if (!take_le(&r, 4, &version) || !take_le(&r, 4, &kdf))
		return al_error_set(err, -EBADMSG, "vault %s is truncated (%zu bytes)", path, size);
	if (version > BROKER_VAULT_VERSION)
		return al_error_set(err, -EPROTONOSUPPORT,
				    "vault %s has format %llu, newer than this airlock reads (%d)",
				    path, (unsigned long long)version, BROKER_VAULT_VERSION);
	if (version == 0 || (kdf != KDF_PASSPHRASE && kdf != KDF_KEY))
		return al_error_set(err, -EBADMSG, "vault %s is corrupt (its header)", path);
	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	v->kdf = (uint32_t)kdf;
	if (!take_le(&r, 8, &v->opslimit) || !take_le(&r, 8, &v->memlimit) ||
	    !take(&r, v->salt, SALT_SIZE) || !take(&r, check, sizeof(check)) ||
	    !take(&r, nonce, sizeof(nonce)) || !take_le(&r, 8, &length))
		return al_error_set(err, -EBADMSG, "vault %s is truncated (%zu bytes)", path, size);
	if (length != r.left)
		return al_error_set(err, -EBADMSG,
				    length > r.left
					? "vault %s is truncated (%zu bytes)"
					: "vault %s is corrupt (%zu bytes, trailing data)",
				    path, size);
	if (length < ABYTES || length - ABYTES > BROKER_VAULT_FILE_MAX)
		return al_error_set(err, -EBADMSG, "vault %s is corrupt (its length)", path);
	if (!reuse && (v->kdf == KDF_KEY) != (k->key != NULL))
		return al_error_set(err, -EACCES, "vault %s needs a %s", path,
				    v->kdf == KDF_KEY ? "key file" : "passphrase");
	/* Argon2id costs come from the file: bound them, or a planted file is a memory bomb. */
	if (v->kdf == KDF_PASSPHRASE &&
	    (v->opslimit < crypto_pwhash_OPSLIMIT_MIN || v->opslimit > 64 ||
	     v->memlimit < crypto_pwhash_MEMLIMIT_MIN || v->memlimit > (4ULL << 30)))
		return al_error_set(err, -EBADMSG, "vault %s is corrupt (its key costs)", path);
	if (same_key(v, reuse)) {
		v->key = sodium_malloc(KEY_SIZE);
		if (!v->key)
			return -ENOMEM;
		memcpy(v->key, reuse->key, KEY_SIZE);
		res = 0;
	} else if (reuse) {
		/* Re-keyed since: the key at hand cannot open it. */
		return al_error_set(err, -EACCES, "vault %s has a new key since it was opened",
				    path);
	} else {
		res = derive_key(v, k);
	}
	if (res < 0)
		return al_error_set_errno(err, res, "vault %s: cannot derive its key", path);
	keycheck(v, want);
	if (sodium_memcmp(want, check, sizeof(check)) != 0)
		return al_error_set(err, -EACCES, "wrong passphrase or key for vault %s", path);
	plain = sodium_malloc(length - ABYTES + 1);
	if (!plain)
		return -ENOMEM;
	if (crypto_aead_xchacha20poly1305_ietf_decrypt(plain, &plain_len, NULL, r.p, length, buf,
						       HEADER_SIZE, nonce, v->key) != 0) {
		sodium_free(plain);
		return al_error_set(err, -EBADMSG,
				    "vault %s has been tampered with or is corrupt (it does not "
				    "authenticate)",
				    path);
	}
	res = broker_vault_parse_entries(v, plain, (size_t)plain_len);
	sodium_free(plain);
	if (res == -ENOMEM)
		return res;
	if (res < 0)
		return al_error_set(err, res, "vault %s is corrupt (its entries)", path);
	*ret = TAKE_PTR(v);
	return 0;
}

int broker_vault_decode(const char *path, const unsigned char *buf, size_t size,
			const struct broker_vault_key *k, struct broker_vault **ret,
			struct al_error *err)
{
	return decode(path, buf, size, k, NULL, ret, err);
}

int broker_vault_reload(const char *path, struct broker_vault **v, struct al_error *err)
{
	_cleanup_free_ char *buf = NULL;
	struct broker_vault *n = NULL;
	size_t size = 0;
	int r;

	r = al_read_file_at(AT_FDCWD, path, BROKER_VAULT_FILE_MAX, &buf, &size);
	if (r < 0)
		return al_error_set_errno(err, r, "vault %s: cannot read it", path);
	r = decode(path, (const unsigned char *)buf, size, NULL, *v, &n, err);
	if (r < 0)
		return r;
	broker_vault_free(*v);
	*v = n;
	return 0;
}

int broker_vault_open(const char *path, const struct broker_vault_key *k, bool create,
		      struct broker_vault **ret, struct al_error *err)
{
	_cleanup_free_ char *buf = NULL;
	size_t size = 0;
	int r;

	if (sodium_init() < 0)
		return al_error_set(err, -EIO, "Failed to initialize libsodium");
	r = al_read_file_at(AT_FDCWD, path, BROKER_VAULT_FILE_MAX, &buf, &size);
	if (r == -ENOENT && create) {
		r = broker_vault_new(k, ret);
		return r < 0 ? al_error_set_errno(err, r, "vault %s: cannot create its key", path)
			     : 0;
	}
	if (r == -EFBIG)
		return al_error_set(err, r, "vault %s is larger than %d bytes", path,
				    BROKER_VAULT_FILE_MAX);
	if (r < 0)
		return al_error_set_errno(err, r, "vault %s", path);
	return broker_vault_decode(path, (const unsigned char *)buf, size, k, ret, err);
}

/* ---- writing ---- */

static int encode(struct broker_vault *v, unsigned char **ret, size_t *ret_len)
{
	_cleanup_free_ unsigned char *out = NULL;
	unsigned char *plain = NULL, check[KEYCHECK_SIZE], nonce[NONCE_SIZE], *p;
	size_t plain_len, len;
	int r;

	r = serialize_entries(v, &plain, &plain_len);
	if (r < 0)
		return r;
	len = HEADER_SIZE + plain_len + ABYTES;
	out = malloc(len);
	if (!out) {
		sodium_free(plain);
		return -ENOMEM;
	}
	randombytes_buf(nonce, sizeof(nonce));
	keycheck(v, check);
	p = out;
	memcpy(p, MAGIC, 8), p += 8;
	put_le(p, BROKER_VAULT_VERSION, 4), p += 4;
	put_le(p, v->kdf, 4), p += 4;
	put_le(p, v->opslimit, 8), p += 8;
	put_le(p, v->memlimit, 8), p += 8;
	memcpy(p, v->salt, SALT_SIZE), p += SALT_SIZE;
	memcpy(p, check, KEYCHECK_SIZE), p += KEYCHECK_SIZE;
	memcpy(p, nonce, NONCE_SIZE), p += NONCE_SIZE;
	put_le(p, plain_len + ABYTES, 8), p += 8;
	(void)crypto_aead_xchacha20poly1305_ietf_encrypt(p, NULL, plain, plain_len, out,
							 HEADER_SIZE, NULL, nonce, v->key);
	sodium_free(plain);
	*ret = TAKE_PTR(out);
	*ret_len = len;
	return 0;
}

/* The folder of path and its last component. */
static int split_path(const char *path, char **ret_dir, const char **ret_name)
{
	const char *slash = strrchr(path, '/');

	*ret_dir = slash ? strndup(path, (size_t)(slash - path) + (slash == path)) : strdup(".");
	*ret_name = slash ? slash + 1 : path;
	return *ret_dir ? 0 : -ENOMEM;
}

int broker_vault_save(struct broker_vault *v, const char *path, struct al_error *err)
{
	_cleanup_free_ unsigned char *data = NULL;
	_cleanup_free_ char *dir = NULL;
	_cleanup_close_ int dfd = -EBADF, fd = -EBADF;
	char tmp[NAME_MAX + 1];
	const char *name;
	size_t len;
	int r;

	r = encode(v, &data, &len);
	if (r >= 0)
		r = split_path(path, &dir, &name);
	if (r < 0)
		return al_error_set_errno(err, r, "vault %s", path);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return al_error_set_errno(err, -errno, "vault %s: its folder", path);
	for (int i = 0; fd < 0 && i < 100; i++) {
		uint32_t rnd = randombytes_random();

		if ((size_t)snprintf(tmp, sizeof(tmp), ".%.200s.%08x.tmp", name, rnd) >=
		    sizeof(tmp))
			return al_error_set(err, -ENAMETOOLONG, "vault %s: name too long", path);
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0 && errno != EEXIST)
			return al_error_set_errno(err, -errno, "vault %s: cannot write", path);
	}
	if (fd < 0)
		return al_error_set(err, -EEXIST, "vault %s: no temporary name free", path);
	r = al_write_all(fd, data, len);
	if (r >= 0)
		r = RET_NERRNO(fsync(fd));
	if (r >= 0)
		r = RET_NERRNO(renameat(dfd, tmp, dfd, name));
	if (r < 0) {
		(void)unlinkat(dfd, tmp, 0);
		return al_error_set_errno(err, r, "vault %s: cannot write", path);
	}
	/* The rename itself must reach the disk before the update counts as done. */
	r = RET_NERRNO(fsync(dfd));
	if (r < 0)
		return al_error_set_errno(err, r, "vault %s: cannot sync its folder", path);
	return 0;
}

/* ---- changing ---- */

size_t broker_vault_count(const struct broker_vault *v)
{
	return v->n;
}

const struct broker_vault_entry *broker_vault_entry(const struct broker_vault *v, size_t i)
{
	return i < v->n ? &v->entries[i] : NULL;
}

/* The index of name, or where it would go (with *found false). */
static size_t locate(const struct broker_vault *v, const char *name, bool *found)
{
	return al_sorted_find(v->entries, v->n, sizeof(*v->entries),
			      offsetof(struct broker_vault_entry, name), name, found);
}

const struct broker_vault_entry *broker_vault_find(const struct broker_vault *v, const char *name)
{
	bool found;
	size_t i = locate(v, name, &found);

	return found ? &v->entries[i] : NULL;
}

static void remove_at(struct broker_vault *v, size_t i)
{
	entry_done(&v->entries[i]);
	memmove(&v->entries[i], &v->entries[i + 1], (v->n - i - 1) * sizeof(*v->entries));
	v->n--;
}

int broker_vault_put(struct broker_vault *v, const char *name, const void *value, size_t len,
		     uint64_t now)
{
	struct broker_vault_entry *e, *grown;
	struct broker_secret *s;
	bool found;
	size_t i;

	if (name[0] == '\0' || strlen(name) > UINT16_MAX || len > BROKER_SECRET_MAX)
		return -EINVAL;
	s = broker_secret_new(len);
	if (!s)
		return -ENOMEM;
	memcpy(s->data, value, len);
	i = locate(v, name, &found);
	if (found) {
		e = &v->entries[i];
		broker_secret_free(e->value);
		e->value = s;
		e->updated = now;
		return 0;
	}
	if (v->n >= BROKER_VAULT_ENTRIES_MAX) {
		broker_secret_free(s);
		return -ENOSPC;
	}
	grown = reallocarray(v->entries, v->n + 1, sizeof(*grown));
	if (!grown) {
		broker_secret_free(s);
		return -ENOMEM;
	}
	v->entries = grown;
	memmove(&v->entries[i + 1], &v->entries[i], (v->n - i) * sizeof(*grown));
	e = &v->entries[i];
	*e = (struct broker_vault_entry){.value = s, .created = now, .updated = now};
	e->name = strdup(name);
	e->hosts = calloc(1, sizeof(*e->hosts));
	v->n++;
	if (!e->name || !e->hosts) {
		remove_at(v, i);
		return -ENOMEM;
	}
	return 0;
}

int broker_vault_remove(struct broker_vault *v, const char *name)
{
	bool found;
	size_t i = locate(v, name, &found);

	if (!found)
		return -ENOENT;
	remove_at(v, i);
	return 0;
}

int broker_vault_bind(struct broker_vault *v, const char *name, char *const *hosts, size_t n,
		      uint64_t now)
{
	struct broker_vault_entry *e;
	char **copy;
	bool found;
	size_t i = locate(v, name, &found);

	if (!found)
		return -ENOENT;
	if (n > BROKER_VAULT_HOSTS_MAX)
		return -E2BIG;
	copy = calloc(n + 1, sizeof(*copy));
	if (!copy)
		return -ENOMEM;
	for (size_t h = 0; h < n; h++) {
		copy[h] = strdup(hosts[h]);
		if (!copy[h] || copy[h][0] == '\0' || strlen(copy[h]) > UINT16_MAX) {
			int r = copy[h] ? -EINVAL : -ENOMEM;

			for (size_t k = 0; k <= h; k++)
				free(copy[k]);
			free(copy);
			return r;
		}
	}
	e = &v->entries[i];
	for (size_t h = 0; h < e->n_hosts; h++)
		free(e->hosts[h]);
	free(e->hosts);
	e->hosts = copy;
	e->n_hosts = n;
	e->updated = now;
	return 0;
}

/* Removes the temporary files of writers that were killed before their rename (".NAME.XXXXXXXX.tmp"
 * next to the vault). Only under the lock: a live writer's temporary file is never touched. */
static void remove_stale_temporaries(const char *path)
{
	_cleanup_free_ char *dir = NULL;
	const char *name, *rest;
	struct dirent *de;
	DIR *d;
	int dfd;

	if (split_path(path, &dir, &name) < 0)
		return;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return;
	d = fdopendir(dfd);
	if (!d) {
		(void)al_close(dfd);
		return;
	}
	while ((de = readdir(d))) {
		rest = de->d_name[0] == '.' ? startswith(de->d_name + 1, name) : NULL;
		if (rest && strlen(rest) == 13 && rest[0] == '.' &&
		    strspn(rest + 1, "0123456789abcdef") == 8 && streq(rest + 9, ".tmp"))
			(void)unlinkat(dirfd(d), de->d_name, 0);
	}
	closedir(d);
}

int broker_vault_update(const char *path, const struct broker_vault_key *k,
			broker_vault_change_fn change, void *userdata, struct al_error *err)
{
	_cleanup_(broker_vault_freep) struct broker_vault *v = NULL;
	_cleanup_free_ char *lock_path = NULL;
	_cleanup_close_ int lock = -EBADF;
	int r;

	if (asprintf(&lock_path, "%s.lock", path) < 0)
		return -ENOMEM;
	lock = open(lock_path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (lock < 0)
		return al_error_set_errno(err, -errno, "vault %s: cannot open its lock", path);
	if (flock(lock, LOCK_EX) < 0)
		return al_error_set_errno(err, -errno, "vault %s: cannot lock it", path);
	remove_stale_temporaries(path);
	/* Read under the lock: another writer's change is in what is changed here. */
	r = broker_vault_open(path, k, true, &v, err);
	if (r >= 0)
		r = change(v, userdata, err);
	if (r >= 0)
		r = broker_vault_save(v, path, err);
	return r;
}
