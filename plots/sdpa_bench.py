#!/usr/bin/env python3
"""Time PyTorch's scaled_dot_product_attention backends as peers for the attention stages.

    python3 plots/sdpa_bench.py --out results/h100-sxm/sdpa.json
    python3 plots/sdpa_bench.py --out results/h100-sxm/sdpa.json --shape 2,16,8192,128
    python3 plots/sdpa_bench.py --out results/h100-sxm/sdpa.json --shape-qk 1,16,512,16384,128
    python3 plots/sdpa_bench.py --out results/h100-sxm/sdpa.json --shape-gqa 1,32,8,1,16384,128
    python3 plots/sdpa_bench.py --out results/h100-sxm/sdpa_bwd.json --backward
    python3 plots/sdpa_bench.py --out results/h100-sxm/sdpa_bwd.json --backward --seq 8192 --no-gqa
    python3 plots/sdpa_bench.py --out results/h100-sxm/sdpa_packed.json --packed-defaults --dtype fp16 --backend flash
    python3 plots/sdpa_bench.py --out results/h100-sxm/sdpa_shapes.json --no-grid --backend flash cudnn

Backends: FLASH_ATTENTION → sdpa_flash, CUDNN_ATTENTION → sdpa_cudnn, EFFICIENT_ATTENTION →
sdpa_efficient, each forced alone with torch.nn.attention.sdpa_kernel. Shapes follow the project's
attention benchmarks: B·N = 16384, H = 2048/D, Q/K/V/O as [B, H, N, D] contiguous, random inputs;
then stage 04's short-query shapes (B, H, Nq, Nk) = (1, 16, 512, 16384), (1, 32, 1024, 8192),
(2, 8, 256, 32768), (4, 32, 1, 8192) at each --dim (Q, O [B, H, Nq, D], K, V [B, H, Nk, D]);
then its grouped-query shapes (B, H, KVH, Nq, Nk) = (1, 32, 8, 1, 16384), (8, 32, 8, 1, 8192),
(1, 32, 8, 512, 16384), (4, 32, 1, 1, 8192) at D = 128 (K, V [B, KVH, Nk, D], called with
enable_gqa=True: query head h reads K/V head h // (H / KVH), as the stage's kv_heads does).
Each point: 10 warm-up calls and 0.2 s of calls back to back (the sustained clock, as
common/lib/timer.h warms up the C++ tools), then 30 timed calls (CUDA events around each one, L2
flushed and the host's dispatch covered by a short GPU sleep before each), and the median is written. The JSON has Google Benchmark's layout, one "median" aggregate
row per point, so plots/plot_results.py reads it like the stages' own files (--no-grid skips the
square grid and times the other shapes alone; --dim picks the grid's head_dims, as the reference run
splits stage 07's grid by head_dim):

    sdpa_flash/fp16/D:128/N:8192/causal:1    (+ /B:<b>/H:<h> for a --shape off the default rule)
    sdpa_flash/fp16/D:128/B:1/H:16/Nq:512/Nk:16384/causal:1    (Nq ≠ Nk: the stage's names)
    sdpa_flash/fp16/D:128/B:1/H:32/KVH:8/Nq:1/Nk:16384/causal:0    (K/V with fewer heads than Q)

The causal mask is the project's, bottom-right aligned (query i sees keys j <= i + Nk - Nq). With
Nq = Nk that is PyTorch's is_causal; otherwise is_causal is top-left (and the flash backend refuses
it), so the mask is torch.nn.attention.bias.causal_lower_right(Nq, Nk) as attn_mask.
FLOPs = 4·B·H·Nq·Nk·D; causal: halved when Nq = Nk (FlashAttention's convention), otherwise
4·B·H·D × the visible pairs, exactly as common/lib/flops.h counts them. Bytes = Q, K, V read once +
O written once (K and V with their KVH heads).

--packed ENTRIES,LO,HI,D (repeatable) times a packed batch instead of the default shapes (--packed-defaults:
the four stage 07's attention benchmarks time, 2 × 8192 and 16 × 512–8192 rows at D = 64 and 128): ENTRIES
sequences with as many keys as queries, their lengths drawn from [LO, HI] by the generator of
common/tools/bench.cpp (packed_lengths: the same lengths as the stage's packed benchmarks), H = 2048/D,
as PyTorch's jagged nested tensors ([total, H, D] values, offsets), passed as [B, H, j, D] views, causal
by is_causal (one entry's queries and keys are as many: top-left and bottom-right agree). Named as the
stages name theirs, sdpa_flash/fp16/D:128/H:16/packed:16x512-8192/causal:0 (x<LO> when LO = HI); FLOPs
entry by entry, bytes over the packed tensors. Not every backend takes nested tensors (a refusal is
skipped with a note). SDPA's jagged path does more than the attention kernel on each call (on the H100,
PyTorch 2.11, it took 1.2–2.5× the kernel's time alone; not profiled further), so --packed also times
the kernel it ends in on its own: series flash_varlen,
torch.ops.aten._flash_attention_forward (FlashAttention-2's variable-length kernel) on the same
[total, H, D] values with int32 offsets and the longest entry as max_q, max_k. With --backward the
packed batches time the backward alone (the stage 07 attention backward's packed benchmarks): series
sdpa_flash_bwd, sdpa_cudnn_bwd on jagged tensors whose values require grad, and flash_varlen_bwd,
aten's _flash_attention_backward after one forward; FLOPs and bytes as the dense backward counts them.

--backward times the backward pass alone, as stage 05's benchmarks do (stages/05_flash_bwd/bench.cu):
series sdpa_flash_bwd, sdpa_cudnn_bwd, sdpa_efficient_bwd, named like the backward stages' rows
(sdpa_flash_bwd/fp16/D:64/N:4096/causal:0), on their grid: N = 512 … 8192 at each --dim, the grid of
stage 05 and of stage 07's attention backward (stages/07_tuned_tma/attention_bwd/bench.cu) alike; no
short-query shapes. Then grouped K/V on the same rule (BACKWARD_GQA_SEQS: N = 2048 and 8192, the two
sizes issue 54 sets the backward's speed goal at, where --seq has them; B·N = 16384, H = 2048/D):
KVH = H/4, a group of four query heads per K/V head, and KVH = 1, multi-query; called with
enable_gqa=True, so that dK and dV are sums over each group, and named as the stages name grouped
shapes (sdpa_cudnn_bwd/fp16/D:128/B:2/H:16/KVH:4/Nq:8192/Nk:8192/causal:1). --no-gqa drops them
(stage 05's peers: it times no grouped shape); --shape-gqa and --shape-qk add shapes as for the
forward. Q, K, V
require grad; the forward runs once outside the timing, and each timed call is
out.backward(dO, retain_graph=True) with a fixed random dO. Between calls the grads are set to None
(outside the timing), so every call writes fresh dQ, dK, dV as the stage does, instead of adding
into them: accumulating would time an extra read-add of each gradient the stage never does.
FLOPs = 2.5 × the forward's (common/lib/flops.h: five matmuls against two); bytes = Q, K, V, O, dO
read + dQ, dK, dV written, twice the forward's. It took 72 s on an H100 (5 N × 2 D × 2 masks × 2
dtypes × 3 backends = 120 points of ~0.3 s warm-up and timed calls each, plus one forward apiece); the
grouped shapes add 2 D × 4 shapes × 2 masks × 2 dtypes × 3 backends = 96 points (not yet timed:
about another minute, an estimate); scripts/gpu_check.sh and run_all.sh run it right after stage 05's bench.
A backend that refuses a shape (its forward or its backward) is skipped with a note (enable_gqa needs
PyTorch 2.5 or newer, and not every backend takes it). Without PyTorch or CUDA this prints a skip line
and exits 0.
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import itertools
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

SKIP_LINE = "sdpa_bench: skipped — PyTorch with CUDA not available"

DEFAULT_TOKENS = 16384     # B·N, as in the stages' benchmarks
DEFAULT_MODEL_DIM = 2048   # H·D
DEFAULT_SEQS = (512, 1024, 2048, 4096, 8192, 16384)
DEFAULT_DIMS = (64, 128)
# (B, H, Nq, Nk): stage 04's short queries against long keys (its bench.cu), timed at each --dim.
DEFAULT_QK_SIZES = ((1, 16, 512, 16384), (1, 32, 1024, 8192), (2, 8, 256, 32768), (4, 32, 1, 8192))
# (B, H, KVH, Nq, Nk): stage 04's grouped-query shapes (its bench.cu) — decoding a Llama-3-8B-like
# 32-head, 8-K/V-head layer for one sequence and for eight, a prefill chunk against a long context, and
# multi-query decoding — timed at GQA_DIM when --dim has it.
DEFAULT_GQA_SIZES = ((1, 32, 8, 1, 16384), (8, 32, 8, 1, 8192), (1, 32, 8, 512, 16384), (4, 32, 1, 1, 8192))
GQA_DIM = 128
# --packed-defaults: (ENTRIES, LO, HI, D), the packed batches stages/07_tuned_tma/attention/bench.cu times.
DEFAULT_PACKED = ((2, 8192, 8192, 64), (16, 512, 8192, 64), (2, 8192, 8192, 128), (16, 512, 8192, 128))
# --backward: stage 05's grid (its bench.cu, the tensor-core v2), which stage 07's attention backward
# (stages/07_tuned_tma/attention_bwd/bench.cu) times too, and the suffix its peers' series take.
BACKWARD_SEQS = (512, 1024, 2048, 4096, 8192)
# --backward's grouped K/V (see above): at these N of --seq, KVH = H / BACKWARD_GQA_GROUP and KVH = 1.
BACKWARD_GQA_SEQS = (2048, 8192)
BACKWARD_GQA_GROUP = 4
BACKWARD_SUFFIX = "_bwd"
BACKWARD_FLOP_FACTOR = 2.5  # dV = Pᵀ dO, dP = dO Vᵀ, dQ = dS K, dK = dSᵀ Q, and S recomputed: 5 vs 2 matmuls

# Series name → name of the torch.nn.attention.SDPBackend member.
BACKENDS = {"flash": ("sdpa_flash", "FLASH_ATTENTION"),
            "cudnn": ("sdpa_cudnn", "CUDNN_ATTENTION"),
            "efficient": ("sdpa_efficient", "EFFICIENT_ATTENTION")}
DTYPE_NAMES = ("fp16", "bf16")
# --packed: FlashAttention-2's variable-length kernel called alone (see above).
FLASH_VARLEN_SERIES = "flash_varlen"


def default_batch_heads(n: int, d: int) -> tuple[int, int]:
    return max(1, DEFAULT_TOKENS // n), max(1, DEFAULT_MODEL_DIM // d)


def causal_visible_pairs(nq: int, nk: int) -> int:
    """(query, key) pairs under the bottom-right causal mask: row i sees min(max(i + Nk - Nq + 1, 0), Nk)."""
    if nq <= nk:
        return nq * nk - nq * (nq - 1) // 2
    return nk * (nk + 1) // 2


def attention_flops(b: int, h: int, nq: int, nk: int, d: int, causal: bool) -> float:
    """Forward: S = Q·Kᵀ and O = P·V, 2·Nq·Nk·D each per (b, h). Causal: half when Nq = Nk, else
    the visible pairs exactly (common/lib/flops.h)."""
    if not causal:
        return 4.0 * b * h * nq * nk * d
    if nq == nk:
        return 4.0 * b * h * nq * nk * d / 2
    return 4.0 * b * h * d * causal_visible_pairs(nq, nk)


def attention_bytes(b: int, h: int, nq: int, nk: int, d: int, element_size: int, kv_heads: int | None = None) -> float:
    """Q, K, V read once and O written once; K and V have kv_heads heads (None: h)."""
    kvh = h if kv_heads is None else kv_heads
    return 2.0 * b * (h * nq + kvh * nk) * d * element_size


def attention_bwd_flops(b: int, h: int, nq: int, nk: int, d: int, causal: bool) -> float:
    """The backward pass: BACKWARD_FLOP_FACTOR × the forward's (common/lib/flops.h)."""
    return BACKWARD_FLOP_FACTOR * attention_flops(b, h, nq, nk, d, causal)


def attention_bwd_bytes(b: int, h: int, nq: int, nk: int, d: int, element_size: int,
                        kv_heads: int | None = None) -> float:
    """Q, K, V, O, dO read once and dQ, dK, dV written once: twice the forward's traffic."""
    return 2.0 * attention_bytes(b, h, nq, nk, d, element_size, kv_heads)


def bench_name(series: str, dtype: str, b: int, h: int, nq: int, nk: int, d: int, causal: bool,
               kv_heads: int | None = None) -> str:
    """The stage's names: N for Nq = Nk, else B, H, Nq, Nk; with KVH after H when K/V have fewer heads."""
    if kv_heads is not None and kv_heads != h:
        return f"{series}/{dtype}/D:{d}/B:{b}/H:{h}/KVH:{kv_heads}/Nq:{nq}/Nk:{nk}/causal:{int(causal)}"
    if nq != nk:
        return f"{series}/{dtype}/D:{d}/B:{b}/H:{h}/Nq:{nq}/Nk:{nk}/causal:{int(causal)}"
    name = f"{series}/{dtype}/D:{d}/N:{nq}/causal:{int(causal)}"
    if (b, h) != default_batch_heads(nq, d):
        name += f"/B:{b}/H:{h}"
    return name


def parse_shape(text: str) -> tuple[int, int, int, int]:
    try:
        b, h, n, d = (int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shape wants B,H,N,D (four integers), got {text!r}")
    if min(b, h, n, d) < 1:
        raise argparse.ArgumentTypeError(f"--shape sizes must be positive, got {text!r}")
    return b, h, n, d


def parse_shape_qk(text: str) -> tuple[int, int, int, int, int]:
    try:
        b, h, nq, nk, d = (int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shape-qk wants B,H,Nq,Nk,D (five integers), got {text!r}")
    if min(b, h, nq, nk, d) < 1:
        raise argparse.ArgumentTypeError(f"--shape-qk sizes must be positive, got {text!r}")
    return b, h, nq, nk, d


def parse_shape_gqa(text: str) -> tuple[int, int, int, int, int, int]:
    try:
        b, h, kvh, nq, nk, d = (int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shape-gqa wants B,H,KVH,Nq,Nk,D (six integers), got {text!r}")
    if min(b, h, kvh, nq, nk, d) < 1:
        raise argparse.ArgumentTypeError(f"--shape-gqa sizes must be positive, got {text!r}")
    if h % kvh:
        raise argparse.ArgumentTypeError(f"--shape-gqa: KVH = {kvh} must divide H = {h}, got {text!r}")
    return b, h, kvh, nq, nk, d


def parse_packed(text: str) -> tuple[int, int, int, int]:
    try:
        entries, lo, hi, d = (int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--packed wants ENTRIES,LO,HI,D (four integers), got {text!r}")
    if min(entries, lo, d) < 1 or hi < lo:
        raise argparse.ArgumentTypeError(f"--packed wants positive sizes and LO <= HI, got {text!r}")
    return entries, lo, hi, d


MASK64 = (1 << 64) - 1


def packed_lengths(entries: int, lo: int, hi: int) -> list[int]:
    """The lengths common/tools/bench.cpp's packed_lengths draws: splitmix64 from the same seed."""
    state, lens = 0x5EED0F1A77E27, []
    for _ in range(entries):
        state = (state + 0x9E3779B97F4A7C15) & MASK64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        z ^= z >> 31
        lens.append(lo + z % (hi - lo + 1))
    return lens


def packed_name(series: str, dtype: str, entries: int, lo: int, hi: int, d: int, h: int, causal: bool) -> str:
    lengths = f"{lo}-{hi}" if hi != lo else f"{lo}"
    return f"{series}/{dtype}/D:{d}/H:{h}/packed:{entries}x{lengths}/causal:{int(causal)}"


def planned_gqa_shapes(dims, extra_gqa=(), gqa_sizes=DEFAULT_GQA_SIZES) -> list[tuple[int, int, int, int, int, int]]:
    """(B, H, KVH, Nq, Nk, D): the grouped-query sizes at GQA_DIM (when it is among dims), each
    --shape-gqa; none twice."""
    shapes = [(b, h, kvh, nq, nk, GQA_DIM) for b, h, kvh, nq, nk in gqa_sizes if GQA_DIM in dims]
    shapes += list(extra_gqa)
    return list(dict.fromkeys(shapes))


def backward_gqa_shapes(seqs, dims) -> list[tuple[int, int, int, int, int, int]]:
    """(B, H, KVH, N, N, D): --backward's grouped K/V, on the grid's rule for B and H, at each D and
    at each N of BACKWARD_GQA_SEQS that seqs has; KVH = H / BACKWARD_GQA_GROUP, then 1. None twice,
    none with KVH = H (that is the grid's own point)."""
    shapes = []
    for d in dims:
        for n in (n for n in BACKWARD_GQA_SEQS if n in seqs):
            b, h = default_batch_heads(n, d)
            for kvh in (h // BACKWARD_GQA_GROUP, 1):
                if 1 <= kvh < h and h % kvh == 0:
                    shapes.append((b, h, kvh, n, n, d))
    return list(dict.fromkeys(shapes))


def planned_shapes(seqs, dims, extra, extra_qk=(), qk_sizes=DEFAULT_QK_SIZES) -> list[tuple[int, int, int, int, int]]:
    """(B, H, Nq, Nk, D): the default sweep (Nq = Nk = N), each --shape, the short-query sizes at
    each D, each --shape-qk; none twice."""
    shapes = []
    for d in dims:
        for n in seqs:
            b, h = default_batch_heads(n, d)
            shapes.append((b, h, n, n, d))
    shapes += [(b, h, n, n, d) for b, h, n, d in extra]
    shapes += [(b, h, nq, nk, d) for d in dims for b, h, nq, nk in qk_sizes]
    shapes += list(extra_qk)
    unique = []
    for shape in shapes:
        if shape not in unique:
            unique.append(shape)
    return unique


def planned_points(args: argparse.Namespace) -> list[tuple[int, int, int, int, int, int]]:
    """(B, H, KVH, Nq, Nk, D), in the order they are timed: the square grid, each --shape, the
    short-query sizes and each --shape-qk (KVH = H); then the grouped shapes: the forward's
    DEFAULT_GQA_SIZES or, with --backward, backward_gqa_shapes (--no-gqa: neither), and each
    --shape-gqa. Call backward_defaults(args) first."""
    qk_sizes = () if args.no_qk else DEFAULT_QK_SIZES
    shapes = [(b, h, h, nq, nk, d)
              for b, h, nq, nk, d in planned_shapes(args.seq, args.dim, args.shape, args.shape_qk, qk_sizes)]
    if args.backward:
        grouped = [] if args.no_gqa else backward_gqa_shapes(args.seq, args.dim)
        shapes += list(dict.fromkeys([*grouped, *args.shape_gqa]))
    else:
        shapes += planned_gqa_shapes(args.dim, args.shape_gqa, () if args.no_gqa else DEFAULT_GQA_SIZES)
    return shapes


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, required=True, help="JSON file to write, e.g. results/<gpu>/sdpa.json")
    p.add_argument("--dtype", nargs="+", choices=DTYPE_NAMES, default=list(DTYPE_NAMES))
    p.add_argument("--seq", nargs="+", type=int, default=None, metavar="N",
                   help="sequence lengths (default 512 … 16384; with --backward 512 … 8192)")
    p.add_argument("--dim", nargs="+", type=int, default=list(DEFAULT_DIMS), metavar="D")
    p.add_argument("--causal", nargs="+", type=int, choices=(0, 1), default=[0, 1])
    p.add_argument("--backend", nargs="+", choices=list(BACKENDS), default=list(BACKENDS))
    p.add_argument("--shape", type=parse_shape, action="append", default=[], metavar="B,H,N,D",
                   help="an extra shape to time (repeatable), e.g. 2,16,8192,128")
    p.add_argument("--shape-qk", type=parse_shape_qk, action="append", default=[], metavar="B,H,Nq,Nk,D",
                   help="an extra shape with Nq != Nk (repeatable), e.g. 1,16,512,16384,128")
    p.add_argument("--no-grid", action="store_true",
                   help="skip the square grid (--seq): only the short-query, grouped and --shape* shapes")
    p.add_argument("--no-qk", action="store_true", help="skip the default short-query shapes")
    p.add_argument("--shape-gqa", type=parse_shape_gqa, action="append", default=[], metavar="B,H,KVH,Nq,Nk,D",
                   help="an extra shape with K/V heads KVH < H (repeatable), e.g. 1,32,8,1,16384,128")
    p.add_argument("--no-gqa", action="store_true", help="skip the default grouped-query shapes")
    p.add_argument("--packed", type=parse_packed, action="append", default=[], metavar="ENTRIES,LO,HI,D",
                   help="time a packed batch of ENTRIES sequences of LO..HI rows at head_dim D instead of the "
                        "default shapes (repeatable; see above)")
    p.add_argument("--packed-defaults", action="store_true",
                   help="time the packed batches stage 07's attention benchmarks time (see above)")
    p.add_argument("--backward", action="store_true",
                   help="time the backward pass alone (series *_bwd, the backward stages' grid and grouped K/V; "
                        "see above)")
    p.add_argument("--warmup", type=int, default=10, help="untimed calls before timing (default 10)")
    p.add_argument("--runs", type=int, default=30, help="timed calls; the median is kept (default 30)")
    p.add_argument("--no-l2-flush", action="store_true", help="do not overwrite L2 before each timed call")
    return p.parse_args(argv)


def backward_defaults(args: argparse.Namespace) -> None:
    """The default --seq (the backward stages' grid with --backward; none with --no-grid); --backward
    also drops the short-query shapes (its grouped shapes are its own: backward_gqa_shapes)."""
    if args.no_grid:
        args.seq = []
    elif args.seq is None:
        args.seq = list(BACKWARD_SEQS if args.backward else DEFAULT_SEQS)
    if args.backward:
        args.no_qk = True
    if args.packed_defaults:
        args.packed = list(dict.fromkeys([*DEFAULT_PACKED, *args.packed]))


# ---------------------------------------------------------------------------------------------
# Device facts for the JSON context
# ---------------------------------------------------------------------------------------------

def cuda_driver_version() -> str:
    """The driver's CUDA version ("13.0"), as cudaDriverGetVersion reports it; "" if unknown."""
    try:
        libcuda = ctypes.CDLL("libcuda.so.1")
        version = ctypes.c_int(0)
        if libcuda.cuDriverGetVersion(ctypes.byref(version)) != 0:
            return ""
        return f"{version.value // 1000}.{version.value % 1000 // 10}"
    except (OSError, AttributeError):
        return ""


def max_clocks_mhz(index: int) -> tuple[str, str]:
    """Maximum SM and memory clocks from nvidia-smi (what cudaDevAttrClockRate reports)."""
    try:
        out = subprocess.run(
            ["nvidia-smi", f"--id={index}", "--query-gpu=clocks.max.sm,clocks.max.mem",
             "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=20, check=True)
        sm, mem = (x.strip() for x in out.stdout.strip().splitlines()[0].split(","))
        return (sm if sm.isdigit() else "", mem if mem.isdigit() else "")
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return "", ""


def import_cuda_torch(skip_line: str):
    """PyTorch, when it is installed and sees a CUDA device; otherwise prints `skip_line` and returns None
    (the peer scripts then exit 0: nothing to time here is not an error)."""
    try:
        import torch
    except ImportError:
        print(skip_line)
        return None
    if not torch.cuda.is_available():
        print(skip_line)
        return None
    return torch


def failure_reason(err: BaseException) -> str:
    """The first line of an exception's message (its type when it has none): what the note of a point
    that PyTorch refused says."""
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def make_context(torch, args: argparse.Namespace) -> dict[str, object]:
    index = torch.cuda.current_device()
    props = torch.cuda.get_device_properties(index)
    sm_clock, mem_clock = max_clocks_mhz(index)
    context: dict[str, object] = {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "host_name": socket.gethostname(),
        "executable": "plots/sdpa_bench.py",
        "num_cpus": os.cpu_count() or 0,
        "library_build_type": "release",
        "gpu_name": torch.cuda.get_device_name(index),
        "cuda_runtime": str(torch.version.cuda),
        "cuda_driver": cuda_driver_version(),
        "sm_clock_mhz": sm_clock,
        "mem_clock_mhz": mem_clock,
        "compute_capability": f"{props.major}.{props.minor}",
        "num_sms": str(props.multi_processor_count),
        "torch_version": str(torch.__version__),
        "warmup_calls": str(args.warmup),
        "timed_calls": str(args.runs),
        "l2_flush": "0" if args.no_l2_flush else "1",
    }
    return {k: v for k, v in context.items() if v != ""}


# ---------------------------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------------------------

def l2_flush_buffer(torch):
    """A buffer twice the L2 size; writing it before a timed call evicts the previous inputs."""
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    l2_bytes = getattr(props, "L2_cache_size", 0) or 64 * 1024 * 1024
    return torch.empty(2 * l2_bytes, dtype=torch.uint8, device="cuda")


# How long every tool runs a kernel back to back before timing it (common/lib/timer.h,
# kSustainedWarmupSeconds): under a sustained load the clock settles below the boost clock.
SUSTAINED_WARMUP_SECONDS = 0.2
# Cycles of torch.cuda._sleep put on the stream before each start event: while the GPU spins, the host
# records the event and enqueues the call, so Python's dispatch time never sits between the two
# events. About 100 µs at 1.98 GHz: cuDNN's SDPA took 28–41 µs of host time per call on the H100
# (PyTorch 2.11; plots/head_to_head.py measures it, 2026-11-25), more than the 25 µs this used to be.
HOST_COVER_CYCLES = 200_000


def time_call(torch, fn, warmup: int, runs: int, flush, before=None) -> tuple[float, float]:
    """Median device time and median host CPU time of fn(), both in microseconds, after `warmup`
    calls and SUSTAINED_WARMUP_SECONDS of calls back to back. before(), when given, runs ahead of every
    call, warm-up included, outside the timed events (the backward rows clear the grads there)."""
    def prepare():
        if before is not None:
            before()

    for _ in range(warmup):
        prepare()
        fn()
    start_s = time.perf_counter()
    while time.perf_counter() - start_s < SUSTAINED_WARMUP_SECONDS:
        prepare()
        fn()
        torch.cuda.synchronize()  # a host clock over queued calls would stop long before the GPU does
    sleep = getattr(torch.cuda, "_sleep", None)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    device_us, cpu_us = [], []
    for _ in range(runs):
        prepare()
        if flush is not None:
            flush.zero_()  # runs before start.record() on the same stream: not in the timing
        if sleep is not None:
            sleep(HOST_COVER_CYCLES)
        cpu0 = time.process_time()
        start.record()
        fn()
        end.record()
        end.synchronize()  # elapsed_time needs both events complete
        cpu_us.append((time.process_time() - cpu0) * 1e6)
        device_us.append(start.elapsed_time(end) * 1e3)  # ms → us
    return statistics.median(device_us), statistics.median(cpu_us)


def write_benchmark_json(tool: str, out: Path, context: dict, rows: list[dict]) -> None:
    """The rows and their context in Google Benchmark's JSON layout, at `out` (its folder made)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"context": context, "benchmarks": rows}, indent=2) + "\n", encoding="utf-8")
    print(f"{tool}: wrote {len(rows)} rows to {out}")


def median_row(name: str, runs: int, t_us: float, cpu_us: float, flops: float, nbytes: float) -> dict:
    """One point in Google Benchmark's JSON layout: a "median" aggregate row with the stages' counters."""
    return {
        "name": name + "_median",
        "run_name": name,
        "run_type": "aggregate",
        "repetitions": runs,
        "threads": 1,
        "aggregate_name": "median",
        "aggregate_unit": "time",
        "iterations": 1,
        "real_time": t_us,
        "cpu_time": cpu_us,
        "time_unit": "us",
        "TFLOPS": flops / (t_us * 1e-6) / 1e12,
        "GB/s": nbytes / (t_us * 1e-6) / 1e9,
    }


def causal_arguments(causal: bool, nq: int, nk: int) -> dict:
    """SDPA's arguments for the project's mask: is_causal where top-left and bottom-right agree
    (Nq = Nk), causal_lower_right(Nq, Nk) as attn_mask otherwise."""
    if not causal:
        return {}
    if nq == nk:
        return {"is_causal": True}
    from torch.nn.attention.bias import causal_lower_right  # PyTorch 2.3+, as sdpa_kernel
    return {"attn_mask": causal_lower_right(nq, nk)}


def measure_point(torch, sdpa, backend, q, k, v, causal: bool, args, flush) -> tuple[float, float]:
    """Time one backend on one shape; raises if the backend refuses it or gives non-finite output.
    K and V with fewer heads than Q are passed as they are, with enable_gqa=True (never expanded
    here: the backend reads each K/V head for its group, or expands it itself, inside the timing)."""
    from torch.nn.attention import sdpa_kernel

    mask = causal_arguments(causal, q.shape[-2], k.shape[-2])
    if k.shape[-3] != q.shape[-3]:
        mask["enable_gqa"] = True

    def call():
        return sdpa(q, k, v, **mask)

    with sdpa_kernel([backend]):
        out = call()  # a refusal ("No available kernel") raises here, before any timing
        if not bool(torch.isfinite(out).all()):
            raise RuntimeError("output has NaN or Inf")
        del out
        return time_call(torch, call, args.warmup, args.runs, flush)


def measure_backward_point(torch, sdpa, backend, q, k, v, causal: bool, args, flush) -> tuple[float, float]:
    """Time one backend's backward alone on one shape: the forward once, outside the timing, then
    out.backward(dO, retain_graph=True) per call, the grads set to None before each (not timed)."""
    from torch.nn.attention import sdpa_kernel

    mask = causal_arguments(causal, q.shape[-2], k.shape[-2])
    if k.shape[-3] != q.shape[-3]:  # grouped K/V: dK and dV summed over each group of query heads
        mask["enable_gqa"] = True
    q, k, v = (t.detach().requires_grad_(True) for t in (q, k, v))
    d_o = torch.randn_like(q)
    with sdpa_kernel([backend]):
        out = sdpa(q, k, v, **mask)  # a refusal raises here, before any timing
        leaves = (q, k, v)

        def call():
            out.backward(d_o, retain_graph=True)

        call()  # the backward kernel can refuse too
        if not all(bool(torch.isfinite(t.grad).all()) for t in leaves):
            raise RuntimeError("a gradient has NaN or Inf")

        def clear():
            for t in leaves:
                t.grad = None

        return time_call(torch, call, args.warmup, args.runs, flush, before=clear)


def jagged_values(torch, lens: list[int], h: int, d: int, dtype, requires_grad: bool = False):
    """Q, K, V of a packed batch: three [total, H, D] random normal values (requiring grad when asked), and
    each as a jagged nested tensor of the offsets of `lens` seen as [B, H, j, D]."""
    offsets = torch.tensor([0, *itertools.accumulate(lens)], device="cuda", dtype=torch.int64)
    values = [torch.randn(sum(lens), h, d, device="cuda", dtype=dtype, requires_grad=requires_grad) for _ in range(3)]

    def jagged(x):
        try:  # the lengths' extremes given, so that no call reduces the offsets and waits for the result
            nt = torch.nested.nested_tensor_from_jagged(x, offsets, min_seqlen=min(lens), max_seqlen=max(lens))
        except TypeError:  # a PyTorch before 2.5 takes no min_seqlen / max_seqlen
            nt = torch.nested.nested_tensor_from_jagged(x, offsets)
        return nt.transpose(1, 2)

    return values, [jagged(x) for x in values]


def measure_packed_point(torch, sdpa, backend, lens: list[int], h: int, d: int, dtype, causal: bool, args,
                         flush) -> tuple[float, float]:
    """Time one backend on one packed batch: Q, K, V as jagged nested tensors (jagged_values); raises if
    the backend refuses them."""
    from torch.nn.attention import sdpa_kernel

    q, k, v = jagged_values(torch, lens, h, d, dtype)[1]
    mask = {"is_causal": True} if causal else {}

    def call():
        return sdpa(q, k, v, **mask)

    with sdpa_kernel([backend]):
        out = call()
        if not bool(torch.isfinite(out.values()).all()):
            raise RuntimeError("output has NaN or Inf")
        del out
        return time_call(torch, call, args.warmup, args.runs, flush)


def measure_packed_backward_point(torch, sdpa, backend, lens: list[int], h: int, d: int, dtype, causal: bool,
                                  args, flush) -> tuple[float, float]:
    """Time one backend's backward alone on one packed batch, as measure_backward_point times a dense
    one: Q, K, V jagged nested tensors whose values require grad, the forward once outside the timing,
    then out.backward(dO, retain_graph=True) per call with the grads cleared before each."""
    from torch.nn.attention import sdpa_kernel

    values, (q, k, v) = jagged_values(torch, lens, h, d, dtype, requires_grad=True)
    mask = {"is_causal": True} if causal else {}
    with sdpa_kernel([backend]):
        out = sdpa(q, k, v, **mask)
        d_o = torch.randn_like(out)

        def call():
            out.backward(d_o, retain_graph=True)

        call()
        if not all(bool(torch.isfinite(x.grad).all()) for x in values):
            raise RuntimeError("a gradient has NaN or Inf")

        def clear():
            for x in values:
                x.grad = None

        return time_call(torch, call, args.warmup, args.runs, flush, before=clear)


def measure_flash_varlen_backward_point(torch, lens: list[int], h: int, d: int, dtype, causal: bool, args,
                                        flush) -> tuple[float, float]:
    """Time FlashAttention-2's variable-length backward alone (aten's _flash_attention_backward, after one
    _flash_attention_forward for O and LSE); raises if this PyTorch lacks the ops or their signature."""
    offsets = torch.tensor([0, *itertools.accumulate(lens)], device="cuda", dtype=torch.int32)
    q, k, v, d_o = (torch.randn(sum(lens), h, d, device="cuda", dtype=dtype) for _ in range(4))
    fwd = torch.ops.aten._flash_attention_forward(q, k, v, offsets, offsets, max(lens), max(lens), 0.0, causal, False)
    out, lse, seed, offset = fwd[0], fwd[1], fwd[2], fwd[3]

    def call():
        return torch.ops.aten._flash_attention_backward(d_o, q, k, v, out, lse, offsets, offsets, max(lens),
                                                        max(lens), 0.0, causal, seed, offset)

    grads = call()
    if not all(bool(torch.isfinite(g).all()) for g in grads[:3]):
        raise RuntimeError("a gradient has NaN or Inf")
    del grads
    return time_call(torch, call, args.warmup, args.runs, flush)


def measure_flash_varlen_point(torch, lens: list[int], h: int, d: int, dtype, causal: bool, args,
                               flush) -> tuple[float, float]:
    """Time FlashAttention-2's variable-length kernel alone (the aten op SDPA's flash backend calls
    for jagged inputs): Q, K, V [total, H, D], int32 offsets; raises if this PyTorch lacks the op."""
    offsets = torch.tensor([0, *itertools.accumulate(lens)], device="cuda", dtype=torch.int32)
    q, k, v = (torch.randn(sum(lens), h, d, device="cuda", dtype=dtype) for _ in range(3))
    op = torch.ops.aten._flash_attention_forward

    def call():
        return op(q, k, v, offsets, offsets, max(lens), max(lens), 0.0, causal, False)[0]

    out = call()
    if not bool(torch.isfinite(out).all()):
        raise RuntimeError("output has NaN or Inf")
    del out
    return time_call(torch, call, args.warmup, args.runs, flush)


def packed_rows(torch, args: argparse.Namespace, flush) -> list[dict]:
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend

    dtypes = {"fp16": torch.float16, "bf16": torch.bfloat16}
    rows = []
    for dtype_name in args.dtype:
        dtype = dtypes[dtype_name]
        element_size = torch.tensor([], dtype=dtype).element_size()
        for entries, lo, hi, d in args.packed:
            h = max(1, DEFAULT_MODEL_DIM // d)
            lens = packed_lengths(entries, lo, hi)
            suffix = BACKWARD_SUFFIX if args.backward else ""
            for causal in (bool(c) for c in args.causal):
                for key in [*args.backend, "flash_varlen"]:
                    if key == "flash_varlen":
                        name = packed_name(FLASH_VARLEN_SERIES + suffix, dtype_name, entries, lo, hi, d, h, causal)
                        varlen = measure_flash_varlen_backward_point if args.backward else measure_flash_varlen_point

                        def measure():
                            return varlen(torch, lens, h, d, dtype, causal, args, flush)
                    else:
                        series, member = BACKENDS[key]
                        name = packed_name(series + suffix, dtype_name, entries, lo, hi, d, h, causal)
                        backend = getattr(SDPBackend, member, None)
                        if backend is None:
                            print(f"sdpa_bench: note: {name}: this PyTorch has no SDPBackend.{member}; skipped")
                            continue
                        packed = measure_packed_backward_point if args.backward else measure_packed_point

                        def measure():
                            return packed(torch, F.scaled_dot_product_attention, backend, lens, h, d, dtype, causal,
                                          args, flush)
                    try:
                        t_us, cpu_us = measure()
                    except (RuntimeError, ValueError, NotImplementedError, ImportError, TypeError, AttributeError) as err:
                        print(f"sdpa_bench: note: {name}: backend refused or failed ({failure_reason(err)}); "
                              "skipped")
                        torch.cuda.empty_cache()
                        continue
                    count, traffic = ((attention_bwd_flops, attention_bwd_bytes) if args.backward
                                      else (attention_flops, attention_bytes))
                    flops = sum(count(1, h, n, n, d, causal) for n in lens)
                    nbytes = traffic(1, h, sum(lens), sum(lens), d, element_size)
                    rows.append(median_row(name, args.runs, t_us, cpu_us, flops, nbytes))
                    print(f"sdpa_bench: {name:64s} {t_us:10.1f} us {rows[-1]['TFLOPS']:7.1f} TFLOPS")
                    torch.cuda.empty_cache()
    return rows


def benchmark_rows(torch, args: argparse.Namespace) -> list[dict]:
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend

    dtypes = {"fp16": torch.float16, "bf16": torch.bfloat16}
    flush = None if args.no_l2_flush else l2_flush_buffer(torch)
    torch.manual_seed(0)
    if args.packed:
        return packed_rows(torch, args, flush)
    rows = []
    for dtype_name in args.dtype:
        dtype = dtypes[dtype_name]
        element_size = torch.tensor([], dtype=dtype).element_size()
        for b, h, kvh, nq, nk, d in planned_points(args):
            try:
                # Q [B, H, Nq, D], K, V [B, KVH, Nk, D] contiguous, random normal: never zeros, which can
                # time faster.
                q = torch.randn(b, h, nq, d, device="cuda", dtype=dtype)
                k, v = (torch.randn(b, kvh, nk, d, device="cuda", dtype=dtype) for _ in range(2))
            except torch.cuda.OutOfMemoryError:
                print(f"sdpa_bench: note: B={b} H={h} KVH={kvh} Nq={nq} Nk={nk} D={d} {dtype_name}: out of memory;"
                      " skipped")
                torch.cuda.empty_cache()
                continue
            for causal in (bool(c) for c in args.causal):
                for key in args.backend:
                    series, member = BACKENDS[key]
                    series += BACKWARD_SUFFIX if args.backward else ""
                    name = bench_name(series, dtype_name, b, h, nq, nk, d, causal, kvh)
                    backend = getattr(SDPBackend, member, None)
                    if backend is None:
                        print(f"sdpa_bench: note: {name}: this PyTorch has no SDPBackend.{member}; skipped")
                        continue
                    try:
                        measure = measure_backward_point if args.backward else measure_point
                        t_us, cpu_us = measure(torch, F.scaled_dot_product_attention, backend, q, k, v, causal,
                                               args, flush)
                    except (RuntimeError, ValueError, NotImplementedError, ImportError, TypeError) as err:
                        # TypeError: a PyTorch older than 2.5 has no enable_gqa argument.
                        print(f"sdpa_bench: note: {name}: backend refused or failed ({failure_reason(err)}); "
                              "skipped")
                        torch.cuda.empty_cache()
                        continue
                    flops, traffic = ((attention_bwd_flops, attention_bwd_bytes) if args.backward
                                      else (attention_flops, attention_bytes))
                    rows.append(median_row(name, args.runs, t_us, cpu_us, flops(b, h, nq, nk, d, causal),
                                           traffic(b, h, nq, nk, d, element_size, kvh)))
                    print(f"sdpa_bench: {name:64s} {t_us:10.1f} us {rows[-1]['TFLOPS']:7.1f} TFLOPS")
            del q, k, v
            torch.cuda.empty_cache()
    return rows


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.warmup < 0 or args.runs < 1:
        print("sdpa_bench: error: --warmup must be >= 0 and --runs >= 1", file=sys.stderr)
        return 2
    if args.no_grid and args.seq is not None:
        print("sdpa_bench: error: --no-grid skips the grid that --seq sets; give one of them", file=sys.stderr)
        return 2
    backward_defaults(args)
    torch = import_cuda_torch(SKIP_LINE)
    if torch is None:
        return 0
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: F401  (PyTorch 2.3+)
    except ImportError:
        print(f"sdpa_bench: skipped — PyTorch {torch.__version__} has no torch.nn.attention.sdpa_kernel"
              " (needs 2.3 or newer)")
        return 0

    context = make_context(torch, args)
    rows = benchmark_rows(torch, args)
    if not rows:
        print("sdpa_bench: error: no backend ran any shape; nothing written", file=sys.stderr)
        return 1
    write_benchmark_json("sdpa_bench", args.out, context, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
