// Stage 07 attention backward benchmarks: the backward pass (FLOPs 2.5× the forward's,
// common/lib/flops.h) on the project's grid (D = 64, 128; N = 512 … 8192, B·N = 16384, H = 2048 / D;
// causal and not), fp16 and bf16, every version with and without deterministic dQ, and stage 05's v10
// (FlashAttention-2's backward, the speed to beat) at N = 8192 in the same run (its whole grid is
// stage05.json's). SDPA's flash and cuDNN backward are timed by plots/sdpa_bench.py --backward. Names:
//   stage07/attention_bwd/v1/fp16/D:128/N:8192/causal:0
//   stage07/attention_bwd/v1_deterministic/bf16/D:64/N:2048/causal:1
// 5 N × 2 D × 2 masks × 2 dtypes = 40 points per series, 80 per version, + 8 for stage 05's v10.
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
}
