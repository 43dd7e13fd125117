#pragma once

/* Scope-based cleanup and small helpers shared by every module. */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _noreturn_ __attribute__((noreturn))
#define _printf_(a, b) __attribute__((format(printf, a, b)))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
/* A macro's value as a string literal. */
#define STRINGIFY_ARG(x) #x
#define STRINGIFY(x) STRINGIFY_ARG(x)

static inline void freep(void *p)
{
	free(*(void **)p);
}
#define _cleanup_free_ _cleanup_(freep)

/* Move ownership out of a variable whose cleanup attribute would otherwise free it. */
#define TAKE_PTR(p)                                                                                \
	({                                                                                         \
		__typeof__(p) _p_ = (p);                                                           \
		(p) = NULL;                                                                        \
		_p_;                                                                               \
	})

/* Defines foop(), a cleanup function for a pointer to a pointer freed by foo(). */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)                                                    \
	static inline void func##p(type *p)                                                        \
	{                                                                                          \
		if (*p)                                                                            \
			func(*p);                                                                  \
	}

/* Turns a libc "-1 and errno" result into "-errno", passing other values through. */
#define RET_NERRNO(expr)                                                                           \
	({                                                                                         \
		__typeof__(expr) _r_ = (expr);                                                     \
		_r_ < 0 ? -errno : _r_;                                                            \
	})

static inline bool streq(const char *a, const char *b)
{
	return strcmp(a, b) == 0;
}

static inline bool strcaseeq(const char *a, const char *b)
{
	return strcasecmp(a, b) == 0;
}

static inline bool streq_ptr(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}

static inline const char *strempty(const char *s)
{
	return s ? s : "";
}

/* Returns the part of s after prefix, or NULL when s does not start with prefix. */
static inline const char *startswith(const char *s, const char *prefix)
{
	size_t l = strlen(prefix);

	return strncmp(s, prefix, l) == 0 ? s + l : NULL;
}

#define MIN(a, b)                                                                                  \
	({                                                                                         \
		__typeof__(a) _a_ = (a);                                                           \
		__typeof__(b) _b_ = (b);                                                           \
		_a_ < _b_ ? _a_ : _b_;                                                             \
	})
#define MAX(a, b)                                                                                  \
	({                                                                                         \
		__typeof__(a) _a_ = (a);                                                           \
		__typeof__(b) _b_ = (b);                                                           \
		_a_ > _b_ ? _a_ : _b_;                                                             \
	})
