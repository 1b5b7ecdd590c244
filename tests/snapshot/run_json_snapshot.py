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

    run_json_snapshot.py compare DIR --rel-tol 1e-7 [--abs-tol 1e-6] [--ignore events]

accepts, for a change that only rounds differently (simulating a run of kernels as one
kernel rounds its end to the picosecond once, not per kernel), numbers within a relative
tolerance or an absolute one (default 1e-9: seconds near zero; an error in percent of a
nearly exact prediction moves by more), and ignores the named JSON keys (the engine's
event count); the text and the JSON structure must still match exactly. It reports the
largest relative difference it accepted beyond the absolute tolerance.
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


NUMBER = re.compile(r"(-?\d+\.?\d*(?:e[-+]?\d+)?)")


def within(before, after, rel, absolute, ignore):
    """(True, largest relative difference) when the two outputs differ only in numbers
    within `rel` and in the ignored keys' values."""
    worst = [0.0]

    def num(a, b):
        d = abs(a - b)
        if d <= absolute:
            return True
        if d > rel * max(abs(a), abs(b)):
            return False
        worst[0] = max(worst[0], d / max(abs(a), abs(b)))
        return True

    def walk(x, y):
        if isinstance(x, dict) and isinstance(y, dict):
            return x.keys() == y.keys() and all(k in ignore or walk(x[k], y[k]) for k in x)
        if isinstance(x, list) and isinstance(y, list):
            return len(x) == len(y) and all(walk(p, q) for p, q in zip(x, y))
        if isinstance(x, (int, float)) and isinstance(y, (int, float)) and not isinstance(x, bool):
            return num(float(x), float(y))
        return x == y

    head_b, _, body_b = before.partition("--- stdout\n")
    head_a, _, body_a = after.partition("--- stdout\n")
    out_b, _, err_b = body_b.partition("\n--- stderr\n")
    out_a, _, err_a = body_a.partition("\n--- stderr\n")
    if head_a != head_b or err_a != err_b:
        return False, 0.0
    try:
        return walk(json.loads(out_b), json.loads(out_a)), worst[0]
    except ValueError:
        pb, pa = NUMBER.split(out_b), NUMBER.split(out_a)
        if len(pb) != len(pa):
            return False, 0.0
        for i, (x, y) in enumerate(zip(pb, pa)):
            if x != y and not (i % 2 == 1 and num(float(x), float(y))):
                return False, 0.0
        return True, worst[0]


def run_all(moesim, cmds):
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        return list(pool.map(lambda c: output(moesim, c), cmds))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["record", "compare"])
    ap.add_argument("dir")
    ap.add_argument("--moesim", default=os.path.join(ROOT, "build", "moesim"))
    ap.add_argument("--rel-tol", type=float, default=0.0, help="compare: accept numbers within this relative tolerance")
    ap.add_argument("--abs-tol", type=float, default=1e-9, help="compare: and within this absolute one")
    ap.add_argument("--ignore", action="append", default=[], help="compare: a JSON key whose value may differ")
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
    differ = tolerated = 0
    largest = 0.0
    for cmd, after in zip(cmds, run_all(moesim, cmds)):
        path = os.path.join(a.dir, key(cmd))
        if not os.path.exists(path):
            print(f"no recorded output: moesim {' '.join(cmd)}")
            differ += 1
            continue
        with open(path) as f:
            before = f.read()
        if after != before:
            ok, worst = within(before, after, a.rel_tol, a.abs_tol, set(a.ignore)) if a.rel_tol > 0 or a.ignore else (False, 0)
            if ok:
                tolerated += 1
                largest = max(largest, worst)
                continue
            differ += 1
            print(f"differs: moesim {' '.join(cmd)}")
    print(f"{len(cmds) - differ - tolerated} of {len(cmds)} outputs identical")
    if tolerated:
        print(f"{tolerated} within the tolerance (largest relative difference {largest:.3g})")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
