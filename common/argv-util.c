#include <string.h>
#include <unistd.h>

#include "common/argv-util.h"
#include "common/macro.h"

/* Where main()'s argv and environ strings live: one place per process, set once in main(). */
static char *argv_start, *argv_end;

static void extend(char *s)
{
	char *end = s + strlen(s) + 1;

	if (!argv_start || s < argv_start)
		argv_start = s;
	if (end > argv_end)
		argv_end = end;
}

void al_argv_save(int argc, char **argv)
{
	for (int i = 0; i < argc; i++)
		if (argv[i])
			extend(argv[i]);
	for (char **e = environ; e && *e; e++)
		extend(*e);
}

void al_argv_wipe(const char *title)
{
	size_t size, l;

	if (!argv_start || argv_end <= argv_start)
		return;
	size = (size_t)(argv_end - argv_start);
	l = MIN(strlen(title), size - 1);
	memcpy(argv_start, title, l);
	memset(argv_start + l, 0, size - l);
}
