/* fs-posix: runs a fixed list of POSIX file system behaviours in DIR, an empty folder, and prints
 * one line per check, "name: result", where the result is what happened: return values, errno
 * names and observed values. Nothing machine-specific is printed (no inode or device numbers, no
 * times, only comparisons of them), so two file systems that behave alike print the same
 * transcript, and test-fs-posix-matches-host.sh diffs the host's against airlock's workspace.
 *
 * Usage: fs-posix DIR
 * Exit status: 0 when it ran to the end, whatever the results; 2 when it could not start.
 * (fs-posix --hold is the program it runs from a copy of itself for the ETXTBSY checks.)
 *
 * It runs as root on the host, where checks that need privilege (chown, mknod of a device, another
 * user's view) succeed; in the sandbox those lines differ and the test leaves them out. Each group
 * of checks works in its own subfolder of DIR, removed afterwards. Standalone on purpose: it links
 * nothing of airlock. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include <linux/falloc.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Another user for the permission checks, and a group, as numbers that need no /etc/passwd. */
#define OTHER_UID 1234
#define OTHER_GID 5678
#define GIB (1024LL * 1024 * 1024)
#define MIB (1024 * 1024)

/* The folder given on the command line, as an fd: each group returns to it. */
static int top_fd = -1;
/* The group running now, whose subfolder leave() removes. */
static const char *group;

/* ---- formatting: every result goes through a small ring of buffers, so that one printf can
 * show several of them ---- */

static char *ring_buf(size_t *ret_size)
{
	static char ring[24][640];
	static unsigned int next;

	*ret_size = sizeof(ring[0]);
	return ring[next++ % ARRAY_SIZE(ring)];
}

static const char *fmt(const char *format, ...) __attribute__((format(printf, 1, 2)));
static const char *fmt(const char *format, ...)
{
	size_t size;
	char *buf = ring_buf(&size);
	va_list ap;

	va_start(ap, format);
	(void)vsnprintf(buf, size, format, ap);
	va_end(ap);
	return buf;
}

static const char *errname(int e)
{
	const char *n = strerrorname_np(e);

	return n ? n : fmt("errno%d", e);
}

/* r is a call's result and e the errno right after it: "ok" (or the value when want_value) for
 * r >= 0, else the errno name. */
static const char *res_of(long r, int e, bool want_value)
{
	if (r < 0)
		return errname(e);
	return want_value ? fmt("%ld", r) : "ok";
}

/* ERR(call): "ok" or the errno name. VAL(call): the value or the errno name. Both read errno
 * right after the call. */
#define ERR(expr)                                                                                  \
	({                                                                                         \
		long err_r_ = (long)(expr);                                                        \
		res_of(err_r_, errno, false);                                                      \
	})
#define VAL(expr)                                                                                  \
	({                                                                                         \
		long val_r_ = (long)(expr);                                                        \
		res_of(val_r_, errno, true);                                                       \
	})

/* For our helpers, which return a value >= 0 or -errno. */
static const char *neg(long r)
{
	return r < 0 ? errname((int)-r) : fmt("%ld", r);
}

static const char *yesno(bool b)
{
	return b ? "yes" : "no";
}

static void say(const char *name, const char *format, ...) __attribute__((format(printf, 2, 3)));
static void say(const char *name, const char *format, ...)
{
	va_list ap;

	printf("%s: ", name);
	va_start(ap, format);
	vprintf(format, ap);
	va_end(ap);
	putchar('\n');
}

/* buf as a C-like string literal, shortened past 48 bytes. */
static const char *quote(const char *data, ssize_t len)
{
	size_t size, o = 0;
	char *buf = ring_buf(&size);
	ssize_t i;

	if (len < 0)
		return errname((int)-len);
	buf[o++] = '"';
	for (i = 0; i < len && i < 48; i++) {
		unsigned char c = (unsigned char)data[i];

		if (c == '"' || c == '\\')
			o += (size_t)snprintf(buf + o, size - o, "\\%c", c);
		else if (c >= 0x20 && c < 0x7f)
			buf[o++] = (char)c;
		else
			o += (size_t)snprintf(buf + o, size - o, "\\x%02x", c);
	}
	buf[o++] = '"';
	buf[o] = '\0';
	if (len > 48)
		(void)snprintf(buf + o, size - o, "...(%zd bytes)", len);
	return buf;
}

static const char *type_name(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
		return "reg";
	case S_IFDIR:
		return "dir";
	case S_IFLNK:
		return "lnk";
	case S_IFIFO:
		return "fifo";
	case S_IFSOCK:
		return "sock";
	case S_IFCHR:
		return "chr";
	case S_IFBLK:
		return "blk";
	}
	return "unknown";
}

static const char *dtype_name(unsigned char t)
{
	switch (t) {
	case DT_REG:
		return "reg";
	case DT_DIR:
		return "dir";
	case DT_LNK:
		return "lnk";
	case DT_FIFO:
		return "fifo";
	case DT_SOCK:
		return "sock";
	case DT_CHR:
		return "chr";
	case DT_BLK:
		return "blk";
	}
	return "unknown";
}

/* "TYPE MODE" of path (lstat), or the errno name. */
static const char *kind(const char *path)
{
	struct stat s;

	if (lstat(path, &s) < 0)
		return errname(errno);
	return fmt("%s %04o", type_name(s.st_mode), (unsigned int)(s.st_mode & 07777));
}

/* "TYPE MODE" of what path leads to (stat), or the errno name. */
static const char *kind_follow(const char *path)
{
	struct stat s;

	if (stat(path, &s) < 0)
		return errname(errno);
	return fmt("%s %04o", type_name(s.st_mode), (unsigned int)(s.st_mode & 07777));
}

static const char *mode_of(const char *path)
{
	struct stat s;

	if (lstat(path, &s) < 0)
		return errname(errno);
	return fmt("%04o", (unsigned int)(s.st_mode & 07777));
}

static long long size_of(const char *path)
{
	struct stat s;

	if (lstat(path, &s) < 0)
		return -errno;
	return (long long)s.st_size;
}

static long long nlink_of(const char *path)
{
	struct stat s;

	if (lstat(path, &s) < 0)
		return -errno;
	return (long long)s.st_nlink;
}

static const char *owner_of(const char *path)
{
	struct stat s;

	if (lstat(path, &s) < 0)
		return errname(errno);
	return fmt("uid=%u gid=%u", (unsigned int)s.st_uid, (unsigned int)s.st_gid);
}

static bool exists(const char *path)
{
	struct stat s;

	return lstat(path, &s) == 0;
}

static bool same_inode(const char *a, const char *b)
{
	struct stat sa, sb;

	if (lstat(a, &sa) < 0 || lstat(b, &sb) < 0)
		return false;
	return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* A step that prepares checks. Its failure gets a line of its own ("GROUP.setup: ...") so that it
 * shows in the comparison instead of going unnoticed. SETUP is for libc calls (-1 and errno),
 * SETUP_R for ours (-errno). */
static void setup_failed(int e, const char *what)
{
	if (e)
		say(fmt("%s.setup", group), "%s: %s", what, errname(e));
}

#define SETUP(expr)                                                                                \
	({                                                                                         \
		long setup_r_ = (long)(expr);                                                      \
		setup_failed(setup_r_ < 0 ? errno : 0, #expr);                                     \
	})
#define SETUP_R(expr)                                                                              \
	({                                                                                         \
		long setup_r_ = (long)(expr);                                                      \
		setup_failed(setup_r_ < 0 ? (int)-setup_r_ : 0, #expr);                            \
	})

/* ---- files ---- */

/* Opens path only to see whether it opens: "ok" (closing it again) or the errno name. */
static const char *try_open(const char *path, int flags, mode_t mode)
{
	int fd = open(path, flags, mode);

	if (fd < 0)
		return errname(errno);
	(void)close(fd);
	return "ok";
}

static int write_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Reads up to size bytes from offset (pread until the end or size): the count, or -errno. */
static ssize_t pread_all(int fd, void *buf, size_t size, off_t off)
{
	size_t got = 0;

	while (got < size) {
		ssize_t n = pread(fd, (char *)buf + got, size - got, off + (off_t)got);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

/* Creates or truncates path with data: 0 or -errno. */
static int put(const char *path, const char *data, size_t len, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	int r;

	if (fd < 0)
		return -errno;
	r = write_all(fd, data, len);
	if (close(fd) < 0 && r == 0)
		r = -errno;
	return r;
}

static int puts_file(const char *path, const char *s)
{
	return put(path, s, strlen(s), 0644);
}

static ssize_t get(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = pread_all(fd, buf, size, 0);
	(void)close(fd);
	return n;
}

/* The first bytes of path, quoted, or the errno name. */
static const char *content(const char *path)
{
	char buf[256];

	return quote(buf, get(path, buf, sizeof(buf)));
}

static const char *fd_content(int fd)
{
	char buf[256];

	return quote(buf, pread_all(fd, buf, sizeof(buf), 0));
}

static bool all_zero(const char *buf, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (buf[i])
			return false;
	return true;
}

/* Are the len bytes of fd at off all zero (and all there)? */
static bool zeros_at(int fd, off_t off, size_t len)
{
	char buf[65536];

	while (len > 0) {
		size_t chunk = len < sizeof(buf) ? len : sizeof(buf);

		if (pread_all(fd, buf, chunk, off) != (ssize_t)chunk || !all_zero(buf, chunk))
			return false;
		off += (off_t)chunk;
		len -= chunk;
	}
	return true;
}

/* Deterministic bytes for the big-data checks (xorshift64). */
static void fill_pattern(char *buf, size_t len, uint64_t seed)
{
	uint64_t x = seed | 1;
	size_t i;

	for (i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[i] = (char)(x >> 24);
	}
}

static uint64_t fnv1a(const char *buf, size_t len, uint64_t h)
{
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= (unsigned char)buf[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* Removes path and everything below it (making folders writable first): 0 or -errno. */
static int rm_rf_at(int dfd, const char *name)
{
	struct dirent *de;
	struct stat s;
	DIR *d;
	int fd, r = 0;

	if (fstatat(dfd, name, &s, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(s.st_mode))
		return unlinkat(dfd, name, 0) < 0 ? -errno : 0;
	if (fchmodat(dfd, name, 0700, 0) < 0)
		r = -errno;
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		r = -errno;
		(void)close(fd);
		return r;
	}
	while ((de = readdir(d))) {
		int q;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		q = rm_rf_at(dirfd(d), de->d_name);
		if (q < 0 && r == 0)
			r = q;
	}
	(void)closedir(d);
	if (unlinkat(dfd, name, AT_REMOVEDIR) < 0 && r == 0)
		r = -errno;
	return r;
}

/* Each group works in DIR/NAME: enter() makes it and goes there, leave() removes it. */
static bool enter(const char *name)
{
	group = name;
	if (fchdir(top_fd) < 0 || mkdir(name, 0755) < 0 || chdir(name) < 0) {
		say(name, "setup failed: %s", errname(errno));
		return false;
	}
	return true;
}

static void leave(void)
{
	int r;

	umask(022);
	if (fchdir(top_fd) < 0) {
		say(group, "cleanup failed: fchdir: %s", errname(errno));
		return;
	}
	r = rm_rf_at(top_fd, group);
	if (r < 0)
		say(group, "cleanup failed: %s", errname(-r));
}

/* ---- processes ---- */

static void on_alarm(int sig)
{
	(void)sig;
}

/* Guards a call that may block: it fails with EINTR after the given seconds instead. */
static void watchdog(unsigned int seconds)
{
	(void)alarm(seconds);
}

/* The wait status of pid, killing it when it has not ended within 30 s. */
static int wait_child(pid_t pid)
{
	int status;

	watchdog(30);
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			watchdog(0);
			return -errno;
		}
		(void)kill(pid, SIGKILL);
	}
	watchdog(0);
	return status;
}

static const char *status_desc(int status)
{
	if (status < 0)
		return errname(-status);
	if (WIFEXITED(status))
		return fmt("exit=%d", WEXITSTATUS(status));
	if (WIFSIGNALED(status))
		return fmt("signal=%s", sigabbrev_np(WTERMSIG(status)) ?: "?");
	return "?";
}

/* Runs fn(arg) in a child process and returns the text it produced (fn writes at most 255 bytes
 * into its buffer). With as_other the child first becomes OTHER_UID:OTHER_GID without
 * supplementary groups; when it may not, the text says so ("setuid=EPERM"). */
static const char *in_child(bool as_other, void (*fn)(const char *arg, char *out, size_t size),
			    const char *arg)
{
	char out[256] = "";
	size_t got = 0;
	int p[2], status;
	ssize_t n;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return fmt("pipe=%s", errname(errno));
	(void)fflush(stdout);
	pid = fork();
	if (pid < 0) {
		(void)close(p[0]);
		(void)close(p[1]);
		return fmt("fork=%s", errname(errno));
	}
	if (pid == 0) {
		(void)close(p[0]);
		if (as_other &&
		    (setgroups(0, NULL) < 0 || setresgid(OTHER_GID, OTHER_GID, OTHER_GID) < 0 ||
		     setresuid(OTHER_UID, OTHER_UID, OTHER_UID) < 0))
			(void)snprintf(out, sizeof(out), "setuid=%s", errname(errno));
		else
			fn(arg, out, sizeof(out));
		(void)write_all(p[1], out, strlen(out));
		_exit(0);
	}
	(void)close(p[1]);
	watchdog(20);
	while (got < sizeof(out) - 1 && (n = read(p[0], out + got, sizeof(out) - 1 - got)) > 0)
		got += (size_t)n;
	watchdog(0);
	(void)close(p[0]);
	status = wait_child(pid);
	out[got] = '\0';
	if (status != 0)
		return fmt("%s (child %s)", out, status_desc(status));
	return fmt("%s", out);
}

static void child_open_rdonly(const char *path, char *out, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	(void)snprintf(out, size, "%s", ERR(fd));
}

static void child_open_wronly(const char *path, char *out, size_t size)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	(void)snprintf(out, size, "%s", ERR(fd));
}

static void child_unlink(const char *path, char *out, size_t size)
{
	(void)snprintf(out, size, "%s", ERR(unlink(path)));
}

static void child_chmod_0777(const char *path, char *out, size_t size)
{
	(void)snprintf(out, size, "%s", ERR(chmod(path, 0777)));
}

static void child_create_unlink(const char *path, char *out, size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	const char *c = ERR(fd);

	if (fd >= 0)
		(void)close(fd);
	(void)snprintf(out, size, "create=%s unlink=%s", c, ERR(unlink(path)));
}

static void child_append_byte(const char *path, char *out, size_t size)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	const char *o = ERR(fd);
	const char *w = fd >= 0 ? VAL(write(fd, "x", 1)) : "-";

	if (fd >= 0)
		(void)close(fd);
	(void)snprintf(out, size, "open=%s write=%s", o, w);
}

/* ---- checks ---- */

static void check_files(void)
{
	static const char *const odd[] = {
	    " lead-space", "trail-space ", "new\nline",	  "tab\there", "\xc3\xbctf8-\xe2\x9c\x93",
	    "-dash",	   ".hidden",	   "back\\slash", "quote\"'",  "star*?[",
	};
	char name255[256], name256[257];
	bool distinct = true, found[ARRAY_SIZE(odd)] = {false};
	struct dirent *de;
	struct stat s, s2;
	size_t i, nfound = 0;
	DIR *d;
	int fd;

	if (!enter("files"))
		return;

	fd = open("f", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
	say("file.create", "%s", ERR(fd));
	say("file.create_umask_022", "%s size=%lld", kind("f"), size_of("f"));
	if (fstat(fd, &s) == 0)
		say("file.owner_is_caller", "%s",
		    yesno(s.st_uid == geteuid() && s.st_gid == getegid()));
	else
		say("file.owner_is_caller", "%s", errname(errno));
	say("file.write", "%s", VAL(write(fd, "hello", 5)));
	say("file.close", "%s", ERR(close(fd)));
	say("file.read_back", "%s size=%lld", content("f"), size_of("f"));
	umask(027);
	fd = open("g", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
	say("file.create_umask_027", "%s %s", ERR(fd), kind("g"));
	if (fd >= 0)
		(void)close(fd);
	umask(022);
	say("file.unlink", "%s", ERR(unlink("f")));
	say("file.unlinked_stat", "%s", kind("f"));
	say("file.unlink_missing", "%s", ERR(unlink("f")));

	memset(name255, 'n', 255);
	name255[255] = '\0';
	memset(name256, 'n', 256);
	name256[256] = '\0';
	say("file.name_255", "%s", neg(puts_file(name255, "x")));
	say("file.name_256", "%s", neg(puts_file(name256, "x")));

	SETUP(mkdir("odd", 0755));
	for (i = 0; i < ARRAY_SIZE(odd); i++) {
		int r = puts_file(fmt("odd/%s", odd[i]), odd[i]);

		if (r < 0)
			say("file.odd_name", "%s: %s", quote(odd[i], (ssize_t)strlen(odd[i])),
			    errname(-r));
	}
	d = opendir("odd");
	while (d && (de = readdir(d)))
		for (i = 0; i < ARRAY_SIZE(odd); i++)
			if (!strcmp(de->d_name, odd[i]) && !found[i]) {
				found[i] = true;
				nfound++;
			}
	if (d)
		(void)closedir(d);
	say("file.odd_names_listed", "%zu/%zu", nfound, ARRAY_SIZE(odd));
	say("file.odd_name_content", "%s", content(fmt("odd/%s", odd[2])));

	SETUP_R(puts_file("Case", "upper"));
	SETUP_R(puts_file("case", "lower"));
	say("file.case_sensitive", "Case=%s case=%s", content("Case"), content("case"));

	for (i = 0; i < 20; i++)
		SETUP_R(puts_file(fmt("ino-%zu", i), "i"));
	for (i = 0; i < 20 && distinct; i++) {
		size_t j;

		for (j = i + 1; j < 20; j++)
			if (same_inode(fmt("ino-%zu", i), fmt("ino-%zu", j)))
				distinct = false;
	}
	say("file.inodes_distinct", "%s", yesno(distinct));
	if (lstat("ino-0", &s) == 0 && rename("ino-0", "ino-renamed") == 0 &&
	    lstat("ino-renamed", &s2) == 0)
		say("file.inode_kept_by_rename", "%s", yesno(s.st_ino == s2.st_ino));
	else
		say("file.inode_kept_by_rename", "%s", errname(errno));
	if (lstat("ino-1", &s) == 0 && lstat("odd", &s2) == 0)
		say("file.same_device", "%s", yesno(s.st_dev == s2.st_dev));
	else
		say("file.same_device", "%s", errname(errno));

	SETUP_R(puts_file("plain", "p"));
	say("file.path_through_file", "%s", try_open("plain/x", O_RDONLY | O_CLOEXEC, 0));
	say("file.missing_parent", "%s", try_open("nope/x", O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
	say("file.create_trailing_slash", "%s",
	    try_open("newdir/", O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
	say("file.open_dir_for_write", "%s", try_open(".", O_WRONLY | O_CLOEXEC, 0));
	fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		char c;

		say("file.read_dir_fd", "%s", VAL(read(fd, &c, 1)));
		(void)close(fd);
	} else {
		say("file.read_dir_fd", "open=%s", errname(errno));
	}
	fd = open("plain", O_RDONLY | O_CLOEXEC);
	say("file.write_rdonly_fd", "%s", VAL(write(fd, "x", 1)));
	if (fd >= 0)
		(void)close(fd);
	say("file.access_rw", "%s", ERR(access("plain", R_OK | W_OK)));
	say("file.access_x_on_0644", "%s", ERR(access("plain", X_OK)));
	say("file.access_missing", "%s", ERR(access("nope", F_OK)));
	leave();
}

static void check_open(void)
{
	const char *r;
	char buf[64];
	int fd, fd2;

	if (!enter("open"))
		return;

	SETUP_R(puts_file("t", "abcdef"));
	fd = open("t", O_WRONLY | O_TRUNC | O_CLOEXEC);
	say("open.trunc", "%s size=%lld", ERR(fd), size_of("t"));
	if (fd >= 0)
		(void)close(fd);
	SETUP_R(puts_file("t", "abcdef"));
	fd = open("t", O_RDONLY | O_TRUNC | O_CLOEXEC);
	say("open.trunc_rdonly", "%s size=%lld", ERR(fd), size_of("t"));
	if (fd >= 0)
		(void)close(fd);
	SETUP_R(puts_file("t", "abcdef"));
	say("open.excl_existing", "%s",
	    try_open("t", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
	fd = open("t", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	r = ERR(fd);
	say("open.creat_existing_keeps", "%s %s", r, kind("t"));
	if (fd >= 0)
		(void)close(fd);

	SETUP(symlink("dangling-target", "dangling"));
	r = try_open("dangling", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	say("open.excl_dangling_symlink", "%s target_created=%s", r,
	    yesno(exists("dangling-target")));
	fd = open("dangling", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	say("open.creat_dangling_symlink", "%s target=%s link=%s", ERR(fd), kind("dangling-target"),
	    kind("dangling"));
	if (fd >= 0)
		(void)close(fd);

	say("open.directory_on_file", "%s", try_open("t", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0));
	SETUP(mkdir("d", 0755));
	say("open.directory_on_dir", "%s", try_open("d", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0));
	SETUP(symlink("t", "lt"));
	say("open.nofollow_symlink", "%s", try_open("lt", O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0));
	fd = open("lt", O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		struct stat s;

		say("open.path_nofollow_symlink", "ok %s",
		    fstatat(fd, "", &s, AT_EMPTY_PATH) == 0 ? type_name(s.st_mode)
							    : errname(errno));
		(void)close(fd);
	} else {
		say("open.path_nofollow_symlink", "%s", errname(errno));
	}
	say("open.nofollow_regular", "%s", try_open("t", O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0));

	/* O_APPEND: two descriptions append in turn */
	SETUP_R(puts_file("ap", ""));
	fd = open("ap", O_WRONLY | O_APPEND | O_CLOEXEC);
	fd2 = open("ap", O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd >= 0 && fd2 >= 0) {
		const char *w[4];

		w[0] = VAL(write(fd, "A1", 2));
		w[1] = VAL(write(fd2, "B1", 2));
		w[2] = VAL(write(fd, "A2", 2));
		w[3] = VAL(write(fd2, "B22", 3));
		say("open.append_two_fds", "%s %s %s %s -> %s", w[0], w[1], w[2], w[3],
		    content("ap"));
		r = VAL(pwrite(fd, "Z", 1, 0));
		say("open.append_pwrite_goes_to_end", "%s -> %s", r, content("ap"));
	} else {
		say("open.append_two_fds", "open=%s", errname(errno));
	}
	if (fd >= 0)
		(void)close(fd);
	if (fd2 >= 0)
		(void)close(fd2);

	fd = open("t", O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		say("open.lseek_end", "%s", VAL(lseek(fd, 0, SEEK_END)));
		r = VAL(write(fd, "gh", 2));
		say("open.write_at_end", "%s -> %s", r, content("t"));
		r = VAL(lseek(fd, 2, SEEK_SET));
		say("open.lseek_set", "%s read=%s", r, quote(buf, read(fd, buf, 3)));
		say("open.lseek_negative", "%s", VAL(lseek(fd, -100, SEEK_SET)));
		(void)close(fd);
	}

	/* O_TMPFILE: an unnamed file, then linked in by its /proc/self/fd name */
	SETUP(mkdir("tmp", 0755));
	fd = open("tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	say("open.tmpfile", "%s", ERR(fd));
	if (fd >= 0) {
		char link[64];
		int n = 0;
		DIR *d;

		SETUP_R(write_all(fd, "tmpdata", 7));
		d = opendir("tmp");
		while (d && readdir(d))
			n++;
		if (d)
			(void)closedir(d);
		say("open.tmpfile_unlisted", "entries=%d", n);
		(void)snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		r = ERR(linkat(AT_FDCWD, link, AT_FDCWD, "tmp/linked", AT_SYMLINK_FOLLOW));
		say("open.tmpfile_link", "%s %s %s", r, kind("tmp/linked"), content("tmp/linked"));
		(void)close(fd);
	}
	leave();
}

static void check_append_processes(void)
{
	enum { PROCS = 2, RECORDS = 400, RECLEN = 32 };
	static char data[PROCS * RECORDS * RECLEN + 64];
	int counts[PROCS] = {0}, last[PROCS] = {-1, -1};
	pid_t pids[PROCS];
	bool intact = true;
	ssize_t n;
	int p, i;

	if (!enter("append"))
		return;
	SETUP_R(puts_file("log", ""));
	(void)fflush(stdout);
	for (p = 0; p < PROCS; p++) {
		pids[p] = fork();
		if (pids[p] == 0) {
			int fd = open("log", O_WRONLY | O_APPEND | O_CLOEXEC);
			char rec[64];

			for (i = 0; fd >= 0 && i < RECORDS; i++) {
				(void)snprintf(rec, sizeof(rec), "P%d-%05d-%022d\n", p, i, 0);
				if (write(fd, rec, RECLEN) != RECLEN)
					_exit(1);
			}
			_exit(fd >= 0 ? 0 : 1);
		}
	}
	for (p = 0; p < PROCS; p++)
		if (pids[p] > 0 && wait_child(pids[p]) != 0)
			intact = false;
	n = get("log", data, sizeof(data));
	for (i = 0; n > 0 && i + RECLEN <= n; i += RECLEN) {
		int who, seq;

		if (sscanf(data + i, "P%d-%05d-", &who, &seq) != 2 || who < 0 || who >= PROCS ||
		    data[i + RECLEN - 1] != '\n' || seq != last[who] + 1) {
			intact = false;
			break;
		}
		last[who] = seq;
		counts[who]++;
	}
	say("open.append_two_processes", "size=%zd records=%d+%d intact=%s", n, counts[0],
	    counts[1], yesno(intact && n == PROCS * RECORDS * RECLEN));
	leave();
}

static void check_rename(void)
{
	const char *r;
	int fd;

	if (!enter("rename"))
		return;

	SETUP_R(puts_file("a", "A"));
	r = ERR(rename("a", "b"));
	say("rename.plain", "%s old=%s new=%s", r, kind("a"), content("b"));

	SETUP_R(puts_file("a", "A"));
	SETUP_R(puts_file("b", "B"));
	fd = open("b", O_RDONLY | O_CLOEXEC);
	r = ERR(rename("a", "b"));
	say("rename.over_existing", "%s old=%s new=%s", r, kind("a"), content("b"));
	say("rename.replaced_file_still_open", "%s", fd_content(fd));
	if (fd >= 0)
		(void)close(fd);

	SETUP_R(puts_file("a", "A"));
	r = ERR(renameat2(AT_FDCWD, "a", AT_FDCWD, "b", RENAME_NOREPLACE));
	say("rename.noreplace_existing", "%s a=%s b=%s", r, content("a"), content("b"));
	r = ERR(renameat2(AT_FDCWD, "a", AT_FDCWD, "c", RENAME_NOREPLACE));
	say("rename.noreplace_missing", "%s a=%s c=%s", r, kind("a"), content("c"));

	SETUP_R(puts_file("x", "X"));
	SETUP(mkdir("y", 0755));
	SETUP_R(puts_file("y/child", "C"));
	r = ERR(renameat2(AT_FDCWD, "x", AT_FDCWD, "y", RENAME_EXCHANGE));
	say("rename.exchange_file_and_dir", "%s x=%s x/child=%s y=%s y=%s", r, kind("x"),
	    content("x/child"), kind("y"), content("y"));
	say("rename.exchange_missing", "%s",
	    ERR(renameat2(AT_FDCWD, "y", AT_FDCWD, "nope", RENAME_EXCHANGE)));
	say("rename.exchange_and_noreplace", "%s",
	    ERR(renameat2(AT_FDCWD, "x", AT_FDCWD, "y", RENAME_EXCHANGE | RENAME_NOREPLACE)));

	SETUP(mkdir("src", 0755));
	SETUP_R(puts_file("src/in", "I"));
	SETUP(mkdir("empty", 0755));
	r = ERR(rename("src", "empty"));
	say("rename.dir_over_empty_dir", "%s src=%s empty/in=%s", r, kind("src"),
	    content("empty/in"));
	SETUP(mkdir("src", 0755));
	r = ERR(rename("src", "empty"));
	say("rename.dir_over_nonempty_dir", "%s src=%s", r, kind("src"));
	SETUP(mkdir("src/sub", 0755));
	say("rename.dir_into_own_subdir", "%s", ERR(rename("src", "src/sub/moved")));
	SETUP_R(puts_file("file", "F"));
	say("rename.file_over_dir", "%s", ERR(rename("file", "src")));
	say("rename.dir_over_file", "%s", ERR(rename("src", "file")));
	say("rename.missing_source", "%s", ERR(rename("nope", "nope2")));
	r = ERR(renameat2(AT_FDCWD, "file", AT_FDCWD, "file", 0));
	say("rename.file_onto_itself", "%s file=%s", r, content("file"));
	say("rename.noreplace_onto_itself", "%s",
	    ERR(renameat2(AT_FDCWD, "file", AT_FDCWD, "file", RENAME_NOREPLACE)));
	say("rename.dir_onto_itself", "%s", ERR(rename("src", "src")));
	SETUP(link("file", "file-link"));
	r = ERR(rename("file", "file-link"));
	say("rename.between_hard_links", "%s file=%s file-link=%s", r, kind("file"),
	    kind("file-link"));

	SETUP(mkdir("p1", 0755));
	SETUP(mkdir("p2", 0755));
	SETUP(mkdir("p1/sub", 0755));
	SETUP_R(puts_file("p1/sub/deep", "D"));
	say("rename.dir_across_parents_before", "p1=%lld p2=%lld", nlink_of("p1"), nlink_of("p2"));
	r = ERR(rename("p1/sub", "p2/sub"));
	say("rename.dir_across_parents", "%s p1=%lld p2=%lld deep=%s dotdot_is_p2=%s", r,
	    nlink_of("p1"), nlink_of("p2"), content("p2/sub/deep"),
	    yesno(same_inode("p2/sub/..", "p2")));

	SETUP_R(puts_file("open-me", "1"));
	fd = open("open-me", O_WRONLY | O_APPEND | O_CLOEXEC);
	say("rename.open_file", "%s", ERR(rename("open-me", "moved")));
	r = VAL(write(fd, "2", 1));
	say("rename.open_file_write_after", "%s moved=%s", r, content("moved"));
	if (fd >= 0)
		(void)close(fd);
	leave();
}

static void check_link(void)
{
	const char *r;
	struct stat s;
	int fd;

	if (!enter("link"))
		return;

	SETUP_R(puts_file("a", "data"));
	fd = open("a", O_RDONLY | O_CLOEXEC);
	r = ERR(link("a", "b"));
	say("link.create", "%s a=%lld b=%lld same_inode=%s", r, nlink_of("a"), nlink_of("b"),
	    yesno(same_inode("a", "b")));
	say("link.nlink_seen_by_open_fd", "%s",
	    fstat(fd, &s) == 0 ? fmt("%lld", (long long)s.st_nlink) : errname(errno));
	r = ERR(link("b", "c"));
	say("link.third", "%s a=%lld", r, nlink_of("a"));
	r = ERR(unlink("a"));
	say("link.unlink_one", "%s b=%lld content=%s", r, nlink_of("b"), content("b"));
	r = neg(puts_file("b", "new"));
	say("link.write_through_other_name", "%s c=%s", r, content("c"));
	say("link.existing_target", "%s", ERR(link("b", "c")));
	say("link.missing_source", "%s", ERR(link("nope", "x")));
	SETUP(mkdir("d", 0755));
	say("link.dir", "%s", ERR(link("d", "d2")));
	SETUP(symlink("b", "sl"));
	r = ERR(linkat(AT_FDCWD, "sl", AT_FDCWD, "sl2", 0));
	say("link.to_symlink", "%s %s same_inode=%s", r, kind("sl2"),
	    yesno(same_inode("sl", "sl2")));
	r = ERR(linkat(AT_FDCWD, "sl", AT_FDCWD, "f2", AT_SYMLINK_FOLLOW));
	say("link.follow_symlink", "%s %s same_as_target=%s", r, kind("f2"),
	    yesno(same_inode("f2", "b")));
	if (fd >= 0)
		(void)close(fd);
	leave();
}

static void check_symlink(void)
{
	const char *r;
	char buf[2048], target[1001];
	ssize_t n;

	if (!enter("symlink"))
		return;

	SETUP_R(puts_file("target-file", "T"));
	say("symlink.relative", "%s", ERR(symlink("target-file", "rel")));
	n = readlink("rel", buf, sizeof(buf));
	say("symlink.relative_readlink", "%s %s", VAL(n), quote(buf, n));
	say("symlink.relative_lstat_stat", "lstat=%s size=%lld stat=%s content=%s", kind("rel"),
	    size_of("rel"), kind_follow("rel"), content("rel"));
	say("symlink.absolute", "%s", ERR(symlink("/nonexistent-fs-posix/abs/path", "abs")));
	n = readlink("abs", buf, sizeof(buf));
	say("symlink.absolute_readlink", "%s %s", VAL(n), quote(buf, n));
	r = ERR(symlink("no-such-target", "dng"));
	say("symlink.dangling", "%s lstat=%s stat=%s", r, kind("dng"), kind_follow("dng"));
	SETUP(mkdir("dir", 0755));
	SETUP_R(puts_file("dir/inner", "in"));
	r = ERR(symlink("dir", "ldir"));
	say("symlink.to_dir", "%s stat=%s through=%s", r, kind_follow("ldir"),
	    content("ldir/inner"));
	r = ERR(symlink("../target-file", "dir/up"));
	say("symlink.dotdot_target", "%s content=%s", r, content("dir/up"));
	say("symlink.nofollow_open", "%s", try_open("rel", O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0));
	SETUP(symlink("loop-b", "loop-a"));
	SETUP(symlink("loop-a", "loop-b"));
	say("symlink.loop", "%s", try_open("loop-a", O_RDONLY | O_CLOEXEC, 0));
	say("symlink.readlink_regular", "%s", VAL(readlink("target-file", buf, sizeof(buf))));
	say("symlink.readlink_missing", "%s", VAL(readlink("nope", buf, sizeof(buf))));
	n = readlink("rel", buf, 4);
	say("symlink.readlink_short_buffer", "%s %s", VAL(n), quote(buf, n));
	memset(target, 't', 1000);
	target[1000] = '\0';
	say("symlink.long_target", "%s", ERR(symlink(target, "long")));
	n = readlink("long", buf, sizeof(buf));
	say("symlink.long_readlink", "%s equal=%s", VAL(n),
	    yesno(n == 1000 && !memcmp(buf, target, 1000)));
	say("symlink.existing", "%s", ERR(symlink("x", "rel")));
	r = ERR(unlink("rel"));
	say("symlink.unlink_keeps_target", "%s target=%s", r, content("target-file"));
	leave();
}

static void check_chmod(void)
{
	const char *r;
	int fd;

	if (!enter("chmod"))
		return;

	SETUP_R(puts_file("f", "secret"));
	r = ERR(chmod("f", 0640));
	say("chmod.0640", "%s %s", r, mode_of("f"));
	fd = open("f", O_RDONLY | O_CLOEXEC);
	r = ERR(fchmod(fd, 0600));
	say("chmod.fchmod_0600", "%s %s", r, mode_of("f"));
	if (fd >= 0)
		(void)close(fd);
	SETUP(symlink("f", "lf"));
	r = ERR(chmod("lf", 0604));
	say("chmod.through_symlink", "%s target=%s link=%s", r, mode_of("f"), kind("lf"));
	say("chmod.symlink_nofollow", "%s",
	    ERR(fchmodat(AT_FDCWD, "lf", 0600, AT_SYMLINK_NOFOLLOW)));
	SETUP(mkdir("d", 0755));
	r = ERR(chmod("d", 0700));
	say("chmod.dir_0700", "%s %s", r, kind("d"));
	r = ERR(chmod("d", 01777));
	say("chmod.sticky_dir", "%s %s", r, kind("d"));
	say("chmod.missing", "%s", ERR(chmod("nope", 0644)));

	r = ERR(chmod("f", 0));
	say("chmod.mode0", "%s %s", r, kind("f"));
	/* what root can still do with a file of mode 0: read and write, not execute */
	fd = open("f", O_RDONLY | O_CLOEXEC);
	r = ERR(fd);
	say("chmod.mode0.root_read", "%s %s", r, fd >= 0 ? fd_content(fd) : "-");
	if (fd >= 0)
		(void)close(fd);
	fd = open("f", O_WRONLY | O_APPEND | O_CLOEXEC);
	r = ERR(fd);
	say("chmod.mode0.root_write", "%s %s", r, fd >= 0 ? VAL(write(fd, "!", 1)) : "-");
	if (fd >= 0)
		(void)close(fd);
	say("chmod.mode0.root_access_rw", "%s", ERR(access("f", R_OK | W_OK)));
	say("chmod.mode0.access_x", "%s", ERR(access("f", X_OK)));
	say("chmod.mode0.other_user_read", "%s", in_child(true, child_open_rdonly, "f"));
	SETUP(chmod("d", 0));
	{
		DIR *d = opendir("d");
		int n = 0;

		while (d && readdir(d))
			n++;
		say("chmod.mode0.root_list_dir", "%s entries=%d", d ? "ok" : errname(errno), n);
		if (d)
			(void)closedir(d);
	}
	say("chmod.mode0.root_create_in_dir", "%s", neg(puts_file("d/inside", "x")));
	SETUP(chmod("d", 0755));
	SETUP(chmod("f", 0644));
	leave();
}

/* What another user may do: the file system must apply the permission bits to the caller. */
static void check_permissions(void)
{
	const char *r;
	if (!enter("perm"))
		return;

	SETUP_R(puts_file("f644", "r"));
	say("perm.other_read_0644", "%s", in_child(true, child_open_rdonly, "f644"));
	say("perm.other_write_0644", "%s", in_child(true, child_open_wronly, "f644"));
	SETUP_R(puts_file("f600", "s"));
	SETUP(chmod("f600", 0600));
	say("perm.other_read_0600", "%s", in_child(true, child_open_rdonly, "f600"));
	SETUP_R(puts_file("f666", "w"));
	SETUP(chmod("f666", 0666));
	say("perm.other_write_0666", "%s", in_child(true, child_append_byte, "f666"));
	r = in_child(true, child_chmod_0777, "f644");
	say("perm.other_chmod", "%s mode=%s", r, mode_of("f644"));
	say("perm.other_unlink_in_0755_dir", "%s", in_child(true, child_unlink, "f644"));
	say("perm.other_create_in_0755_dir", "%s", in_child(true, child_create_unlink, "new"));
	SETUP(mkdir("open", 0777));
	SETUP(chmod("open", 0777));
	SETUP_R(puts_file("open/roots", "r"));
	r = in_child(true, child_unlink, "open/roots");
	say("perm.other_unlink_in_0777_dir", "%s exists=%s", r, yesno(exists("open/roots")));
	SETUP(mkdir("sticky", 0777));
	SETUP(chmod("sticky", 01777));
	SETUP_R(puts_file("sticky/roots", "r"));
	r = in_child(true, child_unlink, "sticky/roots");
	say("perm.other_unlink_in_sticky_dir", "%s exists=%s", r, yesno(exists("sticky/roots")));
	say("perm.other_own_file_in_sticky_dir", "%s",
	    in_child(true, child_create_unlink, "sticky/mine"));
	SETUP(mkdir("locked", 0700));
	SETUP_R(puts_file("locked/f", "x"));
	say("perm.other_traverse_0700_dir", "%s", in_child(true, child_open_rdonly, "locked/f"));
	leave();
}

static void check_chown(void)
{
	const char *r;
	struct stat before;
	int fd;

	if (!enter("chown"))
		return;

	SETUP_R(puts_file("f", "x"));
	r = ERR(chown("f", 1234, 5678));
	say("chown.to_1234_5678", "%s %s", r, owner_of("f"));
	if (lstat("f", &before) < 0)
		say("chown.minus1_both", "stat=%s", errname(errno));
	else {
		r = ERR(chown("f", (uid_t)-1, (gid_t)-1));
		say("chown.minus1_both", "%s unchanged=%s", r,
		    yesno(!strcmp(owner_of("f"), fmt("uid=%u gid=%u", (unsigned int)before.st_uid,
						     (unsigned int)before.st_gid))));
	}
	r = ERR(chown("f", (uid_t)-1, 42));
	say("chown.gid_only", "%s %s", r, owner_of("f"));
	r = ERR(chown("f", 0, 0));
	say("chown.back_to_0_0", "%s %s", r, owner_of("f"));
	fd = open("f", O_RDONLY | O_CLOEXEC);
	r = ERR(fchown(fd, 1234, 1234));
	say("chown.fchown", "%s %s", r, owner_of("f"));
	if (fd >= 0)
		(void)close(fd);
	SETUP(chown("f", 0, 0));
	SETUP(symlink("f", "lf"));
	r = ERR(lchown("lf", 1234, 1234));
	say("chown.lchown_symlink", "%s link=%s target=%s", r, owner_of("lf"), owner_of("f"));
	r = ERR(chown("lf", 4321, 4321));
	say("chown.through_symlink", "%s target=%s", r, owner_of("f"));

	/* set-id bits: chown clears them, so does another user's write */
	SETUP_R(puts_file("suid", "#!/bin/sh\n"));
	r = ERR(chmod("suid", 04755));
	say("setid.chmod_4755", "%s %s", r, mode_of("suid"));
	r = ERR(chown("suid", 1234, 1234));
	say("setid.chown_clears_suid", "%s %s", r, mode_of("suid"));
	SETUP_R(puts_file("suid-w", "x"));
	SETUP(chmod("suid-w", 04777));
	r = in_child(true, child_append_byte, "suid-w");
	say("setid.other_write_clears_suid", "%s %s", r, mode_of("suid-w"));
	SETUP(mkdir("sg", 0775));
	SETUP(chown("sg", (uid_t)-1, OTHER_GID));
	r = ERR(chmod("sg", 02775));
	say("setid.sgid_dir", "%s %s", r, kind("sg"));
	SETUP_R(puts_file("sg/file", "x"));
	SETUP(mkdir("sg/sub", 0777));
	say("setid.sgid_dir_inherit", "file=%s sub=%s %s", owner_of("sg/file"), owner_of("sg/sub"),
	    kind("sg/sub"));
	leave();
}

static void check_truncate(void)
{
	const char *r;
	char buf[64];
	struct stat s;
	int fd, fd2;

	if (!enter("truncate"))
		return;

	SETUP_R(puts_file("f", "abc"));
	fd = open("f", O_RDWR | O_CLOEXEC);
	r = ERR(truncate("f", 10000));
	say("truncate.grow", "%s size=%lld head=%s zeros=%s", r, size_of("f"),
	    quote(buf, pread(fd, buf, 3, 0)), yesno(zeros_at(fd, 3, 10000 - 3)));
	r = ERR(truncate("f", 2));
	say("truncate.shrink", "%s size=%lld content=%s", r, size_of("f"), content("f"));
	r = ERR(ftruncate(fd, 8192));
	say("truncate.ftruncate_grow", "%s size=%lld zeros=%s", r, size_of("f"),
	    yesno(zeros_at(fd, 2, 8192 - 2)));
	memset(buf, 'x', sizeof(buf));
	SETUP(pwrite(fd, buf, sizeof(buf), 0));
	r = ERR(ftruncate(fd, 10));
	say("truncate.ftruncate_shrink", "%s size=%lld", r, size_of("f"));
	r = ERR(ftruncate(fd, 4096));
	say("truncate.regrow_reads_zeros", "%s size=%lld head=%s zeros=%s", r, size_of("f"),
	    quote(buf, pread(fd, buf, 10, 0)), yesno(zeros_at(fd, 10, 4096 - 10)));
	fd2 = open("f", O_RDONLY | O_CLOEXEC);
	r = ERR(ftruncate(fd, 100));
	say("truncate.other_fd_sees_size", "%s fstat=%s", r,
	    fstat(fd2, &s) == 0 ? fmt("%lld", (long long)s.st_size) : errname(errno));
	say("truncate.ftruncate_rdonly_fd", "%s", ERR(ftruncate(fd2, 0)));
	say("truncate.negative", "%s", ERR(ftruncate(fd, -1)));
	say("truncate.missing", "%s", ERR(truncate("nope", 0)));
	SETUP(mkdir("d", 0755));
	say("truncate.dir", "%s", ERR(truncate("d", 0)));
	r = ERR(ftruncate(fd, 0));
	say("truncate.to_zero", "%s size=%lld", r, size_of("f"));
	if (fd >= 0)
		(void)close(fd);
	if (fd2 >= 0)
		(void)close(fd2);
	leave();
}

static bool is_recent(struct timespec t)
{
	struct timespec now;
	long long d;

	(void)clock_gettime(CLOCK_REALTIME, &now);
	d = (long long)now.tv_sec - (long long)t.tv_sec;
	return d >= -5 && d <= 5;
}

static const char *times_of(const char *path, bool follow)
{
	struct stat s;

	if ((follow ? stat(path, &s) : lstat(path, &s)) < 0)
		return errname(errno);
	return fmt("atime=%lld.%09ld mtime=%lld.%09ld", (long long)s.st_atim.tv_sec,
		   s.st_atim.tv_nsec, (long long)s.st_mtim.tv_sec, s.st_mtim.tv_nsec);
}

static const char *atime_of(const char *path)
{
	struct stat s;

	if (lstat(path, &s) < 0)
		return errname(errno);
	return fmt("%lld.%09ld", (long long)s.st_atim.tv_sec, s.st_atim.tv_nsec);
}

/* Which times of path are within seconds of now. atime only when asked: whether a read updates it
 * depends on the mount's atime option. */
static const char *recent_of(const char *path, bool with_atime)
{
	struct stat s;

	if (lstat(path, &s) < 0)
		return errname(errno);
	return fmt("%s%s%smtime_recent=%s ctime_recent=%s", with_atime ? "atime_recent=" : "",
		   with_atime ? yesno(is_recent(s.st_atim)) : "", with_atime ? " " : "",
		   yesno(is_recent(s.st_mtim)), yesno(is_recent(s.st_ctim)));
}

static int set_old_times(const char *path)
{
	const struct timespec old[2] = {{.tv_sec = 1000000000}, {.tv_sec = 1000000000}};

	return utimensat(AT_FDCWD, path, old, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
}

static bool mtime_recent(const char *path)
{
	struct stat s;

	return lstat(path, &s) == 0 && is_recent(s.st_mtim);
}

static void check_times(void)
{
	const char *r;
	const struct timespec explicit_times[2] = {{.tv_sec = 1000000000, .tv_nsec = 123456789},
						   {.tv_sec = 1200000000, .tv_nsec = 987654321}};
	const struct timespec now_mtime[2] = {{.tv_nsec = UTIME_OMIT}, {.tv_nsec = UTIME_NOW}};
	const struct timespec omit[2] = {{.tv_nsec = UTIME_OMIT}, {.tv_nsec = UTIME_OMIT}};
	const struct timespec link_times[2] = {{.tv_sec = 1300000000, .tv_nsec = 500000000},
					       {.tv_sec = 1300000000, .tv_nsec = 500000000}};
	const struct timespec fd_times[2] = {{.tv_sec = 1400000000, .tv_nsec = 1},
					     {.tv_sec = 1400000000, .tv_nsec = 2}};
	struct timespec pause = {.tv_nsec = 30 * 1000 * 1000};
	struct stat s1, s2;
	char c;
	int fd;

	if (!enter("times"))
		return;

	SETUP_R(puts_file("f", "x"));
	say("times.create_recent", "%s", recent_of("f", true));
	r = ERR(utimensat(AT_FDCWD, "f", explicit_times, 0));
	say("times.explicit_ns", "%s %s", r, times_of("f", false));
	r = ERR(utimensat(AT_FDCWD, "f", now_mtime, 0));
	say("times.utime_now_mtime_omit_atime", "%s atime=%s mtime_recent=%s", r, atime_of("f"),
	    yesno(mtime_recent("f")));
	SETUP(utimensat(AT_FDCWD, "f", explicit_times, 0));
	r = ERR(utimensat(AT_FDCWD, "f", omit, 0));
	say("times.utime_omit_both", "%s %s", r, times_of("f", false));
	r = ERR(utimensat(AT_FDCWD, "f", NULL, 0));
	say("times.utime_null_is_now", "%s %s", r, recent_of("f", true));
	SETUP(utimensat(AT_FDCWD, "f", explicit_times, 0));
	SETUP(symlink("f", "lf"));
	r = ERR(utimensat(AT_FDCWD, "lf", link_times, AT_SYMLINK_NOFOLLOW));
	say("times.symlink_nofollow", "%s link=%s target=%s", r, times_of("lf", false),
	    times_of("f", false));
	r = ERR(utimensat(AT_FDCWD, "lf", fd_times, 0));
	say("times.through_symlink", "%s target=%s", r, times_of("f", false));
	fd = open("f", O_RDWR | O_CLOEXEC);
	r = ERR(futimens(fd, explicit_times));
	say("times.futimens", "%s %s", r, times_of("f", false));
	SETUP(lstat("f", &s1));
	SETUP(pread(fd, &c, 1, 0));
	SETUP(lstat("f", &s2));
	say("times.read_keeps_mtime", "%s",
	    yesno(s1.st_mtim.tv_sec == s2.st_mtim.tv_sec &&
		  s1.st_mtim.tv_nsec == s2.st_mtim.tv_nsec));
	r = VAL(pwrite(fd, "y", 1, 0));
	say("times.write_updates_mtime_ctime", "%s %s", r, recent_of("f", false));
	SETUP_R(set_old_times("f"));
	r = ERR(ftruncate(fd, 0));
	say("times.ftruncate_updates_mtime", "%s mtime_recent=%s", r, yesno(mtime_recent("f")));
	if (fd >= 0)
		(void)close(fd);

	SETUP(lstat("f", &s1));
	(void)nanosleep(&pause, NULL);
	SETUP(chmod("f", 0600));
	SETUP(lstat("f", &s2));
	say("times.chmod_updates_ctime_only", "ctime_later=%s mtime_same=%s",
	    yesno(s2.st_ctim.tv_sec > s1.st_ctim.tv_sec ||
		  (s2.st_ctim.tv_sec == s1.st_ctim.tv_sec &&
		   s2.st_ctim.tv_nsec > s1.st_ctim.tv_nsec)),
	    yesno(s1.st_mtim.tv_sec == s2.st_mtim.tv_sec &&
		  s1.st_mtim.tv_nsec == s2.st_mtim.tv_nsec));

	SETUP(mkdir("d", 0755));
	SETUP_R(set_old_times("d"));
	SETUP_R(puts_file("d/new", "n"));
	say("times.dir_mtime_on_create", "%s", yesno(mtime_recent("d")));
	SETUP_R(set_old_times("d"));
	SETUP(rename("d/new", "d/new2"));
	say("times.dir_mtime_on_rename", "%s", yesno(mtime_recent("d")));
	SETUP_R(set_old_times("d"));
	SETUP(unlink("d/new2"));
	say("times.dir_mtime_on_unlink", "%s", yesno(mtime_recent("d")));
	say("times.missing", "%s", ERR(utimensat(AT_FDCWD, "nope", NULL, 0)));
	leave();
}

static int names_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The user.* names of path's list, sorted and joined by ",". */
static const char *user_xattrs(const char *path, bool follow)
{
	char list[4096], *names[64], *p;
	size_t count = 0, i, size, o = 0;
	ssize_t n;
	char *out;

	n = follow ? listxattr(path, list, sizeof(list)) : llistxattr(path, list, sizeof(list));
	if (n < 0)
		return errname(errno);
	for (p = list; p < list + n && count < ARRAY_SIZE(names); p += strlen(p) + 1)
		if (!strncmp(p, "user.", 5))
			names[count++] = p;
	qsort(names, count, sizeof(names[0]), names_cmp);
	out = ring_buf(&size);
	out[0] = '\0';
	for (i = 0; i < count; i++)
		o += (size_t)snprintf(out + o, size - o, "%s%s", i ? "," : "", names[i]);
	return count ? out : "(none)";
}

static const char *xget(const char *path, const char *name)
{
	char buf[256];
	ssize_t n = getxattr(path, name, buf, sizeof(buf));

	return n < 0 ? errname(errno) : quote(buf, n);
}

static void check_xattr(void)
{
	const char *r;
	static char big[70000], back[70000];
	char name256[263], list[4096];
	ssize_t n;
	int fd;

	if (!enter("xattr"))
		return;

	SETUP_R(puts_file("f", "x"));
	say("xattr.set", "%s", ERR(setxattr("f", "user.test", "hello", 5, 0)));
	say("xattr.get", "%s", xget("f", "user.test"));
	say("xattr.size_query", "%s", VAL(getxattr("f", "user.test", NULL, 0)));
	say("xattr.small_buffer", "%s", VAL(getxattr("f", "user.test", list, 2)));
	r = ERR(setxattr("f", "user.test", "other", 5, XATTR_CREATE));
	say("xattr.create_existing", "%s value=%s", r, xget("f", "user.test"));
	say("xattr.replace_missing", "%s", ERR(setxattr("f", "user.none", "v", 1, XATTR_REPLACE)));
	r = ERR(setxattr("f", "user.test", "world", 5, XATTR_REPLACE));
	say("xattr.replace_existing", "%s value=%s", r, xget("f", "user.test"));
	say("xattr.create_new", "%s", ERR(setxattr("f", "user.second", "2", 1, XATTR_CREATE)));
	say("xattr.get_missing", "%s", xget("f", "user.none"));
	r = ERR(setxattr("f", "user.empty", "", 0, 0));
	say("xattr.empty_value", "%s size=%s", r, VAL(getxattr("f", "user.empty", NULL, 0)));
	say("xattr.list", "%s", user_xattrs("f", true));
	n = listxattr("f", NULL, 0);
	say("xattr.list_size_query", "%s",
	    n < 0 ? errname(errno) : yesno(n == listxattr("f", list, sizeof(list))));
	say("xattr.list_small_buffer", "%s", VAL(listxattr("f", list, 1)));
	r = ERR(removexattr("f", "user.second"));
	say("xattr.remove", "%s get=%s list=%s", r, xget("f", "user.second"),
	    user_xattrs("f", true));
	say("xattr.remove_missing", "%s", ERR(removexattr("f", "user.second")));
	fd = open("f", O_RDONLY | O_CLOEXEC);
	say("xattr.fsetxattr", "%s", ERR(fsetxattr(fd, "user.fd", "via-fd", 6, 0)));
	n = fgetxattr(fd, "user.fd", list, sizeof(list));
	say("xattr.fgetxattr", "%s", quote(list, n < 0 ? -errno : n));
	say("xattr.flistxattr_nonzero", "%s", yesno(flistxattr(fd, list, sizeof(list)) > 0));
	say("xattr.fremovexattr", "%s", ERR(fremovexattr(fd, "user.fd")));
	if (fd >= 0)
		(void)close(fd);

	fill_pattern(big, sizeof(big), 7);
	/* a file of its own: how much fits depends on what else the file holds */
	SETUP_R(puts_file("big", ""));
	say("xattr.value_4000", "%s", ERR(setxattr("big", "user.big", big, 4000, 0)));
	n = getxattr("big", "user.big", back, sizeof(back));
	say("xattr.value_4000_back", "%s equal=%s", VAL(n),
	    yesno(n == 4000 && !memcmp(big, back, 4000)));
	say("xattr.value_70000", "%s", ERR(setxattr("f", "user.huge", big, sizeof(big), 0)));
	memset(name256, 'n', sizeof(name256) - 1);
	memcpy(name256, "user.", 5);
	name256[sizeof(name256) - 1] = '\0';
	say("xattr.name_too_long", "%s", ERR(setxattr("f", name256, "v", 1, 0)));
	say("xattr.unknown_namespace", "%s", ERR(setxattr("f", "bogus.name", "v", 1, 0)));
	say("xattr.missing_file", "%s", ERR(setxattr("nope", "user.x", "v", 1, 0)));

	SETUP(mkdir("d", 0755));
	r = ERR(setxattr("d", "user.dir", "D", 1, 0));
	say("xattr.dir", "%s %s", r, xget("d", "user.dir"));
	SETUP(symlink("f", "lf"));
	say("xattr.symlink_user", "%s", ERR(lsetxattr("lf", "user.link", "L", 1, 0)));
	r = ERR(setxattr("lf", "user.via-link", "V", 1, 0));
	say("xattr.through_symlink", "%s target=%s", r, xget("f", "user.via-link"));
	SETUP(mkfifo("fifo", 0644));
	say("xattr.fifo_user", "%s", ERR(setxattr("fifo", "user.fifo", "F", 1, 0)));
	SETUP(rename("f", "g"));
	say("xattr.kept_by_rename", "%s", user_xattrs("g", true));
	SETUP(link("g", "h"));
	say("xattr.shared_by_hard_link", "%s", xget("h", "user.test"));

	SETUP_R(puts_file("ns", ""));
	r = ERR(setxattr("ns", "trusted.fs-posix", "T", 1, 0));
	say("xattr.trusted", "%s get=%s", r, xget("ns", "trusted.fs-posix"));
	r = ERR(setxattr("ns", "security.fs-posix", "S", 1, 0));
	say("xattr.security", "%s get=%s", r, xget("ns", "security.fs-posix"));
	leave();
}

/* POSIX ACLs in the kernel's xattr form: a version header, then (tag, perm, id) entries. */
struct acl_entry {
	uint16_t tag, perm;
	uint32_t id;
};
#define ACL_VERSION 2
#define ACL_USER_OBJ 0x01
#define ACL_USER 0x02
#define ACL_GROUP_OBJ 0x04
#define ACL_MASK 0x10
#define ACL_OTHER 0x20
#define ACL_NO_ID UINT32_MAX

static size_t acl_build(char *buf, const struct acl_entry *e, size_t n)
{
	uint32_t version = ACL_VERSION;

	memcpy(buf, &version, sizeof(version));
	memcpy(buf + sizeof(version), e, n * sizeof(*e));
	return sizeof(version) + n * sizeof(*e);
}

/* "u::6,u:1234:4,g::4,m::4,o::0" for the ACL in attribute name of path. */
static const char *acl_desc(const char *path, const char *name)
{
	static const struct {
		uint16_t tag;
		const char *s;
	} tags[] = {{ACL_USER_OBJ, "u"}, {ACL_USER, "u"}, {ACL_GROUP_OBJ, "g"},
		    {0x08, "g"},	 {ACL_MASK, "m"}, {ACL_OTHER, "o"}};
	char buf[512], *out;
	size_t size, o = 0, i, j;
	ssize_t n = getxattr(path, name, buf, sizeof(buf));

	if (n < 0)
		return errname(errno);
	out = ring_buf(&size);
	out[0] = '\0';
	for (i = sizeof(uint32_t); i + sizeof(struct acl_entry) <= (size_t)n;
	     i += sizeof(struct acl_entry)) {
		struct acl_entry e;
		const char *t = "?";

		memcpy(&e, buf + i, sizeof(e));
		for (j = 0; j < ARRAY_SIZE(tags); j++)
			if (tags[j].tag == e.tag)
				t = tags[j].s;
		if (e.id == ACL_NO_ID)
			o += (size_t)snprintf(out + o, size - o, "%s%s::%u", o ? "," : "", t,
					      e.perm);
		else
			o += (size_t)snprintf(out + o, size - o, "%s%s:%u:%u", o ? "," : "", t,
					      e.id, e.perm);
	}
	return out;
}

static void check_acl(void)
{
	const char *r;
	const struct acl_entry access_acl[] = {
	    {ACL_USER_OBJ, 6, ACL_NO_ID}, {ACL_USER, 4, OTHER_UID},  {ACL_GROUP_OBJ, 4, ACL_NO_ID},
	    {ACL_MASK, 4, ACL_NO_ID},	  {ACL_OTHER, 0, ACL_NO_ID},
	};
	const struct acl_entry default_acl[] = {
	    {ACL_USER_OBJ, 7, ACL_NO_ID}, {ACL_USER, 7, OTHER_UID},  {ACL_GROUP_OBJ, 5, ACL_NO_ID},
	    {ACL_MASK, 7, ACL_NO_ID},	  {ACL_OTHER, 0, ACL_NO_ID},
	};
	char buf[256];
	size_t len;

	if (!enter("acl"))
		return;

	SETUP_R(puts_file("f", "x"));
	len = acl_build(buf, access_acl, ARRAY_SIZE(access_acl));
	r = ERR(setxattr("f", "system.posix_acl_access", buf, len, 0));
	say("acl.set_access", "%s mode=%s", r, mode_of("f"));
	say("acl.get_access", "%s", acl_desc("f", "system.posix_acl_access"));
	r = ERR(chmod("f", 0600));
	say("acl.chmod_sets_mask", "%s %s", r, acl_desc("f", "system.posix_acl_access"));
	r = ERR(removexattr("f", "system.posix_acl_access"));
	say("acl.remove_access", "%s mode=%s get=%s", r, mode_of("f"),
	    acl_desc("f", "system.posix_acl_access"));

	SETUP(mkdir("d", 0755));
	len = acl_build(buf, default_acl, ARRAY_SIZE(default_acl));
	say("acl.set_default", "%s", ERR(setxattr("d", "system.posix_acl_default", buf, len, 0)));
	say("acl.default_on_file", "%s",
	    ERR(setxattr("f", "system.posix_acl_default", buf, len, 0)));
	/* a default ACL replaces the umask: mode 0666 gives 0660, not 0644 masked to 0640 */
	SETUP_R(put("d/file", "x", 1, 0666));
	say("acl.inherited_by_file", "mode=%s acl=%s", mode_of("d/file"),
	    acl_desc("d/file", "system.posix_acl_access"));
	SETUP(mkdir("d/sub", 0777));
	say("acl.inherited_by_dir", "mode=%s default=%s", mode_of("d/sub"),
	    acl_desc("d/sub", "system.posix_acl_default"));
	leave();
}

static void check_fallocate(void)
{
	const char *r;
	static char data[MIB];
	struct stat s1, s2;
	int fd;

	if (!enter("fallocate"))
		return;

	fd = open("a", O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	r = ERR(fallocate(fd, 0, 0, MIB));
	say("fallocate.mode0", "%s size=%lld", r, size_of("a"));
	say("fallocate.mode0_allocates", "%s zeros=%s",
	    fstat(fd, &s1) == 0 ? yesno((long long)s1.st_blocks * 512 >= MIB) : errname(errno),
	    yesno(zeros_at(fd, 0, MIB)));
	if (fd >= 0)
		(void)close(fd);

	fd = open("k", O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	SETUP(fstat(fd, &s1));
	r = ERR(fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, MIB));
	say("fallocate.keep_size", "%s size=%lld", r, size_of("k"));
	say("fallocate.keep_size_allocates", "%s",
	    fstat(fd, &s2) == 0 ? yesno((long long)s2.st_blocks * 512 >= MIB) : errname(errno));
	if (fd >= 0)
		(void)close(fd);

	memset(data, 0xab, sizeof(data));
	fd = open("p", O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	SETUP_R(write_all(fd, data, sizeof(data)));
	SETUP(fsync(fd));
	SETUP(fstat(fd, &s1));
	r = ERR(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 256 * 1024, 512 * 1024));
	say("fallocate.punch_hole", "%s size=%lld", r, size_of("p"));
	SETUP(fstat(fd, &s2));
	memset(data, 0, sizeof(data));
	SETUP_R(pread_all(fd, data, sizeof(data), 0));
	say("fallocate.punch_hole_result", "hole_zeros=%s before_kept=%s after_kept=%s freed=%s",
	    yesno(all_zero(data + 256 * 1024, 512 * 1024)),
	    yesno((unsigned char)data[256 * 1024 - 1] == 0xab),
	    yesno((unsigned char)data[768 * 1024] == 0xab && (unsigned char)data[MIB - 1] == 0xab),
	    yesno(s2.st_blocks < s1.st_blocks));
	say("fallocate.punch_without_keep_size", "%s",
	    ERR(fallocate(fd, FALLOC_FL_PUNCH_HOLE, 0, 4096)));
	r = ERR(fallocate(fd, FALLOC_FL_ZERO_RANGE, 0, 4096));
	say("fallocate.zero_range", "%s zeros=%s size=%lld", r, yesno(zeros_at(fd, 0, 4096)),
	    size_of("p"));
	r = neg(-posix_fallocate(fd, 0, 2 * MIB));
	say("fallocate.posix_fallocate", "%s size=%lld", r, size_of("p"));
	say("fallocate.invalid_length", "%s", ERR(fallocate(fd, 0, 0, 0)));
	if (fd >= 0)
		(void)close(fd);
	leave();
}

static void check_mmap(void)
{
	enum { LEN = 8192 };
	static char pat[LEN], back[LEN];
	char *p;
	int fd, fd2;

	if (!enter("mmap"))
		return;

	fd = open("m", O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	SETUP(ftruncate(fd, LEN));
	p = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	say("mmap.shared", "%s", p == MAP_FAILED ? errname(errno) : "ok");
	if (p != MAP_FAILED) {
		fill_pattern(pat, LEN, 1);
		memcpy(p, pat, LEN);
		say("mmap.msync", "%s", ERR(msync(p, LEN, MS_SYNC)));
		fd2 = open("m", O_RDONLY | O_CLOEXEC);
		say("mmap.msync_visible_to_read", "%s",
		    yesno(pread_all(fd2, back, LEN, 0) == LEN && !memcmp(pat, back, LEN)));
		if (fd2 >= 0)
			(void)close(fd2);

		fill_pattern(pat, LEN, 2);
		memcpy(p, pat, LEN);
		say("mmap.munmap", "%s", ERR(munmap(p, LEN)));
		(void)close(fd);
		fd2 = open("m", O_RDONLY | O_CLOEXEC);
		say("mmap.munmap_visible_to_read", "%s",
		    yesno(pread_all(fd2, back, LEN, 0) == LEN && !memcmp(pat, back, LEN)));
		if (fd2 >= 0)
			(void)close(fd2);

		fd = open("m", O_RDWR | O_CLOEXEC);
		p = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		fd2 = open("m", O_WRONLY | O_CLOEXEC);
		SETUP(pwrite(fd2, "XYZ", 3, 100));
		say("mmap.sees_write_through_other_fd", "%s",
		    p == MAP_FAILED ? errname(errno) : yesno(!memcmp(p + 100, "XYZ", 3)));
		if (fd2 >= 0)
			(void)close(fd2);
		if (p != MAP_FAILED)
			(void)munmap(p, LEN);
	}
	p = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	if (p != MAP_FAILED) {
		char c;

		p[0] = 'P';
		SETUP(pread(fd, &c, 1, 0));
		say("mmap.private_stays_private", "%s", yesno(c != 'P'));
		(void)munmap(p, LEN);
	} else {
		say("mmap.private_stays_private", "%s", errname(errno));
	}
	if (fd >= 0)
		(void)close(fd);
	fd = open("m", O_RDONLY | O_CLOEXEC);
	p = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	say("mmap.shared_write_on_rdonly_fd", "%s", p == MAP_FAILED ? errname(errno) : "ok");
	if (p != MAP_FAILED)
		(void)munmap(p, LEN);
	p = mmap(NULL, LEN, PROT_READ, MAP_SHARED, fd, 0);
	say("mmap.shared_read_on_rdonly_fd", "%s", p == MAP_FAILED ? errname(errno) : "ok");
	if (p != MAP_FAILED)
		(void)munmap(p, LEN);
	if (fd >= 0)
		(void)close(fd);
	leave();
}

static void check_sparse(void)
{
	const char *r;
	const off_t off = 5 * GIB;
	char buf[16];
	struct stat s;
	int fd;

	if (!enter("sparse"))
		return;

	fd = open("s", O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	say("sparse.write_at_5GiB", "%s", VAL(pwrite(fd, "END", 3, off)));
	if (fstat(fd, &s) == 0)
		say("sparse.size", "%lld blocks_small=%s", (long long)s.st_size,
		    yesno(s.st_blocks < 1024));
	else
		say("sparse.size", "%s", errname(errno));
	say("sparse.hole_reads_zeros", "%s",
	    yesno(zeros_at(fd, 0, 4096) && zeros_at(fd, GIB, 65536) &&
		  zeros_at(fd, off - 4096, 4096)));
	say("sparse.tail", "%s", quote(buf, pread(fd, buf, sizeof(buf), off)));
	say("sparse.read_at_eof", "%s", VAL(pread(fd, buf, sizeof(buf), off + 3)));
	say("sparse.seek_data", "%s", VAL(lseek(fd, 0, SEEK_DATA)));
	say("sparse.seek_hole", "%s", VAL(lseek(fd, 0, SEEK_HOLE)));
	say("sparse.seek_hole_after_data", "%s", VAL(lseek(fd, off, SEEK_HOLE)));
	say("sparse.seek_data_at_eof", "%s", VAL(lseek(fd, off + 3, SEEK_DATA)));
	say("sparse.seek_end", "%s", VAL(lseek(fd, 0, SEEK_END)));
	r = ERR(ftruncate(fd, MIB));
	say("sparse.truncate_to_1MiB", "%s size=%lld", r, size_of("s"));
	if (fd >= 0)
		(void)close(fd);
	leave();
}

static void check_dirs(void)
{
	const char *r;
	struct dirent *de;
	int fd;
	DIR *d;

	if (!enter("dirs"))
		return;

	SETUP(mkdir("d", 0755));
	say("dir.mkdir_existing", "%s", ERR(mkdir("d", 0755)));
	SETUP_R(puts_file("d/f", "x"));
	say("dir.rmdir_nonempty", "%s", ERR(rmdir("d")));
	say("dir.unlink_dir", "%s", ERR(unlink("d")));
	say("dir.rmdir_file", "%s", ERR(rmdir("d/f")));
	say("dir.rmdir_dot", "%s", ERR(rmdir("d/.")));
	say("dir.rmdir_missing", "%s", ERR(rmdir("nope")));
	say("dir.mkdir_missing_parent", "%s", ERR(mkdir("nope/sub", 0755)));
	r = ERR(mkdir("m", 0777));
	say("dir.mkdir_umask", "%s %s", r, kind("m"));
	say("dir.opendir_file", "%s", try_open("d/f", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0));

	SETUP(mkdir("n", 0755));
	{
		long long a = nlink_of("n"), b, c, e, f;

		SETUP(mkdir("n/s1", 0755));
		SETUP(mkdir("n/s2", 0755));
		b = nlink_of("n");
		SETUP_R(puts_file("n/file", "x"));
		c = nlink_of("n");
		SETUP(rmdir("n/s1"));
		e = nlink_of("n");
		SETUP(rename("n/s2", "s2-out"));
		f = nlink_of("n");
		say("dir.nlink",
		    "new=%lld two_subdirs=%lld with_file=%lld after_rmdir=%lld "
		    "after_move_out=%lld",
		    a, b, c, e, f);
	}

	SETUP(mkdir("empty", 0755));
	d = opendir("empty");
	{
		const char *dot = "missing", *dotdot = "missing";
		int n = 0;

		while (d && (de = readdir(d))) {
			n++;
			if (!strcmp(de->d_name, "."))
				dot = dtype_name(de->d_type);
			else if (!strcmp(de->d_name, ".."))
				dotdot = dtype_name(de->d_type);
		}
		say("dir.empty_listing", "%s entries=%d dot=%s dotdot=%s",
		    d ? "ok" : errname(errno), n, dot, dotdot);
	}
	if (d)
		(void)closedir(d);
	SETUP(mkdir("empty/sub", 0755));
	say("dir.dotdot_is_parent", "%s", yesno(same_inode("empty/sub/..", "empty")));
	say("dir.dot_is_self", "%s", yesno(same_inode("empty/sub/.", "empty/sub")));

	SETUP(mkdir("types", 0755));
	SETUP_R(puts_file("types/reg", "x"));
	SETUP(mkdir("types/dir", 0755));
	SETUP(symlink("reg", "types/lnk"));
	SETUP(mkfifo("types/fifo", 0644));
	{
		struct sockaddr_un a = {.sun_family = AF_UNIX, .sun_path = "types/sock"};
		int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) < 0)
			say("dir.socket_for_d_type", "%s", errname(errno));
		if (s >= 0)
			(void)close(s);
	}
	d = opendir("types");
	{
		const char *names[] = {"reg", "dir", "lnk", "fifo", "sock"};
		const char *got[ARRAY_SIZE(names)] = {"missing", "missing", "missing", "missing",
						      "missing"};
		size_t i;

		while (d && (de = readdir(d)))
			for (i = 0; i < ARRAY_SIZE(names); i++)
				if (!strcmp(de->d_name, names[i]))
					got[i] = dtype_name(de->d_type);
		say("dir.d_type", "reg=%s dir=%s lnk=%s fifo=%s sock=%s", got[0], got[1], got[2],
		    got[3], got[4]);
	}
	if (d)
		(void)closedir(d);

	fd = open("d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	say("dir.fsync", "%s", ERR(fsync(fd)));
	if (fd >= 0)
		(void)close(fd);
	leave();
}

static void check_readdir_seek(void)
{
	enum { N = 30 };
	char names[N + 2][NAME_MAX + 1];
	long pos[N + 2];
	int count = 0, again = 0, mismatches = 0, i;
	struct dirent *de;
	DIR *d;

	if (!enter("seekdir"))
		return;
	for (i = 0; i < N; i++)
		SETUP_R(puts_file(fmt("entry-%02d", i), "x"));
	d = opendir(".");
	if (!d) {
		say("dir.seekdir", "opendir=%s", errname(errno));
		leave();
		return;
	}
	for (;;) {
		long p = telldir(d);

		de = readdir(d);
		if (!de || count == N + 2)
			break;
		pos[count] = p;
		(void)snprintf(names[count], sizeof(names[count]), "%s", de->d_name);
		count++;
	}
	rewinddir(d);
	while (readdir(d))
		again++;
	say("dir.rewinddir", "first=%d again=%d", count, again);
	for (i = count - 1; i >= 0; i--) {
		seekdir(d, pos[i]);
		de = readdir(d);
		if (!de || strcmp(de->d_name, names[i]))
			mismatches++;
	}
	say("dir.seekdir_every_position", "positions=%d mismatches=%d", count, mismatches);
	if (count > 5) {
		seekdir(d, pos[5]);
		for (i = 5, again = 0; (de = readdir(d)); i++)
			if (i >= count || strcmp(de->d_name, names[i]))
				again++;
		say("dir.seekdir_then_rest", "read=%d wrong=%d", i - 5, again);
	}
	(void)closedir(d);
	leave();
}

/* Lists "." with getdents64 and a small buffer, so the listing takes many calls, and changes the
 * folder in the middle: entries neither removed nor added must each appear exactly once. */
static void check_readdir_changing(void)
{
	enum { ORIG = 200, NEW = 50 };
	int seen_orig[ORIG] = {0}, seen_new[NEW] = {0};
	int fd, i, dups = 0, unknown = 0, kept_once = 0, removed_more = 0, total = 0, final = 0;
	bool changed = false;
	char buf[512];
	ssize_t n;

	if (!enter("readdir"))
		return;
	for (i = 0; i < ORIG; i++)
		SETUP_R(puts_file(fmt("orig-%03d-padding-to-make-names-long", i), ""));
	fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	while (fd >= 0 && (n = getdents64(fd, buf, sizeof(buf))) > 0) {
		ssize_t o;

		for (o = 0; o < n;) {
			struct dirent64 *de = (struct dirent64 *)(buf + o);
			int k;

			o += de->d_reclen;
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			total++;
			if (sscanf(de->d_name, "orig-%03d-", &k) == 1 && k >= 0 && k < ORIG)
				seen_orig[k]++;
			else if (sscanf(de->d_name, "new-%03d", &k) == 1 && k >= 0 && k < NEW)
				seen_new[k]++;
			else
				unknown++;
		}
		if (!changed && total >= 60) {
			changed = true;
			for (i = 0; i < ORIG; i += 3)
				SETUP(unlink(fmt("orig-%03d-padding-to-make-names-long", i)));
			for (i = 0; i < NEW; i++)
				SETUP_R(puts_file(fmt("new-%03d", i), ""));
		}
	}
	say("dir.readdir_while_changing", "%s",
	    fd < 0  ? errname(errno)
	    : n < 0 ? errname(errno)
		    : "ok");
	for (i = 0; i < ORIG; i++) {
		if (i % 3 && seen_orig[i] == 1)
			kept_once++;
		if (seen_orig[i] > 1)
			dups++;
		if (i % 3 == 0 && seen_orig[i] > 1)
			removed_more++;
	}
	for (i = 0; i < NEW; i++)
		if (seen_new[i] > 1)
			dups++;
	say("dir.readdir_while_changing_result",
	    "changed=%s kept_seen_once=%d/%d duplicates=%d unknown=%d", yesno(changed), kept_once,
	    ORIG - (ORIG + 2) / 3, dups, unknown);
	if (fd >= 0) {
		SETUP(lseek(fd, 0, SEEK_SET));
		while ((n = getdents64(fd, buf, sizeof(buf))) > 0) {
			ssize_t o;

			for (o = 0; o < n;) {
				struct dirent64 *de = (struct dirent64 *)(buf + o);

				o += de->d_reclen;
				if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
					final++;
			}
		}
		(void)close(fd);
	}
	say("dir.readdir_after_change", "entries=%d", final);
	(void)removed_more;
	leave();
}

static void check_cwd(void)
{
	char cwd[PATH_MAX], *real;
	int here;

	if (!enter("cwd"))
		return;
	real = realpath(".", NULL);
	say("cwd.getcwd_matches_realpath", "%s",
	    getcwd(cwd, sizeof(cwd)) ? yesno(real && !strcmp(cwd, real)) : errname(errno));
	free(real);
	here = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	SETUP(mkdir("gone", 0755));
	if (chdir("gone") == 0) {
		say("cwd.rmdir_own_cwd", "%s", ERR(rmdir("../gone")));
		say("cwd.getcwd_removed", "%s", getcwd(cwd, sizeof(cwd)) ? "ok" : errname(errno));
		say("cwd.create_in_removed", "%s",
		    try_open("x", O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
		say("cwd.mkdir_in_removed", "%s", ERR(mkdir("x", 0755)));
		say("cwd.list_removed", "%s", try_open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0));
	} else {
		say("cwd.rmdir_own_cwd", "chdir=%s", errname(errno));
	}
	if (here >= 0) {
		SETUP(fchdir(here));
		(void)close(here);
	}
	leave();
}

static void check_nodes(void)
{
	const char *r;
	struct sockaddr_un a = {.sun_family = AF_UNIX, .sun_path = "sock"};
	char buf[16];
	struct stat s;
	int fd, srv, cli, acc;

	if (!enter("nodes"))
		return;

	r = ERR(mknod("fifo", S_IFIFO | 0644, 0));
	say("mknod.fifo", "%s %s", r, kind("fifo"));
	fd = open("fifo", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd >= 0) {
		const char *w = VAL(write(fd, "ping", 4));

		say("mknod.fifo_io", "write=%s read=%s", w, quote(buf, read(fd, buf, sizeof(buf))));
		(void)close(fd);
	} else {
		say("mknod.fifo_io", "open=%s", errname(errno));
	}
	say("mknod.mkfifo_existing", "%s", ERR(mkfifo("fifo", 0644)));
	r = ERR(mknod("reg", S_IFREG | 0640, 0));
	say("mknod.regular", "%s %s", r, kind("reg"));
	r = ERR(mknod("sock-node", S_IFSOCK | 0644, 0));
	say("mknod.socket", "%s %s", r, kind("sock-node"));
	r = ERR(mknod("null", S_IFCHR | 0666, makedev(1, 3)));
	say("mknod.chr", "%s %s rdev_is_1_3=%s", r, kind("null"),
	    lstat("null", &s) == 0 ? yesno(s.st_rdev == makedev(1, 3)) : errname(errno));
	say("mknod.chr_open", "%s", try_open("null", O_RDWR | O_CLOEXEC, 0));
	say("mknod.blk", "%s", ERR(mknod("blk", S_IFBLK | 0600, makedev(7, 0))));
	say("mknod.blk_open", "%s", try_open("blk", O_RDONLY | O_CLOEXEC, 0));

	srv = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	r = ERR(bind(srv, (struct sockaddr *)&a, sizeof(a)));
	say("unix_socket.bind", "%s %s", r, kind("sock"));
	say("unix_socket.listen", "%s", ERR(listen(srv, 4)));
	cli = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	say("unix_socket.connect", "%s", ERR(connect(cli, (struct sockaddr *)&a, sizeof(a))));
	watchdog(10);
	acc = accept4(srv, NULL, NULL, SOCK_CLOEXEC);
	watchdog(0);
	if (acc >= 0) {
		const char *w = VAL(write(cli, "hi", 2));

		say("unix_socket.echo", "write=%s read=%s", w,
		    quote(buf, recv(acc, buf, sizeof(buf), 0)));
		(void)close(acc);
	} else {
		say("unix_socket.echo", "accept=%s", errname(errno));
	}
	if (cli >= 0)
		(void)close(cli);
	cli = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	say("unix_socket.bind_existing", "%s", ERR(bind(cli, (struct sockaddr *)&a, sizeof(a))));
	if (cli >= 0)
		(void)close(cli);
	if (srv >= 0)
		(void)close(srv);
	cli = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	say("unix_socket.connect_after_close", "%s",
	    ERR(connect(cli, (struct sockaddr *)&a, sizeof(a))));
	if (cli >= 0)
		(void)close(cli);
	leave();
}

/* ---- locks ---- */

/* Handshakes between a check and its child over a pipe. A lost partner needs no message: the
 * check's own line shows what went wrong. */
static char pipe_get(int fd)
{
	char c = 0;

	return read(fd, &c, 1) == 1 ? c : 0;
}

static bool pipe_put(int fd, char c)
{
	return write(fd, &c, 1) == 1;
}

static void child_flock_nb(const char *path, char *out, size_t size)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);

	(void)snprintf(out, size, "%s",
		       fd < 0 ? errname(errno) : ERR(flock(fd, LOCK_EX | LOCK_NB)));
}

/* arg is "TYPE START LEN" (TYPE r or w): F_GETLK from another process. */
static void child_getlk(const char *arg, char *out, size_t size)
{
	struct flock fl = {.l_whence = SEEK_SET};
	char t = 'w';
	long long start = 0, len = 0;
	int fd = open("lk", O_RDWR | O_CLOEXEC);

	(void)sscanf(arg, "%c %lld %lld", &t, &start, &len);
	fl.l_type = t == 'r' ? F_RDLCK : F_WRLCK;
	fl.l_start = start;
	fl.l_len = len;
	if (fd < 0 || fcntl(fd, F_GETLK, &fl) < 0) {
		(void)snprintf(out, size, "%s", errname(errno));
		return;
	}
	if (fl.l_type == F_UNLCK)
		(void)snprintf(out, size, "F_UNLCK");
	else
		(void)snprintf(out, size, "%s start=%lld len=%lld pid_is_parent=%s",
			       fl.l_type == F_WRLCK ? "F_WRLCK" : "F_RDLCK", (long long)fl.l_start,
			       (long long)fl.l_len, yesno(fl.l_pid == getppid()));
}

static void child_setlk(const char *arg, char *out, size_t size)
{
	struct flock fl = {.l_whence = SEEK_SET, .l_type = F_WRLCK};
	long long start = 0, len = 0;
	int fd = open("lk", O_RDWR | O_CLOEXEC);

	(void)sscanf(arg, "%lld %lld", &start, &len);
	fl.l_start = start;
	fl.l_len = len;
	(void)snprintf(out, size, "%s", fd < 0 ? errname(errno) : ERR(fcntl(fd, F_SETLK, &fl)));
}

static void check_flock(void)
{
	const char *r, *r2;
	int go[2], ready[2];
	int fd1, fd2, fd3;
	pid_t pid;

	if (!enter("flock"))
		return;
	SETUP_R(puts_file("lk", "lock me"));
	fd1 = open("lk", O_RDWR | O_CLOEXEC);
	fd2 = open("lk", O_RDWR | O_CLOEXEC);
	say("flock.ex", "%s", ERR(flock(fd1, LOCK_EX)));
	say("flock.ex_nb_other_description", "%s", ERR(flock(fd2, LOCK_EX | LOCK_NB)));
	say("flock.sh_nb_other_description", "%s", ERR(flock(fd2, LOCK_SH | LOCK_NB)));
	fd3 = dup(fd1);
	say("flock.dup_shares_lock", "%s", ERR(flock(fd3, LOCK_EX | LOCK_NB)));
	say("flock.other_process", "%s", in_child(false, child_flock_nb, "lk"));
	r = ERR(flock(fd1, LOCK_UN));
	r2 = ERR(flock(fd2, LOCK_EX | LOCK_NB));
	say("flock.unlock", "%s then_other=%s", r, r2);
	SETUP(flock(fd2, LOCK_UN));
	r = ERR(flock(fd1, LOCK_SH | LOCK_NB));
	r2 = ERR(flock(fd2, LOCK_SH | LOCK_NB));
	say("flock.shared_both", "%s %s", r, r2);
	say("flock.upgrade_conflicts", "%s", ERR(flock(fd1, LOCK_EX | LOCK_NB)));
	SETUP(flock(fd2, LOCK_UN));
	SETUP(flock(fd1, LOCK_EX));
	if (fd3 >= 0)
		(void)close(fd3);
	(void)close(fd1);
	say("flock.released_on_last_close", "%s", ERR(flock(fd2, LOCK_EX | LOCK_NB)));
	SETUP(flock(fd2, LOCK_UN));

	/* a blocking LOCK_EX waits for the holder and gets the lock when it lets go */
	if (pipe2(go, O_CLOEXEC) == 0 && pipe2(ready, O_CLOEXEC) == 0) {
		(void)fflush(stdout);
		pid = fork();
		if (pid == 0) {
			int fd = open("lk", O_RDWR | O_CLOEXEC);
			struct timespec t = {.tv_nsec = 100 * 1000 * 1000};

			(void)close(go[1]);
			(void)close(ready[0]);
			(void)flock(fd, LOCK_EX);
			(void)pipe_put(ready[1], 'L');
			(void)pipe_get(go[0]);
			(void)nanosleep(&t, NULL);
			_exit(flock(fd, LOCK_UN) < 0);
		}
		(void)close(go[0]);
		(void)close(ready[1]);
		watchdog(10);
		(void)pipe_get(ready[0]);
		(void)pipe_put(go[1], 'G');
		say("flock.blocking_waits_for_holder", "%s", ERR(flock(fd2, LOCK_EX)));
		watchdog(0);
		(void)close(go[1]);
		(void)close(ready[0]);
		if (pid > 0)
			(void)wait_child(pid);
	}
	if (fd2 >= 0)
		(void)close(fd2);
	leave();
}

static int setlk(int fd, int cmd, short type, off_t start, off_t len)
{
	struct flock fl = {.l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = len};

	return fcntl(fd, cmd, &fl) < 0 ? -errno : 0;
}

static void check_fcntl_locks(void)
{
	const char *r;
	int go[2], ready[2];
	struct flock fl;
	pid_t pid;
	char c = 0;
	int fd, fd2, fd3;

	if (!enter("fcntl-lock"))
		return;
	SETUP_R(puts_file("lk", "0123456789012345678901234567890123456789"));
	if (pipe2(go, O_CLOEXEC) < 0 || pipe2(ready, O_CLOEXEC) < 0) {
		say("fcntl.setup", "%s", errname(errno));
		leave();
		return;
	}
	(void)fflush(stdout);
	pid = fork();
	if (pid == 0) {
		int cfd = open("lk", O_RDWR | O_CLOEXEC);
		struct timespec t = {.tv_nsec = 100 * 1000 * 1000};

		(void)close(go[1]);
		(void)close(ready[0]);
		(void)pipe_put(ready[1], setlk(cfd, F_SETLK, F_WRLCK, 0, 100) == 0 ? 'L' : 'E');
		(void)pipe_get(go[0]);
		(void)nanosleep(&t, NULL);
		(void)setlk(cfd, F_SETLK, F_UNLCK, 0, 100);
		(void)pipe_get(go[0]);
		_exit(0);
	}
	(void)close(go[0]);
	(void)close(ready[1]);
	watchdog(10);
	say("fcntl.child_locks_0_100", "%s",
	    pid < 0			 ? errname(errno)
	    : read(ready[0], &c, 1) == 1 ? fmt("%c", c)
					 : "no answer");
	watchdog(0);
	fd = open("lk", O_RDWR | O_CLOEXEC);
	say("fcntl.overlapping_write_lock", "%s", neg(setlk(fd, F_SETLK, F_WRLCK, 50, 100)));
	say("fcntl.overlapping_read_lock", "%s", neg(setlk(fd, F_SETLK, F_RDLCK, 0, 10)));
	say("fcntl.disjoint_write_lock", "%s", neg(setlk(fd, F_SETLK, F_WRLCK, 100, 100)));
	fl = (struct flock){.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 10};
	if (fcntl(fd, F_GETLK, &fl) == 0)
		say("fcntl.getlk_reports_holder", "%s start=%lld len=%lld pid_is_child=%s",
		    fl.l_type == F_WRLCK   ? "F_WRLCK"
		    : fl.l_type == F_UNLCK ? "F_UNLCK"
					   : "F_RDLCK",
		    (long long)fl.l_start, (long long)fl.l_len, yesno(fl.l_pid == pid));
	else
		say("fcntl.getlk_reports_holder", "%s", errname(errno));
	fl = (struct flock){.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 150, .l_len = 10};
	say("fcntl.getlk_own_lock_not_reported", "%s",
	    fcntl(fd, F_GETLK, &fl) < 0 ? errname(errno)
	    : fl.l_type == F_UNLCK	? "F_UNLCK"
					: "locked");
	(void)pipe_put(go[1], 'U');
	watchdog(10);
	say("fcntl.setlkw_waits_for_holder", "%s", neg(setlk(fd, F_SETLKW, F_WRLCK, 0, 100)));
	watchdog(0);
	(void)close(go[1]);
	(void)close(ready[0]);
	if (pid > 0)
		(void)wait_child(pid);

	/* this process's locks as other processes see them */
	say("fcntl.child_sees_parent_lock", "%s", in_child(false, child_getlk, "w 0 10"));
	say("fcntl.child_conflicts", "%s", in_child(false, child_setlk, "5 10"));
	fd2 = open("lk", O_RDWR | O_CLOEXEC);
	say("fcntl.same_process_no_conflict", "%s", neg(setlk(fd2, F_SETLK, F_WRLCK, 0, 10)));
	(void)close(fd2);
	say("fcntl.closing_any_fd_releases", "%s", in_child(false, child_getlk, "w 0 10"));
	r = neg(setlk(fd, F_SETLK, F_UNLCK, 0, 0));
	say("fcntl.unlock", "%s then_child=%s", r, in_child(false, child_getlk, "w 0 10"));

	/* open file description locks */
	fd2 = open("lk", O_RDWR | O_CLOEXEC);
	say("ofd.setlk", "%s", neg(setlk(fd, F_OFD_SETLK, F_WRLCK, 0, 100)));
	say("ofd.other_description_conflicts", "%s", neg(setlk(fd2, F_OFD_SETLK, F_WRLCK, 50, 10)));
	fl = (struct flock){.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 10};
	if (fcntl(fd2, F_OFD_GETLK, &fl) == 0)
		say("ofd.getlk", "%s pid=%d",
		    fl.l_type == F_WRLCK   ? "F_WRLCK"
		    : fl.l_type == F_UNLCK ? "F_UNLCK"
					   : "F_RDLCK",
		    (int)fl.l_pid);
	else
		say("ofd.getlk", "%s", errname(errno));
	say("ofd.posix_lock_in_child_conflicts", "%s", in_child(false, child_setlk, "5 10"));
	fd3 = open("lk", O_RDONLY | O_CLOEXEC);
	(void)close(fd3);
	say("ofd.kept_when_other_fd_closes", "%s", neg(setlk(fd2, F_OFD_SETLK, F_WRLCK, 50, 10)));
	(void)close(fd);
	say("ofd.released_on_close", "%s", neg(setlk(fd2, F_OFD_SETLK, F_WRLCK, 50, 10)));
	fl = (struct flock){.l_type = F_RDLCK, .l_whence = SEEK_SET, .l_pid = 1};
	say("ofd.nonzero_pid_refused", "%s", ERR(fcntl(fd2, F_OFD_SETLK, &fl)));
	(void)close(fd2);
	leave();
}

static void check_sync(void)
{
	int fd;

	if (!enter("sync"))
		return;
	SETUP_R(puts_file("f", "data"));
	fd = open("f", O_RDWR | O_CLOEXEC);
	SETUP_R(write_all(fd, "more", 4));
	say("sync.fsync", "%s", ERR(fsync(fd)));
	say("sync.fdatasync", "%s", ERR(fdatasync(fd)));
	say("sync.sync_file_range", "%s",
	    ERR(sync_file_range(fd, 0, 0,
				SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
				    SYNC_FILE_RANGE_WAIT_AFTER)));
	say("sync.syncfs", "%s", ERR(syncfs(fd)));
	say("sync.fadvise", "%s", neg(-posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)));
	if (fd >= 0)
		(void)close(fd);
	fd = open("f", O_RDONLY | O_CLOEXEC);
	say("sync.fsync_rdonly", "%s", ERR(fsync(fd)));
	if (fd >= 0)
		(void)close(fd);
	leave();
}

static void check_unlink_open(void)
{
	const char *r;
	char buf[64];
	struct stat s;
	int fd, dfd, n = 0;
	DIR *d;

	if (!enter("unlink-open"))
		return;
	SETUP_R(puts_file("f", "still here"));
	fd = open("f", O_RDWR | O_CLOEXEC);
	dfd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	say("unlink_open.unlink", "%s", ERR(unlinkat(dfd, "f", 0)));
	say("unlink_open.read", "%s", quote(buf, pread(fd, buf, sizeof(buf), 0)));
	say("unlink_open.fstat", "%s",
	    fstat(fd, &s) == 0
		? fmt("nlink=%lld size=%lld", (long long)s.st_nlink, (long long)s.st_size)
		: errname(errno));
	say("unlink_open.stat_path", "%s", kind("f"));
	r = VAL(pwrite(fd, "!", 1, 10));
	say("unlink_open.write", "%s read=%s", r, quote(buf, pread(fd, buf, sizeof(buf), 0)));
	say("unlink_open.fchmod", "%s", ERR(fchmod(fd, 0600)));
	say("unlink_open.ftruncate", "%s", ERR(ftruncate(fd, 5)));
	say("unlink_open.fsetxattr", "%s", ERR(fsetxattr(fd, "user.x", "1", 1, 0)));
	d = opendir(".");
	while (d && readdir(d))
		n++;
	if (d)
		(void)closedir(d);
	say("unlink_open.folder_entries", "%d", n);
	r = neg(puts_file("f", "new"));
	say("unlink_open.create_same_name", "%s new=%s old_fd=%s", r, content("f"),
	    quote(buf, pread(fd, buf, sizeof(buf), 0)));
	if (fd >= 0)
		(void)close(fd);
	if (dfd >= 0)
		(void)close(dfd);
	leave();
}

static void check_io(void)
{
	const char *r, *r2;
	enum { BIG = 8 * MIB };
	static char big[BIG], back[BIG];
	char buf[64];
	struct iovec iov[3] = {{.iov_base = "one-", .iov_len = 4},
			       {.iov_base = "two-", .iov_len = 4},
			       {.iov_base = "three", .iov_len = 5}};
	ssize_t n;
	int fd, fd2;

	if (!enter("io"))
		return;

	fill_pattern(big, BIG, 42);
	fd = open("big", O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	say("io.write_8MiB_at_once", "%s", VAL(write(fd, big, BIG)));
	say("io.size_8MiB", "%lld", size_of("big"));
	if (fd >= 0)
		(void)close(fd);
	fd = open("big", O_RDONLY | O_CLOEXEC);
	n = read(fd, back, BIG);
	say("io.read_8MiB_at_once", "%s", VAL(n));
	if (n >= 0 && n < BIG) {
		ssize_t more = pread_all(fd, back + n, (size_t)(BIG - n), n);

		n = more < 0 ? more : n + more;
	}
	say("io.read_back_checksum", "%016" PRIx64 " equal=%s",
	    fnv1a(back, n > 0 ? (size_t)n : 0, 0xcbf29ce484222325ULL),
	    yesno(n == BIG && !memcmp(big, back, BIG)));
	if (fd >= 0)
		(void)close(fd);

	fd = open("p", O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	r = VAL(pwrite(fd, "xyz", 3, 100));
	r2 = VAL(pwrite(fd, "q", 1, 5000));
	say("io.pwrite", "%s %s", r, r2);
	say("io.pwrite_size", "%lld offset=%s", size_of("p"), VAL(lseek(fd, 0, SEEK_CUR)));
	say("io.pread", "%s gap_zeros=%s", quote(buf, pread(fd, buf, 3, 100)),
	    yesno(zeros_at(fd, 0, 100) && zeros_at(fd, 103, 5000 - 103)));
	say("io.pread_past_eof", "%s", VAL(pread(fd, buf, sizeof(buf), 6000)));
	say("io.pread_negative", "%s", VAL(pread(fd, buf, 1, -1)));
	r = VAL(pwritev(fd, iov, 3, 0));
	say("io.writev", "%s %s", r, quote(buf, pread(fd, buf, 13, 0)));
	fd2 = open("p", O_RDONLY | O_CLOEXEC);
	SETUP(pwrite(fd, "COHERENT", 8, 0));
	say("io.other_fd_sees_write", "%s", quote(buf, pread(fd2, buf, 8, 0)));
	SETUP(ftruncate(fd, 0));
	SETUP(pwrite(fd, "abc", 3, 0));
	say("io.other_fd_sees_size", "%s", VAL(lseek(fd2, 0, SEEK_END)));
	if (fd2 >= 0)
		(void)close(fd2);
	if (fd >= 0)
		(void)close(fd);

	{
		int src = open("big", O_RDONLY | O_CLOEXEC);
		int dst = open("copy", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		loff_t total = 0;
		ssize_t c;

		while ((c = copy_file_range(src, NULL, dst, NULL, 1 * MIB, 0)) > 0)
			total += c;
		say("io.copy_file_range", "%s total=%lld", c < 0 ? errname(errno) : "ok",
		    (long long)total);
		if (dst >= 0)
			(void)close(dst);
		n = get("copy", back, BIG);
		say("io.copy_file_range_equal", "%s", yesno(n == BIG && !memcmp(big, back, BIG)));
		dst = open("sent", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		SETUP(lseek(src, 0, SEEK_SET));
		total = 0;
		while ((c = sendfile(dst, src, NULL, 1 * MIB)) > 0)
			total += c;
		r = c < 0 ? errname(errno) : "ok";
		n = get("sent", back, BIG);
		say("io.sendfile", "%s total=%lld equal=%s", r, (long long)total,
		    yesno(n == BIG && !memcmp(big, back, BIG)));
		if (dst >= 0)
			(void)close(dst);
		if (src >= 0)
			(void)close(src);
	}

	fd = open("direct", O_RDWR | O_CREAT | O_DIRECT | O_CLOEXEC, 0644);
	say("io.o_direct_open", "%s", ERR(fd));
	if (fd >= 0) {
		char *al = aligned_alloc(4096, 4096);

		if (al) {
			memset(al, 'D', 4096);
			say("io.o_direct_write", "%s", VAL(pwrite(fd, al, 4096, 0)));
			memset(al, 0, 4096);
			n = pread(fd, al, 4096, 0);
			say("io.o_direct_read", "%s equal=%s", VAL(n),
			    yesno(n == 4096 && al[0] == 'D' && al[4095] == 'D'));
			free(al);
		}
		(void)close(fd);
	}
	leave();
}

/* Copies this program into the current folder as name: 0 or -errno. */
static int copy_self(const char *name)
{
	char buf[65536];
	int in, out, r = 0;
	ssize_t n;

	in = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	out = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
	if (out < 0) {
		r = -errno;
		(void)close(in);
		return r;
	}
	while (r == 0 && (n = read(in, buf, sizeof(buf))) != 0)
		r = n < 0 ? -errno : write_all(out, buf, (size_t)n);
	(void)close(in);
	if (close(out) < 0 && r == 0)
		r = -errno;
	return r;
}

/* Starts ./name with argv; the errno of a failed execve, or 0 and *ret_pid. */
static int spawn(const char *name, char *const argv[], int in, int out, pid_t *ret_pid)
{
	int p[2], e = 0;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return errno;
	(void)fflush(stdout);
	pid = fork();
	if (pid == 0) {
		static char *const envp[] = {"PATH=/usr/bin:/bin", NULL};

		if ((in >= 0 && dup2(in, 0) < 0) || (out >= 0 && dup2(out, 1) < 0))
			_exit(126);
		(void)execve(name, argv, envp);
		e = errno;
		if (write(p[1], &e, sizeof(e)) < 0)
			_exit(126);
		_exit(127);
	}
	(void)close(p[1]);
	if (pid < 0) {
		e = errno;
		(void)close(p[0]);
		return e;
	}
	if (read(p[0], &e, sizeof(e)) != sizeof(e))
		e = 0;
	(void)close(p[0]);
	if (e)
		(void)wait_child(pid);
	else
		*ret_pid = pid;
	return e;
}

static void check_exec(void)
{
	char *const script_argv[] = {"script", NULL};
	char *const hold_argv[] = {"self-copy", "--hold", NULL};
	int in[2], out[2], fd, null, e;
	pid_t pid = -1;
	char c;

	if (!enter("exec"))
		return;

	SETUP_R(put("script", "#!/bin/sh\nexit 7\n", 17, 0755));
	e = spawn("./script", script_argv, -1, -1, &pid);
	say("exec.script", "%s", e ? errname(e) : status_desc(wait_child(pid)));
	SETUP(chmod("script", 0644));
	e = spawn("./script", script_argv, -1, -1, &pid);
	say("exec.without_x_bit", "%s", e ? errname(e) : status_desc(wait_child(pid)));

	e = -copy_self("self-copy");
	if (e) {
		say("exec.binary", "copy=%s", errname(e));
		leave();
		return;
	}
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0) {
		say("exec.binary", "pipe=%s", errname(errno));
		leave();
		return;
	}
	e = spawn("./self-copy", hold_argv, in[0], out[1], &pid);
	(void)close(in[0]);
	(void)close(out[1]);
	watchdog(10);
	say("exec.binary", "%s",
	    e			       ? errname(e)
	    : read(out[0], &c, 1) == 1 ? fmt("running=%c", c)
				       : errname(errno));
	watchdog(0);
	say("exec.write_running_binary", "%s", try_open("self-copy", O_WRONLY | O_CLOEXEC, 0));
	say("exec.unlink_running_binary", "%s", ERR(unlink("self-copy")));
	(void)close(in[1]);
	(void)close(out[0]);
	if (!e)
		say("exec.binary_exit", "%s", status_desc(wait_child(pid)));

	/* should it start after all, it finds its input at an end at once and says nothing */
	SETUP_R(copy_self("self-copy2"));
	fd = open("self-copy2", O_WRONLY | O_CLOEXEC);
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	e = spawn("./self-copy2", hold_argv, null, null, &pid);
	say("exec.binary_open_for_write", "%s", e ? errname(e) : status_desc(wait_child(pid)));
	if (null >= 0)
		(void)close(null);
	if (fd >= 0)
		(void)close(fd);
	leave();
}

static const char *inotify_mask_name(uint32_t m)
{
	static const struct {
		uint32_t m;
		const char *n;
	} names[] = {{IN_CREATE, "CREATE"},	      {IN_MODIFY, "MODIFY"},
		     {IN_CLOSE_WRITE, "CLOSE_WRITE"}, {IN_MOVED_FROM, "MOVED_FROM"},
		     {IN_MOVED_TO, "MOVED_TO"},	      {IN_DELETE, "DELETE"},
		     {IN_ATTRIB, "ATTRIB"},	      {IN_DELETE_SELF, "DELETE_SELF"},
		     {IN_IGNORED, "IGNORED"}};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(names); i++)
		if (m & names[i].m)
			return names[i].n;
	return fmt("0x%x", m);
}

/* The events queued on ifd, as "NAME:file ...", and whether moves paired their cookies. */
static const char *inotify_events(int ifd, bool *ret_cookies_pair)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	struct pollfd pfd = {.fd = ifd, .events = POLLIN};
	size_t size, o = 0;
	uint32_t cookie = 0;
	char *out = ring_buf(&size);

	out[0] = '\0';
	*ret_cookies_pair = true;
	while (poll(&pfd, 1, 200) == 1) {
		ssize_t n = read(ifd, buf, sizeof(buf)), i;

		if (n <= 0)
			break;
		for (i = 0; i < n;) {
			struct inotify_event *ev = (struct inotify_event *)(buf + i);

			o += (size_t)snprintf(out + o, size - o, "%s%s%s%s", o ? " " : "",
					      inotify_mask_name(ev->mask), ev->len ? ":" : "",
					      ev->len ? ev->name : "");
			if (o >= size)
				o = size - 1;
			if (ev->mask & IN_MOVED_FROM)
				cookie = ev->cookie;
			if ((ev->mask & IN_MOVED_TO) && ev->cookie != cookie)
				*ret_cookies_pair = false;
			i += (ssize_t)(sizeof(*ev) + ev->len);
		}
	}
	return out;
}

static void check_inotify(void)
{
	bool pair;
	int ifd, wd, fd;

	if (!enter("inotify"))
		return;
	ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	wd = inotify_add_watch(ifd, ".",
			       IN_CREATE | IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_FROM |
				   IN_MOVED_TO | IN_DELETE | IN_ATTRIB);
	say("inotify.watch_dir", "%s", ERR(wd));
	fd = open("w1", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	SETUP_R(write_all(fd, "x", 1));
	(void)close(fd);
	SETUP(rename("w1", "w2"));
	SETUP(chmod("w2", 0600));
	SETUP(unlink("w2"));
	SETUP(mkdir("sub", 0755));
	say("inotify.dir_events", "%s", inotify_events(ifd, &pair));
	say("inotify.move_cookies_pair", "%s", yesno(pair));
	SETUP_R(puts_file("watched", "x"));
	SETUP(inotify_rm_watch(ifd, wd));
	say("inotify.watch_file", "%s",
	    ERR(inotify_add_watch(ifd, "watched", IN_MODIFY | IN_ATTRIB | IN_DELETE_SELF)));
	(void)inotify_events(ifd, &pair);
	SETUP_R(puts_file("watched", "y"));
	SETUP(utimensat(AT_FDCWD, "watched", NULL, 0));
	SETUP(unlink("watched"));
	say("inotify.file_events", "%s", inotify_events(ifd, &pair));
	if (ifd >= 0)
		(void)close(ifd);
	leave();
}

static void check_statfs(void)
{
	struct statvfs v;
	struct statfs s, s2;
	int fd;

	if (!enter("statfs"))
		return;
	if (statfs(".", &s) == 0)
		say("statfs.statfs",
		    "ok namelen=%ld bsize_nonzero=%s blocks_nonzero=%s "
		    "free_le_blocks=%s files_nonzero=%s",
		    (long)s.f_namelen, yesno(s.f_bsize > 0), yesno(s.f_blocks > 0),
		    yesno(s.f_bfree <= s.f_blocks && s.f_bavail <= s.f_blocks),
		    yesno(s.f_files > 0));
	else
		say("statfs.statfs", "%s", errname(errno));
	fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	say("statfs.fstatfs_same_type", "%s",
	    fstatfs(fd, &s2) == 0 ? yesno(s2.f_type == s.f_type && s2.f_bsize == s.f_bsize)
				  : errname(errno));
	if (fd >= 0)
		(void)close(fd);
	if (statvfs(".", &v) == 0)
		say("statfs.statvfs_flags", "rdonly=%s nosuid=%s nodev=%s noexec=%s",
		    yesno(v.f_flag & ST_RDONLY), yesno(v.f_flag & ST_NOSUID),
		    yesno(v.f_flag & ST_NODEV), yesno(v.f_flag & ST_NOEXEC));
	else
		say("statfs.statvfs_flags", "%s", errname(errno));
	leave();
}

/* ---- main ---- */

static int hold(void)
{
	char c;

	if (write(1, "R", 1) != 1)
		return 1;
	while (read(0, &c, 1) > 0)
		;
	return 0;
}

static bool dir_is_empty(int fd)
{
	int dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	struct dirent *de;
	bool empty = true;
	DIR *d;

	if (dup_fd < 0)
		return false;
	d = fdopendir(dup_fd);
	if (!d) {
		(void)close(dup_fd);
		return false;
	}
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			empty = false;
	(void)closedir(d);
	return empty;
}

int main(int argc, char **argv)
{
	static void (*const checks[])(void) = {
	    check_files,
	    check_open,
	    check_append_processes,
	    check_rename,
	    check_link,
	    check_symlink,
	    check_chmod,
	    check_permissions,
	    check_chown,
	    check_truncate,
	    check_times,
	    check_xattr,
	    check_acl,
	    check_fallocate,
	    check_mmap,
	    check_sparse,
	    check_dirs,
	    check_readdir_seek,
	    check_readdir_changing,
	    check_cwd,
	    check_nodes,
	    check_flock,
	    check_fcntl_locks,
	    check_sync,
	    check_unlink_open,
	    check_io,
	    check_exec,
	    check_inotify,
	    check_statfs,
	};
	struct sigaction sa = {.sa_handler = on_alarm};
	size_t i;

	if (argc == 2 && !strcmp(argv[1], "--hold"))
		return hold();
	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	top_fd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (top_fd < 0) {
		fprintf(stderr, "%s: cannot open %s: %s\n", argv[0], argv[1], strerror(errno));
		return 2;
	}
	if (!dir_is_empty(top_fd)) {
		fprintf(stderr, "%s: %s is not an empty folder\n", argv[0], argv[1]);
		return 2;
	}
	/* no SA_RESTART: a call that blocks past its watchdog returns EINTR */
	(void)sigaction(SIGALRM, &sa, NULL);
	(void)signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	umask(022);

	for (i = 0; i < ARRAY_SIZE(checks); i++)
		checks[i]();
	say("end.folder_left_empty", "%s", yesno(dir_is_empty(top_fd)));
	(void)close(top_fd);
	return 0;
}
