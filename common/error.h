#pragma once

/* A fixed-size error with a message for the user. It lives on the caller's stack, is never
 * allocated, and can be sent whole over a socket (the launcher child does). */

#include "common/macro.h"

#define AL_ERROR_MSG_MAX 512

struct al_error {
	int code;		    /* negative errno, 0 when unset */
	char msg[AL_ERROR_MSG_MAX]; /* NUL-terminated, one line */
};

/* Fills err (which may be NULL) and returns code, so that `return al_error_set(...)` works.
 * The message is truncated to fit; newlines are replaced by spaces. */
int al_error_set(struct al_error *err, int code, const char *fmt, ...) _printf_(3, 4);

/* Like al_error_set() but appends ": <strerror(-code)>" to the message. */
int al_error_set_errno(struct al_error *err, int code, const char *fmt, ...) _printf_(3, 4);

/* Quotes s for a message: "...", escaping quotes, backslashes and non-printable bytes (\xNN),
 * and cut after AL_QUOTE_CHARS bytes of s with "..." after the closing quote. Returns buf. A
 * message names what a peer sent only through this: it stays one line of printable ASCII. */
#define AL_QUOTE_CHARS 64
#define AL_QUOTE_MAX (AL_QUOTE_CHARS * 4 + 8)
const char *al_quote(const char *s, char buf[static AL_QUOTE_MAX]);
#define AL_QUOTE(s) al_quote((s), (char[AL_QUOTE_MAX]){0})

/* Prepends "<context>: " to the message. Does nothing when err is NULL. */
void al_error_prefix(struct al_error *err, const char *fmt, ...) _printf_(2, 3);
