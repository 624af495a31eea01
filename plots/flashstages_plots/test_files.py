#!/usr/bin/env python3
"""Tests of files.py: which files --repo-docs reads (markdown only) and which it never touches.

    python3 plots/flashstages_plots/test_files.py      (plots/test_plot_results.py runs every test)
"""

from __future__ import annotations

import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # plots/, the package's parent

from flashstages_plots.files import repo_doc_files  # noqa: E402
from flashstages_plots.testing import LADDER_FIXTURE, run_main, write_results  # noqa: E402


class RepoDocsTest(unittest.TestCase):
    """--repo-docs over a small tree laid out like the repository: its markdown is read, its sources never."""

    MARKER = "<!-- value: [stage04/v2/fp16/D:128/N:8192/causal:0] | .0f -->0<!-- /value -->"
    READ = ["README.md", "docs/04_flash_fwd.md", "docs/extra/notes.md", "stages/04_flash_fwd/README.md",
            "stages/04_flash_fwd/NOTES.md", "stages/07_tuned/gemm/README.md", "stages/07_tuned/gemm/NOTES.md",
            "ceilings/README.md", "ceilings/notes/ffma.md", "plots/README.md", "results/some-gpu/README.md"]
    NOT_READ = ["build/README.md", "build/release/docs/x.md", "stages/04_flash_fwd/build/README.md", ".old/docs/a.md",
                "docs/.old/a.md", ".deps/common/x.h", ".venv/README.md", "common/.venv/x.h",
                "stages/04_flash_fwd/bench.py", "docs/notes.txt", "results/some-gpu/logs/README.md", "LICENSE.md",
                "stages/04_flash_fwd/other.md",  # a stage's markdown is its README.md and NOTES.md
                # source files hold no markers: the numbers live in the generated tables
                "stages/04_flash_fwd/v1_mma.cuh", "stages/04_flash_fwd/v1.cu", "stages/04_flash_fwd/versions.h",
                "stages/07_tuned/gemm/v1.cuh", "ceilings/ceilings.cu", "common/lib/flops.h", "common/device/sm80.cuh",
                "common/lib/timer.cpp", "common/README.md",
                # another GPU's results: its tables come from its own files, never from these
                "results/other-gpu/README.md"]

    def test_every_file_that_can_hold_markers_and_no_other(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "repo"
            results = write_results(root / "results" / "some-gpu", LADDER_FIXTURE)
            for name in self.READ + self.NOT_READ:
                (root / name).parent.mkdir(parents=True, exist_ok=True)
                (root / name).write_text(f"x {self.MARKER} y\n", encoding="utf-8")
            (root / "docs" / "plain.md").write_text("no markers\n", encoding="utf-8")
            plain_time = (root / "docs" / "plain.md").stat().st_mtime_ns

            listed = {p.relative_to(root).as_posix() for p in repo_doc_files(root, results)}
            self.assertEqual(listed, set(self.READ) | {"docs/plain.md"})
            every = {p.relative_to(root).as_posix() for p in repo_doc_files(root)}
            self.assertEqual(every, set(self.READ) | {"docs/plain.md", "results/other-gpu/README.md"})

            status, log = run_main(["--results", str(results), "--repo-docs", "--repo-root", str(root),
                                    "--no-plots", "--check"])
            self.assertEqual(status, 1)
            self.assertIn("stale: docs/04_flash_fwd.md:1: value [stage04/v2/fp16/D:128/N:8192/causal:0] "
                          "says 0, the results give 360", log)

            status, log = run_main(["--results", str(results), "--repo-docs", "--repo-root", str(root), "--no-plots"])
            self.assertEqual(status, 0, log)
            for name in self.READ:
                self.assertIn(f"updated {name}\n", log)
                self.assertEqual((root / name).read_text(encoding="utf-8"),
                                 "x " + self.MARKER.replace("-->0<!--", "-->360<!--") + " y\n", name)
            for name in self.NOT_READ:
                self.assertEqual((root / name).read_text(encoding="utf-8"), f"x {self.MARKER} y\n", name)
            self.assertEqual((root / "docs" / "plain.md").stat().st_mtime_ns, plain_time)


class ReferenceTest(unittest.TestCase):
    """results/REFERENCE names the run the docs quote: the default --results, and the only one --repo-docs takes."""

    def test_the_reference_is_the_default_and_the_only_folder_for_the_docs(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "repo"
            reference = write_results(root / "results" / "ref-gpu", LADDER_FIXTURE)
            other = write_results(root / "results" / "other-gpu", LADDER_FIXTURE)
            (root / "README.md").write_text("<!-- value: [stage04/v2/fp16/D:128/N:8192/causal:0] | .0f -->0"
                                            "<!-- /value -->\n", encoding="utf-8")
            (root / "results" / "REFERENCE").write_text("# the run the docs quote\nref-gpu\n", encoding="utf-8")
            status, log = run_main(["--repo-docs", "--repo-root", str(root), "--no-plots"])
            self.assertEqual(status, 0, log)
            self.assertIn("360", (root / "README.md").read_text(encoding="utf-8"))
            status, log = run_main(["--results", str(other), "--repo-docs", "--repo-root", str(root), "--no-plots"])
            self.assertEqual(status, 1)
            self.assertIn("quote the reference run", log)
            (root / "results" / "REFERENCE").write_text("ref-gpu\nother-gpu\n", encoding="utf-8")
            status, log = run_main(["--repo-docs", "--repo-root", str(root), "--no-plots"])
            self.assertEqual(status, 1)
            self.assertIn("should name one folder", log)
            self.assertTrue(reference.is_dir())


if __name__ == "__main__":
    unittest.main(verbosity=2)
