#!/usr/bin/env bash
# `airlock session exec` passes the signals it gets (INT, TERM, HUP, QUIT, USR1, USR2) on to its
# command, as `airlock run` does: the command's handler runs and its exit status is the result;
# Ctrl-C on a terminal no longer ends the command unseen. A client killed outright still takes
# its command with it.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

al_run session start -w "$WS"
assert_eq 0 "$AL_RC" "session start exits 0"
ID=$AL_OUT

# exec_trapping SIGNAL: a command that reports SIGNAL and exits 7, signalled once it is ready.
exec_trapping()
{
	local sig=$1 pid
	rm -f "$IT_TMP/out"
	"$AIRLOCK" session exec "$ID" -- /bin/sh -c \
		"trap 'echo got-$sig; exit 7' $sig; echo ready; while :; do sleep 0.05; done" \
		>"$IT_TMP/out" 2>"$IT_TMP/err" &
	pid=$!
	wait_for 20 grep -q ready "$IT_TMP/out" || it_fail "$sig: the command did not start"
	kill -s "$sig" "$pid"
	wait "$pid"
	echo $?
}

for sig in INT TERM HUP USR1; do
	rc=$(exec_trapping "$sig")
	assert_eq "7" "$rc" "SIG$sig: the command's handler decides the exit status"
	assert_contains "$(cat "$IT_TMP/out")" "got-$sig" "SIG$sig reached the command"
done

# Killed outright, the client cannot pass anything on: the command is killed with it.
"$AIRLOCK" session exec "$ID" -- /bin/sh -c 'echo ready; exec sleep 300' >"$IT_TMP/out" &
pid=$!
wait_for 20 grep -q ready "$IT_TMP/out"
kill -KILL "$pid"
wait "$pid" 2>/dev/null
gone()
{
	al_run session exec "$ID" -- /bin/sh -c 'ps -e -o comm= | grep -c "^sleep$" || true'
	[ "$AL_OUT" = 0 ]
}
assert_true "SIGKILL of the client: its command is gone too" wait_for 10 gone

al_run session stop "$ID"
assert_eq 0 "$AL_RC" "session stop exits 0"
it_finish
