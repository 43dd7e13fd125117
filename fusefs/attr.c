/* What the workspace shows of a host file, and what it costs the quota: pure decisions on a
 * struct stat, kept apart so that the unit tests need neither libfuse nor the rest of the
 * module. */

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#include "fusefs/fusefs-internal.h"

blkcnt_t fusefs_charged_blocks(const struct stat *st)
{
	blkcnt_t by_size = S_ISREG(st->st_mode) ? (blkcnt_t)((st->st_size + 511) / 512) : 0;
	blkcnt_t used = MAX(st->st_blocks, by_size);

	return MAX(used, (blkcnt_t)FUSEFS_INODE_BLOCKS);
}

static bool in_group(const struct fusefs_ids *ids, gid_t gid)
{
	if (gid == ids->gid)
		return true;
	for (size_t i = 0; i < ids->n_groups; i++)
		if (ids->groups[i] == gid)
			return true;
	return false;
}

void fusefs_ids_show(const struct fusefs_ids *ids, struct stat *st)
{
	mode_t granted;

	if (!ids->userns || (st->st_uid == ids->uid && st->st_gid == ids->gid))
		return;
	if (st->st_uid == ids->uid) {
		/* The owner's bits decide, and the sandbox has no other user: only the group needs
		 * a name the sandbox has. Its bits stay as they are, so that a chmod made from what
		 * the sandbox sees (chmod u+x) keeps the host's group bits. */
		st->st_gid = ids->gid;
		return;
	}
	/* Another user's: the caller gets the group's bits as a member, else the others'. The
	 * kernel would neither write nor remove nor rename an inode whose owner it cannot name
	 * (the caller's own folder may hold root's files), so it is shown as the caller's, with
	 * the bits the caller gets as the owner's and the group's bits. Nothing more is allowed
	 * for it: the daemon acts on the host as the caller, who cannot chmod or chown it there,
	 * nor remove it from a sticky folder. */
	granted = in_group(ids, st->st_gid) ? (st->st_mode & S_IRWXG) >> 3 : st->st_mode & S_IRWXO;
	st->st_mode =
	    (st->st_mode & ~(mode_t)(S_IRWXU | S_IRWXG)) | (granted << 6) | (granted << 3);
	st->st_uid = ids->uid;
	st->st_gid = ids->gid;
}
