#!/usr/bin/env bash
# workspace.read/write/deny decide per path: a write outside "write" gets EACCES (EROFS when
# nothing is writable), a denied path is hidden and cannot be made, files the host runs later are
# write-protected unless the policy names them, rename and link targets obey the rules, a folder
# whose contents the rules would see differently elsewhere is not moved whole (EXDEV), the quota
# gives ENOSPC and shows in statfs, and every access and denial is audited and counted.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

mkdir -p "$WS/src" "$WS/docs" "$WS/secret" "$WS/.git/hooks" "$WS/.vscode" "$WS/sub/.git"
echo code >"$WS/src/main.c"
echo doc >"$WS/docs/readme"
echo key >"$WS/secret/key"
echo env >"$WS/src/.env"
echo cfg >"$WS/.git/config"
echo hook >"$WS/.git/hooks/pre-commit"
echo sub >"$WS/sub/.git/config"
echo rc >"$WS/.bashrc"
audit=$IT_TMP/audit.jsonl
policy=$IT_TMP/rules.json
write_policy "$policy" <<EOF2
{"workspace": {"root": "$WS", "read": ["**"], "write": ["src/**", "out/**", ".bashrc", ".git/**"],
               "deny": ["**/.env", "secret"]}}
EOF2

probe='
try() { if eval "$1" 2>/tmp/e; then echo "$2: ok"; else echo "$2: $(sed "s/.*: //" /tmp/e)"; fi; }
cd /workspace
try "echo x >>src/main.c" write-allowed
try "echo x >docs/readme" write-outside-list
try "echo x >docs/new" create-outside-list
try "rm docs/readme" remove-outside-list
try "chmod 600 docs/readme" chmod-outside-list
try "touch -d 2001-01-01 docs/readme" utime-outside-list
try "mv src/main.c docs/main.c" rename-into-read-only
try "ln src/main.c docs/link" link-into-read-only
try "ln docs/readme src/link" link-of-read-only-file
try "cat src/.env" read-denied
try "test \$(ls -a src | grep -c env) = 0" list-hides-denied
try "echo x >src/.env" create-denied
try "mv src/main.c src/.env" rename-onto-denied
try "ls secret" denied-folder
try "cat secret/key" below-denied-folder
try "printf \"[core]\\\\n\\\\tfsmonitor = x\\\\n\" >.git/config" git-config-checked
try "echo x >sub/.git/config" nested-git-config-protected
try "echo x >.git/hooks/pre-commit" hook-protected
try "echo x >.git/hooks/post-checkout" new-hook-protected
try "echo x >.bashrc" bashrc-lifted-by-name
try "mkdir -p .vscode && echo x >.vscode/settings.json" vscode-protected
try "mkdir -p src/a && mv src/a src/b" rename-plain-folder
'
al_run run -p "$policy" --audit "$audit" --json -- /bin/sh -c "$probe"
assert_eq 0 "$AL_RC" "the rules probe ran"
out=$(json_get "$IT_TMP/al.out" 'd["stdout"]')
expect() { assert_contains "$out" "$1: $2" "$3"; }
expect write-allowed ok "a path in workspace.write can be written"
expect write-outside-list "Permission denied" "writing a path outside workspace.write gets EACCES"
expect create-outside-list "Permission denied" "creating outside workspace.write gets EACCES"
expect remove-outside-list "Permission denied" "removing outside workspace.write gets EACCES"
expect chmod-outside-list "Permission denied" "chmod outside workspace.write gets EACCES"
expect utime-outside-list "Permission denied" "changing times outside workspace.write gets EACCES"
expect rename-into-read-only "Permission denied" "a rename target obeys the rules"
expect link-into-read-only "Permission denied" "a link target obeys the rules"
expect link-of-read-only-file "Permission denied" "a new name for a read-only file cannot be made"
expect read-denied "No such file or directory" "a denied path is hidden (ENOENT)"
expect list-hides-denied ok "a listing does not show a denied path"
expect create-denied "Permission denied" "a denied path cannot be created"
expect rename-onto-denied "Permission denied" "nothing can be renamed onto a denied path"
expect denied-folder "No such file or directory" "a denied folder is hidden"
expect below-denied-folder "No such file or directory" "everything below a denied folder is hidden"
# .git/config is content-checked: the write goes to a copy, refused at its release (close()
# does not report it; the host's file and the violation do).
expect nested-git-config-protected "Permission denied" "a nested repository's .git/config too"
expect hook-protected "Permission denied" "existing git hooks are write-protected"
expect new-hook-protected "Permission denied" "new git hooks cannot be made"
expect bashrc-lifted-by-name ok "naming .bashrc in workspace.write lifts its protection"
expect vscode-protected "Permission denied" ".vscode/** is write-protected"
expect rename-plain-folder ok "a folder whose contents keep their rules moves whole"
assert_eq "cfg" "$(cat "$WS/.git/config")" "the host's .git/config is unchanged"
assert_eq "hook" "$(cat "$WS/.git/hooks/pre-commit")" "the host's hook is unchanged"
assert_eq no "$([ -e "$WS/.git/hooks/post-checkout" ] && echo yes || echo no)" "no new hook on the host"

# Violations in the result, and the audit stream.
viol=$(json_get "$IT_TMP/al.out" '" ".join(v["kind"] + ":" + v["detail"] for v in d["violations"])')
assert_contains "$viol" "fs:open sub/.git/config" "workspace denials are counted as violations in --json"
assert_contains "$viol" "fs:write .git/config: core.fsmonitor" "a refused config key is named"
assert_contains "$viol" "fs:lookup src/.env" "looking up a hidden path counts too"
assert_true "the audit file exists" test -s "$audit"
python3 - "$audit" >"$IT_TMP/audit.check" <<'EOF2'
import json, sys
events = [json.loads(l) for l in open(sys.argv[1])]
fs = [e for e in events if e.get("kind") == "fs"]
def has(**kw):
    return any(all(e.get(k) == v for k, v in kw.items()) for e in fs)
print("fields", all({"time", "sandbox", "op", "path", "pid", "verdict"} <= set(e) for e in fs))
print("deny-git", has(op="write", path=".git/config: core.fsmonitor", verdict="deny", error="EACCES"))
print("deny-hidden", has(path="src/.env", verdict="deny"))
print("open", has(op="open", path="src/main.c", verdict="allow", write=True))
print("write", any(e.get("op") == "write" and e.get("path") == "src/main.c" and e.get("bytes", 0) >= 2 for e in fs))
print("rename", has(op="rename", path="src/a", to="src/b", verdict="allow"))
print("create", has(op="mkdir", path="src/a", verdict="allow"))
print("pids", all(isinstance(e["pid"], int) and e["pid"] > 0 for e in fs))
EOF2
for k in fields deny-git deny-hidden open write rename create pids; do
	assert_eq "$k True" "$(grep "^$k " "$IT_TMP/audit.check")" "audit: $k"
done

# With everything writable, .git still cannot move whole: its contents would leave their
# checks (mv it, write g2/config, mv it back). EXDEV makes mv copy file by file instead, and the
# copy of config is checked like any write to it (the sandbox may remove .git/config now).
write_policy "$policy" <<EOF2
{"workspace": {"root": "$WS"}}
EOF2
al_run run -p "$policy" --json -- /bin/sh -c 'cd /workspace; mv -T .git g2; echo x >g2/config 2>/dev/null
	mv -T g2 .git'
viol=$(json_get "$IT_TMP/al.out" '" ".join(v["kind"] + ":" + v["detail"] for v in d["violations"])')
assert_contains "$viol" "fs:rename .git" "renaming .git whole is refused"
assert_ne "x" "$(cat "$WS/.git/config" 2>/dev/null)" "after mv .git g2, write, mv back: .git/config is not the sandbox's"

# Nothing writable at all: EROFS.
write_policy "$policy" <<EOF2
{"workspace": {"root": "$WS", "write": []}}
EOF2
al_run run -p "$policy" -- /bin/sh -c 'echo x >/workspace/src/main.c'
assert_contains "$AL_ERR" "Read-only file system" "with nothing writable, writes get EROFS"

# read restricts what is visible; folders leading to readable paths stay visible.
write_policy "$policy" <<EOF2
{"workspace": {"root": "$WS", "read": ["src/*.c"], "write": ["src/*.c"]}}
EOF2
al_run run -p "$policy" -- /bin/sh -c 'cd /workspace; ls | tr "\n" " "; echo; ls src | tr "\n" " "'
assert_eq "src 
main.c " "$AL_OUT" "only readable paths and the folders leading to them are visible"

# Quota: ENOSPC past it, and statfs shows it. With the kernel's write-back cache the error comes
# when the data is written back: fsync (conv=fsync) is where a careful program sees it.
rm -rf "$WS"
mkdir "$WS"
write_policy "$policy" <<EOF2
{"workspace": {"root": "$WS", "quota": "8Mi"}}
EOF2
al_run run -p "$policy" -- /bin/sh -c '
	df -k /workspace | awk "NR==2 {print \$2}"
	dd if=/dev/zero of=/workspace/a bs=1M count=6 2>/dev/null && sync && echo first-ok
	dd if=/dev/zero of=/workspace/b bs=1M count=6 conv=fsync 2>&1 | grep -o "No space left on device" | head -1
	sync; rm /workspace/a; sync
	dd if=/dev/zero of=/workspace/c bs=1M count=1 conv=fsync 2>/dev/null && echo after-rm-ok'
lines=($AL_OUT)
assert_eq 8192 "${lines[0]}" "statfs reports the quota as the size"
assert_contains "$AL_OUT" "first-ok" "writing within the quota works"
assert_contains "$AL_OUT" "No space left on device" "writing past the quota gets ENOSPC"
assert_contains "$AL_OUT" "after-rm-ok" "removing a file gives its space back"

it_finish
