#!/usr/bin/env bash
# SIGTERM, SIGINT and SIGHUP sent to airlock reach the command: its trap runs, and airlock exits
# with the status the command chose.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

for sig in TERM INT HUP; do
	rm -f "$WS/ready" "$WS/got" "$IT_TMP/airlock.pid"
	# itrun -d: a shell's background job would otherwise start with SIGINT ignored.
	"$ITRUN" -d INT -d QUIT -p "$IT_TMP/airlock.pid" -t "$IT_WATCHDOG" -- \
		"$AIRLOCK" run -w "$WS" -- /bin/sh -c "
			trap 'echo $sig > /workspace/got; exit 42' $sig
			echo ready > /workspace/ready
			while :; do sleep 0.1; done" "$IT_MARK" \
		>"$IT_TMP/sig.out" 2>"$IT_TMP/sig.err" &
	runner=$!
	if ! wait_for 20 test -s "$WS/ready"; then
		it_fail "SIG$sig: the command started" "$(cat "$IT_TMP/sig.err")"
		kill -KILL "$runner" 2>/dev/null
		wait "$runner" 2>/dev/null
		continue
	fi
	kill -s "$sig" "$(cat "$IT_TMP/airlock.pid")"
	wait "$runner"
	rc=$?
	AL_ERR=$(cat "$IT_TMP/sig.err")
	assert_eq "$sig" "$(cat "$WS/got" 2>/dev/null)" "SIG$sig sent to airlock reaches the command's trap"
	assert_eq 42 "$rc" "after SIG$sig airlock exits with the command's status"
done

# The sandbox's pid 1 killed from outside (by its user, say): airlock says so, and reports the
# signal as the command's end, as when the command itself was killed.
rm -f "$WS/ready"
"$ITRUN" -t "$IT_WATCHDOG" -- "$AIRLOCK" run -w "$WS" -- /bin/sh -c "
	echo ready > /workspace/ready; exec sleep 30" "$IT_MARK" >"$IT_TMP/k.out" 2>"$IT_TMP/k.err" &
runner=$!
if wait_for 20 test -s "$WS/ready"; then
	kill -KILL "$(pgrep -x airlock-init -P "$(pgrep -x airlock -P "$runner" || echo "$runner")" ||
		pgrep -n -x airlock-init)"
fi
wait "$runner"
assert_eq 137 "$?" "pid 1 killed from outside: exit 137"
assert_contains "$(cat "$IT_TMP/k.err")" "pid 1 was killed by signal 9 from outside" \
	"... and airlock says who ended the command"

it_finish
