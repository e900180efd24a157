#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Wall-time figures in the docs, and whether each says when it was measured.

A simulated figure is reproducible from the command the doc shows; a wall time (a run's seconds,
a sweep's minutes, seconds per point) is not, and goes stale silently as the code gets faster or
slower (docs/sweeps.md said 9 min 54 s for a sweep that now takes seconds). So every paragraph
that states a wall time must name the commit it was measured at (any commit id in the paragraph
that git resolves, conventionally "measured at a39c219"), so a reader can tell how old it is. A
figure kept from a past run says so with its commit ("recorded at 2959c9b, not re-measured
since"; a before/after names the change). A duration inside an inline code span is quoted (a
command, a program's message), not measured, and is not a figure. Every figure without a commit
fails: the list of older untagged figures this check started with is empty, and gone.

  tools/doc_figures.py              check; exit 1 naming each figure at fault
  tools/doc_figures.py --list       every wall-time figure, tagged or not, with its commit
  tools/doc_figures.py --age        each tagged figure's commit and how many commits since then
                                    changed src/, models/ or include/
  tools/doc_figures.py --run TRNSIM runs the command of every figure-check marker with this binary
                                    and fails naming each figure its output no longer gives
  tools/doc_figures.py --readme-commands TRNSIM
                                    runs the README's short example commands; fails on any exit
                                    other than 0

Simulated figures are deterministic, so they can be checked by running their command again. A
doc marks the figures it wants checked with an HTML comment (not rendered) above them:

    <!-- figure-check: `trnsim bench ping --config configs/racks/trn2-ultraserver.json --json`
         /latency_ns/min = 1,031.0; /latency_ns/max = 1,660.0 -->

The command (`trnsim ...`, run from the repository's root) must print JSON; each check is a JSON
pointer into it, an optional scale (`*1e6`: seconds shown in microseconds, `*100`: a fraction in
per cent) and the figure as the doc prints it; a marker inside a code fence is an example, not
read. The output, scaled and rounded to the figure's
decimals, must equal the figure, and the figure must appear verbatim in the 40 lines after the
marker. Without --run only the markers' form and their figures' presence are checked.
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import tempfile
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# A duration in seconds, minutes or hours ("9 min 54 s", "40 s", "1.3 s", "20 minutes").
DURATION = re.compile(r"\b\d[\d,.]*\s?(?:s|min|minutes|h|hours)\b")
# Words that make a duration a wall time rather than a simulated one.
WALL = re.compile(r"wall|per point|a point|at `?-j|\btook\b|\btakes\b|\bCPU\b|machine|\bquiet\b",
                  re.I)
COMMIT = re.compile(r"\b[0-9a-f]{7,40}\b")


def doc_files(root):
    files = [root / "README.md"]
    files += sorted((root / "docs").glob("**/*.md"))
    files += sorted((root / "configs").glob("**/README.md"))
    return [f for f in files if f.is_file()]


def paragraphs(text):
    """(first line number, text) of each paragraph outside code fences."""
    out, cur, start, fenced = [], [], 0, False
    for n, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            if cur:
                out.append((start, "\n".join(cur)))
            cur = []
            continue
        if fenced:
            continue
        if not line.strip():
            if cur:
                out.append((start, "\n".join(cur)))
            cur = []
            continue
        if not cur:
            start = n
        cur.append(line)
    if cur:
        out.append((start, "\n".join(cur)))
    return out


# An inline code span: a command, a key or a program's message, quoted.
CODE_SPAN = re.compile(r"`[^`]*`")
SENTENCE_END = re.compile(r"(?<=[.;:])\s+|\n\|")


def sentences(para):
    """(sentence, the sentence with its code spans blanked) of each sentence of a paragraph.

    A duration inside a code span is quoted (an error message's simulated "takes at least 1.9e+07
    s", a flag's value), not a time the doc measured, so only the blanked text is searched for
    durations; the words that make a duration a wall time may still be in code (at `-j 2`).
    Sentences end where they end in the text itself, so a code span holding "; " is cut the same
    way in both forms."""
    blanked = CODE_SPAN.sub(lambda m: "`" + "x" * (len(m.group()) - 2) + "`", para)
    out, start = [], 0
    for m in SENTENCE_END.finditer(para):
        out.append((para[start:m.start()], blanked[start:m.start()]))
        start = m.end()
    out.append((para[start:], blanked[start:]))
    return out


def sentence_key(sentence):
    """A sentence as a message quotes it: whitespace folded, at most 80 characters."""
    return " ".join(sentence.split())[:80]


_RESOLVED = {}


def resolves(root, commit):
    """The full id of `commit` in the repository at `root`, or None."""
    key = (str(root), commit)
    if key not in _RESOLVED:
        r = subprocess.run(["git", "-C", str(root), "rev-parse", "--verify", "-q", commit + "^{commit}"],
                           capture_output=True, text=True)
        _RESOLVED[key] = r.stdout.strip() if r.returncode == 0 else None
    return _RESOLVED[key]


def figures(root):
    """Each wall-time figure: (path, line, sentence key, commit or None)."""
    out = []
    for f in doc_files(root):
        rel = f.relative_to(root).as_posix()
        for line, para in paragraphs(f.read_text(encoding="utf-8")):
            commit = next((c for c in COMMIT.findall(para) if resolves(root, c)), None)
            for sentence, spoken in sentences(para):
                if DURATION.search(spoken) and WALL.search(sentence):
                    out.append((rel, line, sentence_key(sentence), commit))
    return out


def check(root):
    return [f"{rel}:{line}: a wall time with no commit in its paragraph (write \"measured at COMMIT\" "
            f"beside it): {key}" for rel, line, key, commit in figures(root) if commit is None] + \
        [f"{rel}:{line}: figure-check marker: {problem}" for rel, line, _, _, problem in markers(root)
         if problem]


# A figure-check marker (see the module's doc) and one of its checks.
MARKER = re.compile(r"<!--\s*figure-check:(.*?)-->", re.S)
MARKER_CMD = re.compile(r"\s*`trnsim ([^`]+)`(.*)", re.S)
MARKER_CHECK = re.compile(r"\s*(/\S*?)\s*(?:\*\s*([0-9.]+(?:e[-+]?\d+)?))?\s*=\s*([-+]?\d[\d,]*(?:\.\d+)?)\s*")
NEAR_LINES = 40


def markers(root):
    """Each figure-check marker: (path, line, command or None, [(pointer, scale, figure)], problem
    or None)."""
    out = []
    for f in doc_files(root):
        rel = f.relative_to(root).as_posix()
        text = f.read_text(encoding="utf-8")
        fenced, inside = set(), False
        for n, ln in enumerate(text.splitlines(), 1):
            if ln.lstrip().startswith("```"):
                inside = not inside
            elif inside:
                fenced.add(n)
        for m in MARKER.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            if line in fenced:  # an example of the marker, quoted
                continue
            cm = MARKER_CMD.fullmatch(m.group(1))
            if not cm:
                out.append((rel, line, None, [], "expected `trnsim ARGS` after 'figure-check:'"))
                continue
            checks, problem = [], None
            for part in [p for p in cm.group(2).split(";") if p.strip()]:
                c = MARKER_CHECK.fullmatch(part)
                if not c:
                    problem = f"a check reads '/json/pointer [*scale] = figure', got '{part.strip()}'"
                    break
                checks.append((c.group(1), float(c.group(2) or 1), c.group(3)))
            if not checks and not problem:
                problem = "no check after the command"
            after = "\n".join(text[m.end():].splitlines()[:NEAR_LINES])
            for _, _, fig in checks:
                if not problem and fig not in after:
                    problem = f"the figure {fig} is not in the {NEAR_LINES} lines after the marker"
            out.append((rel, line, " ".join(cm.group(1).split()), checks, problem))
    return out


def pointer_get(doc, pointer):
    """RFC 6901: the value at `pointer` in `doc`, or raises KeyError."""
    cur = doc
    for tok in pointer.split("/")[1:]:
        tok = tok.replace("~1", "/").replace("~0", "~")
        if isinstance(cur, list):
            if not tok.isdigit() or int(tok) >= len(cur):
                raise KeyError(pointer)
            cur = cur[int(tok)]
        elif isinstance(cur, dict) and tok in cur:
            cur = cur[tok]
        else:
            raise KeyError(pointer)
    return cur


def shown(value, figure):
    """`value` printed as `figure` is: its decimals, its thousands separators."""
    decimals = len(figure.split(".")[1]) if "." in figure else 0
    text = f"{value:,.{decimals}f}" if "," in figure else f"{value:.{decimals}f}"
    return "0" + text[2:] if text.startswith("-0") and float(text.replace(",", "")) == 0 else text


def run_markers(root, trnsim):
    """Runs each marker's command; a problem for each figure its output no longer gives."""
    problems = []
    env = dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1")
    for rel, line, cmd, checks, problem in markers(root):
        where = f"{rel}:{line}"
        if problem:
            problems.append(f"{where}: figure-check marker: {problem}")
            continue
        p = subprocess.run([trnsim, *shlex.split(cmd)], cwd=root, env=env, capture_output=True,
                           text=True)
        if p.returncode != 0:
            problems.append(f"{where}: `trnsim {cmd}` exited {p.returncode}: {p.stderr.strip()[-400:]}")
            continue
        try:
            doc = json.loads(p.stdout)
        except json.JSONDecodeError:
            problems.append(f"{where}: `trnsim {cmd}` printed no JSON (add --json)")
            continue
        for pointer, scale, figure in checks:
            try:
                value = pointer_get(doc, pointer)
            except KeyError:
                problems.append(f"{where}: `trnsim {cmd}` has nothing at {pointer}")
                continue
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                problems.append(f"{where}: `trnsim {cmd}` {pointer} is {value!r}, not a number")
                continue
            got = shown(value * scale, figure)
            if got != figure:
                problems.append(f"{where}: `trnsim {cmd}` {pointer}{'' if scale == 1 else f' *{scale:g}'} "
                                f"gives {got}, the doc says {figure}")
    return problems


# The README's example commands (the sh block under "## Other commands") that take more than a
# few seconds, or need what a test run lacks, and why; every other `$T ...` line runs.
README_LONG = {
    "$T bench gemm --m 8192": "an 8192-cube GEMM on the tile model, minutes",
    "$T bench collective --op all-reduce --sweep": "1 KiB to 1 GiB, minutes",
    "$T bench kernel": "20 million activations, by design a timing",
    "$T serve": "a thousand requests, minutes",
    "$T sweep": "a design-space sweep, minutes",
    "$T compare": "needs the sweeps above",
    "$T claims": "minutes; tests/claims runs the claims files",
    "$T run --config configs/clusters/trn3-gen2-ultracluster-7282.json": "needs the 7,282-replica trace",
}


def readme_commands(root):
    """(line, command, why it is left out or None) of each `$T ...` line of the README's examples,
    continuation lines joined."""
    text = (root / "README.md").read_text(encoding="utf-8")
    start = text.index("## Other commands")
    block = text[text.index("```sh", start) + 5:text.index("```", text.index("```sh", start) + 5)]
    base = text.count("\n", 0, text.index("```sh", start)) + 2
    out, cur, first = [], "", 0
    for n, ln in enumerate(block.splitlines()[1:], base):
        if not cur:
            first = n
        cur += ln.rstrip("\\").split("  #")[0] + " "
        if ln.endswith("\\"):
            continue
        cmd, cur = " ".join(cur.split()), ""
        if not cmd.startswith("$T "):
            continue
        why = next((w for k, w in README_LONG.items() if cmd == k or cmd.startswith(k + " ")), None)
        out.append((first, cmd, why))
    return out


def run_readme(root, trnsim):
    problems = []
    env = dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1")
    with tempfile.TemporaryDirectory() as tmp:
        for line, cmd, why in readme_commands(root):
            shared = [a for a in shlex.split(cmd) if a.startswith("../shared/")]
            if not why and shared and not os.path.isdir(root / os.path.dirname(shared[0])):
                why = f"no {os.path.dirname(shared[0])} here"
            if why:
                print(f"README.md:{line}: left out ({why}): {cmd}")
                continue
            # What the examples write (out/..., trn2.dot) goes into a temporary folder.
            args = [a.replace("out/", tmp + "/out/") if a.startswith("out/") else
                    (os.path.join(tmp, a) if a.endswith(".dot") else a) for a in shlex.split(cmd)[1:]]
            p = subprocess.run([trnsim, *args], cwd=root, env=env, capture_output=True, text=True)
            print(f"README.md:{line}: exit {p.returncode}: {cmd}")
            if p.returncode != 0:
                problems.append(f"README.md:{line}: `{cmd}` exited {p.returncode}: {p.stderr.strip()[-400:]}")
    return problems


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=ROOT, help="the repository (default: this one)")
    ap.add_argument("--list", action="store_true", help="print every wall-time figure")
    ap.add_argument("--age", action="store_true",
                    help="print each tagged figure's commit and the commits since that changed the code")
    ap.add_argument("--run", metavar="TRNSIM", help="run every figure-check marker's command with this binary")
    ap.add_argument("--readme-commands", metavar="TRNSIM",
                    help="run the README's short example commands with this binary")
    a = ap.parse_args(argv)
    root = a.root.resolve()
    for b in (a.run, a.readme_commands):
        if b and not os.access(b, os.X_OK):
            print(f"doc_figures: error: {b} is not an executable", file=sys.stderr)
            return 2
    if a.run or a.readme_commands:
        problems = run_markers(root, os.path.abspath(a.run)) if a.run else \
            run_readme(root, os.path.abspath(a.readme_commands))
        for p in problems:
            print(p, file=sys.stderr)
        if problems:
            print(f"doc_figures: {len(problems)} problem(s)", file=sys.stderr)
            return 1
        if a.run:
            n = sum(len(m[3]) for m in markers(root))
            print(f"doc_figures: {n} figures of {len(markers(root))} commands as the docs show them")
        return 0
    if a.list or a.age:
        for rel, line, key, commit in figures(root):
            if a.age and commit is None:
                continue
            age = ""
            if a.age:
                r = subprocess.run(["git", "-C", str(root), "rev-list", "--count", f"{commit}..HEAD", "--",
                                    "src", "models", "include"], capture_output=True, text=True)
                age = f" ({r.stdout.strip()} code commits since)"
            print(f"{rel}:{line}: [{commit or 'untagged'}{age}] {key}")
        return 0
    problems = check(root)
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"doc_figures: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
