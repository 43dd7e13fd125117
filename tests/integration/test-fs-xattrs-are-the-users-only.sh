#!/usr/bin/env bash
# The sandbox sets extended attributes of the user.* namespace only (red team 2, F8): an ACL
# (system.posix_acl_access, _default) on a workspace folder hands another host user what the
# workspace's modes keep from them (user:nobody:rwx on .git/hooks: anyone could add a hook the
# host's git runs), and security.* labels are the host's (SELinux, IMA, file capabilities).
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

command -v git >/dev/null || it_skip "git is not installed"
[ -x /usr/bin/python3 ] || it_skip "needs /usr/bin/python3 in the sandbox"
git -C "$WS" init -q .

# set NAME [VALUE]: sets NAME on /workspace/.git/hooks in the sandbox; prints SET or the error.
set_xattr()
{
	sb_run -- /usr/bin/python3 -c '
import os, struct, sys
def e(tag, perm, uid):
    return struct.pack("<HHI", tag, perm, uid)
acl = struct.pack("<I", 2) + e(1, 7, 0xffffffff) + e(2, 7, 65534) + e(4, 5, 0xffffffff) \
    + e(0x10, 7, 0xffffffff) + e(0x20, 5, 0xffffffff)
value = acl if sys.argv[1].startswith("system.") else b"x"
try:
    os.setxattr("/workspace/.git/hooks", sys.argv[1], value)
    print("SET")
except OSError as x:
    print(x.strerror)
' "$1"
}
for name in system.posix_acl_access system.posix_acl_default security.selinux trusted.x; do
	set_xattr "$name"
	assert_eq "Operation not permitted" "$(tail -n 1 <<<"$AL_OUT")" "$name is refused"
done
set_xattr user.note
assert_eq SET "$(tail -n 1 <<<"$AL_OUT")" "user.* may be set"
assert_eq "" "$("$IT_PY" -c 'import os, sys; print(" ".join(n for n in os.listxattr(sys.argv[1]) if not n.startswith("user.")))' "$WS/.git/hooks")" \
	"the host folder has no ACL or label of the sandbox's"
it_finish
