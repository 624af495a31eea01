"""flashstages from Python: every stage's attention kernels on PyTorch tensors, and the C interface.

    import torch, flashstages
    q, k, v = (torch.rand(2, 4, 1024, 64, device="cuda") * 2 - 1 for _ in range(3))
    o = flashstages.attention(q, k, v, causal=True, kernel="fs_online_softmax_v1")

attention() checks its tensors before it calls the library — on one CUDA device, contiguous, of one
dtype the kernel takes, of shapes that agree (k and v may have fewer heads than q, a divisor of them:
grouped-query attention) — and raises TypeError or ValueError naming the tensor
and the problem; what the library itself refuses comes back as FlashstagesError with its named code
(FS_ERR_UNSUPPORTED_HEAD_DIM, ...). It launches on PyTorch's current stream of the tensors' device.
The library is found by find_library(): $FLASHSTAGES_LIBRARY, then the build tree of this checkout,
then the install prefix. kernels() lists what the library holds (each KernelInfo printed with its
name, stage, dtypes, head_dims, GPUs and technique); call() runs any entry, the GEMMs of stage 06 and
the backward passes of stage 05 included, on a params struct.

flash_attention(q, k, v) is attention with gradients: a torch.autograd.Function (FlashAttention) whose
forward is stage 04's v5 with the LSE kept and whose backward is stage 05's v10 (fp16/bf16, head_dim 64
or 128, K/V with Q's heads or a divisor of them).

attention() and flash_attention() take PyTorch tensors; PyTorch is imported at their first call, and
without it they raise ModuleNotFoundError saying how to install it (README.md). Importing flashstages,
kernels(), call() and the structs need no PyTorch.
"""
import sys

from ._capi import (BF16, DTYPE_NAMES, FP8_E4M3, FP16, FP32, INT8, INT32, LIBRARY_ENV, PARAMS_OF_PROBLEM,  # noqa: F401
                    PICKING_ENTRIES, PROBLEM_ATTENTION, PROBLEM_ATTENTION_BWD, PROBLEM_GEMM, PROBLEM_NAMES,
                    AttentionBwdParams, AttentionParams, FlashstagesError, GemmParams, KernelInfo, Pick, call,
                    find_library, kernels, library_candidates, load, query_pick, status_name)

__all__ = ["attention", "attention_params", "flash_attention", "library", "kernels", "call", "query_pick", "load",
           "find_library", "FlashstagesError", "AttentionParams", "AttentionBwdParams", "GemmParams", "KernelInfo",
           "Pick"]

DEFAULT_KERNEL = "fs_flash_fwd_v5"  # stage 04's fastest on its whole sweep (stages/04_flash_fwd/README.md)
# Stage 05's fastest (stages/05_flash_bwd/README.md: v10, v9 with its addresses worked out once), run
# through this binding on the H100 by test_binding.py --gpu. It takes every dtype, head_dim and grouping of K/V
# heads that v2 to v4 take (test_binding.py checks the first two on the library; every backward version
# sums dK, dV over a group), so no call that an older version would run is refused by this default.
DEFAULT_BACKWARD_KERNEL = "fs_flash_bwd_v10"
_DTYPES = {"torch.float32": FP32, "torch.float16": FP16, "torch.bfloat16": BF16}
_lib = None
# What to do without PyTorch: the message of the ModuleNotFoundError attention() and flash_attention() raise.
INSTALL_TORCH = (
    "flashstages.attention() and flash_attention() take PyTorch tensors, and this Python ({python}) has no "
    "PyTorch. Install a CUDA build of it: `{python} -m pip install torch` (PyPI's Linux wheels are CUDA "
    "builds), or the command https://pytorch.org/get-started/locally/ gives for your CUDA version, e.g. "
    "`{python} -m pip install torch --index-url https://download.pytorch.org/whl/cu130`. The C interface "
    "(kernels(), call(), the params structs) needs no PyTorch.")


def library():
    """The library, loaded once per process (find_library() decides which)."""
    global _lib
    if _lib is None:
        _lib = load()
    return _lib


def _torch():
    """PyTorch, imported at first use; without it, ModuleNotFoundError saying what to install."""
    try:
        import torch
    except ModuleNotFoundError as e:
        if e.name != "torch":  # PyTorch is there but broken (a dependency of its own missing): say that
            raise
        raise ModuleNotFoundError(INSTALL_TORCH.format(python=sys.executable), name="torch") from None
    return torch


def _attention_kernel(lib, name, problem=PROBLEM_ATTENTION):
    found = kernels(lib, problem=problem)
    if name not in [k.name for k in found]:
        kind = "an attention backward" if problem == PROBLEM_ATTENTION_BWD else "an attention"
        raise ValueError(f"kernel {name!r} is not {kind} kernel of this library; it has: "
                         f"{', '.join(k.name for k in found)}")
    return next(k for k in found if k.name == name)


def _check_tensor(name, t, ndim):
    for attribute in ("shape", "dtype", "device", "data_ptr", "is_contiguous"):
        if not hasattr(t, attribute):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if len(t.shape) != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {tuple(t.shape)}")


def _check_attention(info, q, k, v, out, lse, make_contiguous,
                     copy_hint="or make_contiguous=True to let attention() copy it"):
    """Every check attention() makes before the library is called; returns the contiguous inputs.
    copy_hint ends the message for a strided input (flash_attention() has no copying option)."""
    tensors = {"q": q, "k": k, "v": v}
    for name, t in tensors.items():
        _check_tensor(name, t, 4)
    if out is not None:
        _check_tensor("out", out, 4)
    if lse is not None:
        _check_tensor("lse", lse, 3)
    everything = {**tensors, **({"out": out} if out is not None else {}), **({"lse": lse} if lse is not None else {})}
    device = q.device
    for name, t in everything.items():
        if t.device.type != "cuda":
            raise ValueError(f"{name} is on {t.device}: every tensor must be on a CUDA device")
        if t.device != device:
            raise ValueError(f"{name} is on {t.device}, q on {device}: every tensor must be on the same device")
    dtype = str(q.dtype)
    if dtype not in _DTYPES:
        raise TypeError(f"q is {dtype}: flashstages takes torch.float32, torch.float16 or torch.bfloat16")
    for name, t in {**tensors, **({"out": out} if out is not None else {})}.items():
        if str(t.dtype) != dtype:
            raise TypeError(f"{name} is {t.dtype}, q is {dtype}: q, k, v and out must have one dtype")
    if lse is not None and str(lse.dtype) != "torch.float32":
        raise TypeError(f"lse is {lse.dtype}: it must be torch.float32")
    if not info.in_dtypes & (1 << _DTYPES[dtype]):
        takes = ", ".join(n for c, n in ((FP32, "float32"), (FP16, "float16"), (BF16, "bfloat16"))
                          if info.in_dtypes & (1 << c))
        raise TypeError(f"{info.name} takes {takes}, not {dtype}")
    b, h, nq, d = q.shape
    for name in ("k", "v"):
        t = tensors[name]
        if t.shape[0] != b or t.shape[3] != d:
            raise ValueError(f"{name} has shape {tuple(t.shape)}, q {tuple(q.shape)}: k and v must be "
                             f"[B, KVH, Nk, D] with q's B = {b} and D = {d}")
    if tuple(v.shape) != tuple(k.shape):
        raise ValueError(f"v has shape {tuple(v.shape)}, k {tuple(k.shape)}: they must match")
    kv_heads = k.shape[1]
    if kv_heads < 1 or kv_heads > h or h % kv_heads:
        raise ValueError(f"k and v have {kv_heads} heads, q {h}: the K/V heads must divide the query heads "
                         f"(grouped-query attention, each K/V head shared by H / KVH query heads)")
    if out is not None and tuple(out.shape) != tuple(q.shape):
        raise ValueError(f"out has shape {tuple(out.shape)}: it must be q's, {tuple(q.shape)}")
    if lse is not None and tuple(lse.shape) != (b, h, nq):
        raise ValueError(f"lse has shape {tuple(lse.shape)}: it must be [B, H, Nq] = {(b, h, nq)}")
    if not info.takes_head_dim(d):
        dims = list(info.head_dims)[: info.num_head_dims] or f"1 to {info.max_head_dim}"
        raise ValueError(f"head_dim {d}: {info.name} takes {dims}")
    for name, t in {**({"out": out} if out is not None else {}), **({"lse": lse} if lse is not None else {})}.items():
        if not t.is_contiguous():
            raise ValueError(f"{name} is not contiguous: the kernel writes it as a dense row-major tensor")
    inputs = []
    for name, t in tensors.items():
        if not t.is_contiguous():
            if not make_contiguous:
                raise ValueError(f"{name} is not contiguous (a view with strides {t.stride()}): pass "
                                 f"{name}.contiguous(), {copy_hint}")
            t = t.contiguous()
        inputs.append(t)
    return inputs


def attention_params(q, k, v, out, lse=None, *, causal=False, scale=None):
    """The AttentionParams of O = attention(q, k, v) into `out` (and the LSE into `lse`, when given):
    sizes, K/V heads, dtype and the tensors' addresses, scale None for 1/sqrt(D). Checks nothing: the
    callers have (attention(), flash_attention()), or build their tensors to fit (plots/head_to_head.py).
    The struct holds raw addresses: the tensors must outlive every call made with it."""
    b, h, nq, d = q.shape
    params = AttentionParams(b, h, nq, k.shape[2], d, 0.0 if scale is None else float(scale), int(bool(causal)),
                             _DTYPES[str(q.dtype)], q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr(),
                             lse.data_ptr() if lse is not None else None)
    params.kv_heads = k.shape[1]  # K, V: [B, KVH, Nk, D]
    return params


def attention(q, k, v, *, causal=False, scale=None, out=None, lse=None, kernel=DEFAULT_KERNEL,
              make_contiguous=False):
    """O = softmax(scale · Q Kᵀ [causal mask]) V with one of the library's attention kernels.

    q: [B, H, Nq, D]; k, v: [B, KVH, Nk, D] with KVH = H, or a divisor of H for grouped-query attention
    (query head h reads K/V head h // (H // KVH), as SDPA's enable_gqa=True; KVH = 1 is multi-query
    attention); one CUDA device, one dtype the kernel takes. The causal mask
    is aligned bottom-right (query i sees keys j <= i + Nk - Nq), like FlashAttention's and unlike
    PyTorch's is_causal (top-left): compare with torch.nn.attention.bias.causal_lower_right. scale:
    None for 1/sqrt(D). out: the output to write ([B, H, Nq, D], contiguous), made when None. lse: an
    optional [B, H, Nq] float32 tensor for the log-sum-exp of each row. Returns out.
    """
    torch = _torch()
    lib = library()
    info = _attention_kernel(lib, kernel)
    q, k, v = _check_attention(info, q, k, v, out, lse, make_contiguous)
    if out is None:
        out = torch.empty_like(q)
    params = attention_params(q, k, v, out, lse, causal=causal, scale=scale)
    with torch.cuda.device(q.device):
        call(lib, kernel, params, torch.cuda.current_stream(q.device).cuda_stream)
    return out


def _check_flash_attention(fwd_info, bwd_info, q, k, v, causal):
    """Every check flash_attention() makes before the library is called: attention()'s for the forward
    kernel, then what the backward kernel needs, so that nothing is refused only in backward()."""
    _check_attention(fwd_info, q, k, v, None, None, make_contiguous=False,
                     copy_hint="whose gradient flows back to the view (flash_attention() copies nothing)")
    dtype = str(q.dtype)
    if not bwd_info.in_dtypes & (1 << _DTYPES[dtype]):
        takes = ", ".join(n for c, n in ((FP32, "float32"), (FP16, "float16"), (BF16, "bfloat16"))
                          if bwd_info.in_dtypes & (1 << c))
        raise TypeError(f"q is {dtype}: the backward, {bwd_info.name}, takes {takes}")
    d = q.shape[3]
    if not bwd_info.takes_head_dim(d):
        dims = list(bwd_info.head_dims)[: bwd_info.num_head_dims] or f"1 to {bwd_info.max_head_dim}"
        raise ValueError(f"head_dim {d}: the backward, {bwd_info.name}, takes {dims}")
    if causal and q.shape[2] > k.shape[2]:
        raise ValueError(f"causal with Nq = {q.shape[2]} > Nk = {k.shape[2]}: the first Nq - Nk query rows "
                         f"would see no key (the mask is bottom-right aligned)")


def _bwd_params(fwd, d_o, dq, dk, dv, deterministic):
    params = AttentionBwdParams()
    params.fwd = fwd
    params.d_o, params.dq, params.dk, params.dv = d_o.data_ptr(), dq.data_ptr(), dk.data_ptr(), dv.data_ptr()
    params.delta = None
    params.deterministic = int(bool(deterministic))
    return params


_function = None


def _flash_attention_function():
    """The torch.autograd.Function, made at first use so that importing flashstages needs no PyTorch."""
    global _function
    if _function is not None:
        return _function
    torch = _torch()

    class FlashAttention(torch.autograd.Function):
        """forward(q, k, v, causal, scale, deterministic, kernel, backward_kernel) → O; the inputs are
        checked by flash_attention(), which is the way to call it."""

        @staticmethod
        def forward(ctx, q, k, v, causal, scale, deterministic, kernel, backward_kernel):
            b, h, nq, _ = q.shape
            out = torch.empty_like(q)
            lse = torch.empty(b, h, nq, device=q.device, dtype=torch.float32)  # the backward needs it
            params = attention_params(q, k, v, out, lse, causal=causal, scale=scale)
            with torch.cuda.device(q.device):
                call(library(), kernel, params, torch.cuda.current_stream(q.device).cuda_stream)
            ctx.save_for_backward(q, k, v, out, lse)
            ctx.causal, ctx.scale, ctx.deterministic = causal, scale, deterministic
            ctx.backward_kernel = backward_kernel
            return out

        @staticmethod
        def backward(ctx, d_o):
            q, k, v, out, lse = ctx.saved_tensors
            d_o = d_o.contiguous()  # autograd may hand over an expanded or strided gradient
            if d_o.dtype != q.dtype:
                d_o = d_o.to(q.dtype)
            dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
            # dk, dv: [B, KVH, Nk, D], the sums over each group of query heads (fwd.kv_heads)
            fwd = attention_params(q, k, v, out, lse, causal=ctx.causal, scale=ctx.scale)
            params = _bwd_params(fwd, d_o, dq, dk, dv, ctx.deterministic)
            with torch.cuda.device(q.device):
                call(library(), ctx.backward_kernel, params, torch.cuda.current_stream(q.device).cuda_stream)
            return dq, dk, dv, None, None, None, None, None

    _function = FlashAttention
    return _function


def __getattr__(name):
    # flashstages.FlashAttention, made on first access (PEP 562) so that the CPU-side checks need no torch.
    if name == "FlashAttention":
        return _flash_attention_function()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def flash_attention(q, k, v, causal=False, scale=None, deterministic=False, *, kernel=DEFAULT_KERNEL,
                    backward_kernel=DEFAULT_BACKWARD_KERNEL):
    """attention() with gradients: O = softmax(scale · Q Kᵀ [causal mask]) V, differentiable in q, k, v.

    q: [B, H, Nq, D]; k, v: [B, KVH, Nk, D], KVH = H or a divisor of it (grouped-query attention, as
    attention() and SDPA's enable_gqa=True: the gradient of a K/V head sums over its group); one
    CUDA device, contiguous, float16 or bfloat16, D 64 or 128 (what both kernels take). causal: the
    bottom-right mask of attention(), which needs Nq <= Nk here. scale: None for 1/sqrt(D).
    deterministic: dQ bitwise the same on every backward of the same inputs (no unordered atomic adds:
    v2's second pass, whichever of v2 to v10 is the backward; slower); dK and dV always are. The forward
    (kernel, stage 04's v5 by default) keeps O and the LSE; the backward (backward_kernel, stage 05's v10
    by default) reads them with dO. Both run on PyTorch's current
    stream. Bad input raises TypeError or ValueError here, before the library is called.
    """
    lib = library()
    fwd_info = _attention_kernel(lib, kernel)
    bwd_info = _attention_kernel(lib, backward_kernel, PROBLEM_ATTENTION_BWD)
    _check_flash_attention(fwd_info, bwd_info, q, k, v, causal)
    return _flash_attention_function().apply(q, k, v, bool(causal), scale, bool(deterministic), kernel,
                                             backward_kernel)
