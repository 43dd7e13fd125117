/* Non-native ABIs are killed: under every level, the x32 entry (syscall number | 0x40000000)
 * and the i386 entry (int 0x80) end the process with SIGSYS, while the native call works. The
 * probe program (KCTL_ABI_PROBE) makes the calls; the filter is installed before it is exec'd.
 * A kernel built without IA32 emulation (CONFIG_IA32_EMULATION=n, or ia32_emulation=0) has no
 * i386 entry at all: int 0x80 faults before seccomp sees anything, with or without the filter.
 * That is checked too, as the outcome that also leaves no way round the filter. x86_64 only.
 * Needs no root. */

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "tests/integration/launcher/kctl-lib.h"

/* Runs the probe in mode, under the filter f (or none): its exit status or 128 + signal. */
static int run_probe(const char *probe, const char *mode, const struct launcher_seccomp_filter *f)
{
	pid_t pid = fork();

	CHECK(pid >= 0);
	if (pid == 0) {
		int fd;

		if (f) {
			if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
			    launcher_seccomp_install(f, &fd) < 0)
				_exit(100);
			(void)close(fd); /* nothing here may be refused: no one answers */
		}
		execl(probe, probe, mode, (char *)NULL);
		_exit(101);
	}
	return kctl_wait(pid);
}

int main(void)
{
	const char *probe = getenv("KCTL_ABI_PROBE");
	bool have_i386;
	int r;

#if !defined(__x86_64__)
	kctl_skip("x32 and i386 are x86_64's non-native ABIs");
#endif
	CHECK(probe);
	/* without a filter the calls return (x32 may answer ENOSYS, that is fine) */
	CHECK_EQ(run_probe(probe, "native", NULL), 0);
	CHECK_EQ(run_probe(probe, "x32", NULL), 0);
	r = run_probe(probe, "i386", NULL);
	/* a kernel without IA32 emulation faults on int 0x80 before seccomp sees anything */
	have_i386 = r == 0;
	CHECK(have_i386 || r == 128 + SIGSEGV);
	if (!have_i386)
		fprintf(stderr, "no IA32 emulation: int 0x80 faults without any filter\n");

	for (int l = 0; l < 3; l++) {
		struct launcher_seccomp_filter f = {0};
		struct al_error err = {0};

		CHECK(launcher_seccomp_compile((enum policy_seccomp)l, &f, &err) == 0);
		CHECK_EQ(run_probe(probe, "native", &f), 0);
		CHECK_EQ(run_probe(probe, "x32", &f), 128 + SIGSYS);
		CHECK_EQ(run_probe(probe, "i386", &f), 128 + (have_i386 ? SIGSYS : SIGSEGV));
		launcher_seccomp_filter_done(&f);
	}
	fprintf(stderr, "ok (i386 entry %s)\n", have_i386 ? "killed by the filter" : "absent");
	return 0;
}
