/* bench/fs-ops.c: what one metadata operation costs, one kind at a time.
 *
 * usage: fs-ops DIR [COUNT]
 *
 * In a new folder DIR/fs-ops, makes COUNT (default 3000) empty files, then times each kind of
 * operation over all of them in turn, and prints "OP USEC" lines: the mean microseconds of one.
 *   create        open(O_CREAT|O_EXCL|O_WRONLY) + close of a new name
 *   open-write    open(O_WRONLY) + a 1 KiB write + close
 *   stat          stat() of a file just written
 *   open          open(O_RDONLY) + close
 *   open-read     open(O_RDONLY) + a 1 KiB read + close
 *   stat-missing  stat() of a name that does not exist
 *   unlink        unlink()
 * Run it on native, passthrough_hp and airlock in one sitting to see where a FUSE leg's time
 * goes (docs/BENCHMARKS.md, "Workspace filesystem: reading the figures"). Any failed call ends
 * the run with exit status 1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum op { CREATE, OPEN_WRITE, STAT, OPEN, OPEN_READ, STAT_MISSING, UNLINK, OPS };

static const char *const names[OPS] = {"create",    "open-write",   "stat",  "open",
				       "open-read", "stat-missing", "unlink"};

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

/* One operation of kind op on file i: 0 or -errno. */
static int one(const char *dir, enum op op, long i)
{
	static char buf[1024];
	char path[4096 + 32];
	struct stat st;
	int fd, r = 0;

	snprintf(path, sizeof(path), "%s/%c%ld", dir, op == STAT_MISSING ? 'x' : 'f', i);
	switch (op) {
	case CREATE:
	case OPEN_WRITE:
	case OPEN:
	case OPEN_READ:
		fd = open(path,
			  op == CREATE	     ? O_CREAT | O_EXCL | O_WRONLY
			  : op == OPEN_WRITE ? O_WRONLY
					     : O_RDONLY,
			  0644);
		if (fd < 0)
			return -errno;
		if (op == OPEN_WRITE && write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			r = -EIO;
		if (op == OPEN_READ && read(fd, buf, sizeof(buf)) < 0)
			r = -errno;
		if (close(fd) < 0 && r == 0)
			r = -errno;
		return r;
	case STAT:
		return stat(path, &st) < 0 ? -errno : 0;
	case STAT_MISSING:
		if (stat(path, &st) == 0)
			return -EEXIST;
		return errno == ENOENT ? 0 : -errno;
	case UNLINK:
		return unlink(path) < 0 ? -errno : 0;
	case OPS:
		break;
	}
	return -EINVAL;
}

int main(int argc, char **argv)
{
	long count = argc > 2 ? strtol(argv[2], NULL, 10) : 3000;
	char dir[4096];

	if (argc < 2 || argc > 3 || count <= 0) {
		fprintf(stderr, "usage: fs-ops DIR [COUNT]\n");
		return 2;
	}
	if ((size_t)snprintf(dir, sizeof(dir), "%s/fs-ops", argv[1]) >= sizeof(dir)) {
		fprintf(stderr, "fs-ops: %s: too long\n", argv[1]);
		return 2;
	}
	if (mkdir(dir, 0755) < 0) {
		fprintf(stderr, "fs-ops: mkdir %s: %s\n", dir, strerror(errno));
		return 1;
	}
	for (enum op op = 0; op < OPS; op++) {
		double t = now_us();

		for (long i = 0; i < count; i++) {
			int r = one(dir, op, i);

			if (r < 0) {
				fprintf(stderr, "fs-ops: %s of file %ld: %s\n", names[op], i,
					strerror(-r));
				return 1;
			}
		}
		printf("%s %.1f\n", names[op], (now_us() - t) / (double)count);
	}
	if (rmdir(dir) < 0) {
		fprintf(stderr, "fs-ops: rmdir %s: %s\n", dir, strerror(errno));
		return 1;
	}
	return 0;
}
