#!/usr/bin/env bash
# `airlock --help` lists every subcommand, each of which explains itself with --help (exit 0, a
# usage on stdout); an unknown command or option gets one error line and a non-zero exit.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

al_run --help
assert_eq 0 "$AL_RC" "airlock --help exits 0"
help=$AL_OUT
listed=$(sed -n '/^Commands/,/^$/s/^  \([a-z][a-z-]*\).*/\1/p' <<<"$help" | tr '\n' ' ')
for verb in run exec session capabilities fs secret broker policy doctor version help; do
	assert_contains " $listed" " $verb " "airlock --help lists $verb"
done
for verb in $listed; do
	al_run "$verb" --help
	assert_eq 0 "$AL_RC" "airlock $verb --help exits 0"
	assert_ne "" "$AL_OUT" "airlock $verb --help prints its usage"
done

al_run no-such-command
assert_ne 0 "$AL_RC" "an unknown command fails"
assert_one_error_line "$AL_ERR" "an unknown command gets one error line"
assert_contains "$AL_ERR" "no-such-command" "the error names the unknown command"
al_run --no-such-option
assert_ne 0 "$AL_RC" "an unknown option fails"
al_run
assert_ne 0 "$AL_RC" "no command at all fails"
assert_contains "$AL_ERR" "Usage: airlock" "no command at all prints the usage on stderr"

it_finish
