#!/usr/bin/env bash
# Without root, the egress proxy connects upstream as the user, from the host's own network
# namespace: what the user's own loopback services (a dev server on 127.0.0.1) would answer the
# user, the sandbox must not reach without a rule naming them. Tried every way in: the address
# itself (transparently and through HTTP_PROXY, plain and CONNECT), the proxy's own address,
# "localhost", and an allowed name pinned to 127.0.0.1 at another port; only the allowed name and
# port get through (a name pinned to loopback needs a rule naming the address too, as for root),
# and the dev server never sees a request. A sandbox opening far more
# connections than the proxy takes cannot exhaust the user's file descriptors through it: the
# proxy holds a bounded number, stays one process, and serves again once they are closed. A
# session's commands get the same egress.
# Always as an unprivileged user (uid 65534 unless AIRLOCK_IT_USER says otherwise).
export AIRLOCK_IT_USER=${AIRLOCK_IT_USER:-65534}
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

dev=$(it_port)
ok=$((dev + 1))
: >"$IT_TMP/dev.jsonl"
: >"$IT_TMP/ok.jsonl"
# The user's dev server runs as the user, as it would.
it_upstream --as "$AIRLOCK_IT_USER" "$IT_TMP/dev.out" "$dev" "$IT_TMP/dev.jsonl"
it_upstream "$IT_TMP/ok.out" "$ok" "$IT_TMP/ok.jsonl"

policy=$IT_TMP/policy.json
write_policy "$policy" <<EOF
{"workspace": {"root": "$WS"},
 "network": {"default": "deny",
  "rules": [{"destination": "api.test", "port": $ok, "action": "allow"},
            {"destination": "127.0.0.1/32", "port": $ok, "action": "allow"}],
  "resolve": {"api.test": "127.0.0.1"}}}
EOF

probe='
r() { printf "%s=%s\n" "$1" "$2"; }
c() { curl -s -m 5 -o /dev/null -w "%{http_code}" "$@" 2>/dev/null; printf "/%s" "$?"; }
r allowed "$(curl -sS -m 10 --noproxy "*" http://api.test:'$ok'/ 2>&1)"
r ip_transparent "$(c --noproxy "*" http://127.0.0.1:'$dev'/)"
P="-x http://10.255.255.1:3128 --noproxy \"\""
r ip_proxy "$(eval c $P http://127.0.0.1:'$dev'/)"
r ip_connect "$(eval c $P -p http://127.0.0.1:'$dev'/)"
r proxy_addr "$(c --noproxy "*" http://10.255.255.1:'$dev'/)"
r localhost_proxy "$(eval c $P http://localhost:'$dev'/)"
r localhost_connect "$(eval c $P -p http://localhost:'$dev'/)"
r name_other_port "$(c --noproxy "*" http://api.test:'$dev'/)"
r name_other_port_proxy "$(eval c $P http://api.test:'$dev'/)"
r allowed_proxy "$(eval curl -sS -m 10 $P http://api.test:'$ok'/ 2>&1)"
'
al_run run -p "$policy" -- /bin/sh -c "$probe" "$IT_MARK"
assert_eq 0 "$AL_RC" "the sandbox ran (as uid $AIRLOCK_IT_USER)"
[ "$AL_RC" = 0 ] || it_log "$AL_ERR"
get() { sed -n "s/^$1=//p" <<<"$AL_OUT" | head -n 1; }
assert_eq "hello from upstream" "$(get allowed)" "the allowed name and port get through"
assert_eq "hello from upstream" "$(get allowed_proxy)" "... also through the explicit proxy"
for k in ip_transparent ip_proxy ip_connect proxy_addr localhost_proxy localhost_connect \
	name_other_port name_other_port_proxy; do
	v=$(get "$k")
	# A refusal: no connection (curl's 7, 28, 52, 56: code 000) or the proxy's 403.
	case $v in
	000/* | 403/*) it_pass "$k is refused ($v)" ;;
	*) it_fail "$k is refused" "got $v" ;;
	esac
done
assert_eq 0 "$(wc -l <"$IT_TMP/dev.jsonl")" "the user's dev server saw no request"
assert_true "the allowed upstream saw the allowed request" grep -q '"GET"' "$IT_TMP/ok.jsonl"

# ---- a flood of connections: the proxy holds a bounded number of fds, as one process ----
flood='
import os, socket, sys, time
# Opened first: the flood may take every fd the sandbox may have (resets come asynchronously).
report = open("/workspace/holding", "w")
held = []
for _ in range(1200):
    try:
        s = socket.create_connection(("api.test", '$ok'), timeout=2)
        held.append(s)
    except OSError:
        pass
report.write(str(len(held)))
report.close()
for _ in range(400):
    if os.path.exists("/workspace/go"):
        break
    time.sleep(0.05)
for s in held:
    s.close()
time.sleep(0.5)
import urllib.request
print("after", urllib.request.urlopen("http://api.test:'$ok'/", timeout=10).read().decode().strip())
'
rm -f "$WS/holding" "$WS/go"
(
	al_run run -p "$policy" -- /usr/bin/python3 -c "$flood"
	echo "$AL_RC" >"$IT_TMP/flood.rc"
) &
run_pid=$!
if wait_for 60 test -s "$WS/holding"; then
	net=$(pgrep -u "$AIRLOCK_IT_USER" -x airlock-net | head -n 1)
	if [ -n "$net" ]; then
		fds=$(ls "/proc/$net/fd" | wc -l)
		threads=$(ls "/proc/$net/task" | wc -l)
		it_log "# the sandbox holds $(cat "$WS/holding") connections; airlock-net: $fds fds, $threads threads"
		# 256 connections at once, each with its upstream socket, and the proxy's own.
		assert_true "the proxy holds a bounded number of fds ($fds)" test "$fds" -le 700
		assert_true "the proxy stays one process of at most two threads ($threads)" \
			test "$threads" -le 2
		assert_eq 1 "$(pgrep -u "$AIRLOCK_IT_USER" -x airlock-net | wc -l)" \
			"one proxy process for the run"
		# The sandbox's first process made the proxy's sockets and handed them over: no
		# process of the sandbox may still hold one.
		init=$(pgrep -u "$AIRLOCK_IT_USER" -x airlock-init | head -n 1)
		sockets_of() { for f in /proc/"$1"/fd/*; do readlink "$f"; done | grep '^socket:' | sort -u; }
		shared=$(comm -12 <(sockets_of "$net") \
			<(for p in $init $(pgrep -P "$init"); do sockets_of "$p"; done | sort -u))
		assert_true "the sandbox's processes were found" test -n "$init"
		assert_eq "" "$shared" "no process of the sandbox holds a socket of the proxy"
	else
		it_fail "the proxy process of the run is found"
	fi
else
	it_fail "the sandbox opened its connections"
fi
touch "$WS/go"
wait "$run_pid"
assert_eq 0 "$(cat "$IT_TMP/flood.rc" 2>/dev/null)" "the flooding sandbox ended normally"
assert_contains "$(cat "$IT_TMP/al.out")" "after hello from upstream" \
	"after the flood, the proxy serves the sandbox again"

# ---- a session: the same egress for its commands ----
al_run session start -p "$policy" --owner 0
assert_eq 0 "$AL_RC" "a session with egress starts (as uid $AIRLOCK_IT_USER)"
sid=$(tail -n 1 <<<"$AL_OUT")
al_run session exec "$sid" -- /bin/sh -c "curl -sS -m 10 --noproxy '*' http://api.test:$ok/ 2>&1
	curl -s -m 5 -o /dev/null -w '%{http_code}' --noproxy '*' http://127.0.0.1:$dev/; echo \" rc=\$?\""
assert_contains "$AL_OUT" "hello from upstream" "... its command reaches the allowed upstream"
assert_contains "$AL_OUT" "000 rc=7" "... and not the user's dev server"
al_run session stop "$sid"
assert_eq 0 "$AL_RC" "... and stops"
assert_eq 0 "$(wc -l <"$IT_TMP/dev.jsonl")" "the user's dev server saw no request from the session"

it_upstreams_stop
it_finish
