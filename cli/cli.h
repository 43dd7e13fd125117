#pragma once

/* The subcommands. Each takes the arguments after its own name (argv[0] is the subcommand) and
 * returns the process exit status. */

#include <stdbool.h>

#include "broker/client.h"

#define CLI_EXIT_FAILURE 1

int cli_run(int argc, char **argv);
int cli_policy(int argc, char **argv);
int cli_doctor(int argc, char **argv);
int cli_fs(int argc, char **argv);
int cli_secret(int argc, char **argv);
int cli_broker(int argc, char **argv);
int cli_exec(int argc, char **argv);
int cli_capabilities(int argc, char **argv);
int cli_session(int argc, char **argv);
int cli_mcp(int argc, char **argv);
int cli_serve(int argc, char **argv);

/* The options that say where credentials come from, shared by run and exec: put
 * CLI_BROKER_OPTIONS in the getopt table and hand each option to cli_broker_option(). */
enum {
	CLI_ARG_BROKER = 0x200,
	CLI_ARG_NO_BROKER,
	CLI_ARG_VAULT,
	CLI_ARG_KEY_FILE,
};
#define CLI_BROKER_OPTIONS                                                                         \
	{"broker", required_argument, NULL, CLI_ARG_BROKER},                                       \
	    {"no-broker", no_argument, NULL, CLI_ARG_NO_BROKER},                                   \
	    {"vault", required_argument, NULL, CLI_ARG_VAULT},                                     \
	{                                                                                          \
		"key-file", required_argument, NULL, CLI_ARG_KEY_FILE                              \
	}

/* Applies option c (with arg) to o: 1 when it was one of CLI_BROKER_OPTIONS, 0 when not, or
 * -errno (logged). --broker SOCKET keeps its canonical path in *owned (the caller frees it) and
 * sets $AIRLOCK_BROKER for the sandbox's own airlock calls. */
int cli_broker_option(int c, const char *arg, struct broker_client_options *o, char **owned);

/* The operator's options that decide what a request may bring, shared by exec, mcp and serve:
 * put CLI_EXEC_OPTIONS in the getopt table ("p:" in the short options) and hand each option to
 * cli_exec_option(); check the whole with cli_exec_options_check() after the loop. */
enum {
	CLI_ARG_POLICY_DIR = 0x280,
	CLI_ARG_ALLOW_REQUEST_POLICY,
	CLI_ARG_ALLOW_REQUEST_WORKSPACE,
	CLI_ARG_ADMITTED,
	CLI_ARG_UPSTREAM_CA,
};
#define CLI_EXEC_OPTIONS                                                                           \
	{"policy", required_argument, NULL, 'p'},                                                  \
	    {"policy-dir", required_argument, NULL, CLI_ARG_POLICY_DIR},                           \
	    {"allow-request-policy", no_argument, NULL, CLI_ARG_ALLOW_REQUEST_POLICY},             \
	    {"allow-request-workspace", no_argument, NULL, CLI_ARG_ALLOW_REQUEST_WORKSPACE},       \
	    {"admitted", required_argument, NULL, CLI_ARG_ADMITTED},                               \
	{                                                                                          \
		"upstream-ca", required_argument, NULL, CLI_ARG_UPSTREAM_CA                        \
	}

struct agent_exec_options;
/* Applies option c (with arg) to o: true when it was one of CLI_EXEC_OPTIONS. */
bool cli_exec_option(int c, const char *arg, struct agent_exec_options *o);
/* --allow-request-* only with --policy-dir, and not --policy with it: -EINVAL (logged). */
int cli_exec_options_check(const struct agent_exec_options *o);

struct agent_request;
/* Reads and parses an exec request from path ("-" or NULL: stdin, which may not be a terminal).
 * A request that cannot be read or parsed is logged and answered on stdout with an
 * invalid_request result; returns -errno then. */
int cli_read_request(const char *path, struct agent_request **ret);

/* -t (a terminal) took the place of -t DURATION: with tty set, a first argument that reads as a
 * duration is refused (logged, -EINVAL) rather than run as the command. Returns 1 otherwise. */
int cli_check_tty_flag(bool tty, const char *first);
