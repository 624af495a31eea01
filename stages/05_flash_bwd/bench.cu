// Stage 05 benchmarks: the backward pass (FLOPs 2.5× the forward's, common/lib/flops.h) on the
// project's grid (D = 64, 128; B·N = 16384, H = 2048 / D; causal and not): the naive v0 in fp32 and
// fp16 and the fp32 v1, with and without deterministic dQ, each only up to N = 4096, where one launch of
// v0 still takes seconds rather than minutes; the tensor-core v2 to v10 in fp16 and bf16 up to N = 8192,
// the size the speed goal is set at, with and without deterministic dQ (v3's to v10's deterministic path
// is v2's: timed again beside it as a check of the run's noise). Names:
//   stage05/v1/fp32/D:64/N:4096/causal:1             (dQ by atomics, the default)
//   stage05/v1_deterministic/fp32/D:64/N:4096/causal:1
//   stage05/v2/bf16/D:128/N:8192/causal:0
//   stage05/v3_deterministic/fp16/D:128/N:8192/causal:0
//   stage05/v9_delta_in_loop/fp16/D:64/N:8192/causal:1   (the delta ablation: v9 recomputing delta_i in
//                                                        every key block; atomic dQ only)
// That is 4 N × 2 D × 2 masks = 16 points per (version, dtype) up to N = 4096 (64 benchmarks for v0 and
// v1), and 5 N × 2 D × 2 masks = 20 per (v2 to v10 series, dtype) (80 each for v2 to v10), of 5
// repetitions of at least 50 ms each. Measured: v2 alone (--benchmark_filter=stage05/v2), 53 s on an
// H100; v0, v1 and v3 to v10 not yet.
#include "common/tools/bench.h"
#include "stages/05_flash_bwd/versions.h"

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
  AttentionGrid tensor_cores;
  tensor_cores.seqs = {512, 1024, 2048, 4096, 8192};
  tensor_cores.dtypes = {DType::FP16, DType::BF16};
  for (const char* version :
       {"stage05/v2", "stage05/v3", "stage05/v4", "stage05/v5", "stage05/v6", "stage05/v7", "stage05/v8", "stage05/v9",
        "stage05/v10"})
    for (const KernelDesc* k : find_kernels(version)) {
      register_attention(dev, *k, tensor_cores);
      register_attention_bwd_deterministic(dev, *k, tensor_cores);
    }
  // The delta ablation beside v9: stage05/v9_delta_in_loop/…, the atomic path (the only one it changes).
  register_attention(dev, kFlashBwdV9DeltaInLoop, tensor_cores);
}
