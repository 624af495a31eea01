#!/usr/bin/env python3
"""CPU tests of plots/head_to_head.py: bad flags, unknown kernels, an entry of the other pass (a backward
entry without --backward, a forward one with it), what a kernel does not take and --train beside --kernel
or --backward are refused before any GPU is looked for, a training step counts both passes' FLOPs, backward entries are named as their stages' benchmarks name them, and without
PyTorch's CUDA it says so and writes nothing.

    python3 plots/test_head_to_head.py build/<preset>/common/libflashstages.so
"""

from __future__ import annotations

import importlib
import importlib.util
import io
import os
import sys
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
                     ["--train", "--shape", "2,16,8192,128", "--deterministic"]):
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
                     ["--train"]):
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
