#!/usr/bin/env bash
# git works in the workspace at the root and at any depth (init, clone, commit, fetch, checkout,
# rebase, worktree add, submodules), while what the host's git would later run stays inert: no
# hook can be written (created, changed, renamed or linked onto), config files (.git/config,
# .gitmodules...) take only settings of an allow-list, checked before the host can read them
# at their name (a second name, an fd kept open, a folder moved there change nothing), and a
# ".git" file leads only to a git folder of the workspace. workspace.protect=false lifts it all.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

command -v git >/dev/null || it_skip "git is not installed"
proof=$IT_TMP/ran
GIT_ENV='export HOME=/tmp GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@b GIT_COMMITTER_NAME=a
export GIT_COMMITTER_EMAIL=a@b; g() { git -c protocol.file.allow=always "$@"; }; cd /workspace'
sb_git() # SCRIPT: runs it in the sandbox with --json; AL_OUT is the command's stdout
{
	al_run run -w "$WS" --json -- /bin/sh -c "$GIT_ENV; $1" "$IT_MARK"
	VIOLATIONS=$(json_get "$IT_TMP/al.out" '" ".join(v["detail"] for v in d["violations"])')
	AL_OUT=$(json_get "$IT_TMP/al.out" 'd["stdout"]')
	if [ -n "${IT_DEBUG:-}" ]; then cat "$IT_TMP/al.out" "$IT_TMP/al.err" >&2; fi
}

# ---- every git command at the root and at depth ----
sb_git 'set -e
git init -q -b main --bare origin.git
git init -q -b main lib && (cd lib && echo l >l && git add l && git commit -qm lib)
for d in . a/b/c; do
	mkdir -p $d && cd /workspace/$d && git init -q -b main r && cd r
	echo a >f && git add f && git commit -qm one && echo "init+commit $d"
	git remote add origin /workspace/origin.git && git push -q origin main:b$(echo $d | tr ./ __)
	git fetch -q origin && echo "fetch $d"
	git checkout -q -b side && echo b >>f && git commit -qam two
	git checkout -q main && echo c >g && git add g && git commit -qm three && echo "checkout $d"
	git checkout -q side && git rebase -q main && echo "rebase $d"
	git worktree add -q ../wt main -b wt && echo "worktree $d"
	g submodule add -q /workspace/lib sub && git commit -qm sub && echo "submodule add $d"
	cd .. && g clone -q r cl && cd cl && g submodule update -q --init && cat sub/l && echo "clone+update $d"
	cd /workspace
done'
for d in . a/b/c; do
	for what in init+commit fetch checkout rebase worktree "submodule add" clone+update; do
		assert_contains "$AL_OUT" "$what $d" "$what works in the workspace at $d"
	done
done
assert_eq "" "$VIOLATIONS" "git's own work records no violation"
assert_eq "gitdir: ../.git/modules/sub" "$(cat "$WS/a/b/c/r/sub/.git")" "a submodule's .git file"
assert_eq 0 "$(find "$WS" -name '.airlock-git-*' | wc -l)" "no temporary name is left behind"

# ---- config keys that make git run something are refused, with the key named ----
for key in core.fsmonitor core.hooksPath core.sshCommand core.editor sequence.editor core.pager \
	pager.log alias.st filter.x.smudge diff.x.textconv merge.x.driver credential.helper \
	include.path url.x.insteadOf remote.origin.uploadpack protocol.file.allow gpg.program; do
	sb_git "cd a/b/c/r && git config $key 'touch $proof' && echo WROTE || echo REFUSED"
	assert_eq REFUSED "$(tail -n 1 <<<"$AL_OUT")" "git config $key is refused"
	lc=$(tr 'A-Z' 'a-z' <<<"$key")
	assert_contains "$VIOLATIONS" "a/b/c/r/.git/config: $lc" "its violation names $lc"
done
assert_not_contains "$(cat "$WS/a/b/c/r/.git/config")" "$proof" "the config holds none of them"
sb_git "cd a/b/c/r && git config user.name someone && git config branch.side.rebase true && echo ok"
assert_eq ok "$AL_OUT" "settings that run nothing are written"
sb_git "cd a/b/c/r && git config -f .gitmodules submodule.sub.update '!touch $proof' || echo REFUSED"
assert_eq REFUSED "$AL_OUT" ".gitmodules with update = !cmd is refused"
assert_contains "$VIOLATIONS" ".gitmodules: submodule.sub.update" "and named"

# ---- hooks: no way to write one ----
mkdir -p "$WS/x/.git/hooks" && echo '#!/bin/sh' >"$WS/x/.git/hooks/post-checkout"
hook="printf '#!/bin/sh\\ntouch $proof\\n'"
for dir in .git x/.git a/b/c/r/.git a/b/c/r/.git/modules/sub; do
	try() # SCRIPT WHAT
	{
		sb_git "$1 && echo WROTE || echo REFUSED"
		assert_eq REFUSED "$(tail -n 1 <<<"$AL_OUT")" "$2 in $dir is refused"
	}
	try "mkdir -p $dir/hooks && $hook >$dir/hooks/pre-commit" "creating a hook"
	try "$hook >h && chmod +x h && mv h $dir/hooks/pre-commit" "renaming onto a hook"
	try "$hook >h && ln h $dir/hooks/pre-commit" "linking onto a hook"
	try "mv $dir/hooks/pre-commit.sample $dir/hooks/pre-commit" "renaming a sample onto a hook"
	try "ln -s ../../h $dir/hooks/pre-push" "a symbolic link as a hook"
done
try "$hook >>x/.git/hooks/post-checkout" "changing a hook"
try "mv x/.git/hooks x/.git/h && mkdir x/.git/hooks && $hook >x/.git/hooks/pre-commit" \
	"moving the hooks folder away"
sb_git "echo '# note' >>.git/hooks/pre-commit.sample && echo ok"
assert_eq ok "$AL_OUT" "a sample hook stays writable"

# ---- tricks around the check ----
bad="printf '[core]\\n\\tfsmonitor = touch $proof\\n'"
good="printf '[user]\\n\\tname = a\\n'"
cfg=a/b/c/r/.git/config
try()
{
	sb_git "$1; echo done"
	assert_not_contains "$(cat "$WS/$2")" "fsmonitor" "$3: $2 holds no core.fsmonitor"
}
try "$good >c && ln c c2 && mv c $cfg && $bad >>c2" "$cfg" "a second name kept across the rename"
try "exec 3>c; $good >&3; mv c $cfg; $bad >&3; exec 3>&-" "$cfg" "a write fd kept across the rename"
try "ln $cfg c3 || $bad >>c3" "$cfg" "a second name of the config"
try "$bad >>$cfg" "$cfg" "appending to the config"
try "$bad >$cfg" "$cfg" "truncating the config"
# The writer learns of it at close(), as git does (it then says it could not write its config).
sb_git "python3 -c 'import os
fd = os.open(\"$cfg\", os.O_WRONLY | os.O_APPEND)
os.write(fd, b\"[core]\\n\\tfsmonitor = x\\n\")
try:
    os.close(fd)
    print(\"closed\")
except OSError as e:
    print(\"close:\", e.strerror)'"
assert_eq "close: Permission denied" "$AL_OUT" "a refused in-place write fails at close() with EACCES"
if [ -x /usr/bin/python3 ]; then
	try "$good >c && /usr/bin/python3 -c '
import mmap, os, sys
fd = os.open(\"c\", os.O_RDWR); os.ftruncate(fd, 4096)
m = mmap.mmap(fd, 4096); os.rename(\"c\", \"$cfg\")
s = b\"[core]\\n\\tfsmonitor = x\\n\"; m[:len(s)] = s; m.flush()'" "$cfg" "an mmap kept across the rename"
fi
try "mkdir -p y/g && $bad >y/g/config && mv y/g y/.git" "y/.git/config" "a folder moved to be .git"
try "mkdir -p z/.git && $bad >z/config && mv z/config z/.git/config" "z/.git/config" "a rename"
sb_git "mkdir -p ev && $bad >ev/config && mkdir -p w && printf 'gitdir: ../ev\\n' >w/.git; cat w/.git"
assert_eq "" "$AL_OUT" "a .git file leading outside a git folder is refused"
sb_git "mkdir -p w2 && printf 'gitdir: /etc\\n' >w2/.git; ln -s ../ev w3/.git 2>/dev/null; ln -s ../ev .git/modules/evil; ls -d w3/.git .git/modules/evil 2>&1 | grep -c 'No such'"
assert_eq "" "$(cat "$WS/w2/.git")" "a .git file leading out of the workspace is refused"
assert_eq 2 "$AL_OUT" "no symbolic link as .git or inside it"
sb_git "mkdir -p .git/rebase-merge && printf 'exec touch $proof\\n' >.git/rebase-merge/git-rebase-todo; cat .git/rebase-merge/git-rebase-todo"
assert_eq "" "$AL_OUT" "a rebase todo list with an exec line is refused"
sb_git "printf '../../../ev\\n' >r/.git/worktrees/wt/commondir"
assert_eq "../.." "$(cat "$WS/r/.git/worktrees/wt/commondir")" \
	"a commondir leading out of git's folders is refused"

# A checkout of a branch whose .gitmodules runs a command: the file is not written.
git -C "$WS/a/b/c/r" -c user.email=a@b -c user.name=a checkout -q -b evil side
printf '[submodule "sub"]\n\tpath = sub\n\turl = /workspace/lib\n\tupdate = !touch %s\n' "$proof" \
	>"$WS/a/b/c/r/.gitmodules"
git -C "$WS/a/b/c/r" -c user.email=a@b -c user.name=a commit -qam evil
git -C "$WS/a/b/c/r" checkout -q -f side
assert_not_contains "$(cat "$WS/a/b/c/r/.gitmodules")" "!touch" "(the host checked out side)"
sb_git "cd a/b/c/r && git checkout -q evil; cat .gitmodules"
assert_contains "$VIOLATIONS" "a/b/c/r/.gitmodules: submodule.sub.update" "the checkout's write is refused"
assert_not_contains "$(cat "$WS/a/b/c/r/.gitmodules")" "!touch" \
	"a checked-out .gitmodules with update = !cmd does not reach the host"

# The host's git afterwards runs nothing the sandbox wrote.
for r in . a/b/c/r x; do
	git -C "$WS/$r" -c user.email=a@b -c user.name=a commit -q --allow-empty -m host 2>/dev/null
	git -C "$WS/$r" status >/dev/null 2>&1
done
git -C "$WS/a/b/c/r" -c protocol.file.allow=always submodule update -q 2>/dev/null
assert_false "the host's git ran nothing of the sandbox's" test -e "$proof"

# ---- the red team's ways round it (second review) ----
# core.worktree leading the host's checkout into .git/hooks, or through a link made for it
mkdir -p "$WS/rt1"
git -C "$WS/rt1" init -q -b main
git -C "$WS/rt1" -c user.email=a@b -c user.name=a commit -q --allow-empty -m init
sb_git "cd rt1 && git checkout -q -b feature
h=\$(printf '#!/bin/sh\ntouch $proof\n' | git hash-object -w --stdin)
git update-index --add --cacheinfo 100755,\$h,post-checkout && git commit -qm agent && git checkout -q main
git config core.worktree hooks && echo accepted-hooks
git config core.worktree . && echo accepted-dot
ln -s .git/hooks lnk && echo made-link; ln -s ../rt1/.GIT lnk2 && echo made-link2
echo done"
assert_eq done "$AL_OUT" "core.worktree and links to git folders are refused"
assert_eq "" "$(git -C "$WS/rt1" config --get core.worktree)" "the host's config has no core.worktree"
git -C "$WS/rt1" checkout -q feature 2>/dev/null
assert_false "the host's checkout of the agent's branch ran no hook" test -e "$proof"
# modes that would hand git's folders to another local user
sb_git "cd rt1 && chmod 777 .git .git/hooks . ; chmod 666 .git/config; echo done"
assert_eq "drwxr-xr-x drwxr-xr-x" "$(stat -c %A "$WS/rt1/.git" "$WS/rt1/.git/hooks" | tr '\n' ' ' | sed 's/ $//')" \
	"git's folders are never made group- or world-writable"
assert_eq "-rw-r--r--" "$(stat -c %A "$WS/rt1/.git/config")" "nor its config"
assert_eq "drwxrwxr-x" "$(stat -c %A "$WS/rt1")" "and no folder is made world-writable"
# a bare repository made where the checks do not look: a HEAD git would take is refused
# outside .git and NAME.git folders; in NAME.git the config is checked and the hooks protected
mkdir -p "$WS/rt3"
sb_git "cd rt3 && mkdir -p objects refs/heads && echo 'ref: refs/heads/main' >HEAD; printf '[core]\n\tfsmonitor = touch $proof\n' >config
g init -q --bare b.git && (printf '#!/bin/sh\ntouch $proof\n' >b.git/hooks/post-receive || echo hook-refused)
git config -f b.git/config core.fsmonitor 'touch $proof' || echo config-refused"
assert_contains "$AL_OUT" "hook-refused" "a bare NAME.git's hooks are protected"
assert_contains "$AL_OUT" "config-refused" "and its config checked"
assert_not_contains "$(cat "$WS/rt3/HEAD" 2>/dev/null)" "ref:" "no HEAD git would take lies outside git's folders"
git -C "$WS/rt3" status >/dev/null 2>&1
git -C "$WS/rt3/b.git" status >/dev/null 2>&1
assert_false "the host's git in those folders ran nothing" test -e "$proof"

# ---- workspace.protect=false lifts every protected entry and check (a tier 4 policy) ----
write_policy "$IT_TMP/open.json" <<EOF2
{"workspace": {"root": "$WS", "protect": false}}
EOF2
it_admit "$IT_TMP/open.json"
al_run run -p "$IT_TMP/open.json" -- /bin/true
assert_eq 125 "$AL_RC" "without admission it is refused"
assert_contains "$AL_ERR" "workspace.protect" "naming the field"
al_run run -p "$IT_TMP/open.json" --admitted "$IT_TMP/admitted" -- /bin/sh -c \
	"cd /workspace/a/b/c/r && git config core.fsmonitor x && echo h >.git/hooks/pre-commit && echo e >.envrc && echo ok"
assert_eq ok "$AL_OUT" "protect: false lifts the config check, the hooks and .envrc"

it_finish
