# SPDX-License-Identifier: MIT
"""Command line of tools/moe_gen.py. Bad arguments exit with code 2 and one line naming the
argument (no traceback); nothing is written unless the whole trace was generated."""

import argparse
import os
import sys

from .build import DTYPE_BYTES, Config
from .errors import UsageError
from .model import builtin_models, load_model
from .parallel import Layout
from .routing import parse_routing
from .trace import generate, stats, to_json, write_atomic

GENERATOR = "tools/moe_gen.py"
GENERATOR_VERSION = 1


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        self.print_usage(sys.stderr)
        raise UsageError("", message)


def make_parser():
    p = _Parser(prog="moe_gen.py", description="Generate a trnsim native trace (docs/trace-"
                "format.md) of one MoE training step. See docs/moe-generator.md.")
    p.add_argument("--model", required=True,
                   help=f"bundled model ({', '.join(builtin_models())}) or a model .json path")
    p.add_argument("-o", "--output", required=True, help="trace file to write")
    p.add_argument("--name", help="trace name (default: derived from model, layers, layout)")
    p.add_argument("--ranks", type=int, help="total ranks; DP is derived when --dp is omitted")
    p.add_argument("--tp", type=int, default=1, help="tensor-parallel degree (default 1)")
    p.add_argument("--ep", type=int, default=1, help="expert-parallel degree (default 1)")
    p.add_argument("--replicas", type=int, default=1,
                   help="data-parallel copies of this layout across UltraServers (trnsim "
                        "/cluster/ultraservers): the trace is one copy, its gradient groups span "
                        "all (default 1)")
    p.add_argument("--dp", type=int, help="expert-data-parallel degree: replicas of each expert "
                   "(attention/dense parts are data-parallel over EP*DP)")
    p.add_argument("--pp", type=int, default=1, help="pipeline stages (default 1)")
    p.add_argument("--micro-batches", type=int, default=1, help="micro-batches per step (1)")
    p.add_argument("--seq-len", type=int, default=4096, help="tokens per sequence (4096)")
    p.add_argument("--global-batch", type=int,
                   help="sequences per step (default: one per micro-batch per data replica)")
    p.add_argument("--layers", type=int, help="layers to generate (default: all of the model)")
    p.add_argument("--dense-layers", type=int,
                   help="leading dense layers among them (default: the model's, capped)")
    p.add_argument("--top-k", type=int, help="override the model's experts per token")
    p.add_argument("--dtype", default="mxfp8", help="GEMM dtype (default mxfp8)")
    p.add_argument("--comm-dtype", default="bf16",
                   help="dtype of activations/gradients on the wire (default bf16)")
    p.add_argument("--routing", default="uniform",
                   help="uniform | balanced | zipf:S | file:PATH (default uniform)")
    p.add_argument("--seed", type=int, default=1, help="routing seed (default 1)")
    p.add_argument("--expert-gemms", choices=("per-expert", "grouped"), default="per-expert",
                   help="one GEMM per local expert (default) or one grouped GEMM per rank")
    p.add_argument("-q", "--quiet", action="store_true", help="no summary on stdout")
    return p


def _positive(name, value):
    if value is not None and value < 1:
        raise UsageError(name, f"expected an integer >= 1, got {value}")


def build_config(a):
    """Checks the arguments against each other and the model; returns (Config, layout)."""
    for name in ("ranks", "tp", "ep", "dp", "pp", "micro_batches", "seq_len", "global_batch",
                 "layers", "top_k", "replicas"):
        _positive("--" + name.replace("_", "-"), getattr(a, name))
    for opt, val in (("--dtype", a.dtype), ("--comm-dtype", a.comm_dtype)):
        if val not in DTYPE_BYTES:
            raise UsageError(opt, f"unknown dtype \"{val}\" (expected one of "
                                  f"{', '.join(DTYPE_BYTES)})")
    out_dir = os.path.dirname(os.path.abspath(a.output))
    if not os.path.isdir(out_dir):   # fail before spending time on generation
        raise UsageError("--output", f"directory {out_dir} does not exist")
    model = dict(load_model(a.model))
    if a.top_k is not None:
        model["top_k"] = a.top_k
    if model["top_k"] > model["experts"]:
        raise UsageError("--top-k", f"top-k {model['top_k']} exceeds the {model['experts']} "
                                    f"experts of {model['name']}")
    fixed = a.tp * a.ep * a.pp
    if a.dp is None:
        if a.ranks is None:
            raise UsageError("--ranks", "give --ranks or --dp")
        if a.ranks % fixed:
            raise UsageError("--ranks", f"{a.ranks} ranks are not divisible by TP*EP*PP = "
                                        f"{a.tp}*{a.ep}*{a.pp} = {fixed}")
        dp = a.ranks // fixed
    else:
        dp = a.dp
        if a.ranks is not None and a.ranks != fixed * dp:
            raise UsageError("--ranks", f"{a.ranks} != TP*EP*DP*PP = {fixed * dp}")
    lay = Layout(tp=a.tp, ep=a.ep, dp=dp, pp=a.pp, replicas=a.replicas)
    if model["experts"] % a.ep:
        raise UsageError("--ep", f"the {model['experts']} experts of {model['name']} are not "
                                 f"divisible by EP = {a.ep}")
    att = model["attention"]
    if att["heads"] % a.tp:
        raise UsageError("--tp", f"{att['heads']} attention heads are not divisible by TP = {a.tp}")
    if att["type"] == "gqa" and att["kv_heads"] % a.tp and a.tp % att["kv_heads"]:
        raise UsageError("--tp", f"{att['kv_heads']} kv heads and TP = {a.tp}: one must divide "
                                 "the other")
    for key in ("expert_ffn", "dense_ffn"):
        if model[key] % a.tp:
            raise UsageError("--tp", f"{key} {model[key]} is not divisible by TP = {a.tp}")
    layers = model["layers"] if a.layers is None else a.layers
    if layers > model["layers"]:
        raise UsageError("--layers", f"{layers} > the {model['layers']} layers of {model['name']}")
    if layers < a.pp:
        raise UsageError("--layers", f"{layers} layers cannot fill {a.pp} pipeline stages")
    dense = min(model["dense_layers"], layers) if a.dense_layers is None else a.dense_layers
    if dense < 0 or dense > layers:
        raise UsageError("--dense-layers", f"expected 0..{layers}, got {dense}")
    if dense and not model["dense_ffn"]:
        raise UsageError("--dense-layers", f"{model['name']} has no dense FFN width (dense_ffn 0)")
    if a.seq_len < 2:
        raise UsageError("--seq-len", f"expected an integer >= 2, got {a.seq_len}")
    replicas = a.ep * dp * a.micro_batches
    gb = replicas if a.global_batch is None else a.global_batch
    if gb % replicas:
        raise UsageError("--global-batch", f"{gb} sequences are not divisible by EP*DP*"
                                           f"micro-batches = {a.ep}*{dp}*{a.micro_batches}")
    routing = parse_routing(a.routing, model["experts"], model["top_k"])
    cfg = Config(model=model, layout=lay, seq_len=a.seq_len, seqs_per_mb=gb // replicas,
                 micro_batches=a.micro_batches, layers=layers, dense_layers=dense,
                 routing=routing, seed=a.seed, gemm_dtype=a.dtype, comm_dtype=a.comm_dtype,
                 expert_gemms=a.expert_gemms)
    if routing.kind == "file":
        for layer in range(dense, layers):
            routing.weights(layer, model["experts"], a.seed)   # fail now on a missing layer
    return cfg, gb


def metadata(cfg, gb, st):
    lay = cfg.layout
    return {
        "generator": GENERATOR, "generator_version": GENERATOR_VERSION,
        "model": cfg.model["name"],
        "parallelism": {"tp": lay.tp, "ep": lay.ep, "dp": lay.dp, "pp": lay.pp,
                        "dense_dp": lay.ep * lay.dp,
                        "rank_formula": "((pp*DP + dp)*EP + ep)*TP + tp",
                        **({"replicas": lay.replicas} if lay.replicas > 1 else {})},
        "layers": cfg.layers, "dense_layers": cfg.dense_layers,
        "seq_len": cfg.seq_len, "global_batch": gb, "micro_batches": cfg.micro_batches,
        "tokens_per_microbatch_per_replica": cfg.tokens,
        "top_k": cfg.model["top_k"], "experts": cfg.model["experts"],
        "routing": cfg.routing.describe(), "seed": cfg.seed,
        "dtypes": {"gemm": cfg.gemm_dtype, "attention": cfg.attn_dtype,
                   "router": cfg.router_dtype, "vector": cfg.vec_dtype, "comm": cfg.comm_dtype},
        "expert_gemms": cfg.expert_gemms, "schedule": "1f1b",
        "flops_convention": "2 per multiply-accumulate; attention 4*b*h*sq*skv*d, halved if causal",
        "stats": st,
    }


def run(argv):
    a = make_parser().parse_args(argv)
    cfg, gb = build_config(a)
    rank_ops, routes = generate(cfg)
    st = stats(cfg, rank_ops, routes)
    lay = cfg.layout
    name = a.name or (f"{cfg.model['name']}-{cfg.layers}layers-tp{lay.tp}ep{lay.ep}dp{lay.dp}"
                      f"pp{lay.pp}")
    try:
        write_atomic(a.output, to_json(name, metadata(cfg, gb, st), cfg, rank_ops))
    except OSError as e:
        raise UsageError("--output", f"cannot write {a.output}: {e.strerror}") from None
    if not a.quiet:
        print(f"{a.output}: {lay.ranks} ranks, ops/rank {st['ops_per_rank_min']}.."
              f"{st['ops_per_rank_max']}, {st['flops_total'] / 1e15:.3f} PFLOP total")
        for e in st["layers"]:
            extra = ""
            if e["kind"] == "moe":
                extra = (f", dispatch {e['dispatch_bytes'] / 2**20:.1f} MiB "
                         f"({e['dispatch_bytes_offrank'] / 2**20:.1f} MiB off-rank, busiest "
                         f"receiver {e['dispatch_recv_bytes_max_rank'] / 2**20:.1f} MiB vs mean "
                         f"{e['dispatch_recv_bytes_mean_rank'] / 2**20:.1f}), expert load max/mean "
                         f"{e['expert_load_max_over_mean']:.3f}, EP-rank load max/mean "
                         f"{e['ep_rank_load_max_over_mean']:.3f}")
            print(f"  layer {e['layer']} ({e['kind']}): {e['flops'] / 1e12:.2f} TFLOP{extra}")
    return 0


def main(argv=None):
    try:
        return run(sys.argv[1:] if argv is None else argv)
    except UsageError as e:
        prefix = f"argument {e.arg}: " if e.arg else ""
        print(f"moe_gen.py: error: {prefix}{e.message}", file=sys.stderr)
        return 2
