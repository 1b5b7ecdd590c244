#!/usr/bin/env bash
# `moesim sweep --slurm-script` on a real Slurm (issue #26 item 6): Debian's slurm-wlm and
# munge, a one-node cluster on localhost (munged, slurmctld and slurmd run as the current
# user on free ports, every file in a temporary folder, all stopped at the end).
#
#   1. SIGTERM to a plain `moesim sweep` mid-run: it exits 143, its CSV holds whole rows
#      sorted by id, and `--resume` completes it to the rows of an uninterrupted run.
#   2. The array script (`--tasks 3 --cpus-per-task 1 --partition --time --account`)
#      submitted with `sbatch --wait`: every task completes, and `sweep merge` gives the
#      rows of a direct run.
#   3. `scancel --batch --signal=TERM` mid-task: the script execs moesim, so the signal
#      reaches it; the task ends with exit code 143 and a CSV of whole rows; submitting the
#      same script again resumes it, and the merge equals the direct run.
# Rows are compared without their wall time (sim_wall_s), the one nondeterministic column.
#
#   slurm_sweep_test.sh MOESIM        (run from the source root)
#
# slurm-wlm and munge are installed with apt-get (sudo -n when not root) when missing.
# Where they cannot be, the test is skipped (exit 77) with the reason, except under CI
# (CI set), where that is a failure.
set -uo pipefail

moesim=$(realpath "${1:?usage: slurm_sweep_test.sh MOESIM}")
src=$(pwd)
start=$(date +%s)

skip_or_fail() {
  if [ -n "${CI:-}" ]; then
    echo "FAIL: $1 (CI is set: the Slurm test must run)"
    exit 1
  fi
  echo "SKIP: $1"
  exit 77
}
fail() {
  echo "FAIL: $1"
  for f in "${work:-/nonexistent}"/*.log "${work:-/nonexistent}"/munge/log; do
    [ -f "$f" ] && { echo "--- $f (last 15 lines)"; tail -n 15 "$f"; }
  done
  exit 1
}

if ! command -v sbatch >/dev/null 2>&1 || ! command -v slurmctld >/dev/null 2>&1 ||
   ! command -v slurmd >/dev/null 2>&1 || ! command -v munged >/dev/null 2>&1; then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || skip_or_fail "slurm-wlm is not installed, and neither root nor sudo can install it"
    sudo="sudo -n"
  fi
  echo "installing Debian's slurm-wlm and munge (apt-get install) ..."
  install() {
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null
  }
  if ! install; then
    $sudo apt-get update -qq >/dev/null 2>&1
    install || skip_or_fail "apt-get install slurm-wlm munge failed"
  fi
  for c in sbatch slurmctld slurmd munged; do
    command -v $c >/dev/null 2>&1 || skip_or_fail "$c is still not on PATH after apt-get install"
  done
  start=$(date +%s)
fi
echo "$(slurmd -V), $(munged --version 2>&1 | head -1)"

work=$(mktemp -d)
chmod 700 "$work"
cleanup() {
  for p in slurmd slurmctld munge/munged; do
    [ -f "$work/$p.pid" ] && kill "$(cat "$work/$p.pid")" 2>/dev/null
  done
  sleep 1
  rm -rf "$work"
}
trap cleanup EXIT

# --- the sweeps ----------------------------------------------------------------------------
# small: 64 rows of Qwen3-30B on H100 layouts (fast; 24 simulate, the rest are refused or do
# not fit). big: 48 rows of the default DeepSeek-V3 scenario (~0.15 s each), long enough to
# be stopped in the middle.
cat >"$work/small.json" <<JSON
{"name": "small", "base": "$src/scenarios/examples/qwen3-30b-a3b-h100.json",
 "grid": {"framework.dispatcher": ["alltoall", "deepep"], "training.micro_batch_size": [1, 2]},
 "layouts": {"tp": [1, 2], "pp": [1, 2], "ep": [1, 2, 4, 8]}}
JSON
cat >"$work/big.json" <<JSON
{"name": "big", "base": "$src/scenarios/dsv3-gb200.json",
 "grid": {"framework.dispatcher": ["alltoall", "deepep", "hybridep"],
          "framework.dispatcher_sms": [16, 20, 24, 28, 32, 40, 48, 64],
          "training.global_batch_size": [1024, 2048]}}
JSON

# Two CSVs hold the same rows (ids and every column but sim_wall_s), each row whole.
same_rows() {
  python3 - "$1" "$2" <<'PY'
import csv, sys
def rows(path):
    with open(path, newline="") as f:
        r = list(csv.reader(f))
    header, body = r[0], r[1:]
    wall = header.index("sim_wall_s")
    if any(len(x) != len(header) for x in body):
        sys.exit(f"{path}: a row without every column")
    return header, [x[:wall] + x[wall + 1:] for x in body]
a, b = rows(sys.argv[1]), rows(sys.argv[2])
if a[0] != b[0]: sys.exit("headers differ")
if a[1] != b[1]: sys.exit(f"rows differ: {len(a[1])} against {len(b[1])}")
PY
}
# A CSV's rows are whole and sorted by id; prints how many there are.
sorted_rows() {
  python3 - "$1" <<'PY'
import csv, sys
with open(sys.argv[1], newline="") as f:
    r = list(csv.reader(f))
ids = [int(x[0]) for x in r[1:]]
if any(len(x) != len(r[0]) for x in r[1:]) or ids != sorted(ids):
    sys.exit(f"{sys.argv[1]}: rows not whole or not sorted by id")
print(len(ids))
PY
}
lines() { [ -f "$1" ] && wc -l <"$1" || echo 0; }

"$moesim" sweep "$work/small.json" -o "$work/small-direct.csv" --jobs 2 >/dev/null || fail "direct small sweep"
"$moesim" sweep "$work/big.json" -o "$work/big-direct.csv" --jobs 2 >/dev/null || fail "direct big sweep"
[ "$(lines "$work/big-direct.csv")" -eq 49 ] || fail "the big sweep should have 48 rows"

# --- 1. SIGTERM to a plain process ---------------------------------------------------------
"$moesim" sweep "$work/big.json" -o "$work/term.csv" --jobs 2 >/dev/null 2>"$work/term.err" &
pid=$!
for _ in $(seq 200); do [ "$(lines "$work/term.csv")" -ge 3 ] && break; sleep 0.05; done
kill -TERM $pid
wait $pid
status=$?
[ $status -eq 143 ] || fail "SIGTERM'd sweep exited $status, not 143 ($(cat "$work/term.err"))"
grep -q "stopped by SIGTERM" "$work/term.err" || fail "no stop message: $(cat "$work/term.err")"
kept=$(sorted_rows "$work/term.csv") || fail "the SIGTERM'd CSV"
[ "$kept" -ge 2 ] && [ "$kept" -lt 48 ] || fail "the SIGTERM'd CSV holds $kept rows (expected some, not all)"
"$moesim" sweep "$work/big.json" -o "$work/term.csv" --jobs 2 --resume >/dev/null || fail "--resume after SIGTERM"
same_rows "$work/term.csv" "$work/big-direct.csv" || fail "resumed rows differ from the direct run's"
echo "1. SIGTERM: exit 143 with $kept of 48 rows kept; --resume completed them"

# --- the cluster ---------------------------------------------------------------------------
ports=$(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
read -r ctld_port slurmd_port <<<"$ports"
host=$(hostname -s)
user=$(id -un)
mkdir -p "$work/munge" "$work/state" "$work/spool"
chmod 700 "$work/munge"
head -c 1024 /dev/urandom >"$work/munge/munge.key"
chmod 400 "$work/munge/munge.key"
# --force: munged refuses to run as root, or with a socket under /tmp, without it.
munged --force --socket="$work/munge/sock" --key-file="$work/munge/munge.key" \
  --pid-file="$work/munge/munged.pid" --log-file="$work/munge/log" --seed-file="$work/munge/seed" ||
  fail "munged did not start"
cat >"$work/slurm.conf" <<CONF
ClusterName=moesimtest
SlurmctldHost=$host(127.0.0.1)
AuthType=auth/munge
AuthInfo=socket=$work/munge/sock
SlurmUser=$user
SlurmdUser=$user
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MinJobAge=600
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=moesim Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$work/slurm.conf
slurmctld -i || fail "slurmctld did not start"
slurmd -N localhost || fail "slurmd did not start"
for _ in $(seq 60); do [ "$(sinfo -h -o %T 2>/dev/null)" = idle ] && break; sleep 0.5; done
[ "$(sinfo -h -o %T 2>/dev/null)" = idle ] || fail "the node is not idle: $(sinfo 2>&1)"
echo "one-node Slurm on $host (slurmctld :$ctld_port, slurmd :$slurmd_port) up after $(( $(date +%s) - start )) s"

# --- 2. the array job ----------------------------------------------------------------------
cd "$work" || fail "cd"
"$moesim" sweep small.json --slurm-script --tasks 3 --cpus-per-task 1 --partition moesim --time 0:10:00 \
  --account "$user" -o "$work/array" >array.sbatch || fail "sweep --slurm-script"
for want in "--array=0-2" "--cpus-per-task=1" "--partition=moesim" "--time=0:10:00" "--account=$user"; do
  grep -q -- "^#SBATCH $want\$" array.sbatch || fail "the script lacks #SBATCH $want"
done
timeout 300 sbatch --wait array.sbatch >/dev/null || fail "the array job failed: $(cat "$work"/array_*.log)"
for t in 0 1 2; do [ -f "array_$t.csv" ] || fail "task $t wrote no CSV"; done
"$moesim" sweep merge array_*.csv --sweep small.json -o array.csv >merge.out || fail "merge: $(cat merge.out)"
same_rows array.csv small-direct.csv || fail "the array's merged rows differ from the direct run's"
echo "2. array job: 3 tasks completed; merged rows equal the direct run's"

# --- 3. SIGTERM under Slurm, then the same script again -------------------------------------
"$moesim" sweep big.json --slurm-script --tasks 1 --cpus-per-task 1 -o "$work/stop" >stop.sbatch ||
  fail "sweep --slurm-script (big)"
job=$(sbatch --parsable stop.sbatch) || fail "sbatch"
job=${job%%;*}
for _ in $(seq 600); do [ "$(lines stop_0.csv)" -ge 3 ] && break; sleep 0.1; done
[ "$(lines stop_0.csv)" -ge 3 ] || fail "the task wrote no rows in 60 s"
scancel --batch --signal=TERM "$job" || fail "scancel"
for _ in $(seq 300); do [ -z "$(squeue -h -j "$job" 2>/dev/null)" ] && break; sleep 0.2; done
state=$(scontrol show job "$job" 2>/dev/null | tr ' ' '\n' | grep -E '^(JobState|ExitCode)=' | tr '\n' ' ')
echo "   task after SIGTERM: $state"
case "$state" in *ExitCode=143:0*) ;; *) fail "the task did not exit 143: $state; log: $(cat stop_0.log)" ;; esac
grep -q "stopped by SIGTERM" stop_0.log || fail "no stop message in the task's log: $(cat stop_0.log)"
kept=$(sorted_rows stop_0.csv) || fail "the stopped task's CSV"
[ "$kept" -lt 48 ] || fail "the task finished every row before SIGTERM: stop it earlier"
timeout 300 sbatch --wait stop.sbatch >/dev/null || fail "the resubmitted task failed: $(cat stop_0.log)"
"$moesim" sweep merge stop_*.csv --sweep big.json -o stop.csv >merge.out || fail "merge: $(cat merge.out)"
same_rows stop.csv big-direct.csv || fail "the resumed task's rows differ from the direct run's"
echo "3. scancel --signal=TERM: exit 143 with $kept of 48 rows kept; the same script again completed them"
echo "slurm test: $(( $(date +%s) - start )) s"
