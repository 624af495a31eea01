// Split-KV on the host, shared by the attention forwards that split a query tile's keys over several
// blocks (stage 04's v6, stage 07's v5 and v8): the workspace the slices' partial results take, and how
// many splits fill the GPU. The device side is common/device/split_kv.cuh.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/lib/attention.h"

namespace fs {

constexpr int kMaxSplits = 16;      // the workspace grows with the splits; 16 slices fill 132 SMs from 9 tiles
constexpr int kMinSliceBlocks = 4;  // no slice shorter than this many key blocks

// Rows of O, and of each split's partials: [B, H, Nq] dense or padded, [H, total] packed.
int64_t split_partial_rows(const AttentionParams& p);

// The fp32 workspace of `splits` slices: O_s [splits][rows][D] and LSE_s [splits][rows]; none for one
// split (no merge then).
std::size_t split_workspace_bytes(const AttentionParams& p, int splits);

// The split count for a grid of `tiles` query tiles, each visiting `key_blocks` key blocks, on `slots`
// concurrent blocks (SMs × blocks per SM): 1 when the tiles fill the slots; otherwise the fewest splits
// whose waves are within 5% of the best wave efficiency, at most kMaxSplits and at most one split per
// kMinSliceBlocks key blocks.
int split_kv_heuristic(int64_t tiles, int64_t key_blocks, int64_t slots);

// The last wave of a grid of one block per tile and slot: `tiles` tiles run as whole waves of `slots`
// blocks and a last wave of the rest, which keeps that many slots busy for a tile's whole time while
// the others wait. Splitting each of the last tiles into `splits` slices of its key blocks shortens
// that wave to ceil(rest · splits / slots) waves of slices, each 1/splits of a tile long.
struct LastWaveSplit {
  int64_t tiles;  // the grid's last tiles, each split (0: none)
  int splits;     // blocks per split tile (1: none)
};
// For tiles of equal length, each visiting `keys` keys (its key blocks times Bc): the fewest splits whose
// grid time, counted in tiles (the whole waves plus ceil(rest · s / slots) / s), is within kLastWaveSlack
// of the best's, at most kMaxSplits and at most one per kLastWaveSliceKeys keys. Tiles of unequal length
// (equal_tiles false: causal, variable lengths) end the grid unevenly whatever the count; there only a
// grid of fewer tiles than slots is split (all of it, by the same rule).
// A slice block pays what a whole tile pays once — Q's load, the pipeline's fill — and its fp32
// partials are written and read again by the merge: on the H100 at D = 128 (stage 07's v8, 192 × 64
// tiles) that cost the time of about 10 key blocks (640 keys) per slice. Slices of 4096 keys or more
// keep it small: 2 splits of 8192-key tiles took 2% off the grid, where 3 splits of 4096-key tiles lost
// 1% and none of 2 to 16 gained. Counted in keys, not blocks, so that the rule holds for any Bc.
constexpr double kLastWaveSlack = 0.02;
constexpr int64_t kLastWaveSliceKeys = 4096;
LastWaveSplit last_wave_split(int64_t tiles, int64_t keys, int64_t slots, bool equal_tiles);

}  // namespace fs
