#!/bin/sh
# airlock demo: what a command can and cannot see from inside the sandbox.
#   airlock run -- /bin/sh /workspace/examples/demo.sh                        (embedded default)
#   airlock run -p examples/demo-policy.json -- /bin/sh /workspace/examples/demo.sh
# Run from the repository root, so that the repository is the workspace. Every check prints
# "OK: ..." when the sandbox holds, "LEAK: ..." when it does not; the exit status is the number
# of leaks. Plain POSIX sh plus coreutils: nothing to install inside.

leaks=0

ok()
{
	printf '%-20s OK: %s\n' "$1" "$2"
}

leak()
{
	printf '%-20s LEAK: %s\n' "$1" "$2"
	leaks=$((leaks + 1))
}

info()
{
	printf '%-20s %s\n' "" "$1"
}

# reason TEXT: the reason at the end of an error message, for "blocked (...)"
reason()
{
	printf '%s\n' "$1" | sed -n '1{s/.*: //;p;}'
}

echo "airlock demo: the view from inside the sandbox"
echo

# ---- who am I ----
init=$(cat /proc/1/comm 2>/dev/null)
if [ "$$" = 2 ] && [ "$init" = airlock-init ]; then
	ok "pid" "I am pid 2; pid 1 is $init"
else
	leak "pid" "I am pid $$, pid 1 is ${init:-unknown} (expected 2 under airlock-init)"
fi

n=0
pids=""
for d in /proc/[0-9]*; do
	n=$((n + 1))
	pids="$pids ${d#/proc/}"
done
if [ "$n" -le 3 ]; then
	ok "processes" "I see $n processes:$pids (none of the host's)"
else
	leak "processes" "I see $n processes: the host's are visible"
fi

host=$(cat /proc/sys/kernel/hostname)
if [ "$host" = airlock ]; then
	ok "hostname" "$host"
else
	leak "hostname" "$host (the host's name?)"
fi

caps=$(sed -n 's/^CapEff:[[:space:]]*//p' /proc/self/status)
nnp=$(sed -n 's/^NoNewPrivs:[[:space:]]*//p' /proc/self/status)
filter=$(sed -n 's/^Seccomp:[[:space:]]*//p' /proc/self/status)
if [ "$caps" = 0000000000000000 ]; then
	ok "user" "uid $(id -u), no capabilities"
else
	leak "user" "uid $(id -u) with capabilities $caps"
fi
if [ "$nnp" = 1 ] && [ "$filter" = 2 ]; then
	ok "privileges" "no_new_privs set, seccomp filter installed"
else
	leak "privileges" "no_new_privs=$nnp seccomp=$filter"
fi
if (: </dev/tty) 2>/dev/null; then
	leak "terminal" "/dev/tty opens: I could type into your terminal"
else
	ok "terminal" "no controlling terminal"
fi

# airlock passes PATH HOME LANG TERM and the policy's env (here DEMO_GREETING); the shell itself
# may add PWD, OLDPWD, SHLVL and _.
names=$(env | sed -n 's/^\([A-Za-z_][A-Za-z0-9_]*\)=.*/\1/p' | sort | tr '\n' ' ')
extra=""
for name in $names; do
	case " PATH HOME LANG TERM DEMO_GREETING PWD OLDPWD SHLVL _ " in
	*" $name "*) ;;
	*) extra="$extra $name" ;;
	esac
done
if [ -z "$extra" ]; then
	ok "environment" "only: $names"
else
	leak "environment" "also:$extra"
fi
[ -n "${DEMO_GREETING:-}" ] && info "DEMO_GREETING=$DEMO_GREETING"

# ---- files ----
# Writes are tried only inside airlock (pid 1 is its init): run by mistake on a host as root,
# this script must not change the host.
inside=no
[ "$init" = airlock-init ] && inside=yes
if [ -d /workspace ]; then
	ok "workspace" "/workspace has $(ls -A /workspace | wc -l) entries:"
	ls -A /workspace | head -n 8 | sed 's/^/                       /'
else
	leak "workspace" "no /workspace"
fi

# Git hooks run on the host later: the workspace filesystem keeps them read-only unless the
# policy's workspace.write names them.
if [ "$inside" = no ] || [ ! -d /workspace/.git/hooks ]; then
	:
elif out=$( (echo "echo pwned" >/workspace/.git/hooks/pre-commit) 2>&1); then
	leak "git hook" "wrote .git/hooks/pre-commit, which the host would run"
else
	ok "git hook" "write to .git/hooks/pre-commit blocked ($(reason "$out"))"
fi

for f in /etc/shadow /root /home /var/log; do
	if out=$(ls -A "$f" 2>&1); then
		leak "host $f" "readable: $(printf '%s' "$out" | head -n 3 | tr '\n' ' ')"
	else
		ok "host $f" "blocked ($(reason "$out"))"
	fi
done

if [ "$inside" = no ]; then
	leak "write /" "not tried: pid 1 is not airlock-init, this is not a sandbox"
elif out=$(touch /demo-file 2>&1); then
	rm -f /demo-file
	leak "write /" "created /demo-file on the root filesystem"
else
	ok "write /" "blocked ($(reason "$out"))"
fi
if echo scratch >/tmp/demo-file 2>/dev/null; then
	ok "write /tmp" "writable, private tmpfs of $(df -h /tmp | sed -n 2p | tr -s ' ' | cut -d ' ' -f 2)"
else
	leak "write /tmp" "not writable: programs need a scratch folder"
fi
if [ -d /opt/licenses ]; then
	if out=$(touch /opt/licenses/demo-file 2>&1); then
		leak "ro mount" "/opt/licenses is writable"
	else
		ok "ro mount" "/opt/licenses readable ($(ls /opt/licenses | wc -l) files), writes blocked ($(reason "$out"))"
	fi
fi

# ---- network ----
ifaces=$(sed -n '3,$s/^ *\([^:]*\):.*/\1/p' /proc/net/dev | tr '\n' ' ')
if [ "$ifaces" = "lo " ]; then
	ok "interfaces" "only lo"
else
	leak "interfaces" "$ifaces"
fi
# 192.0.2.1 is TEST-NET-1: never a real host. Only tried when lo is all there is, so even a
# broken sandbox sends nothing off this machine.
if [ "$ifaces" = "lo " ]; then
	if command -v bash >/dev/null; then
		out=$(timeout 1 bash -c 'exec 3<>/dev/tcp/192.0.2.1/80' 2>&1)
		rc=$?
	else
		out=$(timeout 1 python3 -c 'import socket; socket.create_connection(("192.0.2.1", 80), 1)' 2>&1)
		rc=$?
	fi
	if [ "$rc" -eq 0 ]; then
		leak "connect" "192.0.2.1:80 connected"
	else
		ok "connect" "192.0.2.1:80 blocked ($(printf '%s\n' "$out" | tail -n 1 | sed 's/.*: //'))"
	fi
else
	info "connect: not tried (interfaces besides lo)"
fi

# ---- system calls ----
if out=$(unshare -U true 2>&1); then
	leak "unshare -U" "created a user namespace"
else
	ok "unshare -U" "blocked ($(reason "$out"))"
fi
if [ "$inside" = no ]; then
	leak "mount" "not tried: this is not a sandbox"
elif out=$(mount -t tmpfs demo /tmp 2>&1); then
	umount /tmp 2>/dev/null
	leak "mount" "mounted a tmpfs"
else
	ok "mount" "blocked ($(reason "$out"))"
fi

echo
if [ "$leaks" -eq 0 ]; then
	echo "demo: nothing leaked"
else
	echo "demo: $leaks LEAK(s)"
fi
exit "$leaks"
