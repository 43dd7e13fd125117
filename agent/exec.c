/* `airlock exec`: one request, one fresh sandbox, one result. Everything that can be refused is
 * refused before the sandbox is made, each with its kind: a request that does not parse or does
 * not fit the policy (invalid_request), a language whose runtime the sandbox would not find
 * (unsupported_language), a policy this machine cannot enforce or that is not admitted
 * (unsupported_policy). What fails after that is setup_failed. */

#define LOG_MODULE "agent"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <signal.h>
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

#define SCRATCH_PREFIX "airlock-exec-"
#define INPUT_FILE "input.json"

struct exec {
	const struct agent_request *req;
	struct policy *policy; /* with the request's run parameters */
	struct policy *base;   /* as written: its hash is admitted and reported */
	char *scratch;	       /* the fresh workspace airlock made (and removes), or NULL */
	struct agent_plan plan;
	int stdin_fd;
	struct launcher_file files[2];
	size_t n_files;
	enum agent_error_kind kind;
	struct al_error err;
};

int agent_exec_print_error(FILE *out, enum agent_error_kind kind, const char *message)
{
	_cleanup_json_ struct json_object *o = json_object_new_object(), *e = NULL;
	_cleanup_free_ char *text = NULL;
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
	if (r >= 0)
		r = al_json_to_string(o, &text);
	if (r < 0)
		return r;
	if (fprintf(out, "%s\n", text) < 0 || fflush(out) != 0)
		return -EIO;
	return 0;
}

static int fail(struct exec *e, enum agent_error_kind kind, int r)
{
	e->kind = kind;
	if (!e->err.msg[0])
		(void)al_error_set_errno(&e->err, r, "Failed");
	return r;
}

/* The temporary folder of an airlock that is gone (killed before it could remove it)? */
static bool is_stale(const char *name)
{
	long pid = strtol(name + strlen(SCRATCH_PREFIX), NULL, 10);

	return pid > 0 && kill((pid_t)pid, 0) < 0 && errno == ESRCH;
}

static const char *tmp_dir(void)
{
	const char *t = getenv("TMPDIR");

	return t && t[0] == '/' ? t : "/tmp";
}

/* Removes the fresh workspaces of exec runs whose airlock died, as cgroups are. */
static void remove_stale_scratch(void)
{
	DIR *d = opendir(tmp_dir());
	char path[PATH_MAX];

	if (!d)
		return;
	for (struct dirent *de; (de = readdir(d));)
		if (startswith(de->d_name, SCRATCH_PREFIX) && is_stale(de->d_name) &&
		    (size_t)snprintf(path, sizeof(path), "%s/%s", tmp_dir(), de->d_name) <
			sizeof(path))
			al_path_remove_tree(path);
	(void)closedir(d);
}

static int make_scratch(struct exec *e)
{
	int r;

	remove_stale_scratch();
	if (asprintf(&e->scratch, "%s/" SCRATCH_PREFIX "%d-XXXXXX", tmp_dir(), (int)getpid()) < 0)
		return -ENOMEM;
	if (!mkdtemp(e->scratch)) {
		r = -errno;
		free(e->scratch);
		e->scratch = NULL;
		return al_error_set_errno(&e->err, r, "Failed to create a workspace in %s",
					  tmp_dir());
	}
	r = policy_set_workspace(e->policy, e->scratch, &e->err);
	return r;
}

static int load_policy(struct exec *e, const struct agent_exec_options *o)
{
	const struct agent_request *req = e->req;
	_cleanup_free_ char *canonical = NULL;
	int r;

	if (req->policy_json)
		r = policy_load_string(req->policy_json, &e->base, &e->err);
	else if (req->policy_path)
		r = policy_load_file(req->policy_path, &e->base, &e->err);
	else
		r = policy_new_default(&e->base);
	if (r < 0) {
		al_error_prefix(&e->err, "policy");
		return fail(e,
			    r == -EOPNOTSUPP ? AGENT_ERROR_UNSUPPORTED_POLICY
					     : AGENT_ERROR_INVALID_REQUEST,
			    r);
	}
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

/* The request's own settings, over the policy's: each checked as the matching flag of `run`. */
static int apply_request(struct exec *e)
{
	const struct agent_request *req = e->req;
	char timeout[32];
	int r = 0;

	(void)snprintf(timeout, sizeof(timeout), "%lluus", (unsigned long long)req->timeout_usec);
	r = policy_set_timeout(e->policy, timeout, &e->err);
	if (r >= 0 && req->memory)
		r = policy_set_memory(e->policy, req->memory, &e->err);
	for (size_t i = 0; r >= 0 && i < req->n_env; i++)
		r = set_env(e, req->env[i].name, req->env[i].value);
	if (r >= 0)
		r = set_env(e, "AIRLOCK_RESULT", AGENT_RESULT_PATH);
	if (r >= 0 && req->input)
		r = set_env(e, "AIRLOCK_INPUT", LAUNCHER_FILES_DIR "/" INPUT_FILE);
	if (r >= 0 && req->workspace)
		r = policy_set_workspace(e->policy, req->workspace, &e->err);
	else if (r >= 0 && !req->policy_json && !req->policy_path)
		r = make_scratch(e);
	if (r < 0)
		return fail(e, AGENT_ERROR_INVALID_REQUEST, r);
	return 0;
}

/* Creates the folders of path below root, then the file, never through a link. */
static int place_file(int root, const struct agent_file *f, struct al_error *err)
{
	_cleanup_free_ char *dir = strdup(f->path);
	_cleanup_close_ int fd = -EBADF;
	struct open_how how = {
	    .flags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
	    .mode = f->executable ? 0755 : 0644,
	    .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	int r;

	if (!dir)
		return -ENOMEM;
	for (char *s = strchr(dir, '/'); s; s = strchr(s + 1, '/')) {
		*s = '\0';
		if (mkdirat(root, dir, 0755) < 0 && errno != EEXIST)
			return al_error_set_errno(err, -errno, "files: cannot create folder %s",
						  dir);
		*s = '/';
	}
	fd = (int)syscall(SYS_openat2, root, f->path, &how, sizeof(how));
	if (fd < 0)
		return al_error_set_errno(err, -errno, "files: cannot create %s", f->path);
	r = al_write_all(fd, f->data, f->len);
	if (r >= 0 && fsync(fd) < 0)
		r = -errno;
	if (r < 0)
		return al_error_set_errno(err, r, "files: cannot write %s", f->path);
	return 0;
}

static int place_files(struct exec *e)
{
	_cleanup_close_ int root = -EBADF;
	int r;

	if (e->req->n_files == 0)
		return 0;
	root = open(e->policy->workspace.root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return fail(e, AGENT_ERROR_INVALID_REQUEST,
			    al_error_set_errno(&e->err, -errno, "workspace: cannot open %s",
					       e->policy->workspace.root));
	for (size_t i = 0; i < e->req->n_files; i++) {
		r = place_file(root, &e->req->files[i], &e->err);
		if (r < 0)
			return fail(e, AGENT_ERROR_SETUP_FAILED, r);
	}
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
		r = apply_request(e);
	if (r < 0)
		return r;
	r = agent_plan(req, e->policy, &e->plan, &e->err);
	if (r < 0)
		return fail(e,
			    r == -ENOENT  ? AGENT_ERROR_UNSUPPORTED_LANGUAGE
			    : r == -EPERM ? AGENT_ERROR_UNSUPPORTED_POLICY
					  : AGENT_ERROR_SETUP_FAILED,
			    r);
	if (e->plan.file)
		e->files[e->n_files++] =
		    (struct launcher_file){e->plan.file, req->code, req->code_len};
	if (req->input)
		e->files[e->n_files++] =
		    (struct launcher_file){INPUT_FILE, req->input, strlen(req->input)};
	r = place_files(e);
	if (r >= 0)
		r = make_stdin(e);
	return r;
}

static void exec_done(struct exec *e)
{
	if (e->scratch) {
		al_path_remove_tree(e->scratch);
		free(e->scratch);
	}
	agent_plan_done(&e->plan);
	e->policy = policy_free(e->policy);
	e->base = policy_free(e->base);
	e->stdin_fd = al_close(e->stdin_fd);
}

int agent_exec(const struct agent_request *req, const struct agent_exec_options *o, FILE *out)
{
	struct exec e = {.req = req, .stdin_fd = -EBADF};
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
		    .files = e.files,
		    .n_files = e.n_files,
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
	if (r < 0)
		r = agent_exec_print_error(out, e.kind, e.err.msg);
	else
		r = agent_result_print(
		    out, e.base, &res,
		    AGENT_RESULT_ERROR_FIELD | AGENT_RESULT_OUTPUT_FIELD |
			(req->language == AGENT_LANGUAGE_RUST ? AGENT_RESULT_COMPILE_FIELD : 0));
	launcher_result_done(&res);
	exec_done(&e);
	return r < 0 ? r : (int)e.kind;
}
