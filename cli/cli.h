#pragma once

/* The subcommands. Each takes the arguments after its own name (argv[0] is the subcommand) and
 * returns the process exit status. */

#define CLI_EXIT_FAILURE 1

int cli_run(int argc, char **argv);
int cli_policy(int argc, char **argv);
int cli_doctor(int argc, char **argv);
int cli_fs(int argc, char **argv);
int cli_secret(int argc, char **argv);
int cli_broker(int argc, char **argv);
