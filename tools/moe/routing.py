# SPDX-License-Identifier: MIT
"""Token routing: how many of a replica's tokens each expert receives, per layer and micro-batch.

Every token picks top_k distinct experts. Draws are made per token with a random.Random seeded
from a string of (seed, layer, micro-batch, dp, ep), so they depend on nothing else (not on the
rank count of other stages, not on the order in which the generator asks for them).
"""

import json
import math
import random

from .errors import UsageError

ROUTING_FORMAT = "trnsim-moe-routing"


class Routing:
    """A parsed --routing spec: "uniform", "balanced", "zipf:S" or "file:PATH"."""

    def __init__(self, kind, s=0.0, path=None, table=None, default=None):
        self.kind = kind
        self.s = s
        self.path = path
        self.table = table or {}
        self.default = default

    def describe(self):
        return {"uniform": "uniform", "balanced": "balanced",
                "zipf": f"zipf:{self.s:g}", "file": f"file:{self.path}"}[self.kind]

    # -- weights ------------------------------------------------------------------------------
    def weights(self, layer, experts, seed):
        """Relative popularity of each expert in `layer` (None = uniform)."""
        if self.kind == "zipf":
            # Hot experts differ per layer: a seeded permutation assigns the Zipf ranks.
            order = list(range(experts))
            random.Random(f"trnsim-moe-perm:{seed}:{layer}").shuffle(order)
            w = [0.0] * experts
            for rank, e in enumerate(order):
                w[e] = 1.0 / (rank + 1) ** self.s
            return w
        if self.kind == "file":
            w = self.table.get(layer, self.default)
            if w is None:
                raise UsageError("--routing", f"{self.path}: no weights for layer {layer} "
                                              "(add it under \"layers\" or give \"default\")")
            return w
        return None


def parse_routing(spec, experts, top_k):
    if spec in ("uniform", "balanced"):
        return Routing(spec)
    if spec.startswith("zipf:"):
        try:
            s = float(spec[5:])
        except ValueError:
            s = float("nan")
        if not math.isfinite(s) or s < 0:
            raise UsageError("--routing", f"\"{spec}\": expected zipf:S with a number S >= 0")
        return Routing("zipf", s=s)
    if spec.startswith("file:"):
        return _load_file(spec[5:], experts, top_k)
    raise UsageError("--routing", f"unknown routing \"{spec}\" (expected uniform, balanced, "
                                  "zipf:S or file:PATH)")


def _check_weights(w, where, experts, top_k):
    if not isinstance(w, list) or len(w) != experts:
        raise UsageError("--routing", f"{where}: expected a list of {experts} numbers (one per "
                                      "expert)")
    for i, x in enumerate(w):
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or x < 0:
            raise UsageError("--routing", f"{where}/{i}: expected a number >= 0, got "
                                          f"{json.dumps(x)}")
    if sum(1 for x in w if x > 0) < top_k:
        raise UsageError("--routing", f"{where}: fewer than top_k={top_k} experts have a weight "
                                      "> 0, so a token cannot pick top_k distinct experts")
    return [float(x) for x in w]


def _load_file(path, experts, top_k):
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as e:
        raise UsageError("--routing", f"cannot read routing file {path}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise UsageError("--routing", f"{path}: invalid JSON: {e}") from None
    allowed = ("format", "experts", "layers", "default", "description")
    if not isinstance(data, dict):
        raise UsageError("--routing", f"{path}: expected a JSON object")
    for key in sorted(data):
        if key not in allowed:
            raise UsageError("--routing", f"{path}:/{key}: unknown key (expected one of "
                                          f"{', '.join(allowed)})")
    if data.get("format") != ROUTING_FORMAT:
        raise UsageError("--routing", f"{path}:/format: expected \"{ROUTING_FORMAT}\"")
    if data.get("experts") != experts:
        raise UsageError("--routing", f"{path}:/experts: expected {experts} (the model's expert "
                                      f"count), got {json.dumps(data.get('experts'))}")
    layers = data.get("layers", {})
    if not isinstance(layers, dict):
        raise UsageError("--routing", f"{path}:/layers: expected an object keyed by layer index")
    table = {}
    for key in layers:
        if not key.isdigit():
            raise UsageError("--routing", f"{path}:/layers/{key}: expected a layer index")
        table[int(key)] = _check_weights(layers[key], f"{path}:/layers/{key}", experts, top_k)
    default = None
    if "default" in data:
        default = _check_weights(data["default"], f"{path}:/default", experts, top_k)
    if not table and default is None:
        raise UsageError("--routing", f"{path}: needs \"layers\" or \"default\"")
    return Routing("file", path=path, table=table, default=default)


# -- draws ------------------------------------------------------------------------------------
def _draw_weighted(rng, weights, tokens, top_k):
    """Counts per expert after `tokens` tokens each draw top_k distinct experts, each pick
    proportional to the weights of the experts not yet picked (Plackett-Luce sampling).
    Implemented as draws with replacement and rejection of repeats (the same distribution),
    in bulk for speed; a token that keeps hitting picked experts falls back to exact sampling."""
    experts = len(weights)
    cum = list(_accumulate(weights))
    pop = range(experts)
    counts = [0] * experts
    pool = []
    pos = 0
    for _ in range(tokens):
        chosen = []
        tries = 0
        while len(chosen) < top_k and tries < 8 * top_k:
            if pos == len(pool):
                pool = rng.choices(pop, cum_weights=cum, k=max(1024, 2 * top_k))
                pos = 0
            e = pool[pos]
            pos += 1
            tries += 1
            if e not in chosen:
                chosen.append(e)
        if len(chosen) < top_k:
            rest = [0.0 if i in chosen else w for i, w in enumerate(weights)]
            while len(chosen) < top_k:
                e = rng.choices(pop, weights=rest, k=1)[0]
                chosen.append(e)
                rest[e] = 0.0
        for e in chosen:
            counts[e] += 1
    return counts


def _accumulate(xs):
    total = 0.0
    for x in xs:
        total += x
        yield total


def draw_counts(routing, seed, layer, mb, dp, ep, tokens, experts, top_k):
    """Tokens each expert receives from replica (dp, ep) in `layer`, micro-batch `mb`."""
    if routing.kind == "balanced":
        # Round robin with a per-replica offset: every expert gets floor or ceil of tokens*k/E.
        counts = [0] * experts
        offset = (dp * 7919 + ep * 104729 + layer * 31 + mb * 17) % experts
        base, extra = divmod(tokens * top_k, experts)
        for i in range(experts):
            counts[(offset + i) % experts] = base + (1 if i < extra else 0)
        return counts
    rng = random.Random(f"trnsim-moe:{seed}:{layer}:{mb}:{dp}:{ep}")
    w = routing.weights(layer, experts, seed)
    if w is None:
        counts = [0] * experts
        pop = range(experts)
        for _ in range(tokens):
            for e in rng.sample(pop, top_k):
                counts[e] += 1
        return counts
    return _draw_weighted(rng, w, tokens, top_k)
