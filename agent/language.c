/* The languages of exec requests: which runtime each needs, where the sandbox would find it, and
 * the command (and, for a compiled language, the prelude) that runs the request's code. A runtime
 * is looked for as the sandbox will see it: on the sandbox's PATH, through what the policy makes
 * visible (the host's /usr, /bin, /sbin and /lib*, or the image, plus the policy's mounts), so a
 * program found only in a host folder the sandbox does not see (~/.cargo/bin) is not "present". */

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent-internal.h"
#include "common/path-util.h"
#include "launcher/launcher.h"

static const struct agent_language_info languages[AGENT_LANGUAGE_MAX] = {
    [AGENT_LANGUAGE_COMMAND] = {.file = NULL},
    [AGENT_LANGUAGE_PYTHON] = {.runtimes = {"python3"}, .file = "main.py"},
    [AGENT_LANGUAGE_JAVASCRIPT] = {.runtimes = {"node", "nodejs"}, .file = "main.js"},
    [AGENT_LANGUAGE_TYPESCRIPT] = {.runtimes = {"tsx", "ts-node", "bun", "deno"},
				   .file = "main.ts"},
    [AGENT_LANGUAGE_RUST] = {.runtimes = {"rustc"}, .helpers = {"cc"}, .file = "main.rs"},
    [AGENT_LANGUAGE_SHELL] = {.runtimes = {"sh"}, .file = "main.sh"},
    [AGENT_LANGUAGE_WASM] = {.runtimes = {"node", "nodejs"}, .file = "main.wasm"},
};

/* A WASI (preview 1) module runs in node's WASI, in the same sandbox as any command (its limits
 * are the sandbox's: the memory it grows is node's, in the sandbox's cgroup): this runner, beside
 * the module (.cjs: CommonJS whatever a package.json above says), instantiates it with the
 * request's argv as its arguments (after its own name), the environment, /workspace and /tmp as its
 * folders, and exits with its exit code. Node calls WASI experimental and says so on stderr, which
 * is the module's: that warning is dropped. */
#define WASM_RUNNER "wasi-run.cjs"
static const char wasm_runner[] = "'use strict';\n"
				  "process.removeAllListeners('warning');\n"
				  "const fs = require('fs');\n"
				  "const { WASI } = require('wasi');\n"
				  "const file = process.argv[2];\n"
				  "const preopens = {};\n"
				  "for (const d of ['/workspace', '/tmp'])\n"
				  "  if (fs.existsSync(d)) preopens[d] = d;\n"
				  "const wasi = new WASI({\n"
				  "  version: 'preview1',\n"
				  "  args: ['main.wasm', ...process.argv.slice(3)],\n"
				  "  env: process.env,\n"
				  "  preopens,\n"
				  "  returnOnExit: true,\n"
				  "});\n"
				  "const wasm = new WebAssembly.Module(fs.readFileSync(file));\n"
				  "const imports = wasi.getImportObject ? wasi.getImportObject()\n"
				  "  : { wasi_snapshot_preview1: wasi.wasiImport };\n"
				  "const instance = new WebAssembly.Instance(wasm, imports);\n"
				  "process.exitCode = wasi.start(instance) ?? 0;\n";

const struct agent_language_info *agent_language_info(enum agent_language l)
{
	return l < AGENT_LANGUAGE_MAX ? &languages[l] : NULL;
}

static bool is_system_path(const char *path)
{
	static const char *const trees[] = {"/usr",   "/bin",	"/sbin",  "/lib",
					    "/lib32", "/lib64", "/libx32"};

	for (size_t i = 0; i < ELEMENTSOF(trees); i++)
		if (al_path_is_within(path, trees[i]))
			return true;
	return false;
}

/* Where the sandbox's sandbox_path is on the host, or false when the sandbox does not see the host
 * there. */
static bool host_path(const struct policy *p, const char *sandbox_path, char *buf, size_t size)
{
	for (size_t i = p->n_mounts; i-- > 0;) {
		const struct policy_mount *m = &p->mounts[i];

		if (al_path_is_within(sandbox_path, m->target))
			return (size_t)snprintf(buf, size, "%s%s", m->source,
						sandbox_path + strlen(m->target)) < size;
	}
	if (p->image)
		return (size_t)snprintf(buf, size, "%s%s", p->image, sandbox_path) < size;
	return is_system_path(sandbox_path) &&
	       (size_t)snprintf(buf, size, "%s", sandbox_path) < size;
}

/* Whether a canonical host path is one the sandbox sees (what a symbolic link led to). */
static bool is_visible(const struct policy *p, const char *real)
{
	for (size_t i = 0; i < p->n_mounts; i++)
		if (al_path_is_within(real, p->mounts[i].source))
			return true;
	return p->image ? al_path_is_within(real, p->image) : is_system_path(real);
}

const char *agent_policy_env(const struct policy *p, const char *name)
{
	for (size_t i = 0; i < p->n_env; i++)
		if (streq(p->env[i].name, name))
			return p->env[i].value;
	return NULL;
}

static const char *sandbox_path_env(const struct policy *p)
{
	const char *path = agent_policy_env(p, "PATH");

	return path ? path : LAUNCHER_DEFAULT_PATH;
}

int agent_runtime_find(const struct policy *p, const char *name, char *ret, size_t size)
{
	const char *path = sandbox_path_env(p);

	for (const char *d = path; *d;) {
		size_t n = strcspn(d, ":");
		char sandbox[PATH_MAX], host[PATH_MAX], real[PATH_MAX];
		struct stat st;

		if (n > 0 && d[0] == '/' &&
		    (size_t)snprintf(sandbox, sizeof(sandbox), "%.*s/%s", (int)n, d, name) <
			sizeof(sandbox) &&
		    host_path(p, sandbox, host, sizeof(host)) && realpath(host, real) &&
		    is_visible(p, real) && stat(real, &st) == 0 && S_ISREG(st.st_mode) &&
		    (st.st_mode & 0111) && strlen(sandbox) < size) {
			memcpy(ret, sandbox, strlen(sandbox) + 1);
			return 0;
		}
		d += n;
		d += *d == ':';
	}
	return -ENOENT;
}

static bool is_listed(const struct policy *p, const char *sandbox_path)
{
	for (size_t i = 0; i < p->executables.n; i++)
		if (streq(p->executables.items[i], sandbox_path))
			return true;
	return false;
}

int agent_strv_push(char ***v, size_t *n, const char *s)
{
	char **nv = reallocarray(*v, *n + 2, sizeof(**v));

	if (!nv)
		return -ENOMEM;
	*v = nv;
	nv[*n] = strdup(s);
	if (!nv[*n])
		return -ENOMEM;
	nv[++*n] = NULL;
	return 0;
}

/* The runtime's command line before the file: tsx/ts-node run a file (ts-node without its
 * type check, as tsx, bun and deno run typescript); bun and deno "run" it. */
static int push_runner(char ***v, size_t *n, const char *runtime)
{
	const char *base = strrchr(runtime, '/') ? strrchr(runtime, '/') + 1 : runtime;
	int r;

	r = agent_strv_push(v, n, runtime);
	if (r >= 0 && streq(base, "ts-node"))
		r = agent_strv_push(v, n, "--transpile-only");
	if (r >= 0 && (streq(base, "bun") || streq(base, "deno")))
		r = agent_strv_push(v, n, "run");
	/* Deno's own permission prompts would stop a non-interactive run; airlock confines it. */
	if (r >= 0 && streq(base, "deno"))
		r = agent_strv_push(v, n, "--allow-all");
	return r;
}

char **agent_strv_free(char **v)
{
	for (char **p = v; p && *p; p++)
		free(*p);
	free(v);
	return NULL;
}

/* Debian installs node packages in /usr/share/nodejs, which its own node searches and another
 * (NodeSource's, nvm's) does not: a runner from there gets NODE_PATH to find its modules. */
#define DEBIAN_NODE_MODULES "/usr/share/nodejs"

static int plan_runner_env(const struct policy *p, const char *runtime, struct agent_plan *plan)
{
	char host[PATH_MAX], real[PATH_MAX];
	size_t n = 0;

	if (!host_path(p, runtime, host, sizeof(host)) || !realpath(host, real) ||
	    !al_path_is_within(real, DEBIAN_NODE_MODULES) || p->image)
		return 0;
	return agent_strv_push(&plan->env, &n, "NODE_PATH=" DEBIAN_NODE_MODULES);
}

void agent_plan_done(struct agent_plan *plan)
{
	agent_strv_free(plan->argv);
	agent_strv_free(plan->prelude);
	agent_strv_free(plan->env);
	free(plan->workspace_files);
	*plan = (struct agent_plan){0};
}

int agent_language_runtime(enum agent_language l, const struct policy *p, char *rt, size_t size,
			   struct al_error *err)
{
	const struct agent_language_info *info = &languages[l];
	char missing[256] = "", helper[PATH_MAX];
	size_t m = 0, i;

	for (i = 0; i < ELEMENTSOF(info->runtimes) && info->runtimes[i]; i++) {
		if (agent_runtime_find(p, info->runtimes[i], rt, size) >= 0)
			break;
		m += (size_t)snprintf(missing + MIN(m, sizeof(missing) - 1),
				      sizeof(missing) - MIN(m, sizeof(missing) - 1), "%s%s",
				      i ? ", " : "", info->runtimes[i]);
	}
	if (i == ELEMENTSOF(info->runtimes) || !info->runtimes[i])
		return al_error_set(
		    err, -ENOENT,
		    "%s needs %s%s on the sandbox's PATH (%s), as the sandbox sees it; none "
		    "is there",
		    agent_language_to_string(l), strchr(missing, ',') ? "one of " : "", missing,
		    sandbox_path_env(p));
	for (i = 0; i < ELEMENTSOF(info->helpers) && info->helpers[i]; i++)
		if (agent_runtime_find(p, info->helpers[i], helper, sizeof(helper)) < 0)
			return al_error_set(err, -ENOENT,
					    "%s needs %s (the linker) on the sandbox's PATH, as "
					    "the sandbox sees it; it is not there",
					    agent_language_to_string(l), info->helpers[i]);
	return 0;
}

static const char *const rust_flags[] = {"--edition", "2021", "-o"};

/* The runtime's part of the command line (and rust's compiler as the prelude). */
static int plan_runtime(const struct agent_request *req, const struct policy *p,
			const char *code_dir, const char *out_dir, struct agent_plan *plan,
			size_t *n, struct al_error *err)
{
	const struct agent_language_info *info = &languages[req->language];
	char rt[PATH_MAX], file[PATH_MAX], binary[PATH_MAX];
	size_t np = 0;
	int r;

	r = agent_language_runtime(req->language, p, rt, sizeof(rt), err);
	if (r < 0)
		return r;
	if (p->executables.n > 0 && (!is_listed(p, rt) || req->language == AGENT_LANGUAGE_RUST))
		return al_error_set(
		    err, -EPERM, "executables: the policy's allow list does not let %s run%s",
		    agent_language_to_string(req->language),
		    req->language == AGENT_LANGUAGE_RUST ? " (it runs the program it compiles)"
							 : "");
	(void)snprintf(file, sizeof(file), "%s/%s", code_dir, info->file);
	(void)snprintf(binary, sizeof(binary), "%s/airlock-main", out_dir);
	if (req->language == AGENT_LANGUAGE_WASM) {
		/* node --experimental-wasi-unstable-preview1 RUNNER MODULE [ARG...]: Debian 12's
		 * node 18 needs the flag, later ones accept it. */
		char runner[PATH_MAX];

		(void)snprintf(runner, sizeof(runner), "%s/" WASM_RUNNER, code_dir);
		r = agent_strv_push(&plan->argv, n, rt);
		if (r >= 0)
			r = agent_strv_push(&plan->argv, n,
					    "--experimental-wasi-unstable-preview1");
		if (r >= 0)
			r = agent_strv_push(&plan->argv, n, runner);
		return r < 0 ? r : agent_strv_push(&plan->argv, n, file);
	}
	if (req->language != AGENT_LANGUAGE_RUST) {
		r = push_runner(&plan->argv, n, rt);
		if (r >= 0 && req->language == AGENT_LANGUAGE_TYPESCRIPT)
			r = plan_runner_env(p, rt, plan);
		return r < 0 ? r : agent_strv_push(&plan->argv, n, file);
	}
	/* rustc --edition 2021 -o BINARY FILE */
	r = agent_strv_push(&plan->prelude, &np, rt);
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(rust_flags); i++)
		r = agent_strv_push(&plan->prelude, &np, rust_flags[i]);
	if (r >= 0)
		r = agent_strv_push(&plan->prelude, &np, binary);
	if (r >= 0)
		r = agent_strv_push(&plan->prelude, &np, file);
	return r < 0 ? r : agent_strv_push(&plan->argv, n, binary);
}

/* The files the request brings: its code and input (for code_dir), its own (for the
 * workspace). */
static int plan_files(const struct agent_request *req, struct agent_plan *plan)
{
	const char *name = languages[req->language].file;

	if (name)
		plan->files[plan->n_files++] =
		    (struct launcher_file){name, req->code, req->code_len};
	if (req->input)
		plan->files[plan->n_files++] =
		    (struct launcher_file){AGENT_INPUT_FILE, req->input, strlen(req->input)};
	if (req->language == AGENT_LANGUAGE_WASM)
		plan->files[plan->n_files++] =
		    (struct launcher_file){WASM_RUNNER, wasm_runner, sizeof(wasm_runner) - 1};
	if (req->n_files == 0)
		return 0;
	plan->workspace_files = calloc(req->n_files, sizeof(*plan->workspace_files));
	if (!plan->workspace_files)
		return -ENOMEM;
	for (size_t i = 0; i < req->n_files; i++)
		plan->workspace_files[i] =
		    (struct launcher_file){req->files[i].path, req->files[i].data,
					   req->files[i].len, req->files[i].executable};
	return 0;
}

int agent_plan(const struct agent_request *req, const struct policy *p, const char *code_dir,
	       const char *out_dir, struct agent_plan *ret, struct al_error *err)
{
	struct agent_plan plan = {0};
	size_t n = 0;
	int r = 0;

	if (req->language != AGENT_LANGUAGE_COMMAND)
		r = plan_runtime(req, p, code_dir, out_dir, &plan, &n, err);
	for (size_t i = 0; r >= 0 && i < req->argc; i++)
		r = agent_strv_push(&plan.argv, &n, req->argv[i]);
	if (r >= 0)
		r = plan_files(req, &plan);
	if (r < 0) {
		agent_plan_done(&plan);
		return r;
	}
	*ret = plan;
	return 0;
}

enum agent_error_kind agent_plan_error_kind(int r)
{
	return r == -ENOENT  ? AGENT_ERROR_UNSUPPORTED_LANGUAGE
	       : r == -EPERM ? AGENT_ERROR_UNSUPPORTED_POLICY
			     : AGENT_ERROR_SETUP_FAILED;
}
