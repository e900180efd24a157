#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Decode iterations against their memory bound and prefill chunks against their compute bound,
for the bundled models (configs/models/) on the Trn2 and Trn3 UltraServer presets, as a Markdown
table (docs/inference.md). Each point is one `trnsim bench iteration --json`; a point whose
weights or KV cache do not fit is listed as such. Standard library only.

    tools/infer_table.py [--trnsim build/release/src/cli/trnsim] [--quick]
    tools/infer_table.py --capacity     # KV tokens per chip and per replica, no simulation
"""

import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RACKS = {"trn2": "configs/racks/trn2-ultraserver.json",
         "trn3": "configs/racks/trn3-gen2-ultraserver.json"}
# model -> (layout, weights dtype): the smallest layout of this slice that holds the weights on
# both racks' chips.
MODELS = {
    "llama-3.1-8b": ("tp=1", "bf16"),
    "llama-3.1-70b": ("tp=4", "bf16"),
    "qwen3-30b-a3b": ("tp=1", "bf16"),
    "qwen3-235b-a22b": ("tp=8", "bf16"),
    "llama-4-maverick": ("tp=8", "fp8"),
    "deepseek-v3": ("dp=64,ep=64", "fp8"),
}


# model -> layouts (with their weights dtype) of the capacity table.
CAPACITY_LAYOUTS = {
    "llama-3.1-8b": [("tp=1", "bf16"), ("tp=2", "bf16")],
    "llama-3.1-70b": [("tp=2", "bf16"), ("tp=4", "bf16"), ("tp=8", "bf16"), ("tp=4", "fp8")],
    "qwen3-30b-a3b": [("tp=1", "bf16"), ("tp=2", "bf16")],
    "qwen3-235b-a22b": [("tp=4", "bf16"), ("tp=8", "bf16"), ("tp=4", "fp8")],
    "llama-4-maverick": [("tp=8", "bf16"), ("tp=8", "fp8"), ("tp=8,pp=2", "bf16")],
    "deepseek-v3": [("dp=64,ep=64", "fp8"), ("dp=128,ep=128", "fp8"), ("tp=8,pp=8", "fp8"),
                    ("dp=32,ep=32", "bf16")],
}


def capacity(trnsim, models):
    print("| model | chip | layout | weights | KV | weights GB per rank | KV GB per rank | "
          "KV bytes per token per rank | KV tokens per chip | KV tokens per replica |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for model in models:
        for layout, wdt in CAPACITY_LAYOUTS[model]:
            for rack in RACKS:
                for kv in ("bf16", "fp8"):
                    cmd = [trnsim, "bench", "iteration", "--capacity", "--json", "--config",
                           RACKS[rack], "--model", model, "--layout", layout, "--weights-dtype",
                           wdt, "--kv-dtype", kv, "--batch", "1", "--context", "1"]
                    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
                    if r.returncode != 0:
                        why = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "error"
                        why = "needs more chips" if "ranks;" in why else "does not fit"
                        print(f"| {model} | {rack} | {layout} | {wdt} | {kv} | {why} | | | | |")
                        continue
                    c = json.loads(r.stdout)["capacity"]
                    print(f"| {model} | {rack} | {layout} | {wdt} | {kv} | "
                          f"{c['weights_bytes'] / 1e9:.1f} | {c['kv_bytes'] / 1e9:.1f} | "
                          f"{c['kv_bytes_per_token']:.0f} | {c['kv_tokens_per_chip']} | "
                          f"{c['kv_tokens_per_replica']} |", flush=True)


def point(trnsim, rack, model, layout, wdt, batch, context, prefill):
    cmd = [trnsim, "bench", "iteration", "--json", "--config", RACKS[rack], "--model", model,
           "--layout", layout, "--weights-dtype", wdt, "--batch", str(batch), "--context",
           str(context), "--prefill-tokens", str(prefill)]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if r.returncode == 2:
        return None, r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "refused"
    if r.returncode != 0:
        # An internal error of one point (docs/inference.md, "Left out") is reported, not fatal.
        print(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()}", file=sys.stderr)
        return None, "error"
    return json.loads(r.stdout), None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trnsim", default=os.path.join(ROOT, "build/release/src/cli/trnsim"))
    ap.add_argument("--quick", action="store_true", help="batch 1 and 64, context 1k and 8k")
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated model names")
    ap.add_argument("--capacity", action="store_true",
                    help="the KV capacity table of each model's layouts instead (no simulation)")
    a = ap.parse_args()
    for model in a.models.split(","):
        if model not in MODELS:
            print(f"infer_table.py: error: --models: unknown model '{model}' (expected some of "
                  f"{', '.join(MODELS)})", file=sys.stderr)
            sys.exit(2)
    if a.capacity:
        capacity(a.trnsim, a.models.split(","))
        return
    batches = [1, 64] if a.quick else [1, 8, 64, 256]
    contexts = [1024, 8192] if a.quick else [1024, 8192, 32768]
    print("| model | chip | layout | kind | batch | context | time us | memory bound us | "
          "compute bound us | time / bound | bound | KV tokens per replica |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for model in a.models.split(","):
        layout, wdt = MODELS[model]
        for rack in RACKS:
            rows = [("decode", b, c, 0) for b in batches for c in contexts]
            rows += [("prefill", 0, 0, p) for p in ([2048] if a.quick else [1024, 4096])]
            for kind, b, c, p in rows:
                j, why = point(a.trnsim, rack, model, layout, wdt, b, c, p)
                if j is None:
                    what = "error (stderr)" if why == "error" else "does not fit"
                    print(f"| {model} | {rack} | {layout} {wdt} | {kind} | {b} | {c or p} | "
                          f"{what} | | | | | |")
                    continue
                bd = j["bounds"]
                ratio = j["ratio_to_bound"]
                print(f"| {model} | {rack} | {layout} {wdt} | {kind} | {b} | {c or p} | "
                      f"{j['time_ns'] / 1e3:.1f} | {bd['memory_ns'] / 1e3:.1f} | "
                      f"{bd['compute_ns'] / 1e3:.1f} | {ratio:.2f} | {j['bound_limit']} | "
                      f"{j['capacity']['kv_tokens_per_replica']} |", flush=True)


if __name__ == "__main__":
    main()
