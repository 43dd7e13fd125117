#!/usr/bin/env bash
# Requests per second of `airlock exec` for python -c 'print(1)' (a request with code "print(1)")
# in a fresh sandbox and in a warm persistent session (`airlock session exec ID --request`), side
# by side in one hyperfine run with the same program run bare and under bubblewrap (equivalent
# namespaces, no FUSE workspace, no cgroup). Prints markdown and writes it to the "Exec" section
# of docs/BENCHMARKS.md.
#
# usage: bench/exec.sh              (as root; scripts/dev.sh bench builds first and calls this)
# environment: AIRLOCK (default build/cli/airlock), BENCH_RUNS (default 100), BENCH_WARMUP (5),
#              BENCH_DOC (default docs/BENCHMARKS.md; "-" = print only)
# Installs bubblewrap and hyperfine with apt-get when they are missing.

set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
airlock=${AIRLOCK:-$repo/build/cli/airlock}
runs=${BENCH_RUNS:-100}
warmup=${BENCH_WARMUP:-5}
doc=${BENCH_DOC:-$repo/docs/BENCHMARKS.md}
py=/usr/bin/python3

if [ ! -x "$airlock" ]; then
	echo "exec.sh: no airlock binary at $airlock (build first: scripts/dev.sh build)" >&2
	exit 1
fi
bench_install bubblewrap hyperfine

tmp=$(mktemp -d /var/tmp/airlock-bench-exec.XXXXXX)
session=""
cleanup()
{
	[ -z "$session" ] || "$airlock" session stop "$session" >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap cleanup EXIT
printf '{"language": "python", "code": "print(1)", "timeout": 30}' >"$tmp/request.json"
# A request must answer print(1)'s output, or the figures mean nothing.
out=$("$airlock" exec --request "$tmp/request.json")
case $out in
*'"stdout":"1\n"'*) ;;
*) echo "exec.sh: the request did not print 1: $out" >&2; exit 1 ;;
esac

mkdir -p "$tmp/ws"
session=$("$airlock" session start -w "$tmp/ws" --owner $$)
out=$("$airlock" session exec "$session" --request "$tmp/request.json")
case $out in
*'"stdout":"1\n"'*) ;;
*) echo "exec.sh: the session's request did not print 1: $out" >&2; exit 1 ;;
esac

bwrap_cmd="bwrap --unshare-all --die-with-parent --new-session --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib --symlink usr/lib64 /lib64 --proc /proc --dev /dev --tmpfs /tmp -- $py -c print(1)"
echo "exec.sh: hyperfine, $runs runs each after $warmup warm-up runs" >&2
hyperfine -N --style basic --runs "$runs" --warmup "$warmup" --export-json "$tmp/hyperfine.json" \
	-n "python3 -c 'print(1)' (bare)" "$py -c print(1)" \
	-n "bubblewrap: python3 -c 'print(1)'" "$bwrap_cmd" \
	-n "airlock exec (fresh sandbox)" "$airlock exec --request $tmp/request.json" \
	-n "airlock session exec (warm session)" "$airlock session exec $session --request $tmp/request.json" >&2

commit=$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)
"$py" - "$tmp/hyperfine.json" "$commit" "$runs" "$warmup" >"$tmp/section.md" <<'EOF2'
import json, sys

res = json.load(open(sys.argv[1]))["results"]
commit, runs, warmup = sys.argv[2:5]
base = res[1]["median"]
print("## Exec\n")
print("`bench/exec.sh` (as root): a request `{\"language\": \"python\", \"code\": \"print(1)\"}`"
      " answered by `airlock exec` in a fresh sandbox (FUSE workspace in a fresh folder, cgroup,"
      " seccomp, the code placed in the sandbox's root), against the same program bare and under"
      " bubblewrap, in one hyperfine run. Commit %s; %s runs after %s warm-up runs.\n"
      % (commit, runs, warmup))
print("| what | median | mean ± sd | requests/s | vs bubblewrap |")
print("|---|---|---|---|---|")
for r in res:
    print("| %s | %.1f ms | %.1f ± %.1f ms | %.1f | %.2fx |" % (
        r["command"], r["median"] * 1e3, r["mean"] * 1e3, r["stddev"] * 1e3,
        1.0 / r["mean"], r["median"] / base))
print("\nThe warm session's request pays for python's start, reading the session's policy, the code written into a folder of its own and two Unix-socket round trips;"
      " the fresh sandbox's, for the whole launch (namespaces, FUSE workspace, cgroup, seccomp)"
      " and its teardown.")
EOF2
cat "$tmp/section.md"
if [ "$doc" != - ]; then
	bench_write_section "$doc" "## Exec" "$tmp/section.md"
fi
