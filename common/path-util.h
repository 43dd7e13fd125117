#pragma once

/* Host paths that airlock exposes to a sandbox: resolving them and refusing the dangerous ones. */

#include <stdbool.h>
#include <sys/types.h>

#include "common/error.h"

/* True when a equals b or lies below it (both canonical). */
bool al_path_is_within(const char *a, const char *b);

/* Resolves source (a host folder or file named by a policy field or an option) to its canonical
 * path in *ret. Refuses, naming field in err: a path that does not exist (-errno), one that
 * resolves through a symbolic link (-ELOOP: the workspace is the sandbox's to shape, so a link
 * found on the way may have been planted by an earlier sandbox to aim a later bind at a host
 * folder), one that is or holds a credential broker's folder even read-only (/run/airlock,
 * /var/lib/airlock, $XDG_RUNTIME_DIR/airlock, the folder of $AIRLOCK_BROKER: a socket is reachable
 * through a read-only bind), and, when writable, /, the system trees (/etc, /usr, /proc, /sys,
 * /dev, /boot,
 * ...), the roots of /var, /home, /tmp, /run ..., the user's home folder itself, and airlock's own
 * state (-EPERM). */
int al_path_resolve_exposable(const char *source, bool writable, const char *field, char **ret,
			      struct al_error *err);

/* Removes path and everything below it, never following a link nor crossing into another mount;
 * what cannot be removed stays (best effort: for airlock's own temporary folders). */
void al_path_remove_tree(const char *path);
/* The same for what the folder dir holds (dir stays). */
void al_dir_empty(int dir);

/* Makes the folder dir (absolute) and those above it that are missing, with mode. */
int al_mkdir_p(const char *dir, mode_t mode);
