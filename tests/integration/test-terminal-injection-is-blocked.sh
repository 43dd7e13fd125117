#!/usr/bin/env bash
# A sandbox started from a terminal cannot type into it: the terminal is not passed in (stdin is a
# pipe airlock feeds), nothing reaches the terminal's input queue, and the sandbox has no
# controlling terminal, with or without one on airlock's side. With -t the command's terminal is
# a pty of the sandbox's own, and TIOCSTI is refused on it.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

# on_tty RUN-ARGS...: `airlock run -w $WS RUN-ARGS` under itrun -T; sets rc, out (CR removed)
# and AL_ERR.
on_tty()
{
	"$ITRUN" -T -t "$IT_WATCHDOG" -- "$AIRLOCK" run -w "$WS" "$@" \
		>"$IT_TMP/tty.out" 2>"$IT_TMP/tty.err"
	rc=$?
	AL_ERR=$(cat "$IT_TMP/tty.err")
	out=$(tr -d '\r' <"$IT_TMP/tty.out")
}

# itrun -T: airlock runs on a new pseudo-terminal that is its controlling terminal; itrun exits
# 99 when bytes were left in the terminal's input queue after the run. airlock does not hand the
# terminal to the sandbox at all: its stdin is a pipe that airlock feeds, so there is no terminal
# to inject into, to change the modes of, or to write escape sequences to past the capture.
on_tty -- /bin/sh -c \
	'if [ -t 0 ]; then echo "stdin=tty"; else echo "stdin=$(readlink /proc/self/fd/0 | cut -d: -f1)"; fi'
assert_eq "stdin=pipe" "$out" "started from a terminal, the sandbox's stdin is a pipe, not the terminal"
assert_eq 0 "$rc" "the run on a terminal exits 0"

on_tty -- "$PROBE" tiocsti
assert_match '^tiocsti: blocked \(no terminal' "$out" "TIOCSTI finds no terminal to inject into"
assert_eq 0 "$rc" "no byte was injected into the terminal's input (itrun exits 99 if one was)"

on_tty -- "$PROBE" no-ctty
assert_match '^no-ctty: blocked' "$out" "started from a terminal, the sandbox has no controlling terminal"
assert_eq 0 "$rc" "the no-ctty probe exits 0 under a terminal"

# With -t the command has a terminal, but its own (the sandbox's pty): TIOCSTI is refused there
# too, and nothing reaches airlock's terminal.
on_tty -t -- "$PROBE" tiocsti
assert_eq "tiocsti: blocked (EPERM)" "$out" "with -t, TIOCSTI on the command's own terminal is refused"
assert_eq 0 "$rc" "with -t, no byte was injected into airlock's terminal"

sb_run -- "$PROBE" no-ctty
assert_match '^no-ctty: blocked' "$AL_OUT" "started without a terminal, the sandbox has none either"

it_finish
