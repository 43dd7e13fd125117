#!/usr/bin/env bash
# STYLE.md rules that clang-format cannot see, on every C source of the tree:
#  - comments use /* */ only (no //);
#  - no #if 0 (no dead code kept around);
#  - no bare `return -1;` (return -errno, STYLE.md section 1) in the modules; tests are exempt,
#    since cmocka fixtures and --wrap mocks of libc functions follow those conventions instead.
# Comments, string and character literals are skipped, so "http://x" in a string is fine.
# Usage: check-style.sh [SOURCE_ROOT]. Prints FILE:LINE: problem for each hit, exits 1 if any.

set -euo pipefail

root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
# shellcheck source=tests/lint/lib-files.sh
. "$(dirname "$0")/lib-files.sh"

mapfile -t files < <(lint_c_files "$root")
if [ "${#files[@]}" -eq 0 ]; then
	echo "check-style: no C sources found under $root"
	exit 1
fi

cd "$root"
if awk '
FNR == 1 { in_comment = 0 }
{
	line = $0
	code = ""
	n = length(line)
	i = 1
	while (i <= n) {
		c = substr(line, i, 1)
		c2 = substr(line, i, 2)
		if (in_comment) {
			if (c2 == "*/") {
				in_comment = 0
				i += 2
			} else {
				i++
			}
			continue
		}
		if (c2 == "/*") {
			in_comment = 1
			code = code " "
			i += 2
			continue
		}
		if (c2 == "//") {
			printf "%s:%d: // comment (use /* */)\n", FILENAME, FNR
			bad++
			break
		}
		if (c == "\"" || c == "\047") {
			j = i + 1
			while (j <= n) {
				d = substr(line, j, 1)
				if (d == "\\")
					j += 2
				else if (d == c)
					break
				else
					j++
			}
			code = code c c
			i = j + 1
			continue
		}
		code = code c
		i++
	}
	if (code ~ /^[ \t]*#[ \t]*if[ \t]+0+[ \t]*$/) {
		printf "%s:%d: #if 0 (delete dead code instead)\n", FILENAME, FNR
		bad++
	}
	if (FILENAME !~ /^tests\// && code ~ /(^|[^A-Za-z0-9_])return[ \t(]*-[ \t]*1[ \t)]*;/) {
		printf "%s:%d: bare return -1 (return -errno)\n", FILENAME, FNR
		bad++
	}
}
END { exit bad > 0 }
' "${files[@]}"; then
	echo "check-style: ${#files[@]} files: ok"
else
	echo "check-style: violations found (see above)"
	exit 1
fi
