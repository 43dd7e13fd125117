#!/usr/bin/env bash
# `airlock run` exits with the command's status; 128+N when it died of signal N; 127 when the
# command is not found; 126 when it is not executable; 125 when airlock refuses (bad policy),
# with exactly one "airlock: ..." line naming the JSON path.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

sb_run -- /bin/true
assert_eq 0 "$AL_RC" "true exits 0"
sb_run -- /bin/false
assert_eq 1 "$AL_RC" "false exits 1"
sb_sh 'exit 3'
assert_eq 3 "$AL_RC" "exit 3 exits 3"
sb_sh 'exit 200'
assert_eq 200 "$AL_RC" "exit 200 exits 200"
sb_sh 'kill -9 $$'
assert_eq 137 "$AL_RC" "a command killed by SIGKILL exits 128+9"
sb_sh 'kill -TERM $$'
assert_eq 143 "$AL_RC" "a command killed by SIGTERM exits 128+15"
sb_sh 'kill -SEGV $$'
assert_eq 139 "$AL_RC" "a command killed by SIGSEGV exits 128+11"

sb_run -- /nonexistent/airlock-it-command
assert_eq 127 "$AL_RC" "a missing absolute command exits 127"
assert_ne "" "$AL_ERR" "a missing command is reported on stderr"
sb_run -- airlock-it-no-such-command
assert_eq 127 "$AL_RC" "a command not on PATH exits 127"
printf '#!/bin/sh\necho should-not-run\n' >"$WS/not-executable.sh"
chmod 644 "$WS/not-executable.sh"
sb_run -- /workspace/not-executable.sh
assert_eq 126 "$AL_RC" "a file without the x bit exits 126"
assert_not_contains "$AL_OUT" should-not-run "the non-executable file did not run"
sb_run -- /workspace
assert_eq 126 "$AL_RC" "a directory as the command exits 126"

policy=$IT_TMP/bad.json
write_policy "$policy" <<EOF2
{"workspace": {"root": "$WS"}, "resources": {"memory": "lots"}}
EOF2
al_run run -p "$policy" -- /bin/sh -c 'touch /workspace/ran' "$IT_MARK"
assert_eq 125 "$AL_RC" "a bad policy exits 125"
assert_one_error_line "$AL_ERR" "a bad policy gives one airlock: line"
assert_contains "$AL_ERR" "resources.memory" "the message names the JSON path resources.memory"
assert_false "the command of a refused run did not run" test -e "$WS/ran"

al_run run -p "$IT_TMP/no-such-policy.json" -- /bin/true
assert_eq 125 "$AL_RC" "a missing policy file exits 125"
assert_one_error_line "$AL_ERR" "a missing policy file gives one airlock: line"

sb_run -m lots -- /bin/true
assert_eq 125 "$AL_RC" "a bad --memory exits 125"
assert_one_error_line "$AL_ERR" "a bad --memory gives one airlock: line"
sb_run -s nonsense -- /bin/true
assert_eq 125 "$AL_RC" "a bad --seccomp exits 125"
assert_one_error_line "$AL_ERR" "a bad --seccomp gives one airlock: line"
al_run run -w "$IT_TMP/no-such-workspace" -- /bin/true
assert_eq 125 "$AL_RC" "a missing workspace folder exits 125"
assert_one_error_line "$AL_ERR" "a missing workspace folder gives one airlock: line"

it_finish
