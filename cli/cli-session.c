#define LOG_MODULE "cli"

#include <dirent.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "cli/cli.h"
#include "common/fd-util.h"
#include "common/json-util.h"
#include "common/log.h"
#include "common/parse-util.h"
#include "launcher/launcher.h"
#include "policy/policy.h"

#define DEFAULT_TTL_USEC (3600ULL * 1000000)

enum {
	ARG_TTL = 0x100,
	ARG_OWNER,
	ARG_ADMITTED,
	ARG_JSON,
	ARG_REQUEST,
	ARG_KILL_AFTER,
	ARG_FRESH_WORKSPACE,
	ARG_RESULT_FD,
};

static void help(void)
{
	printf(
	    "Usage: airlock session COMMAND ...\n"
	    "\n"
	    "A sandbox kept alive across commands: its workspace, processes and network\n"
	    "state are shared by every command run in it.\n"
	    "\n"
	    "  start [-p POLICY] [-w DIR] [-m SIZE] [--ttl DURATION] [--owner PID]\n"
	    "        [--admitted FILE] [--fresh-workspace]\n"
	    "                                    Start a session; prints its id. It ends on stop,\n"
	    "                                    after --ttl (1h; 0 = never), or with process\n"
	    "                                    PID if --owner is given (default: none).\n"
	    "                                    --fresh-workspace: a new empty one, removed\n"
	    "                                    with the session\n"
	    "  exec ID [-t] [-T DURATION] [-e K=V]... [--json] -- CMD [ARG...]\n"
	    "                                    Run CMD in the session (exit status as run);\n"
	    "                                    -t gives it a terminal of its own, -T a timeout\n"
	    "  exec ID ... --result-fd FD -- CMD  Stream the output, then write the JSON result\n"
	    "                                    (without it) to file descriptor FD\n"
	    "  exec ID --request FILE|-          Run a JSON request (as airlock exec), print the\n"
	    "                                    JSON result\n"
	    "  ls [--json]                       List this user's sessions\n"
	    "  stop ID                           End a session (always tears it down)\n"
	    "  checkpoint ID NAME                Keep a consistent copy of its workspace\n"
	    "  restore ID NAME                   Make its workspace that copy again\n");
}

/* ---- start ---- */

struct start_args {
	const char *policy, *workspace, *memory, *admitted;
	uint64_t ttl_usec;
	pid_t owner;
	bool fresh_workspace;
};

static int parse_start(int argc, char **argv, struct start_args *a)
{
	static const struct option options[] = {
	    {"policy", required_argument, NULL, 'p'},
	    {"workspace", required_argument, NULL, 'w'},
	    {"memory", required_argument, NULL, 'm'},
	    {"ttl", required_argument, NULL, ARG_TTL},
	    {"owner", required_argument, NULL, ARG_OWNER},
	    {"admitted", required_argument, NULL, ARG_ADMITTED},
	    {"fresh-workspace", no_argument, NULL, ARG_FRESH_WORKSPACE},
	    {},
	};
	int c;

	/* No owner unless asked: a caller that starts it through a shell (sh -c, a pipeline,
	 * Python's shell=True) would otherwise end it as soon as that shell exits. */
	*a = (struct start_args){.ttl_usec = DEFAULT_TTL_USEC};
	while ((c = getopt_long(argc, argv, "p:w:m:", options, NULL)) >= 0) {
		switch (c) {
		case 'p':
			a->policy = optarg;
			break;
		case 'w':
			a->workspace = optarg;
			break;
		case 'm':
			a->memory = optarg;
			break;
		case ARG_TTL:
			if (al_parse_duration(optarg, &a->ttl_usec) < 0)
				return log_error_errno(-EINVAL, "--ttl: \"%s\" is not a duration",
						       optarg);
			break;
		case ARG_OWNER:
			a->owner = (pid_t)atoi(optarg);
			if (a->owner < 0 || (a->owner == 0 && !streq(optarg, "0")))
				return log_error_errno(-EINVAL, "--owner: \"%s\" is not a pid",
						       optarg);
			break;
		case ARG_ADMITTED:
			a->admitted = optarg;
			break;
		case ARG_FRESH_WORKSPACE:
			a->fresh_workspace = true;
			break;
		default:
			return -EINVAL;
		}
	}
	if (optind < argc)
		return log_error_errno(-EINVAL, "Unexpected argument \"%s\"", argv[optind]);
	if (a->fresh_workspace && a->workspace)
		return log_error_errno(-EINVAL, "--fresh-workspace and --workspace: give one");
	return 0;
}

static int load_start_policy(const struct start_args *a, struct policy **ret)
{
	_cleanup_(policy_freep) struct policy *p = NULL;
	struct al_error err = {0};
	int r;

	r = a->policy ? policy_load_file(a->policy, &p, &err) : policy_new_default(&p);
	if (r >= 0 && a->workspace)
		r = policy_set_workspace(p, a->workspace, &err);
	if (r >= 0 && a->memory)
		r = policy_set_memory(p, a->memory, &err);
	if (r < 0)
		return log_error_errno(r, "%s%s%s", a->policy && !err.msg[0] ? a->policy : "",
				       err.msg[0] ? "" : ": ", err.msg[0] ? err.msg : strerror(-r));
	*ret = TAKE_PTR(p);
	return 0;
}

/* A new empty workspace, named after the supervisor: removed when the session ends, or, if the
 * supervisor was killed, by its watcher (or the next fresh workspace made). */
static int fresh_workspace(struct policy *p, struct agent_scratch *scratch, struct al_error *err)
{
	int r = agent_scratch_make(scratch, err);

	return r < 0 ? r : policy_set_workspace(p, scratch->path, err);
}

/* The supervisor: detached from the caller's session and stdio, it serves until the end. */
_noreturn_ static void serve(struct policy *p, const struct start_args *a, int ready)
{
	static char *const argv[] = {(char *)"airlock-session", NULL};
	_cleanup_(launcher_session_freep) struct launcher_session *s = NULL;
	struct launcher_session_options so = {
	    .ttl_usec = a->ttl_usec, .owner = a->owner, .ready_fd = ready};
	struct launcher_result res = {0};
	struct launcher_options lo = {.argv = argv,
				      .capture = true,
				      .admitted_path = a->admitted,
				      .kill_grace_usec = 1000000};
	struct al_error err = {0};
	struct agent_scratch scratch = {.lock_fd = -EBADF};
	int fd, r;

	(void)setsid();
	fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		(void)dup2(fd, STDIN_FILENO);
		(void)dup2(fd, STDOUT_FILENO);
		(void)dup2(fd, STDERR_FILENO);
		(void)al_close(fd);
	}
	r = launcher_session_new(&so, &s, &err);
	if (r < 0) {
		(void)al_write_all(ready, "!", 1);
		(void)al_write_all(ready, err.msg, strlen(err.msg));
		_exit(LAUNCHER_EXIT_FAILED);
	}
	lo.session = s;
	r = a->fresh_workspace ? fresh_workspace(p, &scratch, &err) : 0;
	if (r >= 0)
		r = launcher_run(p, &lo, &res, &err);
	if (r < 0)
		launcher_session_fail(s, err.msg[0] ? err.msg : strerror(-r));
	launcher_result_done(&res);
	s = launcher_session_free(s);
	agent_scratch_remove(&scratch);
	_exit(r < 0 ? LAUNCHER_EXIT_FAILED : 0);
}

static int session_start(int argc, char **argv)
{
	_cleanup_(policy_freep) struct policy *p = NULL;
	_cleanup_free_ char *answer = NULL;
	struct start_args a;
	int pipefd[2];
	size_t len = 0;
	pid_t pid;
	int r;

	r = parse_start(argc, argv, &a);
	if (r < 0)
		return LAUNCHER_EXIT_FAILED;
	r = load_start_policy(&a, &p);
	if (r < 0)
		return LAUNCHER_EXIT_FAILED;
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return log_error_errno(-errno, "Failed to create a pipe: %m"), LAUNCHER_EXIT_FAILED;
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return log_error_errno(-errno, "Failed to fork: %m"), LAUNCHER_EXIT_FAILED;
	if (pid == 0) {
		(void)al_close(pipefd[0]);
		/* A grandchild: the session outlives this command, adopted by init. */
		pid = fork();
		if (pid != 0)
			_exit(pid < 0 ? LAUNCHER_EXIT_FAILED : 0);
		serve(p, &a, pipefd[1]);
	}
	(void)al_close(pipefd[1]);
	(void)waitpid(pid, NULL, 0);
	r = al_read_fd(pipefd[0], 4096, &answer, &len);
	(void)al_close(pipefd[0]);
	if (r < 0 || len == 0)
		return log_error("The session's supervisor died while starting"),
		       LAUNCHER_EXIT_FAILED;
	if (answer[0] == '!')
		return log_error("%s", answer + 1), LAUNCHER_EXIT_FAILED;
	printf("%s\n", answer);
	return 0;
}

/* ---- exec ---- */

static int session_exec_request(const char *id, const char *path)
{
	_cleanup_(agent_request_freep) struct agent_request *req = NULL;
	int r;

	if (cli_read_request(path, &req) < 0)
		return LAUNCHER_EXIT_FAILED;
	r = agent_session_exec(id, req, NULL, stdout);
	if (r < 0)
		return log_error_errno(r, "Failed to write the result: %m"), LAUNCHER_EXIT_FAILED;
	return r == AGENT_ERROR_NONE ? 0 : LAUNCHER_EXIT_FAILED;
}

/* The result, its output streamed already, to fd (taken). */
static int print_result_fd(int fd, const char *id, const struct launcher_result *res)
{
	_cleanup_fclose_ FILE *f = fdopen(fd, "w");
	int r;

	if (!f) {
		(void)al_close(fd);
		return -errno;
	}
	r = agent_session_result_print(f, id, res, AGENT_RESULT_ERROR_FIELD);
	if (fflush(f) != 0 && r >= 0)
		r = -errno;
	return r;
}

static int session_exec(int argc, char **argv)
{
	static const struct option options[] = {
	    {"timeout", required_argument, NULL, 'T'},
	    {"tty", no_argument, NULL, 't'},
	    {"env", required_argument, NULL, 'e'},
	    {"json", no_argument, NULL, ARG_JSON},
	    {"request", required_argument, NULL, ARG_REQUEST},
	    {"kill-after", required_argument, NULL, ARG_KILL_AFTER},
	    {"result-fd", required_argument, NULL, ARG_RESULT_FD},
	    {},
	};
	struct launcher_session_exec x = {.stdin_fd = STDIN_FILENO, .kill_grace_usec = 2000000};
	_cleanup_free_ char **env = NULL;
	struct launcher_result res = {0};
	const char *request = NULL, *id;
	struct al_error err = {0};
	size_t n_env = 0;
	bool json = false;
	int c, r, result_fd = -EBADF;

	if (argc < 2 || argv[1][0] == '-')
		return log_error("Missing session id: airlock session exec ID -- CMD"),
		       LAUNCHER_EXIT_FAILED;
	id = argv[1];
	argc--, argv++;
	while ((c = getopt_long(argc, argv, "+T:te:", options, NULL)) >= 0) {
		switch (c) {
		case 't':
			x.terminal = true;
			break;
		case 'T':
			if (al_parse_duration(optarg, &x.timeout_usec) < 0)
				return log_error("--timeout: \"%s\" is not a duration", optarg),
				       LAUNCHER_EXIT_FAILED;
			break;
		case ARG_KILL_AFTER:
			if (al_parse_duration(optarg, &x.kill_grace_usec) < 0)
				return log_error("--kill-after: \"%s\" is not a duration", optarg),
				       LAUNCHER_EXIT_FAILED;
			break;
		case 'e': {
			_cleanup_free_ char *name = strndup(optarg, strcspn(optarg, "="));
			struct al_error name_err = {};
			char **e;

			if (!name)
				return log_error("Out of memory"), LAUNCHER_EXIT_FAILED;
			if (!strchr(optarg, '=') || optarg[0] == '=')
				return log_error("--env: \"%s\" is not NAME=VALUE", optarg),
				       LAUNCHER_EXIT_FAILED;
			if (policy_env_name_check("--env", name, &name_err) < 0)
				return log_error("%s", name_err.msg), LAUNCHER_EXIT_FAILED;
			if (startswith(name, "AIRLOCK_"))
				return log_error("--env: \"%s\": AIRLOCK_* variables are airlock's "
						 "own",
						 name),
				       LAUNCHER_EXIT_FAILED;
			/* Checked before it grows: env stays valid for its cleanup on every path.
			 */
			e = reallocarray(env, n_env + 2, sizeof(*env));
			if (!e)
				return log_error("Out of memory"), LAUNCHER_EXIT_FAILED;
			env = e;
			env[n_env++] = optarg;
			env[n_env] = NULL;
			break;
		}
		case ARG_JSON:
			json = true;
			break;
		case ARG_REQUEST:
			request = optarg;
			break;
		case ARG_RESULT_FD:
			result_fd = atoi(optarg);
			if (result_fd <= STDERR_FILENO || fcntl(result_fd, F_GETFD) < 0)
				return log_error("--result-fd: \"%s\" is not an open file "
						 "descriptor above 2",
						 optarg),
				       LAUNCHER_EXIT_FAILED;
			(void)fcntl(result_fd, F_SETFD, FD_CLOEXEC);
			break;
		default:
			return LAUNCHER_EXIT_FAILED;
		}
	}
	if (json && result_fd >= 0)
		return log_error("--json and --result-fd: give one"), LAUNCHER_EXIT_FAILED;
	if (request)
		return session_exec_request(id, request);
	if (optind >= argc)
		return log_error("Missing command: airlock session exec ID -- CMD"),
		       LAUNCHER_EXIT_FAILED;
	if (cli_check_tty_flag(x.terminal, argv[optind]) < 0)
		return LAUNCHER_EXIT_FAILED;
	x.argv = argv + optind;
	x.env = env;
	x.capture = json;
	/* Without a terminal of its own, the command is not handed this one's input. */
	if (!x.terminal && isatty(STDIN_FILENO))
		x.stdin_fd = -EBADF;
	r = launcher_session_exec(id, &x, &res, &err);
	if (r < 0)
		return log_error("%s", err.msg), LAUNCHER_EXIT_FAILED;
	if (json)
		r = agent_session_result_print(stdout, id, &res, AGENT_RESULT_ERROR_FIELD);
	if (result_fd >= 0)
		r = print_result_fd(result_fd, id, &res);
	if (res.exec_error < 0)
		log_error("%s: %s", x.argv[0],
			  res.exec_error == -ENOENT ? "command not found" : "cannot execute");
	r = r < 0 ? LAUNCHER_EXIT_FAILED : res.exit_code;
	launcher_result_done(&res);
	return r;
}

/* ---- ls, stop, checkpoint, restore ---- */

/* "59m", "2h05m", "never"; "-" when it is unknown. */
static void format_ttl(char *buf, size_t size, long long expires)
{
	long long left = expires - (long long)time(NULL);

	if (expires == 0)
		(void)snprintf(buf, size, "never");
	else if (left < 0)
		(void)snprintf(buf, size, "0s");
	else if (left < 60)
		(void)snprintf(buf, size, "%llds", left);
	else if (left < 3600)
		(void)snprintf(buf, size, "%lldm", left / 60);
	else
		(void)snprintf(buf, size, "%lldh%02lldm", left / 3600, left % 3600 / 60);
}

/* Bytes as "12.3M"; "-" when unknown. */
static void format_bytes(char *buf, size_t size, uint64_t v)
{
	static const char units[] = "KMGT";
	double x = (double)v;
	int u = -1;

	if (v == LAUNCHER_USAGE_UNKNOWN) {
		(void)snprintf(buf, size, "-");
		return;
	}
	while (x >= 1024 && u < 3)
		x /= 1024, u++;
	if (u < 0)
		(void)snprintf(buf, size, "%lluB", (unsigned long long)v);
	else
		(void)snprintf(buf, size, "%.1f%c", x, units[u]);
}

static void print_session(const struct launcher_session_info *info,
			  const struct launcher_session_usage *u, const char *started)
{
	char ttl[32], cpu[32], mem[32], peak[32], ws[32], owner[16];

	format_ttl(ttl, sizeof(ttl), info->expires);
	if (u->cpu_usec == LAUNCHER_USAGE_UNKNOWN)
		(void)snprintf(cpu, sizeof(cpu), "-");
	else
		(void)snprintf(cpu, sizeof(cpu), "%.2fs", (double)u->cpu_usec / 1e6);
	format_bytes(mem, sizeof(mem), u->memory);
	format_bytes(peak, sizeof(peak), u->memory_peak);
	format_bytes(ws, sizeof(ws), u->workspace);
	if (u->workspace_partial)
		(void)strncat(ws, "+", sizeof(ws) - strlen(ws) - 1);
	if (info->owner > 0)
		(void)snprintf(owner, sizeof(owner), "%d", (int)info->owner);
	else
		(void)snprintf(owner, sizeof(owner), "-");
	printf("%-10s %-7d %-7s %-20s %-7s %8s %8s %8s %8s %-16.16s %s\n", info->id, (int)info->pid,
	       owner, started, ttl, cpu, mem, peak, ws, info->policy_hash, info->workspace);
}

/* Each live session of this user, with what it uses now (launcher_session_usage()). */
static int session_ls(int argc, char **argv)
{
	_cleanup_json_ struct json_object *list = NULL;
	_cleanup_free_ char *text = NULL;
	bool json = argc > 1 && streq(argv[1], "--json");
	char base[PATH_MAX], dir[PATH_MAX + 300];
	DIR *d;
	int r = 0;

	if (argc > (json ? 2 : 1))
		return log_error("session ls: unexpected argument \"%s\" (only --json)",
				 argv[json ? 2 : 1]),
		       LAUNCHER_EXIT_FAILED;
	if (launcher_session_base(base, sizeof(base)) < 0)
		return log_error("No folder for session state (set HOME)"), CLI_EXIT_FAILURE;
	launcher_session_remove_stale(base);
	list = json_object_new_array();
	if (!list)
		return log_error("Out of memory"), CLI_EXIT_FAILURE;
	d = opendir(base);
	if (!json)
		printf("%-10s %-7s %-7s %-20s %-7s %8s %8s %8s %8s %-16s %s\n", "ID", "PID",
		       "OWNER", "STARTED", "TTL", "CPU", "MEM", "PEAK", "WS", "POLICY",
		       "WORKSPACE");
	for (struct dirent *de; r >= 0 && d && (de = readdir(d));) {
		struct launcher_session_info info;
		struct launcher_session_usage u;
		struct json_object *o;
		char started[32];
		time_t t;

		if (!launcher_session_id_is_valid(de->d_name))
			continue;
		(void)snprintf(dir, sizeof(dir), "%s/%s", base, de->d_name);
		if (launcher_session_probe(dir) < 0 || launcher_session_read_info(dir, &info) < 0)
			continue;
		launcher_session_usage(&info, &u);
		t = (time_t)info.started;
		(void)strftime(started, sizeof(started), "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
		if (!json) {
			print_session(&info, &u, started);
			continue;
		}
		r = agent_session_json(&info, &u, &o);
		if (r >= 0 && json_object_array_add(list, o) < 0) {
			(void)json_object_put(o);
			r = -ENOMEM;
		}
	}
	if (d)
		(void)closedir(d);
	if (r >= 0 && json)
		r = al_json_to_string(list, &text);
	if (r < 0)
		return log_error_errno(r, "Failed to list the sessions: %m"), CLI_EXIT_FAILURE;
	if (json)
		printf("%s\n", text);
	return 0;
}

int cli_session(int argc, char **argv)
{
	struct al_error err = {0};
	const char *verb = argc > 1 ? argv[1] : NULL;
	int r;

	if (!verb || streq(verb, "-h") || streq(verb, "--help")) {
		help();
		return verb ? 0 : CLI_EXIT_FAILURE;
	}
	argc--, argv++;
	optind = 0;
	if (streq(verb, "start"))
		return session_start(argc, argv);
	if (streq(verb, "exec"))
		return session_exec(argc, argv);
	if (streq(verb, "ls"))
		return session_ls(argc, argv);
	if (streq(verb, "stop") && argc == 2)
		r = launcher_session_stop(argv[1], &err);
	else if (streq(verb, "checkpoint") && argc == 3)
		r = launcher_session_checkpoint(argv[1], argv[2], &err);
	else if (streq(verb, "restore") && argc == 3)
		r = launcher_session_restore(argv[1], argv[2], &err);
	else
		return log_error("Unknown or incomplete command: airlock session %s; see airlock "
				 "session --help",
				 verb),
		       CLI_EXIT_FAILURE;
	if (r < 0)
		return log_error("%s", err.msg), LAUNCHER_EXIT_FAILED;
	return 0;
}
