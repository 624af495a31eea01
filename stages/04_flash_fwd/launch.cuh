// Stage 04: what the launch of every version (vN.cu) shares — the instances each version is compiled
// for (one list: it drives the dispatch and the validation alike), the launch of a version that has
// one tile shape per head_dim, and the form of a version's descriptor. Host code.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "common/device/attention.cuh"
#include "common/lib/attention.h"
#include "common/lib/dispatch.h"
#include "common/lib/flops.h"
#include "common/lib/kernel.h"

namespace fs::flash {

using Elements = Dtypes<DType::FP16, DType::BF16>;
using HeadDimList = HeadDims<32, 64, 128, 256>;

// 16-byte alignment: cp.async and the 16-byte loads move whole 16-byte chunks, and every row, D·2
// bytes, is a multiple of 16. Dense, padded (seq_lens) and packed (cu_seqlens) batches.
constexpr AttentionSupport kSupport = attention_support<Elements, HeadDimList>(16, /*varlen=*/true);
// v4's kernel (v4, v5) and v6's read Q, K, V and write O through their strides (fs_attention_params):
// any layout with D contiguous and every stride a multiple of 16 bytes, for the same 16-byte copies.
constexpr AttentionSupport kStridedSupport =
    attention_support<Elements, HeadDimList>(16, /*varlen=*/true, /*strided=*/true);

// Launches kernel_of(DtypeTag<t>{}, std::integral_constant<int, D>{}), the version's kernel for the
// problem's dtype and head_dim, with tile configuration Config<D>.
template <template <int> class Config, class KernelOf>
Status launch_version(const AttentionProblem& pr, cudaStream_t stream, KernelOf kernel_of) {
  return Elements::dispatch(pr.p.dtype, [&](auto t) {
    return HeadDimList::dispatch(pr.p.head_dim, [&](auto d) {
      return attn::launch_kernel<Config<decltype(d)::value>>(kernel_of(t, d), pr, stream);
    });
  });
}

// v5's launches that v6 runs (v5.cu). Candidate `index` (tile_shapes.cuh's order) for the problem's
// head_dim: v6 runs it when one split is best.
Status run_v5_candidate(const AttentionProblem& pr, int index, cudaStream_t stream);
// The candidate v5's tuner remembers for (head_dim, dtype, mask) on the current GPU, -1 when it has
// not tuned it yet (nothing is timed).
int v5_remembered_choice(int64_t head_dim, DType dtype, bool causal);

// The shared memory of the version's largest instance, for its descriptor (the device check).
template <template <int> class Config>
constexpr std::size_t max_smem_bytes() {
  return HeadDimList::max_of([](auto d) { return Config<decltype(d)::value>::kSmemBytes; });
}

// A version's descriptor: what it takes (kSupport, or kStridedSupport), the GPUs it runs on, the shared
// memory its largest instance asks for (the device check), its launch, and the device memory a call
// needs beyond its tensors (by default the LSE it writes, O(B·H·N)).
constexpr KernelDesc version(const KernelName& name, std::size_t smem_bytes, AttentionRun run,
                             std::size_t (*extra_bytes)(const AttentionParams&) = lse_extra_bytes,
                             const AttentionSupport& support = kSupport) {
  return attention_kernel(name, support, kStageArchs, smem_bytes, run, extra_bytes);
}

}  // namespace fs::flash
