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

static void help(void)
{
	printf(
	    "Usage: airlock [OPTIONS] COMMAND [ARGS...]\n"
	    "\n"
	    "Run untrusted programs in a Linux sandbox.\n"
	    "\n"
	    "Commands:\n"
	    "  run [OPTIONS] [--] CMD [ARG...]  Run CMD in a sandbox (see airlock run --help)\n"
	    "  exec [--request FILE]            Run one JSON request in a sandbox, print a JSON\n"
	    "                                   result (see airlock exec --help)\n"
	    "  capabilities [--json]            What this machine can enforce, which languages\n"
	    "  fs [OPTIONS] ROOT MOUNTPOINT     Mount ROOT through the workspace filesystem\n"
	    "  secret put|ls|rm|bind ...        Manage the vault's secrets\n"
	    "  broker [status|sessions]         Run the credential broker daemon, or ask it\n"
	    "  policy check FILE                Validate a policy file\n"
	    "  policy hash [FILE]               Print the BLAKE2b-256 hash of a policy\n"
	    "  policy show [FILE]               Print a policy in canonical form\n"
	    "  doctor [--json]                  Probe the kernel features airlock needs\n"
	    "  version                          Print the version\n"
	    "  help                             Print this help\n"
	    "\n"
	    "Options:\n"
	    "  -v, --verbose            Log debug messages to stderr\n"
	    "      --log-level LEVEL    err, warning, notice, info or debug (or AIRLOCK_LOG)\n"
	    "  -h, --help               Print this help\n"
	    "      --version            Print the version\n"
	    "\n"
	    "Without a policy, run uses the embedded default: the current folder as the\n"
	    "read-write workspace, no network, no credentials, restricted seccomp and default\n"
	    "limits (memory 2Gi, pids 1024, /tmp 512Mi). airlock policy show prints it.\n");
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
			help();
			return 0;
		case 'V':
			printf("airlock %s\n", AIRLOCK_VERSION);
			return 0;
		default:
			return CLI_EXIT_FAILURE;
		}
	}
	if (optind >= argc) {
		help();
		return CLI_EXIT_FAILURE;
	}
	verb = argv[optind];
	argc -= optind;
	argv += optind;
	optind = 0; /* getopt_long restarts (and re-initializes) for the subcommand */
	if (streq(verb, "run"))
		return cli_run(argc, argv);
	if (streq(verb, "exec"))
		return cli_exec(argc, argv);
	if (streq(verb, "session"))
		return cli_session(argc, argv);
	if (streq(verb, "capabilities"))
		return cli_capabilities(argc, argv);
	if (streq(verb, "policy"))
		return cli_policy(argc, argv);
	if (streq(verb, "doctor"))
		return cli_doctor(argc, argv);
	if (streq(verb, "fs"))
		return cli_fs(argc, argv);
	if (streq(verb, "secret"))
		return cli_secret(argc, argv);
	if (streq(verb, "broker"))
		return cli_broker(argc, argv);
	if (streq(verb, "version")) {
		printf("airlock %s\n", AIRLOCK_VERSION);
		return 0;
	}
	if (streq(verb, "help")) {
		help();
		return 0;
	}
	log_error("Unknown command \"%s\"; see airlock --help", verb);
	return CLI_EXIT_FAILURE;
}
