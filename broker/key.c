#define LOG_MODULE "broker"

/* Where the vault is, and the key that opens it: a key file, a passphrase file, or a passphrase
 * typed on the terminal without echo. Every byte of key material is read straight into
 * sodium_malloc'd memory, which is wiped when freed. */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include <sodium.h>

#include "broker/broker-internal.h"
#include "common/fd-util.h"
#include "common/log.h"
#include "common/path-util.h"

#define KEY_SIZE 32
#define KEY_HEX_SIZE (2 * KEY_SIZE)
#define PASSPHRASE_MAX 1024
#define NO_KEY_HINT                                                                                \
	"no passphrase: set AIRLOCK_PASSPHRASE_FILE, pass --key-file, or run on a terminal"

/* ---- the vault's path ---- */

int broker_vault_path(const char *opt, char **ret, struct al_error *err)
{
	const char *env = getenv("AIRLOCK_VAULT");
	char dir[PATH_MAX];
	char *p = NULL;
	int r = 0;

	if (opt && opt[0] == '\0')
		return al_error_set(err, -EINVAL, "--vault: the path is empty");
	if (opt)
		p = strdup(opt);
	else if (env && env[0] != '\0')
		p = strdup(env);
	else if (al_state_dir(AL_STATE_DATA, dir, sizeof(dir)) >= 0)
		r = asprintf(&p, "%s/vault", dir);
	else
		return al_error_set(err, -ENOENT,
				    "cannot tell where the vault is: no --vault, AIRLOCK_VAULT, "
				    "XDG_DATA_HOME or home folder");
	if (r < 0 || !p)
		return -ENOMEM;
	*ret = p;
	return 0;
}

/* ---- reading key material ---- */

struct broker_key *broker_key_free(struct broker_key *k)
{
	if (!k)
		return NULL;
	broker_secret_free(k->material);
	free(k);
	return NULL;
}

/* Drops one trailing newline; refuses an empty passphrase. */
static int finish_passphrase(struct broker_secret *s)
{
	if (s->len > 0 && s->data[s->len - 1] == '\n')
		s->data[--s->len] = '\0';
	return s->len > 0 ? 0 : -ENODATA;
}

/* A key file holds the key itself: only its owner (or root) may have any access to it, as
 * anyone who can read it can open the vault, and anyone who can write it can make a new vault
 * be encrypted under a key they know. */
static int check_key_file(const char *path, int fd, struct al_error *err)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return al_error_set_errno(err, -errno, "key file %s", path);
	if (!S_ISREG(st.st_mode))
		return al_error_set(err, -EACCES, "key file %s is not a regular file", path);
	if ((st.st_mode & 0077) != 0)
		return al_error_set(err, -EACCES,
				    "key file %s has mode %04o: it must be private to its owner "
				    "(chmod 600)",
				    path, (unsigned)(st.st_mode & 07777));
	if (st.st_uid != geteuid() && st.st_uid != 0)
		return al_error_set(err, -EACCES, "key file %s belongs to uid %u, not to uid %u",
				    path, (unsigned)st.st_uid, (unsigned)geteuid());
	return 0;
}

/* The key in a key file's bytes: 32 raw bytes, or 64 hex digits and an optional newline. */
static bool decode_key(const struct broker_secret *in, unsigned char *out)
{
	const char *end = NULL;
	size_t bin_len = 0;

	if (in->len == KEY_SIZE) {
		memcpy(out, in->data, KEY_SIZE);
		return true;
	}
	if (in->len != KEY_HEX_SIZE &&
	    !(in->len == KEY_HEX_SIZE + 1 && in->data[KEY_HEX_SIZE] == '\n'))
		return false;
	return sodium_hex2bin(out, KEY_SIZE, in->data, KEY_HEX_SIZE, NULL, &bin_len, &end) == 0 &&
	       bin_len == KEY_SIZE && end == in->data + KEY_HEX_SIZE;
}

static int read_key_file(const char *path, struct broker_secret **ret, struct al_error *err)
{
	_cleanup_(broker_secret_freep) struct broker_secret *buf = NULL, *key = NULL;
	_cleanup_close_ int fd = -EBADF;
	int r;

	/* No symbolic link: one planted on the way would make any file the key. O_NONBLOCK: a
	 * FIFO must not hang the open. */
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 && errno == ELOOP)
		return al_error_set(err, -EACCES, "key file %s is a symbolic link", path);
	if (fd < 0)
		return al_error_set_errno(err, -errno, "key file %s", path);
	r = check_key_file(path, fd, err);
	if (r < 0)
		return r;
	r = broker_secret_read_fd(fd, KEY_HEX_SIZE + 1, &buf);
	if (r == -ENOMEM)
		return r;
	if (r == -EFBIG)
		return al_error_set(
		    err, -EINVAL, "key file %s is too long: a key is 32 raw bytes or 64 hex digits",
		    path);
	if (r < 0)
		return al_error_set_errno(err, r, "key file %s", path);
	key = broker_secret_new(KEY_SIZE);
	if (!key)
		return -ENOMEM;
	if (!decode_key(buf, (unsigned char *)key->data))
		return al_error_set(err, -EINVAL,
				    "key file %s holds %zu bytes: a key is 32 raw bytes or 64 hex "
				    "digits",
				    path, buf->len);
	*ret = TAKE_PTR(key);
	return 0;
}

/* A passphrase from the file path, which the setting named by option names. */
static int read_passphrase_file(const char *path, const char *option, struct broker_secret **ret,
				struct al_error *err)
{
	_cleanup_(broker_secret_freep) struct broker_secret *s = NULL;
	_cleanup_close_ int fd = -EBADF;
	struct stat st;
	int r;

	fd = open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return al_error_set_errno(err, -errno, "passphrase file %s (%s)", path, option);
	if (fstat(fd, &st) < 0)
		return al_error_set_errno(err, -errno, "passphrase file %s", path);
	if (!S_ISREG(st.st_mode))
		return al_error_set(err, -EINVAL, "passphrase file %s (%s) is not a regular file",
				    path, option);
	r = broker_secret_read_fd(fd, PASSPHRASE_MAX + 1, &s); /* + 1: its newline */
	if (r >= 0)
		r = finish_passphrase(s);
	if (r == -ENOMEM)
		return r;
	if (r == -EFBIG || (r >= 0 && s->len > PASSPHRASE_MAX))
		return al_error_set(err, -EFBIG, "passphrase file %s is longer than %d bytes", path,
				    PASSPHRASE_MAX);
	if (r == -ENODATA)
		return al_error_set(err, -EINVAL, "passphrase file %s is empty", path);
	if (r < 0)
		return al_error_set_errno(err, r, "passphrase file %s", path);
	*ret = TAKE_PTR(s);
	return 0;
}

/* ---- the terminal prompt ---- */

/* The signal that ended a prompt. A handler can only talk through a global: it records the
 * signal, and the prompt gives the terminal its echo back before the signal takes its course. */
static volatile sig_atomic_t prompt_signal;

static void on_prompt_signal(int sig)
{
	prompt_signal = sig;
}

/* Signals that end a prompt (unless ignored), and signals held until it is over (a stopped
 * prompt would leave the shell a terminal without echo). */
static const int prompt_end_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
static const int prompt_held_signals[] = {SIGTSTP, SIGTTIN, SIGTTOU};

struct prompt_state {
	int tty;
	struct termios saved;
	sigset_t saved_mask, wait_mask;
	struct sigaction saved_actions[ELEMENTSOF(prompt_end_signals)];
};

/* Holds the signals, turns echo off, and catches the ending signals. On failure everything is
 * as it was. */
static int prompt_begin(struct prompt_state *st)
{
	struct sigaction sa = {.sa_handler = on_prompt_signal}; /* no SA_RESTART */
	struct termios noecho;
	sigset_t block;

	if (tcgetattr(st->tty, &st->saved) < 0)
		return -errno;
	(void)sigemptyset(&block);
	for (size_t i = 0; i < ELEMENTSOF(prompt_end_signals); i++)
		(void)sigaddset(&block, prompt_end_signals[i]);
	for (size_t i = 0; i < ELEMENTSOF(prompt_held_signals); i++)
		(void)sigaddset(&block, prompt_held_signals[i]);
	if (sigprocmask(SIG_BLOCK, &block, &st->saved_mask) < 0)
		return -errno;
	noecho = st->saved;
	noecho.c_lflag &= ~(tcflag_t)(ECHO | ECHONL);
	/* TCSAFLUSH: what was typed ahead (and echoed) before the prompt is not taken. */
	if (tcsetattr(st->tty, TCSAFLUSH, &noecho) < 0) {
		int r = -errno;

		(void)sigprocmask(SIG_SETMASK, &st->saved_mask, NULL);
		return r;
	}
	/* The ending signals arrive only while waiting for input (ppoll's mask), never between a
	 * check of prompt_signal and a blocking read. */
	st->wait_mask = st->saved_mask;
	for (size_t i = 0; i < ELEMENTSOF(prompt_held_signals); i++)
		(void)sigaddset(&st->wait_mask, prompt_held_signals[i]);
	prompt_signal = 0;
	(void)sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < ELEMENTSOF(prompt_end_signals); i++) {
		(void)sigaction(prompt_end_signals[i], NULL, &st->saved_actions[i]);
		if (st->saved_actions[i].sa_handler != SIG_IGN)
			(void)sigaction(prompt_end_signals[i], &sa, NULL);
	}
	return 0;
}

/* Restores echo, then the signal handlers and mask. A signal that ended the prompt is raised
 * again, so that it has the effect it would have had: returns -EINTR if the process survives. */
static int prompt_end(struct prompt_state *st)
{
	int sig;

	/* TCSAFLUSH: input left unread (the rest of an overlong line) must not reach the shell. */
	(void)tcsetattr(st->tty, TCSAFLUSH, &st->saved);
	for (size_t i = 0; i < ELEMENTSOF(prompt_end_signals); i++)
		(void)sigaction(prompt_end_signals[i], &st->saved_actions[i], NULL);
	sig = prompt_signal;
	if (sig != 0)
		(void)raise(sig); /* pending until the mask is restored */
	(void)sigprocmask(SIG_SETMASK, &st->saved_mask, NULL);
	return sig != 0 ? -EINTR : 0;
}

/* Writes prompt and reads one line (without its newline) from the terminal. */
static int prompt_read(struct prompt_state *st, const char *prompt, struct broker_secret **ret)
{
	_cleanup_(broker_secret_freep) struct broker_secret *s = NULL;
	bool too_long = false;
	char c = 0;
	ssize_t n;
	int r;

	s = broker_secret_new(PASSPHRASE_MAX);
	if (!s)
		return -ENOMEM;
	s->len = 0;
	r = al_write_all(st->tty, prompt, strlen(prompt));
	if (r < 0)
		return r;
	for (;;) {
		struct pollfd p = {.fd = st->tty, .events = POLLIN};

		if (ppoll(&p, 1, NULL, &st->wait_mask) < 0) {
			if (errno == EINTR && prompt_signal == 0)
				continue;
			r = -errno;
			break;
		}
		n = read(st->tty, &c, 1);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			r = -errno;
		if (n <= 0 || c == '\n')
			break;
		if (s->len == PASSPHRASE_MAX)
			too_long = true; /* read on to the end of the line, keeping nothing */
		else
			s->data[s->len++] = c;
	}
	sodium_memzero(&c, sizeof(c));
	s->data[s->len] = '\0';
	(void)al_write_all(st->tty, "\n", 1); /* the newline the user typed was not echoed */
	if (r < 0)
		return r;
	if (too_long)
		return -EFBIG;
	if (s->len == 0)
		return -ENODATA;
	*ret = TAKE_PTR(s);
	return 0;
}

/* A passphrase typed on the terminal after prompt (twice when confirm); -ENOKEY with no_tty as
 * the message when there is no terminal. */
static int prompt_passphrase(const char *prompt, bool confirm, const char *no_tty,
			     struct broker_secret **ret, struct al_error *err)
{
	_cleanup_(broker_secret_freep) struct broker_secret *s = NULL, *again = NULL;
	struct prompt_state st = {.tty = -EBADF};
	_cleanup_close_ int tty = -EBADF;
	int r;

	tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (tty < 0)
		return al_error_set(err, -ENOKEY, "%s", no_tty);
	st.tty = tty;
	r = prompt_begin(&st);
	if (r < 0)
		return al_error_set(err, -ENOKEY, "%s (cannot turn its echo off: %s)", no_tty,
				    strerror(-r));
	r = prompt_read(&st, prompt, &s);
	if (r >= 0 && confirm)
		r = prompt_read(&st, "Repeat the passphrase: ", &again);
	if (prompt_end(&st) < 0 || r == -EINTR)
		return al_error_set(err, -EINTR, "interrupted while asking for the passphrase");
	if (r == -ENODATA)
		return al_error_set(err, -EINVAL, "the passphrase is empty");
	if (r == -EFBIG)
		return al_error_set(err, r, "the passphrase is longer than %d bytes",
				    PASSPHRASE_MAX);
	if (r < 0)
		return al_error_set_errno(err, r, "cannot read the passphrase from the terminal");
	if (again && (again->len != s->len || sodium_memcmp(again->data, s->data, s->len) != 0))
		return al_error_set(err, -EINVAL, "the passphrases do not match");
	*ret = TAKE_PTR(s);
	return 0;
}

int broker_key_acquire(const char *key_file, bool prompt, bool confirm, struct broker_key **ret,
		       struct al_error *err)
{
	_cleanup_(broker_key_freep) struct broker_key *k = NULL;
	const char *passphrase_file = getenv("AIRLOCK_PASSPHRASE_FILE");
	int r;

	if (sodium_init() < 0)
		return al_error_set(err, -EIO, "Failed to initialize libsodium");
	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	if (key_file)
		r = read_key_file(key_file, &k->material, err);
	else if (passphrase_file && passphrase_file[0] != '\0')
		r = read_passphrase_file(passphrase_file, "AIRLOCK_PASSPHRASE_FILE", &k->material,
					 err);
	else if (prompt)
		r = prompt_passphrase(confirm ? "New vault passphrase: " : "Vault passphrase: ",
				      confirm, NO_KEY_HINT, &k->material, err);
	else
		r = al_error_set(err, -ENOKEY, NO_KEY_HINT);
	if (r < 0)
		return r;
	if (key_file) {
		k->k.key = (const unsigned char *)k->material->data;
	} else {
		k->k.passphrase = k->material->data;
		k->k.passphrase_len = k->material->len;
	}
	*ret = TAKE_PTR(k);
	return 0;
}

int broker_ssh_passphrase(const char *file, const char *name, struct broker_secret **ret,
			  struct al_error *err)
{
	_cleanup_free_ char *prompt = NULL;

	if (file)
		return read_passphrase_file(file, "--ssh-passphrase-file", ret, err);
	if (asprintf(&prompt, "Passphrase of SSH key %s: ", name) < 0)
		return -ENOMEM;
	return prompt_passphrase(prompt, false,
				 "the SSH key is protected by a passphrase: pass "
				 "--ssh-passphrase-file, or run on a terminal",
				 ret, err);
}
