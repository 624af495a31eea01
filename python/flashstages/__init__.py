"""flashstages from Python: every stage's attention kernels on PyTorch tensors, and the C interface.

    import torch, flashstages
    q, k, v = (torch.rand(2, 4, 1024, 64, device="cuda") * 2 - 1 for _ in range(3))
    o = flashstages.attention(q, k, v, causal=True)         # the fastest version for this GPU and shape
    flashstages.pick(q, k, v, causal=True)                  # which one that is, and why

attention() runs the library's picking entry, fs_attention_forward: of every version the library
holds, the one measured fastest at the benchmark point nearest the problem on this GPU that takes it
(among versions level there, the one least behind near it; README.md, "Calling the fastest version"). kernel="fs_online_softmax_v1" (any name kernels() lists)
runs that version instead. pick() says which version the entry would run, and why, without running it.

attention() checks its tensors before it calls the library — on one CUDA device, of one dtype and
head_dim a version takes (the named one, else any), of shapes that agree (k and v may have fewer heads
than q, a divisor of them: grouped-query attention), laid out as a version takes them — and raises
TypeError or ValueError naming the tensor and the problem; what the library itself refuses comes back
as FlashstagesError with its named code (FS_ERR_UNSUPPORTED_DEVICE, ...). It launches on PyTorch's
current stream of the tensors' device.

Layouts: q, k, v and out are [B, H, N, D] by their shapes and lie in memory as their strides say, D
contiguous. The versions whose KernelInfo.strided is set (today stage 04's v4-v6, stage 05's v10 and
stage 07's attention versions; the registry says) read and write them where they lie: q.transpose(1, 2)
of a model's [B, N, H, D] tensor, or q sliced from a packed [B, N, 3, H, D] one, runs without a copy,
and out, made as torch.empty_like(q), is dense in q's order of dimensions: [B, N, H, D] for both. The
other versions take contiguous tensors alone; the picking entry runs one that takes strides where one
takes the dtype and head_dim, else the call is refused naming them (attention(..., make_contiguous=True)
copies instead). lse is contiguous always.

The library is found by find_library(): $FLASHSTAGES_LIBRARY, then the build tree of this checkout,
then the install prefix. kernels() lists what the library holds (each KernelInfo printed with its name,
stage, dtypes, head_dims, GPUs and technique); call() runs any entry, the GEMMs of stage 06 and the
backward passes of stage 05 included, on a params struct; query_pick() asks a picking entry what it
would run for a params struct.

flash_attention(q, k, v) is attention with gradients: one PyTorch operator, so that torch.compile
traces it whole; its gradients come back laid out as q, k and v (contiguous for an input that is not
dense, which its backward reads as a contiguous copy). torch_ops() registers its forward and backward
with torch.library (at first use; at import when PyTorch is imported already) and returns their
namespace, torch.ops.flashstages.

attention(), flash_attention(), pick() and torch_ops() need PyTorch; it is imported at their first
call, and without it they raise ModuleNotFoundError saying how to install it (README.md), or, handed
something other than tensors, a TypeError that says PyTorch is missing. Importing
flashstages, kernels(), call(), query_pick() and the structs need no PyTorch.
"""
import sys
import typing

from ._capi import (BF16, DTYPE_NAMES, FP8_E4M3, FP16, FP32, INT8, INT32, LIBRARY_ENV, PARAMS_OF_PROBLEM,  # noqa: F401
                    PICKING_ENTRIES, PROBLEM_ATTENTION, PROBLEM_ATTENTION_BWD, PROBLEM_GEMM, PROBLEM_NAMES,
                    AttentionBwdParams, AttentionParams, FlashstagesError, GemmParams, KernelInfo, Pick, call,
                    find_library, kernels, library_candidates, load, query_pick, status_name)

__all__ = ["attention", "attention_params", "attention_bwd_params", "flash_attention", "pick", "torch_ops",
           "library", "kernels", "call", "query_pick", "load", "find_library", "FlashstagesError", "AttentionParams",
           "AttentionBwdParams", "GemmParams", "KernelInfo", "Pick"]

_DTYPES = {"torch.float32": FP32, "torch.float16": FP16, "torch.bfloat16": BF16}
_lib = None
_versions_of = {}  # (library, problem) -> its versions, read from the registry once
_ops = None  # torch.ops.flashstages, once torch_ops() has registered the operators
# What to do without PyTorch: the message of the ModuleNotFoundError the tensor functions raise.
INSTALL_TORCH = (
    "flashstages.attention(), flash_attention(), pick() and torch_ops() need PyTorch, and this Python "
    "({python}) has no PyTorch. Install a CUDA build of it: `{python} -m pip install torch` (PyPI's Linux "
    "wheels are CUDA builds), or the command https://pytorch.org/get-started/locally/ gives for your CUDA "
    "version, e.g. `{python} -m pip install torch --index-url https://download.pytorch.org/whl/cu130`. The C "
    "interface (kernels(), call(), query_pick(), the params structs) needs no PyTorch.")


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


def _versions(lib, problem):
    """Every version of a problem kind the library holds (KernelInfo): those a picking entry chooses among."""
    key = (lib, problem)
    if key not in _versions_of:
        _versions_of[key] = kernels(lib, problem=problem)
    return _versions_of[key]


def _attention_kernel(lib, name, problem=PROBLEM_ATTENTION):
    found = _versions(lib, problem)
    if name not in [k.name for k in found]:
        kind = "an attention backward" if problem == PROBLEM_ATTENTION_BWD else "an attention"
        raise ValueError(f"kernel {name!r} is not {kind} kernel of this library; it has: "
                         f"{', '.join(k.name for k in found)}")
    return next(k for k in found if k.name == name)


def _takes(lib, name, problem):
    """What a call may run: [the version named], or for None every version the picking entry chooses
    among: those of the problem that keep no N×N scores in memory (KernelInfo.keeps_scores)."""
    if name is not None:
        return [_attention_kernel(lib, name, problem)]
    return [k for k in _versions(lib, problem) if not k.keeps_scores]


def _dtype_names(mask):
    return ", ".join(n for c, n in ((FP32, "float32"), (FP16, "float16"), (BF16, "bfloat16")) if mask & (1 << c))


def _head_dims_text(infos):
    """The head_dims some versions take, together: "[64, 128]", "1 to 256", "1 to 128 and [256]"."""
    bound = max((i.max_head_dim for i in infos if i.num_head_dims == 0), default=0)
    listed = sorted({d for i in infos for d in list(i.head_dims)[: i.num_head_dims] if d > bound})
    return " and ".join(([f"1 to {bound}"] if bound else []) + ([str(listed)] if listed else []))


def _score_keepers_note(lib, problem, dtype, d, backward):
    """For a refusal of the picking entry: the versions that would take the problem but keep N×N scores
    (never picked), and how to name one; "" where there is none."""
    keepers = [k.name for k in _versions(lib, problem) if k.keeps_scores and k.in_dtypes & (1 << _DTYPES[dtype])
               and k.takes_head_dim(d)]
    if not keepers:
        return ""
    option = "backward_kernel" if backward else "kernel"
    one = len(keepers) == 1
    return (f"; {', '.join(keepers)} {'takes' if one else 'take'} it but {'keeps' if one else 'keep'} N×N scores "
            f"in memory, so {'it runs' if one else 'they run'} only when named ({option}={keepers[0]!r})")


def _who(info, backward):
    """How a refusal names the version a call would run: "fs_flash_fwd_v5", "the backward, fs_flash_bwd_v2,"."""
    return f"the backward, {info.name}," if backward else info.name


def _check_takes(takes, dtype, d, backward=False, lib=None):
    """TypeError or ValueError unless a version of `takes` (KernelInfo: the one named, or all a picking
    entry chooses among) takes `dtype` (a torch dtype's name, one of _DTYPES) and head_dim d. lib: where
    `takes` is the picking entry's, the library whose score-keeping versions a refusal names."""
    if len(takes) == 1:
        info = takes[0]
        who = _who(info, backward)
        if not info.in_dtypes & (1 << _DTYPES[dtype]):
            raise TypeError(f"q is {dtype}: {who} takes {_dtype_names(info.in_dtypes)}")
        if not info.takes_head_dim(d):
            raise ValueError(f"head_dim {d}: {who} takes {_head_dims_text([info])}")
        return
    kind = "backward" if backward else "forward"
    problem = PROBLEM_ATTENTION_BWD if backward else PROBLEM_ATTENTION
    note = _score_keepers_note(lib, problem, dtype, d, backward) if lib is not None else ""
    with_dtype = [i for i in takes if i.in_dtypes & (1 << _DTYPES[dtype])]
    if not with_dtype:
        raise TypeError(f"q is {dtype}: no {kind} version that the picking entry runs takes it{note}")
    if not any(i.takes_head_dim(d) for i in with_dtype):
        raise ValueError(f"head_dim {d}: no {kind} version that the picking entry runs takes it in {dtype} "
                         f"(they take {_head_dims_text(with_dtype)}){note}")


def _check_tensor(name, t, ndim):
    for attribute in ("shape", "dtype", "device", "data_ptr", "is_contiguous", "stride"):
        if not hasattr(t, attribute):
            import importlib.util
            missing = "" if importlib.util.find_spec("torch") else \
                "; and this Python has no PyTorch, which attention() and flash_attention() need (README.md)"
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}{missing}")
    if len(t.shape) != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {tuple(t.shape)}")


def _contiguous_strides(shape):
    """The element strides of a contiguous tensor of `shape` (row-major)."""
    strides, step = [], 1
    for size in reversed(tuple(shape)):
        strides.insert(0, step)
        step *= size
    return tuple(strides)


def _dense(t):
    """Whether t's elements fill the memory they span, no gap and no overlap, in some order of its
    dimensions: torch's non-overlapping-and-dense rule, under which torch.empty_like(t) keeps t's strides.
    q.transpose(1, 2) of a [B, N, H, D] tensor is dense; q sliced from a packed [B, N, 3, H, D] tensor is
    not (the gaps hold K and V). Dimensions of size 1 move nothing and do not count. Written out rather
    than asked of PyTorch: the checks see stand-ins and fake tensors too."""
    need = 1
    for stride, size in sorted((s, n) for n, s in zip(t.shape, t.stride()) if n > 1):
        if stride != need:
            return False
        need *= size
    return True


def _empty_like_strides(t):
    """The strides torch.empty_like(t) gives: t's own where t is dense (_dense), else dense strides in t's
    order of dimensions (PyTorch's infer_dense_strides): for q sliced from a packed [B, N, 3, H, D] tensor,
    those of [B, N, H, D] without the gaps. Written out for the checks as _dense is; test_binding.py holds
    it to PyTorch's where PyTorch is installed."""
    shape, strides = tuple(t.shape), tuple(t.stride())
    if _dense(t):
        return strides
    order = list(range(len(shape)))[::-1]  # innermost first: insertion sort by stride, ties by size
    for i in range(1, len(order)):
        j = i
        for before in range(i - 1, -1, -1):
            a, b = order[before], order[j]
            if strides[a] == 0 or strides[b] == 0:  # a broadcast dimension decides nothing: look further
                continue
            if strides[a] < strides[b]:
                break
            if strides[a] > strides[b] or shape[a] > shape[b]:
                order[before], order[j] = order[j], order[before]
                j = before
    dense, step = [0] * len(shape), 1
    for dim in order:
        dense[dim] = step
        step *= shape[dim] if shape[dim] > 1 else 1
    return tuple(dense)


def _same_strides(shape, a, b):
    """Whether strides a and b lay a tensor of `shape` out alike: those of dimensions of size 1 aside, which
    move nothing (torch's is_contiguous() rule, and the library's)."""
    return all(sa == sb for n, sa, sb in zip(shape, a, b) if n > 1)


def _rows_apart(t):
    """Whether no two rows (of D elements) of t, [B, H, N, D], share an element: sorted by size, each
    stride of the batch, head and row dimensions reaches past the extent of the smaller ones. An expanded
    view's rows do not (stride 0); the library refuses such strides (FS_ERR_INVALID_STRIDES)."""
    extent = t.shape[3]
    for stride, size in sorted((s, n) for n, s in zip(t.shape[:3], t.stride()[:3]) if n > 1):
        if stride < extent:
            return False
        extent += (size - 1) * stride
    return True


def _takes_strides(takes, dtype, d):
    """Whether a version of `takes` reads any layout with D contiguous (KernelInfo.strided) in dtype at d."""
    return any(i.strided and i.in_dtypes & (1 << _DTYPES[dtype]) and i.takes_head_dim(d) for i in takes)


def _layout_fault(name, t):
    """Why no version reads or writes t ([B, H, N, D]) as it is laid out, whatever it takes; "" if none."""
    strides = tuple(t.stride())
    if t.shape[3] > 1 and strides[3] != 1:
        return (f"{name} has strides {strides}: its last dimension (D) must be contiguous, stride 1 (every "
                f"version reads and writes rows of D consecutive elements)")
    if not _rows_apart(t):
        return f"{name} has strides {strides}: its rows overlap (an expanded view), which no version reads"
    return ""


def _strides_note(takes, dtype, d, backward, lib):
    """For the refusal of a tensor that is not contiguous: why no version of `takes` reads it, and which
    versions of the library take strides (KernelInfo.strided, from the registry): those that take the
    dtype and head_dim too, where a named version takes no strides, else all of them."""
    kind, option = ("backward", "backward_kernel") if backward else ("forward", "kernel")
    strided = [k for k in _versions(lib or library(), PROBLEM_ATTENTION_BWD if backward else PROBLEM_ATTENTION)
               if k.strided]
    if not strided:
        return f"; no {kind} version takes strides"
    fitting = [k.name for k in strided if k.in_dtypes & (1 << _DTYPES[dtype]) and k.takes_head_dim(d)]
    alone = f"{_who(takes[0], backward)} takes contiguous tensors alone" if len(takes) == 1 else ""
    if fitting:  # a named version; the picking entry would run one of these
        return (f"; {alone}, and the {kind} versions that take strides and this dtype and head_dim are "
                f"{', '.join(fitting)} ({option}=None runs one)")
    return (f"; {alone + ', and ' if alone else ''}none of the {kind} versions that take strides "
            f"({', '.join(k.name for k in strided)}) takes {dtype} with head_dim {d}")


def _check_attention(takes, q, k, v, like_q=None, lse=None, make_contiguous=False,
                     copy_hint="or make_contiguous=True to let attention() copy it", backward=False, lib=None,
                     copies_sparse=False):
    """Every check attention() makes before the library is called; returns the inputs to pass (q, k, v
    as they are, or contiguous copies where make_contiguous allows and they need one).
    takes: the versions the call may run (_takes); lib: where they are the picking entry's, the library
    (its score-keeping versions are named when none of them takes the problem). like_q: {name: tensor} of
    tensors shaped and typed as q, written or read whole (out; the backward's out and d_o). lse:
    [B, H, Nq] float32, or None. copy_hint ends the message for a strided input (flash_attention() has no
    copying option). copies_sparse: the caller copies a q, k or v that is not dense (_dense) to a
    contiguous one itself (flash_attention's backward: a gradient is laid out as its tensor, and
    empty_like lays out only a dense one so), so only a dense one needs a version that takes strides.

    Layouts: D must be contiguous and rows apart (_layout_fault); any other strides pass where a version
    of `takes` takes strides and the dtype and head_dim (KernelInfo.strided), else only the contiguous
    layout does. lse is contiguous always."""
    like_q = {name: t for name, t in (like_q or {}).items() if t is not None}
    tensors = {"q": q, "k": k, "v": v}
    for name, t in tensors.items():
        _check_tensor(name, t, 4)
    for name, t in like_q.items():
        _check_tensor(name, t, 4)
    if lse is not None:
        _check_tensor("lse", lse, 3)
    everything = {**tensors, **like_q, **({"lse": lse} if lse is not None else {})}
    device = q.device
    for name, t in everything.items():
        if t.device.type != "cuda":
            raise ValueError(f"{name} is on {t.device}: every tensor must be on a CUDA device")
        if t.device != device:
            raise ValueError(f"{name} is on {t.device}, q on {device}: every tensor must be on the same device")
    dtype = str(q.dtype)
    if dtype not in _DTYPES:
        raise TypeError(f"q is {dtype}: flashstages takes torch.float32, torch.float16 or torch.bfloat16")
    for name, t in {**tensors, **like_q}.items():
        if str(t.dtype) != dtype:
            raise TypeError(f"{name} is {t.dtype}, q is {dtype}: {', '.join(['q', 'k', 'v', *like_q])} must have "
                            f"one dtype")
    if lse is not None and str(lse.dtype) != "torch.float32":
        raise TypeError(f"lse is {lse.dtype}: it must be torch.float32")
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
    for name, t in like_q.items():
        if tuple(t.shape) != tuple(q.shape):
            raise ValueError(f"{name} has shape {tuple(t.shape)}: it must be q's, {tuple(q.shape)}")
    if lse is not None and tuple(lse.shape) != (b, h, nq):
        raise ValueError(f"lse has shape {tuple(lse.shape)}: it must be [B, H, Nq] = {(b, h, nq)}")
    _check_takes(takes, dtype, d, backward, lib)
    # Some version the call may run reads any layout with D contiguous: strided tensors pass as they are.
    strided = _takes_strides(takes, dtype, d)
    for name, t in like_q.items():
        fault = _layout_fault(name, t)
        if fault:
            raise ValueError(fault)
        if not t.is_contiguous() and not strided:
            raise ValueError(f"{name} is not contiguous (a view with strides {tuple(t.stride())}): the kernel "
                             f"reads or writes it as a dense row-major tensor"
                             f"{_strides_note(takes, dtype, d, backward, lib)}")
    if lse is not None and not lse.is_contiguous():
        raise ValueError("lse is not contiguous: the kernel reads or writes it as a dense row-major tensor")
    inputs = []
    for name, t in tensors.items():
        fault = _layout_fault(name, t)
        if fault:
            fault += f": pass {name}.contiguous(), {copy_hint}"
        elif not t.is_contiguous() and not strided and not (copies_sparse and not _dense(t)):
            fault = (f"{name} is not contiguous (a view with strides {tuple(t.stride())}): pass {name}.contiguous(), "
                     f"{copy_hint}{_strides_note(takes, dtype, d, backward, lib)}")
        if fault:
            if not make_contiguous:
                raise ValueError(fault)
            t = t.contiguous()
        inputs.append(t)
    return inputs


def _set_strides(params, q, k, v, o):
    """Writes the element strides {batch, head, row} of Q, K, V and O into an AttentionParams; each a
    tensor's stride() (the first three of its four: D is contiguous) or a tuple like it."""
    for field, strides in (("q_strides", q), ("k_strides", k), ("v_strides", v), ("o_strides", o)):
        getattr(params, field)[:] = [int(s) for s in tuple(strides)[:3]]


def attention_params(q, k, v, out, lse=None, *, causal=False, scale=None):
    """The AttentionParams of O = attention(q, k, v) into `out` (and the LSE into `lse`, when given):
    sizes, K/V heads, dtype, the tensors' addresses and their strides, scale None (or 0, the library's
    convention) for 1/sqrt(D). Checks
    nothing: the callers have (attention(), flash_attention()), or build their tensors to fit
    (plots/head_to_head.py). Layouts: q, k, v and out as their strides lay them out, D contiguous
    (q.transpose(1, 2) of a [B, N, H, D] tensor is read where it lies), which the versions with
    KernelInfo.strided take and the others refuse unless contiguous (FS_ERR_UNSUPPORTED_LAYOUT); lse
    contiguous. The struct holds raw addresses: the tensors must outlive every call made with it."""
    b, h, nq, d = q.shape
    params = AttentionParams(b, h, nq, k.shape[2], d, 0.0 if scale is None else float(scale), int(bool(causal)),
                             _DTYPES[str(q.dtype)], q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr(),
                             lse.data_ptr() if lse is not None else None)
    params.kv_heads = k.shape[1]  # K, V: [B, KVH, Nk, D]
    # Always the tensors' own strides, never zeros for contiguous ones: the library reads strides that
    # spell out the contiguous layout as that layout (versions that take no strides run them) and
    # ignores the stride of a dimension of size 1, as torch's is_contiguous() does; one path, no case.
    _set_strides(params, q.stride(), k.stride(), v.stride(), out.stride())
    return params


def _launch(torch, lib, entry, params, device):
    """Runs a library entry on PyTorch's current stream of `device`, with `device` the current CUDA device."""
    with torch.cuda.device(device):
        call(lib, entry, params, torch.cuda.current_stream(device).cuda_stream)


def attention(q, k, v, *, causal=False, scale=None, out=None, lse=None, kernel=None, make_contiguous=False):
    """O = softmax(scale · Q Kᵀ [causal mask]) V with the library's fastest version for the GPU and the
    problem (the picking entry fs_attention_forward; pick() says which), or with the version `kernel`
    names ("fs_flash_fwd_v5": any attention kernel kernels() lists).

    q: [B, H, Nq, D]; k, v: [B, KVH, Nk, D] with KVH = H, or a divisor of H for grouped-query attention
    (query head h reads K/V head h // (H // KVH), as SDPA's enable_gqa=True; KVH = 1 is multi-query
    attention); one CUDA device, one dtype and head_dim a version takes (the named one, else any: the
    others are refused here, naming the tensor). The causal mask
    is aligned bottom-right (query i sees keys j <= i + Nk - Nq), like FlashAttention's and unlike
    PyTorch's is_causal (top-left): compare with torch.nn.attention.bias.causal_lower_right. scale:
    None (or 0, the library's convention) for 1/sqrt(D). out: the output to write ([B, H, Nq, D]), made
    when None as torch.empty_like(q):
    q's strides where q is dense, else dense in q's order of dimensions (for slices of a packed
    [B, N, 3, H, D] tensor, [B, N, H, D] without the gaps). lse: an optional [B, H, Nq] float32 tensor,
    contiguous, for the log-sum-exp of each row. Returns out.

    Layouts: D contiguous in q, k, v and out; other strides (q.transpose(1, 2) of a [B, N, H, D]
    tensor, a slice of a packed QKV tensor) are passed to the library as they are where the version
    named, or with kernel=None some version, takes strides (KernelInfo.strided: stage 04's v4-v6, stage
    07's attention versions) and the dtype and head_dim; else refused, naming the versions that take
    them. make_contiguous=True copies such a q, k or v instead (and one whose D is strided or whose rows
    overlap, an expanded view's), and leaves alone what some version reads as it is.
    """
    lib = library()
    q, k, v = _check_attention(_takes(lib, kernel, PROBLEM_ATTENTION), q, k, v, {"out": out}, lse, make_contiguous,
                               lib=None if kernel else lib)
    torch = _torch()
    if out is None:
        out = torch.empty_like(q)
    params = attention_params(q, k, v, out, lse, causal=causal, scale=scale)
    _launch(torch, lib, kernel or PICKING_ENTRIES[PROBLEM_ATTENTION][0], params, q.device)
    return out


def attention_bwd_params(fwd, d_o, dq, dk, dv, *, deterministic=False):
    """The AttentionBwdParams of dQ, dK, dV = the backward of attention_params' problem `fwd` (its O and
    LSE included) for the gradient d_o, into dq, dk, dv: their addresses, delta left null (the entry makes
    its own from O and dO), deterministic the mode's flag. Checks nothing: flash_attention()'s backward
    has, or the caller builds its tensors to fit (plots/head_to_head.py --backward); dq, dk, dv laid out
    as q, k, v, d_o as out. The struct holds raw addresses: the tensors must outlive every call made with
    it."""
    params = AttentionBwdParams()
    params.fwd = fwd
    params.d_o, params.dq, params.dk, params.dv = d_o.data_ptr(), dq.data_ptr(), dk.data_ptr(), dv.data_ptr()
    params.delta = None
    params.deterministic = int(bool(deterministic))
    return params


def pick(q, k, v, *, causal=False, backward=False, deterministic=False):
    """Which version attention() and flash_attention() run by default on these tensors, on their GPU, and
    why, without running it: the Pick the library's query fills (fs_pick_attention_forward, or with
    backward=True fs_pick_attention_backward, for flash_attention's backward; deterministic: its
    deterministic mode, which the backward ranking tells apart). A Pick prints the version's entry,
    stage and version and the reason (the measured point nearest the problem and the time there, or how
    far behind the fastest the version is near it, or the rule); .name is the entry, .info its KernelInfo. The tensors are checked as attention() checks them
    (as flash_attention()'s backward does, with backward=True), and their strides go with them: a
    strided problem is answered with a version that takes strides (KernelInfo.strided). The outputs, not
    made yet, stand in as fresh allocations would lie (_pick_params): 256-byte aligned, apart from q, k
    and v, laid out as attention() and flash_attention() would make them (the query checks their
    addresses and strides and reads nothing). Where the entry would refuse the problem: FlashstagesError
    with its code and reason.
    """
    if deterministic and not backward:
        raise ValueError("deterministic is the backward's mode: pass backward=True with it")
    lib = library()
    problem = PROBLEM_ATTENTION_BWD if backward else PROBLEM_ATTENTION
    q, k, v = _check_attention(_takes(lib, None, problem), q, k, v, backward=backward,
                               copy_hint="as attention() and flash_attention() would need it", lib=lib,
                               copies_sparse=backward)
    if backward:
        _check_mask(q, k, causal)  # as flash_attention() refuses it
    torch = _torch()
    params = _pick_params(q, k, v, causal, backward, deterministic)
    with torch.cuda.device(q.device):
        return query_pick(lib, params)


def _span_bytes(t):
    """The bytes from t's first element to the end of its last, as its strides lay them out."""
    return (sum((n - 1) * s for n, s in zip(t.shape, t.stride())) + 1) * t.element_size()


def _pick_params(q, k, v, causal, backward, deterministic):
    """pick()'s params: q, k and v where they lie, with their strides, and stand-ins for what the call
    would make, 256-byte aligned past every other: O (and dO) laid out as torch.empty_like(q) makes it
    (attention(), and flash_attention()'s forward; the backward copies dO into O's layout); with
    backward, what flash_attention()'s backward reads for each of q, k, v (the tensor, or a contiguous
    copy of one that is not dense) and the gradients, laid out as it."""
    free = max(t.data_ptr() + _span_bytes(t) for t in (q, k, v))

    def fresh(size):  # the next stand-in address, 256-byte aligned, past every other
        nonlocal free
        address = (free + 255) // 256 * 256
        free = address + size
        return address

    def read(t):  # (address, strides) of what the pass reads for t: a copy where empty_like cannot lay out t
        if backward and not _dense(t):
            return fresh(t.numel() * t.element_size()), _contiguous_strides(t.shape)
        return t.data_ptr(), tuple(t.stride())

    (q_at, q_strides), (k_at, k_strides), (v_at, v_strides) = read(q), read(k), read(v)
    q_bytes = q.numel() * q.element_size()
    kv_bytes = k.numel() * k.element_size()
    lse_bytes = q.numel() // q.shape[3] * 4
    params = AttentionParams(q.shape[0], q.shape[1], q.shape[2], k.shape[2], q.shape[3], 0.0, int(bool(causal)),
                             _DTYPES[str(q.dtype)], q_at, k_at, v_at, fresh(q_bytes), fresh(lse_bytes))
    params.kv_heads = k.shape[1]
    _set_strides(params, q_strides, k_strides, v_strides, _empty_like_strides(q))
    if backward:  # dO has O's strides; dQ, dK, dV those of what is read for Q, K, V (fs_attention_bwd_params)
        params = AttentionBwdParams(fwd=params, d_o=fresh(q_bytes), dq=fresh(q_bytes), dk=fresh(kv_bytes),
                                    dv=fresh(kv_bytes), delta=None, deterministic=int(bool(deterministic)))
    return params


def _check_flash_attention(lib, q, k, v, causal, kernel, backward_kernel):
    """Every check flash_attention()'s forward makes before the library is called: attention()'s for
    the forward (`kernel`, None for any version), then the backward's (`backward_kernel`, likewise) on
    the tensors as it will read them (a q, k or v that is not dense as a contiguous copy: _register_ops),
    so that nothing is refused only in the backward."""
    hint = "whose gradient flows back to the view (flash_attention() has no option to copy it)"
    _check_attention(_takes(lib, kernel, PROBLEM_ATTENTION), q, k, v, copy_hint=hint, lib=None if kernel else lib)
    backward = _takes(lib, backward_kernel, PROBLEM_ATTENTION_BWD)
    _check_attention(backward, q, k, v, copy_hint=hint, backward=True, lib=None if backward_kernel else lib,
                     copies_sparse=True)
    # The backward reads O too, which the forward makes as empty_like(q): for a q read as a copy (not
    # dense), still in q's order of dimensions, so not contiguous where that order is not [B, H, N, D]'s.
    o_strides = _empty_like_strides(q)
    dtype, d = str(q.dtype), q.shape[3]
    if not _same_strides(q.shape, o_strides, _contiguous_strides(q.shape)) and not _takes_strides(backward, dtype, d):
        raise ValueError(f"q is not contiguous (a view with strides {tuple(q.stride())}): the forward writes O in its "
                         f"order of dimensions (strides {o_strides}), which the backward reads: pass q.contiguous(), "
                         f"{hint}{_strides_note(backward, dtype, d, True, None if backward_kernel else lib)}")
    _check_mask(q, k, causal)


def _check_flash_backward(lib, d_o, q, k, v, out, lse, causal, kernel):
    """Every check the backward operator makes before the library is called."""
    _check_attention(_takes(lib, kernel, PROBLEM_ATTENTION_BWD), q, k, v, {"out": out, "d_o": d_o}, lse,
                     copy_hint="as the forward had them", backward=True, lib=None if kernel else lib,
                     copies_sparse=True)
    if not _same_strides(out.shape, d_o.stride(), out.stride()):
        raise ValueError(f"d_o has strides {tuple(d_o.stride())}, out {tuple(out.stride())}: dO must be laid out "
                         f"as O (the library reads both with O's strides)")
    _check_mask(q, k, causal)


def _check_mask(q, k, causal):
    if causal and q.shape[2] > k.shape[2]:
        raise ValueError(f"causal with Nq = {q.shape[2]} > Nk = {k.shape[2]}: the first Nq - Nk query rows "
                         f"would see no key (the mask is bottom-right aligned)")


def torch_ops():
    """Registers flash_attention()'s two PyTorch operators, once per process, and returns their namespace,
    torch.ops.flashstages:

        flash_attention_forward(q, k, v, causal, scale, deterministic, kernel, backward_kernel) -> (out, lse)
        flash_attention_backward(d_o, q, k, v, out, lse, causal, scale, deterministic, kernel) -> (dq, dk, dv)

    out is [B, H, Nq, D] in q's dtype, lse the log-sum-exp of each row, [B, H, Nq] float32 (not
    differentiable); dq, dk, dv have q's, k's and v's shapes. Layouts: out is torch.empty_like(q) in the
    real and in the fake forward (q's strides where q is dense, else dense in q's order of dimensions),
    so that a compiled graph sees the strides the kernel writes; the backward takes d_o laid out as out
    (ValueError otherwise: flash_attention's gradient copies dO into out's layout where autograd hands
    over another), and returns each gradient with the strides of its input where empty_like keeps them
    (a dense one), else contiguous, having read a contiguous copy of that input. kernel, backward_kernel:
    a version's name, or None for the picking entry. The forward's deterministic and backward_kernel are
    what its gradient (registered with torch.library.register_autograd: the backward operator) uses; its
    checks cover the backward's too. Each checks its tensors (flash_attention()'s checks) in its real and in
    its fake implementation (register_fake: shapes and dtypes for torch.compile), so a bad call is
    refused before anything runs, when traced as when run. Both launch on PyTorch's current stream.

    torch.compile cannot trace the registration itself: import PyTorch before flashstages (the package
    registers the operators at import then), or call torch_ops() once before compiling.
    Needs PyTorch 2.4 or newer (torch.library.custom_op)."""
    global _ops
    if _ops is None:
        _ops = _register_ops(_torch())
    return _ops


def _register_ops(torch):
    if not hasattr(torch.library, "custom_op"):
        raise RuntimeError(f"flash_attention needs PyTorch 2.4 or newer (torch.library.custom_op); this is "
                           f"PyTorch {torch.__version__}")
    Tensor, Optional, Tuple = torch.Tensor, typing.Optional, typing.Tuple

    def forward_outputs(q):
        """O and the LSE, made alike by the real and the fake forward, so that torch.compile sees O's strides.
        O as empty_like(q) lays it out: q's layout where q is dense (a [B, N, H, D] model's q.transpose(1, 2)
        gets O in that layout too), else dense in q's order of dimensions (_empty_like_strides). The LSE is
        contiguous always."""
        b, h, nq, _ = q.shape
        return (torch.empty_like(q),                                            # O: [B, H, Nq, D]
                torch.empty((b, h, nq), dtype=torch.float32, device=q.device))  # LSE: [B, H, Nq]

    def backward_layouts(q, k, v):
        """[(q, dq), (k, dk), (v, dv)]: what the backward reads for each input and its gradient, which the
        library writes with the strides of what it is the gradient of. empty_like keeps a dense tensor's
        strides (a [B, N, H, D] view's): the tensor as it is. It cannot keep those of one that is not (q
        sliced from a packed [B, N, 3, H, D] tensor): the kernel reads a contiguous copy, and the gradient
        comes back contiguous, which autograd takes. The real and the fake backward both call it, so they
        return the same strides."""
        def laid_out(t):
            grad = torch.empty_like(t)
            if grad.stride() == t.stride():
                return t, grad
            t = t.contiguous()
            return t, torch.empty_like(t)
        return [laid_out(t) for t in (q, k, v)]

    @torch.library.custom_op("flashstages::flash_attention_forward", mutates_args=())
    def forward(q: Tensor, k: Tensor, v: Tensor, causal: bool, scale: Optional[float], deterministic: bool,
                kernel: Optional[str], backward_kernel: Optional[str]) -> Tuple[Tensor, Tensor]:
        lib = library()
        _check_flash_attention(lib, q, k, v, causal, kernel, backward_kernel)
        out, lse = forward_outputs(q)
        params = attention_params(q, k, v, out, lse, causal=causal, scale=scale)
        _launch(torch, lib, kernel or PICKING_ENTRIES[PROBLEM_ATTENTION][0], params, q.device)
        return out, lse

    @forward.register_fake
    def _(q, k, v, causal, scale, deterministic, kernel, backward_kernel):
        _check_flash_attention(library(), q, k, v, causal, kernel, backward_kernel)
        return forward_outputs(q)

    @torch.library.custom_op("flashstages::flash_attention_backward", mutates_args=())
    def backward(d_o: Tensor, q: Tensor, k: Tensor, v: Tensor, out: Tensor, lse: Tensor, causal: bool,
                 scale: Optional[float], deterministic: bool, kernel: Optional[str]) -> Tuple[Tensor, Tensor, Tensor]:
        lib = library()
        _check_flash_backward(lib, d_o, q, k, v, out, lse, causal, kernel)
        # dk, dv: [B, KVH, Nk, D], the sums over each group of query heads (fwd.kv_heads)
        (q, dq), (k, dk), (v, dv) = backward_layouts(q, k, v)
        fwd = attention_params(q, k, v, out, lse, causal=causal, scale=scale)
        _launch(torch, lib, kernel or PICKING_ENTRIES[PROBLEM_ATTENTION_BWD][0],
                attention_bwd_params(fwd, d_o, dq, dk, dv, deterministic=deterministic), q.device)
        return dq, dk, dv

    @backward.register_fake
    def _(d_o, q, k, v, out, lse, causal, scale, deterministic, kernel):
        _check_flash_backward(library(), d_o, q, k, v, out, lse, causal, kernel)
        return tuple(grad for _, grad in backward_layouts(q, k, v))

    def setup_context(ctx, inputs, output):
        q, k, v, causal, scale, deterministic, _, backward_kernel = inputs
        out, lse = output
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.causal, ctx.scale, ctx.deterministic, ctx.backward_kernel = causal, scale, deterministic, backward_kernel
        ctx.mark_non_differentiable(lse)  # the backward reads it; no gradient flows through it

    def gradient(ctx, d_out, _d_lse):
        q, k, v, out, lse = ctx.saved_tensors
        # The library reads dO with O's strides; autograd may hand over another layout (an expanded one, from
        # a sum's backward): a copy into O's (out came from empty_like, dense, so empty_like(out) keeps it).
        if not _same_strides(out.shape, d_out.stride(), out.stride()):  # the backward's own check
            d_out = torch.empty_like(out).copy_(d_out)
        dq, dk, dv = backward(d_out, q, k, v, out, lse, ctx.causal, ctx.scale, ctx.deterministic, ctx.backward_kernel)
        return dq, dk, dv, None, None, None, None, None

    forward.register_autograd(gradient, setup_context=setup_context)
    return torch.ops.flashstages


def flash_attention(q, k, v, causal=False, scale=None, deterministic=False, *, kernel=None, backward_kernel=None):
    """attention() with gradients: O = softmax(scale · Q Kᵀ [causal mask]) V, differentiable in q, k, v,
    as one PyTorch operator (torch.ops.flashstages.flash_attention_forward, whose gradient is
    flash_attention_backward: torch_ops()), so that torch.compile(fullgraph=True) traces it whole.

    q: [B, H, Nq, D]; k, v: [B, KVH, Nk, D], KVH = H or a divisor of it (grouped-query attention, as
    attention() and SDPA's enable_gqa=True: the gradient of a K/V head sums over its group); one CUDA
    device, of a dtype and head_dim both passes take, D contiguous. Other strides pass where versions of
    both passes take strides (KernelInfo.strided: the forward's of attention(), stage 05's v10 and stage
    07's attention_bwd versions for the backward) and the dtype and head_dim: q.transpose(1, 2) of a
    [B, N, H, D] tensor runs with no copy,
    O comes back in q's layout and dQ, dK, dV in q's, k's and v's. A q, k or v that is not dense (sliced
    from a packed [B, N, 3, H, D] tensor) is read as it lies by the forward, and as a contiguous copy by
    the backward, whose gradient then comes back contiguous; O is then dense in q's order of dimensions
    ([B, N, H, D]), which the backward reads, so it too must take strides. causal: the bottom-right mask of
    attention(), which needs Nq <= Nk here. scale: None (or 0) for 1/sqrt(D). deterministic: dQ bitwise the
    same on every backward of the same inputs (no unordered atomic adds; slower); dK and dV always are.
    The forward keeps O and the LSE; the backward reads them with dO. Each runs the library's fastest
    version for the GPU and the problem (pick(), and pick(backward=True), say which), or the version
    kernel / backward_kernel names ("fs_flash_fwd_v5", "fs_flash_bwd_v10"). Both run on PyTorch's current
    stream.

    Bad input raises TypeError or ValueError, naming the tensor, before anything runs — including what
    only the backward refuses (a dtype or head_dim that no backward version takes, or that
    backward_kernel does not): always, whether or not any input requires grad, since a flash_attention()
    call stands for both passes (attention() runs the forward alone).
    """
    out, _ = torch_ops().flash_attention_forward(q, k, v, bool(causal), None if scale is None else float(scale),
                                                 bool(deterministic), kernel, backward_kernel)
    return out


def __getattr__(name):
    """flashstages.ring and flashstages.context_parallel, imported at their first use: ring needs
    PyTorch and context_parallel numpy, which importing flashstages does not."""
    if name in ("ring", "context_parallel"):
        import importlib
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# Registering cannot be traced by torch.compile: a program that imported PyTorch before flashstages gets
# the operators now, so that its first flash_attention() call may be inside torch.compile. Otherwise
# they are registered at the first torch_ops() or flash_attention() call.
if sys.modules.get("torch") is not None and hasattr(getattr(sys.modules["torch"], "library", None), "custom_op"):
    torch_ops()
