#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/audit.h"
#include "common/fd-util.h"
#include "common/json-util.h"

struct al_audit {
	int fd;
	char *sandbox;
};

int al_audit_open(const char *path, const char *sandbox_id, struct al_audit **ret)
{
	_cleanup_close_ int fd = -EBADF;
	struct al_audit *a;

	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->sandbox = strdup(sandbox_id);
	if (!a->sandbox) {
		free(a);
		return -ENOMEM;
	}
	a->fd = TAKE_FD(fd);
	*ret = a;
	return 0;
}

static int format_time(char *buf, size_t size)
{
	struct timespec ts;
	struct tm tm;
	char base[32];

	if (clock_gettime(CLOCK_REALTIME, &ts) < 0 || !gmtime_r(&ts.tv_sec, &tm))
		return -errno;
	if (strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm) == 0)
		return -EINVAL;
	(void)snprintf(buf, size, "%s.%06ldZ", base, ts.tv_nsec / 1000);
	return 0;
}

static struct json_object *field_value(const struct al_audit_field *f)
{
	struct json_object *l;

	switch (f->type) {
	case AL_AUDIT_STR:
		return f->s ? json_object_new_string(f->s) : json_object_new_null();
	case AL_AUDIT_INT:
		return json_object_new_int64(f->i);
	case AL_AUDIT_BOOL:
		return json_object_new_boolean(f->b);
	case AL_AUDIT_STRV:
		l = json_object_new_array();
		for (char *const *s = f->strv; l && s && *s; s++)
			if (json_object_array_add(l, json_object_new_string(*s)) < 0) {
				(void)json_object_put(l);
				return NULL;
			}
		return l;
	}
	return NULL;
}

int al_audit_event(struct al_audit *a, const char *kind, const struct al_audit_field *fields,
		   size_t n_fields)
{
	_cleanup_json_ struct json_object *o = json_object_new_object();
	_cleanup_free_ char *line = NULL;
	char when[64];
	size_t l;
	int r;

	if (!o)
		return -ENOMEM;
	r = format_time(when, sizeof(when));
	if (r < 0)
		return r;
	r = al_json_add(o, "time", json_object_new_string(when));
	if (r >= 0)
		r = al_json_add(o, "sandbox", json_object_new_string(a->sandbox));
	if (r >= 0)
		r = al_json_add(o, "kind", json_object_new_string(kind));
	if (r < 0)
		return r;
	for (size_t i = 0; i < n_fields; i++) {
		r = al_json_add(o, fields[i].key, field_value(&fields[i]));
		if (r < 0)
			return r;
	}
	r = al_json_to_string(o, &line);
	if (r < 0)
		return r;
	l = strlen(line);
	line[l] = '\n'; /* replaces the NUL: the buffer is written by length */
	return al_write_all(a->fd, line, l + 1);
}

struct al_audit *al_audit_close(struct al_audit *a)
{
	if (!a)
		return NULL;
	(void)al_close(a->fd);
	free(a->sandbox);
	free(a);
	return NULL;
}

int al_audit_fd(const struct al_audit *a)
{
	return a ? a->fd : -EBADF;
}
