#!/usr/bin/env bash
# airlock mcp, driven end to end by the official MCP TypeScript SDK's client (from the npm
# registry: scripts/dev.sh mcp-sdk) through its StdioClientTransport: the protocol revision is
# negotiated, tools are listed, python runs, a violation and a non-zero exit are seen, a session
# is started, its files written, read and listed, commands run in it, a cancelled call's command
# is killed, two calls run at once, the session is stopped; a session left running ends with
# the client, and one whose server is killed ends by itself. Nothing is left behind.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

command -v node >/dev/null || it_skip "needs node (scripts/dev.sh deps installs nodejs)"
if ! "$IT_SOURCE_ROOT/scripts/dev.sh" mcp-sdk >"$IT_TMP/sdk.log" 2>&1; then
	it_skip "the MCP SDK could not be installed from the npm registry: $(tail -n 3 "$IT_TMP/sdk.log")"
fi
export NODE_PATH=$IT_SOURCE_ROOT/build-deps/npm/node_modules
CLIENT=$IT_SOURCE_ROOT/tests/integration/helpers/mcp-client.cjs
export AIRLOCK MCP_STDERR=$IT_TMP/mcp.err

"$ITRUN" -t 120 -- node "$CLIENT" main >"$IT_TMP/main.json" 2>"$IT_TMP/node.err"
rc=$?
assert_eq 0 "$rc" "the SDK client ran the whole scenario ($(json_get "$IT_TMP/main.json" 'd.get("exception")' | head -n 3))"
g() { json_get "$IT_TMP/main.json" "$1"; }
assert_eq airlock "$(g 'd["server"]')" "initialize: serverInfo.name"
assert_eq '["list_files", "read_file", "remove_file", "run_code", "session_exec", "session_start", "session_stop", "write_file"]' \
	"$(g 'd["tools"]')" "tools/list: every tool"
assert_eq false "$(g 'd["run_code_has_policy"]')" "tools/list: no policy argument without --policy-dir"
assert_eq "false 0 42" "$(g '"%s %s %s" % (str(d["python"]["isError"]).lower(), d["python"]["exit_code"], d["python"]["stdout"].strip())')" \
	"run_code: python runs"
assert_eq '5 ["seccomp:mount"]' "$(g '"%s %s" % (d["violation"]["exit_code"], __import__("json").dumps(d["violation"]["violations"]))')" \
	"run_code: the non-zero exit and the violation are in the result"
assert_match '^s-[0-9a-f]{8}$' "$(g 'd["session"]["id"]')" "session_start: a session id"
assert_eq "hi from mcp" "$(g 'd["read"]["content"].strip()')" "write_file then read_file"
assert_eq '["hello.txt:file"]' "$(g 'd["list"]')" "list_files"
assert_eq "3 hi from mcp" "$(g '"%s %s" % (d["exec"]["exit_code"], d["exec"]["stdout"].strip())')" \
	"session_exec: a command sees the file, its exit code is returned"
assert_eq "made" "$(g 'd["made"].strip()')" "read_file: what a command wrote"
assert_eq "a b" "$(g 'd["argv"].strip()')" "session_exec: an argv"
assert_eq "aborted 0" "$(g '"%s %s" % (d["cancel"], d["sleeps_after_cancel"])')" \
	"a cancelled call: its command is killed"
assert_eq '["1", "2"]' "$(g 'd["parallel"]["outputs"]')" "two calls at once"
ms=$(g 'd["parallel"]["ms"]')
assert_true "two calls of 2 s ran at once (${ms} ms)" test "${ms%.*}" -lt 3800
assert_eq "made.txt" "$(g 'd["removed"]')" "remove_file"
assert_eq "$(g 'd["session"]["id"]')" "$(g 'd["stop"]["stopped"]')" "session_stop"
assert_eq true "$(g 'd["after_stop"]["isError"]')" "a stopped session is not the server's any more"
assert_eq ok "$(g 'd["ping"]')" "ping"
LEFT=$(g 'd["left_running"]')
assert_match '^s-[0-9a-f]{8}$' "$LEFT" "a session left running"
close_ms=$(g 'd["close_ms"]')
assert_true "the server ended on stdin's end within the SDK's 2 s (${close_ms} ms)" test "${close_ms%.*}" -lt 2000
al_run session ls --json
assert_not_contains "$AL_OUT" "$LEFT" "the session left running ended with the client"
assert_not_contains "$(cat "$MCP_STDERR")" "Failed" "the server logged no failure"

# Killed (SIGKILL: nothing of it runs): its session ends by itself (--owner), its call's command
# with it (the child got SIGTERM as its parent died).
# The call's command is found by its own duration, which no other process of the machine has.
long="sleep 300.$$"
"$IT_PY" - "$AIRLOCK" "$long" >"$IT_TMP/kill.out" 2>"$IT_TMP/kill.err" <<'PYEOF'
import json, os, signal, subprocess, sys, time
p = subprocess.Popen([sys.argv[1], "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
def send(o):
    p.stdin.write((json.dumps(o) + "\n").encode()); p.stdin.flush()
def recv():
    return json.loads(p.stdout.readline())
send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
recv()
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "session_start", "arguments": {}}})
sid = recv()["result"]["structuredContent"]["session_id"]
send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "run_code", "arguments": {"language": "shell", "code": sys.argv[2]}}})
time.sleep(1)
os.kill(p.pid, signal.SIGKILL)
p.wait()
print(sid)
PYEOF
KILLED=$(cat "$IT_TMP/kill.out")
assert_match '^s-[0-9a-f]{8}$' "$KILLED" "a server with a session and a call running, killed"
for _ in $(seq 1 50); do
	"$AIRLOCK" session ls --json | grep -q "$KILLED" || break
	sleep 0.2
done
al_run session ls --json
assert_not_contains "$AL_OUT" "$KILLED" "its session ended by itself (the server was its owner)"
for _ in $(seq 1 50); do
	pgrep -f "$long" >/dev/null || break
	sleep 0.2
done
assert_false "its call's command ended with it" pgrep -f "$long"

it_finish
