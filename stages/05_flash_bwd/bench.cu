// Stage 05 benchmarks: the backward pass (FLOPs 2.5× the forward's, common/lib/flops.h) on the
// project's grid (D = 64, 128; B·N = 16384, H = 2048 / D; causal and not), fp32 v1 with and without
// deterministic dQ, and the naive v0 in fp32 and fp16 — each only up to N = 4096, where one launch of
// v0 still takes seconds rather than minutes. Names:
//   stage05/v1/fp32/D:64/N:4096/causal:1             (dQ by atomics, the default)
//   stage05/v1_deterministic/fp32/D:64/N:4096/causal:1
// That is 4 N × 2 D × 2 masks = 16 points per (version, dtype): 64 benchmarks of 5 repetitions of at
// least 50 ms each. Measured time: not yet (no run on a GPU so far).
#include "common/tools/bench.h"

void fs::bench::register_benchmarks(const DeviceInfo& dev) {
  AttentionGrid small;
  small.seqs = {512, 1024, 2048, 4096};
  small.dtypes = {DType::FP32, DType::FP16};
  for (const KernelDesc* k : find_kernels("stage05/v0")) register_attention(dev, *k, small);
  small.dtypes = {DType::FP32};
  for (const KernelDesc* k : find_kernels("stage05/v1")) {
    register_attention(dev, *k, small);
    register_attention_bwd_deterministic(dev, *k, small);
  }
}
