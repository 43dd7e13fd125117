#define LOG_MODULE "launcher"

#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "common/fd-util.h"
#include "launcher/launcher-internal.h"

uint64_t launcher_now_usec(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

int launcher_sync_send(int fd, const struct launcher_sync_msg *m, int pass_fd)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} control = {0};
	struct iovec iov = {.iov_base = (void *)m, .iov_len = sizeof(*m)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	ssize_t n;

	if (pass_fd >= 0) {
		struct cmsghdr *c;

		mh.msg_control = control.buf;
		mh.msg_controllen = sizeof(control.buf);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
	}
	do
		n = sendmsg(fd, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return (size_t)n == sizeof(*m) ? 0 : -EIO;
}

int launcher_sync_recv(int fd, struct launcher_sync_msg *m, int *ret_fd)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} control = {0};
	struct iovec iov = {.iov_base = m, .iov_len = sizeof(*m)};
	struct msghdr mh = {
	    .msg_iov = &iov,
	    .msg_iovlen = 1,
	    .msg_control = control.buf,
	    .msg_controllen = sizeof(control.buf),
	};
	int passed = -EBADF;
	ssize_t n;

	do
		n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
		    c->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(&passed, CMSG_DATA(c), sizeof(int));
	if (n == 0) {
		passed = al_close(passed);
		return -EPIPE;
	}
	if ((size_t)n != sizeof(*m) || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ||
	    m->n_steps > LAUNCHER_SYNC_STEPS) {
		passed = al_close(passed);
		return -EBADMSG;
	}
	m->err.msg[sizeof(m->err.msg) - 1] = '\0';
	for (uint32_t i = 0; i < m->n_steps; i++)
		m->steps[i].name[sizeof(m->steps[i].name) - 1] = '\0';
	if (ret_fd)
		*ret_fd = passed;
	else
		passed = al_close(passed);
	return 0;
}

int launcher_sync_expect(int r, const struct launcher_sync_msg *m, uint32_t want, const char *who,
			 struct al_error *err)
{
	if (r == -EPIPE)
		return al_error_set(err, -ECHILD, "The %s died while being set up", who);
	if (r < 0)
		return al_error_set_errno(err, r, "Failed to hear from the %s", who);
	if (m->type == LAUNCHER_SYNC_ERROR) {
		*err = m->err;
		return m->value < 0 ? m->value : -EIO;
	}
	if (m->type != want)
		return al_error_set(err, -EBADMSG, "Unexpected message from the %s", who);
	return 0;
}
