// Stage 04 benchmarks, in three parts.
//   1. The project's grid (D = 64, 128, N = 512 … 16384, B·N = 16384, H = 2048 / D), fp16 and bf16:
//      v1–v5 at every point; v6 only at N = 8192 (the issue's headline shape, B = 2, H = 16, N = 8192,
//      D = 128, is the grid point stage04/<version>/fp16/D:128/N:8192/causal:<0|1>). Every grid point
//      has at least B·H·N/128 = 2048 query tiles of 128 rows, far more than the 132 SMs of an H100:
//      there v6 runs one split and is v5, so running it on the whole grid would time v5 twice.
//   2. Where the grid underfills the GPU (bench::underfilled_attention_shapes): short queries against
//      long keys (a prefill chunk against a long context, and decoding, Nq = 1) and grouped-query K/V
//      with KVH < H heads, v4, v5 and v6. Names carry the sizes (KVH after H where it differs):
//        stage04/v6/fp16/D:128/B:1/H:16/Nq:512/Nk:16384/causal:1
//        stage04/v6/fp16/D:128/B:1/H:32/KVH:8/Nq:1/Nk:16384/causal:0
//      Causal FLOPs there count the visible pairs exactly (common/lib/flops.h). Decoding moves K and V
//      once and does 4·D FLOPs per key and query head: its GB/s counter (the least traffic, K and V
//      with their KVH heads) is the number to read, not its TFLOPS.
//   3. The evidence for the tuners: every tile shape v5 chooses among (tile_shapes.cuh) at every grid
//      point, named stage04/v5/<dtype>/D:<d>/N:<n>/causal:<0|1>/tile:<i>, and every plan v6 chooses
//      among (tile shape, split count) at every underfilled shape, named
//      stage04/v6/<dtype>/D:<d>/B:…/causal:<0|1>/tile:<i>/splits:<s>, each with a counter `picked` (1 for
//      the tuner's choice there). The stage README's tuner tables set the chosen one against the fastest.
// Part 1 is 5 versions × 48 points + 8 for v6, part 2 is 3 × 26 shapes, part 3 is 4 tile shapes × 48
// points and v6's plans (3 to 12 per shape) × 26 shapes: some 700 benchmarks of 5 repetitions of at
// least 50 ms each.
#include <string>
#include <vector>

#include "common/tools/attention_check.h"
#include "common/tools/bench.h"
#include "versions.h"

namespace {

using fs::AttentionParams;
using fs::bench::AttentionCandidate;

std::string tile_label(int tile) { return "tile:" + std::to_string(tile); }

// v5's tile shapes that fit this GPU, each launched as v5 with that shape.
std::vector<AttentionCandidate> v5_tiles(const AttentionParams& point) {
  std::vector<AttentionCandidate> out;
  for (int i = 0; i < fs::flash_fwd_v5_num_candidates(point.head_dim); ++i)
    if (fs::flash_fwd_v5_candidate_runs_here(point.head_dim, i))
      out.push_back({tile_label(i), [i](const AttentionParams& p) {
                       return fs::launch_flash_fwd_v5_candidate(p, i, nullptr);
                     }});
  return out;
}

std::string v6_label(int tile, int splits) { return tile_label(tile) + "/splits:" + std::to_string(splits); }

// v6's plans for the point, each launched as v6 with that plan.
std::vector<AttentionCandidate> v6_plans(const AttentionParams& point) {
  std::vector<AttentionCandidate> out;
  for (const auto& [tile, splits] : fs::flash_fwd_v6_plans(point))
    out.push_back({v6_label(tile, splits), [tile = tile, splits = splits](const AttentionParams& p) {
                     return fs::launch_flash_fwd_v6_plan(p, tile, splits, nullptr);
                   }});
  return out;
}

}  // namespace

void fs::bench::register_benchmarks(const DeviceInfo& dev) {
  AttentionGrid grid;
  grid.dtypes = {DType::FP16, DType::BF16};
  AttentionGrid headline = grid;
  headline.seqs = {8192};
  for (const KernelDesc* k : find_kernels("stage04"))
    register_attention(dev, *k, std::string(k->info.version) == "v6" ? headline : grid);

  const std::vector<AttentionParams> shapes = underfilled_attention_shapes();
  for (const char* version : {"stage04/v4", "stage04/v5", "stage04/v6"})
    for (const KernelDesc* k : find_kernels(version)) register_attention_shapes(dev, *k, shapes);

  register_attention_candidates(dev, "stage04/v5", grid_points(grid), v5_tiles, [](const AttentionParams& p) {
    return tile_label(flash_fwd_v5_choice(p.head_dim, dtype_of(p), p.causal != 0, nullptr));
  });
  register_attention_candidates(dev, "stage04/v6", shapes, v6_plans, [](const AttentionParams& p) {
    int tile = -1, splits = 0;
    return flash_fwd_v6_choice(p, nullptr, &tile, &splits) ? v6_label(tile, splits) : std::string("none");
  });
}
