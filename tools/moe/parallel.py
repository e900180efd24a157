# SPDX-License-Identifier: MIT
"""Rank layout and process groups.

rank = ((pp * DP + dp) * EP + ep) * TP + tp   (TP fastest, then EP, then DP, then PP)

Each (pp, dp, ep) is a data replica of pipeline stage pp: it runs its own micro-batches.
Attention, router, shared-expert and dense-FFN weights are TP-sharded and replicated over the
EP*DP replicas of a stage (group "dp<i>", size EP*DP). Routed experts are sharded over EP
(experts / EP per member, contiguous ids) and TP (each expert's FFN width split over TP), and
replicated over DP (group "edp<i>", size DP). With `replicas` > 1 the dp and edp groups also
span that many copies of the layout on other UltraServers (only this copy's members are listed).
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Coord:
    pp: int
    dp: int
    ep: int
    tp: int


@dataclass(frozen=True)
class Layout:
    tp: int
    ep: int
    dp: int
    pp: int
    # Data-parallel replicas of the whole layout across UltraServers (trnsim /cluster): the trace
    # is one of them; the gradient groups dp* and edp* span them all.
    replicas: int = 1

    @property
    def ranks(self):
        return self.tp * self.ep * self.dp * self.pp

    def rank(self, pp, dp, ep, tp):
        return ((pp * self.dp + dp) * self.ep + ep) * self.tp + tp

    def coord(self, rank):
        tp = rank % self.tp
        rest = rank // self.tp
        ep = rest % self.ep
        rest //= self.ep
        return Coord(pp=rest // self.dp, dp=rest % self.dp, ep=ep, tp=tp)

    # Group names. Index formulas make every name unique and stable.
    def tp_group(self, c):
        return f"tp{self.rank(c.pp, c.dp, c.ep, 0) // self.tp}"

    def ep_group(self, c):
        return f"ep{(c.pp * self.dp + c.dp) * self.tp + c.tp}"

    def dp_group(self, c):
        return f"dp{c.pp * self.tp + c.tp}"

    def edp_group(self, c):
        return f"edp{(c.pp * self.ep + c.ep) * self.tp + c.tp}"

    def groups(self):
        """name -> sorted member list, for every group of size > 1 (plus "world")."""
        out = {"world": list(range(self.ranks))}
        kinds = (("tp", self.tp_group, self.tp), ("ep", self.ep_group, self.ep),
                 ("dp", self.dp_group, self.ep * self.dp), ("edp", self.edp_group, self.dp))
        for kind, namer, size in kinds:
            if size * (self.replicas if kind in ("dp", "edp") else 1) <= 1:
                continue
            members = {}
            for r in range(self.ranks):
                members.setdefault(namer(self.coord(r)), []).append(r)
            for name in sorted(members, key=lambda n: (n.rstrip("0123456789"),
                                                       int(n.lstrip("tpeds")))):
                out[name] = members[name]
        return out
