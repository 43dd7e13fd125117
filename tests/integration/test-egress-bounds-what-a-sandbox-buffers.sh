#!/usr/bin/env bash
# A sandbox cannot make the egress proxy hold an unbounded share of the host's kernel memory
# (socket buffers are charged to no cgroup of the sandbox's), in either direction:
#  - uploads into an upstream that never reads: the proxy's side of each connection from the
#    sandbox has fixed buffers, and each upstream socket queues a bounded amount it could not
#    send yet;
#  - downloads the sandbox never reads: each upstream socket's receive buffer is fixed (a larger
#    one for a few connections at once) instead of growing to tcp_rmem's maximum.
# And the sandbox's own socket buffers count against its memory limit. The upstreams are servers
# of the test's own on 127.0.0.1; the proxy's network namespace is reached through its sockets
# (helpers/proxy-netns.py).
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

conns=64
stall_port=$(it_port)
flood_port=$((stall_port + 1))
cat >"$IT_TMP/servers.py" <<'PY'
import socket, sys, threading
def stall(port):  # accepts, never reads
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.bind(("127.0.0.1", port)); s.listen(1024); held = []
    while True:
        held.append(s.accept()[0])
def flood(port):  # sends without end to whoever connects
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port)); s.listen(1024)
    def send(c):
        try:
            while True:
                c.sendall(b"y" * 65536)
        except OSError:
            pass
    while True:
        threading.Thread(target=send, args=(s.accept()[0],), daemon=True).start()
threading.Thread(target=stall, args=(int(sys.argv[1]),), daemon=True).start()
flood(int(sys.argv[2]))
PY
"$IT_PY" "$IT_TMP/servers.py" "$stall_port" "$flood_port" &
server=$!
trap 'kill -KILL $server 2>/dev/null; it_cleanup' EXIT

# In the sandbox: open the connections, write into the stalled ones (until a second passes with
# no byte taken, 15 s at most), then wait for the test to look.
cat >"$WS/fill.py" <<'PY'
import os, socket, sys, time
n, port, mode = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
socks = [socket.create_connection(("sink.test", port)) for _ in range(n)]
for c in socks:
    c.setblocking(False)
buf, total, idle, end = b"x" * 65536, 0, 0, time.time() + 15
while mode == "upload" and idle < 20 and time.time() < end:
    moved = 0
    for c in socks:
        try:
            moved += c.send(buf)
        except BlockingIOError:
            pass
    total += moved
    idle = 0 if moved else idle + 1
    time.sleep(0.05)
if mode == "download":
    time.sleep(5)  # the upstream floods; nothing is read
print("%s: wrote %d MiB" % (mode, total >> 20), flush=True)
open("/workspace/filled", "w").close()
while not os.path.exists("/workspace/done"):
    time.sleep(0.05)
PY
write_policy "$IT_TMP/bounds.json" <<JSON
{"workspace": {"root": "$WS"}, "resources": {"memory": "64Mi"},
 "network": {"rules": [{"destination": "sink.test", "port": $stall_port, "action": "allow"},
                       {"destination": "sink.test", "port": $flood_port, "action": "allow"},
                       {"destination": "127.0.0.1/32", "port": $stall_port, "action": "allow"},
                       {"destination": "127.0.0.1/32", "port": $flood_port, "action": "allow"}],
             "resolve": {"sink.test": "127.0.0.1"}}}
JSON

# The sum of one skmem field (r: received and not read yet, w: queued to send) over the sockets
# ss lists on stdin.
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

# this run's proxy: the airlock-net below the runner (other runs may have their own)
proxy_of()
{
	local p q
	for p in $(it_fs_daemons); do
		q=$p
		while [ "$q" -gt 1 ] && [ "$q" != "$1" ]; do
			q=$(awk '{ print $4 }' "/proc/$q/stat" 2>/dev/null || echo 1)
		done
		[ "$q" = "$1" ] && [ "$(cat "/proc/$p/comm")" = airlock-net ] && echo "$p"
	done
}

# run_filling MODE PORT: starts the sandbox, waits until it has filled what it can.
run_filling()
{
	rm -f "$WS/filled" "$WS/done"
	"$ITRUN" -t 120 -- "$AIRLOCK" run -p "$IT_TMP/bounds.json" -- \
		python3 /workspace/fill.py "$conns" "$2" "$1" "$IT_MARK" >"$IT_TMP/run.out" 2>&1 &
	runner=$!
	if wait_for 45 test -e "$WS/filled"; then
		it_pass "$1: the sandbox filled $conns connections: $(cat "$IT_TMP/run.out")"
	else
		it_fail "$1: the sandbox filled $conns connections" "$(cat "$IT_TMP/run.out")"
	fi
	net=$(proxy_of "$runner")
	assert_ne "" "$net" "$1: the egress proxy runs"
}

end_run()
{
	local rc
	touch "$WS/done"
	wait "$runner"
	rc=$?
	assert_eq 0 "$rc" "$1: the run ends when the sandbox's program does"
	[ "$rc" = 0 ] || it_log "$(cat "$IT_TMP/run.out")"
}

# Uploads. Per connection: the proxy's receive buffer on the sandbox's side (256 KiB, which the
# kernel doubles; without the bound ~6.7 MiB here) and the upstream socket's unsent bytes (128 KiB
# plus what one splice adds; without the bound ~460 KiB).
run_filling upload "$stall_port"
from_sandbox=$("$IT_PY" "$IT_SOURCE_ROOT/tests/integration/helpers/proxy-netns.py" "${net:-0}" \
	ss -tmnH state established | skmem_sum r)
to_upstream=$(ss -tmnH state established "( dport = :$stall_port )" | skmem_sum w)
it_log "# upload: the proxy holds $((from_sandbox >> 10)) KiB from the sandbox, $((to_upstream >> 10)) KiB queued upstream"
assert_true "upload: what the proxy received and holds is bounded ($((from_sandbox >> 20)) MiB)" \
	test "$from_sandbox" -gt 0 -a "$from_sandbox" -le $((conns * 640 * 1024))
assert_true "upload: what the proxy queued upstream is bounded ($((to_upstream >> 20)) MiB)" \
	test "$to_upstream" -le $((conns * 256 * 1024))

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
end_run upload

# Downloads the sandbox never reads. Per connection: the upstream socket's receive buffer, 2 MiB
# (doubled) for 32 of them and 256 KiB (doubled) for the rest (without the bound, up to 16 MiB
# each here), and the proxy's send buffer toward the sandbox (256 KiB, doubled).
run_filling download "$flood_port"
from_upstream=$(ss -tmnH state established "( dport = :$flood_port )" | skmem_sum r)
to_sandbox=$("$IT_PY" "$IT_SOURCE_ROOT/tests/integration/helpers/proxy-netns.py" "${net:-0}" \
	ss -tmnH state established | skmem_sum w)
it_log "# download: the proxy holds $((from_upstream >> 10)) KiB from upstream, $((to_sandbox >> 10)) KiB queued to the sandbox"
assert_true "download: what the proxy received from upstream is bounded ($((from_upstream >> 20)) MiB)" \
	test "$from_upstream" -gt 0 -a "$from_upstream" -le $(((32 * 4 + (conns - 32)) * 1024 * 1024 + conns * 64 * 1024))
assert_true "download: what the proxy queued to the sandbox is bounded ($((to_sandbox >> 20)) MiB)" \
	test "$to_sandbox" -le $((conns * 640 * 1024))
end_run download

kill -KILL "$server" 2>/dev/null
wait "$server" 2>/dev/null
it_finish
