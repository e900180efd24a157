# SPDX-License-Identifier: MIT
"""An independent checker of docs/trace-format.md rules, used by the tests (not by the generator)."""

import collections

COLLECTIVES = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "all_to_all_v",
               "broadcast", "barrier"}
DTYPES = {"fp32", "bf16", "fp16", "fp8", "mxfp8", "mxfp4"}
# op -> (required fields, optional fields), besides id/op/name/deps.
FIELDS = {
    "gemm": ({"m", "k", "n", "dtype"}, {"batch"}),
    "elementwise": ({"elements", "dtype"}, {"inputs"}),
    "activation": ({"elements", "dtype"}, set()),
    "reduction": ({"elements", "dtype"}, {"outputs"}),
    "softmax": ({"elements", "dtype"}, {"rows"}),
    "norm": ({"elements", "dtype"}, {"rows"}),
    "attention": ({"batch", "heads", "seq_q", "seq_kv", "head_dim", "dtype"}, {"causal"}),
    "mem_load": ({"bytes"}, set()),
    "mem_store": ({"bytes"}, set()),
    "all_reduce": ({"group", "bytes"}, {"dtype"}),
    "all_gather": ({"group", "bytes"}, set()),
    "reduce_scatter": ({"group", "bytes"}, {"dtype"}),
    "all_to_all": ({"group", "bytes"}, set()),
    "all_to_all_v": ({"group", "send_bytes"}, set()),
    "broadcast": ({"group", "bytes", "root"}, set()),
    "send": ({"peer", "bytes"}, {"tag"}),
    "recv": ({"peer", "bytes"}, {"tag"}),
    "barrier": ({"group"}, set()),
    "delay": ({"duration"}, set()),
}


def check_trace(t):
    """Returns a list of problems (empty when the trace follows the format)."""
    errs = []
    top = {"format", "version", "name", "metadata", "ranks", "groups", "rank_ops"}
    if set(t) - top:
        errs.append(f"unknown top-level keys {sorted(set(t) - top)}")
    if t.get("format") != "trnsim-trace" or t.get("version") != 1:
        errs.append("bad format/version")
    n = t["ranks"]
    if sorted(r["rank"] for r in t["rank_ops"]) != list(range(n)):
        errs.append("rank_ops must have one entry per rank")
    for g, members in t["groups"].items():
        if len(set(members)) != len(members) or any(not 0 <= r < n for r in members):
            errs.append(f"group {g}: bad members")
    seqs = collections.defaultdict(dict)     # group -> rank -> [signature]
    p2p = collections.defaultdict(list)      # (src, dst, tag, kind) -> [bytes]
    for entry in t["rank_ops"]:
        r = entry["rank"]
        if set(entry) != {"rank", "ops"}:
            errs.append(f"rank {r}: keys {sorted(entry)}")
        seen = set()
        for op in entry["ops"]:
            kind = op.get("op")
            if kind not in FIELDS:
                errs.append(f"rank {r} op {op.get('id')}: unknown op {kind}")
                continue
            req, opt = FIELDS[kind]
            keys = set(op) - {"id", "op", "name", "deps"}
            if not req <= keys or keys - req - opt:
                errs.append(f"rank {r} op {op['id']} ({kind}): fields {sorted(keys)}")
            if "dtype" in op and op["dtype"] not in DTYPES:
                errs.append(f"rank {r} op {op['id']}: dtype {op['dtype']}")
            for f in ("m", "k", "n", "elements", "batch", "heads", "seq_q", "seq_kv", "head_dim"):
                if f in op and (not isinstance(op[f], int) or op[f] < 1):
                    errs.append(f"rank {r} op {op['id']}: {f}={op[f]}")
            if op["id"] in seen:
                errs.append(f"rank {r}: duplicate id {op['id']}")
            for d in op.get("deps", []):
                if d not in seen:   # deps precede: no missing ids, no cycles
                    errs.append(f"rank {r} op {op['id']}: dep {d} not an earlier op")
            seen.add(op["id"])
            if kind in COLLECTIVES:
                members = t["groups"].get(op["group"])
                if members is None or r not in members:
                    errs.append(f"rank {r} op {op['id']}: not a member of {op['group']}")
                    continue
                if kind == "all_to_all_v" and len(op["send_bytes"]) != len(members):
                    errs.append(f"rank {r} op {op['id']}: send_bytes length")
                sig = (kind, op.get("bytes"), len(op.get("send_bytes", [])), op.get("root"))
                seqs[op["group"]].setdefault(r, []).append(sig)
            elif kind in ("send", "recv"):
                src, dst = (r, op["peer"]) if kind == "send" else (op["peer"], r)
                p2p[(src, dst, op.get("tag", 0), kind)].append(op["bytes"])
    for g, per_rank in seqs.items():
        members = t["groups"][g]
        ref = per_rank.get(members[0], [])
        for r in members:
            if per_rank.get(r, []) != ref:
                errs.append(f"group {g}: rank {r} issues a different collective sequence")
    for (src, dst, tag, kind), sizes in p2p.items():
        other = p2p.get((src, dst, tag, "recv" if kind == "send" else "send"))
        if other != sizes:
            errs.append(f"{kind} {src}->{dst} tag {tag}: unmatched")
    return errs


def check_progress(t):
    """Replays the dependency graph without time: an op completes when its deps have completed;
    a collective when every member's op with the same index on that group is ready; a send/recv
    pair when both are ready. Returns the ops that never complete (empty = no deadlock)."""
    ops = {e["rank"]: e["ops"] for e in t["rank_ops"]}
    by_id = {r: {o["id"]: o for o in lst} for r, lst in ops.items()}
    done = {r: set() for r in ops}
    index = {}                      # (rank, id) -> (group, k) or p2p key
    slots = collections.defaultdict(dict)   # (group, k) -> {rank: id}
    p2p_count = collections.Counter()
    for r, lst in ops.items():
        per_group = collections.Counter()
        for op in lst:
            if op["op"] in COLLECTIVES:
                k = per_group[op["group"]]
                per_group[op["group"]] += 1
                index[(r, op["id"])] = ("coll", op["group"], k)
                slots[(op["group"], k)][r] = op["id"]
            elif op["op"] in ("send", "recv"):
                src, dst = (r, op["peer"]) if op["op"] == "send" else (op["peer"], r)
                key = (src, dst, op.get("tag", 0), op["op"])
                index[(r, op["id"])] = ("p2p", key, p2p_count[key])
                p2p_count[key] += 1
    p2p_ops = {}
    for (r, oid), v in index.items():
        if v[0] == "p2p":
            p2p_ops[(v[1], v[2])] = (r, oid)

    def ready(r, op):
        return all(d in done[r] for d in op.get("deps", []))

    progress = True
    while progress:
        progress = False
        for r, lst in ops.items():
            for op in lst:
                if op["id"] in done[r] or not ready(r, op):
                    continue
                tag = index.get((r, op["id"]))
                if tag is None:
                    done[r].add(op["id"])
                    progress = True
                elif tag[0] == "coll":
                    members = slots[(tag[1], tag[2])]
                    byr = {m: by_id[m][i] for m, i in members.items()}
                    if len(members) == len(t["groups"][tag[1]]) and all(
                            ready(m, o) for m, o in byr.items()):
                        for m, i in members.items():
                            done[m].add(i)
                        progress = True
                else:
                    src, dst, tg, kind = tag[1]
                    other = p2p_ops.get(((src, dst, tg, "recv" if kind == "send" else "send"),
                                         tag[2]))
                    if other:
                        orank, oid = other
                        oop = by_id[orank][oid]
                        if ready(orank, oop):
                            done[r].add(op["id"])
                            done[orank].add(oid)
                            progress = True
    return [(r, op["id"]) for r, lst in ops.items() for op in lst if op["id"] not in done[r]]
