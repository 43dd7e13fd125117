#!/usr/bin/env bash
# airlock exec's fresh workspaces live in a folder of the caller's only (mode 0700). Another user
# who makes $TMPDIR/airlock-exec-UID first (a folder or a link) must not block exec for good: root's
# go in /run/airlock-exec, which no one else can make; a user's in $XDG_RUNTIME_DIR/airlock-exec
# when it is set; else $TMPDIR/airlock-exec-UID, and when someone else holds that, a folder of the
# user's own in $TMPDIR, removed afterwards. The workspaces of exec runs whose airlock was killed
# are removed by the next exec wherever they are.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
command -v setpriv >/dev/null || it_skip "setpriv (util-linux) is missing"

REQ=$IT_TMP/request.json
printf '{"language": "shell", "timeout": 10, "code": "echo hi > made; cat made"}' >"$REQ"
chmod 644 "$REQ"
# a pid that has ended: a killed exec's
dead_pid=$(sh -c 'echo $$')

# --- root: another user made root's $TMPDIR/airlock-exec-0 first
roottmp=$IT_TMP/roottmp
mkdir -m 1777 "$roottmp"
mkdir "$roottmp/airlock-exec-0"
chown 65534:65534 "$roottmp/airlock-exec-0"
TMPDIR=$roottmp al_run exec --request "$REQ"
assert_eq "0 hi" "$AL_RC $(json_get "$IT_TMP/al.out" 'd["stdout"].strip()')" \
	"root's exec works while another user holds \$TMPDIR/airlock-exec-0" || it_log "$AL_OUT $AL_ERR"
rmdir "$roottmp/airlock-exec-0"
ln -s /etc "$roottmp/airlock-exec-0"
TMPDIR=$roottmp al_run exec --request "$REQ"
assert_eq "0 hi" "$AL_RC $(json_get "$IT_TMP/al.out" 'd["stdout"].strip()')" \
	"... or a link there"
assert_eq "" "$(find "$roottmp" -mindepth 1 ! -name airlock-exec-0)" "nothing of root's is left in \$TMPDIR"
rm "$roottmp/airlock-exec-0"
# a killed exec's workspace in /run/airlock-exec goes with the next exec
mkdir -p -m 700 /run/airlock-exec
stale=/run/airlock-exec/$dead_pid-it$RANDOM
mkdir -m 700 "$stale"
TMPDIR=$roottmp al_run exec --request "$REQ"
assert_eq 0 "$AL_RC" "root's exec with a stale workspace in /run/airlock-exec"
assert_false "the stale workspace in /run/airlock-exec is removed" test -e "$stale"
rmdir /run/airlock-exec 2>/dev/null
assert_eq "" "$(find "$roottmp" -mindepth 1)" "root's exec left nothing in \$TMPDIR"

# --- uid 65534: someone else made its $TMPDIR/airlock-exec-65534 first
max_userns=$(cat /proc/sys/user/max_user_namespaces 2>/dev/null || echo 0)
if [ "$max_userns" -eq 0 ] || ! "${nobody[@]}" unshare -U true 2>/dev/null; then
	it_log "# skipped the unprivileged part: no user namespaces for uid 65534"
	it_finish
fi
bin=$IT_TMP/bin
mkdir -p "$bin"
install -m 755 "$AIRLOCK" "$bin/airlock"
nbtmp=$IT_TMP/nbtmp
mkdir -m 1777 "$nbtmp"
mkdir -m 700 "$nbtmp/airlock-exec-65534"
# a killed exec's own folder in $TMPDIR (the last resort), and a look-alike of someone else's
mkdir -m 700 "$nbtmp/airlock-exec-65534-$dead_pid-abcdef" "$nbtmp/airlock-exec-65534-$dead_pid-other"
chown 65534:65534 "$nbtmp/airlock-exec-65534-$dead_pid-abcdef"
# nb ENV... : `airlock exec` as uid 65534 with the environment ENV.
nb()
{
	(cd / && "$ITRUN" -t "$IT_WATCHDOG" -- "${nobody[@]}" env -i PATH=/usr/bin:/bin \
		"AIRLOCK_IT_RUN=$AIRLOCK_IT_RUN" "$@" \
		"$bin/airlock" exec --request "$REQ") >"$IT_TMP/al.out" 2>"$IT_TMP/al.err"
	AL_RC=$?
	AL_OUT=$(cat "$IT_TMP/al.out")
	AL_ERR=$(cat "$IT_TMP/al.err")
}
# The fresh workspace is made before the sandbox: on a host that cannot enforce the default
# policy's limits for an unprivileged user (cgroup v1, nothing delegated) the run is refused
# later, for that reason only.
made_workspace()
{
	if [ "$AL_RC" = 0 ]; then
		assert_eq hi "$(json_get "$IT_TMP/al.out" 'd["stdout"].strip()')" "$1: it ran"
	else
		assert_contains "$(json_get "$IT_TMP/al.out" 'd["error"]["message"]')" "cgroup" \
			"$1: (refused later, for the cgroup limits only: $(json_get "$IT_TMP/al.out" 'd["error"]["message"]'))"
		assert_not_contains "$AL_OUT" "airlock-exec" "$1: not for its workspace's folder"
	fi
}
nb TMPDIR="$nbtmp"
made_workspace "uid 65534's exec while root holds \$TMPDIR/airlock-exec-65534"
assert_false "... the killed exec's folder of its own is removed" test -e "$nbtmp/airlock-exec-65534-$dead_pid-abcdef"
assert_true "... someone else's look-alike is not" test -d "$nbtmp/airlock-exec-65534-$dead_pid-other"
assert_eq "$(printf '%s\n' "$nbtmp/airlock-exec-65534" "$nbtmp/airlock-exec-65534-$dead_pid-other")" \
	"$(find "$nbtmp" -mindepth 1 | sort)" "... and its own workspace is removed afterwards"

# With $XDG_RUNTIME_DIR (the user's own 0700 folder), the workspaces go there.
nbrun=$IT_TMP/nbrun
mkdir -m 700 -p "$nbrun/airlock-exec/$dead_pid-abcdef"
chown -R 65534:65534 "$nbrun"
chmod 700 "$nbrun/airlock-exec"
nb TMPDIR="$nbtmp" XDG_RUNTIME_DIR="$nbrun"
made_workspace "uid 65534's exec with \$XDG_RUNTIME_DIR"
assert_false "... a killed exec's workspace in \$XDG_RUNTIME_DIR/airlock-exec is removed" \
	test -e "$nbrun/airlock-exec/$dead_pid-abcdef"
assert_eq "" "$(find "$nbrun" -mindepth 1)" "... and its base with its last workspace"
assert_eq "$(printf '%s\n' "$nbtmp/airlock-exec-65534" "$nbtmp/airlock-exec-65534-$dead_pid-other")" \
	"$(find "$nbtmp" -mindepth 1 | sort)" "... nothing in \$TMPDIR"

it_finish
