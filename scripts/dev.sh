#!/usr/bin/env bash
# The developer's and CI's one entry point. On a fresh Debian 12 machine, as root:
#   scripts/dev.sh demo    install what is missing, build, show the sandbox from the inside
#   scripts/dev.sh test    install what is missing, build three ways, run every test suite
# and also:
#   scripts/dev.sh deps    only install the missing Debian packages
#   scripts/dev.sh build   deps + build build/ (gcc, warnings are errors)
#   scripts/dev.sh mcp-sdk the MCP TypeScript SDK (npm registry) into build-deps/npm, for the
#                          tests of airlock mcp (they call it)
#   scripts/dev.sh bench   build + bench/launch.sh (launch time against bubblewrap), bench/fs.sh
#                          (the workspace filesystem against native ext4, bindfs and libfuse's
#                          passthrough_hp over io_uring), bench/broker.sh (resolve latency
#                          against an echo server), bench/proxy.sh (the egress proxy against
#                          direct, tinyproxy, squid), bench/proxy-h2.sh (HTTP/2 and gRPC through
#                          it against direct), bench/exec.sh (airlock exec requests/s
#                          against bubblewrap) and bench/agent.sh (an agent's bursts: clone and
#                          build, node_modules, a venv; against native and bubblewrap)
#
# `test` builds build/ (gcc, -Dwerror=true) and runs the unit, fuzz, lint and root suites;
# build-asan/ (ASan + UBSan) and runs unit, fuzz and root; with clang, build-fuzz/ (libFuzzer)
# and runs every fuzz-*-libfuzzer for FUZZ_SECONDS (default 30) on its corpus. A skipped root
# test counts as failed (AIRLOCK_TEST_MUST_RUN=1). Its last line is "N passed, N failed" over
# everything it ran; it exits non-zero if anything failed.

set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

packages=(
	# build
	meson ninja-build pkg-config gcc clang
	libfuse3-dev libseccomp-dev libsodium-dev libnl-3-dev libnl-route-3-dev libjson-c-dev
	libssl-dev libcmocka-dev libnghttp2-dev
	# the egress proxy's sends, batched through io_uring (netns/proxy-send.c)
	liburing-dev
	# airlock serve's HTTP server (its header to build; the library is loaded when serve runs)
	libmicrohttpd-dev
	# libFuzzer runtime for clang 14 (Debian 12), the lint suite's formatter
	libclang-rt-14-dev clang-format
	# libfuse 3.18 from Debian's source package where the system's is older (libfuse3 below):
	# its io_uring transport (liburing-dev, above), and the C++ of its example passthrough_hp
	# (bench/fs.sh)
	libnuma-dev dpkg-dev g++
	# run time and tests: fusermount3, ip, ps, setpriv; python3 reads JSON in tests and here
	fuse3 iproute2 procps util-linux python3 git attr
	# the broker tests: strace kills a vault writer at chosen system calls, keyctl fills keyrings,
	# getfacl reads the socket's ACL
	strace keyutils acl
	# airlock exec's languages, where the sandbox sees them (/usr): python3 (above), node (and
	# its WASI for wasm), rustc, Debian's ts-node for typescript
	nodejs rustc ts-node
	# the egress tests: real clients inside the sandbox, a test CA for the TLS upstream; HTTP/2's
	# upstream (nghttpd) and a gRPC client and server (python3-grpcio); a WebSocket client and
	# server (python3-websockets)
	curl openssl ca-certificates nghttp2-server nghttp2-client python3-grpcio python3-websockets
	# AWS SigV4 through the proxy: Debian's botocore, the client in the sandbox and the upstream's
	# verifier
	python3-botocore
	# SSH keys in the vault: ssh-keygen makes the tests' keys and fingerprints
	openssh-client
	# git over SSH through airlock's agent: the root test starts Debian's /usr/sbin/sshd itself,
	# in a network namespace of its own. The machine's ssh service stays off: the package goes in
	# with service starts refused and the service disabled afterwards (install_ssh_server)
	openssh-server
	# Postgres logins through the egress proxy: the root test runs Debian's server (initdb and
	# postgres, its own cluster in its own folder) and psql in the sandbox; the machine's own
	# postgresql service stays off, as ssh's (install_servers)
	postgresql postgresql-client
)

log()
{
	if [ -t 2 ]; then
		printf '\033[1m==> %s\033[0m\n' "$*" >&2
	else
		printf '==> %s\n' "$*" >&2
	fi
}

as_root()
{
	if [ "$(id -u)" = 0 ]; then
		"$@"
	elif command -v sudo >/dev/null; then
		sudo "$@"
	else
		echo "dev.sh: need root to run: $*" >&2
		return 1
	fi
}

# Debian's udev makes /dev/fuse mode 0666 (FUSE guards itself: a user mounts only in a user
# namespace of their own); a machine without udev leaves the kernel's 0600, which keeps
# unprivileged users from running a sandbox.
fuse_device()
{
	if [ -c /dev/fuse ] && [ "$(stat -c %a /dev/fuse)" != 666 ]; then
		log "deps: /dev/fuse is mode $(stat -c %a /dev/fuse); making it 0666 as udev would"
		as_root chmod 0666 /dev/fuse
	fi
}

cmd_deps()
{
	fuse_device
	deps_packages || return 1
	cmd_libfuse
}

deps_packages()
{
	local missing=() p
	for p in "${packages[@]}"; do
		if [ "$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null)" != "ii " ]; then
			missing+=("$p")
		fi
	done
	if [ "${#missing[@]}" -eq 0 ]; then
		log "deps: all ${#packages[@]} packages are installed"
		return 0
	fi
	log "deps: installing ${missing[*]}"
	as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
	local others=() servers=()
	for p in "${missing[@]}"; do
		case $p in
		openssh-server | postgresql) servers+=("$p") ;;
		*) others+=("$p") ;;
		esac
	done
	if [ "${#others[@]}" -gt 0 ]; then
		as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
			--no-install-recommends "${others[@]}" || return 1
	fi
	[ "${#servers[@]}" = 0 ] || install_servers "${servers[@]}"
}

# openssh-server and postgresql are only for the tests, which start /usr/sbin/sshd and postgres
# themselves: installing them must not leave the machine serving SSH or a database. Debian's maintainer scripts start a service through
# invoke-rc.d or deb-systemd-invoke, which both ask /usr/sbin/policy-rc.d first, and exit 101 is
# "not allowed"; the machine's own policy-rc.d (Docker's images have one) is put back afterwards.
# The service is then disabled, and Debian's own switch /etc/ssh/sshd_not_to_be_run (honoured by
# the systemd units and the init script, not by /usr/sbin/sshd run directly as the test does)
# keeps it from starting at boot or on a later `systemctl start ssh`; remove it to serve SSH.
# postgresql's service is disabled the same way, and its main cluster (which the package makes,
# not started) is marked manual in its start.conf. Only done when this script installs the
# package: a machine that had it already keeps its service.
install_servers()
{
	local rcd=/usr/sbin/policy-rc.d saved="" rc=0 conf
	if [ -e "$rcd" ]; then
		saved=$rcd.airlock-dev-$$
		as_root mv "$rcd" "$saved" || return 1
	fi
	if printf '#!/bin/sh\n# scripts/dev.sh: no service starts while openssh-server is installed\nexit 101\n' |
		as_root tee "$rcd" >/dev/null && as_root chmod 755 "$rcd"; then
		as_root mkdir -p /etc/ssh
		as_root touch /etc/ssh/sshd_not_to_be_run
		as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
			"$@" || rc=1
	else
		rc=1
	fi
	as_root rm -f "$rcd"
	if [ -n "$saved" ]; then
		as_root mv "$saved" "$rcd" || rc=1
	fi
	as_root touch /etc/ssh/sshd_not_to_be_run || rc=1
	for conf in /etc/postgresql/*/*/start.conf; do
		[ -e "$conf" ] || continue
		printf 'manual\n' | as_root tee "$conf" >/dev/null || rc=1
	done
	service_off ssh ssh.service ssh.socket || rc=1
	service_off postgresql postgresql.service || rc=1
	[ "$rc" = 0 ] || log "deps: installing $* with their services off failed"
	return "$rc"
}

# service_off NAME UNIT...: the init script NAME and the systemd units stay off.
service_off()
{
	local name=$1
	shift
	[ -e "/etc/init.d/$name" ] || [ -d /run/systemd/system ] || return 0
	if [ -d /run/systemd/system ]; then
		as_root systemctl disable --now "$@" >/dev/null 2>&1 || return 1
	elif command -v systemctl >/dev/null; then
		# no systemd running: the units' links (and, through systemd-sysv-install, the init
		# script's) are removed all the same
		as_root systemctl disable "$@" >/dev/null 2>&1 || return 1
	elif command -v update-rc.d >/dev/null; then
		as_root update-rc.d "$name" disable >/dev/null 2>&1 || return 1
	fi
}

# ---- libfuse 3.18 ----
# FUSE over io_uring and passthrough need libfuse 3.18; Debian 12 has 3.14. Where the system's is
# older, Debian's own source package fuse3 is fetched through apt from the suite that has 3.18
# (unstable), with a private apt state under build-deps/ (the machine's apt configuration is not
# changed): the deb-src entry uses the archive this machine's own sources name, and apt checks the
# signed Sources index, the .dsc's hashes and sizes, as for any source package. It is built with
# meson into build-deps/fuse3/ (static), which every build here links (setup_build).

fuse3_min=3.18
fuse3_suite=${AIRLOCK_FUSE3_SUITE:-unstable}
deps_dir=$repo/build-deps
fuse3_prefix=$deps_dir/fuse3

# The archive the machine's own apt sources use for Debian's main component.
debian_archive()
{
	apt-get indextargets --format '$(TARGET_OF) $(COMPONENT) $(REPO_URI)' 2>/dev/null |
		awk '$1 == "deb" && $2 == "main" && $3 !~ /security/ { print $3; exit }'
}

fuse3_built_version()
{
	PKG_CONFIG_PATH=$fuse3_prefix/lib/pkgconfig pkg-config --modversion fuse3 2>/dev/null
}

cmd_libfuse()
{
	if pkg-config --atleast-version="$fuse3_min" fuse3 2>/dev/null; then
		log "deps: the system's libfuse $(pkg-config --modversion fuse3) is $fuse3_min or newer"
		return 0
	fi
	if [ -f "$fuse3_prefix/lib/pkgconfig/fuse3.pc" ] &&
		PKG_CONFIG_PATH=$fuse3_prefix/lib/pkgconfig pkg-config --atleast-version="$fuse3_min" fuse3; then
		log "deps: libfuse $(fuse3_built_version) is built in build-deps/fuse3"
		return 0
	fi
	local archive apt=$deps_dir/apt version dsc
	archive=$(debian_archive)
	if [ -z "$archive" ]; then
		log "deps: no Debian archive in this machine's apt sources: cannot fetch fuse3's source"
		return 1
	fi
	log "deps: the system's libfuse is $(pkg-config --modversion fuse3 2>/dev/null || echo missing); building libfuse from Debian's fuse3 source package ($fuse3_suite, $archive)"
	rm -rf "$apt" "$deps_dir/src" "$deps_dir/fuse3-build" "$fuse3_prefix"
	mkdir -p "$apt/sources" "$apt/lists/partial" "$apt/cache/archives/partial" "$deps_dir/src"
	printf 'Types: deb-src\nURIs: %s\nSuites: %s\nComponents: main\n' \
		"$archive" "$fuse3_suite" >"$apt/sources/fuse3.sources"
	local aptopts=(-q -o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$apt/sources"
		-o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache"
		-o APT::Sandbox::User=root)
	apt-get "${aptopts[@]}" update >"$apt/update.log" 2>&1 ||
		{ cat "$apt/update.log" >&2; return 1; }
	version=$(apt-cache "${aptopts[@]}" showsrc fuse3 | sed -n 's/^Version: //p' | sort -V | tail -n 1)
	if [ -z "$version" ] || ! dpkg --compare-versions "$version" ge "$fuse3_min"; then
		log "deps: $fuse3_suite has fuse3 ${version:-nowhere}, older than $fuse3_min"
		return 1
	fi
	(cd "$deps_dir/src" && apt-get "${aptopts[@]}" source --download-only "fuse3=$version") \
		>"$apt/source.log" 2>&1 || { cat "$apt/source.log" >&2; return 1; }
	dsc=$(find "$deps_dir/src" -maxdepth 1 -name 'fuse3_*.dsc' | head -n 1)
	# dpkg-source checks the files against the .dsc again, then unpacks and applies Debian's
	# patches.
	(cd "$deps_dir/src" && dpkg-source -x "$dsc" fuse3) >"$apt/unpack.log" 2>&1 ||
		{ cat "$apt/unpack.log" >&2; return 1; }
	log "deps: building libfuse $version (meson, static, io_uring) into build-deps/fuse3"
	(cd "$deps_dir/src/fuse3" &&
		meson setup "$deps_dir/fuse3-build" --prefix="$fuse3_prefix" --libdir=lib \
			--buildtype=release -Ddefault_library=static -Dutils=false -Dtests=false \
			-Dexamples=true -Duseroot=false -Dinitscriptdir= -Dudevrulesdir="$fuse3_prefix/udev" &&
		ninja -C "$deps_dir/fuse3-build" install) >"$deps_dir/fuse3-build.log" 2>&1 ||
		{ tail -n 40 "$deps_dir/fuse3-build.log" >&2; return 1; }
	log "deps: libfuse $(fuse3_built_version) is built"
}

# setup_build DIR CC [MESON OPTIONS...]: configures DIR (or reconfigures it with the options) and
# builds it.
setup_build()
{
	local dir=$1 cc=$2
	shift 2
	# libfuse 3.18 built here (cmd_libfuse), where the system's is older
	if [ -f "$fuse3_prefix/lib/pkgconfig/fuse3.pc" ]; then
		set -- "$@" -Dpkg_config_path="$fuse3_prefix/lib/pkgconfig"
	fi
	if [ -f "$dir/build.ninja" ]; then
		meson setup --reconfigure "$dir" "$@" >"$dir.setup.log" 2>&1 ||
			{ cat "$dir.setup.log" >&2; return 1; }
	else
		CC=$cc meson setup "$dir" "$@" >"$dir.setup.log" 2>&1 ||
			{ cat "$dir.setup.log" >&2; return 1; }
	fi
	rm -f "$dir.setup.log"
	ninja -C "$dir"
}

cmd_build()
{
	cmd_deps
	log "build: build/ (gcc, -Dwerror=true)"
	setup_build build gcc -Dwerror=true
}

cmd_demo()
{
	local rc=0
	cmd_build
	local airlock=$repo/build/cli/airlock
	log "demo: airlock run -- /bin/sh /workspace/examples/demo.sh   (embedded default policy, workspace = $repo)"
	"$airlock" run -- /bin/sh /workspace/examples/demo.sh || rc=$?
	log "demo: airlock run -p examples/demo-policy.json -- /bin/sh /workspace/examples/demo.sh"
	"$airlock" run -p examples/demo-policy.json -- /bin/sh /workspace/examples/demo.sh || rc=$?
	if [ "$rc" -ne 0 ]; then
		log "demo: a run failed or leaked (exit $rc)"
		return 1
	fi
	log "demo: nothing leaked"
}

cmd_bench()
{
	cmd_build
	AIRLOCK=$repo/build/cli/airlock bench/launch.sh
	AIRLOCK=$repo/build/cli/airlock bench/fs.sh
	AIRLOCK=$repo/build/cli/airlock bench/broker.sh
	AIRLOCK=$repo/build/cli/airlock bench/proxy.sh
	AIRLOCK=$repo/build/cli/airlock bench/proxy-h2.sh
	AIRLOCK=$repo/build/cli/airlock bench/exec.sh
	AIRLOCK=$repo/build/cli/airlock bench/serve.sh
	AIRLOCK=$repo/build/cli/airlock bench/agent.sh
}

# ---- test ----

total_passed=0
total_failed=0
total_skipped=0
failed_names=()

count_pass()
{
	total_passed=$((total_passed + 1))
}

count_fail()
{
	total_failed=$((total_failed + 1))
	failed_names+=("$1")
}

summary()
{
	local rc=$?
	trap - EXIT
	if [ "$rc" -ne 0 ] && [ "$total_failed" -eq 0 ]; then
		count_fail "dev.sh test stopped early (exit $rc)"
	fi
	echo
	if [ "${#failed_names[@]}" -gt 0 ]; then
		echo "Failed:"
		printf '  %s\n' "${failed_names[@]}"
	fi
	[ "$total_skipped" -eq 0 ] || echo "Skipped: $total_skipped"
	echo "$total_passed passed, $total_failed failed"
	[ "$total_failed" -eq 0 ] && [ "$rc" -eq 0 ]
	exit $?
}

# run_suites DIR LABEL [MESON TEST OPTIONS...]: runs meson test and counts its testlog.json.
run_suites()
{
	local dir=$1 label=$2 counts p f s
	shift 2
	rm -f "$dir/meson-logs/testlog.json"
	log "test: $label: meson test $*"
	meson test -C "$dir" --print-errorlogs --num-processes 2 "$@" || true
	if [ ! -f "$dir/meson-logs/testlog.json" ]; then
		log "test: $label: no test ran"
		return 0
	fi
	counts=$(python3 - "$dir/meson-logs/testlog.json" "$label" <<'EOF'
import json, sys

passed = failed = skipped = 0
names = []
with open(sys.argv[1]) as f:
    for line in f:
        if not line.strip():
            continue
        t = json.loads(line)
        if t["result"] in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif t["result"] == "SKIP":
            skipped += 1
        else:
            failed += 1
            names.append("%s: %s (%s)" % (sys.argv[2], t["name"], t["result"]))
print(passed, failed, skipped)
for n in names:
    print(n)
EOF
	)
	read -r p f s <<<"$(head -n 1 <<<"$counts")"
	total_passed=$((total_passed + p))
	total_failed=$((total_failed + f))
	total_skipped=$((total_skipped + s))
	while IFS= read -r name; do
		[ -n "$name" ] && failed_names+=("$name")
	done < <(tail -n +2 <<<"$counts")
	log "test: $label: $p passed, $f failed, $s skipped"
}

# fuzz_run BINARY: one bounded libFuzzer run on the target's corpus; a crash fails it and its
# reproducer is kept in tests/fuzz/crashes/<target>/.
fuzz_run()
{
	local bin=$1 name target corpus scratch crashes
	name=$(basename "$bin")
	target=${name#fuzz-}
	target=${target%-libfuzzer}
	corpus=$repo/tests/fuzz/corpus/$target
	scratch=$repo/build-fuzz/fuzz-scratch/$target
	crashes=$repo/tests/fuzz/crashes/$target
	rm -rf "$scratch"
	mkdir -p "$scratch" "$crashes"
	local dirs=("$scratch")
	if [ -d "$corpus" ]; then
		dirs+=("$corpus")
	else
		log "fuzz: $target: no corpus folder $corpus, starting from nothing"
	fi
	log "fuzz: $target: ${FUZZ_SECONDS}s"
	# New inputs go to the first folder (scratch), so the committed corpus is never changed.
	if "$bin" -max_total_time="$FUZZ_SECONDS" -timeout=25 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$crashes/" "${dirs[@]}" \
		>"$repo/build-fuzz/$name.log" 2>&1; then
		count_pass
		log "fuzz: $target: ok ($(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' \
			"$repo/build-fuzz/$name.log" | grep -o '[0-9]*$' || echo '?') runs)"
	else
		tail -n 40 "$repo/build-fuzz/$name.log" >&2
		local kept
		kept=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$repo/build-fuzz/$name.log" |
			tr '\n' ' ')
		count_fail "fuzz: $target failed; reproducer: ${kept:-none written, see build-fuzz/$name.log}"
		log "fuzz: $target: FAILED; reproducer: ${kept:-none written, see build-fuzz/$name.log}"
	fi
}

cmd_test()
{
	export AIRLOCK_TEST_MUST_RUN=1
	FUZZ_SECONDS=${FUZZ_SECONDS:-30}
	trap summary EXIT

	cmd_deps || { count_fail "deps: installing the Debian packages"; return 1; }

	log "test: build/ (gcc, -Dwerror=true)"
	if setup_build build gcc -Dwerror=true; then
		run_suites build gcc --suite unit --suite fuzz --suite lint --suite root
	else
		count_fail "build: build/ (gcc) does not build"
	fi

	log "test: build-asan/ (gcc, -Db_sanitize=address,undefined)"
	if setup_build build-asan gcc -Dwerror=true -Db_sanitize=address,undefined; then
		# The fs suite's other transports (suite fs-matrix), the egress suite run again as an
		# unprivileged user (suite rootless) and with each send made at once (suite net-direct)
		# run in build/ only.
		run_suites build-asan asan --suite unit --suite fuzz --suite root --no-suite fs-matrix \
			--no-suite rootless --no-suite net-direct \
			--timeout-multiplier 3
	else
		count_fail "build: build-asan/ does not build"
	fi

	if command -v clang >/dev/null; then
		log "test: build-fuzz/ (clang, -Dfuzzing=true)"
		if setup_build build-fuzz clang -Dwerror=true -Dfuzzing=true; then
			local fuzzers
			mapfile -t fuzzers < <(find build-fuzz -type f -perm -u+x -name 'fuzz-*-libfuzzer' | sort)
			[ "${#fuzzers[@]}" -gt 0 ] || log "fuzz: no fuzz-*-libfuzzer binary in build-fuzz/"
			local bin
			for bin in "${fuzzers[@]}"; do
				fuzz_run "$repo/$bin"
			done
		else
			count_fail "build: build-fuzz/ (clang, libFuzzer) does not build"
		fi
	else
		log "test: clang not found: no libFuzzer runs"
	fi
}

# The official Model Context Protocol TypeScript SDK, pinned, from the npm registry into
# build-deps/npm: the client that tests/integration/test-mcp-*.sh drive airlock mcp with.
mcp_sdk_version=1.32.2
cmd_mcp_sdk()
{
	local dir=$deps_dir/npm
	if grep -qs "\"version\": \"$mcp_sdk_version\"" \
		"$dir/node_modules/@modelcontextprotocol/sdk/package.json"; then
		return 0
	fi
	log "deps: installing @modelcontextprotocol/sdk@$mcp_sdk_version into $dir"
	mkdir -p "$dir"
	npm install --prefix "$dir" --no-audit --no-fund --loglevel=error \
		"@modelcontextprotocol/sdk@$mcp_sdk_version" >&2
}

usage()
{
	sed -n '2,17s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
}

case ${1:-} in
deps) cmd_deps ;;
build) cmd_build ;;
mcp-sdk) cmd_mcp_sdk ;;
demo) cmd_demo ;;
test) cmd_test ;;
bench) cmd_bench ;;
-h | --help | help) usage ;;
*)
	usage >&2
	exit 2
	;;
esac
