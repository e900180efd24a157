#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Speed of the main job: wall time, peak memory and process activations per second of
`trnsim run` (by default the Trn3 Gen2 UltraServer on the bundled MoE step), next to the rate
of a bare SystemC event loop (`trnsim bench kernel`) measured in the same invocation.

    tools/bench_run.py [--trnsim build/release/src/cli/trnsim] [--kernel-processes N]
                       [-- <extra trnsim run arguments, e.g. --config ... --trace ...>]

Prints a table, or one JSON object with --json. Figures vary with the machine and its load:
they belong in benchmark output, never in test assertions (docs/bench.md#speed-of-the-main-job).
"""
import argparse
import json
import os
import re
import resource
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# What `trnsim run` prints on stderr after the report (src/cli/cmd_run.cpp).
WALL_LINE = re.compile(
    r"wall time (?P<wall>[0-9.]+) s \(simulation (?P<sim>[0-9.]+) s\), (?P<act>\d+) process "
    r"activations \((?P<rate>[0-9.e+]+) per second of simulation; (?P<kinds>[^)]*)\), "
    r"(?P<delta>\d+) SystemC delta cycles")


def fail(msg):
    print(f"bench_run.py: error: {msg}", file=sys.stderr)
    sys.exit(2)


def run_main_job(trnsim, extra):
    """Runs `trnsim run` in a child and returns its figures and the child's peak RSS."""
    env = dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1")
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.monotonic()
    p = subprocess.run([trnsim, "run", "--json", *extra], capture_output=True, text=True,
                       env=env, check=False)
    elapsed = time.monotonic() - t0
    if p.returncode != 0:
        fail(f"trnsim run exited with {p.returncode}: {p.stderr.strip()[-2000:]}")
    m = WALL_LINE.search(p.stderr)
    if not m:
        fail("trnsim run printed no 'wall time ... process activations' line on stderr")
    summary = json.loads(p.stdout)
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    kinds = {}
    for part in m["kinds"].split(", "):
        name, _, n = part.partition(" ")
        kinds[name] = int(n)
    return {
        "process_wall_time_s": elapsed,
        "wall_time_s": float(m["wall"]),
        "simulation_time_s": float(m["sim"]),
        "activations": int(m["act"]),
        "activations_by_kind": kinds,
        "activations_per_s": float(m["rate"]),
        "delta_cycles": int(m["delta"]),
        # ru_maxrss of children is the largest child so far; the run is the first child.
        "peak_memory_mib": peak_kib / 1024 if peak_kib > before else None,
        "step_time_ns": summary["step_time_ns"],
        "workload": summary["workload"]["name"] if "workload" in summary else None,
    }


def run_bare_kernel(trnsim, processes, activations):
    env = dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1")
    p = subprocess.run([trnsim, "bench", "kernel", "--processes", str(processes),
                        "--activations", str(activations), "--json"],
                       capture_output=True, text=True, env=env, check=False)
    if p.returncode != 0:
        fail(f"trnsim bench kernel exited with {p.returncode}: {p.stderr.strip()[-2000:]}")
    return json.loads(p.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trnsim", default=os.path.join(ROOT, "build/release/src/cli/trnsim"),
                    help="the trnsim binary (default: the release build)")
    ap.add_argument("--kernel-processes", type=int, default=7000,
                    help="processes of the bare event loop (default 7000: a 144-chip rack has "
                         "144 DMA calendars, 5,760 compute engines and a queue per link and "
                         "switch)")
    ap.add_argument("--kernel-activations", type=int, default=20_000_000,
                    help="activations of the bare event loop (default 20 million)")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("extra", nargs=argparse.REMAINDER,
                    help="after --: arguments passed to trnsim run")
    a = ap.parse_args()
    if not os.access(a.trnsim, os.X_OK):
        fail(f"--trnsim: {a.trnsim} is not an executable (build it: tools/build.sh release)")
    if a.kernel_processes < 1:
        fail(f"--kernel-processes: expected an integer >= 1, got {a.kernel_processes}")
    if a.kernel_activations < 1:
        fail(f"--kernel-activations: expected an integer >= 1, got {a.kernel_activations}")
    extra = a.extra[1:] if a.extra[:1] == ["--"] else a.extra
    run = run_main_job(a.trnsim, extra)
    bare = run_bare_kernel(a.trnsim, a.kernel_processes, a.kernel_activations)
    ratio = run["activations_per_s"] / bare["activations_per_s"]
    out = {"run": run, "bare_kernel": bare, "rate_vs_bare": ratio}
    if a.json:
        print(json.dumps(out, indent=2, sort_keys=True))
        return
    kinds = ", ".join(f"{k} {v:,}" for k, v in sorted(run["activations_by_kind"].items()))
    mem = f"{run['peak_memory_mib']:.0f} MiB" if run["peak_memory_mib"] else "unknown"
    print(f"trnsim run {' '.join(extra) or '(default job)'}")
    print(f"  step time (simulated)   {run['step_time_ns'] / 1e6:.3f} ms")
    print(f"  wall time               {run['wall_time_s']:.1f} s "
          f"(simulation {run['simulation_time_s']:.1f} s; process {run['process_wall_time_s']:.1f} s)")
    print(f"  peak memory             {mem}")
    print(f"  process activations     {run['activations']:,} ({kinds})")
    print(f"  activations per second  {run['activations_per_s']:.3g}")
    print(f"  SystemC delta cycles    {run['delta_cycles']:,}")
    print(f"bare SystemC event loop ({bare['processes']} method processes, "
          f"{bare['activations']:,} activations)")
    print(f"  activations per second  {bare['activations_per_s']:.3g}")
    print(f"run rate / bare rate      {ratio:.2f}")


if __name__ == "__main__":
    main()
