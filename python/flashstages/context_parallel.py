"""Context-parallel (ring) attention: the plan every rank follows, and its reference in fp64 (numpy).

When one sequence is split over W GPUs by its rows, each rank holds a shard of Q, K and V. The K/V
shards travel around a ring: at step s = 0 … W − 1 rank r holds the shard of rank (r − s) mod W, attends
its own queries to it, and passes it on. Each step gives a partial output O_s and its log-sum-exp LSE_s
over the keys in hand; merging the partials is exact, the same merge split-KV uses (stage 04's v6,
stage 07's v5):

    LSE = log(exp(LSE_a) + exp(LSE_b)),   O = exp(LSE_a − LSE) · O_a + exp(LSE_b − LSE) · O_b

since O_a = Σ_a exp(s_j − LSE_a) v_j is the softmax over a's keys, and the weights exp(LSE_a − LSE),
exp(LSE_b − LSE) rescale each to the softmax over both.

Under the causal mask a plain split into W row ranges leaves the last rank with most of the work (its
queries see every key) and the first with almost none. The zigzag layout cuts the sequence into 2W
chunks and gives rank r chunks r and 2W − 1 − r: each rank then holds one early and one late chunk, and
every rank does the same work (2W − 1 chunk pairs without a mask and two on the diagonal). The kernels'
causal mask is aligned bottom-right, which fits a chunk pair only where it is square, so the plan calls
them per chunk pair: "full" (every key of the key chunk precedes every query of the query chunk: no
mask), "diagonal" (the same chunk: the causal mask, Nq = Nk) or "skip" (every key follows every query).

The backward runs the same ring. dQ stays with its queries; dK and dV are summed as they travel with
their K/V shard, and after the last step go one more hop home. Each block's gradients need only the
block's keys and the rows' final LSE and delta = rowsum(dO ∘ O), which every rank has for its own
queries, so the blocks' gradients add up to the whole backward.

This module holds the plan (zigzag_chunks, ring_plan, rank_work), the merge, and a reference of the
whole ring in fp64, simulated in one process over W ranks (ring_attention_forward,
ring_attention_backward), which the tests hold against plain attention (python/test_context_parallel.py);
and the same ring run on one GPU with the library's kernels, rank after rank (ring_attention_one_gpu,
ring_attention_one_gpu_backward: PyTorch, imported at their first call; python/test_context_parallel_gpu.py). Shapes: q [B, H, N, D], k and v [B, KVH, N, D] with
KVH a divisor of H (grouped-query attention: query head h reads K/V head h // (H / KVH)), lse [B, H, N].
"""
from __future__ import annotations

import math
from dataclasses import dataclass

try:
    import numpy as np
except ModuleNotFoundError:  # the plan and the reference are numpy code; the rest of flashstages is not
    raise ModuleNotFoundError("flashstages.context_parallel needs numpy: python3 -m pip install numpy "
                              "(scripts/setup.sh brings it with matplotlib)", name="numpy") from None

__all__ = ["Call", "zigzag_chunks", "shard_chunks", "shard_rows", "pair_kind", "ring_plan", "rank_work", "merge",
           "attention_block", "attention_block_backward", "ring_attention_forward", "ring_attention_backward",
           "ring_attention_one_gpu", "ring_attention_one_gpu_backward"]


def zigzag_chunks(seq_len: int, world: int) -> list[tuple[int, int]]:
    """The 2·world chunks of a sequence of seq_len rows, as [start, stop): consecutive, covering it,
    their lengths differing by at most one (the first seq_len mod 2·world one row longer). A sequence
    shorter than 2·world rows leaves some chunks empty."""
    if not isinstance(world, int) or world < 1:
        raise ValueError(f"world must be a positive int, not {world!r}")
    if not isinstance(seq_len, int) or seq_len < 0:
        raise ValueError(f"seq_len must be a non-negative int, not {seq_len!r}")
    base, extra = divmod(seq_len, 2 * world)
    bounds = [0]
    for c in range(2 * world):
        bounds.append(bounds[-1] + base + (1 if c < extra else 0))
    return [(bounds[c], bounds[c + 1]) for c in range(2 * world)]


def shard_chunks(rank: int, world: int) -> tuple[int, int]:
    """The two chunks rank holds: one early (rank) and its mirror (2·world − 1 − rank)."""
    if not 0 <= rank < world:
        raise ValueError(f"rank {rank} is not in 0 … {world - 1}")
    return rank, 2 * world - 1 - rank


def shard_rows(seq_len: int, rank: int, world: int) -> np.ndarray:
    """The rows of the sequence rank holds, in the order its shard stores them (its early chunk, then
    its late one)."""
    chunks = zigzag_chunks(seq_len, world)
    return np.concatenate([np.arange(*chunks[c]) for c in shard_chunks(rank, world)])


def pair_kind(q_chunk: int, k_chunk: int, causal: bool) -> str:
    """How a query chunk meets a key chunk: "full" (no mask), "diagonal" (the causal mask on a square
    block) or "skip" (no key is seen)."""
    if not causal or k_chunk < q_chunk:
        return "full"
    return "diagonal" if k_chunk == q_chunk else "skip"


@dataclass(frozen=True)
class Call:
    """One kernel call of a step: the query chunk against the key chunk, with or without the mask."""
    q_chunk: int
    k_chunk: int
    causal: bool  # the diagonal pair: the causal mask, square


def ring_plan(rank: int, world: int, causal: bool) -> list[tuple[int, list[Call]]]:
    """Rank's steps: for step s, the rank whose K/V shard it holds, (rank − s) mod world, and the calls
    it makes on it (chunk pairs that see no key are left out)."""
    steps = []
    for s in range(world):
        source = (rank - s) % world
        calls = [Call(qc, kc, pair_kind(qc, kc, causal) == "diagonal")
                 for qc in shard_chunks(rank, world) for kc in shard_chunks(source, world)
                 if pair_kind(qc, kc, causal) != "skip"]
        steps.append((source, calls))
    return steps


def rank_work(seq_len: int, rank: int, world: int, causal: bool) -> int:
    """The (query, key) pairs rank's calls compute, the masked ones not counted: its share of the work."""
    chunks = zigzag_chunks(seq_len, world)
    work = 0
    for _, calls in ring_plan(rank, world, causal):
        for c in calls:
            nq = chunks[c.q_chunk][1] - chunks[c.q_chunk][0]
            nk = chunks[c.k_chunk][1] - chunks[c.k_chunk][0]
            work += nq * (nq + 1) // 2 if c.causal else nq * nk
    return work


def merge(o, lse, o_part, lse_part):
    """The output over two sets of keys from each set's output and log-sum-exp: o, o_part [..., N, D],
    lse, lse_part [..., N], numpy arrays or PyTorch tensors alike; a row that has seen no key has LSE −inf
    (its O is ignored). Exact: see the module's docstring. Returns (o, lse), o in o's dtype (keep it fp32
    or wider when the parts come in 16 bits: the running sum is where rounding would accumulate)."""
    if isinstance(o, np.ndarray):
        xp = np
    else:
        from . import _torch
        xp = _torch()
    lse_new = xp.logaddexp(lse, lse_part)
    shift = xp.where(xp.isfinite(lse_new), lse_new, 0.0)  # both −inf: the row has still seen no key
    w, w_part = xp.exp(lse - shift), xp.exp(lse_part - shift)  # exp(−inf − shift) = 0
    out = w[..., None] * o + w_part[..., None] * xp.asarray(o_part, dtype=o.dtype)
    return xp.asarray(out, dtype=o.dtype), lse_new


def _group(q: np.ndarray, k: np.ndarray) -> int:
    if q.ndim != 4 or k.ndim != 4:
        raise ValueError(f"q and k must be [B, H, N, D]; got {q.shape} and {k.shape}")
    if q.shape[0] != k.shape[0] or q.shape[3] != k.shape[3] or k.shape[1] == 0 or q.shape[1] % k.shape[1]:
        raise ValueError(f"q {q.shape} and k {k.shape}: batch and head_dim must agree, and k's heads divide q's")
    return q.shape[1] // k.shape[1]


def _scores(q, k, scale, causal):
    g = _group(q, k)
    s = np.einsum("bhid,bhjd->bhij", q, np.repeat(k, g, axis=1)) * scale
    if causal:  # aligned bottom-right: query i sees key j <= i + Nk − Nq
        nq, nk = q.shape[2], k.shape[2]
        s = np.where(np.arange(nk)[None, :] <= np.arange(nq)[:, None] + (nk - nq), s, -np.inf)
    return s, g


def attention_block(q, k, v, scale: float, causal: bool):
    """Attention of q over one block of keys, in fp64: (O [B, H, Nq, D], LSE [B, H, Nq]); a row that sees
    no key gets O = 0 and LSE = −inf (what the kernels write)."""
    q, k, v = (np.asarray(t, dtype=np.float64) for t in (q, k, v))
    s, g = _scores(q, k, scale, causal)
    m = s.max(axis=-1, initial=-np.inf)
    seen = np.isfinite(m)
    p = np.exp(s - np.where(seen, m, 0.0)[..., None])
    l = p.sum(axis=-1)
    o = np.einsum("bhij,bhjd->bhid", p, np.repeat(v, g, axis=1)) / np.where(seen, l, 1.0)[..., None]
    lse = np.where(seen, m + np.log(np.where(seen, l, 1.0)), -np.inf)
    return o, lse


def attention_block_backward(q, k, v, do, lse, delta, scale: float, causal: bool):
    """One block's share of the backward, in fp64, from the rows' final LSE and delta = rowsum(dO ∘ O):
    (dQ [B, H, Nq, D], dK and dV [B, KVH, Nk, D], summed over each K/V head's group)."""
    q, k, v, do = (np.asarray(t, dtype=np.float64) for t in (q, k, v, do))
    s, g = _scores(q, k, scale, causal)
    p = np.where(np.isfinite(lse)[..., None], np.exp(s - np.where(np.isfinite(lse), lse, 0.0)[..., None]), 0.0)
    kk, vv = np.repeat(k, g, axis=1), np.repeat(v, g, axis=1)
    dv = np.einsum("bhij,bhid->bhjd", p, do)
    ds = p * (np.einsum("bhid,bhjd->bhij", do, vv) - delta[..., None])
    dq = np.einsum("bhij,bhjd->bhid", ds, kk) * scale
    dk = np.einsum("bhij,bhid->bhjd", ds, q) * scale
    b, h = q.shape[:2]
    fold = lambda t: t.reshape(b, h // g, g, *t.shape[2:]).sum(axis=2)  # noqa: E731  (a group's heads)
    return dq, fold(dk), fold(dv)


def _check(q, k, v, world):
    """The shapes the ring takes (numpy arrays or PyTorch tensors alike), each refusal named."""
    _group(q, k)
    if k.shape != v.shape:
        raise ValueError(f"k {tuple(k.shape)} and v {tuple(v.shape)} must have the same shape")
    if q.shape[2] != k.shape[2]:
        raise ValueError(f"the ring splits one sequence: q has {q.shape[2]} rows, k {k.shape[2]}")
    if not isinstance(world, int) or world < 1:
        raise ValueError(f"world must be a positive int, not {world!r}")


def _softmax_scale(d: int, scale: float | None) -> float:
    """The scale the library uses: 1/sqrt(D) for None or 0 (fs_attention_params' default), else `scale`."""
    return 1.0 / math.sqrt(d) if scale is None or scale == 0 else scale


def _ring_calls(seq_len: int, world: int, causal: bool):
    """Every call of the ring as (query rows, key rows, causal), rank after rank and step after step as
    ring_plan lists them; the empty chunks of a sequence shorter than 2·world left out."""
    chunks = zigzag_chunks(seq_len, world)
    for rank in range(world):
        for _, calls in ring_plan(rank, world, causal):  # in a real ring, the shard arrives from the left
            for c in calls:
                qr, kr = slice(*chunks[c.q_chunk]), slice(*chunks[c.k_chunk])
                if qr.stop > qr.start and kr.stop > kr.start:
                    yield qr, kr, c.causal


def ring_attention_forward(q, k, v, world: int, causal: bool = False, scale: float | None = None,
                           partial_dtype=None):
    """The ring's forward simulated over `world` ranks in one process: each rank keeps its zigzag shard's
    running O and LSE (fp64 here; fp32 on a GPU) and merges one call's partial after another, the K/V
    shards passed round. partial_dtype (e.g. np.float16) rounds each call's O as a 16-bit kernel returns
    it, to show what that costs. Returns (O, LSE) in the sequence's order, as plain attention gives them."""
    _check(q, k, v, world)
    scale = _softmax_scale(q.shape[3], scale)
    o = np.zeros(q.shape, dtype=np.float64)
    lse = np.full(q.shape[:3], -np.inf)
    for qr, kr, diagonal in _ring_calls(q.shape[2], world, causal):
        o_part, lse_part = attention_block(q[:, :, qr], k[:, :, kr], v[:, :, kr], scale, diagonal)
        if partial_dtype is not None:
            o_part = o_part.astype(partial_dtype)
        o[:, :, qr], lse[:, :, qr] = merge(o[:, :, qr], lse[:, :, qr], o_part, lse_part)
    return o, lse


def ring_attention_backward(q, k, v, o, lse, do, world: int, causal: bool = False, scale: float | None = None):
    """The ring's backward simulated over `world` ranks: delta = rowsum(dO ∘ O) per rank for its own rows;
    each call adds its queries' share into their dQ and its keys' share into the dK, dV of the K/V shard in
    hand (in a real ring those travel with the shard and go one more hop home after the last step; the
    rows of each shard's dK and dV are added by its calls alone, so here they are summed in place).
    Returns (dQ, dK, dV) in the sequence's order."""
    _check(q, k, v, world)
    scale = _softmax_scale(q.shape[3], scale)
    delta = np.einsum("bhid,bhid->bhi", np.asarray(do, np.float64), np.asarray(o, np.float64))
    dq, dk, dv = np.zeros(q.shape), np.zeros(k.shape), np.zeros(v.shape)
    for qr, kr, diagonal in _ring_calls(q.shape[2], world, causal):
        dq_p, dk_p, dv_p = attention_block_backward(q[:, :, qr], k[:, :, kr], v[:, :, kr], do[:, :, qr],
                                                    lse[:, :, qr], delta[:, :, qr], scale, diagonal)
        dq[:, :, qr] += dq_p
        dk[:, :, kr] += dk_p
        dv[:, :, kr] += dv_p
    return dq, dk, dv


# ---------------------------------------------------------------------------------------------------
# The ring on one GPU with the library's kernels (PyTorch, imported at the first call)
# ---------------------------------------------------------------------------------------------------

def _check_torch(q, k, v, world):
    from . import _torch
    torch = _torch()  # without PyTorch: ModuleNotFoundError saying what to install
    if not all(isinstance(t, torch.Tensor) for t in (q, k, v)):
        raise TypeError("q, k and v must be PyTorch tensors")
    _check(q, k, v, world)


def ring_attention_one_gpu(q, k, v, world: int, causal: bool = False, scale: float | None = None):
    """The ring of `world` ranks run on one GPU, rank after rank: each chunk pair through the library's
    fastest forward (flashstages.torch_ops(), as flash_attention picks it), the partials merged into a
    float32 running O and LSE, as each rank of a real ring keeps them. What a real ring adds is only the
    transfers. q [B, H, N, D], k and v [B, KVH, N, D] on one CUDA device. Returns (O in q's dtype,
    LSE float32 [B, H, N])."""
    from . import _torch, torch_ops
    _check_torch(q, k, v, world)
    torch, ops = _torch(), torch_ops()
    o = torch.zeros(q.shape, dtype=torch.float32, device=q.device)
    lse = torch.full(q.shape[:3], float("-inf"), dtype=torch.float32, device=q.device)
    for qr, kr, diagonal in _ring_calls(q.shape[2], world, causal):
        o_part, lse_part = ops.flash_attention_forward(q[:, :, qr].contiguous(), k[:, :, kr].contiguous(),
                                                       v[:, :, kr].contiguous(), diagonal, scale, False, None, None)
        o[:, :, qr], lse[:, :, qr] = merge(o[:, :, qr], lse[:, :, qr], o_part, lse_part)
    return o.to(q.dtype), lse


def ring_attention_one_gpu_backward(q, k, v, out, lse, d_out, world: int, causal: bool = False,
                                    scale: float | None = None):
    """The ring's backward on one GPU: each chunk pair through the library's fastest backward, with the
    rows' final O and LSE (so that its delta is the final rowsum(dO ∘ O)), dQ, dK and dV summed in
    float32 as the ring would sum them (dK and dV travelling with their shard). Returns (dQ, dK, dV) in
    q's dtype."""
    from . import _torch, torch_ops
    _check_torch(q, k, v, world)
    torch, ops = _torch(), torch_ops()
    dq = torch.zeros(q.shape, dtype=torch.float32, device=q.device)
    dk = torch.zeros(k.shape, dtype=torch.float32, device=k.device)
    dv = torch.zeros(v.shape, dtype=torch.float32, device=v.device)
    for qr, kr, diagonal in _ring_calls(q.shape[2], world, causal):
        dq_p, dk_p, dv_p = ops.flash_attention_backward(
            d_out[:, :, qr].contiguous(), q[:, :, qr].contiguous(), k[:, :, kr].contiguous(), v[:, :, kr].contiguous(),
            out[:, :, qr].contiguous(), lse[:, :, qr].contiguous(), diagonal, scale, False, None)
        dq[:, :, qr] += dq_p.float()
        dk[:, :, kr] += dk_p.float()
        dv[:, :, kr] += dv_p.float()
    return dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype)
