#!/usr/bin/env bash
# The FUSE workspace confines the sandbox to the host folder: "..", absolute and relative
# symbolic links, link chains, a symbolic link swapped in and out while the sandbox works,
# hard links to files elsewhere, device nodes and set-user-ID files planted on the host, mounts
# inside the folder, and hostile depths and lengths give nothing outside it. Roots that are
# system folders or a home folder are refused before anything runs.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

OUT=$IT_TMP/outside
mkdir -p "$OUT/dir"
flag=flag-$IT_MARK
echo "$flag" >"$OUT/dir/flag"

# Links planted on the host, pointing out of the workspace in every way.
ln -s "$OUT/dir" "$WS/abs"
ln -s ../outside/dir "$WS/rel"
ln -s rel "$WS/chain1"
ln -s chain1 "$WS/chain2"
ln -s /proc/self/root/"$OUT"/dir "$WS/magic"
sb_sh 'for l in abs rel chain1 chain2 magic; do
	cat /workspace/$l/flag 2>/dev/null && echo "$l: READ"
	echo x 2>/dev/null >/workspace/$l/new && echo "$l: WROTE"
done
cat /workspace/../outside/dir/flag 2>/dev/null && echo "dotdot: READ"
ls /workspace/.. | tr "\n" " "'
assert_eq 0 "$AL_RC" "the link probes ran"
assert_not_contains "$AL_OUT" "READ" "no planted link reads a file outside the workspace"
assert_not_contains "$AL_OUT" "WROTE" "no planted link writes outside the workspace"
assert_not_contains "$AL_OUT" "outside" "/workspace/.. is the sandbox's root, not the host folder"
assert_eq "" "$(ls "$OUT/dir" | grep -v '^flag$')" "nothing was created in the folder outside"

# Links made by the sandbox itself: created and read inside, never followed outside.
sb_sh 'cd /workspace && ln -s target inside && echo in >target && cat inside &&
	readlink inside && ln -s /etc/passwd etc-link && readlink etc-link'
assert_eq "in
target
/etc/passwd" "$AL_OUT" "symbolic links can be made and read inside the workspace"

# A host process swaps a folder for a link to the outside, as fast as it can, while the sandbox
# reads and writes through that name.
mkdir -p "$WS/swap"
(
	while :; do
		mv -T "$WS/swap" "$WS/swap.dir" 2>/dev/null
		ln -sfn "$OUT/dir" "$WS/swap" 2>/dev/null
		rm -f "$WS/swap" 2>/dev/null
		mv -T "$WS/swap.dir" "$WS/swap" 2>/dev/null
		ln -sfn ../outside/dir "$WS/swap.l" 2>/dev/null
		mv -T "$WS/swap.l" "$WS/swap" 2>/dev/null
		mkdir -p "$WS/swap" 2>/dev/null
	done
) &
swapper=$!
sb_sh 'i=0; while [ $i -lt 3000 ]; do
	cat /workspace/swap/flag 2>/dev/null && echo READ
	echo x 2>/dev/null >/workspace/swap/planted-$i && :
	i=$((i + 1))
done; echo done'
kill "$swapper"
wait "$swapper" 2>/dev/null
assert_contains "$AL_OUT" "done" "the sandbox raced the swapper to the end"
assert_not_contains "$AL_OUT" "READ" "a racing link swap never reads the file outside"
assert_eq "" "$(ls "$OUT/dir" | grep -v '^flag$')" "a racing link swap never writes outside"

# Hard links: to a file outside (another mount: EXDEV), and planted ones stay inside.
sb_sh 'ln /etc/hostname /workspace/h 2>&1; echo rc=$?'
assert_contains "$AL_OUT" "rc=1" "a hard link to a file outside the workspace cannot be made"

# Device nodes and set-user-ID files planted on the host give nothing (nodev, nosuid).
mknod "$WS/null-dev" c 1 3
mknod "$WS/mem-dev" c 1 1
install -m 4755 -o 1234 /usr/bin/id "$WS/suid-id"
sb_sh 'echo x >/workspace/null-dev 2>/dev/null && echo DEV-WRITE
	head -c1 /workspace/mem-dev >/dev/null 2>&1 && echo DEV-READ
	/workspace/suid-id -u'
assert_not_contains "$AL_OUT" "DEV-" "a device node planted in the workspace cannot be used"
assert_eq 0 "$(tail -n1 <<<"$AL_OUT")" "a set-user-ID file planted in the workspace runs without it"
sb_sh 'mknod /workspace/newdev c 1 3 2>&1; echo rc=$?'
assert_contains "$AL_OUT" "rc=1" "the sandbox cannot make a device node in the workspace"
assert_eq no "$([ -e "$WS/newdev" ] && echo yes || echo no)" "no device node appears on the host"

# A mount inside the host folder is another file system: not entered.
mkdir -p "$WS/mnt" "$IT_TMP/other"
echo other >"$IT_TMP/other/o"
mount --bind "$IT_TMP/other" "$WS/mnt"
sb_sh 'cat /workspace/mnt/o 2>&1; ls /workspace/mnt 2>&1; true'
umount "$WS/mnt"
assert_not_contains "$AL_OUT" "other" "a mount inside the host folder is not entered"

# Depth and length are bounded: the sandbox cannot build a path the daemon cannot name.
sb_sh 'cd /workspace && i=0; while [ $i -lt 700 ]; do mkdir d 2>/dev/null && cd d || break;
	i=$((i + 1)); done; echo depth=$i'
depth=$(sed -n 's/^depth=//p' <<<"$AL_OUT")
assert_true "nesting stops at a bounded depth (got $depth)" \
	test "$depth" -lt 700 -a "$depth" -ge 256
rm -rf "$WS/d"

# System folders, the root and a home folder are refused as the root.
for root in / /etc /usr /var /proc /sys /dev /boot /root; do
	al_run run -w "$root" -- /bin/true
	assert_eq 125 "$AL_RC" "workspace root $root is refused"
	assert_one_error_line "$AL_ERR" "workspace root $root: one error line"
done
home=$IT_TMP/home
mkdir -p "$home"
HOME=$home al_run run -w "$home" -- /bin/true
assert_eq 125 "$AL_RC" "the user's home folder itself is refused"
assert_contains "$AL_ERR" "home folder" "the refusal says it is the home folder"
mkdir -p "$IT_TMP/m"
al_run fs /etc "$IT_TMP/m"
assert_eq 1 "$AL_RC" "airlock fs refuses /etc too"
al_run fs "$WS" "$WS/abs-mount-inside"
assert_ne 0 "$AL_RC" "airlock fs refuses a mount point inside the workspace"

it_finish
