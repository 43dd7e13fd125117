#!/usr/bin/env bash
# Extended attributes the sandbox sets on the host's files (red team 2, F8) follow the rules the
# workspace's modes do (safe_mode(): never writable by every user, and in a git folder by no one
# but the owner), since an ACL is a mode by other means: user:nobody:rwx on .git/hooks let any
# local user add a hook the host's git runs. Refused (EPERM), the host's file left without it:
# an ACL (access or default) granting write to a named user or group in a git folder, or to
# every user anywhere; the host's security labels and trusted.* attributes, set or removed.
# Taken: an ACL granting a named user read in a git folder or write elsewhere (as group write
# is), and user.* attributes.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

git -C "$WS" init -q .
mkdir "$WS/shared"
setfattr -n security.test -v host "$WS/shared" 2>/dev/null || true

# try PATH NAME ACL|VALUE|-: sets (or, with "-", removes) NAME on /workspace/PATH in the sandbox;
# ACL is "TAG:PERM:ID,..." (tags u U g G m o as in acl(5): user_obj, user, group_obj, group, mask,
# other); prints SET or the error.
try()
{
	sb_run -- "$IT_PY" -c '
import os, struct, sys
path, name, spec = "/workspace/" + sys.argv[1], sys.argv[2], sys.argv[3]
tags = {"u": 1, "U": 2, "g": 4, "G": 8, "m": 0x10, "o": 0x20}
try:
    if spec == "-":
        os.removexattr(path, name)
    elif name.startswith("system.posix_acl"):
        v = struct.pack("<I", 2)
        for e in spec.split(","):
            t, p, i = e.split(":")
            v += struct.pack("<HHI", tags[t], int(p), int(i) if i else 0xffffffff)
        os.setxattr(path, name, v)
    else:
        os.setxattr(path, name, spec.encode())
    print("SET")
except OSError as x:
    print(x.strerror)
' "$@"
	tail -n 1 <<<"$AL_OUT"
}
refused() { assert_eq "Operation not permitted" "$(try "$@")" "$1 $2 ${3:0:40} is refused"; }
taken() { assert_eq SET "$(try "$@")" "$1 $2 ${3:0:40} is taken"; }

nobody_rwx="u:7:,U:7:65534,g:5:,m:7:,o:5:"
refused .git/hooks system.posix_acl_access "$nobody_rwx"
refused .git/hooks system.posix_acl_default "$nobody_rwx"
refused .git system.posix_acl_access "u:7:,g:7:,o:5:"
refused .git/hooks system.posix_acl_access "u:7:,g:5:,G:6:65534,m:7:,o:5:"
refused shared system.posix_acl_access "u:7:,g:5:,o:7:"
refused shared system.posix_acl_default "u:7:,g:5:,o:2:"
taken .git/hooks system.posix_acl_access "u:7:,U:5:65534,g:5:,m:5:,o:5:"
taken shared system.posix_acl_access "$nobody_rwx"
taken shared system.posix_acl_default "$nobody_rwx"
refused shared security.selinux "system_u:object_r:bin_t:s0"
refused shared trusted.overlay.opaque y
refused shared security.test -
taken shared user.note hello

assert_true "the host's .git/hooks has no entry granting user nobody write" \
	sh -c "! getfacl -p '$WS/.git/hooks' 2>/dev/null | grep -q '^user:nobody:.w'"
assert_eq "" "$(getfattr -d -m '^(security|trusted)\.' "$WS/shared" 2>/dev/null | grep -v -e '^#' -e '^security.test=' -e '^$')" \
	"no label or trusted attribute of the sandbox's on the host's folder"
if getfattr -n security.test "$WS/shared" >/dev/null 2>&1; then
	assert_eq host "$(getfattr -n security.test --only-values "$WS/shared")" "the host's own label stays"
fi
assert_eq hello "$(getfattr -n user.note --only-values "$WS/shared")" "user.* reaches the host"
assert_true "the named user's ACL outside git folders reaches the host" \
	sh -c "getfacl -p '$WS/shared' 2>/dev/null | grep -q '^user:nobody:rwx'"
it_finish
