#!/usr/bin/env bash
# Persistent sessions: `session start` gives an id; `session exec` runs commands (or JSON
# requests) in the same sandbox, which share its workspace, processes and network state; `ls`
# lists it; checkpoint and restore copy its workspace consistently and back; `stop` tears it
# down. A session has no owner unless given one: started through a shell or a pipeline, it
# outlives them. A session whose owner dies, whose TTL passes, or whose supervisor is killed
# leaves nothing behind either. Bad input is refused before anything starts.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

SESSIONS=/var/lib/airlock/sessions

session_gone()
{
	[ ! -e "$SESSIONS/$1" ] && ! pgrep -f "airlock-session" >/dev/null
}

write_policy "$IT_TMP/labelled.json" <<EOF2
{"workspace": {"root": "$WS"}, "labels": ["team:agents"]}
EOF2
al_run session start -p "$IT_TMP/labelled.json" --owner 0
assert_eq 0 "$AL_RC" "session start exits 0"
ID=$AL_OUT
assert_match '^s-[0-9a-f]{8}$' "$ID" "session start prints the id"

al_run session ls --json
assert_eq "$ID" "$(json_get "$IT_TMP/al.out" '[s["id"] for s in d][0]')" "session ls lists it"
assert_eq "$WS" "$(json_get "$IT_TMP/al.out" 'd[0]["workspace"]')" "session ls: its workspace"

# the workspace, the processes and the network state are shared by the commands
al_run session exec "$ID" -- /bin/sh -c 'echo one > shared; (sleep 300 &) ; echo started'
assert_eq "0 started" "$AL_RC $AL_OUT" "exec: a command that leaves a process behind"
al_run session exec "$ID" -- /bin/sh -c 'cat shared; ps -e -o comm= | grep -c "^sleep$"'
assert_eq "$(printf 'one\n1')" "$AL_OUT" "exec: the next command sees its file and its process"
al_run session exec "$ID" -- /usr/bin/python3 -c '
import socket, os
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
open("port", "w").write(str(s.getsockname()[1]))
if os.fork() == 0:
    os.setsid()
    c, _ = s.accept(); c.sendall(b"from the first command"); c.close(); os._exit(0)
'
al_run session exec "$ID" -- /usr/bin/python3 -c '
import socket
c = socket.create_connection(("127.0.0.1", int(open("port").read())))
print(c.recv(100).decode())'
assert_eq "from the first command" "$AL_OUT" "exec: a server of one command answers the next (network state)"

# what it uses, as ls tells: TTL left, owner, cpu time of every command (ended ones too), its
# memory now and at its peak, the bytes in its workspace
al_run session exec "$ID" -- /usr/bin/python3 -c '
import time
x = bytearray(64 << 20)
for i in range(0, len(x), 4096):
    x[i] = 1
t = time.process_time()
while time.process_time() - t < 0.3:
    pass
open("five-mb", "wb").write(b"x" * (5 << 20))'
al_run session ls --json
u() { json_get "$IT_TMP/al.out" "[s for s in d if s['id'] == '$ID'][0]$1"; }
assert_eq null "$(u '["owner"]')" "session ls: no owner unless given one"
assert_true "session ls: the TTL left is under an hour ($(u '["ttl_left_s"]') s)" \
	test "$(u '["ttl_left_s"]')" -gt 3000 -a "$(u '["ttl_left_s"]')" -le 3600
assert_true "session ls: the cpu time of the ended commands counts ($(u '["cpu_usec"]') us)" \
	test "$(u '["cpu_usec"]')" -ge 300000
assert_true "session ls: memory now ($(u '["memory_bytes"]'))" test "$(u '["memory_bytes"]')" -gt 0
assert_true "session ls: memory at its peak ($(u '["memory_peak_bytes"]'))" \
	test "$(u '["memory_peak_bytes"]')" -ge $((64 << 20))
assert_true "session ls: the workspace's bytes ($(u '["workspace_bytes"]'))" \
	test "$(u '["workspace_bytes"]')" -ge $((5 << 20))
al_run session ls --all
assert_eq 125 "$AL_RC" "session ls: an unknown argument is refused"
assert_contains "$AL_ERR" 'unexpected argument "--all"' "... naming it"
al_run session ls
assert_match "TTL +CPU +MEM +PEAK +WS" "$(head -n 1 <<<"$AL_OUT")" "session ls: its columns"
assert_match "^$ID +[0-9]+ +- +[^ ]+ +(59|60)m +[0-9.]+s " "$(grep "^$ID" <<<"$AL_OUT")" \
	"session ls: its row"

# exit codes, env, stdin, timeout, as with run
al_run session exec "$ID" -e GREETING=hi -- /bin/sh -c 'read x; echo "$GREETING $x"; exit 7' <<<"there"
assert_eq "7 hi there" "$AL_RC $AL_OUT" "exec: exit code, env and stdin"
al_run session exec "$ID" -T 1s --kill-after 1s -- /bin/sh -c 'trap "" TERM; sleep 60'
assert_eq 124 "$AL_RC" "exec: the timeout ends the command (exit 124)"
al_run session exec "$ID" -T 1s --kill-after 1s -- /usr/bin/python3 -c 'import os, time; os.setpgid(0, 1); time.sleep(60)'
assert_eq 124 "$AL_RC" "exec: a command that left its process group still ends at its timeout"
al_run session exec "$ID" -- /bin/sh -c 'ps -e -o args= | grep -c "^/usr/bin/python3 -c import os, time"'
assert_eq 0 "$AL_OUT" "exec: and it is gone"
al_run session exec "$ID" -T 10s -- /bin/sh -c '(while :; do echo x; sleep 0.05; done) & echo started'
assert_eq 0 "$AL_RC" "exec: a process left writing to the command's stdout does not hold the caller"
al_run session exec "$ID" -- no-such-command
assert_eq 127 "$AL_RC" "exec: command not found is 127"
al_run session exec "$ID" --json -- /bin/sh -c 'echo out; echo err >&2; exit 3'
assert_eq "out err 3 False" \
	"$(json_get "$IT_TMP/al.out" '"%s %s %d %s" % (d["stdout"].strip(), d["stderr"].strip(), d["exit_code"], d["timed_out"])')" \
	"exec --json: the result object"
assert_eq '["src:env:airlock", "team:agents"]' "$(json_get "$IT_TMP/al.out" 'd["labels"]')" \
	"exec --json: labelled by airlock and the session's policy"

# JSON requests, as airlock exec takes them
printf '{"language": "python", "timeout": 30, "input": {"n": 2}, "code": "import json, os, sys\\nn = json.load(sys.stdin)[\\"n\\"]\\nprint(open(\\"shared\\").read().strip() * n)\\njson.dump({\\"n\\": n}, open(os.environ[\\"AIRLOCK_RESULT\\"], \\"w\\"))"}' >"$IT_TMP/req.json"
al_run session exec "$ID" --request "$IT_TMP/req.json"
assert_eq 0 "$AL_RC" "exec --request exits 0"
assert_eq "oneone {'n': 2}" "$(json_get "$IT_TMP/al.out" '"%s %s" % (d["stdout"].strip(), d["output"])')" \
	"exec --request: stdout and the result file"
printf '{"language": "rust", "timeout": 120, "argv": ["6"], "code": "fn main() { let n: u32 = std::env::args().nth(1).unwrap().parse().unwrap(); println!(\\"{}\\", n * 7); }"}' >"$IT_TMP/req.json"
al_run session exec "$ID" --request "$IT_TMP/req.json"
assert_eq "0 42 False" "$AL_RC $(json_get "$IT_TMP/al.out" '"%s %s" % (d["stdout"].strip(), d["compile_error"])')" \
	"exec --request: rust is compiled and run in the session"
printf '{"language": "rust", "timeout": 120, "code": "fn main() { let x: u32 = \\"s\\"; }"}' >"$IT_TMP/req.json"
al_run session exec "$ID" --request "$IT_TMP/req.json"
assert_eq "0 true" "$AL_RC $(json_get "$IT_TMP/al.out" 'd["compile_error"]')" "exec --request: a compile error is reported as such"
printf '{"language": "shell", "timeout": 30, "code": "cat notes/a.txt; ls /tmp | grep -c airlock-exec-", "files": [{"path": "notes/a.txt", "content": "placed\\n"}]}' >"$IT_TMP/req.json"
al_run session exec "$ID" --request "$IT_TMP/req.json"
assert_eq "$(printf 'placed\n1')" "$(json_get "$IT_TMP/al.out" 'd["stdout"].strip()')" "exec --request: files placed in the session's workspace, the code in a folder of its own"
al_run session exec "$ID" -- /bin/sh -c 'ls /tmp | grep -c airlock-exec- || true'
assert_eq 0 "$AL_OUT" "exec --request: that folder is gone after it"
printf '{"language": "typescript", "timeout": 60, "code": "const x: number = 42; console.log(x)"}' >"$IT_TMP/req.json"
al_run session exec "$ID" --request "$IT_TMP/req.json"
assert_eq "0 42" "$AL_RC $(json_get "$IT_TMP/al.out" 'd["stdout"].strip()')" \
	"exec --request: typescript runs in a session (Debian's ts-node, its NODE_PATH set)"
printf '{"language": "wasm", "timeout": 30, "code": "%s"}' \
	"$("$IT_PY" "$IT_SOURCE_ROOT/tests/integration/helpers/make-wasm.py" hello)" >"$IT_TMP/req.json"
al_run session exec "$ID" --request "$IT_TMP/req.json"
assert_eq "3 hello from wasm 1" "$(json_get "$IT_TMP/al.out" '"%s %s" % (d["exit_code"], d["stdout"].strip())')" \
	"exec --request: a WASI module runs in a session"
printf '{"language": "shell", "timeout": 30, "code": "true", "files": [{"path": ".git/hooks/x", "content": "x"}]}' >"$IT_TMP/req.json"
al_run session exec "$ID" --request "$IT_TMP/req.json"
assert_eq "125 setup_failed" "$AL_RC $(json_get "$IT_TMP/al.out" 'd["error"]["kind"]')" \
	"exec --request: a file the policy protects is refused"
printf '{"language": "shell", "code": "true"}' >"$IT_TMP/req.json"
al_run session exec "$ID" --request "$IT_TMP/req.json"
assert_eq "125 invalid_request" "$AL_RC $(json_get "$IT_TMP/al.out" 'd["error"]["kind"]')" \
	"exec --request: a request without a timeout is refused"

# a seccomp violation is reported with the command that made it
al_run session exec "$ID" --json -- "$PROBE" mount
assert_contains "$(json_get "$IT_TMP/al.out" 'd["violations"]')" "mount" "exec: its violations"

# checkpoint and restore: a consistent copy of the workspace, and back
al_run session exec "$ID" -- /bin/sh -c 'mkdir -p d; echo before > d/f; ln -sf d/f link'
al_run session checkpoint "$ID" first
assert_eq 0 "$AL_RC" "checkpoint exits 0"
al_run session exec "$ID" -- /bin/sh -c 'echo after > d/f; rm link; echo extra > extra'
al_run session restore "$ID" first
assert_eq 0 "$AL_RC" "restore exits 0"
al_run session exec "$ID" -- /bin/sh -c 'cat d/f; readlink link; test -e extra && echo extra is back; cat shared'
assert_eq "$(printf 'before\nd/f\none')" "$AL_OUT" "restore: the workspace is the checkpoint's again (files, links, no later file)"
assert_eq "before" "$(cat "$WS/d/f")" "restore: the host folder too"
al_run session restore "$ID" nothing-like-this
assert_eq 125 "$AL_RC" "restore of an unknown checkpoint is refused"
assert_contains "$AL_ERR" "nothing-like-this" "the refusal names it"
al_run session checkpoint "$ID" ../escape
assert_eq 125 "$AL_RC" "a checkpoint name with a slash is refused"

# a checkpoint keeps holes and hard links (a sparse file and a file of many names cost their data
# once), skips FIFOs, and a restore brings the names back as one file
al_run session exec "$ID" -- /bin/sh -c 'truncate -s 1G sparse; head -c 1048576 /dev/urandom > many; i=0; while [ $i -lt 20 ]; do ln many "name$i"; i=$((i+1)); done; mkfifo pipe'
al_run session checkpoint "$ID" shapes
assert_eq 0 "$AL_RC" "checkpoint of a sparse file, hard links and a FIFO"
used=$(du -sk "$SESSIONS/$ID/checkpoints/shapes" | cut -f1)
assert_true "the checkpoint takes its data once (${used} KiB)" test "$used" -lt 8192
assert_eq 1073741824 "$(stat -c %s "$SESSIONS/$ID/checkpoints/shapes/sparse")" "the sparse file keeps its length"
assert_eq 21 "$(stat -c %h "$SESSIONS/$ID/checkpoints/shapes/many")" "the hard links stay one file"
assert_false "the FIFO is skipped" test -e "$SESSIONS/$ID/checkpoints/shapes/pipe"
al_run session exec "$ID" -- /bin/sh -c 'rm -f sparse many name* pipe'

# a command still running when a checkpoint is taken is stopped for it, and goes on after
al_run session exec "$ID" -- /bin/sh -c '(i=0; while [ $i -lt 400 ]; do echo $i >> count; i=$((i+1)); done &)'
al_run session checkpoint "$ID" busy
assert_eq 0 "$AL_RC" "checkpoint while a process writes"

# the caller of a command killed: its command is killed too (the session goes on)
marker="sleep 300.$RANDOM"
"$AIRLOCK" session exec "$ID" -- /bin/sh -c "$marker" >/dev/null 2>&1 &
client=$!
wait_for 10 pgrep -f "^$marker" >/dev/null || true # the sandbox's, not the client's command line
kill -KILL "$client"
wait "$client" 2>/dev/null
if wait_for 10 it_no_marked_processes "$marker"; then
	it_pass "a killed caller's command is killed"
else
	it_fail "a killed caller's command is killed" "$(pgrep -af "$marker")"
fi
al_run session exec "$ID" -- /bin/echo still here
assert_eq "still here" "$AL_OUT" "the session goes on"

al_run session stop "$ID"
assert_eq 0 "$AL_RC" "stop exits 0"
if wait_for 10 session_gone "$ID"; then
	it_pass "stop: the session's folder and supervisor are gone"
else
	it_fail "stop: the session's folder and supervisor are gone" "$(ls "$SESSIONS" 2>&1)"
fi
al_run session exec "$ID" -- /bin/true
assert_eq 125 "$AL_RC" "exec in a stopped session is refused"
assert_contains "$AL_ERR" "No session $ID" "the refusal says there is no such session"
al_run session stop "$ID"
assert_eq 125 "$AL_RC" "stopping it again says so"
assert_clean "after stop"

# the owner killed mid-session: the session is reaped
sleep 300 &
owner=$!
al_run session start -w "$WS" --owner "$owner"
ID=$AL_OUT
al_run session exec "$ID" -- /bin/sh -c '(sleep 300 &); echo ok'
assert_eq ok "$AL_OUT" "a session owned by another process runs"
kill -KILL "$owner"
wait "$owner" 2>/dev/null
if wait_for 10 session_gone "$ID"; then
	it_pass "owner killed: the session is reaped"
else
	it_fail "owner killed: the session is reaped" "$(ls "$SESSIONS" 2>&1)"
fi
assert_clean "after the owner died"

# started through a shell or a pipeline, as frameworks do (sh -c, shell=True): with no owner
# by default, the session outlives the shell that started it
ID=$(sh -c "$ITRUN -t $IT_WATCHDOG -- $AIRLOCK session start -w $WS" 2>"$IT_TMP/sh.err")
assert_match '^s-[0-9a-f]{8}$' "$ID" "sh -c 'airlock session start' prints an id"
al_run session exec "$ID" -- /bin/echo alive
assert_eq alive "$AL_OUT" "... and the session works after that shell has exited"
al_run session stop "$ID"
assert_eq 0 "$AL_RC" "... and stops"
ID=$("$ITRUN" -t "$IT_WATCHDOG" -- "$AIRLOCK" session start -w "$WS" | tail -n 1)
assert_match '^s-[0-9a-f]{8}$' "$ID" "airlock session start | tail -n 1 prints an id"
al_run session exec "$ID" -- /bin/echo alive
assert_eq alive "$AL_OUT" "... and the session works after the pipeline"
al_run session stop "$ID"
assert_eq 0 "$AL_RC" "... and stops"
assert_clean "after the sessions started through a shell"

# the TTL passes
al_run session start -w "$WS" --owner 0 --ttl 2s
ID=$AL_OUT
assert_match '^s-' "$ID" "a session with a TTL starts"
if wait_for 15 session_gone "$ID"; then
	it_pass "TTL: the session ends by itself"
else
	it_fail "TTL: the session ends by itself" "$(ls "$SESSIONS" 2>&1)"
fi
assert_clean "after the TTL"

# the supervisor killed with SIGKILL: its sandbox dies with it; the next session command
# removes its folder
al_run session start -w "$WS" --owner 0
ID=$AL_OUT
al_run session exec "$ID" -- /bin/sh -c "(sleep 300.$RANDOM &); echo ok"
pid=$(sed -n 's/^pid=//p' "$SESSIONS/$ID/info")
assert_ne "" "$pid" "the supervisor's pid is recorded"
kill -KILL "$pid"
if wait_for 10 it_no_marked_processes "sleep 300."; then
	it_pass "supervisor killed: the sandbox's processes die with it"
else
	it_fail "supervisor killed: the sandbox's processes die with it" "$(pgrep -a sleep)"
fi
# (its workspace daemon, which counts against the session's cgroup, ends when it sees that)
wait_for 10 sh -c "[ -z \"\$(pgrep -x airlock-fs)\" ]" || true
al_run session ls
assert_false "supervisor killed: session ls removes its folder" test -e "$SESSIONS/$ID"
assert_clean "after the supervisor was killed"

# a session with a fresh workspace whose supervisor is killed: the workspace's watcher removes it
# at once, with no other command
al_run session start --fresh-workspace --owner 0
ID=$AL_OUT
pid=$(sed -n 's/^pid=//p' "$SESSIONS/$ID/info")
al_run session exec "$ID" -- /bin/sh -c 'echo kept > kept.txt; pwd'
fresh=""
for d in /run/airlock-exec/"$pid"-*; do [ -f "$d/kept.txt" ] && fresh=$d; done
assert_true "fresh workspace: the session wrote into it ($fresh)" test -n "$fresh"
kill -KILL "$pid"
assert_true "fresh workspace: its watcher removed it once the supervisor was killed" \
	wait_for 10 test ! -e "$fresh"
wait_for 10 sh -c "[ -z \"\$(pgrep -x airlock-fs)\" ]" || true
al_run session ls
assert_clean "after a fresh workspace's supervisor was killed"

# the supervisor of a session with limits killed with SIGKILL: none of its cgroups stays, in any
# hierarchy, and no other command is needed for that
write_policy "$IT_TMP/limits.json" <<EOF2
{"workspace": {"root": "$WS"}, "resources": {"memory": "256Mi", "pids": 128}}
EOF2
# session_cgroups ID: the cgroup folders of the session's pid 1 that are not this test's own
session_cgroups()
{
	local sup init
	sup=$(sed -n 's/^pid=//p' "$SESSIONS/$1/info")
	init=$(pgrep -P "$sup" -x airlock-init)
	comm -13 <(it_cgroup_dirs_of self | sort) <(it_cgroup_dirs_of "${init:-0}" | sort)
}
no_cgroup_of_it()
{
	local cg
	for cg in $cgroups; do
		[ ! -d "$cg" ] || return 1
	done
}
# process_gone PID: it has exited (a zombie its new parent has not reaped yet counts as gone)
process_gone()
{
	local st
	st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) || return 0
	[ "${st%% *}" = Z ] || [ -z "$st" ]
}
cgroups_of_it_are_empty()
{
	local cg
	for cg in $cgroups; do
		[ ! -s "$cg/cgroup.procs" ] || return 1
	done
}
al_run session start -p "$IT_TMP/limits.json" --owner 0
ID=$AL_OUT
al_run session exec "$ID" -- /bin/sh -c "(sleep 300.$RANDOM &); echo ok"
cgroups=$(session_cgroups "$ID")
assert_eq 2 "$(wc -w <<<"$cgroups")" "a session with memory and pids limits has a cgroup in each hierarchy"
pid=$(sed -n 's/^pid=//p' "$SESSIONS/$ID/info")
watcher=$(pgrep -P "$pid" -x airlock-cgroups)
assert_ne "" "$watcher" "a process outside the sandbox waits to remove its cgroups"
kill -KILL "$pid"
if wait_for 5 no_cgroup_of_it; then
	it_pass "supervisor killed: its cgroups are removed without another command"
else
	it_fail "supervisor killed: its cgroups are removed without another command" "$cgroups"
fi
if wait_for 5 process_gone "${watcher:-0}"; then
	it_pass "and the process that removed them is gone"
else
	it_fail "and the process that removed them is gone" "$(ps -o pid,stat,args -p "$watcher")"
fi
al_run session ls
assert_clean "after the supervisor of a session with limits was killed"

# the same, with the watcher killed too: a session command removes them, even one that comes
# after the command that removed the session's folder (while its processes were still exiting)
al_run session start -p "$IT_TMP/limits.json" --owner 0
ID=$AL_OUT
cgroups=$(session_cgroups "$ID")
pid=$(sed -n 's/^pid=//p' "$SESSIONS/$ID/info")
# shellcheck disable=SC2046 # none, or the watcher's pid
kill -KILL "$pid" $(pgrep -P "$pid" -x airlock-cgroups)
al_run session ls
wait_for 10 cgroups_of_it_are_empty || true
al_run session ls
if no_cgroup_of_it; then
	it_pass "supervisor and watcher killed: the next session command removes its cgroups"
else
	it_fail "supervisor and watcher killed: the next session command removes its cgroups" "$cgroups"
fi
assert_clean "after the supervisor and its watcher were killed"

# a sparse file costs its size in the workspace quota (so it cannot be grown past it), and its
# blocks only in a checkpoint, there and back
write_policy "$IT_TMP/quota.json" <<EOF2
{"workspace": {"root": "$WS", "quota": "16Mi"}}
EOF2
al_run session start -p "$IT_TMP/quota.json" --owner 0
ID=$AL_OUT
al_run session exec "$ID" -- /bin/sh -c 'rm -rf ./*; truncate -s 2G big 2>/dev/null || echo refused'
assert_eq refused "$AL_OUT" "truncate past the quota is refused"
al_run session exec "$ID" -- /bin/sh -c 'truncate -s 12M sparse; printf data | dd of=sparse bs=1 seek=10000000 conv=notrunc 2>/dev/null'
al_run session checkpoint "$ID" sparse
assert_eq 0 "$AL_RC" "a checkpoint of a sparse file"
used=$(du -sk "$SESSIONS/$ID/checkpoints/sparse" | cut -f1)
assert_true "it takes the file's blocks only (${used} KiB)" test "$used" -lt 1024
al_run session exec "$ID" -- /bin/rm -f sparse
al_run session restore "$ID" sparse
assert_eq 0 "$AL_RC" "the sparse file comes back"
al_run session exec "$ID" -- /bin/sh -c 'stat -c %s sparse; dd if=sparse bs=1 skip=10000000 count=4 2>/dev/null'
assert_eq "$(printf '12582912\ndata')" "$AL_OUT" "with its length and its data"
assert_true "and still sparse on the host" test "$(du -k "$WS/sparse" | cut -f1)" -lt 1024
al_run session exec "$ID" -- /bin/rm -f sparse
al_run session stop "$ID"
assert_clean "after the quota session"

# refused before anything starts
write_policy "$IT_TMP/bad.json" <<EOF2
{"workspace": {"root": "$WS"}, "resources": {"memory": "lots"}}
EOF2
al_run session start -p "$IT_TMP/bad.json"
assert_eq 125 "$AL_RC" "a bad policy is refused"
assert_one_error_line "$AL_ERR" "with one error line"
write_policy "$IT_TMP/t3.json" <<EOF2
{"tier": 3, "workspace": {"root": "$WS"}}
EOF2
al_run session start -p "$IT_TMP/t3.json" --owner 0 --admitted "$IT_TMP/none"
assert_eq 125 "$AL_RC" "a tier 3 policy that is not admitted is refused"
assert_contains "$AL_ERR" "not admitted" "the refusal says why"
# --ttl 0 (or 0s): the session never expires
for ttl in 0 0s; do
	al_run session start -w "$WS" --owner 0 --ttl "$ttl"
	assert_eq 0 "$AL_RC" "--ttl $ttl is accepted"
	ID=$AL_OUT
	al_run session ls --json
	assert_eq "0" "$(json_get "$IT_TMP/al.out" '[s["expires"] for s in d if s["id"] == "'"$ID"'"][0]')" \
		"--ttl $ttl: session ls shows no expiry"
	al_run session stop "$ID"
done
al_run session start -w "$WS" --owner 0 --ttl 1h
ID=$AL_OUT
al_run session ls --json
assert_true "--ttl 1h: session ls shows its expiry" \
	test "$(json_get "$IT_TMP/al.out" '[s["expires"] for s in d if s["id"] == "'"$ID"'"][0]')" -gt "$(date +%s)"
al_run session stop "$ID"
al_run session start --ttl soon
assert_eq 125 "$AL_RC" "a bad TTL is refused"
assert_eq "" "$(ls "$SESSIONS" 2>/dev/null)" "no session folder is left by the refusals"

it_finish
