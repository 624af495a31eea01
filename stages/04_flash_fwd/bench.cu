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
// Part 1 is 5 versions × 48 points + 8 for v6, part 2 is 3 × 26 shapes: 326 benchmarks of 5
// repetitions of at least 50 ms each.
#include <string>
#include <vector>

#include "common/tools/attention_check.h"
#include "common/tools/bench.h"

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
}
