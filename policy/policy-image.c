/* isolation[].image: the one check of the policy that looks at the file system. The launcher
 * opens the folder again when it builds the sandbox; this check is there so that a policy naming
 * something that cannot be a root file system is refused before anything runs. */

#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/fd-util.h"
#include "policy/policy-internal.h"

/* Opens path below root as O_PATH, resolving symbolic links as if root were "/": an absolute
 * link ("/bin/sh -> /usr/bin/dash") or a ".." can never lead outside the image. */
static int open_in_root(int root, const char *path, int flags)
{
	struct open_how how = {
	    .flags = (uint64_t)(O_PATH | O_CLOEXEC | flags),
	    .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};

	return RET_NERRNO((int)syscall(SYS_openat2, root, path, &how, sizeof(how)));
}

static bool image_has_dir(int root, const char *path)
{
	_cleanup_close_ int fd = -EBADF;

	fd = open_in_root(root, path, O_DIRECTORY);
	return fd >= 0;
}

static bool image_has_executable(int root, const char *path)
{
	_cleanup_close_ int fd = -EBADF;
	struct stat st;

	fd = open_in_root(root, path, 0);
	if (fd < 0 || fstat(fd, &st) < 0)
		return false;
	return S_ISREG(st.st_mode) && (st.st_mode & 0111);
}

int policy_resolve_image(const struct policy_where *w, const char *image, char **ret,
			 struct al_error *err)
{
	_cleanup_free_ char *norm = NULL, *real = NULL;
	_cleanup_close_ int fd = -EBADF;
	int r;

	r = policy_normalize_path(w, image, POLICY_PATH_ABSOLUTE, &norm, err);
	if (r < 0)
		return r;
	real = realpath(norm, NULL);
	if (!real)
		return policy_error(err, -EOPNOTSUPP, w, "%s is not a root filesystem folder: %s",
				    QUOTE(image), strerror(errno));
	fd = open(real, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return policy_error(err, -EOPNOTSUPP, w, "%s is not a root filesystem folder: %s",
				    QUOTE(image), strerror(errno));
	if (!image_has_dir(fd, "usr") && !image_has_dir(fd, "bin"))
		return policy_error(err, -EOPNOTSUPP, w,
				    "%s is not a root filesystem folder: it has no usr/ or bin/",
				    QUOTE(image));
	if (!image_has_executable(fd, "bin/sh") && !image_has_executable(fd, "usr/bin/sh"))
		return policy_error(
		    err, -EOPNOTSUPP, w,
		    "%s is not a root filesystem folder: it has no executable bin/sh or usr/bin/sh",
		    QUOTE(image));
	/* The stored path is written into the canonical form, which must load again: the links
	 * followed must not have led to a path the policy could not hold. */
	r = policy_check_string(w, real, POLICY_STRING_MAX, err);
	if (r < 0)
		return r;
	return policy_normalize_path(w, real, POLICY_PATH_ABSOLUTE, ret, err);
}
