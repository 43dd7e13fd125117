#!/usr/bin/env bash
# The capsule profile linux-ns-v1 (docs/SECURITY.md, "The linux-ns-v1 profile"): each contract
# refuses a policy that breaks it (one line, exit 125, naming the field and the contract), from
# the file and from the run's own flags; `policy check --profile` reports every contract line by
# line; capabilities lists the profile; and a conforming policy run by root is enforced, as seen
# from inside: its own user, mount, pid and net namespaces (root mapped to an unprivileged host
# range), its limits in its cgroup files, a filter of the restricted level, no route but the
# proxy's; each violation names the contract it touched, in --json and in the audit.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

PY=/usr/bin/python3.11
[ -x "$PY" ] || it_skip "needs $PY"
"$AIRLOCK" capabilities --json >"$IT_TMP/caps.json"
assert_eq '["linux-ns-v1"]' "$(json_get "$IT_TMP/caps.json" 'd["profiles"]')" \
	"capabilities lists linux-ns-v1 as enforceable here"

# policy PARTS...: a conforming policy with the named parts replaced (seccomp=..., resources=...).
policy()
{
	local seccomp='"restricted"' executables="[\"$PY\", \"/usr/bin/sh\", \"/usr/bin/dash\"]"
	local resources='{"cpu": "0.5", "memory": "256Mi", "pids": 32, "io_weight": 200}'
	local network='{"default": "deny"}' mounts='[]' workspace="{\"root\": \"$WS\"}" extra=''
	local kv
	for kv in "$@"; do
		local "${kv%%=*}=${kv#*=}"
	done
	printf '{"profile": "linux-ns-v1", %s"seccomp": %s, "workspace": %s, "executables": %s, "resources": %s, "network": %s, "mounts": %s}\n' \
		"$extra" "$seccomp" "$workspace" "$executables" "$resources" "$network" "$mounts"
}

rules()
{
	local i sep=''
	printf '{"default": "deny", "rules": ['
	for ((i = 0; i < $1; i++)); do
		printf '%s{"destination": "h%d.allowed.test", "action": "allow"}' "$sep" "$i"
		sep=', '
	done
	printf ']}'
}

executables()
{
	local i sep=''
	printf '['
	for ((i = 0; i < $1; i++)); do
		printf '%s"/usr/bin/p%d"' "$sep" "$i"
		sep=', '
	done
	printf ']'
}

# refused NAME MESSAGE [RUN FLAGS...] < policy: the run is refused before anything runs.
refused()
{
	local name=$1 msg=$2
	shift 2
	write_policy "$IT_TMP/$name.json"
	al_run run -p "$IT_TMP/$name.json" "$@" -- /usr/bin/sh -c "touch /workspace/ran-$name"
	assert_eq 125 "$AL_RC" "$name: refused with 125"
	assert_one_error_line "$AL_ERR" "$name: one error line"
	assert_contains "$AL_ERR" "$msg" "$name: the line names the field and the contract"
	assert_false "$name: nothing ran" test -e "$WS/ran-$name"
}

refused seccomp 'seccomp: linux-ns-v1 needs the "restricted" or "strict" level' \
	< <(policy seccomp='"baseline"')
refused memory 'resources.memory: linux-ns-v1 needs a memory limit' \
	< <(policy resources='{"cpu": "1", "memory": "max", "pids": 32, "io_weight": 100}')
refused pids 'resources.pids: linux-ns-v1 needs a pids limit' \
	< <(policy resources='{"cpu": "1", "memory": "1Gi", "pids": "max", "io_weight": 100}')
refused cpu 'resources.cpu: linux-ns-v1 needs a cpu limit' \
	< <(policy resources='{"memory": "1Gi", "pids": 32, "io_weight": 100}')
refused io 'resources.io_weight: linux-ns-v1 needs an io weight in 1..10000' \
	< <(policy resources='{"cpu": "1", "memory": "1Gi", "pids": 32}')
refused egress-default 'network.default: linux-ns-v1 needs egress denied by default' \
	< <(policy network='{"default": "allow"}')
refused egress-routes 'network.rules: linux-ns-v1 allows at most 256 routes (this policy has 300)' \
	< <(policy network="$(rules 300)")
# Rules are judged together: two /8s (or 256 of them, all of IPv4) are a tier 3 policy, as a /7 is.
refused egress-together 'network.rules: rules allowing together a wide part of the internet' \
	< <(policy network='{"default": "deny", "rules": [{"destination": "10.0.0.0/8", "action": "allow"}, {"destination": "11.0.0.0/8", "action": "allow"}]}')
refused executables-70 'executables: linux-ns-v1 allows at most 64 executables (this policy has 70)' \
	< <(policy executables="$(executables 70)")
refused executables-none 'executables: linux-ns-v1 needs an allow list' \
	< <(policy executables='[]')
# Each entry is one regular executable file: a directory would allow every program below it.
refused executables-dir 'executables[0]: linux-ns-v1 needs a regular executable file, not the directory "/usr"' \
	< <(policy executables='["/usr"]')
refused executables-glob 'executables[1]: linux-ns-v1 needs a regular executable file: "/usr/bin/*": No such file' \
	< <(policy executables='["/usr/bin/sh", "/usr/bin/*"]')
policy executables='["/usr/bin/sh", "/usr/bin"]' | sed 's/"profile": "linux-ns-v1", //' >"$IT_TMP/dir.json"
al_run policy check --profile linux-ns-v1 "$IT_TMP/dir.json"
assert_eq 1 "$AL_RC" "policy check --profile fails a directory in executables"
assert_contains "$AL_OUT" 'linux-ns-v1 executable: executables[1]: linux-ns-v1 needs a regular executable file, not the directory "/usr/bin"' \
	"the executable line names the directory"
# The read-only root's system folders are covered by no mount nor the workspace.
refused rootfs-etc 'workspace.mount: linux-ns-v1 needs a read-only root, and "/etc" would cover the system folder /etc' \
	< <(policy workspace="{\"root\": \"$WS\", \"mount\": \"/etc\"}")
refused rootfs-run 'mounts[0].target: linux-ns-v1 needs a read-only root, and "/run/x" would cover the system folder /run' \
	< <(policy mounts='[{"source": "/usr/share", "target": "/run/x", "mode": "ro"}]')
refused tmp 'mounts[0].target: linux-ns-v1 needs /tmp a tmpfs of its own' \
	< <(policy mounts='[{"source": "/usr/share", "target": "/tmp", "mode": "ro"}]')
refused workspace-relative 'workspace.root: linux-ns-v1 needs an absolute path' \
	< <(policy workspace='{"root": "."}')
refused workspace-system 'workspace.root: linux-ns-v1 refuses the system folder "/home"' \
	< <(policy workspace='{"root": "/home"}')
refused workspace-root-home 'workspace.root: linux-ns-v1 refuses "/root/.config" (root'"'"'s home' \
	< <(policy workspace='{"root": "/root/.config"}')
refused workspace-var-tmp 'workspace.root: linux-ns-v1 refuses "/var/tmp"' \
	< <(policy workspace='{"root": "/var/tmp"}')
# A home folder holds its dot-entries (~/.ssh/authorized_keys): refused as they are.
refused workspace-home 'workspace.root: linux-ns-v1 refuses "/home/airlock-it-user" (root'"'"'s home, a home folder or its dot-entries' \
	< <(policy workspace='{"root": "/home/airlock-it-user"}')
refused profile-unknown 'profile: "linux-ns-v2" is not a profile airlock enforces' \
	< <(policy | sed 's/linux-ns-v1/linux-ns-v2/')
# The run's own flags are held to the contracts too.
policy >"$IT_TMP/good.json"
refused flag-seccomp 'seccomp: linux-ns-v1 needs the "restricted" or "strict" level' \
	--seccomp baseline <"$IT_TMP/good.json"
refused flag-memory 'resources.memory: linux-ns-v1 needs a memory limit' -m max <"$IT_TMP/good.json"
# A limit at or above what the host has is no limit: memory above MemTotal (the numeric "max"),
# pids at pid_max or more, cpu above the online CPUs; from the file and from -m.
refused memory-numeric-max 'resources.memory: linux-ns-v1 needs a memory limit of at most the host'"'"'s memory' \
	< <(policy resources='{"cpu": "1", "memory": "18446744073709551615", "pids": 32, "io_weight": 100}')
refused flag-memory-numeric 'resources.memory: linux-ns-v1 needs a memory limit of at most the host'"'"'s memory' \
	-m 9223372036854775807 <"$IT_TMP/good.json"
refused pids-pid-max-limit 'resources.pids: linux-ns-v1 needs a pids limit below the host'"'"'s pid_max' \
	< <(policy resources='{"cpu": "1", "memory": "1Gi", "pids": 4194304, "io_weight": 100}')
refused cpu-1000 "resources.cpu: linux-ns-v1 needs a cpu limit of at most the host's $(nproc) online CPUs, not 1000" \
	< <(policy resources='{"cpu": "1000", "memory": "1Gi", "pids": 32, "io_weight": 100}')
al_run session start -p "$IT_TMP/good.json" --owner 0 -m 9223372036854775807
[ "$AL_RC" = 0 ] && "$AIRLOCK" session stop "$(head -1 <<<"$AL_OUT")" >/dev/null 2>&1
assert_eq 125 "$AL_RC" "session start -m 2^63-1 is refused"
assert_contains "$AL_ERR" "resources.memory: linux-ns-v1 needs a memory limit of at most" \
	"session start names the field and the contract"
# Tier 3 and up: only the exact admitted hash runs, not the admitted file changed by a flag.
policy extra='"tier": 3, ' >"$IT_TMP/tier3.json"
it_admit "$IT_TMP/tier3.json"
refused tier3-changed 'is not admitted' --admitted "$IT_TMP/admitted" -a allowed.test \
	<"$IT_TMP/tier3.json"
al_run run -p "$IT_TMP/tier3.json" --admitted "$IT_TMP/admitted" -- /usr/bin/sh -c 'echo ran'
assert_eq "0 ran" "$AL_RC $AL_OUT" "the admitted tier 3 policy itself runs"

# policy check: every policy's bounds (1,024 entries) pass without the profile; with it, each
# contract is one line.
policy network="$(rules 300)" executables="$(executables 70)" |
	sed 's/"profile": "linux-ns-v1", //' >"$IT_TMP/wide.json"
al_run policy check "$IT_TMP/wide.json"
assert_eq 0 "$AL_RC" "300 routes and 70 executables pass the general bounds"
al_run policy check --profile linux-ns-v1 "$IT_TMP/wide.json"
assert_eq 1 "$AL_RC" "policy check --profile fails a policy that breaks a contract"
assert_eq 13 "$(grep -c '^linux-ns-v1 ' <<<"$AL_OUT")" "one line per contract"
assert_contains "$AL_OUT" "linux-ns-v1 egress: network.rules: linux-ns-v1 allows at most 256 routes" \
	"the egress line says why"
assert_contains "$AL_OUT" "linux-ns-v1 executable: executables: linux-ns-v1 allows at most 64" \
	"the executable line says why"
assert_contains "$AL_OUT" "linux-ns-v1 seccomp: ok" "a contract met says ok"
assert_one_error_line "$AL_ERR" "then one error line"
al_run policy check "$IT_TMP/good.json"
assert_eq 0 "$AL_RC" "the field alone makes check report the contracts: a conforming policy passes"
assert_eq 13 "$(grep -c '^linux-ns-v1 .*: ok$' <<<"$AL_OUT")" "each contract ok"
assert_not_contains "$AL_OUT" "note:" "a policy with the field gets no note"
sed 's/"profile": "linux-ns-v1", //' "$IT_TMP/good.json" >"$IT_TMP/good-unmarked.json"
al_run policy check --profile linux-ns-v1 "$IT_TMP/good-unmarked.json"
assert_eq 0 "$AL_RC" "a conforming policy without the field conforms"
assert_contains "$AL_OUT" 'note: the file has no "profile": "linux-ns-v1": airlock run holds it to the profile only once it does' \
	"... and check says that the run will not hold it to the profile (red team 2)"

# ---- enforcement, seen from inside ----
echo host >"$WS/host-file" && chown 1000:1000 "$WS/host-file"
cat >"$WS/inside.py" <<'EOF'
import ctypes, errno, os, socket, sys, time
libc = ctypes.CDLL(None, use_errno=True)
for ns in ("user", "mnt", "pid", "net"):
    print("ns_%s=%s" % (ns, os.readlink("/proc/self/ns/" + ns)))
print("uid_map=%s" % " ".join(open("/proc/self/uid_map").read().split()))
print("uid=%d" % os.getuid())
print("seccomp=%s" % [l.split()[1] for l in open("/proc/self/status") if l.startswith("Seccomp:")][0])
r = libc.syscall(250, 0, 0, 0, 0, 0)  # keyctl: blocked from the restricted level on
print("keyctl=%d:%s" % (r, errno.errorcode.get(ctypes.get_errno(), "?")))
r = libc.unshare(0x10000000)  # CLONE_NEWUSER
print("unshare=%d" % r)
routes = [l.split() for l in open("/proc/net/route").readlines()[1:]]
print("routes=%s" % ",".join("%s/%s/%s" % (r[0], r[1], r[2]) for r in routes))
print("route6=%s" % len([l for l in open("/proc/net/ipv6_route") if not l.split()[-1] == "lo"]))
try:
    open("/workspace/denied").read()
except OSError as e:
    print("denied=%s" % errno.errorcode[e.errno])
s = socket.socket()
s.settimeout(5)
try:
    s.connect(("192.0.2.1", 443))
    s.send(b"x")
    print("connect=%r" % s.recv(10))
except OSError as e:
    print("connect=%s" % e)
print("host_file_owner=%d" % os.stat("/workspace/host-file").st_uid)
open("/workspace/written", "w").write("x")
open("/workspace/ready", "w").write("x")
time.sleep(float(sys.argv[1]))
EOF
policy network='{"default": "deny", "rules": [{"destination": "allowed.test", "port": 443, "action": "allow"}]}' |
	sed 's|"workspace": {|"workspace": {"deny": ["denied"], |' >"$IT_TMP/run.json"
echo x >"$WS/denied"
"$ITRUN" -t "$IT_WATCHDOG" -- "$AIRLOCK" run --json --audit "$IT_TMP/audit.jsonl" \
	-p "$IT_TMP/run.json" -- "$PY" /workspace/inside.py 3 >"$IT_TMP/run.out" 2>"$IT_TMP/run.err" &
runner=$!
wait_for 20 test -e "$WS/ready"
apid=$(pgrep -P "$runner" -x airlock | head -n 1)
cg_mem=$(find /sys/fs/cgroup/memory -type d -name "${apid:-none}-*" 2>/dev/null | head -n 1)
cg_pids=$(find /sys/fs/cgroup/pids -type d -name "${apid:-none}-*" 2>/dev/null | head -n 1)
cg_cpu=$(find /sys/fs/cgroup/cpu,cpuacct /sys/fs/cgroup/cpu -type d -name "${apid:-none}-*" 2>/dev/null | head -n 1)
cg_blkio=$(find /sys/fs/cgroup/blkio -type d -name "${apid:-none}-*" 2>/dev/null | head -n 1)
assert_eq 268435456 "$(cat "$cg_mem/memory.limit_in_bytes" 2>&1)" "the memory limit is in the cgroup"
assert_eq 32 "$(cat "$cg_pids/pids.max" 2>&1)" "the pids limit is in the cgroup"
assert_eq "50000 100000" "$(cat "$cg_cpu/cpu.cfs_quota_us" "$cg_cpu/cpu.cfs_period_us" 2>&1 | xargs)" \
	"the cpu quota is in the cgroup"
weight=$(cat "$cg_blkio/blkio.bfq.weight" "$cg_blkio/blkio.weight" 2>/dev/null | head -n 1)
assert_match '^[0-9]+$' "$weight" "the io weight is in the cgroup ($weight)"
wait "$runner"
rc=$?
assert_eq 0 "$rc" "the conforming policy runs as root: $(cat "$IT_TMP/run.err")"
out=$(json_get "$IT_TMP/run.out" 'd["stdout"]')
get()
{
	sed -n "s/^$1=//p" <<<"$out" | head -n 1
}
for ns in user mnt pid net; do
	assert_ne "$(readlink /proc/self/ns/$ns)" "$(get ns_$ns)" "the $ns namespace is the sandbox's own"
done
assert_match '^0 [1-9][0-9]* 65536$' "$(get uid_map)" "root inside is an unprivileged host range"
assert_ne "0 0 65536" "$(get uid_map)" "not host root"
assert_eq 0 "$(get uid)" "the command is root of its own user namespace"
assert_eq 2 "$(get seccomp)" "a seccomp filter is on"
assert_eq "-1:EPERM" "$(get keyctl)" "the filter blocks keyctl (restricted level)"
assert_eq -1 "$(get unshare)" "unshare is refused"
assert_match '^eth0/00000000/[0-9A-F]{8},eth0/[0-9A-F]{8}/00000000$' "$(get routes)" \
	"only the route to the proxy (and its link)"
assert_eq 0 "$(get route6)" "no IPv6 route out"
assert_eq ENOENT "$(get denied)" "a denied workspace file is hidden"
assert_eq 1000 "$(get host_file_owner)" "the workspace shows host owners as they are"
assert_eq "0:0" "$(stat -c %u:%g "$WS/written")" \
	"a file written inside lands as root's, as in any run by root"
viol=$(json_get "$IT_TMP/run.out" 'sorted(set(v["contract"] for v in d["violations"]))')
assert_eq '["egress", "namespace", "seccomp", "workspace"]' "$viol" \
	"each violation names its contract in --json"
assert_eq namespace "$(json_get "$IT_TMP/run.out" '[v["contract"] for v in d["violations"] if v["detail"] == "unshare"][0]')" \
	"unshare touched the namespace contract"
audit_contracts=$("$IT_PY" -c '
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
print(",".join(e.get("contract", "-") for e in ev if e["kind"] == "violation" and e.get("violation") == "seccomp"))
print(",".join(sorted([e for e in ev if e["kind"] == "exit"][0]["contracts"])))
' "$IT_TMP/audit.jsonl")
assert_eq "seccomp,namespace" "$(head -n 1 <<<"$audit_contracts")" \
	"the audit's violation events name their contract"
assert_eq "egress,namespace,seccomp,workspace" "$(tail -n 1 <<<"$audit_contracts")" \
	"the exit event lists the contracts touched"

# A command the allow list refuses: the executable contract.
al_run run --json -p "$IT_TMP/good.json" -- /usr/bin/id
echo "$AL_OUT" >"$IT_TMP/exec.json"
assert_eq 126 "$AL_RC" "a command outside the allow list is refused"
assert_eq '["executable"]' "$(json_get "$IT_TMP/exec.json" '[v["contract"] for v in d["violations"]]')" \
	"and named as the executable contract"

it_finish
