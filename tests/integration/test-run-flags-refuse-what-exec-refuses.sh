#!/usr/bin/env bash
# airlock run's flags refuse what exec's requests refuse, or say why not: AIRLOCK_* variables are
# airlock's own (-e AIRLOCK_X=1 is refused with one line naming the flag); a timeout is bounded
# (exec: a day; run, the operator's: 366 days, far from any overflow), and one that overflows the
# microsecond counter is refused as too long. Nothing runs when refused.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

for v in AIRLOCK_X=1 AIRLOCK_RESULT=/etc/passwd AIRLOCK_BROKER=/tmp/x; do
	rm -f "$WS/ran"
	sb_run -e "$v" -- /bin/sh -c 'touch /workspace/ran'
	assert_eq 125 "$AL_RC" "run -e $v is refused"
	assert_one_error_line "$AL_ERR" "... with one error line"
	assert_contains "$AL_ERR" "--env" "... naming the flag"
	assert_contains "$AL_ERR" "${v%%=*}" "... and the variable"
	assert_false "... and nothing ran" test -e "$WS/ran"
done
sb_run -e AIRLOCKED=1 -e MY_AIRLOCK_X=2 -- /bin/sh -c 'echo "$AIRLOCKED $MY_AIRLOCK_X"'
assert_eq "0 1 2" "$AL_RC $AL_OUT" "run -e of other names is fine"
# airlock's own variables on the host still work: the broker's socket named by $AIRLOCK_BROKER
AIRLOCK_BROKER=$IT_TMP/no-broker.sock sb_run -- /bin/sh -c 'env | grep -c ^AIRLOCK_ || true'
assert_eq "0 0" "$AL_RC $AL_OUT" "airlock's host-side variables are not passed into the sandbox"

for t in 99999999h 367d 8785h; do
	sb_run -T "$t" -- /bin/true
	assert_eq 125 "$AL_RC" "run -T $t (more than 366 days) is refused"
	assert_one_error_line "$AL_ERR" "... with one error line"
	assert_contains "$AL_ERR" "--timeout" "... naming the flag"
done
sb_run -T 99999999999999999999h -- /bin/true
assert_eq 125 "$AL_RC" "run -T past the microsecond counter is refused"
assert_contains "$AL_ERR" "too long" "... as too long"
# The same bound for a policy file's timeout (a deadline or the broker's TTL must not overflow).
write_policy "$IT_TMP/long.json" <<'EOF2'
{"resources": {"timeout": "400d"}}
EOF2
al_run policy check "$IT_TMP/long.json"
assert_ne 0 "$AL_RC" "a policy's timeout of 400 days is refused"
assert_contains "$AL_ERR" "resources.timeout" "... naming the field"
for t in 366d 7d 1h30m; do
	sb_run -T "$t" -- /bin/echo ok
	assert_eq "0 ok" "$AL_RC $AL_OUT" "run -T $t is accepted (a week-long agent run)"
done

# A session's commands are held to the same rules, from the command line and from requests.
al_run session start --owner 0 -w "$WS"
sid=$AL_OUT
assert_eq 0 "$AL_RC" "a session starts"
for var in LD_PRELOAD=/workspace/x.so MALLOC_CHECK_=3 AIRLOCK_RESULT=/x; do
	al_run session exec "$sid" -e "$var" -- /bin/true
	assert_eq 125 "$AL_RC" "session exec -e $var is refused"
	assert_one_error_line "$AL_ERR" "... with one error line"
done
al_run session exec "$sid" -e GREETING=hi -- /bin/sh -c 'echo $GREETING'
assert_eq "0 hi" "$AL_RC $AL_OUT" "session exec -e sets an ordinary variable"
printf '{"language": "shell", "code": "echo ran", "timeout": 10, "env": {"LD_PRELOAD": "/workspace/x.so"}}' \
	>"$IT_TMP/preload.json"
al_run session exec "$sid" --request "$IT_TMP/preload.json"
assert_contains "$AL_OUT" '"kind":"invalid_request"' "a session request setting LD_PRELOAD is refused"
assert_not_contains "$AL_OUT" "ran" "... and runs nothing"
al_run session stop "$sid"

it_finish
