#!/usr/bin/env bash
# How fast can a 10 MiB download go through any relay of airlock's shape on this machine? The
# client in a network namespace of its own, reaching the host over a veth pair (as a sandbox
# does), and nginx on the host's loopback; the same curl downloads over one keep-alive connection
# along each path:
#   loopback       curl on the host straight to nginx (bench/proxy.sh's "direct");
#   veth           curl in the namespace straight to nginx over the veth pair: no relay;
#   splice relay   bench/proxy/relay.c, splice mode: two TCP connections joined by splice(2)
#                  through a 1 MiB pipe, nothing else (what airlock's pass-through does with a
#                  body, without parsing, policy or audit);
#   sockmap relay  bench/proxy/relay.c, sockmap mode: the kernel redirects each segment to the
#                  other connection (BPF SK_SKB verdict, bpf_sk_redirect_map), no process in the
#                  data path;
#   airlock        `airlock run` with a pass-through policy (bench/proxy.sh's row).
# For each path, over HTTP and over HTTPS (TLS 1.3; the relays and airlock pass TLS through): the
# median MiB/s of BENCH_DOWNLOADS downloads (curl's own timing), and the machine's busy CPU per
# GiB (clock ticks of /proc/stat's non-idle time over all the downloads, softirqs and kernel
# threads included), which depends less on the machine's other load; and over HTTP, 1 KiB
# keep-alive requests/s (wrk, 32 connections, 2 threads, BENCH_SECONDS; not through the sockmap
# relay: with wrk's 32 connections at once, adding them to the sockmap failed with EOPNOTSUPP,
# not looked into, and the download is what it is there for). The paths alternate, BENCH_ROUNDS
# times; the tables give each path's median and the ratios to loopback of each round (min–max).
# Prints markdown and writes it to the "Egress proxy: the ceiling of a relay" section of
# docs/BENCHMARKS.md.
#
# usage: bench/proxy-ceiling.sh         (as root: a network namespace, a veth pair, BPF)
# environment: AIRLOCK (default build/cli/airlock), BENCH_DOWNLOADS (default 300), BENCH_ROUNDS
#              (default 5), BENCH_SECONDS (default 5), BENCH_DOC (default docs/BENCHMARKS.md;
#              "-" = print only)
# Installs nginx-light, wrk, curl, openssl, gcc and iproute2 with apt-get when missing. nginx
# listens on 127.0.0.1 and on the veth pair, ports 18090 (HTTP) and 18093 (HTTPS); the relays on
# the veth pair, ports 18091, 18092 (to HTTP), 18094 and 18095 (to HTTPS); the namespace is
# airlock-ceiling-PID. All of it is removed at exit. ~1.5 min a round.

set -Eeuo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
export LC_ALL=C

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
airlock=${AIRLOCK:-$repo/build/cli/airlock}
downloads=${BENCH_DOWNLOADS:-300}
rounds=${BENCH_ROUNDS:-5}
seconds=${BENCH_SECONDS:-5}
doc=${BENCH_DOC:-$repo/docs/BENCHMARKS.md}
bench_positive BENCH_DOWNLOADS "$downloads"
bench_positive BENCH_ROUNDS "$rounds"
bench_positive BENCH_SECONDS "$seconds"
[ "$(id -u)" = 0 ] || die "run it as root (a network namespace, a veth pair, BPF)"
[ -x "$airlock" ] || die "no airlock binary at $airlock (build first: scripts/dev.sh build)"

missing=()
for n in nginx:nginx-light wrk:wrk curl:curl openssl:openssl gcc:gcc ip:iproute2; do
	PATH=$PATH:/usr/sbin:/sbin command -v "${n%%:*}" >/dev/null || missing+=("${n#*:}")
done
bench_apt "${missing[@]}" || exit 1
export PATH=$PATH:/usr/sbin:/sbin

port=18090 # nginx, HTTP; then the relays to it
splice_port=18091
sockmap_port=18092
tls_port=18093 # nginx, HTTPS; then the relays to it
tls_splice_port=18094
tls_sockmap_port=18095
ns=airlock-ceiling-$$
host_if=alc$$h
ns_if=alc$$n
host_ip=10.231.$(($$ % 250)).1
ns_ip=10.231.$(($$ % 250)).2
paths=(loopback veth splice sockmap airlock)

all_ports=("$port" "$splice_port" "$sockmap_port" "$tls_port" "$tls_splice_port" "$tls_sockmap_port")
for p in "${all_ports[@]}"; do
	[ -z "$(ss -Hltn "sport = :$p")" ] || die "port $p is in use already"
done

run=$(mktemp -d /tmp/airlock-bench-ceiling.XXXXXX)
chmod 0711 "$run"
pids=()
cleanup()
{
	set +e
	trap - ERR
	for pid in "${pids[@]}"; do
		kill -TERM "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	ip netns del "$ns" 2>/dev/null
	ip link del "$host_if" 2>/dev/null
	rm -rf "$run"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'log "failed at line $LINENO: $BASH_COMMAND"' ERR

gcc -O2 -std=gnu11 -Wall -Wextra -Werror -o "$run/relay" "$repo/bench/proxy/relay.c" ||
	die "failed to build bench/proxy/relay.c"

# The client's namespace: a veth pair with loopback's MTU, as airlock's sandbox has.
ip netns add "$ns"
ip link add "$host_if" type veth peer name "$ns_if"
ip link set "$ns_if" netns "$ns"
ip addr add "$host_ip/30" dev "$host_if"
ip link set "$host_if" mtu 65535 up
ip -n "$ns" addr add "$ns_ip/30" dev "$ns_if"
ip -n "$ns" link set "$ns_if" mtu 65535 up
ip -n "$ns" link set lo up

mkdir -p "$run/www" "$run/nginx" "$run/ws"
# HTTPS: TLS 1.3, a P-256 certificate for every name and address the clients use.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
	-subj "/CN=bench.test" -addext "subjectAltName=DNS:bench.test,IP:127.0.0.1,IP:$host_ip" \
	-keyout "$run/nginx/key.pem" -out "$run/ws/ca.pem" 2>/dev/null
head -c 10485760 /dev/urandom >"$run/www/10m"
head -c 1024 /dev/urandom >"$run/www/1k"
chmod 0755 "$run/www" && chmod 0644 "$run/www/10m" "$run/www/1k"
{
	bench_nginx_head "$run/nginx"
	cat <<EOF
	sendfile on;
	tcp_nopush on;
	server {
		listen 127.0.0.1:$port;
		listen $host_ip:$port;
		root $run/www;
	}
	server {
		listen 127.0.0.1:$tls_port ssl;
		listen $host_ip:$tls_port ssl;
		ssl_certificate $run/ws/ca.pem;
		ssl_certificate_key $run/nginx/key.pem;
		ssl_protocols TLSv1.3;
		root $run/www;
	}
}
EOF
} >"$run/nginx/nginx.conf"
nginx -c "$run/nginx/nginx.conf" 2>"$run/nginx.err" &
pids+=($!)
"$run/relay" splice "$host_ip" "$splice_port" 127.0.0.1 "$port" 2>"$run/splice.err" &
pids+=($!)
"$run/relay" sockmap "$host_ip" "$sockmap_port" 127.0.0.1 "$port" 2>"$run/sockmap.err" &
pids+=($!)
"$run/relay" splice "$host_ip" "$tls_splice_port" 127.0.0.1 "$tls_port" 2>"$run/tls-splice.err" &
pids+=($!)
"$run/relay" sockmap "$host_ip" "$tls_sockmap_port" 127.0.0.1 "$tls_port" 2>"$run/tls-sockmap.err" &
pids+=($!)
for p in "${all_ports[@]}"; do
	for _ in $(seq 100); do
		[ -n "$(ss -Hltn "sport = :$p")" ] && break
		sleep 0.05
	done
	[ -n "$(ss -Hltn "sport = :$p")" ] ||
		die "nothing listens on port $p: $(cat "$run"/*.err | tail -n 5)"
done
printf '{"workspace": {"root": "%s"}, "network": {"default": "deny", "rules": [
  {"destination": "bench.test", "port": %d, "action": "allow"},
  {"destination": "bench.test", "port": %d, "action": "allow"},
  {"destination": "127.0.0.0/8", "port": %d, "action": "allow"},
  {"destination": "127.0.0.0/8", "port": %d, "action": "allow"}]}}\n' \
	"$run/ws" "$port" "$tls_port" "$port" "$tls_port" >"$run/policy.json"

# busy: the machine's non-idle clock ticks so far (/proc/stat's cpu line, idle and iowait out).
busy()
{
	awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat
}

# download PATH SCHEME: one curl, downloads + 1 answers over one connection; prints "MiB/s
# ticks/GiB" (the first, untimed answer is left out of the median, not of the CPU).
download()
{
	local path=$1 scheme=$2 out=$run/curl.out b0 b1 p=$port sp=$splice_port mp=$sockmap_port
	local cmd=(curl -sS --fail --noproxy '*' -o /dev/null -w '%{http_code} %{size_download} %{speed_download}\n')
	local q="10m?n=[0-$downloads]"

	if [ "$scheme" = https ]; then
		p=$tls_port sp=$tls_splice_port mp=$tls_sockmap_port
		cmd+=(--cacert "$run/ws/ca.pem")
		[ "$path" = airlock ] && cmd[-1]=/workspace/ca.pem
	fi
	b0=$(busy)
	case $path in
	loopback) "${cmd[@]}" "$scheme://127.0.0.1:$p/$q" ;;
	veth) ip netns exec "$ns" "${cmd[@]}" "$scheme://$host_ip:$p/$q" ;;
	splice) ip netns exec "$ns" "${cmd[@]}" "$scheme://$host_ip:$sp/$q" ;;
	sockmap) ip netns exec "$ns" "${cmd[@]}" "$scheme://$host_ip:$mp/$q" ;;
	airlock)
		"$airlock" run -p "$run/policy.json" --resolve bench.test:127.0.0.1 -- \
			"${cmd[@]}" "$scheme://bench.test:$p/$q"
		;;
	esac >"$out" 2>"$run/curl.err" || die "$path: curl failed: $(tail -n 3 "$run/curl.err")"
	b1=$(busy)
	[ "$(awk '$1 == 200 && $2 == 10485760' "$out" | wc -l)" = $((downloads + 1)) ] ||
		die "$path: not $((downloads + 1)) answers of 200 and 10 MiB: $(head -n 3 "$out")"
	tail -n +2 "$out" | awk '{ print $3 / 1048576 }' | sort -g |
		awk -v t=$((b1 - b0)) -v n=$((downloads + 1)) '
		{ s[NR] = $1 }
		END { printf "%.0f %.1f\n", s[int((NR + 1) / 2)], t / (n * 10 / 1024) }'
}

# keepalive PATH: wrk's 1 KiB requests/s over 32 keep-alive connections; "-" for the sockmap.
keepalive()
{
	local path=$1 out=$run/wrk.out
	local cmd=(wrk -t 2 -c 32 -d "${seconds}s" --timeout 10s)

	if [ "$path" = sockmap ]; then
		echo -
		return 0
	fi
	case $path in
	loopback) "${cmd[@]}" "http://127.0.0.1:$port/1k" ;;
	veth) ip netns exec "$ns" "${cmd[@]}" "http://$host_ip:$port/1k" ;;
	splice) ip netns exec "$ns" "${cmd[@]}" "http://$host_ip:$splice_port/1k" ;;
	airlock)
		"$airlock" run -p "$run/policy.json" --resolve bench.test:127.0.0.1 -- \
			"${cmd[@]}" "http://bench.test:$port/1k"
		;;
	esac >"$out" 2>&1 || die "$path: wrk failed: $(tail -n 3 "$out")"
	if grep -q 'Non-2xx\|Socket errors' "$out"; then
		die "$path: wrk saw errors: $(grep 'Non-2xx\|Socket errors' "$out")"
	fi
	awk '/^Requests\/sec:/ { printf "%d\n", $2 }' "$out"
}

load_before=$(cut -d ' ' -f 1-3 /proc/loadavg)
start=$SECONDS
results=$run/results
: >"$results"
for r in $(seq "$rounds"); do
	for path in "${paths[@]}"; do
		log "round $r/$rounds: $path"
		echo "$r $path $(download "$path" http) $(keepalive "$path") $(download "$path" https)" >>"$results"
	done
done
elapsed=$((SECONDS - start))
load_after=$(cut -d ' ' -f 1-3 /proc/loadavg)

# ---- the section ----

# table MIB CPU RPS: the markdown rows from the results' fields MIB (MiB/s), CPU (ticks/GiB)
# and RPS (keep-alive req/s; 0: no such column).
table()
{
	awk -v paths="${paths[*]}" -v fm="$1" -v fc="$2" -v fr="$3" '
	function median(list,   a, n, i, j, x) {
		n = split(list, a, " ")
		for (i = 2; i <= n; i++)
			for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { x = a[j]; a[j] = a[j - 1]; a[j - 1] = x }
		return a[int((n + 1) / 2)]
	}
	{ mib[$2] = mib[$2] " " $fm; cpu[$2] = cpu[$2] " " $fc; by[$1, $2] = $fm
	  if (fr) { rps[$2] = rps[$2] " " $fr; ka[$1, $2] = $fr }
	  if ($1 > rounds) rounds = $1 }
	END {
		split("loopback: curl → nginx (bench/proxy.sh'"'"'s direct)|" \
		      "veth: curl in a namespace → veth → nginx, no relay|" \
		      "splice relay: curl in a namespace → veth → relay.c → loopback → nginx|" \
		      "sockmap relay: the same, relay.c joining them by a BPF sockmap|" \
		      "airlock pass-through: airlock run (parsed, upstream kept, bodies spliced)", name, "|")
		n = split(paths, p, " ")
		for (i = 1; i <= n; i++) {
			lo = hi = klo = khi = ""
			for (r = 1; r <= rounds; r++) {
				x = by[r, p[i]] / by[r, "loopback"]
				if (lo == "" || x < lo) lo = x
				if (hi == "" || x > hi) hi = x
				if (!fr || ka[r, p[i]] == "-") continue
				x = ka[r, p[i]] / ka[r, "loopback"]
				if (klo == "" || x < klo) klo = x
				if (khi == "" || x > khi) khi = x
			}
			printf "| %s | %s | %.2f× | %.2f–%.2f× | %.1f |", name[i], median(mib[p[i]]),
			       median(mib[p[i]]) / median(mib["loopback"]), lo, hi, median(cpu[p[i]])
			if (!fr)
				printf "\n"
			else if (klo == "")
				printf " — | — | — |\n"
			else
				printf " %d | %.2f× | %.2f–%.2f× |\n", median(rps[p[i]]),
				       median(rps[p[i]]) / median(rps["loopback"]), klo, khi
		}
	}' "$results"
}
cpu=$(grep -m 1 'model name' /proc/cpuinfo | sed 's/.*: //')
commit=$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)
git -C "$repo" diff --quiet HEAD 2>/dev/null || commit=$commit-dirty

body=$(
	cat <<EOF
## Egress proxy: the ceiling of a relay

Measured $(date +%F) on $(nproc) cores ($cpu), kernel $(uname -r), at commit $commit, as root;
$(nginx -v 2>&1 | sed 's/^nginx version: //'), curl $(curl --version | awk 'NR == 1 { print $2 }'). One curl
downloads a 10 MiB file $downloads times (after 1 untimed) over one keep-alive connection from
nginx (one worker, sendfile, tcp_nopush, page cache, as bench/proxy.sh's), along each path in turn, $rounds rounds. A sandbox's
client reaches the host over a veth pair (MTU 65535, as loopback's); every path but the first
goes through one. bench/proxy/relay.c is a relay with nothing else in it, to show what any relay
of airlock's shape can reach here: two TCP connections, joined by splice(2) through a 1 MiB pipe
(as airlock's pass-through moves a body) or by a BPF sockmap (the kernel hands each segment to
the other connection; no process in the data path). "CPU per GiB": the machine's non-idle clock
ticks (100 a second per CPU; softirqs and kernel threads included) over all the downloads, per
GiB. The same over HTTPS (TLS 1.3, P-256). Then wrk's 1 KiB requests/s over 32 keep-alive connections (2 threads, $seconds s) along
each path but the sockmap's. The run took $((elapsed / 60)) min $((elapsed % 60)) s; load average before: $load_before, after: $load_after.

**HTTP:**

| path | 10 MiB: MiB/s (median) | ÷ loopback | ÷ loopback, each round | CPU per GiB (ticks) | 1 KiB keep-alive: req/s (median) | ÷ loopback | ÷ loopback, each round |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
$(table 3 4 5)

**HTTPS** (10 MiB; the relays and airlock pass the TLS bytes through; airlock checks the SNI):

| path | 10 MiB: MiB/s (median) | ÷ loopback | ÷ loopback, each round | CPU per GiB (ticks) |
| --- | ---: | ---: | ---: | ---: |
$(table 6 7 0)

Reproduce, as root: \`bench/proxy-ceiling.sh\` (\`BENCH_ROUNDS\`, \`BENCH_DOWNLOADS\`, \`BENCH_SECONDS\`).
EOF
)
printf '%s\n' "$body"
if [ "$doc" != - ]; then
	printf '%s\n' "$body" >"$run/section.md"
	bench_write_section "$doc" "## Egress proxy: the ceiling of a relay" "$run/section.md"
	log "wrote the Egress proxy: the ceiling of a relay section of $doc"
fi
