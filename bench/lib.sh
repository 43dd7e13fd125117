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

# bench_positive NAME VALUE: dies unless VALUE, the setting NAME, is a positive whole number.
bench_positive()
{
	case $2 in
	'' | *[!0-9]* | 0) die "$1 must be a positive number" ;;
	esac
}

# bench_nginx_head DIR: the start of the nginx.conf of a bench's own nginx, with its files in DIR:
# one worker in the foreground (as root when run by root), no access log, keep-alive for as long
# as the bench runs, and the http block left open for the caller's directives and servers.
bench_nginx_head()
{
	local dir=$1

	[ "$(id -u)" != 0 ] || echo "user root root;"
	cat <<EOF
daemon off;
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events {
	worker_connections 4096;
}
http {
	access_log off;
	client_body_temp_path $dir/body;
	proxy_temp_path $dir/proxy;
	fastcgi_temp_path $dir/fastcgi;
	uwsgi_temp_path $dir/uwsgi;
	scgi_temp_path $dir/scgi;
	default_type application/octet-stream;
	keepalive_requests 1000000;
	keepalive_timeout 60s;
EOF
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

# bench_apt_source PKG DIR: fetches the Debian source package PKG of this machine's own release
# (the suite and archive its apt sources name for main) and unpacks it into DIR/PKG. apt keeps a
# private state in DIR/apt (the machine's apt configuration is not changed) and checks the signed
# Sources index and the files' hashes, as for any source package. Prints the version fetched.
bench_apt_source()
{
	local pkg=$1 dir=$2 archive suite version dsc
	local apt=$dir/apt

	read -r archive suite < <(apt-get indextargets --format '$(TARGET_OF) $(COMPONENT) $(REPO_URI) $(CODENAME)' 2>/dev/null |
		awk '$1 == "deb" && $2 == "main" && $3 !~ /security/ && $4 !~ /-/ { print $3, $4; exit }')
	if [ -z "${archive:-}" ] || [ -z "${suite:-}" ]; then
		log "no Debian archive in this machine's apt sources: cannot fetch $pkg's source"
		return 1
	fi
	rm -rf "$apt" "${dir:?}/$pkg"
	mkdir -p "$apt/sources" "$apt/lists/partial" "$apt/cache/archives/partial" "$dir/src"
	printf 'Types: deb-src\nURIs: %s\nSuites: %s\nComponents: main\n' "$archive" "$suite" \
		>"$apt/sources/$pkg.sources"
	local aptopts=(-q -o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$apt/sources"
		-o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache" -o APT::Sandbox::User=root)
	apt-get "${aptopts[@]}" update >"$apt/log" 2>&1 || { cat "$apt/log" >&2; return 1; }
	version=$(apt-cache "${aptopts[@]}" showsrc "$pkg" | sed -n 's/^Version: //p' | sort -V | tail -n 1)
	[ -n "$version" ] || { log "$suite has no source package $pkg"; return 1; }
	(cd "$dir/src" && apt-get "${aptopts[@]}" source --download-only "$pkg=$version") \
		>>"$apt/log" 2>&1 || { cat "$apt/log" >&2; return 1; }
	dsc=$(find "$dir/src" -maxdepth 1 -name "${pkg}_*.dsc" | head -n 1)
	(cd "$dir/src" && dpkg-source -x "$dsc" "../$pkg") >>"$apt/log" 2>&1 ||
		{ cat "$apt/log" >&2; return 1; }
	echo "$version"
}

# bench_args NAME ARGS...: a bench script's arguments. --quick sets quick=1 (else 0), -h or
# --help prints the usage line and exits 0, anything else is refused with it (exit 2).
bench_args()
{
	local name=$1 arg usage
	shift
	usage="usage: bench/$name [--quick]   (see the comment at the top of bench/$name)"
	quick=0
	for arg in "$@"; do
		case $arg in
		--quick) quick=1 ;;
		-h | --help)
			echo "$usage"
			exit 0
			;;
		*)
			echo "$name: unknown argument: $arg" >&2
			echo "$usage" >&2
			exit 2
			;;
		esac
	done
}

# bench_bwrap_args: sets the array bwrap_args to bubblewrap doing what `airlock run` does for its
# command (as bench/launch.sh measures it): every namespace, a read-only root with /usr and the
# /bin /lib* /sbin links (or binds) as on the host, the same minimal /etc, a new /proc, a minimal
# /dev, a private /tmp, the hostname, no capabilities, a new session. Not included: seccomp,
# cgroup limits, landlock. The caller adds the workspace (--bind DIR /workspace) and the command.
bench_bwrap_args()
{
	local d f

	bwrap_args=(--unshare-all --die-with-parent --new-session --cap-drop ALL --hostname airlock
		--ro-bind /usr /usr)
	for d in bin sbin lib lib32 lib64 libx32; do
		if [ -L "/$d" ]; then
			bwrap_args+=(--symlink "$(readlink "/$d")" "/$d")
		elif [ -d "/$d" ]; then
			bwrap_args+=(--ro-bind "/$d" "/$d")
		fi
	done
	bwrap_args+=(--dir /etc)
	for f in passwd group hosts resolv.conf nsswitch.conf ld.so.cache ssl alternatives localtime; do
		bwrap_args+=(--ro-bind-try "/etc/$f" "/etc/$f")
	done
	bwrap_args+=(--proc /proc --dev /dev --tmpfs /tmp)
}
