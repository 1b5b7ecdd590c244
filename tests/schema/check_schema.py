#!/usr/bin/env python3
"""The JSON Schemas of the input formats (schema/*.schema.json, `moesim schema`) against
the shipped files and against the loader.

    python3 tests/schema/check_schema.py SOURCE_DIR MOESIM_BINARY

Checks, each failure reported with the file or object and what differs:
  a. both schemas are valid draft 2020-12 schemas, and every property has a description;
  b. every shipped scenario (a *.json under scenarios/ that is an object with "system" and
     "gpus") validates against scenario.schema.json, every sweep file under
     scenarios/sweeps/ against sweep.schema.json (its "$ref" to the scenario schema
     resolved locally), and the system and model presets against the schema's inline
     system and model objects;
  c. for every object the schema describes with fixed keys, the schema's keys are the
     loader's, both ways: a minimal valid instance (from a shipped scenario where one has
     the object) gets the unknown key `zz_probe`, `moesim describe` (scenarios) or
     `moesim sweep --slurm-script` (sweeps) must refuse it with "unknown key 'zz_probe';
     valid keys here: ...", and that list must equal the schema's `properties` there
     (variants probed one by one: routing.balance, MLA / MoE / Mixtral-style models,
     inline systems with and without a base, ...). The instance without the key must
     validate against the schema, and with it must not;
  d. every enum of the schema that names the loader's values (precisions, dispatchers,
     presets, releases, ...) equals the "known: ..." list the loader prints for a bad value;
  e. docs/SCENARIO_FORMAT.md, the contract, shows scenarios/dsv3-gb200.json as its example
     and names every key of both schemas.

Standard library and python3-jsonschema 4.x only (the `referencing` registry where the
jsonschema version has it, RefResolver otherwise); no network.
"""
import copy
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.parse

try:
    import jsonschema
    from jsonschema import Draft202012Validator
except ImportError:  # pragma: no cover
    sys.exit("check_schema: needs python3-jsonschema 4.x (Debian: apt-get install python3-jsonschema)")

PROBE = "zz_probe"
BAD = "zz_bad_value"

errors = []


def error(msg):
    errors.append(msg)


# --------------------------------------------------------------------------- schemas


class Schemas:
    """Both schema documents, a validator factory that resolves "$ref"s between them
    locally, and a walker that finds what a schema says about an instance's keys."""

    def __init__(self, schema_dir):
        self.docs = {}
        self.ids = {}
        for name in ("scenario", "sweep"):
            path = os.path.join(schema_dir, name + ".schema.json")
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
            if "$id" not in doc:
                raise SystemExit("check_schema: %s has no $id" % path)
            self.docs[doc["$id"]] = doc
            self.ids[name] = doc["$id"]
        self._validators = {}
        try:  # jsonschema >= 4.18
            from referencing import Registry, Resource
            from referencing.jsonschema import DRAFT202012

            registry = Registry().with_resources(
                (uri, Resource.from_contents(doc, default_specification=DRAFT202012))
                for uri, doc in self.docs.items())
            self._make = lambda schema: Draft202012Validator(schema, registry=registry)
        except ImportError:  # jsonschema < 4.18 (Debian 12's 4.10)
            store = dict(self.docs)

            def make(schema):
                resolver = jsonschema.RefResolver("", schema, store=store)
                return Draft202012Validator(schema, resolver=resolver)

            self._make = make

    def validator(self, uri, pointer=""):
        """A validator of the schema at a location (document $id, JSON pointer)."""
        key = (uri, pointer)
        if key not in self._validators:
            if pointer == "":
                self._validators[key] = self._make(self.docs[uri])
            else:
                self._validators[key] = self._make({"$ref": uri + "#" + pointer})
        return self._validators[key]

    # -- locations: (document $id, JSON pointer)
    def get(self, loc):
        node = self.docs[loc[0]]
        for part in loc[1].split("/")[1:]:
            part = urllib.parse.unquote(part).replace("~1", "/").replace("~0", "~")
            node = node[int(part)] if isinstance(node, list) else node[part]
        return node

    @staticmethod
    def sub(loc, *parts):
        return (loc[0], loc[1] + "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts))

    @staticmethod
    def ref(loc, ref):
        uri, frag = urllib.parse.urldefrag(urllib.parse.urljoin(loc[0], ref))
        return (uri, urllib.parse.unquote(frag))

    def valid(self, loc, instance):
        return self.validator(*loc).is_valid(instance)

    def applicable(self, loc, instance, out=None):
        """Every subschema that applies to `instance` at `loc`: the schema, its $ref
        targets, allOf members, the anyOf / oneOf branches the instance satisfies, if (when
        it holds) and then or else, dependentSchemas of the keys present; what
        unevaluatedProperties counts as evaluated."""
        out = [] if out is None else out
        s = self.get(loc)
        out.append(loc)
        if not isinstance(s, dict):
            return out
        if "$ref" in s:
            self.applicable(self.ref(loc, s["$ref"]), instance, out)
        for i in range(len(s.get("allOf", []))):
            self.applicable(self.sub(loc, "allOf", i), instance, out)
        for kw in ("anyOf", "oneOf"):
            for i in range(len(s.get(kw, []))):
                if self.valid(self.sub(loc, kw, i), instance):
                    self.applicable(self.sub(loc, kw, i), instance, out)
        if "if" in s:
            if self.valid(self.sub(loc, "if"), instance):
                self.applicable(self.sub(loc, "if"), instance, out)
                if "then" in s:
                    self.applicable(self.sub(loc, "then"), instance, out)
            elif "else" in s:
                self.applicable(self.sub(loc, "else"), instance, out)
        if isinstance(instance, dict):
            for k in s.get("dependentSchemas", {}):
                if k in instance:
                    self.applicable(self.sub(loc, "dependentSchemas", k), instance, out)
        return out

    def everything(self, loc, out=None):
        """`loc` and every subschema reachable without entering a property: for enums."""
        out = [] if out is None else out
        if loc in out:
            return out
        out.append(loc)
        s = self.get(loc)
        if not isinstance(s, dict):
            return out
        if "$ref" in s:
            self.everything(self.ref(loc, s["$ref"]), out)
        for kw in ("allOf", "anyOf", "oneOf"):
            for i in range(len(s.get(kw, []))):
                self.everything(self.sub(loc, kw, i), out)
        for kw in ("then", "else"):
            if kw in s:
                self.everything(self.sub(loc, kw), out)
        return out

    def children(self, locs, key):
        """The subschemas that apply to member `key` (or array index) of an object
        (array) whose applicable subschemas are `locs`."""
        out = []
        for loc in locs:
            s = self.get(loc)
            if not isinstance(s, dict):
                continue
            if isinstance(key, int):
                if "items" in s:
                    out.append(self.sub(loc, "items"))
                continue
            matched = False
            if key in s.get("properties", {}):
                out.append(self.sub(loc, "properties", key))
                matched = True
            for pat in s.get("patternProperties", {}):
                if re.search(pat, key):
                    out.append(self.sub(loc, "patternProperties", pat))
                    matched = True
            if not matched and isinstance(s.get("additionalProperties"), dict):
                out.append(self.sub(loc, "additionalProperties"))
        return out

    def at(self, root, instance, path):
        """The subschemas that apply at `path` of `instance` (which must hold the path)."""
        locs = self.applicable(root, instance)
        node = instance
        for key in path:
            children = self.children(locs, key)
            node = node[key]
            locs = []
            for c in children:
                self.applicable(c, node, locs)
        return locs

    def keys(self, locs):
        """The property names the subschemas allow (a `false` property is refused) and
        whether one of them closes the object (additionalProperties or
        unevaluatedProperties false)."""
        names, refused, closed = set(), set(), False
        for loc in locs:
            s = self.get(loc)
            if not isinstance(s, dict):
                continue
            for k, v in s.get("properties", {}).items():
                (refused if v is False else names).add(k)
            if s.get("additionalProperties") is False or s.get("unevaluatedProperties") is False:
                closed = True
        return names - refused, closed

    def enum(self, locs):
        values = None
        for loc in locs:
            for l in self.everything(loc):
                s = self.get(l)
                if isinstance(s, dict) and ("enum" in s or "const" in s):
                    vals = set(s["enum"]) if "enum" in s else {s["const"]}
                    values = vals if values is None else values | vals
        return values


def json_path(p):
    out = ""
    for part in p:
        out += "[%d]" % part if isinstance(part, int) else ("." if out else "") + str(part)
    return out or "(top level)"


def leaves(e):
    """The errors under an anyOf / oneOf failure that explain it: the deepest ones, in the
    branches meant for the instance's type and variant (a bad key inside an inline object,
    not "is not valid under any of the given schemas", "is not a string" or "'forced' was
    expected")."""
    if not e.context:
        return [e]
    branches = {}
    for c in e.context:
        branches.setdefault(c.relative_schema_path[0], []).extend(leaves(c))
    depth = len(e.absolute_path)
    other = lambda f: ((f.validator == "type" and len(f.absolute_path) == depth) or  # another type's branch
                       (f.validator == "const" and len(f.absolute_path) == depth + 1))  # another variant's
    found = [leaf for found in branches.values() if not any(other(f) for f in found) for leaf in found]
    found = found or [leaf for found in branches.values() for leaf in found]
    deepest = max(len(f.absolute_path) for f in found)
    return [f for f in found if len(f.absolute_path) == deepest]


def describe_errors(validator, instance, limit=6):
    lines = []
    for e in sorted(validator.iter_errors(instance), key=lambda e: list(map(str, e.absolute_path))):
        for leaf in leaves(e):
            line = "%s: %s" % (json_path(list(leaf.absolute_path)), leaf.message)
            if len(line) > 300:
                line = line[:297] + "..."
            if line not in lines:
                lines.append(line)
    if len(lines) > limit:
        lines = lines[:limit] + ["... and %d more" % (len(lines) - limit)]
    return lines


def check_descriptions(name, node, where="#"):
    """Every property schema carries a description (editors show it), directly or in the
    definition it refers to; conditions (if, not) name keys without defining them."""
    if isinstance(node, dict):
        props = {} if re.search(r"/(if|not)(/|$)", where) else node.get("properties", {})
        for k, v in props.items():
            if isinstance(v, dict) and "description" not in v and "$ref" not in v:
                error("%s.schema.json %s/properties/%s: no description" % (name, where, k))
        for k, v in node.items():
            check_descriptions(name, v, where + "/" + k)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            check_descriptions(name, v, "%s/%d" % (where, i))


def property_names(node, where=""):
    """Every key the schema defines (not the ones conditions test)."""
    out = set()
    if isinstance(node, dict):
        if not re.search(r"/(if|not)(/|$)", where):
            out.update(node.get("properties", {}))
        for k, v in node.items():
            out |= property_names(v, where + "/" + k)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out |= property_names(v, "%s/%d" % (where, i))
    return out


# --------------------------------------------------------------------------- moesim


class Moesim:
    def __init__(self, binary, tmp):
        self.binary = binary
        self.tmp = tmp
        self.runs = 0

    def run(self, kind, instance, name="probe"):
        path = os.path.join(self.tmp, name + ".json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(instance, f, indent=1)
        if kind == "scenario":
            cmd = [self.binary, "describe", path]
        else:  # reads the sweep file (and expands it) without running a row
            cmd = [self.binary, "sweep", path, "--slurm-script", "-o", os.path.join(self.tmp, "out")]
        self.runs += 1
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, cwd=self.tmp, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as e:
            sys.exit("check_schema: could not run %s: %s" % (" ".join(cmd), e))
        return r.returncode, r.stderr.strip()


UNKNOWN = re.compile(r"^moesim: error: .*?: (?P<path>\S+): unknown key '" + PROBE +
                     r"'(?: \(did you mean '[^']*'\?\))?; valid keys here: (?P<keys>.*)$", re.M)
KNOWN = re.compile(r"^moesim: error: .*?: (?P<path>\S+): (?P<msg>.*?)known: (?P<known>[^;]*?)\.?$", re.M)


def set_path(obj, path, value):
    for k in path[:-1]:
        obj = obj[k]
    obj[path[-1]] = value


def get_path(obj, path):
    for k in path:
        obj = obj[k]
    return obj


# --------------------------------------------------------------------------- probes


class Source:
    """The shipped files the probes start from."""

    def __init__(self, src):
        self.src = src
        self.scenarios = {}  # path -> JSON
        for path in sorted(glob.glob(os.path.join(src, "scenarios", "**", "*.json"), recursive=True)):
            try:
                with open(path, encoding="utf-8") as f:
                    j = json.load(f)
            except (OSError, ValueError) as e:
                error("%s: not JSON: %s" % (os.path.relpath(path, src), e))
                continue
            if isinstance(j, dict) and "system" in j and "gpus" in j:
                self.scenarios[path] = j
        self.default_path = os.path.join(src, "scenarios", "dsv3-gb200.json")
        if self.default_path not in self.scenarios:
            raise SystemExit("check_schema: %s is missing or not a scenario" % self.default_path)

    def default(self):
        return self.absolute(self.default_path)

    def absolute(self, path):
        """A shipped scenario with its relative paths (model config.json, histogram) made
        absolute, so that a copy elsewhere reads the same."""
        j = copy.deepcopy(self.scenarios[path])
        here = os.path.dirname(path)
        fix = lambda p: p if os.path.isabs(p) else os.path.normpath(os.path.join(here, p))
        m = j.get("model")
        if isinstance(m, str) and m.endswith(".json"):
            j["model"] = fix(m)
        if isinstance(m, dict) and isinstance(m.get("base"), str) and m["base"].endswith(".json"):
            m["base"] = fix(m["base"])
        r = j.get("routing")
        if isinstance(r, dict) and isinstance(r.get("path"), str):
            r["path"] = fix(r["path"])
        return j

    def first(self, pred, what):
        """The first shipped scenario (by path) that has `what` (`pred` holds for it),
        made absolute; None when none has (the probe then builds its instance)."""
        for path, j in self.scenarios.items():
            try:
                if pred(j):
                    return self.absolute(path)
            except (KeyError, TypeError, AttributeError):
                continue
        return None

    def preset(self, kind, name):
        with open(os.path.join(self.src, "scenarios", kind, name + ".json"), encoding="utf-8") as f:
            return json.load(f)


def has(j, *path):
    for k in path:
        if not isinstance(j, dict) or k not in j:
            return False
        j = j[k]
    return True


def scenario_probes(S, tmp):
    """(name, instance, path to the object, keys the schema adds that are consumed before
    the strict reader sees the object, union group) for every scenario object."""
    d = S.default
    probes = []

    def add(name, inst, path, consumed=(), group=None):
        probes.append((name, inst, path, set(consumed), group))

    def with_(base, path, value):
        j = copy.deepcopy(base)
        set_path(j, path, value)
        return j

    add("scenario", d(), [])
    add("training", d(), ["training"])
    nv = S.first(lambda j: has(j, "training", "nvfp4"), "training.nvfp4")
    add("training.nvfp4", nv or with_(d(), ["training", "nvfp4"], {}), ["training", "nvfp4"])
    td = S.first(lambda j: has(j, "training", "token_drop"), "training.token_drop")
    add("training.token_drop", td or with_(d(), ["training", "token_drop"], {"capacity_factor": 1.0}),
        ["training", "token_drop"])
    add("parallelism", d(), ["parallelism"])
    eplb = S.first(lambda j: has(j, "parallelism", "eplb"), "parallelism.eplb")
    add("parallelism.eplb", eplb or with_(d(), ["parallelism", "eplb"], {"redundant_experts": 32, "policy": "global"}),
        ["parallelism", "eplb"])
    add("framework", d(), ["framework"])
    st = S.first(lambda j: has(j, "stack"), "stack")
    add("stack", st or with_(d(), ["stack"], {}), ["stack"])
    add("placement", S.first(lambda j: has(j, "placement"), "placement") or with_(d(), ["placement"], {}),
        ["placement"])
    # routing: one probe per balance
    hist = os.path.join(tmp, "histogram.json")
    model = S.preset("models", "deepseek-v3")
    with open(hist, "w") as f:
        json.dump([[1 + (i % 7) for i in range(model["n_routed_experts"])]], f)
    for balance, routing in [("forced", {"balance": "forced"}),
                             ("sampled", {"balance": "sampled", "distribution": "zipf", "alpha": 1.1, "seed": 7}),
                             ("histogram", {"balance": "histogram", "path": hist}),
                             ("aux_loss", {"balance": "aux_loss", "coefficient": 0.01, "seed": 1}),
                             ("loss_free", {"balance": "loss_free", "seed": 1})]:
        shipped = S.first(lambda j: has(j, "routing") and j["routing"].get("balance") == balance, "routing")
        add("routing (balance %s)" % balance, shipped or with_(d(), ["routing"], routing), ["routing"])
    # measured: a timing metric and a memory point (its own keys are the same list)
    ms = S.first(lambda j: has(j, "measured", "tflops_per_gpu"), "measured")
    add("measured (timing)", ms or with_(d(), ["measured"], {"tflops_per_gpu": 900, "source": "probe"}), ["measured"])
    mm = S.first(lambda j: has(j, "measured", "peak_memory_gib"), "measured memory")
    add("measured (memory)", mm or with_(d(), ["measured"], {"peak_memory_gib": 100, "memory_counter": "max_reserved",
                                                             "source": "probe"}), ["measured"])
    gp = S.first(lambda j: has(j, "goodput"), "goodput")
    add("goodput", gp or with_(d(), ["goodput"], {}), ["goodput"])
    gs = S.first(lambda j: isinstance(j.get("goodput", {}).get("storage"), dict), "goodput.storage")
    add("goodput.storage (inline)",
        gs or with_(d(), ["goodput"], {"storage": {"write_GBps": 100, "read_GBps": 100, "client_GBps": 10,
                                                   "source": "probe"}}), ["goodput", "storage"])
    add("cost", S.first(lambda j: has(j, "cost"), "cost") or with_(d(), ["cost"], {"pue": 1.2}), ["cost"])

    # Systems: a patch over a preset ("base") and a complete inline one (the preset's
    # JSON); each sub-object of both.
    gb200 = S.preset("systems", "gb200-nvl72")
    sub_objects = [["gpu"], ["gpu", "sm_count"], ["gpu", "dense_tflops"], ["node"], ["nvlink"], ["network"],
                   ["efficiency"], ["efficiency", "gemm"], ["efficiency", "grouped_gemm"], ["host"], ["comm"],
                   ["variability"], ["ep_dispatch"], ["ep_libraries"], ["ep_libraries", "hybridep"],
                   ["ep_libraries", "hybridep", "mnnvl"], ["ep_libraries", "hybridep", "mnnvl", "sm_by_ranks", "32"]]
    shipped_inline = S.first(lambda j: isinstance(j["system"], dict) and "base" not in j["system"], "inline system")
    shipped_patch = S.first(lambda j: isinstance(j["system"], dict) and "base" in j["system"], "system patch")
    for variant, consumed in [("patch", {"base", "profiles"}), ("inline", {"profiles"})]:
        if variant == "patch":
            base = shipped_patch or with_(d(), ["system"], {"base": "gb200-nvl72"})
        else:
            base = shipped_inline or with_(d(), ["system"], copy.deepcopy(gb200))
        add("system (%s)" % variant, base, ["system"], consumed)
        for sub in sub_objects:
            j = copy.deepcopy(base)
            node = j["system"]
            for k in sub[:-1]:
                node = node.setdefault(k, {})
            leaf = node.setdefault(sub[-1], {})
            if not isinstance(leaf, dict):  # a bare number: probe its {"value", "source"} form
                node[sub[-1]] = {"value": leaf, "source": "probe"}
                j["system"].setdefault("sources", {})["probe"] = "check_schema.py"
            add("system.%s (%s)" % (".".join(sub), variant), j, ["system"] + sub)

    # Models: complete inline objects of each key-set variant, and a patch over a preset.
    for preset, variant in [("deepseek-v3", "MLA, MoE"), ("llama3.1-405b", "dense"),
                            ("mixtral-8x7b", "MoE, expert FFN = intermediate_size"), ("qwen3-30b-a3b", "MoE, GQA")]:
        base = S.first(lambda j: j["model"] == preset, "model " + preset)
        if base is None:
            error("probe model (%s): no shipped scenario names the preset '%s'" % (variant, preset))
            continue
        base["model"] = S.preset("models", preset)
        add("model (inline %s: %s)" % (preset, variant), base, ["model"], (), "model")
    add("model (patch over deepseek-v3)", with_(d(), ["model"], {"base": "deepseek-v3"}), ["model"], {"base"},
        "model-patch")
    return probes


def scenario_enum_probes(S):
    """(name, instance, path of the value, bad value): the loader's "known: ..." list
    against the schema's enum there."""
    d = S.default
    sysp = lambda extra: dict(d(), system=dict({"base": "gb200-nvl72"}, **extra))
    inline_model = dict(d(), model=S.preset("models", "deepseek-v3"))
    gpt_oss = S.first(lambda j: j["model"] == "gpt-oss-120b", "gpt-oss")
    if gpt_oss:
        gpt_oss["model"] = S.preset("models", "gpt-oss-120b")
    probes = [
        ("system preset", d(), ["system"], BAD),
        ("model preset", d(), ["model"], BAD),
        ("training.precision", d(), ["training", "precision"], BAD),
        ("parallelism.pipeline_schedule", d(), ["parallelism", "pipeline_schedule"], BAD),
        ("parallelism.eplb.policy", dict(d(), parallelism=dict(d()["parallelism"], eplb={"redundant_experts": 32})),
         ["parallelism", "eplb", "policy"], BAD),
        ("stack.release", dict(d(), stack={}), ["stack", "release"], BAD),
        ("routing.balance", d(), ["routing", "balance"], BAD),
        ("routing.distribution", dict(d(), routing={"balance": "sampled"}), ["routing", "distribution"], BAD),
        ("measured.memory_counter",
         dict(d(), measured={"peak_memory_gib": 100, "memory_counter": "max_reserved", "source": "probe"}),
         ["measured", "memory_counter"], BAD),
        ("goodput.storage", dict(d(), goodput={}), ["goodput", "storage"], BAD),
        ("system.profiles", sysp({"profiles": []}), ["system", "profiles"], [BAD]),
        ("system.gpu.arch", sysp({"gpu": {}}), ["system", "gpu", "arch"], BAD),
        ("system.node.host_link", sysp({"node": {}}), ["system", "node", "host_link"], BAD),
        ("system.network.topology", sysp({"network": {}}), ["system", "network", "topology"], BAD),
        ("model.model_type", inline_model, ["model", "model_type"], BAD),
        ("model.scoring_func", inline_model, ["model", "scoring_func"], BAD),
    ]
    if gpt_oss:
        probes.append(("model.layer_types", gpt_oss, ["model", "layer_types"],
                       [BAD] * len(gpt_oss["model"]["layer_types"])))
    for key in ["dispatcher", "optimizer_state_dtype", "optimizer", "main_grads_dtype", "grad_reduce_dtype",
                "cross_entropy", "attention_backend"]:
        probes.append(("framework." + key, d(), ["framework", key], BAD))
    for key in ["cuda_graph_scope", "recompute_modules", "low_precision_activations", "offload"]:
        probes.append(("framework." + key, d(), ["framework", key], [BAD]))
    return probes


def sweep_instance(S):
    return {"name": "probe", "base": S.default_path, "grid": {"gpus": [256]}, "layouts": {"tp": [1], "pp": [8]},
            "token_budget": 1e12, "objective": "tokens_per_s_per_gpu"}


# --------------------------------------------------------------------------- main


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: check_schema.py SOURCE_DIR MOESIM_BINARY")
    src, binary = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    start = time.time()
    if not os.access(binary, os.X_OK):
        sys.exit("check_schema: %s is not an executable" % binary)

    # a. the schemas themselves
    for name in ("scenario", "sweep"):
        path = os.path.join(src, "schema", name + ".schema.json")
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
            Draft202012Validator.check_schema(doc)
        except (OSError, ValueError) as e:
            sys.exit("check_schema: %s: %s" % (path, e))
        except jsonschema.exceptions.SchemaError as e:
            sys.exit("check_schema: %s is not a valid draft 2020-12 schema: %s at %s"
                     % (path, e.message, "/".join(map(str, e.absolute_path))))
        if doc.get("$schema") != "https://json-schema.org/draft/2020-12/schema":
            error("%s: $schema is not draft 2020-12" % path)
        check_descriptions(name, doc)
    X = Schemas(os.path.join(src, "schema"))
    scen_root, sweep_root = (X.ids["scenario"], ""), (X.ids["sweep"], "")
    scen_v, sweep_v = X.validator(*scen_root), X.validator(*sweep_root)

    # b. the shipped files
    S = Source(src)
    for path, j in S.scenarios.items():
        lines = describe_errors(scen_v, j)
        if lines:
            error("%s does not validate against scenario.schema.json:\n    %s"
                  % (os.path.relpath(path, src), "\n    ".join(lines)))
    sweeps = sorted(glob.glob(os.path.join(src, "scenarios", "sweeps", "*.json")))
    for path in sweeps:
        with open(path, encoding="utf-8") as f:
            j = json.load(f)
        lines = describe_errors(sweep_v, j)
        if lines:
            error("%s does not validate against sweep.schema.json:\n    %s"
                  % (os.path.relpath(path, src), "\n    ".join(lines)))
    # an inline base goes through the sweep schema's "$ref" to the scenario schema
    inline = {"name": "inline-base", "base": S.scenarios[S.default_path], "grid": {"gpus": [256, 512]}}
    lines = describe_errors(sweep_v, inline)
    if lines:
        error("a sweep with the default scenario as its inline base does not validate:\n    " + "\n    ".join(lines))
    typo = copy.deepcopy(inline)
    typo["base"]["parallelism"]["pipline_schedule"] = "1f1b"
    if sweep_v.is_valid(typo):
        error("sweep.schema.json accepts an inline base with the unknown key parallelism.pipline_schedule "
              "(its $ref to scenario.schema.json does not apply)")
    presets = {}
    for kind, ref in (("systems", "systemInline"), ("models", "modelInline")):
        v = X.validator(X.ids["scenario"], "/$defs/" + ref)
        names = []
        for path in sorted(glob.glob(os.path.join(src, "scenarios", kind, "*.json"))):
            names.append(os.path.basename(path)[:-len(".json")])
            with open(path, encoding="utf-8") as f:
                lines = describe_errors(v, json.load(f))
            if lines:
                error("%s does not validate against scenario.schema.json#/$defs/%s:\n    %s"
                      % (os.path.relpath(path, src), ref, "\n    ".join(lines)))
        presets[kind] = names

    with tempfile.TemporaryDirectory(prefix="moesim-schema-") as tmp:
        m = Moesim(binary, tmp)
        rc, err = m.run("scenario", S.default())
        if rc != 0:
            sys.exit("check_schema: %s does not load (exit %d): %s" % (S.default_path, rc, err))

        # c. keys, both ways
        loader_keys = {}
        probes = scenario_probes(S, tmp)
        objects = 0

        def compare(name, kind, root, validator, inst, path, consumed, group):
            nonlocal objects
            objects += 1
            where = json_path(path)
            lines = describe_errors(validator, inst)
            if lines:
                error("probe %s: the schema refuses an instance the probe expects the loader to accept "
                      "(%s):\n    %s" % (name, where, "\n    ".join(lines)))
                return
            probed = copy.deepcopy(inst)
            get_path(probed, path)[PROBE] = 1
            if validator.is_valid(probed):
                error("probe %s: the schema accepts the unknown key %s at %s" % (name, PROBE, where))
            rc, err = m.run(kind, probed)
            hit = UNKNOWN.search(err)
            if rc != 2 or not hit:
                error("probe %s: expected moesim to refuse the unknown key at %s with exit 2; got exit %d: %s"
                      % (name, where, rc, err or "(no message)"))
                return
            expect = (where + "." if path else "") + PROBE
            if hit.group("path") != expect:
                error("probe %s: the loader refused the key at %s, not at %s" % (name, hit.group("path"), expect))
            loader = set(hit.group("keys").split(", "))
            loader_keys[name] = (loader, group)
            schema, closed = X.keys(X.at(root, inst, path))
            if not closed:
                error("probe %s: the schema's object at %s does not refuse unknown keys "
                      "(additionalProperties / unevaluatedProperties false)" % (name, where))
            if group == "model-patch":  # a patch may give the keys of any model variant
                for other, (keys, g) in loader_keys.items():
                    if g == "model":
                        loader = loader | keys
            report(name, where, loader | consumed, schema, consumed)

        def report(name, where, loader, schema, consumed=()):
            only_loader, only_schema = sorted(loader - schema), sorted(schema - loader)
            if only_loader or only_schema:
                msg = "keys of %s differ (probe %s):" % (where, name)
                if only_loader:
                    msg += "\n    only the loader accepts: " + ", ".join(only_loader)
                if only_schema:
                    msg += "\n    only the schema has: " + ", ".join(only_schema)
                if consumed:
                    msg += "\n    (read before the object's strict reader, so not in the loader's list: %s)" \
                           % ", ".join(sorted(consumed))
                error(msg)

        for name, inst, path, consumed, group in probes:
            compare(name, "scenario", scen_root, scen_v, inst, path, consumed, group)

        # the sweep file's objects
        sw = sweep_instance(S)
        compare("sweep", "sweep", sweep_root, sweep_v, sw, [], set(), None)
        compare("sweep layouts", "sweep", sweep_root, sweep_v, sw, ["layouts"], set(), None)
        # grid: a dotted path must start at one of these scenario keys
        bad = dict(sw, grid={PROBE + ".x": [1]})
        rc, err = m.run("sweep", bad)
        hit = re.search(r"is not a scenario key; valid first keys: (.*)$", err, re.M)
        pattern = X.get((X.ids["sweep"], "/properties/grid/propertyNames")).get("pattern", "")
        first = re.match(r"^\^\(([^)]*)\)", pattern)
        if rc != 2 or not hit:
            error("probe sweep grid: expected a refusal of the grid path '%s.x'; got exit %d: %s" % (PROBE, rc, err))
        elif not first:
            error("sweep.schema.json: grid.propertyNames.pattern '%s' does not start with ^(key|key|...)" % pattern)
        else:
            objects += 1
            report("sweep grid (first key of a dotted path)", "grid", set(hit.group(1).split(", ")),
                   set(first.group(1).split("|")))

        # d. enums against the loader's "known:" lists
        enums = 0
        for name, inst, path, bad_value in scenario_enum_probes(S) + [
                ("sweep objective", sw, ["objective"], BAD),
                ("sweep layouts.pp_split", sw, ["layouts", "pp_split"], [BAD])]:
            kind, root, validator = ("sweep", sweep_root, sweep_v) if name.startswith("sweep") else \
                ("scenario", scen_root, scen_v)
            parent = get_path(inst, path[:-1])
            if not validator.is_valid(inst):
                error("enum probe %s: the probe's instance does not validate:\n    %s"
                      % (name, "\n    ".join(describe_errors(validator, inst))))
                continue
            locs = X.children(X.at(root, inst, path[:-1]), path[-1])
            if isinstance(bad_value, list):
                locs = X.children([l for c in locs for l in X.everything(c)], 0)
            schema_enum = X.enum(locs)
            probed = copy.deepcopy(inst)
            set_path(probed, path, bad_value)
            if validator.is_valid(probed):
                error("enum probe %s: the schema accepts the value %s" % (name, json.dumps(bad_value)))
            rc, err = m.run(kind, probed)
            hit = KNOWN.search(err)
            if rc != 2 or not hit:
                error("enum probe %s: expected moesim to refuse %s at %s with a 'known: ...' list; got exit %d: %s"
                      % (name, json.dumps(bad_value), json_path(path), rc, err))
                continue
            if schema_enum is None:
                error("enum probe %s: the schema has no enum at %s" % (name, json_path(path)))
                continue
            enums += 1
            loader = set(hit.group("known").split(", "))
            if loader != schema_enum:
                msg = "values of %s differ (enum probe %s):" % (json_path(path), name)
                if loader - schema_enum:
                    msg += "\n    only the loader accepts: " + ", ".join(sorted(loader - schema_enum))
                if schema_enum - loader:
                    msg += "\n    only the schema has: " + ", ".join(sorted(schema_enum - loader))
                error(msg)
        # the preset enums name the preset files
        for kind, ref in (("systems", "systemName"), ("models", "modelName")):
            enum = X.enum([(X.ids["scenario"], "/$defs/" + ref)]) or set()
            if enum != set(presets[kind]):
                error("scenario.schema.json#/$defs/%s names %s; scenarios/%s/ holds %s"
                      % (ref, sorted(enum), kind, sorted(presets[kind])))
        runs = m.runs

    # e. the contract document: its example is the default scenario, and it names every key
    doc_path = os.path.join(src, "docs", "SCENARIO_FORMAT.md")
    try:
        with open(doc_path, encoding="utf-8") as f:
            doc = f.read()
    except OSError as e:
        error("%s: %s" % (doc_path, e))
        doc = None
    if doc is not None:
        example = re.search(r"^## Example.*?^```json\n(.*?)^```", doc, re.M | re.S)
        try:
            if not example or json.loads(example.group(1)) != S.scenarios[S.default_path]:
                error("docs/SCENARIO_FORMAT.md: the first JSON block under '## Example' is not scenarios/dsv3-gb200.json")
        except ValueError as e:
            error("docs/SCENARIO_FORMAT.md: the example is not JSON: %s" % e)
        named = set()
        for span in re.findall(r"`([^`]+)`", re.sub(r"^```.*$", "", doc, flags=re.M)):
            named.update(re.findall(r"[A-Za-z0-9_]+", span))
        for schema_name, uri in X.ids.items():
            missing = sorted(k for k in property_names(X.docs[uri]) if k not in named)
            if missing:
                error("docs/SCENARIO_FORMAT.md does not name these keys of %s.schema.json: %s"
                      % (schema_name, ", ".join(missing)))

    if errors:
        print("check_schema: %d problem(s):" % len(errors), file=sys.stderr)
        for e in errors:
            print("- " + e, file=sys.stderr)
        sys.exit(1)
    print("check_schema: ok: schemas valid; %d scenario files, %d sweep files, %d system and %d model presets validate; "
          "%d objects' keys and %d enums equal the loader's (%d moesim runs, %.1f s)"
          % (len(S.scenarios), len(sweeps), len(presets["systems"]), len(presets["models"]), objects, enums, runs,
             time.time() - start))


if __name__ == "__main__":
    main()
