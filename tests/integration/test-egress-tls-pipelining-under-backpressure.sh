#!/usr/bin/env bash
# Intercepted TLS (read-ahead on: OpenSSL may hold whole records that epoll no longer reports)
# loses nothing when the proxy stops reading a side and comes back to it:
#   HTTP/1.1: the sandbox pipelines 6 bursts of 60 requests (each its own TLS record, all of a
#   burst written at once, each carrying its surrogate) to an upstream that starts reading late
#   and reads slowly, and reads the 4 KiB answers late: the flow's output limits and both
#   sockets' buffers stop the proxy's reading of each side in turn; every answer arrives, in
#   order, and the upstream saw every request with the real token;
#   HTTP/2: nghttp in the sandbox uploads 256 KiB on each of 40 streams at once to nghttpd
#   (which grants 16 KiB windows: the proxy's queue toward it fills, and it stops reading the
#   sandbox), and opens 200 streams at once with small windows of its own for a 64 KiB file:
#   every stream's answer arrives whole;
#   a record forgotten in OpenSSL's buffer hangs the clients until their 15 s timeouts, which
#   then count too few answers (no time is asserted: the machine's load decides durations).
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

rand() { head -c 96 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c "$1"; }
token=ghp_$(rand 36)
export IT_TOKEN=$token
h1p=$(it_port)
h2p=$((h1p + 1))
it_test_pki api.test

# The HTTP/1.1 upstream: TLS, starts reading 1 s after the connection, then pauses 50 ms every
# 25 requests; answers each request with 8 KiB beginning with its path.
cat >"$IT_TMP/slow-upstream.py" <<'PY'
import socket, ssl, sys, threading, time
port, cert, key, log = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
ctx.set_alpn_protocols(["http/1.1"])
def serve(conn):
    try:
        t = ctx.wrap_socket(conn, server_side=True)
        time.sleep(1)
        f = t.makefile("rb")
        n = real = 0
        while True:
            line = f.readline()
            if not line:
                break
            path = line.split()[1].decode()
            while True:
                h = f.readline()
                if h in (b"\r\n", b"\n", b""):
                    break
                if h.lower().startswith(b"authorization:") and h.split()[-1].decode() == sys.argv[5]:
                    real += 1
            n += 1
            body = (path + " ").encode().ljust(4096, b"x")
            t.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
            if n % 20 == 0:
                time.sleep(0.05)
        with open(log, "a") as o:
            o.write("requests=%d real=%d\n" % (n, real))
    except Exception as e:
        with open(log, "a") as o:
            o.write("error %r\n" % e)
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", port))
s.listen(16)
print("ready", flush=True)
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
: >"$IT_TMP/slow.log"
python3 "$IT_TMP/slow-upstream.py" "$h1p" "$pki/srv.pem" "$pki/srv.key" "$IT_TMP/slow.log" \
	"$token" >"$IT_TMP/slow.out" 2>&1 &
IT_UPSTREAMS="$IT_UPSTREAMS $!"
www=$IT_TMP/www
mkdir -p "$www"
head -c 49152 /dev/urandom | base64 -w 64 >"$www/f.txt"
nghttpd -w 14 -W 14 -d "$www" "$h2p" "$pki/srv.key" "$pki/srv.pem" >"$IT_TMP/nghttpd.log" 2>&1 &
IT_UPSTREAMS="$IT_UPSTREAMS $!"
wait_for 10 grep -q ready "$IT_TMP/slow.out"
wait_for 10 curl -s -o /dev/null --cacert "$pki/ca.pem" --resolve "api.test:$h2p:127.0.0.1" \
	"https://api.test:$h2p/f.txt"

policy=$IT_TMP/policy.json
write_policy "$policy" <<EOF
{"workspace": {"root": "$WS"},
 "network": {"default": "deny",
  "rules": [{"destination": "api.test", "port": $h1p, "action": "allow"},
            {"destination": "api.test", "port": $h2p, "action": "allow"},
            {"destination": "127.0.0.0/8", "port": $h1p, "action": "allow"},
            {"destination": "127.0.0.0/8", "port": $h2p, "action": "allow"}],
  "resolve": {"api.test": "127.0.0.1"}},
 "credentials": [{"name": "tok", "source": {"type": "env", "var": "IT_TOKEN"},
   "injection": {"type": "env_var", "var_name": "TOKEN"}, "hosts": ["api.test"]}]}
EOF

# The sandbox's HTTP/1.1 client: 6 rounds of 60 requests of 8 KiB (the flow takes at most 64 in
# flight), every request its own TLS record, all of a round written at once, then its answers
# read 0.3 s later.
cat >"$WS/pipeline.py" <<'PY'
import os, socket, ssl, sys, time
port, rounds, burst = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
ctx = ssl.create_default_context()
t = ctx.wrap_socket(socket.create_connection(("api.test", port), timeout=15),
                    server_hostname="api.test")
f = t.makefile("rb")
ok = 0
try:
    for k in range(rounds):
        ids = range(k * burst, (k + 1) * burst)
        for i in ids:
            t.sendall(("GET /r%d HTTP/1.1\r\nHost: api.test\r\nAuthorization: Bearer %s\r\n"
                       "X-Pad: %s\r\n\r\n" % (i, os.environ["TOKEN"], "p" * 8000)).encode())
        time.sleep(0.3)
        for i in ids:
            status = f.readline()
            length = 0
            while True:
                h = f.readline()
                if h in (b"\r\n", b""):
                    break
                if h.lower().startswith(b"content-length:"):
                    length = int(h.split()[1])
            body = f.read(length)
            if status.split()[1:2] == [b"200"] and body.startswith(b"/r%d " % i) and len(body) == 4096:
                ok += 1
except Exception as e:
    print("error", repr(e))
print("answers", ok)
PY

probe='
head -c 262144 /dev/zero | tr "\\0" u >/workspace/up.bin
nghttp -m 40 -d /workspace/up.bin -t 15 https://api.test:'$h2p'/f.txt >/workspace/h2up.out 2>/workspace/h2up.err
echo "h2up_rc $?"
echo "h2up_bytes $(wc -c </workspace/h2up.out)"
nghttp -m 200 -w 14 -W 16 -t 15 https://api.test:'$h2p'/f.txt >/workspace/h2.out 2>/workspace/h2.err
echo "h2_rc $?"
echo "h2_bytes $(wc -c </workspace/h2.out)"
python3 /workspace/pipeline.py '$h1p' 6 60 2>&1
'
sb_run -p "$policy" --upstream-ca "$pki/ca.pem" --json -- /bin/sh -c "$probe"
assert_eq 0 "$AL_RC" "the sandbox runs"
json_get "$IT_TMP/al.out" 'd["stdout"]' >"$IT_TMP/probe.out"
get() { sed -n "s/^$1 //p" "$IT_TMP/probe.out" | head -n 1; }

assert_eq 360 "$(get answers)" "all 360 pipelined HTTP/1.1 requests got their answer, in order"
assert_eq "requests=360 real=360" "$(cat "$IT_TMP/slow.log")" \
	"the slow upstream read every request, each with the real token"
assert_eq 0 "$(get h2_rc)" "nghttp's 200 HTTP/2 streams all ended"
assert_eq $((200 * $(wc -c <"$www/f.txt"))) "$(get h2_bytes)" "... each with its whole body"
assert_eq 0 "$(get h2up_rc)" "nghttp's 40 HTTP/2 streams uploading 256 KiB each all ended"
assert_eq $((40 * $(wc -c <"$www/f.txt"))) "$(get h2up_bytes)" "... each answered with its whole body"
it_finish
