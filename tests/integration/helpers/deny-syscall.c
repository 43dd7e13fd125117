/* deny-syscall: runs a command with some system calls failing as if the kernel lacked them.
 *
 * usage: deny-syscall NAME[,NAME...] -- COMMAND [ARG...]
 * Each named call returns ENOSYS, the way a kernel built without the feature (or a container's
 * seccomp profile) answers. The filter is inherited by everything COMMAND starts, so a test can
 * show that airlock refuses a policy whose control the "kernel" cannot enforce. */

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <seccomp.h>

int main(int argc, char **argv)
{
	scmp_filter_ctx ctx;
	char *names, *name, *save = NULL;

	if (argc < 4 || strcmp(argv[2], "--") != 0) {
		fprintf(stderr, "usage: deny-syscall NAME[,NAME...] -- COMMAND [ARG...]\n");
		return 2;
	}
	ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return 2;
	names = argv[1];
	for (name = strtok_r(names, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
		int nr = seccomp_syscall_resolve_name(name);

		if (nr == __NR_SCMP_ERROR ||
		    seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0) < 0) {
			fprintf(stderr, "deny-syscall: unknown system call %s\n", name);
			return 2;
		}
	}
	if (seccomp_load(ctx) < 0) {
		fprintf(stderr, "deny-syscall: cannot load the filter\n");
		return 2;
	}
	seccomp_release(ctx);
	execvp(argv[3], argv + 3);
	fprintf(stderr, "deny-syscall: %s: %s\n", argv[3], strerror(errno));
	return 127;
}
