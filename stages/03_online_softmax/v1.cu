// Stage 03 v1: the launch of the fused kernel (one instance per head_dim), its descriptor and its C entry.
#include "common/lib/cuda_check.h"
#include "common/lib/flops.h"
#include "stages/03_online_softmax/v1_online_softmax.cuh"
#include "stages/03_online_softmax/versions.h"

namespace fs {

namespace {

namespace v1 = online::v1;

using Elements = Dtypes<DType::FP32>;
using HeadDimList = HeadDims<32, 64, 128>;
// float4 loads of Q, K, V need 16-byte aligned bases (rows are D·4 bytes, a multiple of 16).
constexpr AttentionSupport kSupport = attention_support<Elements, HeadDimList>(16, /*varlen=*/false);

Status run(const AttentionProblem& pr, cudaStream_t stream) {
  const AttentionParams& p = pr.p;
  return HeadDimList::dispatch(p.head_dim, [&](auto d) {
    constexpr int D = decltype(d)::value;
    constexpr std::size_t smem = v1::TileConfig<D>::kSmemBytes;
    // Above 48 KB a kernel must opt in to the larger dynamic shared memory carve-out.
    FS_RETURN_IF_CUDA_ERROR(cudaFuncSetAttribute(v1::online_softmax_v1_kernel<D>,
                                                 cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    const int64_t blocks = (p.seq_q + v1::kBr - 1) / v1::kBr * p.batch * p.heads;
    v1::online_softmax_v1_kernel<D><<<dim3(unsigned(blocks)), v1::kThreads, smem, stream>>>(
        static_cast<const float*>(p.q), static_cast<const float*>(p.k), static_cast<const float*>(p.v),
        static_cast<float*>(p.o), p.lse, p.seq_q, p.seq_k, pr.scale * v1::kLog2e, p.causal != 0,
        group_size(p));
    FS_RETURN_IF_CUDA_ERROR(cudaGetLastError());
    return Status::Success;
  });
}

constexpr std::size_t kSmemBytes =
    HeadDimList::max_of([](auto d) { return v1::TileConfig<decltype(d)::value>::kSmemBytes; });

}  // namespace

const KernelDesc kOnlineSoftmaxV1 = attention_kernel(
    {"fs_online_softmax_v1", "stage03", "v1", "one fused kernel: K/V tiles through shared memory, running max and sum"},
    kSupport, kStageArchs, kSmemBytes, run, lse_extra_bytes);

}  // namespace fs

FS_EXPORT_ATTENTION(fs_online_softmax_v1, fs::kOnlineSoftmaxV1)
