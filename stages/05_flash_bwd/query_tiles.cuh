// Stage 05: which query tiles a key block meets, and which of them need the mask — the walk every
// tensor-core K/V kernel (v2 to v10, and deterministic.cuh's) takes, from the key block's side of the
// causal stage splitting of stage 04's v2.
#pragma once

#include <cstdint>

#include "common/device/attention.cuh"

namespace fs::bwd {

// The query tiles key block j (keys k0 .. k0 + Bc - 1) meets, in runs: [first, full_begin) the diagonal
// crosses (masked), [full_begin, full_end) every key visible (no mask), [full_end, count) the Nq tail
// tile, or every tile when the block holds the Nk tail (masked). Under the causal mask query row i sees
// key k0 from i = k0 - offset on, and every key of the block from i = k0 + Bc - 1 - offset on. A block
// with no key (past a padded entry's length, or in an entry that breaks the rules) meets none: nq and
// so count are 0 (first may lie past it; no loop from first to count runs).
struct QueryTileRuns {
  int64_t first, full_begin, full_end, count;
};
template <int kBr, int kBc>
__device__ __forceinline__ QueryTileRuns query_tile_runs(const attn::KeyBlock& kb, bool causal) {
  const int64_t k0 = kb.k0, offset = kb.offset;
  const int64_t count = (kb.nq + kBr - 1) / kBr;
  const int64_t first = causal ? max(k0 - offset, int64_t(0)) / kBr : 0;
  const int64_t full_begin = causal ? min((max(k0 + kBc - 1 - offset, int64_t(0)) + kBr - 1) / kBr, count) : 0;
  const int64_t full_end = k0 + kBc > kb.nk ? full_begin : max(kb.nq / kBr, full_begin);
  return {first, full_begin, full_end, count};
}

}  // namespace fs::bwd
