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
mkdir -p "$WS/.config"
printf 'file-%s' "$secret" >"$IT_TMP/secret-file"
chmod 600 "$IT_TMP/secret-file"

probe='
try() { if eval "$1" 2>/tmp/e; then echo "$2: ok"; else echo "$2: $(sed "s/.*: //" /tmp/e)"; fi; }
echo "api=$(cat /run/secrets/api)"
echo "api-again=$(cat /run/secrets/api)"
echo "token=$(cat /workspace/.config/token)"
echo "fromfile=$(cat /workspace/fromfile)"
echo "mode=$(stat -c %a /run/secrets/api) $(stat -c %a /workspace/.config/token)"
echo "listed=$(ls -A /workspace/.config | tr "\n" " ")$(ls /workspace | grep -c fromfile)"
try "echo x >/run/secrets/api" write-bound
try "echo x >/workspace/.config/token" write-inside
try "chmod 644 /workspace/.config/token" chmod
try "mv /workspace/.config/token /workspace/t2" rename
try "rm /workspace/.config/token" remove
try "ln /workspace/.config/token /workspace/t3" link
'
IT_SECRET=$secret al_run run -p "$policy" --audit "$audit" -- /bin/sh -c "$probe"
assert_eq 0 "$AL_RC" "the credential probe ran"
assert_contains "$AL_OUT" "api=$secret" "an exposed credential file gives the real value at /run/secrets"
assert_contains "$AL_OUT" "api-again=$secret" "each open asks again"
assert_match "token=airlock_sur_[0-9a-f]{48}" "$(grep '^token=' <<<"$AL_OUT")" \
	"a credential file without expose gives a surrogate, inside the workspace"
assert_not_contains "$(grep '^token=' <<<"$AL_OUT")" "$secret" "the surrogate is not the secret"
assert_contains "$AL_OUT" "fromfile=file-$secret" "a file source is read at open"
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

# A source that cannot be read fails the open, not the run; the name is in the audit.
env -u IT_SECRET "$ITRUN" -t "$IT_WATCHDOG" -- "$AIRLOCK" run -p "$policy" -- /bin/sh -c 'cat /run/secrets/api; echo rc=$?' >"$IT_TMP/al.out" 2>&1
assert_contains "$(cat "$IT_TMP/al.out")" "rc=1" "a credential whose source is missing cannot be opened"

# Sources the embedded broker cannot read yet are refused before the command runs.
write_policy "$policy" <<EOF2
{"workspace": {"root": "$WS"},
 "credentials": [{"name": "v", "source": {"type": "vault"}, "expose": true,
   "injection": {"type": "file", "path": "/run/secrets/v"}, "hosts": ["a.example.com"]}]}
EOF2
al_run run -p "$policy" -- /bin/true
assert_eq 125 "$AL_RC" "an exposed credential file from an unserved source is refused"
assert_contains "$AL_ERR" "credentials[0] (v)" "the refusal names the credential"

it_finish
