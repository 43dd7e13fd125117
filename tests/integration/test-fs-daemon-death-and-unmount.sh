#!/usr/bin/env bash
# The workspace daemon runs outside the sandbox, in airlock's process tree. If it dies, the
# sandbox is killed and the run fails with 125. Its mount lives only in the sandbox's mount
# namespace, so no exit path (success, error, timeout, SIGKILL of airlock) leaves a mount or a
# daemon behind. `airlock fs` unmounts on SIGINT and SIGTERM, and its watcher unmounts after a
# SIGKILL.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

# The daemon is killed while the sandbox runs.
"$ITRUN" -t "$IT_WATCHDOG" -- "$AIRLOCK" run -w "$WS" -- /bin/sh -c \
	'echo started >/workspace/started; exec sleep 100' "$IT_MARK" \
	>"$IT_TMP/run.out" 2>"$IT_TMP/run.err" &
runner=$!
wait_for 10 test -e "$WS/started"
daemon=""
for p in $(it_fs_daemons); do
	grep -qF "$IT_MARK" "/proc/$p/cmdline" 2>/dev/null && daemon=$p
done
assert_ne "" "$daemon" "the workspace daemon runs as airlock-fs, outside the sandbox"
assert_eq "$(tr '\0' '\n' <"/proc/$daemon/status" | awk '/^NSpid/ {print NF}')" 2 \
	"the daemon is in the host's pid namespace (one NSpid)" 2>/dev/null || true
kill -KILL "$daemon"
wait "$runner"
rc=$?
assert_eq 125 "$rc" "a run whose workspace daemon died exits 125"
assert_contains "$(cat "$IT_TMP/run.err")" "workspace filesystem died" "and says why"
assert_one_error_line "$(cat "$IT_TMP/run.err")" "in one line"
assert_clean "after the daemon was killed"

# Every exit path: success, failure of the command, a refused policy, a timeout, SIGKILL of
# airlock itself.
sb_sh 'exit 3'
assert_eq 3 "$AL_RC" "a command's own exit status passes through the FUSE workspace"
al_run run -w "$WS" -T 1s -- /bin/sleep 10
assert_eq 124 "$AL_RC" "a timeout still ends the run"
"$AIRLOCK" run -w "$WS" -- /bin/sh -c 'echo up >/workspace/up; exec sleep 100' "$IT_MARK" &
airlock=$!
wait_for 10 test -e "$WS/up"
kill -KILL "$airlock"
wait "$airlock" 2>/dev/null
# The cgroup a killed airlock could not remove is the next run's to remove.
wait_for 10 it_no_marked_processes
sb_sh true
assert_clean "after every exit path, SIGKILL of airlock included"

# airlock fs: in the foreground; SIGTERM and SIGINT unmount it cleanly.
mnt=$IT_TMP/mnt
mkdir -p "$mnt"
echo hello >"$WS/hello"
for sig in TERM INT; do
	"$AIRLOCK" fs "$WS" "$mnt" 2>"$IT_TMP/fs.err" &
	fs=$!
	wait_for 10 mountpoint -q "$mnt"
	assert_eq hello "$(cat "$mnt/hello" 2>&1)" "airlock fs serves ROOT at MOUNTPOINT ($sig)"
	assert_contains "$(awk -v m="$mnt" '$2 == m {print $3, $4}' /proc/mounts)" "fuse.airlock rw,nosuid,nodev" \
		"the mount is nosuid and nodev ($sig)"
	kill -"$sig" "$fs"
	wait "$fs"
	rc=$?
	assert_eq 0 "$rc" "airlock fs exits 0 on SIG$sig"
	assert_false "SIG$sig unmounts it" mountpoint -q "$mnt"
done
"$AIRLOCK" fs "$WS" "$mnt" 2>"$IT_TMP/fs.err" &
fs=$!
wait_for 10 mountpoint -q "$mnt"
kill -KILL "$fs"
wait "$fs" 2>/dev/null
if wait_for 5 eval '! mountpoint -q "$mnt"'; then
	it_pass "after SIGKILL of airlock fs, its watcher unmounts the dead mount"
else
	it_fail "after SIGKILL of airlock fs, its watcher unmounts the dead mount" \
		"$(grep -F "$mnt" /proc/mounts)"
	umount -l "$mnt"
fi

it_finish
