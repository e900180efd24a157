# SPDX-License-Identifier: MIT
"""Generated traces: format rules, routing-derived all-to-all sizes, token conservation,
collective matching, determinism and hand-computed FLOPs."""

import collections
import json
import os
import tempfile
import unittest

from moe.build import op_flops
from moe.cli import build_config, make_parser, run
from moe.routing import draw_counts

from .checks import check_progress, check_trace

HERE = os.path.dirname(os.path.abspath(__file__))
TINY = os.path.join(HERE, "data", "tiny.json")


def generate(args):
    """Runs the generator; returns (trace dict, file bytes)."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "t.json")
        assert run(args + ["-q", "-o", out]) == 0
        with open(out, "rb") as f:
            raw = f.read()
    return json.loads(raw), raw


def ops_named(trace, rank, suffix):
    return [op for op in trace["rank_ops"][rank]["ops"] if op.get("name", "").endswith(suffix)]


# TP2 x EP4 x DP2 x PP2 with 2 micro-batches: every group kind and pipeline send/recv.
MIXTRAL = ["--model", "mixtral-8x7b", "--tp", "2", "--ep", "4", "--dp", "2", "--pp", "2",
           "--layers", "2", "--micro-batches", "2", "--seq-len", "256", "--routing", "zipf:1.2",
           "--seed", "3"]
DEEPSEEK = ["--model", "deepseek-v3", "--ep", "8", "--dp", "2", "--layers", "2",
            "--dense-layers", "1", "--seq-len", "128", "--global-batch", "64",
            "--micro-batches", "2", "--routing", "zipf:1.2", "--expert-gemms", "grouped"]


class TraceTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.mix, cls.mix_raw = generate(MIXTRAL)
        cls.mix_cfg, _ = build_config(make_parser().parse_args(MIXTRAL + ["-o", "x"]))
        cls.ds, _ = generate(DEEPSEEK)

    def test_traces_follow_the_format_and_collectives_match(self):
        for t in (self.mix, self.ds):
            self.assertEqual(check_trace(t), [])

    def test_traces_replay_without_deadlock(self):
        for t in (self.mix, self.ds):
            self.assertEqual(check_progress(t), [])

    def test_layout_matrix(self):
        # Corners: no EP (no all-to-all), kv heads < TP, uneven pipeline split, more
        # micro-batches than stages, MLA with TP, balanced and file-free routings.
        cases = [
            ["--model", "qwen3-235b-a22b", "--tp", "8", "--ep", "2", "--dp", "1", "--pp", "3",
             "--layers", "4", "--micro-batches", "4", "--seq-len", "32", "--global-batch", "8"],
            ["--model", "dbrx", "--ep", "1", "--dp", "2", "--layers", "1", "--seq-len", "32"],
            ["--model", "deepseek-v3", "--tp", "2", "--ep", "4", "--dp", "1", "--pp", "2",
             "--layers", "3", "--dense-layers", "2", "--micro-batches", "3", "--seq-len", "16",
             "--routing", "balanced"],
            ["--model", "mixtral-8x7b", "--ep", "8", "--ranks", "8", "--layers", "1",
             "--seq-len", "8", "--routing", "zipf:3", "--top-k", "8"],
        ]
        for args in cases:
            with self.subTest(args=" ".join(args)):
                t, _ = generate(args)
                self.assertEqual(check_trace(t), [])
                self.assertEqual(check_progress(t), [])

    def test_checker_detects_broken_traces(self):
        # The checker must be able to fail, or the test above proves nothing.
        broken = json.loads(self.mix_raw)
        ar = next(o for o in broken["rank_ops"][1]["ops"] if o["op"] == "all_reduce")
        ar["bytes"] += 2
        recv = next(o for o in broken["rank_ops"][16]["ops"] if o["op"] == "recv")
        recv["tag"] = 99
        broken["rank_ops"][2]["ops"][5]["deps"] = [7]
        errs = "\n".join(check_trace(broken))
        self.assertIn(f"group {ar['group']}: rank 1 issues a different collective sequence", errs)
        self.assertIn("recv 0->16 tag 99: unmatched", errs)
        self.assertIn("rank 2 op 5: dep 7 not an earlier op", errs)
        # A collective that one member never issues blocks its group: a deadlock is found.
        stuck = json.loads(self.mix_raw)
        ops = stuck["rank_ops"][3]["ops"]
        first = next(i for i, o in enumerate(ops) if o["op"] == "all_to_all_v")
        ops[first] = {"id": ops[first]["id"], "op": "barrier", "group": "world"}
        self.assertNotEqual(check_progress(stuck), [])

    def test_groups(self):
        g = self.mix["groups"]
        self.assertEqual(self.mix["ranks"], 32)
        self.assertEqual(g["tp0"], [0, 1])
        self.assertEqual(g["ep0"], [0, 2, 4, 6])            # same (pp, dp, tp), varying ep
        self.assertEqual(g["edp0"], [0, 8])                 # same (pp, ep, tp), varying dp
        self.assertEqual(g["dp0"], [0, 2, 4, 6, 8, 10, 12, 14])
        self.assertEqual(g["dp1"], [1, 3, 5, 7, 9, 11, 13, 15])
        self.assertEqual(g["dp2"], [16, 18, 20, 22, 24, 26, 28, 30])   # stage 1
        for kind, size, count in (("tp", 2, 16), ("ep", 4, 8), ("dp", 8, 4), ("edp", 2, 16)):
            names = [n for n in g if n.rstrip("0123456789") == kind]
            self.assertEqual(len(names), count, kind)
            self.assertTrue(all(len(g[n]) == size for n in names), kind)
            covered = sorted(r for n in names for r in g[n])
            self.assertEqual(covered, list(range(32)), kind)   # a partition of the ranks

    def test_dispatch_sizes_follow_routing_and_combine_is_the_transpose(self):
        cfg, t = self.mix_cfg, self.mix
        lay, h, cb = cfg.layout, 4096, 2
        for group, members in t["groups"].items():
            if not group.startswith("ep"):
                continue
            for layer in cfg.stage_layers(lay.coord(members[0]).pp):   # PP=2: one layer each
                for mb in range(2):
                    tag = f"l{layer}.m{mb}."
                    disp = [next(o for o in ops_named(t, r, "dispatch") if o["name"] == tag +
                                 "dispatch")["send_bytes"] for r in members]
                    comb = [next(o for o in ops_named(t, r, "combine") if o["name"] == tag +
                                 "combine")["send_bytes"] for r in members]
                    for i, r in enumerate(members):
                        c = lay.coord(r)
                        routed = draw_counts(cfg.routing, cfg.seed, layer, mb, c.dp, c.ep,
                                             cfg.tokens, 8, 2)
                        self.assertEqual(disp[i], [(routed[2 * j] + routed[2 * j + 1]) * h * cb
                                                   for j in range(4)])
                        self.assertEqual(sum(disp[i]), cfg.tokens * 2 * h * cb)
                        for j in range(len(members)):
                            self.assertEqual(comb[i][j], disp[j][i])
                    # The backward all-to-alls are the forward ones reversed.
                    for r, d, c in zip(members, disp, comb):
                        self.assertEqual(ops_named(t, r, tag + "combine.bwd")[0]["send_bytes"], d)
                        self.assertEqual(ops_named(t, r, tag + "dispatch.bwd")[0]["send_bytes"], c)

    def test_expert_tokens_sum_to_tokens_times_top_k(self):
        # Per EP group (one TP column), the expert GEMMs' m over all members is tokens*k*EP.
        cfg, t = self.mix_cfg, self.mix
        for group, members in t["groups"].items():
            if not group.startswith("ep"):
                continue
            stage = cfg.layout.coord(members[0]).pp
            self.assertEqual(list(cfg.stage_layers(stage)), [stage])
            for layer in cfg.stage_layers(stage):
                for mb in range(2):
                    m = sum(o["m"] for r in members
                            for o in ops_named(t, r, ".gate_up")
                            if o["name"].startswith(f"l{layer}.m{mb}.e"))
                    self.assertEqual(m, cfg.tokens * 2 * 4)
        # Grouped mode: one GEMM per rank with the same total.
        for layer, mb in ((1, 0), (1, 1)):
            total = sum(o["m"] for r in range(16)
                        for o in ops_named(self.ds, r, f"l{layer}.m{mb}.experts.gate_up"))
            # 64 sequences / (16 replicas * 2 micro-batches) = 2 of 128 tokens per micro-batch.
            self.assertEqual(total, 16 * 256 * 8)   # ranks * tokens * top_k
        self.assertEqual(ops_named(self.ds, 0, "l0.m0.experts.gate_up"), [])   # dense layer

    def test_expert_gemm_shapes(self):
        # Mixtral expert width 14336 split over TP=2; backward is dgrad + wgrad of each GEMM.
        r = 5
        gu = ops_named(self.mix, r, ".gate_up")[0]
        pre = gu["name"]
        self.assertEqual((gu["k"], gu["n"]), (4096, 2 * 7168))
        dn = ops_named(self.mix, r, pre.replace("gate_up", "down"))[0]
        self.assertEqual((dn["m"], dn["k"], dn["n"]), (gu["m"], 7168, 4096))
        dg = ops_named(self.mix, r, pre + ".dgrad")[0]
        wg = ops_named(self.mix, r, pre + ".wgrad")[0]
        self.assertEqual((dg["m"], dg["k"], dg["n"]), (gu["m"], 2 * 7168, 4096))
        self.assertEqual((wg["m"], wg["k"], wg["n"]), (4096, gu["m"], 2 * 7168))

    def test_wgrads_accumulate_and_feed_the_gradient_reduce_scatter(self):
        ops = {o["id"]: o for o in self.mix["rank_ops"][0]["ops"]}
        by_name = {o["name"]: o for o in ops.values()}
        w1 = by_name["l0.m1.qkv.wgrad"]
        self.assertIn(by_name["l0.m0.qkv.wgrad"]["id"], w1["deps"])
        rs = by_name["l0.dense_grad_rs"]
        self.assertIn(w1["id"], rs["deps"])
        self.assertEqual(rs["group"], "dp0")
        ag = by_name["l0.dense_param_ag"]
        self.assertEqual(ag["bytes"], rs["bytes"])
        self.assertEqual(rs["bytes"] % (8 * 2), 0)    # whole bf16 shards of the 8-rank group
        self.assertEqual(by_name["l0.expert_grad_rs"]["group"], "edp0")

    def test_pipeline_sends_match_receives(self):
        # Stage 0 (rank 0) sends activations to rank 16 and receives gradients from it.
        sends = [(o["peer"], o["tag"]) for o in self.mix["rank_ops"][0]["ops"]
                 if o["op"] == "send"]
        recvs = [(o["peer"], o["tag"]) for o in self.mix["rank_ops"][16]["ops"]
                 if o["op"] == "recv"]
        self.assertEqual(sends, [(16, 0), (16, 2)])
        self.assertEqual(recvs, [(0, 0), (0, 2)])
        # Stage 0 holds layer 0, stage 1 layer 1.
        self.assertTrue(all(o["name"].startswith(("l0.", "m")) for o in
                            self.mix["rank_ops"][3]["ops"]))

    def test_same_seed_same_bytes_other_seed_other_routing(self):
        _, again = generate(MIXTRAL)
        self.assertEqual(again, self.mix_raw)
        other, _ = generate(MIXTRAL[:-1] + ["4"])
        self.assertNotEqual(ops_named(other, 0, "l0.m0.dispatch"),
                            ops_named(self.mix, 0, "l0.m0.dispatch"))

    def test_uniform_balanced_vs_zipf_imbalance_in_metadata(self):
        base = ["--model", "mixtral-8x7b", "--ep", "8", "--dp", "1", "--layers", "1",
                "--seq-len", "4096"]
        uni, _ = generate(base + ["--routing", "uniform"])
        bal, _ = generate(base + ["--routing", "balanced"])
        zipf, _ = generate(base + ["--routing", "zipf:1.2"])
        load = lambda t: t["metadata"]["stats"]["layers"][0]["expert_load_max_over_mean"]  # noqa
        self.assertLess(load(uni), 1.05)
        self.assertEqual(load(bal), 1.0)
        self.assertGreater(load(zipf), 1.5)

    def test_layer_flops_match_hand_computation(self):
        t, _ = generate(["--model", TINY, "--ranks", "1", "--seq-len", "4", "--routing",
                         "zipf:1"])
        # T = 4 tokens, hidden 8, GQA 2 heads / 1 kv head of dim 4, causal attention.
        # Forward FLOPs (2 per MAC):
        #   qkv 4x8x(2+2)*4 -> 1024; attention 4*1*2*4*4*4/2 -> 256; o 4x8x8 -> 512
        attn_fwd = 1024 + 256 + 512
        # Backward: dgrad + wgrad of qkv and o (2x) + attention recompute 256 + dP/dQ/dK GEMM
        # batch 3*1*2 of 4x4x2 -> 384.
        attn_bwd = 2 * (1024 + 512) + 256 + 384
        # Dense layer 0: FFN 16 wide, gate+up 4x8x32 -> 2048, down 4x16x8 -> 1024.
        dense = attn_fwd + attn_bwd + 3 * (2048 + 1024)
        # MoE layer 1: router 4x8x4 -> 256; experts see T*k = 8 tokens whatever the routing:
        # gate+up 8x8x8 -> 1024, down 8x4x8 -> 512; shared expert (width 4): 512 + 256.
        moe = attn_fwd + attn_bwd + 3 * (256 + 1024 + 512 + 512 + 256)
        self.assertEqual((dense, moe), (14720, 13184))
        per_layer = collections.Counter()
        for op in t["rank_ops"][0]["ops"]:
            per_layer[op["name"].split(".")[0]] += op_flops(op)
        self.assertEqual(per_layer["l0"], dense)
        self.assertEqual(per_layer["l1"], moe)
        self.assertEqual([x["flops"] for x in t["metadata"]["stats"]["layers"]], [dense, moe])
        self.assertEqual(t["metadata"]["stats"]["flops_total"], dense + moe)


if __name__ == "__main__":
    unittest.main()
