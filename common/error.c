#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/error.h"

static void error_sanitize(struct al_error *err)
{
	for (char *c = err->msg; *c; c++)
		if (*c == '\n' || *c == '\r')
			*c = ' ';
}

_printf_(4, 0) static int error_vset(struct al_error *err, int code, bool with_errno,
				     const char *fmt, va_list ap)
{
	size_t l;

	if (!err)
		return code;
	err->code = code;
	(void)vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	if (with_errno && code < 0) {
		l = strlen(err->msg);
		(void)snprintf(err->msg + l, sizeof(err->msg) - l, ": %s", strerror(-code));
	}
	error_sanitize(err);
	return code;
}

int al_error_set(struct al_error *err, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	code = error_vset(err, code, false, fmt, ap);
	va_end(ap);
	return code;
}

int al_error_set_errno(struct al_error *err, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	code = error_vset(err, code, true, fmt, ap);
	va_end(ap);
	return code;
}

void al_error_prefix(struct al_error *err, const char *fmt, ...)
{
	char joined[AL_ERROR_MSG_MAX];
	size_t l;
	va_list ap;
	int n;

	if (!err)
		return;
	va_start(ap, fmt);
	n = vsnprintf(joined, sizeof(joined), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	l = strlen(joined);
	if (err->msg[0] && l + 2 < sizeof(joined)) {
		memcpy(joined + l, ": ", 3);
		l += 2;
		/* Truncate the old message so that the context always survives. */
		size_t m = MIN(strlen(err->msg), sizeof(joined) - l - 1);

		memcpy(joined + l, err->msg, m);
		joined[l + m] = '\0';
	}
	memcpy(err->msg, joined, sizeof(err->msg));
	error_sanitize(err);
}

const char *al_quote(const char *s, char buf[static AL_QUOTE_MAX])
{
	size_t o = 0, i;

	buf[o++] = '"';
	for (i = 0; s[i] && i < AL_QUOTE_CHARS; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\') {
			buf[o++] = '\\';
			buf[o++] = (char)c;
		} else if (c >= 0x20 && c < 0x7f) {
			buf[o++] = (char)c;
		} else {
			(void)snprintf(buf + o, 5, "\\x%02x", c);
			o += 4;
		}
	}
	buf[o++] = '"';
	if (s[i]) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o] = '\0';
	return buf;
}
