#!/usr/bin/env bash
# `airlock secret put/ls/rm/bind` and the vault file: values go in through stdin or --from-file
# and never come out (not in ls, not on stderr, not in the file unencrypted); bindings are
# normalized host lists; --vault beats AIRLOCK_VAULT beats the default; a key file must be 32
# bytes or 64 hex digits and private; a passphrase comes from AIRLOCK_PASSPHRASE_FILE or a
# terminal prompt without echo (Ctrl-C gives the echo back); a wrong key, a truncated or
# tampered file and a newer format each give their own one-line error and leave the file
# byte-identical; concurrent writers lose nothing; a writer killed at any step of its save
# leaves a vault holding the old or the new state, and its leftovers are cleaned by the next.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

if ! command -v strace >/dev/null; then
	it_skip "strace is missing (Debian package strace)"
fi
unset AIRLOCK_VAULT AIRLOCK_PASSPHRASE_FILE XDG_DATA_HOME

# Every value this test stores starts with this, so that one grep finds any leak.
VAL="itval-$IT_MARK"
ISO='[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z'
key=$IT_TMP/key
head -c 32 /dev/urandom >"$key"
chmod 600 "$key"
V=$IT_TMP/data/sub/vault
printf '%s-github\n' "$VAL" >"$IT_TMP/value-github"
printf '%s-anthropic' "$VAL" >"$IT_TMP/value-anthropic"

# sec ARGS: `airlock secret ARGS` (stdin inherited), all its output kept for the leak checks.
sec()
{
	al_run secret "$@"
	cat "$IT_TMP/al.out" >>"$IT_TMP/all.out"
	cat "$IT_TMP/al.err" >>"$IT_TMP/all.err"
}

# kv ARGS: sec with the test's vault and key.
kv()
{
	sec --vault "$V" --key-file "$key" "$@"
}

# names VAULT KEY: the secret names in VAULT, space-separated (ls --json).
names()
{
	sec --vault "$1" --key-file "$2" ls --json
	printf '%s' "$AL_OUT" >"$IT_TMP/ls.json"
	json_get "$IT_TMP/ls.json" '" ".join(e["name"] for e in d)'
}

# field NAME KEY: one field of NAME's entry in the last ls --json.
field()
{
	json_get "$IT_TMP/ls.json" "[e for e in d if e['name'] == '$1'][0]['$2']"
}

snapshot()
{
	cp "$1" "$IT_TMP/snapshot"
}

# assert_refused WHAT FILE TEXT: the last command exited 1 with one line containing TEXT and
# FILE is byte-identical to the last snapshot.
assert_refused()
{
	assert_eq 1 "$AL_RC" "$1: exits 1"
	assert_one_error_line "$AL_ERR" "$1: one error line"
	assert_contains "$AL_ERR" "$3" "$1: the line says \"$3\""
	assert_true "$1: the vault is byte-identical" cmp -s "$2" "$IT_TMP/snapshot"
}

# ---- round trip ----

kv put github <"$IT_TMP/value-github"
assert_eq 0 "$AL_RC" "put reads the value from stdin"
assert_eq "" "$AL_OUT$AL_ERR" "put prints nothing"
assert_eq "700 700 600" "$(stat -c %a "$IT_TMP/data" "$IT_TMP/data/sub" "$V" | tr '\n' ' ' | sed 's/ $//')" \
	"put makes the vault's missing folders 0700 and the vault 0600"
kv put anthropic --from-file "$IT_TMP/value-anthropic"
assert_eq 0 "$AL_RC" "put --from-file reads the value from the file"
kv ls
assert_eq 0 "$AL_RC" "ls exits 0"
assert_eq 2 "$(grep -c '' <<<"$AL_OUT")" "ls prints one line per secret"
assert_match "^anthropic +- +$ISO +$ISO"$'\n'"github +- +$ISO +$ISO$" "$AL_OUT" \
	"ls prints name, hosts (- for none), created and updated (ISO 8601, UTC), by name"
assert_eq "anthropic github" "$(names "$V" "$key")" "ls --json lists the names"
assert_eq "[]" "$(field github hosts)" "ls --json: no hosts yet"
assert_match "^$ISO$" "$(field github created)" "ls --json: created is ISO 8601 UTC"
created=$(field github created)
sleep 1.1
printf '%s-github-2' "$VAL" >"$IT_TMP/value-github-2"
kv put github <"$IT_TMP/value-github-2"
assert_eq 0 "$AL_RC" "put replaces an existing secret"
names "$V" "$key" >/dev/null
assert_eq "$created" "$(field github created)" "replacing keeps the created time"
assert_ne "$created" "$(field github updated)" "replacing sets the updated time"
assert_eq 0 "$(grep -a -c "$VAL" "$V")" "the vault file holds no value in clear"

# ---- bind ----

kv bind github --hosts 'API.GitHub.com,*.Example.COM,api.github.com'
assert_eq 0 "$AL_RC" "bind exits 0"
names "$V" "$key" >/dev/null
assert_eq '["api.github.com", "*.example.com"]' "$(field github hosts)" \
	"bind lower-cases the hosts and keeps each once"
kv ls
assert_match "^github +api\.github\.com,\*\.example\.com +$ISO +$ISO$" "$(grep '^github' <<<"$AL_OUT")" \
	"ls shows the bound hosts comma-separated"
snapshot "$V"
kv bind github --hosts 'a.com,,b.com'
assert_refused "bind with an empty item" "$V" "item 2 is empty"
kv bind github --hosts 'ok.com,bad host.com'
assert_refused "bind with a space" "$V" '"bad host.com"'
kv bind github --hosts 'ok.com,bad_host.com'
assert_refused "bind with an invalid character" "$V" '"bad_host.com"'
kv bind github --hosts '*'
assert_refused "bind with a bare *" "$V" '"*"'
kv bind github --hosts '10.0.0.1'
assert_refused "bind with an address" "$V" '"10.0.0.1"'
kv bind github --hosts "$(seq -f 'h%g.example.com' 65 | paste -sd,)"
assert_refused "bind with 65 hosts" "$V" "at most 64 hosts"
kv bind nosuch --hosts a.com
assert_refused "bind of a missing secret" "$V" 'no secret "nosuch"'
kv bind github
assert_refused "bind without --hosts" "$V" "--hosts"

# ---- rm ----

kv rm anthropic
assert_eq 0 "$AL_RC" "rm exits 0"
assert_eq "github" "$(names "$V" "$key")" "rm removes the secret"
snapshot "$V"
kv rm anthropic
assert_refused "rm of a missing secret" "$V" "has no secret \"anthropic\""

# ---- values never on the command line ----

snapshot "$V"
kv put github "$VAL-argv" </dev/null
assert_refused "put NAME VALUE" "$V" "never from the command line"
kv put github "--value=$VAL-opt" </dev/null
assert_refused "put --value=VALUE" "$V" "Unknown option --value"
kv put github "-----BEGIN $VAL-pem" </dev/null
assert_refused "put with a PEM-like argument" "$V" "not shown"
kv put "github=$VAL-name" </dev/null
assert_refused "put NAME=VALUE" "$V" "invalid secret name"
kv ls --from-file "$IT_TMP/value-github"
assert_refused "ls --from-file" "$V" "--from-file is an option of airlock secret put only"
kv put empty </dev/null
assert_refused "an empty value" "$V" "secret empty: the value is empty"
head -c 65537 /dev/zero | tr '\0' x >"$IT_TMP/big"
kv put big --from-file "$IT_TMP/big"
assert_refused "a value over 64 KiB" "$V" "secret big: the value is larger than 65536 bytes"
{ head -c 65536 /dev/zero | tr '\0' x; echo; } >"$IT_TMP/max"
kv put max --from-file "$IT_TMP/max"
assert_eq 0 "$AL_RC" "a value of 64 KiB and a newline is taken"
kv rm max
snapshot "$V"
kv put "bad/name" --from-file "$IT_TMP/value-github"
assert_refused "a name with a slash" "$V" "invalid secret name"
kv put "$(printf 'n%.0s' {1..129})" --from-file "$IT_TMP/value-github"
assert_refused "a name of 129 characters" "$V" "invalid secret name"
kv put "$(printf 'n%.0s' {1..128})" --from-file "$IT_TMP/value-github"
assert_eq 0 "$AL_RC" "a name of 128 characters is taken"

# ---- where the vault is ----

A=$IT_TMP/env-vault/vault
B=$IT_TMP/opt-vault/vault
AIRLOCK_VAULT=$A sec --key-file "$key" put from-env <"$IT_TMP/value-github"
assert_eq "from-env" "$(names "$A" "$key")" "AIRLOCK_VAULT names the vault"
AIRLOCK_VAULT=$A sec --vault "$B" --key-file "$key" put from-opt <"$IT_TMP/value-github"
assert_eq "from-opt" "$(names "$B" "$key")" "--vault beats AIRLOCK_VAULT"
assert_eq "from-env" "$(names "$A" "$key")" "... and AIRLOCK_VAULT's vault is untouched"
had_default=$([ -e /var/lib/airlock ] && echo yes || echo no)
"$ITRUN" -t "$IT_WATCHDOG" -- setsid -w "$AIRLOCK" secret ls >"$IT_TMP/al.out" 2>"$IT_TMP/al.err"
assert_contains "$(cat "$IT_TMP/al.err")" "/var/lib/airlock/vault" "root's default vault is /var/lib/airlock/vault"
assert_eq "$had_default" "$([ -e /var/lib/airlock ] && echo yes || echo no)" \
	"ls creates no default vault or folder"
if command -v setpriv >/dev/null; then
	mkdir -p "$IT_TMP/bin" "$IT_TMP/home" "$IT_TMP/xdg"
	install -m 755 "$AIRLOCK" "$IT_TMP/bin/airlock"
	install -m 600 -o 65534 "$key" "$IT_TMP/home/key"
	chown 65534 "$IT_TMP/home" "$IT_TMP/xdg"
	chmod 644 "$IT_TMP/value-github"
	nobody_secret()
	{
		(cd / && "$ITRUN" -t "$IT_WATCHDOG" -- setpriv --reuid=65534 --regid=65534 \
			--clear-groups env -i HOME="$IT_TMP/home" "$@" "$IT_TMP/bin/airlock" secret \
			--key-file "$IT_TMP/home/key" put n1 <"$IT_TMP/value-github") >/dev/null 2>&1
	}
	nobody_secret
	assert_true "a user's default vault is ~/.local/share/airlock/vault" \
		test -f "$IT_TMP/home/.local/share/airlock/vault"
	nobody_secret XDG_DATA_HOME="$IT_TMP/xdg"
	assert_true "... or \$XDG_DATA_HOME/airlock/vault" test -f "$IT_TMP/xdg/airlock/vault"
fi

# ---- key files ----

snapshot "$V"
od -An -tx1 -v "$key" | tr -d ' \n' >"$IT_TMP/key.hex"
echo >>"$IT_TMP/key.hex"
chmod 600 "$IT_TMP/key.hex"
sec --vault "$V" --key-file "$IT_TMP/key.hex" ls
assert_eq 0 "$AL_RC" "the key as 64 hex digits and a newline opens the vault"
head -c 64 "$IT_TMP/key.hex" >"$IT_TMP/key.hex2"
chmod 600 "$IT_TMP/key.hex2"
sec --vault "$V" --key-file "$IT_TMP/key.hex2" ls
assert_eq 0 "$AL_RC" "... and without the newline"
chmod 644 "$IT_TMP/key.hex2"
sec --vault "$V" --key-file "$IT_TMP/key.hex2" ls
assert_refused "a key file of mode 0644" "$V" "has mode 0644"
ln -s "$key" "$IT_TMP/key.link"
sec --vault "$V" --key-file "$IT_TMP/key.link" ls
assert_refused "a key file that is a symbolic link" "$V" "is a symbolic link"
head -c 31 "$key" >"$IT_TMP/key.short"
chmod 600 "$IT_TMP/key.short"
sec --vault "$V" --key-file "$IT_TMP/key.short" ls
assert_refused "a key file of 31 bytes" "$V" "holds 31 bytes"
head -c 32 /dev/urandom >"$IT_TMP/key.other"
chmod 600 "$IT_TMP/key.other"
sec --vault "$V" --key-file "$IT_TMP/key.other" ls
assert_refused "another key (ls)" "$V" "wrong passphrase or key for vault $V"
sec --vault "$V" --key-file "$IT_TMP/key.other" put x <"$IT_TMP/value-github"
assert_refused "another key (put)" "$V" "wrong passphrase or key for vault $V"

# ---- passphrases (libsodium's moderate Argon2id costs: a few runs only) ----

P=$IT_TMP/pass/vault
printf 'correct horse\n' >"$IT_TMP/pass1"
printf 'correct horse' >"$IT_TMP/pass2"
printf 'wrong horse' >"$IT_TMP/pass3"
: >"$IT_TMP/pass-empty"
AIRLOCK_PASSPHRASE_FILE=$IT_TMP/pass1 sec --vault "$P" put p1 <"$IT_TMP/value-github"
assert_eq 0 "$AL_RC" "put makes a vault with the passphrase of AIRLOCK_PASSPHRASE_FILE"
AIRLOCK_PASSPHRASE_FILE=$IT_TMP/pass2 sec --vault "$P" ls
assert_match "^p1 " "$AL_OUT" "the passphrase file's trailing newline is not part of the passphrase"
snapshot "$P"
AIRLOCK_PASSPHRASE_FILE=$IT_TMP/pass3 sec --vault "$P" ls
assert_refused "a wrong passphrase (ls)" "$P" "wrong passphrase or key for vault $P"
AIRLOCK_PASSPHRASE_FILE=$IT_TMP/pass3 sec --vault "$P" put p2 <"$IT_TMP/value-github"
assert_refused "a wrong passphrase (put)" "$P" "wrong passphrase or key for vault $P"
AIRLOCK_PASSPHRASE_FILE=$IT_TMP/pass-empty sec --vault "$P" ls
assert_refused "an empty passphrase file" "$P" "is empty"
AIRLOCK_PASSPHRASE_FILE=$IT_TMP sec --vault "$P" ls
assert_refused "a passphrase file that is a folder" "$P" "is not a regular file"
sec --vault "$P" --key-file "$key" ls
assert_refused "a key file for a passphrase vault" "$P" "needs a passphrase"
snapshot "$V"
AIRLOCK_PASSPHRASE_FILE=$IT_TMP/pass1 sec --vault "$V" ls
assert_refused "a passphrase for a key-file vault" "$V" "needs a key file"
"$ITRUN" -t "$IT_WATCHDOG" -- setsid -w "$AIRLOCK" secret --vault "$V" ls \
	>"$IT_TMP/al.out" 2>"$IT_TMP/al.err"
AL_RC=$? AL_ERR=$(cat "$IT_TMP/al.err")
assert_refused "no passphrase and no terminal" "$V" \
	"vault $V: no passphrase: set AIRLOCK_PASSPHRASE_FILE, pass --key-file, or run on a terminal"

# ---- the terminal prompt ----

# pty-drive ACTION... -- COMMAND...: runs COMMAND on a new pseudo-terminal, its controlling
# terminal, and plays the ACTIONs: "expect:TEXT" waits for TEXT in its output, "send:TEXT" types
# TEXT and Enter, "intr" types Ctrl-C, "echo" prints whether the terminal echoes now. Then prints
# the status ("exit N" or "signal N"), whether the terminal echoes afterwards, and the output.
cat >"$IT_TMP/pty-drive.py" <<'EOF2'
import os, pty, select, signal, sys, termios, time

sep = sys.argv.index("--")
actions, argv = sys.argv[1:sep], sys.argv[sep + 1:]
pid, master = pty.fork()
if pid == 0:
    os.execv(argv[0], argv)
out = b""
deadline = time.monotonic() + 60


def pump(timeout):
    global out
    if select.select([master], [], [], timeout)[0]:
        try:
            data = os.read(master, 4096)
        except OSError:
            return False
        out += data
        return bool(data)
    return True


def echo():
    return "on" if termios.tcgetattr(master)[3] & termios.ECHO else "off"


for a in actions:
    if a.startswith("expect:"):
        want = a[7:].encode()
        while want not in out and time.monotonic() < deadline and pump(0.1):
            pass
        if want not in out:
            print("timeout waiting for %r" % want)
            break
    elif a.startswith("send:"):
        os.write(master, a[5:].encode() + b"\n")
    elif a == "intr":
        os.write(master, b"\x03")
    elif a == "echo":
        print("echo=" + echo())
while time.monotonic() < deadline:
    wpid, status = os.waitpid(pid, os.WNOHANG)
    if wpid:
        break
    pump(0.1)
else:
    os.kill(pid, signal.SIGKILL)
    wpid, status = os.waitpid(pid, 0)
while select.select([master], [], [], 0.05)[0] and pump(0):
    pass
if os.WIFEXITED(status):
    print("status=exit %d" % os.WEXITSTATUS(status))
else:
    print("status=signal %d" % os.WTERMSIG(status))
print("echo_after=" + echo())
print("output=%r" % out)
EOF2
pty_drive()
{
	"$IT_PY" "$IT_TMP/pty-drive.py" "$@" >"$IT_TMP/pty.out" 2>&1
	PTY_OUT=$(cat "$IT_TMP/pty.out")
}

T=$IT_TMP/tty/vault
pass="tty-pass-$IT_MARK"
pty_drive "expect:New vault passphrase: " echo "send:$pass" "expect:Repeat the passphrase: " echo \
	"send:$pass" -- "$AIRLOCK" secret --vault "$T" put t1 --from-file "$IT_TMP/value-github"
assert_contains "$PTY_OUT" "status=exit 0" "a new vault's passphrase is asked twice on the terminal"
assert_eq 2 "$(grep -c '^echo=off' <<<"$PTY_OUT")" "the terminal does not echo at either prompt"
assert_contains "$PTY_OUT" "echo_after=on" "the echo is back afterwards"
assert_not_contains "$PTY_OUT" "$pass" "the passphrase never shows"
printf '%s\n' "$pass" >"$IT_TMP/pass-tty"
AIRLOCK_PASSPHRASE_FILE=$IT_TMP/pass-tty sec --vault "$T" ls
assert_match "^t1 " "$AL_OUT" "the typed passphrase is the vault's"
pty_drive "expect:Vault passphrase: " echo intr -- "$AIRLOCK" secret --vault "$T" ls
assert_contains "$PTY_OUT" "status=signal 2" "Ctrl-C at the prompt ends airlock by SIGINT"
assert_contains "$PTY_OUT" "echo_after=on" "... with the terminal's echo back"
pty_drive "expect:Vault passphrase: " "send:$pass" -- "$AIRLOCK" secret --vault "$T" rm t1
assert_contains "$PTY_OUT" "status=exit 0" "an existing vault's passphrase is asked once"
pty_drive "expect:New vault passphrase: " "send:$pass" "expect:Repeat the passphrase: " "send:x$pass" \
	-- "$AIRLOCK" secret --vault "$IT_TMP/tty2/vault" put t1 --from-file "$IT_TMP/value-github"
assert_contains "$PTY_OUT" "status=exit 1" "passphrases that differ are refused"
assert_contains "$PTY_OUT" "the passphrases do not match" "... saying so"
assert_false "... and nothing is created" test -e "$IT_TMP/tty2"
pty_drive "expect:terminal" -- "$AIRLOCK" secret --vault "$V" --key-file "$key" put t1
assert_contains "$PTY_OUT" "status=exit 1" "put refuses to read a value from a terminal"
assert_contains "$PTY_OUT" "would be read from a terminal" "... saying why"

# ---- damaged vaults: each its own error, the file untouched, by readers and by writers ----

# set_byte FILE OFFSET VALUE / flip_byte FILE OFFSET
set_byte()
{
	printf '%b' "$(printf '\\x%02x' "$3")" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
flip_byte()
{
	set_byte "$1" "$2" $(($(od -An -tu1 -j "$2" -N1 "$1") ^ 0x20))
}

# damaged WHAT TEXT: ls and put of $D (damaged, snapshot taken) are refused with TEXT.
damaged()
{
	snapshot "$D"
	sec --vault "$D" --key-file "$key" ls
	assert_refused "$1 (ls)" "$D" "$2"
	sec --vault "$D" --key-file "$key" put x <"$IT_TMP/value-github"
	assert_refused "$1 (put)" "$D" "$2"
}

D=$IT_TMP/damaged/vault
mkdir -p "$IT_TMP/damaged"
size=$(stat -c %s "$V")
cp "$V" "$D" && truncate -s $((size - 7)) "$D"
damaged "a vault cut short" "vault $D is truncated"
cp "$V" "$D" && truncate -s 60 "$D"
damaged "a vault cut in its header" "vault $D is truncated"
cp "$V" "$D" && flip_byte "$D" $((size - 1))
damaged "a flipped byte in the ciphertext" "vault $D has been tampered with or is corrupt"
cp "$V" "$D" && flip_byte "$D" 40
damaged "a flipped byte in the header (salt)" "vault $D has been tampered with or is corrupt"
cp "$V" "$D" && flip_byte "$D" 90
damaged "a flipped byte in the header (nonce)" "vault $D has been tampered with or is corrupt"
cp "$V" "$D" && set_byte "$D" 8 2
damaged "a newer format version" "vault $D has format 2, newer than this airlock reads (1)"
cp "$V" "$D" && printf x >>"$D"
damaged "trailing data" "vault $D is corrupt"
head -c 4096 /dev/urandom >"$D"
damaged "a file that is no vault" "$D is not an airlock vault"

# ---- concurrent writers and readers ----

C=$IT_TMP/conc/vault
sec --vault "$C" --key-file "$key" put seed <"$IT_TMP/value-github"
(
	ok=0
	while [ ! -e "$IT_TMP/conc.done" ]; do
		"$AIRLOCK" secret --vault "$C" --key-file "$key" ls >/dev/null 2>>"$IT_TMP/conc.err" || ok=1
	done
	echo "$ok" >"$IT_TMP/conc.readers"
) &
reader=$!
pids=()
for i in $(seq 1 8); do
	"$ITRUN" -t "$IT_WATCHDOG" -- "$AIRLOCK" secret --vault "$C" --key-file "$key" \
		put "w$i" <"$IT_TMP/value-github" 2>>"$IT_TMP/conc.err" &
	pids+=($!)
done
fails=0
for p in "${pids[@]}"; do wait "$p" || fails=$((fails + 1)); done
touch "$IT_TMP/conc.done"
wait "$reader"
assert_eq 0 "$fails" "8 concurrent puts all succeed"
assert_eq "seed w1 w2 w3 w4 w5 w6 w7 w8" "$(names "$C" "$key")" "no concurrent put is lost"
assert_eq 0 "$(cat "$IT_TMP/conc.readers")" "readers during the writes always find a whole vault"
assert_eq "" "$(cat "$IT_TMP/conc.err")" "... and nothing is printed"

# ---- a writer killed at each step of its save ----

K=$IT_TMP/crash/vault
sec --vault "$K" --key-file "$key" put keep <"$IT_TMP/value-github"
names "$K" "$key" >/dev/null
keep_updated=$(field keep updated)
temporaries()
{
	find "$IT_TMP/crash" -name '.vault.*.tmp' | wc -l
}
# crash SYSCALL N NAME: put NAME, SIGKILLed on entry to the Nth SYSCALL.
crash()
{
	"$ITRUN" -t "$IT_WATCHDOG" -- strace -f -o /dev/null -e trace="$1" \
		-e inject="$1:signal=SIGKILL:when=$2" "$AIRLOCK" secret --vault "$K" \
		--key-file "$key" put "$3" <"$IT_TMP/value-github" >/dev/null 2>&1
	CRASH_RC=$?
}
# The save: lock, write the temporary file, fsync it, rename it over the vault, fsync the folder.
for step in flock:1:old write:1:old fsync:1:old renameat:1:old fsync:2:new; do
	IFS=: read -r sc n want <<<"$step"
	crash "$sc" "$n" "c-$sc-$n"
	assert_eq 137 "$CRASH_RC" "killed at $sc #$n: the writer died of SIGKILL"
	got=$(names "$K" "$key")
	assert_eq 0 "$AL_RC" "killed at $sc #$n: the vault still opens"
	if [ "$want" = old ]; then
		assert_not_contains " $got " " c-$sc-$n " "killed at $sc #$n: the vault holds the old state"
	else
		assert_contains " $got " " c-$sc-$n " "killed at $sc #$n: the vault holds the new state"
	fi
	assert_eq "$keep_updated" "$(field keep updated)" "killed at $sc #$n: the other secret is intact"
	case $sc in
	write | fsync)
		[ "$n" = 1 ] && assert_eq 1 "$(temporaries)" "killed at $sc #$n: its temporary file is left"
		;;
	esac
done
# Replacing an existing secret: the old value until the rename, the new one after it.
sleep 1.1
crash renameat 1 keep
names "$K" "$key" >/dev/null
assert_eq "$keep_updated" "$(field keep updated)" "a replacement killed at its rename leaves the old value"
crash fsync 2 keep
names "$K" "$key" >/dev/null
assert_ne "$keep_updated" "$(field keep updated)" "a replacement killed after its rename has the new value"
sec --vault "$K" --key-file "$key" put after <"$IT_TMP/value-github"
assert_eq 0 "$AL_RC" "a put after the crashes succeeds"
assert_eq 0 "$(temporaries)" "the next put removes the killed writers' temporary files"

# ---- no value ever came out ----

assert_eq "" "$(grep -a -l "$VAL" "$IT_TMP/all.out" "$IT_TMP/all.err" "$IT_TMP"/*/vault \
	"$IT_TMP"/*/*/vault "$IT_TMP/pty.out" 2>/dev/null || true)" \
	"no value shows in any output, error or vault file"

it_finish
