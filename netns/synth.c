#define LOG_MODULE "netns"

/* Synthetic addresses for names (see netns-internal.h): an array by address and an
 * open-addressing hash table by name. */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "netns/netns-internal.h"

struct netns_synth {
	char **names;	  /* by index; index i is 198.18.0.0 + i, from 1 */
	uint32_t n;	  /* the last index given */
	uint32_t *table;  /* name hash -> index, 0 = empty */
	uint32_t buckets; /* a power of two, at least twice n */
};

int netns_synth_new(struct netns_synth **ret)
{
	struct netns_synth *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	*ret = s;
	return 0;
}

struct netns_synth *netns_synth_free(struct netns_synth *s)
{
	if (!s)
		return NULL;
	for (uint32_t i = 1; i <= s->n; i++)
		free(s->names[i]);
	free(s->names);
	free(s->table);
	free(s);
	return NULL;
}

/* FNV-1a: the names are the sandbox's, but a collision only costs a probe. */
static uint32_t hash(const char *name)
{
	uint32_t h = 2166136261u;

	for (; *name; name++)
		h = (h ^ (uint8_t)*name) * 16777619u;
	return h;
}

static uint32_t *slot(const struct netns_synth *s, const char *name)
{
	uint32_t mask = s->buckets - 1, i = hash(name) & mask;

	while (s->table[i] && strcmp(s->names[s->table[i]], name) != 0)
		i = (i + 1) & mask;
	return &s->table[i];
}

static int grow(struct netns_synth *s)
{
	uint32_t buckets = s->buckets ? s->buckets * 2 : 64, *old = s->table, old_n = s->buckets;
	char **names;

	names = reallocarray(s->names, buckets / 2 + 1, sizeof(*names));
	if (!names)
		return -ENOMEM;
	s->names = names;
	s->table = calloc(buckets, sizeof(*s->table));
	if (!s->table) {
		s->table = old;
		return -ENOMEM;
	}
	s->buckets = buckets;
	for (uint32_t i = 0; i < old_n; i++)
		if (old[i])
			*slot(s, s->names[old[i]]) = old[i];
	free(old);
	return 0;
}

static void index_to_addr(uint32_t i, uint8_t ret[4])
{
	ret[0] = 198;
	ret[1] = (uint8_t)(18 + (i >> 16));
	ret[2] = (uint8_t)(i >> 8);
	ret[3] = (uint8_t)i;
}

int netns_synth_addr(struct netns_synth *s, const char *name, uint8_t ret[4])
{
	uint32_t *sl;
	int r;

	if (s->buckets && *(sl = slot(s, name))) {
		index_to_addr(*sl, ret);
		return 0;
	}
	if (s->n >= NETNS_SYNTH_MAX)
		return -ENOSPC;
	if ((s->n + 1) * 2 > s->buckets) {
		r = grow(s);
		if (r < 0)
			return r;
	}
	s->names[s->n + 1] = strdup(name);
	if (!s->names[s->n + 1])
		return -ENOMEM;
	s->n++;
	*slot(s, name) = s->n;
	index_to_addr(s->n, ret);
	return 0;
}

const char *netns_synth_name(const struct netns_synth *s, const uint8_t addr[4])
{
	uint32_t i;

	if (!netns_synth_is_range(addr))
		return NULL;
	i = (uint32_t)(addr[1] - 18) << 16 | (uint32_t)addr[2] << 8 | addr[3];
	return i >= 1 && i <= s->n ? s->names[i] : NULL;
}

bool netns_synth_is_range(const uint8_t addr[4])
{
	return addr[0] == 198 && (addr[1] == 18 || addr[1] == 19);
}
