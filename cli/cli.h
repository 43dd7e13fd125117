#pragma once

/* The subcommands. Each takes the arguments after its own name (argv[0] is the subcommand) and
 * returns the process exit status. */

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

/* --broker SOCKET of run and exec: the canonical path into *owned (freed first) and o->socket,
 * and $AIRLOCK_BROKER for the sandbox's own airlock calls. Logs its error. */
int cli_broker_set_socket(struct broker_client_options *o, char **owned, const char *path);
