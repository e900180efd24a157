# SPDX-License-Identifier: MIT
"""Whole-trace assembly, statistics and deterministic, atomic serialisation."""

import json
import os
import re
import tempfile

from .build import RankBuilder, Routes, op_flops

FORMAT = "trnsim-trace"
VERSION = 1
_LAYER = re.compile(r"^l(\d+)\.")


def generate(cfg):
    """Returns (rank_ops list, routes) for every rank of the layout."""
    routes = Routes(cfg)
    rank_ops = [RankBuilder(cfg, routes, r).build() for r in range(cfg.layout.ranks)]
    return rank_ops, routes


def stats(cfg, rank_ops, routes):
    """Figures for metadata and the summary: FLOPs, all-to-all bytes and load imbalance."""
    lay, m = cfg.layout, cfg.model
    flops_layer = {}
    a2a_layer = {}
    groups = lay.groups()
    for rank, ops in enumerate(rank_ops):
        for op in ops:
            mt = _LAYER.match(op.get("name", ""))
            if not mt:
                continue
            layer = int(mt.group(1))
            flops_layer[layer] = flops_layer.get(layer, 0) + op_flops(op)
            if op["op"] == "all_to_all_v" and op["name"].endswith(".dispatch"):
                members = groups[op["group"]]
                me = members.index(rank)
                tot, off, recv = a2a_layer.setdefault(layer, [0, 0, {}])
                a2a_layer[layer][0] += sum(op["send_bytes"])
                a2a_layer[layer][1] += sum(b for i, b in enumerate(op["send_bytes"]) if i != me)
                for i, b in enumerate(op["send_bytes"]):
                    if i != me:
                        recv[members[i]] = recv.get(members[i], 0) + b
    epm = m["experts"] // lay.ep
    layers = []
    for layer in range(cfg.layers):
        entry = {"layer": layer, "kind": "moe" if cfg.is_moe(layer) else "dense",
                 "flops": flops_layer.get(layer, 0)}
        if cfg.is_moe(layer):
            worst_e = worst_r = 0.0
            for mb in range(cfg.micro_batches):
                for dp in range(lay.dp):
                    load = [0] * m["experts"]
                    for ep in range(lay.ep):
                        for e, n in enumerate(routes.counts(layer, mb, dp, ep)):
                            load[e] += n
                    mean = sum(load) / len(load)
                    worst_e = max(worst_e, max(load) / mean)
                    per_rank = [sum(load[i * epm:(i + 1) * epm]) for i in range(lay.ep)]
                    worst_r = max(worst_r, max(per_rank) / (sum(per_rank) / lay.ep))
            tot, off, recv = a2a_layer.get(layer, [0, 0, {}])
            entry["dispatch_bytes"] = tot          # all ranks, all micro-batches, incl. to self
            entry["dispatch_bytes_offrank"] = off  # the part that crosses the fabric
            # The most loaded receiver (summed over micro-batches) vs the mean receiver.
            entry["dispatch_recv_bytes_max_rank"] = max(recv.values(), default=0)
            entry["dispatch_recv_bytes_mean_rank"] = off // lay.ranks
            entry["expert_load_max_over_mean"] = round(worst_e, 4)
            entry["ep_rank_load_max_over_mean"] = round(worst_r, 4)
        layers.append(entry)
    counts = [len(ops) for ops in rank_ops]
    per_rank_flops = [sum(op_flops(op) for op in ops) for ops in rank_ops]
    return {
        "ops_total": sum(counts), "ops_per_rank_min": min(counts), "ops_per_rank_max": max(counts),
        "flops_total": sum(per_rank_flops), "flops_per_rank_max": max(per_rank_flops),
        "flops_per_rank_min": min(per_rank_flops), "layers": layers,
    }


def to_json(name, metadata, cfg, rank_ops):
    """The trace text: fixed key order, one op per line, no timestamps."""
    dump = lambda x: json.dumps(x, separators=(",", ":"))   # noqa: E731
    out = ["{", f'"format":{dump(FORMAT)},', f'"version":{VERSION},', f'"name":{dump(name)},',
           '"metadata":' + json.dumps(metadata, sort_keys=True, separators=(",", ":")) + ",",
           f'"ranks":{cfg.layout.ranks},', '"groups":{']
    groups = cfg.layout.groups()
    out.append(",\n".join(f"{dump(g)}:{dump(members)}" for g, members in groups.items()))
    out.append("},")
    out.append('"rank_ops":[')
    blocks = []
    for rank, ops in enumerate(rank_ops):
        blocks.append(f'{{"rank":{rank},"ops":[\n' + ",\n".join(dump(op) for op in ops) + "]}")
    out.append(",\n".join(blocks))
    out.append("]}")
    return "\n".join(out) + "\n"


def write_atomic(path, text):
    """Write via a temporary file in the same directory and os.replace, so an interrupted or
    failed run never leaves a partial trace behind."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".moe_gen.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o644)   # mkstemp makes 0600; a trace is an ordinary shared file
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
