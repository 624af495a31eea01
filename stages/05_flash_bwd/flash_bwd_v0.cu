// Stage 05 v0: the launch of v0_naive.cuh's kernels, with the P and dS buffers they need. (Its
// descriptor and C entry are in flash_bwd.cu, beside the other versions'.)
#include <climits>

#include "common/lib/sizes.h"
#include "common/lib/workspace.h"
#include "launch.h"
#include "preprocess.cuh"
#include "v0_naive.cuh"

namespace fs::bwd {

namespace {

// Blocks of v0::kThreads for one thread per element; 0 when the grid would pass the gridDim.x limit.
unsigned blocks_for(int64_t elements) {
  const int64_t blocks = (elements + v0::kThreads - 1) / v0::kThreads;
  return blocks > INT_MAX ? 0u : unsigned(blocks);
}

}  // namespace

Status run_v0(const AttentionBwdProblem& pr, cudaStream_t stream) {
  const AttentionParams& p = pr.fwd.p;
  const v0::Shape s{p.batch * p.heads, p.batch * kv_head_count(p), group_size(p), p.seq_q, p.seq_k, p.head_dim,
                    pr.fwd.scale, p.causal != 0};
  // B·H·Nq·Nk, the N×N buffers' elements, can pass 2^63 where every input's own element count does not
  // (those the validation has checked): refused before the products below could wrap.
  if (!fits_product({s.heads, s.nq, s.nk, 2 * int64_t(dtype_size(dtype_of(p)))})) return Status::InvalidSize;
  const unsigned grid_s = blocks_for(s.heads * s.nq * s.nk), grid_kv = blocks_for(s.kv_heads * s.nk * s.d),
                 grid_q = blocks_for(s.heads * s.nq * s.d);
  if (!grid_s || !grid_kv || !grid_q) return Status::InvalidSize;  // checked before anything is written
  const std::size_t matrix_bytes = std::size_t(s.heads * s.nq * s.nk) * dtype_size(dtype_of(p));
  return v0::Elements::dispatch(p.dtype, [&](auto t) {
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
        v0::p_kernel<T><<<grid_s, v0::kThreads, 0, stream>>>(q, k, p.lse, P, s);
        v0::ds_kernel<T><<<grid_s, v0::kThreads, 0, stream>>>(d_o, v, P, delta, dS, s);
        v0::dkv_kernel<T><<<grid_kv, v0::kThreads, 0, stream>>>(q, d_o, P, dS, static_cast<T*>(pr.p.dk),
                                                                 static_cast<T*>(pr.p.dv), s);
        v0::dq_kernel<T><<<grid_q, v0::kThreads, 0, stream>>>(k, dS, static_cast<T*>(pr.p.dq), s);
        FS_RETURN_IF_CUDA_ERROR(cudaGetLastError());
        return Status::Success;
      });
    });
  });
}

}  // namespace fs::bwd
