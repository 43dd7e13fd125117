/* The compiled-filter cache on disk: root keeps it in /var/cache/airlock/seccomp and reads back
 * what it wrote; a file or directory anyone else could have written is never read (a hard link,
 * a wrong owner or mode on any directory from / down, a symbolic link); AIRLOCK_SECCOMP_CACHE
 * moves it for root only; and other users keep no cache at all, so a file planted in their
 * $XDG_CACHE_HOME or ~/.cache cannot switch their filter off. Runs as root, in a private mount
 * namespace with a tmpfs over /var/cache, so the host's cache is left alone. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tests/integration/launcher/kctl-lib.h"

#define CACHE_DIR "/var/cache/airlock/seccomp"
#define NOBODY 65534

static const char *const level_names[] = {"baseline", "restricted", "strict"};
/* Compiled with the cache off: what every compile must return */
static struct launcher_seccomp_filter reference[3];

static const struct sock_filter ret_allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);

static void compile(enum policy_seccomp level, struct launcher_seccomp_filter *ret)
{
	struct al_error err = {0};

	if (launcher_seccomp_compile(level, ret, &err) < 0) {
		fprintf(stderr, "compile: %s\n", err.msg);
		exit(1);
	}
}

static bool same_program(const struct launcher_seccomp_filter *a,
			 const struct launcher_seccomp_filter *b)
{
	return a->n_insns == b->n_insns &&
	       memcmp(a->insns, b->insns, a->n_insns * sizeof(*a->insns)) == 0;
}

/* Compiles level and checks the result is the reference program. */
static void check_compiles_reference(enum policy_seccomp level)
{
	struct launcher_seccomp_filter f = {0};

	compile(level, &f);
	CHECK(same_program(&f, &reference[level]));
	launcher_seccomp_filter_done(&f);
}

/* The path of level's one file in dir into buf; false when there is none. */
static bool cache_file(const char *dir, enum policy_seccomp level, char *buf, size_t size)
{
	DIR *d = opendir(dir);
	size_t n = strlen(level_names[level]);
	bool found = false;

	if (!d)
		return false;
	for (struct dirent *de; (de = readdir(d));)
		if (strncmp(de->d_name, level_names[level], n) == 0 && de->d_name[n] == '-') {
			CHECK(!found);
			CHECK(snprintf(buf, size, "%s/%s", dir, de->d_name) < (int)size);
			found = true;
		}
	(void)closedir(d);
	return found;
}

static size_t count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	size_t n = 0;

	if (!d)
		return 0;
	for (struct dirent *de; (de = readdir(d));)
		n += !streq(de->d_name, ".") && !streq(de->d_name, "..");
	(void)closedir(d);
	return n;
}

/* Writes a cache file the way seccomp.c does (a 32-byte header: magic, key, FNV-1a checksum of the
 * program, instruction count), with the key taken from the file name: a well-formed file whose
 * program is insns. */
static void write_cache_file(const char *path, const struct sock_filter *insns, uint32_t n)
{
	struct {
		char magic[8];
		uint64_t key;
		uint64_t checksum;
		uint32_t n_insns;
		uint32_t reserved;
	} h = {.magic = "ALSCMP01", .n_insns = n, .checksum = UINT64_C(0xcbf29ce484222325)};
	const unsigned char *c = (const unsigned char *)insns;
	const char *name = strrchr(path, '/') + 1;
	unsigned long long key;
	int fd;

	CHECK(sscanf(strrchr(name, '-') + 1, "%16llx.bpf", &key) == 1);
	h.key = key;
	for (size_t i = 0; i < n * sizeof(*insns); i++)
		h.checksum = (h.checksum ^ c[i]) * UINT64_C(0x100000001b3);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	CHECK(write(fd, &h, sizeof(h)) == (ssize_t)sizeof(h));
	CHECK(write(fd, insns, n * sizeof(*insns)) == (ssize_t)(n * sizeof(*insns)));
	CHECK(close(fd) == 0);
}

/* Replaces the program in path by "allow everything", as an attacker would. */
static void plant_allow_all(const char *path)
{
	write_cache_file(path, &ret_allow, 1);
}

static double now_usec(void)
{
	struct timespec ts;

	CHECK(clock_gettime(CLOCK_MONOTONIC, &ts) == 0);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void test_root_reads_back_its_private_cache(void)
{
	char path[256];
	struct stat st;
	double t0, t_compile[3], t_hit[3];

	for (int l = 0; l < 3; l++) {
		struct launcher_seccomp_filter f = {0};

		t0 = now_usec();
		check_compiles_reference((enum policy_seccomp)l);
		t_compile[l] = now_usec() - t0;
		CHECK(cache_file(CACHE_DIR, (enum policy_seccomp)l, path, sizeof(path)));
		CHECK(stat(path, &st) == 0);
		CHECK_EQ(st.st_mode & 07777, 0600);
		CHECK_EQ(st.st_uid, 0);
		CHECK_EQ(st.st_nlink, 1);

		/* a changed program (with a valid checksum) comes back: the hit reads the file */
		f = reference[l];
		f.insns = malloc(f.n_insns * sizeof(*f.insns));
		CHECK(f.insns);
		memcpy(f.insns, reference[l].insns, f.n_insns * sizeof(*f.insns));
		f.insns[f.n_insns - 1] = ret_allow;
		write_cache_file(path, f.insns, (uint32_t)f.n_insns);
		launcher_seccomp_filter_done(&f);
		t0 = now_usec();
		compile((enum policy_seccomp)l, &f);
		t_hit[l] = now_usec() - t0;
		CHECK_EQ(f.n_insns, reference[l].n_insns);
		CHECK(memcmp(&f.insns[f.n_insns - 1], &ret_allow, sizeof(ret_allow)) == 0);
		launcher_seccomp_filter_done(&f);
		CHECK(unlink(path) == 0);
		check_compiles_reference((enum policy_seccomp)l);
		fprintf(stderr, "%s: compile and store %.0f us, cache hit %.0f us\n",
			level_names[l], t_compile[l], t_hit[l]);
	}
	CHECK(stat("/var/cache/airlock", &st) == 0);
	CHECK_EQ(st.st_mode & 07777, 0700);
	CHECK(stat(CACHE_DIR, &st) == 0);
	CHECK_EQ(st.st_mode & 07777, 0700);
	CHECK_EQ(st.st_uid, 0);
}

static void test_damaged_files_are_compiled_again(void)
{
	enum policy_seccomp l = POLICY_SECCOMP_STRICT;
	char path[256];
	struct stat st;
	int fd;

	check_compiles_reference(l);
	CHECK(cache_file(CACHE_DIR, l, path, sizeof(path)));
	/* one byte of the program flipped: the checksum no longer matches */
	fd = open(path, O_RDWR | O_CLOEXEC);
	CHECK(fd >= 0);
	CHECK(pwrite(fd, "\xff", 1, 40) == 1);
	CHECK(close(fd) == 0);
	check_compiles_reference(l);
	/* truncated */
	CHECK(truncate(path, 100) == 0);
	check_compiles_reference(l);
	/* readable by others, or someone else's: not trusted, and rewritten privately */
	plant_allow_all(path);
	CHECK(chmod(path, 0644) == 0);
	check_compiles_reference(l);
	CHECK(stat(path, &st) == 0);
	CHECK_EQ(st.st_mode & 07777, 0600);
	plant_allow_all(path);
	CHECK(chown(path, NOBODY, 0) == 0);
	check_compiles_reference(l);
	CHECK(stat(path, &st) == 0);
	CHECK_EQ(st.st_uid, 0);
}

/* A file with a second name could be written through that name: never read. */
static void test_hard_linked_file_is_not_read(void)
{
	enum policy_seccomp l = POLICY_SECCOMP_RESTRICTED;
	char path[256];
	struct stat st;

	check_compiles_reference(l);
	CHECK(cache_file(CACHE_DIR, l, path, sizeof(path)));
	plant_allow_all(path);
	CHECK(link(path, "/var/cache/elsewhere.bpf") == 0);
	check_compiles_reference(l);
	/* the name now holds a fresh file of its own; the other name keeps the planted one */
	CHECK(stat(path, &st) == 0);
	CHECK_EQ(st.st_nlink, 1);
	CHECK(stat("/var/cache/elsewhere.bpf", &st) == 0);
	CHECK_EQ(st.st_nlink, 1);
	CHECK(unlink("/var/cache/elsewhere.bpf") == 0);
}

/* Plants an allow-all file for level, makes dir unsafe with change(), and checks the file is not
 * read; then undo() restores dir. */
static void check_unsafe_dir_is_not_used(const char *what, void (*change)(void), void (*undo)(void))
{
	enum policy_seccomp l = POLICY_SECCOMP_BASELINE;
	char path[256];

	check_compiles_reference(l);
	CHECK(cache_file(CACHE_DIR, l, path, sizeof(path)));
	plant_allow_all(path);
	change();
	fprintf(stderr, "unsafe directory: %s\n", what);
	check_compiles_reference(l);
	undo();
	CHECK(unlink(path) == 0);
}

static void var_cache_0777(void)
{
	CHECK(chmod("/var/cache", 0777) == 0);
}

static void var_cache_0755(void)
{
	CHECK(chmod("/var/cache", 0755) == 0);
}

static void airlock_group_writable(void)
{
	CHECK(chmod("/var/cache/airlock", 0770) == 0);
}

static void airlock_0700(void)
{
	CHECK(chmod("/var/cache/airlock", 0700) == 0);
}

static void seccomp_dir_nobody(void)
{
	CHECK(chown(CACHE_DIR, NOBODY, NOBODY) == 0);
}

static void seccomp_dir_root(void)
{
	CHECK(chown(CACHE_DIR, 0, 0) == 0);
}

/* the cache directory replaced by a symbolic link to a copy holding the planted file */
static void seccomp_dir_symlink(void)
{
	CHECK(rename(CACHE_DIR, "/var/cache/airlock/real") == 0);
	CHECK(symlink("real", CACHE_DIR) == 0);
}

static void seccomp_dir_real(void)
{
	CHECK(unlink(CACHE_DIR) == 0);
	CHECK(rename("/var/cache/airlock/real", CACHE_DIR) == 0);
}

static void test_cache_in_unsafe_directories_is_not_read(void)
{
	check_unsafe_dir_is_not_used("/var/cache writable by all", var_cache_0777, var_cache_0755);
	check_unsafe_dir_is_not_used("/var/cache/airlock group-writable", airlock_group_writable,
				     airlock_0700);
	check_unsafe_dir_is_not_used("cache directory owned by nobody", seccomp_dir_nobody,
				     seccomp_dir_root);
	check_unsafe_dir_is_not_used("cache directory is a symbolic link", seccomp_dir_symlink,
				     seccomp_dir_real);
}

static void test_override_applies_the_same_checks(void)
{
	char tmp[] = "/tmp/airlock-kctl-cache.XXXXXX", path[256], name[256];

	/* a directory of root's: used */
	CHECK(setenv("AIRLOCK_SECCOMP_CACHE", "/var/cache/other/seccomp", 1) == 0);
	check_compiles_reference(POLICY_SECCOMP_RESTRICTED);
	CHECK(
	    cache_file("/var/cache/other/seccomp", POLICY_SECCOMP_RESTRICTED, path, sizeof(path)));

	/* under /tmp, which everybody can write: neither read nor written */
	CHECK(mkdtemp(tmp));
	CHECK(snprintf(name, sizeof(name), "%s/%s", tmp, strrchr(path, '/') + 1) <
	      (int)sizeof(name));
	CHECK(snprintf(path, sizeof(path), "%s", name) < (int)sizeof(path));
	plant_allow_all(path);
	CHECK(setenv("AIRLOCK_SECCOMP_CACHE", tmp, 1) == 0);
	check_compiles_reference(POLICY_SECCOMP_RESTRICTED);
	CHECK_EQ(count_entries(tmp), 1);
	CHECK(unlink(path) == 0);
	CHECK(rmdir(tmp) == 0);

	/* empty, or not absolute: off */
	CHECK(unsetenv("AIRLOCK_SECCOMP_CACHE") == 0);
	CHECK(cache_file(CACHE_DIR, POLICY_SECCOMP_STRICT, path, sizeof(path)));
	CHECK(unlink(path) == 0);
	CHECK(setenv("AIRLOCK_SECCOMP_CACHE", "", 1) == 0);
	check_compiles_reference(POLICY_SECCOMP_STRICT);
	CHECK(setenv("AIRLOCK_SECCOMP_CACHE", "var/cache/airlock/seccomp", 1) == 0);
	check_compiles_reference(POLICY_SECCOMP_STRICT);
	CHECK(!cache_file(CACHE_DIR, POLICY_SECCOMP_STRICT, path, sizeof(path)));
	CHECK(unsetenv("AIRLOCK_SECCOMP_CACHE") == 0);
}

/* The red team's attack: a sandbox whose workspace covers ~/.cache writes an allow-all filter
 * where the next run of the same user would read it. Other users keep no cache: each run
 * compiles, whatever AIRLOCK_SECCOMP_CACHE, XDG_CACHE_HOME or HOME say. */
static void test_other_users_keep_no_cache(void)
{
	static const char *const dirs[] = {
	    "/var/cache/home",
	    "/var/cache/home/.cache",
	    "/var/cache/home/.cache/airlock",
	    "/var/cache/home/.cache/airlock/seccomp",
	    "/var/cache/xdg",
	    "/var/cache/xdg/airlock",
	    "/var/cache/xdg/airlock/seccomp",
	    "/var/cache/mine",
	};
	static const char *const planted[] = {
	    "/var/cache/home/.cache/airlock/seccomp",
	    "/var/cache/xdg/airlock/seccomp",
	    "/var/cache/mine",
	};
	char root_file[256], name[128];
	pid_t pid;

	/* the name root's cache uses is the name the same binary would look for */
	check_compiles_reference(POLICY_SECCOMP_RESTRICTED);
	CHECK(cache_file(CACHE_DIR, POLICY_SECCOMP_RESTRICTED, root_file, sizeof(root_file)));
	CHECK(snprintf(name, sizeof(name), "%s", strrchr(root_file, '/') + 1) < (int)sizeof(name));
	for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
		CHECK(mkdir(dirs[i], 0700) == 0);
		CHECK(chown(dirs[i], NOBODY, NOBODY) == 0);
	}
	for (size_t i = 0; i < ELEMENTSOF(planted); i++) {
		char path[512];

		CHECK(snprintf(path, sizeof(path), "%s/%s", planted[i], name) < (int)sizeof(path));
		plant_allow_all(path);
		CHECK(chown(path, NOBODY, NOBODY) == 0);
	}

	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setresgid(NOBODY, NOBODY, NOBODY) < 0 ||
		    setresuid(NOBODY, NOBODY, NOBODY) < 0)
			_exit(100);
		CHECK(setenv("HOME", "/var/cache/home", 1) == 0);
		CHECK(unsetenv("XDG_CACHE_HOME") == 0);
		CHECK(unsetenv("AIRLOCK_SECCOMP_CACHE") == 0);
		check_compiles_reference(POLICY_SECCOMP_RESTRICTED);
		CHECK(setenv("XDG_CACHE_HOME", "/var/cache/xdg", 1) == 0);
		check_compiles_reference(POLICY_SECCOMP_RESTRICTED);
		CHECK(setenv("AIRLOCK_SECCOMP_CACHE", "/var/cache/mine", 1) == 0);
		check_compiles_reference(POLICY_SECCOMP_RESTRICTED);
		/* and nothing was written for later runs */
		for (int l = 0; l < 3; l++)
			check_compiles_reference((enum policy_seccomp)l);
		for (size_t i = 0; i < ELEMENTSOF(planted); i++)
			CHECK_EQ(count_entries(planted[i]), 1);
		_exit(0);
	}
	CHECK_EQ(kctl_wait(pid), 0);
}

/* / and /var as the cache needs them: root's, not writable by group or others */
static bool safe_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && st.st_uid == 0 && !(st.st_mode & (S_IWGRP | S_IWOTH));
}

int main(void)
{
	kctl_require_root();
	if (!safe_dir("/") || !safe_dir("/var") || !safe_dir("/var/cache"))
		kctl_skip("/, /var or /var/cache is not root's or is writable by others");
	CHECK(unshare(CLONE_NEWNS) == 0);
	CHECK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0);
	CHECK(mount("tmpfs", "/var/cache", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") == 0);

	CHECK(setenv("AIRLOCK_SECCOMP_CACHE", "", 1) == 0);
	for (int l = 0; l < 3; l++)
		compile((enum policy_seccomp)l, &reference[l]);
	CHECK_EQ(count_entries("/var/cache"), 0);
	CHECK(unsetenv("AIRLOCK_SECCOMP_CACHE") == 0);

	test_root_reads_back_its_private_cache();
	test_damaged_files_are_compiled_again();
	test_hard_linked_file_is_not_read();
	test_cache_in_unsafe_directories_is_not_read();
	test_override_applies_the_same_checks();
	test_other_users_keep_no_cache();
	for (int l = 0; l < 3; l++)
		launcher_seccomp_filter_done(&reference[l]);
	fprintf(stderr, "ok\n");
	return 0;
}
