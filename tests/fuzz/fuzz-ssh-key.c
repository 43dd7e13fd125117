/* fuzz-ssh-key: `airlock secret put --ssh-key` reads a key file the user names, and the broker
 * reads the vault's SSH keys back (broker/ssh-key.c). The input is taken as a key file's text
 * (without a passphrase, so that a protected key stops before bcrypt_pbkdf's cost) and, raw, as
 * a stored key. Any answer but the documented errors is a bug; a key that imports is stored as
 * a key that parses to the same type and fingerprint; a stored key that parses is no protected
 * one. */

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "broker/broker-internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool documented(int r)
{
	return r == -EINVAL || r == -EBADMSG || r == -EPROTONOSUPPORT || r == -ENOKEY ||
	       r == -EACCES || r == -EFBIG || r == -ENOMEM;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct broker_secret *raw, *stored = NULL;
	struct broker_ssh_key k, again;
	int r;

	if (size > BROKER_SECRET_MAX)
		return 0;
	raw = broker_secret_new(size);
	if (!raw)
		return 0;
	memcpy(raw->data, data, size);
	r = broker_ssh_key_import(raw->data, raw->len, NULL, &k, &stored, NULL);
	if (r < 0 && !documented(r))
		__builtin_trap();
	if (r == 0) {
		if (k.encrypted || broker_ssh_key_parse(stored, &again, NULL) != 0 ||
		    strcmp(again.fingerprint, k.fingerprint) != 0 || again.type != k.type)
			__builtin_trap();
	}
	r = broker_ssh_key_parse(raw, &k, NULL);
	if ((r < 0 && !documented(r)) || (r == 0 && k.encrypted))
		__builtin_trap();
	broker_secret_free(stored);
	broker_secret_free(raw);
	return 0;
}
