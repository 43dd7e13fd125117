#define LOG_MODULE "netns"

/* libnl adapters: its error codes, and sockets bound to a namespace. */

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include "common/fd-util.h"
#include "netns/netns.h"
#include "netns/nl-util.h"

int netns_errno_from_nl(int nle)
{
	static const int map[] = {
	    [NLE_FAILURE] = EIO,
	    [NLE_INTR] = EINTR,
	    [NLE_BAD_SOCK] = EBADF,
	    [NLE_AGAIN] = EAGAIN,
	    [NLE_NOMEM] = ENOMEM,
	    [NLE_EXIST] = EEXIST,
	    [NLE_INVAL] = EINVAL,
	    [NLE_RANGE] = ERANGE,
	    [NLE_MSGSIZE] = EMSGSIZE,
	    [NLE_OPNOTSUPP] = EOPNOTSUPP,
	    [NLE_AF_NOSUPPORT] = EAFNOSUPPORT,
	    [NLE_OBJ_NOTFOUND] = ENOENT,
	    [NLE_NOADDR] = EADDRNOTAVAIL,
	    [NLE_BUSY] = EBUSY,
	    [NLE_NOACCESS] = EACCES,
	    [NLE_PERM] = EPERM,
	    [NLE_NODEV] = ENODEV,
	};
	int n = nle < 0 ? -nle : nle;

	if (n == 0)
		return 0;
	if ((size_t)n < ELEMENTSOF(map) && map[n] != 0)
		return -map[n];
	return -EIO;
}

int netns_run_in(int nsfd, netns_fn fn, void *userdata)
{
	_cleanup_close_ int own = -EBADF;
	int r;

	own = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (own < 0)
		return -errno;
	if (setns(nsfd, CLONE_NEWNET) < 0)
		return -errno;
	r = fn(userdata);
	/* Staying in the other namespace would put everything after it there: there is no way
	 * on from a failure to return. */
	if (setns(own, CLONE_NEWNET) < 0)
		abort();
	return r;
}

static int connect_socket(void *userdata)
{
	struct nl_sock *s = userdata;

	return netns_errno_from_nl(nl_connect(s, NETLINK_ROUTE));
}

int netns_nl_socket_in(int nsfd, struct nl_sock **ret)
{
	_cleanup_(netns_nl_socket_freep) struct nl_sock *s = NULL;
	int r;

	s = nl_socket_alloc();
	if (!s)
		return -ENOMEM;
	/* A socket keeps the namespace it was created in: create it there. */
	r = netns_run_in(nsfd, connect_socket, s);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(s);
	return 0;
}
