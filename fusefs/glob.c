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
 * exfat, SMB, WSL's drives) ".GIT/hooks" is ".git/hooks". */

#include "fusefs/fusefs-internal.h"

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
	return glob_match(pattern, path, true);
}

bool fusefs_glob_match_below(const char *pattern, const char *dir)
{
	return glob_match_below(pattern, dir, false);
}

bool fusefs_glob_match_below_fold(const char *pattern, const char *dir)
{
	return glob_match_below(pattern, dir, true);
}
