#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""How close `trnsim run --estimate` is to what a run takes (docs/configuration.md §6).

For each run: the estimate's events and memory (`run --estimate`), then the run itself under
/usr/bin/time: its process activations (the stderr line "N process activations") and its peak
RSS, without the calibration cache (the estimate bounds the run that calibrates). Prints one row per run with the ratios estimate / measured; the estimate is meant to be an
upper bound within a factor of 2, and a ratio outside [1, 2] is flagged.

    tools/estimate_accuracy.py                    # the golden runs (tests/golden/cases.json)
    tools/estimate_accuracy.py --case run_trn2_ultraserver_fast  # one golden run only
    tools/estimate_accuracy.py --default-step     # and the default step (fast, half a minute)
    tools/estimate_accuracy.py --default-step-detailed  # ... detailed + fast-forward (minutes)
    tools/estimate_accuracy.py --moe              # and the third-party Mixtral-like Chakra trace
    tools/estimate_accuracy.py --trnsim build/release/src/cli/trnsim --json out.json

The default step at the detailed fidelity takes about ten minutes on the 2-core machine.
Every run is measured without the calibration cache (--no-cache).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def golden_runs():
    cases = json.load(open(os.path.join(ROOT, "tests/golden/cases.json")))["cases"]
    runs = []
    for c in cases:
        args = c["args"]
        if not args or args[0] != "run":
            continue
        runs.append((c["name"], args))
    return runs


def default_step_runs(detailed):
    fast = [("default step, fast", ["run"])]
    return fast if not detailed else [
        ("default step, detailed + fast-forward",
         ["run", "--set", "sim.fidelity=detailed", "--set", "sim.fast_forward=true"])]


def moe_runs(shared):
    """The third-party MoE Chakra trace (../shared/traces/moe-generated) at both fidelities."""
    trace = os.path.join(shared, "traces/moe-generated/mixtral_like_dp2_tp2_ep4/workload")
    base = ["run", "--trace", trace, "--chakra-size-unit", "elements", "--chakra-num-ops", "macs"]
    return [("mixtral_like_dp2_tp2_ep4, fast", base),
            ("mixtral_like_dp2_tp2_ep4, detailed", base + ["--set", "sim.fidelity=detailed"])]


def substitute(args, out):
    golden = os.path.join(ROOT, "tests/golden")
    res = []
    skip = False
    for a in args:
        if skip:
            skip = False
            continue
        if a == "--out":  # the report is not needed
            skip = True
            continue
        res.append(a.replace("{golden}", golden).replace("{out}", out))
    return res


def estimate(trnsim, args, env):
    p = subprocess.run([trnsim] + args + ["--estimate"], cwd=ROOT, env=env, capture_output=True,
                       text=True, check=True)
    events = float(re.search(r"events\s+([0-9.e+]+)", p.stdout).group(1))
    memory_gb = float(re.search(r"memory\s+([0-9.e+]+) GB", p.stdout).group(1))
    return events, memory_gb * 1e9


def measure(trnsim, args, env):
    with tempfile.NamedTemporaryFile("r") as t:
        p = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", t.name, trnsim] + args +
                           ["--no-progress", "--no-cache"], cwd=ROOT, env=env, capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"{args}: exit {p.returncode}: {p.stderr[-500:]}")
        rss = float(t.read().strip().splitlines()[-1]) * 1024
    m = re.search(r"(\d+) process activations", p.stderr)
    return float(m.group(1)) if m else float("nan"), rss


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trnsim", default=os.path.join(ROOT, "build/release/src/cli/trnsim"))
    ap.add_argument("--default-step", action="store_true",
                    help="also the default step at the fast fidelity")
    ap.add_argument("--default-step-detailed", action="store_true",
                    help="also the default step, detailed with fast-forward (minutes)")
    ap.add_argument("--moe", action="store_true",
                    help="also the third-party MoE Chakra trace at both fidelities")
    ap.add_argument("--shared", default=os.path.join(ROOT, "../shared"),
                    help="the shared directory that holds traces/moe-generated")
    ap.add_argument("--only-extra", action="store_true", help="leave out the golden runs")
    ap.add_argument("--case", action="append", default=[], metavar="NAME",
                    help="only this golden run (tests/golden/cases.json; repeatable)")
    ap.add_argument("--json", help="write the rows here too")
    a = ap.parse_args()
    env = dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1")
    golden = golden_runs()
    for c in a.case:
        if c not in [name for name, _ in golden]:
            print(f"estimate_accuracy.py: error: --case: no run case '{c}' in tests/golden/cases.json "
                  f"(expected one of {', '.join(name for name, _ in golden)})", file=sys.stderr)
            return 2
    if a.case:
        golden = [g for g in golden if g[0] in a.case]
    runs = ([] if a.only_extra else golden) + \
        (default_step_runs(False) if a.default_step else []) + \
        (default_step_runs(True) if a.default_step_detailed else []) + \
        (moe_runs(a.shared) if a.moe else [])
    rows = []
    print(f"{'run':48} {'est events':>11} {'activations':>11} {'ratio':>6} "
          f"{'est GB':>7} {'RSS GB':>7} {'ratio':>6}")
    with tempfile.TemporaryDirectory() as out:
        for name, args in runs:
            args = substitute(args, out)
            ev, mem = estimate(a.trnsim, args, env)
            act, rss = measure(a.trnsim, args, env)
            r_ev, r_mem = ev / act, mem / rss
            flag = "" if 1 <= r_mem <= 2 else "  <- memory outside [1, 2]"
            print(f"{name[:48]:48} {ev:11.3g} {act:11.3g} {r_ev:6.2f} {mem / 1e9:7.3f} "
                  f"{rss / 1e9:7.3f} {r_mem:6.2f}{flag}", flush=True)
            rows.append({"run": name, "args": args, "estimated_events": ev,
                         "process_activations": act, "estimated_memory_bytes": mem,
                         "peak_rss_bytes": rss})
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
