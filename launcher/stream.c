#define LOG_MODULE "launcher"

/* The supervisor copies the sandbox's output to airlock's stdout/stderr (or captures it), and a
 * terminal's input to the sandbox's stdin pipe. It must never block in a write: the timeout, the
 * seccomp notifications and signals are served by the same loop. So each stream holds at most one
 * chunk, reads only when that chunk is empty, and writes without blocking:
 *  - a pipe, terminal or other device is reopened through /proc/self/fd with O_NONBLOCK: a file
 *    description of airlock's own, so the caller's (shared with the shell, other commands) keeps
 *    its flags;
 *  - a socket, which cannot be reopened, is written with send(MSG_DONTWAIT);
 *  - a regular file is written as it is (keeping its offset and O_APPEND), since it never waits
 *    for a reader;
 *  - anything else that cannot be reopened gets at most PIPE_BUF bytes after each POLLOUT. */

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fd-util.h"
#include "common/log.h"
#include "launcher/launcher-internal.h"

void launcher_stream_open_nonblocking(struct launcher_stream *s)
{
	char path[64];
	struct stat st;
	int fd;

	if (s->to < 0 || s->capture || fstat(s->to, &st) < 0)
		return;
	if (S_ISREG(st.st_mode)) {
		s->nonblocking = true;
		return;
	}
	if (S_ISSOCK(st.st_mode)) {
		s->nonblocking = s->use_send = true;
		return;
	}
	if (s->owns_to) {
		s->nonblocking = al_fd_nonblock(s->to, true) >= 0;
		return;
	}
	(void)snprintf(path, sizeof(path), "/proc/self/fd/%d", s->to);
	fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return;
	s->to = fd;
	s->owns_to = s->nonblocking = true;
}

void launcher_stream_init(struct launcher_stream *s, int from, bool owns_from, int to, bool owns_to,
			  struct launcher_buffer *capture, size_t capture_max)
{
	/* Everything but the chunk's buffer: zeroing its 64 KiB would fault in every page of it
	 * (a fresh thread's stack in serve, at 16 us a page in some VMs) for nothing. */
	memset(s, 0, offsetof(struct launcher_stream, buf));
	s->from = from;
	s->to = to;
	s->owns_from = owns_from;
	s->owns_to = owns_to;
	s->capture = capture;
	s->capture_max = capture_max;
}

static void close_from(struct launcher_stream *s)
{
	if (s->owns_from)
		(void)al_close(s->from);
	s->from = -EBADF;
}

static void drop_chunk(struct launcher_stream *s)
{
	s->redacted = broker_secret_free(s->redacted);
	s->len = s->off = 0;
}

static void close_to(struct launcher_stream *s)
{
	if (s->owns_to)
		(void)al_close(s->to);
	s->to = -EBADF;
	drop_chunk(s);
}

void launcher_stream_close(struct launcher_stream *s)
{
	close_from(s);
	close_to(s);
}

bool launcher_stream_done(const struct launcher_stream *s)
{
	return s->from < 0 && s->len == 0;
}

void launcher_stream_redact(struct launcher_stream *s, struct broker_client *broker,
			    unsigned stream)
{
	s->broker = broker;
	s->broker_stream = stream;
}

void launcher_stream_poll(const struct launcher_stream *s, struct pollfd *in, struct pollfd *out)
{
	*in = (struct pollfd){.fd = -1};
	*out = (struct pollfd){.fd = -1};
	if (s->len > 0)
		*out = (struct pollfd){.fd = s->to, .events = POLLOUT};
	else if (s->from >= 0)
		*in = (struct pollfd){.fd = s->from, .events = POLLIN};
}

static void capture(struct launcher_stream *s, const char *data, size_t n)
{
	struct launcher_buffer *b = s->capture;
	size_t take = b->len < s->capture_max ? MIN(n, s->capture_max - b->len) : 0;
	char *d;

	if (take > 0) {
		d = realloc(b->data, b->len + take + 1);
		if (!d) {
			b->truncated = true;
			return;
		}
		b->data = d;
		memcpy(d + b->len, data, take);
		b->len += take;
		d[b->len] = '\0';
	}
	if (take < n)
		b->truncated = true;
}

static void on_writable(struct launcher_stream *s, short revents)
{
	ssize_t n = -1;

	if (revents & POLLOUT) {
		size_t want = s->len - s->off;

		if (!s->nonblocking)
			want = MIN(want, (size_t)PIPE_BUF);
		if (s->use_send)
			n = send(s->to, s->data + s->off, want, MSG_DONTWAIT | MSG_NOSIGNAL);
		else
			n = write(s->to, s->data + s->off, want);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			return;
	}
	if (n <= 0) {
		/* The reader is gone: stop reading, so the writer learns it too. */
		close_from(s);
		close_to(s);
		return;
	}
	s->off += (size_t)n;
	if (s->off < s->len)
		return;
	drop_chunk(s);
	if (s->eof)
		close_to(s);
}

/* Passes n bytes at data on: into the capture, or as the chunk to write. */
static void deliver(struct launcher_stream *s, const char *data, size_t n)
{
	if (s->capture) {
		capture(s, data, n);
		drop_chunk(s);
		return;
	}
	if (n == 0) {
		drop_chunk(s);
		if (s->eof)
			close_to(s);
		return;
	}
	s->data = data;
	s->off = 0;
	s->len = n;
	/* A write that cannot block need not wait for the next poll() to say POLLOUT. */
	if (s->nonblocking)
		on_writable(s, POLLOUT);
}

/* The chunk with the real values of the broker's session redacted; at the end of the stream
 * (n == 0) what the redaction held back. If the broker cannot redact, the output is withheld:
 * a real value must not get through because the broker failed. */
static void redact(struct launcher_stream *s, size_t n)
{
	struct al_error err = {0};
	int r;

	r = broker_client_redact(s->broker, s->broker_stream, s->buf, n, s->eof, &s->redacted,
				 &err);
	explicit_bzero(s->buf, n);
	if (r < 0) {
		log_warning_errno(r, "Output withheld: the broker cannot redact it: %s", err.msg);
		s->broker = NULL;
		close_from(s);
		s->eof = true;
		deliver(s, NULL, 0);
		return;
	}
	deliver(s, s->redacted->data, s->redacted->len);
}

static void on_readable(struct launcher_stream *s)
{
	ssize_t n = read(s->from, s->buf, sizeof(s->buf));

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		/* EOF (or an error, which ends the stream the same way): pass the EOF on. */
		close_from(s);
		s->eof = true;
		n = 0;
	}
	if (s->broker) {
		redact(s, (size_t)n);
		return;
	}
	deliver(s, s->buf, (size_t)n);
}

void launcher_stream_handle(struct launcher_stream *s, short in_revents, short out_revents)
{
	if (s->len > 0 && out_revents)
		on_writable(s, out_revents);
	else if (s->len == 0 && s->from >= 0 && in_revents)
		on_readable(s);
}
