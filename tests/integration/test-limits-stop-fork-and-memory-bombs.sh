#!/usr/bin/env bash
# resources.pids stops a fork bomb (fork fails with EAGAIN, the run ends by itself) and
# resources.memory stops a memory hog (OOM-killed: exit 137, oom_killed true in --json).
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

pids_policy=$IT_TMP/pids.json
write_policy "$pids_policy" <<EOF2
{"workspace": {"root": "$WS"}, "resources": {"pids": 64}}
EOF2
al_run run -p "$pids_policy" -- "$PROBE" forkbomb 1000
assert_eq 0 "$AL_RC" "forkbomb probe ends by itself under pids 64"
assert_match '^forkbomb: blocked \(EAGAIN\) after [0-9]+ children$' "$AL_OUT" "fork() fails with EAGAIN"
forked=$(sed -n 's/.*after \([0-9]*\) children.*/\1/p' <<<"$AL_OUT")
if [ -n "$forked" ] && [ "$forked" -lt 64 ]; then
	it_pass "fewer than 64 children were forked ($forked)"
else
	it_fail "fewer than 64 children were forked" "forked: ${forked:-?}"
fi

# A shell fork bomb, bounded: 300 background sleeps; the shell gives up when fork fails, and the
# run must end without waiting for anyone.
sleep_arg="29.$RANDOM"
al_run run -p "$pids_policy" -- /bin/sh -c "
	i=0
	while [ \$i -lt 300 ]; do sleep $sleep_arg & i=\$((i + 1)); done
	echo spawned-all" "$IT_MARK"
assert_ne 0 "$AL_RC" "a shell fork bomb under pids 64 fails"
assert_not_contains "$AL_OUT" spawned-all "the shell could not spawn 300 processes"
assert_contains "$AL_ERR" "fork" "the shell reports that it cannot fork"
if wait_for 5 it_no_marked_processes "sleep $sleep_arg"; then
	it_pass "the fork bomb's processes are gone after the run"
else
	it_fail "the fork bomb's processes are gone after the run" "$(it_marked_pids "sleep $sleep_arg" | head)"
fi

mem_policy=$IT_TMP/memory.json
write_policy "$mem_policy" <<EOF2
{"workspace": {"root": "$WS"}, "resources": {"memory": "64Mi"}}
EOF2
al_run run -p "$mem_policy" --json -- "$PROBE" memhog 512
assert_eq 137 "$AL_RC" "a memory hog under memory 64Mi exits 137"
assert_eq 137 "$(json_get "$IT_TMP/al.out" 'd["exit_code"]')" "--json exit_code is 137"
assert_eq 9 "$(json_get "$IT_TMP/al.out" 'd["signal"]')" "--json signal is 9"
assert_eq true "$(json_get "$IT_TMP/al.out" 'd["oom_killed"]')" "--json oom_killed is true"
assert_not_contains "$(json_get "$IT_TMP/al.out" 'd["stdout"]')" touched "the hog never got its 512 MiB"

al_run run -p "$mem_policy" --json -- "$PROBE" memhog 16
assert_eq 0 "$AL_RC" "16 MiB fit under memory 64Mi"
assert_eq "memhog: touched 16 MiB" "$(json_get "$IT_TMP/al.out" 'd["stdout"].strip()')" \
	"the probe touched all 16 MiB"
assert_eq false "$(json_get "$IT_TMP/al.out" 'd["oom_killed"]')" "--json oom_killed is false without an OOM kill"

it_finish
