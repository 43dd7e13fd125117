#pragma once

/* Messages with file descriptors (SCM_RIGHTS) over Unix sockets, and who is at the other end. */

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/error.h"

#define AL_FDS_MAX 8 /* descriptors in one message */

/* Sends len bytes and the n fds (n <= AL_FDS_MAX; none when n is 0) as one message, retrying on
 * EINTR, never raising SIGPIPE. Returns 0, -EIO for a short send, or -errno. Async-signal-safe. */
int al_send_fds(int sock, const void *buf, size_t len, const int *fds, size_t n);

/* Receives one message of up to len bytes and up to max fds (close-on-exec) into fds, the rest
 * set to -EBADF; fds beyond max are closed. Returns the bytes received, -EPIPE at EOF (no fd
 * kept), -EBADMSG when the message or its fds were cut short (none kept), or -errno. */
ssize_t al_recv_fds(int sock, void *buf, size_t len, int *fds, size_t max);

/* Whether the process at the other end of the connected Unix socket fd (the one that connected,
 * by SO_PEERPIDFD) lives in this process's own pid namespace: 1 yes, 0 no (a process of a
 * sandbox, or of any namespace below or beside this one), or -errno when it cannot be told:
 * -EOPNOTSUPP without SO_PEERPIDFD (Linux < 6.5) or when /proc is not of this process's pid
 * namespace, -ESRCH when the peer has exited. Callers refuse the peer unless it returns 1.
 * The pidfd's fdinfo ("NSpid:", as seen from /proc's namespace) answers this without the ptrace
 * access PIDFD_GET_PID_NAMESPACE needs, which a daemon of an unprivileged user lacks over its
 * non-dumpable clients and over other uids. */
int al_socket_peer_in_my_pidns(int fd);

/* From the text of a pidfd's /proc fdinfo: how many pid namespaces the process is deep below the
 * one of that /proc, plus one (the number of "NSpid:" fields: 1 = the same namespace), 0 when it
 * is not in that namespace's tree, -ESRCH when it has exited, -EOPNOTSUPP without an NSpid line,
 * -EBADMSG for a malformed one. */
int al_fdinfo_pid_depth(const char *fdinfo);

/* A Unix stream socket listening at a path of its own. */
struct al_unix_listener {
	int fd; /* non-blocking, close-on-exec */
	char path[108];
	dev_t dev;
	ino_t ino; /* the socket file: at the end it is removed only if it still is this one */
	bool bound;
};

/* Listens at path (its folder made 0755 if missing), mode 0600, and grants each uid of allow
 * (other than this process's) read and write by a POSIX access ACL, the mode staying 0600 for
 * everyone else. A socket left at path by a process that no longer serves is replaced;
 * -EADDRINUSE when one serves there; any other file there is an error. what names it in
 * messages ("broker socket"). */
int al_unix_listen(const char *path, const uid_t *allow, size_t n_allow, const char *what,
		   struct al_unix_listener *ret, struct al_error *err);
/* Closes it and removes its file, unless another has taken its place. */
void al_unix_listener_close(struct al_unix_listener *l);
