#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Cluster scale (docs/scaling.md): wall time, peak memory and step time of `trnsim run` on Trn3
Gen2 UltraClusters of 1 to 7,282 UltraServers (144 to 1,048,608 chips), each UltraServer one
data-parallel replica of the realistic DeepSeek-V3 step, folded; then folded against unfolded
and flow-level against packet-level fabric on 2 to 8 UltraServers.

    tools/bench_cluster.py [--trnsim PATH] [--traces DIR] [--sizes 1,8,64,512,7282]
    tools/bench_cluster.py --sizes 8 --trace tests/golden/inputs/golden-moe-16-x8.json  # a quick check
    tools/bench_cluster.py --compare [--compare-sizes 1,2,4,8]  # folded vs unfolded, flow vs packet

The replica traces (tools/moe_gen.py --replicas N, about 2 minutes each) are generated into
--traces once and reused. Figures vary with the machine and its load: they belong in benchmark
output, never in test assertions.
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_run import fail, run_main_job  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG = os.path.join(ROOT, "configs/clusters/trn3-gen2-ultracluster.json")
# The realistic default step of `trnsim run` (tools/regen-traces.sh), one replica of N.
STEP = ["--model", "deepseek-v3", "--ranks", "144", "--tp", "1", "--ep", "16", "--pp", "9",
        "--seq-len", "4096", "--micro-batches", "8", "--routing", "zipf:0.5", "--seed", "1",
        "--dtype", "mxfp8", "--expert-gemms", "grouped"]
# A 9-layer cut of it with 2 micro-batches, for the unfolded runs (every UltraServer simulated),
# and with 1-k-token sequences and 1 micro-batch for the packet-level fabric.
SMALL = ["--model", "deepseek-v3", "--ranks", "144", "--tp", "1", "--ep", "16", "--pp", "9",
         "--layers", "9", "--dense-layers", "1", "--seq-len", "4096", "--micro-batches", "2",
         "--routing", "zipf:0.5", "--seed", "1", "--dtype", "mxfp8", "--expert-gemms", "grouped"]
TINY = SMALL[:SMALL.index("--seq-len")] + ["--seq-len", "1024", "--micro-batches", "1"] + \
    SMALL[SMALL.index("--micro-batches") + 2:]


def trace(dir_, kind, n):
    if kind == "step" and n == 1:  # the bundled default is this very trace
        return os.path.join(ROOT, "traces/deepseek-v3-step-144.json.gz")
    path = os.path.join(dir_, f"{kind}-r{n}.json.gz")
    if not os.path.exists(path):
        raw = path[:-3]
        args = list({"step": STEP, "small": SMALL, "tiny": TINY}[kind])
        if n > 1:
            args += ["--replicas", str(n)]
        subprocess.run([sys.executable, os.path.join(ROOT, "tools/moe_gen.py"), *args, "-q",
                        "-o", raw], check=True)
        subprocess.run(["gzip", "-n", "-f", raw], check=True)
    return path


def run(trnsim, n, path, sets=()):
    extra = ["--config", CONFIG, "--trace", path, "--set", f"cluster.ultraservers={n}"]
    for s in sets:
        extra += ["--set", s]
    return run_main_job(trnsim, extra)


def scale_table(trnsim, traces, sizes, given=None):
    print("chips      UltraServers  simulated  wall (s)  peak RSS (MiB)  step (ms)")
    rows = []
    for n in sizes:
        r = run(trnsim, n, given or trace(traces, "step", n))
        rows.append({"ultraservers": n, "chips": 144 * n, **r})
        print(f"{144 * n:>9,}  {n:>12,}  {1:>9}  {r['process_wall_time_s']:>8.1f}  "
              f"{r['peak_memory_mib'] or float('nan'):>14.0f}  {r['step_time_ns'] / 1e6:>9.2f}")
    return rows


def compare_table(trnsim, traces, sizes):
    print("UltraServers  folded (ms)  unfolded (ms)  diff      wall folded / unfolded (s)  "
          "| 1-k tokens: flow (ms)  packet (ms)  diff      wall flow / packet (s)")
    rows = []
    for n in sizes:
        path = trace(traces, "small", n)
        f = run(trnsim, n, path)
        u = run(trnsim, n, path, ["cluster.fold=false"])
        tiny = trace(traces, "tiny", n)
        fl = run(trnsim, n, tiny, ["cluster.fold=false"])
        pk = run(trnsim, n, tiny, ["cluster.fold=false", "rack.fabric.model=packet"])
        tf, tu, tl, tp = (x["step_time_ns"] / 1e6 for x in (f, u, fl, pk))
        rows.append({"ultraservers": n, "folded": f, "unfolded": u, "flow": fl, "packet": pk})
        print(f"{n:>12}  {tf:>11.3f}  {tu:>13.3f}  {100 * (tf - tu) / tu:>+6.2f} %  "
              f"{f['process_wall_time_s']:>10.1f} / {u['process_wall_time_s']:<13.1f}  "
              f"| {tl:>20.3f}  {tp:>11.3f}  {100 * (tl - tp) / tp:>+6.2f} %  "
              f"{fl['process_wall_time_s']:.1f} / {pk['process_wall_time_s']:.1f}")
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trnsim", default=os.path.join(ROOT, "build/release/src/cli/trnsim"))
    ap.add_argument("--traces", default=os.path.join(ROOT, "build/cluster-traces"),
                    help="where the replica traces are generated and reused")
    ap.add_argument("--sizes", default="1,8,64,512,7282", help="UltraServers per cluster")
    ap.add_argument("--compare", action="store_true",
                    help="folded against unfolded and flow against packet fabric instead")
    ap.add_argument("--compare-sizes", default="1,2,4,8")
    ap.add_argument("--trace", help="run this trace at every size instead of the realistic step "
                    "(a quick check; a trace made for N replicas runs on N UltraServers only)")
    ap.add_argument("--json", action="store_true", help="also print the rows as JSON")
    a = ap.parse_args()
    if not os.access(a.trnsim, os.X_OK):
        fail(f"{a.trnsim} is not an executable; build the release preset first")
    os.makedirs(a.traces, exist_ok=True)
    try:
        sizes = [int(x) for x in (a.compare_sizes if a.compare else a.sizes).split(",")]
    except ValueError:
        fail("sizes must be comma-separated integers")
    if not sizes or min(sizes) < 1:
        fail("sizes must be integers >= 1")
    if a.trace and a.compare:
        fail("--trace is for the scale table, not --compare")
    if a.trace and not os.path.isfile(a.trace):
        fail(f"--trace: no file {a.trace}")
    rows = compare_table(a.trnsim, a.traces, sizes) if a.compare else \
        scale_table(a.trnsim, a.traces, sizes, a.trace and os.path.abspath(a.trace))
    if a.json:
        print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
