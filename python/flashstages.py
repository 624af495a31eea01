"""ctypes binding to libflashstages: call any stage's attention launcher from Python.

    import flashstages, torch
    lib = flashstages.load("build/common/libflashstages.so")
    q, k, v = (torch.randn(2, 4, 1024, 64, device="cuda") for _ in range(3))
    o = torch.empty_like(q)
    flashstages.attention(lib, "fs_online_softmax_v1", q, k, v, o, causal=True)

Tensors are contiguous [B, H, N, D] (torch tensors, or anything with .data_ptr(); plain integers are
taken as device addresses). The GEMM versions of stage 06 take a GemmParams struct through call(). Every launcher validates before it launches and a bad call raises
FlashstagesError naming the code, e.g. FS_ERR_UNSUPPORTED_HEAD_DIM.
"""
import ctypes

FP32, FP16, BF16, INT8, INT32 = 0, 1, 2, 3, 4
LAUNCHERS = ("fs_naive_v1", "fs_tiled_v1", "fs_online_softmax_v1")
STAGE04_LAUNCHERS = ("fs_flash_fwd_v1", "fs_flash_fwd_v2", "fs_flash_fwd_v3", "fs_flash_fwd_v4")
GEMM_LAUNCHERS = tuple(f"fs_gemm_v{i}" for i in range(1, 9))


class AttentionParams(ctypes.Structure):
    """Mirror of fs_attention_params in common/flashstages.h (same order, same C types)."""

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
    ]


class GemmParams(ctypes.Structure):
    """Mirror of fs_gemm_params: C = alpha · op(A) · op(B) + beta · C, row-major (common/flashstages.h)."""

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
    for names, params in ((LAUNCHERS + STAGE04_LAUNCHERS, AttentionParams), (GEMM_LAUNCHERS, GemmParams)):
        for name in names:
            fn = getattr(lib, name)
            fn.restype = ctypes.c_int
            fn.argtypes = [ctypes.POINTER(params), ctypes.c_void_p]
    return lib


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
