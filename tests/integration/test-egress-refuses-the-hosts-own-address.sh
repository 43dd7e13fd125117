#!/usr/bin/env bash
# A name resolving to one of the host's own public addresses does not reach the host's services
# through the egress proxy (whose upstream sockets live in airlock's own network namespace),
# unless a rule names that address. The "host" is a network namespace of the test's own, with a
# dummy interface holding 203.0.113.5 (an address no special-use range covers) and a server on
# it; airlock runs inside that namespace. The host's addresses of special use are its own too: an
# IPv6 ULA (fd00::5) is reached only by a rule naming exactly it, not by one for its /64 (found by
# review).
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

port=$(it_port)
# The "host": a network namespace held by a process of the test's (no mount, nothing named).
unshare --net sleep 600 &
holder=$!
trap 'kill -KILL $holder $server ${server6:-} 2>/dev/null; it_cleanup' EXIT
in_ns() { nsenter --target "$holder" --net -- "$@"; }
wait_for 5 test "$(readlink /proc/$holder/ns/net)" != "$(readlink /proc/self/ns/net)"
in_ns ip link set lo up
in_ns ip link add h0 type veth peer name h1
in_ns ip addr add 203.0.113.5/24 dev h0
in_ns ip -6 addr add fd00::5/64 dev h0 nodad
in_ns ip link set h0 up
in_ns ip link set h1 up
mkdir -p "$IT_TMP/www"
echo "a service of the host" >"$IT_TMP/www/index.html"
# Not through in_ns: $! must be the server itself (nsenter execs it), for the kill at the end.
nsenter --target "$holder" --net -- python3 -m http.server --bind 203.0.113.5 \
	--directory "$IT_TMP/www" "$port" >"$IT_TMP/server.out" 2>&1 &
server=$!
nsenter --target "$holder" --net -- python3 -m http.server --bind fd00::5 \
	--directory "$IT_TMP/www" "$port" >"$IT_TMP/server6.out" 2>&1 &
server6=$!
server_ok() { in_ns curl -s -m 2 "http://203.0.113.5:$port/" >/dev/null; }
server6_ok() { in_ns curl -s -m 2 "http://[fd00::5]:$port/" >/dev/null; }
assert_true "the host's service answers on its own address" wait_for 10 server_ok
assert_true "... and on its IPv6 ULA" wait_for 10 server6_ok

real_airlock=$AIRLOCK
AIRLOCK=$IT_TMP/airlock-in-ns
printf '#!/bin/sh\nexec nsenter --target %s --net -- %s "$@"\n' "$holder" "$real_airlock" >"$AIRLOCK"
chmod 755 "$AIRLOCK"

write_policy "$IT_TMP/by-name.json" <<JSON
{"network": {"default": "deny",
  "rules": [{"destination": "self.test", "port": $port, "action": "allow"}],
  "resolve": {"self.test": "203.0.113.5"}}}
JSON
probe="curl -sS -m 5 --noproxy '*' http://self.test:$port/ 2>&1; echo rc=\$?"
sb_run -p "$IT_TMP/by-name.json" --audit "$IT_TMP/audit.jsonl" -- /bin/sh -c "$probe"
assert_eq 0 "$AL_RC" "the sandbox runs"
assert_not_contains "$AL_OUT" "a service of the host" "an allowed name does not reach the host's own address"
assert_contains "$(cat "$IT_TMP/audit.jsonl")" "an address of the host itself" "the audit says why"

write_policy "$IT_TMP/by-address.json" <<JSON
{"network": {"default": "deny",
  "rules": [{"destination": "self.test", "port": $port, "action": "allow"},
            {"destination": "203.0.113.5/32", "port": $port, "action": "allow"}],
  "resolve": {"self.test": "203.0.113.5"}}}
JSON
sb_run -p "$IT_TMP/by-address.json" -- /bin/sh -c "$probe"
assert_contains "$AL_OUT" "a service of the host" "a rule naming the address opens it"

write_policy "$IT_TMP/v6-prefix.json" <<JSON
{"network": {"default": "deny",
  "rules": [{"destination": "fd00::/64", "port": $port, "action": "allow"}]}}
JSON
probe6="curl -sS -m 5 -x http://10.255.255.1:3128 --noproxy '' 'http://[fd00::5]:$port/' 2>&1; echo rc=\$?"
# The host's service answers an absolute-form request with its 404 page: either is its answer.
served() { grep -q -e "a service of the host" -e "Error response" <<<"$AL_OUT"; }
sb_run -p "$IT_TMP/v6-prefix.json" -- /bin/sh -c "$probe6"
assert_true "a rule for its /64 does not reach the host's own IPv6 address" eval '! served'
write_policy "$IT_TMP/v6-address.json" <<JSON
{"network": {"default": "deny",
  "rules": [{"destination": "fd00::5/128", "port": $port, "action": "allow"}]}}
JSON
sb_run -p "$IT_TMP/v6-address.json" -- /bin/sh -c "$probe6"
assert_true "a rule naming the IPv6 address opens it" served

kill -KILL "$holder" "$server" "$server6" 2>/dev/null
wait "$holder" "$server" "$server6" 2>/dev/null
it_finish
