/* tests/unit/fusefs/test-attr.c: what a rootless sandbox is shown of a host file
 * (fusefs_ids_show()) and what a file costs the quota (fusefs_charged_blocks()). Besides the
 * examples, every mode, owner and group is checked: the sandbox's kernel, which refuses any
 * write to an inode with an id it cannot map, then grants exactly what the host grants. */

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "fusefs/fusefs-internal.h"

#define CALLER_UID 4321
#define CALLER_GID 4321
#define MEMBER_GID 4242 /* a supplementary group of the caller */
#define OTHER_UID 0
#define OTHER_GID 0

static gid_t groups[] = {MEMBER_GID, 100};
static const struct fusefs_ids rootless = {
    .userns = true, .uid = CALLER_UID, .gid = CALLER_GID, .groups = groups, .n_groups = 2};

static struct stat file(uid_t uid, gid_t gid, mode_t mode)
{
	return (struct stat){.st_uid = uid, .st_gid = gid, .st_mode = mode};
}

static struct stat shown(uid_t uid, gid_t gid, mode_t mode)
{
	struct stat st = file(uid, gid, mode);

	fusefs_ids_show(&rootless, &st);
	return st;
}

static bool caller_in(gid_t gid)
{
	return gid == CALLER_GID || gid == MEMBER_GID || gid == 100;
}

/* The rwx bits (as 0-7) the caller gets: the owner's, else the group's as a member, else the
 * others'. On the host, and in the sandbox, whose kernel knows only the caller's uid and gid
 * (and its other groups, unnamed). */
static unsigned host_grants(const struct stat *st)
{
	if (st->st_uid == CALLER_UID)
		return (st->st_mode >> 6) & 7;
	if (caller_in(st->st_gid))
		return (st->st_mode >> 3) & 7;
	return st->st_mode & 7;
}

static unsigned sandbox_grants(const struct stat *st)
{
	bool mapped = st->st_uid == CALLER_UID && st->st_gid == CALLER_GID;
	unsigned bits;

	if (st->st_uid == CALLER_UID)
		bits = (st->st_mode >> 6) & 7;
	else if (st->st_gid == CALLER_GID)
		bits = (st->st_mode >> 3) & 7;
	else
		bits = st->st_mode & 7;
	/* fs/namei.c: no write to an inode with an unmapped id. */
	return mapped ? bits : bits & ~2u;
}

static void test_without_a_user_namespace_nothing_changes(void **state)
{
	struct fusefs_ids all = {.userns = false, .uid = CALLER_UID, .gid = CALLER_GID};
	struct stat st = file(OTHER_UID, OTHER_GID, S_IFREG | 0644);

	(void)state;
	fusefs_ids_show(&all, &st);
	assert_int_equal(st.st_uid, OTHER_UID);
	assert_int_equal(st.st_gid, OTHER_GID);
	assert_int_equal(st.st_mode, S_IFREG | 0644);
}

static void test_the_callers_file_of_another_group_keeps_its_mode(void **state)
{
	struct stat st = shown(CALLER_UID, OTHER_GID, S_IFDIR | 0750);

	(void)state;
	assert_int_equal(st.st_uid, CALLER_UID);
	assert_int_equal(st.st_gid, CALLER_GID);
	/* The group's bits stay: a chmod u+x made from them keeps the host's. */
	assert_int_equal(st.st_mode, S_IFDIR | 0750);
}

static void test_roots_file_shows_as_read_only_to_the_caller(void **state)
{
	struct stat st = shown(OTHER_UID, OTHER_GID, S_IFREG | 0644);

	(void)state;
	assert_int_equal(st.st_uid, CALLER_UID);
	assert_int_equal(st.st_gid, CALLER_GID);
	assert_int_equal(st.st_mode, S_IFREG | 0444);
}

static void test_a_group_the_caller_is_in_gives_its_bits(void **state)
{
	(void)state;
	assert_int_equal(shown(OTHER_UID, MEMBER_GID, S_IFREG | 0664).st_mode, S_IFREG | 0664);
	assert_int_equal(shown(OTHER_UID, MEMBER_GID, S_IFREG | 0640).st_mode, S_IFREG | 0440);
	assert_int_equal(shown(OTHER_UID, MEMBER_GID, S_IFDIR | 02775).st_mode, S_IFDIR | 02775);
	assert_int_equal(shown(OTHER_UID, OTHER_GID, S_IFREG | 0640).st_mode, S_IFREG | 0000);
}

static void test_special_bits_and_type_are_kept(void **state)
{
	(void)state;
	assert_int_equal(shown(OTHER_UID, OTHER_GID, S_IFDIR | 01777).st_mode, S_IFDIR | 01777);
	assert_int_equal(shown(OTHER_UID, OTHER_GID, S_IFREG | 04755).st_mode, S_IFREG | 04555);
	assert_int_equal(shown(OTHER_UID, OTHER_GID, S_IFLNK | 0777).st_mode, S_IFLNK | 0777);
}

/* Every mode, owner and group: the ids shown are ones the sandbox maps, and its kernel grants
 * the caller exactly what the host does. */
static void test_the_sandbox_grants_what_the_host_grants(void **state)
{
	const uid_t uids[] = {CALLER_UID, OTHER_UID, 1000};
	const gid_t gids[] = {CALLER_GID, MEMBER_GID, 100, OTHER_GID, 1000};

	(void)state;
	for (size_t u = 0; u < sizeof(uids) / sizeof(uids[0]); u++)
		for (size_t g = 0; g < sizeof(gids) / sizeof(gids[0]); g++)
			for (mode_t m = 0; m <= 07777; m++) {
				struct stat host = file(uids[u], gids[g], S_IFREG | m);
				struct stat st = host;

				fusefs_ids_show(&rootless, &st);
				assert_int_equal(st.st_uid, CALLER_UID);
				assert_int_equal(st.st_gid, CALLER_GID);
				assert_int_equal(st.st_mode & (S_IFMT | 07000),
						 host.st_mode & (S_IFMT | 07000));
				assert_int_equal(st.st_mode & 7, m & 7);
				assert_int_equal(sandbox_grants(&st), host_grants(&host));
			}
}

static void test_every_inode_costs_at_least_a_block(void **state)
{
	struct stat empty = {.st_mode = S_IFREG};
	struct stat small = {.st_mode = S_IFREG, .st_size = 1, .st_blocks = 8};
	struct stat sparse = {.st_mode = S_IFREG, .st_size = 1 << 20, .st_blocks = 8};
	struct stat dir = {.st_mode = S_IFDIR, .st_size = 12288, .st_blocks = 24};
	struct stat tmpfs_dir = {.st_mode = S_IFDIR, .st_size = 60};
	struct stat fast_link = {.st_mode = S_IFLNK, .st_size = 10};

	(void)state;
	assert_int_equal(fusefs_charged_blocks(&empty), FUSEFS_INODE_BLOCKS);
	assert_int_equal(fusefs_charged_blocks(&small), 8);
	assert_int_equal(fusefs_charged_blocks(&sparse), 2048);
	assert_int_equal(fusefs_charged_blocks(&dir), 24);
	assert_int_equal(fusefs_charged_blocks(&tmpfs_dir), FUSEFS_INODE_BLOCKS);
	assert_int_equal(fusefs_charged_blocks(&fast_link), FUSEFS_INODE_BLOCKS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_without_a_user_namespace_nothing_changes),
	    cmocka_unit_test(test_the_callers_file_of_another_group_keeps_its_mode),
	    cmocka_unit_test(test_roots_file_shows_as_read_only_to_the_caller),
	    cmocka_unit_test(test_a_group_the_caller_is_in_gives_its_bits),
	    cmocka_unit_test(test_special_bits_and_type_are_kept),
	    cmocka_unit_test(test_the_sandbox_grants_what_the_host_grants),
	    cmocka_unit_test(test_every_inode_costs_at_least_a_block),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
