#pragma once

/* Internal interfaces of the agent module: for agent/ *.c and tests/unit/agent/ only. */

#include <stddef.h>

#include "agent/agent.h"
#include "launcher/launcher.h"
#include "policy/policy.h"

struct agent_language_info {
	const char *runtimes[4]; /* any one of them, first found first */
	const char *helpers[2];	 /* all of them (rustc's linker) */
	const char *file;	 /* the code's name in LAUNCHER_FILES_DIR */
};

const struct agent_language_info *agent_language_info(enum agent_language l);

/* The sandbox path of the program name on the sandbox's PATH (the policy's PATH, else the
 * launcher's default) as the policy lets the sandbox see it, into ret. -ENOENT when absent. */
int agent_runtime_find(const struct policy *p, const char *name, char *ret, size_t size);

/* The runtime of language l the sandbox of policy p would use (the first of its runtimes present,
 * with its helpers), its sandbox path into rt. -ENOENT (err names what is missing). */
int agent_language_runtime(enum agent_language l, const struct policy *p, char *rt, size_t size,
			   struct al_error *err);

#define AGENT_INPUT_FILE "input.json" /* the request's input, beside its code */

/* How a request runs: the command (and a prelude: rust's compiler), the files for the code's
 * folder (the code, the input; they point into the request) and the request's own files for the
 * workspace. */
struct agent_plan {
	char **argv;
	char **prelude;
	/* NAME=VALUE the runtime needs (Debian's ts-node: NODE_PATH), for what neither the policy
	 * nor the request sets; or NULL. */
	char **env;
	struct launcher_file files[3]; /* the code, its input, a runner of airlock's */
	size_t n_files;
	struct launcher_file *workspace_files; /* as many as the request's files */
};

/* The code goes to code_dir/main.EXT, a compiled program to out_dir. -ENOENT (err names what is
 * missing) when the language's runtime is absent, -EPERM when the policy's executables allow
 * list forbids it. */
int agent_plan(const struct agent_request *req, const struct policy *p, const char *code_dir,
	       const char *out_dir, struct agent_plan *ret, struct al_error *err);
void agent_plan_done(struct agent_plan *plan);
/* The value the policy's env gives name, or NULL. */
const char *agent_policy_env(const struct policy *p, const char *name);
/* The kind of result agent_plan()'s error r is. */
enum agent_error_kind agent_plan_error_kind(int r);

/* Where a request's policy may come from: the operator decides (exec.c). With o->policy_path
 * the request names neither a policy nor a workspace; with o->policy_dir it names only a file of
 * that folder (a plain name), and brings an inline policy or a workspace only when o->allow says
 * so; without either, it is the operator's own request and may bring both. Returns 0, -EPERM
 * (unsupported_policy) or -EINVAL (invalid_request), err naming the field. Pure. */
int agent_policy_source_check(const struct agent_request *req, const struct agent_exec_options *o,
			      struct al_error *err);

/* The program's stdin, a memfd (nothing on disk): the request's stdin, else its input, else
 * nothing. */
int agent_request_stdin(const struct agent_request *req, int *ret);

/* A NULL-terminated vector of strings: appends a copy of s (*n entries so far); frees one. */
int agent_strv_push(char ***v, size_t *n, const char *s);
char **agent_strv_free(char **v);

/* ---- result.c ---- */

#define AGENT_LABEL_SOURCE "src:env:airlock" /* the label every result carries first */

struct json_object;
/* Writes o as one line to out. */
int agent_json_print(FILE *out, struct json_object *o);
/* The fields a request's result has beyond a run's: error, output, and compile_error for rust. */
unsigned agent_result_flags(const struct agent_request *req);
/* The labels: AGENT_LABEL_SOURCE, then the policy's own (p may be NULL). */
struct json_object *agent_labels_json(const struct policy *p);
