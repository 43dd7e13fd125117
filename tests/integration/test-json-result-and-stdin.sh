#!/usr/bin/env bash
# --json prints one JSON object on one line with the documented keys and values, truncates each
# captured stream at 1 MiB with a flag, and escapes any text; --timing adds "steps". stdin
# reaches the command, with and without --json.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

res=$IT_TMP/al.out
policy=$IT_TMP/policy.json
write_policy "$policy" <<EOF2
{"workspace": {"root": "$WS"}, "labels": ["it-label"]}
EOF2

al_run run -p "$policy" --json -- /bin/sh -c 'echo out; echo err >&2; exit 3' "$IT_MARK"
assert_eq 3 "$AL_RC" "with --json airlock still exits with the command's status"
assert_eq 1 "$(grep -c '' "$res")" "--json prints exactly one line"
assert_eq "" "$AL_ERR" "--json prints nothing on stderr for a normal run"
documented="duration_ms exit_code labels oom_killed policy_hash signal stderr stderr_truncated stdout stdout_truncated timed_out violations"
assert_eq "" "$(json_get "$res" '" ".join(k for k in "'"$documented"'".split() if k not in d)')" \
	"the result has every documented key"
assert_eq false "$(json_get "$res" '"steps" in d')" "the result has no steps without --timing"
assert_eq "'out\\n'" "$(json_get "$res" 'repr(d["stdout"])')" "stdout is captured"
assert_eq "err" "$(json_get "$res" 'd["stderr"].strip()')" "stderr is captured"
assert_eq "false false" "$(json_get "$res" '"%s %s" % (str(d["stdout_truncated"]).lower(), str(d["stderr_truncated"]).lower())')" \
	"nothing is truncated"
assert_eq 3 "$(json_get "$res" 'd["exit_code"]')" "exit_code is 3"
assert_eq null "$(json_get "$res" 'd["signal"]')" "signal is null when the command exited"
assert_eq false "$(json_get "$res" 'd["timed_out"]')" "timed_out is false"
assert_eq false "$(json_get "$res" 'd["oom_killed"]')" "oom_killed is false"
assert_eq true "$(json_get "$res" 'isinstance(d["duration_ms"], (int, float)) and not isinstance(d["duration_ms"], bool) and d["duration_ms"] >= 0')" \
	"duration_ms is a non-negative number"
assert_eq "[]" "$(json_get "$res" 'd["violations"]')" "violations is an empty array"
labels=$(json_get "$res" '" ".join(d["labels"])')
assert_contains " $labels " " src:env:airlock " "labels has src:env:airlock"
assert_contains " $labels " " it-label " "labels has the policy's label"
hash=$(json_get "$res" 'd["policy_hash"]')
assert_match '^[0-9a-f]{64}$' "$hash" "policy_hash is 64 hex digits"
al_run policy hash "$policy"
assert_eq "$hash" "$AL_OUT" "policy_hash is the hash of \`airlock policy hash\`"

sb_run --json -- /bin/sh -c 'kill -9 $$' "$IT_MARK"
assert_eq "137 9" "$(json_get "$res" '"%s %s" % (d["exit_code"], d["signal"])')" \
	"a command killed by SIGKILL: exit_code 137, signal 9"

sb_run --json -- /bin/sh -c 'printf "caf\303\251 \"q\" \\\\ \t\001 end\n"' "$IT_MARK"
assert_eq "$(printf 'caf\303\251 "q" \\ \t\001 end\n')" "$(json_get "$res" 'd["stdout"]')" \
	"quotes, backslashes, tabs, control and UTF-8 characters round-trip through the JSON"

sb_run --json -- /bin/sh -c 'head -c 1200000 /dev/zero | tr "\0" a' "$IT_MARK"
assert_eq "1048576 true false 0" \
	"$(json_get "$res" '"%d %s %s %d" % (len(d["stdout"]), str(d["stdout_truncated"]).lower(), str(d["stderr_truncated"]).lower(), d["exit_code"])')" \
	"stdout over 1 MiB is cut at 1 MiB and flagged; the command still exits 0"
sb_run --json -- /bin/sh -c 'head -c 1200000 /dev/zero | tr "\0" b >&2' "$IT_MARK"
assert_eq "1048576 true false" \
	"$(json_get "$res" '"%d %s %s" % (len(d["stderr"]), str(d["stderr_truncated"]).lower(), str(d["stdout_truncated"]).lower())')" \
	"stderr over 1 MiB is cut at 1 MiB and flagged"
sb_run --json -- /bin/sh -c 'head -c 1048576 /dev/zero | tr "\0" c' "$IT_MARK"
assert_eq "1048576 false" "$(json_get "$res" '"%d %s" % (len(d["stdout"]), str(d["stdout_truncated"]).lower())')" \
	"exactly 1 MiB is kept whole and not flagged"

sb_run --json --timing -- /bin/true
assert_eq true "$(json_get "$res" 'isinstance(d["steps"], dict) and len(d["steps"]) > 0 and all(isinstance(v, int) and v >= 0 for v in d["steps"].values())')" \
	"--timing adds steps: a non-empty object of step name to microseconds"
sb_run --timing -- /bin/echo hi
assert_eq hi "$AL_OUT" "--timing without --json leaves stdout to the command"
assert_ne "" "$AL_ERR" "--timing without --json prints timings on stderr"

# Pipes, as in `echo x | airlock run -- cat` (process substitution keeps sb_run in this shell).
sb_run -- cat < <(echo x)
assert_eq x "$AL_OUT" "stdin reaches the command"
sb_run --json -- cat < <(printf abc)
assert_eq abc "$(json_get "$res" 'd["stdout"]')" "stdin reaches the command with --json"
sb_run -- wc -c < <(head -c 300000 /dev/zero)
assert_eq 300000 "$AL_OUT" "300 KB of stdin arrive whole"
sb_run -- cat </dev/null
assert_eq 0 "$AL_RC" "an empty stdin ends cat"

it_finish
