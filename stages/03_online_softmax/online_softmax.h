// Stage 03 — fused attention with an online softmax. The launcher every version of this stage shares.
#pragma once

#include "attention_kernel.h"

namespace fs {

Status launch_online_softmax_v1(const AttentionParams& params, cudaStream_t stream);

// No workspace: only the LSE it writes, O(B·H·N).
std::size_t online_softmax_extra_bytes(const AttentionParams& params);

extern const AttentionKernel kOnlineSoftmaxV1;

}  // namespace fs
