#!/usr/bin/env bash
# The egress proxy does not let a sandbox hold its connection slots by idling (slow-loris): a
# connection that sends nothing (to the explicit proxy, or transparently), a request head sent a
# line at a time, or a kept-alive connection with no next request is closed once the policy's
# network.idle_timeout (here 2 s) passes, however many idle at once; a response that takes longer
# to read than that is not.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

hp=$(it_port)
up=$IT_TMP/upstream.jsonl
: >"$up"
it_upstream "$IT_TMP/up.out" "$hp" "$up"

policy=$IT_TMP/policy.json
write_policy "$policy" <<EOF
{"workspace": {"root": "$WS"},
 "network": {"default": "deny", "idle_timeout": "2s",
  "rules": [{"destination": "api.test", "port": $hp, "action": "allow"},
            {"destination": "127.0.0.0/8", "port": $hp, "action": "allow"}],
  "resolve": {"api.test": "127.0.0.1"}}}
EOF

cat >"$WS/idle.py" <<'PY'
import os, socket, sys, time
from urllib.parse import urlsplit

port = int(sys.argv[1])
proxy = urlsplit(os.environ["HTTP_PROXY"])
PROXY = (proxy.hostname, proxy.port)

def closed_within(s, seconds):
    """Whether the proxy ends s (EOF or reset) within seconds, reading what comes."""
    s.settimeout(seconds)
    try:
        while s.recv(65536):
            pass
        return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False

def report(name, ok):
    print("%s=%s" % (name, "closed" if ok else "open"), flush=True)

# Nothing sent, to the explicit proxy and transparently.
report("silent_proxy", closed_within(socket.create_connection(PROXY), 20))
report("silent_transparent", closed_within(socket.create_connection(("api.test", port)), 20))

# Thirty silent connections at once, half a head each: all are closed at their deadline, not one
# a sweep (found by the red team: the sweep stopped at the first connection it closed).
import selectors
sel = selectors.DefaultSelector()
for i in range(30):
    c = socket.create_connection(PROXY)
    if i % 2:
        c.sendall(b"GET http://api.test:%d/ HTTP/1.1\r\n" % port)
    c.setblocking(False)
    sel.register(c, selectors.EVENT_READ)
start, n_closed = time.monotonic(), 0
while n_closed < 30 and time.monotonic() - start < 20:
    for key, _ in sel.select(1):
        try:
            if key.fileobj.recv(65536):
                continue
        except BlockingIOError:
            continue
        except ConnectionResetError:
            pass
        sel.unregister(key.fileobj)
        n_closed += 1
print("many_silent=%d" % n_closed, flush=True)

# A head a line at a time, every 0.5 s, for up to 20 s: the deadline does not move.
s = socket.create_connection(PROXY)
s.sendall(b"GET http://api.test:%d/ HTTP/1.1\r\nHost: api.test:%d\r\n" % (port, port))
s.settimeout(0.5)
start, ended = time.monotonic(), False
while time.monotonic() - start < 20 and not ended:
    try:
        s.sendall(b"X-Slow: 1\r\n")
        ended = s.recv(65536) == b""
    except socket.timeout:
        pass
    except OSError:
        ended = True
report("slow_head", ended)

# One request answered, then no next one.
s = socket.create_connection(PROXY)
s.sendall(b"GET http://api.test:%d/ HTTP/1.1\r\nHost: api.test:%d\r\n\r\n" % (port, port))
s.settimeout(10)
got = s.recv(65536)
print("keepalive_answer=%s" % got.split(b"\r\n")[0].decode(), flush=True)
report("keepalive_idle", closed_within(s, 20))

# A response read slowly, for longer than the idle timeout: it is not cut.
n = 8 << 20
s = socket.create_connection(PROXY)
s.sendall(b"GET http://api.test:%d/big?n=%d HTTP/1.1\r\nHost: api.test:%d\r\n"
          b"Connection: close\r\n\r\n" % (port, n, port))
s.settimeout(10)
data, start = b"", time.monotonic()
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    data += chunk
    time.sleep(0.04)
body = data.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in data else b""
print("slow_read=%d in %.1fs" % (body.count(b"x"), time.monotonic() - start), flush=True)
PY

sb_run -p "$policy" --audit "$IT_TMP/audit.jsonl" -- /usr/bin/python3 /workspace/idle.py "$hp"
assert_eq 0 "$AL_RC" "the sandbox's client ran"
get() { sed -n "s/^$1=//p" <<<"$AL_OUT" | head -n 1; }
assert_eq closed "$(get silent_proxy)" "a connection to the explicit proxy that sends nothing is closed"
assert_eq closed "$(get silent_transparent)" "a transparent connection that sends nothing is closed"
assert_eq 30 "$(get many_silent)" "thirty idle connections at once are all closed (within 20 s, not one a second)"
assert_eq closed "$(get slow_head)" "a request head sent a line at a time is cut at the deadline"
assert_eq "HTTP/1.1 200 OK" "$(get keepalive_answer)" "a kept-alive connection gets its answer"
assert_eq closed "$(get keepalive_idle)" "then, with no next request, it is closed"
slow=$(get slow_read)
assert_match "^$((8 << 20)) in " "$slow" "a response read for longer than the idle timeout comes whole"
assert_true "the slow read took longer than the idle timeout (else it proves nothing)" \
	"$IT_PY" -c "import sys; sys.exit(0 if float('$slow'.split(' in ')[1][:-1]) > 2.5 else 1)"
assert_contains "$(cat "$IT_TMP/audit.jsonl")" "idle: no request within network.idle_timeout" \
	"the close is audited"

it_finish
