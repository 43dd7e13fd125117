#!/usr/bin/env bash
# airlock never blocks on its own output: a reader that goes away gives the command SIGPIPE (as
# without airlock in between), a reader that stops reading does not keep a timed-out run alive
# (nor does a terminal nobody reads), a slow reader still gets every byte (and a timeout armed for
# the command does not cut it), a signal ends a delivery nobody takes, closed stdio is survived,
# NUL bytes survive --json, and pid 1 keeps none of the fds airlock inherited.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

"$AIRLOCK" run -w "$WS" -- yes | head -n 1 >/dev/null
assert_eq 141 "${PIPESTATUS[0]}" "a reader that goes away ends the command with SIGPIPE (141)"

# The reader never reads: the run still ends at its timeout (sleep is killed afterwards).
rcfile=$IT_TMP/rc
(
	"$AIRLOCK" run -w "$WS" -T 1s --kill-after 1s -- yes
	echo "$?" >"$rcfile"
) | sleep 60 &
reader=$!
wait_for 30 test -s "$rcfile"
assert_eq 124 "$(cat "$rcfile" 2>/dev/null)" "a timed-out run ends although nobody reads its output"
pkill -f "sleep 60" 2>/dev/null
wait "$reader" 2>/dev/null

n=$("$AIRLOCK" run -w "$WS" -- head -c 3000000 /dev/zero | (sleep 1; wc -c))
assert_eq 3000000 "$n" "a slow reader gets every byte"

# The command ends at once (its 100000 bytes fit in the pipes); its reader is slower than the
# timeout. The output is still whole. (A command blocked on a full pipe has not ended: its
# timeout applies.)
n=$( (
	"$AIRLOCK" run -w "$WS" -T 1s -- head -c 100000 /dev/zero
	echo "$?" >"$rcfile"
) | (sleep 2; wc -c))
assert_eq 100000 "$n" "output of a command that ended in time is delivered after its timeout"
assert_eq 0 "$(cat "$rcfile")" "a command that ended in time is not reported as timed out"

# Nobody will ever read, the command is done: SIGTERM ends airlock (it used to wait forever).
rm -f "$rcfile"
(
	"$AIRLOCK" run -w "$WS" -- head -c 100000 /dev/zero &
	echo "$!" >"$IT_TMP/apid"
	wait "$!"
	echo "$?" >"$rcfile"
) | sleep 60 &
reader=$!
wait_for 10 test -s "$IT_TMP/apid"
apid=$(cat "$IT_TMP/apid")
# The sandbox is done: airlock had children (the sandbox, its helpers) and has none now. (Not
# just "has none": under the sanitizer build airlock may not have forked yet; SIGTERM then ended
# its set-up, 143.) A sandbox too short-lived to be seen is surely done after the 10 s.
seen=0
for _ in $(seq 200); do
	if pgrep -P "$apid" >/dev/null; then
		seen=1
	elif [ "$seen" = 1 ]; then
		break
	fi
	sleep 0.05
done
kill -TERM "$apid" 2>/dev/null
wait_for 10 test -s "$rcfile"
assert_eq 0 "$(cat "$rcfile" 2>/dev/null)" "a signal ends a delivery nobody takes, with the command's status"
pkill -f "sleep 60" 2>/dev/null
wait "$reader" 2>/dev/null

# A terminal nobody reads: the timeout still ends the run.
"$IT_PY" - "$AIRLOCK" "$WS" >"$IT_TMP/pty.out" 2>&1 <<'PY'
import os, pty, subprocess, sys, time
master, slave = pty.openpty()
p = subprocess.Popen([sys.argv[1], "run", "-w", sys.argv[2], "-T", "1s", "--kill-after", "1s",
                      "--", "yes"], stdin=subprocess.DEVNULL, stdout=slave, stderr=slave)
os.close(slave)
try:
    print("rc=%d" % p.wait(timeout=30))
except subprocess.TimeoutExpired:
    p.kill()
    print("rc=hung")
PY
assert_eq "rc=124" "$(tail -n 1 "$IT_TMP/pty.out")" "a terminal nobody reads does not stop the timeout"

# stdout and stderr closed: airlock's own fds must not take their places.
"$ITRUN" -t "$IT_WATCHDOG" -- /bin/sh -c \
	'exec "$0" run -w "$1" --audit "$2" -- /bin/sh -c "echo out; echo forged-line >&2; exit 7" >&- 2>&-' \
	"$AIRLOCK" "$WS" "$IT_TMP/closed.audit"
assert_eq 7 "$?" "with stdout and stderr closed, the command's status comes through"
assert_eq 0 "$(grep -c '^forged-line' "$IT_TMP/closed.audit")" \
	"the sandbox's stderr never reaches the audit file"

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
