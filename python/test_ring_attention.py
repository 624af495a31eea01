"""flashstages.ring.ring_attention over torch.distributed: W processes, each holding its zigzag shard of
Q, K and V, the K/V shards passed round the ring. With as many GPUs as ranks the ranks talk over NCCL,
one GPU each; on one GPU they share it and talk over gloo (the shards through host memory): the same
ring, every check and every step, only the transport differs. FLASHSTAGES_RING_BACKEND=gloo or nccl
forces one.

Held: each rank's O, LSE, dQ, dK and dV against an fp64 reference of the whole sequence, within 2× the
error of one flash_attention call over it plus one unit in the last place, W = 2 and 3, lengths that do
not divide into 2W chunks, both masks, grouped K/V, fp16 and bf16; bad inputs on one rank, and ranks that
disagree, refused by name on every rank; a rank that never calls makes the others time out, not hang.

    python3 python/test_ring_attention.py [build/.../libflashstages.so]
    (exit 77 and SKIPPED without PyTorch or a GPU; FLASHSTAGES_REQUIRE_GPU=1 makes that a failure)
"""
import datetime
import os
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_context_parallel_gpu import reference  # noqa: E402  (fp64 O, LSE, dQ, dK, dV of one sequence)
from test_torch_op import run_gpu_cases  # noqa: E402  (the library argument, the skip, FLASHSTAGES_REQUIRE_GPU)


def _expect(error, text, call):
    """call() raises `error` whose message holds `text`, else AssertionError."""
    try:
        call()
    except error as e:
        if text not in str(e):
            raise AssertionError(f"{error.__name__} without {text!r}: {e}") from e
        return
    raise AssertionError(f"no {error.__name__} ({text!r})")


def case_matches_fp64(rank, world):
    """Every rank's rows of O, LSE and the gradients against fp64 over the whole sequence."""
    import torch
    import flashstages
    from flashstages.ring import ring_attention, zigzag_shard
    ops = flashstages.torch_ops()
    for dtype in (torch.float16, torch.bfloat16):
        for b, h, kvh, n, d in ((1, 2, 2, 5, 64), (2, 4, 1, 37, 64), (1, 2, 1, 1000, 128)):
            for causal in (False, True):
                gen = torch.Generator().manual_seed(n * 10 + causal)  # the same inputs on every rank
                q, d_o = (torch.randn(b, h, n, d, generator=gen).to("cuda", dtype) for _ in range(2))
                k, v = (torch.randn(b, kvh, n, d, generator=gen).to("cuda", dtype) for _ in range(2))
                ref = reference(q, k, v, d_o, causal)
                one_o, one_lse = ops.flash_attention_forward(q, k, v, causal, None, False, None, None)
                one = (one_o, one_lse) + tuple(ops.flash_attention_backward(d_o, q, k, v, one_o, one_lse, causal,
                                                                            None, False, None))
                qs, ks, vs = (zigzag_shard(t, rank, world).requires_grad_(True) for t in (q, k, v))
                o, lse = ring_attention(qs, ks, vs, n, causal=causal, return_lse=True)
                o.backward(zigzag_shard(d_o, rank, world))
                ours = (o, lse, qs.grad, ks.grad, vs.grad)
                torch.cuda.synchronize()
                for name, r, single, mine in zip(("O", "LSE", "dQ", "dK", "dV"), ref, one, ours):
                    r_shard = zigzag_shard(r, rank, world)
                    assert mine.shape == r_shard.shape, f"{name}: {tuple(mine.shape)} against {tuple(r_shard.shape)}"
                    floor = torch.finfo(dtype).eps * max(1.0, r.abs().max().item())
                    single_err = (single.double() - r).abs().max().item()
                    ring_err = (mine.double() - r_shard).abs().max().item() if mine.numel() else 0.0
                    assert ring_err <= 2 * single_err + floor, (
                        f"{dtype} {(b, h, kvh, n, d)} causal={causal} world={world} rank {rank} {name}: "
                        f"ring {ring_err:.3g}, one call {single_err:.3g}")


def case_refuses_by_name(rank, world):
    """One rank's bad inputs, or ranks that disagree: every rank raises, naming it; the ring stays usable."""
    import torch
    from flashstages.ring import ring_attention, zigzag_shard
    n = 50
    q = torch.randn(1, 2, n, 64, device="cuda", dtype=torch.float16)
    qs = zigzag_shard(q, rank, world)
    _expect(ValueError, "disagree on causal", lambda: ring_attention(qs, qs, qs, n, causal=rank == 1))
    _expect(ValueError, "disagree on scale", lambda: ring_attention(qs, qs, qs, n, scale=0.1 if rank else 0.2))
    bf = qs.to(torch.bfloat16) if rank == 1 else qs
    _expect(ValueError, "disagree on dtype", lambda: ring_attention(bf, bf, bf, n))
    cpu = qs.cpu() if rank == 0 else qs
    _expect(ValueError, "rank 0", lambda: ring_attention(cpu, cpu, cpu, n))
    wrong = n + 7 if rank == world - 1 else n  # its shard is not that length's
    _expect(ValueError, f"rank {world - 1}", lambda: ring_attention(qs, qs, qs, wrong))
    odd = qs.transpose(2, 3) if rank == 0 else qs  # not contiguous
    _expect(ValueError, "rank 0", lambda: ring_attention(odd, odd, odd, n))
    d32 = zigzag_shard(torch.randn(1, 2, n, 32, device="cuda", dtype=torch.float16), rank, world)
    # No backward version takes D = 32: refused before any transfer.
    _expect(ValueError, "head_dim 32", lambda: ring_attention(d32, d32, d32, n))
    o = ring_attention(qs, qs, qs, n)  # after the refusals, every rank still in step
    assert o.shape == qs.shape


def case_times_out(rank, world):
    """Rank 0 never calls: the others give up after their timeout with a RuntimeError."""
    import torch
    from flashstages.ring import ring_attention, zigzag_shard
    if rank == 0:
        time.sleep(8)
        return
    qs = zigzag_shard(torch.randn(1, 2, 40, 64, device="cuda", dtype=torch.float16), rank, world)
    start = time.monotonic()
    _expect(RuntimeError, "ring_attention", lambda: ring_attention(qs, qs, qs, 40, timeout=datetime.timedelta(seconds=3)))
    assert time.monotonic() - start < 30, "the timeout was not honoured"


CASES = {"matches_fp64": case_matches_fp64, "refuses_by_name": case_refuses_by_name, "times_out": case_times_out}


def _worker(rank, world, backend, init_file, case):
    import torch
    import torch.distributed as dist
    torch.cuda.set_device(rank % torch.cuda.device_count() if backend == "nccl" else 0)
    dist.init_process_group(backend, init_method="file://" + init_file, rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=120))
    CASES[case](rank, world)
    if case == "times_out":  # the abandoned collective would hold up an orderly shutdown
        sys.stdout.flush()
        os._exit(0)
    dist.barrier()
    dist.destroy_process_group()


class RingOverProcesses(unittest.TestCase):
    def spawn(self, case, world):
        import torch
        import torch.multiprocessing as mp
        backend = os.environ.get("FLASHSTAGES_RING_BACKEND") or ("nccl" if torch.cuda.device_count() >= world else "gloo")
        print(f"\n  {case}: {world} ranks over {backend}", file=sys.stderr)
        with tempfile.TemporaryDirectory() as tmp:
            mp.spawn(_worker, args=(world, backend, os.path.join(tmp, "rendezvous"), case), nprocs=world, join=True)

    def test_two_ranks_match_fp64(self):
        self.spawn("matches_fp64", 2)

    def test_three_ranks_match_fp64(self):
        self.spawn("matches_fp64", 3)

    def test_bad_inputs_and_disagreements_are_refused_on_every_rank(self):
        self.spawn("refuses_by_name", 2)

    def test_a_missing_rank_is_a_timeout_not_a_hang(self):
        self.spawn("times_out", 2)


if __name__ == "__main__":
    run_gpu_cases([RingOverProcesses], "the ring over torch.distributed")
