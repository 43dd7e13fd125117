/* Byte buffers between the proxy's sockets (netns-internal.h). */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netns/netns-internal.h"

/* Room for n more bytes at the end: moves the waiting bytes to the front first, then grows. */
static int reserve(struct netns_buf *b, size_t n, size_t max)
{
	size_t len = netns_buf_len(b), size;
	uint8_t *p;

	if (n > max || len > max - n)
		return -EMSGSIZE;
	if (b->size - b->end >= n)
		return 0;
	if (b->start > 0) {
		memmove(b->data, b->data + b->start, len);
		explicit_bzero(b->data + len, b->end - len);
		b->start = 0;
		b->end = len;
		if (b->size - b->end >= n)
			return 0;
	}
	size = MAX(b->size * 2, (size_t)4096);
	while (size - len < n)
		size *= 2;
	/* Not realloc(): the old storage may hold a credential value and must be wiped. */
	p = malloc(size);
	if (!p)
		return -ENOMEM;
	if (b->data) {
		memcpy(p, b->data, len);
		explicit_bzero(b->data, b->size);
		free(b->data);
	}
	b->data = p;
	b->size = size;
	return 0;
}

int netns_buf_append(struct netns_buf *b, const void *p, size_t n, size_t max)
{
	int r;

	if (n == 0)
		return 0;
	r = reserve(b, n, max);
	if (r < 0)
		return r;
	memcpy(b->data + b->end, p, n);
	b->end += n;
	return 0;
}

int netns_buf_printf(struct netns_buf *b, size_t max, const char *fmt, ...)
{
	va_list ap;
	int n, r;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	r = reserve(b, (size_t)n + 1, max + 1);
	if (r < 0)
		return r;
	va_start(ap, fmt);
	(void)vsnprintf((char *)b->data + b->end, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->end += (size_t)n;
	return 0;
}

void netns_buf_consume(struct netns_buf *b, size_t n)
{
	n = MIN(n, netns_buf_len(b));
	explicit_bzero(b->data + b->start, n);
	b->start += n;
	if (b->start == b->end)
		b->start = b->end = 0;
}

void netns_buf_done(struct netns_buf *b)
{
	if (b->data) {
		explicit_bzero(b->data, b->size);
		free(b->data);
	}
	*b = (struct netns_buf){0};
}
