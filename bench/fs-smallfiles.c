/* bench/fs-smallfiles.c: the small-files workload of bench/fs.sh.
 *
 * usage: fs-smallfiles DIR NFILES [SIZE]
 *
 * Under the empty folder DIR, creates NFILES files of SIZE bytes (default 1024) in nested
 * folders (DIR/dTT/sS/fFF: 100 files a leaf folder, 10 leaves a top folder), then stats each,
 * reads each back, and deletes them all with their folders. Each phase is timed on its own and
 * printed as "PHASE SECONDS" on stdout. Every call goes straight to the kernel, path-relative to
 * DIR like a shell tool's would, so the helper costs next to nothing next to the filesystem it
 * measures. Any failed or short call ends the run with exit status 1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define FILES_PER_LEAF 100
#define LEAVES_PER_TOP 10
#define MAX_SIZE (1024 * 1024)

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The path of file k relative to DIR; with leaf_only, the path of its leaf folder. */
static void file_path(char *buf, size_t size, long k, int leaf_only)
{
	long leaf = k / FILES_PER_LEAF;

	if (leaf_only)
		snprintf(buf, size, "d%02ld/s%ld", leaf / LEAVES_PER_TOP, leaf % LEAVES_PER_TOP);
	else
		snprintf(buf, size, "d%02ld/s%ld/f%02ld", leaf / LEAVES_PER_TOP,
			 leaf % LEAVES_PER_TOP, k % FILES_PER_LEAF);
}

static int fail(const char *what, const char *path, int r)
{
	fprintf(stderr, "fs-smallfiles: %s %s: %s\n", what, path, strerror(-r));
	return r;
}

static int phase_create(int dirfd, long n, const char *data, size_t size)
{
	char path[64];
	long k;

	for (k = 0; k < n; k++) {
		ssize_t w;
		int fd;

		if (k % (FILES_PER_LEAF * LEAVES_PER_TOP) == 0) {
			snprintf(path, sizeof(path), "d%02ld",
				 k / (FILES_PER_LEAF * LEAVES_PER_TOP));
			if (mkdirat(dirfd, path, 0755) < 0)
				return fail("mkdir", path, -errno);
		}
		if (k % FILES_PER_LEAF == 0) {
			file_path(path, sizeof(path), k, 1);
			if (mkdirat(dirfd, path, 0755) < 0)
				return fail("mkdir", path, -errno);
		}
		file_path(path, sizeof(path), k, 0);
		fd = openat(dirfd, path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0)
			return fail("create", path, -errno);
		w = write(fd, data, size);
		if (w != (ssize_t)size) {
			int r = w < 0 ? -errno : -EIO;

			close(fd);
			return fail("write", path, r);
		}
		if (close(fd) < 0)
			return fail("close", path, -errno);
	}
	return 0;
}

static int phase_stat(int dirfd, long n, size_t size)
{
	char path[64];
	long k;

	for (k = 0; k < n; k++) {
		struct stat st;

		file_path(path, sizeof(path), k, 0);
		if (fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return fail("stat", path, -errno);
		if (!S_ISREG(st.st_mode) || st.st_size != (off_t)size)
			return fail("stat (not a regular file of the size written)", path, -EIO);
	}
	return 0;
}

static int phase_read(int dirfd, long n, char *buf, size_t size)
{
	char path[64];
	long k;

	for (k = 0; k < n; k++) {
		size_t got = 0;
		ssize_t rd;
		int fd;

		file_path(path, sizeof(path), k, 0);
		fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return fail("open", path, -errno);
		/* Ask for one byte more than the file holds, so a read also sees its end. */
		while ((rd = read(fd, buf + got, size + 1 - got)) > 0)
			got += (size_t)rd;
		if (rd < 0 || got != size) {
			int r = rd < 0 ? -errno : -EIO;

			close(fd);
			return fail("read", path, r);
		}
		close(fd);
	}
	return 0;
}

static int phase_delete(int dirfd, long n)
{
	char path[64];
	long k;

	for (k = 0; k < n; k++) {
		file_path(path, sizeof(path), k, 0);
		if (unlinkat(dirfd, path, 0) < 0)
			return fail("unlink", path, -errno);
		/* A leaf folder goes once its last file is gone, a top folder after its last leaf.
		 */
		if (k % FILES_PER_LEAF == FILES_PER_LEAF - 1 || k == n - 1) {
			file_path(path, sizeof(path), k, 1);
			if (unlinkat(dirfd, path, AT_REMOVEDIR) < 0)
				return fail("rmdir", path, -errno);
		}
		if (k % (FILES_PER_LEAF * LEAVES_PER_TOP) == FILES_PER_LEAF * LEAVES_PER_TOP - 1 ||
		    k == n - 1) {
			snprintf(path, sizeof(path), "d%02ld",
				 k / (FILES_PER_LEAF * LEAVES_PER_TOP));
			if (unlinkat(dirfd, path, AT_REMOVEDIR) < 0)
				return fail("rmdir", path, -errno);
		}
	}
	return 0;
}

static int parse_long(const char *s, long min, long max, long *ret)
{
	char *end = NULL;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < min || v > max)
		return -EINVAL;
	*ret = v;
	return 0;
}

int main(int argc, char **argv)
{
	static const char *const names[] = {"create", "stat", "read", "delete"};
	double seconds[4];
	long n = 0, size = 1024;
	char *data = NULL, *buf = NULL;
	int dirfd, i, r = 0;

	if (argc < 3 || argc > 4 ||
	    parse_long(argv[2], 1, 99 * FILES_PER_LEAF * LEAVES_PER_TOP, &n) < 0 ||
	    (argc == 4 && parse_long(argv[3], 0, MAX_SIZE, &size) < 0)) {
		fprintf(stderr,
			"usage: fs-smallfiles DIR NFILES [SIZE]  (NFILES 1..%d, SIZE 0..%d)\n",
			99 * FILES_PER_LEAF * LEAVES_PER_TOP, MAX_SIZE);
		return 2;
	}
	dirfd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		fail("open", argv[1], -errno);
		return 1;
	}
	data = malloc((size_t)size + 1);
	buf = malloc((size_t)size + 1);
	if (!data || !buf) {
		fprintf(stderr, "fs-smallfiles: out of memory\n");
		return 1;
	}
	for (i = 0; i < size; i++)
		data[i] = (char)('a' + i % 26);

	for (i = 0; i < 4 && r >= 0; i++) {
		double t0 = now();

		switch (i) {
		case 0:
			r = phase_create(dirfd, n, data, (size_t)size);
			break;
		case 1:
			r = phase_stat(dirfd, n, (size_t)size);
			break;
		case 2:
			r = phase_read(dirfd, n, buf, (size_t)size);
			break;
		default:
			r = phase_delete(dirfd, n);
			break;
		}
		seconds[i] = now() - t0;
	}
	free(data);
	free(buf);
	close(dirfd);
	if (r < 0)
		return 1;
	for (i = 0; i < 4; i++)
		printf("%s %.6f\n", names[i], seconds[i]);
	return 0;
}
