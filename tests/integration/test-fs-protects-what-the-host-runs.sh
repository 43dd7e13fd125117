#!/usr/bin/env bash
# Files the host runs later stay out of the sandbox's reach even where git or a tool moved them:
# the folder the workspace's core.hooksPath names (husky, lefthook, pre-commit point git there),
# the config files its include.path names, and the hook managers', shells' and coding agents'
# own files. The proof is the host's own git: a commit after the run runs no hook the sandbox
# wrote.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

command -v git >/dev/null || it_skip "git is not installed"
host_git()
{
	git -C "$WS" -c user.email=it@airlock.test -c user.name=it "$@"
}
host_git init -q .
host_git config core.hooksPath ci/git-hooks
host_git config include.path ../team.gitconfig
mkdir -p "$WS/ci/git-hooks" "$WS/.husky"
echo '[alias] st = status' >"$WS/team.gitconfig"
echo one >"$WS/f"
host_git add f
host_git commit -qm one
proof=$IT_TMP/hook-ran

# The sandbox tries each; every one must be refused.
try()
{
	sb_sh "cd /workspace && $1 && echo WROTE || echo REFUSED"
	assert_eq REFUSED "$(tail -n 1 <<<"$AL_OUT")" "$2"
}
hook="printf '#!/bin/sh\\necho ran > $proof\\n'"
try "$hook >ci/git-hooks/pre-commit && chmod +x ci/git-hooks/pre-commit" \
	"a hook in the folder core.hooksPath names is refused"
try "mv ci/git-hooks ci/old && mkdir ci/git-hooks && $hook >ci/git-hooks/pre-commit" \
	"moving the hooks folder away to make a new one is refused"
try "printf '[core]\\n\\tfsmonitor = /workspace/x\\n' >>team.gitconfig" \
	"the config file include.path names is refused"
try "$hook >.husky/pre-commit" ".husky/ is refused"
try "echo 'repos: []' >.pre-commit-config.yaml" ".pre-commit-config.yaml is refused"
try "echo '{}' >.mcp.json" ".mcp.json is refused"
try "mkdir -p .claude && echo '{}' >.claude/settings.json" ".claude/settings.json is refused"
try "echo 'echo hi' >.zshrc" ".zshrc is refused"
try "echo '{}' >.devcontainer.json" ".devcontainer.json is refused"
try "mkdir -p .claude/hooks && echo 'echo hi' >.claude/hooks/pre.sh" ".claude/hooks is refused"
try "echo 'node-options=--require /workspace/x.js' >.npmrc" ".npmrc is refused"
# Other spellings: on a folder that folds case (this kernel has none to test with: no
# CONFIG_UNICODE, no vfat) they are the same files, so they are refused everywhere.
try "mkdir -p .GIT/Hooks && $hook >.GIT/Hooks/pre-commit" ".GIT/Hooks/pre-commit is refused"
try "mkdir -p CI/Git-Hooks && $hook >CI/Git-Hooks/pre-commit" \
	"another spelling of the folder core.hooksPath names is refused"
try "echo 'echo hi' >.ZshRC" ".ZshRC is refused"
sb_sh 'cd /workspace && echo two >>f && mkdir -p ci/other && echo x >ci/other/y && echo ok'
assert_eq ok "$AL_OUT" "the rest of the workspace stays writable"

echo three >>"$WS/f"
host_git commit -qam three
assert_false "the host's next commit ran no hook of the sandbox's" test -e "$proof"
assert_eq "" "$(ls "$WS/ci/git-hooks")" "the hooks folder is as the host left it"
assert_eq '[alias] st = status' "$(cat "$WS/team.gitconfig")" "the included config is unchanged"

# Where the config names paths that do not exist yet, or that lead through a link: no link may be
# put on their way, and what a link already leads to is protected too (found by review: the hook
# ran after "ln -s x tools; x/hooks/pre-commit").
ws2=$IT_TMP/ws2
mkdir -p "$ws2/realdir"
ln -s realdir "$ws2/linkdir"
git -C "$ws2" init -q .
git -C "$ws2" config core.hooksPath tools/hooks
git -C "$ws2" config --add include.path ../cfg/extra.inc
git -C "$ws2" config --add include.path ../linkdir/inc
try2()
{
	al_run run -w "$ws2" -- /bin/sh -c "cd /workspace && $1 && echo WROTE || echo REFUSED"
	assert_eq REFUSED "$(tail -n 1 <<<"$AL_OUT")" "$2"
}
try2 "mkdir -p x/hooks && ln -s x tools" "a link where core.hooksPath's folder is to be is refused"
try2 "mkdir -p y && ln -s y cfg" "a link where an include path's folder is to be is refused"
try2 "mkdir tools" "a folder where core.hooksPath's folder is to be is refused"
try2 "echo '[core] fsmonitor = x' >>realdir/inc" "the file an include path reaches through a link is refused"
git -C "$ws2" -c user.email=it@airlock.test -c user.name=it commit -q --allow-empty -m one
assert_false "the host's commit in that repository ran no hook of the sandbox's" test -e "$proof"

# A policy that names the folder in workspace.write lifts it, as for the built-in entries.
write_policy "$IT_TMP/lift.json" <<EOF2
{"workspace": {"root": "$WS", "write": ["**", "ci/git-hooks/pre-push"]}}
EOF2
al_run run -p "$IT_TMP/lift.json" -- /bin/sh -c 'echo x >/workspace/ci/git-hooks/pre-push && echo ok'
assert_eq ok "$AL_OUT" "naming the hook in workspace.write lifts its protection"

it_finish
