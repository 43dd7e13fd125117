/* policy-profile.c: the "profile" field and the contracts of linux-ns-v1, each refused (naming
 * the field and the contract) and accepted; the general bounds every policy has. */

#include <errno.h>
#include <sys/stat.h>

#include "policy/policy-internal.h"
#include "tests/unit/policy/policy-test.h"

/* The host the contracts measure against (policy-host.c, wrapped): 8 GiB, pid_max 32768, 4 CPUs,
 * and a file system where every path is a program but these. */
int __wrap_policy_host_facts(struct policy_host_facts *ret);
int __wrap_policy_host_facts(struct policy_host_facts *ret)
{
	*ret =
	    (struct policy_host_facts){.mem_total = UINT64_C(8) << 30, .pid_max = 32768, .cpus = 4};
	return 0;
}

int __wrap_policy_host_stat(const char *root, const char *path, struct stat *ret);
int __wrap_policy_host_stat(const char *root, const char *path, struct stat *ret)
{
	static const struct {
		const char *root, *path;
		mode_t mode;
	} files[] = {
	    {"/", "/usr", S_IFDIR | 0755},
	    {"/", "/usr/bin", S_IFDIR | 0755},
	    {"/", "/usr/bin/notes.txt", S_IFREG | 0644},
	    {"/", "/dev/null", S_IFCHR | 0666},
	    {"/", "/usr/bin/missing", 0},
	    {"/", "/usr/bin/*", 0},
	    {"/opt/tools", "/bin/tool", S_IFREG | 0755},
	    {"/opt/tools", "/bin", S_IFDIR | 0755},
	};

	*ret = (struct stat){.st_mode = S_IFREG | 0755};
	for (size_t i = 0; i < ELEMENTSOF(files); i++) {
		if (!streq(root, files[i].root) || !streq(path, files[i].path))
			continue;
		if (files[i].mode == 0)
			return -ENOENT;
		ret->st_mode = files[i].mode;
		return 0;
	}
	return streq(root, "/") ? 0 : -ENOENT;
}

/* The parts of a policy that conforms to linux-ns-v1; a test replaces one. */
struct parts {
	const char *profile, *seccomp, *workspace, *executables, *resources, *network, *mounts;
};

static const struct parts CONFORMING = {
    .profile = "'profile': 'linux-ns-v1', ",
    .seccomp = "'restricted'",
    .workspace = "{'root': '/srv/project'}",
    .executables = "['/usr/bin/python3']",
    .resources = "{'cpu': '1.0', 'memory': '512Mi', 'pids': 64, 'io_weight': 100}",
    .network = "{'default': 'deny'}",
    .mounts = "[]",
};

static char *build(const struct parts *pt)
{
	char *s = NULL;

	if (asprintf(&s,
		     "{%s'seccomp': %s, 'workspace': %s, 'executables': %s, 'resources': %s, "
		     "'network': %s, 'mounts': %s}",
		     pt->profile, pt->seccomp, pt->workspace, pt->executables, pt->resources,
		     pt->network, pt->mounts) < 0)
		abort();
	return s;
}

static void accepted_at(const struct parts *pt, const char *file, int line)
{
	_cleanup_free_ char *q = build(pt);
	_cleanup_(policy_freep) struct policy *p = test_load_at(q, file, line);
	struct al_error err = {};

	if (policy_profile_check(p, POLICY_PROFILE_LINUX_NS_V1, &err) != 0) {
		print_error("%s\n", err.msg);
		_fail(file, line);
	}
}
#define accepted(pt) accepted_at((pt), __FILE__, __LINE__)

/* Refused when loaded (the field), and by policy_profile_check() without the field (what
 * `policy check --profile` asks), with the same message. */
static void refused_at(const struct parts *pt, const char *msg, const char *file, int line)
{
	struct parts unprofiled = *pt;
	_cleanup_free_ char *q = build(pt), *q2 = NULL;
	_cleanup_(policy_freep) struct policy *p = NULL;
	struct al_error err = {};
	int r;

	test_load_fails_at(q, -EINVAL, msg, file, line);
	unprofiled.profile = "";
	q2 = build(&unprofiled);
	p = test_load_at(q2, file, line);
	assert_int_equal(p->profile, POLICY_PROFILE_NONE);
	r = policy_profile_check(p, POLICY_PROFILE_LINUX_NS_V1, &err);
	if (!test_error_matches(&err, r, -EINVAL, msg))
		_fail(file, line);
}
#define refused(pt, msg) refused_at((pt), (msg), __FILE__, __LINE__)

static char *rules(size_t n)
{
	size_t size = n * 64 + 64, l = 0;
	char *s = test_alloc(size);

	l += (size_t)snprintf(s + l, size - l, "{'default': 'deny', 'rules': [");
	for (size_t i = 0; i < n; i++)
		l += (size_t)snprintf(s + l, size - l,
				      "%s{'destination': 'h%zu.example.com', 'action': 'allow'}",
				      i ? ", " : "", i);
	(void)snprintf(s + l, size - l, "]}");
	return s;
}

static char *executables(size_t n)
{
	size_t size = n * 32 + 8, l = 0;
	char *s = test_alloc(size);

	l += (size_t)snprintf(s + l, size - l, "[");
	for (size_t i = 0; i < n; i++)
		l += (size_t)snprintf(s + l, size - l, "%s'/usr/bin/p%zu'", i ? ", " : "", i);
	(void)snprintf(s + l, size - l, "]");
	return s;
}

static void test_profile_field_knows_only_linux_ns_v1(void **state)
{
	_cleanup_free_ char *long_id = NULL, *q = NULL;
	struct parts pt = CONFORMING;

	(void)state;
	accepted(&pt);
	pt.profile = "'profile': 'linux-ns-v2', ";
	q = build(&pt);
	test_load_fails(q, -EINVAL, "profile: \"linux-ns-v2\" is not a profile airlock enforces");
	test_load_fails("{'profile': 1}", -EINVAL, "profile: expected");
	long_id = test_alloc(300);
	memset(long_id, 'a', 299);
	long_id[299] = '\0';
	free(q);
	if (asprintf(&q, "{'profile': '%s'}", long_id) < 0)
		abort();
	test_load_fails(q, -EINVAL, "profile: ");
	free(q);
	q = test_canonical("{}");
	assert_null(strstr(q, "profile"));
}

static void test_profile_is_in_the_canonical_form_and_the_hash(void **state)
{
	_cleanup_free_ char *q = build(&CONFORMING), *c = test_canonical(q);
	_cleanup_(policy_freep) struct policy *p = test_load(c), *p2 = NULL;
	struct parts pt = CONFORMING;
	char h1[POLICY_HASH_HEX_SIZE], h2[POLICY_HASH_HEX_SIZE];
	_cleanup_free_ char *q2 = NULL;

	(void)state;
	assert_non_null(strstr(c, "\"tier\":0,\"profile\":\"linux-ns-v1\""));
	assert_int_equal(p->profile, POLICY_PROFILE_LINUX_NS_V1);
	pt.profile = "";
	q2 = build(&pt);
	p2 = test_load(q2);
	assert_int_equal(policy_hash_hex(p, h1), 0);
	assert_int_equal(policy_hash_hex(p2, h2), 0);
	assert_string_not_equal(h1, h2);
}

static void test_contracts_are_named_as_the_capsule_names_them(void **state)
{
	static const char *const names[] = {
	    "namespace", "seccomp",   "cgroup.memory", "cgroup.pids", "cgroup.cpu",
	    "cgroup.io", "egress",    "executable",    "environment", "rootfs",
	    "tmp",	 "workspace", "admission"};

	(void)state;
	assert_int_equal(policy_profile_n_contracts(POLICY_PROFILE_LINUX_NS_V1), ELEMENTSOF(names));
	for (size_t i = 0; i < ELEMENTSOF(names); i++)
		assert_string_equal(policy_profile_contract(POLICY_PROFILE_LINUX_NS_V1, i),
				    names[i]);
	assert_null(policy_profile_contract(POLICY_PROFILE_LINUX_NS_V1, ELEMENTSOF(names)));
	assert_int_equal(policy_profile_n_contracts(POLICY_PROFILE_NONE), 0);
}

static void test_seccomp_needs_restricted_or_strict(void **state)
{
	struct parts pt = CONFORMING;

	(void)state;
	pt.seccomp = "'baseline'";
	refused(&pt, "seccomp: linux-ns-v1 needs the \"restricted\" or \"strict\" level");
	pt.seccomp = "'strict'";
	accepted(&pt);
}

static void test_cgroup_memory_needs_a_limit(void **state)
{
	struct parts pt = CONFORMING;

	(void)state;
	pt.resources = "{'cpu': '1.0', 'memory': 'max', 'pids': 64, 'io_weight': 100}";
	refused(&pt, "resources.memory: linux-ns-v1 needs a memory limit");
	pt.resources = "{'cpu': '1.0', 'pids': 64, 'io_weight': 100}"; /* the default, 2Gi */
	accepted(&pt);
}

static void test_cgroup_pids_needs_a_limit(void **state)
{
	struct parts pt = CONFORMING;

	(void)state;
	pt.resources = "{'cpu': '1.0', 'memory': '1Gi', 'pids': 'max', 'io_weight': 100}";
	refused(&pt, "resources.pids: linux-ns-v1 needs a pids limit");
	pt.resources = "{'cpu': '1.0', 'memory': '1Gi', 'pids': 1, 'io_weight': 100}";
	accepted(&pt);
}

static void test_cgroup_cpu_needs_a_quota(void **state)
{
	struct parts pt = CONFORMING;

	(void)state;
	pt.resources = "{'memory': '1Gi', 'pids': 64, 'io_weight': 100}";
	refused(&pt, "resources.cpu: linux-ns-v1 needs a cpu limit");
	pt.resources = "{'cpu': '10m', 'memory': '1Gi', 'pids': 64, 'io_weight': 100}";
	accepted(&pt);
}

/* A limit above what the host has limits nothing: memory above MemTotal (8 GiB here), pids at
 * pid_max (32768 here) or more, cpu above the online CPUs (4 here). */
static void test_cgroup_limits_are_below_what_the_host_has(void **state)
{
	struct parts pt = CONFORMING;

	(void)state;
	pt.resources = "{'cpu': '1', 'memory': '18446744073709551615', 'pids': 64, 'io_weight': 1}";
	refused(&pt, "resources.memory: linux-ns-v1 needs a memory limit of at most the host's "
		     "memory (8589934592 bytes), not 18446744073709551615");
	pt.resources = "{'cpu': '1', 'memory': '8Gi', 'pids': 64, 'io_weight': 1}";
	accepted(&pt);
	pt.resources = "{'cpu': '1', 'memory': '1Gi', 'pids': 32768, 'io_weight': 1}";
	refused(&pt, "resources.pids: linux-ns-v1 needs a pids limit below the host's pid_max "
		     "(32768), not 32768");
	pt.resources = "{'cpu': '1', 'memory': '1Gi', 'pids': 32767, 'io_weight': 1}";
	accepted(&pt);
	pt.resources = "{'cpu': '1000', 'memory': '1Gi', 'pids': 64, 'io_weight': 1}";
	refused(&pt, "resources.cpu: linux-ns-v1 needs a cpu limit of at most the host's 4 "
		     "online CPUs, not 1000");
	pt.resources = "{'cpu': '4', 'memory': '1Gi', 'pids': 64, 'io_weight': 1}";
	accepted(&pt);
}

static void test_cgroup_io_needs_a_weight_in_range(void **state)
{
	struct parts pt = CONFORMING;

	(void)state;
	pt.resources = "{'cpu': '1', 'memory': '1Gi', 'pids': 64}";
	refused(&pt, "resources.io_weight: linux-ns-v1 needs an io weight in 1..10000");
	pt.resources = "{'cpu': '1', 'memory': '1Gi', 'pids': 64, 'io_weight': 1}";
	accepted(&pt);
	pt.resources = "{'cpu': '1', 'memory': '1Gi', 'pids': 64, 'io_weight': 10000}";
	accepted(&pt);
}

static void test_egress_is_denied_by_default_with_at_most_256_routes(void **state)
{
	_cleanup_free_ char *r256 = rules(256), *r257 = rules(257);
	struct parts pt = CONFORMING;

	(void)state;
	pt.network = "{'default': 'allow'}";
	refused(&pt, "network.default: linux-ns-v1 needs egress denied by default");
	pt.network = r257;
	refused(&pt, "network.rules: linux-ns-v1 allows at most 256 routes (this policy has 257)");
	pt.network = r256;
	accepted(&pt);
}

static void test_executable_allow_list_has_1_to_64_entries(void **state)
{
	_cleanup_free_ char *e64 = executables(64), *e65 = executables(65);
	struct parts pt = CONFORMING;

	(void)state;
	pt.executables = "[]";
	refused(&pt, "executables: linux-ns-v1 needs an allow list of at most 64 executables");
	pt.executables = e65;
	refused(&pt, "executables: linux-ns-v1 allows at most 64 executables (this policy has 65)");
	pt.executables = e64;
	accepted(&pt);
}

/* Each entry is one program: a regular executable file (links followed), as the sandbox sees it
 * (through a mount's source). A directory would allow everything below it. */
static void test_executable_entries_are_regular_executable_files(void **state)
{
	struct parts pt = CONFORMING;

	(void)state;
	pt.executables = "['/usr']";
	refused(&pt, "executables[0]: linux-ns-v1 needs a regular executable file, not the "
		     "directory \"/usr\" (which allows every program below it)");
	pt.executables = "['/usr/bin/python3', '/usr/bin']";
	refused(&pt, "executables[1]: linux-ns-v1 needs a regular executable file, not the "
		     "directory \"/usr/bin\"");
	pt.executables = "['/usr/bin/notes.txt']";
	refused(&pt, "executables[0]: linux-ns-v1 needs a regular executable file, and "
		     "\"/usr/bin/notes.txt\" is not executable");
	pt.executables = "['/dev/null']";
	refused(&pt, "executables[0]: linux-ns-v1 needs a regular executable file, and "
		     "\"/dev/null\" is not a regular file");
	pt.executables = "['/usr/bin/missing']";
	refused(&pt, "executables[0]: linux-ns-v1 needs a regular executable file: "
		     "\"/usr/bin/missing\": No such file or directory");
	pt.executables = "['/usr/bin/*']";
	refused(&pt, "executables[0]: linux-ns-v1 needs a regular executable file: "
		     "\"/usr/bin/*\": No such file or directory");
	pt.mounts = "[{'source': '/opt/tools', 'target': '/tools', 'mode': 'ro'}]";
	pt.executables = "['/tools/bin/tool']";
	accepted(&pt);
	pt.executables = "['/tools/bin']";
	refused(&pt, "executables[0]: linux-ns-v1 needs a regular executable file, not the "
		     "directory \"/tools/bin\"");
}

/* No mount nor the workspace covers a system folder of the read-only root. */
static void test_rootfs_system_folders_are_not_covered(void **state)
{
	struct parts pt = CONFORMING;

	(void)state;
	pt.workspace = "{'root': '/srv/project', 'mount': '/etc'}";
	refused(&pt, "workspace.mount: linux-ns-v1 needs a read-only root, and \"/etc\" would "
		     "cover the system folder /etc");
	pt.workspace = "{'root': '/srv/project', 'mount': '/usr/local/bin'}";
	refused(&pt, "workspace.mount: linux-ns-v1 needs a read-only root, and \"/usr/local/bin\" "
		     "would cover the system folder /usr");
	pt.workspace = "{'root': '/srv/project', 'mount': '/run'}";
	refused(&pt, "workspace.mount: linux-ns-v1 needs a read-only root, and \"/run\" would "
		     "cover the system folder /run");
	pt.workspace = "{'root': '/srv/project', 'mount': '/home/user/project'}";
	accepted(&pt);
	pt.workspace = "{'root': '/srv/project', 'mount': '/workspace'}";
	accepted(&pt);
	pt.mounts = "[{'source': '/srv/libs', 'target': '/lib/x86_64-linux-gnu', 'mode': 'ro'}]";
	refused(&pt, "mounts[0].target: linux-ns-v1 needs a read-only root, and "
		     "\"/lib/x86_64-linux-gnu\" would cover the system folder /lib");
	pt.mounts = "[{'source': '/srv/data', 'target': '/var/data', 'mode': 'ro'}]";
	refused(&pt, "mounts[0].target: linux-ns-v1 needs a read-only root, and \"/var/data\" "
		     "would cover the system folder /var");
	pt.mounts = "[{'source': '/srv/data', 'target': '/data', 'mode': 'ro'}]";
	accepted(&pt);
}

static void test_tmp_stays_a_tmpfs_of_its_own(void **state)
{
	struct parts pt = CONFORMING;

	(void)state;
	pt.mounts = "[{'source': '/usr/share', 'target': '/tmp', 'mode': 'ro'}]";
	refused(&pt, "mounts[0].target: linux-ns-v1 needs /tmp a tmpfs of its own");
	pt.mounts = "[]";
	pt.workspace = "{'root': '/srv/project', 'mount': '/tmp'}";
	refused(&pt, "workspace.mount: linux-ns-v1 needs /tmp a tmpfs of its own");
	pt.workspace = "{'root': '/srv/project', 'mount': '/tmp/ws'}";
	accepted(&pt);
}

static void test_workspace_root_is_absolute_plain_and_no_system_folder(void **state)
{
	struct parts pt = CONFORMING;

	(void)state;
	pt.workspace = "{'root': '.'}";
	refused(&pt, "workspace.root: linux-ns-v1 needs an absolute path");
	pt.workspace = "{'root': 'project'}";
	refused(&pt, "workspace.root: linux-ns-v1 needs an absolute path");
	pt.workspace = "{'root': '/srv/../etc/x'}";
	refused(&pt, "workspace.root: linux-ns-v1 needs a path without \".\" or \"..\"");
	pt.workspace = "{'root': '/etc/airlock-work'}";
	refused(&pt, "workspace.root: linux-ns-v1 refuses the system folder \"/etc/airlock-work\"");
	pt.workspace = "{'root': '/home'}";
	refused(&pt, "workspace.root: linux-ns-v1 refuses the system folder \"/home\"");
	pt.workspace = "{'root': '/root/.config'}";
	refused(&pt, "workspace.root: linux-ns-v1 refuses \"/root/.config\" (root's home");
	pt.workspace = "{'root': '/root/project'}";
	refused(&pt, "workspace.root: linux-ns-v1 refuses \"/root/project\" (root's home");
	pt.workspace = "{'root': '/home/user/.ssh'}";
	refused(&pt, "workspace.root: linux-ns-v1 refuses \"/home/user/.ssh\"");
	pt.workspace = "{'root': '/home/user/.config/git'}";
	refused(&pt, "workspace.root: linux-ns-v1 refuses \"/home/user/.config/git\"");
	pt.workspace = "{'root': '/var/tmp'}";
	refused(&pt, "workspace.root: linux-ns-v1 refuses \"/var/tmp\"");
	pt.workspace = "{'root': '/lost+found'}";
	refused(&pt, "workspace.root: linux-ns-v1 refuses \"/lost+found\"");
	pt.workspace = "{'root': '/run/user/1000'}";
	refused(&pt, "workspace.root: linux-ns-v1 refuses \"/run/user/1000\"");
	/* the home folder itself holds its dot-entries: ~/.ssh/authorized_keys (red team 2) */
	pt.workspace = "{'root': '/home/user'}";
	refused(&pt, "workspace.root: linux-ns-v1 refuses \"/home/user\"");
	pt.workspace = "{'root': '/home//user/'}";
	refused(&pt, "workspace.root: linux-ns-v1 refuses \"/home/user\"");
	pt.workspace = "{'root': '/home/user/project.git'}";
	accepted(&pt);
	pt.workspace = "{'root': '/home/user/./project'}"; /* "." is normalised away */
	accepted(&pt);
}

/* Every policy: lists of at most 1,024 entries, a file of at most 1 MiB; the profile's tighter
 * bounds only under it. */
static void test_without_the_profile_lists_reach_1024(void **state)
{
	_cleanup_free_ char *r1024 = rules(1024), *r1025 = rules(1025), *e70 = executables(70);
	_cleanup_free_ char *q = NULL, *big = NULL;
	_cleanup_(policy_freep) struct policy *p = NULL;
	struct parts pt = CONFORMING;
	struct policy *none = NULL;
	struct al_error err = {};
	int r;

	(void)state;
	pt.profile = "";
	pt.network = r1024;
	pt.executables = e70;
	q = build(&pt);
	p = test_load(q);
	assert_int_equal(p->network.n_rules, 1024);
	assert_int_equal(p->executables.n, 70);
	free(q);
	pt.network = r1025;
	q = build(&pt);
	test_load_fails(q, -EINVAL, "network.rules: ");
	big = test_alloc(POLICY_FILE_MAX + 2);
	memset(big, ' ', POLICY_FILE_MAX + 1);
	big[0] = '{';
	big[POLICY_FILE_MAX] = '}';
	big[POLICY_FILE_MAX + 1] = '\0';
	r = policy_load_string(big, &none, &err);
	assert_int_equal(r, -EFBIG);
	assert_null(none);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_profile_field_knows_only_linux_ns_v1),
	    cmocka_unit_test(test_profile_is_in_the_canonical_form_and_the_hash),
	    cmocka_unit_test(test_contracts_are_named_as_the_capsule_names_them),
	    cmocka_unit_test(test_seccomp_needs_restricted_or_strict),
	    cmocka_unit_test(test_cgroup_memory_needs_a_limit),
	    cmocka_unit_test(test_cgroup_pids_needs_a_limit),
	    cmocka_unit_test(test_cgroup_cpu_needs_a_quota),
	    cmocka_unit_test(test_cgroup_limits_are_below_what_the_host_has),
	    cmocka_unit_test(test_cgroup_io_needs_a_weight_in_range),
	    cmocka_unit_test(test_egress_is_denied_by_default_with_at_most_256_routes),
	    cmocka_unit_test(test_executable_allow_list_has_1_to_64_entries),
	    cmocka_unit_test(test_executable_entries_are_regular_executable_files),
	    cmocka_unit_test(test_rootfs_system_folders_are_not_covered),
	    cmocka_unit_test(test_tmp_stays_a_tmpfs_of_its_own),
	    cmocka_unit_test(test_workspace_root_is_absolute_plain_and_no_system_folder),
	    cmocka_unit_test(test_without_the_profile_lists_reach_1024),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
