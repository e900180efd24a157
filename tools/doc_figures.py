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
"""
import argparse
import re
import subprocess
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
            f"beside it): {key}" for rel, line, key, commit in figures(root) if commit is None]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=ROOT, help="the repository (default: this one)")
    ap.add_argument("--list", action="store_true", help="print every wall-time figure")
    ap.add_argument("--age", action="store_true",
                    help="print each tagged figure's commit and the commits since that changed the code")
    a = ap.parse_args(argv)
    root = a.root.resolve()
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
