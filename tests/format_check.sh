#!/bin/bash
# The C++ sources as .clang-format lays them out (issue #47 item 4), checked with Debian 12's
# clang-format 14 (`make deps` installs it): any file it would change fails the test, named
# with the first lines it would change. Fix: clang-format -i FILE (twice where a comment's
# alignment settles on the second pass).
# usage: format_check.sh SOURCE_DIR [CLANG_FORMAT]
set -u
src=$1
cf=${2:-clang-format}
command -v "$cf" >/dev/null || { echo "format check: $cf not found (make deps installs clang-format)"; exit 1; }
cd "$src" || exit 1
mapfile -t files < <(find . \( -path ./.git -o -path './build*' -o -path ./tests/data -o -path ./node_modules \) -prune \
                         -o \( -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' -o -name '*.h' \) -type f -print | sort)
[ "${#files[@]}" -gt 100 ] || { echo "format check: only ${#files[@]} sources found under $src"; exit 1; }
out=$("$cf" --dry-run --Werror "${files[@]}" 2>&1)
if [ -n "$out" ]; then
  echo "$out" | grep 'error:' | cut -d: -f1 | sort -u | sed 's/^/not formatted: /'
  echo "$out" | head -40
  exit 1
fi
echo "format check: ${#files[@]} files as .clang-format lays them out ($("$cf" --version | head -1))"
