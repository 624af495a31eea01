// Stage 01 — naive attention. The launcher every version of this stage shares, and its description.
#pragma once

#include "attention_kernel.h"

namespace fs {

Status launch_naive_v1(const AttentionParams& params, cudaStream_t stream);

// The score matrix S (B·H·Nq·Nk elements in the input dtype) plus LSE.
std::size_t naive_extra_bytes(const AttentionParams& params);
// Q, K, V read, O written, plus S written, read and written by the softmax, and read again: 4·|S|.
double naive_traffic_bytes(const AttentionParams& params);

extern const AttentionKernel kNaiveV1;

}  // namespace fs
