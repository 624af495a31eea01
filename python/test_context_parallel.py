#!/usr/bin/env python3
"""The ring attention plan and its fp64 reference (flashstages.context_parallel), on the CPU: numpy only.

    python3 python/test_context_parallel.py

The zigzag chunks cover the sequence and balance the causal work; the LSE merge is exact; the ring,
simulated over W ranks in one process, gives plain attention's O, LSE, dQ, dK and dV at lengths that do
not divide evenly, with and without the causal mask, with grouped K/V heads; 16-bit partial outputs
cost what 16-bit rounding costs, no more; bad inputs are refused by name; the ring benchmark
(python/bench_ring_attention.py) answers --help and refuses bad flags before it imports PyTorch.
"""
import sys
import unittest
from pathlib import Path

try:
    import numpy as np
except ModuleNotFoundError:  # scripts/setup.sh brings numpy with matplotlib
    print("SKIPPED: numpy is not installed (scripts/setup.sh installs it with matplotlib)")
    sys.exit(77)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from flashstages import context_parallel as cp  # noqa: E402

TIGHT = 1e-12  # fp64 against fp64: the same sums in another order


def plain(q, k, v, causal, scale):
    return cp.attention_block(q, k, v, scale, causal)


def plain_backward(q, k, v, do, causal, scale):
    o, lse = plain(q, k, v, causal, scale)
    delta = np.einsum("bhid,bhid->bhi", do, o)
    return cp.attention_block_backward(q, k, v, do, lse, delta, scale, causal)


def rel(a, b):
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300))


def problem(rng, b, h, kvh, n, d):
    q = rng.standard_normal((b, h, n, d))
    k = rng.standard_normal((b, kvh, n, d))
    v = rng.standard_normal((b, kvh, n, d))
    do = rng.standard_normal((b, h, n, d))
    return q, k, v, do


class Plan(unittest.TestCase):
    def test_zigzag_chunks_cover_the_sequence_in_near_equal_chunks(self):
        for n in (0, 1, 5, 17, 64, 1000):
            for world in (1, 2, 3, 4, 8):
                chunks = cp.zigzag_chunks(n, world)
                self.assertEqual(len(chunks), 2 * world)
                self.assertEqual(chunks[0][0], 0)
                self.assertEqual(chunks[-1][1], n)
                self.assertTrue(all(a[1] == b[0] for a, b in zip(chunks, chunks[1:])))
                sizes = [stop - start for start, stop in chunks]
                self.assertLessEqual(max(sizes) - min(sizes), 1)
                rows = np.sort(np.concatenate([cp.shard_rows(n, r, world) for r in range(world)]))
                self.assertTrue(np.array_equal(rows, np.arange(n)))

    def test_each_rank_meets_every_shard_once(self):
        for world in (1, 2, 3, 5):
            for rank in range(world):
                sources = [src for src, _ in cp.ring_plan(rank, world, causal=True)]
                self.assertEqual(sources[0], rank)  # its own shard first: no transfer to wait for
                self.assertEqual(sorted(sources), list(range(world)))

    def test_zigzag_balances_the_causal_work(self):
        for world in (2, 3, 4, 8):
            n = 2 * world * 64  # equal chunks: every rank the same (query, key) pairs
            work = [cp.rank_work(n, r, world, causal=True) for r in range(world)]
            self.assertEqual(len(set(work)), 1, work)
            self.assertEqual(sum(work), n * (n + 1) // 2)  # the causal triangle, no pair twice
            # and 2·world − 1 unmasked chunk pairs and two diagonal ones per rank
            for r in range(world):
                calls = [c for _, cs in cp.ring_plan(r, world, causal=True) for c in cs]
                self.assertEqual(sum(not c.causal for c in calls), 2 * world - 1)
                self.assertEqual(sum(c.causal for c in calls), 2)
            # a plain split into row ranges would not balance: the last rank does 2·world − 1 times the first's
        n = 1000  # uneven chunks: the ranks' work within a few rows' worth
        work = [cp.rank_work(n, r, 4, causal=True) for r in range(4)]
        self.assertLess((max(work) - min(work)) / max(work), 0.01)
        self.assertEqual(sum(work), n * (n + 1) // 2)

    def test_pair_kinds(self):
        self.assertEqual(cp.pair_kind(3, 1, causal=True), "full")
        self.assertEqual(cp.pair_kind(3, 3, causal=True), "diagonal")
        self.assertEqual(cp.pair_kind(1, 3, causal=True), "skip")
        self.assertEqual(cp.pair_kind(1, 3, causal=False), "full")


class Merge(unittest.TestCase):
    def test_the_merge_of_two_key_blocks_is_attention_over_both(self):
        rng = np.random.default_rng(1)
        q, k, v, _ = problem(rng, 2, 4, 2, 33, 16)
        scale = 0.25
        o, lse = plain(q, k, v, False, scale)
        for cut in (1, 10, 32):
            oa, la = cp.attention_block(q, k[:, :, :cut], v[:, :, :cut], scale, False)
            ob, lb = cp.attention_block(q, k[:, :, cut:], v[:, :, cut:], scale, False)
            om, lm = cp.merge(oa, la, ob, lb)
            self.assertLess(rel(om, o), TIGHT)
            self.assertLess(rel(lm, lse), TIGHT)

    def test_a_side_that_saw_no_key_changes_nothing(self):
        rng = np.random.default_rng(2)
        o = rng.standard_normal((1, 1, 5, 4))
        lse = rng.standard_normal((1, 1, 5))
        empty_o, empty_lse = np.full_like(o, np.nan), np.full_like(lse, -np.inf)  # its O is ignored
        om, lm = cp.merge(o, lse, np.zeros_like(o), empty_lse)
        self.assertTrue(np.array_equal(om, o) and np.array_equal(lm, lse))
        om, lm = cp.merge(np.zeros_like(o), empty_lse, o, lse)
        self.assertTrue(np.array_equal(om, o) and np.array_equal(lm, lse))
        om, lm = cp.merge(np.zeros_like(o), empty_lse, np.zeros_like(o), empty_lse)
        self.assertTrue(np.all(lm == -np.inf) and np.all(om == 0))
        self.assertTrue(np.all(np.isnan(empty_o)))


class Ring(unittest.TestCase):
    SHAPES = [  # (B, H, KVH, N, D): lengths that do not divide into 2·W chunks, grouped K/V
        (1, 2, 2, 1, 8), (2, 2, 1, 17, 8), (1, 4, 2, 100, 16), (1, 3, 3, 61, 8), (1, 4, 1, 256, 16)]

    def test_the_ring_forward_is_attention(self):
        rng = np.random.default_rng(3)
        for b, h, kvh, n, d in self.SHAPES:
            q, k, v, _ = problem(rng, b, h, kvh, n, d)
            for causal in (False, True):
                o, lse = plain(q, k, v, causal, d ** -0.5)
                for world in (1, 2, 3, 4):
                    with self.subTest(shape=(b, h, kvh, n, d), causal=causal, world=world):
                        ro, rlse = cp.ring_attention_forward(q, k, v, world, causal)
                        self.assertLess(rel(ro, o), TIGHT)
                        self.assertTrue(np.array_equal(np.isinf(rlse), np.isinf(lse)))
                        self.assertLess(rel(rlse[np.isfinite(lse)], lse[np.isfinite(lse)]), TIGHT)

    def test_the_ring_backward_is_attention_backward(self):
        rng = np.random.default_rng(4)
        for b, h, kvh, n, d in self.SHAPES:
            q, k, v, do = problem(rng, b, h, kvh, n, d)
            for causal in (False, True):
                scale = 0.3
                want = plain_backward(q, k, v, do, causal, scale)
                o, lse = plain(q, k, v, causal, scale)
                for world in (1, 2, 3, 4):
                    with self.subTest(shape=(b, h, kvh, n, d), causal=causal, world=world):
                        got = cp.ring_attention_backward(q, k, v, o, lse, do, world, causal, scale)
                        for name, g, w in zip(("dQ", "dK", "dV"), got, want):
                            self.assertEqual(g.shape, w.shape, name)
                            self.assertLess(rel(g, w), TIGHT, name)

    def test_sixteen_bit_partials_cost_what_rounding_costs(self):
        # Each call's O comes back in fp16 (a 16-bit kernel's output); the running O stays wide. The error
        # is then that of rounding each partial once: about fp16's unit roundoff, not W times it.
        rng = np.random.default_rng(5)
        q, k, v, _ = problem(rng, 1, 2, 2, 512, 16)
        o, _ = plain(q, k, v, True, 0.25)
        once = rel(o.astype(np.float16).astype(np.float64), o)
        for world in (2, 4, 8):
            ro, _ = cp.ring_attention_forward(q, k, v, world, True, 0.25, partial_dtype=np.float16)
            self.assertLess(rel(ro, o), 2 * once, world)

    def test_bad_inputs_are_refused_by_name(self):
        q = np.zeros((1, 4, 8, 16))
        cases = [
            (lambda: cp.ring_attention_forward(q, np.zeros((1, 3, 8, 16)), np.zeros((1, 3, 8, 16)), 2), "divide"),
            (lambda: cp.ring_attention_forward(q, np.zeros((1, 2, 8, 16)), np.zeros((1, 2, 8, 8)), 2), "same shape"),
            (lambda: cp.ring_attention_forward(q, np.zeros((1, 2, 9, 16)), np.zeros((1, 2, 9, 16)), 2), "one sequence"),
            (lambda: cp.ring_attention_forward(q, q, q, 0), "world"),
            (lambda: cp.ring_attention_forward(q[0], q, q, 1), "[B, H, N, D]"),
            (lambda: cp.zigzag_chunks(-1, 2), "seq_len"),
            (lambda: cp.shard_chunks(2, 2), "rank 2"),
        ]
        for call, words in cases:
            with self.assertRaises(ValueError) as caught:
                call()
            self.assertIn(words, str(caught.exception))


class BenchFlags(unittest.TestCase):
    """python/bench_ring_attention.py answers --help and refuses bad flags before it imports PyTorch."""

    def test_help_and_bad_flags(self):
        import contextlib
        import io
        import bench_ring_attention as bench
        with contextlib.redirect_stdout(io.StringIO()) as out, self.assertRaises(SystemExit) as done:
            bench.parse(["--help"])
        self.assertEqual(done.exception.code, 0)
        self.assertIn("--seq", out.getvalue())
        for bad in (["--heads", "16", "--kv-heads", "3"], ["--seq", "0"], ["--dim", "96"], ["--rounds", "x"]):
            with contextlib.redirect_stderr(io.StringIO()), self.assertRaises(SystemExit) as done:
                bench.parse(bad)
            self.assertEqual(done.exception.code, 2, bad)
        self.assertEqual(bench.parse(["--heads", "8"]).kv_heads, 8)  # K/V heads default to the query heads
        self.assertNotIn("torch", sys.modules)


if __name__ == "__main__":
    unittest.main()
