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
{"workspace": {"root": "$WS"}, "executables": ["/bin/sh", "/usr/bin/touch"]}
EOF2

al_run run -p "$policy" -- /bin/sh -c 'echo listed-shell-runs; touch /workspace/touched; /usr/bin/id -u; echo "id=$?"'
assert_eq 0 "$AL_RC" "a listed shell runs"
assert_contains "$AL_OUT" "listed-shell-runs" "the listed shell printed"
assert_eq yes "$([ -e "$WS/touched" ] && echo yes || echo no)" "a listed program runs from the shell"
assert_contains "$AL_OUT" "id=126" "an unlisted program cannot be executed from the listed shell"

al_run run -p "$policy" -- /usr/bin/id
assert_eq 126 "$AL_RC" "an unlisted command is refused with 126"
assert_contains "$AL_ERR" "cannot execute" "airlock says the command cannot be executed"

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
