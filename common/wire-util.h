#pragma once

/* Reading the SSH wire format (RFC 4251 5) from bytes another party sent: a byte, a big-endian
 * uint32, and a string (a uint32 length, then that many bytes), each taken from the front of a
 * cursor that never runs past its end. The parts point into the bytes read. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct al_wire {
	const uint8_t *p;
	size_t len;
};

static inline bool al_wire_take_u8(struct al_wire *c, uint8_t *ret)
{
	if (c->len < 1)
		return false;
	*ret = c->p[0];
	c->p++;
	c->len--;
	return true;
}

static inline bool al_wire_take_u32(struct al_wire *c, uint32_t *ret)
{
	if (c->len < 4)
		return false;
	*ret = (uint32_t)c->p[0] << 24 | (uint32_t)c->p[1] << 16 | (uint32_t)c->p[2] << 8 | c->p[3];
	c->p += 4;
	c->len -= 4;
	return true;
}

static inline bool al_wire_take_string(struct al_wire *c, struct al_wire *ret)
{
	uint32_t n;

	if (!al_wire_take_u32(c, &n) || n > c->len)
		return false;
	*ret = (struct al_wire){c->p, n};
	c->p += n;
	c->len -= n;
	return true;
}

/* Whether w holds exactly the text. */
static inline bool al_wire_is(const struct al_wire *w, const char *text)
{
	return w->len == strlen(text) && memcmp(w->p, text, w->len) == 0;
}

static inline bool al_wire_eq(const struct al_wire *a, const struct al_wire *b)
{
	return a->len == b->len && (a->len == 0 || memcmp(a->p, b->p, a->len) == 0);
}

static inline void al_wire_put_u32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}
