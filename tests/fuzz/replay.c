/* Replays a corpus through a fuzz target without libFuzzer, so that every build (gcc included)
 * runs the seeds and crash reproducers: each argument is a file, or a folder whose regular files
 * are all replayed. A target reports a failure by crashing or aborting. Exits 1 when there was
 * nothing to replay, so that a misplaced corpus does not pass silently. */

#include <dirent.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/fd-util.h"
#include "common/macro.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Corpus entries are small; this only guards against replaying something absurd by mistake. */
#define REPLAY_FILE_MAX (64L * 1024 * 1024)

static int replay_file(const char *path)
{
	_cleanup_fclose_ FILE *f = NULL;
	_cleanup_free_ uint8_t *buf = NULL;
	long n;

	f = fopen(path, "rbe");
	if (!f)
		return -errno;
	if (fseek(f, 0, SEEK_END) < 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) < 0)
		return -errno;
	if (n > REPLAY_FILE_MAX)
		return -EFBIG;
	/* An exact-size copy, so that the sanitizers catch a read past the end of the input. */
	buf = malloc(n > 0 ? (size_t)n : 1);
	if (!buf)
		return -ENOMEM;
	if (fread(buf, 1, (size_t)n, f) != (size_t)n)
		return -EIO;
	(void)LLVMFuzzerTestOneInput(buf, (size_t)n);
	return 0;
}

static int not_hidden(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

/* Replays the regular files of dir in name order. On error, names the file in ret_failed. */
static int replay_dir(const char *dir, unsigned *count, char ret_failed[static PATH_MAX])
{
	struct dirent **entries = NULL;
	int n, r = 0;

	n = scandir(dir, &entries, not_hidden, alphasort);
	if (n < 0)
		return -errno;
	for (int i = 0; i < n; i++) {
		struct stat st;

		if (r >= 0) {
			if (snprintf(ret_failed, PATH_MAX, "%s/%s", dir, entries[i]->d_name) >=
			    PATH_MAX)
				r = -ENAMETOOLONG;
			else if (stat(ret_failed, &st) < 0)
				r = -errno;
			else if (S_ISREG(st.st_mode) && (r = replay_file(ret_failed)) >= 0)
				(*count)++;
		}
		free(entries[i]);
	}
	free(entries);
	return r;
}

int main(int argc, char **argv)
{
	char failed[PATH_MAX];
	unsigned count = 0;
	struct stat st;
	int r;

	for (int i = 1; i < argc; i++) {
		(void)snprintf(failed, sizeof(failed), "%s", argv[i]);
		if (stat(argv[i], &st) < 0)
			r = -errno;
		else if (S_ISDIR(st.st_mode))
			r = replay_dir(argv[i], &count, failed);
		else if ((r = replay_file(argv[i])) >= 0)
			count++;
		if (r < 0) {
			fprintf(stderr, "%s: %s\n", failed, strerror(-r));
			return EXIT_FAILURE;
		}
	}
	printf("replayed %u inputs\n", count);
	return count > 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
