#!/usr/bin/env bash
# The credential broker's resolve latency and requests/s over its Unix socket, with 1, 8 and 64
# clients, side by side in one run with an echo server that answers each frame with a fixed one
# (the floor a socket round trip costs here); plus the latency of opening a session. The clients
# are bench/broker-bench.c (gcc -O2), which speaks the wire format itself and checks every
# answer: ok, the request's id, and the real token as payload. Each client count runs with
# clients and servers pinned to one CPU, then to two (servers on one, clients on the other).
# Prints markdown and writes it to the "Credential broker" section of docs/BENCHMARKS.md.
#
# usage: bench/broker.sh
# environment: AIRLOCK (default build/cli/airlock), BENCH_SECONDS (timed seconds per client count,
#              placement and server, default 5), BENCH_OPENS (sessions opened for the open figure, default
#              200), BENCH_DOC (default docs/BENCHMARKS.md; "-" = print only)
# Installs gcc, libc6-dev and python3 with apt-get when they are missing. Everything it starts
# and writes lives in one folder under /tmp, removed at exit. Takes about 12 × BENCH_SECONDS + 5 s.

set -Eeuo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
export LC_ALL=C

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
airlock=${AIRLOCK:-$repo/build/cli/airlock}
seconds=${BENCH_SECONDS:-5}
opens=${BENCH_OPENS:-200}
doc=${BENCH_DOC:-$repo/docs/BENCHMARKS.md}
clients=(1 8 64)
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3


case $seconds in
'' | *[!0-9]* | 0) die "BENCH_SECONDS must be a positive number of seconds" ;;
esac
case $opens in
'' | *[!0-9]* | 0) die "BENCH_OPENS must be a positive number" ;;
esac
[ -x "$airlock" ] || die "no airlock binary at $airlock (build first: scripts/dev.sh build)"

bench_install gcc libc6-dev python3 || exit 1

# ---- the run folder, the servers, and cleanup ----

run=$(mktemp -d /tmp/airlock-bench-broker.XXXXXX)
broker_pid=""
echo_pid=""

stop()
{
	local pid=$1

	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || true
	for _ in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

cleanup()
{
	set +e
	trap - ERR
	stop "$broker_pid"
	stop "$echo_pid"
	rm -rf "$run"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'log "failed at line $LINENO: $BASH_COMMAND"' ERR

bench=$run/broker-bench
gcc -O2 -std=gnu11 -Wall -Wextra -Werror -pthread -o "$bench" "$repo/bench/broker-bench.c"

# A fake GitHub token (ghp_ and 36 characters), in the environment of the broker, whose policy
# credential reads it, of the echo server, which answers with it, and of the clients, which
# check every answer against it.
BENCH_TOKEN=ghp_$(od -An -N18 -tx1 /dev/urandom | tr -d ' \n')
export BENCH_TOKEN

# wait_socket PATH PID LOG: until PATH is a socket, while PID lives.
wait_socket()
{
	for _ in $(seq 200); do
		[ -S "$1" ] && return 0
		kill -0 "$2" 2>/dev/null || die "the server exited before listening: $(tail -n 5 "$3")"
		sleep 0.05
	done
	die "nothing listens on $1 after 10 s: $(tail -n 5 "$3")"
}

"$airlock" broker --no-vault --socket "$run/broker.sock" 2>"$run/broker.log" &
broker_pid=$!
"$bench" echo-server "$run/echo.sock" 2>"$run/echo.log" &
echo_pid=$!
wait_socket "$run/broker.sock" "$broker_pid" "$run/broker.log"
wait_socket "$run/echo.sock" "$echo_pid" "$run/echo.log"

# ---- the measurements ----

load_before=$(cut -d ' ' -f 1-3 /proc/loadavg)
if awk -v l="${load_before%% *}" -v n="$(nproc)" 'BEGIN { exit !(l > n / 2) }'; then
	log "warning: load average ${load_before%% *} on $(nproc) cores before the run: other work" \
		"shares the pinned CPUs, and the figures will be slower and noisier than on a quiet machine"
fi
start=$SECONDS
results=$run/results
: >"$results"
# Where the threads run decides the figures on this kind of machine (a VM whose idle vCPUs halt,
# so that a wakeup sent to another vCPU costs far more than the work): every client count runs
# twice, first with the clients and both servers pinned to one CPU, then with the servers on one
# CPU and the clients on another. Unpinned, a run is one or the other or a mix, depending on
# what else the machine does. Every leg: CLIENTS PLACEMENT SERVER_CPU CLIENT_CPU.
read -r -a cpus <<<"$("$py" -c 'import os; print(*sorted(os.sched_getaffinity(0)))')"
legs=()
for n in "${clients[@]}"; do
	legs+=("$n one ${cpus[0]} ${cpus[0]}")
	[ "${#cpus[@]}" -lt 2 ] || legs+=("$n two ${cpus[1]} ${cpus[0]}")
done

pin_servers()
{
	taskset -apc "$1" "$broker_pid" >/dev/null
	taskset -apc "$1" "$echo_pid" >/dev/null
}

for leg in "${legs[@]}"; do
	read -r n placement server_cpu client_cpu <<<"$leg"
	log "$n client(s) on CPU $client_cpu, servers on CPU $server_cpu:" \
		"$seconds s on each server, alternating every 0.5 s"
	pin_servers "$server_cpu"
	taskset -c "$client_cpu" "$bench" resolve "$run/broker.sock" "$run/echo.sock" "$n" \
		"$seconds" --pids "$broker_pid" "$echo_pid" >"$run/leg" ||
		die "$n client(s) failed; broker: $(tail -n 3 "$run/broker.log");" \
			"echo: $(tail -n 3 "$run/echo.log")"
	sed "s/\$/ placement=$placement/" "$run/leg" >>"$results"
	cat "$run/leg" >&2
done
for leg in "${legs[@]}"; do
	read -r n placement server_cpu client_cpu <<<"$leg"
	[ "$n" = 1 ] || continue
	log "opening $opens sessions, one client on CPU $client_cpu, the broker on CPU $server_cpu"
	pin_servers "$server_cpu"
	taskset -c "$client_cpu" "$bench" open "$run/broker.sock" "$opens" >"$run/leg" ||
		die "opening sessions failed: $(tail -n 5 "$run/broker.log")"
	sed "s/\$/ placement=$placement/" "$run/leg" >>"$results"
	cat "$run/leg" >&2
done
kill -0 "$broker_pid" 2>/dev/null || die "the broker died: $(tail -n 5 "$run/broker.log")"
elapsed=$((SECONDS - start))
load_after=$(cut -d ' ' -f 1-3 /proc/loadavg)

# ---- the section ----

table=$("$py" - "$results" <<'EOF'
import sys

rows = []
for line in open(sys.argv[1]):
    kind, *pairs = line.split()
    rows.append(dict([("kind", kind)] + [p.split("=", 1) for p in pairs]))

def f(v):
    v = float(v)
    return "%.1f" % v if v < 100 else "%.0f" % v

print("| clients | CPUs | server | requests/s | p50 (µs) | p90 (µs) | p99 (µs) | max (µs) "
      "| p50 over echo (µs) | server CPU per request (µs, user + sys) |")
print("| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
echo = {}
single = []
for r in rows:
    if r["kind"] != "resolve":
        continue
    leg = (r["clients"], r["placement"])
    broker = r["server"] == "broker"
    if not broker:
        echo[leg] = float(r["p50_us"])
    d = float(r["p50_us"]) - echo[leg] if broker and leg in echo else None
    over = "—" if d is None else ("+" if d >= 0 else "−") + f(abs(d))
    cpu = "%.2f + %.2f" % (float(r["server_user_us"]), float(r["server_sys_us"]))
    name = "airlock broker" if broker else "echo (floor)"
    print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
        r["clients"], r["placement"], name, format(int(r["rps"]), ","), f(r["p50_us"]),
        f(r["p90_us"]), f(r["p99_us"]), f(r["max_us"]), over, cpu))
    if broker and r["clients"] == "1":
        single.append(("%s CPU%s" % (r["placement"], "s" if r["placement"] != "one" else ""),
                       float(r["p50_us"])))
print()
opens = [r for r in rows if r["kind"] == "open"]
if opens:
    print("Opening a session (one client, %s opens one after the other, each closed after, "
          "untimed, after 10 untimed): %s." % (opens[0]["count"], "; ".join(
              "on %s CPU%s p50 %s µs, p90 %s µs, p99 %s µs, max %s µs" % (
                  r["placement"], "s" if r["placement"] != "one" else "", f(r["p50_us"]),
                  f(r["p90_us"]), f(r["p99_us"]), f(r["max_us"])) for r in opens)))
    print()
if single:
    print("Target: p50 resolve under 50 µs with one client: %s (%s)." % (
        "**pass**" if all(v < 50 for _, v in single) else "**miss**",
        ", ".join("%s µs on %s" % (f(v), w) for w, v in single)))
EOF
)

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
version=$("$airlock" --version 2>/dev/null | head -n 1 || true)
commit=$(git -C "$repo" describe --always --dirty 2>/dev/null || echo unknown)
intro="Measured $(date -u +%Y-%m-%d) on $(nproc) cores (${cpu:-unknown CPU}), kernel $(uname -r),
${version:-airlock} at commit $commit, as $(id -un). \`airlock broker --no-vault --socket S\`
with one env credential (a 40-character \`ghp_\` token bound to api.example.com). The echo
server (\`bench/broker-bench.c echo-server\`: one thread, epoll, one read and one send per
request) answers every frame with a fixed one shaped like the broker's answer (id 0, the token
as payload). Each client is a thread of the load generator with a connection to each server and
a session with the broker; after 1,000 untimed requests to each, all clients send \`resolve\`
requests back to back, one at a time per connection, to one server at a time, switching server
every 0.5 s, for $seconds s per server, so that a busy spell of the machine hits both alike. Every
answer is checked (ok, its id, the token as payload). Latency is from sending a request to
holding its whole answer. Each client count runs twice (taskset): on one CPU, the clients and
both servers share one CPU; on two, the servers have one CPU and the clients the other. Server CPU is from
/proc/PID/stat (each server idles while the other is measured). The run took $((elapsed / 60))
min $((elapsed % 60)) s; load average before: $load_before, after: $load_after."
body="## Credential broker

$(fmt -w 100 <<<"$intro")

$table

Reproduce: \`bench/broker.sh\` (uses \`AIRLOCK=build/cli/airlock\` by default; \`BENCH_SECONDS=1\`
for a quick run).
"

printf '%s\n' "$body"

if [ "$doc" != - ]; then
	printf '%s\n' "$body" >"$run/section.md"
	bench_write_section "$doc" "## Credential broker" "$run/section.md"
	log "wrote the Credential broker section of $doc"
fi
