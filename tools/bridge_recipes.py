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
type, default, choices).

From v0.6.0 the recipes are flat Python functions, src/megatron/bridge/perf_recipes/
<family>/<gpu>/*.py, named {recipe}_{task}_{N}gpu_{gpu}_{precision}[_{variant}]_config,
that build a ConfigContainer from a library recipe (src/megatron/bridge/recipes). For such
a tag the tool runs each function with a small interpreter over the syntax trees (values
the sources decide; runtime queries and class defaults stay undecided), then Bridge's own
compatibility mapping (utils/utils.py _workload_base_config_from_recipe) on the result,
and writes the configs under the older names so the table keeps its shape: the recipe the
launcher picks without -ng as {RECIPE}_{TASK}_CONFIG_{GPU}_{DTYPE}[_{VARIANT}], the other
GPU counts with _{N}GPU after it (see "lookup" in the output).

Usage: tools/bridge_recipes.py --repo PATH/TO/Megatron-Bridge [--out importer/recipes/megatron-bridge.json]
       [--megatron-lm PATH/TO/Megatron-LM]   (Megatron-Core class defaults at the pinned commit;
                                               without it fields left at class defaults are "unset")
       [--dump-flat PATH]   (every flat recipe's full decided state, for study)
Standard library only; `git` reads the tags (nothing is checked out; a bare repository works).
"""

from __future__ import annotations

import argparse
import ast
import functools
import json
import os
import re
import subprocess
import sys


@functools.lru_cache(maxsize=None)
def git_base(repo: str) -> tuple[str, ...]:
    """`git --git-dir` for a bare repository (a mirror), `git -C` for a checkout."""
    bare = os.path.isfile(os.path.join(repo, "HEAD")) and os.path.isdir(os.path.join(repo, "objects"))
    return ("git", "--git-dir", repo) if bare else ("git", "-C", repo)


def git(repo: str, *args: str) -> str:
    return subprocess.run([*git_base(repo), *args], check=True, capture_output=True, text=True).stdout


@functools.lru_cache(maxsize=None)
def show(repo: str, tag: str, path: str) -> str | None:
    """A file's text at a tag, None when the tag lacks it."""
    r = subprocess.run([*git_base(repo), "show", f"{tag}:{path}"], capture_output=True, text=True)
    return r.stdout if r.returncode == 0 else None


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


# ---------------------------------------------------------------------------------------
# Flat performance recipes (v0.6.0 on): src/megatron/bridge/perf_recipes/<family>/<gpu>/*.py
#
# Each recipe is a Python function that builds a ConfigContainer by calling a library
# recipe (src/megatron/bridge/recipes/...), then assigning attributes and calling helpers.
# A small interpreter runs those functions over their syntax trees: values it can decide
# from the sources are Python literals; objects are attribute maps (Obj); anything that
# depends on the machine, on a class default or on code outside the interpreted sources is
# Unknown. An `if` whose condition is Unknown runs both branches and keeps what agrees.
# The table's fields then come from running Bridge's own compatibility mapping
# (scripts/performance/utils/utils.py, _workload_base_config_from_recipe) on the result.
# ---------------------------------------------------------------------------------------

FLAT_ROOT = "src/megatron/bridge/perf_recipes"
FLAT_UTILS = "scripts/performance/utils/utils.py"

# Fields of the flat-recipe WorkloadBaseConfig that the older tables never had. They go into
# a config only when they change the run (a value other than their neutral one), so the
# configs that use them are visible, and the rest keep the older tables' shape.
NEUTRAL_NEW_FIELDS = {
    "gtp_weight_remat_size": (1, None),
    "expert_gtp_weight_remat_size": (1, None),
    "fine_grained_activation_offloading": (False, None),
    "offload_modules": ([], None),
    "outer_dp_sharding_strategy": ("no_shard", None),
    "num_distributed_optimizer_instances": (1, None),
}
# Process settings, not workload fields: kept per config beside the configs ("env_vars").
SEPARATE_FIELDS = ("env_vars",)


class Unknown:
    """A value the sources do not decide (a runtime query, a class default, ...)."""

    __slots__ = ("why",)

    def __init__(self, why: str):
        self.why = why

    def __repr__(self) -> str:
        return f"<unknown: {self.why}>"


class Unset(Unknown):
    """An attribute the sources never set and whose class default is not known."""

    __slots__ = ()


class Obj:
    """An object of the config graph; attrs holds what the sources set on it, cls its
    class (qualified name) where known, for the class defaults of unset attributes."""

    def __init__(self, kind: str, attrs: dict | None = None, opaque: bool = False, cls: str | None = None):
        self.kind, self.attrs, self.opaque, self.cls = kind, dict(attrs or {}), opaque, cls

    def __repr__(self) -> str:
        return f"<{self.kind}>"


class Ext:
    """Something outside the interpreted sources: torch.bfloat16, a Megatron-Core enum."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name

    def __eq__(self, other) -> bool:
        return isinstance(other, Ext) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)


class PathVal:
    __slots__ = ("path",)

    def __init__(self, path: str):
        self.path = path


class Func:
    def __init__(self, module: "Module", node: ast.AST, closure: "Frame | None" = None):
        self.module, self.node, self.closure = module, node, closure

    @property
    def qualname(self) -> str:
        return f"{self.module.name}.{getattr(self.node, 'name', '<lambda>')}"


class Builtin:
    def __init__(self, name: str, fn):
        self.name, self.fn = name, fn


class Method:
    def __init__(self, receiver, name: str):
        self.receiver, self.name = receiver, name


class ModuleVal:
    def __init__(self, module: "Module"):
        self.module = module


class _Return(Exception):
    def __init__(self, value):
        self.value = value


class _Raise(Exception):
    pass


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


PLAIN = (int, float, str, bool, type(None), list, tuple, dict, set, frozenset, range, slice)
# A provider made from a Hugging Face config (AutoBridge.to_megatron_provider) carries the
# model's architecture, which is outside the sources; of its class defaults only the run
# settings below are taken (the converters map architecture, not these).
RUN_SETTING = re.compile(
    r"parallel|cuda_graph|recompute|offload|flex_dispatcher|op_fuser|te_rng_tracker|quant_recipe|gtp_|"
    r"init_model_with_meta_device|gradient_accumulation_fusion|deterministic|moe_a2a|overlap|delay_wgrad|"
    r"fp8|fp4|use_te_")
MUTATING = {"append", "extend", "insert", "remove", "pop", "update", "setdefault", "clear", "add", "discard"}
SAFE_METHODS = {
    str: {"lower", "upper", "strip", "lstrip", "rstrip", "split", "rsplit", "startswith", "endswith", "replace",
          "join", "format", "removeprefix", "removesuffix", "partition", "rpartition", "title", "find", "count",
          "isdigit"},
    list: {"append", "extend", "insert", "remove", "pop", "index", "count", "copy"},
    dict: {"get", "items", "keys", "values", "update", "copy", "setdefault", "pop"},
    set: {"add", "discard", "union", "copy", "issubset", "intersection"},
    tuple: {"index", "count"},
}


def has_unknown(v, depth: int = 0) -> bool:
    if isinstance(v, Unknown):
        return True
    if depth > 6:
        return False
    if isinstance(v, (list, tuple, set, frozenset)):
        return any(has_unknown(x, depth + 1) for x in v)
    if isinstance(v, dict):
        return any(has_unknown(k, depth + 1) or has_unknown(x, depth + 1) for k, x in v.items())
    return False


def is_plain(v) -> bool:
    return isinstance(v, PLAIN) and not has_unknown(v)


def same(a, b) -> bool:
    if isinstance(a, Unknown) or isinstance(b, Unknown):
        return False
    if isinstance(a, (Obj, Func, ModuleVal, Method, Builtin)) or isinstance(b, (Obj, Func, ModuleVal, Method, Builtin)):
        return a is b
    if has_unknown(a) or has_unknown(b):
        return False
    try:
        return type(a) is type(b) and a == b
    except Exception:
        return False


@functools.lru_cache(maxsize=None)
def converter_attrs(repo: str, tag: str) -> frozenset:
    """Attributes some Hugging Face converter (src/megatron/bridge/models/**/*bridge*.py)
    assigns on the provider it builds: for a provider from AutoBridge these stay undecided
    unless the recipe sets them (which converter runs depends on the model's config.json)."""
    out = set()
    for path in git(repo, "ls-tree", "-r", "--name-only", tag, "src/megatron/bridge/models").split():
        if not (path.endswith(".py") and "bridge" in path.rsplit("/", 1)[-1]):
            continue
        for node in ast.walk(ast.parse(show(repo, tag, path))):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and isinstance(node.value, ast.Name):
                if node.value.id in ("provider", "provider_config", "config", "model_provider"):
                    out.add(node.attr)
    return frozenset(out)


class Frame:
    def __init__(self, module: "Module", parent: "Frame | None" = None):
        self.module, self.parent, self.vars = module, parent, {}

    def lookup(self, name: str):
        f = self
        while f is not None:
            if name in f.vars:
                return f.vars[name]
            f = f.parent
        return self.module.lookup(name)


class Module:
    """A source file at the tag, its top level indexed lazily (imports resolve on use)."""

    def __init__(self, interp: "Interp", name: str, path: str, source: str):
        self.interp, self.name, self.path = interp, name, path
        self.is_pkg = path.endswith("/__init__.py")
        self.package = name if self.is_pkg else name.rpartition(".")[0]
        self.values: dict = {"__file__": PathVal(path), "__name__": name}
        self.pending: dict = {}
        self.tree = ast.parse(source)
        self.functions: dict[str, ast.AST] = {}
        self._index(self.tree.body)

    def _bind(self, name: str, how) -> None:
        self.values.pop(name, None)
        self.pending[name] = how

    def _index(self, body) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.pending.pop(node.name, None)
                self.values[node.name] = Func(self, node)
                self.functions[node.name] = node
            elif isinstance(node, ast.ClassDef):
                self.pending.pop(node.name, None)
                self.values[node.name] = Ext(f"{self.name}.{node.name}")
            elif isinstance(node, ast.ImportFrom):
                base = self.interp.absolute(self, node.module, node.level)
                for a in node.names:
                    if a.name != "*":
                        self._bind(a.asname or a.name, ("from", base, a.name))
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        self._bind(a.asname, ("import", a.name))
                    else:
                        top = a.name.split(".")[0]
                        self._bind(top, ("import", top))
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    if isinstance(t, ast.Name):
                        self._bind(t.id, ("expr", node.value))
            elif isinstance(node, ast.Try):
                self._index(node.body)
            elif isinstance(node, ast.If):
                self._index(node.body)

    def lookup(self, name: str):
        if name in self.values:
            return self.values[name]
        if name in self.pending:
            how = self.pending.pop(name)
            self.values[name] = Unknown(f"{self.name}.{name} refers to itself")
            value = self.interp.resolve(self, how)
            self.values[name] = value
            return value
        if name in self.interp.builtins:
            return self.interp.builtins[name]
        return Unknown(f"name '{name}' in {self.path}")

    def attr(self, name: str):
        if name in self.values or name in self.pending:
            return self.lookup(name)
        sub = self.interp.module(f"{self.name}.{name}")
        if sub is not None:
            return ModuleVal(sub)
        return Unknown(f"{self.name}.{name}")


class Interp:
    """Runs recipe functions of one tag over their syntax trees."""

    def __init__(self, repo: str, tag: str, mlm: tuple[str, str] | None = None):
        self.repo, self.tag = repo, tag
        self.mlm = mlm  # (Megatron-LM repository, the commit Bridge pins) for megatron.core classes
        self.modules: dict[str, Module | None] = {}
        self.class_cache: dict = {}
        self.journals: list[list] = []
        self.depth = 0
        self.notes: list[str] = []
        self.builtins = self._make_builtins()
        self.special = {
            "megatron.bridge.training.flex_dispatcher_backend.apply_flex_dispatcher_backend": self._sp_flex_backend,
            "megatron.bridge.utils.cuda_graph.set_cuda_graph_modules": self._sp_cuda_graph_modules,
            "megatron.bridge.utils.cuda_graph.clear_cuda_graph_modules": self._sp_clear_cuda_graph_modules,
            "megatron.bridge.utils.cuda_graph.set_full_iteration_cuda_graph": self._sp_full_iteration_graph,
        }

    # ---- modules -------------------------------------------------------------------
    def source(self, path: str) -> str | None:
        return show(self.repo, self.tag, path)

    def module(self, name: str) -> Module | None:
        if name in self.modules:
            return self.modules[name]
        mod = None
        if name.startswith("megatron.bridge"):
            base = "src/" + name.replace(".", "/")
            for path in (base + ".py", base + "/__init__.py"):
                text = self.source(path)
                if text is not None:
                    mod = Module(self, name, path, text)
                    break
        self.modules[name] = mod
        return mod

    def module_at(self, name: str, path: str) -> Module | None:
        """A module outside src/ (scripts/performance/utils/utils.py), by path."""
        if name not in self.modules:
            text = self.source(path)
            self.modules[name] = Module(self, name, path, text) if text is not None else None
        return self.modules[name]

    @staticmethod
    def absolute(mod: Module, name: str | None, level: int) -> str:
        if not level:
            return name or ""
        parts = mod.package.split(".")
        if level > 1:
            parts = parts[: len(parts) - (level - 1)]
        return ".".join(parts + ([name] if name else []))

    def resolve(self, mod: Module, how):
        kind = how[0]
        if kind == "from":
            base, attr = how[1], how[2]
            target = self.module(base)
            if target is not None:
                return target.attr(attr)
            return Ext(f"{base}.{attr}")
        if kind == "import":
            target = self.module(how[1])
            return ModuleVal(target) if target is not None else Ext(how[1])
        return self.ev(how[1], Frame(mod))

    # ---- class defaults ------------------------------------------------------------
    def class_source(self, module: str) -> tuple[str, str] | None:
        """(path, text) of a module that may define a class: Bridge at the tag, Megatron-Core
        at the commit Bridge pins (3rdparty/Megatron-LM) when a Megatron-LM repo is given."""
        rel = module.replace(".", "/")
        if module.startswith("megatron.bridge"):
            for path in (f"src/{rel}.py", f"src/{rel}/__init__.py"):
                text = show(self.repo, self.tag, path)
                if text is not None:
                    return path, text
        elif module.startswith(("megatron.core", "megatron.training")) and self.mlm is not None:
            for path in (f"{rel}.py", f"{rel}/__init__.py"):
                text = show(self.mlm[0], self.mlm[1], path)
                if text is not None:
                    return f"3rdparty/Megatron-LM/{path}", text
        return None

    def parsed(self, module: str):
        key = ("parsed", module)
        if key not in self.class_cache:
            src = self.class_source(module)
            self.class_cache[key] = (src[0], ast.parse(src[1])) if src else None
        return self.class_cache[key]

    def name_in_module(self, module: str, name: str, depth: int = 0) -> str | None:
        """The qualified name a module-level name stands for (a class defined or imported)."""
        p = self.parsed(module)
        if p is None or depth > 8:
            return None
        path, tree = p
        is_pkg = path.endswith("__init__.py")
        package = module if is_pkg else module.rpartition(".")[0]

        def walk(body):
            for node in body:
                if isinstance(node, ast.ClassDef) and node.name == name:
                    return f"{module}.{name}"
                if isinstance(node, ast.ImportFrom):
                    for a in node.names:
                        if (a.asname or a.name) == name:
                            if node.level:
                                parts = package.split(".")
                                parts = parts[: len(parts) - (node.level - 1)] if node.level > 1 else parts
                                base = ".".join(parts + ([node.module] if node.module else []))
                            else:
                                base = node.module
                            return f"{base}.{a.name}"
                if isinstance(node, (ast.Try, ast.If)):
                    r = walk(node.body)
                    if r:
                        return r
            return None

        return walk(tree.body)

    def find_class(self, qual: str, depth: int = 0):
        """(module, ClassDef) of a qualified class name, following re-exports."""
        key = ("class", qual)
        if key in self.class_cache:
            return self.class_cache[key]
        self.class_cache[key] = None
        module, _, cls = qual.rpartition(".")
        found = None
        if module and depth < 8:
            target = self.name_in_module(module, cls)
            if target == qual:
                for node in ast.walk(self.parsed(module)[1]):
                    if isinstance(node, ast.ClassDef) and node.name == cls:
                        found = (module, node)
                        break
            elif target is not None:
                found = self.find_class(target, depth + 1)
        self.class_cache[key] = found
        return found

    def class_lineage(self, qual: str) -> list[str]:
        """The class and its bases (qualified), depth first."""
        out, todo = [], [qual]
        while todo and len(out) < 32:
            q = todo.pop(0)
            if q in out:
                continue
            out.append(q)
            found = self.find_class(q)
            if found is None:
                continue
            module, node = found
            for b in node.bases:
                if isinstance(b, ast.Subscript):
                    b = b.value
                if isinstance(b, ast.Name):
                    r = self.name_in_module(module, b.id)
                    if r:
                        todo.append(r)
                elif isinstance(b, ast.Attribute):
                    todo.append(ast.unparse(b))
        return out

    def class_default(self, qual: str, attr: str):
        """The default of a dataclass field, looked up through the bases; Unset when the
        sources do not give one (no such field, a computed default, an unread class)."""
        for q in self.class_lineage(qual):
            found = self.find_class(q)
            if found is None:
                continue
            module, node = found
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == attr:
                    return Unset(f"{q}.{attr} is computed")
                if not (isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
                        and item.target.id == attr):
                    continue
                v = item.value
                if v is None:
                    return Unset(f"{q}.{attr} has no default")
                if isinstance(v, ast.Call) and ast.unparse(v.func) in ("field", "dataclasses.field"):
                    kws = {k.arg: k.value for k in v.keywords}
                    if "default" in kws:
                        v = kws["default"]
                    elif "default_factory" in kws:
                        f = kws["default_factory"]
                        if isinstance(f, ast.Name) and f.id in ("list", "dict", "set"):
                            return {"list": [], "dict": {}, "set": set()}[f.id]
                        if isinstance(f, ast.Name):
                            cq = self.name_in_module(module, f.id)
                            if cq and self.find_class(cq):
                                return Obj(f.id, cls=cq)
                        if isinstance(f, ast.Lambda):
                            try:
                                return ast.literal_eval(f.body)
                            except (ValueError, SyntaxError):
                                pass
                        return Unset(f"{q}.{attr}: default_factory {ast.unparse(f)}")
                    else:
                        return Unset(f"{q}.{attr} has no default")
                try:
                    return ast.literal_eval(v)
                except (ValueError, SyntaxError):
                    if isinstance(v, ast.Attribute):
                        return Ext(ast.unparse(v))
                    return Unset(f"{q}.{attr} = {ast.unparse(v)[:40]}")
        return Unset(f"{qual}.{attr} not found in the class sources")

    def has_attribute(self, obj: Obj, name: str):
        """Whether an object has an attribute: set by the sources, or a field, property or
        `self.name =` of its class and bases (True/False), Unknown where a class is unread."""
        if name in obj.attrs:
            return True
        if obj.cls is None:
            return Unknown(f"hasattr {name}")
        complete = True
        for q in self.class_lineage(obj.cls):
            found = self.find_class(q)
            if found is None:
                if not q.startswith(("typing.", "abc.", "enum.", "builtins.")) and q.rsplit(".", 1)[-1] not in (
                        "Generic", "ABC", "object", "Protocol"):
                    complete = False
                continue
            for item in ast.walk(found[1]):
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and item.target.id == name:
                    return True
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == name:
                    return True
                if isinstance(item, ast.Attribute) and isinstance(item.ctx, ast.Store) and item.attr == name:
                    return True
        return False if complete else Unknown(f"hasattr {name}: a base class is not read")

    # ---- bookkeeping ---------------------------------------------------------------
    def note(self, fr: Frame, node: ast.AST, text: str) -> None:
        self.notes.append(f"{fr.module.path}:{getattr(node, 'lineno', '?')}: {text}")

    def jset(self, d: dict, k, v) -> None:
        if self.journals:
            self.journals[-1].append((d, k, k in d, d.get(k)))
        d[k] = v

    def jdel(self, d: dict, k) -> None:
        if k in d:
            if self.journals:
                self.journals[-1].append((d, k, True, d[k]))
            del d[k]

    # ---- values --------------------------------------------------------------------
    @staticmethod
    def truth(v):
        if isinstance(v, Unknown):
            return v
        if isinstance(v, Obj):
            return Unknown(f"truth of {v.kind}") if v.opaque else True
        if isinstance(v, Ext):
            return Unknown(f"truth of {v.name}")
        if isinstance(v, (Func, Builtin, Method, ModuleVal, PathVal)):
            return True
        try:
            return bool(v)
        except Exception:
            return Unknown("truth")

    def getattr_(self, v, name: str):
        if isinstance(v, Obj):
            if name in v.attrs:
                return v.attrs[name]
            if v.cls is not None and (not v.kind.startswith("provider for ") or (
                    RUN_SETTING.search(name) and name not in converter_attrs(self.repo, self.tag))):
                d = self.class_default(v.cls, name)
                if isinstance(d, Obj):  # a default_factory object: it exists from now on
                    self.jset(v.attrs, name, d)
                    return d
                if isinstance(d, (list, dict, set)):
                    d = type(d)(d)
                    self.jset(v.attrs, name, d)
                    return d
                if not isinstance(d, Unknown):
                    return d
                return d
            return Unset(f"{v.kind}.{name} is not set by the sources")
        if isinstance(v, ModuleVal):
            return v.module.attr(name)
        if isinstance(v, Ext):
            return Ext(f"{v.name}.{name}")
        if isinstance(v, PathVal):
            if name == "parent":
                return PathVal(v.path.rpartition("/")[0])
            if name == "name":
                return v.path.rpartition("/")[2]
            return Method(v, name)
        if isinstance(v, Func) and name == "__name__":
            return getattr(v.node, "name", "<lambda>")
        if isinstance(v, Unknown):
            return v
        for t, names in SAFE_METHODS.items():
            if isinstance(v, t) and name in names:
                return Method(v, name)
        return Unknown(f"attribute {name} of {type(v).__name__}")

    def compare(self, op: ast.cmpop, a, b):
        if isinstance(op, (ast.Is, ast.IsNot)):
            if a is None or b is None:
                other = b if a is None else a
                if isinstance(other, Unknown) or (isinstance(other, Obj) and other.opaque):
                    return Unknown("is None")
                r = other is None
            elif isinstance(a, Unknown) or isinstance(b, Unknown):
                return Unknown("is")
            elif isinstance(a, (Obj, Func)) or isinstance(b, (Obj, Func)):
                if (isinstance(a, Obj) and a.opaque) or (isinstance(b, Obj) and b.opaque):
                    return Unknown("is")
                r = a is b
            else:
                r = same(a, b)
            return r if isinstance(op, ast.Is) else not r
        if isinstance(op, (ast.In, ast.NotIn)):
            if not is_plain(a) and not isinstance(a, Ext):
                return Unknown("in")
            if isinstance(b, (list, tuple, set, frozenset, dict, str)) and not has_unknown(
                list(b) if not isinstance(b, str) else b
            ):
                try:
                    r = a in b
                except TypeError:
                    return Unknown("in")
                return r if isinstance(op, ast.In) else not r
            return Unknown("in")
        if has_unknown(a) or has_unknown(b):
            return Unknown("comparison")
        for x in (a, b):
            if isinstance(x, Obj) and x.opaque:
                return Unknown("comparison with an undecided object")
        if isinstance(a, Ext) or isinstance(b, Ext):
            if isinstance(a, Ext) and isinstance(b, Ext) and isinstance(op, (ast.Eq, ast.NotEq)):
                r = a.name == b.name
                return r if isinstance(op, ast.Eq) else not r
            return Unknown("comparison with an external value")
        if isinstance(a, Obj) or isinstance(b, Obj):
            if isinstance(op, (ast.Eq, ast.NotEq)):
                r = a is b
                return r if isinstance(op, ast.Eq) else not r
            return Unknown("ordering of objects")
        ops = {ast.Eq: lambda x, y: x == y, ast.NotEq: lambda x, y: x != y, ast.Lt: lambda x, y: x < y,
               ast.LtE: lambda x, y: x <= y, ast.Gt: lambda x, y: x > y, ast.GtE: lambda x, y: x >= y}
        try:
            return ops[type(op)](a, b)
        except Exception:
            return Unknown("comparison")

    def binop(self, op: ast.operator, a, b):
        if isinstance(a, PathVal) and isinstance(op, ast.Div) and isinstance(b, str):
            return PathVal(f"{a.path}/{b}")
        if isinstance(a, Unknown):
            return a
        if isinstance(b, Unknown):
            return b
        if not isinstance(a, PLAIN) or not isinstance(b, PLAIN):
            return Unknown(f"operation on {type(a).__name__} and {type(b).__name__}")
        if isinstance(op, (ast.Mult,)) and isinstance(a, (list, str, tuple)) and isinstance(b, int) and b > 100000:
            return Unknown("large repetition")
        ops = {ast.Add: lambda x, y: x + y, ast.Sub: lambda x, y: x - y, ast.Mult: lambda x, y: x * y,
               ast.Div: lambda x, y: x / y, ast.FloorDiv: lambda x, y: x // y, ast.Mod: lambda x, y: x % y,
               ast.Pow: lambda x, y: x ** y, ast.BitOr: lambda x, y: x | y, ast.BitAnd: lambda x, y: x & y}
        if isinstance(op, ast.Mod) and isinstance(a, str):
            if has_unknown(b):
                return Unknown("format")
        elif isinstance(op, (ast.Add, ast.Mult, ast.BitOr)) and isinstance(a, (list, tuple, dict, set)):
            pass  # containers may hold undecided items
        elif has_unknown(a) or has_unknown(b):
            return Unknown("arithmetic on undecided values")
        try:
            return ops[type(op)](a, b)
        except Exception:
            return Unknown("operation")

    # ---- expressions ---------------------------------------------------------------
    def ev(self, node: ast.AST, fr: Frame):
        method = getattr(self, "ev_" + type(node).__name__, None)
        if method is None:
            return Unknown(f"expression {type(node).__name__}")
        return method(node, fr)

    def ev_Constant(self, node, fr):
        return node.value

    def ev_Name(self, node, fr):
        return fr.lookup(node.id)

    def _elements(self, elts, fr):
        out = []
        for e in elts:
            if isinstance(e, ast.Starred):
                v = self.ev(e.value, fr)
                if isinstance(v, (list, tuple, set, range)) or (isinstance(v, dict)):
                    out.extend(list(v))
                else:
                    return None
            else:
                out.append(self.ev(e, fr))
        return out

    def ev_List(self, node, fr):
        out = self._elements(node.elts, fr)
        return out if out is not None else Unknown("starred list")

    def ev_Tuple(self, node, fr):
        out = self._elements(node.elts, fr)
        return tuple(out) if out is not None else Unknown("starred tuple")

    def ev_Set(self, node, fr):
        out = self._elements(node.elts, fr)
        if out is None or not all(is_plain(x) or isinstance(x, Ext) for x in out):
            return Unknown("set")
        return set(out)

    def ev_Dict(self, node, fr):
        out = {}
        for k, v in zip(node.keys, node.values):
            if k is None:
                inner = self.ev(v, fr)
                if not isinstance(inner, dict):
                    return Unknown("** of an undecided mapping")
                out.update(inner)
                continue
            key = self.ev(k, fr)
            if not (is_plain(key) or isinstance(key, Ext)) or isinstance(key, (list, dict, set)):
                return Unknown("dict key")
            out[key] = self.ev(v, fr)
        return out

    def ev_Attribute(self, node, fr):
        return self.getattr_(self.ev(node.value, fr), node.attr)

    def ev_Subscript(self, node, fr):
        container = self.ev(node.value, fr)
        key = self.ev(node.slice, fr)
        if isinstance(container, Ext):
            if isinstance(key, str):
                return Ext(f"{container.name}.{key}")  # an enum by name: CudaGraphModule["attn"]
            return Unknown("subscript of external")
        if not isinstance(container, (list, tuple, dict, str, range)) or isinstance(key, Unknown):
            return Unknown("subscript")
        if has_unknown(key) if isinstance(key, (tuple, list)) else False:
            return Unknown("subscript key")
        try:
            return container[key]
        except Exception:
            return Unknown("subscript out of range or missing key")

    def ev_Slice(self, node, fr):
        parts = [self.ev(p, fr) if p is not None else None for p in (node.lower, node.upper, node.step)]
        if any(isinstance(p, Unknown) for p in parts):
            return Unknown("slice")
        return slice(*parts)

    def ev_BinOp(self, node, fr):
        return self.binop(node.op, self.ev(node.left, fr), self.ev(node.right, fr))

    def ev_UnaryOp(self, node, fr):
        v = self.ev(node.operand, fr)
        if isinstance(node.op, ast.Not):
            t = self.truth(v)
            return t if isinstance(t, Unknown) else not t
        if not is_plain(v):
            return Unknown("unary operation")
        try:
            return {ast.USub: lambda x: -x, ast.UAdd: lambda x: +x, ast.Invert: lambda x: ~x}[type(node.op)](v)
        except Exception:
            return Unknown("unary operation")

    def ev_BoolOp(self, node, fr):
        undecided = None
        v = None
        for value in node.values:
            v = self.ev(value, fr)
            t = self.truth(v)
            if isinstance(t, Unknown):
                undecided = t
                continue
            if isinstance(node.op, ast.And) and not t:
                return v if undecided is None else Unknown("and")
            if isinstance(node.op, ast.Or) and t:
                return v if undecided is None else Unknown("or")
        return v if undecided is None else undecided

    def ev_Compare(self, node, fr):
        left = self.ev(node.left, fr)
        result = True
        for op, comp in zip(node.ops, node.comparators):
            right = self.ev(comp, fr)
            r = self.compare(op, left, right)
            if r is False:
                return False
            if isinstance(r, Unknown):
                result = r
            left = right
        return result

    def ev_IfExp(self, node, fr):
        t = self.truth(self.ev(node.test, fr))
        if isinstance(t, Unknown):
            a, b = self.ev(node.body, fr), self.ev(node.orelse, fr)
            return a if same(a, b) else Unknown(f"{ast.unparse(node.test)} undecided")
        return self.ev(node.body if t else node.orelse, fr)

    def ev_JoinedStr(self, node, fr):
        parts = []
        for value in node.values:
            v = self.ev(value, fr)
            if not isinstance(v, str):
                return Unknown("f-string")
            parts.append(v)
        return "".join(parts)

    def ev_FormattedValue(self, node, fr):
        v = self.ev(node.value, fr)
        if isinstance(v, Ext):
            v = v.name
        if isinstance(v, PathVal):
            v = v.path
        if not is_plain(v):
            return Unknown("formatted value")
        if node.conversion == ord("r"):
            v = repr(v)
        elif node.conversion in (ord("s"), ord("a")):
            v = str(v)
        spec = self.ev(node.format_spec, fr) if node.format_spec is not None else ""
        if not isinstance(spec, str):
            return Unknown("format spec")
        try:
            return format(v, spec)
        except Exception:
            return Unknown("format")

    def ev_Lambda(self, node, fr):
        return Func(fr.module, node, fr)

    def ev_NamedExpr(self, node, fr):
        v = self.ev(node.value, fr)
        self.assign(node.target, v, fr)
        return v

    def _comprehension(self, node, fr):
        local = Frame(fr.module, fr)
        results = []

        def rec(i: int) -> bool:
            if i == len(node.generators):
                if isinstance(node, ast.DictComp):
                    results.append((self.ev(node.key, local), self.ev(node.value, local)))
                else:
                    results.append(self.ev(node.elt, local))
                return True
            g = node.generators[i]
            it = self.ev(g.iter, local)
            if not isinstance(it, (list, tuple, set, dict, range, str)):
                return False
            for item in list(it):
                self.assign(g.target, item, local)
                keep = True
                for cond in g.ifs:
                    t = self.truth(self.ev(cond, local))
                    if isinstance(t, Unknown):
                        return False
                    if not t:
                        keep = False
                        break
                if keep and not rec(i + 1):
                    return False
            return True

        if not rec(0):
            return Unknown("comprehension over undecided values")
        if isinstance(node, ast.DictComp):
            return dict(results) if all(is_plain(k) for k, _ in results) else Unknown("dict comprehension")
        if isinstance(node, ast.SetComp):
            return set(results) if all(is_plain(x) for x in results) else Unknown("set comprehension")
        return results

    ev_ListComp = ev_SetComp = ev_DictComp = ev_GeneratorExp = _comprehension

    def ev_Call(self, node, fr):
        if isinstance(node.func, ast.Attribute) and node.func.attr == "to_megatron_provider":
            # AutoBridge(...).to_megatron_provider(): the model provider the Hugging Face
            # config maps to; its architecture is outside the sources, its other fields
            # start at GPTModelProvider's (TransformerConfig's) defaults.
            base = self.ev(node.func.value, fr)
            hf = base.attrs.get("hf_path") if isinstance(base, Obj) else None
            return Obj(f"provider for {hf}", opaque=True, cls="megatron.bridge.models.gpt_provider.GPTModelProvider")
        f = self.ev(node.func, fr)
        args = self._elements(node.args, fr)
        kwargs = {}
        for kw in node.keywords:
            v = self.ev(kw.value, fr)
            if kw.arg is None:
                if not isinstance(v, dict):
                    return Obj(f"call with ** of an undecided mapping", opaque=True)
                kwargs.update(v)
            else:
                kwargs[kw.arg] = v
        if args is None:
            return Obj("call with * of an undecided sequence", opaque=True)
        return self.call(f, args, kwargs, node, fr)

    # ---- calls ---------------------------------------------------------------------
    def call(self, f, args, kwargs, node, fr):
        if isinstance(f, Func):
            special = self.special.get(f.qualname)
            if special is not None:
                return special(args, kwargs, node, fr)
            return self.invoke(f, args, kwargs, node, fr)
        if isinstance(f, Builtin):
            return f.fn(args, kwargs, node, fr)
        if isinstance(f, Method):
            return self.call_method(f, args, kwargs)
        if isinstance(f, Ext):
            return self.call_ext(f, args, kwargs, node, fr)
        if isinstance(f, ModuleVal):
            return Unknown("call of a module")
        return Obj(f"result of an undecided call ({ast.unparse(node.func)[:60]})", opaque=True)

    def call_method(self, m: Method, args, kwargs):
        r = m.receiver
        if isinstance(r, PathVal):
            if m.name == "with_name" and args and isinstance(args[0], str):
                return PathVal(f"{r.path.rpartition('/')[0]}/{args[0]}")
            if m.name == "joinpath" and all(isinstance(a, str) for a in args):
                return PathVal("/".join([r.path, *args]))
            return Unknown(f"Path.{m.name}")
        if m.name not in MUTATING and (any(not is_plain(a) for a in args) or any(not is_plain(v) for v in kwargs.values())):
            return Unknown(f"{type(r).__name__}.{m.name} of undecided values")
        if m.name not in MUTATING and has_unknown(r):
            return Unknown(f"{type(r).__name__}.{m.name} on undecided items")
        try:
            return getattr(r, m.name)(*args, **kwargs)
        except Exception:
            return Unknown(f"{type(r).__name__}.{m.name} failed")

    def call_ext(self, f: Ext, args, kwargs, node, fr):
        name = f.name
        last = name.rsplit(".", 1)[-1]
        if name.endswith("load_quantization_recipe"):
            path = args[0] if args else kwargs.get("recipe_path")
            return Obj("quantization_recipe", {"path": path.path if isinstance(path, PathVal) else path})
        if name in ("pathlib.Path", "Path"):
            if args and isinstance(args[0], PathVal):
                return PathVal(args[0].path)
            if args and isinstance(args[0], str):
                return PathVal(args[0])
            return Unknown("Path")
        if name == "os.path.join":
            if all(isinstance(a, str) for a in args):
                return "/".join(a.rstrip("/") for a in args)
            return Unknown("os.path.join of undecided parts")
        if name in ("os.path.dirname",) and args and isinstance(args[0], (str, PathVal)):
            p = args[0].path if isinstance(args[0], PathVal) else args[0]
            return p.rpartition("/")[0]
        if name in ("copy.deepcopy", "copy.copy") and args:
            return self.deepcopy(args[0])
        if name in ("dataclasses.replace",) and args and isinstance(args[0], Obj):
            out = self.deepcopy(args[0])
            out.attrs.update(kwargs)
            return out
        if last == "from_hf_pretrained":
            return Obj("AutoBridge", {"hf_path": args[0] if args else kwargs.get("hf_path")})
        if last[:1].isupper() and "." in name and not name.startswith(("torch.", "os.")):
            # A class: an object with its keyword arguments as attributes.
            if args:
                self.note(fr, node, f"{last}(...) positional arguments not kept")
            return Obj(last, kwargs, cls=name)
        return Obj(f"result of {name}()", opaque=True)

    def deepcopy(self, v, memo=None):
        memo = {} if memo is None else memo
        if isinstance(v, Obj):
            if id(v) in memo:
                return memo[id(v)]
            out = Obj(v.kind, opaque=v.opaque)
            memo[id(v)] = out
            out.attrs = {k: self.deepcopy(x, memo) for k, x in v.attrs.items()}
            return out
        if isinstance(v, list):
            return [self.deepcopy(x, memo) for x in v]
        if isinstance(v, dict):
            return {k: self.deepcopy(x, memo) for k, x in v.items()}
        return v

    def invoke(self, func: Func, args, kwargs, node, fr):
        if self.depth > 80:
            return Unknown("call depth")
        fnode = func.node
        a = fnode.args
        call_fr = Frame(func.module, func.closure)
        kwargs = dict(kwargs)
        pos = list(a.posonlyargs) + list(a.args)
        first_default = len(pos) - len(a.defaults)
        for i, p in enumerate(pos):
            if i < len(args):
                val = args[i]
            elif p.arg in kwargs:
                val = kwargs.pop(p.arg)
            elif i >= first_default:
                val = self.ev(a.defaults[i - first_default], Frame(func.module, func.closure))
            else:
                val = Unknown(f"argument {p.arg} of {func.qualname} not given")
            call_fr.vars[p.arg] = val
        if a.vararg:
            call_fr.vars[a.vararg.arg] = tuple(args[len(pos):])
        for p, d in zip(a.kwonlyargs, a.kw_defaults):
            if p.arg in kwargs:
                call_fr.vars[p.arg] = kwargs.pop(p.arg)
            elif d is not None:
                call_fr.vars[p.arg] = self.ev(d, Frame(func.module, func.closure))
            else:
                call_fr.vars[p.arg] = Unknown(f"argument {p.arg} not given")
        if a.kwarg:
            call_fr.vars[a.kwarg.arg] = kwargs
        self.depth += 1
        try:
            if isinstance(fnode, ast.Lambda):
                return self.ev(fnode.body, call_fr)
            self.run(fnode.body, call_fr)
            return None
        except _Return as r:
            return r.value
        except _Raise:
            self.note(fr, node, f"{func.qualname} raises on this path")
            return Unknown(f"{func.qualname} raised")
        finally:
            self.depth -= 1

    # ---- special functions (runtime-dependent in Bridge; their effect as documented) -
    def _sp_flex_backend(self, args, kwargs, node, fr):
        """apply_flex_dispatcher_backend(model, backend): the requested backend, as on a GPU
        that supports it (the support check queries the device at run time)."""
        model = args[0] if args else kwargs.get("model_config")
        backend = args[1] if len(args) > 1 else kwargs.get("moe_flex_dispatcher_backend")
        if not isinstance(model, Obj):
            return None
        experts = model.attrs.get("num_moe_experts", Unknown("experts"))
        if experts is None or experts == 0:
            return None
        if isinstance(backend, Unknown):
            for k in ("moe_token_dispatcher_type", "moe_flex_dispatcher_backend", "moe_shared_expert_overlap"):
                self.jset(model.attrs, k, Unknown("flex backend undecided"))
            return None
        if backend in ("deepep", "hybridep"):
            self.jset(model.attrs, "moe_token_dispatcher_type", "flex")
            self.jset(model.attrs, "moe_flex_dispatcher_backend", backend)
            self.jset(model.attrs, "moe_shared_expert_overlap", False)
        return None

    @staticmethod
    def _member_names(modules):
        if modules is None:
            return []
        if isinstance(modules, str):
            return [] if modules in ("", "full") else modules.split(",")
        if not isinstance(modules, (list, tuple)):
            modules = [modules]
        out = []
        for m in modules:
            if isinstance(m, str):
                out.append(m.rsplit(".", 1)[-1])
            elif isinstance(m, Ext):
                out.append(m.name.rsplit(".", 1)[-1])
            else:
                return Unknown("CUDA graph module")
        return out

    def _sp_cuda_graph_modules(self, args, kwargs, node, fr):
        """set_cuda_graph_modules(config, modules) with Megatron-Core's cuda_graph_modules
        API present (it is at the tag's 3rdparty/Megatron-LM): the modules, scope None."""
        config = args[0] if args else None
        modules = args[1] if len(args) > 1 else kwargs.get("modules")
        if isinstance(config, Obj):
            self.jset(config.attrs, "cuda_graph_modules", self._member_names(modules))
            self.jset(config.attrs, "cuda_graph_scope", None)
        return None

    def _sp_clear_cuda_graph_modules(self, args, kwargs, node, fr):
        return self._sp_cuda_graph_modules([args[0] if args else None, []], {}, node, fr)

    def _sp_full_iteration_graph(self, args, kwargs, node, fr):
        config = args[0] if args else None
        if isinstance(config, Obj):
            self.jset(config.attrs, "cuda_graph_impl", "full_iteration")
            self.jset(config.attrs, "cuda_graph_modules", [])
            self.jset(config.attrs, "cuda_graph_scope", None)
        return None

    # ---- builtins ------------------------------------------------------------------
    def _make_builtins(self) -> dict:
        b = {}

        def plain_call(fn):
            def call(args, kwargs, node, fr):
                if any(isinstance(a, (Unknown, Obj, Ext)) or has_unknown(a) for a in args) or any(
                    has_unknown(v) for v in kwargs.values()
                ):
                    return Unknown(f"{fn.__name__}() of undecided values")
                try:
                    return fn(*args, **kwargs)
                except Exception:
                    return Unknown(f"{fn.__name__}() failed")
            return call

        for fn in (len, max, min, sum, abs, round, sorted, any, all, list, tuple, set, frozenset, dict, range,
                   enumerate, zip, divmod, reversed, int, float, bool, repr, chr, ord):
            b[fn.__name__] = Builtin(fn.__name__, plain_call(fn))

        def to_list(fn):
            inner = plain_call(fn)
            def call(args, kwargs, node, fr):
                r = inner(args, kwargs, node, fr)
                return list(r) if not isinstance(r, Unknown) else r
            return call

        for fn in (enumerate, zip, reversed):
            b[fn.__name__] = Builtin(fn.__name__, to_list(fn))

        def b_str(args, kwargs, node, fr):
            if not args:
                return ""
            v = args[0]
            if isinstance(v, PathVal):
                return v.path
            if isinstance(v, Ext):
                return v.name
            return str(v) if is_plain(v) else Unknown("str() of an undecided value")

        def b_getattr(args, kwargs, node, fr):
            o, name = args[0], args[1]
            if not isinstance(name, str):
                return Unknown("getattr name")
            if len(args) > 2:
                default = args[2]
                if isinstance(o, Obj) and name not in o.attrs:
                    has = self.has_attribute(o, name)
                    if has is False:
                        return default
                elif o is None or (isinstance(o, PLAIN) and not isinstance(o, Unknown)):
                    return getattr(o, name, default) if not hasattr(o, name) else self.getattr_(o, name)
            return self.getattr_(o, name)

        def b_hasattr(args, kwargs, node, fr):
            o, name = args[0], args[1]
            if isinstance(o, Obj):
                return self.has_attribute(o, name)
            if isinstance(o, ModuleVal):
                return not isinstance(o.module.attr(name), Unknown)
            return Unknown(f"hasattr {name}")

        types = {"int": int, "float": float, "str": str, "bool": bool, "list": list, "dict": dict,
                 "tuple": tuple, "set": set}

        def b_isinstance(args, kwargs, node, fr):
            o, t = args[0], args[1]
            ts = t if isinstance(t, tuple) else (t,)
            verdicts = []
            for x in ts:
                if isinstance(x, Builtin) and x.name in types:
                    if isinstance(o, Obj):
                        verdicts.append(Unknown("isinstance") if o.opaque else False)
                    elif isinstance(o, (Unknown, Ext)):
                        verdicts.append(Unknown("isinstance of an undecided value"))
                    elif isinstance(o, PLAIN):
                        verdicts.append(isinstance(o, types[x.name]))
                    else:
                        verdicts.append(False)
                elif isinstance(x, Ext) and isinstance(o, PLAIN) and not has_unknown(o):
                    verdicts.append(False)  # a plain value is no instance of a recipe class
                elif isinstance(x, Ext) and isinstance(o, Obj) and o.cls is not None:
                    want = x.name.rsplit(".", 1)[-1]
                    lineage = self.class_lineage(o.cls)
                    if want in [q.rsplit(".", 1)[-1] for q in lineage]:
                        verdicts.append(True)
                    elif not o.opaque and all(self.find_class(q) is not None for q in lineage):
                        verdicts.append(False)
                    else:
                        verdicts.append(Unknown(f"isinstance({o.kind}, {x.name})"))
                else:
                    verdicts.append(Unknown("isinstance"))
            if any(v is True for v in verdicts):
                return True
            if all(v is False for v in verdicts):
                return False
            return Unknown("isinstance")

        b["str"] = Builtin("str", b_str)
        b["getattr"] = Builtin("getattr", b_getattr)
        b["hasattr"] = Builtin("hasattr", b_hasattr)
        b["isinstance"] = Builtin("isinstance", b_isinstance)
        b["print"] = Builtin("print", lambda args, kwargs, node, fr: None)
        b["callable"] = Builtin("callable", lambda args, kwargs, node, fr: isinstance(args[0], (Func, Builtin)))
        for exc in ("ValueError", "TypeError", "RuntimeError", "KeyError", "AssertionError", "NotImplementedError",
                    "ImportError", "AttributeError", "Exception"):
            b[exc] = Ext(exc)
        return b

    # ---- statements ----------------------------------------------------------------
    def run(self, body, fr: Frame) -> None:
        for stmt in body:
            self.exec(stmt, fr)

    def assign(self, target, value, fr: Frame) -> None:
        if isinstance(target, ast.Name):
            self.jset(fr.vars, target.id, value)
        elif isinstance(target, ast.Attribute):
            base = self.ev(target.value, fr)
            if isinstance(base, Obj):
                self.jset(base.attrs, target.attr, value)
            elif not isinstance(base, ModuleVal):
                self.note(fr, target, f"write to {ast.unparse(target)} lost ({base!r})")
        elif isinstance(target, ast.Subscript):
            base = self.ev(target.value, fr)
            key = self.ev(target.slice, fr)
            if isinstance(base, dict) and (is_plain(key) or isinstance(key, Ext)):
                self.jset(base, key, value)
            elif isinstance(base, list) and isinstance(key, int):
                base[key] = value
            else:
                self.note(fr, target, f"write to {ast.unparse(target)} lost")
        elif isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, (list, tuple)) and len(value) == len(target.elts):
                for t, v in zip(target.elts, value):
                    self.assign(t, v, fr)
            else:
                for t in target.elts:
                    self.assign(t, Unknown("unpacking"), fr)
        elif isinstance(target, ast.Starred):
            self.assign(target.value, Unknown("starred"), fr)

    def exec(self, s, fr: Frame) -> None:
        if isinstance(s, ast.Assign):
            v = self.ev(s.value, fr)
            for t in s.targets:
                self.assign(t, v, fr)
        elif isinstance(s, ast.AnnAssign):
            if s.value is not None:
                self.assign(s.target, self.ev(s.value, fr), fr)
        elif isinstance(s, ast.AugAssign):
            self.assign(s.target, self.binop(s.op, self.ev(s.target, fr), self.ev(s.value, fr)), fr)
        elif isinstance(s, ast.Expr):
            self.ev(s.value, fr)
        elif isinstance(s, ast.Return):
            raise _Return(self.ev(s.value, fr) if s.value is not None else None)
        elif isinstance(s, ast.Raise):
            raise _Raise()
        elif isinstance(s, ast.If):
            self.exec_if(s, fr)
        elif isinstance(s, ast.For):
            it = self.ev(s.iter, fr)
            if not isinstance(it, (list, tuple, set, dict, range, str)):
                self.note(fr, s, f"loop over undecided {ast.unparse(s.iter)} skipped")
                return
            broke = False
            for item in list(it):
                self.assign(s.target, item, fr)
                try:
                    self.run(s.body, fr)
                except _Break:
                    broke = True
                    break
                except _Continue:
                    continue
            if not broke:
                self.run(s.orelse, fr)
        elif isinstance(s, ast.While):
            self.note(fr, s, "while loop skipped")
        elif isinstance(s, ast.With):
            for item in s.items:
                if item.optional_vars is not None:
                    self.assign(item.optional_vars, Unknown("with"), fr)
            self.run(s.body, fr)
        elif isinstance(s, ast.Try):
            try:
                self.run(s.body, fr)
            except _Raise:
                if s.handlers:
                    self.run(s.handlers[0].body, fr)
                else:
                    raise
            else:
                self.run(s.orelse, fr)
            finally:
                self.run(s.finalbody, fr)
        elif isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.jset(fr.vars, s.name, Func(fr.module, s, fr))
        elif isinstance(s, ast.ClassDef):
            self.jset(fr.vars, s.name, Ext(f"{fr.module.name}.{s.name}"))
        elif isinstance(s, ast.ImportFrom):
            base = self.absolute(fr.module, s.module, s.level)
            for a in s.names:
                self.jset(fr.vars, a.asname or a.name, self.resolve(fr.module, ("from", base, a.name)))
        elif isinstance(s, ast.Import):
            for a in s.names:
                name = a.asname or a.name.split(".")[0]
                self.jset(fr.vars, name, self.resolve(fr.module, ("import", a.name if a.asname else name)))
        elif isinstance(s, ast.Delete):
            for t in s.targets:
                if isinstance(t, ast.Attribute):
                    base = self.ev(t.value, fr)
                    if isinstance(base, Obj):
                        self.jdel(base.attrs, t.attr)
                elif isinstance(t, ast.Name):
                    self.jdel(fr.vars, t.id)
        elif isinstance(s, ast.Break):
            raise _Break()
        elif isinstance(s, ast.Continue):
            raise _Continue()
        elif isinstance(s, (ast.Pass, ast.Global, ast.Nonlocal, ast.Assert)):
            return
        else:
            self.note(fr, s, f"statement {type(s).__name__} skipped")

    def exec_if(self, s: ast.If, fr: Frame) -> None:
        t = self.truth(self.ev(s.test, fr))
        if t is True or (not isinstance(t, Unknown) and t):
            self.run(s.body, fr)
            return
        if not isinstance(t, Unknown):
            self.run(s.orelse, fr)
            return
        outcomes = []
        for body in (s.body, s.orelse):
            self.journals.append([])
            ret, raised = None, False
            try:
                self.run(body, fr)
            except _Return as r:
                ret = r
            except _Raise:
                raised = True
            except (_Break, _Continue):
                raised = True
            journal = self.journals.pop()
            places = {}
            for d, k, had, old in journal:
                places[(id(d), k)] = (d, k)
            finals = {key: (k in d, d.get(k)) for key, (d, k) in places.items()}
            for d, k, had, old in reversed(journal):
                if had:
                    d[k] = old
                else:
                    d.pop(k, None)
            outcomes.append((places, finals, ret, raised))
        live = [o for o in outcomes if not o[3]]
        where = f"{fr.module.path}:{s.lineno}"
        if not live:
            raise _Raise()
        if len(live) == 1:
            places, finals, ret, _ = live[0]
            if outcomes[0][3] != outcomes[1][3]:
                pass  # the other branch raises: a valid recipe takes this one
            for key, (d, k) in places.items():
                present, value = finals[key]
                if present:
                    self.jset(d, k, value)
                else:
                    self.jdel(d, k)
            if ret is not None:
                raise ret
            return
        self.notes.append(f"{where}: condition `{ast.unparse(s.test)}` undecided; branches merged")
        (pa, fa, ra, _), (pb, fb, rb, _) = live
        for key in set(pa) | set(pb):
            d, k = pa.get(key) or pb.get(key)
            before = (k in d, d.get(k))
            va, vb = fa.get(key, before), fb.get(key, before)
            if va[0] == vb[0] and (not va[0] or same(va[1], vb[1])):
                if va[0]:
                    self.jset(d, k, va[1])
                else:
                    self.jdel(d, k)
            else:
                self.jset(d, k, Unknown(f"depends on `{ast.unparse(s.test)}` ({where})"))
        if ra is not None and rb is not None:
            raise _Return(ra.value if same(ra.value, rb.value) else Unknown(f"return depends on {where}"))
        if ra is not None or rb is not None:
            self.notes.append(f"{where}: one branch returns early; the other path was followed")


# ---- reading a flat-recipe tag ------------------------------------------------------------

def dataclass_defaults_any(source: str, cls: str = "WorkloadBaseConfig") -> dict:
    """A dataclass's field defaults, `field(default_factory=dict|list)` as {} / []."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef) and node.name == cls:
            out = {}
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and item.value is not None:
                    v = item.value
                    if isinstance(v, ast.Call) and ast.unparse(v.func) in ("field", "dataclasses.field"):
                        kws = {k.arg: k.value for k in v.keywords}
                        if "default_factory" in kws:
                            out[item.target.id] = {"dict": {}, "list": []}.get(ast.unparse(kws["default_factory"]))
                        elif "default" in kws:
                            out[item.target.id] = literal(kws["default"])
                        continue
                    out[item.target.id] = literal(v)
            return out
    raise ValueError(f"no {cls} class")


def module_literal(source: str, name: str):
    """A module-level constant of a source file, as a literal (None when absent)."""
    for node in ast.parse(source).body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == name for t in targets) and node.value is not None:
            return literal(node.value)
    return None


LAYER_CHARS = {"embedding": "E", "decoder": "t", "mtp": "m", "loss": "L"}


def layout_string(layout) -> str | list:
    """A pipeline layout (list of stages of layer names) in Megatron-Core's string form
    (megatron/core/transformer/pipeline_parallel_layer_layout.py parse_str_to_list: E
    embedding, t decoder, m MTP, L loss, | between stages, x*n and (..)*n repeat)."""
    if not isinstance(layout, list) or not all(isinstance(st, list) for st in layout):
        return layout
    stages = []
    for st in layout:
        chars = []
        for layer in st:
            name = layer.rsplit(".", 1)[-1] if isinstance(layer, str) else None
            if name not in LAYER_CHARS:
                return layout
            chars.append(LAYER_CHARS[name])
        text, i = "", 0
        while i < len(chars):
            j = i
            while j < len(chars) and chars[j] == chars[i]:
                j += 1
            text += chars[i] if j - i == 1 else f"{chars[i]}*{j - i}"
            i = j
        stages.append(text)
    groups = []
    for st in stages:
        if groups and groups[-1][0] == st:
            groups[-1][1] += 1
        else:
            groups.append([st, 1])
    out = ""
    for n, (st, count) in enumerate(groups):
        last = n == len(groups) - 1
        if count == 1:
            out += st + ("" if last else "|")
        elif not last:
            out += f"({st}|)*{count}"
        else:
            out += (f"({st}|)*{count - 1}" if count > 2 else f"{st}|") + st
    return out


def to_json(v, unresolved: list, field: str):
    """A recipe value as table JSON; undecided values are listed in `unresolved`."""
    if isinstance(v, Unknown):
        unresolved.append(field)
        return None
    if isinstance(v, Ext):
        return v.name.rsplit(".", 1)[-1] if ".CudaGraph" in v.name or "Enum" in v.name else v.name
    if isinstance(v, PathVal):
        return v.path
    if isinstance(v, Obj):
        return v.kind
    if isinstance(v, (list, tuple)):
        return [to_json(x, unresolved, field) for x in v]
    if isinstance(v, (set, frozenset)):
        return sorted(to_json(x, unresolved, field) for x in v)
    if isinstance(v, dict):
        return {str(k): to_json(x, unresolved, field) for k, x in v.items()}
    if isinstance(v, (Func, Builtin, Method, ModuleVal)):
        unresolved.append(field)
        return None
    return v


FLAT_NAME = re.compile(
    r"^(?P<recipe>[a-z0-9_]+?)_(?P<task>{tasks})_(?P<num_gpus>[1-9][0-9]*)gpu_(?P<gpu>[a-z0-9]+)_"
    r"(?P<precision>{precisions})(?:_(?P<variant>[a-z0-9_]+))?_config$"
)


def flat_recipe_names(repo: str, tag: str) -> dict[str, tuple[str, str]]:
    """Every flat recipe a family package exports: name -> (family, defining file).

    As at the tag: utils/utils.py finds a recipe with getattr on the family package
    (find_perf_recipe), the names being the `def *_config` of the package's files."""
    files = git(repo, "ls-tree", "-r", "--name-only", tag, FLAT_ROOT).split()
    out: dict[str, tuple[str, str]] = {}
    for init in sorted(f for f in files if re.fullmatch(re.escape(FLAT_ROOT) + r"/[a-z0-9_]+/__init__\.py", f)):
        family = init.split("/")[-2]
        for node in ast.walk(ast.parse(show(repo, tag, init))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("megatron.bridge.perf_recipes"):
                path = "src/" + node.module.replace(".", "/") + ".py"
                for a in node.names:
                    name = a.asname or a.name
                    if name.endswith("_config") and not name.startswith("_"):
                        out[name] = (family, path)
    return out


def read_flat_tag(repo: str, tag: str, entry: dict, dump: dict | None = None, mlm_repo: str | None = None) -> dict:
    """A tag whose recipes are the flat functions of src/megatron/bridge/perf_recipes."""
    utils_source = show(repo, tag, FLAT_UTILS)
    parser_source = show(repo, tag, "scripts/performance/argument_parser.py")
    all_defaults = dataclass_defaults_any(utils_source)
    defaults = {k: v for k, v in all_defaults.items() if k not in NEUTRAL_NEW_FIELDS and k not in SEPARATE_FIELDS}
    new_defaults = {k: all_defaults[k] for k in all_defaults if k in NEUTRAL_NEW_FIELDS}
    arguments = read_arguments(parser_source)
    tasks = next((a.get("choices") for a in arguments if a["dest"] == "task"), None) or ["pretrain", "sft", "peft"]
    precision_map = module_literal(utils_source, "_PRECISION_NAME_MAP") or {}
    dtype_of = {short: full.upper() for full, short in precision_map.items()}
    overrides = module_literal(utils_source, "_DEFAULT_GPU_COUNT_OVERRIDES") or {}
    pattern = re.compile(FLAT_NAME.pattern.format(
        tasks="|".join(map(re.escape, tasks)),
        precisions="|".join(map(re.escape, sorted(dtype_of, key=len, reverse=True)))))
    dv = default_variant(parser_source)
    if dv is not None:
        entry["default_variant"] = dv
    entry["arguments"] = arguments
    entry["defaults"] = defaults

    # Megatron-Core's class defaults (TransformerConfig, DistributedDataParallelConfig) at
    # the commit the tag pins, when a Megatron-LM repository holding it is given.
    mlm = None
    pin = git(repo, "ls-tree", tag, "3rdparty/Megatron-LM").split()
    if len(pin) >= 3 and pin[1] == "commit":
        entry["megatron_lm"] = pin[2]
        if mlm_repo and subprocess.run([*git_base(mlm_repo), "cat-file", "-e", pin[2] + "^{commit}"],
                                       capture_output=True).returncode == 0:
            mlm = (mlm_repo, pin[2])
        else:
            entry["megatron_lm_classes"] = "not read (no --megatron-lm repository holding the commit)"
    names = flat_recipe_names(repo, tag)
    parsed, unmatched = {}, []
    for name, (family, path) in sorted(names.items()):
        m = pattern.match(name)
        if m is None:
            unmatched.append(name)
            continue
        parsed[name] = (family, path, m.groupdict())
    # The recipe a name without a GPU count resolves to: utils/utils.py
    # _select_default_recipe_name (the override table, else the largest count).
    groups: dict[tuple, list[tuple[int, str]]] = {}
    for name, (_, _, g) in parsed.items():
        groups.setdefault((g["recipe"], g["task"], g["gpu"], g["precision"], g["variant"]), []).append(
            (int(g["num_gpus"]), name))
    default_name = {}
    for key, matches in groups.items():
        matches.sort()
        want = overrides.get(key)
        chosen = next((n for c, n in matches if c == want), None) if want is not None else None
        default_name[key] = chosen or matches[-1][1]

    configs, env_vars, flat_of, unresolved, skipped, notes = {}, {}, {}, {}, [], {}
    for name, (family, path, g) in parsed.items():
        key = (g["recipe"], g["task"], g["gpu"], g["precision"], g["variant"])
        old = f"{g['recipe']}_{g['task']}_CONFIG_{g['gpu']}_{dtype_of[g['precision']]}".upper()
        if g["variant"]:
            old += "_" + g["variant"].upper()
        if default_name[key] != name:
            old += f"_{g['num_gpus']}GPU"
        interp = Interp(repo, tag, mlm)
        try:
            fields, missing, state = flat_workload(interp, family, path, name, int(g["num_gpus"]))
        except Exception as exc:  # the tool's limits, reported, never hidden
            skipped.append(f"{path} {name}: {type(exc).__name__}: {exc}")
            continue
        flat_of[old] = name
        env_vars[old] = fields.pop("env_vars", {}) or {}
        cfg = {"family": family}
        for k, v in fields.items():
            if k in NEUTRAL_NEW_FIELDS:
                if not any(same(v, n) for n in NEUTRAL_NEW_FIELDS[k]):
                    cfg[k] = v
            elif k not in defaults or defaults[k] != v:
                cfg[k] = v
        configs[old] = cfg
        if missing:
            unresolved[old] = sorted(set(missing))
        if interp.notes:
            notes[old] = sorted(set(interp.notes))
        if dump is not None:
            dump[name] = {"key": old, "file": path, "workload": {**fields, "env_vars": env_vars[old]},
                          "unresolved": sorted(set(missing)), "notes": sorted(set(interp.notes)), "state": state}
    entry["configs"] = dict(sorted(configs.items()))
    entry["naming"] = "versioned"
    entry["recipes"] = (f"flat: {FLAT_ROOT}/<family>/<gpu>/*.py functions "
                        "{recipe}_{task}_{N}gpu_{gpu}_{precision}[_{variant}]_config, run by this tool; "
                        "fields as scripts/performance/utils/utils.py _workload_base_config_from_recipe "
                        "maps the built config (final values, not overrides)")
    entry["new_field_defaults"] = new_defaults
    entry["recipe_functions"] = dict(sorted(flat_of.items()))
    entry["env_vars"] = dict(sorted(env_vars.items()))
    if unresolved:
        entry["unresolved"] = dict(sorted(unresolved.items()))
    if unmatched:
        entry["unmatched_names"] = unmatched
    if skipped:
        entry["skipped"] = skipped
    training = {}
    for script in ("scripts/training/setup_experiment.py", "scripts/training/run_recipe.py"):
        text = show(repo, tag, script)
        if text is not None and show(repo, tag, "scripts/training/train.sh") is not None:
            training[script] = read_arguments(text)
    if training:
        entry["training_arguments"] = training
    return entry


def flat_workload(interp: Interp, family: str, path: str, name: str, num_gpus: int):
    """Run one flat recipe, then Bridge's compatibility mapping on what it built."""
    mod = interp.module(path[len("src/"):-len(".py")].replace("/", "."))
    fn = mod.lookup(name) if mod is not None else Unknown("module")
    if not isinstance(fn, Func):
        raise ValueError(f"{name} is not a function in {path}")
    fr = Frame(mod)
    cfg = interp.invoke(fn, [], {}, fn.node, fr)
    if not isinstance(cfg, Obj):
        raise ValueError(f"{name} built no config ({cfg!r})")
    utils = interp.module_at("scripts.performance.utils.utils", FLAT_UTILS)
    mapping = utils.lookup("_workload_base_config_from_recipe") if utils is not None else None
    if not isinstance(mapping, Func):
        raise ValueError("no _workload_base_config_from_recipe in utils/utils.py")
    wbc = interp.invoke(mapping, [cfg], {"num_gpus": num_gpus}, mapping.node, Frame(utils))
    if not isinstance(wbc, Obj):
        raise ValueError(f"_workload_base_config_from_recipe gave {wbc!r}")
    defaults = dataclass_defaults_any(show(interp.repo, interp.tag, FLAT_UTILS))
    missing: list[str] = []
    fields = {}
    for k, default in defaults.items():
        v = wbc.attrs.get(k, default)
        if isinstance(v, Unset):
            missing.append(k + " (unset)")
            v = default
        elif isinstance(v, Unknown):
            missing.append(k)
            v = default
        fields[k] = to_json(v, missing, k)
    model = cfg.attrs.get("model")
    model_attrs = model.attrs if isinstance(model, Obj) else {}
    # CUDA graphs: with Megatron-Core's cuda_graph_modules API the modules replace the
    # deprecated scope (set_cuda_graph_modules leaves cuda_graph_scope None); the table
    # keeps the old field name for them.
    modules = Interp._member_names(model_attrs.get("cuda_graph_modules"))
    if isinstance(modules, list) and fields.get("cuda_graph_scope") in (None, []) and modules:
        fields["cuda_graph_scope"] = modules
    # Per-module TE precision: v0.5.x's te_precision_config_file loaded the file into
    # model.quant_recipe (utils/overrides.py); flat recipes load it themselves.
    quant = model_attrs.get("quant_recipe")
    if isinstance(quant, Obj) and quant.kind == "quantization_recipe" and "te_precision_config_file" in fields:
        fields["te_precision_config_file"] = quant.attrs.get("path")
    peft = cfg.attrs.get("peft")
    if isinstance(peft, Obj):
        fields["peft"] = peft.kind.lower()
    if isinstance(fields.get("pp_layout"), list):
        fields["pp_layout"] = layout_string(fields["pp_layout"])
    normalize_in_effect(interp, model, fields, missing)
    return fields, missing, flatten_state(cfg)


def normalize_in_effect(interp: Interp, model, fields: dict, missing: list) -> None:
    """The older tables' meaning: a field names a setting in effect, None where the run does
    not use it. Bridge's mapping copies raw attributes, some of which are inert:
      - the flex backend acts only with moe_token_dispatcher_type "flex" (Megatron-Core);
      - recompute_modules act only with granularity "selective", recompute_num_layers only
        with "full" (Megatron-Core TransformerConfig);
      - CPU offloading of 0 layers (Megatron-Core's default) is no offloading;
      - offload_modules act only with fine_grained_activation_offloading;
      - moe_a2a_overlap / cutedsl_fused_grouped_mlp None (a class default) is off;
      - the deprecated external_cuda_graph / enable_cuda_graph with cuda_graph_impl "none"
        are cuda_graph_impl "transformer_engine" / "local" (Megatron-Core TransformerConfig
        __post_init__, cd4afffa megatron/core/transformer/transformer_config.py 2365-2381)."""
    if not isinstance(model, Obj):
        return
    get = lambda name: interp.getattr_(model, name)
    if fields.get("cuda_graph_impl") in (None, "none"):
        for flag, impl in (("external_cuda_graph", "transformer_engine"), ("enable_cuda_graph", "local")):
            if get(flag) is True:
                fields["cuda_graph_impl"] = impl
    undecided_backend = [m for m in missing if m.startswith("moe_flex_dispatcher_backend")]
    if fields.get("moe_flex_dispatcher_backend") is not None or undecided_backend:
        kind = get("moe_token_dispatcher_type")
        if isinstance(kind, Unknown):
            if not undecided_backend:
                missing.append("moe_flex_dispatcher_backend (dispatcher type)")
        elif kind != "flex":
            fields["moe_flex_dispatcher_backend"] = None
            for m in undecided_backend:
                missing.remove(m)
    granularity = get("recompute_granularity")
    if isinstance(granularity, Unknown):
        if fields.get("recompute_modules") is not None or fields.get("recompute_num_layers") is not None:
            missing.append("recompute (granularity)")
    else:
        if granularity != "selective":
            fields["recompute_modules"] = None
        if granularity != "full":
            fields["recompute_num_layers"] = None
    if fields.get("cpu_offloading_num_layers") in (0, None):
        fields["cpu_offloading_num_layers"] = None
    elif get("cpu_offloading") is False:
        fields["cpu_offloading_num_layers"] = None
    if fields.get("fine_grained_activation_offloading") is not True:
        fields["offload_modules"] = None
    for k in ("moe_a2a_overlap", "cutedsl_fused_grouped_mlp"):
        if k in fields and fields[k] is None:
            fields[k] = False


def flatten_state(obj: Obj, prefix: str = "", depth: int = 0, out: dict | None = None) -> dict:
    """Every setting the sources decided, as dotted paths (for the optional dump)."""
    out = {} if out is None else out
    for k, v in sorted(obj.attrs.items()):
        path = f"{prefix}{k}"
        if isinstance(v, Obj) and depth < 4:
            out[path] = f"<{v.kind}>"
            flatten_state(v, path + ".", depth + 1, out)
        elif not isinstance(v, Unknown):
            out[path] = to_json(v, [], path)
        else:
            out[path] = f"<unknown: {v.why}>"
    return out


def read_tag(repo: str, tag: str, dump: dict | None = None, mlm_repo: str | None = None) -> dict:
    commit = git(repo, "rev-list", "-n1", tag).strip()
    date = git(repo, "log", "-1", "--format=%cs", tag).strip()
    files = git(repo, "ls-tree", "-r", "--name-only", tag, "scripts/performance/configs").split()
    bases = [f for f in files if f.endswith("workload_base_configs.py")]
    entry = {"tag": tag, "commit": commit, "date": date}
    if not bases:
        flat = git(repo, "ls-tree", "--name-only", tag, FLAT_ROOT + "/").split()
        if flat and show(repo, tag, FLAT_UTILS) is not None:
            return read_flat_tag(repo, tag, entry, dump, mlm_repo)
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


# Keys written one entry a line (so a tag's changes read as line diffs).
PER_ENTRY_KEYS = ("configs", "recipe_functions", "env_vars", "unresolved", "training_arguments")
PER_ENTRY_LISTS = ("skipped", "unmatched_names")


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
            if k == "arguments" or (k in PER_ENTRY_LISTS and isinstance(v, list)):
                lines.append(f"   {json.dumps(k)}: [")
                for a_i, arg in enumerate(v):
                    lines.append(f"    {compact(arg)}" + ("," if a_i + 1 < len(v) else ""))
                lines.append("   ]" + comma)
            elif k in PER_ENTRY_KEYS and isinstance(v, dict):
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
    ap.add_argument("--dump-flat", help="write every flat recipe's decided state (JSON) here")
    ap.add_argument("--megatron-lm", help="a Megatron-LM checkout or bare repository holding the commit a flat-recipe "
                                          "tag pins, for Megatron-Core's class defaults (optional)")
    args = ap.parse_args()
    dump: dict | None = {} if args.dump_flat else None
    table = {
        "repository": "NVIDIA-NeMo/Megatron-Bridge",
        "generated_by": "tools/bridge_recipes.py",
        "lookup": {
            "versioned": "{RECIPE}_{TASK}_CONFIG_{GPU}_{DTYPE}_{VARIANT} upper case; then _V1 when V2 is missing; "
                         "then without the variant (scripts/performance/utils/utils.py, get_workload_base_config)",
            "base_config": "{MODEL}_{SIZE}_{GPU}_{TASK}_{DTYPE}_BASE_CONFIG upper case, the task left out for "
                           "pretraining (utils/utils.py at v0.2.x)",
            "flat": "v0.6.0 on (tags with \"recipes\"): the launcher's flat recipe "
                    "{recipe}_{task}_{N}gpu_{gpu}_{precision}[_{variant}]_config (precision bf16, fp8cs, fp8mx, "
                    "fp8sc, nvfp4) is in \"configs\" as {RECIPE}_{TASK}_CONFIG_{GPU}_{DTYPE}[_{VARIANT}] when it is "
                    "the one a name without -ng picks (utils/utils.py _select_default_recipe_name: the override "
                    "table, else the largest N), else with _{N}GPU appended; v1/v2 select no variant; "
                    "\"recipe_functions\" maps each key to its function; run_script.py takes the exact -ng "
                    "recipe first, else the default one, weak-scaled",
        },
        "tags": [read_tag(args.repo, t, dump, args.megatron_lm) for t in release_tags(args.repo)],
    }
    if args.dump_flat:
        with open(args.dump_flat, "w", encoding="utf-8") as f:
            json.dump(dump, f, indent=1, sort_keys=True)
            f.write("\n")
    text = render(table)
    if args.out == "-":
        sys.stdout.write(text)
    else:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
