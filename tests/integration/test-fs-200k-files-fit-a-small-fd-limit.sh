#!/usr/bin/env bash
# The inode table holds no fd per inode: 200,000 files in a tree are listed, stat'ed and read
# through the workspace by a daemon whose fd limit is 4096, and the daemon's open fds stay within
# its bounded cache the whole time.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup
IT_WATCHDOG=300

tree=$WS/tree
python3 - "$tree" >/dev/null <<'EOF2'
import os, sys
root = sys.argv[1]
n = 0
for a in range(50):
    for b in range(40):
        d = os.path.join(root, "d%02d" % a, "e%02d" % b)
        os.makedirs(d)
        for c in range(100):
            with open(os.path.join(d, "f%03d" % c), "w") as f:
                f.write("%d\n" % n)
            n += 1
print(n)
EOF2
assert_eq 200000 "$(find "$tree" -type f | wc -l)" "the host tree has 200,000 files"

# Watch the daemon's fds while the sandbox walks the tree.
(
	max=0
	while :; do
		for p in $(it_fs_daemons); do
			grep -qF "$IT_MARK" "/proc/$p/cmdline" 2>/dev/null || continue
			n=$(ls "/proc/$p/fd" 2>/dev/null | wc -l)
			[ "$n" -gt "$max" ] && max=$n && echo "$max" >"$IT_TMP/maxfd"
		done
		sleep 0.2
	done
) &
watcher=$!
"$ITRUN" -t "$IT_WATCHDOG" -- prlimit --nofile=4096:4096 -- "$AIRLOCK" run -w "$WS" -- /bin/sh -c '
	cd /workspace/tree
	echo files=$(find . -type f | wc -l)
	echo stat=$(find . -type f -printf "%s\n" | awk "{s += \$1} END {print NR, s}")
	echo sum=$(cat d49/e39/* d00/e00/* | awk "{s += \$1} END {print s}")
	echo dirs=$(ls -d d*/e* | wc -l)' "$IT_MARK" >"$IT_TMP/out" 2>"$IT_TMP/err"
rc=$?
kill "$watcher"
wait "$watcher" 2>/dev/null
out=$(cat "$IT_TMP/out")
assert_eq 0 "$rc" "the walk through 200,000 files succeeds with an fd limit of 4096"
assert_contains "$out" "files=200000" "find sees every file"
# sizes: files 0..9 have 2 bytes, ..., 100000..199999 have 7 bytes
assert_contains "$out" "stat=200000 1288890" "every file stats with its size"
assert_contains "$out" "sum=$(python3 -c 'print(sum(range(199900, 200000)) + sum(range(0, 100)))')" \
	"files at both ends of the tree read back"
assert_contains "$out" "dirs=2000" "every folder is listed"
maxfd=$(cat "$IT_TMP/maxfd" 2>/dev/null || echo 0)
assert_true "the daemon's open fds stayed bounded (max $maxfd, limit 4096)" \
	test "$maxfd" -gt 0 -a "$maxfd" -le 1100
rm -rf "$tree"

it_finish
