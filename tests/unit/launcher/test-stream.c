/* tests/unit/launcher/test-stream.c: a stream between two fds, built from launcher/stream.c
 * alone (the broker's redaction is stubbed out: these streams have no broker). */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "broker/client.h"
#include "launcher/launcher-internal.h"

/* ---- the broker, which no stream here has ---- */

int broker_client_redact(struct broker_client *c, unsigned stream, const void *buf, size_t len,
			 bool flush, struct broker_secret **ret, struct al_error *err)
{
	(void)c, (void)stream, (void)buf, (void)len, (void)flush, (void)ret, (void)err;
	fail_msg("a stream without a broker redacted");
	return -EIO;
}

struct broker_secret *broker_secret_free(struct broker_secret *s)
{
	assert_null(s);
	return NULL;
}

/* Moves what s has until it is done (each poll at most a second). */
static void run(struct launcher_stream *s)
{
	for (int i = 0; i < 100 && !launcher_stream_done(s); i++) {
		struct pollfd pfd[2];

		launcher_stream_poll(s, &pfd[0], &pfd[1]);
		assert_true(poll(pfd, 2, 1000) > 0);
		launcher_stream_handle(s, pfd[0].revents, pfd[1].revents);
	}
	assert_true(launcher_stream_done(s));
}

static void test_stream_init_sets_every_field_but_the_chunk_buffer(void **state)
{
	struct launcher_stream *s = malloc(sizeof(*s));
	struct launcher_buffer b = {0};

	(void)state;
	assert_non_null(s);
	memset(s, 0xa5, sizeof(*s));
	launcher_stream_init(s, 7, true, 9, false, &b, 100);
	assert_int_equal(s->from, 7);
	assert_int_equal(s->to, 9);
	assert_true(s->owns_from);
	assert_false(s->owns_to);
	assert_false(s->nonblocking);
	assert_false(s->use_send);
	assert_ptr_equal(s->capture, &b);
	assert_int_equal(s->capture_max, 100);
	assert_null(s->data);
	assert_int_equal(s->off, 0);
	assert_int_equal(s->len, 0);
	assert_null(s->broker);
	assert_int_equal(s->broker_stream, 0);
	assert_null(s->redacted);
	assert_false(s->eof);
	/* Zeroing the 64 KiB would fault in every page of it (serve's thread stacks, its heap)
	 * for nothing: it is written before it is read. */
	for (size_t i = 0; i < sizeof(s->buf); i++)
		if ((unsigned char)s->buf[i] != 0xa5)
			fail_msg("launcher_stream_init() wrote buf[%zu]", i);
	free(s);
}

static void test_stream_captures_a_pipe_to_its_end(void **state)
{
	struct launcher_stream *s = malloc(sizeof(*s));
	struct launcher_buffer b = {0};
	int p[2];

	(void)state;
	assert_non_null(s);
	memset(s, 0x5a, sizeof(*s)); /* what a fresh heap or stack may hold */
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	assert_int_equal(write(p[1], "hello, world", 12), 12);
	assert_int_equal(close(p[1]), 0);
	launcher_stream_init(s, p[0], true, -EBADF, false, &b, 5);
	run(s);
	assert_non_null(b.data);
	assert_int_equal(b.len, 5);
	assert_string_equal(b.data, "hello");
	assert_true(b.truncated);
	launcher_stream_close(s);
	free(b.data);
	free(s);
}

static void test_stream_copies_a_pipe_into_another(void **state)
{
	struct launcher_stream *s = malloc(sizeof(*s));
	char out[64] = "";
	int in[2], to[2];

	(void)state;
	assert_non_null(s);
	memset(s, 0x5a, sizeof(*s));
	assert_int_equal(pipe2(in, O_CLOEXEC), 0);
	assert_int_equal(pipe2(to, O_CLOEXEC), 0);
	assert_int_equal(write(in[1], "copied", 6), 6);
	assert_int_equal(close(in[1]), 0);
	launcher_stream_init(s, in[0], true, to[1], true, NULL, 0);
	launcher_stream_open_nonblocking(s);
	run(s);
	launcher_stream_close(s);
	/* Its end was passed on: the write end is closed, so this read ends. */
	assert_int_equal(read(to[0], out, sizeof(out) - 1), 6);
	assert_string_equal(out, "copied");
	assert_int_equal(read(to[0], out, sizeof(out)), 0);
	assert_int_equal(close(to[0]), 0);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_stream_init_sets_every_field_but_the_chunk_buffer),
	    cmocka_unit_test(test_stream_captures_a_pipe_to_its_end),
	    cmocka_unit_test(test_stream_copies_a_pipe_into_another),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
