# tests/integration/helpers/pg-cluster.sh, sourced by the Postgres root tests: a cluster of the
# test's own made with Debian's initdb (as the postgres user, in $IT_TMP/pg, trust for the local
# socket), listening on 127.0.0.1:$port with a certificate of the test's CA for the names in
# $PG_NAMES (it_test_pki: $pki/ca.pem verifies it). The caller adds its roles' lines to
# $data/pg_hba.conf, then starts it: pg_start on|off (ssl), pg_stop (also on EXIT, with
# it_cleanup); logins ROLE counts the logins the server accepted for ROLE.
pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
for tool in "$pgbin/initdb" "$pgbin/postgres" psql setpriv; do
	if ! command -v "$tool" >/dev/null; then
		it_fail "$tool is missing (Debian packages postgresql, postgresql-client, util-linux)"
		it_finish
	fi
done
id postgres >/dev/null 2>&1 || it_fail "the postgres user is missing (Debian package postgresql)"

port=$(it_port)
pg=$IT_TMP/pg
data=$pg/data
mkdir -p "$pg"
# shellcheck disable=SC2086 # a list of names
it_test_pki $PG_NAMES
chown -R postgres: "$pg"
setpriv --reuid=postgres --regid=postgres --clear-groups --inh-caps=-all -- \
	"$pgbin/initdb" -D "$data" -A trust -U postgres --no-sync -E UTF8 --locale=C \
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
printf 'local all postgres trust\n' >"$data/pg_hba.conf"

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
logins() { grep -c "connection authorized: user=$1 " "$pg/server.log"; }
