#define LOG_MODULE "cli"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/log.h"
#include "common/parse-util.h"
#include "launcher/launcher.h"
#include "mcp/mcp.h"

#define MAX_CALLS_DEFAULT 8
#define MAX_SESSIONS_DEFAULT 8
#define LIMIT_MAX 64

enum {
	ARG_MAX_CALLS = 0x100,
	ARG_MAX_SESSIONS,
};

static struct mcp_options arg_o = {.max_calls = MAX_CALLS_DEFAULT,
				   .max_sessions = MAX_SESSIONS_DEFAULT};
static struct broker_client_options arg_broker;
static char *arg_broker_path;
static char *arg_broker_argv[8];

static void help(void)
{
	printf("Usage: airlock mcp [OPTIONS]\n"
	       "\n"
	       "A Model Context Protocol server on stdin and stdout (JSON-RPC 2.0, one message a\n"
	       "line; logs on stderr) for a coding agent: its tools run code, start sessions,\n"
	       "run commands in them and read, write and list their workspace files. The client\n"
	       "is not trusted: it brings a policy or a workspace only as the options below\n"
	       "allow. See docs/MCP.md.\n"
	       "\n"
	       "Options:\n"
	       "  -p, --policy FILE      The policy of every call and session\n"
	       "      --policy-dir DIR   A call may name a policy file of DIR\n"
	       "      --allow-request-policy     With --policy-dir: a call may bring a policy\n"
	       "                         object (WARNING: the power of a policy file)\n"
	       "      --allow-request-workspace  With --policy-dir: a call may pick any host\n"
	       "                         folder as its workspace (WARNING: as powerful)\n"
	       "      --admitted FILE    The admitted set for policies of tier 3 and up\n"
	       "      --upstream-ca FILE Verify intercepted upstreams against the CAs in FILE\n"
	       "      --broker SOCKET    The credential broker daemon to ask\n"
	       "      --no-broker        Read credentials in this process\n"
	       "      --vault FILE       Without a daemon: the vault\n"
	       "      --key-file FILE    Without a daemon: the vault's key file\n"
	       "      --max-calls N      Tool calls running at once (default %d)\n"
	       "      --max-sessions N   Sessions at once (default %d)\n"
	       "  -h, --help             Print this help\n"
	       "\n"
	       "Without -p or --policy-dir, every call runs under the embedded default policy in\n"
	       "a fresh workspace. The sessions it started end with it.\n",
	       MAX_CALLS_DEFAULT, MAX_SESSIONS_DEFAULT);
}

static int parse_limit(const char *opt, const char *s, unsigned *ret)
{
	char *end;
	unsigned long v = strtoul(s, &end, 10);

	if (!*s || *end || v == 0 || v > LIMIT_MAX)
		return log_error_errno(-EINVAL, "%s: \"%s\" is not a number from 1 to %d", opt, s,
				       LIMIT_MAX);
	*ret = (unsigned)v;
	return 0;
}

/* The broker option just applied, as the children get it. */
static int add_broker_arg(int c, const char *arg, size_t *n)
{
	const char *name = c == CLI_ARG_BROKER	    ? "--broker"
			   : c == CLI_ARG_NO_BROKER ? "--no-broker"
			   : c == CLI_ARG_VAULT	    ? "--vault"
						    : "--key-file";

	if (*n + 3 > ELEMENTSOF(arg_broker_argv))
		return log_error_errno(-E2BIG, "Too many broker options");
	arg_broker_argv[(*n)++] = (char *)name;
	if (c == CLI_ARG_BROKER)
		arg_broker_argv[(*n)++] = arg_broker_path;
	else if (c != CLI_ARG_NO_BROKER)
		arg_broker_argv[(*n)++] = (char *)arg;
	arg_broker_argv[*n] = NULL;
	return 0;
}

static int parse_argv(int argc, char **argv)
{
	static const struct option options[] = {
	    CLI_EXEC_OPTIONS,
	    {"max-calls", required_argument, NULL, ARG_MAX_CALLS},
	    {"max-sessions", required_argument, NULL, ARG_MAX_SESSIONS},
	    CLI_BROKER_OPTIONS,
	    {"help", no_argument, NULL, 'h'},
	    {},
	};
	struct agent_exec_options *e = &arg_o.exec;
	size_t n_broker = 0;
	int c, r;

	while ((c = getopt_long(argc, argv, "hp:", options, NULL)) >= 0) {
		r = cli_broker_option(c, optarg, &arg_broker, &arg_broker_path);
		if (r > 0)
			r = add_broker_arg(c, optarg, &n_broker);
		if (r < 0)
			return r;
		if (r > 0 || (c >= CLI_ARG_BROKER && c <= CLI_ARG_KEY_FILE) ||
		    cli_exec_option(c, optarg, e))
			continue;
		switch (c) {
		case ARG_MAX_CALLS:
			r = parse_limit("--max-calls", optarg, &arg_o.max_calls);
			break;
		case ARG_MAX_SESSIONS:
			r = parse_limit("--max-sessions", optarg, &arg_o.max_sessions);
			break;
		case 'h':
			help();
			return 0;
		default:
			return -EINVAL;
		}
		if (r < 0)
			return r;
	}
	if (optind < argc)
		return log_error_errno(-EINVAL, "Unexpected argument \"%s\"", argv[optind]);
	if (cli_exec_options_check(e) < 0)
		return -EINVAL;
	if (e->policy_path && access(e->policy_path, R_OK) < 0)
		return log_error_errno(-errno, "--policy: %s: %m", e->policy_path);
	arg_o.broker_argv = n_broker ? arg_broker_argv : NULL;
	return 1;
}

int cli_mcp(int argc, char **argv)
{
	int r;

	r = parse_argv(argc, argv);
	if (r <= 0) {
		free(arg_broker_path);
		return r < 0 ? CLI_EXIT_FAILURE : 0;
	}
	r = mcp_server_run(&arg_o);
	free(arg_broker_path);
	if (r < 0)
		return log_error_errno(r, "Failed to serve MCP: %m"), CLI_EXIT_FAILURE;
	return 0;
}
