# tests/integration/helpers/sshd-netns.sh, sourced by the SSH agent's root tests: a network
# namespace of the test's own reached through a veth pair (a private /30 of 10.213.0.0/16 chosen
# by the test's pid), held by a marked process of the test's (nothing named under /run/netns,
# which `ip netns add` would leave mounted), with a mount namespace of its own where /run is a
# tmpfs holding sshd's privilege separation folder. Needs $sd (the test's sshd folder). Sets
# $net, $hostaddr, $addr, $vh, $vn, $holder and $netns_id; defines ns_pids, no_ns_pids,
# fixture_stop (also on EXIT, with it_cleanup), in_ns, and start_sshd (below).

# A /30 of 10.213.0.0/16 chosen by the test's pid, refused if the host has anything in it.
n=$(($$ % 16000))
net=10.213.$((n / 64)).$((n % 64 * 4))
hostaddr=10.213.$((n / 64)).$((n % 64 * 4 + 1))
addr=10.213.$((n / 64)).$((n % 64 * 4 + 2))
vh=alssh$(($$ % 10000000))h
vn=alssh$(($$ % 10000000))n
if [ -n "$(ip -4 -o addr show to "$net/30")" ] || [ -n "$(ip -4 route show exact "$net/30")" ] ||
	ip link show "$vh" >/dev/null 2>&1; then
	it_fail "the test's network $net/30 (or link $vh) is free on this host" \
		"$(ip -4 -o addr show to "$net/30")" "$(ip -4 route show exact "$net/30")"
	it_finish
fi

# The namespace is held by a process of the test's (nothing named under /run/netns, which
# `ip netns add` would leave mounted), marked for lib.sh's leftover checks. It has a mount
# namespace of its own too, where /run is a tmpfs holding sshd's privilege separation folder:
# the host's /run is left alone.
unshare --net --mount --propagation private -- \
	bash -c 'exec -a "$0" sleep infinity' "airlock-it-sshd-netns-$IT_MARK" &
holder=$!
netns_id=""
# Every process in the test's network namespace: the holder and each sshd (listeners, and the
# session children, which retitle themselves "sshd: root@notty" and so lose the marker).
ns_pids()
{
	local p
	[ -n "$netns_id" ] || return 0
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/ns/net" 2>/dev/null)" = "$netns_id" ] && printf '%s\n' "${p#/proc/}"
	done
	return 0
}
no_ns_pids() { [ -z "$(ns_pids)" ]; }
fixture_stop()
{
	local p
	ip link del "$vh" 2>/dev/null
	for p in $(ns_pids); do
		kill -TERM "$p" 2>/dev/null
	done
	if ! wait_for 5 no_ns_pids; then
		for p in $(ns_pids); do
			kill -KILL "$p" 2>/dev/null
		done
	fi
	kill -KILL "$holder" 2>/dev/null
	wait "$holder" 2>/dev/null
	return 0
}
trap 'fixture_stop; it_cleanup' EXIT
in_ns() { nsenter --target "$holder" --net --mount -- "$@"; }
own_netns() { [ "$(readlink "/proc/$holder/ns/net")" != "$(readlink /proc/self/ns/net)" ]; }
if wait_for 5 own_netns; then
	netns_id=$(readlink "/proc/$holder/ns/net")
else
	it_fail "the sshd network namespace is made"
	fixture_stop
	it_finish
fi

ip link add "$vh" type veth peer name "$vn" netns "$holder" ||
	it_fail "a veth pair into the sshd namespace is made"
ip addr add "$hostaddr/30" dev "$vh"
ip link set "$vh" up
in_ns ip link set lo up
in_ns ip addr add "$addr/30" dev "$vn"
in_ns ip link set "$vn" up
in_ns ip route add default via "$hostaddr"
in_ns mount -t tmpfs -o mode=755,size=1m airlock-it-sshd /run
in_ns mkdir -m 755 /run/sshd
# Without PAM, sshd refuses an account whose password field starts with "!" (locked); root's is
# "*" on Debian's images, "!" where an installer locked it. In sshd's own mount namespace only,
# such a root gets "*" (no password either way).
if [ "$(getent shadow root | cut -d: -f2 | cut -c1)" = '!' ]; then
	sed 's/^root:![^:]*:/root:*:/' /etc/shadow >"$sd/shadow"
	chmod 600 "$sd/shadow"
	in_ns mount --bind "$sd/shadow" /etc/shadow
fi

# start_sshd NAME PORT: Debian's sshd in the namespace on $addr:PORT with host key $sd/host_NAME,
# accepting the keys in $sd/authorized_keys for root (publickey only, no PAM); agent forwarding
# as $SSHD_AGENT_FORWARDING says (default no), and the lines of $SSHD_EXTRA added. listens PORT:
# whether it listens yet.
sshd_conf()
{
	cat <<EOF
ListenAddress $addr
Port $2
HostKey $sd/host_$1
PidFile $sd/$1.pid
AuthorizedKeysFile $sd/authorized_keys
AuthenticationMethods publickey
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
UsePAM no
StrictModes no
PermitUserRC no
PermitUserEnvironment no
AllowAgentForwarding ${SSHD_AGENT_FORWARDING:-no}
AllowTcpForwarding no
X11Forwarding no
PrintMotd no
${SSHD_EXTRA:-}
LogLevel VERBOSE
EOF
}
start_sshd()
{
	sshd_conf "$1" "$2" >"$sd/$1.conf"
	# The log's name carries the marker into the listener's command line (lib.sh's leftover
	# checks see it).
	nsenter --target "$holder" --net --mount -- /usr/sbin/sshd -D -f "$sd/$1.conf" \
		-E "$sd/$1.sshd-$IT_MARK.log" </dev/null >/dev/null 2>&1 &
}
listens() { in_ns ss -Hltn "sport = :$1" | grep -q .; }
