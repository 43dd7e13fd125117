#!/usr/bin/env bash
# `airlock run -t` gives the command a terminal of its own (a pty of the sandbox's devpts) that
# is its controlling terminal: real programs driven through tmux behave as on the host (bash's
# job control, Ctrl-C, Ctrl-Z, Ctrl-\, python3's line editing and history, a curses program that
# follows a resize), and the host terminal's modes are restored however the run ends (exit,
# timeout, SIGKILL of the sandbox). With --json the transcript is captured; -t DURATION (the old
# timeout flag) is refused.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

if ! command -v tmux >/dev/null; then
	it_fail "tmux is missing (scripts/dev.sh deps installs it)"
	it_finish
fi
# A server of its own for each pane: a new one does not wait for the last one's end.
PANES=0
tmux_() { tmux -L "airlock-it-$$-$PANES" -f /dev/null "$@"; }
tmux_stop() { tmux_ kill-server 2>/dev/null; }
trap 'tmux_stop; it_cleanup' EXIT

# pane_has TEXT: the pane shows TEXT (its visible screen).
pane_has() { tmux_ capture-pane -p -t t | grep -qF -- "$1"; }
# wait_pane TEXT WHAT: waits up to 20 s for TEXT, fails WHAT (with the screen) when it never comes.
wait_pane()
{
	if wait_for 20 pane_has "$1"; then
		it_pass "$2"
		return 0
	fi
	it_fail "$2: no \"$1\" on the screen" "$(tmux_ capture-pane -p -t t)"
	return 1
}
keys() { tmux_ send-keys -t t "$@"; }

# start_pane ARGS...: a 100x30 pane that runs airlock ARGS, then prints its exit code and whether
# the terminal's modes are as they were before.
start_pane()
{
	local cmd
	printf -v cmd '%q ' "$@"
	cat >"$IT_TMP/pane.sh" <<EOF
before=\$(stty -g)
$AIRLOCK $cmd
rc=\$?
after=\$(stty -g)
[ "\$before" = "\$after" ] && m=restored || m=changed
echo "AIRLOCK-EXIT=\$rc MODES=\$m"
exec sh -c "sleep 600" $IT_MARK
EOF
	tmux_stop
	PANES=$((PANES + 1))
	tmux_ new-session -d -s t -x 100 -y 30 "bash $IT_TMP/pane.sh"
}

# 1. bash with job control.
start_pane run -w "$WS" -t -- /bin/bash --norc --noprofile -i
wait_pane 'bash-' "bash starts interactive on the terminal"
keys 'tty; stty size; [ -t 0 ] && echo CTTY-$(ps -o tty= -p $$)' Enter
wait_pane '/dev/pts/0' "the command's terminal is the sandbox's /dev/pts/0"
wait_pane '30 100' "it starts at the host terminal's size"
wait_pane 'CTTY-pts/0' "it is bash's controlling terminal"
keys 'sleep 100' Enter
sleep 0.5
keys C-z
wait_pane 'Stopped' "Ctrl-Z stops the foreground job"
keys 'bg; jobs' Enter
wait_pane 'Running' "bg resumes it in the background"
keys 'fg' Enter
sleep 0.5
keys C-c
keys 'echo after-intr-$((6*7))' Enter
wait_pane 'after-intr-42' "Ctrl-C ends the foreground job and bash goes on"
keys 'sleep 100' Enter
sleep 0.5
keys 'C-\'
keys 'echo after-quit-$((6*7))' Enter
wait_pane 'after-quit-42' "Ctrl-\\ quits the foreground job and bash goes on"
tmux_ resize-window -t t -x 120 -y 40
keys 'trap "echo WINCH-\$(stty size | tr \" \" x)" WINCH; kill -WINCH $$' Enter
wait_pane 'WINCH-40x120' "a resize reaches the command's terminal"
keys 'exit 3' Enter
wait_pane 'AIRLOCK-EXIT=3 MODES=restored' "bash's exit code is airlock's, and the terminal is as it was"

# 2. python3's REPL: line editing (cursor keys) and history.
start_pane run -w "$WS" -t -- /usr/bin/python3 -q
wait_pane '>>>' "python3's REPL starts"
keys 'print(6*)' Left 7 Enter
wait_pane '42' "a line edited with the cursor keys runs as edited"
keys 'x = 5' Enter Up Up Enter
sleep 0.5
keys C-d
wait_pane 'AIRLOCK-EXIT=0 MODES=restored' "the history recalls the line, and Ctrl-D ends the REPL"
[ "$(tmux_ capture-pane -p -t t | grep -c '^42$')" = 2 ] &&
	it_pass "the recalled line ran again" ||
	it_fail "the recalled line ran again" "$(tmux_ capture-pane -p -t t)"

# 3. A curses program (full screen, raw keys, its own resize handling).
cat >"$WS/curses-size.py" <<'EOF'
import curses
def main(s):
    while True:
        s.erase()
        r, c = s.getmaxyx()
        s.addstr(0, 0, "SIZE %dx%d press q" % (r, c))
        s.refresh()
        k = s.getch()
        if k == ord("q"):
            return
curses.wrapper(main)
EOF
start_pane run -w "$WS" -t -- /usr/bin/python3 /workspace/curses-size.py
wait_pane 'SIZE 30x100 press q' "the curses program draws at the terminal's size"
tmux_ resize-window -t t -x 90 -y 25
wait_pane 'SIZE 25x90 press q' "and redraws at the new size after a resize"
keys q
wait_pane 'AIRLOCK-EXIT=0 MODES=restored' "it ends on its key, and the terminal is as it was"

# 4. A timeout, and SIGKILL of the sandbox, restore the terminal too.
start_pane run -w "$WS" -t -T 1s -- /bin/sleep 100
wait_pane 'AIRLOCK-EXIT=124 MODES=restored' "a timeout ends the run (124), the terminal restored"
start_pane run -w "$WS" -t -- /bin/sh -c 'echo SLEEPING; sleep 100' "$IT_MARK"
wait_pane 'SLEEPING' "the command runs"
init=""
for p in $(it_marked_pids); do
	pp=$(awk '{print $4}' /proc/"$p"/stat 2>/dev/null) || continue
	[ "$(cat /proc/"$pp"/comm 2>/dev/null)" = airlock-init ] && init=$pp
done
[ -n "$init" ] && [ "$(cat /proc/"$init"/comm)" = airlock-init ] ||
	it_fail "found the sandbox's pid 1" "pid '$init'"
kill -KILL "$init"
wait_pane 'AIRLOCK-EXIT=137 MODES=restored' "SIGKILL of the sandbox ends the run, the terminal restored"

# 4b. Started in the background of an interactive shell, the run leaves the terminal and its
# input to the foreground; brought forward with fg, it takes both.
tmux_stop
PANES=$((PANES + 1))
tmux_ new-session -d -s t -x 100 -y 30 "bash --norc --noprofile -i"
wait_pane 'bash-' "an interactive shell on the terminal"
keys "stty -g >$IT_TMP/modes.before; $AIRLOCK run -w $WS -t -- /bin/cat & sleep 1; stty -g >$IT_TMP/modes.bg; echo BG-\$((6*7))" Enter
wait_pane 'BG-42' "the run started in the background"
assert_eq "$(cat "$IT_TMP/modes.before")" "$(cat "$IT_TMP/modes.bg")" "in the background it left the terminal's modes alone"
keys 'fg' Enter
sleep 1
keys 'typed-after-fg' Enter
wait_pane 'typed-after-fg' "brought forward, it reads the terminal"
keys C-d
# What is typed before the shell has its terminal back goes to the run, which is ending: wait for
# the prompt on the last line (a slow build, ASan's, took longer than typing did).
prompt_back() { [[ $(tmux_ capture-pane -p -t t | grep -v '^$' | tail -n 1) =~ ^bash-[0-9.]+#\ ?$ ]]; }
wait_for 20 prompt_back || it_fail "the shell's prompt is back after Ctrl-D" "$(tmux_ capture-pane -p -t t)"
keys "echo EXIT=\$? MODES=\$(stty -g | cmp -s - $IT_TMP/modes.before && echo restored)" Enter
wait_pane 'EXIT=0 MODES=restored' "cat ends on Ctrl-D, and the terminal is as it was"
screen=$(tmux_ capture-pane -p -t t)
assert_not_contains "$screen" "command not found" "nothing typed for the run reached the shell"
[ "$(grep -c 'typed-after-fg' <<<"$screen")" -eq 2 ] &&
	it_pass "what was typed reached cat (echoed, then cat's)" ||
	it_fail "what was typed reached cat (echoed, then cat's)" "$(tmux_ capture-pane -p -t t)"

# 5. A session's exec gets a terminal of its own the same way, each exec its own.
al_run session start -w "$WS"
ID=$(printf '%s\n' "$AL_OUT" | tail -n 1)
start_pane session exec "$ID" -t -- /bin/bash --norc --noprofile -i
wait_pane 'bash-' "a session's bash starts interactive on the terminal"
keys 'sleep 100' Enter
sleep 0.5
keys C-z
wait_pane 'Stopped' "Ctrl-Z stops its foreground job"
keys 'kill %1; echo CTTY-$(ps -o tty= -p $$)' Enter
wait_pane 'CTTY-pts/' "the terminal is its bash's controlling terminal"
tmux_ resize-window -t t -x 80 -y 20
keys 'trap "echo WINCH-\$(stty size | tr \" \" x)" WINCH; kill -WINCH $$' Enter
wait_pane 'WINCH-20x80' "a resize reaches a session's command"
keys 'exit 7' Enter
wait_pane 'AIRLOCK-EXIT=7 MODES=restored' "its exit code is session exec's, and the terminal is as it was"
start_pane session exec "$ID" -t -T 1s -- /bin/sleep 100
wait_pane 'AIRLOCK-EXIT=124 MODES=restored' "a session exec's timeout restores the terminal too"
tmux_stop
al_run session exec "$ID" -t --json -- /bin/sh -c 'tty; exit 4'
printf '%s' "$AL_OUT" >"$IT_TMP/s.json"
assert_match "^'/dev/pts/[0-9]+\\\\r\\\\n'\$" "$(json_get "$IT_TMP/s.json" 'repr(d["stdout"])')" \
	"session exec -t --json captures the transcript"
assert_eq 4 "$AL_RC" "and exits with the command's code"
for i in 1 2; do
	"$ITRUN" -t "$IT_WATCHDOG" -- "$AIRLOCK" session exec "$ID" -t -- /bin/sh -c 'tty; sleep 1' \
		</dev/null >"$IT_TMP/tty$i.out" 2>&1 &
done
wait
assert_ne "$(cat "$IT_TMP/tty1.out")" "$(cat "$IT_TMP/tty2.out")" \
	"two execs at once each get a terminal of their own"
al_run session exec "$ID" -- /bin/sh -c 'tty; echo rc=$?' </dev/null
assert_eq $'not a tty\nrc=1' "$AL_OUT" "without -t a session's command has no terminal"
al_run session stop "$ID"
al_run session start -w "$WS"
ID2=$(printf '%s\n' "$AL_OUT" | tail -n 1)

# 6. --json captures the transcript: stdout and stderr as one, through the terminal's own
# line discipline (CR LF).
sb_run -t --json -- /bin/sh -c 'echo out; echo err >&2; tty'
printf '%s' "$AL_OUT" >"$IT_TMP/t.json"
assert_eq "'out\\r\\nerr\\r\\n/dev/pts/0\\r\\n'" "$(json_get "$IT_TMP/t.json" 'repr(d["stdout"])')" \
	"--json with -t captures the transcript"

# 7. Input that is not a terminal is typed into the command's terminal, and its end as the
# terminal's EOF character: a command reading lines ends as at a keyboard. (One that changes the
# terminal's modes after the input was typed ahead, as readline does, loses that character, as it
# would at a keyboard: bash is told to exit.)
printf 'echo piped-$((6*7))\nexit 3\n' >"$IT_TMP/in"
al_run run -w "$WS" -t -- /bin/bash --norc --noprofile -i <"$IT_TMP/in"
assert_contains "$AL_OUT" "piped-42" "input from a file reaches the command through its terminal"
assert_eq 3 "$AL_RC" "all of it"
printf 'one\ntwo\n' >"$IT_TMP/in"
al_run run -w "$WS" -t -- /bin/sh -c 'while read -r l; do echo "got-$l"; done; echo done-reading' <"$IT_TMP/in"
assert_contains "$AL_OUT" "done-reading" "the input's end is the end of file of a command reading lines"
assert_eq 0 "$AL_RC" "which then ends"
al_run run -w "$WS" -t -- /bin/cat </dev/null
assert_eq 0 "$AL_RC" "an empty input ends cat at once"
printf 'no newline' >"$IT_TMP/in"
al_run run -w "$WS" -t -- /bin/cat <"$IT_TMP/in"
assert_eq "0 no newlineno newline" "$AL_RC $AL_OUT" "an input whose last line has no newline ends too (echoed, then cat's)"
printf 'a\n\023b\n' >"$IT_TMP/in"
al_run run -w "$WS" -t -T 30s -- /bin/sh -c 'read a; seq 3000 | tail -n 1; read b; echo "b=$b"' <"$IT_TMP/in"
assert_eq 0 "$AL_RC" "a ^S in piped input does not stop the command's output (no flow control without a terminal)"
assert_contains "$AL_OUT" "3000" "... all of it came"
printf 'line\n' >"$IT_TMP/in"
al_run session exec "$ID2" -t -- /bin/cat <"$IT_TMP/in"
assert_eq "line" "$(printf '%s' "$AL_OUT" | tr -d '\r' | sort -u)" \
	"a session exec's input reaches its terminal (echoed, then cat's), and its end ends cat"
al_run session stop "$ID2"

# 8. Without -t nothing changes: no terminal, stdin a pipe or as given.
sb_run -- /bin/sh -c 'tty; echo rc=$?' </dev/null
assert_eq $'not a tty\nrc=1' "$AL_OUT" "without -t the command has no terminal"

# 9. A sandbox holds at most 128 ptys: the host's pool (kernel.pty.max) is everyone's.
sb_run -- /usr/bin/python3 -c '
import os
fds = []
try:
    while True:
        fds += os.openpty()
except OSError as e:
    print(len(fds) // 2, e.errno)'
assert_eq "128 28" "$AL_OUT" "the sandbox's devpts gives 128 ptys, then ENOSPC"

# 10. -t DURATION, the old timeout flag, is refused before anything runs.
sb_run -t 30s -- /bin/echo ran
assert_eq 125 "$AL_RC" "-t followed by a duration is refused"
assert_one_error_line "$AL_ERR" "the refusal is one error line"
assert_contains "$AL_ERR" "-T or --timeout" "it names the flag to use"
al_run session exec s-00000000 -t 5s -- /bin/true
assert_contains "$AL_ERR" "-T or --timeout" "session exec refuses it the same way"

it_finish
