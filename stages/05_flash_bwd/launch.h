// Stage 05: what the launch of every version shares — the instances each version is compiled for (one
// list per version: it drives the dispatch and the validation alike) and each version's launch.
// Host code.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/lib/attention.h"
#include "common/lib/cuda_check.h"
#include "common/lib/dispatch.h"

namespace fs::bwd {

namespace v0 {
// fp32, fp16 and bf16; the head_dim is a loop bound in every kernel, so any value up to 256; element
// alignment is all its scalar loads need. Grouped K/V heads; dense batches only.
using Elements = Dtypes<DType::FP32, DType::FP16, DType::BF16>;
constexpr AttentionSupport kSupport = attention_support<Elements, AnyHeadDim<256>>(0, /*varlen=*/false);
}  // namespace v0

namespace v1 {
// fp32 only; one instance per head_dim; 16-byte aligned tensors (float4 tile loads: every row, D·4
// bytes, is a multiple of 16). Grouped K/V heads; dense batches only.
using Elements = Dtypes<DType::FP32>;
using HeadDimList = HeadDims<32, 64, 128>;
constexpr AttentionSupport kSupport = attention_support<Elements, HeadDimList>(16, /*varlen=*/false);
}  // namespace v1

namespace v2 {
// fp16 and bf16 (mma.sync m16n8k16); one instance per head_dim; 16-byte aligned tensors (16-byte tile
// loads: every row, D·2 bytes, is a multiple of 16). Grouped K/V heads; dense, padded and packed
// batches (attn::key_block_of and attn::sequence_of place every block's rows).
using Elements = Dtypes<DType::FP16, DType::BF16>;
using HeadDimList = HeadDims<64, 128>;
constexpr AttentionSupport kSupport = attention_support<Elements, HeadDimList>(16, /*varlen=*/true);
}  // namespace v2

// v3 to v10 take v2's instances (v2::kSupport): they change only the K/V kernel of the atomic path,
// and each of theirs loops over a group of query heads as v2's does.

// Each version's launch (flash_bwd_vN.cu): validated params, a GPU that can run it.
Status run_v0(const AttentionBwdProblem& pr, cudaStream_t stream);
Status run_v1(const AttentionBwdProblem& pr, cudaStream_t stream);
Status run_v2(const AttentionBwdProblem& pr, cudaStream_t stream);
Status run_v3(const AttentionBwdProblem& pr, cudaStream_t stream);
Status run_v4(const AttentionBwdProblem& pr, cudaStream_t stream);
Status run_v5(const AttentionBwdProblem& pr, cudaStream_t stream);
Status run_v6(const AttentionBwdProblem& pr, cudaStream_t stream);
Status run_v7(const AttentionBwdProblem& pr, cudaStream_t stream);
Status run_v8(const AttentionBwdProblem& pr, cudaStream_t stream);
Status run_v9(const AttentionBwdProblem& pr, cudaStream_t stream);
// v9 with delta recomputed inside its K/V loop instead of read from the preprocess: the ablation that
// measures what computing delta once saves (kFlashBwdV9DeltaInLoop; not a registry version).
Status run_v9_delta_in_loop(const AttentionBwdProblem& pr, cudaStream_t stream);
Status run_v10(const AttentionBwdProblem& pr, cudaStream_t stream);

// Launches a kernel built for tile configuration C (kThreads, kSmemBytes) on `blocks` blocks
// (at most INT_MAX: the caller checks, before anything is written).
template <class C, class A>
Status launch_tiled(void (*kernel)(A), int64_t blocks, const A& args, cudaStream_t stream) {
  // Above 48 KB a kernel must opt in to the larger dynamic shared memory carve-out.
  FS_RETURN_IF_CUDA_ERROR(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(C::kSmemBytes)));
  kernel<<<unsigned(blocks), C::kThreads, C::kSmemBytes, stream>>>(args);
  FS_RETURN_IF_CUDA_ERROR(cudaGetLastError());
  return Status::Success;
}

}  // namespace fs::bwd
