"""CPU test of the C interface through ctypes: the status table, the registry (every problem kind:
attention forward and backward, GEMM), and that each launcher returns its named code for bad input
before touching a device. Without a GPU a valid call must return FS_ERR_CUDA, from the versions'
entries and from the picking entries and their query alike. With --layout, the ctypes mirrors
against the C header instead: every struct's size and every field's offset and size, as
struct_layout.cpp (built by CMake against flashstages.h) prints them; no library needed. (test_binding.py
and test_torch_op.py run the kernels on a GPU through the torch-facing API.)

    python3 python/test_ctypes.py build/common/libflashstages.so
    python3 python/test_ctypes.py --layout build/python_struct_layout
"""
import ctypes
import math
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import flashstages  # noqa: E402

LIB_PATH = None
LAYOUT_EXE = None
# Each C struct of flashstages.h and its ctypes mirror.
MIRRORS = {"fs_attention_params": flashstages.AttentionParams,
           "fs_attention_bwd_params": flashstages.AttentionBwdParams, "fs_gemm_params": flashstages.GemmParams,
           "fs_kernel_info": flashstages.KernelInfo, "fs_pick": flashstages.Pick}
CODES = ["FS_SUCCESS", "FS_ERR_NULL_POINTER", "FS_ERR_INVALID_SIZE", "FS_ERR_UNSUPPORTED_HEAD_DIM",
         "FS_ERR_UNSUPPORTED_DTYPE", "FS_ERR_MISALIGNED_POINTER", "FS_ERR_UNSUPPORTED_MASK",
         "FS_ERR_INVALID_SCALE", "FS_ERR_OUT_OF_MEMORY", "FS_ERR_CUDA", "FS_ERR_INVALID_SEQLENS",
         "FS_ERR_INVALID_LEADING_DIM", "FS_ERR_UNSUPPORTED_DEVICE", "FS_ERR_INVALID_KV_HEADS",
         "FS_ERR_UNSUPPORTED_LAYOUT", "FS_ERR_INVALID_STRIDES"]


def head_dim_of(info):
    """D = 64 where the version takes it, else its first head_dim (stage 07's fp8 v9: 128 alone)."""
    return 64 if info.takes_head_dim(64) else info.head_dims[0]


def valid_params(**change):
    p = flashstages.AttentionParams(2, 3, 17, 19, 64, 0.0, 0, flashstages.FP32,
                                    0x10000, 0x20000, 0x30000, 0x40000, 0x50000)
    for key, value in change.items():
        setattr(p, key, value)
    return p


def bwd_params(info, **change):
    """A valid backward problem for a backward version: its first dtype, D = 64, distinct aligned fake
    tensors; `change` sets fields of the backward struct or, for names of the forward's, of `fwd`."""
    p = flashstages.AttentionBwdParams(fwd=valid_params(dtype=info.dtypes[0], head_dim=64), d_o=0x60000, dq=0x70000,
                                       dk=0x80000, dv=0x90000, delta=0xA0000)
    forward = {name for name, _ in flashstages.AttentionParams._fields_}
    for key, value in change.items():
        setattr(p.fwd if key in forward else p, key, value)
    return p


def first_type(mask):
    return next(code for code in flashstages.DTYPE_NAMES if mask & (1 << code))


def gemm_params(info, **change):
    """A valid problem for a GEMM version: its first input and output types (from the registry); int8
    with B stored N×K, cuBLASLt's layout and the one every int8 version takes (stage 07's the only one)."""
    # Rows of A and B padded to 16-element multiples: 16 bytes or more for every type, what stage 07's
    # TMA loads need.
    int8 = first_type(info.in_dtypes) == flashstages.INT8
    p = flashstages.GemmParams(m=17, n=33, k=65, trans_b=int(int8), ab_dtype=first_type(info.in_dtypes),
                               c_dtype=first_type(info.out_dtypes), alpha=1.0, beta=0.0,
                               a=0x10000, lda=80, b=0x20000, ldb=80 if int8 else 48, c=0x30000, ldc=33)
    for key, value in change.items():
        setattr(p, key, value)
    return p


def has_gpu():
    try:
        import torch
        return torch.cuda.is_available()
    except ImportError:
        return None  # unknown: the no-device case is judged by the library's own answer


class CInterface(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.lib = flashstages.load(LIB_PATH)

    def code(self, launcher, params):
        try:
            return flashstages.call(self.lib, launcher, params)
        except flashstages.FlashstagesError as e:
            return e.name

    def test_status_table(self):
        for code, name in enumerate(CODES):
            self.assertEqual(flashstages.status_name(self.lib, code), name)
            self.assertTrue(self.lib.fs_status_message(code))
        self.assertEqual(flashstages.status_name(self.lib, len(CODES)), "FS_UNKNOWN_STATUS")

    def test_registry_lists_every_launcher(self):
        infos = flashstages.kernels(self.lib)
        self.assertEqual(len(infos), self.lib.fs_kernel_count())
        names = [k.name for k in infos]
        self.assertEqual(len(names), len(set(names)))
        for k in infos:
            with self.subTest(kernel=k.name):
                self.assertTrue(hasattr(self.lib, k.name))
                self.assertGreater(k.num_archs, 0)
                self.assertTrue(k.dtypes)
                # The field after smem_bytes: the PTX's architecture is one the kernel has machine code for
                # too, or 0 (none: stage 07's sm_90a code), so a KernelInfo laid out unlike fs_kernel_info
                # reads something else here.
                archs = list(k.archs)[: k.num_archs]
                self.assertTrue(k.ptx_arch == 0 or k.ptx_arch in archs, (k.ptx_arch, archs))
                if k.stage.decode().startswith("stage07/"):
                    self.assertEqual(k.ptx_arch, 0)
        self.assertFalse(self.lib.fs_kernel_at(len(infos)))  # a null pointer past the end
        # Every kind has its params struct; the kinds are the three the header names.
        self.assertEqual({k.problem for k in infos}, set(flashstages.PARAMS_OF_PROBLEM))
        self.assertEqual([k.version.decode() for k in flashstages.kernels(self.lib, stage="stage05")],
                         ["v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10"])
        self.assertTrue(all(k.problem == flashstages.PROBLEM_ATTENTION_BWD
                            for k in flashstages.kernels(self.lib, stage="stage05")))
        def stages(stage):
            return {k.stage.decode() for k in flashstages.kernels(self.lib, stage=stage)}
        # A stage takes its rungs; a rung, itself alone.
        self.assertEqual(stages("stage07"), {"stage07/attention", "stage07/attention_bwd", "stage07/gemm"})
        self.assertEqual(stages("stage07/gemm"), {"stage07/gemm"})
        self.assertEqual([k.version.decode() for k in flashstages.kernels(self.lib, stage="stage04")],
                         ["v1", "v2", "v3", "v4", "v5", "v6"])

    def test_attention_bad_inputs_return_named_codes(self):
        for info in flashstages.kernels(self.lib, problem=flashstages.PROBLEM_ATTENTION):
            launcher = info.name
            with self.subTest(launcher=launcher):
                ok = dict(dtype=info.dtypes[0], head_dim=head_dim_of(info))
                self.assertEqual(self.code(launcher, valid_params(q=None, **ok)), "FS_ERR_NULL_POINTER")
                self.assertEqual(self.code(launcher, valid_params(batch=0, **ok)), "FS_ERR_INVALID_SIZE")
                self.assertEqual(self.code(launcher, valid_params(batch=1 << 62, **ok)), "FS_ERR_INVALID_SIZE")
                self.assertEqual(self.code(launcher, valid_params(scale=math.nan, **ok)), "FS_ERR_INVALID_SCALE")
                self.assertEqual(self.code(launcher, valid_params(**{**ok, "dtype": 9})), "FS_ERR_UNSUPPORTED_DTYPE")
                self.assertEqual(self.code(launcher, valid_params(**{**ok, "dtype": flashstages.INT8})),
                                 "FS_ERR_UNSUPPORTED_DTYPE")
                bad_dim = next(d for d in (300, 48, 96) if not info.takes_head_dim(d))
                self.assertEqual(self.code(launcher, valid_params(**{**ok, "head_dim": bad_dim})),
                                 "FS_ERR_UNSUPPORTED_HEAD_DIM")
                self.assertEqual(self.code(launcher, valid_params(causal=1, seq_q=20, **ok)), "FS_ERR_UNSUPPORTED_MASK")
                self.assertEqual(self.code(launcher, valid_params(k=0x20002, **ok)), "FS_ERR_MISALIGNED_POINTER")
                # kv_heads: negative, more than heads = 3, or not a divisor of it.
                for kv_heads in (-1, 4, 2):
                    self.assertEqual(self.code(launcher, valid_params(kv_heads=kv_heads, **ok)),
                                     "FS_ERR_INVALID_KV_HEADS")
                # One variable-length array alone is never valid: seq_lens to a kernel that takes none,
                # or cu_seqlens_q without cu_seqlens_k.
                self.assertEqual(self.code(launcher, valid_params(cu_seqlens_q=0x60000, **ok)), "FS_ERR_INVALID_SEQLENS")

    def test_attention_bwd_bad_inputs_return_named_codes(self):
        # The forward problem's rules, then the backward's own pointers, all before any device call.
        for info in flashstages.kernels(self.lib, problem=flashstages.PROBLEM_ATTENTION_BWD):
            launcher = info.name
            with self.subTest(launcher=launcher):
                self.assertEqual(self.code(launcher, bwd_params(info, q=None)), "FS_ERR_NULL_POINTER")
                self.assertEqual(self.code(launcher, bwd_params(info, lse=None)), "FS_ERR_NULL_POINTER")
                for name in ("d_o", "dq", "dk", "dv"):
                    self.assertEqual(self.code(launcher, bwd_params(info, **{name: None})), "FS_ERR_NULL_POINTER")
                self.assertEqual(self.code(launcher, bwd_params(info, seq_k=0)), "FS_ERR_INVALID_SIZE")
                self.assertEqual(self.code(launcher, bwd_params(info, scale=math.inf)), "FS_ERR_INVALID_SCALE")
                self.assertEqual(self.code(launcher, bwd_params(info, dtype=flashstages.INT8)),
                                 "FS_ERR_UNSUPPORTED_DTYPE")
                bad_dim = next(d for d in (300, 48, 96) if not info.takes_head_dim(d))
                self.assertEqual(self.code(launcher, bwd_params(info, head_dim=bad_dim)), "FS_ERR_UNSUPPORTED_HEAD_DIM")
                self.assertEqual(self.code(launcher, bwd_params(info, causal=1, seq_q=20)), "FS_ERR_UNSUPPORTED_MASK")
                self.assertEqual(self.code(launcher, bwd_params(info, dq=0x70001)), "FS_ERR_MISALIGNED_POINTER")
                self.assertEqual(self.code(launcher, bwd_params(info, delta=0xA0002)), "FS_ERR_MISALIGNED_POINTER")
                # Both variable-length layouts at once: refused before any device query, by the versions
                # that take no variable lengths and by those that take one layout at a time alike.
                both = dict(seq_lens=0xB0000, cu_seqlens_q=0xB0000, cu_seqlens_k=0xB0000)
                self.assertEqual(self.code(launcher, bwd_params(info, **both)), "FS_ERR_INVALID_SEQLENS")
                # kv_heads: the forward's rule (heads = 3: negative, more, not a divisor), as for the forward.
                for kv_heads in (-1, 4, 2):
                    self.assertEqual(self.code(launcher, bwd_params(info, kv_heads=kv_heads)), "FS_ERR_INVALID_KV_HEADS")

    def test_sizes_near_2_63_are_refused_by_every_launcher(self):
        # Each size field alone pushed so that an element or byte count passes 2^63: a named code, never
        # a product that wraps into a small, valid-looking size (and never FS_SUCCESS).
        big = [1 << 62, (1 << 63) - 1]
        for info in flashstages.kernels(self.lib, problem=flashstages.PROBLEM_ATTENTION):
            ok = dict(dtype=info.dtypes[0], head_dim=head_dim_of(info))
            for field in ("batch", "heads", "seq_q", "seq_k", "head_dim"):
                for value in big:
                    with self.subTest(launcher=info.name, field=field, value=value):
                        code = self.code(info.name, valid_params(**{**ok, field: value}))
                        expected = "FS_ERR_UNSUPPORTED_HEAD_DIM" if field == "head_dim" else "FS_ERR_INVALID_SIZE"
                        self.assertEqual(code, expected)
        for info in flashstages.kernels(self.lib, problem=flashstages.PROBLEM_ATTENTION_BWD):
            for field in ("batch", "heads", "seq_q", "seq_k", "head_dim"):
                for value in big:
                    with self.subTest(launcher=info.name, field=field, value=value):
                        code = self.code(info.name, bwd_params(info, **{field: value}))
                        expected = "FS_ERR_UNSUPPORTED_HEAD_DIM" if field == "head_dim" else "FS_ERR_INVALID_SIZE"
                        self.assertEqual(code, expected)
        for info in flashstages.kernels(self.lib, problem=flashstages.PROBLEM_GEMM):
            for field in ("m", "n", "k", "lda", "ldb", "ldc"):
                for value in big:
                    with self.subTest(launcher=info.name, field=field, value=value):
                        # A longer row needs a leading dimension to match, or that is refused first.
                        change = {field: value}
                        if field == "n":
                            change.update(ldb=value, ldc=value)
                        if field == "k":
                            change.update(lda=value)
                            if gemm_params(info).trans_b:  # B stored N×K: its rows are K long too
                                change.update(ldb=value)
                        code = self.code(info.name, gemm_params(info, **change))
                        self.assertEqual(code, "FS_ERR_INVALID_SIZE")

    def test_gemm_bad_inputs_return_named_codes(self):
        for info in flashstages.kernels(self.lib, problem=flashstages.PROBLEM_GEMM):
            launcher = info.name
            with self.subTest(launcher=launcher):
                self.assertEqual(self.code(launcher, gemm_params(info, b=None)), "FS_ERR_NULL_POINTER")
                self.assertEqual(self.code(launcher, gemm_params(info, k=0)), "FS_ERR_INVALID_SIZE")
                self.assertEqual(self.code(launcher, gemm_params(info, lda=64)), "FS_ERR_INVALID_LEADING_DIM")
                # Transposed A is K×M: its rows need M = 17 elements, so lda = 17 is enough then.
                self.assertEqual(self.code(launcher, gemm_params(info, trans_a=1, lda=16)),
                                 "FS_ERR_INVALID_LEADING_DIM")
                # An input type this version does not take (v9 takes bf16, so no one type fits all).
                untaken = next(d for d in flashstages.DTYPE_NAMES if not info.in_dtypes & (1 << d))
                self.assertEqual(self.code(launcher, gemm_params(info, ab_dtype=untaken)),
                                 "FS_ERR_UNSUPPORTED_DTYPE")
                # Element alignment is all any version asks of C: it is at least 2 bytes wide.
                self.assertEqual(self.code(launcher, gemm_params(info, c=0x30001)), "FS_ERR_MISALIGNED_POINTER")
                if info.stage.decode() == "stage07/gemm":  # TMA: 16-byte bases and rows for A and B
                    self.assertEqual(self.code(launcher, gemm_params(info, a=0x10008)), "FS_ERR_MISALIGNED_POINTER")
                    self.assertEqual(self.code(launcher, gemm_params(info, lda=68)), "FS_ERR_INVALID_LEADING_DIM")
                    # TMA's coordinates are signed 32-bit: K = 2^31 (A's rows that long) is refused by the
                    # validation, before a tensor map is encoded, so that the picking entry passes it by.
                    k = 2 ** 31
                    long_k = gemm_params(info, m=1, n=1, k=k, lda=k, ldb=k if gemm_params(info).trans_b else 80, ldc=1)
                    self.assertEqual(self.code(launcher, long_k), "FS_ERR_INVALID_SIZE")
                    # Rows of 2^40 bytes or more: a stride no tensor map takes.
                    self.assertEqual(self.code(launcher, gemm_params(info, lda=2 ** 40)), "FS_ERR_INVALID_LEADING_DIM")

    def test_valid_call_without_gpu_is_a_named_cuda_error(self):
        if has_gpu():
            self.skipTest("this machine has a GPU; the GPU test below calls the kernels instead")
        # Fake addresses are never touched: with no device the runtime refuses before any launch.
        self.assertEqual(self.code("fs_naive_v1", valid_params()), "FS_ERR_CUDA")
        for info in flashstages.kernels(self.lib, problem=flashstages.PROBLEM_ATTENTION_BWD):
            with self.subTest(launcher=info.name):
                self.assertEqual(self.code(info.name, bwd_params(info)), "FS_ERR_CUDA")
        for info in flashstages.kernels(self.lib, problem=flashstages.PROBLEM_GEMM):
            with self.subTest(launcher=info.name):
                self.assertEqual(self.code(info.name, gemm_params(info)), "FS_ERR_CUDA")
        self.assertEqual(self.lib.fs_kernel_check_device(self.lib.fs_kernel_at(0), 0), 9)  # FS_ERR_CUDA

    def test_picking_entries_without_gpu_are_a_named_cuda_error(self):
        # The entries pick for the current GPU: without one they refuse before anything else, and the
        # query says why in its Pick.
        if has_gpu():
            self.skipTest("this machine has a GPU; test_torch_op.py asks the query there")
        fp16 = dict(dtype=flashstages.FP16, head_dim=64)
        self.assertEqual(self.code("fs_attention_forward", valid_params(**fp16)), "FS_ERR_CUDA")
        bwd = flashstages.kernels(self.lib, problem=flashstages.PROBLEM_ATTENTION_BWD)[-1]
        self.assertEqual(self.code("fs_attention_backward", bwd_params(bwd)), "FS_ERR_CUDA")
        gemm = flashstages.kernels(self.lib, problem=flashstages.PROBLEM_GEMM)[0]
        self.assertEqual(self.code("fs_gemm", gemm_params(gemm)), "FS_ERR_CUDA")
        for params in (valid_params(**fp16), bwd_params(bwd), gemm_params(gemm)):
            with self.subTest(params=type(params).__name__):
                with self.assertRaises(flashstages.FlashstagesError) as caught:
                    flashstages.query_pick(self.lib, params)
                self.assertEqual(caught.exception.name, "FS_ERR_CUDA")
                self.assertIn("no GPU to pick for", str(caught.exception))

    def test_pick_query_fills_its_struct_or_refuses_a_null(self):
        pick = flashstages.Pick()
        self.assertEqual(repr(pick), "Pick(kernel=None, why='')")
        self.assertEqual(self.lib.fs_pick_attention_forward(None, ctypes.byref(pick)), 1)  # FS_ERR_NULL_POINTER
        self.assertEqual(self.lib.fs_pick_gemm(ctypes.byref(gemm_params(flashstages.kernels(
            self.lib, problem=flashstages.PROBLEM_GEMM)[0])), None), 1)
        # A Pick that names a version prints it by name, stage and version, as the query leaves it.
        info = self.lib.fs_kernel_at(0)
        pick.kernel, pick.why = info, b"the rule"
        self.assertEqual(pick.name, info.contents.name)
        self.assertEqual(repr(pick), f"Pick(kernel={info.contents.name!r}, stage={info.contents.stage.decode()!r}, "
                                     f"version={info.contents.version.decode()!r}, why='the rule')")


class Layout(unittest.TestCase):
    """The ctypes mirrors have the C structs' layout (struct_layout.cpp prints the compiler's)."""

    def test_every_mirror_has_its_structs_size_and_offsets(self):
        printed = subprocess.run([LAYOUT_EXE], capture_output=True, text=True, check=True).stdout.splitlines()
        sizes, fields = {}, {}
        for line in printed:
            name, *numbers = line.split()
            if "." in name:
                struct, field = name.split(".")
                fields.setdefault(struct, {})[field] = tuple(int(n) for n in numbers)
            else:
                sizes[name] = int(numbers[0])
        self.assertEqual(set(sizes), set(MIRRORS))
        for struct, mirror in MIRRORS.items():
            with self.subTest(struct=struct):
                self.assertEqual(ctypes.sizeof(mirror), sizes[struct], f"sizeof({struct})")
                ours = {name: (getattr(mirror, name).offset, getattr(mirror, name).size) for name, _ in mirror._fields_}
                self.assertEqual(ours, fields[struct], f"{struct}: (offset, size) of each field")


if __name__ == "__main__":
    args = sys.argv[1:]
    if len(args) == 2 and args[0] == "--layout":
        LAYOUT_EXE = args[1]
        suite = unittest.defaultTestLoader.loadTestsFromTestCase(Layout)
    elif len(args) == 1 and not args[0].startswith("-"):
        LIB_PATH = args[0]
        suite = unittest.defaultTestLoader.loadTestsFromTestCase(CInterface)
    else:
        sys.exit("usage: test_ctypes.py path/to/libflashstages.so, or test_ctypes.py --layout "
                 "path/to/python_struct_layout")
    sys.exit(0 if unittest.TextTestRunner(verbosity=2).run(suite).wasSuccessful() else 1)
