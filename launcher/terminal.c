#define LOG_MODULE "launcher"

/* A terminal for the command (`airlock run -t`, `session exec -t`). The pty pair is the
 * sandbox's: its pid 1 opens it from the sandbox's own devpts, so the command's terminal is a
 * /dev/pts/N of the sandbox (ttyname() finds it there), and only the master leaves the sandbox.
 * The command's terminal starts with the modes and size of airlock's; airlock's own terminal is
 * put in raw mode while the command runs, so that every key (Ctrl-C, Ctrl-Z, Ctrl-\ too) reaches
 * the sandbox's line discipline, which acts on it as the host's would; and it is restored on
 * every way out of the run. */

#include <fcntl.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "common/fd-util.h"
#include "common/log.h"
#include "launcher/launcher-internal.h"

void launcher_terminal_init(struct launcher_terminal *t)
{
	*t = (struct launcher_terminal){.fd = -EBADF};
	/* Modes come from stdin's terminal (what the user types into); the size from the first
	 * of stdin, stdout, stderr that is one. */
	if (tcgetattr(STDIN_FILENO, &t->spec.modes) == 0) {
		t->fd = STDIN_FILENO;
		t->spec.has_modes = true;
	}
	for (int fd = STDIN_FILENO; fd <= STDERR_FILENO; fd++)
		if (ioctl(fd, TIOCGWINSZ, &t->spec.size) == 0 && t->spec.size.ws_row > 0) {
			t->size_fd = fd;
			return;
		}
	t->spec.size = (struct winsize){.ws_row = 24, .ws_col = 80};
	t->size_fd = -EBADF;
}

int launcher_terminal_raw(struct launcher_terminal *t)
{
	struct termios raw;

	/* A run in the background leaves the foreground's terminal as it is. */
	if (!t->spec.has_modes || tcgetpgrp(t->fd) != getpgrp())
		return 0;
	raw = t->spec.modes;
	cfmakeraw(&raw);
	if (tcsetattr(t->fd, TCSADRAIN, &raw) < 0)
		return -errno;
	t->raw = true;
	return 0;
}

bool launcher_terminal_follow(struct launcher_terminal *t)
{
	if (!t->spec.has_modes)
		return true;
	if (tcgetpgrp(t->fd) != getpgrp())
		return false;
	if (!t->raw && launcher_terminal_raw(t) < 0)
		log_warning_errno(-errno, "Failed to put the terminal in raw mode: %m");
	return true;
}

void launcher_terminal_restore(struct launcher_terminal *t)
{
	if (!t->raw)
		return;
	/* Once the output is out, input not read by now is dropped: it was typed for the
	 * command, or it is the terminal's answer to a query the command wrote, which must not
	 * become input to the shell that airlock returns to. */
	if (tcsetattr(t->fd, TCSAFLUSH, &t->spec.modes) < 0)
		log_warning_errno(-errno, "Failed to restore the terminal's modes: %m");
	t->raw = false;
}

void launcher_terminal_resize(struct launcher_terminal *t, int master)
{
	struct winsize ws;

	if (t->size_fd < 0 || ioctl(t->size_fd, TIOCGWINSZ, &ws) < 0)
		return;
	t->spec.size = ws;
	/* The kernel sends SIGWINCH to the terminal's foreground process group. */
	if (master >= 0)
		(void)ioctl(master, TIOCSWINSZ, &ws);
}

int launcher_terminal_relay(struct launcher_terminal *t, int master, int input,
			    struct launcher_buffer *capture, struct launcher_stream *out,
			    struct launcher_stream *in)
{
	int out_fd = -EBADF, in_fd = -EBADF, r;

	out_fd = fcntl(master, F_DUPFD_CLOEXEC, 3);
	if (out_fd >= 0)
		in_fd = fcntl(master, F_DUPFD_CLOEXEC, 3);
	r = in_fd < 0 ? -errno : al_fd_nonblock(out_fd, true);
	launcher_stream_close(out);
	launcher_stream_init(out, out_fd, true, STDOUT_FILENO, false, capture,
			     LAUNCHER_CAPTURE_MAX);
	launcher_stream_open_nonblocking(out);
	launcher_stream_close(in);
	launcher_stream_init(in, input, false, in_fd, true, NULL, 0);
	launcher_stream_open_nonblocking(in);
	return r < 0 ? r : launcher_terminal_raw(t);
}

void launcher_terminal_pass_eof(struct launcher_terminal *t, int master,
				const struct launcher_stream *in)
{
	struct termios tio;
	char eof[2];

	if (master < 0 || t->eof_typed || t->spec.has_modes || !launcher_stream_done(in))
		return;
	t->eof_typed = true;
	/* Twice: after a last line without its newline, the first only passes that line on. */
	if (tcgetattr(master, &tio) < 0 || tio.c_cc[VEOF] == _POSIX_VDISABLE)
		return;
	eof[0] = eof[1] = (char)tio.c_cc[VEOF];
	(void)!write(master, eof, sizeof(eof));
}

int launcher_pty_open(const struct launcher_tty_spec *spec, int *ret_master, char tty[static 32],
		      struct al_error *err)
{
	_cleanup_close_ int master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
	struct termios tio;
	unsigned index;
	int unlock = 0;

	if (master < 0)
		return al_error_set_errno(err, -errno, "Failed to open the sandbox's /dev/ptmx");
	if (ioctl(master, TIOCSPTLCK, &unlock) < 0 || ioctl(master, TIOCGPTN, &index) < 0)
		return al_error_set_errno(err, -errno, "Failed to set up a terminal");
	/* On a master, the terminal ioctls act on its slave. Without the caller's modes (its
	 * input is no terminal), the kernel's, but for flow control: a ^S byte in piped input
	 * would stop the command's output for good. */
	if (spec->has_modes) {
		tio = spec->modes;
	} else if (tcgetattr(master, &tio) == 0) {
		tio.c_iflag &= ~(tcflag_t)(IXON | IXOFF);
	} else {
		return al_error_set_errno(err, -errno, "Failed to read the terminal's modes");
	}
	if (tcsetattr(master, TCSANOW, &tio) < 0)
		return al_error_set_errno(err, -errno, "Failed to set the terminal's modes");
	if (ioctl(master, TIOCSWINSZ, &spec->size) < 0)
		return al_error_set_errno(err, -errno, "Failed to set the terminal's size");
	(void)snprintf(tty, 32, "/dev/pts/%u", index);
	*ret_master = TAKE_FD(master);
	return 0;
}
