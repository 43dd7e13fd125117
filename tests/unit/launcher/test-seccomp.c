/* tests/unit/launcher/test-seccomp.c: the compiled filters, run through a classic-BPF interpreter
 * against synthetic syscalls. (The on-disk cache is root's only: kctl-seccomp-cache tests it.) */

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

#include <cmocka.h>
#include <seccomp.h>

#include "launcher/launcher-internal.h"
#include "tests/unit/launcher/bpf-interp.h"

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#elif defined(__i386__)
#define NATIVE_ARCH AUDIT_ARCH_I386
#else
#error "add this architecture's AUDIT_ARCH_ value"
#endif

#define RET_ALLOW SECCOMP_RET_ALLOW
#define RET_NOTIFY SECCOMP_RET_USER_NOTIF
#define RET_KILL SECCOMP_RET_KILL_PROCESS
#define RET_ENOSYS (SECCOMP_RET_ERRNO | ENOSYS)

/* Syscalls newer than the kernel headers of Debian 12; since Linux 5.1 new syscalls have the same
 * number on every architecture but alpha. */
#define NR_FCHMODAT2 452
#define NR_STATMOUNT 457
#define NR_LISTMOUNT 458
#define NR_MSEAL 462
#define NR_SETXATTRAT 463
#define NR_OPEN_TREE_ATTR 467
#define NR_FILE_GETATTR 468
#define NR_FILE_SETATTR 469

static struct launcher_seccomp_filter filters[3];
static const enum policy_seccomp levels[] = {
    POLICY_SECCOMP_BASELINE,
    POLICY_SECCOMP_RESTRICTED,
    POLICY_SECCOMP_STRICT,
};

static uint32_t run_full(enum policy_seccomp level, uint32_t arch, int nr, uint64_t a0, uint64_t a1,
			 uint64_t a2, uint64_t a3)
{
	struct seccomp_data d = {
	    .nr = nr,
	    .arch = arch,
	    .instruction_pointer = 0x400000,
	    .args = {a0, a1, a2, a3, 0, 0},
	};

	return bpf_run(filters[level].insns, filters[level].n_insns, &d);
}

static uint32_t run_arch(enum policy_seccomp level, uint32_t arch, int nr, uint64_t a0, uint64_t a1,
			 uint64_t a2)
{
	return run_full(level, arch, nr, a0, a1, a2, 0);
}

static uint32_t run(enum policy_seccomp level, int nr, uint64_t a0, uint64_t a1, uint64_t a2)
{
	return run_full(level, NATIVE_ARCH, nr, a0, a1, a2, 0);
}

static uint32_t run_args(enum policy_seccomp level, int nr, uint64_t a0, uint64_t a1, uint64_t a2,
			 uint64_t a3)
{
	return run_full(level, NATIVE_ARCH, nr, a0, a1, a2, a3);
}

static int setup(void **state)
{
	struct al_error err = {0};

	(void)state;
	/* no cache: each run compiles, and the host's cache directory is left alone */
	if (setenv("AIRLOCK_SECCOMP_CACHE", "", 1) < 0)
		return -1;
	for (size_t i = 0; i < ELEMENTSOF(levels); i++)
		if (launcher_seccomp_compile(levels[i], &filters[levels[i]], &err) < 0) {
			fprintf(stderr, "compile: %s\n", err.msg);
			return -1;
		}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(filters); i++)
		launcher_seccomp_filter_done(&filters[i]);
	return 0;
}

static void test_every_level_refuses_the_required_calls(void **state)
{
	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(levels); i++) {
		enum policy_seccomp l = levels[i];

		assert_int_equal(run(l, __NR_mount, 0, 0, 0), RET_NOTIFY);
		assert_int_equal(run(l, __NR_umount2, 0, 0, 0), RET_NOTIFY);
		assert_int_equal(run(l, __NR_unshare, CLONE_NEWUSER, 0, 0), RET_NOTIFY);
		assert_int_equal(run(l, __NR_unshare, 0, 0, 0), RET_NOTIFY);
		assert_int_equal(run(l, __NR_setns, 3, 0, 0), RET_NOTIFY);
		assert_int_equal(run(l, __NR_ptrace, 0, 1, 0), RET_NOTIFY);
		assert_int_equal(run(l, __NR_process_vm_readv, 1, 0, 0), RET_NOTIFY);
		assert_int_equal(run(l, __NR_keyctl, 0, 0, 0), RET_NOTIFY);
		assert_int_equal(run(l, __NR_add_key, 0, 0, 0), RET_NOTIFY);
		assert_int_equal(run(l, __NR_bpf, 0, 0, 0), RET_NOTIFY);
		assert_int_equal(run(l, __NR_perf_event_open, 0, 0, 0), RET_NOTIFY);
		assert_int_equal(run(l, __NR_userfaultfd, 0, 0, 0), RET_NOTIFY);
		assert_int_equal(run(l, __NR_open_by_handle_at, 0, 0, 0), RET_NOTIFY);
		assert_int_equal(run(l, __NR_init_module, 0, 0, 0), RET_NOTIFY);
		assert_int_equal(run(l, __NR_kexec_load, 0, 0, 0), RET_NOTIFY);
		assert_int_equal(run(l, __NR_reboot, 0, 0, 0), RET_NOTIFY);
		assert_int_equal(run(l, __NR_fsopen, 0, 0, 0), RET_NOTIFY);
		assert_int_equal(run(l, __NR_move_mount, 0, 0, 0), RET_NOTIFY);
		assert_int_equal(run(l, __NR_socket, AF_VSOCK, SOCK_STREAM, 0), RET_NOTIFY);
		assert_int_equal(run(l, __NR_ioctl, 0, TIOCSTI, 0), RET_NOTIFY);
		assert_int_equal(run(l, __NR_ioctl, 0, TIOCLINUX, 0), RET_NOTIFY);
	}
}

static void test_every_level_allows_common_calls(void **state)
{
	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(levels); i++) {
		enum policy_seccomp l = levels[i];

		assert_int_equal(run(l, __NR_read, 0, 0, 0), RET_ALLOW);
		assert_int_equal(run(l, __NR_write, 1, 0, 0), RET_ALLOW);
		assert_int_equal(run(l, __NR_openat, AT_FDCWD, 0, O_RDONLY), RET_ALLOW);
		assert_int_equal(run(l, __NR_close, 3, 0, 0), RET_ALLOW);
		assert_int_equal(run(l, __NR_mmap, 0, 4096, 3), RET_ALLOW);
		assert_int_equal(run(l, __NR_execve, 0, 0, 0), RET_ALLOW);
		assert_int_equal(run(l, __NR_exit_group, 0, 0, 0), RET_ALLOW);
		/* fork(), pthread_create() and posix_spawn() as glibc does them */
		assert_int_equal(run(l, __NR_clone, SIGCHLD, 0, 0), RET_ALLOW);
		assert_int_equal(run(l, __NR_clone,
				     CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND |
					 CLONE_THREAD | CLONE_SYSVSEM | CLONE_SETTLS |
					 CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID,
				     0, 0),
				 RET_ALLOW);
		assert_int_equal(run(l, __NR_clone, CLONE_VM | CLONE_VFORK | SIGCHLD, 0, 0),
				 RET_ALLOW);
		assert_int_equal(run(l, __NR_socket, AF_INET, SOCK_STREAM, 0), RET_ALLOW);
		assert_int_equal(run(l, __NR_socket, AF_INET6, SOCK_DGRAM, 0), RET_ALLOW);
		assert_int_equal(run(l, __NR_socket, AF_UNIX, SOCK_STREAM, 0), RET_ALLOW);
		assert_int_equal(run(l, __NR_socket, AF_NETLINK, SOCK_RAW, 0), RET_ALLOW);
		assert_int_equal(run(l, __NR_ioctl, 0, TCGETS, 0), RET_ALLOW);
		assert_int_equal(run(l, __NR_ioctl, 0, FIONREAD, 0), RET_ALLOW);
		/* musl passes the request as a sign-extended int */
		assert_int_equal(run(l, __NR_ioctl, 0, (uint64_t)(int64_t)(int32_t)0x80045430, 0),
				 RET_ALLOW);
		assert_int_equal(run(l, __NR_personality, 0xffffffff, 0, 0), RET_ALLOW);
		assert_int_equal(run(l, __NR_personality, 0, 0, 0), RET_ALLOW);
		assert_int_equal(run(l, __NR_mknodat, AT_FDCWD, 0, S_IFIFO | 0600), RET_ALLOW);
		assert_int_equal(run(l, __NR_wait4, (uint64_t)-1, 0, 0), RET_ALLOW);
		assert_int_equal(run(l, __NR_kill, 1, SIGTERM, 0), RET_ALLOW);
		assert_int_equal(run(l, __NR_rt_sigaction, SIGCHLD, 0, 0), RET_ALLOW);
		assert_int_equal(run(l, __NR_seccomp, 1, 0, 0),
				 l == POLICY_SECCOMP_STRICT ? RET_NOTIFY : RET_ALLOW);
	}
}

static void test_clone_with_any_namespace_flag_is_refused(void **state)
{
	static const uint64_t ns[] = {CLONE_NEWNS,  CLONE_NEWUTS, CLONE_NEWIPC,	  CLONE_NEWUSER,
				      CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWCGROUP};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(levels); i++)
		for (size_t j = 0; j < ELEMENTSOF(ns); j++) {
			assert_int_equal(run(levels[i], __NR_clone, ns[j] | SIGCHLD, 0, 0),
					 RET_NOTIFY);
			assert_int_equal(
			    run(levels[i], __NR_clone, ns[j] | CLONE_VM | SIGCHLD, 0, 0),
			    RET_NOTIFY);
		}
}

static void test_upper_argument_bits_do_not_hide_a_refused_value(void **state)
{
	const uint64_t hi = UINT64_C(0xdead00000000);

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(levels); i++) {
		enum policy_seccomp l = levels[i];

		/* the kernel truncates these arguments to 32 bits */
		assert_int_equal(run(l, __NR_ioctl, 0, hi | TIOCSTI, 0), RET_NOTIFY);
		assert_int_equal(run(l, __NR_socket, hi | AF_VSOCK, SOCK_STREAM, 0), RET_NOTIFY);
		assert_int_equal(run(l, __NR_clone, hi | CLONE_NEWUSER | SIGCHLD, 0, 0),
				 RET_NOTIFY);
		assert_int_equal(run(l, __NR_personality, hi | 0x0040000, 0, 0), RET_NOTIFY);
		/* and the same values without a refused one still pass */
		assert_int_equal(run(l, __NR_ioctl, 0, hi | TCGETS, 0), RET_ALLOW);
		assert_int_equal(run(l, __NR_socket, hi | AF_INET, SOCK_STREAM, 0), RET_ALLOW);
	}
}

static void test_probed_calls_get_enosys_without_notification(void **state)
{
	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(levels); i++) {
		enum policy_seccomp l = levels[i];

		assert_int_equal(run(l, __NR_clone3, 0, 88, 0), RET_ENOSYS);
		assert_int_equal(run(l, __NR_openat2, AT_FDCWD, 0, 0), RET_ENOSYS);
		assert_int_equal(run(l, __NR_io_uring_setup, 8, 0, 0), RET_ENOSYS);
		assert_int_equal(run(l, __NR_io_uring_enter, 3, 1, 0), RET_ENOSYS);
		assert_int_equal(run(l, __NR_io_uring_register, 3, 0, 0), RET_ENOSYS);
	}
}

/* The highest native syscall number libseccomp names */
static int libseccomp_max_nr(void)
{
	for (int nr = 1023; nr >= 0; nr--) {
		char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);

		if (name) {
			free(name);
			return nr;
		}
	}
	fail_msg("libseccomp names no syscall below 1024");
	return -1;
}

static bool libseccomp_names(int nr)
{
	char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);

	free(name);
	return name != NULL;
}

static void test_numbers_past_libseccomps_table_get_enosys_without_notification(void **state)
{
	static const int newer[] = {NR_FCHMODAT2,    NR_STATMOUNT,   NR_LISTMOUNT,
				    NR_MSEAL,	     NR_SETXATTRAT,  NR_OPEN_TREE_ATTR,
				    NR_FILE_GETATTR, NR_FILE_SETATTR};
	int max = libseccomp_max_nr();

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(levels); i++) {
		enum policy_seccomp l = levels[i];

		assert_int_equal(run(l, max + 1, 0, 0, 0), RET_ENOSYS);
		assert_int_equal(run(l, 1023, 0, 0, 0), RET_ENOSYS);
		assert_int_equal(run(l, 9999, 0, 0, 0), RET_ENOSYS);
		assert_int_equal(run(l, 0x3fffffff, 0, 0, 0), RET_ENOSYS);
		/* syscalls this kernel may have: whatever the arguments (fchmodat2 with 04755) */
		for (size_t j = 0; j < ELEMENTSOF(newer); j++)
			if (!libseccomp_names(newer[j]))
				assert_int_equal(run(l, newer[j], AT_FDCWD, 0, 04755), RET_ENOSYS);
	}
	/* the numbers libseccomp names are left to the tables, which at baseline answer ENOSYS
	 * only for the probed calls */
	for (int nr = 0; nr <= max; nr++) {
		bool probed = nr == __NR_clone3 || nr == __NR_openat2 ||
			      nr == __NR_io_uring_setup || nr == __NR_io_uring_enter ||
			      nr == __NR_io_uring_register;

		if (libseccomp_names(nr) && !probed)
			assert_int_not_equal(run(POLICY_SECCOMP_BASELINE, nr, 0, 0, 0), RET_ENOSYS);
	}
}

static void test_every_level_refuses_setid_modes(void **state)
{
	const uint64_t hi = UINT64_C(0xdead00000000);

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(levels); i++) {
		enum policy_seccomp l = levels[i];

		assert_int_equal(run(l, __NR_fchmod, 3, 06755, 0), RET_NOTIFY);
		assert_int_equal(run(l, __NR_fchmod, 3, hi | 04000, 0), RET_NOTIFY);
		assert_int_equal(run(l, __NR_fchmodat, AT_FDCWD, 0, 02700), RET_NOTIFY);
		assert_int_equal(run(l, __NR_mknodat, AT_FDCWD, 0, S_IFREG | 06755), RET_NOTIFY);
		assert_int_equal(run(l, __NR_mknodat, AT_FDCWD, 0, 04755), RET_NOTIFY);
		assert_int_equal(run(l, __NR_mknodat, AT_FDCWD, 0, S_IFIFO | 02600), RET_NOTIFY);
		assert_int_equal(run(l, __NR_mkdirat, AT_FDCWD, 0, 02775), RET_NOTIFY);
		/* the mode is openat()'s fourth argument */
		assert_int_equal(run_args(l, __NR_openat, AT_FDCWD, 0, O_CREAT | O_WRONLY, 02755),
				 RET_NOTIFY);
		assert_int_equal(run_args(l, __NR_openat, AT_FDCWD, 0, O_TMPFILE | O_RDWR, 04700),
				 RET_NOTIFY);
		if (libseccomp_names(NR_FCHMODAT2))
			assert_int_equal(run(l, NR_FCHMODAT2, AT_FDCWD, 0, 04755), RET_NOTIFY);
#ifdef __NR_chmod
		assert_int_equal(run(l, __NR_chmod, 0, 04755, 0), RET_NOTIFY);
		assert_int_equal(run(l, __NR_chmod, 0, 02755, 0), RET_NOTIFY);
		assert_int_equal(run(l, __NR_creat, 0, 04755, 0), RET_NOTIFY);
		assert_int_equal(run(l, __NR_mknod, 0, S_IFREG | 04755, 0), RET_NOTIFY);
		assert_int_equal(run(l, __NR_mkdir, 0, 06777, 0), RET_NOTIFY);
		assert_int_equal(run(l, __NR_open, 0, O_CREAT | O_WRONLY, 04755), RET_NOTIFY);
#endif

		/* the same calls without set-id bits run, sticky directories too */
		assert_int_equal(run(l, __NR_fchmod, 3, 0600, 0), RET_ALLOW);
		assert_int_equal(run(l, __NR_fchmodat, AT_FDCWD, 0, 0644), RET_ALLOW);
		assert_int_equal(run(l, __NR_fchmodat, AT_FDCWD, 0, 01777), RET_ALLOW);
		assert_int_equal(run(l, __NR_mknodat, AT_FDCWD, 0, S_IFIFO | 0600), RET_ALLOW);
		assert_int_equal(run(l, __NR_mkdirat, AT_FDCWD, 0, 01777), RET_ALLOW);
		assert_int_equal(run_args(l, __NR_openat, AT_FDCWD, 0, O_RDONLY, 0), RET_ALLOW);
		assert_int_equal(run_args(l, __NR_openat, AT_FDCWD, 0, O_CREAT | O_EXCL, 0600),
				 RET_ALLOW);
		/* bits above the 16 the kernel reads do not matter */
		assert_int_equal(run(l, __NR_fchmod, 3, hi | 0x10000 | 0755, 0), RET_ALLOW);
		if (libseccomp_names(NR_FCHMODAT2))
			assert_int_equal(run(l, NR_FCHMODAT2, AT_FDCWD, 0, 0755), RET_ALLOW);
#ifdef __NR_chmod
		assert_int_equal(run(l, __NR_chmod, 0, 0755, 0), RET_ALLOW);
		assert_int_equal(run(l, __NR_creat, 0, 0644, 0), RET_ALLOW);
		assert_int_equal(run(l, __NR_mknod, 0, S_IFREG | 0644, 0), RET_ALLOW);
		assert_int_equal(run(l, __NR_mkdir, 0, 0777, 0), RET_ALLOW);
		assert_int_equal(run(l, __NR_open, 0, O_CREAT | O_WRONLY, 0666), RET_ALLOW);
#endif
	}
}

static void test_non_native_abis_are_killed(void **state)
{
	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(levels); i++) {
#if defined(__x86_64__)
		/* x32: same arch value, syscall numbers with bit 30 set */
		assert_int_equal(run(levels[i], 0x40000000 | __NR_getpid, 0, 0, 0), RET_KILL);
		assert_int_equal(run(levels[i], 0x40000000 | 39 /* x32 getpid */, 0, 0, 0),
				 RET_KILL);
		assert_int_equal(run(levels[i], 0x40000000 | 512, 0, 0, 0), RET_KILL);
		assert_int_equal(run(levels[i], 0x40000000 | NR_MSEAL, 0, 0, 0), RET_KILL);
		assert_int_equal(run(levels[i], 0x40000000 | 9999, 0, 0, 0), RET_KILL);
		assert_int_equal(run(levels[i], 0x7fffffff, 0, 0, 0), RET_KILL);
		assert_int_equal(run(levels[i], (int)0x80000000, 0, 0, 0), RET_KILL);
		/* i386 through int 0x80: 20 is getpid there */
		assert_int_equal(run_arch(levels[i], AUDIT_ARCH_I386, 20, 0, 0, 0), RET_KILL);
		assert_int_equal(run_arch(levels[i], AUDIT_ARCH_I386, 21 /* mount */, 0, 0, 0),
				 RET_KILL);
		/* past both tables: killed, not answered as a new native call */
		assert_int_equal(run_arch(levels[i], AUDIT_ARCH_I386, NR_MSEAL, 0, 0, 0), RET_KILL);
		assert_int_equal(run_arch(levels[i], AUDIT_ARCH_I386, 9999, 0, 0, 0), RET_KILL);
#endif
		assert_int_equal(run_arch(levels[i],
					  AUDIT_ARCH_AARCH64 == NATIVE_ARCH ? AUDIT_ARCH_X86_64
									    : AUDIT_ARCH_AARCH64,
					  0, 0, 0, 0),
				 RET_KILL);
	}
}

static void test_restricted_allows_only_common_socket_families(void **state)
{
	static const uint64_t refused[] = {0,	     AF_PACKET, AF_KEY,	    AF_ALG,    AF_BLUETOOTH,
					   AF_TIPC,  AF_RDS,	AF_CAN,	    AF_X25,    AF_APPLETALK,
					   AF_VSOCK, AF_XDP,	46,	    63,	       64,
					   255,	     0xffff,	0x7fffffff, 0xffffffff};

	(void)state;
	for (size_t j = 0; j < ELEMENTSOF(refused); j++) {
		assert_int_equal(
		    run(POLICY_SECCOMP_RESTRICTED, __NR_socket, refused[j], SOCK_RAW, 0),
		    RET_NOTIFY);
		assert_int_equal(run(POLICY_SECCOMP_STRICT, __NR_socket, refused[j], SOCK_RAW, 0),
				 RET_NOTIFY);
	}
	/* baseline leaves the other families to the kernel's capability checks */
	assert_int_equal(run(POLICY_SECCOMP_BASELINE, __NR_socket, AF_PACKET, SOCK_RAW, 0),
			 RET_ALLOW);
	assert_int_equal(run(POLICY_SECCOMP_BASELINE, __NR_socket, AF_ALG, SOCK_SEQPACKET, 0),
			 RET_ALLOW);
	for (uint64_t f = 0; f < 256; f++) {
		bool common = f == AF_UNIX || f == AF_INET || f == AF_INET6 || f == AF_NETLINK;

		assert_int_equal(run(POLICY_SECCOMP_RESTRICTED, __NR_socket, f, SOCK_STREAM, 0),
				 common ? RET_ALLOW : RET_NOTIFY);
	}
}

static void test_restricted_refuses_device_nodes_only(void **state)
{
	(void)state;
	for (size_t i = 1; i < ELEMENTSOF(levels); i++) {
		enum policy_seccomp l = levels[i];

		assert_int_equal(run(l, __NR_mknodat, AT_FDCWD, 0, S_IFCHR | 0600), RET_NOTIFY);
		assert_int_equal(run(l, __NR_mknodat, AT_FDCWD, 0, S_IFBLK | 0600), RET_NOTIFY);
		assert_int_equal(run(l, __NR_mknodat, AT_FDCWD, 0, S_IFREG | 0600), RET_ALLOW);
		assert_int_equal(run(l, __NR_mknodat, AT_FDCWD, 0, 0600), RET_ALLOW);
		assert_int_equal(run(l, __NR_mknodat, AT_FDCWD, 0, S_IFSOCK | 0600), RET_ALLOW);
		/* this level's row for mknodat keeps baseline's refusal of set-id bits */
		assert_int_equal(run(l, __NR_mknodat, AT_FDCWD, 0, S_IFSOCK | 04600), RET_NOTIFY);
		assert_int_equal(run(l, __NR_mknodat, AT_FDCWD, 0, S_IFCHR | 02600), RET_NOTIFY);
#ifdef __NR_mknod
		assert_int_equal(run(l, __NR_mknod, 0, S_IFCHR | 0666, 0x0103), RET_NOTIFY);
		assert_int_equal(run(l, __NR_mknod, 0, S_IFIFO | 0666, 0), RET_ALLOW);
#endif
		assert_int_equal(run(l, __NR_chroot, 0, 0, 0), RET_NOTIFY);
		assert_int_equal(run(l, __NR_syslog, 3, 0, 0), RET_NOTIFY);
		assert_int_equal(run(l, __NR_sethostname, 0, 0, 0), RET_NOTIFY);
	}
	/* baseline leaves them to the kernel, which wants CAP_MKNOD the sandbox lacks */
	assert_int_equal(run(POLICY_SECCOMP_BASELINE, __NR_mknodat, AT_FDCWD, 0, S_IFCHR | 0600),
			 RET_ALLOW);
	assert_int_equal(run(POLICY_SECCOMP_BASELINE, __NR_chroot, 0, 0, 0), RET_ALLOW);
}

static void test_personality_allows_only_harmless_values(void **state)
{
	static const uint64_t allowed[] = {0x0, 0x8, 0x20000, 0x20008, 0xffffffff};
	static const uint64_t refused[] = {0x0040000 /* ADDR_NO_RANDOMIZE */,
					   0x0400000 /* READ_IMPLIES_EXEC */,
					   0x0100000 /* MMAP_PAGE_ZERO */,
					   0x0200000 /* ADDR_COMPAT_LAYOUT */,
					   0x0040008,
					   0x1,
					   0x80000000,
					   0xfffffffe,
					   0x7fffffff};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(levels); i++) {
		for (size_t j = 0; j < ELEMENTSOF(allowed); j++)
			assert_int_equal(run(levels[i], __NR_personality, allowed[j], 0, 0),
					 RET_ALLOW);
		for (size_t j = 0; j < ELEMENTSOF(refused); j++)
			assert_int_equal(run(levels[i], __NR_personality, refused[j], 0, 0),
					 RET_NOTIFY);
	}
}

static void test_strict_refuses_what_is_not_on_its_allow_list(void **state)
{
	(void)state;
	/* allowed by the deny-list levels, not by strict: Linux AIO, POSIX message queues */
	assert_int_equal(run(POLICY_SECCOMP_RESTRICTED, __NR_io_setup, 8, 0, 0), RET_ALLOW);
	assert_int_equal(run(POLICY_SECCOMP_STRICT, __NR_io_setup, 8, 0, 0), RET_NOTIFY);
	assert_int_equal(run(POLICY_SECCOMP_RESTRICTED, __NR_mq_open, 0, 0, 0), RET_ALLOW);
	assert_int_equal(run(POLICY_SECCOMP_STRICT, __NR_mq_open, 0, 0, 0), RET_NOTIFY);
	assert_int_equal(run(POLICY_SECCOMP_STRICT, __NR_landlock_create_ruleset, 0, 0, 0),
			 RET_NOTIFY);
	/* newer than the list, known to libseccomp */
	assert_int_equal(run(POLICY_SECCOMP_RESTRICTED, __NR_set_mempolicy_home_node, 0, 0, 0),
			 RET_ALLOW);
	assert_int_equal(run(POLICY_SECCOMP_STRICT, __NR_set_mempolicy_home_node, 0, 0, 0),
			 RET_NOTIFY);
	/* restricted refusals stay refused */
	assert_int_equal(run(POLICY_SECCOMP_STRICT, __NR_memfd_secret, 0, 0, 0), RET_NOTIFY);
	assert_int_equal(run(POLICY_SECCOMP_STRICT, __NR_fanotify_init, 0, 0, 0), RET_NOTIFY);
}

static void test_strict_allows_what_the_sandbox_init_needs(void **state)
{
	static const int init_calls[] = {
	    __NR_wait4,
	    __NR_waitid,
	    __NR_rt_sigaction,
	    __NR_rt_sigprocmask,
	    __NR_rt_sigreturn,
	    __NR_rt_sigtimedwait,
	    __NR_kill,
	    __NR_tgkill,
	    __NR_poll,
	    __NR_ppoll,
	    __NR_read,
	    __NR_write,
	    __NR_sendmsg,
	    __NR_recvmsg,
	    __NR_close,
	    __NR_exit_group,
	    __NR_exit,
	    __NR_signalfd4,
	    __NR_getpid,
	    __NR_prctl,
	    __NR_setsid,
	    __NR_dup2,
	    __NR_fcntl,
	    __NR_rseq,
	    __NR_set_robust_list,
	    __NR_futex,
	    __NR_getrandom,
	    __NR_statx,
	    __NR_newfstatat,
	    __NR_faccessat2,
	    __NR_pipe2,
	    __NR_epoll_pwait,
	    __NR_prlimit64,
	    __NR_sched_getaffinity,
	    __NR_clock_nanosleep,
	    __NR_getdents64,
	};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(init_calls); i++)
		assert_int_equal(run(POLICY_SECCOMP_STRICT, init_calls[i], 0, 0, 0), RET_ALLOW);
}

#if defined(__x86_64__)
/* The tables, as the specification of what the programs must do (syscall numbers, so that a
 * misspelt name can't slip through as it would in the filter's name tables). */
static const int spec_baseline_refused[] = {
    __NR_init_module,
    __NR_finit_module,
    __NR_delete_module,
    __NR_create_module,
    __NR_query_module,
    __NR_get_kernel_syms,
    __NR_kexec_load,
    __NR_kexec_file_load,
    __NR_reboot,
    __NR_swapon,
    __NR_swapoff,
    __NR_settimeofday,
    __NR_clock_settime,
    __NR_clock_adjtime,
    __NR_adjtimex,
    __NR_acct,
    __NR_quotactl,
    __NR_quotactl_fd,
    __NR_iopl,
    __NR_ioperm,
    __NR_lookup_dcookie,
    __NR_nfsservctl,
    __NR_uselib,
    __NR_ustat,
    __NR_sysfs,
    __NR__sysctl,
    __NR_mount,
    __NR_umount2,
    __NR_pivot_root,
    __NR_fsopen,
    __NR_fsconfig,
    __NR_fsmount,
    __NR_fspick,
    __NR_move_mount,
    __NR_open_tree,
    __NR_mount_setattr,
    __NR_unshare,
    __NR_setns,
    __NR_ptrace,
    __NR_process_vm_readv,
    __NR_process_vm_writev,
    __NR_kcmp,
    __NR_pidfd_getfd,
    __NR_migrate_pages,
    __NR_move_pages,
    __NR_keyctl,
    __NR_add_key,
    __NR_request_key,
    __NR_bpf,
    __NR_perf_event_open,
    __NR_userfaultfd,
    __NR_open_by_handle_at,
    __NR_name_to_handle_at,
};
static const int spec_restricted_refused[] = {
    __NR_chroot,	__NR_sethostname, __NR_setdomainname,	__NR_syslog,	   __NR_vhangup,
    __NR_fanotify_init, __NR_modify_ldt,  __NR_process_madvise, __NR_memfd_secret,
};
static const int spec_strict_allowed[] = {
    __NR_read,
    __NR_write,
    __NR_readv,
    __NR_writev,
    __NR_pread64,
    __NR_pwrite64,
    __NR_preadv,
    __NR_preadv2,
    __NR_pwritev,
    __NR_pwritev2,
    __NR_lseek,
    __NR_close,
    __NR_close_range,
    __NR_dup,
    __NR_dup2,
    __NR_dup3,
    __NR_fcntl,
    __NR_ioctl,
    __NR_pipe,
    __NR_pipe2,
    __NR_sendfile,
    __NR_splice,
    __NR_tee,
    __NR_copy_file_range,
    __NR_fsync,
    __NR_fdatasync,
    __NR_sync,
    __NR_syncfs,
    __NR_sync_file_range,
    __NR_ftruncate,
    __NR_truncate,
    __NR_fallocate,
    __NR_fadvise64,
    __NR_readahead,
    __NR_flock,
    __NR_poll,
    __NR_ppoll,
    __NR_select,
    __NR_pselect6,
    __NR_epoll_create,
    __NR_epoll_create1,
    __NR_epoll_ctl,
    __NR_epoll_wait,
    __NR_epoll_pwait,
    __NR_epoll_pwait2,
    __NR_eventfd,
    __NR_eventfd2,
    __NR_inotify_init,
    __NR_inotify_init1,
    __NR_inotify_add_watch,
    __NR_inotify_rm_watch,
    __NR_open,
    __NR_openat,
    __NR_creat,
    __NR_stat,
    __NR_fstat,
    __NR_lstat,
    __NR_newfstatat,
    __NR_statx,
    __NR_statfs,
    __NR_fstatfs,
    __NR_access,
    __NR_faccessat,
    __NR_faccessat2,
    __NR_readlink,
    __NR_readlinkat,
    __NR_getdents,
    __NR_getdents64,
    __NR_getcwd,
    __NR_chdir,
    __NR_fchdir,
    __NR_mkdir,
    __NR_mkdirat,
    __NR_rmdir,
    __NR_unlink,
    __NR_unlinkat,
    __NR_rename,
    __NR_renameat,
    __NR_renameat2,
    __NR_link,
    __NR_linkat,
    __NR_symlink,
    __NR_symlinkat,
    __NR_chmod,
    __NR_fchmod,
    __NR_fchmodat,
    __NR_chown,
    __NR_fchown,
    __NR_lchown,
    __NR_fchownat,
    __NR_umask,
    __NR_utime,
    __NR_utimes,
    __NR_utimensat,
    __NR_futimesat,
    __NR_mknod,
    __NR_mknodat,
    __NR_getxattr,
    __NR_lgetxattr,
    __NR_fgetxattr,
    __NR_listxattr,
    __NR_llistxattr,
    __NR_flistxattr,
    __NR_setxattr,
    __NR_lsetxattr,
    __NR_fsetxattr,
    __NR_removexattr,
    __NR_lremovexattr,
    __NR_fremovexattr,
    __NR_mmap,
    __NR_munmap,
    __NR_mprotect,
    __NR_mremap,
    __NR_madvise,
    __NR_brk,
    __NR_msync,
    __NR_mincore,
    __NR_mlock,
    __NR_mlock2,
    __NR_munlock,
    __NR_mlockall,
    __NR_munlockall,
    __NR_memfd_create,
    __NR_membarrier,
    __NR_pkey_alloc,
    __NR_pkey_free,
    __NR_pkey_mprotect,
    __NR_get_mempolicy,
    __NR_set_mempolicy,
    __NR_mbind,
    __NR_fork,
    __NR_vfork,
    __NR_clone,
    __NR_execve,
    __NR_execveat,
    __NR_exit,
    __NR_exit_group,
    __NR_wait4,
    __NR_waitid,
    __NR_kill,
    __NR_tkill,
    __NR_tgkill,
    __NR_pidfd_open,
    __NR_pidfd_send_signal,
    __NR_getpid,
    __NR_getppid,
    __NR_gettid,
    __NR_getuid,
    __NR_geteuid,
    __NR_getgid,
    __NR_getegid,
    __NR_getresuid,
    __NR_getresgid,
    __NR_getgroups,
    __NR_setuid,
    __NR_setgid,
    __NR_setreuid,
    __NR_setregid,
    __NR_setresuid,
    __NR_setresgid,
    __NR_setgroups,
    __NR_setfsuid,
    __NR_setfsgid,
    __NR_getpgid,
    __NR_setpgid,
    __NR_getpgrp,
    __NR_getsid,
    __NR_setsid,
    __NR_prctl,
    __NR_arch_prctl,
    __NR_set_tid_address,
    __NR_set_robust_list,
    __NR_get_robust_list,
    __NR_rseq,
    __NR_futex,
    __NR_futex_waitv,
    __NR_getrlimit,
    __NR_setrlimit,
    __NR_prlimit64,
    __NR_getrusage,
    __NR_times,
    __NR_capget,
    __NR_capset,
    __NR_personality,
    __NR_uname,
    __NR_sysinfo,
    __NR_getcpu,
    __NR_getrandom,
    __NR_sched_yield,
    __NR_sched_getaffinity,
    __NR_sched_setaffinity,
    __NR_sched_getparam,
    __NR_sched_setparam,
    __NR_sched_getscheduler,
    __NR_sched_setscheduler,
    __NR_sched_get_priority_max,
    __NR_sched_get_priority_min,
    __NR_sched_rr_get_interval,
    __NR_sched_getattr,
    __NR_sched_setattr,
    __NR_getpriority,
    __NR_setpriority,
    __NR_ioprio_get,
    __NR_ioprio_set,
    __NR_nanosleep,
    __NR_clock_nanosleep,
    __NR_clock_gettime,
    __NR_clock_getres,
    __NR_gettimeofday,
    __NR_time,
    __NR_alarm,
    __NR_pause,
    __NR_getitimer,
    __NR_setitimer,
    __NR_timer_create,
    __NR_timer_settime,
    __NR_timer_gettime,
    __NR_timer_getoverrun,
    __NR_timer_delete,
    __NR_timerfd_create,
    __NR_timerfd_settime,
    __NR_timerfd_gettime,
    __NR_rt_sigaction,
    __NR_rt_sigprocmask,
    __NR_rt_sigreturn,
    __NR_rt_sigsuspend,
    __NR_rt_sigpending,
    __NR_rt_sigtimedwait,
    __NR_rt_sigqueueinfo,
    __NR_rt_tgsigqueueinfo,
    __NR_sigaltstack,
    __NR_signalfd,
    __NR_signalfd4,
    __NR_restart_syscall,
    __NR_socket,
    __NR_socketpair,
    __NR_bind,
    __NR_connect,
    __NR_listen,
    __NR_accept,
    __NR_accept4,
    __NR_getsockname,
    __NR_getpeername,
    __NR_sendto,
    __NR_recvfrom,
    __NR_sendmsg,
    __NR_recvmsg,
    __NR_sendmmsg,
    __NR_recvmmsg,
    __NR_shutdown,
    __NR_setsockopt,
    __NR_getsockopt,
    __NR_shmget,
    __NR_shmat,
    __NR_shmdt,
    __NR_shmctl,
    __NR_semget,
    __NR_semop,
    __NR_semtimedop,
    __NR_semctl,
    __NR_msgget,
    __NR_msgsnd,
    __NR_msgrcv,
    __NR_msgctl,
};

static void test_every_table_row_is_refused_from_its_level_up(void **state)
{
	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(levels); i++) {
		for (size_t j = 0; j < ELEMENTSOF(spec_baseline_refused); j++)
			assert_int_equal(run(levels[i], spec_baseline_refused[j], 0, 0, 0),
					 RET_NOTIFY);
		for (size_t j = 0; j < ELEMENTSOF(spec_restricted_refused); j++)
			assert_int_equal(run(levels[i], spec_restricted_refused[j], 0, 0, 0),
					 levels[i] == POLICY_SECCOMP_BASELINE ? RET_ALLOW
									      : RET_NOTIFY);
	}
}

static void test_strict_allows_its_whole_list(void **state)
{
	(void)state;
	/* with arguments that no argument filter refuses: AF_UNIX for socket(), no clone flags,
	 * mode 0 for mknod(), request 0 for ioctl(), PER_LINUX for personality() */
	for (size_t j = 0; j < ELEMENTSOF(spec_strict_allowed); j++) {
		int nr = spec_strict_allowed[j];

		assert_int_equal(
		    run(POLICY_SECCOMP_STRICT, nr, nr == __NR_socket ? AF_UNIX : 0, 0, 0),
		    RET_ALLOW);
	}
}
#endif

static void test_programs_fit_the_kernel_limits(void **state)
{
	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(levels); i++) {
		const struct launcher_seccomp_filter *f = &filters[levels[i]];

		assert_int_equal(f->level, levels[i]);
		assert_true(f->n_insns > 0 && f->n_insns <= BPF_MAXINSNS);
		assert_int_equal(BPF_CLASS(f->insns[f->n_insns - 1].code), BPF_RET);
		print_message("# %s: %zu instructions\n",
			      levels[i] == POLICY_SECCOMP_BASELINE     ? "baseline"
			      : levels[i] == POLICY_SECCOMP_RESTRICTED ? "restricted"
								       : "strict",
			      f->n_insns);
	}
}

int main(void)
{
	const struct CMUnitTest filter_tests[] = {
		cmocka_unit_test(test_every_level_refuses_the_required_calls),
		cmocka_unit_test(test_every_level_allows_common_calls),
		cmocka_unit_test(test_clone_with_any_namespace_flag_is_refused),
		cmocka_unit_test(test_upper_argument_bits_do_not_hide_a_refused_value),
		cmocka_unit_test(test_probed_calls_get_enosys_without_notification),
		cmocka_unit_test(
		    test_numbers_past_libseccomps_table_get_enosys_without_notification),
		cmocka_unit_test(test_every_level_refuses_setid_modes),
		cmocka_unit_test(test_non_native_abis_are_killed),
		cmocka_unit_test(test_restricted_allows_only_common_socket_families),
		cmocka_unit_test(test_restricted_refuses_device_nodes_only),
		cmocka_unit_test(test_personality_allows_only_harmless_values),
		cmocka_unit_test(test_strict_refuses_what_is_not_on_its_allow_list),
		cmocka_unit_test(test_strict_allows_what_the_sandbox_init_needs),
		cmocka_unit_test(test_programs_fit_the_kernel_limits),
#if defined(__x86_64__)
		cmocka_unit_test(test_every_table_row_is_refused_from_its_level_up),
		cmocka_unit_test(test_strict_allows_its_whole_list),
#endif
	};

	return cmocka_run_group_tests(filter_tests, setup, teardown);
}
