#define LOG_MODULE "cli"

#include <getopt.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/log.h"
#include "common/parse-util.h"
#include "launcher/launcher.h"
#include "serve/serve.h"

enum {
	ARG_SOCKET = 0x100,
	ARG_LISTEN,
	ARG_TOKEN_FILE,
	ARG_ALLOW_UID,
	ARG_MAX_REQUEST,
	ARG_MAX_STREAMS,
	ARG_MAX_SESSIONS,
};

static void help(void)
{
	printf("Usage: airlock serve [OPTIONS]\n"
	       "\n"
	       "Serve the agent API (exec, sessions, processes, files; docs/API.md) over\n"
	       "HTTP/1.1 until SIGINT or SIGTERM, then stop the sessions it started.\n"
	       "\n"
	       "Options:\n"
	       "      --socket PATH      The Unix socket (mode 0600; default\n"
	       "                         /run/airlock/serve.sock for root, else\n"
	       "                         $XDG_RUNTIME_DIR/airlock/serve.sock)\n"
	       "      --allow-uid UID    Also serve this user (a name or number; repeatable):\n"
	       "                         granted the socket by an ACL, checked by SO_PEERCRED\n"
	       "      --listen HOST:PORT Also serve TCP, with --token-file\n"
	       "      --token-file FILE  The bearer token TCP clients must send (mode 0600)\n"
	       "  -p, --policy FILE      The policy of every exec and session\n"
	       "      --policy-dir DIR   Where a request's \"policy\": \"NAME\" is looked up\n"
	       "      --allow-request-policy, --allow-request-workspace\n"
	       "                         As for airlock exec\n"
	       "      --admitted FILE    The admitted set for policies of tier 3 and up\n"
	       "      --upstream-ca FILE Verify intercepted upstreams against FILE's CAs\n"
	       "      --broker SOCKET, --no-broker, --vault FILE, --key-file FILE\n"
	       "                         Where credentials come from, as for airlock exec\n"
	       "      --max-request SIZE A request body's limit (default 16Mi; file content:\n"
	       "                         64Mi)\n"
	       "      --max-streams N    Execs and output streams at once per client (32)\n"
	       "      --max-sessions N   Sessions per client (16)\n"
	       "  -h, --help             Print this help\n"
	       "\n"
	       "With --listen or --allow-uid, --policy or --policy-dir is required: other\n"
	       "clients may not name any policy or host folder.\n");
}

static int parse_uid(const char *s, uid_t *ret)
{
	struct passwd *pw;
	char *end = NULL;
	unsigned long v = strtoul(s, &end, 10);

	if (*s && end && *end == '\0' && v < UINT32_MAX) {
		*ret = (uid_t)v;
		return 0;
	}
	pw = getpwnam(s);
	if (!pw)
		return -ENOENT;
	*ret = pw->pw_uid;
	return 0;
}

static int parse_count(const char *name, const char *s, unsigned *ret)
{
	char *end = NULL;
	unsigned long v = strtoul(s, &end, 10);

	if (!*s || *end || v == 0 || v > 100000)
		return log_error_errno(-EINVAL, "%s: \"%s\" is not a number from 1 to 100000", name,
				       s);
	*ret = (unsigned)v;
	return 0;
}

int cli_serve(int argc, char **argv)
{
	static const struct option options[] = {
	    {"socket", required_argument, NULL, ARG_SOCKET},
	    {"listen", required_argument, NULL, ARG_LISTEN},
	    {"token-file", required_argument, NULL, ARG_TOKEN_FILE},
	    {"allow-uid", required_argument, NULL, ARG_ALLOW_UID},
	    CLI_EXEC_OPTIONS,
	    {"max-request", required_argument, NULL, ARG_MAX_REQUEST},
	    {"max-streams", required_argument, NULL, ARG_MAX_STREAMS},
	    {"max-sessions", required_argument, NULL, ARG_MAX_SESSIONS},
	    CLI_BROKER_OPTIONS,
	    {"help", no_argument, NULL, 'h'},
	    {},
	};
	struct serve_options o = {
	    .max_request = AGENT_REQUEST_MAX,
	    .max_streams = SERVE_MAX_STREAMS_DEFAULT,
	    .max_sessions = SERVE_MAX_SESSIONS_DEFAULT,
	    .max_connections = SERVE_MAX_CONNECTIONS_DEFAULT,
	    .max_client_connections = SERVE_MAX_CLIENT_CONNECTIONS_DEFAULT,
	};
	/* The broker options, passed on to every child as given. */
	char *broker_argv[16];
	size_t n_broker = 0;
	struct al_error err = {0};
	uint64_t size;
	int c, r;

	while ((c = getopt_long(argc, argv, "hp:", options, NULL)) >= 0) {
		if (cli_exec_option(c, optarg, &o.exec))
			continue;
		switch (c) {
		case ARG_SOCKET:
			o.socket_path = optarg;
			break;
		case ARG_LISTEN:
			o.listen = optarg;
			break;
		case ARG_TOKEN_FILE:
			o.token_file = optarg;
			break;
		case ARG_ALLOW_UID:
			if (o.n_allow_uids == SERVE_ALLOW_UIDS_MAX)
				return log_error("--allow-uid: at most %d", SERVE_ALLOW_UIDS_MAX),
				       CLI_EXIT_FAILURE;
			if (parse_uid(optarg, &o.allow_uids[o.n_allow_uids]) < 0)
				return log_error("--allow-uid: no user \"%s\"", optarg),
				       CLI_EXIT_FAILURE;
			o.n_allow_uids++;
			break;
		case ARG_MAX_REQUEST:
			if (al_parse_size(optarg, &size) < 0 || size == 0 ||
			    size > AGENT_REQUEST_MAX)
				return log_error("--max-request: \"%s\" is not a size up to 16Mi",
						 optarg),
				       CLI_EXIT_FAILURE;
			o.max_request = (size_t)size;
			break;
		case ARG_MAX_STREAMS:
			if (parse_count("--max-streams", optarg, &o.max_streams) < 0)
				return CLI_EXIT_FAILURE;
			break;
		case ARG_MAX_SESSIONS:
			if (parse_count("--max-sessions", optarg, &o.max_sessions) < 0)
				return CLI_EXIT_FAILURE;
			break;
		case CLI_ARG_BROKER:
		case CLI_ARG_VAULT:
		case CLI_ARG_KEY_FILE:
		case CLI_ARG_NO_BROKER: {
			const struct option *opt = options;

			while (opt->name && opt->val != c)
				opt++;
			if (n_broker + 3 > ELEMENTSOF(broker_argv))
				return log_error("Too many credential options"), CLI_EXIT_FAILURE;
			if (asprintf(&broker_argv[n_broker++], "--%s", opt->name) < 0)
				return log_error("Out of memory"), CLI_EXIT_FAILURE;
			if (opt->has_arg)
				broker_argv[n_broker++] = optarg;
			broker_argv[n_broker] = NULL;
			break;
		}
		case 'h':
			help();
			return 0;
		default:
			return CLI_EXIT_FAILURE;
		}
	}
	if (optind < argc)
		return log_error("serve: unexpected argument \"%s\"", argv[optind]),
		       CLI_EXIT_FAILURE;
	if (cli_exec_options_check(&o.exec) < 0)
		return CLI_EXIT_FAILURE;
	o.broker_argv = n_broker ? broker_argv : NULL;
	r = serve_main(&o, &err);
	if (r < 0)
		return log_error("%s", err.msg[0] ? err.msg : strerror(-r)), LAUNCHER_EXIT_FAILED;
	return 0;
}
