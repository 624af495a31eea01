// Stage 07 attention: what the launch of every version shares — the instances each version is
// compiled for (one list: it drives the dispatch and the validation alike), the tensor maps its TMA
// loads read, one launch, the descriptors' helpers, and the last wave's split (v8, v10). Host code;
// each version's own launch, descriptor and C entry are its vN.cu.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>

#include "common/device/attention.cuh"
#include "common/device/split_kv.cuh"
#include "common/lib/attention.h"
#include "common/lib/device.h"
#include "common/lib/dispatch.h"
#include "common/lib/flops.h"
#include "common/lib/kernel.h"
#include "common/lib/split_kv.h"
#include "common/lib/tensor_map.h"
#include "common/lib/workspace.h"
#include "stages/07_tuned_tma/attention/block.cuh"
#include "stages/07_tuned_tma/attention/last_wave.cuh"

namespace fs::flash_tma {

using Elements = Dtypes<DType::FP16, DType::BF16>;
// Whole 128-byte rows of the swizzle (64 elements) per panel: D = 32 would need the 64-byte swizzle
// and its own descriptors, which no version has.
using HeadDimList = HeadDims<64, 128, 256>;

// 16-byte aligned tensors (TMA's rule for a tensor's base; every row, D·2 bytes, is a multiple of 16).
// Dense, padded and packed batches (TMA zero-fills only at a plane's end, so the kernels zero what a
// tile brings past a sequence's end themselves: tiles.cuh, first_foreign_row). Any layout with D
// contiguous (fs_attention_params' strides, each a multiple of 16 bytes as TMA's strides must be): the
// maps take the strides as they are. What v1 to v8 and v10 take (v9 takes fp8: v9.cu).
constexpr AttentionSupport kSupport =
    attention_support<Elements, HeadDimList>(16, /*varlen=*/true, /*strided=*/true);

// Batch entries of the maps: B, or 1 for packed batches, whose entries share each head's rows.
inline int64_t map_entries(const AttentionParams& p) { return p.cu_seqlens_q ? 1 : p.batch; }

// One tensor of the problem (Q, K or V) as TMA sees it: a 4D map (D, N, heads, batch entries) with the
// tensor's own strides (strides_of), so one plane of [N][D] per (batch entry, head) of dense and padded
// [B, H, N, D] (packed [H, total, D]: a plane per head), wherever the layout puts it: contiguous,
// [B, N, H, D], or a slice of a packed QKV tensor. Boxes of one swizzle row (128 bytes: 64 16-bit
// columns, 128 fp8 ones) × box_rows rows of one plane.
inline TensorMap4d head_map(const AttentionParams& p, Tensor t, int box_rows) {
  const bool query = t == Tensor::Q;
  const TensorStrides st = strides_of(p, t);
  TensorMap4d m;
  m.plane.base = query ? p.q : t == Tensor::K ? p.k : p.v;
  m.plane.dtype = dtype_of(p);
  m.plane.cols = p.head_dim;
  m.plane.rows = query ? p.seq_q : p.seq_k;
  m.plane.ld = st.row;
  m.plane.box_cols = 128 / int(dtype_size(dtype_of(p)));
  m.plane.box_rows = box_rows;
  m.heads = query ? p.heads : kv_head_count(p);
  m.head_ld = st.head;
  m.batches = map_entries(p);
  m.batch_ld = st.batch;
  return m;
}

// K's and V's tensor maps for tile configuration C: boxes of Bc rows. A size TMA cannot take returns
// its code here, before anything is launched.
template <class C>
Status encode_kv_maps(const AttentionProblem& pr, CUtensorMap* tk, CUtensorMap* tv) {
  FS_RETURN_IF_ERROR(encode_tensor_map(head_map(pr.p, Tensor::K, C::kBc), tk));
  return encode_tensor_map(head_map(pr.p, Tensor::V, C::kBc), tv);
}

// The problem's tensor maps for tile configuration C (kBr, kBc): Q's with boxes of Br rows, K's and
// V's of Bc rows.
template <class C>
Status encode_maps(const AttentionProblem& pr, CUtensorMap* tq, CUtensorMap* tk, CUtensorMap* tv) {
  FS_RETURN_IF_ERROR(encode_tensor_map(head_map(pr.p, Tensor::Q, C::kBr), tq));
  return encode_kv_maps<C>(pr, tk, tv);
}

// kernel<<<grid, C::kThreads, C::kSmemBytes, stream>>>(args...), after opting the kernel in to more than
// 48 KB of dynamic shared memory (a kernel must, above that).
template <class C, class... Params, class... Arguments>
Status launch_config(void (*kernel)(Params...), dim3 grid, cudaStream_t stream, const Arguments&... args) {
  FS_RETURN_IF_CUDA_ERROR(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(C::kSmemBytes)));
  kernel<<<grid, C::kThreads, C::kSmemBytes, stream>>>(args...);
  FS_RETURN_IF_CUDA_ERROR(cudaGetLastError());
  return Status::Success;
}

// The launch of a version whose kernel takes (tmQ, tmK, tmV, Args<T>), built for tile configuration C
// (kBr, kBc, kThreads, kSmemBytes): the maps, then B·H·ceil(max Nq / Br) blocks on `stream`.
template <class C, class T>
Status launch_with_maps(void (*kernel)(CUtensorMap, CUtensorMap, CUtensorMap, attn::Args<T>),
                        const AttentionProblem& pr, cudaStream_t stream) {
  CUtensorMap tq, tk, tv;
  FS_RETURN_IF_ERROR(encode_maps<C>(pr, &tq, &tk, &tv));
  const attn::Args<T> a = attn::make_args<T>(pr, C::kBr);
  const int64_t blocks = pr.p.batch * pr.p.heads * a.q_tiles;  // attn::locate: B·H·q_tiles, whatever the layout
  if (blocks > INT_MAX) return Status::InvalidSize;  // gridDim.x limit: about 2^31 · 64 query rows
  return launch_config<C>(kernel, dim3(unsigned(blocks)), stream, tq, tk, tv, a);
}

// Calls f(DtypeTag<t>{}, std::integral_constant<int, D>{}) with the problem's element type and head_dim.
template <class F>
Status with_dtype_and_dim(const AttentionProblem& pr, F f) {
  return Elements::dispatch(pr.p.dtype, [&](auto t) {
    return HeadDimList::dispatch(pr.p.head_dim, [&](auto d) { return f(t, d); });
  });
}

// Launches kernel_of(DtypeTag<t>{}, std::integral_constant<int, D>{}), the version's kernel for the
// problem's dtype and head_dim, with tile configuration Config<D>.
template <template <int> class Config, class KernelOf>
Status launch_version(const AttentionProblem& pr, cudaStream_t stream, KernelOf kernel_of) {
  return with_dtype_and_dim(pr, [&](auto t, auto d) {
    return launch_with_maps<Config<decltype(d)::value>>(kernel_of(t, d), pr, stream);
  });
}

// A tile configuration as a value: what with_ws_config hands its callee.
template <class C>
struct ConfigTag {
  using type = C;
};
// Calls f(DtypeTag<t>{}, ConfigTag<C>{}) with the problem's element type and the warp-specialized tile
// configuration it takes: ws::Config<D>, or at D = 64 for Nk >= ws::kWideFromKeys ws::Config<64,
// ws::kWideBc> (192-key blocks pay on long sequences and cost on short ones: block.cuh). Packed
// batches take the default: their seq_k is the total of every entry's keys, and the entries' own
// lengths are on the device.
template <class F>
Status with_ws_config(const AttentionProblem& pr, F f) {
  if (pr.p.head_dim == 64 && pr.p.seq_k >= ws::kWideFromKeys && !pr.p.cu_seqlens_q)
    return Elements::dispatch(pr.p.dtype, [&](auto t) { return f(t, ConfigTag<ws::Config<64, ws::kWideBc>>{}); });
  return with_dtype_and_dim(pr, [&](auto t, auto d) { return f(t, ConfigTag<ws::Config<decltype(d)::value>>{}); });
}

// The launch of a warp-specialized version (v2 to v4, block.cuh's ws::): kernel_of(DtypeTag<t>{},
// ConfigTag<C>{}) is the version's kernel for element type t and tile configuration C (with_ws_config).
template <class KernelOf>
Status launch_ws_version(const AttentionProblem& pr, cudaStream_t stream, KernelOf kernel_of) {
  return with_ws_config(pr, [&](auto t, auto c) {
    return launch_with_maps<typename decltype(c)::type>(kernel_of(t, c), pr, stream);
  });
}

// The shared memory of the version's largest instance, for its descriptor (the device check).
template <template <int> class Config>
constexpr std::size_t max_smem_bytes() {
  return HeadDimList::max_of([](auto d) { return Config<decltype(d)::value>::kSmemBytes; });
}

// ---- The descriptors (vN.cu) -----------------------------------------------------------------------
// A version that takes kSupport, for the GPUs the stage is built for; smem_bytes: its largest block's;
// extra: what it allocates beyond its tensors (the LSE it writes, by default).
constexpr KernelDesc descriptor(const KernelName& name, std::size_t smem_bytes, AttentionRun run,
                                std::size_t (*extra)(const AttentionParams&) = lse_extra_bytes) {
  return attention_kernel(name, kSupport, kStageArchs, smem_bytes, run, extra);
}

// v5, v6, v8 and v10: the LSE, plus the workspace kWorkspace(params, SMs) the version takes for these
// params on the current GPU (none where it cannot tell: no device, or sizes no launch would take).
template <std::size_t (*kWorkspace)(const AttentionParams&, int)>
std::size_t workspace_extra_bytes(const AttentionParams& p) {
  std::size_t bytes = lse_extra_bytes(p);
  DeviceProps dev;
  if (validate(p, kSupport) == Status::Success && current_device(&dev) == Status::Success)
    bytes += kWorkspace(p, dev.sms);
  return bytes;
}
// v5's and v6's workspace: that of the split count kSplits takes.
template <int (*kSplits)(const AttentionParams&, int)>
std::size_t split_workspace(const AttentionParams& p, int sms) {
  return split_workspace_bytes(p, kSplits(p, sms));
}

// A launch of version k with a forced split (versions.h: the tests' entries), validated as its C entry
// validates: the params, the GPU, then the split (`bad_split`), before run(prepared problem).
template <class Run>
Status launch_forced(const KernelDesc& k, const AttentionParams& p, bool bad_split, Run run) {
  FS_RETURN_IF_ERROR(validate(p, k.attention));
  FS_RETURN_IF_ERROR(check_current_device(k.info, largest_tensor_bytes(p)));
  if (bad_split) return Status::InvalidSize;
  return run(prepare(p));
}

// The launches another version's launch falls back to: v5 with one split is v4's launch, v6 where it
// does not pack is v5's (v4.cu, v5.cu).
Status run_v4(const AttentionProblem& pr, cudaStream_t stream);
Status run_v5_splits(const AttentionProblem& pr, int splits, cudaStream_t stream);
// The split count v5 takes for a problem on a GPU with `sms` SMs (split_kv_heuristic).
int v5_splits(const AttentionParams& p, int sms);

// ---- The last wave's split (v8, v10: last_wave.cuh) -----------------------------------------------
// The launch of a version's last-wave kernels for its tile configuration Config<D>: which tiles to split
// and into how many slices, the workspace, the kernel and the merge. kernel_of(DtypeTag<t>{},
// ConfigTag<C>{}) is the version's kernel for element type t and tile configuration C.
namespace last_wave {

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

// The kernel of the version, for element type T and tile configuration C, with the last `tail` tiles (at
// most all of them) over `splits` blocks each, then, if any was split, the merge of their rows, around
// one workspace allocation. Both on `stream`: the merge starts after every slice is written.
template <class T, class C>
Status launch(const AttentionProblem& pr, int64_t tail, int splits, cudaStream_t stream,
              void (*kernel)(CUtensorMap, CUtensorMap, CUtensorMap, LastWaveArgs<T>)) {
  constexpr int D = C::kD;
  CUtensorMap tq, tk, tv;
  FS_RETURN_IF_ERROR(encode_maps<C>(pr, &tq, &tk, &tv));
  const int64_t tiles = grid_tiles<C>(pr);
  if (splits == 1) tail = 0;
  tail = std::min(tail, tiles);
  LastWaveArgs<T> la{attn::make_args<T>(pr, C::kBr), tiles - tail, splits, nullptr, nullptr};
  const int64_t blocks = la.whole_tiles + tail * splits, merge_blocks = tail * (C::kBr / attn::kMergeRows<D>);
  if (blocks > INT_MAX || merge_blocks > INT_MAX) return Status::InvalidSize;  // gridDim.x limit
  auto run = [&] {
    return launch_config<C>(kernel, dim3(unsigned(blocks)), stream, tq, tk, tv, la);
  };
  if (tail == 0) return run();
  const int64_t part_rows = tail * splits * C::kBr;
  return with_workspace(workspace_bytes<C>(tail, splits), stream, [&](void* ws) {
    la.o_part = static_cast<float*>(ws);
    la.lse_part = la.o_part + part_rows * D;
    FS_RETURN_IF_ERROR(run());
    merge_last_wave_kernel<T, D, C::kBr><<<unsigned(merge_blocks), attn::kMergeThreads, 0, stream>>>(la);
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
template <template <int> class Config, class KernelOf>
Status run_split(const AttentionProblem& pr, int64_t tail, int splits, cudaStream_t stream, KernelOf kernel_of) {
  return with_dtype_and_dim(pr, [&](auto t, auto d) {
    using C = Config<decltype(d)::value>;
    return launch<typename decltype(t)::type, C>(pr, tail, splits, stream, kernel_of(t, ConfigTag<C>{}));
  });
}

// The version's launch with the split it takes on the current GPU.
template <template <int> class Config, class KernelOf>
Status run(const AttentionProblem& pr, cudaStream_t stream, KernelOf kernel_of) {
  DeviceProps dev;
  FS_RETURN_IF_ERROR(current_device(&dev));
  const LastWaveSplit w = split<Config>(pr, dev.sms);
  return run_split<Config>(pr, w.tiles, w.splits, stream, kernel_of);
}

}  // namespace last_wave

}  // namespace fs::flash_tma
