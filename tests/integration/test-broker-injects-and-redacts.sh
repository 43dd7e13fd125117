#!/usr/bin/env bash
# airlock run with credentials, through the broker daemon and through the embedded broker: an
# env_var credential gives the sandbox a surrogate shaped like the token (or the real value with
# expose), a file credential the surrogate, a sidecar credential a header only the proxy sees; the
# surrogate resolves to the vault's value for bound hosts only; every real value is redacted from
# the sandbox's output, also split across writes and in --json; the session ends with the run,
# also when airlock is killed; and no secret is left in any log, error or audit file.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

export PYTHONPATH=$IT_SOURCE_ROOT/tests/integration/helpers
rand() { head -c 96 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c "$1"; }
gh_token=ghp_$(rand 36)
exposed=exposed-$(rand 24)
side=side-$(rand 24)
export IT_EXPOSED=$exposed IT_SIDE=$side
vault=$IT_TMP/vault
key=$IT_TMP/vault.key
head -c 32 /dev/urandom >"$key"
chmod 600 "$key"
sock=$IT_TMP/$IT_MARK.sock
baudit=$IT_TMP/broker-audit.jsonl
raudit=$IT_TMP/run-audit.jsonl
log=$IT_TMP/broker.log

printf '%s\n' "$gh_token" | "$AIRLOCK" secret put gh --vault "$vault" --key-file "$key"
"$AIRLOCK" secret bind gh --hosts api.github.com,uploads.github.com --vault "$vault" --key-file "$key"
assert_true "the vault holds the token" test -s "$vault"

policy=$IT_TMP/policy.json
write_policy "$policy" <<EOF2
{"workspace": {"root": "$WS"},
 "credentials": [
  {"name": "gh", "source": {"type": "vault"},
   "injection": {"type": "env_var", "var_name": "GITHUB_TOKEN"}, "hosts": ["api.github.com"]},
  {"name": "ex", "source": {"type": "env", "var": "IT_EXPOSED"}, "expose": true,
   "injection": {"type": "env_var", "var_name": "EXPOSED"}, "hosts": ["api.example.com"]},
  {"name": "file", "source": {"type": "vault", "key": "gh"},
   "injection": {"type": "file", "path": "/run/secrets/gh"}, "hosts": ["api.github.com"]},
  {"name": "side", "source": {"type": "env", "var": "IT_SIDE"},
   "injection": {"type": "sidecar", "header": "Authorization", "format": "Bearer {}"},
   "hosts": ["api.example.com"]}]}
EOF2
it_admit "$policy" # an exposed credential: tier 3

"$AIRLOCK" broker --vault "$vault" --key-file "$key" --socket "$sock" --audit "$baudit" >>"$log" 2>&1 &
broker_pid=$!
wait_for 10 "$AIRLOCK" broker status --socket "$sock" >/dev/null 2>&1
assert_true "the daemon serves the vault" "$AIRLOCK" broker status --socket "$sock"

# The sandbox writes what it was given into the workspace and waits, so that the test can ask the
# broker about this run's session while it lives.
probe='
printf "%s" "$GITHUB_TOKEN" >/workspace/env-token
cat /run/secrets/gh >/workspace/file-token
printf "%s" "$EXPOSED" | sha256sum | cut -c1-32 >/workspace/exposed-sha
env | grep -c "^IT_" >/workspace/leaked-vars
echo "exposed=$EXPOSED"
printf "split=%.12s" "$EXPOSED"; sleep 0.2; printf "%s.\n" "${EXPOSED#????????????}"
echo "stderr=$EXPOSED" >&2
read -r go
'
# It waits on its stdin, a FIFO the test holds open.
mkfifo "$IT_TMP/go"
"$ITRUN" -t "$IT_WATCHDOG" -- "$AIRLOCK" run --admitted "$IT_TMP/admitted" --broker "$sock" --audit "$raudit" -p "$policy" \
	-- /bin/sh -c "$probe" <"$IT_TMP/go" >"$IT_TMP/run.out" 2>"$IT_TMP/run.err" &
run_pid=$!
exec 9>"$IT_TMP/go"
wait_for 20 test -s "$WS/leaked-vars"
sur=$(cat "$WS/env-token")
assert_match '^ghp_[A-Za-z0-9]{36}$' "$sur" "the sandbox's GITHUB_TOKEN is shaped like a GitHub token"
assert_ne "$gh_token" "$sur" "... and is a surrogate, not the token"
assert_match '^ghp_[A-Za-z0-9]{36}$' "$(cat "$WS/file-token")" "a credential file gives a shaped surrogate"
assert_ne "$sur" "$(cat "$WS/file-token")" "each credential has its own surrogate"
assert_eq "$(printf '%s' "$exposed" | sha256sum | cut -c1-32)" "$(cat "$WS/exposed-sha")" \
	"an exposed env_var credential gives the real value"
assert_eq 0 "$(cat "$WS/leaked-vars")" "no source variable of the broker reaches the sandbox"

python3 - "$sock" >"$IT_TMP/py.out" 2>&1 <<'EOF'
import sys
from broker_proto import call, connect
def say(what, ok):
    print(("ok " if ok else "FAIL ") + what, flush=True)
r, _ = call(connect(sys.argv[1]), "list")
sessions = r["sessions"]
say("the run has one session with the broker", len(sessions) == 1)
say("the session lists the policy's credentials",
    sorted(sessions[0]["credentials"]) == ["ex", "file", "gh", "side"])
say("a list shows a session's tag, never its id (the capability to use it)",
    "id" not in sessions[0] and len(sessions[0]["tag"]) == 16)
EOF
while read -r verdict what; do
	if [ "$verdict" = ok ]; then it_pass "$what"; else it_fail "$what"; fi
done <"$IT_TMP/py.out"

echo go >&9
exec 9>&-
wait "$run_pid"
assert_eq 0 "$?" "the run succeeded"
out=$(cat "$IT_TMP/run.out")
assert_contains "$out" "exposed=[REDACTED:ex]" "an exposed value printed by the sandbox is redacted"
assert_contains "$out" "split=[REDACTED:ex]." "... also when split across two writes"
assert_contains "$(cat "$IT_TMP/run.err")" "stderr=[REDACTED:ex]" "... and on stderr"
out=$("$AIRLOCK" broker sessions --socket "$sock")
assert_contains "$out" '"sessions": [' "the daemon answers the list"
assert_not_contains "$out" '"label"' "the session ended with the run"

# --json: the captured output is redacted too.
al_run run --admitted "$IT_TMP/admitted" --broker "$sock" --json -p "$policy" -- /bin/sh -c \
	'printf "a%.6s" "$EXPOSED"; sleep 0.1; printf "%sb" "${EXPOSED#??????}"'
assert_eq "a[REDACTED:ex]b" "$(json_get "$IT_TMP/al.out" 'd["stdout"]')" "--json output is redacted"

# A run killed outright: its connection closes, so its session ends.
"$AIRLOCK" run --admitted "$IT_TMP/admitted" --broker "$sock" -p "$policy" -- /bin/sleep 60 >/dev/null 2>&1 &
killed=$!
wait_for 20 sh -c "'$AIRLOCK' broker sessions --socket '$sock' | grep -q label"
kill -KILL "$killed"
wait "$killed" 2>/dev/null
assert_true "the session of a SIGKILLed airlock ends" \
	wait_for 10 sh -c "! '$AIRLOCK' broker sessions --socket '$sock' | grep -q label"

# The vault's binding limits what a policy may ask.
sed 's/"hosts": \["api.github.com"\]}/"hosts": ["api.github.com", "evil.example.net"]}/' "$policy" \
	>"$IT_TMP/wide.json"
it_admit "$IT_TMP/wide.json"
al_run run --admitted "$IT_TMP/admitted" --broker "$sock" -p "$IT_TMP/wide.json" -- /bin/true
assert_eq 125 "$AL_RC" "a policy binding a vault secret to a host the vault does not allow is refused"
assert_contains "$AL_ERR" "credential gh: the vault binds \"gh\" to other hosts than evil.example.net" \
	"the refusal names the credential and the host"

# A vault secret bound to hosts is never exposed.
sed 's/"injection": {"type": "env_var", "var_name": "GITHUB_TOKEN"}, "hosts"/"expose": true, "injection": {"type": "env_var", "var_name": "GITHUB_TOKEN"}, "hosts"/' \
	"$policy" >"$IT_TMP/expose.json"
it_admit "$IT_TMP/expose.json"
al_run run --admitted "$IT_TMP/admitted" --broker "$sock" -p "$IT_TMP/expose.json" -- /bin/true
assert_eq 125 "$AL_RC" "exposing a vault secret that is bound to hosts is refused"
assert_contains "$AL_ERR" "never exposed" "... saying why"

# The broker's socket is out of every sandbox's reach, even through a read-only bind.
python3 -c 'import json, sys
p = json.load(open(sys.argv[1]))
p["mounts"] = [{"source": sys.argv[2], "target": "/mnt/t", "mode": "ro"}]
print(json.dumps(p))' "$policy" "$IT_TMP" >"$IT_TMP/bind.json"
it_admit "$IT_TMP/bind.json"
al_run run --admitted "$IT_TMP/admitted" --broker "$sock" -p "$IT_TMP/bind.json" -- /bin/true
assert_eq 125 "$AL_RC" "a read-only bind of the broker socket's folder is refused"
assert_contains "$AL_ERR" "credential broker's folder" "... naming why"

kill -TERM "$broker_pid"
wait "$broker_pid"

# The embedded broker: no daemon, the vault opened by airlock run itself.
al_run run --admitted "$IT_TMP/admitted" --no-broker --vault "$vault" --key-file "$key" -p "$policy" -- /bin/sh -c \
	'echo "gh=$GITHUB_TOKEN"; echo "ex=$EXPOSED"'
assert_eq 0 "$AL_RC" "the embedded broker serves the same policy"
assert_match '^gh=ghp_[A-Za-z0-9]{36}$' "$(grep '^gh=' <<<"$AL_OUT")" "... with a shaped surrogate"
assert_contains "$AL_OUT" "ex=[REDACTED:ex]" "... and redacts the same way"
al_run run --admitted "$IT_TMP/admitted" --no-broker --vault "$vault" -p "$policy" -- /bin/true
assert_eq 125 "$AL_RC" "without a key the embedded broker refuses the run"
assert_contains "$AL_ERR" "credential gh: vault source" "... naming the credential"

for f in "$baudit" "$raudit" "$log" "$IT_TMP/run.out" "$IT_TMP/run.err" "$IT_TMP/al.out" "$IT_TMP/al.err"; do
	for secret in "$gh_token" "$exposed" "$side"; do
		if grep -qF -- "$secret" "$f" 2>/dev/null; then
			it_fail "no secret in $(basename "$f")"
			continue 2
		fi
	done
	it_pass "no secret in $(basename "$f")"
done
assert_contains "$(cat "$baudit")" '"action":"read","credential":"file"' \
	"the broker audited the credential file's read"
it_finish
