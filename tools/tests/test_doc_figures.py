# SPDX-License-Identifier: MIT
"""tools/doc_figures.py: wall-time figures in the docs name the commit they were measured at."""
import subprocess
import tempfile
import unittest
from pathlib import Path

import doc_figures


def git(root, *args):
    return subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


class DocFigures(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = Path(self.tmp.name)
        (self.root / "docs").mkdir()
        (self.root / "tools").mkdir()
        (self.root / "README.md").write_text("# x\n")
        git(self.root, "init", "-q")
        git(self.root, "add", "-A")
        git(self.root, "commit", "-q", "-m", "first")
        self.head = git(self.root, "rev-parse", "--short=9", "HEAD")

    def tearDown(self):
        self.tmp.cleanup()

    def doc(self, text):
        (self.root / "docs" / "a.md").write_text(text)
        return doc_figures.check(self.root)

    def test_untagged_wall_time_fails_naming_file_and_line(self):
        problems = self.doc("# A\n\nIntro.\n\nNine points, 9 min 54 s at `-j 2` on a shared machine.\n")
        self.assertEqual(len(problems), 1)
        self.assertTrue(problems[0].startswith("docs/a.md:5: a wall time with no commit"), problems[0])
        self.assertIn("Nine points, 9 min 54 s", problems[0])

    def test_commit_in_the_paragraph_passes(self):
        self.assertEqual(self.doc(f"Nine points, 9 min 54 s at `-j 2` (measured at {self.head}).\n"), [])

    def test_a_commit_git_does_not_know_is_no_tag(self):
        self.assertEqual(len(self.doc("Nine points, 9 min 54 s at `-j 2` (measured at 0123abc).\n")), 1)

    def test_simulated_times_and_code_blocks_are_not_wall_times(self):
        self.assertEqual(self.doc("The step takes 3.0 ms more.\n\n```\nwall time 92.5 s\n```\n"
                                  "The step falls from 52.7 ms to 44.3 ms.\n"), [])

    def test_a_duration_quoted_in_code_is_not_a_wall_time(self):
        # An error message's simulated time, quoted; "takes" alone would make it a wall time.
        self.assertEqual(self.doc("It refuses: `rank 0's chain takes at least 1.9e+07 s; beyond the "
                                  "1.845e+07 s the kernel counts`.\n"), [])
        # The same words outside the code span are a figure; a wall word in code still counts.
        self.assertEqual(len(self.doc("The run takes 1.9 s (`trnsim run`).\n")), 1)
        self.assertEqual(len(self.doc("Nine points, 38 s at `-j 2`.\n")), 1)

    def test_a_past_figure_names_the_commit_it_was_recorded_at(self):
        # No list of exceptions any more: an old figure without its commit fails like a new one,
        # and "recorded at COMMIT, not re-measured since" is as good a tag as "measured at".
        self.assertEqual(len(self.doc("It took 12 min 32 s (720 s run) before the change.\n")), 1)
        self.assertEqual(self.doc(f"It took 12 min 32 s (720 s run; recorded at {self.head}, not "
                                  f"re-measured since).\n"), [])

    def fake_trnsim(self, output):
        """A `trnsim` that prints `output` whatever it is asked, and its arguments to args.txt."""
        path = self.root / "fake-trnsim"
        path.write_text(f"#!/bin/sh\necho \"$@\" > {self.root / 'args.txt'}\ncat <<'EOF'\n{output}\nEOF\n")
        path.chmod(0o755)
        return str(path)

    MARKED = ("<!-- figure-check: `trnsim bench ping --config x.json --json`\n"
              "     /latency_ns/max = 1,959.8; /time_s *1e6 = 82.5; /run/0 *100 = 88 -->\n\n"
              "| max | 1,959.8 ns |\n\nIt takes 82.5 us, the engine 88 % busy.\n")

    def test_a_figure_check_marker_is_read_and_its_figures_must_follow_it(self):
        self.assertEqual(self.doc(self.MARKED), [])
        (m,) = doc_figures.markers(self.root)
        self.assertEqual(m[:3], ("docs/a.md", 1, "bench ping --config x.json --json"))
        self.assertEqual(m[3], [("/latency_ns/max", 1.0, "1,959.8"), ("/time_s", 1e6, "82.5"),
                                ("/run/0", 100.0, "88")])
        # A figure the doc does not show beside the marker, a check without '=', no command.
        gone = self.doc(self.MARKED.replace("82.5 us", "82.6 us"))
        self.assertEqual(gone, ["docs/a.md:1: figure-check marker: the figure 82.5 is not in the "
                                "40 lines after the marker"])
        self.assertIn("a check reads '/json/pointer [*scale] = figure', got '/time_s 82.5'",
                      self.doc(self.MARKED.replace("/time_s *1e6 = 82.5", "/time_s 82.5"))[0])
        self.assertIn("expected `trnsim ARGS`", self.doc("<!-- figure-check: /a = 1 -->\n1\n")[0])
        self.assertEqual(self.doc("```\n<!-- figure-check: /a = 1 -->\n```\n"), [])  # quoted

    def test_run_compares_each_figure_with_the_commands_output(self):
        self.doc(self.MARKED)
        same = '{"latency_ns": {"max": 1959.8000000000002}, "time_s": 8.2508939e-05, "run": [0.878]}'
        self.assertEqual(doc_figures.run_markers(self.root, self.fake_trnsim(same)), [])
        self.assertEqual((self.root / "args.txt").read_text().split(),
                         ["bench", "ping", "--config", "x.json", "--json"])
        drifted = '{"latency_ns": {"max": 1960.0}, "time_s": 8.2508939e-05, "run": [0.874]}'
        self.assertEqual(doc_figures.run_markers(self.root, self.fake_trnsim(drifted)), [
            "docs/a.md:1: `trnsim bench ping --config x.json --json` /latency_ns/max gives 1,960.0, "
            "the doc says 1,959.8",
            "docs/a.md:1: `trnsim bench ping --config x.json --json` /run/0 *100 gives 87, the doc says 88"])
        odd = doc_figures.run_markers(self.root, self.fake_trnsim(
            '{"latency_ns": {}, "time_s": "82.5", "run": "x"}'))
        self.assertEqual([p.split("--json` ")[1] for p in odd],
                         ["has nothing at /latency_ns/max", "/time_s is '82.5', not a number",
                          "has nothing at /run/0"])
        self.assertIn("printed no JSON", doc_figures.run_markers(self.root, self.fake_trnsim("hello"))[0])

    def test_readme_commands_join_lines_and_leave_out_the_long_ones(self):
        (self.root / "README.md").write_text(
            "# x\n\n## Other commands\n\n```sh\nT=trnsim\n$T presets                # presets\n"
            "$T run --config a \\\n   --trace b --out out/\n$T bench kernel\ntools/plot x\n```\n")
        self.assertEqual(doc_figures.readme_commands(self.root), [
            (7, "$T presets", None), (8, "$T run --config a --trace b --out out/", None),
            (10, "$T bench kernel", doc_figures.README_LONG["$T bench kernel"])])

    @unittest.skipUnless(subprocess.run(["git", "-C", str(doc_figures.ROOT), "rev-parse",
                                         "--is-shallow-repository"], capture_output=True,
                                        text=True).stdout.strip() == "false",
                         "not a full git clone: the docs' commits cannot be resolved")
    def test_this_repository_passes(self):
        self.assertEqual(doc_figures.check(doc_figures.ROOT), [])


if __name__ == "__main__":
    unittest.main()
