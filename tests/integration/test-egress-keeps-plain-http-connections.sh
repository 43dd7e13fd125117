#!/usr/bin/env bash
# Plain HTTP to a name, with no credential in the policy (nothing to search for), goes through the
# proxy's HTTP flow (netns/proxy-relay.c): its upstream connection is kept for the next connection
# to the same name and port (netns/proxy-pool.c), and its bodies are moved unread (copied or
# spliced, as the unread relay moves bytes). What must hold:
# - one-request connections (transparent, and through HTTP_PROXY's absolute-form) take turns on
#   one upstream connection; a sandbox's Connection: close is answered, not passed on;
# - one that carried a request body is not kept: a server that does not read a body (a GET's)
#   takes it for the next request, which must not be another connection's (a body holding the
#   start of a request would have the next connection's request line and headers glued to it);
# - bodies come through whole and in order, both ways: uploads with Content-Length and chunked,
#   downloads framed by length, by chunks and by the close, a HEAD's answer (no body), pipelined
#   requests with answers of every size;
# - an answer ended by the close is not followed by another on its connection;
# - a kept connection whose server ends it as the next GET comes makes the GET go again;
# - what is not HTTP (a line protocol to a name) is spliced, as before, and so is a short command
#   without a line end that could begin a request line ("ruok", or "QU" and the sandbox's end):
#   after a moment, or at once after the end, not at the idle timeout;
# - a Host naming another host is refused, as through HTTP_PROXY;
# - every upstream connection is closed once the sandbox ends.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

hp=$(it_port)
tp=$((hp + 1))
wp=$((hp + 2))
up=$IT_TMP/upstream.jsonl
conns=$IT_TMP/conns.jsonl
: >"$up"
: >"$conns"
it_upstream "$IT_TMP/up.out" "$hp" "$up" --conn-log "$conns"
peer=$IT_SOURCE_ROOT/tests/integration/helpers/relay-peer.py
/usr/bin/python3 "$peer" serve "$tp" >"$IT_TMP/peer.out" 2>&1 &
IT_UPSTREAMS="$IT_UPSTREAMS $!"
wait_for 10 grep -q ready "$IT_TMP/peer.out"
# A server that answers the first 4 bytes (or fewer, at the client's end) with "got:" and them.
/usr/bin/python3 -c '
import socket, sys, threading
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(16)
print("ready", flush=True)
def serve(c):
    data = b""
    while len(data) < 4:
        b = c.recv(4 - len(data))
        if not b:
            break
        data += b
    c.sendall(b"got:" + data)
    c.close()
while True:
    threading.Thread(target=serve, args=(s.accept()[0],), daemon=True).start()' "$wp" \
	>"$IT_TMP/word.out" 2>&1 &
IT_UPSTREAMS="$IT_UPSTREAMS $!"
wait_for 10 grep -q ready "$IT_TMP/word.out"

policy=$IT_TMP/policy.json
write_policy "$policy" <<EOF
{"workspace": {"root": "$WS"},
 "network": {"default": "deny",
  "rules": [{"destination": "web.test", "port": $hp, "action": "allow"},
            {"destination": "line.test", "port": $tp, "action": "allow"},
            {"destination": "line.test", "port": $wp, "action": "allow"},
            {"destination": "127.0.0.0/8", "port": $wp, "action": "allow"},
            {"destination": "127.0.0.0/8", "port": $hp, "action": "allow"},
            {"destination": "127.0.0.0/8", "port": $tp, "action": "allow"}],
  "resolve": {"web.test": "127.0.0.1", "line.test": "127.0.0.1"},
  "idle_timeout": "20s"}}
EOF

# Each step is one curl, one connection (transparent unless it says otherwise); its answer goes to
# $W/<step>, curl's exit status to $W/<step>.rc.
probe='
W=/workspace
S=http://web.test:'$hp'
get() { step=$1; shift; curl -sS -m 30 --noproxy "*" -o $W/$step "$@" 2>$W/$step.err; echo $? >$W/$step.rc; }
head -c 5000000 /dev/urandom >/tmp/up.bin
sha256sum </tmp/up.bin | cut -c1-64 >$W/up.sha
get p1 $S/conn
get p2 $S/conn
get p3 -H "Connection: close" -D $W/p3.head $S/conn
curl -sS -m 10 -o $W/p4 $S/conn 2>$W/p4.err; echo $? >$W/p4.rc
get p5 -T /tmp/up.bin $S/sha256
get p6 -T /tmp/up.bin -H "Transfer-Encoding: chunked" $S/sha256
get ps1 -X GET --data-binary "$(printf "GET /conn?smuggled HTTP/1.1\r\nX-Swallow: ")" $S/ignore-body
get ps2 $S/conn
get p7 "$S/big?n=10485760&seed=7"
get p7sha "$S/big-sha?n=10485760&seed=7"
get p8 "$S/big?n=3000000&seed=8&te=chunked"
get p8sha "$S/big-sha?n=3000000&seed=8"
get p9 -I "$S/big?n=100000&seed=9"
get p10 $S/conn
/usr/bin/python3 - web.test '$hp' >$W/p11 2>$W/p11.err <<PY
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])))
host = "%s:%s" % (sys.argv[1], sys.argv[2])
s.sendall(b"".join(b"GET %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (p, host.encode())
                   for p in (b"/big?n=200000&seed=11", b"/conn", b"/big?n=5&seed=12")))
s.shutdown(socket.SHUT_WR)
data = s.makefile("rb").read()
import hashlib, random
want = [random.Random(11).randbytes(200000), None, random.Random(12).randbytes(5)]
rest, out = data, []
for w in want:
    head, _, rest = rest.partition(b"\r\n\r\n")
    n = int([l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")][0])
    body, rest = rest[:n], rest[n:]
    out.append("ok" if w is None or body == w else "BAD")
    if w is None:
        out.append(body.decode())
print(" ".join(out), len(rest))
PY
get p12 "$S/big?n=2000000&seed=12&te=close"
get p12sha "$S/big-sha?n=2000000&seed=12"
get p13 $S/conn
get p14 $S/drop-next
get p15 $S/conn
curl -sS -m 10 --noproxy "*" -o /dev/null -w "%{http_code}" -H "Host: other.test:'$hp'" $S/conn >$W/p16 2>$W/p16.err
/usr/bin/python3 - line.test '$tp' >$W/p17 2>$W/p17.err <<PY
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])))
msg = b"PING\r\nGET / HTTP/1.1 is not how this starts\r\n" * 1000
s.sendall(b"echo\n" + msg)
s.shutdown(socket.SHUT_WR)
data = s.makefile("rb").read()
print("ok" if data == msg else "BAD %d" % len(data))
PY
/usr/bin/python3 - line.test '$wp' >$W/p18 2>$W/p18.err <<PY
import socket, sys
for word, end in ((b"ruok", False), (b"QU", True)):
    s = socket.create_connection((sys.argv[1], int(sys.argv[2])))
    s.settimeout(15)
    s.sendall(word)
    if end:
        s.shutdown(socket.SHUT_WR)
    try:
        print(s.recv(100).decode(), end=" ")
    except OSError as e:
        print("error:%s" % type(e).__name__, end=" ")
PY
'
sb_run -p "$policy" --audit "$IT_TMP/audit.jsonl" -- /bin/sh -c "$probe"
assert_eq 0 "$AL_RC" "the sandbox runs ($AL_ERR)"

for s in p1 p2 p3 p4 p5 p6 ps1 ps2 p7 p7sha p8 p8sha p9 p10 p12 p12sha p13 p14 p15; do
	assert_eq 0 "$(cat "$WS/$s.rc")" "step $s is answered ($(head -c 200 "$WS/$s.err"))"
done

c1=$(it_conn_of p1)
assert_eq "$c1 2" "$(it_conn_of p2) $(it_n_of p2)" "a second connection took the first one's upstream"
assert_eq "$c1 3" "$(it_conn_of p3) $(it_n_of p3)" "... and a third, which said Connection: close"
assert_match '(^|
)Connection: close' "$(tr -d '\r' <"$WS/p3.head")" \
	"the sandbox's Connection: close is answered with Connection: close"
assert_eq "[]" "$(it_connection_of "$up" "$c1" 3)" "... and was not passed on"
assert_eq "$c1 4" "$(it_conn_of p4) $(it_n_of p4)" \
	"a request through HTTP_PROXY (absolute-form) took the same upstream connection"

up_sha=$(cat "$WS/up.sha")
assert_eq "$up_sha" "$(cat "$WS/p5")" "a 5 MB upload with Content-Length reached the upstream whole"
assert_eq "$up_sha" "$(cat "$WS/p6")" "... and chunked"
# logged PATH: the upstream connection and request number of each request for PATH, in order.
logged()
{
	"$IT_PY" -c '
import json, sys
print(" ".join("%d/%d" % (d["conn"], d["n"]) for d in map(json.loads, open(sys.argv[1]))
               if d["path"] == sys.argv[2]))' "$up" "$1"
}
read -r l5 l6 <<<"$(logged /sha256)"
assert_eq "$c1/5" "$l5" "the upload took the kept connection"
assert_ne "$c1" "${l6%/*}" "... which its body spent: the next connection got a new one"
assert_eq 1 "${l6#*/}" "... as its first request"
assert_eq ignored "$(cat "$WS/ps1")" "a GET whose body the upstream ignores is answered"
assert_eq 1 "$(it_n_of ps2)" "the next connection got an upstream connection of its own"
assert_eq 0 "$("$IT_PY" -c '
import json, sys
print(sum(1 for d in map(json.loads, open(sys.argv[1]))
          for k, v in d["headers"] if "HTTP/1.1" in v))' "$up")" \
	"... so the body left unread never had the next connection's request glued to it"
assert_eq "$(cat "$WS/p7sha")" "$(sha256sum <"$WS/p7" | cut -c1-64)" \
	"a 10 MiB download framed by its length came whole and in order"
assert_eq "$(cat "$WS/p8sha")" "$(sha256sum <"$WS/p8" | cut -c1-64)" "... and one in chunks"
assert_match 'Content-Length: 100000' "$(tr -d '\r' <"$WS/p9")" "a HEAD's answer came, with no body"
c7=$(it_conn_of ps2)
assert_eq "$c7 7" "$(it_conn_of p10) $(it_n_of p10)" \
	"the downloads and the HEAD took the connection kept after that in turn (7 requests, none lost)"
assert_eq "ok ok conn=$c7 n=9 auth= ok 0" "$(cat "$WS/p11")" \
	"three pipelined requests got their three answers, whole and in order ($(head -c 200 "$WS/p11.err"))"
assert_eq "$(cat "$WS/p12sha")" "$(sha256sum <"$WS/p12" | cut -c1-64)" \
	"a download ended by the close came whole"
c12=$(it_conn_of p12sha)
assert_ne "$c7" "$c12" "an answer ended by the close is not followed by another on its connection"
c13=$(it_conn_of p13)
c14=$(it_conn_of p14)
assert_eq "$c13" "$c14" "the next connection keeps its own upstream in turn"
c15=$(it_conn_of p15)
assert_match "GET /drop-next GET /conn\$" "$(it_requests_on "$up" "$c14")" \
	"step 15's GET took the connection kept after step 14, which ended without answering it"
assert_ne "$c14" "$c15" "... so it went again on a new connection"
assert_eq 1 "$(it_n_of p15)" "... as its first request"
assert_eq 403 "$(cat "$WS/p16")" "a Host naming another host is refused"
assert_eq 0 "$(grep -c 'other.test' "$up" || true)" "... and never reached the upstream"
assert_eq ok "$(cat "$WS/p17")" "a line protocol to a name is spliced: echoed whole ($(head -c 200 "$WS/p17.err"))"
assert_eq "got:ruok got:QU " "$(cat "$WS/p18")" \
	"a short command without a line end reached its server and got its answer, also after the end ($(head -c 200 "$WS/p18.err"))"
assert_eq 3 "$(grep -c '"mode":"tcp"' "$IT_TMP/audit.jsonl")" "... and those were spliced (audited as tcp)"

wait_for 5 /usr/bin/python3 -c '
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
opened = {e["conn"] for e in ev if e["event"] == "open"}
closed = {e["conn"] for e in ev if e["event"] == "close"}
sys.exit(opened != closed)' "$conns"
assert_eq 0 $? "every upstream connection is closed once the sandbox has ended"
it_finish
