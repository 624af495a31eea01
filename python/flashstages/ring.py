"""Ring attention over several GPUs: context_parallel's plan run with torch.distributed (NCCL).

Each rank of a process group holds one zigzag shard of a sequence (context_parallel.shard_rows: chunks r
and 2W − 1 − r of 2W): its rows of Q, K and V. ring_attention(q, k, v, seq_len) returns the rank's rows
of attention over the whole sequence, and is differentiable:

    torchrun --nproc-per-node 8 train.py      # in train.py, after dist.init_process_group("nccl") and
                                              # torch.cuda.set_device(int(os.environ["LOCAL_RANK"])):
    o = flashstages.ring.ring_attention(q_shard, k_shard, v_shard, seq_len, causal=True)

The forward: at step s the rank holds the K/V shard of rank (r − s) mod W, calls the fastest forward
(torch_ops(), as flash_attention picks it) on each chunk pair the plan lists (context_parallel.ring_plan:
unmasked, the causal diagonal, or skipped), and merges each partial O and LSE into a running O and LSE
in float32. Meanwhile the next shard is on its way: the rank sends the shard in hand to rank r + 1 and
receives rank r − 1's, posted before the step's calls, so that the transfer (NCCL runs it on its own
stream) overlaps them; the step waits for it only at its end. The partial O of a call comes back in
16 bits, rounded once; the running sum stays in float32 (rounding it every step would cost W roundings).

The backward runs the same ring with the final O and LSE (each call's delta is then the final
rowsum(dO ∘ O)): dQ stays with its queries; each step's dK, dV of the shard in hand are computed into a
buffer of their own while the sums of the ranks before arrive, added to them, and sent on with the
shard; after the last step one more hop takes each shard's sums home. The kernels return 16-bit
gradients per call; the ring adds them in float32.

Every rank checks its inputs, then the ranks compare what they were given (one all_gather): a refusal
on any rank, or ranks that disagree (lengths, shapes, dtypes, mask, scale), raises on every rank, named,
before any transfer; every wait has a timeout, so a rank that never comes is an error, not a hang. With
the gloo backend (CPU transfers), the shards travel through host memory: that is how the tests run the
ring on one GPU. The plan and its fp64 reference: context_parallel.py; the chapter: docs/07_tuned_tma.md,
Part 4.
"""
from __future__ import annotations

import datetime
import math
import struct
import time

from . import PROBLEM_ATTENTION, PROBLEM_ATTENTION_BWD, _check_takes, _takes, _torch, library, torch_ops
from .context_parallel import ring_plan, shard_chunks, zigzag_chunks, merge

__all__ = ["ring_attention", "zigzag_shard", "zigzag_unshard", "DEFAULT_TIMEOUT"]

DEFAULT_TIMEOUT = datetime.timedelta(minutes=5)

# The refusals a rank can meet in its own inputs, by code (0: none), as the other ranks name them.
_REFUSALS = {1: "q, k and v are not PyTorch tensors",
             2: "a tensor is not on a CUDA device, or q, k and v are on different devices",
             3: "the dtype is not float16 or bfloat16, or q, k and v differ",
             4: "the shapes are not [B, H, n, D] and [B, KVH, n, D] with KVH dividing H",
             5: "a tensor is not contiguous",
             6: "the shard's rows are not the rank's zigzag shard of seq_len",
             7: "seq_len, scale or timeout is not valid",
             8: "no forward or no backward version takes the dtype and head_dim"}
# What the ranks must agree on, in the order of the gathered row (after the refusal code).
_FIELDS = ["seq_len", "batch", "heads", "kv_heads", "head_dim", "dtype", "causal", "scale", "world"]
_DTYPES = ("float16", "bfloat16")


def _shard_len(chunks, owner, world):
    """The rows of rank `owner`'s shard: its two chunks of `chunks` (zigzag_chunks), which differ in length
    from rank to rank where 2W does not divide the sequence."""
    return sum(chunks[c][1] - chunks[c][0] for c in shard_chunks(owner, world))


def _float_bits(x: float) -> int:
    return struct.unpack("<q", struct.pack("<d", float(x)))[0]


def _shown(field, value):
    """A gathered field as a person reads it."""
    if field == "scale":
        return "None" if value == -1 else repr(struct.unpack("<d", struct.pack("<q", value))[0])
    if field == "dtype":
        return _DTYPES[value] if 0 <= value < len(_DTYPES) else "?"
    if field == "causal":
        return str(bool(value))
    return str(value)


def _local_check(q, k, v, seq_len, scale, rank, world, timeout):
    """(code, message) of this rank's inputs: (0, "") when they are fine."""
    torch = _torch()
    if not isinstance(seq_len, int) or seq_len < 0 \
            or (scale is not None and not (isinstance(scale, (int, float)) and math.isfinite(scale))) \
            or not isinstance(timeout, datetime.timedelta) or timeout.total_seconds() <= 0:
        return 7, f"seq_len {seq_len!r} must be an int >= 0, scale {scale!r} finite or None, timeout a positive timedelta"
    if not all(isinstance(t, torch.Tensor) for t in (q, k, v)):
        return 1, "q, k and v must be PyTorch tensors"
    if not all(t.is_cuda for t in (q, k, v)) or len({t.device for t in (q, k, v)}) != 1:
        return 2, f"q, k and v must be on one CUDA device; they are on {q.device}, {k.device}, {v.device}"
    if q.dtype not in (torch.float16, torch.bfloat16) or k.dtype != q.dtype or v.dtype != q.dtype:
        return 3, f"q, k and v must be float16 or bfloat16, all one; got {q.dtype}, {k.dtype}, {v.dtype}"
    if q.dim() != 4 or k.dim() != 4 or k.shape != v.shape or q.shape[0] != k.shape[0] or q.shape[3] != k.shape[3] \
            or q.shape[2] != k.shape[2] or k.shape[1] == 0 or q.shape[1] % k.shape[1]:
        return 4, (f"q must be [B, H, n, D], k and v [B, KVH, n, D] with KVH dividing H; got {tuple(q.shape)}, "
                   f"{tuple(k.shape)}, {tuple(v.shape)}")
    if not all(t.is_contiguous() for t in (q, k, v)):
        return 5, "q, k and v must be contiguous (zigzag_shard gives contiguous shards)"
    rows = _shard_len(zigzag_chunks(seq_len, world), rank, world)
    if q.shape[2] != rows:
        return 6, (f"rank {rank} of {world} holds {rows} rows of a sequence of {seq_len} (chunks {shard_chunks(rank, world)} "
                   f"of 2·{world}); its q has {q.shape[2]}")
    try:  # what the calls would refuse (a head_dim no forward or backward takes), refused before any transfer
        lib = library()
        for problem, backward in ((PROBLEM_ATTENTION, False), (PROBLEM_ATTENTION_BWD, True)):
            _check_takes(_takes(lib, None, problem), str(q.dtype), q.shape[3], backward=backward, lib=lib)
    except Exception as e:  # noqa: BLE001 (also a library that cannot be found: this rank's refusal, named)
        return 8, f"{type(e).__name__}: {e}"
    return 0, ""


def _agree(q, k, v, seq_len, causal, scale, group, timeout):
    """The ranks' inputs, checked on each rank and compared across them: raises on every rank, naming
    the rank and what is wrong, when any rank refuses its inputs or two ranks disagree."""
    torch, dist = _torch(), _torch().distributed
    rank, world = dist.get_rank(group), dist.get_world_size(group)
    code, message = _local_check(q, k, v, seq_len, scale, rank, world, timeout)
    ok = code == 0
    dtype = _DTYPES.index(str(q.dtype).removeprefix("torch.")) if ok else -1
    shape = (q.shape[0], q.shape[1], k.shape[1], q.shape[3]) if ok else (-1,) * 4
    row = [code, seq_len if isinstance(seq_len, int) else -1, *shape, dtype, int(bool(causal)),
           _float_bits(scale) if ok and scale is not None else -1, world]
    # NCCL gathers on this rank's GPU: q's where its check passed (the current device need not be it).
    cuda = q.device if ok else torch.device("cuda", torch.cuda.current_device())
    device = cuda if dist.get_backend(group) == "nccl" else "cpu"
    mine = torch.tensor(row, dtype=torch.int64, device=device)
    rows = [torch.empty_like(mine) for _ in range(world)]
    wait_for = timeout if code != 7 else DEFAULT_TIMEOUT  # a bad timeout of its own: the rank still takes part
    _wait(dist.all_gather(rows, mine, group=group, async_op=True), wait_for, "comparing the ranks' inputs")
    rows = torch.stack(rows).cpu().tolist()
    if code:
        raise (TypeError if code == 1 else ValueError)(f"ring_attention: rank {rank}: {message}")
    for other, r in enumerate(rows):
        if r[0]:
            raise ValueError(f"ring_attention: rank {other} refused its inputs ({_REFUSALS[r[0]]}); see its error")
    for i, field in enumerate(_FIELDS, start=1):
        values = {r[i] for r in rows}
        if len(values) > 1:
            seen = ", ".join(f"rank {j}: {_shown(field, r[i])}" for j, r in enumerate(rows))
            raise ValueError(f"ring_attention: the ranks disagree on {field} ({seen})")


def _wait(work, timeout, what):
    """Waits for an asynchronous collective or transfer, at most `timeout`: a rank that never comes is a
    RuntimeError naming what was awaited, not a hang. It polls the work's completion against its own
    deadline rather than trusting work.wait(timeout), which on some PyTorch versions' NCCL backend returns
    at once unless TORCH_NCCL_BLOCKING_WAIT is set; then wait() raises the work's own error, if any, and
    on NCCL orders the current stream after it."""
    deadline = time.monotonic() + timeout.total_seconds()
    while not work.is_completed():
        if time.monotonic() > deadline:
            raise RuntimeError(f"ring_attention: {what}: no answer within {timeout}")
        time.sleep(1e-4)
    try:
        work.wait()
    except RuntimeError as e:
        raise RuntimeError(f"ring_attention: {what}: {e}") from e


class _Ring:
    """One rank's view of the ring: its neighbours, the transfers (through host memory on gloo), and
    where the chunks of a shard lie within it."""

    def __init__(self, group, seq_len, causal, timeout):
        torch, dist = _torch(), _torch().distributed
        self.torch, self.dist, self.group, self.timeout = torch, dist, group, timeout
        self.rank, self.world = dist.get_rank(group), dist.get_world_size(group)
        self.staged = dist.get_backend(group) != "nccl"  # gloo: CPU tensors only
        to_global = (lambda r: r) if group is None else (lambda r: dist.get_global_rank(group, r))
        self.next, self.prev = to_global((self.rank + 1) % self.world), to_global((self.rank - 1) % self.world)
        self.chunks = zigzag_chunks(seq_len, self.world)
        self.plan = ring_plan(self.rank, self.world, causal)

    def rows(self, owner, chunk):
        """The rows of `chunk` within the shard of rank `owner` (its early chunk first)."""
        early = shard_chunks(owner, self.world)[0]
        a, b = self.chunks[chunk]
        start = 0 if chunk == early else self.chunks[early][1] - self.chunks[early][0]
        return slice(start, start + b - a)

    def calls(self, step):
        """Step `step`'s source rank and its calls as (query rows, key rows, causal), empty chunks left out."""
        source, calls = self.plan[step]
        out = []
        for c in calls:
            qr, kr = self.rows(self.rank, c.q_chunk), self.rows(source, c.k_chunk)
            if qr.stop > qr.start and kr.stop > kr.start:
                out.append((qr, kr, c.causal))
        return out

    def pass_on(self, send, owner):
        """Sends `send` ([..., n, D], a shard's rows second to last) to the next rank and receives from the
        previous one the same for rank `owner`'s shard, both posted now; returns a function that waits for
        them and gives the received tensor."""
        if self.world == 1:
            return lambda: send
        dist = self.dist
        shape = list(send.shape)
        shape[-2] = _shard_len(self.chunks, owner, self.world)
        out = self.torch.empty(shape, dtype=send.dtype, device=send.device)
        if self.staged:  # gloo: host tensors, one send and one receive (it takes no batch of them)
            s, r = send.cpu(), self.torch.empty_like(out, device="cpu")
            works = [dist.isend(s, self.next, self.group), dist.irecv(r, self.prev, self.group)]
        else:  # NCCL: one group of both, on its own stream
            s, r = send, out
            works = dist.batch_isend_irecv([dist.P2POp(dist.isend, s, self.next, self.group),
                                            dist.P2POp(dist.irecv, r, self.prev, self.group)])

        def wait():
            _ = s  # the tensor sent stays alive until its transfer is done
            for w in works:
                _wait(w, self.timeout, f"rank {self.rank}: the shard from rank {self.prev}")
            if self.staged:
                out.copy_(r)
            return out
        return wait


def _forward(ring, q, k, v, scale, shards=None):
    """The forward's ring; shards: every rank's [K; V] shard already in place (the benchmark's "compute"
    series, python/bench_ring_attention.py: the same calls without a transfer)."""
    torch, ops = _torch(), torch_ops()
    o = torch.zeros(q.shape, dtype=torch.float32, device=q.device)
    lse = torch.full(q.shape[:3], float("-inf"), dtype=torch.float32, device=q.device)
    kv = torch.stack([k, v])  # one transfer a step: [2, B, KVH, n, D]
    for step in range(ring.world):
        if shards is not None:
            kv = shards[ring.plan[step][0]]
        # The shard of step + 1, rank (r − step − 1)'s, on its way while this step's calls run.
        arriving = ring.pass_on(kv, (ring.rank - step - 1) % ring.world) if step + 1 < ring.world and shards is None \
            else None
        for qr, kr, diagonal in ring.calls(step):
            o_part, lse_part = ops.flash_attention_forward(q[:, :, qr].contiguous(), kv[0][:, :, kr].contiguous(),
                                                           kv[1][:, :, kr].contiguous(), diagonal, scale, False, None, None)
            o[:, :, qr], lse[:, :, qr] = merge(o[:, :, qr], lse[:, :, qr], o_part, lse_part)
        if arriving:
            kv = arriving()
    return o.to(q.dtype), lse


def _backward(ring, q, k, v, out, lse, d_out, scale):
    torch, ops = _torch(), torch_ops()
    dq = torch.zeros(q.shape, dtype=torch.float32, device=q.device)
    kv = torch.stack([k, v])
    sums = None  # the shard in hand's dK, dV summed by the ranks before this one: [2, B, KVH, n, D] float32
    for step in range(ring.world):
        incoming = (ring.rank - step - 1) % ring.world  # the owner of the next step's shard
        arriving = ring.pass_on(kv, incoming) if step + 1 < ring.world else None
        mine = torch.zeros(kv.shape, dtype=torch.float32, device=q.device)
        for qr, kr, diagonal in ring.calls(step):
            dq_p, dk_p, dv_p = ops.flash_attention_backward(
                d_out[:, :, qr].contiguous(), q[:, :, qr].contiguous(), kv[0][:, :, kr].contiguous(),
                kv[1][:, :, kr].contiguous(), out[:, :, qr].contiguous(), lse[:, :, qr].contiguous(), diagonal,
                scale, False, None)
            dq[:, :, qr] += dq_p.float()
            mine[0][:, :, kr] += dk_p.float()
            mine[1][:, :, kr] += dv_p.float()
        if sums is not None:
            mine += sums()  # the sums of the ranks before, which arrived while this step's calls ran
        # The sums travel on with the shard; after the last step, one more hop takes them home.
        sums = ring.pass_on(mine, incoming)
        if arriving:
            kv = arriving()
    home = sums()
    return dq.to(q.dtype), home[0].to(k.dtype), home[1].to(v.dtype)


def _function():
    torch = _torch()

    class RingAttention(torch.autograd.Function):
        @staticmethod
        def forward(ctx, q, k, v, ring, scale):
            out, lse = _forward(ring, q, k, v, scale)
            ctx.save_for_backward(q, k, v, out, lse)
            ctx.ring, ctx.scale = ring, scale
            ctx.mark_non_differentiable(lse)
            return out, lse

        @staticmethod
        def backward(ctx, d_out, _d_lse):
            q, k, v, out, lse = ctx.saved_tensors
            dq, dk, dv = _backward(ctx.ring, q, k, v, out, lse, d_out.contiguous(), ctx.scale)
            return dq, dk, dv, None, None

    return RingAttention


_ring_function = None


def ring_attention(q, k, v, seq_len: int, group=None, causal: bool = False, scale: float | None = None,
                   timeout: datetime.timedelta = DEFAULT_TIMEOUT, return_lse: bool = False):
    """Attention of this rank's queries over the whole sequence, the K/V shards passed round the ring of
    `group` (None: the default process group, as torch.distributed.init_process_group made it).

    q [B, H, n, D], k and v [B, KVH, n, D] (KVH dividing H): this rank's zigzag shard of a sequence of
    seq_len rows (zigzag_shard cuts it), contiguous, float16 or bfloat16, on this rank's CUDA device.
    causal: the causal mask over the whole sequence; scale: 1 / sqrt(D) when None (or 0). Every rank calls it
    with the same seq_len, shapes, dtype, causal and scale, else every rank raises ValueError naming the
    disagreement; every wait gives up after `timeout` (RuntimeError). Returns this rank's O [B, H, n, D]
    in q's dtype (and its LSE [B, H, n], float32, with return_lse), differentiable in q, k and v."""
    global _ring_function
    torch = _torch()
    if not torch.distributed.is_available() or not torch.distributed.is_initialized():
        raise RuntimeError("ring_attention: torch.distributed is not initialized (torch.distributed.init_process_group)")
    _agree(q, k, v, seq_len, causal, scale, group, timeout)
    ring = _Ring(group, seq_len, bool(causal), timeout)
    if _ring_function is None:
        _ring_function = _function()
    out, lse = _ring_function.apply(q, k, v, ring, scale)
    return (out, lse) if return_lse else out


def zigzag_shard(x, rank: int, world: int, dim: int = 2):
    """Rank's zigzag shard of a whole-sequence tensor (the sequence along `dim`), contiguous: the rows
    context_parallel.shard_rows lists, its early chunk then its late one."""
    chunks = zigzag_chunks(x.shape[dim], world)
    return _torch().cat([x.narrow(dim, chunks[c][0], chunks[c][1] - chunks[c][0]) for c in shard_chunks(rank, world)],
                        dim=dim).contiguous()


def zigzag_unshard(shards, dim: int = 2):
    """The whole-sequence tensor from every rank's shard (rank order), undoing zigzag_shard."""
    world = len(shards)
    seq_len = sum(s.shape[dim] for s in shards)
    chunks = zigzag_chunks(seq_len, world)
    pieces = [None] * (2 * world)
    for r, s in enumerate(shards):
        early, late = shard_chunks(r, world)
        n_early = chunks[early][1] - chunks[early][0]
        pieces[early] = s.narrow(dim, 0, n_early)
        pieces[late] = s.narrow(dim, n_early, s.shape[dim] - n_early)
    return _torch().cat(pieces, dim=dim)
