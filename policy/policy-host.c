/* What a profile's contracts measure a policy against on the host that checks it: the host's
 * memory, pid_max and online CPUs (a limit above them limits nothing), and the file an
 * executables entry names. The thin syscall layer of policy-profile.c, which unit tests wrap. */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/fd-util.h"
#include "policy/policy-internal.h"

#define MEMINFO_MAX (64 * 1024)

static int read_mem_total(uint64_t *ret)
{
	_cleanup_free_ char *buf = NULL;
	const char *line;
	uint64_t kib;
	size_t len;
	int r;

	r = al_read_file_at(AT_FDCWD, "/proc/meminfo", MEMINFO_MAX, &buf, &len);
	if (r < 0)
		return r;
	line = strstr(buf, "MemTotal:");
	if (!line || sscanf(line, "MemTotal: %" SCNu64 " kB", &kib) != 1 || kib == 0 ||
	    kib > UINT64_MAX / 1024)
		return -EIO;
	*ret = kib * 1024;
	return 0;
}

static int read_pid_max(uint64_t *ret)
{
	_cleanup_free_ char *buf = NULL;
	uint64_t v;
	size_t len;
	int r;

	r = al_read_file_at(AT_FDCWD, "/proc/sys/kernel/pid_max", 64, &buf, &len);
	if (r < 0)
		return r;
	if (sscanf(buf, "%" SCNu64, &v) != 1 || v == 0)
		return -EIO;
	*ret = v;
	return 0;
}

int policy_host_facts(struct policy_host_facts *ret)
{
	struct policy_host_facts f = {0};
	long cpus;
	int r;

	r = read_mem_total(&f.mem_total);
	if (r < 0)
		return r;
	if (read_pid_max(&f.pid_max) < 0 || f.pid_max > POLICY_PIDS_MAX)
		f.pid_max = POLICY_PIDS_MAX;
	cpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (cpus <= 0)
		return -EIO;
	f.cpus = (uint64_t)cpus;
	*ret = f;
	return 0;
}

int policy_host_stat(const char *root, const char *path, struct stat *ret)
{
	struct open_how how = {.flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_IN_ROOT};
	_cleanup_close_ int root_fd = -EBADF, fd = -EBADF;

	root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root_fd < 0)
		return -errno;
	fd = (int)syscall(SYS_openat2, root_fd, path, &how, sizeof(how));
	if (fd < 0)
		return -errno;
	if (fstat(fd, ret) < 0)
		return -errno;
	return 0;
}
