#pragma once

/* The audit stream: JSON lines, one event per line, appended to a file.
 * Each line: {"time":"<RFC 3339 UTC, µs>","sandbox":"<id>","kind":"<kind>", ...detail}. */

#include <stdint.h>

#include "common/macro.h"

struct al_audit;

enum al_audit_type {
	AL_AUDIT_STR,
	AL_AUDIT_INT,
	AL_AUDIT_BOOL,
	AL_AUDIT_STRV, /* NULL-terminated */
};

/* One key of an event's detail. Callers build them with the AL_AUDIT_* macros, so that modules
 * that emit events need no JSON library. */
struct al_audit_field {
	const char *key;
	enum al_audit_type type;
	union {
		const char *s;
		int64_t i;
		bool b;
		char *const *strv;
	};
};

#define AL_AUDIT_S(k, v) ((struct al_audit_field){.key = (k), .type = AL_AUDIT_STR, .s = (v)})
#define AL_AUDIT_I(k, v) ((struct al_audit_field){.key = (k), .type = AL_AUDIT_INT, .i = (v)})
#define AL_AUDIT_B(k, v) ((struct al_audit_field){.key = (k), .type = AL_AUDIT_BOOL, .b = (v)})
#define AL_AUDIT_SV(k, v) ((struct al_audit_field){.key = (k), .type = AL_AUDIT_STRV, .strv = (v)})

/* Opens (creating with mode 0600, appending) path for sandbox id. Returns 0 or -errno. */
int al_audit_open(const char *path, const char *sandbox_id, struct al_audit **ret);

/* Appends one event with one write(2) (O_APPEND keeps concurrent writers' lines whole). */
int al_audit_event(struct al_audit *a, const char *kind, const struct al_audit_field *fields,
		   size_t n_fields);

struct al_audit *al_audit_close(struct al_audit *a);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct al_audit *, al_audit_close);

/* The file descriptor events are written to (for a process that must keep only its own fds). */
int al_audit_fd(const struct al_audit *a);
