#!/bin/bash
# No production source over 650 lines (issue #47): a file that grows past it is split by
# concern, as import_bridge.cpp, layer_graph.cpp and plan.cpp were. Tests (tests/) and
# generated sources (build folders) are not held to it.
# usage: file_length_check.sh SOURCE_DIR [LIMIT]
set -u
src=$1
limit=${2:-650}
cd "$src" || exit 1
mapfile -t files < <(find . \( -path ./.git -o -path './build*' -o -path ./tests -o -path ./node_modules \) -prune \
                         -o \( -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' -o -name '*.h' \) -type f -print | sort)
[ "${#files[@]}" -gt 100 ] || { echo "length check: only ${#files[@]} sources found under $src"; exit 1; }
long=0
for f in "${files[@]}"; do
  n=$(wc -l < "$f")
  if [ "$n" -gt "$limit" ]; then echo "over $limit lines: ${f#./} ($n)"; long=$((long + 1)); fi
done
[ "$long" -eq 0 ] || exit 1
echo "length check: ${#files[@]} production sources, none over $limit lines"
