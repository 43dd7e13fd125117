#!/usr/bin/env bash
# Red team of the destination-bound SSH agent (issue 19): a forwarded agent (`ssh -A`) is used by
# the server it was forwarded to, to log in elsewhere over a connection the egress proxy never saw.
#
# The agent refuses a signature when "the agent connection's last session-bind was made for a
# forwarded agent" (docs/BROKER.md: "it signs only on the connection airlock saw"). But OpenSSH's
# forwarded agent connection carries two binds: the sandbox's ssh binds it to the first hop's
# host key with the forwarding flag (clientloop.c, when the server opens the agent channel), then
# the ssh client on that server binds it, without the flag, to the host key of where it goes
# next. The last bind is then not a forwarded one, and the agent signs for the second hop when its
# host key was seen anywhere in the run: here sshd A (git.test, the agent forwarded to it) logs in
# to sshd B (other.test:2222, also a destination of the key, which the sandbox reached once
# itself) directly, inside the test's network namespace, with the sandbox's key.
#
# Real parts only (as in test-ssh-agent-signs-only-for-its-destinations): Debian's sshd twice in
# a network namespace of the test's own, A allowing agent forwarding. Each check passes once the
# agent refuses any signature on a connection bound with the forwarding flag.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

for tool in /usr/sbin/sshd ssh ssh-keygen unshare nsenter ip pgrep ss; do
	if ! command -v "$tool" >/dev/null; then
		it_fail "$tool is missing (Debian packages openssh-server, openssh-client, util-linux, iproute2, procps)"
		it_finish
	fi
done
unset AIRLOCK_VAULT AIRLOCK_PASSPHRASE_FILE SSH_AUTH_SOCK

# ---- the fixture: two sshd in a network namespace of the test's own ----

sd=$IT_TMP/sshd
kdir=$IT_TMP/keys
mkdir -p "$sd" "$kdir"
ssh-keygen -q -t ed25519 -N '' -C "deploy@$IT_MARK" -f "$kdir/deploy"
ssh-keygen -q -t ed25519 -N '' -C "host-a" -f "$sd/host_a"
ssh-keygen -q -t ed25519 -N '' -C "host-b" -f "$sd/host_b"
cp "$kdir/deploy.pub" "$sd/authorized_keys"
fp=$(ssh-keygen -lf "$kdir/deploy.pub" | awk '{print $2}')
. "$IT_SOURCE_ROOT/tests/integration/helpers/sshd-netns.sh"

SSHD_AGENT_FORWARDING=yes
start_sshd a 22
start_sshd b 2222
assert_true "sshd A listens on $addr:22 in the test's network namespace" wait_for 10 listens 22
assert_true "sshd B listens on $addr:2222" wait_for 10 listens 2222


# The sshd are told apart by their logs: a login from inside the namespace (A's address, the
# forwarded hop) or from the host's end of the veth (the proxy).
accepted_from() { grep -c "Accepted publickey for root from $2 .* $fp" "$sd/$1.sshd-$IT_MARK.log"; }

vkey=$IT_TMP/vault.key
head -c 32 /dev/urandom >"$vkey"
chmod 600 "$vkey"
V=$IT_TMP/vault
al_run secret --vault "$V" --key-file "$vkey" put --ssh-key deploy <"$kdir/deploy"
assert_eq "deploy ssh-ed25519 $fp" "$AL_OUT" "the deploy key goes into the vault"

# The key may log in to git.test:22 (sshd A) and other.test:2222 (sshd B).
cat >"$IT_TMP/policy.json" <<EOF
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
   "ssh": {"destinations": ["git.test", "other.test:2222"]}}]}
EOF
it_admit "$IT_TMP/policy.json"

cat >"$WS/forward.sh" <<'EOF'
addr=$1
SSH="ssh -F /dev/null -o StrictHostKeyChecking=accept-new -o UserKnownHostsFile=/tmp/kh -o BatchMode=yes -o ConnectTimeout=20"
# What runs on sshd A, with the forwarded agent: ssh straight to B, or to A itself.
HOP="ssh -F /dev/null -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"
r() { printf '%s=%s\n' "$1" "$(printf '%s' "$2" | tr '\n' '|')"; }
r direct_b "$($SSH -p 2222 root@other.test echo direct-b 2>&1)"
r direct_a "$($SSH root@git.test echo direct-a 2>&1)"
r a_to_b "$($SSH -A root@git.test "$HOP -p 2222 root@$addr echo hop-to-b" 2>&1)"
r a_to_a "$($SSH -A root@git.test "$HOP -p 22 root@$addr echo hop-to-a" 2>&1)"
EOF

a_hops=$(accepted_from a "$addr")
b_hops=$(accepted_from b "$addr")
IT_WATCHDOG=120
sb_run --admitted "$IT_TMP/admitted" --no-broker --vault "$V" --key-file "$vkey" \
	-p "$IT_TMP/policy.json" --audit "$IT_TMP/audit.jsonl" --json \
	-- /bin/sh /workspace/forward.sh "$addr"
assert_eq 0 "$AL_RC" "the sandbox runs" "$AL_ERR"
json_get "$IT_TMP/al.out" 'd["stdout"]' >"$IT_TMP/probe.out"
get() { sed -n "s/^$1=//p" "$IT_TMP/probe.out" | head -n 1; }

# The control: the sandbox's own logins, through the proxy, work.
assert_contains "$(get direct_b)" "direct-b" "(the sandbox logs in to other.test:2222 itself: B's host key is seen)"
assert_contains "$(get direct_a)" "direct-a" "(... and to git.test)"

# The finding: the forwarded agent signs for A's own connections.
assert_not_contains "$(get a_to_b)" "hop-to-b" \
	"sshd A, the agent forwarded to it, cannot log in to sshd B with the key (a connection the proxy never saw)" \
	"$(get a_to_b)"
assert_eq "$b_hops" "$(accepted_from b "$addr")" "sshd B accepted no login from A's address"
assert_not_contains "$(get a_to_a)" "hop-to-a" \
	"... nor to itself again, past the proxy" "$(get a_to_a)"
assert_eq "$a_hops" "$(accepted_from a "$addr")" "sshd A accepted no login from its own address"
n=$("$IT_PY" -c '
import json, sys
n = 0
for l in open(sys.argv[1]):
    e = json.loads(l)
    if (e.get("kind") == "credential" and "session" not in e and e.get("action") == "ssh-sign"
            and e.get("verdict") == "refused" and "forward" in str(e.get("reason"))):
        n += 1
print(n)' "$IT_TMP/audit.jsonl")
assert_match '^[1-9]' "$n" "the forwarded agent's signature requests are audited as refused, for forwarding"
assert_eq true "$(json_get "$IT_TMP/al.out" "any(v['kind'] == 'credential' and 'deploy' in v['detail'] for v in d['violations'])")" \
	"... and are credential violations in the result"

fixture_stop
no_sshd() { [ -z "$(it_marked_pids "sshd-$IT_MARK")" ] && ! pgrep -f "$sd/[ab].conf" >/dev/null; }
assert_true "no sshd of the test is left" wait_for 10 no_sshd
assert_true "no process is left in the test's network namespace" no_ns_pids
no_veth() { ! ip link show "$vh" >/dev/null 2>&1; }
assert_true "the veth pair is gone" wait_for 10 no_veth

it_finish
