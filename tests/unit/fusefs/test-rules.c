/* tests/unit/fusefs/test-rules.c: per-path decisions of the workspace (fusefs/rules.c), from
 * policies loaded the way the launcher loads them. */

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "fusefs/fusefs-internal.h"

#define R FUSEFS_ACCESS_READ
#define W FUSEFS_ACCESS_WRITE
#define T FUSEFS_ACCESS_TRAVERSE
#define P FUSEFS_ACCESS_PROTECTED
#define C FUSEFS_ACCESS_CHECKED

/* Rules of the policy whose workspace object is workspace, written with ' for ". NULL: the
 * embedded default policy. */
static struct fusefs_rules *rules_for(const char *workspace)
{
	_cleanup_(policy_freep) struct policy *p = NULL;
	struct fusefs_rules *rules = NULL;
	struct al_error err = {0};
	char json[1024];

	if (!workspace) {
		assert_int_equal(policy_new_default(&p), 0);
	} else {
		assert_true((size_t)snprintf(json, sizeof(json), "{'workspace': %s}", workspace) <
			    sizeof(json));
		for (char *c = json; *c; c++)
			if (*c == '\'')
				*c = '"';
		if (policy_load_string(json, &p, &err) < 0)
			fail_msg("policy refused: %s", err.msg);
	}
	if (fusefs_rules_new(p, &rules, &err) < 0)
		fail_msg("rules refused: %s", err.msg);
	return rules;
}

struct expect {
	const char *path;
	bool is_dir;
	unsigned access;
};

static void check(const struct fusefs_rules *rules, const struct expect *e, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned got = fusefs_rules_decide(rules, e[i].path, e[i].is_dir);

		if (got != e[i].access)
			fail_msg("decide(\"%s\", %s) = %#x, expected %#x", e[i].path,
				 e[i].is_dir ? "folder" : "file", got, e[i].access);
	}
}

#define CHECK(workspace, ...)                                                                      \
	do {                                                                                       \
		_cleanup_(fusefs_rules_freep) struct fusefs_rules *rules_ = rules_for(workspace);  \
		const struct expect e_[] = {__VA_ARGS__};                                          \
		check(rules_, e_, ELEMENTSOF(e_));                                                 \
	} while (0)

static void test_default_policy_reads_and_writes_everything(void **state)
{
	(void)state;
	CHECK(NULL, {"", true, R | W}, {"src", true, R | W}, {"src/main.c", false, R | W},
	      {".env", false, R | W}, {".git/HEAD", false, R | W},
	      {".git/objects/ab/cdef", false, R | W});
}

static void test_absent_lists_mean_the_same_as_the_default(void **state)
{
	(void)state;
	CHECK("{'deny': ['x']}", {"", true, R | W}, {"a/b", false, R | W}, {"x/y", false, 0});
}

static void test_star_matches_dotfiles(void **state)
{
	(void)state;
	CHECK("{'read': ['*'], 'write': []}", {".env", false, R}, {".config", true, R},
	      {".config/x", false, 0});
}

static void test_read_pattern_makes_only_what_it_matches_visible(void **state)
{
	(void)state;
	CHECK("{'read': ['src/**'], 'write': []}", {"src", true, R}, {"src/a/b.c", false, R},
	      {"docs", true, 0}, {"docs/x", false, 0}, {"srcx", false, 0}, {"", true, T});
}

static void test_folder_leading_to_readable_paths_is_traversable(void **state)
{
	(void)state;
	CHECK("{'read': ['a/b/*.c']}", {"a", true, T}, {"a/b", true, T}, {"a/b/x.c", false, R | W},
	      {"a/b/x.h", false, 0}, {"a/c", true, 0}, {"a", false, 0}, {"a/b/x.c", true, R | W});
	CHECK("{'read': ['**/*.md'], 'write': []}", {"docs", true, T}, {"docs/a/b", true, T},
	      {"docs/a/b/README.md", false, R}, {"docs/a/b/main.c", false, 0});
}

static void test_path_below_a_hidden_folder_is_hidden(void **state)
{
	(void)state;
	CHECK("{'read': ['a/b/**']}", {"x", true, 0}, {"x/b", true, 0}, {"x/b/c", false, 0},
	      {"a/c", true, 0}, {"a/c/b", false, 0}, {"a/b/c", false, R | W});
}

static void test_root_is_always_at_least_traversable(void **state)
{
	(void)state;
	CHECK("{'read': []}", {"", true, T}, {"a", false, 0}, {"a", true, 0});
	CHECK("{'deny': ['**']}", {"", true, T}, {"a", true, 0}, {"a/b", false, 0});
	CHECK("{'read': ['src/**']}", {"", true, T});
}

static void test_write_needs_read(void **state)
{
	(void)state;
	CHECK("{'read': ['src/**'], 'write': ['**']}", {"src/a", false, R | W},
	      {"docs/a", false, 0}, {"docs", true, 0}, {"", true, T});
}

static void test_write_list_limits_what_is_writable(void **state)
{
	(void)state;
	CHECK("{'write': ['out/**', '*.log']}", {"out", true, R | W}, {"out/a/b", false, R | W},
	      {"build.log", false, R | W}, {"src/build.log", false, R}, {"src/a.c", false, R},
	      {"", true, R});
}

static void test_empty_write_list_makes_everything_read_only(void **state)
{
	_cleanup_(fusefs_rules_freep) struct fusefs_rules *rules = rules_for("{'write': []}");

	(void)state;
	assert_int_equal(fusefs_rules_decide(rules, "a", false), R);
	assert_int_equal(fusefs_rules_decide(rules, "", true), R);
	assert_false(fusefs_rules_any_writable(rules));
}

static void test_empty_read_list_hides_everything(void **state)
{
	_cleanup_(fusefs_rules_freep) struct fusefs_rules *rules = rules_for("{'read': []}");

	(void)state;
	assert_int_equal(fusefs_rules_decide(rules, "a", true), 0);
	assert_int_equal(fusefs_rules_decide(rules, "", true), T);
	assert_false(fusefs_rules_any_writable(rules));
}

static void test_deny_wins_over_read_and_write(void **state)
{
	(void)state;
	CHECK("{'read': ['**'], 'write': ['**'], 'deny': ['**/.env', 'keys/*.pem']}",
	      {".env", false, 0}, {"a/b/.env", false, 0}, {"a/.envx", false, R | W},
	      {"keys/a.pem", false, 0}, {"keys/a.pub", false, R | W},
	      {"x/keys/a.pem", false, R | W});
}

/* On a file system that folds case, "SECRET/key" is "secret/key": deny holds in any case, while
 * read and write match exactly (another spelling gets less, never more). */
static void test_deny_holds_in_any_case_read_and_write_match_exactly(void **state)
{
	(void)state;
	CHECK("{'read': ['src/**', 'Secret/**'], 'write': ['src/**', 'Secret/**'], "
	      "'deny': ['secret', '**/.env']}",
	      {"SECRET/key", false, 0}, {"Secret", true, 0}, {"a/.ENV", false, 0},
	      {"src/a", false, R | W}, {"SRC/a", false, 0}, {"src/.Env", false, 0});
}

static void test_deny_hides_everything_below_a_denied_folder(void **state)
{
	(void)state;
	CHECK("{'deny': ['secret', '*/private']}", {"secret", true, 0}, {"secret/x", false, 0},
	      {"secret/a/b/c", true, 0}, {"secretx", false, R | W}, {"a/private", true, 0},
	      {"a/private/key", false, 0}, {"a/b/private", true, R | W});
	CHECK("{'deny': ['build/**']}", {"build", true, 0}, {"build/x", false, 0},
	      {"buildx", true, R | W});
}

static void test_denied_folder_hides_readable_paths_below_it(void **state)
{
	(void)state;
	CHECK("{'read': ['a/b/**'], 'deny': ['a']}", {"a", true, 0}, {"a/b", true, 0},
	      {"a/b/c", false, 0});
}

/* The files git reads settings or paths from are written only through a check, at any depth. */
static void test_git_config_is_content_checked_at_any_depth(void **state)
{
	(void)state;
	CHECK(NULL, {".git/config", false, R | W | C}, {"a/b/.git/config", false, R | W | C},
	      {".git/HEAD", false, R | W}, {".git/config.bak", false, R | W},
	      {"git/config", false, R | W}, {".git/config", true, R | W},
	      {"a/.git/config.worktree", false, R | W | C});
}

static void test_hooks_of_every_git_folder_are_protected_but_samples(void **state)
{
	(void)state;
	CHECK(NULL, {".git/hooks", true, R | W}, {".git/hooks/pre-commit", false, R | P},
	      {"vendor/x/.git/hooks/post-checkout", false, R | P}, {".git", true, R | W},
	      {".git/hooksx", true, R | W}, {".git/hooks/pre-commit.sample", false, R | W},
	      {".git/modules/sub/hooks/post-checkout", false, R | P},
	      {".git/modules/sub/hooks/pre-push.sample", false, R | W},
	      {".git/hooks/x.sample/pre-commit", false, R | P});
}

/* Git reads settings and paths from more of .git than config: those are checked, the rest is
 * git's to write. */
static void test_git_folders_are_writable_but_what_git_reads_as_settings(void **state)
{
	(void)state;
	CHECK(NULL, {".git/commondir", false, R | W | C},
	      {".git/modules/sub/config", false, R | W | C},
	      {".git/worktrees/w/gitdir", false, R | W | C}, {".git/info/attributes", false, R | W},
	      {".git/rebase-merge/git-rebase-todo", false, R | W | C},
	      {".git/sequencer/todo", false, R | W | C}, {".git/sequencer/opts", false, R | W | C},
	      {".git/rebase-merge/strategy", false, R | W | C}, {"sub/.git", false, R | W | C},
	      {"sub/.git", true, R | W}, {".gitmodules", false, R | W | C},
	      {"a/b/.gitmodules", false, R | W | C}, {".git/objects/pack/p.pack", false, R | W},
	      {".git/refs/heads/main", false, R | W}, {".git/logs/HEAD", false, R | W},
	      {".git/index", false, R | W}, {".git/config.lock", false, R | W},
	      {".git/modules/sub/objects/ab/cd", false, R | W},
	      {".git/worktrees/w/HEAD", false, R | W}, {"vendor/.git/packed-refs", false, R | W},
	      {"todo", false, R | W}, {"sequencer/opts", false, R | W});
}

static void test_symbolic_links_are_refused_at_and_below_git(void **state)
{
	_cleanup_(fusefs_rules_freep) struct fusefs_rules *rules = rules_for(NULL);

	(void)state;
	assert_false(fusefs_rules_may_symlink(rules, ".git", "x/y"));
	assert_false(fusefs_rules_may_symlink(rules, "a/.git", "x/y"));
	assert_false(fusefs_rules_may_symlink(rules, "a/.git/hooks", "x/y"));
	assert_false(fusefs_rules_may_symlink(rules, ".git/modules/x", "x/y"));
	assert_true(fusefs_rules_may_symlink(rules, "a/git", "x/y"));
	assert_true(fusefs_rules_may_symlink(rules, ".git/tXXXXXX", "testing"));
	assert_false(fusefs_rules_may_symlink(rules, ".git/hooks", "h"));
	assert_false(fusefs_rules_may_symlink(rules, ".git/modules/x", NULL));
	assert_false(fusefs_rules_may_symlink(rules, ".git/config", "c"));
	assert_true(fusefs_rules_may_symlink(rules, "a/.gitx/y", "x/y"));
	assert_true(fusefs_rules_content_checked(rules, "x/.git/config"));
	assert_false(fusefs_rules_content_checked(rules, "x/.git/description"));
}

static void test_protect_false_lifts_every_entry_and_check(void **state)
{
	_cleanup_(fusefs_rules_freep) struct fusefs_rules *rules = rules_for("{'protect': false}");

	(void)state;
	CHECK("{'protect': false}", {".git/config", false, R | W},
	      {".git/hooks/pre-commit", false, R | W}, {".envrc", false, R | W},
	      {"a/.vscode/settings.json", false, R | W}, {".gitmodules", false, R | W},
	      {"a/.git", false, R | W});
	assert_true(fusefs_rules_may_symlink(rules, ".git/hooks", "x/y"));
}

static void test_lifting_git_config_by_name_lifts_its_check_there_only(void **state)
{
	(void)state;
	CHECK("{'write': ['**', '.git/config']}", {".git/config", false, R | W},
	      {"a/.git/config", false, R | W | C}, {".git/commondir", false, R | W | C});
}

static void test_every_builtin_entry_is_protected(void **state)
{
	(void)state;
	CHECK(NULL, {".envrc", false, R | P}, {".bashrc", false, R | P}, {".profile", false, R | P},
	      {".gitconfig", false, R | P}, {".vscode/settings.json", false, R | P},
	      {".vscode", true, R | P}, {".idea/workspace.xml", false, R | P},
	      {".devcontainer/devcontainer.json", false, R | P}, {"sub/.envrc", false, R | P},
	      {"a/b/.vscode/tasks.json", false, R | P}, {"envrc", false, R | W},
	      {".profile.d", true, R | W});
	/* What hook managers, other version control systems, shells and agents run on the host. */
	CHECK(NULL, {".devcontainer.json", false, R | P}, {".githooks/pre-commit", false, R | P},
	      {".husky/pre-commit", false, R | P}, {".husky/_/h", false, R | P},
	      {".pre-commit-config.yaml", false, R | P}, {"lefthook.yml", false, R | P},
	      {"web/lefthook.yaml", false, R | P}, {".hg/hgrc", false, R | P},
	      {".hg/store/data", false, R | W}, {".jj/repo/config.toml", false, R | P},
	      {".bash_profile", false, R | P}, {".zshrc", false, R | P},
	      {".claude/settings.json", false, R | P},
	      {".claude/settings.local.json", false, R | P}, {".claude/hooks/pre.sh", false, R | P},
	      {".gemini/settings.json", false, R | P}, {".npmrc", false, R | P},
	      {".mcp.json", false, R | P}, {".cursor/mcp.json", false, R | P});
}

/* ---- what the workspace's git config names ---- */

struct seen_path {
	enum fusefs_git_path kind;
	char value[128];
};

struct seen_paths {
	struct seen_path items[8];
	size_t n;
};

static int record_path(enum fusefs_git_path kind, const char *value, void *userdata)
{
	struct seen_paths *s = userdata;

	assert_true(s->n < ELEMENTSOF(s->items));
	s->items[s->n].kind = kind;
	(void)snprintf(s->items[s->n].value, sizeof(s->items[s->n].value), "%s", value);
	s->n++;
	return 0;
}

static void test_git_config_paths_follow_gits_syntax(void **state)
{
	static const char text[] = "# a comment\n"
				   "[user]\n\tname = x\n\thooksPath = not-core\n"
				   "[core]\n\trepositoryformatversion = 0\n\tbare\n"
				   "\thooksPath = .husky/_   \n"
				   "[CORE] HOOKSPATH = \"my hooks\" ; a comment\n"
				   "[core]\n\thooksPath = a\\\nb # joined\n"
				   "[include]\n\tpath = ../team.gitconfig\n"
				   "[includeIf \"gitdir:/x/]\"]\n\tpath = \"q\\\"uote\"\n"
				   "[core]\n\thooksPath = \"open\n"
				   "[broken\n\thooksPath = nope\n";
	struct seen_paths s = {0};

	(void)state;
	assert_int_equal(fusefs_git_config_paths(text, sizeof(text) - 1, record_path, &s), 0);
	assert_int_equal(s.n, 5);
	assert_int_equal(s.items[0].kind, FUSEFS_GIT_HOOKS);
	assert_string_equal(s.items[0].value, ".husky/_");
	assert_string_equal(s.items[1].value, "my hooks");
	assert_string_equal(s.items[2].value, "ab");
	assert_int_equal(s.items[3].kind, FUSEFS_GIT_INCLUDE);
	assert_string_equal(s.items[3].value, "../team.gitconfig");
	assert_string_equal(s.items[4].value, "q\"uote");
}

static void write_file(const char *dir, const char *name, const char *text)
{
	char path[512];
	FILE *f;

	(void)snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

static void test_what_the_workspaces_git_config_names_is_protected(void **state)
{
	char root[] = "/tmp/airlock-unit-git-XXXXXX", abs[600], cmd[700];
	_cleanup_(fusefs_rules_freep) struct fusefs_rules *rules = rules_for(NULL);
	int root_fd;

	(void)state;
	assert_non_null(mkdtemp(root));
	(void)snprintf(cmd, sizeof(cmd), "%s/.git", root);
	assert_int_equal(mkdir(cmd, 0700), 0);
	(void)snprintf(abs, sizeof(abs),
		       "[core]\n\thooksPath = tools/./hooks\n"
		       "[include]\n\tpath = ../team.gitconfig\n\tpath = ../../outside\n"
		       "\tpath = %s/abs.gitconfig\n\tpath = ~/.gitconfig\n"
		       "\tpath = ../linkdir/inc\n\tpath = ../cfg/extra.inc\n",
		       root);
	write_file(root, ".git/config", abs);
	write_file(root, "team.gitconfig", "[core]\n\thooksPath = ci/h**ks\n");
	write_file(root, "abs.gitconfig", "[include]\n\tpath = .git/more\n");
	(void)snprintf(cmd, sizeof(cmd), "%s/realdir", root);
	assert_int_equal(mkdir(cmd, 0700), 0);
	(void)snprintf(cmd, sizeof(cmd), "%s/linkdir", root);
	assert_int_equal(symlink("realdir", cmd), 0);
	root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(root_fd >= 0);
	assert_int_equal(fusefs_rules_protect_git(rules, root_fd, root), 0);
	(void)close(root_fd);
	check(rules,
	      (const struct expect[]){
		  {"tools/hooks/pre-commit", false, R | P},
		  {"tools/hooks", true, R | P},
		  {"team.gitconfig", false, R | P},
		  {"ci/h**ks/pre-push", false, R | P},
		  {"ci/hooks", true, R | P}, /* '*' is protected as '?': more, never less */
		  {"ci/other", true, R | W},
		  {"abs.gitconfig", false, R | P},
		  {".gitconfig.d", true, R | W},
		  {"tools/other", false, R | W},
		  {"outside", false, R | W},
		  /* the folders on the way: no link or folder may be put there */
		  {"tools", true, R | P},
		  {"cfg", true, R | P},
		  {"cfg/extra.inc", false, R | P},
		  {"cfg2", true, R | W},
		  /* where a link on the way leads today */
		  {"linkdir/inc", false, R | P},
		  {"realdir/inc", false, R | P},
		  {"realdir", true, R | P},
		  {"realdir/other", false, R | W},
	      },
	      18);
	assert_false(fusefs_rules_rename_is_uniform(rules, "tools", "tools2"));
	(void)snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
}

static void test_write_list_naming_git_config_lifts_its_protection(void **state)
{
	(void)state;
	CHECK("{'write': ['**', '.git/config']}", {".git/config", false, R | W},
	      {"sub/.git/config", false, R | W | C}, {".git/hooks/pre-commit", false, R | P});
	CHECK("{'write': ['**', 'sub/.envrc']}", {"sub/.envrc", false, R | W},
	      {".envrc", false, R | P});
}

static void test_write_list_holding_the_hooks_pattern_lifts_it_at_the_top_only(void **state)
{
	(void)state;
	CHECK("{'write': ['**', '.git/hooks/**']}", {".git/hooks", true, R | W},
	      {".git/hooks/pre-commit", false, R | W}, {"sub/.git/hooks/pre-commit", false, R | P},
	      {".git/config", false, R | W | C});
}

static void test_wildcards_do_not_lift_protection(void **state)
{
	(void)state;
	CHECK("{'write': ['.git/*', '**/.git/config', '.git/hooks/*', '.envr?']}",
	      {".git/config", false, R | W | C}, {".git/hooks/pre-commit", false, R | P},
	      {".envrc", false, R | P}, {".git/HEAD", false, R | W});
}

static void test_protected_bit_only_when_a_write_pattern_matches(void **state)
{
	(void)state;
	CHECK("{'write': ['src/**']}", {".envrc", false, R}, {".git/config", false, R},
	      {"src/.envrc", false, R | P});
}

static void test_deny_hides_a_protected_path(void **state)
{
	(void)state;
	CHECK("{'deny': ['.git']}", {".git/config", false, 0}, {".git/hooks", true, 0});
}

static void test_any_writable_is_false_only_when_nothing_can_be_written(void **state)
{
	static const struct {
		const char *workspace;
		bool writable;
	} cases[] = {
	    {"{}", true},
	    {"{'write': ['src/*.c']}", true},
	    {"{'write': ['**'], 'deny': ['**/.env']}", true},
	    {"{'write': ['.git/config']}", true},
	    {"{'write': ['a.txt'], 'read': ['a.txt']}", true},
	    {"{'write': []}", false},
	    {"{'read': []}", false},
	    {"{'write': ['secret/**'], 'deny': ['secret']}", false},
	    {"{'write': ['secret/*/x'], 'deny': ['**/secret']}", false},
	    {"{'write': ['a.txt'], 'deny': ['a.txt']}", false},
	    {"{'write': ['a.txt'], 'read': ['b.txt']}", false},
	    {"{'write': ['.envrc']}", true},
	    {"{'write': ['src/*.c'], 'deny': ['**']}", false},
	    {"{'write': ['*.c', 'a/b'], 'deny': ['*.c', 'a']}", false},
	};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		_cleanup_(fusefs_rules_freep) struct fusefs_rules *rules =
		    rules_for(cases[i].workspace);

		if (fusefs_rules_any_writable(rules) != cases[i].writable)
			fail_msg("any_writable(%s) != %d", cases[i].workspace, cases[i].writable);
	}
}

/* The attack: rename .git away, edit the config that is no longer protected, rename it back. */
static void test_rename_of_git_folder_is_not_uniform(void **state)
{
	_cleanup_(fusefs_rules_freep) struct fusefs_rules *rules = rules_for(NULL);

	(void)state;
	assert_false(fusefs_rules_rename_is_uniform(rules, ".git", "g2"));
	assert_false(fusefs_rules_rename_is_uniform(rules, "g2", ".git"));
	assert_false(fusefs_rules_rename_is_uniform(rules, "a/.git", "a/g2"));
	assert_false(fusefs_rules_rename_is_uniform(rules, ".vscode", "vscode"));
	/* Moving a folder with a .git inside keeps the .git at any depth protected. */
	assert_true(fusefs_rules_rename_is_uniform(rules, "repo", "old/repo"));
	/* As the rules see them: in any case, and a bare repository's NAME.git (fuzz-glob found
	 * the case in CI: "a/.gIt" moved to "zz" took the check off its config). */
	assert_false(fusefs_rules_rename_is_uniform(rules, "a/.gIt", "zz"));
	assert_false(fusefs_rules_rename_is_uniform(rules, "zz", "a/.GIT"));
	assert_false(fusefs_rules_rename_is_uniform(rules, "zz", "r.git"));
	assert_false(fusefs_rules_rename_is_uniform(rules, ".VSCode", "vscode"));
	assert_false(fusefs_rules_rename_is_uniform(rules, ".git/x/Sequencer", ".git/x/s"));
}

/* A folder renamed to another spelling of its name: where case is not folded (ext4, tmpfs), the
 * host's git and editors no longer find what was there. "mv .git/hooks .git/HOOKS" took the
 * host's hooks away, which "rm .git/hooks/pre-commit" may not (red team 2): such a rename of
 * what holds protected or git's files is not moved whole, and mv's copy file by file fails on
 * them. A folder that holds nothing the rules tell apart still moves in any spelling. */
static void test_rename_to_another_case_of_a_protected_folder_is_not_uniform(void **state)
{
	_cleanup_(fusefs_rules_freep) struct fusefs_rules *rules = rules_for(NULL);

	(void)state;
	assert_false(fusefs_rules_rename_is_uniform(rules, ".git/hooks", ".git/HOOKS"));
	assert_false(fusefs_rules_rename_is_uniform(rules, ".git/HOOKS", ".git/hooks"));
	assert_false(fusefs_rules_rename_is_uniform(rules, ".git", ".GIT"));
	assert_false(fusefs_rules_rename_is_uniform(rules, "a/r.git", "a/r.GIT"));
	assert_false(fusefs_rules_rename_is_uniform(rules, ".vscode", ".VSCODE"));
	assert_false(fusefs_rules_rename_is_uniform(rules, ".git/sequencer", ".git/SEQUENCER"));
	assert_true(fusefs_rules_rename_is_uniform(rules, "src", "SRC"));
	assert_true(fusefs_rules_rename_is_uniform(rules, ".git/objects", ".git/OBJECTS2"));
	assert_true(fusefs_rules_rename_is_uniform(rules, "repo", "REPO"));
}

/* On a file system that folds case (a casefold ext4 folder, vfat, exfat, SMB, WSL's drives),
 * ".GIT/hooks" is ".git/hooks": the built-in lists and git's names hold in any case. */
static void test_built_in_protection_holds_in_any_case(void **state)
{
	(void)state;
	CHECK(NULL, {".GIT/hooks/pre-commit", false, R | P}, {".git/HOOKS/pre-push", false, R | P},
	      {"a/.Git/Hooks/post-checkout", false, R | P}, {".BashRC", false, R | P},
	      {".VSCode/tasks.json", false, R | P}, {".GIT/CONFIG", false, R | W | C},
	      {"r.GIT/config", false, R | W | C}, {".git/SEQUENCER/todo", false, R | W | C},
	      {"sub/.GIT", false, R | W | C}, {"Head", false, R | W | C},
	      {".git/HOOKS/pre-commit.sample", false, R | W}, {"bashrc", false, R | W});
}

/* A file system that folds case folds more than ASCII: Linux's casefold (ext4, f2fs) takes
 * Unicode's full case folding, where "\u017f" (long s) is "s", the Kelvin sign is "k", "\u00df" is
 * "ss" and the ligature "\ufb01" is "fi"; NTFS and exFAT upcase "\u017f" to "S". So ".baXhrc"
 * with a long s is .bashrc there, and ".git/conXg" with the ligature is git's config (red team). */
static void test_protection_holds_for_letters_that_fold_to_ascii(void **state)
{
	_cleanup_(fusefs_rules_freep) struct fusefs_rules *rules = rules_for(NULL);

	(void)state;
	/* a link at hooks (Kelvin sign) to a name of .git: hooks that nothing protects */
	assert_false(fusefs_rules_may_symlink(rules, ".git/hoo\xe2\x84\xaas", "h"));
	assert_false(fusefs_rules_may_symlink(rules, ".git/con\xef\xac\x81g", "c"));
	assert_true(fusefs_rules_may_symlink(rules, ".git/hoo\xe2\x84\xaa", "h"));
	CHECK(NULL, {".ba\xc5\xbfhrc", false, R | P},
	      {".git/hoo\xe2\x84\xaas/pre-commit", false, R | P},
	      {".git/hook\xc5\xbf/pre-commit", false, R | P}, {".pro\xef\xac\x81le", false, R | P},
	      {".git/con\xef\xac\x81g", false, R | W | C}, {".gitmodule\xc5\xbf", false, R | W | C},
	      {".git/\xc5\xbf"
	       "equencer/todo",
	       false, R | W | C},
	      {".git/rebase-merge/\xef\xac\x86rategy", false, R | W | C},
	      {".git/rebase-merge/git-reba\xc5\xbf"
	       "e-todo",
	       false, R | W | C},
	      {".git/\xc5\xbf"
	       "equencer/opt\xc5\xbf",
	       false, R | W | C},
	      {"\xc3\xa9", false, R | W}, {"con\xef\xac\x81g", false, R | W});
	CHECK("{'read': ['**'], 'write': ['**'], 'deny': ['secrets', 'keys/*.pem', 'glass']}",
	      {"\xc5\xbf"
	       "ecrets/key",
	       false, 0},
	      {"SECRET\xc5\xbf", true, 0},
	      {"\xe2\x84\xaa"
	       "eys/a.pem",
	       false, 0},
	      {"gla\xc3\x9f", true, 0}, {"gla\xe1\xba\x9e/x", false, 0}, {"secret", false, R | W});
}

static void test_rename_under_uniform_rules_is_uniform(void **state)
{
	_cleanup_(fusefs_rules_freep) struct fusefs_rules *rules =
	    rules_for("{'read': ['**'], 'write': ['**'], 'deny': ['**/.env']}");

	(void)state;
	assert_true(fusefs_rules_rename_is_uniform(rules, "src/a", "src/b"));
	assert_true(fusefs_rules_rename_is_uniform(rules, "src", "lib/deep/er"));
}

static void test_rename_across_a_write_boundary_is_not_uniform(void **state)
{
	_cleanup_(fusefs_rules_freep) struct fusefs_rules *rules =
	    rules_for("{'write': ['src/**'], 'deny': ['secret']}");

	(void)state;
	assert_true(fusefs_rules_rename_is_uniform(rules, "src/a", "src/b/c"));
	assert_true(fusefs_rules_rename_is_uniform(rules, "docs", "old/docs"));
	assert_false(fusefs_rules_rename_is_uniform(rules, "src/a", "docs/a"));
	assert_false(fusefs_rules_rename_is_uniform(rules, "docs", "src"));
	assert_false(fusefs_rules_rename_is_uniform(rules, "a", "secret/a"));
}

static void test_rename_under_a_pattern_that_reads_the_parent_name_is_not_uniform(void **state)
{
	_cleanup_(fusefs_rules_freep) struct fusefs_rules *rules =
	    rules_for("{'deny': ['**/a/b', 'x/*/key']}");

	(void)state;
	/* "x/a" + "b" is denied, "y" + "b" is not. */
	assert_false(fusefs_rules_rename_is_uniform(rules, "x/a", "y"));
	assert_true(fusefs_rules_rename_is_uniform(rules, "q/c", "y/c"));
	/* "x/c" + "key" is denied, "y/c" + "key" is not. */
	assert_false(fusefs_rules_rename_is_uniform(rules, "x/c", "y/c"));
	assert_false(fusefs_rules_rename_is_uniform(rules, "x", "z"));
	assert_true(fusefs_rules_rename_is_uniform(rules, "x/c", "x/d"));
}

static const char *const names[] = {"a", "b", ".git", "src", "hooks", "config", ".env"};

/* Writes path number i of the paths of one to max components over names into buf; false past
 * the last one. */
static bool nth_path(size_t i, size_t max, char *buf, size_t size)
{
	size_t len = 1, count = ELEMENTSOF(names), o = 0;

	for (; i >= count; len++) {
		if (len == max)
			return false;
		i -= count;
		count *= ELEMENTSOF(names);
	}
	for (size_t k = 0; k < len; k++, i /= ELEMENTSOF(names))
		o += (size_t)snprintf(buf + o, size - o, "%s%s", k > 0 ? "/" : "",
				      names[i % ELEMENTSOF(names)]);
	return true;
}

/* Every path below from decides as the same path below to: paths of up to four components in
 * all, which is as deep as the patterns of the test reach. */
static void check_same_below(const struct fusefs_rules *rules, const char *from, const char *to)
{
	size_t depth = strchr(from, '/') || strchr(to, '/') ? 2 : 3;
	char below[64], path_from[128], path_to[128];

	for (size_t x = 0; nth_path(x, depth, below, sizeof(below)); x++) {
		(void)snprintf(path_from, sizeof(path_from), "%s/%s", from, below);
		(void)snprintf(path_to, sizeof(path_to), "%s/%s", to, below);
		for (int d = 0; d < 2; d++)
			if (fusefs_rules_decide(rules, path_from, d) !=
			    fusefs_rules_decide(rules, path_to, d))
				fail_msg("%s -> %s is called uniform, but %s and %s differ", from,
					 to, path_from, path_to);
	}
}

/* Whenever a rename is called uniform, every path below decides the same at both places. */
static void test_uniform_rename_keeps_every_decision_below(void **state)
{
	static const char *const workspaces[] = {
	    NULL,
	    "{'read': ['src/**', '**/*.md'], 'write': ['src/*/b/**'], 'deny': ['**/.env']}",
	    "{'write': ['**', '.git/config', 'a'], 'deny': ['a/*/b', '*/.git/*']}",
	    "{'read': ['**/a/**'], 'write': ['a/b', '**/b/**', '.git/hooks/**']}",
	};
	char from[64], to[64];
	unsigned uniform = 0, pairs = 0;

	(void)state;
	for (size_t w = 0; w < ELEMENTSOF(workspaces); w++) {
		_cleanup_(fusefs_rules_freep) struct fusefs_rules *rules = rules_for(workspaces[w]);

		for (size_t f = 0; nth_path(f, 2, from, sizeof(from)); f++)
			for (size_t t = 0; nth_path(t, 2, to, sizeof(to)); t++) {
				pairs++;
				if (!fusefs_rules_rename_is_uniform(rules, from, to))
					continue;
				uniform++;
				check_same_below(rules, from, to);
			}
	}
	/* Not all, not none: both answers were exercised. */
	assert_true(uniform > 0 && uniform < pairs);
	print_message("# %u of %u renames uniform, each checked below\n", uniform, pairs);
}

/* The invariants of the header, over many paths and rules. */
static void test_write_implies_read_and_protected_excludes_write(void **state)
{
	static const char *const workspaces[] = {
	    NULL,
	    "{'read': ['src/**', '**/*.md'], 'write': ['src/**', '.envrc'], 'deny': ['**/tmp']}",
	    "{'read': ['a/*'], 'write': ['**']}",
	};
	static const char *const paths[] = {
	    "",		  "a",		 "a/b",		  "src",       "src/x.c",  ".envrc",
	    "src/.envrc", "src/tmp/x",	 ".git/hooks/x",  "docs/r.md", "docs/tmp", "a/b/c",
	    ".git",	  ".git/config", "src/.vscode/x", "x/y/z.md",  "tmp/a.md",
	};

	(void)state;
	for (size_t w = 0; w < ELEMENTSOF(workspaces); w++) {
		_cleanup_(fusefs_rules_freep) struct fusefs_rules *rules = rules_for(workspaces[w]);

		for (size_t i = 0; i < ELEMENTSOF(paths); i++)
			for (int d = 0; d < 2; d++) {
				unsigned v = fusefs_rules_decide(rules, paths[i], d);

				if ((v & W) && !(v & R))
					fail_msg("\"%s\": WRITE without READ", paths[i]);
				if ((v & P) && ((v & W) || !(v & R)))
					fail_msg("\"%s\": PROTECTED with %#x", paths[i], v);
				if ((v & T) && (v & ~T))
					fail_msg("\"%s\": TRAVERSE with %#x", paths[i], v);
				if (paths[i][0] == '\0' && v == 0)
					fail_msg("the root is hidden");
			}
	}
}

static void test_hostile_long_path_is_decided(void **state)
{
	_cleanup_(fusefs_rules_freep) struct fusefs_rules *rules =
	    rules_for("{'read': ['**/a/**/b/**'], 'write': ['**/a/*/a/**'], 'deny': ['**/a/c']}");
	char path[4096];
	size_t o = 0;

	(void)state;
	while (o + 2 < sizeof(path)) {
		path[o++] = 'a';
		path[o++] = '/';
	}
	path[o - 1] = '\0';
	assert_int_equal(fusefs_rules_decide(rules, path, true), T);
	path[o - 2] = 'b';
	assert_int_equal(fusefs_rules_decide(rules, path, false), R | W);
	path[o - 2] = 'c';
	assert_int_equal(fusefs_rules_decide(rules, path, true), 0);
	assert_false(fusefs_rules_rename_is_uniform(rules, path, "a"));
}

static void test_rules_refuse_a_pattern_the_policy_would_refuse(void **state)
{
	static const char *const bad[] = {"",	  "/abs",  "a//b",   "a/./b",
					  "../x", "a/**b", "a/\x01", "a/"};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		_cleanup_(policy_freep) struct policy *p = NULL;
		struct fusefs_rules *rules = NULL;
		struct al_error err = {0};

		assert_int_equal(policy_new_default(&p), 0);
		free(p->workspace.write.items[0]);
		p->workspace.write.items[0] = strdup(bad[i]);
		assert_non_null(p->workspace.write.items[0]);
		assert_int_equal(fusefs_rules_new(p, &rules, &err), -EINVAL);
		assert_null(rules);
		assert_string_equal(err.msg, "workspace.write[0]: not a valid pattern");
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_default_policy_reads_and_writes_everything),
	    cmocka_unit_test(test_absent_lists_mean_the_same_as_the_default),
	    cmocka_unit_test(test_star_matches_dotfiles),
	    cmocka_unit_test(test_read_pattern_makes_only_what_it_matches_visible),
	    cmocka_unit_test(test_folder_leading_to_readable_paths_is_traversable),
	    cmocka_unit_test(test_path_below_a_hidden_folder_is_hidden),
	    cmocka_unit_test(test_root_is_always_at_least_traversable),
	    cmocka_unit_test(test_write_needs_read),
	    cmocka_unit_test(test_write_list_limits_what_is_writable),
	    cmocka_unit_test(test_empty_write_list_makes_everything_read_only),
	    cmocka_unit_test(test_empty_read_list_hides_everything),
	    cmocka_unit_test(test_deny_wins_over_read_and_write),
	    cmocka_unit_test(test_deny_holds_in_any_case_read_and_write_match_exactly),
	    cmocka_unit_test(test_deny_hides_everything_below_a_denied_folder),
	    cmocka_unit_test(test_denied_folder_hides_readable_paths_below_it),
	    cmocka_unit_test(test_git_config_is_content_checked_at_any_depth),
	    cmocka_unit_test(test_hooks_of_every_git_folder_are_protected_but_samples),
	    cmocka_unit_test(test_built_in_protection_holds_in_any_case),
	    cmocka_unit_test(test_protection_holds_for_letters_that_fold_to_ascii),
	    cmocka_unit_test(test_git_folders_are_writable_but_what_git_reads_as_settings),
	    cmocka_unit_test(test_symbolic_links_are_refused_at_and_below_git),
	    cmocka_unit_test(test_protect_false_lifts_every_entry_and_check),
	    cmocka_unit_test(test_lifting_git_config_by_name_lifts_its_check_there_only),
	    cmocka_unit_test(test_every_builtin_entry_is_protected),
	    cmocka_unit_test(test_git_config_paths_follow_gits_syntax),
	    cmocka_unit_test(test_what_the_workspaces_git_config_names_is_protected),
	    cmocka_unit_test(test_write_list_naming_git_config_lifts_its_protection),
	    cmocka_unit_test(test_write_list_holding_the_hooks_pattern_lifts_it_at_the_top_only),
	    cmocka_unit_test(test_wildcards_do_not_lift_protection),
	    cmocka_unit_test(test_protected_bit_only_when_a_write_pattern_matches),
	    cmocka_unit_test(test_deny_hides_a_protected_path),
	    cmocka_unit_test(test_any_writable_is_false_only_when_nothing_can_be_written),
	    cmocka_unit_test(test_rename_of_git_folder_is_not_uniform),
	    cmocka_unit_test(test_rename_to_another_case_of_a_protected_folder_is_not_uniform),
	    cmocka_unit_test(test_rename_under_uniform_rules_is_uniform),
	    cmocka_unit_test(test_rename_across_a_write_boundary_is_not_uniform),
	    cmocka_unit_test(test_rename_under_a_pattern_that_reads_the_parent_name_is_not_uniform),
	    cmocka_unit_test(test_uniform_rename_keeps_every_decision_below),
	    cmocka_unit_test(test_write_implies_read_and_protected_excludes_write),
	    cmocka_unit_test(test_hostile_long_path_is_decided),
	    cmocka_unit_test(test_rules_refuse_a_pattern_the_policy_would_refuse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
