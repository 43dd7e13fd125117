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

/* How a request runs: the command (and a prelude: rust's compiler), and the file its code goes
 * to (NULL for command). */
struct agent_plan {
	char **argv;
	char **prelude;
	const char *file;
};

/* The code goes to code_dir/main.EXT, a compiled program to out_dir. -ENOENT (err names what is
 * missing) when the language's runtime is absent, -EPERM when the policy's executables allow
 * list forbids it. */
int agent_plan(const struct agent_request *req, const struct policy *p, const char *code_dir,
	       const char *out_dir, struct agent_plan *ret, struct al_error *err);
void agent_plan_done(struct agent_plan *plan);

/* The program's stdin, a memfd (nothing on disk): the request's stdin, else its input, else
 * nothing. */
int agent_request_stdin(const struct agent_request *req, int *ret);

/* A NULL-terminated vector of strings: appends a copy of s (*n entries so far); frees one. */
int agent_strv_push(char ***v, size_t *n, const char *s);
char **agent_strv_free(char **v);

/* ---- result.c ---- */

#define AGENT_LABEL_SOURCE "src:env:airlock" /* the label every result carries first */

struct json_object;
/* The labels: AGENT_LABEL_SOURCE, then the policy's own (p may be NULL). */
struct json_object *agent_labels_json(const struct policy *p);
