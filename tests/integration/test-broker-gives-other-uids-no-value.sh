#!/usr/bin/env bash
# A peer let in by --allow-uid never receives a real value (issue 14, item 4): it may open a
# session of vault credentials and get surrogates, but resolve, headers and redact (answers made
# of real values, or computed from them) are refused and audited, and the value appears in no
# answer. The daemon's own uid still gets them. `airlock run` by such a user refuses, before the
# command runs, a policy whose credentials need real values from that daemon, naming the
# credential.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

export PYTHONPATH=$IT_SOURCE_ROOT/tests/integration/helpers
nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
command -v setpriv >/dev/null || it_skip "setpriv (util-linux) is missing"
token=ghp_$(head -c 64 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 36)
vault=$IT_TMP/vault
key=$IT_TMP/vault.key
head -c 32 /dev/urandom >"$key"
chmod 600 "$key"
printf '%s\n' "$token" | "$AIRLOCK" secret put gh --vault "$vault" --key-file "$key"
"$AIRLOCK" secret bind gh --hosts api.example.com --vault "$vault" --key-file "$key"
sockdir=$IT_TMP/sock
mkdir -m 755 "$sockdir"
sock=$sockdir/$IT_MARK.sock
audit=$IT_TMP/audit.jsonl
log=$IT_TMP/broker.log
"$AIRLOCK" broker --vault "$vault" --key-file "$key" --socket "$sock" --audit "$audit" \
	--allow-uid 65534 >>"$log" 2>&1 &
broker_pid=$!
wait_for 10 "$AIRLOCK" broker status --socket "$sock" >/dev/null 2>&1

client='
import sys
from broker_proto import call, connect, open_session
path, token = sys.argv[1], sys.argv[2].encode()
creds = [{"name": "gh", "source": {"type": "vault"},
          "injection": {"type": "env_var", "var_name": "T"}, "hosts": ["api.example.com"]},
         {"name": "side", "source": {"type": "vault", "key": "gh"},
          "injection": {"type": "sidecar", "header": "Authorization"}, "hosts": ["api.example.com"]}]
seen = []
def ask(s, op, payload=b"", **f):
    r, p = call(s, op, payload, **f)
    seen.append(repr(r).encode() + p)
    return r, p
s = connect(path)
o = open_session(s, creds)
seen.append(repr(o).encode())
print("open", "ok" if o["ok"] else "refused")
sur = o["surrogates"]["gh"]
r, p = ask(s, "resolve", session=o["session"], surrogate=sur, host="api.example.com")
print("resolve", "ok" if r["ok"] else "refused", r.get("errno", ""), p == token)
r, p = ask(s, "headers", session=o["session"], host="api.example.com")
print("headers", "ok" if r["ok"] else "refused", r.get("errno", ""), token in p)
r, p = ask(s, "redact", token[:-1], session=o["session"], stream=0)
print("redact", "ok" if r["ok"] else "refused", r.get("errno", ""), len(p))
r, p = ask(s, "read", session=o["session"], name="gh")
print("read", "ok" if r["ok"] else "refused", p == sur.encode())
print("leaked", any(token in x for x in seen))'

out=$("${nobody[@]}" env PYTHONPATH="$PYTHONPATH" "$IT_PY" -c "$client" "$sock" "$token" 2>&1)
it_log "# uid 65534: $(tr '\n' ';' <<<"$out")"
assert_contains "$out" "open ok" "another uid opens a session of vault credentials (surrogates)"
assert_contains "$out" "resolve refused EPERM False" "... but its resolve is refused"
assert_contains "$out" "headers refused EPERM False" "... and so are sidecar headers"
assert_contains "$out" "redact refused EPERM 0" "... and redaction (an oracle of the values)"
assert_contains "$out" "read ok True" "... read still gives the surrogate"
assert_contains "$out" "leaked False" "the real value is in no answer to the other uid"
assert_contains "$(grep '"kind":"violation"' "$audit")" '"peer_uid":65534' \
	"the refusals are audited as violations"

out=$(python3 -c "$client" "$sock" "$token" 2>&1)
assert_contains "$out" "resolve ok  True" "the daemon's own uid still resolves"
assert_contains "$out" "headers ok  True" "... and gets its sidecar headers"

# airlock run by uid 65534 against this daemon: refused before the command runs.
bin=$IT_TMP/bin
mkdir -p "$bin"
install -m 755 "$AIRLOCK" "$bin/airlock"
chown 65534:65534 "$WS"
policy=$IT_TMP/policy.json
write_policy "$policy" <<EOF2
{"workspace": {"root": "$WS"}, "resources": {"timeout": "60s", "memory": "max", "pids": "max"},
 "credentials": [{"name": "gh", "source": {"type": "vault"},
   "injection": {"type": "env_var", "var_name": "GITHUB_TOKEN"}, "hosts": ["api.example.com"]}]}
EOF2
chmod 644 "$policy"
(cd / && "$ITRUN" -t "$IT_WATCHDOG" -- "${nobody[@]}" env -i PATH=/usr/bin:/bin \
	"AIRLOCK_IT_RUN=$AIRLOCK_IT_RUN" "AIRLOCK_BROKER=$sock" "$bin/airlock" run -p "$policy" -- /bin/sh -c 'echo ran >/workspace/ran') \
	>"$IT_TMP/al.out" 2>"$IT_TMP/al.err"
rc=$?
err=$(cat "$IT_TMP/al.err")
assert_eq 125 "$rc" "airlock run by another uid with a credential from that daemon is refused"
assert_one_error_line "$err" "... with one error line"
assert_contains "$err" "credential gh" "... naming the credential"
assert_contains "$err" "no-broker" "... and pointing to airlock's own broker"
assert_false "... before the command runs" test -e "$WS/ran"

kill -TERM "$broker_pid"
wait "$broker_pid"
assert_not_contains "$(cat "$audit" "$log")" "$token" "no secret in the audit or the daemon's log"
it_finish
