/* tests/unit/broker/test-source.c: each source of a credential's real value, each way it can
 * fail, and that no failure ever tells the value. */

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/keyctl.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "broker/broker-internal.h"
#include "common/fd-util.h"

/* What no error message may ever contain. */
#define MARK "s3cr3t-v4lue"

/* Key permissions (keyutils.h, which the kernel's headers lack). */
#define KEY_POS_VIEW 0x01000000
#define KEY_POS_SETATTR 0x20000000
#define KEY_USR_VIEW 0x00010000

#define ARGV(...)                                                                                  \
	((struct policy_strv){.items = (char *[]){__VA_ARGS__, NULL},                              \
			      .n = sizeof((char *[]){__VA_ARGS__}) / sizeof(char *)})

static char dir[] = "/tmp/airlock-source-test.XXXXXX";
static const struct broker_sources no_vault = {.vault_path = "/nonexistent/vault"};

static int setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/airlock-source-test.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[512];

	(void)state;
	(void)snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static const char *in_dir(const char *name)
{
	static char path[256];

	(void)snprintf(path, sizeof(path), "%s/%s", dir, name);
	return path;
}

static void write_file(const char *path, const void *data, size_t len)
{
	_cleanup_close_ int fd = -EBADF;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(al_write_all(fd, data, len), 0);
}

static int read_cred(const struct broker_sources *s, const struct policy_credential *cr,
		     struct broker_secret **ret, struct al_error *err)
{
	struct broker_secret *v = NULL;
	int r;

	*err = (struct al_error){};
	r = broker_source_read(s, cr, &v, err);
	if (r < 0) {
		assert_null(v);
		assert_int_equal(err->code, r);
	} else {
		assert_non_null(v);
		assert_int_equal(v->data[v->len], '\0');
	}
	*ret = v;
	return r;
}

/* Reads cr and checks that its value is want. */
static void assert_value(const struct broker_sources *s, const struct policy_credential *cr,
			 const char *want)
{
	_cleanup_(broker_secret_freep) struct broker_secret *v = NULL;
	struct al_error err;

	assert_int_equal(read_cred(s, cr, &v, &err), 0);
	assert_int_equal(v->len, strlen(want));
	assert_memory_equal(v->data, want, v->len);
}

/* Reads cr, checks that it fails with code and a message that names the credential and its
 * source, contains what, and nowhere holds MARK. */
static void assert_fails(const struct broker_sources *s, const struct policy_credential *cr,
			 int code, const char *what)
{
	struct broker_secret *v = NULL;
	struct al_error err;
	char prefix[128];

	assert_int_equal(read_cred(s, cr, &v, &err), code);
	(void)snprintf(prefix, sizeof(prefix), "credential %s: %s source: ", cr->name,
		       policy_cred_source_to_string(cr->source));
	if (!startswith(err.msg, prefix) || !strstr(err.msg, what))
		fail_msg("unexpected message: %s", err.msg);
	assert_null(memmem(&err, sizeof(err), MARK, strlen(MARK)));
}

/* The broker process has no child left: every helper was reaped. */
static void assert_no_children(void)
{
	assert_int_equal(waitpid(-1, NULL, WNOHANG | __WALL), -1);
	assert_int_equal(errno, ECHILD);
}

static uint64_t now_msec(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- env ---- */

static void test_env_source_reads_broker_variable(void **state)
{
	struct policy_credential cr = {
	    .name = "anthropic", .source = POLICY_CRED_SOURCE_ENV, .source_var = "AL_TEST_KEY"};

	(void)state;
	assert_int_equal(setenv("AL_TEST_KEY", "sk-ant-123\n", 1), 0);
	assert_value(&no_vault, &cr, "sk-ant-123\n"); /* an env value is taken as is */
	assert_int_equal(unsetenv("AL_TEST_KEY"), 0);
}

static void test_env_source_fails_when_variable_missing_or_empty(void **state)
{
	struct policy_credential cr = {
	    .name = "anthropic", .source = POLICY_CRED_SOURCE_ENV, .source_var = "AL_TEST_NONE"};

	(void)state;
	assert_int_equal(unsetenv("AL_TEST_NONE"), 0);
	assert_fails(&no_vault, &cr, -ENOENT, "$AL_TEST_NONE is not set");
	assert_int_equal(setenv("AL_TEST_NONE", "", 1), 0);
	assert_fails(&no_vault, &cr, -ENODATA, "$AL_TEST_NONE is empty");
	assert_int_equal(unsetenv("AL_TEST_NONE"), 0);
}

/* ---- file ---- */

static void test_file_source_reads_value_and_drops_one_newline(void **state)
{
	struct policy_credential cr = {.name = "openai", .source = POLICY_CRED_SOURCE_FILE};
	const char *p = in_dir("key");
	_cleanup_(broker_secret_freep) struct broker_secret *v = NULL;
	struct al_error err;

	(void)state;
	cr.source_path = (char *)p;
	write_file(p, "sk-abc", 6);
	assert_value(&no_vault, &cr, "sk-abc");
	write_file(p, "sk-abc\n", 7);
	assert_value(&no_vault, &cr, "sk-abc");
	write_file(p, "sk-abc\r\n", 8);
	assert_value(&no_vault, &cr, "sk-abc");
	write_file(p, "sk-abc\n\n", 8);
	assert_value(&no_vault, &cr, "sk-abc\n");
	write_file(p, "a b\0c", 5);
	assert_int_equal(read_cred(&no_vault, &cr, &v, &err), 0);
	assert_int_equal(v->len, 5);
	assert_memory_equal(v->data, "a b\0c", 5);
}

static void test_file_source_refuses_symbolic_links(void **state)
{
	struct policy_credential cr = {.name = "openai", .source = POLICY_CRED_SOURCE_FILE};
	char path[512];

	(void)state;
	assert_int_equal(mkdir(in_dir("real"), 0700), 0);
	write_file(in_dir("real/key"), "v", 1);
	(void)snprintf(path, sizeof(path), "%s", in_dir("real/key"));
	assert_int_equal(symlink(path, in_dir("link")), 0);
	assert_int_equal(symlink("real", in_dir("linkdir")), 0);
	cr.source_path = path;
	(void)snprintf(path, sizeof(path), "%s", in_dir("real/key"));
	assert_value(&no_vault, &cr, "v");
	(void)snprintf(path, sizeof(path), "%s", in_dir("link"));
	assert_fails(&no_vault, &cr, -ELOOP, "symbolic link");
	(void)snprintf(path, sizeof(path), "%s", in_dir("linkdir/key"));
	assert_fails(&no_vault, &cr, -ELOOP, "symbolic link");
	(void)snprintf(path, sizeof(path), "/proc/self/root%s", in_dir("real/key"));
	assert_fails(&no_vault, &cr, -ELOOP, "symbolic link");
}

static void test_file_source_refuses_fifo_without_blocking(void **state)
{
	struct policy_credential cr = {.name = "openai", .source = POLICY_CRED_SOURCE_FILE};
	uint64_t start = now_msec();

	(void)state;
	cr.source_path = (char *)in_dir("fifo");
	assert_int_equal(mkfifo(cr.source_path, 0600), 0);
	(void)alarm(10); /* a hang kills the test */
	assert_fails(&no_vault, &cr, -EINVAL, "is not a regular file");
	(void)alarm(0);
	assert_true(now_msec() - start < 1000);
}

static void test_file_source_refuses_directory_and_relative_path(void **state)
{
	struct policy_credential cr = {.name = "openai", .source = POLICY_CRED_SOURCE_FILE};

	(void)state;
	cr.source_path = dir;
	assert_fails(&no_vault, &cr, -EINVAL, "is not a regular file");
	cr.source_path = "tmp/key";
	assert_fails(&no_vault, &cr, -EINVAL, "\"tmp/key\" is not an absolute path");
}

static void test_file_source_enforces_size_limit(void **state)
{
	struct policy_credential cr = {.name = "openai", .source = POLICY_CRED_SOURCE_FILE};
	_cleanup_free_ char *buf = NULL;
	const char *p = in_dir("big");
	_cleanup_(broker_secret_freep) struct broker_secret *v = NULL;
	struct al_error err;

	(void)state;
	cr.source_path = (char *)p;
	buf = malloc(BROKER_SECRET_MAX + 3);
	assert_non_null(buf);
	memset(buf, 'x', BROKER_SECRET_MAX + 3);
	memcpy(buf, MARK, strlen(MARK));
	write_file(p, buf, BROKER_SECRET_MAX);
	assert_int_equal(read_cred(&no_vault, &cr, &v, &err), 0);
	assert_int_equal(v->len, BROKER_SECRET_MAX);
	buf[BROKER_SECRET_MAX] = '\r';
	buf[BROKER_SECRET_MAX + 1] = '\n';
	write_file(p, buf, BROKER_SECRET_MAX + 2);
	assert_value(&no_vault, &cr, v->data); /* the same value: its "\r\n" dropped */
	write_file(p, buf, BROKER_SECRET_MAX + 1);
	assert_fails(&no_vault, &cr, -EFBIG, "is longer than 65536 bytes");
	buf[BROKER_SECRET_MAX + 1] = 'x';
	write_file(p, buf, BROKER_SECRET_MAX + 3);
	assert_fails(&no_vault, &cr, -EFBIG, "is longer than 65536 bytes");
}

static void test_file_source_fails_when_empty_or_missing(void **state)
{
	struct policy_credential cr = {.name = "openai", .source = POLICY_CRED_SOURCE_FILE};

	(void)state;
	cr.source_path = (char *)in_dir("empty");
	write_file(cr.source_path, "", 0);
	assert_fails(&no_vault, &cr, -ENODATA, "is empty");
	write_file(cr.source_path, "\n", 1);
	assert_fails(&no_vault, &cr, -ENODATA, "is empty");
	cr.source_path = (char *)in_dir("missing");
	assert_fails(&no_vault, &cr, -ENOENT, "No such file or directory");
}

/* ---- command ---- */

static void test_command_source_reads_stdout_and_drops_one_newline(void **state)
{
	struct policy_credential cr = {.name = "gh", .source = POLICY_CRED_SOURCE_COMMAND};

	(void)state;
	cr.source_argv = ARGV("/usr/bin/printf", "%s", "ghp_123");
	assert_value(&no_vault, &cr, "ghp_123");
	cr.source_argv = ARGV("/usr/bin/printf", "ghp_123\\n");
	assert_value(&no_vault, &cr, "ghp_123");
	cr.source_argv = ARGV("/usr/bin/printf", "ghp_123\\r\\n");
	assert_value(&no_vault, &cr, "ghp_123");
	cr.source_argv = ARGV("/usr/bin/printf", "ghp_123\\n\\n");
	assert_value(&no_vault, &cr, "ghp_123\n");
	/* execvp() semantics: a bare name is looked up in $PATH. */
	cr.source_argv = ARGV("printf", "%s", "found");
	assert_value(&no_vault, &cr, "found");
	assert_no_children();
}

static void test_command_source_fails_on_nonzero_exit_or_signal(void **state)
{
	struct policy_credential cr = {.name = "gh", .source = POLICY_CRED_SOURCE_COMMAND};

	(void)state;
	cr.source_argv = ARGV("/bin/sh", "-c", "printf " MARK "; exit 3");
	assert_fails(&no_vault, &cr, -EIO, "\"/bin/sh\" exited with status 3");
	cr.source_argv = ARGV("/bin/sh", "-c", "printf " MARK "; kill -TERM $$");
	assert_fails(&no_vault, &cr, -EIO, "\"/bin/sh\" was killed by signal 15");
	cr.source_argv = ARGV("/bin/true");
	assert_fails(&no_vault, &cr, -ENODATA, "the output of \"/bin/true\" is empty");
	assert_no_children();
}

/* The pid a helper wrote to path, once it is there. */
static pid_t read_pid_file(const char *path)
{
	_cleanup_fclose_ FILE *f = NULL;
	int pid = 0;

	f = fopen(path, "re");
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%d", &pid), 1);
	return pid;
}

/* Whether pid is gone or a zombie nobody reaped yet: either way it no longer runs. */
static bool pid_is_dead(pid_t pid)
{
	char path[64], buf[512], *p;
	_cleanup_fclose_ FILE *f = NULL;

	(void)snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return true;
	if (!fgets(buf, sizeof(buf), f))
		return true;
	p = strrchr(buf, ')');
	return p && (p[2] == 'Z' || p[2] == 'X');
}

static void test_command_source_kills_process_group_on_timeout(void **state)
{
	struct broker_sources s = {.command_timeout_usec = 200 * 1000};
	struct policy_credential cr = {.name = "gh", .source = POLICY_CRED_SOURCE_COMMAND};
	char script[512];
	uint64_t start;
	pid_t sleeper;

	(void)state;
	(void)snprintf(script, sizeof(script), "printf %s; sleep 5 & echo $! > %s; wait", MARK,
		       in_dir("sleep.pid"));
	cr.source_argv = ARGV("/bin/sh", "-c", script);
	start = now_msec();
	assert_fails(&s, &cr, -ETIMEDOUT, "\"/bin/sh\" did not finish within 200 ms");
	assert_true(now_msec() - start < 1500);
	assert_no_children();
	sleeper = read_pid_file(in_dir("sleep.pid"));
	for (int i = 0; i < 200 && !pid_is_dead(sleeper); i++)
		(void)usleep(10 * 1000);
	assert_true(pid_is_dead(sleeper));
}

static void test_command_source_enforces_size_limit(void **state)
{
	struct policy_credential cr = {.name = "gh", .source = POLICY_CRED_SOURCE_COMMAND};
	uint64_t start = now_msec();
	_cleanup_(broker_secret_freep) struct broker_secret *v = NULL;
	struct al_error err;

	(void)state;
	/* Endless output is cut off at the limit, not read until the time limit. */
	cr.source_argv = ARGV("/usr/bin/yes", MARK);
	assert_fails(&no_vault, &cr, -EFBIG, "the output of \"/usr/bin/yes\" is longer than");
	assert_true(now_msec() - start < 2000);
	cr.source_argv = ARGV("/bin/sh", "-c", "head -c 65536 /dev/zero | tr '\\0' x");
	assert_int_equal(read_cred(&no_vault, &cr, &v, &err), 0);
	assert_int_equal(v->len, BROKER_SECRET_MAX);
	cr.source_argv = ARGV("/bin/sh", "-c", "head -c 65537 /dev/zero | tr '\\0' x");
	assert_fails(&no_vault, &cr, -EFBIG, "is longer than 65536 bytes");
	assert_no_children();
}

static void test_command_source_reports_exec_failure(void **state)
{
	struct policy_credential cr = {.name = "gh", .source = POLICY_CRED_SOURCE_COMMAND};

	(void)state;
	cr.source_argv = ARGV("/nonexistent/helper", "x");
	assert_fails(&no_vault, &cr, -ENOENT,
		     "cannot run \"/nonexistent/helper\": No such file or directory");
	cr.source_argv = ARGV("airlock-no-such-helper");
	assert_fails(&no_vault, &cr, -ENOENT,
		     "cannot run \"airlock-no-such-helper\": No such file or directory");
	write_file(in_dir("noexec"), "#!/bin/sh\necho x\n", 17);
	cr.source_argv = ARGV((char *)in_dir("noexec"));
	assert_fails(&no_vault, &cr, -EACCES, "Permission denied");
	cr.source_argv = ARGV("bin/helper");
	assert_fails(&no_vault, &cr, -EINVAL, "\"bin/helper\" is a relative path");
	assert_no_children();
}

static void test_command_source_ignores_stderr_and_gives_empty_stdin(void **state)
{
	struct policy_credential cr = {.name = "gh", .source = POLICY_CRED_SOURCE_COMMAND};

	(void)state;
	cr.source_argv = ARGV("/bin/sh", "-c", "echo noise >&2; cat; printf value");
	assert_value(&no_vault, &cr, "value");
	cr.source_argv =
	    ARGV("/bin/sh", "-c", "readlink /proc/$$/fd/0 /proc/$$/fd/2; pwd; printf x");
	assert_value(&no_vault, &cr, "/dev/null\n/dev/null\n/\nx");
}

static void test_command_source_leaks_no_fd_to_helper(void **state)
{
	struct policy_credential cr = {.name = "gh", .source = POLICY_CRED_SOURCE_COMMAND};
	_cleanup_close_ int leak = -EBADF;
	int p[2];

	(void)state;
	leak = open("/dev/null", O_RDONLY); /* no O_CLOEXEC, on purpose */
	assert_true(leak >= 0);
	assert_int_equal(pipe(p), 0);
	cr.source_argv = ARGV("/bin/sh", "-c", "ls /proc/$$/fd; :");
	assert_value(&no_vault, &cr, "0\n1\n2");
	(void)close(p[0]);
	(void)close(p[1]);
}

static void test_command_source_runs_helper_in_own_group_with_default_signals(void **state)
{
	struct policy_credential cr = {.name = "gh", .source = POLICY_CRED_SOURCE_COMMAND};
	struct sigaction ign = {.sa_handler = SIG_IGN}, old;
	sigset_t term;

	(void)state;
	cr.source_argv =
	    ARGV("/bin/sh", "-c", "set -- $(cat /proc/$$/stat); [ $5 = $$ ] && echo own");
	assert_value(&no_vault, &cr, "own");
	/* The broker ignores SIGPIPE and blocks signals: its helper does neither. */
	assert_int_equal(sigaction(SIGPIPE, &ign, &old), 0);
	assert_int_equal(sigemptyset(&term), 0);
	assert_int_equal(sigaddset(&term, SIGTERM), 0);
	assert_int_equal(sigprocmask(SIG_BLOCK, &term, NULL), 0);
	cr.source_argv = ARGV("/usr/bin/grep", "-E", "^Sig(Ign|Blk)", "/proc/self/status");
	assert_value(&no_vault, &cr, "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000");
	assert_int_equal(sigprocmask(SIG_UNBLOCK, &term, NULL), 0);
	assert_int_equal(sigaction(SIGPIPE, &old, NULL), 0);
	assert_no_children();
}

static void test_command_source_does_not_wait_for_leftover_processes(void **state)
{
	struct policy_credential cr = {.name = "gh", .source = POLICY_CRED_SOURCE_COMMAND};
	char script[512];
	uint64_t start = now_msec();

	(void)state;
	/* The background sleep keeps the stdout pipe open after the helper exits. */
	(void)snprintf(script, sizeof(script), "printf v; sleep 5 & echo $! > %s",
		       in_dir("left.pid"));
	cr.source_argv = ARGV("/bin/sh", "-c", script);
	assert_value(&no_vault, &cr, "v");
	assert_true(now_msec() - start < 2000);
	assert_no_children();
	(void)kill(read_pid_file(in_dir("left.pid")), SIGKILL);
}

struct reader {
	pthread_t thread;
	int id, failures;
};

static void *read_in_thread(void *arg)
{
	struct reader *rd = arg;
	char want[32];
	struct policy_credential cr = {.name = "gh", .source = POLICY_CRED_SOURCE_COMMAND};

	(void)snprintf(want, sizeof(want), "thread-%d", rd->id);
	cr.source_argv = ARGV("/usr/bin/printf", "%s\\n", want);
	for (int i = 0; i < 25; i++) {
		struct broker_secret *v = NULL;
		struct al_error err = {};

		if (broker_source_read(&no_vault, &cr, &v, &err) < 0 || !streq(v->data, want))
			rd->failures++;
		broker_secret_free(v);
	}
	return NULL;
}

static void test_command_source_is_thread_safe(void **state)
{
	struct reader rd[4];

	(void)state;
	for (int i = 0; i < 4; i++) {
		rd[i] = (struct reader){.id = i};
		assert_int_equal(pthread_create(&rd[i].thread, NULL, read_in_thread, &rd[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		assert_int_equal(pthread_join(rd[i].thread, NULL), 0);
		assert_int_equal(rd[i].failures, 0);
	}
	assert_no_children();
}

/* Makes clone3 fail with ENOSYS, as container seccomp profiles do. */
static int refuse_clone3(void)
{
#if defined(__x86_64__)
	const unsigned arch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
	const unsigned arch = AUDIT_ARCH_AARCH64;
#else
	const unsigned arch = 0;
#endif
	struct sock_filter f[] = {
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arch, 1, 0),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 0, 1),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = ELEMENTSOF(f), .filter = f};

	if (arch == 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -1;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

static void test_command_source_works_where_clone3_is_refused(void **state)
{
	struct policy_credential cr = {.name = "gh", .source = POLICY_CRED_SOURCE_COMMAND};
	int status;
	pid_t pid;

	(void)state;
	cr.source_argv = ARGV("/bin/sh", "-c", "printf ok; exit 4");
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct broker_secret *v = NULL;
		struct al_error err = {};
		int r;

		if (refuse_clone3() < 0 || syscall(__NR_clone3, NULL, 0) >= 0 || errno != ENOSYS)
			_exit(77);
		r = broker_source_read(&no_vault, &cr, &v, &err);
		if (r != -EIO || !strstr(err.msg, "exited with status 4"))
			_exit(1);
		cr.source_argv = ARGV("/usr/bin/printf", "ok");
		r = broker_source_read(&no_vault, &cr, &v, &err);
		_exit(r == 0 && streq(v->data, "ok") && waitpid(-1, NULL, WNOHANG | __WALL) < 0
			  ? 0
			  : 2);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77)
		skip();
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* ---- keyring ---- */

static long add_user_key(const char *desc, const char *value)
{
	long id;

	id = syscall(SYS_add_key, "user", desc, value, strlen(value), KEY_SPEC_PROCESS_KEYRING);
	assert_true(id > 0);
	return id;
}

static void test_keyring_source_reads_user_key(void **state)
{
	struct policy_credential cr = {.name = "al-test-name",
				       .source = POLICY_CRED_SOURCE_KEYRING};
	long id1, id2;

	(void)state;
	id1 = add_user_key("al-test-key", "from-keyring");
	id2 = add_user_key("al-test-name", "by-name");
	cr.source_key = "al-test-key";
	assert_value(&no_vault, &cr, "from-keyring");
	cr.source_key = NULL;
	assert_value(&no_vault, &cr, "by-name");
	assert_int_equal(syscall(SYS_keyctl, KEYCTL_UNLINK, id1, KEY_SPEC_PROCESS_KEYRING), 0);
	assert_int_equal(syscall(SYS_keyctl, KEYCTL_UNLINK, id2, KEY_SPEC_PROCESS_KEYRING), 0);
}

static void test_keyring_source_fails_on_missing_or_unsearchable_key(void **state)
{
	struct policy_credential cr = {
	    .name = "k", .source = POLICY_CRED_SOURCE_KEYRING, .source_key = "al-test-missing"};
	long id;

	(void)state;
	assert_fails(&no_vault, &cr, -ENOENT,
		     "no user key \"al-test-missing\" in this process's keyrings");
	id = add_user_key("al-test-private", MARK);
	/* Possessor and owner may see it and change its attributes, not search or read it: the
	 * kernel's search skips it (its -EACCES is overridden by the next keyring's "no key"). */
	assert_int_equal(
	    syscall(SYS_keyctl, KEYCTL_SETPERM, id, KEY_POS_VIEW | KEY_POS_SETATTR | KEY_USR_VIEW),
	    0);
	cr.source_key = "al-test-private";
	assert_fails(&no_vault, &cr, -ENOENT, "no user key \"al-test-private\"");
	assert_int_equal(syscall(SYS_keyctl, KEYCTL_UNLINK, id, KEY_SPEC_PROCESS_KEYRING), 0);
}

/* ---- vault ---- */

static void test_vault_source_reads_entry(void **state)
{
	static const unsigned char key[32] = {1, 2, 3};
	struct broker_vault_key k = {.key = key};
	struct broker_vault *v = NULL;
	struct policy_credential cr = {.name = "github", .source = POLICY_CRED_SOURCE_VAULT};
	struct broker_sources s = {.vault_path = "/srv/vault"};

	(void)state;
	assert_int_equal(broker_vault_new(&k, &v), 0);
	assert_int_equal(broker_vault_put(v, "github", "ghp_vault", 9, 1), 0);
	assert_int_equal(broker_vault_put(v, "other", "other-value", 11, 1), 0);
	assert_int_equal(broker_vault_put(v, "empty", "", 0, 1), 0);
	s.vault = v;
	assert_value(&s, &cr, "ghp_vault");
	cr.source_key = "other";
	assert_value(&s, &cr, "other-value");
	cr.source_key = "nope";
	assert_fails(&s, &cr, -ENOENT, "no secret \"nope\" in /srv/vault");
	cr.source_key = "empty";
	assert_fails(&s, &cr, -ENODATA, "secret \"empty\" in /srv/vault is empty");
	cr.source_key = NULL;
	assert_fails(&no_vault, &cr, -ENOENT, "no vault is open");
	broker_vault_free(v);
}

/* ---- no value in messages ---- */

static void test_no_error_message_contains_the_value(void **state)
{
	struct broker_sources s = {.command_timeout_usec = 100 * 1000};
	struct policy_credential cr = {.name = "c", .source = POLICY_CRED_SOURCE_ENV};
	_cleanup_free_ char *big = NULL;

	(void)state;
	big = malloc(2 * BROKER_SECRET_MAX + 1);
	assert_non_null(big);
	for (size_t i = 0; i < 2 * BROKER_SECRET_MAX; i += strlen(MARK))
		memcpy(big + i, MARK, MIN(strlen(MARK), 2 * BROKER_SECRET_MAX - i));
	big[2 * BROKER_SECRET_MAX] = '\0';
	cr.source_var = "AL_TEST_BIG";
	assert_int_equal(setenv("AL_TEST_BIG", big, 1), 0);
	assert_fails(&s, &cr, -EFBIG, "$AL_TEST_BIG is longer than");
	assert_int_equal(unsetenv("AL_TEST_BIG"), 0);
	cr.source = POLICY_CRED_SOURCE_FILE;
	cr.source_path = (char *)in_dir("big-mark");
	write_file(cr.source_path, big, 2 * BROKER_SECRET_MAX);
	assert_fails(&s, &cr, -EFBIG, "is longer than");
	cr.source = POLICY_CRED_SOURCE_COMMAND;
	cr.source_argv = ARGV("/bin/cat", (char *)in_dir("big-mark"));
	assert_fails(&s, &cr, -EFBIG, "is longer than");
	cr.source_argv = ARGV("/bin/sh", "-c", "printf " MARK "; exit 1");
	assert_fails(&s, &cr, -EIO, "exited with status 1");
	cr.source_argv = ARGV("/bin/sh", "-c", "printf " MARK "; kill -KILL $$");
	assert_fails(&s, &cr, -EIO, "killed by signal 9");
	cr.source_argv = ARGV("/bin/sh", "-c", "printf " MARK "; echo " MARK " >&2; sleep 5");
	assert_fails(&s, &cr, -ETIMEDOUT, "did not finish within 100 ms");
	assert_no_children();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_env_source_reads_broker_variable),
	    cmocka_unit_test(test_env_source_fails_when_variable_missing_or_empty),
	    cmocka_unit_test_setup_teardown(test_file_source_reads_value_and_drops_one_newline,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_file_source_refuses_symbolic_links, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_file_source_refuses_fifo_without_blocking, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_file_source_refuses_directory_and_relative_path,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_file_source_enforces_size_limit, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_file_source_fails_when_empty_or_missing, setup,
					    teardown),
	    cmocka_unit_test(test_command_source_reads_stdout_and_drops_one_newline),
	    cmocka_unit_test(test_command_source_fails_on_nonzero_exit_or_signal),
	    cmocka_unit_test_setup_teardown(test_command_source_kills_process_group_on_timeout,
					    setup, teardown),
	    cmocka_unit_test(test_command_source_enforces_size_limit),
	    cmocka_unit_test_setup_teardown(test_command_source_reports_exec_failure, setup,
					    teardown),
	    cmocka_unit_test(test_command_source_ignores_stderr_and_gives_empty_stdin),
	    cmocka_unit_test(test_command_source_leaks_no_fd_to_helper),
	    cmocka_unit_test(test_command_source_runs_helper_in_own_group_with_default_signals),
	    cmocka_unit_test_setup_teardown(
		test_command_source_does_not_wait_for_leftover_processes, setup, teardown),
	    cmocka_unit_test(test_command_source_is_thread_safe),
	    cmocka_unit_test(test_command_source_works_where_clone3_is_refused),
	    cmocka_unit_test(test_keyring_source_reads_user_key),
	    cmocka_unit_test(test_keyring_source_fails_on_missing_or_unsearchable_key),
	    cmocka_unit_test(test_vault_source_reads_entry),
	    cmocka_unit_test_setup_teardown(test_no_error_message_contains_the_value, setup,
					    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
