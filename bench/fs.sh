#!/usr/bin/env bash
# The workspace filesystem against the disk it serves: the same workloads, in one run, on four
# legs over one ext4 folder: native (a plain folder), bindfs (a FUSE passthrough, Debian's
# bindfs), passthrough_hp (libfuse 3.18's own example, over io_uring with FUSE passthrough: what
# libfuse and the kernel can do) and airlock (`airlock fs SRC MNT`). Each figure is the median of
# the repeats, and each leg is also given as a ratio to native from the same run. Prints markdown
# and writes it to the "Workspace filesystem" section of docs/BENCHMARKS.md.
#
# usage: bench/fs.sh [--quick]      (as root for cold reads; scripts/dev.sh bench calls it)
#   --quick   a smoke run: small sizes, one repeat, and the doc is left alone unless BENCH_DOC
#             is set
# environment: AIRLOCK (default build/cli/airlock), BENCH_AIRLOCK_POLICY (a policy file passed
#              as `airlock fs --policy FILE SRC MNT`), BENCH_LEGS (default "native bindfs
#              passthrough_hp airlock"), BENCH_REPEATS (default 3, 1 with --quick), BENCH_DIR
#              (where the legs' folders and the cached source tarball go, default
#              /var/tmp/airlock-bench), BENCH_DOC (default docs/BENCHMARKS.md; "-" = print only),
#              PASSTHROUGH_HP (default build-deps/fuse3-build/example/passthrough_hp, which
#              `scripts/dev.sh deps` builds: fs.sh runs that when it is missing, as root)
# Installs fio, bindfs, fuse3, gcc, git and python3 with apt-get when they are missing. The
# passthrough_hp leg runs over io_uring when the kernel has it: as root, fs.sh turns on
# /sys/module/fuse/parameters/enable_uring (and says so), then checks that the example's ring
# threads exist; its label in the table names the transport it got. The
# airlock leg is skipped, with a message, while `airlock fs --help` fails. A figure that misses
# its target is reported, not failed on: this is a benchmark, not a test. A FUSE leg that fails a
# step (an error, not a slow figure) is shown failed and sits out the rest of the run. When that
# leg is airlock, the run then exits 1 and leaves the doc alone; a reference leg's failure (bindfs,
# passthrough_hp) is written down with the figures.

set -Eeuo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
export LC_ALL=C

bench_args fs.sh "$@"

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
airlock=${AIRLOCK:-$repo/build/cli/airlock}
policy=${BENCH_AIRLOCK_POLICY:-}
base=${BENCH_DIR:-/var/tmp/airlock-bench}
read -r -a legs_wanted <<<"${BENCH_LEGS:-native bindfs passthrough_hp airlock}"
passthrough_hp=${PASSTHROUGH_HP:-$repo/build-deps/fuse3-build/example/passthrough_hp}
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3

if [ "$quick" = 1 ]; then
	repeats=${BENCH_REPEATS:-1}
	seq_mib=128      # sequential file, also the random-read file
	nfiles=2000      # small files
	fio_seconds=2    # random-read run time
	tree_mib=10      # file content in the source tarball
	doc=${BENCH_DOC:--}
else
	repeats=${BENCH_REPEATS:-3}
	seq_mib=1024
	nfiles=20000
	fio_seconds=10
	tree_mib=100
	doc=${BENCH_DOC:-$repo/docs/BENCHMARKS.md}
fi
tree_max_files=0 # no limit but tree_mib, unless passthrough_hp's fd limit sets one
scale_note=""
case $repeats in
'' | *[!0-9]* | 0)
	echo "fs.sh: BENCH_REPEATS must be a positive number" >&2
	exit 2
	;;
esac


on_err()
{
	log "failed at line $1: $2"
}
trap 'on_err "$LINENO" "$BASH_COMMAND"' ERR

is_root=0
[ "$(id -u)" = 0 ] && is_root=1

# ---- legs ----

legs=()
declare -A skipped=([bindfs]="not in BENCH_LEGS" [passthrough_hp]="not in BENCH_LEGS"
	[airlock]="not in BENCH_LEGS")
for leg in "${legs_wanted[@]}"; do
	case $leg in
	native) legs+=("$leg") ;;
	bindfs)
		legs+=("$leg")
		unset "skipped[$leg]"
		;;
	passthrough_hp)
		if [ ! -x "$passthrough_hp" ] && [ -z "${PASSTHROUGH_HP:-}" ] && [ "$is_root" = 1 ]; then
			log "no $passthrough_hp: building libfuse 3.18 and its examples (scripts/dev.sh deps)"
			"$repo/scripts/dev.sh" deps >&2 || true
		fi
		if [ ! -x "$passthrough_hp" ]; then
			skipped[$leg]="no passthrough_hp at ${passthrough_hp#$repo/} (as root: scripts/dev.sh deps)"
			log "passthrough_hp leg skipped: ${skipped[$leg]}"
		else
			legs+=("$leg")
			unset "skipped[$leg]"
		fi
		;;
	airlock)
		if [ ! -x "$airlock" ]; then
			skipped[$leg]="no airlock binary at $airlock (build first: scripts/dev.sh build)"
		elif ! timeout 10 "$airlock" fs --help >/dev/null 2>&1; then
			skipped[$leg]="\`$airlock fs --help\` fails: this airlock has no fs command yet"
		else
			legs+=("$leg")
			unset "skipped[$leg]"
		fi
		[ -z "${skipped[$leg]:-}" ] || log "airlock leg skipped: ${skipped[$leg]}"
		;;
	*) die "unknown leg in BENCH_LEGS: $leg (native, bindfs, passthrough_hp, airlock)" ;;
	esac
done
[ "${legs[0]:-}" = native ] || die "BENCH_LEGS must start with native: every ratio is to native"

# ---- tools ----

packages=(fio fuse3 gcc git python3)
[[ " ${legs[*]} " == *" bindfs "* ]] && packages+=(bindfs)
bench_install "${packages[@]}" || exit 1
if [ "${#legs[@]}" -gt 1 ] && ! { [ -r /dev/fuse ] && [ -w /dev/fuse ]; }; then
	die "cannot open /dev/fuse for reading and writing: the FUSE legs cannot run here"
fi

# ---- work folders, mounts and cleanup ----

mkdir -p "$base"
run=$(mktemp -d "$base/run.XXXXXX")
declare -A src=() mnt=() fs_pid=()

# alive PID: PID exists and is not a zombie (a child that exited stays one until `wait`).
alive()
{
	local state=""

	{ read -r _ _ state _ <"/proc/$1/stat"; } 2>/dev/null || return 1
	[ "$state" != Z ]
}

mount_leg()
{
	local leg=$1
	local logf=$run/$leg.log

	case $leg in
	bindfs)
		local opts=()
		[ "$is_root" = 1 ] || opts=(--no-allow-other)
		bindfs -f "${opts[@]}" "${src[$leg]}" "${mnt[$leg]}" >>"$logf" 2>&1 &
		;;
	passthrough_hp)
		ph_mount "${src[$leg]}" "${mnt[$leg]}" >>"$logf" 2>&1 &
		;;
	airlock)
		local opts=()
		[ -z "$policy" ] || opts=(--policy "$policy")
		# options first: airlock fs takes none after ROOT and MOUNTPOINT
		"$airlock" fs "${opts[@]}" "${src[$leg]}" "${mnt[$leg]}" >>"$logf" 2>&1 &
		;;
	esac
	fs_pid[$leg]=$!
	for _ in $(seq 200); do
		if mountpoint -q "${mnt[$leg]}"; then
			[ "$leg" != passthrough_hp ] || ph_check_transport "${fs_pid[$leg]}" "${mnt[$leg]}"
			return 0
		fi
		if ! alive "${fs_pid[$leg]}"; then
			log "$leg exited before mounting: $(tail -n 5 "$logf")"
			return 1
		fi
		sleep 0.05
	done
	log "$leg did not mount ${mnt[$leg]} within 10 s: $(tail -n 5 "$logf")"
	return 1
}

# ---- passthrough_hp: io_uring and passthrough ----

# FUSE over io_uring is off until root turns it on (a module parameter); libfuse then falls back
# to reading /dev/fuse, so the transport is checked on every mount (ph_check_transport).
ph_uring=0
ph_uring_note=""
ph_setup()
{
	local knob=/sys/module/fuse/parameters/enable_uring

	if [ ! -e "$knob" ]; then
		ph_uring_note="this kernel has no FUSE over io_uring ($knob is missing)"
	elif [ "$(cat "$knob")" = Y ]; then
		ph_uring=1
	elif [ "$is_root" = 1 ] && { echo 1 >"$knob"; } 2>/dev/null; then
		log "turned on FUSE over io_uring for passthrough_hp: echo 1 > $knob (it stays on)"
		ph_uring=1
	else
		ph_uring_note="FUSE over io_uring is off ($knob is N; as root: echo 1 > $knob)"
	fi
	[ -z "$ph_uring_note" ] || log "passthrough_hp leg over /dev/fuse: $ph_uring_note"
}

# ph_mount SRC MNT [OPTION...]: runs passthrough_hp in the foreground (use &). It keeps a file
# descriptor open for every inode the kernel knows, and raises its own limit only to the hard
# one: as root, it gets room for more than the small-file and untar steps make, where this root
# may raise the hard limit (ph_nofile says what it gets).
ph_nofile=$(ulimit -Hn)
if [ "$is_root" = 1 ] && (ulimit -n 1048576) 2>/dev/null; then
	ph_nofile=1048576
fi
ph_mount()
{
	local src=$1 mnt=$2 opts=()
	shift 2

	[ "$ph_uring" = 0 ] || opts=(-o io_uring)
	[ "$ph_nofile" = "$(ulimit -Hn)" ] || ulimit -n "$ph_nofile"
	exec "$passthrough_hp" --foreground "${opts[@]}" "$@" "$src" "$mnt"
}

# The transport of the passthrough_hp process PID that serves MNT, by what it really runs:
# libfuse's io_uring threads are named fuse-ring-N (one per CPU) and hold io_uring fds; without
# them, requests come through read(2) on /dev/fuse. Sets ph_transport.
ph_transport=""
ph_check_transport()
{
	local pid=$1 mnt=$2 rings=0 t now

	stat "$mnt" >/dev/null 2>&1 || true # INIT is answered before the rings register
	for _ in $(seq 40); do
		rings=0
		for t in /proc/"$pid"/task/*/comm; do
			[[ "$(cat "$t" 2>/dev/null)" != fuse-ring-* ]] || rings=$((rings + 1))
		done
		[ "$rings" = 0 ] && [ "$ph_uring" = 1 ] || break
		sleep 0.05
	done
	if [ "$rings" -gt 0 ]; then
		now="io_uring, $rings ring threads"
	else
		now="/dev/fuse"
	fi
	if [ "$now" != "$ph_transport" ]; then
		[ -z "$ph_transport" ] || log "warning: passthrough_hp's transport changed: $ph_transport -> $now"
		[ "$ph_uring" = 0 ] || [ "$rings" -gt 0 ] ||
			log "warning: passthrough_hp was asked for io_uring but has no fuse-ring threads"
		log "passthrough_hp transport: $now (threads of pid $pid: $(cat /proc/"$pid"/task/*/comm 2>/dev/null | sort | uniq -c | xargs))"
		ph_transport=$now
	fi
}

# Does passthrough_hp hand file data to the kernel (FUSE passthrough, libfuse's default where
# the kernel offers it)? Its debug output says so when it sets up a backing file: a short mount
# with --debug, one file read through it. Sets ph_passthrough.
ph_passthrough=""
ph_probe_passthrough()
{
	local d=$run/ph-probe pid

	mkdir -p "$d/src" "$d/mnt"
	echo probe >"$d/src/f"
	ph_mount "$d/src" "$d/mnt" --debug >"$d/log" 2>&1 &
	pid=$!
	for _ in $(seq 200); do
		mountpoint -q "$d/mnt" && break
		sleep 0.05
	done
	cat "$d/mnt/f" >/dev/null 2>&1 || true
	fusermount3 -u "$d/mnt" 2>/dev/null || umount -l "$d/mnt" 2>/dev/null || true
	kill -TERM "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	if grep -q 'setup shared backing file' "$d/log"; then
		ph_passthrough="passthrough"
	else
		ph_passthrough="no passthrough"
		log "passthrough_hp does not use FUSE passthrough here: $(grep -i -m 1 passthrough "$d/log" || echo "no backing file in its debug output")"
	fi
	rm -rf "$d"
}

# Ends LEG's filesystem process the way its user would (SIGTERM: airlock fs unmounts and exits,
# so does bindfs -f), then makes sure of it: fusermount3 -u, umount -l, SIGKILL.
unmount_leg()
{
	local leg=$1
	local pid=${fs_pid[$leg]:-}

	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || true
	for _ in $(seq 200); do
		alive "$pid" || break
		sleep 0.05
	done
	if mountpoint -q "${mnt[$leg]}"; then
		fusermount3 -u "${mnt[$leg]}" 2>/dev/null || umount -l "${mnt[$leg]}" 2>/dev/null ||
			log "could not unmount ${mnt[$leg]}"
	fi
	alive "$pid" && kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null || true
	unset "fs_pid[$leg]"
}

cleanup()
{
	local leg busy=0

	set +e
	trap - ERR
	for leg in "${!fs_pid[@]}"; do
		unmount_leg "$leg"
	done
	for leg in "${!mnt[@]}"; do
		if [ "${mnt[$leg]}" != "${src[$leg]}" ] && mountpoint -q "${mnt[$leg]}"; then
			umount -l "${mnt[$leg]}" 2>/dev/null || fusermount3 -u -z "${mnt[$leg]}" 2>/dev/null
			mountpoint -q "${mnt[$leg]}" && busy=1
		fi
	done
	if [ "$busy" = 0 ]; then
		rm -rf --one-file-system "$run"
	else
		log "left $run behind: a mount under it is still busy"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

for leg in "${legs[@]}"; do
	if [ "$leg" = native ]; then
		src[$leg]=$run/native
		mnt[$leg]=$run/native
		mkdir "${src[$leg]}"
	else
		src[$leg]=$run/$leg.src
		mnt[$leg]=$run/$leg.mnt
		mkdir "${src[$leg]}" "${mnt[$leg]}"
	fi
done

if [[ " ${legs[*]} " == *" passthrough_hp "* ]]; then
	ph_setup
	ph_probe_passthrough
	# passthrough_hp holds a file descriptor for every inode the kernel knows. Where its limit
	# cannot hold the small files or the tree, every leg gets fewer (the same for all, so the
	# legs still compare in this run), rather than passthrough_hp sitting out those rows.
	ph_room=$((ph_nofile - 1000))
	if [ "$((nfiles + nfiles / 50))" -gt "$ph_room" ]; then
		nfiles=$((ph_room * 9 / 10 / 1000 * 1000))
		scale_note=" $(printf "%'d" "$nfiles") small files"
	fi
	if [ "$ph_room" -lt 40000 ]; then
		tree_max_files=$((ph_room * 8 / 10 / 1000 * 1000))
		scale_note="${scale_note:+$scale_note,} a tree of at most $(printf "%'d" "$tree_max_files") files"
	fi
	[ -z "$scale_note" ] ||
		log "passthrough_hp may hold $(printf "%'d" "$ph_nofile") fds here, so:$scale_note"
fi

need_mib=$((${#legs[@]} * (seq_mib + (repeats + 2) * tree_mib * 2) + 256))
avail_mib=$(($(df -Pk "$run" | awk 'NR == 2 { print $4 }') / 1024))
[ "$avail_mib" -ge "$need_mib" ] || die "$avail_mib MiB free under $base, need $need_mib MiB"

# ---- the helper and the source tree ----

smallfiles=$run/fs-smallfiles
gcc -O2 -std=gnu11 -Wall -Wextra -Werror -o "$smallfiles" "$repo/bench/fs-smallfiles.c"

# A source-like tree from what is on this machine (there is no network): the files of at most
# 64 KiB from these folders, in this order, until their content reaches tree_mib MiB. Built
# once and kept, so later runs extract the very same tree.
tree_dirs=(/usr/lib/node_modules /usr/share/perl /usr/share/perl5 /usr/lib/python3.11
	/usr/share/vim /usr/share/man /usr/lib/python3/dist-packages /usr/include)
tarball=$base/src-tree-${tree_mib}M.tar
[ "$tree_max_files" = 0 ] || tarball=$base/src-tree-${tree_mib}M-${tree_max_files}.tar
if [ ! -s "$tarball" ]; then
	log "building $tarball (once; kept for later runs)"
	"$py" - "$tree_mib" "$tree_max_files" "${tree_dirs[@]}" >"$run/tree.list" <<'EOF'
import os, stat, sys

target = int(sys.argv[1]) << 20
max_files = int(sys.argv[2]) or float("inf")
total = files = 0
out = sys.stdout.buffer
for root in sys.argv[3:]:
    for dirpath, dirnames, filenames in os.walk(os.fsencode(root)):
        if total >= target or files >= max_files:
            break
        dirnames[:] = sorted(d for d in dirnames
                             if d != b"__pycache__" and not d.startswith(b"config-"))
        out.write(dirpath.lstrip(b"/") + b"\0")
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode):
                if st.st_size > 65536:
                    continue
                total += st.st_size
            elif not stat.S_ISLNK(st.st_mode):
                continue
            out.write(path.lstrip(b"/") + b"\0")
            files += 1
            if total >= target or files >= max_files:
                break
EOF
	tar -cf "$tarball.tmp" --null --no-recursion --hard-dereference -C / -T "$run/tree.list"
	mv "$tarball.tmp" "$tarball"
fi
tree_files=$(tar -tvf "$tarball" | grep -c '^-')
tree_mb=$(($(stat -c %s "$tarball") / 1000000))
grep_pattern=xyzzy

# ---- measuring ----

samples=$run/samples.tsv
: >"$samples"

# timed CMD...: runs CMD, sets `secs` to its wall-clock time in seconds. It first waits for the
# disk to settle (sync: earlier writes, journal commits and discards of deleted files), which
# would otherwise land on whichever leg comes next.
timed()
{
	local t0 us

	sync
	t0=${EPOCHREALTIME/./}
	"$@"
	us=$((${EPOCHREALTIME/./} - t0))
	printf -v secs '%d.%06d' $((us / 1000000)) $((us % 1000000))
}

sample()
{
	printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$samples"
	log "$(printf '%-14s %-15s %s' "$1" "$2" "$3")"
}

# Dropping caches needs root (and a kernel that lets this root do it).
can_drop=0
if [ "$is_root" = 1 ] && { echo 1 >/proc/sys/vm/drop_caches; } 2>/dev/null; then
	can_drop=1
	cache_note="dropping the page cache"
	create_note="dropping the clean page cache (see settle_for_create in bench/fs.sh)"
else
	cache_note="dropping the file's pages (not root: dd iflag=nocache)"
	create_note="not dropping the page cache (not root: on ext4 without a journal, creating files
  right after deleting many is slowed)"
fi

drop_caches()
{
	sync
	if [ "$can_drop" = 1 ]; then
		echo 3 >/proc/sys/vm/drop_caches
	else
		# posix_fadvise(DONTNEED) of just this file
		dd if="$1" iflag=nocache count=0 status=none
	fi
}

# Before a step that creates many files. On ext4 without a journal (as on this project's VMs),
# allocating an inode skips every inode deleted in the last minute (six while its inode table
# block is dirty) whose table block is still in the page cache: after a step that deleted tens
# of thousands of files, creating a file costs ~200 µs more for minutes, whatever the leg.
# Writing the disk out and dropping the clean page cache ends that (a table block that is not
# cached counts as written out), so every leg creates its files from the same state.
settle_for_create()
{
	sync
	[ "$can_drop" = 0 ] || echo 1 >/proc/sys/vm/drop_caches
}

grep_tree()
{
	grep -r -F -e "$grep_pattern" "$1" >/dev/null || [ $? = 1 ]
}

g()
{
	GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null git -c safe.directory='*' -c gc.auto=0 \
		-c maintenance.auto=false -c init.defaultBranch=main -c user.name=bench \
		-c user.email=bench@localhost "$@"
}

# ---- the steps, each for one leg ----
# They run in a subshell under set -e (see `on`), so any failing command fails the step.

seq_write_warmup()
{
	dd if=/dev/zero of="${mnt[$1]}/seq.bin" bs=1M count="$seq_mib" conv=fsync status=none
}

seq_write()
{
	rm -f "${mnt[$1]}/seq.bin"
	timed dd if=/dev/zero of="${mnt[$1]}/seq.bin" bs=1M count="$seq_mib" conv=fsync status=none
	sample "$1" seq_write "$secs"
}

seq_read()
{
	timed dd if="${mnt[$1]}/seq.bin" of=/dev/null bs=1M status=none
	sample "$1" seq_read_cold "$secs"
	timed dd if="${mnt[$1]}/seq.bin" of=/dev/null bs=1M status=none
	sample "$1" seq_read_warm "$secs"
}

randread()
{
	local iops

	cat "${mnt[$1]}/seq.bin" >/dev/null
	sync
	fio --name=randread --filename="${mnt[$1]}/seq.bin" --rw=randread --bs=4k \
		--size="${seq_mib}M" --ioengine=psync --invalidate=0 --time_based \
		--runtime="$fio_seconds" --output-format=json --output="$run/fio.json" >/dev/null
	iops=$("$py" -c 'import json, sys; print("%.0f" % json.load(open(sys.argv[1]))["jobs"][0]["read"]["iops"])' "$run/fio.json")
	sample "$1" randread "$iops"
}

small_files()
{
	local out phase s

	mkdir "${mnt[$1]}/small"
	settle_for_create
	out=$("$smallfiles" "${mnt[$1]}/small" "$nfiles")
	while read -r phase s; do
		sample "$1" "small_$phase" "$s"
	done <<<"$out"
	rmdir "${mnt[$1]}/small"
}

untar()
{
	# The tree before is no longer needed (grep and git status use the last): removed through
	# the mount, untimed, so that the kernel forgets its inodes (passthrough_hp's fds).
	rm -rf "${mnt[$1]}/tree.$(($2 - 1))"
	mkdir "${mnt[$1]}/tree.$2"
	settle_for_create
	cat "$tarball" >/dev/null
	timed tar --no-same-owner -xf "$tarball" -C "${mnt[$1]}/tree.$2"
	sample "$1" untar "$secs"
}

grep_warmup()
{
	grep_tree "${mnt[$1]}/$tree"
}

grep_timed()
{
	timed grep_tree "${mnt[$1]}/$tree"
	sample "$1" grep "$secs"
}

# The repository is made in the backing folder: airlock's default policy keeps .git/config and
# .git/hooks read-only inside the workspace, as it should, and this setup is not what is timed.
git_setup()
{
	g -C "${src[$1]}/$tree" init -q
	g -C "${src[$1]}/$tree" add -A
	g -C "${src[$1]}/$tree" commit -q -m tree
	g -C "${src[$1]}/$tree" status >/dev/null
	g -C "${mnt[$1]}/$tree" status >/dev/null
}

git_status()
{
	timed g -C "${mnt[$1]}/$tree" status >/dev/null
	sample "$1" git_status "$secs"
}

# A real repository, with its history: a clone of this one (airlock's own) at the commit being
# measured, made in the backing folder like the one above.
git_repo_setup()
{
	g clone -q --no-local --no-checkout "$repo" "${src[$1]}/repo"
	g -C "${src[$1]}/repo" checkout -q --detach "$repo_commit"
	g -C "${src[$1]}/repo" status >/dev/null
	g -C "${mnt[$1]}/repo" status >/dev/null
}

git_repo_status()
{
	timed g -C "${mnt[$1]}/repo" status >/dev/null
	sample "$1" git_status_repo "$secs"
}

declare -A failed=()
fail_leg()
{
	local leg=$1 metric=$2 why=$3

	[ "$leg" != native ] || die "native failed at $metric: $why"
	failed[$leg]="$metric|$why"
	log "$leg failed at $metric ($why); it sits out the rest of the run"
	unmount_leg "$leg"
}

# on METRIC STEP [ARGS...]: runs STEP LEG ARGS... for each leg still running, round-robin, so that
# a slow spell of the machine hits every leg alike; each call starts one leg later than the one
# before (a leg that always came last read its file cold after three others had, and the VM's
# host caches the disk). A FUSE leg whose step fails is marked failed at METRIC (the table shows
# it) and unmounted; native failing ends the run.
on_turn=0
on()
{
	local metric=$1 step=$2 leg rc why i
	shift 2

	on_turn=$((on_turn + 1))
	for i in "${!legs[@]}"; do
		leg=${legs[$(((i + on_turn) % ${#legs[@]}))]}
		[ -z "${failed[$leg]:-}" ] || continue
		# Not `( ... ) || rc=$?`: bash ignores set -e in anything run on the left of ||.
		trap - ERR
		set +e
		(
			trap 'on_err "$LINENO" "$BASH_COMMAND"' ERR
			set -e
			"$step" "$leg" "$@"
		) 2>"$run/step.err"
		rc=$?
		set -e
		trap 'on_err "$LINENO" "$BASH_COMMAND"' ERR
		cat "$run/step.err" >&2
		if [ "$rc" != 0 ]; then
			why=$(grep -v '^fs.sh: failed at line' "$run/step.err" | tail -n 1 || true)
			[ -n "$why" ] || why=$(tail -n 1 "$run/step.err")
			fail_leg "$leg" "$metric" "$why"
		fi
	done
}

load_before=$(cut -d ' ' -f 1-3 /proc/loadavg)
if awk -v l="${load_before%% *}" -v n="$(nproc)" 'BEGIN { exit !(l > n / 2) }'; then
	log "warning: load average ${load_before%% *} on $(nproc) cores before the run: the FUSE legs," \
		"which switch context at every request, will look slower than on a quiet machine"
fi
start=$SECONDS
for leg in "${legs[@]}"; do
	[ "$leg" = native ] || mount_leg "$leg" || die "could not mount the $leg leg"
done
log "legs: ${legs[*]}; $repeats repeat(s), under $run"

log "sequential write, ${seq_mib} MiB + fsync (after one untimed write on each leg)"
on seq_write seq_write_warmup
for rep in $(seq "$repeats"); do
	on seq_write seq_write
done

log "sequential read, cold (caches dropped, FUSE remounted), then warm (read again)"
for rep in $(seq "$repeats"); do
	for leg in "${legs[@]}"; do
		if [ "$leg" != native ] && [ -z "${failed[$leg]:-}" ]; then
			unmount_leg "$leg"
		fi
	done
	drop_caches "${src[native]}/seq.bin"
	for leg in "${legs[@]}"; do
		if [ "$leg" != native ] && [ -z "${failed[$leg]:-}" ]; then
			[ "$can_drop" = 1 ] || drop_caches "${src[$leg]}/seq.bin"
			mount_leg "$leg" || fail_leg "$leg" seq_read_cold "could not remount"
		fi
	done
	on seq_read_cold seq_read
done

log "random 4 KiB reads of the cached ${seq_mib} MiB file, fio psync, ${fio_seconds} s"
for rep in $(seq "$repeats"); do
	on randread randread
done

log "$nfiles small files: create, stat, read, delete"
for rep in $(seq "$repeats"); do
	on small_create small_files
done

log "untar $tarball ($tree_files files, $tree_mb MB)"
for rep in $(seq "$repeats"); do
	on untar untar "$rep"
done
sync

log "grep -r $grep_pattern, warm"
tree=tree.$repeats
grep_hits=$({ grep -r -F -o -e "$grep_pattern" "${mnt[native]}/$tree" || [ $? = 1 ]; } | wc -l)
on grep grep_warmup
for rep in $(seq "$repeats"); do
	on grep grep_timed
done

log "git status, warm (git init + add + commit first, not timed)"
on git_status git_setup
for rep in $(seq "$repeats"); do
	on git_status git_status
done
[ -z "$(g -C "${mnt[native]}/$tree" status --porcelain)" ] || die "git status is not clean on native"

repo_files=0
repo_commits=0
if repo_commit=$(g -C "$repo" rev-parse -q --verify HEAD 2>/dev/null); then
	repo_files=$(g -C "$repo" ls-files | wc -l)
	repo_commits=$(g -C "$repo" rev-list --count HEAD)
	log "git status, warm, in a clone of this repository ($repo_files files, $repo_commits commits)"
	on git_status_repo git_repo_setup
	for rep in $(seq "$repeats"); do
		on git_status_repo git_repo_status
	done
else
	log "no git status in a clone of this repository: $repo is not a git checkout"
fi

elapsed=$((SECONDS - start))
load_after=$(cut -d ' ' -f 1-3 /proc/loadavg)

# ---- the table ----

ph_label=passthrough_hp
[ -z "$ph_transport" ] || ph_label="passthrough_hp (${ph_transport%%,*}, $ph_passthrough)"
failed_at=""
failed_text=""
for leg in "${!failed[@]}"; do
	failed_at+="$leg=${failed[$leg]%%|*} "
	failed_text+=" The $leg leg failed at ${failed[$leg]%%|*} (${failed[$leg]#*|}) and sat out the rest."
	[ "$leg" != passthrough_hp ] || failed_text+=" passthrough_hp keeps a file descriptor open for
every inode the kernel knows, and its limit was $ph_nofile (the hard limit; as root, fs.sh raises
it to 1,048,576 where it may)."
done
table=$("$py" - "$samples" "$seq_mib" "$nfiles" "$fio_seconds" "$tree_files" "$tree_mb" \
	"$grep_pattern" "$grep_hits" "${legs[*]}" "$failed_at" "$ph_label" "$repo_files" \
	"$repo_commits" <<'EOF'
import statistics, sys

(path, seq_mib, nfiles, fio_s, tree_files, tree_mb, pattern, hits, legs, failed, ph_label,
 repo_files, repo_commits) = sys.argv[1:]
legs = legs.split()
failed = dict(f.split("=", 1) for f in failed.split())
samples = {}
for line in open(path):
    leg, metric, value = line.rstrip("\n").split("\t")
    samples.setdefault((leg, metric), []).append(float(value))

size = "1 GiB" if seq_mib == "1024" else seq_mib + " MiB"
# metric, label, unit, kind ("rate": higher is better; "time": lower is better), target
rows = [
    ("seq_write", "sequential write %s + fsync" % size, "MiB/s", "rate", 0.85),
    ("seq_read_cold", "sequential read %s, cold" % size, "MiB/s", "rate", 0.9),
    ("seq_read_warm", "sequential read %s, warm" % size, "MiB/s", "rate", 0.95),
    ("randread", "random read 4 KiB, cached (fio psync, %s s)" % fio_s, "IOPS", "iops", 0.95),
    ("small_create", "%s small files: create" % format(int(nfiles), ","), "s", "time", 4),
    ("small_stat", "%s small files: stat" % format(int(nfiles), ","), "s", "time", 4),
    ("small_read", "%s small files: read" % format(int(nfiles), ","), "s", "time", 4),
    ("small_delete", "%s small files: delete" % format(int(nfiles), ","), "s", "time", 4),
    ("untar", "untar (%s files, %s MB tar)" % (format(int(tree_files), ","), tree_mb), "s", "time", 4),
    ("grep", "`grep -r %s`, warm (%s hits)" % (pattern, hits), "s", "time", 2.5),
    ("git_status", "`git status`, warm (the untarred tree, one commit)", "s", "time", 1.5),
    ("git_status_repo", "`git status`, warm, a clone of this repository (%s files, %s commits)"
     % (format(int(repo_files), ","), repo_commits), "s", "time", 1.5),
]

def value(leg, metric, kind):
    v = samples.get((leg, metric))
    if not v:
        return None
    m = statistics.median(v)
    return int(seq_mib) / m if kind == "rate" else m

def show(v, unit):
    if v is None:
        return "—"
    if unit == "s":
        return "%.0f ms" % (v * 1e3) if v < 1 else "%.2f s" % v
    return "%.0f" % v

print("| workload | native | bindfs | bindfs ÷ native | %s | passthrough_hp ÷ native "
      "| airlock | airlock ÷ native | airlock ÷ passthrough_hp | target | airlock |" % ph_label)
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
order = [r[0] for r in rows]
for i, (metric, label, unit, kind, target) in enumerate(rows):
    native = value("native", metric, kind)
    cells = [label, show(native, unit)]
    verdict = "not run"
    got = {}
    for leg in ("bindfs", "passthrough_hp", "airlock"):
        if leg in failed and order.index(failed[leg]) <= i:
            cells += ["failed", "—"]
            verdict = "failed" if leg == "airlock" else verdict
            continue
        v = value(leg, metric, kind) if leg in legs else None
        if v is None or not native:
            cells += [show(v, unit), "—"]
            continue
        ratio = v / native
        if kind == "time":
            shown = ("%.2f× slower" if ratio < 10 else "%.1f× slower") % ratio
        else:
            shown = "%.2f×" % ratio
        cells += [show(v, unit), shown]
        got[leg] = v
        if leg == "airlock":
            ok = ratio <= target if kind == "time" else ratio >= target
            verdict = "pass" if ok else "**miss**"
    # Against passthrough_hp: > 1 means airlock took longer (times) or did more (rates).
    if "airlock" in got and got.get("passthrough_hp"):
        cells.append("%.2f×" % (got["airlock"] / got["passthrough_hp"]))
    else:
        cells.append("—")
    cells.append(("≤ %g× slower" if kind == "time" else "≥ %g×") % target)
    cells.append(verdict)
    print("| " + " | ".join(cells) + " |")
EOF
)

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
dev=$(findmnt -no SOURCE -T "$base" | head -n 1)
fstype=$(findmnt -no FSTYPE -T "$base" | head -n 1)
disk=$(lsblk -ndo PKNAME "$dev" 2>/dev/null | head -n 1 || true)
[ -n "$disk" ] || disk=${dev#/dev/}
disk_info=$(lsblk -dno SIZE,MODEL "/dev/$disk" 2>/dev/null | xargs || true)
[[ $disk != vd* ]] || disk_info="$disk_info virtio disk"
commit=$(git -C "$repo" describe --always --dirty 2>/dev/null || echo unknown)
bindfs_cmd=bindfs
[ "$is_root" = 1 ] || bindfs_cmd="bindfs --no-allow-other"
if [ -n "${skipped[bindfs]:-}" ]; then
	bindfs_line="bindfs: not measured in this run (${skipped[bindfs]})"
else
	bindfs_line="bindfs (\`$bindfs_cmd SRC MNT\`, $(bindfs --version 2>/dev/null | head -n 1 || true))"
fi
if [ -n "${skipped[passthrough_hp]:-}" ]; then
	ph_line="passthrough_hp: not measured in this run (${skipped[passthrough_hp]})"
else
	ph_version=$(PKG_CONFIG_PATH=$repo/build-deps/fuse3/lib/pkgconfig pkg-config --modversion fuse3 2>/dev/null || true)
	[ "$passthrough_hp" = "$repo/build-deps/fuse3-build/example/passthrough_hp" ] || ph_version=""
	ph_opts=""
	[ "$ph_uring" = 0 ] || ph_opts=" -o io_uring"
	ph_line="passthrough_hp (libfuse${ph_version:+ $ph_version}'s example/passthrough_hp.cc,
\`passthrough_hp --foreground$ph_opts SRC MNT\`, its defaults: FUSE passthrough for file data
where the kernel offers it, splice, a timeout of 86,400 s on entries and attributes; transport:
$ph_transport${ph_uring_note:+ ($ph_uring_note)}; $ph_passthrough)"
fi
if [ -n "${skipped[airlock]:-}" ]; then
	airlock_line="airlock: not measured in this run (${skipped[airlock]//$repo\//})"
else
	airlock_version=$("$airlock" --version 2>/dev/null | head -n 1 || true)
	airlock_line="airlock (\`airlock fs${policy:+ --policy $policy} SRC MNT\`, ${airlock_version:-airlock} at commit $commit)"
fi
runs="$repeats runs"
[ "$repeats" != 1 ] || runs="one run"
mode=""
[ "$quick" = 1 ] && mode=" (--quick: reduced sizes)"
intro="Measured $(date -u +%Y-%m-%d)$mode on $(nproc) cores (${cpu:-unknown CPU}), kernel $(uname -r),
as $(id -un). Every leg works in a folder of the same $fstype filesystem on $dev
(${disk_info:-unknown disk}), under $base. Legs: native (a plain folder); $bindfs_line;
$ph_line; $airlock_line. Each figure is the median of $runs, taken round-robin over the legs; ratios are
to native from this same run (throughput and IOPS: leg ÷ native, higher is better; times: leg ÷
native, × slower).${scale_note:+ passthrough_hp may hold $ph_nofile file descriptors here (the
hard limit, which this root may not raise) and holds one for every inode the kernel knows, so
every leg got fewer files than in a full run (20,000 small files, a 100 MiB tree):$scale_note.}$failed_text The run took $((elapsed / 60)) min $((elapsed % 60)) s; load average
before: $load_before, after: $load_after."
body="## Workspace filesystem

$(fmt -w 100 <<<"$intro")

$table

- Sequential: \`dd bs=1M\` from /dev/zero with \`conv=fsync\` (the fsync is timed; one untimed
  write first), then read to /dev/null: cold after $cache_note and
  remounting the FUSE legs (cold for this machine; a VM's host may still cache its disk), warm
  right after.
- Random reads: fio, 4 KiB \`randread\`, \`psync\`, one job, over that file just after it was read
  whole (\`--invalidate=0\`).
- Small files: bench/fs-smallfiles.c (gcc -O2), 1 KiB files, 100 a folder, 10 folders a parent;
  each phase timed on its own. Small files and untar start after
  $create_note.
- Untar: \`tar --no-same-owner -xf\` of the files of at most 64 KiB from this machine's /usr
  (node_modules, perl, python, vim, man pages, headers), tarred once and kept in $base.
  \`grep -r\` and \`git status\` run over the last tree extracted, after one warm-up run each;
  git's init, add and commit (untimed) run in the backing folder, since airlock's policy keeps
  .git/config and .git/hooks read-only in the workspace. The second \`git status\` runs in a
  real repository: a clone of this one (\`git clone --no-local\`, checked out at the commit
  measured, in the backing folder), after one warm-up run.
- passthrough_hp keeps a file descriptor open for every inode the kernel knows; fs.sh raises its
  limit to 1,048,576 where this root may (here: $ph_nofile), or the small-file and untar steps run
  it out of descriptors.
  Its transport is what its process shows: libfuse's io_uring threads (\`fuse-ring-N\`) after
  each mount; passthrough, from its \`--debug\` output on a short mount before the run.
- Each FUSE request costs context switches, so other work on the machine (see the load
  averages) slows the FUSE legs far more than native: on this 2-core VM, bindfs's small-file
  and untar ratios went from about 4× to 15–35× while other sessions ran tests. Compare legs
  within one run, and runs made on a quiet machine.
- Targets are those of issue 15 (issue 3's for the cold read, which issue 15 does not name), for
  airlock; a miss is reported, not failed on. Issue 15 also asks every row to be at least as good
  as passthrough_hp's: the column before the target (times: below 1 is faster; rates: above 1
  is more).

Reproduce: \`scripts/dev.sh bench\` (or \`bench/fs.sh\`, which uses \`AIRLOCK=build/cli/airlock\` by
default; \`bench/fs.sh --quick\` is a smoke run that only prints), as root.
"

printf '%s\n' "$body"

if [ -n "${failed[airlock]:-}" ]; then
	[ "$doc" = - ] || log "not writing $doc: the airlock leg failed"
	exit 1
fi
[ "${#failed[@]}" = 0 ] || log "a reference leg failed (${failed_at% }): its figures are missing"
if [ "$doc" != - ]; then
	printf '%s\n' "$body" >"$run/section.md"
	bench_write_section "$doc" "## Workspace filesystem" "$run/section.md"
	log "wrote the Workspace filesystem section of $doc"
fi
