/* A Postgres login through the egress proxy (pg-internal.h has the contract, pg-parts-internal.h
 * the parts): the connection's life, its messages framed in and written out, its errors, the
 * relay of the upstream's messages watched for the real password, and the calls that step it.
 * Every field is read within its message's bounds. */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/client.h"
#include "netns/pg-parts-internal.h"

/* ---- messages out ---- */

int pg_put_message(struct netns_buf *out, char type, const void *body, size_t n)
{
	uint8_t head[5] = {(uint8_t)type};
	size_t h = type ? 5 : 4, before = netns_buf_len(out);
	int r;

	if (n > NETNS_PG_OUT_MAX - h || before > NETNS_PG_OUT_MAX - n - h)
		return -EMSGSIZE;
	al_wire_put_u32(head + 1, (uint32_t)(n + 4));
	r = netns_buf_append(out, type ? head : head + 1, h, NETNS_PG_OUT_MAX);
	if (r >= 0)
		r = netns_buf_append(out, body, n, NETNS_PG_OUT_MAX);
	if (r < 0 && netns_buf_len(out) > before) {
		/* The head went in, not the body: take it back (the buffer may have moved). */
		explicit_bzero(out->data + out->start + before, netns_buf_len(out) - before);
		out->end = out->start + before;
	}
	return r;
}

int pg_buf_u32(struct netns_buf *b, uint32_t v)
{
	uint8_t p[4];

	al_wire_put_u32(p, v);
	return netns_buf_append(b, p, 4, NETNS_PG_OUT_MAX);
}

int pg_buf_append_buf(struct netns_buf *dst, const struct netns_buf *src, size_t max)
{
	if (netns_buf_len(src) == 0)
		return 0;
	return netns_buf_append(dst, netns_buf_head(src), netns_buf_len(src), max);
}

int pg_buf_str(struct netns_buf *b, const char *s)
{
	return netns_buf_append(b, s, strlen(s) + 1, NETNS_PG_OUT_MAX);
}

int pg_put_error(struct netns_buf *out, const char *sqlstate, const char *text)
{
	_cleanup_(netns_buf_done) struct netns_buf b = {0};
	int r;

	r = pg_buf_str(&b, "SFATAL");
	if (r >= 0)
		r = pg_buf_str(&b, "VFATAL");
	if (r >= 0)
		r = netns_buf_printf(&b, NETNS_PG_OUT_MAX, "C%s", sqlstate);
	if (r >= 0)
		r = netns_buf_append(&b, "", 1, NETNS_PG_OUT_MAX);
	if (r >= 0)
		r = netns_buf_printf(&b, NETNS_PG_OUT_MAX, "M%s", text);
	if (r >= 0)
		r = netns_buf_append(&b, "\0", 2, NETNS_PG_OUT_MAX); /* its end, and the list's */
	if (r < 0)
		return r;
	return pg_put_message(out, 'E', netns_buf_head(&b), netns_buf_len(&b));
}

/* Whether the sandbox can take an ErrorResponse now: before the relay, or in it between two
 * messages with nothing held back. */
static bool sandbox_can_be_told(const struct netns_pg *pg)
{
	if (pg->told || pg->state == PG_PASS)
		return false;
	if (pg->state != PG_RELAY)
		return true;
	return pg->relay.head_n == 0 && pg->relay.sent == netns_buf_len(&pg->relay.win);
}

int pg_fail(struct netns_pg *pg, int r, struct netns_buf *to_sandbox, const char *sqlstate,
	    struct al_error *err, const char *fmt, ...)
{
	char text[PG_ERROR_TEXT_MAX], full[PG_ERROR_TEXT_MAX + 16];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (sqlstate && to_sandbox && sandbox_can_be_told(pg)) {
		(void)snprintf(full, sizeof(full), "airlock: %s", text);
		if (pg_put_error(to_sandbox, sqlstate, full) >= 0)
			pg->told = true;
	}
	pg->error = r;
	return al_error_set(err, r, "Postgres: %s", text);
}

/* ---- messages in ---- */

/* Takes from *p (*n bytes) what completes the message under way in acc (typed: a type byte
 * first; max: its largest length). Returns its whole length once it is in acc, 0 while more
 * bytes are needed, -EMSGSIZE, -EBADMSG (a length that cannot be). */
static ssize_t frame(struct netns_buf *acc, bool typed, size_t max, const uint8_t **p, size_t *n)
{
	size_t h = typed ? 5 : 4, have = netns_buf_len(acc), want, take;
	uint32_t len;
	int r;

	if (have < h) {
		take = MIN(*n, h - have);
		r = netns_buf_append(acc, *p, take, h);
		if (r < 0)
			return r;
		*p += take;
		*n -= take;
		have += take;
		if (have < h)
			return 0;
	}
	len = pg_get_u32(netns_buf_head(acc) + (typed ? 1 : 0));
	if (len > max)
		return -EMSGSIZE;
	if (len < (typed ? 4 : 8))
		return -EBADMSG;
	want = (typed ? 1 : 0) + (size_t)len;
	take = MIN(*n, want - have);
	r = netns_buf_append(acc, *p, take, want);
	if (r < 0)
		return r;
	*p += take;
	*n -= take;
	return have + take == want ? (ssize_t)want : 0;
}

bool pg_take_cstring(struct al_wire *c, const char **ret, size_t *ret_len)
{
	const uint8_t *nul = c->len ? memchr(c->p, '\0', c->len) : NULL;

	if (!nul)
		return false;
	*ret = (const char *)c->p;
	*ret_len = (size_t)(nul - c->p);
	c->p = nul + 1;
	c->len -= *ret_len + 1;
	return true;
}

bool pg_is_text(const uint8_t *s, size_t n)
{
	return n <= SCRAM_MESSAGE_MAX && !memchr(s, '\0', n);
}

bool pg_is_nonce(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x21 || s[i] > 0x7e || s[i] == ',')
			return false;
	return n > 0;
}

int pg_random_bytes(struct netns_pg *pg, uint8_t *buf, size_t n)
{
	return pg->random_fn ? pg->random_fn(pg->userdata, buf, n) : netns_pg_random(buf, n);
}

/* ---- the relay: the upstream's messages from AuthenticationOk on ---- */

/* Moves the framing over n bytes; whether it ends between two messages. -EBADMSG. */
static int relay_frame(struct pg_relay *rl, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n;) {
		size_t take;

		if (rl->head_n < 5) {
			rl->head[rl->head_n++] = p[i++];
			if (rl->head_n == 5) {
				uint32_t len = pg_get_u32(rl->head + 1);

				if (len < 4 || len > INT32_MAX)
					return -EBADMSG;
				rl->left = len - 4;
				if (rl->left == 0)
					rl->head_n = 0;
			}
			continue;
		}
		take = (size_t)MIN((uint64_t)(n - i), rl->left);
		i += take;
		rl->left -= take;
		if (rl->left == 0)
			rl->head_n = 0;
	}
	return 0;
}

int pg_relay_feed(struct netns_pg *pg, const uint8_t *p, size_t n, struct netns_buf *to_sandbox,
		  struct al_error *err)
{
	struct pg_relay *rl = &pg->relay;
	size_t pw = pg->password ? pg->password->len : 0, keep = pw ? pw - 1 : 0, len, hold;
	int r;

	if (n == 0)
		return 0;
	if (relay_frame(rl, p, n) < 0)
		return pg_fail(pg, -EBADMSG, to_sandbox, NULL, err,
			       "the upstream sent a message of a bad length");
	r = netns_buf_append(&rl->win, p, n, NETNS_PG_OUT_MAX);
	if (r < 0)
		return pg_fail(pg, r, to_sandbox, NULL, err, "the relay's window is full");
	len = netns_buf_len(&rl->win);
	if (pw && memmem(netns_buf_head(&rl->win), len, pg->password->data, pw))
		return pg_fail(pg, -EPERM, to_sandbox, NULL, err,
			       "the upstream sent the real password toward the sandbox");
	/* Between two messages everything goes: the start of the password may then be out
	 * already, never its end. Within one, what could begin it waits for the next bytes. */
	hold = rl->head_n == 0 ? 0 : MIN(keep, len - rl->sent);
	r = netns_buf_append(to_sandbox, netns_buf_head(&rl->win) + rl->sent, len - hold - rl->sent,
			     NETNS_PG_OUT_MAX);
	if (r < 0)
		return pg_fail(pg, r, to_sandbox, NULL, err, "the sandbox's buffer is full");
	rl->sent = len - hold;
	netns_buf_consume(&rl->win, rl->sent - MIN(keep, rl->sent));
	rl->sent = MIN(keep, rl->sent);
	return 0;
}

/* ---- the relay: the sandbox's messages, searched for a statement that sets a password ---- */

static bool is_ident(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '$' ||
	       c >= 0x80;
}

static uint8_t lower(uint8_t c)
{
	return c >= 'A' && c <= 'Z' ? (uint8_t)(c + 'a' - 'A') : c;
}

/* Appends c to out (*o bytes), a run of spaces kept as one. */
static void put(uint8_t *out, size_t *o, uint8_t c)
{
	if (c == ' ' && (*o == 0 || out[*o - 1] == ' '))
		return;
	out[(*o)++] = c;
}

/* The end of a quoted literal or identifier that opens at s[i] (q: its quote; backslash: an E''
 * string, where \ escapes), past its closing quote, or n. */
static size_t skip_quoted(const uint8_t *s, size_t n, size_t i, uint8_t q, bool backslash)
{
	for (i++; i < n; i++) {
		if (backslash && s[i] == '\\')
			i++;
		else if (s[i] == q && i + 1 < n && s[i + 1] == q)
			i++;
		else if (s[i] == q)
			return i + 1;
	}
	return n;
}

/* The end of a comment that opens at s[i] ("--" to the line's end, or nested slash-stars). */
static size_t skip_comment(const uint8_t *s, size_t n, size_t i)
{
	unsigned depth = 0;

	if (s[i] == '-') {
		const uint8_t *nl = memchr(s + i, '\n', n - i);

		return nl ? (size_t)(nl - s) : n;
	}
	for (; i + 1 < n; i++) {
		if (s[i] == '/' && s[i + 1] == '*') {
			depth++;
			i++;
		} else if (s[i] == '*' && s[i + 1] == '/') {
			i++;
			if (--depth == 0)
				return i + 1;
		}
	}
	return n;
}

/* Dollar quotes searched within each other, at most (a deeper one is refused). */
#define PG_DOLLAR_DEPTH_MAX 8

static bool sets_password(const uint8_t *s, size_t n, bool backslash, unsigned depth);

/* The length of a dollar quote's delimiter ("$tag$") at s[i], or 0. */
static size_t dollar_tag(const uint8_t *s, size_t n, size_t i)
{
	size_t j = i + 1;

	if (i > 0 && is_ident(lower(s[i - 1])))
		return 0; /* within an identifier, or a parameter's digits */
	while (j < n && is_ident(lower(s[j])) && s[j] != '$' && !(j == i + 1 && s[j] <= '9'))
		j++;
	return j < n && s[j] == '$' ? j + 1 - i : 0;
}

/* s lowercased, whitespace runs one space, NUL taken as ';'; lexed: a comment is a space, a
 * literal or quoted identifier its two quotes (what it holds cannot be a keyword; backslash: \
 * escapes in every literal, as with standard_conforming_strings off, else in E'' only). A
 * dollar-quoted body (a function's) is searched on its own, as SQL: *ret_found. out has room for
 * n + 1 bytes: each piece is no longer out than in, but a quote left open at the end. */
static size_t normalize(const uint8_t *s, size_t n, bool backslash, unsigned depth, uint8_t *out,
			bool *ret_found)
{
	size_t o = 0;

	for (size_t i = 0; i < n;) {
		uint8_t c = s[i];
		size_t tag = c == '$' ? dollar_tag(s, n, i) : 0;

		if (i + 1 < n && ((c == '-' && s[i + 1] == '-') || (c == '/' && s[i + 1] == '*'))) {
			i = skip_comment(s, n, i);
			put(out, &o, ' ');
		} else if (c == '\'' || c == '"') {
			bool e = c == '\'' && (backslash || (o > 0 && out[o - 1] == 'e' &&
							     (o == 1 || !is_ident(out[o - 2]))));

			i = skip_quoted(s, n, i, c, e);
			put(out, &o, c);
			put(out, &o, c);
		} else if (tag > 0) {
			const uint8_t *body = s + i + tag, *end;

			end = memmem(body, n - i - tag, s + i, tag);
			if (!end)
				end = s + n;
			if (depth >= PG_DOLLAR_DEPTH_MAX ||
			    sets_password(body, (size_t)(end - body), backslash, depth + 1))
				*ret_found = true;
			i = end == s + n ? n : (size_t)(end - s) + tag;
			put(out, &o, '\'');
			put(out, &o, '\'');
		} else {
			put(out, &o,
			    c == 0 ? ';'
			    : (c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v')
				? ' '
				: lower(c));
			i++;
		}
	}
	return o;
}

/* Whether t (n bytes) has the word w at i. */
static bool word_at(const uint8_t *t, size_t n, size_t i, const char *w)
{
	size_t l = strlen(w);

	return i + l <= n && memcmp(t + i, w, l) == 0 && (i == 0 || !is_ident(t[i - 1])) &&
	       (i + l == n || !is_ident(t[i + l]));
}

static bool normalized_sets_password(const uint8_t *t, size_t n)
{
	static const char *const verbs[] = {"alter ", "create "};
	static const char *const objects[] = {"role", "user", "group"};

	for (size_t i = 0; i < n; i++)
		for (size_t v = 0; v < ELEMENTSOF(verbs); v++) {
			size_t l = strlen(verbs[v]);

			if (i + l > n || memcmp(t + i, verbs[v], l) != 0 ||
			    (i > 0 && is_ident(t[i - 1])))
				continue;
			for (size_t k = 0; k < ELEMENTSOF(objects); k++) {
				if (!word_at(t, n, i + l, objects[k]))
					continue;
				/* PASSWORD anywhere in the statement's rest. */
				for (size_t j = i + l; j < n && t[j] != ';'; j++)
					if (word_at(t, n, j, "password"))
						return true;
			}
		}
	return false;
}

static bool sets_password(const uint8_t *s, size_t n, bool backslash, unsigned depth)
{
	_cleanup_free_ uint8_t *t = NULL;
	bool found = false;
	size_t len;

	if (n == 0)
		return false;
	t = malloc(n + 1); /* a quote left open at the end is two bytes out */
	if (!t)
		return true; /* refused: unsearched */
	len = normalize(s, n, backslash, depth, t, &found);
	found = found || normalized_sets_password(t, len);
	explicit_bzero(t, n + 1);
	return found;
}

bool netns_pg_sets_password(const uint8_t *s, size_t n)
{
	/* Either reading of backslashes (standard_conforming_strings is the session's) that finds
	 * one refuses the statement. */
	return sets_password(s, n, false, 0) || sets_password(s, n, true, 0);
}

/* The message held in front.stmt is whole: on to to_upstream, unless it sets a password. */
static int front_release(struct netns_pg *pg, struct netns_buf *to_upstream,
			 struct netns_buf *to_sandbox, struct al_error *err)
{
	struct pg_front *f = &pg->front;
	size_t len = netns_buf_len(&f->stmt);
	int r;

	if (netns_pg_sets_password(netns_buf_head(&f->stmt) + 5, len - 5)) {
		netns_buf_done(&f->stmt);
		return pg_fail(pg, -EPERM, to_sandbox, "42501", err,
			       "a statement that sets a role's password is refused");
	}
	r = netns_buf_append(to_upstream, netns_buf_head(&f->stmt), len, NETNS_PG_OUT_MAX);
	netns_buf_done(&f->stmt);
	return r;
}

/* Moves n bytes of the message under way on: to stmt when held, else to to_upstream. */
static int front_pass(struct netns_pg *pg, const uint8_t *p, size_t n,
		      struct netns_buf *to_upstream)
{
	struct pg_front *f = &pg->front;

	if (f->hold)
		return netns_buf_append(&f->stmt, p, n, NETNS_PG_STATEMENT_MAX + 5);
	return netns_buf_append(to_upstream, p, n, NETNS_PG_OUT_MAX);
}

int pg_front_feed(struct netns_pg *pg, const uint8_t *p, size_t n, struct netns_buf *to_upstream,
		  struct netns_buf *to_sandbox, struct al_error *err)
{
	struct pg_front *f = &pg->front;
	int r;

	for (size_t i = 0; i < n;) {
		if (f->head_n < 5) {
			size_t take = MIN(n - i, 5 - f->head_n);
			uint32_t len;

			memcpy(f->head + f->head_n, p + i, take);
			f->head_n += take;
			i += take;
			if (f->head_n < 5)
				break;
			len = pg_get_u32(f->head + 1);
			if (len < 4 || len > INT32_MAX)
				return pg_bad_sandbox(pg, to_sandbox, err,
						      "a message from the sandbox of a bad length");
			f->left = len - 4;
			/* Only a Query's or a Parse's text need be whole; a longer one, and any
			 * other message (COPY data), streams through unsearched. */
			f->hold = (f->head[0] == 'Q' || f->head[0] == 'P') &&
				  f->left <= NETNS_PG_STATEMENT_MAX;
			r = front_pass(pg, f->head, 5, to_upstream);
		} else {
			size_t take = (size_t)MIN((uint64_t)(n - i), f->left);

			r = front_pass(pg, p + i, take, to_upstream);
			i += take;
			f->left -= take;
		}
		if (r < 0)
			return pg_fail(pg, r, to_sandbox, NULL, err,
				       "the upstream's buffer is full");
		if (f->left > 0)
			continue;
		f->head_n = 0;
		if (f->hold) {
			f->hold = false;
			r = front_release(pg, to_upstream, to_sandbox, err);
			if (r < 0)
				return pg->error < 0 ? r
						     : pg_fail(pg, r, to_sandbox, NULL, err,
							       "the upstream's buffer is full");
		}
	}
	return 0;
}

/* ---- the calls ---- */

static int refused_earlier(const struct netns_pg *pg, struct al_error *err)
{
	return al_error_set(err, pg->error, "Postgres: the connection failed earlier");
}

static int step(struct netns_pg *pg)
{
	enum netns_pg_step s = pg->announce;

	pg->announce = NETNS_PG_MORE;
	if (s != NETNS_PG_MORE)
		return (int)s;
	return pg->state == PG_RELAY ? NETNS_PG_RELAY : NETNS_PG_MORE;
}

int netns_pg_from_sandbox(struct netns_pg *pg, const uint8_t *p, size_t n,
			  struct netns_buf *to_sandbox, struct netns_buf *to_upstream,
			  struct al_error *err)
{
	int r;

	if (pg->error < 0)
		return refused_earlier(pg, err);
	while (n > 0) {
		ssize_t len;

		switch (pg->state) {
		case PG_STARTUP:
		case PG_SANDBOX_SASL_FIRST:
		case PG_SANDBOX_SASL_FINAL:
		case PG_SANDBOX_PASSWORD:
			len = frame(&pg->in_sandbox, pg->state != PG_STARTUP,
				    pg->state == PG_STARTUP ? NETNS_PG_STARTUP_MAX
							    : NETNS_PG_LOGIN_MESSAGE_MAX,
				    &p, &n);
			if (len == -EMSGSIZE)
				return pg_fail(pg, -EMSGSIZE, to_sandbox, "08P01", err,
					       "a message from the sandbox too long");
			if (len < 0 && len != -EBADMSG)
				return pg_fail(pg, (int)len, to_sandbox, "53200", err,
					       "out of memory");
			if (len < 0)
				return pg_bad_sandbox(pg, to_sandbox, err,
						      "a message from the sandbox of a bad length");
			if (len == 0)
				break;
			r = pg_sandbox_message(pg, netns_buf_head(&pg->in_sandbox), (size_t)len,
					       to_sandbox, to_upstream, err);
			netns_buf_consume(&pg->in_sandbox, (size_t)len);
			if (r < 0)
				return pg->error < 0 ? r
						     : pg_fail(pg, r, to_sandbox, "53200", err,
							       "out of memory");
			break;
		case PG_UPSTREAM_SSL:
		case PG_UPSTREAM_TLS:
		case PG_UPSTREAM_AUTH:
			r = netns_buf_append(&pg->pending, p, n, NETNS_PG_PENDING_MAX);
			if (r < 0)
				return pg_fail(pg, r, to_sandbox, "08P01", err,
					       "too much from the sandbox before the login ended");
			n = 0;
			break;
		case PG_RELAY:
			r = pg_front_feed(pg, p, n, to_upstream, to_sandbox, err);
			if (r < 0)
				return r;
			n = 0;
			break;
		case PG_PASS:
		default:
			return pg_fail(pg, -EBADMSG, to_sandbox, NULL, err,
				       "the sandbox sent more after a CancelRequest");
		}
	}
	return step(pg);
}

int netns_pg_from_upstream(struct netns_pg *pg, const uint8_t *p, size_t n,
			   struct netns_buf *to_sandbox, struct netns_buf *to_upstream,
			   struct al_error *err)
{
	int r;

	if (pg->error < 0)
		return refused_earlier(pg, err);
	while (n > 0) {
		ssize_t len;

		switch (pg->state) {
		case PG_UPSTREAM_SSL:
			/* Nothing may follow the answer: bytes after an 'S' would be read as if
			 * they came over TLS (CVE-2021-23222). */
			if (n != 1 || (p[0] != 'S' && p[0] != 'N'))
				return pg_bad_upstream(
				    pg, to_sandbox, err,
				    "the upstream's answer to SSLRequest is not 'S' "
				    "or 'N' alone");
			if (p[0] == 'S') {
				pg->state = PG_UPSTREAM_TLS;
				pg->announce = NETNS_PG_START_TLS;
				return step(pg);
			}
			r = pg_upstream_startup(pg, to_upstream, err);
			if (r < 0)
				return r;
			n = 0;
			break;
		case PG_UPSTREAM_AUTH:
			len = frame(&pg->in_upstream, true, NETNS_PG_AUTH_MESSAGE_MAX, &p, &n);
			if (len == -EMSGSIZE)
				return pg_fail(pg, -EMSGSIZE, to_sandbox, "08006", err,
					       "a message from the upstream too long");
			if (len < 0 && len != -EBADMSG)
				return pg_fail(pg, (int)len, to_sandbox, "53200", err,
					       "out of memory");
			if (len < 0)
				return pg_bad_upstream(
				    pg, to_sandbox, err,
				    "a message from the upstream of a bad length");
			if (len == 0)
				break;
			r = pg_upstream_message(pg, netns_buf_head(&pg->in_upstream), (size_t)len,
						to_sandbox, to_upstream, err);
			netns_buf_consume(&pg->in_upstream, (size_t)len);
			if (r < 0)
				return pg->error < 0 ? r
						     : pg_fail(pg, r, to_sandbox, "53200", err,
							       "out of memory");
			break;
		case PG_RELAY:
			r = pg_relay_feed(pg, p, n, to_sandbox, err);
			if (r < 0)
				return r;
			n = 0;
			break;
		default:
			return pg_bad_upstream(pg, to_sandbox, err,
					       "the upstream spoke out of turn");
		}
	}
	return step(pg);
}

int netns_pg_tls_ready(struct netns_pg *pg, bool tls, struct netns_buf *to_upstream,
		       struct al_error *err)
{
	int r;

	if (pg->error < 0)
		return refused_earlier(pg, err);
	if (pg->state != PG_UPSTREAM_TLS)
		return pg_fail(pg, -EINVAL, NULL, NULL, err, "TLS ready out of turn");
	if (!tls)
		return pg_fail(pg, -EPROTO, NULL, NULL, err, "TLS to the upstream failed");
	pg->tls = true;
	r = pg_upstream_startup(pg, to_upstream, err);
	return r < 0 ? r : step(pg);
}

/* 0 when pg relays, else why not (a refusal that came before, or a login not yet over). */
static int relay_ready(struct netns_pg *pg, struct al_error *err)
{
	if (pg->error < 0)
		return refused_earlier(pg, err);
	if (pg->state != PG_RELAY)
		return pg_fail(pg, -EINVAL, NULL, NULL, err, "relay before the login ended");
	return 0;
}

int netns_pg_relay_from_upstream(struct netns_pg *pg, const uint8_t *p, size_t n,
				 struct netns_buf *to_sandbox, struct al_error *err)
{
	int r;

	r = relay_ready(pg, err);
	if (r < 0)
		return r;
	r = pg_relay_feed(pg, p, n, to_sandbox, err);
	return r < 0 ? r : step(pg);
}

int netns_pg_relay_from_sandbox(struct netns_pg *pg, const uint8_t *p, size_t n,
				struct netns_buf *to_upstream, struct netns_buf *to_sandbox,
				struct al_error *err)
{
	int r;

	r = relay_ready(pg, err);
	if (r < 0)
		return r;
	r = pg_front_feed(pg, p, n, to_upstream, to_sandbox, err);
	return r < 0 ? r : step(pg);
}

int netns_pg_report_failure(struct netns_pg *pg, const char *message, struct netns_buf *to_sandbox)
{
	char text[PG_ERROR_TEXT_MAX];
	int r;

	if (!sandbox_can_be_told(pg))
		return 0;
	(void)snprintf(text, sizeof(text), "airlock: %s", message);
	r = pg_put_error(to_sandbox, "08006", text);
	if (r < 0)
		return r;
	pg->told = true;
	if (pg->error == 0)
		pg->error = -ECONNABORTED;
	return 0;
}

const char *netns_pg_upstream_auth(const struct netns_pg *pg)
{
	return pg->up_method;
}

bool netns_pg_upstream_tls(const struct netns_pg *pg)
{
	return pg->tls;
}

static bool is_printable_ascii(const char *s)
{
	for (; *s; s++)
		if (*s < 0x20 || *s > 0x7e)
			return false;
	return true;
}

int netns_pg_new(const struct netns_pg_options *o, struct netns_pg **ret)
{
	_cleanup_(netns_pg_freep) struct netns_pg *pg = NULL;

	if (!o->user || !o->user[0] || !o->database || !o->database[0] || !o->surrogate ||
	    !o->surrogate[0] || !is_printable_ascii(o->surrogate) || !o->password)
		return -EINVAL;
	pg = calloc(1, sizeof(*pg));
	if (!pg)
		return -ENOMEM;
	pg->user = strdup(o->user);
	pg->database = strdup(o->database);
	pg->surrogate = strdup(o->surrogate);
	if (!pg->user || !pg->database || !pg->surrogate)
		return -ENOMEM;
	pg->client_auth = o->client_auth;
	pg->password_fn = o->password;
	pg->random_fn = o->random;
	pg->userdata = o->userdata;
	*ret = TAKE_PTR(pg);
	return 0;
}

static void free_wiped(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

struct netns_pg *netns_pg_free(struct netns_pg *pg)
{
	if (!pg)
		return NULL;
	free(pg->user);
	free(pg->database);
	free_wiped(pg->surrogate);
	free(pg->first_bare);
	free(pg->server_first);
	free(pg->nonce);
	netns_buf_done(&pg->in_sandbox);
	netns_buf_done(&pg->in_upstream);
	netns_buf_done(&pg->params);
	netns_buf_done(&pg->pending);
	netns_buf_done(&pg->relay.win);
	netns_buf_done(&pg->front.stmt);
	pg->password = broker_secret_free(pg->password);
	pg->secrets = broker_secret_free(pg->secrets);
	explicit_bzero(pg, sizeof(*pg));
	free(pg);
	return NULL;
}
