#pragma once

/* The workspace filesystem: airlock's FUSE filesystem (libfuse3 low-level API) over a host
 * folder. It confines every access beneath that folder, applies the policy's workspace rules,
 * quota and credential files, and audits. See docs/SECURITY.md for what it guarantees. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/ioctl.h>

#include "common/error.h"
#include "common/macro.h"
#include "policy/policy.h"

struct al_audit;
struct broker_client;
struct fusefs;

struct fusefs_options {
	const struct policy *policy;  /* workspace rules, quota, credentials (borrowed) */
	const char *root;	      /* the host folder; NULL: policy->workspace.root */
	const char *mount;	      /* where the sandbox sees it: credential file paths
				       * below it are served inside the workspace */
	struct al_audit *audit;	      /* may be NULL (borrowed) */
	struct broker_client *broker; /* for credential files; may be NULL without any */
	int violations_fd;	      /* where denials are reported, or -EBADF (see below) */
	bool strip_setid; /* drop set-user-ID (and set-group-ID but on folders) from every mode
			   * set: files the sandbox leaves may be run by the host later */
	bool userns; /* the sandbox runs in a user namespace that maps only the caller's euid and
		      * egid, each to itself (a rootless run): ids it cannot map are shown so that
		      * the kernel's checks give what the host's would (fusefs_ids_show()) */
};

/* Opens the root folder and compiles the rules. Refuses a root that is /, a system tree (/etc,
 * /var, /proc, /sys, /dev, /boot, /usr, ...), or a user's home folder itself, a root reached
 * through a symbolic link, and credential file paths it cannot serve. */
int fusefs_new(const struct fusefs_options *o, struct fusefs **ret, struct al_error *err);
struct fusefs *fusefs_free(struct fusefs *fs);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct fusefs *, fusefs_free);

/* ---- placement: the mount is made by whoever will see it ---- */

/* Opens /dev/fuse and creates a detached FUSE mount (fsopen/fsmount: it is in no mount namespace
 * until move_mount()) for a connection with the given mount attributes (MOUNT_ATTR_NODEV |
 * MOUNT_ATTR_NOSUID are always added). uid/gid own the root as the kernel sees it. Returns the
 * default_permissions: the kernel checks modes against the caller (the workspace); without, the
 * daemon alone decides (the credential files, whose writes get EPERM rather than EACCES). Returns
 * the /dev/fuse fd in *ret_fuse_fd (to be served by fusefs_serve() in another process) and the
 * mount in *ret_mount_fd. Uses no libfuse and no allocation: callable in the sandbox child. */
int fusefs_mount_detached(uid_t uid, gid_t gid, uint64_t attrs, bool default_permissions,
			  int *ret_fuse_fd, int *ret_mount_fd);

/* The credential files mount: a second connection whose root lists the credential files that lie
 * outside the workspace, by credential name. Same contract as fusefs_mount_detached(). */
#define FUSEFS_SECRETS_MODE 0500

/* Serves the workspace connection fuse_fd, and the credential-files connection secrets_fd when
 * >= 0, with a thread pool, until the workspace connection ends (the sandbox's mount namespace is
 * gone). It installs no signal handlers. Takes both fds. Returns 0 or -errno. */
int fusefs_serve(struct fusefs *fs, int fuse_fd, int secrets_fd);

/* `airlock fs`: mounts at mountpoint in the caller's mount namespace and serves in the
 * foreground until SIGINT or SIGTERM, then unmounts. Returns 0 or -errno (with err). */
int fusefs_run_foreground(struct fusefs *fs, const char *mountpoint, struct al_error *err);

/* Credentials served as files outside the workspace (the sandbox child binds each from the
 * secrets mount to its path): the i-th such credential's name and path in the sandbox, or NULL
 * past the end. */
const struct policy_credential *fusefs_outside_credential(const struct fusefs *fs, size_t i);

/* ---- violations: one fixed-size record per denial, written to violations_fd (a
 * SOCK_SEQPACKET socket or pipe, non-blocking) when there is room; denials that do not fit are
 * counted in the next record that does. ---- */
struct fusefs_violation {
	char op[16];	  /* "open", "create", "rename", ... */
	char path[128];	  /* inside the workspace, truncated */
	int32_t error;	  /* the errno the sandbox got */
	uint32_t dropped; /* earlier records that did not fit */
};

/* ioctl(fd, FUSEFS_IOC_REFRESH, &size), on a file or folder of the workspace mount: the kernel
 * keeps entries, attributes and pages for a minute and, with the write-back cache, trusts its own
 * idea of a file's size for as long as it holds the file, so a change made on the host behind the
 * mount can stay unseen. This asks the daemon to drop what the kernel caches of it: for a folder,
 * its listing and the entry of every name the host folder holds (a new name the sandbox looked
 * for before is found), and for the root folder also the entry and attributes of every inode the
 * kernel holds (a name the host removed or renamed is looked up again); for a file, its
 * attributes and pages, growing the kernel's size to the host's. size (uint64_t) gets the host
 * file's size, which a reader of the file takes over the kernel's. Anyone in the sandbox may ask:
 * it costs only cache misses. */
#define FUSEFS_IOC_REFRESH _IOR(0xaf, 0x01, uint64_t)

/* ioctl(fd, FUSEFS_IOC_INFO, &info) on the workspace mount: how this connection, and the open
 * file fd, are served. Anyone in the sandbox may ask: the tests check with it that each way of
 * serving is the one they test. */
struct fusefs_info {
	uint32_t uring;	      /* this very request came over io_uring */
	uint32_t passthrough; /* the connection passes opens through to host files */
	uint32_t writeback;   /* the kernel caches writes */
	uint32_t open;	      /* fd, a file: 1 served by the daemon, 2 passed through to the host
			       * file; 0 otherwise */
};
#define FUSEFS_IOC_INFO _IOR(0xaf, 0x02, struct fusefs_info)

/* How a workspace would be served here, and why (`airlock doctor`, `capabilities --json`). */
enum fusefs_transport {
	FUSEFS_TRANSPORT_DEV,	/* libfuse's loop over /dev/fuse */
	FUSEFS_TRANSPORT_URING, /* FUSE over io_uring */
};
struct fusefs_features {
	char libfuse[16]; /* the linked libfuse's version */
	enum fusefs_transport transport;
	bool passthrough; /* opens may pass through to the host file */
	char transport_why[160], passthrough_why[160];
};
void fusefs_features(struct fusefs_features *ret);
const char *fusefs_transport_name(enum fusefs_transport t);

/* The fds a process serving fs must keep (the root folder's), into fds; returns how many. */
size_t fusefs_fds(const struct fusefs *fs, int *fds, size_t n);
