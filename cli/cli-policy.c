#define LOG_MODULE "cli"

#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "common/log.h"
#include "launcher/launcher.h"
#include "policy/policy.h"

static int load(const char *path, bool unprofiled, struct policy **ret)
{
	struct al_error err = {0};
	int r;

	if (!path) {
		r = policy_new_default(ret);
		if (r < 0)
			return log_error_errno(r, "Failed to build the default policy: %m");
		return 0;
	}
	r = unprofiled ? policy_load_file_unprofiled(path, ret, &err)
		       : policy_load_file(path, ret, &err);
	if (r < 0)
		return log_error_errno(r, "%s: %s", path, err.msg);
	return 0;
}

/* The admission contract: a policy of tier 3 or more runs only by its exact hash. */
static int check_admission(const struct policy *p, enum policy_profile prof, const char *admitted,
			   struct al_error *err)
{
	int tier = policy_effective_tier(p, NULL);
	struct al_error why = {0};

	if (tier < POLICY_TIER_ADMITTED || policy_check_admitted(p, admitted, &why) >= 0)
		return 0;
	return al_error_set(err, -EPERM,
			    "tier: %s runs a tier %d policy only by its exact hash: %s",
			    policy_profile_to_string(prof), tier, why.msg);
}

/* One line per contract of prof: "linux-ns-v1 seccomp: ok", or the refusal. Returns how many
 * were refused. */
static unsigned print_contracts(const struct policy *p, enum policy_profile prof,
				const char *admitted)
{
	const char *name = policy_profile_to_string(prof);
	unsigned refused = 0;

	for (size_t i = 0; i < policy_profile_n_contracts(prof); i++) {
		const char *contract = policy_profile_contract(prof, i);
		struct al_error err = {0};
		int r;

		r = policy_profile_check_contract(p, prof, i, &err);
		if (r >= 0 && streq(contract, "admission"))
			r = check_admission(p, prof, admitted, &err);
		if (r < 0)
			refused++;
		printf("%s %s: %s\n", name, contract, r < 0 ? err.msg : "ok");
	}
	return refused;
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
	printf(
	    "Usage: airlock policy check [--admitted SET] [--profile PROFILE] FILE\n"
	    "       airlock policy hash [FILE]\n"
	    "       airlock policy show [FILE]\n"
	    "\n"
	    "check validates FILE and prints its tier: the higher of the declared one and what\n"
	    "its fields call for (the field that raised it), and from tier 3 on whether it is\n"
	    "in the admitted set SET (default " LAUNCHER_ADMITTED_DEFAULT "). With a profile\n"
	    "(--profile linux-ns-v1, or the policy's own \"profile\" field) it first prints\n"
	    "one line per contract of the profile, ok or why not, and fails unless all are met.\n"
	    "hash prints its BLAKE2b-256 hash (the identity that tier 3+ admission uses), show\n"
	    "prints its canonical form. Without FILE: the embedded default policy.\n");
}

/* Whether argv[*i] is option name, as "--name=VALUE" or "--name VALUE" (then *i moves on). */
static bool option_value(int argc, char **argv, int *i, const char *name, const char **ret)
{
	const char *rest = startswith(argv[*i], name);

	if (rest && rest[0] == '=') {
		*ret = rest + 1;
		return true;
	}
	if (rest && rest[0] == '\0' && *i + 1 < argc) {
		*ret = argv[++*i];
		return true;
	}
	return false;
}

/* check's options, in any order before FILE. Returns the index of FILE's argument or -EINVAL. */
static int check_options(int argc, char **argv, const char **admitted, const char **profile)
{
	int i = 2;

	for (; i < argc && startswith(argv[i], "--"); i++)
		if (!option_value(argc, argv, &i, "--admitted", admitted) &&
		    !option_value(argc, argv, &i, "--profile", profile))
			return -EINVAL;
	return i;
}

int cli_policy(int argc, char **argv)
{
	_cleanup_(policy_freep) struct policy *p = NULL;
	const char *verb = argc > 1 ? argv[1] : NULL;
	const char *admitted = LAUNCHER_ADMITTED_DEFAULT, *profile_name = NULL, *file;
	enum policy_profile profile = POLICY_PROFILE_NONE;
	struct al_error err = {0};
	bool check;
	unsigned refused = 0;
	int i = 2, r;

	if (!verb || streq(verb, "help") || streq(verb, "--help") || streq(verb, "-h")) {
		help();
		return verb ? 0 : CLI_EXIT_FAILURE;
	}
	check = streq(verb, "check");
	if (check)
		i = check_options(argc, argv, &admitted, &profile_name);
	file = i >= 0 && argc > i ? argv[i] : NULL;
	if (i < 0 || !admitted[0] || argc > i + 1 || (check && !file)) {
		log_error("Usage: airlock policy %s%s", verb,
			  check ? " [--admitted SET] [--profile PROFILE] FILE" : " [FILE]");
		return CLI_EXIT_FAILURE;
	}
	if (!check && !streq(verb, "hash") && !streq(verb, "show")) {
		log_error("Unknown policy command \"%s\"; see airlock policy help", verb);
		return CLI_EXIT_FAILURE;
	}
	if (profile_name && policy_profile_from_string(profile_name, &profile) < 0) {
		log_error("--profile: \"%s\" is not a profile airlock enforces (linux-ns-v1)",
			  profile_name);
		return CLI_EXIT_FAILURE;
	}
	if (load(file, check, &p) < 0)
		return CLI_EXIT_FAILURE;
	if (check && policy_check_runnable(p, &err) < 0) {
		log_error("%s: %s", file, err.msg);
		return CLI_EXIT_FAILURE;
	}
	if (check && profile == POLICY_PROFILE_NONE)
		profile = p->profile;
	if (check && profile != POLICY_PROFILE_NONE)
		refused = print_contracts(p, profile, admitted);
	/* Conforming is not enforced: airlock run holds a policy to a profile only when it says so
	 * (red team 2: such a file read as conforming while its run, as root, had no user
	 * namespace). */
	if (check && profile != POLICY_PROFILE_NONE && p->profile != profile)
		printf("note: the file has no \"profile\": \"%s\": airlock run holds it to the "
		       "profile only once it does\n",
		       policy_profile_to_string(profile));
	if (refused > 0) {
		(void)fflush(stdout);
		log_error("%s: does not conform to %s (%u contract%s refused)", file,
			  policy_profile_to_string(profile), refused, refused == 1 ? "" : "s");
		return CLI_EXIT_FAILURE;
	}
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
