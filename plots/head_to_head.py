#!/usr/bin/env python3
"""Time flashstages attention kernels and PyTorch's SDPA backends in one process, in alternating rounds.

    python3 plots/head_to_head.py --kernel fs_flash_fwd_tma_v8 --shape 2,16,8192,128 --out h2h.json
    python3 plots/head_to_head.py --kernel fs_flash_fwd_tma_v7 --shape 2,32,8192,64 --backend cudnn flash --rounds 7

The stage benchmarks (Google Benchmark, C++) and plots/sdpa_bench.py time our kernels and SDPA's in two
processes, one after the other. Under the H100's power limit the clock a kernel gets depends on what
ran just before it and for how long, so two such runs a minute apart can differ by several percent,
which is the size of the margins the stage 07 goal asks about. This script takes the order out of the
comparison: for each shape, dtype and mask it runs every member (each --kernel, through the library's
C entry, and each --backend of SDPA) back to back for --heat seconds, then times each once per round,
with the members in reversed order every other round, each timed exactly as sdpa_bench.py times a point (10 warm-up calls, 0.2 s of calls back to back,
30 timed calls with the L2 flushed and the host's dispatch covered before each, the median kept). It
prints each round's TFLOPS and each kernel's ratio to each backend, then the ratios' range over the
rounds, and writes every round's row in Google Benchmark's JSON layout:

    stage07/attention/v8/fp16/D:128/N:8192/causal:0/round:3    (sdpa_cudnn/... for SDPA's)

Before timing, each kernel's output is compared with SDPA's (the first --backend) on the same inputs:
relative L2 distance at most 1e-2 (fp16 and bf16 rounding; the stages' own tests check against fp64).
Q, K, V [B, H, N, D] random normal (never zeros), O written by each member into its own tensor. The
causal mask is the project's, bottom-right; with Nq = Nk, as --shape has it, that is PyTorch's is_causal
(else causal_lower_right, as sdpa_bench.py passes it). FLOPs = 4·B·H·N²·D, halved for causal
(common/lib/flops.h). The library is found as the Python package finds it (python/README.md:
$FLASHSTAGES_LIBRARY, then the checkout's build tree). Without PyTorch or CUDA this prints a skip line
and exits 0; so it does, after a note, when no --kernel can run on this GPU (stage 07's need Hopper).

--shape-gqa B,H,KVH,Nq,Nk,D (repeatable, beside or instead of --shape; sdpa_bench.py's flag) times a
shape whose K and V have KVH heads, a divisor of H (grouped-query attention; KVH = 1 multi-query), in the
forward and in the --backward and --train modes below alike:

    python3 plots/head_to_head.py --backward --kernel fs_flash_bwd_tma_v10 --shape-gqa 2,16,4,8192,8192,128

Q [B, H, Nq, D], K, V [B, KVH, Nk, D]: the kernels get kv_heads = KVH (query head h reads K/V head
h // (H / KVH)), SDPA the same tensors with enable_gqa=True (also the check's reference: dK and dV of KVH
heads, each the sum over its group of query heads), never expanded outside the timing. Rows are named as
the stages' benchmarks and sdpa_bench.py name grouped points, B, H, KVH, Nq and Nk in the name:
stage07/attention_bwd/v10/fp16/D:128/B:2/H:16/KVH:4/Nq:8192/Nk:8192/causal:1/round:3 and
sdpa_cudnn_bwd/fp16/D:128/B:2/H:16/KVH:4/... (KVH = H: the names of Nq != Nk, without KVH). FLOPs as
without grouping (every query head does its products); bytes with K and V (dK, dV) of KVH heads, as
sdpa_bench.py counts them. --causal 1 with Nq > Nk is refused (the first Nq - Nk rows would see no key).

--backward times backward entries (stage 05's fs_flash_bwd_v*, stage 07's fs_flash_bwd_tma_v*) against
SDPA's backward, in the same rounds:

    python3 plots/head_to_head.py --backward --kernel fs_flash_bwd_tma_v9 --shape 2,16,8192,128 --dtype fp16 --causal 0

Each backend is timed as sdpa_bench.py --backward times it: its forward once, outside the timing, then
out.backward(dO, retain_graph=True) per call with the grads set to None before it (untimed); each kernel
by its entry alone, on dO (random normal) and the O and LSE of reference_forward (in fp32; the LSE as
common/lib/flashstages.h defines it: natural log, per row, [B, H, N] fp32), delta left null. So either
side's time is whatever its backward launches on the GPU, its pass over delta = rowsum(dO ∘ O) included.
Before timing, each kernel's dQ, dK and dV are compared with the first backend's gradients on the same
inputs (relative L2 distance at most 1e-2 each). Rows are named as the backward stages' benchmarks name
theirs, stage07/attention_bwd/v9/fp16/D:128/N:8192/causal:0/round:3, stage05/v10/..., and
sdpa_cudnn_bwd/... for SDPA's; FLOPs 2.5 × the forward's (common/lib/flops.h), bytes twice the forward's,
as sdpa_bench.py counts them. --deterministic sets fs_attention_bwd_params.deterministic (dQ without
unordered atomic adds), and the kernels' series then end in _deterministic, as the stages' do; SDPA's
backward is timed as it is.

--train times a training step's attention as a PyTorch user runs it: the forward and the backward through
autograd, flashstages.flash_attention (the picking entries choose both passes' versions; the script prints
which) against SDPA's backends, in the same rounds:

    python3 plots/head_to_head.py --train --shape 2,16,8192,128 --dtype fp16 bf16 --causal 0 1

A call is out = attention(q, k, v); out.backward(dO), with the grads set to None before it (untimed); the
host time of both calls is in it when it exceeds what the GPU sleep covers (a warning says so). Before
timing, flash_attention's O, dQ, dK and dV are compared with the first backend's (relative L2 distance at
most 1e-2 each). FLOPs 3.5 × the forward's (the forward and 2.5 × it for the backward), bytes the sum of
both passes'; rows flash_attention_train/fp16/D:128/N:8192/causal:0/round:3 and sdpa_cudnn_train/...
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent / "python"))  # the checkout's flashstages package, when not installed

import sdpa_bench  # noqa: E402  (the same timing, FLOP count, names and context as the SDPA peers)

SKIP_LINE = "head_to_head: skipped — PyTorch with CUDA not available"
CHECK_TOLERANCE = 1e-2  # relative L2 distance between a kernel's O (dQ, dK, dV) and SDPA's, fp16 and bf16
# reference_forward's fp32 scores at a time (1 GiB): at B = 2, H = 16, N = 8192 a block of 1024 query rows.
SCORE_BLOCK_ELEMENTS = 1 << 28


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kernel", nargs="+", default=[], metavar="ENTRY",
                   help="library entries to time, e.g. fs_flash_fwd_tma_v8 (flashstages.kernels() lists them)")
    p.add_argument("--train", action="store_true",
                   help="time flash_attention's forward and backward (the picking entries) against SDPA's (see above)")
    p.add_argument("--backward", action="store_true",
                   help="time backward entries, e.g. fs_flash_bwd_tma_v9, against SDPA's backward (see above)")
    p.add_argument("--deterministic", action="store_true",
                   help="with --backward: the kernels' deterministic dQ (series *_deterministic)")
    p.add_argument("--shape", type=sdpa_bench.parse_shape, action="append", default=[], metavar="B,H,N,D",
                   help="a shape to time (repeatable; it or --shape-gqa is required), e.g. 2,16,8192,128")
    p.add_argument("--shape-gqa", type=sdpa_bench.parse_shape_gqa, action="append", default=[],
                   metavar="B,H,KVH,Nq,Nk,D",
                   help="a shape whose K and V have KVH heads, a divisor of H (repeatable; grouped-query "
                        "attention, KVH = 1 multi-query), e.g. 2,16,4,8192,8192,128 (see above)")
    p.add_argument("--dtype", nargs="+", choices=sdpa_bench.DTYPE_NAMES, default=list(sdpa_bench.DTYPE_NAMES))
    p.add_argument("--causal", nargs="+", type=int, choices=(0, 1), default=[0, 1])
    p.add_argument("--backend", nargs="+", choices=list(sdpa_bench.BACKENDS), default=["cudnn"],
                   help="SDPA backends to time against (default cudnn; the first is the check's reference)")
    p.add_argument("--rounds", type=int, default=5, help="rounds per shape, dtype and mask (default 5)")
    p.add_argument("--heat", type=float, default=2.0,
                   help="seconds of every member back to back before a cell's first round (default 2)")
    p.add_argument("--warmup", type=int, default=10, help="untimed calls before timing (default 10)")
    p.add_argument("--runs", type=int, default=30, help="timed calls; the median is kept (default 30)")
    p.add_argument("--no-l2-flush", action="store_true", help="do not overwrite L2 before each timed call")
    p.add_argument("--out", type=Path, default=None, help="JSON file to write (default: print only)")
    args = p.parse_args(argv)
    if not args.shape and not args.shape_gqa:
        p.error("the following arguments are required: --shape or --shape-gqa")
    if 1 in args.causal and any(nq > nk for _, _, _, nq, nk, _ in args.shape_gqa):
        p.error("--causal 1 with a --shape-gqa whose Nq > Nk: the mask is bottom-right aligned, so its first "
                "Nq - Nk query rows would see no key")
    if args.rounds < 1 or args.warmup < 0 or args.runs < 1 or not args.heat >= 0:
        p.error("--rounds and --runs must be >= 1, --warmup and --heat >= 0")
    if args.deterministic and not args.backward:
        p.error("--deterministic is the backward's mode: give it with --backward")
    if args.train and (args.kernel or args.backward):
        p.error("--train times flash_attention with the versions its picking entries choose: "
                "give it without --kernel and --backward")
    if not args.train and not args.kernel:
        p.error("the following arguments are required: --kernel (or --train)")
    args.kernel = list(dict.fromkeys(args.kernel))
    return args


def shapes_of(args: argparse.Namespace) -> list[tuple[int, int, int, int, int, int]]:
    """(B, H, KVH, Nq, Nk, D) of every shape to time, in order: each --shape (KVH = H, Nq = Nk = N), then
    each --shape-gqa; none twice."""
    return list(dict.fromkeys([*((b, h, h, n, n, d) for b, h, n, d in args.shape), *args.shape_gqa]))


def cell_name(dtype: str, b: int, h: int, kvh: int, nq: int, nk: int, d: int, causal: bool) -> str:
    """A cell's part of its rows' names, after the series: the point as the stages' benchmarks and
    sdpa_bench.py name it (sdpa_bench.bench_name, common/tools/bench.cpp's point_name):
    fp16/D:128/N:8192/causal:0 (+ /B:<b>/H:<h> off the default rule), fp16/D:128/B:1/H:16/Nq:512/Nk:16384/causal:1
    for Nq != Nk, and fp16/D:128/B:2/H:16/KVH:4/Nq:8192/Nk:8192/causal:1 where K and V have fewer heads than Q."""
    return sdpa_bench.bench_name("", dtype, b, h, nq, nk, d, causal, kvh)[1:]  # [1:]: the empty series' "/"


def cell_where(dtype: str, b: int, h: int, kvh: int, nq: int, nk: int, d: int, causal: bool) -> str:
    """A cell as the messages name it: fp16 B=2 H=16 N=8192 D=128 causal=0, or with KVH, Nq and Nk
    (fp16 B=2 H=16 KVH=4 Nq=8192 Nk=8192 D=128 causal=1) where K/V have fewer heads or Nq != Nk."""
    sizes = f"N={nq}" if (kvh, nq) == (h, nk) else f"KVH={kvh} Nq={nq} Nk={nk}"
    return f"{dtype} B={b} H={h} {sizes} D={d} causal={int(causal)}"


def check_kernels(fs, lib, names: list[str], shapes, dtypes, backward: bool = False) -> dict:
    """The KernelInfo of each name; SystemExit naming what is wrong when one is not an attention entry of
    this library (with backward, an attention backward entry), is one of the other pass, or does not take
    a requested dtype or head dim (the last size of each of `shapes`: (B, H, N, D) or (B, H, KVH, Nq, Nk, D))."""
    wanted, other = ((fs.PROBLEM_ATTENTION_BWD, fs.PROBLEM_ATTENTION) if backward
                     else (fs.PROBLEM_ATTENTION, fs.PROBLEM_ATTENTION_BWD))
    found = {k.name: k for k in fs.kernels(lib, problem=wanted)}
    of_other_pass = {k.name for k in fs.kernels(lib, problem=other)}
    codes = {"fp16": fs.FP16, "bf16": fs.BF16}
    infos = {}
    for name in names:
        if name in of_other_pass:
            why = ("is an attention forward kernel: --backward times backward entries alone" if backward
                   else "is an attention backward kernel: time it with --backward")
            raise SystemExit(f"head_to_head: error: {name} {why}")
        if name not in found:
            kind = "attention backward" if backward else "attention"
            raise SystemExit(f"head_to_head: error: {name!r} is not an {kind} kernel of this library; it has: "
                             f"{', '.join(found)}")
        info = found[name]
        for dtype in dtypes:
            if codes[dtype] not in info.dtypes:
                raise SystemExit(f"head_to_head: error: {name} does not take {dtype}")
        for *_, d in shapes:
            if not info.takes_head_dim(d):
                raise SystemExit(f"head_to_head: error: {name} does not take head_dim {d}")
        infos[name] = info
    return infos


def series_of(info, deterministic: bool = False) -> str:
    """A kernel's series, as its stage's benchmarks name it: stage07/attention/v8, stage05/v10; a backward
    entry's deterministic dQ as stages/*/bench.cu name it (register_attention_bwd_deterministic):
    stage07/attention_bwd/v9_deterministic."""
    return f"{info.stage.decode()}/{info.version.decode()}" + ("_deterministic" if deterministic else "")


TRAIN_SERIES = "flash_attention_train"  # --train: flashstages.flash_attention, both passes
TRAIN_SUFFIX = "_train"  # --train: an SDPA backend's series, sdpa_cudnn_train


def peer_series(key: str, backward: bool = False, train: bool = False) -> str:
    """An SDPA backend's series, as sdpa_bench.py names it: sdpa_cudnn, or sdpa_cudnn_bwd for its backward;
    sdpa_cudnn_train for a training step (--train)."""
    suffix = TRAIN_SUFFIX if train else sdpa_bench.BACKWARD_SUFFIX if backward else ""
    return sdpa_bench.BACKENDS[key][0] + suffix


def rel_l2(torch, out, ref) -> float:
    diff = (out.double() - ref.double()).norm()
    return float(diff / ref.double().norm().clamp_min(1e-30))


def require_close(torch, who: str, where: str, named) -> None:
    """SystemExit naming `who` and the first of `named` ((name, tensor, SDPA's tensor), ...) farther from
    SDPA's than CHECK_TOLERANCE in relative L2 distance: that member is not timed."""
    for what, got, want in named:
        err = rel_l2(torch, got, want)
        if not err <= CHECK_TOLERANCE:
            raise SystemExit(f"head_to_head: error: {who} {where}: {what} rel L2 {err:.2e} to SDPA's "
                             f"(tolerance {CHECK_TOLERANCE:.0e}); not timed")


def sdpa_backends(args: argparse.Namespace):
    """Each --backend's key and the context that chooses it, entered around the timing rather than inside
    each call."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    for key in args.backend:
        backend = getattr(SDPBackend, sdpa_bench.BACKENDS[key][1])

        def chosen(backend=backend):
            return sdpa_kernel([backend])

        yield key, chosen


def sdpa_arguments(q, k, causal: bool) -> dict:
    """SDPA's keyword arguments for the project's problem on q and k: its bottom-right causal mask
    (sdpa_bench.causal_arguments: is_causal where Nq = Nk), and enable_gqa=True where K and V have fewer
    heads than Q (query head h reads K/V head h // (H / KVH), as the library's kv_heads; the gradient of a
    K/V head sums over its group), as sdpa_bench.py calls it."""
    arguments = sdpa_bench.causal_arguments(causal, q.shape[-2], k.shape[-2])
    if k.shape[-3] != q.shape[-3]:
        arguments["enable_gqa"] = True
    return arguments


def grad_leaves(q, k, v):
    """Fresh leaves of q, k, v that require grad, and a call that sets their grads to None (run before each
    timed call, untimed, so that every call writes fresh gradients as the kernels do)."""
    leaves = [t.detach().requires_grad_(True) for t in (q, k, v)]

    def clear():
        for t in leaves:
            t.grad = None

    return leaves, clear


def heat(torch, members, seconds: float) -> None:
    """Every member in turn, back to back, for `seconds`: the first round then starts on a GPU at its
    sustained clock. On a GPU that has just been idle the member timed first ran up to 7% faster than in
    the next round (cuDNN, bf16 D = 128 on the H100, 2026-11-25), more than the margins compared here."""
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _, fn, chosen, before in members:
            with chosen():
                if before is not None:
                    before()
                fn()
        torch.cuda.synchronize()


def dispatch_us(torch, fn, before=None, calls: int = 20) -> float:
    """Host time per call of fn() when nothing waits for the GPU: what the sleep before each timed call
    must cover for the events to time the kernel alone. before(), when given, runs ahead of each call and
    outside the time, as time_call runs it."""
    torch.cuda.synchronize()
    host = 0.0
    for _ in range(calls):
        if before is not None:
            before()
        start = time.perf_counter()
        fn()
        host += time.perf_counter() - start
    torch.cuda.synchronize()
    return host / calls * 1e6


def forward_members(torch, fs, lib, infos: dict, args: argparse.Namespace, q, k, v, causal: bool,
                    where: str) -> list[tuple]:
    """(series, call, what to enter around its timing, what to run before each call) of each --backend's
    SDPA and each kernel, on q, k, v; every kernel's O is checked against the first backend's first."""
    import torch.nn.functional as F

    stream = torch.cuda.current_stream().cuda_stream
    mask = sdpa_arguments(q, k, causal)
    members = []
    ref = None
    for key, chosen in sdpa_backends(args):

        def sdpa_call():
            return F.scaled_dot_product_attention(q, k, v, **mask)

        with chosen():
            out = sdpa_call()  # a refusal raises here: the comparison has no peer then
        if ref is None:
            ref = out
        members.append((peer_series(key), sdpa_call, chosen, None))
    for name, info in infos.items():
        o = torch.empty_like(q)
        params = fs.attention_params(q, k, v, o, causal=causal)

        def fs_call(name=name, params=params, o=o):  # o stays alive while params points at it
            fs.call(lib, name, params, stream)

        o.fill_(float("nan"))  # poisoned: every element must be written
        fs_call()
        require_close(torch, name, where, [("O", o, ref)])
        members.append((series_of(info), fs_call, contextlib.nullcontext, None))
    return members


def reference_forward(torch, q, k, v, causal: bool):
    """O and the LSE the backward entries read, from q ([B, H, Nq, D]), k and v ([B, KVH, Nk, D], query head
    h reading K/V head h // (H / KVH) as the library's kv_heads has it) in fp32, SCORE_BLOCK_ELEMENTS
    scores at a time. The LSE as the library defines it (common/lib/flashstages.h, fs_attention_params.lse;
    the forward entries write it so): per query row, the natural log of Σⱼ exp(scale · q·kⱼ) over the keys
    the row sees, scale = 1/sqrt(D) (params.scale = 0), [B, H, N] fp32, contiguous. O = Σⱼ exp(scale · q·kⱼ
    - LSE) vⱼ in q's dtype, contiguous, as dO is (the entries read dO with O's strides). Computed here, not
    taken from one of the backends, so that every kernel reads the same exact forward whatever --backend is."""
    b, h, nq, d = q.shape
    nk, group = k.shape[2], h // k.shape[1]
    o = torch.empty(q.shape, device=q.device, dtype=q.dtype)
    lse = torch.empty(b, h, nq, device=q.device, dtype=torch.float32)
    # Grouped K/V as H heads, each K/V head once per query head of its group (no copy more where KVH = H).
    k32, v32 = (t.float() if group == 1 else t.float().repeat_interleave(group, dim=1) for t in (k, v))
    k_t = k32.transpose(-1, -2)
    step = max(1, SCORE_BLOCK_ELEMENTS // (b * h * nk))
    for start in range(0, nq, step):
        stop = min(start + step, nq)
        s = torch.matmul(q[:, :, start:stop].float(), k_t).mul_(d ** -0.5)
        if causal:  # the project's mask, bottom-right: query i sees keys j <= i + Nk - Nq
            rows = torch.arange(start, stop, device=q.device).unsqueeze(1)
            s.masked_fill_(torch.arange(nk, device=q.device) > rows + (nk - nq), float("-inf"))
        block = torch.logsumexp(s, dim=-1)
        lse[:, :, start:stop] = block
        o[:, :, start:stop] = torch.matmul(s.sub_(block.unsqueeze(-1)).exp_(), v32)
    return o, lse


def backward_members(torch, fs, lib, infos: dict, args: argparse.Namespace, q, k, v, causal: bool,
                     where: str) -> list[tuple]:
    """(series, call, what to enter around its timing, what to run before each call) of each --backend's
    SDPA backward and each backward kernel, on q, k, v and one random normal dO; every kernel's dQ, dK and
    dV are checked against the first backend's first. SDPA's as sdpa_bench.measure_backward_point times
    it: the forward once, here, then out.backward(dO, retain_graph=True) per call, the grads set to None
    before each (untimed), so that every call writes fresh ones as the kernels do."""
    import torch.nn.functional as F

    stream = torch.cuda.current_stream().cuda_stream
    d_o = torch.randn_like(q)
    mask = sdpa_arguments(q, k, causal)
    members = []
    ref = None
    for key, chosen in sdpa_backends(args):
        leaves, clear = grad_leaves(q, k, v)
        with chosen():
            out = F.scaled_dot_product_attention(*leaves, **mask)  # a refusal raises here
            out.backward(d_o, retain_graph=True)  # or here: the comparison has no peer then

        def sdpa_call(out=out):
            out.backward(d_o, retain_graph=True)

        if ref is None:
            ref = [t.grad for t in leaves]
        clear()  # the next call writes fresh grads: ref is never added into
        members.append((peer_series(key, backward=True), sdpa_call, chosen, clear))
    o, lse = reference_forward(torch, q, k, v, causal)
    for name, info in infos.items():
        grads = [torch.empty_like(t) for t in (q, k, v)]  # dK, dV with K's and V's KVH heads
        # As flash_attention's backward fills them: the forward problem (sizes, scale, mask, strides, O and
        # the LSE), then dO and the gradients, delta null (the entry makes its own).
        params = fs.attention_bwd_params(fs.attention_params(q, k, v, o, lse, causal=causal), d_o, *grads,
                                         deterministic=args.deterministic)

        def fs_call(name=name, params=params, alive=(d_o, o, lse, *grads)):  # alive while params points at them
            fs.call(lib, name, params, stream)

        for grad in grads:
            grad.fill_(float("nan"))  # poisoned: every element must be written
        fs_call()
        require_close(torch, name, where, zip(("dQ", "dK", "dV"), grads, ref))
        members.append((series_of(info, args.deterministic), fs_call, contextlib.nullcontext, None))
    return members


def train_flops(b: int, h: int, nq: int, nk: int, d: int, causal: bool) -> float:
    """A training step's attention: the forward's FLOPs and the backward's (2.5 × the forward's)."""
    return sdpa_bench.attention_flops(b, h, nq, nk, d, causal) + sdpa_bench.attention_bwd_flops(b, h, nq, nk, d, causal)


def train_bytes(b: int, h: int, nq: int, nk: int, d: int, element_size: int, kv_heads: int | None = None) -> float:
    """Both passes' least traffic, as sdpa_bench.py counts each (K, V and their gradients with kv_heads
    heads; None: h)."""
    return (sdpa_bench.attention_bytes(b, h, nq, nk, d, element_size, kv_heads)
            + sdpa_bench.attention_bwd_bytes(b, h, nq, nk, d, element_size, kv_heads))


def train_members(torch, fs, lib, infos: dict, args: argparse.Namespace, q, k, v, causal: bool,
                  where: str) -> list[tuple]:
    """(series, call, what to enter around its timing, what to run before each call) of each --backend's
    SDPA and of flashstages.flash_attention, each call a forward and a backward through autograd on leaves
    of their own and one random normal dO; flash_attention's O, dQ, dK and dV are checked against the
    first backend's first, and the versions its picking entries choose are printed."""
    import torch.nn.functional as F

    d_o = torch.randn_like(q)
    mask = sdpa_arguments(q, k, causal)

    def step_of(attend, leaves):
        return lambda: attend(*leaves).backward(d_o)

    members = []
    ref = None
    for key, chosen in sdpa_backends(args):
        leaves, clear = grad_leaves(q, k, v)
        step = step_of(lambda *t: F.scaled_dot_product_attention(*t, **mask), leaves)
        with chosen():
            out = F.scaled_dot_product_attention(*leaves, **mask)  # a refusal raises here
            out.backward(d_o)  # or here: the comparison has no peer then
        if ref is None:
            ref = [out.detach()] + [t.grad for t in leaves]
        clear()
        members.append((peer_series(key, train=True), step, chosen, clear))
    leaves, clear = grad_leaves(q, k, v)
    step = step_of(lambda *t: fs.flash_attention(*t, causal=causal), leaves)
    picks = [fs.pick(q, k, v, causal=causal), fs.pick(q, k, v, causal=causal, backward=True)]
    print(f"head_to_head: {where}: flash_attention runs {picks[0].name} ({picks[0].reason}) and, backward, "
          f"{picks[1].name} ({picks[1].reason})")
    out = fs.flash_attention(*leaves, causal=causal)
    out.backward(d_o)
    require_close(torch, "flash_attention", where,
                  zip(("O", "dQ", "dK", "dV"), [out.detach()] + [t.grad for t in leaves], ref))
    clear()
    members.append((TRAIN_SERIES, step, contextlib.nullcontext, clear))
    return members


def run(torch, fs, lib, infos: dict, args: argparse.Namespace) -> tuple[list[dict], list[str]]:
    """Every round's rows and the summary lines."""
    dtypes = {"fp16": torch.float16, "bf16": torch.bfloat16}
    flush = None if args.no_l2_flush else sdpa_bench.l2_flush_buffer(torch)
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    clock_khz = getattr(props, "clock_rate", 0) or 1_980_000  # the boost clock: the shortest the sleep lasts
    cover_us = sdpa_bench.HOST_COVER_CYCLES / clock_khz * 1e3
    members_of = train_members if args.train else backward_members if args.backward else forward_members
    flops_of, bytes_of = ((train_flops, train_bytes) if args.train else
                          (sdpa_bench.attention_bwd_flops, sdpa_bench.attention_bwd_bytes) if args.backward
                          else (sdpa_bench.attention_flops, sdpa_bench.attention_bytes))
    ours = [TRAIN_SERIES] if args.train else [series_of(info, args.deterministic) for info in infos.values()]
    torch.manual_seed(0)
    rows, summary = [], []
    for dtype_name in args.dtype:
        dtype = dtypes[dtype_name]
        for b, h, kvh, nq, nk, d in shapes_of(args):
            # Q [B, H, Nq, D], K, V [B, KVH, Nk, D], contiguous, random normal, as sdpa_bench.py makes them.
            q = torch.randn(b, h, nq, d, device="cuda", dtype=dtype)
            k, v = (torch.randn(b, kvh, nk, d, device="cuda", dtype=dtype) for _ in range(2))
            for causal in (bool(c) for c in args.causal):
                flops = flops_of(b, h, nq, nk, d, causal)  # grouped K/V or not: every query head's products
                nbytes = bytes_of(b, h, nq, nk, d, q.element_size(), kvh)  # K, V (dK, dV) with KVH heads
                members = members_of(torch, fs, lib, infos, args, q, k, v, causal,
                                     cell_where(dtype_name, b, h, kvh, nq, nk, d, causal))
                cell = cell_name(dtype_name, b, h, kvh, nq, nk, d, causal)
                heat(torch, members, args.heat)
                tflops = {series: [] for series, _, _, _ in members}
                for r in range(1, args.rounds + 1):
                    order = members if r % 2 else members[::-1]
                    line = []
                    for series, fn, chosen, before in order:
                        with chosen():
                            t_us, cpu_us = sdpa_bench.time_call(torch, fn, args.warmup, args.runs, flush, before)
                            host = dispatch_us(torch, fn, before)
                        row = sdpa_bench.median_row(f"{series}/{cell}/round:{r}", args.runs, t_us, cpu_us, flops,
                                                    nbytes)
                        row["dispatch_us"] = host
                        rows.append(row)
                        tflops[series].append(row["TFLOPS"])
                        line.append(f"{series} {row['TFLOPS']:6.1f}")
                        if host > cover_us:
                            print(f"head_to_head: warning: {series} takes {host:.0f} us of host time per call, "
                                  f"more than the {cover_us:.0f} us the GPU sleep covers: its time includes some")
                    print(f"head_to_head: {cell} round {r}: " + ", ".join(line), flush=True)
                for mine in ours:
                    for key in args.backend:
                        peer = peer_series(key, args.backward, args.train)
                        ratios = [a / p for a, p in zip(tflops[mine], tflops[peer])]
                        summary.append(f"{mine + '/' + cell:52s} / {peer:11s} "
                                       f"min {min(ratios):.3f}  median {statistics.median(ratios):.3f}  "
                                       f"max {max(ratios):.3f}  ({len(ratios)} rounds; "
                                       f"{statistics.median(tflops[mine]):.1f} vs "
                                       f"{statistics.median(tflops[peer]):.1f} TFLOPS)")
            del q, k, v
            torch.cuda.empty_cache()
    return rows, summary


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    import flashstages as fs

    try:
        lib = fs.library()
    except (FileNotFoundError, OSError) as err:
        raise SystemExit(f"head_to_head: error: {err}")
    infos = check_kernels(fs, lib, args.kernel, shapes_of(args), args.dtype, args.backward)
    torch = sdpa_bench.import_cuda_torch(SKIP_LINE)
    if torch is None:
        return 0
    device = torch.cuda.current_device()
    for name in list(infos):  # e.g. stage 07's kernels on a GPU other than Hopper
        code = lib.fs_kernel_check_device(ctypes.byref(infos[name]), device)
        if code != 0:
            print(f"head_to_head: note: {name} cannot run on {torch.cuda.get_device_name(device)} "
                  f"({fs.status_name(lib, code)}); skipped")
            del infos[name]
    if not infos and not args.train:
        print("head_to_head: skipped — no --kernel runs on this GPU")
        return 0
    context = sdpa_bench.make_context(torch, args)
    context["executable"] = "plots/head_to_head.py"
    context["rounds"] = str(args.rounds)
    rows, summary = run(torch, fs, lib, infos, args)
    print("head_to_head: each kernel's TFLOPS over each backend's, round by round:")
    for line in summary:
        print("  " + line)
    if args.out is not None:
        sdpa_bench.write_benchmark_json("head_to_head", args.out, context, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
