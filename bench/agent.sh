#!/usr/bin/env bash
# What an agent does in its workspace, in bursts, on three legs in one run: native (a plain
# folder), bubblewrap (`bwrap --bind DIR /workspace`, the same isolation as bench/launch.sh's
# bwrap) and airlock (`airlock run` with a policy whose workspace root is the folder). The bursts:
#   build   git clone of a real C project (Debian's dav1d source, made a local bare repository),
#           meson setup, ninja, grep -r, git status, a commit
#   node    copy a node_modules of ~8,500 files (npm install of pinned packages, once), require()
#           three packages with node, find, rm -rf
#   python  python3 -m venv, then pip install of local wheels (Debian's pip, setuptools and wheel
#           wheels; no index)
# Each step is timed inside the sandbox; each figure is the median of the repeats, with ratios to
# native and to bubblewrap from the same run. The sandbox's start is not counted (bench/launch.sh
# measures it). Prints markdown and writes it to the "Agent bursts" section of docs/BENCHMARKS.md.
#
# usage: bench/agent.sh [--quick]   (as root; scripts/dev.sh bench calls it)
#   --quick   a smoke run: one repeat, dav1d without its tests and tools, and the doc is left
#             alone unless BENCH_DOC is set
# environment: AIRLOCK (default build/cli/airlock), BENCH_LEGS (default "native bwrap airlock"),
#              BENCH_REPEATS (default 3, 1 with --quick), BENCH_DIR (the legs' folders and the
#              inputs, fetched once and kept in BENCH_DIR/agent-cache; default
#              /var/tmp/airlock-bench), BENCH_DOC (default docs/BENCHMARKS.md; "-" = print only)
# Installs what is missing with apt-get (bubblewrap, git, meson, ninja, gcc, nodejs, npm,
# python3-venv, dpkg-dev). Once, outside the timed part, it fetches dav1d's source package from
# this machine's Debian archive (apt-get source), npm-installs the node packages and
# apt-get downloads the wheels; a later run reuses them. A leg that fails a burst (an error, not
# a slow figure) is shown failed and sits out the rest; the run then exits 1 and leaves the doc
# alone.

set -Eeuo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
export LC_ALL=C

bench_args agent.sh "$@"

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
airlock=${AIRLOCK:-$repo/build/cli/airlock}
base=${BENCH_DIR:-/var/tmp/airlock-bench}
cache=$base/agent-cache
read -r -a legs_wanted <<<"${BENCH_LEGS:-native bwrap airlock}"
py=/usr/bin/python3
if [ "$quick" = 1 ]; then
	repeats=${BENCH_REPEATS:-1}
	doc=${BENCH_DOC:--}
else
	repeats=${BENCH_REPEATS:-3}
	doc=${BENCH_DOC:-$repo/docs/BENCHMARKS.md}
fi
case $repeats in
'' | *[!0-9]* | 0)
	echo "agent.sh: BENCH_REPEATS must be a positive number" >&2
	exit 2
	;;
esac

# The node packages: pinned, so that every run copies the same tree (~8,500 files).
npm_packages=(typescript@5.9.3 eslint@9.39.5 webpack@5.112.2 lodash@4.18.1 rxjs@7.8.2)
npm_require=(typescript eslint webpack)
# Debian's wheels (the Python package index is not reachable from here).
whl_packages=(python3-pip-whl python3-setuptools-whl python3-wheel-whl)
c_project=dav1d

on_err()
{
	log "failed at line $1: $2"
}
trap 'on_err "$LINENO" "$BASH_COMMAND"' ERR

[ "$(id -u)" = 0 ] || die "run me as root: the airlock and bubblewrap legs, dropping the page cache"

# ---- legs ----

legs=()
declare -A skipped=([bwrap]="not in BENCH_LEGS" [airlock]="not in BENCH_LEGS")
for leg in "${legs_wanted[@]}"; do
	case $leg in
	native) legs+=("$leg") ;;
	bwrap)
		legs+=("$leg")
		unset "skipped[$leg]"
		;;
	airlock)
		if [ ! -x "$airlock" ]; then
			skipped[$leg]="no airlock binary at $airlock (build first: scripts/dev.sh build)"
			log "airlock leg skipped: ${skipped[$leg]}"
		else
			legs+=("$leg")
			unset "skipped[$leg]"
		fi
		;;
	*) die "unknown leg in BENCH_LEGS: $leg (native, bwrap, airlock)" ;;
	esac
done
[ "${legs[0]:-}" = native ] || die "BENCH_LEGS must start with native: every ratio is to native"

# node and npm may come from elsewhere than Debian (a node with its own npm conflicts with
# Debian's npm package): only a missing command is installed.
packages=(bubblewrap git meson ninja-build gcc pkg-config python3 python3-venv dpkg-dev)
command -v node >/dev/null || packages+=(nodejs)
command -v npm >/dev/null || packages+=(npm)
bench_install "${packages[@]}" || exit 1

# ---- the inputs, made once and kept ----

mkdir -p "$cache"

# A real C project with meson: Debian's dav1d source package, one commit in a bare repository.
c_repo=$cache/$c_project.git
if [ ! -s "$cache/$c_project.version" ] || [ ! -d "$c_repo" ]; then
	log "fetching $c_project's source package (once; kept in $cache)"
	rm -rf "$c_repo" "$cache/src"
	c_version=$(bench_apt_source "$c_project" "$cache/src")
	(
		cd "$cache/src/$c_project"
		g=(git -c init.defaultBranch=main -c user.name=bench -c user.email=bench@localhost)
		"${g[@]}" init -q
		"${g[@]}" add -A
		GIT_AUTHOR_DATE=2000-01-01T00:00:00Z GIT_COMMITTER_DATE=2000-01-01T00:00:00Z \
			"${g[@]}" commit -q -m "$c_project $c_version (Debian source package)"
	)
	git clone -q --bare "$cache/src/$c_project" "$c_repo"
	rm -rf "$cache/src"
	echo "$c_version" >"$cache/$c_project.version"
fi
c_version=$(cat "$cache/$c_project.version")
c_files=$(git --git-dir="$c_repo" ls-tree -r HEAD | wc -l)

# node_modules: npm install of the pinned packages, without their install scripts.
npm_dir=$cache/npm
if [ "$(cat "$npm_dir/packages" 2>/dev/null)" != "${npm_packages[*]}" ]; then
	log "npm install ${npm_packages[*]} (once; kept in $npm_dir)"
	rm -rf "$npm_dir"
	mkdir -p "$npm_dir"
	echo '{"name": "agent-bench", "version": "1.0.0", "private": true}' >"$npm_dir/package.json"
	(cd "$npm_dir" && npm_config_cache=$cache/npm-cache npm install --no-audit --no-fund \
		--ignore-scripts --loglevel=error "${npm_packages[@]}" >&2)
	echo "${npm_packages[*]}" >"$npm_dir/packages"
fi
npm_files=$(find "$npm_dir/node_modules" -type f | wc -l)
npm_mb=$(($(du -sk "$npm_dir/node_modules" | cut -f 1) / 1000))

# Wheels: apt-get download (not install) of Debian's packages that ship them.
whl_dir=$cache/wheels
if [ "$(cat "$whl_dir/packages" 2>/dev/null)" != "${whl_packages[*]}" ]; then
	log "apt-get download ${whl_packages[*]} (once; kept in $whl_dir)"
	rm -rf "$whl_dir" "$cache/debs"
	mkdir -p "$whl_dir" "$cache/debs"
	(cd "$cache/debs" && apt-get download -q -o APT::Sandbox::User=root "${whl_packages[@]}" >&2)
	for deb in "$cache"/debs/*.deb; do
		dpkg-deb -x "$deb" "$cache/debs/x"
	done
	cp "$cache"/debs/x/usr/share/python-wheels/*.whl "$whl_dir/"
	rm -rf "$cache/debs"
	echo "${whl_packages[*]}" >"$whl_dir/packages"
fi
wheels=$(cd "$whl_dir" && ls ./*.whl | sed 's|^\./||' | xargs)

# ---- the bursts, as one script run in the workspace ----
# bash -c "$burst" burst NAME WS TMP EXTRACT QUICK: WS is the workspace as the command sees it,
# TMP a private folder for the inputs (the sandbox's /tmp); with EXTRACT=1 the inputs come as a
# tar stream on stdin (the sandboxes see no host folder but the workspace). Each step prints
# "@step NAME SECONDS" on fd 3 (the script's stdout); the inputs' extraction is not timed.

# shellcheck disable=SC2016
burst='set -euo pipefail
name=$1 ws=$2 tmp=$3 extract=$4 quick=$5
export HOME=$tmp PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 GIT_CONFIG_NOSYSTEM=1 \
	GIT_CONFIG_GLOBAL=/dev/null
exec 3>&1
if [ "$extract" = 1 ]; then
	mkdir -p "$tmp/in"
	tar -xf - -C "$tmp/in"
fi
step()
{
	local s=$1 t0 us
	shift
	t0=${EPOCHREALTIME/./}
	"$@"
	us=$((${EPOCHREALTIME/./} - t0))
	printf "@step %s %d.%06d\n" "$s" $((us / 1000000)) $((us % 1000000)) >&3
}
g()
{
	git -c safe.directory="*" -c gc.auto=0 -c maintenance.auto=false -c user.name=agent \
		-c user.email=agent@localhost "$@"
}
cd "$ws"
case $name in
build)
	opts=(-Denable_asm=false)
	[ "$quick" = 0 ] || opts+=(-Denable_tests=false -Denable_tools=false)
	step clone g clone -q --no-local "$tmp/in/dav1d.git" "$ws"
	step configure meson setup "${opts[@]}" build >/dev/null
	step build ninja -C build >/dev/null
	step grep sh -c "grep -r -F -e xyzzy . >/dev/null || [ \$? = 1 ]"
	step status g status --porcelain >/dev/null
	echo "/* an agent was here */" >>src/lib.c
	step commit g commit -q -a -m "src/lib.c: a comment"
	[ -z "$(g status --porcelain --untracked-files=no)" ]
	;;
node)
	mkdir app
	step copy cp -r "$tmp/in/node_modules" app/node_modules
	cd app
	step require node -e "for (const p of process.argv.slice(1)) require(p)" '"${npm_require[*]}"'
	cd ..
	step find sh -c "find app -name package.json | wc -l >/dev/null"
	step rm rm -rf app
	[ ! -e app ]
	;;
python)
	step venv /usr/bin/python3 -m venv .venv
	step pip .venv/bin/pip install -q --no-index --no-cache-dir --disable-pip-version-check \
		--find-links "$tmp/in/wheels" --upgrade pip setuptools wheel
	.venv/bin/python -m pip show -q pip setuptools wheel >/dev/null
	;;
esac'

# burst_inputs NAME: the inputs of burst NAME, as a tar stream of what goes in TMP/in.
burst_inputs()
{
	case $1 in
	build) tar -cf - -C "$cache" "$c_project.git" ;;
	node) tar -cf - -C "$npm_dir" node_modules ;;
	python) tar -cf - -C "$cache" wheels ;;
	esac
}

# ---- work folders and cleanup ----

mkdir -p "$base"
run=$(mktemp -d "$base/agent.XXXXXX")
cleanup()
{
	set +e
	trap - ERR
	rm -rf --one-file-system "$run"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

need_mib=$((npm_mb * 3 + 1024))
avail_mib=$(($(df -Pk "$run" | awk 'NR == 2 { print $4 }') / 1024))
[ "$avail_mib" -ge "$need_mib" ] || die "$avail_mib MiB free under $base, need $need_mib MiB"

bench_bwrap_args

# The airlock leg's policy: the workspace is the burst's folder. git clone writes the new
# repository's .git/config and hooks, which airlock keeps read-only unless workspace.write names
# them (only at the workspace's root: the repository is cloned there).
airlock_policy()
{
	cat <<EOF
{"workspace": {"root": "$1", "write": ["**", ".git/**", ".git/config", ".git/hooks/**"]},
 "resources": {"timeout": "30m"}}
EOF
}

# run_burst LEG NAME WS: runs burst NAME on LEG in the empty folder WS; its "@step" lines go to
# $run/out.
run_burst()
{
	local leg=$1 name=$2 ws=$3

	case $leg in
	native)
		rm -rf "$run/native.tmp"
		mkdir -p "$run/native.tmp/in"
		burst_inputs "$name" | tar -xf - -C "$run/native.tmp/in"
		sync
		(cd "$ws" && env -i /bin/bash -c "$burst" burst "$name" "$ws" "$run/native.tmp" 0 "$quick" \
			</dev/null)
		;;
	bwrap)
		burst_inputs "$name" | bwrap "${bwrap_args[@]}" --bind "$ws" /workspace \
			--chdir /workspace --remount-ro / /usr/bin/env -i /bin/bash -c "$burst" burst \
			"$name" /workspace /tmp 1 "$quick"
		;;
	airlock)
		airlock_policy "$ws" >"$run/policy.json"
		burst_inputs "$name" | "$airlock" run -p "$run/policy.json" -- /bin/bash -c "$burst" \
			burst "$name" /workspace /tmp 1 "$quick"
		;;
	esac >"$run/out"
}

# ---- measuring ----

samples=$run/samples.tsv
: >"$samples"

# Before each burst: the disk written out and the clean page cache dropped (on ext4 without a
# journal, creating files right after many were deleted is slowed for a while: see
# settle_for_create in bench/fs.sh), then the tools and the inputs read again, so that every leg
# starts from the same state.
settle()
{
	sync
	echo 1 >/proc/sys/vm/drop_caches
	node -e 0
	"$py" -c 'import venv, ensurepip'
	meson --version >/dev/null
	echo 'int main(void) { return 0; }' | gcc -x c -o /dev/null -
	git --version >/dev/null
	burst_inputs "$1" | cat >/dev/null
}

declare -A failed=()
retried=()
# on NAME REP: runs burst NAME on every leg still running, round-robin. A sandbox leg whose burst
# fails gets one more try, from a fresh folder (the failure is logged and shown under the table);
# failing twice, it sits out the rest of the run.
on()
{
	local name=$1 rep=$2 leg ws rc step secs try

	for leg in "${legs[@]}"; do
		[ -z "${failed[$leg]:-}" ] || continue
		ws=$run/$leg.$name.$rep
		for try in 1 2; do
			rm -rf --one-file-system "$ws"
			mkdir "$ws"
			settle "$name"
			rc=0
			run_burst "$leg" "$name" "$ws" 2>"$run/err" || rc=$?
			[ "$rc" != 0 ] || break
			cat "$run/err" >&2
			[ "$leg" != native ] || die "native failed the $name burst (exit $rc)"
			[ "$try" = 2 ] || log "$leg failed the $name burst (exit $rc); trying it once more"
			retried+=("$leg's $name burst failed once, in run $rep (exit $rc: $(tail -n 1 "$run/err")), and was run again")
		done
		if [ "$rc" != 0 ]; then
			failed[$leg]="$name|exit $rc: $(tail -n 1 "$run/err")"
			log "$leg failed the $name burst twice; it sits out the rest of the run"
		else
			while read -r _ step secs; do
				printf '%s\t%s\t%s\t%s\n' "$leg" "$name" "$step" "$secs" >>"$samples"
				log "$(printf '%-8s %-7s %-10s %s' "$leg" "$name" "$step" "$secs")"
			done < <(grep '^@step ' "$run/out")
		fi
		rm -rf --one-file-system "$ws"
	done
}

load_before=$(cut -d ' ' -f 1-3 /proc/loadavg)
if awk -v l="${load_before%% *}" -v n="$(nproc)" 'BEGIN { exit !(l > n / 2) }'; then
	log "warning: load average ${load_before%% *} on $(nproc) cores before the run:" \
		"the figures will be noisier than on a quiet machine"
fi
start=$SECONDS
log "legs: ${legs[*]}; $repeats repeat(s), under $run"
for rep in $(seq "$repeats"); do
	for name in build node python; do
		log "repeat $rep: the $name burst"
		on "$name" "$rep"
	done
done
elapsed=$((SECONDS - start))
load_after=$(cut -d ' ' -f 1-3 /proc/loadavg)

# ---- the table ----

failed_at=""
failed_text=""
retried_text=""
for r in "${retried[@]}"; do
	retried_text+="
- **Failure:** $r."
done
for leg in "${!failed[@]}"; do
	failed_at+="$leg=${failed[$leg]%%|*} "
	failed_text+=" The $leg leg failed the ${failed[$leg]%%|*} burst (${failed[$leg]#*|}) and sat out the rest."
done
table=$("$py" - "$samples" "${legs[*]}" "$failed_at" "$c_project $c_version" "$c_files" \
	"$npm_files" "${npm_require[*]}" "$wheels" <<'EOF'
import statistics, sys

path, legs, failed, c_name, c_files, npm_files, npm_require, wheels = sys.argv[1:]
legs = legs.split()
failed = dict(f.split("=", 1) for f in failed.split())
samples = {}
for line in open(path):
    leg, burst, step, secs = line.rstrip("\n").split("\t")
    samples.setdefault((leg, burst, step), []).append(float(secs))

bursts = [
    ("build", "clone, build, grep, status, commit", [
        ("clone", "`git clone --no-local` (%s, %s files)" % (c_name, format(int(c_files), ","))),
        ("configure", "`meson setup`"),
        ("build", "`ninja`"),
        ("grep", "`grep -r`"),
        ("status", "`git status`"),
        ("commit", "`git commit -a` (one file changed)"),
    ]),
    ("node", "node_modules", [
        ("copy", "`cp -r node_modules` (%s files)" % format(int(npm_files), ",")),
        ("require", "`node`: `require()` %s" % ", ".join(npm_require.split())),
        ("find", "`find -name package.json`"),
        ("rm", "`rm -rf`"),
    ]),
    ("python", "Python venv", [
        ("venv", "`python3 -m venv` (ensurepip: pip, setuptools)"),
        ("pip", "`pip install --no-index` (%s)"
         % ", ".join("%s %s" % tuple(w.split("-")[:2]) for w in wheels.split())),
    ]),
]
order = [b[0] for b in bursts]

def value(leg, burst, step):
    v = samples.get((leg, burst, step))
    return statistics.median(v) if v else None

def total(leg, burst, steps):
    # the median over the repeats of each repeat's sum of steps
    runs = [samples.get((leg, burst, s), []) for s, _ in steps]
    n = min(len(r) for r in runs)
    if n == 0:
        return None
    return statistics.median(sum(r[i] for r in runs) for i in range(n))

def show(v):
    if v is None:
        return "—"
    return "%.0f ms" % (v * 1e3) if v < 1 else "%.2f s" % v

def ratio(a, b):
    if a is None or not b:
        return "—"
    return "%.2f×" % (a / b)

def is_failed(leg, burst):
    return leg in failed and order.index(failed[leg]) <= order.index(burst)

print("| burst | step | native | bubblewrap | bubblewrap ÷ native | airlock | airlock ÷ native "
      "| airlock ÷ bubblewrap |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
for burst, title, steps in bursts:
    rows = [(label, lambda leg, s=s: value(leg, burst, s)) for s, label in steps]
    rows.append(("**total**", lambda leg: total(leg, burst, steps)))
    for i, (label, get) in enumerate(rows):
        v = {}
        for leg in ("native", "bwrap", "airlock"):
            v[leg] = None if leg not in legs or is_failed(leg, burst) else get(leg)
        cells = [title if i == 0 else "", label, show(v["native"])]
        cells += ["failed" if is_failed("bwrap", burst) else show(v["bwrap"]),
                  ratio(v["bwrap"], v["native"])]
        cells += ["failed" if is_failed("airlock", burst) else show(v["airlock"]),
                  ratio(v["airlock"], v["native"]), ratio(v["airlock"], v["bwrap"])]
        if label == "**total**":
            cells = ["**%s**" % c if c not in ("", "—") and j > 1 else c
                     for j, c in enumerate(cells)]
        print("| " + " | ".join(cells) + " |")
EOF
)

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
dev=$(findmnt -no SOURCE -T "$base" | head -n 1)
fstype=$(findmnt -no FSTYPE -T "$base" | head -n 1)
commit=$(git -C "$repo" describe --always --dirty 2>/dev/null || echo unknown)
if [ -n "${skipped[bwrap]:-}" ]; then
	bwrap_line="bubblewrap: not measured in this run (${skipped[bwrap]})"
else
	bwrap_line="bubblewrap ($(bwrap --version | head -n 1), \`bwrap --bind DIR /workspace\` with
the namespaces, binds, /etc files, /proc, /dev and /tmp of bench/launch.sh's, no seccomp filter,
cgroup or FUSE)"
fi
if [ -n "${skipped[airlock]:-}" ]; then
	airlock_line="airlock: not measured in this run (${skipped[airlock]//$repo\//})"
else
	airlock_version=$("$airlock" --version 2>/dev/null | head -n 1 || true)
	airlock_line="airlock (\`airlock run -p POLICY\`, ${airlock_version:-airlock} at commit $commit;
POLICY is the embedded default with the folder as workspace root, \`write\` also naming
\`.git/**\`, \`.git/config\` and \`.git/hooks/**\` so that git clone may write the new
repository's configuration, and a 30 min timeout)"
fi
runs="$repeats runs"
[ "$repeats" != 1 ] || runs="one run"
mode=""
[ "$quick" = 1 ] && mode=" (--quick: dav1d without its tests and tools)"
intro="Measured $(date -u +%Y-%m-%d)$mode on $(nproc) cores (${cpu:-unknown CPU}), kernel $(uname -r),
as $(id -un), in folders of one $fstype filesystem on $dev under $base. Legs: native (a plain
folder); $bwrap_line; $airlock_line. Each burst runs as one command (\`bash -c\`) in a fresh empty
folder that is the workspace, which gets its inputs on stdin as a tar stream and unpacks them in
its /tmp (a tmpfs in both sandboxes; native: a folder beside), untimed; each step is timed
inside, and the sandbox's start and end are not counted (see Launch). Each figure is the median
of $runs, taken round-robin over the legs; a total is the median of each run's sum of steps.
Before each burst, the disk is written out and the clean page cache dropped, then the tools and
the inputs read again.$failed_text The run took $((elapsed / 60)) min $((elapsed % 60)) s; load
average before: $load_before, after: $load_after."
body="## Agent bursts

$(tr '\n' ' ' <<<"$intro" | fmt -w 100)

$table

- build: \`git clone --no-local\` of a bare repository holding Debian's $c_project $c_version source
  package (one commit), \`meson setup -Denable_asm=false\`, \`ninja\` (gcc $(gcc -dumpversion), meson
  $(meson --version), $(nproc) cores), \`grep -r -F xyzzy .\` over the tree and its build folder,
  \`git status --porcelain\`, then one line appended to a source file and \`git commit -a\`.
- node: \`cp -r\` of a node_modules made once by \`npm install --ignore-scripts ${npm_packages[*]}\`
  (node $(node --version)), \`node -e\` requiring ${npm_require[*]} from it, \`find\`, \`rm -rf\`.
- python: \`/usr/bin/python3 -m venv .venv\` ($("$py" --version | cut -d ' ' -f 2); Debian's ensurepip
  installs pip and setuptools from /usr/share/python-wheels), then \`.venv/bin/pip install
  --no-index --find-links\` of the wheels of Debian's ${whl_packages[*]} (apt-get download).$retried_text

Reproduce: \`scripts/dev.sh bench\` (or \`bench/agent.sh\`, which uses \`AIRLOCK=build/cli/airlock\`
by default; \`bench/agent.sh --quick\` is a smoke run that only prints), as root.
"

printf '%s\n' "$body"

if [ "${#failed[@]}" -gt 0 ]; then
	[ "$doc" = - ] || log "not writing $doc: a leg failed"
	exit 1
fi
if [ "$doc" != - ]; then
	printf '%s\n' "$body" >"$run/section.md"
	bench_write_section "$doc" "## Agent bursts" "$run/section.md"
	log "wrote the Agent bursts section of $doc"
fi
