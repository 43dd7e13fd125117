#define LOG_MODULE "cli"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "cli/cli.h"
#include "common/log.h"
#include "common/parse-util.h"
#include "launcher/launcher.h"
#include "policy/policy.h"

enum {
	ARG_KILL_AFTER = 0x100,
	ARG_AUDIT,
	ARG_JSON,
	ARG_TIMING,
	ARG_RESOLVE,
	ARG_UPSTREAM_CA,
	ARG_ADMITTED,
};

/* Command-line overrides are applied in the order given, after the policy file is loaded. */
struct override {
	int opt;
	const char *arg;
};

static const char *arg_policy;
static bool arg_json;
static bool arg_tty;
static bool arg_timing;
static const char *arg_audit;
static const char *arg_upstream_ca;
static const char *arg_admitted;
static struct broker_client_options arg_broker;
static char *arg_broker_path;
static uint64_t arg_kill_after_usec = 2 * 1000000ULL;
static struct override *arg_overrides;
static size_t arg_n_overrides;

static void help(void)
{
	printf(
	    "Usage: airlock run [OPTIONS] [--] CMD [ARG...]\n"
	    "\n"
	    "Run CMD in a sandbox: new user (when not root), mount, pid, net, ipc, uts and cgroup\n"
	    "namespaces, a read-only root with the host's /usr, the workspace at /workspace,\n"
	    "seccomp, landlock, cgroup limits and a scrubbed environment.\n"
	    "\n"
	    "Options:\n"
	    "  -p, --policy FILE          Policy file (JSON); default: the embedded default\n"
	    "  -w, --workspace DIR        Host folder to mount as the workspace\n"
	    "  -a, --allow HOST[:PORT]    Allow egress to HOST (a name, *.suffix, an address or\n"
	    "                             CIDR); without PORT, 80 and 443 (repeatable)\n"
	    "      --resolve NAME:ADDRESS Pin NAME to ADDRESS (curl's NAME:PORT:ADDRESS too); a\n"
	    "                             loopback or private ADDRESS also needs --allow of it\n"
	    "      --upstream-ca FILE     Verify intercepted upstreams against the CAs in FILE\n"
	    "                             (PEM) instead of the host's store\n"
	    "      --admitted FILE        The admitted set for policies of tier 3 and up\n"
	    "                             (default " LAUNCHER_ADMITTED_DEFAULT ")\n"
	    "  -m, --memory SIZE          Memory limit, e.g. 512Mi, 2Gi\n"
	    "  -T, --timeout DURATION     Wall-clock limit, e.g. 30s, 5m; exit 124 when hit\n"
	    "  -t, --tty                  Give CMD a terminal of its own (a pty of the "
	    "sandbox's),\n"
	    "                             relayed to this one in raw mode; with --json, the\n"
	    "                             transcript is the result's stdout\n"
	    "  -e, --env NAME=VALUE       Set a variable in the sandbox (repeatable)\n"
	    "  -s, --seccomp LEVEL        baseline, restricted or strict\n"
	    "      --kill-after DURATION  Grace between SIGTERM and SIGKILL on timeout (2s)\n"
	    "      --audit FILE           Append audit events (JSON lines) to FILE\n"
	    "      --json                 Capture stdout and stderr (1 MiB each) and print one\n"
	    "                             JSON result object on stdout\n"
	    "      --timing               Report how long each launch step took\n"
	    "      --broker SOCKET        The credential broker daemon to ask (else "
	    "$AIRLOCK_BROKER,\n"
	    "                             else the default socket when a daemon listens there)\n"
	    "      --no-broker            Read credentials in this process, never from a daemon\n"
	    "      --vault FILE           Without a daemon: the vault (else $AIRLOCK_VAULT)\n"
	    "      --key-file FILE        Without a daemon: the vault's 32-byte key file\n"
	    "  -h, --help                 Print this help\n"
	    "\n"
	    "Exit status: the command's own; 128+N when it died of signal N; 124 on timeout;\n"
	    "125 when airlock failed or refused; 126 when CMD cannot be executed; 127 when CMD\n"
	    "is not found.\n");
}

static int override_add(int opt, const char *arg)
{
	struct override *o = reallocarray(arg_overrides, arg_n_overrides + 1, sizeof(*o));

	if (!o)
		return -ENOMEM;
	arg_overrides = o;
	o[arg_n_overrides++] = (struct override){opt, arg};
	return 0;
}

int cli_check_tty_flag(bool tty, const char *first)
{
	uint64_t usec;

	if (tty && al_parse_duration(first, &usec) >= 0)
		return log_error_errno(
		    -EINVAL,
		    "-t asks for a terminal and takes no value; \"%s\" looks like a "
		    "timeout: give it with -T or --timeout",
		    first);
	return 1;
}

static int parse_argv(int argc, char **argv)
{
	static const struct option options[] = {
	    {"policy", required_argument, NULL, 'p'},
	    {"workspace", required_argument, NULL, 'w'},
	    {"allow", required_argument, NULL, 'a'},
	    {"memory", required_argument, NULL, 'm'},
	    {"timeout", required_argument, NULL, 'T'},
	    {"tty", no_argument, NULL, 't'},
	    {"env", required_argument, NULL, 'e'},
	    {"seccomp", required_argument, NULL, 's'},
	    {"kill-after", required_argument, NULL, ARG_KILL_AFTER},
	    {"audit", required_argument, NULL, ARG_AUDIT},
	    {"json", no_argument, NULL, ARG_JSON},
	    {"timing", no_argument, NULL, ARG_TIMING},
	    CLI_BROKER_OPTIONS,
	    {"resolve", required_argument, NULL, ARG_RESOLVE},
	    {"upstream-ca", required_argument, NULL, ARG_UPSTREAM_CA},
	    {"admitted", required_argument, NULL, ARG_ADMITTED},
	    {"help", no_argument, NULL, 'h'},
	    {},
	};
	int c, r;

	while ((c = getopt_long(argc, argv, "+p:w:a:m:T:te:s:h", options, NULL)) >= 0) {
		r = cli_broker_option(c, optarg, &arg_broker, &arg_broker_path);
		if (r < 0)
			return r;
		if (r > 0)
			continue;
		switch (c) {
		case 'p':
			arg_policy = optarg;
			break;
		case 'w':
		case 'a':
		case 'm':
		case 'T':
		case 'e':
		case 's':
		case ARG_RESOLVE:
			if (override_add(c, optarg) < 0)
				return log_error_errno(-ENOMEM, "Out of memory");
			break;
		case ARG_KILL_AFTER:
			if (al_parse_duration(optarg, &arg_kill_after_usec) < 0)
				return log_error_errno(
				    -EINVAL, "--kill-after: \"%s\" is not a duration", optarg);
			break;
		case ARG_AUDIT:
			arg_audit = optarg;
			break;
		case ARG_JSON:
			arg_json = true;
			break;
		case 't':
			arg_tty = true;
			break;
		case ARG_TIMING:
			arg_timing = true;
			break;
		case ARG_UPSTREAM_CA:
			arg_upstream_ca = optarg;
			break;
		case ARG_ADMITTED:
			arg_admitted = optarg;
			break;
		case 'h':
			help();
			return 0;
		default:
			return -EINVAL; /* getopt printed the problem */
		}
	}
	if (optind >= argc)
		return log_error_errno(-EINVAL,
				       "Missing command: airlock run [OPTIONS] -- CMD [ARG...]");
	return cli_check_tty_flag(arg_tty, argv[optind]);
}

static int apply_override(struct policy *p, const struct override *o, struct al_error *err)
{
	switch (o->opt) {
	case 'w':
		return policy_set_workspace(p, o->arg, err);
	case 'a':
		return policy_add_allow(p, o->arg, err);
	case 'm':
		return policy_set_memory(p, o->arg, err);
	case 'T':
		return policy_set_timeout(p, o->arg, err);
	case 'e':
		/* What airlock sets in a sandbox (exec's AIRLOCK_RESULT and AIRLOCK_INPUT) is
		 * its own, as exec's requests are told. */
		if (startswith(o->arg, "AIRLOCK_"))
			return al_error_set(
			    err, -EINVAL, "--env: \"%.*s\": AIRLOCK_* variables are airlock's own",
			    (int)strcspn(o->arg, "="), o->arg);
		return policy_set_env(p, o->arg, err);
	case 's':
		return policy_set_seccomp(p, o->arg, err);
	case ARG_RESOLVE:
		return policy_add_resolve(p, o->arg, err);
	default:
		return -EINVAL;
	}
}

static int load_policy(struct policy **ret)
{
	_cleanup_(policy_freep) struct policy *p = NULL;
	struct al_error err = {0};
	int r;

	if (arg_policy) {
		r = policy_load_file(arg_policy, &p, &err);
		if (r < 0)
			return log_error_errno(r, "%s: %s", arg_policy, err.msg);
	} else {
		r = policy_new_default(&p);
		if (r < 0)
			return log_error_errno(r, "Failed to build the default policy: %m");
	}
	for (size_t i = 0; i < arg_n_overrides; i++) {
		r = apply_override(p, &arg_overrides[i], &err);
		if (r < 0)
			return log_error_errno(r, "%s", err.msg[0] ? err.msg : strerror(-r));
	}
	*ret = TAKE_PTR(p);
	return 0;
}

static void print_timing(const struct launcher_result *res)
{
	char line[512];
	size_t l = 0;

	for (size_t i = 0; i < res->n_steps && l < sizeof(line); i++)
		l += (size_t)snprintf(line + l, sizeof(line) - l, "%s%s=%" PRIu64 "us",
				      i ? " " : "", res->steps[i].name, res->steps[i].usec);
	log_notice("Timing: %s total=%" PRIu64 "us", line, res->duration_usec);
}

static void report_exec_failure(const char *cmd, int exit_code)
{
	if (exit_code == LAUNCHER_EXIT_NOTFOUND)
		log_error("%s: command not found", cmd);
	else
		log_error("%s: cannot execute (permission denied or not an executable)", cmd);
}

int cli_run(int argc, char **argv)
{
	_cleanup_(policy_freep) struct policy *p = NULL;
	struct launcher_result res = {0};
	struct launcher_options opts = {0};
	struct al_error err = {0};
	int r;

	r = parse_argv(argc, argv);
	if (r <= 0)
		return r < 0 ? LAUNCHER_EXIT_FAILED : 0;
	r = load_policy(&p);
	if (r < 0)
		return LAUNCHER_EXIT_FAILED;
	opts = (struct launcher_options){
	    .argv = argv + optind,
	    .capture = arg_json,
	    .kill_grace_usec = arg_kill_after_usec,
	    .audit_path = arg_audit,
	    .timing = arg_timing,
	    .upstream_ca = arg_upstream_ca,
	    .broker = arg_broker,
	    .admitted_path = arg_admitted,
	    .terminal = arg_tty,
	};
	r = launcher_run(p, &opts, &res, &err);
	if (r < 0) {
		log_error_errno(r, "%s", err.msg[0] ? err.msg : strerror(-r));
		return LAUNCHER_EXIT_FAILED;
	}
	if (res.exec_error < 0)
		report_exec_failure(opts.argv[0], res.exit_code);
	if (arg_json) {
		r = agent_result_print(stdout, p, &res, arg_timing ? AGENT_RESULT_STEPS : 0);
		if (r < 0)
			log_error_errno(r, "Failed to print the result: %m");
	} else if (arg_timing) {
		print_timing(&res);
	}
	r = res.exit_code;
	launcher_result_done(&res);
	free(arg_overrides);
	free(arg_broker_path);
	return r;
}
