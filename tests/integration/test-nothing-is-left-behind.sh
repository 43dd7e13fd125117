#!/usr/bin/env bash
# Whatever way a run ends (success, failure, refusal, setup error, timeout, or airlock itself
# killed with SIGKILL), no process of the sandbox, mount, cgroup or temporary file remains; a
# running sandbox adds no mount to the host; and the cgroups a killed airlock could not remove are
# removed at once by its watcher (or, if that was killed too, by the next run).
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

sb_sh 'echo hi'
assert_eq hi "$AL_OUT" "a successful run"
assert_clean "after a successful run"

sb_sh 'echo oops >&2; exit 7'
assert_eq 7 "$AL_RC" "a failing command"
assert_clean "after a failing command"

write_policy "$IT_TMP/bad.json" <<EOF2
{"workspace": {"root": "$WS"}, "resources": {"memory": "lots"}}
EOF2
al_run run -p "$IT_TMP/bad.json" -- /bin/true
assert_eq 125 "$AL_RC" "a refused policy"
assert_clean "after a refused policy"

write_policy "$IT_TMP/missing-mount.json" <<EOF2
{"workspace": {"root": "$WS"},
 "mounts": [{"source": "$IT_TMP/no-such-folder", "target": "/opt/missing", "mode": "ro"}]}
EOF2
it_admit "$IT_TMP/missing-mount.json" # a host folder: tier 3, admitted so that the setup runs
al_run run -p "$IT_TMP/missing-mount.json" --admitted "$IT_TMP/admitted" -- /bin/true
assert_eq 125 "$AL_RC" "a mount whose source does not exist fails the setup with 125"
assert_one_error_line "$AL_ERR" "the setup failure gives one airlock: line"
assert_clean "after a setup failure"

sb_run -T 1s --kill-after 1s -- /bin/sh -c "trap '' TERM; sleep 100" "$IT_MARK"
assert_eq 124 "$AL_RC" "a timed-out run"
assert_clean "after a timeout"

sb_run -- "$PROBE" forkbomb 50
assert_eq "forkbomb: LEAK: forked all 50 children" "$AL_OUT" "a run that forked (and reaped) 50 children"
assert_clean "after a run with many processes"

# airlock killed with SIGKILL while the command runs.
it_snapshot
sleep_arg="300.$RANDOM"
rm -f "$WS/ready"
# Limits, so that the run has cgroups to leave behind.
write_policy "$IT_TMP/limits.json" <<EOF2
{"workspace": {"root": "$WS"}, "resources": {"memory": "256Mi", "pids": 128}}
EOF2
"$ITRUN" -p "$IT_TMP/airlock.pid" -t "$IT_WATCHDOG" -- "$AIRLOCK" run -p "$IT_TMP/limits.json" -- \
	/bin/sh -c "echo ready > /workspace/ready; sleep $sleep_arg" "$IT_MARK" \
	>"$IT_TMP/kill.out" 2>"$IT_TMP/kill.err" &
runner=$!
if wait_for 20 test -s "$WS/ready"; then
	it_pass "the long-running command started"
else
	it_fail "the long-running command started" "$(cat "$IT_TMP/kill.err")"
fi
# The sandbox's sleep (airlock's and its init's command lines mention it too).
sandbox_pid=""
for p in $(it_marked_pids "sleep $sleep_arg"); do
	[ "$(cat "/proc/$p/comm" 2>/dev/null)" = sleep ] && sandbox_pid=$p
done
assert_ne "" "$sandbox_pid" "its sleep is visible on the host while it runs"
new_mounts=$(it_mounts | comm -13 "$IT_TMP/state.mounts" -)
assert_eq "" "$new_mounts" "a running sandbox adds no mount to the host's mount namespace"
# The sandbox's cgroups: where its sleep is, unless that is where this test is too.
run_cgroups=$(comm -13 <(it_cgroup_dirs_of self | sort) <(it_cgroup_dirs_of "${sandbox_pid:-0}" | sort))
assert_ne "" "$run_cgroups" "the sandbox runs in cgroups of its own"
watcher=$(pgrep -P "$(cat "$IT_TMP/airlock.pid")" -x airlock-cgroups)
assert_ne "" "$watcher" "a process outside the sandbox waits to remove its cgroups"
kill -KILL "$(cat "$IT_TMP/airlock.pid")"
wait "$runner"
assert_eq 137 "$?" "airlock died of SIGKILL"
if wait_for 10 it_no_marked_processes "sleep $sleep_arg"; then
	it_pass "the sandbox's processes die with airlock"
else
	it_fail "the sandbox's processes die with airlock" "$(it_marked_pids "sleep $sleep_arg")"
fi
if wait_for 10 it_no_marked_processes; then
	it_pass "no process of the killed run is left"
else
	it_fail "no process of the killed run is left" "$(it_marked_pids)"
fi
assert_eq "" "$(it_mounts | comm -13 "$IT_TMP/state.mounts" -)" "a killed airlock leaves no mount behind"
no_cgroup_of_the_run()
{
	local cg
	for cg in $run_cgroups; do
		[ ! -d "$cg" ] || return 1
	done
}
if wait_for 5 no_cgroup_of_the_run; then
	it_pass "the killed run's cgroups are removed without another run"
else
	it_fail "the killed run's cgroups are removed without another run" "$run_cgroups"
fi
assert_clean "after airlock was killed"

# Watcher killed too: the next run removes what the killed one could not.
it_snapshot
rm -f "$WS/ready"
"$ITRUN" -p "$IT_TMP/airlock.pid" -t "$IT_WATCHDOG" -- "$AIRLOCK" run -p "$IT_TMP/limits.json" -- \
	/bin/sh -c "echo ready > /workspace/ready; sleep $sleep_arg" "$IT_MARK" \
	>"$IT_TMP/kill.out" 2>"$IT_TMP/kill.err" &
runner=$!
wait_for 20 test -s "$WS/ready" || true
sandbox_pid=""
for p in $(it_marked_pids "sleep $sleep_arg"); do
	[ "$(cat "/proc/$p/comm" 2>/dev/null)" = sleep ] && sandbox_pid=$p
done
run_cgroups=$(comm -13 <(it_cgroup_dirs_of self | sort) <(it_cgroup_dirs_of "${sandbox_pid:-0}" | sort))
assert_ne "" "$run_cgroups" "a second run, in cgroups of its own"
airlock_pid=$(cat "$IT_TMP/airlock.pid")
# shellcheck disable=SC2046 # the watcher's pid, or none
kill -KILL "$airlock_pid" $(pgrep -P "$airlock_pid" -x airlock-cgroups)
wait "$runner"
wait_for 10 it_no_marked_processes || true
sb_sh 'echo next'
assert_eq next "$AL_OUT" "the next run works"
left=""
for cg in $run_cgroups; do
	[ -d "$cg" ] && left="$left $cg"
done
assert_eq "" "$left" "the killed run's cgroups are removed by the next run"
assert_clean "after airlock and its watcher were killed and the next run"

it_finish
