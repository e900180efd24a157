#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Error and speed of the fast tier against the detailed one: the same benchmark or run with
`--set sim.fidelity=detailed` and `--set sim.fidelity=fast`, side by side.

    tools/bench_fidelity.py [--trnsim build/release/src/cli/trnsim] [--quick] [--json]
                            [--racks trn2-instance,trn3-gen2-ultraserver]
                            [--part network|step|concurrent|figures]
                            [--ops all-to-all,all-reduce] [--sizes 1MiB,16MiB]
                            [--ranks N] [--queueing voq|input_fifo]
                            [--flow-calibration none|packet|workload|both]
                            [--also-uncalibrated]
                            [--set PATH=VALUE ...] [--traces A.json,B.json] [--split]
                            [--reference-packets 64KiB,16KiB] [--seeds N]

Parts: `network` runs `bench collective` (all-reduce, all-gather, reduce-scatter, all-to-all,
1 MiB to 1 GiB), `bench traffic` (all-to-all of 1 MiB per pair, uniform at load 0.5) and
`bench ping` on each rack preset (`--ranks N`: the collectives on ranks 0..N-1 only, a
subgroup as a step's EP all-to-all runs on, instead of every chip); `step` runs `trnsim run` on the bundled 16-rank Mixtral step
(2 layers) and the golden 16-rank trace. The difference is (fast - detailed) / detailed of the
time (completion time, step time, latency). `--queueing` sets the packet fabric's switch
queueing (`rack.fabric.queueing`, docs/models/fabric.md#switch-queueing; the flow tier does not
read it); `--flow-calibration` (`none`, `packet`, `workload`, or `both`: packet with
`--also-uncalibrated`) sets the flow network's calibration from the packet fabric
(`rack.fabric.flow_calibration`, docs/models/fidelity.md#flow-calibration; the packet run does
not read it; the first fast run of a rack calibrates, later ones read the calibration cache);
`--also-uncalibrated` adds a column of the fast tier without it;
`--set` is passed to both runs. `--split` (step part) runs every step at the four
combinations of network (`rack.fabric.model=flow|packet`) and compute (`chip.compute.model=op|tile`),
all with `sim.fast_forward=true`, and splits fast - detailed into its compute part (op against
tile under each network) and its network part (flow against packet under each compute tier);
`--traces` replaces the bundled step traces. `concurrent` takes the collectives of each step
trace (`--traces`, default the Mixtral step) in classes of one kind and group family (`ep0`,
`ep1`, ... are `ep`), each at its median size per member (an `all_to_all_v` as an all-to-all
of its members' median total), and runs each class alone and then all of them at once, every
rank starting its ops together (one op per class, no dependencies, on the rank's group of the
family): what the step's collectives lose when they overlap, which calibration on each alone
cannot see (docs/models/fidelity-log.md#collectives-at-once-and-single-packets-issue-30-at-f472985).
`figures` runs each step trace (`--traces`, default the step part's) at both tiers with
fast-forward on and gives a row per figure of report.json's `figures` (`figure NAME TRACE`):
the figures that mean the same at every tier (docs/models/fidelity.md#report-figures); a
figure one tier lacks (`only_at`) has no difference and is counted apart, as one-tier. The
default step: `--part figures --racks trn3-gen2-ultraserver --traces
traces/deepseek-v3-step-144.json.gz --set sim.memory_budget=8GB`.
`--reference-packets` (network part) runs the detailed side of every collective row outside
its target again at each of these packet sizes (`replay.fabric_packet_bytes`; the default is
256 KiB): how far the reference itself moves with its granularity, against the same fast time
(`detailed_by_packet`, `diff_by_packet` in --json; in the summary beside the row).
`--seeds N` runs every run of a row once per `sim.seed` =
1..N (the seed salts the fabric's arbitrary choices, routes by flow hash among them, at both
tiers: docs/results/stability.md): the row's times are the means over the seeds, its difference
that of the means, and `detailed_by_seed`, `fast_by_seed`, `diff_by_seed` in --json (in the
table, each tier's range and the range of the differences).
After the table, the rows each of issue #30's targets covers (a collective of 1 MiB-1 GiB on
every chip within 5 %, the uniform traffic's mean latency within 10 %, a step within 3 %, a
report figure at both tiers within 10 %) and
how many are within it; with --json each row has `aim_category`, `aim` and `within` (null where
no target covers it). Wall times are this machine's under its load: they belong here, never in a test
(docs/models/fidelity.md).
"""
import argparse
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RACKS = ["trn2-instance", "trn2-ultraserver", "trn3-gen1-ultraserver", "trn3-gen2-ultraserver"]
OPS = ["all-reduce", "all-gather", "reduce-scatter", "all-to-all"]
SIZES = ["1MiB", "16MiB", "256MiB", "1GiB"]
QUICK_SIZES = ["1MiB", "64MiB"]
STEP_TRACES = ["traces/mixtral-moe-16.json", "tests/golden/inputs/golden-moe-16.json"]
CONCURRENT_TRACES = ["traces/mixtral-moe-16.json"]
COLLECTIVES = {"all_to_all": "all_to_all", "all_to_all_v": "all_to_all", "all_gather": "all_gather",
               "reduce_scatter": "reduce_scatter", "all_reduce": "all_reduce"}


# Issue #30's targets, fast against detailed: |diff| within the aim. (category, aim, the rows it
# applies to): a collective of 1 MiB-1 GiB on every chip of a rack, the uniform traffic's mean
# latency, a step's time (the is with fast-forward on both tiers: --split), a report
# figure that both tiers give (--part figures).
AIMS = [("collective, 1 MiB-1 GiB, every chip", 0.05,
         re.compile(r"^(all-reduce|all-gather|reduce-scatter|all-to-all) (\d+)(MiB|GiB)$")),
        ("uniform traffic, mean latency", 0.10, re.compile(r"^traffic uniform ")),
        ("step time", 0.03, re.compile(r"^step ")),
        ("report figure at both tiers", 0.10, re.compile(r"^figure "))]


def aim_of(row):
    """(category, aim) of a row that one of issue #30's targets covers, or None."""
    for category, aim, pattern in AIMS:
        m = pattern.match(row["case"])
        if not m:
            continue
        if m.groups():
            mib = int(m.group(2)) * (1024 if m.group(3) == "GiB" else 1)
            if not 1 <= mib <= 1024:
                return None
        return category, aim
    return None


def summary(rows):
    """Lines: per target, the rows within it and those outside."""
    lines = []
    for category, aim, _ in AIMS:
        mine = [r for r in rows if r.get("aim_category") == category]
        if not mine:
            continue
        apart = [r for r in mine if r["within"] is None]  # a figure one tier lacks, or neither has
        mine = [r for r in mine if r["within"] is not None]
        out = [r for r in mine if not r["within"]]
        note = ""
        if category == "step time":
            note = " (fast-forward on)"  # at both tiers, with --split or without
        if SEEDS:
            note += f" (the means over seeds 1-{len(SEEDS)})"
        lines.append(f"{category}, within {100 * aim:.0f} %{note}: {len(mine) - len(out)} of "
                     f"{len(mine)}" + ("; outside: " + ", ".join(
                         outside(r) for r in out)
                         if out else "") + (f"; one tier or neither: {len(apart)} ("
                                            + ", ".join(apart_name(r) for r in apart) + ")"
                                            if apart else ""))
    return lines


def collective_args(rack, op, size, on=()):
    """`trnsim bench collective` of `op` at `size` on `rack` (`on`: its --ranks), as JSON."""
    return ["bench", "collective", "--config", f"configs/racks/{rack}.json", "--op", op,
            "--bytes", size, *on, "--json"]


def set_args(sets):
    """PATH=VALUE settings as `--set` arguments."""
    return [x for kv in sets for x in ("--set", kv)]


def reference_spread(trnsim, rows, packets):
    """Each collective row outside its target: the detailed time again at each packet size."""
    sets = set_args(EXTRA_SETS)
    for r in rows:
        if r.get("within") is not False or not r["aim_category"].startswith("collective"):
            continue
        op, size = r["case"].split()
        r["detailed_by_packet"], r["diff_by_packet"] = {}, {}
        for pb in packets:
            j, _ = trnsim_json(trnsim, [*collective_args(r["rack"], op, size), "--set",
                                        "sim.fidelity=detailed", *sets, "--set",
                                        f"replay.fabric_packet_bytes={pb}"])
            d = j["time_ns"]
            r["detailed_by_packet"][pb] = d
            r["diff_by_packet"][pb] = (r["fast"] - d) / d


def outside(r):
    """A row outside its target, for the summary: its difference, and at other packet sizes."""
    s = f"{r['rack']} {r['case']} {100 * r['diff']:+.1f} %"
    if r.get("diff_by_seed"):
        ds = r["diff_by_seed"]
        s += f" (by seed {100 * min(ds):+.1f} to {100 * max(ds):+.1f} %)"
    by = r.get("diff_by_packet")
    if by:
        s += " (detailed at " + ", ".join(f"{pb}: {100 * d:+.1f} %" for pb, d in by.items()) + ")"
    return s


def apart_name(r):
    """A figure row without a difference, for the summary: its name, and which tier has it."""
    return f"{r['metric']}: " + (f"{r['only_at']} only" if r.get("only_at") else "at neither")


def fail(msg):
    print(f"bench_fidelity.py: error: {msg}", file=sys.stderr)
    sys.exit(2)


def trnsim_json(trnsim, args):
    env = dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1")
    t0 = time.monotonic()
    p = subprocess.run([trnsim, *args], capture_output=True, text=True, env=env, cwd=ROOT,
                       check=False)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        fail(f"{' '.join(args)} exited with {p.returncode}: {p.stderr.strip()[-1500:]}")
    return json.loads(p.stdout), wall


EXTRA_SETS = []


BOTH = []  # --flow-calibration both: the fast tier also without the calibration


SEEDS = []  # --seeds N: every run of a row once per sim.seed = 1..N, and the mean taken


def by_seeds(run):
    """`run(sets)` (PATH=VALUE sets to add -> (value, wall)) once, or with --seeds once per seed:
    the values in seed order, and the wall time summed."""
    runs = [run(more) for more in [[f"sim.seed={s}"] for s in SEEDS] or [[]]]
    return [v for v, _ in runs], sum(w for _, w in runs)


def seeded(run):
    """`run` as for by_seeds(): the value (the mean over the seeds), the wall time (summed), the
    values by seed or None without --seeds."""
    vals, wall = by_seeds(run)
    return sum(vals) / len(vals), wall, vals if SEEDS else None


def by_seed(row, detailed, fast):
    """With --seeds: the values of each tier by seed, and fast - detailed by seed, in `row`."""
    if detailed is not None:
        row["detailed_by_seed"], row["fast_by_seed"] = detailed, fast
        row["diff_by_seed"] = [(f - d) / d if d else 0.0 for d, f in zip(detailed, fast)]


def pair(trnsim, args, metric):
    """Runs `args` at both fidelities; returns (detailed, fast, diff, wall detailed, wall fast),
    and with --flow-calibration both the fast tier uncalibrated too (fast_none, diff_none);
    with --seeds the means over the seeds, and the values by seed."""
    def runner(fid, *after):
        """`args` at `fid` with --set's, then `after`, then a seed's settings: for seeded()."""
        def run(more):
            j, wall = trnsim_json(trnsim, [*args, *set_args([f"sim.fidelity={fid}", *EXTRA_SETS,
                                                             *after, *more])])
            return metric(j), wall
        return run
    out = {fid: seeded(runner(fid)) for fid in ("detailed", "fast")}
    d, f = out["detailed"][0], out["fast"][0]
    row = {"detailed": d, "fast": f, "diff": (f - d) / d if d else 0.0,
           "wall_detailed_s": out["detailed"][1], "wall_fast_s": out["fast"][1]}
    by_seed(row, out["detailed"][2], out["fast"][2])
    if BOTH:
        row["fast_none"] = seeded(runner("fast", "rack.fabric.flow_calibration=none"))[0]
        row["diff_none"] = (row["fast_none"] - d) / d if d else 0.0
    return row


def network_rows(trnsim, racks, sizes, ops, extras=True, ranks=0):
    rows = []
    on = ["--ranks", str(ranks)] if ranks else []
    for rack in racks:
        cfg = f"configs/racks/{rack}.json"
        for op in ops:
            for size in sizes:
                r = pair(trnsim, collective_args(rack, op, size, on),
                         lambda j: j["time_ns"] if "time_ns" in j else j["rows"][0]["time_ns"])
                case = f"{op} {size}" + (f" on {ranks} ranks" if ranks else "")
                rows.append({"rack": rack, "case": case, "metric": "time_ns", **r})
        if not extras:
            continue
        r = pair(trnsim, ["bench", "traffic", "--config", cfg, "--pattern", "all-to-all",
                          "--bytes", "1MiB", "--json"], lambda j: j["completion_ns"])
        rows.append({"rack": rack, "case": "traffic all-to-all 1MiB", "metric": "completion_ns",
                     **r})
        r = pair(trnsim, ["bench", "traffic", "--config", cfg, "--pattern", "uniform", "--load",
                          "0.5", "--json"], lambda j: j["latency_ns"]["mean"])
        rows.append({"rack": rack, "case": "traffic uniform 0.5 (mean latency)",
                     "metric": "latency_ns", **r})
        r = pair(trnsim, ["bench", "ping", "--config", cfg, "--json"],
                 lambda j: j["latency_ns"]["max"])
        rows.append({"rack": rack, "case": "ping 64 B (worst pair)", "metric": "latency_ns", **r})
    return rows


def step_json(trnsim, rack, trace, *sets):
    """`trnsim run` of `trace` on `rack`, fast-forward on, with --set's and then `sets`
    (PATH=VALUE): its JSON and wall time."""
    return trnsim_json(trnsim, ["run", "--config", f"configs/racks/{rack}.json", "--trace", trace,
                                "--json", "--set", "sim.fast_forward=true",
                                *set_args([*EXTRA_SETS, *sets])])


def split_rows(trnsim, racks, traces):
    """Each step at flow|packet x op|tile, fast-forward on: the gap split into compute and network."""
    rows = []
    for rack in racks:
        for trace in traces:
            t, wall, seeds = {}, {}, {}
            for net in ("flow", "packet"):
                for comp in ("op", "tile"):
                    def run(more, net=net, comp=comp):
                        j, w = step_json(trnsim, rack, trace, f"rack.fabric.model={net}",
                                         f"chip.compute.model={comp}", *more)
                        return j["performance"]["step_time_ns"], w
                    k = f"{net}_{comp}"
                    t[k], wall[k], seeds[k] = seeded(run)

            def rel(a, b):
                return (t[a] - t[b]) / t[b] if t[b] else 0.0
            rows.append({"rack": rack, "case": f"step {os.path.basename(trace)}",
                         "metric": "step_time_ns", "detailed": t["packet_tile"],
                         "fast": t["flow_op"], "diff": rel("flow_op", "packet_tile"),
                         "wall_detailed_s": wall["packet_tile"], "wall_fast_s": wall["flow_op"],
                         "times_ns": t, "walls_s": wall,
                         "compute_flow": rel("flow_op", "flow_tile"),
                         "compute_packet": rel("packet_op", "packet_tile"),
                         "network_tile": rel("flow_tile", "packet_tile"),
                         "network_op": rel("flow_op", "packet_op")})
            by_seed(rows[-1], seeds["packet_tile"], seeds["flow_op"])
    return rows


def figure_rows(trnsim, racks, traces):
    """Every report figure of each step at both tiers, fast-forward on: a row each, the figures
    one tier lacks (`only_at`) or neither has (null at both) without a difference."""
    rows = []
    for rack in racks:
        for trace in traces:
            figs, wall = {}, {}
            for fid in ("detailed", "fast"):
                def run(more, fid=fid):
                    j, w = step_json(trnsim, rack, trace, f"sim.fidelity={fid}", *more)
                    return j["figures"], w
                figs[fid], wall[fid] = by_seeds(run)
            for i, (d, f) in enumerate(zip(figs["detailed"][0], figs["fast"][0])):
                dvs = [run[i].get("value") for run in figs["detailed"]]
                fvs = [run[i].get("value") for run in figs["fast"]]
                dv = sum(dvs) / len(dvs) if None not in dvs else None
                fv = sum(fvs) / len(fvs) if None not in fvs else None
                row = {"rack": rack, "case": f"figure {f['name']} {os.path.basename(trace)}",
                       "metric": f["name"], "detailed": dv, "fast": fv,
                       "only_at": d.get("only_at") or f.get("only_at"),
                       "wall_detailed_s": wall["detailed"], "wall_fast_s": wall["fast"]}
                if SEEDS and dv is not None and fv is not None:
                    by_seed(row, dvs, fvs)
                if dv is not None and fv is not None:
                    row["diff"] = (fv - dv) / dv if dv else (0.0 if fv == dv else float("inf"))
                else:
                    row["diff"] = None
                rows.append(row)
    return rows


def load_trace(path):
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(os.path.join(ROOT, path), "rt") as f:
            t = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"--traces: {path}: not a JSON trace ({e})")
    if not isinstance(t, dict) or not isinstance(t.get("rank_ops"), list) or \
            not isinstance(t.get("groups"), dict):
        fail(f"--traces: {path}: expected a trnsim-trace object with /rank_ops and /groups")
    return t


def family(group):
    """A group's family: its name without the trailing index (`ep0`, `ep1`, ... are `ep`)."""
    return re.sub(r"\d+$", "", group)


def collective_classes(t, path):
    """(kind, family, bytes per member): the trace's collectives by kind and group family, each
    at its median size (the lower median), in order of their first appearance."""
    sizes, order = {}, []
    for r in t["rank_ops"]:
        for op in r.get("ops", []):
            kind = COLLECTIVES.get(op.get("op"))
            group = op.get("group")
            if not kind or group not in t["groups"]:
                continue
            b = sum(op.get("send_bytes", [])) if op["op"] == "all_to_all_v" else op.get("bytes", 0)
            key = (kind, family(group))
            if key not in sizes:
                sizes[key] = []
                order.append(key)
            sizes[key].append(int(b))
    if not order:
        fail(f"--traces: {path}: no collective on a group to run")
    return [(k, f, sorted(sizes[(k, f)])[(len(sizes[(k, f)]) - 1) // 2]) for k, f in order]


def concurrent_trace(t, classes, path):
    """A trace of `classes` at once: each rank's op of each class on its group of the family
    (the first by name that holds it and another rank)."""
    groups = t["groups"]
    group_of = {}  # (family, rank) -> group
    for name, members in sorted(groups.items()):
        if len(members) > 1:
            for rank in members:
                group_of.setdefault((family(name), rank), name)
    ranks = []
    for r in t["rank_ops"]:
        rank = r["rank"]
        ops = []
        for kind, fam, b in classes:
            g = group_of.get((fam, rank))
            if g is not None:
                ops.append({"id": len(ops), "name": f"{kind}.{fam}", "op": kind, "group": g,
                            "bytes": b})
        ranks.append({"rank": rank, "ops": ops})
    with open(path, "w") as f:
        json.dump({"format": "trnsim-trace", "version": 1, "name": os.path.basename(path),
                   "metadata": {}, "ranks": len(ranks), "groups": groups, "rank_ops": ranks}, f)


def concurrent_rows(trnsim, racks, traces):
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for trace in traces:
            t = load_trace(trace)
            try:
                classes = collective_classes(t, trace)
                cases = [[c] for c in classes] + ([classes] if len(classes) > 1 else [])
                for i, case in enumerate(cases):
                    concurrent_trace(t, case, os.path.join(tmp, f"case{i}.json"))
            except (AttributeError, KeyError, TypeError, ValueError) as e:
                fail(f"--traces: {trace}: an op, rank or group is not as a trnsim-trace has it ({e!r})")
            for i, case in enumerate(cases):
                path = os.path.join(tmp, f"case{i}.json")
                name = (f"{case[0][0].replace('_', '-')} on {case[0][1]}, "
                        f"{case[0][2] / 2**20:.1f} MiB" if len(case) == 1
                        else f"all {len(case)} at once")
                if len(traces) > 1:
                    name = f"{os.path.basename(trace)}: {name}"
                for rack in racks:
                    rows.append(step_row(trnsim, rack, path, name))
    return rows


def step_row(trnsim, rack, trace, case):
    """The row of `trnsim run` of `trace` on `rack` at both tiers, fast-forward on at both (as
    issue #30's target has it; `detailed` alone would leave it off): its step time."""
    r = pair(trnsim, ["run", "--config", f"configs/racks/{rack}.json", "--trace", trace,
                      "--json", "--set", "sim.fast_forward=true"],
             lambda j: j["performance"]["step_time_ns"])
    return {"rack": rack, "case": case, "metric": "step_time_ns", **r}


def step_rows(trnsim, racks, traces=STEP_TRACES):
    return [step_row(trnsim, rack, trace, f"step {os.path.basename(trace)}")
            for rack in racks for trace in traces]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trnsim", default=os.path.join(ROOT, "build/release/src/cli/trnsim"))
    ap.add_argument("--racks", default=",".join(RACKS))
    ap.add_argument("--part", choices=["network", "step", "concurrent", "figures", "all"], default="all",
                    help="all: network and step")
    ap.add_argument("--quick", action="store_true", help="two sizes per collective")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--ops", default=",".join(OPS), help="collectives of the network part")
    ap.add_argument("--sizes", default="", help="sizes of the collectives (default: 1MiB, "
                    "16MiB, 256MiB, 1GiB; --quick: 1MiB, 64MiB)")
    ap.add_argument("--ranks", type=int, default=0,
                    help="network part: the collectives on ranks 0..N-1 (default: every chip)")
    ap.add_argument("--collectives-only", action="store_true",
                    help="network part without traffic and ping")
    ap.add_argument("--queueing", choices=["voq", "input_fifo"],
                    help="rack.fabric.queueing of the packet fabric (default: the config's)")
    ap.add_argument("--flow-calibration", choices=["none", "packet", "workload", "both"],
                    help="rack.fabric.flow_calibration of the flow network (default: the "
                    "config's); both: packet with --also-uncalibrated")
    ap.add_argument("--also-uncalibrated", action="store_true",
                    help="a column of the fast tier with rack.fabric.flow_calibration=none")
    ap.add_argument("--set", action="append", default=[], metavar="PATH=VALUE",
                    help="passed to every run")
    ap.add_argument("--traces", default="", help="traces of the step part (default: "
                    + ", ".join(STEP_TRACES) + ") or of the concurrent part (default: "
                    + ", ".join(CONCURRENT_TRACES) + ")")
    ap.add_argument("--split", action="store_true",
                    help="step part: the four network x compute combinations, fast-forward on")
    ap.add_argument("--seeds", type=int, default=0, metavar="N",
                    help="each run once per sim.seed = 1..N "
                    "(2-100); a row's times are the means, its spread by seed beside it")
    ap.add_argument("--reference-packets", default="", metavar="SIZES",
                    help="network part: the detailed side of each collective outside its target "
                    "again at these packet sizes, e.g. 64KiB,16KiB")
    a = ap.parse_args()
    ops = [o for o in a.ops.split(",") if o]
    for o in ops:
        if o not in OPS:
            fail(f"--ops: unknown collective '{o}' (expected some of {', '.join(OPS)})")
    sizes = [x for x in a.sizes.split(",") if x] or (QUICK_SIZES if a.quick else SIZES)
    packets = [x for x in a.reference_packets.split(",") if x]
    for pb in packets:
        if not re.fullmatch(r"[1-9]\d*(B|KiB|MiB)", pb):
            fail(f"--reference-packets: '{pb}' is not a packet size such as 16KiB")
    if a.seeds:
        if not 2 <= a.seeds <= 100:
            fail(f"--seeds: expected 2 to 100 seeds, got {a.seeds}")
        if packets:
            fail("--seeds: not with --reference-packets (one seed's runs)")
        if any(kv.split("=", 1)[0].replace("/", ".").strip(".") == "sim.seed" for kv in a.set):
            fail("--seeds: sim.seed is set with --set too; give one of them")
        SEEDS.extend(range(1, a.seeds + 1))
    if a.ranks < 0 or a.ranks == 1:
        fail(f"--ranks: expected 0 (every chip) or at least 2 ranks, got {a.ranks}")
    EXTRA_SETS.extend(a.set)
    if a.queueing:
        EXTRA_SETS.append(f"rack.fabric.queueing={a.queueing}")
    if a.flow_calibration:
        cal = "packet" if a.flow_calibration == "both" else a.flow_calibration
        EXTRA_SETS.append(f"rack.fabric.flow_calibration={cal}")
    if a.flow_calibration == "both" or a.also_uncalibrated:
        BOTH.append(True)
    if not os.access(a.trnsim, os.X_OK):
        fail(f"--trnsim: {a.trnsim} is not an executable")
    racks = [r for r in a.racks.split(",") if r]
    for r in racks:
        if not os.path.exists(os.path.join(ROOT, "configs/racks", r + ".json")):
            fail(f"--racks: no preset configs/racks/{r}.json")
    traces = [t for t in a.traces.split(",") if t] or (
        CONCURRENT_TRACES if a.part == "concurrent" else STEP_TRACES)
    for t in traces:
        if not os.path.exists(os.path.join(ROOT, t)):
            fail(f"--traces: no trace {t}")
    rows = []
    if a.part in ("network", "all"):
        rows += network_rows(a.trnsim, racks, sizes, ops, not a.collectives_only, a.ranks)
    if a.part in ("step", "all"):
        rows += (split_rows if a.split else step_rows)(a.trnsim, racks, traces)
    if a.part == "concurrent":
        rows += concurrent_rows(a.trnsim, racks, traces)
    if a.part == "figures":
        rows += figure_rows(a.trnsim, racks, traces)
    for r in rows:
        a_ = aim_of(r)
        r["aim_category"], r["aim"] = a_ if a_ else (None, None)
        r["within"] = abs(r["diff"]) <= r["aim"] if a_ and r["diff"] is not None else None
    if packets:
        reference_spread(a.trnsim, rows, packets)
    if a.json:
        print(json.dumps(rows, indent=1))
        return 0
    extra = f" {'fast uncal':>14} {'diff':>8}" if BOTH else ""
    print(f"{'rack':24} {'case':38} {'detailed':>14} {'fast':>14} {'diff':>8} "
          f"{'wall d/f (s)':>14}{extra}")
    def num(x, width):
        if x is None:
            return f"{'—':>{width}}"
        return f"{x:{width}.1f}" if abs(x) >= 1000 else f"{x:{width}.4g}"
    for r in rows:
        extra = (f" {r['fast_none']:14.1f} {100 * r['diff_none']:+7.2f}%"
                 if "fast_none" in r else "")
        diff = f"{100 * r['diff']:+7.2f}%" if r["diff"] is not None else \
            f"{(r['only_at'] + ' only') if r.get('only_at') else 'neither':>8}"
        print(f"{r['rack']:24} {r['case']:38} {num(r['detailed'], 14)} {num(r['fast'], 14)} "
              f"{diff} {r['wall_detailed_s']:6.2f}/{r['wall_fast_s']:<6.2f}"
              f"{extra}")
        if "diff_by_seed" in r:
            def spread(v):
                return f"{num(min(v), 0).strip()}-{num(max(v), 0).strip()}"
            ds = r["diff_by_seed"]
            print(f"{'':24} {f'  seeds 1-{len(ds)}: detailed, fast, diff':38} "
                  f"{spread(r['detailed_by_seed']):>14} {spread(r['fast_by_seed']):>14} "
                  f"{100 * min(ds):+.2f}% to {100 * max(ds):+.2f}%")
        if "times_ns" in r:
            t = r["times_ns"]
            print(f"{'':24} {'  flow+tile / packet+op':38} {t['flow_tile']:14.1f} "
                  f"{t['packet_op']:14.1f}")
            print(f"{'':24} {'  compute (flow, packet)':38} {100 * r['compute_flow']:+13.2f}% "
                  f"{100 * r['compute_packet']:+13.2f}%")
            print(f"{'':24} {'  network (tile, op)':38} {100 * r['network_tile']:+13.2f}% "
                  f"{100 * r['network_op']:+13.2f}%")
    lines = summary(rows)
    if lines:
        print("\nissue #30's targets (|fast - detailed|):")
        for line in lines:
            print("  " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
