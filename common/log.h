#pragma once

/* Logging to stderr. Each .c file defines LOG_MODULE before it includes this header.
 * Library code logs at debug level at most; whoever handles an error logs it, once. */

#include <errno.h>

#include "common/macro.h"

#ifndef LOG_MODULE
#error "define LOG_MODULE before including common/log.h"
#endif

enum al_log_level {
	AL_LOG_ERR = 3,
	AL_LOG_WARNING = 4,
	AL_LOG_NOTICE = 5,
	AL_LOG_INFO = 6,
	AL_LOG_DEBUG = 7,
};

/* The process-wide threshold: one setting for the whole program (set by cli/ from
 * --verbose or AIRLOCK_LOG), so it is a global. */
extern enum al_log_level al_log_max_level;

/* Sets the threshold from a name ("debug", "info", ...) or a number; -EINVAL if unknown. */
int al_log_set_max_level_from_string(const char *s);

/* Writes one line. errno is set to -error (when error < 0) so that %m prints it.
 * Returns error, or 0 when error >= 0. Preserves errno. */
int al_log_internal(enum al_log_level level, int error, const char *module, const char *fmt, ...)
    _printf_(4, 5);

#define al_log_full(level, error, ...)                                                             \
	({                                                                                         \
		int _e_ = (error);                                                                 \
		(level) <= al_log_max_level ? al_log_internal(level, _e_, LOG_MODULE, __VA_ARGS__) \
					    : (_e_ < 0 ? _e_ : 0);                                 \
	})

#define log_debug(...) al_log_full(AL_LOG_DEBUG, 0, __VA_ARGS__)
#define log_info(...) al_log_full(AL_LOG_INFO, 0, __VA_ARGS__)
#define log_notice(...) al_log_full(AL_LOG_NOTICE, 0, __VA_ARGS__)
#define log_warning(...) al_log_full(AL_LOG_WARNING, 0, __VA_ARGS__)
#define log_error(...) al_log_full(AL_LOG_ERR, 0, __VA_ARGS__)

#define log_debug_errno(r, ...) al_log_full(AL_LOG_DEBUG, r, __VA_ARGS__)
#define log_info_errno(r, ...) al_log_full(AL_LOG_INFO, r, __VA_ARGS__)
#define log_notice_errno(r, ...) al_log_full(AL_LOG_NOTICE, r, __VA_ARGS__)
#define log_warning_errno(r, ...) al_log_full(AL_LOG_WARNING, r, __VA_ARGS__)
#define log_error_errno(r, ...) al_log_full(AL_LOG_ERR, r, __VA_ARGS__)
