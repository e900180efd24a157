#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""trnsim's wall time beside ASTRA-sim's (analytical, congestion-aware) on the same Chakra traces,
and the default `trnsim run` beside a bare SystemC loop, back to back so that the machine's speed
and load cancel in the ratios (docs/performance.md).

    tools/bench_peer.py [--trnsim build/release/src/cli/trnsim] [--astra BIN] [--reps 3]
                        [--trace NAME=PREFIX:NPUS ...] [--no-default-step] [--json]

Per trace and repetition, in this order: ASTRA-sim with the element-unit configs of
../shared/peers/astra-sim (the same work as trnsim's `--chakra-size-unit elements
--chakra-element-bytes 2 --chakra-num-ops macs`), trnsim fast with the calibration cache off
(TRNSIM_NO_CACHE=1: a first run), trnsim fast with a warm cache (a rerun or a sweep's later
point). Then the default step (`trnsim run`, cold and warm) and `trnsim bench kernel` with 100 M
activations (the issue's bare loop). Each child runs under /usr/bin/time: wall, user + system CPU
and peak RSS; medians are printed with their ratios. Start-up: trnsim's is its wall time less the
simulation it reports on stderr; ASTRA-sim's, from one extra run under strace (openat only), the
time from exec to opening the last rank's trace file.
The 16- and 144-rank traces of issue 34 come from ASTRA-sim's own generator (astra-sim/stage @
9ec6c02, `main.py --model_type moe`; docs/performance.md gives the arguments), outside the repo. Without --astra (ASTRA-sim is built by
../shared/peers/astra-sim/BUILD.sh, about 3 min at -j2) the ASTRA-sim column is the figure the
issue recorded on this machine, marked "recorded": not a same-session ratio.
Figures depend on the machine and its load: benchmark output, never test assertions.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEER = os.path.join(os.path.dirname(ROOT), "shared", "peers", "astra-sim")
DEFAULT_TRACES = ["mixtral=../shared/traces/moe-generated/mixtral_like_dp2_tp2_ep4/workload:16"]
# ASTRA-sim wall times recorded in issue 34 (element units), by trace name.
RECORDED_ASTRA_S = {"mixtral": 0.10, "deepseek16": 0.43, "qwen144": 2.76}


def timed(cmd, env=None, cwd=ROOT, finished_ranks=None):
    """Runs `cmd` under /usr/bin/time; returns wall, CPU (user + system) and peak RSS."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
        full = ["/usr/bin/time", "-f", "%e %U %S %M", "-o", tf.name] + cmd
        t0 = time.monotonic()
        p = subprocess.run(full, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
        elapsed = time.monotonic() - t0
        fields = tf.read().strip().splitlines()[-1].split()
    # ASTRA-sim at these commits can abort in its teardown (glibc "malloc_consolidate(): unaligned
    # fastbin chunk detected", on the generated 16- and 144-rank traces) after every rank has
    # printed "finished" and its statistics: the simulation is whole, so the run counts.
    torn_down = p.returncode == 134
    if finished_ranks is not None and torn_down and \
            len(re.findall(r"sys\[\d+\] finished", p.stdout + p.stderr)) >= finished_ranks:
        pass
    elif p.returncode != 0:
        sys.exit(f"bench_peer: {' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()[-1500:]}")
    wall, user, sys_, rss = float(fields[0]), float(fields[1]), float(fields[2]), int(fields[3])
    return {"wall_s": max(wall, elapsed), "cpu_s": user + sys_, "rss_mib": rss / 1024,
            "stdout": p.stdout, "stderr": p.stderr}


SIM_RE = re.compile(r"wall time ([\d.]+) s \(simulation ([\d.]+) s\)")
ASTRA_FINISHED_RE = re.compile(r"sys\[(\d+)\] finished, (\d+) cycles")


def astra_step_ms(run):
    """ASTRA-sim's simulated step: the last rank's finish (cycles of its 1 GHz clock, so ns), and
    how many ranks printed theirs."""
    fin = {int(r): int(c) for r, c in ASTRA_FINISHED_RE.findall(run["stdout"] + run["stderr"])}
    return (max(fin.values()) / 1e6 if fin else None), len(fin)


def trnsim_startup(run):
    """trnsim's time outside its simulation loop (trace reading, calibration, elaboration, the
    report): the process's wall time less the simulation it prints on stderr."""
    m = SIM_RE.search(run["stderr"])
    return run["wall_s"] - float(m.group(2)) if m else None


def astra_startup(cmd, prefix, npus):
    """ASTRA-sim prints no phase times: its start-up is taken as the time from exec to the opening
    of the last rank's trace file (its Sys objects open one trace each, in rank order, before
    the event loop starts), from strace timestamps of openat only (seccomp-filtered, so the
    other system calls run untraced). One extra run, not one of the timed repetitions."""
    with tempfile.NamedTemporaryFile("r", suffix=".strace") as tf:
        subprocess.run(["strace", "-f", "-ttt", "--seccomp-bpf", "-e", "trace=execve,openat",
                        "-o", tf.name] + cmd, cwd=ROOT, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        lines = tf.read().splitlines()
    t0 = last = None
    want = f"{os.path.basename(prefix)}.{int(npus) - 1}.et"
    for ln in lines:
        parts = ln.split(None, 2)
        if len(parts) < 3:
            continue
        t = float(parts[1])
        if t0 is None and parts[2].startswith("execve("):
            t0 = t
        if "openat(" in parts[2] and want in parts[2]:
            last = t
    return last - t0 if t0 is not None and last is not None else None


def trnsim_env(cache_dir, cold):
    env = dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1", TRNSIM_CACHE_DIR=cache_dir)
    if cold:
        env["TRNSIM_NO_CACHE"] = "1"
    return env


def median_row(runs):
    row = {k: statistics.median(r[k] for r in runs) for k in ("wall_s", "cpu_s", "rss_mib")}
    starts = [r["startup_s"] for r in runs if r.get("startup_s") is not None]
    if starts:
        row["startup_s"] = statistics.median(starts)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trnsim", default=os.path.join(ROOT, "build/release/src/cli/trnsim"))
    ap.add_argument("--astra", help="AstraSim_Analytical_Congestion_Aware (peers/astra-sim/BUILD.sh)")
    ap.add_argument("--trace", action="append", help="NAME=PREFIX:NPUS (Chakra prefix, ranks)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--kernel-activations", type=int, default=100_000_000)
    ap.add_argument("--no-default-step", action="store_true", help="only the Chakra traces")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    trnsim = os.path.abspath(a.trnsim)

    def usage(msg):
        print(f"bench_peer.py: error: {msg}", file=sys.stderr)
        sys.exit(2)
    if not os.access(trnsim, os.X_OK):
        usage(f"--trnsim: {a.trnsim} is not an executable (build the release preset)")
    if a.astra and not os.access(a.astra, os.X_OK):
        usage(f"--astra: {a.astra} is not an executable (build it: ../shared/peers/astra-sim/BUILD.sh)")
    if a.reps < 1:
        usage(f"--reps: expected an integer >= 1, got {a.reps}")
    for spec in a.trace or []:
        if "=" not in spec or ":" not in spec.split("=", 1)[1] or \
                not spec.rsplit(":", 1)[1].isdigit():
            usage(f"--trace: expected NAME=PREFIX:NPUS (a Chakra prefix and its rank count), got '{spec}'")
    cache = tempfile.mkdtemp(prefix="trnsim-bench-peer-cache-")
    rows = []
    for spec in a.trace or DEFAULT_TRACES:
        name, rest = spec.split("=", 1)
        prefix, npus = rest.rsplit(":", 1)
        prefix = os.path.abspath(os.path.join(ROOT, prefix))
        runs = {"astra": [], "fast_cold": [], "fast_warm": []}
        trn = [trnsim, "run", "--config", "configs/racks/trn3-gen2-ultraserver.json", "--trace", prefix,
               "--chakra-size-unit", "elements", "--chakra-element-bytes", "2",
               "--chakra-num-ops", "macs", "--json", "--no-progress"]
        conf = os.path.join(PEER, "configs")

        def astra_cmd(logs):
            return [os.path.abspath(a.astra), "--workload-configuration=" + prefix,
                    "--comm-group-configuration=" + prefix + ".json",
                    "--system-configuration=" + os.path.join(conf, "system_elements.json"),
                    "--network-configuration=" + os.path.join(conf, f"network_switch{npus}_elements.yml"),
                    "--remote-memory-configuration=" + os.path.join(conf, "memory.json"),
                    "--logging-folder=" + logs]
        for _ in range(a.reps):
            if a.astra:
                with tempfile.TemporaryDirectory() as logs:
                    runs["astra"].append(timed(astra_cmd(logs), finished_ranks=int(npus)))
            for k, cold in (("fast_cold", True), ("fast_warm", False)):
                r = timed(trn, trnsim_env(cache, cold=cold))
                r["startup_s"] = trnsim_startup(r)
                runs[k].append(r)
        if a.astra:
            with tempfile.TemporaryDirectory() as logs:
                start = astra_startup(astra_cmd(logs), prefix, npus)
            for r in runs["astra"]:
                r["startup_s"] = start
        row = {"trace": name, "ranks": int(npus)}
        for k, v in runs.items():
            if v:
                row[k] = median_row(v)
        # What each simulated: the step (the same in every repetition; deterministic both).
        row["trnsim_step_ms"] = json.loads(runs["fast_warm"][0]["stdout"])["performance"]["step_time_ns"] / 1e6
        if runs["astra"]:
            row["astra_step_ms"], row["astra_ranks_finished"] = astra_step_ms(runs["astra"][0])
        astra_s = row["astra"]["wall_s"] if "astra" in row else RECORDED_ASTRA_S.get(name)
        row["astra_source"] = "measured" if "astra" in row else ("recorded" if astra_s else None)
        if astra_s:
            row["astra_wall_s"] = astra_s
            for k in ("fast_cold", "fast_warm"):
                row[k]["x_astra"] = row[k]["wall_s"] / astra_s
                if "astra" in row:
                    row[k]["x_astra_rss"] = row[k]["rss_mib"] / row["astra"]["rss_mib"]
                    if row[k].get("startup_s") and row["astra"].get("startup_s"):
                        row[k]["x_astra_startup"] = row[k]["startup_s"] / row["astra"]["startup_s"]
        rows.append(row)
    step = None
    if not a.no_default_step:
        runs = {"cold": [], "warm": [], "kernel": []}
        for _ in range(a.reps):
            runs["cold"].append(timed([trnsim, "run", "--json", "--no-progress"], trnsim_env(cache, True)))
            runs["warm"].append(timed([trnsim, "run", "--json", "--no-progress"], trnsim_env(cache, False)))
            runs["kernel"].append(timed([trnsim, "bench", "kernel", "--activations",
                                         str(a.kernel_activations), "--json"], trnsim_env(cache, True)))
        step = {k: median_row(v) for k, v in runs.items()}
        rep = json.loads(runs["warm"][0]["stdout"])
        step["step_ms"] = rep["performance"]["step_time_ns"] / 1e6
        for k in ("cold", "warm"):
            step[k]["x_kernel_wall"] = step[k]["wall_s"] / step["kernel"]["wall_s"]
            step[k]["x_kernel_cpu"] = step[k]["cpu_s"] / step["kernel"]["cpu_s"]
    out = {"load_avg": os.getloadavg()[0], "reps": a.reps, "traces": rows, "default_step": step}
    if a.json:
        print(json.dumps(out, indent=2))
        return
    print(f"load average {out['load_avg']:.1f}; medians of {a.reps} back-to-back repetitions")
    print(f"{'trace':<12} {'ASTRA-sim s':>14} {'fast, no cache s':>18} {'x':>6} {'fast, cached s':>16} {'x':>6}"
          f" {'CPU s: no cache':>16} {'cached':>7}")
    for r in rows:
        astra = f"{r['astra_wall_s']:.2f}" + (" (rec.)" if r["astra_source"] == "recorded" else "") \
            if r.get("astra_wall_s") else "-"
        cold, warm = r["fast_cold"], r["fast_warm"]
        print(f"{r['trace']:<12} {astra:>14} {cold['wall_s']:>18.2f} {cold.get('x_astra', float('nan')):>6.2f}"
              f" {warm['wall_s']:>16.2f} {warm.get('x_astra', float('nan')):>6.2f}"
              f" {cold['cpu_s']:>16.2f} {warm['cpu_s']:>7.2f}")
        if "astra" in r:
            print(f"{'':<12} step simulated: ASTRA-sim {r['astra_step_ms']:.3f} ms "
                  f"({r['astra_ranks_finished']} ranks finished), trnsim fast {r['trnsim_step_ms']:.3f} ms; "
                  f"CPU s: ASTRA-sim {r['astra']['cpu_s']:.2f}")
            ast = r["astra"]
            print(f"{'':<12} start-up s: ASTRA-sim {ast.get('startup_s', float('nan')):.3f}, "
                  f"no cache {cold.get('startup_s', float('nan')):.3f} "
                  f"({cold.get('x_astra_startup', float('nan')):.1f}x), cached "
                  f"{warm.get('startup_s', float('nan')):.3f} ({warm.get('x_astra_startup', float('nan')):.1f}x); "
                  f"peak RSS MiB: ASTRA-sim {ast['rss_mib']:.0f}, no cache {cold['rss_mib']:.0f} "
                  f"({cold['x_astra_rss']:.1f}x), cached {warm['rss_mib']:.0f} ({warm['x_astra_rss']:.1f}x)")
    if step:
        k = step["kernel"]
        print(f"default step ({step['step_ms']:.3f} ms simulated) against the bare loop "
              f"({a.kernel_activations:,} activations: {k['wall_s']:.2f} s wall, {k['cpu_s']:.2f} s CPU)")
        for name in ("cold", "warm"):
            s = step[name]
            print(f"  {name:<5} {s['wall_s']:7.2f} s wall ({s['x_kernel_wall']:.2f}x), {s['cpu_s']:7.2f} s CPU "
                  f"({s['x_kernel_cpu']:.2f}x), {s['rss_mib']:.0f} MiB")


if __name__ == "__main__":
    main()
