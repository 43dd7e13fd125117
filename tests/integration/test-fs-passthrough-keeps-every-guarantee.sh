#!/usr/bin/env bash
# Opens passed through to the host file (FUSE passthrough, where the connection has it: a run as
# root with libfuse 3.18) keep every guarantee of the workspace. The rules are decided at open;
# what they decided cannot be widened later: a file open for writing cannot be given a protected
# or denied name, and goes on being written when its folder moves. mmap works on a passed-through
# file, and the host's changes are read at once. A write the daemon does not see could pass a
# quota: a workspace with a quota is served by the daemon alone, and the quota holds. A small file
# opened only for reading is served from the page cache. A write that passes through drops
# set-user-ID and set-group-ID as the host's kernel would (the daemon drops them at the open).
# Run in each mode of the fs matrix: where the connection has no passthrough, every open is the
# daemon's.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

free=$IT_TMP/free.json
write_policy "$free" <<EOF2
{"workspace": {"root": "$WS", "read": ["**"], "write": ["**"], "deny": ["secret/**"]}}
EOF2
quota=$IT_TMP/quota.json
write_policy "$quota" <<EOF2
{"workspace": {"root": "$WS", "quota": "1Mi"}}
EOF2

al_run run -p "$free" -- "$PROBE" fs-info /workspace/airlock-probe
if [[ "$AL_OUT" == *"passthrough=1"* ]]; then
	pass=2
	it_log "# the connection passes opens through"
else
	pass=1
	it_log "# the connection has no passthrough: every open is the daemon's"
fi

# The script inside: FUSEFS_IOC_INFO (fusefs/fusefs.h) on open files, then the operations.
cat >"$WS/pt.py" <<'EOF2'
import errno, fcntl, mmap, os, struct, sys, time

IOC_INFO = (2 << 30) | (16 << 16) | (0xaf << 8) | 2


def served(fd):
    return struct.unpack("4I", fcntl.ioctl(fd, IOC_INFO, bytes(16)))[3]


def err(f):
    try:
        f()
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))


os.chdir("/workspace")
what = sys.argv[1]
if what == "free":
    # A small file read only: the page cache (a passed-through read costs its next stat a
    # round trip); a write open of it meanwhile is the daemon's too.
    with open("small", "wb") as f:
        f.write(b"s" * 4096)
    r = os.open("small", os.O_RDONLY)
    w = os.open("small", os.O_WRONLY)
    print("small-opens", served(r), served(w))
    os.close(w)
    os.close(r)
    with open("data", "wb") as f:
        f.write(b"a" * (128 << 10))
    r = os.open("data", os.O_RDONLY)
    print("read-open", served(r))
    w = os.open("data", os.O_RDWR)
    print("write-open", served(w))
    os.pwrite(w, b"written", 0)
    m = mmap.mmap(w, 8192)
    m[4096:4103] = b"mmapped"
    m.flush()
    m.close()
    print("read-back", os.pread(r, 7, 0).decode(), os.pread(r, 7, 4096).decode())
    # A file open for writing keeps the name the rules allowed: no protected or read-only
    # name, no second name there.
    print("rename-to-envrc", err(lambda: os.rename("data", ".envrc")))
    print("link-to-hook", err(lambda: os.link("data", ".git/hooks/pre-commit")))
    print("rename-to-denied", err(lambda: os.rename("data", "secret/data")))
    # Its folder may move where the rules are the same: the open file goes on.
    os.mkdir("d1")
    os.rename("data", "d1/data")
    os.rename("d1", "d2")
    os.pwrite(w, b"moved", 100)
    os.close(w)
    os.close(r)
    with open("d2/data", "rb") as f:
        print("after-move", f.read()[100:105].decode())
    print("host-change", open("host.txt").read().strip())
    # Set-user-ID and set-group-ID (with group execute) that the host left on files: a
    # write, a truncation, an O_TRUNC open drop them.
    for name, how in (("setid-w", "write"), ("setid-t", "truncate"), ("setid-o", "otrunc"),
                      ("setid-a", "fallocate"), ("setid-c", "chown")):
        if how in ("write", "fallocate"):
            fd = os.open(name, os.O_WRONLY)
            if how == "write":
                os.write(fd, b"y")
            else:
                os.posix_fallocate(fd, 0, 4096)
            os.close(fd)
        elif how == "truncate":
            os.truncate(name, 1)
        elif how == "chown":
            os.chown(name, -1, -1)
        else:
            os.close(os.open(name, os.O_WRONLY | os.O_TRUNC))
        print("setid", how, oct(os.stat(name).st_mode & 0o7777))
    # The host sets them after the kernel cached the file's mode, and while a write fd of it is
    # open: a write through a new open, and through the old one where the daemon sees writes.
    os.stat("setid-h")
    old = os.open("setid-l", os.O_WRONLY)
    old_served = served(old)
    # The host sets them as soon as it sees this file (the sandbox cannot see the host's answer:
    # what it knows of a name and its attributes is cached for a minute), well within 3 s.
    open("ready-h", "w").close()
    time.sleep(3)
    fd = os.open("setid-h", os.O_WRONLY)
    os.write(fd, b"y")
    os.close(fd)
    os.write(old, b"y")
    os.close(old)
    print("setid host-set", oct(os.stat("setid-h").st_mode & 0o7777))
    print("setid old-fd", old_served, oct(os.stat("setid-l").st_mode & 0o7777))
elif what == "quota":
    r = os.open("big", os.O_RDONLY | os.O_CREAT, 0o644)
    w = os.open("big", os.O_WRONLY)
    print("opens", served(r), served(w))
    n = 0
    e = "none"
    try:
        while n < 4 << 20:
            n += os.write(w, b"x" * 65536)
        os.fsync(w)
    except OSError as x:
        e = errno.errorcode.get(x.errno, str(x.errno))
    print("quota-write", e)
    print("close", err(lambda: os.close(w)))
    os.close(r)
EOF2
mkdir -p "$WS/.git/hooks" "$WS/secret"
echo "from the host" >"$WS/host.txt"
for f in setid-w setid-t setid-o setid-a setid-c setid-h setid-l; do
	head -c 100000 /dev/zero >"$WS/$f"
	chmod 06777 "$WS/$f"
done
chmod 0777 "$WS/setid-h" "$WS/setid-l"
# The host's part: set-user-ID and set-group-ID once the sandbox has seen the files.
(
	wait_for 60 test -e "$WS/ready-h" && chmod 06777 "$WS/setid-h" "$WS/setid-l" &&
		touch "$WS/host-done"
) &
host_part=$!

al_run run -p "$free" -- /usr/bin/python3 /workspace/pt.py free
assert_eq 0 "$AL_RC" "the passthrough script ran without a quota"
assert_contains "$AL_OUT" "small-opens 1 1" \
	"a small file read only is served from the page cache, and a write open of it meanwhile too"
assert_contains "$AL_OUT" "read-open $pass" "a read open is served as the connection allows ($pass)"
assert_contains "$AL_OUT" "write-open $pass" "without a quota a write open too ($pass)"
assert_contains "$AL_OUT" "read-back written mmapped" \
	"writes and a shared mmap of the open file are read back at once"
assert_eq "written" "$(head -c 7 "$WS/d2/data")" "the write reached the host file"
assert_eq "mmapped" "$(dd if="$WS/d2/data" bs=1 skip=4096 count=7 2>/dev/null)" \
	"the mmap's write reached the host file"
assert_contains "$AL_OUT" "rename-to-envrc EACCES" \
	"a file open for writing cannot be renamed onto a protected name"
assert_contains "$AL_OUT" "link-to-hook EACCES" "nor linked into .git/hooks"
assert_contains "$AL_OUT" "rename-to-denied ENOENT" "nor moved into a denied folder"
assert_contains "$AL_OUT" "after-move moved" "after its folder moved, the open file is written"
assert_contains "$AL_OUT" "host-change from the host" "the host's file is read as the host has it"
assert_true "no hook was made" test ! -e "$WS/.git/hooks/pre-commit"
wait "$host_part"
assert_true "the host set them while the sandbox waited" test -e "$WS/host-done"
assert_contains "$AL_OUT" "setid host-set 0o777" \
	"a write drops what the host set after the kernel cached the mode"
# A write fd opened before the host set them: where it passes through, the daemon never sees
# its writes (docs/SECURITY.md says so); where it does not, they are dropped.
if [[ "$AL_OUT" == *"setid old-fd 1 "* ]]; then
	assert_contains "$AL_OUT" "setid old-fd 1 0o777" \
		"a write through a fd opened before the host set them drops them (served by the daemon)"
fi
for how in write truncate otrunc fallocate chown; do
	assert_contains "$AL_OUT" "setid $how 0o777" \
		"the sandbox's $how (otrunc: an open with O_TRUNC) drops set-user-ID and set-group-ID"
done
for f in setid-w setid-t setid-o setid-a setid-c setid-h; do
	assert_eq 777 "$(stat -c %a "$WS/$f")" "the host's $f lost set-user-ID and set-group-ID"
done
assert_true "no .envrc was made" test ! -e "$WS/.envrc"

rm -f "$WS"/setid-* # room for the quota's own file
al_run run -p "$quota" -- "$PROBE" fs-info /workspace/airlock-probe
assert_contains "$AL_OUT" "passthrough=0" "a workspace with a quota passes nothing through"
al_run run -p "$quota" -- /usr/bin/python3 /workspace/pt.py quota
assert_eq 0 "$AL_RC" "the quota script ran"
assert_contains "$AL_OUT" "opens 1 1" "with a quota every open is the daemon's"
assert_contains "$AL_OUT" "quota-write ENOSPC" \
	"writing past the quota ends with ENOSPC (at a write or the fsync)"
size=$(stat -c %s "$WS/big")
assert_true "the host file holds at most the quota ($size bytes)" test "$size" -le $((1024 * 1024))

it_finish
