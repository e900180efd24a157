#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What each term of `trnsim run --estimate`'s memory costs, measured (docs/configuration.md §6).

Each term is measured as a difference: two small native traces, written here, that differ in one
quantity only (ops, dependencies, op processes alive at once, collective pieces, packets,
tile-model instructions) are run on `configs/racks/trn2-instance.json` under `/usr/bin/time`,
and the difference of their peak RSS divided by the difference of the quantity is the term's cost
per unit. The fixed cost (the binary, its configuration and the rack) is the peak RSS of a run of
one delay op. Prints one line per pair; the coefficients in include/trnsim/run/estimate.hpp come
from these lines, rounded up.

    tools/estimate_terms.py [--trnsim build/release/src/cli/trnsim] [--only NAME ...]

Peak RSS does not depend on the machine's load; the runs take about two minutes together.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG = os.path.join(ROOT, "configs/racks/trn2-instance.json")


def trace(name, ranks, ops_of_rank, groups=None):
    return {"format": "trnsim-trace", "version": 1, "name": name, "ranks": ranks,
            "groups": groups or {"world": list(range(ranks))},
            "rank_ops": [{"rank": r, "ops": ops_of_rank(r)} for r in range(ranks)]}


def delays(n, deps_per_op, ranks=1):
    """n delays of 1 ns on each rank, each after the deps_per_op before it (0: all at once)."""
    return trace(f"delays-{n}-{deps_per_op}-{ranks}", ranks, lambda r: [
        {"id": i, "op": "delay", "duration": "1ns",
         "deps": list(range(max(0, i - deps_per_op), i))} for i in range(n)])


def one_rank_longer(n, first=False):
    """16 ranks of 6,250 chained delays of 1 ns, but rank 5 of n: it ends last; with `first`,
    its delays are 1 ps and the others' 100 ns: it ends first."""
    def dur(r):
        return ("1ps" if r == 5 else "100ns") if first else "1ns"
    return trace(f"delays-6250-rank5-{n}{'-first' if first else ''}", 16, lambda r: [
        {"id": i, "op": "delay", "duration": dur(r), "deps": [i - 1] if i else []}
        for i in range(n if r == 5 else 6250)])


def computes(n, chained, kind):
    """n small compute ops on one rank, chained or all ready at once."""
    def op(i):
        o = {"id": i, "op": "elementwise", "elements": 4096 + i, "dtype": "bf16"} \
            if kind == "elementwise" else \
            {"id": i, "op": "gemm", "m": 128, "k": 128, "n": 128 + i % 64, "dtype": "bf16"}
        o["deps"] = [i - 1] if chained and i else []
        return o
    return trace(f"{kind}-{n}-{'chain' if chained else 'wide'}", 1,
                 lambda r: [op(i) for i in range(n)])


def named_gemms(n):
    """n chained GEMMs of one shape on one rank, named as the bundled generator names its ops."""
    return trace(f"gemms-{n}", 1, lambda r: [
        {"id": i, "op": "gemm", "name": f"l{i // 100}.m{i % 100}.moe_expert_gemm", "m": 512,
         "k": 4096, "n": 3072, "dtype": "mxfp8", "deps": [i - 1] if i else []}
        for i in range(n)])


def all_reduces(ranks, count, mib):
    """count chained all-reduces of `mib` MiB on `ranks` ranks."""
    return trace(f"ar-{ranks}-{count}-{mib}", ranks, lambda r: [
        {"id": i, "op": "all_reduce", "group": "world", "bytes": mib << 20, "dtype": "bf16",
         "deps": [i - 1] if i else []} for i in range(count)])


def sends(count, mib):
    """count chained sends of `mib` MiB from rank 0 to rank 1."""
    return trace(f"send-{count}-{mib}", 2, lambda r: [
        {"id": i, "op": "send" if r == 0 else "recv", "peer": 1 - r, "bytes": mib << 20,
         "deps": [i - 1] if i else []} for i in range(count)])


def gemm(m, k, n):
    return trace(f"gemm-{m}-{k}-{n}", 1, lambda r: [
        {"id": 0, "op": "gemm", "m": m, "k": k, "n": n, "dtype": "bf16"}])


FAST = ["--set", "sim.fidelity=fast"]
DETAILED = ["--set", "sim.fidelity=detailed"]
# name: (what the difference counts, fidelity, trace a, trace b); each trace is made when its pair
# runs (all of them at once take seconds of CPU, minutes on a loaded machine)
PAIRS = {
    "fixed-fast": ("start-up, one delay op", FAST, None, lambda: delays(1, 0)),
    "fixed-detailed": ("start-up, one delay op", DETAILED, None, lambda: delays(1, 0)),
    "op+dep": ("ops (each with one dependency)", FAST, lambda: delays(100000, 1), lambda: delays(200000, 1)),
    "op+dep-16-ranks": ("ops on 16 ranks (each with one dependency)", FAST,
                        lambda: delays(6250, 1, 16), lambda: delays(12500, 1, 16)),
    "op-largest-rank": ("ops of a rank that ends last (each with one dependency)", FAST,
                        lambda: one_rank_longer(25000), lambda: one_rank_longer(50000)),
    "op-first-rank": ("ops of a rank that ends first (each with one dependency)", FAST,
                      lambda: one_rank_longer(25000, True), lambda: one_rank_longer(50000, True)),
    "op+dep-short": ("ops on one rank (each with one dependency)", FAST, lambda: delays(12500, 1),
                     lambda: delays(25000, 1)),
    "dep": ("dependencies", FAST, lambda: delays(100000, 1), lambda: delays(100000, 8)),
    "op+dep-named": ("named GEMMs (each with one dependency)", FAST, lambda: named_gemms(50000),
                     lambda: named_gemms(100000)),
    "process-delay": ("op processes (delay ops)", FAST, lambda: delays(4096, 1), lambda: delays(4096, 0)),
    "process-delay-detailed": ("op processes (delay ops)", DETAILED, lambda: delays(4096, 1),
                               lambda: delays(4096, 0)),
    "process-fast": ("op processes (fast compute)", FAST, lambda: computes(4096, True, "gemm"),
                     lambda: computes(4096, False, "gemm")),
    "process-detailed": ("op processes (tile-model compute)", DETAILED,
                         lambda: computes(1024, True, "elementwise"), lambda: computes(1024, False, "elementwise")),
    "pieces-fast": ("collective pieces (flow)", FAST, lambda: all_reduces(16, 20, 64),
                    lambda: all_reduces(16, 20, 256)),
    "collectives-fast": ("collective ops of 16 members (flow)", FAST, lambda: all_reduces(16, 500, 1),
                         lambda: all_reduces(16, 1000, 1)),
    "pieces-detailed": ("collective pieces (packet)", DETAILED, lambda: all_reduces(16, 4, 16),
                        lambda: all_reduces(16, 4, 64)),
    "collectives-detailed": ("collective ops of 16 members (packet)", DETAILED,
                             lambda: all_reduces(16, 4, 16), lambda: all_reduces(16, 16, 16)),
    "packets": ("packets (packet network)", DETAILED, lambda: sends(4, 64), lambda: sends(4, 512)),
    "instructions": ("tile-model instructions", DETAILED, lambda: gemm(4096, 4096, 4096),
                     lambda: gemm(8192, 4096, 8192)),
    "calibration": ("calibration of one op (fast)", FAST, lambda: delays(1, 0), lambda: gemm(4096, 2048, 4096)),
}


def estimate(trnsim, args, env):
    p = subprocess.run([trnsim] + args + ["--estimate"], cwd=ROOT, env=env, capture_output=True,
                       text=True, check=True)
    return p.stdout


def peak_rss_kb(trnsim, args, env):
    with tempfile.NamedTemporaryFile("r") as t:
        p = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", t.name, trnsim] + args +
                           ["--no-progress", "--no-cache"], cwd=ROOT, env=env,
                           capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"{args}: exit {p.returncode}: {p.stderr[-800:]}")
        return int(t.read().strip().splitlines()[-1]), p.stderr


def counts(text, stderr):
    """The quantities a pair differs in, from the estimate and the run's summary."""
    f = lambda pat, s=text: float(re.search(pat, s).group(1)) if re.search(pat, s) else 0.0
    return {"ops": f(r"\((\d+) ops on"),
            "pieces": f(r"([0-9.e+]+) collective pieces"),
            "packets": f(r"([0-9.e+]+) packets,"),
            "instructions": f(r"([0-9.e+]+) tile-model instructions"),
            "activations": f(r"(\d+) process activations", stderr),
            "op processes": f(r"(\d+) op processes at most", stderr)}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trnsim", default=os.path.join(ROOT, "build/release/src/cli/trnsim"))
    ap.add_argument("--only", nargs="*", help="measure only these pairs")
    ap.add_argument("--keep", help="write the traces into this directory")
    a = ap.parse_args()
    for name in a.only or []:
        if name not in PAIRS:
            print(f"estimate_terms.py: error: --only: unknown pair '{name}' (expected some of "
                  f"{', '.join(PAIRS)})", file=sys.stderr)
            return 2
    env = dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1")
    d = a.keep or tempfile.mkdtemp()
    os.makedirs(d, exist_ok=True)
    for name, (what, fid, ta, tb) in PAIRS.items():
        if a.only and name not in a.only:
            continue
        row = []
        for make in (ta, tb):
            if make is None:
                row.append(None)
                continue
            t = make()
            path = os.path.join(d, t["name"] + ".json")
            with open(path, "w") as f:
                json.dump(t, f)
            args = ["run", "--config", CONFIG, "--trace", path] + fid
            rss, err = peak_rss_kb(a.trnsim, args, env)
            row.append((t["name"], rss, counts(estimate(a.trnsim, args, env), err)))
        if row[0] is None:
            print(f"{name:18} {what}: {row[1][0]} peak RSS {row[1][1]} kB", flush=True)
            continue
        (na, ra, ca), (nb, rb, cb) = row
        diff = (rb - ra) * 1024
        print(f"{name:18} {what}: {na} {ra} kB -> {nb} {rb} kB, +{diff / 1e6:.2f} MB; "
              + ", ".join(f"{k} {ca[k]:.6g} -> {cb[k]:.6g}" for k in ca if ca[k] != cb[k]),
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
