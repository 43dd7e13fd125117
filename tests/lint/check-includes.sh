#!/usr/bin/env bash
# Enforces STYLE.md section 4 on every C source of the tree:
#  - quoted includes start at the repository root and name a file that exists;
#  - dependencies point one way: common <- policy <- {fusefs, netns, broker} <- launcher <- agent
#    <- cli;
#    fusefs and netns never include each other nor broker internals: only broker/client.h;
#  - <mod>/*-internal.h is included only by that module's own .c files (and its other internal
#    headers) and by tests/unit/<mod>/ and tests/integration/<mod>/ (root tests of a module's
#    units), and by the fuzz harnesses in tests/fuzz/;
#  - each third-party library is used only in the files allowed below (tests are exempt, and so
#    are the benchmarks' own programs in bench/, which are clients of their own, not modules).
# Usage: check-includes.sh [SOURCE_ROOT]. Prints one line per violation, exits 1 if any.

set -euo pipefail

root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
# shellcheck source=tests/lint/lib-files.sh
. "$(dirname "$0")/lib-files.sh"

modules="common policy fusefs netns broker launcher agent mcp serve cli"

# The modules that a module may include from (STYLE.md section 4). fusefs and netns may reach
# the broker, but only through broker/client.h (checked separately).
declare -A may_use=(
	[common]=""
	[policy]="common"
	[fusefs]="common policy broker"
	[netns]="common policy broker"
	[broker]="common policy"
	[launcher]="common policy fusefs netns broker"
	[agent]="common policy fusefs netns broker launcher"
	[mcp]="common policy fusefs netns broker launcher agent"
	[serve]="common policy fusefs netns broker launcher agent"
	[cli]="common policy fusefs netns broker launcher agent mcp serve"
)

# Third-party libraries: a pattern over the <...> include and the files allowed to use it.
# Entries ending in "/" allow a whole folder. The exceptions beyond STYLE.md's "one place per
# library" are deliberate:
#  - common/json-util.h and netns/nl-util.h are the adapters' own headers (they declare the
#    adapters' cleanup helpers, which need the library's types); common/audit.c writes the audit
#    stream's JSON lines, so that no other module needs json-c to emit an event;
#  - launcher/doctor.c and cli/ print JSON output (`doctor --json`), so they build it with json-c
#    rather than hand-escaping strings; agent/ reads exec requests and writes results (JSON is
#    its whole interface).
# An include of the adapter header counts as a use of its library (json-util.h is json-c).
lib_names=(libseccomp libnl libfuse libsodium openssl json-c libmicrohttpd libnghttp2)
declare -A lib_pattern=(
	[libseccomp]='^seccomp\.h$'
	[libnl]='^netlink/'
	[libfuse]='^fuse3/|^fuse(_lowlevel|_common|_opt|_log)?\.h$'
	[libsodium]='^sodium(\.h$|/)'
	[openssl]='^openssl/'
	[json-c]='^json-c/|^json\.h$'
	[libmicrohttpd]='^microhttpd\.h$'
	[libnghttp2]='^nghttp2/'
)
declare -A lib_adapter=(
	[json-c]='common/json-util.h'
	[libnl]='netns/nl-util.h'
)
declare -A lib_allowed=(
	[libseccomp]='launcher/seccomp.c'
	[libnl]='netns/link.c netns/nl-util.c netns/nl-util.h'
	[libfuse]='fusefs/'
	[libsodium]='broker/ policy/'
	[openssl]='netns/tls.c netns/sigv4.c netns/pg-auth.c broker/ssh-key.c'
	[json-c]='common/ policy/ broker/protocol.c launcher/doctor.c agent/ mcp/ serve/ cli/'
	[libmicrohttpd]='serve/http.c'
	[libnghttp2]='netns/http2.c'
)

# Headers generated into the build folder that sources may include without a folder.
# None yet; add a name here together with the configure_file() that makes it.
generated_headers=""

failures=0
fail()
{
	printf '%s\n' "$*"
	failures=$((failures + 1))
}

is_module()
{
	case " $modules " in
	*" $1 "*) return 0 ;;
	esac
	return 1
}

in_list()
{
	local word=$1 list=$2 item
	for item in $list; do
		[ "$item" = "$word" ] && return 0
	done
	return 1
}

file_allowed()
{
	local file=$1 list=$2 item
	for item in $list; do
		case $item in
		*/) [[ $file == "$item"* ]] && return 0 ;;
		*) [ "$file" = "$item" ] && return 0 ;;
		esac
	done
	return 1
}

check_library()
{
	local file=$1 where=$2 header=$3 lib how
	for lib in "${lib_names[@]}"; do
		if [[ $header =~ ${lib_pattern[$lib]} ]]; then
			how="<$header>"
		elif [ "${lib_adapter[$lib]:-}" = "$header" ]; then
			how="through \"$header\""
		else
			continue
		fi
		file_allowed "$file" "${lib_allowed[$lib]}" ||
			fail "$where: uses $lib ($how); allowed only in: ${lib_allowed[$lib]}"
	done
}

check_quoted()
{
	local file=$1 where=$2 header=$3 own=$4 target

	if [ ! -f "$root/$header" ]; then
		if [[ $header != */* ]] && in_list "$header" "$generated_headers"; then
			return 0
		fi
		fail "$where: \"$header\" does not exist from the repository root (include paths start there)"
		return 0
	fi
	target=${header%%/*}
	is_module "$target" || return 0

	if [[ $header == *-internal.h ]]; then
		if [ "$target" = "$own" ]; then
			[[ $file == *.c || $file == *-internal.h ]] ||
				fail "$where: header includes its module's internal header \"$header\""
		elif [[ $file != tests/unit/$target/* && $file != tests/integration/$target/* &&
			$file != tests/fuzz/fuzz-* ]]; then
			fail "$where: includes another module's internal header \"$header\""
		fi
		return 0
	fi

	# Tests may include any module's public headers; the direction rule is for modules.
	[ -n "$own" ] && [ "$target" != "$own" ] || return 0
	if ! in_list "$target" "${may_use[$own]}"; then
		fail "$where: $own must not depend on $target (\"$header\"): see STYLE.md section 4"
		return 0
	fi
	if [ "$target" = broker ] && { [ "$own" = fusefs ] || [ "$own" = netns ]; } &&
		[ "$header" != broker/client.h ]; then
		fail "$where: $own reaches the broker only through broker/client.h, not \"$header\""
	fi
}

mapfile -t files < <(lint_c_files "$root")
if [ "${#files[@]}" -eq 0 ]; then
	echo "check-includes: no C sources found under $root"
	exit 1
fi

checked=0
while IFS= read -r hit; do
	file=${hit%%:*}
	rest=${hit#*:}
	line=${rest%%:*}
	text=${rest#*:}
	where="$file:$line"
	own=${file%%/*}
	is_module "$own" || own=""
	is_test=0
	[[ $file == tests/* || $file == bench/* ]] && is_test=1

	if [[ $text =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*\"([^\"]+)\" ]]; then
		header=${BASH_REMATCH[1]}
		check_quoted "$file" "$where" "$header" "$own"
		[ "$is_test" -eq 1 ] || check_library "$file" "$where" "$header"
	elif [[ $text =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*\<([^\>]+)\> ]]; then
		header=${BASH_REMATCH[1]}
		if is_module "${header%%/*}" && [ -f "$root/$header" ]; then
			fail "$where: include our own header with quotes: \"$header\""
		fi
		[ "$is_test" -eq 1 ] || check_library "$file" "$where" "$header"
	fi
	checked=$((checked + 1))
done < <(cd "$root" && grep -HnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]' -- "${files[@]}" || true)

if [ "$failures" -gt 0 ]; then
	echo "check-includes: $failures violation(s) in ${#files[@]} files"
	exit 1
fi
echo "check-includes: ${#files[@]} files, $checked includes: ok"
