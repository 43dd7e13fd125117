#pragma once

/* Host paths that airlock exposes to a sandbox: resolving them and refusing the dangerous ones. */

#include <stdbool.h>
#include <sys/types.h>

#include "common/error.h"

/* True when a equals b or lies below it (both canonical). */
bool al_path_is_within(const char *a, const char *b);
/* True when canonical is a host folder no sandbox is given writable whatever its real path:
 * /, the system trees (/etc, /usr, /proc, ...) and the roots of /var, /home, /tmp, /run, ...
 * (what al_path_resolve_exposable() refuses, without looking at the file system). */
bool al_path_is_system_folder(const char *canonical);

/* Resolves source (a host folder or file named by a policy field or an option) to its canonical
 * path in *ret. Refuses, naming field in err: a path that does not exist (-errno), one that
 * resolves through a symbolic link (-ELOOP: the workspace is the sandbox's to shape, so a link
 * found on the way may have been planted by an earlier sandbox to aim a later bind at a host
 * folder), one that is, lies in or holds one of airlock's state folders even read-only
 * (al_path_check_state(): a socket is reachable through a read-only bind), and, when writable, /,
 * the system trees (/etc, /usr, /proc, /sys, /dev, /boot, ...), the roots of /var, /home, /tmp,
 * /run ..., the user's home folder itself, and /etc/airlock (-EPERM). */
/* airlock's state folders, as this process (its euid and environment) places them. This is the
 * one place that computes them: their users and the bind checks both call it. */
enum al_state_kind {
	/* sessions' folders (control sockets, policies, checkpoints): root
	 * /var/lib/airlock/sessions, else $XDG_STATE_HOME/airlock/sessions or
	 * ~/.local/state/airlock/sessions */
	AL_STATE_SESSIONS,
	/* the default vault's folder: root /var/lib/airlock, else $XDG_DATA_HOME/airlock or
	 * ~/.local/share/airlock */
	AL_STATE_DATA,
	/* the broker daemon's socket folder: root /run/airlock, else $XDG_RUNTIME_DIR/airlock */
	AL_STATE_RUNTIME,
	/* the seccomp filter cache's parent: /var/cache/airlock, root only */
	AL_STATE_CACHE,
	/* exec's fresh workspaces, in a folder no one else can make first: root /run/airlock-exec,
	 * else $XDG_RUNTIME_DIR/airlock-exec */
	AL_STATE_SCRATCH,
	/* ... or, where there is none, $TMPDIR/airlock-exec-UID (/tmp without $TMPDIR) */
	AL_STATE_SCRATCH_TMP,
	_AL_STATE_MAX,
};
/* Writes kind's folder to buf. Returns 0, -ENOENT when there is none (no home folder or
 * $XDG_RUNTIME_DIR; no cache but root's), -ENAMETOOLONG. */
int al_state_dir(enum al_state_kind kind, char *buf, size_t size);

/* Refuses (-EPERM, naming field) path when it is, lies in or contains one of airlock's state
 * folders: every kind above for root and for this user (with and without the XDG variables),
 * the folder of $AIRLOCK_BROKER and the file $AIRLOCK_VAULT. exec's scratch folders and the last
 * two may have binds below them (a fresh workspace), not above. -errno when path cannot be
 * resolved. For every bind a sandbox gets, read-only ones included. */
int al_path_check_state(const char *path, const char *field, struct al_error *err);

int al_path_resolve_exposable(const char *source, bool writable, const char *field, char **ret,
			      struct al_error *err);

/* snprintf() of a path into buf: 0, or -ENAMETOOLONG when it does not fit (buf then holds a cut
 * string that must not be used). */
int al_path_printf(char *buf, size_t size, const char *fmt, ...) _printf_(3, 4);

/* Removes path and everything below it, never following a link nor crossing into another mount;
 * what cannot be removed stays (best effort: for airlock's own temporary folders). */
void al_path_remove_tree(const char *path);
/* The same for what the folder dir holds (dir stays). */
void al_dir_empty(int dir);

/* Makes the folder dir (absolute) and those above it that are missing, with mode. */
int al_mkdir_p(const char *dir, mode_t mode);
