#!/usr/bin/env bash
# A sandbox that writes into many connections to an upstream that never reads cannot make the
# egress proxy hold an unbounded share of the host's kernel memory (socket buffers are charged to
# no cgroup of the sandbox's): the proxy's side of each connection from the sandbox has fixed
# buffers, and each upstream socket queues a bounded amount that it could not send yet. The
# stalled upstream is a server of the test's own on 127.0.0.1.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

port=$((20000 + $$ % 20000))
conns=64
cat >"$IT_TMP/stall.py" <<'PY'
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(1024)
held = []
while True:
    held.append(s.accept()[0])  # and never read
PY
"$IT_PY" "$IT_TMP/stall.py" "$port" &
server=$!
trap 'kill -KILL $server 2>/dev/null; it_cleanup' EXIT

cat >"$WS/fill.py" <<'PY'
import socket, sys, time
n, port = int(sys.argv[1]), int(sys.argv[2])
socks = [socket.create_connection(("sink.test", port)) for _ in range(n)]
for c in socks:
    c.setblocking(False)
buf, total, idle, end = b"x" * 65536, 0, 0, time.time() + 15
while idle < 20 and time.time() < end:  # until a second passes with no byte taken
    moved = 0
    for c in socks:
        try:
            moved += c.send(buf)
        except BlockingIOError:
            pass
    total += moved
    idle = 0 if moved else idle + 1
    time.sleep(0.05)
print("filled %d MiB" % (total >> 20), flush=True)
open("/workspace/filled", "w").close()
while not __import__("os").path.exists("/workspace/done"):
    time.sleep(0.05)
PY
write_policy "$IT_TMP/stall.json" <<JSON
{"workspace": {"root": "$WS"}, "resources": {"memory": "64Mi"},
 "network": {"rules": [{"destination": "sink.test", "port": $port, "action": "allow"},
                       {"destination": "127.0.0.1/32", "port": $port, "action": "allow"}],
             "resolve": {"sink.test": "127.0.0.1"}}}
JSON
"$ITRUN" -t 120 -- "$AIRLOCK" run -p "$IT_TMP/stall.json" -- \
	python3 /workspace/fill.py "$conns" "$port" "$IT_MARK" >"$IT_TMP/run.out" 2>&1 &
runner=$!
if wait_for 45 test -e "$WS/filled"; then
	it_pass "the sandbox filled $conns connections: $(cat "$IT_TMP/run.out")"
else
	it_fail "the sandbox filled $conns connections" "$(cat "$IT_TMP/run.out")"
fi

# Bytes (skmem) of the sockets ss lists, summed per field: "r" received and not read yet, "w"
# queued to send.
skmem_sum()
{
	"$IT_PY" -c '
import re, sys
field, total = sys.argv[1], 0
for m in re.finditer(r"skmem:\(([^)]*)\)", sys.stdin.read()):
    for f in m.group(1).split(","):
        k = re.fullmatch(r"([a-z_]+)(\d+)", f)
        if k and k.group(1) == field:
            total += int(k.group(2))
print(total)' "$1"
}
# This run's proxy: the airlock-net below the runner (other runs may have their own).
net=""
for p in $(it_fs_daemons); do
	q=$p
	while [ "$q" -gt 1 ] && [ "$q" != "$runner" ]; do
		q=$(awk '{ print $4 }' "/proc/$q/stat" 2>/dev/null || echo 1)
	done
	[ "$q" = "$runner" ] && [ "$(cat "/proc/$p/comm")" = airlock-net ] && net=$p
done
assert_ne "" "$net" "the egress proxy runs"
from_sandbox=$(nsenter --target "${net:-1}" --net -- ss -tmnH state established | skmem_sum r)
to_upstream=$(ss -tmnH state established "( dport = :$port )" | skmem_sum w)
it_log "# proxy holds: $((from_sandbox >> 10)) KiB received from the sandbox, $((to_upstream >> 10)) KiB queued upstream"
# Per connection: the proxy's receive buffer on the sandbox's side (256 KiB, which the kernel
# doubles) and the upstream socket's unsent bytes (128 KiB plus what one splice adds past it;
# without the bound, ~460 KiB here).
limit=$((conns * 640 * 1024))
assert_true "what the proxy received and holds is bounded ($((from_sandbox >> 20)) MiB for $conns connections)" \
	test "$from_sandbox" -le "$limit"
limit=$((conns * 256 * 1024))
assert_true "what the proxy queued upstream is bounded ($((to_upstream >> 20)) MiB for $conns connections)" \
	test "$to_upstream" -le "$limit"

# The sandbox's own sockets count against its memory limit: cgroup v2 charges them to
# memory.max; v1 only once its TCP limit is set, which airlock sets to the memory limit.
sandbox=""
for p in $(it_marked_pids "fill.py"); do
	[ "$(cat "/proc/$p/comm" 2>/dev/null)" = python3 ] && sandbox=$p
done
read -r mnt root <<<"$(it_cgroup_mount memory)"
if [ -n "$mnt" ]; then
	memcg=$(awk -F: '$2 == "memory" { print $3 }' "/proc/${sandbox:-0}/cgroup" 2>/dev/null)
	[ "$root" = / ] || memcg=${memcg#"$root"}
	assert_eq $((64 << 20)) "$(cat "$mnt$memcg/memory.kmem.tcp.limit_in_bytes" 2>&1)" \
		"cgroup v1: the sandbox's TCP buffers are limited to its memory limit"
	tcp_used=$(cat "$mnt$memcg/memory.kmem.tcp.usage_in_bytes" 2>/dev/null || echo 0)
	assert_ne 0 "$tcp_used" "cgroup v1: the sandbox's socket buffers are charged to it ($((tcp_used >> 20)) MiB)"
fi

touch "$WS/done"
wait "$runner"
rc=$?
assert_eq 0 "$rc" "the run ends when the sandbox's program does"
[ "$rc" = 0 ] || cat "$IT_TMP/run.out"
kill -KILL "$server" 2>/dev/null
wait "$server" 2>/dev/null
it_finish
