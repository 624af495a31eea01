#!/usr/bin/env python3
"""Tests of tables.py: the ceilings, ladder, versions, roofline, cliff and tuner tables; techniques.py.

    python3 plots/flashstages_plots/test_tables.py      (plots/test_plot_results.py runs every test)
"""

from __future__ import annotations

import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # plots/, the package's parent

from flashstages_plots.results import Results, ResultsError, parse_name, select_runs  # noqa: E402
from flashstages_plots.tables import aligned_neighbour, render_block  # noqa: E402
from flashstages_plots.testing import FIXTURE, LADDER_FIXTURE, load  # noqa: E402


class CeilingsTableTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.results = load(FIXTURE, ceilings=True)

    def test_ceilings_block(self):
        text = render_block("ceilings", self.results)
        for row in (
                "| `ceiling/ffma/fp32` | FFMA (fp32 fused multiply-add) | 63.2 TFLOPS | 242 FLOP/clk/SM "
                "| 66.9 (`peak_fp32_tflops`) | 94.5% |",
                "| `ceiling/mma_m16n8k16/fp16` | mma.sync m16n8k16, fp16 inputs | 652 TFLOPS | 2495 FLOP/clk/SM "
                "| 1071 (`peak_fp16_tflops`) | 60.9% |",
                "| `ceiling/mma_m16n8k32/int8` | mma.sync m16n8k32, int8 inputs | 1288 TOPS | 4928 op/clk/SM "
                "| 2141 (`peak_int8_tops`) | 60.2% |",
                "| `ceiling/ex2/fp32` | ex2.approx (MUFU) | 4050 Gop/s | 15.5 op/clk/SM | — | — |",
                "| `ceiling/dram_copy/fp32` | DRAM copy (read + write) | 2950 GB/s | 11.3 B/clk/SM "
                "| 3352 (`peak_dram_gbps`) | 88.0% |"):
            self.assertIn(row, text)
        self.assertIn("1980 MHz", text)
        self.assertIn("`ceilings.json`", text)

    def test_new_blocks_take_no_prefix(self):
        for kind in ("ceilings", "ladder", "roofline"):
            with self.assertRaisesRegex(ResultsError, "takes no series prefix"):
                render_block(kind + ":stage04", self.results)


class LadderTableTest(unittest.TestCase):
    def test_table_without_ceilings(self):
        text = render_block("ladder", load(LADDER_FIXTURE))
        self.assertIn("| stage | version | arithmetic | shape | run | TFLOPS | % of peak |\n", text)
        self.assertIn("| stage01 | v1 | fp32 | attention D = 128, N = 8192, non-causal | `stage01.json` | 0.90 | 1.3% |",
                      text)
        self.assertIn("| stage04 | v2 | fp16 | attention D = 128, N = 8192, non-causal | `stage04.json` | 360 | 33.6% |",
                      text)
        self.assertIn("| stage05 (backward) | v1 | fp16 |", text)
        self.assertIn("| sdpa_cudnn (peer) | — | fp16 | attention D = 128, N = 8192, non-causal | `sdpa.json` | 610 "
                      "| 57.0% |", text)
        self.assertIn("| cublaslt (peer) | — | int8 | GEMM M = N = K = 4096 | `stage06.json` | 1300 | 60.7% |", text)
        self.assertIn("`peak_fp16_tflops` = 1071", text)
        self.assertNotIn("ceiling", text)

    def test_table_with_ceilings(self):
        text = render_block("ladder", load(LADDER_FIXTURE, ceilings=True))
        self.assertIn("| TFLOPS | % of peak | % of instruction ceiling |", text)
        self.assertIn("| stage04 | v2 | fp16 | attention D = 128, N = 8192, non-causal | `stage04.json` | 360 | 33.6% "
                      "| 55.2% |", text)
        self.assertIn("| stage06 | v1 | fp32 | GEMM M = N = K = 4096 | `stage06.json` | 45.0 | 67.3% | 71.2% |", text)
        self.assertIn("`ceiling/mma_m16n8k32/int8` = 1288", text)

    def test_no_peak_in_the_context_gives_no_percent(self):
        results = load(FIXTURE)  # no peaks in these contexts: % of peak is unknown, not invented
        text = render_block("ladder", results)
        self.assertIn("| stage06 | v2 | fp16 | GEMM M = N = K = 4096 | `stage06.json` | 294 | — |", text)


class VersionsTableTest(unittest.TestCase):
    """A stage's ladder: each version at the headline shape with its idea, × previous, its peers."""

    def test_stage06_versions_in_their_arithmetic_with_their_peers(self):
        text = render_block("versions:stage06", load(LADDER_FIXTURE))
        rows = [line for line in text.splitlines() if line.startswith("| v") and not line.startswith("| version")
                or "(peer)" in line]
        self.assertTrue(rows[0].startswith("| v1 | SIMT fp32: 32x32 shared-memory tiles"), rows[0])
        self.assertIn("| fp32 |", rows[0])
        self.assertIn("| v2 |", rows[1])
        self.assertIn("| fp16 |", rows[1])  # v2's 4096³ row (its 1024³ row is not the headline)
        self.assertIn("| int8 |", rows[2])
        # every version the registry has keeps its row; those without the headline shape say so
        self.assertTrue(any(r.startswith("| v16 |") and "not timed at this shape" in r for r in rows))
        peers = [r for r in rows if "(peer)" in r]
        self.assertEqual([r.split("|")[1].strip() for r in peers],
                         ["cublas (peer)", "cublas (peer)", "cublaslt (peer)"])  # fp32, fp16, int8; not bf16
        self.assertNotIn("sdpa", text)  # attention peers stand beside attention stages only

    def test_times_over_the_previous_version_of_the_same_arithmetic(self):
        text = render_block("versions:stage04", load(LADDER_FIXTURE))
        v1 = next(l for l in text.splitlines() if l.startswith("| v1 |"))
        v2 = next(l for l in text.splitlines() if l.startswith("| v2 |"))
        self.assertIn("| fp16 |", v1)  # fp16 before bf16
        t1, t2 = (float(l.split("|")[4]) for l in (v1, v2))
        self.assertIn(f"| {t2 / t1:.2f}× |", v2)
        self.assertIn("sdpa_flash (peer)", text)

    def test_the_ladder_starts_from_the_rung_it_builds_on(self):
        text = render_block("versions:stage04", load(LADDER_FIXTURE))
        rows = [l for l in text.splitlines() if l.startswith("| stage03/")]
        self.assertEqual(len(rows), 1)
        self.assertIn("(before)", rows[0])  # stage 03's fastest, fp32 (it has no fp16 row)
        self.assertIn("| fp32 |", rows[0])

    def test_one_stage_only(self):
        with self.assertRaises(ResultsError):
            render_block("versions:stage04+stage05", load(LADDER_FIXTURE))
        with self.assertRaises(ResultsError):
            render_block("versions", load(LADDER_FIXTURE))


class VersusTest(unittest.TestCase):
    @staticmethod
    def results():
        def rows(rates):
            return [{"name": name, "real_time": 1.0, "time_unit": "ms", "TFLOPS": tflops} for name, tflops in rates.items()]
        own = rows({"stage07/attention/v1/fp16/D:64/N:512/causal:0": 300.0,
                    "stage07/attention/v2/fp16/D:64/N:512/causal:0": 330.0,
                    "stage07/attention/v2_variant/fp16/D:64/N:512/causal:0": 900.0,  # not a version
                    "stage07/attention/v1/fp16/D:64/N:1024/causal:0": 420.0,
                    "stage07/attention/v1/fp16/D:128/N:512/causal:1": 200.0,  # no peer in this run
                    "stage07/attention/v1/fp16/D:128/B:1/H:16/Nq:512/Nk:16384/causal:0": 500.0,  # off the grid
                    "sdpa_cudnn/fp16/D:64/N:512/causal:0": 400.0,
                    "sdpa_cudnn/fp16/D:64/N:1024/causal:0": 400.0})
        other = rows({"sdpa_cudnn/fp16/D:128/N:512/causal:1": 100.0})  # another run's peer: not taken
        return Results(contexts={"stage07_attention.json": {}, "sdpa.json": {}},
                       runs=select_runs(own, "stage07_attention.json") + select_runs(other, "sdpa.json"))

    def test_the_fastest_version_over_the_same_runs_peer(self):
        text = render_block("versus:stage07/attention", self.results())
        self.assertIn("| fp16, D = 64, non-causal | **0.82** (v2) | 1.05 (v1) |", text)
        self.assertIn("lowest 0.82, at fp16, D = 64, non-causal, N = 512", text)
        self.assertNotIn("D = 128", text.split("\n", 2)[2].split("lowest")[1])  # no peer there in the same run
        self.assertNotIn("2.25", text)  # the variant is not a version

    def test_the_share_of_the_dense_peak_beside_the_version(self):
        def rows(rates):
            return [{"name": name, "real_time": 1.0, "time_unit": "ms", "TFLOPS": tflops} for name, tflops in rates.items()]
        own = rows({"stage07/attention/v1/fp16/D:64/N:512/causal:0": 300.0,
                    "stage07/attention/v9/fp8_e4m3/D:128/N:512/causal:0": 500.0,
                    "sdpa_cudnn/fp16/D:64/N:512/causal:0": 400.0,
                    "sdpa_cudnn/fp8_e4m3/D:128/N:512/causal:0": 1000.0})
        results = Results(contexts={"stage07_attention.json": {"peak_fp16_tflops": "1000"}},
                          runs=select_runs(own, "stage07_attention.json"))
        text = render_block("versus:stage07/attention", results)
        self.assertIn("| fp16, D = 64, non-causal | **0.75** (v1, 30%) |", text)
        self.assertIn("| fp8_e4m3, D = 128, non-causal | **0.50** (v9, 25%) |", text)  # of twice the fp16 peak
        self.assertIn("fp8 twice fp16", text)
        self.assertNotIn("fp8 twice", render_block("versus:stage07/attention", self.results()))

    def test_one_stage_and_a_peer_of_its_pass(self):
        with self.assertRaises(ResultsError):
            render_block("versus", self.results())
        self.assertIn("No matching results", render_block("versus:stage07/attention_bwd", self.results()))


class TechniquesTest(unittest.TestCase):
    def test_every_version_of_every_stage_has_its_idea(self):
        import re
        from flashstages_plots.techniques import REPO_ROOT, version_techniques
        found = version_techniques()
        for cmake in (REPO_ROOT / "stages").rglob("CMakeLists.txt"):
            text = cmake.read_text(encoding="utf-8")
            versions = re.search(r"VERSIONS\s+((?:v\d+\s*)+)", text)
            if not versions:
                continue
            stage = re.search(r"flashstages_add_stage\(\s*(\w+)", text).group(1)
            for v in versions.group(1).split():
                key = next((k for k in found if k.replace("/", "_") == f"{stage}/{v}".replace("/", "_")), None)
                self.assertIsNotNone(key, f"{stage} {v}: no descriptor with a technique in {cmake.parent}")
                self.assertTrue(found[key])


class RooflineTableTest(unittest.TestCase):
    def test_table_without_bandwidth(self):
        text = render_block("roofline", load(LADDER_FIXTURE))
        self.assertIn("_No DRAM bandwidth in these results", text)
        self.assertIn("| fp16 tensor-core peak | 1071 TFLOPS (`peak_fp16_tflops`) | — | — |", text)
        self.assertIn("| stage01 v1 | fp32 | attention D = 128, N = 8192, non-causal | 32.0 | 0.90 "
                      "| fp32 FFMA peak (no bandwidth known): 66.9 | 1.3% |", text)
        self.assertIn("| stage04 v2 | fp16 | attention D = 128, N = 8192, non-causal | 4080 | 360 |", text)
        self.assertNotIn("measured", text)

    def test_table_with_ceilings(self):
        text = render_block("roofline", load(LADDER_FIXTURE, ceilings=True))
        self.assertIn("| fp16 tensor-core peak | 1071 TFLOPS (`peak_fp16_tflops`) | 3352 GB/s (`peak_dram_gbps`) "
                      "| 319 |", text)
        self.assertIn("| mma.sync m16n8k16 fp16, measured | 652 TFLOPS (`ceiling/mma_m16n8k16/fp16`) "
                      "| 2950 GB/s (`ceiling/dram_copy/fp32`) | 221 |", text)
        self.assertIn("| cublas (peer) | fp16 | GEMM M = N = K = 4096 | 1365 | 660 | fp16 tensor-core peak: 1071 "
                      "| 61.7% | mma.sync m16n8k16 fp16, measured: 652 | 101.2% |", text)
        self.assertNotIn("_No DRAM bandwidth", text)


class CliffTest(unittest.TestCase):
    @staticmethod
    def results(rates: dict[str, float]):
        rows = [{"name": name, "real_time": 1.0, "time_unit": "ms", "TFLOPS": tflops}
                for name, tflops in rates.items()]
        return Results(contexts={"stage06.json": {}}, runs=select_runs(rows, "stage06.json"))

    def test_aligned_neighbour(self):
        self.assertEqual(aligned_neighbour((4096, 4096, 1000)), (4096, 4096, 1024))
        self.assertEqual(aligned_neighbour((1000, 1000, 1000)), (1024, 1024, 1024))
        self.assertEqual(aligned_neighbour((17, 17, 17)), (128, 128, 128))

    def test_each_unaligned_shape_against_its_neighbour(self):
        text = render_block("cliff:stage06", self.results({
            "stage06/v10/int8/M:4096/N:4096/K:1000": 360.0, "stage06/v10/int8/M:4096/N:4096/K:1024": 400.0,
            "stage06/v8/int8/M:4096/N:4096/K:1000": 53.0, "stage06/v8/int8/M:4096/N:4096/K:1024": 300.0,
            "stage06/v9/fp16/M:1000/N:1000/K:1000": 55.0,  # no 1024³ for v9: no row
            "stage06/v9/fp16/M:4096/N:4096/K:4096": 378.0}))
        self.assertIn("| int8 | stage06/v8 | 4096×4096×1000 | 4096×4096×1024 | 53.0 | 300 | 0.18× | **no** |", text)
        self.assertIn("| int8 | stage06/v10 | 4096×4096×1000 | 4096×4096×1024 | 360 | 400 | 0.90× | yes |", text)
        self.assertNotIn("stage06/v9", text)

    def test_nothing_to_compare_says_so(self):
        text = render_block("cliff", self.results({"stage06/v9/fp16/M:4096/N:4096/K:1000": 288.0}))
        self.assertIn("No unaligned shape has its aligned neighbour measured", text)


class TunerTest(unittest.TestCase):
    @staticmethod
    def results(rates: dict[str, tuple[float, int]]):
        rows = [{"name": name, "real_time": 1.0, "time_unit": "ms", "TFLOPS": tflops, "picked": picked}
                for name, (tflops, picked) in rates.items()]
        return Results(contexts={"stage04.json": {}}, runs=select_runs(rows, "stage04.json"))

    def test_candidates_are_their_own_kind(self):
        name = parse_name("stage04/v5/fp16/D:128/N:8192/causal:0/tile:2")
        self.assertEqual(name.kind, "candidate")
        self.assertEqual(parse_name("stage04/v5/fp16/D:128/N:8192/causal:0").kind, "attention")

    def test_chosen_against_the_fastest(self):
        text = render_block("tuner:stage04/v5", self.results({
            "stage04/v5/fp16/D:64/N:512/causal:1/tile:0": (100.0, 0),
            "stage04/v5/fp16/D:64/N:512/causal:1/tile:3": (90.0, 1),  # chosen, 10% behind: bold
            "stage04/v5/fp16/D:64/N:8192/causal:1/tile:0": (250.0, 0),
            "stage04/v5/fp16/D:64/N:8192/causal:1/tile:3": (260.0, 1),  # chosen and fastest
            "stage04/v5/fp16/D:64/N:8192/causal:1": (259.0, 0)}))  # v5 itself: not a candidate
        self.assertIn("| series | dtype | D | causal | N = 512 | N = 8192 | worst |", text)
        self.assertIn("| stage04/v5 | fp16 | 64 | 1 | **0.900 (tile 3; best 0)** | 1.000 (tile 3) | 0.900 |", text)

    def test_shapes_off_the_grid_one_row_each(self):
        text = render_block("tuner:stage04/v6", self.results({
            "stage04/v6/fp16/D:128/B:1/H:16/Nq:512/Nk:16384/causal:0/tile:1/splits:2": (330.0, 1),
            "stage04/v6/fp16/D:128/B:1/H:16/Nq:512/Nk:16384/causal:0/tile:1/splits:4": (345.0, 0)}))
        self.assertIn("| series | dtype | shape | chosen | fastest | candidates | chosen / fastest |", text)
        self.assertIn("| stage04/v6 | fp16 | D 128, B 1, H 16, Nq 512, Nk 16384, causal 0 | tile 1, splits 2 | "
                      "tile 1, splits 4 | 2 | **0.957** |", text)

    def test_a_point_without_one_choice_is_left_out(self):
        text = render_block("tuner", self.results({
            "stage04/v5/bf16/D:128/N:1024/causal:0/tile:0": (100.0, 0),
            "stage04/v5/bf16/D:128/N:1024/causal:0/tile:1": (110.0, 0)}))
        self.assertIn("No matching results", text)


if __name__ == "__main__":
    unittest.main(verbosity=2)
