#define LOG_MODULE "launcher"

#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "common/fd-util.h"
#include "common/socket-util.h"
#include "launcher/launcher-internal.h"

uint64_t launcher_now_usec(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

int launcher_sync_send_fds(int fd, const struct launcher_sync_msg *m, const int *fds, size_t n)
{
	return al_send_fds(fd, m, sizeof(*m), fds, n);
}

int launcher_sync_send(int fd, const struct launcher_sync_msg *m, int pass_fd)
{
	return launcher_sync_send_fds(fd, m, &pass_fd, pass_fd >= 0 ? 1 : 0);
}

int launcher_sync_recv_fds(int fd, struct launcher_sync_msg *m, int *fds, size_t max)
{
	ssize_t n = al_recv_fds(fd, m, sizeof(*m), fds, max);

	if (n >= 0 && ((size_t)n != sizeof(*m) || m->n_steps > LAUNCHER_SYNC_STEPS)) {
		for (size_t i = 0; i < max; i++)
			fds[i] = al_close(fds[i]);
		n = -EBADMSG;
	}
	if (n < 0)
		return (int)n;
	m->err.msg[sizeof(m->err.msg) - 1] = '\0';
	for (uint32_t i = 0; i < m->n_steps; i++)
		m->steps[i].name[sizeof(m->steps[i].name) - 1] = '\0';
	return 0;
}

int launcher_sync_recv(int fd, struct launcher_sync_msg *m, int *ret_fd)
{
	int passed = -EBADF, r;

	r = launcher_sync_recv_fds(fd, m, &passed, 1);
	if (r >= 0 && ret_fd)
		*ret_fd = passed;
	else
		(void)al_close(passed);
	return r;
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
