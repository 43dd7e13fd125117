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
it_finish
