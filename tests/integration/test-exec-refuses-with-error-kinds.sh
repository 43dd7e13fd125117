#!/usr/bin/env bash
# airlock exec answers every refusal with a result: an error of one kind (invalid_request,
# unsupported_language, unsupported_policy, setup_failed) and a message naming the problem, exit
# status 125, one "airlock:" line on stderr at most, and nothing run or left behind. Also
# `airlock capabilities --json`, which says in advance what the machine can enforce.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

REQ=$IT_TMP/request.json
RES=$IT_TMP/al.out
MARKER=$IT_TMP/ran

ex()
{
	printf '%s' "$1" >"$REQ"
	al_run exec --request "$REQ"
}

# refused KIND MESSAGE-PART WHAT: the last result is an error of KIND whose message contains
# MESSAGE-PART, and nothing ran.
refused()
{
	assert_eq 125 "$AL_RC" "$3: exit status 125"
	assert_eq "$1" "$(json_get "$RES" 'd["error"]["kind"]')" "$3: kind $1"
	assert_contains "$(json_get "$RES" 'd["error"]["message"]')" "$2" "$3: the message names it"
	assert_eq '["src:env:airlock"]' "$(json_get "$RES" 'd["labels"]')" "$3: labelled"
	assert_false "$3: nothing ran" test -e "$MARKER"
}

touch_marker="import pathlib; pathlib.Path('$MARKER').touch()"


ex '{"language": "python", "code": "print(1)"}'
refused invalid_request "timeout" "a request without a timeout"
ex '{"language": "python", "code": "print(1)", "timeout": 5, "tmieout": 5}'
refused invalid_request "tmieout: unknown field" "an unknown field"
ex '{"language": "cobol", "code": "x", "timeout": 5}'
refused invalid_request "language" "an unknown language"
ex '{"language": "python", "code": "print(1)", "timeout": 5'
refused invalid_request "JSON" "malformed JSON"
ex '{"language": "command", "code": "print(1)", "timeout": 5}'
refused invalid_request "argv" "a command without argv"
ex '{"language": "shell", "code": "true", "timeout": 5, "files": [{"path": "../escape", "content": "x"}]}'
refused invalid_request "files[0].path" "a file outside the workspace"
ex '{"language": "shell", "code": "true", "timeout": 5, "memory": "lots"}'
refused invalid_request "memory" "a bad memory size"
ex '{"language": "shell", "code": "true", "timeout": 5, "env": {"AIRLOCK_RESULT": "/etc/passwd"}}'
refused invalid_request "AIRLOCK_" "airlock's own variables"
ex '{"language": "shell", "code": "true", "timeout": 5, "policy": {"workspace": {"root": "'"$WS"'"}, "resources": {"memory": "lots"}}}'
refused invalid_request "policy" "an invalid inline policy"
head -c $((17 << 20)) /dev/zero | tr '\0' ' ' >"$REQ"
al_run exec --request "$REQ"
refused invalid_request "larger than" "an oversize request"

# a language whose runtime the sandbox would not see
ex '{"language": "typescript", "code": "console.log(1)", "timeout": 5,
     "policy": {"workspace": {"root": "'"$WS"'"}, "env": {"PATH": "/nowhere"}}}'
refused unsupported_language "tsx, ts-node" "typescript without a runner"
ex '{"language": "python", "code": "'"$touch_marker"'", "timeout": 5,
     "policy": {"workspace": {"root": "'"$WS"'"}, "env": {"PATH": "/nowhere"}}}'
refused unsupported_language "python3" "python absent from the sandbox's PATH"

# a policy that cannot be enforced, or that forbids the runtime
ex '{"language": "python", "code": "'"$touch_marker"'", "timeout": 5,
     "policy": {"workspace": {"root": "'"$WS"'"}, "isolation": [{"type": "gvisor"}]}}'
refused unsupported_policy "gvisor" "an isolation this machine cannot enforce"
ex '{"language": "python", "code": "'"$touch_marker"'", "timeout": 5,
     "policy": {"workspace": {"root": "'"$WS"'"}, "executables": ["/bin/sh"]}}'
refused unsupported_policy "executables" "an allow list without the runtime"
ex '{"language": "python", "code": "'"$touch_marker"'", "timeout": 5,
     "policy": {"workspace": {"root": "'"$WS"'"}, "tier": 3}}'
refused unsupported_policy "not admitted" "a tier 3 policy that is not admitted"

# a sandbox that cannot be set up: the mount's source is checked when the sandbox is built (one in
# /usr, which every sandbox sees anyway, needs no admission)
ex '{"language": "python", "code": "'"$touch_marker"'", "timeout": 5,
     "policy": {"workspace": {"root": "'"$WS"'"},
                "mounts": [{"source": "/usr/airlock-it-no-such-folder", "target": "/opt/v", "mode": "ro"}]}}'
refused setup_failed "no-such-folder" "a mount whose source does not exist"

# a request's files are written by the sandbox itself, under the workspace's rules, before the
# program starts: never into a protected path, never through a link, never onto a FIFO
mkdir -p "$IT_TMP/victim" "$IT_TMP/filesws"
ln -s "$IT_TMP/victim" "$IT_TMP/filesws/a"
mkfifo "$IT_TMP/filesws/fifo"
for f in .git/hooks/pre-commit a/planted/evil.txt fifo; do
	ex '{"language": "python", "code": "'"$touch_marker"'", "timeout": 5, "workspace": "'"$IT_TMP/filesws"'",
	     "files": [{"path": "'"$f"'", "content": "x"}]}'
	refused setup_failed "files" "a file at $f"
done
assert_eq "" "$(ls -A "$IT_TMP/victim")" "nothing was written through the link"
assert_false "no hook was written, nor the folders made for it" test -e "$IT_TMP/filesws/.git"
assert_false "nothing ran" test -e "$MARKER"

# --policy-dir: the operator forwards requests that are not its own. A request may then only name a
# policy file of the folder: an inline policy (it could run a command source on the host) and a
# request's workspace (it could make any host folder writable) are refused, unless the operator
# allows them on the command line. Names are opened beneath the folder only: a symbolic link is
# not followed, a FIFO is refused without waiting for a writer.
PDIR=$IT_TMP/pdir
HOSTILE=$IT_TMP/hostile-ran
mkdir -p "$PDIR" "$IT_TMP/victim-ssh"
write_policy "$PDIR/plain.json" <<EOF2
{"id": "plain", "workspace": {"root": "$WS"}}
EOF2
printf '%s\n' '{"id": "outside", "workspace": {"root": "'"$WS"'"}}' >"$IT_TMP/outside.json"
ln -s "$IT_TMP/outside.json" "$PDIR/link.json"
mkfifo "$PDIR/fifo.json"
exd()
{
	printf '%s' "$1" >"$REQ"
	shift
	al_run exec --policy-dir "$PDIR" "$@" --request "$REQ"
}
cmd_policy='{"workspace": {"root": "'"$WS"'"}, "tier": 1,
   "credentials": [{"name": "c", "source": {"type": "command", "command": ["/bin/sh", "-c", "id > '"$HOSTILE"'"]},
                    "injection": {"type": "env_var", "var_name": "C"}, "hosts": ["api.example.com"]}]}'
exd '{"language": "python", "code": "'"$touch_marker"'", "timeout": 5, "policy": '"$cmd_policy"'}'
refused unsupported_policy "--allow-request-policy" "--policy-dir: an inline policy with a command source"
assert_false "--policy-dir: the command source did not run on the host" test -e "$HOSTILE"
exd '{"language": "python", "code": "'"$touch_marker"'", "timeout": 5, "workspace": "'"$IT_TMP/victim-ssh"'",
      "files": [{"path": "authorized_keys", "content": "ssh-ed25519 AAAA attacker"}]}'
refused unsupported_policy "--allow-request-workspace" "--policy-dir: a request's workspace"
assert_eq "" "$(ls -A "$IT_TMP/victim-ssh")" "--policy-dir: nothing was written into the host folder"
exd '{"language": "python", "code": "'"$touch_marker"'", "timeout": 5, "policy": "link.json"}'
refused unsupported_policy "link.json" "--policy-dir: a symbolic link in the folder"
start=$(date +%s)
exd '{"language": "python", "code": "'"$touch_marker"'", "timeout": 5, "policy": "fifo.json"}'
refused unsupported_policy "not a regular file" "--policy-dir: a FIFO in the folder"
assert_true "--policy-dir: the FIFO was refused at once" test $(($(date +%s) - start)) -lt 5
exd '{"language": "shell", "code": "echo plain", "timeout": 5, "policy": "plain.json"}'
assert_eq "0 plain" "$AL_RC $(json_get "$RES" 'd["stdout"].strip()')" "--policy-dir: a plain policy file of the folder runs"
exd '{"language": "shell", "code": "echo inline", "timeout": 5, "policy": {"workspace": {"root": "'"$WS"'"}}}' \
	--allow-request-policy
assert_eq "0 inline" "$AL_RC $(json_get "$RES" 'd["stdout"].strip()')" "--allow-request-policy: an inline policy runs"
exd '{"language": "shell", "code": "echo ws > seen; cat seen", "timeout": 5, "workspace": "'"$IT_TMP/victim-ssh"'"}' \
	--allow-request-workspace
assert_eq "0 ws" "$AL_RC $(json_get "$RES" 'd["stdout"].strip()')" "--allow-request-workspace: a request's workspace is used"
al_run exec -p "$PDIR/plain.json" --allow-request-policy --request "$REQ"
assert_eq 125 "$AL_RC" "--allow-request-policy with --policy is refused"
assert_one_error_line "$AL_ERR" "... with one error line"

# capabilities: what this machine can enforce, probed; the languages present
al_run capabilities --json
assert_eq 0 "$AL_RC" "capabilities --json exits 0"
assert_eq "True True True True True True" \
	"$(json_get "$RES" '" ".join(str(d["namespaces"][k]) for k in ["user", "mount", "pid", "net", "ipc", "uts"])')" \
	"capabilities: the namespaces"
assert_eq "True True True True" \
	"$(json_get "$RES" '"%s %s %s %s" % (d["seccomp"], d["fuse"], d["network_policy"], d["tls_interception"])')" \
	"capabilities: seccomp, FUSE, network policy and TLS interception (as root)"
assert_eq true "$(json_get "$RES" 'd["cgroups"]["version"] in (1, 2) and "memory" in d["cgroups"]["controllers"] and d["cgroups"]["limits"]')" \
	"capabilities: cgroup version, controllers and limits"
assert_eq true "$(json_get "$RES" 'd["landlock_abi"] is None or d["landlock_abi"] >= 1')" "capabilities: landlock ABI"
assert_eq "/usr/bin/python3 True" "$(json_get "$RES" '"%s %s" % (d["languages"]["python"], d["languages"]["command"])')" \
	"capabilities: the languages, with the runtime the sandbox would use"
assert_eq "/usr/bin/ts-node /usr/bin/node" "$(json_get "$RES" '"%s %s" % (d["languages"]["typescript"], d["languages"]["wasm"])')" \
	"capabilities: typescript (Debian's ts-node) and wasm (node's WASI)"
assert_eq true "$(json_get "$RES" 'd["persistent_sessions"]')" "capabilities: persistent sessions"

# every error kind has its one "airlock:" line on stderr too (the result on stdout stays as it is)
for kind_req in \
	'invalid_request|{"language": "python", "code": "print(1)"}' \
	'invalid_request|{"language": "shell", "code": "true", "timeout": 5, "policy": {"workspace": {"root": "'"$WS"'"}, "resources": {"memory": "lots"}}}' \
	'unsupported_language|{"language": "typescript", "code": "console.log(1)", "timeout": 5, "policy": {"workspace": {"root": "'"$WS"'"}, "env": {"PATH": "/nowhere"}}}' \
	'unsupported_policy|{"language": "python", "code": "print(1)", "timeout": 5, "policy": {"workspace": {"root": "'"$WS"'"}, "tier": 3}}' \
	'setup_failed|{"language": "python", "code": "print(1)", "timeout": 5, "policy": {"workspace": {"root": "'"$WS"'"}, "mounts": [{"source": "/usr/airlock-it-no-such-folder", "target": "/opt/v", "mode": "ro"}]}}'; do
	kind=${kind_req%%|*}
	ex "${kind_req#*|}"
	assert_eq "125 $kind" "$AL_RC $(json_get "$RES" 'd["error"]["kind"]')" "$kind: the result says it"
	assert_one_error_line "$AL_ERR" "$kind: and one airlock: line on stderr"
	assert_contains "$AL_ERR" "$(json_get "$RES" 'd["error"]["message"]')" "$kind: the line is the result's message"
done

it_finish
