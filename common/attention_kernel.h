// How a stage describes one of its attention kernel versions to the shared runners (executables,
// tests, benchmarks). Every version of every stage has the same launcher signature.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "attention.h"

namespace fs {

using AttentionLauncher = Status (*)(const AttentionParams&, cudaStream_t);

struct AttentionKernel {
  const char* stage;      // "stage01": the benchmark-name prefix
  const char* version;    // "v1"
  const char* technique;  // one line: what this version does
  AttentionLauncher launch;
  // Device memory the launcher allocates beyond Q, K, V, O, plus the LSE output: the O(N²) score
  // buffer of stages 01–02, O(B·H·N) statistics from stage 03 on.
  std::size_t (*extra_bytes)(const AttentionParams&);
  // Modelled DRAM traffic, for GB/s; null means the least possible (attention_fwd_min_bytes).
  double (*traffic_bytes)(const AttentionParams&);
  unsigned dtypes;        // dtype_bit() set it accepts
};

}  // namespace fs
