#!/usr/bin/env python3
"""Before/after check for restructurings that must not change a prediction.

    run_json_snapshot.py record DIR [--moesim build/moesim]
    run_json_snapshot.py compare DIR [--moesim build/moesim]

`record` runs `moesim run --json` on every JSON file under scenarios/ (presets and sweep
files included: what they print, an error and its exit status among it, is compared too),
`describe --json` on the same files, and a fixed list of the other subcommands that price
something themselves (comm, pipeline, infer, validate --json), and writes what each printed
to DIR, one file per command, with the wall-time fields ("wall_s", and the text report's wall time) removed. `compare` runs
the same commands and reports every output that differs from DIR's: exit 1 on any
difference, 0 when all are identical. Deterministic outputs make exact comparison the test.
"""
import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

# Commands beyond run/describe over the scenario files: the communication model, the
# pipeline schedule alone, the journey inference and the validation registries.
EXTRA = [
    ["comm", "--system", "gb200-nvl72", "--op", "all-reduce", "--ranks", "72", "--json"],
    ["comm", "--system", "h800", "--op", "all-gather", "--ranks", "64", "--bytes", "268435456", "--json"],
    ["comm", "--system", "h100", "--op", "reduce-scatter", "--ranks", "16", "--protocol", "ll128", "--json"],
    ["comm", "--system", "h800", "--op", "ep-dispatch", "--ep", "32", "--dispatcher", "deepep", "--json"],
    ["comm", "--system", "gb200-nvl72", "--op", "ep-combine", "--ep", "64", "--dispatcher", "hybridep", "--json"],
    ["comm", "--system", "h800", "--op", "ep-dispatch", "--ep", "16", "--dispatcher", "deepep",
     "--low-latency", "--dtype", "fp8", "--json"],
    ["comm", "--system", "h100", "--op", "ep-dispatch", "--ep", "8", "--dispatcher", "alltoall", "--json"],
    ["comm", "--system", "gb200-nvl72", "--op", "send-recv", "--ranks", "2", "--json"],
    ["pipeline", "--schedule", "interleaved-1f1b", "--pp", "4", "--vpp", "2", "--microbatches", "16",
     "--fwd", "1", "--bwd", "2", "--p2p", "0.1", "--json"],
    ["pipeline", "--schedule", "dualpipev", "--pp", "4", "--microbatches", "20", "--fwd", "1", "--bwd", "2",
     "--wgrad", "0.8", "--json"],
    ["infer", "numa_unbound_factor", "scenarios/journey/07-deepep-tuned.json",
     "scenarios/journey/08-numa-binding.json", "--json"],
    ["validate", "scenarios", "--json"],
    # Every rank simulated, and a trace (written to standard output before the text report).
    ["run", "scenarios/examples/qwen3-30b-a3b-h100.json", "--fidelity", "full", "--json"],
    ["run", "scenarios/examples/qwen3-30b-a3b-h100.json", "--trace", "/dev/stdout"],
]


def strip_wall(x):
    if isinstance(x, dict):
        return {k: strip_wall(v) for k, v in x.items() if k != "wall_s"}
    if isinstance(x, list):
        return [strip_wall(v) for v in x]
    return x


def commands():
    files = []
    for base, dirs, names in os.walk(os.path.join(ROOT, "scenarios")):
        dirs.sort()
        files += [os.path.relpath(os.path.join(base, n), ROOT) for n in sorted(names) if n.endswith(".json")]
    out = []
    for f in files:
        out.append(["run", f, "--json"])
        out.append(["describe", f, "--json"])
    return out + EXTRA


def key(cmd):
    text = " ".join(cmd)
    slug = "".join(c if c.isalnum() else "_" for c in text)[:80]
    return slug + "-" + hashlib.sha1(text.encode()).hexdigest()[:8] + ".txt"


def output(moesim, cmd):
    r = subprocess.run([moesim] + cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    body = r.stdout
    try:
        body = json.dumps(strip_wall(json.loads(r.stdout)), indent=1)
    except ValueError:
        # Text reports: the simulation's wall time ("... events in 0.078 s").
        body = re.sub(r"events in [0-9.]+ s", "events in <wall> s", body)
    return f"$ moesim {' '.join(cmd)}\nexit {r.returncode}\n--- stdout\n{body}\n--- stderr\n{r.stderr}"


def run_all(moesim, cmds):
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        return list(pool.map(lambda c: output(moesim, c), cmds))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["record", "compare"])
    ap.add_argument("dir")
    ap.add_argument("--moesim", default=os.path.join(ROOT, "build", "moesim"))
    a = ap.parse_args()
    moesim = os.path.abspath(a.moesim)
    cmds = commands()
    if a.mode == "record":
        os.makedirs(a.dir, exist_ok=True)
        for cmd, text in zip(cmds, run_all(moesim, cmds)):
            with open(os.path.join(a.dir, key(cmd)), "w") as f:
                f.write(text)
        print(f"recorded {len(cmds)} outputs in {a.dir}")
        return 0
    differ = 0
    for cmd, after in zip(cmds, run_all(moesim, cmds)):
        path = os.path.join(a.dir, key(cmd))
        if not os.path.exists(path):
            print(f"no recorded output: moesim {' '.join(cmd)}")
            differ += 1
            continue
        with open(path) as f:
            before = f.read()
        if after != before:
            differ += 1
            print(f"differs: moesim {' '.join(cmd)}")
    print(f"{len(cmds) - differ} of {len(cmds)} outputs identical")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
