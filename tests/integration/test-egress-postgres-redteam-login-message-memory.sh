#!/usr/bin/env bash
# Red team (issue 19 item 4): a sandbox cannot make the egress proxy hold much memory with Postgres
# login messages it never finishes. Before the relay the proxy frames the sandbox's messages
# itself, and the longest one it could take is small (a SCRAM message is at most 1 KiB, a
# PasswordMessage the surrogate or its MD5 answer), yet a message announcing up to 1 MiB is
# buffered whole before it is looked at. The proxy (airlock-net) is in airlock's memory cgroup,
# not the sandbox's: 200 connections each sending a PasswordMessage of 1 MiB less one byte made
# it hold some 200 MiB (the HTTP head it would take is 64 KiB). Expected: a login message longer
# than any the login can use is refused at its header (08P01), so the proxy grows by little.
# The "server" is a listener of the test's own on 127.0.0.1 that never answers (nothing reaches
# it before the sandbox's login ends anyway).
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

port=$(it_port)
conns=200
export REAL_PW=real-$(head -c 300 /dev/urandom | base64 -w0 | tr -dc 'A-Za-z0-9' | head -c 24)

cat >"$IT_TMP/hold.py" <<'PY'
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1024); held = []
print("ready", flush=True)
while True:
    held.append(s.accept()[0])
PY
/usr/bin/python3 "$IT_TMP/hold.py" "$port" >"$IT_TMP/hold.out" 2>&1 &
hold=$!
wait_for 10 grep -q ready "$IT_TMP/hold.out" || it_fail "the test's listener started"

# In the sandbox: each connection sends its startup, reads the proxy's AuthenticationCleartext,
# then a PasswordMessage announcing 1 MiB, all of it but its last byte; it waits until the
# proxy took those bytes (its send queue empty), or answered or closed the connection (a refusal:
# what is still queued is never taken), then says so and
# holds the connections until the host, having measured, ends it (by its pid; a file the host
# writes shows late through the sandbox's workspace).
cat >"$WS/flood.py" <<'PY'
import fcntl, os, socket, struct, sys, termios, time
host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
LEN = 1 << 20
body = struct.pack("!I", 196608) + b"user\0app\0database\0appdb\0\0"
startup = struct.pack("!I", len(body) + 4) + body
socks, refused = [], 0
for i in range(n):
    s = socket.create_connection((host, port), timeout=30)
    try:
        s.sendall(startup)
        s.recv(64)
        s.sendall(b"p" + struct.pack("!I", LEN) + b"A" * (LEN - 4 - 1))
        socks.append(s)
    except OSError:
        refused += 1
        s.close()
for s in socks:
    buf = bytearray(4)
    s.settimeout(0)
    while True:
        try:
            fcntl.ioctl(s.fileno(), termios.TIOCOUTQ, buf)
        except OSError:
            break
        if struct.unpack("i", buf)[0] == 0:
            break
        try:  # an answer (the refusal) or the end: what is queued will never be taken
            s.recv(1, socket.MSG_PEEK)
            break
        except BlockingIOError:
            pass
        except OSError:
            break
        time.sleep(0.01)
print("held", len(socks), "refused", refused, flush=True)
open("/workspace/ready", "w").close()
for _ in range(1200):  # the host kills this process; 60 s at most
    time.sleep(0.05)
PY

policy=$IT_TMP/policy.json
write_policy "$policy" <<EOF
{"workspace": {"root": "$WS"},
 "network": {"default": "deny",
  "rules": [{"destination": "db.test", "port": $port, "action": "allow"},
            {"destination": "127.0.0.0/8", "port": $port, "action": "allow"}],
  "resolve": {"db.test": "127.0.0.1"}},
 "credentials": [{"name": "db", "source": {"type": "env", "var": "REAL_PW"},
   "injection": {"type": "env_var", "var_name": "PGPASSWORD"},
   "postgres": {"user": "app", "database": "appdb", "destinations": ["db.test:$port"],
                "client_auth": "password"}}]}
EOF

net_rss() # the VmRSS (KiB) of this run's egress proxy
{
	local p
	for p in $(pgrep -x airlock-net); do
		if tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -qF -- "$WS"; then
			awk '/^VmRSS/ {print $2}' "/proc/$p/status"
			return
		fi
	done
	echo 0
}
measure()
{
	wait_for 120 test -e "$WS/ready" || return
	net_rss >"$IT_TMP/rss.peak"
	local p
	for p in $(pgrep -f "^/usr/bin/python3 /workspace/flood.py db.test $port $conns $IT_MARK"); do kill "$p"; done
}
measure &
measurer=$!
sb_run --policy "$policy" --json -- /usr/bin/python3 /workspace/flood.py db.test "$port" "$conns" "$IT_MARK"
wait "$measurer"
kill "$hold" 2>/dev/null
wait "$hold" 2>/dev/null

o=$(json_get "$IT_TMP/al.out" "d['stdout']")
assert_contains "$o" "held" "the sandbox's flood ran: $o"
peak=$(cat "$IT_TMP/rss.peak" 2>/dev/null || echo 0)
assert_ne 0 "$peak" "the proxy's memory was measured while the connections were open"
it_log "the egress proxy's VmRSS with $conns unfinished login messages: $peak KiB"
assert_true "the proxy holds under 64 MiB for $conns unfinished Postgres login messages (it held $peak KiB)" \
	test "$peak" -lt $((64 * 1024))
assert_not_contains "$(cat "$IT_TMP/al.out" "$IT_TMP/al.err")" "$REAL_PW" "no real password in airlock's output"
it_finish
