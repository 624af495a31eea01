"""ctypes binding to libflashstages: call any stage's attention launcher from Python.

    import flashstages, torch
    lib = flashstages.load("build/common/libflashstages.so")
    q, k, v = (torch.randn(2, 4, 1024, 64, device="cuda") for _ in range(3))
    o = torch.empty_like(q)
    flashstages.attention(lib, "fs_online_softmax_v1", q, k, v, o, causal=True)

Tensors are contiguous [B, H, N, D] (torch tensors, or anything with .data_ptr(); plain integers are
taken as device addresses). The GEMM versions of stage 06 take a GemmParams struct through call().
Every launcher validates before it launches and a bad call raises FlashstagesError naming the code,
e.g. FS_ERR_UNSUPPORTED_HEAD_DIM. kernels(lib) lists every launcher the library holds, as the
library describes it (fs_kernel_count / fs_kernel_at): its C entry, stage, version, the types and
head_dims it takes and the GPUs it runs on.
"""
import ctypes

FP32, FP16, BF16, INT8, INT32 = 0, 1, 2, 3, 4
DTYPE_NAMES = {FP32: "fp32", FP16: "fp16", BF16: "bf16", INT8: "int8", INT32: "int32"}
PROBLEM_ATTENTION, PROBLEM_GEMM = 0, 1


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


class FlashstagesError(RuntimeError):
    def __init__(self, code, name, message):
        super().__init__(f"{name} ({code}): {message}")
        self.code, self.name = code, name


def load(path):
    lib = ctypes.CDLL(path)
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
        params = AttentionParams if info.problem == PROBLEM_ATTENTION else GemmParams
        fn.argtypes = [ctypes.POINTER(params), ctypes.c_void_p]
    return lib


def kernels(lib, problem=None, stage=None):
    """Every launcher the library holds (KernelInfo), in stage and version order; optionally only
    those of one problem kind (PROBLEM_ATTENTION, PROBLEM_GEMM) or one stage ("stage04")."""
    found = [lib.fs_kernel_at(i).contents for i in range(lib.fs_kernel_count())]
    return [k for k in found
            if (problem is None or k.problem == problem) and (stage is None or k.stage.decode() == stage)]


def status_name(lib, code):
    return lib.fs_status_name(code).decode()


def call(lib, launcher, params, stream=None):
    """Calls one launcher with its params struct (AttentionParams or GemmParams); returns 0 or raises
    FlashstagesError."""
    code = getattr(lib, launcher)(ctypes.byref(params), stream)
    if code != 0:
        raise FlashstagesError(code, status_name(lib, code), lib.fs_status_message(code).decode())
    return code


def _address(t):
    if t is None:
        return None
    return t.data_ptr() if hasattr(t, "data_ptr") else int(t)


def _dtype_code(t):
    name = str(getattr(t, "dtype", "torch.float32"))
    return {"torch.float32": FP32, "torch.float16": FP16, "torch.bfloat16": BF16}[name]


def attention(lib, launcher, q, k, v, o, lse=None, causal=False, scale=0.0, stream=None):
    """O = softmax(scale · Q Kᵀ) V with the chosen stage; q, k, v, o are [B, H, N, D] tensors."""
    b, h, nq, d = q.shape
    p = AttentionParams(b, h, nq, k.shape[2], d, scale, int(causal), _dtype_code(q),
                        _address(q), _address(k), _address(v), _address(o), _address(lse))
    return call(lib, launcher, p, stream)
