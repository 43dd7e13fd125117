#!/usr/bin/env bash
# The sandbox's filesystem: / is read-only and holds only the system folders; host files outside
# the binds are absent; /tmp is writable and capped at resources.disk; /workspace is the
# workspace folder and writes reach the host; extra mounts are read-only or writable as the
# policy says; /dev holds only harmless devices.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

echo hello-from-host >"$WS/hello.txt"
mkdir -p "$IT_TMP/outside" "$IT_TMP/ro" "$IT_TMP/rw"
echo do-not-read >"$IT_TMP/outside/secret.txt"
echo ro-data >"$IT_TMP/ro/data.txt"
echo rw-data >"$IT_TMP/rw/data.txt"
policy=$IT_TMP/policy.json
write_policy "$policy" <<EOF2
{
	"workspace": {"root": "$WS"},
	"mounts": [
		{"source": "$IT_TMP/ro", "target": "/opt/it-ro", "mode": "ro"},
		{"source": "$IT_TMP/rw", "target": "/opt/it-rw", "mode": "rw"}
	],
	"resources": {"disk": "8Mi"}
}
EOF2
it_admit "$policy" # a writable host folder: tier 3

# pol_sh SCRIPT: runs SCRIPT in the sandbox of $policy.
pol_sh()
{
	al_run run -p "$policy" --admitted "$IT_TMP/admitted" -- /bin/sh -c "$1" "$IT_MARK"
}

pol_sh 'cat /workspace/hello.txt'
assert_eq hello-from-host "$AL_OUT" "/workspace shows the workspace folder"
pol_sh 'echo from-sandbox > /workspace/out.txt'
assert_eq 0 "$AL_RC" "the command may write to /workspace"
assert_eq from-sandbox "$(cat "$WS/out.txt" 2>/dev/null)" "a write to /workspace reaches the host"

pol_sh "cat $IT_TMP/outside/secret.txt 2>/dev/null || echo absent"
assert_eq absent "$AL_OUT" "a host file outside the binds is not visible at its host path"
for path in /root /home /var /boot /srv /etc/shadow /etc/gshadow /etc/ssh /etc/sudoers; do
	pol_sh "if [ -e $path ]; then echo present; ls -A $path 2>&1 | head -n 5; else echo absent; fi"
	assert_eq absent "$AL_OUT" "host path $path does not exist in the sandbox"
done
pol_sh 'cat /etc/shadow >/dev/null 2>&1 && echo readable || echo unreadable'
assert_eq unreadable "$AL_OUT" "/etc/shadow is unreadable"
pol_sh 'test -r /etc/passwd && test -r /etc/ld.so.cache && echo present'
assert_eq present "$AL_OUT" "/etc has passwd and ld.so.cache"

for path in /it-newfile /usr/it-newfile /etc/it-newfile; do
	pol_sh "touch $path 2>&1 && echo written"
	assert_contains "$AL_OUT" "Read-only file system" "creating $path fails: / is read-only"
	assert_not_contains "$AL_OUT" written "creating $path does not succeed"
done
pol_sh 'echo x >> /etc/passwd 2>/dev/null && echo written || echo refused'
assert_eq refused "$AL_OUT" "/etc/passwd cannot be appended to"

pol_sh 'echo scratch > /tmp/f && cat /tmp/f'
assert_eq scratch "$AL_OUT" "/tmp is writable"
pol_sh 'dd if=/dev/zero of=/tmp/big bs=1M count=16 2>&1; echo "dd=$?"'
assert_contains "$AL_OUT" "No space left on device" "writing 16 MiB to /tmp with disk 8Mi hits ENOSPC"
assert_not_contains "$AL_OUT" "dd=0" "the oversized write fails"
pol_sh 'dd if=/dev/zero of=/tmp/small bs=1M count=4 2>/dev/null && echo fits'
assert_eq fits "$AL_OUT" "4 MiB fit in /tmp with disk 8Mi"

pol_sh 'cat /opt/it-ro/data.txt'
assert_eq ro-data "$AL_OUT" "a ro mount is readable"
pol_sh 'touch /opt/it-ro/new 2>&1; echo x >> /opt/it-ro/data.txt 2>&1; echo done'
assert_contains "$AL_OUT" "Read-only file system" "a ro mount refuses writes"
assert_eq ro-data "$(cat "$IT_TMP/ro/data.txt")" "the host file behind a ro mount is unchanged"
assert_false "a ro mount creates no file on the host" test -e "$IT_TMP/ro/new"
pol_sh 'cat /opt/it-rw/data.txt && echo from-sandbox > /opt/it-rw/new'
assert_eq rw-data "$AL_OUT" "a rw mount is readable"
assert_eq from-sandbox "$(cat "$IT_TMP/rw/new" 2>/dev/null)" "a write to a rw mount reaches the host"

pol_sh 'ls -A /dev | tr "\n" " "'
devs=$AL_OUT
for dev in null zero full random urandom tty ptmx pts shm fd stdin stdout stderr; do
	assert_contains " $devs" " $dev " "/dev/$dev exists"
done
for dev in mem kmem port kmsg sda vda nvme0 loop0 fuse net; do
	assert_not_contains " $devs" " $dev " "/dev/$dev does not exist"
done
pol_sh 'echo x > /dev/null && head -c 4 /dev/zero | wc -c'
assert_eq 4 "$AL_OUT" "/dev/null and /dev/zero work"

pol_sh 'test -d /proc/self && test -e /proc/1/status && echo ok'
assert_eq ok "$AL_OUT" "/proc is mounted"
pol_sh 'test -e /sys/kernel && echo sys-present || echo sys-absent'
assert_eq sys-absent "$AL_OUT" "/sys is not mounted"

it_finish
