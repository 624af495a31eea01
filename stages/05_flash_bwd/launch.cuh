// Stage 05: what the launches of the versions share (host code) — the instances the tensor-core
// versions v2 to v10 are compiled for (one list: it drives the dispatch and the validation alike), a
// tiled kernel's launch, and their one launch: delta, then either the deterministic pair
// (deterministic.cuh) or the version's K/V kernel adding dQ into an fp32 workspace, rounded once at
// the end (dq_reduce.cuh). v2 to v10 differ only in that K/V kernel, which each one names, with its
// tile configuration (vN.cu). The kernels they share are compiled once, in shared_kernels.cu.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "common/lib/attention.h"
#include "common/lib/cuda_check.h"
#include "common/lib/dispatch.h"
#include "common/lib/flops.h"
#include "common/lib/workspace.h"
#include "common/device/bwd_args.cuh"
#include "stages/05_flash_bwd/deterministic.cuh"
#include "stages/05_flash_bwd/dq_reduce.cuh"
#include "common/device/bwd_preprocess.cuh"

namespace fs::bwd {

namespace mma {
// v2 to v10: fp16 and bf16 (mma.sync m16n8k16); one instance per head_dim; 16-byte aligned tensors
// (16-byte tile loads: every row, D·2 bytes, is a multiple of 16). Grouped K/V heads; dense, padded and
// packed batches (attn::key_block_of and attn::sequence_of place every block's rows). Each version's K/V
// kernel loops over a group of query heads.
using Elements = Dtypes<DType::FP16, DType::BF16>;
using HeadDimList = HeadDims<64, 128>;
constexpr AttentionSupport kSupport = attention_support<Elements, HeadDimList>(16, /*varlen=*/true);
// v10 reads and writes every tensor through its strides (fs_attention_params), as the preprocess, the
// dQ conversion and the deterministic pair do for every version: any layout with D contiguous, every
// stride a multiple of 16 bytes (the 16-byte copies).
constexpr AttentionSupport kStridedSupport =
    attention_support<Elements, HeadDimList>(16, /*varlen=*/true, /*strided=*/true);
}  // namespace mma

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

// The deterministic pair (deterministic.cuh) for element type T and head_dim D: the K/V kernel, built
// for variable lengths or for dense batches alone, on kv_blocks blocks, then the dQ kernel on q_blocks.
template <class T, int D>
Status launch_deterministic(const Args<T>& a, bool varlen, int64_t kv_blocks, int64_t q_blocks, cudaStream_t stream) {
  auto* dkv = varlen ? deterministic::dkv_kernel<T, D, true> : deterministic::dkv_kernel<T, D, false>;
  FS_RETURN_IF_ERROR(launch_tiled<deterministic::KvConfig<D>>(dkv, kv_blocks, a, stream));
  return launch_tiled<deterministic::DqConfig<D>>(deterministic::dq_kernel<T, D>, q_blocks, a, stream);
}

// The atomic path's last pass (dq_reduce.cuh): dQ = scale · dq_accum, rounded, over `slots` query slots.
template <class T, int D>
Status launch_dq_convert(const Args<T>& a, int64_t slots, cudaStream_t stream) {
  dq_convert_kernel<T, D><<<unsigned(row_blocks(slots)), kRowThreads, 0, stream>>>(a, slots, RowMajorDq<D>{});
  FS_RETURN_IF_CUDA_ERROR(cudaGetLastError());
  return Status::Success;
}

// The kernels every version shares: compiled once, in shared_kernels.cu, for every type and head_dim
// the versions take (its explicit instantiations). Declared here so that no version's translation unit
// compiles them again: each compiles its own kernels alone.
extern template Status launch_delta<float>(const AttentionBwdProblem&, float*, cudaStream_t);
extern template Status launch_delta<__half>(const AttentionBwdProblem&, float*, cudaStream_t);
extern template Status launch_delta<__nv_bfloat16>(const AttentionBwdProblem&, float*, cudaStream_t);
extern template Status launch_deterministic<__half, 64>(const Args<__half>&, bool, int64_t, int64_t, cudaStream_t);
extern template Status launch_deterministic<__half, 128>(const Args<__half>&, bool, int64_t, int64_t, cudaStream_t);
extern template Status launch_deterministic<__nv_bfloat16, 64>(const Args<__nv_bfloat16>&, bool, int64_t, int64_t,
                                                                cudaStream_t);
extern template Status launch_deterministic<__nv_bfloat16, 128>(const Args<__nv_bfloat16>&, bool, int64_t, int64_t,
                                                                 cudaStream_t);
extern template Status launch_dq_convert<__half, 64>(const Args<__half>&, int64_t, cudaStream_t);
extern template Status launch_dq_convert<__half, 128>(const Args<__half>&, int64_t, cudaStream_t);
extern template Status launch_dq_convert<__nv_bfloat16, 64>(const Args<__nv_bfloat16>&, int64_t, cudaStream_t);
extern template Status launch_dq_convert<__nv_bfloat16, 128>(const Args<__nv_bfloat16>&, int64_t, cudaStream_t);

// The launch of a tensor-core version. atomic_kernel(type, d, varlen) gives its K/V kernel with the
// atomic dQ for element type decltype(type)::type and head_dim decltype(d)::value, built for variable
// lengths or for dense batches alone as decltype(varlen)::value says (attn::key_block_of), launched as
// AtomicConfig<D> says (threads, shared memory, and the Bc keys of a block, which count its grid).
// kernel_delta: that kernel computes delta itself (v9's delta ablation), so on the atomic path the
// preprocess runs only to fill a delta the caller asked for, and no workspace holds it otherwise.
template <template <int> class AtomicConfig, class AtomicKernel>
Status run_mma(const AttentionBwdProblem& pr, cudaStream_t stream, AtomicKernel atomic_kernel,
               bool kernel_delta = false) {
  const AttentionParams& p = pr.fwd.p;
  return mma::Elements::dispatch(p.dtype, [&](auto type) {
    using T = typename decltype(type)::type;
    return mma::HeadDimList::dispatch(p.head_dim, [&](auto d) {
      constexpr int D = decltype(d)::value;
      using C = deterministic::KvConfig<D>;
      using DqC = deterministic::DqConfig<D>;
      using AtomicC = AtomicConfig<D>;
      // The grids cover the longest entry's keys (K/V kernels) and queries (the dQ kernel) of every
      // (entry, head): pr.fwd.max_seq_k, max_seq_q are Nk, Nq but for packed batches.
      const int64_t kv_tiles = (pr.fwd.max_seq_k + C::kBc - 1) / C::kBc;
      const int64_t atomic_kv_tiles = (pr.fwd.max_seq_k + AtomicC::kBc - 1) / AtomicC::kBc;
      const int64_t kv_blocks = p.batch * kv_head_count(p) * kv_tiles;
      const int64_t atomic_kv_blocks = p.batch * kv_head_count(p) * atomic_kv_tiles;
      const int64_t q_blocks = p.batch * p.heads * ((pr.fwd.max_seq_q + DqC::kBr - 1) / DqC::kBr);
      if (kv_blocks > INT_MAX || atomic_kv_blocks > INT_MAX || q_blocks > INT_MAX)
        return Status::InvalidSize;  // gridDim.x; before any write
      // Dense batches take the K/V kernels built without the variable-length fields.
      const bool varlen = p.seq_lens || p.cu_seqlens_q;
      auto launch = [&](float* delta) {
        Args<T> a = make_args<T>(pr, delta);
        if (pr.p.deterministic) {
          if (delta) FS_RETURN_IF_ERROR(launch_delta<T>(pr, delta, stream));
          return launch_deterministic<T, D>(a, varlen, kv_blocks, q_blocks, stream);
        }
        // dQ / scale in fp32 (mma_extra_bytes): the key blocks add their shares to zeros, then one pass
        // scales and rounds it into dQ.
        const std::size_t bytes = std::size_t(q_elems(p)) * sizeof(float);
        return with_workspace(bytes, stream, [&](void* workspace) {
          // delta (the caller's, where asked for) only once the workspace exists: a refused allocation
          // returns FS_ERR_OUT_OF_MEMORY with nothing written.
          if (delta) FS_RETURN_IF_ERROR(launch_delta<T>(pr, delta, stream));
          a.dq_accum = static_cast<float*>(workspace);
          FS_RETURN_IF_CUDA_ERROR(cudaMemsetAsync(a.dq_accum, 0, bytes, stream));
          auto* kernel = varlen ? atomic_kernel(type, d, std::true_type{}) : atomic_kernel(type, d, std::false_type{});
          FS_RETURN_IF_ERROR(launch_tiled<AtomicC>(kernel, atomic_kv_blocks, a, stream));
          return launch_dq_convert<T, D>(a, query_slots(pr), stream);
        });
      };
      if (kernel_delta && !pr.p.deterministic && !pr.p.delta) return launch(nullptr);
      return with_delta(pr, stream, launch);
    });
  });
}

// The shared memory a tensor-core version's descriptor states: the larger of its K/V kernel's (tiles
// KvConfig) and the deterministic dQ kernel's, at the largest head_dim. (deterministic.cuh's K/V
// kernel asks for v2's, which no version's K/V kernel goes below.)
template <template <int> class KvConfig>
constexpr std::size_t mma_smem_bytes() {
  return mma::HeadDimList::max_of([](auto d) {
    constexpr int D = decltype(d)::value;
    return std::max(KvConfig<D>::kSmemBytes, deterministic::DqConfig<D>::kSmemBytes);
  });
}

// What a tensor-core version allocates: dQ / scale in fp32, B·H·Nq·D floats (packed: H·total·D; the
// atomic path, the deterministic one allocates none of it), and delta when the caller gives no buffer
// for it.
inline std::size_t mma_extra_bytes(const AttentionParams& p) {
  return std::size_t(q_elems(p)) * sizeof(float) + delta_extra_bytes(p);
}

}  // namespace fs::bwd
