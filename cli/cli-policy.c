#define LOG_MODULE "cli"

#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "common/log.h"
#include "launcher/launcher.h"
#include "policy/policy.h"

static int load(const char *path, struct policy **ret)
{
	struct al_error err = {0};
	int r;

	if (!path) {
		r = policy_new_default(ret);
		if (r < 0)
			return log_error_errno(r, "Failed to build the default policy: %m");
		return 0;
	}
	r = policy_load_file(path, ret, &err);
	if (r < 0)
		return log_error_errno(r, "%s: %s", path, err.msg);
	return 0;
}

/* check's second line: the tier admission applies (the higher of the declared one and what the
 * fields call for, and which field raised it), and from tier 3 on whether it is admitted. */
static void print_tier(const struct policy *p, const char *admitted)
{
	struct policy_tier_reason why;
	struct al_error err = {0};
	int tier = policy_effective_tier(p, &why);
	const char *rest;

	printf("tier %d (declared %d", tier, p->tier);
	if (why.why)
		printf("; %s: %s", why.field, why.why);
	printf(")");
	if (tier >= POLICY_TIER_ADMITTED) {
		if (policy_check_admitted(p, admitted, &err) >= 0)
			printf(": admitted in %s", admitted);
		else if ((rest = strstr(err.msg, " is not admitted")))
			printf(": not admitted%s", rest + strlen(" is not admitted"));
		else
			printf(": not admitted: %s", err.msg);
	}
	printf("\n");
}

/* Prints what verb asks for: "check" a verdict and the tier, "hash" the hash, "show" the
 * canonical form. */
static int print_policy(const char *verb, const char *file, const struct policy *p,
			const char *admitted)
{
	char hash[POLICY_HASH_HEX_SIZE];
	_cleanup_free_ char *json = NULL;
	int r;

	r = policy_hash_hex(p, hash);
	if (r < 0)
		return r;
	if (streq(verb, "check")) {
		printf("%s: ok (%s)\n", file, hash);
		print_tier(p, admitted);
	} else if (streq(verb, "hash")) {
		printf("%s\n", hash);
	} else {
		r = policy_to_canonical_json(p, &json);
		if (r < 0)
			return r;
		printf("%s\n", json);
	}
	return fflush(stdout) == 0 ? 0 : -errno;
}

static void help(void)
{
	printf("Usage: airlock policy check [--admitted SET] FILE\n"
	       "       airlock policy hash [FILE]\n"
	       "       airlock policy show [FILE]\n"
	       "\n"
	       "check validates FILE and prints its tier: the higher of the declared one and what\n"
	       "its fields call for (the field that raised it), and from tier 3 on whether it is\n"
	       "in the admitted set SET (default " LAUNCHER_ADMITTED_DEFAULT "). hash prints its\n"
	       "BLAKE2b-256 hash (the identity that tier 3+ admission uses), show prints its\n"
	       "canonical form. Without FILE: the embedded default policy.\n");
}

int cli_policy(int argc, char **argv)
{
	_cleanup_(policy_freep) struct policy *p = NULL;
	const char *verb = argc > 1 ? argv[1] : NULL;
	const char *admitted = LAUNCHER_ADMITTED_DEFAULT, *file;
	int r;

	if (!verb || streq(verb, "help") || streq(verb, "--help") || streq(verb, "-h")) {
		help();
		return verb ? 0 : CLI_EXIT_FAILURE;
	}
	if (streq(verb, "check") && argc > 2 && startswith(argv[2], "--admitted=")) {
		admitted = argv[2] + strlen("--admitted=");
		argv++, argc--;
	} else if (streq(verb, "check") && argc > 3 && streq(argv[2], "--admitted")) {
		admitted = argv[3];
		argv += 2, argc -= 2;
	}
	file = argc > 2 ? argv[2] : NULL;
	if (!admitted[0] || argc > 3 || (streq(verb, "check") && !file)) {
		log_error("Usage: airlock policy %s%s", verb,
			  streq(verb, "check") ? " [--admitted SET] FILE" : " [FILE]");
		return CLI_EXIT_FAILURE;
	}
	if (!streq(verb, "check") && !streq(verb, "hash") && !streq(verb, "show")) {
		log_error("Unknown policy command \"%s\"; see airlock policy help", verb);
		return CLI_EXIT_FAILURE;
	}
	if (load(file, &p) < 0)
		return CLI_EXIT_FAILURE;
	r = print_policy(verb, file, p, admitted);
	if (r < 0) {
		log_error_errno(r, "Failed to print the policy: %m");
		return CLI_EXIT_FAILURE;
	}
	return 0;
}

int cli_doctor(int argc, char **argv)
{
	bool json = argc > 1 && streq(argv[1], "--json");
	int r;

	if (argc > 1 && (streq(argv[1], "--help") || streq(argv[1], "-h"))) {
		printf("Usage: airlock doctor [--json]\n\n"
		       "Probe, by trying them, the kernel features airlock needs, and print a fix\n"
		       "for each one that is missing. Exit status 1 when a required one is "
		       "missing.\n");
		return 0;
	}
	if (argc > 2 || (argc == 2 && !json)) {
		log_error("Usage: airlock doctor [--json]");
		return CLI_EXIT_FAILURE;
	}
	r = launcher_doctor(stdout, json);
	if (r < 0) {
		log_error_errno(r, "Failed to run the checks: %m");
		return CLI_EXIT_FAILURE;
	}
	return r > 0 ? CLI_EXIT_FAILURE : 0;
}
