#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/xattr.h>
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

static int uid_compare(const void *a, const void *b)
{
	uid_t x = *(const uid_t *)a, y = *(const uid_t *)b;

	return x < y ? -1 : x > y;
}

static unsigned char *acl_entry(unsigned char *p, uint16_t tag, uint16_t perm, uint32_t id)
{
	memcpy(p, &tag, 2);
	memcpy(p + 2, &perm, 2);
	memcpy(p + 4, &id, 4);
	return p + 8;
}

#define GRANT_MAX 64

/* The access ACL in the kernel's xattr form: a version, then entries (tag, permissions, id)
 * sorted by tag and, for named users, by uid. */
static int grant_uids(const char *path, const uid_t *allow, size_t n_allow, const char *what,
		      struct al_error *err)
{
	unsigned char acl[4 + 8 * (4 + GRANT_MAX)], *p = acl;
	uid_t uids[GRANT_MAX];
	uint32_t version = 2;
	size_t n = 0;

	for (size_t i = 0; i < n_allow; i++) {
		if (allow[i] == geteuid())
			continue;
		if (n == GRANT_MAX)
			return al_error_set(err, -E2BIG, "%s: at most %d uids may be allowed", what,
					    GRANT_MAX);
		uids[n++] = allow[i];
	}
	if (n == 0)
		return 0;
	qsort(uids, n, sizeof(*uids), uid_compare);
	memcpy(p, &version, 4);
	p = acl_entry(p + 4, 0x01, 6, UINT32_MAX); /* the owner */
	for (size_t i = 0; i < n; i++)
		if (i == 0 || uids[i] != uids[i - 1])
			p = acl_entry(p, 0x02, 6, uids[i]);
	p = acl_entry(p, 0x04, 0, UINT32_MAX); /* the owning group */
	p = acl_entry(p, 0x10, 6, UINT32_MAX); /* the mask */
	p = acl_entry(p, 0x20, 0, UINT32_MAX); /* others */
	if (setxattr(path, "system.posix_acl_access", acl, (size_t)(p - acl), 0) < 0)
		return al_error_set_errno(
		    err, -errno, "%s %s: cannot grant the allowed uids access (a POSIX ACL)", what,
		    path);
	return 0;
}

int al_unix_listen(const char *path, const uid_t *allow, size_t n_allow, const char *what,
		   struct al_unix_listener *ret, struct al_error *err)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct al_unix_listener l = {.fd = -EBADF};
	char dir[sizeof(sa.sun_path)], *slash;
	struct stat st;
	mode_t old;
	int fd, r;

	if (strlen(path) >= sizeof(sa.sun_path))
		return al_error_set(err, -ENAMETOOLONG, "%s %s: name too long", what, path);
	strcpy(sa.sun_path, path);
	strcpy(l.path, path);
	strcpy(dir, path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			return al_error_set_errno(err, -errno, "Failed to create %s", dir);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return al_error_set_errno(err, -errno, "Failed to create a socket");
	/* Another one may already serve there; a socket nobody serves is left by a dead one. */
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		(void)al_close(fd);
		return al_error_set(err, -EADDRINUSE, "%s %s: another process serves there", what,
				    path);
	}
	/* Only a socket is replaced: a path naming any other file is a mistake to report. */
	if (errno == ECONNREFUSED && lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
		(void)unlink(path);
	(void)al_close(fd);
	l.fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (l.fd < 0)
		return al_error_set_errno(err, -errno, "Failed to create a socket");
	old = umask(0177);
	r = RET_NERRNO(bind(l.fd, (struct sockaddr *)&sa, sizeof(sa)));
	(void)umask(old);
	if (r < 0) {
		(void)al_close(l.fd);
		return al_error_set_errno(err, r, "%s %s: cannot bind", what, path);
	}
	if (lstat(path, &st) == 0) {
		l.bound = true;
		l.dev = st.st_dev;
		l.ino = st.st_ino;
	}
	r = grant_uids(path, allow, n_allow, what, err);
	if (r >= 0 && listen(l.fd, 128) < 0)
		r = al_error_set_errno(err, -errno, "%s %s: cannot listen", what, path);
	if (r < 0) {
		al_unix_listener_close(&l);
		return r;
	}
	*ret = l;
	return 0;
}

void al_unix_listener_close(struct al_unix_listener *l)
{
	struct stat st;

	if (l->bound && lstat(l->path, &st) == 0 && st.st_dev == l->dev && st.st_ino == l->ino)
		(void)unlink(l->path);
	l->bound = false;
	l->fd = al_close(l->fd);
}
