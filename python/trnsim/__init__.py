# SPDX-License-Identifier: MIT
"""Drive trnsim from Python: run the CLI, load its outputs into pandas, build specs.

One simulation per process stays the rule: every function that simulates runs the `trnsim`
binary in a child process (SystemC elaborates once per process). The binary is, in order:
the TRNSIM_BIN environment variable; the trnsim beside this package (an installed prefix's
bin/, or the build tree this package was imported from: build/<preset>/src/cli/); `trnsim` on
PATH. docs/python.md describes every function.

    import trnsim
    r = trnsim.run(trace="mixtral-moe-16", out="out/py-run")
    r.summary                     # summary.csv, one row
    r.report["performance"]["step_time_ns"]
    trnsim.load_breakdown(r.dir)  # one row per rank

Needs pandas (Debian: python3-pandas) for the loaders; the spec builders need nothing.
"""

import csv
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

__all__ = [
    "TrnsimError", "find_binary", "trnsim", "Run", "run", "sweep", "serve", "claims",
    "load_report", "report_frame", "load_summary", "load_breakdown", "load_ops",
    "load_sweep", "load_sweep_groups", "load_sweep_points", "load_claims", "load_serving",
    "load_requests", "axis", "sweep_spec", "serving_spec", "write_spec",
]

# Build presets whose directories are looked in, in this order, from a source checkout.
_PRESETS = ("release", "dev", "asan", "fuzz")


class TrnsimError(RuntimeError):
    """trnsim exited non-zero: `returncode` (2 bad input, 1 internal error), `args`, `stderr`."""

    def __init__(self, cmd, returncode, stderr):
        self.cmd, self.returncode, self.stderr = cmd, returncode, stderr
        tail = stderr.strip().splitlines()[-5:] if stderr else []
        super().__init__(f"trnsim exited {returncode}: {' '.join(cmd[1:])}\n" + "\n".join(tail))


def _candidates():
    pkg = Path(os.path.abspath(__file__)).parent     # not resolved: a build tree links it
    site = pkg.parent
    # Installed: PREFIX/lib/python3.X/dist-packages/trnsim -> PREFIX/bin/trnsim.
    yield site.parent.parent.parent / "bin" / "trnsim"
    # Build tree: BUILD/python/trnsim -> BUILD/src/cli/trnsim.
    yield site.parent / "src" / "cli" / "trnsim"
    # Source checkout: SRC/python/trnsim -> SRC/build/<preset>/src/cli/trnsim.
    for preset in _PRESETS:
        yield site.parent / "build" / preset / "src" / "cli" / "trnsim"


def find_binary():
    """The trnsim executable this package runs (see the module's doc for the order)."""
    env = os.environ.get("TRNSIM_BIN")
    if env:
        if not (os.path.isfile(env) and os.access(env, os.X_OK)):
            raise FileNotFoundError(f"TRNSIM_BIN={env}: not an executable file")
        return env
    for c in _candidates():
        if c.is_file() and os.access(c, os.X_OK):
            return str(c)
    found = shutil.which("trnsim")
    if found:
        return found
    raise FileNotFoundError("no trnsim binary: set TRNSIM_BIN, build the project "
                            "(tools/build.sh release) or put trnsim on PATH")


def trnsim(*args, check=True, cwd=None):
    """Runs `trnsim ARGS...` and returns the CompletedProcess (text stdout and stderr). With
    check (the default) a non-zero exit raises TrnsimError carrying trnsim's message."""
    cmd = [find_binary()] + [str(a) for a in args]
    env = dict(os.environ)
    env.setdefault("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1")
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=env)
    if check and p.returncode != 0:
        raise TrnsimError(cmd, p.returncode, p.stderr)
    return p


def _out_dir(out, prefix):
    if out is None:
        return Path(tempfile.mkdtemp(prefix=f"trnsim-{prefix}-"))
    return Path(out)


def _common(config, sets, seed, fidelity):
    args = []
    if config is not None:
        args += ["--config", config]
    for s in _set_list(sets):
        args += ["--set", s]
    if seed is not None:
        args += ["--seed", seed]
    if fidelity is not None:
        args += ["--fidelity", fidelity]
    return args


def _set_list(sets):
    """--set assignments from a dict {path: value} or a list of "path=value" strings."""
    if sets is None:
        return []
    if isinstance(sets, dict):
        return [f"{k}={_set_value(v)}" for k, v in sets.items()]
    return list(sets)


def _set_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, dict)):
        return json.dumps(v)
    return str(v)


class Run:
    """A `trnsim run --out` directory: `dir`, `report` (report.json as a dict), `summary`
    (summary.csv as a one-row DataFrame), `breakdown` (one row per rank), `ops()` (ops.csv)."""

    def __init__(self, directory, stdout=""):
        self.dir = Path(directory)
        self.stdout = stdout
        self.report = load_report(self.dir)

    @property
    def step_time_ns(self):
        return self.report["performance"]["step_time_ns"]

    @property
    def summary(self):
        return load_summary(self.dir)

    @property
    def breakdown(self):
        return load_breakdown(self.dir)

    def ops(self):
        return load_ops(self.dir)

    def __repr__(self):
        return f"Run({str(self.dir)!r}, step_time_ns={self.step_time_ns})"


def run(trace=None, config=None, out=None, sets=None, seed=None, fidelity=None, args=()):
    """`trnsim run` into `out` (default: a new temporary directory) and returns its Run.
    trace and config are files or names (`trnsim presets`); sets a dict {path: value} or a list
    of "path=value"; args more of `trnsim run`'s options (["--out-files", "report.json"])."""
    d = _out_dir(out, "run")
    cmd = ["run"] + _common(config, sets, seed, fidelity)
    if trace is not None:
        cmd += ["--trace", trace]
    p = trnsim(*cmd, "--out", d, *args)
    return Run(d, p.stdout)


def _spec_file(spec, where):
    """A spec given as a dict is written as JSON into `where`; a path is used as it is."""
    if isinstance(spec, dict):
        return write_spec(spec, Path(where) / f"{spec.get('name', 'spec')}.json")
    return Path(spec)


def sweep(spec, out=None, jobs=None, args=()):
    """`trnsim sweep SPEC --out OUT` (spec a file, or a dict as sweep_spec builds); returns the
    merged groups as load_sweep does (one row per group, FIGURE and FIGURE_sd columns)."""
    d = _out_dir(out, "sweep")
    with tempfile.TemporaryDirectory(prefix="trnsim-spec-") as tmp:
        f = _spec_file(spec, tmp)
        cmd = ["sweep", f, "--out", d]
        if jobs is not None:
            cmd += ["-j", jobs]
        trnsim(*cmd, *args)
    return load_sweep(d)


def serve(spec=None, out=None, config=None, sets=None, args=()):
    """`trnsim serve [SPEC] --out OUT` (spec a file, a name, or a dict as serving_spec builds);
    returns load_serving of the output (report, summary, requests)."""
    d = _out_dir(out, "serve")
    with tempfile.TemporaryDirectory(prefix="trnsim-spec-") as tmp:
        cmd = ["serve"]
        if spec is not None:
            cmd.append(_spec_file(spec, tmp) if isinstance(spec, dict) else spec)
        cmd += _common(config, sets, None, None)
        trnsim(*cmd, "--out", d, *args)
    return load_serving(d)


def claims(file, out=None, quick=False, args=()):
    """`trnsim claims FILE --out OUT [--quick]`; returns load_claims of its results.json. A
    claim that fails its tolerance makes trnsim exit 1 after writing the results: they are
    loaded all the same (the `verdict` column says which)."""
    d = _out_dir(out, "claims")
    cmd = ["claims", file, "--out", d] + (["--quick"] if quick else []) + list(args)
    p = trnsim(*cmd, check=False)
    results = d / "results.json"
    if p.returncode != 0 and (p.returncode == 2 or not results.exists()):
        raise TrnsimError([find_binary()] + [str(c) for c in cmd], p.returncode, p.stderr)
    return load_claims(results)


# Loaders -------------------------------------------------------------------------------------

def _pd():
    try:
        import pandas
    except ImportError as e:  # pragma: no cover - Debian ships python3-pandas
        raise ImportError("trnsim's loaders need pandas (Debian: apt-get install "
                          "python3-pandas)") from e
    return pandas


def _read_csv(path):
    # round_trip: each number as the double its text names, as json.load reads report.json
    # (pandas' default parser can be one unit in the last place off: 90.10695116874703 read as
    # 90.10695116874705).
    return _pd().read_csv(path, float_precision="round_trip")


def _file(path, name):
    p = Path(path)
    return p / name if p.is_dir() else p


def _read_json(path):
    with open(path) as f:
        return json.load(f)


def load_report(path):
    """report.json of a run (or serving) directory, as a dict."""
    return _read_json(_file(path, "report.json"))


def report_frame(path):
    """report.json flattened into one row: columns are the paths joined by "." (a list, such
    as the per-rank breakdown, stays one cell; load_breakdown gives it rows)."""
    return _pd().json_normalize(load_report(path), sep=".")


def load_summary(path):
    """summary.csv of a run, serving or sweep-point directory: one row, report.json's headline
    figures (docs/report.md#summarycsv); empty fields are NaN."""
    return _read_csv(_file(path, "summary.csv"))


def load_breakdown(path):
    """The step breakdown of every rank (report.json /breakdown/ranks): one row per rank."""
    return _pd().DataFrame(load_report(path)["breakdown"]["ranks"])


def load_ops(path):
    """ops.csv of a run (one row per op), when the run wrote it."""
    return _read_csv(_file(path, "ops.csv"))


def load_sweep(path):
    """sweep.csv of a merged sweep directory: one row per group (the points that differ only in
    the seed), the axis values, then each figure's mean (and FIGURE_sd with a seed axis)."""
    return _read_csv(_file(path, "sweep.csv"))


def load_sweep_groups(path):
    """sweep.json's groups as rows: the axis values, ok/failed/pending counts, and per metric
    METRIC (the mean), METRIC_sd, METRIC_min, METRIC_max, METRIC_n."""
    j = _read_json(_file(path, "sweep.json"))
    rows = []
    for g in j["groups"]:
        row = dict(g["values"])
        for k in ("ok", "failed", "pending"):
            row[k] = g.get(k)
        for name, s in g["metrics"].items():
            row[name] = s.get("mean")
            for stat, col in (("stddev", "sd"), ("min", "min"), ("max", "max"), ("n", "n")):
                row[f"{name}_{col}"] = s.get(stat)
        rows.append(row)
    return _pd().DataFrame(rows)


def load_sweep_points(path):
    """Every point of a sweep directory, finished or not: `point` (its id), the axis values,
    `status` ("ok", "failed", or "pending" without a status.json), then the point's summary.csv
    columns where it has one."""
    pd = _pd()
    rows = []
    for d in sorted((Path(path) / "points").iterdir()):
        if not (d / "point.json").exists():
            continue
        row = {"point": d.name}
        row.update(_read_json(d / "point.json").get("values", {}))
        st = d / "status.json"
        row["status"] = _read_json(st).get("status", "?") if st.exists() else "pending"
        s = d / "run" / "summary.csv"
        if s.exists():
            with open(s, newline="") as f:
                r = next(csv.DictReader(f), None)
            if r:
                row.update({k: _number(v) for k, v in r.items()})
        rows.append(row)
    return pd.DataFrame(rows)


def _number(v):
    if v == "":
        return float("nan")
    try:
        return int(v)
    except ValueError:
        try:
            return float(v)
        except ValueError:
            return v


def load_claims(path):
    """results.json of `trnsim claims` (a directory or the file): one row per claim (id,
    claim, claimed, measured, unit, verdict, ...)."""
    return _pd().DataFrame(_read_json(_file(path, "results.json"))["rows"])


class Serving:
    """The outputs of `trnsim serve --out DIR`: `dir`, `report` (dict), `summary` (one row),
    `requests` (one row per request; None where requests.csv was not kept, as in a serving
    sweep's points, which keep report.json and summary.csv)."""

    def __init__(self, directory):
        self.dir = Path(directory)
        self.report = load_report(self.dir)
        self.summary = load_summary(self.dir)
        self.requests = load_requests(self.dir) if (self.dir / "requests.csv").exists() else None

    def __repr__(self):
        n = "no requests.csv" if self.requests is None else f"{len(self.requests)} requests"
        return f"Serving({str(self.dir)!r}, {n})"


def load_serving(path):
    """A `trnsim serve --out` directory as a Serving (report, summary, requests)."""
    return Serving(path)


def load_requests(path):
    """requests.csv of a serving directory: one row per request (arrival, lengths, replica,
    warm-up, refused, preemptions, queueing, TTFT, E2E, TPOT)."""
    return _read_csv(_file(path, "requests.csv"))


# Spec builders -------------------------------------------------------------------------------

def _path_or_name(v):
    """A file that exists becomes absolute (a spec written elsewhere still finds it); anything
    else (a preset or trace name) is kept as it is."""
    if v is None:
        return None
    p = Path(v)
    return str(p.resolve()) if p.exists() else str(v)


def axis(path, values=None, range=None, samples=None, name=None, unit=None):
    """One sweep axis (docs/sweeps.md): a --set path and exactly one of values (a list),
    range ({"from", "to", "step"} or {"from", "to", "count"}), samples."""
    given = [k for k, v in (("values", values), ("range", range), ("samples", samples))
             if v is not None]
    if len(given) != 1:
        raise ValueError(f"axis {path}: give exactly one of values, range, samples (got "
                         f"{', '.join(given) or 'none'})")
    a = {"path": path}
    if name is not None:
        a["name"] = name
    a[given[0]] = {"values": values, "range": range, "samples": samples}[given[0]]
    if unit is not None:
        a["unit"] = unit
    return a


def sweep_spec(name, config, axes, trace=None, sets=None, combine=None, filter=None,
               run_files=None, description=None, serving=None):
    """A sweep file as a dict (docs/sweeps.md). config and trace are preset or bundled-trace
    names, or files (made absolute, so the spec may be written anywhere); axes a list of
    axis(...) or dicts; sets a dict or a list of "path=value". serving (a serving spec's name
    or file) makes it a serving sweep ("command": "serve", docs/sweeps.md#serving-sweeps):
    each point runs `trnsim serve`, config (optional) is its rack, and trace is not taken."""
    if not axes:
        raise ValueError("sweep_spec: at least one axis")
    if serving is None and config is None:
        raise ValueError("sweep_spec: a training sweep needs a config")
    if serving is not None and (trace is not None or run_files is not None):
        raise ValueError("sweep_spec: a serving sweep takes no trace or run_files")
    s = {"name": name}
    if description is not None:
        s["description"] = description
    if serving is not None:
        s["command"] = "serve"
        s["serving"] = _path_or_name(serving)
    if config is not None:
        s["config"] = _path_or_name(config)
    if trace is not None:
        s["trace"] = _path_or_name(trace)
    if sets:
        s["set"] = _set_list(sets)
    if combine is not None:
        s["combine"] = combine
    s["axes"] = list(axes)
    if filter is not None:
        s["filter"] = filter
    if run_files is not None:
        s["run_files"] = run_files
    return s


def serving_spec(name, rack, model, layout, arrivals, requests=None, warmup_requests=None,
                 scheduler=None, slo=None, timing=None, description=None, **more):
    """A serving spec as a dict (docs/serving.md). arrivals a dict ({"kind": "poisson",
    "rate_per_s": 50, "input_tokens": 128, "output_tokens": 4} or {"kind": "file", "path": ...},
    whose path is made absolute); more keys (kv_cache, ...) pass through."""
    s = {"name": name}
    if description is not None:
        s["description"] = description
    s.update({"rack": _path_or_name(rack), "model": _path_or_name(model), "layout": layout})
    if scheduler is not None:
        s["scheduler"] = scheduler
    arr = dict(arrivals)
    if "path" in arr:
        arr["path"] = _path_or_name(arr["path"])
    s["arrivals"] = arr
    runs = {k: v for k, v in (("requests", requests), ("warmup_requests", warmup_requests))
            if v is not None}
    if runs:
        s["run"] = runs
    if slo is not None:
        s["slo"] = slo
    if timing is not None:
        s["timing"] = timing
    s.update(more)
    return s


def write_spec(spec, path):
    """Writes a spec dict as JSON (two-space indent, a final newline); returns the Path."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(spec, indent=2) + "\n")
    return p
