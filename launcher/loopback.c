#define LOG_MODULE "launcher"

#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "common/fd-util.h"
#include "launcher/launcher-internal.h"

/* A plain ioctl on purpose: configuring links with netlink belongs to netns/; this only flips
 * lo's flag, in the calling thread's network namespace. */
int launcher_loopback_up(void)
{
	struct ifreq ifr = {.ifr_name = "lo"};
	_cleanup_close_ int fd = -EBADF;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
		return -errno;
	ifr.ifr_flags |= IFF_UP;
	return RET_NERRNO(ioctl(fd, SIOCSIFFLAGS, &ifr));
}
