// Stage 04 launch plumbing that every version's launcher shares: the validated problem, the kernels'
// arguments, the dispatch over (element type, head_dim) and one kernel launch. Host code.
#pragma once

#include <cuda_runtime.h>

#include <climits>

#include "attention.h"
#include "cuda_check.h"
#include "flash_common.cuh"

namespace fs::flash {

// A call that passed prepare(): the params, plus what the grid needs from the variable lengths.
struct Problem {
  AttentionParams p;
  int64_t max_seq_q;  // the longest query sequence of the batch: sizes the grid
  float scale_log2;   // softmax_scale(p) · log2(e)
};

// Checks a call and fills `out`. In order: validate() (common/attention.h) for fp16/bf16,
// head_dim 32/64/128/256, 16-byte aligned tensors; then the variable lengths — seq_lens and cu_seqlens
// not both, cu_seqlens_q and cu_seqlens_k together, device arrays, and values consistent with the sizes
// (0 <= seq_lens[b] <= min(Nq, Nk); cu[0] = 0, non-decreasing, cu[B] = the total; under the causal mask
// no entry with more queries than keys). Checking values means reading them: one copy of B (+1)
// integers to the host and a synchronization of `stream` per call that passes them.
Status prepare(const AttentionParams& p, cudaStream_t stream, Problem* out);

template <class T>
Args<T> make_args(const Problem& pr, int Br) {
  const AttentionParams& p = pr.p;
  Args<T> a;
  a.q = static_cast<const T*>(p.q);
  a.k = static_cast<const T*>(p.k);
  a.v = static_cast<const T*>(p.v);
  a.o = static_cast<T*>(p.o);
  a.lse = p.lse;
  a.seq_q = p.seq_q;
  a.seq_k = p.seq_k;
  a.heads = p.heads;
  a.q_tiles = (pr.max_seq_q + Br - 1) / Br;
  a.scale_log2 = pr.scale_log2;
  a.causal = p.causal != 0;
  a.seq_lens = p.seq_lens;
  a.cu_seqlens_q = p.cu_seqlens_q;
  a.cu_seqlens_k = p.cu_seqlens_k;
  return a;
}

// A compile-time (element type, head_dim) pair, the argument dispatch() passes on.
template <class T, int D>
struct Shape {
  using Elem = T;
  static constexpr int kHeadDim = D;
};

// Calls f(Shape<T, D>{}) for the problem's dtype and head_dim (prepare() admitted only these).
template <class F>
Status dispatch(const Problem& pr, F&& f) {
  const bool fp16 = dtype_of(pr.p) == DType::FP16;
  switch (pr.p.head_dim) {
    case 32: return fp16 ? f(Shape<__half, 32>{}) : f(Shape<__nv_bfloat16, 32>{});
    case 64: return fp16 ? f(Shape<__half, 64>{}) : f(Shape<__nv_bfloat16, 64>{});
    case 128: return fp16 ? f(Shape<__half, 128>{}) : f(Shape<__nv_bfloat16, 128>{});
    default: return fp16 ? f(Shape<__half, 256>{}) : f(Shape<__nv_bfloat16, 256>{});
  }
}

// One launch of a kernel built for tile configuration C: B·H·ceil(max Nq / Br) blocks.
template <class C, class T>
Status launch_kernel(void (*kernel)(Args<T>), const Problem& pr, cudaStream_t stream) {
  const Args<T> a = make_args<T>(pr, C::kBr);
  const int64_t blocks = pr.p.batch * pr.p.heads * a.q_tiles;
  if (blocks > INT_MAX) return Status::InvalidSize;  // gridDim.x limit: about 2^31 · 64 query rows
  // Above 48 KB a kernel must opt in to the larger dynamic shared memory carve-out.
  FS_RETURN_IF_CUDA_ERROR(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(C::kSmemBytes)));
  kernel<<<unsigned(blocks), C::kThreads, C::kSmemBytes, stream>>>(a);
  FS_RETURN_IF_CUDA_ERROR(cudaGetLastError());
  return Status::Success;
}

// The whole launcher of a version with one tile shape per head_dim: prepare, dispatch, launch
// kernel_of(Shape<T, D>{}) — the version's kernel for (T, D) — with tile configuration Config<D>.
template <template <int> class Config, class KernelOf>
Status launch_version(const AttentionParams& p, cudaStream_t stream, KernelOf kernel_of) {
  Problem pr;
  if (const Status st = prepare(p, stream, &pr); st != Status::Success) return st;
  return dispatch(pr, [&](auto shape) {
    return launch_kernel<Config<decltype(shape)::kHeadDim>>(kernel_of(shape), pr, stream);
  });
}

}  // namespace fs::flash
