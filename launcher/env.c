#define LOG_MODULE "launcher"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launcher/launcher-internal.h"
#include "netns/netns.h"

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
	    {"PATH", LAUNCHER_DEFAULT_PATH},
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

/* Sets name=value unless the policy sets name itself. */
static int env_add(struct launcher_context *ctx, const char *name, const char *value)
{
	size_t n = 0;
	char **l;

	if (policy_env_get(ctx->policy, name))
		return 0;
	while (ctx->envp[n])
		n++;
	l = reallocarray(ctx->envp, n + 2, sizeof(*l));
	if (!l)
		return -ENOMEM;
	ctx->envp = l;
	l[n + 1] = NULL;
	return env_push(l, &n, name, value);
}

int launcher_env_add_egress(struct launcher_context *ctx)
{
	/* Proxy-aware tools use the explicit proxy; the rest are caught transparently. */
	static const char *const proxy_vars[] = {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy",
						 "https_proxy"};
	/* The trust store's variables of OpenSSL, Python requests, Node, curl, git and gRPC. */
	static const char *const ca_vars[] = {
	    "SSL_CERT_FILE",  "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
	    "CURL_CA_BUNDLE", "GIT_SSL_CAINFO",	    "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH"};
	char proxy[64];
	int r = 0;

	(void)snprintf(proxy, sizeof(proxy), "http://%s:%d", NETNS_PROXY_ADDR,
		       NETNS_HTTP_PROXY_PORT);
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(proxy_vars); i++)
		r = env_add(ctx, proxy_vars[i], proxy);
	if (r >= 0)
		r = env_add(ctx, "NO_PROXY", "localhost,127.0.0.1,::1");
	if (r >= 0)
		r = env_add(ctx, "no_proxy", "localhost,127.0.0.1,::1");
	for (size_t i = 0; r >= 0 && ctx->ca_bundle && i < ELEMENTSOF(ca_vars); i++)
		r = env_add(ctx, ca_vars[i], NETNS_CA_BUNDLE);
	if (r >= 0 && policy_ssh_keys(ctx->policy) > 0)
		r = env_add(ctx, "SSH_AUTH_SOCK", NETNS_SSH_AGENT_SOCKET);
	return r;
}
