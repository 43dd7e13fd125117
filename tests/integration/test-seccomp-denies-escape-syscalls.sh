#!/usr/bin/env bash
# The restricted seccomp level (the default) refuses what a sandbox needs to break out or attack
# the kernel: mount, unshare, ptrace, keyctl, bpf (each reported as a violation in --json),
# io_uring and AF_VSOCK sockets, writing to pid 1's executable or memory, writing to airlock's
# binary. The strict level (an allow list) still runs a shell, python3 and coreutils.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

res=$IT_TMP/al.out
# probe_json PROBE ARG [RUN OPTIONS...] (ARG may be ""): runs the probe with --json; sets P_OUT, P_RC.
probe_json()
{
	local probe=$1 arg=$2
	shift 2
	sb_run --json "$@" -- "$PROBE" "$probe" ${arg:+"$arg"}
	P_RC=$(json_get "$res" 'd["exit_code"]')
	P_OUT=$(json_get "$res" 'd["stdout"].strip()')
}

# violations: "kind:detail" of each reported violation
violations()
{
	json_get "$res" '" ".join(sorted("%s:%s" % (v["kind"], v["detail"]) for v in d["violations"]))'
}

for pair in mount:mount unshare-user:unshare ptrace-init:ptrace keyctl:keyctl bpf:bpf; do
	probe=${pair%%:*}
	syscall=${pair#*:}
	probe_json "$probe" ""
	assert_eq 0 "$P_RC" "$probe: the probe reports the call as blocked"
	assert_eq "$probe: blocked (EPERM)" "$P_OUT" "$syscall() fails with EPERM"
	assert_contains " $(violations) " " seccomp:$syscall " \
		"$syscall() is listed in the --json violations"
done

probe_json io-uring ""
assert_eq 0 "$P_RC" "io_uring_setup() fails"
assert_match '^io-uring: blocked \(E[A-Z]+\)$' "$P_OUT" "io_uring_setup() is refused"
probe_json vsock ""
assert_eq "vsock: blocked (EAFNOSUPPORT)" "$P_OUT" "socket(AF_VSOCK) fails with EAFNOSUPPORT"
for probe in write-init-exe write-init-mem; do
	probe_json "$probe" ""
	assert_eq 0 "$P_RC" "$probe: pid 1 cannot be written to ($P_OUT)"
done
# airlock's own binary, at its host path and through /proc/1/exe: not writable if visible.
probe_json write-file "$AIRLOCK"
assert_eq 0 "$P_RC" "airlock's binary at $AIRLOCK is not writable from the sandbox ($P_OUT)"

# The same from a shell, as an agent would try it.
sb_sh 'unshare -U true 2>&1 && echo LEAK-unshare; mount -t tmpfs x /tmp 2>&1 && echo LEAK-mount; echo end'
assert_not_contains "$AL_OUT" LEAK "unshare -U and mount -t tmpfs fail from a shell"
assert_contains "$AL_OUT" "unshare failed: Operation not permitted" "unshare -U reports EPERM"
assert_contains "$AL_OUT" "permission denied" "mount -t tmpfs reports EPERM"
assert_contains "$AL_OUT" end "the shell goes on after the refused calls"

# A plain command is no violation.
sb_run --json -- /bin/sh -c 'ls / > /dev/null; echo hi | tr a-z A-Z; cat /etc/passwd > /dev/null' "$IT_MARK"
assert_eq "HI" "$(json_get "$res" 'd["stdout"].strip()')" "a plain pipeline runs under restricted"
assert_eq "[]" "$(json_get "$res" 'd["violations"]')" "a plain pipeline causes no violation"

# strict: an allow list, but the everyday tools work.
echo data-in-workspace >"$WS/data.txt"
sb_run -s strict -- /bin/sh -c '
	echo "a b c" | tr a-z A-Z
	printf "3\n1\n2\n" | sort | head -n 1
	wc -l < /workspace/data.txt
	ls /workspace | grep -c data.txt
	sed s/data/DATA/ /workspace/data.txt
	cp /workspace/data.txt /tmp/copy && cat /tmp/copy
	date +%Y > /dev/null && echo date-ok
	python3 -c "import json, os, subprocess; print(json.dumps({\"n\": 6 * 7}))"
	python3 -c "import subprocess; print(subprocess.run([\"echo\", \"sub\"], capture_output=True, text=True).stdout.strip())"
' "$IT_MARK"
assert_eq 0 "$AL_RC" "strict: the shell script exits 0"
assert_eq "A B C
1
1
1
DATA-in-workspace
data-in-workspace
date-ok
{\"n\": 42}
sub" "$AL_OUT" "strict: sh, coreutils, sed, python3 and subprocess all work"
probe_json mount "" -s strict
assert_eq "mount: blocked (EPERM)" "$P_OUT" "strict: mount() fails with EPERM"
sb_run -s baseline -- /bin/sh -c 'echo baseline-ok' "$IT_MARK"
assert_eq baseline-ok "$AL_OUT" "baseline: a shell runs"

it_finish
