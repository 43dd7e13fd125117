#!/usr/bin/env bash
# A session's checkpoint holds the workspace as the host has it, also after the host changed
# files behind the sandbox's back within the kernel's cache window (entries, attributes and pages
# are kept for a minute): a file whose content and size changed, a new file the sandbox had
# looked for (a cached "no such file"), a deleted file and a renamed one the sandbox had read.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

SESSIONS=/var/lib/airlock/sessions

printf 'old\n' >"$WS/changed"
printf 'doomed\n' >"$WS/deleted"
printf 'moving\n' >"$WS/before-rename"
mkdir "$WS/sub"
printf 'deep old\n' >"$WS/sub/deep"
printf 'keep\n' >"$WS/sub/doomed-too"
printf 'held and rather long\n' >"$WS/held-shrinks"
printf 'held\n' >"$WS/held-grows"

al_run session start -w "$WS" --owner 0
assert_eq 0 "$AL_RC" "session start exits 0"
ID=$AL_OUT

# the sandbox reads everything (pages, attributes and entries cached) and looks for names the
# host will make (negative entries cached)
al_run session exec "$ID" -- /bin/sh -c 'cat changed deleted before-rename sub/deep sub/doomed-too; ls -l . sub >/dev/null; test -e new || test -e after-rename || test -e sub/new-deep || echo absent'
assert_eq "$(printf 'old\ndoomed\nmoving\ndeep old\nkeep\nabsent')" "$AL_OUT" "the sandbox has read the workspace"
# a process of the session keeps two files open: the kernel keeps their inodes (and sizes)
al_run session exec "$ID" -- /bin/sh -c 'cat held-shrinks held-grows >/dev/null; (sleep 300 <held-shrinks 3<held-grows &); echo ok'
assert_eq ok "$AL_OUT" "a process of the session holds two files open"

# the host changes it, directly in the folder
printf 'new content, longer than before\n' >"$WS/changed"
rm "$WS/deleted" "$WS/sub/doomed-too"
mv "$WS/before-rename" "$WS/after-rename"
printf 'made on the host\n' >"$WS/new"
printf 'deep new and longer\n' >"$WS/sub/deep"
printf 'also new\n' >"$WS/sub/new-deep"
printf 'short\n' >"$WS/held-shrinks"
printf 'held, then grown on the host\n' >"$WS/held-grows"

al_run session checkpoint "$ID" now
assert_eq 0 "$AL_RC" "checkpoint exits 0"
CP=$SESSIONS/$ID/checkpoints/now
assert_eq "new content, longer than before" "$(cat "$CP/changed" 2>&1)" "checkpoint: a changed file has the host's content and size"
assert_eq "deep new and longer" "$(cat "$CP/sub/deep" 2>&1)" "checkpoint: a changed file in a folder too"
assert_eq "made on the host" "$(cat "$CP/new" 2>&1)" "checkpoint: a file the host made (looked for before) is in it"
assert_eq "also new" "$(cat "$CP/sub/new-deep" 2>&1)" "checkpoint: a file the host made in a folder is in it"
assert_false "checkpoint: a file the host deleted is not in it" test -e "$CP/deleted"
assert_false "checkpoint: a file the host deleted in a folder is not in it" test -e "$CP/sub/doomed-too"
assert_false "checkpoint: a renamed file is not under its old name" test -e "$CP/before-rename"
assert_eq "moving" "$(cat "$CP/after-rename" 2>&1)" "checkpoint: a renamed file is under its new name"
assert_eq "short" "$(cat "$CP/held-shrinks" 2>&1)" "checkpoint: a file held open and shrunk on the host has the host's content"
assert_eq 6 "$(stat -c %s "$CP/held-shrinks")" "checkpoint: and the host's size"
assert_eq "held, then grown on the host" "$(cat "$CP/held-grows" 2>&1)" "checkpoint: a file held open and grown on the host has the host's content"

# and the sandbox sees the host's workspace from then on
al_run session exec "$ID" -- /bin/sh -c 'cat changed new after-rename sub/deep; test -e deleted || echo gone'
assert_eq "$(printf 'new content, longer than before\nmade on the host\nmoving\ndeep new and longer\ngone')" "$AL_OUT" \
	"after the checkpoint the sandbox sees the host's changes"

# a restore into a fresh state brings back exactly that
printf 'changed again\n' >"$WS/changed"
al_run session restore "$ID" now
assert_eq 0 "$AL_RC" "restore exits 0"
assert_eq "new content, longer than before" "$(cat "$WS/changed")" "restore: the host folder holds the checkpoint's content"
al_run session exec "$ID" -- /bin/cat changed
assert_eq "new content, longer than before" "$AL_OUT" "restore: the sandbox sees it"

al_run session stop "$ID"
assert_eq 0 "$AL_RC" "stop exits 0"
wait_for 10 test ! -e "$SESSIONS/$ID" || true
it_finish
