#!/usr/bin/env bash
# WebSocket through the egress proxy (issue 18 item 3, HTTP/1.1 Upgrade), end to end with real
# clients inside the sandbox (Debian's python3-websockets, and node's WebSocket) and a TLS
# WebSocket echo server of the test's own on 127.0.0.1 (python3-websockets, a test CA), which logs
# every request head and message it receives:
#   to the host a credential is bound to, a surrogate in the upgrade request's header and in a
#   text frame, a binary frame and a message fragmented with the surrogate split across its two
#   frames reaches the server as the real value, and the server's echo reaches the sandbox as the
#   surrogate; permessage-deflate, offered by both clients, is not negotiated;
#   the same surrogate in a frame to a host bound only to another credential, or over plain ws://
#   to its own host, ends the connection with a Close frame 1008 and a credential violation, and
#   never reaches the server; in an upgrade request's header to that host it is refused with 403;
#   swaps and refusals are audited, and no real value is in the audit or airlock's output.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

[ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import websockets' 2>/dev/null ||
	it_skip "Debian's python3-websockets is not installed (scripts/dev.sh installs it)"
node --experimental-websocket -e 'if (typeof WebSocket !== "function") process.exit(1)' 2>/dev/null ||
	it_skip "node has no WebSocket (node 20 with --experimental-websocket, or 22)"

rand() { head -c 96 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c "$1"; }
token=ghp_$(rand 36)
token2=ghp_$(rand 36)
export IT_TOKEN=$token IT_TOKEN2=$token2
sp=$(it_port)
pp=$((sp + 1))

# ---- the upstream: TLS on $sp with a certificate of a test CA, plain on $pp ----
it_test_pki api.test other.test

up=$IT_TMP/upstream.jsonl
: >"$up"
/usr/bin/python3 "$IT_SOURCE_ROOT/tests/integration/helpers/ws-echo.py" "$up" "$sp" \
	"$pki/srv.pem" "$pki/srv.key" "$pp" >"$IT_TMP/ws-echo.out" 2>&1 &
IT_UPSTREAMS="$IT_UPSTREAMS $!"
wait_for 10 grep -q ready "$IT_TMP/ws-echo.out"

policy=$IT_TMP/policy.json
write_policy "$policy" <<EOF
{"workspace": {"root": "$WS"},
 "network": {"default": "deny",
  "rules": [{"destination": "api.test", "port": $sp, "action": "allow"},
            {"destination": "api.test", "port": $pp, "action": "allow"},
            {"destination": "other.test", "port": $sp, "action": "allow"},
            {"destination": "127.0.0.0/8", "port": $sp, "action": "allow"},
            {"destination": "127.0.0.0/8", "port": $pp, "action": "allow"}],
  "resolve": {"api.test": "127.0.0.1", "other.test": "127.0.0.1"}},
 "credentials": [{"name": "tok", "source": {"type": "env", "var": "IT_TOKEN"},
   "injection": {"type": "env_var", "var_name": "TOKEN"}, "hosts": ["api.test"]},
  {"name": "tok2", "source": {"type": "env", "var": "IT_TOKEN2"},
   "injection": {"type": "env_var", "var_name": "TOKEN2"}, "hosts": ["other.test"]}]}
EOF

# ---- the clients, run in the sandbox: each check prints "name=result" ----
cat >"$WS/client.py" <<EOF
import asyncio, json, os, websockets
T = os.environ["TOKEN"]
def out(k, v): print("%s=%s" % (k, v), flush=True)
async def bound():
    async with websockets.connect("wss://api.test:$sp/py", extra_headers={"X-Token": T}) as ws:
        out("py_ext", json.dumps([type(e).__name__ for e in ws.extensions]))
        await ws.send("tok=" + T)
        out("py_echo", await ws.recv())
        await ws.send(["key=" + T[:10], T[10:] + ";"])
        out("py_frag", await ws.recv())
        await ws.send(b"bin:" + T.encode())
        out("py_bin", await ws.recv())
async def refused(name, url, headers):
    try:
        async with websockets.connect(url, extra_headers=headers) as ws:
            await ws.send("tok=" + T)
            out(name, "echo " + await ws.recv())
    except websockets.ConnectionClosed as e:
        out(name, "closed %s" % (e.rcvd.code if e.rcvd else None))
    except websockets.InvalidStatusCode as e:
        out(name, "status %d" % e.status_code)
    except Exception as e:
        out(name, "error %s %s" % (type(e).__name__, e))
async def main():
    await bound()
    await refused("py_other_frame", "wss://other.test:$sp/py-other-frame", {})
    await refused("py_other_header", "wss://other.test:$sp/py-other-header", {"X-Token": T})
    await refused("py_plain_frame", "ws://api.test:$pp/py-plain-frame", {})
asyncio.run(main())
EOF
cat >"$WS/client.js" <<EOF
const T = process.env.TOKEN;
function run(name, url, headers, msg) {
	return new Promise((resolve) => {
		let said = false;
		const say = (v) => { if (!said) { said = true; console.log(name + "=" + v); resolve(); } };
		const ws = new WebSocket(url, { headers });
		ws.onopen = () => ws.send(msg);
		ws.onmessage = (e) => { say("echo " + e.data + " ext[" + ws.extensions + "]"); ws.close(); };
		ws.onclose = (e) => say("closed " + e.code);
		ws.onerror = () => {};
		setTimeout(() => say("timeout"), 15000);
	});
}
(async () => {
	await run("node_echo", "wss://api.test:$sp/node", { "X-Token": T }, "tok=" + T);
	await run("node_other_frame", "wss://other.test:$sp/node-other-frame", {}, "tok=" + T);
})();
EOF
probe='
/usr/bin/python3 /workspace/client.py 2>&1
node --experimental-websocket --no-warnings /workspace/client.js 2>&1
echo token=$TOKEN
'
sb_run -p "$policy" --upstream-ca "$pki/ca.pem" --audit "$IT_TMP/audit.jsonl" --json \
	-- /bin/sh -c "$probe"
assert_eq 0 "$AL_RC" "the sandbox runs its WebSocket clients"
json_get "$IT_TMP/al.out" 'd["stdout"]' >"$IT_TMP/probe.out"
get() { sed -n "s/^$1=//p" "$IT_TMP/probe.out" | head -n 1; }
sur=$(get token)
assert_match '^ghp_[A-Za-z0-9]{36}$' "$sur" "the sandbox holds a token-shaped surrogate"
assert_ne "$token" "$sur" "... not the token"

# Whatever the server received, as the log's JSON lines say.
received() { "$IT_PY" -c '
import json, sys
for line in open(sys.argv[1]):
    e = json.loads(line)
    if eval(sys.argv[2], {"e": e}):
        print(json.dumps(e, sort_keys=True))' "$up" "$1"; }

# python3-websockets, to the bound host
assert_eq "[]" "$(get py_ext)" "python3-websockets offered permessage-deflate, and none was negotiated"
assert_eq "echo:tok=$sur" "$(get py_echo)" "python: the server's echo of a text frame reaches the sandbox as the surrogate"
assert_eq "echo:key=$sur;" "$(get py_frag)" "python: ... of a message whose surrogate was split across two frames"
assert_eq "echo:bin:$sur" "$(get py_bin)" "python: ... of a binary frame"
assert_contains "$(received 'e.get("path") == "/py" and "headers" in e')" "\"x-token\": \"$token\"" \
	"python: the surrogate in the upgrade request's header reached the server as the real value"
assert_eq "" "$(received 'e.get("path") == "/py" and "sec-websocket-extensions" in e.get("headers", {})')" \
	"python: the server was offered no extension"
assert_eq 1 "$(received "e.get(\"message\") == \"tok=$token\" and e.get(\"path\") == \"/py\"" | wc -l)" \
	"python: the surrogate in a text frame reached the server as the real value"
assert_eq 1 "$(received "e.get(\"message\") == \"key=$token;\"" | wc -l)" \
	"python: ... split across the frames of a message"
assert_eq 1 "$(received "e.get(\"message\") == \"bin:$token\" and e.get(\"binary\")" | wc -l)" \
	"python: ... in a binary frame"

# node, to the bound host
assert_eq "echo echo:tok=$sur ext[]" "$(get node_echo)" \
	"node: the echo of a text frame reaches the sandbox as the surrogate, no extension negotiated"
assert_contains "$(received 'e.get("path") == "/node" and "headers" in e')" "\"x-token\": \"$token\"" \
	"node: the surrogate in the upgrade request's header reached the server as the real value"
assert_eq "" "$(received 'e.get("path") == "/node" and "sec-websocket-extensions" in e.get("headers", {})')" \
	"node: the server was offered no extension (node offers permessage-deflate)"
assert_eq 1 "$(received "e.get(\"message\") == \"tok=$token\" and e.get(\"path\") == \"/node\"" | wc -l)" \
	"node: the surrogate in a text frame reached the server as the real value"

# refusals
assert_eq "closed 1008" "$(get py_other_frame)" \
	"python: a surrogate in a frame to a host its credential is not bound to ends the connection (Close 1008)"
assert_eq "closed 1008" "$(get node_other_frame)" "node: ... the same"
assert_eq "closed 1008" "$(get py_plain_frame)" \
	"python: a surrogate in a frame over plain ws:// is refused, even to its own host (Close 1008)"
assert_eq "status 403" "$(get py_other_header)" \
	"python: a surrogate in the upgrade request's header to that host is refused with 403"
assert_eq "" "$(received 'e.get("path") == "/py-other-header"')" "... and that request never reached the server"
assert_eq "" "$(received '"message" in e and e.get("path", "").endswith("-frame")')" \
	"no refused frame reached the server"
assert_eq 0 "$(grep -c "$sur" "$up")" "no surrogate reached the server"

audit=$IT_TMP/audit.jsonl
jq_count() { "$IT_PY" -c '
import json, sys
n = 0
for line in open(sys.argv[1]):
    e = json.loads(line)
    if eval(sys.argv[2], {"e": e}):
        n += 1
print(n)' "$audit" "$1"; }
swaps=$(jq_count 'e.get("kind") == "credential" and e.get("action") == "swap" and e.get("where") == "websocket frame"')
assert_eq 4 "$swaps" "the audit records each swap in a frame (python: text, fragmented, binary; node: text), and no other"
assert_ne 0 "$(jq_count 'e.get("kind") == "credential" and e.get("action") == "swap" and e.get("where") == "header x-token"')" \
	"the audit records the swaps in the upgrade requests' headers"
assert_eq 3 "$(jq_count 'e.get("kind") == "net" and e.get("verdict") == "deny" and "websocket frame" in e.get("reason", "")')" \
	"the audit records each refused frame"
assert_eq true "$(json_get "$IT_TMP/al.out" 'sum(1 for v in d["violations"] if v["kind"] == "credential") >= 1')" \
	"the refusals are credential violations in the result"
assert_eq 0 "$(grep -c "$token" "$audit")" "the audit holds no real value"
assert_eq 0 "$(grep -c "$token" "$IT_TMP/al.out" "$IT_TMP/al.err" | awk -F: '{s += $2} END {print s}')" \
	"no real value in airlock's output"

it_finish
