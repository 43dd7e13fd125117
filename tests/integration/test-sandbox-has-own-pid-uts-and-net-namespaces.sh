#!/usr/bin/env bash
# The command runs as pid 2 under airlock's init (pid 1), sees none of the host's processes,
# has hostname "airlock", sees only the loopback interface, has no capabilities left, runs with
# no_new_privs and a seccomp filter, and cannot reach any network.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

# A host process the sandbox must not see. Its marker reaches the sandbox in a file, so that no
# command line in the sandbox contains it.
host_mark="$IT_MARK-host"
bash -c "exec -a '$host_mark' sleep 300" &
host_sleep=$!
echo "$host_mark" >"$WS/host-mark"

sb_run -- /bin/sh -c '
	echo "pid=$$"
	echo "init=$(cat /proc/1/comm)"
	pids=""
	for d in /proc/[0-9]*; do pids="$pids ${d#/proc/}"; done
	echo "pids=$pids"
	seen=no
	host_mark=$(cat /workspace/host-mark)
	[ -n "$host_mark" ] || seen="unknown: no /workspace/host-mark"
	for d in /proc/[0-9]*; do
		case "$(tr "\0" " " 2>/dev/null < $d/cmdline)" in *"${host_mark:-?}"*) seen=yes ;; esac
	done
	echo "host_process_seen=$seen"
	echo "hostname=$(cat /proc/sys/kernel/hostname)"
	echo "ifaces=$(awk -F: "NR > 2 { gsub(/ /, \"\", \$1); printf \"%s \", \$1 }" /proc/net/dev)"
	echo "uid=$(id -u)"
	grep -E "^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):" /proc/self/status |
		tr -d "\t" | tr ":" "="
' "$IT_MARK"
assert_eq 0 "$AL_RC" "a simple command exits 0"
out=$AL_OUT
get()
{
	sed -n "s/^$1=//p" <<<"$out" | head -n 1
}
assert_eq 2 "$(get pid)" "the command is pid 2"
assert_eq airlock-init "$(get init)" "pid 1 is airlock's init"
assert_eq " 1 2" "$(get pids)" "/proc lists only pid 1 and pid 2"
assert_eq no "$(get host_process_seen)" "a host process is invisible in the sandbox"
assert_eq airlock "$(get hostname)" "the hostname is airlock"
assert_eq "lo " "$(get ifaces)" "only the loopback interface is visible"
assert_eq 0 "$(get uid)" "runs as uid 0 when airlock runs as root"
for cap in CapInh CapPrm CapEff CapBnd CapAmb; do
	assert_eq 0000000000000000 "$(get $cap)" "$cap is empty: all capabilities dropped"
done
assert_eq 1 "$(get NoNewPrivs)" "no_new_privs is set"
assert_eq 2 "$(get Seccomp)" "a seccomp filter is installed"

# pid 1 is a fork of airlock: its command line (host paths, -e values, the policy path) must
# not be readable from inside.
sb_run -e "LEAK_CHECK=$IT_MARK-secret" -- /bin/sh -c 'tr "\0" " " </proc/1/cmdline; echo'
assert_eq "airlock-init" "$(sed 's/ *$//' <<<"$AL_OUT")" \
	"pid 1's command line is airlock-init, not airlock's own"
assert_not_contains "$AL_OUT" "$IT_MARK-secret" "airlock's arguments do not show in the sandbox"

sb_run -- ps -e -o pid=,comm=
assert_eq "1:airlock-init 2:ps " "$(awk '{ printf "%s:%s ", $1, $2 }' <<<"$AL_OUT")" \
	"ps shows only the sandbox's processes"

# Nothing can leave: there is no route anywhere. Tried only when the namespace has nothing but
# lo, so that even a broken sandbox cannot send a packet off this machine (192.0.2.1 is
# TEST-NET-1 anyway).
sb_sh '
	ifaces=$(awk -F: "NR > 2 { gsub(/ /, \"\", \$1); printf \"%s \", \$1 }" /proc/net/dev)
	[ "$ifaces" = "lo " ] || { echo "not tried: interfaces $ifaces"; exit 0; }
	if timeout 2 bash -c "exec 3<>/dev/tcp/192.0.2.1/80" 2>/dev/null; then
		echo connected
	else
		echo refused
	fi'
assert_eq refused "$AL_OUT" "a TCP connection to 192.0.2.1:80 fails inside the sandbox"

# lo is up: the sandbox's own servers and clients on 127.0.0.1 work.
sb_sh 'python3 -c "
import socket
s = socket.socket(); s.bind((\"127.0.0.1\", 0)); s.listen()
c = socket.create_connection(s.getsockname()); a, _ = s.accept(); c.sendall(b\"ping\")
print(a.recv(4).decode())"'
assert_eq ping "$AL_OUT" "loopback works inside the sandbox"

kill "$host_sleep" 2>/dev/null
wait "$host_sleep" 2>/dev/null
it_finish
