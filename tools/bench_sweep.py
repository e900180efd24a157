#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Throughput of `trnsim sweep`: one 32-point sweep (16 HBM bandwidths x 2 seeds) run at each
-j, in a fresh directory each time; prints points per minute and the parallel efficiency
(speed-up over -j 1, divided by j).

    tools/bench_sweep.py [--trnsim build/release/src/cli/trnsim] [--jobs 1 2]
                         [--config configs/racks/trn2-instance.json] [--trace traces/mixtral-moe-16.json]
                         [--points 32] [--json]

The default workload of `trnsim run` (traces/deepseek-v3-moe-144.json on the default rack, about
40 s per point) takes 20 minutes at -j 1; the default here is a 16-rank trace of about 5 s per
point. Figures depend on the machine and its load (printed with them): benchmark output, never
test assertions.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_sweep(trnsim, sweep_file, out, jobs):
    t0 = time.monotonic()
    cpu0 = os.times()
    load0 = os.getloadavg()[0]
    r = subprocess.run([trnsim, "sweep", sweep_file, "--out", out, "-j", str(jobs)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       env=dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1"))
    wall = time.monotonic() - t0
    cpu1 = os.times()
    child_cpu = (cpu1.children_user - cpu0.children_user) + (cpu1.children_system - cpu0.children_system)
    if r.returncode != 0:
        sys.exit(f"bench_sweep: trnsim sweep -j {jobs} failed ({r.returncode}): {r.stderr}")
    point_walls = []
    for p in sorted(os.listdir(os.path.join(out, "points"))):
        with open(os.path.join(out, "points", p, "status.json")) as f:
            point_walls.append(json.load(f)["wall_s"])
    return {"jobs": jobs, "wall_s": wall, "points": len(point_walls),
            "points_per_min": 60 * len(point_walls) / wall,
            "mean_point_wall_s": sum(point_walls) / len(point_walls),
            # CPU seconds of the sweep and its runs per point: flat across -j unless the pool costs.
            "cpu_s_per_point": child_cpu / len(point_walls),
            # Fraction of the j run slots busy over the sweep's wall time: what the pool controls;
            # the rest of the efficiency is the CPUs' share that other processes take.
            "slot_occupancy": sum(point_walls) / (jobs * wall),
            "load_before": load0, "load_after": os.getloadavg()[0]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trnsim", default=os.path.join(ROOT, "build/release/src/cli/trnsim"))
    ap.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--config", default=os.path.join(ROOT, "configs/racks/trn2-instance.json"))
    ap.add_argument("--trace", default=os.path.join(ROOT, "traces/mixtral-moe-16.json"))
    ap.add_argument("--points", type=int, default=32, help="an even number: half HBM bandwidths, 2 seeds")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if a.points < 2 or a.points % 2:
        print(f"bench_sweep: error: --points: expected an even number >= 2, got {a.points}", file=sys.stderr)
        sys.exit(2)
    with tempfile.TemporaryDirectory() as d:
        sweep = {"name": "bench", "config": os.path.abspath(a.config), "trace": os.path.abspath(a.trace),
                 "axes": [{"path": "chip.hbm.bandwidth",
                           "range": {"from": 1.0, "to": 4.0, "count": a.points // 2}, "unit": "TB/s"},
                          {"path": "sim.seed", "values": [1, 2]}]}
        sf = os.path.join(d, "bench.json")
        with open(sf, "w") as f:
            json.dump(sweep, f)
        rows = [run_sweep(a.trnsim, sf, os.path.join(d, f"j{j}"), j) for j in a.jobs]
    base = next((r for r in rows if r["jobs"] == 1), None)
    for r in rows:
        r["efficiency"] = (base["wall_s"] / r["wall_s"] / r["jobs"]) if base else None
    if a.json:
        print(json.dumps({"config": a.config, "trace": a.trace, "cpus": os.cpu_count(), "runs": rows}, indent=2))
        return
    print(f"{a.points}-point sweep of {os.path.relpath(a.trace, ROOT)} on {os.path.relpath(a.config, ROOT)}, "
          f"{os.cpu_count()} CPUs")
    print(f"{'-j':>3} {'wall s':>8} {'points/min':>11} {'efficiency':>11} {'s/point':>8} "
          f"{'CPU s/point':>12} {'slots busy':>11} {'load before/after':>18}")
    for r in rows:
        eff = f"{100 * r['efficiency']:.1f} %" if r["efficiency"] is not None else "-"
        print(f"{r['jobs']:>3} {r['wall_s']:>8.1f} {r['points_per_min']:>11.2f} {eff:>11} "
              f"{r['mean_point_wall_s']:>8.2f} {r['cpu_s_per_point']:>12.2f} "
              f"{100 * r['slot_occupancy']:>9.1f} % {r['load_before']:>8.2f} / {r['load_after']:<7.2f}")


if __name__ == "__main__":
    main()
