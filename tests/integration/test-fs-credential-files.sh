#!/usr/bin/env bash
# A credential with injection "file" is a read-only 0400 virtual file at its path, inside the
# workspace or bound elsewhere (/run/secrets/NAME). Its content is asked at every open (the real
# value only with "expose": true, else a surrogate), never written to any disk, each read is
# audited, and writes, renames, chmod and removal fail with EPERM.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

secret=real-secret-$IT_MARK
audit=$IT_TMP/audit.jsonl
policy=$IT_TMP/creds.json
write_policy "$policy" <<EOF2
{"workspace": {"root": "$WS"},
 "credentials": [
  {"name": "api", "source": {"type": "env", "var": "IT_SECRET"}, "expose": true,
   "injection": {"type": "file", "path": "/run/secrets/api"}, "hosts": ["api.example.com"]},
  {"name": "token", "source": {"type": "env", "var": "IT_SECRET"},
   "injection": {"type": "file", "path": "/workspace/.config/token"}, "hosts": ["api.example.com"]},
  {"name": "fromfile", "source": {"type": "file", "path": "$IT_TMP/secret-file"}, "expose": true,
   "injection": {"type": "file", "path": "/workspace/fromfile"}, "hosts": ["api.example.com"]}]}
EOF2
it_admit "$policy" # exposed credentials, a file source: tier 3
mkdir -p "$WS/.config"
printf 'file-%s' "$secret" >"$IT_TMP/secret-file"
chmod 600 "$IT_TMP/secret-file"

probe='
try() { if eval "$1" 2>/tmp/e; then echo "$2: ok"; else echo "$2: $(sed "s/.*: //" /tmp/e)"; fi; }
# Exposed values are redacted in the output: show their hashes.
echo "api=$(sha256sum </run/secrets/api | cut -c1-32)"
echo "api-again=$(sha256sum </run/secrets/api | cut -c1-32)"
echo "api-raw=$(cat /run/secrets/api)"
echo "token=$(cat /workspace/.config/token)"
echo "fromfile=$(sha256sum </workspace/fromfile | cut -c1-32)"
echo "mode=$(stat -c %a /run/secrets/api) $(stat -c %a /workspace/.config/token)"
echo "listed=$(ls -A /workspace/.config | tr "\n" " ")$(ls /workspace | grep -c fromfile)"
try "echo x >/run/secrets/api" write-bound
try "echo x >/workspace/.config/token" write-inside
try "chmod 644 /workspace/.config/token" chmod
try "mv /workspace/.config/token /workspace/t2" rename
try "rm /workspace/.config/token" remove
try "ln /workspace/.config/token /workspace/t3" link
'
IT_SECRET=$secret al_run run --admitted "$IT_TMP/admitted" -p "$policy" --audit "$audit" -- /bin/sh -c "$probe"
assert_eq 0 "$AL_RC" "the credential probe ran"
sha() { printf '%s' "$1" | sha256sum | cut -c1-32; }
assert_contains "$AL_OUT" "api=$(sha "$secret")" "an exposed credential file gives the real value at /run/secrets"
assert_contains "$AL_OUT" "api-again=$(sha "$secret")" "every open gives the value"
assert_contains "$AL_OUT" "api-raw=[REDACTED:api]" "the real value is redacted in the sandbox's output"
assert_match "token=airlock_sur_[A-Za-z0-9]{32}" "$(grep '^token=' <<<"$AL_OUT")" \
	"a credential file without expose gives a surrogate, inside the workspace"
assert_not_contains "$(grep '^token=' <<<"$AL_OUT")" "$secret" "the surrogate is not the secret"
assert_contains "$AL_OUT" "fromfile=$(sha "file-$secret")" "a file source is read"
assert_contains "$AL_OUT" "mode=400 400" "credential files are mode 0400"
assert_contains "$AL_OUT" "listed=token 1" "credential files in the workspace are listed in their folders"
# Inside the workspace the kernel checks the mode first: a write is refused as for any 0400 file.
assert_contains "$AL_OUT" "write-inside: Permission denied" "writing a workspace credential file is refused"
for op in write-bound chmod rename remove link; do
	assert_contains "$AL_OUT" "$op: Operation not permitted" "$op on a credential file gets EPERM"
done
reads=$(grep -c '"op":"read".*"credential"' "$audit" || true)
assert_true "every read of a credential file is audited (got $reads)" test "$reads" -ge 4
assert_contains "$(cat "$audit")" '"op":"credential"' "every open of a credential file is audited"
assert_not_contains "$(cat "$audit")" "$secret" "the audit never holds the secret"
assert_eq "" "$(grep -rl "$secret" "$WS" /tmp /var/tmp /dev/shm 2>/dev/null | grep -v -e "$IT_TMP/secret-file" -e "$IT_TMP/al.out" || true)" \
	"the secret was written to no file on disk"
assert_eq no "$([ -e "$WS/.config/token" ] && echo yes || echo no)" \
	"no file is left at the credential's workspace path"

# Many threads of the sandbox opening credential files at once: the workspace daemon's threads
# share one broker connection, one exchange at a time.
IT_SECRET=$secret al_run run --admitted "$IT_TMP/admitted" -p "$policy" -- /bin/sh -c '
for i in 1 2 3 4 5 6 7 8; do
	(for j in $(seq 40); do cat /run/secrets/api /workspace/.config/token >/dev/null || echo bad; done) &
done
wait; echo done'
assert_eq "done" "$AL_OUT" "320 concurrent opens of credential files all succeed"

# Every source is read when the session opens: one that cannot be read stops the run before the
# command runs, with one line naming the credential and its source.
env -u IT_SECRET "$ITRUN" -t "$IT_WATCHDOG" -- "$AIRLOCK" run --admitted "$IT_TMP/admitted" -p "$policy" -- /bin/sh -c 'echo ran' >"$IT_TMP/al.out" 2>"$IT_TMP/al.err"
assert_eq 125 "$?" "a credential whose source is missing refuses the run"
assert_eq "" "$(cat "$IT_TMP/al.out")" "the command did not run"
assert_contains "$(cat "$IT_TMP/al.err")" "credential api: env source" "the refusal names the credential and its source"

write_policy "$policy" <<EOF2
{"workspace": {"root": "$WS"},
 "credentials": [{"name": "v", "source": {"type": "vault"}, "expose": true,
   "injection": {"type": "file", "path": "/run/secrets/v"}, "hosts": ["a.example.com"]}]}
EOF2
it_admit "$policy" # an exposed credential: tier 3
AIRLOCK_VAULT=$IT_TMP/no-vault al_run run --admitted "$IT_TMP/admitted" --no-broker -p "$policy" -- /bin/true
assert_eq 125 "$AL_RC" "a vault credential without a vault is refused"
assert_contains "$AL_ERR" "credential v: vault source: vault $IT_TMP/no-vault does not exist" "the refusal names the credential and the vault"

it_finish
