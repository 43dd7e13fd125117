#define LOG_MODULE "cli"

/* airlock broker: the credential broker daemon, and questions to a running one. */

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/broker.h"
#include "cli/cli.h"
#include "common/log.h"
#include "common/parse-util.h"

static void help(void)
{
	printf(
	    "Usage: airlock broker [OPTIONS]          Run the credential broker daemon\n"
	    "       airlock broker status [--socket P] Ask a running daemon how it is\n"
	    "       airlock broker sessions [--socket P]  List its sessions (yours; all for root)\n"
	    "\n"
	    "The broker keeps the vault's secrets and serves sandboxes their credentials as\n"
	    "surrogates over a Unix socket (mode 0600). airlock run uses it when it listens on "
	    "the\n"
	    "default socket or the one named by --broker or $AIRLOCK_BROKER.\n"
	    "\n"
	    "Options:\n"
	    "      --socket PATH        Listen here (default /run/airlock/broker.sock for root,\n"
	    "                           else $XDG_RUNTIME_DIR/airlock/broker.sock)\n"
	    "      --vault FILE         The vault (else $AIRLOCK_VAULT, else the default)\n"
	    "      --key-file FILE      The vault's 32-byte key file (else the passphrase in\n"
	    "                           $AIRLOCK_PASSPHRASE_FILE, else a prompt)\n"
	    "      --no-vault           Serve without a vault (no \"vault\" sources)\n"
	    "      --allow-uid UID      Let UID connect too (repeatable); only vault credentials\n"
	    "      --audit FILE         Append audit events (JSON lines) to FILE\n"
	    "      --max-ttl DURATION   The longest a session lives (default 24h)\n"
	    "  -h, --help               Print this help\n");
}

static int parse_uid(const char *s, uid_t *ret)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || s[0] == '-' || v >= (uid_t)-1)
		return -EINVAL;
	*ret = (uid_t)v;
	return 0;
}

int cli_broker(int argc, char **argv)
{
	enum {
		ARG_SOCKET = 0x100,
		ARG_VAULT,
		ARG_KEY_FILE,
		ARG_NO_VAULT,
		ARG_ALLOW_UID,
		ARG_AUDIT,
		ARG_MAX_TTL
	};
	static const struct option options[] = {
	    {"socket", required_argument, NULL, ARG_SOCKET},
	    {"vault", required_argument, NULL, ARG_VAULT},
	    {"key-file", required_argument, NULL, ARG_KEY_FILE},
	    {"no-vault", no_argument, NULL, ARG_NO_VAULT},
	    {"allow-uid", required_argument, NULL, ARG_ALLOW_UID},
	    {"audit", required_argument, NULL, ARG_AUDIT},
	    {"max-ttl", required_argument, NULL, ARG_MAX_TTL},
	    {"help", no_argument, NULL, 'h'},
	    {},
	};
	uid_t uids[BROKER_ALLOW_UIDS_MAX];
	struct broker_daemon_options o = {.allow_uids = uids};
	struct al_error err = {0};
	const char *query = NULL;
	int c, r;

	if (argc > 1 && (streq(argv[1], "status") || streq(argv[1], "sessions"))) {
		query = argv[1];
		argc--;
		argv++;
	}
	while ((c = getopt_long(argc, argv, "+h", options, NULL)) >= 0) {
		switch (c) {
		case ARG_SOCKET:
			o.socket = optarg;
			break;
		case ARG_VAULT:
			o.vault.vault = optarg;
			break;
		case ARG_KEY_FILE:
			o.vault.key_file = optarg;
			break;
		case ARG_NO_VAULT:
			o.no_vault = true;
			break;
		case ARG_ALLOW_UID:
			if (o.n_allow_uids >= BROKER_ALLOW_UIDS_MAX ||
			    parse_uid(optarg, &uids[o.n_allow_uids]) < 0) {
				log_error("--allow-uid: \"%s\" is not a uid (at most %d of them)",
					  optarg, BROKER_ALLOW_UIDS_MAX);
				return CLI_EXIT_FAILURE;
			}
			o.n_allow_uids++;
			break;
		case ARG_AUDIT:
			o.audit = optarg;
			break;
		case ARG_MAX_TTL:
			if (al_parse_duration(optarg, &o.max_ttl_usec) < 0 || o.max_ttl_usec == 0) {
				log_error("--max-ttl: \"%s\" is not a duration", optarg);
				return CLI_EXIT_FAILURE;
			}
			break;
		case 'h':
			help();
			return 0;
		default:
			return CLI_EXIT_FAILURE;
		}
	}
	if (optind < argc) {
		log_error("Unknown broker command \"%s\"; see airlock broker --help", argv[optind]);
		return CLI_EXIT_FAILURE;
	}
	if (query)
		r = broker_daemon_query(o.socket, streq(query, "status") ? "health" : "list",
					stdout, &err);
	else
		r = broker_daemon_run(&o, &err);
	if (r < 0) {
		log_error_errno(r, "%s", err.msg[0] ? err.msg : strerror(-r));
		return CLI_EXIT_FAILURE;
	}
	return 0;
}

int cli_broker_option(int c, const char *arg, struct broker_client_options *o, char **owned)
{
	switch (c) {
	case CLI_ARG_BROKER:
		/* Also what keeps the socket's folder out of every bind: absolute. */
		free(*owned);
		*owned = realpath(arg, NULL);
		if (!*owned)
			return log_error_errno(-errno, "--broker: %s: %m", arg);
		o->socket = *owned;
		if (setenv("AIRLOCK_BROKER", *owned, 1) < 0)
			return log_error_errno(-errno, "Failed to set AIRLOCK_BROKER: %m");
		return 1;
	case CLI_ARG_NO_BROKER:
		o->embedded = true;
		return 1;
	case CLI_ARG_VAULT:
		o->vault = arg;
		return 1;
	case CLI_ARG_KEY_FILE:
		o->key_file = arg;
		return 1;
	default:
		return 0;
	}
}
