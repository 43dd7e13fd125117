#!/usr/bin/env bash
# Red team (issue 19 item 4): a sandbox logged in through the proxy with its surrogate must not be
# able to give the credential's role a password of its own choosing. Postgres lets every role
# change its own password (ALTER ROLE ... PASSWORD, psql's \\password); a password the sandbox
# set would then log in directly as the role from anywhere, after the run, without airlock (a
# credential of its own that outlives the session), while the vault's password stopped working.
# What the proxy promises (netns/pg.c, docs/EGRESS.md "Postgres logins"): a best-effort filter of
# the sandbox's statements in the relay refuses one that sets a role's password: the plain ALTER
# ROLE ... PASSWORD and psql's \\password (ALTER USER ... PASSWORD) end the connection, as a
# credential violation, audited; the real password still logs in afterwards, the chosen ones do
# not. A documented limit, not tested here: dynamic SQL (EXECUTE of a string built at run time)
# can still do it; a password check hook on the server, or rotating the password, covers that.
# Debian's postgres in the test's own cluster on 127.0.0.1 (as in
# test-egress-postgres-logs-in-with-the-real-password.sh); psql inside the sandbox.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

rand() { head -c 300 /dev/urandom | base64 -w0 | tr -dc 'A-Za-z0-9' | head -c "$1"; }
export REAL_SCRAM=scram-$(rand 24)
PG_NAMES="db.test"
. "$IT_SOURCE_ROOT/tests/integration/helpers/pg-cluster.sh"
cat >>"$data/pg_hba.conf" <<EOF
host appdb app_scram 127.0.0.1/32 scram-sha-256
EOF

pg_start on
psql -h "$pg" -p "$port" -U postgres -q postgres >/dev/null <<EOF
CREATE ROLE app_scram LOGIN PASSWORD '$REAL_SCRAM';
CREATE DATABASE appdb;
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
            {"destination": "127.0.0.0/8", "port": $port, "action": "allow"}],
  "resolve": {"db.test": "127.0.0.1"}},
 "credentials": [
  $(pgcred db REAL_SCRAM PGPASSWORD app_scram db.test scram-sha-256)]}
EOF


chosen=chosen-$(rand 24)
chosen2=chosen-$(rand 24)
cat >"$WS/q.sh" <<EOF
echo ---alter
psql -h db.test -p $port -U app_scram -Atc "ALTER ROLE app_scram PASSWORD '$chosen'" appdb 2>&1
echo rc=\$?
echo ---password
printf '%s\n%s\n' '$chosen2' '$chosen2' | psql -h db.test -p $port -U app_scram -c '\password' appdb 2>&1
echo rc=\$?
echo ---after
psql -h db.test -p $port -U app_scram -Atc 'select current_user' appdb 2>&1
echo rc=\$?
EOF
sb_run --policy "$policy" --upstream-ca "$pki/ca.pem" --audit "$IT_TMP/audit.jsonl" --json -- \
	/bin/sh q.sh
o=$(json_get "$IT_TMP/al.out" "d['stdout']")
it_log "the sandbox's tries: $o"
alter=$(printf '%s\n' "$o" | sed -n '/^---alter/,/^---password/p')
assert_match "rc=[12]" "$alter" "the sandbox's ALTER ROLE ... PASSWORD is refused"
assert_contains "$alter" "airlock: a statement that sets a role's password is refused" \
	"... and psql shows why (the proxy's 42501)"
password=$(printf '%s\n' "$o" | sed -n '/^---password/,/^---after/p')
assert_match "rc=[12]" "$password" "... and psql's \\password (ALTER USER ... PASSWORD)"
assert_contains "$(printf '%s\n' "$o" | sed -n '/^---after/,$p')" "app_scram" \
	"a connection after them logs in as before"
viol=$(json_get "$IT_TMP/al.out" "[(v['count'], v['detail']) for v in d['violations'] if v['kind'] == 'credential']")
# (a violation's detail is cut at 64 bytes)
assert_contains "$viol" "[2, \"postgres db at db.test:$port: Postgres: a statement that sets a" \
	"the two refusals are credential violations"
assert_eq 2 "$(grep -c "sets a role's password is refused" "$IT_TMP/audit.jsonl")" \
	"... each audited"
assert_eq "app_scram" "$(PGPASSWORD=$REAL_SCRAM PGSSLMODE=require psql -h 127.0.0.1 -p "$port" -U app_scram -Atc 'select current_user' appdb 2>&1)" \
	"after the run, the vault's real password still logs in as app_scram"
assert_ne "app_scram" "$(PGPASSWORD=$chosen PGSSLMODE=require psql -h 127.0.0.1 -p "$port" -U app_scram -Atc 'select current_user' appdb 2>&1)" \
	"... and the password the sandbox chose does not"
assert_ne "app_scram" "$(PGPASSWORD=$chosen2 PGSSLMODE=require psql -h 127.0.0.1 -p "$port" -U app_scram -Atc 'select current_user' appdb 2>&1)" \
	"... nor the one it gave \\password"
assert_not_contains "$(cat "$IT_TMP/al.out" "$IT_TMP/al.err" "$IT_TMP/audit.jsonl")" "$REAL_SCRAM" \
	"no real password in airlock's output or the audit"
pg_stop
it_finish
