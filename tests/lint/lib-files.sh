# shellcheck shell=bash
# Sourced by the lint checks: lists the C sources of the tree whose root is $1.
# In a git work tree: tracked files plus new files not ignored by .gitignore (so a file is
# checked before it is committed); elsewhere (a release tarball): find, without build folders.

lint_c_files()
{
	local root=$1

	if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		git -C "$root" ls-files --cached --others --exclude-standard -- '*.c' '*.h' |
			while IFS= read -r f; do
				# ls-files --cached still lists a tracked file deleted in the work tree
				[ -f "$root/$f" ] && printf '%s\n' "$f"
			done | sort -u
	else
		(cd "$root" && find . \( -name 'build*' -o -name '.git' -o -name subprojects \) -prune \
			-o -type f \( -name '*.c' -o -name '*.h' \) -print | sed 's|^\./||' | sort)
	fi
}
