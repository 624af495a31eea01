// Stage 04 benchmarks, in two parts.
//   1. The project's grid (D = 64, 128, N = 512 … 16384, B·N = 16384, H = 2048 / D), fp16 and bf16:
//      v1–v5 at every point; v6 only at N = 8192 (the issue's headline shape, B = 2, H = 16, N = 8192,
//      D = 128, is the grid point stage04/<version>/fp16/D:128/N:8192/causal:<0|1>). Every grid point
//      has at least B·H·N/128 = 2048 query tiles of 128 rows, far more than the 132 SMs of an H100:
//      there v6 runs one split and is v5, so running it on the whole grid would time v5 twice.
//   2. Short queries against long keys (a prefill chunk against a long context, and decoding, Nq = 1),
//      where the grid underfills the GPU: v4, v5 and v6 at (B, H, Nq, Nk) = (1, 16, 512, 16384),
//      (1, 32, 1024, 8192), (2, 8, 256, 32768), (4, 32, 1, 8192), D = 64 and 128, fp16, causal 0 and
//      1, and bf16 at the first shape, D = 128. Names carry the sizes:
//        stage04/v6/fp16/D:128/B:1/H:16/Nq:512/Nk:16384/causal:1
//      Causal FLOPs there count the visible pairs exactly (common/lib/flops.h).
//   3. Grouped-query attention, K/V with KVH < H heads: v4, v5 and v6 at (B, H, KVH, Nq, Nk) =
//      (1, 32, 8, 1, 16384) and (8, 32, 8, 1, 8192) (decoding a 32-head layer with 8 K/V heads, one
//      sequence and eight), (1, 32, 8, 512, 16384) (a prefill chunk) and (4, 32, 1, 1, 8192) (multi-
//      query decoding), D = 128, fp16, causal 0 and 1, named with KVH after H:
//        stage04/v6/fp16/D:128/B:1/H:32/KVH:8/Nq:1/Nk:16384/causal:0
//      Decoding moves K and V once and does 4·D FLOPs per key and query head: its GB/s counter (the
//      least traffic, K and V with their KVH heads) is the number to read, not its TFLOPS.
// Part 1 is 5 versions × 48 points + 8 for v6, part 2 is 3 × 34 points, part 3 is 3 × 8 points: 374
// benchmarks of 5 repetitions of at least 50 ms each.
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

  struct Size {
    int64_t b, h, nq, nk;
  };
  const Size sizes[] = {{1, 16, 512, 16384}, {1, 32, 1024, 8192}, {2, 8, 256, 32768}, {4, 32, 1, 8192}};
  std::vector<AttentionParams> shapes;
  for (int64_t d : {128, 64})
    for (const Size& s : sizes)
      for (bool causal : {false, true}) shapes.push_back(attention_shape(s.b, s.h, s.nq, s.nk, d, DType::FP16, causal));
  for (bool causal : {false, true}) shapes.push_back(attention_shape(1, 16, 512, 16384, 128, DType::BF16, causal));
  struct GqaSize {
    int64_t b, h, kv_heads, nq, nk;
  };
  const GqaSize gqa_sizes[] = {{1, 32, 8, 1, 16384}, {8, 32, 8, 1, 8192}, {1, 32, 8, 512, 16384}, {4, 32, 1, 1, 8192}};
  for (const GqaSize& s : gqa_sizes)
    for (bool causal : {false, true}) {
      AttentionParams p = attention_shape(s.b, s.h, s.nq, s.nk, 128, DType::FP16, causal);
      p.kv_heads = s.kv_heads;
      shapes.push_back(p);
    }
  for (const char* version : {"stage04/v4", "stage04/v5", "stage04/v6"})
    for (const KernelDesc* k : find_kernels(version)) register_attention_shapes(dev, *k, shapes);
}
