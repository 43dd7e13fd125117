#!/usr/bin/env bash
# A session's restore in a workspace that holds write-protected entries (.git, .envrc, ...: the
# workspace filesystem refuses the sandbox's writes to what the host runs later). The sandbox
# cannot have changed them, so the restore leaves them as they are and restores the rest; one it
# cannot make the checkpoint's again (the host changed it) is reported, and the session stays.
# A refused removal is never retried in a loop.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

SESSIONS=/var/lib/airlock/sessions

# An empty .git (the red team's reproduction) and a protected file, next to ordinary files.
echo a >"$WS/f"
mkdir "$WS/.git" "$WS/sub"
echo 'export X=1' >"$WS/.envrc"
echo s >"$WS/sub/g"
al_run session start --owner 0 -w "$WS"
assert_eq 0 "$AL_RC" "session start"
ID=$AL_OUT
al_run session checkpoint "$ID" c1
assert_eq 0 "$AL_RC" "checkpoint of a workspace with protected entries"
echo b >"$WS/f"
al_run session exec "$ID" -- /bin/sh -c 'echo c > sub/g; echo new > later'
al_run session restore "$ID" c1
assert_eq "0 " "$AL_RC $AL_ERR" "restore succeeds"
assert_eq a "$(cat "$WS/f")" "f has its checkpointed content"
assert_eq s "$(cat "$WS/sub/g")" "sub/g too"
assert_false "a later file is gone" test -e "$WS/later"
assert_true ".git is still there" test -d "$WS/.git"
assert_eq 'export X=1' "$(cat "$WS/.envrc")" ".envrc is untouched"
al_run session exec "$ID" -- /bin/cat f
assert_eq "0 a" "$AL_RC $AL_OUT" "the session is alive and sees the restored file"

# A .git with content: what git writes as it works (objects, HEAD) is restored, what it runs
# (config, hooks) is left as it is.
mkdir -p "$WS/.git/objects/ab" "$WS/.git/hooks"
echo 'ref: refs/heads/main' >"$WS/.git/HEAD"
echo obj >"$WS/.git/objects/ab/cd"
printf '[core]\n\tbare = false\n' >"$WS/.git/config"
printf '#!/bin/sh\n' >"$WS/.git/hooks/pre-commit"
chmod 755 "$WS/.git/hooks/pre-commit"
al_run session checkpoint "$ID" c2
assert_eq 0 "$AL_RC" "checkpoint of a workspace with a .git"
al_run session exec "$ID" -- /bin/sh -c 'echo "ref: refs/heads/other" > .git/HEAD; rm .git/objects/ab/cd; echo x > .git/objects/ab/ef; echo d > f'
al_run session restore "$ID" c2
assert_eq "0 " "$AL_RC $AL_ERR" "restore of a .git with content succeeds"
assert_eq "ref: refs/heads/main obj a" "$(cat "$WS/.git/HEAD" "$WS/.git/objects/ab/cd" "$WS/f" | tr '\n' ' ' | sed 's/ $//')" \
	"git's data and f are the checkpoint's again"
assert_false "an object made later is gone" test -e "$WS/.git/objects/ab/ef"
# .git/config is content-checked: the restore's copy of it takes its name at its release, which
# the kernel sends after close() returned.
wait_for 5 grep -q bare "$WS/.git/config"
assert_eq "$(printf '[core]\n\tbare = false')" "$(cat "$WS/.git/config")" ".git/config is the checkpoint's"

# The host changes a protected file after the checkpoint: the sandbox cannot write it back. The
# restore does the rest, reports that one, and the session stays.
echo 'export X=2' >"$WS/.envrc"
al_run session exec "$ID" -- /bin/sh -c 'echo e > f'
start=$(date +%s%N)
al_run session restore "$ID" c2
took=$((($(date +%s%N) - start) / 1000000))
assert_eq 125 "$AL_RC" "a restore that cannot be completed fails"
assert_contains "$AL_ERR" ".envrc" "and names what it could not restore"
assert_one_error_line "$AL_ERR" "in one error line"
assert_true "without retrying (${took} ms)" test "$took" -lt 5000
assert_eq a "$(cat "$WS/f")" "the rest is restored"
assert_eq 'export X=2' "$(cat "$WS/.envrc")" "the host's protected file is left as it is"
al_run session exec "$ID" -- /bin/true
assert_eq 0 "$AL_RC" "the session is still alive"
assert_true "its checkpoints are kept" test -d "$SESSIONS/$ID/checkpoints/c2"
al_run session stop "$ID"
assert_eq 0 "$AL_RC" "session stop"

it_finish
