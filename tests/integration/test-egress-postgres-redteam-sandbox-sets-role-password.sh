#!/usr/bin/env bash
# Red team (issue 19 item 4): a sandbox logged in through the proxy with its surrogate must not be
# able to give the credential's role a password of its own choosing. Postgres lets every role
# change its own password (ALTER ROLE ... PASSWORD, psql's \\password), and the relay passes the
# sandbox's statements unchanged: today the sandbox sets a password it knows, which then logs in
# directly as the role from anywhere, after the run, without airlock (a credential of its own
# that outlives the session), while the vault's real password stops working; nothing is audited.
# Debian's postgres in the test's own cluster on 127.0.0.1 (as in
# test-egress-postgres-logs-in-with-the-real-password.sh); psql inside the sandbox.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
for tool in "$pgbin/initdb" "$pgbin/postgres" psql setpriv; do
	if ! command -v "$tool" >/dev/null; then
		it_fail "$tool is missing (Debian packages postgresql, postgresql-client, util-linux)"
		it_finish
	fi
done
id postgres >/dev/null 2>&1 || it_fail "the postgres user is missing (Debian package postgresql)"

rand() { head -c 300 /dev/urandom | base64 -w0 | tr -dc 'A-Za-z0-9' | head -c "$1"; }
export REAL_SCRAM=scram-$(rand 24)
port=$((20000 + $$ % 20000))
pg=$IT_TMP/pg
data=$pg/data
mkdir -p "$pg"
it_test_pki db.test
chown -R postgres: "$pg"
as_pg() { setpriv --reuid=postgres --regid=postgres --clear-groups --inh-caps=-all -- "$@"; }

as_pg "$pgbin/initdb" -D "$data" -A trust -U postgres --no-sync -E UTF8 --locale=C \
	>"$pg/initdb.log" 2>&1 || it_fail "initdb made the test's cluster" "$(tail -5 "$pg/initdb.log")"
install -o postgres -m 600 "$pki/srv.pem" "$data/srv.pem"
install -o postgres -m 600 "$pki/srv.key" "$data/srv.key"
cat >>"$data/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$pg'
ssl_cert_file = 'srv.pem'
ssl_key_file = 'srv.key'
fsync = off
log_connections = on
EOF
cat >"$data/pg_hba.conf" <<EOF
local all postgres trust
host appdb app_scram 127.0.0.1/32 scram-sha-256
EOF

pg_pid=""
pg_start() # SSL: on or off
{
	# setpriv execs postgres: $! is the server itself (a function run in the background would
	# be a shell of its own)
	setpriv --reuid=postgres --regid=postgres --clear-groups --inh-caps=-all -- \
		"$pgbin/postgres" -D "$data" -c "ssl=$1" >>"$pg/server.log" 2>&1 &
	pg_pid=$!
	wait_for 20 psql -h "$pg" -p "$port" -U postgres -Atc 'select 1' postgres
}
pg_stop()
{
	[ -n "$pg_pid" ] || return 0
	kill -INT "$pg_pid" 2>/dev/null
	wait "$pg_pid" 2>/dev/null
	pg_pid=""
}
trap 'pg_stop; it_cleanup' EXIT # lib.sh's trap (it_cleanup) is replaced: both

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
sb_run --policy "$policy" --upstream-ca "$pki/ca.pem" --audit "$IT_TMP/audit.jsonl" --json -- \
	/bin/sh -c "psql -h db.test -p $port -U app_scram -Atc \"ALTER ROLE app_scram PASSWORD '$chosen'\" appdb 2>&1; echo rc=\$?"
o=$(json_get "$IT_TMP/al.out" "d['stdout']")
it_log "the sandbox's ALTER ROLE: $o"
assert_eq "app_scram" "$(PGPASSWORD=$REAL_SCRAM PGSSLMODE=require psql -h 127.0.0.1 -p "$port" -U app_scram -Atc 'select current_user' appdb 2>&1)" \
	"after the run, the vault's real password still logs in as app_scram"
assert_ne "app_scram" "$(PGPASSWORD=$chosen PGSSLMODE=require psql -h 127.0.0.1 -p "$port" -U app_scram -Atc 'select current_user' appdb 2>&1)" \
	"... and no password the sandbox chose does"
assert_not_contains "$(cat "$IT_TMP/al.out" "$IT_TMP/al.err" "$IT_TMP/audit.jsonl")" "$REAL_SCRAM" \
	"no real password in airlock's output or the audit"
pg_stop
it_finish
