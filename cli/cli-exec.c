#define LOG_MODULE "cli"

#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "cli/cli.h"
#include "common/fd-util.h"
#include "common/log.h"
#include "launcher/launcher.h"

enum {
	ARG_REQUEST = 0x100,
	ARG_JSON,
};

static const char *arg_request;
static struct agent_exec_options arg_exec; /* all but the broker */
static struct broker_client_options arg_broker;
static char *arg_broker_path;

static void help(void)
{
	printf("Usage: airlock exec [OPTIONS] < REQUEST.json\n"
	       "\n"
	       "Run one request (a JSON object) in a fresh sandbox and print one JSON result.\n"
	       "Request fields: language (command, python, javascript, typescript, rust, shell),\n"
	       "code or argv, timeout (required), stdin, input, env, memory, files, policy,\n"
	       "workspace. See docs/AGENT-API.md.\n"
	       "\n"
	       "Options:\n"
	       "      --request FILE     Read the request from FILE instead of stdin\n"
	       "  -p, --policy FILE      The policy of every request: a request may then name\n"
	       "                         neither a policy nor a workspace\n"
	       "      --policy-dir DIR   Where a request's \"policy\": \"NAME\" is looked up "
	       "(without\n"
	       "                         it, a request may give only an inline policy). A\n"
	       "                         request may then name neither an inline policy nor a\n"
	       "                         workspace, unless allowed by:\n"
	       "      --allow-request-policy     With --policy-dir: a request may bring its own\n"
	       "                         inline policy. WARNING: that gives the request the power\n"
	       "                         of a policy file (host mounts, credential sources that\n"
	       "                         run host commands); admission still applies\n"
	       "      --allow-request-workspace  With --policy-dir: a request may pick any host\n"
	       "                         folder as its (writable) workspace. WARNING: as powerful\n"
	       "                         as writing the policy's workspace.root\n"
	       "      --admitted FILE    The admitted set for policies of tier 3 and up\n"
	       "                         (default " LAUNCHER_ADMITTED_DEFAULT ")\n"
	       "      --upstream-ca FILE Verify intercepted upstreams against the CAs in FILE\n"
	       "      --broker SOCKET    The credential broker daemon to ask\n"
	       "      --no-broker        Read credentials in this process\n"
	       "      --vault FILE       Without a daemon: the vault\n"
	       "      --key-file FILE    Without a daemon: the vault's key file\n"
	       "  -h, --help             Print this help\n"
	       "\n"
	       "Exit status: 0 when the program ran (its own status is in the result), 125 when\n"
	       "the result is an error (its kind and message are in the result).\n");
}

static int parse_argv(int argc, char **argv)
{
	static const struct option options[] = {
	    {"request", required_argument, NULL, ARG_REQUEST},
	    CLI_EXEC_OPTIONS,
	    CLI_BROKER_OPTIONS,
	    {"help", no_argument, NULL, 'h'},
	    {},
	};
	int c, r;

	while ((c = getopt_long(argc, argv, "hp:", options, NULL)) >= 0) {
		r = cli_broker_option(c, optarg, &arg_broker, &arg_broker_path);
		if (r < 0)
			return r;
		if (r > 0 || cli_exec_option(c, optarg, &arg_exec))
			continue;
		switch (c) {
		case ARG_REQUEST:
			arg_request = optarg;
			break;
		case 'h':
			help();
			return 0;
		default:
			return -EINVAL;
		}
	}
	if (optind < argc)
		return log_error_errno(-EINVAL, "Unexpected argument \"%s\"; the request is JSON",
				       argv[optind]);
	if (cli_exec_options_check(&arg_exec) < 0)
		return -EINVAL;
	return 1;
}

bool cli_exec_option(int c, const char *arg, struct agent_exec_options *o)
{
	switch (c) {
	case 'p':
		o->policy_path = arg;
		return true;
	case CLI_ARG_POLICY_DIR:
		o->policy_dir = arg;
		return true;
	case CLI_ARG_ALLOW_REQUEST_POLICY:
		o->allow |= AGENT_EXEC_ALLOW_REQUEST_POLICY;
		return true;
	case CLI_ARG_ALLOW_REQUEST_WORKSPACE:
		o->allow |= AGENT_EXEC_ALLOW_REQUEST_WORKSPACE;
		return true;
	case CLI_ARG_ADMITTED:
		o->admitted_path = arg;
		return true;
	case CLI_ARG_UPSTREAM_CA:
		o->upstream_ca = arg;
		return true;
	default:
		return false;
	}
}

int cli_exec_options_check(const struct agent_exec_options *o)
{
	/* Without --policy-dir they would mean nothing: with --policy nothing is the request's,
	 * without either everything is (the operator's own requests). */
	if (o->allow && !o->policy_dir)
		return log_error_errno(-EINVAL, "--allow-request-policy and "
						"--allow-request-workspace go with --policy-dir");
	if (o->policy_path && o->policy_dir)
		return log_error_errno(-EINVAL, "--policy and --policy-dir exclude each other");
	return 0;
}

static int read_request(const char *path, char **ret, size_t *ret_len, struct al_error *err)
{
	_cleanup_close_ int fd = -EBADF;
	int r;

	if (path && !streq(path, "-")) {
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
		if (fd < 0)
			return al_error_set_errno(err, -errno, "--request: %s", path);
	} else if (isatty(STDIN_FILENO)) {
		return al_error_set(err, -EINVAL,
				    "No request: give it on stdin or with --request FILE");
	}
	r = al_read_fd(fd >= 0 ? fd : STDIN_FILENO, AGENT_REQUEST_MAX, ret, ret_len);
	if (r == -EFBIG)
		return al_error_set(err, r, "The request is larger than %d bytes",
				    AGENT_REQUEST_MAX);
	if (r < 0)
		return al_error_set_errno(err, r, "Failed to read the request");
	return 0;
}

int cli_read_request(const char *path, struct agent_request **ret)
{
	_cleanup_free_ char *buf = NULL;
	struct al_error err = {0};
	size_t len = 0;
	int r;

	r = read_request(path, &buf, &len, &err);
	if (r >= 0)
		r = agent_request_parse(buf, len, ret, &err);
	if (r < 0) {
		log_error("%s", err.msg);
		(void)agent_exec_print_error(stdout, AGENT_ERROR_INVALID_REQUEST, err.msg);
	}
	return r;
}

int cli_exec(int argc, char **argv)
{
	_cleanup_(agent_request_freep) struct agent_request *req = NULL;
	struct agent_exec_options o;
	struct al_error err = {0};
	int r;

	r = parse_argv(argc, argv);
	if (r <= 0)
		return r < 0 ? LAUNCHER_EXIT_FAILED : 0;
	if (cli_read_request(arg_request, &req) < 0)
		return LAUNCHER_EXIT_FAILED;
	o = (struct agent_exec_options){
	    .policy_path = arg_exec.policy_path,
	    .policy_dir = arg_exec.policy_dir,
	    .allow = arg_exec.allow,
	    .admitted_path = arg_exec.admitted_path,
	    .upstream_ca = arg_exec.upstream_ca,
	    .broker = &arg_broker,
	};
	r = agent_exec(req, &o, stdout, &err);
	free(arg_broker_path);
	if (r < 0)
		return log_error_errno(r, "Failed to write the result: %m"), LAUNCHER_EXIT_FAILED;
	/* Every error kind has its line on stderr too, as a refused request has (the result on
	 * stdout says the same, with the kind). */
	if (r != AGENT_ERROR_NONE)
		log_error("%s", err.msg[0] ? err.msg : agent_error_kind_to_string(r));
	return r == AGENT_ERROR_NONE ? 0 : LAUNCHER_EXIT_FAILED;
}

int cli_capabilities(int argc, char **argv)
{
	static const struct option options[] = {
	    {"json", no_argument, NULL, ARG_JSON},
	    {"help", no_argument, NULL, 'h'},
	    {},
	};
	int c, r;

	while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
		if (c == 'h') {
			printf("Usage: airlock capabilities [--json]\n"
			       "\n"
			       "Print what this machine can enforce (JSON), and which languages\n"
			       "airlock exec can run.\n");
			return 0;
		}
		if (c != ARG_JSON)
			return CLI_EXIT_FAILURE;
	}
	r = agent_capabilities_print(stdout);
	if (r < 0)
		return log_error_errno(r, "Failed to print the capabilities: %m"), CLI_EXIT_FAILURE;
	return 0;
}
