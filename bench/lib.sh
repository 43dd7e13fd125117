# Shared by the bench/*.sh scripts (sourced, not run).

# bench_write_section DOC HEADING FILE: puts FILE's text in place of DOC's section that starts
# with the line HEADING (up to the next "## " heading), or appends it; the rest of DOC stays byte
# for byte. DOC is created with a title when missing.
bench_write_section()
{
	local doc=$1 heading=$2 file=$3 py=python3
	[ -x /usr/bin/python3 ] && py=/usr/bin/python3
	mkdir -p "$(dirname "$doc")"
	[ -f "$doc" ] || printf '# airlock benchmarks\n\nResults of bench/*.sh; each section is rewritten by its script.\n\n' >"$doc"
	"$py" - "$doc" "$heading" "$file" <<'EOF2'
import sys

path, heading = sys.argv[1], sys.argv[2]
section = open(sys.argv[3]).read().rstrip("\n") + "\n"
text = open(path).read()
lines = text.splitlines(keepends=True)
start = next((i for i, l in enumerate(lines) if l.rstrip("\n") == heading), None)
if start is None:
    sep = "" if not text else ("\n" if text.endswith("\n") else "\n\n")
    text = text + sep + section
else:
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")),
               len(lines))
    rest = "".join(lines[end:])
    text = "".join(lines[:start]) + section + ("\n" + rest if rest else "")
open(path, "w").write(text)
EOF2
}

# log MESSAGE...: a line on stderr, named after the script; die: the same, then exit 1.
log()
{
	echo "${0##*/}: $*" >&2
}

die()
{
	log "$*"
	exit 1
}

# bench_apt PKG...: installs the Debian packages PKG (none: nothing), as root only.
bench_apt()
{
	[ "$#" -gt 0 ] || return 0
	if [ "$(id -u)" != 0 ]; then
		log "missing packages: $* (apt-get install them as root)"
		return 1
	fi
	log "installing $*"
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 update -q >&2
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -q \
		--no-install-recommends "$@" >&2
}

# bench_install PKG...: bench_apt for those of the packages PKG that are not installed.
bench_install()
{
	local p missing=()
	for p in "$@"; do
		[ "$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null)" = "ii " ] ||
			missing+=("$p")
	done
	bench_apt "${missing[@]}"
}
