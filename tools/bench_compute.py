#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Op-level against tile compute (docs/models/fidelity.md#compute-tiers).

    tools/bench_compute.py [--trnsim build/release/src/cli/trnsim] [--max-side 8192] [--no-step] [--json]

1. Every shape of `trnsim bench gemm --sweep` (MXFP8), replayed by `trnsim run` on rank 0 of the
   default rack with --set chip.compute.model=op and =tile (at sim.fidelity=detailed with
   sim.fast_forward=false, so a tile op is simulated whole): alone (one GEMM) and two at once on
   one chip (two GEMMs without dependencies), the op-level time's error against the tile time.
2. The step traces/mixtral-moe-16.json on configs/racks/trn3-gen2-ultraserver.json at both
   compute models: step time, its difference, wall time and process activations.
3. `--part grid`: the size grids (src/run/calibrate.cpp). A chain of MoE expert GEMMs of
   DeepSeek-V3's shapes and of expert activations, at rows and element counts between and above
   the grid's points, one after another on one chip; each op's op-level time (interpolated, or
   extrapolated above the cap) against its tile time.

Wall times vary with the machine and its load: benchmark output, never test assertions.
"""
import argparse
import csv
import importlib.util
import json
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_spec = importlib.util.spec_from_file_location("bench_run", os.path.join(ROOT, "tools", "bench_run.py"))
bench_run = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_run)

RACK = os.path.join(ROOT, "configs/racks/trn3-gen2-ultraserver.json")
STEP = os.path.join(ROOT, "traces/mixtral-moe-16.json")


def sweep_shapes(max_side):
    """The shapes of `trnsim bench gemm --sweep` (src/bench/chip.cpp sweep_shapes)."""
    s = [(x, x, x) for x in (128, 256, 512, 1024, 2048, 4096, 8192, 16384)]
    s += [(128, 8192, 8192), (8192, 8192, 128), (1024, 65536, 1024), (65536, 1024, 1024)]
    return [t for t in s if max(t) <= max_side or t[0] * t[1] * t[2] <= max_side ** 3]


def gemm_trace(m, k, n, copies):
    ops = [{"id": i, "name": f"gemm{i}", "op": "gemm", "m": m, "k": k, "n": n, "dtype": "mxfp8"}
           for i in range(copies)]
    return {"format": "trnsim-trace", "version": 1, "name": f"gemm-{m}x{k}x{n}-x{copies}",
            "ranks": 1, "groups": {}, "rank_ops": [{"rank": 0, "ops": ops}]}


# MoE expert ops of the DeepSeek-V3 step (tools/moe_gen.py): rows (tokens an EP rank's experts
# receive) and activation elements follow the routing, so a step has thousands of sizes.
GRID_GEMMS = [(7168, 4096), (2048, 7168)]
GRID_ROWS = [2100, 2900, 3500, 5000, 7000, 9000, 12000, 15000, 20000, 30000, 45000, 57596]
GRID_ELEMENTS = [8_400_000, 11_000_000, 15_000_000, 21_000_000, 30_000_000, 41_000_000,
                 60_000_000, 80_000_000, 100_000_000, 117_956_608]


def grid_trace():
    ops = []
    for k, n in GRID_GEMMS:
        for m in GRID_ROWS:
            ops.append({"op": "gemm", "m": m, "k": k, "n": n, "dtype": "mxfp8",
                        "name": f"gemm m={m} k={k} n={n}"})
    for e in GRID_ELEMENTS:
        ops.append({"op": "activation", "elements": e, "dtype": "bf16", "name": f"activation {e}"})
    for i, o in enumerate(ops):
        o["id"] = i
        if i:
            o["deps"] = [i - 1]
    return {"format": "trnsim-trace", "version": 1, "name": "size-grid", "ranks": 1,
            "groups": {}, "rank_ops": [{"rank": 0, "ops": ops}]}


def op_times(trnsim, trace, model, out_dir):
    """Duration of each op by name, from the run's ops.csv."""
    bench_run.run_main_job(trnsim, ["--config", RACK, "--trace", trace, "--out", out_dir,
                                    "--set", f"chip.compute.model={model}"])
    with open(os.path.join(out_dir, "ops.csv")) as f:
        return {r["name"]: float(r["duration_ns"]) for r in csv.DictReader(f)}


def grid_part(trnsim):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "grid.json")
        with open(path, "w") as f:
            json.dump(grid_trace(), f)
        t = {mdl: op_times(trnsim, path, mdl, os.path.join(tmp, mdl)) for mdl in ("tile", "op")}
    return [{"op": name, "tile_ns": t["tile"][name], "op_ns": t["op"][name],
             "error": t["op"][name] / t["tile"][name] - 1} for name in t["tile"]]


# Parts 1 and 2 compare the two compute models alone: packet network, no fast-forward (at the
# default fast tier a tile chip times an op from its head, and the step's network is flow-level).
WHOLE = ["--set", "sim.fidelity=detailed", "--set", "sim.fast_forward=false"]


def run(trnsim, trace, model):
    r = bench_run.run_main_job(trnsim, ["--config", RACK, "--trace", trace,
                                        "--set", f"chip.compute.model={model}", *WHOLE])
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trnsim", default=os.path.join(ROOT, "build/release/src/cli/trnsim"))
    ap.add_argument("--max-side", type=int, default=16384,
                    help="skip sweep shapes with more work than max-side^3")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--no-step", action="store_true", help="leave out part 2 (the step)")
    ap.add_argument("--part", choices=["all", "grid"], default="all",
                    help="grid: only the size grids' interpolation error")
    a = ap.parse_args()
    if not os.access(a.trnsim, os.X_OK):
        bench_run.fail(f"--trnsim: {a.trnsim} is not an executable (build the release preset)")
    if not sweep_shapes(a.max_side):
        bench_run.fail(f"--max-side: no sweep shape fits in {a.max_side} (the smallest side is 128)")
    if a.part == "grid":
        rows = grid_part(a.trnsim)
        if a.json:
            print(json.dumps(rows, indent=1))
            return
        print("| op | tile (us) | op-level (us) | error |")
        print("|---|---|---|---|")
        for r in rows:
            print(f"| {r['op']} | {r['tile_ns']/1e3:.2f} | {r['op_ns']/1e3:.2f} | {100*r['error']:+.2f} % |")
        return
    out = {"shapes": [], "step": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for (m, k, n) in sweep_shapes(a.max_side):
            row = {"m": m, "k": k, "n": n}
            for copies in (1, 2):
                path = os.path.join(tmp, f"g{m}_{k}_{n}_{copies}.json")
                with open(path, "w") as f:
                    json.dump(gemm_trace(m, k, n, copies), f)
                t = {mdl: run(a.trnsim, path, mdl)["step_time_ns"] for mdl in ("tile", "op")}
                key = "alone" if copies == 1 else "two_at_once"
                row[key] = {"tile_ns": t["tile"], "op_ns": t["op"],
                            "error": t["op"] / t["tile"] - 1 if t["tile"] > 0 else 0.0}
            out["shapes"].append(row)
    if a.no_step:
        del out["step"]
    else:
        step = {}
        for mdl in ("tile", "op"):
            r = run(a.trnsim, STEP, mdl)
            step[mdl] = {"step_time_ns": r["step_time_ns"], "wall_time_s": r["wall_time_s"],
                         "activations": r["activations"]}
        step["step_time_difference"] = step["op"]["step_time_ns"] / step["tile"]["step_time_ns"] - 1
        step["wall_ratio"] = step["op"]["wall_time_s"] / step["tile"]["wall_time_s"]
        step["activation_ratio"] = step["op"]["activations"] / step["tile"]["activations"]
        out["step"] = step
    if a.json:
        print(json.dumps(out, indent=1))
        return
    print("| shape m x k x n | tile alone (us) | op alone (us) | error | tile 2 at once (us) | op 2 at once (us) | error |")
    print("|---|---|---|---|---|---|---|")
    for r in out["shapes"]:
        al, tw = r["alone"], r["two_at_once"]
        print(f"| {r['m']} x {r['k']} x {r['n']} | {al['tile_ns']/1e3:.2f} | {al['op_ns']/1e3:.2f} | "
              f"{100*al['error']:+.2f} % | {tw['tile_ns']/1e3:.2f} | {tw['op_ns']/1e3:.2f} | {100*tw['error']:+.2f} % |")
    if a.no_step:
        return
    step = out["step"]
    print()
    print("| step (mixtral-moe-16, trn3-gen2) | step time (ms) | wall (s) | activations |")
    print("|---|---|---|---|")
    for mdl in ("tile", "op"):
        s = step[mdl]
        print(f"| {mdl} | {s['step_time_ns']/1e6:.3f} | {s['wall_time_s']:.2f} | {s['activations']} |")
    print(f"\nstep time difference {100*step['step_time_difference']:+.2f} %, wall ratio "
          f"{step['wall_ratio']:.3f}, activation ratio {step['activation_ratio']:.4f}")


if __name__ == "__main__":
    main()
