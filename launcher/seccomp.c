/* The sandbox's seccomp filter: rule tables for the three levels, compilation with libseccomp (the
 * only user of it), root's on-disk cache of the compiled program, installation in the child and
 * the supervisor's side of user notifications.
 *
 * Every call a level refuses returns SECCOMP_RET_USER_NOTIF: airlock's main process answers it
 * with the errno of the table row that refused it and records it as a violation. Two kinds of
 * refusal are answered by the filter itself with ENOSYS and not recorded, because libraries make
 * such calls routinely and fall back, as they do on an older kernel: the quiet rows of the table
 * (clone3, openat2, io_uring, probed by glibc and libuv), and syscall numbers newer than
 * libseccomp's table, which the tables cannot name (glibc tries fchmodat2 before fchmodat).
 * Non-native ABIs (i386 through int 0x80, x32 through nr | 0x40000000) kill the process: the
 * tables name native syscalls only. */

#define LOG_MODULE "seccomp"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

#include <linux/seccomp.h>
#include <seccomp.h>

#include "common/fd-util.h"
#include "common/log.h"
#include "launcher/launcher-internal.h"

#ifndef SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
#define SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (1UL << 5)
#endif
#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
#ifndef CLONE_NEWCGROUP
#define CLONE_NEWCGROUP 0x02000000
#endif

/* Namespace flags clone() can carry. CLONE_NEWTIME shares its bit with the exit signal in
 * clone(), so it can only come through clone3() or unshare(), both refused. */
#define NS_CLONE_FLAGS                                                                             \
	(CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | \
	 CLONE_NEWCGROUP)

/* ---- rule tables ---- */

/* A set of values of one syscall argument. The kernel reads every argument filtered here as a
 * 32-bit int (clone() flags too: it keeps their lower 32 bits; modes are 16 bits), so only the
 * low 32 bits are compared: a caller that sets the upper half to dodge a comparison reaches the
 * same kernel code. `mask` selects the bits the set talks about; `values` are either the allowed
 * values of those bits (everything else is refused) or the refused ones. `clear` (disjoint from
 * mask) names bits that must all be 0 as well: a second condition on the same argument. */
struct arg_set {
	unsigned arg;
	uint32_t mask;
	bool values_allowed;
	const uint32_t *values;
	size_t n_values;
	uint32_t clear;
};

#define ARG_SET_CLEAR(a, c, m, allowed, ...)                                                       \
	(&(const struct arg_set){                                                                  \
	    .arg = (a),                                                                            \
	    .mask = (m),                                                                           \
	    .values_allowed = (allowed),                                                           \
	    .values = (const uint32_t[]){__VA_ARGS__},                                             \
	    .n_values = ELEMENTSOF(((const uint32_t[]){__VA_ARGS__})),                             \
	    .clear = (c),                                                                          \
	})
#define ARG_SET(a, m, allowed, ...) ARG_SET_CLEAR(a, 0, m, allowed, __VA_ARGS__)

/* clone() is fine unless it creates a namespace. */
#define CLONE_NO_NAMESPACE ARG_SET(0, NS_CLONE_FLAGS, true, 0)
/* personality(): the plain Linux personalities, 32-bit (linux32), UNAME26 on both, and the query
 * 0xffffffff. The rest turn off ASLR (ADDR_NO_RANDOMIZE), make every mapping executable
 * (READ_IMPLIES_EXEC) or map page zero (MMAP_PAGE_ZERO): mitigations an exploit would like gone. */
#define PERSONALITY_HARMLESS ARG_SET(0, 0xffffffffU, true, 0x0, 0x8, 0x20000, 0x20008, 0xffffffffU)
/* ioctl(fd, TIOCSTI) pushes characters into a terminal's input queue and TIOCLINUX (subcode 2,
 * paste) does the same on a virtual console: if the sandbox shares a terminal with the user, that
 * types commands into the user's shell, outside the sandbox. */
#define IOCTL_TTY_INJECT ARG_SET(1, 0xffffffffU, false, TIOCSTI, TIOCLINUX)
/* AF_VSOCK talks to the hypervisor or the VM's host, around every network namespace. */
#define SOCKET_NO_VSOCK ARG_SET(0, 0xffffffffU, false, AF_VSOCK)
/* What a program needs: local sockets, IP, and netlink (getaddrinfo, if_nameindex and `ip` use
 * NETLINK_ROUTE). AF_PACKET, AF_KEY, AF_ALG, AF_BLUETOOTH, AF_TIPC, AF_RDS, ... are kernel code
 * that ordinary programs never reach and that has had its share of exploits. */
#define SOCKET_COMMON_FAMILIES ARG_SET(0, 0xffffffffU, true, AF_UNIX, AF_INET, AF_INET6, AF_NETLINK)
/* A mode without the set-user-ID and set-group-ID bits (see the table). */
#define MODE_NO_SETID(a) ARG_SET(a, S_ISUID | S_ISGID, true, 0)
/* mknod(): device nodes are how a process reaches hardware; FIFOs, sockets and regular files are
 * not. Without set-id bits, as at every level. */
#define MKNOD_NO_DEVICE(a) ARG_SET_CLEAR(a, S_ISUID | S_ISGID, S_IFMT, false, S_IFCHR, S_IFBLK)

struct deny_rule {
	const char *name;
	enum policy_seccomp level;  /* the lowest level that refuses it */
	int error;		    /* positive errno the caller gets */
	const struct arg_set *args; /* NULL: every call; else the calls outside args' allowed set */
	bool quiet; /* answered with error by the filter itself: not referred, not a violation */
};

/* The refusals, by level. A level refuses its own rows and those of the levels below it; a
 * syscall listed twice takes the row of the highest level that applies (socket, mknod). strict
 * keeps every refusal and adds an allow list.
 *
 * baseline is what container runtimes refuse by default, so that programs that run in a
 * container run here: loading or replacing kernel code, stopping the machine, setting the clock,
 * swap, process accounting and quotas, raw port I/O, every mount interface (old and new: they
 * give the same powers), namespaces (unshare, setns, clone with a namespace flag: a user
 * namespace is the usual door to kernel code reserved to root), looking into other processes
 * (ptrace and its relatives), the kernel keyring, and kernel subsystems that matter to kernel
 * exploits far more than to programs (bpf, perf_event_open, userfaultfd, handles that bypass
 * path permissions). Four kinds of row are escapes rather than attack surface, so even baseline
 * has them: io_uring (its operations run without passing seccomp, so it would void the filter),
 * AF_VSOCK, terminal input injection, and set-id files.
 *
 * Set-id files: when airlock runs as root, the sandbox is host uid 0 without capabilities. It
 * owns what it creates in the workspace, and a set-user-ID file there is a root shell for the
 * host user who runs it later: nosuid holds only in the sandbox's view of the workspace. So no
 * level lets a call set S_ISUID or S_ISGID: the chmod family, and creating a file, node or
 * directory with such a mode (glibc and musl pass mode 0 to open() without O_CREAT or
 * O_TMPFILE, so testing the mode alone is exact; mkdir() drops both bits in the kernel today,
 * the rows keep that from being the only guard). openat2() carries its mode in a struct seccomp
 * cannot read, so it is refused quietly (glibc's open() does not use it). A fchmodat2() that
 * libseccomp cannot name is refused as a number newer than its table. File capabilities
 * (setxattr of "security.capability") cannot be told apart by name, which is behind a pointer;
 * setting them needs CAP_SETFCAP, which the sandbox does not have.
 *
 * Quiet rows get their errno from the filter itself and are not violations, because libraries
 * probe these calls on every start and fall back: glibc's clone3 to clone (whose flags seccomp
 * can check, unlike clone3's, which live in memory), libuv (node) and liburing users' io_uring to
 * epoll and threads, openat2's users to openat. A reported violation should mean the program
 * tried something, not that its runtime started.
 *
 * restricted, the default, also refuses what a program in a sandbox has no use for: the network
 * families beyond unix/IP/netlink, chroot, device nodes, the host and domain name, the kernel
 * log, vhangup, fanotify, secret memory, 16-bit segments, and acting on another process's
 * memory. seccomp() itself stays allowed: a filter can only take rights away, and the kernel
 * refuses a second notification listener in a task's filter chain (EBUSY), so a sandboxed
 * program cannot intercept what our filter sends to airlock. */
static const struct deny_rule deny_rules[] = {
    /* kernel code and the machine */
    {"init_module", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    {"finit_module", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    {"delete_module", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    {"create_module", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    {"query_module", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    {"get_kernel_syms", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    {"kexec_load", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    {"kexec_file_load", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    {"reboot", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    {"swapon", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    {"swapoff", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    {"settimeofday", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    {"clock_settime", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    {"clock_adjtime", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    {"adjtimex", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    {"acct", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    {"quotactl", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    {"quotactl_fd", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    {"iopl", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    {"ioperm", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    /* obsolete interfaces nothing current uses */
    {"lookup_dcookie", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    {"nfsservctl", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    {"uselib", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    {"ustat", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    {"sysfs", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    {"_sysctl", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    /* mounts */
    {"mount", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    {"umount2", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    {"pivot_root", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    {"fsopen", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    {"fsconfig", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    {"fsmount", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    {"fspick", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    {"move_mount", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    {"open_tree", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    {"mount_setattr", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    /* namespaces */
    {"unshare", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    {"setns", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    {"clone", POLICY_SECCOMP_BASELINE, EPERM, CLONE_NO_NAMESPACE},
    /* other processes */
    {"ptrace", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    {"process_vm_readv", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    {"process_vm_writev", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    {"kcmp", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    {"pidfd_getfd", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    {"migrate_pages", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    {"move_pages", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    /* the kernel keyring: shared beyond the sandbox, and a classic source of kernel bugs */
    {"keyctl", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    {"add_key", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    {"request_key", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    /* kernel attack surface */
    {"bpf", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    {"perf_event_open", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    {"userfaultfd", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    {"open_by_handle_at", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    {"name_to_handle_at", POLICY_SECCOMP_BASELINE, EPERM, NULL},
    {"personality", POLICY_SECCOMP_BASELINE, EPERM, PERSONALITY_HARMLESS},
    /* escapes */
    {"ioctl", POLICY_SECCOMP_BASELINE, EPERM, IOCTL_TTY_INJECT},
    {"socket", POLICY_SECCOMP_BASELINE, EAFNOSUPPORT, SOCKET_NO_VSOCK},
    /* set-id files */
    {"chmod", POLICY_SECCOMP_BASELINE, EPERM, MODE_NO_SETID(1)},
    {"fchmod", POLICY_SECCOMP_BASELINE, EPERM, MODE_NO_SETID(1)},
    {"fchmodat", POLICY_SECCOMP_BASELINE, EPERM, MODE_NO_SETID(2)},
    {"fchmodat2", POLICY_SECCOMP_BASELINE, EPERM, MODE_NO_SETID(2)},
    {"open", POLICY_SECCOMP_BASELINE, EPERM, MODE_NO_SETID(2)},
    {"openat", POLICY_SECCOMP_BASELINE, EPERM, MODE_NO_SETID(3)},
    {"creat", POLICY_SECCOMP_BASELINE, EPERM, MODE_NO_SETID(1)},
    {"mknod", POLICY_SECCOMP_BASELINE, EPERM, MODE_NO_SETID(1)},
    {"mknodat", POLICY_SECCOMP_BASELINE, EPERM, MODE_NO_SETID(2)},
    {"mkdir", POLICY_SECCOMP_BASELINE, EPERM, MODE_NO_SETID(1)},
    {"mkdirat", POLICY_SECCOMP_BASELINE, EPERM, MODE_NO_SETID(2)},
    /* quiet */
    {"clone3", POLICY_SECCOMP_BASELINE, ENOSYS, NULL, .quiet = true},
    {"openat2", POLICY_SECCOMP_BASELINE, ENOSYS, NULL, .quiet = true},
    {"io_uring_setup", POLICY_SECCOMP_BASELINE, ENOSYS, NULL, .quiet = true},
    {"io_uring_enter", POLICY_SECCOMP_BASELINE, ENOSYS, NULL, .quiet = true},
    {"io_uring_register", POLICY_SECCOMP_BASELINE, ENOSYS, NULL, .quiet = true},

    /* restricted */
    {"socket", POLICY_SECCOMP_RESTRICTED, EAFNOSUPPORT, SOCKET_COMMON_FAMILIES},
    {"chroot", POLICY_SECCOMP_RESTRICTED, EPERM, NULL},
    {"mknod", POLICY_SECCOMP_RESTRICTED, EPERM, MKNOD_NO_DEVICE(1)},
    {"mknodat", POLICY_SECCOMP_RESTRICTED, EPERM, MKNOD_NO_DEVICE(2)},
    {"sethostname", POLICY_SECCOMP_RESTRICTED, EPERM, NULL},
    {"setdomainname", POLICY_SECCOMP_RESTRICTED, EPERM, NULL},
    {"syslog", POLICY_SECCOMP_RESTRICTED, EPERM, NULL},
    {"vhangup", POLICY_SECCOMP_RESTRICTED, EPERM, NULL},
    {"fanotify_init", POLICY_SECCOMP_RESTRICTED, EPERM, NULL},
    {"modify_ldt", POLICY_SECCOMP_RESTRICTED, EPERM, NULL},
    {"process_madvise", POLICY_SECCOMP_RESTRICTED, EPERM, NULL},
    /* ENOSYS is also what kernels without secretmem answer, and what its users check for */
    {"memfd_secret", POLICY_SECCOMP_RESTRICTED, ENOSYS, NULL},
};

/* strict: only these run (each still subject to its deny row, if any). It is what python3, node,
 * sh/bash, coreutils, git, gcc, rustc and cargo use (tests/integration/kctl runs them), what
 * airlock's own pid 1 needs, and fchmodat2, which newer glibc tries before fchmodat. Anything
 * else gets ENOSYS (so libc falls back, as on an older kernel) and is reported; numbers newer
 * than libseccomp's table get ENOSYS without a report, as at every level. Names this
 * architecture does not have are skipped. Space-separated, by topic. */
static const char *const strict_allow[] = {
    /* file descriptors and I/O */
    "read write readv writev pread64 pwrite64 preadv preadv2 pwritev pwritev2 lseek close "
    "close_range dup dup2 dup3 fcntl ioctl pipe pipe2 sendfile splice tee copy_file_range "
    "fsync fdatasync sync syncfs sync_file_range ftruncate truncate fallocate fadvise64 "
    "readahead flock poll ppoll select pselect6 epoll_create epoll_create1 epoll_ctl "
    "epoll_wait epoll_pwait epoll_pwait2 eventfd eventfd2 inotify_init inotify_init1 "
    "inotify_add_watch inotify_rm_watch",
    /* files and directories */
    "open openat creat stat fstat lstat newfstatat statx statfs fstatfs access "
    "faccessat faccessat2 readlink readlinkat getdents getdents64 getcwd chdir fchdir mkdir "
    "mkdirat rmdir unlink unlinkat rename renameat renameat2 link linkat symlink symlinkat "
    "chmod fchmod fchmodat fchmodat2 chown fchown lchown fchownat umask utime utimes utimensat "
    "futimesat mknod mknodat getxattr lgetxattr fgetxattr listxattr llistxattr flistxattr "
    "setxattr lsetxattr fsetxattr removexattr lremovexattr fremovexattr",
    /* memory */
    "mmap munmap mprotect mremap madvise brk msync mincore mlock mlock2 munlock mlockall "
    "munlockall memfd_create membarrier pkey_alloc pkey_free pkey_mprotect get_mempolicy "
    "set_mempolicy mbind",
    /* processes and threads */
    "fork vfork clone execve execveat exit exit_group wait4 waitid kill tkill tgkill "
    "pidfd_open pidfd_send_signal getpid getppid gettid getuid geteuid getgid getegid "
    "getresuid getresgid getgroups setuid setgid setreuid setregid setresuid setresgid "
    "setgroups setfsuid setfsgid getpgid setpgid getpgrp getsid setsid prctl arch_prctl "
    "set_tid_address set_robust_list get_robust_list rseq futex futex_waitv getrlimit "
    "setrlimit prlimit64 getrusage times capget capset personality uname sysinfo getcpu "
    "getrandom sched_yield sched_getaffinity sched_setaffinity sched_getparam sched_setparam "
    "sched_getscheduler sched_setscheduler sched_get_priority_max sched_get_priority_min "
    "sched_rr_get_interval sched_getattr sched_setattr getpriority setpriority ioprio_get "
    "ioprio_set",
    /* time */
    "nanosleep clock_nanosleep clock_gettime clock_getres gettimeofday time alarm pause "
    "getitimer setitimer timer_create timer_settime timer_gettime timer_getoverrun "
    "timer_delete timerfd_create timerfd_settime timerfd_gettime",
    /* signals */
    "rt_sigaction rt_sigprocmask rt_sigreturn rt_sigsuspend rt_sigpending rt_sigtimedwait "
    "rt_sigqueueinfo rt_tgsigqueueinfo sigaltstack signalfd signalfd4 restart_syscall",
    /* sockets */
    "socket socketpair bind connect listen accept accept4 getsockname getpeername sendto "
    "recvfrom sendmsg recvmsg sendmmsg recvmmsg shutdown setsockopt getsockopt",
    /* System V IPC (private to the sandbox's IPC namespace) */
    "shmget shmat shmdt shmctl semget semop semtimedop semctl msgget msgsnd msgrcv msgctl",
};

static const char *const level_names[] = {
    [POLICY_SECCOMP_BASELINE] = "baseline",
    [POLICY_SECCOMP_RESTRICTED] = "restricted",
    [POLICY_SECCOMP_STRICT] = "strict",
};

/* ---- from tables to rules ---- */

/* One rule as libseccomp gets it: the whole syscall (arg < 0) or (low 32 bits of arg & mask) ==
 * value. */
struct rule {
	int32_t nr;
	uint32_t action;
	int32_t arg;
	uint32_t mask;
	uint32_t value;
};

#define RULES_MAX 1024
#define PREFIX_LEN 6

/* The rules given to libseccomp; their hash keys the cache (see seccomp_rules_key()). */
struct rule_set {
	struct rule rules[RULES_MAX];
	size_t n;
	bool overflow;
};

static void rule_add(struct rule_set *s, int nr, uint32_t action, int arg, uint32_t mask,
		     uint32_t value)
{
	if (s->n >= ELEMENTSOF(s->rules)) {
		s->overflow = true;
		return;
	}
	s->rules[s->n++] =
	    (struct rule){.nr = nr, .action = action, .arg = arg, .mask = mask, .value = value};
}

/* Adds rules matching every value of the bits in `mask` that vals[] does not list, as a union
 * of (arg & m) == v terms: walk the bits from the top, and wherever a branch holds none of the
 * listed values, that whole branch is one term. vals[] is reordered. */
static void rule_add_complement(struct rule_set *s, int nr, uint32_t action, int arg, uint32_t mask,
				uint32_t fixed_mask, uint32_t fixed, uint32_t *vals, size_t n)
{
	uint32_t rest = mask & ~fixed_mask, bit;
	size_t k = 0;

	if (n == 0) {
		rule_add(s, nr, action, arg, fixed_mask, fixed);
		return;
	}
	if (rest == 0)
		return; /* a listed value */
	bit = UINT32_C(1) << (31 - __builtin_clz(rest));
	for (size_t i = 0; i < n; i++)
		if (!(vals[i] & bit)) {
			uint32_t t = vals[i];

			vals[i] = vals[k];
			vals[k++] = t;
		}
	rule_add_complement(s, nr, action, arg, mask, fixed_mask | bit, fixed, vals, k);
	rule_add_complement(s, nr, action, arg, mask, fixed_mask | bit, fixed | bit, vals + k,
			    n - k);
}

/* Adds rules that match the values of a's argument that are (want_allowed) or are not allowed. */
static void rule_add_arg_set(struct rule_set *s, int nr, uint32_t action, const struct arg_set *a,
			     bool want_allowed)
{
	uint32_t vals[16];
	size_t n = MIN(a->n_values, ELEMENTSOF(vals)), first = s->n;

	if (n < a->n_values) {
		s->overflow = true;
		return;
	}
	for (size_t i = 0; i < n; i++)
		vals[i] = a->values[i] & a->mask;
	/* refused: one bit of clear set, or a refused value */
	if (!want_allowed)
		for (uint32_t c = a->clear; c; c &= c - 1)
			rule_add(s, nr, action, (int)a->arg, c & -c, c & -c);
	if (want_allowed == a->values_allowed)
		for (size_t i = 0; i < n; i++)
			rule_add(s, nr, action, (int)a->arg, a->mask, vals[i]);
	else
		rule_add_complement(s, nr, action, (int)a->arg, a->mask, 0, 0, vals, n);
	/* allowed: an allowed value, with every bit of clear 0 */
	if (want_allowed)
		for (size_t i = first; i < s->n; i++)
			s->rules[i].mask |= a->clear;
}

/* The row that decides name at level, or NULL when the level lets it run. */
static const struct deny_rule *deny_rule_find(const char *name, enum policy_seccomp level)
{
	const struct deny_rule *found = NULL;

	for (size_t i = 0; i < ELEMENTSOF(deny_rules); i++) {
		const struct deny_rule *d = &deny_rules[i];

		if (d->level <= level && streq(d->name, name) &&
		    (!found || d->level > found->level))
			found = d;
	}
	return found;
}

/* Adds the rows that decide at level and are (quiet) or are not quiet, with their action. */
static void rules_add_refusals(struct rule_set *s, enum policy_seccomp level, bool quiet)
{
	for (size_t i = 0; i < ELEMENTSOF(deny_rules); i++) {
		const struct deny_rule *d = &deny_rules[i];
		uint32_t action = quiet ? SCMP_ACT_ERRNO((uint32_t)d->error) : SCMP_ACT_NOTIFY;
		int nr;

		if (d->quiet != quiet || deny_rule_find(d->name, level) != d)
			continue; /* a higher level's row for the same syscall decides */
		nr = seccomp_syscall_resolve_name(d->name);
		if (nr < 0)
			continue; /* not a syscall of this architecture */
		if (!d->args)
			rule_add(s, nr, action, -1, 0, 0);
		else
			rule_add_arg_set(s, nr, action, d->args, false);
	}
}

/* strict: only the allow list runs, within the allowed argument values of its rows; the default
 * action refers everything else to airlock. (The referred refusals need no rules of their own,
 * and libseccomp would reject rules that repeat the default action; the quiet ones are added
 * as at every level.) */
static int rules_add_allow_list(struct rule_set *s)
{
	for (size_t i = 0; i < ELEMENTSOF(strict_allow); i++)
		for (const char *p = strict_allow[i]; *p;) {
			size_t n = strcspn(p, " ");
			const struct deny_rule *d;
			char name[32];
			int nr;

			if (n == 0 || n >= sizeof(name))
				return -EINVAL;
			memcpy(name, p, n);
			name[n] = '\0';
			p += n + (p[n] == ' ');
			d = deny_rule_find(name, POLICY_SECCOMP_STRICT);
			nr = seccomp_syscall_resolve_name(name);
			if (nr < 0)
				continue;
			if (!d)
				rule_add(s, nr, SCMP_ACT_ALLOW, -1, 0, 0);
			else if (d->args)
				rule_add_arg_set(s, nr, SCMP_ACT_ALLOW, d->args, true);
			/* else a row refusing every call wins over the allow list */
		}
	return 0;
}

/* ---- numbers libseccomp cannot name ----
 *
 * Syscalls newer than libseccomp's table (with 2.5: mseal, listmount, statmount, open_tree_attr,
 * file_setattr, ...; fchmodat2 too in builds without Debian's additions) have numbers no row can
 * name, so the deny-list levels would let them run. A few instructions before libseccomp's
 * program answer them ENOSYS, as an older kernel would, since libraries probe new calls and fall
 * back. Classic BPF jumps are relative and only go forward, so libseccomp's program runs
 * unchanged behind them:
 *
 *	A = arch;  if A != native: to the program (which kills other ABIs)
 *	A = nr;    if A >= 0x40000000: to the program (x32 calls, and -1, which it knows)
 *	if A > the highest number libseccomp names: return ERRNO(ENOSYS)
 *	to the program */

#define PREFIX_VERSION 1     /* bump when the prefix's instructions change: it keys the cache */
#define SYSCALL_NR_SCAN 1024 /* the native tables of every architecture we build for fit */
#define X32_SYSCALL_BIT 0x40000000U
/* The jump offset from prefix instruction i to the first instruction of libseccomp's program */
#define TO_PROGRAM(i) (PREFIX_LEN - 1 - (i))

/* The highest native syscall number libseccomp names, or -EOPNOTSUPP when it names none below
 * SYSCALL_NR_SCAN. */
static int seccomp_max_known_nr(void)
{
	for (int nr = SYSCALL_NR_SCAN - 1; nr >= 0; nr--) {
		char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);

		if (name) {
			free(name);
			return nr;
		}
	}
	return -EOPNOTSUPP;
}

static int seccomp_prefix_build(struct sock_filter ret[static PREFIX_LEN])
{
	int max = seccomp_max_known_nr();
	const struct sock_filter p[PREFIX_LEN] = {
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, seccomp_arch_native(), 0, TO_PROGRAM(1)),
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	    BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, X32_SYSCALL_BIT, TO_PROGRAM(3), 0),
	    BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, (uint32_t)max, 0, TO_PROGRAM(4)),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
	};

	if (max < 0)
		return max;
	memcpy(ret, p, sizeof(p));
	return 0;
}

static int seccomp_rules_build(enum policy_seccomp level, struct rule_set *s)
{
	int r = 0;

	s->n = 0;
	s->overflow = false;
	if (level == POLICY_SECCOMP_STRICT)
		r = rules_add_allow_list(s);
	else
		rules_add_refusals(s, level, false);
	if (r < 0)
		return r;
	rules_add_refusals(s, level, true);
	return s->overflow ? -E2BIG : 0;
}

/* ---- compilation ---- */

/* libseccomp's binary tree: O(log n) dispatch on kernels that run the whole filter for every
 * call (since Linux 5.11 calls that are always allowed skip it). */
#define SECCOMP_OPTIMIZE 2

static uint32_t seccomp_default_action(enum policy_seccomp level)
{
	return level == POLICY_SECCOMP_STRICT ? SCMP_ACT_NOTIFY : SCMP_ACT_ALLOW;
}

static uint64_t fnv1a(uint64_t h, const void *p, size_t len)
{
	const unsigned char *c = p;

	for (size_t i = 0; i < len; i++) {
		h ^= c[i];
		h *= UINT64_C(0x100000001b3);
	}
	return h;
}

#define FNV_INIT UINT64_C(0xcbf29ce484222325)

/* Everything the compiled program depends on: the rule tables of this file, the filter
 * attributes, the prefix layout, the architecture and the library that compiles them (its
 * version stands for its syscall table, which turns the tables' names into numbers and gives the
 * prefix its highest number). Hashing the tables rather than the rules built from them means a
 * cache hit resolves no syscall name at all. Should a repackaged libseccomp of the same version
 * know more syscalls, a cached filter still answers those ENOSYS: the safe direction. */
static uint64_t seccomp_cache_key(enum policy_seccomp level)
{
	const struct scmp_version *v = seccomp_version();
	uint32_t head[9] = {
	    level,
	    seccomp_arch_native(),
	    seccomp_default_action(level),
	    SCMP_ACT_KILL_PROCESS,
	    SECCOMP_OPTIMIZE,
	    PREFIX_VERSION,
	    v ? v->major : 0,
	    v ? v->minor : 0,
	    v ? v->micro : 0,
	};
	uint64_t h = FNV_INIT;

	h = fnv1a(h, head, sizeof(head));
	for (size_t i = 0; i < ELEMENTSOF(deny_rules); i++) {
		const struct deny_rule *d = &deny_rules[i];
		uint32_t f[3] = {d->level, (uint32_t)d->error, d->quiet};

		h = fnv1a(h, d->name, strlen(d->name) + 1);
		h = fnv1a(h, f, sizeof(f));
		if (d->args) {
			uint32_t a[4] = {d->args->arg, d->args->mask, d->args->values_allowed,
					 d->args->clear};

			h = fnv1a(h, a, sizeof(a));
			h = fnv1a(h, d->args->values, d->args->n_values * sizeof(uint32_t));
		}
	}
	for (size_t i = 0; level == POLICY_SECCOMP_STRICT && i < ELEMENTSOF(strict_allow); i++)
		h = fnv1a(h, strict_allow[i], strlen(strict_allow[i]) + 1);
	return h;
}

static void seccomp_ctxp(scmp_filter_ctx *ctx)
{
	if (*ctx)
		seccomp_release(*ctx);
}

/* Exports ctx's program behind the prefix: through a memfd, which libseccomp 2.5 can only export
 * to. */
static int seccomp_export(scmp_filter_ctx ctx, const struct sock_filter prefix[static PREFIX_LEN],
			  struct sock_filter **ret_insns, size_t *ret_n)
{
	_cleanup_free_ struct sock_filter *insns = NULL;
	_cleanup_close_ int fd = -EBADF;
	off_t size;
	ssize_t n;
	int r;

	fd = memfd_create("airlock-seccomp", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = seccomp_export_bpf(ctx, fd);
	if (r < 0)
		return r;
	size = lseek(fd, 0, SEEK_END);
	if (size < 0)
		return -errno;
	if (size == 0 || size > (off_t)((BPF_MAXINSNS - PREFIX_LEN) * sizeof(struct sock_filter)) ||
	    size % sizeof(struct sock_filter) != 0)
		return -EBADMSG;
	insns = malloc(PREFIX_LEN * sizeof(*insns) + (size_t)size);
	if (!insns)
		return -ENOMEM;
	memcpy(insns, prefix, PREFIX_LEN * sizeof(*insns));
	n = pread(fd, insns + PREFIX_LEN, (size_t)size, 0);
	if (n < 0)
		return -errno;
	if (n != size)
		return -EIO;
	*ret_insns = TAKE_PTR(insns);
	*ret_n = PREFIX_LEN + (size_t)size / sizeof(struct sock_filter);
	return 0;
}

/* Runs libseccomp over the rules and puts the prefix before its program. */
static int seccomp_rules_compile(enum policy_seccomp level, const struct rule_set *s,
				 struct sock_filter **ret_insns, size_t *ret_n)
{
	_cleanup_(seccomp_ctxp) scmp_filter_ctx ctx = NULL;
	struct sock_filter prefix[PREFIX_LEN];
	int r;

	/* API level 5: the kernel has user notifications (Linux 5.0) */
	if (seccomp_api_get() < 5)
		return -EOPNOTSUPP;
	ctx = seccomp_init(seccomp_default_action(level));
	if (!ctx)
		return -ENOMEM;
	r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	if (r < 0)
		return r;
	r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, SECCOMP_OPTIMIZE);
	if (r < 0)
		return r;
	for (size_t i = 0; i < s->n; i++) {
		const struct rule *ru = &s->rules[i];
		struct scmp_arg_cmp cmp = {
		    .arg = (unsigned)ru->arg,
		    .op = SCMP_CMP_MASKED_EQ,
		    .datum_a = ru->mask,
		    .datum_b = ru->value,
		};

		r = seccomp_rule_add_array(ctx, ru->action, ru->nr, ru->arg < 0 ? 0 : 1, &cmp);
		if (r < 0)
			return log_debug_errno(r, "Failed to add seccomp rule for syscall %d: %m",
					       ru->nr);
	}
	r = seccomp_prefix_build(prefix);
	if (r < 0)
		return r;
	return seccomp_export(ctx, prefix, ret_insns, ret_n);
}

/* ---- on-disk cache, for root only ----
 *
 * Compiling costs 0.5 to 1.5 ms, a cache hit a few microseconds (hashing this file's tables and
 * reading one file). But the cache holds the next sandbox's filter: whoever
 * can write it can turn seccomp off for every later run. A user's own directories
 * ($XDG_CACHE_HOME, ~/.cache) are within reach of that user's sandboxes (a workspace of $HOME
 * covers ~/.cache), so only root keeps a cache, in /var/cache/airlock/seccomp, and every other
 * user compiles each time. No sandbox can write there: the launcher refuses a read-write bind of
 * /var/cache/airlock or any directory above it. In case something else slips, every directory
 * from / down must be root's and not writable by group or others (each opened without following
 * symbolic links), and the file 0600, root's and without a second name (a hard link elsewhere
 * could be written through). A file's name and header carry the key (a hash of the rules, the
 * prefix, the filter attributes, the architecture and the libseccomp version); the header's
 * checksum catches truncated or damaged files, not tampering, since anyone can recompute it.
 * Any doubt means compiling again. */

#define CACHE_MAGIC "ALSCMP01"

struct cache_header {
	char magic[8];
	uint64_t key;
	uint64_t checksum;
	uint32_t n_insns;
	uint32_t reserved;
};

/* The cache directory, or NULL when this process keeps none: its euid is not 0, or
 * AIRLOCK_SECCOMP_CACHE (honoured for root only, for tests and packaging) is not an absolute
 * path; empty turns the cache off. */
static const char *cache_dir(void)
{
	const char *dir;

	if (geteuid() != 0)
		return NULL;
	dir = secure_getenv("AIRLOCK_SECCOMP_CACHE");
	if (!dir)
		return "/var/cache/airlock/seccomp";
	return dir[0] == '/' ? dir : NULL;
}

static int cache_dir_check(int fd, const char *name)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH)))
		return log_debug_errno(-EPERM,
				       "Not using seccomp cache: unsafe owner or mode of %s", name);
	return 0;
}

/* Opens path one directory at a time from /, without following symbolic links, and checks each
 * one. create makes the missing ones (0700). */
static int cache_dir_open(const char *path, bool create)
{
	_cleanup_close_ int fd = -EBADF;
	char name[NAME_MAX + 1] = "/";
	int r;

	fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (const char *p = path;;) {
		size_t n;
		int next;

		r = cache_dir_check(fd, name);
		if (r < 0)
			return r;
		p += strspn(p, "/");
		n = strcspn(p, "/");
		if (n == 0)
			return TAKE_FD(fd);
		if (n >= sizeof(name))
			return -ENAMETOOLONG;
		memcpy(name, p, n);
		name[n] = '\0';
		p += n;
		if (create && mkdirat(fd, name, 0700) < 0 && errno != EEXIST)
			return -errno;
		next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0)
			return -errno;
		(void)al_close(fd);
		fd = next;
	}
}

static void cache_file_name(char *buf, size_t size, enum policy_seccomp level, uint64_t key)
{
	(void)snprintf(buf, size, "%s-%08x-%016llx.bpf", level_names[level], seccomp_arch_native(),
		       (unsigned long long)key);
}

static int cache_load(const char *dir, enum policy_seccomp level, uint64_t key,
		      struct sock_filter **ret_insns, size_t *ret_n)
{
	_cleanup_close_ int dfd = -EBADF, fd = -EBADF;
	_cleanup_free_ struct sock_filter *insns = NULL;
	struct cache_header h;
	char name[96];
	struct stat st;
	size_t len;
	ssize_t n;

	dfd = cache_dir_open(dir, false);
	if (dfd < 0)
		return dfd;
	cache_file_name(name, sizeof(name), level, key);
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & 0077) || st.st_nlink != 1)
		return -EPERM;
	if (st.st_size < (off_t)sizeof(h) ||
	    st.st_size > (off_t)(sizeof(h) + BPF_MAXINSNS * sizeof(struct sock_filter)))
		return -EBADMSG;
	n = pread(fd, &h, sizeof(h), 0);
	if (n != (ssize_t)sizeof(h))
		return -EBADMSG;
	if (memcmp(h.magic, CACHE_MAGIC, sizeof(h.magic)) != 0 || h.key != key || h.n_insns == 0 ||
	    h.n_insns > BPF_MAXINSNS ||
	    (off_t)(sizeof(h) + h.n_insns * sizeof(struct sock_filter)) != st.st_size)
		return -EBADMSG;
	len = h.n_insns * sizeof(struct sock_filter);
	insns = malloc(len);
	if (!insns)
		return -ENOMEM;
	n = pread(fd, insns, len, sizeof(h));
	if (n != (ssize_t)len || fnv1a(FNV_INIT, insns, len) != h.checksum)
		return -EBADMSG;
	*ret_insns = TAKE_PTR(insns);
	*ret_n = h.n_insns;
	return 0;
}

/* Removes the files of other keys for this level and architecture: what older builds or
 * libseccomp versions left. */
static void cache_prune(int dfd, enum policy_seccomp level, const char *keep)
{
	char prefix[64];
	DIR *d;
	int fd;

	(void)snprintf(prefix, sizeof(prefix), "%s-%08x-", level_names[level],
		       seccomp_arch_native());
	fd = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0)
		return;
	d = fdopendir(fd);
	if (!d) {
		(void)al_close(fd);
		return;
	}
	for (struct dirent *de; (de = readdir(d));)
		if (startswith(de->d_name, prefix) && !streq(de->d_name, keep))
			(void)unlinkat(dfd, de->d_name, 0);
	(void)closedir(d);
}

static int cache_store(const char *dir, enum policy_seccomp level, uint64_t key,
		       const struct sock_filter *insns, size_t n)
{
	_cleanup_close_ int dfd = -EBADF, fd = -EBADF;
	struct cache_header h = {.key = key, .n_insns = (uint32_t)n};
	char name[96], tmp[128];
	uint64_t rnd;
	int r;

	dfd = cache_dir_open(dir, true);
	if (dfd < 0)
		return dfd;
	memcpy(h.magic, CACHE_MAGIC, sizeof(h.magic));
	h.checksum = fnv1a(FNV_INIT, insns, n * sizeof(*insns));
	cache_file_name(name, sizeof(name), level, key);
	if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd))
		rnd = (uint64_t)getpid();
	(void)snprintf(tmp, sizeof(tmp), ".%s.%016llx.tmp", name, (unsigned long long)rnd);
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	r = RET_NERRNO(fchmod(fd, 0600));
	if (r >= 0)
		r = al_write_all(fd, &h, sizeof(h));
	if (r >= 0)
		r = al_write_all(fd, insns, n * sizeof(*insns));
	if (r >= 0)
		r = RET_NERRNO(renameat(dfd, tmp, dfd, name));
	if (r < 0) {
		(void)unlinkat(dfd, tmp, 0);
		return r;
	}
	cache_prune(dfd, level, name);
	return 0;
}

int launcher_seccomp_compile(enum policy_seccomp level, struct launcher_seccomp_filter *ret,
			     struct al_error *err)
{
	_cleanup_free_ struct rule_set *s = NULL;
	const char *dir = cache_dir();
	struct sock_filter *insns = NULL;
	size_t n = 0;
	uint64_t key;
	int r;

	if ((unsigned)level >= ELEMENTSOF(level_names))
		return al_error_set(err, -EINVAL, "seccomp: unknown level %d", (int)level);
	key = seccomp_cache_key(level);
	r = dir ? cache_load(dir, level, key, &insns, &n) : -ENOENT;
	if (r < 0) {
		if (r != -ENOENT)
			log_debug_errno(r, "Not using cached seccomp filter: %m");
		s = malloc(sizeof(*s));
		if (!s)
			return -ENOMEM;
		r = seccomp_rules_build(level, s);
		if (r < 0)
			return al_error_set_errno(err, r, "seccomp: cannot build the %s rules",
						  level_names[level]);
		r = seccomp_rules_compile(level, s, &insns, &n);
		if (r < 0)
			return al_error_set_errno(err, r, "seccomp: cannot compile the %s filter",
						  level_names[level]);
		r = dir ? cache_store(dir, level, key, insns, n) : 0;
		if (r < 0)
			log_debug_errno(r, "Failed to cache seccomp filter: %m");
	}
	*ret = (struct launcher_seccomp_filter){.insns = insns, .n_insns = n, .level = level};
	return 0;
}

void launcher_seccomp_filter_done(struct launcher_seccomp_filter *f)
{
	if (!f)
		return;
	free(f->insns);
	*f = (struct launcher_seccomp_filter){.insns = NULL};
}

/* ---- child side ---- */

int launcher_seccomp_install(const struct launcher_seccomp_filter *f, int *ret_notify_fd)
{
	struct sock_fprog prog;
	long fd;

	if (!f || !f->insns || f->n_insns == 0 || f->n_insns > BPF_MAXINSNS)
		return -EINVAL;
	prog = (struct sock_fprog){.len = (unsigned short)f->n_insns, .filter = f->insns};
	/* WAIT_KILLABLE_RECV (Linux 6.0): once airlock has read a notification, only a fatal signal
	 * interrupts the waiting call, so a signal does not restart it into a second report. */
	fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
		     SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV,
		     &prog);
	if (fd < 0 && errno == EINVAL)
		fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER,
			     &prog);
	if (fd < 0)
		return -errno;
	*ret_notify_fd = (int)fd;
	return 0;
}

/* ---- supervisor side ---- */

/* The errno a refused call gets: its row's, or ENOSYS for what strict's allow list leaves out. */
static int seccomp_refusal_errno(const char *name, enum policy_seccomp level)
{
	const struct deny_rule *d = name ? deny_rule_find(name, level) : NULL;

	return d ? d->error : ENOSYS;
}

/* The request and response buffers, sized for the running kernel, allocated once per thread
 * that supervises (normally only airlock's main loop) and kept for the life of the process. */
static _Thread_local struct seccomp_notif *notif_req;
static _Thread_local struct seccomp_notif_resp *notif_resp;
static _Thread_local struct seccomp_notif_sizes notif_sizes;

static int seccomp_notify_buffers(void)
{
	int r;

	if (notif_req)
		return 0;
	if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &notif_sizes) < 0)
		return -errno;
	r = seccomp_notify_alloc(&notif_req, &notif_resp);
	if (r < 0) {
		notif_req = NULL;
		notif_resp = NULL;
	}
	return r;
}

/* libseccomp 2.5 turns every ioctl failure into -ECANCELED and leaves errno as the ioctl set
 * it: ENOENT when the caller died or the call was interrupted, which we must tell apart. */
static int seccomp_notify_errno(int r)
{
	return r == -ECANCELED && errno > 0 ? -errno : r;
}

int launcher_seccomp_handle_notify(int notify_fd, enum policy_seccomp level,
				   struct launcher_seccomp_violation *ret)
{
	char *name;
	int error, r;

	r = seccomp_notify_buffers();
	if (r < 0)
		return r;
	memset(notif_req, 0, notif_sizes.seccomp_notif); /* the kernel wants it zeroed */
	r = seccomp_notify_receive(notify_fd, notif_req);
	if (r < 0)
		return seccomp_notify_errno(r);
	if (seccomp_notify_id_valid(notify_fd, notif_req->id) < 0)
		return -ENOENT;

	name = seccomp_syscall_resolve_num_arch(notif_req->data.arch, notif_req->data.nr);
	error = seccomp_refusal_errno(name, level);
	memset(notif_resp, 0, notif_sizes.seccomp_notif_resp);
	notif_resp->id = notif_req->id;
	notif_resp->error = -error;
	r = seccomp_notify_respond(notify_fd, notif_resp);
	if (r < 0) {
		free(name);
		return seccomp_notify_errno(r);
	}

	*ret = (struct launcher_seccomp_violation){
	    .pid = (pid_t)notif_req->pid,
	    .syscall_nr = notif_req->data.nr,
	    .error = error,
	};
	if (name && strlen(name) < sizeof(ret->name))
		memcpy(ret->name, name, strlen(name) + 1);
	else
		(void)snprintf(ret->name, sizeof(ret->name), "syscall_%d", notif_req->data.nr);
	free(name);
	return 0;
}
