#!/usr/bin/env python3
"""Megatron-Bridge's performance recipes as a table, read at each release tag.

Megatron-Bridge's performance launcher (scripts/performance/setup_experiment.py) resolves
`-mr RECIPE -g GPU -c DTYPE --task TASK -cv VARIANT` to a workload base config: a module-
level `WorkloadBaseConfig` in scripts/performance/configs/<family>/*workload_base_configs.py
named `{RECIPE}_{TASK}_CONFIG_{GPU}_{DTYPE}_{VARIANT}`, upper case (utils/utils.py,
get_workload_base_config: the versioned name, then V1 when V2 is missing, then the name
without a variant). This tool reads those files at every release tag of a Megatron-Bridge
checkout without importing anything: each top-level assignment is evaluated from its
syntax tree (`WorkloadBaseConfig(...)`, `replace(BASE, ...)`, an alias of another config),
field values as Python literals, the dataclass defaults from utils/utils.py, and from
argument_parser.py the default variant and every flag the launcher accepts (options, dest,
type, default, choices). Tags whose recipes moved elsewhere (the flat recipes of
src/megatron/bridge/perf_recipes, from v0.6.0) are listed as not read.

Usage: tools/bridge_recipes.py --repo PATH/TO/Megatron-Bridge [--out importer/recipes/megatron-bridge.json]
Standard library only; `git` reads the tags (nothing is checked out).
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys


def git(repo: str, *args: str) -> str:
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True, text=True).stdout


def release_tags(repo: str) -> list[str]:
    tags = [t for t in git(repo, "tag").split() if re.fullmatch(r"v\d+\.\d+\.\d+", t)]
    return sorted(tags, key=lambda t: tuple(int(x) for x in t[1:].split(".")))


def literal(node: ast.AST):
    return ast.literal_eval(node)


def dataclass_defaults(source: str) -> dict:
    """WorkloadBaseConfig's fields and their defaults (annotated assignments of the class)."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "WorkloadBaseConfig":
            out = {}
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and item.value is not None:
                    out[item.target.id] = literal(item.value)
            return out
    raise ValueError("no WorkloadBaseConfig class")


def default_variant(source: str) -> str | None:
    """argument_parser.py's default for --config_variant (None when the tag has no variants)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and any(
            isinstance(a, ast.Constant) and a.value == "--config_variant" for a in node.args
        ):
            for kw in node.keywords:
                if kw.arg == "default":
                    return literal(kw.value)
    return None


def read_arguments(source: str) -> list[dict]:
    """argument_parser.py's flags: every add_argument call with its options, in order.

    `type` is the callable's source text (int, float, str, bool_arg, list_of_strings, a
    lambda); `default` and `choices` are literals where they are, else their source text
    under `default_source`."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument"):
            continue
        flags = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        if not flags or not flags[0].startswith("-"):
            continue
        arg = {"flags": flags, "line": node.lineno}
        for kw in node.keywords:
            if kw.arg in ("help", "metavar") or kw.arg is None:
                continue
            if kw.arg == "type" or (kw.arg == "action" and not isinstance(kw.value, ast.Constant)):
                arg[kw.arg] = ast.unparse(kw.value)
                continue
            try:
                arg[kw.arg] = literal(kw.value)
            except (ValueError, SyntaxError):
                arg[kw.arg + "_source"] = ast.unparse(kw.value)
        if "dest" not in arg:
            longs = [f for f in flags if f.startswith("--")]
            arg["dest"] = (longs[0] if longs else flags[0]).lstrip("-").replace("-", "_")
        out.append(arg)
    return sorted(out, key=lambda a: a["line"])


def read_configs(source: str, defaults: dict, skipped: list[str], where: str) -> dict:
    """Every top-level WorkloadBaseConfig of a module, resolved to its full set of fields."""
    env: dict[str, dict] = {}
    for node in ast.parse(source).body:
        if not isinstance(node, ast.Assign) or len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
            continue
        name, value = node.targets[0].id, node.value
        try:
            if isinstance(value, ast.Name) and value.id in env:
                env[name] = dict(env[value.id])
            elif isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
                kwargs = {kw.arg: literal(kw.value) for kw in value.keywords if kw.arg is not None}
                if value.func.id == "WorkloadBaseConfig":
                    env[name] = {**defaults, **kwargs}
                elif value.func.id == "replace" and value.args and isinstance(value.args[0], ast.Name):
                    base = value.args[0].id
                    if base not in env:
                        raise ValueError(f"replace() of unknown {base}")
                    env[name] = {**env[base], **kwargs}
        except (ValueError, SyntaxError) as exc:
            skipped.append(f"{where}:{node.lineno} {name}: {exc}")
    return env


def read_tag(repo: str, tag: str) -> dict:
    commit = git(repo, "rev-list", "-n1", tag).strip()
    date = git(repo, "log", "-1", "--format=%cs", tag).strip()
    files = git(repo, "ls-tree", "-r", "--name-only", tag, "scripts/performance/configs").split()
    bases = [f for f in files if f.endswith("workload_base_configs.py")]
    entry = {"tag": tag, "commit": commit, "date": date}
    if not bases:
        entry["not_read"] = "no scripts/performance/configs/*/*workload_base_configs.py at this tag (flat recipes)"
        return entry
    defaults = dataclass_defaults(git(repo, "show", f"{tag}:scripts/performance/utils/utils.py"))
    parser_source = git(repo, "show", f"{tag}:scripts/performance/argument_parser.py")
    entry["default_variant"] = default_variant(parser_source)
    entry["arguments"] = read_arguments(parser_source)
    entry["defaults"] = defaults
    skipped: list[str] = []
    configs: dict[str, dict] = {}
    for path in bases:
        family = path.split("/")[3]
        for name, fields in read_configs(git(repo, "show", f"{tag}:{path}"), defaults, skipped, path).items():
            if "_CONFIG" not in name or name.startswith("BASE_"):
                continue  # a base the named configs build on
            # Only what differs from the dataclass defaults, to keep the table small.
            configs[name] = {"family": family, **{k: v for k, v in fields.items() if defaults.get(k) != v}}
    entry["configs"] = dict(sorted(configs.items()))
    # Until v0.3.0 the launcher took -m MODEL -s SIZE and named configs
    # {MODEL}_{SIZE}_{GPU}[_{TASK}]_{DTYPE}_BASE_CONFIG (utils/utils.py at those tags).
    entry["naming"] = "base_config" if any(n.endswith("_BASE_CONFIG") for n in configs) else "versioned"
    if skipped:
        entry["skipped"] = skipped
    return entry


def render(table: dict) -> str:
    """JSON with one line per config, so that a tag's changes read as line diffs."""
    compact = lambda v: json.dumps(v, separators=(",", ":"))
    lines = ["{"]
    for key in ("repository", "generated_by", "lookup"):
        lines.append(f" {json.dumps(key)}: {compact(table[key])},")
    lines.append(' "tags": [')
    for i, tag in enumerate(table["tags"]):
        lines.append("  {")
        items = list(tag.items())
        for j, (k, v) in enumerate(items):
            comma = "," if j + 1 < len(items) else ""
            if k == "arguments":
                lines.append(f"   {json.dumps(k)}: [")
                for a_i, arg in enumerate(v):
                    lines.append(f"    {compact(arg)}" + ("," if a_i + 1 < len(v) else ""))
                lines.append("   ]" + comma)
            elif k == "configs":
                lines.append(f"   {json.dumps(k)}: {{")
                names = list(v)
                for n_i, name in enumerate(names):
                    lines.append(f"    {json.dumps(name)}: {compact(v[name])}" + ("," if n_i + 1 < len(names) else ""))
                lines.append("   }" + comma)
            else:
                lines.append(f"   {json.dumps(k)}: {compact(v)}{comma}")
        lines.append("  }" + ("," if i + 1 < len(table["tags"]) else ""))
    lines.append(" ]")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", required=True, help="a Megatron-Bridge git checkout or bare repository")
    ap.add_argument("--out", default="-", help="the JSON table (default: standard output)")
    args = ap.parse_args()
    table = {
        "repository": "NVIDIA-NeMo/Megatron-Bridge",
        "generated_by": "tools/bridge_recipes.py",
        "lookup": {
            "versioned": "{RECIPE}_{TASK}_CONFIG_{GPU}_{DTYPE}_{VARIANT} upper case; then _V1 when V2 is missing; "
                         "then without the variant (scripts/performance/utils/utils.py, get_workload_base_config)",
            "base_config": "{MODEL}_{SIZE}_{GPU}_{TASK}_{DTYPE}_BASE_CONFIG upper case, the task left out for "
                           "pretraining (utils/utils.py at v0.2.x)",
        },
        "tags": [read_tag(args.repo, t) for t in release_tags(args.repo)],
    }
    text = render(table)
    if args.out == "-":
        sys.stdout.write(text)
    else:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
