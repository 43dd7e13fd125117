/* `airlock doctor` on the real machine: one JSON object listing every feature with a status, a
 * fix for each that is not ok, and a "missing" count equal to the return value; the text form
 * has one line per feature; and the clone hint says something useful where it can. Runs as
 * any user (as root it also probes what unprivileged users get). */

#include <errno.h>
#include <sched.h>
#include <string.h>

#include <json-c/json.h>

#include "common/json-util.h"
#include "tests/integration/launcher/kctl-lib.h"

static const char *const required_features[] = {
    "mount namespace",
    "pid namespace",
    "network namespace (netns)",
    "seccomp filter and user notification",
    "FUSE (/dev/fuse)",
    "cgroups",
    "cgroup memory and pids limits",
    "pidfd_open",
};

static const char *str(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : NULL;
}

int main(void)
{
	char *text = NULL;
	size_t len = 0, n, missing = 0;
	struct json_object *doc = NULL, *features, *v;
	struct al_error err = {0};
	FILE *out;
	int r;

	out = open_memstream(&text, &len);
	CHECK(out);
	r = launcher_doctor(out, true);
	CHECK(fclose(out) == 0);
	fprintf(stderr, "%s", text);
	CHECK(r >= 0);
	CHECK(al_json_parse(text, len, 8, &doc, &err) == 0);
	CHECK(json_object_object_get_ex(doc, "features", &features));
	CHECK(json_object_is_type(features, json_type_array));
	n = json_object_array_length(features);
	for (size_t i = 0; i < n; i++) {
		struct json_object *f = json_object_array_get_idx(features, i);
		const char *status = str(f, "status");

		CHECK(str(f, "feature"));
		CHECK(status);
		CHECK(streq(status, "ok") || streq(status, "warning") || streq(status, "missing"));
		if (!streq(status, "ok"))
			CHECK(str(f, "fix") && str(f, "fix")[0]);
		missing += streq(status, "missing");
	}
	CHECK(json_object_object_get_ex(doc, "missing", &v));
	CHECK_EQ(json_object_get_int(v), r);
	CHECK_EQ(missing, r);
	for (size_t i = 0; i < ELEMENTSOF(required_features); i++) {
		bool seen = false;

		for (size_t j = 0; j < n; j++)
			seen = seen || streq(str(json_object_array_get_idx(features, j), "feature"),
					     required_features[i]);
		CHECK(seen);
	}
	json_object_put(doc);
	free(text);

	/* the text form: one status line per feature */
	text = NULL;
	out = open_memstream(&text, &len);
	CHECK(out);
	CHECK_EQ(launcher_doctor(out, false), r);
	CHECK(fclose(out) == 0);
	CHECK(strstr(text, "ok       seccomp filter and user notification") ||
	      strstr(text, "missing  seccomp filter and user notification"));
	{
		size_t lines = 0;

		for (const char *p = text; (p = strchr(p, '\n')); p++)
			lines++;
		CHECK(lines >= n + 2);
	}
	free(text);

	/* a namespace limit is worth a hint; a success or an unrelated error is not */
	CHECK(launcher_doctor_hint(CLONE_NEWUSER | CLONE_NEWNS, -ENOSPC));
	CHECK(strstr(launcher_doctor_hint(CLONE_NEWNET, ENOSPC), "see airlock doctor"));
	CHECK(!launcher_doctor_hint(CLONE_NEWNS, -ENOMEM));
	fprintf(stderr, "ok\n");
	return 0;
}
