#!/usr/bin/env bash
# `airlock policy check/hash/show`: a valid policy checks ok with its hash; the hash is stable
# and follows the meaning, not the spelling; a malformed policy, an unknown field, a bad value
# and an isolation that cannot be enforced (gvisor) each give one clear line and exit non-zero,
# and `run` with such a policy exits 125 without running anything.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

good=$IT_TMP/good.json
write_policy "$good" <<EOF2
{"id": "it-good", "workspace": {"root": "$WS"}, "resources": {"memory": "256Mi", "timeout": "30s"},
 "seccomp": "restricted", "labels": ["a", "b"]}
EOF2
# The same policy, keys in another order and other spacing.
same=$IT_TMP/same.json
write_policy "$same" <<EOF2
{ "labels" : [ "a", "b" ], "seccomp":"restricted",
  "resources": {"timeout": "30s", "memory": "256Mi"}, "workspace": {"root": "$WS"}, "id": "it-good" }
EOF2
other=$IT_TMP/other.json
write_policy "$other" <<EOF2
{"id": "it-good", "workspace": {"root": "$WS"}, "resources": {"memory": "512Mi", "timeout": "30s"},
 "seccomp": "restricted", "labels": ["a", "b"]}
EOF2

al_run policy hash "$good"
hash=$AL_OUT
assert_eq 0 "$AL_RC" "policy hash exits 0"
assert_match '^[0-9a-f]{64}$' "$hash" "policy hash prints 64 hex digits"
al_run policy check "$good"
assert_eq 0 "$AL_RC" "policy check of a valid policy exits 0"
assert_match "^$good: ok" "$AL_OUT" "policy check prints FILE: ok"
assert_contains "$AL_OUT" "$hash" "policy check prints the policy's hash"
al_run policy hash "$good"
assert_eq "$hash" "$AL_OUT" "the hash is stable"
al_run policy hash "$same"
assert_eq "$hash" "$AL_OUT" "key order and spacing do not change the hash"
al_run policy hash "$other"
assert_ne "$hash" "$AL_OUT" "a different memory limit changes the hash"

al_run policy show "$good"
assert_eq 0 "$AL_RC" "policy show exits 0"
printf '%s' "$AL_OUT" >"$IT_TMP/shown.json"
assert_eq 268435456 "$(json_get "$IT_TMP/shown.json" 'd["resources"]["memory"]')" \
	"policy show prints canonical JSON with sizes in bytes"
al_run policy hash "$IT_TMP/shown.json"
assert_eq "$hash" "$AL_OUT" "the canonical JSON of a policy loads back to the same hash"

al_run policy hash
default_hash=$AL_OUT
assert_match '^[0-9a-f]{64}$' "$default_hash" "policy hash without FILE hashes the embedded default"
al_run policy show
assert_eq 0 "$AL_RC" "policy show without FILE prints the embedded default"
printf '%s' "$AL_OUT" >"$IT_TMP/default.json"
assert_eq restricted "$(json_get "$IT_TMP/default.json" 'd["seccomp"]')" "the embedded default uses restricted seccomp"
al_run policy hash "$IT_TMP/default.json"
assert_eq "$default_hash" "$AL_OUT" "the embedded default's canonical JSON loads back to the same hash"

# bad_policy NAME EXPECTED_IN_MESSAGE JSON: check exits 1 with one line naming the problem; run
# exits 125 with one line and runs nothing.
bad_policy()
{
	local name=$1 expect=$2 file=$IT_TMP/$1.json
	printf '%s\n' "$3" >"$file"
	al_run policy check "$file"
	assert_eq 1 "$AL_RC" "$name: policy check exits 1"
	assert_one_error_line "$AL_ERR" "$name: policy check gives one airlock: line"
	assert_contains "$AL_ERR" "airlock: $file: " "$name: the line starts with airlock: FILE:"
	[ -z "$expect" ] || assert_contains "$AL_ERR" "$expect" "$name: the line names $expect"
	assert_eq "" "$AL_OUT" "$name: policy check prints nothing on stdout"
	al_run policy hash "$file"
	assert_ne 0 "$AL_RC" "$name: policy hash refuses it"
	rm -f "$WS/ran"
	al_run run -p "$file" -w "$WS" -- /bin/sh -c 'touch /workspace/ran' "$IT_MARK"
	assert_eq 125 "$AL_RC" "$name: run exits 125"
	assert_one_error_line "$AL_ERR" "$name: run gives one airlock: line"
	[ -z "$expect" ] || assert_contains "$AL_ERR" "$expect" "$name: run's line names $expect"
	assert_false "$name: the command did not run" test -e "$WS/ran"
}

bad_policy malformed-json "" '{"id": "x", "workspace": {'
bad_policy trailing-garbage "" '{"id": "x"} {"id": "y"}'
bad_policy not-an-object "" '["a", "b"]'
bad_policy unknown-field "bogus_field" '{"id": "x", "bogus_field": 1}'
bad_policy unknown-nested-field "resources.bogus" '{"resources": {"memory": "64Mi", "bogus": 1}}'
bad_policy bad-memory "resources.memory" '{"resources": {"memory": "lots"}}'
bad_policy bad-seccomp "seccomp" '{"seccomp": "maybe"}'
bad_policy bad-rule-action "network.rules[0].action" \
	'{"network": {"rules": [{"destination": "example.org", "action": "maybe"}]}}'
bad_policy relative-mount-target "mounts[0].target" \
	'{"mounts": [{"source": "/usr", "target": "relative", "mode": "ro"}]}'
# A repeated key: json-c would keep the last one, a reader sees the first.
bad_policy repeated-key 'the key "tier" is repeated' '{"tier": 4, "id": "x", "tier": 1}'
bad_policy repeated-nested-key 'the key "memory" is repeated' \
	'{"resources": {"memory": "64Mi", "memory": "max"}}'
bad_policy repeated-escaped-key 'the key "A" is repeated' '{"env": {"A": "1", "\u0041": "2"}}'
# An SSH key in a policy with no egress would sign for nothing: check and run refuse it, with
# the same line, before anything else (the vault it names does not even exist).
noegress=$IT_TMP/ssh-no-egress.json
printf '%s\n' '{"credentials": [{"name": "deploy", "source": {"type": "vault", "key": "deploy"},
 "injection": {"type": "ssh_agent"}, "ssh": {"destinations": ["git.test"]}}]}' >"$noegress"
al_run policy check "$noegress"
assert_eq 1 "$AL_RC" "an SSH key without egress: policy check exits 1"
assert_one_error_line "$AL_ERR" "... with one airlock: line"
assert_contains "$AL_ERR" "an SSH key signs only for connections the egress proxy sees" "... naming why"
rm -f "$WS/ran"
al_run run -p "$noegress" -w "$WS" --vault "$IT_TMP/no-vault" -- /bin/sh -c 'touch /workspace/ran' "$IT_MARK"
assert_eq 125 "$AL_RC" "... run exits 125"
assert_contains "$AL_ERR" "an SSH key signs only for connections the egress proxy sees" "... with the same line"
assert_false "... and the command did not run" test -e "$WS/ran"

# ... nor in a request.
printf '{"language": "shell", "code": "touch /workspace/ran", "code": "true"}' >"$IT_TMP/req.json"
al_run exec --request "$IT_TMP/req.json"
assert_ne 0 "$AL_RC" "exec refuses a request with a repeated key"
assert_contains "$AL_OUT" '"kind":"invalid_request"' "a repeated key is an invalid_request"
assert_contains "$AL_OUT" 'the key \"code\" is repeated' "the result names the repeated key"

bad_policy gvisor-isolation "gvisor" '{"isolation": [{"type": "gvisor"}]}'
bad_policy micro-vm-isolation "micro_vm" '{"isolation": [{"type": "micro_vm"}]}'

al_run policy check "$IT_TMP/no-such-file.json"
assert_eq 1 "$AL_RC" "policy check of a missing file exits 1"
assert_one_error_line "$AL_ERR" "a missing file gives one airlock: line"

al_run --version
assert_eq 0 "$AL_RC" "--version exits 0"
assert_match '[0-9]+\.[0-9]+' "$AL_OUT" "--version prints a version number"
al_run help
assert_eq 0 "$AL_RC" "help exits 0"
assert_contains "$AL_OUT" "run" "help mentions the run command"
al_run no-such-command
assert_ne 0 "$AL_RC" "an unknown command exits non-zero"
assert_ne "" "$AL_ERR" "an unknown command is reported on stderr"

it_finish
