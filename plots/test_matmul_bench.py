#!/usr/bin/env python3
"""CPU tests of plots/matmul_bench.py: its shapes and names are stage 06's, bad flags are refused,
and without PyTorch's CUDA it says so and exits 0."""

from __future__ import annotations

import io
import re
import sys
import unittest
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import matmul_bench  # noqa: E402


def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


class MatmulBenchTest(unittest.TestCase):
    def test_shapes_are_stage06s(self):
        """The default shapes are kShapes of stages/06_tensorcore_gemm/bench.cu, in its order."""
        source = (HERE.parent / "stages" / "06_tensorcore_gemm" / "bench.cu").read_text(encoding="utf-8")
        block = re.search(r"kShapes\[\]\s*=\s*\{(.*?)\};", source, re.S).group(1)
        shapes = tuple(tuple(int(x) for x in t) for t in re.findall(r"\{(\d+),\s*(\d+),\s*(\d+)\}", block))
        self.assertEqual(shapes, matmul_bench.DEFAULT_SHAPES)

    def test_names_follow_the_gemm_benchmarks(self):
        self.assertEqual(matmul_bench.bench_name("fp16", 4096, 4096, 1000), "torch_matmul/fp16/M:4096/N:4096/K:1000")
        self.assertEqual(matmul_bench.bench_name("int8", 8, 16, 32), "torch_int_mm/int8/M:8/N:16/K:32")

    def test_counts(self):
        self.assertEqual(matmul_bench.gemm_flops(2, 3, 4), 48.0)
        self.assertEqual(matmul_bench.gemm_bytes(2, 3, 4, 1, 4), 1 * (8 + 12) + 4 * 6)

    def test_bad_flags_are_refused(self):
        for argv in (["--out", "x.json", "--shape", "1,2"], ["--out", "x.json", "--shape", "0,2,2"],
                     ["--out", "x.json", "--dtype", "fp8"], ["--shape", "2,2,2"]):
            with self.subTest(argv=argv), redirect_stderr(io.StringIO()), self.assertRaises(SystemExit) as e:
                matmul_bench.main(argv)
            self.assertEqual(e.exception.code, 2)
        with redirect_stderr(io.StringIO()) as err:
            self.assertEqual(matmul_bench.main(["--out", "x.json", "--runs", "0"]), 2)
        self.assertIn("--runs", err.getvalue())

    @unittest.skipIf(cuda_available(), "PyTorch with CUDA is here: the skip path is not taken")
    def test_without_cuda_it_says_so_and_writes_nothing(self):
        out = HERE / "never_written.json"
        with redirect_stdout(io.StringIO()) as printed:
            self.assertEqual(matmul_bench.main(["--out", str(out)]), 0)
        self.assertIn(matmul_bench.SKIP_LINE, printed.getvalue())
        self.assertFalse(out.exists())


if __name__ == "__main__":
    unittest.main()
