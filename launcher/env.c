#define LOG_MODULE "launcher"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launcher/launcher-internal.h"

#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define DEFAULT_HOME "/tmp"
#define DEFAULT_LANG "C.UTF-8"
#define INHERITED_VALUE_MAX 64

char **launcher_strv_free(char **l)
{
	/* The environment may hold exposed credentials: wipe, then free. */
	if (l)
		for (char **i = l; *i; i++) {
			explicit_bzero(*i, strlen(*i));
			free(*i);
		}
	free(l);
	return NULL;
}

/* LANG and TERM come from the caller's environment, which airlock does not trust: pass them
 * only when short and made of the characters locale and terminal names use. */
static bool inherited_value_is_sane(const char *v)
{
	size_t l;

	if (!v)
		return false;
	l = strlen(v);
	if (l == 0 || l > INHERITED_VALUE_MAX)
		return false;
	return strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-@+") ==
	       l;
}

static const char *policy_env_get(const struct policy *p, const char *name)
{
	for (size_t i = 0; i < p->n_env; i++)
		if (streq(p->env[i].name, name))
			return p->env[i].value;
	return NULL;
}

static int env_push(char **l, size_t *n, const char *name, const char *value)
{
	if (asprintf(&l[*n], "%s=%s", name, value) < 0) {
		l[*n] = NULL;
		return -ENOMEM;
	}
	(*n)++;
	return 0;
}

int launcher_env_build(const struct policy *p, char ***ret)
{
	static const struct {
		const char *name;
		const char *fallback;
	} base[] = {
	    {"PATH", DEFAULT_PATH},
	    {"HOME", DEFAULT_HOME},
	    {"LANG", DEFAULT_LANG},
	    {"TERM", NULL},
	};
	_cleanup_(launcher_strv_freep) char **l = NULL;
	size_t n = 0;
	int r;

	l = calloc(p->n_env + ELEMENTSOF(base) + 1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	for (size_t i = 0; i < p->n_env; i++) {
		r = env_push(l, &n, p->env[i].name, p->env[i].value);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < ELEMENTSOF(base); i++) {
		const char *v;

		if (policy_env_get(p, base[i].name))
			continue;
		v = NULL;
		if (streq(base[i].name, "LANG") || streq(base[i].name, "TERM"))
			v = getenv(base[i].name);
		if (!inherited_value_is_sane(v))
			v = base[i].fallback;
		if (!v)
			continue;
		r = env_push(l, &n, base[i].name, v);
		if (r < 0)
			return r;
	}
	*ret = TAKE_PTR(l);
	return 0;
}

int launcher_env_add_credentials(struct launcher_context *ctx, struct broker_client *broker,
				 struct al_error *err)
{
	const struct policy *p = ctx->policy;
	size_t n = 0;
	char **l;
	int r;

	while (ctx->envp[n])
		n++;
	for (size_t i = 0; i < p->n_credentials; i++) {
		const struct policy_credential *c = &p->credentials[i];
		_cleanup_(broker_secret_freep) struct broker_secret *v = NULL;

		if (c->injection != POLICY_INJECTION_ENV_VAR)
			continue;
		r = broker_client_read(broker, c->name, &v, err);
		if (r < 0)
			return r;
		if (memchr(v->data, '\0', v->len))
			return al_error_set(err, -EINVAL,
					    "credential %s: its value holds a NUL byte, which an "
					    "environment variable cannot",
					    c->name);
		l = reallocarray(ctx->envp, n + 2, sizeof(*l));
		if (!l)
			return -ENOMEM;
		ctx->envp = l;
		l[n + 1] = NULL;
		r = env_push(l, &n, c->var_name, v->data);
		if (r < 0)
			return r;
	}
	return 0;
}
