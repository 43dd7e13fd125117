#!/usr/bin/env bash
# A policy's `executables` is an allow list enforced by landlock: listed programs run, anything
# else cannot be executed (126), also from inside a listed shell. When landlock cannot be used
# (here: airlock started under a filter that answers landlock_create_ruleset with ENOSYS, as a
# kernel without landlock or a container's profile does) such a policy is refused before
# anything runs, while a policy without an allow list still runs.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

policy=$IT_TMP/exec.json
write_policy "$policy" <<EOF2
{"workspace": {"root": "$WS"}, "executables": ["/bin/sh", "/usr/bin/touch", "/usr/bin/cp"]}
EOF2

al_run run -p "$policy" -- /bin/sh -c 'echo listed-shell-runs; touch /workspace/touched; /usr/bin/id -u; echo "id=$?"'
assert_eq 0 "$AL_RC" "a listed shell runs"
assert_contains "$AL_OUT" "listed-shell-runs" "the listed shell printed"
assert_eq yes "$([ -e "$WS/touched" ] && echo yes || echo no)" "a listed program runs from the shell"
assert_contains "$AL_OUT" "id=126" "an unlisted program cannot be executed from the listed shell"

al_run run -p "$policy" -- /usr/bin/id
assert_eq 126 "$AL_RC" "an unlisted command is refused with 126"
assert_contains "$AL_ERR" "cannot execute" "airlock says the command cannot be executed"

# landlock checks execve() only; the ELF interpreter can still map a program. So with an allow
# list nothing the sandbox can write is executable: a program copied to /tmp or the workspace
# cannot be loaded through ld.so either.
ldso=$(readlink -f /lib64/ld-linux-x86-64.so.2)
al_run run -p "$policy" -- /bin/sh -c "
	cp /usr/bin/id /tmp/u && { $ldso /tmp/u >/dev/null 2>&1 && echo tmp=ran || echo tmp=refused; }
	cp /usr/bin/id /workspace/u && { $ldso /workspace/u >/dev/null 2>&1 && echo ws=ran || echo ws=refused; }"
assert_contains "$AL_OUT" "tmp=refused" "a program written to /tmp cannot be run through ld.so"
assert_contains "$AL_OUT" "ws=refused" "a program written to the workspace cannot be run through ld.so"

# The same policy on a "kernel" without landlock: refused, nothing runs.
rm -f "$WS/touched"
al_run run -p "$policy" -- /usr/bin/touch /workspace/touched
AL_RC_DIRECT=$AL_RC
"$DENY_SYSCALL" landlock_create_ruleset -- "$AIRLOCK" run -p "$policy" -- /usr/bin/touch /workspace/touched-nolandlock \
	>"$IT_TMP/nl.out" 2>"$IT_TMP/nl.err"
rc=$?
assert_eq 0 "$AL_RC_DIRECT" "with landlock the listed command runs"
assert_eq 125 "$rc" "without landlock an allow list is refused (125)"
assert_match "^airlock: executables: cannot be enforced" "$(cat "$IT_TMP/nl.err")" \
	"the refusal names executables"
assert_eq 1 "$(wc -l <"$IT_TMP/nl.err")" "the refusal is one line"
assert_eq no "$([ -e "$WS/touched-nolandlock" ] && echo yes || echo no)" \
	"nothing ran when the allow list could not be enforced"

"$DENY_SYSCALL" landlock_create_ruleset -- "$AIRLOCK" run -w "$WS" -- /bin/sh -c 'echo no-allow-list' \
	>"$IT_TMP/nl.out" 2>"$IT_TMP/nl.err"
assert_eq 0 "$?" "without an allow list, no landlock is needed"

it_finish
