/* Admission: which policies of a high tier may run at all. The admitted set is a file the
 * operator keeps (by default /etc/airlock/admitted), one policy hash per line; the policy's own
 * fields cannot name it, so a request that brings its own policy cannot admit itself. */

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fd-util.h"
#include "policy/policy-internal.h"

#define ADMITTED_FILE_MAX (1024 * 1024)

static bool is_hex_hash(const char *s, size_t n)
{
	if (n != POLICY_HASH_HEX_SIZE - 1)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!strchr("0123456789abcdef", s[i]) || s[i] == '\0')
			return false;
	return true;
}

/* Whether the file's owner and mode let it speak for the operator: root's or the caller's, and
 * writable by nobody else. */
static int check_trusted(int fd, const char *path, struct al_error *err)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return al_error_set(err, -errno, "%s: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return al_error_set(err, -EPERM, "The admitted set %s is not a regular file", path);
	if ((st.st_uid != 0 && st.st_uid != geteuid()) || (st.st_mode & (S_IWGRP | S_IWOTH)))
		return al_error_set(
		    err, -EPERM,
		    "The admitted set %s is not trusted: it must belong to root (or "
		    "this user) and be writable by no one else",
		    path);
	return 0;
}

int policy_admitted_in(const char *text, size_t len, const char *hash, bool *ret,
		       struct al_error *err)
{
	bool found = false;
	size_t line = 0;

	for (const char *p = text, *end = text + len; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p), w;

		line++;
		while (n > 0 && (*p == ' ' || *p == '\t'))
			p++, n--;
		/* Never past the line: text need not end in a NUL. */
		for (w = 0; w < n && p[w] != ' ' && p[w] != '\t' && p[w] != '#'; w++)
			;
		if (n > 0 && *p != '#') {
			if (!is_hex_hash(p, w) || (w < n && p[w] != ' ' && p[w] != '\t'))
				return al_error_set(err, -EINVAL,
						    "line %zu is not a policy hash (64 lower-case "
						    "hex digits, then an optional comment)",
						    line);
			/* Read on to the end: a malformed set is refused whole. */
			found = found || memcmp(p, hash, w) == 0;
		}
		p += n + (nl ? 1 : 0);
	}
	*ret = found;
	return 0;
}

int policy_check_admitted(const struct policy *p, const char *path, struct al_error *err)
{
	char hash[POLICY_HASH_HEX_SIZE];
	_cleanup_free_ char *text = NULL;
	_cleanup_close_ int fd = -EBADF;
	bool admitted = false;
	size_t len;
	int r;

	if (p->tier < POLICY_TIER_ADMITTED)
		return 0;
	r = policy_hash_hex(p, hash);
	if (r < 0)
		return al_error_set(err, r, "Failed to hash the policy");
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return al_error_set(err, -EPERM,
				    "Policy %s (tier %d) is not admitted: the admitted set %s "
				    "cannot be read (%s)",
				    hash, p->tier, path, strerror(errno));
	r = check_trusted(fd, path, err);
	if (r < 0)
		return r;
	r = al_read_fd(fd, ADMITTED_FILE_MAX, &text, &len);
	if (r < 0)
		return al_error_set(err, r, "The admitted set %s cannot be read: %s", path,
				    strerror(-r));
	r = policy_admitted_in(text, len, hash, &admitted, err);
	if (r < 0) {
		al_error_prefix(err, "The admitted set %s", path);
		return r;
	}
	if (!admitted)
		return al_error_set(err, -EPERM,
				    "Policy %s (tier %d) is not admitted: its hash is not in %s",
				    hash, p->tier, path);
	return 0;
}
