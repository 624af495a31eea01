#!/usr/bin/env python3
"""CPU tests of plots/head_to_head.py: bad flags, unknown kernels and what a kernel does not take are
refused before any GPU is looked for, and without PyTorch's CUDA it says so and writes nothing.

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
                     ["--kernel", "fs_flash_fwd_tma_v8", "--shape", "2,16,8192,128", "--backend", "math"]):
            with self.subTest(argv=argv):
                code, text = self.run_main(argv)
                self.assertEqual(code, 2, text)

    def test_what_the_library_lacks_is_named(self):
        cases = ((["--kernel", "fs_no_such_kernel"], "'fs_no_such_kernel' is not an attention kernel"),
                 (["--kernel", "fs_gemm_v1"], "'fs_gemm_v1' is not an attention kernel"),
                 (["--kernel", "fs_flash_fwd_tma_v8", "--shape", "2,16,8192,96"], "does not take head_dim 96"),
                 (["--kernel", "fs_flash_fwd_tma_v9"], "fs_flash_fwd_tma_v9 does not take fp16"))
        for extra, message in cases:
            argv = ["--shape", "2,16,8192,128", *extra]
            with self.subTest(argv=argv):
                code, _ = self.run_main(argv)
                self.assertIsInstance(code, str)  # SystemExit with the message: exit status 1
                self.assertTrue(code.startswith("head_to_head: error: "), code)
                self.assertIn(message, code)

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
        code, text = self.run_main(["--kernel", "fs_flash_fwd_tma_v8", "--shape", "2,16,8192,128", "--out", str(out)])
        self.assertEqual(code, 0)
        self.assertIn(head_to_head.SKIP_LINE, text)
        self.assertFalse(out.exists())


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: test_head_to_head.py <path of libflashstages.so>")
    os.environ["FLASHSTAGES_LIBRARY"] = sys.argv.pop(1)
    unittest.main()
