/* What a file git reads may say when the sandbox writes it: fusefs_git_check() (git-config.c). */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "fusefs/fusefs-internal.h"

static const struct fusefs_git_where where = {
    .dir = "a/.git", .root = "/home/u/ws", .mount = "/workspace"};

/* A submodule's git folder, where git writes core.worktree. */
static const struct fusefs_git_where module = {
    .dir = "a/.git/modules/s", .root = "/home/u/ws", .mount = "/workspace"};

/* 0 when text passes as kind in at; else what was refused. */
static const char *check_at(const struct fusefs_git_where *at, enum fusefs_git_check kind,
			    const char *text)
{
	static char why[256];

	why[0] = '\0';
	if (fusefs_git_check(kind, text, strlen(text), at, why, sizeof(why)) == 0)
		return NULL;
	assert_true(why[0] != '\0');
	return why;
}

static const char *check(enum fusefs_git_check kind, const char *text)
{
	return check_at(&where, kind, text);
}

#define ALLOWED(kind, text) assert_null(check(kind, text))
#define REFUSED(kind, text, what) assert_string_equal(check(kind, text), what)

static void test_config_git_writes_on_init_and_clone_is_allowed(void **state)
{
	(void)state;
	ALLOWED(FUSEFS_GIT_CHECK_CONFIG, "");
	ALLOWED(FUSEFS_GIT_CHECK_CONFIG,
		"[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n"
		"\tlogallrefupdates = true\n[remote \"origin\"]\n\turl = /workspace/o.git\n"
		"\tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n"
		"\tremote = origin\n\tmerge = refs/heads/main\n[submodule \"s\"]\n"
		"\tactive = true\n\turl = ../s.git\n[user]\n\tname = A\n\temail = a@b\n");
	ALLOWED(FUSEFS_GIT_CHECK_CONFIG,
		"\xef\xbb\xbf# c\n; c\n[core] bare\n[Core]\n\tFileMode=1\r\n");
	ALLOWED(FUSEFS_GIT_CHECK_CONFIG, "[remote.origin]\nurl = \"x\" # comment\n");
}

static void test_config_keys_that_run_commands_are_refused(void **state)
{
	(void)state;
	REFUSED(FUSEFS_GIT_CHECK_CONFIG, "[core]\n\tfsmonitor = x\n", "core.fsmonitor");
	REFUSED(FUSEFS_GIT_CHECK_CONFIG, "[core]\nhooksPath = h\n", "core.hookspath");
	REFUSED(FUSEFS_GIT_CHECK_CONFIG, "[core]\nsshCommand = x\n", "core.sshcommand");
	REFUSED(FUSEFS_GIT_CHECK_CONFIG, "[core]\neditor = x\n", "core.editor");
	REFUSED(FUSEFS_GIT_CHECK_CONFIG, "[sequence]\neditor = x\n", "sequence.editor");
	REFUSED(FUSEFS_GIT_CHECK_CONFIG, "[core]\npager = x\n", "core.pager");
	REFUSED(FUSEFS_GIT_CHECK_CONFIG, "[pager]\nlog = x\n", "pager.log");
	REFUSED(FUSEFS_GIT_CHECK_CONFIG, "[alias]\nst = !x\n", "alias.st");
	REFUSED(FUSEFS_GIT_CHECK_CONFIG, "[filter \"a\"]\nsmudge = x\n", "filter.a.smudge");
	REFUSED(FUSEFS_GIT_CHECK_CONFIG, "[diff \"a\"]\ntextconv = x\n", "diff.a.textconv");
	REFUSED(FUSEFS_GIT_CHECK_CONFIG, "[diff]\nexternal = x\n", "diff.external");
	REFUSED(FUSEFS_GIT_CHECK_CONFIG, "[merge \"a\"]\ndriver = x\n", "merge.a.driver");
	REFUSED(FUSEFS_GIT_CHECK_CONFIG, "[credential]\nhelper = x\n", "credential.helper");
	REFUSED(FUSEFS_GIT_CHECK_CONFIG, "[include]\npath = x\n", "include.path");
	REFUSED(FUSEFS_GIT_CHECK_CONFIG, "[includeIf \"gitdir:/\"]\npath = x\n",
		"includeif.gitdir:/.path");
	REFUSED(FUSEFS_GIT_CHECK_CONFIG, "[url \"x\"]\ninsteadOf = y\n", "url.x.insteadof");
	REFUSED(FUSEFS_GIT_CHECK_CONFIG, "[remote \"o\"]\nuploadpack = x\n", "remote.o.uploadpack");
	REFUSED(FUSEFS_GIT_CHECK_CONFIG, "[protocol \"ext\"]\nallow = always\n",
		"protocol.ext.allow");
	REFUSED(FUSEFS_GIT_CHECK_CONFIG, "[gpg]\nprogram = x\n", "gpg.program");
	/* a setting without a subsection where one is needed, and the reverse */
	REFUSED(FUSEFS_GIT_CHECK_CONFIG, "[remote]\nurl = x\n", "remote.url");
	REFUSED(FUSEFS_GIT_CHECK_CONFIG, "[core \"x\"]\nbare = true\n", "core.x.bare");
	/* a key before any section */
	REFUSED(FUSEFS_GIT_CHECK_CONFIG, "abc\n", "abc");
}

static void test_config_values_are_checked_where_they_lead(void **state)
{
	(void)state;
	REFUSED(FUSEFS_GIT_CHECK_CONFIG, "[submodule \"s\"]\nupdate = !sh x\n",
		"submodule.s.update");
	ALLOWED(FUSEFS_GIT_CHECK_CONFIG, "[submodule \"s\"]\nupdate = rebase\n");
	REFUSED(FUSEFS_GIT_CHECK_CONFIG, "[remote \"o\"]\nurl = ext::sh -c x\n", "remote.o.url");
	REFUSED(FUSEFS_GIT_CHECK_CONFIG, "[remote \"o\"]\nurl = -oProxyCommand=x\n",
		"remote.o.url");
	ALLOWED(FUSEFS_GIT_CHECK_CONFIG, "[remote \"o\"]\nurl = https://example.com/x.git\n");
	/* core.worktree: only a submodule's, to a folder of the workspace outside git's (found by
	 * review: "worktree = hooks" made the host's checkout write a hook) */
	REFUSED(FUSEFS_GIT_CHECK_CONFIG, "[core]\nworktree = ../..\n", "core.worktree");
	REFUSED(FUSEFS_GIT_CHECK_CONFIG, "[core]\nworktree = hooks\n", "core.worktree");
	REFUSED(FUSEFS_GIT_CHECK_CONFIG, "[core]\nworktree = /workspace/a\n", "core.worktree");
	assert_null(check_at(&module, FUSEFS_GIT_CHECK_CONFIG, "[core]\nworktree = ../../../s\n"));
	assert_string_equal(
	    check_at(&module, FUSEFS_GIT_CHECK_CONFIG, "[core]\nworktree = hooks\n"),
	    "core.worktree");
	assert_string_equal(
	    check_at(&module, FUSEFS_GIT_CHECK_CONFIG, "[core]\nworktree = ../../../.git\n"),
	    "core.worktree");
	assert_string_equal(
	    check_at(&module, FUSEFS_GIT_CHECK_CONFIG, "[core]\nworktree = ../../../o.GIT/x\n"),
	    "core.worktree");
	assert_string_equal(
	    check_at(&module, FUSEFS_GIT_CHECK_CONFIG, "[core]\nworktree = /workspace/s\n"),
	    "core.worktree");
	assert_string_equal(
	    check_at(&module, FUSEFS_GIT_CHECK_CONFIG, "[core]\nworktree = ../../../../..\n"),
	    "core.worktree");
	REFUSED(FUSEFS_GIT_CHECK_CONFIG, "[core]\nsharedRepository = 0777\n",
		"core.sharedrepository");
	REFUSED(FUSEFS_GIT_CHECK_CONFIG, "[options]\nstrategy = ../x\n", "options.strategy");
}

/* A HEAD git would take makes its folder a git folder: outside ".git" and "NAME.git" folders
 * (the only kind whose config is checked), it is refused (found by review: a bare repository
 * made at the workspace's root ran core.fsmonitor on the host). */
static void test_head_outside_git_folders_is_no_git_head(void **state)
{
	(void)state;
	REFUSED(FUSEFS_GIT_CHECK_HEAD, "ref: refs/heads/main\n",
		"a git HEAD outside a .git or NAME.git folder");
	REFUSED(FUSEFS_GIT_CHECK_HEAD, "  ref:refs/x",
		"a git HEAD outside a .git or NAME.git folder");
	REFUSED(FUSEFS_GIT_CHECK_HEAD, "0123456789abcdef0123456789abcdef01234567\n",
		"a git HEAD outside a .git or NAME.git folder");
	ALLOWED(FUSEFS_GIT_CHECK_HEAD, "The head of the project\n");
	ALLOWED(FUSEFS_GIT_CHECK_HEAD, "");
}

/* What git's parser reads differently, or refuses, is refused whole. */
static void test_config_git_would_read_otherwise_is_refused(void **state)
{
	(void)state;
	REFUSED(FUSEFS_GIT_CHECK_CONFIG, "[core]\nbare = \"x\n", "core.bare (malformed)");
	REFUSED(FUSEFS_GIT_CHECK_CONFIG, "[core]\nbare = \\q\n", "core.bare (malformed)");
	REFUSED(FUSEFS_GIT_CHECK_CONFIG, "[core]\nbare # x\n", "core.bare (malformed)");
	REFUSED(FUSEFS_GIT_CHECK_CONFIG, "[core\nbare\n", "a malformed section");
	REFUSED(FUSEFS_GIT_CHECK_CONFIG, "[]\n", "a malformed section");
	REFUSED(FUSEFS_GIT_CHECK_CONFIG, "[core]\nhooks.path = x\n", "core.hooks (malformed)");
	/* a value going on on the next line hides no key there */
	REFUSED(FUSEFS_GIT_CHECK_CONFIG, "[user]\nname = a \\\n[core]\nfsmonitor = x\n",
		"user.fsmonitor");
	ALLOWED(FUSEFS_GIT_CHECK_CONFIG, "[user]\nname = \"a \\\n[core] fsmonitor = x\"\n");
	/* after a header, a key on the same line */
	REFUSED(FUSEFS_GIT_CHECK_CONFIG, "[user] name = a\n[core] fsmonitor = x", "core.fsmonitor");
	REFUSED(FUSEFS_GIT_CHECK_CONFIG, "[user]\n0 = x\n", "a malformed line");
}

static void test_gitfile_must_lead_to_a_git_folder_of_the_workspace(void **state)
{
	(void)state;
	/* where = a/.git, as if the file were a/.git/x */
	ALLOWED(FUSEFS_GIT_CHECK_GITFILE, "gitdir: ../.git/modules/s\n");
	REFUSED(FUSEFS_GIT_CHECK_GITFILE, "gitdir: ../modules/s\n",
		"gitdir: not a git folder of the workspace");
	ALLOWED(FUSEFS_GIT_CHECK_GITFILE, "gitdir: /workspace/.git/worktrees/w\n");
	ALLOWED(FUSEFS_GIT_CHECK_GITFILE, "gitdir: /home/u/ws/b/.git/modules/x");
	REFUSED(FUSEFS_GIT_CHECK_GITFILE, "gitdir: ../../g\n",
		"gitdir: not a git folder of the workspace");
	REFUSED(FUSEFS_GIT_CHECK_GITFILE, "gitdir: /tmp/.git\n",
		"gitdir: not a git folder of the workspace");
	REFUSED(FUSEFS_GIT_CHECK_GITFILE, "gitdir: ../../../.git\n",
		"gitdir: not a git folder of the workspace");
	REFUSED(FUSEFS_GIT_CHECK_GITFILE, "gitdir: x/../../.git\n",
		"gitdir: not a git folder of the workspace");
	REFUSED(FUSEFS_GIT_CHECK_GITFILE, "gitdir: /workspace/../.git\n",
		"gitdir: not a git folder of the workspace");
	REFUSED(FUSEFS_GIT_CHECK_GITFILE, "../.git\n", "gitdir: not a git folder of the workspace");
	ALLOWED(FUSEFS_GIT_CHECK_COMMONDIR, "../.git\n");
	REFUSED(FUSEFS_GIT_CHECK_COMMONDIR, "../../elsewhere\n",
		"not a git folder of the workspace");
	ALLOWED(FUSEFS_GIT_CHECK_GITDIR, "/workspace/wt/.git\n");
	REFUSED(FUSEFS_GIT_CHECK_GITDIR, "/etc/x\n", "not a path of the workspace");
}

static void test_todo_lists_hold_no_exec_line(void **state)
{
	(void)state;
	ALLOWED(FUSEFS_GIT_CHECK_TODO, "pick 1234 a\n# exec x\nfixup 5678 b\n");
	REFUSED(FUSEFS_GIT_CHECK_TODO, "pick 1234 a\nexec make\n", "an exec line");
	REFUSED(FUSEFS_GIT_CHECK_TODO, "  x\tmake", "an exec line");
	ALLOWED(FUSEFS_GIT_CHECK_STRATEGY, "ort\n");
	REFUSED(FUSEFS_GIT_CHECK_STRATEGY, "../x\n", "a strategy git has not built in");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_config_git_writes_on_init_and_clone_is_allowed),
	    cmocka_unit_test(test_config_keys_that_run_commands_are_refused),
	    cmocka_unit_test(test_config_values_are_checked_where_they_lead),
	    cmocka_unit_test(test_config_git_would_read_otherwise_is_refused),
	    cmocka_unit_test(test_head_outside_git_folders_is_no_git_head),
	    cmocka_unit_test(test_gitfile_must_lead_to_a_git_folder_of_the_workspace),
	    cmocka_unit_test(test_todo_lists_hold_no_exec_line),
	};

	return cmocka_run_group_tests_name("fusefs-git-check", tests, NULL, NULL);
}
