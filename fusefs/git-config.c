/* The paths a git config file makes the host's git run or read: core.hooksPath (a folder of
 * hooks: husky, lefthook and pre-commit point git there) and include.path / includeIf.*.path
 * (more config, which may name commands). The workspace's .git/config is write-protected, but
 * these may name files in the workspace that are not; fusefs_rules_protect_git() protects them
 * too. The syntax is git's (git-config(1)): sections "[name]", "[name \"sub\"]" and the old
 * "[name.sub]", case-insensitive section and key names, values with double quotes, the escapes
 * \" \\ \n \t \b, a backslash at the end of a line going on to the next, and # or ; comments
 * outside quotes. */

#include <ctype.h>
#include <string.h>

#include "fusefs/fusefs-internal.h"

struct cursor {
	const char *p, *end;
};

static bool at_end(const struct cursor *c)
{
	return c->p >= c->end;
}

static void skip_blanks(struct cursor *c)
{
	while (!at_end(c) && (*c->p == ' ' || *c->p == '\t' || *c->p == '\r'))
		c->p++;
}

static void skip_line(struct cursor *c)
{
	const char *nl = memchr(c->p, '\n', (size_t)(c->end - c->p));

	c->p = nl ? nl + 1 : c->end;
}

/* A name of letters, digits, '-' and '.', lower-cased into buf (cut at size - 1). */
static void read_name(struct cursor *c, char *buf, size_t size)
{
	size_t n = 0;

	while (!at_end(c) && (isalnum((unsigned char)*c->p) || *c->p == '-' || *c->p == '.')) {
		if (n + 1 < size)
			buf[n++] = (char)tolower((unsigned char)*c->p);
		c->p++;
	}
	buf[n] = '\0';
}

/* A section header, c at the '['. Sets section to "name" (the subsection is dropped). Returns
 * false when it is malformed (git refuses the whole file then; here the line is skipped). */
static bool read_section(struct cursor *c, char *section, size_t size)
{
	char *dot;

	c->p++;
	skip_blanks(c);
	read_name(c, section, size);
	dot = strchr(section, '.');
	if (dot)
		*dot = '\0'; /* [name.sub] */
	skip_blanks(c);
	if (!at_end(c) && *c->p == '"') {
		for (c->p++; !at_end(c) && *c->p != '"' && *c->p != '\n'; c->p++)
			if (*c->p == '\\' && c->p + 1 < c->end)
				c->p++;
		if (at_end(c) || *c->p != '"')
			return false;
		c->p++;
	}
	if (at_end(c) || *c->p != ']')
		return false;
	c->p++;
	return section[0] != '\0';
}

/* A value after '=', into buf (NUL-terminated); false when it does not fit or a quote is left
 * open. Unquoted trailing blanks are dropped, as git drops them. */
static bool read_value(struct cursor *c, char *buf, size_t size)
{
	size_t n = 0, keep = 0;
	bool quoted = false;

	skip_blanks(c);
	for (; !at_end(c); c->p++) {
		char ch = *c->p;

		if (ch == '\n' || (!quoted && (ch == '#' || ch == ';')))
			break;
		if (ch == '"') {
			quoted = !quoted;
			keep = n;
			continue;
		}
		if (ch == '\\') {
			if (c->p + 1 >= c->end)
				return false;
			ch = *++c->p;
			if (ch == '\n')
				continue; /* the value goes on on the next line */
			ch = ch == 'n' ? '\n' : ch == 't' ? '\t' : ch == 'b' ? '\b' : ch;
			if (n + 1 >= size)
				return false;
			buf[n++] = ch;
			keep = n;
			continue;
		}
		if (n + 1 >= size)
			return false;
		buf[n++] = ch;
		if (quoted || (ch != ' ' && ch != '\t' && ch != '\r'))
			keep = n;
	}
	if (quoted)
		return false;
	buf[keep] = '\0';
	return true;
}

int fusefs_git_config_paths(const char *text, size_t len, fusefs_git_path_fn fn, void *userdata)
{
	struct cursor c = {.p = text, .end = text + len};
	char section[64] = "", key[64], value[FUSEFS_PATH_MAX];
	int r;

	while (!at_end(&c)) {
		skip_blanks(&c);
		if (!at_end(&c) && *c.p == '[') {
			if (!read_section(&c, section, sizeof(section))) {
				section[0] = '\0';
				skip_line(&c);
				continue;
			}
			skip_blanks(&c); /* "[core] hooksPath = x" on one line */
		}
		if (at_end(&c) || !isalpha((unsigned char)*c.p)) {
			skip_line(&c);
			continue;
		}
		read_name(&c, key, sizeof(key));
		skip_blanks(&c);
		if (at_end(&c) || *c.p != '=') {
			skip_line(&c); /* a key without a value is a boolean */
			continue;
		}
		c.p++;
		if (!read_value(&c, value, sizeof(value))) {
			skip_line(&c);
			continue;
		}
		skip_line(&c);
		if (streq(section, "core") && streq(key, "hookspath"))
			r = fn(FUSEFS_GIT_HOOKS, value, userdata);
		else if ((streq(section, "include") || streq(section, "includeif")) &&
			 streq(key, "path"))
			r = fn(FUSEFS_GIT_INCLUDE, value, userdata);
		else
			continue;
		if (r < 0)
			return r;
	}
	return 0;
}
