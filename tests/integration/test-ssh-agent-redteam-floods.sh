#!/usr/bin/env bash
# Red team of the destination-bound SSH agent (issue 19): what a sandbox can make the agent cost
# the host, with no SSH server at all, only requests on its SSH_AUTH_SOCK.
#
# 1. The audit. Each agent request is audited twice: by the egress proxy (rate-limited, 2,000 at
#    once then 200 a second, docs/EGRESS.md "Audit") and by the broker, as the session's
#    credential event, which is not rate-limited. The embedded broker writes to the run's audit
#    file (a daemon to its own): 30,000 "list identities" requests, a few seconds of a loop in the
#    sandbox, are 30,000 lines of it (found: ~7,000 lines and ~1.5 MB a second, 23 MB in 15 s:
#    the flood of the audit that docs/EGRESS.md says the rate limit ended, for DNS). Checked, with
#    10,000 requests: the broker's events of the flood are no more than the proxy's and a fifth
#    (the two rate limits are alike: about 2,000 + 200 a second, whatever the machine's speed).
# 2. The proxy's memory. The proxy answers every whole request it reads and queues the answer,
#    without limit, for a client that never reads: 100,000 requests (500 KB) queue ~7 MB in the
#    egress proxy, a host process outside the sandbox's memory limit. Checked: the proxy's
#    resident memory stays under 8 MiB (it starts at about 4) while such a client is connected.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

for tool in ssh-keygen pgrep; do
	if ! command -v "$tool" >/dev/null; then
		it_fail "$tool is missing (Debian packages openssh-client, procps)"
		it_finish
	fi
done
unset AIRLOCK_VAULT AIRLOCK_PASSPHRASE_FILE SSH_AUTH_SOCK

ssh-keygen -q -t ed25519 -N '' -C "deploy@$IT_MARK" -f "$IT_TMP/deploy"
vkey=$IT_TMP/vault.key
head -c 32 /dev/urandom >"$vkey"
chmod 600 "$vkey"
V=$IT_TMP/vault
al_run secret --vault "$V" --key-file "$vkey" put --ssh-key deploy <"$IT_TMP/deploy"
assert_eq 0 "$AL_RC" "the deploy key goes into the vault" "$AL_ERR"
# No connection is made: the network only has to allow one to the key's destination.
cat >"$IT_TMP/policy.json" <<EOF
{"workspace": {"root": "$WS"},
 "network": {"default": "deny",
  "rules": [{"destination": "git.test", "port": 22, "action": "allow"}],
  "resolve": {"git.test": "192.0.2.1"}},
 "credentials": [
  {"name": "deploy", "source": {"type": "vault", "key": "deploy"},
   "injection": {"type": "ssh_agent"}, "ssh": {"destinations": ["git.test"]}}]}
EOF
it_admit "$IT_TMP/policy.json"

cat >"$WS/flood.py" <<'EOF'
import os, signal, socket, struct, sys, time
LIST = struct.pack(">I", 1) + bytes([11])
def recv_exact(c, n):
    b = b""
    while len(b) < n:
        m = c.recv(n - len(b))
        if not m:
            raise EOFError
        b += m
    return b
c = socket.socket(socket.AF_UNIX)
c.connect(os.environ["SSH_AUTH_SOCK"])
if sys.argv[1] == "audit":
    # 10,000 requests, 500 at a time, every answer read.
    n = 0
    for _ in range(20):
        c.sendall(LIST * 500)
        for _ in range(500):
            (k,) = struct.unpack(">I", recv_exact(c, 4))
            n += recv_exact(c, k)[0] == 12
    print("answered=%d" % n)
else:
    # Connected, the host measures the proxy first; its SIGUSR1 starts the flood (a file the host
    # makes would show here only once the kernel's cache of the folder expires, a minute).
    go = []
    signal.signal(signal.SIGUSR1, lambda *a: go.append(1))
    c.sendall(LIST)
    (k,) = struct.unpack(">I", recv_exact(c, 4))
    recv_exact(c, k)
    open("/workspace/ready", "w").close()
    while not go:
        time.sleep(0.05)
    # 100,000 requests, no answer read; a write that cannot go on for 5 s ends the writing.
    c.settimeout(5)
    sent = 0
    try:
        for _ in range(100):
            c.sendall(LIST * 1000)
            sent += 1000
    except socket.timeout:
        pass
    print("sent=%d" % sent, flush=True)
    # Connected until the host has measured again: it ends this process then.
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    open("/workspace/flooded", "w").close()
    time.sleep(100)
EOF

# ---- 1. the audit ----

IT_WATCHDOG=180
sb_run --admitted "$IT_TMP/admitted" --no-broker --vault "$V" --key-file "$vkey" \
	-p "$IT_TMP/policy.json" --audit "$IT_TMP/audit.jsonl" --json \
	-- /usr/bin/python3 /workspace/flood.py audit
assert_eq 0 "$AL_RC" "the sandbox's agent flood runs" "$AL_ERR"
assert_eq "answered=10000" "$(json_get "$IT_TMP/al.out" 'd["stdout"].strip()')" \
	"(the agent answered the 10,000 requests)"
counts=$("$IT_PY" -c '
import json, sys
broker = proxy = 0
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e.get("kind") == "credential" and e.get("action") == "ssh-list":
        if "session" in e:
            broker += 1
        else:
            proxy += 1
print(broker, proxy)' "$IT_TMP/audit.jsonl")
read -r broker proxy <<<"$counts"
it_log "# audit: $(wc -l <"$IT_TMP/audit.jsonl") lines, $(wc -c <"$IT_TMP/audit.jsonl") bytes; ssh-list events: the broker's $broker, the proxy's $proxy"
assert_match '^[1-9][0-9]*$' "$proxy" "(the proxy audited the flood, rate-limited)"
# Both limits are alike, so both counts are: far under the 10,000 requests either way (the
# proxy's about 2,000 + 200 a second of a flood that takes longer than 10 s on a loaded
# machine too).
if [ "$broker" -le $((proxy * 6 / 5 + 100)) ]; then
	it_pass "the broker's audit events of an agent flood are rate-limited too ($broker for the proxy's $proxy)"
else
	it_fail "the broker's audit events of an agent flood are rate-limited too" \
		"the broker's ssh-list events: $broker; the proxy's (rate-limited): $proxy"
fi

# ---- 2. the proxy's memory ----

# The run's egress proxy: the airlock-net process with the test's marker in its environment.
proxy_pid()
{
	local p
	for p in $(pgrep -x airlock-net); do
		tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "AIRLOCK_IT_FLOOD=$IT_MARK" &&
			printf '%s\n' "$p"
	done
	return 0
}
ready() { [ -e "$WS/ready" ] || [ -e "$IT_TMP/run-over" ]; }
flooded() { [ -e "$WS/flooded" ] || [ -e "$IT_TMP/run-over" ]; }
rss() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null; }
client="^/usr/bin/python3 /workspace/flood.py memory $IT_MARK\$"
(
	wait_for 100 ready
	pid=$(proxy_pid | head -n 1)
	before=$(rss "$pid")
	pkill -USR1 -f "$client"
	wait_for 100 flooded
	printf '%s %s %s\n' "${pid:--}" "$before" "$(rss "$pid")" >"$IT_TMP/rss"
	pkill -TERM -f "$client"
) &
meter=$!
export AIRLOCK_IT_FLOOD=$IT_MARK
# In a sanitizer build, AddressSanitizer keeps what is freed (256 MiB of it) to catch a late use:
# the proxy's own memory is what is measured, so nothing is kept here.
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0
sb_run --admitted "$IT_TMP/admitted" --no-broker --vault "$V" --key-file "$vkey" \
	-p "$IT_TMP/policy.json" --json -- /usr/bin/python3 /workspace/flood.py memory "$IT_MARK"
unset AIRLOCK_IT_FLOOD ASAN_OPTIONS
touch "$IT_TMP/run-over"
wait "$meter"
assert_eq 0 "$AL_RC" "the sandbox's unread agent flood runs" "$AL_ERR"
read -r pid before kb <"$IT_TMP/rss"
it_log "# $(json_get "$IT_TMP/al.out" 'd["stdout"].strip()'); the proxy (pid $pid) held ${before:-?} KiB, then ${kb:-?} KiB"
assert_match '^[0-9]+ [0-9]+$' "${before:-} ${kb:-}" "(the proxy's memory was measured before the flood and while the client was connected)"
# Growth, not size: a sanitizer build's proxy starts at tens of MiB.
if [ -n "${kb:-}" ] && [ -n "${before:-}" ] && [ $((kb - before)) -lt 4096 ]; then
	it_pass "an agent client that reads no answer grows the egress proxy by less than 4 MiB ($((kb - before)) KiB)"
else
	it_fail "an agent client that reads no answer grows the egress proxy by less than 4 MiB" \
		"VmRSS before: ${before:-?} KiB, after: ${kb:-?} KiB"
fi

it_finish
