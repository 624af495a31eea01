// Stage 04 benchmarks, in two parts.
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
//   3. The evidence for v5's tuner: every tile shape it chooses among (tile_shapes.cuh), at every grid
//      point v5 is timed on, named stage04/v5/<dtype>/D:<d>/N:<n>/causal:<0|1>/tile:<i> with a counter
//      `picked` (1 for the shape the tuner chose for that head_dim, dtype and mask, on its own tuning
//      problem). The stage README's tuner table sets the picked shape against the fastest at each point.
// Part 1 is 5 versions × 48 points + 8 for v6, part 2 is 3 × 26 shapes, part 3 is 4 shapes × 48
// points: 518 benchmarks of 5 repetitions of at least 50 ms each.
#include <iterator>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/tools/attention_check.h"
#include "common/tools/bench.h"
#include "flash_fwd.h"

namespace {

// v5 with tile shape I, as a kernel of its own.
template <int I>
fs::Status run_tile(const fs::AttentionProblem& pr, cudaStream_t stream) {
  return fs::launch_flash_fwd_v5_candidate(pr.p, I, stream);
}
constexpr fs::AttentionRun kTileRuns[] = {run_tile<0>, run_tile<1>, run_tile<2>, run_tile<3>, run_tile<4>, run_tile<5>};

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

  static std::map<int64_t, std::vector<KernelDesc>> tiles;  // per head_dim; the benchmarks point into it
  for (int64_t d : grid.dims) {
    const int n = flash_fwd_v5_num_candidates(d);
    if (n > int(std::size(kTileRuns))) throw std::logic_error("stage04 bench: more v5 tile shapes than kTileRuns");
    for (int i = 0; i < n; ++i) tiles[d].push_back(kernel_with_run(kFlashFwdV5, kTileRuns[i]));
    AttentionGrid one = grid;
    one.dims = {d};
    register_attention_candidates(
        dev, tiles[d], [d](int i) { return flash_fwd_v5_candidate_runs_here(d, i); }, one, "stage04/v5",
        [](const AttentionParams& p) {
          return flash_fwd_v5_choice(p.head_dim, dtype_of(p), p.causal != 0, nullptr);
        });
  }
}
