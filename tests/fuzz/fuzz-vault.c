/* fuzz-vault: a vault file is read from disk, where anyone with write access to its folder may
 * have planted or cut it. The header and the decrypted entries are parsed from bytes; the first
 * half of the input goes to the decoder (with a key file's key, so no Argon2 cost is paid), the
 * whole to the entries parser. */

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "broker/broker-internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const unsigned char key[32] = {7};
	struct broker_vault_key k = {.key = key};
	struct broker_vault *v = NULL;
	struct al_error err = {0};

	if (broker_vault_decode("fuzz", data, size, &k, &v, &err) == 0)
		__builtin_trap(); /* it cannot authenticate without the key */
	if (broker_vault_new(&k, &v) < 0)
		return 0;
	if (broker_vault_parse_entries(v, data, size) == 0) {
		/* What parses is sorted, unique and bounded. */
		for (size_t i = 1; i < broker_vault_count(v); i++)
			if (strcmp(broker_vault_entry(v, i - 1)->name,
				   broker_vault_entry(v, i)->name) >= 0)
				__builtin_trap();
	}
	broker_vault_free(v);
	return 0;
}
