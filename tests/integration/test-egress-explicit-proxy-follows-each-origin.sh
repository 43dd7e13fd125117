#!/usr/bin/env bash
# A client of HTTP_PROXY sends its requests for several origins on one connection to the proxy
# (curl given several URLs, a pooled client): each request goes to its own origin, decided and
# audited on its own (netns/proxy-relay.c, next_origin()). What must hold:
# - curl's requests to three origins (two names on one port, one name on two ports) and back to
#   the first share one connection to the proxy, and each is answered by its own upstream; going
#   back to an origin takes its kept upstream connection;
# - pipelined requests for several origins are answered whole and in order, a body included,
#   and each origin's upstream gets only its own requests, with its own Host;
# - a request for an origin the policy denies gets a 403 and the connection's end, after the
#   answers before it; one for an https:// target a 400;
# - a request sent before the sandbox's end still goes to its origin;
# - every origin has its own audit event; every upstream connection is closed at the end.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

hp=$(it_port)
hp2=$((hp + 1))
up=$IT_TMP/upstream.jsonl
up2=$IT_TMP/upstream2.jsonl
conns=$IT_TMP/conns.jsonl
conns2=$IT_TMP/conns2.jsonl
: >"$up"
: >"$up2"
: >"$conns"
: >"$conns2"
it_upstream "$IT_TMP/up.out" "$hp" "$up" --conn-log "$conns"
it_upstream "$IT_TMP/up2.out" "$hp2" "$up2" --conn-log "$conns2"

policy=$IT_TMP/policy.json
write_policy "$policy" <<EOF
{"workspace": {"root": "$WS"},
 "network": {"default": "deny",
  "rules": [{"destination": "web.test", "port": $hp, "action": "allow"},
            {"destination": "two.test", "port": $hp, "action": "allow"},
            {"destination": "web.test", "port": $hp2, "action": "allow"},
            {"destination": "127.0.0.0/8", "port": $hp, "action": "allow"},
            {"destination": "127.0.0.0/8", "port": $hp2, "action": "allow"}],
  "resolve": {"web.test": "127.0.0.1", "two.test": "127.0.0.1", "deny.test": "127.0.0.1"}}}
EOF

probe='
W=/workspace
A=http://web.test:'$hp'
B=http://two.test:'$hp'
C=http://web.test:'$hp2'
curl -sS -m 20 -w "%{num_connects} %{http_code}\n" -o $W/q1a $A/conn -o $W/q1b $B/conn \
	-o $W/q1c $C/conn -o $W/q1d $A/conn >$W/q1 2>$W/q1.err
/usr/bin/python3 - '$hp' '$hp2' >$W/q2 2>$W/q2.err <<PY
import hashlib, os, random, socket, sys
from urllib.parse import urlsplit
hp, hp2 = sys.argv[1], sys.argv[2]
proxy = urlsplit(os.environ["http_proxy"])
body = random.Random(5).randbytes(300000)

def request(method, url, data=b""):
    host = urlsplit(url).netloc
    extra = b"Content-Length: %d\r\n" % len(data) if data else b""
    return b"%s %s HTTP/1.1\r\nHost: %s\r\n%s\r\n" % (method, url.encode(), host.encode(), extra) + data

def answers(data):
    out = []
    while data:
        head, _, data = data.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        fields = {l.split(b":")[0].lower(): l.split(b":", 1)[1].strip() for l in lines[1:]}
        n = int(fields.get(b"content-length", b"0"))
        out.append((int(lines[0].split()[1]), data[:n], fields))
        data = data[n:]
    return out

def run(reqs):
    s = socket.create_connection((proxy.hostname, proxy.port))
    s.settimeout(20)
    s.sendall(b"".join(reqs))
    s.shutdown(socket.SHUT_WR)
    return answers(s.makefile("rb").read())

A, B, C = "http://web.test:" + hp, "http://two.test:" + hp, "http://web.test:" + hp2
got = run([request(b"GET", A + "/conn?p=1"), request(b"POST", B + "/sha256", body),
           request(b"GET", C + "/big?n=300000&seed=3"), request(b"GET", A + "/conn?p=4"),
           request(b"GET", "http://deny.test:" + hp + "/"), request(b"GET", A + "/conn?p=6")])
print(len(got))
print(got[0][0], got[0][1].decode())
print(got[1][0], "ok" if got[1][1].decode() == hashlib.sha256(body).hexdigest() else "BAD")
print(got[2][0], "ok" if got[2][1] == random.Random(3).randbytes(300000) else "BAD")
print(got[3][0], got[3][1].decode())
print(got[4][0], got[4][2].get(b"connection", b"").decode(), got[4][1].decode().strip())
got = run([request(b"GET", A + "/conn?p=7"), request(b"GET", "https://web.test:" + hp + "/")])
print(len(got), got[0][0], got[1][0], got[1][1].decode().strip())
PY
'
sb_run -p "$policy" --audit "$IT_TMP/audit.jsonl" -- /bin/sh -c "$probe"
assert_eq 0 "$AL_RC" "the sandbox runs ($AL_ERR)"

assert_eq "1 200
0 200
0 200
0 200" "$(cat "$WS/q1")" \
	"curl sent four requests to three origins on one connection to the proxy, each answered ($(head -c 300 "$WS/q1.err"))"
a=$(it_conn_of q1a)
b=$(it_conn_of q1b)
assert_eq 1 "$(it_n_of q1a)" "the first origin's request took an upstream connection of its own"
assert_ne "$a" "$b" "the second origin (another name, the same port) got its own"
assert_eq 1 "$(it_n_of q1b)" "... as its first request"
assert_match '^conn=[0-9]+ n=1 ' "$(cat "$WS/q1c")" "the third (another port) was answered by that port's upstream"
assert_eq "$a 2" "$(it_conn_of q1d) $(it_n_of q1d)" \
	"back on the first origin, its request took that origin's kept upstream connection"
# host_of LOG PATH: the Host each request for PATH had, in order.
host_of()
{
	"$IT_PY" -c '
import json, sys
print(" ".join(v for d in map(json.loads, open(sys.argv[1])) if d["path"] == sys.argv[2]
               for k, v in d["headers"] if k.lower() == "host"))' "$@"
}
assert_eq "web.test:$hp two.test:$hp web.test:$hp" "$(host_of "$up" /conn | cut -d' ' -f1-3)" \
	"each request reached its upstream in origin-form with its own Host"
assert_eq "web.test:$hp2" "$(host_of "$up2" /conn)" "... the other port's too"

q2=$(cat "$WS/q2")
assert_eq 5 "$(sed -n 1p <<<"$q2")" \
	"pipelined requests for several origins got five answers, then the connection's end ($(head -c 300 "$WS/q2.err"))"
assert_match '^200 conn=[0-9]+ n=[0-9]+ ' "$(sed -n 2p <<<"$q2")" "the first origin answered"
assert_eq "200 ok" "$(sed -n 3p <<<"$q2")" "the second got its request's body whole"
assert_eq "200 ok" "$(sed -n 4p <<<"$q2")" "the third's download came whole"
read -r p1 n1 <<<"$(sed -n 's/^200 conn=\([0-9]*\) n=\([0-9]*\) .*/\1 \2/p' <<<"$(sed -n 2p <<<"$q2")")"
assert_match "^200 conn=$p1 n=$((n1 + 1)) " "$(sed -n 5p <<<"$q2")" \
	"back on the first origin, on its kept upstream connection"
assert_match '^403 close airlock: ' "$(sed -n 6p <<<"$q2")" \
	"a denied origin got a 403 and the connection's end"
assert_eq "" "$(grep '"p=6"\|/conn?p=6' "$up" || true)" "... and nothing after it was sent"
assert_eq "2 200 400 airlock: the proxy takes CONNECT host:port or an http:// target" \
	"$(sed -n 7p <<<"$q2")" "an https:// target got a 400 after the answer before it"
assert_eq 0 "$(grep -c 'two.test' "$up2" || true)" "... and no request reached another origin's upstream"
assert_eq "" "$("$IT_PY" -c '
import json, sys
hp, hp2 = sys.argv[3:5]
for path in sys.argv[1:3]:
    for d in map(json.loads, open(path)):
        host = [v for k, v in d["headers"] if k.lower() == "host"][0]
        if (d["path"] == "/sha256") != (host == "two.test:" + hp) and d["path"] != "/conn" or \
           (path == sys.argv[2]) != (host == "web.test:" + hp2):
            print(path, d["path"], host)' "$up" "$up2" "$hp" "$hp2")" \
	"the body went to its own origin only, and each upstream got only its own origins' requests"

audit=$IT_TMP/audit.jsonl
count()
{
	"$IT_PY" -c '
import json, sys
print(sum(1 for l in open(sys.argv[1]) for d in [json.loads(l)]
          if d.get("kind") == "net" and d.get("via") == "proxy" and d.get("name") == sys.argv[2]
          and d.get("port") == int(sys.argv[3]) and d.get("verdict") == sys.argv[4]))' "$audit" "$@"
}
assert_eq 5 "$(count web.test "$hp" allow)" "each request's origin on the first port was audited"
assert_eq 2 "$(count two.test "$hp" allow)" "... and the second name"
assert_eq 2 "$(count web.test "$hp2" allow)" "... and the other port"
assert_eq 1 "$(count deny.test "$hp" deny)" "... and the denied origin, as denied"

wait_for 5 /usr/bin/python3 -c '
import json, sys
for path in sys.argv[1:]:
    ev = [json.loads(l) for l in open(path)]
    if {e["conn"] for e in ev if e["event"] == "open"} != {e["conn"] for e in ev if e["event"] == "close"}:
        sys.exit(1)' "$conns" "$conns2"
assert_eq 0 $? "every upstream connection is closed once the sandbox has ended"
it_finish
