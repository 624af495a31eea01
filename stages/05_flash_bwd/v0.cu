// Stage 05 v0: the launch of v0_naive.cuh's kernels, with the P and dS buffers they need; its
// descriptor and C entry.
#include <climits>
#include <limits>

#include "common/lib/flops.h"
#include "common/lib/sizes.h"
#include "common/lib/workspace.h"
#include "stages/05_flash_bwd/launch.cuh"
#include "stages/05_flash_bwd/v0_naive.cuh"
#include "stages/05_flash_bwd/versions.h"

namespace fs {
namespace bwd::v0 {

// fp32, fp16 and bf16; the head_dim is a loop bound in every kernel, so any value up to 256; element
// alignment is all its scalar loads need. Grouped K/V heads; dense batches only.
using Elements = Dtypes<DType::FP32, DType::FP16, DType::BF16>;
constexpr AttentionSupport kSupport = attention_support<Elements, AnyHeadDim<256>>(0, /*varlen=*/false);

namespace {

// Blocks of kThreads for one thread per element; 0 when the grid would pass the gridDim.x limit.
unsigned blocks_for(int64_t elements) {
  const int64_t blocks = (elements + kThreads - 1) / kThreads;
  return blocks > INT_MAX ? 0u : unsigned(blocks);
}

Status run(const AttentionBwdProblem& pr, cudaStream_t stream) {
  const AttentionParams& p = pr.fwd.p;
  const Shape s{p.batch * p.heads, p.batch * kv_head_count(p), group_size(p), p.seq_q, p.seq_k, p.head_dim,
                pr.fwd.scale, p.causal != 0};
  // B·H·Nq·Nk, the N×N buffers' elements, can pass 2^63 where every input's own element count does not
  // (those the validation has checked): refused before the products below could wrap.
  if (!fits_product({s.heads, s.nq, s.nk, 2 * int64_t(dtype_size(dtype_of(p)))})) return Status::InvalidSize;
  const unsigned grid_s = blocks_for(s.heads * s.nq * s.nk), grid_kv = blocks_for(s.kv_heads * s.nk * s.d),
                 grid_q = blocks_for(s.heads * s.nq * s.d);
  if (!grid_s || !grid_kv || !grid_q) return Status::InvalidSize;  // checked before anything is written
  const std::size_t matrix_bytes = std::size_t(s.heads * s.nq * s.nk) * dtype_size(dtype_of(p));
  return Elements::dispatch(p.dtype, [&](auto t) {
    using T = typename decltype(t)::type;
    return with_delta(pr, stream, [&](float* delta) {
      return with_workspace(2 * matrix_bytes, stream, [&](void* workspace) {
        T* P = static_cast<T*>(workspace);  // [B·H, Nq, Nk]
        T* dS = P + s.heads * s.nq * s.nk;   // [B·H, Nq, Nk]
        const T* q = static_cast<const T*>(p.q);
        const T* k = static_cast<const T*>(p.k);
        const T* v = static_cast<const T*>(p.v);
        const T* d_o = static_cast<const T*>(pr.p.d_o);
        FS_RETURN_IF_ERROR(launch_delta<T>(pr, delta, stream));
        p_kernel<T><<<grid_s, kThreads, 0, stream>>>(q, k, p.lse, P, s);
        ds_kernel<T><<<grid_s, kThreads, 0, stream>>>(d_o, v, P, delta, dS, s);
        dkv_kernel<T><<<grid_kv, kThreads, 0, stream>>>(q, d_o, P, dS, static_cast<T*>(pr.p.dk),
                                                        static_cast<T*>(pr.p.dv), s);
        dq_kernel<T><<<grid_q, kThreads, 0, stream>>>(k, dS, static_cast<T*>(pr.p.dq), s);
        FS_RETURN_IF_CUDA_ERROR(cudaGetLastError());
        return Status::Success;
      });
    });
  });
}

// v0's modelled DRAM traffic: the least (attention_bwd_min_bytes), plus P and dS each written once and
// read twice.
double traffic_bytes(const AttentionParams& p) {
  const double matrix = double(p.batch * p.heads) * double(p.seq_q) * double(p.seq_k) * double(dtype_size(dtype_of(p)));
  return attention_bwd_min_bytes(p) + 6.0 * matrix;
}

}  // namespace
}  // namespace bwd::v0

std::size_t flash_bwd_v0_extra_bytes(const AttentionParams& p) {
  const int64_t element = int64_t(dtype_size(dtype_of(p)));
  // P and dS past 2^63 bytes: more than any GPU holds, reported as the largest size rather than wrapped.
  if (!fits_product({p.batch, p.heads, p.seq_q, p.seq_k, 2 * element})) return std::numeric_limits<std::size_t>::max();
  return 2 * std::size_t(p.batch * p.heads) * std::size_t(p.seq_q * p.seq_k) * dtype_size(dtype_of(p)) +
         delta_extra_bytes(p);
}

const KernelDesc kFlashBwdV0 = keeps_scores(attention_bwd_kernel(
    {"fs_flash_bwd_v0", "stage05", "v0",
     "naive: P and dS materialized in DRAM (two N×N buffers), one thread per element, five kernels"},
    bwd::v0::kSupport, kStageArchs, /*smem_bytes=*/0, bwd::v0::run, flash_bwd_v0_extra_bytes,
    bwd::v0::traffic_bytes));

}  // namespace fs

FS_EXPORT_ATTENTION_BWD(fs_flash_bwd_v0, fs::kFlashBwdV0)
