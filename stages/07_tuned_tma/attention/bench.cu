// Stage 07 attention benchmarks: the project's attention grid (D = 64, 128, N = 512 … 16384,
// B·N = 16384, H = 2048 / D; the headline shape B = 2, H = 16, N = 8192, D = 128 is the grid point
// stage07/attention/<version>/fp16/D:128/N:8192/causal:<0|1>), fp16 and bf16, causal and not, for every
// version; stage 04's v5 (FlashAttention-2 on mma.sync, the speed to beat from below) at N = 8192 in
// the same run (its whole grid is stage04.json's). SDPA's flash and cuDNN backends are timed by
// plots/sdpa_bench.py (sdpa.json; a same-call run at N = 8192 is folded into stage07_attention.json);
// the plot script sets them beside these. 2 × 48 + 8 benchmarks of 5 repetitions.
#include "common/tools/attention_check.h"
#include "common/tools/bench.h"

void fs::bench::register_benchmarks(const DeviceInfo& dev) {
  AttentionGrid grid;
  grid.dtypes = {DType::FP16, DType::BF16};
  for (const KernelDesc* k : find_kernels("stage07/attention")) register_attention(dev, *k, grid);
  AttentionGrid headline = grid;
  headline.seqs = {8192};
  for (const KernelDesc* k : find_kernels("stage04/v5")) register_attention(dev, *k, headline);
}
