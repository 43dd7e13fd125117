#!/usr/bin/env bash
# airlock mcp's client is an untrusted agent: through the official SDK's client, a tool call
# brings a policy or a workspace only as the operator's options allow (none without
# --policy-dir, not even without -p; a policy file's name with it; objects and host folders only
# with --allow-request-*), and reaches no session it did not start. Malformed JSON-RPC (not
# JSON, a batch, a wrong version, a line over 16 MiB, an unknown method, a call before
# initialize) gets an error, and the server goes on answering.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

command -v node >/dev/null || it_skip "needs node (scripts/dev.sh deps installs nodejs)"
if ! "$IT_SOURCE_ROOT/scripts/dev.sh" mcp-sdk >"$IT_TMP/sdk.log" 2>&1; then
	it_skip "the MCP SDK could not be installed from the npm registry: $(tail -n 3 "$IT_TMP/sdk.log")"
fi
export NODE_PATH=$IT_SOURCE_ROOT/build-deps/npm/node_modules
CLIENT=$IT_SOURCE_ROOT/tests/integration/helpers/mcp-client.cjs
export AIRLOCK

# A session of the operator's, with a secret in its workspace: no client reaches it.
mkdir -p "$IT_TMP/opws"
echo "operator secret" >"$IT_TMP/opws/secret.txt"
al_run session start -w "$IT_TMP/opws"
FOREIGN_SESSION=$AL_OUT
export FOREIGN_SESSION
mkdir -p "$IT_TMP/policies"
write_policy "$IT_TMP/policies/strict.json" <<'EOF2'
{"labels": ["strict"]}
EOF2
echo '{}' >"$IT_TMP/escape.json"
# A folder exec itself would take as a workspace, and a policy it would run: only the server's
# own check refuses them.
mkdir -p "$IT_TMP/clientws"
export CLIENT_WORKSPACE=$IT_TMP/clientws

limits()
{
	local name=$1
	shift
	"$ITRUN" -t 120 -- node "$CLIENT" limits "$@" >"$IT_TMP/$name.json" 2>"$IT_TMP/node.err"
	assert_eq 0 "$?" "$name: the SDK client ran ($(json_get "$IT_TMP/$name.json" 'd.get("exception")' | head -n 3))"
}
is_error() { json_get "$IT_TMP/$1.json" "d[\"$2\"][\"isError\"]"; }
says() { json_get "$IT_TMP/$1.json" "d[\"$2\"][\"text\"]"; }

# No options: the embedded default policy, nothing of the client's.
limits none
assert_eq '{"policy": false, "workspace": false}' "$(json_get "$IT_TMP/none.json" 'd["schema"]')" \
	"none: tools/list offers neither a policy nor a workspace"
for k in policy_name policy_object workspace session_workspace session_policy traversal; do
	assert_eq true "$(is_error none $k)" "none: $k is refused"
done
assert_contains "$(says none workspace)" "workspace: the operator's policy decides" "none: the refusal names the argument"
assert_contains "$(says none policy_object)" "policy: the operator fixed the policy" "none: ... and why"
for k in not_ours foreign_exec foreign_stop; do
	assert_eq true "$(is_error none $k)" "none: $k: the operator's session is not the client's"
	assert_contains "$(says none $k)" "is not a session of this server" "none: $k: ... said so"
	assert_not_contains "$(says none $k)" "operator secret" "none: $k: ... and nothing of it read"
done
assert_eq true "$(is_error none bad_path)" "none: a path with .. is refused"
assert_eq "-32602" "$(json_get "$IT_TMP/none.json" 'd["unknown_tool"]')" "none: an unknown tool is a protocol error (-32602)"

# -p: the operator's policy, nothing of the client's either.
limits fixed -p "$IT_TMP/policies/strict.json"
for k in policy_name policy_object workspace session_workspace session_policy; do
	assert_eq true "$(is_error fixed $k)" "-p: $k is refused"
done

# --policy-dir: a policy file's name, nothing more (no path out of the folder either).
limits dir --policy-dir "$IT_TMP/policies"
assert_eq '{"policy": true, "workspace": false}' "$(json_get "$IT_TMP/dir.json" 'd["schema"]')" \
	"--policy-dir: tools/list offers a policy name"
assert_eq "false ran" "$(is_error dir policy_name) $(json_get "$IT_TMP/dir.json" 'd["policy_name"]["stdout"].strip()')" \
	"--policy-dir: a policy file of the folder, by name"
for k in policy_object workspace session_workspace session_policy traversal; do
	assert_eq true "$(is_error dir $k)" "--policy-dir: $k is refused"
done

# --allow-request-workspace: a client's host folder, as with exec.
limits allowed --policy-dir "$IT_TMP/policies" --allow-request-workspace
assert_eq "false ran" "$(is_error allowed workspace) $(json_get "$IT_TMP/allowed.json" 'd["workspace"]["stdout"].strip()')" \
	"--allow-request-workspace: the operator allowed a workspace"
assert_eq true "$(is_error allowed policy_object)" "--allow-request-workspace: still no policy object"

al_run session exec "$FOREIGN_SESSION" -- cat secret.txt
assert_eq "operator secret" "$AL_OUT" "the operator's session is untouched"
al_run session stop "$FOREIGN_SESSION"

# Malformed input, straight on stdin: each gets its error, and the server keeps going.
"$IT_PY" - "$AIRLOCK" >"$IT_TMP/raw.out" 2>"$IT_TMP/raw.err" <<'PYEOF'
import json, subprocess, sys
p = subprocess.Popen([sys.argv[1], "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
lines = [
    b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}',  # before initialize
    b'{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"1999-01-01","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}',
    b'this is not json',
    b'[{"jsonrpc":"2.0","id":3,"method":"ping"}]',
    b'{"jsonrpc":"1.0","id":4,"method":"ping"}',
    b'{"jsonrpc":"2.0","id":5,"method":"no/such/method"}',
    b'{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"run_code","arguments":"x"}}',
    b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"run_code","arguments":{"language":"python","code":"print(1)","policy":{"mounts":[]}}}}',
    b'{"a":"' + b'x' * (17 << 20) + b'"}',
    b'\xff\xfe{',
    b'{"jsonrpc":"2.0","id":8,"method":"ping"}',
    b'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"run_code","arguments":{"language":"shell","code":"echo still here"}}}',
]
out, _ = p.communicate(b"\n".join(lines) + b"\n", timeout=100)
for l in out.splitlines():
    m = json.loads(l)
    e = m.get("error")
    r = m.get("result") or {}
    if e:
        print(m["id"], e["code"])
    elif "protocolVersion" in r:
        print(m["id"], "version", r["protocolVersion"])
    elif "content" in r:
        print(m["id"], "tool", "error" if r["isError"] else r["structuredContent"]["stdout"].strip())
    else:
        print(m["id"], "ok")
print("exit", p.returncode)
PYEOF
assert_eq "$(printf '%s\n' '1 -32600' '2 version 2025-11-25' 'None -32700' 'None -32600' '4 -32600' \
	'5 -32601' '6 -32602' '7 tool error' 'None -32600' 'None -32700' '8 ok' '9 tool still here' 'exit 0')" \
	"$(cat "$IT_TMP/raw.out")" "malformed messages get their JSON-RPC errors, in order, and the server goes on"

it_finish
