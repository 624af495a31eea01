// Stage 04 benchmarks: every version in fp16 and bf16 over the project's grid (D = 64, 128, N = 512 …
// 16384, B·N = 16384, H = 2048 / D). The issue's headline shape, B = 2, H = 16, N = 8192, D = 128, is
// the grid point stage04/<version>/fp16/D:128/N:8192/causal:<0|1>.
#include "common/tools/bench.h"

void fs::bench::register_benchmarks(const DeviceInfo& dev) {
  AttentionGrid grid;
  grid.dtypes = {DType::FP16, DType::BF16};
  register_attention_stage(dev, "stage04", grid);
}
