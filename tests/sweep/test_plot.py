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
print("1 passed, 0 failed")
