#!/usr/bin/env bash
# airlock started by a parent that set SIGCHLD to SIG_IGN (which the exec'd airlock inherits)
# still waits for its sandbox and reports the right exit code.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

# ign_run ARGS: airlock run ARGS with SIGCHLD ignored.
ign_run()
{
	"$ITRUN" -i CHLD -t "$IT_WATCHDOG" -- "$AIRLOCK" run -w "$WS" "$@" \
		>"$IT_TMP/al.out" 2>"$IT_TMP/al.err"
	AL_RC=$?
	AL_OUT=$(cat "$IT_TMP/al.out")
	AL_ERR=$(cat "$IT_TMP/al.err")
}

ign_run -- /bin/true
assert_eq 0 "$AL_RC" "with SIGCHLD ignored, true exits 0"
# The command starts with default dispositions: an inherited SIG_IGN for SIGCHLD would make its
# own wait() calls fail (ECHILD). No shell in between: dash resets SIGCHLD itself.
ign_run -- sed -n 's/^SigIgn:[[:space:]]*//p' /proc/self/status
ignored=$AL_OUT
if [[ $ignored =~ ^[0-9a-f]{16}$ ]] && (((16#$ignored & (1 << 16)) == 0)); then
	it_pass "the command does not inherit the ignored SIGCHLD (SigIgn $ignored)"
else
	it_fail "the command does not inherit the ignored SIGCHLD" "SigIgn: $ignored"
fi
ign_run -- /bin/sh -c 'exit 3' "$IT_MARK"
assert_eq 3 "$AL_RC" "with SIGCHLD ignored, exit 3 is reported as 3"
ign_run -- /bin/sh -c 'kill -9 $$' "$IT_MARK"
assert_eq 137 "$AL_RC" "with SIGCHLD ignored, a SIGKILLed command exits 137"
ign_run -- /nonexistent/airlock-it-command
assert_eq 127 "$AL_RC" "with SIGCHLD ignored, a missing command exits 127"
ign_run --json -- /bin/sh -c 'echo out; exit 4' "$IT_MARK"
assert_eq 4 "$AL_RC" "with SIGCHLD ignored, --json runs exit 4"
assert_eq "4 out" "$(json_get "$IT_TMP/al.out" '"%s %s" % (d["exit_code"], d["stdout"].strip())')" \
	"with SIGCHLD ignored, the --json result has the exit code and the output"
ign_run -T 1s -- sleep 100
assert_eq 124 "$AL_RC" "with SIGCHLD ignored, a timeout still exits 124"

it_finish
