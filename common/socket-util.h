#pragma once

/* Messages with file descriptors (SCM_RIGHTS) over Unix sockets. */

#include <stddef.h>
#include <sys/types.h>

#define AL_FDS_MAX 8 /* descriptors in one message */

/* Sends len bytes and the n fds (n <= AL_FDS_MAX; none when n is 0) as one message, retrying on
 * EINTR, never raising SIGPIPE. Returns 0, -EIO for a short send, or -errno. Async-signal-safe. */
int al_send_fds(int sock, const void *buf, size_t len, const int *fds, size_t n);

/* Receives one message of up to len bytes and up to max fds (close-on-exec) into fds, the rest
 * set to -EBADF; fds beyond max are closed. Returns the bytes received, -EPIPE at EOF (no fd
 * kept), -EBADMSG when the message or its fds were cut short (none kept), or -errno. */
ssize_t al_recv_fds(int sock, void *buf, size_t len, int *fds, size_t max);
