"""What the tests beside each module share: the fixtures in plots/fixtures/ (made-up test data) laid out
as results folders, main() with its output captured, and a fresh temporary folder per test.

sample_results.json maps file names to Google Benchmark documents, as a results folder would hold
them: stage01 (naive, one run each, times in ms), stage03 v1/v2 (3 repetitions with mean/median/
stddev aggregates; v2 aggregates only), sdpa_flash (median aggregates, one extra B/H shape) and a
GEMM file (stage06 v1/v2 and cuBLAS, one non-square shape, one errored row).
ladder_results.json (same layout) holds the headline shapes: stages 01-06 with several versions and
dtypes, peers, and rows the ladder must leave out (bf16, causal, D = 64, off-rule B/H, 1024³).
ceilings.json is one Google Benchmark document as the instruction-ceiling benchmark writes it.

Only the figure tests need matplotlib (HAVE_MATPLOTLIB); without it they are skipped.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import tempfile
import unittest
from pathlib import Path

from .results import Results, load_results

PLOTS = Path(__file__).resolve().parents[1]
FIXTURE = PLOTS / "fixtures" / "sample_results.json"
LADDER_FIXTURE = PLOTS / "fixtures" / "ladder_results.json"
CEILINGS_FIXTURE = PLOTS / "fixtures" / "ceilings.json"

try:
    import matplotlib  # noqa: F401
    HAVE_MATPLOTLIB = True
except ImportError:
    HAVE_MATPLOTLIB = False


def write_results(folder: Path, fixture: Path = FIXTURE, ceilings: bool = False) -> Path:
    """Lay a fixture out as a results folder: one JSON file per stage (and ceilings.json)."""
    folder.mkdir(parents=True, exist_ok=True)
    for file_name, doc in json.loads(fixture.read_text(encoding="utf-8")).items():
        (folder / file_name).write_text(json.dumps(doc, indent=1), encoding="utf-8")
    if ceilings:
        (folder / "ceilings.json").write_text(CEILINGS_FIXTURE.read_text(encoding="utf-8"), encoding="utf-8")
    return folder


def load(fixture: Path = FIXTURE, ceilings: bool = False) -> Results:
    with tempfile.TemporaryDirectory() as tmp:
        return load_results(write_results(Path(tmp) / "results", fixture, ceilings))


def run_main(argv: list[str]) -> tuple[int, str]:
    """plot_results.main(argv) (the command line, plots/plot_results.py) with its output captured;
    returns (exit status, stdout + stderr)."""
    if str(PLOTS) not in sys.path:
        sys.path.insert(0, str(PLOTS))
    import plot_results
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        status = plot_results.main(argv)
    return status, out.getvalue()


class TempDirTest(unittest.TestCase):
    """A fresh temporary folder per test (self.tmp), and write() to put a text file in it."""

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = Path(self._tmp.name)

    def tearDown(self):
        self._tmp.cleanup()

    def write(self, name: str, text: str) -> Path:
        path = self.tmp / name
        path.write_bytes(text.encode("utf-8"))
        return path
