#!/usr/bin/env bash
# A container image is the sandbox's read-only root: a policy whose workspace or writable mount
# is the image, lies in it or holds it is refused before anything runs (the sandbox would write
# a program into its own root through /workspace and run it from there: found by the red team,
# with an admitted image); the same image beside a workspace of its own runs.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

img=$IT_TMP/img
mkdir -p "$img/usr/bin" "$img/usr/lib/x86_64-linux-gnu" "$img/usr/lib64" "$img/etc" "$img/sub"
cp /usr/bin/dash "$img/usr/bin/sh"
cp /usr/lib/x86_64-linux-gnu/libc.so.6 /usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 \
	"$img/usr/lib/x86_64-linux-gnu/"
ln -sf ../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 "$img/usr/lib64/"
ln -sfn usr/lib "$img/lib"
ln -sfn usr/lib64 "$img/lib64"
ln -sfn usr/bin "$img/bin"

# run_with ROOT [MOUNT_SOURCE]: airlock run with the image, the workspace at ROOT and, if given,
# a writable mount of MOUNT_SOURCE; its exit code in $rc, its error in $IT_TMP/err.
run_with()
{
	local mounts='[]'
	[ -n "${2:-}" ] && mounts="[{\"source\": \"$2\", \"target\": \"/data\", \"mode\": \"rw\"}]"
	write_policy "$IT_TMP/p.json" <<EOF2
{"isolation": [{"type": "container", "image": "$img"}],
 "workspace": {"root": "$1"}, "mounts": $mounts}
EOF2
	"$AIRLOCK" policy hash "$IT_TMP/p.json" >"$IT_TMP/admitted"
	rc=0
	"$AIRLOCK" run -p "$IT_TMP/p.json" --admitted "$IT_TMP/admitted" -- /usr/bin/sh -c 'echo ran' \
		>"$IT_TMP/out" 2>"$IT_TMP/err" || rc=$?
}

run_with "$img"
assert_ne 0 "$rc" "a workspace that is the image is refused"
assert_contains "$(cat "$IT_TMP/err")" "overlap" "... saying that they overlap"
assert_eq 1 "$(wc -l <"$IT_TMP/err")" "... in one line"
assert_eq "" "$(cat "$IT_TMP/out")" "... before anything ran"
run_with "$img/sub"
assert_ne 0 "$rc" "a workspace inside the image is refused"
run_with "$WS" "$img/sub"
assert_ne 0 "$rc" "a writable mount inside the image is refused"
assert_contains "$(cat "$IT_TMP/err")" "writable mount" "... naming the mount"
run_with "$WS"
assert_eq 0 "$rc" "the same image beside a workspace of its own runs ($(cat "$IT_TMP/err"))"
assert_eq "ran" "$(cat "$IT_TMP/out")" "... its shell"
it_finish
