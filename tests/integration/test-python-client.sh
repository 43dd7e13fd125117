#!/usr/bin/env bash
# The Python client (python/, standard library only) against a real `airlock serve`: its own
# unittest suite (python/tests: exec, sessions, files and their rules, checkpoints, processes
# streamed with stdin, signals, a terminal and its size, detach and replay, typed errors, limits,
# TCP with a token), run on the package as installed: `pip install ./python` offline (its build
# backend needs nothing from an index) into a venv, else with pip --target, else the wheel the
# backend builds unpacked by hand when this Python has no pip. Then examples/provider.py, which
# uses the client, end to end. Nothing is left behind.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

SRC=$IT_SOURCE_ROOT/python
SITE=$IT_TMP/site
# What the package builds or caches lands in $IT_TMP, as do the tests' temporary folders.
export TMPDIR=$IT_TMP PYTHONDONTWRITEBYTECODE=1 PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1
export PIP_NO_CACHE_DIR=1
cp -r "$SRC" "$IT_TMP/src"

PY=$IT_PY
if "$IT_PY" -m venv "$IT_TMP/venv" >"$IT_TMP/venv.log" 2>&1 &&
	"$IT_TMP/venv/bin/python" -m pip --version >/dev/null 2>&1; then
	how="pip install into a venv"
	"$IT_TMP/venv/bin/python" -m pip install "$IT_TMP/src" >"$IT_TMP/pip.log" 2>&1
	st=$?
	PY=$IT_TMP/venv/bin/python
	PYPATH=
elif "$IT_PY" -m pip --version >/dev/null 2>&1; then
	how="pip install --target"
	"$IT_PY" -m pip install --target "$SITE" "$IT_TMP/src" >"$IT_TMP/pip.log" 2>&1
	st=$?
	PYPATH=$SITE
else
	how="the backend's wheel, unpacked (no pip here)"
	mkdir -p "$IT_TMP/wheel" "$SITE"
	"$IT_PY" -c 'import sys; sys.path.insert(0, sys.argv[1]); import _build_backend as b
print(b.build_wheel(sys.argv[2]))' "$IT_TMP/src" "$IT_TMP/wheel" >"$IT_TMP/pip.log" 2>&1 &&
		"$IT_PY" -m zipfile -e "$IT_TMP/wheel"/*.whl "$SITE" >>"$IT_TMP/pip.log" 2>&1
	st=$?
	PYPATH=$SITE
fi
if [ "$st" = 0 ]; then
	it_pass "the package installs offline ($how)"
else
	it_fail "the package installs offline ($how)" "$(tail -n 20 "$IT_TMP/pip.log")"
fi
where=$(cd "$IT_TMP" && PYTHONPATH=$PYPATH "$PY" -c 'import airlock; print(airlock.__file__)' 2>&1)
assert_match "^$IT_TMP/(venv|site)/" "$where" "the tests import the installed copy"

# -t: the tests' folder is the top, so that `airlock` is the installed one, not ../airlock.
cd "$IT_TMP/src/tests" || exit 1
if PYTHONPATH=$PYPATH AIRLOCK=$AIRLOCK "$ITRUN" -t 600 -- "$PY" -m unittest discover \
	-s "$IT_TMP/src/tests" -t "$IT_TMP/src/tests" -v >"$IT_TMP/unittest.log" 2>&1; then
	it_pass "python/tests: $(grep -E '^Ran [0-9]+ tests' "$IT_TMP/unittest.log")"
else
	it_fail "python/tests" "$(grep -E '^(FAIL|ERROR):|Error|^Ran|^FAILED' "$IT_TMP/unittest.log" | head -n 40)"
fi
assert_not_contains "$(cat "$IT_TMP/unittest.log")" "skipped" "no test was skipped"
cd / || exit 1

# examples/provider.py: the tools of an agent (run code, a session's files, a streamed command)
# through the client, against a serve of its own.
PYTHONPATH=$PYPATH AIRLOCK=$AIRLOCK "$ITRUN" -t 120 -- "$PY" \
	"$IT_SOURCE_ROOT/examples/provider.py" --demo >"$IT_TMP/demo.out" 2>"$IT_TMP/demo.err"
assert_eq 0 "$?" "provider.py --demo runs: $(tail -n 3 "$IT_TMP/demo.err")"
assert_contains "$(cat "$IT_TMP/demo.out")" "run_code: 42" "provider: code runs"
assert_contains "$(cat "$IT_TMP/demo.out")" "streamed: tick 3" "provider: a command's output streams"

it_finish
