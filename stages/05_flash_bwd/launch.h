// Stage 05: what the launch of every version shares — the instances each version is compiled for (one
// list per version: it drives the dispatch and the validation alike) and each version's launch.
// Host code.
#pragma once

#include <cuda_runtime.h>

#include "common/lib/attention.h"
#include "common/lib/dispatch.h"

namespace fs::bwd {

namespace v0 {
// fp32, fp16 and bf16; the head_dim is a loop bound in every kernel, so any value up to 256; element
// alignment is all its scalar loads need. Dense batches only.
using Elements = Dtypes<DType::FP32, DType::FP16, DType::BF16>;
constexpr AttentionSupport kSupport = attention_support<Elements, AnyHeadDim<256>>(0, /*varlen=*/false);
}  // namespace v0

namespace v1 {
// fp32 only; one instance per head_dim; 16-byte aligned tensors (float4 tile loads: every row, D·4
// bytes, is a multiple of 16). Dense batches only.
using Elements = Dtypes<DType::FP32>;
using HeadDimList = HeadDims<32, 64, 128>;
constexpr AttentionSupport kSupport = attention_support<Elements, HeadDimList>(16, /*varlen=*/false);
}  // namespace v1

// Each version's launch (flash_bwd_vN.cu): validated params, a GPU that can run it.
Status run_v0(const AttentionBwdProblem& pr, cudaStream_t stream);
Status run_v1(const AttentionBwdProblem& pr, cudaStream_t stream);

}  // namespace fs::bwd
