#!/usr/bin/env python3
"""Tests of figures.py: colours, and the PNGs (skipped without matplotlib).

    python3 plots/flashstages_plots/test_figures.py      (plots/test_plot_results.py runs every test)
"""

from __future__ import annotations

import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # plots/, the package's parent

from flashstages_plots.figures import figure_colors, _log2_axis, _new_figure  # noqa: E402
from flashstages_plots.testing import HAVE_MATPLOTLIB, LADDER_FIXTURE, run_main, write_results  # noqa: E402


class FigureColorsTest(unittest.TestCase):
    def test_a_repeated_colour_gives_way_to_a_free_one(self):
        colors = {"a": "C0", "b": "C1", "c": "C0", "d": "C2"}  # c wraps onto a's colour
        shown = figure_colors(["a", "b", "c", "d"], colors)
        self.assertEqual((shown["a"], shown["b"], shown["d"]), ("C0", "C1", "C2"))  # kept
        self.assertEqual(shown["c"], "C3")  # the first colour no series of the figure has or wants
        self.assertEqual(len(set(shown.values())), 4)

    def test_a_series_drawn_twice_counts_once(self):
        shown = figure_colors(["a", "b", "a"], {"a": "C0", "b": "C1"})
        self.assertEqual(shown, {"a": "C0", "b": "C1"})

    def test_twenty_series_twenty_colours(self):
        names = [f"s{i}" for i in range(20)]
        shown = figure_colors(names, {n: f"C{i % 10}" for i, n in enumerate(names)})
        self.assertEqual(len(set(shown.values())), 20)
        self.assertEqual([shown[n] for n in names[:10]], [f"C{i}" for i in range(10)])


@unittest.skipUnless(HAVE_MATPLOTLIB, "matplotlib is not installed: figures not tested")
class FigureTest(unittest.TestCase):
    def test_ladder_and_roofline_with_and_without_ceilings(self):
        for ceilings in (False, True):
            with tempfile.TemporaryDirectory() as tmp:
                results = write_results(Path(tmp) / "results", LADDER_FIXTURE, ceilings)
                out = Path(tmp) / "png"
                status, log = run_main(["--results", str(results), "--out", str(out)])
                self.assertEqual(status, 0, log)
                for name in ("ladder.png", "roofline.png", "gemm_int8.png"):
                    self.assertEqual((out / name).read_bytes()[:8], b"\x89PNG\r\n\x1a\n", name)

    def test_size_axis_labels_only_powers_of_two(self):
        fig, ax = _new_figure()
        _log2_axis(ax, [1000, 1024, 2048, 4097, 8192], "M = N = K")
        self.assertEqual([t.get_text() for t in ax.get_xticklabels()], ["1024", "2048", "4096", "8192"])
        self.assertEqual(list(ax.get_xticks(minor=True)), [1000, 4097])
        self.assertEqual([t.get_text() for t in ax.get_xticklabels(minor=True)], ["", ""])
        self.assertEqual(ax.get_xscale(), "log")
        self.assertIn("minor ticks: 1000, 4097", ax.get_xlabel())


if __name__ == "__main__":
    unittest.main(verbosity=2)
