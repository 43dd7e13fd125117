#!/usr/bin/env bash
# The workspace is the sandbox's to shape, and it stays on the host between runs. Whatever an
# earlier sandbox planted there must not steer a later run's binds: a bind source that resolves
# through a symbolic link is refused, a mount point below a planted link or a planted FIFO is
# refused (quickly, without creating anything on the host), writable binds of system folders or of
# airlock's own state are refused, and the sandbox cannot change the host's device nodes.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

mkdir -p "$IT_TMP/real" "$IT_TMP/data"
ln -s "$IT_TMP/real" "$IT_TMP/link"
al_run run -w "$IT_TMP/link" -- /bin/true
assert_eq 125 "$AL_RC" "a workspace path through a symbolic link is refused"
assert_contains "$AL_ERR" "resolves through a symbolic link to $IT_TMP/real" \
	"the refusal names the real path"

# An earlier run plants a link to the host's /etc where a later policy mounts something.
al_run run -w "$WS" -- /bin/sh -c 'ln -s /oldroot/etc /workspace/sub; ln -s /etc /workspace/sub2'
planted=airlock-planted-$IT_MARK
for sub in sub sub2; do
	policy=$IT_TMP/planted-$sub.json
	write_policy "$policy" <<EOF2
{"workspace": {"root": "$WS"},
 "mounts": [{"source": "$IT_TMP/data", "target": "/workspace/$sub/$planted", "mode": "ro"}]}
EOF2
	it_admit "$policy" # a host folder: tier 3
	al_run run -p "$policy" --admitted "$IT_TMP/admitted" -- /bin/true
	assert_eq 125 "$AL_RC" "a mount point below a planted link ($sub) is refused"
	assert_contains "$AL_ERR" "is not a folder (a symbolic link?)" "the refusal says why ($sub)"
done
assert_eq no "$([ -e "/etc/$planted" ] && echo yes || echo no)" "nothing was created in the host's /etc"

# A FIFO where a file is to be mounted: refused at once, not a hang.
al_run run -w "$WS" -- /bin/sh -c 'mkfifo /workspace/config.json'
policy=$IT_TMP/fifo.json
write_policy "$policy" <<EOF2
{"workspace": {"root": "$WS"},
 "mounts": [{"source": "/etc/hostname", "target": "/workspace/config.json", "mode": "ro"}]}
EOF2
it_admit "$policy"
al_run run -p "$policy" --admitted "$IT_TMP/admitted" -- /bin/true
assert_eq 125 "$AL_RC" "a FIFO planted at a file mount point is refused"
assert_contains "$AL_ERR" "exists and is not a regular file" "the refusal says why"

# /var/lib/airlock is made for the check when the host has none, and removed after it.
made_state=no
[ -e /var/lib/airlock ] || { mkdir /var/lib/airlock && made_state=yes; }
for src in /etc /var/cache /var/lib/airlock; do
	policy=$IT_TMP/rw.json
	write_policy "$policy" <<EOF2
{"workspace": {"root": "$WS"}, "mounts": [{"source": "$src", "target": "/mnt/x", "mode": "rw"}]}
EOF2
	it_admit "$policy" # a writable host folder: tier 3
	al_run run -p "$policy" --admitted "$IT_TMP/admitted" -- /bin/true
	assert_eq 125 "$AL_RC" "a writable bind of $src is refused"
	assert_contains "$AL_ERR" "mounts[0].source: refusing to expose $src" \
		"the refusal names mounts[0].source for $src"
done
# The broker's folder (its vault, its socket) is refused even read-only.
write_policy "$policy" <<EOF2
{"workspace": {"root": "$WS"}, "mounts": [{"source": "/var/lib/airlock", "target": "/mnt/x", "mode": "ro"}]}
EOF2
it_admit "$policy"
al_run run -p "$policy" --admitted "$IT_TMP/admitted" -- /bin/true
assert_eq 125 "$AL_RC" "a read-only bind of the broker's folder is refused"
assert_contains "$AL_ERR" "credential broker's folder" "the refusal says why"
[ "$made_state" = no ] || rmdir /var/lib/airlock
for ws in /etc/cron.d /var/spool /usr/local; do
	al_run run -w "$ws" -- /bin/true
	assert_eq 125 "$AL_RC" "a workspace inside a system tree ($ws) is refused"
done
mkdir -p "$IT_TMP/home"
al_run run -w "$IT_TMP/home" -- /bin/true
assert_eq 0 "$AL_RC" "a folder of one's own is a fine workspace"
HOME=$IT_TMP/home al_run run -w "$IT_TMP/home" -- /bin/true
assert_contains "$AL_ERR" "refusing to expose your home folder" "the home folder itself is refused"
al_run run -w /var/cache -- /bin/true
assert_contains "$AL_ERR" "airlock's own state" "a workspace containing airlock's cache is refused"

before=$(stat -c '%a %Y' /dev/zero)
sb_sh 'chmod 600 /dev/zero 2>&1; touch /dev/zero 2>&1; echo done'
assert_contains "$AL_OUT" "Read-only file system" "the sandbox cannot chmod /dev/zero"
assert_eq "$before" "$(stat -c '%a %Y' /dev/zero)" "the host's /dev/zero is unchanged"

it_finish
