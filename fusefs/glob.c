/* The pattern language of workspace.read/write/deny (see fusefs-internal.h).
 *
 * The path comes from the sandbox (up to PATH_MAX bytes, some two thousand components), so
 * matching never recurses and never allocates. Both levels use the classic two-pointer wildcard
 * match: on a mismatch, go back to the last star and let it take one more element. Only the last
 * star needs remembering, because a later star can take anything an earlier one could have. Within
 * a component the elements are characters and the star is '*'; across the path they are whole
 * components and the star is "**". The cost is at most the product of the two lengths.
 *
 * The _fold forms let an ASCII letter match itself in the other case too: the built-in lists
 * (rules.c) use them, because on a file system that folds case (a casefold ext4 folder, vfat,
 * exfat, SMB, WSL's drives) ".GIT/hooks" is ".git/hooks". They also take the few other letters
 * such a file system folds to ASCII ones as those (ascii_folds[]): a long s is an s there. */

#include <string.h>

#include "fusefs/fusefs-internal.h"

/* What Unicode's full case folding (Linux's casefold: ext4, f2fs) or an upcase table (NTFS,
 * exFAT: the long s is S) makes ASCII letters of, in UTF-8: ".ba\u017fhrc" is .bashrc there and
 * ".git/con\ufb01g" git's config (red team). Every other non-ASCII letter folds to one that is not
 * ASCII, so it cannot spell a name the built-in lists hold. Each is as long as its ASCII or
 * longer. */
static const struct {
	const char *utf8;
	const char *ascii;
} ascii_folds[] = {
    {"\xc3\x9f", "ss"},	    /* U+00DF sharp s */
    {"\xc5\xbf", "s"},	    /* U+017F long s */
    {"\xe1\xba\x9e", "ss"}, /* U+1E9E capital sharp s */
    {"\xe2\x84\xaa", "k"},  /* U+212A Kelvin sign */
    {"\xef\xac\x80", "ff"}, /* U+FB00..U+FB06: the Latin ligatures */
    {"\xef\xac\x81", "fi"},  {"\xef\xac\x82", "fl"}, {"\xef\xac\x83", "ffi"},
    {"\xef\xac\x84", "ffl"}, {"\xef\xac\x85", "st"}, {"\xef\xac\x86", "st"},
};

/* The longest path or pattern folded into a buffer (a path is at most FUSEFS_PATH_MAX, a pattern
 * a policy string and "/\**"); a longer one is matched as it is, ASCII case folded only. */
#define FOLD_MAX (2 * FUSEFS_PATH_MAX)

static bool is_ascii(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s >= 0x80)
			return false;
	return true;
}

/* s with ASCII letters lower-cased and ascii_folds[] made ASCII, in buf (never longer than s);
 * s itself when it has no byte above 0x7f or does not fit. */
static const char *fold_text(const char *s, char *buf, size_t size)
{
	size_t n = 0, len = strlen(s);

	if (len >= size || is_ascii(s))
		return s;
	while (*s) {
		size_t i;

		for (i = 0; i < ELEMENTSOF(ascii_folds); i++)
			if (strncmp(s, ascii_folds[i].utf8, strlen(ascii_folds[i].utf8)) == 0)
				break;
		if (i < ELEMENTSOF(ascii_folds)) {
			memcpy(buf + n, ascii_folds[i].ascii, strlen(ascii_folds[i].ascii));
			n += strlen(ascii_folds[i].ascii);
			s += strlen(ascii_folds[i].utf8);
		} else {
			buf[n++] = *s >= 'A' && *s <= 'Z' ? (char)(*s - 'A' + 'a') : *s;
			s++;
		}
	}
	buf[n] = '\0';
	return buf;
}

/* The length of the component at s, which ends at '/' or at the end of the string. A loop, not
 * strcspn(): components are short and this runs for every step of a match. */
static size_t component_len(const char *s)
{
	size_t l = 0;

	while (s[l] != '\0' && s[l] != '/')
		l++;
	return l;
}

/* The start of the component after the one at s (of length len), or the end of the string. */
static const char *component_next(const char *s, size_t len)
{
	return s[len] == '/' ? s + len + 1 : s + len;
}

static bool component_is_double_star(const char *p, size_t len)
{
	return len == 2 && p[0] == '*' && p[1] == '*';
}

static char fold_char(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

static bool char_match(char p, char s, bool fold)
{
	return p == '?' || p == s || (fold && fold_char(p) == fold_char(s));
}

/* Does the component pattern p[0, pn) match the name s[0, sn)? */
static bool component_match(const char *p, size_t pn, const char *s, size_t sn, bool fold)
{
	size_t i = 0, j = 0, star_i = 0, star_j = 0;
	bool star = false;

	while (j < sn) {
		if (i < pn && p[i] == '*') {
			star = true;
			star_i = ++i;
			star_j = j;
		} else if (i < pn && char_match(p[i], s[j], fold)) {
			i++;
			j++;
		} else if (star) {
			/* The last '*' takes one more character. */
			i = star_i;
			j = ++star_j;
		} else {
			return false;
		}
	}
	while (i < pn && p[i] == '*')
		i++;
	return i == pn;
}

static bool glob_match(const char *pattern, const char *path, bool fold)
{
	const char *p = pattern, *s = path, *star_p = NULL, *star_s = NULL;

	while (*s != '\0') {
		size_t pn = component_len(p), sn = component_len(s);

		if (*p != '\0' && component_is_double_star(p, pn)) {
			/* "**" takes no component for now; star_s remembers where it stopped. */
			p = star_p = component_next(p, pn);
			star_s = s;
		} else if (*p != '\0' && component_match(p, pn, s, sn, fold)) {
			p = component_next(p, pn);
			s = component_next(s, sn);
		} else if (star_p) {
			/* The last "**" takes one more component. star_s is at or before s, so it
			 * is not at the end of the path. */
			star_s = component_next(star_s, component_len(star_s));
			s = star_s;
			p = star_p;
		} else {
			return false;
		}
	}
	/* The path is used up: what is left of the pattern must be able to match nothing. */
	while (*p != '\0' && component_is_double_star(p, component_len(p)))
		p = component_next(p, 2);
	return *p == '\0';
}

/* The pattern matches some dir/X exactly when its components up to the first "**" match dir's
 * components one by one and the pattern does not run out first: once a "**" is reached it can take
 * the rest of dir and, with whatever follows it, some non-empty X; and if dir runs out first, the
 * rest of the pattern (non-empty, with no empty component) matches some non-empty X. */
static bool glob_match_below(const char *pattern, const char *dir, bool fold)
{
	const char *p = pattern, *s = dir;

	while (*s != '\0') {
		size_t pn = component_len(p), sn = component_len(s);

		if (*p == '\0')
			return false; /* it matches dir or one of its ancestors at most */
		if (component_is_double_star(p, pn))
			return true;
		if (!component_match(p, pn, s, sn, fold))
			return false;
		p = component_next(p, pn);
		s = component_next(s, sn);
	}
	return *p != '\0';
}

bool fusefs_glob_match(const char *pattern, const char *path)
{
	return glob_match(pattern, path, false);
}

bool fusefs_glob_match_fold(const char *pattern, const char *path)
{
	char p[FOLD_MAX], s[FOLD_MAX];

	return glob_match(fold_text(pattern, p, sizeof(p)), fold_text(path, s, sizeof(s)), true);
}

bool fusefs_glob_match_below(const char *pattern, const char *dir)
{
	return glob_match_below(pattern, dir, false);
}

bool fusefs_glob_match_below_fold(const char *pattern, const char *dir)
{
	char p[FOLD_MAX], s[FOLD_MAX];

	return glob_match_below(fold_text(pattern, p, sizeof(p)), fold_text(dir, s, sizeof(s)),
				true);
}
