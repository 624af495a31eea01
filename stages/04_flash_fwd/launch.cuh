// Stage 04: what the launch of every version shares — the instances each version is compiled for
// (one list: it drives the dispatch and the validation alike) and the launch of a version that has
// one tile shape per head_dim. Host code.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "common/device/attention.cuh"
#include "common/lib/attention.h"
#include "common/lib/dispatch.h"

namespace fs::flash {

using Elements = Dtypes<DType::FP16, DType::BF16>;
using HeadDimList = HeadDims<32, 64, 128, 256>;

// 16-byte alignment: cp.async and the 16-byte loads move whole 16-byte chunks, and every row, D·2
// bytes, is a multiple of 16. Dense, padded (seq_lens) and packed (cu_seqlens) batches.
constexpr AttentionSupport kSupport = attention_support<Elements, HeadDimList>(16, /*varlen=*/true);

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

// Each version's launch (flash_fwd_vN.cu, v5_autotune.cu, flash_fwd_v6.cu): validated params, a GPU that can run it.
Status run_v1(const AttentionProblem& pr, cudaStream_t stream);
Status run_v2(const AttentionProblem& pr, cudaStream_t stream);
Status run_v3(const AttentionProblem& pr, cudaStream_t stream);
Status run_v4(const AttentionProblem& pr, cudaStream_t stream);
Status run_v5(const AttentionProblem& pr, cudaStream_t stream);
Status run_v6(const AttentionProblem& pr, cudaStream_t stream);

// v5's candidate `index` (tile_shapes.cuh's order) for the problem's head_dim: v6 runs it when one
// split is best.
Status run_v5_candidate(const AttentionProblem& pr, int index, cudaStream_t stream);
// The candidate v5's tuner remembers for (head_dim, dtype, mask) on the current GPU, -1 when it has
// not tuned it yet (nothing is timed).
int v5_remembered_choice(int64_t head_dim, DType dtype, bool causal);

// The shared memory of the version's largest instance, for its descriptor (the device check).
template <template <int> class Config>
constexpr std::size_t max_smem_bytes() {
  return HeadDimList::max_of([](auto d) { return Config<decltype(d)::value>::kSmemBytes; });
}

}  // namespace fs::flash
