#define LOG_MODULE "cli"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/argv-util.h"
#include "common/fd-util.h"
#include "common/log.h"

#define SYNOPSIS_WIDTH 32

static int cli_version(int argc, char **argv);
static int cli_help(int argc, char **argv);

/* Every subcommand, in the order `airlock --help` lists them: the help is made from this table,
 * so no command can be dispatched without being listed. A synopsis may hold several lines. */
static const struct verb {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *synopsis;
	const char *summary;
} verbs[] = {
    {"run", cli_run, "run [OPTIONS] [--] CMD [ARG...]", "Run CMD in a sandbox"},
    {"exec", cli_exec, "exec [--request FILE]", "Run one JSON request, print a JSON result"},
    {"session", cli_session, "session start|exec|ls|stop|checkpoint|restore ...",
     "Keep a sandbox across commands"},
    {"serve", cli_serve, "serve [--socket PATH] [--listen HOST:PORT --token-file FILE] ...",
     "Serve the agent API over HTTP (docs/API.md)"},
    {"mcp", cli_mcp, "mcp [-p POLICY | --policy-dir DIR] ...", "Serve MCP on stdio (docs/MCP.md)"},
    {"capabilities", cli_capabilities, "capabilities [--json]",
     "What this machine can enforce, which languages"},
    {"fs", cli_fs, "fs [OPTIONS] ROOT MOUNTPOINT", "Mount ROOT through the workspace filesystem"},
    {"secret", cli_secret, "secret put|ls|rm|bind ...", "Manage the vault's secrets"},
    {"broker", cli_broker, "broker [status|sessions]",
     "Run the credential broker daemon, or ask it"},
    {"policy", cli_policy, "policy check|hash|show [FILE]",
     "Check, hash or print a policy (canonical form)"},
    {"doctor", cli_doctor, "doctor [--json]", "Probe the kernel features airlock needs"},
    {"version", cli_version, "version", "Print the version"},
    {"help", cli_help, "help", "Print this help"},
};

static void help(FILE *out)
{
	fputs("Usage: airlock [OPTIONS] COMMAND [ARGS...]\n"
	      "\n"
	      "Run untrusted programs in a Linux sandbox.\n"
	      "\n"
	      "Commands (airlock COMMAND --help says more):\n",
	      out);
	for (size_t i = 0; i < ELEMENTSOF(verbs); i++) {
		const struct verb *v = &verbs[i];

		if (strlen(v->synopsis) <= SYNOPSIS_WIDTH)
			fprintf(out, "  %-*s %s\n", SYNOPSIS_WIDTH, v->synopsis, v->summary);
		else
			fprintf(out, "  %s\n  %-*s %s\n", v->synopsis, SYNOPSIS_WIDTH, "",
				v->summary);
	}
	fputs("\n"
	      "Options:\n"
	      "  -v, --verbose            Log debug messages to stderr\n"
	      "      --log-level LEVEL    err, warning, notice, info or debug (or AIRLOCK_LOG)\n"
	      "  -h, --help               Print this help\n"
	      "      --version            Print the version\n"
	      "\n"
	      "Without a policy, run uses the embedded default: the current folder as the\n"
	      "read-write workspace, no network, no credentials, restricted seccomp and default\n"
	      "limits (memory 2Gi, pids 1024, /tmp 512Mi). airlock policy show prints it.\n",
	      out);
}

static int cli_version(int argc, char **argv)
{
	printf("airlock %s\n", AIRLOCK_VERSION);
	return 0;
}

static int cli_help(int argc, char **argv)
{
	help(stdout);
	return 0;
}

/* airlock may be started by anything: undo what a careless parent left behind that would break
 * supervision (an ignored SIGCHLD makes the kernel reap the sandbox for us; a blocked signal mask
 * is inherited) or leak into the sandbox (inherited fds without close-on-exec). */
static void sanitize_process(void)
{
	sigset_t none;

	/* A closed stdin/stdout/stderr would be taken by airlock's own fds (a signalfd as stdout,
	 * the audit file as stderr): hold them with /dev/null first. */
	for (int fd = STDIN_FILENO; fd <= STDERR_FILENO; fd++)
		if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
			int n = open("/dev/null", O_RDWR | O_NOCTTY);

			if (n >= 0 && n != fd) {
				(void)dup2(n, fd);
				(void)close(n);
			}
		}

	(void)signal(SIGCHLD, SIG_DFL);
	(void)signal(SIGPIPE, SIG_IGN);
	(void)sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
	(void)al_close_range_cloexec(3);
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
	    {"verbose", no_argument, NULL, 'v'},
	    {"log-level", required_argument, NULL, 'L'},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {},
	};
	const char *env_level = getenv("AIRLOCK_LOG");
	const char *verb;
	int c;

	al_argv_save(argc, argv);
	sanitize_process();
	if (env_level && al_log_set_max_level_from_string(env_level) < 0)
		log_warning("Ignoring AIRLOCK_LOG=%s: not a log level", env_level);
	while ((c = getopt_long(argc, argv, "+vh", options, NULL)) >= 0) {
		switch (c) {
		case 'v':
			al_log_max_level = AL_LOG_DEBUG;
			break;
		case 'L':
			if (al_log_set_max_level_from_string(optarg) < 0) {
				log_error("--log-level: \"%s\" is not a log level", optarg);
				return CLI_EXIT_FAILURE;
			}
			break;
		case 'h':
			return cli_help(0, NULL);
		case 'V':
			return cli_version(0, NULL);
		default:
			return CLI_EXIT_FAILURE;
		}
	}
	if (optind >= argc) {
		help(stderr);
		return CLI_EXIT_FAILURE;
	}
	verb = argv[optind];
	argc -= optind;
	argv += optind;
	optind = 0; /* getopt_long restarts (and re-initializes) for the subcommand */
	for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
		if (streq(verb, verbs[i].name))
			return verbs[i].run(argc, argv);
	log_error("Unknown command \"%s\"; see airlock --help", verb);
	return CLI_EXIT_FAILURE;
}
