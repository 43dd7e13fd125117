#pragma once

/* Strict parsers for the human-friendly values of the policy and the command line.
 * All reject empty strings, signs, spaces, trailing garbage and overflow with -EINVAL/-ERANGE. */

#include <stdint.h>

/* "512Mi", "2Gi", "1G", "100k", "4096" -> bytes. Suffixes: k/K M G T (powers of 1000),
 * Ki Mi Gi Ti (powers of 1024). An optional trailing "B" is not accepted. Fractions ("1.5Gi")
 * are accepted when the result is a whole number of bytes. */
int al_parse_size(const char *s, uint64_t *ret_bytes);

/* "1.0", "2", "0.5", "500m" -> millicores (1000 = one CPU). At most 3 decimals; 0 is invalid. */
int al_parse_cpu(const char *s, uint64_t *ret_millicores);

/* "30s", "5m", "1h", "250ms", "1m30s" -> microseconds. A unit is required for every number;
 * units: us, ms, s, m, h, d. 0 is valid ("0s", or a lone "0" without a unit); callers for which
 * zero makes no sense refuse it themselves. */
int al_parse_duration(const char *s, uint64_t *ret_usec);

/* Formats for messages and canonical forms: "512Mi" style when exact, else bytes. */
int al_format_size(uint64_t bytes, char *buf, size_t size);
