#pragma once

/* Internal interfaces of the workspace filesystem, for fusefs/ and tests/unit/fusefs/ only. */

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "common/error.h"
#include "common/macro.h"
#include "fusefs/fusefs.h"
#include "policy/policy.h"

/* Paths here are relative to the workspace root, without a leading or trailing '/', with
 * components separated by single '/' and never "." or "..". The root itself is "". */

/* ---- glob.c: the pattern language of workspace.read/write/deny ----
 * A pattern is a '/'-separated list of components (policy_check_glob() has validated it).
 * Within a component, '*' matches any run of characters and '?' any one character, never '/';
 * a component "**" matches zero or more whole components. A leading '.' in a name is matched by
 * '*' and '?' like any other character. No character classes, no escapes. Matching never
 * allocates and is linear-ish in practice (bounded backtracking, no recursion depth beyond the
 * number of "**" components). */

/* Does pattern match path exactly? */
bool fusefs_glob_match(const char *pattern, const char *path);

/* Could pattern match some path strictly below dir, i.e. "dir/X" for a non-empty X? dir "" is the
 * root, below which everything is. Used to keep folders that lead to readable paths visible and
 * to decide whether a folder rename can change what rules say about its contents. */
bool fusefs_glob_match_below(const char *pattern, const char *dir);

/* The same, but an ASCII letter matches itself in either case: for the built-in lists, which
 * must hold on a file system that folds case. */
bool fusefs_glob_match_fold(const char *pattern, const char *path);
bool fusefs_glob_match_below_fold(const char *pattern, const char *dir);

/* ---- rules.c: per-path decisions ---- */

enum {
	FUSEFS_ACCESS_READ = 1 << 0,	  /* visible: may be looked up, stat'ed, read, listed */
	FUSEFS_ACCESS_WRITE = 1 << 1,	  /* may be written, created, removed, renamed, chmod'ed */
	FUSEFS_ACCESS_TRAVERSE = 1 << 2,  /* a folder not readable itself that leads to readable
					   * paths: it can be looked up and listed (showing only
					   * what is visible), not written */
	FUSEFS_ACCESS_PROTECTED = 1 << 3, /* write refused because the host runs this file later
					   * (.git/hooks/\**, .envrc, ...), not lifted by name */
	FUSEFS_ACCESS_CHECKED = 1 << 4,	  /* with WRITE: a file git reads settings or paths from
					   * (.git/config, .gitmodules, a ".git" file...): its
					   * content is written to a private copy that takes its
					   * name only once fusefs_rules_check_content() passes
					   * it; never in place, never a link or a second name */
};
/* A verdict of 0 means hidden: ENOENT, and the name cannot be created. */

struct fusefs_rules;

/* Compiles workspace.read, workspace.write and workspace.deny of p (an empty list means no path:
 * the policy module itself gives an absent read or write list its default ["**"], so "write": []
 * makes the workspace read-only), plus the built-in write-protected list (protected_entries in
 * rules.c: git's hooks, hook managers' files, shells' start-up files, editors', dev
 * containers' and coding agents' settings), which apply at any depth (a nested repository's
 * .git/hooks is protected too). A protected entry is lifted only by name: when workspace.write
 * holds that very pattern (".git/hooks/\**") or a pattern without wildcards naming the path
 * (".git/config"); "**" does not lift it. Errors: -ENOMEM, -EINVAL (with err) for a pattern
 * policy_check_glob() would refuse.
 * In git's folders the built-in list holds only the hooks (but "*.sample"); the files git reads
 * settings or paths from are FUSEFS_ACCESS_CHECKED instead (lifted by a write pattern without
 * wildcards naming the path), and no symbolic link may be made at or below ".git". With
 * workspace.protect false, none of this applies: no entry is protected, nothing is checked. */
int fusefs_rules_new(const struct policy *p, struct fusefs_rules **ret, struct al_error *err);
struct fusefs_rules *fusefs_rules_free(struct fusefs_rules *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct fusefs_rules *, fusefs_rules_free);

/* Protects, besides the built-in list, what the workspace's own git config makes the host's git
 * run or read (see git-config.c): the folder core.hooksPath names, and every file that
 * include.path / includeIf.*.path names (read in turn, 10 levels deep, as git does), where they
 * lie in the workspace (root_fd, whose host path is root). Lifted only by a write pattern without
 * wildcards naming the path. A missing or unreadable config is no error. Errors: -ENOMEM. */
int fusefs_rules_protect_git(struct fusefs_rules *r, int root_fd, const char *root);

/* What a git config value names (fusefs_git_config_paths()). */
enum fusefs_git_path {
	FUSEFS_GIT_HOOKS,   /* core.hooksPath: relative to the work tree */
	FUSEFS_GIT_INCLUDE, /* include.path, includeIf.*.path: relative to the config file */
};
typedef int (*fusefs_git_path_fn)(enum fusefs_git_path kind, const char *value, void *userdata);

/* Calls fn for each core.hooksPath and include path in a git config text (len bytes, no NUL
 * needed), in order, with the value unquoted and unescaped. A malformed line is skipped. Returns
 * 0, or the first negative value fn returns. */
int fusefs_git_config_paths(const char *text, size_t len, fusefs_git_path_fn fn, void *userdata);

/* What a file git reads must say, when the sandbox writes it (fusefs_git_check()). */
enum fusefs_git_check {
	FUSEFS_GIT_CHECK_NONE,
	FUSEFS_GIT_CHECK_CONFIG,    /* config, config.worktree, .gitmodules, sequencer/opts */
	FUSEFS_GIT_CHECK_GITFILE,   /* a ".git" file: "gitdir: PATH" */
	FUSEFS_GIT_CHECK_COMMONDIR, /* a git folder's commondir: the PATH of another */
	FUSEFS_GIT_CHECK_GITDIR,    /* a worktree's gitdir: the PATH of its ".git" file */
	FUSEFS_GIT_CHECK_TODO,	    /* a rebase's or a sequencer's todo list */
	FUSEFS_GIT_CHECK_STRATEGY,  /* rebase-merge/strategy: a merge strategy's name */
	FUSEFS_GIT_CHECK_HEAD,	    /* a HEAD outside git's folders: not one git would take */
};

/* Where a checked file lies: its folder (workspace-relative), and the workspace's host path and
 * sandbox path (either may be NULL), which absolute paths in it may start with. */
struct fusefs_git_where {
	const char *dir;
	const char *root;
	const char *mount;
};

/* Whether text (len bytes, no NUL needed) may be the file of kind at where: 0, or -EACCES with
 * what is refused in why (a setting's name, "core.fsmonitor", or a few words). A config file may
 * set only the settings of an allow-list that run nothing and lead git nowhere outside the
 * workspace; a file git does not parse as git would is refused whole. A path (gitdir, commondir)
 * must stay in the workspace, climb with ".." only from the file's own folder, and (but a
 * worktree's gitdir) lead below a ".git" folder, whose contents are checked alike. A todo list
 * holds no exec line. Pure: no system call. */
int fusefs_git_check(enum fusefs_git_check kind, const char *text, size_t len,
		     const struct fusefs_git_where *where, char *why, size_t size);

/* The FUSEFS_ACCESS_* bits for path. Deny wins over everything, and a denied folder hides all
 * below it; a path whose parent is hidden is hidden. WRITE implies READ. The root "" is always
 * at least TRAVERSE. */
unsigned fusefs_rules_decide(const struct fusefs_rules *r, const char *path, bool is_dir);

/* Whether path is a git folder (".git", a bare "NAME.git") or lies in one. */
bool fusefs_rules_in_git(const char *path);

/* Whether writes to the file at path are content-checked (FUSEFS_ACCESS_CHECKED): such a file
 * is written only through the daemon (no passthrough), to a copy that replaces it once checked. */
bool fusefs_rules_content_checked(const struct fusefs_rules *r, const char *path);

/* Whether a symbolic link to target (NULL: not known) may be made (or moved) at path: not as
 * ".git", and below a ".git" folder only to a plain name in its own folder and not as "hooks"
 * nor a checked name, where it could lead git's reads of settings or hooks to a file nothing
 * checks. */
bool fusefs_rules_may_symlink(const struct fusefs_rules *r, const char *path, const char *target);

/* Whether text (len bytes) may be the content of the file at path: 0 when path is not
 * content-checked or text passes fusefs_git_check(); else -EACCES with what is refused in why. */
int fusefs_rules_check_content(const struct fusefs_rules *r, const char *path, const char *text,
			       size_t len, char *why, size_t size);

/* False when no path at all can be written: the whole tree is then read-only (EROFS). */
bool fusefs_rules_any_writable(const struct fusefs_rules *r);

/* Whether moving folder from to to (both paths of folders) can leave every decision about the
 * paths below it unchanged: true when no pattern (read, write, deny, protected) can tell from/X
 * from to/X for any X, e.g. patterns like "**", "**" then "/NAME" or a prefix both lie under. When
 * false, the caller checks the folder's contents one by one (or refuses with EXDEV). */
bool fusefs_rules_rename_is_uniform(const struct fusefs_rules *r, const char *from, const char *to);

/* ---- attr.c: what the sandbox is shown of a host file, and what it costs ---- */

/* Every file, folder and link costs the quota at least one 4 KiB block (in 512-byte units), as
 * on a file system without inline data: an inode and its folder entry take room on the host's
 * disk (and one of its inodes) even when empty, and the quota bounds their number too. */
#define FUSEFS_INODE_BLOCKS 8

/* What a file costs the quota, in 512-byte units: what it has allocated, or its size when that
 * is more, and at least FUSEFS_INODE_BLOCKS. The size is known the moment a write lands;
 * allocation may come later (delayed allocation), and a quota that trailed it would let a write
 * through. Sparse files cost their size: the quota errs towards full. */
blkcnt_t fusefs_charged_blocks(const struct stat *st);

/* The ids a rootless sandbox's user namespace maps (each to itself): its one uid and gid; the
 * caller's other groups (which the sandbox's processes keep, unnamed) are listed in groups. */
struct fusefs_ids {
	bool userns; /* false: the sandbox's namespace maps every id (a run as root), nothing is
		      * changed */
	uid_t uid;
	gid_t gid;
	gid_t *groups;
	size_t n_groups;
};

/* Changes the host's st into what a rootless sandbox is shown. Its kernel refuses to write,
 * remove or rename an inode whose owner or group its user namespace cannot map, and checks modes
 * against its one uid and gid; so every id is shown as the caller's, with modes that give what
 * the host gives the caller: the caller's own files keep their mode (only the group's name
 * changes); another user's file shows as its owner's and group's bits the ones the caller gets on
 * the host (the group's as a member of it, else the others'). The daemon still acts on the host
 * as the caller: what is shown never allows more than the host does (a chmod of another's file
 * gets EPERM there). */
void fusefs_ids_show(const struct fusefs_ids *ids, struct stat *st);

/* ---- transport.c: io_uring and passthrough ---- */

enum fusefs_uring {
	FUSEFS_URING_AUTO,     /* where the kernel and libfuse allow */
	FUSEFS_URING_OFF,      /* AIRLOCK_FS_TRANSPORT=dev */
	FUSEFS_URING_REQUIRED, /* AIRLOCK_FS_TRANSPORT=uring: refused where it cannot be had */
};

/* How an open is served (fusefs_io_open()). */
enum fusefs_io {
	FUSEFS_IO_NONE,	       /* the connection has no passthrough: nothing is tracked */
	FUSEFS_IO_CACHED,      /* by the daemon, through the kernel's page cache */
	FUSEFS_IO_PASSTHROUGH, /* by the kernel, on the host file */
};

struct fusefs;
struct fuse_conn_info;
struct fusefs_inode;
struct fuse_file_info;
struct fuse_req;

/* Reads AIRLOCK_FS_TRANSPORT and AIRLOCK_FS_PASSTHROUGH into fs. -EINVAL for a bad value,
 * -EOPNOTSUPP when io_uring is required and cannot be had (with err). */
int fusefs_transport_choose(struct fusefs *fs, struct al_error *err);
/* The libfuse option that asks for io_uring ("io_uring"), or NULL; turns the fuse module's
 * enable_uring on as root. */
const char *fusefs_transport_option(struct fusefs *fs, bool secrets);
/* Negotiates the connection's features at INIT (workspace: false for the credential files). */
void fusefs_transport_init(struct fusefs *fs, struct fuse_conn_info *conn, bool workspace);
/* Whether an open may, or had better, pass through (ops.c decides, fusefs_io_open() obeys). */
enum fusefs_pass {
	FUSEFS_PASS_NEVER,  /* the daemon serves it: not a regular file, or a content-checked one */
	FUSEFS_PASS_CACHED, /* better through the page cache, but may pass through */
	FUSEFS_PASS_BEST,   /* better passed through */
};

/* Decides how a new open of in (fd: the daemon's open of the host file) is served, into *ret,
 * setting fi's backing_id: passthrough when pass is FUSEFS_PASS_BEST and the inode is not open
 * through the cache, or when it is open on its backing file already (the kernel takes nothing
 * else then; -EBUSY when the open must not pass through). */
int fusefs_io_open(struct fusefs *fs, struct fuse_req *req, struct fusefs_inode *in, int fd,
		   enum fusefs_pass pass, struct fuse_file_info *fi, enum fusefs_io *ret);
/* Invalidates, after the current request's reply, the kernel's entry of name in parent, or (name
 * NULL) the attributes and pages of inode ino (transport.c: never from a handler directly). */
struct fuse_session;
void fusefs_notify_later(struct fusefs *fs, struct fuse_session *se, uint64_t parent,
			 const char *name, uint64_t ino);
/* Sends what is queued, then ends the thread (before the sessions go). */
void fusefs_notify_stop(struct fusefs *fs);
/* An open served as io ended. */
void fusefs_io_release(struct fusefs *fs, struct fuse_req *req, struct fusefs_inode *in,
		       enum fusefs_io io);
/* Whether the kernel asks, with this open, create or write, that set-user-ID and set-group-ID be
 * dropped as the host's kernel would for the caller (fs->killpriv only). */
bool fusefs_io_kill_suidgid(const struct fuse_file_info *fi);

/* ---- the filesystem's state (fs.c) ---- */

#define FUSEFS_DEPTH_MAX 512   /* components below the root */
#define FUSEFS_PATH_MAX 4096   /* bytes of a workspace-relative path, NUL included */
#define FUSEFS_FD_CACHE_MIN 64 /* O_PATH fds kept open for recently used inodes */
#define FUSEFS_FD_CACHE_MAX 4096

struct broker_secret;

/* One inode the kernel knows (nlookup > 0) or that a child or an operation in flight still
 * references (refs > 0). Its FUSE inode number is its address. It holds no fd of its own: a
 * file handle reopens it when needed, and a bounded cache keeps the recently used fds. Without
 * file handles (not root, or a file system without them) each inode pins one O_PATH fd. */
struct fusefs_inode {
	struct fusefs_inode *hash_next;
	struct fusefs_inode *lru_prev, *lru_next; /* in fs->lru while fd >= 0 && fd_users == 0 */
	struct fusefs_inode *parent;		  /* the folder it was last seen in (a ref) */
	char *name;				  /* its name there; "" for the root */
	dev_t dev;
	ino_t ino;
	mode_t type; /* S_IFMT bits */
	uint64_t nlookup;
	uint32_t refs;
	int fd;
	uint32_t fd_users;
	unsigned access;     /* FUSEFS_ACCESS_* for its path, valid while access_gen matches */
	uint64_t access_gen; /* 0: never decided */
	int cred;	     /* a credential file: index into fs->creds, else -1 */
	/* The quota's, under fs->quota_lock: */
	uint32_t open_count;	/* our open file handles of it */
	blkcnt_t blocks;	/* allocation last charged to the quota (512-byte units) */
	bool orphan;		/* its last name went while open: uncharged at the last close */
	int64_t stamp_mtime_ns; /* the host file as the kernel's page cache last knew it */
	off_t stamp_size;
	bool stamped;
	/* Its I/O mode in the kernel (transport.c), under fs->quota_lock: */
	uint32_t cached_opens;	    /* open through the page cache */
	uint32_t passthrough_opens; /* open on backing_id */
	int backing_id;		    /* > 0 while passthrough_opens > 0 */
	struct file_handle *handle;
};

/* A credential served as a file. */
struct fusefs_cred {
	const char *name; /* credential name (borrowed from the policy) */
	char *rel;	  /* path inside the workspace, or NULL when outside (secrets mount) */
	struct fusefs_inode *inode;
};

struct fuse_session;

/* A FUSE connection's userdata: the workspace's, or the credential files' (root: secrets_root). */
struct fusefs_conn {
	struct fusefs *fs;
	struct fusefs_inode *root;
	struct fuse_session *se;
};

struct fusefs {
	const struct policy *policy;
	struct fusefs_rules *rules;
	struct al_audit *audit;
	struct broker_client *broker;
	int violations_fd;
	bool strip_setid;
	int root_fd;  /* O_PATH of the host folder */
	int mount_fd; /* the same, readable: for open_by_handle_at() */
	dev_t root_dev;
	int mount_id;
	bool use_handles;
	bool any_writable;
	uid_t euid;
	gid_t egid;
	struct fusefs_ids ids; /* what the sandbox's user namespace maps */

	pthread_mutex_t lock; /* the table, refs, LRU, parent/name links; fusefs_unlock() */
	/* What was let go under the lock, closed and freed by fusefs_unlock() after it: the close
	 * of the last fd of an unlinked file is where the host's file system frees it (tens of
	 * µs), and every request waits for the lock. */
	struct fusefs_inode *dead;
	int dead_fds[32];
	size_t n_dead_fds;
	struct fusefs_inode root;
	struct fusefs_inode **buckets;
	size_t n_buckets, n_inodes;
	struct fusefs_inode lru; /* list head */
	size_t n_cached, cache_max;
	uint64_t rule_gen; /* bumped by every folder rename: cached decisions go stale */

	struct fusefs_cred *creds;
	size_t n_creds;
	struct fusefs_inode secrets_root;

	uint64_t quota, usage; /* bytes (allocated blocks); usage under quota_lock */
	uintptr_t ino_key;     /* FUSE inode numbers are addresses XOR this: they do not show the
				* daemon's heap layout to whoever can get a file handle */
	pthread_mutex_t quota_lock;
	uint32_t violations_dropped;
	uint64_t audited;	/* allowed accesses audited so far */
	uint64_t denials[4096]; /* per hashed (operation, path): denials so far */
	bool writeback;		/* the kernel caches writes: O_APPEND is its business */
	bool killpriv;		/* the daemon drops set-user/group-ID on writes (KILLPRIV_V2) */
	enum fusefs_uring uring;
	bool passthrough_wanted;     /* libfuse can, and AIRLOCK_FS_PASSTHROUGH is not 0 */
	bool passthrough;	     /* the workspace connection negotiated passthrough */
	bool passthrough_failed;     /* a backing file was refused: the daemon serves every open */
	pthread_mutex_t notify_lock; /* fusefs_notify_later()'s queue and thread */
	pthread_cond_t notify_cond;
	struct fusefs_notice *notices;
	pthread_t notifier;
	bool notifier_started, notify_stop;
	bool refreshing; /* a FUSEFS_IOC_REFRESH of the root is under way */
	struct fusefs_conn conns[2];
};

/* The FUSE inode number of in: its address XOR fs->ino_key, the root's FUSE_ROOT_ID (1). */
static inline uint64_t fusefs_ino(const struct fusefs *fs, const struct fusefs_inode *in)
{
	return in == &fs->root ? 1 : (uint64_t)((uintptr_t)in ^ fs->ino_key);
}

/* Unlocks fs->lock, then closes and frees what was let go under it (fs->dead). */
void fusefs_unlock(struct fusefs *fs);
/* Finds or adds the inode of st, looked up as name in parent, and counts one kernel lookup.
 * fd is an O_PATH fd of it (consumed: kept in the cache or closed). */
int fusefs_inode_remember(struct fusefs *fs, struct fusefs_inode *parent, const char *name, int fd,
			  const struct stat *st, struct fusefs_inode **ret);
/* The kernel forgets n lookups. */
void fusefs_inode_forget(struct fusefs *fs, struct fusefs_inode *in, uint64_t n);
/* An O_PATH fd of in, valid until fusefs_inode_put_fd(). -ESTALE when it is gone. */
int fusefs_inode_get_fd(struct fusefs *fs, struct fusefs_inode *in);
void fusefs_inode_put_fd(struct fusefs *fs, struct fusefs_inode *in);
/* Moves in to (parent, name) after a rename or a lookup under another name. Lock held. */
int fusefs_inode_move(struct fusefs *fs, struct fusefs_inode *in, struct fusefs_inode *parent,
		      const char *name);
/* The same for the inode (dev, ino) if the table has it; takes the lock. */
int fusefs_inode_rename(struct fusefs *fs, dev_t dev, ino_t ino, struct fusefs_inode *parent,
			const char *name);
/* The host file st (as it was before) lost a name through us. When it was its last, the inode
 * leaves the table (its number may be reused by a new file) and its blocks leave the quota, at
 * once or at its last close. */
void fusefs_inode_unlinked(struct fusefs *fs, const struct stat *st);
/* An open file handle of in (st: the file now) starts or ends; charges what it changed. */
void fusefs_inode_opened(struct fusefs *fs, struct fusefs_inode *in, const struct stat *st);
void fusefs_inode_closed(struct fusefs *fs, struct fusefs_inode *in, int fd);
/* Charges the quota with how in's allocation changed, fd being an fd of it. */
void fusefs_inode_charge(struct fusefs *fs, struct fusefs_inode *in, int fd);

/* An inode the kernel may hold, for fusefs_refresh(): a reference to it, its parent's address
 * and its name there when it was listed. */
struct fusefs_known {
	struct fusefs_inode *in;
	uintptr_t parent; /* the parent's address, 0 for none */
	char *name;
};
/* Every inode of the table, each with a reference that fusefs_known_free() drops. -ENOMEM. */
int fusefs_known_list(struct fusefs *fs, struct fusefs_known **ret, size_t *ret_n);
void fusefs_known_free(struct fusefs *fs, struct fusefs_known *k, size_t n);

/* Writes the workspace-relative path of name in parent (name NULL: of parent itself) into buf.
 * -ENAMETOOLONG past FUSEFS_PATH_MAX or FUSEFS_DEPTH_MAX. */
int fusefs_path(struct fusefs *fs, struct fusefs_inode *parent, const char *name, char *buf,
		size_t size);
/* The rules' verdict for in's own path (cached per inode). */
unsigned fusefs_inode_access(struct fusefs *fs, struct fusefs_inode *in);
/* Whether the kernel may keep the pages it has of in, whose host file is now st: yes when the
 * host file did not change since the last open (or since our own writes, with update), so that
 * a change made on the host behind the mount is seen at the next open. Records st. */
bool fusefs_inode_stamp(struct fusefs *fs, struct fusefs_inode *in, const struct stat *st,
			bool update);
/* The index of the credential file whose workspace path is rel, or -ENOENT. */
int fusefs_cred_at(const struct fusefs *fs, const char *rel);

/* ---- audit and violations (fs.c) ---- */
struct al_audit_field;
void fusefs_audit(struct fusefs *fs, pid_t pid, const char *op, const char *path, int error,
		  const struct al_audit_field *extra, size_t n_extra);
/* A denial: audited, and reported on violations_fd. Returns error (negative). */
int fusefs_deny(struct fusefs *fs, pid_t pid, const char *op, const char *path, int error);

/* ---- git-guard.c: writes to content-checked files (FUSEFS_ACCESS_CHECKED) ---- */

/* A private copy for a write handle of a content-checked file: an unnamed file (O_TMPFILE) in
 * the folder dir_fd, with the content of src_fd (none when src_fd < 0), mode, and (as root) the
 * owner uid:gid. Returns its fd (O_RDWR), or -errno (-EACCES where the host's file system has
 * no O_TMPFILE). */
int fusefs_guard_stage(struct fusefs *fs, int dir_fd, int src_fd, uid_t uid, gid_t gid,
		       mode_t mode);

/* Checks the content of fd (a copy only the daemon holds) as the file at path, and when it
 * passes gives it that name, replacing the old file atomically (with noreplace: -EEXIST when
 * there is one). A refusal is reported (fusefs_deny(), the path followed by what was refused:
 * ".git/config: core.fsmonitor") and is -EACCES. Charges the quota for the new file. */
int fusefs_guard_commit(struct fusefs *fs, pid_t pid, const char *op, const char *path, int fd,
			bool noreplace);

/* A write handle's copy of the content-checked file at path, whose fd (readable) is src_fd:
 * its content when copy, its mode, and the owner uid:gid ((uid_t)-1, (gid_t)-1: src_fd's). */
int fusefs_guard_open(struct fusefs *fs, const char *path, int src_fd, bool copy, uid_t uid,
		      gid_t gid);

/* Whether the copy fd would pass the check for path: 0, or -EACCES with what is refused in why
 * (may be NULL), or -errno. Records nothing (fusefs_guard_commit() decides and records). */
int fusefs_guard_check(struct fusefs *fs, const char *path, int fd, char *why, size_t size);

/* A rename of name in pfd (whose stat was src) onto the content-checked path to: a checked copy
 * of it takes the name to (fusefs_guard_commit()), then name is removed. -EAGAIN when name was
 * replaced in between. The kernel's entry for to still leads to the source's inode: the caller
 * invalidates it. */
int fusefs_guard_rename(struct fusefs *fs, pid_t pid, int pfd, const char *name,
			const struct stat *src, const char *to, bool noreplace);

/* ---- quota (fs.c) ---- */
/* Adds delta bytes to the usage; with grow, fails with -ENOSPC when that would pass the quota. */
int fusefs_quota_charge(struct fusefs *fs, int64_t delta, bool check);
/* True when nothing more may be made: the quota is used up. */
bool fusefs_quota_full(struct fusefs *fs);

/* ---- ops.c ---- */
struct fuse_session;
/* A libfuse session for the workspace, or (secrets) the credential files' connection. */
int fusefs_session_new(struct fusefs *fs, bool secrets, struct fuse_session **ret);

/* ---- refresh.c ---- */
struct fuse_file_info;
struct fuse_req;
/* The FUSE ioctl operation (a fuse_req_t, a fuse_ino_t): FUSEFS_IOC_REFRESH (see fusefs.h),
 * ENOTTY for anything else. */
void fusefs_op_ioctl(struct fuse_req *req, uint64_t ino, unsigned int cmd, void *arg,
		     struct fuse_file_info *fi, unsigned flags, const void *in_buf, size_t in_bufsz,
		     size_t out_bufsz);
