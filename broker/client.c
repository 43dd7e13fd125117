#define LOG_MODULE "broker"

/* The embedded broker client: until the broker daemon exists, credentials are read from their
 * sources in airlock's own process. A credential file gives the real value only with
 * "expose": true; otherwise a surrogate made for this client (one per sandbox), which the
 * proxy will later swap for the real value. */

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <sodium.h>

#include "broker/broker-internal.h"
#include "broker/client.h"
#include "common/fd-util.h"
#include "common/log.h"

#define SURROGATE_PREFIX "airlock_sur_"
#define SURROGATE_RANDOM 24 /* bytes, hex-encoded */

struct broker_client {
	const struct policy *policy;
	char (*surrogates)[sizeof(SURROGATE_PREFIX) + 2 * SURROGATE_RANDOM];
};

int broker_client_new_embedded(const struct policy *p, struct broker_client **ret)
{
	struct broker_client *c;
	unsigned char rnd[SURROGATE_RANDOM];

	if (sodium_init() < 0)
		return -EIO;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->policy = p;
	c->surrogates = calloc(p->n_credentials ? p->n_credentials : 1, sizeof(*c->surrogates));
	if (!c->surrogates) {
		free(c);
		return -ENOMEM;
	}
	for (size_t i = 0; i < p->n_credentials; i++) {
		randombytes_buf(rnd, sizeof(rnd));
		memcpy(c->surrogates[i], SURROGATE_PREFIX, strlen(SURROGATE_PREFIX));
		sodium_bin2hex(c->surrogates[i] + strlen(SURROGATE_PREFIX),
			       sizeof(c->surrogates[i]) - strlen(SURROGATE_PREFIX), rnd,
			       sizeof(rnd));
	}
	sodium_memzero(rnd, sizeof(rnd));
	*ret = c;
	return 0;
}

struct broker_client *broker_client_free(struct broker_client *c)
{
	if (!c)
		return NULL;
	free(c->surrogates);
	free(c);
	return NULL;
}

static const struct policy_credential *find(const struct broker_client *c, const char *name,
					    size_t *ret_idx)
{
	for (size_t i = 0; i < c->policy->n_credentials; i++)
		if (strcmp(c->policy->credentials[i].name, name) == 0) {
			*ret_idx = i;
			return &c->policy->credentials[i];
		}
	return NULL;
}

static bool source_is_served(const struct policy_credential *cr)
{
	return cr->source == POLICY_CRED_SOURCE_ENV || cr->source == POLICY_CRED_SOURCE_FILE;
}

int broker_client_check_files(struct broker_client *c, struct al_error *err)
{
	for (size_t i = 0; i < c->policy->n_credentials; i++) {
		const struct policy_credential *cr = &c->policy->credentials[i];

		if (cr->injection != POLICY_INJECTION_FILE || !cr->expose || source_is_served(cr))
			continue;
		return al_error_set(err, -EOPNOTSUPP,
				    "credentials[%zu] (%s): source \"%s\" needs the broker daemon, "
				    "which this airlock does not have yet",
				    i, cr->name, policy_cred_source_to_string(cr->source));
	}
	return 0;
}

struct broker_secret *broker_secret_new(size_t len)
{
	/* sodium_malloc() puts the block against a guard page: its address is aligned only when
	 * its size is a multiple of the alignment. */
	size_t size = (sizeof(struct broker_secret) + len + 1 + 15) & ~(size_t)15;
	struct broker_secret *s;

	s = sodium_malloc(size);
	if (!s)
		return NULL;
	s->len = len;
	s->data[len] = '\0';
	return s;
}

struct broker_secret *broker_secret_free(struct broker_secret *s)
{
	if (s) {
		sodium_memzero(s->data, s->len);
		sodium_free(s);
	}
	return NULL;
}

static int read_source_file(const char *path, struct broker_secret **ret)
{
	_cleanup_close_ int fd = -EBADF;
	struct broker_secret *s;
	char buf[512];
	size_t len = 0;
	ssize_t n;

	/* The path the policy names, through no symbolic link: one planted on the way would turn
	 * the credential into any file this process can read. */
	fd =
	    (int)syscall(SYS_openat2, AT_FDCWD, path,
			 &(struct open_how){.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
					    .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS},
			 sizeof(struct open_how));
	if (fd < 0)
		return -errno;
	s = broker_secret_new(BROKER_SECRET_MAX);
	if (!s)
		return -ENOMEM;
	for (;;) {
		n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || len + (size_t)n > BROKER_SECRET_MAX) {
			int r = n < 0 ? -errno : -EFBIG;

			sodium_memzero(buf, sizeof(buf));
			s->len = len;
			broker_secret_free(s);
			return r;
		}
		if (n == 0)
			break;
		memcpy(s->data + len, buf, (size_t)n);
		len += (size_t)n;
	}
	sodium_memzero(buf, sizeof(buf));
	/* Only the bytes read are kept meaningful; the rest of the buffer is zero already. */
	s->len = len;
	s->data[len] = '\0';
	*ret = s;
	return 0;
}

static int read_real(const struct policy_credential *cr, struct broker_secret **ret)
{
	struct broker_secret *s;
	const char *v;

	switch (cr->source) {
	case POLICY_CRED_SOURCE_ENV:
		v = getenv(cr->source_var);
		if (!v)
			return -ENOENT;
		if (strlen(v) > BROKER_SECRET_MAX)
			return -EFBIG;
		s = broker_secret_new(strlen(v));
		if (!s)
			return -ENOMEM;
		memcpy(s->data, v, s->len);
		*ret = s;
		return 0;
	case POLICY_CRED_SOURCE_FILE:
		return read_source_file(cr->source_path, ret);
	default:
		return -EOPNOTSUPP;
	}
}

int broker_client_read_file(struct broker_client *c, const char *name, struct broker_secret **ret,
			    struct al_error *err)
{
	const struct policy_credential *cr;
	struct broker_secret *s;
	size_t idx;
	int r;

	cr = find(c, name, &idx);
	if (!cr || cr->injection != POLICY_INJECTION_FILE)
		return al_error_set(err, -ENOENT, "credential %s: no such credential file", name);
	if (!cr->expose) {
		s = broker_secret_new(strlen(c->surrogates[idx]));
		if (!s)
			return -ENOMEM;
		memcpy(s->data, c->surrogates[idx], s->len);
		*ret = s;
		return 0;
	}
	r = read_real(cr, ret);
	if (r < 0)
		return al_error_set_errno(err, r, "credential %s: cannot read its %s source", name,
					  policy_cred_source_to_string(cr->source));
	return 0;
}
