#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# tools/plot on a run and on benchmarks: the step breakdown, energy, utilisation over time,
# collective bandwidth against size and load against latency, each written as PNG and SVG from the
# golden outputs (tests/golden/expected). Exit 77 (skipped) without matplotlib.
import importlib.machinery
import importlib.util
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
import matplotlib  # noqa: E402
matplotlib.use("Agg")

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
print("1 passed, 0 failed")
