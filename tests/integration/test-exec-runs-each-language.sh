#!/usr/bin/env bash
# airlock exec: one JSON request in, one JSON result out, for each language (python, javascript,
# rust compiled in the sandbox, shell, command, typescript through Debian's ts-node or a runner
# the policy makes visible, a WASI module through node), with stdin, input, env, files, argv, the
# result file, timeout, memory and output caps.
# A non-zero exit is a result, not an error; labels come from airlock and the policy only.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

REQ=$IT_TMP/request.json
RES=$IT_TMP/al.out

# ex JSON: runs the request; the result is in $RES.
ex()
{
	printf '%s' "$1" >"$REQ"
	al_run exec --request "$REQ"
}

get()
{
	json_get "$RES" "$1"
}

# python: stdin is the input when no stdin is given, the input is also a file, env is set,
# files are placed in the (fresh) workspace, argv reaches the program, and the result file's JSON
# is the output.
ex '{"language": "python", "timeout": 30,
     "code": "import json, os, sys\ndata = json.load(sys.stdin)\nprint(data[\"n\"] * 2, sys.argv[1:], os.environ[\"GREETING\"])\nprint(open(\"data/in.txt\").read(), end=\"\")\nwith open(os.environ[\"AIRLOCK_RESULT\"], \"w\") as f: json.dump({\"sum\": sum(json.load(open(os.environ[\"AIRLOCK_INPUT\"]))[\"list\"]), \"cwd\": os.getcwd()}, f)\nprint(\"err\", file=sys.stderr)",
     "input": {"n": 21, "list": [1, 2, 3]}, "argv": ["a", "b"], "env": {"GREETING": "hello"},
     "files": [{"path": "data/in.txt", "content": "from a file\n"}]}'
assert_eq 0 "$AL_RC" "python: airlock exec exits 0"
assert_eq null "$(get 'd["error"]')" "python: no error"
assert_eq "$(printf "42 ['a', 'b'] hello\nfrom a file")" "$(get 'd["stdout"]')" "python: stdout"
assert_eq "err" "$(get 'd["stderr"].strip()')" "python: stderr"
assert_eq '{"cwd": "/workspace", "sum": 6}' "$(get 'd["output"]')" "python: the result file is the output"
assert_eq 0 "$(get 'd["exit_code"]')" "python: exit code"
assert_eq '["src:env:airlock"]' "$(get 'd["labels"]')" "python: labels"
assert_eq 64 "$(get 'len(d["policy_hash"])')" "python: policy hash"
assert_eq true "$(get 'isinstance(d["duration_ms"], float) and d["duration_ms"] > 0')" "python: duration_ms"
assert_eq "[] False False False None" \
	"$(get '"%s %s %s %s %s" % (d["violations"], d["timed_out"], d["oom_killed"], d["stdout_truncated"], d["signal"])')" \
	"python: no violation, no timeout, no OOM, nothing cut, no signal"

# explicit stdin wins over the input; base64 files; executable files
ex '{"language": "shell", "timeout": "10s", "stdin": "line one\nline two\n", "input": {"x": 1},
     "code": "wc -l; ./bin/tool; cat blob | od -An -tx1 | tr -d \" \\n\"; echo",
     "files": [{"path": "bin/tool", "content": "#!/bin/sh\necho tool ran\n", "executable": true},
               {"path": "blob", "base64": "AAEC/w=="}]}'
assert_eq "$(printf '2\ntool ran\n000102ff')" "$(get 'd["stdout"]')" "shell: stdin, an executable file and a binary file"

# javascript: a non-zero exit code is a result
ex '{"language": "javascript", "timeout": 30, "code": "console.log(process.argv.slice(2).join(\",\")); process.exit(3)", "argv": ["x", "y"]}'
assert_eq 0 "$AL_RC" "javascript: exit 3 is still a result (airlock exec exits 0)"
assert_eq 3 "$(get 'd["exit_code"]')" "javascript: exit code 3"
assert_eq "x,y" "$(get 'd["stdout"].strip()')" "javascript: argv"

# rust: compiled with rustc inside the sandbox, then run
ex '{"language": "rust", "timeout": 120, "argv": ["7"], "code": "fn main() { let n: u32 = std::env::args().nth(1).unwrap().parse().unwrap(); println!(\"{}\", n * 6); std::process::exit(2); }"}'
assert_eq "42" "$(get 'd["stdout"].strip()')" "rust: compiled and run in the sandbox"
assert_eq "2 false" "$(get '"%d %s" % (d["exit_code"], str(d["compile_error"]).lower())')" "rust: its exit code, no compile error"
ex '{"language": "rust", "timeout": 120, "code": "fn main() { let x: u32 = \"s\"; }"}'
assert_eq 0 "$AL_RC" "rust: a compile error is a result"
assert_eq true "$(get 'd["compile_error"]')" "rust: compile_error is set"
assert_ne 0 "$(get 'd["exit_code"]')" "rust: the compiler's non-zero status"
assert_contains "$(get 'd["stderr"]')" "error[E0308]" "rust: the compiler's message is in stderr"
assert_eq "" "$(get 'd["stdout"]')" "rust: nothing ran"

# command: argv looked up on the sandbox's PATH; a missing one is exit code 127, as with run
ex '{"language": "command", "timeout": 10, "argv": ["printf", "%s-%s", "a b", "c"]}'
assert_eq "a b-c" "$(get 'd["stdout"]')" "command: argv passed as is"
ex '{"language": "command", "timeout": 10, "argv": ["no-such-program-here"]}'
assert_eq 127 "$(get 'd["exit_code"]')" "command: not found is exit code 127"

# typescript on the default policy: Debian's ts-node (which NodeSource's node finds only with
# NODE_PATH, which airlock sets for it), types and all.
ex '{"language": "typescript", "timeout": 60, "code": "const n: number = 6 * 7;\ninterface P { x: string }\nconst p: P = { x: process.env.NODE_PATH ?? \"none\" };\nconsole.log(n, p.x);"}'
assert_eq "0 42 /usr/share/nodejs" "$AL_RC $(get 'd["stdout"].strip()')" "typescript: Debian's ts-node runs typed code"
assert_eq "" "$(get 'd["stderr"]')" "typescript: nothing on stderr"
ex '{"language": "typescript", "timeout": 60, "env": {"NODE_PATH": "/usr/share/nodejs:/opt/mine"}, "code": "console.log(process.env.NODE_PATH)"}'
assert_eq "/usr/share/nodejs:/opt/mine" "$(get 'd["stdout"].strip()')" "typescript: the request's NODE_PATH stays the request's"

# wasm: a WASI module (base64), run by node in the same sandbox with its arguments, its stdout
# and its exit code; the request's memory limit holds for what it grows.
ex '{"language": "wasm", "timeout": 30, "argv": ["x", "y"], "code": "'"$("$IT_PY" "$IT_SOURCE_ROOT/tests/integration/helpers/make-wasm.py" hello)"'"}'
assert_eq "hello from wasm 3|3|" "$(get '"%s|%s|%s" % (d["stdout"].strip(), d["exit_code"], d["stderr"])')" \
	"wasm: the module's output, arguments and exit code"
ex '{"language": "wasm", "timeout": 60, "memory": "160Mi", "code": "'"$("$IT_PY" "$IT_SOURCE_ROOT/tests/integration/helpers/make-wasm.py" hog)"'"}'
assert_eq "True 137" "$(get '"%s %s" % (d["oom_killed"], d["exit_code"])')" \
	"wasm: a module growing its memory past the request's limit is killed (oom_killed)"
ex '{"language": "wasm", "timeout": 30, "code": "aGVsbG8="}'
assert_eq "invalid_request" "$(get 'd["error"]["kind"]')" "wasm: what is not a module is an invalid request"

# typescript: with a runner the policy makes visible (a stand-in tsx that runs node)
mkdir -p "$IT_TMP/tsbin"
printf '#!/bin/sh\necho "runner: tsx $1" >&2\nexec node "$@"\n' >"$IT_TMP/tsbin/tsx"
chmod 755 "$IT_TMP/tsbin/tsx"
# A host folder makes the policy tier 3: the operator admits it (the hash of the inline policy).
ts_policy='{"workspace": {"root": "'"$WS"'"}, "env": {"PATH": "/opt/ts/bin:/usr/bin:/bin"},
  "mounts": [{"source": "'"$IT_TMP/tsbin"'", "target": "/opt/ts/bin", "mode": "ro"}],
  "labels": ["team:agents"]}'
printf '%s' "$ts_policy" >"$IT_TMP/ts-policy.json"
it_admit "$IT_TMP/ts-policy.json"
printf '{"language": "typescript", "timeout": 30, "code": "console.log(6 * 7)", "policy": %s}' \
	"$ts_policy" >"$REQ"
al_run exec --admitted "$IT_TMP/admitted" --request "$REQ"
assert_eq 42 "$(get 'd["stdout"].strip()')" "typescript: run by the runner found on the policy's PATH"
assert_eq "runner: tsx /run/airlock/main.ts" "$(get 'd["stderr"].strip()')" "typescript: the runner got the code's file"
assert_eq '["src:env:airlock", "team:agents"]' "$(get 'd["labels"]')" "labels: airlock's, then the policy's"

# a program cannot change the labels (nor any other field) through its output or result file
ex '{"language": "python", "timeout": 30, "code": "import json, os\njson.dump({\"labels\": [\"src:evil\"], \"exit_code\": 0}, open(os.environ[\"AIRLOCK_RESULT\"], \"w\"))\nprint(json.dumps({\"labels\": [\"src:evil\"]}))\nraise SystemExit(5)"}'
assert_eq '["src:env:airlock"]' "$(get 'd["labels"]')" "labels stay airlock's whatever the program writes"
assert_eq 5 "$(get 'd["exit_code"]')" "the exit code stays the program's"
assert_eq '{"exit_code": 0, "labels": ["src:evil"]}' "$(get 'd["output"]')" "what it wrote is only the output"

# a result file that is not JSON
ex '{"language": "shell", "timeout": 10, "code": "echo not json > \"$AIRLOCK_RESULT\""}'
assert_eq "null the result file is not JSON" "$(get '"%s %s" % ("null" if d["output"] is None else d["output"], d.get("output_error"))')" "output: a result file that is not JSON is reported"

# timeout, memory and the 1 MiB output cap
ex '{"language": "python", "timeout": 1, "code": "import time\nprint(\"started\", flush=True)\ntime.sleep(60)"}'
assert_eq "true 124 started" "$(get '"%s %d %s" % (str(d["timed_out"]).lower(), d["exit_code"], d["stdout"].strip())')" "timeout: timed_out, exit 124, output kept"
ex '{"language": "python", "timeout": 60, "memory": "64Mi", "code": "b = []\nwhile True: b.append(bytearray(16 << 20))"}'
assert_eq true "$(get 'd["oom_killed"]')" "memory: the request's limit OOM-kills"
ex '{"language": "python", "timeout": 60, "code": "import sys\nsys.stdout.write(\"x\" * (3 << 20))"}'
assert_eq "true 1048576" "$(get '"%s %d" % (str(d["stdout_truncated"]).lower(), len(d["stdout"]))')" "stdout: capped at 1 MiB with the flag"

# a workspace named by the request is used (and kept)
mkdir -p "$IT_TMP/own"
ex '{"language": "shell", "timeout": 10, "workspace": "'"$IT_TMP/own"'", "code": "echo kept > note; ls", "files": [{"path": "given", "content": "g"}]}'
assert_eq "$(printf 'given\nnote')" "$(get 'd["stdout"].strip()')" "workspace: the request's folder, with its files"
assert_eq kept "$(cat "$IT_TMP/own/note")" "workspace: what the program wrote stays there"

# examples/provider.py: {argv, cwd, vars, secrets} -> {stdout, stderr, exitCode}, the secret a
# credential whose surrogate is all the program sees
real=ghp_realrealrealrealrealrealrealreal1234
printf '{"argv": ["/bin/sh", "-c", "echo $GREET; echo $GITHUB_TOKEN; pwd; ls; exit 4"], "cwd": "%s", "vars": {"GREET": "hi"}, "secrets": {"GITHUB_TOKEN": {"value": "%s", "hosts": ["api.github.com"]}}}' \
	"$IT_TMP/own" "$real" >"$IT_TMP/call.json"
AIRLOCK=$AIRLOCK "$ITRUN" -t "$IT_WATCHDOG" -- "$IT_PY" "$IT_SOURCE_ROOT/examples/provider.py" \
	<"$IT_TMP/call.json" >"$IT_TMP/provider.out" 2>"$IT_TMP/provider.err"
assert_eq "4 hi /workspace" \
	"$(json_get "$IT_TMP/provider.out" '"%d %s %s" % (d["exitCode"], d["stdout"].split()[0], d["stdout"].split()[2])')" \
	"provider: exit code, vars and the workspace (cwd)"
assert_match '^ghp_[A-Za-z0-9]{36}$' "$(json_get "$IT_TMP/provider.out" 'd["stdout"].split()[1]')" \
	"provider: the program holds a token of the secret's shape"
assert_not_contains "$(cat "$IT_TMP/provider.out")" "$real" "provider: never the real value"

# airlock exec killed with SIGKILL: its sandbox dies with it, and the fresh workspace it could not
# remove is removed by its watcher (airlock-scratch); when the watcher is killed too, by the next
# exec (as a killed run's cgroups are by the next run).
# killed_exec WHAT: starts an exec whose program waits; $exec_pid is airlock's, $stale its workspace.
killed_exec()
{
	printf '{"language": "shell", "timeout": 120, "code": "echo > ready; sleep 300.%s"}' "$RANDOM" >"$REQ"
	rm -f "$IT_TMP/exec.pid"
	"$ITRUN" -p "$IT_TMP/exec.pid" -t "$IT_WATCHDOG" -- "$AIRLOCK" exec --request "$REQ" \
		>"$IT_TMP/kill.out" 2>&1 &
	runner=$!
	wait_for 10 test -s "$IT_TMP/exec.pid"
	exec_pid=$(cat "$IT_TMP/exec.pid")
	if wait_for 20 sh -c "ls /run/airlock-exec/$exec_pid-*/ready" >/dev/null 2>&1; then
		it_pass "$1: the exec's program started"
	else
		it_fail "$1: the exec's program started" "$(cat "$IT_TMP/kill.out")"
	fi
	stale=$(dirname "$(ls /run/airlock-exec/"$exec_pid"-*/ready 2>/dev/null | head -n 1)")
}

# A run's workspace is told live by its lock, not by the pid in its name: an exec in another pid
# namespace (where that pid names nothing, or something else) must not take a live one for a
# dead run's.
printf '{"language": "shell", "timeout": 120, "code": "echo canary > keepme; echo > ready; sleep 300.%s"}' \
	"$RANDOM" >"$IT_TMP/live.json"
"$ITRUN" -p "$IT_TMP/live.pid" -t "$IT_WATCHDOG" -- "$AIRLOCK" exec --request "$IT_TMP/live.json" \
	>"$IT_TMP/live.out" 2>&1 &
live_runner=$!
wait_for 10 test -s "$IT_TMP/live.pid"
live_ws=""
if wait_for 20 sh -c "ls /run/airlock-exec/$(cat "$IT_TMP/live.pid")-*/ready" >/dev/null 2>&1; then
	live_ws=$(dirname "$(ls /run/airlock-exec/"$(cat "$IT_TMP/live.pid")"-*/ready | head -n 1)")
fi
assert_true "a live exec's workspace is there ($live_ws)" test -n "$live_ws"
printf '{"language": "shell", "timeout": 10, "code": "true"}' >"$IT_TMP/other.json"
"$ITRUN" -t "$IT_WATCHDOG" -- unshare -pf --mount-proc "$AIRLOCK" exec --request "$IT_TMP/other.json" \
	>"$IT_TMP/other.out" 2>&1
assert_match '"exit_code": ?0' "$(cat "$IT_TMP/other.out")" "an exec in a pid namespace of its own runs"
assert_true "and leaves the live exec's workspace alone" test -f "$live_ws/keepme"
kill -TERM "$(cat "$IT_TMP/live.pid")"
wait "$live_runner"
assert_true "the live exec, stopped, removes its workspace itself" wait_for 10 test ! -e "$live_ws"

killed_exec "killed"
kill -KILL "$exec_pid"
wait "$runner"
assert_true "its watcher removed its workspace ($stale)" wait_for 10 test ! -e "$stale"

killed_exec "killed with its watcher"
watcher=$(pgrep -P "$exec_pid" -x airlock-scratch)
assert_true "the exec has a watcher of its workspace" test -n "$watcher"
kill -KILL $watcher "$exec_pid"
wait "$runner"
assert_true "the killed exec left its workspace ($stale)" test -d "$stale"
ex '{"language": "shell", "timeout": 10, "code": "true"}'
assert_false "the next exec removed it" test -e "$stale"

it_finish
