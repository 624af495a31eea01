"""Tests of the torch-facing binding (flashstages.attention) and of how the package finds the library.

On the CPU: every check attention() makes before it calls the library, on stand-in tensors (no
PyTorch needed), and the library lookup order. With PyTorch and a GPU: every attention kernel against
torch.nn.functional.scaled_dot_product_attention in fp64 (for causal with Nq != Nk against
causal_lower_right, this project's bottom-right mask; with K/V shared by groups of query heads too),
CPU tensors refused without touching the device, the current stream honoured, and the README's example
as written.

    python3 python/test_binding.py build/.../libflashstages.so          # the CPU cases
    python3 python/test_binding.py build/.../libflashstages.so --gpu    # the GPU cases (77: skipped)
"""
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


class Stand:
    """What attention() reads of a torch.Tensor, for the CPU tests."""

    def __init__(self, shape, dtype="torch.float16", device="cuda:0", contiguous=True):
        self.shape, self.dtype, self.device, self.contiguous = tuple(shape), dtype, Device(device), contiguous

    def data_ptr(self):
        return 0x100000

    def is_contiguous(self):
        return self.contiguous

    def stride(self):
        return (1,) * len(self.shape)


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
        cls.v5 = flashstages._attention_kernel(cls.lib, "fs_flash_fwd_v5")
        cls.v1 = flashstages._attention_kernel(cls.lib, "fs_online_softmax_v1")

    def qkv(self, **change):
        shapes = dict(q=(2, 4, 100, 64), k=(2, 4, 130, 64), v=(2, 4, 130, 64))
        tensors = {name: Stand(shape) for name, shape in shapes.items()}
        for name, t in change.items():
            tensors[name] = t
        return tensors["q"], tensors["k"], tensors["v"]

    def refused(self, error, words, info=None, out=None, lse=None, make_contiguous=False, **change):
        with self.assertRaises(error) as caught:
            flashstages._check_attention(info or self.v5, *self.qkv(**change), out, lse, make_contiguous)
        for word in words:
            self.assertIn(word, str(caught.exception))

    def test_a_valid_call_passes(self):
        q, k, v = flashstages._check_attention(self.v5, *self.qkv(), Stand((2, 4, 100, 64)),
                                               Stand((2, 4, 100), dtype="torch.float32"), False)
        self.assertEqual(q.shape, (2, 4, 100, 64))

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
            _, k, _ = flashstages._check_attention(self.v5, *self.qkv(k=kv, v=kv), None, None, False)
            self.assertEqual(k.shape[1], kv_heads)
        for kv_heads in (3, 8):
            kv = Stand((2, kv_heads, 130, 64))
            self.refused(ValueError, [f"k and v have {kv_heads} heads, q 4", "divide"], k=kv, v=kv)

    def test_contiguity(self):
        self.refused(ValueError, ["k is not contiguous", "k.contiguous()"], k=Stand((2, 4, 130, 64), contiguous=False))
        self.refused(ValueError, ["out is not contiguous"], out=Stand((2, 4, 100, 64), contiguous=False))

    def test_without_pytorch_it_says_what_to_install(self):
        # None in sys.modules is what an import of a package that is not installed finds: ModuleNotFoundError.
        saved = sys.modules.get("torch")
        sys.modules["torch"] = None
        try:
            with self.assertRaises(ModuleNotFoundError) as caught:
                flashstages.attention(*self.qkv())
            with self.assertRaises(ModuleNotFoundError):
                flashstages.flash_attention(*self.qkv())  # after its checks, which pass
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

    def test_kernels_lists_the_whole_library_and_each_kernel_reads_by_name(self):
        every = flashstages.kernels()  # no argument: the process's library
        self.assertEqual(len(every), self.lib.fs_kernel_count())
        self.assertEqual([k.name for k in every], [k.name for k in flashstages.kernels(self.lib)])
        self.assertNotIn("object at 0x", repr(every))
        self.assertTrue(repr(self.v5).startswith(
            "KernelInfo(name='fs_flash_fwd_v5', stage='stage04', version='v5', problem='attention', "
            "dtypes=['fp16', 'bf16'], head_dims=[32, 64, 128, 256], archs=["), repr(self.v5))
        self.assertIn(f"technique={self.v5.technique.decode()!r})", repr(self.v5))
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
    """flash_attention() refuses, named and before any library call or PyTorch import, what its forward or
    its backward would refuse: the stand-ins are no tensors, so a call that got past the checks would fail
    otherwise."""

    def qkv(self, dtype="torch.float16", d=64, kv_heads=4, nq=100, nk=130, **change):
        tensors = dict(q=Stand((2, 4, nq, d), dtype), k=Stand((2, kv_heads, nk, d), dtype),
                       v=Stand((2, kv_heads, nk, d), dtype))
        tensors.update(change)
        return tensors["q"], tensors["k"], tensors["v"]

    def refused(self, error, words, causal=False, **qkv):
        with self.assertRaises(error) as caught:
            flashstages.flash_attention(*self.qkv(**qkv), causal=causal)
        for word in words:
            self.assertIn(word, str(caught.exception))

    def test_a_valid_call_passes_the_checks(self):
        lib = flashstages.library()
        fwd = flashstages._attention_kernel(lib, flashstages.DEFAULT_KERNEL)
        bwd = flashstages._attention_kernel(lib, flashstages.DEFAULT_BACKWARD_KERNEL, flashstages.PROBLEM_ATTENTION_BWD)
        for dtype in ("torch.float16", "torch.bfloat16"):
            for d in (64, 128):
                flashstages._check_flash_attention(fwd, bwd, *self.qkv(dtype, d), causal=True)

    def test_devices_and_contiguity(self):
        self.refused(ValueError, ["q is on cpu", "CUDA"], q=Stand((2, 4, 100, 64), device="cpu"))
        self.refused(ValueError, ["v is on cuda:1", "same device"], v=Stand((2, 4, 130, 64), device="cuda:1"))
        self.refused(ValueError, ["k is not contiguous", "k.contiguous()", "copies nothing"],
                     k=Stand((2, 4, 130, 64), contiguous=False))

    def test_dtypes(self):
        self.refused(TypeError, ["fs_flash_fwd_v5 takes float16, bfloat16"], dtype="torch.float32")
        self.refused(TypeError, ["q is torch.float64"], dtype="torch.float64")
        self.refused(TypeError, ["k is torch.bfloat16", "one dtype"], k=Stand((2, 4, 130, 64), "torch.bfloat16"))
        self.refused(TypeError, ["q must be a torch.Tensor"], q=[[1.0]])

    def test_shapes_and_head_dims(self):
        self.refused(ValueError, ["q must have 4 dimensions"], q=Stand((4, 100, 64)))
        self.refused(ValueError, ["v has shape (2, 4, 129, 64)"], v=Stand((2, 4, 129, 64)))
        # The forward takes 32 and 256; the backward does not: refused up front, naming the backward.
        self.refused(ValueError, ["head_dim 32", "the backward, fs_flash_bwd_v10", "[64, 128]"], d=32)
        self.refused(ValueError, ["head_dim 256", "the backward"], d=256)
        self.refused(ValueError, ["head_dim 48", "fs_flash_fwd_v5"], d=48)

    def test_the_default_backward_takes_what_the_other_tensor_core_versions_take(self):
        # The default is stage 05's fastest; a dtype or head_dim that v2, v3 or v4 take and it did not
        # would be refused where an older default ran. (Grouped K/V: every backward version takes it.)
        lib = flashstages.library()
        default = flashstages._attention_kernel(lib, flashstages.DEFAULT_BACKWARD_KERNEL,
                                                flashstages.PROBLEM_ATTENTION_BWD)
        self.assertEqual(default.name, "fs_flash_bwd_v10")
        for name in ("fs_flash_bwd_v2", "fs_flash_bwd_v3", "fs_flash_bwd_v4"):
            other = flashstages._attention_kernel(lib, name, flashstages.PROBLEM_ATTENTION_BWD)
            self.assertEqual(other.in_dtypes & ~default.in_dtypes, 0, name)
            for d in list(other.head_dims)[: other.num_head_dims]:
                self.assertTrue(default.takes_head_dim(d), f"{name} takes head_dim {d}")

    def test_grouped_kv_passes_the_checks(self):
        # The backward sums dK, dV over each group: a grouping passes, a non-divisor does not.
        lib = flashstages.library()
        fwd = flashstages._attention_kernel(lib, flashstages.DEFAULT_KERNEL)
        bwd = flashstages._attention_kernel(lib, flashstages.DEFAULT_BACKWARD_KERNEL, flashstages.PROBLEM_ATTENTION_BWD)
        for kv_heads in (2, 1):
            flashstages._check_flash_attention(fwd, bwd, *self.qkv(kv_heads=kv_heads), causal=True)
        self.refused(ValueError, ["divide"], kv_heads=3)

    def test_causal_needs_no_more_queries_than_keys(self):
        self.refused(ValueError, ["causal with Nq = 130 > Nk = 100"], causal=True, nq=130, nk=100)
        with self.assertRaises(ImportError if not has_torch() else TypeError):  # past the checks: no tensors
            flashstages.flash_attention(*self.qkv(nq=130, nk=100), causal=False)

    def test_unknown_kernels(self):
        with self.assertRaises(ValueError) as caught:
            flashstages.flash_attention(*self.qkv(), backward_kernel="fs_flash_fwd_v5")
        self.assertIn("not an attention backward kernel", str(caught.exception))
        self.assertIn("fs_flash_bwd_v2", str(caught.exception))
        with self.assertRaises(ValueError):
            flashstages.flash_attention(*self.qkv(), kernel="fs_flash_bwd_v2")


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
        """The forward kernels the torch binding runs: those that take fp32, fp16 or bf16 (stage 07's v9 takes
        fp8 alone, with scales flashstages.attention does not pass: test_ctypes reaches it through the C struct)."""
        sixteen_or_32 = (1 << flashstages.FP32) | (1 << flashstages.FP16) | (1 << flashstages.BF16)
        return [info for info in flashstages.kernels(lib, problem=flashstages.PROBLEM_ATTENTION)
                if info.in_dtypes & sixteen_or_32]

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


class FlashGradients(unittest.TestCase):
    """flash_attention's dQ, dK, dV against PyTorch's autograd of scaled_dot_product_attention.

    Tolerance, the flash-attention rule: both are measured against an fp64 autograd of the same inputs
    and dO, and ours must be within 2x of SDPA's own error in the same dtype (its fp16/bf16 kernels round
    P and dS as ours do, so its error is what this precision costs), plus an absolute floor of one unit
    in the last place of the dtype at the gradient's largest magnitude: SDPA can be nearly exact on a tiny
    problem (N = 17), where 2x of almost nothing would fail an equally good kernel."""

    SHAPES = ((1, 2, 17, 17, 64, True), (2, 3, 1000, 1000, 128, False), (1, 2, 1000, 1000, 64, True),
              (1, 2, 100, 230, 128, True), (2, 2, 230, 100, 64, False), (1, 1, 17, 1000, 128, True))

    def gradients(self, fn, q, k, v, d_o):
        q, k, v = (t.detach().clone().requires_grad_(True) for t in (q, k, v))
        fn(q, k, v).backward(d_o)
        return q.grad, k.grad, v.grad

    def sdpa(self, causal, nq, nk, gqa=False):
        import torch
        from torch.nn.attention.bias import causal_lower_right
        args = {"enable_gqa": True} if gqa else {}
        if causal:  # the project's bottom-right mask: is_causal agrees with it only when Nq = Nk
            args.update({"is_causal": True} if nq == nk else {"attn_mask": causal_lower_right(nq, nk)})
        return lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(q, k, v, **args)

    def check_against_sdpa(self, dtype, b, h, kv_heads, nq, nk, d, causal):
        """Our dQ, dK, dV within 2x SDPA's error against SDPA in fp64 (plus the floor, see above); K and V
        with kv_heads heads, SDPA's enable_gqa=True when that is fewer than h."""
        import torch
        q = torch.randn(b, h, nq, d, device="cuda", dtype=dtype)
        k, v = (torch.randn(b, kv_heads, nk, d, device="cuda", dtype=dtype) for _ in range(2))
        d_o = torch.randn(b, h, nq, d, device="cuda", dtype=dtype)
        sdpa = self.sdpa(causal, nq, nk, gqa=kv_heads != h)
        ref = self.gradients(sdpa, q.double(), k.double(), v.double(), d_o.double())
        theirs = self.gradients(sdpa, q, k, v, d_o)
        ours = self.gradients(lambda q, k, v: flashstages.flash_attention(q, k, v, causal=causal), q, k, v, d_o)
        torch.cuda.synchronize()
        ulp = torch.finfo(dtype).eps
        for name, r, t, o in zip(("dq", "dk", "dv"), ref, theirs, ours):
            self.assertEqual(o.dtype, dtype, name)
            self.assertEqual(o.shape, r.shape, name)
            their_err = (t.double() - r).abs().max().item()
            our_err = (o.double() - r).abs().max().item()
            floor = ulp * max(1.0, r.abs().max().item())
            self.assertLessEqual(our_err, 2 * their_err + floor,
                                 f"{name}: ours {our_err:.3g}, SDPA's {their_err:.3g} against fp64")

    def test_gradients_match_sdpa(self):
        import torch
        torch.manual_seed(2)
        for dtype in (torch.float16, torch.bfloat16):
            for b, h, nq, nk, d, causal in self.SHAPES:
                with self.subTest(dtype=str(dtype), b=b, h=h, nq=nq, nk=nk, d=d, causal=causal):
                    self.check_against_sdpa(dtype, b, h, h, nq, nk, d, causal)

    def test_grouped_kv_gradients_match_sdpa_with_enable_gqa(self):
        # dK and dV of a K/V head are the sums over its group of query heads: SDPA's enable_gqa=True.
        import torch
        torch.manual_seed(5)
        for dtype in (torch.float16, torch.bfloat16):
            for b, h, kv_heads, nq, nk, d, causal in ((2, 4, 2, 100, 230, 64, True), (1, 4, 1, 300, 300, 128, False),
                                                      (2, 8, 2, 1, 1000, 64, False), (1, 6, 1, 17, 17, 128, True)):
                with self.subTest(dtype=str(dtype), b=b, h=h, kv_heads=kv_heads, nq=nq, nk=nk, d=d, causal=causal):
                    self.check_against_sdpa(dtype, b, h, kv_heads, nq, nk, d, causal)

    def test_scale_and_a_strided_gradient(self):
        # A scale of its own, and dO as an expanded view (autograd hands those over for a sum's backward).
        import torch
        torch.manual_seed(3)
        q, k, v = (torch.randn(1, 2, 300, 64, device="cuda", dtype=torch.float16) for _ in range(3))
        q64, k64, v64 = (t.double().requires_grad_(True) for t in (q, k, v))
        torch.nn.functional.scaled_dot_product_attention(q64, k64, v64, scale=0.3).sum().backward()
        q, k, v = (t.requires_grad_(True) for t in (q, k, v))
        flashstages.flash_attention(q, k, v, scale=0.3).sum().backward()
        for r, o in ((q64.grad, q.grad), (k64.grad, k.grad), (v64.grad, v.grad)):
            # fp16 keeps 11 bits; 1e-2 of the largest gradient is ten of its rounding steps.
            self.assertLess((o.double() - r).abs().max().item(), 1e-2 * max(1.0, r.abs().max().item()))

    def test_deterministic_dq_is_bitwise_the_same(self):
        import torch
        torch.manual_seed(4)
        q, k, v = (torch.randn(2, 4, 1000, 128, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        d_o = torch.randn_like(q)
        fn = lambda q, k, v: flashstages.flash_attention(q, k, v, causal=True, deterministic=True)  # noqa: E731
        first, second = self.gradients(fn, q, k, v, d_o), self.gradients(fn, q, k, v, d_o)
        for name, a, b in zip(("dq", "dk", "dv"), first, second):
            self.assertTrue(torch.equal(a, b), name)

    def test_the_function_is_exported(self):
        import torch
        self.assertTrue(issubclass(flashstages.FlashAttention, torch.autograd.Function))


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
    cases = [OnTheGpu, FlashGradients] if gpu else [Checks, FlashChecks, Lookup]
    suite = unittest.TestSuite(unittest.defaultTestLoader.loadTestsFromTestCase(c) for c in cases)
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    sys.exit(0 if result.wasSuccessful() else 1)


if __name__ == "__main__":
    main()
