#!/usr/bin/env bash
# Postgres logins through the egress proxy (issue 19 item 4), with Debian's postgresql server (a
# cluster of the test's own, on 127.0.0.1) and psql inside the sandbox. Each credential of kind
# postgres gives the sandbox a surrogate password; the proxy ends the login on both sides: it
# asks the sandbox for the surrogate (SCRAM-SHA-256, md5 or cleartext, as the credential says)
# and logs in upstream with the real password (SCRAM-SHA-256, md5, cleartext only over TLS),
# over TLS when the server offers it (verified against the test's CA). Then:
#   with TLS: the SCRAM, md5 and cleartext credentials each log in as their role, the server
#     sees TLS; without TLS (the server restarted with ssl off): SCRAM and md5 log in, and the
#     role whose server asks for a cleartext password is refused (it would cross in the clear);
#   refused, each before the server sees a login: a wrong surrogate (28P01, a credential
#     violation), another role than the credential's (28000), the surrogate toward another host
#     the network allows but the credential is not bound to;
#   a query whose answer holds the real password ends the connection before it reaches the
#     sandbox (a credential violation);
#   the logins are audited (postgres-login: credential, destination, upstream_auth,
#     upstream_tls); no real password in airlock's output, the audit, or the sandbox's view.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

rand() { head -c 300 /dev/urandom | base64 -w0 | tr -dc 'A-Za-z0-9' | head -c "$1"; }
export REAL_SCRAM=scram-$(rand 24) REAL_MD5=md5-$(rand 24) REAL_PLAIN=plain-$(rand 24)
PG_NAMES="db.test md5.test plain.test"
. "$IT_SOURCE_ROOT/tests/integration/helpers/pg-cluster.sh"
cat >>"$data/pg_hba.conf" <<EOF
host appdb app_scram 127.0.0.1/32 scram-sha-256
host appdb app_md5 127.0.0.1/32 md5
host appdb app_plain 127.0.0.1/32 password
EOF

pg_start on
psql -h "$pg" -p "$port" -U postgres -q postgres >/dev/null <<EOF
CREATE ROLE app_scram LOGIN PASSWORD '$REAL_SCRAM';
SET password_encryption = 'md5';
CREATE ROLE app_md5 LOGIN PASSWORD '$REAL_MD5';
CREATE ROLE app_plain LOGIN PASSWORD '$REAL_PLAIN';
CREATE DATABASE appdb;
\\c appdb
CREATE TABLE leak (v text);
INSERT INTO leak VALUES ('$REAL_SCRAM');
GRANT SELECT ON leak TO app_scram;
EOF
assert_eq "app_scram" "$(PGPASSWORD=$REAL_SCRAM PGSSLMODE=require psql -h 127.0.0.1 -p "$port" -U app_scram -Atc 'select current_user' appdb)" \
	"the fixture: the server takes the real SCRAM password directly"

policy=$IT_TMP/policy.json
pgcred() # NAME VAR INJECT_VAR USER HOST AUTH
{
	printf '{"name": "%s", "source": {"type": "env", "var": "%s"},
	  "injection": {"type": "env_var", "var_name": "%s"},
	  "postgres": {"user": "%s", "database": "appdb", "destinations": ["%s:%s"],
	               "client_auth": "%s"}}' "$1" "$2" "$3" "$4" "$5" "$port" "$6"
}
write_policy "$policy" <<EOF
{"workspace": {"root": "$WS"},
 "network": {"default": "deny",
  "rules": [{"destination": "db.test", "port": $port, "action": "allow"},
            {"destination": "md5.test", "port": $port, "action": "allow"},
            {"destination": "plain.test", "port": $port, "action": "allow"},
            {"destination": "other.test", "port": $port, "action": "allow"},
            {"destination": "127.0.0.0/8", "port": $port, "action": "allow"}],
  "resolve": {"db.test": "127.0.0.1", "md5.test": "127.0.0.1", "plain.test": "127.0.0.1",
              "other.test": "127.0.0.1"}},
 "credentials": [
  $(pgcred db REAL_SCRAM PGPASSWORD app_scram db.test scram-sha-256),
  $(pgcred dbmd5 REAL_MD5 PW_MD5 app_md5 md5.test md5),
  $(pgcred dbplain REAL_PLAIN PW_PLAIN app_plain plain.test password)]}
EOF

# q HOST USER PASSWORD-EXPR SQL: psql in the sandbox; prints "rc=N" and its output.
cat >"$WS/q.sh" <<'EOF'
host=$1 user=$2 pw=$3 sql=$4
PGPASSWORD=$(eval "printf %s \"$pw\"") psql -h "$host" -p "$PORT" -U "$user" -Atc "$sql" appdb 2>&1
echo "rc=$?"
EOF
sql_who='select current_user || '"'"'|'"'"' || coalesce((select ssl::text from pg_stat_ssl where pid = pg_backend_pid()), '"'"'-'"'"')'

run_all() # OUT AUDIT SCRIPT
{
	sb_run --policy "$policy" --upstream-ca "$pki/ca.pem" --audit "$2" --json -- \
		/bin/sh -c "export PORT=$port; $3"
	cp "$IT_TMP/al.out" "$1"
	cat "$IT_TMP/al.out" "$IT_TMP/al.err" >>"$IT_TMP/all.out"
}
out() { json_get "$1" "d['stdout']"; }

scram0=$(logins app_scram)
run_all "$IT_TMP/tls.json" "$IT_TMP/audit.jsonl" "
echo surrogate=\$PGPASSWORD
sh q.sh db.test app_scram '\$PGPASSWORD' \"$sql_who\"
sh q.sh md5.test app_md5 '\$PW_MD5' \"$sql_who\"
sh q.sh plain.test app_plain '\$PW_PLAIN' \"$sql_who\"
echo ---wrong
sh q.sh db.test app_scram 'not-the-surrogate' 'select 1'
echo ---role
sh q.sh db.test postgres '\$PGPASSWORD' 'select 1'
echo ---other
sh q.sh other.test app_scram '\$PGPASSWORD' 'select 1'
echo ---leak
sh q.sh db.test app_scram '\$PGPASSWORD' 'select v from leak'
"
o=$(out "$IT_TMP/tls.json")
assert_contains "$o" "app_scram|true" "SCRAM: the sandbox logs in with its surrogate as app_scram, the server sees TLS"
assert_contains "$o" "app_md5|true" "md5: the same for app_md5 (the proxy answers the server's md5)"
assert_contains "$o" "app_plain|true" "cleartext: the same for app_plain (asked for in the clear, over TLS only)"
surrogate=$(printf '%s\n' "$o" | sed -n 's/^surrogate=//p')
assert_ne "" "$surrogate" "the sandbox holds a surrogate password"
assert_ne "$REAL_SCRAM" "$surrogate" "... not the real one"
wrong=$(printf '%s\n' "$o" | sed -n '/^---wrong/,/^---role/p')
assert_contains "$wrong" "password authentication failed" "a wrong surrogate is refused as Postgres refuses a password (28P01)"
assert_contains "$wrong" "rc=2" "... and psql fails"
role=$(printf '%s\n' "$o" | sed -n '/^---role/,/^---other/p')
assert_match "rc=[12]" "$role" "another role than the credential's is refused"
assert_contains "$role" "airlock" "... by airlock (28000, naming the credential's role)"
other=$(printf '%s\n' "$o" | sed -n '/^---other/,/^---leak/p')
assert_match "rc=[12]" "$other" "the surrogate toward another host (network-allowed, not bound) gets no login"
leak=$(printf '%s\n' "$o" | sed -n '/^---leak/,$p')
assert_match "rc=[12]" "$leak" "a query answering with the real password ends the connection"
assert_not_contains "$o" "$REAL_SCRAM" "... and the real password never reaches the sandbox"
assert_eq $((scram0 + 2)) "$(logins app_scram)" \
	"the server saw app_scram log in twice (the login and the leak's), never for a refused try"
assert_eq 1 "$(logins app_md5)" "... app_md5 once"
assert_eq 1 "$(logins app_plain)" "... app_plain once"
viol=$(json_get "$IT_TMP/tls.json" "[v['detail'] for v in d['violations'] if v['kind'] == 'credential']")
assert_contains "$viol" "postgres db at db.test:$port" "the refusals are credential violations naming the credential and destination"
n_login=$("$IT_PY" -c '
import json, sys
n = 0
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e.get("action") == "postgres-login" and e.get("upstream_tls") is True and e.get("credential") in ("db", "dbmd5", "dbplain"):
        n += 1
print(n)' "$IT_TMP/audit.jsonl")
assert_eq 4 "$n_login" "each login is audited (postgres-login, with TLS upstream)"
assert_contains "$(grep postgres-login "$IT_TMP/audit.jsonl")" '"upstream_auth":"md5"' "... naming the upstream's method"

# Without TLS at the server: SCRAM and md5 still log in; a cleartext password is not sent.
pg_stop
pg_start off
run_all "$IT_TMP/plain.json" "$IT_TMP/audit-plain.jsonl" "
sh q.sh db.test app_scram '\$PGPASSWORD' \"$sql_who\"
sh q.sh md5.test app_md5 '\$PW_MD5' \"$sql_who\"
echo ---plain
sh q.sh plain.test app_plain '\$PW_PLAIN' 'select 1'
"
o=$(out "$IT_TMP/plain.json")
assert_contains "$o" "app_scram|false" "without TLS at the server: SCRAM logs in, in the clear"
assert_contains "$o" "app_md5|false" "... and md5"
plain=$(printf '%s\n' "$o" | sed -n '/^---plain/,$p')
assert_match "rc=[12]" "$plain" "a server asking for a cleartext password without TLS gets none"
assert_eq 1 "$(logins app_plain)" "... and no login"
pg_stop

assert_not_contains "$(cat "$IT_TMP/all.out" "$IT_TMP"/audit*.jsonl)" "$REAL_SCRAM" \
	"no real password in airlock's output or the audit"
assert_not_contains "$(cat "$IT_TMP/all.out" "$IT_TMP"/audit*.jsonl)" "$REAL_MD5" "... nor md5's"
assert_not_contains "$(cat "$IT_TMP/all.out" "$IT_TMP"/audit*.jsonl)" "$REAL_PLAIN" "... nor the cleartext one's"
it_finish
