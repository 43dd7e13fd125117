/* Capsule profiles: a policy that declares "profile": "linux-ns-v1" is held to that profile's
 * containment contracts before anything runs. Each contract is a pure check over the parsed
 * policy that names, when it refuses, the field and the contract; what a policy cannot show
 * (four namespaces for root too, a limit the kernel can apply, admission by exact hash) the
 * launcher holds it to at launch (docs/SECURITY.md, "The linux-ns-v1 profile"). */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "common/path-util.h"
#include "policy/policy-internal.h"

#define NS_V1 "linux-ns-v1"

typedef int (*contract_check_fn)(const struct policy *p, struct al_error *err);

struct contract {
	const char *name;
	contract_check_fn check;
};

/* The launcher gives every sandbox its own user, mount, pid and net namespaces (a run as root
 * under a profile too: launcher/userns.c); nothing in a policy can take one away. */
static int check_namespace(const struct policy *p, struct al_error *err)
{
	(void)p, (void)err;
	return 0;
}

static int check_seccomp(const struct policy *p, struct al_error *err)
{
	if (p->seccomp < POLICY_SECCOMP_RESTRICTED)
		return al_error_set(err, -EINVAL,
				    "seccomp: " NS_V1
				    " needs the \"restricted\" or \"strict\" level, "
				    "not \"%s\"",
				    policy_seccomp_to_string(p->seccomp));
	return 0;
}

/* What the host that checks the policy has: a limit above it limits nothing. */
static int host_facts(const char *field, struct policy_host_facts *ret, struct al_error *err)
{
	int r = policy_host_facts(ret);

	if (r < 0)
		return al_error_set(err, -EINVAL,
				    "%s: " NS_V1 " cannot measure the limit against this host: %s",
				    field, strerror(-r));
	return 0;
}

static int check_memory(const struct policy *p, struct al_error *err)
{
	struct policy_host_facts host;
	int r;

	if (p->resources.memory == 0)
		return al_error_set(err, -EINVAL,
				    "resources.memory: " NS_V1 " needs a memory limit");
	r = host_facts("resources.memory", &host, err);
	if (r < 0)
		return r;
	if (p->resources.memory > host.mem_total)
		return al_error_set(err, -EINVAL,
				    "resources.memory: " NS_V1
				    " needs a memory limit of at most the host's memory (%" PRIu64
				    " bytes), not %" PRIu64,
				    host.mem_total, p->resources.memory);
	return 0;
}

static int check_pids(const struct policy *p, struct al_error *err)
{
	struct policy_host_facts host;
	int r;

	if (p->resources.pids == 0)
		return al_error_set(err, -EINVAL, "resources.pids: " NS_V1 " needs a pids limit");
	r = host_facts("resources.pids", &host, err);
	if (r < 0)
		return r;
	if (p->resources.pids >= host.pid_max)
		return al_error_set(err, -EINVAL,
				    "resources.pids: " NS_V1
				    " needs a pids limit below the host's pid_max (%" PRIu64
				    "), not %" PRIu64,
				    host.pid_max, p->resources.pids);
	return 0;
}

static int check_cpu(const struct policy *p, struct al_error *err)
{
	uint64_t m = p->resources.cpu_millis;
	struct policy_host_facts host;
	int r;

	if (m == 0)
		return al_error_set(err, -EINVAL, "resources.cpu: " NS_V1 " needs a cpu limit");
	r = host_facts("resources.cpu", &host, err);
	if (r < 0)
		return r;
	if (m / 1000 > host.cpus || (m / 1000 == host.cpus && m % 1000)) {
		char cpus[32];

		(void)snprintf(cpus, sizeof(cpus), m % 1000 ? "%" PRIu64 ".%03" PRIu64 : "%" PRIu64,
			       m / 1000, m % 1000);
		return al_error_set(err, -EINVAL,
				    "resources.cpu: " NS_V1
				    " needs a cpu limit of at most the host's %" PRIu64
				    " online CPUs, not %s",
				    host.cpus, cpus);
	}
	return 0;
}

static int check_io(const struct policy *p, struct al_error *err)
{
	if (p->resources.io_weight < 1 || p->resources.io_weight > POLICY_IO_WEIGHT_MAX)
		return al_error_set(err, -EINVAL,
				    "resources.io_weight: " NS_V1
				    " needs an io weight in 1..%" PRIu64,
				    POLICY_IO_WEIGHT_MAX);
	return 0;
}

static int check_egress(const struct policy *p, struct al_error *err)
{
	if (p->network.default_action != POLICY_NET_DENY)
		return al_error_set(err, -EINVAL,
				    "network.default: " NS_V1 " needs egress denied by default");
	if (p->network.n_rules > POLICY_PROFILE_ROUTES_MAX)
		return al_error_set(err, -EINVAL,
				    "network.rules: " NS_V1
				    " allows at most %d routes (this policy "
				    "has %zu)",
				    POLICY_PROFILE_ROUTES_MAX, p->network.n_rules);
	return 0;
}

/* Where the sandbox finds path: in the source of the mount it lies in (the deepest), in the
 * workspace, or in its root (the image's folder, or the host's /). */
static const char *where_in_sandbox(const struct policy *p, const char *path, const char **ret_rel)
{
	const char *root = p->image ? p->image : "/", *target = "/";

	*ret_rel = path;
	for (size_t i = 0; i < p->n_mounts; i++)
		if (al_path_is_within(path, p->mounts[i].target) &&
		    strlen(p->mounts[i].target) > strlen(target)) {
			target = p->mounts[i].target;
			root = p->mounts[i].source;
		}
	if (al_path_is_within(path, p->workspace.mount) &&
	    strlen(p->workspace.mount) > strlen(target)) {
		target = p->workspace.mount;
		root = p->workspace.root;
	}
	if (!streq(target, "/"))
		*ret_rel = path[strlen(target)] ? path + strlen(target) : "/";
	return root;
}

/* An entry is one program: a regular executable file, links followed, as the sandbox sees it.
 * Landlock grants a directory's entry to everything below it ("/usr": every program). */
static int check_executable_file(const struct policy *p, size_t i, struct al_error *err)
{
	const char *path = p->executables.items[i], *rel, *root = where_in_sandbox(p, path, &rel);
	struct stat st;
	int r;

	r = policy_host_stat(root, rel, &st);
	if (r < 0)
		return al_error_set(err, -EINVAL,
				    "executables[%zu]: " NS_V1 " needs a regular executable file: "
				    "%s: %s",
				    i, QUOTE(path), strerror(-r));
	if (S_ISDIR(st.st_mode))
		return al_error_set(err, -EINVAL,
				    "executables[%zu]: " NS_V1 " needs a regular executable file, "
				    "not the directory %s (which allows every program below it)",
				    i, QUOTE(path));
	if (!S_ISREG(st.st_mode))
		return al_error_set(err, -EINVAL,
				    "executables[%zu]: " NS_V1 " needs a regular executable file, "
				    "and %s is not a regular file",
				    i, QUOTE(path));
	if (!(st.st_mode & 0111))
		return al_error_set(err, -EINVAL,
				    "executables[%zu]: " NS_V1 " needs a regular executable file, "
				    "and %s is not executable",
				    i, QUOTE(path));
	return 0;
}

/* An empty list is no allow list at all (every program may run): more than 64. */
static int check_executable(const struct policy *p, struct al_error *err)
{
	int r;

	if (p->executables.n == 0)
		return al_error_set(err, -EINVAL,
				    "executables: " NS_V1 " needs an allow list of at most %d "
				    "executables (this policy has none: any program may run)",
				    POLICY_PROFILE_EXECUTABLES_MAX);
	if (p->executables.n > POLICY_PROFILE_EXECUTABLES_MAX)
		return al_error_set(err, -EINVAL,
				    "executables: " NS_V1 " allows at most %d executables (this "
				    "policy has %zu)",
				    POLICY_PROFILE_EXECUTABLES_MAX, p->executables.n);
	for (size_t i = 0; i < p->executables.n; i++) {
		r = check_executable_file(p, i, err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The sandbox's environment is built from the policy's env and a fixed few variables
 * (launcher/env.c); nothing of airlock's own is inherited, whatever the policy says. */
static int check_environment(const struct policy *p, struct al_error *err)
{
	(void)p, (void)err;
	return 0;
}

/* The system folders of the sandbox's read-only root: no mount nor the workspace may cover one
 * or anything below it (a writable /etc is ld.so.preload; a bind over /usr/bin, other programs
 * at the allowed paths). /tmp is the tmp contract's; /home, /srv, /workspace stay free. */
static const char *const root_system_folders[] = {"/etc",   "/usr",   "/bin",	 "/sbin", "/lib",
						  "/lib32", "/lib64", "/libx32", "/boot", "/opt",
						  "/run",   "/var",   "/proc",	 "/sys",  "/dev"};

static const char *covered_system_folder(const char *target)
{
	for (size_t i = 0; i < ELEMENTSOF(root_system_folders); i++)
		if (al_path_is_within(target, root_system_folders[i]))
			return root_system_folders[i];
	return NULL;
}

/* / is a read-only tmpfs (or an image mirrored read-only): no policy field makes it writable,
 * no mount may target / itself (the parser refuses it), nor cover one of its system folders. */
static int check_rootfs(const struct policy *p, struct al_error *err)
{
	const char *dir = covered_system_folder(p->workspace.mount);

	if (dir)
		return al_error_set(err, -EINVAL,
				    "workspace.mount: " NS_V1 " needs a read-only root, and %s "
				    "would cover the system folder %s",
				    QUOTE(p->workspace.mount), dir);
	for (size_t i = 0; i < p->n_mounts; i++) {
		dir = covered_system_folder(p->mounts[i].target);
		if (dir)
			return al_error_set(err, -EINVAL,
					    "mounts[%zu].target: " NS_V1 " needs a read-only root, "
					    "and %s would cover the system folder %s",
					    i, QUOTE(p->mounts[i].target), dir);
	}
	return 0;
}

/* /tmp is a tmpfs of its own, capped at resources.disk: nothing may be bound over it. */
static int check_tmp(const struct policy *p, struct al_error *err)
{
	if (streq(p->workspace.mount, "/tmp"))
		return al_error_set(err, -EINVAL,
				    "workspace.mount: " NS_V1 " needs /tmp a tmpfs of its own");
	for (size_t i = 0; i < p->n_mounts; i++)
		if (streq(p->mounts[i].target, "/tmp"))
			return al_error_set(
			    err, -EINVAL,
			    "mounts[%zu].target: " NS_V1 " needs /tmp a tmpfs of its own", i);
	if (p->resources.disk == 0)
		return al_error_set(err, -EINVAL, "resources.disk: " NS_V1 " needs a /tmp size");
	return 0;
}

static bool has_dot_component(const char *path)
{
	for (const char *c = path; c && *c; c = strchr(c, '/')) {
		size_t n;

		c += strspn(c, "/");
		n = strcspn(c, "/");
		if ((n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
			return true;
	}
	return false;
}

/* Beyond the system folders: root's home (all of it: its own files are the host admin's), the
 * shared /var/tmp, /lost+found, what runs below /run, and a home folder's dot-entries (~/.config,
 * ~/.ssh: what the host user's programs read and run) and so the home folder itself, which holds
 * them (a workspace at /home/user wrote ~/.ssh/authorized_keys: red team 2). */
static const char *const private_trees[] = {"/root", "/var/tmp", "/lost+found", "/run"};

static bool is_private_folder(const char *root)
{
	const char *rest = startswith(root, "/home/");

	for (size_t i = 0; i < ELEMENTSOF(private_trees); i++)
		if (al_path_is_within(root, private_trees[i]))
			return true;
	if (!rest)
		return false;
	rest += strcspn(rest, "/"); /* the user's folder */
	rest += strspn(rest, "/");
	return rest[0] == '.' || rest[0] == '\0';
}

static int check_workspace(const struct policy *p, struct al_error *err)
{
	const char *root = p->workspace.root;

	if (root[0] != '/')
		return al_error_set(err, -EINVAL,
				    "workspace.root: " NS_V1 " needs an absolute path, not %s",
				    QUOTE(root));
	if (has_dot_component(root))
		return al_error_set(
		    err, -EINVAL, "workspace.root: " NS_V1 " needs a path without \".\" or \"..\"");
	if (al_path_is_system_folder(root))
		return al_error_set(err, -EINVAL,
				    "workspace.root: " NS_V1 " refuses the system folder %s",
				    QUOTE(root));
	if (is_private_folder(root))
		return al_error_set(
		    err, -EINVAL,
		    "workspace.root: " NS_V1
		    " refuses %s (root's home, a home folder or its dot-entries, /var/tmp, "
		    "/lost+found or /run)",
		    QUOTE(root));
	return 0;
}

/* A policy of tier 3 or more runs only when its exact hash is admitted: the admitted set is the
 * operator's, read at launch (policy_check_admitted(), on the policy as it runs). */
static int check_admission(const struct policy *p, struct al_error *err)
{
	(void)p, (void)err;
	return 0;
}

static const struct contract ns_v1[] = {
    {"namespace", check_namespace},
    {"seccomp", check_seccomp},
    {"cgroup.memory", check_memory},
    {"cgroup.pids", check_pids},
    {"cgroup.cpu", check_cpu},
    {"cgroup.io", check_io},
    {"egress", check_egress},
    {"executable", check_executable},
    {"environment", check_environment},
    {"rootfs", check_rootfs},
    {"tmp", check_tmp},
    {"workspace", check_workspace},
    {"admission", check_admission},
};

const char *policy_profile_to_string(enum policy_profile prof)
{
	return prof == POLICY_PROFILE_LINUX_NS_V1 ? NS_V1 : NULL;
}

int policy_profile_from_string(const char *s, enum policy_profile *ret)
{
	if (!streq(s, NS_V1))
		return -EINVAL;
	*ret = POLICY_PROFILE_LINUX_NS_V1;
	return 0;
}

size_t policy_profile_n_contracts(enum policy_profile prof)
{
	return prof == POLICY_PROFILE_LINUX_NS_V1 ? ELEMENTSOF(ns_v1) : 0;
}

const char *policy_profile_contract(enum policy_profile prof, size_t i)
{
	return i < policy_profile_n_contracts(prof) ? ns_v1[i].name : NULL;
}

int policy_profile_check_contract(const struct policy *p, enum policy_profile prof, size_t i,
				  struct al_error *err)
{
	if (i >= policy_profile_n_contracts(prof))
		return -EINVAL;
	return ns_v1[i].check(p, err);
}

int policy_profile_check(const struct policy *p, enum policy_profile prof, struct al_error *err)
{
	int r;

	for (size_t i = 0; i < policy_profile_n_contracts(prof); i++) {
		r = policy_profile_check_contract(p, prof, i, err);
		if (r < 0)
			return r;
	}
	return 0;
}
