/* Per-path decisions of the workspace filesystem: what the sandbox may see and write.
 *
 * Three choices the header leaves to this file:
 *  - An empty workspace.read or workspace.write list means nothing. The policy module already
 *    puts ["**"] into a list the file leaves out (policy_init_defaults()), so an empty list here
 *    was written as [] on purpose; "write": [] makes the workspace read-only.
 *  - FUSEFS_ACCESS_PROTECTED is the reason a write is refused: it is set on a path that a write
 *    pattern matches but a built-in protected entry keeps read-only. A path that no write pattern
 *    matches is plainly not writable and carries no PROTECTED bit.
 *  - fusefs_rules_any_writable() errs towards true (the caller only picks EROFS over EACCES with
 *    it): it is false when the read or the write list is empty, and when every write pattern can
 *    be shown to match nothing writable. A write pattern without wildcards names one path, which
 *    fusefs_rules_decide() settles; a pattern with wildcards counts as writable unless a deny
 *    pattern is the same pattern, or is made of plain names and "**" and matches it as text.
 *  - What hides or protects matches names in any case (ASCII letters): workspace.deny, the
 *    built-in lists and git's names. On a file system that folds case (a casefold ext4 folder,
 *    vfat, exfat, SMB, WSL's drives) "SECRETS/key" is "secrets/key"; where it does not, hiding
 *    or protecting the other spellings too costs nothing anyone asked for. workspace.read and
 *    workspace.write match exactly: another spelling there gets less, never more. */

#include <assert.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/fd-util.h"
#include "common/path-util.h"
#include "fusefs/fusefs-internal.h"

/* The longest pattern kept: the longest string a policy holds, plus the "/\**" added to deny
 * patterns. fusefs_rules_rename_is_uniform() copies patterns onto its stack. */
#define RULES_GLOB_MAX (POLICY_STRING_MAX + 3)

/* Files the host runs or reads as configuration later, at any depth of the workspace. */
static const struct {
	const char *name; /* as workspace.write has to hold it to lift the entry */
	const char *glob; /* what is matched: name at any depth */
	bool but_sample;  /* except a name ending in ".sample" right below "hooks" */
} protected_entries[] = {
    /* The hooks of every git folder: one below a ".git" folder at any depth (a submodule's
     * modules/NAME, a worktree's worktrees/NAME). The rest of .git is git's to write; what in
     * it git reads as settings or paths is content-checked instead (git_check_kind()). */
    {".git/hooks/**", "**/.git/**/hooks/*/**", true},
    /* A bare repository's (NAME.git, as git clone --bare and git init --bare name them): a
     * push to it from the host runs them. A HEAD git would take is refused outside these
     * folders, so no other folder is a git folder (git_check_kind()). */
    {"*.git/hooks/**", "**/*.git/**/hooks/*/**", true},
    {".envrc", "**/.envrc"},
    {".bashrc", "**/.bashrc"},
    {".profile", "**/.profile"},
    {".gitconfig", "**/.gitconfig"},
    {".vscode/**", "**/.vscode/**"},
    {".idea/**", "**/.idea/**"},
    {".devcontainer/**", "**/.devcontainer/**"},
    {".devcontainer.json", "**/.devcontainer.json"}, /* initializeCommand runs on the host */
    /* Hook managers: git runs what they hold (husky sets core.hooksPath to .husky/_; the others
     * install hooks that run what these files say). */
    {".githooks/**", "**/.githooks/**"},
    {".husky/**", "**/.husky/**"},
    {".pre-commit-config.yaml", "**/.pre-commit-config.yaml"},
    {"lefthook.yml", "**/lefthook.yml"},
    {"lefthook.yaml", "**/lefthook.yaml"},
    {".lefthook.yml", "**/.lefthook.yml"},
    {"lefthook-local.yml", "**/lefthook-local.yml"},
    /* Other version control systems' configuration, which names hooks and commands. */
    {".hg/hgrc", "**/.hg/hgrc"},
    {".jj/repo/config.toml", "**/.jj/repo/config.toml"},
    /* Shells' start-up files, for a workspace that is someone's home one day. */
    {".bash_profile", "**/.bash_profile"},
    {".bash_login", "**/.bash_login"},
    {".bash_logout", "**/.bash_logout"},
    {".zshrc", "**/.zshrc"},
    {".zshenv", "**/.zshenv"},
    {".zprofile", "**/.zprofile"},
    {".zlogin", "**/.zlogin"},
    /* Coding agents' own settings: hooks and MCP servers, which the host's agent runs. */
    {".claude/settings.json", "**/.claude/settings.json"},
    {".claude/settings.local.json", "**/.claude/settings.local.json"},
    {".mcp.json", "**/.mcp.json"},
    {".cursor/**", "**/.cursor/**"},
    {".claude/**", "**/.claude/**"}, /* the hook scripts its settings name, its agents, commands */
    {".gemini/**", "**/.gemini/**"}, /* settings.json names MCP servers' commands */
    {".zed/**", "**/.zed/**"},	     /* settings name language servers' binaries */
    /* Package managers' settings that run code of the project's on the host's next install:
     * npm's node-options, yarn's yarnPath, pnpm's hooks. */
    {".npmrc", "**/.npmrc"},
    {".yarnrc.yml", "**/.yarnrc.yml"},
    {".pnpmfile.cjs", "**/.pnpmfile.cjs"},
};

/* What can tell one place from another for the git rules (git_check_kind(), symbolic links
 * below a git folder): a folder moved where one of these sees its contents differently is not
 * moved whole (fusefs_rules_rename_is_uniform()). Matched as the rules match them: "*.git" is
 * ".git" too, in any case (fusefs_rules_in_git()). */
static const char *const git_globs[] = {
    "**/*.git",
    "**/*.git/**",
    "**/*.git/**/sequencer/*",
    "**/*.git/**/rebase-merge/*",
};

struct rules_glob {
	/* What is matched: the pattern as written, except that a deny pattern D is kept as
	 * "D/\**", the folder and all below it. */
	char *glob;
	bool literal; /* no '*' nor '?': it matches one path, its own text */
};

struct rules_list {
	struct rules_glob *items;
	size_t n;
};

struct fusefs_rules {
	struct rules_list read, write, deny;
	bool protect; /* workspace.protect: false lifts every protected entry and check */
	char *mount;  /* the workspace's path in the sandbox (git files may name it) */
	char *root;   /* its host path, once fusefs_rules_protect_git() was told it */
	bool lifted[ELEMENTSOF(protected_entries)]; /* workspace.write holds the entry's name */
	struct rules_list git_named; /* what the workspace's git config names (protect_git) */
	bool any_writable;
};

static bool component_is_double_star(const char *c, size_t len)
{
	return len == 2 && c[0] == '*' && c[1] == '*';
}

/* Are all components of glob plain names or "**"? Then it matches every path that any pattern
 * it matches as text matches (its names stand for themselves, its "**" take anything). */
static bool glob_is_plain(const char *glob)
{
	for (const char *c = glob;;) {
		size_t l = strcspn(c, "/");

		if (!component_is_double_star(c, l) && strcspn(c, "*?") < l)
			return false;
		c += l;
		if (*c == '\0')
			return true;
		c++;
	}
}

static bool glob_ends_with_double_star(const char *glob)
{
	size_t l = strlen(glob);

	return l >= 2 && glob[l - 1] == '*' && glob[l - 2] == '*' && (l == 2 || glob[l - 3] == '/');
}

static void list_done(struct rules_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->items[i].glob);
	free(l->items);
	*l = (struct rules_list){};
}

/* Compiles the patterns of workspace.<field>; deny patterns also cover what is below them. */
static int list_compile(const struct policy_strv *v, const char *field, bool is_deny,
			struct rules_list *ret, struct al_error *err)
{
	ret->items = calloc(v->n > 0 ? v->n : 1, sizeof(*ret->items));
	if (!ret->items)
		return -ENOMEM;
	for (size_t i = 0; i < v->n; i++) {
		const char *s = v->items[i];
		char *glob;

		/* What a policy loaded from JSON has been through already: a hand-built one has
		 * not. */
		if (!policy_glob_is_valid(s))
			return al_error_set(err, -EINVAL, "workspace.%s[%zu]: not a valid pattern",
					    field, i);
		if (is_deny && !glob_ends_with_double_star(s)) {
			if (asprintf(&glob, "%s/**", s) < 0)
				return -ENOMEM;
		} else {
			glob = strdup(s);
			if (!glob)
				return -ENOMEM;
		}
		ret->items[ret->n++] = (struct rules_glob){
		    .glob = glob,
		    .literal = !strpbrk(s, "*?"),
		};
	}
	return 0;
}

static bool list_matches(const struct rules_list *l, const char *path)
{
	for (size_t i = 0; i < l->n; i++)
		if (fusefs_glob_match(l->items[i].glob, path))
			return true;
	return false;
}

/* The same in either case: for what hides or protects (the deny list, the names the git config
 * gives), which must hold on a file system that folds case. */
static bool list_matches_fold(const struct rules_list *l, const char *path)
{
	for (size_t i = 0; i < l->n; i++)
		if (fusefs_glob_match_fold(l->items[i].glob, path))
			return true;
	return false;
}

/* Is the component s[0, l) name, in any case? Git's names are matched so: on a file system that
 * folds case, ".GIT/CONFIG" is the file git reads. */
static bool component_is(const char *s, size_t l, const char *name)
{
	return l == strlen(name) && strncasecmp(s, name, l) == 0;
}

/* Is the name (one component, or "dir/name" for a two-component tail) name as a file system that
 * folds case sees it? In any case, and with what folds to ASCII there (fusefs_glob_match_fold():
 * ".git/con\ufb01g" is git's config on a casefold ext4 folder). name has no wildcards. */
static bool name_is(const char *s, const char *name)
{
	return fusefs_glob_match_fold(name, s);
}

static bool list_matches_below(const struct rules_list *l, const char *dir)
{
	for (size_t i = 0; i < l->n; i++)
		if (fusefs_glob_match_below(l->items[i].glob, dir))
			return true;
	return false;
}

/* Does workspace.write hold a pattern without wildcards that is path itself? */
static bool write_names(const struct fusefs_rules *rules, const char *path)
{
	for (size_t i = 0; i < rules->write.n; i++)
		if (rules->write.items[i].literal && streq(rules->write.items[i].glob, path))
			return true;
	return false;
}

/* Is name right below a "hooks" folder and a sample git never runs? */
static bool is_hook_sample(const char *path)
{
	const char *base = strrchr(path, '/');
	size_t l;

	if (!base || base - path < 5 || !component_is(base - 5, 5, "hooks") ||
	    (base - path > 5 && base[-6] != '/'))
		return false;
	l = strlen(base + 1);
	return l > 7 && streq(base + 1 + l - 7, ".sample");
}

/* Is path strictly below a git folder? */
static bool is_below_git(const char *path)
{
	const char *slash = strrchr(path, '/');
	char parent[FUSEFS_PATH_MAX];

	if (!slash || (size_t)(slash - path) >= sizeof(parent))
		return false;
	memcpy(parent, path, (size_t)(slash - path));
	parent[slash - path] = '\0';
	return fusefs_rules_in_git(parent);
}

/* Which content check a file at path gets (protection on, not lifted). Below a .git folder the
 * names git reads settings or paths from, at any depth, so that a submodule's or a worktree's
 * git folder (modules/NAME, worktrees/NAME) and whatever a checked gitdir leads to are covered
 * too: a loose ref named "config" is checked as well (and refused). */
static enum fusefs_git_check git_check_kind(const char *path, bool is_dir)
{
	const char *base = strrchr(path, '/'), *parent;
	size_t pl;

	if (is_dir)
		return FUSEFS_GIT_CHECK_NONE;
	parent = base ? base : path;
	base = base ? base + 1 : path;
	for (pl = 0; parent - pl > path && parent[-(ptrdiff_t)pl - 1] != '/'; pl++)
		;
	if (name_is(base, ".gitmodules"))
		return FUSEFS_GIT_CHECK_CONFIG;
	if (name_is(base, ".git"))
		return FUSEFS_GIT_CHECK_GITFILE;
	if (!is_below_git(path))
		return name_is(base, "HEAD") ? FUSEFS_GIT_CHECK_HEAD : FUSEFS_GIT_CHECK_NONE;
	if (name_is(base, "config") || name_is(base, "config.worktree"))
		return FUSEFS_GIT_CHECK_CONFIG;
	if (name_is(base, "commondir"))
		return FUSEFS_GIT_CHECK_COMMONDIR;
	if (name_is(base, "gitdir"))
		return FUSEFS_GIT_CHECK_GITDIR;
	if (name_is(base, "git-rebase-todo"))
		return FUSEFS_GIT_CHECK_TODO;
	/* parent - pl: the parent's name, then "/" and base */
	if (name_is(parent - pl, "sequencer/todo"))
		return FUSEFS_GIT_CHECK_TODO;
	if (name_is(parent - pl, "sequencer/opts"))
		return FUSEFS_GIT_CHECK_CONFIG;
	if (name_is(parent - pl, "rebase-merge/strategy"))
		return FUSEFS_GIT_CHECK_STRATEGY;
	return FUSEFS_GIT_CHECK_NONE;
}

/* Is path protected by an entry that workspace.write does not lift by name? The first entry
 * that matches decides. */
static bool is_protected(const struct fusefs_rules *rules, const char *path)
{
	if (!rules->protect)
		return false;
	for (size_t i = 0; i < ELEMENTSOF(protected_entries); i++) {
		if (!fusefs_glob_match_fold(protected_entries[i].glob, path))
			continue;
		if (protected_entries[i].but_sample && is_hook_sample(path))
			continue;
		/* The entry's own pattern lifts it where it matches, i.e. at the top level only. */
		if (rules->lifted[i] && fusefs_glob_match(protected_entries[i].name, path))
			return false;
		return !write_names(rules, path);
	}
	return list_matches_fold(&rules->git_named, path) && !write_names(rules, path);
}

/* No ancestor of path needs a look of its own: a read pattern that matches path, or could match
 * below it, could match below each of its ancestors too (which are then READ or TRAVERSE), and a
 * path below a denied folder D matches "D/\**" itself. */
unsigned fusefs_rules_decide(const struct fusefs_rules *rules, const char *path, bool is_dir)
{
	bool is_root = path[0] == '\0';
	unsigned hidden = is_root ? FUSEFS_ACCESS_TRAVERSE : 0;

	if (list_matches_fold(&rules->deny, path))
		return hidden;
	if (!list_matches(&rules->read, path)) {
		if ((is_dir || is_root) && list_matches_below(&rules->read, path))
			return FUSEFS_ACCESS_TRAVERSE;
		return hidden;
	}
	if (!list_matches(&rules->write, path))
		return FUSEFS_ACCESS_READ;
	if (is_protected(rules, path))
		return FUSEFS_ACCESS_READ | FUSEFS_ACCESS_PROTECTED;
	if (rules->protect && git_check_kind(path, is_dir) != FUSEFS_GIT_CHECK_NONE &&
	    !write_names(rules, path))
		return FUSEFS_ACCESS_READ | FUSEFS_ACCESS_WRITE | FUSEFS_ACCESS_CHECKED;
	return FUSEFS_ACCESS_READ | FUSEFS_ACCESS_WRITE;
}

bool fusefs_rules_content_checked(const struct fusefs_rules *rules, const char *path)
{
	return fusefs_rules_decide(rules, path, false) & FUSEFS_ACCESS_CHECKED;
}

bool fusefs_rules_may_symlink(const struct fusefs_rules *rules, const char *path,
			      const char *target)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	if (!rules->protect || write_names(rules, path))
		return true;
	if (strcaseeq(base, ".git") || strcaseeq(base, "HEAD"))
		return false;
	/* A link to a git folder would let what git writes through a path of the workspace
	 * (a submodule's core.worktree) land in it (found by review). */
	if (target && fusefs_rules_in_git(target))
		return false;
	if (!is_below_git(path))
		return true;
	/* git init's probe ("tXXXXXX" -> "testing"): a link to a name in its own folder, which
	 * lies below .git too and is checked there as what it is. Not as "hooks" (the hooks
	 * would then lie at a name nothing protects), nor as a checked name. */
	return target && target[0] && !strchr(target, '/') && !streq(target, ".") &&
	       !streq(target, "..") && !name_is(base, "hooks") &&
	       git_check_kind(path, false) == FUSEFS_GIT_CHECK_NONE;
}

int fusefs_rules_check_content(const struct fusefs_rules *rules, const char *path, const char *text,
			       size_t len, char *why, size_t size)
{
	char dir[FUSEFS_PATH_MAX];
	const char *slash = strrchr(path, '/');
	struct fusefs_git_where where = {.dir = dir, .root = rules->root, .mount = rules->mount};

	if (!fusefs_rules_content_checked(rules, path))
		return 0;
	(void)snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) : 0, path);
	return fusefs_git_check(git_check_kind(path, false), text, len, &where, why, size);
}

/* Does the (compiled) deny pattern hide every path that the write pattern w matches? */
static bool deny_covers(const char *deny, const char *w)
{
	const char *rest = startswith(deny, w);

	if (rest && (rest[0] == '\0' || streq(rest, "/**")))
		return true; /* the same pattern */
	return glob_is_plain(deny) && fusefs_glob_match_fold(deny, w);
}

/* Can the write pattern w match a path that is writable? See the top of the file. */
static bool write_glob_is_live(const struct fusefs_rules *rules, const struct rules_glob *w)
{
	if (w->literal)
		return fusefs_rules_decide(rules, w->glob, false) & FUSEFS_ACCESS_WRITE;
	for (size_t i = 0; i < rules->deny.n; i++)
		if (deny_covers(rules->deny.items[i].glob, w->glob))
			return false;
	return true;
}

static bool compute_any_writable(const struct fusefs_rules *rules)
{
	if (rules->read.n == 0)
		return false;
	for (size_t i = 0; i < rules->write.n; i++)
		if (write_glob_is_live(rules, &rules->write.items[i]))
			return true;
	return false;
}

int fusefs_rules_new(const struct policy *p, struct fusefs_rules **ret, struct al_error *err)
{
	_cleanup_(fusefs_rules_freep) struct fusefs_rules *rules = NULL;
	int r;

	rules = calloc(1, sizeof(*rules));
	if (!rules)
		return -ENOMEM;
	r = list_compile(&p->workspace.read, "read", false, &rules->read, err);
	if (r < 0)
		return r;
	r = list_compile(&p->workspace.write, "write", false, &rules->write, err);
	if (r < 0)
		return r;
	r = list_compile(&p->workspace.deny, "deny", true, &rules->deny, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < ELEMENTSOF(protected_entries); i++)
		for (size_t j = 0; j < rules->write.n; j++)
			if (streq(rules->write.items[j].glob, protected_entries[i].name))
				rules->lifted[i] = true;
	rules->protect = p->workspace.protect;
	if (p->workspace.mount) {
		rules->mount = strdup(p->workspace.mount);
		if (!rules->mount)
			return -ENOMEM;
	}
	rules->any_writable = compute_any_writable(rules);
	*ret = TAKE_PTR(rules);
	return 0;
}

struct fusefs_rules *fusefs_rules_free(struct fusefs_rules *rules)
{
	if (!rules)
		return NULL;
	list_done(&rules->read);
	list_done(&rules->write);
	list_done(&rules->deny);
	list_done(&rules->git_named);
	free(rules->mount);
	free(rules->root);
	free(rules);
	return NULL;
}

bool fusefs_rules_any_writable(const struct fusefs_rules *rules)
{
	return rules->any_writable;
}

/* Can glob tell from/X from to/X, for some X? When glob matches dir/X, its components 0..j match
 * dir for some j, and the rest of the match over X depends on j alone (and, when component j-1 is
 * "**", on that "**" going on into X). So the set of j whose prefix matches dir says all that dir
 * contributes: when each prefix matches both folders or neither, no X tells them apart. */
static bool glob_is_uniform(const char *glob, const char *from, const char *to, bool fold)
{
	bool (*match)(const char *, const char *) =
	    fold ? fusefs_glob_match_fold : fusefs_glob_match;
	bool (*below)(const char *, const char *) =
	    fold ? fusefs_glob_match_below_fold : fusefs_glob_match_below;
	char prefix[RULES_GLOB_MAX + 1];
	size_t len = strlen(glob);

	if (!below(glob, from) && !below(glob, to))
		return true; /* it matches below neither */
	assert(len <= RULES_GLOB_MAX);
	memcpy(prefix, glob, len + 1);
	if (match("", from) != match("", to))
		return false; /* the empty prefix: one of them is the root */
	for (size_t i = 0;; i++) {
		char c = prefix[i];

		if (c != '/' && c != '\0')
			continue;
		prefix[i] = '\0';
		if (match(prefix, from) != match(prefix, to))
			return false;
		if (c == '\0')
			return true;
		prefix[i] = c;
	}
}

/* Uniform in any case and as written: for what protects, which a case-only rename must not
 * move whole either. */
static bool glob_is_uniform_both(const char *glob, const char *from, const char *to)
{
	return glob_is_uniform(glob, from, to, true) && glob_is_uniform(glob, from, to, false);
}

static bool list_is_uniform(const struct rules_list *l, const char *from, const char *to, bool fold)
{
	for (size_t i = 0; i < l->n; i++)
		if (!glob_is_uniform(l->items[i].glob, from, to, fold))
			return false;
	return true;
}

/* Each pattern costs one match per component of it (see glob_is_uniform()); policy patterns are
 * short. The names that lift protected entries need no check of their own: a name lifts its entry
 * only where it matches, and it is one of the write patterns. What protects, and git's names, are
 * matched in any case and also as written: on a file system that does not fold case, a folder
 * moved to another spelling of its name (".git/hooks" to ".git/HOOKS") takes what it holds away
 * from the host's git, which removing the files may not (red team 2). */
bool fusefs_rules_rename_is_uniform(const struct fusefs_rules *rules, const char *from,
				    const char *to)
{
	if (!list_is_uniform(&rules->read, from, to, false) ||
	    !list_is_uniform(&rules->write, from, to, false) ||
	    !list_is_uniform(&rules->deny, from, to, true) ||
	    !list_is_uniform(&rules->git_named, from, to, true) ||
	    !list_is_uniform(&rules->git_named, from, to, false))
		return false;
	for (size_t i = 0; i < ELEMENTSOF(protected_entries); i++)
		if (!glob_is_uniform_both(protected_entries[i].glob, from, to))
			return false;
	for (size_t i = 0; i < ELEMENTSOF(git_globs); i++)
		if (!glob_is_uniform_both(git_globs[i], from, to))
			return false;
	return true;
}

/* ---- what the workspace's git config names ---- */

#define GIT_CONFIG_MAX (1024 * 1024)
#define GIT_INCLUDE_DEPTH_MAX 10 /* as git's own limit */

/* Hooks git runs from a core.hooksPath that is the work tree itself. */
static const char *const git_hook_names[] = {
    "applypatch-msg",	  "pre-applypatch",
    "post-applypatch",	  "pre-commit",
    "pre-merge-commit",	  "prepare-commit-msg",
    "commit-msg",	  "post-commit",
    "pre-rebase",	  "post-checkout",
    "post-merge",	  "pre-push",
    "pre-receive",	  "update",
    "proc-receive",	  "post-receive",
    "post-update",	  "reference-transaction",
    "push-to-checkout",	  "pre-auto-gc",
    "post-rewrite",	  "sendemail-validate",
    "fsmonitor-watchman", "post-index-change",
};

struct git_walk {
	struct fusefs_rules *rules;
	int root_fd;
	const char *root; /* the workspace's host path */
	const char *base; /* the folder an include path is relative to (workspace-relative) */
	unsigned depth;
};

static int read_git_config(struct git_walk *w, const char *path);
static int git_named_protect(struct git_walk *w, const char *path, bool below);

/* Adds path (a pattern when it ends in "/\**") to the git_named list, once. A '*' that git's path
 * holds becomes '?', which matches it and more: a path is never left out, at worst more is
 * protected. */
static int git_named_add(struct fusefs_rules *rules, const char *path, bool below)
{
	struct rules_list *l = &rules->git_named;
	struct rules_glob *items;
	char *g;

	if (asprintf(&g, "%s%s", path, below ? "/**" : "") < 0)
		return -ENOMEM;
	for (char *c = g; *c && (!below || c < g + strlen(path)); c++)
		if (*c == '*')
			*c = '?';
	if (!policy_glob_is_valid(g))
		return free(g), 0; /* too long for a pattern: no policy path is either */
	for (size_t i = 0; i < l->n; i++)
		if (streq(l->items[i].glob, g))
			return free(g), 0;
	items = reallocarray(l->items, l->n + 1, sizeof(*items));
	if (!items) {
		free(g);
		return -ENOMEM;
	}
	l->items = items;
	l->items[l->n++] = (struct rules_glob){.glob = g, .literal = !strpbrk(g, "*?")};
	return 0;
}

/* value (relative to base, or absolute) as a workspace-relative path without ".", ".." or "//",
 * into buf; false when it lies outside the workspace or names a home folder ("~"). */
static bool git_path_in_workspace(const struct git_walk *w, const char *base, const char *value,
				  char *buf, size_t size)
{
	char joined[2 * FUSEFS_PATH_MAX];
	const char *rest;
	size_t n = 0;

	if (value[0] == '~' || startswith(value, "%(prefix)/") || value[0] == '\0')
		return false;
	if (value[0] == '/') {
		rest = startswith(value, w->root);
		if (!rest || (rest[0] != '/' && rest[0] != '\0'))
			return false;
		(void)snprintf(joined, sizeof(joined), "%s", rest);
	} else {
		(void)snprintf(joined, sizeof(joined), "%s/%s", base, value);
	}
	for (char *save = NULL, *c = strtok_r(joined, "/", &save); c;
	     c = strtok_r(NULL, "/", &save)) {
		size_t cl = strlen(c);

		if (streq(c, "."))
			continue;
		if (streq(c, "..")) {
			if (n == 0)
				return false;
			while (n > 0 && buf[--n] != '/')
				;
			continue;
		}
		if (n + (n > 0) + cl + 1 > size)
			return false;
		if (n > 0)
			buf[n++] = '/';
		memcpy(buf + n, c, cl);
		n += cl;
	}
	buf[n] = '\0';
	return true;
}

static int git_named_hooks(struct git_walk *w, const char *dir)
{
	int r = 0;

	if (dir[0] != '\0')
		return git_named_protect(w, dir, true);
	for (size_t i = 0; i < ELEMENTSOF(git_hook_names) && r >= 0; i++)
		r = git_named_add(w->rules, git_hook_names[i], false);
	return r;
}

/* Adds path (with "/\**" when below) and each folder on its way, as it is: no link or folder may be
 * made there to lead git elsewhere (found by review: "ln -s x tools" then x/hooks/pre-commit). */
static int git_named_add_with_parents(struct fusefs_rules *rules, const char *path, bool below)
{
	char prefix[FUSEFS_PATH_MAX];
	int r = 0;

	for (const char *slash = strchr(path, '/'); slash && r >= 0;
	     slash = strchr(slash + 1, '/')) {
		(void)snprintf(prefix, sizeof(prefix), "%.*s", (int)(slash - path), path);
		r = git_named_add(rules, prefix, false);
	}
	return r < 0 ? r : git_named_add(rules, path, below);
}

/* Where path leads on the host now, through the links inside the workspace that already lie on
 * its way: the real path of its longest part that exists, the rest appended, relative to the root;
 * false when it leads out of the workspace (or nowhere it can tell). */
static bool git_path_resolve(const struct git_walk *w, const char *path, char *buf, size_t size)
{
	struct open_how how = {.flags = O_PATH | O_CLOEXEC,
			       .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS};
	char part[FUSEFS_PATH_MAX], proc[64], real[PATH_MAX];
	size_t len = strlen(path);
	const char *rest;
	ssize_t n;

	for (;;) {
		_cleanup_close_ int fd = -EBADF;

		(void)snprintf(part, sizeof(part), "%.*s", (int)len, path);
		fd = (int)syscall(SYS_openat2, w->root_fd, len ? part : ".", &how, sizeof(how));
		if (fd >= 0) {
			(void)snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
			n = readlink(proc, real, sizeof(real) - 1);
			if (n < 0)
				return false;
			real[n] = '\0';
			rest = startswith(real, w->root);
			if (!rest || (rest[0] != '/' && rest[0] != '\0'))
				return false;
			rest += rest[0] == '/';
			return al_path_printf(buf, size, "%s%s%s", rest,
					      rest[0] && path[len] ? "/" : "",
					      path[len] == '/' ? path + len + 1 : path + len) >= 0;
		}
		if (len == 0)
			return false;
		while (len > 0 && path[--len] != '/')
			;
	}
}

/* Protects what git will find at path: as written, and where links lead it today. */
static int git_named_protect(struct git_walk *w, const char *path, bool below)
{
	char real[FUSEFS_PATH_MAX];
	int r;

	r = git_named_add_with_parents(w->rules, path, below);
	if (r >= 0 && git_path_resolve(w, path, real, sizeof(real)) && !streq(real, path) &&
	    real[0])
		r = git_named_add_with_parents(w->rules, real, below);
	return r;
}

static int on_git_path(enum fusefs_git_path kind, const char *value, void *userdata)
{
	struct git_walk *w = userdata;
	char path[FUSEFS_PATH_MAX];
	int r;

	if (!git_path_in_workspace(w, kind == FUSEFS_GIT_HOOKS ? "" : w->base, value, path,
				   sizeof(path)))
		return 0;
	if (kind == FUSEFS_GIT_HOOKS)
		return git_named_hooks(w, path);
	r = git_named_protect(w, path, false);
	if (r < 0 || w->depth >= GIT_INCLUDE_DEPTH_MAX)
		return r;
	return read_git_config(w, path);
}

/* Reads the config file at path (workspace-relative, beneath the root only, a regular file) and
 * protects what it names; a file that is not there or not readable names nothing. */
static int read_git_config(struct git_walk *w, const char *path)
{
	struct open_how how = {.flags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
			       .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS};
	_cleanup_free_ char *text = NULL, *base = NULL;
	_cleanup_close_ int fd = -EBADF;
	const char *saved = w->base;
	struct stat st;
	ssize_t n;
	char *slash;
	int r;

	fd = (int)syscall(SYS_openat2, w->root_fd, path, &how, sizeof(how));
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > GIT_CONFIG_MAX)
		return 0;
	text = malloc((size_t)st.st_size + 1);
	base = strdup(path);
	if (!text || !base)
		return -ENOMEM;
	n = read(fd, text, (size_t)st.st_size);
	if (n < 0)
		return 0;
	slash = strrchr(base, '/');
	if (slash)
		*slash = '\0';
	else
		base[0] = '\0';
	w->base = base;
	w->depth++;
	r = fusefs_git_config_paths(text, (size_t)n, on_git_path, w);
	w->depth--;
	w->base = saved;
	return r;
}

int fusefs_rules_protect_git(struct fusefs_rules *rules, int root_fd, const char *root)
{
	struct git_walk w = {.rules = rules, .root_fd = root_fd, .root = root, .base = ""};

	free(rules->root);
	rules->root = strdup(root);
	if (!rules->root)
		return -ENOMEM;
	if (!rules->protect)
		return 0;
	return read_git_config(&w, ".git/config");
}
