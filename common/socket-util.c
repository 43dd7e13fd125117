#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/fd-util.h"
#include "common/macro.h"
#include "common/socket-util.h"

int al_send_fds(int sock, const void *buf, size_t len, const int *fds, size_t n)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * AL_FDS_MAX)];
	} control = {0};
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	ssize_t k;

	if (n > AL_FDS_MAX)
		return -EINVAL;
	if (n > 0) {
		struct cmsghdr *c;

		mh.msg_control = control.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * n);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * n);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
	}
	do
		k = sendmsg(sock, &mh, MSG_NOSIGNAL);
	while (k < 0 && errno == EINTR);
	if (k < 0)
		return -errno;
	return (size_t)k == len ? 0 : -EIO;
}

ssize_t al_recv_fds(int sock, void *buf, size_t len, int *fds, size_t max)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * AL_FDS_MAX)];
	} control = {0};
	struct iovec iov = {.iov_base = buf, .iov_len = len};
	struct msghdr mh = {
	    .msg_iov = &iov,
	    .msg_iovlen = 1,
	    .msg_control = control.buf,
	    .msg_controllen = sizeof(control.buf),
	};
	size_t got = 0;
	ssize_t k;

	for (size_t i = 0; i < max; i++)
		fds[i] = -EBADF;
	do
		k = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (k < 0 && errno == EINTR);
	if (k < 0)
		return -errno;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (got < max)
				fds[got++] = fd;
			else
				(void)al_close(fd);
		}
	}
	if (k == 0 || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
		for (size_t i = 0; i < got; i++)
			fds[i] = al_close(fds[i]);
		return k == 0 ? -EPIPE : -EBADMSG;
	}
	return k;
}

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77 /* Linux 6.5 */
#endif

int al_fdinfo_pid_depth(const char *fdinfo)
{
	const char *p = startswith(fdinfo, "NSpid:");
	long first;
	char *end;
	int n = 0;

	if (!p) {
		p = strstr(fdinfo, "\nNSpid:");
		if (!p)
			return -EOPNOTSUPP;
		p += strlen("\nNSpid:");
	}
	first = strtol(p, &end, 10);
	if (end == p)
		return -EBADMSG;
	if (first < 0)
		return -ESRCH;
	if (first == 0)
		return 0;
	for (n = 1, p = end; *p == '\t' || *p == ' ';) {
		long v = strtol(p, &end, 10);

		if (end == p)
			break;
		if (v <= 0)
			return -EBADMSG;
		n++;
		p = end;
	}
	return n;
}

/* The depth of pidfd's process below the pid namespace of /proc (see al_fdinfo_pid_depth()). */
static int pidfd_depth(int pidfd)
{
	_cleanup_free_ char *text = NULL;
	char path[64];
	int r;

	(void)snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
	r = al_read_file_at(AT_FDCWD, path, 4096, &text, NULL);
	return r < 0 ? r : al_fdinfo_pid_depth(text);
}

int al_socket_peer_in_my_pidns(int fd)
{
	_cleanup_close_ int peer = -EBADF, self = -EBADF;
	socklen_t len = sizeof(peer);
	int r;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &peer, &len) < 0)
		return errno == ENOPROTOOPT ? -EOPNOTSUPP : -errno;
	/* /proc must be this process's own pid namespace's for the peer's depth to say anything. */
	self = (int)syscall(SYS_pidfd_open, getpid(), 0);
	if (self < 0)
		return -errno;
	r = pidfd_depth(self);
	if (r < 0)
		return r;
	if (r != 1)
		return -EOPNOTSUPP;
	r = pidfd_depth(peer);
	return r < 0 ? r : r == 1;
}
