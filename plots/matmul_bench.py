#!/usr/bin/env python3
"""Time PyTorch's matrix products as a second peer for the GEMM stages: the cross-check of cuBLAS.

    python3 plots/matmul_bench.py --out results/<gpu>/torch_matmul.json

Stage 06's benchmark times cuBLAS itself ("cublas/fp16/M:4096/N:4096/K:4096"). This script times
what a PyTorch user gets on the same shapes, in the same job (scripts/gpu_check.sh runs it right after
the stage 06 benchmark), so the two numbers can be compared:

    torch_matmul/fp16/M:4096/N:4096/K:4096    torch.matmul(A, B), A M×K and B K×N row-major, C fp16
    torch_matmul/bf16/…                       the same in bf16
    torch_int_mm/int8/…                       torch._int_mm(A, Bᵀ view): int8 → int32 through cuBLASLt,
                                              B stored N×K as stage 06's int8 benchmark stores it

Inputs are drawn as the stage benchmarks draw them: uniform [-1, 1] reals, and for int8 the whole
range. Each point is timed as plots/sdpa_bench.py times its points (time_call): 10 warm-up calls and
0.2 s of calls back to back (the sustained clock, common/lib/timer.h), then 30 timed calls (CUDA events around each one, L2 flushed
before each), and the median is written in Google Benchmark's layout, so plots/plot_results.py reads
it like the stages' own files. The context records the workspace PyTorch gives cuBLAS (read from
libtorch_cuda where the symbol is exported) and the kernels each product launched at 4096³, from
PyTorch's profiler. Without PyTorch or CUDA this prints a skip line and exits 0.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import sys
from pathlib import Path

from sdpa_bench import failure_reason, import_cuda_torch, l2_flush_buffer, make_context, median_row, time_call

SKIP_LINE = "matmul_bench: skipped — PyTorch with CUDA not available"

# Stage 06's benchmark shapes (stages/06_tensorcore_gemm/bench.cu, kShapes): (M, N, K).
DEFAULT_SHAPES = ((1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192),
                  (4096, 4096, 1000), (4096, 4096, 1024), (1000, 1000, 1000), (2048, 2048, 8192))
DTYPE_NAMES = ("fp16", "bf16", "int8")
PROFILED_SHAPE = (4096, 4096, 4096)


def bench_name(dtype: str, m: int, n: int, k: int) -> str:
    series = "torch_int_mm" if dtype == "int8" else "torch_matmul"
    return f"{series}/{dtype}/M:{m}/N:{n}/K:{k}"


def gemm_flops(m: int, n: int, k: int) -> float:
    return 2.0 * m * n * k


def gemm_bytes(m: int, n: int, k: int, in_size: int, out_size: int) -> float:
    """A and B read once, C written once (common/lib/flops.h's gemm_min_bytes, C not read)."""
    return in_size * (m * k + k * n) + out_size * m * n


def parse_shape(text: str) -> tuple[int, int, int]:
    try:
        m, n, k = (int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shape wants M,N,K (three integers), got {text!r}")
    if min(m, n, k) < 1:
        raise argparse.ArgumentTypeError(f"--shape sizes must be positive, got {text!r}")
    return m, n, k


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, required=True, help="JSON file to write, e.g. results/<gpu>/torch_matmul.json")
    p.add_argument("--dtype", nargs="+", choices=DTYPE_NAMES, default=list(DTYPE_NAMES))
    p.add_argument("--shape", type=parse_shape, action="append", default=None, metavar="M,N,K",
                   help="a shape to time (repeatable); default: stage 06's benchmark shapes")
    p.add_argument("--warmup", type=int, default=10, help="untimed calls before timing (default 10)")
    p.add_argument("--runs", type=int, default=30, help="timed calls; the median is kept (default 30)")
    p.add_argument("--no-l2-flush", action="store_true", help="do not overwrite L2 before each timed call")
    return p.parse_args(argv)


def torch_cublas_workspace_bytes(torch) -> str:
    """at::cuda::getChosenWorkspaceSize(), the workspace PyTorch sets on its cuBLAS handles; "" if the
    symbol is not exported by this build."""
    library = Path(torch.__file__).resolve().parent / "lib" / "libtorch_cuda.so"
    try:
        query = getattr(ctypes.CDLL(str(library)), "_ZN2at4cuda22getChosenWorkspaceSizeEv")
    except (OSError, AttributeError):
        return ""
    query.restype = ctypes.c_size_t
    query.argtypes = []
    return str(int(query()))


def make_operands(torch, dtype: str, m: int, n: int, k: int):
    """The product to time, as a closure, on freshly drawn inputs."""
    if dtype == "int8":
        a = torch.randint(-128, 128, (m, k), dtype=torch.int8, device="cuda")
        b_nk = torch.randint(-128, 128, (n, k), dtype=torch.int8, device="cuda")
        return lambda: torch._int_mm(a, b_nk.t())
    t = {"fp16": torch.float16, "bf16": torch.bfloat16}[dtype]
    a = torch.rand(m, k, device="cuda", dtype=torch.float32).mul_(2).sub_(1).to(t)
    b = torch.rand(k, n, device="cuda", dtype=torch.float32).mul_(2).sub_(1).to(t)
    return lambda: torch.matmul(a, b)


def launched_kernels(torch, call) -> str:
    """The CUDA kernels one call launches, from PyTorch's profiler ("" if it records none)."""
    from torch.profiler import ProfilerActivity, profile

    call()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        call()
        torch.cuda.synchronize()
    names = [e.name for e in prof.events() if e.device_type.name == "CUDA"]
    return "; ".join(dict.fromkeys(names))


def benchmark_rows(torch, args: argparse.Namespace, context: dict) -> list[dict]:
    flush = None if args.no_l2_flush else l2_flush_buffer(torch)
    torch.manual_seed(0)
    rows = []
    for dtype in args.dtype:
        in_size, out_size = (1, 4) if dtype == "int8" else (2, 2)
        for m, n, k in args.shape:
            name = bench_name(dtype, m, n, k)
            try:
                call = make_operands(torch, dtype, m, n, k)
                out = call()  # a refusal (e.g. _int_mm's size rules) raises here, before any timing
                if dtype != "int8" and not bool(torch.isfinite(out).all()):
                    raise RuntimeError("output has NaN or Inf")
                del out
                if (m, n, k) == PROFILED_SHAPE:
                    context[f"kernels_{dtype}_{m}x{n}x{k}"] = launched_kernels(torch, call)
                t_us, cpu_us = time_call(torch, call, args.warmup, args.runs, flush)
            except (RuntimeError, ValueError, NotImplementedError) as err:
                print(f"matmul_bench: note: {name}: refused or failed ({failure_reason(err)}); skipped")
                torch.cuda.empty_cache()
                continue
            rows.append(median_row(name, args.runs, t_us, cpu_us, gemm_flops(m, n, k),
                                   gemm_bytes(m, n, k, in_size, out_size)))
            print(f"matmul_bench: {name:42s} {t_us:10.1f} us {rows[-1]['TFLOPS']:7.1f} TFLOPS")
            del call
            torch.cuda.empty_cache()
    return rows


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.warmup < 0 or args.runs < 1:
        print("matmul_bench: error: --warmup must be >= 0 and --runs >= 1", file=sys.stderr)
        return 2
    args.shape = args.shape or list(DEFAULT_SHAPES)
    torch = import_cuda_torch(SKIP_LINE)
    if torch is None:
        return 0

    context = make_context(torch, args)
    context["executable"] = "plots/matmul_bench.py"
    workspace = torch_cublas_workspace_bytes(torch)
    if workspace:
        context["torch_cublas_workspace_bytes"] = workspace
    context["torch_blas_library"] = str(torch.backends.cuda.preferred_blas_library()).split(".")[-1]
    context["allow_fp16_reduced_precision_reduction"] = str(
        int(torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction))
    rows = benchmark_rows(torch, args, context)
    if not rows:
        print("matmul_bench: error: no product ran on any shape; nothing written", file=sys.stderr)
        return 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"context": context, "benchmarks": rows}, indent=2) + "\n", encoding="utf-8")
    print(f"matmul_bench: wrote {len(rows)} rows to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
