#!/usr/bin/env python3
"""Tests of figures.py: colours, where a grid of panels puts its labels, and the PNGs (skipped without
matplotlib): one attention figure per pass and dtype with a panel per (D, mask), one memory figure per
pass with a panel per D, each with one legend and the files it reads in its metadata.

    python3 plots/flashstages_plots/test_figures.py      (plots/test_plot_results.py runs every test)
"""

from __future__ import annotations

import struct
import sys
import tempfile
import unittest
import zlib
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # plots/, the package's parent

from flashstages_plots import figures  # noqa: E402
from flashstages_plots.figures import figure_colors, _log2_axis, _new_figure, _outer  # noqa: E402
from flashstages_plots.testing import HAVE_MATPLOTLIB, LADDER_FIXTURE, load, run_main, write_results  # noqa: E402


def png_text(path: Path) -> dict[str, str]:
    """The tEXt and zTXt chunks of a PNG (matplotlib writes its metadata as these)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path
    out, at = {}, 8
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        if kind == b"tEXt":
            key, _, value = body.partition(b"\0")
            out[key.decode("latin-1")] = value.decode("latin-1")
        elif kind == b"zTXt":
            key, _, rest = body.partition(b"\0")
            out[key.decode("latin-1")] = zlib.decompress(rest[1:]).decode("latin-1")
        at += 12 + length
    return out


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


class PanelGridTest(unittest.TestCase):
    def test_labels_on_the_outer_panels_even_beside_a_blank_cell(self):
        cells = [(64, 1), (128, 0), (128, 1)]  # D = 64 measured causal only: its non-causal cell is blank
        self.assertEqual(_outer((64, 1), cells), (False, True))  # a panel below; none to its left
        self.assertEqual(_outer((128, 0), cells), (True, True))
        self.assertEqual(_outer((128, 1), cells), (True, False))


@unittest.skipUnless(HAVE_MATPLOTLIB, "matplotlib is not installed: figures not tested")
class PanelFigureTest(unittest.TestCase):
    """The sample fixture: fp16 at D = 64 and 128, both masks; stage01, stage03 v1/v2, sdpa_flash (one
    point off the shape rule at D = 128, non-causal); extra_bytes at both D, non-causal, 0 B for v2."""

    def draw(self, draw):
        """Draw with draw(results, folder, colours); (written paths, [(figure, {cell: axes}, title)])."""
        results = load()
        finished = []
        original = figures._finish_panels

        def record(fig, axes, caption_slot, title, *rest):
            finished.append((fig, axes, title))
            return original(fig, axes, caption_slot, title, *rest)

        with tempfile.TemporaryDirectory() as tmp, mock.patch.object(figures, "_finish_panels", record):
            paths = draw(results, Path(tmp), figures.series_colors(results))
            texts = {p.name: png_text(p) for p in paths}
        return texts, finished

    def test_attention_one_figure_a_panel_per_d_and_mask(self):
        texts, finished = self.draw(figures.draw_attention_throughput)
        self.assertEqual(list(texts), ["attention_fp16.png"])
        self.assertEqual(texts["attention_fp16.png"]["Software"], "plots/plot_results.py")
        self.assertEqual(texts["attention_fp16.png"]["Source"], "sdpa.json, stage01.json, stage03.json")
        (fig, axes, title), = finished
        self.assertEqual(title, "Attention forward throughput — fp16")
        self.assertEqual(sorted(axes), [(64, 0), (64, 1), (128, 0), (128, 1)])
        self.assertEqual(axes[(64, 1)].get_title(), "D = 64, causal")
        self.assertEqual(axes[(128, 0)].get_title(), "D = 128, non-causal")
        # a row per D, a column per mask
        boxes = {cell: ax.get_position() for cell, ax in axes.items()}
        self.assertGreater(boxes[(64, 0)].y0, boxes[(128, 0)].y0)
        self.assertLess(boxes[(64, 0)].x0, boxes[(64, 1)].x0)
        self.assertEqual([ax.get_ylim()[0] for ax in axes.values()], [0.0] * 4)
        # one legend for the figure, one entry per line, none on the panels
        self.assertEqual(len(fig.legends), 1)
        self.assertEqual([t.get_text() for t in fig.legends[0].get_texts()],
                         ["stage01/naive", "stage03/v1", "stage03/v2", "sdpa_flash", "sdpa_flash (B = 2, H = 16)"])
        self.assertTrue(all(ax.get_legend() is None for ax in axes.values()))
        # the same series, the same colour in every panel
        colours = {}
        for ax in axes.values():
            for line in ax.get_lines():
                colours.setdefault(line.get_color(), set()).add(line.get_linestyle())
        legend = fig.legends[0]
        handles = getattr(legend, "legend_handles", None) or legend.legendHandles  # renamed in matplotlib 3.7
        legend_colours = {h.get_color() for h in handles}
        self.assertEqual(set(colours), legend_colours)
        # the x label on the bottom row only, the y label on the left column only
        self.assertEqual([axes[c].get_xlabel() != "" for c in sorted(axes)], [False, False, True, True])
        self.assertEqual([axes[c].get_ylabel() for c in sorted(axes)], ["TFLOPS", "", "TFLOPS", ""])

    def test_memory_one_figure_a_panel_per_d(self):
        texts, finished = self.draw(figures.draw_attention_memory)
        self.assertEqual(list(texts), ["attention_memory.png"])
        (fig, axes, title), = finished
        self.assertEqual(title, "Attention forward: device memory beyond Q, K, V, O")
        self.assertEqual([ax.get_title() for ax in axes.values()], ["D = 64", "D = 128"])
        self.assertEqual({ax.get_yscale() for ax in axes.values()}, {"log"})
        self.assertEqual(len(fig.legends), 1)
        # stage03/v2's line is 0 B: named in a note on each panel, not drawn, not in the legend
        self.assertEqual([t.get_text() for t in fig.legends[0].get_texts()],
                         ["stage01/naive (fp16)", "stage03/v1 (fp16)"])
        for ax in axes.values():
            self.assertTrue(any("no extra memory (0 B)" in t.get_text() and "stage03/v2 (fp16)" in t.get_text()
                                for t in ax.texts))


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
