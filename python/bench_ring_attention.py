"""How ring attention (flashstages.ring) scales: one long sequence over the W GPUs of a torchrun job.

    torchrun --nproc-per-node 8 python/bench_ring_attention.py --seq 131072 --causal [--json ring.json]
    python3 python/bench_ring_attention.py --smoke     # one GPU: 2 ranks over gloo, a short sequence

Per point (B = 1, H heads of D over a sequence of --seq rows, each rank its zigzag shard), in
alternating rounds, each a median of --repeats runs timed with CUDA events after warm-up, the slowest
rank's time taken:
  ring       ring_attention's forward (and, with --backward, forward and backward)
  compute    the same calls with every K/V shard already in place (no transfer: what the ring costs
             without its communication)
  transfer   the W − 1 hops of one K/V shard alone, posted as the ring posts them
  one GPU    flash_attention over the whole sequence on rank 0 (where it fits), the others waiting
  torch CP   PyTorch's own context-parallel SDPA (torch.distributed.tensor.experimental), where the
             installed version has it, in the same rounds
and from them: the speed-up over one GPU, the fraction of the transfer hidden under compute
(1 − (ring − compute) / transfer), tokens per second. compute, transfer and torch CP are the forward's:
with --backward only ring and one GPU are timed (the speed-up and tokens per second; no hidden
fraction). Rank 0 prints a table; --json writes it.
"""
import argparse
import datetime
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seq", type=int, default=131072, help="rows of the whole sequence (default 131072)")
    ap.add_argument("--dim", type=int, choices=(64, 128), default=128, help="head_dim (default 128)")
    ap.add_argument("--heads", type=int, default=16, help="query heads (default 16)")
    ap.add_argument("--kv-heads", type=int, default=0, help="K/V heads, a divisor of --heads (default: --heads)")
    ap.add_argument("--dtype", choices=("fp16", "bf16"), default="bf16")
    ap.add_argument("--causal", action="store_true", help="the causal mask over the whole sequence")
    ap.add_argument("--backward", action="store_true", help="time forward and backward, not the forward alone")
    ap.add_argument("--rounds", type=int, default=5, help="alternating rounds (default 5)")
    ap.add_argument("--repeats", type=int, default=10, help="timed runs per round (default 10)")
    ap.add_argument("--json", help="write the table here (rank 0)")
    ap.add_argument("--smoke", action="store_true", help="2 ranks on one GPU over gloo, a short sequence: checks the script")
    a = ap.parse_args(argv)
    if a.seq < 1 or a.heads < 1 or a.rounds < 1 or a.repeats < 1:
        ap.error("--seq, --heads, --rounds and --repeats must be positive")
    a.kv_heads = a.kv_heads or a.heads
    if a.kv_heads < 1 or a.heads % a.kv_heads:
        ap.error(f"--kv-heads {a.kv_heads} must divide --heads {a.heads}")
    return a


def timed(fn, repeats):
    """Median milliseconds of `repeats` runs of fn() after one warm-up, CUDA events on the current stream."""
    import torch
    fn()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def slowest(ms):
    """The slowest rank's time: a ring step is as fast as its slowest rank."""
    import torch
    import torch.distributed as dist
    t = torch.tensor([ms], dtype=torch.float64, device="cuda" if dist.get_backend() == "nccl" else "cpu")
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item()


def torch_cp(q_full, k_full, v_full, causal):
    """A function running PyTorch's context-parallel SDPA on this rank's share, or the reason it cannot."""
    import torch
    import torch.distributed as dist
    try:
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.tensor.experimental import context_parallel
    except ImportError as e:
        return None, f"unavailable in PyTorch {torch.__version__} ({e})"
    if dist.get_backend() != "nccl" or q_full.shape[1] != k_full.shape[1]:
        return None, "needs NCCL and as many K/V heads as query heads"
    mesh = init_device_mesh("cuda", (dist.get_world_size(),))
    q, k, v = (t.clone() for t in (q_full, k_full, v_full))

    def run():
        with context_parallel(mesh, buffers=[q, k, v], buffer_seq_dims=[2, 2, 2]):
            torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return run, ""


def main(argv=None):
    a = parse(sys.argv[1:] if argv is None else argv)
    import torch
    import torch.distributed as dist
    if a.smoke:
        return smoke(a)
    if not dist.is_initialized():
        dist.init_process_group("nccl", timeout=datetime.timedelta(minutes=10))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank % torch.cuda.device_count())))
    return run_points(a, rank, world)


def run_points(a, rank, world):
    import torch
    import torch.distributed as dist
    import flashstages
    from flashstages import ring as R
    dtype = torch.float16 if a.dtype == "fp16" else torch.bfloat16
    gen = torch.Generator().manual_seed(0)  # the same sequence on every rank
    q_full = torch.randn(1, a.heads, a.seq, a.dim, generator=gen).to("cuda", dtype)
    k_full, v_full = (torch.randn(1, a.kv_heads, a.seq, a.dim, generator=gen).to("cuda", dtype) for _ in range(2))
    q, k, v = (R.zigzag_shard(t, rank, world) for t in (q_full, k_full, v_full))
    d_o = torch.randn_like(q)
    ring = R._Ring(None, a.seq, a.causal, R.DEFAULT_TIMEOUT)
    kv_full = torch.stack([k_full, v_full])
    shards = [R.zigzag_shard(kv_full, r, world, dim=3) for r in range(world)]

    def ring_call():
        if a.backward:
            qq, kk, vv = (t.detach().requires_grad_(True) for t in (q, k, v))
            R.ring_attention(qq, kk, vv, a.seq, causal=a.causal).backward(d_o)
        else:
            R.ring_attention(q, k, v, a.seq, causal=a.causal)

    def compute_only():
        R._forward(ring, q, k, v, None, shards=shards)

    kv = torch.stack([k, v])

    def transfer():  # each hop forwards what the last brought, as the ring does
        shard = kv
        for step in range(world - 1):
            shard = ring.pass_on(shard, (rank - step - 1) % world)()
        return shard

    ops = flashstages.torch_ops()

    def one_gpu():
        if rank == 0:
            o, lse = ops.flash_attention_forward(q_full, k_full, v_full, a.causal, None, False, None, None)
            if a.backward:
                ops.flash_attention_backward(torch.randn_like(o), q_full, k_full, v_full, o, lse, a.causal, None, False, None)

    cp_run, cp_why = torch_cp(q_full, k_full, v_full, a.causal)
    if a.backward:  # the other series time the forward alone: not set against a forward and backward
        cp_run, cp_why = None, "not timed with --backward (its series is the forward's)"
        series = {"ring": ring_call, "one GPU": one_gpu}
    else:
        series = {"ring": ring_call, "compute": compute_only, "transfer": transfer, "one GPU": one_gpu}
    if cp_run:
        series["torch CP"] = cp_run
    rounds = {name: [] for name in series}
    for r in range(a.rounds):
        names = list(series) if r % 2 == 0 else list(reversed(series))  # alternating
        for name in names:
            dist.barrier()
            rounds[name].append(slowest(timed(series[name], a.repeats)))
    ms = {name: statistics.median(v) for name, v in rounds.items()}
    hidden = 1.0 - (ms["ring"] - ms["compute"]) / ms["transfer"] if ms.get("transfer", 0) > 0 else None
    row = {"world": world, "seq": a.seq, "heads": a.heads, "kv_heads": a.kv_heads, "dim": a.dim, "dtype": a.dtype,
           "causal": a.causal, "backward": a.backward, "ms": ms, "speedup_over_one_gpu": ms["one GPU"] / ms["ring"],
           "transfer_hidden": None if hidden is None else max(0.0, min(1.0, hidden)),
           "tokens_per_s": a.seq / ms["ring"] * 1e3,
           "torch_cp": "timed" if cp_run else cp_why, "torch": torch.__version__,
           "gpu": torch.cuda.get_device_name(), "backend": dist.get_backend()}
    if rank == 0:
        what = "forward and backward" if a.backward else "forward"
        print(f"ring attention {what}: {world} ranks over {row['backend']}, {row['gpu']}, N = {a.seq}, H = {a.heads}, "
              f"KVH = {a.kv_heads}, D = {a.dim}, {a.dtype}, {'causal' if a.causal else 'non-causal'}; "
              f"median of {a.rounds} alternating rounds, slowest rank")
        for name, t in ms.items():
            print(f"  {name:<9} {t:10.3f} ms")
        hidden_text = "n/a" if row["transfer_hidden"] is None else f"{row['transfer_hidden']:.0%}"
        print(f"  speed-up over one GPU {row['speedup_over_one_gpu']:.2f} (ideal {world}), transfer hidden "
              f"{hidden_text}, {row['tokens_per_s']:.0f} tokens/s; torch CP: {row['torch_cp']}")
        if a.json:
            with open(a.json, "w") as f:
                json.dump(row, f, indent=1)
    return 0


def _smoke_worker(rank, a, init_file):
    import torch
    import torch.distributed as dist
    torch.cuda.set_device(0)
    dist.init_process_group("gloo", init_method="file://" + init_file, rank=rank, world_size=2,
                            timeout=datetime.timedelta(seconds=120))
    run_points(a, rank, 2)
    dist.barrier()
    dist.destroy_process_group()


def smoke(a):
    """The whole script on one GPU: 2 ranks over gloo (transfers through host memory), a short sequence."""
    import tempfile
    import torch.multiprocessing as mp
    a.seq, a.heads, a.kv_heads, a.rounds, a.repeats = min(a.seq, 2048), 4, 2, 2, 2
    with tempfile.TemporaryDirectory() as tmp:
        mp.spawn(_smoke_worker, args=(a, os.path.join(tmp, "rendezvous")), nprocs=2, join=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
