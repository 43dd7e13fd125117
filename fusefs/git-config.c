/* The paths a git config file makes the host's git run or read: core.hooksPath (a folder of
 * hooks: husky, lefthook and pre-commit point git there) and include.path / includeIf.*.path
 * (more config, which may name commands). The workspace's .git/config is write-protected, but
 * these may name files in the workspace that are not; fusefs_rules_protect_git() protects them
 * too. The syntax is git's (git-config(1)): sections "[name]", "[name \"sub\"]" and the old
 * "[name.sub]", case-insensitive section and key names, values with double quotes, the escapes
 * \" \\ \n \t \b, a backslash at the end of a line going on to the next, and # or ; comments
 * outside quotes. */

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

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

/* ---- what a git file the sandbox writes may say (fusefs_git_check()) ----
 * A second reader, strict where the one above is lenient: it follows git's own parser
 * (config.c: git_parse_source(), get_base_var(), get_value(), parse_value()) and refuses a whole
 * file it cannot read the way git would. Git refuses such a file too, so refusing it costs
 * nothing but tells the writer at once. */

#define GIT_CHECK_VAR_MAX 256

static bool is_key_char(char c)
{
	return isalnum((unsigned char)c) || c == '-';
}

static bool is_git_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* git's get_next_char(): "\r\n" reads as '\n', and the end of the text as '\n'. */
static char next_char(struct cursor *c, bool *eof)
{
	char ch;

	if (at_end(c)) {
		*eof = true;
		return '\n';
	}
	ch = *c->p++;
	if (ch == '\r' && !at_end(c) && *c->p == '\n')
		ch = *c->p++;
	return ch;
}

static bool var_add(char *var, size_t *n, char ch)
{
	if (*n + 1 >= GIT_CHECK_VAR_MAX)
		return false;
	var[(*n)++] = ch;
	var[*n] = '\0';
	return true;
}

/* After '[': the section into var ("name" or "name.sub"); false when git would refuse it. */
static bool check_section(struct cursor *c, char *var, size_t *n)
{
	bool eof = false;
	char ch;

	*n = 0;
	var[0] = '\0';
	for (;;) {
		ch = next_char(c, &eof);
		if (eof)
			return false;
		if (ch == ']')
			return *n > 0;
		if (is_git_space(ch))
			break;
		if ((!is_key_char(ch) && ch != '.') ||
		    !var_add(var, n, (char)tolower((unsigned char)ch)))
			return false;
	}
	/* [name "sub"]: blanks, a quoted subsection kept as written, then ']' */
	while (is_git_space(ch)) {
		if (ch == '\n')
			return false;
		ch = next_char(c, &eof);
	}
	if (ch != '"' || *n == 0 || !var_add(var, n, '.'))
		return false;
	for (;;) {
		ch = next_char(c, &eof);
		if (ch == '\n')
			return false;
		if (ch == '"')
			break;
		if (ch == '\\') {
			ch = next_char(c, &eof);
			if (ch == '\n')
				return false;
		}
		if (!var_add(var, n, ch))
			return false;
	}
	return next_char(c, &eof) == ']';
}

/* git's parse_value(), into buf (cut, then refused, past size); false when git would refuse. */
static bool check_value(struct cursor *c, char *buf, size_t size)
{
	size_t n = 0, trim = 0;
	bool quote = false, comment = false, eof = false;
	char ch;

	for (;;) {
		ch = next_char(c, &eof);
		if (ch == '\n') {
			if (quote)
				return false;
			if (trim)
				n = trim;
			buf[n] = '\0';
			return true;
		}
		if (comment)
			continue;
		if (is_git_space(ch) && !quote) {
			if (!trim)
				trim = n;
			if (n > 0) {
				if (n + 1 >= size)
					return false;
				buf[n++] = ch;
			}
			continue;
		}
		if (!quote && (ch == ';' || ch == '#')) {
			comment = true;
			continue;
		}
		trim = 0;
		if (ch == '\\') {
			ch = next_char(c, &eof);
			if (eof)
				return false;
			if (ch == '\n')
				continue;
			if (ch == 't')
				ch = '\t';
			else if (ch == 'b')
				ch = '\b';
			else if (ch == 'n')
				ch = '\n';
			else if (ch != '\\' && ch != '"')
				return false;
		} else if (ch == '"') {
			quote = !quote;
			continue;
		}
		if (n + 1 >= size)
			return false;
		buf[n++] = ch;
	}
}

enum value_rule {
	VALUE_ANY,
	VALUE_URL,	/* no remote helper ("name::address"), no leading '-' */
	VALUE_UPDATE,	/* submodule.*.update: a mode git runs nothing for */
	VALUE_WORKTREE, /* core.worktree: a submodule's work tree (git-config.c) */
	VALUE_STRATEGY, /* a merge strategy git has built in */
};

/* Settings that make git run nothing of the file's and lead it nowhere outside the workspace.
 * "*" stands for any subsection (which must be there); a name without it takes none. */
static const struct {
	const char *name;
	enum value_rule rule;
} git_allowed[] = {
    {"core.repositoryformatversion"},
    {"core.filemode"},
    {"core.bare"},
    {"core.logallrefupdates"},
    {"core.ignorecase"},
    {"core.precomposeunicode"},
    {"core.autocrlf"},
    {"core.eol"},
    {"core.safecrlf"},
    {"core.symlinks"},
    {"core.worktree", VALUE_WORKTREE},
    {"core.quotepath"},
    {"core.abbrev"},
    {"core.compression"},
    {"core.loosecompression"},
    {"core.bigfilethreshold"},
    {"core.untrackedcache"},
    {"core.splitindex"},
    {"core.checkstat"},
    {"core.trustctime"},
    {"core.sparsecheckout"},
    {"core.sparsecheckoutcone"},
    {"core.protecthfs"},
    {"core.protectntfs"},
    {"core.warnambiguousrefs"},
    {"core.multipackindex"},
    {"extensions.objectformat"},
    {"extensions.worktreeconfig"},
    {"extensions.preciousobjects"},
    {"extensions.noop"},
    {"remote.*.url", VALUE_URL},
    {"remote.*.pushurl", VALUE_URL},
    {"remote.*.fetch"},
    {"remote.*.push"},
    {"remote.*.tagopt"},
    {"remote.*.mirror"},
    {"remote.*.prune"},
    {"remote.*.prunetags"},
    {"remote.*.skipdefaultupdate"},
    {"remote.*.skipfetchall"},
    {"branch.*.remote"},
    {"branch.*.pushremote"},
    {"branch.*.merge"},
    {"branch.*.rebase"},
    {"branch.*.description"},
    {"user.name"},
    {"user.email"},
    {"author.name"},
    {"author.email"},
    {"committer.name"},
    {"committer.email"},
    {"submodule.*.url", VALUE_URL},
    {"submodule.*.path"},
    {"submodule.*.active"},
    {"submodule.*.branch"},
    {"submodule.*.shallow"},
    {"submodule.*.update", VALUE_UPDATE},
    {"submodule.*.ignore"},
    {"submodule.*.fetchrecursesubmodules"},
    {"submodule.active"},
    {"submodule.recurse"},
    {"submodule.fetchjobs"},
    {"init.defaultbranch"},
    {"pull.rebase"},
    {"pull.ff"},
    {"push.default"},
    {"push.autosetupremote"},
    {"fetch.prune"},
    {"fetch.recursesubmodules"},
    {"merge.ff"},
    {"merge.conflictstyle"},
    {"rebase.autosquash"},
    {"rebase.autostash"},
    {"rebase.updaterefs"},
    {"gc.auto"},
    {"gc.autodetach"},
    {"gc.autopacklimit"},
    {"gc.pruneexpire"},
    {"gc.reflogexpire"},
    {"gc.reflogexpireunreachable"},
    {"gc.worktreepruneexpire"},
    {"index.version"},
    {"receive.denycurrentbranch"},
    /* A sequencer's own options (sequencer/opts), as cherry-pick and revert write them. */
    {"options.no-commit"},
    {"options.edit"},
    {"options.allow-empty"},
    {"options.allow-empty-message"},
    {"options.drop-redundant-commits"},
    {"options.keep-redundant-commits"},
    {"options.signoff"},
    {"options.record-origin"},
    {"options.allow-ff"},
    {"options.mainline"},
    {"options.strategy", VALUE_STRATEGY},
    {"options.strategy-option"},
    {"options.allow-rerere-auto"},
    {"options.default-msg-cleanup"},
};

static const char *const git_strategies[] = {"ort",	"recursive", "resolve",
					     "octopus", "ours",	     "subtree"};

/* Does the allowed name a match var, whose section is lower-case and subsection as written? */
static bool var_matches(const char *a, const char *var)
{
	const char *star = strchr(a, '*'), *var_key = strrchr(var, '.');
	size_t sect = star ? (size_t)(star - a) : 0;

	if (!star)
		return strcasecmp(a, var) == 0;
	/* "section.*.key": var is "section." SUB ".key" with a non-empty SUB */
	return var_key && strncmp(a, var, sect) == 0 && var_key > var + sect &&
	       streq(star + 1, var_key);
}

/* A path the host's git reads, relative to dir or absolute (under root or mount), made
 * workspace-relative into buf: only ".." that climb from dir itself (a real folder: no link on
 * its way) and none above the root. False when it is not such a path. */
static bool git_check_path(const struct fusefs_git_where *where, const char *value, char *buf,
			   size_t size)
{
	const char *rest = NULL;
	size_t n = 0;
	bool named = false;

	if (value[0] == '\0')
		return false;
	if (value[0] == '/') {
		if (where->mount)
			rest = startswith(value, where->mount);
		if ((!rest || (rest[0] != '/' && rest[0] != '\0')) && where->root)
			rest = startswith(value, where->root);
		if (!rest || (rest[0] != '/' && rest[0] != '\0'))
			return false;
		buf[0] = '\0';
	} else {
		rest = value;
		if (strlen(where->dir) + 1 > size)
			return false;
		n = strlen(where->dir);
		memcpy(buf, where->dir, n + 1);
	}
	for (const char *s = rest; *s;) {
		size_t l = strcspn(s, "/");

		if (l == 0 || (l == 1 && s[0] == '.')) {
			/* "//" or "." */
		} else if (l == 2 && s[0] == '.' && s[1] == '.') {
			if (named || n == 0 || value[0] == '/')
				return false;
			while (n > 0 && buf[--n] != '/')
				;
			buf[n] = '\0';
		} else {
			if (n + 1 + l + 1 > size)
				return false;
			if (n > 0)
				buf[n++] = '/';
			memcpy(buf + n, s, l);
			n += l;
			buf[n] = '\0';
			named = true;
		}
		s += l;
		s += *s == '/';
	}
	return true;
}

/* Does the workspace-relative path have a ".git" component? All below one is checked alike. */
/* Is the component s (l bytes) a git folder's name: ".git", or a bare repository's "NAME.git"
 * (case-insensitive: a folder on a casefold file system answers to any spelling)? */
static bool git_folder_name(const char *s, size_t l)
{
	return l >= 4 && strncasecmp(s + l - 4, ".git", 4) == 0;
}

bool fusefs_rules_in_git(const char *path)
{
	for (const char *s = path; *s;) {
		size_t l = strcspn(s, "/");

		if (git_folder_name(s, l))
			return true;
		s += l;
		s += *s == '/';
	}
	return false;
}

static bool value_is_allowed(enum value_rule rule, const char *value,
			     const struct fusefs_git_where *where)
{
	char path[FUSEFS_PATH_MAX];
	size_t l;

	switch (rule) {
	case VALUE_ANY:
		return true;
	case VALUE_URL:
		/* git's transport_get(): letters, digits, '+', '-', '.' then "::" name a helper */
		l = isalpha((unsigned char)value[0]) ? strspn(value, "abcdefghijklmnopqrstuvwxyz"
								     "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
								     "0123456789+-.")
						     : 0;
		return value[0] != '-' && !(l > 0 && startswith(value + l, "::"));
	case VALUE_UPDATE:
		return streq(value, "checkout") || streq(value, "rebase") ||
		       streq(value, "merge") || streq(value, "none");
	case VALUE_WORKTREE:
		/* git writes it only in a submodule's git folder (.git/modules/NAME/config), as a
		 * relative path to the submodule's folder. Host git checks files out there: it must
		 * be a folder of the workspace that is no git folder and lies in none, or git would
		 * write hooks (found by review: core.worktree = hooks). Links on its way are
		 * checked where they are made (fusefs_rules_may_symlink()). */
		return strstr(where->dir, "/modules/") && value[0] != '/' &&
		       git_check_path(where, value, path, sizeof(path)) &&
		       !fusefs_rules_in_git(path);
	case VALUE_STRATEGY:
		for (size_t i = 0; i < ELEMENTSOF(git_strategies); i++)
			if (streq(value, git_strategies[i]))
				return true;
		return false;
	}
	return false;
}

static int refuse(char *why, size_t size, const char *what)
{
	(void)snprintf(why, size, "%s", what);
	return -EACCES;
}

static int check_config(const char *text, size_t len, const struct fusefs_git_where *where,
			char *why, size_t size)
{
	struct cursor c = {.p = text, .end = text + len};
	char var[GIT_CHECK_VAR_MAX] = "", value[FUSEFS_PATH_MAX];
	size_t base = 0, n;
	bool comment = false, eof = false, allowed;
	char ch;

	if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
		c.p += 3;
	for (;;) {
		ch = next_char(&c, &eof);
		if (ch == '\n') {
			if (eof)
				return 0;
			comment = false;
			continue;
		}
		if (comment || is_git_space(ch))
			continue;
		if (ch == '#' || ch == ';') {
			comment = true;
			continue;
		}
		if (ch == '[') {
			if (!check_section(&c, var, &base) || !var_add(var, &base, '.'))
				return refuse(why, size, "a malformed section");
			continue;
		}
		if (!isalpha((unsigned char)ch))
			return refuse(why, size, "a malformed line");
		n = base;
		var[n] = '\0';
		if (!var_add(var, &n, (char)tolower((unsigned char)ch)))
			return refuse(why, size, "a name too long");
		while (!at_end(&c) && is_key_char(*c.p))
			if (!var_add(var, &n, (char)tolower((unsigned char)*c.p++)))
				return refuse(why, size, "a name too long");
		ch = next_char(&c, &eof);
		while (ch == ' ' || ch == '\t')
			ch = next_char(&c, &eof);
		value[0] = '\0';
		if (ch != '\n' && (ch != '=' || !check_value(&c, value, sizeof(value)))) {
			(void)snprintf(why, size, "%s (malformed)", var);
			return -EACCES;
		}
		allowed = false;
		for (size_t i = 0; i < ELEMENTSOF(git_allowed) && !allowed; i++)
			allowed = var_matches(git_allowed[i].name, var) &&
				  value_is_allowed(git_allowed[i].rule, value, where);
		if (!allowed)
			return refuse(why, size, var);
		if (eof)
			return 0;
	}
}

/* The first line of a file git reads a path or a word from, without its line end; false when
 * the file holds a NUL (git would read less than is checked) or more than one line. */
static bool one_line(const char *text, size_t len, char *buf, size_t size)
{
	while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r'))
		len--;
	if (len + 1 > size || memchr(text, '\0', len) || memchr(text, '\n', len))
		return false;
	memcpy(buf, text, len);
	buf[len] = '\0';
	return true;
}

static int check_todo(const char *text, size_t len, char *why, size_t size)
{
	for (const char *p = text, *end = text + len; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *eol = nl ? nl : end;
		size_t w;

		while (p < eol && (*p == ' ' || *p == '\t'))
			p++;
		for (w = 0; p + w < eol && !strchr(" \t\r", p[w]) && p[w] != '\0'; w++)
			;
		if ((w == 4 && memcmp(p, "exec", 4) == 0) || (w == 1 && p[0] == 'x'))
			return refuse(why, size, "an exec line");
		p = nl ? nl + 1 : end;
	}
	return 0;
}

int fusefs_git_check(enum fusefs_git_check kind, const char *text, size_t len,
		     const struct fusefs_git_where *where, char *why, size_t size)
{
	char line[FUSEFS_PATH_MAX], path[FUSEFS_PATH_MAX];
	const char *value;

	switch (kind) {
	case FUSEFS_GIT_CHECK_NONE:
		return 0;
	case FUSEFS_GIT_CHECK_CONFIG:
		return check_config(text, len, where, why, size);
	case FUSEFS_GIT_CHECK_TODO:
		return check_todo(text, len, why, size);
	case FUSEFS_GIT_CHECK_STRATEGY:
		if (!one_line(text, len, line, sizeof(line)) ||
		    !value_is_allowed(VALUE_STRATEGY, line, where))
			return refuse(why, size, "a strategy git has not built in");
		return 0;
	case FUSEFS_GIT_CHECK_HEAD:
		/* git's validate_headref(): "ref:" or an object id makes its folder a git folder,
		 * whose config and hooks nothing checks outside ".git" and "NAME.git" folders. */
		while (len > 0 && isspace((unsigned char)*text))
			text++, len--;
		if ((len >= 4 && memcmp(text, "ref:", 4) == 0) ||
		    (len >= 40 && strspn(text, "0123456789abcdefABCDEF") >= 40))
			return refuse(why, size, "a git HEAD outside a .git or NAME.git folder");
		return 0;
	case FUSEFS_GIT_CHECK_GITFILE:
		if (!one_line(text, len, line, sizeof(line)) ||
		    !(value = startswith(line, "gitdir: ")) ||
		    !git_check_path(where, value, path, sizeof(path)) || !fusefs_rules_in_git(path))
			return refuse(why, size, "gitdir: not a git folder of the workspace");
		return 0;
	case FUSEFS_GIT_CHECK_COMMONDIR:
		if (!one_line(text, len, line, sizeof(line)) ||
		    !git_check_path(where, line, path, sizeof(path)) || !fusefs_rules_in_git(path))
			return refuse(why, size, "not a git folder of the workspace");
		return 0;
	case FUSEFS_GIT_CHECK_GITDIR:
		if (!one_line(text, len, line, sizeof(line)) ||
		    !git_check_path(where, line, path, sizeof(path)))
			return refuse(why, size, "not a path of the workspace");
		return 0;
	}
	return refuse(why, size, "an unknown kind");
}
