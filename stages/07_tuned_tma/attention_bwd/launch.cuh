// Stage 07 attention backward: what the launch of every version shares (host code) — the instances it
// is compiled for (one list: it drives the dispatch and the validation alike), the tensor maps of Q,
// dO, K and V, and the one launch: delta (common/device/bwd_preprocess.cuh), the version's K/V kernel
// adding dQ / scale into a zeroed fp32 workspace (in deterministic mode in turns, with a zeroed turn
// counter per query tile), then dQ = scale · workspace, rounded (dq_convert_kernel): stage 05's
// workspace conventions; from v12 on, where the grid would be small, s blocks per key block, each
// walking G / s of the group's query heads (group_split.cuh). Each version's descriptor and C entry are
// its vN.cu.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "common/device/bwd_args.cuh"
#include "common/device/bwd_preprocess.cuh"
#include "common/lib/attention.h"
#include "common/lib/cuda_check.h"
#include "common/lib/device.h"
#include "common/lib/dispatch.h"
#include "common/lib/flops.h"
#include "common/lib/kernel.h"
#include "common/lib/tensor_map.h"
#include "common/lib/workspace.h"
#include "stages/07_tuned_tma/attention_bwd/dq_tile.cuh"
#include "stages/07_tuned_tma/attention_bwd/group_split.cuh"

namespace fs::flash_bwd_tma {

// fp16 and bf16 (wgmma's 16-bit forms); D = 64 and 128 (dK and dV live in registers: 64 keys × D fp32
// each per warpgroup, 256 registers per thread at D = 256, more than a thread has). 16-byte aligned
// tensors and strides (TMA's rules); dense, padded and packed batches; any layout with D contiguous.
using Elements = Dtypes<DType::FP16, DType::BF16>;
using HeadDimList = HeadDims<64, 128>;
constexpr AttentionSupport kSupport = attention_support<Elements, HeadDimList>(16, /*varlen=*/true, /*strided=*/true);

// One tensor of the problem as TMA sees it: a 4D map (D, rows, heads, batch entries) with the tensor's
// own strides, one plane of [N][D] per (batch entry, head) (packed batches: one per head of all the
// entries' rows). Q and dO ([B, H, Nq, D]; dO laid out as O) take boxes of Br rows, K and V
// ([B, KVH, Nk, D]) of Bc rows; boxes of 64 columns (one 128-byte swizzle row).
inline TensorMap4d map_of(const AttentionBwdProblem& pr, Tensor t, int box_rows) {
  const AttentionParams& p = pr.fwd.p;
  const bool query = t == Tensor::Q || t == Tensor::O;
  const TensorStrides st = strides_of(p, t);
  TensorMap4d m;
  m.plane.base = t == Tensor::Q ? p.q : t == Tensor::K ? p.k : t == Tensor::V ? p.v : pr.p.d_o;
  m.plane.dtype = dtype_of(p);
  m.plane.cols = p.head_dim;
  m.plane.rows = query ? p.seq_q : p.seq_k;
  m.plane.ld = st.row;
  m.plane.box_cols = 64;
  m.plane.box_rows = box_rows;
  m.heads = query ? p.heads : kv_head_count(p);
  m.head_ld = st.head;
  m.batches = stored_entries(p);
  m.batch_ld = st.batch;
  return m;
}

// Versions from v4 on read each step's rows of LSE and delta with one TMA copy, from a copy of them
// padded to whole query tiles (Config::kPaddedRows): rows[bh · ld + i] = (LSE · log2 e, delta) of query
// slot (bh, i), ld = max_seq_q rounded up to kBr, zeros where no row is (past an entry's length, in an
// entry that breaks the rules, up to ld), so that a tile's 64 rows start on a 512-byte boundary and
// every byte a copy reads was written. One thread per padded slot, after delta.
template <class T>
__global__ void padded_rows_kernel(const bwd::Args<T> a, float2* __restrict__ rows, int64_t ld, int64_t total) {
  for (int64_t r = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; r < total; r += int64_t(gridDim.x) * blockDim.x) {
    const int64_t bh = r / ld, i = r % ld;
    float2 v = make_float2(0.0f, 0.0f);
    if (i < a.max_seq_q) {
      bool real;
      const bwd::QueryRow q = bwd::query_row(a, bh * a.max_seq_q + i, &real, /*d=*/0);
      if (q.row >= 0 && real) v = make_float2(a.lse[q.row] * attn::kLog2e, a.delta[q.row]);
    }
    rows[r] = v;
  }
}

// Whether a version's Config asks for the padded rows (kPaddedRows, absent before v4: false).
template <class C, class = void>
struct PaddedRows : std::false_type {};
template <class C>
struct PaddedRows<C, std::void_t<decltype(C::kPaddedRows)>> : std::bool_constant<C::kPaddedRows> {};

// From v6 on dQ / scale sits in the workspace as B·H·ceil(max Nq / Br) tiles of Br·D floats in the
// m64n64 accumulator's order (Config::kDqTileOrder; dq_tile.cuh): tile (bh, m) holds query rows m·Br …
// of slot bh. The offset of slot `slot`'s columns c, c + 1 (neighbours in the tile too), for the
// conversion (bwd::dq_convert_kernel).
template <int D, int kBr>
struct TileOrderDq {
  template <class T>
  __device__ int64_t operator()(const bwd::Args<T>& a, int64_t slot, const bwd::QueryRow&, int c) const {
    const int64_t bh = slot / a.max_seq_q, i = slot % a.max_seq_q, q_tiles = (a.max_seq_q + kBr - 1) / kBr;
    return (bh * q_tiles + i / kBr) * kBr * D + dq_tile_offset(int(i % kBr), c, D);
  }
};

// Whether a version's Config keeps dq_accum in tiles (kDqTileOrder, absent before v6: false).
template <class C, class = void>
struct DqTileOrder : std::false_type {};
template <class C>
struct DqTileOrder<C, std::void_t<decltype(C::kDqTileOrder)>> : std::bool_constant<C::kDqTileOrder> {};

// Whether a version's Config splits a group's query heads over blocks (kSplitsGroups, absent before v12:
// false).
template <class C, class = void>
struct SplitsGroups : std::false_type {};
template <class C>
struct SplitsGroups<C, std::void_t<decltype(C::kSplitsGroups)>> : std::bool_constant<C::kSplitsGroups> {};

// The unsplit grid: a block per (batch entry, K/V head, key block of Bc keys), max_seq_k's key blocks
// for every entry.
template <class C>
int64_t key_block_count(const AttentionProblem& fwd) {
  return fwd.p.batch * kv_head_count(fwd.p) * ((fwd.max_seq_k + C::kBc - 1) / C::kBc);
}

// A split block's slab of partial dK and dV sums, 2·Bc·D floats (0 for a version that does not split).
template <class C>
constexpr std::size_t slab_bytes_per_block() {
  if constexpr (SplitsGroups<C>::value)
    return std::size_t(kSlabFloat4s<C::kD, C::kConsumers * 128>) * sizeof(float4);
  else
    return 0;
}

// The split the launch makes for a problem of `key_blocks` unsplit blocks on the current GPU
// (group_split.cuh's rule; 1 where the version does not split, or no GPU answers).
template <class C>
int splits_for(const AttentionParams& p, int64_t key_blocks) {
  if constexpr (!SplitsGroups<C>::value) {
    return 1;
  } else {
    DeviceProps dev;
    return current_device(&dev) == Status::Success ? group_splits(p, key_blocks, dev.sms) : 1;
  }
}

// The padded rows as TMA sees them (v4 on): B·H rows of 2·ld floats, boxes of one row's 2·Br floats
// (a tile's Br pairs, 512 bytes at Br = 64), unswizzled: the consumers read them with plain loads.
inline TensorMap2d rows_map(const float2* rows, int64_t ld, int64_t planes, int box_pairs) {
  TensorMap2d m;
  m.base = rows;
  m.dtype = DType::FP32;
  m.cols = 2 * ld;
  m.rows = planes;
  m.ld = 2 * ld;
  m.box_cols = 2 * box_pairs;
  m.box_rows = 1;
  m.swizzle = false;
  return m;
}

// The launch of a version whose kernel takes (tmQ, tmK, tmV, tmdO, Args<T>, turns), from v4 on
// (tmQ, tmK, tmV, tmdO, tmRows, Args<T>, turns), from v12 on with a GroupSplit last, for tile
// configuration C (kBr, kBc, kThreads, kSmemBytes): maps, delta, workspaces, the kernel on
// B·KVH·ceil(max Nk / Bc) blocks (times the split from v12 on), the conversion of dQ. Sizes TMA or the
// grid cannot take return their code before anything is written.
template <class C, class T, class Kernel>
Status launch_kv_stationary(Kernel kernel, const AttentionBwdProblem& pr, cudaStream_t stream) {
  const AttentionParams& p = pr.fwd.p;
  CUtensorMap tq, tk, tv, tdo;
  FS_RETURN_IF_ERROR(encode_tensor_map(map_of(pr, Tensor::Q, C::kBr), &tq));
  FS_RETURN_IF_ERROR(encode_tensor_map(map_of(pr, Tensor::K, C::kBc), &tk));
  FS_RETURN_IF_ERROR(encode_tensor_map(map_of(pr, Tensor::V, C::kBc), &tv));
  FS_RETURN_IF_ERROR(encode_tensor_map(map_of(pr, Tensor::O, C::kBr), &tdo));
  const int64_t key_blocks = key_block_count<C>(pr.fwd);
  const int splits = splits_for<C>(p, key_blocks);
  const int64_t blocks = key_blocks * splits;
  if (blocks > INT_MAX) return Status::InvalidSize;  // gridDim.x
  const int64_t q_tiles = (pr.fwd.max_seq_q + C::kBr - 1) / C::kBr;
  // dq_accum: dQ / scale in fp32, B·H·Nq·D floats (packed: H·total·D), or from v6 on B·H·q_tiles tiles of
  // Br·D floats; then the turns in deterministic mode, B·H·q_tiles ints. Both zeroed on the stream before
  // the kernel.
  constexpr bool kTiles = DqTileOrder<C>::value;
  const std::size_t dq_bytes = kTiles ? std::size_t(p.batch * p.heads * q_tiles) * C::kBr * C::kD * sizeof(float)
                                      : std::size_t(q_elems(p)) * sizeof(float);
  const std::size_t turn_bytes = pr.p.deterministic ? std::size_t(p.batch * p.heads * q_tiles) * sizeof(int32_t) : 0;
  // v12 on, split: an arrival count per key block (zeroed with the rest), and past the rows, at a
  // 256-byte boundary, each block's slab of partial sums (group_split.cuh; every block writes its own).
  const std::size_t arrival_bytes = splits > 1 ? std::size_t(key_blocks) * sizeof(int32_t) : 0;
  const std::size_t zeroed_bytes = dq_bytes + turn_bytes + arrival_bytes;
  // v4 on: the padded rows, B·H·ld (LSE · log2 e, delta) pairs, after the rest at a 256-byte boundary.
  constexpr bool kRows = PaddedRows<C>::value;
  const int64_t rows_ld = q_tiles * C::kBr, rows_total = p.batch * p.heads * rows_ld;
  const std::size_t rows_at = (zeroed_bytes + 255) / 256 * 256;
  const std::size_t rows_bytes = kRows ? std::size_t(rows_total) * sizeof(float2) : 0;
  const std::size_t slabs_at = (rows_at + rows_bytes + 255) / 256 * 256;
  const std::size_t slab_bytes = splits > 1 ? std::size_t(blocks) * slab_bytes_per_block<C>() : 0;
  // The rows' map is encoded once its workspace exists; the extents it would refuse are refused here,
  // before delta or anything else is written (any 16-byte-aligned base checks the same).
  if (kRows && rows_total > 0)
    FS_RETURN_IF_ERROR(check_tensor_map(rows_map(nullptr, rows_ld, p.batch * p.heads, C::kBr)));
  return bwd::with_delta(pr, stream, [&](float* delta) {
    const std::size_t bytes = slab_bytes ? slabs_at + slab_bytes : kRows ? rows_at + rows_bytes : zeroed_bytes;
    return with_workspace(bytes, stream, [&](void* workspace) {
      // delta (the caller's, where asked for) only once the workspace exists: a refused allocation
      // returns FS_ERR_OUT_OF_MEMORY with nothing written.
      FS_RETURN_IF_ERROR(bwd::launch_delta<T>(pr, delta, stream));
      bwd::Args<T> a = bwd::make_args<T>(pr, delta);
      a.dq_accum = static_cast<float*>(workspace);
      int32_t* turns = turn_bytes ? reinterpret_cast<int32_t*>(static_cast<char*>(workspace) + dq_bytes) : nullptr;
      GroupSplit split;
      if (splits > 1) {
        split.splits = splits;
        split.arrivals = reinterpret_cast<int32_t*>(static_cast<char*>(workspace) + dq_bytes + turn_bytes);
        split.partials = reinterpret_cast<float*>(static_cast<char*>(workspace) + slabs_at);
      }
      FS_RETURN_IF_CUDA_ERROR(cudaMemsetAsync(workspace, 0, zeroed_bytes, stream));
      // (if constexpr: the versions before v4 neither launch nor instantiate the kernel.)
      CUtensorMap trows{};
      if constexpr (kRows) {
        if (rows_total > 0) {
          float2* rows = reinterpret_cast<float2*>(static_cast<char*>(workspace) + rows_at);
          FS_RETURN_IF_ERROR(encode_tensor_map(rows_map(rows, rows_ld, p.batch * p.heads, C::kBr), &trows));
          const int64_t row_blocks = std::min<int64_t>((rows_total + 255) / 256, int64_t(1) << 16);
          padded_rows_kernel<T><<<unsigned(row_blocks), 256, 0, stream>>>(a, rows, rows_ld, rows_total);
          FS_RETURN_IF_CUDA_ERROR(cudaGetLastError());
        }
      }
      // Above 48 KB a kernel must opt in to the larger dynamic shared memory carve-out.
      FS_RETURN_IF_CUDA_ERROR(
          cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(C::kSmemBytes)));
      // (A grid of no blocks is a launch error: a batch whose entries have no keys, or no query rows, has
      // nothing to compute or convert.)
      if (blocks > 0) {
        if constexpr (SplitsGroups<C>::value)
          kernel<<<unsigned(blocks), C::kThreads, C::kSmemBytes, stream>>>(tq, tk, tv, tdo, trows, a, turns, split);
        else if constexpr (kRows)
          kernel<<<unsigned(blocks), C::kThreads, C::kSmemBytes, stream>>>(tq, tk, tv, tdo, trows, a, turns);
        else
          kernel<<<unsigned(blocks), C::kThreads, C::kSmemBytes, stream>>>(tq, tk, tv, tdo, a, turns);
        FS_RETURN_IF_CUDA_ERROR(cudaGetLastError());
      }
      const int64_t slots = bwd::query_slots(pr);
      if (slots > 0) {
        using Offset = std::conditional_t<kTiles, TileOrderDq<C::kD, C::kBr>, bwd::RowMajorDq<C::kD>>;
        bwd::dq_convert_kernel<T, C::kD><<<unsigned(bwd::row_blocks(slots)), bwd::kRowThreads, 0, stream>>>(a, slots,
                                                                                                          Offset{});
        FS_RETURN_IF_CUDA_ERROR(cudaGetLastError());
      }
      return Status::Success;
    });
  });
}

// Launches kernel_of(DtypeTag<t>{}, std::integral_constant<int, D>{}), the version's kernel for the
// problem's dtype and head_dim, with tile configuration Config<D>.
template <template <int> class Config, class KernelOf>
Status launch_version(const AttentionBwdProblem& pr, cudaStream_t stream, KernelOf kernel_of) {
  return Elements::dispatch(pr.fwd.p.dtype, [&](auto t) {
    return HeadDimList::dispatch(pr.fwd.p.head_dim, [&](auto d) {
      using T = typename decltype(t)::type;
      return launch_kv_stationary<Config<decltype(d)::value>, T>(kernel_of(t, d), pr, stream);
    });
  });
}

// The shared memory of the version's largest instance, for its descriptor (the device check).
template <template <int> class Config>
constexpr std::size_t max_smem_bytes() {
  return HeadDimList::max_of([](auto d) { return Config<decltype(d)::value>::kSmemBytes; });
}

// What a version allocates beyond its tensors: dQ / scale in fp32 and delta when the caller gives no
// buffer for it; in deterministic mode the turns too, B·H·ceil(max Nq / Br) ints (kBr: the versions' query tile).
inline std::size_t extra_bytes(const AttentionParams& p) {
  return std::size_t(q_elems(p)) * sizeof(float) + delta_extra_bytes(p);
}
template <int kBr>
int64_t query_tiles(const AttentionParams& p) {
  const int64_t rows = p.cu_seqlens_q ? (p.max_seq_q > 0 ? p.max_seq_q : p.seq_q) : p.seq_q;
  return (rows + kBr - 1) / kBr;
}
// The deterministic mode's turns: one int per (b·H + h, query tile).
template <int kBr>
std::size_t turns_bytes(const AttentionParams& p) {
  return std::size_t(p.batch * p.heads * query_tiles<kBr>(p)) * sizeof(int32_t);
}
template <int kBr>
std::size_t deterministic_extra_bytes(const AttentionParams& p) {
  return extra_bytes(p) + turns_bytes<kBr>(p);
}
// From v4 on the padded rows too: B·H·ceil(max Nq / Br)·Br pairs of floats, at a 256-byte boundary.
template <int kBr>
std::size_t padded_rows_bytes(const AttentionParams& p) {
  return 256 + std::size_t(p.batch * p.heads * query_tiles<kBr>(p) * kBr) * sizeof(float2);
}
template <int kBr>
std::size_t rows_extra_bytes(const AttentionParams& p) {
  return extra_bytes(p) + padded_rows_bytes<kBr>(p);
}
template <int kBr>
std::size_t rows_deterministic_extra_bytes(const AttentionParams& p) {
  return deterministic_extra_bytes<kBr>(p) + padded_rows_bytes<kBr>(p);
}
// From v6 on dq_accum holds whole tiles, B·H·ceil(max Nq / Br)·Br·D floats, in place of extra_bytes'
// q_elems(p); delta and the padded rows as before.
template <int kBr>
std::size_t tiles_extra_bytes(const AttentionParams& p) {
  const std::size_t tiles = std::size_t(p.batch * p.heads * query_tiles<kBr>(p)) * kBr * p.head_dim * sizeof(float);
  return tiles + delta_extra_bytes(p) + padded_rows_bytes<kBr>(p);
}
template <int kBr>
std::size_t tiles_deterministic_extra_bytes(const AttentionParams& p) {
  return tiles_extra_bytes<kBr>(p) + turns_bytes<kBr>(p);
}
// From v12 on, where the grid is split on this GPU: an arrival count per key block and each block's slab
// of partial dK and dV sums, 2·Bc·D floats (C: the version's Config for p's head_dim).
template <class C>
std::size_t split_extra_bytes(const AttentionParams& p) {
  const int64_t key_blocks = key_block_count<C>(prepare(p));
  const int splits = splits_for<C>(p, key_blocks);
  if (splits <= 1) return 0;
  return 512 + std::size_t(key_blocks) * sizeof(int32_t) +
         std::size_t(key_blocks) * splits * slab_bytes_per_block<C>();
}

}  // namespace fs::flash_bwd_tma
