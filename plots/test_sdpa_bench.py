#!/usr/bin/env python3
"""CPU tests of plots/sdpa_bench.py, without PyTorch: its names are the stages' names (so plot_results.py
puts SDPA beside them), its FLOP and byte counts, the shapes it plans.

    python3 plots/test_sdpa_bench.py          (plots/test_plot_results.py runs it with the other plot tests)
"""

from __future__ import annotations

import contextlib
import io
import sys
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from flashstages_plots.results import parse_name  # noqa: E402

# Stage 04's names for a short query against long keys, and for grouped-query heads (KVH).
PEER = "sdpa_flash/fp16/D:128/B:1/H:16/Nq:512/Nk:16384/causal:1"
GQA = "stage04/v6/fp16/D:128/B:1/H:32/KVH:8/Nq:1/Nk:16384/causal:0"


class SdpaBenchShapesTest(unittest.TestCase):
    """plots/sdpa_bench.py's names and FLOP counts, without PyTorch."""

    @classmethod
    def setUpClass(cls):
        import sdpa_bench
        cls.sb = sdpa_bench

    def test_names_match_the_stage(self):
        self.assertEqual(self.sb.bench_name("sdpa_flash", "fp16", 1, 16, 512, 16384, 128, True),
                         PEER)
        self.assertEqual(self.sb.bench_name("sdpa_flash", "fp16", 2, 16, 8192, 8192, 128, False),
                         "sdpa_flash/fp16/D:128/N:8192/causal:0")
        self.assertEqual(self.sb.bench_name("sdpa_flash", "fp16", 1, 16, 8192, 8192, 128, False),
                         "sdpa_flash/fp16/D:128/N:8192/causal:0/B:1/H:16")

    def test_grouped_query_names_and_bytes(self):
        self.assertEqual(self.sb.bench_name("sdpa_flash", "fp16", 1, 32, 1, 16384, 128, False, 8),
                         GQA.replace("stage04/v6", "sdpa_flash"))
        # KVH = H is multi-head attention: the name without KVH, as before.
        self.assertEqual(self.sb.bench_name("sdpa_flash", "fp16", 1, 16, 512, 16384, 128, True, 16),
                         PEER)
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
        self.assertEqual(parse_name("sdpa_flash/fp16/D:128/H:16/packed:16x512-8192/causal:0").kind, "other")

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
        self.assertTrue(args.no_qk)
        self.assertFalse(args.no_gqa)  # the backward's own grouped shapes (test_backward_grouped_shapes)
        args = self.sb.parse_args(["--out", "x.json", "--backward", "--seq", "1024"])
        self.sb.backward_defaults(args)
        self.assertEqual(args.seq, [1024])
        args = self.sb.parse_args(["--out", "x.json"])
        self.sb.backward_defaults(args)
        self.assertEqual(args.seq, list(self.sb.DEFAULT_SEQS))
        self.assertFalse(args.no_qk or args.no_gqa)

    def test_no_grid_keeps_the_other_shapes(self):
        # --no-grid: no square point, the short-query and grouped shapes as without it.
        args = self.sb.parse_args(["--out", "x.json", "--no-grid"])
        self.sb.backward_defaults(args)
        self.assertEqual(args.seq, [])
        points = self.sb.planned_points(args)
        self.assertTrue(points)
        self.assertTrue(all(nq != nk or kvh != h for b, h, kvh, nq, nk, d in points))
        full = self.sb.parse_args(["--out", "x.json"])
        self.sb.backward_defaults(full)
        self.assertEqual(points, [p for p in self.sb.planned_points(full) if p[3] != p[4] or p[1] != p[2]])
        # With --seq it is a contradiction, refused before PyTorch is looked for.
        with contextlib.redirect_stderr(io.StringIO()) as err:
            self.assertEqual(self.sb.main(["--out", "x.json", "--no-grid", "--seq", "512"]), 2)
        self.assertIn("--no-grid", err.getvalue())

    def test_backward_grouped_shapes(self):
        # Grouped K/V on the grid's rule (B·N = 16384, H = 2048 / D) at N = 2048 and 8192: KVH = H / 4, then 1.
        self.assertEqual(self.sb.backward_gqa_shapes([512, 1024, 2048, 4096, 8192], [64, 128]),
                         [(8, 32, 8, 2048, 2048, 64), (8, 32, 1, 2048, 2048, 64),
                          (2, 32, 8, 8192, 8192, 64), (2, 32, 1, 8192, 8192, 64),
                          (8, 16, 4, 2048, 2048, 128), (8, 16, 1, 2048, 2048, 128),
                          (2, 16, 4, 8192, 8192, 128), (2, 16, 1, 8192, 8192, 128)])
        self.assertEqual(self.sb.backward_gqa_shapes([4096], [128]), [])  # only where --seq has 2048 or 8192
        # D = 1024: H = 2, H / 4 = 0 heads; multi-query alone.
        self.assertEqual(self.sb.backward_gqa_shapes([8192], [1024]), [(2, 2, 1, 8192, 8192, 1024)])

        def plan(*flags):
            args = self.sb.parse_args(["--out", "x.json", *flags])
            self.sb.backward_defaults(args)
            return self.sb.planned_points(args)

        # --backward: the 10 grid shapes of stages/05_flash_bwd/bench.cu and
        # stages/07_tuned_tma/attention_bwd/bench.cu (K/V with all H heads), then the 8 grouped shapes.
        points = plan("--backward")
        grid = [(max(1, 16384 // n), 2048 // d, 2048 // d, n, n, d)
                for d in (64, 128) for n in (512, 1024, 2048, 4096, 8192)]
        self.assertEqual(points[:10], grid)
        self.assertEqual(points[10:], self.sb.backward_gqa_shapes(self.sb.BACKWARD_SEQS, [64, 128]))
        self.assertEqual(plan("--backward", "--no-gqa"), grid)  # stage 05's peers: no grouped shape
        self.assertEqual(plan("--backward", "--seq", "8192", "--dim", "128", "--shape-gqa", "1,16,2,100,300,128"),
                         [(2, 16, 16, 8192, 8192, 128), (2, 16, 4, 8192, 8192, 128), (2, 16, 1, 8192, 8192, 128),
                          (1, 16, 2, 100, 300, 128)])
        # A --shape-gqa equal to a grouped default is timed once; short queries only when asked for.
        self.assertEqual(plan("--backward", "--seq", "8192", "--dim", "128", "--shape-gqa", "2,16,4,8192,8192,128",
                              "--shape-qk", "1,16,512,16384,128"),
                         [(2, 16, 16, 8192, 8192, 128), (1, 16, 16, 512, 16384, 128), (2, 16, 4, 8192, 8192, 128),
                          (2, 16, 1, 8192, 8192, 128)])
        # The forward's plan keeps its own grouped (decoding) shapes.
        forward = plan("--seq", "8192", "--dim", "128")
        self.assertIn((1, 32, 8, 1, 16384, 128), forward)
        self.assertNotIn((2, 16, 4, 8192, 8192, 128), forward)

        # Named as common/tools/bench.cpp's point_name names a grouped shape, so a rung's row
        # (stage07/attention_bwd/v1/…) and its peer's differ only in the series.
        name = self.sb.bench_name("sdpa_cudnn" + self.sb.BACKWARD_SUFFIX, "fp16", 2, 16, 8192, 8192, 128, True, 4)
        self.assertEqual(name, "sdpa_cudnn_bwd/fp16/D:128/B:2/H:16/KVH:4/Nq:8192/Nk:8192/causal:1")
        # Q, O, dO read and dQ written with H heads; K, V read and dK, dV written with KVH.
        self.assertEqual(self.sb.attention_bwd_bytes(2, 16, 8192, 8192, 128, 2, 4),
                         2.0 * (4 * 16 + 4 * 4) * 8192 * 128 * 2)
        # The FLOPs count the query heads: grouping shares K and V, not the work.
        self.assertEqual(self.sb.attention_bwd_flops(2, 16, 8192, 8192, 128, False),
                         2.5 * 4.0 * 2 * 16 * 8192 * 8192 * 128)

    def test_planned_shapes(self):
        shapes = self.sb.planned_shapes([8192], [128], [(2, 16, 8192, 128)], [(1, 2, 3, 4, 64)])
        self.assertEqual(shapes[0], (2, 16, 8192, 8192, 128))  # the default rule; the --shape is the same
        self.assertIn((1, 16, 512, 16384, 128), shapes)
        self.assertIn((4, 32, 1, 8192, 128), shapes)
        self.assertEqual(shapes[-1], (1, 2, 3, 4, 64))
        self.assertEqual(len(shapes), len(set(shapes)))
        self.assertEqual(self.sb.planned_shapes([512], [64], [], [], ()), [(32, 32, 512, 512, 64)])


class CudnnFp8BenchTest(unittest.TestCase):
    """plots/cudnn_fp8_bench.py (cuDNN's fp8 attention, v9's peer), without PyTorch: its rows are named
    as v9's, its flags are checked, and without a GPU it skips."""

    @classmethod
    def setUpClass(cls):
        import cudnn_fp8_bench
        cls.fb = cudnn_fp8_bench

    def test_rows_take_v9s_names(self):
        b, h = self.fb.sb.default_batch_heads(8192, 128)
        name = self.fb.sb.bench_name(self.fb.SERIES, self.fb.DTYPE, b, h, 8192, 8192, 128, False)
        self.assertEqual(name, "sdpa_cudnn/fp8_e4m3/D:128/N:8192/causal:0")
        v9 = parse_name("stage07/attention/v9/fp8_e4m3/D:128/N:8192/causal:0")
        peer = parse_name(name)
        self.assertEqual((peer.dtype, peer.params), (v9.dtype, v9.params))

    def test_a_point_cudnn_builds_no_graph_for_is_refused_not_failed(self):
        # cuDNN 9's fp8 forward takes no causal mask on Hopper: the graph build raises, with either O
        # dtype; the point then has no peer (Refused, with cuDNN's first line), not a failed run.
        def refuse(*_args):
            raise RuntimeError("sdpa fp8 forward operation is only supported on Blackwell architecture and newer.\n"
                               "more detail")
        saved = self.fb.build_graph
        self.fb.build_graph = refuse
        try:
            for o_dtype in ("auto", "bf16"):
                with self.subTest(o_dtype=o_dtype), self.assertRaises(self.fb.Refused) as refused:
                    self.fb.build_any(None, None, 2, 16, 8192, 128, True, o_dtype)
                self.assertEqual(str(refused.exception),
                                 "sdpa fp8 forward operation is only supported on Blackwell architecture and newer.")
        finally:
            self.fb.build_graph = saved

    def test_flags(self):
        args = self.fb.parse_args(["--out", "x.json"])
        self.assertEqual((args.dim, args.seq, args.causal, args.o_dtype),
                         ([128], list(self.fb.sb.DEFAULT_SEQS), [0, 1], "auto"))
        for bad in (["--dim", "64"], ["--o-dtype", "fp16"], ["--seq", "0"], ["--runs", "0"]):
            with self.subTest(bad=bad), contextlib.redirect_stderr(io.StringIO()):
                with self.assertRaises(SystemExit) as stop:
                    self.fb.parse_args(["--out", "x.json", *bad])
                self.assertEqual(stop.exception.code, 2)

    def test_skips_without_a_gpu(self):
        try:
            import torch
            if torch.cuda.is_available():
                self.skipTest("a GPU is here: the script would time it")
        except ImportError:
            pass
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.assertEqual(self.fb.main(["--out", "x.json"]), 0)
        self.assertIn("skipped", out.getvalue())


if __name__ == "__main__":
    unittest.main(verbosity=2)
