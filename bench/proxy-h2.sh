#!/usr/bin/env bash
# HTTP/2 and gRPC through airlock's egress proxy, on loopback, against the same client straight
# to the upstream (direct). Rows: direct; airlock pass-through (a policy without credentials: the
# TLS connection's SNI checked, then spliced, h2 end to end); airlock intercepted (a credential
# bound to the host: TLS terminated on both sides, each HTTP/2 stream bridged by netns/http2.c,
# the surrogate in its Authorization header swapped for the real token). tinyproxy and squid have
# no rows here: as forward proxies they only tunnel TLS (CONNECT), which is the pass-through row.
# Measured for each row:
#   - h2load, 1 KiB GETs, keep-alive: BENCH_H2_CLIENTS connections × BENCH_H2_STREAMS streams
#     at once, for BENCH_SECONDS after 1 s untimed;
#   - h2load, a new connection per batch: 32 connections × 10 streams each, one batch of 10 GETs
#     per connection, BENCH_H2_BATCHES h2load runs one after the other (requests over the sum
#     of their times);
#   - gRPC unary calls/s (python3-grpcio on both ends, bench/proxy/grpc-*.py): BENCH_GRPC_PROCS
#     client processes, each one channel with 16 calls in flight, for BENCH_SECONDS after 1 s;
#   - the CPU time each process spends per request (h2load, nginx's worker, airlock's proxy
#     process airlock-net, from /proc/PID/stat) over BENCH_H2_CPU_REQUESTS keep-alive requests:
#     unlike requests/s it hardly depends on what else runs on the machine.
# The upstream answers only requests that carry the real token (nginx: 403 for /1k otherwise;
# the gRPC server: PERMISSION_DENIED), so that every request counted was swapped on the
# intercepted row. The measurements go over every row in turn, BENCH_ROUNDS times; the table
# gives each row's median and the ratios to direct of each round (min–max). Prints markdown and
# writes it to the "Egress proxy: HTTP/2 and gRPC" section of docs/BENCHMARKS.md.
#
# usage: bench/proxy-h2.sh         (as root)
# environment: AIRLOCK (default build/cli/airlock), BENCH_SECONDS (default 5), BENCH_ROUNDS
#              (default 3), BENCH_H2_CLIENTS (default 4), BENCH_H2_STREAMS (default 32),
#              BENCH_H2_BATCHES (default 20), BENCH_GRPC_PROCS (default 4),
#              BENCH_H2_CPU_REQUESTS (default 50000), BENCH_DOC (default docs/BENCHMARKS.md;
#              "-" = print only)
# Installs nginx-light (its build has http_v2), nghttp2-client (h2load), python3-grpcio, curl
# and openssl with apt-get when missing. Everything it starts listens on 127.0.0.1 ports 18082
# (nginx, HTTPS with h2) and 18083 (gRPC), runs in the foreground with its files in one folder
# under /tmp, and is stopped and removed at exit. Takes ~1 to 2.5 min a round on this 2-vCPU
# VM, depending on its load: 3 to 8 min by default (3 min 36 s at a load average of 8).

set -Eeuo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
export LC_ALL=C

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
airlock=${AIRLOCK:-$repo/build/cli/airlock}
seconds=${BENCH_SECONDS:-5}
rounds=${BENCH_ROUNDS:-3}
h2_clients=${BENCH_H2_CLIENTS:-4}
h2_streams=${BENCH_H2_STREAMS:-32}
batches=${BENCH_H2_BATCHES:-20}
grpc_procs=${BENCH_GRPC_PROCS:-4}
cpu_requests=${BENCH_H2_CPU_REQUESTS:-50000}
doc=${BENCH_DOC:-$repo/docs/BENCHMARKS.md}
py=/usr/bin/python3 # Debian's, which has python3-grpcio

h2_port=18082
grpc_port=18083
batch_clients=32
batch_streams=10
grpc_inflight=16
grpc_workers=8
h2_threads=2

for v in BENCH_SECONDS:$seconds BENCH_ROUNDS:$rounds BENCH_H2_CLIENTS:$h2_clients \
	BENCH_H2_STREAMS:$h2_streams BENCH_H2_BATCHES:$batches BENCH_GRPC_PROCS:$grpc_procs \
	BENCH_H2_CPU_REQUESTS:$cpu_requests; do
	bench_positive "${v%%:*}" "${v#*:}"
done
[ "$(id -u)" = 0 ] || die "run it as root (airlock's intercepted rows and apt-get)"
[ -x "$airlock" ] || die "no airlock binary at $airlock (build first: scripts/dev.sh build)"

rows=(direct airlock-pass airlock-intercept)

# ---- packages ----

missing=()
for n in nginx:nginx-light h2load:nghttp2-client curl:curl openssl:openssl ss:iproute2; do
	PATH=$PATH:/usr/sbin:/sbin command -v "${n%%:*}" >/dev/null || missing+=("${n#*:}")
done
[ -x "$py" ] || missing+=(python3)
[ -x "$py" ] && "$py" -c 'import grpc' 2>/dev/null || missing+=(python3-grpcio)
bench_apt "${missing[@]}" || exit 1
export PATH=$PATH:/usr/sbin:/sbin
nginx -V 2>&1 | grep -q -- --with-http_v2_module || die "this nginx has no http_v2 module"

listening()
{
	[ -n "$(ss -Hltn "sport = :$1")" ]
}
for port in "$h2_port" "$grpc_port"; do
	listening "$port" && die "port $port is in use already: $(ss -Hltnp "sport = :$port" | head -n 1)"
done

# ---- the run folder, the servers, and cleanup ----

run=$(mktemp -d /tmp/airlock-bench-h2.XXXXXX)
chmod 0711 "$run"
servers=()

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
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'log "failed at line $LINENO: $BASH_COMMAND"' ERR

wait_port()
{
	for _ in $(seq 200); do
		listening "$1" && return 0
		kill -0 "$2" 2>/dev/null || die "the server for port $1 exited before listening: $(tail -n 5 "$3")"
		sleep 0.05
	done
	die "nothing listens on port $1 after 10 s: $(tail -n 5 "$3")"
}

ws=$run/ws # the sandboxes' workspace: the gRPC client and the CA certificate
www=$run/www
pki=$run/pki
mkdir -p "$ws" "$www" "$pki" "$run/nginx"
cp "$repo/bench/proxy/grpc-client.py" "$ws/grpc-client.py"
head -c 768 /dev/urandom | base64 -w 0 >"$www/1k"
chmod 0755 "$www"
chmod 0644 "$www/1k"

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
	-subj "/CN=airlock bench CA" -keyout "$pki/ca.key" -out "$pki/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=bench.test" \
	-keyout "$pki/srv.key" -out "$pki/srv.csr" 2>/dev/null
printf 'subjectAltName=DNS:bench.test,IP:127.0.0.1\n' >"$pki/ext"
openssl x509 -req -in "$pki/srv.csr" -CA "$pki/ca.pem" -CAkey "$pki/ca.key" -CAcreateserial \
	-days 2 -extfile "$pki/ext" -out "$pki/srv.pem" 2>/dev/null
cp "$pki/ca.pem" "$ws/ca.pem"

# The credential: a fake GitHub token in airlock's environment; the intercepted sandbox holds its
# surrogate in $TOKEN, the other rows the real token.
BENCH_TOKEN=ghp_$(head -c 96 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 36)
export BENCH_TOKEN

# nginx: one worker; /1k only for the real token.
{
	bench_nginx_head "$run/nginx"
	cat <<EOF
	map_hash_bucket_size 128;
	map \$http_authorization \$bench_auth {
		"Bearer $BENCH_TOKEN" swapped;
		default "not swapped";
	}
	server {
		listen 127.0.0.1:$h2_port ssl http2;
		server_name bench.test;
		ssl_certificate $pki/srv.pem;
		ssl_certificate_key $pki/srv.key;
		ssl_protocols TLSv1.2 TLSv1.3;
		root $www;
		location = /1k {
			if (\$bench_auth != swapped) {
				return 403;
			}
		}
		location = /auth {
			default_type text/plain;
			return 200 "\$bench_auth\n";
		}
	}
}
EOF
} >"$run/nginx/nginx.conf"
nginx -p "$run/nginx" -c "$run/nginx/nginx.conf" -e "$run/nginx/error.log" \
	>"$run/nginx/out.log" 2>&1 &
servers+=($!)
wait_port "$h2_port" "$!" "$run/nginx/error.log"
nginx_worker=$(ps -o pid= --ppid "${servers[-1]}" | head -n 1 | tr -d ' ')
[ -n "$nginx_worker" ] || die "nginx has no worker process"

"$py" "$repo/bench/proxy/grpc-server.py" "$grpc_port" "$pki/srv.pem" "$pki/srv.key" \
	"$grpc_workers" >"$run/grpc.log" 2>&1 &
servers+=($!)
wait_port "$grpc_port" "$!" "$run/grpc.log"

# The policies: the memory limit lifted (four python3-grpcio clients outgrow the default one).
rules='[{"destination": "bench.test", "port": '$h2_port', "action": "allow"},
            {"destination": "bench.test", "port": '$grpc_port', "action": "allow"},
            {"destination": "127.0.0.0/8", "port": '$h2_port', "action": "allow"},
            {"destination": "127.0.0.0/8", "port": '$grpc_port', "action": "allow"}]'
cat >"$run/pass.json" <<EOF
{"resources": {"memory": "max"},
 "workspace": {"root": "$ws"},
 "network": {"default": "deny",
  "rules": $rules}}
EOF
cat >"$run/intercept.json" <<EOF
{"resources": {"memory": "max"},
 "workspace": {"root": "$ws"},
 "network": {"default": "deny",
  "rules": $rules},
 "credentials": [{"name": "bench", "source": {"type": "env", "var": "BENCH_TOKEN"},
   "injection": {"type": "env_var", "var_name": "TOKEN"}, "hosts": ["bench.test"]}]}
EOF

# ---- the clients ----

# inside ROW SCRIPT: /bin/sh -c SCRIPT as ROW's client, with $TOKEN (the surrogate inside the
# intercepted sandbox, else the real token), $URL (https://.../), $GCLIENT (grpc-client.py),
# $GTARGET, $GCA and $GNAME (the gRPC client's target, roots and name to verify).
inside()
{
	local row=$1 script=$2
	case $row in
	direct)
		TOKEN=$BENCH_TOKEN URL=https://127.0.0.1:$h2_port GTARGET=127.0.0.1:$grpc_port \
			GCA=$pki/ca.pem GNAME=bench.test GCLIENT=$ws/grpc-client.py /bin/sh -c "$script"
		;;
	airlock-pass)
		"$airlock" run -p "$run/pass.json" --resolve bench.test:127.0.0.1 -- \
			env TOKEN="$BENCH_TOKEN" URL="https://bench.test:$h2_port" \
			GTARGET="bench.test:$grpc_port" GCA=/workspace/ca.pem GNAME=bench.test \
			GCLIENT=/workspace/grpc-client.py GRPC_DNS_RESOLVER=native /bin/sh -c "$script"
		;;
	airlock-intercept)
		# The sandbox's CA alone (the last certificate of its trust store).
		# shellcheck disable=SC2016 # awk's fields
		"$airlock" run -p "$run/intercept.json" --resolve bench.test:127.0.0.1 \
			--upstream-ca "$pki/ca.pem" --no-broker -- \
			env URL="https://bench.test:$h2_port" GTARGET="bench.test:$grpc_port" \
			GCA=/tmp/airlock-ca.pem GNAME=bench.test GCLIENT=/workspace/grpc-client.py \
			GRPC_DNS_RESOLVER=native /bin/sh -c \
			'awk "/BEGIN CERTIFICATE/ { b = \"\" } { b = b \$0 \"\n\" } END { printf \"%s\", b }" \
				/etc/airlock/ca-bundle.pem >/tmp/airlock-ca.pem || exit 1
			eval "$1"' sh "$script"
		;;
	esac
}

results=$run/results
: >"$results"

# h2sum: the requests answered with 2xx ("ok"), the failed or otherwise answered ones ("failed";
# a request can count twice there, it is only looked at for zero) and the sum of h2load's
# "finished in" times ("s") of the h2load runs whose output is on stdin, as "ok=N s=S failed=N".
h2sum()
{
	awk '
		/^finished in / { t = $3; sub(/,$/, "", t); x = t + 0; if (t ~ /ms$/) x /= 1000; else if (t ~ /us$/) x /= 1e6; s += x }
		/^requests: / { failed += $10 + $12 + $14 }
		/^status codes: / { ok += $3; failed += $5 + $7 + $9 }
		END { printf "ok=%d s=%.6f failed=%d\n", ok, s, failed }'
}

# The scripts run inside each row's client; they print result lines.
# shellcheck disable=SC2016 # expanded by the client's shell
keepalive_script='h2load -t '$h2_threads' -c '$h2_clients' -m '$h2_streams' -D '$seconds' \
	--warm-up-time 1 -H "authorization: Bearer $TOKEN" "$URL/1k" 2>&1'
# For the keep-alive figure h2load's "finished in" counts the warm-up too: its req/s is over
# the timed part.
# shellcheck disable=SC2016
batch_script='i=0; while [ $i -lt '$batches' ]; do i=$((i + 1)); h2load -t '$h2_threads' \
	-c '$batch_clients' -m '$batch_streams' -n '$((batch_clients * batch_streams))' \
	-H "authorization: Bearer $TOKEN" "$URL/1k" 2>&1 || exit 1; done'
# shellcheck disable=SC2016
grpc_script='i=0; while [ $i -lt '$grpc_procs' ]; do i=$((i + 1)); '"$py"' "$GCLIENT" \
	"$GTARGET" "$GCA" "$GNAME" 1 '$seconds' '$grpc_inflight' & done; wait'

# CPU: the h2load of the keep-alive figure, for a number of requests; the shell then prints
# the clock ticks h2load used (its children's, from /proc/$$/stat), and idles 0.3 s so that the
# proxy's last ticks are read before the sandbox ends.
# shellcheck disable=SC2016
cpu_script='h2load -t '$h2_threads' -c '$h2_clients' -m '$h2_streams' -n '$cpu_requests' \
	-H "authorization: Bearer $TOKEN" "$URL/1k" 2>&1 || exit 1
	echo "client-ticks $(cut -d " " -f 16,17 /proc/$$/stat)"; sleep 0.3'

# ticks PID: the user + system clock ticks PID has used so far; nothing once it is gone.
ticks()
{
	awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || true
}

# proxy_of PID: airlock's proxy process (airlock-net) under PID, within three generations.
proxy_of()
{
	ps -eo pid=,ppid=,comm= | awk -v top="$1" '
		{ parent[$1] = $2; comm[$1] = $3 }
		END {
			for (p in comm) {
				if (comm[p] != "airlock-net")
					continue
				q = p
				for (i = 0; i < 4; i++) {
					q = parent[q]
					if (q == top) {
						print p
						exit
					}
				}
			}
		}'
}

# cpu_run ROUND ROW: records the CPU ticks per process of cpu_requests requests through ROW.
cpu_run()
{
	local round=$1 row=$2 out=$run/cpu.out n0 n1 bg pid="" t last=0 ok client

	n0=$(ticks "$nginx_worker")
	inside "$row" "$cpu_script" >"$out" 2>&1 &
	bg=$!
	if [ "$row" != direct ]; then
		for _ in $(seq 200); do
			pid=$(proxy_of "$bg")
			[ -z "$pid" ] || break
			sleep 0.05
		done
		[ -n "$pid" ] || log "$row: no airlock-net process found; the proxy's CPU is not counted"
		# It started with this run: its ticks so far are all this run's.
		while [ -n "$pid" ]; do
			t=$(ticks "$pid")
			[ -n "$t" ] || break
			last=$t
			sleep 0.05
		done
	fi
	wait "$bg" || die "$row: h2load failed: $(tail -n 3 "$out")"
	n1=$(ticks "$nginx_worker")
	ok=$(awk '/^status codes: / { print $3 }' "$out")
	client=$(awk '/^client-ticks / { print $2 + $3 }' "$out")
	if [ "${ok:-0}" -le 0 ] || [ -z "$client" ]; then
		die "$row: no h2load result: $(tail -n 3 "$out")"
	fi
	echo "cpu round=$round row=$row ok=$ok client=$client nginx=$((n1 - n0)) proxy=$last" >>"$results"
	tail -n 1 "$results" >&2
}

preflight()
{
	local row=$1 out=$run/pre.out
	# shellcheck disable=SC2016
	inside "$row" 'curl -sS --http2 --cacert "${GCA}" --resolve bench.test:'$h2_port':127.0.0.1 \
		-o /dev/null -w "%{http_version} %{http_code}\n" -H "authorization: Bearer $TOKEN" \
		https://bench.test:'$h2_port'/1k; curl -sS --http2 --cacert "${GCA}" \
		--resolve bench.test:'$h2_port':127.0.0.1 -H "authorization: Bearer $TOKEN" \
		https://bench.test:'$h2_port'/auth' >"$out" 2>&1 || true
	[ "$(paste -sd ' ' "$out")" = "2 200 swapped" ] ||
		die "$row: preflight: not HTTP/2 with the real token at nginx: $(paste -sd ' ' "$out" | cut -c 1-300)"
}

load_before=$(cut -d ' ' -f 1-3 /proc/loadavg)
if awk -v l="${load_before%% *}" -v n="$(nproc)" 'BEGIN { exit !(l > n / 2) }'; then
	log "warning: load average ${load_before%% *} on $(nproc) cores before the run: other work" \
		"shares the CPUs, and the figures will be slower and noisier than on a quiet machine"
fi
start=$SECONDS
for row in "${rows[@]}"; do
	preflight "$row"
done

for round in $(seq "$rounds"); do
	for row in "${rows[@]}"; do
		log "round $round, $row: h2load keep-alive, $h2_clients × $h2_streams streams, ${seconds} s"
		out=$(inside "$row" "$keepalive_script") || die "$row: h2load failed: $(tail -n 3 <<<"$out")"
		# The timed part's rate: requests over BENCH_SECONDS.
		echo "ka round=$round row=$row $(h2sum <<<"$out" | sed "s/ s=[^ ]*/ s=$seconds/")" >>"$results"
		tail -n 1 "$results" >&2
	done
	for row in "${rows[@]}"; do
		log "round $round, $row: h2load, $batches × ($batch_clients new connections × $batch_streams streams)"
		out=$(inside "$row" "$batch_script") || die "$row: h2load failed: $(tail -n 3 <<<"$out")"
		line=$(h2sum <<<"$out")
		echo "batch round=$round row=$row $line" >>"$results"
		tail -n 1 "$results" >&2
	done
	for row in "${rows[@]}"; do
		log "round $round, $row: gRPC, $grpc_procs clients × $grpc_inflight calls in flight, ${seconds} s"
		out=$(inside "$row" "$grpc_script") || die "$row: gRPC client failed: $(tail -n 3 <<<"$out")"
		line=$(awk '/^grpc-result / { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] += kv[2] } n++ }
			END { printf "ok=%d s=%.6f failed=%d procs=%d\n", v["calls"], n ? v["seconds"] / n : 0, v["errors"], n }' <<<"$out")
		[[ $line == *procs=$grpc_procs ]] || die "$row: not $grpc_procs gRPC results: $(tail -n 3 <<<"$out")"
		echo "grpc round=$round row=$row $line" >>"$results"
		tail -n 1 "$results" >&2
	done
	for row in "${rows[@]}"; do
		log "round $round, $row: CPU per request, h2load keep-alive, $cpu_requests requests"
		cpu_run "$round" "$row"
	done
done
for pid in "${servers[@]}"; do
	kill -0 "$pid" 2>/dev/null || die "a server died during the run (pid $pid)"
done
elapsed=$((SECONDS - start))
load_after=$(cut -d ' ' -f 1-3 /proc/loadavg)

# ---- the section ----

tables=$("$py" - "$results" "$rounds" "$(getconf CLK_TCK)" "$cpu_requests" "${rows[@]}" <<'EOF'
import statistics, sys

path, rounds, hz, cpu_requests, *rows = sys.argv[1:]
hz = int(hz)
rounds = int(rounds)
r = {}
for line in open(path):
    kind, rest = line.split(" ", 1)
    d = dict(p.split("=", 1) for p in rest.split())
    r[(kind, d["row"], int(d["round"]))] = d

names = {
    "direct": "direct",
    "airlock-pass": "airlock pass-through (SNI checked, spliced; h2 end to end)",
    "airlock-intercept": "airlock intercepted (TLS terminated, streams bridged, surrogate swapped)",
}

def rate(kind, row, n):
    d = r.get((kind, row, n))
    if not d or float(d["s"]) <= 0:
        return None
    return int(d["ok"]) / float(d["s"])

def failed(kind, row):
    return sum(int(r[(kind, row, n)]["failed"]) for n in range(1, rounds + 1) if (kind, row, n) in r)

def cells(kind, row):
    v = [x for x in (rate(kind, row, n) for n in range(1, rounds + 1)) if x is not None]
    if not v:
        return ["failed", "—"]
    med = statistics.median(v)
    f = failed(kind, row)
    text = format(int(round(med)), ",") + (" (%d failed)" % f if f else "")
    if row == "direct":
        return [text, "1.00×"]
    q = [rate(kind, row, n) / rate(kind, "direct", n) for n in range(1, rounds + 1)
         if rate(kind, row, n) is not None and rate(kind, "direct", n)]
    if not q:
        return [text, "—"]
    return [text, "%.2f× (%.2f–%.2f)" % (statistics.median(q), min(q), max(q))]

def ka_ratio(row):
    q = [rate("ka", row, n) / rate("ka", "direct", n) for n in range(1, rounds + 1)
         if rate("ka", row, n) is not None and rate("ka", "direct", n)]
    return statistics.median(q) if q else None

print("| path | h2 keep-alive (req/s) | ÷ direct | h2, new connection per 10 streams (req/s) "
      "| ÷ direct | gRPC unary (calls/s) | ÷ direct | target | result |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |")
for row in rows:
    c = cells("ka", row) + cells("batch", row) + cells("grpc", row)
    target, res = "", ""
    if row == "airlock-intercept":
        target = "keep-alive ≥ 0.5×"
        q = ka_ratio(row)
        res = "—" if q is None else ("**pass**" if q >= 0.5 and not failed("ka", row) else "**miss**")
    print("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (names[row], *c, target, res))

def us(row, n, what):
    d = r.get(("cpu", row, n))
    return int(d[what]) * 1e6 / hz / int(d["ok"]) if d and int(d["ok"]) else None

def med(row, what):
    v = [x for x in (us(row, n, what) for n in range(1, rounds + 1)) if x is not None]
    return statistics.median(v) if v else None

print()
print("**CPU time per request** (µs; h2load keep-alive as above, %s requests; clock ticks of "
      "each process from /proc/PID/stat, median of the rounds), and what the CPU alone allows: "
      "direct's total ÷ the row's total, the ratio the row would reach if the CPUs were the only "
      "limit:" % format(int(cpu_requests), ","))
print()
print("| path | h2load | nginx | airlock's proxy | total | direct's total ÷ total |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
for row in rows:
    tot = [sum(us(row, n, w) for w in ("client", "nginx", "proxy"))
           for n in range(1, rounds + 1) if us(row, n, "client") is not None]
    dtot = [sum(us("direct", n, w) for w in ("client", "nginx", "proxy"))
            for n in range(1, rounds + 1) if us("direct", n, "client") is not None]
    if not tot or not dtot:
        print("| %s | failed | | | | |" % names[row])
        continue
    t, dt = statistics.median(tot), statistics.median(dtot)
    print("| %s | %.1f | %.1f | %s | %.1f | %.2f× |" % (
        names[row], med(row, "client"), med(row, "nginx"),
        "—" if row == "direct" else "%.1f" % med(row, "proxy"), t, dt / t))
EOF
)

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
commit=$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ "$commit" != unknown ] && ! git -C "$repo" diff-index --quiet HEAD -- 2>/dev/null; then
	commit=$commit-dirty
fi
reproduce="bench/proxy-h2.sh"
for v in BENCH_SECONDS BENCH_ROUNDS BENCH_H2_CLIENTS BENCH_H2_STREAMS BENCH_H2_BATCHES BENCH_GRPC_PROCS \
	BENCH_H2_CPU_REQUESTS; do
	[ -z "${!v:-}" ] || reproduce="$v=${!v} $reproduce"
done
v_nginx=$(nginx -v 2>&1 | sed 's/^nginx version: //')
v_h2load=$(h2load --version 2>/dev/null | head -n 1 | sed 's/^h2load //')
v_grpc=$("$py" -c 'import grpc; print(grpc.__version__)' 2>/dev/null || echo "?")
v_openssl=$(openssl version | cut -d ' ' -f 1-2)
v_airlock=$("$airlock" --version 2>/dev/null | head -n 1 || true)

intro="Measured $(date -u +%Y-%m-%d) on $(nproc) cores (${cpu:-unknown CPU}), kernel $(uname -r),
at commit $commit, as root; $v_nginx, h2load ($v_h2load), python3-grpcio $v_grpc, $v_openssl,
${v_airlock:-airlock}. Everything on 127.0.0.1 and unpinned: client, proxy and upstream share
the $(nproc) CPUs. Upstream: nginx with one worker over TLS 1.3 with ALPN h2 (\`listen ... ssl
http2\`), serving /1k (1,024 bytes) only to a request whose Authorization carries the real token
(403 otherwise), and a gRPC server of python3-grpcio (a generic handler echoing a 100-byte
request, $grpc_workers worker threads) that answers only calls whose metadata carries it
(PERMISSION_DENIED otherwise): every request counted below reached the upstream with the real
token. Rows: direct (the clients on the host, with the real token); airlock pass-through and
intercepted run the clients inside \`airlock run --resolve bench.test:127.0.0.1\` with a policy
allowing bench.test and 127.0.0.0/8 on both ports: pass-through without credentials (the client
sends the real token; the proxy checks the SNI and splices), intercepted with an env credential
bound to bench.test (\`--no-broker --upstream-ca\` the test CA; the client sends its surrogate,
which each stream's swap replaces). Keep-alive: \`h2load -t $h2_threads -c $h2_clients -m
$h2_streams -D $seconds --warm-up-time 1\` ($h2_clients connections, $h2_streams streams at once
on each). New connection per 10 streams: $batches runs of \`h2load -t $h2_threads -c $batch_clients
-m $batch_streams -n $((batch_clients * batch_streams))\` (each connection carries one batch of 10
concurrent GETs, then closes; TLS handshake included; requests over the sum of h2load's times).
gRPC: $grpc_procs client processes (bench/proxy/grpc-client.py), each one channel with
$grpc_inflight unary calls in flight, 1 s untimed then $seconds s. $rounds rounds, each going over
every row in turn; a figure is the median of the rounds, a ratio the median (min–max) of the
rounds' ratios to direct in the same round. The run took $((elapsed / 60)) min $((elapsed % 60)) s;
load average before: $load_before, after: $load_after."

body="## Egress proxy: HTTP/2 and gRPC

$(tr '\n' ' ' <<<"$intro" | fmt -w 100)

$tables

Target (issue 18): intercepted HTTP/2 keep-alive ≥ 0.5× direct req/s. A miss is reported, not
failed on. tinyproxy and squid have no rows: they tunnel TLS with CONNECT and do not speak
HTTP/2 to the client themselves (the pass-through row is that case).

Reproduce, as root: \`$reproduce\`
(uses \`AIRLOCK=build/cli/airlock\` by default; \`BENCH_SECONDS=2 BENCH_ROUNDS=1\` for a quick run).
"

printf '%s\n' "$body"

if [ "$doc" != - ]; then
	printf '%s\n' "$body" >"$run/section.md"
	bench_write_section "$doc" "## Egress proxy: HTTP/2 and gRPC" "$run/section.md"
	log "wrote the Egress proxy: HTTP/2 and gRPC section of $doc"
fi
