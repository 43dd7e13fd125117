#!/usr/bin/env bash
# resources.timeout / --timeout: the run ends with exit 124 and timed_out true; a command that
# dies of SIGTERM ends at once, one that ignores SIGTERM gets SIGKILL after --kill-after.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

now_ms()
{
	echo $(($(date +%s%N) / 1000000))
}

# Ignores SIGTERM, and so does its child sleep (an ignored signal stays ignored across exec).
sleep_arg="100.$RANDOM"
start=$(now_ms)
sb_run --json -T 1s --kill-after 1s -- /bin/sh -c "trap '' TERM; sleep $sleep_arg" "$IT_MARK"
elapsed=$(($(now_ms) - start))
assert_eq 124 "$AL_RC" "a command that outlives --timeout exits 124"
assert_eq true "$(json_get "$IT_TMP/al.out" 'd["timed_out"]')" "--json timed_out is true"
assert_eq 124 "$(json_get "$IT_TMP/al.out" 'd["exit_code"]')" "--json exit_code is 124"
dur=$(json_get "$IT_TMP/al.out" 'int(d["duration_ms"])')
if [[ $dur =~ ^[0-9]+$ ]] && [ "$dur" -ge 1900 ]; then
	it_pass "SIGTERM ignored: the run lasts timeout + kill-after (duration_ms $dur >= 1900)"
else
	it_fail "SIGTERM ignored: the run lasts timeout + kill-after" "duration_ms: $dur"
fi
if [ "$elapsed" -ge 1900 ] && [ "$elapsed" -lt 60000 ]; then
	it_pass "the SIGTERM-ignoring sleep was SIGKILLed, not waited for (${elapsed} ms)"
else
	it_fail "the SIGTERM-ignoring sleep was SIGKILLed, not waited for" "elapsed: ${elapsed} ms"
fi
if wait_for 5 it_no_marked_processes "sleep $sleep_arg"; then
	it_pass "the SIGTERM-ignoring sleep is gone"
else
	it_fail "the SIGTERM-ignoring sleep is gone" "$(it_marked_pids "sleep $sleep_arg")"
fi

# Dies of SIGTERM: no wait for the 30 s grace.
start=$(now_ms)
sb_run -T 1s --kill-after 30s -- sleep "$sleep_arg"
elapsed=$(($(now_ms) - start))
assert_eq 124 "$AL_RC" "a plain sleep past --timeout exits 124"
if [ "$elapsed" -lt 25000 ]; then
	it_pass "a command that dies of SIGTERM ends the run before --kill-after (${elapsed} ms)"
else
	it_fail "a command that dies of SIGTERM ends the run before --kill-after" "elapsed: ${elapsed} ms"
fi

# The policy's timeout, in the output too.
policy=$IT_TMP/policy.json
write_policy "$policy" <<EOF2
{"workspace": {"root": "$WS"}, "resources": {"timeout": "1s"}}
EOF2
al_run run -p "$policy" -- /bin/sh -c "echo started; sleep $sleep_arg; echo never" "$IT_MARK"
assert_eq 124 "$AL_RC" "resources.timeout in the policy is honoured"
assert_eq started "$AL_OUT" "output written before the timeout is kept"

# A command that finishes in time is not a timeout.
sb_run --json -T 30s -- /bin/sh -c 'exit 5' "$IT_MARK"
assert_eq 5 "$AL_RC" "a command that ends before --timeout keeps its status"
assert_eq false "$(json_get "$IT_TMP/al.out" 'd["timed_out"]')" "--json timed_out is false"

it_finish
