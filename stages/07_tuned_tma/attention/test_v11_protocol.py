#!/usr/bin/env python3
"""A model of v11's barrier protocol (v11_persistent.cuh), run under random schedules on the CPU.

    python3 stages/07_tuned_tma/attention/test_v11_protocol.py [--trials 1000] [--seed 1]

A persistent block runs tile after tile, so every barrier goes through phase after phase and the producer
refills sQ, the stages and the tile slot while the consumers may still be on the previous tile. The GPU
tests show the kernel right where they run; this model shows the protocol right over schedules a GPU
seldom produces. One block: the producer (warp 0: its lane 0's loads and its warp's zeroing, in program
order) and 3 consumers × 4 warps (v7's tiles at D = 64 and 128; 2 at D = 256), each warp a process of its
own, as each warp waits and arrives on its own, and 2 Q buffers (1 at D = 256, and in a quarter of the
other trials), tile t in buffer t % buffers. An mbarrier is modelled as the hardware keeps it: a phase
completes when its arrivals reach the count and its transaction bytes reach zero, and a wait for parity p
returns once the current phase's parity is not p (so a fresh barrier's first wait for parity 1 returns at
once, which the producer's first waits on `empty` and `q_empty` rely on). Each TMA load lands at a random
later step, writing its tile's identity into the buffer it fills.

A trial draws 1 to 7 tiles, each with its key blocks (0 for an empty sequence), the blocks each consumer
reads (one reads them all; the others, causal rows before the last or rows past the sequence's end, the
first ones), and whether Q's tile or the last V tile has rows to zero. The checks: the schedule never
deadlocks; every consumer warp reads the tile index the producer published, in order, and −1 only after
the last tile; whenever a consumer's product reads sQ, K_j or V_j (when it issues and when it completes),
the buffer holds that tile's Q or that block, so no load overwrote what a product still read; no load is
in flight when the block ends; the producer writes a slot only once every read of its last value is
ordered before an arrival it waited for. That last check is per thread, as the PTX memory model has it:
an mbarrier arrival orders only the arriving thread's own accesses, and a consumer warp arrives on
q_empty from lane 0, so lane 0 alone may read the slot. --broken NAME runs a protocol with one rule taken
out (the model must then fail): no_q_empty_wait (Q refilled without waiting for the consumers),
early_q_release (sQ handed back before the last S), empty_parity (the first waits on `empty` for the
wrong parity), all_lanes_read_slot (every lane reads the slot, as v11 did before racecheck's reports).
"""

from __future__ import annotations

import argparse
import random
import sys

BROKEN = ("no_q_empty_wait", "early_q_release", "empty_parity", "all_lanes_read_slot")


class Barrier:
    """An mbarrier: arrivals against a count, transaction bytes against zero, the phases completed."""

    def __init__(self, count: int):
        self.count, self.arrived, self.tx, self.phase = count, 0, 0, 0

    def arrive(self, tx: int = 0) -> None:  # mbarrier.arrive, or .expect_tx with tx
        self.arrived += 1
        self.tx += tx
        self._flip()

    def land(self, tx: int) -> None:  # a TMA load's bytes arrive
        self.tx -= tx
        self._flip()

    def _flip(self) -> None:
        assert self.arrived <= self.count and self.tx >= 0, "more arrivals or bytes than a phase takes"
        if self.arrived == self.count and self.tx == 0:
            self.phase += 1
            self.arrived = 0

    def done(self, parity: int) -> bool:  # mbarrier.try_wait.parity
        return (self.phase & 1) != parity


def wait(bar: Barrier, parity: int):
    while not bar.done(parity):
        yield


def run(stages: int, q_buffers: int, tiles: list, seed: int, broken: str = "") -> None:
    """One block over `tiles` [(key blocks, (blocks of each consumer), zero Q, zero V)], its tile t in Q
    buffer t % q_buffers, one random schedule; raises AssertionError on a violated check."""
    rnd = random.Random(seed)
    S, QB = stages, q_buffers
    WARPS = [c for c in range(len(tiles[0][1])) for _ in range(4)]  # the consumer of each consumer warp
    q_full = [Barrier(1) for _ in range(QB)]
    q_empty = [Barrier(len(WARPS)) for _ in range(QB)]
    q_landed, v_landed = Barrier(1), Barrier(1)
    full_k = [Barrier(1) for _ in range(S)]
    full_v = [Barrier(1) for _ in range(S)]
    empty = [Barrier(len(WARPS)) for _ in range(S)]
    smem = {"sQ": [None] * QB, "slot": [None] * QB, "K": [None] * S, "V": [None] * S}
    # The slot's reads that no arrival orders yet, as (warp, lane), under the strict rule the kernel keeps:
    # a read counts as ordered only before its own thread's arrival (the PTX model would also order the
    # other lanes' reads through a __syncwarp before lane 0's cumulative release; racecheck did not follow
    # that form), and a consumer warp arrives on q_empty from lane 0.
    unordered = [set() for _ in range(QB)]
    in_flight = []  # (barrier, buffer, stage, value): TMA loads not yet landed

    def load(bar, buffer, stage, value):
        bar.arrive(tx=1)  # expect_tx, then the copy
        in_flight.append((bar, buffer, stage, value))

    def write_slot(b, value):
        assert not unordered[b], (f"slot {b} written while reads of it by (warp, lane) {sorted(unordered[b])[:3]} "
                                  "are ordered before no arrival the producer waited for")
        smem["slot"][b] = value

    def release_q(w, b):  # a consumer warp's lane 0 arrives on q_empty: its own read of the slot is ordered
        unordered[b].discard((w, 0))
        q_empty[b].arrive()

    def producer():  # produce_tiles
        t, use, landed_q, landed_v = 0, 0, 0, 0
        while True:
            b, phase = t % QB, t // QB & 1
            if broken != "no_q_empty_wait":
                yield from wait(q_empty[b], phase ^ 1)
            if t == len(tiles):
                write_slot(b, -1)
                q_full[b].arrive()
                return
            n, _, zero_q, zero_v = tiles[t]
            write_slot(b, t)
            if n == 0:
                q_full[b].arrive()
            else:
                load(q_landed if zero_q else q_full[b], "sQ", b, t)
            yield
            if n and zero_q:  # the warp zeroes Q's rows past the end, then publishes
                yield from wait(q_landed, landed_q)
                landed_q ^= 1
                q_full[b].arrive()
            for j in range(n):
                u = use + j
                parity = (u // S) & 1
                yield from wait(empty[u % S], parity if broken == "empty_parity" else parity ^ 1)
                load(full_k[u % S], "K", u % S, (t, j))
                load(v_landed if zero_v and j == n - 1 else full_v[u % S], "V", u % S, (t, j))
                yield
            if n and zero_v:
                yield from wait(v_landed, landed_v)
                landed_v ^= 1
                full_v[(use + n - 1) % S].arrive()
            use = (use + n) % (2 * S)  # next_use
            t += 1

    def consumer(w, c):  # the kernel's consumer loop over ws::Consumer<…, kRunOn>; w: the warp
        use, k, expect = 0, 0, 0  # k: the block's tiles so far (its k-th takes Q buffer k % QB)
        while True:
            b = k % QB
            yield from wait(q_full[b], k // QB & 1)
            t = smem["slot"][b]  # lane 0 reads it and shuffles it to the warp
            unordered[b].update((w, lane) for lane in (range(32) if broken == "all_lanes_read_slot" else [0]))
            k += 1
            if t == -1:
                assert expect == len(tiles), f"the end published after {expect} of {len(tiles)} tiles"
                return
            assert t == expect, f"tile {t} published where {expect} was next"
            expect += 1
            n, mine, _, _ = tiles[t]
            mine = mine[c]
            if broken == "early_q_release":
                release_q(w, b)

            def holds(buffer, j=None):
                if buffer == "sQ":
                    assert smem["sQ"][b] == t, f"Q buffer {b} holds tile {smem['sQ'][b]} under tile {t}'s S"
                else:
                    got = smem[buffer][(use + j) % S]
                    assert got == (t, j), f"{buffer} of tile {t} block {j}: the stage holds {got}"

            if mine > 0:  # first(): S_0
                yield from wait(full_k[use % S], (use // S) & 1)
                holds("sQ"), holds("K", 0)
                yield
                holds("sQ"), holds("K", 0)
                if mine == 1 and broken != "early_q_release":
                    release_q(w, b)  # S_0 was the tile's last S
            elif broken != "early_q_release":
                release_q(w, b)  # no key block of its own: the buffer back at once
            for j in range(1, mine):  # issue(j), finish(j): S_j and P_{j-1}·V_{j-1}
                u = use + j
                yield from wait(full_k[u % S], (u // S) & 1)
                yield from wait(full_v[(u - 1) % S], ((u - 1) // S) & 1)
                holds("sQ"), holds("K", j), holds("V", j - 1)
                yield
                holds("sQ"), holds("K", j), holds("V", j - 1)
                if j == mine - 1 and broken != "early_q_release":
                    release_q(w, b)  # S_j was the tile's last S (before the softmax)
                empty[(u - 1) % S].arrive()
            if mine > 0:  # last(): P_last·V_last
                u = use + mine - 1
                yield from wait(full_v[u % S], (u // S) & 1)
                holds("V", mine - 1)
                yield
                holds("V", mine - 1)
                empty[u % S].arrive()
            for j in range(mine, n):  # release_skipped
                u = use + j
                yield from wait(full_k[u % S], (u // S) & 1)
                empty[u % S].arrive()
            use = (use + n) % (2 * S)

    procs = {0: producer(), **{1 + w: consumer(w, c) for w, c in enumerate(WARPS)}}
    steps = 0
    while procs:
        steps += 1
        assert steps < 100_000, "deadlock: no process gets past its wait"
        pick = rnd.choice(list(procs) + (["land"] * 3 if in_flight else []))
        if pick == "land":
            bar, buffer, stage, value = in_flight.pop(rnd.randrange(len(in_flight)))
            smem[buffer][stage] = value
            bar.land(1)
            continue
        try:
            next(procs[pick])
        except StopIteration:
            del procs[pick]
    assert not in_flight, f"loads in flight when the block ends: {in_flight}"


def draw_tiles(rnd: random.Random, consumers: int) -> list:
    tiles = []
    for _ in range(rnd.randint(1, 7)):
        n = rnd.choice([0, 1, 2, 3, 4, 5, 7])
        mine = [rnd.randint(0, n) for _ in range(consumers)]
        mine[rnd.randrange(consumers)] = n  # the half (third) that needs them all
        tiles.append((n, tuple(mine), rnd.random() < 0.3, rnd.random() < 0.3))
    return tiles


def trials(count: int, seed: int, broken: str = "") -> list[str]:
    """The failures of `count` random trials: kStages 2, 3, 4 with 2, 3, 3 consumers and 1, 2, 2 Q buffers
    (D = 256, 128, 64), and each kStages with one Q buffer too."""
    rnd = random.Random(seed)
    failures = []
    for trial in range(count):
        stages = rnd.choice([2, 3, 4])
        q_buffers = 1 if stages == 2 or rnd.random() < 0.25 else 2
        tiles = draw_tiles(rnd, 2 if stages == 2 else 3)
        try:
            run(stages, q_buffers, tiles, seed * 1_000_003 + trial, broken)
        except AssertionError as err:
            failures.append(f"kStages {stages}, {q_buffers} Q buffers, tiles {tiles}: {err}")
    return failures


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trials", type=int, default=1000, help="random schedules (default 1000)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--broken", choices=BROKEN, help="take one rule out: the model must fail")
    args = p.parse_args(argv)
    if args.broken:
        failures = trials(args.trials, args.seed, args.broken)
        print(f"v11 protocol without '{args.broken}': {len(failures)} of {args.trials} trials fail"
              + (f", e.g. {failures[0]}" if failures else ""))
        return 0 if failures else 1
    failures = trials(args.trials, args.seed)
    for f in failures[:5]:
        print("FAIL", f)
    # The model has teeth: each rule taken out fails within a few hundred trials.
    toothless = [b for b in BROKEN if not trials(300, args.seed, b)]
    for b in toothless:
        print(f"FAIL the model does not notice the protocol without '{b}'")
    print(f"v11 protocol: {args.trials - len(failures)} of {args.trials} random schedules pass; "
          f"{len(BROKEN) - len(toothless)} of {len(BROKEN)} broken protocols caught")
    return 1 if failures or toothless else 0


if __name__ == "__main__":
    sys.exit(main())
