# SPDX-License-Identifier: MIT
"""Bad arguments: exit code 2, one message naming the argument, no traceback, no output file."""

import os
import subprocess
import sys
import tempfile
import unittest

TOOL = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "moe_gen.py")
OK = ["--model", "mixtral-8x7b", "--tp", "2", "--ep", "4", "--dp", "2", "--layers", "1",
      "--seq-len", "64"]


def replace(args, flag, value):
    out = list(args)
    out[out.index(flag) + 1] = value
    return out


class CliTest(unittest.TestCase):
    def invoke(self, args):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "t.json")
            tail = [] if "-o" in args else ["-o", out]
            p = subprocess.run([sys.executable, TOOL] + args + tail, capture_output=True,
                               text=True)
            return p, os.listdir(d)

    def test_good_arguments_write_the_trace(self):
        p, files = self.invoke(OK)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(files, ["t.json"])
        self.assertIn("16 ranks", p.stdout)

    def test_bad_arguments(self):
        cases = [
            (replace(OK, "--model", "gpt-5"), "--model", "unknown model \"gpt-5\""),
            (OK[:6] + ["--ranks", "10"] + OK[8:], "--ranks", "not divisible"),
            (OK + ["--ranks", "32"], "--ranks", "32 != TP*EP*DP*PP = 16"),
            (OK + ["--top-k", "9"], "--top-k", "exceeds the 8 experts"),
            (replace(OK, "--ep", "3"), "--ep", "not divisible by EP = 3"),
            (replace(OK, "--tp", "3"), "--tp", "not divisible by TP = 3"),
            (OK + ["--routing", "powerlaw"], "--routing", "unknown routing \"powerlaw\""),
            (OK + ["--routing", "file:/nonexistent/routing.json"], "--routing",
             "/nonexistent/routing.json"),
            (OK + ["--global-batch", "7"], "--global-batch", "not divisible"),
            (OK + ["--dtype", "int8"], "--dtype", "unknown dtype"),
            (replace(OK, "--layers", "0"), "--layers", ">= 1"),
            (replace(OK, "--layers", "33"), "--layers", "33 > the 32 layers"),
            (OK + ["--dense-layers", "1"], "--dense-layers", "no dense FFN"),
            (OK + ["--micro-batches", "two"], "--micro-batches", "invalid int value"),
            (OK + ["-o", "/nonexistent-dir/t.json"], "--output", "does not exist"),
        ]
        for args, arg, text in cases:
            with self.subTest(arg=arg, text=text):
                p, files = self.invoke(args)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn(f"argument {arg}", p.stderr)
                self.assertIn(text, p.stderr)
                self.assertNotIn("Traceback", p.stderr)
                self.assertEqual(files, [])      # no trace, no leftover temporary file

    def test_bad_model_file_names_the_key(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "m.json")
            with open(path, "w") as f:
                f.write('{"name": "x", "hiden": 8}')
            p, files = self.invoke(replace(OK, "--model", path))
        self.assertEqual(p.returncode, 2)
        self.assertIn("/hiden: unknown key (did you mean \"hidden\"?)", p.stderr)

    def test_failed_run_keeps_an_existing_file(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "t.json")
            with open(out, "w") as f:
                f.write("previous")
            p = subprocess.run([sys.executable, TOOL] + replace(OK, "--ep", "3") + ["-o", out],
                               capture_output=True, text=True)
            self.assertEqual(p.returncode, 2)
            with open(out) as f:
                self.assertEqual(f.read(), "previous")
            self.assertEqual(os.listdir(d), ["t.json"])


if __name__ == "__main__":
    unittest.main()
