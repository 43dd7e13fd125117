#!/usr/bin/env bash
# airlock never blocks on its own output: a reader that goes away gives the command SIGPIPE (as
# without airlock in between), a reader that stops reading does not keep a timed-out run alive, a
# slow reader still gets every byte, NUL bytes survive --json, and pid 1 keeps none of the fds
# airlock inherited.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

"$AIRLOCK" run -w "$WS" -- yes | head -n 1 >/dev/null
assert_eq 141 "${PIPESTATUS[0]}" "a reader that goes away ends the command with SIGPIPE (141)"

# The reader never reads: the run still ends at its timeout (sleep is killed afterwards).
rcfile=$IT_TMP/rc
(
	"$AIRLOCK" run -w "$WS" -t 1s --kill-after 1s -- yes
	echo "$?" >"$rcfile"
) | sleep 60 &
reader=$!
wait_for 30 test -s "$rcfile"
assert_eq 124 "$(cat "$rcfile" 2>/dev/null)" "a timed-out run ends although nobody reads its output"
pkill -f "sleep 60" 2>/dev/null
wait "$reader" 2>/dev/null

n=$("$AIRLOCK" run -w "$WS" -- head -c 3000000 /dev/zero | (sleep 1; wc -c))
assert_eq 3000000 "$n" "a slow reader gets every byte"

al_run run -w "$WS" --json -- printf 'a\000b'
printf '%s' "$AL_OUT" >"$IT_TMP/nul.json"
assert_eq True "$(json_get "$IT_TMP/nul.json" 'str(d["stdout"] == "a\x00b")')" \
	"a NUL byte in the output survives --json"

# pid 1 never execs, so close-on-exec never closes anything for it: it must close what it
# inherited itself. fd 7 here is a file only this test has open.
exec 7>"$IT_TMP/inherited-$IT_MARK"
"$AIRLOCK" run -w "$WS" -- /bin/sh -c 'touch /workspace/started; exec sleep 5' &
airlock_pid=$!
exec 7>&-
wait_for 10 test -e "$WS/started"
init_pid=$(pgrep -P "$airlock_pid" | head -n 1)
listing=$(ls -l "/proc/$init_pid/fd" 2>/dev/null | sed -n 's/.* \([0-9]*\) -> /\1:/p' | tr '\n' ' ')
fds=$(wc -w <<<"$listing")
held=$(ls -l "/proc/$init_pid/fd" 2>/dev/null | grep -c "inherited-$IT_MARK")
kill "$airlock_pid" 2>/dev/null
wait "$airlock_pid" 2>/dev/null
assert_eq 0 "$held" "pid 1 does not keep an fd airlock inherited"
assert_eq yes "$([ "$fds" -le 5 ] && echo yes || echo "no: $listing")" \
	"pid 1 holds only stdio, the sync socket and its signalfd"

it_finish
