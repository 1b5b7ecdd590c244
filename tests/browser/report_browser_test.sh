#!/usr/bin/env bash
# `moesim report`'s four pages opened in headless Chromium (Debian's `chromium`): each loads
# with no console message (the page logs nothing itself, so any line is an error, a Vega
# warning or an uncaught exception), draws every chart (the page marks <body> with
# data-charts="drawn" and data-charts-drawn=N once each Vega view has run; the SVG
# renderer leaves one <svg> per chart), and is photographed for a person to look at.
#
#   report_browser_test.sh MOESIM SCREENSHOT_DIR      (run from the source root)
#
# Chromium is installed with apt-get (sudo -n when not root) when missing. Where it cannot
# be, the test is skipped (exit 77) with the reason, except under CI (CI set), where that
# is a failure.
set -uo pipefail

moesim=${1:?usage: report_browser_test.sh MOESIM SCREENSHOT_DIR}
shots=${2:?usage: report_browser_test.sh MOESIM SCREENSHOT_DIR}
start=$(date +%s%N)

skip_or_fail() {
  if [ -n "${CI:-}" ]; then
    echo "FAIL: $1 (CI is set: the browser test must run)"
    exit 1
  fi
  echo "SKIP: $1"
  exit 77
}

if ! command -v chromium >/dev/null 2>&1; then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || skip_or_fail "chromium is not installed, and neither root nor sudo can install it"
    sudo="sudo -n"
  fi
  echo "installing Debian's chromium (apt-get install chromium) ..."
  install() { DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium >/dev/null; }
  if ! install; then
    $sudo apt-get update -qq >/dev/null 2>&1
    install || skip_or_fail "apt-get install chromium failed"
  fi
  command -v chromium >/dev/null 2>&1 || skip_or_fail "chromium is still not on PATH after apt-get install"
  start=$(date +%s%N)  # the time limit counts from here
fi
echo "$(chromium --version 2>/dev/null | head -1)"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$shots"

# The four kinds of report from shipped files.
"$moesim" sweep scenarios/sweeps/qwen3-30b-h100-quick.json -o "$work/qwen3-30b-h100-quick.csv" --top 1 >/dev/null || {
  echo "FAIL: moesim sweep"; exit 1; }
declare -A args=(
  [run]="scenarios/dsv3-gb200.json"
  [diff]="--diff scenarios/journey/10-graph-shared-expert.json scenarios/journey/11-hybridep.json"
  [validate]="--validate scenarios/journey"
  [sweep]="--sweep $work/qwen3-30b-h100-quick.csv"
)
declare -A charts=([run]=4 [diff]=2 [validate]=2 [sweep]=2 [plan]=4)

browser() {
  timeout 60 chromium --headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run \
    --user-data-dir="$work/profile" --virtual-time-budget=10000 "$@"
}

failed=0
# A plan's page is written by the plan itself (moesim plan --html).
page() {
  if [ "$1" = plan ]; then
    "$moesim" plan scenarios/examples/qwen3-30b-a3b-h100.json --gpus 16 --top 3 --given -o "$work/plan.csv" --html "$2"
  else
    # shellcheck disable=SC2086
    "$moesim" report ${args[$1]} -o "$2"
  fi
}
for kind in run diff validate sweep plan; do
  html="$work/$kind.html"
  if ! page "$kind" "$html" >"$work/$kind.out" 2>&1; then
    echo "FAIL $kind: $(cat "$work/$kind.out")"
    failed=1
    continue
  fi
  size=$(stat -c %s "$html")
  browser --enable-logging=stderr --v=0 --dump-dom "file://$html" >"$work/$kind.dom" 2>"$work/$kind.log"
  body=$(grep -o '<body[^>]*>' "$work/$kind.dom" | head -1)
  svgs=$(grep -o '<svg' "$work/$kind.dom" | wc -l)
  console=$(grep -E ':CONSOLE[:(]|Uncaught' "$work/$kind.log")
  want=${charts[$kind]}
  problems=""
  [[ "$body" == *'data-charts="drawn"'* ]] || problems+=" charts not drawn (body: ${body:-none});"
  [[ "$body" == *"data-charts-total=\"$want\""* && "$body" == *"data-charts-drawn=\"$want\""* ]] ||
    problems+=" expected $want charts drawn (body: ${body:-none});"
  [[ "$body" != *data-chart-errors* ]] || problems+=" chart errors;"
  [ "$svgs" -eq "$want" ] || problems+=" $svgs <svg> elements where $want charts;"
  [ -z "$console" ] || problems+=" console messages:
$console
"
  png="$shots/report-$kind.png"
  rm -f "$png"
  browser --hide-scrollbars --window-size=1400,2400 --screenshot="$png" "file://$html" >/dev/null 2>&1
  [ -s "$png" ] || problems+=" no screenshot;"
  if [ -n "$problems" ]; then
    cp "$html" "$shots/report-$kind.html"
    echo "FAIL $kind ($shots/report-$kind.html, $size bytes):$problems"
    failed=1
  else
    echo "ok   $kind: $want charts drawn, no console message, $((size / 1024)) KB; screenshot $png"
  fi
done

elapsed_ms=$((($(date +%s%N) - start) / 1000000))
echo "browser test: $((elapsed_ms / 1000)).$(printf %03d $((elapsed_ms % 1000))) s with chromium installed"
exit $failed
