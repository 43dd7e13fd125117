/* A JSON request run in a persistent session (`airlock session exec ID --request FILE`): the same
 * request and result as `airlock exec`, planned against the session's own policy (its runtimes,
 * its labels), in the session's sandbox and workspace. The code, input and compiled program live
 * in a folder of the command's own in the session's /tmp, which its pid 1 makes and removes. */

#include <errno.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent-internal.h"
#include "common/fd-util.h"
#include "common/json-util.h"

static bool request_sets(const struct agent_request *req, const char *var)
{
	for (size_t i = 0; i < req->n_env; i++)
		if (strlen(req->env[i].name) == strcspn(var, "=") &&
		    strncmp(req->env[i].name, var, strlen(req->env[i].name)) == 0)
			return true;
	return false;
}

/* The request's variables, airlock's, and the runtime's (plan_env) under the request's and the
 * session policy's. */
static int make_env(const struct agent_request *req, const struct policy *p, char **plan_env,
		    const char *dir, char ***ret)
{
	char **v = NULL, *a = NULL;
	size_t n = 0;
	int r = 0;

	for (char **e = plan_env; r >= 0 && e && *e; e++) {
		_cleanup_free_ char *name = strndup(*e, strcspn(*e, "="));

		if (!name)
			r = -ENOMEM;
		else if (!request_sets(req, *e) && !agent_policy_env(p, name))
			r = agent_strv_push(&v, &n, *e);
	}

	for (size_t i = 0; r >= 0 && i < req->n_env + 2; i++) {
		if (i < req->n_env)
			r = asprintf(&a, "%s=%s", req->env[i].name, req->env[i].value);
		else if (i == req->n_env)
			r = asprintf(&a, "AIRLOCK_RESULT=%s/result.json", dir);
		else if (req->input)
			r = asprintf(&a, "AIRLOCK_INPUT=%s/" AGENT_INPUT_FILE, dir);
		else
			continue;
		if (r < 0) {
			r = -ENOMEM;
			break;
		}
		r = agent_strv_push(&v, &n, a);
		free(a);
	}
	if (r < 0) {
		agent_strv_free(v);
		return r;
	}
	*ret = v;
	return 0;
}

int agent_session_result_print(FILE *out, const char *id, const struct launcher_result *res,
			       unsigned flags)
{
	_cleanup_(policy_freep) struct policy *p = NULL;

	/* Labelled with the session's policy's labels (only airlock's when it cannot be read). */
	(void)launcher_session_policy(id, &p, NULL);
	return agent_result_print(out, p, res, flags);
}

struct session_exec {
	const struct agent_request *req;
	struct policy *policy;
	struct agent_plan plan;
	char dir[64], result[96];
	char **env;
	int in;
	struct al_error err;
};

static void session_exec_done(struct session_exec *x)
{
	x->policy = policy_free(x->policy);
	agent_plan_done(&x->plan);
	x->env = agent_strv_free(x->env);
	x->in = al_close(x->in);
}

/* Plans the request against the session's policy: the kind of its refusal, or NONE. */
static int plan(const char *id, struct session_exec *x)
{
	const struct agent_request *req = x->req;
	uint32_t rnd = 0;
	int r;

	if (req->policy_json || req->policy_path || req->workspace || req->memory)
		return al_error_set(&x->err, -EINVAL,
				    "policy, workspace and memory are the session's: not in a "
				    "request to a session"),
		       AGENT_ERROR_INVALID_REQUEST;
	r = launcher_session_policy(id, &x->policy, &x->err);
	if (r < 0)
		return r == -ENOENT ? AGENT_ERROR_INVALID_REQUEST : AGENT_ERROR_SETUP_FAILED;
	if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd))
		rnd = (uint32_t)getpid() ^ (uint32_t)time(NULL);
	(void)snprintf(x->dir, sizeof(x->dir), "/tmp/airlock-exec-%08x", rnd);
	r = agent_plan(req, x->policy, x->dir, x->dir, &x->plan, &x->err);
	if (r < 0)
		return agent_plan_error_kind(r);
	(void)snprintf(x->result, sizeof(x->result), "%s/result.json", x->dir);
	r = make_env(req, x->policy, x->plan.env, x->dir, &x->env);
	/* Without stdin or input the command reads /dev/null (launcher_session_exec() opens it),
	 * which reads as the empty memfd would, without making one. */
	if (r >= 0 && (req->stdin_data || req->input))
		r = agent_request_stdin(req, &x->in);
	if (r < 0)
		return al_error_set_errno(&x->err, r, "Failed to prepare the command"),
		       AGENT_ERROR_SETUP_FAILED;
	return AGENT_ERROR_NONE;
}

int agent_session_exec(const char *id, const struct agent_request *req,
		       const struct agent_session_exec_options *o, FILE *out)
{
	struct session_exec x = {.req = req, .in = -EBADF};
	struct launcher_result res = {0};
	int kind, r;

	kind = plan(id, &x);
	if (kind == AGENT_ERROR_NONE) {
		struct launcher_session_exec e = {
		    .argv = x.plan.argv,
		    .env = x.env,
		    .stdin_fd = x.in,
		    .timeout_usec = req->timeout_usec,
		    .kill_grace_usec = 1000000,
		    .result_path = x.result,
		    .capture = true,
		    .dir = x.dir,
		    .files = x.plan.files,
		    .n_files = x.plan.n_files,
		    .workspace_files = x.plan.workspace_files,
		    .n_workspace_files = req->n_files,
		    .prelude = x.plan.prelude,
		    .in_thread = o && o->in_thread,
		    .cancel_fd = o ? o->cancel_fd : -EBADF,
		};

		r = launcher_session_exec(id, &e, &res, &x.err);
		if (r == -ECANCELED) {
			launcher_result_done(&res);
			session_exec_done(&x);
			return r;
		}
		kind = r == -ENOENT && !res.exec_error ? AGENT_ERROR_INVALID_REQUEST
		       : r < 0			       ? AGENT_ERROR_SETUP_FAILED
						       : AGENT_ERROR_NONE;
	}
	if (kind < 0)
		r = kind;
	else if (kind != AGENT_ERROR_NONE)
		r = agent_exec_print_error(out, (enum agent_error_kind)kind, x.err.msg);
	else
		r = agent_result_print(out, x.policy, &res, agent_result_flags(req));
	launcher_result_done(&res);
	session_exec_done(&x);
	return r < 0 ? r : kind;
}

/* key: v, or null when it is not known. */
static int add_number(struct json_object *o, const char *key, bool known, int64_t v)
{
	if (!known)
		return json_object_object_add(o, key, NULL) < 0 ? -ENOMEM : 0;
	return al_json_add(o, key, json_object_new_int64(v));
}

static int add_usage(struct json_object *o, const char *key, uint64_t v)
{
	return add_number(o, key, v != LAUNCHER_USAGE_UNKNOWN, (int64_t)v);
}

int agent_session_json(const struct launcher_session_info *info,
		       const struct launcher_session_usage *u, struct json_object **ret)
{
	_cleanup_json_ struct json_object *o = json_object_new_object();
	long long left = info->expires - (long long)time(NULL);
	time_t t = (time_t)info->started;
	char started[32];
	struct tm tm;
	int r;

	if (!o)
		return -ENOMEM;
	if (!gmtime_r(&t, &tm) ||
	    strftime(started, sizeof(started), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		started[0] = '\0';
	r = al_json_add(o, "id", json_object_new_string(info->id));
	if (r >= 0)
		r = al_json_add(o, "pid", json_object_new_int(info->pid));
	if (r >= 0)
		r = add_number(o, "owner", info->owner > 0, info->owner);
	if (r >= 0)
		r = al_json_add(o, "started", json_object_new_string(started));
	if (r >= 0)
		r = al_json_add(o, "expires", json_object_new_int64(info->expires));
	if (r >= 0)
		r = add_number(o, "ttl_left_s", info->expires != 0, MAX(left, 0LL));
	if (r >= 0)
		r = al_json_add(o, "policy_hash", json_object_new_string(info->policy_hash));
	if (r >= 0)
		r = al_json_add(o, "workspace", json_object_new_string(info->workspace));
	if (r >= 0)
		r = add_usage(o, "cpu_usec", u->cpu_usec);
	if (r >= 0)
		r = add_usage(o, "memory_bytes", u->memory);
	if (r >= 0)
		r = add_usage(o, "memory_peak_bytes", u->memory_peak);
	if (r >= 0)
		r = add_usage(o, "workspace_bytes", u->workspace);
	if (r >= 0)
		r = al_json_add(o, "workspace_bytes_partial",
				json_object_new_boolean(u->workspace_partial));
	if (r < 0)
		return r;
	*ret = TAKE_PTR(o);
	return 0;
}
