/* `airlock exec`: one request, one fresh sandbox, one result. Everything that can be refused is
 * refused before the sandbox is made, each with its kind: a request that does not parse or does
 * not fit the policy (invalid_request), a language whose runtime the sandbox would not find
 * (unsupported_language), a policy this machine cannot enforce or that is not admitted
 * (unsupported_policy). What fails after that is setup_failed. */

#define LOG_MODULE "agent"

#include <fcntl.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <json-c/json.h>

#include "agent/agent-internal.h"
#include "common/fd-util.h"
#include "common/json-util.h"
#include "common/log.h"
#include "common/path-util.h"

struct exec {
	const struct agent_request *req;
	struct policy *policy;	      /* with the request's run parameters */
	struct policy *base;	      /* as written: its hash is admitted and reported */
	struct agent_scratch scratch; /* the fresh workspace airlock made (and removes), if any */
	struct agent_plan plan;
	int stdin_fd;
	enum agent_error_kind kind;
	struct al_error err;
};

int agent_exec_print_error(FILE *out, enum agent_error_kind kind, const char *message)
{
	_cleanup_json_ struct json_object *o = json_object_new_object(), *e = NULL;
	int r;

	e = json_object_new_object();
	if (!o || !e)
		return -ENOMEM;
	r = al_json_add(e, "kind", json_object_new_string(agent_error_kind_to_string(kind)));
	if (r >= 0)
		r = al_json_add(e, "message", json_object_new_string(message));
	if (r >= 0)
		r = al_json_add(o, "error", json_object_get(e));
	if (r >= 0)
		r = al_json_add(o, "labels", agent_labels_json(NULL));
	return r < 0 ? r : agent_json_print(out, o);
}

/* Records the kind of the first failure (a later, outer one keeps it). */
static int fail(struct exec *e, enum agent_error_kind kind, int r)
{
	if (e->kind == AGENT_ERROR_NONE)
		e->kind = kind;
	if (!e->err.msg[0])
		(void)al_error_set_errno(&e->err, r, "Failed");
	return r;
}

static int make_scratch(struct exec *e)
{
	int r = agent_scratch_make(&e->scratch, &e->err);

	if (r < 0)
		return fail(e, AGENT_ERROR_SETUP_FAILED, r);
	return policy_set_workspace(e->policy, e->scratch.path, &e->err);
}

bool agent_fresh_workspace(const struct agent_request *req, const struct agent_exec_options *o,
			   const struct policy *p)
{
	if (req->workspace)
		return false;
	if (!req->policy_json && !req->policy_path && !o->policy_path)
		return true;
	/* A relative root names the working folder of whoever runs this: for requests that are not
	 * the operator's (a service's clients), the service's own folder, shared by every caller
	 * and holding what the service keeps there. */
	return o->policy_dir && p->workspace.root && p->workspace.root[0] != '/';
}

int agent_policy_source_check(const struct agent_request *req, const struct agent_exec_options *o,
			      struct al_error *err)
{
	if (o->policy_path && (req->policy_json || req->policy_path || req->workspace))
		return al_error_set(
		    err, -EPERM,
		    "%s: the operator fixed the policy (--policy): a request may not "
		    "name one",
		    req->workspace && !req->policy_json && !req->policy_path ? "workspace"
									     : "policy");
	if ((req->policy_json || req->policy_path) && req->workspace)
		return al_error_set(err, -EINVAL,
				    "workspace: the request's policy names the workspace");
	if (o->policy_dir && req->policy_json && !(o->allow & AGENT_EXEC_ALLOW_REQUEST_POLICY))
		return al_error_set(
		    err, -EPERM,
		    "policy: with --policy-dir a request may only name a file of the "
		    "folder: an inline policy has the power of a policy file (the "
		    "operator may allow it with --allow-request-policy)");
	if (o->policy_dir && req->workspace && !(o->allow & AGENT_EXEC_ALLOW_REQUEST_WORKSPACE))
		return al_error_set(err, -EPERM,
				    "workspace: with --policy-dir a request may not choose a host "
				    "folder as its workspace (the operator may allow it with "
				    "--allow-request-workspace)");
	if (o->policy_path || !req->policy_path)
		return 0;
	if (!o->policy_dir)
		return al_error_set(
		    err, -EPERM,
		    "policy: a request may name a policy file only when the operator "
		    "gave --policy-dir");
	if (strchr(req->policy_path, '/') || req->policy_path[0] == '.' || !req->policy_path[0])
		return al_error_set(err, -EINVAL,
				    "policy: \"%s\" is not a file name in the policy folder",
				    req->policy_path);
	return 0;
}

static int request_policy_allowed(struct exec *e, const struct agent_exec_options *o)
{
	int r = agent_policy_source_check(e->req, o, &e->err);

	if (r < 0)
		return fail(
		    e, r == -EINVAL ? AGENT_ERROR_INVALID_REQUEST : AGENT_ERROR_UNSUPPORTED_POLICY,
		    r);
	return 0;
}

/* Opens the request's policy name beneath the operator's folder: never through a symbolic link
 * (one in the folder could lead to any file the caller may read), never out of it, and only a
 * regular file, which is read whole (POLICY_FILE_MAX at most); a FIFO is refused, not waited
 * on. Returns the text in *ret (malloc'd) or -errno with e->err naming the file. */
static int read_policy_in_dir(struct exec *e, const char *dir, const char *name, char **ret,
			      size_t *ret_len)
{
	struct open_how how = {
	    .flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
	    .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	_cleanup_close_ int dfd = -EBADF, fd = -EBADF;
	struct stat st;
	int r;

	dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return fail(e, AGENT_ERROR_SETUP_FAILED,
			    al_error_set_errno(&e->err, -errno, "--policy-dir %s", dir));
	fd = (int)syscall(SYS_openat2, dfd, name, &how, sizeof(how));
	if (fd < 0 && (errno == ELOOP || errno == EXDEV))
		return fail(e, AGENT_ERROR_UNSUPPORTED_POLICY,
			    al_error_set(&e->err, -EPERM,
					 "policy: \"%s\" is a symbolic link in the policy folder: "
					 "it is not followed",
					 name));
	if (fd < 0)
		return fail(e, AGENT_ERROR_INVALID_REQUEST,
			    al_error_set_errno(&e->err, -errno, "policy: %s/%s", dir, name));
	if (fstat(fd, &st) < 0)
		return fail(e, AGENT_ERROR_SETUP_FAILED,
			    al_error_set_errno(&e->err, -errno, "policy: %s/%s", dir, name));
	if (!S_ISREG(st.st_mode))
		return fail(e, AGENT_ERROR_UNSUPPORTED_POLICY,
			    al_error_set(
				&e->err, -EPERM,
				"policy: \"%s\" in the policy folder is not a regular file", name));
	r = al_read_fd(fd, POLICY_FILE_MAX, ret, ret_len);
	if (r == -EFBIG)
		return fail(e, AGENT_ERROR_INVALID_REQUEST,
			    al_error_set(&e->err, r,
					 "policy: %s/%s: the policy is larger than %d bytes", dir,
					 name, POLICY_FILE_MAX));
	if (r < 0)
		return fail(e, AGENT_ERROR_SETUP_FAILED,
			    al_error_set_errno(&e->err, r, "policy: %s/%s", dir, name));
	return 0;
}

/* The policy as written: the operator's file, a file of its folder, the request's own, or the
 * embedded default. */
static int load_base(struct exec *e, const struct agent_exec_options *o)
{
	const struct agent_request *req = e->req;
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int r;

	if (o->policy_path) {
		r = policy_load_file(o->policy_path, &e->base, &e->err);
	} else if (req->policy_path) {
		r = read_policy_in_dir(e, o->policy_dir, req->policy_path, &text, &len);
		if (r < 0)
			return r;
		r = policy_load_buffer(text, len, &e->base, &e->err);
		if (r < 0)
			al_error_prefix(&e->err, "%s", req->policy_path);
	} else if (req->policy_json) {
		r = policy_load_string(req->policy_json, &e->base, &e->err);
	} else {
		r = policy_new_default(&e->base);
	}
	if (r < 0) {
		al_error_prefix(&e->err, "policy");
		return fail(e,
			    r == -EOPNOTSUPP ? AGENT_ERROR_UNSUPPORTED_POLICY
					     : AGENT_ERROR_INVALID_REQUEST,
			    r);
	}
	return 0;
}

static int load_policy(struct exec *e, const struct agent_exec_options *o)
{
	_cleanup_free_ char *canonical = NULL;
	int r;

	r = request_policy_allowed(e, o);
	if (r >= 0)
		r = load_base(e, o);
	if (r < 0)
		return r;
	/* The launcher checks it again; here it is told apart from a failure. */
	r = policy_check_admitted(
	    e->base, o->admitted_path ? o->admitted_path : LAUNCHER_ADMITTED_DEFAULT, &e->err);
	if (r < 0)
		return fail(e, AGENT_ERROR_UNSUPPORTED_POLICY, r);
	/* The copy the request's parameters go into: the canonical form reads back the same. */
	r = policy_to_canonical_json(e->base, &canonical);
	if (r >= 0)
		r = policy_load_string(canonical, &e->policy, &e->err);
	if (r < 0)
		return fail(e, AGENT_ERROR_SETUP_FAILED, r);
	return 0;
}

static int set_env(struct exec *e, const char *name, const char *value)
{
	_cleanup_free_ char *a = NULL;

	if (asprintf(&a, "%s=%s", name, value) < 0)
		return -ENOMEM;
	return policy_set_env(e->policy, a, &e->err);
}

/* The request's own settings, over the policy's: each checked as the matching flag of `run`,
 * and none above the policy's own limit. */
static int apply_request(struct exec *e, const struct agent_exec_options *o)
{
	const struct agent_request *req = e->req;
	uint64_t limit = e->base->resources.timeout_usec;
	char timeout[32];
	int r = 0;

	if (limit > 0 && req->timeout_usec > limit)
		return fail(e, AGENT_ERROR_UNSUPPORTED_POLICY,
			    al_error_set(&e->err, -EPERM, "timeout: more than the policy's %llu ms",
					 (unsigned long long)(limit / 1000)));

	(void)snprintf(timeout, sizeof(timeout), "%lluus", (unsigned long long)req->timeout_usec);
	r = policy_set_timeout(e->policy, timeout, &e->err);
	if (r >= 0 && req->memory) {
		r = policy_set_memory(e->policy, req->memory, &e->err);
		if (r >= 0 && e->base->resources.memory > 0 &&
		    (e->policy->resources.memory == 0 ||
		     e->policy->resources.memory > e->base->resources.memory))
			return fail(e, AGENT_ERROR_UNSUPPORTED_POLICY,
				    al_error_set(&e->err, -EPERM,
						 "memory: more than the policy's %llu bytes",
						 (unsigned long long)e->base->resources.memory));
	}
	for (size_t i = 0; r >= 0 && i < req->n_env; i++)
		r = set_env(e, req->env[i].name, req->env[i].value);
	if (r >= 0)
		r = set_env(e, "AIRLOCK_RESULT", AGENT_RESULT_PATH);
	if (r >= 0 && req->input)
		r = set_env(e, "AIRLOCK_INPUT", LAUNCHER_FILES_DIR "/" AGENT_INPUT_FILE);
	if (r >= 0 && req->workspace)
		r = policy_set_workspace(e->policy, req->workspace, &e->err);
	else if (r >= 0 && agent_fresh_workspace(req, o, e->base))
		r = make_scratch(e);
	if (r < 0)
		return fail(e, AGENT_ERROR_INVALID_REQUEST, r);
	return 0;
}

int agent_request_stdin(const struct agent_request *req, int *ret)
{
	const char *data = req->stdin_data ? req->stdin_data : req->input;
	size_t len = req->stdin_data ? req->stdin_len : data ? strlen(data) : 0;
	_cleanup_close_ int fd = memfd_create("airlock-stdin", MFD_CLOEXEC);
	int r;

	if (fd < 0)
		return -errno;
	r = al_write_all(fd, data ? data : "", len);
	if (r >= 0 && lseek(fd, 0, SEEK_SET) < 0)
		r = -errno;
	if (r < 0)
		return r;
	*ret = TAKE_FD(fd);
	return 0;
}

static int make_stdin(struct exec *e)
{
	int r = agent_request_stdin(e->req, &e->stdin_fd);

	if (r < 0)
		return fail(e, AGENT_ERROR_SETUP_FAILED,
			    al_error_set_errno(&e->err, r, "Failed to make the program's stdin"));
	return 0;
}

static int prepare(struct exec *e, const struct agent_exec_options *o)
{
	const struct agent_request *req = e->req;
	int r;

	r = load_policy(e, o);
	if (r >= 0)
		r = apply_request(e, o);
	if (r < 0)
		return r;
	r = agent_plan(req, e->policy, LAUNCHER_FILES_DIR, "/tmp", &e->plan, &e->err);
	if (r < 0)
		return fail(e, agent_plan_error_kind(r), r);
	/* The runtime's variables, under the request's and the policy's (which are set by now). */
	for (char **v = e->plan.env; v && *v; v++) {
		_cleanup_free_ char *name = strndup(*v, strcspn(*v, "="));

		if (!name)
			return fail(e, AGENT_ERROR_SETUP_FAILED, -ENOMEM);
		if (!agent_policy_env(e->policy, name)) {
			r = set_env(e, name, strchr(*v, '=') + 1);
			if (r < 0)
				return fail(e, AGENT_ERROR_SETUP_FAILED, r);
		}
	}
	return make_stdin(e);
}

static void exec_done(struct exec *e)
{
	agent_scratch_remove(&e->scratch);
	agent_plan_done(&e->plan);
	e->policy = policy_free(e->policy);
	e->base = policy_free(e->base);
	e->stdin_fd = al_close(e->stdin_fd);
}

int agent_session_policy(const struct agent_request *req, const struct agent_exec_options *o,
			 struct policy **ret, enum agent_error_kind *ret_kind, struct al_error *err)
{
	struct exec e = {.req = req, .stdin_fd = -EBADF, .scratch.lock_fd = -EBADF};
	int r;

	r = load_policy(&e, o);
	if (r >= 0 && req->workspace)
		r = policy_set_workspace(e.policy, req->workspace, &e.err);
	if (r >= 0 && req->memory) {
		r = policy_set_memory(e.policy, req->memory, &e.err);
		if (r >= 0 && e.base->resources.memory > 0 &&
		    (e.policy->resources.memory == 0 ||
		     e.policy->resources.memory > e.base->resources.memory))
			r = fail(&e, AGENT_ERROR_UNSUPPORTED_POLICY,
				 al_error_set(&e.err, -EPERM,
					      "memory: more than the policy's %llu bytes",
					      (unsigned long long)e.base->resources.memory));
	}
	if (r < 0 && e.kind == AGENT_ERROR_NONE)
		e.kind = AGENT_ERROR_INVALID_REQUEST;
	if (r >= 0)
		*ret = TAKE_PTR(e.policy);
	else if (err)
		*err = e.err;
	*ret_kind = e.kind;
	exec_done(&e);
	return r < 0 ? r : 0;
}

int agent_argv_push(char **args, size_t *n, size_t max, const char *a)
{
	if (*n + 2 > max)
		return -E2BIG;
	args[(*n)++] = (char *)a;
	args[*n] = NULL;
	return 0;
}

int agent_exec_options_argv(const struct agent_exec_options *o, char *const *broker_argv,
			    char **args, size_t *n, size_t max)
{
	int r = 0;

	if (o->policy_path)
		r = agent_argv_push(args, n, max, "--policy")
			?: agent_argv_push(args, n, max, o->policy_path);
	if (r >= 0 && o->policy_dir)
		r = agent_argv_push(args, n, max, "--policy-dir")
			?: agent_argv_push(args, n, max, o->policy_dir);
	if (r >= 0 && (o->allow & AGENT_EXEC_ALLOW_REQUEST_POLICY))
		r = agent_argv_push(args, n, max, "--allow-request-policy");
	if (r >= 0 && (o->allow & AGENT_EXEC_ALLOW_REQUEST_WORKSPACE))
		r = agent_argv_push(args, n, max, "--allow-request-workspace");
	if (r >= 0 && o->admitted_path)
		r = agent_argv_push(args, n, max, "--admitted")
			?: agent_argv_push(args, n, max, o->admitted_path);
	if (r >= 0 && o->upstream_ca)
		r = agent_argv_push(args, n, max, "--upstream-ca")
			?: agent_argv_push(args, n, max, o->upstream_ca);
	for (char *const *b = broker_argv; r >= 0 && b && *b; b++)
		r = agent_argv_push(args, n, max, *b);
	return r;
}

int agent_exec(const struct agent_request *req, const struct agent_exec_options *o, FILE *out,
	       struct al_error *err)
{
	struct exec e = {.req = req, .stdin_fd = -EBADF, .scratch.lock_fd = -EBADF};
	struct launcher_result res = {0};
	struct launcher_options lo;
	int r;

	r = prepare(&e, o);
	if (r >= 0) {
		lo = (struct launcher_options){
		    .argv = e.plan.argv,
		    .capture = true,
		    .kill_grace_usec = 1000000,
		    .upstream_ca = o->upstream_ca,
		    .files = e.plan.files,
		    .n_files = e.plan.n_files,
		    .workspace_files = e.plan.workspace_files,
		    .n_workspace_files = req->n_files,
		    .prelude = e.plan.prelude,
		    .result_path = AGENT_RESULT_PATH,
		    .admitted_path = o->admitted_path,
		    .stdin_fd = e.stdin_fd,
		    .base_policy = e.base,
		};
		if (o->broker)
			lo.broker = *o->broker;
		r = launcher_run(e.policy, &lo, &res, &e.err);
		if (r < 0)
			(void)fail(&e,
				   r == -EOPNOTSUPP ? AGENT_ERROR_UNSUPPORTED_POLICY
						    : AGENT_ERROR_SETUP_FAILED,
				   r);
	}
	if (r < 0 && err)
		*err = e.err;
	if (r < 0)
		r = agent_exec_print_error(out, e.kind, e.err.msg);
	else
		r = agent_result_print(out, e.base, &res, agent_result_flags(req));
	launcher_result_done(&res);
	exec_done(&e);
	return r < 0 ? r : (int)e.kind;
}
