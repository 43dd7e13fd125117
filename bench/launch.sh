#!/usr/bin/env bash
# Launch time of `airlock run -- /bin/true` against bubblewrap with equivalent isolation and a
# bare /bin/true, measured side by side in one hyperfine run; plus airlock's own per-step
# breakdown (`run --timing --json`, median per step). Prints markdown and writes it to the
# "Launch" section of docs/BENCHMARKS.md.
#
# usage: bench/launch.sh            (as root; scripts/dev.sh bench builds first and calls this)
# environment: AIRLOCK (default build/cli/airlock), BENCH_RUNS (default 300), BENCH_WARMUP (5),
#              BENCH_DOC (default docs/BENCHMARKS.md; "-" = print only)
# Installs bubblewrap and hyperfine with apt-get when they are missing.

set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
airlock=${AIRLOCK:-$repo/build/cli/airlock}
runs=${BENCH_RUNS:-300}
warmup=${BENCH_WARMUP:-5}
doc=${BENCH_DOC:-$repo/docs/BENCHMARKS.md}
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3

if [ "$runs" -lt 50 ]; then
	echo "launch.sh: BENCH_RUNS must be at least 50 (medians of fewer runs are noise)" >&2
	exit 2
fi
if [ ! -x "$airlock" ]; then
	echo "launch.sh: no airlock binary at $airlock (build first: scripts/dev.sh build)" >&2
	exit 1
fi

bench_install bubblewrap hyperfine

tmp=$(mktemp -d /tmp/airlock-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
ws=$tmp/ws
mkdir "$ws"

# bubblewrap doing what airlock does for /bin/true: every namespace, a read-only root with /usr
# and the /bin /lib* /sbin links (or binds) as on the host, the same minimal /etc, a new /proc,
# a minimal /dev, a private /tmp, the workspace, the hostname, no capabilities, a new session.
# Not included: seccomp, cgroup limits, landlock (bwrap does not set those up by itself).
bench_bwrap_args
bwrap_args+=(--bind "$ws" /workspace --chdir /workspace --remount-ro / /bin/true)

airlock_cmd="$airlock run -w $ws -- /bin/true"
# With a network allow rule: the veth pair, the proxy netns and the egress proxy's process too
# (nothing is sent: /bin/true does not connect).
cat >"$tmp/egress.json" <<EOF
{"workspace": {"root": "$ws"}, "network": {"rules": [{"destination": "example.org", "action": "allow"}]}}
EOF
egress_cmd="$airlock run -p $tmp/egress.json -- /bin/true"
bwrap_cmd="bwrap ${bwrap_args[*]}"

# Both must work before anything is timed.
if ! out=$($airlock_cmd 2>&1); then
	echo "launch.sh: airlock run -- /bin/true fails: $out" >&2
	exit 1
fi
if ! out=$($egress_cmd 2>&1); then
	echo "launch.sh: airlock run with egress fails: $out" >&2
	exit 1
fi
if ! out=$($bwrap_cmd 2>&1); then
	echo "launch.sh: bwrap fails: $out" >&2
	exit 1
fi

# Without root (issue 16): the same launches by uid 65534 (setpriv), whose sandbox gets a user
# namespace and, with egress, makes the proxy's namespaces inside it. This process moves into
# cgroups delegated to that uid first, as a systemd user session gives one, so that both uids get
# the same limits in the same place; the root rows go through setpriv too, for the same exec.
rootless=()
nobody=65534
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null &&
	setpriv --reuid=$nobody --regid=$nobody --clear-groups unshare -U true 2>/dev/null; then
	chmod 755 "$tmp"
	install -m 755 "$airlock" "$tmp/airlock"
	mkdir "$tmp/ws-user"
	chown $nobody:$nobody "$tmp/ws-user"
	sed "s|\"root\": \"$ws\"|\"root\": \"$tmp/ws-user\"|" "$tmp/egress.json" >"$tmp/egress-user.json"
	chmod 644 "$tmp/egress-user.json"
	delegated=()
	for ctrl in memory pids cpu blkio; do
		mnt=$(awk -v c="$ctrl" '$3 == "cgroup" && ("," $4 ",") ~ ("," c ",") { print $2; exit }' \
			/proc/mounts)
		[ -n "$mnt" ] || continue
		dir=$mnt/airlock-bench-user-$$
		mkdir -p "$dir"
		chown $nobody:$nobody "$dir" "$dir/cgroup.procs" "$dir/tasks"
		echo $$ >"$dir/cgroup.procs"
		delegated+=("$dir")
	done
	trap 'for d in "${delegated[@]}"; do echo $$ >"$(dirname "$d")/cgroup.procs"; rmdir "$d"; done
		rm -rf "$tmp"' EXIT
	as_root="setpriv --reuid=0 --regid=0 --keep-groups"
	as_user="setpriv --reuid=$nobody --regid=$nobody --clear-groups"
	rootless=(
		-n "setpriv, root: airlock run -- /bin/true" "$as_root $airlock_cmd"
		-n "setpriv, root: airlock run (+ veth and egress proxy) -- /bin/true"
		"$as_root $egress_cmd"
		-n "setpriv, uid $nobody: airlock run -- /bin/true"
		"$as_user $tmp/airlock run -w $tmp/ws-user -- /bin/true"
		-n "setpriv, uid $nobody: airlock run (+ veth and egress proxy) -- /bin/true"
		"$as_user $tmp/airlock run -p $tmp/egress-user.json -- /bin/true"
	)
	if ! out=$(cd / && $as_user "$tmp/airlock" run -p "$tmp/egress-user.json" -- /bin/true 2>&1); then
		echo "launch.sh: a rootless airlock run with egress fails: $out" >&2
		exit 1
	fi
fi

load_before=$(cut -d ' ' -f 1-3 /proc/loadavg)
echo "launch.sh: hyperfine, $runs runs each after $warmup warm-up runs" >&2
hyperfine -N --style basic --runs "$runs" --warmup "$warmup" --export-json "$tmp/hyperfine.json" \
	-n "airlock run -- /bin/true" "$airlock_cmd" \
	-n "airlock run (+ veth and egress proxy) -- /bin/true" "$egress_cmd" \
	"${rootless[@]}" \
	-n "bwrap (equivalent binds) /bin/true" "$bwrap_cmd" \
	-n "/bin/true" "/bin/true" >&2

# The root/rootless ratios (issue 16's target: at most 1.2x with egress) from rounds that
# alternate the two, so that a slow phase of the machine weighs on both: hyperfine runs each
# command's runs back to back, and a ratio of two medians minutes apart carries that drift.
rounds=5
: >"$tmp/rounds.jsonl"
if [ ${#rootless[@]} -gt 0 ]; then
	echo "launch.sh: root and uid $nobody alternated, $rounds rounds of $((runs / rounds)) runs" >&2
	for round in $(seq "$rounds"); do
		hyperfine -N --style none --runs $((runs / rounds)) --warmup 2 \
			--export-json "$tmp/round.json" "${rootless[@]}" >/dev/null 2>&1
		"$py" -c 'import json,sys; print(json.dumps({r["command"]: r["median"] for r in json.load(open(sys.argv[1]))["results"]}))' \
			"$tmp/round.json" >>"$tmp/rounds.jsonl"
	done
fi

echo "launch.sh: airlock run --timing --json, $runs runs" >&2
for _ in $(seq "$runs"); do
	"$airlock" run --timing --json -w "$ws" -- /bin/true
	echo
done >"$tmp/steps.jsonl"

section=$("$py" - "$tmp/hyperfine.json" "$tmp/steps.jsonl" "$tmp/rounds.jsonl" <<'EOF'
import json, statistics, sys

results = json.load(open(sys.argv[1]))["results"]
bwrap = next(r for r in results if r["command"].startswith("bwrap"))
print("| command | median (ms) | mean (ms) | min (ms) | median / bwrap |")
print("| --- | ---: | ---: | ---: | ---: |")
for r in results:
    print("| `%s` | %.2f | %.2f | %.2f | %.2fx |" % (
        r["command"], r["median"] * 1e3, r["mean"] * 1e3, r["min"] * 1e3,
        r["median"] / bwrap["median"]))

rounds = [json.loads(line) for line in open(sys.argv[3]) if line.strip()]
if rounds:
    print()
    print("Without root against root, alternated (%d rounds; each figure the median of a round,"
          " the ratio the median of the rounds' ratios, then their range):" % len(rounds))
    print()
    print("| launch | root (ms) | uid 65534 (ms) | uid 65534 / root |")
    print("| --- | ---: | ---: | ---: |")
    names = list(rounds[0])
    for label, key in (("`airlock run -- /bin/true`", "run --"),
                       ("`airlock run` (+ veth and egress proxy)", "(+ veth")):
        root = next(n for n in names if n.startswith("setpriv, root") and key in n)
        user = next(n for n in names if not n.startswith("setpriv, root") and key in n)
        ratios = sorted(r[user] / r[root] for r in rounds)
        print("| %s | %.2f | %.2f | %.2fx (%.2f-%.2f) |" % (
            label, statistics.median(r[root] for r in rounds) * 1e3,
            statistics.median(r[user] for r in rounds) * 1e3,
            statistics.median(ratios), ratios[0], ratios[-1]))

steps = {}
order = []
for line in open(sys.argv[2]):
    if not line.strip():
        continue
    for name, usec in json.loads(line).get("steps", {}).items():
        if name not in steps:
            steps[name] = []
            order.append(name)
        steps[name].append(usec)
print()
if steps:
    print("airlock's steps (`airlock run --timing --json -- /bin/true`, median of each step over"
          " %d runs; these runs also capture the output):" % max(len(v) for v in steps.values()))
    print()
    print("| step | median (µs) |")
    print("| --- | ---: |")
    for name in order:
        print("| %s | %d |" % (name, statistics.median(steps[name])))
    print("| **sum of steps** | %d |" % sum(statistics.median(v) for v in steps.values()))
else:
    print("airlock reported no steps with --timing.")
EOF
)

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
load=$(cut -d ' ' -f 1-3 /proc/loadavg)
version=$("$airlock" --version 2>/dev/null | head -n 1 || true)
commit=$(git -C "$repo" describe --always --dirty 2>/dev/null || echo unknown)
body="## Launch

Measured $(date -u +%Y-%m-%d) on $(nproc) cores (${cpu:-unknown CPU}), kernel $(uname -r),
${version:-airlock} at commit $commit, as $(id -un); hyperfine $runs runs after $warmup warm-up runs,
without a shell (-N); load average before: $load_before, after: $load.
bwrap gets the same namespaces, binds, /etc files, /proc, /dev, /tmp and workspace as airlock,
but no seccomp filter, cgroup or landlock rules.

$section

Reproduce: \`scripts/dev.sh bench\` (or \`AIRLOCK=build/cli/airlock bench/launch.sh\`), as root.
"

printf '%s\n' "$body"

if [ "$doc" != - ]; then
	printf '%s\n' "$body" >"$tmp/section.md"
	bench_write_section "$doc" "## Launch" "$tmp/section.md"
	echo "launch.sh: wrote the Launch section of $doc" >&2
fi
