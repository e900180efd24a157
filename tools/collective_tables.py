#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Markdown tables from `trnsim bench collective --sweep --json` files (docs/results/collectives.md).

Usage: tools/collective_tables.py --title TITLE FILE...   (one file per op of one rack and K)

Prints the bus-bandwidth table (GB/s and the algorithm per size, the bound last), then the
largest size's breakdown row and the smallest size's floor row per op, as that page has them.
"""
import argparse
import json
import sys

OPS = ["all-reduce", "all-gather", "reduce-scatter", "all-to-all"]


def size_name(b):
    for unit, n in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= n and b % n == 0:
            return f"{b // n} {unit}"
    return f"{b} B"


def fail(msg):
    print(f"collective_tables.py: error: {msg}", file=sys.stderr)
    sys.exit(2)


def load(path):
    try:
        with open(path) as f:
            points = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        fail(f"{path}: cannot read a bench collective JSON file: {e}")
    if not isinstance(points, list) or not points or "op" not in points[0]:
        fail(f"{path}: expected a non-empty array of points with 'op' (bench collective --json)")
    return points


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--title", required=True, help="table title, e.g. 'trn2-instance, 64 ranks, 4 per chip'")
    ap.add_argument("--rack", default="", help="rack name for the breakdown rows")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    by_op = {}
    for path in a.files:
        pts = load(path)
        by_op[pts[0]["op"]] = {p["bytes"]: p for p in pts}
    ops = [o for o in OPS if o in by_op]
    sizes = sorted({b for pts in by_op.values() for b in pts})
    print(f"**{a.title}** (busbw GB/s, algorithm; bound = topology bound)\n")
    print("| size | " + " | ".join(ops) + " |")
    print("|---|" + "---|" * len(ops))
    for b in sizes:
        cells = []
        for o in ops:
            p = by_op[o].get(b)
            cells.append(f"{p['busbw_bytes_per_s'] / 1e9:.1f} ({p['algorithm']})" if p else "not run")
        print(f"| {size_name(b)} | " + " | ".join(cells) + " |")
    bounds = [f"{by_op[o][max(by_op[o])]['bound_busbw_bytes_per_s'] / 1e9:.0f}" for o in ops]
    print("| bound | " + " | ".join(bounds) + " |\n")
    rack = a.rack or a.title.split(",")[0]
    print("| rack | K | op | algorithm | busbw GB/s | of bound | busiest link (fraction) | launch | "
          "descr | sync | wire | reduce (us) | limit |")
    print("|---|---:|---|---|---:|---:|---|---:|---:|---:|---:|---:|---|")
    for o in ops:
        b = max(by_op[o])
        p = by_op[o][b]
        k = p["breakdown_ns"]
        print(f"| {rack} ({size_name(b)}) | {p['ranks_per_chip']} | {o} | {p['algorithm']} | "
              f"{p['busbw_bytes_per_s'] / 1e9:.1f} | "
              f"{p['busbw_bytes_per_s'] / p['bound_busbw_bytes_per_s'] * 100:.0f} % | "
              f"{p['busiest_link']} ({p['busiest_link_utilisation']:.2f}) | "
              f"{k['launch'] / 1e3:.1f} | {k['descriptor'] / 1e3:.1f} | {k['sync'] / 1e3:.1f} | "
              f"{k['wire'] / 1e3:.1f} | {k['reduction'] / 1e3:.1f} | {p['limit']} |")
    print("\n| rack | K | op | algorithm | time us | launch | descriptor | sync | wire | reduction |")
    print("|---|---:|---|---|---:|---:|---:|---:|---:|---:|")
    for o in ops:
        p = by_op[o][min(by_op[o])]
        k = p["breakdown_ns"]
        print(f"| {rack} | {p['ranks_per_chip']} | {o} | {p['algorithm']} | {p['time_ns'] / 1e3:.2f} | "
              f"{k['launch'] / 1e3:.2f} | {k['descriptor'] / 1e3:.2f} | {k['sync'] / 1e3:.2f} | "
              f"{k['wire'] / 1e3:.2f} | {k['reduction'] / 1e3:.2f} |")


if __name__ == "__main__":
    main()
