/* The seccomp filters against the real kernel: a refused call gets the errno of its table row
 * through airlock's notification handler and is reported by name; allowed calls work; clone3,
 * openat2, io_uring and syscalls newer than libseccomp's table get ENOSYS without a report; no
 * level lets a file get set-id bits; a sandboxed program cannot add a listener of its own; and
 * the strict allow list runs real tools without a single refusal. Needs no root. */

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "tests/integration/launcher/kctl-lib.h"

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
/* newer than Debian 12's kernel headers; the same number on every architecture */
#define NR_FCHMODAT2 452
#define NR_MSEAL 462

static const char *const level_names[] = {"baseline", "restricted", "strict"};
static struct launcher_seccomp_filter filters[3];

/* The child's checks: each failing one exits with its line number. */
#define EXPECT(cond)                                                                               \
	do {                                                                                       \
		if (!(cond))                                                                       \
			return __LINE__ % 250 + 1;                                                 \
	} while (0)

static int refused_calls(void *arg)
{
	enum policy_seccomp level = *(enum policy_seccomp *)arg;
	int fd;

	EXPECT(mount("none", "/tmp", "tmpfs", 0, NULL) < 0 && errno == EPERM);
	EXPECT(unshare(CLONE_NEWUSER) < 0 && errno == EPERM);
	EXPECT(socket(AF_VSOCK, SOCK_STREAM, 0) < 0 && errno == EAFNOSUPPORT);
	EXPECT(syscall(SYS_keyctl, 0, 0, 0, 0, 0) < 0 && errno == EPERM);
	/* refused by the filter before the kernel could say ENOTTY */
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	EXPECT(fd >= 0);
	EXPECT(ioctl(fd, TIOCSTI, "x") < 0 && errno == EPERM);
	(void)close(fd);
	/* not violations: libraries' probes, answered by the filter itself */
	EXPECT(syscall(SYS_clone3, NULL, 0) < 0 && errno == ENOSYS);
	EXPECT(syscall(SYS_io_uring_setup, 8, NULL) < 0 && errno == ENOSYS);
	EXPECT(syscall(SYS_io_uring_enter, 0, 0, 0, 0, NULL, 0) < 0 && errno == ENOSYS);
	EXPECT(syscall(SYS_io_uring_register, 0, 0, NULL, 0) < 0 && errno == ENOSYS);
	if (level >= POLICY_SECCOMP_RESTRICTED)
		EXPECT(socket(AF_PACKET, SOCK_RAW, 0) < 0 && errno == EAFNOSUPPORT);
	if (level == POLICY_SECCOMP_STRICT)
		EXPECT(syscall(SYS_io_setup, 8, NULL) < 0 && errno == ENOSYS);
	return 0;
}

static int allowed_calls(void *arg)
{
	char buf[8];
	pid_t pid;
	int fd, sv[2];

	(void)arg;
	fd = open("/etc/hostname", O_RDONLY | O_CLOEXEC);
	EXPECT(fd >= 0 || errno == ENOENT);
	if (fd >= 0) {
		EXPECT(read(fd, buf, sizeof(buf)) >= 0);
		(void)close(fd);
	}
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	EXPECT(fd >= 0);
	(void)close(fd);
	EXPECT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	(void)close(sv[0]);
	(void)close(sv[1]);
	EXPECT(mknod("/dev/shm/airlock-kctl-fifo", S_IFIFO | 0600, 0) == 0 || errno == EEXIST);
	(void)unlink("/dev/shm/airlock-kctl-fifo");
	pid = fork();
	EXPECT(pid >= 0);
	if (pid == 0)
		_exit(7);
	EXPECT(kctl_wait(pid) == 7);
	pid = fork();
	EXPECT(pid >= 0);
	if (pid == 0) {
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	EXPECT(kctl_wait(pid) == 0);
	return 0;
}

static bool libseccomp_names(int nr)
{
	char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);

	free(name);
	return name != NULL;
}

/* Newer calls than libseccomp's table: mseal() exists in this kernel (6.10 and later), where
 * sealing nothing succeeds, so an ENOSYS can only come from the filter. */
static int newer_calls(void *arg)
{
	(void)arg;
	EXPECT(syscall(NR_MSEAL, 0, 0, 0) < 0 && errno == ENOSYS);
	EXPECT(syscall(9999, 0, 0, 0) < 0 && errno == ENOSYS);
	return 0;
}

struct setid_args {
	const char *dir;
	enum policy_seccomp level;
};

/* The sandbox of a root airlock owns what it creates in the workspace: no set-id bit may reach a
 * file there, however it asks. */
static int setid_calls(void *arg)
{
	const struct setid_args *a = arg;
	struct open_how how = {.flags = O_CREAT | O_WRONLY, .mode = 04755};
	char f[512], g[512], h[512], n[512], d[512];
	struct stat st;
	int fd;

	(void)snprintf(f, sizeof(f), "%s/setid-%d", a->dir, (int)a->level);
	(void)snprintf(g, sizeof(g), "%s/setid-open-%d", a->dir, (int)a->level);
	(void)snprintf(h, sizeof(h), "%s/setid-creat-%d", a->dir, (int)a->level);
	(void)snprintf(n, sizeof(n), "%s/setid-mknod-%d", a->dir, (int)a->level);
	(void)snprintf(d, sizeof(d), "%s/setid-mkdir-%d", a->dir, (int)a->level);
	fd = open(f, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
	EXPECT(fd >= 0);
	EXPECT(chmod(f, 04755) < 0 && errno == EPERM);
	EXPECT(chmod(f, 0755) == 0);
	EXPECT(fchmod(fd, 02755) < 0 && errno == EPERM);
	EXPECT(fchmodat(AT_FDCWD, f, 06755, 0) < 0 && errno == EPERM);
	/* EPERM from its row where libseccomp names it, else ENOSYS as a number past its table */
	EXPECT(syscall(NR_FCHMODAT2, AT_FDCWD, f, 04755, 0) < 0 &&
	       errno == (libseccomp_names(NR_FCHMODAT2) ? EPERM : ENOSYS));
	(void)close(fd);
	EXPECT(open(g, O_CREAT | O_WRONLY | O_CLOEXEC, 02755) < 0 && errno == EPERM);
	EXPECT(creat(h, 04755) < 0 && errno == EPERM);
	EXPECT(mknod(n, S_IFREG | 04755, 0) < 0 && errno == EPERM);
	EXPECT(mkdir(d, 02755) < 0 && errno == EPERM);
	/* openat2's mode is out of seccomp's reach: refused quietly, whatever it holds */
	EXPECT(syscall(SYS_openat2, AT_FDCWD, g, &how, sizeof(how)) < 0 && errno == ENOSYS);

	EXPECT(stat(f, &st) == 0);
	EXPECT((st.st_mode & 07777) == 0755);
	EXPECT(access(g, F_OK) < 0 && errno == ENOENT);
	EXPECT(access(h, F_OK) < 0 && errno == ENOENT);
	EXPECT(access(n, F_OK) < 0 && errno == ENOENT);
	EXPECT(access(d, F_OK) < 0 && errno == ENOENT);
	return 0;
}

/* The kernel allows one listener per filter chain: a program in the sandbox cannot intercept
 * (and let through) what our filter refers to airlock. */
static int second_listener(void *arg)
{
	struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	struct sock_fprog prog = {.len = 1, .filter = &allow};

	(void)arg;
	EXPECT(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER,
		       &prog) < 0 &&
	       errno == EBUSY);
	return 0;
}

static void test_refused_calls_get_their_errno_and_are_reported(void)
{
	for (int l = 0; l < 3; l++) {
		enum policy_seccomp level = (enum policy_seccomp)l;
		struct kctl_run run;

		kctl_supervise(&filters[l], refused_calls, &level, &run);
		fprintf(stderr, "%s: exit %d, %zu violations\n", level_names[l], run.exit_code,
			run.n_violations);
		CHECK_EQ(run.exit_code, 0);
		CHECK_EQ(kctl_count(&run, "mount"), 1);
		CHECK_EQ(kctl_count(&run, "unshare"), 1);
		CHECK_EQ(kctl_count(&run, "keyctl"), 1);
		CHECK_EQ(kctl_count(&run, "ioctl"), 1);
		CHECK_EQ(kctl_count(&run, "socket"), l >= POLICY_SECCOMP_RESTRICTED ? 2 : 1);
		CHECK_EQ(kctl_count(&run, "io_setup"), l == POLICY_SECCOMP_STRICT ? 1 : 0);
		CHECK_EQ(run.n_violations, l == 0 ? 5 : l == 1 ? 6 : 7);
		for (size_t i = 0; i < run.n_violations; i++) {
			CHECK(run.violations[i].pid > 0);
			if (streq(run.violations[i].name, "mount"))
				CHECK_EQ(run.violations[i].error, EPERM);
			if (streq(run.violations[i].name, "socket"))
				CHECK_EQ(run.violations[i].error, EAFNOSUPPORT);
		}
	}
}

static void test_newer_calls_get_enosys_without_reports(void)
{
	if (libseccomp_names(NR_MSEAL)) {
		fprintf(stderr, "libseccomp names mseal: no newer call to try\n");
		return;
	}
	for (int l = 0; l < 3; l++) {
		struct kctl_run run;

		kctl_supervise(&filters[l], newer_calls, NULL, &run);
		CHECK_EQ(run.exit_code, 0);
		CHECK_EQ(run.n_violations, 0);
	}
}

static void test_no_level_lets_a_file_get_setid_bits(const char *dir)
{
	static const char *const names[] = {"chmod",   "fchmod", "fchmodat", "fchmodat2",
					    "open",    "openat", "creat",    "mknod",
					    "mknodat", "mkdir",	 "mkdirat"};

	for (int l = 0; l < 3; l++) {
		struct setid_args a = {.dir = dir, .level = (enum policy_seccomp)l};
		size_t named = 0;
		struct kctl_run run;

		kctl_supervise(&filters[l], setid_calls, &a, &run);
		fprintf(stderr, "%s: set-id: exit %d, %zu violations\n", level_names[l],
			run.exit_code, run.n_violations);
		CHECK_EQ(run.exit_code, 0);
		/* chmod, fchmod, fchmodat, (fchmodat2), open, creat, mknod, mkdir */
		CHECK_EQ(run.n_violations, libseccomp_names(NR_FCHMODAT2) ? 8 : 7);
		CHECK_EQ(kctl_count(&run, "chmod") + kctl_count(&run, "fchmodat"), 2);
		CHECK_EQ(kctl_count(&run, "fchmod"), 1);
		for (size_t i = 0; i < ELEMENTSOF(names); i++)
			named += kctl_count(&run, names[i]);
		CHECK_EQ(named, run.n_violations);
		for (size_t i = 0; i < run.n_violations; i++)
			CHECK_EQ(run.violations[i].error, EPERM);
	}
}

static void test_allowed_calls_work_without_reports(void)
{
	for (int l = 0; l < 3; l++) {
		struct kctl_run run;

		kctl_supervise(&filters[l], allowed_calls, NULL, &run);
		CHECK_EQ(run.exit_code, 0);
		CHECK_EQ(run.n_violations, 0);
	}
}

static void test_sandbox_cannot_add_a_listener(void)
{
	struct kctl_run run;

	kctl_supervise(&filters[POLICY_SECCOMP_BASELINE], second_listener, NULL, &run);
	CHECK_EQ(run.exit_code, 0);
	CHECK_EQ(run.n_violations, 0);
}

/* ---- strict with real tools ---- */

static bool on_path(const char *name)
{
	char path[4096];
	const char *p = getenv("PATH");

	for (p = p ? p : "/usr/bin:/bin"; *p;) {
		size_t n = strcspn(p, ":");

		(void)snprintf(path, sizeof(path), "%.*s/%s", (int)n, p, name);
		if (access(path, X_OK) == 0)
			return true;
		p += n + (p[n] == ':');
	}
	return false;
}

static int exec_argv(void *arg)
{
	char *const *argv = arg;

	execvp(argv[0], argv);
	return 127;
}

static void test_strict_runs_common_tools(const char *dir)
{
	char git_dir[512], c_src[512], c_out[512], script[2048];
	struct {
		const char *tool;
		char *argv[8];
	} cases[] = {
	    {"sh",
	     {"sh", "-c", "echo hello | tr a-z A-Z | grep -q HELLO && ls / >/dev/null", NULL}},
	    {"bash", {"bash", "-c", "x=$(seq 3 | sort -r | head -1); test \"$x\" = 3", NULL}},
	    {"python3",
	     {"python3", "-c",
	      "import subprocess, threading, socket, tempfile, hashlib\n"
	      "t = threading.Thread(target=lambda: None); t.start(); t.join()\n"
	      "assert subprocess.run(['true']).returncode == 0\n"
	      "socket.socket().close(); tempfile.TemporaryFile().close()",
	      NULL}},
	    {"git", {"sh", "-c", script, NULL}},
	    {"gcc", {"gcc", "-O1", "-o", c_out, c_src, NULL}},
	    {"node",
	     {"node", "-e",
	      "require('child_process').execSync('true'); require('fs').readdirSync('/')", NULL}},
	};

	(void)snprintf(git_dir, sizeof(git_dir), "%s/repo", dir);
	(void)snprintf(c_src, sizeof(c_src), "%s/hello.c", dir);
	(void)snprintf(c_out, sizeof(c_out), "%s/hello", dir);
	(void)snprintf(script, sizeof(script),
		       "git init -q '%1$s' && cd '%1$s' && echo a > f && git add f && "
		       "git -c user.name=t -c user.email=t@t commit -qm m && git log --oneline "
		       ">/dev/null",
		       git_dir);
	{
		FILE *f = fopen(c_src, "we");

		CHECK(f);
		fputs("#include <stdio.h>\nint main(void) { puts(\"hi\"); return 0; }\n", f);
		CHECK(fclose(f) == 0);
	}
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct kctl_run run;

		if (!on_path(cases[i].tool)) {
			fprintf(stderr, "strict: %s not installed, not tried\n", cases[i].tool);
			continue;
		}
		kctl_supervise(&filters[POLICY_SECCOMP_STRICT], exec_argv, cases[i].argv, &run);
		for (size_t j = 0; j < run.n_violations; j++)
			fprintf(stderr, "strict: %s: refused %s\n", cases[i].tool,
				run.violations[j].name);
		fprintf(stderr, "strict: %s: exit %d\n", cases[i].tool, run.exit_code);
		CHECK_EQ(run.exit_code, 0);
		CHECK_EQ(run.n_violations, 0);
	}
}

int main(void)
{
	char dir[] = "/tmp/airlock-kctl-seccomp.XXXXXX", cmd[128];
	struct al_error err = {0};

	CHECK(mkdtemp(dir));
	for (int l = 0; l < 3; l++)
		if (launcher_seccomp_compile((enum policy_seccomp)l, &filters[l], &err) < 0) {
			fprintf(stderr, "%s\n", err.msg);
			return 1;
		}
	test_refused_calls_get_their_errno_and_are_reported();
	test_newer_calls_get_enosys_without_reports();
	test_no_level_lets_a_file_get_setid_bits(dir);
	test_allowed_calls_work_without_reports();
	test_sandbox_cannot_add_a_listener();
	test_strict_runs_common_tools(dir);
	for (int l = 0; l < 3; l++)
		launcher_seccomp_filter_done(&filters[l]);
	(void)snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK(system(cmd) == 0);
	fprintf(stderr, "ok\n");
	return 0;
}
