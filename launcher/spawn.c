#define LOG_MODULE "launcher"

/* How the sandbox's pid 1 starts a command: a child that shares init's memory until it execs
 * (clone(CLONE_VM | CLONE_VFORK), as glibc's posix_spawn() does), on a stack init keeps for the
 * next one. posix_spawn() maps a fresh stack for each child and unmaps it after: each of the
 * child's stack pages is faulted in afresh and the unmapping flushes the TLB of the CPU the
 * command runs on, which costs a session's every command a few hundred microseconds in some VMs.
 * The child does what the posix_spawnp() call it replaces did: every signal's disposition back
 * to its default, a process group or a session of its own, the workspace as its folder, its
 * stdio, an empty signal mask, and the program looked up on the sandbox's PATH (without
 * execvp()'s fallback to a shell for a file that is not an executable). */

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launcher/launcher-internal.h"

#define SPAWN_STACK_SIZE (128 * 1024)

/* What the child needs, made by the parent: the child allocates nothing. */
struct spawn_child {
	const struct launcher_spawn *sp;
	const char *dir;
	char *const *envp;
	const char *path; /* the sandbox's PATH */
	int error;	  /* the child's, when it failed: -errno */
};

bool launcher_spawn_path_next(const char **path, const char *file, char *buf, size_t size)
{
	const char *p = *path, *end;
	size_t n, len = strlen(file);

	if (!p)
		return false;
	end = strchr(p, ':');
	n = end ? (size_t)(end - p) : strlen(p);
	*path = end ? end + 1 : NULL;
	/* An empty entry is the current folder, as for execvp(). */
	if (n == 0 && len < size) {
		memcpy(buf, file, len + 1);
		return true;
	}
	if (n + 1 + len >= size) {
		buf[0] = '\0'; /* too long: nothing to try */
		return true;
	}
	memcpy(buf, p, n);
	buf[n] = '/';
	memcpy(buf + n + 1, file, len + 1);
	return true;
}

/* fd opened onto target: posix_spawn_file_actions_addopen()'s action. */
static int open_onto(const char *path, int flags, int target)
{
	int fd = open(path, flags);

	if (fd < 0)
		return -errno;
	if (fd == target)
		return 0;
	if (dup2(fd, target) < 0)
		return -errno;
	(void)close(fd);
	return 0;
}

/* from made target; a fd that is already target keeps it, made inheritable. */
static int dup_onto(int from, int target)
{
	if (from == target)
		return fcntl(from, F_SETFD, 0) < 0 ? -errno : 0;
	return dup2(from, target) < 0 ? -errno : 0;
}

static int child_stdio(const struct launcher_spawn *sp)
{
	int r = 0;

	for (int i = 0; r >= 0 && sp->stdio && !sp->tty && i < 3; i++)
		r = dup_onto(sp->stdio[i], i);
	/* The first terminal a session leader opens becomes its controlling terminal. */
	if (r >= 0 && sp->tty)
		r = open_onto(sp->tty, O_RDWR, STDIN_FILENO);
	for (int i = STDOUT_FILENO; r >= 0 && sp->tty && i <= STDERR_FILENO; i++)
		r = dup_onto(STDIN_FILENO, i);
	/* A compiler must not eat the program's input, nor mix into its output. */
	if (r >= 0 && sp->prelude)
		r = open_onto("/dev/null", O_RDONLY, STDIN_FILENO);
	if (r >= 0 && sp->prelude)
		r = dup_onto(STDERR_FILENO, STDOUT_FILENO);
	return r;
}

/* posix_spawnp()'s lookup: a name with a slash as it is, else each entry of PATH in turn; a
 * denied one is remembered, a missing one passed over, any other error ends the search. */
static int child_exec(struct spawn_child *c)
{
	char *const *argv = c->sp->argv;
	const char *path = c->path;
	bool denied = false;
	char buf[PATH_MAX];

	if (!argv[0][0])
		return -ENOENT;
	if (strchr(argv[0], '/')) {
		(void)execve(argv[0], argv, c->envp);
		return -errno;
	}
	while (launcher_spawn_path_next(&path, argv[0], buf, sizeof(buf))) {
		if (!buf[0])
			continue;
		(void)execve(buf, argv, c->envp);
		switch (errno) {
		case EACCES:
			denied = true;
			break;
		case ENOENT:
		case ESTALE:
		case ENOTDIR:
		case ENODEV:
		case ETIMEDOUT:
			break;
		default:
			return -errno;
		}
	}
	return denied ? -EACCES : -ENOENT;
}

/* Runs in init's memory, on its spawn stack, until the exec: no allocation, nothing but system
 * calls and the request's own strings. */
static int child_main(void *arg)
{
	struct spawn_child *c = arg;
	const struct launcher_spawn *sp = c->sp;
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	sigset_t none;
	int r = 0;

	/* Every signal comes to the command with its default disposition (init ignores SIGPIPE, its
	 * caller may have ignored others). glibc's own two (SIGCANCEL, SIGSETXID) cannot be set
	 * here: one thread, init never cancels one nor changes its ids, so neither comes. */
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			(void)sigaction(sig, &dfl, NULL);
	/* A session's exec leads a process group of its own: its timeout ends all of it. A
	 * command with a terminal leads a session of its own, whose controlling terminal it is. */
	if (sp->tty && setsid() < 0)
		r = -errno;
	else if (!sp->tty && sp->new_group && setpgid(0, 0) < 0)
		r = -errno;
	if (r >= 0 && chdir(c->dir) < 0)
		r = -errno;
	if (r >= 0)
		r = child_stdio(sp);
	(void)sigemptyset(&none);
	if (r >= 0 && sigprocmask(SIG_SETMASK, &none, NULL) < 0)
		r = -errno;
	if (r >= 0)
		r = child_exec(c);
	c->error = r < 0 ? r : -ENOEXEC;
	_exit(127);
}

/* The stack the children run on until they exec, mapped once, with a guard page below it. A
 * child of CLONE_VFORK holds its parent until it execs or exits, and init is one thread: one
 * child at a time uses it. */
static int spawn_stack(void **ret_top)
{
	static void *top;
	uint8_t *p;

	if (!top) {
		p = mmap(NULL, SPAWN_STACK_SIZE + 4096, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
		if (p == MAP_FAILED)
			return -errno;
		if (mprotect(p, 4096, PROT_NONE) < 0) {
			int r = -errno;

			(void)munmap(p, SPAWN_STACK_SIZE + 4096);
			return r;
		}
		top = p + SPAWN_STACK_SIZE + 4096;
	}
	*ret_top = top;
	return 0;
}

static const char *env_path(char *const *envp)
{
	for (char *const *e = envp; e && *e; e++)
		if (strncmp(*e, "PATH=", 5) == 0)
			return *e + 5;
	return "/bin:/usr/bin"; /* glibc's default when PATH is unset */
}

int launcher_sandbox_spawn(const struct launcher_context *ctx, const struct launcher_spawn *sp,
			   pid_t *ret)
{
	struct spawn_child c = {
	    .sp = sp,
	    .dir = ctx->policy->workspace.mount,
	    .envp = sp->envp ? sp->envp : ctx->envp,
	};
	sigset_t all, old;
	void *stack = NULL;
	pid_t pid;
	int r;

	c.path = env_path(c.envp);
	r = spawn_stack(&stack);
	if (r < 0)
		return r;
	/* No handler of init's may run in the child, which shares its memory, before the child
	 * has put every disposition back to its default. */
	(void)sigfillset(&all);
	if (sigprocmask(SIG_BLOCK, &all, &old) < 0)
		return -errno;
	pid = clone(child_main, stack, CLONE_VM | CLONE_VFORK | SIGCHLD, &c);
	r = pid < 0 ? -errno : 0;
	(void)sigprocmask(SIG_SETMASK, &old, NULL);
	if (r < 0)
		return r;
	/* The child is gone by now, or it runs the program. */
	if (c.error < 0) {
		(void)waitpid(pid, NULL, 0);
		return c.error;
	}
	*ret = pid;
	return 0;
}
