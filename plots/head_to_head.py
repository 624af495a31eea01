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
causal mask is the project's, bottom-right; with Nq = Nk as here that is PyTorch's is_causal. FLOPs =
4·B·H·N²·D, halved for causal (common/lib/flops.h). The library is found as the Python package finds
it (python/README.md: $FLASHSTAGES_LIBRARY, then the checkout's build tree). Without PyTorch or CUDA this
prints a skip line and exits 0; so it does, after a note, when no --kernel can run on this GPU (stage 07's
need Hopper).
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
CHECK_TOLERANCE = 1e-2  # relative L2 distance between a kernel's O and SDPA's, fp16 and bf16


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kernel", nargs="+", required=True, metavar="ENTRY",
                   help="library entries to time, e.g. fs_flash_fwd_tma_v8 (flashstages.kernels() lists them)")
    p.add_argument("--shape", type=sdpa_bench.parse_shape, action="append", required=True, metavar="B,H,N,D",
                   help="a shape to time (repeatable), e.g. 2,16,8192,128")
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
    if args.rounds < 1 or args.warmup < 0 or args.runs < 1 or not args.heat >= 0:
        p.error("--rounds and --runs must be >= 1, --warmup and --heat >= 0")
    args.kernel = list(dict.fromkeys(args.kernel))
    return args


def check_kernels(fs, lib, names: list[str], shapes, dtypes) -> dict:
    """The KernelInfo of each name; SystemExit naming what is wrong when one is not an attention entry of
    this library or does not take a requested dtype or head dim."""
    found = {k.name: k for k in fs.kernels(lib, problem=fs.PROBLEM_ATTENTION)}
    codes = {"fp16": fs.FP16, "bf16": fs.BF16}
    infos = {}
    for name in names:
        if name not in found:
            raise SystemExit(f"head_to_head: error: {name!r} is not an attention kernel of this library; it has: "
                             f"{', '.join(found)}")
        info = found[name]
        for dtype in dtypes:
            if codes[dtype] not in info.dtypes:
                raise SystemExit(f"head_to_head: error: {name} does not take {dtype}")
        for _, _, _, d in shapes:
            if not info.takes_head_dim(d):
                raise SystemExit(f"head_to_head: error: {name} does not take head_dim {d}")
        infos[name] = info
    return infos


def series_of(info) -> str:
    """A kernel's series, as its stage's benchmarks name it: stage07/attention/v8."""
    return f"{info.stage.decode()}/{info.version.decode()}"


def rel_l2(torch, out, ref) -> float:
    diff = (out.double() - ref.double()).norm()
    return float(diff / ref.double().norm().clamp_min(1e-30))


def heat(torch, members, seconds: float) -> None:
    """Every member in turn, back to back, for `seconds`: the first round then starts on a GPU at its
    sustained clock. On a GPU that has just been idle the member timed first ran up to 7% faster than in
    the next round (cuDNN, bf16 D = 128 on the H100, 2026-11-25), more than the margins compared here."""
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _, fn, chosen in members:
            with chosen():
                fn()
        torch.cuda.synchronize()


def dispatch_us(torch, fn, calls: int = 20) -> float:
    """Host time per call of fn() when nothing waits for the GPU: what the sleep before each timed call
    must cover for the events to time the kernel alone."""
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    host = (time.perf_counter() - start) / calls * 1e6
    torch.cuda.synchronize()
    return host


def run(torch, fs, lib, infos: dict, args: argparse.Namespace) -> tuple[list[dict], list[str]]:
    """Every round's rows and the summary lines."""
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    dtypes = {"fp16": torch.float16, "bf16": torch.bfloat16}
    flush = None if args.no_l2_flush else sdpa_bench.l2_flush_buffer(torch)
    stream = torch.cuda.current_stream().cuda_stream
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    clock_khz = getattr(props, "clock_rate", 0) or 1_980_000  # the boost clock: the shortest the sleep lasts
    cover_us = sdpa_bench.HOST_COVER_CYCLES / clock_khz * 1e3
    torch.manual_seed(0)
    rows, summary = [], []
    for dtype_name in args.dtype:
        dtype = dtypes[dtype_name]
        for b, h, n, d in args.shape:
            q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=dtype) for _ in range(3))
            for causal in (bool(c) for c in args.causal):
                flops = sdpa_bench.attention_flops(b, h, n, n, d, causal)
                members = []  # (series, call, what to enter around its timing)
                ref = None
                for key in args.backend:
                    series, member = sdpa_bench.BACKENDS[key]
                    backend = getattr(SDPBackend, member)

                    def sdpa_call():
                        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

                    def chosen(backend=backend):  # entered around the timing, not inside each call
                        return sdpa_kernel([backend])

                    with chosen():
                        out = sdpa_call()  # a refusal raises here: the comparison has no peer then
                    if ref is None:
                        ref = out
                    members.append((series, sdpa_call, chosen))
                for name, info in infos.items():
                    o = torch.empty_like(q)
                    params = fs.attention_params(q, k, v, o, causal=causal)

                    def fs_call(name=name, params=params, o=o):  # o stays alive while params points at it
                        fs.call(lib, name, params, stream)

                    o.fill_(float("nan"))  # poisoned: every element must be written
                    fs_call()
                    err = rel_l2(torch, o, ref)
                    if not err <= CHECK_TOLERANCE:
                        raise SystemExit(f"head_to_head: error: {name} {dtype_name} B={b} H={h} N={n} D={d} "
                                         f"causal={int(causal)}: rel L2 {err:.2e} to SDPA's output "
                                         f"(tolerance {CHECK_TOLERANCE:.0e}); not timed")
                    members.append((series_of(info), fs_call, contextlib.nullcontext))
                del ref
                cell = f"{dtype_name}/D:{d}/N:{n}/causal:{int(causal)}"
                if (b, h) != sdpa_bench.default_batch_heads(n, d):
                    cell += f"/B:{b}/H:{h}"
                heat(torch, members, args.heat)
                tflops = {series: [] for series, _, _ in members}
                for r in range(1, args.rounds + 1):
                    order = members if r % 2 else members[::-1]
                    line = []
                    for series, fn, chosen in order:
                        with chosen():
                            t_us, cpu_us = sdpa_bench.time_call(torch, fn, args.warmup, args.runs, flush)
                            host = dispatch_us(torch, fn)
                        row = sdpa_bench.median_row(f"{series}/{cell}/round:{r}", args.runs, t_us, cpu_us, flops,
                                                    sdpa_bench.attention_bytes(b, h, n, n, d, q.element_size()))
                        row["dispatch_us"] = host
                        rows.append(row)
                        tflops[series].append(row["TFLOPS"])
                        line.append(f"{series} {row['TFLOPS']:6.1f}")
                        if host > cover_us:
                            print(f"head_to_head: warning: {series} takes {host:.0f} us of host time per call, "
                                  f"more than the {cover_us:.0f} us the GPU sleep covers: its time includes some")
                    print(f"head_to_head: {cell} round {r}: " + ", ".join(line), flush=True)
                for name, info in infos.items():
                    ours = tflops[series_of(info)]
                    for key in args.backend:
                        peer_series = sdpa_bench.BACKENDS[key][0]
                        ratios = [a / p for a, p in zip(ours, tflops[peer_series])]
                        summary.append(f"{series_of(info) + '/' + cell:52s} / {peer_series:11s} "
                                       f"min {min(ratios):.3f}  median {statistics.median(ratios):.3f}  "
                                       f"max {max(ratios):.3f}  ({len(ratios)} rounds; "
                                       f"{statistics.median(ours):.1f} vs "
                                       f"{statistics.median(tflops[peer_series]):.1f} TFLOPS)")
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
    infos = check_kernels(fs, lib, args.kernel, args.shape, args.dtype)
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
    if not infos:
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
