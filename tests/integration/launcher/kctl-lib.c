#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/integration/launcher/kctl-lib.h"

void kctl_skip(const char *why)
{
	const char *must = getenv("AIRLOCK_TEST_MUST_RUN");

	fprintf(stderr, "SKIP: %s\n", why);
	exit(must && streq(must, "1") ? 1 : KCTL_SKIP);
}

void kctl_require_root(void)
{
	if (geteuid() != 0)
		kctl_skip("needs root");
}

int kctl_wait(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0)
		CHECK(errno == EINTR);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void kctl_supervise(const struct launcher_seccomp_filter *f, int (*fn)(void *arg), void *arg,
		    struct kctl_run *ret)
{
	struct launcher_sync_msg m;
	int sp[2], notify_fd, pidfd, status;
	pid_t pid;

	memset(ret, 0, sizeof(*ret));
	CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) == 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		int fd;

		(void)close(sp[0]);
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
			_exit(121);
		if (launcher_seccomp_install(f, &fd) < 0)
			_exit(122);
		m = (struct launcher_sync_msg){.type = LAUNCHER_SYNC_READY};
		if (launcher_sync_send(sp[1], &m, fd) < 0)
			_exit(120);
		(void)close(fd);
		_exit(fn(arg));
	}
	(void)close(sp[1]);
	notify_fd = -EBADF;
	CHECK(launcher_sync_recv(sp[0], &m, &notify_fd) == 0);
	(void)close(sp[0]);
	CHECK(notify_fd >= 0);
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	CHECK(pidfd >= 0);
	for (;;) {
		struct pollfd p[2] = {{.fd = notify_fd, .events = POLLIN},
				      {.fd = pidfd, .events = POLLIN}};

		if (poll(p, 2, 30000) <= 0) {
			CHECK(errno == EINTR);
			continue;
		}
		if (p[0].revents & POLLIN) {
			struct launcher_seccomp_violation v;
			int r = launcher_seccomp_handle_notify(notify_fd, f->level, &v);

			CHECK(r == 0 || r == -ENOENT);
			if (r == 0 && ret->n_violations < ELEMENTSOF(ret->violations))
				ret->violations[ret->n_violations++] = v;
		}
		if (p[1].revents & POLLIN)
			break;
	}
	CHECK(waitpid(pid, &status, 0) == pid);
	ret->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	ret->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	(void)close(notify_fd);
	(void)close(pidfd);
}

size_t kctl_count(const struct kctl_run *run, const char *syscall)
{
	size_t n = 0;

	for (size_t i = 0; i < run->n_violations; i++)
		n += streq(run->violations[i].name, syscall);
	return n;
}
