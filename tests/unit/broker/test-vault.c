/* tests/unit/broker/test-vault.c: the vault file, its round trip and each way it can be bad. */

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <sodium.h>

#include "broker/broker-internal.h"
#include "common/fd-util.h"

/* Cheap Argon2id costs: the tests exercise the format, not the KDF. */
#define KEY(pass)                                                                                  \
	((struct broker_vault_key){.passphrase = (pass),                                           \
				   .passphrase_len = strlen(pass),                                 \
				   .opslimit = crypto_pwhash_OPSLIMIT_MIN,                         \
				   .memlimit = crypto_pwhash_MEMLIMIT_MIN})

static char dir[] = "/tmp/airlock-vault-test.XXXXXX";
static char path[256];

static int setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/airlock-vault-test.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	(void)snprintf(path, sizeof(path), "%s/vault", dir);
	return 0;
}

static int teardown(void **state)
{
	char cmd[512];

	(void)state;
	(void)snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void make_vault(const char *pass)
{
	struct broker_vault_key k = KEY(pass);
	struct broker_vault *v = NULL;
	char *hosts[] = {(char *)"api.github.com", (char *)"*.example.com"};
	struct al_error err = {0};

	assert_int_equal(broker_vault_open(path, &k, true, &v, &err), 0);
	assert_int_equal(broker_vault_put(v, "github", "ghp_secret", 10, 100), 0);
	assert_int_equal(broker_vault_put(v, "anthropic", "sk-ant-x", 8, 200), 0);
	assert_int_equal(broker_vault_bind(v, "github", hosts, 2, 300), 0);
	assert_int_equal(broker_vault_save(v, path, &err), 0);
	broker_vault_free(v);
}

static size_t file_size(void)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	return (size_t)st.st_size;
}

static void patch_byte(size_t offset, unsigned char x)
{
	int fd = open(path, O_RDWR);
	unsigned char b;

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &b, 1, (off_t)offset), 1);
	b ^= x;
	assert_int_equal(pwrite(fd, &b, 1, (off_t)offset), 1);
	close(fd);
}

static int open_with(const char *pass, struct al_error *err)
{
	struct broker_vault_key k = KEY(pass);
	struct broker_vault *v = NULL;
	int r = broker_vault_open(path, &k, false, &v, err);

	broker_vault_free(v);
	return r;
}

static void test_vault_round_trip_keeps_values_hosts_and_times(void **state)
{
	struct broker_vault_key k = KEY("pass");
	struct broker_vault *v = NULL;
	const struct broker_vault_entry *e;
	struct al_error err = {0};

	(void)state;
	make_vault("pass");
	assert_int_equal(broker_vault_open(path, &k, false, &v, &err), 0);
	assert_int_equal(broker_vault_count(v), 2);
	assert_string_equal(broker_vault_entry(v, 0)->name, "anthropic"); /* name order */
	e = broker_vault_find(v, "github");
	assert_non_null(e);
	assert_int_equal(e->value->len, 10);
	assert_memory_equal(e->value->data, "ghp_secret", 10);
	assert_int_equal(e->n_hosts, 2);
	assert_string_equal(e->hosts[1], "*.example.com");
	assert_int_equal(e->created, 100);
	assert_int_equal(e->updated, 300);
	broker_vault_free(v);
}

static void test_vault_file_holds_no_plaintext(void **state)
{
	char *buf = NULL;
	size_t len = 0;

	(void)state;
	make_vault("pass");
	assert_int_equal(al_read_file_at(AT_FDCWD, path, 1 << 20, &buf, &len), 0);
	assert_null(memmem(buf, len, "ghp_secret", 10));
	assert_null(memmem(buf, len, "github", 6));
	free(buf);
}

static void test_vault_wrong_passphrase_is_told_apart(void **state)
{
	struct al_error err = {0};

	(void)state;
	make_vault("pass");
	assert_int_equal(open_with("wrong", &err), -EACCES);
	assert_non_null(strstr(err.msg, "wrong passphrase"));
}

static void test_vault_truncated_file_is_told_apart(void **state)
{
	struct al_error err = {0};

	(void)state;
	make_vault("pass");
	assert_int_equal(truncate(path, (off_t)file_size() - 7), 0);
	assert_int_equal(open_with("pass", &err), -EBADMSG);
	assert_non_null(strstr(err.msg, "truncated"));
	assert_int_equal(truncate(path, 20), 0);
	assert_int_equal(open_with("pass", &err), -EBADMSG);
	assert_non_null(strstr(err.msg, "truncated"));
}

static void test_vault_tampered_ciphertext_or_nonce_is_told_apart(void **state)
{
	struct al_error err = {0};

	(void)state;
	make_vault("pass");
	patch_byte(file_size() - 20, 0x01);
	assert_int_equal(open_with("pass", &err), -EBADMSG);
	assert_non_null(strstr(err.msg, "tampered"));
	assert_int_equal(unlink(path), 0);
	make_vault("pass");
	patch_byte(8 + 4 + 4 + 8 + 8 + 16 + 32 + 3, 0x80); /* a nonce byte */
	assert_int_equal(open_with("pass", &err), -EBADMSG);
	assert_non_null(strstr(err.msg, "tampered"));
}

static void test_vault_newer_format_is_refused_by_name(void **state)
{
	struct al_error err = {0};

	(void)state;
	make_vault("pass");
	patch_byte(8, 0x03); /* version 1 -> 2 */
	assert_int_equal(open_with("pass", &err), -EPROTONOSUPPORT);
	assert_non_null(strstr(err.msg, "newer"));
}

static void test_vault_other_file_is_not_a_vault(void **state)
{
	struct al_error err = {0};

	(void)state;
	{
		int fd = open(path, O_WRONLY | O_CREAT, 0600);

		assert_true(fd >= 0);
		assert_int_equal(write(fd, "hello world, not a vault at all", 31), 31);
		close(fd);
	}
	assert_int_equal(open_with("pass", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "not an airlock vault"));
}

static void test_vault_bad_open_changes_nothing(void **state)
{
	char *before = NULL, *after = NULL;
	size_t lb = 0, la = 0;
	struct al_error err = {0};

	(void)state;
	make_vault("pass");
	assert_int_equal(al_read_file_at(AT_FDCWD, path, 1 << 20, &before, &lb), 0);
	assert_int_equal(open_with("wrong", &err), -EACCES);
	assert_int_equal(al_read_file_at(AT_FDCWD, path, 1 << 20, &after, &la), 0);
	assert_int_equal(lb, la);
	assert_memory_equal(before, after, lb);
	free(before);
	free(after);
}

static void test_vault_key_file_vault_needs_the_key(void **state)
{
	unsigned char key[32] = {1, 2, 3};
	struct broker_vault_key k = {.key = key};
	struct broker_vault *v = NULL;
	struct al_error err = {0};

	(void)state;
	assert_int_equal(broker_vault_open(path, &k, true, &v, &err), 0);
	assert_int_equal(broker_vault_put(v, "a", "b", 1, 1), 0);
	assert_int_equal(broker_vault_save(v, path, &err), 0);
	v = broker_vault_free(v);
	assert_int_equal(open_with("pass", &err), -EACCES);
	assert_non_null(strstr(err.msg, "key file"));
	key[0] = 9;
	assert_int_equal(broker_vault_open(path, &k, false, &v, &err), -EACCES);
	assert_null(v);
}

static int add_entry(struct broker_vault *v, void *userdata, struct al_error *err)
{
	(void)err;
	return broker_vault_put(v, userdata, "v", 1, 1);
}

static void test_vault_concurrent_writers_lose_nothing(void **state)
{
	struct broker_vault_key k = KEY("pass");
	struct broker_vault *v = NULL;
	struct al_error err = {0};
	enum { WRITERS = 6, EACH = 5 };
	pid_t pids[WRITERS];

	(void)state;
	for (int w = 0; w < WRITERS; w++) {
		pids[w] = fork();
		assert_true(pids[w] >= 0);
		if (pids[w] == 0) {
			for (int i = 0; i < EACH; i++) {
				char name[32];

				(void)snprintf(name, sizeof(name), "w%d-%d", w, i);
				if (broker_vault_update(path, &k, add_entry, name, &err) < 0)
					_exit(1);
			}
			_exit(0);
		}
	}
	for (int w = 0; w < WRITERS; w++) {
		int st;

		assert_int_equal(waitpid(pids[w], &st, 0), pids[w]);
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	assert_int_equal(broker_vault_open(path, &k, false, &v, &err), 0);
	assert_int_equal(broker_vault_count(v), WRITERS * EACH);
	broker_vault_free(v);
}

static void test_vault_remove_and_unknown_names(void **state)
{
	struct broker_vault_key k = KEY("pass");
	struct broker_vault *v = NULL;
	struct al_error err = {0};

	(void)state;
	make_vault("pass");
	assert_int_equal(broker_vault_open(path, &k, false, &v, &err), 0);
	assert_int_equal(broker_vault_remove(v, "nope"), -ENOENT);
	assert_int_equal(broker_vault_bind(v, "nope", NULL, 0, 1), -ENOENT);
	assert_int_equal(broker_vault_remove(v, "github"), 0);
	assert_null(broker_vault_find(v, "github"));
	assert_int_equal(broker_vault_count(v), 1);
	broker_vault_free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_vault_round_trip_keeps_values_hosts_and_times,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_vault_file_holds_no_plaintext, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_vault_wrong_passphrase_is_told_apart, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_vault_truncated_file_is_told_apart, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_vault_tampered_ciphertext_or_nonce_is_told_apart,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_vault_newer_format_is_refused_by_name, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_vault_other_file_is_not_a_vault, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_vault_bad_open_changes_nothing, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_vault_key_file_vault_needs_the_key, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_vault_concurrent_writers_lose_nothing, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_vault_remove_and_unknown_names, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
