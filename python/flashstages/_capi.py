"""The C interface of libflashstages through ctypes: the params structs, the kernel descriptions,
status codes, the picking entries and their query (Pick), and finding and loading the library. The
torch-facing API is in __init__.py.
"""
import ctypes
import ctypes.util
import glob
import os
import sys

FP32, FP16, BF16, INT8, INT32, FP8_E4M3 = 0, 1, 2, 3, 4, 5
DTYPE_NAMES = {FP32: "fp32", FP16: "fp16", BF16: "bf16", INT8: "int8", INT32: "int32", FP8_E4M3: "fp8_e4m3"}
PROBLEM_ATTENTION, PROBLEM_GEMM, PROBLEM_ATTENTION_BWD = 0, 1, 2
PROBLEM_NAMES = {PROBLEM_ATTENTION: "attention", PROBLEM_GEMM: "gemm", PROBLEM_ATTENTION_BWD: "attention_bwd"}


class AttentionParams(ctypes.Structure):
    """Mirror of fs_attention_params in common/lib/flashstages.h (same order, same C types)."""

    _fields_ = [
        ("batch", ctypes.c_int64),
        ("heads", ctypes.c_int64),
        ("seq_q", ctypes.c_int64),
        ("seq_k", ctypes.c_int64),
        ("head_dim", ctypes.c_int64),
        ("scale", ctypes.c_float),
        ("causal", ctypes.c_int32),
        ("dtype", ctypes.c_int32),
        ("q", ctypes.c_void_p),
        ("k", ctypes.c_void_p),
        ("v", ctypes.c_void_p),
        ("o", ctypes.c_void_p),
        ("lse", ctypes.c_void_p),
        ("seq_lens", ctypes.c_void_p),
        ("cu_seqlens_q", ctypes.c_void_p),
        ("cu_seqlens_k", ctypes.c_void_p),
        ("max_seq_q", ctypes.c_int64),
        ("kv_heads", ctypes.c_int64),  # 0: heads (multi-head); else K, V have kv_heads heads (GQA)
        ("max_seq_k", ctypes.c_int64),  # packed batches, the backward: the most key rows of one entry (0: seq_k)
        ("q_descale", ctypes.c_float),  # fp8 inputs: what Q, K, V stand for is descale times them (0: 1)
        ("k_descale", ctypes.c_float),
        ("v_descale", ctypes.c_float),
        # Element strides {batch, head, row} of Q, K, V and O; zeros: contiguous [B, H, N, D]. attention()
        # and flash_attention() pass the tensors' own (attention_params), so a [B, N, H, D] model's
        # q.transpose(1, 2) is read in place; call() takes any layout the library admits.
        ("q_strides", ctypes.c_int64 * 3),
        ("k_strides", ctypes.c_int64 * 3),
        ("v_strides", ctypes.c_int64 * 3),
        ("o_strides", ctypes.c_int64 * 3),
    ]


class AttentionBwdParams(ctypes.Structure):
    """Mirror of fs_attention_bwd_params (common/lib/flashstages.h): the forward problem `fwd` (its o and
    lse are read), dO, the gradients dQ, dK, dV, an optional delta [B, H, Nq] fp32, and `deterministic`.
    Embedding AttentionParams, it grows with it."""

    _fields_ = [
        ("fwd", AttentionParams),
        ("d_o", ctypes.c_void_p),
        ("dq", ctypes.c_void_p),
        ("dk", ctypes.c_void_p),
        ("dv", ctypes.c_void_p),
        ("delta", ctypes.c_void_p),
        ("deterministic", ctypes.c_int32),
    ]


class GemmParams(ctypes.Structure):
    """Mirror of fs_gemm_params: C = alpha · op(A) · op(B) + beta · C, row-major (common/lib/flashstages.h)."""

    _fields_ = [
        ("m", ctypes.c_int64),
        ("n", ctypes.c_int64),
        ("k", ctypes.c_int64),
        ("trans_a", ctypes.c_int32),
        ("trans_b", ctypes.c_int32),
        ("ab_dtype", ctypes.c_int32),
        ("c_dtype", ctypes.c_int32),
        ("alpha", ctypes.c_float),
        ("beta", ctypes.c_float),
        ("a", ctypes.c_void_p),
        ("lda", ctypes.c_int64),
        ("b", ctypes.c_void_p),
        ("ldb", ctypes.c_int64),
        ("c", ctypes.c_void_p),
        ("ldc", ctypes.c_int64),
    ]


# The params struct each problem kind's launchers take (fs_problem).
PARAMS_OF_PROBLEM = {PROBLEM_ATTENTION: AttentionParams, PROBLEM_GEMM: GemmParams,
                     PROBLEM_ATTENTION_BWD: AttentionBwdParams}


class KernelInfo(ctypes.Structure):
    """Mirror of fs_kernel_info: one launcher as the library describes it (common/lib/flashstages.h)."""

    _fields_ = [
        ("entry", ctypes.c_char_p),
        ("stage", ctypes.c_char_p),
        ("version", ctypes.c_char_p),
        ("technique", ctypes.c_char_p),
        ("problem", ctypes.c_int32),
        ("in_dtypes", ctypes.c_uint32),
        ("out_dtypes", ctypes.c_uint32),
        ("num_head_dims", ctypes.c_int32),
        ("head_dims", ctypes.c_int32 * 8),
        ("max_head_dim", ctypes.c_int32),
        ("num_archs", ctypes.c_int32),
        ("archs", ctypes.c_int32 * 16),
        ("smem_bytes", ctypes.c_uint64),
        ("strided", ctypes.c_int32),  # attention: non-zero when it takes the strides of AttentionParams
        ("ptx_arch", ctypes.c_int32),  # the PTX it carries (80: compute_80), 0 for none
        ("keeps_scores", ctypes.c_int32),  # attention: N×N scores in DRAM; the picking entries never run it
    ]

    @property
    def name(self):
        return self.entry.decode()

    @property
    def dtypes(self):
        return [code for code in DTYPE_NAMES if self.in_dtypes & (1 << code)]

    def takes_head_dim(self, d):
        if self.num_head_dims == 0:
            return 1 <= d <= self.max_head_dim
        return d in list(self.head_dims)[: self.num_head_dims]

    def __repr__(self):
        """KernelInfo(name='fs_flash_fwd_v5', stage='stage04', version='v5', problem='attention', dtypes=[...],
        head_dims=[...], archs=[...], ptx_arch=80, technique='...'): what fs_kernel_at says of it, named."""
        def text(b):
            return b.decode() if b is not None else None
        fields = [f"name={self.name!r}", f"stage={text(self.stage)!r}", f"version={text(self.version)!r}",
                  f"problem={PROBLEM_NAMES.get(self.problem, self.problem)!r}",
                  f"dtypes={[DTYPE_NAMES[code] for code in self.dtypes]!r}"]
        if self.problem != PROBLEM_GEMM:  # any head_dim up to a bound, or the listed ones
            heads = list(self.head_dims)[: self.num_head_dims]
            fields.append(f"head_dims={heads!r}" if heads else f"head_dims='1 to {self.max_head_dim}'")
        fields += [f"archs={list(self.archs)[: self.num_archs]!r}", f"ptx_arch={self.ptx_arch}"]
        if self.keeps_scores:  # N×N scores in DRAM: never picked, run by name alone
            fields.append("keeps_scores=True")
        fields.append(f"technique={text(self.technique)!r}")
        return f"KernelInfo({', '.join(fields)})"


class Pick(ctypes.Structure):
    """Mirror of fs_pick (common/lib/flashstages.h): the version a picking entry (fs_attention_forward,
    fs_attention_backward, fs_gemm) would run, or null where it would run none, and one line saying why."""

    _fields_ = [
        ("kernel", ctypes.POINTER(KernelInfo)),
        ("why", ctypes.c_char * 320),
    ]

    @property
    def info(self):
        """The KernelInfo of the version picked, or None."""
        return self.kernel.contents if self.kernel else None

    @property
    def name(self):
        """The picked version's C entry ("fs_flash_fwd_tma_v8"), or None."""
        return self.info.name if self.kernel else None

    @property
    def reason(self):
        return self.why.decode(errors="replace")

    def __repr__(self):
        """Pick(kernel='fs_flash_fwd_tma_v8', stage='stage07/attention', version='v8', why='level with the fastest at ...')."""
        if not self.kernel:
            return f"Pick(kernel=None, why={self.reason!r})"
        info = self.info
        return (f"Pick(kernel={info.name!r}, stage={info.stage.decode()!r}, version={info.version.decode()!r}, "
                f"why={self.reason!r})")


# The picking entries of each problem kind: the one that runs the fastest version that takes the problem,
# and the one that says which that is (flashstages.h, "The fastest version, picked").
PICKING_ENTRIES = {PROBLEM_ATTENTION: ("fs_attention_forward", "fs_pick_attention_forward"),
                   PROBLEM_ATTENTION_BWD: ("fs_attention_backward", "fs_pick_attention_backward"),
                   PROBLEM_GEMM: ("fs_gemm", "fs_pick_gemm")}


class FlashstagesError(RuntimeError):
    def __init__(self, code, name, message):
        super().__init__(f"{name} ({code}): {message}")
        self.code, self.name = code, name


# Where find_library() looks, in order: the environment variable, the build tree of the checkout this
# package lives in (when it is imported from the source tree or installed in editable mode), and the
# install prefixes (cmake --install's default, this Python's prefix, then the dynamic loader's path).
LIBRARY_ENV = "FLASHSTAGES_LIBRARY"
BUILD_PRESETS = ("gpu", "release", "h100", "ci", "debug")
LIBRARY_NAME = "libflashstages.so"


def _checkout():
    try:  # installed by pip: the checkout it was built from (the package's build backend records it)
        from ._checkout import CHECKOUT as checkout
    except ImportError:  # imported from the source tree: python/flashstages/ is two levels below it
        checkout = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return checkout


def _prefixes():
    return [p for p in (os.environ.get("CMAKE_INSTALL_PREFIX"), "/usr/local", sys.prefix) if p]


def library_candidates():
    """(where, path) in lookup order; paths that do not exist are left out, except the variable's."""
    out = []
    if os.environ.get(LIBRARY_ENV):
        out.append((LIBRARY_ENV, os.environ[LIBRARY_ENV]))
    checkout = _checkout()
    for preset in BUILD_PRESETS:
        path = os.path.join(checkout, "build", preset, "common", LIBRARY_NAME)
        if os.path.exists(path):
            out.append(("build tree", path))
    for pattern in (("build*", "common"), ("build*", "*", "common")):  # other build folders
        for found in sorted(glob.glob(os.path.join(checkout, *pattern, LIBRARY_NAME))):
            if ("build tree", found) not in out:
                out.append(("build tree", found))
    for prefix in _prefixes():
        for libdir in ("lib", "lib64"):
            path = os.path.join(prefix, libdir, LIBRARY_NAME)
            if path and os.path.exists(path) and ("install prefix", path) not in out:
                out.append(("install prefix", path))
    system = ctypes.util.find_library("flashstages")
    if system:
        out.append(("dynamic loader", system))
    return out


def find_library():
    """The path of libflashstages, by the lookup order above; FileNotFoundError naming every place
    looked at when there is none."""
    candidates = library_candidates()
    if candidates:
        where, path = candidates[0]
        if where == LIBRARY_ENV and not os.path.exists(path):
            raise FileNotFoundError(f"{LIBRARY_ENV}={path}: no such file")
        return path
    checkout = _checkout()
    looked = [f"${LIBRARY_ENV} (unset)", os.path.join(checkout, "build", "{" + ",".join(BUILD_PRESETS) + "}", "common"),
              os.path.join(checkout, "build*", "common") + " and build*/*/common",
              *(os.path.join(p, "lib{,64}") for p in _prefixes()), "the dynamic loader's path"]
    raise FileNotFoundError(
        f"{LIBRARY_NAME} not found (looked in: {'; '.join(looked)}): set {LIBRARY_ENV} to its path, or build the "
        "checkout (cmake --preset release && cmake --build --preset release), or cmake --install it")


def load(path=None):
    """Loads libflashstages (found by find_library() when no path is given) and declares every entry."""
    lib = ctypes.CDLL(path or find_library())
    lib.fs_status_name.restype = ctypes.c_char_p
    lib.fs_status_name.argtypes = [ctypes.c_int]
    lib.fs_status_message.restype = ctypes.c_char_p
    lib.fs_status_message.argtypes = [ctypes.c_int]
    lib.fs_kernel_count.restype = ctypes.c_int
    lib.fs_kernel_count.argtypes = []
    lib.fs_kernel_at.restype = ctypes.POINTER(KernelInfo)
    lib.fs_kernel_at.argtypes = [ctypes.c_int]
    lib.fs_kernel_check_device.restype = ctypes.c_int
    lib.fs_kernel_check_device.argtypes = [ctypes.POINTER(KernelInfo), ctypes.c_int]
    lib.fs_check_varlen.restype = ctypes.c_int
    lib.fs_check_varlen.argtypes = [ctypes.POINTER(AttentionParams), ctypes.c_void_p]
    for info in kernels(lib):
        fn = getattr(lib, info.name)
        fn.restype = ctypes.c_int
        fn.argtypes = [ctypes.POINTER(PARAMS_OF_PROBLEM[info.problem]), ctypes.c_void_p]
    for problem, (entry, query) in PICKING_ENTRIES.items():
        params = ctypes.POINTER(PARAMS_OF_PROBLEM[problem])
        getattr(lib, entry).restype = ctypes.c_int
        getattr(lib, entry).argtypes = [params, ctypes.c_void_p]
        getattr(lib, query).restype = ctypes.c_int
        getattr(lib, query).argtypes = [params, ctypes.POINTER(Pick)]
    return lib


def kernels(lib=None, problem=None, stage=None):
    """Every launcher the library holds (KernelInfo), in stage and version order; optionally only
    those of one problem kind (PROBLEM_ATTENTION, PROBLEM_ATTENTION_BWD, PROBLEM_GEMM) or one stage:
    "stage04", or a stage with its rungs, "stage07" ("stage07/attention", "stage07/attention_bwd",
    "stage07/gemm"), or one rung. lib: a library load() returned; None for the process's
    (flashstages.library())."""
    if lib is None:
        from . import library  # the package's, which loads the library once per process
        lib = library()
    found = [lib.fs_kernel_at(i).contents for i in range(lib.fs_kernel_count())]
    return [k for k in found
            if (problem is None or k.problem == problem)
            and (stage is None or k.stage.decode() == stage or k.stage.decode().startswith(stage + "/"))]


def status_name(lib, code):
    return lib.fs_status_name(code).decode()


def call(lib, launcher, params, stream=None):
    """Calls one launcher with its params struct (AttentionParams, AttentionBwdParams or GemmParams);
    returns 0 or raises FlashstagesError. A launcher is a version's entry ("fs_flash_fwd_v5") or a
    picking entry ("fs_attention_forward", PICKING_ENTRIES)."""
    code = getattr(lib, launcher)(ctypes.byref(params), stream)
    if code != 0:
        raise FlashstagesError(code, status_name(lib, code), lib.fs_status_message(code).decode())
    return code


def query_pick(lib, params):
    """What the picking entry of the params' problem would run on the current GPU, and why, without
    running it (fs_pick_attention_forward, fs_pick_attention_backward or fs_pick_gemm): a Pick. Where
    the entry would refuse the problem, FlashstagesError with the entry's code and the Pick's reason."""
    problem = next(p for p, kind in PARAMS_OF_PROBLEM.items() if isinstance(params, kind))
    pick = Pick()
    code = getattr(lib, PICKING_ENTRIES[problem][1])(ctypes.byref(params), ctypes.byref(pick))
    if code != 0:
        raise FlashstagesError(code, status_name(lib, code),
                               f"{lib.fs_status_message(code).decode()}; {pick.reason}")
    return pick
