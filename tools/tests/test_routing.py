# SPDX-License-Identifier: MIT
"""Token-routing draws: conservation, distinct top-k, balance vs skew, determinism, files."""

import json
import os
import tempfile
import unittest

from moe.errors import UsageError
from moe.routing import ROUTING_FORMAT, draw_counts, parse_routing

E, K, T = 16, 4, 2048


def counts(spec, seed=1, layer=0, mb=0, dp=0, ep=0, tokens=T, experts=E, top_k=K):
    return draw_counts(parse_routing(spec, experts, top_k), seed, layer, mb, dp, ep, tokens,
                       experts, top_k)


def max_over_mean(c):
    return max(c) / (sum(c) / len(c))


class RoutingTest(unittest.TestCase):
    def test_every_token_gets_top_k_distinct_experts(self):
        for spec in ("uniform", "balanced", "zipf:0.5", "zipf:1.2", "zipf:3"):
            for layer in range(3):
                c = counts(spec, layer=layer)
                self.assertEqual(sum(c), T * K, spec)
                # Distinct experts per token: no expert can receive more than every token.
                self.assertLessEqual(max(c), T, spec)

    def test_uniform_is_near_balanced_and_balanced_is_exact(self):
        self.assertLess(max_over_mean(counts("uniform")), 1.1)
        self.assertEqual(set(counts("balanced")), {T * K // E})

    def test_zipf_is_skewed_and_more_so_for_larger_s(self):
        mild, strong = max_over_mean(counts("zipf:0.5")), max_over_mean(counts("zipf:1.2"))
        self.assertGreater(mild, 1.2)
        self.assertGreater(strong, mild)
        # s = 0 is the uniform distribution.
        self.assertLess(max_over_mean(counts("zipf:0")), 1.1)

    def test_zipf_hot_expert_differs_between_layers(self):
        hot = {max(range(E), key=counts("zipf:1.2", layer=layer).__getitem__)
               for layer in range(6)}
        self.assertGreater(len(hot), 1)

    def test_draws_are_deterministic_and_depend_on_seed_and_replica(self):
        self.assertEqual(counts("zipf:1.2", seed=7), counts("zipf:1.2", seed=7))
        self.assertNotEqual(counts("zipf:1.2", seed=7), counts("zipf:1.2", seed=8))
        self.assertNotEqual(counts("uniform", dp=0, ep=0), counts("uniform", dp=0, ep=1))
        self.assertNotEqual(counts("uniform", mb=0), counts("uniform", mb=1))

    def test_top_k_equal_to_experts_sends_every_token_everywhere(self):
        self.assertEqual(counts("zipf:2", top_k=E), [T] * E)

    def test_file_weights(self):
        w = [0] * E
        w[3] = w[5] = 1.0
        w[9] = 3
        w[12] = 0.5
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "r.json")
            with open(path, "w") as f:
                json.dump({"format": ROUTING_FORMAT, "experts": E, "layers": {"2": w},
                           "default": [1] * E}, f)
            c = counts("file:" + path, layer=2)
            # Only the 4 positive-weight experts exist for top-4, so each gets every token.
            self.assertEqual([c[i] for i in (3, 5, 9, 12)], [T] * 4)
            self.assertEqual(sum(c), T * K)
            self.assertLess(max_over_mean(counts("file:" + path, layer=0)), 1.1)

    def test_bad_specs_name_the_argument(self):
        for spec in ("zipfian", "zipf:-1", "zipf:x", "file:/nonexistent/r.json"):
            with self.assertRaises(UsageError) as cm:
                parse_routing(spec, E, K)
            self.assertEqual(cm.exception.arg, "--routing")

    def test_bad_files(self):
        good = {"format": ROUTING_FORMAT, "experts": E, "default": [1] * E}
        bad = [dict(good, experts=E + 1), dict(good, default=[1] * (E - 1)),
               dict(good, default=[1, -1] + [1] * (E - 2)), dict(good, default=[1] * 3 + [0] * 13),
               dict(good, extra=1), dict(good, format="x")]
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "r.json")
            for data in bad:
                with open(path, "w") as f:
                    json.dump(data, f)
                with self.assertRaises(UsageError, msg=str(data)):
                    parse_routing("file:" + path, E, K)


if __name__ == "__main__":
    unittest.main()
