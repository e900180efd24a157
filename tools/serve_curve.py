#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The throughput-interactivity curve of a serving spec (docs/serving.md): `trnsim serve` in a
closed loop at each concurrency, on one or more racks, as CSV and (with matplotlib) a PNG of
output tokens/s per chip against tokens/s per user, one line per rack.

  tools/serve_curve.py SPEC --users 1,2,4,8,16,32 [--trnsim PATH] [--rack trn3-gen2-ultraserver --rack trn2-ultraserver]
      [--set key=value ...] [-j 2] [--out PREFIX]

Each point is one `trnsim serve --json` process (its iteration shapes simulated in its own
children); -j points at a time. Runs on Debian's /usr/bin/python3.
"""
import argparse
import concurrent.futures
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TRNSIM = ROOT / "build/release/src/cli/trnsim"


def point(trnsim, spec, rack, users, sets):
    cmd = [trnsim, "serve", spec, "--json", "--set", "arrivals.kind=closed",
           "--set", f"arrivals.users={users}"]
    for s in sets:
        cmd += ["--set", s]
    if rack:
        cmd += ["--config", rack]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stderr}")
    r = json.loads(p.stdout)
    res = r["results"]
    return {
        "rack": r["machine"]["rack"], "users": users,
        "output_tokens_per_s_per_chip": res["throughput"]["output_tokens_per_s_per_chip"],
        "tokens_per_s_per_user": res["throughput"]["tokens_per_s_per_user"]["mean"],
        "ttft_p50_s": res["ttft_s"]["p50"], "ttft_p99_s": res["ttft_s"]["p99"],
        "tpot_p50_s": res["tpot_s"]["p50"], "tpot_p99_s": res["tpot_s"]["p99"],
        "output_tokens_per_s_per_mw": res["energy"]["output_tokens_per_s_per_mw"],
        "shapes_simulated": r["timing"]["shapes_simulated"],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("spec")
    ap.add_argument("--trnsim", default=str(TRNSIM), help="the trnsim binary (default: the release build)")
    ap.add_argument("--users", default="1,2,4,8,16,32")
    ap.add_argument("--rack", action="append", default=[])
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("-j", type=int, default=1)
    ap.add_argument("--out", default="serve-curve")
    a = ap.parse_args()
    try:
        users = [int(u) for u in a.users.split(",")]
    except ValueError:
        users = []
    if not users or min(users) < 1:
        print(f"serve_curve.py: error: --users: expected comma-separated integers >= 1, got '{a.users}'",
              file=sys.stderr)
        sys.exit(2)
    racks = a.rack or [""]
    with concurrent.futures.ThreadPoolExecutor(a.j) as pool:
        futs = [pool.submit(point, a.trnsim, a.spec, r, u, a.set) for r in racks for u in users]
        rows = [f.result() for f in futs]
    cols = list(rows[0].keys())
    text = ",".join(cols) + "\n" + "".join(",".join(str(r[c]) for c in cols) + "\n" for r in rows)
    Path(a.out + ".csv").write_text(text)
    print(text, end="")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, ax = plt.subplots(figsize=(6, 4))
    for rack in dict.fromkeys(r["rack"] for r in rows):
        pts = [r for r in rows if r["rack"] == rack]
        ax.plot([p["tokens_per_s_per_user"] for p in pts],
                [p["output_tokens_per_s_per_chip"] for p in pts], marker="o", label=rack)
        for p in pts:
            ax.annotate(str(p["users"]), (p["tokens_per_s_per_user"], p["output_tokens_per_s_per_chip"]),
                        fontsize=7)
    ax.set_xlabel("output tokens/s per user (interactivity)")
    ax.set_ylabel("output tokens/s per chip")
    ax.legend()
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(a.out + ".png", dpi=120)


if __name__ == "__main__":
    main()
