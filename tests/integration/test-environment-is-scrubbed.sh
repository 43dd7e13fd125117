#!/usr/bin/env bash
# The sandbox's environment is the policy's env plus PATH, HOME, LANG and TERM, whatever airlock
# itself was started with: entries without '=', LD_PRELOAD, a 100 KB value and secrets stay out.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

policy=$IT_TMP/policy.json
write_policy "$policy" <<EOF2
{"workspace": {"root": "$WS"}, "env": {"IT_POLICY_VAR": "from-policy"}}
EOF2

big=$(head -c 102400 /dev/zero | tr '\0' x)
envfile=$IT_TMP/hostile.env
printf '%s\0' \
	NO_EQUALS_SIGN \
	"=starts-with-equals" \
	"LD_PRELOAD=/nonexistent-airlock-it.so" \
	"LD_LIBRARY_PATH=/nonexistent-airlock-it" \
	"BIG=$big" \
	"SECRET=xyz" \
	"AWS_SECRET_ACCESS_KEY=also-secret" \
	"BASH_ENV=/nonexistent-airlock-it.sh" \
	"PATH=/nonexistent-airlock-it-bin:/usr/bin:/bin" \
	"HOME=/root" \
	"TERM=xterm-airlock-it" \
	"LANG=C.UTF-8" >"$envfile"

# `env` itself is the command: no shell adds PWD or SHLVL.
"$ITRUN" -t "$IT_WATCHDOG" -E "$envfile" -- "$AIRLOCK" run -p "$policy" -e IT_CLI_VAR=from-cli \
	-- env >"$IT_TMP/env.out" 2>"$IT_TMP/env.err"
rc=$?
AL_ERR=$(cat "$IT_TMP/env.err")
assert_eq 0 "$rc" "airlock runs with a hostile environment"
sandbox_env=$(cat "$IT_TMP/env.out")
names=$(sed -n 's/^\([^=]*\)=.*/\1/p' <<<"$sandbox_env" | sort | tr '\n' ' ')
allowed=" IT_POLICY_VAR IT_CLI_VAR PATH HOME LANG TERM "
extra=""
for n in $names; do
	[[ $allowed == *" $n "* ]] || extra="$extra $n"
done
assert_eq "" "$extra" "the sandbox sees only policy env + PATH HOME LANG TERM (all: $names)"
assert_eq "$(grep -c '=' <<<"$sandbox_env")" "$(grep -c '' <<<"$sandbox_env")" \
	"every entry of the sandbox's environment has a '='"
assert_contains "$sandbox_env" "IT_POLICY_VAR=from-policy" "the policy's env is set"
assert_contains "$sandbox_env" "IT_CLI_VAR=from-cli" "--env is set"
assert_contains "$sandbox_env" "HOME=/tmp" "HOME is /tmp"
assert_match '(^|'$'\n'')PATH=/' "$sandbox_env" "PATH is set"
for leak in NO_EQUALS_SIGN starts-with-equals LD_PRELOAD LD_LIBRARY_PATH BIG= SECRET xyz \
	AWS_SECRET_ACCESS_KEY BASH_ENV nonexistent-airlock-it; do
	assert_not_contains "$sandbox_env" "$leak" "$leak does not reach the sandbox"
done

# Nothing at all: airlock needs no PATH or HOME of its own.
printf 'SECRET=xyz\0' >"$envfile"
"$ITRUN" -t "$IT_WATCHDOG" -E "$envfile" -- "$AIRLOCK" run -w "$WS" -- \
	/bin/sh -c 'echo "PATH=$PATH"; env | grep -c SECRET || true' "$IT_MARK" \
	>"$IT_TMP/env.out" 2>"$IT_TMP/env.err"
rc=$?
AL_ERR=$(cat "$IT_TMP/env.err")
assert_eq 0 "$rc" "airlock runs with nothing but SECRET in its environment"
assert_match '^PATH=/' "$(head -n 1 "$IT_TMP/env.out")" "the sandbox gets a PATH even when airlock has none"
assert_eq 0 "$(sed -n 2p "$IT_TMP/env.out")" "SECRET does not reach the sandbox"

it_finish
