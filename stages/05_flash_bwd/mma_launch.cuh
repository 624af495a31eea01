// Stage 05: the launch that v2 to v10 share — delta, then either v2's deterministic pair (the K/V
// kernel without dQ, then the Q-outer dQ kernel) or a K/V kernel that adds dQ into an fp32 workspace,
// rounded once at the end. The versions differ only in that K/V kernel, which each one names, with
// its tile configuration.
#pragma once

#include <climits>
#include <cstdint>
#include <type_traits>

#include "common/lib/workspace.h"
#include "launch.h"
#include "preprocess.cuh"
#include "v2_mma.cuh"

namespace fs::bwd {

// atomic_kernel(type, d, varlen) gives the K/V kernel with the atomic dQ for element type
// decltype(type)::type and head_dim decltype(d)::value, built for variable lengths or for dense batches
// alone as decltype(varlen)::value says (attn::key_block_of), launched as AtomicConfig<D> says (threads,
// shared memory, and the Bc keys of a block, which count its grid). kernel_delta: that kernel
// computes delta itself (v9's delta ablation, run_v9_delta_in_loop), so on the atomic path the
// preprocess runs only to fill a delta the caller asked for, and no workspace holds it otherwise.
template <template <int> class AtomicConfig = v2::Config, class AtomicKernel>
Status run_mma(const AttentionBwdProblem& pr, cudaStream_t stream, AtomicKernel atomic_kernel,
               bool kernel_delta = false) {
  const AttentionParams& p = pr.fwd.p;
  return v2::Elements::dispatch(p.dtype, [&](auto type) {
    using T = typename decltype(type)::type;
    return v2::HeadDimList::dispatch(p.head_dim, [&](auto d) {
      constexpr int D = decltype(d)::value;
      using C = v2::Config<D>;
      using DqC = v2::DqConfig<D>;
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
        if (delta) FS_RETURN_IF_ERROR(launch_delta<T>(pr, delta, stream));
        if (pr.p.deterministic) {
          auto* dkv = varlen ? v2::flash_bwd_v2_dkv_kernel<T, D, true, false> : v2::flash_bwd_v2_dkv_kernel<T, D, false, false>;
          FS_RETURN_IF_ERROR(launch_tiled<C>(dkv, kv_blocks, a, stream));
          return launch_tiled<DqC>(v2::flash_bwd_v2_dq_kernel<T, D>, q_blocks, a, stream);
        }
        // dQ / scale in fp32 (flash_bwd_v2_extra_bytes): the key blocks add their shares to zeros, then
        // one pass scales and rounds it into dQ.
        const std::size_t bytes = std::size_t(q_elems(p)) * sizeof(float);
        return with_workspace(bytes, stream, [&](void* workspace) {
          a.dq_accum = static_cast<float*>(workspace);
          FS_RETURN_IF_CUDA_ERROR(cudaMemsetAsync(a.dq_accum, 0, bytes, stream));
          auto* kernel = varlen ? atomic_kernel(type, d, std::true_type{}) : atomic_kernel(type, d, std::false_type{});
          FS_RETURN_IF_ERROR(launch_tiled<AtomicC>(kernel, atomic_kv_blocks, a, stream));
          const int64_t slots = query_slots(pr);
          v2::dq_convert_kernel<T, D><<<unsigned(row_blocks(slots)), kRowThreads, 0, stream>>>(a, slots);
          FS_RETURN_IF_CUDA_ERROR(cudaGetLastError());
          return Status::Success;
        });
      };
      if (kernel_delta && !pr.p.deterministic && !pr.p.delta) return launch(nullptr);
      return with_delta(pr, stream, launch);
    });
  });
}

}  // namespace fs::bwd
