#define LOG_MODULE "serve"

/* The HTTP side: libmicrohttpd with a thread per connection (a handler may wait for a sandbox),
 * who the client is (SO_PEERCRED on the Unix socket, the bearer token on TCP), the body read up
 * to its limit, the route, and the replies: JSON, bytes, streams, and errors that name a
 * field. */

#include <dlfcn.h>
#include <errno.h>
#include <json-c/json.h>
#include <microhttpd.h>
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/json-util.h"
#include "common/log.h"
#include "serve/serve-internal.h"

/* libmicrohttpd is loaded when serve starts, not linked: every other airlock process (each exec
 * and session command) would otherwise load it and GnuTLS under it, about 5 ms more per process
 * on this kind of machine. */
static struct {
	void *handle;
	__typeof__(MHD_add_response_header) *add_response_header;
	__typeof__(MHD_create_response_from_buffer) *create_response_from_buffer;
	__typeof__(MHD_create_response_from_callback) *create_response_from_callback;
	__typeof__(MHD_destroy_response) *destroy_response;
	__typeof__(MHD_get_connection_info) *get_connection_info;
	__typeof__(MHD_lookup_connection_value) *lookup_connection_value;
	__typeof__(MHD_lookup_connection_value_n) *lookup_connection_value_n;
	__typeof__(MHD_queue_response) *queue_response;
	__typeof__(MHD_start_daemon) *start_daemon;
	__typeof__(MHD_quiesce_daemon) *quiesce_daemon;
	__typeof__(MHD_stop_daemon) *stop_daemon;
} mhd;

#define MHD_LIBRARY "libmicrohttpd.so.12"

int serve_http_load(struct al_error *err)
{
	static const struct {
		const char *name;
		size_t offset;
	} symbols[] = {
#define SYMBOL(x) {"MHD_" #x, offsetof(__typeof__(mhd), x)}
	    SYMBOL(add_response_header),
	    SYMBOL(create_response_from_buffer),
	    SYMBOL(create_response_from_callback),
	    SYMBOL(destroy_response),
	    SYMBOL(get_connection_info),
	    SYMBOL(lookup_connection_value),
	    SYMBOL(lookup_connection_value_n),
	    SYMBOL(queue_response),
	    SYMBOL(start_daemon),
	    SYMBOL(quiesce_daemon),
	    SYMBOL(stop_daemon),
#undef SYMBOL
	};

	if (mhd.handle)
		return 0;
	mhd.handle = dlopen(MHD_LIBRARY, RTLD_NOW | RTLD_LOCAL);
	if (!mhd.handle)
		return al_error_set(err, -ENOENT,
				    "Cannot load %s (apt-get install libmicrohttpd12): %s",
				    MHD_LIBRARY, dlerror());
	for (size_t i = 0; i < ELEMENTSOF(symbols); i++) {
		void *f = dlsym(mhd.handle, symbols[i].name);

		if (!f)
			return al_error_set(err, -ENOENT, "%s has no %s", MHD_LIBRARY,
					    symbols[i].name);
		memcpy((char *)&mhd + symbols[i].offset, &f, sizeof(f));
	}
	return 0;
}

void serve_http_stop(struct MHD_Daemon *d, bool quiesce)
{
	if (!d)
		return;
	if (quiesce)
		(void)mhd.quiesce_daemon(d);
	else
		mhd.stop_daemon(d);
}

const char *serve_header(struct serve_request *r, const char *name)
{
	return mhd.lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

const char *serve_query(struct serve_request *r, const char *name)
{
	return mhd.lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

int serve_query_bool(struct serve_request *r, const char *name, bool *ret)
{
	const char *v = serve_query(r, name);

	*ret = false;
	if (!v)
		return 0;
	if (streq(v, "true") || streq(v, "1")) {
		*ret = true;
		return 0;
	}
	if (streq(v, "false") || streq(v, "0"))
		return 0;
	(void)serve_reply_error(r, 400, "invalid_request", name, "%s: \"%s\" is not true or false",
				name, v);
	return -EINVAL;
}

bool serve_client_gone(const struct serve_request *r)
{
	struct pollfd p = {.fd = r->conn_fd, .events = POLLRDHUP};

	return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

static int queue(struct serve_request *r, unsigned status, struct MHD_Response *resp,
		 const char *type)
{
	enum MHD_Result ok;

	if (!resp)
		return -ENOMEM;
	if (type)
		(void)mhd.add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	(void)mhd.add_response_header(resp, "Cache-Control", "no-store");
	ok = mhd.queue_response(r->conn, status, resp);
	mhd.destroy_response(resp);
	return ok == MHD_YES ? 0 : -EIO;
}

int serve_reply_bytes(struct serve_request *r, unsigned status, const char *type, const void *buf,
		      size_t len)
{
	return queue(r, status,
		     mhd.create_response_from_buffer(len, (void *)buf, MHD_RESPMEM_MUST_COPY),
		     type);
}

int serve_reply_json(struct serve_request *r, unsigned status, struct json_object *o)
{
	_cleanup_free_ char *text = NULL;
	int k;

	k = o ? al_json_to_string(o, &text) : -ENOMEM;
	if (k < 0)
		return k;
	return serve_reply_bytes(r, status, "application/json", text, strlen(text));
}

int serve_reply_error(struct serve_request *r, unsigned status, const char *code, const char *field,
		      const char *fmt, ...)
{
	_cleanup_(al_json_putp) struct json_object *o = json_object_new_object();
	struct json_object *e = json_object_new_object();
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!o || !e || al_json_add(o, "error", e) < 0 ||
	    al_json_add(e, "code", json_object_new_string(code)) < 0 ||
	    al_json_add(e, "message", json_object_new_string(msg)) < 0 ||
	    al_json_add_or_null(e, "field", field ? json_object_new_string(field) : NULL) < 0)
		return -ENOMEM;
	return serve_reply_json(r, status, o);
}

int serve_reply_errno(struct serve_request *r, int error, const char *field, const char *msg)
{
	switch (error) {
	case -ENOENT:
	case -ENOTDIR:
		return serve_reply_error(r, 404, "not_found", field, "%s", msg);
	case -EACCES:
	case -EPERM:
	case -ELOOP:
		return serve_reply_error(r, 403, "forbidden", field, "%s", msg);
	case -EEXIST:
	case -ENOTEMPTY:
	case -EISDIR:
	case -EBUSY:
		return serve_reply_error(r, 409, "conflict", field, "%s", msg);
	case -EFBIG:
	case -E2BIG:
		return serve_reply_error(r, 413, "too_large", field, "%s", msg);
	case -ENOSPC:
	case -EDQUOT:
		return serve_reply_error(r, 507, "no_space", field, "%s", msg);
	case -EINVAL:
	case -ENAMETOOLONG:
		return serve_reply_error(r, 400, "invalid_request", field, "%s", msg);
	default:
		return serve_reply_error(r, 500, "failed", field, "%s", msg);
	}
}

struct stream {
	const struct serve_stream_ops *ops;
	void *data;
};

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct stream *st = cls;
	ssize_t k;

	(void)pos;
	k = st->ops->next(st->data, buf, max);
	if (k == 0)
		return MHD_CONTENT_READER_END_OF_STREAM;
	return k < 0 ? MHD_CONTENT_READER_END_WITH_ERROR : k;
}

static void stream_free(void *cls)
{
	struct stream *st = cls;

	st->ops->done(st->data);
	free(st);
}

int serve_reply_stream(struct serve_request *r, unsigned status, const char *type,
		       const struct serve_stream_ops *ops, void *data)
{
	struct stream *st = malloc(sizeof(*st));
	struct MHD_Response *resp;

	if (!st) {
		ops->done(data);
		return -ENOMEM;
	}
	*st = (struct stream){.ops = ops, .data = data};
	resp = mhd.create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, stream_read, st,
						 stream_free);
	if (!resp) {
		stream_free(st);
		return -ENOMEM;
	}
	(void)mhd.add_response_header(resp, "X-Accel-Buffering", "no");
	return queue(r, status, resp, type);
}

/* Whether a string anywhere in o holds a NUL byte (json-c keeps it; C strings would be cut at
 * it, so that what is checked and what is used could differ). */
static bool holds_nul(struct json_object *o)
{
	switch (json_object_get_type(o)) {
	case json_type_string:
		return (size_t)json_object_get_string_len(o) != strlen(json_object_get_string(o));
	case json_type_array:
		for (size_t i = 0; i < json_object_array_length(o); i++)
			if (holds_nul(json_object_array_get_idx(o, i)))
				return true;
		return false;
	case json_type_object: {
		json_object_object_foreach(o, key, v)
		{
			(void)key;
			if (holds_nul(v))
				return true;
		}
		return false;
	}
	default:
		return false;
	}
}

bool serve_query_holds_nul(struct serve_request *r, const char *name)
{
	size_t len = 0;
	const char *v = NULL;

	if (mhd.lookup_connection_value_n(r->conn, MHD_GET_ARGUMENT_KIND, name, strlen(name), &v,
					  &len) != MHD_YES)
		return false;
	return v && strlen(v) != len;
}

int serve_body_object(struct serve_request *r, struct json_object **ret)
{
	struct al_error err = {0};
	int k;

	k = al_json_parse(r->body ? r->body : "", r->len, 32, ret, &err);
	if (k < 0)
		return serve_reply_error(r, 400, "invalid_request", NULL,
					 "The body is not JSON: %s", err.msg),
		       -EINVAL;
	if (holds_nul(*ret)) {
		json_object_put(*ret);
		*ret = NULL;
		return serve_reply_error(r, 400, "invalid_request", NULL,
					 "A string of the body holds a NUL byte (\\u0000)"),
		       -EINVAL;
	}
	if (!json_object_is_type(*ret, json_type_object)) {
		json_object_put(*ret);
		*ret = NULL;
		return serve_reply_error(r, 400, "invalid_request", NULL,
					 "The body is not a JSON object"),
		       -EINVAL;
	}
	return 0;
}

/* ---- who asks ---- */

static bool uid_allowed(const struct serve *s, uid_t uid)
{
	if (uid == 0 || uid == geteuid())
		return true;
	for (size_t i = 0; i < s->o->n_allow_uids; i++)
		if (s->o->allow_uids[i] == uid)
			return true;
	return false;
}

/* Compares without leaking where the first difference is. */
static bool token_equal(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned char d = la != lb;

	for (size_t i = 0; i < la; i++)
		d |= (unsigned char)a[i] ^ (unsigned char)b[i % (lb ? lb : 1)];
	return d == 0 && lb > 0;
}

/* Fills r->client, or replies 401/403 (and returns -EPERM). */
static int identify(struct serve_request *r, bool tcp)
{
	const char *auth;
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (tcp) {
		auth = mhd.lookup_connection_value(r->conn, MHD_HEADER_KIND,
						   MHD_HTTP_HEADER_AUTHORIZATION);
		if (!auth || strncasecmp(auth, "Bearer ", 7) != 0 ||
		    !token_equal(auth + 7, r->srv->token)) {
			(void)serve_reply_error(r, 401, "unauthorized", "Authorization",
						"A bearer token is required (Authorization: "
						"Bearer TOKEN)");
			return -EPERM;
		}
		(void)snprintf(r->client.key, sizeof(r->client.key), "tcp");
		return 0;
	}
	if (getsockopt(r->conn_fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 ||
	    !uid_allowed(r->srv, cred.uid)) {
		(void)serve_reply_error(r, 403, "forbidden", NULL,
					"This user may not use this service (--allow-uid)");
		return -EPERM;
	}
	(void)snprintf(r->client.key, sizeof(r->client.key), "uid:%u", (unsigned)cred.uid);
	return 0;
}

/* ---- routing ---- */

static int split_path(struct serve_request *r, const char *url)
{
	char *save = NULL;

	r->path = strdup(url);
	if (!r->path)
		return -ENOMEM;
	for (char *t = strtok_r(r->path, "/", &save); t; t = strtok_r(NULL, "/", &save)) {
		if (r->n_seg == SERVE_SEGMENTS_MAX)
			return -E2BIG;
		r->seg[r->n_seg++] = t;
	}
	return 0;
}

static bool is(const struct serve_request *r, const char *method)
{
	return streq(r->method, method);
}

static int method_not_allowed(struct serve_request *r)
{
	return serve_reply_error(r, 405, "method_not_allowed", NULL,
				 "%s is not a method of this endpoint", r->method);
}

static int route(struct serve_request *r)
{
	if (r->n_seg < 2 || !streq(r->seg[0], "v1"))
		return serve_reply_error(r, 404, "not_found", NULL,
					 "No such endpoint (the API is under /v1)");
	if (r->n_seg == 2 && streq(r->seg[1], "health"))
		return is(r, "GET") ? serve_health(r) : method_not_allowed(r);
	if (r->n_seg == 2 && streq(r->seg[1], "capabilities"))
		return is(r, "GET") ? serve_capabilities(r) : method_not_allowed(r);
	if (r->n_seg == 2 && streq(r->seg[1], "exec"))
		return is(r, "POST") ? serve_exec(r) : method_not_allowed(r);
	if (streq(r->seg[1], "sessions"))
		return serve_sessions(r);
	return serve_reply_error(r, 404, "not_found", NULL, "No such endpoint");
}

/* The body's limit: a file's content may be a file's size, anything else a request's. */
static size_t body_limit(const struct serve_request *r)
{
	if (r->n_seg == 5 && streq(r->seg[3], "files") && streq(r->seg[4], "content"))
		return AGENT_FILE_MAX;
	return r->srv->o->max_request;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_size, void **state)
{
	const struct serve_listener *l = cls;
	struct serve_request *r = *state;
	const union MHD_ConnectionInfo *info;
	const char *length;

	(void)version;
	if (!r) {
		r = calloc(1, sizeof(*r));
		if (!r)
			return MHD_NO;
		*state = r;
		r->srv = l->srv;
		r->conn = conn;
		r->method = method;
		info = mhd.get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		r->conn_fd = info ? info->connect_fd : -1;
		if (identify(r, l->tcp) < 0) {
			r->denied = true;
			return MHD_YES;
		}
		if (split_path(r, url) < 0) {
			r->denied = true;
			return serve_reply_error(r, 404, "not_found", NULL, "No such endpoint") < 0
				   ? MHD_NO
				   : MHD_YES;
		}
		r->max = body_limit(r);
		length = mhd.lookup_connection_value(conn, MHD_HEADER_KIND,
						     MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (length && strtoull(length, NULL, 10) > r->max) {
			r->denied = true;
			return serve_reply_error(r, 413, "too_large", NULL,
						 "The body is larger than %zu bytes", r->max) < 0
				   ? MHD_NO
				   : MHD_YES;
		}
		return MHD_YES;
	}
	if (*upload_size > 0) {
		size_t n = *upload_size;

		*upload_size = 0;
		if (r->denied || r->too_big)
			return MHD_YES;
		if (n > r->max - r->len) {
			r->too_big = true;
			free(r->body);
			r->body = NULL;
			return MHD_YES;
		}
		char *p = realloc(r->body, r->len + n + 1);
		if (!p)
			return MHD_NO;
		memcpy(p + r->len, upload_data, n);
		r->len += n;
		p[r->len] = '\0';
		r->body = p;
		return MHD_YES;
	}
	if (r->denied)
		return MHD_YES;
	if (r->too_big)
		return serve_reply_error(r, 413, "too_large", NULL,
					 "The body is larger than %zu bytes", r->max) < 0
			   ? MHD_NO
			   : MHD_YES;
	return route(r) < 0 ? MHD_NO : MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **state,
			 enum MHD_RequestTerminationCode code)
{
	struct serve_request *r = *state;

	(void)cls, (void)conn, (void)code;
	if (!r)
		return;
	free(r->path);
	free(r->body);
	free(r);
	*state = NULL;
}

/* Connections per client of the Unix socket: one uid cannot take them all (a slow client holds
 * a thread each). TCP's are bounded per address by libmicrohttpd itself. */
struct conn_owner {
	uid_t uid;
};

static unsigned *uid_connections(struct serve *s, uid_t uid, bool add)
{
	for (size_t i = 0; i < ELEMENTSOF(s->conns); i++)
		if (s->conns[i].n > 0 && s->conns[i].uid == uid)
			return &s->conns[i].n;
	for (size_t i = 0; add && i < ELEMENTSOF(s->conns); i++)
		if (s->conns[i].n == 0) {
			s->conns[i].uid = uid;
			return &s->conns[i].n;
		}
	return NULL;
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **context,
			  enum MHD_ConnectionNotificationCode code)
{
	const struct serve_listener *l = cls;
	struct serve *s = l->srv;
	struct conn_owner *owner = *context;
	const union MHD_ConnectionInfo *info;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	unsigned *n;
	int fd;

	if (l->tcp)
		return;
	if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
		if (!owner)
			return;
		(void)pthread_mutex_lock(&s->lock);
		n = uid_connections(s, owner->uid, false);
		if (n)
			(*n)--;
		(void)pthread_mutex_unlock(&s->lock);
		free(owner);
		*context = NULL;
		return;
	}
	info = mhd.get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	fd = info ? info->connect_fd : -1;
	if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return;
	owner = malloc(sizeof(*owner));
	(void)pthread_mutex_lock(&s->lock);
	n = uid_connections(s, cred.uid, true);
	if (owner && n && *n < s->o->max_client_connections) {
		(*n)++;
		owner->uid = cred.uid;
		*context = TAKE_PTR(owner);
	}
	(void)pthread_mutex_unlock(&s->lock);
	if (!*context) {
		/* Over its share: the connection is ended before a request is read. */
		free(owner);
		(void)shutdown(fd, SHUT_RDWR);
	}
}

_printf_(2, 0) static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[512];

	(void)cls;
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	msg[strcspn(msg, "\n")] = '\0';
	log_debug("libmicrohttpd: %s", msg);
}

struct MHD_Daemon *serve_http_start(struct serve *s, int listen_fd, bool tcp)
{
	struct serve_listener *l = &s->listeners[tcp];
	struct MHD_Daemon *d;

	*l = (struct serve_listener){.srv = s, .tcp = tcp};
	d = mhd.start_daemon(
	    MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG |
		MHD_USE_ITC,
	    0, NULL, NULL, on_request, l, MHD_OPTION_LISTEN_SOCKET, listen_fd,
	    MHD_OPTION_CONNECTION_LIMIT, s->o->max_connections, MHD_OPTION_CONNECTION_TIMEOUT,
	    (unsigned)120, MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
	    MHD_OPTION_NOTIFY_CONNECTION, on_connection, l, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
	    tcp ? s->o->max_client_connections : 0U, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL,
	    MHD_OPTION_END);
	return d;
}
