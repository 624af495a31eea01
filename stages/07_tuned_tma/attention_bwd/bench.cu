// Stage 07 attention backward benchmarks: the backward pass (FLOPs 2.5× the forward's,
// common/lib/flops.h) on the project's grid (D = 64, 128; N = 512 … 8192, B·N = 16384, H = 2048 / D;
// causal and not), fp16 and bf16, every version with and without deterministic dQ, and stage 05's v10
// (FlashAttention-2's backward, the speed to beat) at N = 8192 in the same run (its whole grid is
// stage05.json's). Then grouped K/V on the grid's rule, fp16: N = 2048 and 8192, KVH = H / 4 and 1
// (dK and dV summed over each group), every version and stage 05's v10 — the shapes
// plots/sdpa_bench.py --backward times SDPA's flash and cuDNN backward on. Names:
//   stage07/attention_bwd/v1/fp16/D:128/N:8192/causal:0
//   stage07/attention_bwd/v1_deterministic/bf16/D:64/N:2048/causal:1
//   stage07/attention_bwd/v10/fp16/D:128/B:2/H:16/KVH:4/Nq:8192/Nk:8192/causal:1
// 5 N × 2 D × 2 masks × 2 dtypes = 40 points per series, 80 per version, + 8 for stage 05's v10;
// 2 N × 2 D × 2 KVH × 2 masks = 16 grouped points per version and for stage 05's v10; and 8 packed
// batches per version and for stage 05's v10 (plots/sdpa_bench.py --packed-defaults --backward times
// SDPA's on the same lengths):
//   stage07/attention_bwd/v10/fp16/D:128/H:16/packed:16x512-8192/causal:0
#include <vector>

#include "common/tools/bench.h"

void fs::bench::register_benchmarks(const DeviceInfo& dev) {
  AttentionGrid grid;
  grid.seqs = {512, 1024, 2048, 4096, 8192};
  grid.dtypes = {DType::FP16, DType::BF16};
  for (const KernelDesc* k : find_kernels("stage07/attention_bwd")) {
    register_attention(dev, *k, grid);
    register_attention_bwd_deterministic(dev, *k, grid);
  }
  AttentionGrid headline = grid;
  headline.seqs = {8192};
  for (const KernelDesc* k : find_kernels("stage05/v10")) register_attention(dev, *k, headline);

  // Grouped K/V: the grid point's B and H (grid_params), K and V with H / 4 heads, then one.
  std::vector<AttentionParams> grouped;
  for (int64_t n : {2048, 8192})
    for (int64_t d : {64, 128})
      for (int64_t group : {int64_t(4), 2048 / d})
        for (bool causal : {false, true}) {
          AttentionParams p = grid_params(DType::FP16, d, n, causal);
          p.kv_heads = p.heads / group;
          grouped.push_back(p);
        }
  for (const char* stage : {"stage07/attention_bwd", "stage05/v10"})
    for (const KernelDesc* k : find_kernels(stage)) register_attention_shapes(dev, *k, grouped);

  // Packed batches (cu_seqlens), fp16, the forward rung's: 2 entries of 8192 rows (the headline's work,
  // packed: what the layout itself costs) and 16 entries of 512 to 8192; every version and stage 05's v10.
  std::vector<PackedBatch> packed;
  for (int64_t d : {64, 128})
    for (bool causal : {false, true}) {
      packed.push_back({DType::FP16, d, 2048 / d, 2, 8192, 8192, causal});
      packed.push_back({DType::FP16, d, 2048 / d, 16, 512, 8192, causal});
    }
  for (const char* stage : {"stage07/attention_bwd", "stage05/v10"})
    for (const KernelDesc* k : find_kernels(stage)) register_attention_packed(dev, *k, packed);
}
