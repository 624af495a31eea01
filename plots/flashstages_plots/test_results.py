#!/usr/bin/env python3
"""Tests of results.py: benchmark names, the row picked per benchmark, the fixture read as a results folder.

    python3 plots/flashstages_plots/test_results.py      (plots/test_plot_results.py runs every test)
"""

from __future__ import annotations

import json
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # plots/, the package's parent

from flashstages_plots.results import Run, load_results, parse_name, plain_name, select_runs  # noqa: E402
from flashstages_plots.series import attention_family  # noqa: E402
from flashstages_plots.headline import describe_ceiling  # noqa: E402
from flashstages_plots.tables import attention_tables, render_block  # noqa: E402
from flashstages_plots.figures import draw_attention_throughput, series_colors  # noqa: E402
from flashstages_plots.markers import render_value  # noqa: E402
from flashstages_plots.testing import FIXTURE, HAVE_MATPLOTLIB, load, write_results  # noqa: E402


class ParseNameTest(unittest.TestCase):
    def test_attention(self):
        n = parse_name("stage03/v1/fp32/D:64/N:4096/causal:1")
        self.assertEqual((n.series, n.dtype), ("stage03/v1", "fp32"))
        self.assertEqual((n.get("D"), n.get("N"), n.get("causal")), (64, 4096, 1))
        self.assertEqual(n.kind, "attention")

    def test_peer_and_extra_params(self):
        n = parse_name("sdpa_flash/fp16/D:128/N:8192/causal:0/B:2/H:16")
        self.assertEqual((n.series, n.dtype), ("sdpa_flash", "fp16"))
        self.assertEqual((n.get("B"), n.get("H")), (2, 16))
        self.assertEqual(attention_family(n), None)  # B·N = 16384, H = 2048/128: the default rule
        off = parse_name("sdpa_flash/fp16/D:128/N:4096/causal:0/B:2/H:16")
        self.assertEqual(attention_family(off), (2, 16))

    def test_gemm(self):
        n = parse_name("cublas/fp16/M:4096/N:4096/K:4096")
        self.assertEqual((n.series, n.dtype, n.kind), ("cublas", "fp16", "gemm"))
        n = parse_name("stage06/v3/fp16/M:4096/N:2048/K:1000")
        self.assertEqual((n.series, n.get("M"), n.get("N"), n.get("K")), ("stage06/v3", 4096, 2048, 1000))

    def test_run_options_and_aggregate_suffix_are_dropped(self):
        plain = parse_name("stage03/v1/fp16/D:64/N:1024/causal:0")
        for decorated, aggregate in [
            ("stage03/v1/fp16/D:64/N:1024/causal:0/manual_time", None),
            ("stage03/v1/fp16/D:64/N:1024/causal:0/repeats:5/manual_time_median", "median"),
            ("stage03/v1/fp16/D:64/N:1024/causal:0/min_time:0.500/iterations:20/real_time", None),
            ("stage03/v1/fp16/D:64/N:1024/causal:0_stddev", None),
        ]:
            self.assertEqual(parse_name(decorated, aggregate), plain, decorated)

    def test_ceiling_names(self):
        raw = "ceiling/mma_m16n8k16/fp16/min_time:0.050/repeats:5/manual_time"
        n = parse_name(raw)
        self.assertEqual((n.series, n.dtype, n.params, n.kind), ("ceiling/mma_m16n8k16", "fp16", (), "ceiling"))
        self.assertEqual(plain_name(raw + "_median", "median"), "ceiling/mma_m16n8k16/fp16")
        self.assertEqual(plain_name("stage04/v5/fp16/D:128/N:8192/causal:0/repeats:5/manual_time"),
                         "stage04/v5/fp16/D:128/N:8192/causal:0")

    def test_ceiling_at_a_set_occupancy(self):
        n = parse_name("ceiling/mma_m16n8k32/int8/warps_per_scheduler:2/min_time:0.050/repeats:5/manual_time")
        self.assertEqual((n.series, n.dtype, n.params, n.kind),
                         ("ceiling/mma_m16n8k32", "int8", (("warps_per_scheduler", 2),), "ceiling"))
        run = Run(name=n, time_us=1.0, tflops=700.0, gbps=None, extra_bytes=None, source="ceilings.json",
                  picked="median")
        self.assertEqual(describe_ceiling(run), "mma.sync m16n8k32, int8 inputs, 2 warps per scheduler")
        run = Run(name=parse_name("ceiling/mma_m16n8k32/int8"), time_us=1.0, tflops=1300.0, gbps=None,
                  extra_bytes=None, source="ceilings.json", picked="median")
        self.assertEqual(describe_ceiling(run), "mma.sync m16n8k32, int8 inputs")

    def test_unknown_params_kept_and_other_kind(self):
        n = parse_name("stage09/v1/bf16/D:64/N:512/causal:0/window:256")
        self.assertEqual(n.get("window"), 256)
        self.assertEqual(parse_name("BM_memcpy/bytes:1024").kind, "other")


class QueryKeyShapeTest(unittest.TestCase):
    """Names with B, H, Nq, Nk (stage 04's short queries against long keys, and their SDPA peers):
    parsed, kept out of the N-indexed attention tables and figures, quoted by value markers."""

    NAME = "stage04/v6/fp16/D:128/B:1/H:16/Nq:512/Nk:16384/causal:1"
    PEER = "sdpa_flash/fp16/D:128/B:1/H:16/Nq:512/Nk:16384/causal:1"

    GQA = "stage04/v6/fp16/D:128/B:1/H:32/KVH:8/Nq:1/Nk:16384/causal:0"

    def test_parse(self):
        n = parse_name(self.NAME + "/repeats:5/manual_time_median", "median")
        self.assertEqual((n.series, n.dtype), ("stage04/v6", "fp16"))
        self.assertEqual([n.get(k) for k in ("D", "B", "H", "Nq", "Nk", "causal")], [128, 1, 16, 512, 16384, 1])
        self.assertEqual(n.kind, "other")  # no N: not a point of the N-indexed tables and figures

    def test_parse_grouped_query_heads(self):
        n = parse_name(self.GQA + "/repeats:5/manual_time_median", "median")
        self.assertEqual((n.series, n.dtype), ("stage04/v6", "fp16"))
        self.assertEqual([n.get(k) for k in ("D", "B", "H", "KVH", "Nq", "Nk", "causal")],
                         [128, 1, 32, 8, 1, 16384, 0])
        self.assertEqual(n.kind, "other")
        self.assertNotEqual(n, parse_name(self.GQA.replace("/KVH:8", "")))  # not the multi-head point

    def results_with_qk_rows(self, folder: Path):
        write_results(folder)
        doc = {"context": {"gpu_name": "NVIDIA H100 80GB HBM3"}, "benchmarks": []}  # as the fixture's
        for name, us in ((self.NAME, 100.0), (self.PEER, 125.0)):
            doc["benchmarks"].append({"name": name + "_median", "run_name": name, "run_type": "aggregate",
                                      "aggregate_name": "median", "real_time": us, "cpu_time": us,
                                      "time_unit": "us", "TFLOPS": 700.0 * 100.0 / us, "iterations": 1})
        (folder / "qk.json").write_text(json.dumps(doc), encoding="utf-8")
        return load_results(folder)

    def test_tables_and_values(self):
        with tempfile.TemporaryDirectory() as tmp:
            results = self.results_with_qk_rows(Path(tmp) / "results")
            lines, runs = attention_tables(results, None)
            self.assertTrue(lines)
            self.assertNotIn(self.NAME, "\n".join(lines))
            self.assertTrue(all(r.name.kind == "attention" for r in runs))
            self.assertEqual(render_value(f"[{self.NAME}] / [{self.PEER}] | .2f", results)[1], "1.25")
            self.assertEqual(render_value(f"[{self.NAME}] | .1f", results)[1], "700.0")

    @unittest.skipUnless(HAVE_MATPLOTLIB, "matplotlib not installed")
    def test_figures(self):
        with tempfile.TemporaryDirectory() as tmp:
            results = self.results_with_qk_rows(Path(tmp) / "results")
            out = Path(tmp) / "png"
            out.mkdir()
            self.assertTrue(draw_attention_throughput(results, out, {}) is not None)


class SelectRunsTest(unittest.TestCase):
    def row(self, t, run_type="iteration", aggregate=None, tflops=1.0, **extra):
        name = "stage03/v1/fp16/D:64/N:1024/causal:0/repeats:3/manual_time"
        r = {"name": name + (f"_{aggregate}" if aggregate else ""), "run_name": name,
             "run_type": run_type, "real_time": t, "time_unit": "us", "TFLOPS": tflops, "GB/s": 1.0}
        if aggregate:
            r["aggregate_name"] = aggregate
        r.update(extra)
        return r

    def test_median_aggregate_wins(self):
        rows = [self.row(10.0, tflops=3.0), self.row(12.0, tflops=2.5), self.row(30.0, tflops=1.0),
                self.row(17.3, "aggregate", "mean", tflops=2.2), self.row(12.0, "aggregate", "median", tflops=2.5),
                self.row(8.0, "aggregate", "stddev", tflops=0.9), self.row(0.46, "aggregate", "cv", tflops=0.4)]
        (run,) = select_runs(rows, "x.json")
        self.assertEqual((run.time_us, run.tflops, run.picked), (12.0, 2.5, "median"))

    def test_iteration_rows_without_aggregates_give_their_median_not_the_best(self):
        rows = [self.row(10.0, tflops=3.0), self.row(30.0, tflops=1.0), self.row(12.0, tflops=2.5)]
        (run,) = select_runs(rows, "x.json")
        self.assertEqual((run.time_us, run.picked), (12.0, "iteration"))

    def test_time_units_and_errored_rows(self):
        rows = [self.row(1.5, time_unit="ms"),
                {"name": "stage03/v1/fp16/D:64/N:2048/causal:0", "run_type": "iteration",
                 "real_time": 0, "time_unit": "us", "error_occurred": True, "error_message": "oom"}]
        (run,) = select_runs(rows, "x.json")
        self.assertAlmostEqual(run.time_us, 1500.0)

    def test_fixture_uses_medians(self):
        with tempfile.TemporaryDirectory() as tmp:
            write_results(Path(tmp))
            results = load_results(Path(tmp))
        by_name = {(r.name.series, r.name.dtype, r.name.params): r for r in results.runs}
        v1 = by_name[("stage03/v1", "fp16", (("D", 64), ("N", 1024), ("causal", 0)))]
        self.assertEqual((v1.tflops, v1.picked), (38.0, "median"))  # mean 37.11, best 39.14
        naive = by_name[("stage01/naive", "fp16", (("D", 64), ("N", 1024), ("causal", 0)))]
        self.assertEqual(naive.picked, "iteration")
        self.assertAlmostEqual(naive.time_us, 65447.1)  # written in ms
        self.assertEqual(results.contexts["sdpa.json"]["torch_version"], "2.9.0+cu128")
        self.assertFalse(any(r.name.get("M") == 8192 for r in results.runs))  # errored row dropped
        self.assertEqual(len(results.of_kind("gemm")), 12)
        self.assertEqual(len(results.of_kind("attention")), 12 * 4 + 1)


class CeilingRowsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.results = load(FIXTURE, ceilings=True)

    def test_rows_are_read_as_ceilings_and_kept_out_of_the_other_tables(self):
        ceilings = self.results.of_kind("ceiling")
        self.assertEqual([r.plain for r in ceilings][:2], ["ceiling/ffma/fp32", "ceiling/mma_m16n8k16/fp16"])
        self.assertEqual(len(ceilings), 8)
        ffma = ceilings[0]
        self.assertEqual((ffma.picked, ffma.tflops, ffma.per_sm_clk), ("median", 63.2, 241.8121))
        int8 = self.results.find(parse_name("ceiling/mma_m16n8k32/int8"))
        self.assertEqual(int8.tflops, 1288.0)  # the fixture names this counter TOPS
        self.assertEqual(self.results.find(parse_name("ceiling/ex2/fp32")).gops, 4050.0)
        for kind in ("attention", "gemm", "memory"):
            self.assertNotIn("ceiling", render_block(kind, self.results), kind)
        self.assertNotIn("ceiling/ffma", series_colors(self.results))


if __name__ == "__main__":
    unittest.main(verbosity=2)
