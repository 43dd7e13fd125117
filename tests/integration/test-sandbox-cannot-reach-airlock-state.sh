#!/usr/bin/env bash
# airlock's own state is out of every sandbox's reach (issue 14, item 3). A user's sessions keep
# their control sockets under ~/.local/state/airlock/sessions: a sandbox given the home folder
# read-only could connect there (connect() works through a read-only bind, and SO_PEERCRED sees
# the same uid) and run commands in the user's other sessions. So:
#  a) no bind, read-only or not, may be, lie in or contain a state folder of airlock's (sessions,
#     vault, broker socket folders, the cache, exec's scratch folder): refused at launch;
#  b) the session supervisor and the broker daemon refuse a peer that is not in their own pid
#     namespace (a sandboxed process that got hold of a socket anyway), and audit it; host-side
#     clients keep working.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

export PYTHONPATH=$IT_SOURCE_ROOT/tests/integration/helpers
nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
if ! command -v setpriv >/dev/null || ! command -v unshare >/dev/null; then
	it_skip "setpriv and unshare (util-linux) are needed"
fi
max_userns=$(cat /proc/sys/user/max_user_namespaces 2>/dev/null || echo 0)
if [ "$max_userns" -eq 0 ] || ! "${nobody[@]}" unshare -U true 2>/dev/null; then
	it_skip "the kernel does not let an unprivileged user create a user namespace"
fi

# uid 65534 with a home folder of its own under the test's folder.
home=$IT_TMP/home
bin=$IT_TMP/bin
mkdir -p "$home/project" "$bin"
install -m 755 "$AIRLOCK" "$bin/airlock"
chown -R 65534:65534 "$home"
nb_env=(env -i "HOME=$home" PATH=/usr/bin:/bin "TMPDIR=$IT_TMP/nbtmp" "AIRLOCK_IT_RUN=$AIRLOCK_IT_RUN")
mkdir -m 1777 "$IT_TMP/nbtmp"
policy()
{
	write_policy "$1" && chmod 644 "$1"
}
policy "$IT_TMP/plain.json" <<EOF2
{"workspace": {"root": "$home/project"}, "resources": {"timeout": "60s", "memory": "max", "pids": "max"}}
EOF2
# nb ARGS: `airlock ARGS` as uid 65534.
nb()
{
	(cd / && "$ITRUN" -t "$IT_WATCHDOG" -- "${nobody[@]}" "${nb_env[@]}" "$bin/airlock" "$@") \
		>"$IT_TMP/al.out" 2>"$IT_TMP/al.err"
	AL_RC=$?
	AL_OUT=$(cat "$IT_TMP/al.out")
	AL_ERR=$(cat "$IT_TMP/al.err")
}

nb session start -p "$IT_TMP/plain.json" --owner 0
assert_eq 0 "$AL_RC" "uid 65534 starts a session" || it_log "$AL_ERR"
NB_ID=$AL_OUT
sessions=$home/.local/state/airlock/sessions
assert_true "its control socket is in the user's state folder" test -S "$sessions/$NB_ID/control"

# a) A second sandbox of the same user with a read-only bind that would reach the socket.
mount_policy()
{
	policy "$IT_TMP/mount.json" <<EOF2
{"workspace": {"root": "$home/project"}, "resources": {"timeout": "60s", "memory": "max", "pids": "max"},
 "mounts": [{"source": "$1", "target": "/mnt/x", "mode": "ro"}]}
EOF2
	it_admit "$IT_TMP/mount.json" # a host folder: tier 3, admitted, so that the bind check speaks
}
for src in "$home" "$home/.local" "$home/.local/state" "$sessions" "$sessions/$NB_ID"; do
	mount_policy "$src"
	rm -f "$home/project/reached"
	nb run -p "$IT_TMP/mount.json" --admitted "$IT_TMP/admitted" -- /usr/bin/python3 -c '
import os, socket
for d, _, files in os.walk("/mnt/x"):
    if "control" in files:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.connect(d + "/control")
        open("/workspace/reached", "w").write(d)'
	assert_eq 125 "$AL_RC" "a read-only bind of $src (holding a session's socket) is refused"
	assert_one_error_line "$AL_ERR" "... with one line naming it"
	assert_contains "$AL_ERR" "airlock's own state" "... saying it is airlock's state"
	assert_false "... and no sandbox reached the socket" test -e "$home/project/reached"
done
# The vault's folder and exec's scratch folder, likewise; a folder of the user's own is fine.
mkdir -p "$home/.local/share/airlock" "$IT_TMP/nbtmp/airlock-exec-65534"
chown -R 65534:65534 "$home/.local/share" "$IT_TMP/nbtmp/airlock-exec-65534"
for src in "$home/.local/share/airlock" "$home/.local/share" "$IT_TMP/nbtmp"; do
	mount_policy "$src"
	nb run -p "$IT_TMP/mount.json" --admitted "$IT_TMP/admitted" -- /bin/true
	assert_eq 125 "$AL_RC" "a read-only bind of $src (airlock's state) is refused"
done
mkdir -p "$home/docs"
chown 65534:65534 "$home/docs"
mount_policy "$home/docs"
nb run -p "$IT_TMP/mount.json" --admitted "$IT_TMP/admitted" -- /bin/true
assert_eq 0 "$AL_RC" "a read-only bind of another folder of the home still works" || it_log "$AL_ERR"
# As root: the cache and the state folders of root's sessions, whatever the bind.
write_policy "$IT_TMP/root-mount.json" <<EOF2
{"workspace": {"root": "$WS"}, "mounts": [{"source": "/var/cache", "target": "/mnt/x", "mode": "ro"}]}
EOF2
it_admit "$IT_TMP/root-mount.json"
al_run run -p "$IT_TMP/root-mount.json" --admitted "$IT_TMP/admitted" -- /bin/true
assert_eq 125 "$AL_RC" "a read-only bind of /var/cache (holding /var/cache/airlock) is refused"
nb session stop "$NB_ID"

# b) Peers in another pid namespace: a session's supervisor refuses them.
al_run session start -p "$IT_TMP/plain.json" --owner 0
assert_eq 0 "$AL_RC" "root starts a session"
ID=$AL_OUT
out=$("$ITRUN" -t 60 -- unshare -p -f --mount-proc "$AIRLOCK" session exec "$ID" -- /bin/echo reached 2>&1)
rc=$?
assert_ne 0 "$rc" "session exec from another pid namespace fails"
assert_not_contains "$out" "reached" "... and its command never runs"
al_run session exec "$ID" -- /bin/echo reached
assert_eq "0 reached" "$AL_RC $AL_OUT" "session exec from the host still works"
al_run session stop "$ID"

# ... and so does the broker daemon, auditing it.
sock=$IT_TMP/$IT_MARK.sock
audit=$IT_TMP/broker-audit.jsonl
"$AIRLOCK" broker --no-vault --socket "$sock" --audit "$audit" >"$IT_TMP/broker.log" 2>&1 &
broker_pid=$!
wait_for 10 "$AIRLOCK" broker status --socket "$sock" >/dev/null 2>&1
client='
import socket, sys
from broker_proto import call, connect, read_frame
s = connect(sys.argv[1])
s.settimeout(1.0)
try:
    r, _ = read_frame(s)  # a rejected peer is answered at once, unasked
    print("refused: " + r["error"])
    sys.exit(0)
except socket.timeout:
    pass
s.settimeout(10.0)
r, _ = call(s, "health")
print("ok" if r["ok"] else "refused: " + r["error"])'
out=$("$ITRUN" -t 60 -- unshare -p -f --mount-proc python3 -c "$client" "$sock" 2>&1)
assert_contains "$out" "refused" "a broker client in another pid namespace is refused"
assert_contains "$out" "pid namespace" "... told why"
out=$(python3 -c "$client" "$sock" 2>&1)
assert_eq ok "$out" "a broker client on the host is served"
kill -TERM "$broker_pid"
wait "$broker_pid"
assert_contains "$(grep '"kind":"violation"' "$audit" 2>/dev/null)" "pid namespace" \
	"the refused peer is audited"
it_finish
