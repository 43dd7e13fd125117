#define LOG_MODULE "cli"

/* `airlock secret put|ls|rm|bind`: the vault's secrets. A value is read from standard input or
 * a file, never from the command line, where any user could see it (/proc/PID/cmdline, shell
 * history); and no command prints one. */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "broker/broker.h"
#include "cli/cli.h"
#include "common/fd-util.h"
#include "common/log.h"

static void help(void)
{
	printf(
	    "Usage: airlock secret [OPTIONS] put NAME [--from-file FILE]\n"
	    "       airlock secret [OPTIONS] put --ssh-key NAME [--from-file FILE]\n"
	    "                                [--ssh-passphrase-file FILE]\n"
	    "       airlock secret [OPTIONS] ls [--json]\n"
	    "       airlock secret [OPTIONS] rm NAME\n"
	    "       airlock secret [OPTIONS] bind NAME --hosts HOST[,HOST...]\n"
	    "\n"
	    "Manage the secrets of the credential broker's vault, a file encrypted with a key\n"
	    "derived from a passphrase (Argon2id) or read from a key file.\n"
	    "\n"
	    "  put   store NAME, its value read from standard input or FILE (one trailing\n"
	    "        newline dropped). Never from the command line, where other users see it.\n"
	    "        With --ssh-key, the value is an OpenSSH private key (ssh-keygen's file:\n"
	    "        Ed25519, ECDSA, RSA); its passphrase, if it has one, is asked once (or\n"
	    "        read from --ssh-passphrase-file) and the key is stored without it. The\n"
	    "        key never leaves the broker: it only signs, for an ssh credential.\n"
	    "  ls    list the names, bound hosts, created and updated times (UTC), and\n"
	    "        an SSH key's type and fingerprint\n"
	    "  rm    remove NAME\n"
	    "  bind  set the hosts NAME may be sent to: names or \"*.suffix\" patterns\n"
	    "No command prints a value.\n"
	    "\n"
	    "Options:\n"
	    "      --vault FILE      The vault (default: $AIRLOCK_VAULT, else\n"
	    "                        /var/lib/airlock/vault for root, else\n"
	    "                        $XDG_DATA_HOME/airlock/vault or "
	    "~/.local/share/airlock/vault)\n"
	    "      --key-file FILE   Use the key in FILE (32 bytes, or 64 hex digits; mode 0600)\n"
	    "                        instead of a passphrase\n"
	    "      --from-file FILE  put: read the value from FILE\n"
	    "      --ssh-key         put: the value is an OpenSSH private key\n"
	    "      --ssh-passphrase-file FILE\n"
	    "                        put --ssh-key: the key's passphrase is in FILE\n"
	    "      --json            ls: print a JSON array\n"
	    "      --hosts LIST      bind: the comma-separated hosts\n"
	    "  -h, --help            Print this help\n"
	    "\n"
	    "Without --key-file, the passphrase is read from the file $AIRLOCK_PASSPHRASE_FILE\n"
	    "names, else asked on the terminal (twice for a new vault).\n");
}

enum {
	ARG_VAULT = 0x100,
	ARG_KEY_FILE,
	ARG_FROM_FILE,
	ARG_JSON,
	ARG_HOSTS,
	ARG_SSH_KEY,
	ARG_SSH_PASSPHRASE_FILE,
};

static const struct option options[] = {
    {"vault", required_argument, NULL, ARG_VAULT},
    {"key-file", required_argument, NULL, ARG_KEY_FILE},
    {"from-file", required_argument, NULL, ARG_FROM_FILE},
    {"json", no_argument, NULL, ARG_JSON},
    {"hosts", required_argument, NULL, ARG_HOSTS},
    {"ssh-key", no_argument, NULL, ARG_SSH_KEY},
    {"ssh-passphrase-file", required_argument, NULL, ARG_SSH_PASSPHRASE_FILE},
    {"help", no_argument, NULL, 'h'},
    {},
};

static struct broker_vault_options arg_vault;
static const char *arg_from_file;
static const char *arg_hosts;
static const char *arg_ssh_passphrase_file;
static bool arg_json, arg_ssh_key;

/* An option the parser refused. An unknown one is named only when it looks like an option
 * name, and never with what follows '=': a mistyped command line may hold a value (a PEM key
 * starts with "-----"). */
static void log_bad_option(int c, const char *arg)
{
	size_t len = strcspn(arg, "=");
	bool plain = len > 2 && len <= 32 && startswith(arg, "--") &&
		     strspn(arg + 2, "abcdefghijklmnopqrstuvwxyz-") == len - 2;

	if (c == ':')
		log_error("Option %.*s needs an argument; see airlock secret --help", (int)len,
			  arg);
	else if (optopt != 0)
		log_error("Unknown option -%c; see airlock secret --help", optopt);
	else if (plain)
		log_error("Unknown option %.*s; see airlock secret --help", (int)len, arg);
	else
		log_error("Unknown option (not shown: it may hold a value); see airlock secret "
			  "--help");
}

static int parse_options(int argc, char **argv)
{
	int c;

	opterr = 0; /* getopt's own message would print all of an unknown "--value=..." */
	while ((c = getopt_long(argc, argv, ":h", options, NULL)) >= 0) {
		switch (c) {
		case ARG_VAULT:
			arg_vault.vault = optarg;
			break;
		case ARG_KEY_FILE:
			arg_vault.key_file = optarg;
			break;
		case ARG_FROM_FILE:
			arg_from_file = optarg;
			break;
		case ARG_JSON:
			arg_json = true;
			break;
		case ARG_HOSTS:
			arg_hosts = optarg;
			break;
		case ARG_SSH_KEY:
			arg_ssh_key = true;
			break;
		case ARG_SSH_PASSPHRASE_FILE:
			arg_ssh_passphrase_file = optarg;
			break;
		case 'h':
			help();
			return 0;
		default:
			log_bad_option(c, argv[optind - 1]);
			return -EINVAL;
		}
	}
	return 1;
}

/* Checks the verb's arguments: n_names names, and only its own options. */
static int check_usage(const char *verb, int n_args, int n_names)
{
	static const struct {
		const char *option, *verb;
	} own[] = {
	    {"--from-file", "put"},
	    {"--json", "ls"},
	    {"--hosts", "bind"},
	    {"--ssh-key", "put"},
	    {"--ssh-passphrase-file", "put"},
	};
	bool used[] = {arg_from_file != NULL, arg_json, arg_hosts != NULL, arg_ssh_key,
		       arg_ssh_passphrase_file != NULL};

	for (size_t i = 0; i < ELEMENTSOF(own); i++)
		if (used[i] && !streq(verb, own[i].verb)) {
			log_error("%s is an option of airlock secret %s only", own[i].option,
				  own[i].verb);
			return -EINVAL;
		}
	if (n_args > n_names && streq(verb, "put")) {
		/* Not echoed: the extra argument is likely the value itself. */
		log_error("airlock secret put takes only NAME: the value is read from standard "
			  "input or --from-file, never from the command line");
		return -EINVAL;
	}
	if (n_args != n_names) {
		log_error("Usage: airlock secret %s%s; see airlock secret --help", verb,
			  n_names ? " NAME" : "");
		return -EINVAL;
	}
	if (arg_ssh_passphrase_file && !arg_ssh_key) {
		log_error("--ssh-passphrase-file goes with airlock secret put --ssh-key");
		return -EINVAL;
	}
	if (streq(verb, "bind") && !arg_hosts) {
		log_error("airlock secret bind needs --hosts HOST[,HOST...]");
		return -EINVAL;
	}
	return 0;
}

static int put(const char *name, struct al_error *err)
{
	_cleanup_close_ int fd = -EBADF;

	if (arg_from_file) {
		fd = open(arg_from_file, O_RDONLY | O_NOCTTY | O_CLOEXEC);
		if (fd < 0)
			return al_error_set_errno(err, -errno, "--from-file %s", arg_from_file);
	}
	if (arg_ssh_key)
		return broker_secret_put_ssh_key(&arg_vault, name, fd >= 0 ? fd : STDIN_FILENO,
						 arg_ssh_passphrase_file, stdout, err);
	return broker_secret_put(&arg_vault, name, fd >= 0 ? fd : STDIN_FILENO, err);
}

int cli_secret(int argc, char **argv)
{
	struct al_error err = {0};
	const char *verb, *name;
	int n_args, r;

	/* It holds the vault's key and values: no core dump, no ptrace by the user's other
	 * processes. */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0 ||
	    setrlimit(RLIMIT_CORE, &(struct rlimit){0, 0}) < 0) {
		log_error_errno(-errno, "Failed to make airlock undumpable: %m");
		return CLI_EXIT_FAILURE;
	}
	r = parse_options(argc, argv);
	if (r <= 0)
		return r < 0 ? CLI_EXIT_FAILURE : 0;
	if (optind >= argc) {
		help();
		return CLI_EXIT_FAILURE;
	}
	verb = argv[optind];
	n_args = argc - optind - 1;
	name = n_args > 0 ? argv[optind + 1] : NULL;
	if (streq(verb, "help")) {
		help();
		return 0;
	}
	if (!streq(verb, "put") && !streq(verb, "ls") && !streq(verb, "rm") &&
	    !streq(verb, "bind")) {
		/* Not echoed either, for the same reason. */
		log_error("Unknown secret command: use put, ls, rm or bind (see airlock secret "
			  "--help)");
		return CLI_EXIT_FAILURE;
	}
	if (check_usage(verb, n_args, streq(verb, "ls") ? 0 : 1) < 0)
		return CLI_EXIT_FAILURE;
	if (streq(verb, "put"))
		r = put(name, &err);
	else if (streq(verb, "ls"))
		r = broker_secret_list(&arg_vault, arg_json, stdout, &err);
	else if (streq(verb, "rm"))
		r = broker_secret_remove(&arg_vault, name, &err);
	else
		r = broker_secret_bind(&arg_vault, name, arg_hosts, &err);
	if (r < 0) {
		log_error_errno(r, "%s", err.msg[0] ? err.msg : strerror(-r));
		return CLI_EXIT_FAILURE;
	}
	return 0;
}
