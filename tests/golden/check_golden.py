#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Runs one golden case of tests/golden/cases.json and compares its outputs with the committed
files in tests/golden/expected/<case>/ (or rewrites them with --update).

JSON is compared value by value: strings, integers and booleans exactly, floating-point numbers
within `float_rel_tol` (reassociation of sums only; see README.md), keys in `ignore_keys` (wall
times) skipped. Other files (CSV) are compared as text, line by line."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def differences(want, got, path, tol, ignore, out):
    if len(out) >= 20:
        return
    if isinstance(want, dict) and isinstance(got, dict):
        for k in sorted(set(want) | set(got)):
            if k in ignore:
                continue
            if k not in got:
                out.append(f"{path}/{k}: missing in the new output")
            elif k not in want:
                out.append(f"{path}/{k}: new in the output (not in the golden file)")
            else:
                differences(want[k], got[k], f"{path}/{k}", tol, ignore, out)
    elif isinstance(want, list) and isinstance(got, list):
        if len(want) != len(got):
            out.append(f"{path}: {len(want)} elements in the golden file, {len(got)} now")
            return
        for i, (a, b) in enumerate(zip(want, got)):
            differences(a, b, f"{path}/{i}", tol, ignore, out)
    elif isinstance(want, float) or isinstance(got, float):
        if isinstance(want, bool) or isinstance(got, bool) or not all(
                isinstance(x, (int, float)) for x in (want, got)):
            out.append(f"{path}: golden {want!r}, now {got!r}")
        elif abs(want - got) > tol * max(abs(want), abs(got)):
            out.append(f"{path}: golden {want!r}, now {got!r}")
    elif want != got or type(want) is not type(got):
        out.append(f"{path}: golden {want!r}, now {got!r}")


def run_case(case, trnsim, out_dir):
    args = [a.replace("{golden}", HERE).replace("{out}", out_dir) for a in case["args"]]
    env = dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1")
    p = subprocess.run([trnsim] + args, cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=600)
    if p.returncode != 0:
        sys.exit(f"{case['name']}: trnsim exited {p.returncode}\n{p.stderr}")
    files = {}
    if case.get("stdout") == "json":
        files["stdout.json"] = p.stdout
    elif case.get("stdout") == "text":
        files["stdout.txt"] = p.stdout
    for f in case.get("files", []):
        with open(os.path.join(out_dir, f), encoding="utf-8") as fh:
            files[f] = fh.read()
    return files


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--trnsim", required=True, help="the trnsim binary")
    ap.add_argument("--case", required=True, help="case name, or 'all'")
    ap.add_argument("--update", action="store_true", help="rewrite the golden files")
    a = ap.parse_args()
    with open(os.path.join(HERE, "cases.json"), encoding="utf-8") as fh:
        spec = json.load(fh)
    cases = [c for c in spec["cases"] if a.case in ("all", c["name"])]
    if not cases:
        sys.exit(f"no golden case named {a.case!r}")
    failed = 0
    for case in cases:
        with tempfile.TemporaryDirectory() as tmp:
            got = run_case(case, a.trnsim, os.path.join(tmp, "out"))
        expected_dir = os.path.join(HERE, "expected", case["name"])
        if a.update:
            shutil.rmtree(expected_dir, ignore_errors=True)
            os.makedirs(expected_dir)
            for name, text in got.items():
                if name == "report.json":
                    # Its identity (commit, command line, paths of this checkout) is never
                    # compared; it stays out of the repository too.
                    report = json.loads(text)
                    report.pop("identity", None)
                    text = json.dumps(report, indent=2) + "\n"
                with open(os.path.join(expected_dir, name), "w", encoding="utf-8") as fh:
                    fh.write(text)
            print(f"{case['name']}: golden files written")
            continue
        problems = []
        for name, text in got.items():
            path = os.path.join(expected_dir, name)
            if not os.path.exists(path):
                problems.append(f"{name}: no golden file (run with --update and commit it)")
                continue
            with open(path, encoding="utf-8") as fh:
                want = fh.read()
            if name.endswith(".json"):
                diffs = []
                differences(json.loads(want), json.loads(text), "", spec["float_rel_tol"],
                            set(spec["ignore_keys"]), diffs)
                problems += [f"{name}:{d}" for d in diffs]
            elif want != text:
                wl, gl = want.splitlines(), text.splitlines()
                for i, (x, y) in enumerate(zip(wl, gl)):
                    if x != y:
                        problems.append(f"{name}:{i + 1}: golden {x!r}, now {y!r}")
                        break
                else:
                    problems.append(f"{name}: {len(wl)} lines in the golden file, {len(gl)} now")
        if problems:
            failed += 1
            print(f"{case['name']}: differs from tests/golden/expected/{case['name']}:")
            for p in problems[:20]:
                print(f"  {p}")
        else:
            print(f"{case['name']}: matches")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
