// Stage 02 — tiled attention (S still in DRAM). The launcher every version of this stage shares.
#pragma once

#include "attention_kernel.h"

namespace fs {

Status launch_tiled_v1(const AttentionParams& params, cudaStream_t stream);

extern const AttentionKernel kTiledV1;

}  // namespace fs
