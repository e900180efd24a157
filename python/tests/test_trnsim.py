# SPDX-License-Identifier: MIT
"""The Python package (python/trnsim): it runs the binary, loads every output into pandas with the
figures the outputs hold, and the specs it builds are accepted by the CLI. Run by CTest
(python.package) with TRNSIM_BIN set to the built binary and the build tree on PYTHONPATH."""

import json
import math
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import trnsim

SRC = Path(__file__).resolve().parents[2]
SMALL_TRACE = "mixtral-moe-16"          # a bundled trace, by name; runs in about a second
RACK = "trn3-gen2-ultraserver"


class BinaryTest(unittest.TestCase):
    def test_the_environment_variable_names_the_binary(self):
        self.assertEqual(trnsim.find_binary(), os.environ["TRNSIM_BIN"])
        old = os.environ["TRNSIM_BIN"]
        try:
            os.environ["TRNSIM_BIN"] = "/nonexistent/trnsim"
            with self.assertRaisesRegex(FileNotFoundError, "TRNSIM_BIN=/nonexistent/trnsim"):
                trnsim.find_binary()
        finally:
            os.environ["TRNSIM_BIN"] = old

    def test_the_build_tree_binary_is_found_without_the_variable(self):
        # Imported from BUILD/python (a link to the sources), the package finds
        # BUILD/src/cli/trnsim: the binary CTest names.
        env = dict(os.environ)
        env.pop("TRNSIM_BIN")
        p = subprocess.run([sys.executable, "-c", "import trnsim; print(trnsim.find_binary())"],
                           env=env, capture_output=True, text=True, cwd="/")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(os.path.realpath(p.stdout.strip()),
                         os.path.realpath(os.environ["TRNSIM_BIN"]))

    def test_bad_input_raises_with_trnsims_message(self):
        with self.assertRaises(trnsim.TrnsimError) as e:
            trnsim.trnsim("run", "--set", "chip.hbm.stack=2")
        self.assertEqual(e.exception.returncode, 2)
        self.assertIn('unknown key "stack"', str(e.exception))
        self.assertEqual(trnsim.trnsim("run", "--set", "x=1", check=False).returncode, 2)


class RunTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.r = trnsim.run(trace=SMALL_TRACE, config=RACK, out=Path(cls.tmp.name) / "run")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_summary_is_report_json(self):
        with open(self.r.dir / "report.json") as f:
            rep = json.load(f)
        s = self.r.summary
        self.assertEqual(len(s), 1)
        self.assertEqual(s["step_time_ns"][0], rep["performance"]["step_time_ns"])
        self.assertEqual(self.r.step_time_ns, rep["performance"]["step_time_ns"])
        self.assertEqual(s["ranks"][0], 16)
        self.assertEqual(s["workload"][0], rep["workload"]["name"])
        self.assertEqual(s["energy_j"][0], rep["energy"]["total_j"])
        # Empty fields are NaN: the fast tier has no packet latency.
        self.assertTrue(math.isnan(s["packet_latency_p99_ns"][0]))

    def test_breakdown_has_a_row_per_rank_adding_up_to_the_step(self):
        b = self.r.breakdown
        self.assertEqual(list(b["rank"]), list(range(16)))
        step = self.r.step_time_ns
        total = b["compute_ns"] + b["overlapped_ns"] + b["exposed_communication_ns"] + b["waiting_ns"]
        for t in total:
            self.assertAlmostEqual(t, step, delta=1e-6 * step)

    def test_report_frame_flattens_report_json(self):
        f = trnsim.report_frame(self.r.dir)
        self.assertEqual(len(f), 1)
        self.assertEqual(f["performance.step_time_ns"][0], self.r.step_time_ns)
        self.assertEqual(f["machine.rack"][0], "Trn3 Gen2 UltraServer")

    def test_ops_csv_has_every_op(self):
        ops = self.r.ops()
        self.assertEqual(len(ops), self.r.report["workload"]["ops"])
        self.assertLessEqual(ops["end_ns"].max(), self.r.step_time_ns)

    def test_the_seed_and_sets_reach_the_run(self):
        with tempfile.TemporaryDirectory() as d:
            r = trnsim.run(trace=SMALL_TRACE, config=RACK, out=Path(d) / "r",
                           sets={"chip.hbm.bandwidth": "2TB/s"}, args=["--out-files", "report.json"])
            self.assertEqual(sorted(os.listdir(r.dir)), ["report.json"])
            r2 = trnsim.run(trace=SMALL_TRACE, config=RACK, out=Path(d) / "r2",
                            sets=["chip.hbm.bandwidth=2TB/s"], seed=7)
            with open(r2.dir / "config.json") as f:
                cfg = json.load(f)
            self.assertEqual(cfg["chip"]["hbm"]["bandwidth"], "2TB/s")
            self.assertEqual(cfg["sim"]["seed"], 7)
            # Less HBM bandwidth, a longer step.
            self.assertGreater(r.step_time_ns, self.r.step_time_ns)


class LoaderTest(unittest.TestCase):
    def test_csv_numbers_are_the_doubles_their_text_names(self):
        # pandas' default parser reads 90.10695116874703 as 90.10695116874705 (1.5.3): a summary
        # would then differ from report.json in the last place.
        with tempfile.TemporaryDirectory() as d:
            (Path(d) / "summary.csv").write_text("energy_j,step_time_ns\n90.10695116874703,3.5\n")
            s = trnsim.load_summary(d)
        self.assertEqual(s["energy_j"][0], float("90.10695116874703"))
        self.assertEqual(s["step_time_ns"][0], 3.5)


class SweepTest(unittest.TestCase):
    def test_a_built_spec_runs_and_loads(self):
        spec = trnsim.sweep_spec(
            "py-hbm", config=RACK, trace=SMALL_TRACE,
            axes=[trnsim.axis("chip.hbm.bandwidth", values=["2TB/s", "4TB/s"])])
        self.assertEqual(spec, {"name": "py-hbm", "config": RACK, "trace": SMALL_TRACE,
                                "axes": [{"path": "chip.hbm.bandwidth",
                                          "values": ["2TB/s", "4TB/s"]}]})
        with tempfile.TemporaryDirectory() as d:
            f = trnsim.write_spec(spec, Path(d) / "s.json")
            dry = json.loads(trnsim.trnsim("sweep", f, "--dry-run", "--json").stdout)
            self.assertEqual(dry["points_kept"], 2)
            self.assertEqual([p["values"]["bandwidth"] for p in dry["points"]], ["2TB/s", "4TB/s"])
            out = Path(d) / "out"
            groups = trnsim.sweep(spec, out=out, jobs=2)
            self.assertEqual(list(groups["bandwidth"]), ["2TB/s", "4TB/s"])
            points = trnsim.load_sweep_points(out)
            self.assertEqual(list(points["status"]), ["ok", "ok"])
            for _, p in points.iterrows():
                rep = trnsim.load_report(out / "points" / p["point"] / "run")
                self.assertEqual(p["step_time_ns"], rep["performance"]["step_time_ns"])
                g = groups[groups["bandwidth"] == p["bandwidth"]]
                self.assertAlmostEqual(g["step_time_ns"].iloc[0], rep["performance"]["step_time_ns"],
                                       delta=1e-9 * rep["performance"]["step_time_ns"])
            full = trnsim.load_sweep_groups(out)
            self.assertEqual(list(full["ok"]), [1, 1])
            self.assertEqual(list(full["step_time_ns"]), list(groups["step_time_ns"]))

    def test_axis_needs_exactly_one_form(self):
        with self.assertRaisesRegex(ValueError, "exactly one of values, range, samples"):
            trnsim.axis("chip.hbm.bandwidth")
        with self.assertRaisesRegex(ValueError, "got values, range"):
            trnsim.axis("chip.hbm.bandwidth", values=[1], range={"from": 1, "to": 2, "step": 1})

    def test_files_in_a_spec_are_made_absolute(self):
        cwd = os.getcwd()
        try:
            os.chdir(SRC)
            spec = trnsim.sweep_spec("x", config="configs/racks/trn2-ultraserver.json",
                                     trace="traces/mixtral-moe-16.json",
                                     axes=[trnsim.axis("sim.seed", values=[1])])
        finally:
            os.chdir(cwd)
        self.assertEqual(spec["config"], str(SRC / "configs/racks/trn2-ultraserver.json"))
        self.assertEqual(spec["trace"], str(SRC / "traces/mixtral-moe-16.json"))
        with tempfile.TemporaryDirectory() as d:
            f = trnsim.write_spec(spec, Path(d) / "elsewhere" / "x.json")
            dry = json.loads(trnsim.trnsim("sweep", f, "--dry-run", "--json").stdout)
            self.assertEqual(dry["points_kept"], 1)


class ServeTest(unittest.TestCase):
    def test_a_built_spec_serves_and_loads(self):
        spec = trnsim.serving_spec(
            "py-small", rack="trn2-ultraserver", model="llama-3.1-8b", layout="tp=1",
            arrivals={"kind": "poisson", "rate_per_s": 50, "input_tokens": 128,
                      "output_tokens": 4, "seed": 3},
            requests=6, scheduler={"max_batch": 8, "token_budget": 512},
            timing={"mode": "exact"})
        self.assertEqual(spec["run"], {"requests": 6})
        with tempfile.TemporaryDirectory() as d:
            s = trnsim.serve(spec, out=Path(d) / "serve")
            self.assertEqual(len(s.requests), 6)
            self.assertEqual(len(s.summary), 1)
            res = s.report["results"]
            # The summary row and the requests are report.json's figures.
            self.assertEqual(s.report["spec"]["name"], "py-small")
            # p99 of six by nearest rank is the largest; requests.csv keeps nanoseconds.
            self.assertAlmostEqual(s.requests["ttft_s"].max(), res["ttft_s"]["p99"], delta=1e-9)
            # One row whose layout (it has commas) is one quoted field.
            self.assertEqual(s.summary["layout"][0], "tp=1,dp=1,ep=1,pp=1")
            self.assertEqual(s.summary["requests"][0], 6)
            self.assertAlmostEqual(s.summary["ttft_p99_s"][0], res["ttft_s"]["p99"], delta=1e-6)
            self.assertEqual(list(s.requests["output_tokens"]), [4] * 6)


    def test_a_serving_sweep_built_here_runs_and_its_points_load(self):
        serving = trnsim.serving_spec(
            "py-sweep", rack="trn2-ultraserver", model="llama-3.1-8b", layout="tp=1",
            arrivals={"kind": "poisson", "rate_per_s": 50, "input_tokens": 128,
                      "output_tokens": 4, "seed": 3},
            requests=6, scheduler={"max_batch": 8, "token_budget": 512},
            timing={"mode": "exact"})
        with self.assertRaisesRegex(ValueError, "takes no trace"):
            trnsim.sweep_spec("x", None, [trnsim.axis("arrivals.seed", values=[1])],
                              serving="s.json", trace="t.json")
        with self.assertRaisesRegex(ValueError, "needs a config"):
            trnsim.sweep_spec("x", None, [trnsim.axis("sim.seed", values=[1])])
        with tempfile.TemporaryDirectory() as d:
            f = trnsim.write_spec(serving, Path(d) / "serve.json")
            spec = trnsim.sweep_spec("py-serve-sweep", None,
                                     [trnsim.axis("arrivals.rate_per_s", values=[25, 50])],
                                     serving=f)
            self.assertEqual(spec["command"], "serve")
            self.assertNotIn("config", spec)
            out = Path(d) / "out"
            trnsim.sweep(spec, out=out, jobs=2)
            points = trnsim.load_sweep_points(out)
            self.assertEqual(list(points["status"]), ["ok", "ok"])
            for _, p in points.iterrows():
                run = next(x for x in (out / "points" / p["point"]).iterdir() if x.is_dir())
                s = trnsim.load_serving(run)
                # A sweep's points keep report.json and summary.csv only.
                self.assertIsNone(s.requests)
                self.assertEqual(s.report["spec"]["arrivals"]["rate_per_s"], p["rate_per_s"])
                self.assertEqual(s.summary["requests"][0], 6)

class ClaimsTest(unittest.TestCase):
    def test_claims_results_load_one_row_per_claim(self):
        f = SRC / "tests" / "claims" / "inputs" / "small.json"
        with open(f) as fh:
            ids = [c["id"] for c in json.load(fh)["claims"]]
        with tempfile.TemporaryDirectory() as d:
            rows = trnsim.claims(f, out=Path(d) / "c", quick=True)
        self.assertEqual(list(rows["id"]), ids)
        chips = rows[rows["id"] == "chips"].iloc[0]
        self.assertEqual(chips["measured"], 2.25)     # 144 chips over 64
        self.assertEqual(chips["claimed"], 2.25)


class NotebookTest(unittest.TestCase):
    def test_the_example_notebook_runs(self):
        nb_path = SRC / "docs" / "python-example.ipynb"
        import nbformat
        nb = nbformat.read(nb_path, as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        self.assertGreaterEqual(len(code), 4)
        try:
            from nbclient import NotebookClient
        except ImportError:
            self.skipTest("python3-nbclient is not installed")
        with tempfile.TemporaryDirectory() as d:
            os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
            NotebookClient(nb, timeout=300, kernel_name="python3",
                           resources={"metadata": {"path": d}}).execute()
        for c in code:
            for o in c.get("outputs", []):
                self.assertNotEqual(o.get("output_type"), "error", o)
        # The last cell prints the step time it read back: the run's, from summary.csv.
        text = "".join(o.get("text", "") for o in code[-1]["outputs"] if o.get("output_type") == "stream")
        self.assertIn("summary.csv and report.json agree", text)


if __name__ == "__main__":
    unittest.main()
