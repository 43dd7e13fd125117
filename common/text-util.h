#pragma once

/* UTF-8 and base64: bytes that may or may not be text, on their way into JSON (json-c writes a
 * string's bytes as they are: a string that is not UTF-8 makes the JSON invalid). */

#include <stddef.h>

enum al_utf8 {
	AL_UTF8_WHOLE,	  /* all of it is text */
	AL_UTF8_CUT,	  /* text, then the start of a sequence more bytes may complete */
	AL_UTF8_NOT_TEXT, /* text, then a byte that is not */
};

/* Scans b's n bytes: *valid of them, from the start, are whole UTF-8 sequences (no overlong
 * form, surrogate, or code point beyond U+10FFFF). */
enum al_utf8 al_utf8_scan(const unsigned char *b, size_t n, size_t *valid);

/* Standard base64 with padding (malloc'd, NUL-terminated), or NULL. */
char *al_base64_encode(const unsigned char *b, size_t n);
/* The same into dst, which has room for 4 * ((n + 2) / 3) + 1 bytes: the length, NUL-terminated. */
size_t al_base64_encode_to(const unsigned char *b, size_t n, char *dst);
/* n bytes as 2n lower-case hex digits into out, NUL-terminated (room for 2n + 1). */
void al_hex_lower(const unsigned char *b, size_t n, char *out);
