#!/usr/bin/env python3
"""The practice table (issue #26 item 3): every run of the step-time validation corpus
planned on its own system and GPU count, with the published recipe ranked among the
candidates (`moesim plan SCENARIO --given --json`).

    docs/practice/practice_table.py [--moesim build/moesim] [--jobs 2] [--only SUBSTRING]

The corpus is every scenario under scenarios/ with a `measured` step-time figure
(tokens_per_s_per_gpu, tflops_per_gpu or step_time_s) that is not held out: the runs
`moesim calibrate corpus` fits. Each plan's JSON is kept in docs/practice/plans/ (one file
per run, the plan's CSV beside it is not kept); the table between the markers in
docs/PRACTICE.md is rewritten from them. A plan whose JSON is already there is not run
again unless --rerun is given, so the notes under the table can be edited by hand.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLANS = os.path.join(ROOT, "docs", "practice", "plans")
DOC = os.path.join(ROOT, "docs", "PRACTICE.md")
BEGIN, END = "<!-- practice-table begin -->", "<!-- practice-table end -->"
FIGURES = ("tokens_per_s_per_gpu", "tflops_per_gpu", "step_time_s")
LAYOUT = (("parallelism.tp", "TP"), ("parallelism.pp", "PP"), ("parallelism.vpp", "VPP"), ("parallelism.ep", "EP"),
          ("parallelism.cp", "CP"), ("training.micro_batch_size", "MBS"))


def corpus():
    runs = []
    for f in sorted(glob.glob(os.path.join(ROOT, "scenarios", "**", "*.json"), recursive=True)):
        try:
            j = json.load(open(f))
        except ValueError:
            continue
        m = j.get("measured") if isinstance(j, dict) else None
        if not isinstance(m, dict) or m.get("held_out"):
            continue
        figure = next((k for k in FIGURES if k in m), None)
        if figure:
            runs.append((os.path.relpath(f, ROOT), j, figure, m[figure]))
    return runs


def plan_path(rel):
    """Where the plan of the corpus run `rel` is kept."""
    return os.path.join(PLANS, os.path.splitext(os.path.basename(rel))[0] + ".json")


def evidence_path(rel):
    """Where `moesim diff --json` of the published recipe against the plan's best is kept."""
    return os.path.join(PLANS, os.path.splitext(os.path.basename(rel))[0] + ".evidence.json")


CLAIM_PCT = 10  # claimed gains above this need a published measurement of their decisions


def best_scenario(rel, p):
    """The published scenario with the plan's columns set to its best row's values."""
    top = p["top"][0]
    best = json.load(open(os.path.join(ROOT, rel)))
    for k, v in top.items():
        if "." not in k or k.startswith("breakdown.") or k.startswith("memory.") or k.startswith("goodput."):
            continue
        section, key = k.split(".", 1)
        if section in ("parallelism", "framework", "training", "stack", "placement"):
            best.setdefault(section, {})[key] = v
    best["gpus"] = top.get("gpus", best.get("gpus"))
    best.pop("measured", None)
    best["name"] = best["name"] + "-plan-best"
    return best


def diff_best(moesim, rel, p):
    """`moesim diff --json` of the published scenario (A) against its plan's best (B)."""
    # Beside the published file so that its relative paths (a histogram, a model config) resolve.
    path = os.path.join(os.path.dirname(os.path.join(ROOT, rel)),
                        f".plan-best-{os.getpid()}-{threading.get_ident()}.json")
    try:
        json.dump(best_scenario(rel, p), open(path, "w"))
        return subprocess.run([moesim, "diff", "--json", rel, os.path.relpath(path, ROOT)], cwd=ROOT,
                              capture_output=True, text=True)
    finally:
        os.remove(path)


def evidence(moesim, rel, p):
    """`moesim diff --json` of the published scenario against its plan's best: the gain and
    what the what-if corpus says about the decisions behind it (issue #44 item 4)."""
    if not p.get("top"):
        return None
    out = diff_best(moesim, rel, p)
    if out.returncode != 0:
        return {"error": (out.stderr or out.stdout).strip().splitlines()[-1:]}
    d = json.loads(out.stdout)
    return {"gain_pct": d["evidence"]["gain_pct"], "evidence": d["evidence"],
            "settings_changed": [c["path"] for c in d["settings_changed"]]}


def inside(v, band):
    return band[0] <= v <= band[1]


def binary_disagreement(moesim, rel, p):
    """Where the table's figures for one run fall outside today's binary's 80% bands (issue
    #45 item 6): the published recipe's and the best's tokens/s/GPU against the bands of the
    binary's predictions of them (`run --json`'s `bands`), and the table's gain against the
    binary's ratio band (`diff --json`'s `ratio_band`: the measured pairs' out-of-sample
    ratio errors). Returns (problems, figures): problems empty when the table holds."""
    g = p.get("given", {})
    if "error" in p or g.get("status") != "ok" or not p.get("top"):
        return [], None
    out = diff_best(moesim, rel, p)
    if out.returncode != 0:
        return [f"moesim diff failed: {(out.stderr or out.stdout).strip().splitlines()[-1:]}"], None
    d = json.loads(out.stdout)
    tg, tb = g["tokens_per_s_per_gpu"], p["top"][0]["tokens_per_s_per_gpu"]
    bg, bb = d["a"]["tokens_per_s_per_gpu"], d["b"]["tokens_per_s_per_gpu"]
    problems = []
    for what, table_v, side in (("the published recipe", tg, "a"), ("moesim's best", tb, "b")):
        band = d[side].get("bands", {}).get("tokens_per_s_per_gpu")
        # A model moesim misses one way has a band that leaves out its own prediction
        # (predict/bands.hpp): the table is stale when it lies beyond the band's spread
        # from the binary's figure, so the band is stretched to reach that figure.
        if band:
            v = d[side]["tokens_per_s_per_gpu"]
            band = [min(band[0], v), max(band[1], v)]
        if band and not inside(table_v, band):
            problems.append(f"{what}: the table has {table_v:,.0f} tok/s/GPU, the binary {d[side]['tokens_per_s_per_gpu']:,.0f} "
                            f"(its 80% band {band[0]:,.0f} to {band[1]:,.0f})")
    rband = d.get("ratio_band", {}).get("tokens_per_s_per_gpu_ratio")
    if rband and not inside(tb / tg, rband):
        problems.append(f"best vs published: the table has {100 * (tb / tg - 1):+.1f}%, the binary {100 * (bb / bg - 1):+.1f}% "
                        f"(its 80% ratio band {100 * (rband[0] - 1):+.1f}% to {100 * (rband[1] - 1):+.1f}%)")
    return problems, {"given": bg / tg - 1, "best": bb / tb - 1, "gain_pts": 100 * (bb / bg - tb / tg)}


def evidence_cell(ev):
    if ev is None:
        return ""
    if "error" in ev:
        return "diff failed: " + " ".join(ev["error"])
    e = ev["evidence"]
    parts = []
    for d in e["decisions"]:
        if d["pairs"] == 0:
            parts.append(f"{d['decision']} (no pair)")
        else:
            wrong = f", {d['wrong_direction']} wrong way" if d["wrong_direction"] else ""
            parts.append(f"{d['decision']} ({d['pairs']}, err {d['mean_abs_ratio_error_pct']:.1f}%, "
                         f"seen {d['max_measured_effect_pct']:.0f}%{wrong})")
    return f"**{e['support']}**: " + "; ".join(parts)


def plan(moesim, rel, jobs):
    with tempfile.TemporaryDirectory() as d:
        t0 = time.time()
        out = subprocess.run([moesim, "plan", rel, "--given", "--top", "3", "--json", "--jobs", str(jobs),
                              "-o", os.path.join(d, "plan.csv")], cwd=ROOT, capture_output=True, text=True)
        if out.returncode != 0:
            return {"error": (out.stderr or out.stdout).strip().splitlines()[-1:], "wall_s": {"total": time.time() - t0}}
        return json.loads(out.stdout)


def layout(row):
    parts = [f"{short}{row.get(k, 1)}" for k, short in LAYOUT
             if row.get(k) not in (None, "", 1) or k in ("parallelism.tp", "parallelism.pp")]
    d = row.get("framework.dispatcher")
    if d:
        parts.append(d)
    if row.get("framework.moe_a2a_overlap") is True:
        parts.append("a2a-overlap")
    r = row.get("framework.recompute_modules")
    if r:
        parts.append("recompute " + "+".join(r))
    elif r == []:
        parts.append("no recompute")
    return " ".join(parts)


def given_layout(scenario):
    # The given row holds the columns the file sets; the rest are the loader's defaults.
    p = scenario.get("parallelism", {})
    row = {"parallelism." + k: p.get(k, 1) for k in ("tp", "pp", "vpp", "ep", "cp")}
    row["training.micro_batch_size"] = scenario.get("training", {}).get("micro_batch_size", 1)
    fw = scenario.get("framework", {})
    for k in ("dispatcher", "moe_a2a_overlap", "recompute_modules"):
        if k in fw:
            row["framework." + k] = fw[k]
    return layout(row)


TERMS = (("compute", "compute"), ("exposed_communication", "comm"), ("pipeline_bubble", "bubble"),
         ("host_bound_idle", "host"), ("other", "other"), ("straggler_wait", "straggler"))


def where(given, best):
    """Where the step time goes between the two at the same global batch and GPUs: the
    critical rank's breakdown terms that moved most, in seconds."""
    d = [(best.get("breakdown." + k, 0) - given.get("breakdown." + k, 0), short) for k, short in TERMS]
    d = sorted((x for x in d if abs(x[0]) >= 0.05 * given["step_time_s"] / 10), key=lambda x: x[0])[:2]
    return ", ".join(f"{short} {v:+.2f} s" for v, short in d if v < 0) or "no term fell"


def fmt(v, figure):
    return f"{v:.2f} s" if figure == "step_time_s" else f"{v:,.0f}"


def table(runs):
    head = ("| Run | System, GPUs | Published recipe | Measured | moesim on it | Rank | moesim's best | "
            "Best vs published (tok/s/GPU; step time's terms that fell) | What backs a gain over "
            f"{CLAIM_PCT}% (decision: measured pairs, their mean ratio error, the largest effect seen) | "
            "Simulated of candidates | Plan |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|\n")
    rows = []
    for rel, j, figure, measured in runs:
        name = os.path.splitext(os.path.basename(rel))[0]
        p = json.load(open(plan_path(rel)))
        unit = {"tokens_per_s_per_gpu": "tok/s/GPU", "tflops_per_gpu": "TFLOPS/GPU", "step_time_s": "step"}[figure]
        system = f"{j.get('system')}, {j.get('gpus')}"
        if "error" in p:
            rows.append(f"| `{name}` | {system} | {given_layout(j)} | {fmt(measured, figure)} {unit} | "
                        f"plan failed: {' '.join(p['error'])} | | | | | | |")
            continue
        g = p.get("given", {})
        pred = g.get(figure)
        err = f" ({100 * (pred / measured - 1):+.1f}%)" if pred else ""
        on_it = f"{fmt(pred, figure)}{err}" if pred else f"{g.get('status')}: {g.get('message', '')[:60]}"
        rank = g.get("rank")
        top = p.get("top", [])
        best = top[0] if top else None
        tok_g, tok_b = g.get("tokens_per_s_per_gpu"), best and best.get("tokens_per_s_per_gpu")
        gap = f"{100 * (tok_b / tok_g - 1):+.1f}%" if tok_g and tok_b else ""
        if best and tok_g and g.get("step_time_s") and best.get("step_time_s"):
            gap += f" ({where(g, best)})"
        claim = ""
        if tok_g and tok_b and 100 * (tok_b / tok_g - 1) > CLAIM_PCT:
            ev_file = evidence_path(rel)
            claim = evidence_cell(json.load(open(ev_file))) if os.path.exists(ev_file) else "not assessed yet"
        rows.append(f"| `{name}` | {system} | {given_layout(j)} | {fmt(measured, figure)} {unit} | {on_it} | "
                    f"{rank if rank else '-'} | {layout(best) if best else '-'} | {gap} | {claim} | "
                    f"{p['simulated']:,} of {p['combinations']:,} | {p['wall_s']['total']:.0f} s |")
    return head + "\n".join(rows) + "\n"


def check_binary(moesim, runs, jobs, only="", perturb_given_pct=0.0):
    """The table against today's binary (issue #45 item 6): exit 1, naming each run and
    figure, when one lies outside the binary's bands; the table is then stale and
    `practice_table.py --rerun` makes it again. `perturb_given_pct` (the check's own test)
    moves the plans' published-recipe figures as a stale table would have them."""
    plans = [(rel, json.load(open(plan_path(rel)))) for rel, *_ in runs if only in rel]
    for _, p in plans:
        if p.get("given", {}).get("tokens_per_s_per_gpu"):
            p["given"]["tokens_per_s_per_gpu"] *= 1 + perturb_given_pct / 100
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(lambda rp: binary_disagreement(moesim, *rp), plans))
    stale, worst = [], {"given": (0, ""), "best": (0, ""), "gain_pts": (0, "")}
    for (rel, _), (problems, figures) in zip(plans, results):
        name = os.path.splitext(os.path.basename(rel))[0]
        stale += [f"{name}: {x}" for x in problems]
        for k, v in (figures or {}).items():
            if abs(v) > abs(worst[k][0]):
                worst[k] = (v, name)
    checked = sum(1 for _, f in results if f is not None)
    print(f"today's binary on the table's {checked} plans (the published recipe and moesim's best predicted again): "
          f"largest change of the published recipe's tok/s/GPU {100 * worst['given'][0]:+.2f}% ({worst['given'][1] or '-'}), "
          f"of the best's {100 * worst['best'][0]:+.2f}% ({worst['best'][1] or '-'}), of the gain "
          f"{worst['gain_pts'][0]:+.2f} points ({worst['gain_pts'][1] or '-'})")
    if stale:
        print(f"{DOC} is stale: {len(stale)} figures lie outside today's binary's 80% bands; "
              "remake it with docs/practice/practice_table.py --rerun (about 80 minutes on 2 cores):",
              *stale, sep="\n  ")
        return 1
    print("every figure of the table lies inside the binary's 80% bands")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--moesim", default=os.path.join(ROOT, "build", "moesim"))
    ap.add_argument("--jobs", type=int, default=0)
    ap.add_argument("--only", default="")
    ap.add_argument("--rerun", action="store_true")
    ap.add_argument("--rerun-evidence", action="store_true",
                    help="assess every claimed gain again (after calibration/evidence/decisions.json changed)")
    ap.add_argument("--check", action="store_true",
                    help="plan nothing: exit 1 unless every corpus run has a plan, docs/PRACTICE.md's table is "
                         "the one its plans give, and today's binary predicts each published recipe, each best and "
                         "each gain within its 80%% band of the table's figure (a CTest)")
    ap.add_argument("--perturb-given", type=float, default=0.0, help=argparse.SUPPRESS)  # the check's own test
    a = ap.parse_args()
    if a.check:
        runs = corpus()
        missing = [r[0] for r in runs if not os.path.exists(plan_path(r[0]))]
        if missing:
            print("corpus runs without a plan (run docs/practice/practice_table.py):", *missing, sep="\n  ")
            return 1
        doc = open(DOC).read()
        if BEGIN + "\n" + table(runs) + END not in doc:
            print(f"{DOC}: the table is not the one docs/practice/plans/ gives; rerun docs/practice/practice_table.py")
            return 1
        print(f"{DOC}: {len(runs)} corpus runs, each planned and in the table")
        return check_binary(a.moesim, runs, a.jobs or os.cpu_count() or 1, a.only, a.perturb_given)
    os.makedirs(PLANS, exist_ok=True)
    runs = corpus()
    for rel, j, figure, measured in runs:
        name = os.path.splitext(os.path.basename(rel))[0]
        path = plan_path(rel)
        if a.only not in rel or (os.path.exists(path) and not a.rerun):
            continue
        p = plan(a.moesim, rel, a.jobs)
        json.dump(p, open(path, "w"), indent=1)
        print(f"{name}: {p.get('simulated', '-')} simulated, {p['wall_s']['total']:.1f} s", flush=True)
    # The evidence for each claimed gain over CLAIM_PCT (one diff each; kept beside the plans,
    # made again with --rerun or --rerun-evidence, as after a new calibration/evidence/decisions.json).
    for rel, j, figure, measured in runs:
        path, ev_path = plan_path(rel), evidence_path(rel)
        if a.only not in rel or not os.path.exists(path) or (os.path.exists(ev_path) and not (a.rerun or a.rerun_evidence)):
            continue
        p = json.load(open(path))
        g, top = p.get("given", {}), p.get("top", [])
        if not top or not g.get("tokens_per_s_per_gpu") or \
                100 * (top[0]["tokens_per_s_per_gpu"] / g["tokens_per_s_per_gpu"] - 1) <= CLAIM_PCT:
            continue
        ev = evidence(a.moesim, rel, p)
        json.dump(ev, open(ev_path, "w"), indent=1)
        print(f"{os.path.basename(rel)}: {evidence_cell(ev)}", flush=True)
    missing = [r for r in runs if not os.path.exists(plan_path(r[0]))]
    if missing:
        print(f"{len(missing)} runs not planned yet; the table is not written", file=sys.stderr)
        return 1
    doc = open(DOC).read() if os.path.exists(DOC) else f"{BEGIN}\n{END}\n"
    pre, rest = doc.split(BEGIN, 1)
    post = rest.split(END, 1)[1]
    text = pre + BEGIN + "\n" + table(runs) + END + post
    with open(DOC, "w") as f:
        f.write(text)
    print(f"{DOC}: {len(runs)} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
