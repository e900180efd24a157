#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# tools/plot: unit parsing, the Pareto front on a hand-made set, and both plots written as PNG
# and SVG from a merged sweep with seeds; then the plots of a run and of benchmarks (step
# breakdown, energy, utilisation over time, collective bandwidth, load against latency) from the
# golden outputs (tests/golden/expected). Exit 77 (skipped) without matplotlib.
import importlib.machinery
import importlib.util
import json
import sys
import tempfile
from pathlib import Path

try:
    import matplotlib  # noqa: F401
except ImportError:
    print("skipped: python3-matplotlib is not installed")
    sys.exit(77)

src = Path(__file__).resolve().parents[2]
loader = importlib.machinery.SourceFileLoader("plot", str(src / "tools" / "plot"))
spec = importlib.util.spec_from_loader("plot", loader)
plot = importlib.util.module_from_spec(spec)
loader.exec_module(plot)

assert plot.si_value("256KiB") == (262144.0, "B"), plot.si_value("256KiB")
assert plot.si_value("4.9TB/s") == (4.9e12, "B/s")
v, u = plot.si_value("150ns")
assert abs(v - 150e-9) < 1e-20 and u == "s"
assert plot.si_value(8) == (8.0, "")
assert plot.si_value("fast") is None
# (1, 5) and (2, 2) and (4, 1) are not beaten in both; (3, 3) is beaten by (2, 2), (5, 5) by all.
pts = [(1, 5), (2, 2), (3, 3), (4, 1), (5, 5)]
assert plot.pareto_front(pts, [False, False]) == [0, 1, 3]
assert plot.pareto_front(pts, [True, True]) == [4]

def group(bw, mean, sd):
    return {"values": {"bandwidth": bw}, "points": [], "ok": 2, "failed": 0, "pending": 0,
            "metrics": {"step_time_ns": {"n": 2, "mean": mean, "stddev": sd, "min": mean, "max": mean},
                        "energy_j": {"n": 2, "mean": 1e-6 * mean, "stddev": 0, "min": 0, "max": 0}}}

sweep = {"name": "t", "axes": [{"name": "bandwidth", "path": "chip.hbm.bandwidth", "seed": False},
                               {"name": "seed", "path": "sim.seed", "seed": True}],
         "metrics": [{"name": "step_time_ns", "pointer": "/step_time_ns", "unit": "ns"},
                     {"name": "energy_j", "pointer": "/energy/total_j", "unit": "J"}],
         "groups": [group("2TB/s", 3e6, 1e5), group("4TB/s", 2e6, 5e4), group("500GB/s", 9e6, 0)]}
with tempfile.TemporaryDirectory() as d:
    (Path(d) / "sweep.json").write_text(json.dumps(sweep))
    plot.plot_metric(sweep, "step_time_ns", None, f"{d}/m", None)
    plot.plot_pareto(sweep, "step_time_ns", "energy_j", [], f"{d}/p", None)
    for name in ("m", "p"):
        assert (Path(d) / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert b"<svg" in (Path(d) / f"{name}.svg").read_bytes()[:1000]
assert plot.binary_size(1024) == "1 KiB", plot.binary_size(1024)
assert plot.binary_size(64 * 2**20) == "64 MiB"
assert plot.binary_size(512) == "512 B"

golden = src / "tests" / "golden" / "expected"
run = golden / "run_trn3_gen2"
with tempfile.TemporaryDirectory() as d:
    plot.plot_breakdown(run, f"{d}/b", None)
    plot.plot_energy(run, f"{d}/e", None)
    plot.plot_utilisation(run, f"{d}/u", None)
    plot.plot_collective([golden / "bench_collective_ar_1mib" / "stdout.json",
                          golden / "bench_collective_ar_64mib" / "stdout.json"], f"{d}/c", None)
    plot.plot_latency([golden / "bench_traffic_uniform_half" / "stdout.json"], f"{d}/l", None)
    for name in "beucl":
        assert (Path(d) / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
        assert b"<svg" in (Path(d) / f"{name}.svg").read_bytes()[:1000], name
# `bench traffic --sweep --json` prints one object whose "points" are the loads (it crashed on
# KeyError 'offered_load'): its points are plotted.
with tempfile.TemporaryDirectory() as d:
    one = json.loads((golden / "bench_traffic_uniform_half" / "stdout.json").read_text())
    pts = []
    for load in (0.25, 0.5):
        p = dict(one)
        p["offered_load"] = load
        pts.append(p)
    sweep_out = {"benchmark": "traffic", "pattern": one["pattern"], "rack": one["rack"],
                 "bound_load": one["bound_load"], "points": pts}
    (Path(d) / "sweep.json").write_text(json.dumps(sweep_out))
    assert len(plot.bench_rows([Path(d) / "sweep.json"], "traffic")) == 2
    plot.plot_latency([Path(d) / "sweep.json"], f"{d}/s", None)
    assert (Path(d) / "s.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

# A run's plots go beside the run directory, not into it: `trnsim run --out` refuses to replace a
# directory holding files it does not write.
import shutil
import subprocess
with tempfile.TemporaryDirectory() as d:
    r = Path(d) / "run"
    r.mkdir()
    shutil.copy(run / "report.json", r / "report.json")
    assert plot.beside_run(r, "breakdown") == Path(d).resolve() / "run-breakdown"
    assert plot.beside_run(r / "report.json", "energy") == Path(d).resolve() / "run-energy"
    p = subprocess.run([sys.executable, str(src / "tools" / "plot"), "--breakdown", str(r)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert sorted(x.name for x in r.iterdir()) == ["report.json"], list(r.iterdir())
    assert (Path(d) / "run-breakdown.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

# Issue 31 item 19. Every title lies inside the figure as saved (wrapped, not clipped).
def inside(fig):
    fig.canvas.draw()
    rend = fig.canvas.get_renderer()
    for t in plot._titles(fig):
        box = t.get_window_extent(rend)
        assert fig.bbox.x0 <= box.x0 and box.x1 <= fig.bbox.x1, (t.get_text(), box, fig.bbox)
        assert fig.bbox.y0 <= box.y0 and box.y1 <= fig.bbox.y1, (t.get_text(), box, fig.bbox)
    return True

import matplotlib.pyplot as plt
with tempfile.TemporaryDirectory() as d:
    # The breakdown's legend names waiting for peers apart from other waiting; rank 0's stacked
    # bars add up to the step time (golden run, since the automatic buffer's drain term of
    # 35484d8: 445,848.805 ns of its waiting is for peers; 443,476.735 before, from the cut-through
    # share of 21d6bec; 447,636.526 before that).
    fig = plot.plot_breakdown(run, f"{d}/b", None)
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "waiting for peers" in legend, legend
    assert "other waiting (dependencies, done early)" in legend, legend
    rep = json.loads((run / "report.json").read_text())
    step_s = rep["breakdown"]["step_time_ns"] * 1e-9
    tops = [c.patches[0].get_y() + c.patches[0].get_height() for c in fig.axes[0].containers]
    assert abs(tops[-1] - step_s) < 1e-12, (tops, step_s)
    peers = fig.axes[0].containers[3].patches[0].get_height()
    assert abs(peers - 445848.805e-9) < 1e-15, peers
    assert inside(fig)
    plt.close(fig)
    # A long title is wrapped inside the figure, and keeps its words in order.
    long_title = "golden-moe-16 on Trn3 Gen2 UltraServer: " + "a very long title " * 8
    fig = plot.plot_energy(run, f"{d}/e", long_title)
    assert inside(fig)
    assert " ".join(fig._suptitle.get_text().split()) == " ".join(long_title.split())
    assert "\n" in fig._suptitle.get_text()
    plt.close(fig)
    fig = plot.plot_energy(run, f"{d}/e2", None)
    assert inside(fig)
    plt.close(fig)
    # A time or a rate starts at zero on a sweep's axis (3 to 9 ms here would otherwise start
    # near 2.7 ms).
    fig = plot.plot_metric(sweep, "step_time_ns", None, f"{d}/m", None)
    assert fig.axes[0].get_ylim()[0] == 0, fig.axes[0].get_ylim()
    assert inside(fig)
    plt.close(fig)
    # The latency plot is latency (y) against load (x): so its title says, both from zero.
    fig = plot.plot_latency([golden / "bench_traffic_uniform_half" / "stdout.json"], f"{d}/l", None)
    assert fig.axes[0].get_title() == "message latency against accepted load", fig.axes[0].get_title()
    assert fig.axes[0].get_ylim()[0] == 0 and fig.axes[0].get_xlim()[0] == 0
    plt.close(fig)
    # Collective labels name the op and the size: the legend the sizes swept, the annotation the
    # size the algorithm holds from.
    fig = plot.plot_collective([golden / "bench_collective_ar_1mib" / "stdout.json",
                                golden / "bench_collective_ar_64mib" / "stdout.json"], f"{d}/c", None)
    ax = fig.axes[0]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["all-reduce, 144 ranks, 1 MiB to 64 MiB"], legend
    notes = [c.get_text() for c in ax.texts]
    algs = [json.loads((golden / f"bench_collective_ar_{n}" / "stdout.json").read_text())["algorithm"]
            for n in ("1mib", "64mib")]
    want = [f"all-reduce 1 MiB: {algs[0]}"] + ([f"all-reduce 64 MiB: {algs[1]}"] if algs[1] != algs[0] else [])
    assert notes == want, (notes, want)
    assert ax.get_ylim()[0] == 0
    assert inside(fig)
    plt.close(fig)

# --curve: two serving sweeps (one a rack) on one figure; the lines are each sweep's groups in
# order of load, whatever order they were merged in; a training sweep is refused.
def serve_group(users, per_chip, per_user):
    ms = {"output_tokens_per_s_per_chip": per_chip, "tokens_per_s_per_user_p50": per_user}
    for name in ("ttft", "tpot"):
        for q, k in (("p50", 1), ("p90", 2), ("p99", 3)):
            ms[f"{name}_{q}_s"] = k * 1e-3 * users
    return {"values": {"users": users}, "points": [], "ok": 1, "failed": 0, "pending": 0,
            "metrics": {n: {"n": 1, "mean": v, "stddev": 0, "min": v, "max": v} for n, v in ms.items()}}

def serve_sweep(name, groups):
    return {"name": name, "runs": "serving",
            "axes": [{"name": "users", "path": "arrivals.users", "seed": False}],
            "metrics": [], "groups": groups}

# One sweep with a rack axis, and requests that follow the users: a line per rack.
both = serve_sweep("both", [dict(serve_group(u, 1, 1), values={"rack": r, "users": u, "requests": 4 * u})
                            for r in ("a", "b") for u in (8, 64)])
both["axes"] = [{"name": "rack", "path": "rack", "seed": False},
                {"name": "users", "path": "arrivals.users", "seed": False},
                {"name": "requests", "path": "run.requests", "seed": False}]
lines, load = plot.curve_series([both], None)
assert [(t, len(gs)) for t, _, gs in lines] == [("rack=a", 2), ("rack=b", 2)], lines
trn3 = serve_sweep("trn3", [serve_group(64, 900, 40), serve_group(8, 200, 90)])
trn2 = serve_sweep("trn2", [serve_group(8, 150, 70), serve_group(64, 400, 20)])
lines, load = plot.curve_series([trn3, trn2], None)
assert load == "users"
assert [(t, [g["values"]["users"] for g in gs]) for t, _, gs in lines] == [("trn3", [8, 64]), ("trn2", [8, 64])], lines
with tempfile.TemporaryDirectory() as d:
    plot.plot_curve([trn3, trn2], None, f"{d}/curve", None)
    assert (Path(d) / "curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    (Path(d) / "sweep.json").write_text(json.dumps(sweep))
    p = subprocess.run([sys.executable, str(src / "tools" / "plot"), "--curve", d], capture_output=True, text=True)
    assert p.returncode == 2 and "is not a serving sweep" in p.stderr, p.stderr
print("1 passed, 0 failed")
