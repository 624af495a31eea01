#!/usr/bin/env python3
"""Tests for plots/plot_results.py over the fixtures in plots/fixtures/ (made-up test data).

    python3 plots/test_plot_results.py        (exit status non-zero on failure; CTest runs this)

Only the figure tests need matplotlib; without it they are skipped and everything else runs.

sample_results.json maps file names to Google Benchmark documents, as a results folder would hold
them: stage01 (naive, one run each, times in ms), stage03 v1/v2 (3 repetitions with mean/median/
stddev aggregates; v2 aggregates only), sdpa_flash (median aggregates, one extra B/H shape) and a
GEMM file (stage06 v1/v2 and cuBLAS, one non-square shape, one errored row).
ladder_results.json (same layout) holds the headline shapes: stages 01-06 with several versions and
dtypes, peers, and rows the ladder must leave out (bf16, causal, D = 64, off-rule B/H, 1024³).
ceilings.json is one Google Benchmark document as the instruction-ceiling benchmark writes it.
"""

import contextlib
import io
import json
import re
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import plot_results as pr  # noqa: E402  (imported after the path is set)

FIXTURE = HERE / "fixtures" / "sample_results.json"
LADDER_FIXTURE = HERE / "fixtures" / "ladder_results.json"
CEILINGS_FIXTURE = HERE / "fixtures" / "ceilings.json"

try:
    import matplotlib  # noqa: F401
    HAVE_MATPLOTLIB = True
except ImportError:
    HAVE_MATPLOTLIB = False

README = """# Stage 03

Text before, with trailing spaces   \n\
<!-- results:attention:stage03/v2:begin -->
stale table
<!-- results:attention:stage03/v2:end -->

Between the blocks.

<!-- results:gemm:stage06/v2:begin -->
<!-- results:gemm:stage06/v2:end -->

```markdown
<!-- results:not-a-block:begin -->
an example inside a code fence is left alone
<!-- results:not-a-block:end -->
```

<!-- results:memory:begin -->
<!-- results:memory:end -->
Text after, no final newline"""


def write_results(folder: Path, fixture: Path = FIXTURE, ceilings: bool = False) -> Path:
    """Lay a fixture out as a results folder: one JSON file per stage (and ceilings.json)."""
    folder.mkdir(parents=True, exist_ok=True)
    for file_name, doc in json.loads(fixture.read_text(encoding="utf-8")).items():
        (folder / file_name).write_text(json.dumps(doc, indent=1), encoding="utf-8")
    if ceilings:
        (folder / "ceilings.json").write_text(CEILINGS_FIXTURE.read_text(encoding="utf-8"), encoding="utf-8")
    return folder


def load(fixture: Path = FIXTURE, ceilings: bool = False):
    with tempfile.TemporaryDirectory() as tmp:
        return pr.load_results(write_results(Path(tmp) / "results", fixture, ceilings))


def run_main(argv: list[str]) -> tuple[int, str]:
    """main(argv) with its output captured; returns (exit status, stdout + stderr)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        status = pr.main(argv)
    return status, out.getvalue()


def block(text: str, name: str) -> str:
    begin = f"<!-- results:{name}:begin -->"
    end = f"<!-- results:{name}:end -->"
    return text[text.index(begin) + len(begin):text.index(end)]


class ParseNameTest(unittest.TestCase):
    def test_attention(self):
        n = pr.parse_name("stage03/v1/fp32/D:64/N:4096/causal:1")
        self.assertEqual((n.series, n.dtype), ("stage03/v1", "fp32"))
        self.assertEqual((n.get("D"), n.get("N"), n.get("causal")), (64, 4096, 1))
        self.assertEqual(n.kind, "attention")

    def test_peer_and_extra_params(self):
        n = pr.parse_name("sdpa_flash/fp16/D:128/N:8192/causal:0/B:2/H:16")
        self.assertEqual((n.series, n.dtype), ("sdpa_flash", "fp16"))
        self.assertEqual((n.get("B"), n.get("H")), (2, 16))
        self.assertEqual(pr.attention_family(n), None)  # B·N = 16384, H = 2048/128: the default rule
        off = pr.parse_name("sdpa_flash/fp16/D:128/N:4096/causal:0/B:2/H:16")
        self.assertEqual(pr.attention_family(off), (2, 16))

    def test_gemm(self):
        n = pr.parse_name("cublas/fp16/M:4096/N:4096/K:4096")
        self.assertEqual((n.series, n.dtype, n.kind), ("cublas", "fp16", "gemm"))
        n = pr.parse_name("stage06/v3/fp16/M:4096/N:2048/K:1000")
        self.assertEqual((n.series, n.get("M"), n.get("N"), n.get("K")), ("stage06/v3", 4096, 2048, 1000))

    def test_run_options_and_aggregate_suffix_are_dropped(self):
        plain = pr.parse_name("stage03/v1/fp16/D:64/N:1024/causal:0")
        for decorated, aggregate in [
            ("stage03/v1/fp16/D:64/N:1024/causal:0/manual_time", None),
            ("stage03/v1/fp16/D:64/N:1024/causal:0/repeats:5/manual_time_median", "median"),
            ("stage03/v1/fp16/D:64/N:1024/causal:0/min_time:0.500/iterations:20/real_time", None),
            ("stage03/v1/fp16/D:64/N:1024/causal:0_stddev", None),
        ]:
            self.assertEqual(pr.parse_name(decorated, aggregate), plain, decorated)

    def test_ceiling_names(self):
        raw = "ceiling/mma_m16n8k16/fp16/min_time:0.050/repeats:5/manual_time"
        n = pr.parse_name(raw)
        self.assertEqual((n.series, n.dtype, n.params, n.kind), ("ceiling/mma_m16n8k16", "fp16", (), "ceiling"))
        self.assertEqual(pr.plain_name(raw + "_median", "median"), "ceiling/mma_m16n8k16/fp16")
        self.assertEqual(pr.plain_name("stage04/v5/fp16/D:128/N:8192/causal:0/repeats:5/manual_time"),
                         "stage04/v5/fp16/D:128/N:8192/causal:0")

    def test_ceiling_at_a_set_occupancy(self):
        n = pr.parse_name("ceiling/mma_m16n8k32/int8/warps_per_scheduler:2/min_time:0.050/repeats:5/manual_time")
        self.assertEqual((n.series, n.dtype, n.params, n.kind),
                         ("ceiling/mma_m16n8k32", "int8", (("warps_per_scheduler", 2),), "ceiling"))
        run = pr.Run(name=n, time_us=1.0, tflops=700.0, gbps=None, extra_bytes=None, source="ceilings.json",
                     picked="median")
        self.assertEqual(pr.describe_ceiling(run), "mma.sync m16n8k32, int8 inputs, 2 warps per scheduler")
        run = pr.Run(name=pr.parse_name("ceiling/mma_m16n8k32/int8"), time_us=1.0, tflops=1300.0, gbps=None,
                     extra_bytes=None, source="ceilings.json", picked="median")
        self.assertEqual(pr.describe_ceiling(run), "mma.sync m16n8k32, int8 inputs")

    def test_unknown_params_kept_and_other_kind(self):
        n = pr.parse_name("stage09/v1/bf16/D:64/N:512/causal:0/window:256")
        self.assertEqual(n.get("window"), 256)
        self.assertEqual(pr.parse_name("BM_memcpy/bytes:1024").kind, "other")


class QueryKeyShapeTest(unittest.TestCase):
    """Names with B, H, Nq, Nk (stage 04's short queries against long keys, and their SDPA peers):
    parsed, kept out of the N-indexed attention tables and figures, quoted by value markers."""

    NAME = "stage04/v6/fp16/D:128/B:1/H:16/Nq:512/Nk:16384/causal:1"
    PEER = "sdpa_flash/fp16/D:128/B:1/H:16/Nq:512/Nk:16384/causal:1"

    GQA = "stage04/v6/fp16/D:128/B:1/H:32/KVH:8/Nq:1/Nk:16384/causal:0"

    def test_parse(self):
        n = pr.parse_name(self.NAME + "/repeats:5/manual_time_median", "median")
        self.assertEqual((n.series, n.dtype), ("stage04/v6", "fp16"))
        self.assertEqual([n.get(k) for k in ("D", "B", "H", "Nq", "Nk", "causal")], [128, 1, 16, 512, 16384, 1])
        self.assertEqual(n.kind, "other")  # no N: not a point of the N-indexed tables and figures

    def test_parse_grouped_query_heads(self):
        n = pr.parse_name(self.GQA + "/repeats:5/manual_time_median", "median")
        self.assertEqual((n.series, n.dtype), ("stage04/v6", "fp16"))
        self.assertEqual([n.get(k) for k in ("D", "B", "H", "KVH", "Nq", "Nk", "causal")],
                         [128, 1, 32, 8, 1, 16384, 0])
        self.assertEqual(n.kind, "other")
        self.assertNotEqual(n, pr.parse_name(self.GQA.replace("/KVH:8", "")))  # not the multi-head point

    def results_with_qk_rows(self, folder: Path):
        write_results(folder)
        doc = {"context": {"gpu_name": "NVIDIA H100 80GB HBM3"}, "benchmarks": []}  # as the fixture's
        for name, us in ((self.NAME, 100.0), (self.PEER, 125.0)):
            doc["benchmarks"].append({"name": name + "_median", "run_name": name, "run_type": "aggregate",
                                      "aggregate_name": "median", "real_time": us, "cpu_time": us,
                                      "time_unit": "us", "TFLOPS": 700.0 * 100.0 / us, "iterations": 1})
        (folder / "qk.json").write_text(json.dumps(doc), encoding="utf-8")
        return pr.load_results(folder)

    def test_tables_and_values(self):
        with tempfile.TemporaryDirectory() as tmp:
            results = self.results_with_qk_rows(Path(tmp) / "results")
            lines, runs = pr.attention_tables(results, None)
            self.assertTrue(lines)
            self.assertNotIn(self.NAME, "\n".join(lines))
            self.assertTrue(all(r.name.kind == "attention" for r in runs))
            self.assertEqual(pr.render_value(f"[{self.NAME}] / [{self.PEER}] | .2f", results)[1], "1.25")
            self.assertEqual(pr.render_value(f"[{self.NAME}] | .1f", results)[1], "700.0")

    @unittest.skipUnless(HAVE_MATPLOTLIB, "matplotlib not installed")
    def test_figures(self):
        with tempfile.TemporaryDirectory() as tmp:
            results = self.results_with_qk_rows(Path(tmp) / "results")
            out = Path(tmp) / "png"
            out.mkdir()
            self.assertTrue(pr.draw_attention_throughput(results, out, {}) is not None)


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
            results = pr.load_results(folder)
        self.assertTrue(pr.is_backward("sdpa_flash_bwd") and pr.is_backward("stage05/v2"))
        self.assertFalse(pr.is_backward("sdpa_flash") or pr.is_backward("stage04/v5"))
        for prefix, peer, other in ((("stage05",), "sdpa_flash_bwd", "sdpa_flash"),
                                    (("stage04",), "sdpa_flash", "sdpa_flash_bwd")):
            _, runs = pr.attention_tables(results, prefix)
            series = {r.name.series for r in runs}
            self.assertIn(peer, series, prefix)
            self.assertNotIn(other, series, prefix)

    def test_the_passes_never_share_a_table_or_figure(self):
        doc = {"context": {"gpu_name": "NVIDIA H100 80GB HBM3"}, "benchmarks": []}
        for series in ("stage04/v5", "stage05/v2", "sdpa_flash_bwd"):
            name = f"{series}/fp16/D:64/N:4096/causal:0"
            doc["benchmarks"].append({"name": name, "real_time": 1.0, "time_unit": "ms", "TFLOPS": 100.0,
                                      "extra_bytes": 1048576.0})
        results = pr.Results(contexts={"rows.json": {}}, runs=pr.select_runs(doc["benchmarks"], "rows.json"))
        text = pr.render_block("attention", results)
        forward, _, backward = text.partition("**backward, fp16, D = 64, non-causal**")
        self.assertIn("stage04/v5", forward)
        self.assertNotIn("stage05/v2", forward)
        self.assertIn("stage05/v2", backward)
        self.assertNotIn("stage04/v5", backward)
        memory = pr.render_block("memory", results)
        self.assertIn("**forward, D = 64, non-causal** — extra device memory (MiB) beyond Q, K, V, O;", memory)
        self.assertIn("beyond Q, K, V, O, dO, LSE, dQ, dK, dV", memory)
        self.assertNotIn("stage05", pr.render_block("memory:stage04", results))
        if HAVE_MATPLOTLIB:
            with tempfile.TemporaryDirectory() as tmp:
                names = {p.name for p in pr.draw_attention_throughput(results, Path(tmp), {})}
            self.assertEqual(names, {"attention_fp16_D64_causal0.png", "attention_bwd_fp16_D64_causal0.png"})


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
            results = pr.load_results(self.folder(tmp))
        self.assertIn("this file's own tables take its own", err.getvalue())
        self.assertIn("| cublas | 650 |", pr.render_block("gemm:stage06", results))
        stage07 = pr.render_block("gemm:stage07", results)
        self.assertIn("| cublas | 680 |", stage07)
        self.assertNotIn("8192", pr.render_block("gemm:stage06", results))  # only stage 07 measured it
        self.assertEqual(pr.render_value("[cublas/fp16/M:4096/N:4096/K:4096] | .0f", results)[1], "650")
        self.assertEqual(pr.render_value("[cublas/fp16/M:4096/N:4096/K:4096@stage07_gemm.json] | .0f",
                                         results)[1], "680")
        with self.assertRaisesRegex(pr.MarkerError, "no file 'stage08.json'"):
            pr.render_value("[cublas/fp16/M:4096/N:4096/K:4096@stage08.json] | .0f", results)

    def test_figures_draw_a_peer_once_per_run(self):
        with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stderr(io.StringIO()):
            results = pr.load_results(self.folder(tmp))
        lines, series_of = pr.gemm_lines(results.of_kind_every_file("gemm"))
        self.assertEqual(lines["cublas (stage06)"], {4096: 650.0})
        self.assertEqual(lines["cublas (stage07_gemm)"], {4096: 680.0, 8192: 640.0})
        self.assertEqual(lines["stage07/gemm/v1"], {4096: 500.0})  # a series one file timed keeps its name
        self.assertNotIn("cublas", lines)
        self.assertEqual(series_of["cublas (stage06)"], "cublas")
        if HAVE_MATPLOTLIB:
            with tempfile.TemporaryDirectory() as tmp:
                names = {p.name for p in pr.draw_gemm(results, Path(tmp), {})}
            self.assertEqual(names, {"gemm_fp16.png"})

    def test_the_table_of_every_stage_gives_a_peer_a_row_per_run(self):
        with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stderr(io.StringIO()):
            results = pr.load_results(self.folder(tmp))
        table = pr.render_block("gemm", results)
        self.assertIn("| cublas (stage06) | 650 | — |", table)
        self.assertIn("| cublas (stage07_gemm) | 680 | 640 |", table)
        self.assertNotIn("| cublas |", table)


class SdpaBenchShapesTest(unittest.TestCase):
    """plots/sdpa_bench.py's names and FLOP counts, without PyTorch."""

    @classmethod
    def setUpClass(cls):
        import sdpa_bench
        cls.sb = sdpa_bench

    def test_names_match_the_stage(self):
        self.assertEqual(self.sb.bench_name("sdpa_flash", "fp16", 1, 16, 512, 16384, 128, True),
                         QueryKeyShapeTest.PEER)
        self.assertEqual(self.sb.bench_name("sdpa_flash", "fp16", 2, 16, 8192, 8192, 128, False),
                         "sdpa_flash/fp16/D:128/N:8192/causal:0")
        self.assertEqual(self.sb.bench_name("sdpa_flash", "fp16", 1, 16, 8192, 8192, 128, False),
                         "sdpa_flash/fp16/D:128/N:8192/causal:0/B:1/H:16")

    def test_grouped_query_names_and_bytes(self):
        self.assertEqual(self.sb.bench_name("sdpa_flash", "fp16", 1, 32, 1, 16384, 128, False, 8),
                         QueryKeyShapeTest.GQA.replace("stage04/v6", "sdpa_flash"))
        # KVH = H is multi-head attention: the name without KVH, as before.
        self.assertEqual(self.sb.bench_name("sdpa_flash", "fp16", 1, 16, 512, 16384, 128, True, 16),
                         QueryKeyShapeTest.PEER)
        # Q and O with H heads, K and V with KVH.
        self.assertEqual(self.sb.attention_bytes(2, 32, 1, 8192, 128, 2, 8), 2.0 * 2 * (32 * 1 + 8 * 8192) * 128 * 2)
        self.assertEqual(self.sb.attention_bytes(2, 4, 10, 20, 64, 2), 2.0 * 2 * 4 * 30 * 64 * 2)

    def test_planned_gqa_shapes(self):
        shapes = self.sb.planned_gqa_shapes([64, 128], [(1, 32, 8, 1, 16384, 128), (2, 6, 3, 7, 9, 64)])
        self.assertEqual(shapes[0], (1, 32, 8, 1, 16384, 128))
        self.assertIn((4, 32, 1, 1, 8192, 128), shapes)
        self.assertEqual(shapes[-1], (2, 6, 3, 7, 9, 64))
        self.assertEqual(len(shapes), len(set(shapes)))  # the --shape-gqa equal to a default: once
        self.assertEqual(self.sb.planned_gqa_shapes([64]), [])  # the defaults are D = 128 only
        self.assertEqual(self.sb.parse_shape_gqa("1,32,8,1,16384,128"), (1, 32, 8, 1, 16384, 128))
        for bad in ("1,32,5,1,16384,128", "1,32,8,1,16384", "1,32,0,1,2,3"):
            with self.assertRaises(self.sb.argparse.ArgumentTypeError):
                self.sb.parse_shape_gqa(bad)

    def test_causal_flops_count_visible_pairs(self):
        for nq, nk in ((512, 16384), (1, 8192), (100, 20000), (17, 5), (3, 1)):
            pairs = sum(min(max(i + nk - nq + 1, 0), nk) for i in range(nq))
            self.assertEqual(self.sb.causal_visible_pairs(nq, nk), pairs)
            self.assertEqual(self.sb.attention_flops(2, 3, nq, nk, 64, True), 4.0 * 2 * 3 * 64 * pairs)
        self.assertEqual(self.sb.attention_flops(2, 16, 8192, 8192, 128, True), 2.0 * 2 * 16 * 8192 * 8192 * 128)
        self.assertEqual(self.sb.attention_flops(1, 1, 512, 16384, 64, False), 4.0 * 512 * 16384 * 64)

    def test_packed_batches_match_the_stage(self):
        # The lengths stages/07_tuned_tma/attention/bench.cu times (common/tools/bench.cpp,
        # packed_lengths): the same splitmix64 stream, so both name and count the same batch.
        lens = self.sb.packed_lengths(16, 512, 8192)
        self.assertEqual(lens[:4], [4650, 4496, 3867, 6049])
        self.assertEqual((len(lens), sum(lens), min(lens), max(lens)), (16, 74555, 681, 7912))
        self.assertEqual(self.sb.packed_lengths(2, 8192, 8192), [8192, 8192])
        self.assertEqual(self.sb.packed_name("flash_varlen", "fp16", 16, 512, 8192, 128, 16, True),
                         "flash_varlen/fp16/D:128/H:16/packed:16x512-8192/causal:1")
        self.assertEqual(self.sb.packed_name("sdpa_flash", "fp16", 2, 8192, 8192, 64, 32, False),
                         "sdpa_flash/fp16/D:64/H:32/packed:2x8192/causal:0")
        self.assertEqual(self.sb.parse_packed("16,512,8192,128"), (16, 512, 8192, 128))
        for bad in ("16,8192,512,128", "0,1,2,64", "16,512,8192"):
            with self.assertRaises(self.sb.argparse.ArgumentTypeError):
                self.sb.parse_packed(bad)
        args = self.sb.parse_args(["--out", "x.json", "--packed-defaults", "--packed", "2,8192,8192,64"])
        self.sb.backward_defaults(args)
        self.assertEqual(args.packed, list(self.sb.DEFAULT_PACKED))  # the repeat of a default: once
        # A packed row is not an attention grid point: no N, so the plots leave it to the tables.
        self.assertEqual(pr.parse_name("sdpa_flash/fp16/D:128/H:16/packed:16x512-8192/causal:0").kind, "other")

    def test_backward_names_flops_and_grid(self):
        # The backward peers line up with stage 05's rows: the same name after the series.
        self.assertEqual(self.sb.bench_name("sdpa_flash" + self.sb.BACKWARD_SUFFIX, "fp16", 4, 32, 4096, 4096, 64,
                                            False), "sdpa_flash_bwd/fp16/D:64/N:4096/causal:0")
        for causal in (False, True):
            self.assertEqual(self.sb.attention_bwd_flops(2, 16, 8192, 8192, 128, causal),
                             2.5 * self.sb.attention_flops(2, 16, 8192, 8192, 128, causal))
        self.assertEqual(self.sb.attention_bwd_bytes(2, 4, 10, 20, 64, 2),
                         2 * self.sb.attention_bytes(2, 4, 10, 20, 64, 2))
        args = self.sb.parse_args(["--out", "x.json", "--backward"])
        self.sb.backward_defaults(args)
        self.assertEqual(args.seq, [512, 1024, 2048, 4096, 8192])
        self.assertTrue(args.no_qk and args.no_gqa)
        args = self.sb.parse_args(["--out", "x.json", "--backward", "--seq", "1024"])
        self.sb.backward_defaults(args)
        self.assertEqual(args.seq, [1024])
        args = self.sb.parse_args(["--out", "x.json"])
        self.sb.backward_defaults(args)
        self.assertEqual(args.seq, list(self.sb.DEFAULT_SEQS))
        self.assertFalse(args.no_qk or args.no_gqa)

    def test_planned_shapes(self):
        shapes = self.sb.planned_shapes([8192], [128], [(2, 16, 8192, 128)], [(1, 2, 3, 4, 64)])
        self.assertEqual(shapes[0], (2, 16, 8192, 8192, 128))  # the default rule; the --shape is the same
        self.assertIn((1, 16, 512, 16384, 128), shapes)
        self.assertIn((4, 32, 1, 8192, 128), shapes)
        self.assertEqual(shapes[-1], (1, 2, 3, 4, 64))
        self.assertEqual(len(shapes), len(set(shapes)))
        self.assertEqual(self.sb.planned_shapes([512], [64], [], [], ()), [(32, 32, 512, 512, 64)])


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
        (run,) = pr.select_runs(rows, "x.json")
        self.assertEqual((run.time_us, run.tflops, run.picked), (12.0, 2.5, "median"))

    def test_iteration_rows_without_aggregates_give_their_median_not_the_best(self):
        rows = [self.row(10.0, tflops=3.0), self.row(30.0, tflops=1.0), self.row(12.0, tflops=2.5)]
        (run,) = pr.select_runs(rows, "x.json")
        self.assertEqual((run.time_us, run.picked), (12.0, "iteration"))

    def test_time_units_and_errored_rows(self):
        rows = [self.row(1.5, time_unit="ms"),
                {"name": "stage03/v1/fp16/D:64/N:2048/causal:0", "run_type": "iteration",
                 "real_time": 0, "time_unit": "us", "error_occurred": True, "error_message": "oom"}]
        (run,) = pr.select_runs(rows, "x.json")
        self.assertAlmostEqual(run.time_us, 1500.0)

    def test_fixture_uses_medians(self):
        with tempfile.TemporaryDirectory() as tmp:
            write_results(Path(tmp))
            results = pr.load_results(Path(tmp))
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


class CommandLineTest(TempDirTest):
    def setUp(self):
        super().setUp()
        self.results = self.tmp / "results"
        self.results.mkdir()
        write_results(self.results)

    @unittest.skipUnless(HAVE_MATPLOTLIB, "matplotlib is not installed: figures not tested")
    def test_pngs_are_written(self):
        out = self.tmp / "png"
        status, log = run_main(["--results", str(self.results), "--out", str(out)])
        self.assertEqual(status, 0, log)
        expected = {f"attention_fp16_D{d}_causal{c}.png" for d in (64, 128) for c in (0, 1)}
        expected |= {"attention_memory_D64.png", "attention_memory_D128.png", "gemm_fp16.png",
                     "ladder.png", "roofline.png"}  # the GEMM rows at 4096³ make a ladder
        self.assertEqual({p.name for p in out.iterdir()}, expected)
        for path in out.iterdir():
            self.assertEqual(path.read_bytes()[:8], b"\x89PNG\r\n\x1a\n", path.name)

    def test_readme_blocks_rewritten_and_rest_preserved(self):
        readme = self.write("README.md", README)
        status, log = run_main(["--results", str(self.results), "--readme", str(readme), "--no-plots"])
        self.assertEqual(status, 0, log)
        new = readme.read_text(encoding="utf-8")

        attention = block(new, "attention:stage03/v2")
        self.assertNotIn("stale table", attention)
        for needed in ("NVIDIA H100 80GB HBM3", "CUDA 13.0", "SM 1980 MHz", "`stage03.json`",
                       "`sdpa.json`", "generated by plots/plot_results.py — do not edit by hand",
                       "**fp16, D = 128, causal**", "| stage01/naive |", "| stage03/v2 |",
                       "| sdpa_flash |", "| series \\ N | 1024 | 2048 | 4096 |"):
            self.assertIn(needed, attention)
        self.assertNotIn("stage03/v1", attention)  # the prefix picks v2 only
        self.assertEqual(attention.count("| stage03/v2 |"), 4)  # D 64/128 × two masks

        gemm = block(new, "gemm:stage06/v2")
        self.assertIn("| stage06/v2 | 170 | 232 | 294 |", gemm)
        self.assertIn("| cublas |", gemm)
        self.assertIn("4096×4096×1000", gemm)  # the non-square shape gets its own table
        self.assertNotIn("stage06/v1", gemm)

        memory = block(new, "memory")
        self.assertIn("| stage01/naive (fp16) | 2048 | 4096 | 8192 |", memory)
        self.assertIn("| stage03/v2 (fp16) | 0 | 0 | 0 |", memory)

        # Everything outside the blocks, markers included, is unchanged byte for byte.
        def outside(text):
            for name in ("attention:stage03/v2", "gemm:stage06/v2", "memory"):
                begin = text.index(f"<!-- results:{name}:begin -->") + len(f"<!-- results:{name}:begin -->")
                text = text[:begin] + "<>" + text[text.index(f"<!-- results:{name}:end -->"):]
            return text
        self.assertEqual(outside(new), outside(README))
        self.assertIn("an example inside a code fence is left alone", new)

        # A second run changes nothing.
        status, _ = run_main(["--results", str(self.results), "--readme", str(readme), "--no-plots"])
        self.assertEqual((status, readme.read_text(encoding="utf-8")), (0, new))

    def test_several_prefixes_joined_by_plus(self):
        readme = self.write("README.md", "<!-- results:attention:stage03/v1+stage03/v2:begin -->\n"
                                         "<!-- results:attention:stage03/v1+stage03/v2:end -->\n")
        status, log = run_main(["--results", str(self.results), "--readme", str(readme), "--no-plots"])
        self.assertEqual(status, 0, log)
        attention = block(readme.read_text(encoding="utf-8"), "attention:stage03/v1+stage03/v2")
        self.assertIn("| stage03/v1 |", attention)
        self.assertIn("| stage03/v2 |", attention)
        self.assertIn("| stage01/naive |", attention)

    def test_crlf_files_keep_their_line_ends(self):
        text = "Intro\r\n<!-- results:gemm:begin -->\r\n<!-- results:gemm:end -->\r\nEnd\r\n"
        readme = self.write("crlf.md", text)
        status, log = run_main(["--results", str(self.results), "--readme", str(readme), "--no-plots"])
        self.assertEqual(status, 0, log)
        new = readme.read_bytes().decode("utf-8")
        self.assertTrue(new.startswith("Intro\r\n<!-- results:gemm:begin -->\r\n"))
        self.assertTrue(new.endswith("\r\n<!-- results:gemm:end -->\r\nEnd\r\n"))
        self.assertNotIn("\n", new.replace("\r\n", ""))

    def test_unknown_block_fails_and_changes_no_file(self):
        good = self.write("good.md", README)
        bad = self.write("bad.md", "<!-- results:gemm:begin -->\n<!-- results:gemm:end -->\n"
                                   "<!-- results:attentoin:begin -->\n<!-- results:attentoin:end -->\n")
        status, log = run_main(["--results", str(self.results), "--readme", str(good),
                                "--readme", str(bad), "--no-plots"])
        self.assertNotEqual(status, 0)
        self.assertIn("unknown results block 'attentoin'", log)
        self.assertEqual(good.read_text(encoding="utf-8"), README)
        self.assertTrue(bad.read_text(encoding="utf-8").startswith("<!-- results:gemm:begin -->\n<!--"))

    def test_missing_end_marker_fails(self):
        bad = self.write("bad.md", "<!-- results:gemm:begin -->\nno end\n")
        status, log = run_main(["--results", str(self.results), "--readme", str(bad), "--no-plots"])
        self.assertNotEqual(status, 0)
        self.assertIn("no matching end marker", log)

    def test_file_without_markers_untouched(self):
        plain = self.write("plain.md", "# Nothing to do\n\nSome `<!-- results:gemm:begin -->` inline.\n")
        before = plain.stat().st_mtime_ns
        status, log = run_main(["--results", str(self.results), "--readme", str(plain), "--no-plots"])
        self.assertEqual(status, 0, log)
        self.assertEqual(plain.stat().st_mtime_ns, before)

    def test_empty_results_folder_fails(self):
        empty = self.tmp / "empty"
        empty.mkdir()
        status, log = run_main(["--results", str(empty), "--no-plots"])
        self.assertEqual(status, 1)
        self.assertIn("no *.json", log)


class FigureColorsTest(unittest.TestCase):
    def test_a_repeated_colour_gives_way_to_a_free_one(self):
        colors = {"a": "C0", "b": "C1", "c": "C0", "d": "C2"}  # c wraps onto a's colour
        shown = pr.figure_colors(["a", "b", "c", "d"], colors)
        self.assertEqual((shown["a"], shown["b"], shown["d"]), ("C0", "C1", "C2"))  # kept
        self.assertEqual(shown["c"], "C3")  # the first colour no series of the figure has or wants
        self.assertEqual(len(set(shown.values())), 4)

    def test_a_series_drawn_twice_counts_once(self):
        shown = pr.figure_colors(["a", "b", "a"], {"a": "C0", "b": "C1"})
        self.assertEqual(shown, {"a": "C0", "b": "C1"})

    def test_twenty_series_twenty_colours(self):
        names = [f"s{i}" for i in range(20)]
        shown = pr.figure_colors(names, {n: f"C{i % 10}" for i, n in enumerate(names)})
        self.assertEqual(len(set(shown.values())), 20)
        self.assertEqual([shown[n] for n in names[:10]], [f"C{i}" for i in range(10)])


class CeilingsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.results = load(FIXTURE, ceilings=True)

    def test_rows_are_read_as_ceilings_and_kept_out_of_the_other_tables(self):
        ceilings = self.results.of_kind("ceiling")
        self.assertEqual([r.plain for r in ceilings][:2], ["ceiling/ffma/fp32", "ceiling/mma_m16n8k16/fp16"])
        self.assertEqual(len(ceilings), 8)
        ffma = ceilings[0]
        self.assertEqual((ffma.picked, ffma.tflops, ffma.per_sm_clk), ("median", 63.2, 241.8121))
        int8 = self.results.find(pr.parse_name("ceiling/mma_m16n8k32/int8"))
        self.assertEqual(int8.tflops, 1288.0)  # the fixture names this counter TOPS
        self.assertEqual(self.results.find(pr.parse_name("ceiling/ex2/fp32")).gops, 4050.0)
        for kind in ("attention", "gemm", "memory"):
            self.assertNotIn("ceiling", pr.render_block(kind, self.results), kind)
        self.assertNotIn("ceiling/ffma", pr.series_colors(self.results))

    def test_ceilings_block(self):
        text = pr.render_block("ceilings", self.results)
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
            with self.assertRaisesRegex(pr.ResultsError, "takes no series prefix"):
                pr.render_block(kind + ":stage04", self.results)


class LadderTest(unittest.TestCase):
    def test_fastest_version_of_each_stage_then_peers(self):
        entries = pr.headline_entries(load(LADDER_FIXTURE))
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
                entries = pr.headline_entries(pr.load_results(folder))
        peers = {e.stage: (e.run.source, e.run.tflops) for e in entries if e.peer}
        self.assertEqual(peers, {"sdpa_cudnn": ("stage07_attention.json", 575.0),
                                 "sdpa_flash": ("sdpa.json", 330.0),
                                 "sdpa_cudnn_bwd": ("stage05.json", 510.0)})
        stage04 = next(e for e in entries if e.stage == "stage04")
        self.assertEqual((stage04.run.source, stage04.run.tflops), ("stage04.json", 360.0))

    def test_table_without_ceilings(self):
        text = pr.render_block("ladder", load(LADDER_FIXTURE))
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
        text = pr.render_block("ladder", load(LADDER_FIXTURE, ceilings=True))
        self.assertIn("| TFLOPS | % of peak | % of instruction ceiling |", text)
        self.assertIn("| stage04 | v2 | fp16 | attention D = 128, N = 8192, non-causal | `stage04.json` | 360 | 33.6% "
                      "| 55.2% |", text)
        self.assertIn("| stage06 | v1 | fp32 | GEMM M = N = K = 4096 | `stage06.json` | 45.0 | 67.3% | 71.2% |", text)
        self.assertIn("`ceiling/mma_m16n8k32/int8` = 1288", text)

    def test_no_peak_in_the_context_gives_no_percent(self):
        results = load(FIXTURE)  # no peaks in these contexts: % of peak is unknown, not invented
        text = pr.render_block("ladder", results)
        self.assertIn("| stage06 | v2 | fp16 | GEMM M = N = K = 4096 | `stage06.json` | 294 | — |", text)


class CliffTest(unittest.TestCase):
    @staticmethod
    def results(rates: dict[str, float]):
        rows = [{"name": name, "real_time": 1.0, "time_unit": "ms", "TFLOPS": tflops}
                for name, tflops in rates.items()]
        return pr.Results(contexts={"stage06.json": {}}, runs=pr.select_runs(rows, "stage06.json"))

    def test_aligned_neighbour(self):
        self.assertEqual(pr.aligned_neighbour((4096, 4096, 1000)), (4096, 4096, 1024))
        self.assertEqual(pr.aligned_neighbour((1000, 1000, 1000)), (1024, 1024, 1024))
        self.assertEqual(pr.aligned_neighbour((17, 17, 17)), (128, 128, 128))

    def test_each_unaligned_shape_against_its_neighbour(self):
        text = pr.render_block("cliff:stage06", self.results({
            "stage06/v10/int8/M:4096/N:4096/K:1000": 360.0, "stage06/v10/int8/M:4096/N:4096/K:1024": 400.0,
            "stage06/v8/int8/M:4096/N:4096/K:1000": 53.0, "stage06/v8/int8/M:4096/N:4096/K:1024": 300.0,
            "stage06/v9/fp16/M:1000/N:1000/K:1000": 55.0,  # no 1024³ for v9: no row
            "stage06/v9/fp16/M:4096/N:4096/K:4096": 378.0}))
        self.assertIn("| int8 | stage06/v8 | 4096×4096×1000 | 4096×4096×1024 | 53.0 | 300 | 0.18× | **no** |", text)
        self.assertIn("| int8 | stage06/v10 | 4096×4096×1000 | 4096×4096×1024 | 360 | 400 | 0.90× | yes |", text)
        self.assertNotIn("stage06/v9", text)

    def test_nothing_to_compare_says_so(self):
        text = pr.render_block("cliff", self.results({"stage06/v9/fp16/M:4096/N:4096/K:1000": 288.0}))
        self.assertIn("No unaligned shape has its aligned neighbour measured", text)


class TunerTest(unittest.TestCase):
    @staticmethod
    def results(rates: dict[str, tuple[float, int]]):
        rows = [{"name": name, "real_time": 1.0, "time_unit": "ms", "TFLOPS": tflops, "picked": picked}
                for name, (tflops, picked) in rates.items()]
        return pr.Results(contexts={"stage04.json": {}}, runs=pr.select_runs(rows, "stage04.json"))

    def test_candidates_are_their_own_kind(self):
        name = pr.parse_name("stage04/v5/fp16/D:128/N:8192/causal:0/tile:2")
        self.assertEqual(name.kind, "candidate")
        self.assertEqual(pr.parse_name("stage04/v5/fp16/D:128/N:8192/causal:0").kind, "attention")

    def test_chosen_against_the_fastest(self):
        text = pr.render_block("tuner:stage04/v5", self.results({
            "stage04/v5/fp16/D:64/N:512/causal:1/tile:0": (100.0, 0),
            "stage04/v5/fp16/D:64/N:512/causal:1/tile:3": (90.0, 1),  # chosen, 10% behind: bold
            "stage04/v5/fp16/D:64/N:8192/causal:1/tile:0": (250.0, 0),
            "stage04/v5/fp16/D:64/N:8192/causal:1/tile:3": (260.0, 1),  # chosen and fastest
            "stage04/v5/fp16/D:64/N:8192/causal:1": (259.0, 0)}))  # v5 itself: not a candidate
        self.assertIn("| series | dtype | D | causal | N = 512 | N = 8192 | worst |", text)
        self.assertIn("| stage04/v5 | fp16 | 64 | 1 | **0.900 (tile 3; best 0)** | 1.000 (tile 3) | 0.900 |", text)

    def test_shapes_off_the_grid_one_row_each(self):
        text = pr.render_block("tuner:stage04/v6", self.results({
            "stage04/v6/fp16/D:128/B:1/H:16/Nq:512/Nk:16384/causal:0/tile:1/splits:2": (330.0, 1),
            "stage04/v6/fp16/D:128/B:1/H:16/Nq:512/Nk:16384/causal:0/tile:1/splits:4": (345.0, 0)}))
        self.assertIn("| series | dtype | shape | chosen | fastest | candidates | chosen / fastest |", text)
        self.assertIn("| stage04/v6 | fp16 | D 128, B 1, H 16, Nq 512, Nk 16384, causal 0 | tile 1, splits 2 | "
                      "tile 1, splits 4 | 2 | **0.957** |", text)

    def test_a_point_without_one_choice_is_left_out(self):
        text = pr.render_block("tuner", self.results({
            "stage04/v5/bf16/D:128/N:1024/causal:0/tile:0": (100.0, 0),
            "stage04/v5/bf16/D:128/N:1024/causal:0/tile:1": (110.0, 0)}))
        self.assertIn("No matching results", text)


class RooflineTest(unittest.TestCase):
    def test_bound_is_the_lower_roof(self):
        compute = pr.Roof("fp32 FFMA peak", 66.9, "`peak_fp32_tflops`", False, "fp32")
        memory = pr.Roof("DRAM peak", 3352.0, "`peak_dram_gbps`", False)
        self.assertEqual(pr.bound_by(10.0, compute, memory), (33.52, "DRAM peak"))
        self.assertEqual(pr.bound_by(100.0, compute, memory), (66.9, "fp32 FFMA peak"))
        self.assertEqual(pr.bound_by(10.0, compute, None), (66.9, "fp32 FFMA peak (no bandwidth known)"))
        self.assertEqual(pr.bound_by(10.0, None, None), (None, "—"))

    def test_table_without_bandwidth(self):
        text = pr.render_block("roofline", load(LADDER_FIXTURE))
        self.assertIn("_No DRAM bandwidth in these results", text)
        self.assertIn("| fp16 tensor-core peak | 1071 TFLOPS (`peak_fp16_tflops`) | — | — |", text)
        self.assertIn("| stage01 v1 | fp32 | attention D = 128, N = 8192, non-causal | 32.0 | 0.90 "
                      "| fp32 FFMA peak (no bandwidth known): 66.9 | 1.3% |", text)
        self.assertIn("| stage04 v2 | fp16 | attention D = 128, N = 8192, non-causal | 4080 | 360 |", text)
        self.assertNotIn("measured", text)

    def test_table_with_ceilings(self):
        text = pr.render_block("roofline", load(LADDER_FIXTURE, ceilings=True))
        self.assertIn("| fp16 tensor-core peak | 1071 TFLOPS (`peak_fp16_tflops`) | 3352 GB/s (`peak_dram_gbps`) "
                      "| 319 |", text)
        self.assertIn("| mma.sync m16n8k16 fp16, measured | 652 TFLOPS (`ceiling/mma_m16n8k16/fp16`) "
                      "| 2950 GB/s (`ceiling/dram_copy/fp32`) | 221 |", text)
        self.assertIn("| cublas (peer) | fp16 | GEMM M = N = K = 4096 | 1365 | 660 | fp16 tensor-core peak: 1071 "
                      "| 61.7% | mma.sync m16n8k16 fp16, measured: 652 | 101.2% |", text)
        self.assertNotIn("_No DRAM bandwidth", text)


class ValueMarkerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.results = load(LADDER_FIXTURE, ceilings=True)

    def value(self, body: str) -> str:
        return pr.render_value(body, self.results)[1]

    def check_values(self, cases):
        for body, expected in cases:
            with self.subTest(body=body):
                self.assertEqual(self.value(body), expected)

    def test_fields(self):
        v2 = "[stage04/v2/fp16/D:128/N:8192/causal:0]"
        self.check_values([
            (f"{v2} | .1f", "360.0"),
            (f"{v2}.tflops | .1f", "360.0"),
            (f"{v2}.ms | .4f", "3.0542"),
            (f"{v2}.us | .0f", "3054"),
            (f"{v2}.gbps | .2f", "88.24"),
            ("[stage01/v1/fp32/D:128/N:8192/causal:0].extra_mib | .0f", "8192"),
            ("[ceiling/mma_m16n8k16/fp16].per_sm_clk | .0f", "2495"),
            ("[ceiling/ex2/fp32].gops | .0f", "4050"),
            ("[cublaslt/int8/M:4096/N:4096/K:4096] | .0f", "1300"),
        ])

    def test_arithmetic_and_context(self):
        v1, v2 = "[stage04/v1/fp16/D:128/N:8192/causal:0]", "[stage04/v2/fp16/D:128/N:8192/causal:0]"
        self.check_values([
            (f"{v2}/{v1} | .3f", "2.118"),  # no spaces: '/' in names is no division
            (f"100 * {v2} / {{peak_fp16_tflops}} | .1f", "33.6"),
            (f"{v2} / {{peak_fp16_tflops}} | .0%", "34%"),
            (f"-({v2} - {v1}) / 2 + 1e1 | .1f", "-85.0"),
            ("{sm_clock_mhz} * {num_sms} | .0f", "261360"),
            ("2 + 3 * 4 | .0f", "14"),
            (f"max({v1}, {v2}) / {v1} | .3f", "2.118"),
            (f"min({v1}, {v2}, 1e4) | .0f", "170"),
            ("max(1, -(2 - 5)) | .0f", "3"),
            # The same benchmark with its params in another order, or with its run options.
            ("[stage04/v2/fp16/causal:0/N:8192/D:128] | .0f", "360"),
            ("[stage04/v2/fp16/D:128/N:8192/causal:0/repeats:5/manual_time] | .0f", "360"),
        ])

    def test_only_arithmetic_is_evaluated(self):
        for body in ("__import__('os').system('true') | .0f", "2 ** 3 | .0f", "7 // 2 | .0f", "7 % 2 | .0f",
                     "abs(-1) | .0f", "'7' | s", "1 if 1 else 2 | .0f", "True | .0f", "+1 | .0f",
                     "[cublas/fp16/M:4096/N:4096/K:4096] .ms | .0f", "(1, 2) | .0f", "[1, 2] | .0f",
                     "_term0 | .0f", "x | .0f", "1; 2 | .0f", "[a] [b] | .0f", "{1: 2} | .0f",
                     "max(1) | .0f", "max() | .0f", "max(*[1, 2]) | .0f", "max(1, 2, key=1) | .0f",
                     "sum(1, 2) | .0f", "math.floor(1.5) | .0f"):
            with self.assertRaises(pr.MarkerError, msg=body):
                self.value(body)

    def test_errors_say_what_is_wrong(self):
        cases = {
            "[stage04/v9/fp16/D:128/N:8192/causal:0] | .0f":
                re.escape("no benchmark [stage04/v9/fp16/D:128/N:8192/causal:0] in ") + ".*did you mean "
                + re.escape("[stage04/v2/fp16/D:128/N:8192/causal:0]"),
            "[stage04/v2/fp16/D:128/N:8192/causal:0].gflops | .0f": "unknown field .gflops",
            "[stage04/v2/fp16/D:128/N:8192/causal:0].per_sm_clk | .0f": "has no per_sm_clk counter",
            "[cublas/fp16/M:4096/N:4096/K:4096].extra_mib | .0f": "has no extra_bytes counter",
            "{peak_fp64_tflops} | .0f": r"no context key \{peak_fp64_tflops\}",
            "{gpu_name} | .0f": "is 'fixture GPU', not a number",
            "1 / (2 - 2) | .0f": r"division by zero: 2 - 2 is 0",
            "[stage04/v2/fp16/D:128/N:8192/causal:0] | ": "no format",
            "[stage04/v2/fp16/D:128/N:8192/causal:0]": "no '\| FORMAT'",
            " | .0f": "no expression",
            "1 | .0d": "format '.0d' does not apply",
            "[] | .0f": "an empty name",
        }
        for body, pattern in cases.items():
            with self.assertRaisesRegex(pr.MarkerError, pattern, msg=body):
                self.value(body)

    def test_escaped_pipe_in_a_table_cell(self):
        self.assertEqual(self.value(r"[stage04/v2/fp16/D:128/N:8192/causal:0] \| .0f"), "360")

    def test_context_keys_must_agree(self):
        with tempfile.TemporaryDirectory() as tmp:
            folder = write_results(Path(tmp) / "r", LADDER_FIXTURE)
            doc = json.loads((folder / "stage02.json").read_text(encoding="utf-8"))
            doc["context"]["sm_clock_mhz"] = "1755"
            (folder / "stage02.json").write_text(json.dumps(doc), encoding="utf-8")
            results = pr.load_results(folder)
        with self.assertRaisesRegex(pr.MarkerError, "sm_clock_mhz.*differs.*stage02.json says 1755"):
            pr.render_value("{sm_clock_mhz} | .0f", results)


class MarkerFileTest(TempDirTest):
    """Value markers in files, through main(): what changes, what stays, what fails."""

    def setUp(self):
        super().setUp()
        self.results = write_results(self.tmp / "results", LADDER_FIXTURE, ceilings=True)

    def main(self, *args: str) -> tuple[int, str]:
        return run_main(["--results", str(self.results), "--no-plots", *args])

    V2 = "[stage04/v2/fp16/D:128/N:8192/causal:0]"

    def test_markdown_markers_rewritten_examples_left_alone(self):
        text = (f"v2 reaches <!-- value: {self.V2} | .0f -->1<!-- /value --> TFLOPS, "
                f"<!-- value: {self.V2} / [stage04/v1/fp16/D:128/N:8192/causal:0] | .2f --><!-- /value -->× v1.\n"
                f"| v2 | <!-- value: {self.V2} \\| .1f -->9<!-- /value --> |\n"
                f"Write `<!-- value: [NAME] | .1f -->364<!-- /value -->` for a number.\n"
                "```markdown\n"
                "<!-- value: [stage99/v1/fp16/D:1/N:1/causal:0] | .0f -->364<!-- /value -->\n"
                "```\n")
        doc = self.write("doc.md", text)
        status, log = self.main("--readme", str(doc))
        self.assertEqual(status, 0, log)
        self.assertEqual(doc.read_text(encoding="utf-8"), text.replace("-->1<!--", "-->360<!--")
                         .replace("| .2f --><!--", "| .2f -->2.12<!--").replace("-->9<!--", "-->360.0<!--"))

    def test_sources_with_crlf_keep_every_other_byte(self):
        text = ("// v2_kernel.cuh\r\n"
                f"// measured: <!-- value: {self.V2} | .0f -->300<!-- /value --> TFLOPS (stage04.json)\r\n"
                f"// `<!-- value: {self.V2}.ms | .2f -->0<!-- /value -->` ms: backticks mean nothing here\r\n"
                "int x;  \r\n")
        src = self.write("v2_kernel.cuh", text)
        status, log = self.main("--readme", str(src))
        self.assertEqual(status, 0, log)
        self.assertEqual(src.read_bytes().decode("utf-8"),
                         text.replace("-->300<!--", "-->360<!--").replace("-->0<!--", "-->3.05<!--"))

    def test_bad_markers_fail_with_file_line_and_marker_and_change_nothing(self):
        good = self.write("good.md", f"<!-- value: {self.V2} | .0f -->1<!-- /value -->\n")
        bad_text = ("fine line\n"
                    "<!-- value: [stage04/v7/fp16/D:128/N:8192/causal:0] | .0f -->1<!-- /value -->\n"
                    f"<!-- value: {self.V2}.speed | .0f -->1<!-- /value -->\n"
                    "<!-- value: {peak_fp8_tflops} | .0f -->1<!-- /value -->\n"
                    "<!-- value: 1 / 0 | .0f -->1<!-- /value -->\n"
                    f"<!-- value: {self.V2} | .0f -->1 and no end\n"
                    "stray <!-- /value --> closer\n"
                    "<!-- value: 1 | .0f no end of the comment\n"
                    f"<!-- value: {self.V2} .0f -->1<!-- /value -->\n")
        bad = self.write("bad.md", bad_text)
        status, log = self.main("--readme", str(good), "--readme", str(bad))
        self.assertEqual(status, 1)
        for line, marker, reason in (
                (2, "<!-- value: [stage04/v7/fp16/D:128/N:8192/causal:0] | .0f -->", "no benchmark"),
                (3, f"<!-- value: {self.V2}.speed | .0f -->", "unknown field .speed"),
                (4, "<!-- value: {peak_fp8_tflops} | .0f -->", "no context key {peak_fp8_tflops}"),
                (5, "<!-- value: 1 / 0 | .0f -->", "division by zero"),
                (6, f"<!-- value: {self.V2} | .0f -->", "no '<!-- /value -->' after it"),
                (7, "'<!-- /value -->'", "closes no"),
                (8, "'<!-- value: 1 | .0f no end of the comment'", "no '-->' on its line"),
                (9, f"<!-- value: {self.V2} .0f -->", "no '| FORMAT'")):
            self.assertRegex(log, re.escape(f"error: {bad}:{line}: {marker}") + ".*" + re.escape(reason))
        self.assertEqual(bad.read_text(encoding="utf-8"), bad_text)
        self.assertEqual(good.read_text(encoding="utf-8"), f"<!-- value: {self.V2} | .0f -->1<!-- /value -->\n")

    def test_check_lists_stale_writes_nothing_draws_nothing(self):
        text = ("# Doc\n\n"
                f"v2 is <!-- value: {self.V2} / [stage04/v1/fp16/D:128/N:8192/causal:0] | .2f -->"
                "1.21<!-- /value -->×.\n"
                "<!-- results:ladder:begin -->\nold\n<!-- results:ladder:end -->\n")
        doc = self.write("doc.md", text)
        before = doc.stat().st_mtime_ns
        out = self.tmp / "png"
        status, log = run_main(["--results", str(self.results), "--readme", str(doc), "--check", "--out", str(out)])
        self.assertEqual(status, 1, log)
        self.assertIn(f"stale: {doc}:3: value {self.V2} / [stage04/v1/fp16/D:128/N:8192/causal:0] says 1.21, "
                      "the results give 2.12\n", log)
        self.assertIn(f"stale: {doc}:4: block results:ladder differs from what the results give", log)
        self.assertEqual((doc.read_text(encoding="utf-8"), doc.stat().st_mtime_ns), (text, before))
        self.assertFalse(out.exists())

        status, log = self.main("--readme", str(doc))
        self.assertEqual(status, 0, log)
        status, log = self.main("--readme", str(doc), "--check")
        self.assertEqual(status, 0, log)
        self.assertIn(f"every generated table and number matches {self.results}", log)


class RepoDocsTest(unittest.TestCase):
    """--repo-docs over a small tree laid out like the repository."""

    MARKER = "<!-- value: [stage04/v2/fp16/D:128/N:8192/causal:0] | .0f -->0<!-- /value -->"
    READ = ["README.md", "docs/04_flash_fwd.md", "docs/extra/notes.md", "stages/04_flash_fwd/README.md",
            "stages/04_flash_fwd/v1_mma.cuh", "stages/04_flash_fwd/flash_fwd.cu", "stages/04_flash_fwd/flash_fwd.h",
            "stages/07_tuned/gemm/README.md", "stages/07_tuned/gemm/v1.cuh", "ceilings/ceilings.cu",
            "ceilings/README.md", "plots/README.md", "results/some-gpu/README.md", "common/lib/flops.h",
            "common/device/sm80.cuh", "common/lib/timer.cpp"]
    NOT_READ = ["build/README.md", "build/release/docs/x.md", "stages/04_flash_fwd/build/v1.cuh", ".old/docs/a.md",
                "docs/.old/a.md", ".deps/common/x.h", ".venv/README.md", "common/.venv/x.h",
                "stages/04_flash_fwd/bench.py", "docs/notes.txt", "results/some-gpu/logs/README.md", "LICENSE.md",
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

            listed = {p.relative_to(root).as_posix() for p in pr.repo_doc_files(root, results)}
            self.assertEqual(listed, set(self.READ) | {"docs/plain.md"})
            every = {p.relative_to(root).as_posix() for p in pr.repo_doc_files(root)}
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
        fig, ax = pr._new_figure()
        pr._log2_axis(ax, [1000, 1024, 2048, 4097, 8192], "M = N = K")
        self.assertEqual([t.get_text() for t in ax.get_xticklabels()], ["1024", "2048", "4096", "8192"])
        self.assertEqual(list(ax.get_xticks(minor=True)), [1000, 4097])
        self.assertEqual([t.get_text() for t in ax.get_xticklabels(minor=True)], ["", ""])
        self.assertEqual(ax.get_xscale(), "log")
        self.assertIn("minor ticks: 1000, 4097", ax.get_xlabel())


if __name__ == "__main__":
    unittest.main(verbosity=2)
