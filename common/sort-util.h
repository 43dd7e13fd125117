#pragma once

/* Arrays of records kept sorted by a name. */

#include <stdbool.h>
#include <stddef.h>

/* Binary search of the n records of size bytes at base, each with a `char *` at name_offset,
 * sorted by strcmp(): the index of name with *ret_found true, or where it would go. */
size_t al_sorted_find(const void *base, size_t n, size_t size, size_t name_offset, const char *name,
		      bool *ret_found);
