#!/usr/bin/env bash
# workspace.quota bounds what the workspace takes on the host's disk, folders and inodes
# included: the blocks a folder grows by as names are added to it are charged, and every file,
# folder and link costs at least one 4 KiB block, so empty files with long names cannot fill the
# host's disk (or its inodes) past the quota. Normal use within the quota is unaffected.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

policy=$IT_TMP/quota.json
write_policy "$policy" <<EOF2
{"workspace": {"root": "$WS", "quota": "1Mi"}}
EOF2

# The red team's reproduction: 100 folders of 1,000 empty files with 200-byte names (25 MB of
# folder blocks and 100,000 inodes when nothing stops it).
al_run run -p "$policy" -- /usr/bin/python3 -c '
import errno, os
os.chdir("/workspace")
made = 0
err = "none"
try:
    for d in range(100):
        os.mkdir(f"d{d}")
        made += 1
        for i in range(1000):
            open(f"d{d}/{i:0200d}", "w").close()
            made += 1
except OSError as e:
    err = errno.errorcode.get(e.errno, str(e.errno))
print("made", made)
print("error", err)
'
assert_eq 0 "$AL_RC" "the reproduction ran"
assert_contains "$AL_OUT" "error ENOSPC" "making empty files with long names ends with ENOSPC"
made=$(sed -n 's/^made //p' <<<"$AL_OUT")
assert_true "it stops after a few hundred entries (made ${made:-?})" test "${made:-100100}" -lt 1000
used=$(du -s --block-size=1 "$WS" | cut -f1)
# The quota, and a bounded slack: the last entry's inode and folder block.
assert_true "the workspace takes at most the quota and 64 KiB on the host (du: $used bytes)" \
	test "$used" -le $((1024 * 1024 + 64 * 1024))
entries=$(find "$WS" | wc -l)
assert_true "the workspace holds at most a few hundred inodes ($entries)" test "$entries" -lt 1000

# Folder growth is charged: files with 250-byte names (a folder block holds about 15 of their
# entries) fit fewer than files with 1-byte names (about 300 a block), each costing one block.
fill() # NAME_LENGTH: how many empty files fit in one new folder
{
	rm -rf "$WS"/*
	al_run run -p "$policy" -- /usr/bin/python3 -c '
import os, sys
os.mkdir("/workspace/f")
n = 0
try:
    while True:
        open("/workspace/f/" + format(n, "0%dd" % int(sys.argv[1])), "w").close()
        n += 1
except OSError as e:
    print(n, e.strerror)
' "$1"
	echo "$AL_OUT"
}
short=$(fill 3)
long=$(fill 250)
assert_match "No space left on device" "$short" "files with short names fill the quota ($short)"
assert_match "No space left on device" "$long" "files with long names fill the quota ($long)"
assert_true "long names fit fewer files than short ones: folder growth is charged ($long < $short)" \
	test "${long%% *}" -lt "$((${short%% *} - 5))"

# Removing what was made gives the space back: the same can be made again.
al_run run -p "$policy" -- /bin/sh -c 'cd /workspace && rm -rf f && mkdir again && echo x >again/f && echo again-ok'
assert_contains "$AL_OUT" "again-ok" "removing the entries gives their space back"

# Normal use is unaffected: a few hundred small files in folders, renamed and linked.
rm -rf "$WS"
mkdir "$WS"
write_policy "$policy" <<EOF2
{"workspace": {"root": "$WS", "quota": "8Mi"}}
EOF2
al_run run -p "$policy" -- /bin/sh -c '
	cd /workspace || exit 1
	for d in 1 2 3 4 5 6 7 8 9 10; do
		mkdir src$d || exit 1
		for f in $(seq 1 30); do echo "file $d $f" >src$d/file$f.txt || exit 1; done
	done
	mv src1 moved && ln moved/file1.txt hard && ln -s moved/file2.txt soft && echo normal-ok'
assert_eq 0 "$AL_RC" "300 small files in 10 folders fit an 8 MiB quota"
assert_contains "$AL_OUT" "normal-ok" "... with renames and links"
assert_eq 300 "$(find "$WS" -name 'file*.txt' | wc -l)" "... all of them on the host"

it_finish
