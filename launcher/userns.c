/* The user namespace of a sandbox that root starts under a profile (linux-ns-v1): its ids
 * 0..65535 are mapped to an unprivileged host range, so that its root is nobody on the host.
 * The range is root's own subordinate range in /etc/subuid and /etc/subgid (a line "root:" or
 * "0:" with at least 65536 ids), else LAUNCHER_USERNS_ROOT_BASE, which lies above every range
 * Debian's useradd hands out (SUB_UID_MAX 600100000) and in the range systemd leaves unused
 * (1879048192..2147352575: not its containers', not its foreign ids'). */

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "common/fd-util.h"
#include "common/macro.h"
#include "launcher/launcher-internal.h"

#define SUBID_FILE_MAX (1024 * 1024)

/* Whether [n, n+len) of a line is the decimal number that fits an id, into *ret. */
static bool parse_id(const char *s, size_t len, uint64_t *ret)
{
	uint64_t v = 0;

	if (len == 0 || len > 10)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*ret = v;
	return true;
}

int launcher_userns_subid_range(const char *text, size_t len, uint32_t *ret_base)
{
	for (const char *p = text, *end = text + len; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		const char *c1 = memchr(p, ':', n), *c2;
		uint64_t base, count;

		c2 = c1 ? memchr(c1 + 1, ':', (size_t)(p + n - c1 - 1)) : NULL;
		if (c2 &&
		    (((size_t)(c1 - p) == 4 && memcmp(p, "root", 4) == 0) ||
		     ((size_t)(c1 - p) == 1 && p[0] == '0')) &&
		    parse_id(c1 + 1, (size_t)(c2 - c1 - 1), &base) &&
		    parse_id(c2 + 1, (size_t)(p + n - c2 - 1), &count) &&
		    count >= LAUNCHER_USERNS_ROOT_COUNT && base > 0 &&
		    base + LAUNCHER_USERNS_ROOT_COUNT <= UINT32_MAX) {
			*ret_base = (uint32_t)base;
			return 0;
		}
		p += n + (nl ? 1 : 0);
	}
	return -ENOENT;
}

/* Root's range in path, or the default when the file or the line is not there. */
static uint32_t root_range(const char *path)
{
	_cleanup_free_ char *text = NULL;
	uint32_t base = LAUNCHER_USERNS_ROOT_BASE;
	size_t len = 0;

	if (al_read_file_at(AT_FDCWD, path, SUBID_FILE_MAX, &text, &len) >= 0)
		(void)launcher_userns_subid_range(text, len, &base);
	return base;
}

void launcher_userns_root_map(uint32_t *ret_uid_base, uint32_t *ret_gid_base)
{
	*ret_uid_base = root_range("/etc/subuid");
	*ret_gid_base = root_range("/etc/subgid");
}
