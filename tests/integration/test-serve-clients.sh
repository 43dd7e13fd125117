#!/usr/bin/env bash
# airlock serve's clients: the Unix socket serves this user, root and --allow-uid (granted by an
# ACL, checked by SO_PEERCRED), each seeing its own sessions only; TCP needs a bearer token from
# a file only its owner can read; clients other than the operator need the operator's policy
# (--policy or --policy-dir), and bring an inline policy only if allowed. Sessions and streams
# per client are bounded (429), and health answers during a flood of execs.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

SOCK=$IT_TMP/serve.sock
SERVE_PID=

# serve runs in a folder of its own, holding a file no client may see.
mkdir -p "$IT_TMP/cwd"
echo "serve's own" >"$IT_TMP/cwd/private"
serve_start()
{
	(cd "$IT_TMP/cwd" && exec "$AIRLOCK" serve --socket "$SOCK" "$@") >"$IT_TMP/serve.out" \
		2>"$IT_TMP/serve.err" &
	SERVE_PID=$!
	wait_for 20 test -S "$SOCK" || it_fail "serve did not listen: $(cat "$IT_TMP/serve.err")"
}

serve_stop()
{
	kill -TERM "$SERVE_PID" 2>/dev/null
	wait "$SERVE_PID" 2>/dev/null
}

# api [--as UID] METHOD PATH [CURL ARGS...]
api()
{
	local as=()
	if [ "$1" = --as ]; then
		as=(setpriv --reuid="$2" --regid="$2" --clear-groups)
		shift 2
	fi
	local method=$1 path=$2
	shift 2
	rm -f "$PUB/body"
	CODE=$("${as[@]}" curl -s -m 60 --unix-socket "$SOCK" -X "$method" -o "$PUB/body" \
		-w '%{http_code}' "$@" "http://airlock$path")
}

# Where a client of another uid can write its answer.
PUB=$IT_TMP/pub
mkdir -p "$PUB"
chmod 1777 "$PUB"
get() { json_get "$PUB/body" "$1"; }

# refused before anything listens
al_run serve --socket "$SOCK" --allow-uid 65534
assert_eq 125 "$AL_RC" "--allow-uid without the operator's policy is refused"
assert_one_error_line "$AL_ERR" "with one error line"
assert_contains "$AL_ERR" "--policy" "that says what to give"
al_run serve --socket "$SOCK" --listen 127.0.0.1:0 -p /dev/null
assert_eq 125 "$AL_RC" "--listen without --token-file is refused"
printf 'a-token-of-enough-length\n' >"$IT_TMP/token"
chmod 644 "$IT_TMP/token"
al_run serve --socket "$SOCK" --listen 127.0.0.1:0 --token-file "$IT_TMP/token" --policy-dir "$IT_TMP"
assert_eq 125 "$AL_RC" "a token file others may read is refused"
assert_contains "$AL_ERR" "chmod 600" "the refusal says how to fix it"
cp "$IT_TMP/token" "$IT_TMP/token-other"
chmod 600 "$IT_TMP/token-other"
chown 65534 "$IT_TMP/token-other"
al_run serve --socket "$SOCK" --listen 127.0.0.1:0 --token-file "$IT_TMP/token-other" --policy-dir "$IT_TMP"
assert_eq 125 "$AL_RC" "a token file another user owns is refused"
assert_contains "$AL_ERR" "owned by uid 65534" "the refusal names its owner"
assert_false "nothing listened" test -e "$SOCK"

# another uid, with the operator's policy folder
mkdir -p "$IT_TMP/policies" "$IT_TMP/ws-other"
write_policy "$IT_TMP/policies/small.json" <<EOF2
{"workspace": {"root": "$IT_TMP/ws-other"}}
EOF2
chmod 600 "$IT_TMP/token"
PORT=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
serve_start --allow-uid 65534 --policy-dir "$IT_TMP/policies" --listen "127.0.0.1:$PORT" \
	--token-file "$IT_TMP/token" --max-sessions 2 --max-streams 2
assert_match '^6[0-7]0$' "$(stat -c %a "$SOCK")" "others have no access to the socket"
assert_contains "$(getfacl -p "$SOCK" 2>/dev/null)" "user:nobody:rw-" "uid 65534 is granted it by an ACL"
api --as 65534 GET /v1/health
assert_eq 200 "$CODE" "an allowed uid is served"
api --as 65533 GET /v1/health
assert_ne 200 "$CODE" "another uid is not"
api --as 65534 POST /v1/sessions -d '{"policy": {"workspace": {"root": "/"}}}'
assert_eq "422 unsupported_policy policy" "$CODE $(get 'd["error"]["code"]') $(get 'd["error"]["field"]')" \
	"another uid may not bring an inline policy"
api --as 65534 POST /v1/sessions -d '{"workspace": "/etc"}'
assert_eq 422 "$CODE" "nor a workspace"
api --as 65534 POST /v1/exec -d '{"language": "shell", "code": "id", "timeout": 5, "workspace": "/etc"}'
assert_eq 422 "$CODE" "nor through exec"
api --as 65534 POST /v1/sessions -d '{"policy": "small.json"}'
assert_eq 201 "$CODE" "a policy of the operator's folder is fine"
OTHER=$(get 'd["id"]')
api POST /v1/sessions -d '{"policy": "small.json"}'
MINE=$(get 'd["id"]')
# a relative root in the operator's folder would be serve's own folder: a client gets a fresh one
write_policy "$IT_TMP/policies/relative.json" <<EOF2
{"workspace": {"root": "."}}
EOF2
api --as 65534 POST /v1/sessions -d '{"policy": "relative.json"}'
assert_eq 201 "$CODE" "a policy with a relative root starts a session"
REL=$(get 'd["id"]')
assert_match "^/run/airlock-exec/" "$(get 'd["workspace"]')" "in a fresh workspace, not serve's folder"
api --as 65534 GET "/v1/sessions/$REL/files/content?path=private"
assert_eq 404 "$CODE" "serve's own files are not in it"
api --as 65534 DELETE "/v1/sessions/$REL"
api --as 65534 POST /v1/exec -d '{"language": "shell", "code": "ls; pwd", "timeout": 30, "policy": "relative.json"}'
assert_eq "200 /workspace" "$CODE $(get 'd["stdout"].strip()')" "an exec of it sees an empty workspace too"
api GET "/v1/sessions/$OTHER"
assert_eq 404 "$CODE" "one client does not see another's session"
api GET "/v1/sessions/$OTHER/files"
assert_eq 404 "$CODE" "nor its files"
api --as 65534 GET /v1/sessions
assert_eq "$OTHER" "$(get '" ".join(s["id"] for s in d)')" "each lists its own sessions only"

# TCP with the token
tcp() { CODE=$(curl -s -m 30 -o "$PUB/body" -w '%{http_code}' "$@"); }
tcp "http://127.0.0.1:$PORT/v1/health"
assert_eq "401 Authorization" "$CODE $(get 'd["error"]["field"]')" "TCP without the token is 401"
tcp -H "Authorization: Bearer a-token-of-enough-lengtX" "http://127.0.0.1:$PORT/v1/health"
assert_eq 401 "$CODE" "TCP with a wrong token is 401"
tcp -H "Authorization: Bearer a-token-of-enough-length" "http://127.0.0.1:$PORT/v1/health"
assert_eq 200 "$CODE" "TCP with the token is served"
tcp -H "Authorization: Bearer a-token-of-enough-length" "http://127.0.0.1:$PORT/v1/sessions/$MINE"
assert_eq 404 "$CODE" "the token's client is another client"

# a NUL byte is refused, never cut
api --as 65534 POST /v1/sessions -d '{"policy": "small.json\u0000zz"}'
assert_eq 400 "$CODE" "a NUL in a body's string is 400"
api --as 65534 POST /v1/exec -d '{"language": "shell\u0000x", "code": "true", "timeout": 5, "policy": "small.json"}'
assert_eq 400 "$CODE" "a NUL in an exec request's language is 400"
api --as 65534 GET "/v1/sessions/$OTHER/files?path=a%00b"
assert_eq "400 path" "$CODE $(get 'd["error"]["field"]')" "a NUL in the path is 400"

# a file name that is not UTF-8 still lists as JSON
api --as 65534 POST "/v1/sessions/$OTHER/exec" -d '{"language": "python", "code": "open(b\"bad\\xffname\", \"w\")", "timeout": 30}'
assert_eq "200 0" "$CODE $(get 'd["exit_code"]')" "a sandboxed process makes a name that is not UTF-8"
api --as 65534 GET "/v1/sessions/$OTHER/files"
assert_eq "200 YmFk/25hbWU=" "$CODE $(get '[e.get("name_base64") for e in d if "name_base64" in e][0]')" \
	"a name that is not UTF-8 is listed, its bytes in name_base64"

# one uid's slow connections leave room for the others: past 64 of them, the socket closes its
# new ones before a request is read
setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 - "$SOCK" 70 "$PUB/closed" <<'EOF2' &
import socket, sys, time
conns = []
for _ in range(int(sys.argv[2])):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    s.send(b"GET /v1/health HTTP/1.1\r\n")
    conns.append(s)
time.sleep(2)
closed = 0
for s in conns:
    try:
        closed += s.recv(1, socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        pass
open(sys.argv[3], "w").write(str(closed))
time.sleep(6)
EOF2
FLOOD=$!
wait_for 20 test -s "$PUB/closed"
assert_eq 6 "$(cat "$PUB/closed")" "one uid holds 64 connections at most: the 6 over it are closed"
api GET /v1/health
assert_eq 200 "$CODE" "another uid is served meanwhile"
kill "$FLOOD" 2>/dev/null
wait "$FLOOD" 2>/dev/null

# limits
api POST /v1/sessions -d '{"policy": "small.json", "ttl": "3s"}'
assert_eq 201 "$CODE" "a second session"
api POST /v1/sessions -d '{"policy": "small.json"}'
assert_eq "429 too_many_sessions" "$CODE $(get 'd["error"]["code"]')" "a third is over --max-sessions"
sleep 4
api POST /v1/sessions -d '{"policy": "small.json"}'
assert_eq 201 "$CODE" "a session whose TTL passed no longer counts"
pids=()
for i in 1 2; do
	curl -s -m 30 --unix-socket "$SOCK" -X POST -o /dev/null \
		-d '{"language": "shell", "code": "sleep 4", "timeout": 20, "policy": "small.json"}' \
		http://airlock/v1/exec &
	pids+=($!)
done
sleep 1.5
api POST /v1/exec -d '{"language": "shell", "code": "true", "timeout": 5, "policy": "small.json"}'
assert_eq "429" "$CODE" "an exec over --max-streams is 429"
api --as 65534 GET /v1/health
assert_eq 200 "$CODE" "while health still answers, as other clients are"
wait "${pids[@]}"
serve_stop

# health during a flood of execs
serve_start
pids=()
for i in $(seq 24); do
	curl -s -m 60 --unix-socket "$SOCK" -X POST -o /dev/null \
		-d '{"language": "shell", "code": "sleep 1", "timeout": 20}' http://airlock/v1/exec &
	pids+=($!)
done
ok=0
for i in 1 2 3 4 5; do
	api GET /v1/health
	[ "$CODE" = 200 ] && ok=$((ok + 1))
	sleep 0.2
done
assert_eq 5 "$ok" "health answers every time during a flood of 24 execs"
wait "${pids[@]}"
serve_stop
assert_false "the socket is removed" test -e "$SOCK"

it_finish
