#!/usr/bin/env python3
"""The fitted figures the docs quote are the shipped profiles' (docs drift after a refit).

`moesim calibrate corpus -o` and `moesim calibrate routing -o` rewrite
calibration/profiles/corpus.json and routing.json; the prose that quotes what they fitted
does not follow by itself, and it went stale once (MODEL.md quoted a host factor of 1.007,
a GB200 clock of 0.76 and a router sigma of 1.05 after refits made them 0.996, 0.80 and
1.02). This check reads both profiles and asks:

- corpus.json's in-sample and leave-one-out errors ("in-sample MAPE X%, leave-one-out Y%")
  appear in README.md and docs/MODEL.md as "X% in-sample" and "Y% leave-one-out";
- every fitted value appears in docs/MODEL.md's "The cross-run quantities" bullet, to two
  decimals or three significant digits, and each host value also as "today V" where
  MODEL.md explains that quantity;
- routing.json's sigma appears as "sigma V" in docs/MODEL.md and docs/SCENARIOS.md, and its
  error at the published statistic ("Z% at the published") in those and README.md.

Usage: docs_figures_check.py REPO_ROOT     (exit 0 when every figure is quoted, 1 otherwise)
       docs_figures_check.py --self-test  (the check reports what it should)
"""

import json
import os
import re
import shutil
import sys
import tempfile

CORPUS = "calibration/profiles/corpus.json"
ROUTING = "calibration/profiles/routing.json"
CORPUS_ERRORS = re.compile(r"in-sample MAPE (\d+\.\d+)%, leave-one-out (\d+\.\d+)%")
ROUTING_STATISTIC = re.compile(r"(\d+\.\d+)% at the published")
CROSS_RUN_BULLET = re.compile(r"- \*\*The cross-run quantities\*\*(.*?)(?=\n- \*\*|\n\n)", re.S)
HOST_VALUES = ("rank_contention", "numa_unbound_factor")


def read(root, path):
    with open(os.path.join(root, path), encoding="utf-8") as f:
        return f.read()


def flat(text):
    return " ".join(text.split())


def quotes(text, phrase):
    """phrase in text, its numbers whole (1.00 is not quoted by 1.007 nor 2.58% by 12.58%)."""
    return re.search(rf"(?<![\d.]){re.escape(phrase)}(?!\d)", text) is not None


def spellings(value):
    """The ways the prose may round a fitted value: two decimals or three significant digits."""
    return {f"{value:.2f}", f"{float(f'{value:.3g}'):g}"}


def fitted_values(node, path=""):
    """(dotted path, value) of every {"value": x} leaf of a profile's parameters."""
    if isinstance(node, dict):
        if isinstance(node.get("value"), (int, float)):
            yield path, float(node["value"])
            return
        for key, child in node.items():
            yield from fitted_values(child, f"{path}.{key}" if path else key)


def check(root):
    failures = []
    corpus = json.loads(read(root, CORPUS))
    routing = json.loads(read(root, ROUTING))
    docs = {name: flat(read(root, name))
            for name in ("README.md", "docs/MODEL.md", "docs/SCENARIOS.md")}

    errors = CORPUS_ERRORS.search(corpus["source"])
    if not errors:
        failures.append(f"{CORPUS}: its source does not state the in-sample and leave-one-out "
                        "errors")
    else:
        for name in ("README.md", "docs/MODEL.md"):
            for phrase in (f"{errors.group(1)}% in-sample", f"{errors.group(2)}% leave-one-out"):
                if not quotes(docs[name], phrase):
                    failures.append(f"{name}: does not quote the corpus fit's '{phrase}'")

    bullet = CROSS_RUN_BULLET.search(read(root, "docs/MODEL.md"))
    bullet = flat(bullet.group(1)) if bullet else ""
    if not bullet:
        failures.append("docs/MODEL.md: no '**The cross-run quantities**' bullet")
    values = list(fitted_values(corpus.get("parameters", {}))) + [
        (f"{gpu}: {path}", v)
        for gpu, params in corpus.get("parameters_by_gpu", {}).items()
        for path, v in fitted_values(params)]
    for path, value in values:
        if bullet and not any(quotes(bullet, s) for s in spellings(value)):
            failures.append(f"docs/MODEL.md: the cross-run quantities do not quote {path} = "
                            f"{value} ({' or '.join(sorted(spellings(value)))})")
        if path.split(".")[-1] in HOST_VALUES and not any(
                quotes(docs["docs/MODEL.md"], f"today {s}") for s in spellings(value)):
            failures.append(f"docs/MODEL.md: no 'today {sorted(spellings(value))[0]}' for {path}")

    sigma = next((v for _, v in fitted_values(routing.get("parameters", {}))), None)
    if sigma is None:
        failures.append(f"{ROUTING}: no fitted sigma")
    else:
        for name in ("docs/MODEL.md", "docs/SCENARIOS.md"):
            if not any(quotes(docs[name], f"sigma {s}") for s in spellings(sigma)):
                failures.append(f"{name}: does not quote the router's 'sigma {sigma:.2f}'")
    statistic = ROUTING_STATISTIC.search(routing.get("source", ""))
    if statistic:
        for name, text in docs.items():
            if not quotes(text, f"{statistic.group(1)}%"):
                failures.append(f"{name}: does not quote the routing fit's {statistic.group(1)}% "
                                "at the published statistic")
    return failures, len(values) + 4  # + the two corpus errors, the sigma, the statistic


def self_test(root):
    """A copy of the repository's docs passes; a stale value in each place is reported."""
    if check(root)[0]:
        print("self-test: the repository's own docs fail the check; run it without --self-test")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        for path in ("README.md", "docs/MODEL.md", "docs/SCENARIOS.md", CORPUS, ROUTING):
            os.makedirs(os.path.dirname(os.path.join(tmp, path)), exist_ok=True)
            shutil.copy(os.path.join(root, path), os.path.join(tmp, path))
        corpus = json.loads(read(tmp, CORPUS))
        routing = json.loads(read(tmp, ROUTING))
        corpus["parameters"]["host"]["rank_contention"]["value"] = 1.25
        corpus["source"] = CORPUS_ERRORS.sub("in-sample MAPE 9.99%, leave-one-out 9.98%",
                                             corpus["source"])
        first_gpu = next(iter(corpus["parameters_by_gpu"].values()))
        first_gpu["efficiency"]["sustained_clock_factor"]["value"] = 0.123
        routing["parameters"]["routing"]["global_batch_sigma"]["value"] = 3.21
        for path, data in ((CORPUS, corpus), (ROUTING, routing)):
            with open(os.path.join(tmp, path), "w", encoding="utf-8") as f:
                json.dump(data, f)
        failures, _ = check(tmp)
        expected = ["README.md: does not quote the corpus fit's '9.99% in-sample'",
                    "README.md: does not quote the corpus fit's '9.98% leave-one-out'",
                    "docs/MODEL.md: does not quote the corpus fit's '9.99% in-sample'",
                    "docs/MODEL.md: does not quote the corpus fit's '9.98% leave-one-out'",
                    "host.rank_contention = 1.25", "'today 1.25'", "sustained_clock_factor = 0.123",
                    "docs/MODEL.md: does not quote the router's 'sigma 3.21'",
                    "docs/SCENARIOS.md: does not quote the router's 'sigma 3.21'"]
        missing = [e for e in expected if not any(e in f for f in failures)]
        if missing or len(failures) != len(expected):
            print(f"self-test failed: expected {expected}, got {failures}")
            return 1
    print("self-test: the repository's docs pass; stale corpus errors (README and MODEL), a "
          "stale host value (its bullet and its 'today'), a stale per-GPU value and a stale "
          "router sigma (MODEL and SCENARIOS) are each reported")
    return 0


def main():
    args = [a for a in sys.argv[1:] if a != "--self-test"]
    root = os.path.abspath(args[0] if args else ".")
    if "--self-test" in sys.argv[1:]:
        return self_test(root)
    failures, checked = check(root)
    for f in failures:
        print(f)
    print(f"{checked} fitted figures checked against README.md, docs/MODEL.md and "
          f"docs/SCENARIOS.md: {len(failures)} not quoted as the profiles have them")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
