#!/usr/bin/env bash
# Every C source of the tree is formatted as the root .clang-format says (STYLE.md section 7).
# Usage: check-format.sh [SOURCE_ROOT]. Fix with: clang-format -i FILE (or git clang-format).
# Exits 77 (skip) when clang-format is missing, 1 instead when AIRLOCK_TEST_MUST_RUN=1.

set -euo pipefail

root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
# shellcheck source=tests/lint/lib-files.sh
. "$(dirname "$0")/lib-files.sh"

clang_format=${CLANG_FORMAT:-}
if [ -z "$clang_format" ]; then
	for c in clang-format clang-format-14 clang-format-15 clang-format-16; do
		if command -v "$c" >/dev/null; then
			clang_format=$c
			break
		fi
	done
fi
if [ -z "$clang_format" ]; then
	echo "check-format: clang-format not found (apt-get install clang-format)"
	[ "${AIRLOCK_TEST_MUST_RUN:-0}" = 1 ] && exit 1
	exit 77
fi

mapfile -t files < <(lint_c_files "$root")
if [ "${#files[@]}" -eq 0 ]; then
	echo "check-format: no C sources found under $root"
	exit 1
fi

cd "$root"
bad=0
for f in "${files[@]}"; do
	if ! problems=$("$clang_format" --style=file --dry-run -Werror "$f" 2>&1); then
		n=$(grep -c 'error: code should be clang-formatted' <<<"$problems" || true)
		echo "$f: not formatted ($n places); the first differences:"
		"$clang_format" --style=file "$f" | diff -u "$f" - | sed -n '3,30p' || true
		bad=$((bad + 1))
	fi
done
if [ "$bad" -gt 0 ]; then
	echo "check-format: $bad of ${#files[@]} files are not formatted as .clang-format says;" \
		"fix with: $clang_format -i FILE"
	exit 1
fi
echo "check-format: ${#files[@]} files: ok ($("$clang_format" --version | head -n 1))"
