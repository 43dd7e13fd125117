/* Arrays of records kept sorted by a name (see sort-util.h). */

#include <string.h>

#include "common/sort-util.h"

size_t al_sorted_find(const void *base, size_t n, size_t size, size_t name_offset, const char *name,
		      bool *ret_found)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const char *rec = (const char *)base + mid * size;
		int c = strcmp(*(char *const *)(const void *)(rec + name_offset), name);

		if (c == 0) {
			*ret_found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*ret_found = false;
	return lo;
}
