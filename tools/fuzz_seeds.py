#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes small native-trace seeds for fuzz_native from the project's traces: the first ranks and
# ops of each, so that a seed is a few kB of valid JSON (a 1 MB trace cut at the fuzzer's max_len
# is never valid JSON). With --binary DIR, the same seeds in the native format's binary form
# (docs/trace-format.md, "Binary form") for fuzz_native_binary, encoded here independently of the
# C++ writer. Usage: fuzz_seeds.py [--binary DIR] OUT_DIR TRACE.json...
import json
import os
import re
import struct
import sys
import zlib


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


# The fields after id, op, name, deps, source_type, phase, layer, micro_batch, per kind, in the
# order of Op::visit (include/trnsim/trace/workload.hpp): (key, type, default).
_EXTRAS = [("flops", "opt_f64", None), ("tensor_bytes", "opt_u", None)]
_FIELDS = {
    "gemm": [("m", "u", 0), ("k", "u", 0), ("n", "u", 0), ("dtype", "enum", "bf16"), ("batch", "u", 1)] + _EXTRAS,
    "elementwise": [("elements", "u", 0), ("dtype", "enum", "bf16"), ("inputs", "u", 2)] + _EXTRAS,
    "activation": [("elements", "u", 0), ("dtype", "enum", "bf16")] + _EXTRAS,
    "reduction": [("elements", "u", 0), ("dtype", "enum", "bf16"), ("outputs", "u", 1)] + _EXTRAS,
    "softmax": [("elements", "u", 0), ("dtype", "enum", "bf16"), ("rows", "u", 1)] + _EXTRAS,
    "norm": [("elements", "u", 0), ("dtype", "enum", "bf16"), ("rows", "u", 1)] + _EXTRAS,
    "attention": [("batch", "u", 1), ("heads", "u", 0), ("seq_q", "u", 0), ("seq_kv", "u", 0),
                  ("head_dim", "u", 0), ("dtype", "enum", "bf16"), ("causal", "bool", False)] + _EXTRAS,
    "mem_load": [("bytes", "u", 0)],
    "mem_store": [("bytes", "u", 0)],
    "all_reduce": [("group", "str", ""), ("bytes", "u", 0), ("dtype", "enum", "bf16")],
    "reduce_scatter": [("group", "str", ""), ("bytes", "u", 0), ("dtype", "enum", "bf16")],
    "all_gather": [("group", "str", ""), ("bytes", "u", 0)],
    "all_to_all": [("group", "str", ""), ("bytes", "u", 0)],
    "all_to_all_v": [("group", "str", ""), ("send_bytes", "list_u", [])],
    "broadcast": [("group", "str", ""), ("bytes", "u", 0), ("root", "i", 0)],
    "send": [("peer", "i", 0), ("bytes", "u", 0), ("tag", "i", 0)],
    "recv": [("peer", "i", 0), ("bytes", "u", 0), ("tag", "i", 0)],
    "barrier": [("group", "str", "")],
    "delay": [("duration", "seconds", "0s")],
}
_SECONDS = {"ps": 1e-12, "ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
M64 = (1 << 64) - 1


def _varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _zigzag(v):
    return ((v << 1) ^ (v >> 63)) & M64


def _delta(a, b):
    """a - b in 64-bit two's complement, as a signed integer (the C++ writer's wrapping delta)."""
    d = (a - b) & M64
    return d - (1 << 64) if d >> 63 else d


def binary(trace):
    """The binary form of a native trace given as JSON (a seed: it need not be a valid one)."""
    strings, table = {}, []

    def sid(text):
        if text not in strings:
            strings[text] = len(table)
            table.append(text)
        return _varint(strings[text])

    def value(kind, v):
        if kind == "u":
            return _varint(v)
        if kind == "i":
            return _varint(_zigzag(v))
        if kind == "bool":
            return bytes([1 if v else 0])
        if kind in ("str", "enum"):
            return sid(v)
        if kind == "opt_f64":
            return b"\0" if v is None else b"\1" + struct.pack("<d", float(v))
        if kind == "opt_u":
            return b"\0" if v is None else b"\1" + _varint(v)
        if kind == "opt_i":
            return b"\0" if v is None else b"\1" + _varint(_zigzag(v))
        if kind == "opt_str":
            return b"\0" if v is None else b"\1" + sid(v)
        if kind == "list_u":
            return _varint(len(v)) + b"".join(_varint(x) for x in v)
        m = re.fullmatch(r"([-+0-9.eE]+)\s*(ps|ns|us|ms|s)", v)
        return struct.pack("<d", float(m.group(1)) * _SECONDS[m.group(2)])

    body = bytearray()
    body += sid(trace.get("name", ""))
    body += sid(json.dumps(trace.get("metadata", {}), sort_keys=True, separators=(",", ":")))
    body += _varint(trace["ranks"])
    groups = sorted(trace.get("groups", {}).items())
    body += _varint(len(groups))
    for name, members in groups:
        body += sid(name) + _varint(len(members)) + b"".join(_varint(m) for m in members)
    by_rank = {r["rank"]: r["ops"] for r in trace["rank_ops"]}
    for r in range(trace["ranks"]):
        ops = by_rank.get(r, [])
        body += _varint(len(ops))
        prev = M64
        for o in ops:
            body += _varint(_zigzag(_delta(o["id"], prev + 1)))
            body += sid(o["op"]) + sid(o.get("name", ""))
            deps = o.get("deps", [])
            body += _varint(len(deps)) + b"".join(_varint(_zigzag(_delta(o["id"], d))) for d in deps)
            body += value("opt_str", o.get("source_type")) + value("opt_str", o.get("phase"))
            body += value("opt_i", o.get("layer")) + value("opt_i", o.get("micro_batch"))
            for key, kind, default in _FIELDS[o["op"]]:
                body += value(kind, o.get(key, default))
            prev = o["id"]
    head = b"\x89TRNSIM\n" + _varint(1) + _varint(len(table))
    for text in table:
        raw = text.encode()
        head += _varint(len(raw)) + raw
    data = head + bytes(body)
    return data + struct.pack("<I", zlib.crc32(data) & 0xFFFFFFFF)


def main():
    args = sys.argv[1:]
    binary_dir = None
    if args and args[0] == "--binary":
        binary_dir, args = args[1], args[2:]
        os.makedirs(binary_dir, exist_ok=True)
    out_dir = args[0]
    os.makedirs(out_dir, exist_ok=True)
    for path in args[1:]:
        with open(path) as f:
            trace = json.load(f)
        base = os.path.splitext(os.path.basename(path))[0]
        for ranks, ops in ((1, 4), (2, 8), (4, 16)):
            seed = reduced(json.loads(json.dumps(trace)), ranks, ops)
            with open(os.path.join(out_dir, f"{base}-{ranks}x{ops}.json"), "w") as f:
                json.dump(seed, f)
            if binary_dir:
                with open(os.path.join(binary_dir, f"{base}-{ranks}x{ops}.trnb"), "wb") as f:
                    f.write(binary(seed))


if __name__ == "__main__":
    main()
