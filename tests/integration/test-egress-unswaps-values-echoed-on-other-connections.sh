#!/usr/bin/env bash
# A credential's bound host that shows a real value sent earlier on another connection (a "last
# request" debug endpoint, a request-inspection service) shows the sandbox the surrogate: every
# intercepted connection to a bound host, and every inspected plain-HTTP one, turns back every real
# value bound to that host from its first response byte, whether or not a surrogate was swapped
# on it. Also: a base64 echo of Basic credentials whose surrogate is longer than the value comes
# back as exactly the encoding of the sandbox's own credentials (no bit of the real value's
# encoding left), and a compressed response (Content-Encoding) from a bound host is refused even
# on a connection that carried no value, while a compressed file (no Content-Encoding) is not.
# The bound host's address itself (api.test is pinned to it) is refused, every way: connections by
# address are not searched for values, so the host's echo would hand one over (found by review).
# Reports the time of 200 new intercepted connections.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

rand() { head -c 96 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c "$1"; }
# A token-shaped value (its surrogate as long), and one of 40 characters that gets the generic
# surrogate (44).
token=ghp_$(rand 36)
token2=$(rand 40)
export IT_TOKEN=$token IT_TOKEN2=$token2
sp=$(it_port)
pp=$((sp + 1))

pki=$IT_TMP/pki
mkdir -p "$pki" "$IT_TMP/www"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
	-subj "/CN=airlock test CA" -keyout "$pki/ca.key" -out "$pki/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=api.test" \
	-keyout "$pki/srv.key" -out "$pki/srv.csr" 2>/dev/null
printf 'subjectAltName=DNS:api.test\n' >"$pki/ext"
openssl x509 -req -in "$pki/srv.csr" -CA "$pki/ca.pem" -CAkey "$pki/ca.key" -CAcreateserial \
	-days 2 -extfile "$pki/ext" -out "$pki/srv.pem" 2>/dev/null
printf 'a compressed file\n' | gzip >"$IT_TMP/www/file.gz"

# The same host over TLS and in plain HTTP, sharing one log (so /last sees both).
up=$IT_TMP/upstream.jsonl
: >"$up"
it_upstream "$IT_TMP/up.out" "$sp" "$up" --tls "$pki/srv.pem" "$pki/srv.key" --root "$IT_TMP/www"
it_upstream "$IT_TMP/up2.out" "$pp" "$up"

policy=$IT_TMP/policy.json
write_policy "$policy" <<EOF2
{"workspace": {"root": "$WS"},
 "network": {"default": "deny",
  "rules": [{"destination": "api.test", "port": $sp, "action": "allow"},
            {"destination": "api.test", "port": $pp, "action": "allow"},
            {"destination": "127.0.0.0/8", "port": $sp, "action": "allow"},
            {"destination": "127.0.0.0/8", "port": $pp, "action": "allow"}],
  "resolve": {"api.test": "127.0.0.1"}},
 "credentials": [
  {"name": "tok", "source": {"type": "env", "var": "IT_TOKEN"},
   "injection": {"type": "env_var", "var_name": "TOKEN"}, "hosts": ["api.test"]},
  {"name": "tok2", "source": {"type": "env", "var": "IT_TOKEN2"},
   "injection": {"type": "env_var", "var_name": "TOKEN2"}, "hosts": ["api.test"]}]}
EOF2

probe='
S=https://api.test:'$sp'
P=http://api.test:'$pp'
W=/workspace
printf "%s" "$TOKEN" >$W/sur1
printf "%s" "$TOKEN2" >$W/sur2
n=0
for v in "$TOKEN" "$TOKEN2"; do
	n=$((n + 1))
	# One connection sends the value; a second one, without any surrogate, asks for it.
	curl -sS -m 10 -H "Authorization: Bearer $v" -o /dev/null "$S/x"
	curl -sS -m 10 -o $W/last-$n "$S/last"; echo $? >$W/rc-last-$n
	curl -sS -m 10 -o $W/last-b64-$n "$S/last?enc=b64"; echo $? >$W/rc-last-b64-$n
	curl -sS -m 10 -o $W/last-hex-$n "$S/last?enc=hex-lower"; echo $? >$W/rc-last-hex-$n
	# ... and in plain HTTP to the same host.
	curl -sS -m 10 -o $W/plain-$n "$P/last"; echo $? >$W/rc-plain-$n
done
# Basic credentials echoed base64 on another connection, the surrogate longer than the value.
curl -sS -m 10 -u "user:$TOKEN2" -o /dev/null "$S/x"
curl -sS -m 10 -o $W/last-basic "$S/last"; echo $? >$W/rc-last-basic
# Compressed: refused by its Content-Encoding on a connection that carried no value; a
# compressed file (no Content-Encoding) passes.
curl -sS -m 10 -o $W/gz "$S/echo-enc?enc=gzip" 2>$W/err-gz; echo $? >$W/rc-gz
curl -sS -m 10 -o $W/file.gz "$S/file.gz"; echo $? >$W/rc-file-gz
# The address the bound host is pinned to, after a value was sent: refused in plain HTTP and
# in TLS, with or without the name of the host as SNI, transparently and through HTTP_PROXY.
X="-x http://10.255.255.1:3128 --noproxy \"\""
raw() { eval curl -sf -m 10 -k -o $W/raw-$1 "$2"; echo $? >$W/rc-raw-$1; }
raw plain-t "--noproxy \"*\" http://127.0.0.1:'$pp'/last"
raw plain-p "$X http://127.0.0.1:'$pp'/last"
raw tls-t "--noproxy \"*\" https://127.0.0.1:'$sp'/last"
raw tls-p "$X https://127.0.0.1:'$sp'/last"
raw sni-p "$X --connect-to api.test:'$sp':127.0.0.1:'$sp' https://api.test:'$sp'/last"
# 200 new intercepted connections, none carrying a value, from one curl (Connection: close).
start=$(date +%s%N)
curl -sS -m 60 -H "Connection: close" -o /dev/null "$S/?n=[1-200]"
echo "$? $(( ($(date +%s%N) - start) / 1000000 ))" >$W/conns
'
sb_run -p "$policy" --upstream-ca "$pki/ca.pem" --json -- /bin/sh -c "$probe"
assert_eq 0 "$AL_RC" "the sandbox runs"
sur1=$(cat "$WS/sur1")
sur2=$(cat "$WS/sur2")
assert_match '^ghp_[A-Za-z0-9]{36}$' "$sur1" "the first token's surrogate is token-shaped"
assert_eq 44 "${#sur2}" "the second token's surrogate is the generic one, longer than the value"

b64() { printf '%s' "$1" | base64 -w0; }
hex() { printf '%s' "$1" | od -An -tx1 | tr -d ' \n'; }
for n in 1 2; do
	if [ $n = 1 ]; then real=$token sur=$sur1; else real=$token2 sur=$sur2; fi
	for k in last last-b64 last-hex plain; do
		assert_eq 0 "$(cat "$WS/rc-$k-$n")" "token $n, $k: curl gets the answer"
	done
	assert_eq "Bearer $sur" "$(cat "$WS/last-$n")" \
		"token $n: a value sent on another connection comes back as the surrogate"
	assert_eq "$(b64 "Bearer $sur")" "$(cat "$WS/last-b64-$n")" \
		"token $n: ... base64-encoded, as the surrogate's encoding"
	assert_eq "$(hex "Bearer $sur")" "$(cat "$WS/last-hex-$n")" "token $n: ... in hex"
	assert_eq "Bearer $sur" "$(cat "$WS/plain-$n")" "token $n: ... and in plain HTTP"
done
assert_eq 0 "$(cat "$WS/rc-last-basic")" "the Basic echo is answered"
assert_eq "Basic $(b64 "user:$sur2")" "$(cat "$WS/last-basic")" \
	"Basic credentials echoed base64 decode to the sandbox's own, whole (value 40, surrogate 44)"
assert_ne 0 "$(cat "$WS/rc-gz")" "a compressed response from a bound host is refused without a value sent ($(head -c 80 "$WS/err-gz"))"
assert_eq 0 "$(cat "$WS/rc-file-gz")" "a compressed file from a bound host is downloaded"
assert_eq "a compressed file" "$(gzip -dc <"$WS/file.gz")" "... intact"
for k in plain-t plain-p tls-t tls-p sni-p; do
	assert_ne 0 "$(cat "$WS/rc-raw-$k" 2>/dev/null || echo missing)" \
		"the bound host's address is refused ($k): reach it by its name"
done
assert_eq 0 "$(cat "$WS"/raw-* 2>/dev/null | grep -c Bearer || true)" \
	"no answer by address reached the sandbox"
assert_eq 0 "$(grep -rlF -e "$token" -e "$token2" -e "$(b64 "user:$token2" | head -c 40)" "$WS" | wc -l)" \
	"no file of the sandbox holds a real value"
assert_eq 3 "$(grep -c '"path": "/x"' "$up")" "the requests that carried values reached the upstream"
assert_eq 1 "$(grep -c "$token2" "$up")" "... with the real value"
read -r conns_rc conns_ms <"$WS/conns"
assert_eq 0 "$conns_rc" "200 new intercepted connections are answered"
assert_eq 200 "$(grep -c '"path": "/?n=' "$up")" "... all of them reached the upstream"
it_log "200 new intercepted connections (one curl, Connection: close): ${conns_ms} ms"

it_finish
