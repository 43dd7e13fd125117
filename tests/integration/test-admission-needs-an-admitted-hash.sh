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

# The tier a policy declares is a floor, not the word on it: what the policy can do on the host
# raises it (docs/SECURITY.md, "The tier of a policy"). A policy that says "tier": 1 but runs a
# command on the host, binds a host folder writable, allows all egress or hands a raw secret to
# the sandbox needs admission all the same; the refusal names the field and the tier.
mkdir -p "$IT_TMP/hostdir"
export IT_ADMIT_SECRET=secret-$RANDOM$RANDOM
derived()
{
	local name=$1 field=$2 tier=$3 json=$4 h
	printf '%s\n' "$json" >"$IT_TMP/$name.json"
	al_run policy hash "$IT_TMP/$name.json"
	h=$AL_OUT
	al_run run --no-broker -p "$IT_TMP/$name.json" --admitted "$ADMITTED" -- /bin/sh -c \
		"echo ran; touch /opt/h/written 2>/dev/null; true"
	assert_eq 125 "$AL_RC" "$name, declared tier 1: refused without admission"
	assert_contains "$AL_ERR" "$field" "$name: the refusal names the field"
	assert_contains "$AL_ERR" "tier $tier policy" "$name: ... and the tier it makes"
	assert_contains "$AL_ERR" "$h" "$name: ... and the hash"
	assert_one_error_line "$AL_ERR" "$name: one error line"
	assert_false "$name: nothing was written into the host folder" test -e "$IT_TMP/hostdir/written"
	printf '%s  %s\n' "$h" "$name" >"$IT_TMP/admitted-$name"
	chmod 644 "$IT_TMP/admitted-$name"
	al_run run --no-broker -p "$IT_TMP/$name.json" --admitted "$IT_TMP/admitted-$name" -- /bin/sh -c \
		"echo ran; touch /opt/h/written 2>/dev/null; true"
	assert_eq "0 ran" "$AL_RC $AL_OUT" "$name: runs once admitted"
	rm -f "$IT_TMP/hostdir/written"
}
cred()
{
	printf '{"name": "c", "source": %s, "injection": {"type": "env_var", "var_name": "C"}, "hosts": ["api.example.com"]%s}' "$1" "${2:-}"
}
derived command-source "credentials[0].source" 4 \
	'{"tier": 1, "workspace": {"root": "'"$WS"'"}, "credentials": ['"$(cred '{"type": "command", "command": ["/bin/sh", "-c", "id >> '"$IT_TMP"'/cmd-ran; echo tok-12345678"]}')"']}'
derived rw-mount "mounts[0]" 3 \
	'{"tier": 1, "workspace": {"root": "'"$WS"'"}, "mounts": [{"source": "'"$IT_TMP/hostdir"'", "target": "/opt/h", "mode": "rw"}]}'
derived allow-all "network.default" 3 \
	'{"tier": 1, "workspace": {"root": "'"$WS"'"}, "network": {"default": "allow"}}'
derived expose "credentials[0].expose" 3 \
	'{"tier": 1, "workspace": {"root": "'"$WS"'"}, "credentials": ['"$(cred '{"type": "env", "var": "IT_ADMIT_SECRET"}' ', "expose": true')"']}'
# the command source ran only once, when its policy was admitted
assert_eq 1 "$(grep -c uid= "$IT_TMP/cmd-ran" 2>/dev/null || echo 0)" "the command source ran on the host only when admitted"
# exec, with the operator's leave for inline policies: the same refusal, as unsupported_policy
printf '{"language": "shell", "code": "echo ran", "timeout": 10, "policy": %s}' "$(cat "$IT_TMP/command-source.json")" >"$IT_TMP/req.json"
mkdir -p "$IT_TMP/empty-pdir"
al_run exec --no-broker --policy-dir "$IT_TMP/empty-pdir" --allow-request-policy --admitted "$ADMITTED" --request "$IT_TMP/req.json"
assert_eq "125 unsupported_policy" "$AL_RC $(json_get "$IT_TMP/al.out" 'd["error"]["kind"]')" \
	"exec: an inline tier 1 policy with a command source is not admitted"
assert_contains "$(json_get "$IT_TMP/al.out" 'd["error"]["message"]')" "a command source makes this a tier 4 policy" \
	"exec: the message says why"
# the embedded default and the demo policy need no admission
al_run run -w "$WS" --admitted "$IT_TMP/none" -- /bin/echo default
assert_eq "0 default" "$AL_RC $AL_OUT" "the embedded default needs no admission"
(cd "$WS" && al_run run -p "$IT_SOURCE_ROOT/examples/demo-policy.json" --admitted "$IT_TMP/none" -- /bin/echo demo
 assert_eq "0 demo" "$AL_RC $AL_OUT" "examples/demo-policy.json needs no admission")

chmod 666 "$ADMITTED"
al_run run -p "$IT_TMP/t3.json" --admitted "$ADMITTED" -- /bin/echo high
assert_eq 125 "$AL_RC" "an admitted set writable by others is not trusted"
assert_contains "$AL_ERR" "not trusted" "the refusal says so"
chmod 644 "$ADMITTED"

printf 'not-a-hash\n' >>"$ADMITTED"
al_run run -p "$IT_TMP/t3.json" --admitted "$ADMITTED" -- /bin/echo high
assert_eq 125 "$AL_RC" "a malformed admitted set is refused"
assert_contains "$AL_ERR" "line 5" "the refusal names the line"

# policy check prints the tier admission applies (the higher of the declared one and what the
# fields call for, naming the field that raised it) and, from tier 3 on, whether it is admitted
al_run policy check "$IT_TMP/t2.json"
assert_eq "0 tier 2 (declared 2)" "$AL_RC $(sed -n 2p "$IT_TMP/al.out")" "policy check: a tier 2 policy's tier"
assert_match "^$IT_TMP/t2.json: ok \\([0-9a-f]{64}\\)\$" "$(sed -n 1p "$IT_TMP/al.out")" "policy check: the first line as before"
printf '%s\n' "$hash" >"$IT_TMP/admitted-t3"
chmod 644 "$IT_TMP/admitted-t3"
al_run policy check --admitted "$IT_TMP/admitted-t3" "$IT_TMP/t3.json"
assert_eq "0 tier 3 (declared 3): admitted in $IT_TMP/admitted-t3" "$AL_RC $(sed -n 2p "$IT_TMP/al.out")" \
	"policy check: a tier 3 policy that is admitted"
write_policy "$IT_TMP/raised.json" <<EOF2
{"tier": 1, "workspace": {"root": "$WS"}, "mounts": [{"source": "$IT_TMP", "target": "/mnt/x", "mode": "rw"}]}
EOF2
al_run policy check --admitted "$IT_TMP/admitted-t3" "$IT_TMP/raised.json"
assert_eq "0 2" "$AL_RC $(grep -c '' "$IT_TMP/al.out")" "policy check: exits 0 with two lines"
assert_eq "tier 3 (declared 1; mounts[0]: a writable host folder): not admitted in $IT_TMP/admitted-t3" \
	"$(sed -n 2p "$IT_TMP/al.out")" "policy check: a tier raised by a field, named, and not admitted"
al_run policy check --admitted=/nonexistent/admitted "$IT_TMP/t3.json"
assert_contains "$(sed -n 2p "$IT_TMP/al.out")" "not admitted: the admitted set /nonexistent/admitted cannot be read" \
	"policy check: --admitted=SET, an unreadable set"
al_run policy check --admitted
assert_eq 1 "$AL_RC" "policy check --admitted without FILE is refused"
assert_one_error_line "$AL_ERR" "... with one error line"

# A read-only bind stops no connect() to a host service's Unix socket in it (found by review: a
# tier-0 policy ran commands as root through a socket in a read-only mount). Such a mount is tier
# 3: refused unless admitted. The "service" is a server of this test's that runs what it is sent.
mkdir -p "$IT_TMP/sockdir"
cat >"$IT_TMP/svc.py" <<'PY'
import os, socket, subprocess, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o666); s.listen(4)
while True:
    c = s.accept()[0]
    c.sendall(subprocess.run(c.recv(4096), shell=True, capture_output=True).stdout); c.close()
PY
"$IT_PY" "$IT_TMP/svc.py" "$IT_TMP/sockdir/svc.sock" &
svc=$!
wait_for 5 test -S "$IT_TMP/sockdir/svc.sock"
write_policy "$IT_TMP/sock.json" <<EOF2
{"tier": 0, "workspace": {"root": "$WS"},
 "mounts": [{"source": "$IT_TMP/sockdir", "target": "/hostsock", "mode": "ro"}]}
EOF2
attack="import socket; s = socket.socket(socket.AF_UNIX); s.connect('/hostsock/svc.sock'); s.sendall(b'touch $IT_TMP/pwned; echo done'); print(s.recv(100).decode().strip())"
al_run run -p "$IT_TMP/sock.json" --admitted "$IT_TMP/none" -- python3 -c "$attack"
assert_eq 125 "$AL_RC" "a read-only mount of a host folder is refused without admission"
assert_contains "$AL_ERR" "mounts[0]" "... naming the mount"
assert_false "... and the host service was not reached" test -e "$IT_TMP/pwned"
: >"$IT_TMP/none"
write_policy "$IT_TMP/usr.json" <<EOF2
{"tier": 0, "workspace": {"root": "$WS"},
 "mounts": [{"source": "/usr/share", "target": "/opt/share", "mode": "ro"}]}
EOF2
al_run policy check "$IT_TMP/usr.json"
assert_eq "tier 0 (declared 0)" "$(sed -n 2p "$IT_TMP/al.out")" "a read-only mount of /usr (seen anyway) stays tier 0"
kill "$svc" 2>/dev/null
wait "$svc" 2>/dev/null

it_finish
