#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/macro.h"
#include "common/parse-util.h"

/* The largest number of fraction digits kept exactly: 10^19 still fits in a uint64_t. */
#define FRACTION_DIGITS_MAX 19

/* A non-negative decimal number "I[.F]" split into its parts: value = integer + fraction /
 * 10^digits, where trailing zeros of the fraction are dropped; written counts the fraction digits
 * as written. */
struct decimal {
	uint64_t integer;
	uint64_t fraction;
	unsigned digits;
	size_t written;
};

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static uint64_t pow10_u64(unsigned n)
{
	uint64_t v = 1;

	while (n-- > 0)
		v *= 10;
	return v;
}

/* Reads the digits at *p (at least one) and moves *p past them. -ERANGE on overflow. */
static int parse_digits(const char **p, uint64_t *ret)
{
	const char *s = *p;
	uint64_t v = 0;

	if (!is_digit(*s))
		return -EINVAL;
	for (; is_digit(*s); s++) {
		if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return -ERANGE;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*p = s;
	*ret = v;
	return 0;
}

/* Reads "I" or "I.F" at *p and moves *p past it. A dot needs a digit on each side. More than
 * FRACTION_DIGITS_MAX significant fraction digits is -EINVAL: no caller can use that precision. */
static int parse_decimal(const char **p, struct decimal *ret)
{
	struct decimal d = {};
	const char *s = *p;
	unsigned zeros = 0;
	int r;

	r = parse_digits(&s, &d.integer);
	if (r < 0)
		return r;
	if (*s == '.') {
		s++;
		if (!is_digit(*s))
			return -EINVAL;
		for (; is_digit(*s); s++, d.written++) {
			if (*s == '0') {
				/* A zero counts only once a non-zero digit follows it. */
				zeros++;
				continue;
			}
			if (d.digits + zeros + 1 > FRACTION_DIGITS_MAX)
				return -EINVAL;
			d.fraction = d.fraction * pow10_u64(zeros + 1) + (uint64_t)(*s - '0');
			d.digits += zeros + 1;
			zeros = 0;
		}
	}
	*p = s;
	*ret = d;
	return 0;
}

int al_parse_size(const char *s, uint64_t *ret_bytes)
{
	static const struct {
		const char *suffix;
		uint64_t factor;
	} units[] = {
	    {"", 1},
	    {"k", UINT64_C(1000)},
	    {"K", UINT64_C(1000)},
	    {"M", UINT64_C(1000000)},
	    {"G", UINT64_C(1000000000)},
	    {"T", UINT64_C(1000000000000)},
	    {"Ki", UINT64_C(1) << 10},
	    {"Mi", UINT64_C(1) << 20},
	    {"Gi", UINT64_C(1) << 30},
	    {"Ti", UINT64_C(1) << 40},
	};
	unsigned __int128 part, whole;
	uint64_t factor = 0, scale;
	struct decimal d;
	int r;

	r = parse_decimal(&s, &d);
	if (r < 0)
		return r;
	for (size_t i = 0; i < ELEMENTSOF(units); i++)
		if (streq(s, units[i].suffix)) {
			factor = units[i].factor;
			break;
		}
	if (factor == 0)
		return -EINVAL;

	scale = pow10_u64(d.digits);
	part = (unsigned __int128)d.fraction * factor;
	if (part % scale != 0)
		return -EINVAL; /* not a whole number of bytes */
	whole = (unsigned __int128)d.integer * factor + part / scale;
	if (whole > UINT64_MAX)
		return -ERANGE;
	*ret_bytes = (uint64_t)whole;
	return 0;
}

int al_parse_cpu(const char *s, uint64_t *ret_millicores)
{
	unsigned __int128 v;
	struct decimal d;
	bool milli;
	int r;

	r = parse_decimal(&s, &d);
	if (r < 0)
		return r;
	/* "500m" takes whole millicores only; "1.5" at most three decimals as written ("1.0000" is
	 * refused too), so that what is accepted is exactly what the user sees. */
	milli = streq(s, "m");
	if (!milli && *s != '\0')
		return -EINVAL;
	if (d.written > (milli ? 0 : 3))
		return -EINVAL;
	v = milli ? d.integer
		  : (unsigned __int128)d.integer * 1000 + d.fraction * pow10_u64(3 - d.digits);
	if (v > UINT64_MAX)
		return -ERANGE;
	if (v == 0)
		return -EINVAL;
	*ret_millicores = (uint64_t)v;
	return 0;
}

int al_parse_duration(const char *s, uint64_t *ret_usec)
{
	/* Each unit may appear once, from the largest down ("1m30s"), which catches "1m1m" typos.
	 */
	static const struct {
		const char *suffix;
		uint64_t usec;
	} units[] = {
	    {"d", UINT64_C(86400000000)}, {"h", UINT64_C(3600000000)}, {"m", UINT64_C(60000000)},
	    {"s", UINT64_C(1000000)},	  {"ms", UINT64_C(1000)},      {"us", UINT64_C(1)},
	};
	size_t next = 0; /* index of the largest unit still allowed */
	uint64_t total = 0;

	if (*s == '\0')
		return -EINVAL;
	/* Zero is zero in every unit: a lone "0" needs none ("--ttl 0" for never). */
	if (streq(s, "0")) {
		*ret_usec = 0;
		return 0;
	}
	while (*s != '\0') {
		uint64_t n, factor = 0;
		size_t l = 0;
		int r;

		r = parse_digits(&s, &n);
		if (r < 0)
			return r;
		while (s[l] >= 'a' && s[l] <= 'z')
			l++;
		for (size_t i = next; i < ELEMENTSOF(units); i++)
			if (strlen(units[i].suffix) == l && strncmp(s, units[i].suffix, l) == 0) {
				factor = units[i].usec;
				next = i + 1;
				break;
			}
		if (factor == 0)
			return -EINVAL; /* no unit, an unknown one, or one out of order */
		s += l;
		if (n > UINT64_MAX / factor || n * factor > UINT64_MAX - total)
			return -ERANGE;
		total += n * factor;
	}
	*ret_usec = total;
	return 0;
}

int al_format_size(uint64_t bytes, char *buf, size_t size)
{
	static const struct {
		const char *suffix;
		uint64_t factor;
	} units[] = {
	    {"Ti", UINT64_C(1) << 40}, {"Gi", UINT64_C(1) << 30},      {"Mi", UINT64_C(1) << 20},
	    {"Ki", UINT64_C(1) << 10}, {"T", UINT64_C(1000000000000)}, {"G", UINT64_C(1000000000)},
	    {"M", UINT64_C(1000000)},  {"k", UINT64_C(1000)},
	};
	const char *suffix = "";
	uint64_t v = bytes;
	int n;

	for (size_t i = 0; bytes > 0 && i < ELEMENTSOF(units); i++)
		if (bytes % units[i].factor == 0) {
			v = bytes / units[i].factor;
			suffix = units[i].suffix;
			break;
		}
	n = snprintf(buf, size, "%" PRIu64 "%s", v, suffix);
	if (n < 0)
		return -EINVAL;
	if ((size_t)n >= size)
		return -ENOBUFS;
	return 0;
}
