// Split-KV on the host, shared by the attention forwards that split a query tile's keys over several
// blocks (stage 04's v6, stage 07's v5): the workspace the slices' partial results take, and how many
// splits fill the GPU. The device side is common/device/split_kv.cuh.
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

}  // namespace fs
