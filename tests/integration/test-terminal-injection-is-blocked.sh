#!/usr/bin/env bash
# A sandbox started from a terminal cannot type into it: TIOCSTI on the inherited terminal fails
# (EPERM or EIO) and nothing reaches the terminal's input queue; the sandbox has no controlling
# terminal, with or without one on airlock's side.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

# itrun -T: airlock runs on a new pseudo-terminal that is its controlling terminal; itrun exits
# 99 when bytes were left in the terminal's input queue after the run.
"$ITRUN" -T -t "$IT_WATCHDOG" -- "$AIRLOCK" run -w "$WS" -- "$PROBE" tiocsti \
	>"$IT_TMP/tty.out" 2>"$IT_TMP/tty.err"
rc=$?
AL_ERR=$(cat "$IT_TMP/tty.err")
out=$(tr -d '\r' <"$IT_TMP/tty.out")
assert_match '^tiocsti: blocked \((EPERM|EIO)\)$' "$out" "TIOCSTI on the terminal fails with EPERM or EIO"
assert_eq 0 "$rc" "no byte was injected into the terminal's input (itrun exits 99 if one was)"

"$ITRUN" -T -t "$IT_WATCHDOG" -- "$AIRLOCK" run -w "$WS" -- "$PROBE" no-ctty \
	>"$IT_TMP/tty.out" 2>"$IT_TMP/tty.err"
rc=$?
out=$(tr -d '\r' <"$IT_TMP/tty.out")
assert_match '^no-ctty: blocked' "$out" "started from a terminal, the sandbox has no controlling terminal"
assert_eq 0 "$rc" "the no-ctty probe exits 0 under a terminal"

sb_run -- "$PROBE" no-ctty
assert_match '^no-ctty: blocked' "$AL_OUT" "started without a terminal, the sandbox has none either"

it_finish
