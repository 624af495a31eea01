#!/usr/bin/env python3
"""Tests of headline.py: the headline entries of the ladder, and the roof that bounds a point.

    python3 plots/flashstages_plots/test_headline.py      (plots/test_plot_results.py runs every test)
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

from flashstages_plots.results import load_results  # noqa: E402
from flashstages_plots.headline import Roof, bound_by, headline_entries  # noqa: E402
from flashstages_plots.testing import LADDER_FIXTURE, load  # noqa: E402


class HeadlineEntriesTest(unittest.TestCase):
    def test_fastest_version_of_each_stage_then_peers(self):
        entries = headline_entries(load(LADDER_FIXTURE))
        self.assertEqual([(e.group, e.dtype, e.label) for e in entries], [
            ("attention", "fp32", "stage01 v1"), ("attention", "fp32", "stage02 v1"),
            ("attention", "fp32", "stage03 v1"),  # v1 is faster than v2 here: the fastest, not the last
            ("attention", "fp16", "stage04 v2"), ("attention", "fp16", "stage05 v1 (backward)"),
            ("attention", "fp16", "sdpa_flash"), ("attention", "fp16", "sdpa_cudnn"),
            ("gemm", "fp32", "stage06 v1"), ("gemm", "fp32", "cublas"),
            ("gemm", "fp16", "stage06 v2"), ("gemm", "fp16", "cublas"),
            ("gemm", "int8", "stage06 v3"), ("gemm", "int8", "cublaslt")])
        # Left out: bf16 (v1 bf16 is faster than any fp16), causal, D = 64, B:1/H:16, sdpa_efficient,
        # 1024³, and the ceilings.
        self.assertEqual(entries[3].run.tflops, 360.0)
        self.assertEqual(entries[5].run.name.params, (("D", 128), ("N", 8192), ("causal", 0)))

    def test_peers_from_the_run_of_the_fastest_stage_beside_them(self):
        def doc(rows: dict[str, float]) -> dict:
            return {"context": {}, "benchmarks": [
                {"name": name, "real_time": 1.0, "time_unit": "ms", "TFLOPS": tflops} for name, tflops in rows.items()]}
        cell = "fp16/D:128/N:8192/causal:0"
        files = {
            "sdpa.json": doc({f"sdpa_cudnn/{cell}": 560.0, f"sdpa_flash/{cell}": 330.0}),
            "sdpa_bwd.json": doc({f"sdpa_cudnn_bwd/{cell}": 500.0}),
            "stage04.json": doc({f"stage04/v5/{cell}": 360.0}),
            "stage05.json": doc({f"stage05/v10/{cell}": 300.0, f"sdpa_cudnn_bwd/{cell}": 510.0}),
            # stage 07's call re-measured cuDNN, not flash: cuDNN comes from it, flash from sdpa.json.
            "stage07_attention.json": doc({f"stage07/attention/v8/{cell}": 610.0, f"stage04/v5/{cell}": 355.0,
                                           f"sdpa_cudnn/{cell}": 575.0}),
        }
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            for file_name, content in files.items():
                (folder / file_name).write_text(json.dumps(content), encoding="utf-8")
            with contextlib.redirect_stderr(io.StringIO()):  # the re-measured names are reported
                entries = headline_entries(load_results(folder))
        peers = {e.stage: (e.run.source, e.run.tflops) for e in entries if e.peer}
        self.assertEqual(peers, {"sdpa_cudnn": ("stage07_attention.json", 575.0),
                                 "sdpa_flash": ("sdpa.json", 330.0),
                                 "sdpa_cudnn_bwd": ("stage05.json", 510.0)})
        stage04 = next(e for e in entries if e.stage == "stage04")
        self.assertEqual((stage04.run.source, stage04.run.tflops), ("stage04.json", 360.0))


    def test_a_backward_rung_stands_beside_its_stage_forward(self):
        # stage07/attention_bwd is a stage of its own in the ladder: its fastest plain version (not a
        # variant such as v10_deterministic) beside the forward's, and the backward peers from its run.
        cell = "fp16/D:128/N:8192/causal:0"
        rows = {"stage07_attention.json": {f"stage07/attention/v8/{cell}": 610.0},
                "stage07_attention_bwd.json": {f"stage07/attention_bwd/v10/{cell}": 480.0,
                                               f"stage07/attention_bwd/v9/{cell}": 455.0,
                                               f"stage07/attention_bwd/v10_deterministic/{cell}": 490.0,
                                               f"sdpa_cudnn_bwd/{cell}": 515.0},
                "stage05.json": {f"stage05/v10/{cell}": 300.0, f"sdpa_cudnn_bwd/{cell}": 505.0}}
        with tempfile.TemporaryDirectory() as tmp:
            for file_name, content in rows.items():
                (Path(tmp) / file_name).write_text(json.dumps({"context": {}, "benchmarks": [
                    {"name": n, "real_time": 1.0, "time_unit": "ms", "TFLOPS": t} for n, t in content.items()]}))
            with contextlib.redirect_stderr(io.StringIO()):
                entries = headline_entries(load_results(Path(tmp)))
        self.assertEqual([(e.label, e.run.tflops) for e in entries], [
            ("stage05 v10 (backward)", 300.0), ("stage07 attention/v8", 610.0),
            ("stage07 attention_bwd/v10 (backward)", 480.0), ("sdpa_cudnn_bwd", 515.0)])
        self.assertEqual(entries[-1].run.source, "stage07_attention_bwd.json")


class RoofTest(unittest.TestCase):
    def test_bound_is_the_lower_roof(self):
        compute = Roof("fp32 FFMA peak", 66.9, "`peak_fp32_tflops`", False, "fp32")
        memory = Roof("DRAM peak", 3352.0, "`peak_dram_gbps`", False)
        self.assertEqual(bound_by(10.0, compute, memory), (33.52, "DRAM peak"))
        self.assertEqual(bound_by(100.0, compute, memory), (66.9, "fp32 FFMA peak"))
        self.assertEqual(bound_by(10.0, compute, None), (66.9, "fp32 FFMA peak (no bandwidth known)"))
        self.assertEqual(bound_by(10.0, None, None), (None, "—"))


if __name__ == "__main__":
    unittest.main(verbosity=2)
