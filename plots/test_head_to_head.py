#!/usr/bin/env python3
"""CPU tests of plots/head_to_head.py: bad flags, unknown kernels, an entry of the other pass (a backward
entry without --backward, a forward one with it), what a kernel does not take and --train beside --kernel
or --backward are refused before any GPU is looked for, a training step counts both passes' FLOPs, backward
entries are named as their stages' benchmarks name them, grouped K/V shapes (--shape-gqa) are parsed,
refused where KVH does not divide H, named, counted and passed to SDPA as sdpa_bench.py does, and without
PyTorch's CUDA it says so and writes nothing.

    python3 plots/test_head_to_head.py build/<preset>/common/libflashstages.so
"""

from __future__ import annotations

import importlib
import importlib.util
import io
import os
import sys
import types
import unittest
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import head_to_head  # noqa: E402


def cuda_available() -> bool:
    """Whether PyTorch is here and sees a GPU (then the skip path below is not the one taken)."""
    if importlib.util.find_spec("torch") is None:
        return False
    return importlib.import_module("torch").cuda.is_available()


class HeadToHeadTest(unittest.TestCase):
    def run_main(self, argv):
        with redirect_stdout(io.StringIO()) as out, redirect_stderr(io.StringIO()) as err:
            try:
                code = head_to_head.main(argv)
            except SystemExit as e:
                code = e.code
        return code, out.getvalue() + err.getvalue()

    def test_bad_flags_are_refused(self):
        for argv in (["--shape", "2,16,8192,128"], ["--kernel", "fs_flash_fwd_tma_v8"],
                     ["--kernel", "fs_flash_fwd_tma_v8", "--shape", "2,16,8192"],
                     ["--kernel", "fs_flash_fwd_tma_v8", "--shape", "0,16,8192,128"],
                     ["--kernel", "fs_flash_fwd_tma_v8", "--shape", "2,16,8192,128", "--rounds", "0"],
                     ["--kernel", "fs_flash_fwd_tma_v8", "--shape", "2,16,8192,128", "--runs", "0"],
                     ["--kernel", "fs_flash_fwd_tma_v8", "--shape", "2,16,8192,128", "--heat", "-1"],
                     ["--kernel", "fs_flash_fwd_tma_v8", "--shape", "2,16,8192,128", "--dtype", "fp32"],
                     ["--kernel", "fs_flash_fwd_tma_v8", "--shape", "2,16,8192,128", "--backend", "math"],
                     ["--kernel", "fs_flash_bwd_tma_v9", "--shape", "2,16,8192,128", "--deterministic"],
                     ["--train", "--kernel", "fs_flash_fwd_tma_v8", "--shape", "2,16,8192,128"],
                     ["--train", "--backward", "--shape", "2,16,8192,128"],
                     ["--train", "--shape", "2,16,8192,128", "--deterministic"],
                     # grouped K/V: six positive sizes, KVH a divisor of H, no causal row that sees no key
                     ["--kernel", "fs_flash_fwd_tma_v8", "--shape-gqa", "2,16,3,8192,8192,128"],
                     ["--backward", "--kernel", "fs_flash_bwd_tma_v9", "--shape-gqa", "2,16,5,8192,8192,128"],
                     ["--train", "--shape-gqa", "2,16,32,8192,8192,128"],
                     ["--kernel", "fs_flash_fwd_tma_v8", "--shape-gqa", "2,16,0,8192,8192,128"],
                     ["--kernel", "fs_flash_fwd_tma_v8", "--shape-gqa", "2,16,4,8192,128"],
                     ["--kernel", "fs_flash_fwd_tma_v8", "--shape-gqa", "2,16,4,1024,512,128"],
                     ["--kernel", "fs_flash_fwd_tma_v8", "--shape-gqa", "2,16,4,1024,512,128", "--causal", "1"]):
            with self.subTest(argv=argv):
                code, text = self.run_main(argv)
                self.assertEqual(code, 2, text)

    def test_what_the_library_lacks_is_named(self):
        cases = ((["--kernel", "fs_no_such_kernel"], "'fs_no_such_kernel' is not an attention kernel"),
                 (["--kernel", "fs_gemm_v1"], "'fs_gemm_v1' is not an attention kernel"),
                 (["--kernel", "fs_flash_fwd_tma_v8", "--shape", "2,16,8192,96"], "does not take head_dim 96"),
                 (["--kernel", "fs_flash_fwd_tma_v9"], "fs_flash_fwd_tma_v9 does not take fp16"),
                 (["--kernel", "fs_flash_bwd_tma_v9"],
                  "fs_flash_bwd_tma_v9 is an attention backward kernel: time it with --backward"),
                 (["--kernel", "fs_flash_fwd_tma_v8", "fs_flash_bwd_v10"], "fs_flash_bwd_v10 is an attention backward"),
                 (["--backward", "--kernel", "fs_flash_fwd_tma_v8"],
                  "fs_flash_fwd_tma_v8 is an attention forward kernel: --backward times backward entries alone"),
                 (["--backward", "--kernel", "fs_no_such_kernel"], "'fs_no_such_kernel' is not an attention backward"),
                 (["--backward", "--kernel", "fs_gemm_v1"], "'fs_gemm_v1' is not an attention backward kernel"),
                 (["--backward", "--kernel", "fs_flash_bwd_tma_v9", "--shape", "2,16,8192,96"],
                  "does not take head_dim 96"),
                 (["--backward", "--kernel", "fs_flash_bwd_v1"], "fs_flash_bwd_v1 does not take fp16"))
        for extra, message in cases:
            argv = ["--shape", "2,16,8192,128", *extra]
            with self.subTest(argv=argv):
                code, _ = self.run_main(argv)
                self.assertIsInstance(code, str)  # SystemExit with the message: exit status 1
                self.assertTrue(code.startswith("head_to_head: error: "), code)
                self.assertIn(message, code)

    def test_backward_entries_are_named_as_their_stages_name_them(self):
        import flashstages as fs
        args = head_to_head.parse_args(["--backward", "--deterministic", "--kernel", "fs_flash_bwd_tma_v9",
                                        "fs_flash_bwd_v10", "--shape", "2,16,8192,128", "--backend", "cudnn", "flash"])
        infos = head_to_head.check_kernels(fs, fs.library(), args.kernel, args.shape, args.dtype, args.backward)
        self.assertEqual([head_to_head.series_of(info) for info in infos.values()],
                         ["stage07/attention_bwd/v9", "stage05/v10"])  # stages/*/bench.cu
        self.assertEqual([head_to_head.series_of(info, args.deterministic) for info in infos.values()],
                         ["stage07/attention_bwd/v9_deterministic", "stage05/v10_deterministic"])
        self.assertEqual([head_to_head.peer_series(key, args.backward) for key in args.backend],
                         ["sdpa_cudnn_bwd", "sdpa_flash_bwd"])  # sdpa_bench.py --backward
        self.assertEqual([head_to_head.peer_series(key) for key in args.backend], ["sdpa_cudnn", "sdpa_flash"])

    def test_a_training_step_counts_both_passes(self):
        # The forward's FLOPs and the backward's, 2.5 × them: 3.5 × the forward's, causal halved alike.
        for causal in (False, True):
            fwd = head_to_head.sdpa_bench.attention_flops(2, 16, 8192, 8192, 128, causal)
            self.assertAlmostEqual(head_to_head.train_flops(2, 16, 8192, 8192, 128, causal) / fwd, 3.5)
        self.assertEqual(head_to_head.TRAIN_SERIES, "flash_attention_train")

    def test_grouped_shapes_are_parsed(self):
        # --shape-gqa beside --shape or alone, in each mode; every shape as (B, H, KVH, Nq, Nk, D), --shape's
        # with KVH = H and Nq = Nk, in order, none twice.
        args = head_to_head.parse_args(["--kernel", "fs_flash_fwd_tma_v8", "--shape", "2,16,8192,128",
                                        "--shape-gqa", "2,16,4,8192,8192,128", "--shape-gqa", "1,32,1,512,8192,64",
                                        "--shape-gqa", "2,16,4,8192,8192,128"])
        self.assertEqual(args.shape_gqa, [(2, 16, 4, 8192, 8192, 128), (1, 32, 1, 512, 8192, 64),
                                          (2, 16, 4, 8192, 8192, 128)])
        self.assertEqual(head_to_head.shapes_of(args), [(2, 16, 16, 8192, 8192, 128), (2, 16, 4, 8192, 8192, 128),
                                                        (1, 32, 1, 512, 8192, 64)])
        for mode in (["--kernel", "fs_flash_fwd_tma_v8"], ["--backward", "--kernel", "fs_flash_bwd_tma_v9"],
                     ["--train"]):
            with self.subTest(mode=mode):
                args = head_to_head.parse_args([*mode, "--shape-gqa", "2,16,4,8192,8192,128"])
                self.assertEqual(args.shape, [])
                self.assertEqual(head_to_head.shapes_of(args), [(2, 16, 4, 8192, 8192, 128)])
        # A KVH that does not divide H is refused by argparse (sdpa_bench.parse_shape_gqa), naming both.
        code, text = self.run_main(["--backward", "--kernel", "fs_flash_bwd_tma_v9",
                                    "--shape-gqa", "2,16,3,8192,8192,128"])
        self.assertEqual(code, 2, text)
        self.assertIn("KVH = 3 must divide H = 16", text)
        # Nq > Nk is the project's problem without the mask (the mask would leave rows with no key).
        args = head_to_head.parse_args(["--kernel", "fs_flash_fwd_tma_v8", "--shape-gqa", "2,16,4,1024,512,128",
                                        "--causal", "0"])
        self.assertEqual(head_to_head.shapes_of(args), [(2, 16, 4, 1024, 512, 128)])

    def test_a_grouped_shape_the_kernel_does_not_take_is_named(self):
        for argv, message in ((["--kernel", "fs_flash_fwd_tma_v8"], "does not take head_dim 96"),
                              (["--backward", "--kernel", "fs_flash_bwd_tma_v9"], "does not take head_dim 96")):
            with self.subTest(argv=argv):
                code, _ = self.run_main([*argv, "--shape", "2,16,8192,128", "--shape-gqa", "2,16,4,8192,8192,96"])
                self.assertIsInstance(code, str)
                self.assertTrue(code.startswith("head_to_head: error: "), code)
                self.assertIn(message, code)

    def test_grouped_rows_are_named_as_the_stages_name_them(self):
        import flashstages as fs
        args = head_to_head.parse_args(["--backward", "--kernel", "fs_flash_bwd_tma_v9", "--shape", "2,16,8192,128",
                                        "--shape", "1,16,8192,128", "--shape-gqa", "2,16,4,8192,8192,128",
                                        "--shape-gqa", "4,32,1,512,8192,64", "--dtype", "fp16", "--causal", "1"])
        infos = head_to_head.check_kernels(fs, fs.library(), args.kernel, head_to_head.shapes_of(args), args.dtype,
                                           args.backward)
        (info,) = infos.values()
        cells = [head_to_head.cell_name("fp16", *shape, True) for shape in head_to_head.shapes_of(args)]
        self.assertEqual(cells, ["fp16/D:128/N:8192/causal:1",  # as before: the default rule's B and H
                                 "fp16/D:128/N:8192/causal:1/B:1/H:16",
                                 "fp16/D:128/B:2/H:16/KVH:4/Nq:8192/Nk:8192/causal:1",
                                 "fp16/D:64/B:4/H:32/KVH:1/Nq:512/Nk:8192/causal:1"])
        # stages/07_tuned_tma/attention_bwd/bench.cu and sdpa_bench.py --backward --shape-gqa
        self.assertEqual(f"{head_to_head.series_of(info)}/{cells[2]}",
                         "stage07/attention_bwd/v9/fp16/D:128/B:2/H:16/KVH:4/Nq:8192/Nk:8192/causal:1")
        peer = head_to_head.peer_series("cudnn", backward=True)
        self.assertEqual(f"{peer}/{cells[2]}", "sdpa_cudnn_bwd/fp16/D:128/B:2/H:16/KVH:4/Nq:8192/Nk:8192/causal:1")
        for (b, h, kvh, nq, nk, d), cell in zip(head_to_head.shapes_of(args), cells):
            self.assertEqual(f"{peer}/{cell}",
                             head_to_head.sdpa_bench.bench_name(peer, "fp16", b, h, nq, nk, d, True, kvh))
        train_cell = head_to_head.cell_name("bf16", 2, 16, 4, 8192, 8192, 128, False)
        self.assertEqual(f"{head_to_head.TRAIN_SERIES}/{train_cell}",
                         "flash_attention_train/bf16/D:128/B:2/H:16/KVH:4/Nq:8192/Nk:8192/causal:0")
        # KVH = H with Nq != Nk: the names of Nq != Nk, without KVH (as the stages')
        self.assertEqual(head_to_head.cell_name("fp16", 1, 16, 16, 512, 16384, 128, False),
                         "fp16/D:128/B:1/H:16/Nq:512/Nk:16384/causal:0")
        self.assertEqual(head_to_head.cell_where("fp16", 2, 16, 4, 8192, 8192, 128, True),
                         "fp16 B=2 H=16 KVH=4 Nq=8192 Nk=8192 D=128 causal=1")
        self.assertEqual(head_to_head.cell_where("bf16", 2, 16, 16, 8192, 8192, 128, False),
                         "bf16 B=2 H=16 N=8192 D=128 causal=0")

    def test_grouped_kv_counts_its_bytes_not_its_flops(self):
        # FLOPs take no KVH (every query head does its products); bytes read and write K, V (dK, dV) with KVH heads.
        bench = head_to_head.sdpa_bench
        b, h, kvh, n, d = 2, 16, 4, 8192, 128
        q_bytes = b * h * n * d * 2
        kv_bytes = b * kvh * n * d * 2
        self.assertEqual(bench.attention_bytes(b, h, n, n, d, 2, kvh), 2 * q_bytes + 2 * kv_bytes)  # Q, O; K, V
        self.assertEqual(head_to_head.train_bytes(b, h, n, n, d, 2, kvh),
                         3 * bench.attention_bytes(b, h, n, n, d, 2, kvh))  # the forward's, and twice it
        self.assertEqual(head_to_head.train_bytes(b, h, n, n, d, 2), head_to_head.train_bytes(b, h, n, n, d, 2, h))
        self.assertLess(head_to_head.train_bytes(b, h, n, n, d, 2, kvh), head_to_head.train_bytes(b, h, n, n, d, 2))

    def test_sdpa_is_called_as_sdpa_bench_calls_it(self):
        # enable_gqa=True where K, V have fewer heads than Q, is_causal where Nq = Nk (no PyTorch needed).
        q = types.SimpleNamespace(shape=(2, 16, 8192, 128))
        grouped, full = (types.SimpleNamespace(shape=(2, kvh, 8192, 128)) for kvh in (4, 16))
        self.assertEqual(head_to_head.sdpa_arguments(q, grouped, False), {"enable_gqa": True})
        self.assertEqual(head_to_head.sdpa_arguments(q, grouped, True), {"is_causal": True, "enable_gqa": True})
        self.assertEqual(head_to_head.sdpa_arguments(q, full, True), {"is_causal": True})
        self.assertEqual(head_to_head.sdpa_arguments(q, full, False), {})

    def test_a_missing_library_is_named(self):
        saved = os.environ.get("FLASHSTAGES_LIBRARY")
        os.environ["FLASHSTAGES_LIBRARY"] = str(HERE / "no_such_library.so")
        import flashstages
        loaded, flashstages._lib = flashstages._lib, None
        try:
            code, _ = self.run_main(["--kernel", "fs_flash_fwd_tma_v8", "--shape", "2,16,8192,128"])
            self.assertIn("no_such_library.so: no such file", str(code))
        finally:
            flashstages._lib = loaded
            os.environ["FLASHSTAGES_LIBRARY"] = saved

    @unittest.skipIf(cuda_available(), "PyTorch with CUDA is here: the skip path is not taken")
    def test_without_cuda_it_says_so_and_writes_nothing(self):
        out = HERE / "never_written.json"
        for argv in (["--kernel", "fs_flash_fwd_tma_v8"], ["--backward", "--kernel", "fs_flash_bwd_tma_v9"],
                     ["--train"],
                     ["--backward", "--kernel", "fs_flash_bwd_tma_v9", "--shape-gqa", "2,16,4,8192,8192,128"]):
            with self.subTest(argv=argv):
                code, text = self.run_main([*argv, "--shape", "2,16,8192,128", "--out", str(out)])
                self.assertEqual(code, 0)
                self.assertIn(head_to_head.SKIP_LINE, text)
                self.assertFalse(out.exists())


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: test_head_to_head.py <path of libflashstages.so>")
    os.environ["FLASHSTAGES_LIBRARY"] = sys.argv.pop(1)
    unittest.main()
