#!/usr/bin/env bash
# HTTP/2 on intercepted hosts, end to end with real clients inside the sandbox (curl --http2,
# Python's grpc) and real upstreams of the test's own on 127.0.0.1 (nghttpd, a gRPC server of
# python3-grpcio, both over TLS with a test CA, and an HTTP/1.1-only one):
#   a sandbox offering h2 gets it when the upstream speaks it, and HTTP/1.1 when it does not;
#   a surrogate in a header and in gRPC metadata reaches the upstream as the real value, and the
#   real value echoed back (in a body, gRPC trailers) reaches the sandbox as the surrogate;
#   a surrogate in the :path, in a body, or toward a host its credential is not bound to (a
#   header, a gRPC metadata entry) is refused on its stream (403; gRPC PERMISSION_DENIED) and
#   never reaches an upstream, while the connection goes on serving its other streams;
#   WebSocket over HTTP/2 (extended CONNECT, RFC 8441, Node's http2 at both ends): the
#   surrogate in the CONNECT's header and in a message split across two frames is swapped, the
#   echo turned back, permessage-deflate not passed on; the surrogate toward a host its
#   credential is not bound to, in a frame, ends the WebSocket with a Close 1008;
#   swaps and refusals are audited with their stream id; h2c stays refused; nothing is left.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

rand() { head -c 96 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c "$1"; }
token=ghp_$(rand 36)
token2=ghp_$(rand 36)
export IT_TOKEN=$token IT_TOKEN2=$token2
h2p=$(it_port) # nghttpd: h2 only
gp=$((h2p + 1))		    # gRPC
h1p=$((h2p + 2))	    # HTTP/1.1 only
wp=$((h2p + 3))		    # WebSocket over HTTP/2 (Node)

it_test_pki api.test other.test

# nghttpd serves files: one holds the real token, which the sandbox must see as its surrogate.
www=$IT_TMP/www
mkdir -p "$www"
printf 'the key is %s.\n' "$token" >"$www/secret.txt"
head -c 300000 /dev/urandom | base64 -w 100 >"$www/big.txt"
nghttpd -v -d "$www" "$h2p" "$pki/srv.key" "$pki/srv.pem" >"$IT_TMP/nghttpd.log" 2>&1 &
IT_UPSTREAMS="$IT_UPSTREAMS $!"
: >"$IT_TMP/grpc.log"
/usr/bin/python3 "$IT_SOURCE_ROOT/tests/integration/helpers/grpc-echo.py" "$gp" "$pki/srv.pem" \
	"$pki/srv.key" "$IT_TMP/grpc.log" >"$IT_TMP/grpc.out" 2>&1 &
IT_UPSTREAMS="$IT_UPSTREAMS $!"
: >"$IT_TMP/ws.log"
cp "$IT_SOURCE_ROOT/tests/integration/helpers/h2-ws.cjs" "$WS/"
node "$WS/h2-ws.cjs" server "$wp" "$pki/srv.pem" "$pki/srv.key" "$IT_TMP/ws.log" \
	>"$IT_TMP/ws.out" 2>&1 &
IT_UPSTREAMS="$IT_UPSTREAMS $!"
up=$IT_TMP/upstream.jsonl
: >"$up"
it_upstream "$IT_TMP/up-tls.out" "$h1p" "$up" --tls "$pki/srv.pem" "$pki/srv.key" --root "$www"
wait_for 10 grep -q ready "$IT_TMP/grpc.out"
wait_for 10 grep -q ready "$IT_TMP/ws.out"
wait_for 10 curl -s -o /dev/null --cacert "$pki/ca.pem" --resolve "api.test:$h2p:127.0.0.1" \
	"https://api.test:$h2p/secret.txt"

policy=$IT_TMP/policy.json
write_policy "$policy" <<EOF2
{"workspace": {"root": "$WS"},
 "network": {"default": "deny",
  "rules": [{"destination": "api.test", "port": $h2p, "action": "allow"},
            {"destination": "api.test", "port": $gp, "action": "allow"},
            {"destination": "api.test", "port": $h1p, "action": "allow"},
            {"destination": "other.test", "port": $h2p, "action": "allow"},
            {"destination": "other.test", "port": $gp, "action": "allow"},
            {"destination": "127.0.0.0/8", "port": $h2p, "action": "allow"},
            {"destination": "127.0.0.0/8", "port": $gp, "action": "allow"},
            {"destination": "api.test", "port": $wp, "action": "allow"},
            {"destination": "other.test", "port": $wp, "action": "allow"},
            {"destination": "127.0.0.0/8", "port": $h1p, "action": "allow"},
            {"destination": "127.0.0.0/8", "port": $wp, "action": "allow"}],
  "resolve": {"api.test": "127.0.0.1", "other.test": "127.0.0.1"}},
 "credentials": [{"name": "tok", "source": {"type": "env", "var": "IT_TOKEN"},
   "injection": {"type": "env_var", "var_name": "TOKEN"}, "hosts": ["api.test"]},
  {"name": "tok2", "source": {"type": "env", "var": "IT_TOKEN2"},
   "injection": {"type": "env_var", "var_name": "TOKEN2"}, "hosts": ["other.test"]}]}
EOF2

cat >"$WS/grpc-call.py" <<'EOF2'
import os, sys, time
import grpc
target, auth, body = sys.argv[1], sys.argv[2], sys.argv[3].encode()
hold = len(sys.argv) > 4  # after the call, wait for the host's memory scan
ch = grpc.secure_channel(target, grpc.ssl_channel_credentials())
call = ch.unary_unary("/airlock.Echo/Call")
try:
    resp, c = call.with_call(body, metadata=(("authorization", auth),), timeout=10)
    trailers = dict(c.trailing_metadata())
    print("OK", resp.decode(), "trailer=" + trailers.get("x-seen-auth", ""))
except grpc.RpcError as e:
    print("ERR", e.code().name)
if hold:
    open("/workspace/scan-ready", "w").write(os.environ["TOKEN"])
    time.sleep(8)
EOF2

probe='
r() { printf "%s=%s\n" "$1" "$(echo "$2" | tr "\n" " ")"; }
H=https://api.test:'$h2p' G=api.test:'$gp' O=https://other.test:'$h2p'
export GRPC_DNS_RESOLVER=native
r token "$TOKEN"
r version "$(curl -sS -m 10 --http2 -o /dev/null -w "%{http_version}" $H/secret.txt 2>&1)"
r unswap "$(curl -sS -m 10 --http2 $H/secret.txt 2>&1)"
r swap "$(curl -sS -m 10 --http2 -o /dev/null -w "%{http_code}" -H "Authorization: Bearer $TOKEN" $H/secret.txt 2>&1)"
r big "$(curl -sS -m 20 --http2 $H/big.txt 2>&1 | sha256sum | cut -c1-16)"
r h1_fallback "$(curl -sS -m 10 --http2 -o /dev/null -w "%{http_version} %{http_code}" https://api.test:'$h1p'/secret.txt 2>&1)"
r path_then_ok "$(curl -s -m 10 --http2 -o /dev/null -o /dev/null -w "%{http_code} %{num_connects}\n" "$H/secret.txt?t=$TOKEN" $H/secret.txt 2>&1)"
r body "$(curl -s -m 10 --http2 -o /dev/null -w "%{http_code}" --data "t=$TOKEN" $H/leak-body 2>&1)"
r unbound "$(curl -s -m 10 --http2 -o /dev/null -w "%{http_code}" -H "X-Leak: $TOKEN" $O/leak-header 2>&1)"
r unbound_msg "$(curl -s -m 10 --http2 -H "X-Leak: $TOKEN" $O/leak-header 2>&1)"
r grpc "$(/usr/bin/python3 /workspace/grpc-call.py $G "Bearer $TOKEN" hello 2>&1)"
r grpc_unbound "$(/usr/bin/python3 /workspace/grpc-call.py other.test:'$gp' "Bearer $TOKEN" hello 2>&1)"
r grpc_stderr "$(/usr/bin/python3 /workspace/grpc-call.py other.test:'$gp' "Bearer $TOKEN" hello 2>&1 >/dev/null)"
r grpc_scanned "$(/usr/bin/python3 /workspace/grpc-call.py $G "Bearer $TOKEN" hello hold 2>&1)"
r grpc_bound2 "$(/usr/bin/python3 /workspace/grpc-call.py other.test:'$gp' "Bearer $TOKEN2" hi 2>&1)"
r ws "$(node /workspace/h2-ws.cjs client https://api.test:'$wp'/chat "Bearer $TOKEN" "token=$TOKEN" 2>&1)"
r ws_unbound "$(node /workspace/h2-ws.cjs client https://other.test:'$wp'/chat "Bearer $TOKEN2" "token=$TOKEN" 2>&1)"
r h2c "$(curl -s -m 10 --http2-prior-knowledge -o /dev/null -w "%{http_code}" --noproxy "*" http://api.test:'$h1p'/ 2>&1)"
'
# The host scans the memory of the gRPC client that held the surrogate, after its call, while it
# still runs (helpers/mem-scan.py): the real token must not be there, the surrogate must.
(
	wait_for 120 test -e "$WS/scan-ready"
	pid=$(pgrep -f "^/usr/bin/python3 /workspace/grpc-call.py .* hold$" | head -n 1)
	/usr/bin/python3 "$IT_SOURCE_ROOT/tests/integration/helpers/mem-scan.py" "$pid" \
		"real=$token" "surrogate=$(cat "$WS/scan-ready")" >"$IT_TMP/scan.out" 2>&1
	kill -0 "$pid" 2>/dev/null && echo alive >>"$IT_TMP/scan.out"
) &
scanner=$!
sb_run -p "$policy" --upstream-ca "$pki/ca.pem" --audit "$IT_TMP/audit.jsonl" --json \
	-- /bin/sh -c "$probe"
wait "$scanner"
assert_eq 0 "$AL_RC" "the sandbox with HTTP/2 upstreams runs"
json_get "$IT_TMP/al.out" 'd["stdout"]' >"$IT_TMP/probe.out"
get() { sed -n "s/^$1=//p" "$IT_TMP/probe.out" | head -n 1 | sed 's/ $//'; }
sur=$(get token)
assert_match '^ghp_[A-Za-z0-9]{36}$' "$sur" "the sandbox holds a surrogate"

assert_eq 2 "$(get version)" "curl --http2 gets HTTP/2 from an intercepted host that speaks it"
assert_eq "the key is $sur." "$(get unswap)" "a real value in an HTTP/2 body reaches the sandbox as the surrogate"
assert_eq 200 "$(get swap)" "a request with the surrogate in a header is answered"
assert_eq 1 "$(grep -c "authorization: Bearer $token" "$IT_TMP/nghttpd.log")" \
	"nghttpd received the real token in the header, once"
assert_eq "$(sha256sum "$www/big.txt" | cut -c1-16)" "$(get big)" \
	"a 400 KB body comes through whole (flow control end to end)"
assert_eq "1.1 200" "$(get h1_fallback)" "toward an HTTP/1.1-only upstream the sandbox gets HTTP/1.1"
assert_eq "403 1 200 0" "$(get path_then_ok)" \
	"a surrogate in the :path is refused on its stream (403), and the same connection serves the next"
assert_eq 403 "$(get body)" "a surrogate in an HTTP/2 body is refused (403)"
assert_eq 403 "$(get unbound)" "a surrogate toward a host its credential is not bound to is refused (403)"
assert_contains "$(get unbound_msg)" "airlock:" "... with airlock's message"
assert_eq "OK auth=Bearer $sur body=hello trailer=Bearer $sur" "$(get grpc)" \
	"gRPC: the metadata's surrogate is swapped, and the echo (body, trailers) turned back"
assert_eq 2 "$(grep -cx "Bearer $token" "$IT_TMP/grpc.log")" "the gRPC server saw the real token"
assert_eq alive "$(sed -n 2p "$IT_TMP/scan.out")" \
	"the host scanned the gRPC client's memory after its call, while it still ran"
assert_match '^real=0 surrogate=[1-9]' "$(head -n 1 "$IT_TMP/scan.out")" \
	"no real value in the memory of the sandbox's gRPC client (the scan sees the surrogate there)"
assert_eq "ERR PERMISSION_DENIED" "$(get grpc_unbound)" \
	"gRPC metadata with a surrogate toward an unbound host is refused"
assert_eq "" "$(get grpc_stderr)" "... as a gRPC status (trailers-only), which the client reads without complaint"
assert_match "^OK auth=Bearer ghp_" "$(get grpc_bound2)" "... while that host's own credential works"
assert_eq 3 "$(grep -c "Bearer ghp_" "$IT_TMP/grpc.log")" "only the three allowed calls reached the gRPC server"
assert_eq "status:200 echo:got:token=$sur" "$(get ws)" \
	"WebSocket over HTTP/2: the frames' surrogate is swapped and the echo turned back"
assert_eq 1 "$(grep -cx "auth=Bearer $token ext= text=token=$token" "$IT_TMP/ws.log")" \
	"... the server saw the real token in the CONNECT's header and in the message split across two frames, and no extension"
assert_match "^status:200 close:1008:airlock: " "$(get ws_unbound)" \
	"a surrogate in a frame toward a host its credential is not bound to closes the WebSocket (1008)"
assert_eq 1 "$(grep -c . "$IT_TMP/ws.log")" "... and its message never reached the server"
assert_ne 200 "$(get h2c)" "h2c (prior knowledge, plain) is refused"
assert_eq 0 "$(grep -c "$sur" "$IT_TMP/nghttpd.log" "$IT_TMP/grpc.log" | awk -F: '{s += $2} END {print s}')" \
	"no surrogate reached an upstream"
assert_eq 0 "$(grep -c 'leak-header' "$IT_TMP/nghttpd.log")" \
	"a request refused for its head never reached nghttpd (one refused for its body got there without it)"
assert_not_contains "$(cat "$IT_TMP/probe.out")" "$token" "the sandbox never saw the real token"

audit=$IT_TMP/audit.jsonl
count() { python3 -c '
import json, sys
print(sum(1 for l in open(sys.argv[1]) if eval(sys.argv[2], {"e": json.loads(l)})))' "$audit" "$1"; }
assert_ne 0 "$(count 'e.get("kind") == "net" and e.get("mode") == "tls-intercept-h2"')" \
	"the audit records HTTP/2 interception"
assert_ne 0 "$(count 'e.get("kind") == "credential" and e.get("action") == "swap" and e.get("stream", 0) > 0')" \
	"swaps are audited with their stream id"
assert_ne 0 "$(count 'e.get("kind") == "net" and e.get("verdict") == "deny" and e.get("reason", "").startswith("stream ")')" \
	"refusals are audited with their stream id"
assert_eq 0 "$(grep -c "$token" "$audit")" "the audit holds no real value"
it_finish
