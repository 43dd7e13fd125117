#!/usr/bin/env bash
# Other spellings of what the workspace protects (red team 2). A folder that holds protected or
# git's files does not move whole to another case of its name: on ext4 ".git/HOOKS" is not the
# folder git runs hooks from, so "mv .git/hooks .git/HOOKS" took the host's hooks away (which
# removing them may not). And the letters a casefold file system makes ASCII ones (long s,
# Kelvin sign, the ligatures) spell the protected names too: on casefold ext4 ".ba\u017fhrc" is
# .bashrc and ".git/con\ufb01g" git's config. The proof is the host's git: its own hook still runs.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

command -v git >/dev/null || it_skip "git is not installed"
host_git()
{
	git -C "$WS" -c user.email=it@airlock.test -c user.name=it "$@"
}
host_git init -q .
proof=$IT_TMP/host-hook-ran
printf '#!/bin/sh\necho ran >%s\n' "$proof" >"$WS/.git/hooks/pre-commit"
chmod +x "$WS/.git/hooks/pre-commit"
echo one >"$WS/f"
host_git add f
rm -f "$proof"

# The sandbox tries each; every one must be refused.
try()
{
	sb_sh "cd /workspace && { $1; } 2>/dev/null && echo WROTE || echo REFUSED"
	assert_eq REFUSED "$(tail -n 1 <<<"$AL_OUT")" "$2"
}
try "mv .git/hooks .git/HOOKS" "the hooks folder does not move to another case of its name"
try "mv .git .GIT" ".git does not move to another case of its name"
try "mv .git/hooks .git/Hooks" "nor to a third spelling"
try "rm .git/hooks/pre-commit" "the host's hook cannot be removed"
try "echo x >.ba$(printf '\xc5\xbf')hrc" ".bashrc with a long s is refused"
try "mkdir -p .git/hoo$(printf '\xe2\x84\xaa')s && echo x >.git/hoo$(printf '\xe2\x84\xaa')s/post-checkout" \
	"hooks with a Kelvin sign is refused"
fig=".git/con$(printf '\xef\xac\x81')g"
sb_sh "cd /workspace && printf '[core]\\n\\tfsmonitor = /workspace/x\\n' >'$fig'; echo done"
assert_false "git's config with the fi ligature is content-checked" grep -qs fsmonitor "$WS/$fig"
sb_sh 'cd /workspace && mkdir src && mv src SRC && echo two >>f && echo ok'
assert_eq ok "$(tail -n 1 <<<"$AL_OUT")" "a folder of nothing protected moves in any case"

assert_true "the hook is where git runs it" test -x "$WS/.git/hooks/pre-commit"
host_git commit -qm one
assert_true "the host's commit ran the host's hook" test -e "$proof"
assert_false "no file of a folded spelling was made" test -e "$WS/.ba$(printf '\xc5\xbf')hrc"
it_finish
