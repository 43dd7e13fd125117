#!/usr/bin/env bash
# airlock serve, side by side with the CLI in one run:
#   latency   a warm session's `true` (argv, no shell) through `airlock session exec ID -- true`,
#             `session exec ID --request`, serve's POST /v1/sessions/ID/exec and a streamed
#             process (POST /v1/sessions/ID/processes), and a fresh sandbox's through
#             `airlock exec` and serve's POST /v1/exec: median, p90, mean
#   health    GET /v1/health alone, then while a flood of clients keeps exec requests running
#             (each `sleep 0.3`, as many at once as serve's --max-streams lets one client have):
#             median, p99, max, and how many did not answer 200
#   scale     100 sessions started through serve at once kept idle: what each costs, as the
#             drop of the machine's MemAvailable, as the PSS of each session's processes
#             (supervisor, sandbox, workspace filesystem), and as its memory cgroup counts it
# Prints markdown and writes it to the "Serve" section of docs/BENCHMARKS.md.
#
# usage: bench/serve.sh [--quick]   (as root; scripts/dev.sh bench builds first and calls this)
#   --quick   20 runs, 20 sessions, a 3 s flood, and the doc is left alone unless BENCH_DOC is set
# environment: AIRLOCK (default build/cli/airlock), BENCH_RUNS (default 100), BENCH_SESSIONS
#              (default 100), BENCH_DOC (default docs/BENCHMARKS.md; "-" = print only)

set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

bench_args serve.sh "$@"

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
airlock=${AIRLOCK:-$repo/build/cli/airlock}
if [ "$quick" = 1 ]; then
	runs=${BENCH_RUNS:-20}
	sessions=${BENCH_SESSIONS:-20}
	flood=3
	doc=${BENCH_DOC:--}
else
	runs=${BENCH_RUNS:-100}
	sessions=${BENCH_SESSIONS:-100}
	flood=10
	doc=${BENCH_DOC:-$repo/docs/BENCHMARKS.md}
fi
[ "$(id -u)" = 0 ] || die "run as root"
[ -x "$airlock" ] || die "no airlock binary at $airlock (build first: scripts/dev.sh build)"

tmp=$(mktemp -d /var/tmp/airlock-bench-serve.XXXXXX)
serve_pid=""
cleanup()
{
	[ -z "$serve_pid" ] || { kill -TERM "$serve_pid" 2>/dev/null; wait "$serve_pid" 2>/dev/null || true; }
	rm -rf "$tmp"
}
trap cleanup EXIT

"$airlock" serve --socket "$tmp/serve.sock" --max-sessions $((sessions + 10)) \
	>"$tmp/serve.out" 2>"$tmp/serve.err" &
serve_pid=$!
for _ in $(seq 100); do
	[ -S "$tmp/serve.sock" ] && break
	sleep 0.05
done
[ -S "$tmp/serve.sock" ] || die "serve did not start: $(cat "$tmp/serve.err")"

/usr/bin/python3 - "$airlock" "$tmp/serve.sock" "$runs" "$sessions" "$flood" "$serve_pid" \
	"$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)" >"$tmp/section.md" <<'EOF'
import http.client, json, os, socket, statistics, subprocess, sys, threading, time

airlock, sock, runs, n_sessions, flood, serve_pid, commit = sys.argv[1:8]
runs, n_sessions, flood, serve_pid = int(runs), int(n_sessions), float(flood), int(serve_pid)


class Conn(http.client.HTTPConnection):
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(sock)


def api(method, path, body=None, timeout=120):
    c = Conn("airlock", timeout=timeout)
    c.request(method, path, body=None if body is None else json.dumps(body))
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def timed(f, n):
    t = []
    for _ in range(n):
        a = time.perf_counter()
        f()
        t.append((time.perf_counter() - a) * 1000)
    return t


def check(status, data, what):
    if status >= 300:
        sys.exit(f"serve.sh: {what}: {status} {data[:200]!r}")


def stats(t):
    t = sorted(t)
    return statistics.median(t), t[int(len(t) * 0.9) - 1], statistics.mean(t)


TRUE = {"language": "command", "argv": ["true"], "timeout": 30}
status, data = api("POST", "/v1/sessions", {"ttl": "1h"})
check(status, data, "session")
sid = json.loads(data)["id"]


def cli(*args, stdin=None):
    r = subprocess.run([airlock, *args], input=stdin, stdout=subprocess.DEVNULL)
    if r.returncode != 0:
        sys.exit(f"serve.sh: airlock {' '.join(args)} exited {r.returncode}")


session_durations = []


def serve_exec(path, body):
    status, data = api("POST", path, body)
    check(status, data, path)
    if path.startswith("/v1/sessions/"):
        session_durations.append(json.loads(data)["duration_ms"])


def serve_process():
    status, data = api("POST", f"/v1/sessions/{sid}/processes", {"argv": ["true"]})
    check(status, data, "process")
    if json.loads(data.splitlines()[-1])["type"] != "exit":
        sys.exit("serve.sh: the process stream did not end with exit")


request = json.dumps(TRUE).encode()
legs = [
    ("airlock session exec ID -- true (CLI)", lambda: cli("session", "exec", sid, "--", "true")),
    ("airlock session exec ID --request (CLI)",
     lambda: cli("session", "exec", sid, "--request", "-", stdin=request)),
    ("serve: POST /v1/sessions/ID/exec", lambda: serve_exec(f"/v1/sessions/{sid}/exec", TRUE)),
    ("serve: POST /v1/sessions/ID/processes (streamed)", serve_process),
    ("airlock exec (CLI, fresh sandbox)", lambda: cli("exec", stdin=request)),
    ("serve: POST /v1/exec (fresh sandbox)", lambda: serve_exec("/v1/exec", TRUE)),
]
latency = []
for name, f in legs:
    timed(f, 3)
    session_durations.clear()
    latency.append((name, stats(timed(f, runs))))
    if name == "serve: POST /v1/sessions/ID/exec":
        in_session = statistics.median(session_durations)

# What the command itself costs on this machine: /usr/bin/true spawned and waited for on the host
# by a small process, no sandbox, no airlock.
true_path = "/usr/bin/true"
bare_true = timed(lambda: os.waitpid(os.posix_spawn(true_path, ["true"], {}), 0), runs)

# health, alone and under a flood of exec requests
health_idle = timed(lambda: check(*api("GET", "/v1/health"), "health"), runs)
stop = threading.Event()
counts = {"execs": 0, "refused": 0}
lock = threading.Lock()


def flooder():
    while not stop.is_set():
        status, _ = api("POST", f"/v1/sessions/{sid}/exec",
                        {"language": "command", "argv": ["sleep", "0.3"], "timeout": 30})
        with lock:
            counts["execs" if status == 200 else "refused"] += 1


threads = [threading.Thread(target=flooder) for _ in range(32)]
for t in threads:
    t.start()
time.sleep(0.5)
health_flood, failed = [], 0
end = time.monotonic() + flood
while time.monotonic() < end:
    a = time.perf_counter()
    try:
        status, _ = api("GET", "/v1/health", timeout=10)
    except OSError:
        status = 0
    health_flood.append((time.perf_counter() - a) * 1000)
    failed += status != 200
    time.sleep(0.02)
stop.set()
for t in threads:
    t.join()


# scale: idle sessions
def mem_available():
    for line in open("/proc/meminfo"):
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024


def descendants(pid):
    out, todo = [], [pid]
    children = {}
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                ppid = int(open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            children.setdefault(ppid, []).append(int(p))
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def pss(pid):
    try:
        for line in open(f"/proc/{pid}/smaps_rollup"):
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


api("DELETE", f"/v1/sessions/{sid}")
time.sleep(1)
before = mem_available()
a = time.perf_counter()
ids = []
for _ in range(n_sessions):
    status, data = api("POST", "/v1/sessions", {"ttl": "1h"})
    check(status, data, "session")
    ids.append(json.loads(data))
start_s = time.perf_counter() - a
time.sleep(2)
after = mem_available()
per_session_pss, cgroup = [], []
for s in ids:
    per_session_pss.append(sum(pss(p) for p in descendants(s["pid"])))
    status, data = api("GET", f"/v1/sessions/{s['id']}")
    m = json.loads(data).get("memory_bytes")
    if m is not None:
        cgroup.append(m)
serve_pss = pss(serve_pid)
status, data = api("GET", "/v1/health")
health_loaded = json.loads(data)
for s in ids:
    api("DELETE", f"/v1/sessions/{s['id']}")

MiB = 1024 * 1024
print("## Serve\n")
print(f"`bench/serve.sh` (as root): `airlock serve` on a Unix socket against the CLI it wraps, in "
      f"one run. Commit {commit}; {runs} runs of each after 3 warm-up runs; the session is warm "
      f"(started once) and idle between requests.\n")
print("| a warm session's `true` / a fresh sandbox's | median | p90 | mean |")
print("|---|---|---|---|")
for name, (med, p90, mean) in latency:
    print(f"| {name} | {med:.1f} ms | {p90:.1f} ms | {mean:.1f} ms |")
print(f"\nA warm session's `true` through serve: of its median {latency[2][1][0]:.1f} ms, the "
      f"command took {in_session:.1f} ms in the session (median duration_ms: its supervisor's "
      f"time from passing the command to its pid 1 to its end). For scale, on this machine: "
      f"{true_path} spawned and waited for by a small process on the host, no sandbox: median "
      f"{statistics.median(bare_true):.1f} ms; GET /v1/health (serve's HTTP alone): median "
      f"{statistics.median(health_idle):.2f} ms.")
hs = sorted(health_flood)
print(f"\nGET /v1/health: median {statistics.median(health_idle):.2f} ms alone; during "
      f"{flood:.0f} s of 32 clients' threads sending `sleep 0.3` exec requests to one session "
      f"({counts['execs']} ran, {counts['refused']} refused with 429 over --max-streams), "
      f"{len(hs)} health requests: median {statistics.median(hs):.2f} ms, "
      f"p99 {hs[int(len(hs) * 0.99) - 1]:.2f} ms, max {hs[-1]:.2f} ms, "
      f"{failed} not answered 200.\n")
print(f"{n_sessions} idle sessions started through serve one after another in {start_s:.1f} s "
      f"({start_s / n_sessions * 1000:.0f} ms each), all alive at once "
      f"(health said {health_loaded['sessions']}):\n")
print("| per session | |")
print("|---|---|")
print(f"| MemAvailable drop / {n_sessions} | {(before - after) / n_sessions / MiB:.2f} MiB |")
print(f"| PSS of its processes (supervisor, sandbox, workspace filesystem), median | "
      f"{statistics.median(per_session_pss) / MiB:.2f} MiB |")
if cgroup:
    print(f"| its memory cgroup's count, median | {statistics.median(cgroup) / MiB:.2f} MiB |")
print(f"| serve's own PSS with them | {serve_pss / MiB:.2f} MiB in all |")
EOF

cat "$tmp/section.md"
if [ "$doc" != - ]; then
	bench_write_section "$doc" "## Serve" "$tmp/section.md"
	log "wrote the Serve section of $doc"
fi
