#pragma once

/* The agent-facing API: an exec request (one JSON object) is parsed into a struct agent_request,
 * run in a fresh sandbox through the launcher, and answered with one JSON result object. Errors
 * are results too, with a kind. Also the capabilities report. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "broker/client.h"
#include "common/error.h"
#include "common/macro.h"

struct policy;
struct launcher_result;

#define AGENT_REQUEST_MAX (16 * 1024 * 1024) /* bytes of one request */
#define AGENT_FILES_MAX 1024		     /* entries of "files" */
#define AGENT_ARGV_MAX 4096		     /* entries of "argv" */
#define AGENT_TIMEOUT_MAX_USEC (24ULL * 3600 * 1000000)
#define AGENT_RESULT_PATH "/tmp/airlock-result.json" /* $AIRLOCK_RESULT in the sandbox */

enum agent_language {
	AGENT_LANGUAGE_COMMAND,
	AGENT_LANGUAGE_PYTHON,
	AGENT_LANGUAGE_JAVASCRIPT,
	AGENT_LANGUAGE_TYPESCRIPT,
	AGENT_LANGUAGE_RUST,
	AGENT_LANGUAGE_SHELL,
	AGENT_LANGUAGE_WASM, /* a WASI (preview 1) module, base64 in "code" */
	AGENT_LANGUAGE_MAX,
};

enum agent_error_kind {
	AGENT_ERROR_NONE,
	AGENT_ERROR_INVALID_REQUEST,
	AGENT_ERROR_UNSUPPORTED_LANGUAGE,
	AGENT_ERROR_UNSUPPORTED_POLICY,
	AGENT_ERROR_SETUP_FAILED,
};

struct agent_file {
	char *path; /* relative to the workspace root, no "." or ".." component */
	char *data;
	size_t len;
	bool executable;
};

struct agent_env_var {
	char *name;
	char *value;
};

struct agent_request {
	enum agent_language language;
	char *code; /* every language but command */
	size_t code_len;
	char **argv; /* NULL-terminated: the command, or the program's arguments */
	size_t argc;
	char *stdin_data; /* NULL: none (the input, if any, is given on stdin instead) */
	size_t stdin_len;
	char *input; /* "input", serialized, or NULL */
	struct agent_env_var *env;
	size_t n_env;
	uint64_t timeout_usec; /* required */
	char *memory;	       /* as written ("512Mi"), checked by the policy; NULL: the policy's */
	struct agent_file *files;
	size_t n_files;
	char *policy_json; /* an inline "policy" object, serialized */
	char *policy_path; /* "policy" as a path */
	char *workspace;   /* host folder; NULL: the policy's, or a fresh one without a policy */
};

/* Parses and checks one request (len bytes, no NUL needed). Unknown fields, wrong types, a
 * missing timeout or code are refused with -EINVAL and err naming the field. */
int agent_request_parse(const char *buf, size_t len, struct agent_request **ret,
			struct al_error *err);
struct agent_request *agent_request_free(struct agent_request *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct agent_request *, agent_request_free);

/* A workspace path: relative, no empty, "." or ".." component. */
bool agent_path_is_relative(const char *p);

const char *agent_language_to_string(enum agent_language l);
int agent_language_from_string(const char *s, enum agent_language *ret);
const char *agent_error_kind_to_string(enum agent_error_kind k);

/* What the operator lets a request bring under policy_dir (its own requests, without policy_dir
 * nor policy_path, may bring both). Each gives the request the power of a policy file. */
enum agent_exec_allow {
	AGENT_EXEC_ALLOW_REQUEST_POLICY = 1u << 0,    /* an inline "policy" object */
	AGENT_EXEC_ALLOW_REQUEST_WORKSPACE = 1u << 1, /* a "workspace" host folder */
};

struct agent_exec_options {
	/* The operator's policy file: requests may then name neither a policy nor a workspace. */
	const char *policy_path;
	/* The folder a request's "policy": "NAME" is looked up in (beneath it only: no link is
	 * followed, only a regular file is read). Requests are then not the operator's own: an
	 * inline policy or a workspace is refused unless allow says otherwise. NULL: requests may
	 * not name policy files (only inline policies, unless policy_path is set). */
	const char *policy_dir;
	unsigned allow;		   /* enum agent_exec_allow: only with policy_dir */
	const char *admitted_path; /* NULL: the launcher's default */
	const char *upstream_ca;
	const struct broker_client_options *broker; /* NULL: the defaults */
};

/* Appends a to args (*n of max used; a NULL kept after them): -E2BIG when it does not fit. The
 * strings are borrowed. */
int agent_argv_push(char **args, size_t *n, size_t max, const char *a);
/* Appends the options of `airlock exec` that give a child airlock o (--policy, --policy-dir,
 * --allow-request-*, --admitted, --upstream-ca), then broker_argv (NULL-terminated, or NULL). */
int agent_exec_options_argv(const struct agent_exec_options *o, char *const *broker_argv,
			    char **args, size_t *n, size_t max);

/* Runs req and writes one JSON result object (a line) to out. Returns the error kind of the
 * result (AGENT_ERROR_NONE when the program ran, whatever its exit code), or -errno when not
 * even a result could be written. When the result is an error, err (may be NULL) gets its
 * message, for the caller's one line on stderr. */
int agent_exec(const struct agent_request *req, const struct agent_exec_options *o, FILE *out,
	       struct al_error *err);
/* A fresh empty workspace folder of this process (scratch.c). */
struct agent_scratch {
	char *path;    /* malloc'd; NULL: none */
	bool in_base;  /* in a shared base folder, removed with its last workspace */
	pid_t watcher; /* the process that removes it if this one is killed, or 0 */
	int lock_fd;   /* its lock file's, locked while this process lives */
};
/* Makes *s, removed by agent_scratch_remove(), or, if this process is killed, by its watcher (or,
 * without one, by the next workspace made). */
int agent_scratch_make(struct agent_scratch *s, struct al_error *err);
/* Removes *s (made, or {.lock_fd = -EBADF}) and stops its watcher. */
void agent_scratch_remove(struct agent_scratch *s);
/* Whether req gets a fresh workspace (agent_scratch_make()) rather than policy p's root: when it
 * names no workspace and either brings no policy of its own under no operator's policy, or is not
 * the operator's (o->policy_dir) and p's root is relative (it would name the working folder of
 * the process that serves it, shared by every caller). */
bool agent_fresh_workspace(const struct agent_request *req, const struct agent_exec_options *o,
			   const struct policy *p);
/* The policy a session for req would have (only its policy, workspace and memory count), as
 * agent_exec() would make it under o, admission checked: 0, or -errno with the error's kind and
 * err. */
int agent_session_policy(const struct agent_request *req, const struct agent_exec_options *o,
			 struct policy **ret, enum agent_error_kind *ret_kind,
			 struct al_error *err);
/* Runs req in persistent session id (launcher_session_exec()) and writes its result, as
 * agent_exec() does. Only command, python, javascript and shell: the code goes on the runtime's
 * command line; policy, workspace, memory and files are the session's. o: NULL for a command's
 * own call. */
struct agent_session_exec_options {
	bool in_thread; /* as launcher_session_exec.in_thread, with cancel_fd */
	int cancel_fd;
};
int agent_session_exec(const char *id, const struct agent_request *req,
		       const struct agent_session_exec_options *o, FILE *out);
/* agent_result_print() for a command of session id: labelled with its policy's labels. */
int agent_session_result_print(FILE *out, const char *id, const struct launcher_result *res,
			       unsigned flags);
struct json_object;
struct launcher_session_info;
struct launcher_session_usage;
/* A session as `session ls --json` lists it: id, pid, owner, started, expires, ttl_left_s,
 * policy_hash, workspace, cpu_usec, memory_bytes, memory_peak_bytes, workspace_bytes,
 * workspace_bytes_partial (null where not known). */
int agent_session_json(const struct launcher_session_info *info,
		       const struct launcher_session_usage *u, struct json_object **ret);
/* Writes the result of a request that could not be parsed. */
int agent_exec_print_error(FILE *out, enum agent_error_kind kind, const char *message);

/* The JSON result of a launcher run, as one line on out: stdout, stderr (with their truncated
 * flags), exit_code, signal, timed_out, oom_killed, duration_ms, policy_hash, violations, labels,
 * and what flags add. */
#define AGENT_RESULT_STEPS 1u	      /* "steps": per-step timings */
#define AGENT_RESULT_ERROR_FIELD 2u   /* "error": null */
#define AGENT_RESULT_OUTPUT_FIELD 4u  /* "output": the result file's JSON */
#define AGENT_RESULT_COMPILE_FIELD 8u /* "compile_error" */
int agent_result_print(FILE *out, const struct policy *p, const struct launcher_result *res,
		       unsigned flags);

/* ---- a session's workspace files (files.c) ----
 *
 * Each goes through the session's workspace filesystem as its sandbox sees it
 * (launcher_session_workspace()): the policy's rules, quota and audit apply as to the sandbox's
 * own accesses. path is relative to the workspace (no "." or ".." component; "" is the
 * workspace itself where a folder is meant); no symbolic link is followed. Errors are -errno
 * with err naming the path. */
#define AGENT_FILE_MAX (64 * 1024 * 1024) /* bytes read or written at once */
#define AGENT_FILE_EXECUTABLE 1u	  /* write: mode 0755 instead of 0644 */
#define AGENT_FILE_PARENTS 2u		  /* write: make the missing folders above it */

int agent_file_read(const char *id, const char *path, char **ret, size_t *ret_len,
		    struct al_error *err);
/* Replaces the file whole (a new file renamed over it, where the rules let one be made beside
 * it; else written in place), synced. */
int agent_file_write(const char *id, const char *path, const void *data, size_t len, unsigned flags,
		     struct al_error *err);
/* {"name", "type" (file, directory, symlink, other), "size", "mode" ("0644"), "mtime" (ISO
 * 8601 UTC)} of path; a folder's entries as an array of those, sorted by name. */
int agent_file_stat(const char *id, const char *path, struct json_object **ret,
		    struct al_error *err);
int agent_file_list(const char *id, const char *path, struct json_object **ret,
		    struct al_error *err);
/* A file, or a folder that is empty. */
int agent_file_remove(const char *id, const char *path, struct al_error *err);

/* Writes the capabilities report (JSON) to out. */
int agent_capabilities_print(FILE *out);
