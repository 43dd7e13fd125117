/* airlock-probe: checks that the integration tests run INSIDE the sandbox where a shell cannot
 * do the job. Usage: airlock-probe NAME [ARG]
 *
 * Most probes try one thing the sandbox must refuse and print one line:
 *   "NAME: blocked (ERRNO)"   exit 0: the kernel or airlock refused it
 *   "NAME: LEAK: ..."         exit 1: it worked, the sandbox is not doing its job
 *   "NAME: error: ..."        exit 2: the probe could not run, or got an answer nobody expects
 * memhog is the exception: it reports what it got (see there).
 * Standalone on purpose: it links nothing of airlock, so it tests the binary from outside. */

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/bpf.h>
#include <linux/io_uring.h>
#include <linux/keyctl.h>
#include <linux/vm_sockets.h>

#define EXIT_BLOCKED 0
#define EXIT_LEAK 1
#define EXIT_ERROR 2

static const char *probe_name;

static const char *errno_name(int e)
{
	const char *n = strerrorname_np(e);

	return n ? n : "unknown errno";
}

static int report(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int report(int status, const char *fmt, ...)
{
	va_list ap;

	printf("%s: %s", probe_name,
	       status == EXIT_BLOCKED ? ""
	       : status == EXIT_LEAK  ? "LEAK: "
				      : "error: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	(void)fflush(stdout);
	return status;
}

/* The common case: r is the raw result of a call that must fail. */
static int expect_failure(long r, int saved_errno, const char *what)
{
	if (r >= 0)
		return report(EXIT_LEAK, "%s succeeded", what);
	return report(EXIT_BLOCKED, "blocked (%s)", errno_name(saved_errno));
}

static int probe_no_ctty(const char *arg)
{
	int fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);

	if (fd >= 0) {
		(void)close(fd);
		return report(EXIT_LEAK, "/dev/tty opens: the sandbox has a controlling terminal");
	}
	return report(EXIT_BLOCKED, "blocked (%s): no controlling terminal", errno_name(errno));
}

/* Pushes a character into the input queue of the terminal on stdin: with a terminal shared with
 * the host, that is how a sandbox types commands into the user's shell. */
static int probe_tiocsti(const char *arg)
{
	char c = '#';
	int fd = STDIN_FILENO, r;

	/* airlock hands no terminal to the sandbox: then look for any way to one. */
	if (!isatty(fd))
		fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return report(EXIT_BLOCKED,
			      "blocked (no terminal: stdin is none, /dev/tty gives %s)",
			      errno_name(errno));
	r = ioctl(fd, TIOCSTI, &c);
	if (r >= 0)
		return report(EXIT_LEAK, "TIOCSTI injected a character into the terminal");
	if (errno != EPERM && errno != EIO)
		return report(EXIT_ERROR, "TIOCSTI failed with %s, expected EPERM or EIO",
			      errno_name(errno));
	return report(EXIT_BLOCKED, "blocked (%s)", errno_name(errno));
}

static int probe_io_uring(const char *arg)
{
	struct io_uring_params params = {0};
	long r;

	r = syscall(SYS_io_uring_setup, 4, &params);
	if (r >= 0)
		(void)close((int)r);
	return expect_failure(r, errno, "io_uring_setup");
}

static int probe_vsock(const char *arg)
{
	int fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd >= 0)
		(void)close(fd);
	return expect_failure(fd, errno, "socket(AF_VSOCK)");
}

static int probe_ptrace_init(const char *arg)
{
	long r = ptrace(PTRACE_ATTACH, 1, NULL, NULL);
	int e = errno;

	if (r >= 0)
		(void)ptrace(PTRACE_DETACH, 1, NULL, NULL);
	return expect_failure(r, e, "ptrace(PTRACE_ATTACH, 1)");
}

/* Opens path for writing without truncating or writing anything: success alone is the leak. */
static int open_for_writing(const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC | O_NOCTTY);

	if (fd >= 0) {
		(void)close(fd);
		return report(EXIT_LEAK, "%s opens for writing", path);
	}
	return report(EXIT_BLOCKED, "blocked (%s)", errno_name(errno));
}

static int probe_write_init_exe(const char *arg)
{
	return open_for_writing("/proc/1/exe", O_WRONLY);
}

static int probe_write_init_mem(const char *arg)
{
	return open_for_writing("/proc/1/mem", O_RDWR);
}

static int probe_write_file(const char *arg)
{
	if (!arg)
		return report(EXIT_ERROR, "usage: write-file PATH");
	return open_for_writing(arg, O_WRONLY | O_APPEND);
}

/* fs-info PATH[:w]: how the workspace serves PATH (opened for reading, or with ":w" for
 * writing), from its daemon (FUSEFS_IOC_INFO, fusefs/fusefs.h; restated here: the probe links
 * nothing of airlock). Prints "fs-info: uring=U passthrough=P writeback=W open=O". */
struct fs_info {
	unsigned uring, passthrough, writeback, open;
};
#define FS_IOC_INFO _IOR(0xaf, 0x02, struct fs_info)

static int probe_fs_info(const char *arg)
{
	char path[4096];
	struct fs_info info;
	size_t n;
	int fd, flags = O_RDONLY;

	if (!arg || (n = strlen(arg)) >= sizeof(path))
		return report(EXIT_ERROR, "usage: fs-info PATH[:w]");
	memcpy(path, arg, n + 1);
	if (n > 2 && strcmp(path + n - 2, ":w") == 0) {
		path[n - 2] = '\0';
		flags = O_RDWR;
	}
	fd = open(path, flags | O_CLOEXEC);
	if (fd < 0)
		return report(EXIT_ERROR, "open(%s): %s", path, errno_name(errno));
	if (ioctl(fd, FS_IOC_INFO, &info) < 0)
		return report(EXIT_ERROR, "ioctl(FUSEFS_IOC_INFO): %s", errno_name(errno));
	return report(EXIT_BLOCKED, "uring=%u passthrough=%u writeback=%u open=%u", info.uring,
		      info.passthrough, info.writeback, info.open);
}

static int probe_unshare_user(const char *arg)
{
	int r = unshare(CLONE_NEWUSER);

	return expect_failure(r, errno, "unshare(CLONE_NEWUSER)");
}

static int probe_mount(const char *arg)
{
	int r = mount("airlock-probe", "/tmp", "tmpfs", 0, "size=1m");
	int e = errno;

	if (r >= 0)
		(void)umount2("/tmp", MNT_DETACH);
	return expect_failure(r, e, "mount(tmpfs on /tmp)");
}

static int probe_keyctl(const char *arg)
{
	long r = syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, "airlock-probe");

	return expect_failure(r, errno, "keyctl(KEYCTL_JOIN_SESSION_KEYRING)");
}

static int probe_bpf(const char *arg)
{
	union bpf_attr attr = {
	    .map_type = BPF_MAP_TYPE_ARRAY,
	    .key_size = 4,
	    .value_size = 4,
	    .max_entries = 1,
	};
	long r = syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof(attr));

	if (r >= 0)
		(void)close((int)r);
	return expect_failure(r, errno, "bpf(BPF_MAP_CREATE)");
}

/* Allocates and touches ARG MiB, one MiB at a time, and exits 0 ("memhog: touched N MiB").
 * Under a smaller memory limit the kernel must OOM-kill it first. Exits 3 if malloc() fails. */
static int probe_memhog(const char *arg)
{
	const size_t mib = 1024 * 1024;
	long n = arg ? strtol(arg, NULL, 10) : 0;
	long i;

	if (n <= 0)
		return report(EXIT_ERROR, "usage: memhog MIB");
	for (i = 0; i < n; i++) {
		char *p = malloc(mib);

		if (!p) {
			printf("memhog: malloc failed after %ld MiB\n", i);
			return 3;
		}
		memset(p, 0x5a, mib); /* never freed: the point is to hold it */
	}
	printf("memhog: touched %ld MiB\n", n);
	return 0;
}

/* Forks up to ARG children that wait to be killed. Under a smaller pids limit fork() must fail
 * with EAGAIN. The children die with the probe (PDEATHSIG) and are killed and reaped before it
 * returns, so the probe always ends by itself. */
static int probe_forkbomb(const char *arg)
{
	long n = arg ? strtol(arg, NULL, 10) : 0;
	pid_t *pids;
	long i, forked = 0;
	int e = 0;

	if (n <= 0)
		return report(EXIT_ERROR, "usage: forkbomb N");
	pids = calloc((size_t)n, sizeof(*pids));
	if (!pids)
		return report(EXIT_ERROR, "out of memory");
	for (i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			e = errno;
			break;
		}
		if (pid == 0) {
			(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
			for (;;)
				pause();
		}
		pids[forked++] = pid;
	}
	for (i = 0; i < forked; i++)
		(void)kill(pids[i], SIGKILL);
	for (i = 0; i < forked; i++)
		(void)waitpid(pids[i], NULL, 0);
	free(pids);
	if (!e)
		return report(EXIT_LEAK, "forked all %ld children", n);
	if (e != EAGAIN)
		return report(EXIT_ERROR, "fork failed with %s after %ld children, expected EAGAIN",
			      errno_name(e), forked);
	return report(EXIT_BLOCKED, "blocked (EAGAIN) after %ld children", forked);
}

static const struct {
	const char *name;
	int (*fn)(const char *arg);
} probes[] = {
    {"no-ctty", probe_no_ctty},
    {"tiocsti", probe_tiocsti},
    {"io-uring", probe_io_uring},
    {"vsock", probe_vsock},
    {"ptrace-init", probe_ptrace_init},
    {"write-init-exe", probe_write_init_exe},
    {"write-init-mem", probe_write_init_mem},
    {"write-file", probe_write_file},
    {"fs-info", probe_fs_info},
    {"unshare-user", probe_unshare_user},
    {"mount", probe_mount},
    {"keyctl", probe_keyctl},
    {"bpf", probe_bpf},
    {"memhog", probe_memhog},
    {"forkbomb", probe_forkbomb},
};

int main(int argc, char **argv)
{
	size_t i;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: %s NAME [ARG]\nprobes:", argv[0]);
		for (i = 0; i < sizeof(probes) / sizeof(probes[0]); i++)
			fprintf(stderr, " %s", probes[i].name);
		fputc('\n', stderr);
		return EXIT_ERROR;
	}
	for (i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
		if (strcmp(argv[1], probes[i].name) == 0) {
			probe_name = probes[i].name;
			return probes[i].fn(argc == 3 ? argv[2] : NULL);
		}
	}
	fprintf(stderr, "%s: unknown probe \"%s\"\n", argv[0], argv[1]);
	return EXIT_ERROR;
}
