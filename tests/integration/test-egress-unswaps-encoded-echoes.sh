#!/usr/bin/env bash
# The egress proxy turns a real value that a credential's bound host echoes back into the
# surrogate in every encoding the host may use, not only as it is: JSON-escaped (any bytes as
# \u00XX in either case, '/' as \/), percent-encoded (all or some bytes, upper- or lower-case hex),
# and hex (lower and upper case). A compressed body that follows a real value is refused whatever
# its headers say (gzip with and without Content-Encoding). curl inside the sandbox receives the
# bodies; no form of the real value is in any of them. Also reports the time of a 10 MiB download
# through the intercepted host.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

rand() { head -c 96 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c "$1"; }
# A token-shaped value (its surrogate as long), and one with '/' (a generic surrogate, longer).
token=ghp_$(rand 36)
token2=key/$(rand 20)/$(rand 12)
export IT_TOKEN=$token IT_TOKEN2=$token2
sp=$(it_port)

pki=$IT_TMP/pki
mkdir -p "$pki" "$IT_TMP/www"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
	-subj "/CN=airlock test CA" -keyout "$pki/ca.key" -out "$pki/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=api.test" \
	-keyout "$pki/srv.key" -out "$pki/srv.csr" 2>/dev/null
printf 'subjectAltName=DNS:api.test\n' >"$pki/ext"
openssl x509 -req -in "$pki/srv.csr" -CA "$pki/ca.pem" -CAkey "$pki/ca.key" -CAcreateserial \
	-days 2 -extfile "$pki/ext" -out "$pki/srv.pem" 2>/dev/null
head -c $((10 * 1024 * 1024)) /dev/urandom >"$IT_TMP/www/big.bin"

up=$IT_TMP/upstream.jsonl
: >"$up"
it_upstream "$IT_TMP/up.out" "$sp" "$up" --tls "$pki/srv.pem" "$pki/srv.key" --root "$IT_TMP/www"

policy=$IT_TMP/policy.json
write_policy "$policy" <<EOF2
{"workspace": {"root": "$WS"},
 "network": {"default": "deny",
  "rules": [{"destination": "api.test", "port": $sp, "action": "allow"},
            {"destination": "127.0.0.0/8", "port": $sp, "action": "allow"}],
  "resolve": {"api.test": "127.0.0.1"}},
 "credentials": [
  {"name": "tok", "source": {"type": "env", "var": "IT_TOKEN"},
   "injection": {"type": "env_var", "var_name": "TOKEN"}, "hosts": ["api.test"]},
  {"name": "tok2", "source": {"type": "env", "var": "IT_TOKEN2"},
   "injection": {"type": "env_var", "var_name": "TOKEN2"}, "hosts": ["api.test"]}]}
EOF2

encs="json pct-upper pct-lower pct-mixed hex-lower hex-upper gzip gzip-bare"
probe='
S=https://api.test:'$sp'
printf "%s" "$TOKEN" >/workspace/sur1
printf "%s" "$TOKEN2" >/workspace/sur2
for t in 1 2; do
	if [ $t = 1 ]; then v=$TOKEN; else v=$TOKEN2; fi
	for e in '"$encs"'; do
		curl -sS -m 10 -H "Authorization: Bearer $v" -o /workspace/enc-$t-$e "$S/echo-enc?enc=$e" \
			2>/workspace/err-$t-$e
		echo $? >/workspace/rc-$t-$e
	done
done
start=$(date +%s%N)
curl -sS -m 60 -H "Authorization: Bearer $TOKEN" -o /tmp/big.bin "$S/big.bin"
echo "$? $(( ($(date +%s%N) - start) / 1000000 ))" >/workspace/big
sha256sum </tmp/big.bin | cut -c1-64 >/workspace/big.sha
'
sb_run -p "$policy" --upstream-ca "$pki/ca.pem" --json -- /bin/sh -c "$probe"
assert_eq 0 "$AL_RC" "the sandbox runs"
sur1=$(cat "$WS/sur1")
sur2=$(cat "$WS/sur2")
assert_match '^ghp_[A-Za-z0-9]{36}$' "$sur1" "the first token's surrogate is token-shaped"
assert_ne "$token2" "$sur2" "the second token has a surrogate"

# Decodes a captured body the way its encoding was made, and says which values it holds.
holds() {
	python3 - "$1" "$2" "$3" "$4" <<'PY'
import binascii, json, re, sys, urllib.parse
path, enc, real, sur = sys.argv[1:]
data = open(path, "rb").read()
forms = {"raw": data.decode("latin-1")}
if enc == "json":
    forms["decoded"] = json.loads(data)["auth"]
elif enc.startswith("pct"):
    forms["decoded"] = urllib.parse.unquote(data.decode()[2:])
elif enc.startswith("hex"):
    forms["decoded"] = binascii.unhexlify(data).decode("latin-1")
found = [k for k, v in forms.items() if real in v]
print("real:" + ",".join(found) if found else "clean",
      "sur" if any(sur in v for v in forms.values()) else "nosur")
PY
}
for t in 1 2; do
	if [ $t = 1 ]; then real=$token sur=$sur1; else real=$token2 sur=$sur2; fi
	for e in json pct-upper pct-lower pct-mixed hex-lower hex-upper; do
		assert_eq 0 "$(cat "$WS/rc-$t-$e")" "token $t, $e: curl gets the echo"
		assert_eq "clean sur" "$(holds "$WS/enc-$t-$e" "$e" "$real" "$sur")" \
			"token $t, $e: the body holds the surrogate, never the real value (raw or decoded)"
	done
	for e in gzip gzip-bare; do
		assert_ne 0 "$(cat "$WS/rc-$t-$e")" "token $t, $e: a compressed echo is refused ($(head -c 80 "$WS/err-$t-$e"))"
		assert_false "token $t, $e: ... and curl received no body" test -s "$WS/enc-$t-$e"
	done
done
assert_eq 16 "$(grep -c 'echo-enc' "$up")" "every request reached the upstream with the real value"
assert_eq 0 "$(grep -rlF -e "$token" -e "$token2" "$WS" | wc -l)" "no file of the sandbox holds a real value"
assert_eq true "$(json_get "$IT_TMP/al.out" 'any("compressed" in v["detail"] for v in d["violations"])')" \
	"the compressed responses are violations in the result"
read -r big_rc big_ms <"$WS/big"
assert_eq 0 "$big_rc" "a 10 MiB download through the intercepted host works"
assert_eq "$(sha256sum <"$IT_TMP/www/big.bin" | cut -c1-64)" "$(cat "$WS/big.sha")" "... intact"
it_log "10 MiB through the intercepted host: ${big_ms} ms"

it_finish
