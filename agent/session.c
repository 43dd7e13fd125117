/* A JSON request run in a persistent session (`airlock session exec ID --request FILE`): the same
 * request and result as `airlock exec`, but the sandbox, its policy and its workspace are the
 * session's. The code is given on the runtime's command line (python3 -c, node -e, sh -c). */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent-internal.h"
#include "common/fd-util.h"

#define ARG_MAX_ONE (128 * 1024) /* MAX_ARG_STRLEN: the kernel's limit on one argument */

/* The command line of req in a session, or an error kind with err filled. */
static int session_argv(const struct agent_request *req, char ***ret, struct al_error *err)
{
	static const char *const runner[][2] = {
	    [AGENT_LANGUAGE_PYTHON] = {"python3", "-c"},
	    [AGENT_LANGUAGE_JAVASCRIPT] = {"node", "-e"},
	    [AGENT_LANGUAGE_SHELL] = {"sh", "-c"},
	};
	char **v = NULL;
	size_t n = 0;
	int r = 0;

	if (req->policy_json || req->policy_path || req->workspace || req->memory ||
	    req->n_files > 0)
		return al_error_set(err, -EINVAL,
				    "policy, workspace, memory and files are the session's: not in "
				    "a request to a session"),
		       AGENT_ERROR_INVALID_REQUEST;
	if (req->language == AGENT_LANGUAGE_RUST || req->language == AGENT_LANGUAGE_TYPESCRIPT)
		return al_error_set(err, -EOPNOTSUPP,
				    "%s runs through airlock exec only, not in a session",
				    agent_language_to_string(req->language)),
		       AGENT_ERROR_UNSUPPORTED_LANGUAGE;
	if (req->language != AGENT_LANGUAGE_COMMAND) {
		if (req->code_len >= ARG_MAX_ONE)
			return al_error_set(err, -E2BIG, "code: at most %d bytes in a session",
					    ARG_MAX_ONE - 1),
			       AGENT_ERROR_INVALID_REQUEST;
		r = agent_strv_push(&v, &n, runner[req->language][0]);
		if (r >= 0)
			r = agent_strv_push(&v, &n, runner[req->language][1]);
		if (r >= 0)
			r = agent_strv_push(&v, &n, req->code);
		/* sh -c takes $0 first */
		if (r >= 0 && req->language == AGENT_LANGUAGE_SHELL)
			r = agent_strv_push(&v, &n, "sh");
	}
	for (size_t i = 0; r >= 0 && i < req->argc; i++)
		r = agent_strv_push(&v, &n, req->argv[i]);
	if (r < 0) {
		agent_strv_free(v);
		return r;
	}
	*ret = v;
	return AGENT_ERROR_NONE;
}

static int make_env(const struct agent_request *req, const char *result_path, char ***ret)
{
	char **v = NULL, *a = NULL;
	size_t n = 0;
	int r = 0;

	for (size_t i = 0; r >= 0 && i <= req->n_env; i++) {
		if (i < req->n_env)
			r = asprintf(&a, "%s=%s", req->env[i].name, req->env[i].value);
		else
			r = asprintf(&a, "AIRLOCK_RESULT=%s", result_path);
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
	struct launcher_session_info info = {0};
	char *items[64];
	struct policy labels_only = {.labels = {.items = items}};

	/* The session's policy's labels, as its info file lists them. */
	if (launcher_session_info_of(id, &info, NULL) >= 0)
		for (char *p = strtok(info.labels, " ");
		     p && labels_only.labels.n < ELEMENTSOF(items); p = strtok(NULL, " "))
			items[labels_only.labels.n++] = p;
	return agent_result_print(out, &labels_only, res, flags);
}

int agent_session_exec(const char *id, const struct agent_request *req, FILE *out)
{
	char **argv = NULL, **env = NULL, result_path[64];
	struct launcher_result res = {0};
	struct al_error err = {0};
	_cleanup_close_ int in = -EBADF;
	uint32_t rnd = 0;
	int kind, r;

	kind = session_argv(req, &argv, &err);
	if (kind < 0)
		return kind;
	if (kind != AGENT_ERROR_NONE)
		return agent_exec_print_error(out, (enum agent_error_kind)kind, err.msg) < 0 ? -EIO
											     : kind;
	/* Each command its own result file: several may run at once. */
	if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd))
		rnd = (uint32_t)getpid() ^ (uint32_t)time(NULL);
	(void)snprintf(result_path, sizeof(result_path), "/tmp/airlock-result-%08x.json", rnd);
	r = make_env(req, result_path, &env);
	if (r >= 0)
		r = agent_request_stdin(req, &in);
	if (r >= 0) {
		struct launcher_session_exec x = {
		    .argv = argv,
		    .env = env,
		    .stdin_fd = in,
		    .timeout_usec = req->timeout_usec,
		    .kill_grace_usec = 1000000,
		    .result_path = result_path,
		    .capture = true,
		};

		r = launcher_session_exec(id, &x, &res, &err);
		kind = r == -ENOENT || r == -EINVAL ? AGENT_ERROR_INVALID_REQUEST
		       : r < 0			    ? AGENT_ERROR_SETUP_FAILED
		       : res.exec_error == -ENOENT && req->language != AGENT_LANGUAGE_COMMAND
			   ? AGENT_ERROR_UNSUPPORTED_LANGUAGE
			   : AGENT_ERROR_NONE;
		if (kind == AGENT_ERROR_UNSUPPORTED_LANGUAGE)
			(void)al_error_set(&err, -ENOENT,
					   "%s needs %s on the session's PATH; it is not there",
					   agent_language_to_string(req->language), argv[0]);
	} else {
		(void)al_error_set_errno(&err, r, "Failed to prepare the command");
		kind = AGENT_ERROR_SETUP_FAILED;
	}
	agent_strv_free(argv);
	agent_strv_free(env);
	if (kind != AGENT_ERROR_NONE)
		r = agent_exec_print_error(out, (enum agent_error_kind)kind, err.msg);
	else
		r = agent_session_result_print(
		    out, id, &res, AGENT_RESULT_ERROR_FIELD | AGENT_RESULT_OUTPUT_FIELD);
	launcher_result_done(&res);
	return r < 0 ? r : kind;
}
