// Stage 03 launcher: validates, picks the head_dim instance, launches one fused kernel.
#include "online_softmax.h"

#include "cuda_check.h"
#include "v1_online_softmax.cuh"

namespace fs {

namespace {

constexpr int kHeadDims[] = {32, 64, 128};
// float4 loads of Q, K, V need 16-byte aligned bases (rows are D·4 bytes, a multiple of 16).
const AttentionSupport kSupport{dtype_bit(DType::FP32), 0, 0, kHeadDims, 3, 16};

template <int D>
Status launch_v1(const AttentionParams& p, cudaStream_t stream) {
  constexpr std::size_t smem = online::TileConfig<D>::kSmemBytes;
  // Above 48 KB a kernel must opt in to the larger dynamic shared memory carve-out.
  FS_RETURN_IF_CUDA_ERROR(
      cudaFuncSetAttribute(online::online_softmax_v1_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  const int64_t blocks = (p.seq_q + online::kBr - 1) / online::kBr * p.batch * p.heads;
  online::online_softmax_v1_kernel<D><<<dim3(unsigned(blocks)), online::kThreads, smem, stream>>>(
      static_cast<const float*>(p.q), static_cast<const float*>(p.k), static_cast<const float*>(p.v),
      static_cast<float*>(p.o), p.lse, p.seq_q, p.seq_k, softmax_scale(p) * online::kLog2e, p.causal != 0);
  FS_RETURN_IF_CUDA_ERROR(cudaGetLastError());
  return Status::Success;
}

}  // namespace

Status launch_online_softmax_v1(const AttentionParams& p, cudaStream_t stream) {
  if (const Status st = validate(p, kSupport); st != Status::Success) return st;
  switch (p.head_dim) {
    case 32: return launch_v1<32>(p, stream);
    case 64: return launch_v1<64>(p, stream);
    default: return launch_v1<128>(p, stream);
  }
}

std::size_t online_softmax_extra_bytes(const AttentionParams& p) { return std::size_t(lse_elems(p)) * sizeof(float); }

const AttentionKernel kOnlineSoftmaxV1{"stage03", "v1",
                                       "one fused kernel: K/V tiles through shared memory, running max and sum",
                                       launch_online_softmax_v1, online_softmax_extra_bytes, nullptr,
                                       dtype_bit(DType::FP32)};

}  // namespace fs

extern "C" int fs_online_softmax_v1(const fs_attention_params* params, void* stream) {
  if (!params) return FS_ERR_NULL_POINTER;
  return static_cast<int>(fs::launch_online_softmax_v1(*params, static_cast<cudaStream_t>(stream)));
}
