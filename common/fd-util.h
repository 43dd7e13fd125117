#pragma once

/* File descriptor helpers and their cleanup attributes. */

#include <stdio.h>
#include <sys/types.h>
#include <unistd.h>

#include "common/macro.h"

/* Closes fd if it is valid and returns -EBADF, so that `fd = al_close(fd);` works.
 * Keeps errno. Async-signal-safe. */
int al_close(int fd);

static inline void closep(int *fd)
{
	*fd = al_close(*fd);
}
#define _cleanup_close_ _cleanup_(closep)

static inline void fclosep(FILE **f)
{
	if (*f)
		(void)fclose(*f);
}
#define _cleanup_fclose_ _cleanup_(fclosep)

/* Moves fd out of a variable whose cleanup attribute would otherwise close it. */
#define TAKE_FD(fd)                                                                                \
	({                                                                                         \
		int _fd_ = (fd);                                                                   \
		(fd) = -EBADF;                                                                     \
		_fd_;                                                                              \
	})

/* Writes all of buf, retrying on EINTR and short writes. Returns 0 or -errno.
 * Async-signal-safe. */
int al_write_all(int fd, const void *buf, size_t len);

/* Reads what is left of fd (up to max bytes, else -EFBIG) into a malloc'd, NUL-terminated buffer.
 */
int al_read_fd(int fd, size_t max, char **ret, size_t *ret_len);
/* Reads a whole file (at most max bytes, else -EFBIG) relative to dirfd into a NUL-terminated
 * malloc'd buffer. ret_len may be NULL. */
int al_read_file_at(int dirfd, const char *path, size_t max, char **ret, size_t *ret_len);

/* Writes a small string to an existing file (sysfs, procfs, cgroupfs) relative to dirfd with one
 * write(2). Returns 0 or -errno. Async-signal-safe. */
int al_write_file_at(int dirfd, const char *path, const char *s);

/* Sets or clears O_NONBLOCK. */
int al_fd_nonblock(int fd, bool nonblock);

/* Marks every fd >= from close-on-exec. Async-signal-safe. */
int al_close_range_cloexec(int from);

/* Closes every fd except the n listed in keep (which it sorts). Async-signal-safe. */
int al_close_all_except(int *keep, size_t n);
