#define LOG_MODULE "log"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"

enum al_log_level al_log_max_level = AL_LOG_NOTICE;

int al_log_set_max_level_from_string(const char *s)
{
	static const char *const names[] = {
	    [AL_LOG_ERR] = "err",   [AL_LOG_WARNING] = "warning", [AL_LOG_NOTICE] = "notice",
	    [AL_LOG_INFO] = "info", [AL_LOG_DEBUG] = "debug",
	};
	char *end;
	long v;

	for (size_t i = 0; i < ELEMENTSOF(names); i++)
		if (names[i] && streq(names[i], s)) {
			al_log_max_level = (enum al_log_level)i;
			return 0;
		}
	if (streq(s, "error")) {
		al_log_max_level = AL_LOG_ERR;
		return 0;
	}
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < AL_LOG_ERR || v > AL_LOG_DEBUG)
		return -EINVAL;
	al_log_max_level = (enum al_log_level)v;
	return 0;
}

int al_log_internal(enum al_log_level level, int error, const char *module, const char *fmt, ...)
{
	char buf[2048];
	int saved_errno = errno;
	size_t l = 0;
	va_list ap;

	if (al_log_max_level >= AL_LOG_DEBUG)
		l = (size_t)snprintf(buf, sizeof(buf), "airlock[%s]: ", module);
	else
		l = (size_t)snprintf(buf, sizeof(buf), "airlock: ");
	if (error < 0)
		errno = -error;
	va_start(ap, fmt);
	(void)vsnprintf(buf + l, sizeof(buf) - l, fmt, ap);
	va_end(ap);
	l = strnlen(buf, sizeof(buf) - 2);
	buf[l++] = '\n';
	(void)level;
	/* One write(2), so that concurrent writers do not interleave inside a line. */
	(void)!write(STDERR_FILENO, buf, l);
	errno = saved_errno;
	return error < 0 ? error : 0;
}
