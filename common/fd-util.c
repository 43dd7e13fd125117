#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/fd-util.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

int al_close(int fd)
{
	int saved_errno;

	if (fd < 0)
		return -EBADF;
	saved_errno = errno;
	/* Linux closes the fd even when close() fails with EINTR: never retry. */
	(void)close(fd);
	errno = saved_errno;
	return -EBADF;
}

int al_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

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

int al_read_fd(int fd, size_t max, char **ret, size_t *ret_len)
{
	_cleanup_free_ char *buf = NULL;
	size_t size = 4096, len = 0;

	for (;;) {
		char *n;
		ssize_t k;

		if (len + 1 >= size) {
			if (size > max + 1)
				return -EFBIG;
			size *= 2;
		}
		n = realloc(buf, size);
		if (!n)
			return -ENOMEM;
		buf = n;
		k = read(fd, buf + len, size - len - 1);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (k == 0)
			break;
		len += (size_t)k;
		if (len > max)
			return -EFBIG;
	}
	buf[len] = '\0';
	if (ret_len)
		*ret_len = len;
	*ret = TAKE_PTR(buf);
	return 0;
}

int al_read_file_at(int dirfd, const char *path, size_t max, char **ret, size_t *ret_len)
{
	_cleanup_close_ int fd = -EBADF;

	fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	return al_read_fd(fd, max, ret, ret_len);
}

int al_write_file_at(int dirfd, const char *path, const char *s)
{
	size_t len = strlen(s);
	ssize_t n;
	int fd, r = 0;

	fd = openat(dirfd, path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	n = write(fd, s, len);
	if (n < 0)
		r = -errno;
	else if ((size_t)n != len)
		r = -EIO;
	(void)al_close(fd);
	return r;
}

int al_fd_nonblock(int fd, bool nonblock)
{
	int flags, nflags;

	flags = fcntl(fd, F_GETFL);
	if (flags < 0)
		return -errno;
	nflags = nonblock ? flags | O_NONBLOCK : flags & ~O_NONBLOCK;
	if (nflags == flags)
		return 0;
	return RET_NERRNO(fcntl(fd, F_SETFL, nflags));
}

int al_close_range_cloexec(int from)
{
	return RET_NERRNO((int)syscall(SYS_close_range, (unsigned)from, ~0U, CLOSE_RANGE_CLOEXEC));
}

int al_close_all_except(int *keep, size_t n)
{
	unsigned from = 0;

	/* Insertion sort: n is a handful, and qsort is not async-signal-safe. */
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
			int t = keep[j];

			keep[j] = keep[j - 1];
			keep[j - 1] = t;
		}
	for (size_t i = 0; i < n; i++) {
		if (keep[i] < 0 || (unsigned)keep[i] < from)
			continue;
		if ((unsigned)keep[i] > from &&
		    syscall(SYS_close_range, from, (unsigned)keep[i] - 1, 0) < 0)
			return -errno;
		from = (unsigned)keep[i] + 1;
	}
	return RET_NERRNO((int)syscall(SYS_close_range, from, ~0U, 0));
}
