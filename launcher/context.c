#define LOG_MODULE "launcher"

/* Everything the sandbox child needs, prepared in airlock's process before clone: resolved and
 * opened bind sources, the environment, generated /etc files. Doing it here means bad paths are
 * reported before any namespace exists, and the child needs no allocation. */

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fd-util.h"
#include "common/path-util.h"
#include "launcher/launcher-internal.h"

/* Resolves and checks source (al_path_resolve_exposable()) and records the object the child must
 * find there. */
static int bind_add(struct launcher_context *ctx, const char *source, const char *target,
		    bool read_only, const char *field, struct al_error *err)
{
	_cleanup_free_ char *canonical = NULL;
	struct launcher_bind *b;
	struct stat st;
	int r;

	r = al_path_resolve_exposable(source, !read_only, field, &canonical, err);
	if (r < 0)
		return r;
	if (stat(canonical, &st) < 0)
		return al_error_set_errno(err, -errno, "%s: %s", field, source);
	if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
		return al_error_set(err, -EINVAL, "%s: %s is neither a folder nor a file", field,
				    source);
	b = reallocarray(ctx->binds, ctx->n_binds + 1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	ctx->binds = b;
	b = &ctx->binds[ctx->n_binds];
	*b = (struct launcher_bind){
	    .read_only = read_only,
	    .is_dir = S_ISDIR(st.st_mode),
	    .dev = st.st_dev,
	    .ino = st.st_ino,
	};
	b->target = strdup(target);
	if (!b->target)
		return -ENOMEM;
	b->source = TAKE_PTR(canonical);
	ctx->n_binds++;
	return 0;
}

static int add_mounts(struct launcher_context *ctx, struct al_error *err)
{
	const struct policy *p = ctx->policy;
	char field[64];
	int r;

	for (size_t i = 0; i < p->n_mounts; i++) {
		(void)snprintf(field, sizeof(field), "mounts[%zu].source", i);
		r = bind_add(ctx, p->mounts[i].source, p->mounts[i].target, p->mounts[i].read_only,
			     field, err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* An image is the sandbox's root, read-only: no folder the sandbox may write (the workspace, a
 * writable mount) may be the image, lie in it or hold it, or the sandbox would write programs
 * into its own root and run them from there (found by review). Compared by real paths. */
static int check_image_apart(const struct launcher_context *ctx, struct al_error *err)
{
	_cleanup_free_ char *ws = NULL;

	if (!ctx->image)
		return 0;
	if (ctx->policy->workspace.root) {
		ws = realpath(ctx->policy->workspace.root, NULL);
		if (ws && (al_path_is_within(ws, ctx->image) || al_path_is_within(ctx->image, ws)))
			return al_error_set(
			    err, -EPERM,
			    "isolation.image: %s and workspace.root %s overlap: the "
			    "sandbox could write its own root",
			    ctx->image, ws);
	}
	for (size_t i = 0; i < ctx->n_binds; i++) {
		const char *src = ctx->binds[i].source;

		if (!ctx->binds[i].read_only &&
		    (al_path_is_within(src, ctx->image) || al_path_is_within(ctx->image, src)))
			return al_error_set(
			    err, -EPERM,
			    "isolation.image: %s and the writable mount %s overlap: "
			    "the sandbox could write its own root",
			    ctx->image, src);
	}
	return 0;
}

static int make_identity(struct launcher_context *ctx)
{
	int r;

	if (ctx->uid == 0)
		r = asprintf(&ctx->etc_passwd,
			     "root:x:0:0:root:/tmp:/bin/sh\n"
			     "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n");
	else
		r = asprintf(&ctx->etc_passwd,
			     "root:x:0:0:root:/root:/bin/sh\n"
			     "sandbox:x:%u:%u:airlock sandbox:/tmp:/bin/sh\n"
			     "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
			     ctx->uid, ctx->gid);
	if (r < 0) {
		ctx->etc_passwd = NULL;
		return -ENOMEM;
	}
	if (ctx->gid == 0)
		r = asprintf(&ctx->etc_group, "root:x:0:\nnogroup:x:65534:\n");
	else
		r = asprintf(&ctx->etc_group, "root:x:0:\nsandbox:x:%u:\nnogroup:x:65534:\n",
			     ctx->gid);
	if (r < 0) {
		ctx->etc_group = NULL;
		return -ENOMEM;
	}
	return 0;
}

static int strv_copy(char *const *l, char ***ret)
{
	_cleanup_(launcher_strv_freep) char **c = NULL;
	size_t n = 0;

	while (l[n])
		n++;
	c = calloc(n + 1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		c[i] = strdup(l[i]);
		if (!c[i])
			return -ENOMEM;
	}
	*ret = TAKE_PTR(c);
	return 0;
}

static int read_cap_last(void)
{
	_cleanup_free_ char *s = NULL;
	int r;

	r = al_read_file_at(AT_FDCWD, "/proc/sys/kernel/cap_last_cap", 64, &s, NULL);
	if (r < 0)
		return 63; /* PR_CAPBSET_DROP of an unknown cap fails with EINVAL: harmless */
	return atoi(s);
}

int launcher_context_init(struct launcher_context *ctx, const struct policy *p,
			  const struct launcher_options *opts, struct al_error *err)
{
	uint32_t rnd;
	int r;

	*ctx = (struct launcher_context){
	    .policy = p,
	    .opts = opts,
	    .uid = geteuid(),
	    .gid = getegid(),
	    .stdout_w = -EBADF,
	    .stderr_w = -EBADF,
	    .stdin_r = -EBADF,
	    .sync_fd = -EBADF,
	    .egress_fd = -EBADF,
	    .agent_fd = -EBADF,
	};
	/* Root too gets a user namespace under a profile: its root is nobody on the host. */
	ctx->userns = ctx->uid != 0 || p->profile != POLICY_PROFILE_NONE;
	if (ctx->uid == 0 && ctx->userns)
		launcher_userns_root_map(&ctx->root_map_uid, &ctx->root_map_gid);
	if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
		return al_error_set_errno(err, -errno, "Failed to get random bytes");
	(void)snprintf(ctx->id, sizeof(ctx->id), "%d-%08x", (int)getpid(), rnd);
	ctx->cap_last = read_cap_last();
	if (p->image) {
		/* Its top-level folders are mirrored: / or a home must not bring airlock's state */
		r = al_path_check_state(p->image, "image", err);
		if (r < 0)
			return r;
		ctx->image = strdup(p->image);
		if (!ctx->image)
			return -ENOMEM;
	}
	r = strv_copy(opts->argv, &ctx->argv);
	if (r >= 0)
		r = add_mounts(ctx, err);
	if (r >= 0)
		r = check_image_apart(ctx, err);
	if (r >= 0)
		r = launcher_env_build(p, &ctx->envp);
	if (r >= 0)
		r = make_identity(ctx);
	return r;
}

void launcher_context_done(struct launcher_context *ctx)
{
	for (size_t i = 0; i < ctx->n_binds; i++) {
		free(ctx->binds[i].source);
		free(ctx->binds[i].target);
	}
	free(ctx->binds);
	free(ctx->secret_files);
	free(ctx->image);
	free(ctx->etc_passwd);
	free(ctx->etc_group);
	free(ctx->ca_bundle);
	launcher_strv_free(ctx->envp);
	launcher_strv_free(ctx->argv);
	launcher_seccomp_filter_done(&ctx->seccomp);
	ctx->stdin_r = al_close(ctx->stdin_r);
	ctx->stdout_w = al_close(ctx->stdout_w);
	ctx->stderr_w = al_close(ctx->stderr_w);
	ctx->sync_fd = al_close(ctx->sync_fd);
	ctx->egress_fd = al_close(ctx->egress_fd);
	ctx->agent_fd = al_close(ctx->agent_fd);
	*ctx = (struct launcher_context){.stdout_w = -EBADF,
					 .stderr_w = -EBADF,
					 .stdin_r = -EBADF,
					 .sync_fd = -EBADF,
					 .egress_fd = -EBADF,
					 .agent_fd = -EBADF};
}
