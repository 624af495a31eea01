#!/usr/bin/env python3
"""Time cuDNN's fp8 attention forward, the peer of stage 07's v9, through the cuDNN frontend's Python graph API.

    python3 plots/cudnn_fp8_bench.py --out cudnn_fp8.json
    python3 plots/cudnn_fp8_bench.py --out cudnn_fp8.json --seq 8192 --causal 0 --o-dtype fp8_e4m3

PyTorch's scaled_dot_product_attention has no fp8 path, so this script builds cuDNN's fp8 SDPA graph
itself with the cuDNN frontend's Python package (`pip install nvidia-cudnn-frontend`, 1.12 or newer; a
machine without a network takes it as a wheel) on the cuDNN library PyTorch's wheels bring. Q, K, V are e4m3 [B, H, N, D]
with per-tensor dequantization scales, as v9 takes them (fs_attention_params' q_descale, k_descale,
v_descale), the causal mask bottom-right as the project's, O in bf16 as v9 writes it where cuDNN builds
that graph, else in cuDNN's own fp8 (--o-dtype chooses; each row's label says which O it wrote). The points are stage 07's fp8
grid: D = 128 (v9's one head_dim), N = 512 … 16384 with B·N = 16384 and H = 2048 / D, both masks.

Each point is timed as plots/sdpa_bench.py times SDPA's (its time_call: 10 warm-up calls, 0.2 s of
calls back to back, 30 timed calls with the L2 flushed and the host's dispatch covered before each,
the median kept) and named as the stage names v9's rows, series sdpa_cudnn, dtype fp8_e4m3:

    sdpa_cudnn/fp8_e4m3/D:128/N:8192/causal:0

so that plots/plot_results.py sets it beside v9 in the fp8 tables and the versus block. FLOPs as every
attention row counts them (4·B·H·N²·D, halved for causal); bytes Q, K, V, O at one byte each. Before
timing, O is compared with PyTorch's SDPA in fp32 on the dequantized inputs: relative L2 distance at
most 0.05 (P is rounded to e4m3, 3 mantissa bits; v9's own tolerance is its stage's). Without PyTorch,
CUDA, a Hopper GPU or the frontend this prints a skip line and exits 0 (as the other peer scripts).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import sdpa_bench as sb  # noqa: E402  (the timing, names, counts and JSON of the other peers)

SERIES = "sdpa_cudnn"
DTYPE = "fp8_e4m3"
HEAD_DIMS = (128,)  # v9's
O_DTYPES = ("auto", "bf16", "fp8_e4m3")
# P = softmax(S) lies in [0, 1]: cuDNN stores it in e4m3 after multiplying by scale_s, and e4m3's
# largest finite value is 448, so P·448 uses the whole range; descale_s undoes it.
P_SCALE = 448.0
TOLERANCE = 0.05
SKIP_LINE = "cudnn_fp8_bench: skipped — needs PyTorch with a CUDA GPU of compute capability 9.0 or newer"
_RELAUNCHED = "FLASHSTAGES_CUDNN_FP8_RELAUNCHED"


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, required=True, help="JSON file to write")
    p.add_argument("--seq", nargs="+", type=int, default=list(sb.DEFAULT_SEQS), metavar="N")
    p.add_argument("--dim", nargs="+", type=int, default=list(HEAD_DIMS), metavar="D", choices=HEAD_DIMS)
    p.add_argument("--causal", nargs="+", type=int, choices=(0, 1), default=[0, 1])
    p.add_argument("--o-dtype", choices=O_DTYPES, default="auto",
                   help="O's element type: bf16 as v9 writes it, cuDNN's fp8 O, or auto (default): bf16 where "
                        "cuDNN builds that graph, else fp8")
    p.add_argument("--warmup", type=int, default=10, help="untimed calls before timing (default 10)")
    p.add_argument("--runs", type=int, default=30, help="timed calls; the median is kept (default 30)")
    p.add_argument("--no-l2-flush", action="store_true", help="do not overwrite L2 before each timed call")
    args = p.parse_args(argv)
    if args.warmup < 0 or args.runs < 1:
        p.error("--warmup must be >= 0 and --runs >= 1")
    if any(n < 1 for n in args.seq):
        p.error("--seq takes positive lengths")
    return args


def libcudnn_dir() -> str | None:
    """The folder of a libcudnn.so.9 under this interpreter's site-packages (PyTorch's cuDNN wheel),
    or None."""
    import site
    for root in [*site.getsitepackages(), site.getusersitepackages()]:
        for path in sorted(Path(root).glob("nvidia/**/libcudnn.so.9")) if Path(root).is_dir() else []:
            return str(path.parent)
    return None


def import_frontend():
    """The cuDNN frontend's module, or None with the reason printed. The frontend opens cuDNN itself: the
    one file matching nvidia/cudnn/lib/libcudnn.so.<n> in site-packages (it asserts there is one), else by
    the unversioned name. PyTorch's cu13 wheel may keep several such files (the soname's link and the
    versioned library: then the import takes the shortest name, the soname) or keep them elsewhere (then
    the script runs itself again once, with a folder holding the unversioned name for PyTorch's library
    first on LD_LIBRARY_PATH)."""
    try:
        try:
            import cudnn
        except AssertionError:  # several libcudnn.so.<n> where the frontend wants one
            import glob
            every = glob.glob

            def soname_only(pattern, *args, **kwargs):
                found = every(pattern, *args, **kwargs)
                return sorted(found, key=len)[:1] if "libcudnn.so" in pattern else found

            glob.glob = soname_only
            try:
                import cudnn
            finally:
                glob.glob = every
        return cudnn
    except ImportError as err:
        print(f"cudnn_fp8_bench: skipped — the cuDNN frontend's Python package is not installed ({err}); "
              "pip install nvidia-cudnn-frontend")
        return None
    except OSError as err:
        found = libcudnn_dir()
        if found is None or os.environ.get(_RELAUNCHED):
            print(f"cudnn_fp8_bench: skipped — the cuDNN frontend found no cuDNN library ({err})")
            return None
        link_dir = tempfile.mkdtemp(prefix="flashstages_cudnn_")
        os.symlink(os.path.join(found, "libcudnn.so.9"), os.path.join(link_dir, "libcudnn.so"))
        env = dict(os.environ, **{_RELAUNCHED: "1"})
        env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (link_dir, found, env.get("LD_LIBRARY_PATH", "")) if p)
        sys.stdout.flush()
        os.execve(sys.executable, [sys.executable, *sys.argv], env)


def build_graph(cudnn, handle, b: int, h: int, n: int, d: int, causal: bool, o_dtype: str):
    """cuDNN's fp8 SDPA forward for [B, H, N, D] e4m3 Q, K, V (contiguous), inference mode (no stats),
    the bottom-right causal mask where asked; returns the graph and its tensors by role."""
    fp8, f32 = cudnn.data_type.FP8_E4M3, cudnn.data_type.FLOAT
    g = cudnn.pygraph(io_data_type=fp8, intermediate_data_type=f32, compute_data_type=f32, handle=handle)
    dims, strides = [b, h, n, d], [h * n * d, n * d, d, 1]
    t = {name: g.tensor(name=name, dim=dims, stride=strides, data_type=fp8) for name in ("q", "k", "v")}
    for name in ("descale_q", "descale_k", "descale_v", "descale_s", "scale_s", "scale_o"):
        t[name] = g.tensor(name=name, dim=[1, 1, 1, 1], stride=[1, 1, 1, 1], data_type=f32)
    o, _, amax_s, amax_o = g.sdpa_fp8(
        t["q"], t["k"], t["v"], t["descale_q"], t["descale_k"], t["descale_v"], t["descale_s"], t["scale_s"],
        t["scale_o"], is_inference=True, attn_scale=1.0 / math.sqrt(d), use_causal_mask_bottom_right=causal,
        name="sdpa_fp8")
    o.set_output(True).set_dim(dims).set_stride(strides).set_data_type(
        cudnn.data_type.BFLOAT16 if o_dtype == "bf16" else fp8)
    for amax in (amax_s, amax_o):
        amax.set_output(True).set_dim([1, 1, 1, 1]).set_stride([1, 1, 1, 1]).set_data_type(f32)
    t.update(o=o, amax_s=amax_s, amax_o=amax_o)
    g.validate()
    g.build_operation_graph()
    g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    g.check_support()
    g.build_plans()
    return g, t


class Refused(Exception):
    """cuDNN builds no graph for the point on this GPU (its fp8 forward takes no causal mask on Hopper,
    for one): the point has no peer this run, which is not a failure of the benchmark."""


def build_any(cudnn, handle, b: int, h: int, n: int, d: int, causal: bool, o_dtype: str):
    """build_graph for --o-dtype; with auto, bf16 O where cuDNN builds that graph, else fp8 O. Returns
    (graph, tensors, the O dtype taken); raises Refused where cuDNN builds neither."""
    try:
        if o_dtype != "auto":
            return (*build_graph(cudnn, handle, b, h, n, d, causal, o_dtype), o_dtype)
        try:
            return (*build_graph(cudnn, handle, b, h, n, d, causal, "bf16"), "bf16")
        except Exception:  # noqa: BLE001  (cuDNN refuses a graph with its own exception types)
            return (*build_graph(cudnn, handle, b, h, n, d, causal, "fp8_e4m3"), "fp8_e4m3")
    except Exception as e:  # noqa: BLE001
        raise Refused(sb.failure_reason(e)) from e


def measure(torch, cudnn, handle, b: int, h: int, n: int, d: int, causal: bool, args,
            flush) -> tuple[float, float, float, str]:
    """(device µs, host µs, relative L2 error of O, O's dtype) of one point."""
    fp8 = torch.float8_e4m3fn
    x = [torch.randn(b, h, n, d, device="cuda") for _ in range(3)]
    q, k, v = (t.to(fp8) for t in x)  # |x| < 448: no scaling needed, descales are 1
    g, t, o_dtype = build_any(cudnn, handle, b, h, n, d, causal, args.o_dtype)
    o = torch.empty(b, h, n, d, device="cuda", dtype=torch.bfloat16 if o_dtype == "bf16" else fp8)
    scalar = lambda value: torch.full((1, 1, 1, 1), value, device="cuda", dtype=torch.float32)  # noqa: E731
    pack = {t["q"]: q, t["k"]: k, t["v"]: v, t["o"]: o, t["descale_q"]: scalar(1.0), t["descale_k"]: scalar(1.0),
            t["descale_v"]: scalar(1.0), t["descale_s"]: scalar(1.0 / P_SCALE), t["scale_s"]: scalar(P_SCALE),
            t["scale_o"]: scalar(1.0), t["amax_s"]: scalar(0.0), t["amax_o"]: scalar(0.0)}
    workspace = torch.empty(g.get_workspace_size(), device="cuda", dtype=torch.uint8)
    cudnn.set_stream(handle=handle, stream=torch.cuda.current_stream().cuda_stream)

    def call():
        g.execute(pack, workspace, handle=handle)

    call()
    torch.cuda.synchronize()
    ref = reference_o(torch, q, k, v, causal, n)
    err = (torch.linalg.vector_norm(o.float() - ref) / torch.linalg.vector_norm(ref)).item()
    del ref, x
    device_us, host_us = sb.time_call(torch, call, args.warmup, args.runs, flush)
    return device_us, host_us, err, o_dtype


def reference_o(torch, q, k, v, causal: bool, n: int):
    """fp32 SDPA on the dequantized inputs, a head at a time (N = 16384 at fp32 does not fit at once
    beside the rest), the project's mask (bottom-right: with Nq = Nk, PyTorch's is_causal)."""
    import torch.nn.functional as F
    out = torch.empty(q.shape, device="cuda", dtype=torch.float32)
    for bi in range(q.shape[0]):
        for hi in range(q.shape[1]):
            out[bi, hi] = F.scaled_dot_product_attention(q[bi, hi, None].float(), k[bi, hi, None].float(),
                                                         v[bi, hi, None].float(), is_causal=causal)[0]
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    torch = sb.import_cuda_torch(SKIP_LINE)
    if torch is None:
        return 0
    if torch.cuda.get_device_capability() < (9, 0) or not hasattr(torch, "float8_e4m3fn"):
        print(SKIP_LINE)
        return 0
    cudnn = import_frontend()
    if cudnn is None:
        return 0
    handle = cudnn.create_handle()
    context = sb.make_context(torch, args)
    context.update({"executable": "plots/cudnn_fp8_bench.py", "cudnn_frontend": str(cudnn.__version__),
                    "cudnn_backend": str(cudnn.backend_version()), "o_dtype_asked": args.o_dtype})
    flush = None if args.no_l2_flush else sb.l2_flush_buffer(torch)
    rows, failures = [], 0
    for d in args.dim:
        for n in args.seq:
            b, h = sb.default_batch_heads(n, d)
            for causal in (bool(c) for c in args.causal):
                name = sb.bench_name(SERIES, DTYPE, b, h, n, n, d, causal)
                try:
                    device_us, host_us, err, o_dtype = measure(torch, cudnn, handle, b, h, n, d, causal, args,
                                                               flush)
                except Refused as e:
                    print(f"{name}: not run — cuDNN builds no graph for it on this GPU: {e}")
                    continue
                except Exception as e:  # noqa: BLE001  (cuDNN fails with its own exception types)
                    print(f"{name}: not run — {sb.failure_reason(e)}")
                    failures += 1
                    continue
                if not err <= TOLERANCE:
                    print(f"{name}: O differs from fp32 SDPA by {err:.3g} (relative L2, at most {TOLERANCE}): not kept")
                    failures += 1
                    continue
                row = sb.median_row(name, args.runs, device_us, host_us, sb.attention_flops(b, h, n, n, d, causal),
                                    sb.attention_bytes(b, h, n, n, d, 1))
                row["label"] = f"O {o_dtype}, rel_l2 {err:.3g}"
                rows.append(row)
                print(f"{name}: {row['TFLOPS']:.1f} TFLOPS, {device_us:.1f} us, O {o_dtype}, rel_l2 {err:.3g}")
                torch.cuda.empty_cache()
    cudnn.destroy_handle(handle)
    if not rows:
        print("cudnn_fp8_bench: error: no point ran; nothing written", file=sys.stderr)
        return 1
    sb.write_benchmark_json("cudnn_fp8_bench", args.out, context, rows)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
