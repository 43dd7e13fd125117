#!/usr/bin/env bash
# Egress proxies on loopback, side by side in one run: a client straight to nginx (direct),
# through tinyproxy and squid (Debian's, as forward proxies), and from inside an airlock sandbox
# through airlock's own proxy: pass-through (plain HTTP parsed, its upstream kept for the next
# connection and its bodies spliced; HTTPS with its SNI checked, then spliced) and intercepted
# (HTTPS to a host bound to a credential: TLS terminated, the surrogate in Authorization swapped
# for the real token, TLS again to nginx). For each path:
# 1 KiB requests/s with 32 connections (wrk), a new connection per request and keep-alive;
# for HTTPS also with bench/proxy/loadgen.c (built here with gcc), new connections with full
# and with resumed TLS handshakes;
# 10 MiB download throughput (curl); latency of one serial request (curl), with the latency
# each path adds to direct. Prints markdown and writes it to the "Egress proxy" section of
# docs/BENCHMARKS.md.
#
# usage: bench/proxy.sh            (as root; the rootless rows run airlock as uid 65534)
# environment: AIRLOCK (default build/cli/airlock),
#              BENCH_PATHS (rows, default "direct tinyproxy squid airlock"; words: direct,
#                tinyproxy, squid, airlock = airlock-pass + airlock-intercept, rootless = the
#                airlock rows again as uid 65534 (setpriv); direct is always measured, the
#                ratios need it),
#              BENCH_SECONDS (timed seconds of each wrk run, default 5),
#              BENCH_SERIAL (serial requests for the latency, default 200),
#              BENCH_DOWNLOADS (10 MiB downloads for the throughput, default 20),
#              BENCH_DOC (default docs/BENCHMARKS.md; "-" = print only)
# Installs nginx-light, tinyproxy, squid, wrk, curl, openssl and python3 with apt-get when they
# are missing (and only the proxies that BENCH_PATHS names). It never uses or stops their system
# services: everything it starts listens on 127.0.0.1 ports 18080 (HTTP), 18443 (HTTPS), 18081
# (nginx's counters), 18888 (tinyproxy) and 18128 (squid), runs in the foreground with its
# configuration, pid file and logs in one folder under /tmp, and is stopped and removed at exit.
# Takes about 2 × (rows) × (BENCH_SECONDS + 1) s plus ~20 s: 2 min with every row.

set -Eeuo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
export LC_ALL=C

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
airlock=${AIRLOCK:-$repo/build/cli/airlock}
seconds=${BENCH_SECONDS:-5}
serial=${BENCH_SERIAL:-200}
downloads=${BENCH_DOWNLOADS:-20}
selected=${BENCH_PATHS:-direct tinyproxy squid airlock rootless}
doc=${BENCH_DOC:-$repo/docs/BENCHMARKS.md}
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3

# `airlock run`'s option naming the CA file that intercepted upstreams are verified against
# (nginx's certificate is from the bench's own CA), and its options for the intercepted rows.
upstream_ca_option=--upstream-ca
intercept_options=(--no-broker)

http_port=18080
https_port=18443
status_port=18081
tinyproxy_port=18888
squid_port=18128
connections=32
threads=2
warmup=1


bench_positive BENCH_SECONDS "$seconds"
bench_positive BENCH_SERIAL "$serial"
bench_positive BENCH_DOWNLOADS "$downloads"

# ---- the rows ----

# The rows, in the order of the tables; direct-http and direct-https are the references of
# the rows below them.
want_tinyproxy=0 want_squid=0 want_pass=0 want_intercept=0 want_rootless=0
for w in $selected; do
	case $w in
	direct) ;;
	tinyproxy) want_tinyproxy=1 ;;
	squid) want_squid=1 ;;
	airlock) want_pass=1 want_intercept=1 ;;
	airlock-pass) want_pass=1 ;;
	airlock-intercept) want_intercept=1 ;;
	rootless) want_rootless=1 ;;
	*) die "BENCH_PATHS: unknown path '$w' (direct, tinyproxy, squid, airlock, airlock-pass, airlock-intercept, rootless)" ;;
	esac
done
# The rootless rows (ROW@user): the airlock rows again, airlock run by uid 65534 through setpriv.
nobody=65534
if [ "$want_rootless" = 1 ] && { [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null; }; then
	log "no rootless rows: they need root (to become uid $nobody with setpriv)"
	want_rootless=0
fi
rows=(direct-http)
[ "$want_tinyproxy" = 0 ] || rows+=(tinyproxy)
[ "$want_squid" = 0 ] || rows+=(squid)
[ "$want_pass" = 0 ] || rows+=(airlock-http)
[ "$want_pass" = 0 ] || [ "$want_rootless" = 0 ] || rows+=(airlock-http@user)
rows+=(direct-https)
[ "$want_pass" = 0 ] || rows+=(airlock-https)
[ "$want_pass" = 0 ] || [ "$want_rootless" = 0 ] || rows+=(airlock-https@user)
[ "$want_intercept" = 0 ] || rows+=(airlock-intercept)
[ "$want_intercept" = 0 ] || [ "$want_rootless" = 0 ] || rows+=(airlock-intercept@user)

# ---- packages ----

need=(nginx:nginx-light wrk:wrk curl:curl openssl:openssl python3:python3 ss:iproute2)
[ "$want_tinyproxy" = 0 ] || need+=(tinyproxy:tinyproxy)
[ "$want_squid" = 0 ] || need+=(squid:squid)
missing=()
for n in "${need[@]}"; do
	PATH=$PATH:/usr/sbin:/sbin command -v "${n%%:*}" >/dev/null || missing+=("${n#*:}")
done
# (Where the init system lets packages start their own services, they keep running; this
# script does not use them.)
bench_apt "${missing[@]}" || exit 1
export PATH=$PATH:/usr/sbin:/sbin

ports=("$http_port" "$https_port" "$status_port")
[ "$want_tinyproxy" = 0 ] || ports+=("$tinyproxy_port")
[ "$want_squid" = 0 ] || ports+=("$squid_port")

# listening PORT: something listens on 127.0.0.1:PORT (or on every address).
listening()
{
	[ -n "$(ss -Hltn "sport = :$1")" ]
}

for port in "${ports[@]}"; do
	listening "$port" && die "port $port is in use already: $(ss -Hltnp "sport = :$port" | head -n 1)"
done

# ---- the run folder, the servers, and cleanup ----

run=$(mktemp -d /tmp/airlock-bench-proxy.XXXXXX)
chmod 0711 "$run" # squid drops root for its own user, which must reach its folder
servers=()

# stop PID: TERM, up to 10 s, then KILL; children left behind (nginx's workers) are killed too.
stop()
{
	local pid=$1 kids

	kids=$(ps -o pid= --ppid "$pid" 2>/dev/null || true)
	kill -TERM "$pid" 2>/dev/null || true
	for _ in $(seq 200); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	for k in $kids; do
		kill -KILL "$k" 2>/dev/null || true
	done
}

cleanup()
{
	set +e
	trap - ERR
	for pid in "${servers[@]}"; do
		stop "$pid"
	done
	rm -rf "$run"
	for port in "${ports[@]}"; do
		listening "$port" && log "warning: port $port still has a listener after the run"
	done
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'log "failed at line $LINENO: $BASH_COMMAND"' ERR

# wait_port PORT PID LOG: until something listens on PORT, while PID lives.
wait_port()
{
	for _ in $(seq 200); do
		listening "$1" && return 0
		kill -0 "$2" 2>/dev/null || die "the server for port $1 exited before listening: $(tail -n 5 "$3")"
		sleep 0.05
	done
	die "nothing listens on port $1 after 10 s: $(tail -n 5 "$3")"
}

ws=$run/ws # the sandboxes' workspace: the wrk script and the CA certificate
www=$run/www
pki=$run/pki
mkdir -p "$ws" "$www" "$pki" "$run/nginx" "$run/tinyproxy" "$run/squid" "$run/fail" "$run/skip"
cp "$repo/bench/proxy/wrk.lua" "$ws/wrk.lua"
# the TLS rows' second client (see loadgen.c): in the workspace, so that sandboxes run it too
gcc -O2 -std=gnu11 -Wall -Wextra -Werror -pthread -o "$ws/loadgen" "$repo/bench/proxy/loadgen.c" \
	-lssl -lcrypto || die "failed to build bench/proxy/loadgen.c (gcc and libssl-dev are needed)"

head -c 768 /dev/urandom | base64 -w 0 >"$www/1k"
head -c 10485760 /dev/urandom >"$www/10m"
chmod 0755 "$www"
chmod 0644 "$www/1k" "$www/10m"

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
	-subj "/CN=airlock bench CA" -keyout "$pki/ca.key" -out "$pki/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=bench.test" \
	-keyout "$pki/srv.key" -out "$pki/srv.csr" 2>/dev/null
printf 'subjectAltName=DNS:bench.test,IP:127.0.0.1\n' >"$pki/ext"
openssl x509 -req -in "$pki/srv.csr" -CA "$pki/ca.pem" -CAkey "$pki/ca.key" -CAcreateserial \
	-days 2 -extfile "$pki/ext" -out "$pki/srv.pem" 2>/dev/null
cp "$pki/ca.pem" "$ws/ca.pem"

# The intercepted rows' credential: a fake GitHub token (ghp_ and 36 characters) in airlock's
# environment; the sandbox holds its surrogate in $TOKEN, and nginx answers /auth with "swapped"
# only when the request carries the real one.
BENCH_TOKEN=ghp_$(head -c 96 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 36)
export BENCH_TOKEN

# nginx: one worker, so that the upstream costs the same CPU for every path.
{
	bench_nginx_head "$run/nginx"
	cat <<EOF
	sendfile on;
	tcp_nopush on;
	map_hash_bucket_size 128;
	map \$http_authorization \$bench_auth {
		"Bearer $BENCH_TOKEN" swapped;
		default "not swapped";
	}
	server {
		listen 127.0.0.1:$http_port;
		listen 127.0.0.1:$https_port ssl;
		server_name bench.test;
		ssl_certificate $pki/srv.pem;
		ssl_certificate_key $pki/srv.key;
		ssl_protocols TLSv1.2 TLSv1.3;
		root $www;
		location = /auth {
			default_type text/plain;
			return 200 "\$bench_auth\n";
		}
	}
	server {
		listen 127.0.0.1:$status_port;
		location = /status {
			stub_status;
		}
	}
}
EOF
} >"$run/nginx/nginx.conf"
nginx -p "$run/nginx" -c "$run/nginx/nginx.conf" -e "$run/nginx/error.log" \
	>"$run/nginx/out.log" 2>&1 &
servers+=($!)
wait_port "$https_port" "$!" "$run/nginx/error.log"
wait_port "$status_port" "${servers[-1]}" "$run/nginx/error.log"

# tinyproxy: Debian's defaults but for the log level (Info logs every connection), the ports,
# and enough clients for 32 connections.
if [ "$want_tinyproxy" = 1 ]; then
	tp_user=""
	if [ "$(id -u)" = 0 ]; then
		tp_user="User nobody
Group nogroup"
		chown nobody:nogroup "$run/tinyproxy"
	fi
	cat >"$run/tinyproxy/tinyproxy.conf" <<EOF
$tp_user
Port $tinyproxy_port
Listen 127.0.0.1
Timeout 600
LogFile "$run/tinyproxy/tinyproxy.log"
LogLevel Warning
PidFile "$run/tinyproxy/tinyproxy.pid"
MaxClients 256
Allow 127.0.0.1
ViaProxyName "tinyproxy"
EOF
	tinyproxy -d -c "$run/tinyproxy/tinyproxy.conf" >"$run/tinyproxy/out.log" 2>&1 &
	servers+=($!)
	wait_port "$tinyproxy_port" "$!" "$run/tinyproxy/out.log"
fi

# squid: no cache, no access log, one process in the foreground (-N); persistent connections
# to clients and to nginx as by default.
if [ "$want_squid" = 1 ]; then
	sq_user=""
	if [ "$(id -u)" = 0 ]; then
		sq_user="cache_effective_user proxy"
		chown proxy:proxy "$run/squid"
	fi
	cat >"$run/squid/squid.conf" <<EOF
$sq_user
http_port 127.0.0.1:$squid_port
acl bench_clients src 127.0.0.1/32
http_access allow bench_clients
http_access deny all
cache deny all
access_log none
cache_store_log none
cache_log $run/squid/cache.log
pid_filename $run/squid/squid.pid
coredump_dir $run/squid
netdb_filename none
pinger_enable off
logfile_rotate 0
visible_hostname bench.test
shutdown_lifetime 0 seconds
EOF
	squid -N -f "$run/squid/squid.conf" >"$run/squid/out.log" 2>&1 &
	servers+=($!)
	wait_port "$squid_port" "$!" "$run/squid/cache.log"
fi

# The sandboxes' policies: bench.test on both ports, and 127.0.0.0/8 on both ports, since a
# name pinned to loopback passes only by a rule naming that CIDR (and a rule's port counts for a
# CIDR too). The intercepted rows add a credential bound to bench.test.
rules='[{"destination": "bench.test", "port": '$http_port', "action": "allow"},
            {"destination": "bench.test", "port": '$https_port', "action": "allow"},
            {"destination": "127.0.0.0/8", "port": '$http_port', "action": "allow"},
            {"destination": "127.0.0.0/8", "port": '$https_port', "action": "allow"}]'
cat >"$run/pass.json" <<EOF
{"workspace": {"root": "$ws"},
 "network": {"default": "deny",
  "rules": $rules}}
EOF
cat >"$run/intercept.json" <<EOF
{"workspace": {"root": "$ws"},
 "network": {"default": "deny",
  "rules": $rules},
 "credentials": [{"name": "bench", "source": {"type": "env", "var": "BENCH_TOKEN"},
   "injection": {"type": "env_var", "var_name": "TOKEN"}, "hosts": ["bench.test"]}]}
EOF
# The rootless rows' copies: no cgroup is delegated to uid 65534 here, so the memory and pids
# limits are lifted (they cost nothing per request); a copy of the binary it can reach.
if [ "$want_rootless" = 1 ]; then
	for f in pass intercept; do
		sed 's|^{"workspace"|{"resources": {"memory": "max", "pids": "max"}, "workspace"|' \
			"$run/$f.json" >"$run/$f-user.json"
	done
	install -m 755 "$airlock" "$run/airlock-user"
	chmod 755 "$run"
	chmod -R a+rX "$run/pki" "$ws"
fi

# ---- the clients ----

# client ROW CMD [ARG...]: CMD as ROW's client: on the host, or inside an airlock sandbox;
# the intercepted row's CMD gets the surrogate as `-H "Authorization: Bearer $TOKEN"`.
client()
{
	local row=$1 pol=""
	local -a al=("$airlock")
	shift
	if [[ $row == *@user ]]; then
		row=${row%@user}
		al=(setpriv --reuid="$nobody" --regid="$nobody" --clear-groups "$run/airlock-user")
		pol=-user
	fi
	case $row in
	airlock-http | airlock-https)
		"${al[@]}" run -p "$run/pass$pol.json" --resolve bench.test:127.0.0.1 -- "$@"
		;;
	airlock-intercept)
		# The sandbox's CA alone (the last certificate of its trust store), as the other rows
		# verify against one CA: curl reads its CA file again for every new connection, and
		# a store of the host's ~140 CAs costs ~20 ms to read, which is not the proxy's time.
		# shellcheck disable=SC2016 # $TOKEN is the sandbox's
		"${al[@]}" run -p "$run/intercept$pol.json" --resolve bench.test:127.0.0.1 \
			"$upstream_ca_option" "$pki/ca.pem" "${intercept_options[@]}" -- \
			/bin/sh -c 'awk "/BEGIN CERTIFICATE/ { b = \"\" } { b = b \$0 \"\n\" } END { printf \"%s\", b }" \
				/etc/airlock/ca-bundle.pem >/tmp/airlock-ca.pem || exit 1
				c=$1; shift; exec "$c" -H "Authorization: Bearer $TOKEN" "$@"' sh "$@"
		;;
	*)
		"$@"
		;;
	esac
}

# setup_row ROW: url and target (wrk's URL, and its absolute request target for a forward
# proxy), lua (wrk's script as the client sees it), base and curl_args (curl's).
setup_row()
{
	target=""
	lua=$ws/wrk.lua
	case ${1%@user} in
	direct-http)
		url=http://127.0.0.1:$http_port/1k
		base=http://127.0.0.1:$http_port
		curl_args=()
		;;
	tinyproxy | squid)
		local port=$tinyproxy_port
		[ "$1" = tinyproxy ] || port=$squid_port
		url=http://127.0.0.1:$port/
		target=http://127.0.0.1:$http_port/1k
		base=http://127.0.0.1:$http_port
		curl_args=(-x "http://127.0.0.1:$port")
		;;
	airlock-http)
		url=http://bench.test:$http_port/1k
		base=http://bench.test:$http_port
		lua=/workspace/wrk.lua
		curl_args=(--noproxy '*')
		;;
	direct-https)
		url=https://127.0.0.1:$https_port/1k
		base=https://bench.test:$https_port
		curl_args=(--resolve "bench.test:$https_port:127.0.0.1" --cacert "$pki/ca.pem")
		;;
	airlock-https)
		url=https://bench.test:$https_port/1k
		base=https://bench.test:$https_port
		lua=/workspace/wrk.lua
		curl_args=(--noproxy '*' --cacert /workspace/ca.pem)
		;;
	airlock-intercept)
		url=https://bench.test:$https_port/1k
		base=https://bench.test:$https_port
		lua=/workspace/wrk.lua
		curl_args=(--noproxy '*' --cacert /tmp/airlock-ca.pem)
		;;
	esac
}

# fail ROW WHAT REASON...: records that ROW's WHAT failed, and why.
fail()
{
	local row=$1 what=$2
	shift 2
	printf '%s: %s\n' "$what" "$(printf '%s' "$*" | tr -s '\n\t' '  ')" >>"$run/fail/$row"
	log "$row: $what FAILED: $*"
}

# skipped ROW: ROW failed its preflight, and is not measured.
skipped()
{
	[ -e "$run/skip/$1" ]
}

# why FILE: FILE's last lines, on one line.
why()
{
	tail -n 4 "$1" 2>/dev/null | tr -s '\n\t' '  ' | cut -c 1-400
}

# accepts: how many connections nginx has accepted so far, this query's own included (the
# difference of two counts is one more than the connections made between them).
accepts()
{
	curl -sS --fail "http://127.0.0.1:$status_port/status" | awk 'NR == 3 { print $1 }'
}

results=$run/results
: >"$results"

# preflight ROW: one request of each kind the row's measurements make, checked; ROW is
# skipped when one fails.
preflight()
{
	check_row "$1" || touch "$run/skip/$1"
}

check_row()
{
	local row=$1 out=$run/pre.out err=$run/pre.err got

	setup_row "$row"
	case $row in
	airlock-*)
		if [ ! -x "$airlock" ]; then
			fail "$row" preflight "no airlock binary at $airlock (build first: scripts/dev.sh build)"
			return 1
		fi
		;;
	esac
	if ! client "$row" curl -sS --fail -o /dev/null -w '%{http_code} %{size_download}\n' \
		"${curl_args[@]}" "$base/1k" >"$out" 2>"$err"; then
		fail "$row" preflight "GET $base/1k: $(why "$err")"
		return 1
	fi
	got=$(tail -n 1 "$out")
	if [ "$got" != "200 1024" ]; then
		fail "$row" preflight "GET $base/1k: status and size '$got', not '200 1024'"
		return 1
	fi
	[ "${row%@user}" = airlock-intercept ] || return 0
	if ! client "$row" curl -sS --fail "${curl_args[@]}" "$base/auth" >"$out" 2>"$err"; then
		fail "$row" preflight "GET $base/auth: $(why "$err")"
		return 1
	fi
	got=$(tail -n 1 "$out")
	if [ "$got" != swapped ]; then
		fail "$row" preflight "nginx did not receive the real token in place of the surrogate" \
			"(it answers '$got')"
		return 1
	fi
}

# load_run ROW WHAT CMD...: the load client CMD (wrk, loadgen) as ROW's client; prints its
# result line (wrk.lua's "wrk-result", without the tag), or records why WHAT failed and returns 1.
load_run()
{
	local row=$1 what=$2 out=$run/load.out err=$run/load.err line
	shift 2
	if ! client "$row" "$@" >"$out" 2>"$err"; then
		fail "$row" "$what" "${1##*/}: $(why "$err") $(why "$out")"
		return 1
	fi
	line=$(sed -n 's/^wrk-result //p' "$out")
	if [ -z "$line" ]; then
		fail "$row" "$what" "no result from ${1##*/}: $(why "$out") $(why "$err")"
		return 1
	fi
	printf '%s\n' "$line"
}

# wrk_run ROW MODE SECONDS [record]: wrk, 1 KiB, MODE new (a new connection per request) or
# keep-alive; with "record", appends the result.
wrk_run()
{
	local row=$1 mode=$2 secs=$3 a0 a1 line hdr=()

	setup_row "$row"
	[ "$mode" = keep-alive ] || hdr=(-H "Connection: close")
	a0=$(accepts)
	line=$(BENCH_TARGET=$target load_run "$row" "requests/s ($mode)" wrk -t "$threads" \
		-c "$connections" -d "${secs}s" --timeout 10s -s "$lua" "${hdr[@]}" "$url") || return 1
	a1=$(accepts)
	[ "${4:-}" = record ] || return 0
	echo "req row=$row mode=$mode $line accepts=$((a1 - a0 - 1))" >>"$results"
	log "$row, $mode: $line nginx_accepts=$((a1 - a0 - 1))"
}

# loadgen_run ROW MODE SECONDS [record]: bench/proxy/loadgen.c, 1 KiB, a new connection per
# request, MODE full (every handshake a full one) or resumed (each connection resumes the TLS
# session of the one before it); with "record", appends the result.
loadgen_run()
{
	local row=$1 mode=$2 secs=$3 line bin=$ws/loadgen
	local -a opts=(-n)

	setup_row "$row"
	[ "$mode" = full ] || opts+=(-r)
	[ "${row#airlock}" = "$row" ] || bin=/workspace/loadgen
	line=$(load_run "$row" "handshakes/s ($mode)" "$bin" -t "$threads" -c "$connections" \
		-d "$secs" "${opts[@]}" "$url") || return 1
	[ "${4:-}" = record ] || return 0
	echo "hs row=$row mode=$mode $line" >>"$results"
	log "$row, $mode handshakes: $line"
}

# serial_run ROW MODE: BENCH_SERIAL + 1 requests of 1 KiB one after the other from one curl,
# MODE new (Connection: close) or keep-alive; records the times of all but the first.
serial_run()
{
	local row=$1 mode=$2 out=$run/curl.out err=$run/curl.err a0 a1 hdr=()

	setup_row "$row"
	[ "$mode" = keep-alive ] || hdr=(-H "Connection: close")
	a0=$(accepts)
	if ! client "$row" curl -sS --fail -o /dev/null -w '%{http_code} %{size_download} %{time_total}\n' \
		"${curl_args[@]}" "${hdr[@]}" "$base/1k?n=[0-$serial]" >"$out" 2>"$err"; then
		fail "$row" "latency ($mode)" "curl: $(why "$err")"
		return 0
	fi
	a1=$(accepts)
	if [ "$(awk '$1 == 200 && $2 == 1024' "$out" | wc -l)" != $((serial + 1)) ]; then
		fail "$row" "latency ($mode)" "not $((serial + 1)) answers of 200 and 1024 bytes: $(why "$out")"
		return 0
	fi
	echo "lat row=$row mode=$mode accepts=$((a1 - a0 - 1)) times=$(tail -n +2 "$out" | awk '{ print $3 }' |
		paste -sd ,)" >>"$results"
}

# download_run ROW: BENCH_DOWNLOADS + 1 downloads of 10 MiB one after the other from one curl
# (one keep-alive connection); records the speeds of all but the first.
download_run()
{
	local row=$1 out=$run/curl.out err=$run/curl.err

	setup_row "$row"
	if ! client "$row" curl -sS --fail -o /dev/null -w '%{http_code} %{size_download} %{speed_download}\n' \
		"${curl_args[@]}" "$base/10m?n=[0-$downloads]" >"$out" 2>"$err"; then
		fail "$row" throughput "curl: $(why "$err")"
		return 0
	fi
	if [ "$(awk '$1 == 200 && $2 == 10485760' "$out" | wc -l)" != $((downloads + 1)) ]; then
		fail "$row" throughput "not $((downloads + 1)) answers of 200 and 10 MiB: $(why "$out")"
		return 0
	fi
	echo "tput row=$row speeds=$(tail -n +2 "$out" | awk '{ print $3 }' | paste -sd ,)" >>"$results"
}

# ---- the measurements ----

load_before=$(cut -d ' ' -f 1-3 /proc/loadavg)
if awk -v l="${load_before%% *}" -v n="$(nproc)" 'BEGIN { exit !(l > n / 2) }'; then
	log "warning: load average ${load_before%% *} on $(nproc) cores before the run: other work" \
		"shares the CPUs, and the figures will be slower and noisier than on a quiet machine"
fi
start=$SECONDS

for row in "${rows[@]}"; do
	preflight "$row"
done
for ref in direct-http direct-https; do
	skipped "$ref" && die "the direct path fails, nothing to compare with: $(cat "$run/fail/$ref")"
done

# Each measurement goes over every row before the next one starts, so that a busy spell of the
# machine is spread over the rows rather than falling on one.
for mode in new keep-alive; do
	for row in "${rows[@]}"; do
		skipped "$row" && continue
		log "$row: 1 KiB requests/s, $connections connections, $mode, $warmup s untimed then $seconds s"
		if wrk_run "$row" "$mode" "$warmup"; then
			wrk_run "$row" "$mode" "$seconds" record || true
		fi
	done
done
for mode in full resumed; do
	for row in "${rows[@]}"; do
		skipped "$row" && continue
		case ${row%@user} in direct-https | airlock-https | airlock-intercept) ;; *) continue ;; esac
		log "$row: 1 KiB requests/s (loadgen), $connections connections, new, $mode handshakes"
		if loadgen_run "$row" "$mode" "$warmup"; then
			loadgen_run "$row" "$mode" "$seconds" record || true
		fi
	done
done
for mode in new keep-alive; do
	for row in "${rows[@]}"; do
		skipped "$row" && continue
		log "$row: $serial serial requests, $mode"
		serial_run "$row" "$mode"
	done
done
for row in "${rows[@]}"; do
	skipped "$row" && continue
	log "$row: $downloads downloads of 10 MiB"
	download_run "$row"
done
for pid in "${servers[@]}"; do
	kill -0 "$pid" 2>/dev/null || die "a server died during the run (pid $pid)"
done
elapsed=$((SECONDS - start))
load_after=$(cut -d ' ' -f 1-3 /proc/loadavg)

# ---- the section ----

v_nginx=$(nginx -v 2>&1 | sed 's/^nginx version: //')
v_tinyproxy=$(tinyproxy -v 2>/dev/null | head -n 1 || true)
v_squid=$(squid -v 2>/dev/null | sed -n 's/^Squid Cache: Version /squid /p' | head -n 1 || true)
v_wrk=$(wrk -v 2>&1 | sed -n 's/^wrk \([^ ]*\).*/wrk \1/p' | head -n 1 || true)
v_curl=$(curl --version | head -n 1 | cut -d ' ' -f 1-2)
v_openssl=$(openssl version | cut -d ' ' -f 1-2)
v_airlock=""
[ ! -x "$airlock" ] || v_airlock=$("$airlock" --version 2>/dev/null | head -n 1 || true)

for row in "${rows[@]}"; do
	[ -s "$run/fail/$row" ] || continue
	sed "s/^/fail row=$row /" "$run/fail/$row" >>"$results"
done

tables=$(BENCH_V_TINYPROXY="$v_tinyproxy" BENCH_V_SQUID="$v_squid" \
	"$py" - "$results" "$connections" "$threads" "$seconds" "$serial" "$downloads" "${rows[@]}" <<'EOF'
import os, statistics, sys

path, connections, threads, seconds, serial, downloads, *rows = sys.argv[1:]
req, lat, tput, hs, fails = {}, {}, {}, {}, {}
for line in open(path):
    kind, rest = line.rstrip("\n").split(" ", 1)
    if kind == "fail":
        row, reason = rest.split(" ", 1)
        fails.setdefault(row.split("=", 1)[1], []).append(reason)
        continue
    d = dict(p.split("=", 1) for p in rest.split())
    if kind == "req":
        req[(d["row"], d["mode"])] = d
    elif kind == "lat":
        lat[(d["row"], d["mode"])] = d
    elif kind == "tput":
        tput[d["row"]] = d
    elif kind == "hs":
        hs[(d["row"], d["mode"])] = d

names = {
    "direct-http": "direct, HTTP",
    "tinyproxy": "%s, HTTP" % (os.environ.get("BENCH_V_TINYPROXY") or "tinyproxy"),
    "squid": "%s, HTTP" % (os.environ.get("BENCH_V_SQUID") or "squid"),
    "airlock-http": "airlock pass-through, HTTP (parsed, upstream kept, bodies spliced)",
    "direct-https": "direct, HTTPS",
    "airlock-https": "airlock pass-through, HTTPS (SNI checked, spliced)",
    "airlock-intercept": "airlock intercepted, HTTPS (TLS terminated, surrogate swapped)",
}
def base(row):
    return row.split("@")[0]

def name(row):
    return names[base(row)] + (", airlock run by uid 65534 (no root)" if row.endswith("@user") else "")

def ref(row):
    return "direct-https" if base(row) in ("direct-https", "airlock-https", "airlock-intercept") else "direct-http"

def pass_through(row):
    return base(row) in ("airlock-http", "airlock-https")

def verdict(ok):
    return "**pass**" if ok else "**miss**"

def thousands(v):
    return format(int(round(v)), ",")

def rps(row, mode):
    d = req.get((row, mode))
    if not d:
        return None
    return int(d["requests"]) / (int(d["duration_us"]) / 1e6)

def errors(d):
    return sum(int(d[k]) for k in ("connect", "read", "write", "timeout", "status"))

def error_note(d):
    read = int(d["read"])
    other = errors(d) - read
    notes = []
    if read:
        notes.append("%s read errors" % thousands(read))
    if other:
        notes.append("%s other errors" % thousands(other))
    return " (%s)" % ", ".join(notes) if notes else ""

def ratio(v, r):
    return "%.2f×" % (v / r) if v is not None and r else "—"

# requests/s
print("**1 KiB requests/s**, wrk, %s connections, %s threads, %s s after 1 s untimed "
      "(\"new\": `Connection: close` on every request):" % (connections, threads, seconds))
print()
print("| path | new connection (req/s) | ÷ direct | keep-alive (req/s) | ÷ direct "
      "| nginx connections per request (new / keep-alive) | target | result |")
print("| --- | ---: | ---: | ---: | ---: | ---: | --- | --- |")
read_errors = False
for row in rows:
    cells, per = [], []
    results = []
    for mode, goal in (("new", 0.6), ("keep-alive", 0.6)):
        d = req.get((row, mode))
        v, r = rps(row, mode), rps(ref(row), mode)
        if v is None:
            cells += ["failed", "—"]
            per.append("—")
            results.append(None)
            continue
        e = errors(d)
        cells += [thousands(v) + error_note(d), ratio(v, r)]
        read_errors = read_errors or int(d["read"]) > 0
        per.append("%.2f" % (int(d["accepts"]) / max(int(d["requests"]), 1)))
        if pass_through(row):
            results.append(r and v / r >= goal and not e)
        elif base(row) == "airlock-intercept":
            results.append(r and v / r >= 0.5 and not e)
    if pass_through(row):
        target = "≥ 0.6× / ≥ 0.6×"
    elif base(row) == "airlock-intercept":
        target = "≥ 0.5× / ≥ 0.5×"
    else:
        target = ""
    res = " / ".join("—" if x is None else verdict(x) for x in results) if target else ""
    print("| %s | %s | %s | %s | %s | %s | %s | %s |" % (name(row), *cells, " / ".join(per),
                                                      target, res))
print()
if read_errors:
    print("Read errors: the connection ended after an answer that did not say `Connection: "
          "close` (tinyproxy closes every client connection after one answer), or it was reset; "
          "wrk then reconnects, and counts only complete answers.")
    print()

# TLS handshakes without wrk's busy-polling
def hps(row, mode):
    d = hs.get((row, mode))
    return int(d["requests"]) / (int(d["duration_us"]) / 1e6) if d else None

if hs:
    print("**HTTPS, a new connection per request, without wrk's busy-polling** "
          "(bench/proxy/loadgen.c, %s connections, %s threads, %s s after 1 s untimed; "
          "\"resumed\": each connection resumes the TLS session of the one before it):"
          % (connections, threads, seconds))
    print()
    print("| path | full handshakes (req/s) | ÷ direct | resumed (req/s) | ÷ direct "
          "| resumed by the server | target | result |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | --- | --- |")
    for row in rows:
        if ref(row) != "direct-https":
            continue
        cells, results, share = [], [], "—"
        for mode in ("full", "resumed"):
            d = hs.get((row, mode))
            v, r = hps(row, mode), hps(ref(row), mode)
            if v is None:
                cells += ["failed", "—"]
                results.append(None)
                continue
            cells += [thousands(v) + error_note(d), ratio(v, r)]
            results.append(r and v / r >= 0.5 and not errors(d))
            if mode == "resumed":
                share = "%.0f%%" % (100.0 * int(d["resumed"]) / max(int(d["requests"]), 1))
        intercept = base(row) == "airlock-intercept"
        target = "≥ 0.5× / ≥ 0.5×" if intercept else ""
        res = " / ".join("—" if x is None else verdict(x) for x in results) if intercept else ""
        print("| %s | %s | %s | %s | %s | %s | %s | %s |" % (name(row), *cells, share, target, res))
    print()

# throughput
def speed(row):
    d = tput.get(row)
    return statistics.median(float(x) for x in d["speeds"].split(",")) if d else None

print("**10 MiB download throughput**, curl, median of %s downloads over one keep-alive "
      "connection after 1 untimed:" % downloads)
print()
print("| path | MiB/s | ÷ direct | target | result |")
print("| --- | ---: | ---: | --- | --- |")
for row in rows:
    v, r = speed(row), speed(ref(row))
    if v is None:
        print("| %s | failed | — | %s |  |" % (name(row), "≥ 0.9×" if pass_through(row) else ""))
        continue
    target = "≥ 0.9×" if pass_through(row) else ""
    res = verdict(r and v / r >= 0.9) if target else ""
    print("| %s | %s | %s | %s | %s |" % (name(row), thousands(v / 1048576), ratio(v, r), target, res))
print()

# latency
def p50(row, mode):
    d = lat.get((row, mode))
    return statistics.median(float(x) for x in d["times"].split(",")) * 1e6 if d else None

print("**Latency of one serial request** (1 KiB), curl, median of %s requests one after the "
      "other after 1 untimed; added = path − direct:" % serial)
print()
print("| path | new connection (µs) | added (µs) | keep-alive (µs) | added (µs) "
      "| nginx connections per request (new / keep-alive) | target | result |")
print("| --- | ---: | ---: | ---: | ---: | ---: | --- | --- |")
for row in rows:
    cells, per, results = [], [], []
    for mode in ("new", "keep-alive"):
        v, r = p50(row, mode), p50(ref(row), mode)
        if v is None:
            cells += ["failed", "—"]
            per.append("—")
            results.append(None)
            continue
        add = v - r if r is not None else None
        cells += ["%.0f" % v, "—" if row == ref(row) or add is None else "%+.0f" % add]
        per.append("%.2f" % (int(lat[(row, mode)]["accepts"]) / (int(serial) + 1)))
        results.append(add is not None and add <= 100)
    target = "≤ +100 µs / ≤ +100 µs" if pass_through(row) else ""
    res = " / ".join("—" if x is None else verdict(x) for x in results) if target else ""
    print("| %s | %s | %s | %s | %s | %s | %s | %s |" % (name(row), *cells, " / ".join(per),
                                                      target, res))

if fails:
    print()
    print("**Failed** (these rows' figures are missing above):")
    print()
    for row in rows:
        for reason in fails.get(row, []):
            print("- %s — %s" % (name(row), reason.replace("|", "\\|")))
EOF
)

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
commit=$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ "$commit" != unknown ] && ! git -C "$repo" diff-index --quiet HEAD -- 2>/dev/null; then
	commit=$commit-dirty
fi
reproduce="bench/proxy.sh"
[ -z "${BENCH_PATHS:-}" ] || reproduce="BENCH_PATHS=\"$selected\" $reproduce"
[ -z "${BENCH_SECONDS:-}" ] || reproduce="BENCH_SECONDS=$seconds $reproduce"
[ -z "${BENCH_SERIAL:-}" ] || reproduce="BENCH_SERIAL=$serial $reproduce"
[ -z "${BENCH_DOWNLOADS:-}" ] || reproduce="BENCH_DOWNLOADS=$downloads $reproduce"
versions="$v_nginx, $v_wrk, $v_curl, $v_openssl"
[ "$want_tinyproxy" = 0 ] || versions="$versions, ${v_tinyproxy:-tinyproxy}"
[ "$want_squid" = 0 ] || versions="$versions, ${v_squid:-squid}"
[ "$want_pass$want_intercept" = 00 ] || versions="$versions, ${v_airlock:-airlock (no binary)}"

intro="Measured $(date -u +%Y-%m-%d) on $(nproc) cores (${cpu:-unknown CPU}), kernel $(uname -r),
at commit $commit, as $(id -un); $versions. Everything on 127.0.0.1 and unpinned: the client
(wrk with $threads threads, or curl), the proxy and nginx share the machine's $(nproc) CPUs, so
compare the ratios of one run. Upstream: nginx with one worker (the same CPU cost for every
path), access log off, sendfile, keepalive_requests 1000000, serving /1k (1,024 bytes) and
/10m (10 MiB) from the page cache, over HTTP and over HTTPS (TLS 1.3, a P-256 certificate for
bench.test from a test CA). tinyproxy and squid are forward proxies (the client sends
absolute-form targets): tinyproxy with LogLevel Warning and MaxClients 256; squid as one process
(-N) with no cache, access_log none and its default persistent connections to clients and to
nginx. airlock's rows run the client inside \`airlock run --policy P --resolve
bench.test:127.0.0.1\`, P allowing bench.test and 127.0.0.0/8 on both ports; the client reaches
bench.test through the sandbox's DNS and airlock's transparent listener (curl with \`--noproxy
'*'\`; wrk ignores HTTP_PROXY); wrk and curl time themselves, so the sandbox's start is not
counted. Pass-through: a policy without credentials (plain HTTP to a name is parsed, its upstream
connection kept for the next connection and its bodies spliced: docs/EGRESS.md). Intercepted: a policy with an env credential
bound to bench.test (\`${intercept_options[*]} $upstream_ca_option\` the test CA), every request
carrying the sandbox's surrogate in Authorization; before measuring, nginx confirms that it
receives the real token. \"nginx connections per request\": connections nginx accepted over
requests completed, 1.00 when every request had a connection to nginx of its own, 0.00 when a
proxy keeps reusing its own. The HTTPS rows are measured a second time with a client of the
bench's own, bench/proxy/loadgen.c: wrk keeps its connect callback registered for writability
through a TLS handshake, so it spins a CPU until the server answers, which on $(nproc) CPUs takes
time from whoever answers; loadgen waits for what OpenSSL asks for. wrk resumes TLS sessions (it
reuses each connection's SSL object), so its \"new connection\" rows are resumed handshakes;
loadgen measures full and resumed ones apart. The run took $((elapsed / 60)) min $((elapsed % 60)) s; load
average before: $load_before, after: $load_after."
body="## Egress proxy

$(tr '\n' ' ' <<<"$intro" | fmt -w 100)

$tables

Targets (issue 18): pass-through ≥ 0.6× direct req/s with new connections and with
keep-alive, ≥ 0.9× direct 10 MiB throughput (≤ 0.1 ms added latency, from an earlier issue);
interception ≥ 0.5× direct HTTPS req/s with new connections and with keep-alive. A miss is
reported, not failed on.

Reproduce, as root: \`$reproduce\`
(uses \`AIRLOCK=build/cli/airlock\` by default; \`BENCH_SECONDS=1\` for a quick run).
"

printf '%s\n' "$body"

if [ "$doc" != - ]; then
	printf '%s\n' "$body" >"$run/section.md"
	bench_write_section "$doc" "## Egress proxy" "$run/section.md"
	log "wrote the Egress proxy section of $doc"
fi
