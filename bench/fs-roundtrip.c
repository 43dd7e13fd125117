/* bench/fs-roundtrip.c: what one request to the workspace daemon costs, with no work in it.
 *
 * usage: fs-roundtrip PATH [COUNT]
 *
 * Opens PATH (a file or folder on an airlock workspace mount) and asks the daemon COUNT times
 * (default 100000) how it serves it (ioctl FUSEFS_IOC_INFO, fusefs/fusefs.h: the daemon answers
 * from what it holds, no system call of its own). Prints "roundtrip USEC uring=U" on stdout: the
 * mean time of one request from the calling thread to the daemon and back, and whether it came
 * over io_uring. bench/fs.sh uses it to split a create or a stat into round trips and work.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

struct fs_info {
	uint32_t uring, passthrough, writeback, open;
};
#define FS_IOC_INFO _IOR(0xaf, 0x02, struct fs_info)

int main(int argc, char **argv)
{
	struct timespec a, b;
	struct fs_info info;
	long count = argc > 2 ? strtol(argv[2], NULL, 10) : 100000;
	int fd;

	if (argc < 2 || argc > 3 || count <= 0) {
		fprintf(stderr, "usage: fs-roundtrip PATH [COUNT]\n");
		return 2;
	}
	fd = open(argv[1], O_RDONLY | O_CLOEXEC);
	if (fd < 0 || ioctl(fd, FS_IOC_INFO, &info) < 0) {
		fprintf(stderr, "fs-roundtrip: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < count; i++)
		if (ioctl(fd, FS_IOC_INFO, &info) < 0) {
			fprintf(stderr, "fs-roundtrip: ioctl: %s\n", strerror(errno));
			return 1;
		}
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("roundtrip %.2f uring=%u\n",
	       ((double)(b.tv_sec - a.tv_sec) * 1e6 + (double)(b.tv_nsec - a.tv_nsec) / 1e3) /
		   (double)count,
	       info.uring);
	close(fd);
	return 0;
}
