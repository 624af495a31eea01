#include "common/lib/split_kv.h"

#include <algorithm>

namespace fs {

int64_t split_partial_rows(const AttentionParams& p) {
  return (p.cu_seqlens_q ? 1 : p.batch) * p.heads * p.seq_q;
}

std::size_t split_workspace_bytes(const AttentionParams& p, int splits) {
  return splits <= 1 ? 0
                     : std::size_t(splits) * std::size_t(split_partial_rows(p)) * std::size_t(p.head_dim + 1) * 4;
}

int split_kv_heuristic(int64_t tiles, int64_t key_blocks, int64_t slots) {
  if (tiles <= 0 || slots <= 0 || tiles >= slots) return 1;
  const int most = int(std::clamp<int64_t>(key_blocks / kMinSliceBlocks, 1, kMaxSplits));
  // Wave efficiency of s splits: the blocks launched over the slots their waves occupy.
  auto efficiency = [&](int s) {
    const int64_t blocks = tiles * s, waves = (blocks + slots - 1) / slots;
    return double(blocks) / double(waves * slots);
  };
  double best = 0.0;
  for (int s = 1; s <= most; ++s) best = std::max(best, efficiency(s));
  // The fewest splits within 5% of the best: each split adds partials to write and merge.
  for (int s = 1; s <= most; ++s)
    if (efficiency(s) >= 0.95 * best) return s;
  return 1;
}

LastWaveSplit last_wave_split(int64_t tiles, int64_t keys, int64_t slots, bool equal_tiles) {
  if (tiles <= 0 || slots <= 0) return {0, 1};
  const int64_t whole_waves = tiles / slots, rest = tiles % slots;
  if (rest == 0 || (whole_waves > 0 && !equal_tiles)) return {0, 1};
  const int most = int(std::clamp<int64_t>(keys / kLastWaveSliceKeys, 1, kMaxSplits));
  auto grid_time = [&](int s) { return double(whole_waves) + double((rest * s + slots - 1) / slots) / s; };
  double best = grid_time(1);
  for (int s = 2; s <= most; ++s) best = std::min(best, grid_time(s));
  int splits = 1;
  while (grid_time(splits) > (1.0 + kLastWaveSlack) * best) ++splits;
  return {splits > 1 ? rest : 0, splits};
}

}  // namespace fs
