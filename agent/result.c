/* The JSON result of a run, shared by `airlock run --json` and `airlock exec`. */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "agent/agent-internal.h"
#include "common/json-util.h"

/* JSON strings must be UTF-8; program output need not be. Invalid bytes become U+FFFD. NUL bytes
 * are kept (JSON escapes them), so the result's length is returned in *ret_len. */
static char *utf8_sanitize(const char *s, size_t len, size_t *ret_len)
{
	char *out = malloc(len * 3 + 1), *o = out;
	size_t i = 0;

	if (!out)
		return NULL;
	while (i < len) {
		unsigned char c = (unsigned char)s[i];
		size_t n = c < 0x80	      ? 1
			   : (c >> 5) == 0x6  ? 2
			   : (c >> 4) == 0xe  ? 3
			   : (c >> 3) == 0x1e ? 4
					      : 0;
		bool ok = n > 0 && i + n <= len;

		for (size_t k = 1; ok && k < n; k++)
			ok = ((unsigned char)s[i + k] >> 6) == 0x2;
		if (ok && n > 1) {
			uint32_t cp = c & (0x7f >> n);

			for (size_t k = 1; k < n; k++)
				cp = (cp << 6) | ((unsigned char)s[i + k] & 0x3f);
			/* Overlong forms, surrogates and values past U+10FFFF are not UTF-8. */
			ok = !(n == 2 && cp < 0x80) && !(n == 3 && cp < 0x800) &&
			     !(n == 4 && cp < 0x10000) && !(cp >= 0xd800 && cp <= 0xdfff) &&
			     cp <= 0x10ffff;
		}
		if (ok) {
			memcpy(o, s + i, n);
			o += n;
			i += n;
		} else {
			memcpy(o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
		}
	}
	*o = '\0';
	*ret_len = (size_t)(o - out);
	return out;
}

static struct json_object *json_output(const struct launcher_buffer *b)
{
	size_t len = 0;
	_cleanup_free_ char *s = utf8_sanitize(b->data ? b->data : "", b->len, &len);

	return s ? json_object_new_string_len(s, (int)len) : NULL;
}

static struct json_object *json_violations(const struct launcher_result *res)
{
	struct json_object *v = json_object_new_array();

	for (size_t i = 0; v && i < res->n_violations; i++) {
		struct json_object *e = json_object_new_object();

		if (!e || al_json_add(e, "kind", json_object_new_string(res->violations[i].kind)) ||
		    al_json_add(e, "detail", json_object_new_string(res->violations[i].detail)) ||
		    al_json_add(e, "contract",
				json_object_new_string(res->violations[i].contract)) ||
		    al_json_add(e, "count",
				json_object_new_int64((int64_t)res->violations[i].count)) ||
		    json_object_array_add(v, e) < 0) {
			(void)json_object_put(e);
			(void)json_object_put(v);
			return NULL;
		}
	}
	return v;
}

/* Milliseconds with three decimals, printed as such (not as the nearest binary double). */
static struct json_object *json_ms(uint64_t usec)
{
	char text[32];

	(void)snprintf(text, sizeof(text), "%llu.%03llu", (unsigned long long)(usec / 1000),
		       (unsigned long long)(usec % 1000));
	return json_object_new_double_s((double)usec / 1000.0, text);
}

struct json_object *agent_labels_json(const struct policy *p)
{
	struct json_object *l = json_object_new_array();

	if (l && json_object_array_add(l, json_object_new_string(AGENT_LABEL_SOURCE)) < 0)
		l = (json_object_put(l), NULL);
	for (size_t i = 0; l && p && i < p->labels.n; i++)
		if (json_object_array_add(l, json_object_new_string(p->labels.items[i])) < 0)
			l = (json_object_put(l), NULL);
	return l;
}

/* The result file's JSON as "output": null when there was none; an error when it is not JSON. */
static int add_output(struct json_object *o, const struct launcher_result *res)
{
	struct json_object *v = NULL;
	const char *problem = NULL;
	int r;

	if (res->output.truncated)
		problem = "the result file is larger than 1 MiB";
	else if (res->output.data &&
		 al_json_parse(res->output.data, res->output.len, 64, &v, NULL) < 0)
		problem = "the result file is not JSON";
	r = json_object_object_add(o, "output", v);
	if (r >= 0 && problem)
		r = al_json_add(o, "output_error", json_object_new_string(problem));
	return r < 0 ? -ENOMEM : 0;
}

static int agent_result_json(const struct policy *p, const struct launcher_result *res,
			     unsigned flags, struct json_object **ret)
{
	_cleanup_json_ struct json_object *o = json_object_new_object();
	int r = 0;

	if (!o)
		return -ENOMEM;
	if (flags & AGENT_RESULT_ERROR_FIELD)
		r |= json_object_object_add(o, "error", NULL);
	r |= al_json_add(o, "stdout", json_output(&res->out));
	r |= al_json_add(o, "stderr", json_output(&res->err));
	r |= al_json_add(o, "stdout_truncated", json_object_new_boolean(res->out.truncated));
	r |= al_json_add(o, "stderr_truncated", json_object_new_boolean(res->err.truncated));
	r |= al_json_add(o, "exit_code", json_object_new_int(res->exit_code));
	if (res->signal)
		r |= al_json_add(o, "signal", json_object_new_int(res->signal));
	else
		r |= json_object_object_add(o, "signal", NULL);
	r |= al_json_add(o, "timed_out", json_object_new_boolean(res->timed_out));
	r |= al_json_add(o, "oom_killed", json_object_new_boolean(res->oom_killed));
	if (flags & AGENT_RESULT_COMPILE_FIELD)
		r |= al_json_add(o, "compile_error", json_object_new_boolean(res->prelude_failed));
	r |= al_json_add(o, "duration_ms", json_ms(res->duration_usec));
	if (flags & AGENT_RESULT_OUTPUT_FIELD)
		r |= add_output(o, res);
	r |= al_json_add(o, "policy_hash", json_object_new_string(res->policy_hash));
	r |= al_json_add(o, "violations", json_violations(res));
	r |= al_json_add(o, "labels", agent_labels_json(p));
	if (flags & AGENT_RESULT_STEPS) {
		struct json_object *steps = json_object_new_object();

		for (size_t i = 0; steps && i < res->n_steps; i++)
			r |= al_json_add(steps, res->steps[i].name,
					 json_object_new_int64((int64_t)res->steps[i].usec));
		r |= al_json_add(o, "steps", steps);
	}
	if (r != 0)
		return -ENOMEM;
	*ret = TAKE_PTR(o);
	return 0;
}

int agent_result_print(FILE *out, const struct policy *p, const struct launcher_result *res,
		       unsigned flags)
{
	_cleanup_json_ struct json_object *o = NULL;
	int r;

	r = agent_result_json(p, res, flags, &o);
	return r < 0 ? r : agent_json_print(out, o);
}

int agent_json_print(FILE *out, struct json_object *o)
{
	_cleanup_free_ char *text = NULL;
	int r;

	r = al_json_to_string(o, &text);
	if (r < 0)
		return r;
	if (fprintf(out, "%s\n", text) < 0 || fflush(out) != 0)
		return -EIO;
	return 0;
}

unsigned agent_result_flags(const struct agent_request *req)
{
	return AGENT_RESULT_ERROR_FIELD | AGENT_RESULT_OUTPUT_FIELD |
	       (req->language == AGENT_LANGUAGE_RUST ? AGENT_RESULT_COMPILE_FIELD : 0);
}
