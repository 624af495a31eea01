#!/usr/bin/env python3
"""Tests of series.py: the peers of each pass, and a peer measured in several runs kept per run.

    python3 plots/flashstages_plots/test_series.py      (plots/test_plot_results.py runs every test)
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # plots/, the package's parent

from flashstages_plots.results import Results, load_results, select_runs  # noqa: E402
from flashstages_plots.series import gemm_lines, is_backward, under  # noqa: E402
from flashstages_plots.tables import attention_tables, render_block  # noqa: E402
from flashstages_plots.figures import draw_attention_memory, draw_attention_throughput, draw_gemm  # noqa: E402
from flashstages_plots.markers import MarkerError, render_value  # noqa: E402
from flashstages_plots.testing import HAVE_MATPLOTLIB  # noqa: E402


class BackwardPeersTest(unittest.TestCase):
    """sdpa_*_bwd rows (sdpa_bench.py --backward) sit in stage 05's tables, the forward peers in the
    others', never the other way round."""

    def test_each_stage_gets_the_peers_of_its_pass(self):
        doc = {"context": {"gpu_name": "NVIDIA H100 80GB HBM3"}, "benchmarks": []}
        for series, us in (("stage04/v5", 100.0), ("stage05/v2", 300.0), ("sdpa_flash", 90.0),
                           ("sdpa_flash_bwd", 280.0)):
            name = f"{series}/fp16/D:64/N:4096/causal:0"
            doc["benchmarks"].append({"name": name + "_median", "run_name": name, "run_type": "aggregate",
                                      "aggregate_name": "median", "real_time": us, "cpu_time": us,
                                      "time_unit": "us", "TFLOPS": 1e4 / us, "iterations": 1})
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp) / "results"
            folder.mkdir()
            (folder / "rows.json").write_text(json.dumps(doc), encoding="utf-8")
            results = load_results(folder)
        self.assertTrue(is_backward("sdpa_flash_bwd") and is_backward("stage05/v2"))
        self.assertFalse(is_backward("sdpa_flash") or is_backward("stage04/v5"))
        for prefix, peer, other in ((("stage05",), "sdpa_flash_bwd", "sdpa_flash"),
                                    (("stage04",), "sdpa_flash", "sdpa_flash_bwd")):
            _, runs = attention_tables(results, prefix)
            series = {r.name.series for r in runs}
            self.assertIn(peer, series, prefix)
            self.assertNotIn(other, series, prefix)

    def test_the_hopper_backward_rung_is_a_backward_rung_of_its_own(self):
        """stage07/attention_bwd (stage07_attention_bwd.json) times the backward; the forward rung's
        prefix, stage07/attention, does not take its series."""
        self.assertTrue(is_backward("stage07/attention_bwd/v1/fp16/D:64/N:4096/causal:0"))
        self.assertTrue(is_backward("stage07/attention_bwd"))
        self.assertFalse(is_backward("stage07/attention/v8/fp16/D:64/N:4096/causal:0"))
        self.assertFalse(under("stage07/attention_bwd/v1/fp16/D:64/N:4096/causal:0", ("stage07/attention",)))
        self.assertTrue(under("stage07/attention/v8/fp16/D:64/N:4096/causal:0", ("stage07/attention",)))
        self.assertTrue(under("stage07/attention_bwd/v1/fp16/D:64/N:4096/causal:0", "stage07/attention_bwd"))
        self.assertTrue(under("stage05/v1_deterministic/fp32/D:64/N:512/causal:0", ("stage05/v1",)))

    def test_the_passes_never_share_a_table_or_figure(self):
        doc = {"context": {"gpu_name": "NVIDIA H100 80GB HBM3"}, "benchmarks": []}
        for series in ("stage04/v5", "stage05/v2", "sdpa_flash_bwd"):
            name = f"{series}/fp16/D:64/N:4096/causal:0"
            doc["benchmarks"].append({"name": name, "real_time": 1.0, "time_unit": "ms", "TFLOPS": 100.0,
                                      "extra_bytes": 1048576.0})
        results = Results(contexts={"rows.json": {}}, runs=select_runs(doc["benchmarks"], "rows.json"))
        text = render_block("attention", results)
        forward, _, backward = text.partition("**backward, fp16, D = 64, non-causal**")
        self.assertIn("stage04/v5", forward)
        self.assertNotIn("stage05/v2", forward)
        self.assertIn("stage05/v2", backward)
        self.assertNotIn("stage04/v5", backward)
        memory = render_block("memory", results)
        self.assertIn("**forward, D = 64, non-causal** — extra device memory (MiB) beyond Q, K, V, O;", memory)
        self.assertIn("beyond Q, K, V, O, dO, LSE, dQ, dK, dV", memory)
        self.assertNotIn("stage05", render_block("memory:stage04", results))
        if HAVE_MATPLOTLIB:
            with tempfile.TemporaryDirectory() as tmp:
                names = {p.name for p in draw_attention_throughput(results, Path(tmp), {})}
                names |= {p.name for p in draw_attention_memory(results, Path(tmp), {})}
            self.assertEqual(names, {"attention_fp16.png", "attention_bwd_fp16.png",
                                     "attention_memory.png", "attention_memory_bwd.png"})


class SameRunPeersTest(unittest.TestCase):
    """cuBLAS measured in two stages' runs: each stage's own tables and markers take its own run's."""

    @staticmethod
    def folder(tmp: str) -> Path:
        folder = Path(tmp) / "results"
        folder.mkdir()
        for file, rows in (("stage06.json", {"stage06/v9": 400.0, "cublas": 650.0}),
                           ("stage07_gemm.json", {"stage07/gemm/v1": 500.0, "cublas": 680.0,
                                                  "cublas@8192": 640.0})):
            doc = {"context": {"gpu_name": "NVIDIA H100 80GB HBM3"}, "benchmarks": []}
            for series, tflops in rows.items():
                series, _, size = series.partition("@")
                size = size or "4096"
                doc["benchmarks"].append({"name": f"{series}/fp16/M:{size}/N:{size}/K:{size}", "real_time": 1.0,
                                          "time_unit": "ms", "TFLOPS": tflops})
            (folder / file).write_text(json.dumps(doc), encoding="utf-8")
        return folder

    def test_tables_and_markers_take_the_stage_own_peer(self):
        with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stderr(io.StringIO()) as err:
            results = load_results(self.folder(tmp))
        self.assertIn("this file's own tables take its own", err.getvalue())
        self.assertIn("| cublas | 650 |", render_block("gemm:stage06", results))
        stage07 = render_block("gemm:stage07", results)
        self.assertIn("| cublas | 680 |", stage07)
        self.assertNotIn("8192", render_block("gemm:stage06", results))  # only stage 07 measured it
        self.assertEqual(render_value("[cublas/fp16/M:4096/N:4096/K:4096] | .0f", results)[1], "650")
        self.assertEqual(render_value("[cublas/fp16/M:4096/N:4096/K:4096@stage07_gemm.json] | .0f",
                                      results)[1], "680")
        with self.assertRaisesRegex(MarkerError, "no file 'stage08.json'"):
            render_value("[cublas/fp16/M:4096/N:4096/K:4096@stage08.json] | .0f", results)

    def test_figures_draw_a_peer_once_per_run(self):
        with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stderr(io.StringIO()):
            results = load_results(self.folder(tmp))
        lines, series_of = gemm_lines(results.of_kind_every_file("gemm"))
        self.assertEqual(lines["cublas (stage06)"], {4096: 650.0})
        self.assertEqual(lines["cublas (stage07_gemm)"], {4096: 680.0, 8192: 640.0})
        self.assertEqual(lines["stage07/gemm/v1"], {4096: 500.0})  # a series one file timed keeps its name
        self.assertNotIn("cublas", lines)
        self.assertEqual(series_of["cublas (stage06)"], "cublas")
        if HAVE_MATPLOTLIB:
            with tempfile.TemporaryDirectory() as tmp:
                names = {p.name for p in draw_gemm(results, Path(tmp), {})}
            self.assertEqual(names, {"gemm_fp16.png"})

    def test_the_table_of_every_stage_gives_a_peer_a_row_per_run(self):
        with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stderr(io.StringIO()):
            results = load_results(self.folder(tmp))
        table = render_block("gemm", results)
        self.assertIn("| cublas (stage06) | 650 | — |", table)
        self.assertIn("| cublas (stage07_gemm) | 680 | 640 |", table)
        self.assertNotIn("| cublas |", table)


if __name__ == "__main__":
    unittest.main(verbosity=2)
