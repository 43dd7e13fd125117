/* fuzz-ssh: the egress proxy reads the clear start of every SSH connection to learn the server's
 * host key (netns/ssh.c), from bytes the sandbox sends and bytes a server sends. The input is a
 * run of chunks, each a direction byte (bit 0: from the server), a 16-bit big-endian length and
 * that many bytes, as a capture of both directions would hold them. Any answer but the
 * documented errors is a bug; after an error every feed fails; a host key, once there, is a
 * non-empty blob of at most NETNS_SSH_HOSTKEY_MAX bytes that never changes. */

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "netns/ssh-internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct netns_ssh_watch *w = calloc(1, sizeof(*w));
	uint8_t first[NETNS_SSH_HOSTKEY_MAX];
	size_t first_len = 0, len;
	bool failed = false;

	if (!w)
		return 0;
	while (size >= 3) {
		size_t n = (size_t)data[1] << 8 | data[2];
		const uint8_t *key;
		int r;

		n = n < size - 3 ? n : size - 3;
		r = netns_ssh_feed(w, data[0] & 1, data + 3, n, NULL);
		if (r < 0 && r != -EBADMSG && r != -EPROTONOSUPPORT && r != -ENOMEM)
			__builtin_trap();
		if (failed && r == 0)
			__builtin_trap();
		failed = failed || r < 0;
		key = netns_ssh_hostkey(w, &len);
		if (key && (len == 0 || len > NETNS_SSH_HOSTKEY_MAX ||
			    (first_len && (len != first_len || memcmp(key, first, len) != 0))))
			__builtin_trap();
		if (key && !first_len) {
			memcpy(first, key, len);
			first_len = len;
		}
		data += 3 + n;
		size -= 3 + n;
	}
	netns_ssh_watch_done(w);
	free(w);
	return 0;
}
