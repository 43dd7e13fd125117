/* itrun: starts a command the way an integration test needs, and watches it.
 *
 * usage: itrun [-t SECONDS] [-p PIDFILE] [-i SIGNAL]... [-d SIGNAL]... [-E ENVFILE] [-T]
 *              -- COMMAND [ARG...]
 *   -t  watchdog: SIGKILL the command after SECONDS (default 120) and exit 255, so a hung
 *       airlock fails one check instead of the whole test
 *   -p  write the command's pid to PIDFILE (atomically) once it is started
 *   -i  start the command with SIGNAL ignored (e.g. -i CHLD: a careless parent)
 *   -d  start the command with SIGNAL at its default action (a shell's background jobs
 *       otherwise inherit SIGINT and SIGQUIT ignored)
 *   -E  run the command with exactly the environment in ENVFILE: NUL-separated entries, taken
 *       verbatim, so entries without '=' or huge values can be passed
 *   -T  run the command on a new pseudo-terminal as its controlling terminal; its output is
 *       copied to stdout. After it ends, bytes left unread in the terminal's input queue mean
 *       someone injected input (TIOCSTI): itrun says so and exits 99
 * The signal mask of the command is cleared. itrun exits with the command's status, or 128+N
 * when it died of signal N. COMMAND is looked up on PATH. */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define EXIT_WATCHDOG 255
#define EXIT_INJECTED 99
#define MAX_SIGNALS 16

static volatile sig_atomic_t watchdog_fired;
static volatile pid_t child_pid;

static void on_alarm(int sig)
{
	watchdog_fired = 1;
	if (child_pid > 0)
		(void)kill(child_pid, SIGKILL);
}

static int signal_from_name(const char *s)
{
	static const struct {
		const char *name;
		int sig;
	} table[] = {
	    {"HUP", SIGHUP},   {"INT", SIGINT},	  {"QUIT", SIGQUIT}, {"TERM", SIGTERM},
	    {"CHLD", SIGCHLD}, {"PIPE", SIGPIPE}, {"USR1", SIGUSR1}, {"USR2", SIGUSR2},
	    {"ALRM", SIGALRM}, {"TTIN", SIGTTIN}, {"TTOU", SIGTTOU}, {"TSTP", SIGTSTP},
	};
	size_t i;

	if (strncmp(s, "SIG", 3) == 0)
		s += 3;
	for (i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (strcmp(s, table[i].name) == 0)
			return table[i].sig;
	return -EINVAL;
}

/* Reads ENVFILE into a NULL-terminated vector of its NUL-separated entries, which point into
 * *ret_buf. The caller frees both. */
static int read_env_file(const char *path, char ***ret, char **ret_buf)
{
	char *buf = NULL, **v = NULL;
	size_t len = 0, n = 0, i;
	FILE *f;
	int r = 0;

	f = fopen(path, "re");
	if (!f)
		return -errno;
	for (;;) {
		char chunk[65536];
		size_t k = fread(chunk, 1, sizeof(chunk), f);
		char *nbuf;

		if (k == 0)
			break;
		nbuf = realloc(buf, len + k + 1);
		if (!nbuf) {
			r = -ENOMEM;
			goto out;
		}
		buf = nbuf;
		memcpy(buf + len, chunk, k);
		len += k;
	}
	if (ferror(f)) {
		r = -EIO;
		goto out;
	}
	if (!buf) {
		buf = calloc(1, 1);
		if (!buf) {
			r = -ENOMEM;
			goto out;
		}
	}
	buf[len] = '\0';
	for (i = 0; i < len; i++)
		if (buf[i] == '\0')
			n++;
	if (len > 0 && buf[len - 1] != '\0')
		n++;
	v = calloc(n + 1, sizeof(*v));
	if (!v) {
		r = -ENOMEM;
		goto out;
	}
	for (i = 0, n = 0; i < len; i += strlen(buf + i) + 1)
		v[n++] = buf + i;
	*ret = v;
	*ret_buf = buf;
	buf = NULL;
out:
	(void)fclose(f);
	free(buf);
	return r;
}

static int write_pid_file(const char *path, pid_t pid)
{
	char tmp[4096];
	FILE *f;
	int r;

	r = snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if (r < 0 || (size_t)r >= sizeof(tmp))
		return -ENAMETOOLONG;
	f = fopen(tmp, "we");
	if (!f)
		return -errno;
	fprintf(f, "%d\n", (int)pid);
	if (fclose(f) != 0)
		return -errno;
	if (rename(tmp, path) < 0)
		return -errno;
	return 0;
}

static void copy_fd(int from, int to)
{
	char buf[65536];
	ssize_t n;

	for (;;) {
		n = read(from, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		if (write(to, buf, (size_t)n) != n)
			return;
	}
}

/* Waits for the child, copying the terminal's output in -T mode. Returns the wait status. */
static int wait_child(pid_t pid, int master)
{
	int status;

	for (;;) {
		pid_t w;

		if (master >= 0) {
			struct pollfd p = {.fd = master, .events = POLLIN};

			if (poll(&p, 1, 50) > 0)
				copy_fd(master, STDOUT_FILENO);
			w = waitpid(pid, &status, WNOHANG);
			if (w == 0)
				continue;
		} else {
			w = waitpid(pid, &status, 0);
		}
		if (w == pid)
			return status;
		if (w < 0 && errno != EINTR) {
			perror("itrun: waitpid");
			exit(EXIT_WATCHDOG);
		}
	}
}

static _Noreturn void usage(void)
{
	fprintf(stderr, "usage: itrun [-t SECONDS] [-p PIDFILE] [-i SIGNAL]... [-d SIGNAL]... "
			"[-E ENVFILE] [-T] -- COMMAND [ARG...]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int ignore[MAX_SIGNALS], dflt[MAX_SIGNALS];
	size_t n_ignore = 0, n_dflt = 0, i;
	const char *pid_file = NULL, *env_file = NULL;
	unsigned timeout = 120;
	bool pty = false;
	char **envp = NULL, *env_buf = NULL;
	int master = -1, slave = -1;
	struct sigaction sa = {.sa_handler = on_alarm};
	struct termios tio;
	int opt, status, sig;
	pid_t pid;

	while ((opt = getopt(argc, argv, "+t:p:i:d:E:T")) != -1) {
		switch (opt) {
		case 't':
			timeout = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'p':
			pid_file = optarg;
			break;
		case 'i':
		case 'd':
			sig = signal_from_name(optarg);
			if (sig < 0 || n_ignore >= MAX_SIGNALS || n_dflt >= MAX_SIGNALS)
				usage();
			if (opt == 'i')
				ignore[n_ignore++] = sig;
			else
				dflt[n_dflt++] = sig;
			break;
		case 'E':
			env_file = optarg;
			break;
		case 'T':
			pty = true;
			break;
		default:
			usage();
		}
	}
	if (optind >= argc)
		usage();
	if (env_file && read_env_file(env_file, &envp, &env_buf) < 0) {
		perror("itrun: reading the environment file");
		return 2;
	}
	if (pty) {
		master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
		if (master < 0 || grantpt(master) < 0 || unlockpt(master) < 0 ||
		    fcntl(master, F_SETFL, O_NONBLOCK) < 0) {
			perror("itrun: posix_openpt");
			return 2;
		}
		/* Kept open here too, so that the input queue can be inspected after the child. */
		slave = open(ptsname(master), O_RDWR | O_NOCTTY | O_CLOEXEC);
		if (slave < 0) {
			perror("itrun: opening the terminal");
			return 2;
		}
		/* Raw: injected input is readable at once (canonical mode would hide it until a
		 * newline) and output is copied without \r\n translation. */
		if (tcgetattr(slave, &tio) < 0) {
			perror("itrun: tcgetattr");
			return 2;
		}
		cfmakeraw(&tio);
		if (tcsetattr(slave, TCSANOW, &tio) < 0) {
			perror("itrun: tcsetattr");
			return 2;
		}
	}

	pid = fork();
	if (pid < 0) {
		perror("itrun: fork");
		return 2;
	}
	if (pid == 0) {
		sigset_t none;

		for (i = 0; i < n_ignore; i++)
			(void)signal(ignore[i], SIG_IGN);
		for (i = 0; i < n_dflt; i++)
			(void)signal(dflt[i], SIG_DFL);
		sigemptyset(&none);
		(void)sigprocmask(SIG_SETMASK, &none, NULL);
		if (pty) {
			if (setsid() < 0 || ioctl(slave, TIOCSCTTY, 0) < 0 ||
			    dup2(slave, STDIN_FILENO) < 0 || dup2(slave, STDOUT_FILENO) < 0 ||
			    dup2(slave, STDERR_FILENO) < 0) {
				perror("itrun: setting up the terminal");
				_exit(2);
			}
		}
		if (envp)
			execvpe(argv[optind], argv + optind, envp);
		else
			execvp(argv[optind], argv + optind);
		fprintf(stderr, "itrun: exec %s: %s\n", argv[optind], strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}

	child_pid = pid;
	(void)sigaction(SIGALRM, &sa, NULL);
	alarm(timeout);
	if (pid_file && write_pid_file(pid_file, pid) < 0) {
		perror("itrun: writing the pid file");
		(void)kill(pid, SIGKILL);
	}
	free(envp);
	free(env_buf);
	status = wait_child(pid, master);
	alarm(0);
	if (watchdog_fired) {
		fprintf(stderr, "itrun: watchdog: %s still running after %u s, killed\n",
			argv[optind], timeout);
		return EXIT_WATCHDOG;
	}
	if (pty) {
		int pending = 0;

		/* Output still buffered once nobody holds the terminal any more. */
		copy_fd(master, STDOUT_FILENO);
		if (ioctl(slave, FIONREAD, &pending) == 0 && pending > 0) {
			fprintf(stderr, "itrun: %d bytes were injected into the terminal's input\n",
				pending);
			return EXIT_INJECTED;
		}
	}
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}
