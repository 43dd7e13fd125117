#!/usr/bin/env bash
# Admission: a policy of tier 3 or 4 runs (through run or exec) only when its hash is in the
# admitted set, a file the operator keeps; the refusal names the hash. The set must belong to root
# and be writable by no one else. Lower tiers need nothing. A request's own run parameters
# (timeout, env) do not change the hash that is admitted.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

ADMITTED=$IT_TMP/admitted
write_policy "$IT_TMP/t3.json" <<EOF2
{"id": "high", "tier": 3, "workspace": {"root": "$WS"}}
EOF2
write_policy "$IT_TMP/t2.json" <<EOF2
{"id": "low", "tier": 2, "workspace": {"root": "$WS"}}
EOF2
al_run policy hash "$IT_TMP/t3.json"
hash=$AL_OUT
assert_eq 64 "${#hash}" "the tier 3 policy's hash"

al_run run -p "$IT_TMP/t2.json" -- /bin/echo low
assert_eq "0 low" "$AL_RC $AL_OUT" "tier 2 runs without admission"

al_run run -p "$IT_TMP/t3.json" --admitted "$ADMITTED" -- /bin/echo high
assert_eq 125 "$AL_RC" "tier 3 without an admitted set is refused"
assert_contains "$AL_ERR" "$hash" "the refusal names the hash"
assert_one_error_line "$AL_ERR" "one error line"

printf '# reviewed 2026-11-25\n\n%s  low tier policy\n' "$(printf '0%.0s' $(seq 64))" >"$ADMITTED"
chmod 644 "$ADMITTED"
al_run run -p "$IT_TMP/t3.json" --admitted "$ADMITTED" -- /bin/echo high
assert_eq 125 "$AL_RC" "tier 3 whose hash is not in the set is refused"
assert_contains "$AL_ERR" "$hash" "the refusal names the hash"
assert_contains "$AL_ERR" "not admitted" "the refusal says why"

printf '%s   the high one\n' "$hash" >>"$ADMITTED"
al_run run -p "$IT_TMP/t3.json" --admitted "$ADMITTED" -- /bin/echo high
assert_eq "0 high" "$AL_RC $AL_OUT" "tier 3 whose hash is admitted runs"

printf '{"language": "shell", "code": "echo via exec", "timeout": 10, "env": {"X": "1"}, "policy": "t3.json"}' \
	>"$IT_TMP/req.json"
al_run exec --admitted "$ADMITTED" --policy-dir "$IT_TMP" --request "$IT_TMP/req.json"
assert_eq 0 "$AL_RC" "exec of the admitted policy, with the request's own timeout and env, runs"
assert_eq "via exec" "$(json_get "$IT_TMP/al.out" 'd["stdout"].strip()')" "exec: its output"
assert_eq "$hash" "$(json_get "$IT_TMP/al.out" 'd["policy_hash"]')" "exec reports the admitted policy's hash"

# the request cannot move an admitted policy onto another folder, nor raise its limits
mkdir -p "$IT_TMP/elsewhere"
printf '{"language": "shell", "code": "ls", "timeout": 10, "policy": "t3.json", "workspace": "%s"}' \
	"$IT_TMP/elsewhere" >"$IT_TMP/req.json"
al_run exec --admitted "$ADMITTED" --policy-dir "$IT_TMP" --request "$IT_TMP/req.json"
assert_eq "125 invalid_request" "$AL_RC $(json_get "$IT_TMP/al.out" 'd["error"]["kind"]')" \
	"a request's workspace with a policy is refused"
write_policy "$IT_TMP/small.json" <<EOF2
{"workspace": {"root": "$WS"}, "resources": {"memory": "128Mi", "timeout": "30s"}}
EOF2
printf '{"language": "shell", "code": "true", "timeout": 10, "memory": "1Gi", "policy": "small.json"}' >"$IT_TMP/req.json"
al_run exec --policy-dir "$IT_TMP" --request "$IT_TMP/req.json"
assert_eq "125 unsupported_policy" "$AL_RC $(json_get "$IT_TMP/al.out" 'd["error"]["kind"]')" \
	"a request's memory above the policy's is refused"
printf '{"language": "shell", "code": "true", "timeout": "1m", "policy": "small.json"}' >"$IT_TMP/req.json"
al_run exec --policy-dir "$IT_TMP" --request "$IT_TMP/req.json"
assert_eq "125 unsupported_policy" "$AL_RC $(json_get "$IT_TMP/al.out" 'd["error"]["kind"]')" \
	"a request's timeout above the policy's is refused"

# who picks the policy: a request names a policy file only inside --policy-dir; with --policy
# the operator fixes it and a request names neither a policy nor a workspace
printf '{"language": "shell", "code": "true", "timeout": 10, "policy": "%s"}' "$IT_TMP/t2.json" >"$IT_TMP/req.json"
al_run exec --request "$IT_TMP/req.json"
assert_eq "125 unsupported_policy" "$AL_RC $(json_get "$IT_TMP/al.out" 'd["error"]["kind"]')" \
	"a policy path without --policy-dir is refused"
al_run exec --policy-dir "$IT_TMP" --request "$IT_TMP/req.json"
assert_eq "125 invalid_request" "$AL_RC $(json_get "$IT_TMP/al.out" 'd["error"]["kind"]')" \
	"a policy path outside the folder (with a slash) is refused"
printf '{"language": "shell", "code": "echo fixed", "timeout": 10}' >"$IT_TMP/req.json"
al_run exec -p "$IT_TMP/t2.json" --request "$IT_TMP/req.json"
assert_eq "0 fixed" "$AL_RC $(json_get "$IT_TMP/al.out" 'd["stdout"].strip()')" "--policy runs the request under it"
printf '{"language": "shell", "code": "true", "timeout": 10, "policy": {"workspace": {"root": "/"}}}' >"$IT_TMP/req.json"
al_run exec -p "$IT_TMP/t2.json" --request "$IT_TMP/req.json"
assert_eq "125 unsupported_policy" "$AL_RC $(json_get "$IT_TMP/al.out" 'd["error"]["kind"]')" \
	"with --policy, a request's own policy is refused"

# an admitted policy that the request tries to loosen is the same policy: nothing to loosen but
# the run parameters. A changed policy is another hash.
sed 's/"high"/"high2"/' "$IT_TMP/t3.json" >"$IT_TMP/t3b.json"
al_run run -p "$IT_TMP/t3b.json" --admitted "$ADMITTED" -- /bin/echo changed
assert_eq 125 "$AL_RC" "a changed tier 3 policy is another hash, refused"

chmod 666 "$ADMITTED"
al_run run -p "$IT_TMP/t3.json" --admitted "$ADMITTED" -- /bin/echo high
assert_eq 125 "$AL_RC" "an admitted set writable by others is not trusted"
assert_contains "$AL_ERR" "not trusted" "the refusal says so"
chmod 644 "$ADMITTED"

printf 'not-a-hash\n' >>"$ADMITTED"
al_run run -p "$IT_TMP/t3.json" --admitted "$ADMITTED" -- /bin/echo high
assert_eq 125 "$AL_RC" "a malformed admitted set is refused"
assert_contains "$AL_ERR" "line 5" "the refusal names the line"

it_finish
