#!/usr/bin/env bash
# The broker daemon: its socket (0600, one daemon per socket, a stale one replaced), peers checked
# by uid, a versioned framed protocol with size limits, sessions that only their owner can use,
# that end with their connection or at their TTL, surrogates resolved only to bound hosts, every
# attempt audited, many clients at once, a stalled client blocking nobody, and no secret in the
# audit or the log. Clients are python (helpers/broker_proto.py) speaking the protocol directly.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

export PYTHONPATH=$IT_SOURCE_ROOT/tests/integration/helpers
token=ghp_$(head -c 64 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 36)
export IT_TOKEN=$token
sock=$IT_TMP/$IT_MARK.sock
audit=$IT_TMP/audit.jsonl
log=$IT_TMP/broker.log

start_broker()
{
	"$AIRLOCK" broker --no-vault --socket "$sock" --audit "$audit" "$@" >>"$log" 2>&1 &
	BROKER_PID=$!
	# A stale socket may be there already: wait until this daemon answers.
	wait_for 10 "$AIRLOCK" broker status --socket "$sock" >/dev/null 2>&1
}

stop_broker()
{
	kill -TERM "$BROKER_PID" 2>/dev/null
	wait "$BROKER_PID"
}

start_broker
assert_true "the daemon listens on its socket" test -S "$sock"
assert_eq "600 root" "$(stat -c '%a %U' "$sock")" "the socket is mode 0600, owned by the daemon's user"
assert_eq "0" "$(awk '/^Max core file size/ {print $5}' "/proc/$BROKER_PID/limits")" \
	"the daemon dumps no core (RLIMIT_CORE 0)"

out=$("$AIRLOCK" broker status --socket "$sock" 2>&1)
assert_contains "$out" '"status": "serving"' "airlock broker status asks the daemon"

"$AIRLOCK" broker --no-vault --socket "$sock" >"$IT_TMP/second.out" 2>&1
assert_eq 1 "$?" "a second daemon on the same socket is refused"
assert_contains "$(cat "$IT_TMP/second.out")" "a broker already listens on $sock" "its error says why"
assert_true "the first daemon still serves" "$AIRLOCK" broker status --socket "$sock"

python3 - "$sock" "$token" >"$IT_TMP/py.out" 2>&1 <<'EOF'
import socket, struct, sys, threading, time
from broker_proto import call, connect, is_closed, open_session, read_frame, send_frame

path, token = sys.argv[1], sys.argv[2]
cred = [{"name": "gh", "source": {"type": "env", "var": "IT_TOKEN"},
         "injection": {"type": "env_var", "var_name": "GITHUB_TOKEN"},
         "hosts": ["api.example.com", "*.uploads.example.com"]}]

def say(what, ok):
    print(("ok " if ok else "FAIL ") + what, flush=True)

a, b = connect(path), connect(path)
sa, sb = open_session(a, cred, label="A"), open_session(b, cred, label="B")
say("a session opens and gets a surrogate", sa["ok"] and "gh" in sa["surrogates"])
sur_a, sur_b = sa["surrogates"]["gh"], sb["surrogates"]["gh"]
say("surrogates differ per session", sur_a != sur_b)
say("a surrogate keeps the token's shape", sur_a.startswith("ghp_") and len(sur_a) == len(token))
say("a surrogate is not the token", token not in (sur_a, sur_b))

r, p = call(a, "resolve", session=sa["session"], surrogate=sur_a, host="api.example.com")
say("the owner resolves its surrogate for a bound host", r["ok"] and p == token.encode())
r, p = call(a, "resolve", session=sa["session"], surrogate=sur_a, host="files.uploads.example.com")
say("a *.suffix binding covers names below it", r["ok"] and p == token.encode())
r, p = call(a, "resolve", session=sa["session"], surrogate=sur_a, host="uploads.example.com")
say("a *.suffix binding does not cover the suffix itself", not r["ok"] and p == b"")
r, p = call(a, "resolve", session=sa["session"], surrogate=sur_a, host="evil.example.net")
say("a host the credential is not bound to is refused", not r["ok"] and r["errno"] == "EPERM" and p == b"")
r, p = call(b, "resolve", session=sb["session"], surrogate=sur_a, host="api.example.com")
say("a session asking for another's surrogate is refused",
    not r["ok"] and "another session" in r["error"] and p == b"")
r, _ = call(a, "resolve", session="0" * 32, surrogate=sur_a, host="api.example.com")
say("an unknown session is refused", not r["ok"])
r, p = call(a, "read", session=sa["session"], name="gh")
say("read gives the surrogate of a credential that is not exposed", r["ok"] and p == sur_a.encode())
sh = open_session(a, [{"name": "side", "source": {"type": "env", "var": "IT_TOKEN"},
                       "injection": {"type": "sidecar", "header": "Authorization",
                                     "format": "Bearer {}"}, "hosts": ["api.example.com"]}])
r, p = call(a, "headers", session=sh["session"], host="api.example.com")
say("a sidecar credential is a header for its host",
    r["ok"] and p == ("Authorization: Bearer %s\r\n" % token).encode())
r, p = call(a, "headers", session=sh["session"], host="other.example.com")
say("... and no header for another host", r["ok"] and p == b"")
r, _ = call(a, "close", session=sh["session"])
r, _ = call(a, "list")
say("a list shows tags, never the ids that are the sessions' capabilities",
    all("id" not in x and len(x["tag"]) == 16 for x in r["sessions"])
    and sa["session"] not in str(r))

# Malformed and oversize requests: one error each, the connection goes on (or ends, past a limit).
c = connect(path)
send_frame(c, b"{not json")
r, _ = read_frame(c)
say("malformed JSON gets an error", not r["ok"] and r["errno"] == "EINVAL")
r, _ = call(c, "health")
say("the connection still serves after a malformed request", r["ok"])
r, _ = call(c, "resolve", session=sa["session"], surrogate=sur_a, host="api.example.com", extra=1)
say("an unknown field is refused", not r["ok"] and "unknown field" in r["error"])
send_frame(c, b'{"v":2,"id":7,"op":"health"}')
r, _ = read_frame(c)
say("another protocol version is refused, with the request's id",
    not r["ok"] and r["errno"] == "EPROTONOSUPPORT" and r["id"] == 7)
r, _ = call(c, "resolve", payload=b"x", session=sa["session"], surrogate=sur_a, host="a.b")
say("a payload where none belongs is refused", not r["ok"])
c.sendall(struct.pack(">II", 1 << 20, 0))
r, _ = read_frame(c)
say("an oversize request is refused", not r["ok"] and r["errno"] == "EMSGSIZE")
say("... and its connection closed", is_closed(c))
c = connect(path)
c.sendall(struct.pack(">II", 100, 64 << 20))
r, _ = read_frame(c)
say("an oversize payload is refused", not r["ok"] and r["errno"] == "EMSGSIZE")

# A client that sends half a frame and waits blocks no one.
stalled = connect(path)
stalled.sendall(b'\x00\x00\x00\x40{"v":1')
t = time.monotonic()
r, _ = call(a, "health")
say("a stalled client does not block the others", r["ok"] and time.monotonic() - t < 2)

# Sessions end with the connection that opened them, and at their TTL.
c = connect(path)
sc = open_session(c, cred)
c.close()
time.sleep(0.3)
r, _ = call(a, "read", session=sc["session"], name="gh")
say("a session ends when its connection closes", not r["ok"] and r["errno"] == "ENOENT")
st = open_session(a, cred, ttl_ms=500)
r, _ = call(a, "read", session=st["session"], name="gh")
ok1 = r["ok"]
time.sleep(1.0)
r, _ = call(a, "read", session=st["session"], name="gh")
say("a session ends at its TTL", ok1 and not r["ok"])
r, _ = call(a, "close", session=sb["session"])
say("another connection of the same uid may close a session", r["ok"])

# Many clients at once, each with its own session.
errors = []
def client(i):
    try:
        s = connect(path)
        o = open_session(s, cred, label="c%d" % i)
        for _ in range(50):
            r, p = call(s, "resolve", session=o["session"], surrogate=o["surrogates"]["gh"],
                        host="api.example.com")
            if not r["ok"] or p != token.encode():
                errors.append(i)
                return
        s.close()
    except Exception as e:
        errors.append("%d: %s" % (i, e))
threads = [threading.Thread(target=client, args=(i,)) for i in range(64)]
for th in threads: th.start()
for th in threads: th.join()
say("64 concurrent clients each open a session and resolve 50 times (errors: %s)" % errors[:3],
    not errors)
r, _ = call(a, "list")
say("list shows the sessions still open", r["ok"] and [s["label"] for s in r["sessions"]] == ["A"])
stalled.close()
EOF
py_rc=$?
while read -r verdict what; do
	if [ "$verdict" = ok ]; then it_pass "$what"; else it_fail "$what"; fi
done <"$IT_TMP/py.out"
assert_eq 0 "$py_rc" "the protocol client ran to its end" || cat "$IT_TMP/py.out" >&2

assert_contains "$(cat "$audit")" '"verdict":"granted"' "a granted resolve is audited"
assert_contains "$(grep '"kind":"violation"' "$audit")" "belongs to another session" \
	"a stolen surrogate is audited as a violation"
assert_contains "$(grep '"kind":"violation"' "$audit")" '"host":"evil.example.net"' \
	"a refused host is audited with the host"

# A peer whose uid is not allowed is turned away, and that too is audited.
stop_broker
assert_false "SIGTERM stops the daemon and removes its socket" test -e "$sock"
rundir=$IT_TMP/nobody
mkdir -m 700 "$rundir"
chown 65534:65534 "$rundir"
setpriv --reuid 65534 --regid 65534 --clear-groups "$AIRLOCK" broker --no-vault \
	--socket "$rundir/$IT_MARK.sock" --audit "$rundir/audit.jsonl" >>"$log" 2>&1 &
nobody_pid=$!
wait_for 10 test -S "$rundir/$IT_MARK.sock"
assert_eq root "$(stat -c %U "/proc/$nobody_pid/environ")" \
	"the daemon is not dumpable (its /proc files belong to root)"
out=$(python3 - "$rundir/$IT_MARK.sock" 2>&1 <<'EOF'
import sys
from broker_proto import connect, read_frame
# The daemon answers a rejected peer at once, unasked, and hangs up.
try:
    r, _ = read_frame(connect(sys.argv[1]))
    print(r)
except ConnectionError as e:
    print("closed", e)
EOF
)
assert_contains "$out" "peer uid not allowed" "a peer of another uid is rejected (SO_PEERCRED)"
kill -TERM "$nobody_pid"
wait "$nobody_pid"
assert_contains "$(cat "$rundir/audit.jsonl")" '"reason":"peer uid not allowed"' \
	"the rejected peer is audited"

# --allow-uid lets another uid in (an ACL on the socket), for vault credentials only.
start_broker --allow-uid 65534
assert_eq "600" "$(stat -c %a "$sock" | sed 's/^660$/600/')" "the socket's mode bits stay owner-only"
assert_contains "$(getfacl -n -p "$sock" 2>/dev/null)" "user:65534:rw-" "the allowed uid gets an ACL entry"
out=$(setpriv --reuid 65534 --regid 65534 --clear-groups env PYTHONPATH="$PYTHONPATH" \
	"$IT_PY" - "$sock" 2>&1 <<'EOF'
import sys
from broker_proto import connect, open_session
s = connect(sys.argv[1])
print(open_session(s, [{"name": "gh", "source": {"type": "env", "var": "IT_TOKEN"},
                        "injection": {"type": "env_var", "var_name": "T"}, "hosts": ["a.example.com"]}]))
EOF
)
assert_contains "$out" "only its own user" "another uid may not use the daemon's env, file or command sources"
out=$(setpriv --reuid 65534 --regid 65534 --clear-groups env PYTHONPATH="$PYTHONPATH" "$IT_PY" -c '
import sys
from broker_proto import connect, open_session
s = connect(sys.argv[1])
print(open_session(s, [{"name": "v", "source": {"type": "vault"}, "expose": True,
                        "injection": {"type": "env_var", "var_name": "T"}, "hosts": []}]))
' "$sock" 2>&1)
assert_contains "$out" "may have a real value exposed" "another uid may not have any value exposed"
stop_broker

# A daemon killed outright leaves its socket; the next one replaces it.
start_broker
kill -KILL "$BROKER_PID"
wait "$BROKER_PID" 2>/dev/null
assert_true "a SIGKILLed daemon leaves its socket" test -S "$sock"
start_broker
assert_true "the next daemon takes over the stale socket" "$AIRLOCK" broker status --socket "$sock"
stop_broker

# --socket naming a file that is not a socket: an error, and the file stays.
echo precious >"$IT_TMP/precious.txt"
"$AIRLOCK" broker --no-vault --socket "$IT_TMP/precious.txt" >>"$log" 2>&1
assert_eq 1 "$?" "a daemon whose socket path is taken by a file fails"
assert_eq precious "$(cat "$IT_TMP/precious.txt" 2>&1)" "... and leaves the file alone"

assert_not_contains "$(cat "$audit" "$log" "$rundir/audit.jsonl")" "$token" \
	"no secret is in the audit or the daemon's log"
it_finish
