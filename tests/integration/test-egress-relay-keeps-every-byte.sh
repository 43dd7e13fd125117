#!/usr/bin/env bash
# What the egress proxy relays without reading it (plain TCP to an allowed destination) comes
# through whole and in order, whatever the shape of the traffic: copied a read at a time when it
# comes in small reads, spliced when it comes in bulk, and switching between the two.
#   upload     24 MiB, then the client's end, then the server's answer after it (half-close);
#              again with 100 bytes sent together with the end
#   download   24 MiB read slowly at first (the proxy's buffer and pipe full, the sandbox slow)
#   drip       64 KiB, then 3,000 one-byte segments queued while the sandbox does not read
#   pingpong   3,000 small exchanges on one connection (a short read says the socket is empty)
#   echo       8 MiB both ways at once, in pieces of every size
#   urgent     bytes, an urgent byte (MSG_OOB), bytes: those around it come through
# The proxy sends through io_uring, a turn's sends at once (netns/proxy-send.c), unless
# AIRLOCK_NET_SEND=direct (this test's @direct variant): each send made when it is made. Both
# must pass, and each checks that its way is the one in use.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

port=$(it_port)
peer=$IT_SOURCE_ROOT/tests/integration/helpers/relay-peer.py
/usr/bin/python3 "$peer" serve "$port" >"$IT_TMP/peer.out" 2>&1 &
IT_UPSTREAMS="$IT_UPSTREAMS $!"
wait_for 10 grep -q ready "$IT_TMP/peer.out"
cp "$peer" "$WS/relay-peer.py"

policy=$IT_TMP/policy.json
write_policy "$policy" <<EOF
{"workspace": {"root": "$WS"},
 "network": {"default": "deny",
  "rules": [{"destination": "relay.test", "port": $port, "action": "allow"},
            {"destination": "127.0.0.0/8", "port": $port, "action": "allow"}],
  "resolve": {"relay.test": "127.0.0.1"}}}
EOF

sb_run -p "$policy" --audit "$IT_TMP/audit.jsonl" -- \
	/usr/bin/python3 /workspace/relay-peer.py check relay.test "$port"
assert_eq 0 "$AL_RC" "the sandbox's client ran ($AL_ERR)"
for c in upload upload_small download drip pingpong echo urgent; do
	assert_eq ok "$(sed -n "s/^$c=//p" <<<"$AL_OUT")" "$c: every byte came through"
done
assert_eq 26 "$(grep -c '"mode":"tcp"' "$IT_TMP/audit.jsonl")" \
	"each connection was relayed unread (audited as tcp)"

# Which way the proxy sends: an io_uring among its fds, or none; and, watched with strace during
# 3,000 exchanges copied each way, one send() for each of the 6,000 messages, or (batched) no
# send() at all but the few for the DNS answers and the ends.
mkfifo "$IT_TMP/go"
sb_run -p "$policy" -- /bin/sh -c 'touch /workspace/up; read -r go
	exec /usr/bin/python3 /workspace/relay-peer.py check relay.test '"$port"' pingpong' \
	<"$IT_TMP/go" &
sb=$!
exec 3>"$IT_TMP/go"
wait_for 10 test -e "$WS/up"
rings="" net=""
for pid in $(it_fs_daemons); do
	[ "$(cat "/proc/$pid/comm" 2>/dev/null)" = airlock-net ] || continue
	net=$pid
	rings=$(find "/proc/$pid/fd" -lname 'anon_inode:\[io_uring\]' 2>/dev/null | wc -l)
done
assert_ne "" "$net" "the proxy (airlock-net) runs"
strace -f -qq -e trace=sendto,sendmsg,sendmmsg -o "$IT_TMP/sends.strace" -p "$net" &
tracer=$!
wait_for 10 awk '$1 == "TracerPid:" && $2 != 0 { ok = 1 } END { exit !ok }' "/proc/$net/status"
echo go >&3
exec 3>&-
wait "$sb"
assert_contains "$(cat "$IT_TMP/al.out")" "pingpong=ok" \
	"3,000 exchanges while the proxy was watched, each one answered"
kill "$tracer" 2>/dev/null
wait "$tracer" 2>/dev/null
sends=$(grep -cE '(sendto|sendmsg|sendmmsg)\(' "$IT_TMP/sends.strace")
if [ "${AIRLOCK_NET_SEND:-batched}" = direct ]; then
	assert_eq 0 "$rings" "AIRLOCK_NET_SEND=direct: the proxy has no io_uring"
	assert_true "AIRLOCK_NET_SEND=direct: a send() per message ($sends)" [ "$sends" -ge 6000 ]
else
	assert_eq 1 "$rings" "the proxy batches its sends through one io_uring"
	assert_true "both ways' messages left through the ring ($sends send()s)" [ "$sends" -lt 100 ]
fi

# Any other way is refused before the command runs.
AIRLOCK_NET_SEND=later sb_run -p "$policy" -- /bin/true
assert_eq 125 "$AL_RC" "AIRLOCK_NET_SEND=later: refused (airlock's own error)"
assert_contains "$AL_ERR" 'AIRLOCK_NET_SEND must be "batched" or "direct"' "... saying which setting"
it_finish
