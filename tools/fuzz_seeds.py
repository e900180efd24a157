#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes small native-trace seeds for fuzz_native from the project's traces: the first ranks and
# ops of each, so that a seed is a few kB of valid JSON (a 1 MB trace cut at the fuzzer's max_len
# is never valid JSON). Usage: fuzz_seeds.py OUT_DIR TRACE.json...
import json
import os
import sys


def reduced(trace, ranks, ops):
    kept = [r for r in trace["rank_ops"] if r["rank"] < ranks]
    for r in kept:
        r["ops"] = r["ops"][:ops]
        ids = {o["id"] for o in r["ops"]}
        for o in r["ops"]:
            if "deps" in o:
                o["deps"] = [d for d in o["deps"] if d in ids]
    groups = {}
    for name, members in trace.get("groups", {}).items():
        m = [x for x in members if x < ranks]
        if m:
            groups[name] = m
    out = dict(trace, ranks=min(ranks, trace["ranks"]), rank_ops=kept, groups=groups)
    out.pop("metadata", None)
    return out


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    for path in sys.argv[2:]:
        with open(path) as f:
            trace = json.load(f)
        base = os.path.splitext(os.path.basename(path))[0]
        for ranks, ops in ((1, 4), (2, 8), (4, 16)):
            with open(os.path.join(out_dir, f"{base}-{ranks}x{ops}.json"), "w") as f:
                json.dump(reduced(json.loads(json.dumps(trace)), ranks, ops), f)


if __name__ == "__main__":
    main()
