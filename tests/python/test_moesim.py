"""`import moesim` (python/module.cpp): the same figures as the command line's --json."""
import json
import os
import pathlib
import subprocess
import tempfile
import unittest

import moesim

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT = os.path.join(ROOT, "scenarios", "dsv3-gb200.json")
J10 = os.path.join(ROOT, "scenarios", "journey", "10-graph-shared-expert.json")
J11 = os.path.join(ROOT, "scenarios", "journey", "11-hybridep.json")
QUICK = os.path.join(ROOT, "scenarios", "sweeps", "qwen3-30b-h100-quick.json")


class MoesimModule(unittest.TestCase):
    def test_run_path_and_dict_agree(self):
        by_path = moesim.run(DEFAULT)
        with open(DEFAULT) as f:
            by_dict = moesim.run(json.load(f))
        for key in ("step_time_s", "tflops_per_gpu", "tokens_per_s_per_gpu", "mfu", "peak_memory_gib",
                    "fits_in_memory", "breakdown"):
            self.assertIn(key, by_path)
        self.assertEqual(by_path["step_time_s"], by_dict["step_time_s"])
        b = by_path["breakdown"]
        parts = (b["compute"] + b["exposed_communication"] + b["pipeline_bubble"] + b["host_bound_idle"] + b["other"]
                 + b["straggler_wait"])
        self.assertAlmostEqual(parts, by_path["step_time_s"], delta=1e-9 * by_path["step_time_s"])

    def test_run_matches_the_command_line(self):
        exe = os.path.join(os.environ.get("MOESIM_BUILD", os.path.join(ROOT, "build")), "moesim")
        if not os.path.exists(exe):
            self.skipTest("no build/moesim next to the module")
        cli = json.loads(subprocess.run([exe, "run", "--json", DEFAULT], check=True, capture_output=True,
                                        text=True).stdout)
        self.assertEqual(moesim.run(DEFAULT)["step_time_s"], cli["step_time_s"])
        self.assertEqual(moesim.run(DEFAULT)["goodput"], cli["goodput"])

    def test_goodput_with_a_token_budget(self):
        with open(DEFAULT) as f:
            sc = json.load(f)
        sc["goodput"] = {"storage": "3fs", "async_save": True, "token_budget": 1.5e13}
        g = moesim.run(sc)["goodput"]
        self.assertGreater(g["ettr"], 0.9)
        self.assertLess(g["ettr"], 1.0)
        self.assertAlmostEqual(g["days"] * g["ettr"], g["days_without_interruptions"], delta=1e-9 * g["days"])

    def test_describe(self):
        d = moesim.describe(DEFAULT)
        self.assertAlmostEqual(d["flops_per_token"] / 1e9, 249.81, delta=0.01)
        self.assertEqual(d["parallelism"]["dp"], 32)

    def test_diff_adds_up(self):
        d = moesim.diff(J10, J11)
        total = sum(c["delta_s"] for c in d["contributions"])
        self.assertAlmostEqual(total, d["step_time_delta_s"], delta=0.01 * abs(d["step_time_delta_s"]))
        self.assertEqual(d["contributions"][0]["item"], "ep")

    def test_sweep_rows(self):
        rows = moesim.sweep(pathlib.Path(QUICK), jobs=2)  # str or os.PathLike
        self.assertGreater(len(rows), 0)
        self.assertEqual([r["id"] for r in rows], list(range(len(rows))))
        self.assertIsInstance(rows[0]["gpus"], int)
        for r in rows:  # the figures are floats in every row, zeros included
            if r["status"] == "ok":
                self.assertIsInstance(r["breakdown.other"], float)
        ok = [r for r in rows if r["status"] == "ok"]
        self.assertTrue(ok)
        self.assertGreater(ok[0]["tokens_per_s_per_gpu"], 0)

    def test_plan_matches_the_command_line(self):
        qwen = os.path.join(ROOT, "scenarios", "examples", "qwen3-30b-a3b-h100.json")
        with tempfile.TemporaryDirectory() as tmp:
            page = os.path.join(tmp, "plan.html")
            p = moesim.plan(qwen, gpus=8, settings=["none"], top=3, jobs=2, given=True, html=page)
            with open(page) as f:
                self.assertIn("Where the candidates went", f.read())
        # As given (EP 16) the scenario cannot run on 8 GPUs: no rank, the loader's reason.
        self.assertEqual(p["given"]["status"], "invalid")
        self.assertIsNone(p["given"]["rank"])
        # 1,024 layouts (the command-line test's space) in two splits of the layers.
        self.assertEqual(p["combinations"], 2048)
        self.assertEqual(sum(p["fates"].values()), p["combinations"])
        self.assertEqual(p["bound_violations"], [])
        self.assertEqual(len(p["top"]), 3)
        exe = os.path.join(os.environ.get("MOESIM_BUILD", os.path.join(ROOT, "build")), "moesim")
        if not os.path.exists(exe):
            self.skipTest("no build/moesim next to the module")
        out = subprocess.run([exe, "plan", qwen, "--gpus", "8", "--settings", "none", "--top", "3",
                              "--jobs", "2", "--json", "--given", "-o", os.devnull], check=True, capture_output=True,
                             text=True)
        cli = json.loads(out.stdout)
        self.assertEqual([r["id"] for r in p["top"]], [r["id"] for r in cli["top"]])
        self.assertEqual(p["top"][0]["tokens_per_s_per_gpu"], cli["top"][0]["tokens_per_s_per_gpu"])
        self.assertEqual(p["fates"], cli["fates"])
        self.assertEqual(p["given"], cli["given"])
        with self.assertRaises(moesim.InputError):
            moesim.plan(qwen, settings=["offload"])

    def test_validate_matches_the_command_line(self):
        pairs = os.path.join(ROOT, "scenarios", "pairs")
        v = moesim.validate(pairs, jobs=2, deterministic=True)
        self.assertGreater(len(v["rows"]), 0)
        exe = os.path.join(os.environ.get("MOESIM_BUILD", os.path.join(ROOT, "build")), "moesim")
        if not os.path.exists(exe):
            self.skipTest("no build/moesim next to the module")
        out = subprocess.run([exe, "validate", "--json", "--deterministic", "--jobs", "2", pairs],
                             capture_output=True, text=True)
        self.assertIn(out.returncode, (0, 1))
        self.assertEqual(v, json.loads(out.stdout))
        self.assertNotIn("wall_s", v["rows"][0])
        # A list of paths; a single file.
        one = moesim.validate([v["rows"][0]["file"]])
        self.assertEqual(len(one["rows"]), 1)
        self.assertEqual(one["rows"][0]["predicted"], v["rows"][0]["predicted"])
        with self.assertRaises(moesim.InputError):
            moesim.validate(os.path.join(ROOT, "no-such-folder"))

    def test_what_if_options_are_the_command_lines(self):
        # set= as a dict or as --set's texts; headroom= as --headroom.
        exe = os.path.join(os.environ.get("MOESIM_BUILD", os.path.join(ROOT, "build")), "moesim")
        if not os.path.exists(exe):
            self.skipTest("no build/moesim next to the module")
        set_ = {"host.rank_contention": 2}
        r = moesim.run(DEFAULT, set=set_, headroom=4)
        texts = moesim.run(DEFAULT, set=["host.rank_contention=2"], headroom=4)
        self.assertEqual((r["step_time_s"], r["caveats"]), (texts["step_time_s"], texts["caveats"]))
        cli = json.loads(subprocess.run([exe, "run", "--json", DEFAULT, "--set", "host.rank_contention=2",
                                         "--headroom", "4"], check=True, capture_output=True, text=True).stdout)
        self.assertEqual(r["step_time_s"], cli["step_time_s"])
        self.assertEqual(r["caveats"], cli["caveats"])
        self.assertGreater(r["step_time_s"], moesim.run(DEFAULT)["step_time_s"])
        d = moesim.describe(DEFAULT, set=set_)
        self.assertEqual(len(d["system"]["set_on_command_line"]), 1)
        self.assertIn("system_set", moesim.diff(J10, J11, set=set_)["a"])
        pairs = os.path.join(ROOT, "scenarios", "pairs")
        out = subprocess.run([exe, "validate", "--json", "--deterministic", "--jobs", "2", pairs, "--set",
                              "host.rank_contention=2"], capture_output=True, text=True)
        self.assertEqual(moesim.validate(pairs, jobs=2, deterministic=True, set=set_), json.loads(out.stdout))
        rows = moesim.sweep(QUICK, jobs=2, set=set_, headroom=4)
        self.assertEqual({r["predicted_with"] for r in rows},
                         {"calibrated; headroom 4 GiB; set host.rank_contention=2"})
        qwen = os.path.join(ROOT, "scenarios", "examples", "qwen3-30b-a3b-h100.json")
        p = moesim.plan(qwen, gpus=8, settings=["none"], top=1, jobs=2, set=set_)
        self.assertEqual(p["predicted_with"], "calibrated; set host.rank_contention=2")
        self.assertIn("set on the command line (--set)", moesim.report_diff(J10, J11, set=set_))
        # Refused as the command line refuses them, sweeps included (not a message on every row).
        for bad in ({"host.nope": 1}, ["host.launch_us"], {"host.launch_us": -5}):
            with self.assertRaises(moesim.InputError):
                moesim.run(DEFAULT, set=bad)
        with self.assertRaises(moesim.InputError):
            moesim.sweep(QUICK, set={"host.nope": 1})

    def test_import_megatron_gives_a_scenario_run_can_take(self):
        script = os.path.join(ROOT, "tests", "data", "megatron", "deepseek-v3-gb200.sh")
        imp = moesim.import_megatron(script, system="gb200-nvl72", gpus=256, gpus_per_nvlink_domain=32)
        for key in ("scenario", "ignored", "derived", "assumed", "recorded", "notes"):
            self.assertIn(key, imp)
        self.assertIn("--lr-decay-style", imp["ignored"])
        self.assertIn("stack.norm_quant_fusion", imp["assumed"])
        # The journey's final scenario, as the command-line import test finds it.
        journey = os.path.join(ROOT, "scenarios", "journey", "13-norm-quant-fusion.json")
        self.assertEqual(moesim.run(imp["scenario"])["step_time_s"], moesim.run(journey)["step_time_s"])
        args = ("--num-layers 4 --hidden-size 1024 --ffn-hidden-size 4096 --num-attention-heads 8 "
                "--num-experts 8 --moe-router-topk 2 --seq-length 1024 --micro-batch-size 1 "
                "--global-batch-size 16 --bf16 --vocab-size 32000 --no-such-flag")
        with self.assertRaises(moesim.InputError) as e:
            moesim.import_megatron(args=args, system="h100", gpus=8)
        self.assertIn("--no-such-flag", str(e.exception))
        with self.assertRaises(moesim.InputError):
            moesim.import_megatron(script, args=args, system="h100")
        with self.assertRaises(moesim.InputError):
            moesim.import_megatron(system="h100")

    def test_reports_are_the_command_lines_pages(self):
        with tempfile.TemporaryDirectory() as tmp:
            page = os.path.join(tmp, "run.html")
            html = moesim.report(DEFAULT, page)
            with open(page) as f:
                self.assertEqual(f.read(), html)
            self.assertTrue(html.startswith("<!DOCTYPE html>"))
            self.assertIn("<title>", moesim.report_diff(J10, J11))
            self.assertIn("<title>", moesim.report_validate(os.path.join(ROOT, "scenarios", "pairs"), jobs=2))
            csv = os.path.join(tmp, "quick.csv")
            exe = os.path.join(os.environ.get("MOESIM_BUILD", os.path.join(ROOT, "build")), "moesim")
            if not os.path.exists(exe):
                self.skipTest("no build/moesim next to the module")
            subprocess.run([exe, "sweep", QUICK, "-o", csv, "--jobs", "2"], check=True, capture_output=True)
            html = moesim.report_sweep(csv)
            subprocess.run([exe, "report", "--sweep", csv, "-o", page], check=True, capture_output=True)
            with open(page) as f:
                self.assertEqual(f.read(), html)
            with self.assertRaises(moesim.InputError):
                moesim.report_sweep(csv, objective="banana")
            with self.assertRaises(moesim.InputError):
                moesim.report_validate(os.path.join(ROOT, "scenarios", "systems"))

    def test_bad_input_raises_input_error(self):
        with open(DEFAULT) as f:
            sc = json.load(f)
        sc["parallelism"]["ep"] = 48
        with self.assertRaises(moesim.InputError) as e:
            moesim.run(sc)
        self.assertIn("parallelism.ep", str(e.exception))
        self.assertTrue(issubclass(moesim.InputError, ValueError))
        with self.assertRaises(moesim.InputError):
            moesim.run(os.path.join(ROOT, "no-such-file.json"))
        with self.assertRaises(TypeError):
            moesim.run(42)


if __name__ == "__main__":
    unittest.main(verbosity=2)
