# shellcheck shell=bash
# Shared helpers of the integration tests (suite 'root'), sourced by each test-*.sh.
#
# A test: `. "$IT_LIB"; it_setup; ...checks...; it_finish`. Checks don't stop the test: each
# prints "ok - ..." or "FAIL - ..." and it_finish exits 1 if any failed, after checking that
# nothing is left behind (mounts, cgroups, processes, /tmp entries).
#
# Environment (set by tests/integration/meson.build):
#   AIRLOCK        the airlock binary under test
#   AIRLOCK_PROBE  probes/airlock-probe, run inside the sandbox
#   ITRUN          helpers/itrun: watchdog, signal dispositions, exact environment, terminal
#   AIRLOCK_TEST_MUST_RUN=1  a test that cannot run here fails instead of skipping
#   AIRLOCK_IT_USER=UID  airlock runs as that unprivileged user (it_as_user_setup)

set -u
set -o pipefail

IT_NAME=$(basename "$0" .sh)
IT_NAME=${IT_NAME#test-}
# Put into the command lines of everything a test starts, to find leftovers by.
IT_MARK="airlock-it-$$-$RANDOM"
IT_PASSED=0
IT_FAILED=0
IT_TMP=""
IT_WATCHDOG=${IT_WATCHDOG:-60}
if [ -x /usr/bin/python3 ]; then
	IT_PY=/usr/bin/python3
else
	IT_PY=python3
fi

it_log()
{
	printf '%s\n' "$*"
}

it_pass()
{
	IT_PASSED=$((IT_PASSED + 1))
	it_log "ok - $1"
}

it_fail()
{
	IT_FAILED=$((IT_FAILED + 1))
	it_log "FAIL - $1"
	shift
	local detail
	for detail in "$@"; do
		[ -n "$detail" ] && printf '%s\n' "$detail" | sed -n '1,40s/^/    | /p'
	done
	return 0
}

# Cannot run here: skip (77), or fail when AIRLOCK_TEST_MUST_RUN=1 (CI).
it_skip()
{
	if [ "${AIRLOCK_TEST_MUST_RUN:-0}" = 1 ]; then
		it_log "FAIL - cannot run: $* (AIRLOCK_TEST_MUST_RUN=1 turns a skip into a failure)"
		exit 1
	fi
	it_log "SKIP - $*"
	exit 77
}

# assert_eq EXPECTED ACTUAL WHAT
assert_eq()
{
	if [ "$1" = "$2" ]; then
		it_pass "$3"
	else
		it_fail "$3" "expected: $1" "actual:   $2" "${AL_ERR:+airlock stderr: $AL_ERR}"
	fi
}

assert_ne()
{
	if [ "$1" != "$2" ]; then
		it_pass "$3"
	else
		it_fail "$3" "expected anything but: $1"
	fi
}

# assert_contains HAYSTACK NEEDLE WHAT
assert_contains()
{
	if [[ $1 == *"$2"* ]]; then
		it_pass "$3"
	else
		it_fail "$3" "expected to contain: $2" "actual: $1" "${AL_ERR:+airlock stderr: $AL_ERR}"
	fi
}

assert_not_contains()
{
	if [[ $1 != *"$2"* ]]; then
		it_pass "$3"
	else
		it_fail "$3" "expected not to contain: $2" "actual: $1"
	fi
}

# assert_match EXTENDED_REGEX ACTUAL WHAT
assert_match()
{
	if [[ $2 =~ $1 ]]; then
		it_pass "$3"
	else
		it_fail "$3" "expected to match: $1" "actual: $2" "${AL_ERR:+airlock stderr: $AL_ERR}"
	fi
}

# assert_true WHAT COMMAND...: the command succeeds.
assert_true()
{
	local what=$1
	shift
	if "$@"; then
		it_pass "$what"
	else
		it_fail "$what" "command failed: $*"
	fi
}

assert_false()
{
	local what=$1
	shift
	if "$@"; then
		it_fail "$what" "command succeeded: $*"
	else
		it_pass "$what"
	fi
}

# One line of stderr that starts with "airlock: " (the contract for refusals).
assert_one_error_line()
{
	local err=$1 what=$2 lines
	lines=$(printf '%s' "$err" | grep -c '' || true)
	if [ "$lines" = 1 ] && [[ $err == "airlock: "* ]]; then
		it_pass "$what"
	else
		it_fail "$what" "expected exactly one line starting with \"airlock: \", got $lines:" "$err"
	fi
}

# ---- running airlock ----

# al_run ARGS...: runs "$AIRLOCK" ARGS under the watchdog, stdin inherited.
# Sets AL_RC, AL_OUT and AL_ERR (files: $IT_TMP/al.out, $IT_TMP/al.err).
al_run()
{
	"$ITRUN" -t "$IT_WATCHDOG" -- "$AIRLOCK" "$@" >"$IT_TMP/al.out" 2>"$IT_TMP/al.err"
	AL_RC=$?
	AL_OUT=$(cat "$IT_TMP/al.out")
	AL_ERR=$(cat "$IT_TMP/al.err")
	if [ "$AL_RC" = 255 ] && [[ $AL_ERR == *"itrun: watchdog"* ]]; then
		it_fail "airlock ended by itself within ${IT_WATCHDOG}s: airlock $*" "$AL_ERR"
		# It hangs: let the remaining checks fail faster, within meson's timeout.
		IT_WATCHDOG=15
	fi
	return 0
}

# sb_run [RUN OPTIONS] -- CMD...: `airlock run -w $WS ...`.
sb_run()
{
	al_run run -w "$WS" "$@"
}

# sb_sh SCRIPT: runs a shell script in the sandbox on the embedded default policy.
sb_sh()
{
	sb_run -- /bin/sh -c "$1" "$IT_MARK"
}

# json_get FILE EXPR: evaluates a Python expression over the JSON document d in FILE and prints
# it (bool as true/false, None as null, lists and objects as sorted JSON). Prints
# "JSON-ERROR: ..." when FILE is not one JSON document.
json_get()
{
	"$IT_PY" -c '
import json, sys
try:
    with open(sys.argv[1]) as f:
        text = f.read()
    d = json.loads(text)
except Exception as e:
    print("JSON-ERROR: %s" % e)
    sys.exit(0)
try:
    v = eval(sys.argv[2], {"d": d, "len": len, "isinstance": isinstance, "int": int,
                           "float": float, "str": str, "bool": bool, "list": list,
                           "dict": dict, "sorted": sorted, "all": all, "any": any,
                           "text": text, "type": type})
except Exception as e:
    print("JSON-ERROR: %r: %s" % (sys.argv[2], e))
    sys.exit(0)
if isinstance(v, bool):
    print("true" if v else "false")
elif v is None:
    print("null")
elif isinstance(v, (dict, list)):
    print(json.dumps(v, sort_keys=True))
else:
    print(v)
' "$1" "$2"
}

# write_policy FILE: writes stdin to FILE (a policy for -p).
write_policy()
{
	cat >"$1"
}

# it_admit POLICY...: lists each policy's hash in the test's own admitted set, $IT_TMP/admitted.
# A policy of tier 3 or more (declared, or called for by what it does: docs/SECURITY.md) runs only
# with `--admitted "$IT_TMP/admitted"`.
it_admit()
{
	local p
	for p in "$@"; do
		"$AIRLOCK" policy hash "$p" >>"$IT_TMP/admitted" || it_fail "airlock policy hash $p"
	done
	chmod 644 "$IT_TMP/admitted"
}

# ---- host state: nothing may be left behind ----

it_mounts()
{
	# mount point, type and source of each mount of the test's mount namespace
	awk '{ for (i = 7; i <= NF; i++) if ($i == "-") { print $5, $(i + 1), $(i + 2); break } }' \
		/proc/self/mountinfo | sort
}

# it_cgroup_mount CONTROLLERS: "MOUNTPOINT ROOT" of the hierarchy with those controllers (as
# in /proc/PID/cgroup: "memory", "cpu,cpuacct", "name=systemd"; "" for cgroup2).
it_cgroup_mount()
{
	awk -v want="$1" '
	{
		for (i = 7; i <= NF; i++)
			if ($i == "-")
				break
		type = $(i + 1)
		if (want == "") {
			if (type == "cgroup2") {
				print $5, $4
				exit
			}
			next
		}
		if (type != "cgroup")
			next
		n = split(want, w, ",")
		m = split($(i + 3), o, ",")
		found = 1
		for (a = 1; a <= n; a++) {
			hit = 0
			for (b = 1; b <= m; b++)
				if (o[b] == w[a])
					hit = 1
			if (!hit)
				found = 0
		}
		if (found) {
			print $5, $4
			exit
		}
	}' /proc/self/mountinfo
}

# it_cgroup_dirs_of PID: the cgroup folder of PID in each mounted hierarchy.
it_cgroup_dirs_of()
{
	local id ctrls path mnt root
	while IFS=: read -r id ctrls path; do
		read -r mnt root <<<"$(it_cgroup_mount "$ctrls")"
		[ -n "$mnt" ] || continue
		[ "$root" = / ] || path=${path#"$root"}
		printf '%s\n' "${mnt%/}${path}"
	done 2>/dev/null <"/proc/$1/cgroup"
}

# Cgroups that airlock may create: below this test's own cgroup in each hierarchy (where airlock,
# our child, starts), and anything named *airlock* anywhere.
it_cgroups()
{
	{
		local dir
		for dir in $(it_cgroup_dirs_of self); do
			find "$dir" -mindepth 1 -maxdepth 2 -type d 2>/dev/null
		done
		find /sys/fs/cgroup -mindepth 1 -maxdepth 8 -type d -iname '*airlock*' 2>/dev/null
	} | sort -u
}

# airlock's own temporary files: what it (or a sandbox through it) may leave in the host's
# /tmp, /var/tmp, /dev/shm or /run is named airlock* (exec's fresh workspaces live in
# /run/airlock-exec/PID-XXXXXX for root, else $XDG_RUNTIME_DIR/airlock-exec or
# $TMPDIR/airlock-exec-UID; /run's own airlock folder is state, not a leftover). Other programs' files come and go as they like: they are
# not this test's business, so only airlock's names are listed (the tests' own folders,
# airlock-it.*, are not airlock's), each with its owner.
it_tmp_entries()
{
	local d
	for d in /tmp /var/tmp /dev/shm /run; do
		[ -d "$d" ] || continue
		find "$d" -mindepth 1 -maxdepth 1 -name 'airlock*' ! -name 'airlock-it.*' \
			! -path /run/airlock \
			-printf '%p %u\n' 2>/dev/null
		find "$d" -mindepth 2 -maxdepth 2 -path "$d/airlock-exec*/*" \
			-printf '%p %u\n' 2>/dev/null
	done | sort || true
}

# Pids of processes whose command line mentions the marker (or $1), except this shell.
it_marked_pids()
{
	local mark=${1:-$IT_MARK} p args
	for p in /proc/[0-9]*; do
		[ "${p#/proc/}" = "$$" ] && continue
		[ "${p#/proc/}" = "${BASHPID:-$$}" ] && continue
		# builtins only: this runs over every process of the host, often
		mapfile -d '' -t args 2>/dev/null <"$p/cmdline" || continue
		[[ "${args[*]}" == *"$mark"* ]] && printf '%s\n' "${p#/proc/}"
	done
	return 0
}

# pids of this test's airlock serving processes on the host: workspace filesystem daemons and
# egress proxies started under its AIRLOCK_IT_RUN (it_setup exports it, and they inherit it from
# airlock; a test that runs airlock under env -i passes it on). Those of another test, or of
# nobody's (someone's own airlock beside the suite), are neither judged nor killed: a suite run
# on a machine in use once killed the workspace filesystems of sandboxes it had not started.
it_fs_daemons()
{
	local p comm run
	for p in /proc/[0-9]*; do
		read -r comm 2>/dev/null <"$p/comm" || continue
		[ "$comm" = airlock-fs ] || [ "$comm" = airlock-net ] || continue
		run=$(tr '\0' '\n' 2>/dev/null <"$p/environ" | sed -n 's/^AIRLOCK_IT_RUN=//p')
		[ -n "$run" ] && [ "$run" = "${AIRLOCK_IT_RUN:-}" ] || continue
		printf '%s\n' "${p#/proc/}"
	done
	return 0
}

it_snapshot()
{
	it_fs_daemons >"$IT_TMP/state.fsd"
	it_mounts >"$IT_TMP/state.mounts"
	it_cgroups >"$IT_TMP/state.cgroups"
	it_tmp_entries >"$IT_TMP/state.tmp"
}

# wait_for SECONDS COMMAND...: polls (every 50 ms) until the command succeeds.
wait_for()
{
	local deadline=$((SECONDS + $1))
	shift
	while ! "$@"; do
		[ "$SECONDS" -ge "$deadline" ] && return 1
		sleep 0.05
	done
	return 0
}

it_no_marked_processes()
{
	[ -z "$(it_marked_pids "$@")" ]
}

# assert_clean WHAT: no mount, airlock cgroup, /tmp entry or marked process appeared since
# it_setup (or the last it_snapshot).
assert_clean()
{
	local what=$1 new
	if wait_for 5 it_no_marked_processes; then
		it_pass "$what: no process of the sandbox is left"
	else
		it_fail "$what: no process of the sandbox is left" \
			"$(for p in $(it_marked_pids); do
				printf '%s: %s\n' "$p" "$(tr '\0' ' ' 2>/dev/null <"/proc/$p/cmdline")"
			done)"
		for p in $(it_marked_pids); do kill -KILL "$p" 2>/dev/null; done
	fi
	new=$(it_fs_daemons | sort | comm -13 <(sort "$IT_TMP/state.fsd") -)
	if [ -n "$new" ]; then
		sleep 2
		new=$(it_fs_daemons | sort | comm -13 <(sort "$IT_TMP/state.fsd") -)
	fi
	if [ -z "$new" ]; then
		it_pass "$what: no workspace filesystem daemon or egress proxy is left"
	else
		it_fail "$what: no workspace filesystem daemon or egress proxy is left" "$new"
		for p in $new; do kill -KILL "$p" 2>/dev/null; done
	fi
	new=$(it_mounts | comm -13 "$IT_TMP/state.mounts" -)
	if [ -z "$new" ]; then
		it_pass "$what: no mount is left on the host"
	else
		it_fail "$what: no mount is left on the host" "$new"
	fi
	# Not even the shared "airlock" folder: the last run out removes it. A killed airlock's
	# cgroups are removed by its watcher once its processes are gone (launcher/cgroup.c), which
	# may end a moment after the test's last step: that moment is given, a leftover stays.
	new=$(it_cgroups | comm -13 "$IT_TMP/state.cgroups" - || true)
	if [ -n "$new" ]; then
		sleep 2
		new=$(it_cgroups | comm -13 "$IT_TMP/state.cgroups" - || true)
	fi
	if [ -z "$new" ]; then
		it_pass "$what: no airlock cgroup is left"
	else
		it_fail "$what: no airlock cgroup is left" "$new"
	fi
	new=$(it_tmp_entries | comm -13 "$IT_TMP/state.tmp" -)
	if [ -n "$new" ]; then
		# A run that is still ending (a daemon's last unlink) gets a moment; a leftover stays.
		sleep 1
		new=$(comm -12 <(sort <<<"$new") <(it_tmp_entries | comm -13 "$IT_TMP/state.tmp" -))
	fi
	if [ -z "$new" ]; then
		it_pass "$what: nothing is left in /tmp, /var/tmp or /dev/shm"
	else
		it_fail "$what: nothing is left in /tmp, /var/tmp or /dev/shm" "$new"
	fi
}

# ---- set-up and end ----

# it_test_pki NAME...: a test CA and a server certificate for the names (the first its CN, all
# in its subjectAltName) in $IT_TMP/pki: ca.pem, ca.key, srv.pem, srv.key; sets $pki to that.
it_test_pki()
{
	local san="" n
	pki=$IT_TMP/pki
	mkdir -p "$pki"
	for n in "$@"; do san="$san${san:+,}DNS:$n"; done
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
		-subj "/CN=airlock test CA" -keyout "$pki/ca.key" -out "$pki/ca.pem" 2>/dev/null
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$1" \
		-keyout "$pki/srv.key" -out "$pki/srv.csr" 2>/dev/null
	printf 'subjectAltName=%s\n' "$san" >"$pki/ext"
	openssl x509 -req -in "$pki/srv.csr" -CA "$pki/ca.pem" -CAkey "$pki/ca.key" \
		-CAcreateserial -days 2 -extfile "$pki/ext" -out "$pki/srv.pem" 2>/dev/null
}

# it_upstream [--as UID] OUT ARG...: starts helpers/upstream.py ARG... in the background (as UID
# with --as), its output in OUT, and waits until it serves; it_upstreams_stop (or it_cleanup)
# ends it.
IT_UPSTREAMS=""
# A port for the test's own servers on 127.0.0.1 (and the three after it): from the pid, and
# below the kernel's ephemeral range (32768 and up), where the port a connection takes for itself
# could already hold it, and the server would fail to listen.
it_port() { echo $((20000 + $$ % 12000)); }

it_upstream()
{
	local -a as=()
	if [ "$1" = --as ]; then
		as=(setpriv --reuid="$2" --regid="$2" --clear-groups)
		shift 2
	fi
	local out=$1
	shift
	# Debian's: root's python3 may be a pyenv shim under /root, which another uid cannot run.
	"${as[@]}" /usr/bin/python3 "$IT_SOURCE_ROOT/tests/integration/helpers/upstream.py" "$@" \
		>"$out" 2>&1 &
	IT_UPSTREAMS="$IT_UPSTREAMS $!"
	wait_for 10 grep -q ready "$out" ||
		it_fail "the test's upstream on port $1 started" "$(head -c 2000 "$out")"
}

# Reading what helpers/upstream.py said and logged: it_conn_of STEP and it_n_of STEP, the upstream
# connection that served the /conn answer saved in $WS/STEP and the request's number on it;
# it_connection_of LOG CONN N, the Connection fields the upstream got with request N on
# connection CONN; it_requests_on LOG CONN, the methods and paths it got on connection CONN.
it_conn_of() { sed -n 's/^conn=\([0-9]*\) .*/\1/p' "$WS/$1"; }
it_n_of() { sed -n 's/^conn=[0-9]* n=\([0-9]*\) .*/\1/p' "$WS/$1"; }
it_connection_of()
{
	"$IT_PY" -c '
import json, sys
for line in open(sys.argv[1]):
    d = json.loads(line)
    if d["conn"] == int(sys.argv[2]) and d["n"] == int(sys.argv[3]):
        print([v for k, v in d["headers"] if k.lower() == "connection"])' "$@"
}
it_requests_on()
{
	"$IT_PY" -c '
import json, sys
print(" ".join(d["method"] + " " + d["path"] for d in map(json.loads, open(sys.argv[1]))
               if d["conn"] == int(sys.argv[2])))' "$@"
}

it_upstreams_stop()
{
	[ -n "$IT_UPSTREAMS" ] || return 0
	# shellcheck disable=SC2086 # a list of pids
	kill $IT_UPSTREAMS 2>/dev/null
	# shellcheck disable=SC2086
	wait $IT_UPSTREAMS 2>/dev/null
	IT_UPSTREAMS=""
}

it_cleanup()
{
	local p
	it_upstreams_stop
	for p in $(it_marked_pids); do
		kill -KILL "$p" 2>/dev/null
	done
	if [ -n "$IT_TMP" ] && [ -d "$IT_TMP" ]; then
		rm -rf --one-file-system "$IT_TMP"
	fi
	for p in ${IT_USER_CGROUPS:-}; do
		rmdir "$p" 2>/dev/null
	done
}

# it_setup: checks the prerequisites (root, the binaries), makes $IT_TMP (removed on exit) and the
# workspace $WS (with the probe at $WS/airlock-probe, i.e. /workspace/airlock-probe inside),
# and records the host state for assert_clean.
it_setup()
{
	if [ "$(id -u)" != 0 ]; then
		it_skip "needs root (the integration tests run airlock as root)"
	fi
	if [ -z "${AIRLOCK:-}" ] || [ ! -x "$AIRLOCK" ]; then
		it_log "FAIL - AIRLOCK is not set to the airlock binary (got '${AIRLOCK:-}')"
		exit 1
	fi
	if [ -z "${ITRUN:-}" ] || [ ! -x "$ITRUN" ] || [ -z "${AIRLOCK_PROBE:-}" ]; then
		it_log "FAIL - ITRUN and AIRLOCK_PROBE must name the helpers built by meson"
		exit 1
	fi
	IT_TMP=$(mktemp -d /tmp/airlock-it.XXXXXX) || exit 1
	chmod 755 "$IT_TMP"
	export AIRLOCK_IT_RUN=$IT_TMP
	trap it_cleanup EXIT
	WS=$IT_TMP/ws
	mkdir -p "$WS"
	install -m 755 "$AIRLOCK_PROBE" "$WS/airlock-probe"
	PROBE=/workspace/airlock-probe
	[ -z "${AIRLOCK_IT_USER:-}" ] || it_as_user_setup "$AIRLOCK_IT_USER"
	it_snapshot
	it_log "# $IT_NAME: airlock=$AIRLOCK marker=$IT_MARK tmp=$IT_TMP${AIRLOCK_IT_FS_MODE:+ fs=$AIRLOCK_IT_FS_MODE}"
	[ -z "${AIRLOCK_IT_FS_MODE:-}" ] || it_check_fs_mode "$AIRLOCK_IT_FS_MODE"
}

# it_as_user_setup UID: from here on "$AIRLOCK" runs as UID, with no supplementary group and
# without any capability (setpriv), the way an unprivileged user runs it: a copy of the binary in
# $IT_TMP/bin, $IT_TMP and $WS owned by UID (so that what airlock writes there, an audit file or
# the workspace's files, is the user's; the test, root, still writes anywhere), HOME in $IT_TMP,
# and cgroups delegated to UID (a folder of its own in each hierarchy of the controllers a
# policy's limits use, as systemd's Delegate=yes gives one), in which airlock starts. Made before
# the snapshot of the host's state, and removed after the check that nothing was left.
it_as_user_setup()
{
	local uid=$1 ctrl dir mnt root cg=()

	if ! command -v setpriv >/dev/null; then
		it_skip "setpriv (util-linux) is missing"
	fi
	mkdir -p "$IT_TMP/bin" "$IT_TMP/home"
	install -m 755 "$AIRLOCK" "$IT_TMP/bin/airlock"
	for ctrl in memory pids cpu blkio; do
		read -r mnt root <<<"$(it_cgroup_mount "$ctrl")"
		[ -n "$mnt" ] || read -r mnt root <<<"$(it_cgroup_mount "cpu,cpuacct")"
		[ -n "$mnt" ] || continue
		dir=$mnt/airlock-it-user-$$
		[ -d "$dir" ] || mkdir "$dir" || it_fail "delegate $dir to uid $uid"
		chown "$uid:$uid" "$dir" "$dir/cgroup.procs" "$dir/tasks" 2>/dev/null
		case " ${cg[*]} " in *" $dir "*) ;; *) cg+=("$dir") ;; esac
	done
	IT_USER_CGROUPS=${cg[*]}
	cat >"$IT_TMP/bin/airlock-as-user" <<EOF2
#!/bin/sh
for d in ${cg[*]}; do echo \$\$ >"\$d/cgroup.procs" || exit 125; done
exec setpriv --reuid=$uid --regid=$uid --clear-groups --inh-caps=-all \\
	env HOME=$IT_TMP/home "$IT_TMP/bin/airlock" "\$@"
EOF2
	chmod 755 "$IT_TMP/bin/airlock-as-user"
	chown -R "$uid:$uid" "$IT_TMP" "$IT_TMP/home"
	chown root:root "$IT_TMP/bin" "$IT_TMP/bin/airlock" "$IT_TMP/bin/airlock-as-user"
	AIRLOCK=$IT_TMP/bin/airlock-as-user
	it_log "# airlock runs as uid $uid in the delegated cgroups $IT_USER_CGROUPS"
}

# it_check_fs_mode MODE: the workspace is served as MODE (uring-passthrough, uring,
# dev-passthrough, dev) says, as its daemon reports it from inside a sandbox (FUSEFS_IOC_INFO);
# a suite run another way than it claims fails here.
it_check_fs_mode()
{
	local want got
	case $1 in
	uring-passthrough) want="uring=1 passthrough=1" ;;
	uring) want="uring=1 passthrough=0" ;;
	dev-passthrough) want="uring=0 passthrough=1" ;;
	dev) want="uring=0 passthrough=0" ;;
	*)
		it_log "FAIL - AIRLOCK_IT_FS_MODE=$1 is no mode"
		exit 1
		;;
	esac
	printf '{"workspace": {"root": "%s"}}\n' "$WS" >"$IT_TMP/fs-mode.json"
	got=$("$AIRLOCK" run -p "$IT_TMP/fs-mode.json" -- "$PROBE" fs-info "$PROBE" 2>&1) || true
	if [[ "$got" != *"$want "* ]]; then
		it_log "FAIL - the workspace is served as $1 ($want): $got"
		exit 1
	fi
}

# Whether the EXIT trap still runs it_cleanup, itself or through a function of the test's: a test
# that set a trap of its own in place of lib.sh's leaves $IT_TMP behind, which assert_clean,
# run before the end, cannot see.
it_exit_trap_cleans()
{
	local t w
	t=$(trap -p EXIT)
	case $t in *it_cleanup*) return 0 ;; esac
	for w in $t; do
		w=${w//[\'\";]/}
		case $w in '' | -*) continue ;; esac
		if declare -F "$w" >/dev/null && declare -f "$w" | grep -q it_cleanup; then
			return 0
		fi
	done
	return 1
}

it_finish()
{
	it_exit_trap_cleans ||
		it_fail "$IT_NAME's EXIT trap runs it_cleanup (else its folder stays in /tmp)" \
			"$(trap -p EXIT)"
	assert_clean "after $IT_NAME"
	it_log "# $IT_NAME: $IT_PASSED passed, $IT_FAILED failed"
	[ "$IT_FAILED" -eq 0 ]
	exit $?
}
