#!/usr/bin/env bash
# airlock serve: the agent API over HTTP on a Unix socket (0600), driven with curl. exec answers
# as `airlock exec` does, with an HTTP status by its error kind; sessions are created, listed,
# checkpointed and deleted; a session's workspace files are read, written, listed and removed
# through its workspace filesystem, so its rules hold (a denied path is 403, a link is never
# followed, ".." is refused); processes stream their output as NDJSON or server-sent events, take
# stdin, signals and a new terminal size, replay what they wrote to a stream that attaches later,
# and die with the stream that started them unless detached; an exec whose client hangs up is
# killed. Every bad input is a 4xx with a JSON error naming the field. On SIGTERM serve stops
# its sessions; killed, its sessions end with it (their owner). Nothing is left behind.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

SOCK=$IT_TMP/serve.sock
SERVE_PID=

serve_start()
{
	"$AIRLOCK" serve --socket "$SOCK" "$@" >"$IT_TMP/serve.out" 2>"$IT_TMP/serve.err" &
	SERVE_PID=$!
	wait_for 20 test -S "$SOCK" || it_fail "serve did not listen: $(cat "$IT_TMP/serve.err")"
}

serve_stop()
{
	kill -TERM "$SERVE_PID" 2>/dev/null
	wait "$SERVE_PID" 2>/dev/null
}

# api METHOD PATH [CURL ARGS...]: the body into $IT_TMP/body, the status into $CODE.
api()
{
	local method=$1 path=$2
	shift 2
	CODE=$(curl -s -m 60 --unix-socket "$SOCK" -X "$method" -o "$IT_TMP/body" -w '%{http_code}' \
		"$@" "http://airlock$path")
	BODY=$(cat "$IT_TMP/body")
}

get() { json_get "$IT_TMP/body" "$1"; }

serve_start
assert_eq "600" "$(stat -c %a "$SOCK")" "the socket is mode 0600"

api GET /v1/health
assert_eq "200 ok" "$CODE $(get 'd["status"]')" "health answers"
api GET /v1/capabilities
assert_eq "200 true" "$CODE $(get '"python" in d["languages"]')" "capabilities are the CLI's"
api GET /v1/nothing
assert_eq "404 not_found" "$CODE $(get 'd["error"]["code"]')" "an unknown endpoint is 404 with a JSON error"
api DELETE /v1/health
assert_eq 405 "$CODE" "a wrong method is 405"

# exec
api POST /v1/exec -d '{"language": "python", "code": "print(6 * 7)", "timeout": "30s"}'
assert_eq "200 42 0" "$CODE $(get 'd["stdout"].strip()') $(get 'd["exit_code"]')" "exec runs python"
api POST /v1/exec -d '{"language": "command", "argv": ["/bin/sh", "-c", "exit 3"], "timeout": "30s"}'
assert_eq "200 3" "$CODE $(get 'd["exit_code"]')" "a program's failure is still 200, with its exit code"
api POST /v1/exec -d '{"language": "python", "code": "1"}'
assert_eq "400 invalid_request" "$CODE $(get 'd["error"]["kind"]')" "a request without a timeout is 400"
assert_contains "$(get 'd["error"]["message"]')" "timeout" "the error names the field"
api POST /v1/exec -d '{"language": "cobol", "code": "1", "timeout": "5s"}'
assert_eq 400 "$CODE" "an unknown language is 400"
api POST /v1/exec -d 'not json'
assert_eq 400 "$CODE" "a body that is not JSON is 400"
head -c $((17 * 1024 * 1024)) /dev/zero | tr '\0' ' ' >"$IT_TMP/big"
api POST /v1/exec --data-binary @"$IT_TMP/big"
assert_eq "413 too_large" "$CODE $(get 'd["error"]["code"]')" "a body over 16 MiB is 413"

# an exec whose client hangs up is killed
curl -s -m 2 --unix-socket "$SOCK" -X POST -d \
	'{"language": "shell", "code": "echo marker-hangup; sleep 3171", "timeout": "600s"}' \
	http://airlock/v1/exec >/dev/null
gone() { ! pgrep -f "sleep 3171" >/dev/null; }
assert_true "an exec whose client hung up is killed" wait_for 15 gone

# sessions
api POST /v1/sessions -d '{"colour": "blue"}'
assert_eq "400 colour" "$CODE $(get 'd["error"]["field"]')" "an unknown field is 400 naming it"
api POST /v1/sessions -d '{"ttl": "soon"}'
assert_eq "400 ttl" "$CODE $(get 'd["error"]["field"]')" "a bad ttl is 400 naming it"
api POST /v1/sessions -d '{"memory": "lots"}'
assert_eq "400 memory" "$CODE $(get 'd["error"]["field"]')" "a bad memory is 400 naming it"
write_policy "$IT_TMP/rules.json" <<EOF2
{"workspace": {"root": "$WS", "read": ["**"], "write": ["src/**"], "deny": ["secret*"]}}
EOF2
echo "do not read" >"$WS/secret.txt"
api POST /v1/sessions -d "{\"policy\": $(cat "$IT_TMP/rules.json"), \"ttl\": \"10m\"}"
assert_eq 201 "$CODE" "a session with the operator's own inline policy starts"
ID=$(get 'd["id"]')
assert_eq "$WS" "$(get 'd["workspace"]')" "it has the policy's workspace"
api POST /v1/sessions -d '{}'
assert_eq 201 "$CODE" "a session without a policy starts"
ID2=$(get 'd["id"]')
assert_match "^/run/airlock-exec/" "$(get 'd["workspace"]')" "with a fresh workspace of its own"
FRESH=$(get 'd["workspace"]')
api GET /v1/sessions
assert_eq "200 2" "$CODE $(get 'len(d)')" "both are listed"
api GET "/v1/sessions/$ID"
assert_eq "200 $ID" "$CODE $(get 'd["id"]')" "one is shown"
api GET /v1/sessions/s-00000000
assert_eq 404 "$CODE" "an unknown session is 404"

# files, through the workspace's rules
api PUT "/v1/sessions/$ID/files/content?path=src/deep/hello.txt&parents=true" --data-binary 'hello'
assert_eq 204 "$CODE" "a file is written (its folders made)"
assert_eq "hello" "$(cat "$WS/src/deep/hello.txt")" "into the workspace"
api GET "/v1/sessions/$ID/files/content?path=src/deep/hello.txt"
assert_eq "200 hello" "$CODE $BODY" "and read back"
api GET "/v1/sessions/$ID/files?path=src/deep"
assert_eq "200 hello.txt file 5" "$CODE $(get 'd[0]["name"]') $(get 'd[0]["type"]') $(get 'd[0]["size"]')" "listed"
api GET "/v1/sessions/$ID/files/stat?path=src"
assert_eq "200 directory" "$CODE $(get 'd["type"]')" "stat tells a folder"
api PUT "/v1/sessions/$ID/files/content?path=top.txt" --data-binary 'x'
assert_eq "403 path" "$CODE $(get 'd["error"]["field"]')" "a write the rules refuse is 403"
assert_false "and nothing was written" test -e "$WS/top.txt"
api GET "/v1/sessions/$ID/files/content?path=secret.txt"
assert_eq 404 "$CODE" "a denied file is not there for the API either"
api GET "/v1/sessions/$ID/files/content?path=../etc/passwd"
assert_eq "400 path" "$CODE $(get 'd["error"]["field"]')" "a path with .. is 400"
api GET "/v1/sessions/$ID/files/content?path=/etc/passwd"
assert_eq 400 "$CODE" "an absolute path is 400"
ln -s /etc/passwd "$WS/src/link"
api GET "/v1/sessions/$ID/files/content?path=src/link"
assert_eq 403 "$CODE" "a symbolic link is not followed"
api GET "/v1/sessions/$ID/files/content?path=src"
assert_eq 409 "$CODE" "reading a folder is 409"
api GET "/v1/sessions/$ID/files?path=src/deep/hello.txt"
assert_eq "409 path" "$CODE $(get 'd["error"]["field"]')" "listing a file is 409"
api DELETE "/v1/sessions/$ID/files?path=src/deep"
assert_eq 409 "$CODE" "a folder that is not empty is not removed"
api DELETE "/v1/sessions/$ID/files?path=src/deep/hello.txt"
assert_eq 204 "$CODE" "a file is removed"
assert_false "from the workspace" test -e "$WS/src/deep/hello.txt"
api GET "/v1/sessions/$ID/files/content"
assert_eq "400 path" "$CODE $(get 'd["error"]["field"]')" "a missing path is 400"

# checkpoint, restore, exec in a session
api PUT "/v1/sessions/$ID/files/content?path=src/state" --data-binary 'one'
api POST "/v1/sessions/$ID/checkpoints" -d '{"name": "cp1"}'
assert_eq 201 "$CODE" "a checkpoint is taken"
api PUT "/v1/sessions/$ID/files/content?path=src/state" --data-binary 'two'
api POST "/v1/sessions/$ID/restore" -d '{"name": "cp1"}'
assert_eq 200 "$CODE" "and restored"
assert_eq "one" "$(cat "$WS/src/state")" "the workspace is the checkpoint's again"
api POST "/v1/sessions/$ID/restore" -d '{"name": "nope"}'
assert_eq "404 name" "$CODE $(get 'd["error"]["field"]')" "an unknown checkpoint is 404"
api POST "/v1/sessions/$ID/checkpoints" -d '{"title": "x"}'
assert_eq "400 title" "$CODE $(get 'd["error"]["field"]')" "a bad checkpoint body is 400"
api POST "/v1/sessions/$ID/exec" -d '{"language": "shell", "code": "cat src/state", "timeout": "30s"}'
assert_eq "200 one" "$CODE $(get 'd["stdout"]')" "an exec request runs in the session"

# a session's exec runs in serve's own thread: a client that hangs up still kills its command
curl -s -m 2 --unix-socket "$SOCK" -X POST -d \
	'{"language": "command", "argv": ["sleep", "3173"], "timeout": 600}' \
	"http://airlock/v1/sessions/$ID/exec" >/dev/null
no_sleep_3173()
{
	api POST "/v1/sessions/$ID/exec" -d '{"language": "shell", "code": "ps -e -o args= | grep -c \"^sleep 3173\" || true", "timeout": "30s"}'
	[ "$(get 'd["stdout"].strip()')" = 0 ]
}
assert_true "a session exec whose client hung up is killed" wait_for 15 no_sleep_3173
api GET /v1/health
assert_eq 200 "$CODE" "and serve goes on"

# processes: streamed output, the exit event last
curl -s -N --unix-socket "$SOCK" -X POST -d \
	'{"argv": ["/bin/sh", "-c", "echo out; echo err >&2; printf \"\\377\"; exit 4"]}' \
	"http://airlock/v1/sessions/$ID/processes" >"$IT_TMP/events"
types=$(/usr/bin/python3 -c '
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
print(ev[0]["type"], ev[-1]["type"], ev[-1]["exit_code"],
      "".join(e.get("data", "") for e in ev if e["type"] == "stdout"),
      "".join(e.get("data", "") for e in ev if e["type"] == "stderr").strip(),
      [e.get("data_base64") for e in ev if "data_base64" in e])' "$IT_TMP/events")
assert_eq "start exit 4 out
 err ['/w==']" "$types" "a process streams NDJSON: start, its output (bytes that are not UTF-8 as base64), exit"
curl -s -N --unix-socket "$SOCK" -H 'Accept: text/event-stream' -X POST \
	-d '{"argv": ["/bin/echo", "sse"]}' "http://airlock/v1/sessions/$ID/processes" >"$IT_TMP/sse"
assert_contains "$(cat "$IT_TMP/sse")" "event: stdout" "server-sent events on request"
api POST "/v1/sessions/$ID/processes" -d '{"argv": []}'
assert_eq "400 argv" "$CODE $(get 'd["error"]["field"]')" "an empty argv is 400"
api POST "/v1/sessions/$ID/processes" -d '{"argv": ["x"], "cols": 0}'
assert_eq "400 cols" "$CODE $(get 'd["error"]["field"]')" "a bad size is 400"

# detached: stdin, a signal, a terminal's size; its output replayed to a later stream
api POST "/v1/sessions/$ID/processes" -d '{"argv": ["/bin/sh", "-c",
	"stty size; read x; echo got $x; trap \"echo int; exit 9\" INT; stty size; echo ready; while :; do sleep 0.05; done"],
	"terminal": true, "detach": true, "cols": 100, "rows": 30}'
assert_eq "201 true" "$CODE $(get 'd["running"]')" "a detached process starts"
P=$(get 'd["id"]')
output() { curl -s -m 5 --unix-socket "$SOCK" "http://airlock/v1/sessions/$ID/processes/$P/output?follow=false"; }
wait_for 10 sh -c "curl -s --unix-socket '$SOCK' 'http://airlock/v1/sessions/$ID/processes/$P/output?follow=false' | grep -q '30 100'"
api POST "/v1/sessions/$ID/processes/$P/resize" -d '{"cols": 120, "rows": 40}'
assert_eq 204 "$CODE" "its terminal is resized"
api POST "/v1/sessions/$ID/processes/$P/stdin" --data-binary $'hello\n'
assert_eq 204 "$CODE" "it is written to"
wait_for 10 sh -c "curl -s --unix-socket '$SOCK' 'http://airlock/v1/sessions/$ID/processes/$P/output?follow=false' | grep -q ready"
api POST "/v1/sessions/$ID/processes/$P/signal" -d '{"signal": "SIGINT"}'
assert_eq 204 "$CODE" "it is signalled"
curl -s -m 20 --unix-socket "$SOCK" "http://airlock/v1/sessions/$ID/processes/$P/output" >"$IT_TMP/replay"
got=$(/usr/bin/python3 -c '
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
out = "".join(e.get("data", "") for e in ev if e["type"] == "stdout").replace("\r", "")
print(" | ".join(out.split("\n")[:5]), ev[-1]["type"], ev[-1]["exit_code"])' "$IT_TMP/replay")
assert_eq "30 100 | hello | got hello | 40 120 | ready exit 9" "$got" \
	"the stream replays from the start: the first size, the input, the new size; SIGINT reached its handler"
api POST "/v1/sessions/$ID/processes/$P/signal" -d '{"signal": "STOP"}'
assert_eq "400 signal" "$CODE $(get 'd["error"]["field"]')" "a signal not on the list is 400"
api POST "/v1/sessions/$ID/processes/$P/signal" -d '{"signal": "TERM"}'
assert_eq 409 "$CODE" "signalling a process that ended is 409"
api POST "/v1/sessions/$ID/processes" -d '{"argv": ["sleep", "3175"], "detach": true}'
P2=$(get 'd["id"]')
api POST "/v1/sessions/$ID/processes/$P2/signal" -d '{"signal": "KILL"}'
assert_eq 204 "$CODE" "KILL is a signal too"
curl -s -m 20 --unix-socket "$SOCK" "http://airlock/v1/sessions/$ID/processes/$P2/output" >"$IT_TMP/killed"
assert_eq "exit killed before its result came 9" "$(/usr/bin/python3 -c '
import json, sys
e = [json.loads(l) for l in open(sys.argv[1])][-1]
print(e["type"], e["error"], e["signal"])' "$IT_TMP/killed")" "a process killed outright says so in its exit event"
api GET "/v1/sessions/$ID/processes/$P"
assert_eq "200 false 9" "$CODE $(get 'd["running"]') $(get 'd["exit"]["exit_code"]')" "it is listed as ended"

# a stream that hangs up kills its process
curl -s -m 2 --unix-socket "$SOCK" -X POST -d '{"argv": ["/bin/sh", "-c", "exec sleep 3172"]}' \
	"http://airlock/v1/sessions/$ID/processes" >/dev/null
no_sleep()
{
	api POST "/v1/sessions/$ID/exec" -d '{"language": "shell", "code": "ps -e -o args= | grep -c \"^sleep 3172\" || true", "timeout": "30s"}'
	[ "$(get 'd["stdout"].strip()')" = 0 ]
}
assert_true "a process whose stream hung up is killed" wait_for 15 no_sleep

# delete; SIGTERM stops what serve started
api DELETE "/v1/sessions/$ID"
assert_eq 204 "$CODE" "a session is deleted"
api GET "/v1/sessions/$ID"
assert_eq 404 "$CODE" "and gone"
kill -TERM "$SERVE_PID"
wait "$SERVE_PID"
assert_eq 0 "$?" "SIGTERM: serve exits 0 (in the sanitizer build: nothing leaked)"
assert_false "SIGTERM: the socket is removed" test -e "$SOCK"
assert_false "SIGTERM: the sessions serve started are stopped" test -e "/var/lib/airlock/sessions/$ID2"
assert_true "SIGTERM: their fresh workspaces removed" wait_for 10 test ! -e "$FRESH"

# killed outright, its sessions end with it: serve is their owner
serve_start
api POST /v1/sessions -d '{}'
ID3=$(get 'd["id"]')
curl -s -m 30 --unix-socket "$SOCK" -X POST -o /dev/null \
	-d '{"language": "shell", "code": "echo started; sleep 3174", "timeout": 600}' http://airlock/v1/exec &
CURL_PID=$!
# the sandbox's sleep, not curl's command line (which names it too)
wait_for 20 pgrep -f "^sleep 3174"
# the exec's fresh workspace is named after the child of serve's that runs it
EXEC_WS=
for child in $(pgrep -P "$SERVE_PID"); do
	for d in /run/airlock-exec/"$child"-*; do [ -d "$d" ] && EXEC_WS=$d; done
done
kill -KILL "$SERVE_PID"
wait "$SERVE_PID" 2>/dev/null
assert_true "SIGKILL: the session ends with serve" wait_for 20 test ! -e "/var/lib/airlock/sessions/$ID3"
sleep_gone() { ! pgrep -f "^sleep 3174" >/dev/null; }
assert_true "SIGKILL: an exec under way ends with serve (its child's parent-death signal)" wait_for 20 sleep_gone
assert_true "SIGKILL: the exec had a fresh workspace ($EXEC_WS)" test -n "$EXEC_WS"
assert_true "SIGKILL: its watcher removed it" wait_for 10 test ! -e "$EXEC_WS"
wait "$CURL_PID" 2>/dev/null
rm -f "$SOCK"

it_finish
