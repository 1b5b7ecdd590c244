#!/bin/bash
# A shipped scenario by its name from any folder (issue #46 item 4): the build tree's
# binary finds BIN/../scenarios/journey/04-deepep.json; a name that is nothing exits 2.
# Usage: shipped_name_test.sh MOESIM
set -uo pipefail
moesim=$1
cd "$(mktemp -d)" || exit 1
trap 'rm -rf "$PWD"' EXIT
"$moesim" describe journey/04-deepep | grep -q 'scenarios/journey/04-deepep.json' || { echo "journey/04-deepep not found by name"; exit 1; }
"$moesim" run dsv3-gb200 | grep -q '^step time' || { echo "dsv3-gb200 did not run by name"; exit 1; }
"$moesim" run no-such-scenario 2>err.txt
[ $? -eq 2 ] && grep -q 'no-such-scenario: (top level): cannot open the file' err.txt || { echo "a name that is nothing: not exit 2"; exit 1; }
echo "shipped scenarios found by name"
