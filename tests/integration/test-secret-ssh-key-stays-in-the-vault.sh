#!/usr/bin/env bash
# `airlock secret put --ssh-key` (issue 19 item 1): OpenSSH private keys made by Debian's
# ssh-keygen (Ed25519 without a passphrase; ECDSA P-256 and RSA 3072 with one) go into the vault
# through stdin or --from-file, the passphrase read once from --ssh-passphrase-file (or asked on
# the terminal; without one, refused); each prints, and `secret ls` (text and --json) shows, the
# fingerprint that ssh-keygen -l shows, never the key. Refused, each with one line and the vault
# left byte-identical: a wrong passphrase, a protected key without its passphrase, a key in
# another format (PEM), a key whose public part is not its private key's, and the key stored as
# a plain secret (it would be handed out as one). No credential may use an SSH key's entry as a
# value (exit 125 before anything runs). Nothing of the key is in the vault file in the clear,
# nor in any output.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

command -v ssh-keygen >/dev/null || it_fail "ssh-keygen is missing (Debian package openssh-client)"
unset AIRLOCK_VAULT AIRLOCK_PASSPHRASE_FILE

key=$IT_TMP/vault.key
head -c 32 /dev/urandom >"$key"
chmod 600 "$key"
V=$IT_TMP/vault
pass=$IT_TMP/pass
printf 'correct horse %s\n' "$IT_MARK" >"$pass"
kdir=$IT_TMP/keys
mkdir "$kdir"
ssh-keygen -q -t ed25519 -N '' -C "ed@$IT_MARK" -f "$kdir/ed"
ssh-keygen -q -t ecdsa -b 256 -N "correct horse $IT_MARK" -C "ec@$IT_MARK" -f "$kdir/ec"
ssh-keygen -q -t rsa -b 3072 -N "correct horse $IT_MARK" -C "rsa@$IT_MARK" -f "$kdir/rsa"
ssh-keygen -q -t ecdsa -m PEM -N '' -f "$kdir/pem"
fp() { ssh-keygen -lf "$kdir/$1.pub" | awk '{print $2}'; }

kv()
{
	al_run secret --vault "$V" --key-file "$key" "$@"
	cat "$IT_TMP/al.out" "$IT_TMP/al.err" >>"$IT_TMP/all.out"
}

kv put --ssh-key ed <"$kdir/ed"
assert_eq 0 "$AL_RC" "an Ed25519 key without a passphrase goes in from stdin"
assert_eq "ed ssh-ed25519 $(fp ed)" "$AL_OUT" "... and put prints its type and ssh-keygen's fingerprint"
kv put --ssh-key ec --from-file "$kdir/ec" --ssh-passphrase-file "$pass"
assert_eq "ec ecdsa-sha2-nistp256 $(fp ec)" "$AL_OUT" "an ECDSA key with a passphrase goes in from --from-file"
kv put --ssh-key rsa --ssh-passphrase-file "$pass" <"$kdir/rsa"
assert_eq "rsa ssh-rsa $(fp rsa)" "$AL_OUT" "an RSA 3072 key with a passphrase goes in"

kv ls
assert_match "^ed +- +[0-9TZ:-]+ +[0-9TZ:-]+ +ssh-ed25519 +$(fp ed | sed 's/[+/]/./g')\$" \
	"$(grep '^ed ' <<<"$AL_OUT")" "secret ls shows the key's type and fingerprint"
kv ls --json
printf '%s' "$AL_OUT" >"$IT_TMP/ls.json"
assert_eq "$(fp rsa)" "$(json_get "$IT_TMP/ls.json" '[e for e in d if e["name"] == "rsa"][0]["ssh_key"]["fingerprint"]')" \
	"secret ls --json gives the fingerprint"
assert_eq "rsa@$IT_MARK" "$(json_get "$IT_TMP/ls.json" '[e for e in d if e["name"] == "rsa"][0]["ssh_key"]["comment"]')" \
	"... and the key's comment"

# Refusals: one line each, the vault unchanged.
cp "$V" "$IT_TMP/before"
refused()
{
	local what=$1 want=$2
	shift 2
	kv "$@"
	assert_ne 0 "$AL_RC" "$what is refused"
	assert_contains "$AL_ERR" "$want" "... saying so"
	assert_eq 1 "$(grep -c . <<<"$AL_ERR")" "... in one line"
	assert_true "... and the vault is unchanged" cmp -s "$V" "$IT_TMP/before"
}
printf 'not it\n' >"$IT_TMP/wrong"
refused "a wrong passphrase" "wrong passphrase for the SSH key" \
	put --ssh-key ec2 --ssh-passphrase-file "$IT_TMP/wrong" --from-file "$kdir/ec"
refused "a protected key without a passphrase or a terminal" "protected by a passphrase" \
	put --ssh-key ec2 --from-file "$kdir/ec"
refused "the key as a plain secret" "is an SSH private key: store it with airlock secret put --ssh-key" \
	put plain --from-file "$kdir/ed"
refused "a key in another format (PEM)" "not an OpenSSH private key" put --ssh-key pem --from-file "$kdir/pem"
# The public half of another key put in place of this one's: the file no longer holds one key.
/usr/bin/python3 - "$kdir/ed" "$kdir/other" <<'EOF'
import base64, struct, subprocess, sys
text = open(sys.argv[1]).read().splitlines()
blob = bytearray(base64.b64decode("".join(text[1:-1])))
# after the magic: cipher, KDF and its options (strings), the number of keys, the public key
off = 15
for _ in range(3):
    (n,) = struct.unpack(">I", blob[off:off + 4]); off += 4 + n
off += 4
(n,) = struct.unpack(">I", blob[off:off + 4])
blob[off + 4 + n - 1] ^= 1
b = base64.b64encode(bytes(blob)).decode()
open(sys.argv[2], "w").write(text[0] + "\n" + "\n".join(b[i:i + 70] for i in range(0, len(b), 70)) + "\n" + text[-1] + "\n")
EOF
refused "a key whose public part is not its private key's" "does not match its public key" \
	put --ssh-key other --from-file "$kdir/other"
assert_eq "ec ed rsa" "$(kv ls --json; printf '%s' "$AL_OUT" >"$IT_TMP/ls.json"; json_get "$IT_TMP/ls.json" '" ".join(e["name"] for e in d)')" \
	"the vault holds the three keys and nothing else"

# No credential hands an SSH key out as a value.
write_policy "$IT_TMP/p.json" <<EOF
{"credentials": [{"name": "ed", "source": {"type": "vault"},
  "injection": {"type": "env_var", "var_name": "KEY"}, "hosts": ["example.test"]}]}
EOF
it_admit "$IT_TMP/p.json"
sb_run --admitted "$IT_TMP/admitted" --no-broker --vault "$V" --key-file "$key" \
	-p "$IT_TMP/p.json" -- /bin/true
assert_eq 125 "$AL_RC" "a credential naming an SSH key's entry is refused before anything runs"
assert_contains "$AL_ERR" "is an SSH key, which only signs" "... saying why"

# Nothing of the keys in the clear: not in the vault file, not in any output.
for k in ed ec rsa; do
	line=$(sed -n 3p "$kdir/$k")
	assert_eq 0 "$(grep -c -F -- "$line" "$V" "$IT_TMP/all.out" "$IT_TMP/al.err" | awk -F: '{s+=$2} END {print s}')" \
		"no line of the $k key file is in the vault or in airlock's output"
done
assert_eq 0 "$(grep -c -F "correct horse" "$V" "$IT_TMP/all.out" | awk -F: '{s+=$2} END {print s}')" \
	"nor the passphrase"

it_finish
