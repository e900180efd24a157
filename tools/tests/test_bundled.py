# SPDX-License-Identifier: MIT
"""The committed traces/ files: valid, small, and what tools/regen-traces.sh produces."""

import gzip
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import unittest

from .checks import check_progress, check_trace

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TRACES = os.path.join(ROOT, "traces")


def regen_command(trace):
    """The moe_gen.py command of `trace` in tools/regen-traces.sh, as an argument list."""
    with open(os.path.join(ROOT, "tools", "regen-traces.sh")) as f:
        text = f.read().replace("\\\n", " ")
    for line in text.splitlines():
        if line.startswith("python3 tools/moe_gen.py") and f"traces/{trace}" in line:
            return shlex.split(line)[2:]
    raise AssertionError(f"no command for {trace}")


class BundledTest(unittest.TestCase):
    def load(self, name):
        path = os.path.join(TRACES, name)
        self.assertLess(os.path.getsize(path), 4 * 2**20, name)
        with open(path) as f:
            return json.load(f)

    def test_default_workload(self):
        t = self.load("deepseek-v3-moe-144.json")
        self.assertEqual(check_trace(t), [])
        self.assertEqual(check_progress(t), [])
        self.assertEqual(t["ranks"], 144)
        md = t["metadata"]
        args = regen_command("deepseek-v3-moe-144.json")
        self.assertEqual((md["model"], md["routing"], md["seed"]),
                         ("deepseek-v3", args[args.index("--routing") + 1], 1))
        self.assertEqual(md["parallelism"]["ep"] * md["parallelism"]["dp"], 144)

    def test_default_step(self):
        """The default of `trnsim run`: a whole DeepSeek-V3 step, gzipped (docs/moe-generator.md)."""
        path = os.path.join(TRACES, "deepseek-v3-step-144.json.gz")
        self.assertLess(os.path.getsize(path), 8 * 2**20)
        with gzip.open(path, "rt") as f:
            t = json.load(f)
        self.assertEqual(t["ranks"], 144)
        md = t["metadata"]
        self.assertEqual((md["model"], md["layers"], md["dense_layers"], md["micro_batches"],
                          md["seq_len"]), ("deepseek-v3", 61, 3, 8, 4096))
        p = md["parallelism"]
        self.assertEqual((p["tp"], p["ep"], p["pp"]), (1, 16, 9))
        args = regen_command("deepseek-v3-step-144.json")
        self.assertEqual(md["routing"], args[args.index("--routing") + 1])
        self.assertEqual(sum(len(r["ops"]) for r in t["rank_ops"]), 467984)

    def test_small_trace_is_reproducible(self):
        name = "mixtral-moe-16.json"
        t = self.load(name)
        self.assertEqual(check_trace(t), [])
        self.assertEqual(check_progress(t), [])
        self.assertEqual(t["ranks"], 16)
        args = regen_command(name)
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, name)
            args[args.index("-o") + 1] = out
            subprocess.run([sys.executable, os.path.join(ROOT, "tools", "moe_gen.py"), "-q"]
                           + args, check=True)
            with open(out, "rb") as f, open(os.path.join(TRACES, name), "rb") as g:
                self.assertTrue(f.read() == g.read(), "traces/ is stale: run "
                                "tools/regen-traces.sh")


if __name__ == "__main__":
    unittest.main()
