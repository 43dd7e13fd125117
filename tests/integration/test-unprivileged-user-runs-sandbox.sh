#!/usr/bin/env bash
# airlock run by an unprivileged user (uid 65534, no groups) works through a user namespace:
# the command is pid 2 under airlock's init, the hostname is airlock, only lo is visible, it
# runs as the caller's uid, the workspace is writable, and the escape probes stay blocked.
# Uses a policy that lifts the default memory/pids limits ("max"): on a cgroup v1 host nothing is
# delegated to an unprivileged user, so limits could not be enforced, and airlock would refuse.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
if ! command -v setpriv >/dev/null; then
	it_skip "setpriv (util-linux) is missing"
fi
max_userns=$(cat /proc/sys/user/max_user_namespaces 2>/dev/null || echo 0)
clone_knob=$(cat /proc/sys/kernel/unprivileged_userns_clone 2>/dev/null || echo 1)
if [ "$max_userns" -eq 0 ] || [ "$clone_knob" != 1 ] || ! "${nobody[@]}" unshare -U true 2>/dev/null; then
	it_skip "the kernel does not let an unprivileged user create a user namespace" \
		"(max_user_namespaces=$max_userns, unprivileged_userns_clone=$clone_knob)"
fi

# Everything uid 65534 needs, in a folder it can traverse (the build folder may not be).
bin=$IT_TMP/bin
mkdir -p "$bin"
install -m 755 "$AIRLOCK" "$bin/airlock"
chown 65534:65534 "$WS"
echo hello-from-host >"$WS/hello.txt"
policy=$IT_TMP/unprivileged.json
write_policy "$policy" <<EOF2
{"workspace": {"root": "$WS"}, "resources": {"timeout": "60s", "memory": "max", "pids": "max"}}
EOF2
chmod 644 "$policy"

# nb_run ARGS: `airlock ARGS` as uid 65534, from a neutral folder.
nb_run()
{
	(cd / && "$ITRUN" -t "$IT_WATCHDOG" -- "${nobody[@]}" "$bin/airlock" "$@") \
		>"$IT_TMP/al.out" 2>"$IT_TMP/al.err"
	AL_RC=$?
	AL_OUT=$(cat "$IT_TMP/al.out")
	AL_ERR=$(cat "$IT_TMP/al.err")
}

nb_run run -p "$policy" -- /bin/sh -c '
	echo "pid=$$"
	echo "init=$(cat /proc/1/comm)"
	pids=""
	for d in /proc/[0-9]*; do pids="$pids ${d#/proc/}"; done
	echo "pids=$pids"
	echo "hostname=$(cat /proc/sys/kernel/hostname)"
	echo "ifaces=$(awk -F: "NR > 2 { gsub(/ /, \"\", \$1); printf \"%s \", \$1 }" /proc/net/dev)"
	echo "uid=$(id -u)"
	echo "hello=$(cat /workspace/hello.txt)"
	echo from-nobody > /workspace/written && echo "write=ok"
	grep -E "^(CapEff|NoNewPrivs|Seccomp):" /proc/self/status | tr -d "\t" | tr ":" "="
' "$IT_MARK"
assert_eq 0 "$AL_RC" "uid 65534 can run a sandbox"
out=$AL_OUT
get()
{
	sed -n "s/^$1=//p" <<<"$out" | head -n 1
}
assert_eq 2 "$(get pid)" "unprivileged: the command is pid 2"
assert_eq airlock-init "$(get init)" "unprivileged: pid 1 is airlock's init"
assert_eq " 1 2" "$(get pids)" "unprivileged: /proc lists only pid 1 and pid 2"
assert_eq airlock "$(get hostname)" "unprivileged: the hostname is airlock"
assert_eq "lo " "$(get ifaces)" "unprivileged: only lo is visible"
assert_eq 65534 "$(get uid)" "unprivileged: the command runs as the caller's uid"
assert_eq hello-from-host "$(get hello)" "unprivileged: the workspace is readable"
assert_eq ok "$(get write)" "unprivileged: the workspace is writable"
assert_eq 65534 "$(stat -c %u "$WS/written" 2>/dev/null)" "unprivileged: the written file belongs to the caller on the host"
assert_eq 0000000000000000 "$(get CapEff)" "unprivileged: no effective capabilities"
assert_eq 1 "$(get NoNewPrivs)" "unprivileged: no_new_privs is set"
assert_eq 2 "$(get Seccomp)" "unprivileged: a seccomp filter is installed"

for probe in mount unshare-user ptrace-init; do
	nb_run run -p "$policy" -- "$PROBE" "$probe"
	assert_match "^$probe: blocked" "$AL_OUT" "unprivileged: $probe is blocked"
done

# Without "max", the default limits cannot be enforced here: refused, naming the field.
nb_run run -w "$WS" -- /bin/true
assert_eq 125 "$AL_RC" "unprivileged: default limits that cannot be enforced are refused"
assert_match "resources\.memory: cannot be enforced" "$AL_ERR" \
	"unprivileged: the refusal names resources.memory"

nb_run run -p "$policy" -- /bin/sh -c 'exit 3' "$IT_MARK"
assert_eq 3 "$AL_RC" "unprivileged: exit 3 is reported as 3"
nb_run run -p "$policy" -T 1s -- sleep 100
assert_eq 124 "$AL_RC" "unprivileged: a timeout exits 124"

# With credentials, airlock holds real values: it is not dumpable once the sandbox runs (its
# /proc files turn root's), and the exposed value is redacted from the output.
cpolicy=$IT_TMP/unprivileged-creds.json
write_policy "$cpolicy" <<EOF2
{"workspace": {"root": "$WS"}, "resources": {"timeout": "60s", "memory": "max", "pids": "max"},
 "credentials": [{"name": "tok", "source": {"type": "env", "var": "IT_TOK"}, "expose": true,
   "injection": {"type": "env_var", "var_name": "TOK"}, "hosts": ["api.example.com"]}]}
EOF2
chmod 644 "$cpolicy"
it_admit "$cpolicy" # an exposed credential: tier 3
tok=tok-$IT_MARK-value
mkfifo -m 644 "$IT_TMP/go"
(cd / && IT_TOK=$tok "${nobody[@]}" "$bin/airlock" run --no-broker --admitted "$IT_TMP/admitted" -p "$cpolicy" -- \
	/bin/sh -c 'echo "tok=$TOK"; read -r go') <"$IT_TMP/go" >"$IT_TMP/cred.out" 2>&1 &
cred_pid=$!
exec 9>"$IT_TMP/go"
wait_for 20 grep -q "tok=" "$IT_TMP/cred.out"
al_pid=$(pgrep -u 65534 -x airlock | head -n1)
assert_eq root "$(stat -c %U "/proc/$al_pid/environ" 2>&1)" \
	"unprivileged: airlock holding credentials is not dumpable"
echo go >&9
exec 9>&-
wait "$cred_pid"
assert_eq 0 "$?" "unprivileged: a run with credentials succeeds"
assert_eq "tok=[REDACTED:tok]" "$(cat "$IT_TMP/cred.out")" "unprivileged: the exposed value is redacted"

# Egress without root: the proxy's namespaces are the sandbox's user namespace's (the egress
# suite runs as uid 65534 too: suite rootless). Nothing is sent anywhere: the sandbox only looks at
# its interfaces and its resolver.
nb_run run -p "$policy" --allow example.org -- /bin/sh -c '
	echo "ifaces=$(awk -F: "NR > 2 { gsub(/ /, \"\", \$1); printf \"%s \", \$1 }" /proc/net/dev)"
	echo "ran-$0"' "$IT_MARK"
assert_eq 0 "$AL_RC" "uid 65534 with an allow rule runs"
assert_contains "$AL_OUT" "ran-$IT_MARK" "... the command"
assert_eq "lo eth0 " "$(sed -n 's/^ifaces=//p' <<<"$AL_OUT")" "... with lo and the veth end to the proxy"

it_finish
