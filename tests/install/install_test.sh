#!/bin/bash
# Installs moesim the three ways a user would (issue #27 item 2) into temporary folders
# and runs what was installed: `cmake --install --prefix`, the Debian package from
# `cpack -G DEB` (unpacked with dpkg-deb, not installed system-wide), and `pip install .`
# into a fresh virtual environment without an index. Each installed `moesim run` and
# `import moesim` must predict the shipped default scenario.
# Usage: install_test.sh SOURCE_DIR BUILD_DIR PYTHON (the interpreter the module is built for)
set -euo pipefail
src=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
python=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "install test: $*" >&2; exit 1; }

# The installed program on the installed default scenario: its step time.
check_run() {  # BIN SCENARIO
  out=$("$1" run "$2") || fail "$1 run $2 failed"
  grep -q "^step time *[0-9.]* s" <<<"$out" || fail "$1 run: no step time in: $out"
}
check_module() {  # PYTHON SCENARIO [PYTHONPATH]
  (cd "$tmp" && PYTHONPATH="${3:-}" "$1" -c "
import sys, moesim
r = moesim.run(sys.argv[1])
assert r['step_time_s'] > 0, r
print('module', moesim.__file__, r['step_time_s'])" "$2") || fail "import moesim with $1 failed"
}

echo "== cmake --install --prefix"
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
p=$tmp/prefix
check_run "$p/bin/moesim" "$p/share/moesim/scenarios/dsv3-gb200.json"
zcat "$p/share/man/man1/moesim.1.gz" | grep -q '^\.SS schema' || fail "the man page lacks the schema subcommand"
[ -s "$p/share/moesim/schema/scenario.schema.json" ] || fail "no scenario schema installed"
[ -s "$p/share/doc/moesim/docs/SCENARIO_FORMAT.md" ] || fail "no docs/SCENARIO_FORMAT.md installed"
pydir=$(ls -d "$p"/lib/python3*/site-packages)
check_module "$python" "$p/share/moesim/scenarios/dsv3-gb200.json" "$pydir"
[ -s "$p/share/doc/moesim/LICENSE" ] || fail "no LICENSE installed"
# A shipped scenario by its name, from any folder (issue #46 item 4).
(cd "$tmp" && check_run "$p/bin/moesim" dsv3-gb200)
(cd "$tmp" && "$p/bin/moesim" describe journey/04-deepep | grep -q "$p/share/moesim/scenarios/journey/04-deepep.json") ||
  fail "the installed moesim did not find journey/04-deepep by name"

echo "== cmake --install --prefix ~/.local, then import moesim as is (issue #46 item 4)"
home=$tmp/home
cmake --install "$build" --prefix "$home/.local" >/dev/null
(cd "$tmp" && env -u PYTHONPATH -u PYTHONNOUSERSITE HOME="$home" "$python" -c "
import sys, moesim
assert moesim.__file__.startswith(sys.argv[1]), moesim.__file__
print('user site', moesim.__file__)" "$home/.local") || fail "import moesim after --prefix ~/.local failed"

echo "== cpack -G DEB"
(cd "$build" && cpack -G DEB -B "$tmp/pkg" >/dev/null) || fail "cpack failed"
deb=$(ls "$tmp"/pkg/moesim_*.deb)
depends=$(dpkg-deb -f "$deb" Depends)
for lib in libfmt9 libstdc++6 python3; do
  grep -q "$lib" <<<"$depends" || fail "$deb: Depends lacks $lib: $depends"
done
# The module loads in one Python only: the dependency says which, exactly.
pyver=$("$python" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
pynext=$("$python" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1] + 1}")')
grep -q "python3 (>= $pyver), python3 (<< $pynext)" <<<"$depends" || fail "$deb: Depends not exact on Python $pyver: $depends"
dpkg-deb -x "$deb" "$tmp/root"
r=$tmp/root/usr
check_run "$r/bin/moesim" "$r/share/moesim/scenarios/dsv3-gb200.json"
[ -s "$r/share/man/man1/moesim.1.gz" ] || fail "$deb: no man page"
grep -q '^Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' "$r/share/doc/moesim/copyright" &&
  grep -q '^License: Apache-2.0' "$r/share/doc/moesim/copyright" || fail "$deb: no machine-readable copyright file"
check_module "$python" "$r/share/moesim/scenarios/dsv3-gb200.json" "$r/lib/python3/dist-packages"
# Debian's checks (issue #46 item 4): no error or warning from lintian (installed by
# `make deps`); where it is missing the test says so and checks the rest.
if command -v lintian >/dev/null; then
  tags=$(lintian --tag-display-limit 0 --fail-on none "$deb" 2>/dev/null | grep -E '^[EW]: ' || true)
  [ -z "$tags" ] || fail "$deb: lintian reports
$tags"
  echo "lintian: no errors or warnings"
else
  echo "lintian: not installed (make deps installs it); skipped"
fi

echo "== pip install . (a virtual environment, no index)"
"$python" -m venv "$tmp/venv"
MOESIM_BUILD_DIR="$build" "$tmp/venv/bin/pip" install --no-index --quiet "$src" || fail "pip install failed"
check_module "$tmp/venv/bin/python" "$src/scenarios/dsv3-gb200.json"
echo "install test: all three installs predict the default scenario"
