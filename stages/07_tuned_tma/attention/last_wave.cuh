// Stage 07 attention: the launch of v8_split_last_wave.cuh's kernels for a tile configuration Config<D>
// (v8: v7's tiles; v10: its own at D = 128) — which tiles to split and into how many slices, the
// workspace, the kernel and the merge. Host code.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>

#include "common/lib/device.h"
#include "common/lib/split_kv.h"
#include "common/lib/workspace.h"
#include "stages/07_tuned_tma/attention/launch.cuh"
#include "stages/07_tuned_tma/attention/v8_split_last_wave.cuh"

namespace fs::flash_tma::last_wave {

// The tiles of the grid for these params and tile configuration C: B·H·ceil(max Nq / Br).
template <class C>
int64_t grid_tiles(const AttentionProblem& pr) {
  return pr.p.batch * pr.p.heads * ((pr.max_seq_q + C::kBr - 1) / C::kBr);
}

// The workspace of `tail` tiles over `splits` slices each: O_s [tail][splits][Br][D] and LSE_s
// [tail][splits][Br], fp32.
template <class C>
std::size_t workspace_bytes(int64_t tail, int splits) {
  return std::size_t(tail) * std::size_t(splits) * C::kBr * std::size_t(C::kD + 1) * sizeof(float);
}

// The kernel for element type T and tile configuration C with the last `tail` tiles (at most all of
// them) over `splits` blocks each, then, if any was split, the merge of their rows, around one
// workspace allocation. Both on `stream`: the merge starts after every slice is written.
template <class T, class C>
Status launch(const AttentionProblem& pr, int64_t tail, int splits, cudaStream_t stream) {
  constexpr int D = C::kD;
  CUtensorMap tq, tk, tv;
  FS_RETURN_IF_ERROR(encode_maps<C>(pr, &tq, &tk, &tv));
  const int64_t tiles = grid_tiles<C>(pr);
  if (splits == 1) tail = 0;
  tail = std::min(tail, tiles);
  v8::LastWaveArgs<T> la{attn::make_args<T>(pr, C::kBr), tiles - tail, splits, nullptr, nullptr};
  const int64_t blocks = la.whole_tiles + tail * splits, merge_blocks = tail * (C::kBr / attn::kMergeRows<D>);
  if (blocks > INT_MAX || merge_blocks > INT_MAX) return Status::InvalidSize;  // gridDim.x limit
  auto run = [&] {
    return launch_config<C>(v8::flash_tma_v8_kernel<T, C>, dim3(unsigned(blocks)), stream, tq, tk, tv, la);
  };
  if (tail == 0) return run();
  const int64_t part_rows = tail * splits * C::kBr;
  return with_workspace(workspace_bytes<C>(tail, splits), stream, [&](void* ws) {
    la.o_part = static_cast<float*>(ws);
    la.lse_part = la.o_part + part_rows * D;
    FS_RETURN_IF_ERROR(run());
    v8::merge_last_wave_kernel<T, C><<<unsigned(merge_blocks), attn::kMergeThreads, 0, stream>>>(la);
    FS_RETURN_IF_CUDA_ERROR(cudaGetLastError());
    return Status::Success;
  });
}

// The split the version of tile configuration Config takes for this problem on a GPU with `sms` SMs:
// last_wave_split from its tiles, their keys and one block per SM.
template <template <int> class Config>
LastWaveSplit split(const AttentionProblem& pr, int sms) {
  const AttentionParams& p = pr.p;
  LastWaveSplit w{0, 1};
  with_dtype_and_dim(pr, [&](auto, auto d) {
    using C = Config<decltype(d)::value>;
    const bool equal_tiles = !p.causal && !p.seq_lens && !p.cu_seqlens_q;  // every tile walks every key block
    const int64_t keys = (p.seq_k + C::kBc - 1) / C::kBc * C::kBc;           // its key blocks' keys
    w = last_wave_split(grid_tiles<C>(pr), keys, sms, equal_tiles);
    return Status::Success;
  });
  return w;
}

// The workspace that split takes.
template <template <int> class Config>
std::size_t split_workspace_bytes(const AttentionParams& p, int sms) {
  const AttentionProblem pr = prepare(p);
  const LastWaveSplit w = split<Config>(pr, sms);
  std::size_t bytes = 0;
  if (w.splits > 1)
    with_dtype_and_dim(pr, [&](auto, auto d) {
      bytes = workspace_bytes<Config<decltype(d)::value>>(w.tiles, w.splits);
      return Status::Success;
    });
  return bytes;
}

// The version's launch with the last `tail` tiles over `splits` blocks each.
template <template <int> class Config>
Status run_split(const AttentionProblem& pr, int64_t tail, int splits, cudaStream_t stream) {
  return with_dtype_and_dim(pr, [&](auto t, auto d) {
    return launch<typename decltype(t)::type, Config<decltype(d)::value>>(pr, tail, splits, stream);
  });
}

// The version's launch with the split it takes on the current GPU.
template <template <int> class Config>
Status run(const AttentionProblem& pr, cudaStream_t stream) {
  DeviceProps dev;
  FS_RETURN_IF_ERROR(current_device(&dev));
  const LastWaveSplit w = split<Config>(pr, dev.sms);
  return run_split<Config>(pr, w.tiles, w.splits, stream);
}

}  // namespace fs::flash_tma::last_wave
