/* `airlock doctor`: probes each kernel feature airlock needs by trying it in a forked child (never
 * by version numbers alone), says what is missing and how to fix it. Also the one-line hint the
 * launcher adds when creating the sandbox's namespaces fails. */

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/sched.h>

#include "common/fd-util.h"
#include "common/json-util.h"
#include "launcher/launcher-internal.h"
#include "launcher/launcher.h"

#ifndef CLONE_NEWCGROUP
#define CLONE_NEWCGROUP 0x02000000
#endif

#define NOBODY 65534

enum doctor_status {
	DOCTOR_OK,
	DOCTOR_WARNING,
	DOCTOR_MISSING,
};

static const char *const status_names[] = {
    [DOCTOR_OK] = "ok",
    [DOCTOR_WARNING] = "warning",
    [DOCTOR_MISSING] = "missing",
};

struct doctor_check {
	char feature[64];
	enum doctor_status status;
	char detail[AL_ERROR_MSG_MAX];
	char fix[256];
};

#define CHECKS_MAX 24

struct doctor {
	struct doctor_check checks[CHECKS_MAX];
	size_t n;
};

/* ---- facts about the machine ---- */

/* True when the /proc file exists and holds the integer want. */
static bool proc_value_is(const char *path, long want)
{
	_cleanup_free_ char *text = NULL;
	char *end;
	long v;

	if (al_read_file_at(AT_FDCWD, path, 4096, &text, NULL) < 0)
		return false;
	v = strtol(text, &end, 10);
	return end != text && v == want;
}

/* True when this process runs under a seccomp filter (Seccomp: 2), as inside most containers. */
static bool self_is_filtered(void)
{
	_cleanup_free_ char *status = NULL;
	const char *p;

	if (al_read_file_at(AT_FDCWD, "/proc/self/status", 65536, &status, NULL) < 0)
		return false;
	p = strstr(status, "\nSeccomp:");
	return p && atoi(p + strlen("\nSeccomp:")) == 2;
}

/* What blocks a feature, and how to unblock it. */
struct blocker {
	const char *why;
	const char *hint; /* why, for a failed clone */
	const char *fix;
};

#define BLOCKER(why, fix)                                                                          \
	{                                                                                          \
		why, why "; see airlock doctor", fix                                               \
	}

static const struct blocker blocker_apparmor = BLOCKER(
    "user namespaces are blocked by AppArmor (kernel.apparmor_restrict_unprivileged_userns=1)",
    "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0 (or give airlock an AppArmor "
    "profile that allows \"userns,\")");
static const struct blocker blocker_debian =
    BLOCKER("unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone=0)",
	    "sysctl -w kernel.unprivileged_userns_clone=1");
static const struct blocker blocker_max =
    BLOCKER("user namespaces are disabled (user.max_user_namespaces=0)",
	    "sysctl -w user.max_user_namespaces=15000");
static const struct blocker blocker_seccomp = BLOCKER(
    "airlock itself runs under a seccomp filter (inside a container or a sandbox?)",
    "run airlock on the host, or relax the container's seccomp profile (e.g. --security-opt "
    "seccomp=unconfined)");

static const struct blocker blocker_limit =
    BLOCKER("a namespace limit was reached (/proc/sys/user/max_*_namespaces)",
	    "raise the limit of that namespace type, e.g. sysctl -w user.max_mnt_namespaces=15000");
static const struct blocker blocker_unprivileged =
    BLOCKER("creating namespaces needs root or a user namespace",
	    "run airlock as root, or enable user namespaces");

/* The knob that blocks user namespaces on this machine, or NULL. */
static const struct blocker *userns_blocker(bool unprivileged)
{
	if (unprivileged &&
	    proc_value_is("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", 1))
		return &blocker_apparmor;
	if (unprivileged && proc_value_is("/proc/sys/kernel/unprivileged_userns_clone", 0))
		return &blocker_debian;
	if (proc_value_is("/proc/sys/user/max_user_namespaces", 0))
		return &blocker_max;
	if (self_is_filtered())
		return &blocker_seccomp;
	return NULL;
}

/* Why creating the namespaces of flags failed with error, when we can tell. */
static const struct blocker *namespace_blocker(uint64_t flags, int error)
{
	bool unprivileged = geteuid() != 0;
	const struct blocker *b;

	error = error < 0 ? -error : error;
	if (error != EPERM && error != EACCES && error != ENOSPC && error != EINVAL &&
	    error != ENOSYS)
		return NULL;
	b = flags & CLONE_NEWUSER ? userns_blocker(unprivileged) : NULL;
	if (b)
		return b;
	if ((error == EPERM || error == ENOSYS) && self_is_filtered())
		return &blocker_seccomp;
	if (error == ENOSPC)
		return &blocker_limit;
	if (error == EPERM && unprivileged && !(flags & CLONE_NEWUSER))
		return &blocker_unprivileged;
	return NULL;
}

const char *launcher_doctor_hint(uint64_t clone_flags, int error)
{
	const struct blocker *b = namespace_blocker(clone_flags, error);

	return b ? b->hint : NULL;
}

static bool doctor_ok(const struct doctor *d, const char *feature);

static struct doctor_check *doctor_add(struct doctor *d, const char *feature)
{
	struct doctor_check *c = &d->checks[MIN(d->n, (size_t)CHECKS_MAX - 1)];

	if (d->n < CHECKS_MAX)
		d->n++;
	*c = (struct doctor_check){.status = DOCTOR_OK};
	(void)snprintf(c->feature, sizeof(c->feature), "%s", feature);
	return c;
}

/* Records the outcome of a probe: a failure is `missing` when required, else a `warning`. A
 * blocker, when known, explains it better than the errno and the generic fix. */
static void doctor_set(struct doctor_check *c, int r, bool required, const struct blocker *b,
		       const char *fix)
{
	if (r >= 0)
		return;
	c->status = required ? DOCTOR_MISSING : DOCTOR_WARNING;
	if (!b && (r == -EPERM || r == -ENOSYS || r == -EBUSY) && self_is_filtered())
		b = &blocker_seccomp;
	if (!c->detail[0])
		(void)snprintf(c->detail, sizeof(c->detail), "%s", b ? b->why : strerror(-r));
	if (!c->fix[0])
		(void)snprintf(c->fix, sizeof(c->fix), "%s", b ? b->fix : fix);
}

/* ---- probes: each runs in a forked child ---- */

/* Runs fn in a child; the child exits with 0 or the errno fn failed with. Returns 0 or -errno. */
static int probe(int (*fn)(const void *arg), const void *arg)
{
	int status;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int r = fn(arg);

		_exit(r >= 0 ? 0 : MIN(-r, 255));
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (!WIFEXITED(status))
		return -ECHILD;
	return -WEXITSTATUS(status);
}

/* Maps id (outside) to 0 (inside) in /proc/self/{uid,gid}_map. */
static int write_id_map(const char *file, unsigned id)
{
	char line[32];

	(void)snprintf(line, sizeof(line), "0 %u 1", id);
	return al_write_file_at(AT_FDCWD, file, line);
}

/* Child: creates a user namespace (as nobody when unprivileged and we are root), maps itself in
 * it and mounts there: AppArmor's restriction lets unshare() succeed and fails the mount. */
static int probe_userns(const void *arg)
{
	bool as_nobody = *(const bool *)arg;
	unsigned uid, gid;
	int r;

	if (as_nobody) {
		if (setgroups(0, NULL) < 0 || setresgid(NOBODY, NOBODY, NOBODY) < 0 ||
		    setresuid(NOBODY, NOBODY, NOBODY) < 0)
			return -errno;
		/* a changed uid makes us undumpable, which hands /proc/self to root */
		(void)prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	}
	uid = (unsigned)geteuid();
	gid = (unsigned)getegid();
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
		return -errno;
	r = al_write_file_at(AT_FDCWD, "/proc/self/setgroups", "deny");
	if (r >= 0)
		r = write_id_map("/proc/self/uid_map", uid);
	if (r >= 0)
		r = write_id_map("/proc/self/gid_map", gid);
	if (r < 0)
		return r;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("airlock-doctor", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=4k") < 0)
		return -errno;
	return 0;
}

/* Child: unshares one namespace (inside a new user namespace when unprivileged). */
static int probe_namespace(const void *arg)
{
	int flags = *(const int *)arg;

	if (geteuid() != 0)
		flags |= CLONE_NEWUSER;
	return unshare(flags) < 0 ? -errno : 0;
}

static int probe_clone3_pidfd(const void *arg)
{
	int pidfd = -1;
	struct clone_args args = {
	    .flags = CLONE_PIDFD,
	    .pidfd = (uint64_t)(uintptr_t)&pidfd,
	    .exit_signal = SIGCHLD,
	};
	siginfo_t si = {0};
	long pid;

	(void)arg;
	pid = syscall(SYS_clone3, &args, sizeof(args));
	if (pid < 0)
		return -errno;
	if (pid == 0)
		_exit(0);
	if (waitid((idtype_t)P_PIDFD, (id_t)pidfd, &si, WEXITED) < 0)
		return -errno;
	return si.si_pid == pid ? 0 : -ECHILD;
}

/* Forks and execs path; returns its exit status, or the errno execve() failed with. */
static int exec_status(const char *path)
{
	int status;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		execl(path, path, "-c", "exit 0", (char *)NULL);
		_exit(errno);
	}
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Child: allows /bin/true only; it must run and /bin/sh must get EACCES. */
static int probe_landlock(const void *arg)
{
	char true_path[PATH_MAX];
	char *paths[] = {true_path};
	int r;

	(void)arg;
	if (!realpath("/bin/true", true_path))
		return -errno;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	r = launcher_landlock_restrict_exec(paths, 1, NULL);
	if (r < 0)
		return r;
	if (exec_status(true_path) != 0)
		return -ENOEXEC;
	return exec_status("/bin/sh") == EACCES ? 0 : -EPROTO;
}

/* ---- seccomp: the real filter, end to end ---- */

/* The child: installs f, hands its listener to airlock's side, then calls unshare(0), which
 * the filter refuses (and which would be harmless if it did not). */
_noreturn_ static void seccomp_probe_child(const struct launcher_seccomp_filter *f, int sock)
{
	struct launcher_sync_msg m = {.type = LAUNCHER_SYNC_READY};
	int fd, r;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		_exit(errno);
	r = launcher_seccomp_install(f, &fd);
	if (r < 0)
		_exit(-r);
	if (launcher_sync_send(sock, &m, fd) < 0)
		_exit(EPIPE);
	_exit(unshare(0) < 0 && errno == EPERM ? 0 : EPROTO);
}

/* Airlock's side: receives the listener, answers the one notification, which must be unshare()
 * answered with EPERM. Returns 0, or -errno (the child's, when it failed first). */
static int seccomp_probe_parent(int sock, pid_t pid)
{
	struct launcher_seccomp_violation v = {0};
	struct pollfd pfd = {.fd = -EBADF, .events = POLLIN};
	struct launcher_sync_msg m;
	int status, r;

	r = launcher_sync_recv(sock, &m, &pfd.fd);
	if (r >= 0 && pfd.fd < 0)
		r = -EBADMSG;
	if (r < 0)
		pfd.fd = r; /* the child failed before sending it: its status says why */
	else if (poll(&pfd, 1, 5000) == 1)
		r = launcher_seccomp_handle_notify(pfd.fd, POLICY_SECCOMP_BASELINE, &v);
	else
		r = -ETIMEDOUT;
	if (r >= 0 && (!streq(v.name, "unshare") || v.error != EPERM))
		r = -EPROTO;
	if (r < 0 && pfd.fd >= 0)
		(void)kill(pid, SIGKILL);
	(void)al_close(pfd.fd);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if ((r >= 0 || pfd.fd < 0) && WIFEXITED(status) && WEXITSTATUS(status) != 0)
		r = -WEXITSTATUS(status);
	return r;
}

/* Airlock's baseline filter, end to end: install in a child, notification, answer. */
static int check_seccomp(struct doctor_check *c)
{
	struct launcher_seccomp_filter f = {0};
	struct al_error err = {0};
	int sp[2], r;
	pid_t pid;

	r = launcher_seccomp_compile(POLICY_SECCOMP_BASELINE, &f, &err);
	if (r < 0) {
		(void)snprintf(c->detail, sizeof(c->detail), "%s", err.msg);
		return r;
	}
	r = RET_NERRNO(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp));
	if (r >= 0) {
		pid = fork();
		if (pid == 0) {
			(void)al_close(sp[0]);
			seccomp_probe_child(&f, sp[1]);
		}
		(void)al_close(sp[1]);
		r = pid < 0 ? -errno : seccomp_probe_parent(sp[0], pid);
		(void)al_close(sp[0]);
	}
	launcher_seccomp_filter_done(&f);
	if (r == -EBUSY)
		(void)snprintf(c->detail, sizeof(c->detail),
			       "airlock already runs under a seccomp notification listener (in a "
			       "sandbox?), and the kernel allows only one");
	return r;
}

/* ---- the checks ---- */

/* One user namespace probe: as ourselves, or as nobody. */
static void check_userns_as(struct doctor *d, const char *feature, bool as_nobody, bool required)
{
	struct doctor_check *c = doctor_add(d, feature);
	int r;

	r = probe(probe_userns, &as_nobody);
	doctor_set(c, r, required, r < 0 ? userns_blocker(as_nobody || geteuid() != 0) : NULL,
		   "use a kernel built with CONFIG_USER_NS=y");
}

static void check_userns(struct doctor *d)
{
	/* root does not need them: its sandboxes have none */
	if (geteuid() == 0) {
		check_userns_as(d, "user namespaces (root)", false, false);
		check_userns_as(d, "user namespaces (unprivileged users)", true, false);
	} else
		check_userns_as(d, "user namespaces", false, true);
}

static void check_namespaces(struct doctor *d)
{
	static const struct {
		const char *name;
		int flag;
		bool required;
	} ns[] = {
	    {"mount namespace", CLONE_NEWNS, true},
	    {"pid namespace", CLONE_NEWPID, true},
	    {"network namespace (netns)", CLONE_NEWNET, true},
	    {"ipc namespace", CLONE_NEWIPC, true},
	    {"uts namespace", CLONE_NEWUTS, true},
	    {"cgroup namespace", CLONE_NEWCGROUP, false},
	};

	for (size_t i = 0; i < ELEMENTSOF(ns); i++) {
		struct doctor_check *c = doctor_add(d, ns[i].name);
		uint64_t flags = (uint64_t)ns[i].flag | (geteuid() ? CLONE_NEWUSER : 0);
		int r = probe(probe_namespace, &ns[i].flag);

		doctor_set(c, r, ns[i].required, r < 0 ? namespace_blocker(flags, r) : NULL,
			   "use a kernel built with this namespace type");
	}
}

/* Egress (allow rules): the veth pair and the proxy's network namespace, made as root, or without
 * root inside the sandbox's user namespace, which then owns both namespaces. */
static void check_egress(struct doctor *d)
{
	struct doctor_check *c = doctor_add(d, "egress (allow rules)");
	bool root = geteuid() == 0;
	int r = doctor_ok(d, "network namespace") && (root || doctor_ok(d, "user namespaces"))
		    ? 0
		    : -EOPNOTSUPP;

	(void)snprintf(
	    c->detail, sizeof(c->detail), "%s",
	    root ? "a veth pair into a network namespace of the proxy's, made as root"
		 : "a veth pair into a network namespace of the proxy's, both owned by the "
		   "sandbox's user namespace: no host change, no setuid helper");
	doctor_set(c, r, false, NULL,
		   root ? "use a kernel with network namespaces and veth"
			: "enable user namespaces (see above), or run airlock as root");
}

static void check_landlock(struct doctor *d)
{
	struct doctor_check *c = doctor_add(d, "landlock (executables allow list)");
	int abi = launcher_landlock_abi(), r;

	if (abi < 0) {
		doctor_set(c, abi, false, NULL,
			   "boot with landlock in the lsm= list (CONFIG_SECURITY_LANDLOCK=y); "
			   "only policies with \"executables\" need it");
		return;
	}
	r = probe(probe_landlock, NULL);
	if (r >= 0)
		(void)snprintf(c->detail, sizeof(c->detail), "ABI %d", abi);
	doctor_set(c, r, false, NULL, "only policies with \"executables\" need Landlock");
}

/* fusermount3 on PATH, setuid root: what libfuse uses to mount for an unprivileged user. */
static int find_fusermount(char *buf, size_t size)
{
	const char *path = getenv("PATH");
	struct stat st;

	for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
		size_t n = strcspn(p, ":");

		if (n > 0 && (size_t)snprintf(buf, size, "%.*s/fusermount3", (int)n, p) < size &&
		    stat(buf, &st) == 0 && S_ISREG(st.st_mode))
			return st.st_uid == 0 && (st.st_mode & S_ISUID) ? 0 : -EPERM;
		p += n;
		p += *p == ':';
	}
	return -ENOENT;
}

/* How the workspace would be served: neither is required, the classic loop and the daemon's own
 * reads and writes keep every guarantee, only slower. */
static void check_fuse_transport(struct doctor *d)
{
	struct fusefs_features f;
	struct doctor_check *c;

	fusefs_features(&f);
	c = doctor_add(d, "FUSE over io_uring");
	(void)snprintf(c->detail, sizeof(c->detail), "libfuse %s, %s: %s", f.libfuse,
		       fusefs_transport_name(f.transport), f.transport_why);
	if (f.transport != FUSEFS_TRANSPORT_URING) {
		c->status = DOCTOR_WARNING;
		(void)snprintf(
		    c->fix, sizeof(c->fix), "%s",
		    startswith(f.transport_why, "libfuse")
			? "build with libfuse 3.18 (scripts/dev.sh deps)"
		    : geteuid() != 0
			? "as root: echo 1 > /sys/module/fuse/parameters/enable_uring"
			: "use a kernel with CONFIG_FUSE_IO_URING=y and io_uring enabled");
	}
	c = doctor_add(d, "FUSE passthrough");
	(void)snprintf(c->detail, sizeof(c->detail), "%s", f.passthrough_why);
	if (!f.passthrough) {
		c->status = DOCTOR_WARNING;
		(void)snprintf(c->fix, sizeof(c->fix), "%s",
			       startswith(f.passthrough_why, "libfuse")
				   ? "build with libfuse 3.18 (scripts/dev.sh deps)"
				   : "run airlock as root");
	}
}

static void check_fuse(struct doctor *d)
{
	struct doctor_check *c = doctor_add(d, "FUSE (/dev/fuse)");
	char path[PATH_MAX];
	int fd, r;

	fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	r = fd < 0 ? -errno : 0;
	(void)al_close(fd);
	doctor_set(c, r, true, NULL,
		   r == -ENOENT ? "modprobe fuse (and create /dev/fuse: mknod /dev/fuse c 10 229)"
				: "chmod 0666 /dev/fuse");
	check_fuse_transport(d);
	if (geteuid() == 0)
		return;
	c = doctor_add(d, "fusermount3");
	r = find_fusermount(path, sizeof(path));
	doctor_set(c, r, true, NULL,
		   r == -EPERM ? "chmod u+s fusermount3 (it must be setuid root)"
			       : "apt-get install fuse3");
}

/* The controllers of each mounted v1 hierarchy, or those the v2 root offers. */
static void cgroup_controllers(enum launcher_cgroup_version v, char *buf, size_t size)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;

	buf[0] = '\0';
	if (v == LAUNCHER_CGROUP_V2) {
		if (al_read_file_at(AT_FDCWD, "/sys/fs/cgroup/cgroup.controllers", 4096, &text,
				    NULL) >= 0)
			(void)snprintf(buf, size, "%.*s", (int)strcspn(text, "\n"), text);
		return;
	}
	if (al_read_file_at(AT_FDCWD, "/proc/self/cgroup", 65536, &text, NULL) < 0)
		return;
	for (char *line = text, *next; line && *line; line = next) {
		char *list = strchr(line, ':'), *end;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		end = list ? strchr(list + 1, ':') : NULL;
		if (!end || end == list + 1 || startswith(list + 1, "name="))
			continue;
		*end = '\0';
		len += (size_t)snprintf(buf + MIN(len, size - 1), size - MIN(len, size - 1), "%s%s",
					len ? " " : "", list + 1);
	}
}

static void check_cgroups(struct doctor *d)
{
	static const char *const names[] = {"none", "v1", "v2"};
	enum launcher_cgroup_version v = launcher_cgroup_detect();
	struct doctor_check *c = doctor_add(d, "cgroups");
	struct policy_resources res = {.memory = 64 * 1024 * 1024, .pids = 64};
	struct launcher_cgroup *cg = NULL;
	struct al_error err = {0};
	char controllers[256], id[32];
	uint32_t rnd = 0;
	int r;

	cgroup_controllers(v, controllers, sizeof(controllers));
	(void)snprintf(c->detail, sizeof(c->detail), "%s%s%s", names[v], controllers[0] ? ": " : "",
		       controllers);
	if (v == LAUNCHER_CGROUP_NONE)
		doctor_set(c, -EOPNOTSUPP, true, NULL, "mount cgroup2 on /sys/fs/cgroup");

	c = doctor_add(d, "cgroup memory and pids limits");
	if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd))
		rnd = (uint32_t)getpid();
	(void)snprintf(id, sizeof(id), "%d-%08x", (int)getpid(), rnd);
	r = launcher_cgroup_new(id, &res, &cg, &err);
	if (r < 0)
		(void)snprintf(c->detail, sizeof(c->detail), "%s", err.msg);
	cg = launcher_cgroup_free(cg);
	doctor_set(c, r, true, NULL,
		   "run airlock as root, or in a cgroup delegated to you: a systemd user session "
		   "(user@UID.service delegates memory and pids), or `systemd-run --user --scope "
		   "-p Delegate=yes airlock ...`; or lift the limits (\"memory\": \"max\", "
		   "\"pids\": \"max\")");
}

static void check_doctor(struct doctor *d)
{
	struct doctor_check *c;
	int r;

	check_userns(d);
	check_namespaces(d);

	c = doctor_add(d, "seccomp filter and user notification");
	r = check_seccomp(c);
	doctor_set(c, r, true, NULL, "use Linux 5.5 or later with CONFIG_SECCOMP_FILTER=y");

	check_egress(d);
	check_landlock(d);
	check_fuse(d);
	check_cgroups(d);

	c = doctor_add(d, "clone3 with pidfd");
	doctor_set(c, probe(probe_clone3_pidfd, NULL), true, NULL, "use Linux 5.3 or later");
	c = doctor_add(d, "pidfd_open");
	r = (int)syscall(SYS_pidfd_open, getpid(), 0);
	if (r >= 0)
		(void)al_close(r);
	doctor_set(c, r < 0 ? -errno : 0, true, NULL, "use Linux 5.3 or later");
}

/* ---- output ---- */

static int print_json(FILE *out, const struct doctor *d, const char *kernel, int missing)
{
	_cleanup_json_ struct json_object *o = json_object_new_object(), *list = NULL;
	_cleanup_free_ char *text = NULL;
	int r;

	list = json_object_new_array();
	if (!o || !list)
		return -ENOMEM;
	for (size_t i = 0; i < d->n; i++) {
		const struct doctor_check *c = &d->checks[i];
		struct json_object *e = json_object_new_object();

		if (!e || json_object_array_add(list, e) < 0) {
			(void)json_object_put(e);
			return -ENOMEM;
		}
		r = al_json_add(e, "feature", json_object_new_string(c->feature));
		if (r >= 0)
			r = al_json_add(e, "status",
					json_object_new_string(status_names[c->status]));
		if (r >= 0 && c->detail[0])
			r = al_json_add(e, "detail", json_object_new_string(c->detail));
		if (r >= 0 && c->status != DOCTOR_OK && c->fix[0])
			r = al_json_add(e, "fix", json_object_new_string(c->fix));
		if (r < 0)
			return r;
	}
	r = al_json_add(o, "kernel", json_object_new_string(kernel));
	if (r >= 0)
		r = al_json_add(o, "euid", json_object_new_int((int32_t)geteuid()));
	if (r >= 0)
		r = al_json_add(o, "features", json_object_get(list));
	if (r >= 0)
		r = al_json_add(o, "missing", json_object_new_int(missing));
	if (r >= 0)
		r = al_json_to_string(o, &text);
	if (r < 0)
		return r;
	return fprintf(out, "%s\n", text) < 0 ? -EIO : 0;
}

static void print_text(FILE *out, const struct doctor *d, const char *kernel, int missing)
{
	(void)fprintf(out, "airlock doctor: %s, euid %u\n", kernel, (unsigned)geteuid());
	for (size_t i = 0; i < d->n; i++) {
		const struct doctor_check *c = &d->checks[i];

		(void)fprintf(out, "%-8s %s%s%s\n", status_names[c->status], c->feature,
			      c->detail[0] ? ": " : "", c->detail);
		if (c->status != DOCTOR_OK && c->fix[0])
			(void)fprintf(out, "         fix: %s\n", c->fix);
	}
	if (missing > 0)
		(void)fprintf(out, "%d required feature%s missing\n", missing,
			      missing == 1 ? "" : "s");
	else
		(void)fprintf(out, "everything airlock needs is there\n");
}

int launcher_doctor(FILE *out, bool json)
{
	_cleanup_free_ struct doctor *d = NULL;
	struct utsname u;
	char kernel[3 * sizeof(u.release)] = "unknown kernel";
	int missing = 0, r;

	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	if (uname(&u) == 0)
		(void)snprintf(kernel, sizeof(kernel), "%s %s %s", u.sysname, u.release, u.machine);
	(void)fflush(out);
	check_doctor(d);
	for (size_t i = 0; i < d->n; i++)
		missing += d->checks[i].status == DOCTOR_MISSING;
	if (json) {
		r = print_json(out, d, kernel, missing);
		if (r < 0)
			return r;
	} else
		print_text(out, d, kernel, missing);
	return missing;
}

static bool doctor_ok(const struct doctor *d, const char *feature)
{
	for (size_t i = 0; i < d->n; i++)
		if (startswith(d->checks[i].feature, feature))
			return d->checks[i].status == DOCTOR_OK;
	return false;
}

/* Whether the space- or comma-separated list holds word ("cpu,cpuacct" in v1). */
static bool has_word(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = list; (p = strstr(p, word)); p += n)
		if ((p == list || p[-1] == ' ' || p[-1] == ',') &&
		    (p[n] == '\0' || p[n] == ' ' || p[n] == ','))
			return true;
	return false;
}

void launcher_capabilities(struct launcher_capabilities *ret)
{
	struct doctor d = {0};
	enum launcher_cgroup_version v = launcher_cgroup_detect();
	int abi = launcher_landlock_abi();

	check_doctor(&d);
	*ret = (struct launcher_capabilities){
	    .user_ns = doctor_ok(&d, "user namespaces"),
	    .mount_ns = doctor_ok(&d, "mount namespace"),
	    .pid_ns = doctor_ok(&d, "pid namespace"),
	    .net_ns = doctor_ok(&d, "network namespace"),
	    .ipc_ns = doctor_ok(&d, "ipc namespace"),
	    .uts_ns = doctor_ok(&d, "uts namespace"),
	    .cgroup_ns = doctor_ok(&d, "cgroup namespace"),
	    .seccomp = doctor_ok(&d, "seccomp filter"),
	    .landlock_abi = abi > 0 && doctor_ok(&d, "landlock") ? abi : 0,
	    .cgroup_version = v == LAUNCHER_CGROUP_V2	? 2
			      : v == LAUNCHER_CGROUP_V1 ? 1
							: 0,
	    .cgroup_limits = doctor_ok(&d, "cgroup memory and pids limits"),
	    .fuse = doctor_ok(&d, "FUSE (/dev/fuse)"),
	};
	fusefs_features(&ret->fs);
	cgroup_controllers(v, ret->cgroup_controllers, sizeof(ret->cgroup_controllers));
	/* The egress proxy's veth pair and network namespaces: made as root, or without root inside
	 * the sandbox's user namespace. */
	ret->network_policy = ret->net_ns && (geteuid() == 0 || ret->user_ns);
	ret->tls_interception = ret->network_policy;
	ret->profile_linux_ns_v1 =
	    (geteuid() == 0 ? doctor_ok(&d, "user namespaces (root)") : ret->user_ns) &&
	    ret->mount_ns && ret->pid_ns && ret->net_ns && ret->seccomp && ret->landlock_abi > 0 &&
	    ret->cgroup_limits && has_word(ret->cgroup_controllers, "cpu") &&
	    (has_word(ret->cgroup_controllers, "io") || has_word(ret->cgroup_controllers, "blkio"));
	for (size_t i = 0; i < d.n; i++)
		ret->missing += d.checks[i].status == DOCTOR_MISSING;
}
