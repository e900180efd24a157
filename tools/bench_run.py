#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Speed of the main job: wall time, peak memory and process activations per second of
`trnsim run` (by default the Trn3 Gen2 UltraServer on the bundled MoE step), next to the rate
of a bare SystemC event loop (`trnsim bench kernel`) measured in the same invocation.

    tools/bench_run.py [--trnsim build/release/src/cli/trnsim] [--kernel-processes N]
                       [-- <extra trnsim run arguments, e.g. --config ... --trace ...>]
    tools/bench_run.py --fidelity      # the main job at sim.fidelity fast, detailed, and
                                       # detailed with fast-forward
    tools/bench_run.py --scaling       # cost against layers, micro-batches and tokens per chip
    tools/bench_run.py --compare OLD_TRNSIM [--repeat N]
                                       # the job on another binary and this one, alternately:
                                       # wall, CPU and peak memory per phase, and whether the
                                       # reports are the same
    tools/bench_run.py --serve-requests 1000,10000,100000 [-- SPEC and trnsim serve arguments]
                                       # cost of `trnsim serve` against requests: each count
                                       # cold (a fresh shape cache), warm (the same cache again)
                                       # and loop (warm, timing.parallel=1: no child): wall,
                                       # CPU, peak memory, page faults, shapes

Prints a table, or one JSON object with --json. Figures vary with the machine and its load:
they belong in benchmark output, never in test assertions (docs/bench.md#speed-of-the-main-job).
"""
import argparse
import json
import os
import re
import tempfile
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


# The phases `trnsim run --log-level debug` reports (src/cli/cmd_run.cpp; older binaries do not).
PHASE_LINE = re.compile(
    r"phases: trace read (?P<read>[0-9.]+) s, run (?P<run>[0-9.]+) s \(simulation "
    r"(?P<sim>[0-9.]+) s\), report (?P<report>[0-9.]+) s")


def run_main_job(trnsim, extra):
    """Runs `trnsim run` in a child and returns its figures and that child's peak RSS."""
    # Every run calibrates afresh (the calibration cache would make the second run of a binary
    # cheaper than the first; binaries from before the cache ignore the variable).
    env = dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1", TRNSIM_NO_CACHE="1")
    t0 = time.monotonic()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        p = subprocess.Popen([trnsim, "run", "--json", *extra], stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        elapsed = time.monotonic() - t0
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if p.returncode != 0:
        fail(f"trnsim run exited with {p.returncode}: {stderr.strip()[-2000:]}")
    m = WALL_LINE.search(stderr)
    if not m:
        fail("trnsim run printed no 'wall time ... process activations' line on stderr")
    summary = json.loads(stdout)
    phases = PHASE_LINE.search(stderr)
    before, peak_kib = 0, usage.ru_maxrss  # this child's own peak (Linux: KiB)
    kinds = {}
    for part in m["kinds"].split(", "):
        name, _, n = part.partition(" ")
        kinds[name] = int(n)
    return {
        "process_wall_time_s": elapsed,
        "cpu_time_s": usage.ru_utime + usage.ru_stime,
        "phases_s": {k: float(v) for k, v in phases.groupdict().items()} if phases else None,
        "report": summary,
        "wall_time_s": float(m["wall"]),
        "simulation_time_s": float(m["sim"]),
        "activations": int(m["act"]),
        "activations_by_kind": kinds,
        "activations_per_s": float(m["rate"]),
        "delta_cycles": int(m["delta"]),
        "peak_memory_mib": peak_kib / 1024 if peak_kib > before else None,
        # `trnsim run --json` prints report.json (docs/report.md).
        "models": summary["identity"].get("models"),
        "fraction_of_peak": summary["performance"].get("tensor_fraction_of_peak"),
        "step_time_ns": summary["performance"]["step_time_ns"],
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


def fidelity_table(trnsim, extra):
    """fast; detailed; detailed with fast-forward (micro-batches and inside ops, issue #11's
    target). The default step at detailed with fast-forward is estimated at 6.12 GB, within the
    default memory budget of a 24 GiB machine (docs/configuration.md section 6); a smaller machine
    needs `--set sim.memory_budget=...` after the options."""
    rows = []
    for fid, ff in (("fast", None), ("detailed", None), ("detailed", "true")):
        sets = ["--set", f"sim.fidelity={fid}"] + (["--set", f"sim.fast_forward={ff}"] if ff else [])
        r = run_main_job(trnsim, [*extra, *sets])
        del r["report"]
        rows.append({"fidelity": fid + (" + fast-forward" if ff else ""), **r})
    return rows


# The layout of the bundled 144-rank DeepSeek-V3 step of earlier releases: one layer, one
# micro-batch, TP1 x EP16 x DP9; each axis is scaled alone.
SCALING_BASE = ["--model", "deepseek-v3", "--ranks", "144", "--tp", "1", "--ep", "16", "--pp",
                "1", "--dense-layers", "0", "--routing", "zipf:0.8", "--seed", "1", "--dtype",
                "mxfp8", "--expert-gemms", "grouped", "-q"]


def scaling_table(trnsim, extra, base_seq, factors):
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for axis in ("layers", "micro_batches", "tokens_per_chip"):
            for f in factors:
                layers, mbs, seq = 1, 1, base_seq
                if axis == "layers":
                    layers = f
                elif axis == "micro_batches":
                    mbs = f
                else:
                    seq = base_seq * f
                trace = os.path.join(tmp, f"{axis}-{f}.json")
                gen = [sys.executable, os.path.join(ROOT, "tools/moe_gen.py"), *SCALING_BASE,
                       "--layers", str(layers), "--micro-batches", str(mbs), "--seq-len", str(seq),
                       "--name", f"scaling-{axis}-{f}", "-o", trace]
                g = subprocess.run(gen, capture_output=True, text=True, check=False)
                if g.returncode != 0:
                    fail(f"moe_gen.py exited with {g.returncode}: {g.stderr.strip()[-1000:]}")
                r = run_main_job(trnsim, ["--trace", trace, *extra])
                del r["report"]
                rows.append({"axis": axis, "factor": f, **r})
    return rows


# What `trnsim serve --log-level info` says of its shapes (src/serve/serve.cpp).
SHAPES_LINE = re.compile(r"(?P<shapes>\d+) shapes: (?P<simulated>\d+) simulated, (?P<cached>\d+) from "
                         r"the shape cache")


def run_serve(trnsim, requests, cache_dir, extra, sets=()):
    """`trnsim serve` of `requests` requests (no warm-up) with the shape cache in `cache_dir`:
    its wall, its CPU and peak memory with its children's (the shapes' simulations), page faults,
    the load average before it, its shapes and iterations."""
    env = dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1", TRNSIM_CACHE_DIR=cache_dir)
    env.pop("TRNSIM_NO_CACHE", None)
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as out_dir, tempfile.TemporaryFile() as out, \
            tempfile.TemporaryFile() as err:
        cmd = [trnsim, "serve", *extra, "--set", f"run.requests={requests}", "--set",
               "run.warmup_requests=0", *sets, "--out", out_dir, "--log-level", "info"]
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(p.pid, 0)
        elapsed = time.monotonic() - t0
        code = os.waitstatus_to_exitcode(status)
        err.seek(0)
        stderr = err.read().decode()
        if code != 0:
            fail(f"trnsim serve exited with {code}: {stderr.strip()[-2000:]}")
        with open(os.path.join(out_dir, "report.json")) as f:
            report = json.load(f)
    m = SHAPES_LINE.search(stderr)
    if not m:
        fail("trnsim serve --log-level info printed no 'N shapes: S simulated, C from the shape "
             "cache' line")
    cpu = usage.ru_utime + usage.ru_stime
    return {
        "requests": requests,
        "wall_s": elapsed,
        "cpu_s": cpu,
        "user_s": usage.ru_utime,
        "system_s": usage.ru_stime,
        "cpu_ms_per_request": cpu / requests * 1e3,
        # wait4's figures: the process and the children it waited for (the shapes' simulations
        # and their calibrations); the peak is the largest single process's (Linux: KiB).
        "peak_memory_mib": usage.ru_maxrss / 1024,
        "page_faults": usage.ru_minflt + usage.ru_majflt,
        "load_average": [load, os.getloadavg()[0]],
        "shapes": int(m["shapes"]),
        "shapes_simulated": int(m["simulated"]),
        "shapes_from_cache": int(m["cached"]),
        "iterations": report["results"]["requests"]["iterations"],
        "measured": report["results"]["requests"]["measured"],
        "results": {k: report["results"][k]["p50"] for k in ("ttft_s", "tpot_s")},
    }


def serve_table(trnsim, counts, extra):
    """Each count cold, in a shape cache of its own; warm, the same cache again (the shapes read
    back, but with timing.parallel above 1 the children of the shapes ahead that the cold run did
    not finish still run); loop, warm with timing.parallel=1 (no child: the request loop, the
    report and the fixed start alone). docs/serving.md#cost-against-requests."""
    rows = []
    for n in counts:
        with tempfile.TemporaryDirectory() as cache:
            for phase, sets in (("cold", ()), ("warm", ()), ("loop", ("--set", "timing.parallel=1"))):
                rows.append({"phase": phase, **run_serve(trnsim, n, cache, extra, sets)})
    return rows


def print_serve(rows):
    print(f"{'requests':>9} {'cache':>5} {'shapes sim.':>11} {'iterations':>10} {'wall s':>8} "
          f"{'CPU s':>8} {'(user+sys)':>15} {'CPU ms/req':>10} {'peak MiB':>8} {'faults':>10} "
          f"{'load':>11}")
    for r in rows:
        us = f"({r['user_s']:.1f}+{r['system_s']:.1f})"
        load = f"{r['load_average'][0]:.1f}-{r['load_average'][1]:.1f}"
        print(f"{r['requests']:>9,} {r['phase']:>5} {r['shapes_simulated']:>11,} {r['iterations']:>10,} "
              f"{r['wall_s']:8.1f} {r['cpu_s']:8.1f} {us:>15} {r['cpu_ms_per_request']:10.3f} "
              f"{r['peak_memory_mib']:8.0f} {r['page_faults']:>10,} {load:>11}")


def comparable(report):
    """report.json without what names the binary and its command line."""
    r = json.loads(json.dumps(report))
    for key in ("command_line", "git_commit"):
        r.get("identity", {}).pop(key, None)
    # Where each binary found its bundled config and trace: paths, not content (a build of
    # another checkout, such as main's, reads that checkout's copies of the same files).
    for part in ("config", "trace"):
        r.get("identity", {}).get(part, {}).pop("files", None)
    # The calibration cache's key names the build (docs/performance.md).
    r.get("identity", {}).get("models", {}).get("compute", {}).pop("calibration_cache_key", None)
    return r


def compare_table(old, new, extra, repeat):
    """The job on `old` and `new`, alternately `repeat` times each (so both see the same load)."""
    runs = {"old": [], "new": []}
    for _ in range(repeat):
        for label, binary in (("old", old), ("new", new)):
            load = os.getloadavg()[0]
            r = run_main_job(binary, ["--log-level", "debug", *extra])
            r["load_average"] = [load, os.getloadavg()[0]]
            runs[label].append(r)
    same = all(comparable(r["report"]) == comparable(runs["old"][0]["report"])
               for rs in runs.values() for r in rs)
    for rs in runs.values():
        for r in rs:
            del r["report"]
    return {"old": old, "new": new, "runs": runs, "same_report": same}


def median(xs):
    xs = sorted(xs)
    return (xs[(len(xs) - 1) // 2] + xs[len(xs) // 2]) / 2


def print_compare(c):
    def fig(rs, f):
        vals = [f(r) for r in rs]
        return None if any(v is None for v in vals) else median(vals)
    rows = [
        ("process wall s", lambda r: r["process_wall_time_s"]),
        ("CPU user+sys s", lambda r: r["cpu_time_s"]),
        ("peak memory MiB", lambda r: r["peak_memory_mib"]),
        ("trace read s", lambda r: r["phases_s"]["read"] if r["phases_s"] else None),
        ("run s", lambda r: r["wall_time_s"]),
        ("  simulation s", lambda r: r["simulation_time_s"]),
        ("report s", lambda r: r["phases_s"]["report"] if r["phases_s"] else None),
        ("outside run s", lambda r: r["process_wall_time_s"] - r["wall_time_s"]),
        ("load average", lambda r: sum(r["load_average"]) / 2),
    ]
    n = len(c["runs"]["old"])
    print(f"old {c['old']}\nnew {c['new']}\nmedians of {n} run(s) each, alternately")
    print(f"{'':>18} {'old':>9} {'new':>9} {'new/old':>8}")
    for name, f in rows:
        o, w = fig(c["runs"]["old"], f), fig(c["runs"]["new"], f)
        cell = lambda v: f"{v:9.2f}" if v is not None else f"{'?':>9}"
        ratio = f"{w / o:8.2f}" if o and w is not None else f"{'':>8}"
        print(f"{name:>18} {cell(o)} {cell(w)} {ratio}")
    print("report.json        " + ("the same (but for identity.command_line, git_commit and the file paths)"
                                   if c["same_report"] else "DIFFERS"))


def print_runs(rows, key):
    print(f"{key:>16} {'wall s':>8} {'peak MiB':>9} {'activations':>13} {'step ms':>10} "
          f"{'wall/unit s':>12}")
    for r in rows:
        unit = r["wall_time_s"] / r.get("factor", 1)
        label = f"{r.get('axis', '')} {r.get('factor', r.get('fidelity', ''))}".strip()
        mem = f"{r['peak_memory_mib']:.0f}" if r["peak_memory_mib"] else "?"
        print(f"{label:>16} {r['wall_time_s']:8.1f} {mem:>9} {r['activations']:13,} "
              f"{r['step_time_ns'] / 1e6:10.3f} {unit:12.2f}")


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
    ap.add_argument("--fidelity", action="store_true",
                    help="run the job at sim.fidelity=fast and =detailed, side by side")
    ap.add_argument("--scaling", action="store_true",
                    help="cost for 1, 2, 4 and 8 times the layers, micro-batches and tokens per "
                         "chip of a one-layer DeepSeek-V3 step (traces made by tools/moe_gen.py)")
    ap.add_argument("--base-seq", type=int, default=256,
                    help="tokens per chip of the scaling base (default 256)")
    ap.add_argument("--compare", metavar="OLD_TRNSIM",
                    help="run the job on this binary and on --trnsim alternately; compare their "
                         "wall and CPU time, peak memory and phases, and their reports")
    ap.add_argument("--repeat", type=int, default=1,
                    help="with --compare: runs of each binary (default 1; the medians print)")
    ap.add_argument("--serve-requests", metavar="N,N,...",
                    help="cost of trnsim serve (the arguments after --: a spec and its --set's; "
                         "none: the default spec) at each request count: cold, warm and the "
                         "request loop alone")
    ap.add_argument("extra", nargs=argparse.REMAINDER,
                    help="after --: arguments passed to trnsim run (trnsim serve with "
                         "--serve-requests)")
    a = ap.parse_args()
    if not os.access(a.trnsim, os.X_OK):
        fail(f"--trnsim: {a.trnsim} is not an executable (build it: tools/build.sh release)")
    if a.kernel_processes < 1:
        fail(f"--kernel-processes: expected an integer >= 1, got {a.kernel_processes}")
    if a.kernel_activations < 1:
        fail(f"--kernel-activations: expected an integer >= 1, got {a.kernel_activations}")
    extra = a.extra[1:] if a.extra[:1] == ["--"] else a.extra
    if a.serve_requests is not None:
        try:
            counts = [int(x) for x in a.serve_requests.split(",")]
        except ValueError:
            counts = []
        if not counts or min(counts) < 1:
            fail(f"--serve-requests: expected request counts >= 1 separated by commas, got "
                 f"\"{a.serve_requests}\"")
        rows = serve_table(a.trnsim, counts, extra)
        if a.json:
            print(json.dumps(rows, indent=2, sort_keys=True))
        else:
            print_serve(rows)
        return
    if a.compare:
        if not os.access(a.compare, os.X_OK):
            fail(f"--compare: {a.compare} is not an executable")
        if a.repeat < 1:
            fail(f"--repeat: expected an integer >= 1, got {a.repeat}")
        c = compare_table(a.compare, a.trnsim, extra, a.repeat)
        if a.json:
            print(json.dumps(c, indent=2, sort_keys=True))
        else:
            print_compare(c)
        sys.exit(0 if c["same_report"] else 1)
    if a.fidelity or a.scaling:
        if a.base_seq < 1:
            fail(f"--base-seq: expected an integer >= 1, got {a.base_seq}")
        rows = (fidelity_table(a.trnsim, extra) if a.fidelity else
                scaling_table(a.trnsim, extra, a.base_seq, [1, 2, 4, 8]))
        if a.json:
            print(json.dumps(rows, indent=2, sort_keys=True))
        else:
            print_runs(rows, "fidelity" if a.fidelity else "axis factor")
        return
    run = run_main_job(a.trnsim, extra)
    del run["report"]
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
