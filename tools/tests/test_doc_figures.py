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

    @unittest.skipUnless(subprocess.run(["git", "-C", str(doc_figures.ROOT), "rev-parse",
                                         "--is-shallow-repository"], capture_output=True,
                                        text=True).stdout.strip() == "false",
                         "not a full git clone: the docs' commits cannot be resolved")
    def test_this_repository_passes(self):
        self.assertEqual(doc_figures.check(doc_figures.ROOT), [])


if __name__ == "__main__":
    unittest.main()
