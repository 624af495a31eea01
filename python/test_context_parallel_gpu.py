"""The ring attention of flashstages.context_parallel run on one GPU with the library's kernels: W ranks
simulated rank after rank, each chunk pair through the fastest forward and backward, the partials merged
in float32. O, LSE, dQ, dK and dV against an fp64 reference: within 2× the error of one flash_attention
call over the whole sequence, plus one unit in the last place, for W = 1 … 4 at lengths that do not
divide into 2W chunks (some chunks empty), both masks, grouped K/V, fp16 and bf16.

    python3 python/test_context_parallel_gpu.py [build/.../libflashstages.so]
    (exit 77 and SKIPPED without PyTorch or a GPU; FLASHSTAGES_REQUIRE_GPU=1 makes that a failure)
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import flashstages  # noqa: E402
from test_torch_op import run_gpu_cases  # noqa: E402  (the library argument, the skip, FLASHSTAGES_REQUIRE_GPU)

cp = None  # flashstages.context_parallel, imported once the GPU is known (it needs numpy too)


def reference(q, k, v, d_o, causal):
    """O, LSE, dQ, dK, dV of attention in fp64 (autograd), K/V repeated over their groups, the mask
    aligned bottom-right."""
    import torch
    q, k, v = (t.detach().double().requires_grad_(True) for t in (q, k, v))
    group = q.shape[1] // k.shape[1]
    s = q @ k.repeat_interleave(group, 1).transpose(-1, -2) * q.shape[-1] ** -0.5
    if causal:
        n = q.shape[2]
        s = s.masked_fill(~torch.ones(n, n, dtype=torch.bool, device=q.device).tril(), float("-inf"))
    o = torch.softmax(s, -1) @ v.repeat_interleave(group, 1)
    o.backward(d_o.double())
    return o.detach(), s.logsumexp(-1).detach(), q.grad, k.grad, v.grad


class RingOnOneGpu(unittest.TestCase):
    SHAPES = [(1, 2, 2, 5, 64), (2, 2, 1, 17, 64), (1, 4, 2, 100, 128), (1, 2, 2, 1000, 64)]  # B, H, KVH, N, D

    def test_the_ring_matches_one_call_and_fp64(self):
        import torch
        torch.manual_seed(0)
        for dtype in (torch.float16, torch.bfloat16):
            for b, h, kvh, n, d in self.SHAPES:
                q = torch.randn(b, h, n, d, device="cuda", dtype=dtype)
                k, v = (torch.randn(b, kvh, n, d, device="cuda", dtype=dtype) for _ in range(2))
                d_o = torch.randn(b, h, n, d, device="cuda", dtype=dtype)
                for causal in (False, True):
                    ref = reference(q, k, v, d_o, causal)
                    ops = flashstages.torch_ops()
                    one_o, one_lse = ops.flash_attention_forward(q, k, v, causal, None, False, None, None)
                    one = (one_o, one_lse) + tuple(ops.flash_attention_backward(
                        d_o, q, k, v, one_o, one_lse, causal, None, False, None))
                    for world in (1, 2, 3, 4):
                        with self.subTest(dtype=str(dtype), shape=(b, h, kvh, n, d), causal=causal, world=world):
                            o, lse = cp.ring_attention_one_gpu(q, k, v, world, causal)
                            grads = cp.ring_attention_one_gpu_backward(q, k, v, o, lse, d_o, world, causal)
                            ring = (o, lse) + tuple(grads)
                            torch.cuda.synchronize()
                            for name, r, single, ours in zip(("O", "LSE", "dQ", "dK", "dV"), ref, one, ring):
                                self.assertEqual(ours.shape, r.shape, name)
                                floor = torch.finfo(dtype).eps * max(1.0, r.abs().max().item())
                                single_err = (single.double() - r).abs().max().item()
                                ring_err = (ours.double() - r).abs().max().item()
                                self.assertLessEqual(ring_err, 2 * single_err + floor,
                                                     f"{name}: ring {ring_err:.3g}, one call {single_err:.3g}")

    def test_bad_inputs_are_refused_by_name(self):
        import torch
        q = torch.zeros(1, 2, 8, 64, device="cuda", dtype=torch.float16)
        with self.assertRaises(ValueError) as caught:
            cp.ring_attention_one_gpu(q, q[:, :, :4], q[:, :, :4], 2)
        self.assertIn("one sequence", str(caught.exception))
        with self.assertRaises(ValueError) as caught:
            cp.ring_attention_one_gpu(q, q, q, 0)
        self.assertIn("world", str(caught.exception))
        with self.assertRaises(TypeError):
            cp.ring_attention_one_gpu(q.cpu().numpy(), q, q, 2)


def cases():
    global cp
    from flashstages import context_parallel as cp
    return [RingOnOneGpu]


if __name__ == "__main__":
    run_gpu_cases(cases, "the ring tests on one GPU")
