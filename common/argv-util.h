#pragma once

/* The memory that holds the process's command line and initial environment. The kernel shows
 * it to anyone as /proc/PID/cmdline, so a process forked from airlock into a sandbox wipes it. */

/* Records where argv's and environ's strings are. Call once, first thing in main(). */
void al_argv_save(int argc, char **argv);

/* Overwrites the command line with title (truncated to fit) and zeroes the rest of the argv and
 * environ strings. Everything that pointed into them (argv[], environ, getopt's optarg) is
 * garbage afterwards: copy what is needed first. Async-signal-safe. */
void al_argv_wipe(const char *title);
