"""flash_attention as PyTorch operators, on a GPU with PyTorch 2.4 or newer (test_binding.py checks
what they refuse on the CPU, without PyTorch):

  opcheck    torch.library.opcheck of flashstages::flash_attention_forward and ::flash_attention_backward
             (the schema, the autograd registration, the fake implementations, AOT dispatch with dynamic
             shapes) in fp16 and bf16, at odd sizes, Nq != Nk, causal, grouped K/V;
  accuracy   flash_attention's O, LSE and dQ, dK, dV against an fp64 PyTorch reference: fp16/bf16 error
             within 2x of SDPA's own in the same dtype, plus one unit in the last place (the
             flash-attention rule; the stages' test.cu holds each version to 2x the naive stage's);
  the pick   the default path's versions as pick() names them, a stage 07 forward on Hopper;
  layouts    q, k, v as views of a model's [B, N, H, D] tensors and of a packed [B, N, 3, H, D] one:
             opcheck, O and the gradients against fp64 (the rule above), O in q's order of dimensions
             and each gradient laid out as its input (contiguous for a packed slice, which the backward
             reads as a copy);
  compile    torch.compile(fullgraph=True) of a small transformer block (q, k, v projections,
             flash_attention, the output projection) forward and backward against eager, both measured
             against the block in fp64, with q, k, v dense copies and as the projections' [B, N, H, D]
             views; a first call made inside torch.compile, in a fresh process; and a bad call refused
             while compiling, before anything runs.

    python3 python/test_torch_op.py [build/.../libflashstages.so]
    (exit 77 and SKIPPED without PyTorch or a GPU; FLASHSTAGES_REQUIRE_GPU=1 makes that a failure)
"""
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import flashstages  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def has_gpu():
    try:
        import torch
        return torch.cuda.is_available()
    except ImportError:
        return False


def reference(q, k, v, causal, scale=None):
    """O and LSE of attention in fp64, K/V heads repeated over their groups, the bottom-right causal mask."""
    import torch
    q, k, v = q.double(), k.double(), v.double()
    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    s = q @ k.transpose(-1, -2) * (scale if scale is not None else q.shape[-1] ** -0.5)
    if causal:  # query i sees keys j <= i + Nk - Nq
        nq, nk = q.shape[2], k.shape[2]
        seen = torch.ones(nq, nk, dtype=torch.bool, device=q.device).tril(nk - nq)
        s = s.masked_fill(~seen, float("-inf"))
    return torch.softmax(s, -1) @ v, s.logsumexp(-1)


def sdpa(causal, nq, nk, gqa=False):
    """SDPA with the project's mask (is_causal agrees with it only when Nq = Nk) and grouped K/V."""
    import torch
    from torch.nn.attention.bias import causal_lower_right
    args = {"enable_gqa": True} if gqa else {}
    if causal:
        args.update({"is_causal": True} if nq == nk else {"attn_mask": causal_lower_right(nq, nk)})
    return lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(q, k, v, **args)


def inputs(dtype, b, h, kv_heads, nq, nk, d, requires_grad=False):
    import torch
    q = torch.randn(b, h, nq, d, device="cuda", dtype=dtype, requires_grad=requires_grad)
    k, v = (torch.randn(b, kv_heads, nk, d, device="cuda", dtype=dtype, requires_grad=requires_grad)
            for _ in range(2))
    return q, k, v


def model_layout(dtype, b, h, kv_heads, nq, nk, d):
    """The tensors most models hold, [B, N, H, D] (x_q; x_k and x_v with KVH heads), and the views
    flash_attention takes of them: x.transpose(1, 2), [B, H, N, D], dense but not contiguous."""
    import torch
    x_q = torch.randn(b, nq, h, d, device="cuda", dtype=dtype)
    x_k, x_v = (torch.randn(b, nk, kv_heads, d, device="cuda", dtype=dtype) for _ in range(2))
    return [x_q, x_k, x_v], lambda x_q, x_k, x_v: (x_q.transpose(1, 2), x_k.transpose(1, 2), x_v.transpose(1, 2))


def packed_layout(dtype, b, h, n, d):
    """One packed [B, N, 3, H, D] tensor, a fused QKV projection's, and the views flash_attention takes of
    it: q, k, v = its slices transposed to [B, H, N, D], neither contiguous nor dense."""
    import torch
    qkv = torch.randn(b, n, 3, h, d, device="cuda", dtype=dtype)
    return [qkv], lambda qkv: tuple(t.transpose(1, 2) for t in qkv.unbind(2))


def strided_leaves(bases, views):
    """q, k, v as the views lay them out, each a leaf of its own (detach keeps a view's strides)."""
    return tuple(t.detach().requires_grad_(True) for t in views(*bases))


class OpCheck(unittest.TestCase):
    """torch.library.opcheck on both operators. deterministic=True: opcheck compares repeated runs (eager,
    AOT-compiled) exactly enough that dQ's unordered atomic adds could fail it by a rounding step."""

    CASES = (("float16", 1, 2, 2, 17, 17, 64, True), ("bfloat16", 2, 4, 2, 17, 33, 128, True),
             ("float16", 1, 4, 1, 33, 17, 64, False), ("bfloat16", 1, 2, 2, 1, 37, 64, False))

    def test_forward(self):
        import torch
        ops = flashstages.torch_ops()
        torch.manual_seed(10)
        for dtype, b, h, kv_heads, nq, nk, d, causal in self.CASES:
            with self.subTest(dtype=dtype, b=b, h=h, kv_heads=kv_heads, nq=nq, nk=nk, d=d, causal=causal):
                q, k, v = inputs(getattr(torch, dtype), b, h, kv_heads, nq, nk, d, requires_grad=True)
                torch.library.opcheck(ops.flash_attention_forward.default, (q, k, v, causal, None, True, None, None))
                torch.library.opcheck(ops.flash_attention_forward.default, (q, k, v, causal, 0.3, True,
                                                                            "fs_flash_fwd_v5", "fs_flash_bwd_v10"))

    def test_backward(self):
        import torch
        ops = flashstages.torch_ops()
        torch.manual_seed(11)
        for dtype, b, h, kv_heads, nq, nk, d, causal in self.CASES:
            with self.subTest(dtype=dtype, b=b, h=h, kv_heads=kv_heads, nq=nq, nk=nk, d=d, causal=causal):
                q, k, v = inputs(getattr(torch, dtype), b, h, kv_heads, nq, nk, d)
                out, lse = ops.flash_attention_forward(q, k, v, causal, None, True, None, None)
                d_o = torch.randn_like(out)
                torch.library.opcheck(ops.flash_attention_backward.default,
                                      (d_o, q, k, v, out, lse, causal, None, True, None))

    def test_strided_inputs(self):
        # [B, N, H, D] views and packed QKV slices: the fake implementations must make what the real ones
        # make, strides included (out as empty_like(q); gradients as their inputs, or contiguous).
        import torch
        ops = flashstages.torch_ops()
        torch.manual_seed(12)
        for dtype in (torch.float16, torch.bfloat16):
            for layout, (bases, views) in (("model", model_layout(dtype, 1, 4, 2, 17, 33, 64)),
                                           ("packed", packed_layout(dtype, 2, 2, 17, 128))):
                with self.subTest(dtype=str(dtype), layout=layout):
                    q, k, v = strided_leaves(bases, views)
                    torch.library.opcheck(ops.flash_attention_forward.default, (q, k, v, True, None, True, None, None))
                    q, k, v = views(*bases)
                    out, lse = ops.flash_attention_forward(q, k, v, True, None, True, None, None)
                    torch.library.opcheck(ops.flash_attention_backward.default,
                                          (torch.randn_like(out), q, k, v, out, lse, True, None, True, None))

    def test_outputs_and_gradients_keep_the_inputs_layout(self):
        # The library's rule: O laid out as Q; dQ as Q, dK as K, dV as V; dO as O. Packed slices are not
        # dense: O is dense in their order of dimensions ([B, N, H, D], empty_like's), and the gradients come
        # back contiguous (the backward read contiguous copies).
        import torch
        ops = flashstages.torch_ops()
        torch.manual_seed(13)
        bases, views = model_layout(torch.float16, 2, 4, 2, 100, 230, 64)
        q, k, v = views(*bases)
        out, lse = ops.flash_attention_forward(q, k, v, True, None, False, None, None)
        self.assertEqual(out.stride(), q.stride())
        self.assertTrue(out.transpose(1, 2).is_contiguous())
        self.assertTrue(lse.is_contiguous())
        dq, dk, dv = ops.flash_attention_backward(torch.randn_like(out), q, k, v, out, lse, True, None, False, None)
        self.assertEqual((dq.stride(), dk.stride(), dv.stride()), (q.stride(), k.stride(), v.stride()))
        with self.assertRaises(ValueError) as caught:  # dO in another layout than O's
            ops.flash_attention_backward(torch.randn(out.shape, device="cuda", dtype=out.dtype), q, k, v, out, lse,
                                         True, None, False, None)
        self.assertIn("laid out as O", str(caught.exception))
        bases, views = packed_layout(torch.float16, 2, 4, 100, 64)
        q, k, v = views(*bases)
        out, lse = ops.flash_attention_forward(q, k, v, True, None, False, None, None)
        self.assertTrue(out.transpose(1, 2).is_contiguous())
        grads = ops.flash_attention_backward(torch.randn_like(out), q, k, v, out, lse, True, None, False, None)
        self.assertTrue(all(g.is_contiguous() for g in grads))

    def test_lse_is_float32_and_not_differentiable(self):
        import torch
        q, k, v = inputs(torch.bfloat16, 2, 4, 2, 17, 33, 64, requires_grad=True)
        out, lse = flashstages.torch_ops().flash_attention_forward(q, k, v, True, None, False, None, None)
        self.assertEqual((lse.dtype, tuple(lse.shape)), (torch.float32, (2, 4, 17)))
        self.assertTrue(out.requires_grad)
        self.assertFalse(lse.requires_grad)


class Accuracy(unittest.TestCase):
    """flash_attention's O and LSE, and dQ, dK, dV of a dO, against fp64.

    Tolerance, the flash-attention rule: ours and SDPA's results in the same dtype are both measured against
    an fp64 run of the same inputs and dO, and ours must be within 2x of SDPA's error (its fp16/bf16 kernels
    round P and dS as ours do, so its error is what this precision costs), plus one unit in the last place
    of the dtype at the largest magnitude: SDPA can be nearly exact on a tiny problem (N = 17), where 2x of
    almost nothing would fail an equally good kernel. The LSE is fp32 from exact fp16 products: within
    1e-3 of fp64's."""

    SHAPES = ((1, 2, 2, 17, 17, 64, True), (2, 3, 3, 1000, 1000, 128, False), (1, 2, 2, 1000, 1000, 64, True),
              (1, 2, 2, 100, 230, 128, True), (2, 2, 2, 230, 100, 64, False), (1, 1, 1, 17, 1000, 128, True),
              (2, 4, 2, 100, 230, 64, True), (1, 4, 1, 300, 300, 128, False), (2, 8, 2, 1, 1000, 64, False),
              (1, 6, 1, 17, 17, 128, True))

    def run_attention(self, fn, q, k, v, d_o):
        q, k, v = (t.detach().clone().requires_grad_(True) for t in (q, k, v))
        o = fn(q, k, v)
        o.backward(d_o)
        return o.detach(), q.grad, k.grad, v.grad

    def run_on_views(self, fn, bases, views, d_o):
        """fn on the q, k, v that `views` takes of fresh copies of the base tensors: O and the bases'
        gradients (a packed QKV tensor's holds dQ, dK and dV)."""
        bases = [t.detach().clone().requires_grad_(True) for t in bases]
        o = fn(*views(*bases))
        o.backward(d_o)
        return [o.detach()] + [t.grad for t in bases]

    def assert_within_twice_sdpa(self, names, ref, theirs, ours, dtype):
        import torch
        ulp = torch.finfo(dtype).eps
        for name, r, t, o in zip(names, ref, theirs, ours):
            self.assertEqual(o.dtype, dtype, name)
            self.assertEqual(o.shape, r.shape, name)
            their_err = (t.double() - r).abs().max().item()
            our_err = (o.double() - r).abs().max().item()
            floor = ulp * max(1.0, r.abs().max().item())
            self.assertLessEqual(our_err, 2 * their_err + floor,
                                 f"{name}: ours {our_err:.3g}, SDPA's {their_err:.3g} against fp64")

    def check_against_sdpa(self, dtype, b, h, kv_heads, nq, nk, d, causal):
        import torch
        q, k, v = inputs(dtype, b, h, kv_heads, nq, nk, d)
        d_o = torch.randn(b, h, nq, d, device="cuda", dtype=dtype)
        theirs_fn = sdpa(causal, nq, nk, gqa=kv_heads != h)
        ref = self.run_attention(theirs_fn, q.double(), k.double(), v.double(), d_o.double())
        theirs = self.run_attention(theirs_fn, q, k, v, d_o)
        ours = self.run_attention(lambda q, k, v: flashstages.flash_attention(q, k, v, causal=causal), q, k, v, d_o)
        torch.cuda.synchronize()
        self.assert_within_twice_sdpa(("o", "dq", "dk", "dv"), ref, theirs, ours, dtype)
        _, lse = flashstages.torch_ops().flash_attention_forward(q, k, v, causal, None, False, None, None)
        lse_err = (lse.double() - reference(q, k, v, causal)[1]).abs().max().item()
        self.assertLess(lse_err, 1e-3, f"lse: {lse_err:.3g} from fp64")

    def test_forward_and_gradients_match_sdpa(self):
        import torch
        torch.manual_seed(2)
        for dtype in (torch.float16, torch.bfloat16):
            for b, h, kv_heads, nq, nk, d, causal in self.SHAPES:
                with self.subTest(dtype=str(dtype), b=b, h=h, kv_heads=kv_heads, nq=nq, nk=nk, d=d, causal=causal):
                    self.check_against_sdpa(dtype, b, h, kv_heads, nq, nk, d, causal)

    def test_model_layouts_match_sdpa(self):
        # q, k, v as views of a model's [B, N, H, D] tensors (odd N, Nq != Nk, grouped K/V) and of a packed
        # [B, N, 3, H, D] one: O and the gradients of the base tensors within 2x of SDPA's error on the same
        # views, against fp64. dO in O's layout ([B, N, H, D] too) and contiguous (the gradient copies that
        # into O's layout first); the LSE against fp64 as above.
        import torch
        torch.manual_seed(14)
        cases = [("model", (1, 2, 2, 17, 17, 64, True)), ("model", (2, 4, 2, 100, 230, 128, True)),
                 ("model", (2, 4, 1, 230, 100, 64, False)), ("model", (1, 8, 2, 1, 1000, 64, False)),
                 ("packed", (1, 2, 2, 17, 17, 64, True)), ("packed", (2, 3, 3, 300, 300, 128, False))]
        for dtype in (torch.float16, torch.bfloat16):
            for layout, (b, h, kv_heads, nq, nk, d, causal) in cases:
                if layout == "model":
                    bases, views = model_layout(dtype, b, h, kv_heads, nq, nk, d)
                    names = ("o", "dx_q", "dx_k", "dx_v")
                else:
                    bases, views = packed_layout(dtype, b, h, nq, d)
                    names = ("o", "dqkv")
                theirs_fn = sdpa(causal, nq, nk, gqa=kv_heads != h)
                ours_fn = lambda q, k, v: flashstages.flash_attention(q, k, v, causal=causal)  # noqa: E731
                # O is [B, N, H, D] for both: the views' layout, the packed slices' without the gaps.
                for d_o_layout in ("as O", "contiguous"):
                    d_o = torch.randn(b, nq, h, d, device="cuda", dtype=dtype).transpose(1, 2)
                    d_o = d_o if d_o_layout == "as O" else d_o.contiguous()
                    with self.subTest(dtype=str(dtype), layout=layout, b=b, h=h, kv_heads=kv_heads, nq=nq, nk=nk,
                                      d=d, causal=causal, d_o=d_o_layout):
                        ref = self.run_on_views(theirs_fn, [t.double() for t in bases], views, d_o.double())
                        theirs = self.run_on_views(theirs_fn, bases, views, d_o)
                        ours = self.run_on_views(ours_fn, bases, views, d_o)
                        torch.cuda.synchronize()
                        self.assert_within_twice_sdpa(names, ref, theirs, ours, dtype)
                        _, lse = flashstages.torch_ops().flash_attention_forward(*views(*bases), causal, None, False,
                                                                                 None, None)
                        lse_err = (lse.double() - reference(*views(*bases), causal)[1]).abs().max().item()
                        self.assertLess(lse_err, 1e-3, f"lse: {lse_err:.3g} from fp64")

    def test_scale_and_a_strided_gradient(self):
        # A scale of its own, and dO as an expanded view (autograd hands those over for a sum's backward).
        import torch
        torch.manual_seed(3)
        q, k, v = inputs(torch.float16, 1, 2, 2, 300, 300, 64)
        q64, k64, v64 = (t.double().requires_grad_(True) for t in (q, k, v))
        torch.nn.functional.scaled_dot_product_attention(q64, k64, v64, scale=0.3).sum().backward()
        q, k, v = (t.requires_grad_(True) for t in (q, k, v))
        flashstages.flash_attention(q, k, v, scale=0.3).sum().backward()
        for r, o in ((q64.grad, q.grad), (k64.grad, k.grad), (v64.grad, v.grad)):
            # fp16 keeps 11 bits; 1e-2 of the largest gradient is ten of its rounding steps.
            self.assertLess((o.double() - r).abs().max().item(), 1e-2 * max(1.0, r.abs().max().item()))

    def test_deterministic_dq_is_bitwise_the_same(self):
        import torch
        torch.manual_seed(4)
        q, k, v = inputs(torch.bfloat16, 2, 4, 4, 1000, 1000, 128)
        d_o = torch.randn_like(q)
        fn = lambda q, k, v: flashstages.flash_attention(q, k, v, causal=True, deterministic=True)  # noqa: E731
        first, second = self.run_attention(fn, q, k, v, d_o), self.run_attention(fn, q, k, v, d_o)
        for name, a, b in zip(("dq", "dk", "dv"), first[1:], second[1:]):  # what deterministic promises
            self.assertTrue(torch.equal(a, b), name)

    def test_named_versions_run_too(self):
        # kernel= and backward_kernel= name registry versions instead of the picking entries.
        import torch
        torch.manual_seed(7)
        q, k, v = inputs(torch.float16, 1, 2, 2, 100, 230, 64)
        d_o = torch.randn_like(q)
        named = self.run_attention(lambda q, k, v: flashstages.flash_attention(
            q, k, v, causal=True, kernel="fs_flash_fwd_v5", backward_kernel="fs_flash_bwd_v2"), q, k, v, d_o)
        ref = self.run_attention(sdpa(True, 100, 230), q.double(), k.double(), v.double(), d_o.double())
        for name, r, o in zip(("o", "dq", "dk", "dv"), ref, named):
            self.assertLess((o.double() - r).abs().max().item(), 1e-2 * max(1.0, r.abs().max().item()), name)


class DefaultPick(unittest.TestCase):
    """What the picking entries run, as pick() names it."""

    def test_hopper_runs_a_stage_07_forward(self):
        import torch
        if torch.cuda.get_device_capability() != (9, 0):
            self.skipTest(f"{torch.cuda.get_device_name()} is not a Hopper GPU (sm_90): stage 07 does not run on it")
        for dtype in (torch.float16, torch.bfloat16):
            for b, h, kv_heads, nq, nk, d, causal in ((2, 16, 16, 4096, 4096, 128, True),
                                                      (4, 8, 8, 1000, 1000, 64, False), (1, 2, 2, 17, 17, 64, True),
                                                      (2, 8, 2, 100, 230, 128, True)):
                q, k, v = inputs(dtype, b, h, kv_heads, nq, nk, d)
                picked = flashstages.pick(q, k, v, causal=causal)
                with self.subTest(dtype=str(dtype), b=b, h=h, kv_heads=kv_heads, nq=nq, nk=nk, d=d, causal=causal):
                    self.assertEqual(picked.info.stage.decode(), "stage07/attention", repr(picked))
                    self.assertIn(picked.name, repr(picked))
                    self.assertTrue(picked.reason, repr(picked))

    def test_the_backward_pick_is_the_hopper_backward_on_hopper(self):
        # On sm_90 the reference GPU's rows make stage 07's backward rung the fastest (the issue's "the
        # backward stage 07's once the Hopper backward exists"); elsewhere it cannot run, and stage 05's is.
        import torch
        hopper = torch.cuda.get_device_capability() == (9, 0)
        for deterministic in (False, True):
            q, k, v = inputs(torch.float16, 2, 8, 8, 1000, 1000, 128)
            picked = flashstages.pick(q, k, v, causal=True, backward=True, deterministic=deterministic)
            with self.subTest(deterministic=deterministic, picked=repr(picked)):
                self.assertEqual(picked.info.problem, flashstages.PROBLEM_ATTENTION_BWD)
                self.assertEqual(picked.info.stage.decode(), "stage07/attention_bwd" if hopper else "stage05")


class Compile(unittest.TestCase):
    """torch.compile(fullgraph=True) traces flash_attention as one operator, forward and backward."""

    DIM, HEADS, KV_HEADS, BATCH, SEQ = 256, 4, 2, 2, 37

    def block(self, dtype, contiguous=True):
        """A pre-norm attention block: x + Wo · attention(Wq x, Wk x, Wv x), causal, K/V heads grouped.
        contiguous: q, k, v made dense [B, H, N, D] copies; else passed as the [B, N, H, D] projections'
        transposed views, as most models hold them (then O comes back in that layout, and the output
        projection reads it with no copy)."""
        import torch
        dim, heads, kv_heads = self.DIM, self.HEADS, self.KV_HEADS
        head_dim = dim // heads

        class Block(torch.nn.Module):
            def __init__(self, attend):
                super().__init__()
                self.attend = attend
                self.norm = torch.nn.LayerNorm(dim)
                self.wq = torch.nn.Linear(dim, dim, bias=False)
                self.wk = torch.nn.Linear(dim, kv_heads * head_dim, bias=False)
                self.wv = torch.nn.Linear(dim, kv_heads * head_dim, bias=False)
                self.wo = torch.nn.Linear(dim, dim)

            def forward(self, x):  # x: [B, N, dim]
                b, n, _ = x.shape
                y = self.norm(x)

                def heads_of(t, count):  # [B, N, count·D] -> [B, count, N, D]: a view, or a dense copy
                    t = t.view(b, n, count, head_dim).transpose(1, 2)
                    return t.contiguous() if contiguous else t

                q, k, v = heads_of(self.wq(y), heads), heads_of(self.wk(y), kv_heads), heads_of(self.wv(y), kv_heads)
                o = self.attend(q, k, v)
                return x + self.wo(o.transpose(1, 2).reshape(b, n, dim))

        ours = Block(lambda q, k, v: flashstages.flash_attention(q, k, v, causal=True)).to("cuda", dtype)
        exact = Block(lambda q, k, v: reference(q, k, v, causal=True)[0]).to("cuda", torch.float64)
        exact.load_state_dict(ours.state_dict())
        return ours, exact

    def run_block(self, block, x, g):
        x = x.detach().clone().requires_grad_(True)
        y = block(x)
        y.backward(g)
        grads = [x.grad] + [p.grad for p in block.parameters()]
        block.zero_grad(set_to_none=True)
        return [y.detach()] + grads

    def test_a_transformer_block_compiles_whole_and_matches_eager(self):
        import torch
        torch.manual_seed(8)
        for dtype, contiguous in ((torch.float16, True), (torch.bfloat16, True), (torch.float16, False),
                                  (torch.bfloat16, False)):
            with self.subTest(dtype=str(dtype), contiguous=contiguous):
                torch._dynamo.reset()
                block, exact = self.block(dtype, contiguous)
                x = torch.randn(self.BATCH, self.SEQ, self.DIM, device="cuda", dtype=dtype)
                g = torch.randn_like(x)
                ref = self.run_block(exact, x.double(), g.double())
                eager = self.run_block(block, x, g)
                compiled = self.run_block(torch.compile(block, fullgraph=True), x, g)
                names = ["y", "dx"] + [name for name, _ in block.named_parameters()]
                ulp = torch.finfo(dtype).eps
                for name, r, e, c in zip(names, ref, eager, compiled):
                    eager_err = (e.double() - r).abs().max().item()
                    compiled_err = (c.double() - r).abs().max().item()
                    floor = ulp * max(1.0, r.abs().max().item())
                    self.assertLessEqual(compiled_err, 2 * eager_err + floor,
                                         f"{name}: compiled {compiled_err:.3g}, eager {eager_err:.3g} against fp64")

    def test_a_first_call_inside_torch_compile(self):
        # A fresh process whose first flash_attention call is traced: PyTorch imported first, so the package
        # registered the operators at its import.
        code = "\n".join([
            "import torch, flashstages",
            "q, k, v = (torch.randn(1, 2, 17, 64, device='cuda', dtype=torch.float16, requires_grad=True)",
            "           for _ in range(3))",
            "f = torch.compile(lambda q, k, v: flashstages.flash_attention(q, k, v, causal=True), fullgraph=True)",
            "o = f(q, k, v)",
            "o.sum().backward()",
            "e = flashstages.flash_attention(q.detach(), k.detach(), v.detach(), causal=True)",
            "print('same as eager', bool((o - e).abs().max() <= 1e-3), 'dq finite', bool(q.grad.isfinite().all()))",
        ])
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env={**os.environ, "PYTHONPATH": HERE})
        self.assertEqual(p.returncode, 0, p.stderr[-4000:])
        self.assertIn("same as eager True dq finite True", p.stdout)

    def test_a_bad_call_is_refused_while_compiling(self):
        # The fake implementation checks as the real one does: refused at trace time, nothing run.
        import torch
        q, k, v = inputs(torch.float16, 1, 2, 2, 17, 17, 256)
        f = torch.compile(lambda q, k, v: flashstages.flash_attention(q, k, v, backward_kernel="fs_flash_bwd_v10"),
                          fullgraph=True)
        with self.assertRaises(Exception) as caught:
            f(q, k, v)
        self.assertIn("head_dim 256: the backward, fs_flash_bwd_v10, takes [64, 128]", str(caught.exception))
        with self.assertRaises(ValueError) as caught:  # and eagerly, as a ValueError
            flashstages.flash_attention(q, k, v, backward_kernel="fs_flash_bwd_v10")
        self.assertIn("head_dim 256: the backward, fs_flash_bwd_v10", str(caught.exception))


def run_gpu_cases(cases, what):
    """`<test>.py [LIBRARY]`: the test cases `cases` (TestCase classes, or a function returning them, called
    once the GPU is known); without PyTorch and a GPU exit 77 (CTest's "skipped", printing that `what` needs
    them), or fail when FLASHSTAGES_REQUIRE_GPU=1."""
    args = sys.argv[1:]
    if args and not args[0].startswith("-"):
        os.environ["FLASHSTAGES_LIBRARY"] = args.pop(0)
    if not has_gpu():
        if os.environ.get("FLASHSTAGES_REQUIRE_GPU", "0") not in ("", "0"):
            sys.exit("FLASHSTAGES_REQUIRE_GPU=1 but PyTorch sees no CUDA GPU (or this Python has no PyTorch)")
        print(f"SKIPPED: {what} need PyTorch with a CUDA GPU")
        sys.exit(77)
    cases = cases() if callable(cases) else cases
    suite = unittest.TestSuite(unittest.defaultTestLoader.loadTestsFromTestCase(c) for c in cases)
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    sys.exit(0 if result.wasSuccessful() else 1)


def main():
    run_gpu_cases([OpCheck, Accuracy, DefaultPick, Compile], "flash_attention's operator tests")


if __name__ == "__main__":
    main()
