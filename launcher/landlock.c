/* Landlock (a kernel interface, used through raw syscalls): the policy's `executables` allow list.
 *
 * The ruleset handles only LANDLOCK_ACCESS_FS_EXECUTE, so reading, writing and everything else
 * keep whatever rights the mounts give; only execve() of a file outside the list fails (EACCES).
 * The kernel checks EXECUTE on every file an exec opens: the program, the ELF interpreter
 * (ld.so) named in its PT_INTERP, and the interpreter of a "#!" script. Those are granted with
 * the listed files, or a listed dynamically linked program would not start. Shared libraries
 * are mapped, not executed, and need nothing. */

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/landlock.h>

#include "common/fd-util.h"
#include "launcher/launcher-internal.h"

/* Landlock's syscalls have the same numbers on every architecture. */
#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#endif
#ifndef __NR_landlock_add_rule
#define __NR_landlock_add_rule 445
#endif
#ifndef __NR_landlock_restrict_self
#define __NR_landlock_restrict_self 446
#endif

/* The kernel follows at most 4 levels of script interpreters (BINPRM_MAX_RECURSION), plus the
 * ELF interpreter of the last one. */
#define INTERPRETER_DEPTH_MAX 5
/* What the kernel reads of a script to find its "#!" line (BINPRM_BUF_SIZE). */
#define SHEBANG_MAX 256
#define PHDR_MAX 512U

_Static_assert(SHEBANG_MAX >= sizeof(Elf64_Ehdr), "the head read must hold an ELF header");

int launcher_landlock_abi(void)
{
	long v;

	v = syscall(__NR_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	if (v < 0)
		return -errno; /* ENOSYS: not built in; EOPNOTSUPP: disabled at boot */
	return (int)v;
}

/* Reads the PT_INTERP path of an ELF file of our byte order into buf. Returns 1 when found, 0
 * when the file has none (static, or not ELF), or -errno. */
static int elf_interpreter(int fd, const unsigned char *head, size_t head_len, char *buf,
			   size_t size)
{
	bool is64;
	uint64_t phoff, off = 0, len = 0;
	size_t phentsize;
	unsigned phnum;
	ssize_t n;

	if (head_len < EI_NIDENT || memcmp(head, ELFMAG, SELFMAG) != 0)
		return 0;
	if (head[EI_DATA] != (__BYTE_ORDER == __LITTLE_ENDIAN ? ELFDATA2LSB : ELFDATA2MSB))
		return 0;
	is64 = head[EI_CLASS] == ELFCLASS64;
	if (is64 && head_len >= sizeof(Elf64_Ehdr)) {
		Elf64_Ehdr eh;

		memcpy(&eh, head, sizeof(eh));
		phoff = eh.e_phoff;
		phentsize = eh.e_phentsize;
		phnum = eh.e_phnum;
		if (phentsize != sizeof(Elf64_Phdr))
			return 0;
	} else if (!is64 && head[EI_CLASS] == ELFCLASS32 && head_len >= sizeof(Elf32_Ehdr)) {
		Elf32_Ehdr eh;

		memcpy(&eh, head, sizeof(eh));
		phoff = eh.e_phoff;
		phentsize = eh.e_phentsize;
		phnum = eh.e_phnum;
		if (phentsize != sizeof(Elf32_Phdr))
			return 0;
	} else
		return 0;

	for (unsigned i = 0; i < MIN(phnum, PHDR_MAX); i++) {
		union {
			Elf64_Phdr p64;
			Elf32_Phdr p32;
		} ph;

		n = pread(fd, &ph, phentsize, (off_t)(phoff + (uint64_t)i * phentsize));
		if (n < 0)
			return -errno;
		if ((size_t)n != phentsize)
			return 0;
		if ((is64 ? ph.p64.p_type : ph.p32.p_type) != PT_INTERP)
			continue;
		off = is64 ? ph.p64.p_offset : ph.p32.p_offset;
		len = is64 ? ph.p64.p_filesz : ph.p32.p_filesz;
		break;
	}
	if (len < 2 || len > size)
		return 0;
	n = pread(fd, buf, (size_t)len, (off_t)off);
	if (n < 0)
		return -errno;
	if ((uint64_t)n != len || buf[len - 1] != '\0' || buf[0] != '/')
		return 0;
	return 1;
}

/* Reads the interpreter of a "#!" script into buf. Returns 1 when found, 0 when there is none
 * (or it is relative: the kernel would look it up from the caller's working directory, which we
 * can't know). */
static int script_interpreter(const unsigned char *head, size_t head_len, char *buf, size_t size)
{
	const char *p = (const char *)head + 2, *end = (const char *)head + head_len;
	size_t len;

	if (head_len < 3 || head[0] != '#' || head[1] != '!')
		return 0;
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	for (len = 0; p + len < end && !strchr(" \t\n", p[len]) && p[len] != '\0'; len++)
		;
	if (len == 0 || p[0] != '/' || len >= size)
		return 0;
	memcpy(buf, p, len);
	buf[len] = '\0';
	return 1;
}

/* What execve() of path also opens for execution, into buf: 1 when there is something, else 0. */
static int executable_interpreter(const char *path, char *buf, size_t size)
{
	unsigned char head[SHEBANG_MAX];
	_cleanup_close_ int fd = -EBADF;
	struct stat st;
	ssize_t n;
	int r;

	/* O_NONBLOCK: a FIFO at that path must not hang the sandbox's setup */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return 0; /* not readable (e.g. mode 0711): nothing to learn, exec decides */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return 0;
	n = pread(fd, head, sizeof(head), 0);
	if (n <= 0)
		return 0;
	r = elf_interpreter(fd, head, (size_t)n, buf, size);
	if (r != 0)
		return r;
	return script_interpreter(head, (size_t)n, buf, size);
}

/* Grants EXECUTE on path (a file, or everything beneath a directory), then on the interpreter
 * it needs, and on that one's, and so on. A listed path must exist; an interpreter that does not
 * is left to exec to report. */
static int landlock_allow_exec(int ruleset_fd, const char *path, struct al_error *err)
{
	char interp[2][PATH_MAX];
	const char *p = path;
	int r;

	for (unsigned depth = 0;; depth++) {
		struct landlock_path_beneath_attr rule = {
		    .allowed_access = LANDLOCK_ACCESS_FS_EXECUTE,
		};
		_cleanup_close_ int fd = -EBADF;

		fd = open(p, O_PATH | O_CLOEXEC);
		if (fd < 0) {
			if (depth > 0)
				return 0;
			return al_error_set_errno(err, -errno, "%s", p);
		}
		rule.parent_fd = fd;
		if (syscall(__NR_landlock_add_rule, ruleset_fd, LANDLOCK_RULE_PATH_BENEATH, &rule,
			    0) < 0)
			return al_error_set_errno(err, -errno, "cannot allow %s", p);
		if (depth >= INTERPRETER_DEPTH_MAX)
			return 0;
		r = executable_interpreter(p, interp[depth % 2], sizeof(interp[0]));
		if (r < 0)
			return al_error_set_errno(err, r, "cannot read %s", p);
		if (r == 0)
			return 0;
		p = interp[depth % 2];
	}
}

int launcher_landlock_restrict_exec(char *const *paths, size_t n, struct al_error *err)
{
	struct landlock_ruleset_attr attr = {.handled_access_fs = LANDLOCK_ACCESS_FS_EXECUTE};
	_cleanup_close_ int ruleset_fd = -EBADF;
	int r;

	if (n == 0)
		return 0; /* no allow list */
	r = launcher_landlock_abi();
	if (r < 0)
		return al_error_set_errno(err, r,
					  "cannot be enforced: Landlock is not available, see "
					  "airlock doctor");
	ruleset_fd = (int)syscall(__NR_landlock_create_ruleset, &attr, sizeof(attr), 0);
	if (ruleset_fd < 0)
		return al_error_set_errno(err, -errno, "cannot create a Landlock ruleset");
	for (size_t i = 0; i < n; i++) {
		r = landlock_allow_exec(ruleset_fd, paths[i], err);
		if (r < 0)
			return r;
	}
	if (syscall(__NR_landlock_restrict_self, ruleset_fd, 0) < 0)
		return al_error_set_errno(err, -errno, "cannot enforce the Landlock ruleset");
	return 0;
}
