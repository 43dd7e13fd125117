#!/usr/bin/env bash
# A rootless sandbox's user namespace maps only the caller's uid and gid, and the kernel refuses
# to write, remove or rename an inode whose owner or group it cannot map. The workspace daemon
# shows every id as the caller's, with the modes that give what the host gives the caller, so the
# workspace is writable where the caller may write on the host: a folder the caller owns with
# group root, a group-writable file of a group the caller is in, root's file in the caller's
# folder can be removed. Root's read-only file stays read-only, and a chmod of another's file is
# refused by the host. Fails before the fix (every write got EACCES).
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

uid=4321
gid=4321
grp=4242 # a supplementary group of the caller
user=(setpriv --reuid=$uid --regid=$gid --groups=$grp)
if ! command -v setpriv >/dev/null; then
	it_skip "setpriv (util-linux) is missing"
fi
max_userns=$(cat /proc/sys/user/max_user_namespaces 2>/dev/null || echo 0)
clone_knob=$(cat /proc/sys/kernel/unprivileged_userns_clone 2>/dev/null || echo 1)
if [ "$max_userns" -eq 0 ] || [ "$clone_knob" != 1 ] || ! "${user[@]}" unshare -U true 2>/dev/null; then
	it_skip "the kernel does not let an unprivileged user create a user namespace" \
		"(max_user_namespaces=$max_userns, unprivileged_userns_clone=$clone_knob)"
fi

bin=$IT_TMP/bin
mkdir -p "$bin"
install -m 755 "$AIRLOCK" "$bin/airlock"
# The workspace: the caller's, with group root (the group is not mapped in the sandbox).
chown $uid:0 "$WS"
chmod 755 "$WS"
echo mine >"$WS/mine"
chown $uid:0 "$WS/mine"
chmod 644 "$WS/mine"
echo roots >"$WS/roots"
chown 0:0 "$WS/roots"
chmod 644 "$WS/roots"
echo shared >"$WS/shared"
chown 0:$grp "$WS/shared"
chmod 664 "$WS/shared"
echo group-only >"$WS/group-only"
chown 0:$grp "$WS/group-only"
chmod 640 "$WS/group-only"
echo world >"$WS/world"
chown 0:0 "$WS/world"
chmod 666 "$WS/world"
mkdir "$WS/sub"
chown $uid:0 "$WS/sub"
chmod 750 "$WS/sub"
policy=$IT_TMP/rootless.json
write_policy "$policy" <<EOF2
{"workspace": {"root": "$WS"}, "resources": {"timeout": "60s", "memory": "max", "pids": "max"}}
EOF2
chmod 644 "$policy"

(cd / && "$ITRUN" -t "$IT_WATCHDOG" -- "${user[@]}" "$bin/airlock" run -p "$policy" --json -- \
	/bin/sh -c '
try() { if eval "$1" 2>/tmp/e; then echo "$2: ok"; else echo "$2: $(sed "s/.*: //" /tmp/e)"; fi; }
cd /workspace
try "echo new >new" create-in-own-folder
try "echo more >>mine" append-to-own-file
try "echo x >>roots" write-roots-file
try "echo more >>shared" write-group-writable-file
try "cat group-only >/dev/null" read-group-readable-file
try "echo x >sub/new" create-in-own-subfolder
try "mkdir made && echo x >made/f" mkdir-and-create
try "chmod 600 mine" chmod-own-file
try "echo more >>world" write-world-writable-file
try "chmod 666 shared" chmod-others-file
ls -ln . | awk "NR > 1 { print \"ids \" \$9 \"=\" \$3 \":\" \$4 \" \" \$1 }"
try "rm -f roots" remove-from-own-folder
' "$IT_MARK") >"$IT_TMP/al.out" 2>"$IT_TMP/al.err"
rc=$?
expect() { assert_contains "$out" "$1: $2" "$3"; }
assert_eq 0 "$rc" "the rootless run succeeds"
out=$(json_get "$IT_TMP/al.out" 'd["stdout"]')
expect() { assert_contains "$out" "$1: $2" "$3"; }
expect create-in-own-folder ok "a new file can be made in the caller's folder of group root"
expect append-to-own-file ok "the caller's file of group root can be appended to"
expect write-roots-file "Permission denied" "root's file stays unwritable"
expect write-group-writable-file ok "a file writable by a group of the caller is writable"
expect read-group-readable-file ok "a file readable by a group of the caller is readable"
expect create-in-own-subfolder ok "a new file can be made in the caller's subfolder"
expect mkdir-and-create ok "a new folder and a file in it can be made"
expect chmod-own-file ok "the caller's own file can be chmod'ed"
expect write-world-writable-file ok "root's file writable by everyone is writable"
expect chmod-others-file "Operation not permitted" "another's file shown as the caller's still cannot be chmod'ed"
assert_contains "$out" "ids mine=$uid:$gid -rw-------" "ls -ln: the caller's file (chmod 600) shows the caller's ids, its mode"
assert_contains "$out" "ids sub=$uid:$gid drwxr-x---" "ls -ln: the caller's folder shows the caller's ids, its mode"
assert_contains "$out" "ids new=$uid:$gid" "ls -ln: a new file shows the caller's ids"
assert_contains "$out" "ids roots=$uid:$gid -r--r--r--" \
	"ls -ln: root's file shows as the caller's, read-only as to the caller on the host"
assert_contains "$out" "ids shared=$uid:$gid -rw-rw-r--" \
	"ls -ln: another's file the caller may write through a group shows it writable"
assert_contains "$out" "ids group-only=$uid:$gid -r--r-----" \
	"ls -ln: another's file the caller may read through a group shows it read-only"
assert_contains "$out" "ids world=$uid:$gid -rw-rw-rw-" "ls -ln: root's file writable by all shows it writable"
expect remove-from-own-folder ok "root's file can be removed from the caller's folder, as on the host"
viol=$(json_get "$IT_TMP/al.out" 'len(d["violations"])')
assert_eq 0 "$viol" "no workspace violation is reported"
assert_eq "mine
more" "$(cat "$WS/mine")" "the host file got the append"
assert_eq "shared
more" "$(cat "$WS/shared")" "the group's file got the append"
assert_eq "664" "$(stat -c %a "$WS/shared")" "the group's file keeps its mode"
assert_eq "$uid:0" "$(stat -c %u:%g "$WS/mine")" "the caller's file keeps its group on the host"
assert_eq "0:$grp" "$(stat -c %u:%g "$WS/shared")" "the group's file keeps its owner and group"
assert_eq "600" "$(stat -c %a "$WS/mine")" "chmod reached the host"
assert_eq "$uid" "$(stat -c %u "$WS/new")" "the new file belongs to the caller on the host"

# A credential file in the workspace is the caller's (it was root's, unreadable, before).
cpolicy=$IT_TMP/rootless-cred.json
write_policy "$cpolicy" <<EOF2
{"workspace": {"root": "$WS"}, "resources": {"timeout": "60s", "memory": "max", "pids": "max"},
 "credentials": [{"name": "tok", "source": {"type": "env", "var": "IT_TOK"},
   "injection": {"type": "file", "path": "/workspace/.tok"}, "hosts": ["api.example.com"]}]}
EOF2
chmod 644 "$cpolicy"
(cd / && IT_TOK=tok-$IT_MARK "$ITRUN" -t "$IT_WATCHDOG" -- "${user[@]}" "$bin/airlock" run -p "$cpolicy" -- \
	/bin/sh -c 'ls -ln /workspace/.tok | awk "{ print \"ids \" \$3 \":\" \$4 \" \" \$1 }"; cat /workspace/.tok' \
	"$IT_MARK") >"$IT_TMP/cred.out" 2>&1
assert_contains "$(cat "$IT_TMP/cred.out")" "ids $uid:$gid -r--------" "a credential file shows as the caller's"
assert_contains "$(cat "$IT_TMP/cred.out")" "airlock_sur_" "a credential file is readable (its surrogate)"

it_finish
