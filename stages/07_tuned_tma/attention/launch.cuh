// Stage 07 attention: what the launch of every version shares — the instances each version is
// compiled for (one list: it drives the dispatch and the validation alike), the tensor maps its TMA
// loads read, and one launch. Host code.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <climits>
#include <cstddef>

#include "common/device/attention.cuh"
#include "common/device/split_kv.cuh"
#include "common/lib/attention.h"
#include "common/lib/dispatch.h"
#include "common/lib/tensor_map.h"
#include "stages/07_tuned_tma/attention/tma_attention.cuh"

namespace fs::flash_tma {

using Elements = Dtypes<DType::FP16, DType::BF16>;
// Whole 128-byte rows of the swizzle (64 elements) per panel: D = 32 would need the 64-byte swizzle
// and its own descriptors, which no version has.
using HeadDimList = HeadDims<64, 128, 256>;

// 16-byte aligned tensors (TMA's rule for a tensor's base; every row, D·2 bytes, is a multiple of 16).
// Dense, padded and packed batches (TMA zero-fills only at a plane's end, so the kernels zero what a
// tile brings past a sequence's end themselves: tma_attention.cuh, first_foreign_row).
constexpr AttentionSupport kSupport = attention_support<Elements, HeadDimList>(16, /*varlen=*/true);
// v9 (v9_fp8.cuh): fp8 Q, K, V at D = 128 (one 128-byte swizzle row), dense batches.
constexpr AttentionSupport kFp8Support = attention_support<Dtypes<DType::FP8_E4M3>, HeadDims<128>>(16, /*varlen=*/false);

// One tensor of the problem as TMA sees it: `planes` planes of [rows][D], each plane its rows after
// the last (dense and padded [B, H, N, D]: a plane per (batch entry, head); packed [H, total, D]: a
// plane per head), boxes of one swizzle row (128 bytes: 64 16-bit columns, 128 fp8 ones) × box_rows rows.
inline TensorMap3d head_map(const void* base, DType dtype, int64_t planes, int64_t rows, int64_t d, int box_rows) {
  TensorMap3d m;
  m.plane.base = base;
  m.plane.dtype = dtype;
  m.plane.cols = d;
  m.plane.rows = rows;
  m.plane.ld = d;
  m.plane.box_cols = 128 / int(dtype_size(dtype));
  m.plane.box_rows = box_rows;
  m.planes = planes;
  m.plane_ld = rows * d;
  return m;
}

// Planes of the maps: one per (batch entry, head), or per head for packed batches, whose entries share them.
inline int64_t map_entries(const AttentionParams& p) { return p.cu_seqlens_q ? 1 : p.batch; }

// K's and V's tensor maps for tile configuration C: boxes of Bc rows. A size TMA cannot take returns
// its code here, before anything is launched.
template <class C>
Status encode_kv_maps(const AttentionProblem& pr, CUtensorMap* tk, CUtensorMap* tv) {
  const AttentionParams& p = pr.p;
  const int64_t kv_planes = map_entries(p) * kv_head_count(p);
  FS_RETURN_IF_ERROR(encode_tensor_map(head_map(p.k, dtype_of(p), kv_planes, p.seq_k, p.head_dim, C::kBc), tk));
  return encode_tensor_map(head_map(p.v, dtype_of(p), kv_planes, p.seq_k, p.head_dim, C::kBc), tv);
}

// The problem's tensor maps for tile configuration C (kBr, kBc): Q's with boxes of Br rows, K's and
// V's of Bc rows.
template <class C>
Status encode_maps(const AttentionProblem& pr, CUtensorMap* tq, CUtensorMap* tk, CUtensorMap* tv) {
  const AttentionParams& p = pr.p;
  FS_RETURN_IF_ERROR(
      encode_tensor_map(head_map(p.q, dtype_of(p), map_entries(p) * p.heads, p.seq_q, p.head_dim, C::kBr), tq));
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
// ws::kWideBc> (192-key blocks pay on long sequences and cost on short ones: tma_attention.cuh). Packed
// batches take the default: their seq_k is the total of every entry's keys, and the entries' own
// lengths are on the device.
template <class F>
Status with_ws_config(const AttentionProblem& pr, F f) {
  if (pr.p.head_dim == 64 && pr.p.seq_k >= ws::kWideFromKeys && !pr.p.cu_seqlens_q)
    return Elements::dispatch(pr.p.dtype, [&](auto t) { return f(t, ConfigTag<ws::Config<64, ws::kWideBc>>{}); });
  return with_dtype_and_dim(pr, [&](auto t, auto d) { return f(t, ConfigTag<ws::Config<decltype(d)::value>>{}); });
}

// The launch of a warp-specialized version (v2 to v4, tma_attention.cuh's ws::): kernel_of(DtypeTag<t>{},
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

// Each version's launch (flash_tma_vN.cu): validated params, a GPU that can run it.
Status run_v1(const AttentionProblem& pr, cudaStream_t stream);
Status run_v2(const AttentionProblem& pr, cudaStream_t stream);
Status run_v3(const AttentionProblem& pr, cudaStream_t stream);
Status run_v4(const AttentionProblem& pr, cudaStream_t stream);
Status run_v5(const AttentionProblem& pr, cudaStream_t stream);
Status run_v6(const AttentionProblem& pr, cudaStream_t stream);
Status run_v7(const AttentionProblem& pr, cudaStream_t stream);
Status run_v8(const AttentionProblem& pr, cudaStream_t stream);
Status run_v9(const AttentionProblem& pr, cudaStream_t stream);
Status run_v10(const AttentionProblem& pr, cudaStream_t stream);
// v5 and v6 with a forced split count (v5: 1 is v4's launch; v6: 1 writes O directly), for the tests.
Status run_v5_splits(const AttentionProblem& pr, int splits, cudaStream_t stream);
Status run_v6_splits(const AttentionProblem& pr, int splits, cudaStream_t stream);
// The split count v5 and v6 take for a problem on a GPU with `sms` SMs (split_kv_heuristic).
int v5_splits(const AttentionParams& p, int sms);
int v6_splits(const AttentionParams& p, int sms);
// v8 with the grid's last `tail` tiles (at most all of them; 0 or splits = 1: none; tail >= 0, splits >= 1)
// over `splits` blocks each, for the tests; the workspace of the split v8 takes on a GPU with `sms` SMs
// (last_wave_split).
Status run_v8_split(const AttentionProblem& pr, int64_t tail, int splits, cudaStream_t stream);
std::size_t v8_workspace_bytes(const AttentionParams& p, int sms);
// v9's workspace: Vᵀ in fp8, [B·KVH][D][Nk rounded up to 32] (v9_fp8.cuh). For validated params.
std::size_t v9_workspace_bytes(const AttentionParams& p);
// v10's workspace (v8's last-wave split, over v10's tiles).
std::size_t v10_workspace_bytes(const AttentionParams& p, int sms);

}  // namespace fs::flash_tma
