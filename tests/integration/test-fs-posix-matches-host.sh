#!/usr/bin/env bash
# The workspace filesystem behaves like the host's. fs-posix runs a fixed list of POSIX behaviours
# (renames with flags, links, symbolic links, permissions, ownership, times, xattrs and ACLs,
# fallocate, mmap, sparse files, readdir while the folder changes, flock/fcntl/OFD locks, exec,
# inotify, ...) and prints what happened, one line per check. Its transcript in a host folder must
# be the same as in the same kind of folder mounted through `airlock fs`, and the same inside
# `airlock run`, where /workspace is that filesystem, apart from the lines that need privileges
# the sandbox does not have.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

if [ -z "${FS_POSIX:-}" ] || [ ! -x "$FS_POSIX" ]; then
	it_log "FAIL - FS_POSIX must name probes/fs-posix built by meson"
	exit 1
fi
[ -c /dev/fuse ] || it_skip "no /dev/fuse"
IT_WATCHDOG=120

# The reference: a host folder on the same file system as the mounted one, made nodev and nosuid
# like the workspace is (device nodes there must not open, set-id bits must not count). It is a
# bind mount of itself, so that the flags are the only difference from a plain folder.
REF=$IT_TMP/host
ROOT=$IT_TMP/fs-root
# The marker in the mount point's path puts it in the command line of `airlock fs`, so that
# it_cleanup finds the daemon should the test end early.
MNT=$IT_TMP/mnt-$IT_MARK
FS_PID=
mkdir -p "$REF" "$ROOT" "$MNT"

fsp_cleanup()
{
	[ -n "$FS_PID" ] && kill -KILL "$FS_PID" 2>/dev/null
	mountpoint -q "$MNT" && umount -l "$MNT"
	mountpoint -q "$REF" && umount -l "$REF"
	it_cleanup
}
trap fsp_cleanup EXIT

# fs_posix DIR OUT: runs fs-posix in DIR under the watchdog; the transcript goes to OUT. Returns
# its exit status.
fs_posix()
{
	"$ITRUN" -t "$IT_WATCHDOG" -- "$FS_POSIX" "$1" >"$2" 2>"$2.err"
}

# assert_transcript OUT WHAT: fs-posix ran to its end.
assert_transcript()
{
	local lines
	lines=$(grep -c '' "$1")
	if [ "$lines" -gt 300 ] && [ "$(tail -n 1 "$1")" = "end.folder_left_empty: yes" ]; then
		it_pass "$2: fs-posix ran to the end and left the folder empty ($lines checks)"
	else
		it_fail "$2: fs-posix ran to the end and left the folder empty" \
			"$lines lines, the last: $(tail -n 1 "$1")" "$(cat "$1.err" 2>/dev/null)"
	fi
}

# assert_same_transcript EXPECTED ACTUAL WHAT: no line differs. A failure shows the lines that
# differ, the host's ("-") before the other's ("+").
assert_same_transcript()
{
	local d
	if d=$(diff -U0 "$1" "$2"); then
		it_pass "$3 behaves like the host ($(grep -c '' "$1") lines compared)"
	else
		it_fail "$3 behaves like the host: $(grep -c '^+[^+]' <<<"$d") lines differ" \
			"$(grep -v -E '^(@@|---|\+\+\+)' <<<"$d")"
	fi
}

# ended PID: the process is gone or a zombie (our child, waiting to be reaped).
ended()
{
	local state
	state=$(cut -d ' ' -f 3 "/proc/$1/stat" 2>/dev/null) || return 0
	[ -z "$state" ] || [ "$state" = Z ]
}

# ---- the host ----
if ! mount --bind "$REF" "$REF" || ! mount -o remount,bind,nodev,nosuid "$REF"; then
	it_skip "cannot make a nodev,nosuid bind mount for the reference folder"
fi
fs_posix "$REF" "$IT_TMP/host.txt"
assert_eq 0 "$?" "fs-posix exits 0 in a host folder"
assert_transcript "$IT_TMP/host.txt" "host folder"
umount "$REF"

# ---- airlock fs ----
# What the workspace filesystem knowingly does not do, on both mounts:
# - O_TMPFILE: libfuse 3.14 has no operation for it (EOPNOTSUPP, as on bindfs);
# - SEEK_DATA/SEEK_HOLE: with the kernel's write-back cache the daemon cannot see data not yet
#   flushed, so the kernel answers generically (no holes), which is always safe: a file system
#   may report no holes, but must never report data as a hole.
fuse_limits='^(open\.tmpfile|sparse\.seek_(data|hole))'
"$AIRLOCK" fs "$ROOT" "$MNT" >"$IT_TMP/fs.out" 2>"$IT_TMP/fs.err" &
FS_PID=$!
if wait_for 10 mountpoint -q "$MNT"; then
	it_pass "airlock fs mounts ROOT at MOUNTPOINT"
	fs_posix "$MNT" "$IT_TMP/fs.txt"
	assert_eq 0 "$?" "fs-posix exits 0 on airlock fs"
	assert_transcript "$IT_TMP/fs.txt" "airlock fs"
	# Root makes device nodes in the host folder, where they do not open (nodev). The workspace
	# may refuse to make them at all: the host sees the folder without nodev. Either way none
	# may open.
	for node in chr blk; do
		line=$(grep "^mknod\.${node}_open:" "$IT_TMP/fs.txt")
		assert_match "^mknod\.${node}_open: E[A-Z]+$" "$line" \
			"a $node device node does not open on airlock fs"
	done
	grep -v -E -e '^mknod\.(chr|blk)' -e "$fuse_limits" "$IT_TMP/host.txt" >"$IT_TMP/host-nodev.txt"
	grep -v -E -e '^mknod\.(chr|blk)' -e "$fuse_limits" "$IT_TMP/fs.txt" >"$IT_TMP/fs-nodev.txt"
	assert_same_transcript "$IT_TMP/host-nodev.txt" "$IT_TMP/fs-nodev.txt" "airlock fs"
	assert_eq "" "$(ls -A "$ROOT")" "what fs-posix removed through the mount is gone from ROOT"

	kill -TERM "$FS_PID"
	if wait_for 10 ended "$FS_PID"; then
		wait "$FS_PID"
		rc=$?
		if [ "$rc" = 0 ]; then
			it_pass "airlock fs exits 0 on SIGTERM"
		else
			it_fail "airlock fs exits 0 on SIGTERM" "exit status $rc" "$(cat "$IT_TMP/fs.err")"
		fi
	else
		it_fail "airlock fs ends within 10 s of SIGTERM" "$(cat "$IT_TMP/fs.err")"
		kill -KILL "$FS_PID"
		wait "$FS_PID"
	fi
	assert_false "airlock fs unmounted MOUNTPOINT when it ended" mountpoint -q "$MNT"
else
	it_fail "airlock fs mounts ROOT at MOUNTPOINT within 10 s" "$(cat "$IT_TMP/fs.err")"
	kill -KILL "$FS_PID" 2>/dev/null
	wait "$FS_PID"
fi
FS_PID=

# ---- inside airlock run ----
# Lines that may differ in the sandbox, because its uid 0 has no capabilities and seccomp refuses
# set-id modes and device nodes. Each names the privilege it needs:
excluded=(
	# changing a file's owner or group needs CAP_CHOWN (EPERM); chown.minus1_both, a no-op
	# any owner may do, stays compared. Failed ownership set-up steps print chown.setup lines.
	'^chown\.(to_1234_5678|gid_only|back_to_0_0|fchown|lchown_symlink|through_symlink|setup):'
	# seccomp refuses S_ISUID/S_ISGID modes, and these checks also chown or become another user
	'^setid\.'
	# becoming another user needs CAP_SETUID/CAP_SETGID; `airlock fs` above checks these as root
	'^perm\.'
	'^chmod\.mode0\.other_user_read:'
	# root reads, writes and lists past mode 0 only with CAP_DAC_OVERRIDE/CAP_DAC_READ_SEARCH
	'^chmod\.mode0\.root_'
	# device nodes need CAP_MKNOD and seccomp refuses them, so there is nothing to open either
	'^mknod\.(chr|blk)'
	# trusted.* attributes need CAP_SYS_ADMIN, and so do security.* ones other than an LSM's
	'^xattr\.(trusted|security):'
	# as on airlock fs above
	"$fuse_limits"
)
pattern=$(IFS='|'; printf '%s' "${excluded[*]}")
install -m 755 "$FS_POSIX" "$WS/fs-posix"
mkdir "$WS/t"
al_run run -w "$WS" -- /workspace/fs-posix /workspace/t
assert_eq 0 "$AL_RC" "fs-posix exits 0 in the sandbox's /workspace"
printf '%s\n' "$AL_OUT" >"$IT_TMP/sandbox.txt"
printf '%s\n' "$AL_ERR" >"$IT_TMP/sandbox.txt.err"
assert_transcript "$IT_TMP/sandbox.txt" "the sandbox's /workspace"
grep -v -E "$pattern" "$IT_TMP/host.txt" >"$IT_TMP/host-comparable.txt"
grep -v -E "$pattern" "$IT_TMP/sandbox.txt" >"$IT_TMP/sandbox-comparable.txt"
assert_same_transcript "$IT_TMP/host-comparable.txt" "$IT_TMP/sandbox-comparable.txt" \
	"the sandbox's /workspace"
assert_eq "" "$(ls -A "$WS/t")" "fs-posix left nothing behind in the workspace"

it_finish
