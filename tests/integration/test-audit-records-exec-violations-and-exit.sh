#!/usr/bin/env bash
# The audit stream (policy "audit" or --audit) gets one JSON line per event: exec, each seccomp
# violation (the first ten of a kind one by one, then every power of ten, so a sandbox cannot
# flood it), and exit. A policy naming an audit file that cannot be opened is refused.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

audit=$IT_TMP/audit.jsonl
al_run run -w "$WS" --audit "$audit" -- /bin/sh -c \
	'i=0; while [ $i -lt 150 ]; do unshare -U true 2>/dev/null; i=$((i + 1)); done; exit 4'
assert_eq 4 "$AL_RC" "the command's status comes through"
summary=$("$IT_PY" - "$audit" <<'PY'
import json, sys
events = [json.loads(l) for l in open(sys.argv[1])]
kinds = [e["kind"] for e in events]
counts = [e["count"] for e in events if e["kind"] == "violation"]
ids = {e["sandbox"] for e in events}
print("kinds=%s,%s" % (kinds[0], kinds[-1]))
print("violations=%d" % kinds.count("violation"))
print("counts=%s" % " ".join(map(str, counts)))
print("same_sandbox=%s" % (len(ids) == 1))
print("argv=%s" % " ".join(events[0]["argv"][:1]))
print("exit=%s" % events[-1]["exit_code"])
print("syscall=%s" % events[1]["syscall"])
print("time=%s" % all(e["time"].endswith("Z") for e in events))
PY
)
get()
{
	sed -n "s/^$1=//p" <<<"$summary" | head -n 1
}
assert_eq "exec,exit" "$(get kinds)" "the stream starts with exec and ends with exit"
assert_eq 11 "$(get violations)" "150 denied calls give 11 violation events, not 150"
assert_eq "1 2 3 4 5 6 7 8 9 10 100" "$(get counts)" "each violation event carries its count"
assert_eq True "$(get same_sandbox)" "every event names the same sandbox"
assert_eq /bin/sh "$(get argv)" "the exec event has the command"
assert_eq 4 "$(get exit)" "the exit event has the exit code"
assert_eq unshare "$(get syscall)" "the violation names the system call"
assert_eq True "$(get time)" "events carry UTC timestamps"
assert_eq 600 "$(stat -c %a "$audit")" "the audit file is private (0600)"

# More distinct violations than the result keeps one by one: 300 refused writes, each to its own
# name, then an unshare(). The result still says which contracts were touched (red team 2: the
# unshare was counted as the seccomp contract once 255 were kept).
write_policy "$IT_TMP/ro.json" <<EOF
{"workspace": {"root": "$WS", "write": []}}
EOF
al_run run -p "$IT_TMP/ro.json" --json -- /bin/sh -c \
	'i=0; while [ $i -lt 300 ]; do touch "/workspace/w$i" 2>/dev/null; i=$((i + 1)); done; unshare -U true 2>/dev/null; exit 0'
printf '%s' "$AL_OUT" >"$IT_TMP/many.json"
assert_eq true "$(json_get "$IT_TMP/many.json" 'any(v["contract"] == "namespace" and v["kind"] == "seccomp" for v in d["violations"])')" \
	"after 300 refused writes, the unshare is still the namespace contract's"
assert_eq true "$(json_get "$IT_TMP/many.json" 'all((v["contract"] == "workspace") == (v["kind"] == "fs") for v in d["violations"])')" \
	"and every kept violation has its own kind's contract"
assert_eq 300 "$(json_get "$IT_TMP/many.json" 'sum(v["count"] for v in d["violations"] if v["kind"] == "fs")')" \
	"the refused writes are all counted"

al_run run -w "$WS" --audit /nonexistent-dir/audit.jsonl -- /bin/sh -c "touch /workspace/ran"
assert_eq 125 "$AL_RC" "an audit file that cannot be opened is refused"
assert_contains "$AL_ERR" "audit: cannot open /nonexistent-dir/audit.jsonl" "the refusal names the file"
assert_eq no "$([ -e "$WS/ran" ] && echo yes || echo no)" "nothing ran without its audit stream"

it_finish
