# SPDX-License-Identifier: MIT
"""Per-rank op lists of one training step (forward, backward, gradient sync) of an MoE model."""

from dataclasses import dataclass, field

from .model import shared_ffn
from .parallel import Layout
from .routing import draw_counts

DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "mxfp8": 1, "mxfp4": 1}


@dataclass
class Config:
    model: dict
    layout: Layout
    seq_len: int
    seqs_per_mb: int        # sequences per micro-batch per data replica
    micro_batches: int
    layers: int             # layers generated (first `dense_layers` of them dense)
    dense_layers: int
    routing: object
    seed: int
    gemm_dtype: str = "mxfp8"
    attn_dtype: str = "bf16"     # attention core (QK^T, softmax, PV)
    router_dtype: str = "bf16"   # gating GEMM, kept in high precision as in DeepSeek-V3 FP8 training
    vec_dtype: str = "bf16"      # norms, activations, residuals, permutes
    comm_dtype: str = "bf16"     # activations and gradients on the wire
    expert_gemms: str = "per-expert"   # or "grouped": one GEMM over all local experts

    @property
    def tokens(self):
        """Tokens of one micro-batch of one data replica."""
        return self.seq_len * self.seqs_per_mb

    def stage_layers(self, pp):
        """Contiguous layer range of pipeline stage pp (earlier stages take the remainder)."""
        base, extra = divmod(self.layers, self.layout.pp)
        start = pp * base + min(pp, extra)
        return range(start, start + base + (1 if pp < extra else 0))

    def is_moe(self, layer):
        return layer >= self.dense_layers


def op_flops(op):
    """FLOPs (2 per multiply-accumulate) of GEMM-like ops; 0 for everything else.
    attention: QK^T and PV, 4*b*h*sq*skv*d, halved when causal."""
    if op["op"] == "gemm":
        return 2 * op["m"] * op["k"] * op["n"] * op.get("batch", 1)
    if op["op"] == "attention":
        f = 4 * op["batch"] * op["heads"] * op["seq_q"] * op["seq_kv"] * op["head_dim"]
        return f // 2 if op.get("causal") else f
    return 0


class Routes:
    """Memoised per-replica expert counts: (layer, mb, dp, ep) -> [tokens per expert]."""

    def __init__(self, cfg):
        self.cfg = cfg
        self._memo = {}

    def counts(self, layer, mb, dp, ep):
        key = (layer, mb, dp, ep)
        if key not in self._memo:
            m = self.cfg.model
            self._memo[key] = draw_counts(self.cfg.routing, self.cfg.seed, layer, mb, dp, ep,
                                          self.cfg.tokens, m["experts"], m["top_k"])
        return self._memo[key]


def _flatten(deps):
    """Dependency arguments may mix ids, None (an op that was not needed) and lists of ids."""
    for x in deps:
        if isinstance(x, list):
            yield from _flatten(x)
        elif x is not None:
            yield x


@dataclass
class RankOps:
    rank: int
    ops: list = field(default_factory=list)

    def add(self, kind, name, deps=(), **fields):
        op = {"id": len(self.ops), "name": name, "op": kind}
        op.update(fields)
        d = sorted(set(_flatten(deps)))
        if d:
            op["deps"] = d
        self.ops.append(op)
        return op["id"]


class RankBuilder:
    """Builds the ops of one rank. Ids are list positions, and every op's deps precede it, so
    the list order is a valid issue order; all members of a group emit their collectives on it in
    the same order because they run the same layer/micro-batch structure."""

    def __init__(self, cfg, routes, rank):
        self.cfg = cfg
        self.routes = routes
        self.lay = cfg.layout
        self.c = self.lay.coord(rank)
        self.r = RankOps(rank)
        self.m = cfg.model
        self.h = self.m["hidden"]
        self.T = cfg.tokens
        self.cb = DTYPE_BYTES[cfg.comm_dtype]
        self.last_wgrad = {}      # (layer, weight) -> id of the previous micro-batch's wgrad
        self.final_wgrads = {}    # (layer, "dense"|"expert") -> wgrad ids of the last micro-batch
        self.last_coll = {}       # group -> id of the previous gradient-sync collective on it
        self.mb = 0

    # -- small helpers -----------------------------------------------------------------------
    def nm(self, layer, what):
        return f"l{layer}.m{self.mb}.{what}"

    def gemm(self, name, deps, m, k, n, dtype=None, batch=1):
        f = {"m": m, "k": k, "n": n, "dtype": dtype or self.cfg.gemm_dtype}
        if batch != 1:
            f["batch"] = batch
        return self.r.add("gemm", name, deps, **f)

    def vec(self, kind, name, deps, elements, **extra):
        return self.r.add(kind, name, deps, elements=elements, dtype=self.cfg.vec_dtype, **extra)

    def tp_all_reduce(self, name, deps):
        if self.lay.tp == 1:
            return None
        return self.r.add("all_reduce", name, deps, group=self.lay.tp_group(self.c),
                          bytes=self.T * self.h * self.cb, dtype=self.cfg.comm_dtype)

    def linear_fwd(self, layer, w, deps, k, n, dtype=None):
        return self.gemm(self.nm(layer, w), deps, self.T, k, n, dtype)

    def linear_bwd(self, layer, w, g, k, n, cls, dtype=None, m=None):
        """dgrad dX[m,k] = dY[m,n] W^T and wgrad dW[k,n] = X^T dY; returns the dgrad id.
        The wgrad accumulates into the previous micro-batch's gradient (a true dependency)."""
        m = self.T if m is None else m
        dg = self.gemm(self.nm(layer, w + ".dgrad"), [g], m, n, k, dtype)
        key = (layer, w)
        wg = self.gemm(self.nm(layer, w + ".wgrad"), [g, self.last_wgrad.get(key)], k, m, n, dtype)
        self.last_wgrad[key] = wg
        if self.mb == self.cfg.micro_batches - 1:
            self.final_wgrads.setdefault((layer, cls), []).append(wg)
        return dg

    # -- attention ---------------------------------------------------------------------------
    def attn_shape(self):
        a, tp = self.m["attention"], self.lay.tp
        hl = a["heads"] // tp
        if a["type"] == "gqa":
            return hl, a["head_dim"]
        # MLA: QK^T uses nope+rope dims, PV uses v dims; the mean gives both GEMMs' FLOPs.
        return hl, (a["qk_nope_head_dim"] + a["qk_rope_head_dim"] + a["v_head_dim"]) // 2

    def attn_op(self, name, deps):
        hl, d = self.attn_shape()
        return self.r.add("attention", name, deps, batch=self.cfg.seqs_per_mb, heads=hl,
                          seq_q=self.cfg.seq_len, seq_kv=self.cfg.seq_len, head_dim=d,
                          dtype=self.cfg.attn_dtype, causal=True)

    def proj_list(self):
        """(weight, in, out, input weight or None) of the attention projections on this rank."""
        a, h, tp = self.m["attention"], self.h, self.lay.tp
        hl = a["heads"] // tp
        if a["type"] == "gqa":
            kvl = max(1, a["kv_heads"] // tp)   # kv heads are replicated when kv_heads < TP
            return [("qkv", h, (hl + 2 * kvl) * a["head_dim"])], ("o", hl * a["head_dim"], h)
        qk = a["qk_nope_head_dim"] + a["qk_rope_head_dim"]
        return ([("q_a", h, a["q_lora_rank"]), ("q_b", a["q_lora_rank"], hl * qk),
                 ("kv_a", h, a["kv_lora_rank"] + a["qk_rope_head_dim"]),
                 ("kv_b", a["kv_lora_rank"], hl * (a["qk_nope_head_dim"] + a["v_head_dim"]))],
                ("o", hl * a["v_head_dim"], h))

    def attention_fwd(self, layer, x):
        T, h = self.T, self.h
        n1 = self.vec("norm", self.nm(layer, "attn_norm"), x, T * h, rows=T)
        projs, (ow, oin, oout) = self.proj_list()
        a = self.m["attention"]
        if a["type"] == "gqa":
            qkv = [self.linear_fwd(layer, "qkv", [n1], projs[0][1], projs[0][2])]
        else:
            qa = self.linear_fwd(layer, "q_a", [n1], projs[0][1], projs[0][2])
            qn = self.vec("norm", self.nm(layer, "q_norm"), [qa], T * a["q_lora_rank"], rows=T)
            qb = self.linear_fwd(layer, "q_b", [qn], projs[1][1], projs[1][2])
            kva = self.linear_fwd(layer, "kv_a", [n1], projs[2][1], projs[2][2])
            kvn = self.vec("norm", self.nm(layer, "kv_norm"), [kva], T * a["kv_lora_rank"], rows=T)
            kvb = self.linear_fwd(layer, "kv_b", [kvn], projs[3][1], projs[3][2])
            qkv = [qb, kvb]
        att = self.attn_op(self.nm(layer, "attn"), qkv)
        o = self.linear_fwd(layer, ow, [att], oin, oout)
        ar = self.tp_all_reduce(self.nm(layer, "attn_ar"), [o])
        return self.vec("elementwise", self.nm(layer, "attn_residual"), [ar or o] + x, T * h,
                        inputs=2)

    def attention_bwd(self, layer, g):
        T, h = self.T, self.h
        projs, (ow, oin, oout) = self.proj_list()
        a = self.m["attention"]
        do = self.linear_bwd(layer, ow, g, oin, oout, "dense")
        hl, d = self.attn_shape()
        # Flash-attention backward: recompute QK^T/softmax (the attention op, whose second GEMM
        # stands for dV), then dP, dQ, dK as one batched GEMM (causal: half of the kv length).
        rec = self.attn_op(self.nm(layer, "attn.bwd"), [do])
        s = self.cfg.seq_len
        grads = self.gemm(self.nm(layer, "attn.bwd.dqk"), [rec], s, d, s // 2, self.cfg.attn_dtype,
                          batch=3 * self.cfg.seqs_per_mb * hl)
        if a["type"] == "gqa":
            dx = [self.linear_bwd(layer, "qkv", grads, projs[0][1], projs[0][2], "dense")]
        else:
            qb = self.linear_bwd(layer, "q_b", grads, projs[1][1], projs[1][2], "dense")
            qn = self.vec("norm", self.nm(layer, "q_norm.bwd"), [qb], T * a["q_lora_rank"], rows=T)
            qa = self.linear_bwd(layer, "q_a", qn, projs[0][1], projs[0][2], "dense")
            kvb = self.linear_bwd(layer, "kv_b", grads, projs[3][1], projs[3][2], "dense")
            kvn = self.vec("norm", self.nm(layer, "kv_norm.bwd"), [kvb], T * a["kv_lora_rank"],
                           rows=T)
            kva = self.linear_bwd(layer, "kv_a", kvn, projs[2][1], projs[2][2], "dense")
            # The second dgrad accumulates into the first's output (GEMM beta = 1): no extra op.
            dx = [qa, kva]
        ar = self.tp_all_reduce(self.nm(layer, "attn_ar.bwd"), dx)
        n1 = self.vec("norm", self.nm(layer, "attn_norm.bwd"), [ar] if ar is not None else dx,
                      T * h, rows=T)
        return self.vec("elementwise", self.nm(layer, "attn_residual.bwd"), [n1, g], T * h,
                        inputs=2)

    def attention_params(self):
        projs, (_, oin, oout) = self.proj_list()
        p = sum(i * o for _, i, o in projs) + oin * oout + self.h
        a = self.m["attention"]
        if a["type"] == "mla":
            p += a["q_lora_rank"] + a["kv_lora_rank"]
        return p

    # -- feed-forward ------------------------------------------------------------------------
    def dense_ffn_fwd(self, layer, x):
        T, h, fl = self.T, self.h, self.m["dense_ffn"] // self.lay.tp
        n2 = self.vec("norm", self.nm(layer, "ffn_norm"), x, T * h, rows=T)
        gu = self.linear_fwd(layer, "ffn_gate_up", [n2], h, 2 * fl)
        act = self.vec("activation", self.nm(layer, "ffn_act"), [gu], T * fl)
        dn = self.linear_fwd(layer, "ffn_down", [act], fl, h)
        ar = self.tp_all_reduce(self.nm(layer, "ffn_ar"), [dn])
        return self.vec("elementwise", self.nm(layer, "ffn_residual"), [ar or dn] + x, T * h,
                        inputs=2)

    def dense_ffn_bwd(self, layer, g):
        T, h, fl = self.T, self.h, self.m["dense_ffn"] // self.lay.tp
        dn = self.linear_bwd(layer, "ffn_down", g, fl, h, "dense")
        act = self.vec("activation", self.nm(layer, "ffn_act.bwd"), [dn], T * fl)
        gu = self.linear_bwd(layer, "ffn_gate_up", act, h, 2 * fl, "dense")
        ar = self.tp_all_reduce(self.nm(layer, "ffn_ar.bwd"), [gu])
        n2 = self.vec("norm", self.nm(layer, "ffn_norm.bwd"), [ar or gu], T * h, rows=T)
        return self.vec("elementwise", self.nm(layer, "ffn_residual.bwd"), [n2, g], T * h,
                        inputs=2)

    # -- MoE ---------------------------------------------------------------------------------
    def experts_per_member(self):
        return self.m["experts"] // self.lay.ep

    def local_experts(self):
        e0 = self.c.ep * self.experts_per_member()
        return range(e0, e0 + self.experts_per_member())

    def moe_sizes(self, layer):
        """(dispatch send_bytes, combine send_bytes, tokens per local expert) for this rank."""
        c, epm, ep = self.c, self.experts_per_member(), self.lay.ep
        own = self.routes.counts(layer, self.mb, c.dp, c.ep)
        per_member = [self.routes.counts(layer, self.mb, c.dp, j) for j in range(ep)]
        local = self.local_experts()
        unit = self.h * self.cb
        dispatch = [sum(own[i * epm:(i + 1) * epm]) * unit for i in range(ep)]
        combine = [sum(per_member[j][e] for e in local) * unit for j in range(ep)]
        tokens = [sum(per_member[j][e] for j in range(ep)) for e in local]
        return dispatch, combine, tokens

    def expert_groups(self, tokens):
        """(label, m) of the expert GEMM groups: one per local expert that received tokens, or
        one grouped GEMM over all of them."""
        local = self.local_experts()
        if self.cfg.expert_gemms == "grouped":
            total = sum(tokens)
            return [("experts", total)] if total else []
        return [(f"e{e}", t) for e, t in zip(local, tokens) if t]

    def a2a(self, name, deps, send):
        if self.lay.ep == 1:
            return None
        return self.r.add("all_to_all_v", name, deps, group=self.lay.ep_group(self.c),
                          send_bytes=send)

    def moe_fwd(self, layer, x):
        T, h, E, k = self.T, self.h, self.m["experts"], self.m["top_k"]
        wl = self.m["expert_ffn"] // self.lay.tp
        dispatch, combine, tokens = self.moe_sizes(layer)
        n2 = self.vec("norm", self.nm(layer, "moe_norm"), x, T * h, rows=T)
        rt = self.linear_fwd(layer, "router", [n2], h, E, self.cfg.router_dtype)
        sm = self.vec("softmax", self.nm(layer, "router_softmax"), [rt], T * E, rows=T)
        tk = self.vec("reduction", self.nm(layer, "router_topk"), [sm], T * E, outputs=T * k)
        perm = self.vec("elementwise", self.nm(layer, "permute"), [tk, n2], T * k * h, inputs=1)
        disp = self.a2a(self.nm(layer, "dispatch"), [perm], dispatch)
        outs = []
        for label, mt in self.expert_groups(tokens):
            gu = self.gemm(self.nm(layer, f"{label}.gate_up"), [disp or perm], mt, h, 2 * wl)
            act = self.vec("activation", self.nm(layer, f"{label}.act"), [gu], mt * wl)
            outs.append(self.gemm(self.nm(layer, f"{label}.down"), [act], mt, wl, h))
        comb = self.a2a(self.nm(layer, "combine"), outs or [disp or perm], combine)
        shared = None
        ws = shared_ffn(self.m) // self.lay.tp
        if ws:
            # Independent of the all-to-alls, so it can overlap them.
            sgu = self.linear_fwd(layer, "shared_gate_up", [n2], h, 2 * ws)
            sact = self.vec("activation", self.nm(layer, "shared_act"), [sgu], T * ws)
            shared = self.linear_fwd(layer, "shared_down", [sact], ws, h)
        # Weighted sum of each token's k expert outputs, accumulated onto the shared expert's.
        tail = [self.vec("reduction", self.nm(layer, "unpermute"), [comb, shared] + outs,
                         T * k * h, outputs=T * h)]
        ar = self.tp_all_reduce(self.nm(layer, "moe_ar"), tail)
        return self.vec("elementwise", self.nm(layer, "moe_residual"), [ar] + tail + x, T * h,
                        inputs=2)

    def moe_bwd(self, layer, g):
        T, h, E, k = self.T, self.h, self.m["experts"], self.m["top_k"]
        wl = self.m["expert_ffn"] // self.lay.tp
        dispatch, combine, tokens = self.moe_sizes(layer)
        sums = []
        ws = shared_ffn(self.m) // self.lay.tp
        if ws:
            sdn = self.linear_bwd(layer, "shared_down", g, ws, h, "dense")
            sact = self.vec("activation", self.nm(layer, "shared_act.bwd"), [sdn], T * ws)
            sums.append(self.linear_bwd(layer, "shared_gate_up", sact, h, 2 * ws, "dense"))
        # Gradients of the expert outputs travel like the dispatch, those of the expert inputs
        # like the combine: the all-to-alls of the forward pass, reversed.
        unperm = self.vec("elementwise", self.nm(layer, "unpermute.bwd"), [g], T * k * h,
                          inputs=1)
        cb = self.a2a(self.nm(layer, "combine.bwd"), [unperm], dispatch)
        dins = []
        for label, mt in self.expert_groups(tokens):
            dn = self.linear_bwd(layer, f"{label}.down", cb or unperm, wl, h, "expert", m=mt)
            act = self.vec("activation", self.nm(layer, f"{label}.act.bwd"), [dn], mt * wl)
            dins.append(self.linear_bwd(layer, f"{label}.gate_up", act, h, 2 * wl, "expert",
                                        m=mt))
        db = self.a2a(self.nm(layer, "dispatch.bwd"), dins or [cb or unperm], combine)
        perm = self.vec("reduction", self.nm(layer, "permute.bwd"), [db] + dins, T * k * h,
                        outputs=T * h)
        smb = self.vec("elementwise", self.nm(layer, "router_softmax.bwd"), [unperm], T * E,
                       inputs=2)
        sums.append(self.linear_bwd(layer, "router", smb, h, E, "dense", self.cfg.router_dtype))
        # Router and shared-expert dgrads accumulate into one buffer (GEMM beta = 1); the
        # permute backward adds its sum into it as well: no separate sum op.
        dx = [perm] + sums
        ar = self.tp_all_reduce(self.nm(layer, "moe_ar.bwd"), dx)
        n2 = self.vec("norm", self.nm(layer, "moe_norm.bwd"), [ar] if ar is not None else dx,
                      T * h, rows=T)
        return self.vec("elementwise", self.nm(layer, "moe_residual.bwd"), [n2, g], T * h,
                        inputs=2)

    # -- parameters per rank -----------------------------------------------------------------
    def dense_params(self, layer):
        h, tp = self.h, self.lay.tp
        p = self.attention_params() + h
        if self.cfg.is_moe(layer):
            p += h * self.m["experts"] + 3 * h * (shared_ffn(self.m) // tp)
        else:
            p += 3 * h * (self.m["dense_ffn"] // tp)
        return p

    def expert_params(self, layer):
        if not self.cfg.is_moe(layer):
            return 0
        return self.experts_per_member() * 3 * self.h * (self.m["expert_ffn"] // self.lay.tp)

    # -- one layer, one step -----------------------------------------------------------------
    def layer_fwd(self, layer, x):
        a = self.attention_fwd(layer, x)
        return self.moe_fwd(layer, [a]) if self.cfg.is_moe(layer) else self.dense_ffn_fwd(layer,
                                                                                          [a])

    def layer_bwd(self, layer, g):
        f = self.moe_bwd(layer, g) if self.cfg.is_moe(layer) else self.dense_ffn_bwd(layer, g)
        return self.attention_bwd(layer, f)

    def schedule(self):
        """1F1B: (PP - stage - 1) warm-up forwards, then alternate, then drain backwards."""
        M, pp = self.cfg.micro_batches, self.c.pp
        warm = min(self.lay.pp - pp - 1, M)
        items = [("F", i) for i in range(warm)]
        f, b = warm, 0
        while b < M:
            if f < M:
                items.append(("F", f))
                f += 1
            items.append(("B", b))
            b += 1
        return items

    def grad_sync(self, layer, cls, group, size, params):
        """Gradient reduce-scatter (issued during the backward), returns its id or None."""
        if size == 1 or params == 0:
            return None
        deps = self.final_wgrads.get((layer, cls), []) + [self.last_coll.get(group)]
        padded = -(-params // size) * size    # equal shards, as a distributed optimizer pads
        rs = self.r.add("reduce_scatter", f"l{layer}.{cls}_grad_rs", deps, group=group,
                        bytes=padded * self.cb, dtype=self.cfg.comm_dtype)
        self.last_coll[group] = rs
        return rs

    def sync_plan(self, layer):
        c = self.c
        n = self.lay.replicas   # the groups also span the other UltraServers' replicas
        return [("dense", self.lay.dp_group(c), self.lay.ep * self.lay.dp * n,
                 self.dense_params(layer)),
                ("expert", self.lay.edp_group(c), self.lay.dp * n, self.expert_params(layer))]

    def build(self):
        cfg, lay, c = self.cfg, self.lay, self.c
        layers = list(cfg.stage_layers(c.pp))
        act_bytes = self.T * self.h * self.cb
        prev = lambda s: lay.rank(s, c.dp, c.ep, c.tp)   # noqa: E731 - same replica, other stage
        last = None
        fwd_out = {}
        rs_ids = {}
        for kind, mb in self.schedule():
            self.mb = mb
            if kind == "F":
                x = [last]
                if c.pp > 0:
                    x.append(self.r.add("recv", f"m{mb}.act.recv", [], peer=prev(c.pp - 1),
                                        bytes=act_bytes, tag=2 * mb))
                for layer in layers:
                    x = [self.layer_fwd(layer, x)]
                if c.pp < lay.pp - 1:
                    self.r.add("send", f"m{mb}.act.send", x, peer=prev(c.pp + 1),
                               bytes=act_bytes, tag=2 * mb)
                last = fwd_out[mb] = x[0]
            else:
                g = [last, fwd_out[mb]]
                if c.pp < lay.pp - 1:
                    g.append(self.r.add("recv", f"m{mb}.grad.recv", [], peer=prev(c.pp + 1),
                                        bytes=act_bytes, tag=2 * mb + 1))
                for layer in reversed(layers):
                    g = [self.layer_bwd(layer, g)]
                    if mb == cfg.micro_batches - 1:
                        for cls, group, size, params in self.sync_plan(layer):
                            rs_ids[(layer, cls)] = self.grad_sync(layer, cls, group, size, params)
                if c.pp > 0:
                    self.r.add("send", f"m{mb}.grad.send", g, peer=prev(c.pp - 1),
                               bytes=act_bytes, tag=2 * mb + 1)
                last = g[0]
        # Optimizer step on each shard, then all-gather of the updated parameters in layer order
        # (the order the next step's forward needs them), after every reduce-scatter.
        for layer in layers:
            for cls, group, size, params in self.sync_plan(layer):
                if params == 0:
                    continue
                rs = rs_ids.get((layer, cls))
                deps = [rs] if rs is not None else self.final_wgrads.get((layer, cls), [])
                opt = self.r.add("elementwise", f"l{layer}.{cls}_adam", deps,
                                 elements=-(-params // size), dtype="fp32", inputs=4)
                if size > 1:
                    padded = -(-params // size) * size
                    self.last_coll[group] = self.r.add(
                        "all_gather", f"l{layer}.{cls}_param_ag", [opt, self.last_coll[group]],
                        group=group, bytes=padded * self.cb)
        return self.r.ops
