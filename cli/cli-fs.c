#define LOG_MODULE "cli"

/* `airlock fs ROOT MOUNTPOINT`: the workspace filesystem alone, in the foreground. */

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker/client.h"
#include "cli/cli.h"
#include "common/audit.h"
#include "common/log.h"
#include "fusefs/fusefs.h"
#include "policy/policy.h"

static void help(void)
{
	printf("Usage: airlock fs [OPTIONS] ROOT MOUNTPOINT\n"
	       "\n"
	       "Mount host folder ROOT at MOUNTPOINT through airlock's workspace filesystem, with\n"
	       "the policy's workspace rules, quota, credential files and audit, in the\n"
	       "foreground. Ctrl-C or SIGTERM unmounts it.\n"
	       "\n"
	       "Options:\n"
	       "  -p, --policy FILE   Policy file (JSON); its workspace.root is replaced by ROOT\n"
	       "      --audit FILE    Append audit events (JSON lines) to FILE\n"
	       "  -h, --help          Print this help\n");
}

int cli_fs(int argc, char **argv)
{
	static const struct option options[] = {
	    {"policy", required_argument, NULL, 'p'},
	    {"audit", required_argument, NULL, 'A'},
	    {"help", no_argument, NULL, 'h'},
	    {},
	};
	_cleanup_(policy_freep) struct policy *p = NULL;
	_cleanup_(al_audit_closep) struct al_audit *audit = NULL;
	_cleanup_(broker_client_freep) struct broker_client *broker = NULL;
	_cleanup_(fusefs_freep) struct fusefs *fs = NULL;
	const char *policy_path = NULL, *audit_path = NULL;
	struct al_error err = {0};
	char id[32];
	int c, r;

	while ((c = getopt_long(argc, argv, "+p:h", options, NULL)) >= 0) {
		switch (c) {
		case 'p':
			policy_path = optarg;
			break;
		case 'A':
			audit_path = optarg;
			break;
		case 'h':
			help();
			return 0;
		default:
			return CLI_EXIT_FAILURE;
		}
	}
	if (argc - optind != 2) {
		log_error("airlock fs needs ROOT and MOUNTPOINT; see airlock fs --help");
		return CLI_EXIT_FAILURE;
	}
	r = policy_path ? policy_load_file(policy_path, &p, &err) : policy_new_default(&p);
	if (r < 0) {
		log_error_errno(r, "%s: %s", policy_path ?: "default policy",
				err.msg[0] ? err.msg : strerror(-r));
		return CLI_EXIT_FAILURE;
	}
	audit_path = audit_path ?: p->audit;
	(void)snprintf(id, sizeof(id), "fs-%d", (int)getpid());
	if (audit_path) {
		r = al_audit_open(audit_path, id, &audit);
		if (r < 0) {
			log_error_errno(r, "Failed to open the audit file %s: %m", audit_path);
			return CLI_EXIT_FAILURE;
		}
	}
	if (p->n_credentials > 0) {
		r = broker_client_open(
		    p, &(struct broker_client_options){.audit = audit, .label = id}, &broker, &err);
		if (r < 0) {
			log_error_errno(r, "%s", err.msg[0] ? err.msg : strerror(-r));
			return CLI_EXIT_FAILURE;
		}
	}
	r = fusefs_new(&(struct fusefs_options){.policy = p,
						.root = argv[optind],
						.mount = p->workspace.mount,
						.audit = audit,
						.broker = broker,
						.violations_fd = -EBADF},
		       &fs, &err);
	if (r >= 0)
		r = fusefs_run_foreground(fs, argv[optind + 1], &err);
	if (r < 0) {
		log_error_errno(r, "%s", err.msg[0] ? err.msg : strerror(-r));
		return CLI_EXIT_FAILURE;
	}
	return 0;
}
