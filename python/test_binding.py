"""Tests of the torch-facing binding (flashstages.attention) and of how the package finds the library.

On the CPU: every check attention(), pick() and flash_attention()'s operators make before they call
the library, on stand-in tensors with shapes and strides (no PyTorch needed), the layouts that pass and
the strides that reach the params struct included; that the package imports and its C interface runs
without PyTorch; and the library lookup order. With PyTorch and a GPU: every attention kernel against
torch.nn.functional.scaled_dot_product_attention in fp64 (for causal with Nq != Nk against
causal_lower_right, this project's bottom-right mask; with K/V shared by groups of query heads too),
q, k, v in a model's [B, N, H, D] layout and sliced from a packed QKV tensor, read in place, the
strides torch.empty_like makes as the checks predict them, CPU tensors refused without touching the
device, the current stream honoured, and the README's example as written. (test_torch_op.py tests
flash_attention on the GPU.)

    python3 python/test_binding.py build/.../libflashstages.so          # the CPU cases
    python3 python/test_binding.py build/.../libflashstages.so --gpu    # the GPU cases (77: skipped)
"""
import ctypes
import math
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import flashstages  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


class Device:
    def __init__(self, spec):
        self.type, _, index = spec.partition(":")
        self.index = int(index) if index else None

    def __eq__(self, other):
        return (self.type, self.index) == (other.type, other.index)

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"


def row_major(shape):
    """The strides of a contiguous tensor of `shape`."""
    return tuple(math.prod(shape[i + 1:]) for i in range(len(shape)))


class Stand:
    """What attention() reads of a torch.Tensor, for the CPU tests: its shape, dtype, device, address and
    strides (row-major unless given), with is_contiguous() derived from them as torch derives it."""

    SIZES = {"torch.float32": 4, "torch.float64": 8, "torch.float16": 2, "torch.bfloat16": 2,
             "torch.float8_e4m3fn": 1}

    def __init__(self, shape, dtype="torch.float16", device="cuda:0", strides=None, address=0x100000):
        self.shape, self.dtype, self.device = tuple(shape), dtype, Device(device)
        self.strides = tuple(strides) if strides is not None else row_major(self.shape)
        self.address = address

    def data_ptr(self):
        return self.address

    def stride(self):
        return self.strides

    def is_contiguous(self):  # torch's rule: the row-major strides, those of dimensions of size 1 aside
        return all(s == c for n, s, c in zip(self.shape, self.strides, row_major(self.shape)) if n > 1)

    def contiguous(self):  # a copy elsewhere, as torch.Tensor.contiguous() makes one
        return self if self.is_contiguous() else Stand(self.shape, self.dtype, str(self.device), address=0x900000)

    def numel(self):
        return math.prod(self.shape)

    def element_size(self):
        return self.SIZES[self.dtype]


def bnhd(b, h, n, d, dtype="torch.float16", address=0x100000):
    """x.transpose(1, 2) of a [B, N, H, D] tensor x, the layout of most models: [B, H, N, D] with strides
    {N·H·D, D, H·D, 1}. Dense, not contiguous."""
    return Stand((b, h, n, d), dtype, strides=(n * h * d, d, h * d, 1), address=address)


def packed(b, h, n, d, which, dtype="torch.float16"):
    """Q, K or V (which: 0, 1, 2) of a packed [B, N, 3, H, D] tensor, transposed to [B, H, N, D]: strides
    {N·3·H·D, D, 3·H·D, 1}, the other two in its gaps. Neither contiguous nor dense."""
    return Stand((b, h, n, d), dtype, strides=(n * 3 * h * d, d, 3 * h * d, 1), address=0x100000 + which * h * d * 2)


def has_torch():
    try:
        import torch  # noqa: F401
        return True
    except ImportError:
        return False


def has_gpu():
    try:
        import torch
        return torch.cuda.is_available()
    except ImportError:
        return False


class Checks(unittest.TestCase):
    """Each bad call raises the named Python error, before the library is called."""

    @classmethod
    def setUpClass(cls):
        cls.lib = flashstages.library()
        cls.v5 = [flashstages._attention_kernel(cls.lib, "fs_flash_fwd_v5")]
        cls.every = flashstages._takes(cls.lib, None, flashstages.PROBLEM_ATTENTION)  # the picking entry's

    def qkv(self, **change):
        shapes = dict(q=(2, 4, 100, 64), k=(2, 4, 130, 64), v=(2, 4, 130, 64))
        tensors = {name: Stand(shape) for name, shape in shapes.items()}
        for name, t in change.items():
            tensors[name] = t
        return tensors["q"], tensors["k"], tensors["v"]

    def refused(self, error, words, info=None, out=None, lse=None, make_contiguous=False, **change):
        with self.assertRaises(error) as caught:
            flashstages._check_attention(info or self.v5, *self.qkv(**change), {"out": out}, lse, make_contiguous,
                                         lib=self.lib if info is self.every else None)
        for word in words:
            self.assertIn(word, str(caught.exception))

    def test_a_valid_call_passes(self):
        for takes in (self.v5, self.every):
            q, k, v = flashstages._check_attention(takes, *self.qkv(), {"out": Stand((2, 4, 100, 64))},
                                                   Stand((2, 4, 100), dtype="torch.float32"), False)
            self.assertEqual(q.shape, (2, 4, 100, 64))

    def test_the_default_takes_what_some_version_takes(self):
        # kernel=None runs the picking entry: a dtype and head_dim pass when some forward version takes them
        # (the registry says which), and the refusal says what they take together: the head_dims those of
        # the dtype list (stages 01-02 take any up to 256 but keep N×N scores: never picked).
        for dtype, code in (("torch.float32", flashstages.FP32), ("torch.float16", flashstages.FP16)):
            they_take = flashstages._head_dims_text([i for i in self.every if i.in_dtypes & (1 << code)])
            self.assertTrue(they_take.startswith("["), they_take)
            for d in (16, 48, 64, 256, 257, 300):
                taken = any(i.in_dtypes & (1 << code) and i.takes_head_dim(d) for i in self.every)
                qkv = {n: Stand((2, 4, 100 if n == "q" else 130, d), dtype) for n in ("q", "k", "v")}
                with self.subTest(dtype=dtype, d=d, taken=taken):
                    if taken:
                        flashstages._check_attention(self.every, qkv["q"], qkv["k"], qkv["v"])
                    else:
                        # Stages 01-02 take any head_dim up to 256, but keep N×N scores: named, never run.
                        keepers = ["fs_naive_v1", "N×N scores in memory", "kernel='fs_naive_v1'"] if d <= 256 else []
                        self.refused(ValueError, [f"head_dim {d}: no forward version that the picking entry runs "
                                                  f"takes it in {dtype} (they take {they_take})", *keepers],
                                     info=self.every, **qkv)
        self.assertTrue(any(i.takes_head_dim(64) for i in self.every))

    def test_devices(self):
        self.refused(ValueError, ["k is on cpu", "CUDA"], k=Stand((2, 4, 130, 64), device="cpu"))
        self.refused(ValueError, ["q is on cpu"], q=Stand((2, 4, 100, 64), device="cpu"))
        self.refused(ValueError, ["v is on cuda:1", "same device"], v=Stand((2, 4, 130, 64), device="cuda:1"))
        self.refused(ValueError, ["out is on cpu"], out=Stand((2, 4, 100, 64), device="cpu"))

    def test_dtypes(self):
        f64 = dict(dtype="torch.float64")
        self.refused(TypeError, ["q is torch.float64"], q=Stand((2, 4, 100, 64), **f64),
                     k=Stand((2, 4, 130, 64), **f64), v=Stand((2, 4, 130, 64), **f64))
        # fp8 is the C interface's (stage 07 v9 with its scales): the torch binding names what it takes.
        f8 = dict(dtype="torch.float8_e4m3fn")
        self.refused(TypeError, ["q is torch.float8_e4m3fn", "torch.float16"], q=Stand((2, 4, 100, 128), **f8),
                     k=Stand((2, 4, 130, 128), **f8), v=Stand((2, 4, 130, 128), **f8))
        self.refused(TypeError, ["k is torch.bfloat16", "one dtype"], k=Stand((2, 4, 130, 64), dtype="torch.bfloat16"))
        self.refused(TypeError, ["lse is torch.float16"], lse=Stand((2, 4, 100)))
        fp32 = {n: Stand(s, dtype="torch.float32") for n, s in (("q", (2, 4, 100, 64)), ("k", (2, 4, 130, 64)),
                                                              ("v", (2, 4, 130, 64)))}
        self.refused(TypeError, ["fs_flash_fwd_v5 takes float16, bfloat16"], **fp32)

    def test_shapes(self):
        self.refused(ValueError, ["k has shape (3, 4, 130, 64)", "B = 2"], k=Stand((3, 4, 130, 64)),
                     v=Stand((3, 4, 130, 64)))
        self.refused(ValueError, ["v has shape (2, 4, 129, 64)"], v=Stand((2, 4, 129, 64)))
        self.refused(ValueError, ["v has shape (2, 2, 130, 64)", "must match"], v=Stand((2, 2, 130, 64)))
        self.refused(ValueError, ["q must have 4 dimensions"], q=Stand((4, 100, 64)))
        self.refused(ValueError, ["out has shape"], out=Stand((2, 4, 100, 32)))
        self.refused(ValueError, ["lse has shape"], lse=Stand((2, 4, 101), dtype="torch.float32"))
        d48 = {n: Stand(s[:3] + (48,)) for n, s in (("q", (2, 4, 100)), ("k", (2, 4, 130)), ("v", (2, 4, 130)))}
        self.refused(ValueError, ["head_dim 48", "[32, 64, 128, 256]"], **d48)
        self.refused(TypeError, ["q must be a torch.Tensor, got list"], q=[[1.0]])

    def test_grouped_query_heads(self):
        # K/V heads that divide q's 4 heads pass (grouped-query, multi-query); others are refused, named.
        for kv_heads in (2, 1):
            kv = Stand((2, kv_heads, 130, 64))
            _, k, _ = flashstages._check_attention(self.v5, *self.qkv(k=kv, v=kv))
            self.assertEqual(k.shape[1], kv_heads)
        for kv_heads in (3, 8):
            kv = Stand((2, kv_heads, 130, 64))
            self.refused(ValueError, [f"k and v have {kv_heads} heads, q 4", "divide"], k=kv, v=kv)

    def strided_names(self, problem=flashstages.PROBLEM_ATTENTION):
        """The versions of the registry that take strides: what a refusal of a strided tensor names."""
        names = [k.name for k in flashstages.kernels(self.lib, problem=problem) if k.strided]
        self.assertTrue(names)
        return names

    def test_model_layouts_pass_where_a_version_takes_strides(self):
        # q.transpose(1, 2) of [B, N, H, D] tensors, and slices of a packed QKV tensor: passed as they are,
        # no copy, to the picking entry and to a version that takes strides; out may be strided too.
        self.assertIn("fs_flash_fwd_v5", self.strided_names())
        model = dict(q=bnhd(2, 4, 100, 64), k=bnhd(2, 2, 130, 64, address=0x200000),
                     v=bnhd(2, 2, 130, 64, address=0x300000))
        qkv = {name: packed(2, 4, 100, 64, i) for i, name in enumerate("qkv")}
        for takes in (self.v5, self.every):
            for inputs in (model, qkv):
                with self.subTest(takes=len(takes), inputs=inputs["q"].strides):
                    passed = flashstages._check_attention(takes, inputs["q"], inputs["k"], inputs["v"],
                                                          {"out": bnhd(2, 4, 100, 64)}, None, True)
                    self.assertEqual([id(t) for t in passed], [id(inputs[n]) for n in "qkv"])  # not copied

    def test_a_version_that_takes_no_strides_refuses_them_naming_those_that_do(self):
        # Named: those that take strides and the dtype and head_dim (fp16), or that none does (fp32), and all.
        fp16 = [k.name for k in flashstages.kernels(self.lib, problem=flashstages.PROBLEM_ATTENTION)
                if k.strided and k.in_dtypes & (1 << flashstages.FP16) and k.takes_head_dim(64)]
        self.assertIn("fs_flash_fwd_v5", fp16)
        for kernel, dtype, words in (("fs_flash_fwd_v1", "torch.float16", [", ".join(fp16), "kernel=None runs one"]),
                                     ("fs_online_softmax_v1", "torch.float32",
                                      ["none of the forward versions that take strides", *self.strided_names(),
                                       "takes torch.float32 with head_dim 64"])):
            info = [flashstages._attention_kernel(self.lib, kernel)]
            self.assertFalse(info[0].strided)
            q = Stand((2, 4, 100, 64), dtype)
            kv = Stand((2, 4, 130, 64), dtype)
            self.refused(ValueError, ["k is not contiguous", "k.contiguous()", "make_contiguous=True",
                                      f"{kernel} takes contiguous tensors alone", *words],
                         info=info, q=q, k=bnhd(2, 4, 130, 64, dtype), v=kv)
            self.refused(ValueError, ["out is not contiguous", f"{kernel} takes contiguous tensors alone", *words],
                         info=info, q=q, k=kv, v=kv, out=bnhd(2, 4, 100, 64, dtype))
            # make_contiguous=True copies a strided input for it (and leaves the contiguous ones alone).
            k = bnhd(2, 4, 130, 64, dtype)
            passed = flashstages._check_attention(info, q, k, kv, make_contiguous=True)
            self.assertIs(passed[0], q)
            self.assertIsNot(passed[1], k)
            self.assertTrue(passed[1].is_contiguous())

    def test_the_default_refuses_strides_where_no_strided_version_takes_the_dtype(self):
        # The picking entry runs fp32 (stages 01-03) on contiguous tensors alone.
        names = self.strided_names()
        self.assertFalse(any(i.strided and i.in_dtypes & (1 << flashstages.FP32) for i in self.every))
        f32 = "torch.float32"
        self.refused(ValueError, ["v is not contiguous", "none of the forward versions that take strides",
                                  *names, "takes torch.float32 with head_dim 64"], info=self.every,
                     q=Stand((2, 4, 100, 64), f32), k=Stand((2, 4, 130, 64), f32), v=bnhd(2, 4, 130, 64, f32))

    def test_d_must_be_contiguous_and_rows_apart(self):
        # Whatever the version: a strided last dimension, or rows that share memory (an expanded view).
        every_other = Stand((2, 4, 130, 64), strides=(4 * 130 * 128, 130 * 128, 128, 2))
        expanded = Stand((2, 4, 130, 64), strides=(130 * 64, 0, 64, 1))
        for takes in (self.v5, self.every):
            self.refused(ValueError, ["k has strides (66560, 16640, 128, 2)", "last dimension (D) must be contiguous",
                                      "k.contiguous()"], info=takes, k=every_other)
            self.refused(ValueError, ["v has strides (8320, 0, 64, 1)", "rows overlap"], info=takes, v=expanded)
            self.refused(ValueError, ["out has strides", "last dimension (D)"], info=takes,
                         out=Stand((2, 4, 100, 64), strides=(4 * 100 * 128, 100 * 128, 128, 2)))
            passed = flashstages._check_attention(takes, *self.qkv(k=every_other, v=expanded), make_contiguous=True)
            self.assertTrue(all(t.is_contiguous() for t in passed))

    def test_lse_must_be_contiguous(self):
        for takes in (self.v5, self.every):
            self.refused(ValueError, ["lse is not contiguous"], info=takes,
                         lse=Stand((2, 4, 100), "torch.float32", strides=(100, 200, 1)))

    def test_what_empty_like_makes(self):
        # torch.empty_like's strides, as PyTorch 2.15 gives them for these layouts: a dense tensor's own,
        # else dense in its order of dimensions, a broadcast dimension deciding nothing (OnTheGpu holds the
        # function to PyTorch's on many more).
        for shape, strides, made in (((2, 4, 17, 64), (4352, 64, 256, 1), (4352, 64, 256, 1)),
                                     ((2, 4, 17, 64), (13056, 64, 768, 1), (4352, 64, 256, 1)),
                                     ((2, 4, 100, 64), (51200, 12800, 128, 1), (25600, 6400, 64, 1)),
                                     ((2, 3, 5, 8), (40, 0, 8, 1), (120, 40, 8, 1)),
                                     ((2, 3, 5, 8), (48, 16, 96, 1), (24, 8, 48, 1)),
                                     ((1, 4, 1, 64), (7, 64, 3, 1), (7, 64, 3, 1))):
            with self.subTest(strides=strides):
                self.assertEqual(flashstages._empty_like_strides(Stand(shape, strides=strides)), made)

    def test_the_strides_reach_the_params(self):
        # Every tensor's own {batch, head, row} strides, contiguous ones included (they spell out the
        # contiguous layout, which the library reads as that layout).
        q, k, v = bnhd(2, 4, 100, 64), bnhd(2, 2, 130, 64, address=0x200000), bnhd(2, 2, 130, 64, address=0x300000)
        out, lse = bnhd(2, 4, 100, 64, address=0x400000), Stand((2, 4, 100), "torch.float32", address=0x500000)
        p = flashstages.attention_params(q, k, v, out, lse, causal=True)
        self.assertEqual([list(p.q_strides), list(p.k_strides), list(p.v_strides), list(p.o_strides)],
                         [[100 * 4 * 64, 64, 4 * 64], [130 * 2 * 64, 64, 2 * 64], [130 * 2 * 64, 64, 2 * 64],
                          [100 * 4 * 64, 64, 4 * 64]])
        self.assertEqual((p.q, p.k, p.v, p.o, p.lse, p.kv_heads), (0x100000, 0x200000, 0x300000, 0x400000, 0x500000, 2))
        p = flashstages.attention_params(*self.qkv(), Stand((2, 4, 100, 64)))
        self.assertEqual([list(p.q_strides), list(p.k_strides), list(p.o_strides)],
                         [[4 * 100 * 64, 100 * 64, 64], [4 * 130 * 64, 130 * 64, 64], [4 * 100 * 64, 100 * 64, 64]])

    def test_pick_lays_out_its_stand_ins_as_the_calls_would(self):
        # O (and dO, dQ) as empty_like(q): q's strides for a dense q; the backward reads a contiguous copy of
        # what is not dense (a packed QKV slice), whose gradient is contiguous too. Stand-ins lie past every
        # input's span, 256-byte aligned.
        q, k, v = bnhd(2, 4, 100, 64), bnhd(2, 2, 130, 64, address=0x200000), bnhd(2, 2, 130, 64, address=0x300000)
        span_end = 0x300000 + ((2 - 1) * 130 * 2 * 64 + (2 - 1) * 64 + (130 - 1) * 2 * 64 + 64) * 2
        for backward in (False, True):
            p = flashstages._pick_params(q, k, v, True, backward, False)
            fwd = p.fwd if backward else p
            self.assertEqual([list(fwd.q_strides), list(fwd.k_strides), list(fwd.o_strides)],
                             [[100 * 4 * 64, 64, 4 * 64], [130 * 2 * 64, 64, 2 * 64], [100 * 4 * 64, 64, 4 * 64]])
            self.assertEqual((fwd.q, fwd.k, fwd.v), (0x100000, 0x200000, 0x300000))  # read where they lie
            self.assertEqual(fwd.o, (span_end + 255) // 256 * 256)
        # Packed slices: O dense in their order of dimensions, [B, N, H, D] (empty_like); the forward reads
        # them in place, the backward contiguous copies.
        qkv = [packed(2, 4, 100, 64, i) for i in range(3)]
        forward = flashstages._pick_params(*qkv, False, False, False)
        self.assertEqual([list(forward.q_strides), list(forward.o_strides)],
                         [[100 * 3 * 4 * 64, 64, 3 * 4 * 64], [100 * 4 * 64, 64, 4 * 64]])
        p = flashstages._pick_params(*qkv, False, True, False)
        self.assertEqual([list(p.fwd.q_strides), list(p.fwd.v_strides), list(p.fwd.o_strides)],
                         [[4 * 100 * 64, 100 * 64, 64], [4 * 100 * 64, 100 * 64, 64], [100 * 4 * 64, 64, 4 * 64]])
        self.assertNotIn(p.fwd.q, [t.data_ptr() for t in qkv])  # a copy's stand-in
        addresses = [p.fwd.q, p.fwd.k, p.fwd.v, p.fwd.o, p.fwd.lse, p.d_o, p.dq, p.dk, p.dv]
        self.assertEqual(len(set(addresses)), len(addresses))
        self.assertTrue(all(a % 256 == 0 for a in addresses))

    def test_without_pytorch_it_says_what_to_install(self):
        # None in sys.modules is what an import of a package that is not installed finds: ModuleNotFoundError.
        saved = sys.modules.get("torch")
        sys.modules["torch"] = None
        try:
            with self.assertRaises(ModuleNotFoundError) as caught:
                flashstages.attention(*self.qkv())  # after its checks, which pass
            with self.assertRaises(ModuleNotFoundError):
                flashstages.pick(*self.qkv())  # likewise
            if flashstages._ops is None:  # registered at import when this process had PyTorch already
                with self.assertRaises(ModuleNotFoundError):
                    flashstages.flash_attention(*self.qkv())
                with self.assertRaises(ModuleNotFoundError):
                    flashstages.torch_ops()
        finally:
            if saved is None:
                del sys.modules["torch"]
            else:
                sys.modules["torch"] = saved
        message = str(caught.exception)
        self.assertEqual(caught.exception.name, "torch")
        for words in ("has no PyTorch", "-m pip install torch", "https://pytorch.org/get-started/locally/",
                      "needs no PyTorch"):
            self.assertIn(words, message)

    def test_the_package_and_its_c_interface_need_no_pytorch(self):
        # A fresh Python where PyTorch cannot be imported: the package imports without touching it, lists
        # the library, asks the picking query (refused without a GPU, or answered), and the tensor
        # functions name what to install.
        code = "\n".join([
            "import sys",
            "sys.modules['torch'] = None  # what an import finds when PyTorch is not installed",
            "import flashstages",
            "lib = flashstages.library()",
            "print('kernels', len(flashstages.kernels()))",
            "p = flashstages.AttentionParams(1, 2, 17, 17, 64, 0.0, 0, flashstages.FP16, 0x10000, 0x20000, 0x30000,",
            "                                0x40000, 0x50000)",
            "try:",
            "    print('pick', flashstages.query_pick(lib, p).name)",
            "except flashstages.FlashstagesError as e:",
            "    print('pick refused', e.name)",
            "for call in (lambda: flashstages.torch_ops(), lambda: flashstages.flash_attention(None, None, None)):",
            "    try:",
            "        call()",
            "    except ModuleNotFoundError as e:",
            "        print('needs torch', 'pip install torch' in str(e))",
        ])
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env={**os.environ, "PYTHONPATH": HERE})
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        self.assertEqual(lines[0], f"kernels {self.lib.fs_kernel_count()}")
        self.assertTrue(lines[1].startswith("pick "), lines)
        if not has_gpu():
            self.assertEqual(lines[1], "pick refused FS_ERR_CUDA")
        self.assertEqual(lines[2:], ["needs torch True"] * 2)

    def test_kernels_lists_the_whole_library_and_each_kernel_reads_by_name(self):
        every = flashstages.kernels()  # no argument: the process's library
        self.assertEqual(len(every), self.lib.fs_kernel_count())
        self.assertEqual([k.name for k in every], [k.name for k in flashstages.kernels(self.lib)])
        self.assertNotIn("object at 0x", repr(every))
        v5 = self.v5[0]
        self.assertTrue(repr(v5).startswith(
            "KernelInfo(name='fs_flash_fwd_v5', stage='stage04', version='v5', problem='attention', "
            "dtypes=['fp16', 'bf16'], head_dims=[32, 64, 128, 256], archs=["), repr(v5))
        self.assertIn(f"technique={v5.technique.decode()!r})", repr(v5))
        v0 = flashstages._attention_kernel(self.lib, "fs_flash_bwd_v0", flashstages.PROBLEM_ATTENTION_BWD)
        self.assertIn("problem='attention_bwd', dtypes=['fp32', 'fp16', 'bf16'], head_dims='1 to 256'", repr(v0))
        gemm = flashstages.kernels(problem=flashstages.PROBLEM_GEMM)[0]
        self.assertIn("problem='gemm'", repr(gemm))
        self.assertNotIn("head_dims", repr(gemm))  # a GEMM has none

    def test_unknown_kernel(self):
        with self.assertRaises(ValueError) as caught:
            flashstages._attention_kernel(self.lib, "fs_flash_fwd_v9")
        self.assertIn("fs_flash_fwd_v5", str(caught.exception))  # the ones it has are listed
        with self.assertRaises(ValueError):
            flashstages._attention_kernel(self.lib, "fs_gemm_v1")  # a GEMM is not an attention kernel


class FlashChecks(unittest.TestCase):
    """flash_attention()'s operators refuse, named and before any library call, what their forward or their
    backward would refuse: the forward's checks (_check_flash_attention, in its real and its fake
    implementation) cover the backward's too. The stand-ins are no tensors: a call past the checks would
    fail otherwise."""

    @classmethod
    def setUpClass(cls):
        cls.lib = flashstages.library()
        cls.backward_versions = flashstages._takes(cls.lib, None, flashstages.PROBLEM_ATTENTION_BWD)  # picked

    def qkv(self, dtype="torch.float16", d=64, kv_heads=4, nq=100, nk=130, **change):
        tensors = dict(q=Stand((2, 4, nq, d), dtype), k=Stand((2, kv_heads, nk, d), dtype),
                       v=Stand((2, kv_heads, nk, d), dtype))
        tensors.update(change)
        return tensors["q"], tensors["k"], tensors["v"]

    def check(self, causal=False, kernel=None, backward_kernel=None, **qkv):
        flashstages._check_flash_attention(self.lib, *self.qkv(**qkv), causal, kernel, backward_kernel)

    def refused(self, error, words, **call):
        with self.assertRaises(error) as caught:
            self.check(**call)
        for word in words:
            self.assertIn(word, str(caught.exception))

    def test_a_valid_call_passes_the_checks(self):
        for dtype in ("torch.float16", "torch.bfloat16"):
            for d in (64, 128):
                self.check(causal=True, dtype=dtype, d=d)
                self.check(causal=True, dtype=dtype, d=d, kernel="fs_flash_fwd_v5", backward_kernel="fs_flash_bwd_v10")

    def test_devices_and_contiguity(self):
        self.refused(ValueError, ["q is on cpu", "CUDA"], q=Stand((2, 4, 100, 64), device="cpu"))
        self.refused(ValueError, ["v is on cuda:1", "same device"], v=Stand((2, 4, 130, 64), device="cuda:1"))
        self.refused(ValueError, ["k is not contiguous", "k.contiguous()", "no option to copy",
                                  "fs_flash_fwd_v1 takes contiguous tensors alone", "fs_flash_fwd_v5"],
                     k=bnhd(2, 4, 130, 64), kernel="fs_flash_fwd_v1")
        self.refused(ValueError, ["k has strides", "last dimension (D)", "no option to copy"],
                     k=Stand((2, 4, 130, 64), strides=(4 * 130 * 128, 130 * 128, 128, 2)))

    def bnhd_qkv(self, d=64, kv_heads=4):
        return dict(q=bnhd(2, 4, 100, d), k=bnhd(2, kv_heads, 130, d, address=0x200000),
                    v=bnhd(2, kv_heads, 130, d, address=0x300000))

    def test_model_layouts_pass_where_both_passes_take_strides(self):
        # [B, N, H, D] views: the forward reads them in place, and so does the backward (their gradients are
        # laid out as they are), so a version of each pass must take strides.
        self.check(causal=True, **self.bnhd_qkv())
        self.check(causal=True, kv_heads=2, **self.bnhd_qkv(kv_heads=2))
        self.check(kernel="fs_flash_fwd_v5", backward_kernel="fs_flash_bwd_v10", **self.bnhd_qkv(d=128))
        backward_names = [k.name for k in flashstages.kernels(self.lib, problem=flashstages.PROBLEM_ATTENTION_BWD)
                          if k.strided]
        self.assertIn("fs_flash_bwd_v10", backward_names)
        self.refused(ValueError, ["q is not contiguous", "q.contiguous()",
                                  "the backward, fs_flash_bwd_v2, takes contiguous tensors alone", *backward_names],
                     backward_kernel="fs_flash_bwd_v2", **self.bnhd_qkv())

    def test_inputs_that_are_not_dense(self):
        # The forward reads them in place; the backward reads contiguous copies (empty_like cannot lay out a
        # gradient as they are), and O, which the forward makes dense in q's order of dimensions: for packed
        # QKV slices [B, N, H, D], so the backward must take strides still; for a q whose rows are cut short
        # (D sliced from a wider tensor) contiguous, so any backward runs it.
        qkv = {name: packed(2, 4, 100, 64, i) for i, name in enumerate("qkv")}
        self.check(causal=True, **qkv)
        self.check(causal=True, backward_kernel="fs_flash_bwd_v10", **qkv)
        self.refused(ValueError, ["q is not contiguous", "the forward writes O in its order of dimensions",
                                  "(strides (25600, 64, 256, 1))", "the backward, fs_flash_bwd_v2, takes contiguous",
                                  "fs_flash_bwd_v10"], backward_kernel="fs_flash_bwd_v2", **qkv)
        self.refused(ValueError, ["q is not contiguous", "fs_flash_fwd_v1 takes contiguous tensors alone"],
                     kernel="fs_flash_fwd_v1", **qkv)
        cut = Stand((2, 4, 100, 64), strides=(4 * 100 * 128, 100 * 128, 128, 1))
        self.check(causal=True, backward_kernel="fs_flash_bwd_v2", q=cut)

    def test_dtypes(self):
        self.refused(TypeError, ["q is torch.float64"], dtype="torch.float64")
        self.refused(TypeError, ["k is torch.bfloat16", "one dtype"], k=Stand((2, 4, 130, 64), "torch.bfloat16"))
        self.refused(TypeError, ["q must be a torch.Tensor"], q=[[1.0]])
        self.refused(TypeError, ["fs_flash_fwd_v5 takes float16, bfloat16"], dtype="torch.float32",
                     kernel="fs_flash_fwd_v5")
        # The forward would take fp32 (stages 01 to 03); a named backward that does not is refused first.
        self.refused(TypeError, ["q is torch.float32: the backward, fs_flash_bwd_v10, takes float16, bfloat16"],
                     dtype="torch.float32", backward_kernel="fs_flash_bwd_v10")

    def test_head_dims_only_the_backward_refuses_are_refused_up_front(self):
        # The forward takes 32 and 256; the backward named does not: refused before anything runs, naming it.
        for d in (32, 256):
            self.refused(ValueError, [f"head_dim {d}", "the backward, fs_flash_bwd_v10,", "[64, 128]"], d=d,
                         backward_kernel="fs_flash_bwd_v10")
            self.check(d=d, kernel="fs_flash_fwd_v5", backward_kernel="fs_flash_bwd_v0")  # v0: any up to 256
        self.refused(ValueError, ["head_dim 48", "fs_flash_fwd_v5"], d=48, kernel="fs_flash_fwd_v5")
        self.refused(ValueError, ["head_dim 300", "no forward version"], d=300)

    def test_the_default_never_runs_a_version_that_keeps_n_by_n_scores(self):
        # Stages 01-02 and stage 05's v0 keep N×N scores in DRAM: the picking entries leave them out, and a
        # problem only they take is refused up front, naming them and the option that runs one.
        every = flashstages.kernels(self.lib)
        keepers = sorted(k.name for k in every if k.keeps_scores)
        self.assertEqual(keepers, ["fs_flash_bwd_v0", "fs_naive_v1", "fs_tiled_v1"])
        self.assertIn("keeps_scores=True", repr(next(k for k in every if k.name == "fs_flash_bwd_v0")))
        self.assertNotIn("keeps_scores", repr(next(k for k in every if k.name == "fs_flash_fwd_v5")))
        for problem in (flashstages.PROBLEM_ATTENTION, flashstages.PROBLEM_ATTENTION_BWD):
            self.assertFalse(any(k.keeps_scores for k in flashstages._takes(self.lib, None, problem)))
        # head_dim 256: stage 04's forward takes it, and of the backwards only v0.
        self.refused(ValueError, ["head_dim 256: no backward version that the picking entry runs",
                                  "fs_flash_bwd_v0 takes it but keeps N×N scores in memory",
                                  "(backward_kernel='fs_flash_bwd_v0')"], d=256)
        self.check(d=256, backward_kernel="fs_flash_bwd_v0")

    def test_the_default_refuses_exactly_what_no_version_of_either_pass_takes(self):
        # The picking entries run some version that takes the problem: the registry decides what passes.
        forward = flashstages._takes(self.lib, None, flashstages.PROBLEM_ATTENTION)
        for dtype, code in (("torch.float32", flashstages.FP32), ("torch.float16", flashstages.FP16),
                            ("torch.bfloat16", flashstages.BF16)):
            for d in (8, 32, 48, 64, 128, 200, 256, 257):
                def taken(versions):
                    return any(i.in_dtypes & (1 << code) and i.takes_head_dim(d) for i in versions)
                with self.subTest(dtype=dtype, d=d):
                    if taken(forward) and taken(self.backward_versions):
                        self.check(dtype=dtype, d=d)
                    else:
                        self.refused(ValueError, [f"head_dim {d}: no "], dtype=dtype, d=d)

    def test_what_several_versions_take_together_is_named(self):
        # Made-up backward versions, so that the message is tested with lists the registry does not give.
        def info(head_dims=(), max_head_dim=0, dtypes=(flashstages.FP16, flashstages.BF16)):
            k = flashstages.KernelInfo(entry=b"fs_made_up", in_dtypes=sum(1 << t for t in dtypes),
                                       num_head_dims=len(head_dims), max_head_dim=max_head_dim)
            for i, d in enumerate(head_dims):
                k.head_dims[i] = d
            return k
        tensor_core = [info((64, 128)), info((64, 128))]
        with self.assertRaises(ValueError) as caught:
            flashstages._check_takes(tensor_core, "torch.float16", 256, backward=True)
        self.assertEqual(str(caught.exception), "head_dim 256: no backward version that the picking entry runs "
                                                "takes it in torch.float16 (they take [64, 128])")
        with self.assertRaises(TypeError) as caught:
            flashstages._check_takes(tensor_core, "torch.float32", 64, backward=True)
        self.assertEqual(str(caught.exception),
                         "q is torch.float32: no backward version that the picking entry runs takes it")
        mixed = tensor_core + [info(max_head_dim=96), info((256,))]
        flashstages._check_takes(mixed, "torch.float16", 80, backward=True)
        with self.assertRaises(ValueError) as caught:
            flashstages._check_takes(mixed, "torch.float16", 200)
        self.assertIn("no forward version", str(caught.exception))
        self.assertIn("(they take 1 to 96 and [128, 256])", str(caught.exception))

    def test_grouped_kv_passes_the_checks(self):
        # The backward sums dK, dV over each group: a grouping passes, a non-divisor does not.
        for kv_heads in (2, 1):
            self.check(causal=True, kv_heads=kv_heads)
        self.refused(ValueError, ["divide"], kv_heads=3)

    def test_causal_needs_no_more_queries_than_keys(self):
        self.refused(ValueError, ["causal with Nq = 130 > Nk = 100"], causal=True, nq=130, nk=100)
        self.check(causal=False, nq=130, nk=100)

    def test_unknown_kernels(self):
        with self.assertRaises(ValueError) as caught:
            self.check(backward_kernel="fs_flash_fwd_v5")
        self.assertIn("not an attention backward kernel", str(caught.exception))
        self.assertIn("fs_flash_bwd_v2", str(caught.exception))
        with self.assertRaises(ValueError):
            self.check(kernel="fs_flash_bwd_v2")

    def test_the_backward_operator_checks_out_lse_and_d_o(self):
        q, k, v = self.qkv()
        ok = dict(d_o=Stand((2, 4, 100, 64)), out=Stand((2, 4, 100, 64)), lse=Stand((2, 4, 100), "torch.float32"))

        def refused(error, words, **change):
            t = {**ok, **change}
            with self.assertRaises(error) as caught:
                flashstages._check_flash_backward(self.lib, t["d_o"], q, k, v, t["out"], t["lse"], False, None)
            for word in words:
                self.assertIn(word, str(caught.exception))

        flashstages._check_flash_backward(self.lib, ok["d_o"], q, k, v, ok["out"], ok["lse"], True, None)
        refused(ValueError, ["d_o has shape (2, 4, 99, 64)", "q's"], d_o=Stand((2, 4, 99, 64)))
        refused(TypeError, ["d_o is torch.bfloat16", "q, k, v, out, d_o must have one dtype"],
                d_o=Stand((2, 4, 100, 64), "torch.bfloat16"))
        # dO must be laid out as O, which the library reads it as; both strided where the backward takes it.
        refused(ValueError, ["d_o has strides (25600, 64, 256, 1), out (25600, 6400, 64, 1)", "laid out as O"],
                d_o=bnhd(2, 4, 100, 64))
        flashstages._check_flash_backward(self.lib, bnhd(2, 4, 100, 64), *self.qkv(q=bnhd(2, 4, 100, 64)),
                                          bnhd(2, 4, 100, 64, address=0x400000), ok["lse"], True, None)
        with self.assertRaises(ValueError) as caught:
            flashstages._check_flash_backward(self.lib, bnhd(2, 4, 100, 64), q, k, v, ok["out"], ok["lse"], False,
                                              "fs_flash_bwd_v2")
        self.assertIn("d_o is not contiguous", str(caught.exception))
        self.assertIn("the backward, fs_flash_bwd_v2, takes contiguous tensors alone", str(caught.exception))
        refused(ValueError, ["d_o has strides", "last dimension (D)"],
                d_o=Stand((2, 4, 100, 64), strides=(4 * 100 * 128, 100 * 128, 128, 2)))
        refused(ValueError, ["lse is not contiguous"], lse=Stand((2, 4, 100), "torch.float32", strides=(100, 200, 1)))
        # A q that is not dense is read as a contiguous copy: no strided version needed for it.
        flashstages._check_flash_backward(self.lib, ok["d_o"], packed(2, 4, 100, 64, 0), k, v, ok["out"], ok["lse"],
                                          False, "fs_flash_bwd_v2")
        refused(ValueError, ["d_o is on cpu"], d_o=Stand((2, 4, 100, 64), device="cpu"))
        refused(TypeError, ["lse is torch.float16"], lse=Stand((2, 4, 100)))
        refused(ValueError, ["lse has shape (2, 4, 101)"], lse=Stand((2, 4, 101), "torch.float32"))
        refused(ValueError, ["out has shape"], out=Stand((2, 4, 100, 32)))
        with self.assertRaises(ValueError):
            flashstages._check_flash_backward(self.lib, ok["d_o"], q, k, v, ok["out"], ok["lse"], False,
                                              "fs_flash_fwd_v5")


class PickChecks(unittest.TestCase):
    """pick() checks its tensors as attention() does before it asks the library."""

    def test_refusals_come_first(self):
        q, k = Stand((2, 4, 100, 64)), Stand((2, 4, 130, 64))
        with self.assertRaises(ValueError) as caught:
            flashstages.pick(q, k, Stand((2, 4, 130, 64), device="cpu"))
        self.assertIn("v is on cpu", str(caught.exception))
        with self.assertRaises(ValueError) as caught:
            flashstages.pick(q, k, k, deterministic=True)
        self.assertIn("pass backward=True", str(caught.exception))
        with self.assertRaises(ValueError) as caught:
            flashstages.pick(Stand((2, 4, 100, 300)), Stand((2, 4, 130, 300)), Stand((2, 4, 130, 300)), backward=True)
        self.assertIn("no backward version", str(caught.exception))
        with self.assertRaises(ValueError) as caught:
            flashstages.pick(q, Stand((2, 4, 130, 64), strides=(4 * 130 * 128, 130 * 128, 128, 2)), k)
        self.assertIn("k has strides", str(caught.exception))
        f32 = "torch.float32"
        with self.assertRaises(ValueError) as caught:
            flashstages.pick(Stand((2, 4, 100, 64), f32), bnhd(2, 4, 130, 64, f32), Stand((2, 4, 130, 64), f32))
        self.assertIn("k is not contiguous", str(caught.exception))
        self.assertIn("none of the forward versions that take strides", str(caught.exception))

    def test_the_backward_refuses_more_queries_than_keys_under_the_mask(self):
        q, k = Stand((2, 4, 130, 64)), Stand((2, 4, 100, 64))
        with self.assertRaises(ValueError) as caught:
            flashstages.pick(q, k, k, causal=True, backward=True)
        self.assertIn("causal with Nq = 130 > Nk = 100", str(caught.exception))


class Modules(unittest.TestCase):
    """flashstages.ring and flashstages.context_parallel come at first use; other names do not exist."""

    def test_submodules_at_first_use(self):
        self.assertIn("__getattr__", vars(flashstages))
        with self.assertRaises(AttributeError):
            flashstages.no_such_thing  # noqa: B018


class Lookup(unittest.TestCase):
    """The library is found from $FLASHSTAGES_LIBRARY, then the build tree, then the install prefix."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.real = flashstages.find_library()
        # A checkout of our own: python/flashstages (a copy of the package) beside build/release/common.
        shutil.copytree(os.path.join(HERE, "flashstages"), os.path.join(self.tmp, "checkout", "python", "flashstages"),
                        ignore=shutil.ignore_patterns("__pycache__", "_checkout.py"))

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def place(self, *parts):
        path = os.path.join(self.tmp, *parts, "libflashstages.so")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        shutil.copy(self.real, path)
        return path

    def found(self, **env):
        environment = {k: v for k, v in os.environ.items() if k not in ("FLASHSTAGES_LIBRARY", "CMAKE_INSTALL_PREFIX")}
        environment.update(env)
        code = "import flashstages; print(flashstages.find_library())"
        p = subprocess.run([sys.executable, "-c", code], cwd=self.tmp, capture_output=True, text=True,
                           env={**environment, "PYTHONPATH": os.path.join(self.tmp, "checkout", "python")})
        return p.stdout.strip() if p.returncode == 0 else "ERROR " + p.stderr.strip().splitlines()[-1]

    def test_order(self):
        prefix = self.place("prefix", "lib")
        self.assertEqual(self.found(CMAKE_INSTALL_PREFIX=os.path.join(self.tmp, "prefix")), prefix)
        tree = self.place("checkout", "build", "release", "common")
        self.assertEqual(self.found(CMAKE_INSTALL_PREFIX=os.path.join(self.tmp, "prefix")), tree)
        chosen = self.place("elsewhere")
        self.assertEqual(self.found(FLASHSTAGES_LIBRARY=chosen, CMAKE_INSTALL_PREFIX=os.path.join(self.tmp, "prefix")),
                         chosen)
        missing = self.found(FLASHSTAGES_LIBRARY=os.path.join(self.tmp, "nothing.so"))
        self.assertIn("FileNotFoundError", missing)

    def test_nothing_found_says_where_to_look(self):
        if flashstages._capi.ctypes.util.find_library("flashstages") or os.path.exists("/usr/local/lib/libflashstages.so"):
            self.skipTest("a libflashstages is installed system-wide on this machine")
        self.assertIn("FLASHSTAGES_LIBRARY", self.found())


class OnTheGpu(unittest.TestCase):
    def reference(self, q, k, v, causal):
        import torch
        from torch.nn.attention.bias import causal_lower_right
        q64, k64, v64 = q.double(), k.double(), v.double()
        mask = causal_lower_right(q.shape[2], k.shape[2]) if causal else None
        return torch.nn.functional.scaled_dot_product_attention(q64, k64, v64, attn_mask=mask)

    def torch_kernels(self, lib):
        """The forward kernels the torch binding runs on this GPU: those that take fp32, fp16 or bf16 (stage 07's
        v9 takes fp8 alone, with scales flashstages.attention does not pass: test_ctypes reaches it through the C
        struct) and that the library's device check lets run here (stage 07's need sm_90a)."""
        sixteen_or_32 = (1 << flashstages.FP32) | (1 << flashstages.FP16) | (1 << flashstages.BF16)
        return [info for info in flashstages.kernels(lib, problem=flashstages.PROBLEM_ATTENTION)
                if info.in_dtypes & sixteen_or_32 and self.runs_here(lib, info)]

    def dtype_and_tolerance(self, info):
        """fp16 for a kernel that takes it and not fp32, else fp32; the error allowed against fp64."""
        import torch
        fp16 = info.in_dtypes & (1 << flashstages.FP16) and not info.in_dtypes & (1 << flashstages.FP32)
        return (torch.float16, 4e-3) if fp16 else (torch.float32, 1e-4)

    def test_every_attention_kernel_matches_sdpa(self):
        import torch
        torch.manual_seed(0)
        lib = flashstages.library()
        for info in self.torch_kernels(lib):
            dtype, tol = self.dtype_and_tolerance(info)
            for nq, nk, causal in ((200, 200, True), (100, 230, True), (230, 100, False)):
                with self.subTest(kernel=info.name, nq=nq, nk=nk, causal=causal):
                    q = torch.rand(2, 3, nq, 64, device="cuda", dtype=dtype) * 2 - 1
                    k, v = (torch.rand(2, 3, nk, 64, device="cuda", dtype=dtype) * 2 - 1 for _ in range(2))
                    o = torch.full_like(q, float("nan"))
                    flashstages.attention(q, k, v, causal=causal, out=o, kernel=info.name)
                    torch.cuda.synchronize()
                    self.assertLess((o.double() - self.reference(q, k, v, causal)).abs().max().item(), tol)

    def test_grouped_query_heads_match_sdpa(self):
        # 4 query heads over 2 K/V heads and over 1, prefill and decoding; the reference repeats each K/V
        # head over its group (what SDPA's enable_gqa=True computes).
        import torch
        torch.manual_seed(1)
        lib = flashstages.library()
        for info in self.torch_kernels(lib):
            dtype, tol = self.dtype_and_tolerance(info)
            for kv_heads, nq, nk, causal in ((2, 100, 230, True), (1, 1, 3000, False), (2, 1, 3000, True)):
                with self.subTest(kernel=info.name, kv_heads=kv_heads, nq=nq, nk=nk, causal=causal):
                    q = torch.rand(2, 4, nq, 64, device="cuda", dtype=dtype) * 2 - 1
                    k, v = (torch.rand(2, kv_heads, nk, 64, device="cuda", dtype=dtype) * 2 - 1 for _ in range(2))
                    o = torch.full_like(q, float("nan"))
                    flashstages.attention(q, k, v, causal=causal, out=o, kernel=info.name)
                    torch.cuda.synchronize()
                    group = 4 // kv_heads
                    ref = self.reference(q, k.repeat_interleave(group, 1), v.repeat_interleave(group, 1), causal)
                    self.assertLess((o.double() - ref).abs().max().item(), tol)

    def test_the_default_matches_sdpa(self):
        # kernel=None: the picking entry, in every dtype attention() takes, with the version pick() names.
        import torch
        torch.manual_seed(6)
        for dtype, tol in ((torch.float32, 1e-4), (torch.float16, 4e-3), (torch.bfloat16, 1e-2)):
            for nq, nk, causal in ((200, 200, True), (100, 230, True), (230, 100, False)):
                q = torch.rand(2, 4, nq, 64, device="cuda", dtype=dtype) * 2 - 1
                k, v = (torch.rand(2, 2, nk, 64, device="cuda", dtype=dtype) * 2 - 1 for _ in range(2))
                picked = flashstages.pick(q, k, v, causal=causal)
                with self.subTest(dtype=str(dtype), nq=nq, nk=nk, causal=causal, picked=picked.name):
                    o = flashstages.attention(q, k, v, causal=causal)
                    torch.cuda.synchronize()
                    ref = self.reference(q, k.repeat_interleave(2, 1), v.repeat_interleave(2, 1), causal)
                    self.assertLess((o.double() - ref).abs().max().item(), tol)

    def test_empty_like_strides_are_pytorchs(self):
        # The checks predict what torch.empty_like makes (flashstages._empty_like_strides): every permutation
        # of small shapes, sliced (not dense), with and without a broadcast dimension. Needs PyTorch alone.
        import itertools
        import torch
        base = torch.empty(4, 6, 6, 6, 2)
        for shape in itertools.product((1, 2, 3), repeat=4):
            cut = base[(*[slice(0, n) for n in shape], 0)]
            for order in itertools.permutations(range(4)):
                for t in (cut.permute(*order), cut.contiguous().permute(*order)):
                    wide = [i for i, n in enumerate(t.shape) if n == 1][:1]
                    for u in [t] + [t.expand(*[3 if i in wide else n for i, n in enumerate(t.shape)])] * bool(wide):
                        self.assertEqual(flashstages._empty_like_strides(u), torch.empty_like(u).stride(),
                                         (tuple(u.shape), u.stride()))

    def runs_here(self, lib, info):
        """Whether the version runs on this GPU (stage 07's need sm_90a): the library's device check."""
        import torch
        return lib.fs_kernel_check_device(ctypes.byref(info), torch.cuda.current_device()) == 0

    def test_model_layouts_run_in_place(self):
        # q, k, v as a model holds them, x.transpose(1, 2) of [B, N, H, D] tensors: odd sizes, Nq != Nk, K/V
        # heads grouped, on every version that takes strides and on the picking entry (which runs one: pick()
        # says so). Each reads them in place: out, made as empty_like(q), comes back in their layout (a copy
        # of q would have been contiguous, and so out), even with make_contiguous=True, which copies only
        # for a version that takes no strides.
        import torch
        torch.manual_seed(9)
        lib = flashstages.library()
        strided = [info.name for info in self.torch_kernels(lib) if info.strided]
        self.assertIn("fs_flash_fwd_v5", strided)
        for dtype, tol in ((torch.float16, 4e-3), (torch.bfloat16, 1e-2)):
            for kernel in strided + [None]:
                for b, h, kv_heads, nq, nk, causal in ((2, 4, 4, 17, 17, True), (1, 4, 2, 100, 230, True),
                                                       (2, 6, 2, 230, 100, False), (1, 4, 1, 100, 100, True)):
                    q = (torch.rand(b, nq, h, 64, device="cuda", dtype=dtype) * 2 - 1).transpose(1, 2)
                    k, v = ((torch.rand(b, nk, kv_heads, 64, device="cuda", dtype=dtype) * 2 - 1).transpose(1, 2)
                            for _ in range(2))
                    with self.subTest(dtype=str(dtype), kernel=kernel, kv_heads=kv_heads, nq=nq, nk=nk, causal=causal):
                        if kernel is None:
                            self.assertTrue(flashstages.pick(q, k, v, causal=causal).info.strided)
                        o = flashstages.attention(q, k, v, causal=causal, kernel=kernel, make_contiguous=True)
                        torch.cuda.synchronize()
                        self.assertEqual(o.stride(), q.stride())
                        self.assertTrue(o.transpose(1, 2).is_contiguous())
                        group = h // kv_heads
                        ref = self.reference(q, k.repeat_interleave(group, 1), v.repeat_interleave(group, 1), causal)
                        self.assertLess((o.double() - ref).abs().max().item(), tol)

    def test_packed_qkv_slices_and_an_out_of_the_models_layout(self):
        # q, k, v sliced from one packed [B, N, 3, H, D] tensor (not dense: out, empty_like(q), is dense in
        # their order of dimensions, [B, N, H, D]);
        # a version that takes no strides refuses them, or runs a copy with make_contiguous=True; an out given
        # in the [B, N, H, D] layout is written there.
        import torch
        torch.manual_seed(10)
        qkv = torch.rand(2, 100, 3, 4, 64, device="cuda", dtype=torch.float16) * 2 - 1
        q, k, v = (t.transpose(1, 2) for t in qkv.unbind(2))
        ref = self.reference(q, k, v, True)
        o = flashstages.attention(q, k, v, causal=True)
        self.assertTrue(o.transpose(1, 2).is_contiguous())  # dense in q's order: [B, N, H, D]
        with self.assertRaises(ValueError) as caught:
            flashstages.attention(q, k, v, causal=True, kernel="fs_flash_fwd_v1")
        self.assertIn("fs_flash_fwd_v1 takes contiguous tensors alone", str(caught.exception))
        copied = flashstages.attention(q, k, v, causal=True, kernel="fs_flash_fwd_v1", make_contiguous=True)
        out = torch.full((2, 100, 4, 64), float("nan"), device="cuda", dtype=torch.float16).transpose(1, 2)
        given = flashstages.attention(q, k, v, causal=True, out=out)
        torch.cuda.synchronize()
        self.assertIs(given, out)
        for result in (o, copied, given):
            self.assertLess((result.double() - ref).abs().max().item(), 4e-3)

    def test_cpu_tensors_are_refused_and_the_context_survives(self):
        import torch
        q = torch.rand(1, 2, 64, 64, dtype=torch.float16)
        with self.assertRaises(ValueError):
            flashstages.attention(q, q.cuda(), q.cuda())
        with self.assertRaises(ValueError):  # a non-contiguous view
            g = torch.rand(1, 2, 64, 128, device="cuda", dtype=torch.float16)[..., ::2]
            flashstages.attention(g, g.contiguous(), g.contiguous())
        torch.cuda.synchronize()  # no sticky error: the device is still usable
        g = torch.rand(1, 2, 64, 128, device="cuda", dtype=torch.float16)[..., ::2]
        o = flashstages.attention(g, g, g, make_contiguous=True)
        ref = self.reference(g, g, g, False)
        self.assertLess((o.double() - ref).abs().max().item(), 4e-3)

    def test_runs_on_the_current_stream(self):
        # The side stream is busy for a while, then writes q: a launch on any other stream would read
        # q before that write lands.
        import torch
        q0 = torch.rand(2, 4, 256, 64, device="cuda", dtype=torch.float16) * 2 - 1
        k, v = (torch.rand(2, 4, 256, 64, device="cuda", dtype=torch.float16) * 2 - 1 for _ in range(2))
        q = torch.zeros_like(q0)
        torch.cuda.synchronize()
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            torch.cuda._sleep(100_000_000)
            q.copy_(q0)
            o = flashstages.attention(q, k, v)
        side.synchronize()
        self.assertLess((o.double() - self.reference(q0, k, v, False)).abs().max().item(), 4e-3)

    def test_the_readme_example_runs_as_written(self):
        example = "\n".join(["import torch, flashstages",
                             "q, k, v = (torch.rand(2, 4, 1024, 64, device=\"cuda\") * 2 - 1 for _ in range(3))",
                             "o = flashstages.attention(q, k, v, causal=True, kernel=\"fs_online_softmax_v1\")",
                             "print(o.shape)"])
        p = subprocess.run([sys.executable, "-c", example], capture_output=True, text=True,
                           env={**os.environ, "PYTHONPATH": HERE})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("torch.Size([2, 4, 1024, 64])", p.stdout)


def main():
    """`test_binding.py [LIBRARY] [--gpu]`: the CPU cases, or with --gpu the GPU cases, which without
    PyTorch and a GPU exit 77 (CTest's "skipped"), or fail when FLASHSTAGES_REQUIRE_GPU=1."""
    args = sys.argv[1:]
    gpu = "--gpu" in args
    args = [a for a in args if a != "--gpu"]
    if args and not args[0].startswith("-"):
        os.environ["FLASHSTAGES_LIBRARY"] = args.pop(0)
    if gpu and not has_gpu():
        if os.environ.get("FLASHSTAGES_REQUIRE_GPU", "0") not in ("", "0"):
            sys.exit("FLASHSTAGES_REQUIRE_GPU=1 but PyTorch sees no CUDA GPU")
        print("SKIPPED: the binding's GPU tests need PyTorch with a CUDA GPU")
        sys.exit(77)
    cases = [OnTheGpu] if gpu else [Checks, FlashChecks, PickChecks, Lookup]
    suite = unittest.TestSuite(unittest.defaultTestLoader.loadTestsFromTestCase(c) for c in cases)
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    sys.exit(0 if result.wasSuccessful() else 1)


if __name__ == "__main__":
    main()
