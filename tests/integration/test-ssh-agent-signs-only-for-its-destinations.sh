#!/usr/bin/env bash
# git over SSH end to end (issue 19 item 3): an Ed25519 key in the vault reaches the sandbox only
# as airlock's SSH agent (SSH_AUTH_SOCK=/run/airlock/ssh-agent), which signs a login only when
# OpenSSH's session-bind@openssh.com binds it to a host key the egress proxy saw in the clear
# key exchange of a connection to one of the credential's destinations.
#
# Real parts only: Debian's /usr/sbin/sshd, twice, in a network namespace of the test's own
# reached through a veth pair (a private /30): sshd A on port 22 (git.test) and sshd B on port
# 2222 (other.test), each with its own host key, both accepting the deploy key and serving a bare
# repository of the test's. Before airlock is involved, plain ssh and git from the host with the
# key file reach both (the fixture works). Then, in a sandbox whose policy binds the key to
# git.test with commit signing on: ssh-add -l lists that key only; git clone, commit, push and
# fetch work and the host sees the pushed commit; ssh to other.test:2222 is refused ("Permission
# denied (publickey)"), audited (ssh-sign, refused, with a reason) and a credential violation;
# every granted signature is audited; a commit signed with gpg.format=ssh is verified by the
# host's git verify-commit; refused too are a signature in another namespace than git's
# (ssh-keygen -Y sign -n file) and a login's signature for a session never bound (a sign request
# written by hand). With commit_signing false the commit's signature is refused (logins still
# work). No part of the private key (any line of the key file's body, the 32-byte seed raw, in
# base64 or in hex) is in the memory of any sandbox process while an SSH session that logged in
# through the agent still runs, nor in airlock's output or the audit. Nothing of the fixture is
# left: no sshd, no network namespace, no veth.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

for tool in /usr/sbin/sshd ssh ssh-keygen ssh-add git unshare nsenter ip pgrep; do
	if ! command -v "$tool" >/dev/null; then
		it_fail "$tool is missing (Debian packages openssh-server, openssh-client, git, util-linux, iproute2, procps)"
		it_finish
	fi
done
unset AIRLOCK_VAULT AIRLOCK_PASSPHRASE_FILE SSH_AUTH_SOCK
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1

# ---- the fixture: two sshd in a network namespace of the test's own ----

sd=$IT_TMP/sshd
kdir=$IT_TMP/keys
mkdir -p "$sd" "$kdir"
ssh-keygen -q -t ed25519 -N '' -C "deploy@$IT_MARK" -f "$kdir/deploy"
ssh-keygen -q -t ed25519 -N '' -C "host-a" -f "$sd/host_a"
ssh-keygen -q -t ed25519 -N '' -C "host-b" -f "$sd/host_b"
cp "$kdir/deploy.pub" "$sd/authorized_keys"
pub=$(awk '{print $1, $2}' "$kdir/deploy.pub")
fp=$(ssh-keygen -lf "$kdir/deploy.pub" | awk '{print $2}')
. "$IT_SOURCE_ROOT/tests/integration/helpers/sshd-netns.sh"

# The bare repository both serve, with a first commit made on the host.
repo=$IT_TMP/srv/repo.git
git init -q --bare -b main "$repo"
git init -q -b main "$IT_TMP/seed"
echo "a file of the host's" >"$IT_TMP/seed/README"
git -C "$IT_TMP/seed" add README
git -C "$IT_TMP/seed" -c user.name=host -c user.email=host@git.test commit -q -m "first commit"
git -C "$IT_TMP/seed" push -q "$repo" HEAD:main
first=$(git -C "$IT_TMP/seed" rev-parse HEAD)

SSHD_EXTRA="SetEnv GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1"
start_sshd a 22
start_sshd b 2222
assert_true "sshd A listens on $addr:22 in the test's network namespace" wait_for 10 listens 22
assert_true "sshd B listens on $addr:2222" wait_for 10 listens 2222

# From the host, plain ssh and git with the key file: each sshd answers with its own host key.
{
	printf '%s %s\n' "$addr" "$(cut -d' ' -f1,2 "$sd/host_a.pub")"
	printf '[%s]:2222 %s\n' "$addr" "$(cut -d' ' -f1,2 "$sd/host_b.pub")"
} >"$sd/known_hosts"
host_ssh="ssh -F /dev/null -i $kdir/deploy -o IdentitiesOnly=yes -o IdentityAgent=none"
host_ssh="$host_ssh -o BatchMode=yes -o StrictHostKeyChecking=yes"
host_ssh="$host_ssh -o UserKnownHostsFile=$sd/known_hosts -o ConnectTimeout=10"
# shellcheck disable=SC2086 # the options
assert_eq "fixture a" "$($host_ssh "root@$addr" echo fixture a 2>&1)" \
	"fixture: ssh from the host with the key file logs in to sshd A (its host key checked)"
# shellcheck disable=SC2086
assert_eq "fixture b" "$($host_ssh -p 2222 "root@$addr" echo fixture b 2>&1)" \
	"fixture: ... and to sshd B on port 2222 (another host key)"
assert_ne "$(cut -d' ' -f2 "$sd/host_a.pub")" "$(cut -d' ' -f2 "$sd/host_b.pub")" \
	"fixture: A's and B's host keys differ"
export GIT_SSH_COMMAND=$host_ssh
assert_eq "$first	refs/heads/main" "$(git ls-remote "ssh://root@$addr$repo" refs/heads/main 2>&1)" \
	"fixture: git ls-remote over SSH through A sees the repository"
assert_eq "$first	refs/heads/main" "$(git ls-remote "ssh://root@$addr:2222$repo" refs/heads/main 2>&1)" \
	"fixture: ... and through B"
git clone -q "ssh://root@$addr$repo" "$IT_TMP/host-clone" 2>"$IT_TMP/host-clone.err"
assert_eq "$first" "$(git -C "$IT_TMP/host-clone" rev-parse HEAD 2>&1)" \
	"fixture: git clone over SSH from the host works" "$(cat "$IT_TMP/host-clone.err")"
unset GIT_SSH_COMMAND
accepted() { grep -c "Accepted publickey for root .* $fp" "$sd/$1.sshd-$IT_MARK.log"; }
a_before=$(accepted a)
b_before=$(accepted b)
assert_eq 2 "$b_before" "fixture: sshd B logged the key's two logins (its log is read below)"

# ---- what the sandbox must never hold: the private key, in any form ----

seed_hex=$("$IT_PY" - "$kdir/deploy" <<'EOF'
import base64, struct, sys
lines = open(sys.argv[1]).read().split("\n")
blob = base64.b64decode("".join(l for l in lines if l and not l.startswith("-----")))
assert blob.startswith(b"openssh-key-v1\0")
def take(b, o):
    (n,) = struct.unpack(">I", b[o:o + 4])
    return b[o + 4:o + 4 + n], o + 4 + n
o = 15
for _ in range(3):  # cipher, KDF, KDF options
    _, o = take(blob, o)
o += 4  # the number of keys
_, o = take(blob, o)  # the public key
priv, _ = take(blob, o)
kt, o = take(priv, 8)  # after the two check ints
pk, o = take(priv, o)
sk, o = take(priv, o)
assert kt == b"ssh-ed25519" and len(sk) == 64 and sk[32:] == pk
print(sk[:32].hex())
EOF
)
assert_match '^[0-9a-f]{64}$' "$seed_hex" "the key's 32-byte seed is read from its file"
seed_b64=$("$IT_PY" -c 'import base64, sys; print(base64.b64encode(bytes.fromhex(sys.argv[1])).decode())' "$seed_hex")
# The key file's body but its first line (the same "openssh-key-v1, none, ..." in every such file).
mapfile -t key_lines < <(sed '1,2d;$d' "$kdir/deploy")
needles=("seed_b64=$seed_b64" "seed_hex=$seed_hex")
for i in "${!key_lines[@]}"; do
	needles+=("key_line$((i + 2))=${key_lines[i]}")
done
# no_key_in FILE...: none of the needles is in the files
no_key_in()
{
	local what=$1 nd hits=""
	shift
	for nd in "${needles[@]}"; do
		grep -qF -- "${nd#*=}" "$@" && hits="$hits ${nd%%=*}"
	done
	if [ -z "$hits" ]; then
		it_pass "$what"
	else
		it_fail "$what" "found:$hits"
	fi
}
# scan_raw SEED_HEX PID: occurrences of the raw seed in the process's readable memory
# (helpers/mem-scan.py takes text needles only); PID "self" scans the scanner, which holds it.
scan_raw()
{
	"$IT_PY" - "$@" <<'EOF'
import os, re, sys
needle, n = bytes.fromhex(sys.argv[1]), 0
pid = os.getpid() if sys.argv[2] == "self" else int(sys.argv[2])
with open("/proc/%d/maps" % pid) as maps, open("/proc/%d/mem" % pid, "rb", 0) as mem:
    for line in maps:
        m = re.match(r"([0-9a-f]+)-([0-9a-f]+) (\S+)", line)
        if "r" not in m.group(3) or "[vvar]" in line or "[vsyscall]" in line:
            continue
        try:
            mem.seek(int(m.group(1), 16))
            n += mem.read(int(m.group(2), 16) - int(m.group(1), 16)).count(needle)
        except OSError:
            pass
print(n)
EOF
}

assert_match '^[1-9]' "$(scan_raw "$seed_hex" self)" \
	"(the raw scan finds the seed in a process that holds it: its own)"

# ---- airlock: the key into the vault, the policies ----

vkey=$IT_TMP/vault.key
head -c 32 /dev/urandom >"$vkey"
chmod 600 "$vkey"
V=$IT_TMP/vault
al_run secret --vault "$V" --key-file "$vkey" put --ssh-key deploy <"$kdir/deploy"
assert_eq "deploy ssh-ed25519 $fp" "$AL_OUT" "the deploy key goes into the vault"
cp "$IT_TMP/al.out" "$IT_TMP/put.out"
cp "$IT_TMP/al.err" "$IT_TMP/put.err"

policy_with()
{
	cat <<EOF
{"workspace": {"root": "$WS"},
 "network": {"default": "deny",
  "rules": [{"destination": "git.test", "port": 22, "action": "allow"},
            {"destination": "other.test", "port": 2222, "action": "allow"},
            {"destination": "$addr/32", "port": 22, "action": "allow"},
            {"destination": "$addr/32", "port": 2222, "action": "allow"}],
  "resolve": {"git.test": "$addr", "other.test": "$addr"}},
 "credentials": [
  {"name": "deploy", "source": {"type": "vault", "key": "deploy"},
   "injection": {"type": "ssh_agent"},
   "ssh": {"destinations": ["git.test"], "commit_signing": $1}}]}
EOF
}
policy_with true | write_policy "$IT_TMP/policy.json"
policy_with false | write_policy "$IT_TMP/policy-nosign.json"
it_admit "$IT_TMP/policy.json" "$IT_TMP/policy-nosign.json"

# The sandbox's side: KEY=VALUE lines (a command's output on one line, "|" for its newlines).
cat >"$WS/ssh-git.sh" <<'EOF'
# $1 the test's marker, $2 full|nosign, $3 the repository's path, $4 the public key,
# $5 the duration of the sleep the host ends after its memory scan, $6 a token the scan must see
mode=$2 repo=$3 pub=$4 hold=$5
export AIRLOCK_IT_SEEN="$6"
SSH="ssh -o StrictHostKeyChecking=accept-new -o UserKnownHostsFile=/tmp/kh -o BatchMode=yes -o ConnectTimeout=20"
export GIT_SSH_COMMAND="$SSH"
export GIT_AUTHOR_NAME=sandbox GIT_AUTHOR_EMAIL=sandbox@git.test
export GIT_COMMITTER_NAME=sandbox GIT_COMMITTER_EMAIL=sandbox@git.test
r() { printf '%s=%s\n' "$1" "$2"; }
step()
{
	name=$1
	shift
	out=$("$@" 2>&1)
	rc=$?
	r "$name" "$rc"
	r "${name}_out" "$(printf '%s' "$out" | tr '\n' '|')"
}
signed_commit() { git -c gpg.format=ssh -c user.signingkey="key::$pub" commit -S -q --allow-empty -m "$1"; }

r sock "${SSH_AUTH_SOCK:-}"
step list ssh-add -l
step keys ssh-add -L
step clone git clone -q "ssh://root@git.test$repo" "/workspace/clone-$mode"
cd "/workspace/clone-$mode" || exit 1
if [ "$mode" = nosign ]; then
	r head "$(git rev-parse HEAD)"
	step sign signed_commit "signing refused"
	r head_after "$(git rev-parse HEAD)"
	exit 0
fi
step clone2 git clone -q "ssh://root@git.test$repo" /workspace/clone2
echo "written in the sandbox" >sandbox.txt
git add sandbox.txt
step commit git commit -q -m "from the sandbox"
step push git push -q origin HEAD:main
r pushed "$(git rev-parse HEAD)"
step fetch git -C /workspace/clone2 fetch -q origin
r fetched "$(git -C /workspace/clone2 rev-parse origin/main)"
step other $SSH -p 2222 root@other.test true
printf '%s deploy\n' "$pub" >/tmp/deploy.pub
echo "some data" >/tmp/data
step sign_file ssh-keygen -Y sign -n file -f /tmp/deploy.pub /tmp/data
step forged /usr/bin/python3 /workspace/agent-forge.py "$pub"
step sign signed_commit "signed in the sandbox"
r signed "$(git rev-parse HEAD)"
step push_signed git push -q origin HEAD:main
# An SSH session that logged in through the agent stays up while the host scans every process.
$SSH -f -N -o ControlMaster=yes -o ControlPath=/tmp/cm root@git.test </dev/null >/dev/null 2>&1
r held $?
echo ready >/workspace/scan-ready
sleep "$hold"
r slept $?
$SSH -o ControlPath=/tmp/cm -O exit root@git.test >/dev/null 2>&1
EOF

# A sign request for a login in a session no session-bind named (32 random bytes as its id),
# straight to the agent: prints the answer's type (5 failure, 14 a signature).
cat >"$WS/agent-forge.py" <<'EOF'
import base64, os, socket, struct, sys
def s(b):
    return struct.pack(">I", len(b)) + b
blob = base64.b64decode(sys.argv[1].split()[1])
data = (s(os.urandom(32)) + bytes([50]) + s(b"root") + s(b"ssh-connection") + s(b"publickey") +
        b"\x01" + s(b"ssh-ed25519") + s(blob))
c = socket.socket(socket.AF_UNIX)
c.connect(os.environ["SSH_AUTH_SOCK"])
c.sendall(s(bytes([13]) + s(blob) + s(data) + struct.pack(">I", 0)))
answer = b""
while len(answer) < 5:
    more = c.recv(5 - len(answer))
    if not more:
        break
    answer += more
print(answer[4] if len(answer) == 5 else "closed")
EOF

# ---- run 1: commit_signing true ----

hold=90.$$
seen=seen-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
# The host's side of the memory scan: every process in the sandbox's PID namespace (found by
# the sleep of a duration of the test's own), while the SSH session is up; then the sleep ended.
(
	wait_for 100 test -e "$WS/scan-ready" -o -e "$IT_TMP/run-over"
	[ -e "$WS/scan-ready" ] || exit 0
	sl=$(pgrep -f "^sleep $hold\$" | head -n 1)
	if [ -z "$sl" ]; then
		echo "no sleep $hold" >"$IT_TMP/scan.out"
		exit 0
	fi
	pidns=$(readlink "/proc/$sl/ns/pid")
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/ns/pid" 2>/dev/null)" = "$pidns" ] || continue
		pid=${p#/proc/}
		printf '%s %s %s raw_seed=%s\n' "$pid" "$(cat "$p/comm" 2>/dev/null)" \
			"$("$IT_PY" "$IT_SOURCE_ROOT/tests/integration/helpers/mem-scan.py" "$pid" \
				"${needles[@]}" "seen=$seen" 2>&1)" \
			"$(scan_raw "$seed_hex" "$pid" 2>&1)"
	done >"$IT_TMP/scan.out"
	kill -0 "$sl" 2>/dev/null && echo alive >>"$IT_TMP/scan.out"
	kill -TERM "$sl"
) &
scanner=$!
started=$SECONDS
IT_WATCHDOG=180
sb_run --admitted "$IT_TMP/admitted" --no-broker --vault "$V" --key-file "$vkey" \
	-p "$IT_TMP/policy.json" --audit "$IT_TMP/audit.jsonl" --json \
	-- /bin/sh /workspace/ssh-git.sh "$IT_MARK" full "$repo" "$pub" "$hold" "$seen"
touch "$IT_TMP/run-over"
wait "$scanner"
it_log "# the sandbox with the agent ran for $((SECONDS - started)) s"
assert_eq 0 "$AL_RC" "the sandbox with an SSH agent credential runs"
json_get "$IT_TMP/al.out" 'd["stdout"]' >"$IT_TMP/probe.out"
cp "$IT_TMP/al.out" "$IT_TMP/run1.out"
cp "$IT_TMP/al.err" "$IT_TMP/run1.err"
get() { sed -n "s/^$1=//p" "$IT_TMP/probe.out" | head -n 1; }
# assert_step NAME WHAT: the sandbox's step NAME exited 0 (else its output is shown)
assert_step()
{
	if [ "$(get "$1")" = 0 ]; then
		it_pass "$2"
	else
		it_fail "$2" "exit: $(get "$1")" "output: $(get "$1_out")" "${AL_ERR:+airlock stderr: $AL_ERR}"
	fi
}

assert_eq /run/airlock/ssh-agent "$(get sock)" "SSH_AUTH_SOCK is /run/airlock/ssh-agent in the sandbox"
assert_eq "256 $fp deploy (ED25519)" "$(get list_out)" \
	"ssh-add -l lists the policy's key only, its comment the credential's name"
assert_eq "$pub deploy" "$(get keys_out)" "ssh-add -L gives its public key"
assert_step clone "git clone ssh://root@git.test/... works through the agent"
assert_step commit "a commit in the clone"
assert_step push "git push works"
pushed=$(get pushed)
assert_step fetch "git fetch in a second clone works"
assert_eq "$pushed" "$(get fetched)" "... and brings the pushed commit"
assert_eq "from the sandbox" "$(git --git-dir="$repo" log -1 --format=%s "$pushed" 2>&1)" \
	"the host's bare repository holds the commit pushed from the sandbox"
assert_eq "$first" "$(git --git-dir="$repo" rev-parse "$pushed^" 2>&1)" "... on top of the host's"

assert_ne 0 "$(get other)" "ssh to other.test:2222 (not a destination of the key) fails"
assert_contains "$(get other_out)" "Permission denied (publickey)" "... with Permission denied (publickey)"
assert_contains "$(get other_out)" "agent refused operation" "... because the agent refused to sign (sshd B would have taken the key)"
assert_eq "$b_before" "$(accepted b)" "sshd B accepted no login from the sandbox"
assert_ne 0 "$(get sign_file)" "a signature in another namespace than git's (ssh-keygen -Y sign -n file) is refused"
assert_contains "$(get sign_file_out)" "agent refused operation" "... by the agent"
assert_eq 5 "$(get forged_out)" "a login's sign request for a session never bound is refused (SSH_AGENT_FAILURE)"
assert_eq $((a_before + 6)) "$(accepted a)" \
	"sshd A accepted the key for each of the sandbox's six SSH connections"

# The signed commit, verified by the host's git against an allowed-signers file.
signed=$(get signed)
assert_step sign "a commit signed with gpg.format=ssh (commit_signing true) is made"
assert_step push_signed "... and pushed"
assert_eq "$signed" "$(git --git-dir="$repo" rev-parse main 2>&1)" "the bare repository's main is the signed commit"
printf 'deploy@git.test namespaces="git" %s\n' "$pub" >"$IT_TMP/allowed_signers"
verify() { git --git-dir="$repo" -c gpg.ssh.allowedSignersFile="$IT_TMP/allowed_signers" verify-commit "$1" 2>&1; }
v=$(verify "$signed")
assert_eq 0 "$?" "git verify-commit on the host verifies the signed commit"
assert_contains "$v" "Good \"git\" signature for deploy@git.test with ED25519 key $fp" "... as the deploy key's"
assert_false "... and, as a control, does not verify the unsigned one" verify "$pushed"

# The audit and the result. count FILE EXPR: the egress proxy's credential events (the run's
# view; the embedded broker's own, with its session tag, are left out) of an SSH signature
# (action ssh-sign, a login's, or ssh-sign-commit) of the deploy key for which EXPR holds;
# login(e, HOST, PORT): a login's signature for the destination HOST:PORT; hostless(e): a
# signature for no host (a commit's, or one the agent could tie to no connection).
count() { "$IT_PY" -c '
import json, sys
def login(e, host, port):
    return e.get("action") == "ssh-sign" and e.get("destination") == "%s:%d" % (host, port)
def hostless(e):
    return e.get("destination") in (None, "", "-")
n = 0
for l in open(sys.argv[1]):
    e = json.loads(l)
    if (e.get("kind") == "credential" and "session" not in e and
            str(e.get("action")).startswith("ssh-sign") and
            e.get("credential") == "deploy" and
            eval(sys.argv[2], {"e": e, "login": login, "hostless": hostless, "bool": bool})):
        n += 1
print(n)' "$1" "$2"; }
audit=$IT_TMP/audit.jsonl
assert_eq 6 "$(count "$audit" 'e.get("verdict") == "granted" and login(e, "git.test", 22)')" \
	"the six logins to git.test:22 are audited as granted ssh-signs of deploy (host, port)"
assert_eq 0 "$(count "$audit" 'e.get("verdict") == "granted" and not login(e, "git.test", 22) and not hostless(e)')" \
	"... and no other login's"
assert_match '^[1-9]' "$(count "$audit" 'e.get("verdict") == "granted" and hostless(e)')" \
	"the commit's signature is audited as granted"
assert_match '^[1-9]' "$(count "$audit" 'e.get("verdict") == "refused" and login(e, "other.test", 2222) and e.get("reason") not in (None, "", "-")')" \
	"the sign for other.test:2222 is audited as refused (host, port), with a reason"
assert_eq 0 "$(count "$audit" 'e.get("verdict") != "granted" and not login(e, "other.test", 2222) and not hostless(e)')" \
	"... and no other login's is refused"
assert_match '^([2-9]|[1-9][0-9])$' "$(count "$audit" 'e.get("verdict") == "refused" and hostless(e) and e.get("reason") not in (None, "", "-")')" \
	"the signature in another namespace and the one for a session never bound are audited as refused, with a reason"
assert_eq true "$(json_get "$IT_TMP/run1.out" "any(v['kind'] == 'credential' and 'deploy' in v['detail'] and 'other.test' in v['detail'] for v in d['violations'])")" \
	"the refusal is a credential violation in the result, naming the key and the host"

# Memory: the scan saw each sandbox process (its token, in the environment of those the script
# started), the SSH session among them, and no part of the key anywhere.
assert_eq alive "$(tail -n 1 "$IT_TMP/scan.out")" \
	"the host scanned the sandbox's processes while the SSH session was up"
assert_match '^[0-9]+ ssh .*seen=[1-9]' "$(grep -E '^[0-9]+ ssh ' "$IT_TMP/scan.out" | head -n 1)" \
	"... the SSH client that logged in through the agent among them (the scan sees its memory)"
assert_match '^[3-9]|^[1-9][0-9]' "$(grep -c ' seen=' "$IT_TMP/scan.out")" "... three processes or more"
leaks=$(grep ' seen=' "$IT_TMP/scan.out" | tr ' ' '\n' | grep -E '^(seed_|key_line|raw_seed)' | grep -v '=0$')
assert_eq "" "$leaks" "no line of the key file, nor its seed (raw, base64, hex), in any sandbox process's memory" \
	"$(cat "$IT_TMP/scan.out")"
assert_eq 0 "$(get held)" "(the SSH session for the scan was up)"
assert_eq 143 "$(get slept)" "(the host ended the sandbox's sleep after the scan)"

# ---- run 2: commit_signing false ----

sb_run --admitted "$IT_TMP/admitted" --no-broker --vault "$V" --key-file "$vkey" \
	-p "$IT_TMP/policy-nosign.json" --audit "$IT_TMP/audit-nosign.jsonl" --json \
	-- /bin/sh /workspace/ssh-git.sh "$IT_MARK" nosign "$repo" "$pub" 0 "$seen"
assert_eq 0 "$AL_RC" "the sandbox with commit_signing false runs"
json_get "$IT_TMP/al.out" 'd["stdout"]' >"$IT_TMP/probe.out"
cp "$IT_TMP/al.out" "$IT_TMP/run2.out"
cp "$IT_TMP/al.err" "$IT_TMP/run2.err"
assert_step clone "with commit_signing false, logins through the agent still work"
assert_ne 0 "$(get sign)" "... but a signed commit is refused"
assert_contains "$(get sign_out)" "agent refused operation" "... by the agent"
assert_eq "$(get head)" "$(get head_after)" "... and no commit is made"
assert_match '^[1-9]' "$(count "$IT_TMP/audit-nosign.jsonl" 'e.get("verdict") == "refused" and hostless(e) and e.get("reason") not in (None, "", "-")')" \
	"the refused commit signature is audited (refused, with a reason)"
assert_match '^[1-9]' "$(count "$IT_TMP/audit-nosign.jsonl" 'e.get("verdict") == "granted" and login(e, "git.test", 22)')" \
	"... and the clone's login as granted"
assert_eq true "$(json_get "$IT_TMP/run2.out" "any(v['kind'] == 'credential' and 'deploy' in v['detail'] for v in d['violations'])")" \
	"the refused signature is a credential violation naming the key"

no_key_in "nothing of the private key in airlock's output or the audits" \
	"$IT_TMP/put.out" "$IT_TMP/put.err" "$IT_TMP/run1.out" "$IT_TMP/run1.err" \
	"$IT_TMP/run2.out" "$IT_TMP/run2.err" "$audit" "$IT_TMP/audit-nosign.jsonl"

# ---- nothing of the fixture is left ----

fixture_stop
no_sshd() { [ -z "$(it_marked_pids "sshd-$IT_MARK")" ] && ! pgrep -f "$sd/[ab].conf" >/dev/null; }
assert_true "no sshd of the test is left" wait_for 10 no_sshd
assert_true "no process is left in the test's network namespace (so it is gone)" no_ns_pids
no_veth() { ! ip link show "$vh" >/dev/null 2>&1; }
assert_true "the veth pair is gone" wait_for 10 no_veth
assert_eq "" "$(ip -4 route show exact "$net/30")" "... and its route"

it_finish
